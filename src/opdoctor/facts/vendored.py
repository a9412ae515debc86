"""Libraries a wheel vendors for its extensions, and who loads them.

auditwheel copies an extension's external dependencies into ``<dist>.libs/`` beside the
package (``scipy.libs/libgfortran-8f1e9814.so.5.0.0``) and gives the *extensions* a DT_RPATH
to it (``$ORIGIN/../../scipy.libs``). A vendored library may itself NEED a sibling without
any RPATH of its own: ld.so still finds it, because DT_RPATH is searched for every object the
loader's chain loads (the RPATH of each loader, up to the executable), unless the library
has a DT_RUNPATH. Loaded on its own (``ctypes.CDLL``), it fails; loaded as its package loads
it, it works. Nothing is executed here: dynamic sections only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from opdoctor.facts.budget import checkpoint
from opdoctor.facts.inputfile import is_shared_library
from opdoctor.facts.loader.search import Library, Resolver

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from opdoctor.facts.elf.image import ElfImage

# The search covers the install the library belongs to (its parent directory: site-packages
# for a `<dist>.libs/` directory); a tree larger than this is not read to the end.
MAX_FILES = 20_000
MAX_LIBRARIES = 2_000


@dataclass(frozen=True)
class RpathLoader:
    """A library that NEEDs the target and whose DT_RPATH reaches the target's directory."""

    path: str
    entry: str  # the DT_RPATH entry as written ($ORIGIN/../../scipy.libs)


def _describe(resolver: Resolver, path: str) -> Library | None:
    try:
        return resolver.describe(Library(path, path, ""))
    except Exception:  # a damaged or hostile file (a truncated ELF) is no loader of anything
        return None


def _libraries_under(resolver: Resolver, root: str, doing: str) -> Iterator[Library]:
    """Every library under ``root`` (links skipped), described from its dynamic section;
    bounded by MAX_FILES files and MAX_LIBRARIES libraries."""
    files = libs = 0
    for dirpath, dirnames, filenames in os.walk(root):
        checkpoint(doing)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        files += len(filenames)
        if files > MAX_FILES:
            return
        for f in sorted(filenames):
            path = os.path.join(dirpath, f)
            if not is_shared_library(f) or os.path.islink(path):
                continue
            libs += 1
            if libs > MAX_LIBRARIES:
                return
            lib = _describe(resolver, path)
            if lib is not None:
                yield lib


def _needing(resolver: Resolver, target: str, root: str) -> Iterator[Library]:
    """Libraries under ``root`` (bounded) whose DT_NEEDED names ``target`` by file name or
    soname."""
    target = os.path.abspath(target)
    img = _describe(resolver, target)
    if img is None:
        return
    names = {os.path.basename(target)} | ({img.soname} if img.soname else set())
    for lib in _libraries_under(resolver, root, "looking for the libraries that load "
                                f"{os.path.basename(target)}"):
        if lib.path != target and names & set(lib.needed):
            yield lib


def dependents(resolver: Resolver, target: str, limit: int = 3,
               roots: tuple[str, ...] = ()) -> list[str]:
    """Up to ``limit`` libraries in ``target``'s directory (and below), or under ``roots``,
    that NEED it: a support library (tensorflow_text's libpybinds_library_common.so, NEEDed by
    six pybind modules beside it; h5py.libs/libhdf5-….so, NEEDed by h5py's extensions) is
    loaded as their dependency and has no registrations of its own to find."""
    out: list[str] = []
    for root in roots or (os.path.dirname(os.path.abspath(target)),):
        for lib in _needing(resolver, target, root):
            out.append(lib.path)
            if len(out) >= limit:
                return out
    return out


