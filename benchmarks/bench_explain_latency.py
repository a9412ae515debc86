"""Bar: `opdoctor explain "<one line>"` answers within 100 ms and within 4× `python -c pass`.

Usage: python benchmarks/bench_explain_latency.py [--repeat N]
(`bench_explain.py` reports explain's accuracy on the real-message corpus, and this latency too.)
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _bench import DEFAULT_REPEAT, Row, opdoctor, side_by_side, table, wall

ONE_LINE = ("ImportError: /opt/venv/lib/python3.11/site-packages/myop/_C.so: undefined symbol: "
            "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs")
LIMIT_S = 0.100
TARGET = 4.0


def bars(repeat: int = DEFAULT_REPEAT) -> list[Row]:
    """One row: explain's wall time against `python -c pass`, interleaved."""
    runs = side_by_side({
        "pass": lambda: wall([sys.executable, "-c", "pass"]),
        "explain": lambda: wall([*opdoctor(), "explain", ONE_LINE]),
    }, repeat)
    row = Row('`opdoctor explain "<one line>"`', f"≤ 100 ms, ≤ {TARGET:g}× `python -c pass`",
              runs["explain"], baseline="`python -c pass`", base_samples=runs["pass"])
    row.met = (row.ratio is not None and row.ratio <= TARGET
               and statistics.median(runs["explain"]) <= LIMIT_S)
    return [row]


def main() -> int:
    """Print the row."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    print(table(bars(ap.parse_args().repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
