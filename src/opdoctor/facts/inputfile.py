"""Opening the user's file safely: never block on a FIFO, never read a 400 MB file into memory.

Problems that stop any analysis (missing path, not a regular file, unreadable) raise
:class:`InputError`, which the CLI turns into one line and exit code 2. Everything about the
*content* (empty, not ELF, truncated) is left to the integrity check, which reports findings.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from dataclasses import dataclass


class InputError(Exception):
    """The input cannot be analysed at all. Carries a finding code for ``opdoctor explain``."""

    def __init__(self, code: str, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.code = code
        self.path = path
        self.reason = reason


@dataclass
class FileData:
    """A regular file's bytes, memory-mapped read-only (``b""`` when empty)."""

    path: str
    size: int
    buf: bytes | mmap.mmap

    def close(self) -> None:
        """Release the mapping; further reads are invalid."""
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()


def _kind_of_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_input(path: str) -> FileData:
    """Open ``path`` for analysis, or raise :class:`InputError` saying why it cannot be read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError("OD401", path, "dangling symbolic link") from None
        raise InputError("OD401", path, "no such file") from None
    except NotADirectoryError:
        raise InputError("OD401", path, "no such file (a parent is not a directory)") from None
    except PermissionError:
        raise InputError("OD403", path, "permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError("OD414", path, "symbolic link loop (Too many levels of symbolic "
                             "links)") from None
        raise InputError("OD403", path, os.strerror(exc.errno or errno.EIO)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("OD402", path, f"is {_kind_of_mode(st.st_mode)}, not a library file")
    try:
        # O_NONBLOCK: if the path is swapped for a FIFO between stat and open we must not hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except PermissionError:
        raise InputError("OD403", path, "permission denied (cannot open for reading)") from None
    except OSError as exc:
        raise InputError("OD403", path, os.strerror(exc.errno or errno.EIO)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("OD402", path, f"is {_kind_of_mode(st.st_mode)}, not a library file")
        if st.st_size == 0:
            return FileData(path, 0, b"")
        try:
            buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            reason = f"cannot map file: {os.strerror(exc.errno or 0)}"
            raise InputError("OD403", path, reason) from None
        return FileData(path, st.st_size, buf)
    finally:
        os.close(fd)


# Signatures of files people mistake for shared libraries, checked in order.
_SNIFFERS: tuple[tuple[bytes, str], ...] = (
    (b"version https://git-lfs", "a Git LFS pointer file (the real binary was never fetched)"),
    (b"!<arch>\n", "an ar archive (a static library .a, not a shared object)"),
    (b"PK\x03\x04", "a ZIP archive (a wheel or egg? unpack it and check the .so inside)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"\xfe\xed\xfa\xce", "a Mach-O binary (macOS)"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O binary (macOS)"),
    (b"\xce\xfa\xed\xfe", "a Mach-O binary (macOS)"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O binary (macOS)"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary (macOS)"),
    (b"MZ", "a Windows PE/COFF file (a .dll or .pyd)"),
    (b"#!", "a script"),
)


def sniff(head: bytes) -> str:
    """Describe what a non-ELF file most likely is, from its first bytes."""
    for magic, what in _SNIFFERS:
        if head.startswith(magic):
            return what
    stripped = head.lstrip()
    lowered = stripped[:200].lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "an HTML page (a failed download saved under the library's name?)"
    if b"gnu ld script" in lowered or lowered.startswith((b"input(", b"group(")):
        return "a GNU ld linker script (the linker follows it, the dynamic loader cannot)"
    if head and all(b in b"\t\n\r" or 32 <= b < 127 for b in head[:512]):
        return "a text file"
    return "data of unknown type"


def is_shared_library(name: str) -> bool:
    """``libfoo.so``, ``libfoo.so.1.2``, ``_C.cpython-311-x86_64-linux-gnu.so`` (by name)."""
    return name.endswith(".so") or ".so." in name


def shared_libraries_under(path: str) -> list[str]:
    """Shared libraries (``*.so``, ``*.so.N``) at or below ``path``, sorted (a file is
    returned when it is one). Names only: nothing is opened."""
    if os.path.isfile(path):
        return [path] if is_shared_library(path) else []
    out = []
    for root, _d, files in os.walk(path):
        out += [os.path.join(root, f) for f in files if is_shared_library(f)]
    return sorted(out)
