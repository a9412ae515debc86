"""Per-stage time budgets: cooperative deadlines that the long loops of the facts poll.

The pipeline opens one :func:`stage` per check; every loop whose length depends on the input
(modules of an import chain, symbols to bind, strings to scan, libraries of a dependency
tree) calls :func:`checkpoint` once per item. When the stage has used up its budget the
checkpoint raises :class:`BudgetExceeded`, the pipeline records a finding that names the stage
and what it was doing, and the other stages still run: the report always comes out.

Budgets count **CPU seconds of opdoctor's own process** (``time.process_time``), not wall time:
a machine shared by many jobs does not trip them, and waits for child processes (the target
interpreter, torch's schema parser, the load probe), which have their own timeouts, do not
count. The wall-clock timer of the CLI (``STATIC_TIMEOUT``) still backs everything up.

Outside a stage (target expansion, library use without the pipeline) checkpoints cost one
context-variable read and never raise.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class BudgetExceeded(BaseException):
    """A stage ran out of its budget.

    A ``BaseException``, like ``KeyboardInterrupt``: the ``except Exception`` handlers that
    keep a damaged input from crashing a fact must not swallow it and return half a result.
    """

    def __init__(self, stage: str, budget: float, used: float, doing: str) -> None:
        super().__init__(f"stage {stage} stopped after {used:.1f} s: {doing}")
        self.stage, self.budget, self.used, self.doing = stage, budget, used, doing


@dataclass
class _Deadline:
    """A stage and its CPU-time budget."""

    stage: str
    budget: float  # CPU seconds
    start: float
    end: float


_CURRENT: contextvars.ContextVar[_Deadline | None] = contextvars.ContextVar(
    "opdoctor_budget", default=None)


@contextmanager
def stage(name: str, seconds: float) -> Iterator[None]:
    """Run the body with a budget of ``seconds`` CPU seconds for stage ``name``."""
    now = time.process_time()
    token = _CURRENT.set(_Deadline(name, seconds, now, now + seconds))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def checkpoint(doing: str = "") -> None:
    """Raise :class:`BudgetExceeded` when the current stage is over its budget.

    ``doing`` says what the loop was working on ("reading module torchaudio/io/_x.py"): it
    ends up in the finding, so the user knows which input made the stage slow.
    """
    d = _CURRENT.get()
    if d is None:
        return
    now = time.process_time()
    if now > d.end:
        raise BudgetExceeded(d.stage, d.budget, now - d.start, doing or "no detail")


_TICKS = [0]


def tick(doing: str = "", every: int = 64) -> None:
    """:func:`checkpoint` on every ``every``-th call: for loops whose items are tiny (one AST
    statement), where reading the CPU clock each time would cost more than the item."""
    _TICKS[0] += 1
    if _TICKS[0] % every == 0:
        checkpoint(doing)


def used() -> float:
    """CPU seconds the current stage has used so far (0 outside a stage)."""
    d = _CURRENT.get()
    return time.process_time() - d.start if d is not None else 0.0
