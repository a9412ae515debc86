"""Bars: `opdoctor check --static` on a torch extension vs the `ldd` + `nm -D` + `comm` pipeline a
person would type (≤ 1.0×, stretch 0.5×), and on torch's own libtorch_cpu.so (< 0.5 s, peak RSS
< 100 MiB).

Usage: python benchmarks/bench_static.py [--repeat N] [--lib EXTENSION.so]
Default extension: the reference operator (build/myop/libmyop.so, `make reference`). Peak RSS is
the largest process of the tree (the CLI and any child it starts).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from _bench import (
    DEFAULT_REPEAT,
    ROOT,
    Row,
    opdoctor,
    side_by_side,
    table,
    wall,
    wall_cold,
    wall_rss,
)

RATIO = 1.0
BIG_S = 0.5
BIG_MIB = 100.0


def libtorch_cpu() -> Path | None:
    """torch's libtorch_cpu.so in this interpreter, if torch is installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    lib = Path(spec.origin).parent / "lib" / "libtorch_cpu.so"
    return lib if lib.is_file() else None


def bars(repeat: int = DEFAULT_REPEAT, lib: str | None = None) -> list[Row]:
    """Two rows (one when torch is missing)."""
    ext = Path(lib or ROOT / "build/myop/libmyop.so")
    check = [*opdoctor(), "check", "--static", "-f", "json"]
    rows = []
    if not ext.is_file():
        rows.append(Row("`check --static` on a torch extension", "≤ 1.0× the pipeline",
                        note=f"{ext} missing: make reference"))
    else:
        runs = side_by_side({
            "pipeline": lambda: wall(["bash", str(ROOT / "benchmarks/pipeline.sh"), str(ext)]),
            "check": lambda: wall([*check, str(ext)]),
            "upgrade": lambda: wall_cold([*check, str(ext)], keep_schemas=True),
            "cold": lambda: wall_cold([*check, str(ext)]),
        }, repeat)
        row = Row(f"`check --static` on a torch extension ({ext.name})",
                  f"≤ {RATIO:g}× `ldd`+`nm -D`+`comm` (stretch 0.5×)", runs["check"],
                  baseline="pipeline.sh", base_samples=runs["pipeline"])
        row.met = row.ratio is not None and row.ratio <= RATIO
        # The same with cold caches: the first run after an upgrade of opdoctor (every
        # start-up cache computed and written; the op-schema verdicts, kept per torch
        # install, still there), and the first run on a machine (those too; torch is imported
        # in a child only for schemas outside the subset opdoctor certifies, facts/schemacert).
        upgrade = Row("… first run after an opdoctor upgrade (start-up caches cold)",
                      f"≤ {RATIO:g}× `ldd`+`nm -D`+`comm`", runs["upgrade"],
                      baseline="pipeline.sh", base_samples=runs["pipeline"])
        cold = Row("… first run on the machine (empty opdoctor cache)",
                   f"≤ {RATIO:g}× `ldd`+`nm -D`+`comm`", runs["cold"],
                   baseline="pipeline.sh", base_samples=runs["pipeline"])
        for r in (upgrade, cold):
            r.met = r.ratio is not None and r.ratio <= RATIO
        rows += [row, upgrade, cold]
    big = libtorch_cpu()
    if big is None:
        rows.append(Row("`check --static` of libtorch_cpu.so", "< 0.5 s, < 100 MiB",
                        note="torch not installed"))
        return rows
    wall_rss([*check, str(big)])  # warm-up: page cache, opdoctor's caches
    samples = [wall_rss([*check, str(big)]) for _ in range(repeat)]
    secs = [s for s, _ in samples]
    rss = [m for _, m in samples]
    row = Row(f"`check --static` of libtorch_cpu.so ({big.stat().st_size / 2**20:.0f} MiB)",
              f"< {BIG_S:g} s", secs)
    row.met = sorted(secs)[len(secs) // 2] < BIG_S
    mem = Row("… its peak RSS", f"< {BIG_MIB:g} MiB", rss, unit="MiB")
    mem.met = max(rss) < BIG_MIB
    return [*rows, row, mem]


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    ap.add_argument("--lib", help="the torch extension to check (default: the reference op)")
    args = ap.parse_args()
    print(table(bars(args.repeat, args.lib)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
