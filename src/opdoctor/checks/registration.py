"""Registration evidence (cause 1, static): is the registration code in the binary at all,
what would it register, can that work, and are the entry points a host calls exported?

Nothing is executed: see :mod:`opdoctor.facts.registration` for how the inventory is read. What is
reported as registered is the *static* view (dispatch keys per namespace); the load probe
observes the real registry.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.distance import edit_distance
from opdoctor.facts.elf.dynsym import STB_LOCAL, STV_HIDDEN
from opdoctor.facts.pyreg import PackageRegistrations, refutation
from opdoctor.facts.registration import (
    Inventory,
    check_schema_syntax,
    is_template,
    source_file_symbols,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_DOCS = "https://pytorch.org/tutorials/advanced/dispatcher.html"

OD101 = CodeDoc(
    "OD101", "registers nothing", Severity.ERROR,
    what="A library built against torch contains registration code: TORCH_LIBRARY / "
    "TORCH_LIBRARY_IMPL registrars, schema strings, torch::RegisterOperators or a PyInit_ "
    "entry point.",
    why="The library loads without any error, yet 'operator myop::x does not exist' follows: "
    "the registration was compiled out (#ifdef, a define missing in this build), the file "
    "holding it was left out of the sources, or the linker dropped it.",
    example="torch.ops.load_library('libmyop.so') succeeds; torch.ops.myop.weighted_sum → "
    "AttributeError: '_OpNamespace' 'myop' object has no attribute 'weighted_sum'",
    fix="Check the preprocessor conditions around TORCH_LIBRARY and that the .cpp with the "
    "registration is in the target's sources; `nm -C lib.so | grep TORCH_LIBRARY` must list it. "
    "It is a note, not an error, for a support library the package's other libraries NEED, a "
    "plugin its package calls by name, and an empty variant (no code of its own, e.g. the CUDA "
    "part of a CPU wheel) its package loads beside the libraries that register the ops.",
    references=(_DOCS,),
)
OD102 = CodeDoc(
    "OD102", "invalid operator schema", Severity.ERROR,
    what="Every schema string in the library parses (torch._C.parse_schema in the target "
    "interpreter, else opdoctor's built-in grammar check).",
    why="m.def() parses the schema while the library's static initialisers run: a typo makes "
    "the load itself fail with a RuntimeError from the schema parser, and nothing after it in "
    "that initialiser is registered.",
    example="RuntimeError: expected arrow but found 'ident' here: weighted_sum(Tensor x1, "
    "Tensor x2, flaot alpha) Tensor",
    fix="Correct the schema: `name(Type arg, ...) -> ReturnType`, with types from the schema "
    "language (Tensor, int, float, bool, str, Scalar, SymInt, Tensor?, int[] …).",
    references=("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/README.md",),
)
OD103 = CodeDoc(
    "OD103", "operator defined without any kernel", Severity.WARNING,
    what="A namespace whose ops this library defines also gets kernels: TORCH_LIBRARY_IMPL "
    "blocks or m.def(schema, function).",
    why="The op exists (torch.ops finds it) but every call fails with 'Could not run "
    "'myop::weighted_sum' with arguments from the 'CPU' backend' unless another library "
    "registers the kernels.",
    example="NotImplementedError: Could not run 'myop::weighted_sum' with arguments from the "
    "'CPU' backend.",
    fix="Add TORCH_LIBRARY_IMPL(ns, CPU, m) { m.impl(\"op\", &fn); } (and CUDA …), or bind a "
    "function in the def: m.def(\"schema\", &fn); or make sure the library with the kernels "
    "is loaded too.",
    references=(_DOCS,),
)
OD104 = CodeDoc(
    "OD104", "kernels for a namespace defined elsewhere", Severity.INFO,
    what="Every TORCH_LIBRARY_IMPL namespace is defined (TORCH_LIBRARY) in this library.",
    why="Fine when another library defines the namespace — but that library must be loaded "
    "first or the load fails/the kernels hang unused ('dangling impl').",
    example="TORCH_LIBRARY_IMPL(myop, CPU, m) in libmyop_cpu.so, TORCH_LIBRARY(myop) in "
    "libmyop.so",
    fix="Load the library that holds TORCH_LIBRARY(ns, m) before this one (or define the "
    "namespace here).",
    references=(_DOCS,),
)
OD105 = CodeDoc(
    "OD105", "TORCH_EXTENSION_NAME used as the operator namespace", Severity.ERROR,
    what="The namespace is not the macro name TORCH_EXTENSION_NAME itself.",
    why="TORCH_LIBRARY(TORCH_EXTENSION_NAME, m) takes its namespace from a macro that only "
    "torch.utils.cpp_extension defines. Built by CMake or a Makefile the macro is undefined "
    "and the ops land in torch.ops.TORCH_EXTENSION_NAME; built by cpp_extension they land in "
    "torch.ops.<module name>, rarely what the Python code calls.",
    example="torch.ops.myop.weighted_sum → '_OpNamespace' 'myop' object has no attribute "
    "'weighted_sum' (it is torch.ops.TORCH_EXTENSION_NAME.weighted_sum)",
    fix="Write the namespace literally: TORCH_LIBRARY(myop, m) and TORCH_LIBRARY_IMPL(myop, "
    "CPU, m).",
    references=(_DOCS,),
)
OD106 = CodeDoc(
    "OD106", "expected operator or kernel not in the binary", Severity.ERROR,
    what="Each --expect-op ns::op[KEY,...] is defined by this library and has kernels for "
    "the listed dispatch keys.",
    why="The gate for 'the op my model calls is actually in the artifact we ship' — e.g. a "
    "wheel built on a machine without nvcc has no CUDA kernel.",
    example="--expect-op myop::weighted_sum[CPU,CUDA] on a CPU-only build",
    fix="Build the missing part (nvcc for CUDA kernels, the source file with the "
    "TORCH_LIBRARY_IMPL block), or correct the expectation.",
    references=(_DOCS,),
)
OD107 = CodeDoc(
    "OD107", "registration inventory is partial (stripped library)", Severity.INFO,
    what="The library keeps its .symtab, so registrations can be read from the registrar "
    "symbols.",
    why="Stripped libraries only keep schema strings in .rodata: namespaces and dispatch keys "
    "cannot be read statically; the load probe can still observe them.",
    example="strip --strip-all libmyop.so",
    fix="Nothing is broken; to let opdoctor see namespaces and keys statically, ship unstripped "
    "or keep a debug copy (strip --only-keep-debug).",
    references=("strip(1)",),
)
OD108 = CodeDoc(
    "OD108", "TensorFlow op registered without a kernel", Severity.WARNING,
    what="A TensorFlow op library that registers ops (REGISTER_OP) also registers kernels "
    "(REGISTER_KERNEL_BUILDER).",
    why="The op exists in the graph but cannot run: 'No OpKernel was registered to support Op "
    "'ZeroOut' used by {{node ZeroOut}} with these attrs'.",
    example="REGISTER_OP(\"ZeroOut\") without REGISTER_KERNEL_BUILDER(Name(\"ZeroOut\")…)",
    fix="Add REGISTER_KERNEL_BUILDER(Name(\"Op\").Device(DEVICE_CPU), OpKernelClass) (and GPU "
    "variants), or load the library that has the kernels.",
    references=("https://www.tensorflow.org/guide/create_op",),
)
OD110 = CodeDoc(
    "OD110", "expected entry point not exported", Severity.ERROR,
    what="Each --expect-symbol NAME is exported by the library (.dynsym, global, default "
    "visibility).",
    why="A host that dlsym()s the registration entry point gets NULL: 'undefined symbol: "
    "register_myop_kernels' from dlsym, or the framework silently registers nothing.",
    example="ctypes: AttributeError: lib.so: undefined symbol: register_myop_kernels",
    fix="Define the function in this library and export it (see OD111/OD112 for the usual "
    "reasons it is missing).",
    references=("nm -D --defined-only lib.so",),
)
OD111 = CodeDoc(
    "OD111", "entry point exported only as a mangled C++ name", Severity.ERROR,
    what="An expected entry point is exported under its plain C name.",
    why="Without extern \"C\" the compiler mangles the name (_Z21register_myop_kernelsv); "
    "dlsym(\"register_myop_kernels\") fails.",
    example="nm -D lib.so → T _Z21register_myop_kernelsv",
    fix="Declare it extern \"C\": extern \"C\" int register_myop_kernels();",
    references=("https://isocpp.org/wiki/faq/mixing-c-and-cpp",),
)
OD112 = CodeDoc(
    "OD112", "entry point has hidden visibility or local binding", Severity.ERROR,
    what="An expected entry point that is defined is also visible to the dynamic linker.",
    why="Built with -fvisibility=hidden (CMake's CXX_VISIBILITY_PRESET hidden) or a version "
    "script, the function exists but is not in .dynsym: dlsym cannot find it.",
    example="readelf -s lib.so → LOCAL HIDDEN register_myop_kernels",
    fix="Mark it exported: __attribute__((visibility(\"default\"))) (or a MYOP_API macro), or "
    "list it in the version script's global: section.",
    references=("https://gcc.gnu.org/wiki/Visibility",),
)

OD128 = CodeDoc(
    "OD128", "another installed library registers the same namespace", Severity.WARNING,
    what="No other shared library in the target interpreter's site-packages defines the same "
    "TORCH_LIBRARY namespace (--against-site-packages).",
    why="Whichever loads second fails with 'Only a single TORCH_LIBRARY can be used to "
    "register the namespace' — typically an old copy of the same extension, or two projects "
    "that chose the same namespace.",
    example="site-packages/myop_old/libmyop.so also defines TORCH_LIBRARY(myop)",
    fix="Uninstall the stale copy, or rename one namespace.",
    references=(_DOCS,),
)
OD115 = CodeDoc(
    "OD115", "kernels registered for a misspelt namespace", Severity.ERROR,
    what="Every TORCH_LIBRARY_IMPL namespace is one this library defines, unless no defined "
    "namespace is within two edits of it.",
    why="TORCH_LIBRARY(tinyop) + TORCH_LIBRARY_IMPL(tiny_op, CPU): both load without an "
    "error, the op exists, and every call fails because its kernels went to a namespace "
    "nobody defines.",
    example="NotImplementedError: Could not run 'tinyop::scale_add' with arguments from the "
    "'CPU' backend.",
    fix="Use the same namespace in TORCH_LIBRARY and TORCH_LIBRARY_IMPL (one constant or "
    "macro for both).",
    references=(_DOCS,),
)
OD116 = CodeDoc(
    "OD116", "the named library registers no operator", Severity.WARNING,
    what="A library named explicitly on the command line contains registration code or links "
    "a framework (torch, TensorFlow).",
    why="It registers nothing: loading it can never make an operator exist. Either the "
    "registration was compiled out (and with it every use of the framework, so the linker "
    "dropped torch as well) or this is not the operator library.",
    example="opdoctor check libtinyop.so on a build with the TORCH_LIBRARY block inside "
    "#ifdef USE_TORCH: no registrar, no framework in DT_NEEDED",
    fix="If it is not meant to register operators (a plain native library loaded with ctypes, "
    "another framework's plugin), nothing to fix: check the library that registers the ops, "
    "or the package with --package. If it is, check the preprocessor conditions around "
    "TORCH_LIBRARY and that the source file with it is compiled into this library.",
    references=(_DOCS,),
)
CODES = (OD101, OD102, OD103, OD104, OD105, OD106, OD107, OD108, OD110, OD111, OD112, OD115,
         OD116, OD128)

def inventory(facts: Facts) -> Inventory:
    """The library's registration inventory (a fact: computed once per run)."""
    return facts.registration


