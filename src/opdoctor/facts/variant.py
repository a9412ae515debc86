"""Build variants: which build of the framework an extension was made for (CPU, CUDA, ROCm, and
which CUDA major), read from what it links and what its package says — without loading it.

The most common real "operator … does not exist" is a CUDA build of an extension (PyPI's
torchvision, torchaudio, xformers …) installed beside a CPU-only torch: the extension needs
``libc10_cuda.so``/``libtorch_cuda.so`` (and CUDA runtime libraries from nvidia-* wheels) that a
CPU torch does not ship. That is a version/variant mismatch (cause 3), never a library-path
problem: no RPATH or LD_LIBRARY_PATH makes a CPU torch provide its CUDA half.
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass

from opdoctor.facts.frameworks import TORCH
from opdoctor.facts.pkgdir import top_levels

# CUDA runtime libraries that nvidia-* wheels (pulled in by CUDA builds of torch) provide.
_CUDA_RUNTIME = re.compile(r"^lib(cudart|nvrtc|cublas|cublasLt|cusparse|cufft|curand|cusolver|"
                           r"cudnn[\w]*|nccl|nvToolsExt|nvJitLink|cupti)\.so\.(\d+)")
_SONAME_IS_CUDA_MAJOR = frozenset(("cudart", "nvrtc", "cublas", "cublasLt", "nvJitLink", "cupti"))
_LOCAL_TAG = re.compile(r"\+(cpu|cu\d+|rocm[\d.]+)\b")


@dataclass(frozen=True)
class ExtensionVariant:
    """What an extension (or the package that ships it) says about the torch build it needs."""

    variant: str  # "cuda", "rocm" or "" (no variant-specific evidence)
    cuda_major: int | None  # from libcudart.so.N & co.
    evidence: tuple[str, ...]
    package_version: str = ""  # e.g. "0.29.1+cu130" (version.py or dist-info)
    requires_torch: str = ""  # e.g. "torch==2.9.1" (dist-info Requires-Dist)
    distribution: str = ""  # the distribution name, for the pip command
    # What the package's own build record says it was built for (xformers' cpp_lib.json:
    # "torch 2.10.0+cu128, CUDA 12.8"), with the file it came from; "" when none.
    built_for: str = ""


@dataclass(frozen=True)
class TorchVariant:
    """The installed torch's build."""

    version: str  # "2.13.0+cpu"
    variant: str  # "cpu", "cuda", "rocm"
    cuda: str | None


def torch_variant(version: str, cuda: str | None, lib_dir: str) -> TorchVariant:
    """The build of an installed torch, from version.py's fields and its lib directory."""
    if not cuda and version.endswith("+cpu"):
        # version.py is what the import runs: torch 2.13.0+cpu copied over a CUDA torch keeps
        # that torch's libc10_cuda.so in lib/, which no CPU build loads (survey 22's A6)
        return TorchVariant(version, "cpu", None)
    if glob.glob(os.path.join(lib_dir, "libc10_hip.so*")):
        return TorchVariant(version, "rocm", cuda)
    if cuda or glob.glob(os.path.join(lib_dir, "libc10_cuda.so*")):
        return TorchVariant(version, "cuda", cuda)
    return TorchVariant(version, "cpu", None)


def variant_of_needed(needed: list[str], missing: frozenset[str] = frozenset()
                      ) -> tuple[str, int | None, list[str]]:
    """(variant, CUDA major, the names that show it) implied by DT_NEEDED names.

    torch's own variant libraries (libc10_cuda.so, libtorch_hip.so …) decide alone. A CUDA
    runtime library (libcudart.so.N, libnvrtc.so.N …) decides only when it is ``missing`` from
    the process: an extension may link the system CUDA runtime and still run its CPU kernels
    beside a CPU torch (the bundled reference operator does), but one whose CUDA runtime came
    with a CUDA build of torch (the nvidia-* wheels) cannot load without it.
    """
    shown: list[str] = []
    variant = TORCH.variant_of(needed)
    for lib in needed:
        if any(lib.startswith(v) for libs in TORCH.variant_libraries.values() for v in libs):
            shown.append(lib)
    major: int | None = None
    for lib in needed:
        m = _CUDA_RUNTIME.match(lib)
        if not m:
            continue
        if m.group(1) in ("cudart", "nvrtc") and major is None:
            major = int(m.group(2))
        if lib in missing:
            shown.append(lib)
            variant = variant or "cuda"
        elif variant:
            shown.append(lib)
    return variant, major, shown


