"""Bar: `opdoctor --version` and `opdoctor codes` start within 3× a bare `python -c pass`.

Usage: python benchmarks/bench_startup.py [--repeat N]   (prints the rows and the ratios)
"""

from __future__ import annotations

import argparse
import sys

from _bench import DEFAULT_REPEAT, Row, opdoctor, side_by_side, table, wall

TARGET = 3.0


def bars(repeat: int = DEFAULT_REPEAT) -> list[Row]:
    """The two start-up rows, each against `python -c pass` measured interleaved with it."""
    od = opdoctor()
    runs = side_by_side({
        "pass": lambda: wall([sys.executable, "-c", "pass"]),
        "version": lambda: wall([*od, "--version"]),
        "codes": lambda: wall([*od, "codes"]),
    }, repeat)
    rows = []
    for key, what in (("version", "`opdoctor --version`"), ("codes", "`opdoctor codes`")):
        row = Row(what, f"≤ {TARGET:g}× `python -c pass`", runs[key],
                  baseline="`python -c pass`", base_samples=runs["pass"])
        row.met = row.ratio is not None and row.ratio <= TARGET
        rows.append(row)
    return rows


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    print(table(bars(ap.parse_args().repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
