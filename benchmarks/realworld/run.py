#!/usr/bin/env python3
"""Real-world suite: opdoctor against real PyPI wheels that fail (or work) for real.

For each case of ``cases.toml`` the runner

1. installs the case's wheels with ``pip install --no-deps --target build/realworld/<case>/site``
   (reused when already there); torch cases run beside the pinned torch of the interpreter that
   runs this script, TensorFlow cases beside ``build/venv-tf`` (``tensorflow-cpu``, created once);
2. runs the framework's own action in a child process (``PYTHONPATH=<site>``) and records the
   last lines of its output in ``build/realworld/<case>/error.txt``; a failure case must fail,
   a healthy control must succeed (its action runs one op);
3. runs ``opdoctor check -f json`` on the case's library or package and ``opdoctor explain -f
   json`` on the recorded error text, and scores both against the case's true cause and
   the keyword the evidence must mention;
4. prints a table and writes ``build/realworld/results.json`` and
   ``benchmarks/realworld/RESULTS.md``.

``--quick`` keeps the cases whose wheels total less than 100 MB; ``--case NAME`` runs
one (repeatable); ``--set make-test`` selects the small torch cases that ``make test`` installs
(``make_test`` in cases.toml) and tests/test_realworld_suite.py scores. ``--install-only``
installs (and prepares) the selected cases and scores nothing: ``make realworld-small``. Run it
with the interpreter of opdoctor's venv: ``make realworld``. The build directory is ``build/``
of this checkout, or ``$OPDOCTOR_BUILD``, or ``--build DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD") or ROOT / "build") / "realworld"
SRC = ROOT / "src"
TF_VENV = BUILD.parent / "venv-tf"
BUILD_DEFAULT = BUILD
TF_SPEC = "tensorflow-cpu==2.21.0"
QUICK_MB = 100.0
ERROR_LINES = 200
# An alternative entry script for opdoctor (set by --entry: A/B runs of a proposed fix).
ENTRY: list[str] = ["-m", "opdoctor"]
# Suffix of the per-case files (error, check, explain) of an --entry run, so that it does not
# overwrite the plain run's files.
SUFFIX: list[str] = [""]
# Extra pip options of an --install-only run (make test): give up on a dead network quickly.
PIP_OPTS: list[str] = []
# --install-only stops trying after this many failed installs in a row (the network is down:
# each try would wait for pip's timeouts); the rest get a skip reason that says so.
GIVE_UP_AFTER = 2


@dataclass(frozen=True)
class Case:
    """One row of cases.toml: what to install, how it fails, and what the real cause is."""

    name: str
    framework: str  # "torch" | "tensorflow"
    packages: tuple[str, ...]  # the wheels under test, pip requirement strings
    action: str  # Python source run by the framework's interpreter (the failing action)
    expect: str  # "fail" | "ok"
    cause: int | None  # true cause 1-5; None for a healthy control
    subcause: str  # keyword the evidence must mention (case-insensitive); "" = none
    why: str
    fix: str
    check_package: str = ""  # opdoctor check --package NAME ...
    check_so: str = ""  # ... or a library path relative to the case directory
    extra: tuple[str, ...] = ()  # helper wheels installed too (e.g. pillow for torchvision)
    pip_args: tuple[str, ...] = ()  # e.g. --platform for a foreign-architecture wheel
    prepare: str = ""  # "truncate:<src>:<dst>:<bytes>" | "shadow:<pkg>" | "build-myop"
    cwd: str = ""  # the job's working directory, relative to the case directory
    timeout: float = 180.0
    size_mb: float = 0.0  # total size of the wheels (measured), for --quick
    refs: tuple[str, ...] = ()
    error_regex: str = ""  # the failure text must match this

    @property
    def dir(self) -> Path:
        """The case's build directory."""
        return BUILD / self.name

    @property
    def site(self) -> Path:
        """The --target directory the wheels are installed into."""
        return self.dir / "site"


