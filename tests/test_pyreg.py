"""A package's Python registrations joined with its libraries' C++ ones (issue #14 item 4).

Real wheels from the real-world suite (``build/realworld/<case>/site``, installed by
``benchmarks/realworld/run.py --case NAME``) and the compile fixtures. Each claim about which
ops exist and where a kernel or fake impl comes from is checked against torch itself: a child
interpreter imports the package and asks the dispatcher.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report, Severity
from opdoctor.pipeline import run_check
from tests.conftest import BUILD, FIX
from tests.helpers import cli, dist_info
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

REALWORLD = BUILD / "realworld"
PYFIX = FIX / "compile" / "python"
NO_ENV = {k: v for k, v in os.environ.items()
          if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH")}


# Each real-world case's wheel as a test fixture (the Makefile fetches it: build/fixtures/pyreg/,
# realpkg/wheels/), used when the real-world suite has not installed the case here.
FIXTURE_OF = {
    "bitsandbytes-0.50.2": "pyreg/bitsandbytes-0.50.2",
    "torchao-0.14.1-version-guard": "pyreg/torchao-0.14.1",
    "torchao-0.18.0-cuda-ext-on-cpu": "pyreg/torchao-0.18.0",
    "torchvision-0.29.1-cu130": "pyreg/torchvision-0.29.1",
    "tensordict-0.11.0-missing-pyvers": "pyreg/tensordict-0.11.0",
    "torchaudio-2.11.1": "pyreg/torchaudio-2.11.1",
    "xformers-0.0.35": "realpkg/wheels/xformers-0.0.35",
    "fbgemm-gpu-cpu-1.8.0": "realpkg/wheels/fbgemm-gpu-cpu-1.8.0",
    "fbgemm-gpu-cpu-1.9.0": "realpkg/wheels/fbgemm-gpu-cpu-1.9.0",
}


def site(case: str) -> Path:
    """The case's wheel unpacked as a site directory: the real-world suite's install, else the
    Makefile's fixture; skipped with the reason when neither is here (pip could not fetch it)."""
    path = REALWORLD / case / "site"
    if path.is_dir():
        return path
    rel = FIXTURE_OF[case]
    fixture = FIX / rel / "site"
    reason = FIX / "skipped" / f"{Path(rel).name}.txt"
    if not fixture.is_dir() and reason.exists():
        pytest.skip(f"real wheel for {case} not fetched: {reason.read_text().strip()[:200]}")
    assert fixture.is_dir(), f"{fixture} is missing: run `make fixtures`"
    return fixture


def check(target: Path, package: str, site_dir: Path | None = None, **kw: Any) -> Report:
    env = dict(NO_ENV)
    if site_dir is not None:
        env["PYTHONPATH"] = str(site_dir)
    opts = CheckOptions(probe=False, env=tuple(env.items()), package=package,
                        cwd=str(site_dir or PYFIX), **kw)
    return run_check(str(target), opts)


def merged(report: Report) -> dict[str, dict[str, Any]]:
    regs = report.sections["import-chain"]["registrations"]
    return {o["name"]: o for o in regs}


