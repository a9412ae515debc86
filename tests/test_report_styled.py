"""The text report without Rich prints what it printed with Rich, byte for byte.

:mod:`opdoctor.report.styled` reimplements the part of Rich the report used (console markup,
line splitting and division, ANSI output) so that a check need not import ``rich.console``.
Here a reference printer built on Rich itself — the report's printer before the change — and the
new one render the same input, and the outputs are compared: real reports (the reference
operator, broken fixtures, torch's own libraries, verbose), and random markup with brackets,
backslashes, tabs, wide and combining characters; with and without colour; at no width, 80 and
40 columns; and on a dumb terminal.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len as rich_cell_len
from rich.console import Console
from rich.markup import escape as rich_escape
from rich.text import Text

from opdoctor.checks import load_registry
from opdoctor.facts.options import CheckOptions
from opdoctor.model import Severity
from opdoctor.pipeline import run_check
from opdoctor.report import RenderContext, layout, text
from opdoctor.report.layout import GLUE, Printer, no_controls
from opdoctor.report.styled import _ONE_CELL, Styled, escape
from tests.conftest import FIX, PKG_DIR, ROOT, reference
from tests.test_loader import torch_lib_dir


class RichPrinter(Printer):
    """The printer as it was, on Rich (Text.from_markup, split, divide, Console.print)."""

    def __init__(self, out: io.StringIO, width: int | None, colour: bool = False) -> None:
        super().__init__(out, width, colour)
        self.console = Console(file=out, force_terminal=colour, no_color=not colour,
                               highlight=False, width=10_000, soft_wrap=True)

    def blank(self) -> None:
        self.console.print()

    def line(self, prefix: str, body: str = "", hang: int | None = None) -> None:
        for raw, quoted in self.names.items():
            body = body.replace(raw, quoted)
        head = Text.from_markup(prefix, emoji=False)  # the one deliberate difference
        body_text = Text.from_markup(no_controls(body.rstrip("\n")), emoji=False)
        body_text.plain = layout._UNIT.sub(GLUE, body_text.plain)
        indent = head.cell_len if hang is None else hang
        lines: list[Text] = []
        for piece in body_text.split("\n", allow_blank=True):
            if self.width is None:
                lines.append(piece)
                continue
            rest = max(self.width - indent, 20)
            first = self.width - head.cell_len if not lines else rest
            lines += piece.divide(layout._breaks(piece.plain, first, rest))
        for i, part in enumerate(lines):
            part.rstrip()
            part.plain = part.plain.replace(GLUE, " ")
            out = head.copy() if i == 0 else Text(" " * indent)
            out.append_text(part)
            out.rstrip()
            self.console.print(out, soft_wrap=True)


def _both(draw: object, width: int | None, colour: bool) -> tuple[str, str]:
    """What the new printer and the Rich one write for ``draw(printer)`` (or the name of the
    exception each raised: a markup error must be one on both)."""
    outputs = []
    for cls in (Printer, RichPrinter):
        out = io.StringIO()
        try:
            draw(cls(out, width, colour))  # type: ignore[operator]
        except Exception as e:  # any error: compared by the caller
            outputs.append(f"raised {type(e).__name__}")
            continue
        outputs.append(out.getvalue())
    return outputs[0], outputs[1]


# ------------------------------------------------------------------ real reports
def _targets() -> list[Path]:
    picks = [reference()]
    for rel in ("integrity/truncated.so", "integrity/empty.so", "registration",
                "loader", "truth"):
        path = FIX / rel
        if path.is_file():
            picks.append(path)
        elif path.is_dir():
            picks += sorted(path.glob("*.so"))[:6]
    torch_lib = torch_lib_dir()
    picks += [p for p in (torch_lib / "libc10.so", torch_lib / "libshm.so") if p.exists()]
    return picks


@pytest.fixture(scope="module")
def reports() -> list[object]:
    registry = load_registry()
    done = [run_check(str(p), registry=registry) for p in _targets()]
    # A package (the import-chain section): the reference operator's, and one whose __init__
    # never loads its library.
    for site, package in ((PKG_DIR, "myop"), (FIX / "python" / "noimport", "")):
        names = [package] if package else [p.name for p in site.iterdir() if p.is_dir()][:1]
        for name in names:
            env = {**os.environ, "PYTHONPATH": str(site)}
            done.append(run_check(str(site / name), CheckOptions(
                package=name, env=tuple(env.items()), cwd="/"), registry=registry))
    return done


@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("width", [None, 80, 40])
@pytest.mark.parametrize("verbose", [False, True])
def test_reports_are_byte_identical(reports: list[object], monkeypatch: pytest.MonkeyPatch,
                                    colour: bool, width: int | None, verbose: bool) -> None:
    """Every real report, rendered by the text renderer on both printers, is the same text
    (escape codes included)."""
    monkeypatch.setenv("TERM", "xterm-256color")
    catalog = load_registry().catalog
    assert len(reports) >= 8
    for report in reports:
        ctx = RenderContext(catalog, Severity.ERROR, 1, color=colour, verbose=verbose,
                            width=width)
        outs = []
        for cls in (Printer, RichPrinter):
            monkeypatch.setattr(text, "Printer", cls)
            out = io.StringIO()
            text.render([report], ctx, out)  # type: ignore[list-item]
            outs.append(out.getvalue())
        assert outs[0] == outs[1], report.target.path  # type: ignore[attr-defined]
        assert ("\x1b[" in outs[0]) == colour


# ------------------------------------------------------------------ random markup
STYLES = ["bold", "dim", "red", "green", "yellow", "cyan", "bold red", "bold green",
          "red bold", "italic", "i", "b", "code", "no kernel", "bright_blue", "underline dim"]
PIECES = ["[", "]", "\\", "\\\\", "[x]", "[/x]", "\t", "a\tb", "  ", " ", "\n", "\n\n",
          "lib torch.so", "85 KB", "3 s", "10 %", "中文字", "é", "e\u0301", "🔥", "→", "…",
          "\x07", "\r", "x" * 30, "/very/long/path/to/site-packages/torch/lib/libtorch_cpu.so",
          "[CPU, CUDA]", "[no kernel]", "\\[dim]", "[@click]", ":fire:", "a:b:c"]


def _random_markup(rng: random.Random, plain_only: bool = False) -> str:
    out: list[str] = []
    open_tags: list[str] = []
    for _ in range(rng.randint(0, 14)):
        roll = rng.random()
        if plain_only or roll < 0.55:
            piece = rng.choice(PIECES) if rng.random() < 0.7 else \
                "".join(rng.choice("ab [\\]/") for _ in range(rng.randint(1, 6)))
            out.append(rich_escape(piece) if rng.random() < 0.8 else piece.replace("[", "("))
        elif roll < 0.8:
            style = rng.choice(STYLES)
            open_tags.append(style)
            out.append(f"[{style}]")
        elif open_tags:
            style = open_tags.pop()
            out.append("[/]" if rng.random() < 0.6 else f"[/{style}]")
    return "".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_random_markup_is_byte_identical(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random lines of markup and text give the same bytes on both printers, at each width,
    with and without colour; a markup error is raised by both or by neither."""
    monkeypatch.setenv("TERM", "xterm")
    rng = random.Random(seed)
    compared = 0
    for _ in range(250):
        prefix = rng.choice(["", "  ", "[dim]x:[/] ", "[bold red]OD303[/] ", "  ✓ "])
        body = _random_markup(rng)
        hang = rng.choice([None, 2, 6, 16])
        for width in (None, 80, 40):
            for colour in (False, True):
                new, old = _both(lambda p, a=prefix, b=body, h=hang: p.line(a, b, h), width, colour)
                assert new == old, (prefix, body, hang, width, colour)
                compared += not new.startswith("raised")
    assert compared > 1000


