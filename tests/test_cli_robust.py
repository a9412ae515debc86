"""The CLI under failure: crashing checks are loud, outputs are validated before the analysis
and never overwrite an input, one bad target does not discard the others."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import fixture, reference
from tests.helpers import cli, cli_proc
from tests.test_cli import _schema

CRASHING_PLUGIN = '''
from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.model import Cause, Severity

DOC = CodeDoc("OD391", "team policy that crashes", Severity.ERROR, what="w", why="y",
              example="e", fix="f", references=("r",))

def run(facts):
    raise ZeroDivisionError("plugin bug")

CHECK = Check("boom", "crashes", (Cause.VERSION,), (DOC,), run)
'''


def _plugin(root: Path) -> dict[str, str]:
    (root / "odplugin_boom.py").write_text(CRASHING_PLUGIN)
    dist = root / "odplugin_boom-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: odplugin-boom\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[opdoctor.checks]\nboom = odplugin_boom:CHECK\n")
    return {"PYTHONPATH": str(root), "NO_COLOR": "1", "TMPDIR": str(root)}


def test_crashing_check_is_loud_even_with_other_findings(tmp_path: Path) -> None:
    env = _plugin(tmp_path)
    textrel = str(fixture("integrity/textrel.so"))  # has a real finding (OD410, warning)
    res = cli_proc("check", "--static", "--fail-on", "warning", textrel, env=env)
    assert res.code == 4, res.err  # not 1: a crash outranks the findings
    assert "internal error: check 'boom' crashed: ZeroDivisionError: plugin bug" in res.err
    assert "Traceback" not in res.err
    log = tmp_path / "opdoctor-crash.log"
    assert "ZeroDivisionError: plugin bug" in log.read_text()
    assert "OD410" in res.out  # the other findings are still reported
    assert "Cause 3 — version mismatch: not checked" in res.out and "boom crashed" in res.out
    dbg = cli_proc("--debug", "check", "--static", textrel, env=env)
    assert dbg.code == 4 and "Traceback" in dbg.err and "ZeroDivisionError" in dbg.err


def test_output_naming_an_input_is_refused_before_analysis(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    lib = tmp_path / "libmyop.so"
    shutil.copy(reference(), lib)
    before = hashlib.sha256(lib.read_bytes()).hexdigest()
    res = cli(capsys, "check", "--static", "-f", "json", "-o", str(lib), str(lib))
    assert res.code == 3 and "is one of the inputs" in res.err and not res.out
    assert hashlib.sha256(lib.read_bytes()).hexdigest() == before
    other = tmp_path / "other.so"
    shutil.copy(reference(), other)
    res = cli(capsys, "check", "--static", "-o", str(other), str(lib))
    assert res.code == 3 and "is an ELF file" in res.err
    res = cli(capsys, "check", "--static", "-o", str(tmp_path / "no" / "dir" / "r.json"), str(lib))
    assert res.code == 3 and "does not exist" in res.err
    res = cli(capsys, "check", "--static", "--write-baseline", str(tmp_path), str(lib))
    assert res.code == 3 and "is a directory" in res.err


def test_one_bad_target_keeps_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    missing = str(tmp_path / "missing.so")
    res = cli(capsys, "check", "--static", "-f", "json", str(reference()), missing)
    assert res.code == 2
    doc = res.json()
    jsonschema.validate(doc, _schema())
    assert len(doc["reports"]) == 1 and doc["reports"][0]["diagnosis"]["cause"] == 0
    [err] = doc["errors"]
    assert err["target"] == missing and err["code"] == "OD401" and "no such file" in err["message"]
    assert "OD401" in res.err
    text = cli(capsys, "check", "--static", str(reference()), missing)
    assert text.code == 2 and "not analysed" in text.out and "No problem found" in text.out
    junit = cli(capsys, "check", "--static", "-f", "junit", str(reference()), missing)
    assert junit.code == 2 and 'errors="1"' in junit.out
    sarif = json.loads(cli(capsys, "check", "--static", "-f", "sarif", str(reference()),
                           missing).out)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["message"]["text"].startswith("OD401")