def _schema_findings(facts: Facts, inv: Inventory) -> Iterator[Finding]:
    if not facts.torch_context:
        return  # no framework in this library: nothing of it ever reaches torch's parser
    torch_verdicts, torch_label = facts.schema_verdicts
    for s in inv.schemas:
        if is_template(s.text):
            continue  # filled in before m.def (see facts.schema_verdicts)
        builtin = check_schema_syntax(s.text)
        by_torch = torch_verdicts.get(s.text, "")
        if not builtin and not by_torch:
            continue
        if torch_label and not by_torch:
            continue  # torch's own parser accepted it: its verdict wins over the built-in grammar
        if not builtin and by_torch.startswith("Unknown custom class type"):
            # A TorchBind class (__torch__.torch.classes.ns.Name) exists once a library
            # registers it — usually this one, at load (torch_tensorrt's tensorrt.Engine): a
            # parser without the library cannot judge it; the load (probe) does.
            continue
        ev = [f"schema in .rodata: {s.text!r}"
              + (" (its return part is not in .rodata)" if s.partial else "")]
        if torch_label:
            ev.append(f"{torch_label}: {by_torch or 'parses'}")
        ev.append(f"opdoctor's built-in grammar: {builtin or 'ok'}")
        # Both rejected (or torch was not asked): the built-in grammar names the culprit
        # ("unknown type 'flaot'") where torch's message may not; both are in the evidence.
        yield OD102.finding(s.name, f"invalid schema for {s.name}: {builtin or by_torch}", ev)


