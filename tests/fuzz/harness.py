"""Fuzzing opdoctor's static check with mutated real libraries — in process, one worker.

Every input is a seed library (built by the Makefile, or a small system library) with a
structure-aware recipe applied (:mod:`tests.fuzz.elfmut`). Each one is checked exactly as a user
would run ``opdoctor check --static -f json FILE``, but through :func:`opdoctor.cli.main` in a
forked worker process (no interpreter start-up per input), and must:

* exit 0, 1 or 2 (never 4, never a traceback);
* print valid JSON (exit 0/1) in which no check is marked ``failed`` (a crash behind exit 1);
  exit 2 is one ``opdoctor: error:`` line;
* finish in under 2 s (re-run once before it counts: the build machine is shared);
* leave the input byte-for-byte unchanged and write nothing next to it;
* never run the library's code (the ``marker`` seed's constructor creates a file when it runs).

The worker is killed and replaced when one input takes longer than the guard, so even a real
hang cannot stall a campaign. Run ``python -m tests.fuzz.harness --count 20000`` (``make fuzz``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import io
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import elfmut

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))
REGRESSIONS = Path(__file__).with_name("regressions.json")
TIME_LIMIT = 2.0  # seconds per input (the budget)
GUARD = 30.0  # the worker is killed after this long on one input
MARKER_ENV = "OPDOCTOR_FUZZ_MARKER"


def _system_lib() -> str:
    for cand in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                 "/lib64/libz.so.1", "/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"):
        if os.path.exists(cand):
            return os.path.realpath(cand)
    return ""


# name → path; the reference op, a stripped one, CUDA with a fatbin, a TF op library, a small
# system library, an ELF32 object, and a library whose constructor leaves a marker file.
SEED_PATHS: dict[str, str] = {
    "myop": str(BUILD / "myop" / "libmyop.so"),
    "stripped": str(BUILD / "fixtures" / "registration" / "stripped.so"),
    "cuda": str(BUILD / "fixtures" / "cuda" / "sm80_only.so"),
    "tf": str(BUILD / "fixtures" / "tensorflow" / "zero_out.so"),
    "syslib": _system_lib(),
    "elf32": str(BUILD / "fixtures" / "integrity" / "elf32.so"),
    "marker": str(BUILD / "fixtures" / "fuzz" / "marker_ctor.so"),
}


def load_seeds(names: list[str] | None = None) -> tuple[dict[str, bytes], dict[str, str]]:
    """(seed bytes by name, reason by name for each seed not available on this machine)."""
    seeds: dict[str, bytes] = {}
    missing: dict[str, str] = {}
    for name, path in SEED_PATHS.items():
        if names and name not in names:
            continue
        if path and os.path.isfile(path):
            seeds[name] = Path(path).read_bytes()
        else:
            missing[name] = f"{path or 'no system library found'} is missing"
    return seeds, missing


@dataclass
class Outcome:
    """What one input did."""

    rc: int
    seconds: float
    problems: list[str] = field(default_factory=list)
    crashed_checks: list[str] = field(default_factory=list)
    modified: bool = False

    @property
    def ok(self) -> bool:
        """True when the input met every rule."""
        return not self.problems


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_file(path: Path, marker: Path) -> Outcome:
    """Run ``opdoctor check --static -f json path`` in this process and judge the result."""
    from opdoctor.cli import main

    before = _digest(path)
    listing = sorted(os.listdir(path.parent))
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "--static", "-f", "json", str(path)])
    seconds = time.perf_counter() - start
    res = Outcome(rc, seconds)
    stdout, stderr = out.getvalue(), err.getvalue()
    if rc not in (0, 1, 2):
        res.problems.append(f"exit {rc}" + (f": {stderr.strip()[:300]}" if stderr.strip()
                                             else ""))
    if "Traceback (most recent call last)" in stdout + stderr:
        res.problems.append("a traceback was printed")
    if rc in (0, 1, 4) and stdout.strip():
        try:
            doc = json.loads(stdout)
            for report in doc["reports"]:
                for c in report["checks"]:
                    if c["status"] == "failed":
                        res.crashed_checks.append(f"{c['name']}: {c['reason']}")
        except (ValueError, KeyError, TypeError) as exc:
            res.problems.append(f"stdout is not a valid JSON report: {exc}")
        res.problems += [f"check crashed: {c}" for c in res.crashed_checks]
    elif rc == 2:
        lines = stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("opdoctor: error:"):
            res.problems.append(f"exit 2 without one error line: {stderr.strip()[:300]}")
    if seconds > TIME_LIMIT:
        res.problems.append(f"took {seconds:.2f} s (limit {TIME_LIMIT:g} s)")
    if _digest(path) != before:
        res.modified = True
        res.problems.append("the input file was modified")
    after = sorted(os.listdir(path.parent))
    if after != listing:
        new = sorted(set(after) - set(listing))
        res.problems.append(f"files appeared next to the input: {new}")
    if marker.exists():
        res.problems.append("the library's constructor ran (marker file written)")
        marker.unlink()
    return res


# ---------------------------------------------------------------------------- worker process
def _worker(conn: Any, workdir: str) -> None:
    """Receive (name, data) pairs, check each, send back the Outcome as a dict."""
    base = Path(workdir)
    marker = base / "marker-written-by-constructor"
    os.environ[MARKER_ENV] = str(marker)
    # Inputs live in their own directory so "nothing written next to them" is observable.
    inputs = base / "inputs"
    inputs.mkdir(exist_ok=True)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        name, data = msg
        path = inputs / f"{name}.so"
        path.write_bytes(data)
        os.chmod(path, 0o755)
        try:
            res = check_file(path, marker)
        except BaseException as exc:  # the harness must report, not die
            res = Outcome(-1, 0.0, [f"harness: {type(exc).__name__}: {exc}"])
        path.unlink()
        conn.send(asdict(res))


class Runner:
    """A forked worker that runs inputs in process; replaced when an input exceeds the guard."""

    def __init__(self, guard: float = GUARD) -> None:
        self.guard = guard
        self.workdir = tempfile.mkdtemp(prefix="opdoctor-fuzz-")
        self._ctx = mp.get_context("fork")
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        import opdoctor.cli  # noqa: F401  (imported before the fork: the worker starts warm)

        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child, self.workdir), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, name: str, data: bytes) -> Outcome:
        """Check one input; a hang past the guard kills the worker and is reported."""
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((name, data))
        if self._conn.poll(self.guard):
            try:
                return Outcome(**self._conn.recv())
            except EOFError:
                pass
            self._proc.join(1)
            return Outcome(-9, 0.0, [f"worker died (exit {self._proc.exitcode})"])
        self._proc.kill()
        self._proc.join()
        self._proc = None
        self.restarts += 1
        return Outcome(-9, self.guard, [f"hang: no result after {self.guard:g} s"])

    def close(self) -> None:
        """Stop the worker and remove its directory."""
        if self._proc is not None and self._proc.is_alive():
            self._conn.send(None)
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------- campaigns
@dataclass
class Case:
    """One input: a seed and the recipe applied to it."""

    seed: str
    recipe: elfmut.Recipe
    label: str = ""


def cases(campaign: str, count: int, seeds: dict[str, bytes]) -> Iterator[Case]:
    """``count`` cases, deterministic in ``campaign``; seeds are taken in turn."""
    names = sorted(seeds)
    for i in range(count):
        rng = random.Random(f"{campaign}:{i}")
        name = names[i % len(names)]
        yield Case(name, elfmut.generate(rng, seeds[name]), f"{campaign}:{i}")


def run_case(runner: Runner, case: Case, seeds: dict[str, bytes]) -> Outcome:
    """Apply the recipe and check the result; a slow input is re-run once before it counts."""
    data = elfmut.apply(seeds[case.seed], case.recipe)
    res = runner.run(case.seed, data)
    if res.seconds > TIME_LIMIT and res.rc >= 0:
        again = runner.run(case.seed, data)
        if again.seconds <= TIME_LIMIT:
            again.problems = [p for p in again.problems if not p.startswith("took ")]
            return again
    return res


def signature(problem: str) -> str:
    """A failure class: the problem with numbers, paths and quoted values removed."""
    text = re.sub(r"0x[0-9a-f]+|\d+", "N", problem)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return text[:160]


@dataclass
class Stats:
    """Campaign statistics."""

    inputs: int = 0
    exits: collections.Counter[int] = field(default_factory=collections.Counter)
    internal_errors: int = 0  # exit 4 or a check marked failed
    hangs: int = 0  # over TIME_LIMIT (twice) or killed by the guard
    modified: int = 0
    constructor_ran: int = 0
    max_seconds: float = 0.0
    max_label: str = ""
    total_seconds: float = 0.0
    failures: list[dict[str, Any]] = field(default_factory=list)
    classes: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, case: Case, res: Outcome) -> None:
        """Count one outcome."""
        self.inputs += 1
        self.exits[res.rc] += 1
        self.total_seconds += res.seconds
        if res.seconds > self.max_seconds:
            self.max_seconds, self.max_label = res.seconds, f"{case.label} ({case.seed})"
        if res.rc == 4 or res.crashed_checks or res.rc == -1:
            self.internal_errors += 1
        if any(p.startswith(("took ", "hang")) for p in res.problems):
            self.hangs += 1
        if res.modified:
            self.modified += 1
        if any("constructor ran" in p for p in res.problems):
            self.constructor_ran += 1
        if res.problems:
            for p in res.problems:
                self.classes[signature(p)] += 1
            self.failures.append({"seed": case.seed, "recipe": case.recipe,
                                  "label": case.label, "problems": res.problems})

    def summary(self) -> str:
        """The statistics, as printed at the end of a campaign."""
        exits = ", ".join(f"{k}: {v}" for k, v in sorted(self.exits.items()))
        lines = [
            f"inputs:            {self.inputs}",
            f"exit codes:        {exits}",
            f"internal errors:   {self.internal_errors} (exit 4 or a check marked failed)",
            f"hangs (> {TIME_LIMIT:g} s):    {self.hangs}",
            f"modified inputs:   {self.modified}",
            f"constructor ran:   {self.constructor_ran}",
            f"max time:          {self.max_seconds:.3f} s ({self.max_label})",
            f"mean time:         {self.total_seconds / max(1, self.inputs):.3f} s",
            f"failing inputs:    {len(self.failures)}",
        ]
        for sig, n in self.classes.most_common(25):
            lines.append(f"  {n:6d}  {sig}")
        return "\n".join(lines)


def campaign(campaign_name: str, count: int, seed_names: list[str] | None = None,
             progress: bool = False, max_seconds: float | None = None) -> Stats:
    """Run ``count`` mutated inputs (or as many as fit in ``max_seconds``) and collect
    statistics; ``Stats.inputs`` says how many really ran."""
    seeds, missing = load_seeds(seed_names)
    for name, why in missing.items():
        print(f"seed {name} skipped: {why}", file=sys.stderr)
    stats = Stats()
    start = time.monotonic()
    with Runner() as runner:
        for case in cases(campaign_name, count, seeds):
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                print(f"time limit reached after {stats.inputs} of {count} inputs",
                      file=sys.stderr)
                break
            stats.add(case, run_case(runner, case, seeds))
            if progress and stats.inputs % 500 == 0:
                rate = stats.inputs / (time.monotonic() - start)
                print(f"  {stats.inputs}/{count} inputs, {len(stats.failures)} failing, "
                      f"{rate:.1f}/s", file=sys.stderr, flush=True)
    return stats


def load_regressions() -> list[dict[str, Any]]:
    """Every input that ever failed: seed name, recipe, what it found."""
    if not REGRESSIONS.exists():
        return []
    data: list[dict[str, Any]] = json.loads(REGRESSIONS.read_text())
    return data


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.fuzz.harness``: run a campaign and print its statistics."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", "-n", type=int, default=20000)
    ap.add_argument("--campaign", default="campaign", help="seed of the random generator")
    ap.add_argument("--seeds", default="", help="comma-separated seed names (default: all)")
    ap.add_argument("--failures", default="", help="write failing inputs (JSON) here")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop after this long and report the inputs that ran")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    stats = campaign(args.campaign, args.count,
                     [s for s in args.seeds.split(",") if s] or None, progress=True,
                     max_seconds=args.max_minutes * 60 if args.max_minutes else None)
    print(stats.summary())
    print(f"wall time:         {time.monotonic() - t0:.0f} s")
    if args.failures:
        Path(args.failures).write_text(json.dumps(stats.failures, indent=1) + "\n")
        print(f"failing inputs written to {args.failures}")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
