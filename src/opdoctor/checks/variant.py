"""Framework build variant (cause 3): an extension built for a CUDA (or ROCm) torch, installed
beside a CPU-only torch — or for ROCm beside CUDA, or the reverse.

The loader then cannot find ``libc10_cuda.so`` / ``libtorch_cuda.so`` / ``libcudart.so.N``,
the package's ``try/except`` may swallow that, and the user sees "operator torchvision::nms
does not exist" much later. The missing libraries are consequences: no search path can make a
CPU torch provide them, so the fix is to install builds that match, never patchelf.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.pkgdir import package_of
from opdoctor.facts.variant import DRIVER_LIB, TENSORRT_LIB, cpu_build, local_tag
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

OD307 = CodeDoc(
    "OD307", "built for another build of torch (CUDA/ROCm vs CPU)", Severity.ERROR,
    what="The extension and the installed torch are the same build variant: an extension that "
    "links libc10_cuda.so / libtorch_cuda.so or CUDA runtime libraries needs a CUDA build of "
    "torch; one that links libc10_hip.so needs a ROCm build.",
    why="A CPU-only torch ships no CUDA half: the extension's load fails with 'libc10_cuda.so: "
    "cannot open shared object file', its package often swallows that, and the user sees "
    "'operator torchvision::nms does not exist'. Search paths cannot fix it.",
    example="torchvision 0.29.1+cu130 (needs libc10_cuda.so, libtorch_cuda.so, "
    "libcudart.so.13) beside torch 2.13.0+cpu",
    fix="Install matching builds from the same index: the CUDA build of torch the extension "
    "was built for, or the CPU build of the extension for your torch.",
    references=("https://pytorch.org/get-started/locally/",
                "https://github.com/pytorch/vision#installation"),
)

CODES = (OD307,)

# download.pytorch.org's index per CUDA major, for an extension that names no +cuXXX build:
# the CUDA 11 and 12 indexes that served the most torch releases (2.0-2.7, 2.6-2.9+).
CUDA_INDEX = {11: "cu118", 12: "cu126", 13: "cu130"}
# The CUDA indexes of download.pytorch.org each torch release series was published on
# (PyTorch's release matrix), oldest first: torch 2.4.0 is on cu118/cu121/cu124 and not on
# cu126, where the table above sent a CUDA 12 extension built for it (vllm-flash-attn 2.6.2;
# survey 19); CUDA 10.1's kaldifeat 1.4 for torch 1.8.1 was sent to cu130.
RELEASE_INDEXES = {
    "1.8": ("cu101", "cu102", "cu111"), "1.9": ("cu102", "cu111"),
    "1.10": ("cu102", "cu111", "cu113"), "1.11": ("cu102", "cu113", "cu115"),
    "1.12": ("cu102", "cu113", "cu116"), "1.13": ("cu116", "cu117"),
    "2.0": ("cu117", "cu118"), "2.1": ("cu118", "cu121"), "2.2": ("cu118", "cu121"),
    "2.3": ("cu118", "cu121"), "2.4": ("cu118", "cu121", "cu124"),
    "2.5": ("cu118", "cu121", "cu124"), "2.6": ("cu118", "cu124", "cu126"),
    "2.7": ("cu118", "cu126", "cu128"), "2.8": ("cu126", "cu128", "cu129"),
    "2.9": ("cu126", "cu128", "cu130"),
}


def cuda_index(want: str, major: int | None) -> str:
    """The download.pytorch.org index for a CUDA ``major`` build of the torch ``want`` names
    (``torch==2.4.0``): the newest index of that major the release was published on, else
    the index that served that major longest (:data:`CUDA_INDEX`)."""
    m = re.search(r"==\s*(\d+)\.(\d+)", want)
    published = RELEASE_INDEXES.get(f"{m.group(1)}.{m.group(2)}", ()) if m else ()
    same = [i for i in published if major is not None and
            (i[2:-1] if len(i) == 5 else i[2:3]) == str(major)]
    if same:
        return same[-1]
    return CUDA_INDEX.get(major or 13, "cu130")


def _beyond_torch(facts: Facts) -> str:
    """What a CUDA build of torch does not bring although the library needs it: the GPU
    driver's libcuda.so.1 (sgl-kernel), TensorRT's libnvinfer (torch-tensorrt)."""
    if facts.is_package_dir:
        return ""  # no library of its own: nothing loaded, no dependency tree
    names = list(dict.fromkeys(m.name for m in facts.process.tree.missing))
    driver = [n for n in names if DRIVER_LIB.match(n)]
    trt = [n for n in names if TENSORRT_LIB.match(n)]
    out = ""
    if driver:
        out += (f" on a machine with an NVIDIA GPU and its driver ({', '.join(driver)} is the "
                "driver's own library, which no wheel brings)")
    if trt:
        out += (f"{' and' if driver else ''} with TensorRT installed ({', '.join(trt)}: the "
                "tensorrt-cu* wheels; a CUDA torch does not bring it)")
    return out


def _supported_by_guard(facts: Facts, version: str) -> list[str]:
    """The torch releases (no pre-releases) the package's own version guard pairs with its
    installed version, first the oldest; [] without such a table."""
    from opdoctor.facts.pyguard import find_guards, supported_releases

    chain = facts.chain
    if chain is None or not version:
        return []
    for guard in find_guards(tuple(chain.python_files)):
        if guard.framework == "torch":
            table = [r for r in supported_releases(guard.file, version)
                     if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", r)]
            if table:
                return table
    return []


_BOUND = re.compile(r"(>=|<)\s*(\d+)\.(\d+)(?:\.(\d+))?")


def _one_series(spec: str) -> str:
    """``torch==X.Y.*`` for a requirement ``>=X.Y[.0],<X.Y+1[.0]`` (one release series), else
    ""."""
    bounds = {op: (int(a), int(b), int(c or 0)) for op, a, b, c in _BOUND.findall(spec)}
    low, high = bounds.get(">="), bounds.get("<")
    if low is None or high is None or "," not in spec or len(_BOUND.findall(spec)) != 2:
        return ""
    if high == (low[0], low[1] + 1, 0):
        return f"torch=={low[0]}.{low[1]}.*"
    return ""


def _fix(facts: Facts) -> str:
    ext = facts.extension_variant
    tv = facts.torch_variant
    assert tv is not None
    dist = ext.distribution or "the extension"
    tag = local_tag(ext.package_version)
    want = ext.requires_torch
    # A requirement that is not a pin (vptq's `torch>=2.3.0`) names no release: pip would take
    # the newest, which is not the one the library was built for (nor, for an old-ABI build,
    # of its C++ ABI). Only an exact pin goes into the command.
    loose = ""
    if want and "==" not in want:
        # …but a range that admits one release series names it (torch-tensorrt 2.14.0:
        # torch<2.15.0,>=2.14.0 is the 2.14 series; survey 17)
        loose, want = want, _one_series(want)
    # The package's own build record names the exact build (xformers: 2.10.0+cu128).
    built = re.search(r"built for torch (\d+\.\d+(?:\.\d+)?)\+?(\w*)", ext.built_for)
    if built:
        want = f"torch=={built.group(1)}"
        tag = built.group(2) if built.group(2).startswith("cu") else tag
    if not want:
        # The package's own table of supported releases (torchao 0.16: 2.10.0, 2.11.0.dev)
        # pins the release; ">=" its stable-ABI headers would install one its guard rejects.
        table = _supported_by_guard(facts, ext.package_version)
        want = f"torch=={table[0]}" if table else ""
    if not want and loose and not facts.is_package_dir and facts.torch_build_version:
        # A stable-ABI build loads in every torch from its minimum on: the range its package
        # declares is the command (torchaudio 2.11.1+cu132: `torch>=2.11`; the 2.15.0 headers
        # it was compiled with are no minimum — torch 2.14.1+cu130 runs it, survey 23's F8).
        want = loose
    if not want and not facts.is_package_dir:
        # A stable-ABI build records the torch headers it was compiled with (torchao 0.18:
        # TORCH_ABI_VERSION 2.13.0): the CUDA build of that release (or later) loads it.
        headers = facts.torch_build_version
        want = f"torch>={headers}" if headers else ""
    if tv.variant == "cpu":
        # Without a +cuXXX tag, the CUDA major its libcudart.so.N names picks the index (cu130
        # serves CUDA 13 builds only: a CUDA 12 extension needs a cu12x torch).
        index = f"https://download.pytorch.org/whl/{tag}" if tag.startswith("cu") else \
            f"https://download.pytorch.org/whl/{cuda_index(want, ext.cuda_major)}"
        how = f"pip install '{want}' --index-url {index}" if want else (
            f"pip install torch==<release> --index-url {index}, where <release> is the torch "
            f"release {dist} was built for: nothing installed records it"
            + (f" ({dist} requires {loose}, a range, not a release)" if loose else "")
            + ", its release notes name it")
        return (f"either install the CUDA build of torch that {dist} was built for "
                f"({how}){_beyond_torch(facts)}, or "
                f"{cpu_build(dist, tv.version)}; never patch RPATH/LD_LIBRARY_PATH for this")
    return (f"install {dist} built for torch {tv.version} ({tv.variant}), from the same index "
            "as torch, or the torch build it was made for")


def run(facts: Facts) -> Iterator[Finding]:
    """Compare the extension's build variant with the installed torch's (and, when the
    package's import failed, that of a requirement's library whose load failed first)."""
    yield from _own(facts)
    yield from _requirement(facts)


def _requirement(facts: Facts) -> Iterator[Finding]:
    """Package mode, the probe's import failed: a library of another installed package whose
    load failed during that import, in a package the error names, checked for its build
    variant. compressai 1.2.8 beside a torchvision 0.28.0+cu130 from PyPI and torch 2.13 CPU:
    torchvision swallows its `_C.so` load (libc10_cuda.so not found) and the import dies on
    "operator torchvision::nms does not exist" — read as compressai's import chain (cause 5),
    the CUDA torchvision one requirement down never named (survey 18)."""
    if not facts.options.package or not facts.options.probe or facts.chain is None:
        return
    res = facts.probe_result()
    if res is None or res.load_error is None or not res.failed_loads:
        return
    if res.load_error.type == "ModuleNotFoundError":
        # a module that is not there is no failed load's doing (a failed load raises
        # ImportError or OSError): torchtune 0.6.1's `torchao.dtypes.nf4tensor`, gone from
        # torchao 0.18, whose optional CUDA kernels also failed to load — the verdict was
        # that CUDA build (survey 24's F5)
        return

    chain = facts.chain
    said = f"{res.load_message}\n{res.load_error.traceback}"
    seen: set[str] = set()
    own = os.path.realpath(chain.package_dir) if chain.package_dir else ""
    for path, _where, error in res.failed_loads:
        got = package_of(path)  # (top-level package, the directory it is imported from)
        # (a load that failed because its file is gone — llvmlite's libllvmlite.so deleted
        # under numba, survey 21 — has no build to read: the check crashed on it)
        if got is None or not os.path.isfile(path):
            continue
        top = os.path.realpath(os.path.join(got[1], got[0]))
        if top == own or top in seen or not re.search(rf"\b{re.escape(got[0])}\b", said):
            continue
        seen.add(top)
        other = Facts(path, dataclasses.replace(facts.options, package="", probe=False))
        for f in _own(other):
            yield dataclasses.replace(
                f, message=f"`import {facts.probed_import or chain.name}` fails in its "
                f"requirement {f.subject}, {f.message}",
                evidence=(*f.evidence, f"the load that failed during the import: {path}: "
                          f"{error[:300]}"))


def _own(facts: Facts) -> Iterator[Finding]:
    """OD307 for the target's (or the package's) own libraries."""
    tv = facts.torch_variant
    ext = facts.extension_variant
    if tv is None or not ext.variant or ext.variant == tv.variant:
        return
    built = ext.variant.upper() if ext.variant == "cuda" else "ROCm"
    if ext.cuda_major:
        built += f" {ext.cuda_major}"
    have = {"cpu": "a CPU-only build", "cuda": f"a CUDA {tv.cuda or ''} build".replace("  ", " "),
            "rocm": "a ROCm build"}[tv.variant]
    name = ext.distribution or facts.path
    ev = list(ext.evidence)
    if ext.package_version:
        ev.append(f"{name} version {ext.package_version}"
                  + (f" (requires {ext.requires_torch})" if ext.requires_torch else ""))
    if ext.built_for:
        ev.append(ext.built_for)
    ev.append(f"installed torch {tv.version}: {have}")
    yield OD307.finding(name, f"built for a {built} build of torch; the installed torch "
                        f"{tv.version} is {have}", ev, fix=_fix(facts))


def section(facts: Facts) -> dict[str, Any]:
    """Both sides of the comparison, for the report."""
    tv = facts.torch_variant
    ext = facts.extension_variant
    return {"torch": {"version": tv.version, "variant": tv.variant, "cuda": tv.cuda} if tv
            else None,
            "extension": {"variant": ext.variant or "none", "cuda_major": ext.cuda_major,
                          "version": ext.package_version, "requires": ext.requires_torch,
                          "evidence": list(ext.evidence)}}


CHECK = Check(
    name="variant",
    summary="the extension was built for the same torch build (CPU/CUDA/ROCm) as the installed one",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
    needs_elf=False,
    section=section,
    applies=lambda facts: "no torch in the target interpreter" if facts.torch_variant is None
    # A broken file proves nothing about its variant: never claim ✓ for it.
    else facts.blocker if not facts.is_package_dir and facts.blocker else "",
)
