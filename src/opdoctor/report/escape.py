"""Text that machine formats can carry whatever bytes a file name holds.

On Linux a file name is any byte string without NUL and ``/``; Python hands undecodable bytes
over as lone surrogates (``os.fsdecode``), which no UTF-8 writer accepts, and XML 1.0 has no
representation at all for most control characters. Each format escapes what it must: GitHub
workflow commands percent-encode (:mod:`opdoctor.report.github`), SARIF URIs are
percent-encoded bytes, and free text shows an undecodable byte as ``\\xNN``.
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote

# XML 1.0 Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: str) -> str:
    """``text`` with undecodable bytes (lone surrogates) shown as ``\\xNN``: valid UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that did not come from a file name
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def xml_text(text: str) -> str:
    """``text`` that XML 1.0 can hold: control characters and undecodable bytes as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", printable(text))


def uri_path(path: str) -> str:
    """A URI reference for ``path``: bytes that RFC 3986 does not allow in a path (spaces,
    newlines, ``%``, ``#``, ``?``, ``:``, undecodable bytes) percent-encoded; ``/`` and the
    sub-delimiters (the ``!`` of ``wheel.whl!/pkg/lib.so``) stay as they are."""
    return quote(os.fsencode(path), safe="/!$&'()*+,;=@")
