"""C++ demangling through binutils' ``c++filt`` (one batched call per run, cached)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

_CACHE: dict[str, str] = {}


def demangle_all(names: Iterable[str]) -> dict[str, str]:
    """Demangled form of each name; a name that is not C++ (or no c++filt) maps to itself."""
    names = list(names)
    todo = [n for n in dict.fromkeys(names) if n not in _CACHE]
    cxx = [n for n in todo if n.startswith("_Z")]
    for n in todo:
        _CACHE[n] = n
    tool = shutil.which("c++filt")
    if cxx and tool:
        try:
            proc = subprocess.run([tool], input="\n".join(cxx) + "\n", capture_output=True,
                                  text=True, timeout=30)
            lines = proc.stdout.splitlines()
            if proc.returncode == 0 and len(lines) == len(cxx):
                _CACHE.update(zip(cxx, lines, strict=True))
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {n: _CACHE.get(n, n) for n in names}


def demangle(name: str) -> str:
    """Demangled form of one name."""
    return demangle_all([name])[name]
