"""CUDA checks (cause 3): fat binaries from real nvcc output, verdicts per target GPU."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions, Facts
from opdoctor.facts.cuda import parse_gpu, read_fatbin, verdict
from opdoctor.model import Report
from opdoctor.pipeline import Selection, run_check
from tests.conftest import cuda_built, fixture, reference
from tests.helpers import cli

GPU_CODES = Selection(("OD31",))


@pytest.fixture(autouse=True)
def _need_nvcc() -> None:
    if cuda_built():
        pytest.skip(cuda_built())


def check(path: Path, gpus: str, select: Selection = GPU_CODES) -> Report:
    return run_check(str(path), CheckOptions(gpus=tuple(gpus.split(","))), select)


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def test_parser_matches_the_gencode_flags() -> None:
    """The Makefile builds the reference with sm_80 + sm_90 SASS and compute_90 PTX."""
    fb = read_fatbin(Facts(str(reference())).image)
    assert fb is not None and not fb.problems
    assert fb.sass_archs == [80, 90]
    assert fb.ptx_archs == [90]
    ptx = next(e for e in fb.entries if e.kind == 1)
    assert ptx.ptx_version is not None and ptx.ptx_version[0] >= 8
    assert read_fatbin(Facts(str(fixture("cuda/ptx80_only.so"))).image).ptx_archs == [80]
    only80 = read_fatbin(Facts(str(fixture("cuda/sm80_only.so"))).image)
    assert only80.sass_archs == [80] and only80.ptx_archs == []


def test_no_fatbin_in_cpu_library() -> None:
    assert read_fatbin(Facts(str(fixture("registration/cpu_only.so"))).image) is None


@pytest.mark.parametrize(("name", "gpus", "want"), [
    ("cuda/sm80_only.so", "sm_90", ["OD310"]),
    ("cuda/sm80_only.so", "sm_86", []),
    ("cuda/sm80_only.so", "A100,A10G", []),
    ("cuda/sm90_only.so", "sm_80", ["OD310"]),
    ("cuda/ptx80_only.so", "sm_90", ["OD311"]),
    ("cuda/ptx80_only.so", "sm_75", ["OD310"]),
])
def test_verdict_per_gpu(name: str, gpus: str, want: list[str]) -> None:
    report = check(fixture(name), gpus)
    assert [c for c in codes(report) if c != "OD313"] == want


def test_reference_clean_on_its_gpus() -> None:
    report = check(reference(), "sm_80,sm_86,sm_90")
    assert [c for c in codes(report) if c != "OD313"] == []
    rows = {r["gpu"]: (r["runs"], r["via"]) for r in report.sections["cuda"]["gpus"]}
    assert rows == {"sm_80": ("native", "sm_80"), "sm_86": ("native", "sm_80"),
                    "sm_90": ("native", "sm_90")}


def test_no_image_evidence_and_fix() -> None:
    report = check(fixture("cuda/sm80_only.so"), "H100")
    f = next(f for f in report.findings if f.code == "OD310")
    assert f.subject == "sm_90"
    assert "in the library: sm_80" in f.evidence[0]
    assert "-gencode arch=compute_90,code=sm_90" in f.fix
    assert 'TORCH_CUDA_ARCH_LIST="8.0;9.0+PTX"' in f.fix


def test_cpu_only_torch_with_gpu_targets() -> None:
    """torch 2.13.0+cpu is installed in the dev venv: targeting GPUs is a warning."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    version = (Path(spec.origin).parent / "version.py").read_text()  # type: ignore[union-attr]
    if "cuda: Optional[str] = None" not in version and "cuda = None" not in version:
        pytest.skip("torch here is a CUDA build")
    report = check(reference(), "sm_90", Selection(("OD313",)))
    assert codes(report) == ["OD313"]
    # Without GPU targets (and no nvidia-smi here) a CUDA-capable extension is not an issue.
    no_targets = run_check(str(reference()), CheckOptions(), Selection(("OD313",)))
    assert no_targets.findings == []


def test_rule() -> None:
    fb = read_fatbin(Facts(str(reference())).image)
    assert fb is not None
    assert verdict(fb, 89).via == "sm_80"
    assert verdict(fb, 100).how == "jit"
    assert verdict(fb, 75).how == "none"
    assert parse_gpu("H100") == 90 and parse_gpu("8.6") == 86 and parse_gpu("sm_90a") == 90
    with pytest.raises(ValueError):
        parse_gpu("Voodoo3")


def test_corrupt_fatbin_is_reported(tmp_path: Path) -> None:
    data = bytearray(reference().read_bytes())
    off = data.find(struct.pack("<I", 0xBA55ED50))
    struct.pack_into("<Q", data, off + 16 + 8, 1 << 40)  # first entry's payload size
    p = tmp_path / "corrupt.so"
    p.write_bytes(bytes(data))
    report = check(p, "sm_90", Selection(("OD314",)))
    assert codes(report) == ["OD314"]
    assert "past its container" in report.findings[0].evidence[0]


