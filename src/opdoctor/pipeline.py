"""Runs the registered checks over one target and assembles the report."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from opdoctor.checks import Registry, load_registry
from opdoctor.checks.base import Check
from opdoctor.facts import CheckOptions, Facts, HostInfo
from opdoctor.model import CheckRun, CheckStatus, Finding, Report, TargetInfo


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


def _run_one(check: Check, facts: Facts, selection: Selection, sections: dict[str, Any]
             ) -> tuple[CheckRun, list[Finding]]:
    wanted = [d.code for d in check.codes if selection.wants(d.code)]
    if not wanted:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason="none of its codes is selected"), []
    if check.needs_elf and facts.is_package_dir:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason="the package has no compiled library to analyse"), []
    if check.needs_elf and facts.blocker:
        return CheckRun(check.name, check.causes, CheckStatus.SKIPPED,
                        reason=f"{facts.blocker}"), []
    if check.applies is not None:
        why_not = check.applies(facts)
        if why_not:
            return CheckRun(check.name, check.causes, CheckStatus.SKIPPED, reason=why_not), []
    declared = {d.code for d in check.codes}
    start = time.perf_counter()
    try:
        found = list(check.run(facts))
        if check.section is not None:
            sections[check.name] = check.section(facts)
    except Exception as exc:  # a crashing check is reported, the others still run
        return CheckRun(check.name, check.causes, CheckStatus.FAILED,
                        time.perf_counter() - start, f"crashed: {type(exc).__name__}: {exc}"), []
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
    host: HostInfo | None = None,
) -> Report:
    """Check one library; raises :class:`~opdoctor.facts.inputfile.InputError` if unreadable."""
    registry = registry or load_registry()
    selection = selection or Selection()
    start = time.perf_counter()
    facts = Facts(path, options, host)
    if facts.is_package_dir:
        data = None
        report = Report(TargetInfo(path, None, f"Python package {facts.options.package}"))
        if facts.options.probe:
            facts.start_probe()
    else:
        data = facts.file  # raises InputError before any check runs
        header = facts.structure.header
        report = Report(TargetInfo(path, data.size, header.describe() if header else ""))
        if facts.options.probe and not facts.blocker and not facts.framework_library:
            facts.start_probe()  # runs concurrently with the static checks below
    for check in registry.checks:
        run, found = _run_one(check, facts, selection, report.sections)
        report.checks.append(run)
        report.findings.extend(found)
    report.seconds = time.perf_counter() - start
    if data is not None:
        data.close()
    return report
