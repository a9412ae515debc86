"""Runs the registered checks over one target and assembles the report."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from opdoctor.checks import Registry, load_registry
from opdoctor.checks.base import OD190, Check
from opdoctor.facts import CheckOptions, Facts, budget
from opdoctor.model import CheckRun, CheckStatus, Finding, Report, Severity, TargetInfo
from opdoctor.verdict.causes import STOPPED_PREFIX
from opdoctor.verdict.diagnosis import diagnose
from opdoctor.verdict.gate import apply_overrides
from opdoctor.verdict.observed import disproved_by_the_load, with_failed_first_loads

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Selection:
    """``--select`` / ``--ignore``: code prefixes, as in ruff (``OD4`` selects all of cause 4)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def wants(self, code: str) -> bool:
        """True when findings of ``code`` should be reported."""
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        return not any(code.startswith(p) for p in self.ignore)


# A stage's budget grows by one base budget per this many bytes of target: reading a 2 GB
# CUDA library is a bigger job than reading a 2 MB extension.
BUDGET_BYTES_PER_SHARE = 256 << 20


def stage_budget(check: Check, target_bytes: int, scale: float) -> float:
    """CPU seconds ``check`` may spend on a target of ``target_bytes`` bytes."""
    return check.budget * (1.0 + target_bytes / BUDGET_BYTES_PER_SHARE) * scale


def _secs(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds >= 1 else f"{seconds:.2f}"


def _some(paths: list[str]) -> str:
    """The first three file names of ``paths`` and how many more: "a.so, b.so, c.so (+2 more)"."""
    names = ", ".join(os.path.basename(f) for f in paths[:3])
    return names + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")


def _no_library_reason(facts: Facts) -> str:
    """Why an ELF check did not run on a package: say whether the package has compiled
    libraries its import chain does not reach (never "has none" when it ships some)."""
    chain = facts.chain
    on_disk = chain.extensions_on_disk if chain is not None else []
    if not on_disk:
        return "the package has no compiled library to analyse"
    return (f"the import chain reaches none of the package's {len(on_disk)} compiled "
            f"libraries ({_some(on_disk)}) statically; name one to analyse it")


def _run_one(check: Check, facts: Facts, selection: Selection, sections: dict[str, Any],
             target_bytes: int = 0) -> tuple[CheckRun, list[Finding]]:
    wanted = [d.code for d in check.codes if selection.wants(d.code)]
    if not wanted:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason="none of its codes is selected"), []
    if check.needs_elf and facts.is_package_dir:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason=_no_library_reason(facts)), []
    if check.needs_elf and facts.blocker:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason=f"{facts.blocker}"), []
    if check.applies is not None:
        why_not = check.applies(facts)
        if why_not:
            return CheckRun(check.name, check.causes, CheckStatus.SKIPPED, reason=why_not), []
    declared = {d.code for d in check.codes}
    start = time.perf_counter()
    seconds_allowed = stage_budget(check, target_bytes, facts.options.budget_scale)
    found: list[Finding] = []
    try:
        with budget.stage(check.name, seconds_allowed):
            # Findings already yielded when the stage runs out are complete and kept.
            for finding in check.run(facts):
                found.append(finding)
            if check.section is not None:
                sections[check.name] = check.section(facts)
    except budget.BudgetExceeded as stop:
        # Stopped, not crashed: the causes it covers are "not checked", the others still run.
        note = OD190.finding(
            facts.path, f"stage {check.name} stopped after {_secs(stop.used)} s: {stop.doing} "
            f"(budget {seconds_allowed:.3g} s of CPU time); what it would have found is "
            "missing from this report",
            evidence=[f"stage: {check.name}", f"budget: {seconds_allowed:.3g} s CPU "
                      f"(base {check.budget:g} s, --budget-scale "
                      f"{facts.options.budget_scale:g})",
                      f"stopped while: {stop.doing}"])
        kept = [f for f in found if f.code in {d.code for d in check.codes}]
        return (CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                         time.perf_counter() - start,
                         f"{STOPPED_PREFIX} after {_secs(stop.used)} s of CPU time"),
                [f for f in [*kept, note] if selection.wants(f.code)])
    except Exception as exc:  # a crashing check is reported, the others still run
        import traceback

        return CheckRun(check.name, check.causes, CheckStatus.FAILED,
                        time.perf_counter() - start, f"crashed: {type(exc).__name__}: {exc}",
                        traceback.format_exc()), []
    seconds = time.perf_counter() - start
    stray = sorted({f.code for f in found} - declared)
    if stray:
        return CheckRun(check.name, check.causes, CheckStatus.FAILED, seconds,
                        f"emitted undeclared code(s) {', '.join(stray)}"), []
    return (CheckRun(check.name, check.causes, CheckStatus.RAN, seconds),
            [f for f in found if selection.wants(f.code)])


