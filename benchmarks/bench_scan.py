"""Bars: `opdoctor scan` of an environment (static: < 3 s; with `--probe`: wall time about
(probes ÷ cores) × one probe, judged as at most 1.25× that).

Usage: python benchmarks/bench_scan.py [--repeat N] [--python PY] [--no-probe]
The environment is the issue's "site-packages with torch + 5 extension packages": an
interpreter under build/bench-scan whose site-packages hold the dev venv's torch and five real
extension wheels that `make test` / `make realworld` installed under build/realworld (made
once, hard links); without five of them, or with --python, the interpreter's own. The rows say
how many libraries were checked and how many of them the probe really loaded (a framework's
own libraries are not probed), so a reader can tell what was measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from _bench import DEFAULT_REPEAT, ROOT, Row, cores, env, opdoctor, side_by_side, table, wall

STATIC_S = 3.0
PROBE_SLACK = 1.25
BUILD = ROOT / "build"
# Real extension wheels of build/realworld, in order of preference (one per package).
EXTENSIONS = ("torchvision-0.28.0-cu130-on-cpu-torch", "torchaudio-2.11.1",
              "fbgemm-gpu-cpu-1.8.0", "xformers-0.0.35", "bitsandbytes-0.50.2",
              "torchao-0.18.0-cuda-ext-on-cpu", "tensordict-0.11.0")


def bench_env() -> str | None:
    """The interpreter of build/bench-scan (torch + 5 extension packages), made when missing
    or when the set of cases changed; None when fewer than five cases are installed."""
    cases = [c for c in EXTENSIONS if (BUILD / "realworld" / c / "site").is_dir()][:5]
    if len(cases) < 5:
        return None
    root = BUILD / "bench-scan"
    py = root / "venv" / "bin" / "python"
    stamp = root / "cases.txt"
    if py.exists() and stamp.exists() and stamp.read_text() == "\n".join(cases):
        return str(py)
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
                   check=True, capture_output=True)
    out = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                          "['purelib'])"], check=True, capture_output=True, text=True)
    ext = root / "ext" / "site-packages"
    ext.mkdir(parents=True)
    for case in cases:
        for entry in (BUILD / "realworld" / case / "site").iterdir():
            if entry.is_dir() and not (ext / entry.name).exists():
                shutil.copytree(entry, ext / entry.name, copy_function=os.link, symlinks=True)
    torch_site = sysconfig.get_paths()["purelib"]  # this venv's: the pinned torch
    Path(out.stdout.strip(), "bench-scan.pth").write_text(f"{torch_site}\n{ext}\n")
    stamp.write_text("\n".join(cases))
    return str(py)


def _count(python: str) -> tuple[int, list[str]]:
    """(libraries `scan --probe` checks in that environment, the ones it loaded in a probe),
    from its JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scan.json")
        subprocess.run([*opdoctor(), "scan", "--python", python, "--probe", "-f", "json",
                        "-o", out], capture_output=True, env=env(), check=False)
        try:
            with open(out, encoding="utf-8") as fh:
                reports = json.load(fh).get("reports", [])
        except (OSError, ValueError):
            return 0, []
    probed = [r["target"]["path"] for r in reports for c in r.get("checks", [])
              if c.get("name") == "probe" and c.get("status") != "skipped"]
    return len(reports), probed


def bars(repeat: int = DEFAULT_REPEAT, python: str | None = None,
         probe: bool = True) -> list[Row]:
    """The static row, and the probe row against (probes ÷ cores) × one probe."""
    py = python or bench_env() or sys.executable
    n, paths = _count(py)
    probed = len(paths)
    scan = [*opdoctor(), "scan", "--python", py, "-f", "json", "-o", os.devnull]
    fns = {"static": lambda: wall(scan)}
    if probe:
        one = str(ROOT / "build/myop/libmyop.so")
        fns["probe"] = lambda: wall([*scan, "--probe"])
        fns["one"] = lambda: wall([*opdoctor(), "check", "-f", "json", one])
    runs = side_by_side(fns, repeat)
    where = "torch + 5 extension packages" if py == bench_env() else os.path.basename(py)
    st = Row(f"`scan` static ({n} libraries, {where})", f"< {STATIC_S:g} s", runs["static"])
    st.met = sorted(runs["static"])[len(runs["static"]) // 2] < STATIC_S
    rows = [st]
    if probe:
        n_cores = cores()
        # The bar: the scan against the same probes run one `check` at a time, divided among
        # the cores (the libraries differ: torchvision's probe is not libmyop's). Each library
        # is checked once, in this run, after the scans above.
        alone = sum(wall([*opdoctor(), "check", "--python", py, "-f", "json", p])
                    for p in paths)
        row = Row(f"`scan --probe` ({n} libraries, {probed} probes, {n_cores} cores)",
                  f"≤ {PROBE_SLACK:g}× (Σ one `check` per probed library) ÷ cores",
                  runs["probe"], baseline="Σ single checks ÷ cores",
                  base_samples=[alone / n_cores] * len(runs["probe"]))
        row.met = row.ratio is not None and row.ratio <= PROBE_SLACK if probed else None
        if not probed:
            row.note = "no library of this environment was probed: nothing measured"
        scale = Row("… against ⌈probes ÷ cores⌉ × one `check` of libmyop.so", "(for scale)",
                    runs["probe"], baseline="⌈probes ÷ cores⌉ × libmyop check",
                    base_samples=[math.ceil(probed / n_cores) * x for x in runs["one"]])
        rows += [row, scale]
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
