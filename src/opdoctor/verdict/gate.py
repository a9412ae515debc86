"""The CI gate: severity overrides, baselines, and the exit code of a set of reports.

A baseline records the findings a team accepts today (``--write-baseline FILE``); with
``--baseline FILE`` only findings that are not in it count for the gate (they stay in the
report, marked). Fingerprints do not depend on absolute paths or wording: code, the file's
name and the finding's subject.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable

from opdoctor.model import Finding, Report, Severity

BASELINE_VERSION = 1


class BaselineError(ValueError):
    """The baseline file cannot be read."""


def apply_overrides(findings: list[Finding], overrides: dict[str, Severity]) -> list[Finding]:
    """The findings with the severity of overridden codes (or code prefixes) replaced."""
    if not overrides:
        return findings
    out = []
    for f in findings:
        match = max((p for p in overrides if f.code.startswith(p)), key=len, default=None)
        out.append(dataclasses.replace(f, severity=overrides[match]) if match else f)
    return out


def fingerprint(report: Report, f: Finding) -> str:
    """A stable identity for a finding across machines and runs."""
    subject = os.path.basename(f.subject) if "/" in f.subject else f.subject
    key = f"{f.code}|{os.path.basename(report.target.path)}|{subject}"
    import hashlib  # here: only findings are fingerprinted (loading OpenSSL is not free)

    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def write_baseline(path: str, reports: Iterable[Report]) -> int:
    """Write every current finding as accepted; returns how many."""
    rows = [{"fingerprint": fingerprint(r, f), "code": f.code,
             "target": os.path.basename(r.target.path), "subject": f.subject,
             "message": f.message} for r in reports for f in r.findings]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"schema_version": BASELINE_VERSION, "tool": "opdoctor", "findings": rows},
                  fh, indent=2)
        fh.write("\n")
    return len(rows)


def read_baseline(path: str) -> set[str]:
    """The fingerprints accepted by a baseline file."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("schema_version") != BASELINE_VERSION:
            raise BaselineError(f"{path}: unsupported baseline schema_version "
                                f"{data.get('schema_version')!r}")
        return {row["fingerprint"] for row in data["findings"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, BaselineError):
            raise
        raise BaselineError(f"{path}: not an opdoctor baseline ({exc})") from None


def gate_fails(reports: Iterable[Report], threshold: Severity,
               accepted: set[str] | None = None) -> bool:
    """True when a finding not in the baseline is at or above ``threshold``."""
    for r in reports:
        for f in r.findings:
            if accepted and fingerprint(r, f) in accepted:
                continue
            if f.severity.rank >= threshold.rank:
                return True
    return False
