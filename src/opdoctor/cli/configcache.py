"""The ``[tool.opdoctor]`` table of a configuration file, cached by the file's identity.

``check`` looks for a configuration in the current directory and its parents, and a project
directory has a ``pyproject.toml``: importing ``tomllib`` and parsing a typical one costs
~10 ms per run on this machine, about as much as the whole analysis of a small library. The
table (as written, before validation, which runs every time; ``None`` for a
``pyproject.toml`` without one) is stored under ``$XDG_CACHE_HOME/opdoctor``, one file per
configuration path, keyed by the file's device, inode, size, mtime and ctime (nanoseconds).

Only what parsed is stored (an invalid file is parsed, and reported, each time), only when
the file did not change while it was read (the same stamp before and after), and only when
it was last modified more than :data:`SETTLE_S` seconds ago — a file written in the same
clock tick as the stamp could change again without changing it (git's "racy" index entries).
A table with values ``marshal`` cannot store (TOML dates) is simply not cached. A missing,
corrupt or foreign cache file is no cache; writes are atomic (:mod:`opdoctor.cachefile`).
"""

from __future__ import annotations

import os
import time
import zlib

from opdoctor import cachefile

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
SETTLE_S = 2.0


def stamp(path: str) -> tuple[int, ...] | None:
    """The file's identity now (None when it cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _file(path: str) -> tuple[str, str]:
    full = os.path.abspath(path)
    return full, os.path.join(cachefile.cache_dir(),
                              f"config-{zlib.crc32(full.encode()):08x}.marshal")


def lookup(path: str) -> tuple[dict[str, Any] | None] | None:
    """``(table,)`` stored for the file as it is now, or None (not cached: parse it)."""
    now = stamp(path)
    if now is None:
        return None
    full, where = _file(path)
    stored = cachefile.read(where)
    if (isinstance(stored, tuple) and len(stored) == 4 and stored[0] == FORMAT
            and stored[1] == full and stored[2] == now
            and (stored[3] is None or isinstance(stored[3], dict))):
        return (stored[3],)
    return None


def store(path: str, before: tuple[int, ...] | None, table: dict[str, Any] | None) -> bool:
    """Remember ``table`` for the file if it is settled and did not change since ``before``
    (its stamp when reading began); False when nothing was stored."""
    if before is None or stamp(path) != before:
        return False
    if time.time_ns() - before[3] < SETTLE_S * 1e9:
        return False
    full, where = _file(path)
    return cachefile.write(where, (FORMAT, full, before, table))
