"""Build variants (cause 3): PyPI's CUDA build of torchvision beside the pinned CPU torch — the
commonest real "operator torchvision::nms does not exist" — and healthy libraries stay clean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIX, SKIP, fixture, reference
from tests.helpers import cli
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

WHEEL = "torchvision-0.28.0"


def _site() -> Path:
    reason = SKIP / f"{WHEEL}.txt"
    if reason.exists():
        pytest.skip(f"real wheel {WHEEL} not fetched: {reason.read_text().strip()[:200]}")
    site = FIX / "realwheels" / WHEEL / "site"
    assert site.is_dir(), f"{site} is missing: run `make fixtures`"
    return site


@pytest.mark.probe
def test_torch_itself_fails_that_way() -> None:
    """Ground truth: importing this torchvision beside torch 2.13.0+cpu fails as users see it."""
    site = _site()
    env = dict(os.environ, PYTHONPATH=str(site))
    p = run_python("import torch, torchvision", env=env, timeout=300, cwd="/")
    assert p.returncode != 0
    assert "operator torchvision::nms does not exist" in p.stderr
    ld = run_python("import torch, ctypes, sys; ctypes.CDLL(sys.argv[1])",
                    str(site / "torchvision" / "_C.so"), env=env, timeout=300)
    assert ld.returncode != 0 and "libc10_cuda.so" in ld.stderr


def test_cuda_extension_on_cpu_torch_is_cause_3(capsys: pytest.CaptureFixture[str]) -> None:
    site = _site()
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              str(site / "torchvision" / "_C.so"))
    assert res.code == 1
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD307"], diag
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    ev = "\n".join(od307["evidence"])
    assert "libc10_cuda.so" in ev and "libtorch_cuda.so" in ev and "0.28.0+cu130" in ev
    assert "2.13.0+cpu" in od307["message"]
    # The fix installs matching builds; it never patches search paths.
    assert "whl/cu130" in od307["fix"] and "torch==2.13.0" in od307["fix"]
    assert "patchelf" not in diag["summary"]
    # The missing CUDA half of torch is a consequence, not a library-path root.
    assert "OD201" not in diag["root_findings"]


def test_package_mode_names_the_variant(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    site = _site()
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              "--package", "torchvision", "--cwd", str(tmp_path))
    assert res.code == 1
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD307"]
    # The site was installed with --no-deps: torchvision's datasets import PIL, which is not
    # there either (OD514) — but the import stops earlier, on the CUDA build's _C (Python:
    # "operator torchvision::nms does not exist"), so that finding is no root.
    od514 = [f["message"] for f in rep["findings"] if f["code"] == "OD514"]
    assert any("`import PIL`" in m for m in od514), od514


def test_healthy_libraries_have_no_variant_finding(capsys: pytest.CaptureFixture[str]) -> None:
    # The reference links the system CUDA runtime (when nvcc built it) and runs its CPU kernel
    # beside the CPU torch: a CUDA runtime that is found is not a variant mismatch.
    for lib in (reference(), fixture("registration/cpu_only.so")):
        res = cli(capsys, "check", "--static", "-f", "json", str(lib))
        codes = [f["code"] for f in res.json()["reports"][0]["findings"]]
        assert "OD307" not in codes and res.code == 0, (lib, codes)


def test_static_inventory_of_a_real_extension_names_only_its_ops(
        capsys: pytest.CaptureFixture[str]) -> None:
    """torchvision 0.28's ``_C.so`` keeps its inlined schema literals back to back in ``.rodata``
    (``…float iou_thresholtorchvision::qroi_align(…``): the inventory must read
    ``torchvision::qroi_align``, as the package's own Python calls it, never a glued name."""
    import re

    site = _site()
    called = set()
    for py in (site / "torchvision").rglob("*.py"):
        called |= set(re.findall(r"torch\.ops\.torchvision\.(\w+)", py.read_text("utf-8")))
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              str(site / "torchvision" / "_C.so"))
    reg = res.json()["reports"][0]["sections"]["registration"]
    names = {s["schema"].split("(")[0] for s in reg["schemas"]}
    assert "torchvision::qroi_align" in names  # was read as iou_thresholtorchvision::qroi_align
    assert all(n.split("::")[-1] in called for n in names), names
    assert all(n.startswith("torchvision::") for n in names if "::" in n), names
    assert list(reg["namespaces"]) == ["torchvision"]


