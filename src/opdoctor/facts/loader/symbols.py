"""Symbol binding as ld.so does it at load time (RTLD_NOW, as ctypes and torch use).

Every non-weak undefined symbol of the target is looked up, through the hash tables, in the
process's global scope and then in the target's own dependency tree (breadth-first), honouring
symbol versions: a reference to ``name@VER`` binds only to a definition of that version. The
version needs in ``.gnu.version_r`` are checked against each provider's ``.gnu.version_d``
first — that is the check behind "version `GLIBCXX_3.4.32' not found".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.dynsym import DynSymbols, Sym
from opdoctor.facts.elf.image import ElfImage
from opdoctor.facts.loader.process import Process
from opdoctor.facts.loader.search import Library


@dataclass(frozen=True)
class MissingVersion:
    """A version the target requires from a library that does not define it."""

    version: str
    file: str  # the DT_NEEDED name
    provider: str  # path of the library that was loaded under that name
    provider_versions: tuple[str, ...]  # same-family versions it does define, sorted


@dataclass
class Binding:
    """The outcome of binding the target's undefined symbols."""

    checked: int = 0
    unresolved: list[Sym] = field(default_factory=list)
    missing_versions: list[MissingVersion] = field(default_factory=list)
    providers: dict[str, str] = field(default_factory=dict)  # symbol → library path
    scope: list[str] = field(default_factory=list)


class SymbolTables:
    """``DynSymbols`` per library path, built once per run."""

    def __init__(self) -> None:
        self._tables: dict[str, DynSymbols] = {}

    def of(self, lib: Library) -> DynSymbols | None:
        """The symbol table of a loaded library (None when it could not be parsed)."""
        if lib.image is None:
            return None
        if lib.path not in self._tables:
            self._tables[lib.path] = DynSymbols(lib.image)
        return self._tables[lib.path]

    def of_image(self, image: ElfImage) -> DynSymbols:
        """The symbol table of an image that is not part of a tree (the target itself)."""
        key = image.data.path
        if key not in self._tables:
            self._tables[key] = DynSymbols(image)
        return self._tables[key]


def _version_key(v: str) -> tuple[str, tuple[int, ...]]:
    m = re.match(r"^(.*?)(\d+(?:\.\d+)*)$", v)
    if not m:
        return v, ()
    return m.group(1), tuple(int(x) for x in m.group(2).split("."))


def family_versions(defined: frozenset[str], wanted: str) -> tuple[str, ...]:
    """Versions of the same family (GLIBCXX_, GLIBC_, DEP_ …) sorted oldest → newest."""
    fam = _version_key(wanted)[0]
    same = [v for v in defined if _version_key(v)[0] == fam]
    return tuple(sorted(same, key=lambda v: _version_key(v)[1]))


def bind(target: ElfImage, process: Process, tables: SymbolTables) -> Binding:
    """Check version needs and bind every non-weak undefined symbol of ``target``."""
    out = Binding()
    tree = process.tree
    scope: list[Library] = []
    seen: set[str] = set()
    # A dependency the package's import loaded first brings its own dependencies into the
    # target's search scope, as glibc's breadth-first search list does.
    closure = [c for lib in tree.order for c in process.closures.get(lib.path, [])]
    for lib in [*process.global_scope, *tree.order, *closure]:
        if lib.path not in seen and lib.image is not None:
            seen.add(lib.path)
            scope.append(lib)
    # A target the framework's import has loaded already (torch 2.14.1's libtorch_nvshmem.so,
    # which libtorch_cuda.so NEEDs beside libc10_cuda.so): a load of it returns that object,
    # bound when the import loaded it, against that load's group (survey 22's K7: OD432).
    me = os.path.realpath(tree.root.path)
    if any(os.path.realpath(lib.path) == me for lib in process.preloaded):
        for lib in process.preloaded:
            if lib.path not in seen and lib.image is not None:
                seen.add(lib.path)
                scope.append(lib)
    # The target's NEEDED closure includes what its preloaded dependencies NEED in turn:
    # torch 2.14.1's CUDA libtorch.so uses std:: symbols that only libtorch_cpu.so's
    # libstdc++.so.6 defines (survey 22's K7: OD301 on a healthy torch).
    for lib in scope:  # grows while it is walked: breadth first
        for _name, dep in process.preload_edges.get(lib.path, []):
            if isinstance(dep, Library) and dep.path not in seen and dep.image is not None:
                seen.add(dep.path)
                scope.append(dep)
    out.scope = [lib.path for lib in scope]
    mine = tables.of_image(target)

    by_name: dict[str, Library] = {}
    for name, dep in tree.edges.get(tree.root.path, []):
        if isinstance(dep, Library):
            by_name[name] = dep
    for file, versions in mine.needed_versions.items():
        provider = by_name.get(file)
        table = tables.of(provider) if provider else None
        if provider is None or table is None:
            continue  # a missing dependency is reported by the dependency check
        for v in versions:
            if v not in table.defined_versions:
                out.missing_versions.append(MissingVersion(
                    v, file, provider.path, family_versions(table.defined_versions, v)))

    tables_in_scope = [(lib, tables.of(lib)) for lib in scope]
    for sym in mine.undefined():
        if sym.weak:
            continue
        if not out.checked % 256:
            checkpoint(f"binding undefined symbols ({out.checked:,} bound)")
        out.checked += 1
        found = ""
        for lib, table in tables_in_scope:
            if table is None:
                continue
            for d in table.lookup(sym.name):
                if sym.version and d.version != sym.version:
                    continue
                if not sym.version and d.hidden_version:
                    continue
                found = lib.path
                break
            if found:
                break
        if found:
            out.providers[sym.name] = found
        else:
            out.unresolved.append(sym)
    return out
