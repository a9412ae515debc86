"""Shared test helpers: locate the fixtures the Makefile built (never mocked).

A fixture that the Makefile could not build on this machine leaves a reason file under
build/fixtures/skipped/; the test is then skipped with that reason printed. A fixture that is
simply missing fails the test: run `make fixtures` (make test does).
"""

from __future__ import annotations

import os
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


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``probe`` marker: tests that start a probe interpreter (import torch)."""
    config.addinivalue_line("markers", "probe: starts a probe interpreter (slow: imports torch); "
                            "`pytest -m 'not probe'` is the fast static suite")


@pytest.fixture(autouse=True)
def _probe_marker_is_honest(request: pytest.FixtureRequest,
                            tmp_path_factory: pytest.TempPathFactory,
                            monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test that starts a probe (in process or in a `python -m opdoctor` child) without
    carrying ``@pytest.mark.probe``: the fast suite must really be static."""
    log = tmp_path_factory.mktemp("probelog") / "starts.txt"
    monkeypatch.setenv("OPDOCTOR_PROBE_LOG", str(log))
    yield
    if log.exists() and request.node.get_closest_marker("probe") is None:
        started = log.read_text().splitlines()
        audit = os.environ.get("OPDOCTOR_PROBE_AUDIT")
        if audit:
            with open(audit, "a", encoding="utf-8") as fh:
                fh.write(request.node.nodeid + "\n")
        else:
            pytest.fail(f"started {len(started)} probe(s) but is not marked "
                        "@pytest.mark.probe", pytrace=False)
