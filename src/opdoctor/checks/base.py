"""The check interface shared by built-in checks and third-party plugins."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.backends import CANN_SET_ENV, cann_library
from opdoctor.facts.variant import (
    DRIVER_LIB,
    ROCM_LIB,
    TENSORRT_LIB,
    cuda_library,
    variant_library,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# CPU seconds each built-in stage may spend on a 0-byte target (the pipeline adds one share
# per 256 MiB of target and multiplies by --budget-scale; see pipeline.stage_budget). Sized
# from real packages: the slowest stage of any of them uses under 2 s, so a budget only ever
# stops a pathological input. Loops that wait for a child process do not count (CPU time).
STAGE_BUDGETS: dict[str, float] = {
    "integrity": 10.0,
    "dependencies": 15.0,  # loader emulation: every library of the dependency tree
    "symbols": 15.0,  # binding every undefined symbol through the tree's hash tables
    "cxx-abi": 10.0,
    "cuda": 15.0,  # fat binary members of multi-GB CUDA libraries
    "variant": 10.0,
    "registration": 20.0,  # string scans of .rodata / .dynstr
    "import-chain": 10.0,  # the package's module walk
    "tensorflow": 15.0,
    "probe": 10.0,  # opdoctor's own work on the probe's answer; the wait is its --timeout
    "compile": 10.0,
    "version-guard": 5.0,  # the package's modules that read a framework version
}
DEFAULT_BUDGET = 10.0  # a plugin that does not declare one

OD190 = CodeDoc(
    "OD190", "an analysis stage stopped at its time budget (report incomplete)",
    Severity.WARNING,
    what="Each analysis stage (integrity, dependencies, symbols, cuda, variant, registration, "
    "import-chain, tensorflow, probe, compile) finishes within its own budget of CPU seconds, "
    "proportional to its job and to the size of the target.",
    why="A stage that runs out of budget is stopped where it is, so one pathological input "
    "(a package with thousands of modules, a library with millions of strings) cannot hold "
    "the whole report hostage. What that stage would have found is missing: the causes it "
    "covers are 'not checked', the other stages' findings stand. This is a note about the "
    "run, never a verdict on the library.",
    example="stage import-chain stopped after 10.3 s: reading module torchaudio/io/_x.py "
    "(budget 10 s)",
    fix="Rerun with a larger budget (--budget-scale 4, or budget-scale = 4 in "
    "[tool.opdoctor]) to let the stage finish; if a real library or package needs it, please "
    "report it to opdoctor with the finding.",
    references=("README.md#robustness",),
)
# Codes the pipeline itself emits (on behalf of any stage), declared beside the checks' own.
PIPELINE_CODES: tuple[CodeDoc, ...] = (OD190,)


@dataclass(frozen=True)
class Check:
    """A family of related checks: reads facts, yields findings of the codes it declares.

    ``needs_elf``: skip the check (with the reason) when the file is not a loadable ELF shared
    object for this host; only the integrity check itself looks at broken files.
    ``section``: inventory published under ``report.sections[check.name]`` when the check ran.
    """

    name: str
    summary: str
    causes: tuple[Cause, ...]
    codes: tuple[CodeDoc, ...]
    run: Callable[[Facts], Iterable[Finding]]
    needs_elf: bool = True
    # Optional inventory for the report ("dependencies", "registration" …): name → data.
    section: Callable[[Facts], dict[str, Any]] | None = None
    # Optional: why the check does not apply to this target ("" when it does).
    applies: Callable[[Facts], str] | None = None
    # CPU seconds the stage may take on a small target (None: STAGE_BUDGETS or the default).
    budget_s: float | None = None

    @property
    def budget(self) -> float:
        """The stage's base budget in CPU seconds (before size and --budget-scale)."""
        if self.budget_s is not None:
            return self.budget_s
        return STAGE_BUDGETS.get(self.name, DEFAULT_BUDGET)

    def code(self, code: str) -> CodeDoc:
        """The declaration of one of this check's codes (KeyError when not declared)."""
        for doc in self.codes:
            if doc.code == code:
                return doc
        raise KeyError(f"{self.name} does not declare {code}")


NOT_A_PACKAGE = ("not a package (use --package NAME, a package directory, or a .so inside a "
                 "package)")


def package_applies(facts: Facts) -> str:
    """Why a package-level check (import chain, version guard) does not apply ("" when it
    does): no package context, or a file of the framework's own install."""
    if not facts.options.package:
        return NOT_A_PACKAGE
    return f"part of the {facts.framework_library} install" if facts.framework_library else ""


def device_plugin_here(facts: Facts) -> tuple[str, str, list[str]] | None:
    """The target read as a device plugin this machine never loads
    (:func:`opdoctor.facts.devices.device_plugin`, over the names its load misses): (toolkit,
    device, evidence); None for any other library or a package. One reading for the
    dependency, symbol and probe checks."""
    from opdoctor.facts.devices import device_plugin

    if facts.is_package_dir or facts.structure.image is None:
        return None
    return device_plugin(facts.loaded_on_demand,
                         list(dict.fromkeys(m.name for m in facts.process.tree.missing)))


