"""Cost of a fleet run: ``opdoctor fleet`` on 2 local ranks against one ``opdoctor check`` of
the same library, same run, interleaved (check, fleet, check, fleet …) so that a change in the
machine's load hits both.

The fleet ranks are started as a launcher starts them (``RANK``/``WORLD_SIZE``/``LOCAL_RANK``,
``MASTER_ADDR=127.0.0.1`` and a free ``MASTER_PORT``): both import torch for torch.distributed,
local rank 0 runs the check (its probe in a child process), local rank 1 reuses the result.
``torchrun --nproc_per_node=2`` adds its own start-up (it imports torch too); it is timed on its
own line, and is not part of the ratio.

The sha256 cache lives in a temporary directory: the first fleet run hashes every dependency
(``libtorch_cpu.so`` is 400 MB) and is reported apart as "cold"; the repeats find the cache.

Usage: python benchmarks/bench_fleet.py [--repeat N] [--torchrun] [LIB]
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
               "OPDOCTOR_FLEET_NODE")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(cache: str) -> dict[str, str]:
    """This environment without launcher variables, with the benchmark's own cache."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS
           and not k.startswith(("SLURM_", "OMPI_", "PMI_", "TORCHELASTIC_"))}
    env["OPDOCTOR_CACHE_DIR"] = cache
    return env


def cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(fn: object, *args: object) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the processes it ran) of one call."""
    c0 = cpu()
    wall = fn(*args)  # type: ignore[operator]
    return float(wall), cpu() - c0


def run_check(lib: str, env: dict[str, str]) -> float:
    """Seconds of one ``opdoctor check -f json LIB``."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "opdoctor", "check", "-f", "json", lib],
                       capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"check failed ({p.returncode}): {p.stderr[-2000:]}")
    return took


def run_fleet(lib: str, env: dict[str, str]) -> float:
    """Seconds until both ranks of a 2-rank fleet have exited."""
    port = str(free_port())
    procs = []
    t0 = time.perf_counter()
    for rank in (0, 1):
        e = dict(env, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable, "-m", "opdoctor", "fleet", "-f", "json",
                                       lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=e))
    outs = [p.communicate() for p in procs]
    took = time.perf_counter() - t0
    for p, (_out, err) in zip(procs, outs, strict=True):
        if p.returncode not in (0, 1):
            raise SystemExit(f"fleet failed ({p.returncode}): {err[-2000:]}")
    return took


def run_torchrun(lib: str, env: dict[str, str]) -> float:
    """Seconds of ``torchrun --nproc_per_node=2 -m opdoctor fleet LIB``."""
    torchrun = Path(sys.executable).parent / "torchrun"
    t0 = time.perf_counter()
    p = subprocess.run([str(torchrun), "--nnodes=1", "--nproc_per_node=2",
                        "--master_addr=127.0.0.1", f"--master_port={free_port()}",
                        "-m", "opdoctor", "fleet", "-f", "json", lib],
                       capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"torchrun failed ({p.returncode}): {p.stderr[-2000:]}")
    return took


def main() -> int:
    """Run the comparison and print the table and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--torchrun", action="store_true", help="also time torchrun (slow)")
    ap.add_argument("lib", nargs="?", default=str(ROOT / "build/myop/libmyop.so"))
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    with tempfile.TemporaryDirectory(prefix="opdoctor-bench-fleet-") as cache:
        env = base_env(cache)
        cold = run_fleet(lib, env)  # fills the sha256 cache
        checks, fleets, runs = [], [], []
        for _ in range(args.repeat):
            checks.append(timed(run_check, lib, env))
            fleets.append(timed(run_fleet, lib, env))
            if args.torchrun:
                runs.append(timed(run_torchrun, lib, env))
    load = os.getloadavg()[0]
    print(f"library: {lib}, repeat={args.repeat}, {os.cpu_count()} cores, load average "
          f"{load:.1f} (1 min, at the end), {time.strftime('%Y-%m-%d')}\n")
    print("| what | wall min (s) | wall median (s) | CPU median (s) |")
    print("| --- | --- | --- | --- |")

    def row(name: str, xs: list[tuple[float, float]]) -> None:
        walls = [w for w, _c in xs]
        print(f"| {name} | {min(walls):.3f} | {statistics.median(walls):.3f} | "
              f"{statistics.median(c for _w, c in xs):.3f} |")

    row("opdoctor check", checks)
    row("opdoctor fleet, 2 local ranks", fleets)
    if runs:
        row("torchrun --nproc_per_node=2 … fleet (launcher included)", runs)
    print(f"\nfirst fleet run, sha256 cache empty (cold): {cold:.3f} s")
    wc = [w for w, _c in checks]
    wf = [w for w, _c in fleets]
    ratio_med = statistics.median(wf) / statistics.median(wc)
    ratio_min = min(wf) / min(wc)
    ratio_cpu = statistics.median(c for _w, c in fleets) / statistics.median(
        c for _w, c in checks)
    print(f"fleet / check, wall: {ratio_med:.2f}× (medians), {ratio_min:.2f}× (minimums); "
          f"CPU: {ratio_cpu:.2f}×; target ≤ 1.5× wall: "
          f"{'met' if ratio_med <= 1.5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
