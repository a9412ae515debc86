"""``--help`` that reads like a well-kept CLI: plain metavars for arguments too, and help text
wrapped only at spaces.

typer (0.29) renders every argument as ``PATH <list[str]>`` and a required one as ``{TEXT}`` in
the usage line, whatever metavar it was given, and click's wrapper breaks words at hyphens
(``nvidia-⏎smi``, ``--list-⏎checks``). The command and group classes here keep typer's parsing
and completion and change only how the help is laid out.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from typer.core import TyperCommand, TyperGroup

from opdoctor.cli.coerce import install as install_plain_coercion

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

try:  # typer >= 0.24 vendors its own click; older releases depend on click itself
    from typer._click import Context, HelpFormatter
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import Context, HelpFormatter  # type: ignore[no-redef,import-not-found]


def _wrap(text: str, width: int) -> list[str]:
    """Lines of ``text`` at most ``width`` wide, broken only at spaces (never inside an option
    name, a path or a hyphenated word); paragraphs (blank lines) kept."""
    out: list[str] = []
    for i, para in enumerate(text.split("\n\n")):
        if i:
            out.append("")
        out += textwrap.wrap(" ".join(para.split()), max(width, 10), break_long_words=False,
                             break_on_hyphens=False) or [""]
    return out


class PlainFormatter(HelpFormatter):
    """click's formatter with its two wrapping calls replaced by :func:`_wrap`."""

    def write_text(self, text: str) -> None:
        """A paragraph at the current indentation."""
        indent = " " * self.current_indent
        for line in _wrap(text, (self.width or 80) - self.current_indent):
            self.write(f"{indent}{line}\n" if line else "\n")

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30,
                 col_spacing: int = 2) -> None:
        """A definition list (options, arguments, commands) with a hanging second column."""
        rows = list(rows)
        first_col = min(max((len(r[0]) for r in rows), default=0), col_max) + col_spacing
        indent = " " * self.current_indent
        for first, second in rows:
            self.write(f"{indent}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - len(first)))
            else:
                self.write("\n" + " " * (first_col + self.current_indent))
            lines = _wrap(second, max((self.width or 80) - first_col - 2, 10))
            self.write(f"{lines[0]}\n")
            for line in lines[1:]:
                self.write(f"{'':>{first_col + self.current_indent}}{line}\n")


class PlainContext(Context):
    """A context whose help formatter is :class:`PlainFormatter`."""

    formatter_class = PlainFormatter


def _argument_name(param: Any) -> str:
    """``PATH...`` for a variadic argument, else its metavar (or upper-cased name)."""
    name = str(param.metavar or (param.name or "").upper())
    return f"{name}..." if param.nargs != 1 else name


class PlainCommand(TyperCommand):
    """A typer command whose arguments render as their metavar, click-style:
    ``Usage: opdoctor check [OPTIONS] [PATH]...`` and ``PATH...  help``."""

    context_class = PlainContext

    def get_params(self, ctx: Context) -> list[Any]:
        """The parameters (help option included), each given the pydantic-free coercion of
        plain values (:mod:`opdoctor.cli.coerce`)."""
        params: list[Any] = super().get_params(ctx)
        install_plain_coercion(params)
        return params

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        """The usage line: ``[OPTIONS]``, then each argument as ``NAME`` (required) or
        ``[NAME]`` (optional), ``...`` when it takes several values."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces += param.get_usage_pieces(ctx)
                continue
            name = str(param.metavar or (param.name or "").upper())
            shown = name if param.required else f"[{name}]"
            pieces.append(shown + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The Arguments and Options sections, arguments named by their plain metavar."""
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument_name(param), record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class PlainGroup(TyperGroup):
    """The top-level group, with the same help formatter as its commands."""

    context_class = PlainContext

    def get_params(self, ctx: Context) -> list[Any]:
        """As :meth:`PlainCommand.get_params` (the completion options included)."""
        params: list[Any] = super().get_params(ctx)
        install_plain_coercion(params)
        return params
