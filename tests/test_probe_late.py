"""The probe starts before its target is known (issue #14's time bar): the child imports the
framework while the parent reads the import chain, and gets the rest of its request (which
library, what to preload, the swallowed imports to retry, the TensorFlow ops to watch) on
stdin. Real children, real torch; nothing is mocked."""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

from opdoctor.facts.probe.outcome import ProbeState
from opdoctor.facts.probe.runner import ProbeHandle, ProbeRequest, prestart
from tests.conftest import FIX, reference
from tests.helpers import cli, cli_proc

PYFIX = FIX / "python"
BASE = {k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "OPDOCTOR_PROBE_LOG")}


def _alive_with(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (a probe child started for this test)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if mark.encode() in fh.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


@pytest.mark.probe
def test_package_probe_starts_before_the_target_and_is_adopted(tmp_path: Path) -> None:
    log = tmp_path / "probes.log"
    res = cli_proc("check", "-f", "json", "--cwd", str(PYFIX / "swallow"), "--package", "myext",
                   env={**BASE, "OPDOCTOR_PROBE_LOG": str(log)}, timeout=180)
    # One child, started before the import chain had named a library (no path yet), then
    # adopted by the library's check: not a second one.
    assert log.read_text().splitlines() == ["package myext"]
    rep = res.json()["reports"][0]
    found = {f["code"]: f for f in rep["findings"]}
    # The swallowed import to retry reached the child late, and its error came back.
    assert "OD512" in found and "undefined symbol: missing_helper" in found["OD512"]["message"]
    assert rep["sections"]["probe"]["outcome"] == "load failed" or "OD509" in found


@pytest.mark.probe
def test_prestarted_probe_of_a_broken_target_is_killed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The import chain picks a truncated library: no probe runs on it (a static finding
    # decides), so the child started for the package must not be left waiting.
    pkg = tmp_path / "brokenpkg"
    pkg.mkdir()
    data = reference().read_bytes()
    (pkg / "_C.so").write_bytes(data[:len(data) // 3])
    (pkg / "__init__.py").write_text(
        "import os, torch\ntorch.ops.load_library(os.path.join(os.path.dirname(__file__), "
        "'_C.so'))\n")
    mark = f"OPDOCTOR_TEST_MARK={uuid.uuid4().hex}"
    env = [f"{k}={v}" for k, v in BASE.items()] + [mark]
    args = ["check", "-f", "json", "--cwd", str(tmp_path), "--package", "brokenpkg"]
    for item in env:
        args += ["--env", item]
    res = cli(capsys, *args)
    rep = res.json()["reports"][0]
    assert "OD406" in {f["code"] for f in rep["findings"]}  # truncated: the real verdict
    assert "probe" not in rep["sections"]
    deadline = time.monotonic() + 5
    while _alive_with(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(mark) == []


@pytest.mark.probe
def test_late_fields_never_sent_is_the_probes_own_error(tmp_path: Path) -> None:
    # The parent gave up before sending the library: the child must not load "nothing" and
    # blame the library for it; it reports an error of opdoctor's probe.
    req = ProbeRequest(path="", python=sys.executable, torch=True, late=True, timeout=120,
                       env=dict(BASE), cwd=str(tmp_path))
    outcome = ProbeHandle(req).wait()
    assert outcome.state == ProbeState.PROBE_ERROR
    assert outcome.probe_error is not None
    assert "sent no late request fields" in outcome.probe_error.message


@pytest.mark.probe
def test_late_path_and_preload_arrive_after_the_framework_import(tmp_path: Path) -> None:
    lib = tmp_path / "libmyop.so"
    shutil.copy(reference(), lib)
    req = ProbeRequest(path="", python=sys.executable, torch=True, late=True, timeout=120,
                       env=dict(BASE), cwd=str(tmp_path))
    handle = ProbeHandle(req)
    time.sleep(0.5)  # the parent still reading the library while the child imports torch
    handle.send_late(str(lib), (), [], ())
    outcome = handle.wait()
    assert outcome.state == ProbeState.LOADED
    assert "myop::weighted_sum" in outcome.new_ops


def test_prestart_requires_late_fields() -> None:
    with pytest.raises(ValueError, match="late fields"):
        prestart(ProbeRequest(path="x.so", python=sys.executable, torch=False))


@pytest.mark.probe
def test_time_waiting_for_opdoctor_is_reported_apart(tmp_path: Path) -> None:
    # No framework to import: the child asks for its library at once and waits for us. That
    # wait is opdoctor's analysis time, not the library's (the real-world time bar needs it).
    req = ProbeRequest(path="", python=sys.executable, torch=False, late=True, timeout=60,
                       env=dict(BASE), cwd=str(tmp_path))
    handle = ProbeHandle(req)
    time.sleep(1.5)
    handle.send_late(str(reference()), (), [], ())
    outcome = handle.wait()
    assert outcome.waited_seconds >= 1.0
    assert outcome.seconds >= outcome.waited_seconds
