"""Command-line interface. Thin: parse, call the library, render, return an exit code.

Exit codes (also in ``--help`` and the README):
  0  no finding at or above --fail-on
  1  findings at or above --fail-on
  2  input that cannot be analysed (missing, not a regular file, unreadable, analysis timeout)
  3  usage error
  4  internal error (a crash of opdoctor or of one of its checks)
"""

from __future__ import annotations

import inspect
import re
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

try:  # typer >= 0.24 vendors its own click; older releases depend on click itself
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exc  # type: ignore[no-redef,import-not-found]

from opdoctor import __version__
from opdoctor.cli import values as values_mod
from opdoctor.cli.errors import Exit, UsageProblem, crash
from opdoctor.cli.helpfmt import PlainCommand, PlainGroup
from opdoctor.cli.settings import FORMATS, SETTINGS, SEVERITIES, Setting

if TYPE_CHECKING:
    from opdoctor.codes import CodeDoc

EXIT_HELP = (
    "Exit codes: 0 clean (nothing at or above --fail-on) · 1 findings · 2 input cannot be "
    "analysed · 3 usage error · 4 internal error."
)


app = typer.Typer(
    name="opdoctor",
    help="Tells you why your custom operator is 'not registered', and what to do about it.\n\n"
    + EXIT_HELP,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=PlainGroup,  # plain metavars, help wrapped only at spaces
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"opdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option(
        "--debug", help="Print the traceback of an internal error (not only the crash log's "
        "path). Accepted anywhere on the command line.")] = False,
) -> None:
    """opdoctor: diagnose custom operators that fail to register."""


def _setting_param(spec: Setting) -> inspect.Parameter:
    """A typer option for one setting of the table (None default: "not given", so the config
    file and the built-in default can fill it in, and ``opdoctor config`` can say which)."""
    decls = [spec.flag, *([spec.short] if spec.short else [])]
    shown = spec.default if spec.default not in (None, [], {}, False) else None
    help_ = spec.help + (f" One of: {' | '.join(spec.choices)}." if spec.choices else "") + (
        f" [default: {shown:g}]" if isinstance(shown, float) else
        f" [default: {shown}]" if shown is not None else "")
    # rich markup is off for the app, so brackets in help texts print as written.
    common: dict[str, Any] = {"help": help_, "show_default": False,
                              "metavar": spec.metavar or ""}
    if spec.choices:
        common["autocompletion"] = lambda: list(spec.choices)
    annotation: Any
    if spec.kind == "bool":
        annotation = Annotated[bool, typer.Option(*decls, **common)]
        default: Any = False
    else:
        py = {"str": str, "float": float, "int": int, "list": list[str],
              "table": list[str]}[spec.kind]
        annotation = Annotated[py | None, typer.Option(*decls, **common)]
        default = None
    return inspect.Parameter(spec.key.replace("-", "_"), inspect.Parameter.KEYWORD_ONLY,
                             default=default, annotation=annotation)


def _given(kw: dict[str, Any]) -> dict[str, Any]:
    """The settings given on the command line, keyed like the table (tables parsed)."""
    try:
        return values_mod.given(kw)
    except values_mod.ArgError as exc:
        raise click_exc.UsageError(str(exc)) from None


def check(**kw: Any) -> int:
    """Check shared libraries, packages or wheels: the verdict names the cause, with evidence
    and a fix.

    Exit codes: 0 clean · 1 findings · 2 input cannot be analysed · 3 usage · 4 internal.
    """
    from opdoctor.checks import load_registry

    registry = load_registry()
    for problem in registry.problems:
        typer.echo(f"opdoctor: warning: plugin {problem.name!r} not loaded: {problem.reason}",
                   err=True)
    if kw["list_checks"]:
        for c in registry.checks:
            codes = ", ".join(d.code for d in c.codes)
            causes = ",".join(str(int(x)) for x in c.causes)
            typer.echo(f"{c.name:<14} cause {causes:<5} {c.summary}\n{'':<14}       codes: {codes}")
        return Exit.OK
    values, _sources = _effective(_given(kw), kw["config"])
    paths = kw["paths"]
    if not paths and not values["package"]:
        raise click_exc.UsageError("give at least one library, directory or wheel to check, "
                                   "or --package NAME (or --list-checks)")
    from opdoctor.cli.commands import run_check_command

    return run_check_command(list(paths or []), values, registry, kw["verbose"],
                             kw["write_baseline"])


