"""``opdoctor scan``: every compiled extension of an installed environment that links a
framework, checked in parallel across cores, summarised per package.

Candidates are the shared libraries in the target interpreter's site-packages whose
``DT_NEEDED`` names a framework library (libc10, libtorch*, libtensorflow*) or that belong to
the framework itself (torch/lib). Static checks only by default (``--probe`` to load each one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from opdoctor.facts import CheckOptions
from opdoctor.facts.core import links_framework
from opdoctor.facts.inputfile import is_shared_library
from opdoctor.facts.interp import Interpreter
from opdoctor.facts.pkgdir import package_of
from opdoctor.model import Report


@dataclass(frozen=True)
class ScanItem:
    """One library found in site-packages."""

    path: str
    package: str  # top-level package (or the directory under site-packages)
    name: str = ""  # the path below the scanned directory (site-packages or a PYTHONPATH entry)


# The standard library's own entries of sys.path (…/lib/python3.11, its lib-dynload): no
# package a user installs lives there.
_STDLIB_ENTRY = re.compile(r"[/\\]lib(?:64)?[/\\]python\d\.\d+(?:[/\\]lib-dynload)?[/\\]?$")


def scan_dirs(interp: Interpreter) -> list[str]:
    """The interpreter's site-packages, then the ``PYTHONPATH`` directories of the
    environment (Python puts them on ``sys.path`` ahead of site-packages: a package there is
    the one a job imports), then the other directories the job's sys.path holds — what a
    ``.pth`` file or a ``sitecustomize.py`` adds (survey 23's S2: a cluster hook inserting a
    shared directory whose older torchvision every job imports; the scan read only the
    venv's own copy, exit 0)."""
    out = list(interp.site_dirs)
    seen = {os.path.realpath(p) for p in out}
    cwd = os.path.realpath(os.getcwd())
    extra = [p for p in interp.sys_path if p and not _STDLIB_ENTRY.search(p)]
    for p in [*os.environ.get("PYTHONPATH", "").split(os.pathsep), *extra]:
        real = os.path.realpath(p) if p else ""
        if real and os.path.isdir(real) and real not in seen and real != cwd:
            seen.add(real)
            out.append(p)
    return out


def source_trees(interp: Interpreter, scanned: list[str]) -> list[tuple[str, str]]:
    """(directory to walk, the directory its packages are named from) for what the job
    imports from outside site-packages: the packages setuptools' editable finders map
    (``pip install -e .``, flat layout) and the directories site-packages' ``.pth`` files
    add (a src-layout editable install, ``setup.py develop``) — a developer's own operator
    package, the one a scan of their environment must not leave out. Only packages
    (directories with ``__init__.py``) are walked there, not a project's build tree."""
    from opdoctor.facts.pkgdir import editable_mapping, pth_directories

    done = {os.path.realpath(p) for p in scanned}
    out: list[tuple[str, str]] = []
    for path, _finder in editable_mapping(tuple(interp.sys_path)).values():
        if os.path.isfile(os.path.join(path, "__init__.py")) and \
                os.path.realpath(path) not in done:
            done.add(os.path.realpath(path))
            out.append((path, os.path.dirname(path)))
    for d in pth_directories(interp.site_dirs):
        if os.path.realpath(d) in done:
            continue
        done.add(os.path.realpath(d))
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            pkg = os.path.join(d, name)
            if os.path.isfile(os.path.join(pkg, "__init__.py")) and \
                    os.path.realpath(pkg) not in done:
                done.add(os.path.realpath(pkg))
                out.append((pkg, d))
    return out


def discover(interp: Interpreter) -> list[ScanItem]:
    """Framework-linked libraries (and the framework's own) under site-packages, PYTHONPATH
    and the source trees of editable installs."""
    items: list[ScanItem] = []
    seen: set[str] = set()
    torch_lib = os.path.realpath(interp.torch.lib_dir) if interp.torch else ""
    # TensorFlow's own package holds hundreds of framework libraries, none an op library of
    # the user's: they are the install, not scan targets.
    tf_dir = os.path.realpath(interp.tensorflow_dir) + os.sep if interp.tensorflow_dir else ""
    dirs_ = scan_dirs(interp)
    for top, site in [*((d, d) for d in dirs_), *source_trees(interp, dirs_)]:
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__",) and
                             not d.endswith(".dist-info"))
            for f in sorted(files):
                if not is_shared_library(f):
                    continue
                path = os.path.join(root, f)
                real = os.path.realpath(path)
                if real in seen or os.path.islink(path):
                    continue
                seen.add(real)
                if tf_dir and real.startswith(tf_dir):
                    continue
                own = torch_lib and os.path.dirname(real) == torch_lib
                if own or links_framework(path):
                    rel = os.path.relpath(path, site)
                    items.append(ScanItem(path, rel.split(os.sep)[0], rel))
    return items


def _check_one(path: str, options: CheckOptions) -> Report:
    """Worker: check one library (runs in a child process)."""
    import dataclasses

    from opdoctor.pipeline import run_check
    from opdoctor.targets import import_cwd

    ctx = package_of(path)
    if ctx is not None:
        options = dataclasses.replace(options, package=ctx[0], cwd=import_cwd(ctx[1], options))
    return run_check(path, options)


def _check_group(paths: list[str], options: CheckOptions) -> list[Report | str]:
    """Worker: check the libraries of one package in turn. With the probe, they share one
    import of their package (see ``reuse_scope``); a failing check is reported for its own
    library and the others go on."""
    import contextlib

    scope: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if options.probe:
        from opdoctor.facts.probe.runner import reuse_scope
        scope = reuse_scope()
    out: list[Report | str] = []
    with scope:
        for path in paths:
            try:
                out.append(_check_one(path, options))
            except Exception as exc:  # reported per library, the group goes on
                out.append(f"{type(exc).__name__}: {exc}")
    return out


def scan(items: list[ScanItem], options: CheckOptions, jobs: int,
         progress: Callable[[ScanItem], None] | None = None
         ) -> list[tuple[ScanItem, Report | str]]:
    """Check every item in ``jobs`` processes, the libraries of one package in the same
    worker (one import of the package for all of them); an item whose check fails carries
    the error."""
    groups: dict[str, list[ScanItem]] = {}
    for it in items:
        ctx = package_of(it.path)
        groups.setdefault(f"package {ctx[1]}/{ctx[0]}" if ctx else it.path, []).append(it)
    results: dict[str, Report | str] = {}
    # The largest groups first: they bound the wall time.
    order = sorted(groups.values(), key=len, reverse=True)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_check_group, [it.path for it in g], options): g for g in order}
        for fut in as_completed(futures):
            group = futures[fut]
            try:
                got: list[Report | str] = fut.result()
            except Exception as exc:  # the worker itself died: every library of it says so
                got = [f"{type(exc).__name__}: {exc}"] * len(group)
            for it, res in zip(group, got, strict=True):
                results[it.path] = res
                if progress:
                    progress(it)
    return [(it, results[it.path]) for it in items]
