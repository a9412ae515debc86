"""CLI contract: exit codes, codes listing, explain pages, JSON validated against the schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from opdoctor import __version__
from opdoctor.codes import SECTION_TITLES
from tests.conftest import fixture, reference
from tests.helpers import cli, cli_proc

# Probes fork from the worker's zygotes where they can (see tests/conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")


def _schema() -> dict[str, object]:
    text = resources.files("opdoctor").joinpath("schema/report-v1.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "--version")
    assert res.code == 0 and res.out.strip() == f"opdoctor {__version__}"


@pytest.mark.parametrize("args", [
    ("check", "--format", "yaml", "x.so"),
    ("check", "--fail-on", "fatal", "x.so"),
    ("check", "--no-such-option"),
    ("check",),
    ("check", "--select", "OD999", "x.so"),
    ("explain", "OD999"),
    ("frobnicate",),
    ("check", "--python", "/nonexistent/python3", "x.so"),
    ("check", "--env", "NOEQUALS", "x.so"),
])
def test_usage_errors_exit_3(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    res = cli(capsys, *args)
    assert res.code == 3, (args, res.out, res.err)
    assert "Traceback" not in res.err


def test_help_documents_exit_codes() -> None:
    res = cli_proc("check", "--help")
    assert res.code == 0
    assert "Exit codes" in res.out


@pytest.mark.parametrize("target", ["reference", "integrity/truncated.so", "integrity/empty.so",
                                    "integrity/textrel.so", "integrity/aarch64.so"])
@pytest.mark.probe
def test_json_output_validates(capsys: pytest.CaptureFixture[str], target: str) -> None:
    path = reference() if target == "reference" else fixture(target)
    res = cli(capsys, "check", "--format", "json", str(path))
    doc = res.json()
    jsonschema.validate(doc, _schema())
    assert doc["schema_version"] == 1
    assert doc["exit_code"] == res.code
    rep = doc["reports"][0]
    states = {c["cause"]: c["state"] for c in rep["causes"]}
    if target == "reference":
        assert rep["findings"] == [] and states[4] == "clean"
    else:
        f = rep["findings"][0]
        assert f["cause"] == 4 and f["severity"] in ("error", "warning")
        assert states[4] == "found"


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    res = cli(capsys, "check", "-f", "json", "-o", str(out), str(fixture("integrity/empty.so")))
    assert res.code == 1 and res.out == ""
    assert json.loads(out.read_text())["reports"][0]["findings"][0]["code"] == "OD404"


def test_codes_listing(capsys: pytest.CaptureFixture[str]) -> None:
    text = cli(capsys, "codes")
    assert text.code == 0 and "OD406" in text.out
    rows = cli(capsys, "codes", "--format", "json").json()
    assert {r["code"] for r in rows} >= {"OD401", "OD404", "OD410"}
    for r in rows:
        for key in ("what", "why", "example", "fix", "references"):
            assert r[key], (r["code"], key)


def test_explain_code_renders_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "explain", "od408")
    assert res.code == 0
    assert res.out.startswith("OD408 — built for another architecture")
    for title in SECTION_TITLES.values():
        assert f"{title}:" in res.out


def test_no_color_and_plain_output_when_piped() -> None:
    res = cli_proc("check", str(fixture("integrity/empty.so")), env={"NO_COLOR": "1"})
    assert "\x1b[" not in res.out
    assert "OD404" in res.out


def test_internal_crash_exits_4_without_traceback(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import opdoctor.pipeline

    def broken(*a: object, **k: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(opdoctor.pipeline, "run_check", broken)
    res = cli(capsys, "check", str(reference()))
    assert res.code == 4
    assert "internal error: RuntimeError: simulated bug" in res.err
    assert "Traceback" not in res.err
    res = cli(capsys, "--debug", "check", str(reference()))
    assert res.code == 4 and "Traceback" in res.err


@pytest.mark.probe
def test_multiple_targets_worst_wins(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "-f", "json", str(reference()), str(fixture("integrity/empty.so")))
    assert res.code == 1
    assert len(res.json()["reports"]) == 2
