"""What a dynamic-loader error message says, wherever it was seen: the probe's own load, an
``import <pkg>`` that raised, or an import error a package swallowed in ``try/except``.

The same text means the same cause in all three places, so the classification lives here and
the checks only decide which finding to emit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOT_FOUND = re.compile(r"([^\s:'\"]+): cannot open shared object file")
UNDEFINED = re.compile(r"undefined symbol: ([^\s'\"\],;)]+)")
VERSION = re.compile(r"version `([^']+)' not found")
# The file was found and could not be mapped (a noexec mount, an address-space limit): the
# library named when the message names one (a token's start, so a long line stays linear).
MAP_SEGMENT = re.compile(r"(?<![^\s:'\"(\[])([^\s:'\"(\[]{1,300}): failed to map segment from "
                         r"shared object|failed to map segment from shared object")


def soname_stem(name: str) -> str:
    """``libmupdf.so`` of ``libmupdf.so.24.8`` (a library's name without its version; "" for
    a name without ``.so``)."""
    import os

    base = os.path.basename(name.strip())
    return base.split(".so", 1)[0] + ".so" if ".so" in base else ""


@dataclass(frozen=True)
class LoaderError:
    """One dynamic-loader failure read from an error message."""

    kind: str  # "version" (cause 3), "not-found" (cause 2), "undefined" (cause 3)
    subject: str  # the version, the library's path as written, or the symbol
    text: str  # the matched part of the message ("undefined symbol: missing_helper")


def loader_error(text: str) -> LoaderError | None:
    """The loader failure in ``text``, None when the message is not the dynamic loader's.

    Checked in the order glibc fails: a missing version is reported before any symbol is
    bound, and a library not found names the dependency rather than a symbol.
    """
    if m := VERSION.search(text):
        return LoaderError("version", m.group(1), m.group(0))
    if m := NOT_FOUND.search(text):
        return LoaderError("not-found", m.group(1), m.group(0))
    if m := UNDEFINED.search(text):
        return LoaderError("undefined", m.group(1), m.group(0))
    return None
