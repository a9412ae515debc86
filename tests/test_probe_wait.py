"""The probe's wait returns when the child exits, not at the next 50 ms poll (issue #21)."""

from __future__ import annotations

import subprocess
import time

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