# The GPU driver's user-space libraries, and TensorRT's: nothing of torch or CUDA brings them.
DRIVER_LIB = re.compile(r"lib(?:cuda|nvidia-ml|nvidia-ptxjitcompiler|nvcuvid|nvidia-encode)"
                        r"\.so(?:\.\d+)*$")
TENSORRT_LIB = re.compile(r"lib(?:nvinfer|nvonnxparser|nvparsers|nvinfer_plugin)\w*\.so")
# AMD's ROCm/HIP runtime and libraries (bitsandbytes' libbitsandbytes_rocm70.so NEEDs
# libhipblas.so.3 and libhipblaslt.so.1).
ROCM_LIB = re.compile(r"^lib(?:amdhip64|hiprtc|hipblas|hipblaslt|hipsparse|hipsparselt|hipfft|"
                      r"hiprand|hipsolver|rocblas|rocsolver|rocrand|rocfft|rocsparse|MIOpen|"
                      r"rccl|roctx64|roctracer64|hsa-runtime64)\.so\.\d+")


def variant_library(name: str) -> tuple[str, int | None]:
    """(variant, CUDA major) that a library *name* belongs to: torch's own variant libraries
    (``libc10_cuda.so`` → "cuda", ``libtorch_hip.so`` → "rocm") and the CUDA runtime libraries a
    CUDA build of torch brings in through nvidia-* wheels (``libnvrtc.so.13`` → ("cuda", 13));
    ("", None) for any other library."""
    base = os.path.basename(name)
    for variant, libs in TORCH.variant_libraries.items():
        if any(base.startswith(lib) for lib in libs):
            return variant, None
    m = _CUDA_RUNTIME.match(base)
    if m:
        # Only these carry the CUDA major in their soname; cuDNN (libcudnn.so.9 on CUDA 12),
        # NCCL (.so.2), NVTX (.so.1), cuFFT (.so.11 on CUDA 12), cuRAND, cuSOLVER and
        # cuSPARSE number their own releases.
        return "cuda", int(m.group(2)) if m.group(1) in _SONAME_IS_CUDA_MAJOR else None
    return "", None


def cuda_library(name: str) -> bool:
    """Whether ``name`` is one of NVIDIA's CUDA libraries (runtime, math libraries, cuDNN,
    NCCL, NVTX …) by its soname."""
    return _CUDA_RUNTIME.match(os.path.basename(name)) is not None


def package_metadata(package_dir: str) -> tuple[str, str, str]:
    """(version, torch requirement, distribution name) of the installed package at
    ``package_dir``: ``version.py`` first, then the ``*.dist-info`` beside it."""
    version = requires = dist = ""
    try:
        with open(os.path.join(package_dir, "version.py"), encoding="utf-8") as fh:
            m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", fh.read(65536), re.M)
            version = m.group(1) if m else ""
    except OSError:
        pass
    name = os.path.basename(package_dir.rstrip(os.sep))
    site = os.path.dirname(package_dir.rstrip(os.sep))
    norm = name.replace("_", "-").lower()
    infos = [info for info in sorted(glob.glob(os.path.join(site, "*.dist-info")))
             if os.path.basename(info)[: -len(".dist-info")].rsplit("-", 1)[0]
             .replace("_", "-").lower() == norm or name in top_levels(info, record=False)]
    if not infos:
        # A package inside another distribution's directory (sphericart-torch installs
        # sphericart/torch/ beside sphericart's own files): the distribution whose RECORD
        # lists its __init__.py (survey 18: the fix was "pip install --no-build-isolation .").
        from opdoctor.facts.requires import owning_dist

        owner = owning_dist(os.path.join(package_dir, "__init__.py"))
        infos = [os.path.join(owner[1], owner[0])] if owner else []
    for info in infos:
        try:
            with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as fh:
                meta = fh.read(262144)
        except OSError:
            continue
        base = os.path.basename(info)[: -len(".dist-info")]
        n = re.search(r"^Name:\s*(\S+)", meta, re.M)
        dist = n.group(1) if n else base.rsplit("-", 1)[0]
        v = re.search(r"^Version:\s*(\S+)", meta, re.M)
        version = version or (v.group(1) if v else "")
        # "Requires-Dist: torch==2.9.1" or the older "Requires-Dist: torch (==2.13.0)".
        r = re.search(r"^Requires-Dist:\s*torch\s*\(?\s*([=<>!~][^;)\n]*)", meta, re.M)
        requires = "torch" + r.group(1).replace(" ", "") if r else ""
        break
    return version, requires, dist


