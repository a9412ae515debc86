"""Static check speed: `opdoctor check` vs the ldd + nm -D pipeline, on the same files, same run.

Usage: python benchmarks/bench_static.py [--repeat N] [LIB ...]
Default libraries: the reference operator and torch's own libtorch_cpu.so. Prints a Markdown
table of median wall time and peak RSS (of the process tree) per tool and library.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "dt = time.perf_counter() - t\n"
    "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
)


def measure(cmd: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS in KiB of the largest process) of one run of ``cmd``."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


def main() -> int:
    """Run the comparison and print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("libs", nargs="*")
    args = ap.parse_args()
    spec = importlib.util.find_spec("torch")
    libs = args.libs or [str(ROOT / "build/myop/libmyop.so")]
    if not args.libs and spec and spec.origin:
        libs.append(str(Path(spec.origin).parent / "lib" / "libtorch_cpu.so"))
    tools = {
        "opdoctor check --static": [sys.executable, "-m", "opdoctor", "check", "--static",
                                    "-f", "json"],
        "ldd + nm -D pipeline": ["bash", str(ROOT / "benchmarks/pipeline.sh")],
    }
    print(f"repeat={args.repeat}, python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    print("| library | size | tool | median wall (s) | peak RSS (MiB) |")
    print("| --- | --- | --- | --- | --- |")
    for lib in libs:
        size = Path(lib).stat().st_size / 2**20
        for name, cmd in tools.items():
            runs = [measure([*cmd, lib]) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs) / 1024
            print(f"| {Path(lib).name} | {size:.1f} MiB | {name} | {wall:.3f} | {rss:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
