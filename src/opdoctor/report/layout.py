"""Laying out the text report: lines wrapped at spaces with a hanging indent, never inside a
path or between a number and its unit, and file names quoted when they would mislead.

Rich's own wrapping folds long words (a path split mid-way) and restarts continuation lines at
column 0, and a report piped to a file was not wrapped at all. Here every logical line is a
prefix and a body: the body is wrapped to the width left after the prefix and its continuation
lines are indented to the hang column, on a terminal and in a pipe alike (only colour differs).
"""

from __future__ import annotations

import os
import re

from opdoctor.report.escape import printable
from opdoctor.report.styled import Styled, cell_len, colour_on

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import TextIO

# Stands for a space that must not break (inside a quoted path, between a number and its unit)
# while the Printer wraps; a private-use character, so no real text contains it.
GLUE = "\ue000"
_UNIT = re.compile(r"(?<=\d) (?=(?:bytes?|[KMGT]i?B|ms|s|%|cores?|symbols?|ops?)\b)")
# Characters a file name may hold that would break or disguise a line of text.
_ODD = re.compile(r"[\s\"'\\\x00-\x1f\x7f-\x9f]")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def wrap_width(stream: TextIO) -> int | None:
    """Columns to wrap at: $COLUMNS, else the width of the terminal the output (or, when it is
    piped, stderr) goes to; None with no terminal at all (a CI log: one line per line)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) >= 20:
        return int(cols)
    out = _fileno(stream)
    # stderr's terminal only for the process's own stdout piped (`opdoctor … | less`), not for
    # a stream of the caller's (a StringIO, a test's capture).
    for fd in (out, 2 if out == 1 else None):
        if fd is not None and os.isatty(fd):
            try:
                return max(os.get_terminal_size(fd).columns, 20)
            except OSError:
                continue
    return None


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def quote_path(path: str) -> str:
    """``path`` as it can be printed on one line: as is when plain, else in double quotes with
    backslash escapes (``"my lib\\n.so"``, C-style, as ``ls --quoting-style=c``)."""
    path = printable(path)
    if not _ODD.search(path):
        return path
    out = []
    for ch in path:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif _CTRL.match(ch) or ch == "\r":
            out.append(f"\\x{ord(ch):02x}")
        elif ch.isspace() and ch != " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unbreakable(text: str) -> str:
    """``text`` with its spaces glued: :class:`Printer` never wraps inside it."""
    return text.replace(" ", GLUE)


def no_controls(text: str) -> str:
    """``text`` with control characters (other than newline) shown as ``\\xNN``: a name read
    from a file cannot move the cursor or recolour the terminal."""
    return _CTRL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", printable(text).replace("\r", "\\r"))


def _breaks(text: str, first: int, rest: int) -> list[int]:
    """Offsets where ``text`` is broken so that its first line fits ``first`` cells and the
    others ``rest``: only before a word (a run of non-spaces), never inside one. A word too
    long for any line gets a line of its own (the first word too, when a continuation line
    has more room for it)."""
    offsets: list[int] = []
    start = 0
    for m in re.finditer(r"\S+", text):
        width = rest if offsets else first
        if cell_len(text[start:m.end()]) <= width:
            continue
        if m.start() > start or (not offsets and first < rest and not text[:start].strip()):
            offsets.append(m.start())
            start = m.start()
    return offsets


class Printer:
    """Prints logical lines (console markup, see :mod:`opdoctor.report.styled`) to ``out``,
    wrapped at ``width`` (None: never), with escape codes when ``colour``."""

    def __init__(self, out: TextIO, width: int | None, colour: bool = False) -> None:
        self.out = out
        self.width = width
        self.colour = colour_on(colour)
        # Raw → quoted spellings of odd file names (markup-escaped), applied to every body.
        self.names: dict[str, str] = {}

    def blank(self) -> None:
        """An empty line."""
        self.out.write("\n")

    def line(self, prefix: str, body: str = "", hang: int | None = None) -> None:
        """``prefix`` + ``body`` (both markup); continuation lines of the body start at
        column ``hang`` (default: the prefix's width), and so does every further line of a
        multi-line body."""
        for raw, quoted in self.names.items():
            body = body.replace(raw, quoted)
        head = Styled.from_markup(prefix)
        text = Styled.from_markup(no_controls(body.rstrip("\n")))
        text.set_plain(_UNIT.sub(GLUE, text.plain))  # same length: the styles stay in place
        indent = head.cell_len() if hang is None else hang
        lines: list[Styled] = []
        for piece in text.split_lines():
            if self.width is None:
                lines.append(piece)
                continue
            rest = max(self.width - indent, 20)
            first = self.width - head.cell_len() if not lines else rest
            lines += piece.divide(_breaks(piece.plain, first, rest))
        for i, part in enumerate(lines):
            part.rstrip()
            part.set_plain(part.plain.replace(GLUE, " "))
            out = head.copy() if i == 0 else Styled(" " * indent)
            out.append(part)
            out.rstrip()
            out.expand_tabs()
            self.out.write(out.render(self.colour) + "\n")
