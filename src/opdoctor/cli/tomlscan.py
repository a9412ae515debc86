"""Whether a ``pyproject.toml`` can hold a ``[tool.opdoctor]`` table, without parsing it.

Importing ``tomllib`` (which imports ``typing`` and ``datetime``) and parsing a project's
``pyproject.toml`` costs ~5 ms of a first ``opdoctor check`` (later runs read the parsed table
from ``cli/configcache.py``). Most projects' files have no opdoctor table — many name opdoctor
only as a dependency or a script. This reading follows TOML's line structure far enough to
prove that: table headers, keys (bare, quoted, dotted) and values, with the contents of strings
and comments set aside and arrays that span lines followed to their end. Whatever it does not
follow exactly — a multi-line string, an escape in a quoted key, a line it cannot classify —
answers "may have one", and the file is parsed as before; so does any key path that reaches
``tool.opdoctor`` (a header, a dotted key, an inline table under ``[tool]``) or a value of
``tool`` itself.
"""

from __future__ import annotations

import re

_KEY = r"""(?:[A-Za-z0-9_-]+|"[^"\\\n]*"|'[^'\n]*')"""
_PATH = rf"{_KEY}(?:[ \t]*\.[ \t]*{_KEY})*"
_HEADER = re.compile(rf"\[\[?[ \t]*(?P<path>{_PATH})[ \t]*\]\]?[ \t]*(?:#.*)?")
_KEYVAL = re.compile(rf"(?P<path>{_PATH})[ \t]*=(?P<value>.*)")
_PART = re.compile(_KEY)


def _path(text: str) -> list[str]:
    """The keys of a dotted key path, quotes removed."""
    return [k[1:-1] if k[:1] in "\"'" else k for k in _PART.findall(text)]


def _code(line: str) -> str | None:
    """``line`` with the contents of its strings and its comment removed; None when a string
    does not end on this line (a multi-line value: not followed)."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "#":
            break
        if c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if c == '"' and line[j] == "\\" else 1
            if j >= n:
                return None
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def may_have_opdoctor_table(text: str) -> bool:
    """False only when ``text`` (a pyproject.toml) provably has no ``tool.opdoctor`` table."""
    if "opdoctor" not in text and "\\" not in text:
        return False  # a key can spell it only with an escape (``"op\\u0064octor"``)
    if '"""' in text or "'''" in text:
        return True
    table: list[str] = []
    depth = 0  # brackets and braces a value opened and has not closed
    for line in text.splitlines():
        if depth:
            code = _code(line)
            if code is None:
                return True
            depth += code.count("[") + code.count("{") - code.count("]") - code.count("}")
            if depth < 0:
                return True
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            m = _HEADER.fullmatch(stripped)
            if m is None or "\\" in m.group("path"):
                return True
            table = _path(m.group("path"))
            if table[:2] == ["tool", "opdoctor"]:
                return True
            continue
        m = _KEYVAL.fullmatch(stripped)
        if m is None or "\\" in m.group("path"):
            return True
        full = [*table, *_path(m.group("path"))]
        if full[:2] == ["tool", "opdoctor"] or full == ["tool"]:
            return True
        code = _code(m.group("value"))
        if code is None:
            return True
        depth = code.count("[") + code.count("{") - code.count("]") - code.count("}")
        if depth < 0:
            return True
    return depth != 0
