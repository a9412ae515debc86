"""Styled text for the text report without Rich: its console markup, its line operations and its
ANSI output, reimplemented for the few styles the report uses.

Importing ``rich.console`` costs ~50 ms (more than a static check of a small library), and the
report used Rich only to turn markup such as ``[bold red]…[/]`` into colour: the wrapping is
:class:`~opdoctor.report.layout.Printer`'s own. This module keeps Rich's observable behaviour —
how markup is parsed and escaped, where one coloured run ends and the next begins, how tabs are
expanded, what a closed terminal gets — so the bytes printed are the same
(``tests/test_report_styled.py`` renders reports and random markup both ways and compares them).
Two deliberate differences: ``:name:`` emoji codes in the text stay as written (Rich turned a
path such as ``a:fire:b`` into ``a🔥b``), and an unknown style word is handed to Rich itself.

A :class:`Styled` is a plain string and a list of spans ``(start, end, style)`` in Rich's order:
styles of overlapping spans combine in that order, and every span boundary starts a new run of
escape codes, as in Rich's output.
"""

from __future__ import annotations

import os
import re
from itertools import pairwise

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

Span = tuple[int, int, str]

# A tag: optional backslashes, "[", a name starting with a letter, "#", "/" or "@", "]".
_TAGS = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
# Characters Rich removes from any text it holds (bell, backspace, vertical tab, form feed, CR).
_STRIP = {7: None, 8: None, 11: None, 12: None, 13: None}

# SGR parameters, in the order Rich writes them: attributes first (by bit), then the colour.
_ATTRS = {"bold": (0, "1"), "dim": (1, "2"), "italic": (2, "3"), "underline": (3, "4"),
          "blink": (4, "5"), "blink2": (5, "6"), "reverse": (6, "7"), "conceal": (7, "8"),
          "strike": (8, "9")}
_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
_FORE = {**{c: str(30 + i) for i, c in enumerate(_COLOURS)},
         **{f"bright_{c}": str(90 + i) for i, c in enumerate(_COLOURS)}}

# Characters that take one cell in every Unicode version Rich knows: its own single-cell ranges
# plus the symbols the report prints (tests/test_report_styled.py checks them against Rich).
_ONE_CELL = frozenset(
    [chr(c) for lo, hi in ((0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482),
                           (0x2500, 0x25FC), (0x2800, 0x28FF)) for c in range(lo, hi + 1)]
    + list("—–…→←↳✓✗·•“”‘’"))


def cell_len(text: str) -> int:
    """Terminal cells ``text`` takes, as Rich counts them (Rich's table only for characters
    outside the common single-cell set, so the report rarely imports it)."""
    if _ONE_CELL.issuperset(text):
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return int(rich_cell_len(text))


def escape(markup: str) -> str:
    """``markup`` with every ``[`` that would open a tag escaped (``rich.markup.escape``)."""
    markup = _ESCAPE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


class MarkupError(ValueError):
    """A closing tag that closes nothing (Rich raises its own MarkupError there too)."""


