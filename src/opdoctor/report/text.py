"""Human report: verdict per cause first, evidence a person can verify, a fix they can paste."""

from __future__ import annotations

import os
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from opdoctor import __version__
from opdoctor.model import CheckStatus, Finding, Report, Severity
from opdoctor.report import RenderContext
from opdoctor.verdict.causes import CauseState, cause_statuses, severity_counts
from opdoctor.verdict.diagnosis import NOT_A_VERDICT

PROBE_CODES = {"OD121", "OD122", "OD123", "OD220", "OD315", "OD321", "OD322", "OD126"}
_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_MARK = {CauseState.FOUND: "✗", CauseState.CLEAN: "✓", CauseState.NOT_CHECKED: "–"}


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.0f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return f"{n}"


def _finding(console: Console, f: Finding, ctx: RenderContext) -> None:
    doc = ctx.catalog.get(f.code)
    style = _SEV_STYLE[f.severity]
    title = f" ({escape(doc.title)})" if doc and ctx.verbose else ""
    console.print(f"  [{style}]{f.code}[/] {escape(f.message)}{title}")
    limit = None if ctx.verbose else 6
    ev = list(f.evidence)
    shown = ev if limit is None else ev[:limit]
    for i, line in enumerate(shown):
        label = "evidence:" if i == 0 else "         "
        console.print(f"    [dim]{label}[/] {escape(line)}")
    if limit is not None and len(ev) > limit:
        console.print(f"    [dim]          … {len(ev) - limit} more (-v shows all)[/]")
    if f.fix:
        console.print(f"    [green]fix:[/]      {escape(f.fix)}")


def _consequences(console: Console, found: tuple[Finding, ...], root: str,
                  ctx: RenderContext) -> None:
    """The findings a root explains, folded under it (dim, evidence shortened)."""
    for f in found:
        how = "confirms" if f.code in PROBE_CODES else "a consequence of"
        console.print(f"  [dim]{f.code} {escape(f.message)} — {how} {root}[/]")
        for line in f.evidence[: None if ctx.verbose else 3]:
            console.print(f"    [dim]{escape(line)}[/]")


def inventory_line(section: dict[str, Any]) -> str:
    """``myop::weighted_sum [CPU, CUDA]`` for every op the registration inventory found."""
    parts = []
    for ns, info in section.get("namespaces", {}).items():
        keys = f" [{', '.join(info['kernels'])}]" if info["kernels"] else ""
        for op in info["ops"] or ["*"]:
            parts.append(f"{ns}::{op}{keys}")
    if not parts and section.get("schemas"):
        parts = [s["schema"].split("(")[0] + " (namespace unknown: stripped)"
                 for s in section["schemas"]]
    parts += [f"{p} (Python extension)" for p in section.get("pyinit", [])]
    tf = section.get("tensorflow") or {}
    if tf.get("op_registrations"):
        kernel = "" if tf.get("kernel_registrations") else ", no kernel"
        parts += [f"{op} (TensorFlow op{kernel})" for op in tf.get("ops") or ["?"]]
    return "; ".join(parts)


def tf_probe_ops(section: dict[str, Any]) -> str:
    """``ZeroOut [CPU]`` for each op the TensorFlow probe saw registered, with the devices of
    its kernels ("" when the TensorFlow probe did not run)."""
    if not section.get("probed"):
        return ""
    parts = []
    for o in section.get("ops", []):
        devices = ", ".join(dict.fromkeys(k["device"] for k in o["kernels"]))
        parts.append(f"{o['name']} [{devices or 'no kernel'}]")
    return "; ".join(parts)


def ops_summary(report: Report) -> str:
    """The ops a library registers, for one table cell: what the TensorFlow probe saw (with
    kernel devices), else the static inventory."""
    tf = report.sections.get("tensorflow") or {}
    if tf.get("probed") and tf.get("ops"):
        return tf_probe_ops(tf)
    if tf.get("static_ops"):
        return ", ".join(tf["static_ops"])
    reg = report.sections.get("registration")
    return inventory_line(reg) if reg else ""


def _clean_detail(report: Report, cause: int) -> str:
    """A one-line summary of what was verified for a clean cause, from the check sections."""
    reg = report.sections.get("registration")
    if cause == 1 and reg is not None:
        return inventory_line(reg) or "no operator registration (not a torch or TensorFlow "\
            "op library)"
    deps = report.sections.get("dependencies")
    if cause == 2 and deps:
        kids = deps["tree"].get("needed", [])
        pre = [k["name"] for k in kids if k["rule"].startswith("already loaded")]
        line = f"{len(kids)}/{len(kids)} direct dependencies found"
        if pre:
            line += f" ({', '.join(pre[:4])}{' …' if len(pre) > 4 else ''}: already loaded by " \
                    f"{deps['context']})"
        return line
    return ""


