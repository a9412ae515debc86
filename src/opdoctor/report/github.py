"""GitHub Actions workflow commands: one annotation per finding (::error / ::warning /
::notice), attached to the library's path, with the evidence and the fix in the message."""

from __future__ import annotations

import os

from opdoctor.model import Report, Severity
from opdoctor.report import RenderContext
from opdoctor.report.escape import printable
from opdoctor.verdict.gate import fingerprint

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import TextIO

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow-command message (%, CR, LF; undecodable bytes as \\xNN), as
    @actions/core's escapeData does: nothing in it can end the line or start a command."""
    return printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (also ':' and ',')."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Write one annotation per finding, then a summary line per target."""
    for report in reports:
        path = report.target.path
        rel = os.path.relpath(path) if os.path.isabs(path) else path
        for f in report.findings:
            doc = ctx.catalog.get(f.code)
            title = f"{f.code} {doc.title if doc else ''}".strip()
            if fingerprint(report, f) in ctx.baseline:
                title += " (baseline)"
            body = "\n".join([f.message, *[f"evidence: {e}" for e in f.evidence[:8]],
                              f"fix: {f.fix}" if f.fix else ""]).strip()
            out.write(f"::{COMMAND[f.severity]} file={escape_property(rel)},"
                      f"title={escape_property(title)}::{escape_data(body)}\n")
        # A plain log line, but the runner still parses any line that starts with "::": the
        # file name (it may contain a newline and "::error …") is escaped like a message.
        out.write(f"opdoctor: {escape_data(rel)}: {escape_data(report.diagnosis.summary)}\n")
    for e in ctx.errors:
        rel = os.path.relpath(e.target) if os.path.isabs(e.target) else e.target
        out.write(f"::error file={escape_property(rel)},title={escape_property(e.code)} not "
                  f"analysed::{escape_data(e.message)}\n")