def test_a_fatbin_pointer_the_loader_relocates_is_followed(tmp_path: Path) -> None:
    """torchmonarch 0.7.0's Rust extension (lld): the fat-binary wrapper's data pointer is 0 in
    the file and its value is the addend of an R_X86_64_RELATIVE relocation, written when the
    library loads; OD314 said "fatbin wrapper points at 0x0, outside the file" (survey 19).
    The reference (GNU ld) has the same relocation and also the value in place: with the value
    zeroed as lld leaves it, the relocation is followed; without the relocation too, the
    pointer is what it says."""
    data = bytearray(reference().read_bytes())
    img = Facts(str(reference())).image
    seg = img.section(".nvFatBinSegment")
    assert seg is not None and img.header.e_machine == 62
    field = seg.offset + 8
    (value,) = struct.unpack_from("<Q", data, field)
    want = seg.addr + 8
    rela = [sec for sec in img.sections if sec.sh_type == 4]
    hits = [(sec.offset + i * 24) for sec in rela for i in range(sec.size // 24)
            if struct.unpack_from("<QQq", data, sec.offset + i * 24)[0] == want]
    assert len(hits) == 1, hits
    off, info, addend = struct.unpack_from("<QQq", data, hits[0])
    assert info & 0xFFFFFFFF == 8 and addend == value  # R_X86_64_RELATIVE, its addend
    struct.pack_into("<Q", data, field, 0)  # as lld leaves it
    zeroed = tmp_path / "lld_like.so"
    zeroed.write_bytes(bytes(data))
    fb = read_fatbin(Facts(str(zeroed)).image)
    assert fb is not None and not fb.problems, fb and fb.problems
    assert (fb.sass_archs, fb.ptx_archs) == ([80, 90], [90])
    assert "OD314" not in codes(check(zeroed, "sm_90", Selection(("OD314",))))
    struct.pack_into("<QQq", data, hits[0], off, info & ~0xFFFFFFFF, addend)  # R_X86_64_NONE
    broken = tmp_path / "no_reloc.so"
    broken.write_bytes(bytes(data))
    fb = read_fatbin(Facts(str(broken)).image)
    assert fb is not None and "fatbin wrapper points at 0x0, outside the file" in fb.problems


def test_unknown_gpu_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "check", "--gpu", "Voodoo3", str(reference())).code == 3


@pytest.mark.probe
def test_text_rows(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--gpu", "sm_80,sm_90", str(fixture("cuda/sm80_only.so")))
    assert "✗ sm_90: no kernel image" in res.out
    assert "✓ sm_80: runs natively (sm_80)" in res.out


def _cuda12_torch_venv(tmp_path: Path) -> str:
    """The python of a venv whose torch is a package layout on disk of a CUDA 12.8 build (its
    version.py; no CUDA torch wheel can be installed on this CPU-only machine)."""
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text("")
    (torch / "version.py").write_text("__version__ = '2.7.0+cu128'\ncuda = '12.8'\n")
    return str(tmp_path / "v" / "bin" / "python")


def test_cuda_runtime_differs_from_torch(tmp_path: Path) -> None:
    """An interpreter whose torch was built for CUDA 12 (a torch package layout on disk with
    that version.py — no CUDA torch wheel can be installed on this CPU-only machine), checking
    the reference, which links libcudart.so.13."""
    py = _cuda12_torch_venv(tmp_path)
    report = run_check(str(reference()), CheckOptions(python=py, env=()), Selection(("OD312",)))
    assert codes(report) == ["OD312"]
    assert "CUDA runtime 13, torch 2.7.0+cu128 uses CUDA 12.8" in report.findings[0].message


def test_the_inventory_is_one_row_per_kind_of_image() -> None:
    """``sections.cuda.entries`` has one row per (kind, arch, compressed, PTX ISA) with how
    many images the fat binaries hold and their bytes; one row per image was 2,849 rows of
    12 kinds (254 KB of JSON) for MindSpore's libcuda_ops.so.11 (survey 15's P4)."""
    from opdoctor.checks.cuda import fatbin
    from opdoctor.facts import Facts

    report = check(reference(), "sm_80")
    rows = report.sections["cuda"]["entries"]
    kinds = [(r["kind"], r["arch"], r["compressed"], r["ptx_isa"]) for r in rows]
    assert rows and len(kinds) == len(set(kinds))
    fb = fatbin(Facts(str(reference())))
    assert fb is not None
    assert sum(r["count"] for r in rows) == len(fb.entries)
    assert sum(r["size"] for r in rows) == sum(e.size for e in fb.entries)


def test_a_build_for_a_cuda_major_this_torch_does_not_bring(tmp_path: Path) -> None:
    """Survey 23's V1: torchaudio 2.9.0 (CUDA 12) beside torch 2.14.1+cu130, `--static` led
    with "libcudart.so.12 is not found: install CUDA 12" — a runtime beside this torch that
    only reaches the next mismatch; OD312 (another CUDA major) was a warning below it. With
    that major's runtime not installed, OD312 is the error and the missing runtime its
    consequence. Here: a library that NEEDs libcudart.so.11 (a stub at link time, gone after),
    beside a torch package layout of CUDA 12.8."""
    import subprocess
    import sys

    (tmp_path / "rt.c").write_text("int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n")
    stub = tmp_path / "libcudart.so.11"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.11", "-o", str(stub),
                    str(tmp_path / "rt.c")], check=True, timeout=60)
    (tmp_path / "op.c").write_text("int cudaGetDeviceCount(int *n);\n"
                                   "int op_devices(void) { int n; cudaGetDeviceCount(&n); "
                                   "return n; }\n")
    lib = tmp_path / "libcu11op.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "op.c"),
                    str(stub)], check=True, timeout=60)
    stub.unlink()
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60, env={})
    assert "libcudart.so.11: cannot open shared object file" in real.stderr, real.stderr
    py = _cuda12_torch_venv(tmp_path)
    report = run_check(str(lib), CheckOptions(python=py, env=()))
    od312 = next(f for f in report.findings if f.code == "OD312")
    assert od312.severity.value == "error" and "CUDA 11's runtime is not installed" in \
        od312.message, od312
    assert report.diagnosis is not None
    assert "OD312" in [f.code for f in report.diagnosis.root_findings]
    assert "OD201" in [f.code for f in report.diagnosis.consequences.get("OD312", [])], \
        report.diagnosis