def run_check(
    path: str,
    options: CheckOptions | None = None,
    selection: Selection | None = None,
    registry: Registry | None = None,
    overrides: dict[str, Severity] | None = None,
    display: str | None = None,
) -> Report:
    """Check one target: Facts → checks → findings → overrides → diagnosis → Report.

    Raises :class:`~opdoctor.facts.inputfile.InputError` when the file cannot be read.
    ``overrides`` (``--severity``) change findings' severities before the diagnosis, so the
    verdict and every format agree; ``display`` is how reports name the target (a wheel
    member keeps its in-wheel path).
    """
    registry = registry or load_registry()
    selection = selection or Selection()
    start = time.perf_counter()
    facts = Facts(path, options)
    data = None
    if facts.is_package_dir:
        pkg = facts.options.package
        # The directory is the package itself, or (the package was not found) the directory
        # it was looked up from: the header must not call the latter the package.
        is_pkg = os.path.basename(os.path.abspath(path)) == (pkg or "").split(".")[-1]
        # A single-file module (soundfile.py) is no package directory: the report is about
        # the module (its chain is cheap to read: no __init__.py to follow).
        winner = None if is_pkg or facts.chain is None else facts.chain.winner
        if is_pkg:
            target = TargetInfo(display or path, None, f"Python package {pkg}")
        elif winner is not None and winner.kind == "module":
            target = TargetInfo(winner.path if display in (None, path) else display, None,
                                f"Python module {pkg}")
        else:
            target = TargetInfo(display or path, None,
                                f"the directory Python package {pkg} was looked up from")
        if facts.options.probe:
            facts.start_probe()
    else:
        data = facts.file  # raises InputError before any check runs
        header = facts.structure.header
        kind = header.describe() if header else ""
        if display and display != path and os.path.isdir(display) and facts.options.package:
            # A package directory named by the user: say so, and which library it loads.
            kind = (f"Python package {facts.options.package}, loads "
                    f"{os.path.basename(path)}" + (f": {kind}" if kind else ""))
        target = TargetInfo(display or path, data.size, kind)
        if facts.options.probe and not facts.blocker and not facts.framework_library and \
                not facts.unpacked_on_noexec:
            facts.start_probe()  # runs concurrently with the static checks below
    checks: list[CheckRun] = []
    findings: list[Finding] = []
    sections: dict[str, Any] = {}
    try:
        size = data.size if data is not None else 0
        for check in registry.checks:
            run, found = _run_one(check, facts, selection, sections, size)
            checks.append(run)
            findings.extend(found)
    finally:
        if data is not None:
            data.close()
    findings = with_failed_first_loads(facts, disproved_by_the_load(facts, findings))
    findings = apply_overrides(findings, overrides or {})
    diagnosis = diagnose(findings, facts.path if facts.options.named else "")
    unread = _unread_libraries(facts) if diagnosis.cause == 0 else ""
    crashed = [c.name for c in checks if c.status is CheckStatus.FAILED]
    if diagnosis.cause == 0 and crashed:
        # A check that crashed ruled nothing out: "No problem found." said it had (the exit
        # code, 4, and the stderr line did say so).
        diagnosis = dataclasses.replace(
            diagnosis, confidence="low", summary=diagnosis.summary[:-1].replace(
                "No problem found", "No problem found by the checks that ran", 1) +
            f"; {len(crashed)} crashed ({', '.join(crashed)}: opdoctor's bug, see stderr), "
            "so what they check is not ruled out.")
    elif unread:
        # bitblas, transformer-engine: --static read the package's Python and none of its
        # libraries; "No problem found." claimed what was not looked at.
        diagnosis = dataclasses.replace(
            diagnosis, confidence="low", summary=diagnosis.summary[:-1].replace(
                "No problem found", "No problem found in what was read", 1) + f"; {unread}, "
            "and no probe imported it: check one of them, or run with the probe.")
    elif diagnosis.cause == 0 and (idle := _libraries_the_import_left(facts)):
        # torch-memory-saver: the import works and loads its hook libraries only on first use.
        diagnosis = dataclasses.replace(
            diagnosis, summary=f"{diagnosis.summary[:-1]}: the import works; {idle}.")
    report = Report(target, findings, checks, diagnosis, sections, time.perf_counter() - start)
    return _in_the_wheels_terms(report, path, display) if facts.options.wheel else report


