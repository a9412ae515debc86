"""Stable-ABI extensions (issue #14 item 3): inventory, CUDA-only shim imports, minimum torch.

Ground truth is never opdoctor's own reading: torch loads the healthy fixtures in a child and
lists what they registered; torch fails to load the real CUDA wheels; the build version read
from the code is compared with what the wheel itself records (xformers' cpp_lib.json,
torchvision's Requires-Dist). Real wheels: build/realworld/<case>/site (benchmarks/realworld,
installed by make test: `make realworld-small`); a wheel not on disk skips its test, saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.facts.elf.image import ElfImage
from opdoctor.facts.inputfile import open_input
from opdoctor.facts.registration import read_inventory
from opdoctor.facts.stable import build_version, read_shim_headers
from opdoctor.model import Report, Severity
from opdoctor.pipeline import run_check
from tests.conftest import BUILD, fixture
from tests.torchfork import run_python

# The installed torch's directory, found without importing torch into the test process.
_SPEC = importlib.util.find_spec("torch")
TORCH_DIR = next(iter(_SPEC.submodule_search_locations or [""])) if _SPEC else ""
NO_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
REAL = BUILD / "realworld"
TV = REAL / "torchvision-0.29.1-cu130" / "site" / "torchvision"
XF = REAL / "xformers-0.0.35" / "site" / "xformers"
TAO = REAL / "torchao-0.18.0-cuda-ext-on-cpu" / "site" / "torchao"


def real(path: Path) -> Path:
    if not path.is_file():
        # make test installs these cases (make realworld-small); a failed download says why.
        case = path.relative_to(REAL).parts[0]
        reason = BUILD / "fixtures" / "skipped" / f"realworld-{case}.txt"
        why = reason.read_text().strip() if reason.exists() else "make realworld-small installs it"
        pytest.skip(f"{path} not installed ({why})")
    return path


def check(path: Path) -> Report:
    return run_check(str(path), CheckOptions(probe=False, env=tuple(NO_ENV.items())))


def errors(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings if f.severity is Severity.ERROR)


def inventory(path: Path) -> Any:
    return read_inventory(ElfImage.open(open_input(str(path))), [])


# What torch itself registers when it loads the library (a child process, never this one).
_LOAD = r"""
import json, sys, torch
before = set(torch._C._dispatch_get_all_op_names())
try:
    torch.ops.load_library(sys.argv[1])
except OSError as exc:
    print(json.dumps({"error": str(exc)}))
    raise SystemExit(0)
ops = {}
for name in sorted(set(torch._C._dispatch_get_all_op_names()) - before):
    dump = torch._C._dispatch_dump(name)
    ops[name] = sorted({line.split(":")[0] for line in dump.splitlines()[1:]
                        if line and not line.startswith(("name:", "schema:", "debug:", "alias"))})
print(json.dumps({"ops": ops}))
"""


def torch_load(path: Path) -> dict[str, Any]:
    out = run_python(_LOAD, str(path), timeout=300, env=NO_ENV, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.probe
@pytest.mark.parametrize("name", ["stable_meta.so", "stable_meta_stripped.so"])
def test_healthy_stable_library_is_clean_and_inventoried(name: str) -> None:
    lib = fixture(f"compile/{name}")
    truth = torch_load(lib)
    assert "ops" in truth, truth  # torch loads it
    assert set(truth["ops"]) == {"sop::twin"}
    report = check(lib)
    assert errors(report) == []
    assert not [f for f in report.findings if f.severity is Severity.WARNING]
    spaces = report.sections["registration"]["namespaces"]
    assert spaces["sop"]["stable"] is True and spaces["sop"]["ops"] == ["twin"]
    # The keys torch lists for the op are the ones read from the file (symtab or .rodata).
    assert set(spaces["sop"]["kernels"]) == set(truth["ops"]["sop::twin"]) & {"CPU", "Meta"}
    note = next(f for f in report.findings if f.code == "OD318")
    assert note.severity is Severity.INFO and "2.13.0" in note.message
    assert "OD101" not in {f.code for f in report.findings}


def test_build_version_matches_what_the_wheel_records() -> None:
    xf = real(XF / "_C.so")
    recorded = json.loads((XF / "cpp_lib.json").read_text())["version"]["torch"]
    assert build_version(ElfImage.open(open_input(str(xf)))) == recorded.split("+")[0]
    tv = real(TV / "_C_stable.so")
    meta = next((TV.parent).glob("torchvision-*.dist-info")) / "METADATA"
    assert "Requires-Dist: torch (>=2.14.0)" in meta.read_text()
    assert build_version(ElfImage.open(open_input(str(tv)))).startswith("2.14.")


def test_real_stable_wheels_inventory() -> None:
    """Namespaced registrars (vision::ops::STABLE_TORCH_LIBRARY_IMPL_init_torchvision_CUDA_0)
    are read; torchvision's own Python registers fake impls for the ops found."""
    inv = inventory(real(TV / "_C_stable.so"))
    ns = inv.namespaces["torchvision"]
    assert ns.stable and inv.stable_abi
    assert {"CPU", "CUDA", "CompositeExplicitAutograd"} <= ns.impl_keys
    # torchvision's own Python names these ops as torchvision::<op> (its fake impls).
    meta_regs = (TV / "_meta_registrations.py").read_text()
    assert '@torch.library.register_fake("torchvision::nms")' in meta_regs
    assert '@register_meta("roi_align")' in meta_regs
    assert {"nms", "roi_align", "deform_conv2d"} <= set(ns.ops)
    tao = inventory(real(TAO / "_C_cutlass_90a.abi3.so"))
    assert tao.registers_anything and tao.namespaces["torchao"].impl_keys == {"CUDA"}


