"""Facts about MindSpore AOT custom operators, read from the library (nothing loaded).

``ops.Custom("dir/libx.so:Func", out_shape, out_dtype, func_type="aot")`` makes MindSpore's CPU
kernel (``custom_aot_cpu_kernel.cc`` in 2.10) ``dlopen`` the library with
``RTLD_LAZY | RTLD_LOCAL`` when the kernel is built, ``dlsym`` ``FuncInit`` (optional: a NULL
result is silently accepted) and, at the first launch, ``dlsym`` ``Func`` and call it as

    int Func(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
             void *stream, void *extra)

A C++ function without ``extern "C"`` is exported under its mangled name, which carries the
parameter types: that is where a wrong signature can be read statically.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.distance import edit_distance
from opdoctor.facts.elf.demangle import demangle_all
from opdoctor.facts.elf.dynsym import DynSymbols
from opdoctor.facts.elf.image import ElfImage

# The parameter lists MindSpore's dlsym'd functions are called with, as c++filt prints them.
AOT_PARAMS = ("int", "void**", "int*", "long**", "char const**", "void*", "void*")
INIT_PARAMS = ("int*", "long**", "char const**", "void*")
AOT_SIGNATURE = ("int {name}(int nparam, void **params, int *ndims, int64_t **shapes, "
                 "const char **dtypes, void *stream, void *extra)")
INIT_SIGNATURE = "int {name}Init(int *ndims, int64_t **shapes, const char **dtypes, void *extra)"
# `int64_t` is `long` on LP64 Linux; `long long` is another mangled type but the same ABI.
_EQUIV = {"long long**": "long**", "long long*": "long*", "unsigned long**": "long**"}

_IDENT = re.compile(r"^[A-Za-z_]\w*$")
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1


def is_function_name(text: str) -> bool:
    """True when ``text`` can be the function part of ``lib.so:Func`` (a C identifier)."""
    return bool(_IDENT.match(text))


@dataclass(frozen=True)
class CxxFunction:
    """A C++ (mangled) definition of the wanted name."""

    mangled: str
    demangled: str  # "CustomAdd(int, void**, int*, long**, char const**, void*, void*)"
    params: tuple[str, ...]  # as c++filt prints them
    matches: bool  # the parameter list is MindSpore's


@dataclass(frozen=True)
class AotFunction:
    """What the library offers MindSpore for ``lib.so:Func``."""

    name: str
    exported: bool  # dlsym(handle, name) finds it
    cxx: tuple[CxxFunction, ...]  # C++ definitions under that name (not extern "C")
    init_exported: bool  # dlsym(handle, name + "Init") finds it
    init_cxx: tuple[CxxFunction, ...]
    closest: tuple[str, ...]  # exported C names close to the wanted one (a typo)
    exported_functions: int  # how many plain C functions the library exports
    lazy_undefined: tuple[str, ...] = field(default=())  # resolved only when first called
    bind_now: bool = False  # linked with -z now: RTLD_LAZY binds everything at dlopen


def _params(demangled: str) -> tuple[str, ...]:
    """The parameter list of a demangled free function (``f(int, void**)`` → int, void**)."""
    inner = demangled[demangled.find("(") + 1:demangled.rfind(")")]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip() and cur.strip() != "void":
        out.append(cur.strip())
    return tuple(_EQUIV.get(p, p) for p in out)


def _cxx(table: DynSymbols, name: str, want: tuple[str, ...]) -> tuple[CxxFunction, ...]:
    """Exported C++ free functions called ``name`` (``_Z<len><name>…``), with their signatures."""
    mangled = [m for m in table.names_with_prefix(f"_Z{len(name)}{name}", limit=4)
               if table.lookup(m)]
    out = []
    for m, d in demangle_all(mangled).items():
        params = _params(d)
        out.append(CxxFunction(m, d, params, params == want))
    return tuple(out)


def exported_c_functions(table: DynSymbols, limit: int = 20000) -> list[str]:
    """Defined, exported function names of the library that are not C++-mangled."""
    out = []
    for i in range(1, min(table.count, limit)):
        s = table.symbol(i)
        if s.defined and s.sym_type == 2 and s.binding != 0 and s.visibility != 2 \
                and not s.name.startswith("_Z") and s.name not in out:
            out.append(s.name)
    return out


def _closest(name: str, exported: list[str]) -> tuple[str, ...]:
    """Exported names a typo away from ``name`` (case-insensitive equal, or distance ≤ 3)."""
    scored = sorted((edit_distance(name.lower(), e.lower()), e) for e in exported
                    if not e.endswith("Init") or name.endswith("Init"))
    limit = max(2, min(3, len(name) // 3))
    return tuple(e for d, e in scored if d <= limit)[:3]


def lazy_plt_symbols(image: ElfImage) -> set[str]:
    """Symbols referenced only by PLT (JUMP_SLOT) relocations: under ``RTLD_LAZY`` they are
    looked up at the first call, not at ``dlopen``."""
    from elftools.elf.relocation import RelocationSection

    plt: set[str] = set()
    eager: set[str] = set()
    try:
        elf = image.elf
        dynsym = elf.get_section_by_name(".dynsym")
        if dynsym is None:
            return set()
        for sec in elf.iter_sections():
            if not isinstance(sec, RelocationSection):
                continue
            target = plt if sec.name in (".rela.plt", ".rel.plt") else eager
            for rel in sec.iter_relocations():
                idx = rel["r_info_sym"]
                if idx:
                    target.add(dynsym.get_symbol(idx).name)
    except Exception:  # a malformed table: no lazy claim rather than a crash
        return set()
    return plt - eager


def bind_now(image: ElfImage) -> bool:
    """Linked with ``-z now`` (DF_BIND_NOW / DF_1_NOW / DT_BIND_NOW)."""
    tags = image.tags
    return (any(int(v) & DF_BIND_NOW for v in tags.get("DT_FLAGS", []))
            or any(int(v) & DF_1_NOW for v in tags.get("DT_FLAGS_1", []))
            or bool(tags.get("DT_BIND_NOW")))


def new_abi_mindspore_symbols(undefined: list[str]) -> list[str]:
    """Mangled MindSpore names among ``undefined`` that use the C++11 ABI's std::string
    (``std::__cxx11::basic_string`` / ``B5cxx11``): MindSpore's builds export none."""
    return sorted(n for n in undefined if "9mindspore" in n
                  and ("St7__cxx11" in n or "B5cxx11" in n))


