"""torch.compile readiness (issue #19): fake kernels, pystubs, autograd, opcheck.

Each prediction is checked against real torch behaviour: a separate interpreter loads the
fixture and calls the op on meta tensors, which fails exactly when opdoctor says the op has no
fake kernel. Fixtures: tests/fixtures/compile/ (built by `make compile`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report, Severity
from opdoctor.pipeline import run_check
from tests.conftest import FIX, fixture, fresh_probes
from tests.helpers import cli
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

NO_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
PYFIX = FIX / "compile" / "python"


def check(path: Path, *, probe: bool = False, package: str | None = None,
          **kw: Any) -> Report:
    opts = CheckOptions(probe=probe, env=tuple(NO_ENV.items()), package=package,
                        cwd=str(PYFIX) if package else "", **kw)
    return run_check(str(path), opts)


def compile_codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings if f.code.startswith("OD14"))


def ops(report: Report) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in report.sections["compile"]["ops"]}


# A separate interpreter, as a user would run it: load, then call each op on meta tensors.
_TRUTH = r"""
import importlib, json, sys, torch
out = {}
for what in sys.argv[1:]:
    if what.endswith(".so"):
        torch.ops.load_library(what)
    else:
        importlib.import_module(what)
for name in torch._C._dispatch_get_all_op_names():
    ns, op = name.split("::")
    if ns not in ("cop", "pynofake", "pyfake"):
        continue
    fn = getattr(getattr(torch.ops, ns), op).default
    x = torch.ones(2, device="meta")
    try:
        fn(x, 0.5) if ns == "cop" else fn(x)
        out[name] = "ok"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def meta_call(*what: str) -> dict[str, str]:
    """What calling each fixture op on meta tensors does in a fresh interpreter."""
    p = run_python(_TRUTH, *what, timeout=300, cwd=PYFIX, env=NO_ENV)
    assert p.returncode == 0, p.stderr[-2000:]
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


# ------------------------------------------------------------------ static (no probe)
def test_cpp_op_without_meta_is_flagged() -> None:
    lib = fixture("compile/nometa.so")
    report = check(lib, require=("compile",))
    assert compile_codes(report) == ["OD140"]
    f = report.findings[0]
    assert f.severity is Severity.ERROR and f.subject == "cop::scale"
    assert "TORCH_LIBRARY_IMPL(cop, Meta, m)" in f.fix
    assert ops(report)["cop::scale"]["fake"] is False
    # Without --require compile it is a warning (eager use works) …
    warn = check(lib, opcheck=True)
    assert [f.severity for f in warn.findings if f.code == "OD140"] == [Severity.WARNING]
    # … and without asking about compile at all, only the table is published.
    plain = check(lib)
    assert compile_codes(plain) == [] and ops(plain)["cop::scale"]["fake"] is False


@pytest.mark.parametrize("name", ["meta.so", "meta_autograd.so"])
def test_cpp_op_with_meta_is_clean(name: str) -> None:
    report = check(fixture(f"compile/{name}"), require=("compile",))
    assert compile_codes(report) == []
    op = ops(report)["cop::scale"]
    assert op["fake"] is True and op["fake_via"] == "Meta kernel"
    assert op["autograd"] is (name == "meta_autograd.so")


def test_stable_abi_registrars() -> None:
    ok = check(fixture("compile/stable_meta.so"), require=("compile",))
    assert compile_codes(ok) == [] and ops(ok)["sop::twin"]["keys"] == ["CPU", "Meta"]
    bad = check(fixture("compile/stable_nometa.so"), require=("compile",))
    assert compile_codes(bad) == ["OD140"]
    assert next(f for f in bad.findings if f.code == "OD140").subject == "sop::twin"
    # Stripped: no .symtab, but the stable macros leave the key strings in .rodata.
    stripped = check(fixture("compile/stable_meta_stripped.so"), require=("compile",))
    assert compile_codes(stripped) == []
    # The namespace comes back from the literals next to the keys ("sop\\0CPU\\0Meta").
    assert ops(stripped)["sop::twin"]["fake"] is True


