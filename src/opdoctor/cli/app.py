"""Command-line interface. Thin: parse, call the library, render, return an exit code.

Exit codes (also in ``--help`` and the README):
  0  no finding at or above --fail-on
  1  findings at or above --fail-on
  2  input that cannot be analysed (missing, not a regular file, unreadable, analysis timeout)
  3  usage error
  4  internal error (a crash of opdoctor or of one of its checks)
"""

from __future__ import annotations

import os
import re
import sys
from typing import Annotated, Any

import typer

try:  # typer >= 0.24 vendors its own click; older releases depend on click itself
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exc  # type: ignore[no-redef,import-not-found]

from opdoctor import __version__
from opdoctor.cli.commands import Exit, UsageProblem
from opdoctor.codes import CodeDoc

EXIT_HELP = (
    "Exit codes: 0 clean (nothing at or above --fail-on) · 1 findings · 2 input cannot be "
    "analysed · 3 usage error · 4 internal error."
)


app = typer.Typer(
    name="opdoctor",
    help="Tells you why your custom operator is 'not registered', and what to do about it.\n\n"
    + EXIT_HELP,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"opdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """opdoctor: diagnose custom operators that fail to register."""


@app.command()
def check(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Shared libraries, package directories, other directories (walked) or wheels.",
        show_default=False)] = None,
    fmt: Annotated[str | None, typer.Option("--format", "-f",
                                            help="text | json | sarif | junit | github")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o",
                                               help="Write the report to this file.")] = None,
    fail_on: Annotated[str | None, typer.Option(help="Lowest severity that fails: error | "
                                                "warning | info (default error).")] = None,
    select: Annotated[list[str] | None, typer.Option(help="Only these codes (prefixes: OD4).")]
    = None,
    ignore: Annotated[list[str] | None, typer.Option(help="Drop these codes (prefixes).")]
    = None,
    severity: Annotated[list[str] | None, typer.Option(
        help="Override a code's severity: OD410=error (repeatable).")] = None,
    list_checks: Annotated[bool, typer.Option("--list-checks",
                                              help="List the checks and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="All evidence, timings.")]
    = False,
    static: Annotated[bool, typer.Option("--static", help="Static checks only: do not load "
                                         "the library (the probe executes its initialisers).")]
    = False,
    timeout: Annotated[float | None, typer.Option(
        help="Seconds the load probe may take (default 60).")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="Probe: call each new op with simple "
                                        "tensor arguments on small CPU tensors.")] = False,
    preload: Annotated[list[str] | None, typer.Option(
        help="Probe: load this library first, as the job does (repeatable).")] = None,
    probe_memory: Annotated[int | None, typer.Option(
        help="Probe memory limit in MiB (RSS, default 16384).")] = None,
    package: Annotated[str | None, typer.Option(
        help="Check the import chain of this package as the target interpreter resolves it "
        "(and the library it loads).")] = None,
    cwd: Annotated[str | None, typer.Option(
        help="The job's working directory (sys.path[0]) for resolving --package.")] = None,
    against_site_packages: Annotated[bool, typer.Option(
        "--against-site-packages", help="Find other installed libraries that define the same "
        "TORCH_LIBRARY namespace.")] = False,
    expect_op: Annotated[list[str] | None, typer.Option(
        help="ns::op[KEY,...] that must be in the library, e.g. myop::weighted_sum[CPU,CUDA] "
        "(repeatable).")] = None,
    expect_symbol: Annotated[list[str] | None, typer.Option(
        help="C entry point the host dlsym()s, e.g. register_myop_kernels (repeatable).")]
    = None,
    gpu: Annotated[list[str] | None, typer.Option(
        help="Target GPUs, e.g. sm_80,sm_90 or H100,A100 (repeatable; default: this machine's, "
        "from nvidia-smi).")] = None,
    python: Annotated[str | None, typer.Option(help="Target interpreter that will load the "
                                               "library (default: this one).")] = None,
    env: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE of the job's environment, e.g. LD_LIBRARY_PATH=/opt/lib (repeatable; "
        "KEY= removes it).")] = None,
    config: Annotated[str | None, typer.Option(
        help="Configuration file (default: nearest opdoctor.toml or pyproject.toml with "
        "[tool.opdoctor]).")] = None,
    baseline: Annotated[str | None, typer.Option(
        help="Only findings not in this baseline fail the gate.")] = None,
    write_baseline: Annotated[str | None, typer.Option(
        help="Write the current findings as the accepted baseline and exit 0.")] = None,
) -> int:
    """Check shared libraries, packages or wheels; the report names the cause, with evidence
    and fix.

    Exit codes: 0 clean · 1 findings · 2 input cannot be analysed · 3 usage · 4 internal.
    """
    from opdoctor.checks import load_registry

    registry = load_registry()
    for problem in registry.problems:
        typer.echo(f"opdoctor: warning: plugin {problem.name!r} not loaded: {problem.reason}",
                   err=True)
    if list_checks:
        for c in registry.checks:
            codes = ", ".join(d.code for d in c.codes)
            causes = ",".join(str(int(x)) for x in c.causes)
            typer.echo(f"{c.name:<14} cause {causes:<5} {c.summary}\n{'':<14}       codes: {codes}")
        return Exit.OK
    given = {"format": fmt, "output": output, "fail-on": fail_on, "select": select,
             "ignore": ignore, "severity": _pairs(severity, "--severity") if severity else None,
             "expect-op": expect_op, "expect-symbol": expect_symbol,
             "gpu": [g for item in gpu or [] for g in item.split(",") if g.strip()],
             "python": python, "timeout": timeout, "static": static, "smoke": smoke,
             "preload": preload, "probe-memory": probe_memory,
             "env": _pairs(env, "--env", allow_empty=True) if env else None,
             "package": package, "cwd": cwd, "against-site-packages": against_site_packages,
             "baseline": baseline}
    values, _sources = _effective(given, config)
    if not paths and not values["package"]:
        raise click_exc.UsageError("give at least one library, directory or wheel to check, "
                                   "or --package NAME (or --list-checks)")
    from opdoctor.cli.commands import run_check_command

    return run_check_command(list(paths or []), values, registry, verbose, write_baseline)


@app.command("scan")
def scan_cmd(
    python: Annotated[str | None, typer.Option(help="Interpreter whose site-packages to scan "
                                               "(default: this one).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f",
                                     help="text | json | sarif | junit | github")] = "text",
    output: Annotated[str | None, typer.Option("--output", "-o")] = None,
    fail_on: Annotated[str, typer.Option(help="error | warning | info")] = "error",
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers "
                                      "(default: all cores).")] = 0,
    probe: Annotated[bool, typer.Option("--probe", help="Also load each library for real "
                                        "(slow: one interpreter per library).")] = False,
) -> int:
    """Check every compiled extension of an installed environment that links a framework.

    Exit codes: 0 clean · 1 findings · 2 interpreter cannot be inspected · 3 usage (a --python
    that is not a usable Python included) · 4 internal.
    """
    from opdoctor.cli.commands import scan_command

    return scan_command(python, fmt, output, fail_on, jobs, probe)


@app.command("config")
def config_cmd(
    config: Annotated[str | None, typer.Option(help="Configuration file to read.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
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
    from opdoctor.cli.settings import ConfigError, find_config, merge, read_config

    try:
        if config:
            table = read_config(config)
            if table is None:
                raise ConfigError(f"{config}: no [tool.opdoctor] table")
            found: tuple[str, dict[str, Any]] | None = (config, table)
        else:
            found = find_config(os.getcwd())
    except ConfigError as exc:
        raise click_exc.UsageError(str(exc)) from None
    return merge(given, found)


def _pairs(items: list[str] | None, flag: str, allow_empty: bool = False) -> dict[str, str]:
    """KEY=VALUE arguments as a dict (``KEY=`` gives an empty value when allowed)."""
    out: dict[str, str] = {}
    for pair in items or []:
        key, sep, value = pair.partition("=")
        if not sep or not key or (not value and not allow_empty):
            raise click_exc.UsageError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def _render_doc(doc: CodeDoc) -> str:
    from opdoctor.codes import SECTION_TITLES

    lines = [f"{doc.code} — {doc.title}",
             f"cause {int(doc.cause)} ({doc.cause.title}) · default severity {doc.severity.value}",
             ""]
    for key, title in SECTION_TITLES.items():
        value = getattr(doc, key)
        lines.append(f"{title}:")
        items = value if isinstance(value, tuple) else (value,)
        lines += [f"  {v}" for v in items]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@app.command()
def explain(
    what: Annotated[str, typer.Argument(
        help="A code (OD401), an error message in quotes, or - to read a log from stdin.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> int:
    """Explain a code, or turn an error message / traceback / CI log into cause and fix.

    Exit codes: 0 explained · 1 nothing matched · 3 usage error.
    """
    import json

    from opdoctor.checks import load_registry
    from opdoctor.explain import explain_text, explanation_dict, load_patterns

    if fmt not in ("text", "json"):
        raise click_exc.UsageError(f"unknown format {fmt!r} (text | json)")
    catalog = load_registry().catalog
    code = what.strip().upper()
    if re.fullmatch(r"OD\d{3}", code):
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
        typer.echo(_render_explanation(result))
    return Exit.OK if result.cause else Exit.FINDINGS


def _doc_dict(d: CodeDoc) -> dict[str, Any]:
    return {"code": d.code, "cause": int(d.cause), "severity": d.severity.value,
            "title": d.title, "what": d.what, "why": d.why, "example": d.example, "fix": d.fix,
            "references": list(d.references)}


def _render_explanation(e: Any) -> str:
    from opdoctor.model import Cause

    head = (f"Cause {e.cause} — {Cause(e.cause).title}: {e.title}" if e.cause
            else f"Unknown: {e.title}")
    lines = [head, f"confidence: {e.confidence}" + (f" · codes: {', '.join(e.codes)}"
                                                    if e.codes else ""), "", e.explanation]
    for sym in e.entities.get("symbols", [])[:3]:
        lines.append(f"  symbol: {sym['demangled']}  [{sym['mangled']}]")
        lines.append(f"          is {sym['is']}")
    for key in ("op", "library", "path", "version", "module", "backend", "arch"):
        if e.entities.get(key):
            lines.append(f"  {key}: {e.entities[key]}")
    if e.evidence:
        lines += ["", "the line that matters:"] + [f"  {x}" for x in e.evidence]
    if e.other_matches:
        lines += ["", "also seen:"] + [f"  {x}" for x in e.other_matches[:5]]
    lines += ["", "next:"] + [f"  {x}" for x in e.next_steps]
    return "\n".join(lines)


@app.command()
def codes(
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> int:
    """List every finding code with its cause, severity and title."""
    import json

    from opdoctor.checks import load_registry

    catalog = load_registry().catalog
    if fmt == "json":
        typer.echo(json.dumps([_doc_dict(d) for d in catalog.values()], indent=2))
    elif fmt == "text":
        for d in catalog.values():
            typer.echo(f"{d.code}  cause {int(d.cause)}  {d.severity.value:<7}  {d.title}")
    else:
        raise click_exc.UsageError(f"unknown format {fmt!r} (text | json)")
    return Exit.OK


def _crash(exc: BaseException, debug: bool) -> int:
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(exc))
    log = os.path.join(tempfile.gettempdir(), "opdoctor-crash.log")
    try:
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"opdoctor {__version__}, Python {sys.version}\nargv: {sys.argv}\n\n{text}")
    except OSError:
        log = ""
    if debug:
        sys.stderr.write(text)
    where = f"; details in {log}" if log else ""
    sys.stderr.write(
        f"opdoctor: internal error: {type(exc).__name__}: {exc}{where}\n"
        f"  this is a bug in opdoctor {__version__}: please report it with that file "
        "(rerun with --debug to print the traceback)\n")
    return int(Exit.INTERNAL)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``opdoctor`` script; returns the exit code instead of raising."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        rv = app(args=args, prog_name="opdoctor", standalone_mode=False)
    except click_exc.UsageError as exc:
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
        return _crash(exc, debug)
    return int(rv) if isinstance(rv, int) else int(Exit.OK)
