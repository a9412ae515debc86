"""torch.compile readiness (cause 1): can each op run with fake tensors, is its autograd
registered the supported way, and does ``torch.library.opcheck`` pass?

An op can load and run eagerly and still fail under torch.compile / torch.export / meta
tensors ("attempted to run this operator with Meta tensors, but there was no fake impl or
Meta kernel registered"). The per-op table (keys, fake ✓/✗, autograd ✓/✗) is always published
in the report's ``compile`` section; findings are raised when compile readiness is asked for
(``--opcheck`` or ``--require compile``), because a library that is only ever used eagerly is
not broken: they are warnings, errors under ``--require compile``.

Evidence ranks: the probe (``--opcheck``: torch's own ``has_fake_kernel``, the pystub, opcheck)
replaces the static reading for every op it observed (see :mod:`opdoctor.facts.compile`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:  # the probe's and the import chain's readers load only when used
    from typing import Any

    from opdoctor.facts.probe.outcome import OpcheckTest

_DOCS = "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html"
_FAKE_DOCS = "https://pytorch.org/docs/stable/library.html#torch.library.register_fake"
_OPCHECK = "https://pytorch.org/docs/stable/library.html#torch.library.opcheck"

OD140 = CodeDoc(
    "OD140", "operator has no fake (Meta) kernel", Severity.WARNING,
    what="Each op the library defines has a fake path: a Meta, CompositeImplicitAutograd or "
    "CompositeExplicitAutograd kernel, or a Python fake impl (torch.library.register_fake, "
    "@custom_op + .register_fake). Decided by torch's own has_fake_kernel in the probe "
    "(--opcheck), else from the registrars and the package's sources.",
    why="Eager calls work, but torch.compile, torch.export and meta tensors run the op on fake "
    "tensors and stop: 'attempted to run this operator with Meta tensors, but there was no "
    "fake impl or Meta kernel registered', 'UnsupportedOperatorException: ns.op.default', "
    "'Operator does not support running with fake tensors'. A warning because eager use "
    "works; an error with --require compile.",
    example="NotImplementedError: cop::scale: attempted to run this operator with Meta "
    "tensors, but there was no fake impl or Meta kernel registered",
    fix="Register a shape-only kernel: TORCH_LIBRARY_IMPL(ns, Meta, m) { m.impl(\"op\", "
    "&op_meta); } in C++, or @torch.library.register_fake(\"ns::op\") in Python (for a "
    "custom_op: @op.register_fake).",
    references=(_FAKE_DOCS, _DOCS),
)
OD141 = CodeDoc(
    "OD141", "pystub module missing or not importable", Severity.WARNING,
    what="When an op names the Python module that holds its fake impl "
    "(m.set_python_module(\"mod\") before m.def), that module imports and registers one.",
    why="Under torch.compile the op fails with 'We could not find the fake impl for this "
    "operator. The operator specified that you may need to import the 'mod' Python module' — "
    "and importing it cannot help when it is missing, misnamed or broken.",
    example="NotImplementedError: cop::scale: We could not find the fake impl for this "
    "operator. The operator specified that you may need to import the "
    "'cop_fake_impls_missing' Python module to load the fake impl.",
    fix="Ship the module (in the same distribution) with @torch.library.register_fake"
    "(\"ns::op\"), or correct the name given to m.set_python_module.",
    references=(_FAKE_DOCS,),
)
OD142 = CodeDoc(
    "OD142", "Python fake impl for a C++ op without set_python_module", Severity.WARNING,
    what="A C++ op whose fake impl is registered from Python also names that module in C++: "
    "m.set_python_module(\"pkg.module\") at the top of its TORCH_LIBRARY block (before "
    "m.def).",
    why="Without the pystub the fake impl exists only if that module happens to be imported: "
    "load the library another way (torch.ops.load_library, a different entry module) and "
    "torch.compile fails with 'no fake impl or Meta kernel registered'. torch also refuses it "
    "when strict pystub checking is on ('we require there to also be a companion C++ "
    "m.set_python_module(...) call').",
    example="mypkg/fake.py: @torch.library.register_fake(\"cop::scale\"); the C++ "
    "TORCH_LIBRARY(cop, m) has no m.set_python_module(\"mypkg.fake\")",
    fix="Add m.set_python_module(\"pkg.module\") as the first statement of TORCH_LIBRARY(ns, "
    "m) (after m.def it has no effect), or register a Meta kernel in C++.",
    references=(_FAKE_DOCS,),
)
OD143 = CodeDoc(
    "OD143", "autograd registered the unsupported way", Severity.WARNING,
    what="An op's backward is registered at an Autograd key (torch.library.register_autograd, "
    "TORCH_LIBRARY_IMPL(ns, Autograd, m)) or comes from a CompositeImplicitAutograd kernel — "
    "not from a torch.autograd.Function called inside a CPU/CUDA kernel, nor through the "
    "deprecated torch._custom_ops.impl_backward.",
    why="A backend kernel whose outputs require grad bypasses the dispatcher's autograd: "
    "gradients can be silently wrong and torch.compile traces a different graph "
    "(opcheck test_autograd_registration: 'at least one output of this operator has "
    "requires_grad=True but the operator does not have an autograd kernel defined at an "
    "autograd key').",
    example="lib.impl(\"scale\", lambda x, a: ScaleFn.apply(x, a), \"CPU\")",
    fix="Register the backward with torch.library.register_autograd(\"ns::op\", backward, "
    "setup_context=…) (C++: TORCH_LIBRARY_IMPL(ns, Autograd, m)), or register a "
    "CompositeImplicitAutograd kernel when the op is made of differentiable torch ops.",
    references=("https://pytorch.org/docs/stable/library.html#torch.library.register_autograd",),
)
OD144 = CodeDoc(
    "OD144", "torch.library.opcheck failed", Severity.WARNING,
    what="With --opcheck, torch.library.opcheck passes for each op on small CPU inputs built "
    "from its schema: test_schema, test_autograd_registration, test_faketensor, "
    "test_aot_dispatch_dynamic.",
    why="opcheck is PyTorch's own test that an op's registrations are consistent: the schema "
    "matches what the kernel mutates and returns, the fake kernel agrees with the real one, "
    "and the op survives AOT dispatch (what torch.compile does).",
    example="test_faketensor: AssertionError: fake and real outputs differ in shape",
    fix="Read the exception in the evidence; rerun torch.library.opcheck(torch.ops.ns.op."
    "default, args) with representative inputs to debug.",
    references=(_OPCHECK,),
)
OD145 = CodeDoc(
    "OD145", "opcheck could not test an operator", Severity.INFO,
    what="--opcheck could build sample inputs for each op from its schema and the kernel "
    "accepted them.",
    why="An op that was not tested is not known to be compile-ready: its schema has types "
    "opdoctor cannot make a sample for (str, custom classes…), or the kernel rejects small "
    "CPU inputs (shape or device constraints).",
    example="myop::resize: schema cannot be satisfied: argument 'str mode' (no sample value)",
    fix="Run torch.library.opcheck yourself with representative inputs.",
    references=(_OPCHECK,),
)
CODES = (OD140, OD141, OD142, OD143, OD144, OD145)


@dataclass
class OpRow:
    """One op's compile readiness, static and (when observed) from the probe."""

    name: str
    origin: str
    keys: tuple[str, ...]
    fake: bool | None
    fake_via: str
    autograd: bool | None
    autograd_via: str
    observed: str  # "probe" or "static"
    pystub: str = ""
    pystub_error: str = ""
    fake_after_pystub: bool | None = None
    skipped: str = ""
    args: str = ""
    tests: tuple[OpcheckTest, ...] = ()
    notes: list[str] = field(default_factory=list)


