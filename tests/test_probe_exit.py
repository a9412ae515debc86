"""How a probe ends: its report written, it exits without the interpreter's teardown.

After ``import torch`` the teardown (Python freeing every object the import made) took ~0.4 s
of CPU and ~0.5 s of wall time, and opdoctor waited for it on every probe, fresh or forked.
The probe now runs the package's ``atexit`` functions, flushes Python's and C's buffers and
calls the C library's ``exit()`` (``probe_script.finish``). What that keeps and drops is
checked here on a real package, against what Python itself does with it:

- an ``atexit`` function still runs; C ``stdio`` output still buffered is still captured;
- a ``__del__`` that only the teardown would run does not run;
- a non-daemon thread the package started (Python's own exit waits for it forever) does not
  turn a load that worked into a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opdoctor.facts.probe.outcome import ProbeState
from opdoctor.facts.probe.runner import ProbeRequest, reuse_scope, start_probe
from opdoctor.facts.probe.zygote import module_probe

TAIL_C = r"""
#include <stdio.h>
/* No newline and no flush: with stdout a file, the text waits in stdio's buffer until the
   C library's exit() flushes it. */
__attribute__((constructor)) static void hello(void) { printf("tail-from-C"); }
int tail_answer(void) { return 42; }
"""

INIT = """
import atexit, ctypes, os, threading, time

_here = os.path.dirname(os.path.abspath(__file__))
_lib = ctypes.CDLL(os.path.join(_here, "_tail.so"))


def _mark(name):
    with open(os.path.join(_here, name), "w"):
        pass


atexit.register(_mark, "atexit-ran")


class _OnlyAtTeardown:
    # what __del__ needs is bound now: the teardown clears the module's names first
    def __del__(self, _open=open, _path=os.path.join(_here, "teardown-ran")):
        _open(_path, "w").close()


_keep = _OnlyAtTeardown()
if not os.environ.get("EXITPKG_NO_THREAD"):
    # a worker that never ends, not a daemon: Python's exit waits for it
    threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
"""


@pytest.fixture
def exitpkg(tmp_path: Path) -> Path:
    """A package whose import loads a C library that prints at load time, registers an
    ``atexit`` function, keeps an object with a ``__del__`` and starts a non-daemon thread."""
    pkg = tmp_path / "exitpkg"
    pkg.mkdir()
    (tmp_path / "tail.c").write_text(TAIL_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(tmp_path / "tail.c"),
                    "-o", str(pkg / "_tail.so")], check=True, timeout=60)
    (pkg / "__init__.py").write_text(INIT)
    return tmp_path


def _marks(root: Path) -> set[str]:
    return {p.name for p in (root / "exitpkg").iterdir() if p.name.endswith("-ran")}


def _clear(root: Path) -> None:
    for name in _marks(root):
        (root / "exitpkg" / name).unlink()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}


def test_python_itself_runs_the_teardown_and_waits_for_the_thread(exitpkg: Path) -> None:
    quiet = subprocess.run([sys.executable, "-c", "import exitpkg"], cwd=exitpkg,
                           env={**_env(), "EXITPKG_NO_THREAD": "1"}, capture_output=True,
                           text=True, timeout=60, check=True)
    assert quiet.stdout == "tail-from-C"
    assert _marks(exitpkg) == {"atexit-ran", "teardown-ran"}
    _clear(exitpkg)
    # the exit waits for the thread (without it, this import and exit take ~50 ms)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", "import exitpkg"], cwd=exitpkg, env=_env(),
                       capture_output=True, timeout=1.5)


def _request(root: Path, torch: bool) -> ProbeRequest:
    return ProbeRequest(path=str(root / "exitpkg" / "_tail.so"), python=sys.executable,
                        torch=torch, package="exitpkg", cwd=str(root), timeout=20,
                        env=_env())


@pytest.mark.probe
def test_a_probe_ends_without_the_teardown_keeping_atexit_and_c_output(
        exitpkg: Path) -> None:
    outcome = start_probe(_request(exitpkg, torch=False)).wait()
    assert outcome.state is ProbeState.LOADED, outcome
    assert "tail-from-C" in outcome.stdout
    assert _marks(exitpkg) == {"atexit-ran"}
    assert outcome.returncode == 0


@pytest.mark.probe
def test_a_forked_probe_and_its_zygote_end_the_same_way(exitpkg: Path) -> None:
    with reuse_scope():
        handle = module_probe(_request(exitpkg, torch=True))
        outcome = handle.wait()
    assert outcome.forked and outcome.state is ProbeState.LOADED, outcome
    assert "tail-from-C" in outcome.stdout
    assert _marks(exitpkg) == {"atexit-ran"}
