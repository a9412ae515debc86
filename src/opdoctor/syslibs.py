"""Libraries of the operating system that wheels expect installed, and the system package
that provides each — read by the checks (OD201's fix) and by ``explain``, which imports
nothing of the checks or the facts.
"""

from __future__ import annotations

# Libraries of the operating system that manylinux wheels link and expect installed (the
# policy lets them: libGL, glib, X11, libgomp …) or that packages load for an optional
# feature: soname → (what it is, Debian/Ubuntu package, Fedora/RHEL package). Slim container
# images leave them out: "libGL.so.1: cannot open shared object file" from `import cv2` is
# the commonest. Names whose package was renamed for 64-bit time_t (Ubuntu 24.04, Debian 13)
# say so.
SYSTEM_LIBS: dict[str, tuple[str, str, str]] = {
    "libGL.so.1": ("the OpenGL library (libglvnd/Mesa)", "libgl1", "mesa-libGL"),
    "libEGL.so.1": ("the EGL library (libglvnd/Mesa)", "libegl1", "mesa-libEGL"),
    "libGLU.so.1": ("the OpenGL utility library", "libglu1-mesa", "mesa-libGLU"),
    "libglib-2.0.so.0": ("GLib", "libglib2.0-0 (libglib2.0-0t64 on Ubuntu 24.04 and Debian "
                         "13)", "glib2"),
    "libgthread-2.0.so.0": ("GLib's thread library", "libglib2.0-0 (libglib2.0-0t64 on "
                            "Ubuntu 24.04 and Debian 13)", "glib2"),
    "libgobject-2.0.so.0": ("GLib's object library", "libglib2.0-0 (libglib2.0-0t64 on "
                            "Ubuntu 24.04 and Debian 13)", "glib2"),
    "libSM.so.6": ("X11's session management library", "libsm6", "libSM"),
    "libICE.so.6": ("X11's inter-client exchange library", "libice6", "libICE"),
    "libX11.so.6": ("the X11 client library", "libx11-6", "libX11"),
    "libXext.so.6": ("X11's extension library", "libxext6", "libXext"),
    "libXrender.so.1": ("X11's rendering library", "libxrender1", "libXrender"),
    "libxcb.so.1": ("the X11 C binding", "libxcb1", "libxcb"),
    "libxkbcommon.so.0": ("the keyboard map library", "libxkbcommon0", "libxkbcommon"),
    "libfontconfig.so.1": ("Fontconfig", "libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("FreeType", "libfreetype6", "freetype"),
    "libgomp.so.1": ("GCC's OpenMP runtime", "libgomp1", "libgomp"),
    "libnuma.so.1": ("the NUMA policy library", "libnuma1", "numactl-libs"),
    "libaio.so.1": ("the Linux asynchronous I/O library", "libaio1 (libaio1t64 on Ubuntu "
                    "24.04 and Debian 13)", "libaio"),
    "libibverbs.so.1": ("the RDMA verbs library", "libibverbs1", "libibverbs"),
    "libsndfile.so.1": ("libsndfile", "libsndfile1", "libsndfile"),
    "libportaudio.so.2": ("PortAudio", "libportaudio2", "portaudio"),
    "libusb-1.0.so.0": ("libusb, the USB device access library", "libusb-1.0-0",
                        "libusb1 (libusbx on RHEL 8 and 9)"),
    "libzbar.so.0": ("the ZBar bar code library", "libzbar0", "zbar"),
    "libOpenCL.so.1": ("the OpenCL ICD loader (the GPU's OpenCL driver comes apart: "
                       "intel-opencl-icd for Intel GPUs)", "ocl-icd-libopencl1",
                       "ocl-icd"),
    "libodbc.so.2": ("unixODBC's driver manager", "libodbc2 (libodbc1 before Debian 12 and "
                     "Ubuntu 23.04)", "unixODBC"),
    "libvips.so.42": ("libvips, the image processing library", "libvips42 (libvips42t64 on "
                      "Ubuntu 24.04 and Debian 13)", "vips"),
    "libmagic.so.1": ("libmagic, file type detection", "libmagic1 (libmagic1t64 on Ubuntu "
                      "24.04 and Debian 13)", "file-libs"),
    "libvlc.so.5": ("VLC's media library, libvlc", "libvlc5 (with vlc-plugin-base for its "
                    "codecs)", "vlc-libs (RPM Fusion)"),
}


# Libraries that a wheel on PyPI brings (into the environment's lib/ directory, which the
# packages that use them find through their RUNPATH): soname → (what it is, the distribution).
# numba's optional tbbpool extension needs libtbb.so.12, from `pip install tbb` — "find it,
# then patchelf" sent users looking for a file on no disk (survey 19).
PYPI_LIBS: dict[str, tuple[str, str]] = {
    "libtbb.so.12": ("Intel oneTBB", "tbb"),
    "libtbbmalloc.so.2": ("Intel oneTBB", "tbb"),
    "libtbbmalloc_proxy.so.2": ("Intel oneTBB", "tbb"),
    "libiomp5.so": ("Intel OpenMP", "intel-openmp"),
    "libmkl_rt.so.2": ("Intel oneMKL", "mkl"),
    "libmkl_core.so.2": ("Intel oneMKL", "mkl"),
    "libmkl_intel_lp64.so.2": ("Intel oneMKL", "mkl"),
    "libmkl_intel_thread.so.2": ("Intel oneMKL", "mkl"),
    "libmkl_gnu_thread.so.2": ("Intel oneMKL", "mkl"),
}


def by_project(project: str) -> str:
    """The soname of :data:`SYSTEM_LIBS` that a project's name stands for in a package's own
    message ("PortAudio library not found", "Unable to find zbar shared library": a library
    looked up with ``ctypes.util.find_library``); "" when none."""
    want = "lib" + project.lower().removeprefix("lib")
    return next((so for so in SYSTEM_LIBS if so.lower().split(".so")[0] == want), "")


def system_library_fix(name: str) -> str:
    """The fix for a missing library of the operating system that wheels expect installed
    (:data:`SYSTEM_LIBS`): the system package that provides it; for one a PyPI wheel brings
    (:data:`PYPI_LIBS`), that wheel; "" for any other name."""
    wheel = PYPI_LIBS.get(name)
    if wheel is not None:
        what, dist = wheel
        return (f"{name} is {what}'s, which the `{dist}` wheel on PyPI installs: pip install "
                f"{dist} in the same environment (or the system's or conda's {what}); "
                "no RPATH edit brings it")
    known = SYSTEM_LIBS.get(name)
    if known is None:
        return ""
    what, deb, rpm = known
    headless = " (for OpenCV, opencv-python-headless needs no OpenGL)" \
        if name == "libGL.so.1" else ""
    return (f"{name} is {what}, a library of the operating system that the package expects "
            f"installed, not in its wheel: install it — Debian/Ubuntu: apt-get install {deb}; "
            f"Fedora/RHEL: dnf install {rpm}{headless}. No RPATH edit brings it")