# The check command's parameters: the targets, the settings table, then command-only options.
check.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    inspect.Parameter("paths", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        list[str] | None, typer.Argument(
            help="Shared libraries, package directories, other directories (walked) or wheels.",
            metavar="PATH", show_default=False)]),
    *[_setting_param(s) for s in SETTINGS],
    inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        str | None, typer.Option(help="Configuration file (default: the nearest opdoctor.toml, "
                                 "or pyproject.toml with a tool.opdoctor table).",
                                 metavar="FILE")]),
    inspect.Parameter("write_baseline", inspect.Parameter.KEYWORD_ONLY, default=None,
                      annotation=Annotated[str | None, typer.Option(
                          help="Write the current findings as the accepted baseline and exit "
                          "0.", metavar="FILE")]),
    inspect.Parameter("list_checks", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=Annotated[bool, typer.Option(
                          "--list-checks", help="List the checks and their codes, and exit.")]),
    inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=Annotated[bool, typer.Option(
                          "--verbose", "-v", help="All evidence lines and per-check timings.")]),
])
app.command(cls=PlainCommand, short_help="Diagnose libraries, packages or wheels: cause, "
            "evidence, fix.")(check)


def fleet_cmd(**kw: Any) -> int:
    """Run the check on every rank of a job (torchrun, srun, mpirun) and compare the nodes.

    Exit codes: 0 all clean and identical · 1 a rank fails, is missing, or differs · 2 the
    fleet cannot assemble · 3 usage · 4 internal.
    """
    from opdoctor.cli.fleet import FleetArgs, fleet_command

    return fleet_command(FleetArgs(list(kw["paths"] or []), _given(kw), kw["config"],
                                   kw["verbose"], kw["fingerprint_only"],
                                   kw["fail_on_difference"], kw["gather_timeout"],
                                   kw["node_id"]))


# The fleet command takes every setting of `check` (same table) plus its own options.
fleet_cmd.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    inspect.Parameter("paths", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        list[str] | None, typer.Argument(help="What to check on every node (as for `check`).",
                                         metavar="PATH", show_default=False)]),
    *[_setting_param(s) for s in SETTINGS],
    inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        str | None, typer.Option(help="Configuration file.", metavar="FILE")]),
    inspect.Parameter("fingerprint_only", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=Annotated[bool, typer.Option(
                          "--fingerprint-only",
                          help="No check, no probe: only compare the nodes.")]),
    inspect.Parameter("fail_on_difference", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=Annotated[bool, typer.Option(
                          "--fail-on-difference", help="Any difference between ranks fails.")]),
    inspect.Parameter("gather_timeout", inspect.Parameter.KEYWORD_ONLY, default=180.0,
                      annotation=Annotated[float, typer.Option(
                          metavar="SECONDS", show_default=False,
                          help="Seconds rank 0 waits, from its start, for every rank "
                          "[default: 180].")]),
    inspect.Parameter("node_id", inspect.Parameter.KEYWORD_ONLY, default=None,
                      annotation=Annotated[str | None, typer.Option(
                          metavar="ID", help="This rank's node identity (default "
                          "$OPDOCTOR_FLEET_NODE or the host name).")]),
    inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=Annotated[bool, typer.Option(
                          "--verbose", "-v", help="All evidence lines.")]),
])
app.command("fleet", cls=PlainCommand, short_help="Check every rank of a job and compare the "
            "nodes.")(fleet_cmd)


@app.command("scan", cls=PlainCommand, short_help="Check every compiled extension of an "
             "environment.")
