"""Bar: the import-chain analysis of a large package (torchvision, torchaudio, tensorflow-text)
takes under 1 s each: `opdoctor check --static --package NAME`, as a user runs it.

Usage: python benchmarks/bench_importchain.py [--repeat N] [--python PY] [PACKAGE ...]
A package that the interpreter does not have is reported as not measured (the benchmark never
downloads anything).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from _bench import DEFAULT_REPEAT, Row, env, opdoctor, table, wall

PACKAGES = ("torchvision", "torchaudio", "tensorflow_text")
LIMIT_S = 1.0


def _has(python: str, name: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([python, "-c", code], env=env(), check=False).returncode == 0


def bars(repeat: int = DEFAULT_REPEAT, python: str | None = None,
         packages: tuple[str, ...] = PACKAGES) -> list[Row]:
    """One row per package."""
    py = python or sys.executable
    rows = []
    for name in packages:
        row = Row(f"import-chain analysis of {name}", f"< {LIMIT_S:g} s")
        if not _has(py, name):
            row.note = f"{name} not installed in {py}"
            rows.append(row)
            continue
        cmd = [*opdoctor(), "check", "--static", "--python", py, "--package", name, "-f", "json"]
        wall(cmd)  # warm-up
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
