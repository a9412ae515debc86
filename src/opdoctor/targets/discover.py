"""``opdoctor scan``: every compiled extension of an installed environment that links a
framework, checked in parallel across cores, summarised per package.

Candidates are the shared libraries in the target interpreter's site-packages whose
``DT_NEEDED`` names a framework library (libc10, libtorch*, libtensorflow*) or that belong to
the framework itself (torch/lib). Static checks only by default (``--probe`` to load each one).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from opdoctor.facts import CheckOptions
from opdoctor.facts.elf.image import ElfFormatError, ElfImage
from opdoctor.facts.frameworks import NEEDED_PREFIXES
from opdoctor.facts.inputfile import InputError, open_input
from opdoctor.facts.interp import Interpreter
from opdoctor.model import Report
from opdoctor.targets import is_shared_library, package_of


@dataclass(frozen=True)
class ScanItem:
    """One library found in site-packages."""

    path: str
    package: str  # top-level package (or the directory under site-packages)


def links_framework(path: str) -> bool:
    """True when the library needs a framework library (read from DT_NEEDED, nothing loaded)."""
    try:
        data = open_input(path)
    except InputError:
        return False
    try:
        if data.size < 64:
            return False
        img = ElfImage.open(data)
        needed = [str(n) for n in img.tags.get("DT_NEEDED", [])]
        return any(n.startswith(NEEDED_PREFIXES) for n in needed)
    except (ElfFormatError, struct.error, ValueError, IndexError, OSError):  # broken file
        return False
    finally:
        data.close()


def discover(interp: Interpreter) -> list[ScanItem]:
    """Framework-linked libraries (and the framework's own) under site-packages."""
    items: list[ScanItem] = []
    seen: set[str] = set()
    torch_lib = os.path.realpath(interp.torch.lib_dir) if interp.torch else ""
    # TensorFlow's own package holds hundreds of framework libraries, none an op library of
    # the user's: they are the install, not scan targets.
    tf_dir = os.path.realpath(interp.tensorflow_dir) + os.sep if interp.tensorflow_dir else ""
    for site in interp.site_dirs:
        for root, dirs, files in os.walk(site):
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
                    top = os.path.relpath(path, site).split(os.sep)[0]
                    items.append(ScanItem(path, top))
    return items


def _check_one(path: str, options: CheckOptions) -> Report:
    """Worker: check one library (runs in a child process)."""
    import dataclasses

    from opdoctor.pipeline import run_check

    ctx = package_of(path)
    if ctx is not None:
        options = dataclasses.replace(options, package=ctx[0], cwd=options.cwd or ctx[1])
    return run_check(path, options)


def scan(items: list[ScanItem], options: CheckOptions, jobs: int,
         progress: Callable[[ScanItem], None] | None = None
         ) -> list[tuple[ScanItem, Report | str]]:
    """Check every item in ``jobs`` processes; an item whose check fails carries the error."""
    results: dict[str, Report | str] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_check_one, it.path, options): it for it in items}
        for fut in as_completed(futures):
            it = futures[fut]
            try:
                results[it.path] = fut.result()
            except Exception as exc:  # reported per library, the scan goes on
                results[it.path] = f"{type(exc).__name__}: {exc}"
            if progress:
                progress(it)
    return [(it, results[it.path]) for it in items]