def scan_cmd(
    python: Annotated[str | None, typer.Option(
        metavar="PYTHON", help="Interpreter whose site-packages to scan (default: this "
        "one).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                     autocompletion=lambda: list(FORMATS),
                                     help="text | json | sarif | junit | github "
                                     "[default: text]", show_default=False)] = "text",
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write the summary (or the reports, in a "
        "machine format) to this file.")] = None,
    fail_on: Annotated[str, typer.Option(
        metavar="SEVERITY", autocompletion=lambda: list(SEVERITIES),
        help="Lowest severity that fails: error | warning | info [default: error]",
        show_default=False)] = "error",
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", metavar="N", help="Parallel workers; 0 (the default) uses every "
        "core.", show_default=False)] = 0,
    probe: Annotated[bool, typer.Option("--probe", help="Also load each library for real "
                                        "(slow: one interpreter per library).")] = False,
    also_write: Annotated[list[str] | None, typer.Option(
        "--also-write", metavar="FORMAT=FILE", help="Also write the scan in this format to "
        "this file, e.g. sarif=opdoctor.sarif (repeatable): several formats from one scan.",
        show_default=False)] = None,
) -> int:
    """Check every compiled extension of an installed environment that links a framework.

    Exit codes: 0 clean · 1 findings · 2 interpreter cannot be inspected · 3 usage (a --python
    that is not a usable Python included) · 4 internal.
    """
    from opdoctor.cli.commands import scan_command

    if jobs < 0:
        raise click_exc.UsageError(f"--jobs must be 0 (every core) or more, got {jobs}")
    try:
        extra = values_mod.pairs(also_write, "--also-write")
    except values_mod.ArgError as exc:
        raise click_exc.UsageError(str(exc)) from None
    return scan_command(python, fmt, output, fail_on, jobs, probe, extra)


@app.command("config", cls=PlainCommand)
def config_cmd(
    config: Annotated[str | None, typer.Option(
        metavar="FILE", help="Configuration file to read (default: the nearest opdoctor.toml "
        "or pyproject.toml with a tool.opdoctor table).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                     autocompletion=lambda: ["text", "json"],
                                     help="text | json [default: text]",
                                     show_default=False)] = "text",
) -> int:
    """Show the effective configuration and where each value comes from."""
    import json

    values, sources = _effective({}, config)
    if fmt == "json":
        typer.echo(json.dumps({k: {"value": v, "source": sources[k]} for k, v in values.items()},
                              indent=2))
        return Exit.OK
    if fmt != "text":
        raise click_exc.UsageError(f"unknown format {fmt!r} (text | json)")
    for key, value in values.items():
        typer.echo(f"{key:<22} = {value!r:<40} # {sources[key]}")
    return Exit.OK


def _effective(given: dict[str, Any], config: str | None
               ) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        return values_mod.effective(given, config)
    except values_mod.ArgError as exc:
        raise click_exc.UsageError(str(exc)) from None


def _render_doc(doc: CodeDoc) -> str:
    from opdoctor.codes import SECTION_TITLES

    lines = [f"{doc.code} — {doc.title}",
             f"{doc.cause_label} · default severity {doc.severity.value}",
             ""]
    for key, title in SECTION_TITLES.items():
        value = getattr(doc, key)
        lines.append(f"{title}:")
        items = value if isinstance(value, tuple) else (value,)
        lines += [f"  {v}" for v in items]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _complete_code(incomplete: str) -> list[str]:
    """Shell completion for `explain`: the codes that start with what was typed."""
    from opdoctor.checks import load_registry

    return [c for c in sorted(load_registry().catalog) if c.startswith(incomplete.upper())]