@dataclass
class Result:
    """What happened for one case; one row of the table and of results.json."""

    case: str
    package: str
    true_cause: int | None
    subcause: str
    reproduced: bool = False
    action_rc: int | None = None
    check_cause: int | None = None
    check_codes: list[str] = field(default_factory=list)
    check_verdict: str = ""
    check_ok: str = "-"  # right | cause-only | wrong | timeout | error
    check_exit: int | None = None
    check_seconds: float = 0.0
    probe_seconds: float | None = None
    explain_cause: int | None = None
    explain_subcause: str = ""
    explain_ok: str = "-"
    explain_seconds: float = 0.0
    note: str = ""


def set_build(build: Path) -> None:
    """Use ``build`` (a Makefile's BUILD) instead of this checkout's build/ directory."""
    global BUILD, TF_VENV
    BUILD = Path(build).resolve() / "realworld"
    TF_VENV = BUILD.parent / "venv-tf"


def load_make_test_set(path: Path) -> list[str]:
    """The names of the cases that ``make test`` installs and scores (``make_test``)."""
    return list(tomllib.loads(path.read_text()).get("make_test", []))


def load_cases(path: Path) -> list[Case]:
    """Read and validate cases.toml."""
    data = tomllib.loads(path.read_text())
    cases = []
    for raw in data["case"]:
        raw = dict(raw)
        raw.setdefault("cause", None)
        for key in ("packages", "extra", "pip_args", "refs"):
            raw[key] = tuple(raw.get(key, ()))
        case = Case(**raw)
        if case.framework not in ("torch", "tensorflow"):
            raise SystemExit(f"{case.name}: framework must be torch or tensorflow")
        if case.expect not in ("fail", "ok") or (case.expect == "ok") != (case.cause is None):
            raise SystemExit(f"{case.name}: expect=ok needs cause absent, expect=fail a cause")
        if bool(case.check_package) == bool(case.check_so):
            raise SystemExit(f"{case.name}: exactly one of check_package / check_so")
        cases.append(case)
    names = [c.name for c in cases]
    if len(names) != len(set(names)):
        raise SystemExit("duplicate case names")
    unknown = set(data.get("make_test", [])) - set(names)
    if unknown:
        raise SystemExit(f"make_test names unknown case(s): {', '.join(sorted(unknown))}")
    return cases


def python_for(case: Case) -> Path:
    """The interpreter that runs the case: opdoctor's venv (torch) or build/venv-tf."""
    if case.framework == "tensorflow":
        return TF_VENV / "bin" / "python"
    return Path(sys.executable)


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> tuple[int | None, str, float]:
    """Run ``cmd``; return (exit code or None on timeout, stdout+stderr, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout, env=env, cwd=cwd)
        return p.returncode, p.stdout, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, time.monotonic() - t0


# run()'s signature: (command, timeout, environment, working directory) -> (exit code or None
# on timeout, stdout+stderr, seconds).
Runner = Callable[[list[str], float, dict[str, str] | None, Path | None],
                  tuple[int | None, str, float]]


def ensure_tf_venv() -> None:
    """Create build/venv-tf with tensorflow-cpu once (a 274 MB wheel)."""
    py = TF_VENV / "bin" / "python"
    marker = TF_VENV / ".installed"
    if marker.exists():
        return
    if not py.exists():
        subprocess.run(["python3", "-m", "venv", str(TF_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", TF_SPEC], check=True)
    marker.write_text(TF_SPEC + "\n")


def _marker_text(case: Case) -> str:
    """What ``site/.installed`` holds once the case's wheels are installed."""
    return "\n".join(list(case.packages) + list(case.extra) + list(case.pip_args)) + "\n"


def install(case: Case) -> None:
    """pip install the case's wheels (--no-deps) into its --target directory, once."""
    specs = list(case.packages) + list(case.extra)
    marker = case.site / ".installed"
    want = _marker_text(case)
    if marker.exists() and marker.read_text() == want:
        return
    if case.site.exists():
        shutil.rmtree(case.site)
    case.site.mkdir(parents=True)
    if not specs:  # a local case (build-myop): nothing to download
        marker.write_text(want)
        return
    cmd = [str(python_for(case)), "-m", "pip", "install", "-q", "--no-deps",
           "--disable-pip-version-check", *PIP_OPTS, "--target", str(case.site),
           *case.pip_args, *specs]
    rc, out, _ = run(cmd, timeout=1800)
    if rc != 0:
        raise RuntimeError(f"pip install failed for {case.name}:\n{out[-3000:]}")
    marker.write_text(want)