def asked(facts: Facts) -> bool:
    """Compile readiness was asked for: findings are raised."""
    return facts.options.opcheck or "compile" in facts.options.require


def rows(facts: Facts) -> list[OpRow]:
    """Per op: the static reading, replaced by the probe's observation where there is one."""
    ci = facts.compile_inventory
    out = {op.name: OpRow(op.name, op.origin, op.keys, op.fake, op.fake_via, op.autograd,
                          op.autograd_via, "static") for op in ci.ops}
    res = facts.probe_result() if facts.options.opcheck else None
    for o in res.compile_ops if res is not None else ():
        prev = out.get(o.name)
        out[o.name] = OpRow(o.name, "Python" if o.custom_op or (prev and prev.origin ==
                                                                "Python") else "C++",
                            o.keys, o.fake, o.fake_via, o.autograd, o.autograd_via, "probe",
                            o.pystub, o.pystub_error, o.fake_after_pystub, o.skipped, o.args,
                            o.tests)
    return list(out.values())


def _severity(facts: Facts, doc: CodeDoc) -> Severity:
    return Severity.ERROR if "compile" in facts.options.require else doc.severity


def _failed(row: OpRow, test: str) -> OpcheckTest | None:
    for t in row.tests:
        if t.test == test and not t.ok and not t.skipped:
            return t
    return None