def _tf_filesystem_plugin(facts: Facts) -> bool:
    """A TensorFlow modular filesystem plugin (exports TF_InitPlugin) registers no op."""
    return bool(facts.symbol_tables.of_image(facts.image).lookup("TF_InitPlugin"))


def run(facts: Facts) -> Iterator[Finding]:
    """Inventory the registrations and report what cannot work; static guesses the load probe
    refutes are downgraded to info and say so (the probe's observation outranks them)."""
    found = list(_static(facts))
    yield from reconcile_with_probe(facts, list(reconcile_with_python(facts, found)))


def reconcile_with_python(facts: Facts, found: list[Finding]) -> Iterator[Finding]:
    """A package's Python registrations complete its libraries' (ops defined in Python, their
    kernels in C++, or the other way round): a finding they refute is kept as info."""
    merged = facts.package_registrations if facts.options.package else None
    for f in found:
        why = refutation(merged, f.code, f.subject, facts.path) if merged else ""
        if merged and f.code == "OD106":
            why = _expected_elsewhere(facts, merged, f.subject)
            once = "" if why else _told_on(facts, merged, f)
            if once:
                # a wheel whose package defines the op nowhere: one error, on one library,
                # not one per library (fbgemm-gpu-cpu's wheel: 19; survey 20's re-run)
                yield dataclasses.replace(f, severity=Severity.INFO, message=f"{f.message} — "
                                          f"the package defines it nowhere: the error is told "
                                          f"once, on {once}")
                continue
        yield dataclasses.replace(f, severity=Severity.INFO, message=f"{f.message} — not a "
                                  f"fault: {why}", evidence=(*f.evidence, f"Python: {why}")) \
            if why else f


def _told_on(facts: Facts, merged: PackageRegistrations, f: Finding) -> str:
    """For a wheel's library: the file name of the one library of the wheel's package that
    carries an expected op's OD106 as an error when the package defines that op nowhere — the
    one that defines the op's namespace, else holds schemas, else registers anything (by path
    within each) — when that is another library; ""
    otherwise. Only a wheel: there every library is a target of the run."""
    if not facts.options.wheel or len(merged.libraries) < 2:
        return ""
    exp = next((e for e in facts.expected_ops if f"{e.namespace}::{e.op}" == f.subject), None)
    op = merged.op(f.subject) if exp is not None else None
    bare = merged.op(f"?::{exp.op}") if exp is not None else None
    if exp is None or (op is not None and op.defined) or (bare is not None and bare.defined):
        return ""  # defined somewhere: the kernels' story, told per library
    # the library that defines the op's namespace, else one holding schemas (a stripped
    # one), else any that registers something
    ranked = sorted(merged.libraries, key=lambda x: (exp.namespace not in x.defines,
                                                     not x.loose, not x.registers, x.path))
    first = ranked[0] if ranked and ranked[0].registers else None
    if first is None or os.path.realpath(first.path) == os.path.realpath(facts.path):
        return ""
    return first.name