def torch_truth(site_dir: Path, code: str) -> Any:
    """Run ``code`` (which prints JSON) in a child that imports torch with the case's site."""
    env = dict(NO_ENV, PYTHONPATH=str(site_dir))
    out = run_python("import json, torch\n" + code, env=env, timeout=240, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.probe
def test_bitsandbytes_ops_defined_and_implemented_in_python() -> None:
    """bitsandbytes defines every op with torch.library.define, registers CPU kernels with
    register_kernel and fakes with register_fake; its C library is called through ctypes. The
    inventory says so per op, the package stays clean, and --require compile counts the
    Python fake impls."""
    s = site("bitsandbytes-0.50.2")
    report = check(s / "bitsandbytes", "bitsandbytes", s, require=("compile",))
    ops = merged(report)
    op = ops["bitsandbytes::quantize_blockwise"]
    assert op["origin"] == "Python"
    assert any("_ops.py" in d for d in op["defined"])
    assert any("backends/cpu/ops.py" in o for o in op["keys"]["CPU"])
    # register_kernel(op, "default") is torch's CompositeExplicitAutograd
    assert any("backends/default/ops.py" in o for o in op["keys"]["CompositeExplicitAutograd"])
    assert op["fake"] and "register_fake" in op["fake"][0]
    assert not [f for f in report.findings if f.severity is Severity.ERROR]
    assert not [f for f in report.findings if f.code == "OD140"]
    # torch agrees: after `import bitsandbytes` the op exists, has a CPU kernel, and runs on
    # meta tensors (its fake impl).
    truth = torch_truth(s, """
import bitsandbytes
name = "bitsandbytes::int8_linear_matmul"
A = torch.empty(4, 8, dtype=torch.int8, device="meta")
B = torch.empty(16, 8, dtype=torch.int8, device="meta")
shape = list(torch.ops.bitsandbytes.int8_linear_matmul(A, B).shape)
q = "bitsandbytes::quantize_blockwise"
print(json.dumps([name in torch._C._dispatch_get_all_op_names(), shape,
                  torch._C._dispatch_has_kernel_for_dispatch_key(q, "CPU"),
                  torch._C._dispatch_has_kernel_for_dispatch_key(q, "CompositeExplicitAutograd")]))
""")
    assert truth == [True, [4, 16], True, True]


def _od116(capsys: pytest.CaptureFixture[str], target: Path) -> tuple[list[Any], list[str]]:
    """The findings of ``opdoctor check --static TARGET`` (as a user runs it) and OD116's
    severities."""
    findings = cli(capsys, "check", "-f", "json", "--static", str(target)).json()[
        "reports"][0]["findings"]
    return findings, [f["severity"] for f in findings if f["code"] == "OD116"]


@pytest.mark.probe
def test_a_ctypes_library_of_a_package_that_defines_its_ops_in_python_is_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21: `opdoctor check libbitsandbytes_cpu.so` warned OD116 ("loading it cannot make
    an operator exist") on bitsandbytes' healthy native library. bitsandbytes defines all its
    ops in Python and calls the library through ctypes: torch has none of its ops after loading
    the library alone, all of them after `import bitsandbytes`, which maps that very file. A
    library of a package whose Python defines every op it registers anything for is a note."""
    s = site("bitsandbytes-0.50.2")
    lib = s / "bitsandbytes" / "libbitsandbytes_cpu.so"
    truth = torch_truth(s, f"""
import ctypes
ctypes.CDLL({str(lib)!r})
ops = lambda: [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("bitsandbytes::")]
alone = ops()
import bitsandbytes
print(json.dumps([len(alone), len(ops()), {str(lib)!r} in open("/proc/self/maps").read()]))
""")
    assert truth[0] == 0 and truth[1] >= 19 and truth[2], truth
    findings, od116 = _od116(capsys, lib)
    assert od116 == ["info"], findings
    assert any("a native library of bitsandbytes, whose 19 operator(s) are defined in its "
               "Python" in f["message"] for f in findings)
    assert [f for f in findings if f["severity"] != "info"] == []


@pytest.mark.probe
def test_a_library_a_packages_python_expects_ops_from_keeps_its_warning(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same plain library in two packages: one defines its op in Python
    (torch.library.define) and registers a fake for it — its import works, the library is a
    note; the other only registers a fake for an op it expects the library to define — torch
    refuses ("operator mypkg::scale does not exist") and OD116 stays a warning."""
    src = tmp_path / "helper.c"
    src.write_text("int helper(int x) { return x + 1; }\n")
    load = ("import os, torch\n"
            "torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libhelper.so'))\n")
    fake = ("@torch.library.register_fake('mypkg::scale')\n"
            "def _(x):\n    return torch.empty_like(x)\n")
    outcomes = {}
    for name, init in (("defines", "import torch\ntorch.library.define('mypkg::scale', "
                        "'(Tensor x) -> Tensor')\n" + load + fake), ("expects", load + fake)):
        site = tmp_path / name / "site-packages"
        (site / "mypkg").mkdir(parents=True)
        (site / "mypkg" / "__init__.py").write_text(init)
        lib = site / "mypkg" / "libhelper.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
        real = run_python("import mypkg", env=dict(NO_ENV, PYTHONPATH=str(site)), timeout=240)
        outcomes[name] = (real.returncode, _od116(capsys, lib)[1])
        if name == "expects":
            assert "operator mypkg::scale does not exist" in real.stderr, real.stderr
    assert outcomes == {"defines": (0, ["info"]), "expects": (1, ["warning"])}


@pytest.mark.probe
def test_stable_kernels_for_python_defined_ops_are_not_no_registration() -> None:
    """torchao's _C_mxfp8 library registers only stable-ABI kernels; its ops are defined from
    torchao's Python (Library("torchao", "FRAGMENT").define). Judged alone it was "registers
    nothing" (OD101, an error); with its stable registrars read it has kernels for a namespace
    it does not define (OD104), and joined with the package neither is a fault: info only."""
    s = site("torchao-0.18.0-cuda-ext-on-cpu")
    lib = next((s / "torchao").glob("_C_mxfp8*.so"))
    report = check(lib, "torchao", s)
    cause1 = [f for f in report.findings if f.code in ("OD101", "OD103", "OD104")]
    assert cause1 and all(f.severity is Severity.INFO for f in cause1), cause1
    assert any("from Python" in f.message for f in cause1), [f.message for f in cause1]
    ns = report.sections["registration"]["namespaces"]["torchao"]
    assert ns.get("stable") and "CUDA" in ns["kernels"], ns
    ops = merged(report)
    assert ops["torchao::mx_fp8_bf16"]["origin"] == "Python"
    assert any("_C_mxfp8" in o for o in ops["torchao::mx_fp8_bf16"]["keys"]["CUDA"])
    # torch agrees: the library cannot load here (a CUDA build), yet `import torchao` defines
    # its ops from Python.
    truth = torch_truth(s, """
import torchao
names = torch._C._dispatch_get_all_op_names()
print(json.dumps(["torchao::swizzle_mm" in names, "torchao::mx_fp8_bf16" in names]))
""")
    assert truth[0] is True


def test_stable_schema_gets_its_namespace_and_fake_from_python() -> None:
    """torchvision's _C_stable.so keeps its schemas without a namespace (stable ABI); the
    Python fake impl names it: torchvision::nms is one op, defined in C++, fake in Python."""
    s = site("torchvision-0.29.1-cu130")
    report = check(s / "torchvision", "torchvision", s)
    ops = merged(report)
    nms = ops["torchvision::nms"]
    assert nms["origin"] == "C++"
    assert any(d.startswith("C++ _C_stable.so") for d in nms["defined"])
    assert nms["fake"] and "_meta_registrations.py" in nms["fake"][0]
    assert "?::nms" not in ops
    compiled = {o["name"]: o for o in report.sections["compile"]["ops"]}
    assert "?::nms" not in compiled
    src = (s / "torchvision" / "_meta_registrations.py").read_text()
    assert '@torch.library.register_fake("torchvision::nms")' in src


def test_compile_fixtures_join() -> None:
    """The compile fixtures: Python custom_op with and without fake, C++ op + Python fake."""
    fake = merged(check(PYFIX / "pyop_fake", "pyop_fake"))["pyfake::double"]
    assert fake["origin"] == "Python" and fake["fake"] and fake["autograd"]
    nofake = merged(check(PYFIX / "pyop_nofake", "pyop_nofake"))["pynofake::double"]
    assert nofake["origin"] == "Python" and not nofake["fake"]
    cop = merged(check(PYFIX / "cop_pyfake" / "libcop.so", "cop_pyfake"))["cop::scale"]
    assert cop["origin"] == "C++" and cop["defined"] == ["C++ libcop.so"]
    assert cop["keys"]["CPU"] == ["C++ libcop.so"]
    assert cop["fake"] and "fake.py" in cop["fake"][0]


def test_text_report_shows_the_joined_inventory() -> None:
    s = site("bitsandbytes-0.50.2")
    env = dict(NO_ENV, PYTHONPATH=str(s), OPDOCTOR_NO_PLUGINS="1")
    out = subprocess.run([sys.executable, "-m", "opdoctor", "check", "--static", "--package",
                          "bitsandbytes", "--env", f"PYTHONPATH={s}"], capture_output=True,
                         text=True, env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
                         timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "bitsandbytes::dequantize_4bit [CPU (Python)" in text
    assert "defined in Python" in text


def test_an_op_whose_namespace_the_library_does_not_keep_is_named_bare() -> None:
    """intel-extension-for-pytorch 2.8.0 stores ~200 schemas without their namespace and
    defines several (torch_ipex, deepspeed_comm, myops): the report names such an op by itself
    and says so, never as '?::ROIAlign_forward'."""
    from opdoctor.facts.pyreg import PackageOp, describe

    loose = PackageOp("?::ROIAlign_forward", defined=["C++ _C.so (schema in .rodata)"])
    assert describe(loose) == "ROIAlign_forward (namespace not recorded) defined in C++"
    known = PackageOp("myops::longrope", defined=["C++ _C.so"], keys={"CPU": ["C++ _C.so"]})
    assert describe(known) == "myops::longrope [CPU (C++)] defined in C++"


@pytest.mark.probe
def test_torchs_own_ops_registered_during_the_import_are_not_the_packages(
        tmp_path: Path) -> None:
    """bitsandbytes' and torchao's imports import torch modules that register torch's own
    ops (quantized_decomposed::, c10d_functional::, prims::); --smoke and --opcheck tested
    those and blamed the package. Ops defined from torch's own files are torch's; an op the
    package defines through torch.library (recorded at torch/library.py) stays the package's."""
    pkg = tmp_path / "ownops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import torch\nimport torch.ao.quantization.fx._decomposed\n\n"
        "lib = torch.library.Library('ownops', 'DEF')\n"
        "lib.define('twice(Tensor x) -> Tensor')\nlib.impl('twice', lambda x: x * 2, 'CPU')\n")
    code = ("import torch; b = set(torch._C._dispatch_get_all_op_names()); import ownops; "
            "print(sorted({n.split('::')[0] for n in "
            "set(torch._C._dispatch_get_all_op_names()) - b}))")
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert ran.stdout.strip() == "['ownops', 'quantized_decomposed']", ran.stderr
    report = run_check(str(pkg), CheckOptions(package="ownops", cwd=str(tmp_path), probe=True,
                                              smoke=True))
    probe = report.sections["probe"]
    assert [o["name"] for o in probe["ops"]] == ["ownops::twice"]
    assert all("quantized_decomposed" not in f.message for f in report.findings)


def test_schema_text_of_torch_namespaces_is_no_definition_of_the_package(tmp_path: Path) -> None:
    """torch-tensorrt's libtorchtrt.so carries TorchScript lowering patterns such as
    "aten::Bool(Tensor a) -> bool": read as definitions, the package's inventory said
    "aten::Bool defined in C++". torch defines aten:: and prim:: (a second
    TORCH_LIBRARY(aten) fails to load); the package's own namespace stays."""
    import subprocess
    import sys

    from opdoctor.facts.pyreg import read_library

    (tmp_path / "t.c").write_text(
        'const char *a = "aten::Bool(Tensor a) -> bool";\n'
        'const char *b = "prim::NumToTensor(Scalar a) -> Tensor";\n'
        'const char *c = "mytrt::execute_engine(Tensor[] inputs) -> Tensor[]";\n'
        "const char *get(int i) { return i == 0 ? a : i == 1 ? b : c; }\n")
    torch_lib = next(Path(sys.prefix).glob("lib/python3*/site-packages/torch/lib"))
    lib = tmp_path / "libtrt_like.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "t.c"),
                    f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10"], check=True, timeout=60)
    ops = read_library(str(lib))
    assert ops is not None
    assert ops.defines == {"mytrt": ["execute_engine"]}, ops.defines


@pytest.mark.probe
def test_a_cuda_requirement_one_import_down_is_the_verdict(tmp_path: Path) -> None:
    """compressai 1.2.8 beside torchvision 0.28.0+cu130 from PyPI and torch 2.13 CPU: its
    import runs `import torchvision.transforms`, torchvision swallows the failed load of its
    `_C.so` (libc10_cuda.so not found) and dies on "operator torchvision::nms does not exist".
    The verdict was compressai's import chain (cause 5) and the CUDA torchvision was never
    named (survey 18). A requirement's library whose load failed during the import, in the
    package the error names, is checked for its build variant: OD307 on torchvision, the
    import's failure its consequence. Here a package of compressai's shape beside the real
    torchvision 0.29.1+cu130 wheel."""
    tv_site = site("torchvision-0.29.1-cu130")
    own = tmp_path / "own"
    (own / "cailike").mkdir(parents=True)
    (own / "cailike" / "__init__.py").write_text("import torchvision.transforms  # noqa: F401\n")
    dist_info(own, "cailike", "1.0", ["cailike/__init__.py"], ("torchvision",))
    path = f"{own}{os.pathsep}{tv_site}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = path
    real = run_python("import torch, cailike", env=env, timeout=300)
    assert "operator torchvision::nms does not exist" in real.stderr, real.stderr[-2000:]
    report = run_check(str(own / "cailike"), CheckOptions(
        probe=True, env=tuple(env.items()), package="cailike", cwd="/"))
    roots = [f.code for f in report.diagnosis.root_findings]
    assert roots == ["OD307"], [(f.code, f.message) for f in report.findings]
    od307 = report.diagnosis.root_findings[0]
    assert od307.message.startswith("`import cailike` fails in its requirement torchvision, "
                                    "built for a CUDA 13 build of torch")
    assert any("libc10_cuda.so" in e for e in od307.evidence), od307.evidence
    assert "OD511" in [f.code for f in report.diagnosis.consequences.get("OD307", ())]


@pytest.mark.probe
def test_a_dependency_whose_own_preload_failed_is_the_builds_consequence(
        tmp_path: Path) -> None:
    """cuequivariance-ops-torch-cu13 0.13: its extension NEEDs libcue_ops.so, which the
    package's import preloads by path from cuequivariance_ops/lib/ — and that preload fails on
    libnvrtc.so.13 (CUDA 13). The extension (a CUDA 13 build: libc10_cuda.so) then finds no
    libcue_ops.so. The headline was "libcue_ops.so is not found: patchelf" (cause 2), the CUDA
    build second (survey 18). The probe saw the preload fail: OD201 says so, and what that
    load missed — a CUDA library — makes it the CUDA build's consequence. Built here with the
    same NEEDED names (stub libraries at link time, removed)."""
    import shutil

    s = tmp_path / "site"
    pkg, dep = s / "cuelike", s / "cueops" / "lib"
    pkg.mkdir(parents=True)
    dep.mkdir(parents=True)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "s.c").write_text("int stub_fn(void) { return 0; }\n")
    for so in ("libc10_cuda.so", "libnvrtc.so.13"):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{so}", "-o", str(stub / so),
                        str(stub / "s.c")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcueops.so", "-o",
                    str(dep / "libcueops.so"), str(stub / "s.c"), "-Wl,--no-as-needed",
                    str(stub / "libnvrtc.so.13")], check=True, timeout=60)
    torch_lib = Path(__import__("importlib").util.find_spec("torch").origin).parent / "lib"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "ext.so"), str(stub / "s.c"),
                    "-Wl,--no-as-needed", str(dep / "libcueops.so"), str(stub / "libc10_cuda.so"),
                    "-L", str(torch_lib), "-lc10"], check=True, timeout=60)
    shutil.rmtree(stub)
    (s / "cueops" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        "import ctypes, os\nimport torch\n"
        "_here = os.path.dirname(__file__)\n"
        "try:\n    ctypes.CDLL(os.path.join(_here, '..', 'cueops', 'lib', 'libcueops.so'))\n"
        "except OSError as exc:\n    print('Error while loading libcueops.so:', exc)\n"
        "torch.ops.load_library(os.path.join(_here, 'ext.so'))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(s)
    real = run_python("import torch, cuelike", env=env, timeout=300)
    assert "libnvrtc.so.13: cannot open shared object file" in real.stdout, real.stdout
    assert "libcueops.so: cannot open shared object file" in real.stderr, real.stderr[-2000:]
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="cuelike", cwd="/"))
    assert [f.code for f in report.diagnosis.root_findings] == ["OD307"], \
        [(f.code, f.message) for f in report.findings]
    # static (OD201) or the real loader's (OD220): the package's path to it is computed here
    od201 = next(f for f in report.findings
                 if f.code in ("OD201", "OD220") and f.subject == "libcueops.so")
    assert "the package's import loaded it from" in od201.message and \
        "libnvrtc.so.13" in od201.message, od201.message
    assert od201 in report.diagnosis.consequences.get("OD307", ())
