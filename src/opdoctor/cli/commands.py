"""The body of ``opdoctor check``: effective settings → targets → reports → gate → output.

Kept out of the CLI module so the command function only parses arguments.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

from opdoctor.cli import errors as errors_mod
from opdoctor.cli.errors import Exit, UsageProblem, write_crash_log
from opdoctor.model import Severity, TargetError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import signal
    from typing import Any
else:
    try:
        # The C module: ``signal`` wraps the same functions but builds its enums at import
        # (~1.5 ms of every check); the watchdog below needs neither.
        import _signal as signal
    except ImportError:  # pragma: no cover - not CPython
        import signal

if TYPE_CHECKING:
    from opdoctor.checks import Registry

STATIC_TIMEOUT = 120.0  # seconds for the static analysis of one file (hostile inputs)

class AnalysisTimeout(Exception):
    """The analysis of one file ran past its time limit (a hostile or pathological file)."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise AnalysisTimeout()


def build_options(values: dict[str, Any], registry: Registry) -> Any:
    """CheckOptions from the effective settings (the table's ``option`` column says which
    field each feeds); raises UsageProblem on invalid values."""
    from opdoctor.cli.settings import SETTINGS
    from opdoctor.facts import CheckOptions, parse_expect_op
    from opdoctor.facts.cuda import parse_gpu

    for text in values["expect-op"]:
        try:
            parse_expect_op(text)
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    for g in values["gpu"]:
        try:
            parse_gpu(g)
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    py = values["python"]
    if py is not None and not (os.path.isfile(py) and os.access(py, os.X_OK)):
        raise UsageProblem(f"--python {py}: not an executable file")
    if py is not None:
        env = _option_value("env", values["env"])
        _require_python(py, dict(env) if env is not None else None)
    unknown = [c for c in values["select"] + values["ignore"] + list(values["severity"])
               if not any(code.startswith(c) for code in registry.catalog)]
    if unknown:
        raise UsageProblem(f"no code matches {', '.join(unknown)} (see `opdoctor codes`)")
    kwargs: dict[str, Any] = {}
    for spec in SETTINGS:
        if spec.option:
            kwargs[spec.option] = _option_value(spec.key, values[spec.key])
    return CheckOptions(**kwargs)


def _option_value(key: str, value: Any) -> Any:
    """A setting's value in the form its CheckOptions field takes."""
    if key == "static":
        return not value  # the field is "probe"
    if key == "env":
        if not value:
            return None  # opdoctor's own environment
        merged = dict(os.environ)
        for k, v in value.items():
            if v:
                merged[k] = v
            else:
                merged.pop(k, None)
        return tuple(sorted(merged.items()))
    if key == "cwd":
        return os.path.abspath(value) if value else ""
    if key in ("timeout", "budget-scale"):
        return float(value)
    if isinstance(value, list):
        return tuple(value)
    return value


