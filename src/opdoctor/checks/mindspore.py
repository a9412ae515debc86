"""MindSpore AOT custom operators (``ops.Custom("lib.so:Func", …, func_type="aot")``): is
``Func`` exported under its C name, with the signature MindSpore calls, is ``FuncInit`` visible
when it is defined, and which undefined functions only fail at the first launch (MindSpore
``dlopen``s with ``RTLD_LAZY``).

Facts come from :mod:`opdoctor.facts.mindspore`; the target notation ``lib.so:Func`` is split in
:mod:`opdoctor.targets` (``CheckOptions.aot_function``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.demangle import demangle
from opdoctor.facts.mindspore import (
    AOT_SIGNATURE,
    INIT_SIGNATURE,
    AotFunction,
    new_abi_mindspore_symbols,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_DOCS = "https://www.mindspore.cn/tutorials/en/master/custom_program/operation/op_custom_aot.html"
_FETCH = ("For 'Custom' on CPU, error occurs when fetching function '{name}'. Error info: "
          "{lib}: undefined symbol: {name}")

OD160 = CodeDoc(
    "OD160", "MindSpore AOT function exported only as a C++ name", Severity.ERROR,
    what="The function named in ops.Custom(\"lib.so:Func\", …, func_type=\"aot\") is exported "
    "under that plain name (extern \"C\"), so MindSpore's dlsym finds it.",
    why="Without extern \"C\" the compiler exports _Z9CustomAddiPPvPiPPlPPKcS_S_; MindSpore "
    "loads the library, then fails at the first launch: \"For 'Custom' on CPU, error occurs when "
    "fetching function 'CustomAdd'. Error info: …: undefined symbol: CustomAdd\".",
    example="int CustomAdd(int nparam, void **params, …) in a .cc file without extern \"C\"",
    fix="Declare it extern \"C\": extern \"C\" int CustomAdd(int nparam, void **params, int "
    "*ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra);",
    references=(_DOCS, "https://isocpp.org/wiki/faq/mixing-c-and-cpp"),
)
OD161 = CodeDoc(
    "OD161", "MindSpore AOT function not in the library", Severity.ERROR,
    what="The library defines and exports the function named after the colon in "
    "ops.Custom(\"lib.so:Func\", …).",
    why="MindSpore dlsym()s exactly that name at the first launch; a typo in the Python string "
    "or in the C source fails with \"error occurs when fetching function 'Func'. Error info: "
    "lib.so: undefined symbol: Func\".",
    example="ops.Custom(\"aot_add.so:CustomAd\", …) for a library exporting CustomAdd",
    fix="Use the exported name in ops.Custom (nm -D --defined-only lib.so lists them), or "
    "define the function in the library.",
    references=(_DOCS,),
)
OD162 = CodeDoc(
    "OD162", "MindSpore AOT function has another signature", Severity.ERROR,
    what="The function's parameter list (read from its mangled C++ name) is the one MindSpore "
    "calls: int f(int, void **, int *, int64_t **, const char **, void *, void *).",
    why="MindSpore calls the function with seven arguments (nparam, params, ndims, shapes, "
    "dtypes, stream, extra); a function written as f(float *a, float *b, float *out, long n) "
    "is not found (it is not extern \"C\"), and once made extern \"C\" it is found and called "
    "with the wrong arguments: garbage or a crash.",
    example="int CustomAdd(float *a, float *b, float *out, long n)",
    fix="Write the AOT entry point with MindSpore's signature and read the tensors from it: "
    "extern \"C\" int CustomAdd(int nparam, void **params, int *ndims, int64_t **shapes, const "
    "char **dtypes, void *stream, void *extra) { float *a = (float *)params[0]; … }",
    references=(_DOCS,),
)
OD163 = CodeDoc(
    "OD163", "MindSpore AOT Init function is not visible: silently skipped", Severity.WARNING,
    what="When the library defines FuncInit (the optional initialiser MindSpore calls when it "
    "builds the kernel), it is exported under that plain name.",
    why="MindSpore dlsym()s FuncInit and, when it is NULL, goes on without it: an Init written "
    "without extern \"C\" never runs, so the attributes or workspace it sets up are missing "
    "and the op computes with defaults — no error at all.",
    example="int CustomAddInit(int *ndims, int64_t **shapes, const char **dtypes, void *extra) "
    "without extern \"C\"",
    fix="Declare it extern \"C\": extern \"C\" int CustomAddInit(int *ndims, int64_t **shapes, "
    "const char **dtypes, void *extra);",
    references=(_DOCS,),
)
OD164 = CodeDoc(
    "OD164", "MindSpore AOT op will kill the process at its first launch", Severity.ERROR,
    what="Every function the AOT library calls is defined by a library in the process.",
    why="MindSpore dlopen()s AOT libraries with RTLD_LAZY: a function referenced only through "
    "the PLT is looked up when it is first called, so the load succeeds and the first launch "
    "of the op ends the whole process: \"python: symbol lookup error: lib.so: undefined "
    "symbol: helper\" (exit status 127), no Python exception, no traceback.",
    example="CustomAdd calls aot_helper_log(), which no linked library defines",
    fix="Link the library that defines the function (-lfoo, with an RPATH) or compile its "
    "source into the AOT library; link with -Wl,--no-undefined to make the build fail instead.",
    references=(_DOCS, "https://man7.org/linux/man-pages/man3/dlopen.3.html"),
)

OD165 = CodeDoc(
    "OD165", "MindSpore AOT op failed when run", Severity.ERROR,
    what="With --smoke, the probe runs ops.Custom(\"lib.so:Func\", …, func_type=\"aot\") once "
    "through MindSpore on two 2x2 float32 CPU tensors, and it returns a tensor.",
    why="A function that is found can still fail: a non-zero return value (\"Return value from "
    "CPU AOT kernel(…)'s function(…) is 1\"), a C++ exception, or a kernel MindSpore cannot "
    "build. The exception is what the user's script will see.",
    example="CustomAdd returns 1 when nparam != 3 and is called with another number of tensors",
    fix="Read MindSpore's message (and its [ERROR] log lines on stderr); run the op with the "
    "real inputs' count, shapes and dtypes.",
    references=(_DOCS,),
)

OD350 = CodeDoc(
    "OD350", "built with the new C++ ABI; MindSpore uses the old one", Severity.ERROR,
    what="A library that calls MindSpore's C++ API (a CustomOpBuilder module, anything linking "
    "libmindspore_*) is compiled with -D_GLIBCXX_USE_CXX11_ABI=0, as MindSpore is.",
    why="MindSpore's PyPI builds use the pre-C++11 std::string (its libmindspore_core.so "
    "exports no std::__cxx11 name), unlike torch and TensorFlow; a module built with the "
    "compiler's default ABI needs mindspore::…(std::__cxx11::basic_string…) symbols that do "
    "not exist: \"ImportError: …: undefined symbol: _ZN9mindspore10InitializeERKNSt7__cxx11…\".",
    example="g++ -shared -fPIC ms_ext.cc -lmindspore_core (no -D_GLIBCXX_USE_CXX11_ABI=0)",
    fix="Compile with -D_GLIBCXX_USE_CXX11_ABI=0 (ops.CustomOpBuilder adds it for you; a "
    "hand-written setup.py or CMake build must add it to every translation unit).",
    references=(_DOCS,),
)

CODES = (OD160, OD161, OD162, OD163, OD164, OD165, OD350)


def _lib(facts: Facts) -> str:
    return facts.path


def _function(facts: Facts, aot: AotFunction, lib: str = "",
              where: str = "") -> Iterator[Finding]:
    """Is ``Func`` what MindSpore's dlsym and call expect (``lib``: another library than the
    target, named by ``where``, an ops.Custom call in the package)."""
    name = aot.name
    lib = lib or _lib(facts)
    sig = AOT_SIGNATURE.format(name=name)
    fetch = _FETCH.format(name=name, lib=lib)
    for f in _function_findings(aot, name, lib, sig, fetch):
        yield dataclasses.replace(f, evidence=(f"called at {where}", *f.evidence)) if where \
            else f


def _function_findings(aot: AotFunction, name: str, lib: str, sig: str,
                       fetch: str) -> Iterator[Finding]:
    if aot.exported:
        return
    good = [c for c in aot.cxx if c.matches]
    if good:
        c = good[0]
        yield OD160.finding(
            name, f"{name} is exported only as the C++ name {c.mangled} (missing extern \"C\"): "
            f"MindSpore's dlsym(\"{name}\") fails at the first launch",
            (f"nm -D: T {c.mangled}", f"  = {c.demangled}",
             "the signature is MindSpore's; only the name is mangled",
             f"MindSpore 2.10 raises: RuntimeError: {fetch}"),
            fix=f"declare it extern \"C\": extern \"C\" {sig};")
        return
    if aot.cxx:
        c = aot.cxx[0]
        yield OD162.finding(
            name, f"{name} is a C++ function with another signature: {c.demangled}; MindSpore "
            f"calls {sig}",
            (f"nm -D: T {c.mangled}", f"  = {c.demangled}",
             f"parameters: ({', '.join(c.params)}) — MindSpore passes (int, void**, int*, "
             "int64_t**, const char**, void*, void*)",
             "not extern \"C\" either: MindSpore 2.10 raises: RuntimeError: " + fetch),
            fix=f"write the entry point as extern \"C\" {sig} and read the tensors from "
            "params[i] (inputs first, then outputs)")
        return
    near = ", ".join(aot.closest)
    yield OD161.finding(
        name, f"{name} is not in this library" + (f"; did you mean {near}?" if near else ""),
        ("not in .dynsym, no C++ function of that name",
         f"exported C functions: {aot.exported_functions}"
         + (f", closest: {near}" if near else ""),
         f"MindSpore 2.10 raises: RuntimeError: {fetch}"),
        fix=(f"name the exported function in ops.Custom: \"{lib}:{aot.closest[0]}\""
             if aot.closest else f"define and export {sig} in this library (extern \"C\")"))


def _init(aot: AotFunction) -> Iterator[Finding]:
    """``FuncInit`` defined but invisible to dlsym: MindSpore silently runs without it."""
    if aot.init_exported or not aot.init_cxx:
        return
    c = aot.init_cxx[0]
    yield OD163.finding(
        aot.name + "Init", f"{aot.name}Init is exported only as the C++ name {c.mangled}: "
        "MindSpore's dlsym finds no Init and runs the op without it (no error)",
        (f"nm -D: T {c.mangled}", f"  = {c.demangled}",
         f"MindSpore looks up \"{aot.name}Init\" and skips the call when it is NULL"),
        fix=f"declare it extern \"C\": extern \"C\" {INIT_SIGNATURE.format(name=aot.name)};")


def _lazy(facts: Facts, aot: AotFunction) -> Iterator[Finding]:
    """Undefined functions bound only when called: RTLD_LAZY lets the load succeed."""
    if not aot.lazy_undefined or facts.process.tree.missing:
        return  # a missing dependency fails the dlopen first (cause 2 says so)
    first = aot.lazy_undefined[0]
    yield OD164.finding(
        facts.path, f"{len(aot.lazy_undefined)} function(s) no library defines are called "
        f"through the PLT: MindSpore's RTLD_LAZY dlopen succeeds and the first launch kills "
        f"the process with \"symbol lookup error: … undefined symbol: {first}\" (exit 127)",
        (*[f"undefined (PLT, bound at first call): {demangle(n)}"
           for n in aot.lazy_undefined[:4]],
         "not linked with -z now: RTLD_LAZY defers these lookups",
         "MindSpore 2.10: custom_aot_cpu_kernel.cc dlopen(path, RTLD_LAZY | RTLD_LOCAL)"))


def _probe_lines(facts: Facts) -> list[str]:
    """What the probe saw of the function (dlsym after MindSpore's dlopen), as evidence."""
    res = facts.probe_result()
    ms = res.mindspore if res is not None else None
    if not ms:
        return []
    out = [f"probe: dlopen(RTLD_LAZY | RTLD_LOCAL) then dlsym(\"{ms.get('function')}\") "
           + ("found it" if ms.get("found") else "returned NULL")]
    if ms.get("mindspore"):
        out.append(f"probe: in a process that imported mindspore {ms['mindspore']}")
    return out


def _launched(facts: Facts, aot: AotFunction) -> Iterator[Finding]:
    """--smoke: what running the op through MindSpore did (the probe's ground truth)."""
    res = facts.probe_result()
    if res is None:
        return
    from opdoctor.facts.probe.outcome import ProbeState  # loaded by the probe that ran

    lines = [x for x in res.stderr.strip().splitlines() if x.strip()]
    if res.stage == "smoke" and not res.finished and res.state not in (
            ProbeState.TIMED_OUT, ProbeState.MEMORY_KILLED, ProbeState.PROBE_ERROR):
        lookup = next((x for x in lines if "symbol lookup error" in x), "")
        how = (f"was killed by {res.signal_name}" if res.signal_name
               else f"exited with status {res.returncode}")
        yield OD164.finding(
            facts.path, f"running the op through MindSpore ended the process: it {how}"
            + (f" — {lookup.split(': ', 1)[-1]}" if lookup else ""),
            (f"probe (--smoke): ops.Custom(\"{facts.path}:{aot.name}\", …) {how}",
             *[f"stderr: {x}" for x in lines[-3:]],
             *[f"undefined (PLT, bound at first call): {demangle(n)}"
               for n in aot.lazy_undefined[:3]]))
        return
    ms = res.mindspore or {}
    smoke = ms.get("smoke") or {}
    if smoke.get("ok") is False and ms.get("found"):  # not found: OD160-OD162 say why
        e = smoke.get("error") or {}
        first = next((x for x in str(e.get("message", "")).splitlines() if x.strip()), "")
        logged = [x for x in lines if "[ERROR]" in x][-2:]
        yield OD165.finding(
            facts.path, f"ops.Custom(\"…:{aot.name}\") raised {e.get('type', 'an exception')}"
            + (f": {first[:200]}" if first else " with no message of its own"),
            (*[f"MindSpore log: {x[:300]}" for x in logged],
             f"probe (--smoke): two 2x2 float32 CPU tensors, mindspore {ms.get('mindspore')}"))


def _abi(facts: Facts) -> Iterator[Finding]:
    """MindSpore API symbols the library needs in the new C++ ABI (MindSpore has the old)."""
    new = new_abi_mindspore_symbols([s.name for s in
                                     facts.symbol_tables.of_image(facts.image).undefined()])
    if not new:
        return
    unresolved = {s.name for s in facts.binding.unresolved}
    missing = [n for n in new if n in unresolved]
    yield OD350.finding(
        facts.path, f"built with _GLIBCXX_USE_CXX11_ABI=1: {len(new)} MindSpore function(s) "
        "taking std::string are needed in the std::__cxx11 form, which MindSpore (old C++ ABI) "
        "does not export",
        (*[f"needs: {demangle(n)}" for n in new[:3]],
         *([f"not defined by any loaded library: {missing[0]}"] if missing else []),
         "MindSpore's libraries export std::string names only in the pre-C++11 form "
         "(libmindspore_core.so: no St7__cxx11 name)"),
        fix="rebuild with -D_GLIBCXX_USE_CXX11_ABI=0")


def run(facts: Facts) -> Iterator[Finding]:
    """Findings for the AOT function named by ``lib.so:Func``: static, then the probe's."""
    if facts.mindspore_library:
        yield from _abi(facts)
    for use, found in facts.mindspore_aot_uses:
        if found is not None:
            yield from _function(facts, found, use.resolved, f"{use.file}:{use.line}")
            yield from _init(found)
    aot = facts.mindspore_aot
    if aot is None:
        return
    seen = _probe_lines(facts)
    for f in _function(facts, aot):
        yield dataclasses.replace(f, evidence=(*f.evidence, *seen)) if seen else f
    yield from _init(aot)
    launched = list(_launched(facts, aot))
    if not any(f.code == "OD164" for f in launched):
        yield from _lazy(facts, aot)
    yield from launched


def section(facts: Facts) -> dict[str, Any]:
    """The AOT function as MindSpore will see it (and, for a package, its ops.Custom calls)."""
    uses = [{"file": u.file, "line": u.line, "library": u.library, "function": u.function,
             "resolved": u.resolved or None, "exported": a.exported if a else None}
            for u, a in facts.mindspore_aot_uses]
    aot = facts.mindspore_aot
    if aot is None:
        return {"aot_calls": uses} if uses else {}
    return {"function": aot.name, "exported": aot.exported, "aot_calls": uses,
            "cxx": [{"mangled": c.mangled, "signature": c.demangled, "matches": c.matches}
                    for c in aot.cxx],
            "init": "exported" if aot.init_exported else (
                "C++ name only" if aot.init_cxx else "absent (optional)"),
            "closest": list(aot.closest), "lazy_undefined": list(aot.lazy_undefined),
            "bind_now": aot.bind_now,
            "probe": (facts.probe_result().mindspore  # type: ignore[union-attr]
                      if facts.probe_result() is not None else None)}


def _applies(facts: Facts) -> str:
    if facts.options.aot_function or facts.mindspore_library or facts.mindspore_aot_uses:
        return ""
    return "not a MindSpore library, and no AOT function named (use lib.so:FuncName)"


CHECK = Check(
    name="mindspore",
    summary="MindSpore AOT custom operators (lib.so:Func): exported C name, signature, "
    "FuncInit, undefined functions that only fail at the first launch; MindSpore's old C++ ABI",
    causes=(Cause.REGISTRATION, Cause.VERSION),
    codes=CODES,
    run=run,
    needs_elf=False,  # a package directory has ops.Custom calls to check too
    section=section,
    applies=_applies,
)
