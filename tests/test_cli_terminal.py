"""The text report on a real terminal: wrapped with a hanging indent, never inside a path or
between a number and its unit, the same text as in a pipe apart from colour, odd file names
quoted. Each run is `python -m opdoctor` under a pseudo-terminal whose size is set with
TIOCSWINSZ, as a terminal emulator does."""

from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

from opdoctor.report.layout import Printer, quote_path
from tests.conftest import fixture, reference

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
UNIT = re.compile(r"\b\d+ (?:bytes|KB|MB|GB|s)\b")


def _on_pty(args: list[str], columns: int, timeout: float = 120) -> str:
    """stdout of ``python -m opdoctor ARGS`` written to a pseudo-terminal ``columns`` wide."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen([sys.executable, "-m", "opdoctor", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=timeout)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _piped(args: list[str], columns: int | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    if columns:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "opdoctor", *args], capture_output=True,
                          text=True, timeout=120, env=env, stdin=subprocess.DEVNULL).stdout


def _targets(tmp_path: Path) -> list[str]:
    """Two faulty libraries in a directory whose path alone is wider than 80 columns, one of
    them with a space and a newline in its name."""
    d = tmp_path / "a-directory-with-a-name-long-enough-that-no-path-fits-in-eighty-columns"
    d.mkdir()
    one = d / "wrong_runpath.so"
    two = d / "bad schema\n.so"
    shutil.copy(fixture("loader/wrong_runpath.so"), one)
    shutil.copy(fixture("registration/bad_schema.so"), two)
    assert len(str(one)) > 80
    return [str(one), str(two)]


def test_report_on_an_80_column_terminal(tmp_path: Path) -> None:
    args = ["check", "--static", *_targets(tmp_path)]
    tty = _on_pty(args, 80)
    assert "\x1b[" in tty, "no colour on a terminal"
    text = ANSI.sub("", tty)
    # The same text in a pipe of the same width, only without colour.
    assert text == _piped(args, 80)
    logical = _piped(args, None).splitlines()  # no terminal at all: one line per line
    wrapped = text.splitlines()
    # The odd name is quoted, with its newline escaped, and stays one word (its space glued).
    quoted = quote_path(args[-1])
    assert quoted.startswith('"') and quoted.endswith('bad schema\\n.so"')
    assert any(quoted in x for x in logical), logical
    assert not any(x.startswith(".so") for x in wrapped)
    logical = [x.replace(quoted, "QUOTED") for x in logical]
    wrapped = [x.replace(quoted, "QUOTED") for x in wrapped]
    assert len(wrapped) > len(logical), "nothing was wrapped at 80 columns"
    assert any(len(x) > 100 for x in logical)

    # Every logical line comes back as its first line plus continuation lines indented deeper
    # than it, the words unchanged (a split path would change them), each line ≤ 80 columns
    # unless it is one word too long for any line.
    i = 0
    for line in logical:
        first = wrapped[i]
        i += 1
        parts = [first]
        own = len(line) - len(line.lstrip())
        while " ".join(" ".join(parts).split()) != " ".join(line.split()):
            assert i < len(wrapped), f"ran out of lines rebuilding {line!r}"
            cont = wrapped[i]
            i += 1
            indent = len(cont) - len(cont.lstrip())
            assert indent > own and cont.strip(), f"continuation not indented: {cont!r}"
            parts.append(cont)
        for part in parts:
            assert len(part) <= 80 or len(part.split()) == 1, f"too wide: {part!r}"
        assert line.split() == " ".join(parts).split()
        # a number stays with its unit ("81 KB", "15 KB")
        for unit in UNIT.findall(line):
            assert any(unit in part for part in parts), (unit, parts)
    assert i == len(wrapped)


def test_a_number_is_never_parted_from_its_unit() -> None:
    """Where the break falls between "85" and "KB", both move to the next line."""
    out = io.StringIO()
    p = Printer(out, 40)
    p.line("    size: ", "x" * 24 + " 85 KB, 3 s")
    lines = out.getvalue().splitlines()
    assert lines == ["    size: " + "x" * 24, "          85 KB, 3 s"]


def test_scan_title_is_one_line_at_120_columns(tmp_path: Path) -> None:
    venv = tmp_path / "a-venv-with-a-long-enough-name-to-matter"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    text = ANSI.sub("", _on_pty(["scan", "--python", str(venv / "bin" / "python")], 120))
    title = [x for x in text.splitlines() if "opdoctor scan —" in x]
    assert len(title) == 1, text
    assert title[0].rstrip().endswith("(0 libraries)"), text
    # On a narrow terminal the table fits the terminal (Rich wraps cells), not 140 columns:
    # with one operator library installed its row is wider than 60 columns unwrapped.
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "myop").mkdir()
    shutil.copy(reference(), site / "myop" / "libmyop.so")
    wide = _piped(["scan", "--python", str(venv / "bin" / "python")], None)
    assert "libmyop.so" in wide and max(len(x) for x in wide.splitlines()) > 60, wide
    narrow = ANSI.sub("", _on_pty(["scan", "--python", str(venv / "bin" / "python")], 60))
    table = [x for x in narrow.splitlines() if x[:1] in "┏┃┡└"]
    assert table and all(len(x) <= 60 for x in table), narrow