def _tree(console: Console, node: dict[str, Any], depth: int) -> None:
    for kid in node.get("needed", []):
        where = kid["path"] or "NOT FOUND"
        console.print(f"{'  ' * depth}{escape(kid['name'])} => {escape(where)} "
                      f"[dim]\\[{escape(kid['rule'])}][/]")
        _tree(console, kid, depth + 1)


def _chain(console: Console, chain: dict[str, Any], raised: str = "") -> None:
    """``import myop → myop/__init__.py → … → libmyop.so → ops`` with a mark per link;
    ``raised``: the import's error when the probe saw it raise (the line is then ✗)."""
    ok, bad = "[green]✓[/]", "[red]✗[/]"
    winner = chain.get("winner")
    tail = f" (raised: {escape(raised)})" if raised else ""
    console.print(f"\nimport chain: {ok if winner and not raised else bad} import "
                  f"{escape(chain['package'])} → {escape(winner or 'not found')}{tail}")
    for link in chain.get("links", []):
        mark = bad if link["problem"] or link["swallowed"] else ok
        target = ", ".join(os.path.basename(r) for r in link["resolved"]) or link["problem"]
        console.print(f"  {mark} {escape(os.path.basename(link['file']))}:{link['line']} "
                      f"{escape(link['text'].strip()[:80])} → {escape(target)}")
    if chain.get("ops"):
        regs = "; ".join(f"{o['name']} [{', '.join(o['keys'])}]" for o in chain["ops"])
        console.print(f"  {ok} ops registered by the import: {escape(regs)}")


def compile_line(op: dict[str, Any]) -> str:
    """``cop::scale [CPU, Meta] fake ✓ autograd ✗ opcheck 4/4`` for one op of the compile
    section (``?`` where it cannot be told)."""
    def mark(v: Any) -> str:
        return "✓" if v is True else "✗" if v is False else "?"

    keys = f" [{', '.join(op['keys'])}]" if op["keys"] else ""
    line = f"{op['name']}{keys} fake {mark(op['fake'])}"
    if op["fake"] is False and op.get("pystub"):
        line += f" (pystub {op['pystub']}: {'✓' if op.get('fake_after_pystub') else '✗'})"
    line += f" autograd {mark(op['autograd'])}"
    tests = op.get("opcheck") or {}
    if tests:
        ok = sum(1 for t in tests.values() if t["ok"])
        line += f" opcheck {ok}/{len(tests)}"
    elif op.get("opcheck_skipped"):
        line += " opcheck skipped"
    return line + ("" if op["observed"] == "probe" else " (static)")


def _compile_lines(console: Console, section: dict[str, Any] | None) -> None:
    """One line per op under cause 1: compile readiness (torch.compile / export / fake)."""
    for op in (section or {}).get("ops", []):
        console.print(f"  [dim]compile: {escape(compile_line(op))}[/]")


