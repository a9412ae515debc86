"""From all findings of a run to one verdict: the most likely cause, its root findings, and the
consequences folded under them.

Ranking follows the order in which things fail in a real process: a broken file (4) stops
everything; a missing dependency (2) stops the load before any symbol is bound; an unbindable
symbol or missing version (3) stops it before any static initialiser runs; only then can
registration (1) go wrong; the import chain (5) decides whether the load happens at all.
Within that order, errors outrank warnings, which outrank infos.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opdoctor.model import Cause, Finding, Report, Severity

# The order in which the loader and the framework hit problems (first = root when present).
FAIL_ORDER = (Cause.BUILD, Cause.IMPORT_CHAIN, Cause.LIBRARY_PATH, Cause.VERSION,
              Cause.REGISTRATION)

# A finding of the key code explains findings of these codes when both are present.
# Probe codes listed here confirm the static finding with the real load's evidence.
EXPLAINS: dict[str, tuple[str, ...]] = {
    "OD201": ("OD301", "OD304", "OD101", "OD106", "OD220", "OD321"),
    "OD203": ("OD301", "OD304", "OD101", "OD106", "OD220", "OD321"),
    "OD302": ("OD301", "OD322", "OD321"),
    "OD303": ("OD304", "OD301", "OD321"),
    "OD304": ("OD301", "OD321"),
    "OD301": ("OD321",),
    "OD101": ("OD121", "OD106"),
    "OD102": ("OD123",),
    "OD105": ("OD106",),
    "OD106": ("OD122",),
    "OD313": ("OD310", "OD311"),
    "OD502": ("OD510", "OD511", "OD220"),
    "OD503": ("OD511",),
    "OD504": ("OD511",),
    "OD506": ("OD505", "OD511"),
    "OD508": ("OD510", "OD511", "OD220"),
    "OD510": ("OD511", "OD220"),
}

# Findings that report *that* something failed rather than why: they become the root only when
# nothing else explains the failure.
SYMPTOMS = frozenset({"OD511", "OD512", "OD130", "OD420"})


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of one report."""

    cause: int  # 1–5, 0 when nothing is wrong
    confidence: str  # high / medium / low
    summary: str
    root_findings: tuple[Finding, ...]
    consequences: dict[str, tuple[Finding, ...]] = field(default_factory=dict)


def diagnose(report: Report) -> Diagnosis:
    """Rank the causes of ``report`` and name the root."""
    serious = [f for f in report.findings if f.severity is not Severity.INFO]
    if not serious:
        note = " (informational notes only)" if report.findings else ""
        return Diagnosis(0, "high", f"No problem found{note}.", ())
    causal = [f for f in serious if f.code not in SYMPTOMS] or serious
    worst = max(f.severity.rank for f in causal)
    top = [f for f in causal if f.severity.rank == worst]
    for cause in FAIL_ORDER:
        roots = [f for f in top if f.cause == cause]
        if roots:
            break
    # A secondary root explained by a primary one is not a root.
    root_codes = {f.code for f in roots}
    roots = [r for r in roots if not any(r.code in EXPLAINS.get(c, ()) for c in root_codes
                                         if c != r.code)]
    explained: dict[str, tuple[Finding, ...]] = {}
    for r in roots:
        folded = tuple(f for f in report.findings
                       if f not in roots and (f.code in EXPLAINS.get(r.code, ())
                                              or (f.code == "OD512" and r.cause != 5)))
        if folded:
            explained[r.code] = folded
    first = roots[0]
    confidence = "high" if first.severity is Severity.ERROR else "medium"
    more = f" (+{len(roots) - 1} more)" if len(roots) > 1 else ""
    fix = f" Fix: {first.fix}" if first.fix else ""
    summary = (f"Most likely cause: {int(first.cause)} — {first.cause.title}: "
               f"{first.message}{more}.{fix}")
    return Diagnosis(int(first.cause), confidence, summary, tuple(roots), explained)
