"""Which NumPy C API a compiled module was built against, and which NumPy the job imports
(static: read from the module's ``.rodata`` and from ``numpy/version.py``; nothing imported).

A module that calls NumPy's C API carries the inline ``_import_array()`` of the NumPy headers
it was compiled with. That function imports NumPy's core module by name — NumPy 2's headers
``numpy._core._multiarray_umath`` (falling back to ``numpy.core``), NumPy 1's
``numpy.core._multiarray_umath`` (``numpy.core.multiarray`` before 1.16) — and compares the
ABI version compiled in with the running NumPy's: a module built against NumPy 1.x fails to
import under NumPy 2 ("A module that was compiled using NumPy 1.x cannot be run in NumPy
2.x", then "numpy.core.multiarray failed to import"). pybind11's NumPy support finds the core
module at run time and carries no ``_import_array()``: it is not read here.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.elf.image import ElfImage

# The error string of _import_array()'s ABI comparison, in every NumPy release's headers:
# its presence says the module really holds NumPy's import_array.
# Matched up to the string's end (its NUL): a linker that merges string tails can put other
# bytes right before it (pyarrow 14's libarrow_python.so: "…ivnumpy.core._multiarray_umath").
_IMPORT_ARRAY = b"module compiled against ABI version 0x%x but this version of numpy is 0x%x\0"
_NUMPY2_CORE = b"numpy._core._multiarray_umath\0"
_NUMPY1_CORES = (b"numpy.core._multiarray_umath\0", b"numpy.core.multiarray\0")
# NumPy 2's headers: _import_array() refuses a running NumPy older than the C-API target the
# module was compiled for (NPY_TARGET_VERSION; 1.19–1.23 by default), and the message names
# that target as a literal: "… C-API version 0x%x (NumPy 2.0) but the running NumPy has …".
_TARGET = b"module was compiled against NumPy C-API version 0x%x (NumPy "
_TARGET_RELEASE = re.compile(rb"(\d{1,2})\.(\d{1,3})\) but the running NumPy")
_VERSION = re.compile(r"^(?:__)?version(?:__)?\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)['\"]", re.M)


class NumpyBuild:
    """The NumPy C API a module was compiled against."""

    __slots__ = ("evidence", "major", "target")

    def __init__(self, major: int, evidence: str,
                 target: tuple[int, int] | None = None) -> None:
        self.major = major  # 1 or 2: the NumPy major whose headers built it
        self.evidence = evidence  # the strings that say so
        # NumPy 2's headers: the oldest NumPy whose C API the module accepts (None: unread)
        self.target = target


def numpy_build(img: ElfImage) -> NumpyBuild | None:
    """The NumPy C API ``img`` was built against; None for a module without NumPy's
    ``_import_array()`` (or without a readable ``.rodata``)."""
    sec = img.section(".rodata")
    if sec is None or sec.sh_type == 8:  # SHT_NOBITS
        return None
    buf, start = img.data.buf, sec.offset
    end = start + min(sec.size, 64 << 20)
    if buf.find(_IMPORT_ARRAY, start, end) < 0:
        return None
    if buf.find(_NUMPY2_CORE, start, end) >= 0:
        at = buf.find(_TARGET, start, end)
        m = _TARGET_RELEASE.match(bytes(buf[at + len(_TARGET):at + len(_TARGET) + 40])) \
            if at >= 0 else None
        if m is None:
            return NumpyBuild(2, "imports numpy._core._multiarray_umath: NumPy 2 headers")
        target = (int(m.group(1)), int(m.group(2)))
        return NumpyBuild(2, "imports numpy._core._multiarray_umath: NumPy 2 headers, for "
                          f"NumPy {target[0]}.{target[1]}'s C API and later", target)
    for core in _NUMPY1_CORES:
        if buf.find(core, start, end) >= 0:
            name = core[:-1].decode()
            return NumpyBuild(1, f"imports {name} and not numpy._core: NumPy 1.x headers")
    return None


def installed_numpy(sys_path: tuple[str, ...] | list[str], cwd: str) -> tuple[str, str] | None:
    """(version, directory) of the NumPy that ``import numpy`` finds first on ``sys_path``;
    None when there is none, or its version cannot be read."""
    for entry in sys_path:
        base = entry or cwd
        if not os.path.isfile(os.path.join(base, "numpy", "__init__.py")):
            continue
        try:
            with open(os.path.join(base, "numpy", "version.py"), encoding="utf-8") as fh:
                m = _VERSION.search(fh.read(1 << 16))
        except OSError:
            return None
        return (m.group(1), base) if m else None
    return None


def release(version: str) -> tuple[int, int]:
    """(major, minor) of a version string; (0, 0) when it has none."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


# What NumPy (or Cython's type import) says when a module built against another NumPy is
# initialised: the text of an import that failed on the NumPy C-API pairing.
NUMPY_REFUSAL = re.compile(r"numpy\._?core\.multiarray failed to import|compiled using NumPy 1\.x "
                           r"cannot be run in|numpy\.dtype size changed, may indicate binary "
                           r"incompatibility|_ARRAY_API not found|module compiled against "
                           r"ABI version 0x[0-9a-f]+ but this version of numpy is|"
                           r"compiled against NumPy C-API version 0x[0-9a-f]+ \(NumPy ")
MAX_SCANNED = 600  # compiled files of one package read for their NumPy headers


@lru_cache(maxsize=32)
def numpy1_modules(files: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``files`` (a package's compiled files) were built with NumPy 1.x headers (the
    first :data:`MAX_SCANNED`); read once per command for a package (a directory walk checks
    each of its libraries)."""
    from opdoctor.facts.core import read_elf

    out = []
    for f in files[:MAX_SCANNED]:
        build = read_elf(f, numpy_build, None)
        if build is not None and build.major == 1:
            out.append(f)
    return tuple(out)


@lru_cache(maxsize=16)
def newer_c_api_modules(files: tuple[str, ...], have: tuple[int, int]
                        ) -> tuple[tuple[str, tuple[int, int]], ...]:
    """(file, C-API target) of those of ``files`` built with NumPy 2's headers for a C API
    newer than NumPy ``have`` (the first :data:`MAX_SCANNED`)."""
    from opdoctor.facts.core import read_elf

    out = []
    for f in files[:MAX_SCANNED]:
        build = read_elf(f, numpy_build, None)
        if build is not None and build.target is not None and have < build.target:
            out.append((f, build.target))
    return tuple(out)


commandcache.register(numpy1_modules.cache_clear, newer_c_api_modules.cache_clear)
