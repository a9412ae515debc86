"""The fast ``check`` path (``opdoctor.cli.fastcheck``, issue #21) answers exactly as the typer
app does: the same command lines through both, stdout, stderr and the exit code compared byte
for byte — documented options in every form, and the unusual or wrong command lines the fast
path hands to the typer app. Only the measured durations ("seconds", "ran in 0.2 ms") differ
between any two runs, so they are masked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from opdoctor.cli import app, fastcheck
from opdoctor.cli import main as fast_main
from tests.conftest import ROOT, fixture, reference

_TIMES = re.compile(r'("seconds": )[0-9.e-]+|( in )[0-9.]+ (?:ms|s)\b|(time=")[0-9.]+(")')


def _mask(text: str) -> str:
    return _TIMES.sub(lambda m: "".join(g or "" for g in m.groups()) + "<t>", text)


def _run(capsys: pytest.CaptureFixture[str], fn: Callable[[list[str]], int],
         args: list[str], output: Path | None) -> tuple[int, str, str, str]:
    capsys.readouterr()
    if output is not None and output.exists():
        output.unlink()
    code = fn(list(args))
    cap = capsys.readouterr()
    written = output.read_text() if output is not None and output.exists() else ""
    return code, _mask(cap.out), _mask(cap.err), _mask(written)


def _same(capsys: pytest.CaptureFixture[str], args: list[str],
          output: Path | None = None) -> tuple[int, str, str, str]:
    """Run ``args`` through the fast path (opdoctor.cli.main) and the typer app; they agree."""
    fast = _run(capsys, fast_main, args, output)
    slow = _run(capsys, app.main, args, output)
    assert fast == slow, args
    return fast


def _cases(tmp: Path) -> list[list[str]]:
    ref, empty = str(reference()), str(fixture("integrity/empty.so"))
    textrel = str(fixture("integrity/textrel.so"))
    return [
        ["check", "--static", "-f", "json", ref],
        ["check", "--static", ref],
        ["check", ref, "--static", "-v"],
        ["check", "--static", "--format=sarif", ref, textrel],
        ["check", "--static", "-f", "junit", empty],
        ["check", "--static", "-f", "github", textrel, empty],
        ["check", "--static", "--select", "OD4", "--ignore", "OD404", "-f", "json", ref, empty],
        ["check", "--static", "--severity", "OD404=warning", "--fail-on", "warning", empty],
        ["check", "--static", "--timeout", "5", "--budget-scale", "2.5", "--gpu",
         "sm_80,sm_90", "--gpu", "H100", "--probe-memory", "4096", "-f", "json", ref],
        ["check", "--static", "--env", "LD_LIBRARY_PATH=/nonexistent", "--env", "OPDOCTOR_X=",
         "--expect-op", "myop::weighted_sum[CPU]", "--expect-symbol", "nope", ref],
        ["check", "--static", "--fail-on=info", "--require", "compile", "-f", "json", ref],
        ["check", "--static", "/nonexistent/libx.so"],
        ["check", "--static", str(tmp)],
        ["--debug", "check", "--static", empty],
        ["check", "--static", "--write-baseline", str(tmp / "bl.json"), textrel],
        ["check", "--static", "--baseline", str(tmp / "missing.json"), ref],
        ["check", "--static", "--also-write", f"json={tmp / 'also.json'}", "--also-write",
         f"sarif={tmp / 'also.sarif'}", "--format=github", textrel],
        # usage errors and unusual forms: the fast path hands them to the typer app
        ["check", "--format", "yaml", "x.so"],
        ["check", "--fail-on", "fatal", "x.so"],
        ["check", "--no-such-option", "x.so"],
        ["check", "--statc", "x.so"],
        ["check"],
        ["check", "--static"],
        ["check", "--select", "OD999", "x.so"],
        ["check", "--python", "/nonexistent/python3", "x.so"],
        ["check", "--env", "NOEQUALS", "x.so"],
        ["check", "--severity", "OD404", "x.so"],
        ["check", "--timeout", "abc", "x.so"],
        ["check", "--timeout", "-1", "x.so"],
        ["check", "--timeout", "0", "x.so"],
        ["check", "--timeout", "1e400", "x.so"],
        ["check", "--probe-memory", "1.5", "x.so"],
        ["check", "--static=1", "x.so"],
        ["check", "-fjson", "x.so"],
        ["check", "x.so", "--format"],
        ["check", "--", "x.so"],
        ["check", "-", "--static"],
        ["check", "--help"],
        ["check", "--list-checks"],
        ["check", "--static", "--expect-op", "not an op", ref],
        ["check", "--static", "--gpu", "sm_0x", ref],
        ["check", "--static", "-o", str(tmp), ref],
        ["check", "--static", "-o", ref, ref],
        ["check", "--static", "--config", str(tmp / "missing.toml"), ref],
        ["check", "--static", "--also-write", "yaml=x.yaml", ref],
        ["check", "--static", "--also-write", "json", ref],
        ["check", "--static", "-o", str(tmp / "r.json"), "--also-write",
         f"json={tmp / 'r.json'}", ref],
    ]


def test_fast_path_and_typer_app_answer_identically(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    codes = set()
    for args in _cases(tmp_path):
        codes.add(_same(capsys, args)[0])
    assert codes >= {0, 1, 2, 3}  # clean, findings, bad input and usage errors all compared


def test_output_file_identical(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code, stdout, _err, written = _same(
        capsys, ["check", "--static", "-f", "json", "-o", str(out), str(reference())], out)
    assert code == 0 and stdout == "" and '"exit_code": 0' in written


def test_configuration_file_identical(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    empty = str(fixture("integrity/empty.so"))
    (tmp_path / "opdoctor.toml").write_text('fail-on = "warning"\nformat = "json"\n'
                                            'ignore = ["OD190"]\n')
    assert _same(capsys, ["check", "--static", empty])[0] == 1
    (tmp_path / "opdoctor.toml").write_text('fail-on = "fatal"\n')
    assert _same(capsys, ["check", "--static", empty])[0] == 3
    (tmp_path / "opdoctor.toml").write_text('no-such-key = 1\n')
    assert _same(capsys, ["check", "--static", empty])[0] == 3
    (tmp_path / "opdoctor.toml").write_text('package = "json"\n')
    assert _same(capsys, ["check", "--static", "-f", "json"])[0] in (0, 1, 2)


def test_crash_identical(capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    import opdoctor.pipeline

    def broken(*a: object, **k: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(opdoctor.pipeline, "run_check", broken)
    assert _same(capsys, ["check", "--static", str(reference())])[0] == 4
    # With --debug the traceback lists the frames of the path taken (the only difference):
    # compared without them.
    args = ["--debug", "check", "--static", str(reference())]
    fast, slow = _run(capsys, fast_main, args, None), _run(capsys, app.main, args, None)
    assert fast[0] == slow[0] == 4 and "Traceback" in fast[2]
    assert _no_frames(fast[2]) == _no_frames(slow[2])


def _no_frames(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith(" ")]


@pytest.mark.parametrize("args", [
    ["--static", "-f", "json", "x.so"],
    ["x.so", "--format=text", "-o", "r.txt", "--verbose", "y.so"],
    ["--gpu", "sm_80", "--gpu", "sm_90,H100", "--timeout", "2.5", "--probe-memory", "100",
     "--env", "A=1", "--severity", "OD404=info", "--config", "c.toml", "x.so"],
])
def test_fast_parser_takes_the_documented_forms(args: list[str]) -> None:
    """The cases above really run the fast path (not only the typer app twice)."""
    kw = fastcheck.parse(args)
    assert kw is not None and kw["paths"]


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["--list-checks"], ["--nope", "x.so"], ["-fjson", "x.so"],
    ["--format"], ["--format", "--static", "x.so"], ["--static=yes", "x.so"], ["--", "x.so"],
    ["-", "x.so"], ["--timeout", " 5", "x.so"], ["--timeout", "1_0", "x.so"],
])
def test_fast_parser_hands_unusual_command_lines_to_typer(args: list[str]) -> None:
    assert fastcheck.parse(args) is None


def test_fast_check_imports_neither_typer_nor_importlib_metadata() -> None:
    code = ("import sys\nfrom opdoctor.cli import main\n"
            f"rc = main(['check', '--static', '-f', 'json', {str(reference())!r}])\n"
            "print(rc, 'typer' in sys.modules, 'pydantic' in sys.modules,"
            " 'importlib.metadata' in sys.modules, file=sys.stderr)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.stderr.split()[-4:] == ["0", "False", "False", "False"], p.stderr
