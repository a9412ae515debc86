"""A disk cache of compiled regular expressions, so ``opdoctor explain`` starts in milliseconds.

Compiling the explain package's regexes (the module-level ones of :mod:`~opdoctor.explain.rank`
and :mod:`~opdoctor.explain.entities`, and the patterns a line may match) costs more than
50 ms per start, more than everything else explain does. ``re`` parses a pattern into a list
of SRE opcodes and hands it to ``_sre.compile``; that list depends only on the pattern, its
flags and the interpreter. This module stores the lists on disk once and, at the next start,
builds the pattern objects straight from them and puts them into ``re``'s own cache — so every
``re.compile``/``re.search`` of the same pattern and flags, wherever it is written, gets the
object ``re`` would have built (saving verifies that with ``==``, which compares the opcodes).

Safe by construction: the file name carries the interpreter's version, ``_sre.MAGIC`` and a
checksum of the explain package's sources (a change of any pattern writes a new file); the
content carries a CRC; any error while reading means "no cache" (``re`` compiles as usual);
writes go to a temporary file renamed into place, so concurrent runs never see half a file.
"""

from __future__ import annotations

import os
import re
import sys
import zlib

from opdoctor import cachefile

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

FORMAT = 1  # bump when the stored tuple changes
MAX_ENTRIES = 400  # re's cache holds 512; leave room so ours are never evicted on load
_PACKAGE = os.path.dirname(__file__)
_SOURCES = ("entities.py", "rank.py", "matcher.py", "patterns.toml")


def _sre() -> Any:
    import _sre  # type: ignore[import-not-found]

    return _sre


def cache_file() -> str:
    """Where this interpreter's cache for the current explain sources lives (paths are str:
    importing pathlib costs start-up time)."""
    crc = 0
    for name in _SOURCES:
        try:
            with open(os.path.join(_PACKAGE, name), "rb") as fh:
                crc = zlib.crc32(fh.read(), crc)
        except OSError:
            pass
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}-{_sre().MAGIC}-{FORMAT}"
    return os.path.join(cachefile.cache_dir(), f"regex-{tag}-{crc:08x}.marshal")


def compiler_key() -> str:
    """What the opcodes ``re`` builds depend on besides a pattern and its flags: the Python
    minor version, ``_sre``'s constants and the sources of ``re``'s parser and compiler (a
    patch release that changed any of them gets another key). A table of opcodes stored
    under this key (``opdoctor/_startup``, written by ``native/gen_startup.py``) serves every
    interpreter with the same key; OSError when ``re``'s sources cannot be read."""
    s = _sre()
    here = os.path.dirname(re.__file__)
    names = (("_compiler.py", "_parser.py", "_constants.py", "_casefix.py")
             if sys.version_info >= (3, 11) else
             ("sre_compile.py", "sre_parse.py", "sre_constants.py"))
    crc = 0
    for name in names:
        with open(os.path.join(here, name), "rb") as fh:
            crc = zlib.crc32(fh.read(), crc)
    return (f"{sys.version_info[0]}.{sys.version_info[1]}-{s.MAGIC}-{s.CODESIZE}-"
            f"{s.MAXREPEAT}-{s.MAXGROUPS}-{crc:08x}")


def stored(path: str | None = None) -> Any:
    """The entries of the cache file as read back (None: no usable file)."""
    return cachefile.read(path or cache_file())


def warm(path: str | None = None) -> int:
    """Put the cached patterns into ``re``'s cache; the number loaded (0: no usable cache)."""
    return install(stored(path))


def install(entries: Any) -> int:
    """Put stored entries (what :func:`save` writes, as read back) into ``re``'s cache; the
    number loaded (0: none, or not a list of entries)."""
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):  # another re implementation: nothing to warm
        return 0
    if entries is None:
        return 0
    try:
        compile_ = _sre().compile
        n = 0
        for key_flags, pattern, flags, code, groups, groupindex, indexgroup in entries:
            if n >= MAX_ENTRIES or len(cache) >= MAX_ENTRIES:
                break
            kind = type(pattern)  # str, or bytes (``check``'s patterns over binary data)
            if kind is not str and kind is not bytes:
                return 0
            cache[(kind, pattern, key_flags)] = compile_(pattern, flags, code, groups,
                                                         groupindex, indexgroup)
            n += 1
        return n
    except Exception:  # a corrupt or foreign file is no cache; re compiles as usual
        return 0


# What re handed to ``_sre.compile`` this process, by the id of the pattern object it built
# (the object kept too, so an id is never reused): filled once :func:`record` ran.
_recorded: dict[int, tuple[Any, tuple[Any, ...]]] = {}