def _fix_no_fake(row: OpRow) -> str:
    ns, _, op = row.name.partition("::")
    if row.origin == "Python":
        return (f"add a fake impl: @{op}.register_fake (or @torch.library.register_fake"
                f"(\"{row.name}\")) returning empty tensors of the output shapes")
    return (f"add TORCH_LIBRARY_IMPL({ns}, Meta, m) {{ m.impl(\"{op}\", &{op}_meta); }} "
            f"(shapes only), or @torch.library.register_fake(\"{row.name}\") in a Python "
            f"module named by m.set_python_module(\"pkg.module\") before m.def")


def _fake_findings(facts: Facts, row: OpRow) -> Iterator[Finding]:
    where = "probe (torch._library.utils.has_fake_kernel)" if row.observed == "probe" \
        else "static: registrars and Python sources"
    ev = [f"kernels: {', '.join(row.keys) or 'none'} ({where})"]
    for test in ("test_faketensor", "test_aot_dispatch_dynamic"):
        t = _failed(row, test)
        if t:
            ev.append(f"opcheck {test}: {t.error_type}: {t.message[:200]}")
    if row.pystub and (row.pystub_error or row.fake_after_pystub is False):
        why = row.pystub_error or "it imports but registers no fake impl for this op"
        yield OD141.finding(row.name, f"{row.name}: its fake impl is promised in Python "
                            f"module '{row.pystub}' (m.set_python_module), which does not "
                            f"provide it: {why}",
                            [f"torch._C._dispatch_pystub: ('{row.pystub}', …)", *ev],
                            severity=_severity(facts, OD141))
        return
    if row.pystub:
        return  # the module provides it once imported: torch says so in its own error
    yield OD140.finding(row.name, f"{row.name} has no fake (Meta) kernel: eager calls work, "
                        "torch.compile / torch.export / meta tensors fail", ev,
                        fix=_fix_no_fake(row), severity=_severity(facts, OD140))


def _python_findings(facts: Facts, table: dict[str, OpRow], reported: set[str]
                     ) -> Iterator[Finding]:
    ci = facts.compile_inventory
    done = set(reported)  # ops whose OD143 the probe already raised (with this evidence)
    for r in ci.python:
        rel = f"{os.path.basename(r.file)}:{r.line}"
        row = table.get(r.op)
        if r.kind == "autograd_unsupported" and r.op not in done:
            done.add(r.op)
            yield OD143.finding(r.op or r.module, f"{r.op or 'an op'}: {r.how}",
                                (f"{r.file}:{r.line}",), severity=_severity(facts, OD143))
        elif r.kind == "fake" and row is not None and row.origin == "C++" and \
                ("stub:" + r.op) not in done:
            stub = row.pystub if row.observed == "probe" else \
                (r.module if r.module in ci.pystub_modules else "")
            if stub:
                continue
            done.add("stub:" + r.op)
            ev = [f"{rel}: {r.how} for the C++ op {r.op}",
                  f"module {r.module}: {'imported' if r.imported else 'NOT imported'} by "
                  f"`import {facts.probed_import}`",
                  "no m.set_python_module for it: "
                  + ("torch._C._dispatch_pystub returned None" if row.observed == "probe"
                     else f"'{r.module}' is not among the library's .rodata strings")]
            yield OD142.finding(r.op, f"{r.op} is defined in C++ but its fake impl lives in "
                                f"Python ({r.module}) and the C++ library does not name that "
                                "module with m.set_python_module", ev,
                                fix=f"add m.set_python_module(\"{r.module}\") as the first "
                                f"statement of TORCH_LIBRARY({r.op.split('::')[0]}, m)",
                                severity=_severity(facts, OD142))


