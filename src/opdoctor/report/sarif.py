"""SARIF 2.1.0 output: one run, rules from the code catalog's documentation, one result per
finding (GitHub code scanning, Azure DevOps, IDE viewers read it)."""

from __future__ import annotations

import json
import os

from opdoctor import __version__
from opdoctor.codes import SECTION_TITLES, CodeDoc
from opdoctor.model import Report, Severity
from opdoctor.report import RenderContext
from opdoctor.report.escape import printable, uri_path
from opdoctor.verdict.gate import fingerprint

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, TextIO

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(doc: CodeDoc) -> dict[str, Any]:
    md = "\n\n".join(f"**{title}**: {'; '.join(v) if isinstance(v, tuple) else v}"
                     for key, title in SECTION_TITLES.items()
                     for v in [getattr(doc, key)])
    return {
        "id": doc.code,
        "name": "".join(w.capitalize() for w in doc.title.replace("/", " ").split()
                        if w.isalnum()) or doc.code,
        "shortDescription": {"text": doc.title},
        "fullDescription": {"text": doc.what},
        "help": {"text": f"{doc.why} Fix: {doc.fix}", "markdown": md},
        "defaultConfiguration": {"level": LEVEL[doc.severity]},
        "properties": {"cause": int(doc.cause), "causeTitle": doc.cause.title},
    }


def _uri(path: str) -> str:
    """A URI reference: relative to the working directory when below it, percent-encoded so
    that any byte of a file name (space, newline, %, #, undecodable bytes) stays valid."""
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return uri_path(rel if not rel.startswith("..") else path)


def _clean(value: Any) -> Any:
    """Every string of the log as valid UTF-8 (undecodable file-name bytes as \\xNN)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def sarif_log(reports: list[Report], ctx: RenderContext) -> dict[str, Any]:
    """The SARIF log as a dict (strings valid UTF-8, URIs percent-encoded)."""
    codes = sorted({f.code for r in reports for f in r.findings})
    rules = [_rule(ctx.catalog[c]) for c in codes if c in ctx.catalog]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    verdicts = []
    for report in reports:
        diag = report.diagnosis
        roots = {id(f) for f in diag.root_findings}
        verdicts.append({"target": _uri(report.target.path), "cause": diag.cause,
                         "confidence": diag.confidence, "summary": diag.summary,
                         "roots": [f.code for f in diag.root_findings]})
        for f in report.findings:
            fp = fingerprint(report, f)
            res: dict[str, Any] = {
                "ruleId": f.code,
                "level": LEVEL[f.severity],
                "message": {"text": f"{f.message}" + (f" — fix: {f.fix}" if f.fix else "")},
                "locations": [{"physicalLocation": {"artifactLocation": {
                    "uri": _uri(report.target.path)}}}],
                "partialFingerprints": {"opdoctor/v1": fp},
                "properties": {"cause": int(f.cause), "subject": f.subject,
                               "evidence": list(f.evidence), "root": id(f) in roots},
            }
            if f.code in index:
                res["ruleIndex"] = index[f.code]
            if fp in ctx.baseline:
                res["baselineState"] = "unchanged"
            results.append(res)
    log: dict[str, Any] = _clean({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "opdoctor", "version": __version__,
                                "informationUri": "https://github.com/opdoctor/opdoctor",
                                "rules": rules}},
            "invocations": [{
                "executionSuccessful": ctx.exit_code in (0, 1),
                "exitCode": ctx.exit_code,
                # Targets that could not be analysed at all.
                "toolExecutionNotifications": [{
                    "level": "error",
                    "message": {"text": f"{e.code} not analysed: {e.message}"},
                    "locations": [{"physicalLocation": {"artifactLocation": {
                        "uri": _uri(e.target)}}}],
                } for e in ctx.errors],
            }],
            "results": results,
            # The verdict of each target (most likely cause, its root findings), so a SARIF
            # consumer sees the same diagnosis as the text and JSON reports.
            "properties": {"diagnoses": verdicts},
        }],
    })
    return log


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Write the SARIF log."""
    json.dump(sarif_log(reports, ctx), out, indent=2)
    out.write("\n")
