"""Human report: verdict per cause first, evidence a person can verify, a fix they can paste."""

from __future__ import annotations

import json
import os
import re

from opdoctor import __version__
from opdoctor.model import CheckStatus, Finding, Report, Severity
from opdoctor.report import RenderContext
from opdoctor.report.layout import Printer, quote_path, unbreakable, wrap_width
from opdoctor.report.styled import escape
from opdoctor.verdict.causes import CauseState, CauseStatus, cause_statuses, severity_counts
from opdoctor.verdict.diagnosis import NOT_A_VERDICT

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, TextIO

PROBE_CODES = {"OD121", "OD122", "OD123", "OD220", "OD315", "OD321", "OD322", "OD126"}
_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_MARK = {CauseState.FOUND: "✗", CauseState.CLEAN: "✓", CauseState.NOT_CHECKED: "–"}
# Warnings or notes of one code printed per cause before the rest are counted in one line.
SAME_CODE_SHOWN = 3


def _size(n: int | None) -> str:
    if n is None:
        return ""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.0f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return f"{n}"


def _finding(p: Printer, f: Finding, ctx: RenderContext,
             fixes: set[str] | None = None, told: dict[tuple[str, ...], str] | None = None,
             where: str = "") -> None:
    """One finding: its message, evidence and fix. ``told``: the errors earlier reports of
    the run printed (code, message, evidence, fix → the library whose report has them); an
    error printed word for word above keeps its line and refers to the evidence and fix
    there (fbgemm_gpu's 15 libraries that one failing import stops each repeated the same
    seven lines of symbol and traceback)."""
    doc = ctx.catalog.get(f.code)
    style = _SEV_STYLE[f.severity]
    title = f" ({escape(doc.title)})" if doc and ctx.verbose else ""
    p.line(f"  [{style}]{f.code}[/] ", f"{escape(f.message)}{title}")
    if told is not None and f.severity is Severity.ERROR and not ctx.verbose:
        key = (f.code, f.message, f.fix, *f.evidence)
        if key in told:
            p.line("    ", f"[dim]evidence and fix as in the report of {escape(told[key])} "
                   "above[/]", hang=6)
            return
        told[key] = where
    limit = None if ctx.verbose else 6
    ev = list(f.evidence)
    shown = ev if limit is None else ev[:limit]
    for i, line in enumerate(shown):
        label = "evidence:" if i == 0 else "         "
        # Continuations two columns deeper than the evidence column: a wrapped evidence line
        # stays distinguishable from the next one.
        p.line(f"    [dim]{label}[/] ", escape(line), hang=16)
    if limit is not None and len(ev) > limit:
        p.line(" " * 14, f"[dim]… {len(ev) - limit} more (-v shows all)[/]")
    if f.fix and fixes is not None and f.fix in fixes:
        p.line("    [green]fix:[/]      ", "[dim](as above)[/]")  # OD204 × 5 in tensorflow-io
    elif f.fix:
        p.line("    [green]fix:[/]      ", escape(f.fix))
        if fixes is not None:
            fixes.add(f.fix)


def _consequences(p: Printer, found: tuple[Finding, ...], root: str,
                  ctx: RenderContext) -> None:
    """The findings a root explains, folded under it (dim, evidence shortened)."""
    for f in found:
        how = "confirms" if f.code in PROBE_CODES else "a consequence of"
        p.line(f"  [dim]{f.code}[/] ", f"[dim]{escape(f.message)} — {how} {root}[/]")
        for line in f.evidence[: None if ctx.verbose else 3]:
            p.line("    ", f"[dim]{escape(line)}[/]", hang=6)