def run(facts: Facts) -> Iterator[Finding]:
    """Raise readiness findings when compile readiness was asked for."""
    if not asked(facts):
        return
    table = {r.name: r for r in rows(facts)}
    static_grad = {r.op: r for r in facts.compile_inventory.python
                   if r.kind == "autograd_unsupported"}
    reported: set[str] = set()
    for row in table.values():
        if row.fake is False:
            yield from _fake_findings(facts, row)
        t = _failed(row, "test_autograd_registration")
        if t:
            yield OD143.finding(row.name, f"{row.name}: outputs require grad but no autograd "
                                "kernel is registered at an Autograd key (opcheck "
                                "test_autograd_registration): gradients come from inside the "
                                "backend kernel and are not what torch.compile computes",
                                (f"{t.error_type}: {t.message[:300]}",
                                 f"inputs: {row.args.replace(' (requires_grad)', '')} "
                                 "(tensors with requires_grad)",
                                 *([f"{static_grad[row.name].file}:"
                                    f"{static_grad[row.name].line}: "
                                    f"{static_grad[row.name].how}"]
                                   if row.name in static_grad else [])),
                                severity=_severity(facts, OD143))
            reported.add(row.name)
        failed = [x for x in ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
                  if _failed(row, x) and not (row.fake is False and x != "test_schema")]
        if failed:
            ev = [f"{x}: {t2.error_type}: {t2.message[:300]}" for x in failed
                  if (t2 := _failed(row, x)) is not None]
            yield OD144.finding(row.name, f"{row.name}: torch.library.opcheck failed "
                                f"{', '.join(failed)}", [*ev, f"inputs: {row.args}"],
                                severity=_severity(facts, OD144))
        if row.skipped and facts.options.opcheck:
            yield OD145.finding(row.name, f"{row.name} was not tested by opcheck: "
                                f"{row.skipped}", (row.skipped,))
    yield from _python_findings(facts, table, reported)


def section(facts: Facts) -> dict[str, Any]:
    """The per-op readiness table for the report."""
    res = facts.probe_result() if facts.options.opcheck else None
    ci = facts.compile_inventory
    note = ""
    if facts.options.opcheck and (res is None or not res.compile_checked):
        note = "not run: " + ("--static" if not facts.options.probe else
                              "the probe did not reach the opcheck stage" if res else
                              "no probe for this target")
    elif res is not None and res.opcheck_error is not None:
        note = f"the opcheck stage failed (opdoctor's bug): {res.opcheck_error.type}: " \
            f"{res.opcheck_error.message}"
    return {
        "asked": asked(facts),
        "required": "compile" in facts.options.require,
        "ops": [{"name": r.name, "origin": r.origin, "keys": list(r.keys), "fake": r.fake,
                 "fake_via": r.fake_via, "autograd": r.autograd,
                 "autograd_via": r.autograd_via, "observed": r.observed, "pystub": r.pystub,
                 "pystub_error": r.pystub_error, "fake_after_pystub": r.fake_after_pystub,
                 "opcheck": {t.test: {"ok": t.ok, "skipped": t.skipped,
                                      "error": f"{t.error_type}: {t.message}" if t.error_type
                                      else ""} for t in r.tests},
                 "opcheck_skipped": r.skipped, "inputs": r.args} for r in rows(facts)],
        "python_registrations": [{"kind": r.kind, "op": r.op, "how": r.how, "file": r.file,
                                  "line": r.line, "module": r.module, "imported": r.imported}
                                 for r in ci.python],
        "pystub_modules_in_rodata": ci.pystub_modules,
        "opcheck": {"ran": bool(res and res.compile_checked),
                    "seconds": res.opcheck_seconds if res else 0.0, "note": note},
    }


def _applies(facts: Facts) -> str:
    if facts.framework_library:
        return f"part of the {facts.framework_library} install, not an operator extension"
    if not facts.is_package_dir and facts.blocker:
        return facts.blocker
    if not facts.is_package_dir and not facts.image.has_section_table:
        return "no section header table: registrars cannot be read statically"
    return ""


CHECK = Check(
    name="compile",
    summary="each op has a fake (Meta) kernel, a working pystub and supported autograd "
    "registration; --opcheck runs torch.library.opcheck",
    causes=(Cause.REGISTRATION,),
    codes=CODES,
    run=run,
    needs_elf=False,  # a pure-Python package of custom_ops has no library to read
    section=section,
    applies=_applies,
)
