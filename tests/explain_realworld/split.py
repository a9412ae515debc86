"""Split the collected real-message corpus once, by thread, into a development and a test half.

Rule: a thread goes to the test half when the first byte of sha256("owner/repo#N") is odd.
Patterns are written from ``dev.toml`` only; ``test.toml`` is read by the evaluation alone
(``benchmarks/bench_explain.py`` prints aggregate numbers, never its messages). The rule is
checked by ``tests/test_explain_corpus.py``, so no thread can sit in both halves.

Usage: python tests/explain_realworld/split.py raw_a.toml [raw_b.toml …]  (appends; idempotent
per thread)
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
FIELDS = ("thread", "framework", "package", "cause", "alt", "subcause", "resolution", "text")


def half(thread: str) -> str:
    """"test" or "dev" for a thread id."""
    return "test" if hashlib.sha256(thread.encode()).digest()[0] % 2 else "dev"


def _toml_str(s: str) -> str:
    if "'''" not in s and "\r" not in s:
        return "'''\n" + s.strip("\n") + "\n'''"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\r", "\\r").replace("\t", "\\t") + '"'


def _entry(case: dict[str, object]) -> str:
    lines = ["[[case]]"]
    for key in FIELDS:
        if key not in case:
            continue
        v = case[key]
        if key == "text":
            lines.append(f"text = {_toml_str(str(v))}")
        elif isinstance(v, list):
            lines.append(f"{key} = [{', '.join(str(x) for x in v)}]")
        elif isinstance(v, int):
            lines.append(f"{key} = {v}")
        else:
            lines.append(f"{key} = {_toml_str(str(v)) if chr(10) in str(v) else repr_str(str(v))}")
    return "\n".join(lines) + "\n"


def repr_str(s: str) -> str:
    """A TOML basic string."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(paths: list[str]) -> None:
    """Append each raw file's cases to dev.toml / test.toml by the hash rule."""
    out = {"dev": HERE / "dev.toml", "test": HERE / "test.toml"}
    seen: set[str] = set()
    for f in out.values():
        if f.exists():
            seen |= {c["thread"] + "\0" + c["text"] for c in tomllib.loads(f.read_text())["case"]}
    for p in paths:
        cases = tomllib.loads(Path(p).read_text())["case"]
        for c in cases:
            key = c["thread"] + "\0" + c["text"]
            if key in seen:
                continue
            seen.add(key)
            target = out[half(c["thread"])]
            with target.open("a", encoding="utf-8") as fh:
                fh.write(("\n" if target.exists() and target.stat().st_size else "") + _entry(c))
    for name, f in out.items():
        n = len(tomllib.loads(f.read_text())["case"]) if f.exists() else 0
        print(f"{name}: {n} cases")


if __name__ == "__main__":
    main(sys.argv[1:])