def inventory_line(section: dict[str, Any], registered: list[str] | None = None) -> str:
    """``myop::weighted_sum [CPU, CUDA]`` for every op the registration inventory found.
    ``registered``: the ``ns::op`` names the probe saw registered — a stripped library's
    schema, whose namespace the file does not say, is shown under the namespaces the real
    load registered it in (fbgemm's ``fb::`` and ``fbgemm::``)."""
    parts = []
    for ns, info in section.get("namespaces", {}).items():
        keys = f" [{', '.join(info['kernels'])}]" if info["kernels"] else ""
        for op in info["ops"] or ["*"]:
            parts.append(f"{ns}::{op}{keys}")
    if not parts and section.get("schemas"):
        by_name: dict[str, list[str]] = {}
        for full in registered or []:
            ns, _, name = full.partition("::")
            by_name.setdefault(name.split(".")[0], []).append(ns)
        for s in section["schemas"]:
            name = s["schema"].split("(")[0]
            spaces = by_name.get(name.split(".")[0])
            parts.append(f"{{{','.join(spaces)}}}::{name}" if spaces and len(spaces) > 1 else
                         f"{spaces[0]}::{name}" if spaces else
                         f"{name} (namespace unknown: stripped)")
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


def op_keys(op: dict[str, Any]) -> str:
    """The dispatch keys of a probed op, a ``torch.library.custom_op`` Meta stub (it raises
    until ``register_fake`` is called) said as such: it is no fake kernel."""
    return ", ".join("Meta: custom_op's stub, no fake" if k == "Meta" and op.get("meta_stub")
                     else k for k in op["keys"])


def ops_summary(report: Report) -> str:
    """The ops a library registers, for one table cell: what the TensorFlow probe saw (with
    kernel devices), else the static inventory."""
    tf = report.sections.get("tensorflow") or {}
    if tf.get("probed") and tf.get("ops"):
        return tf_probe_ops(tf)
    if tf.get("static_ops"):
        return ", ".join(tf["static_ops"])
    reg = report.sections.get("registration")
    probe = report.sections.get("probe") or {}
    return inventory_line(reg, probe.get("new_ops") if probe.get("ran") else None) \
        if reg else ""


def package_inventory(report: Report, limit: int | None = 6) -> str:
    """The package's ops with their C++ and Python registrations joined (package mode):
    ``ns::op [CPU (C++), Meta (Python)] defined in Python; …`` ("" when there is none)."""
    ops = (report.sections.get("import-chain") or {}).get("registrations") or []
    shown = ops if limit is None else ops[:limit]
    more = f"; … {len(ops) - len(shown)} more (-v shows all)" if len(ops) > len(shown) else ""
    return "; ".join(o["summary"] for o in shown) + more


def _clean_detail(report: Report, cause: int) -> str:
    """A one-line summary of what was verified for a clean cause, from the check sections."""
    if cause == 1 and package_inventory(report):
        return package_inventory(report)
    reg = report.sections.get("registration")
    tf = report.sections.get("tensorflow") or {}
    if cause == 1 and tf.get("probed") and tf.get("ops"):
        return tf_probe_ops(tf)  # what TensorFlow itself listed for the library
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


def _tree(p: Printer, node: dict[str, Any], depth: int) -> None:
    for kid in node.get("needed", []):
        where = _path(kid["path"]) if kid["path"] else "NOT FOUND"
        above = " [dim](its dependencies: above)[/]" if kid.get("listed_above") else ""
        p.line("  " * depth, f"{escape(kid['name'])} => {escape(where)} "
               f"[dim]\\[{escape(kid['rule'])}][/]{above}", hang=2 * depth + 4)
        _tree(p, kid, depth + 1)


_MAX_CHAIN_LINES = 12
_RAISED_BY = re.compile(r"import ([\w.]+) raised ")


def _compiled(path: str) -> bool:
    return path.endswith((".so", ".pyd")) or ".so." in path


