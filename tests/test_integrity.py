"""Integrity family (cause 4): each broken fixture yields its own code; the reference is clean."""

from __future__ import annotations

import pytest

from opdoctor.model import Cause, Severity
from opdoctor.pipeline import run_check
from tests.conftest import fixture, reference
from tests.helpers import cli

# fixture file → (code, severity, words the message must contain)
CASES = {
    "empty.so": ("OD404", Severity.ERROR, "empty"),
    "truncated.so": ("OD406", Severity.ERROR, "truncated"),
    "not_elf.so": ("OD405", Severity.ERROR, "text file"),
    "lfs_pointer.so": ("OD405", Severity.ERROR, "Git LFS pointer"),
    "relocatable.so": ("OD409", Severity.ERROR, "relocatable object"),
    "executable.so": ("OD409", Severity.ERROR, "executable"),
    "pie.so": ("OD409", Severity.ERROR, "position-independent executable"),
    "elf32.so": ("OD407", Severity.ERROR, "ELF32"),
    "aarch64.so": ("OD408", Severity.ERROR, "AArch64"),
    "textrel.so": ("OD410", Severity.WARNING, "text relocations"),
    "execstack.so": ("OD412", None, "executable stack"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_yields_its_code(name: str) -> None:
    code, severity, words = CASES[name]
    report = run_check(str(fixture(f"integrity/{name}")))
    codes = [f.code for f in report.findings]
    assert codes == [code], f"{name}: expected exactly [{code}], got {codes}"
    finding = report.findings[0]
    assert finding.cause is Cause.BUILD
    assert words in finding.message
    assert finding.evidence, "a finding must carry evidence"
    assert finding.fix
    if severity is not None:
        assert finding.severity is severity


def test_execstack_severity_follows_glibc() -> None:
    """glibc >= 2.41 refuses executable-stack libraries: then it is an error, else a warning."""
    from opdoctor.facts import detect_host

    report = run_check(str(fixture("integrity/execstack.so")))
    glibc = detect_host().glibc
    want = Severity.ERROR if glibc and glibc >= (2, 41) else Severity.WARNING
    assert report.findings[0].severity is want


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[1] is Severity.ERROR))
def test_cli_exits_1_on_error_fixture(capsys: pytest.CaptureFixture[str], name: str) -> None:
    res = cli(capsys, "check", str(fixture(f"integrity/{name}")))
    assert res.code == 1, res.out + res.err
    assert CASES[name][0] in res.out


@pytest.mark.probe
def test_warning_only_fixture_passes_default_gate(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture("integrity/textrel.so"))
    assert cli(capsys, "check", path).code == 0
    assert cli(capsys, "check", "--fail-on", "warning", path).code == 1


def test_truncated_evidence_names_offsets() -> None:
    report = run_check(str(fixture("integrity/truncated.so")))
    ev = "\n".join(report.findings[0].evidence)
    assert "file size: 4096 bytes" in ev
    assert "past the end of the file" in ev


@pytest.mark.probe
def test_reference_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_check(str(reference()))
    assert report.findings == []
    res = cli(capsys, "check", str(reference()))
    assert res.code == 0, res.out
    assert "✓ Cause 4" in res.out