def build_record(package_dir: str) -> str:
    """The torch build the package records it was built for, with its source, from the build
    record some packages ship and check at import (xformers' ``cpp_lib.json``:
    ``{"version": {"torch": "2.10.0+cu128", "cuda": 1208}}``, read by its "xFormers was built
    for: PyTorch 2.10.0+cu128" guard); "" when the package has none."""
    path = os.path.join(package_dir, "cpp_lib.json")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(65536))
    except (OSError, ValueError):
        return ""
    ver = data.get("version") if isinstance(data, dict) else None
    if not isinstance(ver, dict) or not isinstance(ver.get("torch"), str):
        return ""
    cuda = ver.get("cuda")
    # xformers encodes CUDA 12.8 as 1208 (major * 100 + minor).
    cuda_txt = f", CUDA {cuda // 100}.{cuda % 100}" if isinstance(cuda, int) and cuda else ""
    name = os.path.basename(package_dir.rstrip(os.sep))
    return f"{name}/cpp_lib.json: built for torch {ver['torch']}{cuda_txt}"


def local_tag(version: str) -> str:
    """The ``+cpu`` / ``+cu130`` / ``+rocm6.2`` tag of a version ("" when none)."""
    m = _LOCAL_TAG.search(version)
    return m.group(1) if m else ""


# Extensions that download.pytorch.org/whl/cpu publishes beside torch.
_ON_CPU_INDEX = frozenset({"torchvision", "torchaudio", "torchtext", "torchdata", "torchao",
                           "torchcodec", "torchrec", "fbgemm_gpu"})


def cpu_build(dist: str, torch_version: str) -> str:
    """The CPU build of ``dist`` to install beside a CPU torch, as fix text. Only PyTorch's own
    domain libraries are on its CPU index; many extensions are GPU-only (torch_tensorrt,
    xformers): a CPU build is promised only where one is published.

    The command pins torch at the installed release: the domain libraries' wheels require one
    exact torch (torchvision 0.28.0: ``torch==2.13.0``), so pip picks the release built for
    it — unpinned, pip installs the newest (torchvision 0.29.1) and replaces torch with the
    one that requires (2.14.1)."""
    if dist.replace("-", "_").lower() in _ON_CPU_INDEX:
        release = torch_version.split("+")[0]
        pin = f" 'torch=={release}'" if re.fullmatch(r"\d+(?:\.\d+)*", release) else ""
        return (f"the CPU build of {dist} for torch {torch_version} (pip install {dist}{pin} "
                "--index-url https://download.pytorch.org/whl/cpu)")
    return f"a CPU build of {dist} for torch {torch_version}, if its project publishes one"


# ------------------------------------------------------------ libraries built per torch release
# A library named for a torch release: <stem>pytorch_2.1.0<rest>.so, <stem>torch2.1<rest>.so.
_RELEASE_SO = re.compile(r"^(?P<stem>.{0,200}?(?:py)?torch[_-]?)(?P<ver>\d{1,3}\.\d{1,3}"
                         r"(?:\.\d{1,3})?)(?P<rest>[^/]{0,200}?)\.so(?:\.[\d.]{1,20})?$")
# The compact form: <stem>torch29-cpu.so, torch210 (major.minor without the dot).
_RELEASE_SO_COMPACT = re.compile(r"^(?P<stem>.{0,200}?torch)(?P<major>[12])(?P<minor>\d{1,2})"
                                 r"(?P<rest>[-_][^/]{0,200}?)?\.so(?:\.[\d.]{1,20})?$")
# A directory named for a torch release, holding that release's build of the library:
# vesin-torch, sphericart-torch, metatensor-torch and featomic-torch ship
# ``torch-2.3/lib/libvesin_torch.so`` … ``torch-2.14/lib/…`` and load
# ``os.path.join(here, f"torch-{major}.{minor}")``'s (survey 18).
_RELEASE_DIR = re.compile(r"^(?P<stem>(?:py)?torch[_-]?v?)(?P<ver>\d{1,3}\.\d{1,3}"
                          r"(?:\.\d{1,3})?)(?P<rest>(?:[-_+][A-Za-z]\w{0,20})?)$")
# How far above the library such a directory may sit (``torch-2.13/lib/libx.so``: two).
_RELEASE_DIR_LEVELS = 3
_GPU_TAGS = ("cuda", "rocm", "hip")


def release_key(release: str) -> tuple[int, ...]:
    """``2.10.1`` → (2, 10, 1), for sorting releases."""
    return tuple(int(x) for x in release.split("."))