def rpath_loaders(resolver: Resolver, target: str, limit: int = 3,
                  depth: int = 3) -> list[RpathLoader]:
    """Up to ``limit`` libraries of the same install that load ``target`` — NEED it, or NEED a
    library that does, up to ``depth`` levels, with no DT_RUNPATH on the way — and whose own
    DT_RPATH (no DT_RUNPATH) names ``target``'s directory: when they load it, ld.so searches
    that directory for ``target``'s dependencies too. faiss-cpu: libfaiss.so (RPATH
    ``$ORIGIN/../faiss_cpu.libs``) NEEDs libopenblaso, which NEEDs libgfortran (the target),
    which NEEDs libquadmath beside it: neither vendored library has an RPATH of its own."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(target)))
    # The install: site-packages for a <dist>.libs/ directory beside the package.
    root = os.path.dirname(os.path.dirname(os.path.abspath(target)))
    by_needed = _needers(resolver, root)
    img = _describe(resolver, os.path.abspath(target))
    if img is None:
        return []
    out: list[RpathLoader] = []
    level = [os.path.abspath(target)]
    names = {os.path.basename(target)} | ({img.soname} if img.soname else set())
    seen = set(level)
    for _ in range(depth):
        nxt: list[tuple[str, set[str]]] = []
        for lib in [x for n in sorted(names) for x in by_needed.get(n, [])]:
            if lib.path in seen or lib.runpath:
                continue  # a DT_RUNPATH turns the inherited DT_RPATH search off below it
            seen.add(lib.path)
            origin = os.path.dirname(lib.path)
            entry = next((e for e in lib.rpath
                          if "$" not in (d := e.replace("${ORIGIN}", "$ORIGIN").replace(
                              "$ORIGIN", origin)) and os.path.realpath(d) == here), "")
            if entry:
                out.append(RpathLoader(lib.path, entry))
                if len(out) >= limit:
                    return out
            elif not lib.rpath:  # loaded itself through its own loaders' DT_RPATH
                nxt.append((lib.path, {os.path.basename(lib.path)} |
                            ({lib.soname} if lib.soname else set())))
        if out or not nxt:
            break
        names = set().union(*(n for _p, n in nxt))
    return out


def _needers(resolver: Resolver, root: str) -> dict[str, list[Library]]:
    """DT_NEEDED name → the libraries under ``root`` (bounded) that NEED it."""
    out: dict[str, list[Library]] = {}
    for lib in _libraries_under(resolver, root, "looking for the libraries that load a "
                                "vendored library"):
        for n in lib.needed:
            out.setdefault(n, []).append(lib)
    return out


def vendored_loaders(resolver: Resolver, target: str) -> list[RpathLoader]:
    """The loaders to check ``target`` through, when it is a vendored library (in a
    ``<dist>.libs/`` directory, auditwheel's layout): it NEEDs a
    file that sits beside it, has neither DT_RPATH nor DT_RUNPATH of its own to find it (a
    RUNPATH would also turn its loaders' DT_RPATH off), and libraries of the same install NEED
    it with a DT_RPATH to its directory. Empty otherwise (then it is checked on its own)."""
    target = os.path.abspath(target)
    here = os.path.dirname(target)
    if not here.endswith(".libs"):
        return []  # auditwheel's <dist>.libs/: nothing else is worth walking the install for
    lib = resolver.describe(Library(target, target, ""))
    beside = {n for n in lib.needed if "/" not in n and os.path.isfile(os.path.join(here, n))}
    if not beside:
        return []
    if lib.rpath or lib.runpath:
        # Its own search path finds its dependencies (the loaders' DT_RPATH is not searched
        # for them) — but the extension that loads it may NEED the same neighbours itself:
        # glibc maps those first, breadth first, and the target's NEEDED names are then
        # already in the process (imagecodecs' liblzokay-c, whose stale RUNPATH finds nothing,
        # beside liblzokay, which _lzo.abi3.so NEEDs too; survey 21's F1).
        return [ld for ld in rpath_loaders(resolver, target)
                if beside & set(resolver.describe(Library(ld.path, ld.path, "")).needed)]
    return rpath_loaders(resolver, target)


def callers_by_name(resolver: Resolver, target: str, functions: list[str],
                    limit: int = 3) -> list[tuple[str, str]]:
    """Up to ``limit`` (library, function) pairs: libraries of ``target``'s package that store
    the name of one of its C ``functions`` as a string in ``.rodata`` — they ``dlopen`` it and
    ``dlsym`` the function (dgl's libdgl.so and libtensoradapter_pytorch_<r>.so's
    ``CPURawAlloc``). Such a library is a plugin of theirs, not an op library."""
    from opdoctor.facts.core import read_elf
    from opdoctor.facts.pkgdir import package_root

    if not functions:
        return []
    target = os.path.abspath(target)
    root = package_root(target) or os.path.dirname(target)
    needles = [(f, b"\0" + f.encode() + b"\0") for f in functions]

    def stored_name(img: ElfImage) -> str | None:
        sec = img.section(".rodata")
        if sec is None or sec.sh_type == 8:  # SHT_NOBITS
            return None
        start, end = sec.offset, sec.offset + min(sec.size, 64 << 20)
        return next((f for f, n in needles if img.data.buf.find(n, start, end) >= 0), None)

    out: list[tuple[str, str]] = []
    for lib in _libraries_under(resolver, root, "looking for libraries that call this one's "
                                "functions by name"):
        if os.path.abspath(lib.path) == target:
            continue
        hit = read_elf(lib.path, stored_name, None)  # a damaged library calls nothing
        if hit:
            out.append((lib.path, hit))
            if len(out) >= limit:
                break
    return out
