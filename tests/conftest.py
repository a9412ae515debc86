"""Shared test helpers: locate the fixtures the Makefile built (never mocked).

A fixture that the Makefile could not build on this machine leaves a reason file under
build/fixtures/skipped/; the test is then skipped with that reason printed. A fixture that is
simply missing fails the test: run `make fixtures` (make test does).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))
FIX = BUILD / "fixtures"
SKIP = FIX / "skipped"
REFERENCE = BUILD / "myop" / "libmyop.so"
PKG_DIR = BUILD / "pkg"
# Schema-parse verdicts are cached; keep the tests' cache inside the build tree.
os.environ.setdefault("OPDOCTOR_CACHE_DIR", str(BUILD / "cache"))


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