def library_release(path: str) -> tuple[str, str] | None:
    """(the library's name with its torch release replaced by ``<r>``, the release) for a
    library named for a torch release — ``libgraphbolt_pytorch_2.2.1.so`` (dgl) or the compact
    ``libtorch_c_dlpack_addon_torch29-cpu.so`` (torch-c-dlpack-ext: 2.9) — or kept in a
    directory named for one (``torch-2.13/lib/libvesin_torch.so``: the name is then the path
    from that directory, ``torch-<r>/lib/libvesin_torch.so``), else None."""
    name = os.path.basename(path)
    m = _RELEASE_SO.match(name)
    if m:
        return f"{m['stem']}<r>{m['rest']}.so", m["ver"]
    m = _RELEASE_SO_COMPACT.match(name)
    if m:
        return f"{m['stem']}<r>{m['rest'] or ''}.so", f"{m['major']}.{m['minor']}"
    below = [name]
    here = os.path.dirname(path)
    for _ in range(_RELEASE_DIR_LEVELS):
        part = os.path.basename(here)
        d = _RELEASE_DIR.match(part)
        if d:
            return os.path.join(f"{d['stem']}<r>{d['rest']}", *reversed(below)), d["ver"]
        if not part:
            break
        below.append(part)
        here = os.path.dirname(here)
    return None


def release_families(package_dir: str, libraries: list[str]) -> dict[str, list[str]]:
    """Of ``libraries`` (the package's shared libraries, as the import chain listed them),
    those named for torch releases, by family (the path relative to ``package_dir`` with the
    release replaced by ``<r>``) → the releases, for families of two or more: one library
    built per release, chosen at run time."""
    families: dict[str, set[str]] = {}
    for path in libraries:
        got = library_release(path)
        if got:
            rel = os.path.relpath(family_path(path, got[0]), package_dir)
            families.setdefault(rel, set()).add(got[1])
    return {f: sorted(v, key=release_key) for f, v in sorted(families.items()) if len(v) >= 2}


def family_path(path: str, name: str) -> str:
    """``path`` with its torch release replaced by ``<r>``, given :func:`library_release`'s
    name for it (a file name, or the path from a release directory down)."""
    anchor = path
    for _ in name.split("/"):
        anchor = os.path.dirname(anchor)
    return os.path.join(anchor, name)


def gpu_twins(libraries: list[str]) -> set[str]:
    """The GPU copies among per-release libraries that have a CPU twin of the same family
    (``…torch29-cuda.so`` beside ``…torch29-cpu.so``): the package picks one by the torch
    build at run time, so a CUDA copy is no sign that the package is a CUDA build."""
    keys = {lib: got[0] for lib in libraries if (got := library_release(lib))}
    return {lib for lib, key in keys.items()
            if build_tag(key) in _GPU_TAGS and build_tag(key, "cpu") in keys.values()}


def build_tag(key: str, replace: str = "") -> str:
    """The torch build a per-release library's name is for (``cpu``, ``cuda``, ``rocm``,
    ``hip``; "" when it names none) — or, with ``replace``, the name with that tag replaced
    (``…torch<r>-cuda.so`` → ``…torch<r>-cpu.so``)."""
    parts = re.split(r"([-_.])", key)
    for i, part in enumerate(parts):
        if part in ("cpu", *_GPU_TAGS):
            return "".join([*parts[:i], replace, *parts[i + 1:]]) if replace else part
    return key if replace else ""


def copies_for_this_torch(libs: list[str], version: str, cuda: str | None) -> list[str]:
    """``libs`` without the copies a package builds per torch release and build for releases
    and builds other than the installed torch's (``version``, ``cuda``): it picks one by name
    at run time (torch-c-dlpack-ext: ``libtorch_c_dlpack_addon_torch<24…29>-<cpu|cuda>.so``),
    so the others are never loaded here."""
    if not release_families(os.sep, libs):
        return libs
    other = "cpu" if cuda else "cuda"  # the twin this torch's build does not pick
    keep = []
    for lib in libs:
        got = library_release(lib)
        if got is None or (same_release(got[1], version) and build_tag(got[0]) != other):
            keep.append(lib)
    return keep


def same_release(release: str, installed: str) -> bool:
    """Whether a library's release (``2.9``, ``2.2.1``) names the installed torch's."""
    base = re.match(r"\d+\.\d+(?:\.\d+)?", installed)
    if not base:
        return False
    have = base.group(0)
    return release in (have, ".".join(have.split(".")[:2]))
