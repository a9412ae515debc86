"""Help and completion: every option documented with a plain metavar; shell completion works."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import cli, cli_proc

COMMANDS = ("check", "scan", "explain", "codes", "config", "fleet")


@pytest.mark.parametrize("command", ("", *COMMANDS))
def test_every_parameter_has_help_and_a_plain_metavar(
        command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # in this process: the help is the same text as `python -m opdoctor … --help` prints
    # with COLUMNS=80 (compared byte for byte for every command when this was made so)
    monkeypatch.setenv("COLUMNS", "80")
    res = cli(capsys, *([command] if command else []), "--help")
    assert res.code == 0, res.err
    usage = res.out.split("\n\n", 1)[0]
    # typer's own rendering: "Usage: … {TEXT}", "PATH <list[str]>"; click's: "TEXT", "[PATH]...".
    assert not re.search(r"[<>{}]", usage), usage
    sections = dict(re.findall(r"^(\w+):\n((?:  .*\n|\n(?=  ))+)", res.out, re.M))
    assert "Options" in sections, res.out
    if command in ("check", "fleet", "explain"):
        assert "Arguments" in sections, res.out
    rows = 0
    for title in ("Arguments", "Options"):
        for line in sections.get(title, "").splitlines():
            # A parameter line: "  -f, --format FORMAT  help…" or "  PATH...  help…" — a plain
            # upper-case metavar, never a <type> or {choice} placeholder, and help text.
            m = re.match(r"^  ((?:-\w, )?--[\w-]+|[A-Z][A-Z_]*(?:\.\.\.)?)( \S+)?"
                         r"(?:\s{2,}(\S.*))?$", line)
            if not m:
                assert line.startswith(" " * 6) or not line.strip(), f"unexpected: {line!r}"
                continue
            rows += 1
            metavar = m.group(2) or ""
            assert not re.search(r"[<>{}]", line.split("  ")[1] if metavar else m.group(1)), line
            assert not metavar or re.fullmatch(r" [A-Z][A-Z_=]*(\.\.\.)?", metavar), line
            assert m.group(3), f"{m.group(1)} has no help: {line!r}"
            assert len(line) <= 80, line
    assert rows >= 2
    # Help text wraps at spaces only: no word ends in a hyphen at a line end ("nvidia-⏎smi").
    assert not re.search(r"\w-\n", res.out), res.out


def test_help_texts_are_printed_as_written() -> None:
    """No markup eaten: every setting's help (brackets, ellipses, backticks included) is in
    `check --help` word for word; typer's rich mode printed "pyproject.toml with )."."""
    from opdoctor.cli.settings import SETTINGS

    shown = " ".join(cli_proc("check", "--help").out.split())  # a real process, once
    for spec in SETTINGS:
        assert " ".join(spec.help.split()) in shown, spec.flag
    assert "pyproject.toml with a tool.opdoctor table" in shown and " )." not in shown


def test_unknown_option_suggests_only_near_misses() -> None:
    res = cli_proc("check", "--statik", "x.so")
    assert res.code == 3 and "--static" in res.err.splitlines()[-1]
    res = cli_proc("check", "--bogus", "x.so")
    assert res.code == 3 and res.err.splitlines()[-1] == "Error: No such option: --bogus"


def test_command_summaries_fit_on_one_line() -> None:
    res = cli_proc("--help", env={"COLUMNS": "80"})
    commands = res.out.split("Commands:\n", 1)[1]
    assert {line.split()[0] for line in commands.splitlines() if line.strip()} == set(COMMANDS)
    assert "..." not in commands and "…" not in commands, commands
    assert "--debug" in res.out  # accepted anywhere, documented once, at the top


def test_numeric_ranges_are_usage_errors(tmp_path: object) -> None:
    for args in (["check", "--timeout", "0", "x.so"], ["check", "--probe-memory", "-1", "x.so"],
                 ["scan", "-j", "-3"], ["check", "--format", "xml", "x.so"]):
        res = cli_proc(*args)
        assert res.code == 3, (args, res.err)
        assert len([x for x in res.err.splitlines() if x.startswith("Error")]) == 1


def test_config_limits_are_usage_errors(tmp_path: os.PathLike[str]) -> None:
    cfg = os.path.join(str(tmp_path), "opdoctor.toml")
    with open(cfg, "w") as fh:
        fh.write("timeout = -5\n")
    res = cli_proc("check", "x.so", cwd=tmp_path)
    assert res.code == 3 and "timeout must be greater than 0" in res.err


def test_bash_completion_offers_formats_and_flags() -> None:
    env = dict(os.environ, _OPDOCTOR_COMPLETE="complete_bash",
               COMP_WORDS="opdoctor check --format ", COMP_CWORD="3")
    out = subprocess.run([sys.executable, "-m", "opdoctor"], env=env, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out == ["text", "json", "sarif", "junit", "github"]
    env.update(COMP_WORDS="opdoctor check --fa", COMP_CWORD="2")
    out = subprocess.run([sys.executable, "-m", "opdoctor"], env=env, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out == ["--fail-on"]
    env.update(COMP_WORDS="opdoctor explain OD40", COMP_CWORD="2")
    out = subprocess.run([sys.executable, "-m", "opdoctor"], env=env, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out == [f"OD40{i}" for i in range(1, 10)]
    # --show-completion takes no value: typer detects the shell from the process tree, so the
    # command runs under bash (`; true` keeps bash from exec'ing it: bash stays its parent,
    # whatever shell started the test run — make's /bin/sh under `sh -c`, say).
    run = subprocess.run(["bash", "-c", f"{sys.executable} -m opdoctor --show-completion; true"],
                         capture_output=True, text=True, timeout=60)
    assert "_opdoctor_completion" in run.stdout, run.stderr
    # Paths: bash's own file completion, when opdoctor offers nothing for an argument.
    assert "complete -o default" in run.stdout
