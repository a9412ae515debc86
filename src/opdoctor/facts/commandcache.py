"""Caches that last one command.

The readers of a package's Python files and directories (``pyast``, ``pychain``, ``pynames``,
``pyguard``, ``pyreg``, ``pkgdir``, the import-chain check's ``realpath``) memoise what they
read, so that the libraries of one command (a directory walk, ``scan``, ``--package``) share
one parse of each module. Several of those caches are keyed on a path alone (a module's
bindings, a directory's compiled modules, a package's import chain): right for one command,
stale for the next one of a process that stays (``cli.main(argv)`` in an embedding program,
the test suite), which would also keep every tree it ever parsed (~1.6 million objects,
600–800 MB, in a test worker; each full cyclic collection then walked all of them).

Each reader registers how to empty its caches when it is imported; :func:`clear` empties them
all. ``cli.main(argv)`` calls it when a command returns to its caller (the console script's
process simply ends); a program that calls :func:`opdoctor.pipeline.run_check` itself calls
it between commands.
"""

from __future__ import annotations

import functools
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

_CLEARERS: list[Callable[[], object]] = []


def register(*clearers: Callable[[], object]) -> None:
    """Empty these (``cache_clear`` of an ``lru_cache``, ``clear`` of a dict) on :func:`clear`."""
    _CLEARERS.extend(clearers)


def clear() -> None:
    """Empty every registered cache: the next command reads the files afresh."""
    for fn in _CLEARERS:
        fn()


# The same few hundred files of a package (its imported modules, its chain's resolved links)
# are resolved for every report of a directory walk (19 for fbgemm_gpu, 20 for numpy's site):
# one lstat chain each per command, not per report.
realpath = functools.lru_cache(maxsize=8192)(os.path.realpath)
register(realpath.cache_clear)