def test_python_custom_op_static() -> None:
    nofake = check(PYFIX / "pyop_nofake", package="pyop_nofake", require=("compile",))
    assert compile_codes(nofake) == ["OD140"]
    op = ops(nofake)["pynofake::double"]
    assert op["origin"] == "Python" and op["observed"] == "static"
    assert "register_fake" in nofake.findings[0].fix
    fake = check(PYFIX / "pyop_fake", package="pyop_fake", require=("compile",))
    assert compile_codes(fake) == []
    op = ops(fake)["pyfake::double"]
    assert op["fake"] is True and op["autograd"] is True


def test_python_fake_for_cpp_op_without_pystub_static() -> None:
    report = check(PYFIX / "cop_pyfake" / "libcop.so", package="cop_pyfake", require=("compile",))
    assert compile_codes(report) == ["OD142"]
    f = next(f for f in report.findings if f.code == "OD142")
    assert "cop_pyfake.fake" in f.message
    assert 'm.set_python_module("cop_pyfake.fake")' in f.fix
    assert ops(report)["cop::scale"]["fake"] is True  # the Python fake impl counts


def test_require_rejects_unknown_value(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "--require", "speed", str(fixture("compile/meta.so")))
    assert res.code == 3 and "require must be one of compile" in res.err


def test_text_report_has_one_line_per_op(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "--require", "compile",
              str(fixture("compile/nometa.so")))
    assert res.code == 1
    assert "compile: cop::scale [CPU] fake ✗ autograd ✗ (static)" in res.out
    js = cli(capsys, "check", "--static", "-f", "json", str(fixture("compile/meta.so")))
    data = js.json()
    report = data["reports"][0] if "reports" in data else data
    assert report["sections"]["compile"]["ops"][0]["fake"] is True


def test_many_ops_get_a_few_compile_lines_and_a_count() -> None:
    """vllm 0.34's _C has 148 ops: 148 ``compile:`` lines under a clean cause 1, in each of the
    package's twelve reports. The text shows the first few and counts the rest (what is not
    compile-ready among them); -v shows each."""
    import io

    from opdoctor.report.layout import Printer
    from opdoctor.report.text import COMPILE_SHOWN, _compile_lines

    ops = [{"name": f"ns::op{i}", "keys": ["CPU"], "fake": i % 2 == 0, "autograd": False,
            "observed": "static"} for i in range(12)]

    def lines(verbose: bool) -> list[str]:
        out = io.StringIO()
        _compile_lines(Printer(out, None), {"ops": ops}, verbose)
        return out.getvalue().splitlines()

    short = lines(False)
    assert len(short) == COMPILE_SHOWN + 1 and "ns::op0 [CPU] fake ✓" in short[0]
    assert short[-1].endswith("+ 8 more ops (fake ✗ 4, autograd ✗ 8; -v shows each)")
    assert len(lines(True)) == 12
    ops[COMPILE_SHOWN + 1:] = []  # one more than shown: printed, not counted
    assert len(lines(False)) == COMPILE_SHOWN + 1 and "more ops" not in lines(False)[-1]


# ------------------------------------------------------------------ probe + real torch
@pytest.mark.probe
def test_an_opcheck_probe_forked_reports_what_a_fresh_child_reports() -> None:
    """--opcheck probes fork from the zygote too (torch._dynamo is imported in the fork): for
    a library whose opcheck fails (nometa.so) and one whose opcheck passes (meta_autograd.so),
    the forked probe's compile findings and per-op opcheck verdicts are the fresh child's."""
    for name in ("nometa.so", "meta_autograd.so"):
        lib = fixture(f"compile/{name}")
        forked = check(lib, probe=True, opcheck=True)
        with fresh_probes():
            fresh = check(lib, probe=True, opcheck=True)
        assert forked.sections["probe"]["forked"] is True, name
        assert fresh.sections["probe"]["forked"] is False, name
        assert compile_codes(forked) == compile_codes(fresh), name
        verdicts = [{o: {t: r["ok"] for t, r in v["opcheck"].items()}
                     for o, v in ops(rep).items()} for rep in (forked, fresh)]
        assert verdicts[0] == verdicts[1] and verdicts[0], name