def build_myop(case: Case) -> None:
    """Build the bundled reference operator package (native/myop) into the case's site."""
    pkg = case.site / "myop"
    lib = pkg / "libmyop.so"
    if lib.exists():
        return
    pkg.mkdir(parents=True, exist_ok=True)
    code = ("import torch, sysconfig\nfrom torch.utils import cpp_extension as c\n"
            "print(' '.join('-I'+p for p in c.include_paths()))\n"
            "print(c.library_paths()[0]); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
    inc, libdir, abi = subprocess.run([sys.executable, "-c", code], check=True, text=True,
                                      stdout=subprocess.PIPE).stdout.split("\n")[:3]
    src = ROOT / "native" / "myop"
    obj = case.dir / "weighted_sum.o"
    subprocess.run(["g++", "-O1", "-fPIC", "-std=c++20", *inc.split(),
                    f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-c", str(src / "weighted_sum.cpp"),
                    "-o", str(obj)], check=True)
    subprocess.run(["g++", "-shared", "-o", str(lib), str(obj), f"-L{libdir}", "-lc10",
                    "-ltorch_cpu"], check=True)
    shutil.copy(src / "python" / "myop" / "__init__.py", pkg / "__init__.py")


def prepare(case: Case) -> None:
    """Apply the case's preparation step (a truncated copy, a source-tree shadow, a build)."""
    if not case.prepare:
        return
    kind, _, arg = case.prepare.partition(":")
    if kind == "build-myop":
        build_myop(case)
    elif kind == "truncate":
        src, dst_rel, nbytes = arg.split(":")
        out = case.dir / dst_rel
        if out.exists() and out.stat().st_size == int(nbytes):
            return  # already cut (idempotent: a complete case directory is left alone)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(case.site / src, "rb") as f:
            out.write_bytes(f.read(int(nbytes)))
    elif kind == "shadow":
        # A source checkout: the package's .py files, no compiled library, as the job's cwd.
        pkg = arg
        checkout = case.dir / "checkout" / pkg
        if not checkout.exists():
            for p in (case.site / pkg).rglob("*.py"):
                q = checkout / p.relative_to(case.site / pkg)
                q.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(p, q)
    else:
        raise SystemExit(f"{case.name}: unknown prepare {case.prepare!r}")


def is_ready(case: Case) -> bool:
    """Whether the case's wheels are installed and its ``prepare`` step is done (read only)."""
    marker = case.site / ".installed"
    try:
        if marker.read_text() != _marker_text(case):
            return False
    except OSError:
        return False
    kind, _, arg = case.prepare.partition(":")
    if kind == "build-myop":
        return (case.site / "myop" / "libmyop.so").exists()
    if kind == "truncate":
        _src, dst_rel, nbytes = arg.split(":")
        out = case.dir / dst_rel
        return out.exists() and out.stat().st_size == int(nbytes)
    if kind == "shadow":
        return (case.dir / "checkout" / arg).is_dir()
    return True


def skip_reason_file(case: Case) -> Path:
    """Where ``--install-only`` records why a case could not be installed (the Makefile's
    ``build/fixtures/skipped/`` convention); its test skips with this text."""
    return BUILD.parent / "fixtures" / "skipped" / f"realworld-{case.name}.txt"


@contextlib.contextmanager
def case_lock(case: Case) -> Iterator[None]:
    """An exclusive lock for installing one case (two makes, or make test beside make
    realworld). The lock file sits beside the case directories, never inside one."""
    locks = BUILD / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{case.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def install_only(cases: list[Case]) -> int:
    """Install and prepare ``cases`` (no reproduction, no scoring). A case already complete is
    not touched; one that cannot be installed (no network, PyPI down) gets a skip reason file
    and the run still succeeds, so ``make test`` goes on and the case's test skips saying why."""
    PIP_OPTS[:] = ["--timeout", "30", "--retries", "1"]
    failed: list[str] = []  # consecutive failures
    for case in cases:
        reason = skip_reason_file(case)
        if is_ready(case):
            reason.unlink(missing_ok=True)
            print(f"== {case.name}: ready", file=sys.stderr, flush=True)
            continue
        if case.framework == "tensorflow":
            raise SystemExit(f"{case.name}: --install-only installs torch cases only")
        with case_lock(case):
            if is_ready(case):  # another process finished it while we waited
                reason.unlink(missing_ok=True)
                continue
            reason.parent.mkdir(parents=True, exist_ok=True)
            if len(failed) >= GIVE_UP_AFTER:
                last = skip_reason_file(next(c for c in cases if c.name == failed[-1]))
                reason.write_text(f"{case.name}: not tried after {len(failed)} failed installs "
                                  f"in a row; the last: {last.read_text().strip()}\n")
                continue
            print(f"== {case.name}: installing", file=sys.stderr, flush=True)
            case.dir.mkdir(parents=True, exist_ok=True)
            try:
                install(case)
                prepare(case)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
                # pip's ERROR lines say why; its warnings are noise here.
                lines = [ln for ln in lines if ln.startswith("ERROR")] or lines[-3:]
                reason.write_text(f"{case.name}: install failed: {' | '.join(lines)[:400]}\n")
                print(f"   {reason.read_text().strip()}", file=sys.stderr, flush=True)
                failed.append(case.name)
                continue
            failed.clear()
            reason.unlink(missing_ok=True)
    return 0


def case_env(case: Case) -> dict[str, str]:
    """The job's environment: the case's site on PYTHONPATH, nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(case.site)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    return env


def reproduce(case: Case, res: Result, out_dir: Path | None = None,
              runner: Runner = run) -> str:
    """Run the framework's own action; record and return the last lines of its output.
    The per-case files go to ``out_dir`` (default: the case directory). ``runner`` runs it
    (:func:`run`'s signature; the tests pass one that forks it from an interpreter that already
    imported torch)."""
    cwd = case.dir / case.cwd if case.cwd else case.dir
    code = case.action.replace("{case}", str(case.dir)).replace("{site}", str(case.site))
    rc, out, _ = runner([str(python_for(case)), "-c", code], case.timeout, case_env(case), cwd)
    res.action_rc = rc
    if rc is not None and rc < 0:
        # What a shell prints for a child killed by a signal (e.g. SIGBUS on a truncated library).
        out = out.rstrip() + f"\n{signal.strsignal(-rc) or f'signal {-rc}'} (core dumped)\n"
    elif rc is None:
        out = out.rstrip() + f"\n(timed out after {case.timeout:.0f} s)\n"
    tail = "\n".join(out.rstrip().splitlines()[-ERROR_LINES:])
    (out_dir or case.dir).joinpath(f"error{SUFFIX[0]}.txt").write_text(tail + "\n")
    if case.expect == "ok":
        res.reproduced = rc == 0
    else:
        res.reproduced = rc != 0 and (not case.error_regex
                                       or re.search(case.error_regex, out) is not None)
    if not res.reproduced:
        res.note = f"action did not {'succeed' if case.expect == 'ok' else 'fail as expected'}"
    return tail


def opdoctor(args: list[str], timeout: float, env: dict[str, str] | None = None
             ) -> tuple[int | None, str, float]:
    """Run this worktree's opdoctor with the venv's interpreter."""
    e = dict(env if env is not None else os.environ)
    e["PYTHONPATH"] = str(SRC) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return run([sys.executable, *ENTRY, *args], timeout=timeout, env=e)


# opdoctor()'s signature: (arguments, timeout, environment) -> (exit code or None on timeout,
# stdout+stderr, seconds).
OpRunner = Callable[..., tuple[int | None, str, float]]


def mentions(blob: str, keyword: str) -> bool:
    """Whether ``keyword`` (case-insensitive; '|' separates alternatives) occurs in ``blob``."""
    if not keyword:
        return True
    low = blob.lower()
    return any(k.strip().lower() in low for k in keyword.split("|"))


def score_check(case: Case, res: Result, out_dir: Path | None = None,
                op: OpRunner = opdoctor) -> None:
    """Run ``opdoctor check -f json`` (``op``: :func:`opdoctor`'s signature; the tests pass one
    that runs it in their own process) and score its diagnosis against the true cause."""
    args = ["check", "-f", "json", "--timeout", "60"]
    if case.framework == "tensorflow":
        args += ["--python", str(python_for(case))]
    args += ["--env", f"PYTHONPATH={case.site}"]
    if case.cwd:
        args += ["--cwd", str(case.dir / case.cwd)]
    if case.check_package:
        args += ["--package", case.check_package]
    else:
        args += [str(case.dir / case.check_so)]
    env = case_env(case)
    rc, out, secs = op(args, timeout=max(case.timeout, 200.0), env=env)
    res.check_seconds = round(secs, 1)
    res.check_exit = rc
    (out_dir or case.dir).joinpath(f"check{SUFFIX[0]}.json").write_text(out)
    if rc is None:
        res.check_ok = "timeout"
        return
    try:
        doc = json.loads(out[out.index("{"):])
    except ValueError:
        res.check_ok = "error"
        res.note += f" check rc={rc}: {out.strip().splitlines()[-1][:200] if out.strip() else ''}"
        return
    reports = doc.get("reports", [])
    blob_parts: list[str] = []
    verdicts: list[tuple[int, str]] = []
    for rep in reports:
        diag = rep.get("diagnosis") or {}
        for f in rep.get("findings", []):
            if f["severity"] == "error" or f["code"] in diag.get("root_findings", []):
                res.check_codes.append(f["code"])
            blob_parts += [f.get("message", ""), f.get("fix", ""), *f.get("evidence", [])]
        if diag.get("cause"):  # 0 / null: no problem found
            verdicts.append((int(diag["cause"]), diag.get("summary", "")))
            blob_parts.append(diag.get("summary", ""))
        ps = probe_seconds(rep)
        if ps is not None:
            res.probe_seconds = ps
    res.check_codes = sorted(set(res.check_codes))
    if verdicts:
        res.check_cause, res.check_verdict = verdicts[0]
        res.check_verdict = res.check_verdict[:240]
    blob = "\n".join(blob_parts)
    if case.cause is None:
        # Issue #14's bar for a package that loads and runs: exit 0 and no error finding
        # (a warning-only report, "No error — N warning(s)", is shown as "warn").
        errors = any(f["severity"] == "error" for rep in reports for f in rep.get("findings", []))
        clean = doc.get("exit_code") == 0 and not errors
        res.check_ok = "right" if clean else "wrong"
    elif res.check_cause == case.cause:
        res.check_ok = "right" if mentions(blob, case.subcause) else "cause-only"
    else:
        res.check_ok = "wrong"


def probe_seconds(report: dict[str, Any]) -> float | None:
    """The load probe's own run time (sections.probe.seconds; the probe check's entry in
    ``checks`` only times reading the cached result), less the time it waited for opdoctor's
    analysis to send it the library (that is opdoctor's time, which the bar measures)."""
    probe = (report.get("sections") or {}).get("probe") or {}
    if probe.get("ran") and probe.get("seconds") is not None:
        waited = float(probe.get("waited_for_opdoctor") or 0.0)
        return round(float(probe["seconds"]) - waited, 1)
    return None


def score_explain(case: Case, res: Result, text: str, out_dir: Path | None = None,
                  op: OpRunner = opdoctor) -> None:
    """Run ``opdoctor explain -f json`` (``op``: as for :func:`score_check`) on the recorded
    error text and score it."""
    if case.cause is None:
        return
    _rc, out, secs = op(["explain", "-f", "json", text], timeout=120)
    res.explain_seconds = round(secs, 1)
    (out_dir or case.dir).joinpath(f"explain{SUFFIX[0]}.json").write_text(out)
    try:
        doc = json.loads(out[out.index("{"):])
    except ValueError:
        res.explain_ok = "wrong"
        return
    res.explain_cause = doc.get("cause")
    res.explain_subcause = str(doc.get("subcause") or "")
    blob = json.dumps(doc)
    if res.explain_cause == case.cause:
        res.explain_ok = "right" if mentions(blob, case.subcause) else "cause-only"
    else:
        res.explain_ok = "wrong"


def run_case(case: Case) -> Result:
    """Install, reproduce, check and explain one case."""
    res = Result(case.name, ", ".join(case.packages) or "(local)", case.cause, case.subcause)
    case.dir.mkdir(parents=True, exist_ok=True)
    if case.framework == "tensorflow":
        ensure_tf_venv()
    try:
        with case_lock(case):  # make test may be installing the same case (--install-only)
            install(case)
            prepare(case)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        res.note = f"setup failed: {str(e)[-300:]}"
        return res
    text = reproduce(case, res)
    score_check(case, res)
    score_explain(case, res, text)
    return res


def table(results: list[Result]) -> list[str]:
    """Markdown table rows plus totals."""
    rows = ["| case | package | true | check | ok | explain | ok | check s | probe s | codes |",
            "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: | --- |"]
    for r in results:
        true = "healthy" if r.true_cause is None else f"{r.true_cause} ({r.subcause})"
        chk = (r.check_ok if r.check_ok in ("timeout", "error", "-")
               else "clean" if r.check_cause is None
               else "warn" if r.true_cause is None and r.check_ok == "right"
               else str(r.check_cause))
        exp = "-" if r.true_cause is None else str(r.explain_cause)
        rows.append(f"| {r.case}{'' if r.reproduced else ' (NOT REPRODUCED)'} | {r.package} | "
                    f"{true} | {chk} | {r.check_ok} | {exp} | {r.explain_ok} | "
                    f"{r.check_seconds} | {r.probe_seconds if r.probe_seconds is not None else '-'}"
                    f" | {' '.join(r.check_codes)} |")
    fails = [r for r in results if r.true_cause is not None]
    ok = [r for r in results if r.true_cause is None]
    def n(rs: list[Result], attr: str, v: str) -> int:
        return sum(1 for r in rs if getattr(r, attr) == v)
    rows.append("")
    rows.append(f"Failures: {len(fails)} — check right "
                f"{n(fails, 'check_ok', 'right')}, "
                f"cause only {n(fails, 'check_ok', 'cause-only')}, "
                f"wrong {n(fails, 'check_ok', 'wrong')}, "
                f"timeout {n(fails, 'check_ok', 'timeout')}, "
                f"analysis error {n(fails, 'check_ok', 'error')}; "
                f"explain right {n(fails, 'explain_ok', 'right')}, cause only "
                f"{n(fails, 'explain_ok', 'cause-only')}, "
                f"wrong {n(fails, 'explain_ok', 'wrong')}.")
    rows.append(f"Healthy controls: {len(ok)} — clean {n(ok, 'check_ok', 'right')}, "
                f"flagged {n(ok, 'check_ok', 'wrong')}, timeout {n(ok, 'check_ok', 'timeout')}, "
                f"analysis error {n(ok, 'check_ok', 'error')}.")
    rows.append(f"Not reproduced: {sum(1 for r in results if not r.reproduced)}. "
                f"Total check time {sum(r.check_seconds for r in results):.0f} s.")
    return rows


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse flags, run the selected cases, print and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only cases under {QUICK_MB:.0f} MB")
    ap.add_argument("--case", action="append", default=[], help="run this case (repeatable)")
    ap.add_argument("--set", choices=["make-test"], help="make-test: the cases make test "
                    "installs and scores (make_test in cases.toml)")
    ap.add_argument("--install-only", action="store_true", help="install and prepare the "
                    "selected cases, score nothing; a failed download leaves a skip reason in "
                    "BUILD/fixtures/skipped/realworld-<case>.txt and exits 0")
    ap.add_argument("--build", help="the build directory (default: $OPDOCTOR_BUILD or build/)")
    ap.add_argument("--cases", default=str(HERE / "cases.toml"))
    ap.add_argument("--no-write", action="store_true", help="do not rewrite RESULTS.md")
    ap.add_argument("--entry", help="run opdoctor through this script instead of -m opdoctor "
                    "(e.g. fastseg_entry.py, the proposed pychain speed fix)")
    ap.add_argument("--results", default=str(BUILD / "results.json"), help="results file")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite RESULTS.md from the results file (after --case reruns)")
    a = ap.parse_args(argv)
    if a.build:
        set_build(Path(a.build))
        if a.results == str(BUILD_DEFAULT / "results.json"):
            a.results = str(BUILD / "results.json")
    if a.report_only:
        data = json.loads(Path(a.results).read_text())
        order = [c.name for c in load_cases(Path(a.cases))]
        rs = sorted((Result(**r) for r in data["results"]),
                    key=lambda r: order.index(r.case) if r.case in order else len(order))
        for r in rs:  # re-read the probe's time from the stored reports
            f = BUILD / r.case / "check.json"
            try:
                reps = json.loads(f.read_text())["reports"]
            except (OSError, ValueError, KeyError):
                continue
            times = [t for t in (probe_seconds(rep) for rep in reps) if t is not None]
            r.probe_seconds = times[0] if times else None
        write_results_md(table(rs), data["date"])
        print("\n".join(table(rs)))
        return 0
    if a.entry:
        ENTRY[:] = [str(Path(a.entry).resolve())]
        SUFFIX[0] = "-" + Path(a.entry).stem
    cases = load_cases(Path(a.cases))
    if a.case:
        unknown = set(a.case) - {c.name for c in cases}
        if unknown:
            raise SystemExit(f"unknown case(s): {', '.join(sorted(unknown))}")
        cases = [c for c in cases if c.name in a.case]
    if a.set == "make-test":
        chosen = set(load_make_test_set(Path(a.cases)))
        cases = [c for c in cases if c.name in chosen]
    if a.quick:
        cases = [c for c in cases if c.size_mb < QUICK_MB]
    BUILD.mkdir(parents=True, exist_ok=True)
    if a.install_only:
        return install_only(cases)
    results = []
    for case in cases:
        print(f"== {case.name}", file=sys.stderr, flush=True)
        r = run_case(case)
        print(f"   reproduced={r.reproduced} check={r.check_cause}/{r.check_ok} "
              f"({r.check_seconds}s) explain={r.explain_cause}/{r.explain_ok} {r.note}",
              file=sys.stderr, flush=True)
        results.append(r)
    rows = table(results)
    print("\n".join(rows))
    out = Path(a.results)
    if a.case and out.exists():  # merge a partial run into the full results
        old = {r["case"]: r for r in json.loads(out.read_text())["results"]}
        old.update({r.case: asdict(r) for r in results})
        merged = list(old.values())
    else:
        merged = [asdict(r) for r in results]
    today = _dt.date.today().isoformat()
    out.write_text(json.dumps({"date": today, "results": merged}, indent=1))
    if not a.no_write and not a.case and not a.quick and not a.entry:
        write_results_md(rows, today)
    return 0 if all(r.reproduced for r in results) else 1


def write_results_md(rows: list[str], date: str) -> None:
    """benchmarks/realworld/RESULTS.md: the table with its date and opdoctor's commit."""
    (HERE / "RESULTS.md").write_text(
        f"# Real-world suite results — {date}\n\nopdoctor at `{git_rev()}`, torch "
        f"2.13.0+cpu beside, TensorFlow {TF_SPEC}. Generated by `make realworld`.\n\n"
        "`ok`: right = verdict cause and subcause keyword; cause-only = cause right, "
        "keyword missing from the evidence; for healthy controls right = exit 0 and no error "
        "finding (`clean`: no finding above info; `warn`: warnings only). "
        "`check s`: wall-clock seconds of `opdoctor check` (time limit 200 s, 300 s for "
        "torchaudio); `probe s`: the load probe's own time from the report.\n\n"
        + "\n".join(rows) + "\n")


def git_rev() -> str:
    """The short commit of this worktree."""
    p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                       stdout=subprocess.PIPE, text=True)
    return p.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
