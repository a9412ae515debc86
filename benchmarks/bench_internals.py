"""Two internals the suite and the CLI lean on, each side by side with what it replaced.

* The JSON report's text: ``report.jsontext.dumps`` against ``json.dumps(doc, indent=2)`` (the
  same bytes) on the report of a static walk of numpy's site (22 reports, ~5 MB), or of the
  reference operator where that site is not built.
* The target interpreter's facts for jobs that differ only in PYTHONPATH: ten jobs inspected
  through one child without PYTHONPATH (``facts.interp``'s derivation) against one child per
  job, as before.

Usage: python benchmarks/bench_internals.py [--repeat N]. Ratios are medians over medians of
the same run; no bar of issue #21 is one of these (they are "for scale").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _bench import ROOT, Row, header, side_by_side, table


def _report() -> tuple[str, object]:
    """(what, the JSON document) of a real report: numpy's site walked, else libmyop.so."""
    from opdoctor.cli import main

    site = ROOT / "build" / "fixtures" / "healthy" / "numpy-2.4.6" / "site"
    args = (["check", "--static", "--env", f"PYTHONPATH={site}", str(site)] if site.is_dir()
            else ["check", "--static", str(ROOT / "build" / "myop" / "libmyop.so")])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*args, "-f", "json"])
    text = out.getvalue()
    what = (f"a static walk of numpy's site, {len(text) >> 20} MB" if site.is_dir()
            else "libmyop.so's report")
    return what, json.loads(text)


def _timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def json_row(repeat: int) -> Row:
    """jsontext.dumps against json.dumps(indent=2) on one real report."""
    from opdoctor.report import jsontext

    what, doc = _report()
    assert jsontext.dumps(doc) == json.dumps(doc, indent=2)
    got = side_by_side({"ours": lambda: _timed(lambda: jsontext.dumps(doc)),
                        "std": lambda: _timed(lambda: json.dumps(doc, indent=2))}, repeat)
    return Row(f"JSON report text ({what})", "(for scale)", got["ours"],
               baseline="json.dumps(indent=2)", base_samples=got["std"])


def interp_row(repeat: int, jobs: int = 10) -> Row:
    """Ten jobs' interpreter facts: derived from one child against a child each."""
    from opdoctor.facts import interp

    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp:
        alias = Path(tmp) / "python"  # another path than this process's: no in-process answer
        alias.symlink_to(sys.executable)
        dirs = [Path(tmp) / f"job{i}" for i in range(jobs)]
        for d in dirs:
            d.mkdir()
        envs = [{**base, "PYTHONPATH": str(d)} for d in dirs]

        def derived() -> float:
            interp._ANSWERS.clear()
            return _timed(lambda: [interp.inspect_interpreter(str(alias), env=e) for e in envs])

        def child_each() -> float:
            return _timed(lambda: [interp._run_script(str(alias), 30, e) for e in envs])

        got = side_by_side({"derived": derived, "each": child_each}, repeat)
    return Row(f"interpreter facts for {jobs} jobs differing in PYTHONPATH", "(for scale)",
               got["derived"], baseline="a child per job", base_samples=got["each"])


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"## Internals — {header(args.repeat)}\n")
    print(table([json_row(args.repeat), interp_row(args.repeat)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