def _expected_elsewhere(facts: Facts, merged: PackageRegistrations, name: str) -> str:
    """Why an expected op missing from this library is no fault of the package: another of
    its libraries (or its Python) defines it and registers every expected kernel — the
    expectation is the package's, not each file's (fbgemm-gpu-cpu 1.8's wheel: 19 libraries,
    the op in one of them, 18 × OD106 and a failed gate; survey 20). "" when the package as a
    whole does not meet it."""
    exp = next((e for e in facts.expected_ops if f"{e.namespace}::{e.op}" == name), None)
    if exp is None:
        return ""
    op = merged.op(name)
    if op is None or not op.defined:
        # a stripped library's schema, its namespace unknown: as for the library itself
        # (`_expected_ops`), present, its kernels not verifiable statically
        bare = merged.op(f"?::{exp.op}")
        if bare is None or not bare.defined or (
                _cuda_absent(facts, exp.keys)):
            # a CUDA kernel from a package none of whose libraries is a CUDA build
            # (fbgemm-gpu-cpu's wheel, `[CUDA]`: survey 20's re-run) is certainly absent
            return ""
        return f"the package {merged.package} has it: {bare.defined[0]} holds the schema of " \
            f"{exp.op} (its kernels cannot be verified statically)"
    if any(k not in op.keys for k in exp.keys):
        # No kernel of the namespace can be read anywhere in the package (torchvision 0.28's
        # _C.so: the op's schema, its registrars not exported): unverifiable, as for one
        # library — except a CUDA kernel, which needs a CUDA build.
        if op.keys or any(lib.impl.get(exp.namespace) for lib in merged.libraries) or (
                _cuda_absent(facts, exp.keys)):
            return ""
        return (f"the package {merged.package} has it: {op.defined[0]} defines {name} (its "
                "kernels cannot be verified statically)")
    where = ", ".join(dict.fromkeys(op.keys[k][0] for k in exp.keys)) if exp.keys else ""
    return (f"the package {merged.package} meets it: {op.defined[0]} defines {name}"
            + (f", with its {'/'.join(exp.keys)} kernel(s) in {where}" if where else ""))


def _no_operator_library(facts: Facts, inv: Inventory) -> bool:
    """Whether the target is a library of a wheel or package that can define no operator —
    it registers nothing and links no torch: an auditwheel-vendored library in
    ``<dist>.libs/`` (libgomp, libjpeg), fbgemm's asmjit.so. An expected op is the package's
    (survey 20's re-run: every auditwheel-repaired wheel failed `--expect-op` on its vendored
    libraries); such a library is not asked for it. A library named alone still is."""
    if not (facts.options.wheel or facts.options.package) or inv.registers_anything:
        return False
    return facts.links_torch(facts.path) is False


def _cuda_absent(facts: Facts, keys: tuple[str, ...]) -> bool:
    """Whether a CUDA kernel is expected (``keys``) and neither the library nor a library
    of its package is a CUDA build (none needs torch's CUDA libraries or a CUDA runtime
    library): that kernel is certainly absent, whatever static reading cannot read."""
    from opdoctor.facts.variant import variant_library

    if not any(k.startswith("CUDA") for k in keys):
        return False
    merged = facts.package_registrations if facts.options.package else None
    paths = [facts.path, *(lib.path for lib in merged.libraries)] if merged else [facts.path]
    return not any(variant_library(n)[0] == "cuda" for p in paths for n in facts.needed_of(p))


def _probe_view(facts: Facts) -> tuple[dict[str, set[str]], list[str]] | None:
    """What the probe observed the load register: ({namespace: dispatch keys of its new ops},
    new op names); None when no probe ran or it did not reach the registry listing."""
    if not facts.options.probe or not facts.torch_context:
        return None
    res = facts.probe_result()
    if res is None:
        return None
    from opdoctor.facts.probe.outcome import ProbeState  # loaded by the probe that ran

    if res.state is not ProbeState.LOADED or not res.inspected:
        return None
    spaces: dict[str, set[str]] = {}
    for name in res.new_ops:
        spaces.setdefault(name.split("::", 1)[0], set())
    for o in res.ops:
        spaces.setdefault(o.name.split("::", 1)[0], set()).update(o.keys)
    return spaces, list(res.new_ops)


def reconcile_with_probe(facts: Facts, found: list[Finding]) -> Iterator[Finding]:
    """Evidence has an order: what the probe observed in the real process outranks markers in
    the file. A static finding the probe refutes is kept as info, saying what refuted it."""
    view = _probe_view(facts)
    if view is None:
        yield from found
        return
    spaces, new = view
    res = facts.probe_result()
    defined = {o.name.split("::", 1)[0] for o in (res.ops if res else ()) if o.schema}
    shown = ", ".join(new[:4]) or "nothing"
    for f in found:
        ns = f.subject.split("::", 1)[0] if "::" in f.subject else ""
        why = ""
        if f.code == "OD101" and new:
            why = f"the load registered {shown}"
        elif f.code == "OD102" and any(n.split("::", 1)[-1] == f.subject.split("::")[-1]
                                       for n in new):
            why = f"torch parsed it: the load registered {shown}"
        elif f.code == "OD103" and ns in spaces and spaces[ns] - {"Undefined"}:
            why = f"the load registered kernels for {ns}: {', '.join(sorted(spaces[ns]))}"
        elif f.code == "OD104" and ns in defined:
            why = f"the process defines {ns} after the load"
        if why:
            yield dataclasses.replace(
                f, severity=Severity.INFO,
                message=f"{f.message} — static guess refuted by the probe ({why})",
                evidence=(*f.evidence, f"probe (ranks above the static reading): {why}"))
        else:
            yield f


def near_misses(inv: Inventory) -> list[tuple[str, str]]:
    """(implemented namespace nobody defines, defined namespace without kernels) pairs at edit
    distance ≤ 2: the typo TORCH_LIBRARY(tinyop) + TORCH_LIBRARY_IMPL(tiny_op, CPU)."""
    orphans = [ns for ns in inv.namespaces.values()
               if ns.impl_keys and not (ns.defines or ns.fragments)]
    bare = [ns for ns in inv.namespaces.values()
            if (ns.defines or ns.fragments) and not ns.impl_keys and not ns.unresolved]
    out = []
    for o in orphans:
        best = min(bare, key=lambda d: edit_distance(o.name, d.name), default=None)
        if best is not None and edit_distance(o.name, best.name) <= 2:
            out.append((o.name, best.name))
    return out