class Styled:
    """A line of text with style spans (the subset of ``rich.text.Text`` the report uses)."""

    __slots__ = ("plain", "spans")

    def __init__(self, plain: str = "", spans: list[Span] | None = None) -> None:
        self.plain = plain.translate(_STRIP) if not plain.isprintable() else plain
        self.spans: list[Span] = spans if spans is not None else []

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_markup(cls, markup: str) -> Styled:
        """Parse console markup: ``[style]…[/]`` (``[/style]`` closes by name), ``\\[`` for a
        literal bracket; unclosed tags run to the end."""
        if "[" not in markup:
            return cls(markup)
        parts: list[str] = []
        length = 0
        stack: list[tuple[int, str]] = []
        spans: list[Span] = []
        position = 0

        def add(text: str) -> None:
            nonlocal length
            text = text.replace("\\[", "[").translate(_STRIP)
            parts.append(text)
            length += len(text)

        for m in _TAGS.finditer(markup):
            full, escapes, tag = m.groups()
            start, end = m.span()
            if start > position:
                add(markup[position:start])
            if escapes:
                backslashes, escaped = divmod(len(escapes), 2)
                if backslashes:
                    add("\\" * backslashes)
                if escaped:
                    add(full[len(escapes):])
                    position = end
                    continue
            name = tag
            if name.startswith("/"):
                closing = _normal(name[1:].strip())
                if closing:
                    at = next((i for i in range(len(stack) - 1, -1, -1)
                               if stack[i][1] == closing), None)
                    if at is None:
                        raise MarkupError(f"closing tag '[{tag}]' at position {start} doesn't "
                                          "match any open tag")
                    opened, style = stack.pop(at)
                else:
                    if not stack:
                        raise MarkupError(f"closing tag '[/]' at position {start} has nothing "
                                          "to close")
                    opened, style = stack.pop()
                spans.append((opened, length, style))
            else:
                stack.append((length, _normal(name)))
            position = end
        if position < len(markup):
            add(markup[position:])
        while stack:
            opened, style = stack.pop()
            spans.append((opened, length, style))
        # Rich's order: by start, and among equal starts the span closed last first.
        ordered = sorted(spans[::-1], key=lambda s: s[0])
        return cls("".join(parts), ordered)

    def copy(self) -> Styled:
        """A copy sharing nothing mutable."""
        return Styled(self.plain, list(self.spans))

    # ------------------------------------------------------------------ line operations
    def cell_len(self) -> int:
        """Terminal cells of the text."""
        return cell_len(self.plain)

    def divide(self, offsets: Iterable[int]) -> list[Styled]:
        """The pieces between ``offsets``; each span clipped to each piece it overlaps (empty
        pieces of a span are dropped)."""
        cuts = list(offsets)
        if not cuts:
            return [self.copy()]
        bounds = [0, *cuts, len(self.plain)]
        ranges = list(pairwise(bounds))
        pieces = [Styled(self.plain[a:b]) for a, b in ranges]
        for start, end, style in self.spans:
            for piece, (a, b) in zip(pieces, ranges, strict=True):
                if a > end:  # ranges are in order: nothing further overlaps
                    break
                lo, hi = max(0, start - a), min(end - a, b - a)
                if hi > lo:
                    piece.spans.append((lo, hi, style))
        return pieces

    def split_lines(self) -> list[Styled]:
        """The text's lines (blank ones kept; a trailing newline gives a last empty line)."""
        if "\n" not in self.plain:
            return [self.copy()]
        cuts: list[int] = []
        for m in re.finditer("\n", self.plain):
            cuts += [m.start(), m.end()]
        return [p for p in self.divide(cuts) if p.plain != "\n"]

    def set_plain(self, text: str) -> None:
        """Replace the text; spans beyond a shorter text are trimmed (``Text.plain = …``)."""
        if text == self.plain:
            return
        old = len(self.plain)
        self.plain = text.translate(_STRIP)
        if len(self.plain) < old:
            n = len(self.plain)
            self.spans = [s if s[1] < n else (s[0], min(n, s[1]), s[2])
                          for s in self.spans if s[0] < n]

    def rstrip(self) -> None:
        """Remove trailing whitespace (and the spans' part over it)."""
        self.set_plain(self.plain.rstrip())

    def append(self, other: Styled) -> None:
        """Append ``other`` with its spans."""
        n = len(self.plain)
        self.plain += other.plain
        self.spans += [(a + n, b + n, s) for a, b, s in other.spans]

    def expand_tabs(self, size: int = 8) -> None:
        """Tabs to spaces up to the next multiple of ``size`` cells; a span that ends with the
        tab grows over its spaces (Rich's ``Text.expand_tabs`` on one line)."""
        if "\t" not in self.plain:
            return
        cuts = [m.end() for m in re.finditer("\t", self.plain)]
        out = Styled()
        position = 0
        for part in self.divide(cuts):
            if part.plain.endswith("\t"):
                part.plain = part.plain[:-1] + " "
                position += part.cell_len()
                pad = position % size
                if pad:
                    spaces = size - pad
                    end = len(part.plain)
                    part.spans = [(a, b + spaces, s) if b >= end else (a, b, s)
                                  for a, b, s in part.spans]
                    part.plain += " " * spaces
                    position += spaces
            else:
                position += part.cell_len()
            out.append(part)
        self.plain, self.spans = out.plain, out.spans

    # ------------------------------------------------------------------ output
    def render(self, colour: bool) -> str:
        """The line as a terminal gets it: with ``colour``, each run between span boundaries
        in its own SGR sequence (``ESC[…m`` … ``ESC[0m``); without, the plain text."""
        if not colour or not self.spans:
            return self.plain
        text = self.plain
        events = sorted([(0, False, 0), (len(text), True, 0),
                         *((s[0], False, i) for i, s in enumerate(self.spans, 1)),
                         *((s[1], True, i) for i, s in enumerate(self.spans, 1))],
                        key=lambda e: (e[0], e[1]))
        stack: list[int] = []
        out: list[str] = []
        for (offset, leaving, index), (following, _l, _i) in pairwise(events):
            if leaving:
                stack.remove(index)
            else:
                stack.append(index)
            if following > offset:
                chunk = text[offset:following]
                codes = _sgr([self.spans[i - 1][2] for i in sorted(stack) if i])
                out.append(f"\x1b[{codes}m{chunk}\x1b[0m" if codes else chunk)
        return "".join(out)


def _normal(style: str) -> str:
    """A style name as Rich normalises it (words in a canonical order, lower case)."""
    words = style.lower().split()
    if all(w in _ATTRS or w in _FORE for w in words):
        attrs = sorted(dict.fromkeys(w for w in words if w in _ATTRS), key=lambda w: _ATTRS[w][0])
        colour = [w for w in words if w in _FORE][-1:]
        return " ".join(attrs + colour)
    from rich.style import Style

    return str(Style.normalize(style))


def _sgr(styles: list[str]) -> str:
    """The SGR parameters of ``styles`` combined in order (later colours win)."""
    bits: set[int] = set()
    colour = ""
    for style in styles:
        for word in style.split():
            if word in _ATTRS:
                bits.add(_ATTRS[word][0])
            elif word in _FORE:
                colour = _FORE[word]
            else:
                return _rich_sgr(styles)
    codes = [code for _w, (bit, code) in sorted(_ATTRS.items(), key=lambda kv: kv[1][0])
             if bit in bits]
    return ";".join(codes + ([colour] if colour else []))


def _rich_sgr(styles: list[str]) -> str:
    """Rich's own answer for styles outside the small table above: a style name is looked up
    in Rich's default theme, then parsed; one that is neither is no style (as Rich renders
    it, ``Console.get_style(…, default=Style.null())``)."""
    from rich.color import ColorSystem
    from rich.default_styles import DEFAULT_STYLES
    from rich.errors import StyleSyntaxError
    from rich.style import Style

    def get(name: str) -> Style:
        found = DEFAULT_STYLES.get(name)
        if isinstance(found, Style):
            return found
        try:
            return Style.parse(name)
        except StyleSyntaxError:
            return Style.null()

    return str(Style.combine(get(s) for s in styles)._make_ansi_codes(ColorSystem.STANDARD))


def colour_on(wanted: bool) -> bool:
    """Whether escape codes are written: colour was asked for (a terminal, no NO_COLOR) and
    the terminal is not a dumb one (Rich writes no codes for TERM=dumb or unknown)."""
    return wanted and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")
