"""C++ ABI against torch (cause 3): _GLIBCXX_USE_CXX11_ABI and pybind11 internals.

* The extension's C++11 ABI is read from its torch-facing undefined symbols: a std::string
  parameter mangles as ``NSt7__cxx1112basic_string…`` under ABI=1 and as ``Ss`` under ABI=0.
  torch's own is read from the names libc10.so exports (a byte search of its ``.dynstr``).
* pybind11 keeps its type registry under a key such as
  ``__pybind11_internals_v11_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1__`` in ``.rodata``;
  two modules with different keys do not see each other's types (casting a torch.Tensor fails).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import Check, installed_release_fix
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.image import ElfImage
from opdoctor.model import Cause, Finding, Severity

OD303 = CodeDoc(
    "OD303", "C++11 ABI differs from torch's", Severity.ERROR,
    what="The extension was compiled with the same _GLIBCXX_USE_CXX11_ABI as the installed "
    "torch (torch._C._GLIBCXX_USE_CXX11_ABI).",
    why="Under the other ABI every function taking std::string (torch::Library's constructor, "
    "TORCH_CHECK's failure path …) has another mangled name: the load fails with an undefined "
    "symbol that looks like a version mismatch but is a compiler flag.",
    example="undefined symbol: "
    "_ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj",
    fix="Compile with the flag torch uses: -D_GLIBCXX_USE_CXX11_ABI=<torch's value> "
    "(torch.utils.cpp_extension adds it; in CMake take it from TORCH_CXX_FLAGS). For a "
    "library of an installed wheel from an index (no source tree to rebuild), install the "
    "package's release built for the installed torch — an old-ABI wheel was built for torch "
    "< 2.7 — or let pip rebuild it (pip install --no-build-isolation --no-binary PKG PKG, "
    "where the index has its source distribution; else build it from its source repository).",
    references=("https://gcc.gnu.org/onlinedocs/libstdc++/manual/using_dual_abi.html",),
)
OD306 = CodeDoc(
    "OD306", "pybind11 internals differ from torch's", Severity.WARNING,
    what="The pybind11 internals key compiled into the extension equals torch's.",
    why="pybind11 modules share registered types only through an internals object keyed by "
    "version, compiler and ABI. With another key the extension cannot take or return the types "
    "torch binds with pybind11 itself (torch._C.DispatchKey, FunctionSchema, Graph, "
    "ScriptModule, c10d's ProcessGroup …): 'TypeError: incompatible function arguments' / "
    "'Unable to convert function return value'. torch.Tensor, dtypes and devices still "
    "convert: torch's own type casters check them directly, without the internals.",
    example="extension: __pybind11_internals_v12_…__, torch: __pybind11_internals_v11_…__; "
    "ext.f(torch._C.DispatchKey.CPU) → TypeError: incompatible function arguments",
    fix="Build against the pybind11 that ships in torch's include directory (torch.utils."
    "cpp_extension does), not a separately installed pybind11 release.",
    references=("https://pybind11.readthedocs.io/en/stable/advanced/misc.html",),
)

CODES = (OD303, OD306)

_PYBIND_KEY = re.compile(rb"__pybind11_internals_v[0-9A-Za-z_]*?__")


def _search_rodata(img: ElfImage, pattern: re.Pattern[bytes]) -> bytes | None:
    """First match of ``pattern`` in ``.rodata``, searched in place in the mapped file."""
    sec = img.section(".rodata")
    if sec is None or sec.sh_type == 8:  # SHT_NOBITS
        return None
    m = pattern.search(img.data.buf, sec.offset, sec.offset + sec.size)
    return bytes(m.group(0)) if m else None


def run(facts: Facts) -> Iterator[Finding]:
    """Compare the extension's C++ ABI facts with the installed torch's."""
    if not facts.torch_context:
        return
    mm = facts.abi_mismatch
    if mm is not None:
        yield OD303.finding(
            facts.path, f"built with _GLIBCXX_USE_CXX11_ABI={mm.extension}, torch uses "
            f"{mm.torch}", mm.evidence, fix=_abi_fix(facts, mm.extension, mm.torch))
    key = _search_rodata(facts.image, _PYBIND_KEY)
    py = next((lib for lib in facts.process.preloaded
               if os.path.basename(lib.path) == "libtorch_python.so"), None)
    if key and py and py.image:
        theirs = _search_rodata(py.image, _PYBIND_KEY)
        if theirs and theirs != key:
            # torch.Tensor is not at stake (torch's type_caster<at::Tensor> checks THPVariable
            # directly): only classes torch registers with pybind11 cross the key.
            yield OD306.finding(facts.path, "the extension's pybind11 internals key differs "
                                "from torch's: types torch binds with pybind11 "
                                "(torch._C.DispatchKey, Graph, ScriptModule, ProcessGroup …) "
                                "will not convert in its functions; torch.Tensor still does",
                                (f"extension: {key.decode()}",
                                 f"libtorch_python.so: {theirs.decode()}"))


def _abi_fix(facts: Facts, extension: int, torch: int) -> str:
    """Rebuild with torch's ABI flag — or, for a library of an installed distribution, its
    release built for this torch (an old-ABI wheel is a build for torch < 2.7, whose pip
    wheels used the old ABI): see :func:`installed_release_fix`."""
    interp = facts.interpreter
    version = interp.torch.version if interp and interp.torch else ""
    era = (" (an old-ABI wheel was built for torch < 2.7, whose pip wheels used "
           "_GLIBCXX_USE_CXX11_ABI=0)") if extension == 0 and torch == 1 else ""
    return installed_release_fix(
        facts, version or "this torch", why=era,
        flags=f": torch.utils.cpp_extension sets -D_GLIBCXX_USE_CXX11_ABI={torch}") or (
        f"rebuild with -D_GLIBCXX_USE_CXX11_ABI={torch} "
        "(torch.utils.cpp_extension sets it for you)")


CHECK = Check(
    name="cxx-abi",
    summary="C++11 ABI and pybind11 internals match the installed torch",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
)
