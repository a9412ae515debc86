"""OneFlow user-op libraries (``REGISTER_USER_OP`` / ``REGISTER_USER_KERNEL``), statically: the
registration inventory, an op registered without a kernel, OneFlow's old C++ ABI, and a library
not linked to OneFlow's. OneFlow has no wheel for Python 3.11, so nothing here loads OneFlow.

Facts come from :mod:`opdoctor.facts.oneflow`.
"""

from __future__ import annotations

from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.demangle import demangle
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_DOCS = "https://docs.oneflow.org/en/master/"
_FLAGS = ("python -c 'import oneflow.sysconfig as s; print(\" \".join(s.get_compile_flags() + "
          "s.get_link_flags()))'")

OD170 = CodeDoc(
    "OD170", "OneFlow op registered without a kernel", Severity.WARNING,
    what="A library that registers OneFlow user ops (REGISTER_USER_OP) also registers kernels "
    "for them (REGISTER_USER_KERNEL), or is meant to be loaded beside the library that does.",
    why="The op exists, so building the graph works, but running it fails: \"Cannot find the "
    "kernel matching Current OperatorConf\".",
    example="REGISTER_USER_OP(\"my_relu\") without REGISTER_USER_KERNEL(\"my_relu\")",
    fix="Add REGISTER_USER_KERNEL(\"my_relu\").SetCreateFn<MyReluKernel>() (with its "
    "SetIsMatchedHob for the device and dtype), or load the library that has the kernels.",
    references=(_DOCS,),
)
OD351 = CodeDoc(
    "OD351", "built with the new C++ ABI; OneFlow uses the old one", Severity.ERROR,
    what="A library using OneFlow's C++ API is compiled with -D_GLIBCXX_USE_CXX11_ABI=0, as "
    "oneflow.sysconfig.get_compile_flags() says.",
    why="OneFlow's functions that take std::string (CheckAndGetOpRegistry(op_type_name), "
    "Input(name) …) have other mangled names under the C++11 ABI: loading fails with "
    "\"LoadLibrary ERROR! Cannot load library file: … undefined symbol: "
    "_ZN7oneflow7user_op17UserOpRegistryMgr21CheckAndGetOpRegistryERKNSt7__cxx11…\".",
    example="g++ -shared -fPIC relu_op.cc -loneflow (the compiler's default ABI is 1)",
    fix=f"compile with OneFlow's flags: $({_FLAGS}) (they include -D_GLIBCXX_USE_CXX11_ABI=0)",
    references=(_DOCS,),
)
OD352 = CodeDoc(
    "OD352", "OneFlow op library not linked to OneFlow's library", Severity.WARNING,
    what="A library that derives from oneflow::user_op::OpKernel or calls OneFlow's registry "
    "links liboneflow (oneflow.sysconfig.get_link_flags()).",
    why="Its OneFlow symbols (typeinfo for oneflow::user_op::OpKernel, UserOpRegistryMgr::Get) "
    "are then undefined with no library named to define them: it loads only into a process "
    "that already made OneFlow's symbols global; anywhere else \"undefined symbol: "
    "_ZTIN7oneflow7user_op8OpKernelE\".",
    example="g++ -shared -fPIC relu_op.cc $(compile flags) — without the link flags",
    fix=f"link with OneFlow's link flags: $({_FLAGS})",
    references=(_DOCS,),
)

CODES = (OD170, OD351, OD352)


def run(facts: Facts) -> Iterator[Finding]:
    """Static findings for a OneFlow user-op library."""
    inv = facts.oneflow
    if inv is None:
        return
    if inv.op_registrations and not inv.kernel_registrations:
        names = ", ".join(inv.names) or "its ops"
        yield OD170.finding(
            names, f"REGISTER_USER_OP for {names} but no REGISTER_USER_KERNEL: running the op "
            "fails with \"Cannot find the kernel matching Current OperatorConf\"",
            ("imports UserOpRegistryMgr::CheckAndGetOpRegistry (REGISTER_USER_OP)",
             "no reference to UserOpRegistryMgr::CheckAndGetOpKernelRegistry "
             "(REGISTER_USER_KERNEL)"))
    if inv.new_abi:
        yield OD351.finding(
            facts.path, f"built with _GLIBCXX_USE_CXX11_ABI=1: {len(inv.new_abi)} OneFlow "
            "function(s) taking std::string are needed in the std::__cxx11 form; OneFlow's "
            "builds use the old ABI",
            (*[f"needs: {demangle(n)}" for n in inv.new_abi[:3]],
             "oneflow.sysconfig.get_compile_flags() includes -D_GLIBCXX_USE_CXX11_ABI=0"),
            fix="rebuild with -D_GLIBCXX_USE_CXX11_ABI=0 (OneFlow's compile flags)")
    if not inv.linked and (inv.opkernel_typeinfo or inv.is_oneflow):
        needed = [str(n) for n in facts.image.tags.get("DT_NEEDED", [])]
        yield OD352.finding(
            facts.path, "uses OneFlow's C++ API but does not link liboneflow: it loads only "
            "where OneFlow's symbols are already global",
            (f"DT_NEEDED: {', '.join(needed) or 'none'}",
             *(["undefined: typeinfo for oneflow::user_op::OpKernel  [_ZTIN7oneflow7user_op8"
                "OpKernelE]"] if inv.opkernel_typeinfo else [])))


def section(facts: Facts) -> dict[str, Any]:
    """The OneFlow registration inventory."""
    inv = facts.oneflow
    if inv is None:
        return {}
    return {"op_registrations": inv.op_registrations,
            "kernel_registrations": inv.kernel_registrations, "op_names": list(inv.names),
            "cxx11_abi": 1 if inv.new_abi else 0, "linked": inv.linked,
            "runtime": "OneFlow is not installed for Python 3.11 (oneflow 0.9.0 supports <= 3.10):"
            " nothing was loaded with OneFlow"}


def _applies(facts: Facts) -> str:
    return "" if facts.oneflow is not None else "not a OneFlow library"


CHECK = Check(
    name="oneflow",
    summary="OneFlow user-op libraries, statically: REGISTER_USER_OP/KERNEL inventory, ops "
    "without kernels, OneFlow's old C++ ABI, link to liboneflow",
    causes=(Cause.REGISTRATION, Cause.VERSION),
    codes=CODES,
    run=run,
    section=section,
    applies=_applies,
)
