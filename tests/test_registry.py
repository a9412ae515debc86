"""Check registry: gating on broken files, crashing checks, undeclared codes, real plugins."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from opdoctor.checks import BUILTIN_CHECKS, Registry, load_registry
from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc, CodeError, build_catalog
from opdoctor.facts import Facts
from opdoctor.model import Cause, CheckStatus, Finding, Severity
from opdoctor.pipeline import Selection, run_check
from tests.conftest import fixture, reference
from tests.helpers import cli_proc

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

TEST_DOC = CodeDoc("OD199", "test code", Severity.ERROR, what="w", why="y", example="e",
                   fix="f", references=("r",))


def _registry(*extra: Check) -> Registry:
    base = load_registry()
    checks = (*base.checks, *extra)
    return Registry(checks, build_catalog(c.codes for c in checks), ())


def _always(facts: Facts) -> list[Finding]:
    return [TEST_DOC.finding(facts.path, "always fires", ("evidence",))]


def test_elf_checks_are_skipped_with_reason_on_broken_file() -> None:
    check = Check("always", "test", (Cause.REGISTRATION,), (TEST_DOC,), _always)
    report = run_check(str(fixture("integrity/not_elf.so")), registry=_registry(check))
    run = next(c for c in report.checks if c.name == "always")
    assert run.status is CheckStatus.SKIPPED
    assert run.reason == "the file is not ELF"
    assert [f.code for f in report.findings] == ["OD405"]
    # On the healthy reference the same check runs and its finding is reported.
    report = run_check(str(reference()), registry=_registry(check))
    assert [f.code for f in report.findings] == ["OD199"]


def test_crashing_check_is_reported_not_fatal() -> None:
    def boom(facts: Facts) -> list[Finding]:
        raise ZeroDivisionError("boom")

    check = Check("boom", "test", (Cause.REGISTRATION,), (TEST_DOC,), boom)
    report = run_check(str(reference()), registry=_registry(check))
    run = next(c for c in report.checks if c.name == "boom")
    assert run.status is CheckStatus.FAILED
    assert "ZeroDivisionError: boom" in run.reason
    assert any(c.name == "integrity" and c.status is CheckStatus.RAN for c in report.checks)
    # The healthy reference has no finding, but the crashed check ruled nothing out.
    assert report.diagnosis.cause == 0 and report.diagnosis.confidence == "low"
    assert report.diagnosis.summary.startswith(
        "No problem found by the checks that ran; 1 crashed (boom: opdoctor's bug"), \
        report.diagnosis.summary


def test_undeclared_code_is_rejected() -> None:
    def stray(facts: Facts) -> list[Finding]:
        return [Finding("OD198", Severity.ERROR, Cause.REGISTRATION, facts.path, "stray")]

    check = Check("stray", "test", (Cause.REGISTRATION,), (TEST_DOC,), stray)
    report = run_check(str(reference()), registry=_registry(check))
    run = next(c for c in report.checks if c.name == "stray")
    assert run.status is CheckStatus.FAILED
    assert "undeclared code(s) OD198" in run.reason
    assert report.findings == []


def test_select_and_ignore_prefixes() -> None:
    path = str(fixture("integrity/textrel.so"))
    assert [f.code for f in run_check(path, selection=Selection(("OD41",))).findings] == ["OD410"]
    assert run_check(path, selection=Selection(ignore=("OD410",))).findings == []
    assert run_check(path, selection=Selection(("OD1",))).findings == []


def test_duplicate_code_rejected() -> None:
    with pytest.raises(CodeError, match="declared twice"):
        build_catalog([[TEST_DOC], [TEST_DOC]])


def test_every_builtin_code_is_documented() -> None:
    catalog = build_catalog(c.codes for c in BUILTIN_CHECKS)
    assert catalog, "no codes declared"
    for doc in catalog.values():
        doc.validate()  # raises when a section is missing
        assert doc.cause == Cause(int(doc.code[2]))


def test_missing_section_fails_validation() -> None:
    bad = CodeDoc("OD198", "t", Severity.ERROR, what="w", why="", example="e", fix="f",
                  references=("r",))
    with pytest.raises(CodeError, match="Why it matters"):
        bad.validate()
    with pytest.raises(CodeError, match="not of the form"):
        CodeDoc("OD601", "t", Severity.ERROR, "w", "y", "e", "f", ("r",)).validate()


PLUGIN = '''
from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.model import Cause, Severity

DOC = CodeDoc("OD199", "team policy: library must be named lib*.so", Severity.ERROR,
              what="the file name starts with lib", why="our loader script globs lib*.so",
              example="myop.so", fix="rename it", references=("internal wiki",))

def run(facts):
    import os
    if not os.path.basename(facts.path).startswith("lib"):
        yield DOC.finding(facts.path, "library name does not start with lib",
                          (os.path.basename(facts.path),))

CHECK = Check("team-naming", "library naming policy", (Cause.REGISTRATION,), (DOC,), run)
BROKEN = 42
'''


def _install_plugin(root: Path, entry: str) -> dict[str, str]:
    """A real installed distribution (dist-info + entry point) on PYTHONPATH."""
    (root / "odplugin_demo.py").write_text(PLUGIN)
    dist = root / "odplugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: odplugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[opdoctor.checks]\n{entry}\n")
    return {"PYTHONPATH": str(root)}


@pytest.mark.probe
def test_plugin_via_entry_point_reports_its_finding(tmp_path: Path) -> None:
    env = _install_plugin(tmp_path, "team = odplugin_demo:CHECK")
    renamed = tmp_path / "myop.so"
    renamed.write_bytes(reference().read_bytes())
    res = cli_proc("check", str(renamed), env=env)
    assert res.code == 1, res.out + res.err
    assert "OD199" in res.out and "library name does not start with lib" in res.out
    listed = cli_proc("check", "--list-checks", env=env)
    assert "team-naming" in listed.out
    assert "OD199" in cli_proc("explain", "OD199", env=env).out
    # The healthy reference keeps its name and stays clean with the plugin installed.
    assert cli_proc("check", str(reference()), env=env).code == 0


@pytest.mark.probe
def test_broken_plugin_is_reported_not_fatal(tmp_path: Path) -> None:
    env = _install_plugin(tmp_path, "bad = odplugin_demo:BROKEN")
    res = cli_proc("check", str(reference()), env=env)
    assert res.code == 0
    assert "plugin 'bad' not loaded" in res.err and "not opdoctor Check" in res.err


@pytest.mark.probe
def test_static_check_does_not_import_torch() -> None:
    code = ("import sys; from opdoctor.cli import main; rc = main(['check', sys.argv[1]]); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, str(reference())], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not textwrap.dedent(p.stderr).strip()


def test_builtin_codes_leave_the_plugin_range_free() -> None:
    """ODx95–ODx99 stay free for third-party checks (README "Third-party checks")."""
    from opdoctor.checks import load_registry

    taken = [c for c in load_registry(with_plugins=False).catalog if int(c[2:]) % 100 >= 95]
    assert taken == []
