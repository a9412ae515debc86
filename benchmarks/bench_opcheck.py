"""What ``--opcheck`` adds to the load probe: the probe alone against the probe with the
opcheck stage (fake-kernel decision, pystub, autograd, ``torch.library.opcheck`` per op), same
library, interleaved runs, min and median of N (default 5), and the ratio.

Usage: python benchmarks/bench_opcheck.py [--repeat N] [LIB]
(default LIB: build/fixtures/compile/multi.so, five ops with CPU and Meta kernels)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from opdoctor.facts.probe.runner import ProbeRequest, start_probe

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))


def run_probe(lib: str, opcheck: bool) -> float:
    """Wall seconds of one probe; fails loudly if the probe did not do what it should."""
    start = time.perf_counter()
    res = start_probe(ProbeRequest(lib, sys.executable, True, env=dict(os.environ),
                                   opcheck=opcheck, timeout=300)).wait()
    took = time.perf_counter() - start
    assert res.inspected, res.stderr[-2000:]
    if opcheck:
        assert res.compile_checked and res.compile_ops, res.stderr[-2000:]
        bad = [(o.name, t.test) for o in res.compile_ops for t in o.tests if not t.ok]
        assert not bad, bad
    return took


def main() -> int:
    """Time both, interleaved (so machine load hits both alike), and print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("lib", nargs="?", default=str(BUILD / "fixtures/compile/multi.so"))
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    plain: list[float] = []
    checked: list[float] = []
    for _ in range(args.repeat):
        plain.append(run_probe(lib, False))
        checked.append(run_probe(lib, True))
    print(f"library: {lib}, repeat={args.repeat}, {time.strftime('%Y-%m-%d')}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| what | min (s) | median (s) |")
    print("| --- | --- | --- |")
    for name, xs in (("probe", plain), ("probe --opcheck", checked)):
        print(f"| {name} | {min(xs):.2f} | {statistics.median(xs):.2f} |")
    d_min = min(checked) - min(plain)
    d_med = statistics.median(checked) - statistics.median(plain)
    print(f"\n--opcheck adds {d_min:.2f} s (min) / {d_med:.2f} s (median); ratio "
          f"{min(checked) / min(plain):.2f}× (min), "
          f"{statistics.median(checked) / statistics.median(plain):.2f}× (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