def _not_an_op_library(facts: Facts, inv: Inventory) -> Iterator[Finding]:
    """A library the user named that registers nothing and links no framework (item: the
    registration compiled out took every torch reference, and so DT_NEEDED, with it)."""
    needed = [str(n) for n in facts.image.tags.get("DT_NEEDED", [])]
    ev = ["no TORCH_LIBRARY* registrar in .symtab" if not inv.stripped
          else "stripped: no .symtab to read registrars from",
          "no schema string in .rodata, no PyInit_ export, no REGISTER_OP",
          f"links no framework: DT_NEEDED is {', '.join(needed) or 'empty'}",
          f"static initialisers: {inv.initializers}"]
    sources = inv.source_files or source_file_symbols(facts.image)
    if sources:
        ev.append(f"compiled from: {', '.join(sources[:5])}")
    # Only inside a Python install: a system directory (/usr/lib, thousands of libraries) is
    # no package whose libraries need each other, and walking it costs seconds per library.
    inside = any(part in ("site-packages", "dist-packages")
                 for part in os.path.abspath(facts.path).split(os.sep)) or \
        facts.installed_by is not None  # a distribution's RECORD lists it (pip --target)
    users = facts.dependents if inside else []
    if entries := facts.onnxruntime_entry_points:
        # onnxruntime's CUDA provider, sherpa-onnx's libonnxruntime.so (survey 9): the warning
        # put a working runtime's library under cause 1 with a TORCH_LIBRARY fix.
        yield OD116.finding(facts.path, "this library registers no torch or TensorFlow operator: "
                            f"it is ONNX Runtime's (exports {', '.join(entries)}), loaded "
                            "through ONNX Runtime's own API", [*ev, *[
                                f"exports {e}: ONNX Runtime's entry point" for e in entries]],
                            severity=Severity.INFO,
                            fix="nothing to fix for torch or TensorFlow; whether ONNX Runtime "
                            "loads it: `python -c \"import onnxruntime as ort; "
                            "print(ort.get_available_providers())\"` (a provider) or "
                            "SessionOptions.register_custom_ops_library(path) (a custom-op "
                            "library)")
        return
    plain = facts.installed_without_framework if inside and not users else ""
    if plain:
        # llvmlite's libllvmlite.so, soundfile's libsndfile (ctypes/cffi loads of a path the
        # package computes): a native library of a package that uses no framework (survey 10).
        yield OD116.finding(facts.path, "this library registers no operator and links no "
                            f"framework: a native library of {plain}, a package that requires "
                            "no framework", [*ev, f"installed by {plain}: its METADATA requires "
                                             "no torch, TensorFlow, MindSpore, OneFlow or Paddle"],
                            severity=Severity.INFO,
                            fix="nothing to fix; check the library that registers the ops")
        return
    if users:
        # A support library of its package (jaxlib's libjax_common.so, NEEDed by ten
        # extensions beside it): loaded as their dependency, it has nothing to register.
        names = ", ".join(os.path.basename(u) for u in users)
        yield OD116.finding(facts.path, "this library registers no operator and links no "
                            f"framework: a support library that {names} NEED",
                            [*ev, *[f"DT_NEEDED of {u}" for u in users]],
                            severity=Severity.INFO,
                            fix="nothing to fix; check the libraries that load it")
        return
    if inside and (py_ops := _ops_defined_in_python(facts)):
        # bitsandbytes' libbitsandbytes_cpu.so & co. (survey 21): the package defines every op
        # it registers in Python (torch.library) and calls its native library through ctypes;
        # nothing is expected from the library's own registration.
        name = facts.options.package or "its package"
        yield OD116.finding(facts.path, "this library registers no operator and links no "
                            f"framework: a native library of {name}, whose {len(py_ops)} "
                            "operator(s) are defined in its Python (torch.library)",
                            [*ev, f"{name} defines in Python, on import: "
                             f"{', '.join(py_ops[:5])}"
                             + (f" … {len(py_ops) - 5} more" if len(py_ops) > 5 else ""),
                             f"every op {name}'s Python registers a kernel or fake for is one "
                             "it defines there: none is expected from a compiled library"],
                            severity=Severity.INFO,
                            fix=f"nothing to fix; check the package: opdoctor check --package "
                            f"{name}")
        return
    yield OD116.finding(facts.path, "this library registers no operator and links no "
                        "framework: loading it cannot make an operator exist", ev)


def _ops_defined_in_python(facts: Facts) -> list[str]:
    """The ops the target's package defines in Python on import, when every op its Python
    registers anything for is one of them ([] otherwise: a kernel or fake for an op nobody
    defines in Python expects a compiled library to define it)."""
    regs = facts.compile_python
    defined = {r.op for r in regs if r.kind == "define" and r.op and r.imported}
    referred = {r.op for r in regs if r.op and r.kind != "library"}
    return sorted(defined) if defined and referred <= defined else []


# Code of the C runtime's start files alone (frame_dummy, register_tm_clones …): ~150 bytes.
_STUB_TEXT = 512