def _needing_a_missing(tmp_path: Path, soname: str, name: str) -> Path:
    """A library ``name`` linked against a stub ``soname`` that is then removed, so that the
    real loader fails on it (checked with ctypes)."""
    (tmp_path / "stub.c").write_text("int stub_entry(void) { return 0; }\n")
    (tmp_path / "use.c").write_text("int stub_entry(void);\n"
                                    "int make(void) { return stub_entry(); }\n")
    stub = tmp_path / "stubdir" / soname
    stub.parent.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(stub),
                    str(tmp_path / "stub.c")], check=True)
    lib = tmp_path / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "use.c"),
                    str(stub)], check=True)
    stub.unlink()  # the machine has no such library
    failed = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(lib)!r})"],
                            capture_output=True, text=True, timeout=60)
    assert f"{soname}: cannot open shared object file" in failed.stderr, failed.stderr
    return lib


def test_a_cuda_library_that_links_no_torch_is_no_torch_variant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bitsandbytes ships libbitsandbytes_cuda130.so (NEEDED libcublas.so.13, no torch) beside
    its CPU library and loads one with ctypes. On a machine without CUDA 13 that file cannot
    load — but not because "it was built for a CUDA build of torch" (OD307): it links none.
    Its missing CUDA library is OD201, whose fix says CUDA is to be installed (or the CPU build
    used), not an RPATH edit."""
    lib = _needing_a_missing(tmp_path, "libcublas.so.99", "libkernels_cuda99.so")
    doc = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()
    found = {f["code"]: f for f in doc["reports"][0]["findings"]}
    assert "OD307" not in found
    assert found["OD201"]["fix"].startswith("libcublas.so.99 is part of CUDA 99: install CUDA 99")


@pytest.mark.probe
def test_a_cuda_runtime_the_real_load_misses_for_a_library_without_torch_is_a_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bitblas 0.1.0's libtvm.so links no torch and NEEDs libnvrtc.so.12; the real load fails
    on it. The probe said OD315 "it belongs to a CUDA 12 build of torch" (cause 3) — no torch
    build brings a CUDA runtime to a library that does not link torch: the loader's "not
    found" (cause 2), the static OD201's "install CUDA 12" fix."""
    lib = _needing_a_missing(tmp_path, "libnvrtc.so.99", "libtvmlike.so")
    real = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(lib)!r})"],
                          capture_output=True, text=True, timeout=60)
    assert "libnvrtc.so.99: cannot open shared object file" in real.stderr, real.stderr
    doc = cli(capsys, "check", "-f", "json", str(lib)).json()
    rep = doc["reports"][0]
    codes = {f["code"] for f in rep["findings"]}
    assert "OD315" not in codes and "OD307" not in codes, codes
    assert rep["diagnosis"]["cause"] == 2 and rep["diagnosis"]["root_findings"] == ["OD201"]


