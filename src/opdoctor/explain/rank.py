"""Ranking: from the matched pattern and the entities of the text to causes with confidences.

A pattern gives a first order (its ``cause`` then its ``alt`` list). A pattern may name a
*refiner* (``refine = "symbol"``): a function here that looks at the entities of the match —
what an undefined symbol is, where a file sits, what each side of a version pair says — and
reorders the causes, saying why. Refiners are pure functions of the text: no file system, no
framework import.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Callable

from opdoctor.explain.entities import (
    SymbolInfo,
    classify_symbol,
    compare_pair,
    path_kind,
    python_versions,
    variant_of,
)

CAUSE_NAMES = {1: "registration", 2: "library path", 3: "version mismatch",
               4: "broken build / file", 5: "Python import chain"}

# What each cause means as an alternative, when no refiner says more.
GENERIC_WHY = {
    1: "the registration itself: missing, compiled out, in another namespace, or no kernel "
       "for this device/dtype",
    2: "the search path: a dependency is not found, or another copy of it is found first",
    3: "a release or build-variant pairing: built against another framework/CUDA/C++ runtime",
    4: "an incomplete or foreign build: a file left out of the build, a failed build, a binary "
       "for another OS/CPU",
    5: "the Python side: the package that loads the library is not imported, is shadowed, or "
       "runs in another interpreter",
}


class Refinement:
    """A refiner's verdict: causes best first, and why. (Plain classes, not dataclasses:
    importing ``dataclasses`` costs ~15 ms of every ``opdoctor explain`` start.)"""

    __slots__ = ("alt_why", "causes", "codes", "confidence", "decides", "title", "why")

    def __init__(self, causes: tuple[int, ...], why: str, codes: tuple[str, ...] | None = None,
                 title: str | None = None, confidence: str | None = None, decides: str = "",
                 alt_why: dict[int, str] | None = None) -> None:
        self.causes = causes
        self.why = why
        self.codes = codes
        self.title = title
        self.confidence = confidence  # low / medium / high, overrides the pattern's
        self.decides = decides  # when the text cannot decide: what would
        self.alt_why: dict[int, str] = {} if alt_why is None else alt_why

    def __repr__(self) -> str:
        return f"Refinement(causes={self.causes}, why={self.why!r})"


class Context:
    """What a refiner sees."""

    __slots__ = ("groups", "line", "other_ids", "pattern_id", "text")

    def __init__(self, pattern_id: str, groups: dict[str, str], line: str, text: str,
                 other_ids: tuple[str, ...]) -> None:
        self.pattern_id = pattern_id
        self.groups = groups
        self.line = line
        self.text = text  # the whole text (bounded by the caller)
        self.other_ids = other_ids

    def group(self, *names: str) -> str:
        """The first non-empty named group among ``names``."""
        for n in names:
            v = self.groups.get(n)
            if v:
                return v.strip()
        return ""


Refiner = Callable[[Context], "Refinement | None"]
REFINERS: dict[str, Refiner] = {}


def refiner(name: str) -> Callable[[Refiner], Refiner]:
    """Register a refiner under the name patterns.toml uses."""
    def deco(fn: Refiner) -> Refiner:
        REFINERS[name] = fn
        return fn
    return deco


# ------------------------------------------------------------------ undefined symbols
def symbol_of(ctx: Context) -> SymbolInfo | None:
    """The undefined symbol of the match, classified with the library that wanted it."""
    if ctx.pattern_id == "link.unresolved-external":
        return _msvc_symbol(ctx)
    sym = ctx.group("symbol")
    if not sym:
        return None
    sym = re.sub(r"\s+", "", sym).rstrip(".,;:'\"`)]")
    return classify_symbol(repair_markdown_symbol(sym), ctx.group("path", "library"))


# MSVC's undecorated name: access, storage and virtual specifiers, the return type and the
# calling convention before the qualified name ("public: static class at::Tensor __cdecl
# c10::Foo::bar(…)" → "c10::Foo::bar(…)"); a C function's import thunk is "__imp_<name>".
_MSVC_PREFIX = re.compile(r"^(?:(?:public|private|protected): )?(?:(?:static|virtual) )*"
                          r"(?:.{0,300}? )?__(?:cdecl|stdcall|fastcall|thiscall|vectorcall) ")


def _msvc_symbol(ctx: Context) -> SymbolInfo | None:
    """The symbol of an MSVC "unresolved external symbol", in the form classify_symbol reads:
    the undecorated C++ name without what precedes the qualified name, or the C name."""
    text = ctx.group("symbol", "symbol2")
    if text:
        return classify_symbol(_MSVC_PREFIX.sub("", text.strip(), count=1),
                               ctx.group("path", "library"))
    name = ctx.group("csym", "csym2")
    if not name or name.startswith("?"):  # a decorated name with no undecoration: unreadable
        return None
    return classify_symbol(name.removeprefix("__imp_"), ctx.group("path", "library"))


def repair_markdown_symbol(sym: str) -> str:
    """A mangled name whose leading underscore an issue tracker's Markdown ate (``_ZN…_`` is
    italics there, so a pasted ``_ZN3foo3barEv`` shows as ``ZN3foo3barEv``): put it back, so
    that the namespace can be read."""
    if re.match(r"Z(?:N|T[IVS]|\d{1,3}[A-Za-z_])", sym) and re.search(r"\d[A-Za-z_]", sym[:8]):
        return "_" + sym
    return sym


_VERSIONED = re.compile(r"undefined symbol: ?[\w$@.]{1,3000}, version (?P<ver>[\w.@-]{1,80})")


@refiner("symbol")
def _symbol(ctx: Context) -> Refinement | None:
    info = symbol_of(ctx)
    if info is None:
        return None
    path = ctx.group("path", "library")
    if re.search(r"Expected in: flat namespace", ctx.text) and info.owner == "tensorflow" \
            and re.match(r"_?TF_[A-Z]", info.mangled):
        # TensorFlow's C API (tensorflow/c/: the kernel and PluggableDevice C APIs) is meant to
        # be found in the running TensorFlow: plugins such as tensorflow-metal are linked with
        # -undefined dynamic_lookup on purpose, so a missing TF_ function is a TensorFlow release
        # that does not have it — the plugin was built for another one
        return Refinement((3, 4), f"{info.demangled} is a function of TensorFlow's C API, which "
                          "a plugin or C-API op library resolves from the running TensorFlow "
                          "(flat namespace, by design): the TensorFlow loaded does not define "
                          "it, so the library was built for another TensorFlow release",
                          ("OD342",), f"undefined symbol {info.demangled}: TensorFlow's C API "
                          "of another release", "high", "the TensorFlow release the plugin "
                          "supports (its release notes) against `python -c 'import tensorflow "
                          "as tf; print(tf.__version__)'`")
    if re.search(r"Expected in: flat namespace", ctx.text) and info.owner == "tensorflow":
        return Refinement((4, 3), "macOS 'Expected in: flat namespace': the op library was linked "
                          "with -undefined dynamic_lookup, not against libtensorflow_framework, "
                          f"so {info.demangled} is only there when Python exported it globally",
                          ("OD301",), f"undefined symbol {info.demangled}: the op library is "
                          "not linked against the framework library", "high")
    ver = _VERSIONED.search(ctx.line)
    if ver and re.match(r"GLIBC_", ver.group("ver")):
        # versioned against glibc (GLIBC_2.xx, GLIBC_PRIVATE): the binary and this system's glibc
        # are of different releases — the binary was built for another OS release
        return Refinement((3, 4), f"{info.demangled} is versioned {ver.group('ver')}: a glibc "
                          "symbol this system's glibc does not provide — the binary was built "
                          "for another glibc release (another OS release)", ("OD302",),
                          f"undefined {info.demangled}@{ver.group('ver')}: built for another "
                          "glibc", "high")
    if ver and re.match(r"(?:GLIBCXX|CXXABI)_", ver.group("ver")):
        return Refinement((3, 2), f"{info.demangled} is versioned {ver.group('ver')}: the C++ "
                          "runtime that was loaded is older than the one the library was built "
                          "with (or another copy is found first)", ("OD302",), None, "medium",
                          "whether a newer libstdc++ is installed but not found first")
    if ctx.pattern_id == "loader.symbol-not-found-macos" and info.owner == "cxx-runtime" and \
            "std::__1::" not in info.demangled:
        # macOS's C++ runtime is libc++ (std::__1::…): a GNU libstdc++ symbol (std::string's
        # _Rep, std::__cxx11::…) can only be wanted by a binary compiled with GCC's libstdc++
        # (conda's or Homebrew's gcc) instead of the system clang
        return Refinement((4, 3), f"{info.demangled} is a GNU libstdc++ symbol, but macOS's C++ "
                          "runtime is libc++: the binary was compiled with GCC/libstdc++ (a conda "
                          "or Homebrew gcc picked up by the build) instead of clang", ("OD301",),
                          "built with a compiler whose C++ runtime macOS does not provide",
                          "medium", "rebuild with CC=clang CXX=clang++")
    if (ctx.pattern_id == "loader.undefined-reference" and info.owner in ("cuda", "third-party")
            and "@" not in ctx.group("symbol")) or (
            ctx.pattern_id == "link.unresolved-external" and info.owner in (
                "cuda", "cuda-runtime", "third-party", "python")):
        # the linker, not the loader: an unversioned C function of a CUDA or third-party library
        # that no library on the link line defines — that library is missing from the link, or
        # listed before the library that needs it (single-pass linking of archives/--as-needed)
        return Refinement((4, 3), f"{info.demangled} is {info.is_.split(':')[0]}, referenced at "
                          "link time: that library is not on the link line, or is listed "
                          "before the library that needs it (the linker resolves left to "
                          "right)", ("OD301",), f"the link lacks the library that defines "
                          f"{info.demangled}", "medium", "the link command's -l order: the "
                          "library that defines it after every library that uses it")
    conf = "high" if info.causes[0] in (3, 4) and info.owner not in ("own",) else "medium"
    decides = ""
    if len(info.causes) > 1:
        target = path or "<the library that failed>"
        decides = (f"whether {target} was built against the installed framework/runtime: "
                   f"`opdoctor check {target}` lists which symbols it needs that nothing "
                   "loaded defines, and which library should")
    # A torch symbol the installed torch does define, in a library linked without torch's
    # libraries, fails the same way (torch loads them RTLD_LOCAL): the text cannot tell that
    # from another release; the check can (OD432; survey 14's P5).
    alt = {4: "the link: built against this torch's headers but linked without its libraries "
              "(-lc10 -ltorch_cpu -ltorch), whose symbols torch loads RTLD_LOCAL (OD432)"} \
        if info.owner == "torch" else None
    if alt and decides:
        decides += "; a torch library it does not link (OD432) is the link line, not a release"
    return Refinement(info.causes, f"{info.demangled} is {info.is_}", (info.code,),
                      f"undefined symbol {info.demangled}: {info.is_.split(':')[0]}", conf,
                      decides, alt_why=alt)


# ------------------------------------------------------------------ a missing library
_CORE_TORCH = re.compile(r"^lib(?:c10|torch|torch_cpu|torch_python|shm)\.(?:so|dylib)$")
# torch's own Python running: its core libraries are loaded in the process.
_TORCH_RUNNING = re.compile(r"[/\\]torch[/\\](?:_ops|__init__|library|utils[/\\]cpp_extension)\.py"
                            r"\"?, line \d+")
_VARIANT_TORCH = re.compile(r"^lib(?:c10_(?:cuda|hip)|torch_(?:cuda|hip)\w{0,20})\.so")
_TF_FRAMEWORK = re.compile(r"^libtensorflow_(?:framework|cc)\.so")
_CUDA_LIB = re.compile(r"^lib(?:cuda|cudart|cublas(?:Lt)?|cudnn\w{0,30}|cufft|curand|cusparse|"
                       r"cusolver|nvrtc\w{0,30}|nvinfer\w{0,20}|nccl|nvToolsExt|nvJitLink|"
                       r"cupti|nvonnxparser|nvparsers|nvidia-\w{1,30}|hiprtc|amdhip64|rocblas|"
                       r"MIOpen)\b")
_OS_LIB = re.compile(r"^lib(?:ssl|crypto|ffi|readline|tinfo|ncurses\w{0,3}|gfortran|quadmath|"
                     r"icu\w{1,10}|boost_\w{1,40}|protobuf|python3\.\d{1,2}m?|jpeg|png\d{0,3}|"
                     r"tiff|webp|avcodec|avformat|opencv_\w{1,30}|gomp|hwloc|udev)\.so\.\d")
# CUDA toolkit libraries a CUDA build of torch/TensorFlow ships or loads itself (not TensorRT,
# not the driver's libcuda)
_CUDA_TOOLKIT_LIB = re.compile(r"^lib(?:cudart|cublas(?:Lt)?|cudnn\w{0,30}|cufft|curand|cusparse|"
                               r"cusolver|nvrtc|nvJitLink|nccl|cupti)\.so\.\d")
# A CUDA toolkit library of a release before CUDA 11, whose soname carries the toolkit's minor
# (libcudart.so.10.1, libcufft.so.10.0, libcublas.so.9.1): from CUDA 11 on the sonames keep only
# the major (libcudart.so.11.0 serves every 11.x, libcudart.so.12 every 12.x).
_MINOR_SONAME = re.compile(r"^lib(?:cudart|cublas|cufftw?|curand|cusparse|cusolver|nvrtc|"
                           r"nvgraph|nvjpeg|npp\w{1,8})\.so\.(?:[1-9]|10)\.\d$")
# an op library loaded into a running framework: torch.ops.load_library / tf.load_op_library
_OP_LIBRARY_LOAD = re.compile(r"(?:Could not load this library: |load_op_library\(|"
                              r"ops\.load_library\()[^\s)]{0,300}")
_LATER_UNDEFINED = re.compile(r"[Uu]ndefined symbol: ?(?P<sym>_{1,2}Z[\w$]{2,2000})")
_FRAMEWORK_OWN = re.compile(r"[/\\](?:torch|tensorflow)[/\\]lib[/\\]")
_OWN_PROVIDER = re.compile(r"^libonnxruntime_providers_shared\.so")


def _basename(p: str) -> str:
    return re.split(r"[/\\]", p.strip().strip("'\"`"))[-1]


# libraries whose soname major is the CUDA major (cufft/curand/cusolver number otherwise)
_CUDA_MAJOR_LIB = re.compile(r"^lib(?:cudart|cublas|cublasLt|nvrtc|cusparse)\.so\.(\d{1,2})\b")
_CUDNN_LIB = re.compile(r"^libcudnn\w{0,30}\.so\.(\d{1,2})\b")
# what the text says is installed (not what a package says it requires)
_CUDA_HAVE = re.compile(r"(?<![Rr]equire )(?<![Rr]equires )(?:\b(?:CUDA|[Cc]uda)(?:[ _-]?"
                        r"(?:[Vv]ersion|[Tt]oolkit|[Rr]untime))?\s{0,3}[:=]?\s{0,3}v?|"
                        r"release |cuda-|\+cu|-cu|cudatoolkit[=\s]{1,3})(\d{1,2})(?:\.\d|"
                        r"(?<=cu\d\d)\d|(?<=cu\d\d)\b)")
_CUDNN_HAVE = re.compile(r"(?<![Rr]equire )(?<![Rr]equires )\bcu[Dd][Nn][Nn](?:[ _-]?"
                         r"[Vv]ersion)?\s{0,3}[:=]?\s{0,3}v?(\d{1,2})(?:\.\d|\b)")


def _cuda_major_pairing(base: str, text: str) -> tuple[bool, str] | None:
    """(whether the missing CUDA/cuDNN library's soname major matches the installed major the
    text states, that installed version) — None when either side is not in the text."""
    m = _CUDA_MAJOR_LIB.match(base)
    rx, what = _CUDA_HAVE, "CUDA"
    if not m:
        m = _CUDNN_LIB.match(base)
        rx, what = _CUDNN_HAVE, "cuDNN"
    if not m:
        return None
    have = {h for h in rx.findall(text) if 7 <= int(h) <= 13}
    if not have:
        return None
    want = str(int(m.group(1)))
    return want in have, f"{what} " + "/".join(sorted(have))


# torch libraries that exist only in some releases: (first, last) minor of the 1.x/2.x line
_TORCH_LIB_ERA = {"libtorch_cpu.so": ((1, 5), None), "libtorch_cuda.so": ((1, 5), None),
                  "libtorch_cuda_cu.so": ((1, 10), (1, 12)),
                  "libtorch_cuda_cpp.so": ((1, 10), (1, 12))}
_TORCH_HAVE = re.compile(r"\b(?:py)?torch(?:[ _-]?version)?\s{0,3}(?:[:=]{1,2}|\s)\s{0,3}v?"
                         r"(\d)\.(\d{1,2})\b", re.I)


def _torch_lib_era(base: str, text: str) -> str:
    """Why a torch library that exists only in some releases is missing, when the text states
    an installed torch outside that range ('' otherwise)."""
    era = _TORCH_LIB_ERA.get(base)
    if not era:
        return ""
    have = {(int(a), int(b)) for a, b in _TORCH_HAVE.findall(text)}
    if len(have) != 1:
        return ""
    (ver,) = have
    first, last = era
    if ver < first or (last is not None and ver > last):
        span = f"{first[0]}.{first[1]}" + (f"–{last[0]}.{last[1]}" if last else "+")
        return (f"{base} exists only in torch {span}, while the text shows torch "
                f"{ver[0]}.{ver[1]} installed: the extension was built for another torch "
                "release")
    return ""


@refiner("missing-library")
def _missing_library(ctx: Context) -> Refinement | None:
    lib = ctx.group("library", "path")
    if not lib:
        return None
    base = _basename(lib)
    kinds = path_kind(lib)
    text = ctx.text
    # whitespace, not spaces: CI logs hard-wrap ONNX Runtime's long provider line anywhere
    outer = re.search(r"Failed\s{1,3}to\s{1,3}load\s{1,3}library\s{1,3}(?P<outer>[\w.+-]{1,120}"
                      r"\.so[\w.]{0,20})\s{1,3}with\s{1,3}error", text)
    if "/" in lib and os.path.isfile(lib) and "cannot open shared object" in text:
        # the file is there, yet "cannot open … No such file": the loader skipped it
        return Refinement((4, 2), f"{lib} exists, so the loader skipped it: it is built for "
                          "another architecture or ELF class", ("OD408",),
                          f"{lib} exists, yet the loader says it cannot open it", "high")
    if re.search(r"Permission denied|Operation not permitted", ctx.line):
        return Refinement((4, 2), f"{lib} is there but may not be read or mapped (file "
                          "permissions, a noexec mount, SELinux)", ("OD403",),
                          f"{base} cannot be opened: permission denied", "high")
    bundled = _unbundled_by_wheel(lib, text)
    if bundled:
        return Refinement((4, 2), f"{bundled} of an installed package references {lib}, which a "
                          "macOS wheel carries itself (delocated wheels bundle every library "
                          "that is not the system's): the wheel was built or repaired without "
                          "it, so no search path can help", ("OD401", "OD201"),
                          f"{base}: a library the installed wheel should bundle is not in it",
                          "medium", f"whether the package's directory has {base} "
                          "(`opdoctor check --package <the package>`); a fixed release of the "
                          "package, or its conda build, has it")
    if "windows" in kinds and re.search(r"\.so(?:\.[\d.]{1,20})?$", base):
        return Refinement((4, 2), f"{lib} is a Linux shared object on a Windows path: the package "
                          "ships a binary for another OS", ("OD408",),
                          "a Linux .so on Windows: a binary for another OS", "high")
    if "torch-extensions" in kinds or re.search(r"FAILED: |returned non-zero exit status|"
                                                r"Error building extension|in _jit_compile\b|"
                                                r"in _import_module_from_library\b", text):
        return Refinement((4, 3), f"{lib} is the output of a build that failed earlier in the log "
                          "(JIT or setup.py): there is nothing to load", ("OD404",),
                          "the extension's build failed earlier, so its library does not exist",
                          "high")
    era = _torch_lib_era(base, text)
    if era:
        return Refinement((3, 5), era, ("OD304",), f"{base} not found: the extension was built "
                          "for another torch release", "medium",
                          "the torch release the extension was built for (its wheel tag or "
                          "requirements) against `python -c 'import torch; print(torch."
                          "__version__)'`")
    later = _LATER_UNDEFINED.search(text) if _CORE_TORCH.match(base) else None
    if later:
        # torch's core library is only missing while torch is not imported; the text also shows
        # the same extension failing on a symbol, which needs that library to have been found —
        # a later attempt (torch imported) got past the first error, so the symbol decides
        info = classify_symbol(repair_markdown_symbol(later.group("sym")))
        return Refinement(info.causes, f"{base} is missing only while torch is not imported; "
                          f"with torch loaded the text shows the real failure: "
                          f"{info.demangled} is {info.is_}", (info.code,),
                          f"undefined symbol {info.demangled} (once torch is imported): "
                          f"{info.is_.split(':')[0]}", "medium")
    if _CORE_TORCH.match(base) and "error while loading shared libraries" in ctx.line \
            and not _traceback_paths(text):
        # a program (not Python) linked against libtorch: nothing imports torch for it
        return Refinement((2, 3), f"{base} is libtorch's: a program linked against it finds it "
                          "only through its RPATH/RUNPATH or LD_LIBRARY_PATH (the libtorch "
                          "lib/ directory it was built with)", ("OD201",),
                          f"{base} not found: libtorch's directory is not on the search path",
                          "medium")
    if _CORE_TORCH.match(base) and _TORCH_RUNNING.search(text):
        # torch's own frames are running, so its core libraries are loaded under their
        # sonames: one the extension needs and the process lacks is one this torch does not have
        return Refinement((3, 2), f"torch is imported (its frames are in the traceback), so its "
                          f"core libraries are loaded; {base} is not one of them: the extension "
                          "was built for a torch release or build with another library layout "
                          "(libtorch_cpu.so exists from torch 1.5 on)", ("OD304",),
                          f"{base} not found although torch is imported: built for another "
                          "torch release", "medium",
                          "the torch release the extension was built for against the installed "
                          "one (`pip show torch`)")
    if _CORE_TORCH.match(base):
        return Refinement((5, 2), f"{base} is torch's own core library: an extension cannot find "
                          "it when it is imported before `import torch` (which loads it), or "
                          "outside the Python process that has torch", ("OD515", "OD201"),
                          f"{base} not found: torch is not loaded in this process yet", "medium",
                          "whether `import torch` ran first in the same interpreter")
    if _VARIANT_TORCH.match(base):
        return Refinement((3, 2), f"{base} exists only in some torch builds or releases (CUDA vs "
                          "ROCm vs CPU, or an older torch): the extension was built for another "
                          "torch variant than the installed one", ("OD304", "OD313"),
                          f"{base} not found: the extension was built for another torch build",
                          "medium")
    if _TF_FRAMEWORK.match(base):
        return Refinement((3, 5), f"{base} is TensorFlow's own library: the op library was built "
                          "for another TensorFlow major, or TensorFlow is not imported first",
                          ("OD342",), f"{base} not found: built for another TensorFlow", "medium")
    if _OWN_PROVIDER.match(base):
        return Refinement((4, 2), f"{base} ships inside the onnxruntime package itself: the "
                          "installed package (or a custom build) is missing its native library",
                          ("OD201",), f"{base} missing from the onnxruntime package", "medium")
    from opdoctor.syslibs import SYSTEM_LIBS

    if base in SYSTEM_LIBS:
        # a library wheels may expect the system to provide (manylinux lets them: libgomp,
        # libGL, glib …), absent from a minimal image: its system package, not the build
        what, deb, rpm = SYSTEM_LIBS[base]
        return Refinement((2, 4, 3), f"{base} is {what}, a library of the operating system "
                          "that the package expects installed (not in its wheel): not "
                          f"installed here — apt-get install {deb.split(' ')[0]} "
                          f"(Debian/Ubuntu), dnf install {rpm.split(' ')[0]} (Fedora/RHEL)",
                          ("OD201",), f"{base} ({what}) is not installed", "medium")
    if _OS_LIB.match(base):
        return Refinement((4, 3, 2), f"{base} is an operating-system library of a specific "
                          "major version: the binary was built on (and linked against) another "
                          "system's copy — a build-environment library leaked into the package, "
                          "or a package for another OS release", ("OD201",),
                          f"{base}: the binary links an OS library this system does not have",
                          "medium", f"which package links {base}: `opdoctor check <its .so>`; "
                          "a build for this OS release (or installing that library) fixes it")
    pairing = _cuda_major_pairing(base, text)
    if pairing is not None:
        same, have = pairing
        if not same:
            return Refinement((3, 2), f"{base} is the major the binary was built for, while the "
                              f"text shows {have} installed: the build targets another "
                              "CUDA/cuDNN major than the one this machine has", ("OD312",),
                              f"{base} not found: built for another CUDA/cuDNN major than the "
                              f"installed {have}", "medium",
                              f"a build for {have} (or installing the major {base} names)")
        return Refinement((2, 3), f"{base} is of the major the text shows installed ({have}): "
                          "it is there but not on the loader's search path (LD_LIBRARY_PATH, "
                          "the pip nvidia-* wheels' directories, a missing symlink)",
                          ("OD201",), f"{base} not found although {have} is installed: the "
                          "search path", "medium")
    if outer and _CUDA_LIB.match(base) and not base.startswith("libnvinfer"):
        m = re.search(r"\.so\.(\d{1,3})", base)
        return Refinement((3, 2), f"the {outer.group('outer')} provider needs {base}"
                          + (f" (major {m.group(1)})" if m else "") + ": the installed CUDA/cuDNN "
                          "major differs from the one this onnxruntime-gpu build targets, or it "
                          "is not on the search path", ("OD312", "OD201"),
                          f"{base} not found for {outer.group('outer')}: CUDA/cuDNN major of the "
                          "provider build vs the one installed", "medium",
                          "which CUDA/cuDNN major this onnxruntime build targets (its release "
                          "notes) against the one installed: equal → cause 2, different → 3")
    if _CUDA_LIB.match(base) and re.search(r"tensorflow|dso_loader|\btf\.", text):
        return Refinement((3, 2), f"TensorFlow wheels are built for one exact CUDA/cuDNN major "
                          f"and look for {base} by that name: the installed CUDA is another "
                          "major (or not on the search path)", ("OD312", "OD201"),
                          f"{base} not found: TensorFlow's CUDA major vs the installed one",
                          "medium", "the CUDA/cuDNN versions tested with this TensorFlow "
                          "release (tensorflow.org/install/source#gpu) against the installed")
    loaded = _OP_LIBRARY_LOAD.search(text)
    if _CUDA_TOOLKIT_LIB.match(base) and loaded and not _FRAMEWORK_OWN.search(loaded.group(0)):
        # an op library loaded into a framework that is already running: a CUDA build of the
        # framework of that major has this library loaded (its own wheels bring it), so the
        # framework installed is a CPU build or another CUDA major than the op library's
        return Refinement((3, 2), f"{base} is needed by an op library loaded into an already "
                          "running framework: a CUDA build of the framework (of that CUDA "
                          "major) brings and loads it, so the framework here is a CPU build or "
                          "another CUDA major than the one the op library was built for",
                          ("OD313", "OD312"), f"{base} not found: a CUDA build of the op "
                          "library next to a CPU (or other CUDA major) framework", "medium",
                          "whether the framework is a CUDA build of the major the op library "
                          "needs (`python -c 'import torch; print(torch.__version__, "
                          "torch.version.cuda)'`): CPU or another major → cause 3; the same "
                          "major → the CUDA libraries are not on the search path (cause 2)")
    if _MINOR_SONAME.match(base):
        # no other 10.x (or 9.x) toolkit provides that name: a machine with CUDA installed but
        # not this exact release — the binary (or the framework under it) was built for
        # another CUDA release than the one installed, far more often than a search path
        return Refinement((3, 2), f"{base} names a CUDA release before 11 down to its minor: a "
                          "binary built with that toolkit loads only that release's library, "
                          "and no other CUDA release provides the name — the machine has "
                          "another CUDA (or the binary was built for another one), or that "
                          "release's lib64 is not on the search path", ("OD312", "OD201"),
                          f"{base} not found: built for CUDA {base.split('.so.')[1]}, which "
                          "this machine does not provide", "medium",
                          f"whether CUDA {base.split('.so.')[1]} is installed (`ls "
                          f"/usr/local/cuda*/lib64/{base}`): installed → cause 2 (the search "
                          "path); absent → a build for the installed CUDA, or that release")
    if _CUDA_LIB.match(base):
        return Refinement((2, 3), f"{base} is a CUDA library: not on the loader's search path "
                          "(LD_LIBRARY_PATH, the pip nvidia-* wheels' directories), or a CUDA "
                          "major that is not installed", ("OD201", "OD312"),
                          f"{base} not found: the CUDA libraries are not on the search path",
                          "medium")
    built, ran = python_versions(text)
    if built and ran and not built & ran:
        return Refinement((5, 3), f"the compiled module is built for Python {sorted(built)[0]} "
                          f"but the process runs Python {sorted(ran)[0]}", ("OD503",),
                          "an extension built for another Python", "high")
    pkg_dir = os.path.dirname(lib)
    if "/" in lib and kinds & {"source-tree", "build-tree"} and "installed" not in kinds \
            and re.search(r"No such file", text) and any(
            os.path.dirname(t) == pkg_dir and t.endswith("__init__.py")
            for t in _traceback_paths(text)) and any(
            "installed" in path_kind(t) for t in _traceback_paths(text)):
        # the package's own __init__.py ran from a directory outside site-packages (the
        # framework's frames are in site-packages): Python imported a source checkout, which has
        # no built library — it shadows the installed package
        top = os.path.basename(pkg_dir)
        # The text cannot tell a checkout that shadows the installed package from an editable
        # install (`pip install -e .`) whose in-place build is gone: the same source tree,
        # the same failure (survey 14's P8); the check of the package can.
        return Refinement((5, 4), f"{top} was imported from {pkg_dir}, a source tree (not "
                          "site-packages, where the framework is) without its built "
                          f"{base}: a checkout that shadows the installed package (the current "
                          "directory or PYTHONPATH is sys.path[0]), or an editable install "
                          "whose in-place build is missing", ("OD502", "OD510"),
                          f"{top} runs from a source tree without its built {base}", "medium",
                          f"whether another copy of {top} is installed, or {top} is an "
                          f"editable install to rebuild: `opdoctor check --package {top}`")
    if "/" in lib and "installed" in kinds and re.search(r"cannot open shared object file",
                                                          text):
        # Python found the file, so it was there: built for another architecture or OS
        # (the loader says 'No such file' then too) — or gone since, which the text cannot
        # tell from that (an editable install's finder maps a module to a build output that
        # was deleted: survey 14's P7).
        return Refinement((4, 2), f"{lib} is a file the package installs, yet the loader cannot "
                          "open it: built for another architecture or OS (the loader says 'No "
                          "such file' then too), or the file is gone (deleted, an editable "
                          "install's build output removed)", ("OD408", "OD508"),
                          f"{base} cannot be opened: built for another CPU/OS, or missing",
                          "medium", f"`opdoctor check {lib}` reads its ELF header (machine, "
                          "class), or says it is not there")
    if lib.startswith("/") and "cannot open shared object file: No such file" in text and \
            not re.match(r"/(?:usr|lib|lib64|opt|etc|bin|sbin|snap|nix)/", lib):
        # dlopen of a full path (a project's own build output) searches nothing: the file is
        # not at that path — its build step was not run or failed, or wrote it elsewhere
        return Refinement((4, 2), f"{lib} was loaded by its full path, so no search path is "
                          "involved: the file is not there (the build that makes it was not "
                          "run or failed, or put it in another directory), or it is a build "
                          "for another CPU, which the loader reports the same way", ("OD401",
                                                                                    "OD408"),
                          f"{base} is not at the path given: not built there", "medium",
                          f"whether {lib} exists (`opdoctor check {lib}` says what it is); "
                          "if not, run the project's build step that makes it")
    if "/" not in lib and not base.startswith("lib") and re.search(r"load_op_library\(\s*['\"]"
                                                                   r"[\w.-]{1,100}\.so", text):
        return Refinement((2,), f"load_op_library('{base}') without a directory searches the "
                          "loader's path, not the current directory: pass './" + base + "'",
                          ("OD201",), "a bare file name is looked up on the search path", "high")
    built, ran = python_versions(text)
    if built and ran and not built & ran:
        return Refinement((5, 3), f"the compiled module is built for Python {sorted(built)[0]} "
                          f"but the process runs Python {sorted(ran)[0]}", ("OD503",),
                          "an extension built for another Python", "high")
    return None


@refiner("cuda-library")
def _cuda_library(ctx: Context) -> Refinement | None:
    """A CUDA/cuDNN library a framework dlopens by name: the soname major against the installed
    major the text states (the rest of the text cannot separate path from release)."""
    lib = ctx.group("library")
    pairing = _cuda_major_pairing(_basename(lib), ctx.text) if lib else None
    if pairing is None or pairing[0]:
        return None
    return Refinement((3, 2), f"{_basename(lib)} is the major the framework was built for, while "
                      f"the text shows {pairing[1]} installed", ("OD312",),
                      f"{_basename(lib)} not found: built for another CUDA/cuDNN major than the "
                      f"installed {pairing[1]}", "medium")


@refiner("ort-native")
def _ort_native(ctx: Context) -> Refinement | None:
    """onnxruntime's compiled core did not import: on Windows a DLL it needs is missing (the
    Visual C++ runtime); elsewhere the Python side of the install is inconsistent."""
    paths = re.findall(r"\((/[^)\s]{1,400})\)|File \"(/[^\"\n]{1,400})\"", ctx.text)
    if _DLL_INIT_FAILED.search(ctx.text):
        return _dll_init_failed()
    if re.search(r"DLL|[A-Za-z]:\\|WinError|\.pyd\b", ctx.text) or not paths:
        return None
    return Refinement((5, 2), "the names missing from onnxruntime.capi._pybind_state on a "
                      "non-Windows system: two onnxruntime distributions (onnxruntime and "
                      "onnxruntime-gpu) installed over each other, or a partial upgrade",
                      ("OD502",), "onnxruntime's Python package and its compiled core disagree",
                      "medium", "`pip list | grep onnxruntime`: more than one distribution means "
                      "uninstall all and install one")


# ------------------------------------------------------------------ symbol versions
@refiner("symbol-version")
def _symbol_version(ctx: Context) -> Refinement | None:
    version = ctx.group("version")
    runtime = ctx.group("runtime")
    needer = ctx.group("path")
    if version.startswith("GLIBC_"):
        return Refinement((3,), f"{version} is a glibc version: the binary was built on a newer "
                          "system than this one", ("OD302",),
                          f"this system's glibc is older than {needer or 'the binary'} needs",
                          "high")
    rk, nk = path_kind(runtime), path_kind(needer)
    if runtime and re.search(r"[/\\](?:compilers?|gcc[-\w.]{0,20}|devtoolset[-\w]{0,10})[/\\]",
                             runtime):
        # a compiler's own runtime (a module load, /usr/local/gcc-X) put first on the search path
        return Refinement((2, 3), f"the libstdc++ that was loaded ({runtime}) belongs to a "
                          "compiler installation put on the search path (LD_LIBRARY_PATH, a "
                          "module load): it is found before the newer one the library needs",
                          ("OD202", "OD302"), f"a compiler's older libstdc++ is found first "
                          f"({version})", "medium",
                          "whether the environment or the system has a libstdc++ with "
                          f"{version}: then drop the compiler's directory from LD_LIBRARY_PATH")
    if runtime and "env" in rk and nk & {"source-tree", "build-tree"}:
        # built locally with the system compiler, run in a conda env whose libstdc++ is older
        return Refinement((2, 3), f"{needer} was built locally (a source/build tree) with the "
                          "system compiler, whose libstdc++ has " + version + ", but the "
                          f"environment's older copy ({runtime}) is found first", ("OD202",
                                                                                  "OD302"),
                          f"the environment's libstdc++ is older than the compiler's ({version})",
                          "medium", "strings /usr/lib/x86_64-linux-gnu/libstdc++.so.6 | grep "
                          + version + ": present → a newer libstdc++ in the environment "
                          "(conda install -c conda-forge libstdcxx-ng) or build with its gcc")
    if runtime and "system" in rk and "env" in nk:
        return Refinement((2, 3), f"the libstdc++ that was loaded is the system's ({runtime}), "
                          f"while {needer} lives in a conda/virtual env, which usually brings a "
                          "newer libstdc++: the env's copy is not found first", ("OD202", "OD302"),
                          f"the system libstdc++ is found before the environment's ({version})",
                          "medium",
                          "whether the environment has a libstdc++ with " + version
                          + " (strings $CONDA_PREFIX/lib/libstdc++.so.6 | grep " + version + ")")
    return Refinement((3, 2), f"{version} is missing from the C++ runtime that was loaded"
                      + (f" ({runtime})" if runtime else "") + ": it is older than the compiler "
                      "that built the library", ("OD302",), None, "medium",
                      "whether a newer libstdc++ is installed but not found first "
                      "(cause 2) or none is (cause 3)")


# ------------------------------------------------------------------ operators not found
_CPU_VARIANT = re.compile(r"\+cpu\b|/cpu/|libtorch-[\w.-]{0,60}cpu|cpuonly|CPU-only")
_PY_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"\n]{1,300}\.py\", line")
_PACKAGE_NS = re.compile(r"^(?:torchvision|torchaudio|torchtext|torch_scatter|torch_sparse|"
                         r"torch_cluster|mmcv|detectron2|xformers|fbgemm|torchrec|vllm|_C|"
                         r"flash_attn|apex|deepspeed)$")


# the allocation and copy kernels an out-of-tree backend registers before anything else: with no
# kernel even for these the backend extension is not loaded at all
_BACKEND_BASIC_OP = re.compile(r"aten::(?:empty(?:_strided|\.memory_format)?|_copy_from\w{0,20}|"
                               r"copy_|_to_copy|resize_|set_\.\w{1,20}|view|as_strided)\b")


@refiner("op-missing")
def _op_missing(ctx: Context) -> Refinement | None:
    op = ctx.group("op")
    ns = ctx.group("namespace") or (op.split("::")[0] if "::" in op else "")
    text = ctx.text
    if ns in ("aten", "prim", "quantized", "_caffe2"):
        # torch's own ops come with torch, not with a package some import must bring in (no
        # cause 5): either a static link dropped their registrations, or the model or code
        # names an op this torch release does not have yet (a model scripted by torch 2.1
        # with aten::scaled_dot_product_attention, loaded by an older libtorch)
        return Refinement((1, 3), f"{ns}:: is torch's own namespace: torch's operators register "
                          "from static initialisers, which a static link drops unless it uses "
                          "--whole-archive; or the op is newer than the torch (libtorch) that "
                          "runs the model", ("OD121",), None, "medium",
                          f"whether {op or ns} exists in the torch that runs the model (a model "
                          "saved by a newer torch needs that release): if it does, the static "
                          "link dropped its registration")
    if re.search(r"load_library\(|load_op_library\(|TORCH_LIBRARY|ctypes\.CDLL", text):
        return Refinement((1, 3), "the text shows the library being loaded, so it was loaded: "
                          f"it registers nothing under {op or ns}: another namespace or name, or "
                          "the registration is compiled out", ("OD101", "OD105", "OD106"),
                          None, "medium")
    if re.search(r"Failed to load|undefined symbol|cannot open shared object", text):
        return Refinement((3, 2), "the library that defines the op failed to load (see the load "
                          "error in the text)", ("OD304",), None, "medium")
    if ctx.pattern_id in ("torch.schema-missing", "torch.torchscript-unknown-op") and \
            not _PACKAGE_NS.match(ns):
        # findSchemaOrThrow from C++ (a TorchScript/AOTI/export loader, a C++ program), or
        # TorchScript resolving a call to a custom op: the code (or the serialized model) was
        # written where the op existed, so the caller expects the op's library to be loaded
        # already; with no load in sight it was not
        return Refinement((5, 1, 3), f"{op or ns} is looked up by a loader (TorchScript, AOTI, "
                          "a C++ program) that expects the library defining it to be loaded "
                          "already: it was not imported/loaded in this process", ("OD505",),
                          None, "medium", f"whether the library that defines {op or ns} is "
                          "imported (or linked and kept) before the model is loaded")
    if _PACKAGE_NS.match(ns) and ctx.pattern_id == "torch.op-does-not-exist":
        # "operator ns::op does not exist" is what the package's own import raises (its fake
        # registrations run at import): it was imported, its op library did not load — in the
        # wild overwhelmingly a torch/package pairing (release, or CUDA vs CPU build)
        own_import = bool(re.search(r"[/\\]" + re.escape(ns) + r"[/\\][\w/\\]{0,200}"
                                    r"(?:_meta_registrations|__init__)\.py", text))
        return Refinement((3, 1, 5) if own_import else (3, 5),
                          f"{ns}:: belongs to a package whose op library loads when the "
                          "package is imported; 'does not exist' is raised by that import's "
                          "own registrations, so it was imported and its library did not "
                          f"register the op — almost always a {ns} built for another torch "
                          "release or build variant (a +cuXXX CUDA build next to a +cpu torch, or "
                          "another CUDA major), whose load error is swallowed into a warning",
                          ("OD304", "OD505"), None, "medium",
                          f"whether the installed {ns} is the release and CUDA/CPU variant made "
                          f"for the installed torch (`pip list | grep -E 'torch|{ns}'`: same "
                          "+cpu/+cuXXX tag, matching release): `opdoctor check --package "
                          f"{ns}` loads its library and names the mismatch; if it loads and "
                          "still registers nothing, the build left the op out (cause 1)",
                          {1: f"the {ns} library loaded but registers no such op (built without "
                              "it)"} if own_import else {})
    if _PACKAGE_NS.match(ns):
        return Refinement((5, 3), f"{ns}:: ops register when the package is imported (or, in a "
                          "C++ program, when its library is linked and kept): this program "
                          "looked the op up without that", ("OD505", "OD304"), None, "medium",
                          f"whether the program imports {ns} (Python) or links lib{ns} with "
                          "--no-as-needed (C++); then `opdoctor check --package " + ns + "`")
    if re.search(r"register_fake|impl_abstract|_meta_registrations|fake_registered|"
                 r"torch\.library\.(?:impl|register)", text):
        return Refinement((5, 1, 3), "Python-side registrations (fake/meta kernels) for "
                          f"{op or ns} ran before the library that defines the op was "
                          "loaded (eagerly imported, or the library import failed)",
                          ("OD505", "OD101"), None, "medium",
                          f"whether the library that should define {op or ns} is loaded: "
                          "`opdoctor check <that .so> --expect-op " + (op or ns) + "`")
    return Refinement((1, 5, 3), f"nothing registered {op or ns} in this process: its library "
                      "registers nothing under that name (compiled out, another namespace), or "
                      "was never loaded", None, None, "medium",
                      f"whether the library that should define {op or ns} is loaded and "
                      "registers it: `opdoctor check <that .so> --expect-op " + (op or ns) + "`")


@refiner("torchbind-host")
def _torchbind_host(ctx: Context) -> Refinement | None:
    """A TorchBind class unknown to ``torch::jit::load`` in a C++ program (an uncaught
    ``torch::jit::ErrorReport`` / ``c10::Error``): no Python import is there to bring it, so
    its library is not linked into the program or loaded by it (TRTorch's runtime, whose
    ``tensorrt.Engine`` class a compiled module needs)."""
    cpp = re.search(r"terminate called after throwing an instance of '(?:torch::jit::"
                    r"ErrorReport|c10::Error)'", ctx.text)
    if not cpp or "Traceback (most recent call last)" in ctx.text:
        return None
    cls = f"{ctx.group('namespace')}.{ctx.group('opname')}"
    return Refinement((1, 3), f"a C++ program loads the model: the TorchBind class {cls} "
                      "registers only when the library defining it is linked into the program "
                      "(its static registrations kept: --no-as-needed / --whole-archive) or "
                      "loaded by it (dlopen) before torch::jit::load", ("OD106", "OD505"),
                      f"the C++ program has no {cls}", "medium",
                      f"whether the program links (and keeps) the library that defines {cls}: "
                      "`ldd <program>` lists it, `opdoctor check <that .so>` reads its "
                      "registrations")


@refiner("paddle-op")
def _paddle_op(ctx: Context) -> Refinement | None:
    """Paddle's "Operator (X) is not registered" in a C++ inference program (Paddle
    Inference's analysis_predictor / naive_executor, an uncaught EnforceNotMet): no Python
    import registers anything there, so a custom op (Paddle3D's hard_voxelize) is there only
    when its library is linked into the program or loaded by it — as TensorFlow's serving
    binaries need their custom ops compiled in."""
    if not re.search(r"analysis_predictor\.cc|naive_executor\.cc|paddle_inference|"
                     r"AnalysisConfig|CreatePredictor|terminate called after throwing an "
                     r"instance of '(?:phi|paddle::platform)::enforce::EnforceNotMet'", ctx.text):
        return None
    op = ctx.group("op") or "the op"
    return Refinement((1, 3), f"{op} is looked up by a C++ inference program (Paddle Inference), "
                      "where no Python import registers it: a custom op's library must be linked "
                      "into the program (or loaded by it) — else the model needs a Paddle "
                      "Inference release that has the op", ("OD106", "OD304"),
                      f"the inference program has no {op}", "medium",
                      f"whether {op} is one of Paddle's own ops (then the release the model was "
                      "exported with) or a custom op (then its library, linked or loaded)")


# ------------------------------------------------------------------ TensorFlow op not registered
@functools.lru_cache(maxsize=1)
def tf_core_ops() -> frozenset[str]:
    """The op names TensorFlow itself registers (tf_core_ops.txt, written from the pinned
    TensorFlow's tf.raw_ops by native/gen_tf_core_ops.py; read only for such a message)."""
    path = os.path.join(os.path.dirname(__file__), "tf_core_ops.txt")
    try:
        with open(path, encoding="utf-8") as fh:
            return frozenset(line.strip() for line in fh if line.strip() and line[0] != "#")
    except OSError:
        return frozenset()


@refiner("tf-op")
def _tf_op(ctx: Context) -> Refinement | None:
    text = ctx.text
    op = ctx.group("op")
    if op in tf_core_ops():
        # TensorFlow's own op (VariableV2, NcclAllReduce, QuantizedAdd, PyFunc): no package
        # import registers it — the TensorFlow running was built without it (a Windows or
        # mobile build, a serving binary, the C API without Python) or is older than the
        # TensorFlow that wrote the graph
        return Refinement((1, 3, 5), f"{op} is one of TensorFlow's own ops: the TensorFlow "
                          "binary running was built without it (another platform's build, a "
                          "serving or C/Java/mobile binary, a selective build) or is older than "
                          "the TensorFlow that wrote the model — no import registers it",
                          ("OD106",), f"{op} (TensorFlow's own op) is not in this binary",
                          "medium", "the TensorFlow release and platform that wrote the model "
                          "against the one that loads it")
    if re.search(r"tensorflow_serving|[Ss]ervable|Loading servable|TF_?Serving|tritonserver|"
                 r"inference server|tensorflow/serving|tensorflow_model_server|model_server|"
                 r"tf-serving|external/org_tensorflow/", text):
        # external/org_tensorflow/: TensorFlow compiled as a Bazel dependency of another binary
        # (TF Serving, a C++ server) logs its own source paths so; a pip TensorFlow does not
        return Refinement((1, 5), "the op is loaded by a server binary (TF Serving, Triton) that "
                          f"does not contain {op}: custom ops must be compiled into the server",
                          ("OD106",), f"the serving binary has no {op}", "high")
    if re.search(r"org\.tensorflow\.|TensorFlowException|tfjs-node|@tensorflow/tfjs|"
                 r"TensorFlowSharp|Tensorflow\.NET|TF_LoadSessionFromSavedModel|"
                 r"TF_GraphImportGraphDef|SavedModelBundle|\.java:\d|\.go:\d|\.cs:line \d|"
                 r"tensorflow::LoadSavedModel|java\.lang\.\w{1,60}Exception", text):
        # not a Python process: no package import can register the op; the host program's
        # TensorFlow library has it only when linked in or loaded explicitly (TF_LoadLibrary)
        return Refinement((1, 5), f"the model is loaded by a non-Python program (Java, C/C++, "
                          f"Node.js, Go, .NET) whose TensorFlow library does not contain {op}: "
                          "custom ops must be linked into it or loaded with TF_LoadLibrary / "
                          "TensorFlow.loadLibrary", ("OD106",), f"the host program's TensorFlow "
                          f"has no {op}", "medium")
    if re.search(r"(?<![\w.])Not found: Op type not registered", text) and not re.search(
            r"NotFoundError|Traceback|\.py\b", text):
        # "Not found: …" is the C++ Status text; a Python process raises NotFoundError: the
        # model is loaded by a C++ host (a server, the C API) whose binary lacks the op
        return Refinement((1, 5), "the error is TensorFlow's C++ status ('Not found: …'), not "
                          "Python's NotFoundError: a C++ host (a model server, a program on "
                          f"the C/C++ API) loads the model, and its binary does not contain {op}"
                          " — custom ops must be linked into it or loaded with TF_LoadLibrary",
                          ("OD106",), f"the host binary has no {op}", "medium")
    if re.search(r"[Aa]ndroid|\biOS\b|mobile|TFLite|tflite|libtensorflow_inference", text):
        return Refinement((1,), f"mobile/selective builds register only a subset of ops; {op} is "
                          "not in this one", ("OD106",), f"{op} is not in this mobile build",
                          "high")
    if re.search(r"tf\.contrib|contrib ops are lazily", text) and not re.search(
            r"in binary running on", text):
        return Refinement((5, 1), "contrib ops register lazily, when their module is imported",
                          ("OD505",), None, "medium")
    return Refinement((5, 1, 3), f"{op} is a custom op: it registers when its package's op "
                      "library is loaded — import that package (tensorflow_text, "
                      "tensorflow_decision_forests, …) before loading the model; or it is "
                      "installed only for another Python (another venv, a user site of "
                      "another release); or the op library failed to load",
                      ("OD505", "OD146", "OD101"), None, "medium",
                      f"which package defines {op}: import it first, then "
                      "`opdoctor check <its op library .so>`; `opdoctor check --python <the "
                      f"job's python> --package <the job's package> --expect-op {op}` finds an "
                      "op library installed for another Python (OD146)")


# ------------------------------------------------------------------ dispatch keys
@refiner("backend")
def _backend(ctx: Context) -> Refinement | None:
    backend = ctx.group("backend")
    op = ctx.group("op")
    if backend in ("PrivateUse1", "PrivateUse2", "PrivateUse3") or (
            op.startswith("aten::") and backend not in ("CPU", "CUDA", "Meta", "SparseCPU",
                                                         "SparseCUDA", "QuantizedCPU",
                                                         "QuantizedCUDA", "AutogradCPU",
                                                         "AutogradCUDA")):
        if op.startswith("aten::") and not _BACKEND_BASIC_OP.match(op):
            # a backend extension registers the allocation and copy kernels first (empty,
            # empty_strided, _copy_from …): a tensor that reached another op on that device was
            # created there, so the extension is loaded and lacks a kernel for this op
            return Refinement((1, 5), f"{op} is not one of the allocation/copy ops every "
                              f"{backend} backend registers first: the backend is loaded (the "
                              f"tensor was created on it) but registers no {backend} kernel "
                              f"for {op}", ("OD103", "OD106"),
                              f"the {backend} backend has no kernel for {op}", "medium",
                              f"whether the backend's TORCH_LIBRARY_IMPL(aten, {backend}, m) "
                              f"registers {op} (or a fallback)")
        return Refinement((5, 1), f"{backend} kernels for torch's own ops come from an out-of-tree "
                          "backend extension: it was not imported/loaded in this process",
                          ("OD505",), f"the {backend} backend extension is not loaded", "medium")
    if backend == "CUDA" and _PACKAGE_NS.match(op.split("::")[0]):
        return Refinement((3, 1), f"{op} belongs to a package whose CUDA kernels exist only in "
                          "its CUDA build: a CPU build of the package is installed next to a "
                          "CUDA torch (or a build for another CUDA)", ("OD313", "OD304"),
                          f"a CPU build of {op.split('::')[0]} with a CUDA torch", "medium")
    if backend == "CUDA" and op.startswith("aten::"):
        # every CUDA build of torch registers CUDA kernels for its own aten ops, from its CUDA
        # library (libtorch_cuda / torch_cuda.dll). `import torch` always loads that library, so
        # from Python the message means a CPU build of torch; it mostly comes from programs
        # linking libtorch, where the linker drops that library when nothing references a symbol
        # of it (--as-needed; MSVC without the /INCLUDE: symbol) — unless the text shows a
        # CPU-only libtorch
        if _CPU_VARIANT.search(ctx.text) or _PY_TRACEBACK.search(ctx.text):
            return Refinement((3, 4, 2), f"{op} is one of torch's own operators, which every CUDA "
                              "build of torch implements for CUDA: the torch (or libtorch) in "
                              "this process is a CPU-only build", ("OD313",),
                              "torch's own op has no CUDA kernel: a CPU build of torch", "medium")
        return Refinement((4, 3, 2), f"{op} is one of torch's own operators, whose CUDA kernels "
                          "live in torch's CUDA library (libtorch_cuda.so / torch_cuda.dll): it "
                          "is not in the process — a program linking libtorch lost it at link "
                          "time (the linker drops a library none of whose symbols is referenced: "
                          "link it with -Wl,--no-as-needed, or MSVC's /INCLUDE: symbol that "
                          "CMake's find_package(Torch) adds), or the libtorch is a CPU-only build",
                          ("OD313",), "torch's CUDA library is not linked into the program",
                          "medium", "`ldd <the program> | grep torch_cuda` (or `dumpbin "
                          "/dependents` on Windows): no torch_cuda means the linker dropped it")
    if backend == "CUDA":
        return Refinement((1, 3, 4), f"{op} has no CUDA kernel: the extension was built without "
                          "its CUDA part (no nvcc at build time, FORCE_CUDA unset) or registers "
                          "CPU only", ("OD103", "OD106", "OD313"), None, "medium")
    return None


# ------------------------------------------------------------------ Python modules
# module names that are built, not written: torch/pybind conventions, SWIG's _swig<name>, the
# (Cython/CUDA) NMS kernels detection repositories compile in place
_COMPILED_NAME = re.compile(r"(?:^|\.)(?:_C|_ext|_swig\w{1,40}|(?:cpu_|gpu_|_)?nms|_?C_?\w{0,20}|"
                            r"\w{0,60}_(?:cuda|cpp|cpu|gpu|ext|"
                            r"C|cuda_?\w{0,10}|internal|c_expression|pybind\w{0,10}|ops|kernels?|"
                            r"native|lib|plugin|cc|cxx)|lib\w{1,40})$")
# A top-level module named as an operator in C++ style (MultiScaleDeformableAttention, DCNv3,
# RoIAlignRotated): the CUDA/C++ extension a research repository builds from its ops folder
# (setup.py / make.sh), not a Python package on an index.
_OP_MODULE = re.compile(r"(?:[A-Z][a-z0-9]{0,20}){0,6}(?:Attention|Deform\w{0,20}|DCN(?:v\d)?|"
                        r"Conv\d?[dD]?|NMS|Nms|RoI\w{0,20}|ROI\w{0,20}|Pool\w{0,20}|Align\w{0,20}|"
                        r"Rasteriz\w{0,20})(?:v\d)?$")
_FRAMEWORK_MODULES = re.compile(r"^(?:torch|tensorflow|onnxruntime|paddle|oneflow|mindspore|"
                                r"jax|numpy|triton)$")


def _traceback_paths(text: str) -> list[str]:
    paths = re.findall(r"File \"([^\"\n]{1,400})\"", text)
    paths += re.findall(r"^(/[^\s:]{1,400}\.py) in ", text, re.M)
    paths += re.findall(r"\((/[^)\s]{1,400}\.py)\)", text)
    return paths


def _where_package(text: str, module: str) -> str:
    """'installed', 'source-tree' or '' for the package directory the traceback shows."""
    top = module.split(".")[0]
    for p in _traceback_paths(text):
        if re.search(r"[/\\]" + re.escape(top) + r"[/\\]", p):
            k = path_kind(p)
            if "installed" in k:
                return "installed"
            if "source-tree" in k or "build-tree" in k:
                return "source-tree"
    return ""


# Libraries a macOS wheel expects from the system or another installation (Homebrew's libomp,
# CUDA, MKL, the interpreter itself): their absence is a search-path or install matter.
_EXTERNAL_DYLIB = re.compile(r"omp|cuda|cudnn|cublas|nvrtc|mkl|python|ssl|crypto", re.I)


def _unbundled_by_wheel(lib: str, text: str) -> str:
    """The file of an installed package whose macOS dependency ``lib`` ("Library not loaded:
    @rpath/libc++.1.dylib  Referenced from: …/site-packages/torch/_C….so") is named as one
    the wheel carries — through @rpath / @loader_path or by bare name, not an absolute path
    into Homebrew or the system — and is not an external runtime; "" otherwise."""
    m = re.search(r"Library not loaded: (\S{1,300})\s{1,20}Referenced from: (?:<[^>\n]{1,80}>\s)?"
                  r"(\S{1,400})", text)
    if not m or m.group(1) != lib or lib.startswith("/") or _EXTERNAL_DYLIB.search(lib):
        return ""
    by = m.group(2)
    return _basename(by) if "installed" in path_kind(by) else ""


# Folders projects keep their own model and op code in (a package vendored into a research
# repository), as opposed to a checkout of the package's own repository (kaolin/kaolin/).
_PROJECT_FOLDERS = re.compile(r"^(?:models?|libs?|ops?|modules|third_?party|external|"
                              r"extensions?|networks?|nets?|utils)$", re.I)


def _vendored_in_project(text: str, top: str) -> bool:
    """Whether the traceback shows the package ``top`` as a folder inside one of a project's
    code folders (``…/model/pointnet2/pointnet2_utils.py``)."""
    for p in _traceback_paths(text):
        m = re.search(r"([^/\\]{1,100})[/\\]" + re.escape(top) + r"[/\\]", p)
        if m:
            return _PROJECT_FOLDERS.match(m.group(1)) is not None
    return False


def _imported_by_itself(text: str, top: str) -> bool:
    """Whether the traceback's last frame (the import statement that failed) is a file of the
    package ``top`` itself."""
    frames = re.findall(r"File \"([^\"\n]{1,400})\"", text)
    return bool(frames) and re.search(r"[/\\]" + re.escape(top) + r"[/\\]", frames[-1]) is not None


def _installed_core(text: str, module: str) -> str:
    """The installed package whose compiled core a top-level ``_<package>`` module is (k2's
    ``_k2``), read from the traceback's site-packages frames; "" when none."""
    if "." in module or not module.startswith("_"):
        return ""
    stem = module.lstrip("_").lower()
    for p in _traceback_paths(text):
        m = re.search(r"[/\\](?:site|dist)-packages[/\\]([\w.-]{1,100})[/\\]", p)
        if m and m.group(1).lower().replace("-", "_") == stem:
            return m.group(1)
    return ""


@refiner("module")
def _module(ctx: Context) -> Refinement | None:
    module = ctx.group("module")
    name = ctx.group("name")
    text = ctx.text
    if not module and name:
        # "cannot import name 'X'" without its module (older Pythons): the quoted import
        # statement of the traceback names it ("from torch._six import container_abcs")
        quoted = re.search(r"\bfrom (\w[\w.]{0,199}) import [^\n]{0,300}?\b" + re.escape(name)
                           + r"\b", text)
        if quoted:
            module = quoted.group(1)
            ctx = Context(ctx.pattern_id, {**ctx.groups, "module": module}, ctx.line, text,
                          ctx.other_ids)
    full = f"{module}.{name}" if name else module
    if not module:
        if name and _COMPILED_NAME.search(name) and not _traceback_paths(text):
            # "cannot import name '<compiled module>'" with neither its package nor a traceback:
            # a package's compiled extension is missing — first because it was never built (a
            # checkout used without its build step), then a directory shadowing the build
            return Refinement((4, 5, 3), f"{name} is the name of a compiled extension module: "
                              "the package it belongs to has no built copy of it (the build "
                              "step was skipped or failed), or the directory imported is not "
                              "the one that was built", ("OD501", "OD502"),
                              f"{name}: a compiled extension that was not built", "medium",
                              "where the package is imported from and whether it contains the "
                              f"built {name} (`opdoctor check --package <the package>`)")
        return None
    top = module.split(".")[0]
    where = _where_package(text, module)
    compiled = bool(_COMPILED_NAME.search(full)) or bool(re.search(r"cuda|_C\b", full)) or \
        bool(_OP_MODULE.match(full))
    if name and not compiled and _FRAMEWORK_MODULES.match(top) and \
            ctx.pattern_id != "python.framework-api-moved":
        # a Python-level name of the framework itself ('container_abcs' from 'torch._six'):
        # the framework's API of another release (or a local file shadowing it), as for
        # "module 'torch' has no attribute …" — not a compiled extension missing
        return _framework_module(ctx)
    if name and name.startswith("_") and not name.startswith("__") and not compiled and \
            where == "installed" and "partially initialized" not in ctx.line and \
            _imported_by_itself(text, top):
        # a private name of the package imported by the package's own installed code (Pillow's
        # Image.py: `from . import _imaging`): one release wrote both sides, so the name is its
        # compiled module, missing or not loadable here — not code of another release
        return Refinement((4, 5, 3), f"{name} is a private module of {top}, imported by "
                          f"{top}'s own installed code: the installed {top} has no loadable "
                          f"{name} for this interpreter (a wheel for another Python, OS or CPU "
                          "bitness, or installed without its compiled part), or another "
                          f"{top} directory shadows it", ("OD510", "OD418"),
                          f"{top}'s own compiled {name} cannot be imported", "medium",
                          f"which {name}.* file the installed {top} has and what it is built "
                          f"for: `opdoctor check --package {top}`")
    if name and not compiled and where == "installed" and "partially initialized" not in ctx.line:
        # a Python-level name missing from an installed package (its file in site-packages is in
        # the message): the code importing it was written for another release of that package
        return Refinement((3, 5), f"{module} is the installed package's own module and has no "
                          f"{name}: the code importing it was written for another release of "
                          f"{top} (the name was moved, renamed or not yet added)", ("OD304",),
                          f"the code expects another release of {top}", "medium",
                          f"the {top} release the importing package requires (its metadata) "
                          f"against `pip show {top}`")
    built, ran = python_versions(text)
    if built and ran and not built & ran:
        return Refinement((5, 3), f"the compiled module is built for Python {sorted(built)[0]} "
                          f"but the process runs Python {sorted(ran)[0]}", ("OD503",),
                          "an extension built for another Python", "high")
    if len(ran) > 1:
        pys = ", ".join(sorted(ran))
        return Refinement((5, 3), f"the traceback goes through two Pythons ({pys}): packages "
                          "of one interpreter are imported by another", ("OD503",),
                          "two Python installations mixed in one process", "medium")
    if re.search(r"\(raylet\)|\bray::|\(pid=\d|pyspark|[Ee]xecutor \d|dask[._-]worker|"
                 r"\[while running '|apache_beam|SpawnProcess|[Ww]orker (?:process|node)|srun:",
                 text):
        return Refinement((5, 4), f"{full} fails in a worker process (Ray, Spark, Dask, Beam, "
                          "a spawned or remote worker): that process runs another interpreter or "
                          "environment, without the package (or without it imported)",
                          ("OD501",), f"{full} missing in a worker's environment", "medium",
                          "the interpreter and environment the workers run (their runtime_env / "
                          "image / PYTHONPATH) against the driver's")
    core = _installed_core(text, module) if not name else ""
    if core:
        return Refinement((4, 3, 5), f"{module} is the compiled core of {core}, imported by "
                          f"{core}'s own files in site-packages: the installed {core} has no "
                          f"{module} for this Python and platform (installed without its "
                          "compiled part, or a build for another Python or OS)", ("OD510",),
                          f"{module}: the installed {core} lacks its compiled core", "medium",
                          f"which {module}.* file the installed {core} has: `opdoctor check "
                          f"--package {core}`")
    if where == "source-tree" and compiled and _vendored_in_project(text, top):
        # the package is a folder of a project's own code (model/pointnet2/, lib/dcn/): nothing
        # was ever installed to shadow — the folder's build step (its setup.py, make.sh) was
        # not run, so its extension does not exist
        return Refinement((4, 5), f"{top} is a folder of a project's source (not a checkout of "
                          f"{top} itself): its extension {full} is built by the folder's own "
                          "step (its setup.py or make.sh), which was not run or failed",
                          ("OD510",), f"{full} was never built in the project's {top} folder",
                          "medium", f"whether the {top} folder holds a built {full}: run its "
                          "build step, then `opdoctor check --package <the package>`")
    if where == "source-tree" and (compiled or name):
        return Refinement((5, 4), f"the traceback runs {top} from a source tree (not "
                          f"site-packages) that has no built {full}: a checkout that shadows "
                          "the installed package, or an editable install (`pip install -e .`) "
                          "whose in-place build is missing", ("OD502", "OD510"),
                          f"{top} runs from a source tree without its built {full}", "medium",
                          f"whether another copy of {top} is installed, or {top} is an "
                          f"editable install to rebuild: `opdoctor check --package {top}`")
    if _FRAMEWORK_MODULES.match(module):
        return Refinement((5,), f"{module} is not installed for the interpreter that ran (a "
                          "notebook kernel, a job or a build environment using another Python)",
                          ("OD501",), f"{module} is not installed for this interpreter", "medium")
    if compiled and "." not in full:
        return Refinement((4, 5), f"{full} is the compiled extension of a package that was "
                          "installed without building it (a Python-only install, a lite "
                          "variant)", ("OD501",), f"{full}: the package was installed without "
                          "its compiled extension", "medium")
    if compiled:
        if where == "installed" or (not where and not _traceback_paths(text)
                                    and not _FRAMEWORK_MODULES.match(top)):
            # nothing in the text puts the package in a source checkout: a compiled submodule
            # missing from a package is first the package installed without building it (a
            # Python-only or lite install, a skipped build), then a directory shadowing it
            return Refinement((4, 5, 3), f"{full} is a compiled submodule missing from the "
                              "installed package: it was installed without building its "
                              "extension (or a lite variant)", ("OD510",), None, "medium",
                              f"whether the installed {top} contains the built {full} "
                              f"(`opdoctor check --package {top}`); if it does, a directory "
                              f"named {top} earlier on sys.path shadows it")
        return Refinement((5, 4), f"{full} is a compiled submodule: the package directory that "
                          "was imported has no built extension — a source checkout or stale "
                          "directory found first, two conflicting installs, or an extension "
                          "never built", ("OD502", "OD503"), None, "medium",
                          f"which directory `import {top}` picks and whether it has the built "
                          f".so: `opdoctor check --package {top}`")
    return None


# ------------------------------------------------------------------ version pairs
@refiner("pair")
def _pair(ctx: Context) -> Refinement | None:
    built, have = ctx.group("built"), ctx.group("have")
    if not (built and have):
        return None
    axis = compare_pair(built, have)
    if axis == "variant":
        return Refinement((3,), f"built for {built.strip()}, installed {have.strip()}: the build "
                          f"variant differs ({variant_of(built) or '?'} vs "
                          f"{variant_of(have) or '?'})", ("OD313", "OD304"),
                          "CPU/CUDA build-variant mismatch", "high")
    what = _pair_subject(ctx.line)
    why = f"built for {what}{built.strip()}, installed {have.strip()}"
    pkg = re.search(r"(?:[Pp]lease reinstall|pip install -U|pip install --upgrade) "
                    r"(?P<pkg>[A-Za-z][\w-]{1,60})", ctx.text)
    if what == "Python ":
        # a "built for … (you have …)" banner whose Python line survived: the compiled extension
        # is a wheel for another interpreter — and the banner's other lines (framework release,
        # CUDA build) were cut off, so the pairing is the package build against this environment
        why += (": the package's compiled C++/CUDA extension is a build for another interpreter "
                "(its banner also lists the PyTorch release and CUDA build it needs)")
    if re.search(r"device=cpu \(supported: \{'cuda'\}\)", ctx.text):
        why += "; its kernels support CUDA devices only (device=cpu is not supported)"
    decides = (f"`opdoctor check --package {pkg.group('pkg')}` names the framework release, "
               "CUDA build and Python its extension needs against the installed ones"
               if pkg else "")
    return Refinement((3,), why, ("OD304", "OD312"), None, "high", decides)


def _pair_subject(line: str) -> str:
    """'Python ', 'PyTorch ', 'CUDA ' … when the line names what the version pair is of."""
    m = re.search(r"\b(Python|PyTorch|torch|TensorFlow|CUDA|cuDNN)\s{1,4}(?:version\s{0,2})?"
                  r"[\d.]{1,20}", line)
    return m.group(1) + " " if m else ""


# ------------------------------------------------------------------ ORT opsets
# opset 18 (ONNX 1.13, Dec 2022) is the first that ONNX Runtime releases before 1.14 lack
_ORT_RECENT_OPSET = 18


@refiner("ort-impl")
def _ort_impl(ctx: Context) -> Refinement | None:
    opset = ctx.group("opset")
    # "No Op registered ... domain_version" is the schema lookup: ONNX has schemas from opset 1,
    # so a low version there is a custom domain's (they start at 1), not an old model
    schema = "No Op registered" in ctx.line
    if opset.isdigit() and int(opset) < 7 and not schema:
        return Refinement((3, 1), f"opset {opset} is older than any kernel ONNX Runtime "
                          "registers (7+): re-export the model with a newer opset", ("OD106",),
                          "the model's opset is older than the runtime supports", "high")
    if re.search(r"float16|bfloat16|\(tensor\(b?float16\)\)|fp16|half", ctx.text, re.I):
        return Refinement((1, 3), "no kernel for that type on this execution provider",
                          ("OD106",), None, "high")
    if opset.isdigit() and int(opset) >= _ORT_RECENT_OPSET and not schema:
        # X(N) names the opset version at which X last changed; kernels are registered per
        # version, so a runtime that predates opset N has no X(N) at all
        return Refinement((3, 1), f"{ctx.group('op') or 'the op'}({opset}) is a version from a "
                          f"recent opset ({opset}): a runtime released before that opset has no "
                          "kernel for it — the model was exported for a newer opset than this "
                          "onnxruntime supports (a bundled/mobile runtime, an old package)",
                          ("OD106",), "the model's opset is newer than this runtime knows",
                          "medium", "the onnxruntime version against the opset the model "
                          "imports (onnxruntime.ai/docs/reference/compatibility.html): upgrade "
                          "the runtime or export with a lower opset")
    return None



# ------------------------------------------------------------------ ORT operator domains
# onnxruntime's own domains: its contrib ops (com.microsoft, and com.microsoft.nchwc — the
# layout its optimizer writes into a saved optimized model) and the ai.onnx.ml ops are
# compiled into onnxruntime itself; no custom-op library registers them
_ORT_BUILTIN_DOMAIN = re.compile(r"^(?:com\.microsoft(?:\.\w{1,20})?|ai\.onnx\.ml)$")


@refiner("ort-domain")
def _ort_domain(ctx: Context) -> Refinement | None:
    """An op of onnxruntime's own domains that the runtime does not know: this build or this
    release of onnxruntime lacks it; an op of any other domain is a registration matter."""
    domain = ctx.group("domain")
    if not _ORT_BUILTIN_DOMAIN.match(domain):
        return None
    return Refinement((3, 1), f"{domain} is onnxruntime's own operator domain, compiled into "
                      "the runtime (nothing registers it from a library): this onnxruntime is a "
                      "build without it (onnxruntime-web / mobile, a minimal or contrib-ops-"
                      "disabled build) or a release older than the op — e.g. a model optimized "
                      "or exported with a newer onnxruntime", ("OD106",),
                      f"{domain}:{ctx.group('op')} is missing from this onnxruntime build or "
                      "release", "medium", "the onnxruntime package and version that run the "
                      "model against the one that optimized / exported it")


# ------------------------------------------------------------------ ORT's Windows dependency chain
# onnxruntime/core/platform/windows/dll_load_error.cc (ORT 1.20+): 'Error loading "A" which
# depends on "B" … which is missing.' — the last name is the DLL that is not found. The CUDA
# DLLs carry their major in the name: cudart64_12, cublas64_12, cublasLt64_12 the CUDA major,
# cudnn64_9 / cudnn_ops64_9 the cuDNN major (cufft64_11, curand64_10 … have their own numbers).
_WIN_CUDA_MAJOR_DLL = re.compile(r"^(?:cudart|cublas|cublasLt)64_(\d{1,2})\.dll$", re.I)
_WIN_CUDNN_DLL = re.compile(r"^cudnn\w{0,30}64_(\d{1,2})\.dll$", re.I)
_WIN_CUDA_DLL = re.compile(r"^(?:cudart|cublas|cublasLt|cudnn\w{0,30}|cufft|curand|cusparse|"
                           r"cusolver|nvrtc\w{0,20}|nvJitLink\w{0,10}|nvinfer\w{0,20}|"
                           r"nvonnxparser\w{0,10})(?:64)?_\d{1,4}\w{0,10}\.dll$", re.I)
_WIN_VC_RUNTIME_DLL = re.compile(r"^(?:msvcp|vcruntime|concrt)\d{3}\w{0,6}\.dll$", re.I)


@refiner("ort-dll-chain")
def _ort_dll_chain(ctx: Context) -> Refinement | None:
    """Who is missing in ORT's Windows dependency chain decides, as on Linux: a CUDA/cuDNN DLL
    of the CUDA provider is of the one major the provider was built for (installed → the
    search path; another major installed → the release pair); the provider DLL itself ships in
    the package; the Visual C++ runtime is an install matter."""
    path, lib = ctx.group("path"), _basename(ctx.group("library"))
    provider = re.search(r"onnxruntime_providers_(\w{1,30})\.dll", path, re.I)
    if not lib:
        if provider and provider.group(1).lower() != "shared":
            return Refinement((4, 2), f"{_basename(path)} ships inside the onnxruntime package "
                              "itself: the installed package (or a custom build) is missing it",
                              ("OD201",), f"{_basename(path)} missing from the onnxruntime "
                              "package", "medium")
        return None
    if _WIN_VC_RUNTIME_DLL.match(lib):
        return Refinement((2, 3), f"{lib} is the Visual C++ runtime: it is not installed (the "
                          "Visual C++ redistributable) or not on PATH", ("OD201",),
                          f"{lib} not found: the Visual C++ runtime is not installed", "medium")
    if not (provider and _WIN_CUDA_DLL.match(lib)):
        return None
    if lib.lower().startswith(("nvinfer", "nvonnxparser")):
        return Refinement((2, 3), f"{lib} is TensorRT's: TensorRT is not installed or its lib "
                          "directory is not on PATH (or another TensorRT major is)", ("OD201",),
                          f"{lib} not found: TensorRT is not on PATH", "medium")
    m, rx, what = _WIN_CUDA_MAJOR_DLL.match(lib), _CUDA_HAVE, "CUDA"
    if not m:
        m, rx, what = _WIN_CUDNN_DLL.match(lib), _CUDNN_HAVE, "cuDNN"
    have = {h for h in rx.findall(ctx.text) if 7 <= int(h) <= 13} if m else set()
    if m and have and str(int(m.group(1))) in have:
        shown = f"{what} " + "/".join(sorted(have))
        return Refinement((2, 3), f"{lib} is of the major the text shows installed ({shown}): "
                          "it is there but not on the DLL search path (PATH, the pip nvidia-* "
                          "wheels' bin directories)", ("OD201",),
                          f"{lib} not found although {shown} is installed: the search path",
                          "medium")
    why = (f", while the text shows {what} " + "/".join(sorted(have)) + " installed"
           if have else "")
    return Refinement((3, 2), f"the {provider.group(1)} provider needs {lib}, the CUDA/cuDNN "
                      f"major it was built for{why}: the installed CUDA/cuDNN major differs "
                      "from the one this onnxruntime-gpu build targets, or it is not on PATH",
                      ("OD312", "OD201"), f"{lib} not found for onnxruntime_providers_"
                      f"{provider.group(1)}.dll: CUDA/cuDNN major of the provider build vs the "
                      "one installed", "medium",
                      "which CUDA/cuDNN major this onnxruntime build targets (its release notes) "
                      "against the one installed: equal → cause 2, different → 3")


# ------------------------------------------------------------------ ORT C API version
@refiner("ort-api")
def _ort_api(ctx: Context) -> Refinement | None:
    """GetApi(N) refused: who asked decides. A Python program runs the pip onnxruntime it
    imported, so that package is older than its extension or custom-op library; a native
    program bundles its runtime, so an older copy found first answered."""
    want, have = ctx.group("built", "built2"), ctx.group("have", "have2")
    if re.search(r"\.py\b|Traceback|site-packages|onnxruntime\.capi|InferenceSession|"
                 r"register_custom_ops_library", ctx.text):
        return Refinement((3, 2), f"a Python process: the onnxruntime package it imported "
                          f"serves C API {have or '?'} while an extension or custom-op library "
                          f"loaded into it was built for API {want or '?'} — the installed "
                          "onnxruntime is older than that library needs", ("OD304",),
                          "the installed onnxruntime is older than the library built on it",
                          "medium", "pip install an onnxruntime at least as new as the one the "
                          "extension / custom-op library was built against")
    return Refinement((2, 3), f"a native program built for ORT C API {want or '?'} loaded an "
                      f"onnxruntime that serves only up to {have or '?'}: an older copy was "
                      "found first — on Windows C:\\Windows\\System32\\onnxruntime.dll "
                      "wins when the program's own DLL is not next to its .exe; elsewhere an "
                      "old libonnxruntime on the search path", ("OD201",),
                      "an older onnxruntime library was loaded instead of the program's own",
                      "medium", "put the onnxruntime library the program ships next to the "
                      "executable (or first on LD_LIBRARY_PATH)")


# ------------------------------------------------------------------ crashes
@refiner("crash")
def _crash(ctx: Context) -> Refinement | None:
    # a load in sight: an import, a load call, the loader's init frames, or the crash line
    # itself naming a shared library the process was given
    at_load = re.search(r"\bimport \w|load_library|load_op_library|dlopen|TORCH_LIBRARY|"
                        r"static initiali[sz]|__libc_csu_init|_dl_init|call_init|"
                        r"c10::Error|what\(\):", ctx.text) or re.search(r"\.so\b", ctx.line)
    if at_load and ctx.pattern_id == "crash.heap-corruption":
        # memory freed twice or overrun while loading: two copies of one library (the
        # extension's own and the framework's) or an ABI mix, more often than a registrar
        return Refinement((3, 1, 4), "the heap was corrupted while a library was being loaded: "
                          "two copies of one library in the process (one the extension "
                          "brought, one the framework's) or a C++ ABI mix, else a static "
                          "initialiser's own bug", ("OD124",), None, "low")
    if at_load:
        return Refinement((1, 3, 4), "the crash happened while a library was being loaded: a "
                          "static initialiser (registration) crashed, or the library mixes "
                          "ABIs with what is loaded", ("OD124",), None, "low")
    return Refinement((3, 4, 1), "a crash with no load in sight is not a registration failure: "
                      "most often two builds that disagree (framework vs extension release, C++ "
                      "ABI, two copies of a library), or a bug in the op itself", ("OD304",),
                      None, "low", "whether it crashes at import: `opdoctor check <the .so>` "
                      "loads it in a sandboxed probe")


# A build in sight: a compiler, a build tool or pip building a wheel.
_BUILDING = re.compile(r"\b(?:cc1plus|nvcc|ninja|cmake|setup\.py|bdist_wheel|build_ext|"
                       r"[Bb]uilding (?:wheel|extension)|Compiling|\[\d{1,5}/\d{1,5}\] |"
                       r"c\+\+ |g\+\+ |MAX_JOBS)")


@refiner("killed")
def _killed(ctx: Context) -> Refinement | None:
    """SIGKILL during a build is the compiler's memory (an incomplete build, 4); elsewhere it
    came from outside the process (out of memory, a scheduler's limit): no load failure."""
    if _BUILDING.search(ctx.text):
        return Refinement((4, 3), "the build was killed (SIGKILL, almost always out of memory: "
                          "too many compile jobs at once), so the extension was not built",
                          ("OD404",), "the build was killed (out of memory)", "medium",
                          "MAX_JOBS=1 for the build (torch.utils.cpp_extension reads it)")
    return Refinement((3, 4, 1), "SIGKILL came from outside the process (the out-of-memory "
                      "killer, a scheduler's memory or time limit): not a load failure unless "
                      "it died while importing the extension", ("OD124",), None, "low",
                      "whether it dies at import: `opdoctor check <the .so>` loads it in a "
                      "sandboxed probe; `dmesg` names the OOM kill")

# ------------------------------------------------------------------ Windows
# Windows error 1114: the DLL and its dependencies were found and mapped, but one's DllMain
# failed — in practice a dependency of another release loaded first (an older Visual C++
# runtime from PATH or another package, a second copy of a DLL)
_DLL_INIT_FAILED = re.compile(r"WinError 1114|initiali[sz]ation routine failed|初始化例程失败")


def _dll_init_failed() -> Refinement:
    return Refinement((3, 2), "Windows error 1114: every DLL was found, but one failed to "
                      "initialise — a dependency of another release was loaded (typically an "
                      "older Visual C++ runtime, msvcp140.dll, found first)", ("OD302",),
                      "a DLL failed to initialise: a runtime of another release", "medium",
                      "which msvcp140.dll/vcruntime140.dll the process loads and its version "
                      "(Process Explorer, or Dependencies.exe on the .pyd): older than the "
                      "build needs → install the current Visual C++ redistributable")


@refiner("system-library")
def _system_library(ctx: Context) -> Refinement | None:
    """A package's own "<project> library not found": the library of the operating system
    the project name stands for (PortAudio → libportaudio.so.2), when it is a known one."""
    from opdoctor.syslibs import SYSTEM_LIBS, by_project

    project = ctx.group("project") or ctx.group("project2")
    soname = by_project(project)
    if not soname:
        return None
    what, deb, rpm = SYSTEM_LIBS[soname]
    named = f"{project} ({soname}) is" if what.lower() == project.lower() else \
        f"{project} is {what} ({soname}):"
    return Refinement((2, 5), f"{named} a library of the operating "
                      f"system, not installed — apt-get install {deb.split(' ')[0]} "
                      f"(Debian/Ubuntu), dnf install {rpm} (Fedora/RHEL)", ("OD201",),
                      f"{soname} ({project}) is not installed", "high")


@refiner("windows")
def _windows(ctx: Context) -> Refinement | None:
    line = ctx.line
    if _DLL_INIT_FAILED.search(line):
        return _dll_init_failed()
    if re.search(r"WinError 127|error 127|procedure could not be found|找不到指定的程序|"
                 r"entry point .{1,400}? could not be located|无法定位程序输入点", line):
        return Refinement((3, 4), "Windows error 127: the DLL was found but lacks a function "
                          "another module needs — a build for another release", ("OD304",),
                          "a DLL of another release (a missing entry point)", "medium")
    if re.search(r"WinError 193|error 193|0xc000007[bB]|应用程序无法正常启动", line) or \
            re.search(r"[\\/][\w.+-]{1,200}\.so(?:\.[\d.]{1,20})?[\"']", line):
        return Refinement((4,), "Windows error 193: not a valid binary for this architecture",
                          ("OD408",), "a DLL for another architecture", "high")
    if re.search(r"onnxruntime_providers_(?:cuda|tensorrt)|provider_bridge_ort|"
                 r"OnnxRuntime|onnxruntime", ctx.text, re.I):
        # ONNX Runtime's CUDA/TensorRT provider DLL needs the CUDA, cuDNN (and TensorRT)
        # majors its build was made for; in the dev threads error 126 there was most often
        # another major installed (6 of 8, both inner folds), else a PATH matter.
        return Refinement((3, 2, 4), "Windows error 126 loading ONNX Runtime's execution "
                          "provider: its CUDA/cuDNN (or TensorRT) DLLs are of the majors the "
                          "onnxruntime build targets — most often another major is installed "
                          "(or none), else their bin directory is not on PATH", ("OD312", "OD201"),
                          "ONNX Runtime's provider DLL did not load: the CUDA/cuDNN majors of "
                          "the provider build vs the ones installed", "medium",
                          "which CUDA/cuDNN major this onnxruntime build targets (its release "
                          "notes) against the one installed: equal → cause 2 (PATH), "
                          "different → 3")
    return Refinement((2, 3, 4), "Windows error 126: a DLL or one of its dependencies (the "
                      "Visual C++ runtime, CUDA/cuDNN DLLs) is not found on PATH",
                      ("OD201",), None, "medium",
                      "which dependency is missing: a dependency walker (Dependencies.exe) on "
                      "the DLL named in the message")


# ------------------------------------------------------------------ framework modules
# Names every release of the framework has at its top level: their absence is no release
# pairing (numpy's removed aliases — np.float, np.int, np.bool — are not among them).
_CORE_NAMES = {
    "torch": frozenset({"__version__", "cuda", "Tensor", "tensor", "nn", "ops", "float32",
                        "device", "no_grad", "zeros", "ones", "from_numpy", "load", "save",
                        "version", "utils", "autograd", "optim", "jit", "Size", "dtype",
                        "manual_seed", "cat", "stack", "randn", "library", "distributed",
                        "rand", "randint", "arange", "float16", "float64", "int64", "long",
                        "is_tensor", "matmul", "sum", "exp", "sigmoid", "tanh", "backends",
                        "multiprocessing", "serialization", "storage"}),
    "numpy": frozenset({"__version__", "array", "ndarray", "float32", "float64", "int64",
                        "zeros", "ones", "dtype", "random", "linalg", "asarray", "arange"}),
    "tensorflow": frozenset({"__version__", "constant", "Variable", "float32", "Tensor",
                             "function", "data", "nn", "math", "io", "random", "zeros",
                             "GradientTape", "load_op_library"}),
}


@refiner("framework-module")
def _framework_module(ctx: Context) -> Refinement | None:
    module = ctx.group("module")
    name = ctx.group("name")
    leaf = (name or module.split(".")[-1])
    if re.search(r"^_?C$|^_C_\w|^_ext$|_pywrap|_internal$|c_expression|pybind", leaf) or \
            module.endswith(("._C", "._ext")):
        return _module(ctx)
    top = module.split(".")[0]
    local = [p for p in _traceback_paths(ctx.text)
             if re.search(r"(?:^|[/\\])" + re.escape(top) + r"\.py$", p)
             and "installed" not in path_kind(p)]
    local += shadowing_files(ctx.text)
    # a frame in a directory named like the framework, outside site-packages: a folder of
    # the project (or a source tree) named like it, on sys.path before the installed package
    local += [re.split(r"[/\\](?=[^/\\]{1,200}$)", p)[0] for p in _traceback_paths(ctx.text)
              if re.search(r"[/\\]" + re.escape(top) + r"[/\\][^/\\]{1,200}\.py$", p)
              and not path_kind(p) & {"installed", "system"}][:1]
    attr = ctx.group("attr", "name")
    core = (attr in _CORE_NAMES.get(top, ()) and module == top) or (
        # "No module named 'torch.version'": a submodule every release has
        not attr and module.count(".") == 1 and leaf in _CORE_NAMES.get(top, ()))
    if re.search(r"partially initialized module|circular import|'" + re.escape(top)
                 + r"(?:\.[\w.]{1,120})?' is not a package|\(unknown location\)", ctx.line) or \
            local or core:
        # "(unknown location)": the module imported has no file — a namespace package, a
        # directory named like the framework without its __init__.py (a build or source
        # folder, a leftover of an uninstall), not the installed package
        # "'torch' is not a package": the name resolved to a module file (a torch.py), not to
        # the installed package directory — a local file shadows it
        why = (f"{local[0]} shadows it" if local else "a local file or directory named "
               f"{top} (or the script's own name) is imported instead, half-initialised")
        if core and not local:
            # every release has it (torch.cuda, numpy.array): no release pairing explains its
            # absence — a torch.py on the path, or an import of the module that has not
            # finished (a local module named like one torch imports: dis.py, inspect.py)
            why = (f"every {top} release has {top}.{attr}: the '{top}' imported is not the "
                   f"installed package (a {top}.py or {top}/ directory first on sys.path) or "
                   "its import has not finished (a local module named like one it imports)")
        return Refinement((5, 3), f"the '{top}' that was imported is not the installed package: "
                          + why, ("OD502",), f"a local {top} shadows the installed package",
                          "medium" if core and not local else "high")
    return Refinement((3, 5), f"{module}{'.' + name if name else ''} is part of {top}'s Python "
                      f"API, not a compiled part: the code was written for another {top} "
                      "release (it was removed, renamed or not yet added)", ("OD304",),
                      f"the code expects another {top} release", "medium",
                      f"the {top} release the failing package requires (its setup metadata) "
                      "against `pip show " + top + "`")


@refiner("framework-api")
def _framework_api(ctx: Context) -> Refinement | None:
    """A name missing from MindSpore's / OneFlow's own API, their compiled API modules included
    (oneflow._C, the generated functional module; mindspore._c_expression): those ship with
    every release, so the pattern's reading (another release) stands — unless the 'mindspore'
    or 'oneflow' imported is not the installed package (a local mindspore.py / oneflow.py in
    the traceback), which is the import chain."""
    top = ctx.group("module", "module2").split(".")[0]
    if not top:
        return None
    local = [p for p in _traceback_paths(ctx.text)
             if re.search(r"(?:^|[/\\])" + re.escape(top) + r"\.py$", p)
             and "installed" not in path_kind(p)]
    local += shadowing_files(ctx.text)
    if not local and not re.search(r"'" + re.escape(top) + r"' is not a package", ctx.text):
        return None
    return Refinement((5, 3), f"the '{top}' that was imported is not the installed package: "
                      + (f"{local[0]} shadows it" if local else f"a local {top} is imported "
                         "instead"), ("OD502",), f"a local {top} shadows the installed package",
                      "high")


# a package's own report that the import of its compiled part failed and it carries on without
# it ("Failed to load custom C++ ops", "can't load C++/CUDA extensions")
_COMPILED_LOAD_FAILED = re.compile(
    r"(?:[Ff]ailed|[Uu]nable|[Cc]ould not|[Cc]an(?:no|')t) (?:to )?(?:load|import|find)\b"
    r"[^\n]{0,60}?(?:C\+\+|CUDA|compiled|native|custom)[^\n]{0,30}?"
    r"(?:ops|operators|extensions?|kernels?)\b")


@refiner("compiled-name")
def _compiled_name(ctx: Context) -> Refinement | None:
    """"name '_C' is not defined": the package's import of its compiled module failed earlier
    (caught). Run from a source or build tree: that tree shadows the build; installed (or the
    package reporting that it carries on without its compiled ops): it was never built."""
    name = ctx.group("name")
    kinds = [path_kind(p) for p in _traceback_paths(ctx.text)]
    if any(k & {"source-tree", "build-tree"} and "installed" not in k for k in kinds):
        return Refinement((5, 4), f"the traceback runs from a source or build tree, which has no "
                          f"built {name} and shadows the installed package", ("OD502",),
                          f"a source tree without the built {name} is imported", "medium")
    if any("installed" in k for k in kinds) or _COMPILED_LOAD_FAILED.search(ctx.text):
        return Refinement((4, 5, 3), f"the package caught the failed import of its compiled "
                          f"module {name} and went on without it: the installed copy has no "
                          "usable build of it (installed without compiling — no CUDA_HOME or "
                          "GPU visible at install time, a failed build — or built for another "
                          "torch)", ("OD510", "OD501"), f"{name}: the package's compiled part "
                          "was not built", "medium", f"whether the installed package contains "
                          f"{name} (`opdoctor check --package <the package>`), and its build log")
    if not kinds:
        # the line alone, no frame to tell a source tree from an install: in the dev half
        # a package installed without its compiled part (a build skipped for want of nvcc /
        # CUDA_HOME) outnumbers a checkout found first, three to one
        return Refinement((4, 5, 3), f"the package's import of its compiled module {name} "
                          "failed earlier and was caught: most often the package was installed "
                          "without building it (no CUDA_HOME or nvcc at install time, a failed "
                          "build), else a source checkout without the build shadows the "
                          "install", ("OD510", "OD502"), f"{name}: the package's compiled part "
                          "is missing", "medium", "where the package is imported from (the "
                          "traceback's paths; `opdoctor check --package <the package>`): a "
                          "source tree → cause 5, the installed copy → its build (4)")
    return None


@refiner("partial-init")
def _partial_init(ctx: Context) -> Refinement | None:
    """'partially initialized module P has no attribute A': a local P shadowing the package (or a
    circular import of the user's code) unless the failing frames are the installed package's
    own files — then the package's own import broke half-way: mixed releases."""
    module = ctx.group("module")
    top = module.split(".")[0]
    local = [p for p in _traceback_paths(ctx.text)
             if re.search(r"(?:^|[/\\])" + re.escape(top) + r"\.py$", p)
             and "installed" not in path_kind(p)] + shadowing_files(ctx.text)
    if local:
        return Refinement((5, 3), f"{local[0]} shadows the installed {top}", ("OD502",),
                          f"a local {top} shadows the installed package", "high")
    if _where_package(ctx.text, module) == "installed":
        return Refinement((3, 5, 4), f"the code that failed is the installed {top}'s own: its "
                          "import broke half-way inside the package — its files come from "
                          "different releases (a partial upgrade), or it does not match the "
                          "framework it builds on (torchvision for another torch)", ("OD304",),
                          f"the installed {top} does not match its own parts or its framework",
                          "medium", f"`pip list` for {top} and the framework it needs: one "
                          "release made for the other, reinstalled together")
    return None


# a compiler error naming the framework's own C++ API (TH*/THC* of torch's legacy C layer,
# at::, c10::, torch:: names, their headers) as unknown: the sources were written for another
# release of the framework (an API removed or renamed since, THC/THC.h gone from torch 1.11 on)
_FRAMEWORK_API_ERROR = re.compile(
    r"error: [‘'`](?:THC?[A-Z]\w{0,60}|(?:at|c10|torch)::[\w:]{1,120}|AT_\w{1,60})[’'`] "
    r"(?:has not been declared|was not declared in this scope|is not a member of|does not name a "
    r"type)|error: [‘'`][\w:]{1,120}[’'`] is not a member of [‘'`](?:at|c10|torch)(?:::\w{1,60})?"
    r"[’'`]|fatal error: (?:THC?/\w{1,40}|ATen/[\w/]{1,80}|c10/[\w/]{1,80})\.h: No such file")


@refiner("build-failure")
def _build_failure(ctx: Context) -> Refinement | None:
    """A failed build whose log says the framework itself cannot be imported: the build ran in
    an environment without it (pip's build isolation, another interpreter), not a code error.
    A compiler error naming the framework's own API as unknown: the sources are written for
    another release of the framework."""
    api = _FRAMEWORK_API_ERROR.search(ctx.text)
    if api:
        return Refinement((3, 4), "the compiler does not know a name of the framework's own C++ "
                          f"API ({api.group(0)[:80]}): the extension's sources are written for "
                          "another release of the framework (an API removed or renamed since)",
                          ("OD304", "OD404"), "sources written for another framework release",
                          "medium", "the framework release the project documents (or a branch "
                          "of it for your release) against `python -c 'import torch; "
                          "print(torch.__version__)'`")
    m = re.search(r"No module named '(torch|tensorflow|paddle|mindspore|oneflow|numpy)'", ctx.text)
    if not m:
        return None
    return Refinement((5, 4), f"the build could not import {m.group(1)}: it ran in an "
                      f"environment without it (pip's isolated build environment, another "
                      "interpreter), so the extension was never built", ("OD501",),
                      f"the build environment has no {m.group(1)}", "medium",
                      "`pip install --no-build-isolation …` with the framework installed in the "
                      "same interpreter")


# A traceback frame line, and the source line Python prints under it.
_FRAME = re.compile(r'File "(?P<path>[^"\n]{1,400})", line \d{1,7}[^\n]{0,200}\n'
                    r'(?P<code>[^\n]{0,300})')
_IMPORT_OF = re.compile(r"^\s{0,40}(?:import|from) (?P<mod>[\w.]{1,100})")


def shadowing_files(text: str) -> list[str]:
    """Local files that shadow a module, read from a traceback's own frames: a frame of an
    installed package or of the standard library executes ``import X`` (or ``from X …``) and
    the very next frame runs ``…/X.py`` (or ``…/X/__init__.py``) from outside site-packages and
    outside the interpreter's lib directory — so ``X`` resolved to the user's file, not to the
    module that code meant (a script called dis.py, torch.py, a checkout on sys.path[0])."""
    frames = [(m.group("path"), m.group("code")) for m in _FRAME.finditer(text)][:200]
    out: list[str] = []
    for (path, code), (nxt, _) in itertools.pairwise(frames):
        m = _IMPORT_OF.match(code)
        if not m or not _stdlib_or_installed(path):
            continue
        leaf = m.group("mod").split(".")[0]
        if re.search(r"(?:^|[/\\])" + re.escape(leaf) + r"(?:\.py|[/\\]__init__\.py)$", nxt) \
                and not _stdlib_or_installed(nxt):
            out.append(nxt)
    return out


def _stdlib_or_installed(path: str) -> bool:
    """A frame of an installed package or of the standard library (``…/lib/python3.X/…``)."""
    return "installed" in path_kind(path) or bool(
        re.search(r"[/\\]lib[/\\]python\d(?:\.\d{1,2})?[/\\]|[/\\]Lib[/\\]", path))


@refiner("link-library")
def _link_library(ctx: Context) -> Refinement | None:
    """A link-time 'cannot find -lX': a framework's own library (torch, c10, tensorflow_framework)
    ships inside the framework's package, so its absence there is the package installed without
    it; any other library is first a search-path (or not-installed) matter."""
    name = ctx.group("name", "name2", "name3")
    if re.match(r"(?:c10|torch|torch_\w{1,20}|shm|tensorflow_framework|tensorflow_cc)$", name):
        return Refinement((4, 2), f"lib{name} is part of the framework's own package: the "
                          "installed framework lacks it (an incomplete or repackaged install), "
                          "or the link points at another copy of the framework", ("OD201",),
                          f"lib{name} missing from the framework's package", "medium")
    return None


def order_with(ref: Refinement | None, base: tuple[int, ...]) -> tuple[int, ...]:
    """The refiner's order, then the pattern's remaining causes."""
    first = ref.causes if ref else ()
    return tuple(dict.fromkeys(first + base))


def scores(order: tuple[int, ...], confidence: str, extra: dict[int, float]) -> list[tuple[int,
                                                                                         float]]:
    """Spread a probability over the ordered causes; ``extra`` adds small mass from other
    matches in the text."""
    top = {"high": 0.85, "medium": 0.65, "low": 0.45}[confidence]
    out: dict[int, float] = {order[0]: top}
    rest = order[1:]
    # not renormalised over the alternatives listed: with one alternative, a low-confidence top
    # (0.45) would otherwise be outranked by it (0.55); the unlisted remainder is "something else"
    weights = [0.6, 0.25, 0.1, 0.05][: len(rest)]
    for c, w in zip(rest, weights, strict=False):
        out[c] = (1 - top) * w
    for c, w in extra.items():
        out[c] = out.get(c, 0.0) + w
    s = sum(out.values())
    ranked = sorted(((c, v / s) for c, v in out.items()), key=lambda cv: (-cv[1], order.index(
        cv[0]) if cv[0] in order else 9))
    return ranked


def why_for(cause: int, ref: Refinement | None) -> str:
    """Why an alternative cause is listed."""
    if ref and cause in ref.alt_why:
        return ref.alt_why[cause]
    return GENERIC_WHY[cause]