@pytest.mark.probe
def test_nometa_opcheck_and_ground_truth() -> None:
    lib = fixture("compile/nometa.so")
    truth = meta_call(str(lib))
    assert "no fake impl or Meta kernel registered" in truth["cop::scale"]
    report = check(lib, probe=True, opcheck=True)
    # OD143 too: the CPU kernel calls x.mul(alpha), so its output requires grad without an
    # autograd kernel — opcheck's own test_autograd_registration verdict (inputs with grad).
    assert compile_codes(report) == ["OD140", "OD143"]
    op = ops(report)["cop::scale"]
    assert op["observed"] == "probe" and op["fake"] is False and op["autograd"] is False
    assert op["opcheck"]["test_schema"]["ok"] is True
    assert "UnsupportedOperatorException" in op["opcheck"]["test_faketensor"]["error"]
    assert "requires_grad=True" in op["opcheck"]["test_autograd_registration"]["error"]
    od140 = next(f for f in report.findings if f.code == "OD140")
    assert any("opcheck test_faketensor" in e for e in od140.evidence)


@pytest.mark.probe
def test_meta_autograd_opcheck_all_pass_and_ground_truth() -> None:
    lib = fixture("compile/meta_autograd.so")
    assert meta_call(str(lib)) == {"cop::scale": "ok"}
    report = check(lib, probe=True, opcheck=True, require=("compile",))
    assert compile_codes(report) == []
    op = ops(report)["cop::scale"]
    assert op["fake"] is True and op["autograd"] is True and "requires_grad" in op["inputs"]
    assert {t: r["ok"] for t, r in op["opcheck"].items()} == {
        "test_schema": True, "test_autograd_registration": True, "test_faketensor": True,
        "test_aot_dispatch_dynamic": True}
    assert report.sections["compile"]["opcheck"]["ran"] is True


@pytest.mark.probe
def test_pystub_module_missing() -> None:
    lib = fixture("compile/pystub_missing.so")
    truth = meta_call(str(lib))["cop::scale"]
    assert "could not find the fake impl" in truth and "'cop_fake_impls_missing'" in truth
    report = check(lib, probe=True, opcheck=True)
    assert compile_codes(report) == ["OD141", "OD143"]
    f = next(f for f in report.findings if f.code == "OD141")
    assert "cop_fake_impls_missing" in f.message and "ModuleNotFoundError" in f.message
    assert ops(report)["cop::scale"]["pystub"] == "cop_fake_impls_missing"


@pytest.mark.probe
def test_python_custom_ops_probe_and_ground_truth() -> None:
    truth = meta_call("pyop_nofake", "pyop_fake")
    assert "no fake impl registered" in truth["pynofake::double"]
    assert truth["pyfake::double"] == "ok"
    nofake = check(PYFIX / "pyop_nofake", probe=True, package="pyop_nofake", opcheck=True)
    assert compile_codes(nofake) == ["OD140"]
    op = ops(nofake)["pynofake::double"]
    # A custom_op always has a Meta kernel (that raises): the key is not the answer.
    assert "Meta" in op["keys"] and op["fake"] is False and op["observed"] == "probe"
    # ... and the report says which Meta that is, beside OD140 (not "[Meta, …]" alone).
    probed = {o["name"]: o for o in nofake.sections["probe"]["ops"]}
    assert probed["pynofake::double"].get("meta_stub") is True
    assert "pynofake::double [Meta: custom_op's stub, no fake, " in _text(nofake)
    fake = check(PYFIX / "pyop_fake", probe=True, package="pyop_fake", opcheck=True)
    assert compile_codes(fake) == []
    assert all(r["ok"] for r in ops(fake)["pyfake::double"]["opcheck"].values())
    probed = {o["name"]: o for o in fake.sections["probe"]["ops"]}
    assert "meta_stub" not in probed["pyfake::double"]
    assert "pyfake::double [Meta, " in _text(fake) and "stub" not in _text(fake)


def _text(report: Report) -> str:
    """The text report, as a terminal-less run prints it."""
    import io

    from opdoctor.checks import load_registry
    from opdoctor.model import Severity
    from opdoctor.report import RenderContext, text

    out = io.StringIO()
    text.render([report], RenderContext(load_registry().catalog, Severity.ERROR, 1), out)
    return " ".join(out.getvalue().split())


@pytest.mark.probe
def test_python_fake_for_cpp_op_without_pystub_probe() -> None:
    truth = meta_call("cop_pyfake")
    assert truth == {"cop::scale": "ok"}  # works — because __init__ imports .fake
    report = check(PYFIX / "cop_pyfake" / "libcop.so", probe=True, package="cop_pyfake",
                   opcheck=True)
    assert compile_codes(report) == ["OD142", "OD143"]
    od142 = next(f for f in report.findings if f.code == "OD142")
    assert any("_dispatch_pystub returned None" in e for e in od142.evidence)
    # Loaded without the package, the op has no fake kernel: what OD142 warns about.
    assert "no fake impl or Meta kernel" in meta_call(str(PYFIX / "cop_pyfake" / "libcop.so"))[
        "cop::scale"]


