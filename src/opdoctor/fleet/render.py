"""The fleet report in every format: text (groups, outliers, differences), JSON (one entry per
rank), SARIF and JUnit (the ranks in each location), GitHub annotations.

Sizes: the text summary grows with the number of distinct groups, not of ranks (ranks are
printed as ranges); the JSON has one entry per rank but carries each node's full report once,
on the rank that ran the check. SARIF and JUnit carry one entry per check that ran (per node),
located at the ranks that share it.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from opdoctor import __version__
from opdoctor.codes import CodeDoc
from opdoctor.fleet.env import World
from opdoctor.fleet.group import FleetSummary, Group, ranks_text
from opdoctor.model import (
    Cause,
    CheckRun,
    CheckStatus,
    Finding,
    Report,
    Severity,
    TargetInfo,
)
from opdoctor.report import Format, RenderContext
from opdoctor.verdict.diagnosis import diagnose

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, TextIO

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class FleetContext:
    """What the fleet renderers need besides the summary."""

    catalog: dict[str, CodeDoc]
    fail_on: Severity
    world: World
    fail_on_difference: bool = False
    color: bool = False
    verbose: bool = False
    timing: dict[str, float] = field(default_factory=dict)
    width: int | None = None  # wrap the text at this width (None: the terminal's, if any)


def render(form: Format, summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """Write the fleet report in ``form``."""
    {Format.TEXT: render_text, Format.JSON: render_json, Format.SARIF: render_sarif,
     Format.JUNIT: render_junit, Format.GITHUB: render_github}[form](summary, ctx, out)


def report_from_dict(d: dict[str, Any]) -> Report:
    """Rebuild a :class:`Report` from its JSON form (as a rank sent it)."""
    t = d.get("target", {})
    findings = [Finding(f["code"], Severity(f["severity"]), Cause(f["cause"]), f["subject"],
                        f["message"], tuple(f.get("evidence", ())), f.get("fix", ""))
                for f in d.get("findings", [])]
    checks = [CheckRun(c["name"], tuple(Cause(x) for x in c.get("causes", [])),
                       CheckStatus(c["status"]), float(c.get("seconds", 0.0)),
                       c.get("reason", "")) for c in d.get("checks", [])]
    return Report(TargetInfo(t.get("path", ""), t.get("size"), t.get("kind", "")), findings,
                  checks, diagnose(findings), dict(d.get("sections", {})),
                  float(d.get("seconds", 0.0)))


def _sharing(summary: FleetSummary) -> dict[int, list[int]]:
    """Checking rank → the ranks that use its result (itself included)."""
    out: dict[int, list[int]] = {}
    for r in summary.records:
        out.setdefault(int(r.get("checked_by", r["rank"])), []).append(int(r["rank"]))
    return out


def _checked(summary: FleetSummary) -> list[tuple[dict[str, Any], list[int], list[Report]]]:
    """(record, ranks sharing it, its reports) for every rank that ran a check."""
    share = _sharing(summary)
    return [(r, sorted(share.get(r["rank"], [r["rank"]])),
             [report_from_dict(d) for d in r.get("reports", [])])
            for r in sorted(summary.records, key=lambda x: int(x["rank"]))
            if r.get("checked_by", r["rank"]) == r["rank"]]


def _where(ranks: list[int], record: dict[str, Any]) -> str:
    return f"{ranks_text(ranks)} (node {record['node']})"


def _group_where(g: Group) -> str:
    nodes = g.nodes
    on = f"node {nodes[0]}" if len(nodes) == 1 else f"{len(nodes)} nodes"
    return f"{ranks_text(g.ranks)} ({len(g.ranks)} rank{'s' if len(g.ranks) != 1 else ''}, {on})"


def _group_verdicts(g: Group) -> list[str]:
    rec = g.leader
    if rec.get("targets") is None:
        return [str(rec.get("unknown", "unknown"))]
    lines = []
    many = len(rec["targets"]) > 1
    for t in rec["targets"]:
        v = t["verdict"]
        head = f"{t['target']}: " if many else ""
        if v["state"] == "clean":
            lines.append(f"{head}✓ clean")
        elif v["state"] == "not checked":
            lines.append(f"{head}– not checked ({v['summary']})")
        else:
            mark = "✗" if v.get("fails") else "!"
            codes = f" [{', '.join(v['codes'])}]" if v.get("codes") else ""
            lines.append(f"{head}{mark} {v['summary']}{codes}")
            if v.get("fix"):
                lines.append(f"{head}  fix: {v['fix']}")
    return lines


def _header(summary: FleetSummary, ctx: FleetContext) -> list[str]:
    w = ctx.world
    targets = {t["target"] for r in summary.records for t in (r.get("targets") or [])}
    names = ", ".join(sorted(os.path.basename(x) or x for x in targets)) or "?"
    if w.alone:
        where = w.note
    else:
        where = f"{w.size} ranks ({w.launcher}, rendezvous {w.master_addr}:{w.master_port})"
    checks = len(_checked(summary))
    nodes = len({r["node"] for r in summary.records})
    mode = "fingerprint" if any(r.get("mode") == "fingerprint" for r in summary.records) \
        else "check"
    mode += "" if checks == 1 else "s"
    return [f"opdoctor fleet {__version__} — {names} · {where}",
            f"{summary.answered}/{summary.world_size} ranks answered · {nodes} node(s) · "
            f"{checks} {mode} (one per node and environment) · {len(summary.groups)} group(s)"]


def render_text(summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """The human summary: agreement, groups with their verdicts, differences, missing ranks.

    Laid out like the single-library report (:class:`~opdoctor.report.layout.Printer`): lines
    are wrapped at spaces at ``ctx.width``, else at the terminal's width, with continuation
    lines under the start of their text; in a pipe with no terminal, one line per line.
    """
    from opdoctor.report.layout import Printer, wrap_width
    from opdoctor.report.styled import escape

    # The Printer wraps (Rich's own wrapping would fold paths) and colours.
    p = Printer(out, ctx.width or wrap_width(out), ctx.color)
    for line in _header(summary, ctx):
        p.line("", escape(line), hang=2)
    p.blank()
    groups = summary.groups
    if len(groups) == 1 and not summary.missing:
        mark = "✓" if summary.exit_code == 0 else "✗"
        p.line(f"{mark} ", "a world of one" if summary.world_size == 1
               else f"all {summary.answered} ranks agree")
    elif len(groups) == 1:  # one group, and ranks that never answered
        p.line("✗ ", f"{summary.answered} of {summary.world_size} ranks answered; they agree")
    elif groups and not any(d.matters for d in summary.differences):
        # Groups that differ only in what does not matter (CUDA_VISIBLE_DEVICES per local
        # rank, an environment string): no ✗ on a fleet that may exit 0 (survey 16's O2).
        missed = f"; {len(summary.missing)} never answered" if summary.missing else ""
        p.line("! " if summary.exit_code == 0 else "✗ ",
               f"all {summary.answered} ranks that answered agree in what matters; "
               f"{len(groups)} groups differ in what does not (below){missed}")
    elif groups:
        main = groups[0]
        outliers = [r for g in groups[1:] for r in g.ranks]
        tail = f"; outliers: {ranks_text(outliers)}" if outliers else ""
        p.line("✗ ", f"{len(main.ranks)} of {summary.world_size} ranks agree (group "
               f"{main.label}){escape(tail)}")
    for g in groups:
        verdicts = _group_verdicts(g)
        p.line("  ", f"group {g.label} — {escape(_group_where(g))}: {escape(verdicts[0])}",
               hang=6)
        for extra in verdicts[1:]:
            p.line("      ", escape(extra))
        if ctx.verbose:
            for key, value in g.fingerprint.items():
                p.line("      ", f"[dim]{escape(key)}: {escape(value)}[/]", hang=8)
            for r in g.records:
                by = "" if r.get("checked_by", r["rank"]) == r["rank"] \
                    else f", result of rank {r['checked_by']}"
                p.line("      ", f"[dim]rank {r['rank']}: node {escape(str(r['node']))}, host "
                       f"{escape(str(r['hostname']))}, pid {r['pid']}{escape(by)}[/]", hang=8)
    if summary.differences:
        p.blank()
        p.line("", "differences (✗ changes what the job loads or how it is judged):", hang=2)
        for d in summary.differences:
            mark = "✗" if d.matters else " "
            p.line(f"  {mark} ", escape(d.text()))
    if summary.missing:
        p.blank()
        p.line("never answered:")
        for m in summary.missing:
            host = f" (host {m.hostname})" if m.hostname else ""
            p.line("  ✗ ", f"rank {m.rank}{escape(host)}: {escape(m.state)}")
    p.blank()
    if summary.exit_code == 0:
        tail = "; differences reported only (--fail-on-difference fails them)" \
            if summary.differences else ""
        p.line("exit 0: ", f"every rank is clean and identical in what matters{tail}")
    else:
        p.line(f"exit {summary.exit_code}: ", escape("; ".join(summary.reasons)))
    if ctx.verbose and ctx.timing:
        p.line("[dim]rank 0: [/]", "[dim]" + ", ".join(f"{k} {v:.3f} s"
                                                      for k, v in ctx.timing.items()) + "[/]")


def fleet_dict(summary: FleetSummary, ctx: FleetContext) -> dict[str, Any]:
    """The fleet report as a JSON-ready dict: one entry per rank, answered or not."""
    w = ctx.world
    group_of = {r: g.label for g in summary.groups for r in g.ranks}
    ranks: list[dict[str, Any]] = []
    for r in summary.records:
        entry = {k: r.get(k) for k in ("rank", "local_rank", "node", "hostname", "pid",
                                       "checked_by", "mode", "env", "host", "seconds")}
        entry["answered"] = True
        entry["group"] = group_of.get(r["rank"])
        entry["targets"] = [{"target": t["target"], "path": t["path"], "size": t.get("size"),
                             "sha256": t.get("sha256"), "verdict": t["verdict"],
                             "dependencies": [{"name": n, "path": p, "sha256": s}
                                              for n, p, s in t.get("deps", [])]}
                            for t in r.get("targets") or []]
        if r.get("targets") is None:
            entry["verdict"] = r.get("unknown", "unknown")
        entry["reports"] = r.get("reports", [])
        ranks.append(entry)
    ranks += [{"rank": m.rank, "answered": False, "state": m.state, "hostname": m.hostname}
              for m in summary.missing]
    ranks.sort(key=lambda e: int(e["rank"]))
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "opdoctor-fleet",
        "tool": {"name": "opdoctor", "version": __version__},
        "world": {"size": w.size, "launcher": w.launcher, "note": w.note,
                  "rendezvous": f"{w.master_addr}:{w.master_port}" if not w.alone else None},
        "fail_on": ctx.fail_on.value,
        "fail_on_difference": ctx.fail_on_difference,
        "exit_code": summary.exit_code,
        "reasons": summary.reasons,
        "groups": [{"id": g.label, "ranks": g.ranks, "nodes": g.nodes,
                    "verdicts": _group_verdicts(g), "fingerprint": g.fingerprint}
                   for g in summary.groups],
        "differences": [{"key": d.key, "matters": d.matters,
                         "values": [{"value": v, "ranks": rs} for v, rs in d.values]}
                        for d in summary.differences],
        "missing": [{"rank": m.rank, "state": m.state, "hostname": m.hostname}
                    for m in summary.missing],
        "ranks": ranks,
        "timing": {k: round(v, 4) for k, v in ctx.timing.items()},
    }


def render_json(summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """Write the fleet JSON document."""
    json.dump(fleet_dict(summary, ctx), out, indent=2)
    out.write("\n")


def _render_ctx(summary: FleetSummary, ctx: FleetContext) -> RenderContext:
    return RenderContext(ctx.catalog, ctx.fail_on, summary.exit_code)


# Fleet-level results in SARIF: not finding codes of a cause, but properties of the fleet.
FLEET_RULES = {
    "fleet-difference": ("the ranks differ in what they load or how they are judged",
                         "Make every node run the same build: same library bytes, same "
                         "dependencies, same framework release."),
    "fleet-no-answer": ("a rank never answered the fleet check",
                        "Look at that rank's node: it did not join the rendezvous, or its "
                        "check did not finish within --gather-timeout."),
}


def sarif_fleet(summary: FleetSummary, ctx: FleetContext) -> dict[str, Any]:
    """A SARIF log: every finding of every check, located at the ranks that share it."""
    from opdoctor.report.sarif import sarif_log

    rctx = _render_ctx(summary, ctx)
    checked = _checked(summary)
    everything = sarif_log([rep for _r, _ranks, reps in checked for rep in reps], rctx)
    run = everything["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results: list[dict[str, Any]] = []
    for rec, ranks, reps in checked:
        for res in sarif_log(reps, rctx)["runs"][0]["results"]:
            where = _where(ranks, rec)
            for loc in res["locations"]:
                loc["logicalLocations"] = [{"name": ranks_text(ranks),
                                            "fullyQualifiedName": where, "kind": "module"}]
            res["message"]["text"] = f"[{where}] {res['message']['text']}"
            res["properties"]["ranks"] = ranks
            res["properties"]["node"] = rec["node"]
            res["partialFingerprints"]["opdoctor/fleet/v1"] = \
                f"{res['partialFingerprints']['opdoctor/v1']}:{rec['node']}"
            res["ruleIndex"] = next((i for i, r in enumerate(rules)
                                     if r["id"] == res["ruleId"]), 0)
            results.append(res)
    for rid, (title, fix) in FLEET_RULES.items():
        rules.append({"id": rid, "name": rid.title().replace("-", ""),
                      "shortDescription": {"text": title}, "fullDescription": {"text": title},
                      "help": {"text": fix}, "defaultConfiguration": {"level": "error"}})
    index = {r["id"]: i for i, r in enumerate(rules)}
    for d in summary.differences:
        if not (d.matters or ctx.fail_on_difference):
            continue
        results.append({"ruleId": "fleet-difference", "ruleIndex": index["fleet-difference"],
                        "level": "error" if d.matters else "warning",
                        "message": {"text": d.text()},
                        "locations": [{"logicalLocations": [
                            {"name": ranks_text(rs), "kind": "module",
                             "fullyQualifiedName": f"{ranks_text(rs)}: {v}"}]}
                            for v, rs in d.values],
                        # The ranks in the properties too, as a finding's are (survey 16's
                        # O6: only the locations' names carried them).
                        "properties": {"key": d.key, "matters": d.matters,
                                       "ranks": sorted(r for _v, rs in d.values for r in rs),
                                       "values": [{"value": v, "ranks": rs}
                                                  for v, rs in d.values]}})
    for m in summary.missing:
        results.append({"ruleId": "fleet-no-answer", "ruleIndex": index["fleet-no-answer"],
                        "level": "error", "message": {"text": f"rank {m.rank}: {m.state}"},
                        "locations": [{"logicalLocations": [
                            {"name": f"rank {m.rank}", "kind": "module"}]}],
                        "properties": {"rank": m.rank}})
    run["results"] = results
    run["properties"] = {"world_size": summary.world_size, "groups": len(summary.groups)}
    return everything


def render_sarif(summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """Write the SARIF log."""
    json.dump(sarif_fleet(summary, ctx), out, indent=2)
    out.write("\n")


def _failing(summary: FleetSummary) -> list[str]:
    """``ranks: target: verdict`` for every group whose check fails."""
    out = []
    for g in summary.groups:
        targets = g.leader.get("targets")
        if targets is None:
            out.append(f"{ranks_text(g.ranks)}: {g.leader.get('unknown', 'unknown')}")
            continue
        out += [f"{ranks_text(g.ranks)}: {t['target']}: {t['verdict']['summary']}"
                for t in targets if t["verdict"].get("fails")]
    return out


def render_junit(summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """JUnit: one suite per check that ran (named by its ranks), plus a ``fleet`` suite whose
    cases are "every rank answered" and "the ranks agree"."""
    from opdoctor.report.junit import _suite

    rctx = _render_ctx(summary, ctx)
    root = ET.Element("testsuites", name="opdoctor fleet")
    for rec, ranks, reps in _checked(summary):
        for rep in reps:
            suite = _suite(rep, rctx)
            suite.set("name", f"opdoctor {_where(ranks, rec)} {rep.target.path}")
            suite.set("hostname", str(rec["hostname"]))
            root.append(suite)
    fleet = ET.SubElement(root, "testsuite", name="opdoctor fleet")
    cases = 0
    failures = 0
    for name, problems in (
        ("every rank answered", [f"rank {m.rank}: {m.state}" for m in summary.missing]),
        ("the ranks agree", [d.text() for d in summary.differences
                             if d.matters or ctx.fail_on_difference]),
        ("every rank is clean", _failing(summary)),
    ):
        cases += 1
        case = ET.SubElement(fleet, "testcase", name=name, classname="opdoctor.fleet")
        if problems:
            failures += 1
            fail = ET.SubElement(case, "failure", message=problems[0])
            fail.text = "\n".join(problems)
    fleet.set("tests", str(cases))
    fleet.set("failures", str(failures))
    fleet.set("errors", "0")
    fleet.set("skipped", "0")
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in root)))
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def render_github(summary: FleetSummary, ctx: FleetContext, out: TextIO) -> None:
    """GitHub workflow commands: one annotation per finding (its ranks in the title), one per
    difference that fails and per rank that never answered, then the exit line."""
    from opdoctor.report.github import COMMAND, escape_data, escape_property

    for rec, ranks, reps in _checked(summary):
        for rep in reps:
            path = rep.target.path
            rel = os.path.relpath(path) if os.path.isabs(path) else path
            for f in rep.findings:
                doc = ctx.catalog.get(f.code)
                title = f"{_where(ranks, rec)}: {f.code} {doc.title if doc else ''}".strip()
                body = "\n".join([f.message, *[f"evidence: {e}" for e in f.evidence[:8]],
                                  f"fix: {f.fix}" if f.fix else ""]).strip()
                out.write(f"::{COMMAND[f.severity]} file={escape_property(rel)},"
                          f"title={escape_property(title)}::{escape_data(body)}\n")
    for d in summary.differences:
        level = "error" if d.matters or ctx.fail_on_difference else "notice"
        out.write(f"::{level} title={escape_property('fleet: ranks differ')}::"
                  f"{escape_data(d.text())}\n")
    for m in summary.missing:
        out.write(f"::error title={escape_property('fleet: rank never answered')}::"
                  f"{escape_data(f'rank {m.rank}: {m.state}')}\n")
    groups = "; ".join(f"group {g.label} {ranks_text(g.ranks)}: {_group_verdicts(g)[0]}"
                       for g in summary.groups)
    out.write(f"opdoctor fleet: {summary.answered}/{summary.world_size} ranks answered; "
              f"{groups}; exit {summary.exit_code}\n")