def _chain(p: Printer, chain: dict[str, Any], raised: str = "",
           failed: frozenset[str] = frozenset(), noted: set[tuple[str, str]] | None = None
           ) -> None:
    """``import myop → myop/__init__.py → … → libmyop.so → ops`` with a mark per link;
    ``raised``: the import's error when the probe saw it raise (the line is then ✗);
    ``failed``: the swallowed imports the probe saw fail (OD512's subjects); ``noted``: what
    earlier reports of the run printed — the same chain (every library of one package in a
    directory walk) is printed once, then referred to."""
    ok, bad = "[green]✓[/]", "[red]✗[/]"
    winner = chain.get("winner")
    tail = f" (raised: {escape(raised)})" if raised else ""
    p.blank()
    first = chain.get("imported_first") or []
    after = f" (after {', '.join(first)}, as its __init__.py demands)" if first else ""
    head = f"import {escape(chain['package'])}{escape(after)} → " \
        f"{escape(_path(winner) if winner else 'not found')}"
    sub = _RAISED_BY.match(raised)
    if sub and sub.group(1).startswith(chain["package"] + "."):
        # The probe imported a submodule (torchrl._torchrl): the ✗ is that import's; the
        # package's own `import torchrl` works (survey 9).
        p.line(f"import chain: {bad} ", f"{escape(raised)} (under {head})", hang=4)
    else:
        p.line(f"import chain: {ok if winner and not raised else bad} ", f"{head}{tail}",
               hang=4)
    links = chain.get("links", [])
    key = ("import-chain", json.dumps([chain["package"], winner, links, raised, sorted(failed),
                                       chain.get("ops")], sort_keys=True, default=str))
    if noted is not None and links:
        if key in noted:
            p.line("  ", f"[dim]the same {len(links)} import(s) as in a report above[/]", hang=4)
            return
        noted.add(key)
    plain = [lk for lk in links if not lk["problem"] and lk["target"] not in failed and
             lk["kind"] == "submodule" and not any(_compiled(r) for r in lk["resolved"])]
    if len(links) > _MAX_CHAIN_LINES and plain:
        # A large package (tensorflow_text: 300 imports): the lines that load compiled code or
        # have a problem; the Python modules that merely resolve are counted.
        links = [lk for lk in links if lk not in plain]
    else:
        plain = []
    for link in links:
        # A path no static evaluation computes is unknown, not wrong: '?', and what the real
        # import mapped that no other line accounts for.
        # An import inside try/except ImportError is wrong only when it fails (the probe
        # retries it: OD512); one that resolves is an optional path like any other.
        unknown = bool(link.get("unevaluated"))
        wrong = (link["problem"] and not unknown) or (link["swallowed"] and
                                                       link["target"] in failed)
        # A module the code asks for before importing it (`if find_spec("x"): import x`):
        # not there, the branch is not taken.
        skipped = bool(link["problem"] and link.get("checked"))
        # A module absent under `except ImportError: pass` (rapidfuzz's `_avx2` builds) whose
        # import did not fail in the probe (or no probe ran): an optional path not taken.
        optional = bool(link["problem"] and link["swallowed"] and link["target"] not in failed
                        and not skipped)
        # pyzstd's `except ImportError: from ._cffi import …` after a `try` whose own imports
        # resolve: taken only when they fail (the probe's import error says so then).
        fallback = bool(link["kind"] == "submodule" and link["problem"] and link.get("fallback")
                        and link["target"] not in failed and not skipped and not optional)
        attribute = bool(link.get("attribute"))  # tokenizers' `from .. import AddedToken`
        wrong = wrong and not skipped and not attribute and not optional and not fallback
        mark = bad if wrong else "[yellow]?[/]" if unknown else "[dim]–[/]" \
            if skipped or optional or fallback else ok
        target = ", ".join(os.path.basename(r) for r in link["resolved"]) or link["problem"]
        if attribute:
            target = f"{link['target'].rsplit('.', 1)[-1]}: a name the package defines"
        if skipped:
            target += f" (asked first: {link['checked']})"
        elif optional:
            target += f" (optional: {link['swallowed'].split(' (line')[0]})"
        elif fallback:
            target += " (a fallback: the imports of its `try` resolve)"
        elif link.get("caught_by_caller"):
            # xformers' load: a failure is caught by the caller (re-raised as the package's
            # own exception type): `import` goes on without the library.
            clause = link["caught_by_caller"].split(" (line")[0].rstrip(":")
            target += f" (a failure is caught: {clause})"
        if unknown and link.get("observed"):
            target += "; the real import mapped " + ", ".join(
                os.path.basename(r) for r in link["observed"])
        p.line(f"  {mark} ", f"{escape(_path(os.path.basename(link['file'])))}:"
               f"{link['line']} {escape(_one_line(link['text'])[:80])} → {escape(target)}",
               hang=6)
    if plain:
        p.line(f"  {ok} ", f"{len(plain)} more imports of the package's own Python modules "
               "resolve (the JSON report lists them)", hang=6)
    if chain.get("ops"):
        regs = "; ".join(f"{o['name']} [{op_keys(o)}]" for o in chain["ops"])
        p.line(f"  {ok} ", f"ops registered by the import: {escape(regs)}", hang=6)


