"""Compiled regular expressions of ``opdoctor check``, stored on disk.

A static check of a small library compiles ~120 regexes (the module-level ones of the facts,
the checks and the reports, and the ones functions pass to ``re.search``), ~16 ms of its CPU
time on this machine, every run. ``re`` turns a pattern into a list of SRE opcodes that
depends only on the pattern, its flags and the interpreter; :mod:`opdoctor.explain.recache`
builds pattern objects straight from stored lists and puts them into ``re``'s own cache, so
every ``re.compile``/``re.search`` of the same pattern and flags gets the object ``re`` would
have built (each entry is verified with ``==``, which compares the opcodes, when stored).

This is its use for ``check``: :func:`warm` before the command imports anything that compiles
a regex, :func:`save` after it ran. The file is keyed by the interpreter and opdoctor's sources
(the walk the check registry's manifest is keyed on, done once per process). Different targets
run different check families, so a run that compiled patterns the file lacks adds them, up to
``recache.MAX_ENTRIES`` entries; after ``MAX_REWRITES`` rewrites only a run that brings two
or more (a check family not run before): a pattern built from data that differs run to run
must not make every run rewrite the file or grow it.
A corrupt or foreign file is no cache; writes go through a temporary file and a rename, so
concurrent runs never read half a file (the last writer wins, and either content is valid).

The patterns a static check compiles also ship with the package (:data:`SHIPPED`, written by
``native/gen_startup.py``, ``make startup-tables``), keyed by :func:`recache.compiler_key`
(the Python minor version, ``_sre``'s constants and ``re``'s own sources): a first run, with an
empty cache, compiles none of them (~15 ms of a ~90 ms first check), and the disk file holds
only what the table lacks (another check family, a pattern added since the table was
written). An interpreter with another key compiles them and caches them on disk, as before.
"""

from __future__ import annotations

import os
import re
import sys
import zlib

from opdoctor import cachefile
from opdoctor.explain import recache

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1  # bump when the stored tuple changes
MAX_REWRITES = 8
_state: dict[str, Any] = {}
# The table shipped with the package: (compiler key, entries) as cachefile.write stores it.
SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_startup",
                       f"regex-check-py{sys.version_info[0]}{sys.version_info[1]}.marshal")


def shipped_entries(path: str | None = None) -> list[Any]:
    """The shipped table's entries when it was written by an interpreter with this one's
    :func:`recache.compiler_key`; [] otherwise (no table, another key, a damaged file)."""
    stored = cachefile.read(path if path is not None else SHIPPED) if (path or SHIPPED) else None
    if not (isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[1], list)):
        return []
    try:
        return stored[1] if stored[0] == recache.compiler_key() else []
    except OSError:
        return []


def cache_file() -> str:
    """This interpreter's cache file of ``check``'s regexes for the current sources."""
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}-{recache._sre().MAGIC}-{FORMAT}"
    crc = zlib.crc32("\n".join(cachefile.source_stamps()).encode())
    return os.path.join(cachefile.cache_dir(), f"regex-check-{tag}-{crc:08x}.marshal")


def _keys() -> list[tuple[str | bytes, int]]:
    """(pattern, flags) of every str and bytes pattern in ``re``'s cache now."""
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):
        return []
    return [(k[1], int(k[2])) for k in list(cache)
            if isinstance(k, tuple) and len(k) == 3 and (k[0] is str or k[0] is bytes)]


def warm(path: str | None = None) -> int:
    """Put the stored patterns into ``re``'s cache (before the command's imports); the number
    loaded. Remembers what was loaded, so :func:`save` writes only when something is new."""
    try:
        target = path or cache_file()
    except OSError:  # the package's files cannot be listed: no cache this run
        return 0
    # What the process compiled before (a caller of cli.main that stays: a test, a script)
    # is not check's and is never stored.
    before = set(_keys())
    # The shipped table first: what it has is never stored on disk (nor counted as new).
    table = shipped_entries()
    shipped = recache.install(table) if table else 0
    if shipped == len(table):
        before.update((e[1], e[0]) for e in table)
    stored = cachefile.read(target)
    rewrites: int = 0
    entries: list[Any] = []
    if (isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[0], int)
            and isinstance(stored[1], list)):
        rewrites, entries = stored
    n = recache.install(entries) if entries else 0
    # What this run compiles from here on is kept as re compiles it: saving needs no parse.
    recache.record()
    known: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    if n != len(entries):  # not all of it loaded: start the file afresh
        rewrites = 0
    else:
        known = {(e[1], e[0]): e for e in entries}
    _state.update(path=target, known=known, rewrites=rewrites, before=before)
    return shipped + n


def save() -> bool:
    """Add the patterns this run compiled that the file lacks; False when nothing was
    written (nothing new, the bound reached, no :func:`warm` before, a failed write)."""
    if "known" not in _state:
        return False
    known: dict[tuple[Any, ...], tuple[Any, ...]] = _state["known"]
    if len(known) >= recache.MAX_ENTRIES:
        return False
    before: set[tuple[str | bytes, int]] = _state["before"]
    fresh = [k for k in _keys() if k not in known and k not in before]
    # Past MAX_REWRITES a lone new pattern is taken for one built from data (it would make
    # every run rewrite the file); a family not run before brings several, and is added.
    if not fresh or (_state["rewrites"] >= MAX_REWRITES and len(fresh) < 2):
        before.update(fresh)  # a process that saves again (a test) does not count it twice
        return False
    new = []
    for k in fresh:
        e = recache._entry(*k)
        if e is None:  # re would not build it from stored opcodes: not asked about again
            before.add(k)
        else:
            new.append(e)
    if not new or (_state["rewrites"] >= MAX_REWRITES and len(new) < 2):
        before.update(fresh)
        return False
    entries = (list(known.values()) + new)[:recache.MAX_ENTRIES]
    known.clear()
    known.update(((e[1], e[0]), e) for e in entries)
    _state["rewrites"] += 1
    return cachefile.write(_state["path"], (_state["rewrites"], entries))
