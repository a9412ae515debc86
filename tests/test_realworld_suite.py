"""The real-world suite's small cases in ``make test`` (issue #14).

The torch cases of ``benchmarks/realworld/cases.toml`` listed in its ``make_test`` (real PyPI
wheels, about 99 MB together) are installed by ``make realworld-small`` (``run.py
--install-only --set make-test``, part of ``make fixtures``). Each test here scores one case
with run.py's own functions, as ``make realworld`` does: the framework's own action runs in a
child and must fail as the case says (a healthy control must run its op), ``opdoctor check -f
json`` must name the true cause with the case's keyword in its evidence (a healthy control: exit
0, no error finding), and ``opdoctor explain`` on the recorded text must name it too. A case
whose wheels could not be downloaded is skipped with the reason run.py recorded.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests import torchfork
from tests.conftest import BUILD, ROOT

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

RW = ROOT / "benchmarks" / "realworld"
CASES_TOML = RW / "cases.toml"
# The bar of the issue: the cases make test runs total under about 100 MB of wheels.
MAX_MB = 100.0
# explain misses that the full suite (RESULTS.md) shows too; strict: a fix must drop the entry.
KNOWN_EXPLAIN_MISSES: dict[str, str] = {}


def _load_run() -> ModuleType:
    """benchmarks/realworld/run.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("realworld_run", RW / "run.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    mod.set_build(BUILD)  # the tests' build directory (OPDOCTOR_BUILD), as the Makefile's
    return mod


RUN = _load_run()
ALL = {c.name: c for c in RUN.load_cases(CASES_TOML)}
NAMES = RUN.load_make_test_set(CASES_TOML)


def test_the_make_test_set_is_small_torch_cases() -> None:
    """The set is torch cases of the suite whose distinct downloads stay within the budget
    (cases with the same wheels count once), with failures and healthy controls both."""
    assert NAMES and len(NAMES) == len(set(NAMES))
    cases = [ALL[n] for n in NAMES]
    assert all(c.framework == "torch" for c in cases)
    downloads = {(c.packages, c.extra, c.pip_args): c.size_mb for c in cases}
    assert 0 < sum(downloads.values()) <= MAX_MB, downloads
    assert any(c.cause is None for c in cases) and any(c.cause is not None for c in cases)
    assert set(KNOWN_EXPLAIN_MISSES) <= set(NAMES)


def _forked(cmd: list[str], timeout: float, env: dict[str, str] | None,
            cwd: Path | None) -> tuple[int | None, str, float]:
    """run.py's ``run`` for the case's action (``python -c "import torch, …"``), forked from a
    zygote that already imported torch (tests/torchfork.py: a real separate process, the same
    start-up environment); any other command runs as run.py runs it."""
    if cmd[:1] != [sys.executable] or cmd[1:2] != ["-c"] or len(cmd) != 3:
        return RUN.run(cmd, timeout, env, cwd)
    t0 = time.monotonic()
    try:
        p = torchfork.run_python(cmd[2], env=env, cwd=cwd, timeout=timeout, merge_stderr=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, time.monotonic() - t0
    return p.returncode, p.stdout, time.monotonic() - t0


def _in_process(args: list[str], timeout: float, env: dict[str, str] | None = None
                ) -> tuple[int | None, str, float]:
    """run.py's ``opdoctor`` (a ``python -m opdoctor`` child) run in this process instead,
    with the job's environment as its own, so that this module's probes fork from the zygote
    it keeps (conftest.shared_zygotes): the same command line, the same report."""
    import contextlib
    import io
    import os

    from opdoctor.cli import main

    out = io.StringIO()
    saved = dict(os.environ)
    t0 = time.monotonic()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update({k: v for k, v in env.items() if k != "PYTHONPATH"})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(list(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue(), time.monotonic() - t0


def _installed(name: str) -> object:
    """The case, installed; skipped with run.py's reason when its wheels could not be fetched."""
    case = ALL[name]
    reason = RUN.skip_reason_file(case)
    if not RUN.is_ready(case) and reason.exists():
        pytest.skip(f"real wheels of {name} not installed here: {reason.read_text().strip()}")
    assert RUN.is_ready(case), (
        f"{case.dir} is incomplete: run `make realworld-small` (make test does)")
    return case


@pytest.mark.probe
@pytest.mark.parametrize("name", NAMES)
def test_realworld_case(name: str, tmp_path: Path) -> None:
    """One case as ``make realworld`` scores it (run.py's functions; the per-case files go to
    tmp_path so that the suite's own records under build/realworld are left alone)."""
    case = _installed(name)
    res = RUN.Result(name, ", ".join(case.packages), case.cause, case.subcause)
    text = RUN.reproduce(case, res, tmp_path, runner=_forked)
    # The framework itself fails this way (or, for a healthy control, runs the op).
    assert res.reproduced, f"{res.note} (rc={res.action_rc}):\n{text}"
    RUN.score_check(case, res, tmp_path, op=_in_process)
    check_json = (tmp_path / "check.json").read_text()[-3000:]
    if case.cause is None:
        assert res.check_ok == "right", f"healthy package flagged: {res.check_codes}\n{check_json}"
        return
    assert (res.check_cause, res.check_ok) == (case.cause, "right"), (
        f"check: cause {res.check_cause} ({res.check_ok}), want {case.cause} with "
        f"{case.subcause!r}; verdict {res.check_verdict!r}\n{check_json}")
    RUN.score_explain(case, res, text, tmp_path, op=_in_process)
    miss = KNOWN_EXPLAIN_MISSES.get(name)
    if miss:
        # Strict: once explain gets it right, this fails so that the entry is removed.
        assert res.explain_ok != "right", f"{name}: explain is right now; drop it from the misses"
        pytest.xfail(miss)
    assert (res.explain_cause, res.explain_ok) == (case.cause, "right"), (
        f"explain: cause {res.explain_cause} ({res.explain_ok}), want {case.cause} with "
        f"{case.subcause!r}\n{(tmp_path / 'explain.json').read_text()[-2000:]}")
