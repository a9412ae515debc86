"""Shared test helpers: locate the fixtures the Makefile built (never mocked).

A fixture that the Makefile could not build on this machine leaves a reason file under
build/fixtures/skipped/; the test is then skipped with that reason printed. A fixture that is
simply missing fails the test: run `make fixtures` (make test does).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))
FIX = BUILD / "fixtures"
SKIP = FIX / "skipped"
REFERENCE = BUILD / "myop" / "libmyop.so"
PKG_DIR = BUILD / "pkg"
# Schema-parse verdicts are cached; keep the tests' cache inside the build tree. Tests of the
# start-up caches (under $XDG_CACHE_HOME) give their children this one too: a cold schema cache
# imports torch once (~1.1 s), which is not what they test.
os.environ.setdefault("OPDOCTOR_CACHE_DIR", str(BUILD / "cache"))
SCHEMA_CACHE = os.environ["OPDOCTOR_CACHE_DIR"]
if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist gives its workers COLUMNS=80 and LINES=24, which a plain run does not have:
    # the text report would be wrapped at 80 columns in some tests and not in others.
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


def fixture(rel: str) -> Path:
    """Path of a built fixture; skip with the Makefile's reason if it could not be built here."""
    path = FIX / rel
    reason = SKIP / (Path(rel).name + ".txt")
    if not path.exists() and reason.exists():
        pytest.skip(f"fixture {rel} not built: {reason.read_text().strip()}")
    assert path.exists(), f"fixture {path} is missing: run `make fixtures`"
    return path


def reference() -> Path:
    """The healthy reference operator built by the Makefile."""
    assert REFERENCE.exists(), f"{REFERENCE} is missing: run `make fixtures`"
    return REFERENCE


def cuda_built() -> str:
    """"" when the reference has CUDA kernels, else the reason (nvcc absent)."""
    note = SKIP / "cuda.txt"
    return note.read_text().strip() if note.exists() else ""


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say up front what this machine could not build, so skips are never silent."""
    lines = [f"opdoctor fixtures: {FIX}", f"python: {sys.executable}"]
    if SKIP.exists():
        for f in sorted(SKIP.glob("*.txt")):
            lines.append(f"not built here: {f.name[:-4]} — {f.read_text().strip()}")
    return lines


# A child that imports a framework (the ground truth a test takes from the real framework):
# what the ``probe`` marker covers besides opdoctor's own probes. A child that only loads a
# small library with ctypes (the real loader's verdict, ~30 ms) belongs to the fast suite.
_LOADS = re.compile(r"\b(?:import|from) (?:torch|tensorflow|mindspore|oneflow)\b|"
                    r"load_op_library|real_errors\.py")
_WATCH: list[list[str]] = []  # while a test not marked probe runs: what it started that loads


_SRC = str(ROOT / "src" / "opdoctor")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "subprocess.Popen" and _WATCH and not _started_by_opdoctor():
        argv = args[1]
        text = " ".join(map(str, argv)) if isinstance(argv, (list, tuple)) else str(argv)
        if _LOADS.search(text) or _script_loads(argv) or _program_loads(argv, args[2], args[3]):
            _WATCH[-1].append(text[:160])


def _program_loads(argv: object, cwd: object, env: object) -> bool:
    """Whether ``python -c CODE`` imports a framework first through a package of its own
    (``import torchaudio`` with torchaudio on its PYTHONPATH: its __init__ imports torch),
    which the command line does not name."""
    if not isinstance(argv, (list, tuple)) or "-c" not in argv[:-1]:
        return False
    from tests.torchfork import first_framework

    code = str(argv[list(argv).index("-c") + 1])
    environ = env if isinstance(env, dict) else os.environ
    path = str(environ.get("PYTHONPATH", ""))
    dirs = (str(cwd or os.getcwd()), *[e for e in path.split(os.pathsep) if e])
    return first_framework(code, dirs) is not None


def _started_by_opdoctor() -> bool:
    """Whether opdoctor's own code starts the child: its probes are counted by
    OPDOCTOR_PROBE_LOG, and the child that asks torch for op-schema verdicts outside the
    certified subset (once per torch install, cached) is part of a static check."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_SRC):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _script_loads(argv: object) -> bool:
    """Whether an interpreter runs a script file of the repository that imports a framework
    (tests/mindspore_runner.py and the like), by its path or as a module (``python -m
    tests.fleet_launch``, which imports torch.distributed)."""
    if not isinstance(argv, (list, tuple)) or len(argv) < 2:
        return False
    script = str(argv[1])
    if script == "-m" and len(argv) > 2 and str(argv[2]).startswith("tests."):
        script = str(ROOT / (str(argv[2]).replace(".", "/") + ".py"))
    if not script.endswith(".py") or not script.startswith(str(ROOT)):
        return False
    try:
        with open(script, encoding="utf-8") as fh:
            return bool(_LOADS.search(fh.read()))
    except OSError:
        return False


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``probe`` marker: tests that start a probe interpreter or another child
    that imports a framework (the framework's own verdict)."""
    config.addinivalue_line("markers", "probe: starts a probe interpreter, or a child that "
                            "imports a framework (slow: imports torch); "
                            "`pytest -m 'not probe'` is the fast static suite")
    sys.addaudithook(_audit)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                   items: list[pytest.Item]) -> None:
    """Run the modules whose tests start probes first and the fast static modules last (each
    module's tests together, in their order): pytest-xdist's work stealing then balances the
    end of the run with many short tests, instead of one worker finishing a long probe test
    (test_zygote's, alphabetically last) while the other waits."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)

    def weight(name: str) -> tuple[float, int]:
        probes = sum(1 for i in modules[name] if i.get_closest_marker("probe") is not None)
        return -probes / len(modules[name]), -probes

    order = sorted(modules, key=weight)  # stable: ties keep the collection's order
    items[:] = [item for name in order for item in modules[name]]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Freeze what the session built before the end of a worker: pytest's last full
    collection and the interpreter's teardown walked every object the tests left (1–2 s
    between a worker's last test and the end of the run)."""
    import gc

    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def _per_command_caches_emptied() -> Iterator[None]:
    """Empty opdoctor's per-command caches after each test module, as ``cli.main(argv)`` does
    after a command: tests that call ``run_check`` themselves would otherwise keep every module
    tree they parsed (a worker held 1.6 million objects, and each full cyclic collection walked
    them) and could read a path-keyed memo of another module's files."""
    yield
    from opdoctor.facts import commandcache

    commandcache.clear()


