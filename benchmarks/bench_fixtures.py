"""Bar: `make test` on a fresh clone once the venvs exist, under 3 min — every fixture built
from an empty build directory, then the whole suite (bench_tests' row).

Usage: python benchmarks/bench_fixtures.py
The fixtures are built as `make test` builds them (`make -jNPROC fixtures`) into an empty
``build/bench-fixtures`` that holds only links to the TensorFlow and MindSpore venvs (a fresh
clone after `make venv venv-tf venv-ms`); real wheels come from pip as they do there (its cache
as warm as it is). Slow by nature (minutes): `make bench` runs it only with BENCH_TESTS=1.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time

from _bench import ROOT, Row, cores, table

FRESH_S = 180.0
SCRATCH = ROOT / "build" / "bench-fixtures"


def build_seconds() -> float:
    """Seconds `make -jNPROC fixtures` takes from an empty build directory (removed after)."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    for venv in ("venv-tf", "venv-ms"):
        if (ROOT / "build" / venv).is_dir():
            (SCRATCH / venv).symlink_to(ROOT / "build" / venv)
    t = time.perf_counter()
    try:
        # make's own output is not the measure; a failed build is no number at all
        subprocess.run(["make", "-s", f"-j{cores()}", f"BUILD={SCRATCH}", "fixtures"], cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        return time.perf_counter() - t
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


def bars(run: bool = True, suite: list[float] | None = None) -> list[Row]:
    """The fresh-clone row: the fixture build plus the suite's median (``suite``: its samples;
    without them the row shows the fixture build alone, unjudged)."""
    row = Row("`make test` on a fresh clone, venvs present (fixtures + suite)",
              f"< {FRESH_S / 60:g} min")
    if not run:
        row.note = "slow: BENCH_TESTS=1 make bench"
        return [row]
    build = build_seconds()
    if suite:
        whole = statistics.median(suite)
        row.samples = [build + whole]
        row.met = row.samples[0] < FRESH_S
        row.note = f"fixtures from an empty build directory {build:.0f} s + suite {whole:.0f} s"
    else:
        row.samples = [build]
        row.note = f"fixtures alone, {build:.0f} s: the suite was not timed"
    return [row]


def main() -> int:
    """Print the rows, with one run of the whole suite (bench_tests) for the fresh-clone row."""
    import bench_tests

    suite = bench_tests.bars(1)[-1]
    print(table([*bars(run=True, suite=suite.samples), suite]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
