"""Generalisation inside the dev half: accuracy of `opdoctor explain` per inner fold.

Usage: python benchmarks/bench_explain_folds.py [--misses A|B] [--threads FILE]

The dev half (``tests/explain_realworld/dev.toml``) is split again, by thread, into two inner
folds: fold B when the *second* byte of sha256("owner/repo#N") is odd, else fold A (the first
byte decides dev vs test, see ``split.py``). A rule written while looking at one fold's misses
is kept only when it does not lower the other fold's accuracy: that is the check that a change
helps messages it was not written for. ``--threads FILE`` (one thread id a line) evaluates only
those dev threads — e.g. freshly collected ones, measured *before* any tuning on them.
The test half is never read here.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def fold(thread: str) -> str:
    """"A" or "B": the inner fold of a dev thread."""
    return "B" if hashlib.sha256(thread.encode()).digest()[1] % 2 else "A"


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.1f}" if n else "–"


def main(argv: list[str] | None = None) -> int:
    """Print top-1 / top-2 per fold, per cause and per framework; optionally one fold's misses."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", choices=("A", "B", "all"), help="list this fold's misses")
    ap.add_argument("--threads", type=Path, help="only the dev threads listed in this file")
    args = ap.parse_args(argv)
    from opdoctor.explain import explain_text

    cases: list[dict[str, Any]] = tomllib.loads(
        (ROOT / "tests" / "explain_realworld" / "dev.toml").read_text(encoding="utf-8"))["case"]
    if args.threads:
        keep = {t.strip() for t in args.threads.read_text().splitlines() if t.strip()}
        cases = [c for c in cases if c["thread"] in keep]
    tot: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    misses: list[str] = []
    for c in cases:
        f = fold(str(c["thread"]))
        e = explain_text(str(c["text"]))
        order = [a.cause for a in e.ranked] or [e.cause]
        t1, t2 = order[0] == c["cause"], c["cause"] in order[:2]
        for key in ("all", f"cause {c['cause']}", f"fw {c['framework']}"):
            for ff in (f, "dev"):
                row = tot[(ff, key)]
                row[0] += 1
                row[1] += t1
                row[2] += t2
                row[3] += e.cause == 0
        if not t1 and args.misses in (f, "all"):
            text = " ".join(str(c["text"]).split())[:200]
            misses.append(f"- [{f}] {c['thread']} [{c['framework']}] want {c['cause']} got "
                          f"{order[:3]} ({e.subcause}): {text}")
    keys = sorted({k for _, k in tot}, key=lambda k: (k != "all", k))
    print("| slice | A n | A top-1 | A top-2 | B n | B top-1 | B top-2 | dev top-1 | dev top-2 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in keys:
        cells = [k]
        for ff in ("A", "B", "dev"):
            n, a1, a2, _ = tot.get((ff, k), [0, 0, 0, 0])
            cells += ([str(n)] if ff != "dev" else []) + [_pct(a1, n), _pct(a2, n)]
        print("| " + " | ".join(cells) + " |")
    print(f"\nunanswered: A {tot[('A', 'all')][3]}, B {tot[('B', 'all')][3]}")
    if misses:
        print("\n" + "\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
