"""Versioned JSON output (``schema_version`` 1; schema in ``opdoctor/schema/report-v1.json``)."""

from __future__ import annotations

from opdoctor import __version__
from opdoctor.model import Finding, Report
from opdoctor.report import RenderContext, jsontext
from opdoctor.verdict.causes import cause_statuses, severity_counts

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, TextIO

SCHEMA_VERSION = 1


def finding_dict(f: Finding, ctx: RenderContext) -> dict[str, Any]:
    """One finding as JSON: cause as its number, severity as its name."""
    doc = ctx.catalog.get(f.code)
    return {
        "code": f.code,
        "title": doc.title if doc else "",
        "severity": f.severity.value,
        "cause": int(f.cause),
        "subject": f.subject,
        "message": f.message,
        "evidence": list(f.evidence),
        "fix": f.fix,
    }


def report_dict(report: Report, ctx: RenderContext) -> dict[str, Any]:
    """One target's report as a JSON-ready dict."""
    counts = severity_counts(report)
    diag = report.diagnosis
    return {
        "target": {"path": report.target.path, "size": report.target.size,
                   "kind": report.target.kind},
        "summary": {s.value: n for s, n in counts.items()},
        "diagnosis": {
            "cause": diag.cause,
            "confidence": diag.confidence,
            "summary": diag.summary,
            "root_findings": [f.code for f in diag.root_findings],
            "consequences": {k: [f.code for f in v] for k, v in diag.consequences.items()},
        },
        "causes": [
            {"cause": int(r.cause), "title": r.cause.title, "state": r.state.value,
             "codes": sorted({f.code for f in r.findings}), "reason": r.reason}
            for r in cause_statuses(report)
        ],
        "findings": [finding_dict(f, ctx) for f in report.findings],
        "checks": [
            {"name": c.name, "causes": [int(x) for x in c.causes], "status": c.status.value,
             "seconds": round(c.seconds, 6), "reason": c.reason}
            for c in report.checks
        ],
        "sections": report.sections,
        "seconds": round(report.seconds, 6),
    }


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Write all reports as one JSON document."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "opdoctor", "version": __version__},
        "fail_on": ctx.fail_on.value,
        "exit_code": ctx.exit_code,
        "reports": [report_dict(r, ctx) for r in reports],
        # Targets that could not be analysed (missing, unreadable, bad wheel, timeout).
        "errors": [{"target": e.target, "code": e.code, "message": e.message}
                   for e in ctx.errors],
    }
    # One write: json.dump with an indent writes each of its ~1,000 pieces separately, each a
    # system call when the stream is unbuffered (PYTHONUNBUFFERED, a pipe to a CI log).
    out.write(jsontext.dumps(doc) + "\n")  # json.dumps(doc, indent=2), faster