@pytest.mark.probe
def test_a_package_whose_import_loads_such_a_library_is_checked_without_a_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bitblas 0.1.0 itself (`--package bitblas`): its import runs tvm's `_load_lib`, a ctypes
    load of libtvm.so, which needs libnvrtc.so.12. Reading "does the library that needs it
    link torch" opened the *package directory* as the target library: the probe check
    crashed (InputError, exit 4, "the report is incomplete"). The library is now the one
    whose ctypes load failed during the import; the verdict is the loader's not-found with
    the install-CUDA fix, as for the library checked alone."""
    pkg = tmp_path / "tvmish"
    (pkg / "build").mkdir(parents=True)
    lib = _needing_a_missing(pkg / "build", "libnvrtc.so.99", "libtvmlike.so")
    # found by a search at import time, as tvm's libinfo does: no static path to the file
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n\n\ndef _find():\n"
        "    for root, _dirs, files in os.walk(os.path.dirname(__file__)):\n"
        "        if 'libtvmlike.so' in files:\n"
        "            return os.path.join(root, 'libtvmlike.so')\n\n\n"
        "_lib = ctypes.CDLL(_find())\n")
    real = subprocess.run([sys.executable, "-c", "import tvmish"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "OSError: libnvrtc.so.99: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "tvmish")
    assert res.code == 1, res.err  # not 4: no check crashed
    rep = res.json()["reports"][0]
    assert not [c for c in rep["checks"] if c["status"] == "failed"], rep["checks"]
    found = {f["code"]: f for f in rep["findings"]}
    assert "OD315" not in found and "OD307" not in found, list(found)
    assert found["OD220"]["fix"].startswith("libnvrtc.so.99 is part of CUDA 99"), found["OD220"]
    assert rep["diagnosis"]["cause"] == 2
    assert rep["target"]["path"] == str(pkg) and lib.is_file()  # the package, not the file


@pytest.mark.parametrize("soname", ["libcudnn.so.9", "libnvToolsExt.so.1"])
def test_a_cuda_library_numbered_by_its_own_release_names_no_cuda_major(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], soname: str) -> None:
    """cuDNN, NCCL, NVTX, cuFFT … number their own releases: libcudnn.so.9 runs on CUDA 12,
    libnvToolsExt.so.1 on every CUDA (k2 1.23.2's libraries NEED it). The fix said "part of
    CUDA 1: install CUDA 1 (… nvidia-*-cu1 packages)"; it names no CUDA major now, and the
    variant reading gives none (a CUDA 12 torch missing libcudnn.so.9 is no other build)."""
    from opdoctor.facts.variant import variant_library

    lib = _needing_a_missing(tmp_path, soname, "libkernels.so")
    doc = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()
    fix = {f["code"]: f for f in doc["reports"][0]["findings"]}["OD201"]["fix"]
    assert fix.startswith(f"{soname} is one of NVIDIA's CUDA libraries") and "CUDA 9" not in \
        fix and "CUDA 1:" not in fix, fix
    assert variant_library(soname) == ("cuda", None)
    assert variant_library("libcudart.so.12") == ("cuda", 12)


def test_a_missing_rocm_library_gets_an_install_rocm_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bitsandbytes' libbitsandbytes_rocm70.so NEEDs libhipblas.so.3: without ROCm the fix is
    to install it (or use the CPU build), not to patch an RPATH."""
    lib = _needing_a_missing(tmp_path, "libhipblas.so.3", "libkernels_rocm70.so")
    doc = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()
    found = {f["code"]: f for f in doc["reports"][0]["findings"]}
    assert found["OD201"]["fix"].startswith("libhipblas.so.3 is part of AMD's ROCm")


def test_a_requirement_that_is_a_range_names_no_release_in_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vptq 0.0.5 requires ``torch>=2.3.0`` and was built for one torch (CUDA 12.1, the old
    C++ ABI): OD307's fix said ``pip install 'torch>=2.3.0' --index-url …/cu126``, which
    installs the newest torch, not the one the library was built for. A range names no
    release: the fix gives the placeholder, with the range, and keeps an exact pin in the
    command (torchvision's ``torch (==2.13.0)``)."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(_site(), site)
    meta = next(site.glob("torchvision-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text().replace("Requires-Dist: torch (==2.13.0)",
                                             "Requires-Dist: torch (>=2.3.0)"))
    series = tmp_path / "series"  # torch-tensorrt 2.14.0: torch<2.15.0,>=2.14.0 (survey 17)
    shutil.copytree(_site(), series)
    meta = next(series.glob("torchvision-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text().replace("Requires-Dist: torch (==2.13.0)",
                                             "Requires-Dist: torch (<2.15.0,>=2.14.0)"))
    fixes = {}
    for name, where in (("range", site), ("pin", _site()), ("series", series)):
        res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={where}",
                  str(where / "torchvision" / "_C.so"))
        fixes[name] = next(f["fix"] for f in res.json()["reports"][0]["findings"]
                           if f["code"] == "OD307")
    assert "pip install torch==<release> --index-url https://download.pytorch.org/whl/cu130" \
        in fixes["range"] and "requires torch>=2.3.0, a range, not a release" in \
        fixes["range"], fixes["range"]
    assert "'torch>=" not in fixes["range"]
    # a range that admits one release series names it
    assert "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu130" \
        in fixes["series"], fixes["series"]
    assert "pip install 'torch (==2.13.0)'" in fixes["pin"] or \
        "pip install 'torch==2.13.0'" in fixes["pin"], fixes["pin"]


def test_the_cuda_index_is_one_the_release_was_published_on() -> None:
    """vllm-flash-attn 2.6.2 (a CUDA 12 build for torch==2.4.0) was told `--index-url
    …/whl/cu126`, where torch 2.4.0 was never published (cu118, cu121, cu124); kaldifeat 1.4
    (CUDA 10.1, torch 1.8.1) was told cu130 (survey 19). The index is the newest of the
    extension's CUDA major that the pinned release was published on; without a known release,
    the index that served that major longest."""
    from opdoctor.checks.variant import cuda_index

    assert cuda_index("torch==2.4.0", 12) == "cu124"
    assert cuda_index("torch==2.4.0", 11) == "cu118"
    assert cuda_index("torch==1.8.1", 10) == "cu102"
    assert cuda_index("torch==2.6.0", 12) == "cu126"
    assert cuda_index("torch==2.9.*", 13) == "cu130"
    assert cuda_index("", 12) == "cu126" and cuda_index("torch>=2.13.0", 13) == "cu130"


@pytest.mark.probe
def test_a_cpu_torchs_version_decides_over_a_cuda_library_left_in_its_lib(
        tmp_path: Path) -> None:
    """Survey 22's A6: torch 2.13.0+cpu copied over a CUDA torch 2.14.1 kept that torch's
    libc10_cuda.so in torch/lib; the installed torch was read as a CUDA build, and torchvision's
    CUDA build beside it got "libc10_cuda.so is not found … patchelf" instead of OD307. The
    import runs version.py: a `+cpu` release is a CPU build (torch.version.cuda is None)."""
    import shutil

    from opdoctor.facts import CheckOptions, Facts
    from tests.test_loader import _link_or_copy, torch_lib_dir

    src_site = torch_lib_dir().parent.parent
    site = tmp_path / "site"
    site.mkdir()
    shutil.copytree(src_site / "torch", site / "torch", copy_function=_link_or_copy)
    (tmp_path / "stub.c").write_text("int stub(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(site / "torch" / "lib" /
                                                         "libc10_cuda.so"),
                    str(tmp_path / "stub.c")], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    real = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, "
                           "torch.version.cuda)"], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(site)})
    version = real.stdout.split()[0] if real.returncode == 0 else ""
    assert real.stdout.split()[1:] == ["None"] and version.endswith("+cpu"), real.stderr
    facts = Facts(str(reference()), CheckOptions(env=(("PYTHONPATH", str(site)),),
                                                 probe=False))
    tv = facts.torch_variant
    assert tv is not None and tv.variant == "cpu" and tv.version == version, tv