def _empty_beside_others(facts: Facts) -> str:
    """When the library defines nothing (no symbol of its own, only the start files' code) and
    its package's import loads other libraries too: some of their names ("" otherwise). An
    empty op library loaded alone is the registration compiled out of everything: an error."""
    from opdoctor.facts.elf.dynsym import DynSymbols
    text = facts.image.section(".text")
    if text is None or text.size > _STUB_TEXT or DynSymbols(facts.image).defines_anything():
        return ""
    chain = facts.chain
    if chain is None:
        return ""
    me = os.path.realpath(facts.path)
    loaded = chain.libraries
    if not loaded and chain.computed_loads:
        # fbgemm_gpu loads its libraries from a list no static reading evaluates: the ones on
        # disk that link a framework are what it loads (as `check --package` takes them).
        from opdoctor.facts.core import links_framework
        loaded = [f for f in chain.extensions_on_disk if links_framework(f)]
    others = [lib for lib in loaded if os.path.realpath(lib) != me]
    if not others:
        return ""
    # The largest first: the libraries that carry the package's ops, not its small helpers.
    others.sort(key=lambda lib: -os.path.getsize(lib) if os.path.isfile(lib) else 0)
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    return ", ".join(os.path.basename(lib) for lib in others[:3]) + more


def _static(facts: Facts) -> Iterator[Finding]:
    """The static reading of the binary (markers in the file)."""
    path = facts.path
    inv = inventory(facts)
    torch_lib = facts.torch_context
    if (torch_lib or inv.tf_library) and not inv.registers_anything \
            and not _tf_filesystem_plugin(facts):
        ev = [f"static initialisers: {inv.initializers} "
              f"({', '.join(inv.initializer_names) or 'unnamed'})",
              "no TORCH_LIBRARY* registrar in .symtab" if not inv.stripped
              else "stripped: no .symtab to read registrars from",
              "no schema string in .rodata, no PyInit_ export, no torch::RegisterOperators"]
        if inv.source_files:
            ev.append(f"compiled from: {', '.join(inv.source_files[:5])}")
        framework = "torch" if torch_lib else "TensorFlow"
        if inv.tf_library and not torch_lib:
            ev[1] = "no REGISTER_OP / REGISTER_KERNEL_BUILDER: neither OpDefBuilderWrapper nor "\
                "OpKernelRegistrar is referenced"
        users = facts.dependents
        if users:
            # A support library the package's other libraries NEED (tensorflow_text's
            # libpybinds_library_common.so): loaded as their dependency, it has nothing to
            # register itself.
            names = ", ".join(os.path.basename(u) for u in users)
            yield OD101.finding(path, f"the library links {framework} and registers no operator: "
                                f"a support library that {names} NEED", [
                                    *ev, *[f"DT_NEEDED of {u}" for u in users]],
                                severity=Severity.INFO,
                                fix="nothing to fix; check the libraries that register the ops")
        elif callers := facts.name_callers:
            # A plugin the package's own library dlopens and calls by name (dgl's
            # libtensoradapter_pytorch_<r>.so, whose CPURawAlloc libdgl.so looks up): it
            # links torch to convert tensors, not to register operators.
            names = "; ".join(f"{os.path.basename(u)} looks up {fn}" for u, fn in callers)
            yield OD101.finding(path, f"the library links {framework} and registers no operator: "
                                f"a plugin its package calls by name ({names})", [
                                    *ev, *[f"{u} stores the function name {fn!r} (dlsym)"
                                           for u, fn in callers]],
                                severity=Severity.INFO,
                                fix="nothing to fix; check the libraries that register the ops")
        elif siblings := _empty_beside_others(facts):
            # fbgemm-gpu-cpu's tbe_optimizers.so & co.: 14 KB of linker stubs, the CUDA-only
            # sources compiled out of the CPU wheel; the package loads them with the libraries
            # that register its ops. Loading one does nothing, which is harmless.
            yield OD101.finding(path, f"the library links {framework} and registers no operator: "
                                "it defines nothing at all (an empty variant of its package's "
                                f"build; the package loads it beside {siblings})", [
                                    *ev, "no function or object defined in .dynsym; "
                                    f".text is at most {_STUB_TEXT} bytes (linker stubs)"],
                                severity=Severity.INFO,
                                fix="nothing to fix; check the libraries that register the ops")
        else:
            yield OD101.finding(path, f"the library links {framework} but contains no "
                                "operator registration", ev)
    elif not torch_lib and not inv.tf_library and not inv.registers_anything \
            and facts.options.named and facts.image.header.e_shnum != 0 \
            and not facts.options.aot_function \
            and not (facts.oneflow and facts.oneflow.is_oneflow):
        # A MindSpore AOT library registers nothing; OneFlow's registrations are its own check.
        yield from _not_an_op_library(facts, inv)
    if inv.tf_op_registrars and not inv.tf_kernel_registrars:
        ops = ", ".join(inv.tf_ops) or "its ops"
        yield OD108.finding(ops, f"REGISTER_OP for {ops} but no REGISTER_KERNEL_BUILDER: the op "
                            "cannot run", ("references tensorflow::register_op::"
                                           "OpDefBuilderWrapper::operator()",
                                           "no reference to tensorflow::kernel_factory::"
                                           "OpKernelRegistrar::InitInternal",
                                           *[f"op spec in .rodata: {x}" for x in inv.tf_specs[:4]]))
    if torch_lib and inv.stripped and inv.registers_anything:
        yield OD107.finding(path, "stripped library: namespaces and dispatch keys cannot be "
                            "read statically, only schema strings",
                            ("no .symtab section",
                             f"schemas found in .rodata: {len(inv.schemas)}"))
    if torch_lib or not inv.tf_library:  # a TensorFlow library has no torch schema strings
        yield from _schema_findings(facts, inv)  # (its C++ signatures look like them)
    typos = near_misses(inv)
    paired = {n for pair in typos for n in pair}
    for impl_ns, def_ns in typos:
        def_ops = inv.namespaces[def_ns].ops
        op = def_ops[0] if def_ops else "<op>"
        keys = sorted(inv.namespaces[impl_ns].impl_keys)
        yield OD115.finding(
            f"{def_ns}::*", f"kernels ({', '.join(keys)}) are registered for namespace "
            f"'{impl_ns}', which nobody defines; did you mean '{def_ns}'? Every call of "
            f"{def_ns}::{op} fails with \"Could not run '{def_ns}::{op}' with arguments from "
            f"the '{keys[0]}' backend\"",
            (f"TORCH_LIBRARY({def_ns}) defines {', '.join(def_ops) or 'ops'} with no kernel",
             f"TORCH_LIBRARY_IMPL({impl_ns}, {', '.join(keys)}) registers kernels for a "
             f"namespace nobody defines (edit distance {edit_distance(impl_ns, def_ns)})"),
            fix=f"write TORCH_LIBRARY_IMPL({def_ns}, {keys[0]}, m) (one namespace constant for "
            "both blocks)")
    for ns in inv.namespaces.values():
        if ns.name in paired:
            continue
        if ns.name == "TORCH_EXTENSION_NAME":
            yield OD105.finding(f"{ns.name}::*", "ops are registered in the namespace "
                                "'TORCH_EXTENSION_NAME' (the macro was not defined when "
                                "this was compiled)",
                                ("registrar: TORCH_LIBRARY_init_TORCH_EXTENSION_NAME",
                                 f"ops: {', '.join(ns.ops) or '?'} → torch.ops."
                                 f"TORCH_EXTENSION_NAME.{ns.ops[0] if ns.ops else '<op>'}"))
        defines = ns.defines or ns.fragments
        if defines and not ns.impl_keys and not inv.def_with_function and ns.ops:
            yield OD103.finding(f"{ns.name}::*", f"namespace {ns.name} defines "
                                f"{', '.join(ns.ops)} but registers no kernel for it",
                                (f"TORCH_LIBRARY({ns.name}) present, no "
                                 f"TORCH_LIBRARY_IMPL({ns.name}, …) registrar",
                                 "no m.def(schema, function) (torch::Library::_def with "
                                 "CppFunction not referenced)"))
        if ns.impl_keys and not defines:
            yield OD104.finding(f"{ns.name}::*", f"kernels for namespace {ns.name} "
                                f"({', '.join(sorted(ns.impl_keys))}) but no "
                                f"TORCH_LIBRARY({ns.name}) here: the library that defines it "
                                "must be loaded first",
                                (f"TORCH_LIBRARY_IMPL_init_{ns.name}_<key> registrars only",))
    yield from _expected_ops(facts, inv)
    yield from _expected_symbols(facts)
    if facts.options.against_site_packages:
        yield from _same_namespace_elsewhere(facts)


