"""Python import chain (cause 5): real packages on disk, built by the Makefile."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report
from opdoctor.pipeline import run_check
from tests.conftest import FIX, PKG_DIR, fixture
from tests.helpers import cli

PYFIX = FIX / "python"


def chain(cwd: Path, package: str, *, probe: bool = True, env: dict[str, str] | None = None,
          path: Path | None = None) -> Report:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    base.update(env or {})
    opts = CheckOptions(package=package, cwd=str(cwd), probe=probe, env=tuple(base.items()))
    target = path or (cwd / package)
    return run_check(str(target), opts)


def codes(report: Report, prefix: str = "OD5") -> list[str]:
    return sorted(f.code for f in report.findings if f.code.startswith(prefix))


@pytest.mark.probe
def test_reference_package_clean_with_chain() -> None:
    report = chain(PKG_DIR, "myop", path=PKG_DIR / "myop" / "libmyop.so")
    assert report.findings == []
    sec = report.sections["import-chain"]
    assert sec["winner"] == str(PKG_DIR / "myop")
    link = sec["links"][0]
    assert link["kind"] == "load_library" and link["resolved"] == [str(PKG_DIR / "myop/libmyop.so")]
    assert [o["name"] for o in sec["ops"]] == ["myop::weighted_sum"]
    assert sec["imported"][0]["module"] == "myop"
    assert str(PKG_DIR / "myop" / "libmyop.so") in sec["libraries_loaded"]


@pytest.mark.probe
def test_reference_text_chain(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--cwd", str(PKG_DIR), "--package", "myop")
    assert res.code == 0, res.out
    assert "import chain: ✓ import myop →" in res.out
    assert "✓ ops registered by the import: myop::weighted_sum" in res.out


def test_so_inside_package_walks_up(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "-f", "json", "--static", str(PKG_DIR / "myop" / "libmyop.so"))
    rep = res.json()["reports"][0]
    assert rep["sections"]["import-chain"]["package"] == "myop"
    assert {c["cause"]: c["state"] for c in rep["causes"]}[5] == "clean"


@pytest.mark.probe
def test_never_imports_extension() -> None:
    report = chain(PYFIX / "noimport", "myop")
    assert codes(report) == ["OD505"]
    assert "never imports or loads libmyop.so" in report.findings[0].message


@pytest.mark.probe
def test_shadowed_by_source_checkout() -> None:
    report = chain(PYFIX / "shadow_src", "myop", env={"PYTHONPATH": str(PKG_DIR)})
    assert "OD502" in codes(report) and "OD510" in codes(report)
    f = next(f for f in report.findings if f.code == "OD502")
    assert "shadow_src/myop, which has no compiled extension" in f.message
    assert any(f"hidden: {PKG_DIR / 'myop'}" in e for e in f.evidence)
    # Without the shadow on sys.path the installed copy wins and all is well.
    ok = chain(PKG_DIR, "myop", env={"PYTHONPATH": str(PKG_DIR)})
    assert codes(ok) == []


@pytest.mark.probe
def test_built_for_another_python() -> None:
    report = chain(PYFIX / "wrongabi", "myext")
    assert "OD503" in codes(report)
    f = next(f for f in report.findings if f.code == "OD503")
    assert "only _C.cpython-3" in f.message and "this interpreter imports _C" in f.message


@pytest.mark.probe
def test_pyinit_mismatch() -> None:
    report = chain(PYFIX / "pyinit", "myext")
    assert "OD504" in codes(report)
    f = next(f for f in report.findings if f.code == "OD504")
    assert "does not export PyInit__C" in f.message and "PyInit_other" in f.evidence[0]
    od511 = next(f for f in report.findings if f.code == "OD511")
    assert "dynamic module does not define module export function (PyInit__C)" in od511.message


@pytest.mark.probe
def test_swallowed_import_error_is_surfaced() -> None:
    report = chain(PYFIX / "swallow", "myext")
    assert {"OD509", "OD512"} <= set(codes(report))
    f = next(f for f in report.findings if f.code == "OD512")
    assert "undefined symbol: missing_helper" in f.message
    static = chain(PYFIX / "swallow", "myext", probe=False)
    assert codes(static) == ["OD509"]


@pytest.mark.probe
def test_partial_install_record() -> None:
    report = chain(PYFIX / "partial", "myop")
    assert {"OD508", "OD510"} <= set(codes(report))
    f = next(f for f in report.findings if f.code == "OD508")
    assert "missing: myop/libmyop.so" in f.evidence


def test_record_hash_changed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(PYFIX / "partial", site)
    shutil.copy(PKG_DIR / "myop" / "libmyop.so", site / "myop" / "libmyop.so")
    with open(site / "myop" / "__init__.py", "a") as fh:
        fh.write("# edited after install\n")
    report = chain(site, "myop", probe=False)
    f = next(f for f in report.findings if f.code == "OD508")
    assert "changed since install (hash differs): myop/__init__.py" in f.evidence


@pytest.mark.probe
def test_namespace_package() -> None:
    report = chain(PYFIX / "namespace", "myop")
    assert codes(report) == ["OD506"]


@pytest.mark.probe
def test_relative_import_in_script() -> None:
    report = chain(PYFIX / "scriptrel", "myext")
    assert codes(report) == ["OD507"]
    assert report.findings[0].fix == "run it as python -m myext.tool"


def test_package_not_found(tmp_path: Path) -> None:
    report = chain(tmp_path, "no_such_package_xyz", probe=False, path=tmp_path)
    assert codes(report) == ["OD501"]


def test_package_dir_without_library(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "-f", "json", "--static", str(PYFIX / "shadow_src" / "myop"))
    rep = res.json()["reports"][0]
    assert "OD510" in [f["code"] for f in rep["findings"]]
    skipped = {c["name"]: c["reason"] for c in rep["checks"] if c["status"] == "skipped"}
    assert skipped["symbols"] == "the package has no compiled library to analyse"


@pytest.mark.probe
def test_fixture_errors_of_python_are_explained() -> None:
    from opdoctor.explain import explain_text

    report = chain(PYFIX / "pyinit", "myext")
    od511 = next(f for f in report.findings if f.code == "OD511")
    assert explain_text(od511.message).cause == 5
    assert fixture("integrity/empty.so").exists()