def render_one(console: Console, report: Report, ctx: RenderContext) -> None:
    """Print one target's report."""
    t = report.target
    kind = f"{t.kind}, " if t.kind else ""
    console.print(f"[bold]opdoctor {__version__}[/] — {escape(t.path)} ({kind}{_size(t.size)})")
    diag = report.diagnosis
    style = "bold green" if diag.cause == 0 else "bold red" if diag.confidence == "high" \
        else "bold yellow"
    console.print(f"[{style}]{escape(diag.summary)}[/]")
    folded = {id(f): root for root, fs in diag.consequences.items() for f in fs}
    roots = {id(f) for f in diag.root_findings}
    console.print()
    for row in cause_statuses(report):
        head = f"{_MARK[row.state]} Cause {int(row.cause)} — {row.cause.title}"
        if row.state is CauseState.FOUND:
            own = [f for f in row.findings if id(f) not in folded]
            if not own:
                # Only consequences of a root elsewhere: one story, told under that root.
                codes = ", ".join(dict.fromkeys(f.code for f in row.findings))
                root = folded[id(row.findings[0])]
                console.print(f"[dim]↳ Cause {int(row.cause)} — {row.cause.title}: {codes}, "
                              f"a consequence of {root} (shown under it)[/]")
                continue
            worst = max(own, key=lambda f: f.severity.rank).severity
            console.print(f"[{_SEV_STYLE[worst]}]{head}[/]")
            for f in own:
                _finding(console, f, ctx)
                if id(f) in roots:
                    _consequences(console, diag.consequences.get(f.code, ()), f.code, ctx)
            reg = report.sections.get("registration")
            if int(row.cause) == 1 and reg is not None and inventory_line(reg):
                console.print(f"  [dim]inventory: {escape(inventory_line(reg))}[/]")
        elif row.state is CauseState.CLEAN:
            detail = _clean_detail(report, int(row.cause)) or f"no problem found ({row.reason})"
            if int(row.cause) == 1 and diag.cause in (2, 3, 4) and diag.confidence == "high":
                detail += " (static view; not reached: the load fails first)"
            console.print(f"[green]{head}[/]: {escape(detail)}")
        else:
            console.print(f"[dim]{head}: not checked ({escape(row.reason)})[/]")
        if int(row.cause) == 1:
            _compile_lines(console, report.sections.get("compile"))
    notes = [f for f in report.findings if f.code in NOT_A_VERDICT]
    for f in notes:
        console.print(f"[yellow]! {f.code} {escape(f.message)}[/]")
        for line in f.evidence[: None if ctx.verbose else 3]:
            console.print(f"    [dim]{escape(line)}[/]")
        if f.fix:
            console.print(f"    [green]fix:[/]      {escape(f.fix)}")
    chain = report.sections.get("import-chain")
    if chain and chain.get("package"):
        raised = next((f.message for f in report.findings if f.code == "OD511"), "")
        _chain(console, chain, raised)
    probe = report.sections.get("probe")
    if probe and probe.get("ran"):
        regs = "; ".join(f"{o['name']} [{', '.join(o['keys'])}]" for o in probe["ops"])
        regs = tf_probe_ops(report.sections.get("tensorflow") or {}) or regs
        line = f"\nprobe ({probe['seconds']:.1f} s, executed the library): {probe['outcome']}"
        if probe["outcome"] == "loaded":
            line += f", registered {regs}" if regs else ", registered no operator"
        console.print(escape(line))
    cuda = report.sections.get("cuda")
    if cuda and cuda.get("entries"):
        code = ", ".join(dict.fromkeys(e["arch"] for e in cuda["entries"]))
        console.print(f"\nGPU code: {escape(code)}  (targets: {escape(cuda['targets_from'])})")
        for row in cuda.get("gpus", []):
            mark = {"native": "[green]✓[/]", "jit": "[yellow]~[/]", "none": "[red]✗[/]"}
            how = {"native": f"runs natively ({row['via']})",
                   "jit": f"runs via PTX JIT ({row['via']})",
                   "none": "no kernel image"}[row["runs"]]
            console.print(f"  {mark[row['runs']]} {row['gpu']}: {how}")
    deps = report.sections.get("dependencies")
    if ctx.verbose and deps:
        console.print()
        console.print(f"[bold]dependency tree[/] (loaded into {escape(deps['context'])}):")
        _tree(console, deps["tree"], 1)
    failed = [c for c in report.checks if c.status is CheckStatus.FAILED]
    for c in failed:
        console.print(f"[bold red]! check {c.name} failed:[/] {escape(c.reason)} — "
                      "the report is incomplete; please report this")
    if ctx.verbose:
        console.print()
        for c in report.checks:
            why = f" ({escape(c.reason)})" if c.reason else ""
            console.print(f"[dim]  check {c.name}: {c.status.value} in {c.seconds * 1000:.1f} ms"
                          f"{why}[/]")


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Print every report, then one summary line with the exit code."""
    console = Console(file=out, force_terminal=ctx.color, no_color=not ctx.color,
                      highlight=False, width=ctx.width or (None if ctx.color else 100),
                      soft_wrap=not ctx.color)
    totals = dict.fromkeys(Severity, 0)
    codes: list[str] = []
    for i, report in enumerate(reports):
        if i:
            console.print()
        render_one(console, report, ctx)
        for sev, n in severity_counts(report).items():
            totals[sev] += n
        codes += [f.code for f in report.findings if f.code not in codes]
    for e in ctx.errors:
        if reports:
            console.print()
        # InputError messages already start with the path: do not print it twice.
        what = e.message if e.message.startswith(e.target) else f"{e.target}: {e.message}"
        console.print(f"[bold red]✗ {escape(what)} [{e.code}][/] — not analysed")
    console.print()
    line = (f"{totals[Severity.ERROR]} error(s) · {totals[Severity.WARNING]} warning(s) · "
            f"{totals[Severity.INFO]} info · exit {ctx.exit_code}")
    if codes:
        line += f"          explain a code: opdoctor explain {codes[0]}"
    console.print(line)