_LOG_DIR: list[Path] = []
_LOG_SEQ = itertools.count()
_ITEM_LOADS: dict[str, list[str]] = {}  # a test not marked probe: watched from its setup on


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Start watching a test not marked probe before any of its fixtures is set up: a
    module-scoped fixture that runs the framework itself (MindSpore's ground truth) starts
    its child in the setup of the first test that uses it, before the function-scoped
    ``_probe_marker_is_honest`` begins — that child must count as the test's."""
    if item.get_closest_marker("probe") is None:
        loads: list[str] = []
        _ITEM_LOADS[item.nodeid] = loads
        _WATCH.append(loads)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Stop watching a test whose setup never reached ``_probe_marker_is_honest`` (skipped
    by an earlier fixture)."""
    yield
    loads = _ITEM_LOADS.pop(item.nodeid, None)
    if loads is not None:
        _WATCH[:] = [w for w in _WATCH if w is not loads]


@pytest.fixture(autouse=True)
def _probe_marker_is_honest(request: pytest.FixtureRequest,
                            tmp_path_factory: pytest.TempPathFactory,
                            monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test that starts a probe (in process or in a `python -m opdoctor` child) without
    carrying ``@pytest.mark.probe``: the fast suite must really be static."""
    if not _LOG_DIR:  # one directory per worker; a file per test, written only by a probe
        _LOG_DIR.append(tmp_path_factory.mktemp("probelogs"))
    log = _LOG_DIR[0] / f"{next(_LOG_SEQ)}.txt"
    monkeypatch.setenv("OPDOCTOR_PROBE_LOG", str(log))
    marked = request.node.get_closest_marker("probe") is not None
    loads = _ITEM_LOADS.pop(request.node.nodeid, [])
    if not marked and not any(w is loads for w in _WATCH):
        _WATCH.append(loads)
    try:
        yield
    finally:
        if not marked:
            _WATCH[:] = [w for w in _WATCH if w is not loads]
    if not marked and (log.exists() or loads):
        started = (log.read_text().splitlines() if log.exists() else []) + loads
        audit = os.environ.get("OPDOCTOR_PROBE_AUDIT")
        if audit:
            with open(audit, "a", encoding="utf-8") as fh:
                fh.write(request.node.nodeid + "\n")
        else:
            pytest.fail(f"started {len(started)} probe(s) or children that import a "
                        f"framework but is not marked @pytest.mark.probe: {started[:3]}",
                        pytrace=False)


_SET_ASIDE: dict[str, object] = {}  # the worker's zygotes while a module without them runs


@pytest.fixture(scope="session")
def _worker_zygotes() -> Iterator[None]:
    """Close this test process's zygotes (one xdist worker's) at the end of its session."""
    yield
    from opdoctor.facts.probe import runner

    runner.ZYGOTES.update(_SET_ASIDE)  # type: ignore[arg-type]
    _SET_ASIDE.clear()
    runner.close_zygotes()


@pytest.fixture(scope="module")
def shared_zygotes(_worker_zygotes: None) -> Iterator[None]:
    """For a module whose tests check many libraries with the probe: every probe that can be
    is forked from a zygote that imported its framework once (``runner.keep_zygotes``; the
    real framework and loader in a process of its own per probe, as in a walk or a scan).
    The zygotes are kept for the worker's session, set aside while a module without this
    fixture runs (its probes are fresh children, as a one-library check's are): the next
    module with the same interpreter, environment and limits forks from the same import.
    ``OPDOCTOR_TEST_FRESH_PROBES=1`` runs them all as fresh children instead."""
    if os.environ.get("OPDOCTOR_TEST_FRESH_PROBES"):
        yield
        return
    from opdoctor.facts.probe import runner

    runner.ZYGOTES.update(_SET_ASIDE)  # type: ignore[arg-type]
    _SET_ASIDE.clear()
    runner._KEPT[0] += 1
    try:
        yield
    finally:
        runner._KEPT[0] -= 1
        for key, zygote in list(runner.ZYGOTES.items()):
            if not zygote.broken and zygote.proc.poll() is None:
                _SET_ASIDE[key] = runner.ZYGOTES.pop(key)
        runner.close_zygotes()  # the ones that died or could not serve


@contextlib.contextmanager
def fresh_probes() -> Iterator[None]:
    """Inside a module with ``shared_zygotes``: probes started here are fresh children, as in
    a check of one library run on its own (for a test that compares the two)."""
    from opdoctor.facts.probe import runner

    kept, runner._KEPT[0] = runner._KEPT[0], 0
    zygotes = dict(runner.ZYGOTES)  # the module's, set aside: the commands here start theirs
    runner.ZYGOTES.clear()
    try:
        yield
    finally:
        runner.close_zygotes()
        runner.ZYGOTES.update(zygotes)
        runner._KEPT[0] = kept