# ops.Custom("dir/libx.so:Func", …, func_type="aot") in Python source (one call, ≤ 600 chars).
_CUSTOM = re.compile(r"""Custom\(\s*(?:func\s*=\s*)?["']([^"'\n]{1,300}\.so[^"':\n]*)"""
                     r""":(\w{1,200})["']([^)]{0,600})""", re.S)


@dataclass(frozen=True)
class AotUse:
    """An ``ops.Custom("lib.so:Func", …, func_type="aot")`` call found in a package's source."""

    file: str
    line: int
    library: str  # as written
    function: str
    resolved: str  # the path it names, relative ones resolved ("" when no such file)


def aot_uses(files: list[str], bases: list[str]) -> list[AotUse]:
    """AOT custom-op calls in ``files``; a relative library path is tried against ``bases``
    (the job's working directory, then the package directory), then the file's directory.
    Read once per command and package (every library of a directory walk asks)."""
    return list(_aot_uses(tuple(files), tuple(bases)))


@lru_cache(maxsize=16)
def _aot_uses(files: tuple[str, ...], bases: tuple[str, ...]) -> tuple[AotUse, ...]:
    out = []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(1 << 20)
        except OSError:
            continue
        for m in _CUSTOM.finditer(text):
            if "aot" not in m.group(3):
                continue
            lib = m.group(1)
            cands = [lib] if lib.startswith("/") else [
                *[f"{b}/{lib}" for b in bases], f"{path.rsplit('/', 1)[0]}/{lib}"]
            found = next((c for c in cands if os.path.isfile(c)), "")
            out.append(AotUse(path, text.count("\n", 0, m.start()) + 1, lib, m.group(2),
                              os.path.normpath(found) if found else ""))
    return tuple(out)


def read_aot(image: ElfImage, table: DynSymbols, name: str,
             unresolved: list[str]) -> AotFunction:
    """What ``dlsym`` will find for ``name`` and ``name + "Init"``, and which undefined symbols
    (``unresolved``: those no library of the emulated process defines) wait for the first call."""
    exported = bool(table.lookup(name))
    init = bool(table.lookup(name + "Init"))
    funcs = exported_c_functions(table)
    lazy: tuple[str, ...] = ()
    now = bind_now(image)
    if unresolved and not now:
        plt = lazy_plt_symbols(image)
        lazy = tuple(sorted(n for n in unresolved if n in plt))
    return AotFunction(
        name=name, exported=exported, cxx=() if exported else _cxx(table, name, AOT_PARAMS),
        init_exported=init, init_cxx=() if init else _cxx(table, name + "Init", INIT_PARAMS),
        closest=() if exported else _closest(name, funcs), exported_functions=len(funcs),
        lazy_undefined=lazy, bind_now=now)


commandcache.register(_aot_uses.cache_clear)  # keyed on file names alone
