"""Static check speed on real PyPI packages, against ``python -c "import torch"`` in the same run.

Usage: python benchmarks/bench_packages.py [--repeat N] [--fetch] [--only NAME] [--src DIR]

Each case is a real wheel installed with ``pip install --no-deps --target`` beside the venv's
torch: ``opdoctor check --static -f json`` of the package (``--package NAME``) and of its largest
extension library is run N times (after one warm-up run that is not counted). Wall and CPU time
(user + sys of the process tree) are printed as min / median / max, and the median as a ratio
to the median of ``import torch`` measured in the same run, so numbers from a loaded machine
stay comparable. Targets (issues #14, #22): every check under 5 s and under the time of
``import torch`` (what the probe pays first) + 2 s.

Sites are looked up in build/fixtures/realwheels (``make test``), build/realworld
(``make realworld``) and build/bench (``--fetch`` installs the missing pinned wheels there).
numpy's own package in the venv is always there.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))

_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "dt = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(dt, r.ru_utime + r.ru_stime, p.returncode)\n"
)


@dataclass(frozen=True)
class Case:
    """One real package: the pip spec, where its site may already be, what to check."""

    name: str
    spec: str  # pip requirement (for --fetch)
    package: str  # --package NAME
    library: str  # glob of the extension to check, relative to the site
    sites: tuple[str, ...]  # candidate site dirs, relative to BUILD


CASES = (
    Case("torchvision 0.28.0", "torchvision==0.28.0", "torchvision", "torchvision/_C.so",
         ("fixtures/realwheels/torchvision-0.28.0/site", "bench/torchvision-0.28.0/site")),
    Case("torchaudio 2.9.1", "torchaudio==2.9.1", "torchaudio",
         "torchaudio/lib/libtorchaudio.so",
         ("realworld/torchaudio-2.9.1/site", "bench/torchaudio-2.9.1/site")),
    Case("torchaudio 2.11.1", "torchaudio==2.11.1", "torchaudio",
         "torchaudio/lib/_torchaudio.so",
         ("realworld/torchaudio-2.11.1/site", "bench/torchaudio-2.11.1/site")),
    Case("fbgemm-gpu-cpu 1.9.0", "fbgemm-gpu-cpu==1.9.0", "fbgemm_gpu",
         "fbgemm_gpu/fbgemm_gpu_tbe_index_select.so",
         ("realworld/fbgemm-gpu-cpu-1.9.0/site", "bench/fbgemm-gpu-cpu-1.9.0/site")),
    Case("xformers 0.0.35", "xformers==0.0.35", "xformers", "xformers/_C.so",
         ("bench/xformers-0.0.35/site",)),
    Case("bitsandbytes 0.50.2", "bitsandbytes==0.50.2", "bitsandbytes",
         "bitsandbytes/libbitsandbytes_cuda128.so", ("bench/bitsandbytes-0.50.2/site",)),
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process tree, exit code) of one run of ``cmd``."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True,
                         text=True, check=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def site_of(case: Case, fetch: bool) -> Path | None:
    """The case's site directory (installed with pip when ``fetch`` and missing)."""
    for rel in case.sites:
        site = BUILD / rel
        if (site / case.package).is_dir():
            return site
    if not fetch:
        return None
    site = BUILD / case.sites[-1]
    site.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(site), case.spec], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"  {case.name}: pip failed: {p.stderr.strip().splitlines()[-1:]}")
        return None
    return site


def _stats(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"


def main() -> int:
    """Run every available case and print the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fetch", action="store_true", help="pip-install missing wheels")
    ap.add_argument("--only", default="", help="only cases whose name contains this")
    ap.add_argument("--src", default=str(ROOT / "src"),
                    help="the opdoctor source tree to time (another checkout's src/ for a "
                    "before/after comparison)")
    args = ap.parse_args()
    # An installed opdoctor has its bytecode compiled; measure that, not the compiler.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = args.src + (os.pathsep + env["PYTHONPATH"]
                                             if env.get("PYTHONPATH") else "")
    opdoctor = [sys.executable, "-m", "opdoctor", "check", "--static", "-f", "json"]

    rows: list[tuple[str, str, list[tuple[float, float, int]]]] = []
    targets: list[tuple[str, str, list[str]]] = []
    import numpy  # the venv's: always there

    npdir = os.path.dirname(numpy.__file__)
    umath = sorted(glob.glob(os.path.join(npdir, "_core", "_multiarray_umath*.so")))
    targets.append(("numpy (venv)", "--package numpy", [*opdoctor, "--package", "numpy"]))
    if umath:
        targets.append(("numpy (venv)", os.path.basename(umath[0]), [*opdoctor, umath[0]]))
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        site = site_of(case, args.fetch)
        if site is None:
            print(f"skipped {case.name}: not installed (make realworld, or --fetch)")
            continue
        envarg = ["--env", f"PYTHONPATH={site}"]
        targets.append((case.name, f"--package {case.package}",
                        [*opdoctor, *envarg, "--package", case.package]))
        libs = sorted(glob.glob(str(site / case.library)))
        if libs:
            targets.append((case.name, case.library.rsplit("/", 1)[-1],
                            [*opdoctor, *envarg, libs[0]]))

    torch_cmd = [sys.executable, "-c", "import torch"]
    measure(torch_cmd, env)  # warm the page cache
    base = [measure(torch_cmd, env) for _ in range(args.repeat)]
    base_wall = statistics.median(r[0] for r in base)
    print(f"\nrepeat={args.repeat}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    for label, what, cmd in targets:
        measure(cmd, env)  # warm-up: bytecode, page cache, the schema-parse cache
        rows.append((label, what, [measure(cmd, env) for _ in range(args.repeat)]))

    print("| package | check --static of | wall s (min / median / max) | CPU s (min / median / "
          "max) | median wall ÷ import torch | ≤ import torch + 2 s | < 5 s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(f"| baseline | `python -c \"import torch\"` | {_stats([r[0] for r in base])} | "
          f"{_stats([r[1] for r in base])} | 1.00 | | |")
    worst = 0.0
    for label, what, runs in rows:
        wall = [r[0] for r in runs]
        med = statistics.median(wall)
        worst = max(worst, med)
        codes = sorted({r[2] for r in runs})
        bad = "" if all(c in (0, 1) for c in codes) else f" (exit {codes})"
        print(f"| {label} | `{what}`{bad} | {_stats(wall)} | {_stats([r[1] for r in runs])} | "
              f"{med / base_wall:.2f} | {'yes' if med <= base_wall + 2 else 'NO'} | "
              f"{'yes' if med < 5 else 'NO'} |")
    print(f"\nslowest median: {worst:.2f} s; import torch median: {base_wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
