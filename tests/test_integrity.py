"""Integrity family (cause 4): each broken fixture yields its own code; the reference is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from opdoctor.model import Cause, Severity
from opdoctor.pipeline import run_check
from tests.conftest import fixture, reference
from tests.helpers import cli

# Probes fork from the worker's zygotes where they can (see tests/conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

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


@pytest.mark.probe
def test_a_tail_cut_after_the_segments_loads_and_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """xxhash's extension cut in half (survey 12's P1): only the section header table was
    past the end; ld.so reads program headers and segments, so Python imports it and it
    works. opdoctor crashed (exit 4: a reader of the package's libraries unpacked section
    headers past the end) and called it OD406, an error, without probing it. Now: no crash,
    OD406 a warning that says it loads, the probe runs, and the RECORD's changed hash is a
    warning beside a working import."""
    import base64
    import hashlib
    import struct
    import subprocess
    import sys

    src = next(fixture("python/scriptrel/myext/tool.py").parent.glob("_C*.so"))
    data = src.read_bytes()
    e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
    site = tmp_path / "site"
    pkg = site / "cutext"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from ._C import answer\n")
    (pkg / src.name).write_bytes(data[:e_shoff])  # the section header table is the tail
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    info = site / "cutext-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cutext\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"cutext/__init__.py,,\ncutext/{src.name},sha256={digest},"
                                 f"{len(data)}\ncutext-1.0.dist-info/RECORD,,\n")
    ran = subprocess.run([sys.executable, "-c", "import cutext; print(cutext.answer())"],
                         cwd=site, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == "42", ran.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "cutext", "--cwd", str(site))
    assert res.code == 0, res.err
    rep = res.json()["reports"][0]
    got = {f["code"]: f for f in rep["findings"]}
    assert got["OD406"]["severity"] == "warning" and "so it loads" in got["OD406"]["message"]
    assert got["OD508"]["severity"] == "warning", got["OD508"]
    assert got["OD508"]["message"].endswith("; the import works with them")
    assert not [f for f in rep["findings"] if f["severity"] == "error"], rep["findings"]
    assert rep["sections"]["probe"]["ran"] and rep["sections"]["probe"]["outcome"] == "loaded"
    # the library by itself: the same warning, the loader's checks still run
    report = run_check(str(pkg / src.name))
    assert [(f.code, f.severity) for f in report.findings if f.cause is Cause.BUILD] == [
        ("OD406", Severity.WARNING)]
    assert all(c.status.value != "failed" for c in report.checks), report.checks


@pytest.mark.parametrize("local", [False, True])
def test_text_relocations_in_a_published_wheel_are_not_the_users_build(
        tmp_path: Path, local: bool) -> None:
    """catboost 1.2.10's published `_catboost.so` has DT_TEXTREL (survey 19): OD410's fix
    said "compile every object with -fPIC" to a user who built nothing. A file that a
    distribution installed from an index records gets whom to tell and what decides whether
    it loads; one installed from a local project (its ``direct_url.json`` names a
    ``file://`` source: the user's own build) keeps the -fPIC fix."""
    import ctypes
    import json
    import shutil

    site = tmp_path / "site"
    (site / "trpkg").mkdir(parents=True)
    lib = site / "trpkg" / "_native.so"
    shutil.copy(fixture("integrity/textrel.so"), lib)
    ctypes.CDLL(str(lib))  # text relocations load here: the finding stays a warning
    info = site / "trpkg-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trpkg\nVersion: 2.0\n")
    (info / "RECORD").write_text("trpkg/_native.so,,\ntrpkg-2.0.dist-info/METADATA,,\n"
                                 "trpkg-2.0.dist-info/RECORD,,\n")
    if local:
        (info / "direct_url.json").write_text(json.dumps(
            {"url": f"file://{tmp_path / 'proj'}", "dir_info": {}}))
    (od410,) = [f for f in run_check(str(lib)).findings if f.code == "OD410"]
    assert od410.severity is Severity.WARNING
    if local:
        assert od410.fix is not None and od410.fix.startswith("Compile every object"), od410.fix
        return
    assert "as trpkg 2.0 ships it" in od410.message, od410.message
    assert od410.fix is not None and od410.fix.startswith("Nothing to rebuild on your side: "
                                                          "it is trpkg's published build")
    assert "-fPIC" not in od410.fix.split("(their build")[0], od410.fix


@pytest.mark.parametrize(("head", "system"), [
    (b"\xca\xfe\xba\xbe\x00\x00\x00\x02", "macOS"),  # a universal2 .so (orjson's macOS wheel)
    (b"\xcf\xfa\xed\xfe\x07\x00\x00\x01", "macOS"),
    (b"MZ\x90\x00\x03\x00\x00\x00", "Windows"),  # a .pyd
])
def test_a_library_for_another_operating_system_is_not_a_download_to_repeat(
        tmp_path: Path, head: bytes, system: str) -> None:
    """A macOS or Windows wheel's library given to `check` (survey 20: orjson's universal2
    wheel): OD405's fix was the general "git lfs pull, re-download, or rebuild". It says the
    file is for another operating system and what to install instead."""
    import ctypes

    lib = tmp_path / "ext.so"
    lib.write_bytes(head + bytes(4096))
    with pytest.raises(OSError, match="invalid ELF header"):
        ctypes.CDLL(str(lib))
    (f,) = run_check(str(lib)).findings
    assert f.code == "OD405" and f.fix is not None
    assert f.fix.startswith(f"nothing repairs it here: it is a library for {system}"), f.fix
    assert "lfs" not in f.fix


def test_a_cause_with_warnings_only_is_marked_as_a_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The text report marked a cause holding only warnings "✗", as an error (survey 20: a
    report of torchvision's "✗ Cause 5" over one OD514 warning, the next report "! Cause 5"
    for the same finding). Warnings only: "!"; the closing list and the summary say the
    same."""
    res = cli(capsys, "check", "--static", str(fixture("integrity/textrel.so")))
    assert res.code == 0
    line = next(ln for ln in res.out.splitlines() if "Cause 4 —" in ln)
    assert line.startswith("! Cause 4 — broken build / file"), line
