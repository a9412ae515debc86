"""Small on-disk caches: one marshal payload behind a CRC-32, written atomically.

Used by the start-up paths (the fast CLI answers, the knowledge base, the regex cache), so it
imports only built-ins: marshal loads several times faster than json, and zlib's crc32 is
cheap to import where hashlib is not. A missing, short, corrupt or foreign file reads as no
cache; a failed write leaves none. Paths are str: importing pathlib costs start-up time.
"""

from __future__ import annotations

import marshal
import os
import zlib

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


_STAMPS: list[list[str]] = []


def source_stamps() -> list[str]:
    """``path:size:mtime`` of every source and data file of the opdoctor package, in a stable
    order: what a cache of anything computed from opdoctor's own code is keyed on.

    Walked once per process (a copy is returned): a ``check`` keys two caches on it, and the
    code a process runs does not change under it."""
    if not _STAMPS:
        _STAMPS.append(_walk())
    return list(_STAMPS[0])


def _walk() -> list[str]:
    out = []
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".toml", ".json")):
                st = os.stat(os.path.join(root, name))
                out.append(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return out


def cache_dir() -> str:
    """opdoctor's cache directory: $XDG_CACHE_HOME/opdoctor, else ~/.cache/opdoctor."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "opdoctor")


def read(path: str) -> Any:
    """The value stored at ``path``; None when there is no usable cache there."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
        if len(blob) < 4 or int.from_bytes(blob[:4], "little") != zlib.crc32(blob[4:]):
            return None
        return marshal.loads(blob[4:])
    except (OSError, ValueError, EOFError, TypeError):
        return None


# Files kept per family (the name up to its first "-": checks, cli, regex, dataclasses …).
# Every change of opdoctor's sources or interpreter keys new files; the old ones are never
# read again, so a new file makes the family's oldest ones beyond this many go.
KEEP_PER_FAMILY = 64


def write(path: str, value: Any) -> bool:
    """Store ``value`` at ``path`` (via a temporary file and a rename); False if it failed.
    A new file prunes its family (see :func:`prune`)."""
    try:
        payload = marshal.dumps(value)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        new = not os.path.exists(path)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(zlib.crc32(payload).to_bytes(4, "little") + payload)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return False
    if new:
        prune(path)
    return True


def prune(path: str, keep: int = KEEP_PER_FAMILY) -> int:
    """Delete the oldest files of ``path``'s family in its directory beyond the ``keep``
    newest (by modification time; ``path`` itself always stays); returns how many went.
    Another process pruning or writing at the same time is harmless: a file already gone is
    skipped, and a cache file that goes is only computed again."""
    folder, name = os.path.split(path)
    family = name.split("-", 1)[0] + "-"
    found: list[tuple[int, str]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(family) and not entry.name.endswith(".tmp") \
                        and entry.name != name:
                    try:
                        found.append((entry.stat().st_mtime_ns, entry.path))
                    except OSError:
                        continue
    except OSError:
        return 0
    found.sort(reverse=True)
    gone = 0
    for _mtime, old in found[max(keep - 1, 0):]:
        try:
            os.unlink(old)
            gone += 1
        except OSError:
            continue
    return gone