def device_plugin_severity(facts: Facts) -> Severity:
    """How much a device plugin's unloadable dependencies matter on a machine without its
    device: a warning where the user named the library (asked about it), info where a walk
    found it — a wheel, a directory, ``scan`` —, since its package loads it only on such a
    device and the package modes, which follow the import, never reach it (survey 24b's F9:
    a bitsandbytes wheel gave 58 warnings where ``--package bitsandbytes`` is clean)."""
    return Severity.WARNING if facts.options.named else Severity.INFO


def site_dirs(facts: Facts) -> list[str]:
    """The target interpreter's own site directories (pip installs there without --target)."""
    interp = facts.interpreter
    return [d for d in (interp.sys_path if interp else []) if d.endswith("-packages")]


def install_command(facts: Facts, requirement: str, where: str, upgrade: bool = False) -> str:
    """``pip install <requirement>`` for the copy installed in ``where`` — with ``--no-deps
    --upgrade --target <where>`` when that is not one of the interpreter's own site
    directories (a --target copy on PYTHONPATH: there, a plain `pip install` changes the
    environment's hidden copy; survey 20's h5py 3.10 and keras 2.15). ``requirement`` is one
    shell word (quoted by the caller when it carries a specifier)."""
    import os

    sites = site_dirs(facts)
    if not where or where in sites or \
            os.path.realpath(where) in {os.path.realpath(d) for d in sites}:
        return f"pip install {'--upgrade ' if upgrade else ''}{requirement}"
    return f"pip install --no-deps --upgrade --target {where} {requirement}"


def reinstall_command(facts: Facts, pin: str, info: str) -> str:
    """``pip install --force-reinstall --no-deps <pin>`` for the distribution whose
    ``.dist-info`` is ``info`` — into that directory (``--upgrade --target``) when it is not
    one of the interpreter's own site directories: a plain reinstall repairs the
    environment's copy and leaves the broken one first on sys.path (survey 21's S1)."""
    import os

    where = os.path.dirname(info.rstrip(os.sep)) if info else ""
    sites = site_dirs(facts)
    if not where or where in sites or \
            os.path.realpath(where) in {os.path.realpath(d) for d in sites}:
        return f"pip install --force-reinstall --no-deps {pin}"
    return f"pip install --force-reinstall --no-deps --upgrade --target {where} {pin}"


def distribution_reinstall(facts: Facts, info: str) -> str:
    """:func:`reinstall_command` for the distribution of the ``.dist-info`` ``info``, pinned
    to its installed release (``pip install --force-reinstall --no-deps 'x==1.2'``)."""
    from opdoctor.facts.pkgdir import distribution

    dist, ver = distribution(info)
    return reinstall_command(facts, f"'{dist}=={ver}'" if dist and ver else dist, info)


def upgrade_command(facts: Facts, name: str, info: str = "") -> str:
    """``pip install --upgrade <name>`` for the copy of a distribution the target's import
    runs (``install_command``). ``info``: that distribution's ``.dist-info`` (default: the
    target package's)."""
    import os

    info = info or (facts.chain.dist if facts.chain is not None else "")
    return install_command(facts, name, os.path.dirname(info.rstrip(os.sep)) if info else "",
                           upgrade=True)


def installed_release_fix(facts: Facts, version: str, *, why: str = "", flags: str = "",
                          want: str = "") -> str:
    """The fix for a library of an installed distribution (a wheel from an index: no source
    tree to rebuild in) that was built for another torch: the distribution's release built
    for torch ``version`` (``why``: what tells which), else pip's rebuild of it against this
    torch (``flags``: what that build sets), else the torch it was built for (``want``: what
    its metadata requires). "" for a library outside a distribution, or unpacked from a
    wheel file being checked (a build a CI job gates): the caller's rebuild fix is the one."""
    dist = facts.extension_variant.distribution
    if not dist or facts.options.wheel:
        return ""
    # "--no-binary" needs a source distribution on the index, which many of these packages
    # never publish (torchrl, torchaudio, fbgemm-gpu-cpu, torchcodec: wheels only; survey 9).
    return (f"install the {dist} release built for torch {version}{why}; if there is none, "
            f"rebuild it against this torch (pip install --no-build-isolation --no-binary "
            f"{dist} {dist}{flags} — where the index has its source distribution; many such "
            "packages publish wheels only: then build from its source repository); or install "
            f"the torch it was built for{want}")


# FFmpeg's libraries (torchcodec, torchaudio's ffmpeg backends, tensorflow-io, decord):
# the major numbers the soname, FFmpeg's release follows from it for the first four.
_FFMPEG = re.compile(r"^lib(avutil|avcodec|avformat|avdevice|avfilter|swscale|swresample|"
                     r"postproc)\.so\.(\d+)")



