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
    for info in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        base = os.path.basename(info)[: -len(".dist-info")]
        dname = base.rsplit("-", 1)[0].replace("_", "-").lower()
        if dname != norm and name not in top_levels(info, record=False):
            continue
        try:
            with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as fh:
                meta = fh.read(262144)
        except OSError:
            continue
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
    xformers): a CPU build is promised only where one is published."""
    if dist.replace("-", "_").lower() in _ON_CPU_INDEX:
        return (f"the CPU build of {dist} for torch {torch_version} (pip install {dist} "
                "--index-url https://download.pytorch.org/whl/cpu)")
    return f"a CPU build of {dist} for torch {torch_version}, if its project publishes one"
