"""torch refusing a registration while a library loads, read from what the process printed.

A ``TORCH_LIBRARY`` block runs in a static initialiser. When torch refuses what it registers,
it throws a ``c10::Error`` there; nothing can catch it, ``std::terminate`` prints
``what():`` and the process aborts (a library that registers from its ``PyInit`` instead gets
the same text as an ``ImportError``). The text says which refusal it was:

- ``def("op"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block`` — an
  ``m.def()`` in a block that may only hold kernels;
- ``Inferred operator schema for a C++ kernel function doesn't match the expected function
  schema`` — an ``m.impl()`` whose C++ function takes or returns other types than the schema
  (torch prints both schemas and the reason);
- the schema parser's own errors (``unknown type specifier``, ``expected arrow``) — an
  ``m.def()`` string that does not parse.

Only the ``what():`` message is evidence: the C++ stack frames torch appends say nothing about
the library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DEF_IN_IMPL = re.compile(r'def\("?([^")]*)"?\): Cannot define an operator inside of a '
                          r"TORCH_LIBRARY_IMPL block")
_MISMATCH = "Inferred operator schema for a C++ kernel function doesn't match the expected " \
    "function schema"
_PARSE = ("unknown type specifier", "expected arrow")
_BLOCK_AT = re.compile(r"\(Error occurred while processing TORCH_LIBRARY_IMPL block at "
                       r"([^)\s]+)\)")
_NOISE = ("frame #", "Exception raised from", "<omitting python frames>")


@dataclass(frozen=True)
class Refusal:
    """One registration torch refused: ``kind`` is "def-in-impl", "kernel-mismatch" or
    "schema"; ``op`` the operator when the text names it; ``reason`` torch's own reason (the
    mismatch) or where (the block); ``evidence`` the lines of torch's message."""

    kind: str
    op: str
    reason: str
    evidence: tuple[str, ...]


def message_lines(text: str) -> list[str]:
    """torch's message in ``text`` without the C++ stack frames: from its ``what():`` (or
    the whole text when there is none) to the first frame or "Exception raised from"."""
    lines = text.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if "what():" in line), 0)
    out: list[str] = []
    for line in lines[start:]:
        if any(line.lstrip().startswith(n) for n in _NOISE):
            break
        if line.strip():
            out.append(line.strip())
    return out


def _field(lines: list[str], name: str) -> str:
    return next((line.split(":", 1)[1].strip() for line in lines
                 if line.startswith(name + ":")), "")


def read_refusal(text: str) -> Refusal | None:
    """The registration torch refused in ``text`` (stderr of an aborted load, or an
    exception's message), or None when the text is not such a refusal."""
    lines = message_lines(text)
    if m := _DEF_IN_IMPL.search(text):
        where = _BLOCK_AT.search(text)
        return Refusal("def-in-impl", m.group(1), where.group(1) if where else "",
                       tuple(lines[:3]))
    if _MISMATCH in text:
        keep = ("operator:", "expected schema:", "inferred schema:", "reason:",
                "registered at ")
        return Refusal("kernel-mismatch", _field(lines, "operator"),
                       _field(lines, "reason").rstrip("."),
                       tuple(line for line in lines
                             if line.startswith(keep) or _MISMATCH in line)[:8])
    if any(p in text for p in _PARSE):
        return Refusal("schema", "", "", tuple(lines[:4]))
    return None