def test_escape_matches_rich() -> None:
    """The markup escape is Rich's, on random text with brackets and backslashes."""
    rng = random.Random(7)
    for _ in range(3000):
        s = "".join(rng.choice(["[", "]", "\\", "a", "/", "@", "#", " ", "x]", "[b"])
                    for _ in range(rng.randint(0, 12)))
        assert escape(s) == rich_escape(s), s


def test_dumb_terminal_gets_no_escape_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """TERM=dumb: no codes even when colour is asked for, as Rich did."""
    monkeypatch.setenv("TERM", "dumb")
    new, old = _both(lambda p: p.line("[bold red]E[/] ", "[green]fix[/] it"), 80, True)
    assert new == old == "E fix it\n"


def test_one_cell_characters_are_one_cell_for_rich() -> None:
    """The fast path's single-cell set agrees with Rich's table, character by character."""
    assert all(rich_cell_len(ch) == 1 for ch in _ONE_CELL)
    for s in ["中文", "🔥x", "e\u0301", "a\tb", "\x00"]:
        assert Styled(s).cell_len() == rich_cell_len(s), s


def test_emoji_codes_are_left_as_written() -> None:
    """A path such as ``a:fire:b`` is printed as written (Rich made it a🔥b)."""
    out = io.StringIO()
    Printer(out, None).line("", "a:fire:b.so")
    assert out.getvalue() == "a:fire:b.so\n"


def test_a_text_check_does_not_import_rich_console() -> None:
    """`opdoctor check --static` with text output runs without rich.console (~50 ms)."""
    code = ("import sys, runpy\n"
            "sys.argv = ['opdoctor', 'check', '--static', sys.argv[1]]\n"
            "try:\n    runpy.run_module('opdoctor', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "sys.stderr.write(str(sorted(m for m in sys.modules if m.startswith('rich'))))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TERM": "xterm"}
    done = subprocess.run([sys.executable, "-c", code, str(reference())], capture_output=True,
                          text=True, timeout=120, env=env)
    assert "opdoctor" in done.stdout and "weighted_sum" in done.stdout, done.stdout
    assert "rich.console" not in done.stderr, done.stderr