def _in_the_wheels_terms(report: Report, path: str, display: str | None) -> Report:
    """A wheel member's report with the temporary copy's paths named as in the wheel
    (``/tmp/opdoctor-wheel-…/PIL/x.so`` → ``pillow-….whl!/PIL/x.so``): the copy is gone when
    the command ends, and a baseline's subjects must not change from run to run (survey 20:
    evidence and fixes named the copy). The findings keep their identity within the report:
    the diagnosis refers to the rewritten ones."""
    if not display or "!/" not in display:
        return report
    wheel, _, rel = display.partition("!/")
    if not rel or not path.endswith(rel):
        return report
    root, shown = path[:-len(rel)], wheel + "!/"
    if not root.endswith(os.sep):
        return report

    def text(value: str) -> str:
        return value.replace(root, shown) if root in value else value

    def deep(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, dict):
            return {text(k) if isinstance(k, str) else k: deep(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(deep(v) for v in value)
        return value

    def rewritten(f: Finding) -> Finding:
        return dataclasses.replace(f, subject=text(f.subject), message=text(f.message),
                                   evidence=tuple(text(e) for e in f.evidence), fix=text(f.fix))

    new = {id(f): rewritten(f) for f in report.findings}

    def same(f: Finding) -> Finding:
        return new.get(id(f)) or rewritten(f)

    diag = report.diagnosis
    diagnosis = dataclasses.replace(
        diag, summary=text(diag.summary), root_findings=tuple(same(f) for f in diag.root_findings),
        consequences={k: tuple(same(f) for f in v) for k, v in diag.consequences.items()})
    return dataclasses.replace(report, findings=[new[id(f)] for f in report.findings],
                               diagnosis=diagnosis, sections=deep(report.sections))


def _libraries_the_import_left(facts: Facts) -> str:
    """For a package whose probe imported it without mapping any of its compiled libraries:
    "it loaded none of its N compiled libraries (a.so, …)"; "" otherwise."""
    if not facts.is_package_dir or not facts.options.probe:
        return ""
    chain = facts.chain
    on_disk = chain.extensions_on_disk if chain is not None else []
    res = facts.probe_result() if on_disk else None
    if res is None or res.load_message or any(res.maps(f) for f in on_disk):
        return ""
    if res.tensorflow is not None and {os.path.realpath(f) for f in on_disk} & {
            os.path.realpath(m) for m in res.tensorflow.mapped_before}:
        # mapped before the package's own import: TensorFlow's import imports cv2, and the
        # probe imported TensorFlow first (survey 20: "it did not load cv2.abi3.so", it had)
        return ""
    if len(on_disk) == 1:
        return (f"it did not load its compiled library ({_some(on_disk)}) — the package "
                "loads it later (first use), or never: check it to analyse it")
    return (f"it loaded none of its {len(on_disk)} compiled libraries ({_some(on_disk)}) — "
            "the package loads them later (first use), or never: check one to analyse it")


def _unread_libraries(facts: Facts) -> str:
    """For a package checked without the probe whose import chain reaches none of its compiled
    libraries: "its N compiled libraries (a.so, …) were not analysed"; "" otherwise."""
    if not facts.is_package_dir or facts.options.probe:
        return ""
    chain = facts.chain
    on_disk = chain.extensions_on_disk if chain is not None else []
    if not on_disk:
        return ""
    if len(on_disk) == 1:
        return f"its compiled library ({_some(on_disk)}) was not analysed"
    return f"its {len(on_disk)} compiled libraries ({_some(on_disk)}) were not analysed"