def vendored_directory_gone(libs: str) -> str:
    """The fix for libraries missing because auditwheel's ``<dist>.libs/`` directory, which the
    extension's RPATH names, is gone (``libs``: its path): the package was copied or installed
    without it — ``cv2/`` copied alone (survey 21's W12); no patchelf brings them back."""
    return (f"{os.path.basename(libs)}, the directory of vendored libraries its RPATH names "
            f"({libs}), does not exist: the package was copied or installed without it. "
            "Install the package with pip (or copy that directory beside it); no RPATH "
            "edit or LD_LIBRARY_PATH brings the libraries it held")

def runtime_library_fix(name: str, missing: list[str]) -> str:
    """The fix for a missing library that a toolkit or driver brings, not a search path
    (Ascend CANN, the NVIDIA driver, TensorRT, CUDA and NVIDIA's CUDA libraries, ROCm): ""
    for any other library. ``missing``: every library missing from the same load."""
    if cann_library(name, missing):
        return (f"{name} belongs to Huawei's Ascend CANN toolkit, which is installed "
                "apart from the wheel and found through the LD_LIBRARY_PATH its set_env.sh "
                "exports: install the CANN release this package was built for and run "
                f"`source {CANN_SET_ENV}` in the job's environment (or pass its variables "
                "with --env); without an Ascend NPU, use the framework's CPU build instead. "
                "No RPATH edit brings the toolkit")
    if DRIVER_LIB.match(name):
        return (f"{name} is the NVIDIA driver's own library: no wheel and no CUDA toolkit "
                "ships it (the toolkit has only a link-time stub); it exists where an NVIDIA "
                "GPU and its driver are installed. On a machine without one this library "
                "cannot load: use the package's CPU build, or run it on a GPU machine. No RPATH "
                "edit brings the driver")
    if TENSORRT_LIB.match(name):
        return (f"{name} is NVIDIA TensorRT's: install the TensorRT release this library "
                "was built for (the tensorrt-cu* pip wheels, or NVIDIA's packages) — a CUDA "
                "build of torch does not bring it — then make its lib directory reachable")
    cuda = variant_library(name)
    if cuda[0] == "cuda" and cuda[1] is not None:
        # Not a path to fix: the CUDA toolkit (or NVIDIA's wheels for it) is not installed,
        # and no RPATH edit brings it. Packages ship such a library beside a CPU one and pick
        # at run time (bitsandbytes): the file is then just not for this machine.
        return (f"{name} is part of CUDA {cuda[1]}: install CUDA {cuda[1]} (the toolkit, "
                f"or NVIDIA's pip wheels for it, e.g. the nvidia-*-cu{cuda[1]} packages) where "
                "an NVIDIA GPU is meant to run this; without one, this is the package's CUDA "
                "build — use its CPU build or variant instead. No RPATH edit brings CUDA")
    if cuda[0] == "cuda" and cuda_library(name):
        # cuDNN, NCCL, NVTX, cuFFT …: their soname numbers their own release, not CUDA's
        return (f"{name} is one of NVIDIA's CUDA libraries, numbered by its own release: "
                "install the CUDA / cuDNN / NCCL release this library was built for (NVIDIA's "
                "nvidia-* pip wheels or the toolkit) where an NVIDIA GPU is meant to run "
                "this; without one, this is the package's CUDA build — use its CPU build or "
                "variant instead. No RPATH edit brings CUDA")
    ffmpeg = _FFMPEG.match(name)
    if ffmpeg:
        lib, major = ffmpeg.group(1), int(ffmpeg.group(2))
        first = {"avutil": 56, "avcodec": 58, "avformat": 58, "avdevice": 58}.get(lib)
        release = f" {major - first + 4}" if first is not None and 0 <= major - first <= 4 \
            else ""
        # torchcodec's libtorchcodec_core4…8.so (survey 9): one per FFmpeg major, the package
        # loads the one that matches the FFmpeg installed; "find it, then patchelf" sent users
        # looking for a file that is on no disk.
        return (f"{name} is FFmpeg{release}'s lib{lib}: FFmpeg is a system library, not in the "
                "package's wheel — install FFmpeg (apt-get install ffmpeg, dnf install ffmpeg, "
                "conda install ffmpeg) in a release the package supports (a package that ships "
                "one library per FFmpeg major loads the one matching the FFmpeg installed). No "
                "RPATH edit brings FFmpeg")
    if ROCM_LIB.match(name):
        return (f"{name} is part of AMD's ROCm: install the ROCm release this library was "
                "built for where an AMD GPU is meant to run it; without one, this is the "
                "package's ROCm build — use its CPU (or CUDA) build or variant instead. No "
                "RPATH edit brings ROCm")
    from opdoctor.facts.syslibs import system_library_fix
    return system_library_fix(name)