def test_autograd_function_at_backend_key_static() -> None:
    report = check(PYFIX / "pyop_badgrad", package="pyop_badgrad", require=("compile",))
    assert compile_codes(report) == ["OD143"]
    assert "torch.autograd.Function at a backend key" in report.findings[0].message
    op = ops(report)["pybadgrad::scale"]
    assert op["keys"] == ["CPU"] and op["fake"] is True and op["autograd"] is False
    # The compile-ready custom_op with register_autograd is not flagged.
    assert compile_codes(check(PYFIX / "pyop_fake", package="pyop_fake",
                               require=("compile",))) == []


@pytest.mark.probe
def test_autograd_function_at_backend_key_opcheck() -> None:
    report = check(PYFIX / "pyop_badgrad", probe=True, package="pyop_badgrad", opcheck=True)
    assert compile_codes(report) == ["OD143"]  # one finding: the static site is its evidence
    f = report.findings[0]
    assert "opcheck" in f.message and any("__init__.py:28" in e for e in f.evidence)
    tests = ops(report)["pybadgrad::scale"]["opcheck"]
    assert tests["test_faketensor"]["ok"] is True
    assert tests["test_autograd_registration"]["ok"] is False


@pytest.mark.parametrize(("message", "code"), [
    ("NotImplementedError: cop::scale: attempted to run this operator with Meta tensors, but "
     "there was no fake impl or Meta kernel registered.", "OD140"),
    ("NotImplementedError: cop::scale: We could not find the fake impl for this operator. The "
     "operator specified that you may need to import the 'cop_fake_impls_missing' Python "
     "module to load the fake impl.", "OD141"),
])
def test_explain_names_the_compile_codes(capsys: pytest.CaptureFixture[str], message: str,
                                         code: str) -> None:
    # The messages torch gave for the nometa / pystub_missing fixtures (see the probe tests).
    res = cli(capsys, "explain", message)
    assert res.code == 0 and "Cause 1" in res.out and code in res.out
    assert "opdoctor check --opcheck" in res.out


@pytest.mark.probe
def test_a_fake_registered_through_the_packages_own_decorator_counts(tmp_path: Path) -> None:
    """torchao 0.18's ops.py registers its fake impls through its own decorator factory,
    ``register_custom_op(name)`` → ``torch.library.register_fake(f"{name}")(func)``: read as no
    fake at all, every op showed "fake ✗". The factory is followed to the API it calls; an op
    without one still shows ✗. torch itself confirms both on meta tensors."""
    pkg = tmp_path / "decofake"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import torch\n"
        "lib = torch.library.Library('decofake', 'DEF')\n"
        "lib.define('double(Tensor x) -> Tensor')\n"
        "lib.define('triple(Tensor x) -> Tensor')\n"
        "lib.impl('double', lambda x: x * 2, 'CPU')\n"
        "lib.impl('triple', lambda x: x * 3, 'CPU')\n"
        "def register_custom_op(name):\n"
        "    def decorator(func):\n"
        "        return torch.library.register_fake(f'{name}')(func)\n"
        "    return decorator\n"
        "@register_custom_op('decofake::double')\n"
        "def _(x):\n"
        "    return torch.empty_like(x)\n")
    truth = run_python(
        "import torch, decofake\nx = torch.ones(2, device='meta')\n"
        "print(torch.ops.decofake.double(x).shape)\n"
        "try:\n    torch.ops.decofake.triple(x)\nexcept Exception as e:\n"
        "    print('triple', type(e).__name__)\n",
        timeout=300, cwd=tmp_path, env=NO_ENV)
    assert truth.returncode == 0, truth.stderr[-2000:]
    assert "torch.Size([2])" in truth.stdout and "triple NotImplementedError" in truth.stdout
    report = run_check(str(pkg), CheckOptions(probe=False, env=tuple(NO_ENV.items()),
                                              package="decofake", cwd=str(tmp_path)))
    seen = ops(report)
    assert seen["decofake::double"]["fake"] is True, seen["decofake::double"]
    assert seen["decofake::triple"]["fake"] is False
