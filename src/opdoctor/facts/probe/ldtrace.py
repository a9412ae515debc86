"""Parsing glibc's ``LD_DEBUG=libs,versions`` output: what the loader itself tried.

The lines that matter::

    1234:	find library=libfoo.so [0]; searching
    1234:	 search path=/a:/b		(RUNPATH from file /x/libbar.so)
    1234:	  trying file=/a/libfoo.so
    1234:	 search cache=/etc/ld.so.cache
    1234:	checking for version `DEP_2.0' in file /v1/libverdep.so [0] required by file /x.so [0]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Subdirectories glibc tries below each search directory (hwcaps, tls, platform).
_HWCAP_SUBDIR = re.compile(r"^(?:glibc-hwcaps/[^/]+|tls(?:/[^/]+)*|x86_64(?:/x86_64)?|"
                           r"haswell(?:/x86_64)?|avx512_1(?:/x86_64)?|aarch64|atomics)$")
_PREFIX = re.compile(r"^\s*\d+:\s?")
_FIND = re.compile(r"find library=(\S+) \[\d+\]; searching")
_PATH = re.compile(r"search path=(\S*)\s+\((.*)\)")
_CACHE = re.compile(r"search cache=(\S+)")
_TRY = re.compile(r"trying file=(\S+)")
_VERSION = re.compile(r"checking for version `([^']+)' in file (\S+) \[\d+\] required by "
                      r"file (\S+)")


@dataclass
class LibSearch:
    """One 'find library' episode."""

    name: str
    paths: list[tuple[str, str]] = field(default_factory=list)  # (dirs, why)
    cache: bool = False
    tried: list[str] = field(default_factory=list)


@dataclass
class LdTrace:
    """The parsed trace (empty when no trace was written)."""

    searches: list[LibSearch] = field(default_factory=list)
    versions: list[tuple[str, str, str]] = field(default_factory=list)
    lines: int = 0

    def search_for(self, name: str) -> LibSearch | None:
        """The last search for ``name`` (the one that failed, when one did)."""
        for s in reversed(self.searches):
            if s.name == name:
                return s
        return None

    def evidence_for(self, name: str, limit: int = 8) -> list[str]:
        """Trace lines a person can check: where glibc looked for ``name``."""
        s = self.search_for(name)
        if s is None:
            return []
        out = []
        for dirs, why in s.paths:
            all_dirs = [d for d in dirs.split(":") if d]
            # glibc also tries hwcaps/tls/platform subdirectories of each entry: show entries.
            base = list(dict.fromkeys(d for d in all_dirs if not any(
                d.startswith(o + "/") and _HWCAP_SUBDIR.match(d[len(o) + 1:])
                for o in all_dirs)))
            out.append(f"ld.so searched {', '.join(base)} ({why})")
        if s.cache:
            out.append("ld.so searched /etc/ld.so.cache")
        out.append(f"ld.so tried {len(s.tried)} file(s), none loadable"
                   if s.tried else "ld.so tried no file")
        return out[:limit]


def parse_ld_debug(path: str) -> LdTrace:
    """Parse one LD_DEBUG_OUTPUT file (missing file → empty trace)."""
    trace = LdTrace()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(32 << 20)
    except OSError:
        return trace
    cur: LibSearch | None = None
    for raw in text.splitlines():
        trace.lines += 1
        line = _PREFIX.sub("", raw, count=1)
        if m := _FIND.search(line):
            cur = LibSearch(m.group(1))
            trace.searches.append(cur)
        elif (m := _PATH.search(line)) and cur is not None:
            cur.paths.append((m.group(1), m.group(2)))
        elif _CACHE.search(line) and cur is not None:
            cur.cache = True
        elif (m := _TRY.search(line)) and cur is not None:
            cur.tried.append(m.group(1))
        elif m := _VERSION.search(line):
            trace.versions.append((m.group(1), m.group(2), m.group(3)))
    return trace
