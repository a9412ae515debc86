"""Help and completion: every option documented with a plain metavar; shell completion works."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import cli_proc

COMMANDS = ("check", "scan", "explain", "codes", "config", "fleet")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_and_a_plain_metavar(command: str) -> None:
    res = cli_proc(command, "--help")
    assert res.code == 0, res.err
    options = res.out.split("Options:", 1)[1]
    # An option line: "  -f, --format FORMAT  help…" — no <type> placeholders, no bare flag
    # without help text.
    for line in options.splitlines():
        m = re.match(r"^  (-\w, )?(--[\w-]+)( \S+)?\s{2,}(\S.*)?$", line)
        if m:
            assert "<" not in (m.group(3) or ""), line
            assert m.group(4), f"{m.group(2)} has no help: {line!r}"
    assert "[tool.opdoctor]" not in res.out or "tool.opdoctor" in res.out


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
    script = cli_proc("--show-completion", "bash")
    assert script.code == 0 and "_opdoctor_completion" in script.out