def check_output_path(path: str, inputs: list[str]) -> None:
    """Refuse, before any analysis, an output the run could not write or must not overwrite:
    a directory, a missing or read-only parent, one of the inputs, or any existing ELF file."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise UsageProblem(f"{path}: is a directory, not an output file")
    parent = os.path.dirname(real) or "."
    if not os.path.isdir(parent):
        raise UsageProblem(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(real) and not os.access(real, os.W_OK)):
        raise UsageProblem(f"{path}: not writable")
    for inp in inputs:
        r = os.path.realpath(inp)
        if real == r or (os.path.isdir(r) and real.startswith(r + os.sep)
                         and _is_shared_library_name(real)):
            raise UsageProblem(f"{path}: is one of the inputs; refusing to overwrite it")
    try:
        with open(real, "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                raise UsageProblem(f"{path}: is an ELF file; refusing to overwrite it with a "
                                   "report")
    except OSError:
        pass  # does not exist yet: fine


def report_outputs(values: dict[str, Any], inputs: list[str], check_paths: bool = True
                   ) -> list[tuple[Any, str | None]]:
    """(format, file) of every report one run writes: ``--format``/``--output`` first (None:
    stdout), then each ``--also-write FORMAT=FILE``; all refused before any analysis when a
    format is unknown, or (``check_paths``) a file is given twice or cannot be written
    (:func:`check_output_path`)."""
    from opdoctor.report import Format

    names = "text | json | sarif | junit | github"
    try:
        outputs: list[tuple[Any, str | None]] = [(Format(values["format"]), values["output"])]
    except ValueError:
        raise UsageProblem(f"unknown format {values['format']!r} ({names})") from None
    for name, path in values["also-write"].items():
        try:
            outputs.append((Format(name), path))
        except ValueError:
            raise UsageProblem(f"--also-write {name}={path}: unknown format {name!r} "
                               f"({names})") from None
    seen: set[str] = set()
    for _form, path in outputs:
        if path is None or not check_paths:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageProblem(f"{path}: given as the output of two reports")
        seen.add(real)
        check_output_path(path, inputs)
    return outputs


def _is_shared_library_name(path: str) -> bool:
    from opdoctor.facts.inputfile import is_shared_library
    return is_shared_library(os.path.basename(path))


def report_crashes(reports: list[Any]) -> bool:
    """Make every crashed check loud: one stderr line each, the tracebacks in the crash log
    (printed with --debug). True when any check crashed."""
    from opdoctor.model import CheckStatus

    crashed = [(r, c) for r in reports for c in r.checks if c.status is CheckStatus.FAILED]
    if not crashed:
        return False
    log = write_crash_log("\n\n".join(f"check {c.name} on {r.target.path}: {c.reason}\n"
                                       f"{c.detail}" for r, c in crashed))
    for r, c in crashed:
        where = f"; details in {log}" if log else ""
        sys.stderr.write(f"opdoctor: internal error: check {c.name!r} {c.reason} on "
                         f"{r.target.path}{where} (rerun with --debug to print it)\n")
        if errors_mod.DEBUG and c.detail:
            sys.stderr.write(c.detail)
    return True


def _require_python(python: str, env: dict[str, str] | None) -> None:
    """--python must answer like a Python: anything else is a usage error (exit 3)."""
    from opdoctor.facts.interp import usable_python

    why = usable_python(python, env)
    if why:
        raise UsageProblem(f"--python {python}: {why}")


def _severity(name: str, what: str) -> Severity:
    try:
        return Severity(name)
    except ValueError:
        raise UsageProblem(f"{what}: {name!r} is not error | warning | info") from None


def run_check_command(paths: list[str], values: dict[str, Any], registry: Registry,
                      verbose: bool, write_baseline: str | None) -> int:
    """Run every target, apply overrides and baseline, render, return the exit code."""
    from opdoctor.facts.inputfile import InputError
    from opdoctor.pipeline import Selection, run_check
    from opdoctor.report import Format, RenderContext, renderer
    from opdoctor.targets import expand
    from opdoctor.verdict.gate import BaselineError, gate_fails, read_baseline
    from opdoctor.verdict.gate import write_baseline as write_bl

    inputs = list(paths)
    outputs = report_outputs(values, inputs)
    threshold = _severity(values["fail-on"], "--fail-on")
    overrides = {code: _severity(level, f"--severity {code}")
                 for code, level in values["severity"].items()}
    options = build_options(values, registry)
    selection = Selection(tuple(values["select"]), tuple(values["ignore"]))
    accepted: set[str] = set()
    if values["baseline"]:
        try:
            accepted = read_baseline(values["baseline"])
        except BaselineError as exc:
            raise UsageProblem(str(exc)) from None

    if write_baseline:
        check_output_path(write_baseline, inputs)

    reports = []
    errors: list[TargetError] = []
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        with expand(paths, options, errors) as targets:
            if not targets and not errors:
                sys.stderr.write(f"opdoctor: error: no shared library found in "
                                 f"{', '.join(paths)} [OD415]\n")
                return Exit.BAD_INPUT
            for t in targets:
                signal.setitimer(signal.ITIMER_REAL, STATIC_TIMEOUT + t.options.timeout)
                try:
                    report = run_check(t.path, t.options, selection=selection, registry=registry,
                                       overrides=overrides, display=t.display)
                except InputError as exc:
                    # Reported beside the other targets; the run ends with exit 2.
                    errors.append(TargetError(t.display, exc.code, str(exc)))
                    continue
                except AnalysisTimeout:
                    errors.append(TargetError(
                        t.display, "OD411", f"analysis exceeded "
                        f"{STATIC_TIMEOUT + t.options.timeout:g} s (pathological or hostile "
                        "file?)"))
                    continue
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                reports.append(report)
    finally:
        signal.signal(signal.SIGALRM, old)
    for err in errors:
        what = err.message if err.target in err.message else f"{err.target}: {err.message}"
        sys.stderr.write(f"opdoctor: error: {what} [{err.code}]\n")
    crashed = report_crashes(reports)

    if write_baseline and not crashed and not errors:
        n = write_bl(write_baseline, reports)
        sys.stderr.write(f"opdoctor: wrote {n} finding(s) to {write_baseline}\n")
        return Exit.OK
    # A crashed check outranks everything (its cause was not checked), then targets that could
    # not be analysed, then findings.
    code = Exit.OK
    if crashed:
        code = Exit.INTERNAL
    elif errors:
        code = Exit.BAD_INPUT
    elif gate_fails(reports, threshold, accepted):
        code = Exit.FINDINGS
    # Files first: a closed stdout (`| head`) must not cost the report files.
    for form, output in sorted(outputs, key=lambda o: o[1] is None):
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            color = form is Format.TEXT and not output and _color(out)
            ctx = RenderContext(registry.catalog, threshold, code, color=color, verbose=verbose,
                                baseline=frozenset(accepted), errors=tuple(errors))
            renderer(form)(reports, ctx, out)
        finally:
            if output:
                out.close()
    return code


def _code_counts(codes: list[str]) -> str:
    """Root codes for a scan cell, each once with its count: "OD201 ×14, OD301" (MindSpore's
    grpc library listed OD201 fourteen times, wrapped over four lines of the table)."""
    seen: dict[str, int] = {}
    for code in codes:
        seen[code] = seen.get(code, 0) + 1
    return ", ".join(c if n == 1 else f"{c} ×{n}" for c, n in seen.items())


def _has_errors(report: Any) -> bool:
    """Whether the verdict of a scanned library stands on an error (not warnings only)."""
    return any(f.severity is Severity.ERROR for f in report.diagnosis.root_findings)


def _color(stream: Any) -> bool:
    """Colour only on a terminal and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def scan_command(python: str | None, fmt: str, output: str | None, fail_on: str, jobs: int,
                 probe: bool, also_write: dict[str, str] | None = None) -> int:
    """Discover, check in parallel, print a summary table (text) or the reports (other
    formats); each ``also_write`` format to its file from the same scan (a CI job's log,
    SARIF and JUnit from one run)."""
    from rich.console import Console
    from rich.progress import Progress

    from opdoctor.checks import load_registry
    from opdoctor.facts import CheckOptions
    from opdoctor.facts.interp import InterpreterError, inspect_interpreter
    from opdoctor.report import Format, RenderContext, renderer
    from opdoctor.targets.discover import discover, scan
    from opdoctor.verdict.gate import gate_fails

    outputs = report_outputs({"format": fmt, "output": output, "also-write": also_write or {}},
                             [])
    threshold = _severity(fail_on, "--fail-on")
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UsageProblem(f"--python {python}: not an executable file")
    if python is not None:
        _require_python(python, None)
    try:
        interp = inspect_interpreter(python)
    except InterpreterError as exc:
        sys.stderr.write(f"opdoctor: error: {exc}\n")
        return Exit.BAD_INPUT
    items = discover(interp)
    options = CheckOptions(python=python, probe=probe)
    err = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
    jobs = jobs or os.cpu_count() or 1
    if err.is_terminal:
        with Progress(console=err, transient=True) as bar:
            task = bar.add_task(f"checking {len(items)} libraries", total=len(items))
            results = scan(items, options, jobs, lambda it: bar.advance(task))
    else:
        results = scan(items, options, jobs)
    reports = [r for _it, r in results if not isinstance(r, str)]
    crashed = [(it, r) for it, r in results if isinstance(r, str)]
    code = Exit.FINDINGS if gate_fails(reports, threshold) else (
        Exit.INTERNAL if crashed else Exit.OK)
    for form, path in outputs:
        out = open(path, "w", encoding="utf-8") if path else sys.stdout  # noqa: SIM115
        try:
            if form is not Format.TEXT:
                ctx = RenderContext(load_registry().catalog, threshold, code)
                renderer(form)(reports, ctx, out)
            else:
                _scan_table(out, interp.invoke, items, results, code)
        finally:
            if path:
                out.close()
    return code