def _one_line(statement: str) -> str:
    """A statement as one line: a parenthesised import over 25 lines (pyzstd's) is shown
    with its whitespace collapsed, not cut in the middle of a name."""
    from opdoctor.facts.pynames import one_line  # here: ast, only when a chain is shown

    return one_line(statement, comments=True)


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


COMPILE_SHOWN = 4  # op lines of the compile section before one line counts the rest


def _compile_lines(p: Printer, section: dict[str, Any] | None, verbose: bool) -> None:
    """One line per op under cause 1: compile readiness (torch.compile / export / fake); past
    the first few, one line that counts the rest (-v shows each: vllm's _C was 268 lines)."""
    ops = (section or {}).get("ops", [])
    shown = ops if verbose or len(ops) <= COMPILE_SHOWN + 1 else ops[:COMPILE_SHOWN]
    for op in shown:
        p.line("  [dim]compile:[/] ", f"[dim]{escape(compile_line(op))}[/]")
    rest = ops[len(shown):]
    if rest:
        fake = sum(1 for op in rest if op["fake"] is False)
        grad = sum(1 for op in rest if op["autograd"] is False)
        p.line("  [dim]compile:[/] ", f"[dim]+ {len(rest)} more ops (fake ✗ {fake}, autograd "
               f"✗ {grad}; -v shows each)[/]")


def _path(path: str) -> str:
    """A file name for the text report: quoted when odd, never wrapped inside."""
    return unbreakable(quote_path(path))


def _header(t: Any) -> str:
    """``(ELF64 x86-64, shared object, 15 KB)``: what was analysed, only what is known."""
    parts = [x for x in (t.kind, _size(t.size)) if x]
    return f" ({', '.join(parts)})" if parts else ""


