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


def write(path: str, value: Any) -> bool:
    """Store ``value`` at ``path`` (via a temporary file and a rename); False if it failed."""
    try:
        payload = marshal.dumps(value)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(zlib.crc32(payload).to_bytes(4, "little") + payload)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return False
    return True
