"""Load-probe overhead: the probe (child process, LD_DEBUG trace, registry snapshots, dispatcher
dump) against a bare `python -c "import torch; torch.ops.load_library(p)"`, same library, same
run; and a full `opdoctor check` (static checks and probe concurrently) against the two run one
after the other.

Usage: python benchmarks/bench_probe.py [--repeat N] [LIB]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from opdoctor.facts.probe.runner import ProbeRequest, start_probe

ROOT = Path(__file__).resolve().parent.parent


def timed(fn: object) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> int:
    """Run the comparison and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("lib", nargs="?", default=str(ROOT / "build/myop/libmyop.so"))
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    bare_code = f"import torch; torch.ops.load_library({lib!r})"

    def bare() -> None:
        subprocess.run([sys.executable, "-c", bare_code], check=True, capture_output=True)

    def probe() -> None:
        res = start_probe(ProbeRequest(lib, sys.executable, True, env=dict(os.environ))).wait()
        assert res.event("ops") is not None, res.stderr

    def check(*extra: str) -> None:
        subprocess.run([sys.executable, "-m", "opdoctor", "check", "-f", "json", *extra, lib],
                       capture_output=True)

    rows = {
        "bare import torch + load_library": bare,
        "opdoctor probe alone": probe,
        "opdoctor check --static": lambda: check("--static"),
        "opdoctor check (static + probe, concurrent)": check,
    }
    times = {name: statistics.median(timed(fn) for _ in range(args.repeat))
             for name, fn in rows.items()}
    print(f"library: {lib}, repeat={args.repeat}, {time.strftime('%Y-%m-%d')}\n")
    print("| what | median wall (s) | vs bare |")
    print("| --- | --- | --- |")
    base = times["bare import torch + load_library"]
    for name, t in times.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f}× |")
    serial = times["opdoctor check --static"] + times["opdoctor probe alone"]
    print(f"\nstatic + probe one after the other would take {serial:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