def render_one(p: Printer, report: Report, ctx: RenderContext,
               noted: set[tuple[str, str]] | None = None,
               errors_told: dict[tuple[str, ...], str] | None = None) -> None:
    """Print one target's report. ``noted``: the notes (info findings, by code and message)
    earlier reports of the run printed; a note about the package that every library of it
    repeats (OD507 in each of h5py's 25 reports) is then printed once, and referred to.
    ``errors_told``: the errors earlier reports printed in full (see :func:`_finding`)."""
    noted = set() if noted is None else noted
    t = report.target
    # An odd file name (spaces, a newline, control characters) is quoted wherever the report
    # repeats it, so the message cannot be split or disguised by it.
    quoted = _path(t.path)
    if quoted != t.path:
        p.names[escape(t.path)] = escape(quoted)
    p.line(f"[bold]opdoctor {__version__}[/] — ", f"{escape(quoted)}{escape(_header(t))}",
           hang=2)
    diag = report.diagnosis
    style = "bold green" if diag.cause == 0 else "bold red" if diag.confidence == "high" \
        else "bold yellow"
    p.line("", f"[{style}]{escape(diag.summary)}[/]", hang=2)
    folded = {id(f): root for root, fs in diag.consequences.items() for f in fs}
    roots = {id(f) for f in diag.root_findings}
    told: set[str] = set()  # consequences are keyed by code: told under its first root only
    fixes: set[str] = set()  # a fix printed once per report; the next finding with it refers
    p.blank()

    def shown_rank(row: CauseStatus) -> tuple[int, int]:
        """Causes with findings of their own first, worst first: a cause whose errors are
        all consequences shown elsewhere (its own lines notes, or one "↳" line) comes after."""
        own = [f.severity.rank for f in row.findings if id(f) not in folded]
        return (0 if row.state is CauseState.FOUND else 1, -max(own, default=-1))

    for row in sorted(cause_statuses(report), key=shown_rank):
        head = f"{_MARK[row.state]} Cause {int(row.cause)} — {row.cause.title}"
        if row.state is CauseState.FOUND:
            own = [f for f in row.findings if id(f) not in folded]
            # A warning or note a report above printed word for word (the package's own:
            # vllm's 66 OD514 warnings were in each of its twelve reports) is referred to.
            again = [f for f in own if f.severity is not Severity.ERROR
                     and (f.code, f.message) in noted]
            own = [f for f in own if f not in again]
            noted.update((f.code, f.message) for f in own if f.severity is not Severity.ERROR)
            if again and not own:
                sign = "!" if any(f.severity is Severity.WARNING for f in again) else "ℹ"
                p.line("", f"[dim]{sign}{head[1:]}: {_as_above(again)}[/]", hang=2)
                continue
            if not own:
                # Only consequences of a root elsewhere: one story, told under that root.
                codes = ", ".join(dict.fromkeys(f.code for f in row.findings))
                root = folded[id(row.findings[0])]
                p.line("", f"[dim]↳ Cause {int(row.cause)} — {row.cause.title}: {codes}, "
                       f"a consequence of {root} (shown under it)[/]", hang=2)
                continue
            # Errors before warnings before notes (stable otherwise): torch-tensorrt's 48 lines
            # of RUNPATH notes came before the error of the same cause.
            own.sort(key=lambda f: -f.severity.rank)
            worst = own[0].severity
            if worst is Severity.INFO:  # notes only: nothing is wrong with this cause
                head = f"ℹ{head[1:]}"
            elif worst is Severity.WARNING:  # as the closing list marks a warnings-only verdict
                head = f"!{head[1:]}"
            p.line("", f"[{_SEV_STYLE[worst]}]{head}[/]", hang=2)
            per_code: dict[tuple[str, Severity], int] = {}
            hidden: dict[tuple[str, Severity], list[Finding]] = {}
            for f in own:
                if f.severity is not Severity.ERROR and not ctx.verbose:
                    # rich's 38 modules with a __main__ block were 114 lines of OD507: the
                    # first few warnings or notes of a code, then one line that counts the
                    # rest. Every error is printed.
                    key = (f.code, f.severity)
                    per_code[key] = per_code.get(key, 0) + 1
                    if per_code[key] > SAME_CODE_SHOWN:
                        hidden.setdefault(key, []).append(f)
                        continue
                _finding(p, f, ctx, fixes, errors_told, os.path.basename(t.path) or t.path)
                # under a root, or under another failure that owns them (the CUDA build's
                # missing libc10_cuda.so where an OS library's absence leads the verdict)
                if (id(f) in roots or f.code in diag.consequences) and f.code not in told:
                    told.add(f.code)
                    _consequences(p, diag.consequences.get(f.code, ()), f.code, ctx)
            for (code, severity), rest in hidden.items():
                kind = "note" if severity is Severity.INFO else "warning"
                p.line("  ", f"[dim]+ {len(rest)} more {code} {kind}(s) like these "
                       f"({escape(_subjects(rest))}; -v shows each)[/]", hang=4)
            if again:
                p.line("  ", f"[dim]+ {_as_above(again)}[/]", hang=4)
            reg = report.sections.get("registration")
            pkg = package_inventory(report, None if ctx.verbose else 6)
            line = pkg or (inventory_line(reg) if reg is not None else "")
            if int(row.cause) == 1 and line:
                p.line("  [dim]inventory:[/] ", f"[dim]{escape(line)}[/]")
        elif row.state is CauseState.CLEAN:
            detail = _clean_detail(report, int(row.cause)) or f"no problem found ({row.reason})"
            if int(row.cause) == 1 and diag.cause in (2, 3, 4) and diag.confidence == "high":
                detail += " (static view; not reached: the load fails first)"
            p.line("", f"[green]{head}[/]: {escape(detail)}", hang=2)
        else:
            p.line("", f"[dim]{head}: not checked ({escape(row.reason)})[/]", hang=2)
        if int(row.cause) == 1:
            _compile_lines(p, report.sections.get("compile"), ctx.verbose)
    notes = [f for f in report.findings if f.code in NOT_A_VERDICT]
    for f in notes:
        p.line(f"[yellow]! {f.code}[/] ", f"[yellow]{escape(f.message)}[/]", hang=4)
        for line in f.evidence[: None if ctx.verbose else 3]:
            p.line("    ", f"[dim]{escape(line)}[/]", hang=6)
        if f.fix:
            p.line("    [green]fix:[/]      ", escape(f.fix))
    chain = report.sections.get("import-chain")
    if chain and chain.get("package"):
        raised = next((f.message for f in report.findings if f.code == "OD511"), "")
        _chain(p, chain, raised, frozenset(f.subject for f in report.findings
                                           if f.code == "OD512"), noted)
    probe = report.sections.get("probe")
    if probe and probe.get("ran"):
        regs = "; ".join(f"{o['name']} [{op_keys(o)}]" for o in probe["ops"])
        regs = tf_probe_ops(report.sections.get("tensorflow") or {}) or regs
        classes = probe.get("new_classes") or []
        if classes:  # TorchBind classes (torch.classes.<ns>.<Class>) are registrations too
            regs = "; ".join([regs] * bool(regs) + [f"class torch.classes.{c}" for c in classes])
        line = f"probe ({probe['seconds']:.1f} s, executed the library): {probe['outcome']}"
        if probe["outcome"] == "loaded" and not probe.get("target_loaded", True):
            base = os.path.basename(report.target.path)
            tried = any(f.code == "OD512" and f.message.startswith(f"loading {base} fails")
                        for f in report.findings)
            # torchao's import tries its CUDA library, the load fails, the package catches it
            why = "the package tried, the load failed and the package caught it: OD512" \
                if tried else "the package loads it later, or never"
            line = (f"probe ({probe['seconds']:.1f} s): `import {probe['imported']}` worked; "
                    f"it did not load {base} ({why})")
        elif probe["outcome"] == "loaded":
            line += f", registered {regs}" if regs else ", registered no operator"
        elif probe.get("imported") and not probe.get("target_loaded", True) and \
                os.path.basename(report.target.path) not in (probe.get("load_error") or ""):
            # tensorflow-quantum without cirq: the import died on a Python module before it
            # loaded any op library — the library was not executed (survey 17)
            err = (probe.get("load_error") or probe["outcome"]).strip().splitlines()
            line = (f"probe ({probe['seconds']:.1f} s): `import {probe['imported']}` failed "
                    f"({err[-1][:120] if err else probe['outcome']}); it did not load "
                    f"{os.path.basename(report.target.path)}")
        p.blank()
        p.line("", escape(line), hang=2)
    cuda = report.sections.get("cuda")
    if cuda and cuda.get("entries"):
        code = ", ".join(dict.fromkeys(e["arch"] for e in cuda["entries"]))
        p.blank()
        p.line("GPU code: ", f"{escape(code)}  (targets: {escape(cuda['targets_from'])})",
               hang=2)
        for row in cuda.get("gpus", []):
            mark = {"native": "[green]✓[/]", "jit": "[yellow]~[/]", "none": "[red]✗[/]"}
            how = {"native": f"runs natively ({row['via']})",
                   "jit": f"runs via PTX JIT ({row['via']})",
                   "none": "no kernel image"}[row["runs"]]
            p.line(f"  {mark[row['runs']]} ", f"{escape(row['gpu'])}: {escape(how)}")
    deps = report.sections.get("dependencies")
    if ctx.verbose and deps:
        p.blank()
        p.line("", f"[bold]dependency tree[/] (loaded into {escape(deps['context'])}):",
               hang=2)
        _tree(p, deps["tree"], 1)
    failed = [c for c in report.checks if c.status is CheckStatus.FAILED]
    for c in failed:
        p.line("", f"[bold red]! check {c.name} failed:[/] {escape(c.reason)} — "
               "the report is incomplete; please report this", hang=2)
    if ctx.verbose:
        p.blank()
        for c in report.checks:
            why = f" ({escape(c.reason)})" if c.reason else ""
            p.line("  ", f"[dim]check {c.name}: {c.status.value} in "
                   f"{c.seconds * 1000:.1f} ms{why}[/]", hang=4)


