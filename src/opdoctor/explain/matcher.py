"""``opdoctor explain``: turn error text (one message or a whole CI log) into cause and fix.

The knowledge base is data (``opdoctor/explain/patterns.toml``), validated when loaded. For a log,
every line is matched; the best match is the most specific pattern (``priority``), and among
equals the one nearest the end (the last exception of a traceback is the one that was raised).
Entities are extracted from the matching lines and from the whole text — mangled symbols are
demangled and classified, because what the symbol is decides the cause.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from opdoctor.facts.elf.demangle import demangle

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found]

CONFIDENCE = ("low", "medium", "high")


class KnowledgeBaseError(ValueError):
    """The pattern file is invalid (bad regex, unknown code, bad cause)."""


@dataclass(frozen=True)
class Pattern:
    """One entry of the knowledge base."""

    id: str
    framework: str
    regex: re.Pattern[str]
    cause: int
    codes: tuple[str, ...]
    priority: int
    confidence: str
    title: str
    explanation: str
    next: str


@dataclass
class Match:
    """One pattern matched on one line."""

    pattern: Pattern
    line_no: int
    line: str
    groups: dict[str, str]


@dataclass
class Explanation:
    """What ``opdoctor explain`` answers."""

    cause: int  # 1–5, 0 when nothing matched
    subcause: str  # the pattern id
    codes: list[str]
    confidence: str
    title: str
    explanation: str
    entities: dict[str, Any] = field(default_factory=dict)
    next_steps: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # the lines that matter
    other_matches: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def load_patterns(known_codes: frozenset[str] | None = None) -> tuple[Pattern, ...]:
    """Load and validate the knowledge base."""
    text = resources.files("opdoctor").joinpath("explain/patterns.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    out: list[Pattern] = []
    seen: set[str] = set()
    for raw in data.get("pattern", []):
        pid = raw.get("id", "?")
        try:
            rx = re.compile(raw["regex"])
            cause = int(raw["cause"])
            codes = tuple(raw.get("codes", []))
            conf = raw.get("confidence", "medium")
            p = Pattern(pid, raw["framework"], rx, cause, codes, int(raw.get("priority", 10)),
                        conf, raw["title"], raw["explanation"], raw.get("next", ""))
        except (KeyError, re.error, ValueError, TypeError) as exc:
            raise KnowledgeBaseError(f"pattern {pid}: {exc}") from None
        if pid in seen:
            raise KnowledgeBaseError(f"pattern {pid} is defined twice")
        if not 1 <= cause <= 5:
            raise KnowledgeBaseError(f"pattern {pid}: cause {cause} is not 1–5")
        if conf not in CONFIDENCE:
            raise KnowledgeBaseError(f"pattern {pid}: confidence {conf!r}")
        if known_codes is not None:
            unknown = [c for c in codes if c not in known_codes]
            if unknown:
                raise KnowledgeBaseError(f"pattern {pid}: unknown code(s) {unknown}")
        seen.add(pid)
        out.append(p)
    return tuple(out)


# ------------------------------------------------------------------------- entities
_SYMBOL = re.compile(r"\b(_Z[A-Za-z0-9_]+)")
_LIB = re.compile(r"(?<![\w/.-])((?:/|\./|\.\./)?[\w./+-]*?lib[\w.+-]*?\.so(?:\.[\d.]+)?|"
                  r"/[\w./+-]+\.so(?:\.[\d.]+)?)")
# Runs of the characters a library path is made of: no _LIB match crosses a run's boundary.
_PATH_RUN = re.compile(r"[\w./+-]+")
_MAX_PATH_RUN = 512


def _libraries(text: str) -> list[str]:
    """``_LIB.findall(text)``, in linear time: only runs of path characters that contain
    ".so" are searched (a base64 line or a long word has none), each at most 512 characters."""
    out: list[str] = []
    for run in _PATH_RUN.finditer(text):
        token = run.group(0)
        if ".so" in token:
            out += _LIB.findall(token[:_MAX_PATH_RUN])
    return out


_ARCH = re.compile(r"\b(sm_\d{2,3}a?|compute_\d{2,3})\b")
_VERSION = re.compile(r"\b((?:GLIBCXX|GLIBC|CXXABI|GCC)_[\d.]+)")
_OP = re.compile(r"\b([a-z_][a-z0-9_]*::[A-Za-z_][\w.]*)\b")


def classify_symbol(mangled: str) -> tuple[str, int, str]:
    """(what the symbol is, cause, code) — the classification decides the diagnosis."""
    d = demangle(mangled)
    if re.match(r"^(?:c10|at|torch|caffe2)::", d):
        if "std::__cxx11::" not in d and re.search(r"std::(?:string|basic_string<)", d):
            return ("a torch function taking std::string in the old C++ ABI "
                    "(_GLIBCXX_USE_CXX11_ABI=0) — torch uses the new one", 3, "OD303")
        return "a torch (c10/at/torch) function: built against another torch version", 3, "OD304"
    if re.match(r"^tensorflow::", d):
        return "a TensorFlow function: built against another TensorFlow (or ABI)", 3, "OD304"
    if re.match(r"^(?:cuda|cublas|cudnn|cufft|curand|cusparse|nccl|cutlass)", d, re.I):
        return "a CUDA library function: CUDA version mismatch or library missing", 3, "OD312"
    if d.startswith("std::") or "std::__cxx11" in d:
        return "a C++ standard library function: libstdc++ older than the compiler's", 3, "OD302"
    if d.startswith("Py") or d.startswith("_Py"):
        return "a CPython API function: built for another Python", 5, ""
    return ("the library's own (or a dependency's) function: not linked into the build — a "
            "missing source file or -l flag", 3, "OD301")


def _entities(text: str, matches: Sequence[Match]) -> dict[str, Any]:
    ent: dict[str, Any] = {}
    for m in matches:
        for k, v in m.groups.items():
            if v:
                ent.setdefault(k.rstrip("0123456789"), v)
    syms = list(dict.fromkeys(_SYMBOL.findall(text)))[:5]
    if "symbol" in ent and ent["symbol"] not in syms:
        syms.insert(0, ent["symbol"])
    if syms:
        ent["symbols"] = []
        for s in syms:
            what, cause, code = classify_symbol(s)
            ent["symbols"].append({"mangled": s, "demangled": demangle(s), "is": what,
                                   "cause": cause, "code": code})
    libs = list(dict.fromkeys(_libraries(text)))[:5]
    if libs:
        ent["libraries"] = libs
    for key, rx in (("archs", _ARCH), ("versions", _VERSION), ("ops", _OP)):
        found = list(dict.fromkeys(rx.findall(text)))[:5]
        if found:
            ent[key] = found
    return ent


_PLACEHOLDERS = {"path": "<the .so that failed>", "library": "<the .so>", "op": "<ns::op>",
                 "module": "<package>", "namespace": "<ns>", "opname": "<op>",
                 "backend": "<dispatch key>", "symbol": "<symbol>", "version": "<version>",
                 "arch": "<sm_XY>", "bits": "32/64", "name": "<name>"}


def _fill(template: str, ent: dict[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        v = ent.get(m.group(1))
        return str(v) if v else _PLACEHOLDERS.get(m.group(1), m.group(0))

    return re.sub(r"\{(\w+)\}", sub, template)


def explain_text(text: str, patterns: Sequence[Pattern] | None = None) -> Explanation:
    """Explain an error message or a whole log."""
    patterns = patterns if patterns is not None else load_patterns()
    lines = text.splitlines() or [text]
    matches: list[Match] = []
    for i, line in enumerate(lines):
        if len(line) > 20000:
            line = line[:20000]  # a minified blob must not make the regexes crawl
        for p in patterns:
            m = p.regex.search(line)
            if m:
                groups = {k: v for k, v in m.groupdict().items() if v}
                matches.append(Match(p, i, line.strip(), groups))
    if not matches:
        return _no_match(text)
    best = max(matches, key=lambda m: (m.pattern.priority, m.line_no))
    ent = _entities("\n".join(x.line for x in matches) if len(lines) > 200 else text, [best])
    cause, codes, conf = best.pattern.cause, list(best.pattern.codes), best.pattern.confidence
    title = _fill(best.pattern.title, ent)
    explanation = _fill(best.pattern.explanation, ent)
    steps = []
    if best.pattern.id == "loader.undefined-symbol" and ent.get("symbols"):
        sym = ent["symbols"][0]
        cause, codes = sym["cause"] or cause, [sym["code"]] if sym["code"] else codes
        conf = "high" if sym["code"] in ("OD303", "OD304", "OD302") else "medium"
        title = f"undefined symbol {sym['demangled']}: {sym['is']}"
    if best.pattern.id == "loader.cannot-open":
        lib = ent.get("library", "")
        if "/" in lib and os.path.exists(lib):
            cause, codes, conf = 4, ["OD408"], "high"
            title = f"{lib} exists, yet the loader says it cannot open it"
            explanation = ("The file is there, so the loader skipped it: it is built for "
                           "another architecture or ELF class. ") + explanation
    if best.pattern.next:
        steps.append(_fill(best.pattern.next, ent))
    steps.append("opdoctor explain " + (codes[0] if codes else "<code>")
                 + "   # what the code means and how to fix it")
    others = [f"line {m.line_no + 1}: {m.pattern.id} — {m.line[:160]}"
              for m in sorted(matches, key=lambda m: m.line_no) if m is not best][:10]
    return Explanation(cause, best.pattern.id, codes, conf, title, explanation, ent, steps,
                       [f"line {best.line_no + 1}: {best.line[:300]}"], others)


def _no_match(text: str) -> Explanation:
    """Nothing matched: say so, make the best low-confidence guess, give generic triage."""
    ent = _entities(text, [])
    cause, title = 0, "no known error pattern matched"
    guess = ""
    if ent.get("symbols"):
        sym = ent["symbols"][0]
        guess = f"the text mentions {sym['demangled']} — {sym['is']} (cause {sym['cause']})"
    elif ent.get("libraries"):
        guess = f"the text mentions {ent['libraries'][0]}; check it: opdoctor check it"
    steps = ["opdoctor check <the .so you load>   # all five causes, statically",
             "opdoctor explain - < full.log       # give the whole traceback or CI log"]
    explanation = ("opdoctor does not recognise this message and will not invent a cause. "
                   + (f"Low-confidence hint: {guess}." if guess else
                      "Generic triage: check the library file, its dependencies and symbols, "
                      "then the Python package that loads it."))
    return Explanation(cause, "", [], "low", title, explanation, ent, steps)


def explanation_dict(e: Explanation) -> dict[str, Any]:
    """The JSON form of an explanation (``schema_version`` 1)."""
    return {"schema_version": 1, "cause": e.cause, "subcause": e.subcause, "codes": e.codes,
            "confidence": e.confidence, "title": e.title, "explanation": e.explanation,
            "entities": e.entities, "next_steps": e.next_steps, "evidence": e.evidence,
            "other_matches": e.other_matches}
