"""JUnit XML: one test suite per target, one test case per check. A check fails when it has
findings at or above --fail-on (not in the baseline); skipped checks are skipped test cases, so
a passing report still lists every check."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from opdoctor.codes import CodeDoc
from opdoctor.model import CheckStatus, Report
from opdoctor.report import RenderContext
from opdoctor.report.escape import xml_text
from opdoctor.verdict.gate import fingerprint

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import TextIO


def _suite(report: Report, ctx: RenderContext) -> ET.Element:
    suite = ET.Element("testsuite", name=f"opdoctor {report.target.path}")
    diag = report.diagnosis
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="opdoctor.cause", value=str(diag.cause))
    ET.SubElement(props, "property", name="opdoctor.diagnosis", value=diag.summary)
    ET.SubElement(props, "property", name="opdoctor.roots",
                  value=",".join(f.code for f in diag.root_findings))
    failures = errors = skipped = 0
    for run in report.checks:
        case = ET.SubElement(suite, "testcase", name=run.name,
                             classname=f"opdoctor.{run.name}", time=f"{run.seconds:.3f}")
        mine = [f for f in report.findings
                if any(f.code == d.code for d in _codes(ctx, run.name))]
        gating = [f for f in mine if f.severity.rank >= ctx.fail_on.rank
                  and fingerprint(report, f) not in ctx.baseline]
        if run.status is CheckStatus.SKIPPED:
            ET.SubElement(case, "skipped", message=run.reason)
            skipped += 1
        elif run.status is CheckStatus.FAILED:
            ET.SubElement(case, "error", message=run.reason, type="check-crashed")
            errors += 1
        elif gating:
            failures += 1
            fail = ET.SubElement(case, "failure", type=gating[0].code,
                                 message="; ".join(f"{f.code} {f.message}" for f in gating))
            fail.text = "\n\n".join(
                "\n".join([f"{f.code} [{f.severity.value}] {f.message}",
                           *[f"  evidence: {e}" for e in f.evidence],
                           f"  fix: {f.fix}"]) for f in gating)
        if mine and not gating:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(f"{f.code} [{f.severity.value}] {f.message}" for f in mine)
    suite.set("tests", str(len(report.checks)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", f"{report.seconds:.3f}")
    return suite


def _codes(ctx: RenderContext, check: str) -> list[CodeDoc]:
    from opdoctor.checks import load_registry

    for c in load_registry().checks:
        if c.name == check:
            return list(c.codes)
    return []


def _xml_safe(elem: ET.Element) -> None:
    """Make every attribute and text XML 1.0 can hold: a file name may contain control
    characters or undecodable bytes that ElementTree would write as they are (invalid XML)."""
    for e in elem.iter():
        for key, value in e.attrib.items():
            e.set(key, xml_text(value))
        if e.text:
            e.text = xml_text(e.text)


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Write the JUnit XML document."""
    root = ET.Element("testsuites", name="opdoctor")
    for r in reports:
        root.append(_suite(r, ctx))
    for e in ctx.errors:  # a target that could not be analysed is an errored suite
        suite = ET.SubElement(root, "testsuite", name=f"opdoctor {e.target}", tests="1",
                              failures="0", errors="1", skipped="0", time="0")
        case = ET.SubElement(suite, "testcase", name="analysis", classname="opdoctor.target")
        ET.SubElement(case, "error", message=f"{e.code} {e.message}", type=e.code)
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in root)))
    _xml_safe(root)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
