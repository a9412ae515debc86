"""The probe's wait returns when the child exits, not at the next 50 ms poll (issue #21)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from opdoctor.facts.probe.runner import _exit_waiter


def test_exit_waiter_wakes_at_the_exit_and_sleeps_while_the_child_runs() -> None:
    child = subprocess.Popen(["sleep", "0.3"])
    wait = _exit_waiter(child.pid)
    t = time.monotonic()
    wait(0.05)  # the child runs: a full slice
    assert 0.04 <= time.monotonic() - t < 0.25
    t = time.monotonic()
    wait(10)  # returns at the exit (~0.25 s later), not after 10 s
    assert time.monotonic() - t < 2
    assert child.poll() == 0
    wait(None)  # closes the descriptor; a later call is harmless
    child.wait()


def test_exit_waiter_of_a_reaped_child_still_sleeps_its_slice() -> None:
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: no pidfd can be opened for it
    wait = _exit_waiter(child.pid)
    t = time.monotonic()
    wait(0.05)
    assert 0.04 <= time.monotonic() - t < 1
    wait(None)


class _Interrupted(BaseException):
    """Stands for the CLI's wall-clock timer going off inside the probe's collection."""


@pytest.mark.probe
def test_a_wait_interrupted_after_reading_the_output_can_be_finished(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A check whose wait() was interrupted after it had read and closed the child's output
    (the wall-clock timer of a busy run went off) is asked again by a later stage: that
    second wait() finishes the collection — the same output, the real outcome — where it
    used to crash the run ("ValueError: flush of closed file", exit 4; seen on
    tensorflow-compression 2.14.1 under load)."""
    import sys

    from opdoctor.facts.probe import runner
    from opdoctor.facts.probe.outcome import ProbeState
    from tests.conftest import BUILD

    req = runner.ProbeRequest(path=str(BUILD / "myop" / "libmyop.so"), python=sys.executable,
                              torch=True, env=dict(os.environ), timeout=120)
    handle = runner.start_probe(req)
    real_parse = runner.parse_ld_debug
    calls = []

    def interrupted_once(path: str) -> object:
        calls.append(path)
        if len(calls) == 1:
            raise _Interrupted()
        return real_parse(path)

    monkeypatch.setattr(runner, "parse_ld_debug", interrupted_once)
    with pytest.raises(_Interrupted):
        handle.wait()
    assert handle._out.closed  # the output was read and closed before the interruption
    outcome = handle.wait()
    assert outcome.state is ProbeState.LOADED and "myop::weighted_sum" in outcome.new_ops
    assert handle.wait() is outcome  # a third call: the same result
