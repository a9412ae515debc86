"""Which package a file belongs to, read from the directories around it (nothing imported)."""

from __future__ import annotations

import os


def package_of(path: str, dotted: bool = False) -> tuple[str, str] | None:
    """(top-level package, the directory it is imported from) for a path inside a package;
    ``dotted``: the package the path's own directory is (``scipy.linalg``), instead of its
    top level (``scipy``: the libraries of a directory walk share its one import)."""
    here = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    d, top = here, None
    if not dotted and not os.path.isdir(path):
        # A library in a data directory of a package (triton/plugins/, no __init__.py) is
        # the package's: triton loads its plugins after `import triton` has loaded
        # libtriton.so, the library they need. Two levels up at most.
        for _ in range(2):
            if os.path.isfile(os.path.join(d, "__init__.py")):
                break
            d = os.path.dirname(d)
        if not os.path.isfile(os.path.join(d, "__init__.py")):
            d = here
    while os.path.isfile(os.path.join(d, "__init__.py")):
        top = d
        d = os.path.dirname(d)
    if top is None:
        return None
    if dotted:
        return os.path.relpath(here, d).replace(os.sep, "."), d
    return os.path.basename(top), d