def _subjects(notes: list[Finding], shown: int = 3) -> str:
    """The first few subjects of ``notes`` (file names when they are paths), and how many
    more."""
    names = [os.path.basename(f.subject) or f.subject for f in notes]
    more = f", … {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _as_above(found: list[Finding]) -> str:
    codes = ", ".join(dict.fromkeys(f.code for f in found))
    warnings = sum(1 for f in found if f.severity is Severity.WARNING)
    notes = len(found) - warnings
    what = " and ".join(x for x in (f"{warnings} warning(s)" if warnings else "",
                                    f"{notes} note(s)" if notes else "") if x)
    return f"{what} ({codes}) as in a report above"


# Verdicts listed in the closing summary of a run of several reports, and the libraries named
# per verdict, before the rest are counted (-v lists all).
VERDICTS_SHOWN = 8
NAMES_SHOWN = 4


def _verdicts(p: Printer, reports: list[Report], ctx: RenderContext) -> None:
    """The run's verdicts, one line each, with the libraries that have it: what a package of
    19 libraries comes to after 19 reports (fbgemm_gpu: the 15 its failing import stops, and
    the 4 that fail on their own), worst first, then the most libraries."""
    groups: dict[str, list[Report]] = {}
    for r in reports:
        groups.setdefault(r.diagnosis.summary, []).append(r)

    def rank(item: tuple[str, list[Report]]) -> tuple[int, int]:
        worst = max((f.severity.rank for r in item[1] for f in r.findings
                     if f.code not in NOT_A_VERDICT), default=-1)
        return -worst, -len(item[1])

    ordered = sorted(groups.items(), key=rank)
    p.blank()
    p.line("", f"[bold]{len(reports)} reports, {len(groups)} verdict(s):[/]", hang=2)
    shown = ordered if ctx.verbose else ordered[:VERDICTS_SHOWN]
    for summary, group in shown:
        worst = max((f.severity.rank for r in group for f in r.findings
                     if f.code not in NOT_A_VERDICT), default=-1)
        mark = "[bold red]✗[/]" if worst >= Severity.ERROR.rank else \
            "[yellow]![/]" if worst >= Severity.WARNING.rank else "[green]✓[/]"
        names = [os.path.basename(r.target.path) or r.target.path for r in group]
        cut = None if ctx.verbose else NAMES_SHOWN
        more = f", … {len(names) - NAMES_SHOWN} more" if cut and len(names) > cut else ""
        lead = "Most likely cause: "
        said = "cause " + summary[len(lead):] if summary.startswith(lead) else summary
        p.line(f"  {mark} ", f"{len(group)} × {escape(said)}", hang=4)
        p.line("      ", f"[dim]{escape(', '.join(names[:cut]) + more)}[/]", hang=6)
    if len(ordered) > len(shown):
        p.line("  ", f"[dim]… {len(ordered) - len(shown)} more verdict(s) (-v lists all)[/]",
               hang=4)


