"""`opdoctor explain` on real messages: accuracy on the corpus halves, and latency.

Usage: python benchmarks/bench_explain.py [--repeat N] [--no-latency] [--failures] [--dev-only]

Accuracy: every case of ``tests/explain_realworld/dev.toml`` and ``test.toml`` (real error
messages from public issue threads, labelled by the thread's resolution) is explained; top-1 is
the first ranked cause, top-2 the first two. The test half is reported in AGGREGATE only
(overall, per cause, per framework, answered-with-nothing): its messages are never printed, so
patterns cannot be tuned on it. ``--failures`` lists the dev half's misses (dev only).

Latency: min/median/max of ``python -m opdoctor explain "<one line>"`` against ``python -c
pass`` (the interpreter's own start), and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "explain_realworld"
sys.path.insert(0, str(ROOT / "src"))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ONE_LINE = ("ImportError: /opt/venv/lib/python3.11/site-packages/myop/_C.so: undefined symbol: "
            "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs")


def load(half: str) -> list[dict[str, Any]]:
    """The cases of one half ("dev" or "test")."""
    cases: list[dict[str, Any]] = tomllib.loads((CORPUS / f"{half}.toml").read_text(
        encoding="utf-8"))["case"]
    return cases


def evaluate(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate accuracy: overall, per cause, per framework, and the misses (indices)."""
    from opdoctor.explain import explain_text

    tot: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # n, top1, top2
    nothing = 0
    misses: list[tuple[int, list[int], str]] = []
    for i, c in enumerate(cases):
        e = explain_text(str(c["text"]))
        order = [a.cause for a in e.ranked] or [e.cause]
        t1 = order[0] == c["cause"]
        t2 = c["cause"] in order[:2]
        nothing += e.cause == 0
        for key in ("all", f"cause {c['cause']}", f"fw {c['framework']}"):
            row = tot[key]
            row[0] += 1
            row[1] += t1
            row[2] += t2
        if not t1:
            misses.append((i, order[:3], e.subcause))
    return {"rows": dict(tot), "nothing": nothing, "misses": misses}


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.1f} %" if n else "–"


def table(res: dict[str, Any], title: str) -> str:
    """A Markdown table of one half's aggregate numbers."""
    rows = res["rows"]
    out = [f"{title}", "", "| slice | cases | top-1 | top-2 |", "| --- | ---: | ---: | ---: |"]
    order = ["all", *sorted(k for k in rows if k.startswith("cause")),
             *sorted((k for k in rows if k.startswith("fw")), key=lambda k: -rows[k][0])]
    for k in order:
        n, t1, t2 = rows[k]
        name = {"all": "**overall**"}.get(k, k.replace("fw ", ""))
        out.append(f"| {name} | {n} | {_pct(t1, n)} | {_pct(t2, n)} |")
    out.append("")
    out.append(f"answered with nothing: {res['nothing']} of {rows['all'][0]}")
    return "\n".join(out)


def _run(cmd: list[str]) -> float:
    # bytecode caches allowed, as in an installed package (the warm-up run writes them)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT / "src")
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   check=False)
    return time.perf_counter() - t


def latency(repeat: int) -> str:
    """min/median/max of explain vs python -c pass, in ms, and the ratio of medians."""
    py = sys.executable
    _run([py, "-m", "opdoctor", "explain", ONE_LINE])  # warm the file cache
    ex = [_run([py, "-m", "opdoctor", "explain", ONE_LINE]) for _ in range(repeat)]
    base = [_run([py, "-c", "pass"]) for _ in range(repeat)]

    def fmt(xs: list[float]) -> str:
        return (f"{1000 * min(xs):.0f} / {1000 * statistics.median(xs):.0f} / "
                f"{1000 * max(xs):.0f} ms")

    ratio = statistics.median(ex) / statistics.median(base)
    from opdoctor.explain import explain_text

    explain_text(ONE_LINE)  # patterns loaded, regexes compiled: what a long-lived caller sees
    warm = []
    for _ in range(repeat):
        t = time.perf_counter()
        explain_text(ONE_LINE)
        warm.append(time.perf_counter() - t)
    try:
        load = f" · load average {os.getloadavg()[0]:.1f} on {os.cpu_count() or 0} CPUs"
    except OSError:
        load = ""
    return ("| command | min / median / max |\n| --- | --- |\n"
            f"| `python -m opdoctor explain \"<one line>\"` | {fmt(ex)} |\n"
            f"| `python -c pass` | {fmt(base)} |\n\n"
            f"ratio of medians: {ratio:.2f}; explain's own time (median difference): "
            f"{1000 * (statistics.median(ex) - statistics.median(base)):.0f} ms; in-process "
            f"`explain_text` (warm) median {1000 * statistics.median(warm):.1f} ms{load}")


def main(argv: list[str] | None = None) -> int:
    """Print the accuracy tables (dev, test) and the latency table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--failures", action="store_true", help="list the DEV half's misses")
    ap.add_argument("--dev-only", action="store_true", help="skip the test half (while tuning)")
    args = ap.parse_args(argv)
    print(f"# opdoctor explain on real messages ({date.today().isoformat()})\n")
    dev = evaluate(load("dev"))
    print(table(dev, "## dev half (patterns are tuned on it)"))
    print()
    if not args.dev_only:
        test = evaluate(load("test"))
        print(table(test, "## test half (never read while writing patterns)"))
        print()
    if args.failures:
        cases = load("dev")
        print("## dev misses")
        for i, order, sub in dev["misses"]:
            c = cases[i]
            text = " ".join(str(c["text"]).split())[:160]
            print(f"- dev#{i} [{c['framework']}] want {c['cause']} got {order} ({sub}): {text}")
        print()
    if not args.no_latency:
        print("## latency")
        print(latency(max(5, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
