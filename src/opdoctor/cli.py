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
import signal
import sys
from enum import IntEnum
from types import FrameType
from typing import Annotated, Any

import typer

try:  # typer >= 0.24 vendors its own click; older releases depend on click itself
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exc  # type: ignore[no-redef,import-not-found]

from opdoctor import __version__
from opdoctor.codes import CodeDoc
from opdoctor.model import Severity

EXIT_HELP = (
    "Exit codes: 0 clean (nothing at or above --fail-on) · 1 findings · 2 input cannot be "
    "analysed · 3 usage error · 4 internal error."
)


class Exit(IntEnum):
    """Documented exit codes."""

    OK = 0
    FINDINGS = 1
    BAD_INPUT = 2
    USAGE = 3
    INTERNAL = 4


STATIC_TIMEOUT = 120.0  # seconds for the static analysis of one file (hostile inputs)


class AnalysisTimeout(Exception):
    """The static analysis ran past its time limit (a hostile or pathological file)."""


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


def _color(stream: Any) -> bool:
    """Colour only on a terminal and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise AnalysisTimeout()


@app.command()
def check(
    paths: Annotated[list[str] | None, typer.Argument(help="Shared libraries to check.",
                                                      show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
    output: Annotated[str | None, typer.Option("--output", "-o",
                                               help="Write the report to this file.")] = None,
    fail_on: Annotated[str, typer.Option(help="Lowest severity that fails: error | warning "
                                         "| info.")] = "error",
    select: Annotated[list[str] | None, typer.Option(help="Only these codes (prefixes: OD4).")]
    = None,
    ignore: Annotated[list[str] | None, typer.Option(help="Drop these codes (prefixes).")]
    = None,
    list_checks: Annotated[bool, typer.Option("--list-checks",
                                              help="List the checks and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="All evidence, timings.")]
    = False,
    static: Annotated[bool, typer.Option("--static", help="Static checks only: do not load "
                                         "the library (the probe executes its initialisers).")]
    = False,
    timeout: Annotated[float, typer.Option(help="Seconds the load probe may take.")] = 60.0,
    smoke: Annotated[bool, typer.Option("--smoke", help="Probe: call each new op with simple "
                                        "tensor arguments on small CPU tensors.")] = False,
    preload: Annotated[list[str] | None, typer.Option(
        help="Probe: load this library first, as the job does (repeatable).")] = None,
    probe_memory: Annotated[int, typer.Option(help="Probe memory limit in MiB (RSS).")] = 16384,
    package: Annotated[str | None, typer.Option(
        help="Check the import chain of this package as the target interpreter resolves it "
        "(and the library it loads).")] = None,
    cwd: Annotated[str | None, typer.Option(
        help="The job's working directory (sys.path[0]) for resolving --package.")] = None,
    against_site_packages: Annotated[bool, typer.Option(
        "--against-site-packages", help="Find other installed libraries that define the same "
        "TORCH_LIBRARY namespace.")] = False,
    python: Annotated[str | None, typer.Option(help="Target interpreter that will load the "
                                               "library (default: this one).")] = None,
    expect_op: Annotated[list[str] | None, typer.Option(
        help="ns::op[KEY,...] that must be in the library, e.g. myop::weighted_sum[CPU,CUDA] "
        "(repeatable).")] = None,
    expect_symbol: Annotated[list[str] | None, typer.Option(
        help="C entry point the host dlsym()s, e.g. register_myop_kernels (repeatable).")]
    = None,
    gpu: Annotated[list[str] | None, typer.Option(
        help="Target GPUs, e.g. sm_80,sm_90 or H100,A100 (repeatable; default: this machine's, "
        "from nvidia-smi).")] = None,
    env: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE of the job's environment, e.g. LD_LIBRARY_PATH=/opt/lib (repeatable; "
        "KEY= removes it).")] = None,
) -> int:
    """Check shared libraries; the report names which cause applies, with evidence and fix.

    Exit codes: 0 clean · 1 findings · 2 input cannot be analysed · 3 usage · 4 internal.
    """
    from opdoctor.checks import load_registry
    from opdoctor.facts import CheckOptions
    from opdoctor.inputfile import InputError
    from opdoctor.report import Format, RenderContext, renderer
    from opdoctor.runner import Selection, run_check

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
    if not paths and not package:
        raise click_exc.UsageError("give at least one library to check, or --package NAME "
                                   "(or --list-checks)")
    try:
        form = Format(fmt)
        threshold = Severity(fail_on)
    except ValueError as exc:
        raise click_exc.UsageError(str(exc)) from None
    unknown = [c for c in (select or []) + (ignore or [])
               if not any(code.startswith(c) for code in registry.catalog)]
    if unknown:
        raise click_exc.UsageError(f"no code matches {', '.join(unknown)} (see `opdoctor codes`)")
    selection = Selection(tuple(select or ()), tuple(ignore or ()))
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise click_exc.UsageError(f"--python {python}: not an executable file")
    from opdoctor.checks.registration import parse_expect_op

    for text in expect_op or []:
        try:
            parse_expect_op(text)
        except ValueError as exc:
            raise click_exc.UsageError(str(exc)) from None
    from opdoctor.cuda import parse_gpu

    gpus = tuple(g for item in gpu or [] for g in item.split(",") if g.strip())
    for g in gpus:
        try:
            parse_gpu(g)
        except ValueError as exc:
            raise click_exc.UsageError(str(exc)) from None
    options = CheckOptions(probe=not static, timeout=timeout, smoke=smoke,
                           preload=tuple(preload or ()), probe_memory_mb=probe_memory,
                           against_site_packages=against_site_packages,
                           cwd=os.path.abspath(cwd) if cwd else "",
                           expect_ops=tuple(expect_op or ()), gpus=gpus,
                           expect_symbols=tuple(expect_symbol or ()),
                           python=python, env=_environment(env))

    targets = _targets(list(paths or []), package, options)
    reports = []
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for path, options in targets:
            # The static analysis runs under a timer; the probe has its own (--timeout).
            signal.setitimer(signal.ITIMER_REAL, STATIC_TIMEOUT + timeout)
            try:
                reports.append(run_check(path, options, selection=selection, registry=registry))
            except InputError as exc:
                typer.echo(f"opdoctor: error: {exc} [{exc.code}]", err=True)
                return Exit.BAD_INPUT
            except AnalysisTimeout:
                typer.echo(f"opdoctor: error: {path}: analysis exceeded "
                           f"{STATIC_TIMEOUT + timeout:g} s "
                           "(pathological or hostile file?)", err=True)
                return Exit.BAD_INPUT
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)

    code = Exit.OK
    if any(r.fails(threshold) for r in reports):
        code = Exit.FINDINGS
    elif any(c.status.value == "failed" for r in reports for c in r.checks):
        code = Exit.INTERNAL
    out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    try:
        ctx = RenderContext(registry.catalog, threshold, int(code),
                            color=form is Format.TEXT and not output and _color(out),
                            verbose=verbose)
        renderer(form)(reports, ctx, out)
    finally:
        if output:
            out.close()
    return code


def _targets(paths: list[str], package: str | None, options: Any) -> list[tuple[str, Any]]:
    """Each path with its options: package context for package dirs and .so inside packages."""
    import dataclasses

    from opdoctor.facts import Facts
    from opdoctor.runner import package_of

    out: list[tuple[str, Any]] = []
    if package:
        opts = dataclasses.replace(options, package=package)
        chain = Facts(".", opts).chain
        libs = chain.libraries if chain else []
        out.append((libs[0] if libs else (chain.package_dir if chain and chain.package_dir
                                          else os.path.abspath(".")), opts))
    for path in paths:
        ctx = package_of(path) if os.path.exists(path) else None
        if ctx is None:
            out.append((path, options))
            continue
        name, parent = ctx
        opts = dataclasses.replace(options, package=name, cwd=options.cwd or parent)
        out.append((path, opts))
    return out


def _environment(pairs: list[str] | None) -> tuple[tuple[str, str], ...] | None:
    """os.environ with the --env overrides applied (None when there are none)."""
    if not pairs:
        return None
    env = dict(os.environ)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click_exc.UsageError(f"--env expects KEY=VALUE, got {pair!r}")
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return tuple(sorted(env.items()))


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
