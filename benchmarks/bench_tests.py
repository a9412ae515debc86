"""Bars: the test suite's time (after the venv and fixtures exist): `pytest -m "not probe"`
under 45 s, the whole suite (what `make test` runs) under 3 min — both as `make test` runs
pytest, one worker per core and a spare (`-n TEST_WORKERS --dist worksteal`, pytest-xdist).

Usage: python benchmarks/bench_tests.py [--repeat N] [--fast-only]
Slow by nature (minutes), so `make bench` runs it only with BENCH_TESTS=1; otherwise the table
says "not measured". One run by default: the suite itself is the workload.
"""

from __future__ import annotations

import argparse
import os
import sys

from _bench import ROOT, Row, table, test_workers, wall

FAST_S = 45.0
FULL_S = 180.0


def bars(repeat: int = 1, fast_only: bool = False, run: bool = True) -> list[Row]:
    """The not-probe row and (unless ``fast_only``) the full-suite row."""
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "-n", str(test_workers()), "--dist", "worksteal"]
    specs = [("`pytest -m \"not probe\"`", f"< {FAST_S:g} s", [*pytest, "-m", "not probe"],
              FAST_S)]
    if not fast_only:
        specs.append(("the whole test suite (`make test`)", f"< {FULL_S / 60:g} min", pytest,
                      FULL_S))
    rows = []
    if run:  # as `make test` does first: the bytecode of the sources the suite's children import
        import subprocess
        for args in (["src"], ["-l", "tests", "tests/fuzz"]):
            subprocess.run([sys.executable, "-m", "compileall", "-q", *args], cwd=ROOT,
                           check=True, stdout=subprocess.DEVNULL)
        # and pytest's rewritten test modules (the Makefile's PYTEST_REWRITE_CACHE)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p",
                        "no:cacheprovider"], cwd=ROOT, check=False, env=env,
                       stdout=subprocess.DEVNULL)
    for what, target, cmd, limit in specs:
        row = Row(what, target)
        if not run:
            row.note = "slow: BENCH_TESTS=1 make bench"
        else:
            os.chdir(ROOT)
            row.samples = [wall(cmd) for _ in range(repeat)]
            row.met = sorted(row.samples)[len(row.samples) // 2] < limit
        rows.append(row)
    return rows


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fast-only", action="store_true")
    args = ap.parse_args()
    print(table(bars(args.repeat, args.fast_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