def render(reports: list[Report], ctx: RenderContext, out: TextIO) -> None:
    """Print every report, then one summary line with the exit code.

    Lines are wrapped at ``ctx.width``, else at the terminal's width (see
    :func:`~opdoctor.report.layout.wrap_width`), with a hanging indent; the text is the same
    on a terminal and in a pipe apart from colour.
    """
    # The Printer wraps (Rich's own wrapping would fold paths) and colours without Rich.
    p = Printer(out, ctx.width or wrap_width(out), ctx.color)
    totals = dict.fromkeys(Severity, 0)
    codes: list[str] = []
    noted: set[tuple[str, str]] = set()
    errors_told: dict[tuple[str, ...], str] = {}
    for i, report in enumerate(reports):
        if i:
            p.blank()
        render_one(p, report, ctx, noted, errors_told)
        for sev, n in severity_counts(report).items():
            totals[sev] += n
        codes += [f.code for f in report.findings if f.code not in codes]
    for e in ctx.errors:
        if reports:
            p.blank()
        # InputError messages already start with the path: do not print it twice.
        what = e.message if e.message.startswith(e.target) else f"{e.target}: {e.message}"
        quoted = _path(e.target)
        what = quoted + what[len(e.target):] if what.startswith(e.target) else what
        p.line("[bold red]✗[/] ", f"[bold red]{escape(f'{what} [{e.code}]')}[/] — not analysed")
    if len(reports) > 1:
        _verdicts(p, reports, ctx)
    p.blank()
    line = (f"{totals[Severity.ERROR]} error(s) · {totals[Severity.WARNING]} warning(s) · "
            f"{totals[Severity.INFO]} info · exit {ctx.exit_code}")
    p.line("", line, hang=2)
    if codes:
        p.line("", f"explain a code: opdoctor explain {codes[0]}", hang=2)
