"""CUDA (cause 3): will the GPU code in the library run on the GPUs that will run the job, and
does its CUDA runtime match torch's?

"no kernel image is available for execution on the device" and "invalid device function" are
predicted here from the fat binary, on a machine without a GPU: target GPUs come from
``--gpu`` (the fleet's GPUs, in CI) or, when none is given, from ``nvidia-smi`` on this machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.cuda import Fatbin, gencode_for, verdict
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_NVCC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/#gpu-compilation"

OD310 = CodeDoc(
    "OD310", "no kernel image for a target GPU", Severity.ERROR,
    what="For every target GPU the library carries SASS of the same major architecture and a "
    "lower or equal minor, or PTX of a lower or equal architecture to JIT-compile.",
    why="Otherwise the first kernel launch fails: 'CUDA error: no kernel image is available "
    "for execution on the device' (or 'invalid device function').",
    example="built with -gencode arch=compute_80,code=sm_80 only, run on an H100 (sm_90)",
    fix="Add the GPU's architecture to the build (nvcc -gencode arch=compute_90,code=sm_90, or "
    "TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\") and keep PTX for the newest one.",
    references=(_NVCC, "https://docs.nvidia.com/cuda/ampere-compatibility-guide/"),
)
OD311 = CodeDoc(
    "OD311", "target GPU runs the kernels only through PTX JIT", Severity.INFO,
    what="Every target GPU has native SASS in the library.",
    why="With only PTX the driver JIT-compiles every kernel at first use: seconds to minutes "
    "of start-up (cached in ~/.nv/ComputeCache), and it fails if the driver is older than the "
    "PTX ISA version.",
    example="compute_80 PTX only, on sm_90: runs after a JIT compile",
    fix="Add SASS for the GPU: -gencode arch=compute_90,code=sm_90.",
    references=(_NVCC,),
)
OD312 = CodeDoc(
    "OD312", "CUDA runtime differs from torch's", Severity.WARNING,
    what="The major version of the extension's libcudart.so.N matches torch.version.cuda.",
    why="Two CUDA runtimes in one process: the extension's runtime may be missing on the job's "
    "machine (torch wheels ship their own), and streams/allocations do not interoperate. When "
    "that major's runtime is not installed, it is an error: the extension is a build for a "
    "torch of another CUDA major, and its missing CUDA libraries are the consequence.",
    example="libmyop.so needs libcudart.so.12, torch 2.x+cu130 ships libcudart.so.13",
    fix="Build the extension with the CUDA toolkit of torch's CUDA version (torch.version.cuda).",
    references=("https://pytorch.org/get-started/locally/",),
)
OD313 = CodeDoc(
    "OD313", "CUDA code, but torch is a CPU-only build", Severity.WARNING,
    what="When GPUs are targeted, the target interpreter's torch is a CUDA build.",
    why="With a CPU-only torch the CUDA kernels never run: torch.cuda.is_available() is False "
    "and calls with CUDA tensors fail ('Torch not compiled with CUDA enabled').",
    example="torch 2.13.0+cpu with an extension that registers CUDA kernels, on a GPU node",
    fix="Install the CUDA build of torch that matches the extension's CUDA (e.g. pip install "
    "torch --index-url https://download.pytorch.org/whl/cu130).",
    references=("https://pytorch.org/get-started/locally/",),
)
OD314 = CodeDoc(
    "OD314", "malformed CUDA fat binary", Severity.WARNING,
    what="The .nv_fatbin containers and entries are consistent (magic, sizes).",
    why="A corrupt fatbin fails at module load with 'device kernel image is invalid'.",
    example="entry at 0x1234 has header 64 / payload 99999 bytes past its container",
    fix="Rebuild the library; check the file was not truncated or modified.",
    references=(_NVCC,),
)

CODES = (OD310, OD311, OD312, OD313, OD314)


def fatbin(facts: Facts) -> Fatbin | None:
    """The target's fat binary (a fact: read once per run)."""
    return facts.fatbin


def _cudart_major(facts: Facts) -> int | None:
    for name in facts.image.tags.get("DT_NEEDED", []):
        m = re.fullmatch(r"libcudart\.so\.(\d+)", str(name))
        if m:
            return int(m.group(1))
    return None


