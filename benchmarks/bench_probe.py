"""Bar: a full `opdoctor check` (static checks and the load probe, concurrently) takes at most
1.10× a bare `python -c "import torch; torch.ops.load_library(p)"` on the same library.

Usage: python benchmarks/bench_probe.py [--repeat N] [LIB]
Also printed, for scale (not a bar): the probe alone, through opdoctor's own runner.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from _bench import DEFAULT_REPEAT, ROOT, Row, env, opdoctor, side_by_side, table, wall

TARGET = 1.10


def _probe_alone(lib: str) -> float:
    sys.path.insert(0, str(ROOT / "src"))
    from opdoctor.facts.probe.runner import ProbeRequest, start_probe

    t = time.perf_counter()
    res = start_probe(ProbeRequest(lib, sys.executable, True, env=env())).wait()
    assert res.inspected, res.stderr
    return time.perf_counter() - t


def bars(repeat: int = DEFAULT_REPEAT, lib: str | None = None,
         with_probe_alone: bool = False) -> list[Row]:
    """One row (two with ``with_probe_alone``)."""
    path = os.path.abspath(lib or ROOT / "build/myop/libmyop.so")
    if not os.path.isfile(path):
        return [Row("full `check` vs bare `import torch; load_library`", f"≤ {TARGET:.2f}×",
                    note=f"{path} missing: make reference")]
    fns = {
        "bare": lambda: wall([sys.executable, "-c",
                              f"import torch; torch.ops.load_library({path!r})"]),
        "check": lambda: wall([*opdoctor(), "check", "-f", "json", path]),
    }
    if with_probe_alone:
        fns["probe"] = lambda: _probe_alone(path)
    runs = side_by_side(fns, repeat)
    row = Row(f"full `check` (static + probe) of {os.path.basename(path)}", f"≤ {TARGET:.2f}× bare",
              runs["check"], baseline="bare `import torch; load_library`",
              base_samples=runs["bare"])
    row.met = row.ratio is not None and row.ratio <= TARGET
    rows = [row]
    if with_probe_alone:
        rows.append(Row("… the probe alone (opdoctor's runner)", "(for scale)", runs["probe"],
                        baseline="bare", base_samples=runs["bare"]))
    return rows


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    ap.add_argument("lib", nargs="?")
    args = ap.parse_args()
    print(table(bars(args.repeat, args.lib, with_probe_alone=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
