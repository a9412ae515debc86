"""Reader for glibc's ``/etc/ld.so.cache`` (the "glibc-ld.so.cache1.1" format).

The file may start with the old libc5 "ld.so-1.7.0" table; the new table follows it, 8-byte
aligned. String offsets in the new format are relative to the start of the new header.
Entries come sorted the way ldconfig wants them searched; we keep that order.
"""

from __future__ import annotations

import struct
from functools import lru_cache

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"


def parse_ld_cache(data: bytes) -> dict[str, list[str]]:
    """Map each library name in the cache to its paths, in cache order (all architectures)."""
    base = 0
    if data.startswith(OLD_MAGIC):
        if len(data) < 16:
            return {}
        (nlibs,) = struct.unpack_from("<I", data, 12)
        base = 16 + nlibs * 12
        base = (base + 7) & ~7
    if data[base:base + len(NEW_MAGIC)] != NEW_MAGIC or len(data) < base + 48:
        return {}
    nlibs, _strlen = struct.unpack_from("<II", data, base + 20)
    entries = base + 48
    out: dict[str, list[str]] = {}

    def cstr(off: int) -> str:
        start = base + off
        end = data.find(b"\0", start)
        return data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")

    for i in range(nlibs):
        pos = entries + i * 24
        if pos + 24 > len(data):
            break
        _flags, key, value, _osv, _hwcap = struct.unpack_from("<iIIIQ", data, pos)
        out.setdefault(cstr(key), []).append(cstr(value))
    return out


@lru_cache(maxsize=4)
def load_ld_cache(path: str = "/etc/ld.so.cache") -> dict[str, list[str]]:
    """The parsed cache (empty when missing or unreadable: musl, containers without ldconfig)."""
    try:
        with open(path, "rb") as fh:
            return parse_ld_cache(fh.read())
    except OSError:
        return {}