def run(facts: Facts) -> Iterator[Finding]:
    """Judge the fat binary against the target GPUs and the CUDA runtime against torch's."""
    fb = fatbin(facts)
    cudart = _cudart_major(facts)
    if fb is None and cudart is None:
        return
    if fb is not None and fb.problems:
        yield OD314.finding(facts.path, "the CUDA fat binary is malformed", fb.problems[:5])
    gpus, source = facts.target_gpus
    inventory = ", ".join(dict.fromkeys(e.label for e in fb.entries)) if fb else "none"
    if fb is not None and gpus:
        missing = []
        for g in gpus:
            v = verdict(fb, g)
            if v.how == "none":
                missing.append(g)
            elif v.how == "jit":
                yield OD311.finding(f"sm_{g}", f"sm_{g} runs the kernels only by JIT-compiling "
                                    f"{v.via} PTX", (f"in the library: {inventory}",
                                                     f"targets from {source}"),
                                    fix=f"add SASS for it: -gencode arch=compute_{g},code=sm_{g}")
        if missing:
            want = sorted(set(fb.sass_archs) | set(missing))
            yield OD310.finding(
                ", ".join(f"sm_{g}" for g in missing),
                f"no kernel image for {', '.join(f'sm_{g}' for g in missing)}: the first kernel "
                "launch fails with 'no kernel image is available for execution on the device'",
                (f"in the library: {inventory}", f"targets from {source}",
                 "SASS sm_XY runs on the same major with minor ≥ Y; "
                 "PTX compute_XY on any GPU ≥ XY"),
                fix=f"rebuild with {gencode_for(want)}")
    interp = facts.interpreter
    torch = interp.torch if interp else None
    if torch is None:
        return
    if torch.cuda is None:
        if gpus:
            yield OD313.finding(facts.path, f"GPUs are targeted ({source}) but torch "
                                f"{torch.version} is CPU-only: the CUDA code never runs",
                                (f"torch.version.cuda = None ({torch.directory}/version.py)",
                                 f"GPU code in the library: {inventory}"))
        return
    if cudart is not None and str(cudart) != torch.cuda.split(".")[0]:
        ev = (f"DT_NEEDED libcudart.so.{cudart}", f"torch.version.cuda = {torch.cuda}")
        if any(m.name == f"libcudart.so.{cudart}" for m in facts.process.tree.missing):
            # CUDA 12's runtime is not installed beside a CUDA 13 torch: the library is a
            # build for a torch of another CUDA major, not a search-path problem (torchaudio
            # 2.9.0 beside torch 2.14.1+cu130 led with "install CUDA 12"; survey 23's V1)
            major = torch.cuda.split(".")[0]
            yield OD312.finding(
                facts.path, f"the library uses CUDA runtime {cudart}, torch {torch.version} "
                f"uses CUDA {torch.cuda}, and CUDA {cudart}'s runtime is not installed: it is a "
                f"build for a torch of CUDA {cudart}", (*ev, f"libcudart.so.{cudart}: not found"),
                severity=Severity.ERROR,
                fix=f"install the package's build for torch {torch.version} (CUDA {major}: "
                "from the index torch came from), or run it with a torch built for CUDA "
                f"{cudart}; installing CUDA {cudart}'s runtime beside this torch only reaches "
                "the next mismatch")
            return
        yield OD312.finding(facts.path, f"the library uses CUDA runtime {cudart}, torch "
                            f"{torch.version} uses CUDA {torch.cuda}", ev)


def section(facts: Facts) -> dict[str, Any]:
    """The GPU-code inventory and the per-GPU verdicts for the report."""
    fb = fatbin(facts)
    gpus, source = facts.target_gpus
    out: dict[str, Any] = {"cudart": _cudart_major(facts), "targets_from": source,
                           "entries": [], "gpus": []}
    if fb is not None:
        # One row per kind of image (SASS/PTX, arch, compressed, PTX ISA) with how many the
        # fat binaries hold and their bytes: one row per entry was 2,849 rows (254 KB of
        # JSON) of 12 distinct kinds for MindSpore's libcuda_ops.so.11 (survey 15's P4).
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        for e in fb.entries:
            isa = ".".join(map(str, e.ptx_version)) if e.ptx_version else None
            row = rows.setdefault((e.kind_name, e.label, e.compressed, isa), {
                "kind": e.kind_name, "arch": e.label, "compressed": e.compressed,
                "ptx_isa": isa, "count": 0, "size": 0})
            row["count"] += 1
            row["size"] += e.size
        out["entries"] = list(rows.values())
        out["gpus"] = [{"gpu": f"sm_{g}", "runs": verdict(fb, g).how, "via": verdict(fb, g).via}
                       for g in gpus]
    return out


CHECK = Check(
    name="cuda",
    summary="GPU code (SASS/PTX) fits the target GPUs; CUDA runtime matches torch's",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
    section=section,
)
