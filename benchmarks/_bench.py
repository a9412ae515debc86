"""Shared helpers of the performance bars (issue #21): run commands side by side, summarise.

Every bar is measured against its baseline *in the same run*, interleaved (target, baseline,
target, …), so a machine that gets busier half-way slows both; the ratio of medians is what a
bar is judged on. Runs use the worktree's sources (``PYTHONPATH=src``) and allow bytecode caches,
as an installed package has them (a warm-up run writes them and opdoctor's own caches).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPEAT = 5

_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "dt = time.perf_counter() - t\n"
    "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
)


def env() -> dict[str, str]:
    """The environment of a measured run: this checkout's sources, bytecode caches allowed."""
    e = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    e["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + e["PYTHONPATH"]
                                           if e.get("PYTHONPATH") else "")
    return e


def opdoctor() -> list[str]:
    """How a user runs opdoctor: the console script next to this interpreter (what ``pip
    install`` writes), else ``python -m opdoctor``."""
    script = Path(sys.executable).with_name("opdoctor")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "opdoctor"]


def wall(cmd: Sequence[str], extra_env: dict[str, str] | None = None) -> float:
    """Seconds one run of ``cmd`` takes (output discarded); ``extra_env`` is added to
    :func:`env`."""
    e = {**env(), **(extra_env or {})}
    t = time.perf_counter()
    subprocess.run(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e,
                   check=False)
    return time.perf_counter() - t


def cores() -> int:
    """The cores this process may run on (what `make test`'s ``nproc`` counts)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def test_workers() -> int:
    """pytest-xdist workers as `make test` starts them (its TEST_WORKERS): the cores and one."""
    return cores() + 1


def wall_cold(cmd: Sequence[str], keep_schemas: bool = False) -> float:
    """Seconds one run of ``cmd`` takes with an empty opdoctor cache (a fresh
    ``$XDG_CACHE_HOME``): what the first run on a machine sees. ``keep_schemas``: what an
    upgrade of opdoctor leaves valid stays — the op-schema verdicts (computed by importing
    torch once per torch install, ``OPDOCTOR_CACHE_DIR``) and the parsed configuration files
    (``config-*``, keyed by each file's identity, not by opdoctor's code): the first run after
    an upgrade."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="opdoctor-cold-") as cache:
        extra = {"XDG_CACHE_HOME": cache}
        if keep_schemas:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
            extra["OPDOCTOR_CACHE_DIR"] = os.environ.get("OPDOCTOR_CACHE_DIR") or \
                os.path.join(base, "opdoctor")
            kept = os.path.join(base, "opdoctor")
            os.makedirs(os.path.join(cache, "opdoctor"))
            for name in os.listdir(kept) if os.path.isdir(kept) else ():
                if name.startswith("config-"):
                    shutil.copy2(os.path.join(kept, name), os.path.join(cache, "opdoctor"))
        return wall(cmd, extra)


def wall_rss(cmd: Sequence[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB of the largest process of the tree) of one run of ``cmd``."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True,
                         text=True, check=True, env=env()).stdout.split()
    return float(out[0]), int(out[1]) / 1024


def side_by_side(fns: dict[str, Callable[[], float]], repeat: int,
                 warmup: bool = True) -> dict[str, list[float]]:
    """Interleaved runs of every measurement, ``repeat`` times each (after one warm-up)."""
    if warmup:
        for fn in fns.values():
            fn()
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            out[k].append(fn())
    return out


@dataclass
class Row:
    """One bar: what, the target, the samples (seconds unless ``unit`` says otherwise), the
    baseline's samples, and whether the target is met."""

    measure: str
    target: str
    samples: list[float] = field(default_factory=list)
    unit: str = "s"
    baseline: str = ""
    base_samples: list[float] = field(default_factory=list)
    met: bool | None = None  # None: not measured
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """Median over the baseline's median, when there is a baseline."""
        if not self.samples or not self.base_samples:
            return None
        return statistics.median(self.samples) / statistics.median(self.base_samples)


def _one(x: float) -> str:
    return f"{1000 * x:.0f} ms" if x < 1 else f"{x:.2f} s"


def _fmt(xs: list[float], unit: str) -> str:
    if not xs:
        return "–"
    if unit == "s":
        vals = [f"{1000 * x:.0f}" if max(xs) < 1 else f"{x:.2f}" for x in
                (min(xs), statistics.median(xs), max(xs))]
        return " / ".join(vals) + (" ms" if max(xs) < 1 else " s")
    return " / ".join(f"{x:.0f}" for x in (min(xs), statistics.median(xs), max(xs))) + f" {unit}"


def table(rows: Sequence[Row]) -> str:
    """The Markdown table every bar script and ``make bench`` print."""
    out = ["| measure | target | min / median / max | baseline (median) | ratio | met |",
           "| --- | --- | --- | --- | ---: | --- |"]
    for r in rows:
        base = (f"{r.baseline}: {_one(statistics.median(r.base_samples))}"
                if r.base_samples else r.baseline or "–")
        ratio = f"{r.ratio:.2f}×" if r.ratio is not None else "–"
        met = {True: "met", False: "**not met**", None: "not measured"}[r.met]
        note = f" ({r.note})" if r.note else ""
        out.append(f"| {r.measure} | {r.target} | {_fmt(r.samples, r.unit)} | {base} | {ratio} | "
                   f"{met}{note} |")
    return "\n".join(out)


def header(repeat: int) -> str:
    """One line: date, machine, interpreter, load."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        tv = f", torch {version('torch')}"
    except PackageNotFoundError:
        tv = ""
    try:
        load = f", load average {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    return (f"{time.strftime('%Y-%m-%d %H:%M')} · {os.cpu_count()} cores · Python "
            f"{platform.python_version()}{tv} · {repeat} runs per measure{load}")


def which(name: str) -> str | None:
    """``shutil.which``, for the bars that need a system tool."""
    return shutil.which(name)