@pytest.mark.probe
def test_a_stable_abi_build_asks_for_the_release_range_its_package_declares(
        capsys: pytest.CaptureFixture[str]) -> None:
    """torchaudio 2.11.1+cu132 (stable ABI, `Requires-Dist: torch>=2.11`) beside torch
    2.13.0+cpu: its libraries were compiled with torch 2.15.0 headers, and OD307's fix asked
    for `torch>=2.15.0` — no minimum for a stable-ABI build (torch 2.14.1+cu130 runs it, survey
    23's F8), and no such release on the index. The package's own range is the command."""
    from tests.test_pyreg import site

    lib = site("torchaudio-2.11.1") / "torchaudio" / "lib" / "_torchaudio.so"
    truth = run_python("import sys, torch; torch.ops.load_library(sys.argv[1])", str(lib),
                       timeout=300)
    assert truth.returncode != 0 and "libc10_cuda.so" in truth.stderr, truth.stderr[-2000:]
    rep = cli(capsys, "check", "--static", "-f", "json", str(lib)).json()["reports"][0]
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    od318 = next(f for f in rep["findings"] if f["code"] == "OD318")
    assert "built with torch 2.15.0 headers" in od318["message"]  # what the fix had used
    assert "(requires torch>=2.11)" in "\n".join(od307["evidence"])
    assert "pip install 'torch>=2.11' --index-url https://download.pytorch.org/whl/cu132" in \
        od307["fix"], od307["fix"]
    assert "2.15" not in od307["fix"]
