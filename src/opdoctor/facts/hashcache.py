"""sha256 of installed files, remembered on disk by their stat identity.

Used where a file's content hash is compared or reported: a package's dist-info RECORD
(``pychain._record_check``: every compiled library of the package, which MindSpore's 365 make
~2 s of reading and hashing per check) and the fleet fingerprint (``libtorch_cpu.so`` is
400 MB). An entry is keyed by (device, inode, size, mtime, ctime), as git's index does: a
rewritten, replaced or touched file has another key — ctime cannot be set back by a user —
so the cache never hides a changed library. The file is
``$OPDOCTOR_CACHE_DIR/sha256-cache.json`` (else ``$XDG_CACHE_HOME/opdoctor``, else
``~/.cache/opdoctor``), written atomically; a missing, corrupt or foreign file is no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

CHUNK = 1 << 20
HASH_CACHE_VERSION = 1
# Past this many entries a save drops those whose file is gone or changed (each run adds the
# libraries it hashed; a scan of many environments would otherwise grow the file forever).
PRUNE_ABOVE = 5000


def cache_path() -> str:
    """The sha256 cache file, in the directory the op-schema verdicts use."""
    from opdoctor.facts.opschema import cache_dir

    return os.path.join(cache_dir(), "sha256-cache.json")


def _key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class HashCache:
    """sha256 of files, remembered by their stat identity across runs."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or cache_path()
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("version") == HASH_CACHE_VERSION:
                self.entries = dict(data["entries"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.entries = {}

    def sha256(self, path: str) -> str | None:
        """The file's sha256 as hex (None when it cannot be read)."""
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            return None
        key = _key(st)
        hit = self.entries.get(real)
        if isinstance(hit, list) and hit[:5] == key and len(hit) == 6:
            return str(hit[5])
        h = hashlib.sha256()
        try:
            with open(real, "rb") as fh:
                # hashlib releases the GIL on large updates: several files hash in parallel.
                while block := fh.read(CHUNK):
                    h.update(block)
        except OSError:
            return None
        digest = h.hexdigest()
        self.entries[real] = [*key, digest]
        self.dirty = True
        return digest

    def many(self, paths: Iterable[str]) -> dict[str, str | None]:
        """sha256 of several files, hashed in parallel threads."""
        todo = sorted(set(paths))
        if len(todo) < 2:
            return {p: self.sha256(p) for p in todo}
        with ThreadPoolExecutor(max_workers=min(4, len(todo))) as pool:
            return dict(zip(todo, pool.map(self.sha256, todo), strict=True))

    def _prune(self) -> None:
        for real, entry in list(self.entries.items()):
            try:
                if _key(os.stat(real)) != entry[:5]:
                    del self.entries[real]
            except (OSError, TypeError):
                del self.entries[real]

    def save(self) -> None:
        """Write the cache atomically (several ranks or test workers may write it at once:
        the last write wins, and each is a whole file)."""
        if not self.dirty:
            return
        if len(self.entries) > PRUNE_ABOVE:
            self._prune()
        d = os.path.dirname(self.path)
        tmp = ""
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".sha256-", dir=d)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": HASH_CACHE_VERSION, "entries": self.entries}, fh)
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            if tmp:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
