"""File systems a library cannot be mapped from: mounted ``noexec``.

The loader opens such a file and fails to map its code: glibc says "failed to map segment from
shared object" — the words it uses for an address-space limit too small for the library as
well — and the file plainly exists, so the usual readings (the search path, a broken file)
are wrong. Hardened systems mount /tmp (where pip builds and opdoctor unpacks wheels),
/var/tmp, /dev/shm or home directories noexec; container volumes can be too.

Read with ``statvfs`` (no process is started, nothing is executed); the mount point and its
options come from /proc/self/mountinfo for the evidence.
"""

from __future__ import annotations

import functools
import os

from opdoctor.facts import commandcache


def noexec_mount(path: str) -> str | None:
    """The mount point of the ``noexec`` file system ``path`` is on; None when it may be
    executed from (or cannot be read: nothing is claimed then)."""
    try:
        flags = os.statvfs(path).f_flag
    except OSError:
        return None
    if not flags & os.ST_NOEXEC:
        return None
    return _mount_point(os.path.realpath(path)) or "?"


def mount_options(point: str) -> str:
    """The per-mount options /proc/self/mountinfo lists for mount point ``point`` ("" when
    it is not listed)."""
    return _mounts().get(point, "")


def _mount_point(real: str) -> str:
    """The longest mount point that holds ``real`` (a resolved path)."""
    best = ""
    for point in _mounts():
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best = point
    return best


@functools.lru_cache(maxsize=1)
def _mounts() -> dict[str, str]:
    """Mount point → its per-mount options, from /proc/self/mountinfo (empty when absent)."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 5:
                    # octal escapes for blanks in paths (\040)
                    point = fields[4].encode().decode("unicode_escape", errors="replace")
                    out[point] = fields[5]
    except OSError:
        pass
    return out


commandcache.register(_mounts.cache_clear)


def exec_tempdir(prefix: str) -> str:
    """A new temporary directory on a file system libraries can be mapped from: the usual
    temporary directory, or — where it is mounted noexec, as on hardened systems — one
    under opdoctor's cache directory, else under the current directory. Libraries unpacked
    from a wheel are loaded by the probe from there; on a noexec /tmp every one of them
    failed to load, a fault of the machine reported as the wheel's."""
    import tempfile  # (with shutil under it: not on the check's start-up path)

    for base in (None, _cache_base(), os.getcwd()):
        try:
            if base is not None:
                os.makedirs(base, exist_ok=True)
            where = tempfile.mkdtemp(prefix=prefix, dir=base)
        except OSError:
            continue
        if noexec_mount(where) is None:
            return where
        os.rmdir(where)
    return tempfile.mkdtemp(prefix=prefix)


def _cache_base() -> str:
    """Where unpacked files go when the temporary directory is noexec: under opdoctor's
    cache directory (``opschema.cache_dir``: $OPDOCTOR_CACHE_DIR, $XDG_CACHE_HOME/opdoctor)."""
    from opdoctor.facts.opschema import cache_dir

    return os.path.join(cache_dir(), "unpacked")