def _compiler_module() -> Any:
    """The module whose ``compile`` turns a parsed pattern into ``_sre.compile``'s call."""
    if sys.version_info >= (3, 11):
        from re import _compiler  # type: ignore[attr-defined]
    else:  # pragma: no cover - Python 3.10
        import sre_compile as _compiler
    return _compiler


def record() -> None:
    """Keep, from now on, what ``re`` hands to ``_sre.compile`` for every pattern it compiles.

    A first run (cold cache) compiles each of its ~120 patterns, and saving them parsed and
    compiled each one a second time to get its opcodes (~25–50 ms of a ~200 ms first check);
    with the call's arguments kept, saving has them. ``re``'s compiler finds ``_sre`` as a
    module global: it gets a copy of the module whose ``compile`` also notes its arguments —
    the real one still builds every object, so patterns are exactly ``re``'s. Nothing
    happens when the global is not the real ``_sre`` (already recording, or someone else's).
    """
    try:
        compiler = _compiler_module()
        real = _sre()
        # by identity (an `is` test would narrow `real` for mypy to the global's type)
        if id(getattr(compiler, "_sre", None)) != id(real):
            return
        build = real.compile
        proxy = type(real)(real.__name__)
        proxy.__dict__.update(vars(real))

        def compile_(*args: Any) -> Any:
            obj = build(*args)
            if len(_recorded) < 2 * MAX_ENTRIES:  # bounded: a long-lived caller compiles more
                _recorded[id(obj)] = (obj, args)
            return obj

        proxy.compile = compile_
        compiler._sre = proxy
    except Exception:  # internals laid out otherwise: save parses again, as before
        return


def _recorded_entry(pattern: str | bytes, flags: int) -> tuple[Any, ...] | None:
    """The entry of a pattern :func:`record` saw ``re`` compile (None: not seen), verified."""
    cache = getattr(re, "_cache", None)
    obj = cache.get((type(pattern), pattern, flags)) if isinstance(cache, dict) else None
    hit = _recorded.get(id(obj)) if obj is not None else None
    if hit is None or hit[0] is not obj:
        return None
    try:
        source, full_flags, code, groups, groupindex, indexgroup = hit[1]
        entry = (flags, source, int(full_flags), [int(c) for c in code], int(groups),
                 dict(groupindex), tuple(indexgroup))
        # the same check as after a parse: the stored call builds re's own object
        return entry if _sre().compile(*entry[1:]) == obj else None
    except Exception:
        return None


def _entry(pattern: str | bytes, flags: int) -> tuple[Any, ...] | None:
    """What ``re`` passes to ``_sre.compile`` for ``pattern``, verified against ``re`` itself."""
    recorded = _recorded_entry(pattern, flags)
    if recorded is not None:
        return recorded
    try:
        if sys.version_info >= (3, 11):
            from re import _compiler, _parser  # type: ignore[attr-defined]
        else:  # pragma: no cover - Python 3.10
            import sre_compile as _compiler
            import sre_parse as _parser
        p = _parser.parse(pattern, flags)  # type: ignore[arg-type]  # bytes parse too
        code = _compiler._code(p, flags)  # type: ignore[attr-defined]
        groupindex = dict(p.state.groupdict)
        indexgroup: list[str | None] = [None] * p.state.groups
        for k, i in groupindex.items():
            indexgroup[i] = k
        # plain ints: the opcodes are int subclasses, which marshal does not store
        entry = (flags, pattern, int(flags | p.state.flags), [int(c) for c in code],
                 int(p.state.groups - 1), groupindex, tuple(indexgroup))
        # Pattern == compares flags, pattern and the opcodes: the cached object is re's own
        if _sre().compile(*entry[1:]) != re.compile(pattern, flags):
            return None
        return entry
    except Exception:  # a pattern re rejects, or internals this version lays out differently
        return None


def save(extra: Iterable[str] = (), path: str | None = None) -> bool:
    """Write the cache: every str pattern in ``re``'s cache now (this run's) plus ``extra``
    (the knowledge base's patterns, which a later line may need). False when not written."""
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):
        return False
    # The knowledge base first: when a long-lived process has compiled more than the cache
    # keeps (a test run), what is cut is the process's own patterns, never explain's.
    keys: dict[tuple[str, int], None] = {(source, 0): None for source in extra}
    for key in list(cache):
        if isinstance(key, tuple) and len(key) == 3 and key[0] is str:
            keys.setdefault((key[1], int(key[2])), None)
    entries = [e for k in keys if (e := _entry(*k)) is not None][:MAX_ENTRIES]
    target = path or cache_file()
    return cachefile.write(target, entries)
