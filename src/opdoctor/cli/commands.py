"""The body of ``opdoctor check``: effective settings → targets → reports → gate → output.

Kept out of the CLI module so the command function only parses arguments.
"""

from __future__ import annotations

import os
import signal
import sys
from enum import IntEnum
from types import FrameType
from typing import Any

from opdoctor.checks import Registry
from opdoctor.model import Severity

STATIC_TIMEOUT = 120.0  # seconds for the static analysis of one file (hostile inputs)

class Exit(IntEnum):
    """Documented exit codes (README, --help)."""

    OK = 0
    FINDINGS = 1
    BAD_INPUT = 2
    USAGE = 3
    INTERNAL = 4




class UsageProblem(ValueError):
    """A setting is invalid (turned into exit code 3 by the CLI)."""


class AnalysisTimeout(Exception):
    """The analysis of one file ran past its time limit (a hostile or pathological file)."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise AnalysisTimeout()


def build_options(values: dict[str, Any], registry: Registry) -> Any:
    """CheckOptions from the effective settings; raises UsageProblem on invalid values."""
    from opdoctor.checks.registration import parse_expect_op
    from opdoctor.facts import CheckOptions
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
    env = None
    if values["env"]:
        merged = dict(os.environ)
        for k, v in values["env"].items():
            if v:
                merged[k] = v
            else:
                merged.pop(k, None)
        env = tuple(sorted(merged.items()))
    if py is not None:
        _require_python(py, dict(env) if env is not None else None)
    unknown = [c for c in values["select"] + values["ignore"] + list(values["severity"])
               if not any(code.startswith(c) for code in registry.catalog)]
    if unknown:
        raise UsageProblem(f"no code matches {', '.join(unknown)} (see `opdoctor codes`)")
    return CheckOptions(
        expect_ops=tuple(values["expect-op"]), expect_symbols=tuple(values["expect-symbol"]),
        gpus=tuple(values["gpu"]), python=py, env=env, probe=not values["static"],
        timeout=float(values["timeout"]), probe_memory_mb=int(values["probe-memory"]),
        smoke=bool(values["smoke"]), preload=tuple(values["preload"]),
        against_site_packages=bool(values["against-site-packages"]),
        package=values["package"], cwd=os.path.abspath(values["cwd"]) if values["cwd"] else "")


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
    from opdoctor.targets import WheelError, expand
    from opdoctor.verdict.gate import BaselineError, apply_overrides, gate_fails, read_baseline
    from opdoctor.verdict.gate import write_baseline as write_bl

    try:
        form = Format(values["format"])
    except ValueError:
        raise UsageProblem(f"unknown format {values['format']!r} "
                           "(text | json | sarif | junit | github)") from None
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

    reports = []
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        with expand(paths, options) as targets:
            if not targets:
                sys.stderr.write(f"opdoctor: error: no shared library found in "
                                 f"{', '.join(paths)} [OD401]\n")
                return Exit.BAD_INPUT
            for t in targets:
                signal.setitimer(signal.ITIMER_REAL, STATIC_TIMEOUT + t.options.timeout)
                try:
                    report = run_check(t.path, t.options, selection=selection, registry=registry)
                except InputError as exc:
                    sys.stderr.write(f"opdoctor: error: {exc} [{exc.code}]\n")
                    return Exit.BAD_INPUT
                except AnalysisTimeout:
                    sys.stderr.write(f"opdoctor: error: {t.display}: analysis exceeded "
                                     f"{STATIC_TIMEOUT + t.options.timeout:g} s (pathological "
                                     "or hostile file?)\n")
                    return Exit.BAD_INPUT
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                if t.display != t.path:
                    report.target = type(report.target)(t.display, report.target.size,
                                                        report.target.kind)
                apply_overrides(report, overrides)
                reports.append(report)
    except WheelError as exc:
        sys.stderr.write(f"opdoctor: error: {exc} [OD405]\n")
        return Exit.BAD_INPUT
    finally:
        signal.signal(signal.SIGALRM, old)

    if write_baseline:
        n = write_bl(write_baseline, reports)
        sys.stderr.write(f"opdoctor: wrote {n} finding(s) to {write_baseline}\n")
        return Exit.OK
    code = Exit.OK
    if gate_fails(reports, threshold, accepted):
        code = Exit.FINDINGS
    elif any(c.status.value == "failed" for r in reports for c in r.checks):
        code = Exit.INTERNAL
    output = values["output"]
    out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    try:
        color = form is Format.TEXT and not output and _color(out)
        ctx = RenderContext(registry.catalog, threshold, code, color=color, verbose=verbose,
                            baseline=frozenset(accepted))
        renderer(form)(reports, ctx, out)
    finally:
        if output:
            out.close()
    return code


def _color(stream: Any) -> bool:
    """Colour only on a terminal and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def scan_command(python: str | None, fmt: str, output: str | None, fail_on: str, jobs: int,
                 probe: bool) -> int:
    """Discover, check in parallel, print a summary table (text) or the reports (other
    formats)."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from opdoctor.checks import load_registry
    from opdoctor.facts import CheckOptions
    from opdoctor.facts.interp import InterpreterError, inspect_interpreter
    from opdoctor.report import Format, RenderContext, renderer
    from opdoctor.targets.discover import discover, scan
    from opdoctor.verdict.diagnosis import diagnose
    from opdoctor.verdict.gate import gate_fails

    try:
        form = Format(fmt)
    except ValueError:
        raise UsageProblem(f"unknown format {fmt!r}") from None
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
    out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    try:
        if form is not Format.TEXT:
            ctx = RenderContext(load_registry().catalog, threshold, code)
            renderer(form)(reports, ctx, out)
            return code
        con = Console(file=out, no_color=not _color(out), highlight=False, width=140)
        table = Table(title=f"opdoctor scan — {interp.invoke} ({len(items)} libraries)")
        for col in ("package", "library", "verdict"):
            table.add_column(col)
        for it, r in results:
            parts = it.path.split(os.sep)
            name = os.sep.join(parts[parts.index(it.package):]) if it.package in parts \
                else it.path
            if isinstance(r, str):
                table.add_row(it.package, name, f"[red]check crashed: {r}[/]")
                continue
            d = diagnose(r)
            verdict = "[green]clean[/]" if d.cause == 0 else (
                f"[red]cause {d.cause}: {', '.join(f.code for f in d.root_findings)}[/]")
            table.add_row(it.package, name, verdict)
        con.print(table)
        bad = sum(1 for _it, r in results if isinstance(r, str) or diagnose(r).cause)
        con.print(f"{len(items) - bad} clean · {bad} with findings · exit {code}")
    finally:
        if output:
            out.close()
    return code