@pytest.mark.probe
@pytest.mark.parametrize("lib", [XF / "_C.so", TV / "_C_stable.so"])
def test_cuda_only_shim_imports_on_a_cpu_torch(lib: Path) -> None:
    lib = real(lib)
    truth = torch_load(lib)
    assert "error" in truth  # torch cannot load it
    report = check(lib)
    od317 = next(f for f in report.findings if f.code == "OD317")
    assert od317.cause.value == 3
    assert "aoti_torch_get_current_cuda_stream" in " ".join(od317.evidence)
    # Independent of opdoctor's reader: the installed torch's headers declare it only under
    # USE_CUDA, and no library of torch/lib exports it (nm -D).
    torch_dir = TORCH_DIR
    assert read_shim_headers(torch_dir)["aoti_torch_get_current_cuda_stream"].cuda_only
    nm = subprocess.run(["nm", "-D", "--defined-only", *sorted(
        str(p) for p in Path(torch_dir, "lib").glob("*.so*"))], capture_output=True, text=True)
    assert " aoti_torch_get_current_cuda_stream\n" not in nm.stdout
    assert "OD101" not in {f.code for f in report.findings}


def test_shim_header_gates_are_read() -> None:
    decls = read_shim_headers(TORCH_DIR)
    assert decls["torch_library_impl"].since == "2.10.0"
    assert decls["torch_library_def_with_tags"].since == "2.12.0"
    assert decls["torch_new_stable_ivalue"].since == "2.13.0"
    assert decls["aoti_torch_library_init_impl"].since == ""
    assert decls["torch_get_cuda_stream_from_pool"].cuda_only


_CDLL = r"""
import ctypes, sys, torch
try:
    torch.ops.load_library(sys.argv[1])
    print("loaded")
except OSError:
    try:
        ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    except OSError as exc:
        print(exc)
"""


@pytest.mark.probe
def test_shim_function_of_a_newer_torch() -> None:
    """tests/fixtures/stable/needs_2_14.cpp calls torch_has_storage, which torch 2.14 added
    (declaration copied from torch 2.14.1's shim.h): torch 2.13 cannot load it."""
    lib = fixture("stable/needs_2_14.so")
    out = run_python(_CDLL, str(lib), timeout=300, env=NO_ENV, check=True).stdout
    assert "undefined symbol: torch_has_storage" in out
    report = check(lib)
    assert report.diagnosis is not None and report.diagnosis.cause == 3
    od316 = next(f for f in report.findings if f.code == "OD316")
    assert "torch_has_storage" in od316.message and "newer than" in od316.message
    assert "not declared in its shim headers" in " ".join(od316.evidence)
    # The generic undefined-symbol finding is its consequence, not a second root.
    assert [f.code for f in report.diagnosis.root_findings] == ["OD316"]
    # Its registration is still read: the op is there, the load is what fails.
    assert report.sections["registration"]["namespaces"]["newop"]["ops"] == ["has_storage"]


_STRIP_CASES = [TV / "_C_stable.so", TV / "image_stable.so", XF / "_C.so",
                TAO / "_C_cutlass_90a.abi3.so",
                REAL / "torchaudio-2.11.1" / "site" / "torchaudio" / "lib" / "_torchaudio.so",
                REAL / "torchaudio-2.11.1" / "site" / "torchaudio" / "lib" / "libtorchaudio.so",
                REAL / "torchaudio-2.11.1" / "site" / "torchaudio" / "lib" /
                "torchaudio_prefixctc.so",
                REAL / "torchcodec-0.17.0-needs-nvrtc" / "site" / "torchcodec" /
                "libtorchcodec_custom_ops8.so"]


@pytest.mark.parametrize("lib", _STRIP_CASES, ids=lambda p: p.name)
def test_stripped_stable_library_keeps_its_namespace(lib: Path, tmp_path: Path) -> None:
    """strip --strip-all removes the registrar symbols; the namespace and the keys come back
    from the code (lea of the "ns" and "Key" literals into the shim call's registers)."""
    from opdoctor.facts.stable import read_registration

    lib = real(lib)
    stripped = tmp_path / lib.name
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), str(lib)], check=True)
    whole = read_registration(ElfImage.open(open_input(str(lib))))
    assert whole.namespaces and not whole.from_rodata  # the truth: its .symtab registrars
    got = read_registration(ElfImage.open(open_input(str(stripped))))
    assert got.from_rodata and got.namespaces == whole.namespaces
    for ns in whole.namespaces:
        assert got.impl_keys[ns] <= whole.impl_keys.get(ns, set())
        if lib.name != "libtorchaudio.so":  # its CompositeExplicitAutograd is not recovered
            assert got.impl_keys[ns] == whole.impl_keys.get(ns, set())
