"""Bar: the import-chain analysis of a large package (torchvision, torchaudio, tensorflow-text)
takes under 1 s each: `opdoctor check --static --package NAME`, as a user runs it.

Usage: python benchmarks/bench_importchain.py [--repeat N] [--python PY] [PACKAGE ...]

The package is the interpreter's own when it has one; otherwise the real wheel already
installed by ``make realworld`` under ``build/realworld/<case>/site`` (torchvision 0.28.0 on
the CPU torch, torchaudio 2.11.1, tensorflow-text 2.21.1 beside ``build/venv-tf``'s
TensorFlow), given to the job as ``--env PYTHONPATH=<site>`` — how a user checks a package
that a job finds on its PYTHONPATH. A package found in neither is reported as not measured
(the benchmark never downloads anything).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _bench import DEFAULT_REPEAT, ROOT, Row, opdoctor, table, wall

BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))
LIMIT_S = 1.0
# package → (the build/realworld case holding its real wheel, the interpreter it needs:
# "" for the benchmark's own (torch), else a path relative to build/)
REALWORLD = {
    "torchvision": ("torchvision-0.28.0-cu130-on-cpu-torch", ""),
    "torchaudio": ("torchaudio-2.11.1", ""),
    "tensorflow_text": ("tensorflow-text-2.21.1", "venv-tf/bin/python"),
}
PACKAGES = tuple(REALWORLD)


def _has(python: str, name: str, site: Path | None = None) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if site is not None:
        e["PYTHONPATH"] = str(site)
    return subprocess.run([python, "-c", code], env=e, check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def where(name: str, python: str | None) -> tuple[str, list[str], str] | str:
    """(interpreter, extra opdoctor arguments, label) to check ``name`` with, or why not."""
    py = python or sys.executable
    if _has(py, name):
        return py, [], f"{name} (installed)"
    case, interp = REALWORLD.get(name, ("", ""))
    site = BUILD / "realworld" / case / "site"
    if not case or not site.is_dir():
        return f"{name} not installed in {py} and no build/realworld site (make realworld)"
    py = python or (str(BUILD / interp) if interp else sys.executable)
    if not os.access(py, os.X_OK):
        return f"{py} missing (make realworld)"
    if not _has(py, name, site):
        return f"{name} in {site} is not importable by {py}"
    return py, ["--env", f"PYTHONPATH={site}"], f"{name} ({case}, build/realworld)"


def bars(repeat: int = DEFAULT_REPEAT, python: str | None = None,
         packages: tuple[str, ...] = PACKAGES) -> list[Row]:
    """One row per package."""
    rows = []
    for name in packages:
        found = where(name, python)
        if isinstance(found, str):
            rows.append(Row(f"import-chain analysis of {name}", f"< {LIMIT_S:g} s", note=found))
            continue
        py, extra, label = found
        row = Row(f"import-chain analysis of {label}", f"< {LIMIT_S:g} s")
        cmd = [*opdoctor(), "check", "--static", "--python", py, *extra, "--package", name,
               "-f", "json"]
        wall(cmd)  # warm-up: page cache, interpreter facts, schema-parse cache
        row.samples = [wall(cmd) for _ in range(repeat)]
        row.met = statistics.median(row.samples) < LIMIT_S
        rows.append(row)
    return rows


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    ap.add_argument("--python")
    ap.add_argument("packages", nargs="*")
    args = ap.parse_args()
    print(table(bars(args.repeat, args.python, tuple(args.packages) or PACKAGES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