def _same_namespace_elsewhere(facts: Facts) -> Iterator[Finding]:
    """Other installed shared libraries that define one of this library's namespaces."""
    from opdoctor.facts.core import SAME_SCHEMAS

    inv = facts.registration
    defined = {ns.name for ns in inv.namespaces.values() if ns.defines}
    ops = ", ".join(s.name for s in inv.schemas[:3]) + (" …" if len(inv.schemas) > 3 else "")
    for ns, where in facts.namespace_definers.items():
        for path, site in where:
            if ns in defined:
                yield OD128.finding(
                    f"{ns}::*", f"{path} also defines TORCH_LIBRARY({ns}): whichever loads "
                    "second fails",
                    (f"registrar TORCH_LIBRARY_init_{ns} in {os.path.realpath(path)}",
                     f"scanned: {site}"))
                continue
            # fragments or a stripped library: the same operator schemas (a second copy)
            what = f"{ns}'s operators" if ns != SAME_SCHEMAS else "this library's operators"
            yield OD128.finding(
                f"{ns}::*" if ns != SAME_SCHEMAS else path,
                f"{path} also defines {what} ({ops}): loaded beside this library, whichever "
                "registers them second aborts (\"registered … multiple times\")",
                (f"the same schema strings in {os.path.realpath(path)}", f"scanned: {site}"))