@app.command(cls=PlainCommand, short_help="Explain a code, an error message or a CI log.")
def explain(
    what: Annotated[str, typer.Argument(
        metavar="TEXT", autocompletion=_complete_code,
        help="A code (OD401), an error message in quotes, or - to read a log from stdin.")],
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                     autocompletion=lambda: ["text", "json"],
                                     help="text | json [default: text]",
                                     show_default=False)] = "text",
) -> int:
    """Explain a code, or turn an error message / traceback / CI log into cause and fix.

    Exit codes: 0 explained · 1 nothing matched · 3 usage error.
    """
    import json

    from opdoctor.checks import load_registry
    from opdoctor.explain import explain_text, explanation_dict, load_patterns
    from opdoctor.explain.render import render_explanation

    if fmt not in ("text", "json"):
        raise click_exc.UsageError(f"unknown format {fmt!r} (text | json)")
    from opdoctor.codes import RETIRED

    catalog = load_registry().catalog
    code = what.strip().upper()
    if re.fullmatch(r"OD\d{3}", code):
        if code in RETIRED:
            typer.echo(f"{code} is retired; it is reported as {RETIRED[code]} now.", err=True)
            code = RETIRED[code]
        doc = catalog.get(code)
        if doc is None:
            raise click_exc.UsageError(f"unknown code {what!r} (see `opdoctor codes`)")
        if fmt == "json":
            typer.echo(json.dumps(_doc_dict(doc), indent=2))
        else:
            typer.echo(_render_doc(doc), nl=False)
        return Exit.OK
    text = sys.stdin.read() if what == "-" else what
    if not text.strip():
        raise click_exc.UsageError("nothing to explain (empty input)")
    result = explain_text(text, load_patterns(frozenset(catalog)))
    if fmt == "json":
        typer.echo(json.dumps(explanation_dict(result), indent=2))
    else:
        typer.echo(render_explanation(result))
    return Exit.OK if result.cause else Exit.FINDINGS


def _doc_dict(d: CodeDoc) -> dict[str, Any]:
    # A run note (OD190…) is no cause: 0, as a diagnosis without one, whatever its first digit.
    return {"code": d.code, "cause": 0 if d.run_note else int(d.cause),
            "severity": d.severity.value,
            "title": d.title, "what": d.what, "why": d.why, "example": d.example, "fix": d.fix,
            "references": list(d.references)}


@app.command(cls=PlainCommand)
def codes(
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                     help="text | json | markdown")] = "text",
    check_name: Annotated[str | None, typer.Option(
        "--check", metavar="CHECK", help="Only the codes of this check family "
        "(see check --list-checks).")] = None,
) -> int:
    """List every finding code with its cause, severity and title."""
    import json

    from opdoctor.checks import load_registry

    registry = load_registry()
    catalog = registry.catalog
    if check_name is not None:
        family = [c for c in registry.checks if c.name == check_name]
        if not family:
            raise click_exc.UsageError(f"unknown check {check_name!r} (see check --list-checks)")
        catalog = {d.code: d for d in family[0].codes}
    if fmt == "json":
        typer.echo(json.dumps([_doc_dict(d) for d in catalog.values()], indent=2))
    elif fmt == "text":
        for d in catalog.values():
            cause = "run note" if d.run_note else f"cause {int(d.cause)}"
            typer.echo(f"{d.code}  {cause:<8}  {d.severity.value:<7}  {d.title}")
    elif fmt == "markdown":
        from opdoctor.codes import markdown_table

        typer.echo(markdown_table(list(catalog.values())), nl=False)
    else:
        raise click_exc.UsageError(f"unknown format {fmt!r} (text | json | markdown)")
    return Exit.OK


def _close_options(name: str, candidates: Any) -> list[str]:
    """The options worth suggesting for a mistyped ``name``: click compares whole strings, so
    the shared ``--`` makes ``--bogus`` "close" to ``--gpu``; compare the words only."""
    import difflib

    words = {c.lstrip("-"): c for c in candidates}
    return [words[w] for w in difflib.get_close_matches(name.lstrip("-"), list(words), n=3,
                                                        cutoff=0.75)]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``opdoctor`` script; returns the exit code instead of raising."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    from opdoctor.cli import errors

    errors.DEBUG = debug
    try:
        rv = app(args=args, prog_name="opdoctor", standalone_mode=False)
    except click_exc.UsageError as exc:
        if isinstance(exc, click_exc.NoSuchOption):
            exc.possibilities = _close_options(exc.option_name, exc.possibilities or ())
        exc.show()
        return int(Exit.USAGE)
    except UsageProblem as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(Exit.USAGE)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("opdoctor: aborted\n")
        return 130
    except click_exc.ClickException as exc:
        exc.show()
        return int(Exit.USAGE)
    except BrokenPipeError:
        return int(Exit.OK)
    except Exception as exc:  # the crash handler: one message, traceback only on --debug
        return crash(exc, debug)
    return int(rv) if isinstance(rv, int) else int(Exit.OK)