def _scan_table(out: Any, invoke: str, items: list[Any], results: list[Any], code: int
                ) -> None:
    """The scan's text summary: one row per library, its verdict, and the totals."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from opdoctor.report.layout import wrap_width
    from opdoctor.report.text import ops_summary

    # The table fits the terminal (Rich wraps cells, not lines); 140 columns in a log.
    con = Console(file=out, no_color=not _color(out), highlight=False,
                  width=wrap_width(out) or 140)
    # The title on a line of its own: as a Table title Rich wraps it to the table's width
    # (a few columns when the names are short), whatever the terminal's width.
    con.print(escape(f"opdoctor scan — {invoke} ({len(items)} libraries)"),
              soft_wrap=True, style="bold")
    table = Table()
    for col in ("package", "library", "ops", "verdict"):
        table.add_column(col)
    for it, r in results:
        parts = it.path.split(os.sep)
        name = it.name or (os.sep.join(parts[parts.index(it.package):])
                           if it.package in parts else it.path)
        if isinstance(r, str):
            table.add_row(it.package, name, "", f"[red]check crashed: {r}[/]")
            continue
        d = r.diagnosis
        codes = _code_counts([f.code for f in d.root_findings])
        # a warnings-only verdict is not printed as a failure (survey 20: MindSpore's 28
        # libraries with a load-order warning read as 28 failures)
        verdict = "[green]clean[/]" if d.cause == 0 else (
            f"[red]✗ cause {d.cause}: {codes}[/]" if _has_errors(r) else
            f"[yellow]! cause {d.cause}: {codes} (warning)[/]")
        table.add_row(it.package, name, escape(_ops_cell(ops_summary(r))), verdict)
    con.print(table)
    errs = sum(1 for _it, r in results if isinstance(r, str) or (
        r.diagnosis.cause > 0 and _has_errors(r)))
    warns = sum(1 for _it, r in results if not isinstance(r, str) and
                r.diagnosis.cause > 0 and not _has_errors(r))
    con.print(f"{len(items) - errs - warns} clean · {errs} with errors · {warns} with "
              f"warnings only · exit {code}")


SCAN_OPS_SHOWN = 4


def _ops_cell(ops: str) -> str:
    """The scan table's ops cell: the first few ops and how many more. A library's whole
    inventory made the table of 72 libraries 1,538 lines long (executorch, IPEX: hundreds of
    ops each); the full list is in `opdoctor check <library>` and in the JSON."""
    parts = ops.split("; ")
    if len(parts) <= SCAN_OPS_SHOWN:
        return ops
    return "; ".join(parts[:SCAN_OPS_SHOWN]) + f"; … +{len(parts) - SCAN_OPS_SHOWN} more"
