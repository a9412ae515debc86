"""``opdoctor check`` without the CLI framework, for the command lines people type.

Importing typer and building its click commands costs more CPU time than the whole static
analysis of a small library, and a check runs in pre-commit hooks and over whole environments.
This module parses ``check``'s documented options itself — from the settings table
(:mod:`opdoctor.cli.settings`), as the typer app builds them — and runs exactly what the typer
command runs (:func:`opdoctor.cli.commands.run_check_command`), with the same error handling.

It only takes a command line it is sure about: long options (``--format json``,
``--format=json``), the short ``-f``/``-o``/``-v`` as separate words, plain numbers, paths
that do not start with ``-``, a valid configuration. Anything else — ``--help``, an unknown or
misspelt option, a missing or dash-led value, ``--``, ``--list-checks``, an invalid value or
configuration, no target, shell completion, a plugin that failed to load — returns None before
anything is printed, and :func:`opdoctor.cli.main` hands the command line to the typer app, so
every message and exit code stays the typer app's (``tests/test_cli_fastcheck.py`` runs both on
the same command lines and compares stdout, stderr and the exit code byte for byte; the one
difference is inherent: the traceback ``--debug`` prints for a crash lists this path's frames).
"""

from __future__ import annotations

import errno
import os
import sys

from opdoctor.cli.errors import Exit, UsageProblem, crash
from opdoctor.cli.settings import SETTINGS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# option word → (parameter name, kind): kind is "bool", "str", "float", "int" or "list".
_KINDS = {"bool": "bool", "str": "str", "float": "float", "int": "int", "list": "list",
          "table": "list"}


def _options() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for spec in SETTINGS:
        entry = (spec.key.replace("-", "_"), _KINDS[spec.kind])
        table[spec.flag] = entry
        if spec.short:
            table[spec.short] = entry
    table["--config"] = ("config", "str")
    table["--write-baseline"] = ("write_baseline", "str")
    table["--verbose"] = table["-v"] = ("verbose", "bool")
    return table


def parse(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments the typer command receives for ``check ARGS``, or None when the
    command line is not one this parser is sure about (the typer app then takes it)."""
    options = _options()
    kw: dict[str, Any] = {name: (False if kind == "bool" else None)
                          for name, kind in options.values()}
    kw["list_checks"] = False
    paths: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-"):
            paths.append(word)
            continue
        name, eq, text = word.partition("=") if word.startswith("--") else (word, "", "")
        spec = options.get(name)
        if spec is None:
            return None  # --help, --list-checks, -fjson, -, --, unknown: typer's job
        param, kind = spec
        if kind == "bool":
            if eq:
                return None  # "--static=1": click refuses it, in its own words
            kw[param] = True
            continue
        if not eq:
            if i >= len(args) or args[i].startswith("-"):
                return None  # a missing value, or one click would take that looks like an option
            text = args[i]
            i += 1
        if kind == "list":
            kw[param] = [*(kw[param] or []), text]
        elif kind == "str":
            kw[param] = text
        else:
            from opdoctor.cli.values import NOT_PLAIN, plain_value

            value = plain_value(float if kind == "float" else int, text)
            if value is NOT_PLAIN:
                return None  # " 5", "1_000", "inf", "abc": typer's coercion and messages
            kw[param] = value
    kw["paths"] = paths or None
    return kw


def _completion_requested() -> bool:
    """typer answers shell completion when its environment variable is set."""
    return any(k.startswith(("_OPDOCTOR_COMPLETE", "_TYPER_COMPLETE")) for k in os.environ)


def fast_check(args: list[str], debug: bool) -> int | None:
    """Run ``opdoctor check ARGS`` (``args`` without ``--debug``); None: not handled here."""
    if args[:1] != ["check"] or _completion_requested():
        return None
    kw = parse(args[1:])
    if kw is None:
        return None
    try:
        return _guarded(kw)
    except UsageProblem as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(Exit.USAGE)
    except Exception as exc:  # the crash handler: one message, traceback only on --debug
        return crash(exc, debug)


def _guarded(kw: dict[str, Any]) -> int | None:
    """The command's body, with the exceptions typer's own ``main`` turns into exit codes."""
    try:
        return _body(kw)
    except EOFError:
        sys.stderr.write("\n")
        sys.stderr.flush()
        sys.stderr.write("opdoctor: aborted\n")
        return 130
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # A closed pipe (`opdoctor check … | head`): as typer does, silence the final flush
        # and exit 1.
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)


def _body(kw: dict[str, Any]) -> int | None:
    """What the typer command does, in its order; None where it would print a usage error or
    a plugin's warning (before anything is printed here)."""
    from opdoctor.cli.values import ArgError, effective, given

    try:
        values, _sources = effective(given(kw), kw["config"])
    except ArgError:
        return None
    paths = kw["paths"]
    if not paths and not values["package"]:
        return None
    from opdoctor.checks import load_lazy_registry, load_registry

    # Each check family's module imported when the family runs (the same checks and codes);
    # the full registry, plugins included, when a plugin may be installed.
    registry = load_lazy_registry() or load_registry()
    if registry.problems:
        return None
    from opdoctor.cli.commands import run_check_command

    return int(run_check_command(list(paths or []), values, registry, kw["verbose"],
                                 kw["write_baseline"]))
