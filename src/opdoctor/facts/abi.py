"""The C++11 ABI (``_GLIBCXX_USE_CXX11_ABI``) of an extension and of the installed torch.

* The extension's is read from its torch-facing undefined symbols: a std::string parameter
  mangles as ``NSt7__cxx1112basic_string…`` under ABI=1 and as ``Ss`` under ABI=0.
* torch's own is read from the names libc10.so exports (a byte search of its ``.dynstr``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from opdoctor.facts.elf.demangle import demangle_all
from opdoctor.facts.elf.dynsym import DynSymbols
from opdoctor.facts.loader.process import Process
from opdoctor.facts.loader.symbols import SymbolTables


@dataclass(frozen=True)
class AbiMismatch:
    """Extension vs torch C++11 ABI, with the symbols that show the extension's."""

    extension: int
    torch: int
    evidence: tuple[str, ...]


def extension_abi(table: DynSymbols) -> tuple[int | None, list[str]]:
    """(ABI, example symbols) from the library's torch-facing undefined std::string symbols."""
    undef = [s.name for s in table.undefined() if s.name.startswith("_Z")]
    names = demangle_all(undef)
    new, old = [], []
    for _mangled, d in names.items():
        if not re.match(r"^(?:c10|at|torch|caffe2)::", d):
            continue
        if "std::__cxx11::" in d:
            new.append(d)
        elif "std::string" in d or "std::basic_string<" in d:
            old.append(d)
    if old and not new:
        return 0, old
    if new and not old:
        return 1, new
    return None, []


def torch_abi(process: Process, tables: SymbolTables) -> tuple[int | None, str]:
    """(ABI, evidence) of the torch loaded in ``process``, from libc10.so's exported names."""
    for lib in process.preloaded:
        if os.path.basename(lib.path).startswith("libc10.so"):
            table = tables.of(lib)
            if table is None:
                break
            has_new = table.dynstr_contains(b"St7__cxx11")
            return (1 if has_new else 0), f"{lib.path} exports " + (
                "std::__cxx11 names" if has_new else "no std::__cxx11 name")
    return None, ""


def abi_mismatch(table: DynSymbols, process: Process, tables: SymbolTables
                 ) -> AbiMismatch | None:
    """The mismatch, when both ABIs are known and differ."""
    ext, ev = extension_abi(table)
    tor, tev = torch_abi(process, tables)
    if ext is None or tor is None or ext == tor:
        return None
    return AbiMismatch(ext, tor, (*[f"extension uses: {e}" for e in ev[:3]], f"torch: {tev}"))
