"""Per-cause status of a report: found / clean / not checked (and why), shared by all formats."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

from opdoctor.model import Cause, CheckStatus, Finding, Report, Severity

# How the pipeline words the skip reason of a stage that ran out of budget (pipeline._run_one).
STOPPED_PREFIX = "stopped at its budget"


class CauseState(str, Enum):
    """What the run established about one cause."""

    FOUND = "found"  # at least one finding of this cause
    CLEAN = "clean"  # at least one check of this cause ran and found nothing
    NOT_CHECKED = "not_checked"  # no check of this cause ran


@dataclass(frozen=True)
class CauseStatus:
    """One row of the ✓/✗/– table."""

    cause: Cause
    state: CauseState
    findings: tuple[Finding, ...]
    reason: str  # for NOT_CHECKED: why; for CLEAN: which checks ran


def cause_statuses(report: Report) -> list[CauseStatus]:
    """One status per cause, worst first: found (by severity), clean, not checked."""
    rows: list[CauseStatus] = []
    from opdoctor.verdict.diagnosis import NOT_A_VERDICT

    # A probe whose load (or import) did not complete established nothing about the causes it
    # found nothing of: "✓ checked by probe" beside a failed import was a claim of a check that
    # never got that far (survey 14's O2).
    probe = report.sections.get("probe") or {}
    stopped_probe = bool(probe.get("ran")) and probe.get("outcome") != "loaded"
    for cause in Cause:
        # A note about the run (the probe stopped before the library) is not a finding on it.
        found = tuple(f for f in report.findings if f.cause == cause
                      and f.code not in NOT_A_VERDICT)
        runs = [c for c in report.checks if cause in c.causes]
        ran = [c.name for c in runs if c.status == CheckStatus.RAN
               and not (stopped_probe and c.name == "probe")]
        crashed = [c.name for c in runs if c.status == CheckStatus.FAILED]
        # A stage stopped at its budget (OD190) may have missed findings of this cause.
        stopped = [c.name for c in runs if c.status == CheckStatus.SKIPPED
                   and c.reason.startswith(STOPPED_PREFIX)]
        if found:
            rows.append(CauseStatus(cause, CauseState.FOUND, found, ""))
        elif crashed:
            # A check that crashed proves nothing about its cause: never claim it is clean.
            rows.append(CauseStatus(cause, CauseState.NOT_CHECKED, (),
                                    f"{', '.join(crashed)} crashed (opdoctor bug)"))
        elif stopped:
            rows.append(CauseStatus(cause, CauseState.NOT_CHECKED, (),
                                    f"{', '.join(stopped)} stopped at its time budget"))
        elif ran:
            rows.append(CauseStatus(cause, CauseState.CLEAN, (), "checked by " + ", ".join(ran)))
        else:
            why = "; ".join(f"{c.name}: {c.status.value}"
                            + (f" ({c.reason})" if c.reason else "")
                            if not (stopped_probe and c.name == "probe") else
                            f"probe: its run ended \"{probe.get('outcome')}\" before it "
                            "could tell" for c in runs)
            rows.append(CauseStatus(cause, CauseState.NOT_CHECKED, (),
                                    why or "no check for this cause is installed"))
    order = {CauseState.FOUND: 0, CauseState.CLEAN: 1, CauseState.NOT_CHECKED: 2}

    def key(r: CauseStatus) -> tuple[int, int, int]:
        worst = max((f.severity.rank for f in r.findings), default=0)
        return (order[r.state], -worst, int(r.cause))

    return sorted(rows, key=key)


def severity_counts(report: Report) -> dict[Severity, int]:
    """Number of findings per severity (every severity present, possibly 0)."""
    counts = Counter(f.severity for f in report.findings)
    return {s: counts.get(s, 0) for s in Severity}
