"""Every performance bar of issue #21 in one table (what `make bench` prints first).

Usage: python benchmarks/bench_table.py [--repeat N] [--only NAME ...] [--tests]
Each row: the measure, its target, min / median / max of N runs (N ≥ 5), the baseline measured
in the same run (interleaved with it), the ratio of medians, and whether the target is met.
Each bar also runs alone: benchmarks/bench_<name>.py prints its rows and ratio.
BENCH_TESTS=1 (or --tests) adds the test-suite bars and the fresh-clone build (minutes).
"""

from __future__ import annotations

import argparse
import os
import sys

import bench_explain_latency
import bench_fixtures
import bench_importchain
import bench_probe
import bench_scan
import bench_startup
import bench_static
import bench_tests
from _bench import DEFAULT_REPEAT, Row, header, table

BARS = {
    "startup": lambda n: bench_startup.bars(n),
    "explain": lambda n: bench_explain_latency.bars(n),
    "static": lambda n: bench_static.bars(n),
    "probe": lambda n: bench_probe.bars(n),
    "importchain": lambda n: bench_importchain.bars(n),
    "scan": lambda n: bench_scan.bars(n),
}


def main() -> int:
    """Run the bars and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    ap.add_argument("--only", nargs="*", choices=[*BARS, "tests"])
    ap.add_argument("--tests", action="store_true", help="also time the test suite (minutes)")
    args = ap.parse_args()
    repeat = max(5, args.repeat)
    tests = args.tests or os.environ.get("BENCH_TESTS") == "1"
    rows: list[Row] = []
    for name, fn in BARS.items():
        if not args.only or name in args.only:
            rows += fn(repeat)
    if not args.only or "tests" in args.only:
        suite = bench_tests.bars(run=tests)
        rows += suite
        # a fresh clone: every fixture from nothing, then the suite just measured
        rows += bench_fixtures.bars(run=tests, suite=suite[-1].samples)
    print(f"## Performance bars (issue #21) — {header(repeat)}\n")
    print(table(rows))
    missed = [r.measure for r in rows if r.met is False]
    print(f"\n{sum(r.met is True for r in rows)} met · {len(missed)} not met · "
          f"{sum(r.met is None for r in rows)} not measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
