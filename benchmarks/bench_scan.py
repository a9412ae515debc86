"""Bars: `opdoctor scan` of an environment (static: < 3 s; with `--probe`: wall time about
(probes ÷ cores) × one probe, judged as at most 1.25× that).

Usage: python benchmarks/bench_scan.py [--repeat N] [--python PY] [--no-probe]
The environment is the interpreter's own (default: this one); the rows say how many libraries
it holds, so a reader can tell it from the issue's "torch + 5 extension packages".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

from _bench import DEFAULT_REPEAT, ROOT, Row, env, opdoctor, side_by_side, table, wall

STATIC_S = 3.0
PROBE_SLACK = 1.25


def _count(python: str) -> int:
    """How many libraries `scan` checks in that environment (from its JSON report)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scan.json")
        subprocess.run([*opdoctor(), "scan", "--python", python, "-f", "json", "-o", out],
                       capture_output=True, env=env(), check=False)
        try:
            with open(out, encoding="utf-8") as fh:
                return len(json.load(fh).get("reports", []))
        except (OSError, ValueError):
            return 0


def bars(repeat: int = DEFAULT_REPEAT, python: str | None = None,
         probe: bool = True) -> list[Row]:
    """The static row, and the probe row against (probes ÷ cores) × one probe."""
    py = python or sys.executable
    n = _count(py)
    scan = [*opdoctor(), "scan", "--python", py, "-f", "json", "-o", os.devnull]
    fns = {"static": lambda: wall(scan)}
    if probe:
        one = str(ROOT / "build/myop/libmyop.so")
        fns["probe"] = lambda: wall([*scan, "--probe"])
        fns["one"] = lambda: wall([*opdoctor(), "check", "-f", "json", one])
    runs = side_by_side(fns, repeat)
    st = Row(f"`scan` static ({n} libraries)", f"< {STATIC_S:g} s", runs["static"])
    st.met = sorted(runs["static"])[len(runs["static"]) // 2] < STATIC_S
    rows = [st]
    if probe:
        cores = os.cpu_count() or 1
        expect = [math.ceil(n / cores) * x for x in runs["one"]]
        row = Row(f"`scan --probe` ({n} probes, {cores} cores)",
                  f"≤ {PROBE_SLACK:g}× ⌈probes ÷ cores⌉ × one `check`", runs["probe"],
                  baseline="⌈probes ÷ cores⌉ × one check", base_samples=expect)
        row.met = row.ratio is not None and row.ratio <= PROBE_SLACK
        rows.append(row)
    return rows


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    ap.add_argument("--python")
    ap.add_argument("--no-probe", action="store_true")
    args = ap.parse_args()
    print(table(bars(args.repeat, args.python, not args.no_probe)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