def _expected_ops(facts: Facts, inv: Inventory) -> Iterator[Finding]:
    if facts.expected_ops and _no_operator_library(facts, inv):
        return
    for exp in facts.expected_ops:
        if not exp.namespace:
            continue  # a TensorFlow op (no namespace): checks/tensorflow.py
        ns = inv.namespaces.get(exp.namespace)
        name = f"{exp.namespace}::{exp.op}"
        # Its schema without a registrar that can be read: a stripped library (fbgemm), or
        # one that constructs torch::Library objects whose registrar symbols are not there
        # (torchvision 0.28's _C.so lists torchvision::nms: "not defined by this library"
        # was false, survey 20's re-run; torch registers the op all the same)
        # …but a schema of that op name that a namespace the library does register holds is
        # that namespace's: `--expect-op my_ops::scale` on a library of myops::scale passed
        # (survey 24's F9: torch.ops.my_ops.scale raises AttributeError)
        homes = [f"{n}::{exp.op}" for n, x in inv.namespaces.items()
                 if n != exp.namespace and (x.defines or x.fragments) and exp.op in x.ops]
        schema = (ns is not None and exp.op in ns.ops) or (not homes and any(
            s.name in (exp.op, name) for s in inv.schemas))
        registrar = ns is not None and bool(ns.defines or ns.fragments)
        unread = not registrar and (inv.stripped or (schema and inv.constructs_library))
        if unread:
            if schema:
                cuda = [k for k in exp.keys if k.startswith("CUDA")]
                if _cuda_absent(facts, exp.keys):
                    # the kernels cannot be read, but a CUDA one needs a CUDA build
                    yield OD106.finding(name, f"{name} has no {'/'.join(cuda)} kernel: no "
                                        "library of the package is a CUDA build (none needs "
                                        "a CUDA library)", (f"expected: {', '.join(exp.keys)}",
                                                            "DT_NEEDED: no CUDA library"),
                                        fix="install (or build) the CUDA build of the package")
                continue  # schema present; keys cannot be verified statically (OD107)
            yield OD106.finding(name, f"{name} is not in this (stripped) library",
                                (f"schemas in .rodata: "
                                 f"{', '.join(s.name for s in inv.schemas) or 'none'}",))
            continue
        if ns is None or not (ns.defines or ns.fragments) or exp.op not in ns.ops:
            have = ", ".join(f"{n}::{o}" for n, x in inv.namespaces.items() for o in x.ops)
            yield OD106.finding(name, f"{name} is not defined by this library"
                                + (f" (it defines {', '.join(homes)})" if homes else ""),
                                (f"defined here: {have or 'nothing'}",))
            continue
        missing = [k for k in exp.keys if k not in ns.impl_keys]
        if inv.def_with_function:
            missing = []  # m.def(schema, fn) registers a CompositeImplicitAutograd kernel
        if missing:
            yield OD106.finding(name, f"{name} has no {'/'.join(missing)} kernel in this "
                                "library", (f"kernels registered for {exp.namespace}: "
                                            f"{', '.join(sorted(ns.impl_keys)) or 'none'}",
                                            f"expected: {', '.join(exp.keys)}"),
                                fix=f"build and register the {'/'.join(missing)} kernel "
                                f"(TORCH_LIBRARY_IMPL({exp.namespace}, {missing[0]}, m)); "
                                "for CUDA, build with nvcc")


def _expected_symbols(facts: Facts) -> Iterator[Finding]:
    table = facts.symbol_tables.of_image(facts.image)
    for name in facts.options.expect_symbols:
        if table.lookup(name):
            continue
        local = _symtab_entry(facts, name)
        if local is not None:
            binding, visibility = local
            vis = {STV_HIDDEN: "HIDDEN", 3: "PROTECTED"}.get(visibility, "DEFAULT")
            bind = "LOCAL" if binding == STB_LOCAL else "GLOBAL"
            yield OD112.finding(name, f"{name} is defined but not exported ({bind} {vis})",
                                (f"readelf -s: {bind} {vis} {name}", "not in .dynsym"))
            continue
        mangled = table.names_with_prefix(f"_Z{len(name)}{name}", limit=3)
        if mangled:
            yield OD111.finding(name, f"{name} is exported only as C++ "
                                f"{'/'.join(mangled)} (missing extern \"C\")",
                                tuple(f"nm -D: T {m}" for m in mangled))
            continue
        yield OD110.finding(name, f"{name} is not defined in this library",
                            ("not in .dynsym", "not in .symtab", "no mangled C++ variant"))


def _symtab_entry(facts: Facts, name: str) -> tuple[int, int] | None:
    """(binding, visibility) of ``name`` in ``.symtab`` if defined there."""
    img = facts.image
    sym = img.section(".symtab")
    if sym is None or sym.link >= len(img.sections):
        return None
    strtab = img.sections[sym.link]
    # Find the name's offset in .strtab by a byte search, then the entry that points at it.
    pos = img.data.buf.find(b"\0" + name.encode() + b"\0", strtab.offset,
                            strtab.offset + strtab.size)
    if pos < 0:
        return None
    want = pos + 1 - strtab.offset
    for entry in img.symtab():
        if entry.st_name == want and entry.shndx != 0:
            return entry.binding, entry.other & 3
    return None


def section(facts: Facts) -> dict[str, Any]:
    """The inventory for the report: namespace → ops → dispatch keys."""
    inv = inventory(facts)
    return {
        "stripped": inv.stripped,
        # "stable": true marks a stable-ABI namespace (absent for classic ones).
        "namespaces": {ns.name: {"defines": ns.defines, "fragments": ns.fragments,
                                 "ops": ns.ops, "kernels": sorted(ns.impl_keys),
                                 **({"stable": True} if ns.stable else {})}
                       for ns in inv.namespaces.values()},
        "schemas": [{"schema": s.text, "partial": s.partial} for s in inv.schemas],
        "pyinit": inv.pyinit,
        "stable_abi": inv.stable_abi,
        "stable_from_rodata": inv.stable_from_rodata,
        "legacy_register_operators": inv.legacy_register_operators,
        "initializers": inv.initializers,
        "initializer_names": inv.initializer_names,
        "source_files": inv.source_files,
        "tensorflow": {"library": inv.tf_library, "ops": inv.tf_ops, "specs": inv.tf_specs,
                       "op_registrations": inv.tf_op_registrars,
                       "kernel_registrations": inv.tf_kernel_registrars},
    }


def _applies(facts: Facts) -> str:
    if facts.framework_library:
        return f"part of the {facts.framework_library} install, not an operator extension"
    if not facts.image.has_section_table:
        # sstrip-ed: no .symtab, no .rodata boundaries: nothing to read, so nothing to claim.
        return ("no section header table: registrars and schema strings cannot be read "
                "statically (the load probe observes the registry)")
    return ""


CHECK = Check(
    name="registration",
    summary="the binary contains registration code for the expected ops, schemas parse, "
    "kernels exist, entry points are exported",
    causes=(Cause.REGISTRATION,),
    codes=CODES,
    run=run,
    section=section,
    applies=_applies,
)
