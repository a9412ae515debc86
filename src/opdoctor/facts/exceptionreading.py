"""What ``opdoctor explain`` makes of an exception a probe saw: a fact about its text.

Checks see the world through ``facts`` (tests/test_layout.py); the explain engine is a pure
function of a message (no file system, no framework import), so a check that wants its
reading of an import's exception asks here.
"""

from __future__ import annotations


class Reading:
    """One reading of an exception's text: the cause, its name, the message form's title and
    explanation, and the next steps the form suggests."""

    __slots__ = ("cause", "cause_name", "entities", "explanation", "next_steps", "subcause",
                 "title")

    def __init__(self, cause: int, cause_name: str, title: str, explanation: str,
                 next_steps: tuple[str, ...], subcause: str = "",
                 entities: dict[str, str] | None = None) -> None:
        self.cause = cause
        self.cause_name = cause_name
        self.title = title
        self.explanation = explanation
        self.next_steps = next_steps
        self.subcause = subcause  # the message form's id (python.ctypes-library-not-found)
        self.entities = entities or {}  # what the form read from the text (project: zbar)


def read_exception(kind: str, message: str) -> Reading | None:
    """The reading of ``kind: message`` when one of explain's message forms matches it; None
    for its generic fallback (it would only restate the exception)."""
    from opdoctor.explain import explain_text
    from opdoctor.explain.rank import CAUSE_NAMES

    e = explain_text(f"{kind}: {message}")
    if not e.cause or not e.subcause or e.subcause.startswith("generic."):
        return None
    return Reading(e.cause, CAUSE_NAMES[e.cause], e.title, e.explanation,
                   tuple(e.next_steps), e.subcause,
                   {k: str(v) for k, v in e.entities.items()})
