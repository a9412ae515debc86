"""What ``--opcheck`` adds to the load probe: the probe alone against the probe with the
opcheck stage (fake-kernel decision, pystub, autograd, ``torch.library.opcheck`` per op), same
library, interleaved runs, min and median of N (default 5), and the ratio.

Usage: python benchmarks/bench_opcheck.py [--repeat N] [LIB]
(default LIB: build/fixtures/compile/multi.so, five ops with CPU and Meta kernels)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

from opdoctor.facts.probe.runner import ProbeRequest, start_probe

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_probe(lib: str, opcheck: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of one probe; fails loudly if the probe did not do its job.

    CPU time (user + system of the reaped probe child) does not grow with the machine's load
    the way wall time does: on a shared machine it is the steadier number.
    """
    start, cpu = time.perf_counter(), _children_cpu()
    res = start_probe(ProbeRequest(lib, sys.executable, True, env=dict(os.environ),
                                   opcheck=opcheck, timeout=300)).wait()
    took = (time.perf_counter() - start, _children_cpu() - cpu)
    assert res.inspected, res.stderr[-2000:]
    if opcheck:
        assert res.compile_checked and res.compile_ops, res.stderr[-2000:]
        # Every op tested by all four opcheck tests (their verdicts are not the point here:
        # multi.so's kernels call ATen ops, which test_autograd_registration rejects).
        bad = [o.name for o in res.compile_ops if o.skipped or len(o.tests) != 4]
        assert not bad, bad
    return took


def main() -> int:
    """Time both, interleaved (so machine load hits both alike), and print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("lib", nargs="?", default=str(BUILD / "fixtures/compile/multi.so"))
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    plain: list[tuple[float, float]] = []
    checked: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        plain.append(run_probe(lib, False))
        checked.append(run_probe(lib, True))
    print(f"library: {lib}, repeat={args.repeat}, {time.strftime('%Y-%m-%d')}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| what | wall min (s) | wall median (s) | CPU min (s) | CPU median (s) |")
    print("| --- | --- | --- | --- | --- |")
    for name, xs in (("probe", plain), ("probe --opcheck", checked)):
        wall, cpu = [x[0] for x in xs], [x[1] for x in xs]
        print(f"| {name} | {min(wall):.2f} | {statistics.median(wall):.2f} | {min(cpu):.2f} | "
              f"{statistics.median(cpu):.2f} |")
    for i, what in ((0, "wall"), (1, "CPU")):
        a, b = [x[i] for x in plain], [x[i] for x in checked]
        print(f"\n{what}: --opcheck adds {min(b) - min(a):.2f} s (min) / "
              f"{statistics.median(b) - statistics.median(a):.2f} s (median); ratio "
              f"{min(b) / min(a):.2f}× (min), {statistics.median(b) / statistics.median(a):.2f}× "
              "(median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
