"""``opdoctor explain``: turn error text (one message or a whole CI log) into ranked causes.

The knowledge base is data (``opdoctor/explain/patterns.toml``), validated when loaded: every
regex compiles and has only bounded repeats (so matching stays linear on long lines), every
cause is 1–5, every refiner exists, every code is known. For a log, every line is matched; the
root error is the most specific pattern (``priority``), and among equals the *first* one — in a
traceback chain ("During handling of the above exception", "The above exception was the direct
cause") the first exception is the root and later ones are symptoms. The matched pattern gives
an order of causes; its refiner (:mod:`opdoctor.explain.rank`) reorders them from the entities
of the text (:mod:`opdoctor.explain.entities`): what an undefined symbol is, where a file sits,
what both sides of a "built for … you have …" pair say.
"""

from __future__ import annotations

import os
import re
import sys
import zlib
from collections.abc import Sequence
from functools import lru_cache

from opdoctor import cachefile
from opdoctor.explain import rank
from opdoctor.explain.entities import (
    SymbolInfo,
    classify_symbol,
    extract,
    join_at_width,
    normalise,
    path_kind,
)

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any

CONFIDENCE = ("low", "medium", "high")
MAX_LINE = 20000  # a minified blob must not make the regexes crawl
MAX_LINES = 100000
CODE_RE = re.compile(r"^OD[1-5]\d\d$")

__all__ = ["Alternative", "Explanation", "KnowledgeBaseError", "Match", "Pattern",
           "SymbolInfo", "classify_symbol", "explain_text", "explanation_dict", "load_patterns"]


class KnowledgeBaseError(ValueError):
    """The pattern file is invalid (bad regex, unbounded repeat, unknown code, bad cause)."""


class Pattern:
    """One entry of the knowledge base. The regex is compiled on first use: ``needles`` (literal
    strings one of which every match contains) let a line skip the patterns it cannot match, so
    a one-line explain compiles only the few that could.

    The classes here are plain classes with ``__slots__``, not dataclasses: importing
    ``dataclasses`` (inspect, ast, dis) costs ~15 ms of every ``opdoctor explain`` start."""

    __slots__ = (
        "_regex",
        "alt",
        "cause",
        "codes",
        "confidence",
        "explanation",
        "framework",
        "id",
        "mute",
        "needles",
        "next",
        "priority",
        "refine",
        "source",
        "title",
    )

    def __init__(self, id: str, framework: str, source: str, cause: int,
                 codes: tuple[str, ...], priority: int, confidence: str, title: str,
                 explanation: str, next: str, alt: tuple[int, ...] = (),
                 refine: str = "", needles: tuple[str, ...] = (), mute: bool = False) -> None:
        self.id = id
        self.framework = framework
        self.source = source
        self.cause = cause
        self.codes = codes
        self.priority = priority
        self.confidence = confidence
        self.title = title
        self.explanation = explanation
        self.next = next
        self.alt = alt
        self.refine = refine
        self.needles = needles
        self.mute = mute  # the line is a note about an optional dependency: nothing else on it
        self._regex: re.Pattern[str] | None = None

    def _key(self) -> tuple[object, ...]:
        return (self.id, self.framework, self.source, self.cause, self.codes, self.priority,
                self.confidence, self.title, self.explanation, self.next, self.alt,
                self.refine, self.needles, self.mute)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Pattern(id={self.id!r}, cause={self.cause}, source={self.source!r})"

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled regex."""
        if self._regex is None:
            self._regex = re.compile(self.source)
        return self._regex

    def could_match(self, line: str) -> bool:
        """False when the line lacks every needle (then the regex cannot match)."""
        return not self.needles or any(n in line for n in self.needles)


class Match:
    """One pattern matched on one line."""

    __slots__ = ("groups", "line", "line_no", "pattern")

    def __init__(self, pattern: Pattern, line_no: int, line: str, groups: dict[str, str]) -> None:
        self.pattern = pattern
        self.line_no = line_no
        self.line = line
        self.groups = groups

    def __repr__(self) -> str:
        return f"Match({self.pattern.id!r}, line {self.line_no})"


class Alternative:
    """A ranked cause: its number, a confidence in [0, 1], and why it is listed."""

    __slots__ = ("cause", "confidence", "why")

    def __init__(self, cause: int, confidence: float, why: str) -> None:
        self.cause = cause
        self.confidence = confidence
        self.why = why

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Alternative) and (self.cause, self.confidence, self.why) == (
            other.cause, other.confidence, other.why)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return f"Alternative(cause={self.cause}, confidence={self.confidence}, why={self.why!r})"


class Explanation:
    """What ``opdoctor explain`` answers."""

    __slots__ = (
        "cause",
        "codes",
        "confidence",
        "decides",
        "entities",
        "evidence",
        "explanation",
        "next_steps",
        "other_matches",
        "ranked",
        "subcause",
        "title",
        "why",
    )

    def __init__(self, cause: int, subcause: str, codes: list[str], confidence: str, title: str,
                 explanation: str, entities: dict[str, Any] | None = None,
                 next_steps: list[str] | None = None, evidence: list[str] | None = None,
                 other_matches: list[str] | None = None,
                 ranked: list[Alternative] | None = None, why: str = "",
                 decides: str = "") -> None:
        self.cause = cause  # 1–5, 0 when nothing matched
        self.subcause = subcause  # the pattern id
        self.codes = codes
        self.confidence = confidence
        self.title = title
        self.explanation = explanation
        self.entities: dict[str, Any] = {} if entities is None else entities
        self.next_steps: list[str] = [] if next_steps is None else next_steps
        self.evidence: list[str] = [] if evidence is None else evidence  # the lines that matter
        self.other_matches: list[str] = [] if other_matches is None else other_matches
        # every cause considered, best first
        self.ranked: list[Alternative] = [] if ranked is None else ranked
        self.why = why  # why the top cause: pattern, line, entity
        self.decides = decides  # when the text cannot decide between the top two: what does

    def __repr__(self) -> str:
        return f"Explanation(cause={self.cause}, subcause={self.subcause!r})"

    @property
    def alternatives(self) -> list[Alternative]:
        """The ranked causes after the top one."""
        return self.ranked[1:]

    @property
    def score(self) -> float:
        """The top cause's confidence in [0, 1] (0 when nothing matched)."""
        return self.ranked[0].confidence if self.ranked else 0.0


# ------------------------------------------------------------------ loading
def _unbounded_repeat(rx: str) -> bool:
    """True when the regex has a ``*``, ``+`` or ``{n,}`` repeat (unbounded).

    A small scan of the pattern text (escapes and character classes skipped) instead of
    re's parser: it runs on every start of ``opdoctor explain``, which must stay fast.
    """
    i, n, in_class = 0, len(rx), False
    while i < n:
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if rx[i + 1: i + 2] == "]" or rx[i + 1: i + 3] == "^]":
                i += 2 if rx[i + 1] == "]" else 3  # a literal ] first in the class
                continue
        elif (c in "*+" and not (c == "+" and i > 0 and rx[i - 1] in "*+?}")) or (
                c == "{" and re.match(r"\{\d*,\}", rx[i:])):
            return True
        i += 1
    return False


PATTERNS_FILE = os.path.join(os.path.dirname(__file__), "patterns.toml")  # str: no pathlib
CACHE_FORMAT = b"\0opdoctor-explain-cache-3"  # bump when the cached fields change


def _needles(source: str) -> list[str] | None:
    """Literal strings (≥ 3 characters) one of which every match of ``source`` contains, or
    None when there is no such set (then the pattern is always tried)."""
    try:
        from re import _parser as sre  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as sre

    def of_seq(items: Any) -> list[str] | None:
        best: list[str] | None = None
        run: list[str] = []

        def consider(cand: list[str] | None) -> None:
            nonlocal best
            if cand and min(map(len, cand)) >= 3 and (
                    best is None or min(map(len, cand)) > min(map(len, best))):
                best = cand

        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                run.append(chr(av))
                continue
            consider(["".join(run)] if run else None)
            run = []
            if name == "SUBPATTERN":
                consider(of_seq(av[-1]))
            elif name == "BRANCH":
                subs = [of_seq(b) for b in av[1]]
                consider(None if any(s is None for s in subs)
                         else [n for s in subs if s for n in s])
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
                consider(of_seq(av[2]))
        consider(["".join(run)] if run else None)
        return best

    return of_seq(sre.parse(source))


def _cache_path(raw: bytes) -> str:
    key = f"{zlib.crc32(raw + CACHE_FORMAT):08x}{len(raw):x}"  # zlib: hashlib is slow to import
    return os.path.join(cachefile.cache_dir(), f"patterns-{key}-{sys.hexversion:x}.marshal")


def _read_knowledge_base() -> tuple[dict[str, Any], str | None]:
    """patterns.toml, parsed, and where to cache it once validated (None: read from the cache,
    which holds only content that passed validation — its name is the file's hash).

    The cache is marshal with a CRC, not JSON: marshal is built in (importing json costs
    start-up time) and loads several times faster; a corrupt file is no cache."""
    with open(PATTERNS_FILE, "rb") as fh:
        raw = fh.read()
    cache = _cache_path(raw)
    data: dict[str, Any] = cachefile.read(cache)
    if isinstance(data, dict) and isinstance(data.get("pattern"), list):
        return data, None
    if sys.version_info >= (3, 11):  # imported here: a cached start never needs it
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KnowledgeBaseError(f"patterns.toml: {exc}") from None
    return data, cache


def _write_cache(cache: str, data: dict[str, Any]) -> None:
    cachefile.write(cache, data)  # a failed write is no cache: the next run validates again


@lru_cache(maxsize=4)
def load_patterns(known_codes: frozenset[str] | None = None) -> tuple[Pattern, ...]:
    """Load and validate the knowledge base (``known_codes``: the catalog, when at hand; without
    it codes are checked for their form only)."""
    data, cache = _read_knowledge_base()
    out: list[Pattern] = []
    seen: set[str] = set()
    for raw in data.get("pattern", []):
        pid = raw.get("id", "?")
        try:
            if cache is not None:  # not validated yet: compile now, derive the needles
                re.compile(raw["regex"])
                raw["needles"] = _needles(raw["regex"]) or []
            cause = int(raw["cause"])
            codes = tuple(raw.get("codes", []))
            conf = raw.get("confidence", "medium")
            alt = tuple(int(a) for a in raw.get("alt", []))
            refine = str(raw.get("refine", ""))
            p = Pattern(pid, raw["framework"], str(raw["regex"]), cause, codes,
                        int(raw.get("priority", 10)), conf, raw["title"], raw["explanation"],
                        raw.get("next", ""), alt, refine, tuple(raw.get("needles", ())),
                        bool(raw.get("mute", False)))
        except (KeyError, re.error, ValueError, TypeError) as exc:
            raise KnowledgeBaseError(f"pattern {pid}: {exc}") from None
        if pid in seen:
            raise KnowledgeBaseError(f"pattern {pid} is defined twice")
        if not 1 <= cause <= 5 or any(not 1 <= a <= 5 for a in alt) or cause in alt:
            raise KnowledgeBaseError(f"pattern {pid}: cause {cause} / alt {list(alt)} not 1–5 "
                                     "(or the cause repeated in alt)")
        if conf not in CONFIDENCE:
            raise KnowledgeBaseError(f"pattern {pid}: confidence {conf!r}")
        if refine and refine not in rank.REFINERS:
            raise KnowledgeBaseError(f"pattern {pid}: unknown refiner {refine!r}")
        if cache is not None and _unbounded_repeat(raw["regex"]):
            raise KnowledgeBaseError(f"pattern {pid}: unbounded repeat (*, + or {{n,}}); use a "
                                     "bounded one such as {0,200} so long lines stay linear")
        bad = [c for c in codes if not CODE_RE.match(c)
               or (known_codes is not None and c not in known_codes)]
        if bad:
            raise KnowledgeBaseError(f"pattern {pid}: unknown code(s) {bad}")
        seen.add(pid)
        out.append(p)
    if cache is not None:
        _write_cache(cache, data)
    return tuple(out)


# ------------------------------------------------------------------ matching
_PLACEHOLDERS = {"path": "<the .so that failed>", "library": "<the .so>", "op": "<ns::op>",
                 "module": "<package>", "namespace": "<ns>", "opname": "<op>",
                 "backend": "<dispatch key>", "symbol": "<symbol>", "version": "<version>",
                 "arch": "<sm_XY>", "bits": "32/64", "name": "<name>", "built": "<built for>",
                 "have": "<installed>", "runtime": "<runtime library>", "opset": "<opset>"}


def _fill(template: str, ent: dict[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        v = ent.get(m.group(1))
        if v is None and m.group(1).endswith("_top"):
            # {module_top}: the top-level package — `pip show keras`, not `pip show
            # keras.src.engine` (survey 20)
            whole = ent.get(m.group(1)[:-4])
            v = str(whole).split(".")[0] if whole else None
            return v or _PLACEHOLDERS.get(m.group(1)[:-4], m.group(0))
        return str(v) if v else _PLACEHOLDERS.get(m.group(1), m.group(0))

    return re.sub(r"\{(\w+)\}", sub, template)


_FRAME = re.compile(r'^\s{0,8}File "[^"\n]{1,500}", line \d{1,7}')
_RAISED = re.compile(r"^\s{0,8}(?:[\w.]{1,120}(?:Error|Exception|Exit|Fail\w{0,10}|NotFound\w{0,10}"
                     r"|Warning)\b|During handling|The above exception)")


def _source_lines(lines: Sequence[str]) -> set[int]:
    """Indices of a Python traceback's frame lines (``File "…", line N, in f``) and of the source
    lines it quotes under them (and their ^^^^ markers): a frame's function name
    (``_register_fake``) or code such as ``@torch.library.register_fake("ns::op")`` or
    ``raise OSError(f"Could not load this library: {path}")`` names an error without being one,
    so no pattern may match it — the error is the exception line the traceback ends with."""
    out = {i for i, line in enumerate(lines) if _FRAME.match(line)}  # a frame names a function
    for i in range(1, len(lines)):
        if _FRAME.match(lines[i - 1]) and not _FRAME.match(lines[i]) \
                and not _RAISED.match(lines[i]):
            out.add(i)
            if i + 1 < len(lines) and lines[i + 1].strip() and \
                    not lines[i + 1].strip().strip("^~ "):
                out.add(i + 1)
    return out


class _NeedleIndex:
    """Which patterns a line can match, from the needles it holds: exactly the patterns whose
    :meth:`Pattern.could_match` is true, in the patterns' order. A needle is looked for only
    when the line has its first three characters somewhere (one set of the line's 3-grams),
    instead of every pattern testing each of its needles: ~500 needles for ~170 patterns, and
    most lines of a traceback hold none of them (4× faster on the corpus)."""

    GRAM = 3

    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.patterns = patterns
        self.always = [i for i, p in enumerate(patterns) if not p.needles]
        owners: dict[str, list[int]] = {}
        for i, p in enumerate(patterns):
            for n in p.needles:
                owners.setdefault(n, []).append(i)
        self.owners = owners
        self.by_gram: dict[str, list[str]] = {}
        self.short: list[str] = []  # needles shorter than a gram: looked for in every line
        for n in owners:
            if len(n) < self.GRAM:
                self.short.append(n)
            else:
                self.by_gram.setdefault(n[:self.GRAM], []).append(n)

    def candidates(self, line: str) -> list[Pattern]:
        """The patterns that could match ``line``, in order."""
        k = self.GRAM
        grams = {line[i:i + k] for i in range(len(line) - k + 1)}
        hit = set(self.always)
        for g in grams & self.by_gram.keys():
            for n in self.by_gram[g]:
                if n in line:
                    hit.update(self.owners[n])
        for n in self.short:
            if n in line:
                hit.update(self.owners[n])
        return [self.patterns[i] for i in sorted(hit)]


_INDEXES: dict[int, _NeedleIndex] = {}


def _index(patterns: Sequence[Pattern]) -> _NeedleIndex:
    """The needle index of this sequence of patterns (kept while the sequence is alive)."""
    idx = _INDEXES.get(id(patterns))
    if idx is None or idx.patterns is not patterns:
        if len(_INDEXES) > 8:
            _INDEXES.clear()
        idx = _INDEXES[id(patterns)] = _NeedleIndex(patterns)
    return idx


def _match_lines(lines: Sequence[str], patterns: Sequence[Pattern]) -> list[Match]:
    matches: list[Match] = []
    code = _source_lines(lines)
    index = _index(patterns)
    for i, line in enumerate(lines):
        if i in code:
            continue
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        on_line: list[Match] = []
        for p in index.candidates(line):
            m = p.regex.search(line)
            if m:
                groups = {k.rstrip("0123456789"): v for k, v in m.groupdict().items() if v}
                on_line.append(Match(p, i, line.strip(), groups))
        # a framework's own note that an optional dependency is absent (TensorFlow's TF-TRT
        # dso_loader warnings): the loader's words quoted in it are not an error of this text
        muted = [m for m in on_line if m.pattern.mute]
        matches.extend(muted or on_line)
    return matches


def _rejoin_longest(lines: list[str]) -> list[str] | None:
    """The lines with each of the longest (60 characters or more) joined with the next one, as
    a terminal of that width would have broken them; None when nothing would change."""
    if len(lines) < 2 or len(lines) > 400:
        return None
    longest = max(len(ln) for ln in lines)
    if longest < 60:
        return None
    # (not a blank line, nor a sentence after a complete one: "… undefined symbol:" then
    # "I installed …")
    out = join_at_width(lines, longest, lambda prev, ln: not ln or (
        prev.endswith((":", ".", "!", "?")) and re.match(r"[A-Z][a-z ]", ln) is not None))
    return out if len(out) != len(lines) else None


def _join_wrapped(text: str) -> list[str]:
    """Lines, with a message that a terminal or an issue tracker wrapped inside a path or a
    symbol put back together (``…/metric\\ns/__init__.py``, ``undefined s\\nymbol``)."""
    # a message wrapped right inside "undefined symbol" (a terminal, an issue's code span)
    text = re.sub(r"undefined[ \t]{0,4}\r?\n[ \t]{0,8}symbol", "undefined symbol", text)
    lines = text.splitlines() or [text]
    if len(lines) > 400:
        return lines
    out: list[str] = []
    for line in lines:
        if out and out[-1] and not out[-1].endswith((" ", ":", ".")) and line[:1].isalnum() \
                and re.search(r"(?:/[\w.-]{1,80}|\bundefined s|\bsymbol: ?|_Z\w{1,400})$",
                              out[-1]):
            out[-1] = out[-1] + line
        else:
            out.append(line)
    return out


def _pick_path(ent: dict[str, Any], groups: dict[str, str]) -> str:
    """The library path to name in `opdoctor check …` (a path from the text, not a guess)."""
    for key in ("path", "library"):
        v = groups.get(key, "").strip().strip("'\"`")
        if v and re.search(r"\.(?:so|dylib|dll|pyd)\b", v) and ("/" in v or "\\" in v
                                                               or key == "path"):
            return v
    for lib in ent.get("libraries", []):
        if "/" in lib or "\\" in lib:
            return str(lib)
    v = groups.get("library", "") or groups.get("path", "")
    if v and re.search(r"\.(?:so|dylib|dll|pyd)\b", v):
        return v.strip()
    libs = ent.get("libraries", [])
    return str(libs[0]) if libs else ""


_SITE_PKG = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_]\w*)[/\\]")
# Frames of the frameworks and of Python's own machinery: not the package that failed.
_NOT_THE_PACKAGE = frozenset({"torch", "tensorflow", "keras", "tf_keras", "mindspore",
                              "oneflow", "paddle", "jax", "jaxlib", "numpy", "importlib_metadata",
                              "pkg_resources", "setuptools", "_pytest", "pytest", "IPython",
                              "ipykernel", "transformers", "accelerate"})


def _failing_package(text: str) -> str:
    """The installed package of the deepest traceback frame that is not a framework's
    (``…/site-packages/torch_npu/utils/__init__.py`` → torch_npu), or ""."""
    found = [m.group(1) for m in _SITE_PKG.finditer(text)
             if m.group(1) not in _NOT_THE_PACKAGE]
    return found[-1] if found else ""


def explain_text(text: str, patterns: Sequence[Pattern] | None = None) -> Explanation:
    """Explain an error message or a whole log: the root error's cause, ranked alternatives."""
    patterns = patterns if patterns is not None else load_patterns()
    text = normalise(text[: MAX_LINE * 50])
    lines = _join_wrapped(text)
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
    matches = _match_lines(lines, patterns)
    joined = _rejoin_longest(lines)
    if joined is not None:
        # a terminal of any width: read the longest lines joined with the next as well, and
        # keep that reading only when it finds a more specific message form
        again = _match_lines(joined, patterns)
        if again and (not matches or max(m.pattern.priority for m in again)
                      > max(m.pattern.priority for m in matches)):
            lines, matches, text = joined, again, "\n".join(joined)
    if not matches:
        return _no_match(text)
    best = max(matches, key=lambda m: (m.pattern.priority, -m.line_no))
    # a long log: entities from the lines that matched (and their neighbours), not the noise
    scope = text if len(lines) <= 200 else "\n".join(
        "\n".join(lines[max(0, m.line_no - 3): m.line_no + 3]) for m in matches[:200])
    ent = extract(scope)
    for k, v in best.groups.items():
        ent.setdefault(k, v.strip())
    ctx = rank.Context(best.pattern.id, best.groups, best.line, scope,
                       tuple(m.pattern.id for m in matches if m is not best))
    fn = rank.REFINERS.get(best.pattern.refine)
    ref = fn(ctx) if fn else None
    p = best.pattern
    order = rank.order_with(ref, (p.cause, *p.alt))
    conf = (ref.confidence if ref and ref.confidence else p.confidence)
    # other root errors in the text lend a little weight to their causes
    extra: dict[int, float] = {}
    for m in matches:
        if m is not best and m.pattern.priority >= 30:
            extra[m.pattern.cause] = extra.get(m.pattern.cause, 0.0) + 0.03
    ranked_pairs = rank.scores(order, conf, extra)
    cause = ranked_pairs[0][0]
    codes = list(ref.codes) if ref and ref.codes else list(p.codes)
    title = _fill(ref.title if ref and ref.title else p.title, ent)
    explanation = _fill(p.explanation, ent)
    if ref:
        explanation = explanation + " Here: " + ref.why + "."
    backend, lib = "", str(ent.get("library", "") or "")
    if "backend extension" in text or "lib" in lib:  # imported only when it can matter
        from opdoctor.backends import CANN_SET_ENV, cann_library, failed_backend
        backend = failed_backend(text)
        if cann_library(os.path.basename(lib), re.findall(r"lib[\w.+-]+\.so", text)):
            explanation += (f" {os.path.basename(lib)} belongs to Huawei's Ascend CANN "
                            "toolkit, which is installed apart from any wheel and found "
                            "through the LD_LIBRARY_PATH that `source "
                            f"{CANN_SET_ENV}` exports.")
    system = ""
    if not lib and p.refine == "system-library":
        from opdoctor.syslibs import by_project
        lib = by_project(ctx.group("project") or ctx.group("project2"))
    if lib and p.cause == 2:
        from opdoctor.syslibs import system_library_fix
        system = system_library_fix(os.path.basename(lib))
        if system:
            explanation += " " + system + "."
    if backend:
        explanation += (f" torch imports {backend} at the end of its own import (a torch.backends "
                         f"entry point): until {backend} imports, `import torch` fails for "
                         "every program in that environment; TORCH_DEVICE_BACKEND_AUTOLOAD=0 "
                         f"turns the auto-loading off for a job that does not need {backend}.")
    sym = rank.symbol_of(ctx)
    syms = _symbols(scope, sym)
    if syms:
        ent["symbols"] = syms
    why_top = f"pattern {p.id} (line {best.line_no + 1})" + (f"; {ref.why}" if ref else "")
    ranked = [rank_alt(c, v, why_top if i == 0 else rank.why_for(c, ref))
              for i, (c, v) in enumerate(ranked_pairs)]
    path = _pick_path(ent, best.groups)
    pkg = _failing_package(scope) if path and "/" not in path and "\\" not in path else ""
    if pkg:
        # A bare name the loader did not find (libhccl.so) is the missing dependency, not a
        # file to check: the package whose import needed it is (torch_npu).
        path = ""
    steps: list[str] = []
    if p.next and not pkg:
        steps.append(_fill(p.next.replace("{path}", path or "{path}")
                           .replace("{library}", path or "{library}"), ent))
    if path and not any(f"opdoctor check {path}" in s for s in steps):
        steps.insert(0, f"opdoctor check {path}")
    if pkg:
        steps.insert(0, f"opdoctor check --package {pkg}   # the package whose import needed it")
    if system:
        from opdoctor.syslibs import PYPI_LIBS, SYSTEM_LIBS
        name = os.path.basename(lib)
        if name in PYPI_LIBS:  # a library a PyPI wheel brings (libtbb.so.12: tbb)
            steps.insert(0, f"pip install {PYPI_LIBS[name][1]}   # the wheel that brings {name}")
        else:
            deb, rpm = SYSTEM_LIBS[name][1:]
            steps.insert(0, f"apt-get install {deb.split(' ')[0]}   # Debian/Ubuntu; "
                         f"Fedora/RHEL: dnf install {rpm}")
    decides = ref.decides if ref else ""
    if not decides and len(ranked) > 1 and ranked[1].confidence >= 0.15:
        decides = (f"the text alone does not separate cause {ranked[0].cause} from cause "
                   f"{ranked[1].cause}; " + (f"`opdoctor check {path}` does" if path else
                                            "`opdoctor check <the .so>` on the library does"))
    steps.append("opdoctor explain " + (codes[0] if codes else "<code>")
                 + "   # what the code means and how to fix it")
    others = [f"line {m.line_no + 1}: {m.pattern.id} — {m.line[:160]}"
              for m in sorted(matches, key=lambda m: m.line_no)
              if m is not best and m.pattern.framework != "generic"][:10]
    return Explanation(cause, p.id, codes, conf, title, explanation, ent, steps,
                       [f"line {best.line_no + 1}: {best.line[:300]}"], others, ranked, why_top,
                       decides)


def rank_alt(cause: int, confidence: float, why: str) -> Alternative:
    """An :class:`Alternative` with a rounded confidence."""
    return Alternative(cause, round(confidence, 2), why)


def _symbols(text: str, first: SymbolInfo | None) -> list[dict[str, Any]]:
    from opdoctor.explain.entities import SYMBOL

    names = list(dict.fromkeys(SYMBOL.findall(text)))[:5]
    out = [first.as_dict()] if first else []
    for s in names:
        if first and s in (first.mangled, "_" + first.mangled):
            continue
        out.append(classify_symbol(s).as_dict())
    return out[:5]


def _no_match(text: str) -> Explanation:
    """Nothing matched: say so, make the best low-confidence guess, give generic triage."""
    ent = extract(text)
    cause, title = 0, "no known error pattern matched"
    guess = ""
    ranked: list[Alternative] = []
    syms = _symbols(text, None)
    libs = ent.get("libraries", [])
    steps = ["opdoctor explain - < full.log       # give the whole traceback or CI log"]
    if syms:
        ent["symbols"] = syms
        guess = f"the text mentions {syms[0]['demangled']} — {syms[0]['is']}"
    if libs:
        lib = str(libs[0])
        kind = "installed" if "installed" in path_kind(lib) else ""
        guess = (guess + "; " if guess else "") + (
            f"the text mentions {lib}{' (an installed package)' if kind else ''}; check it: "
            f"opdoctor check {lib}")
        steps.insert(0, f"opdoctor check {lib}   # all five causes, statically and by loading it")
    else:
        steps.insert(0, "opdoctor check <the .so you load>   # all five causes, statically")
    explanation = ("opdoctor does not recognise this message and will not invent a cause. "
                   + (f"Low-confidence hint: {guess}." if guess else
                      "Generic triage: check the library file, its dependencies and symbols, "
                      "then the Python package that loads it."))
    if syms and syms[0]["owner"] != "own":
        # no message form matched, but a mangled name of a known owner (the framework, the C++
        # runtime, CUDA) is there: what it names is evidence enough for a low-confidence order
        info = classify_symbol(str(syms[0]["mangled"]))
        order = rank.order_with(rank.Refinement(info.causes, ""), (3, 2, 4))
        ranked = [rank_alt(c, v, f"no message form matched; the text names {info.demangled}: "
                           f"{info.is_}" if i == 0 else rank.why_for(c, None))
                  for i, (c, v) in enumerate(rank.scores(order, "low", {}))]
        cause, title = ranked[0].cause, f"no known message form; {info.demangled} is {info.is_}"
        explanation = ("opdoctor does not recognise this message form; the order of causes is "
                       f"read from the symbol it names alone (low confidence): {info.demangled} "
                       f"is {info.is_}.")
        return Explanation(cause, "entity.symbol", [info.code], "low", title, explanation, ent,
                           steps, ranked=ranked, why=ranked[0].why)
    # No message form, no named symbol: rank by how often each cause explained real reports
    # of this framework (a library path alone: the loader's). A guess, and said to be one.
    fws = [str(f) for f in ent.get("frameworks", [])]
    if not fws and not libs:
        # Nothing ties the text to a framework or a library: no base rate applies to it.
        return Explanation(cause, "", [], "low", title, explanation, ent, steps, ranked=ranked)
    kind = next((f for f in fws if f in PRIOR_ORDER), "all" if fws else "loader")
    order = PRIOR_ORDER[kind]
    label = {"all": "all real reports", "loader": "real loader errors naming a library"}.get(
        kind, f"real {kind} reports")
    why = (f"no message form matched; the causes in the order they explained {label} in "
           "opdoctor's development corpus")
    ranked = [rank_alt(c, v, why if i == 0 else rank.why_for(c, None))
              for i, (c, v) in enumerate(rank.scores(order, "low", {}))]
    explanation = ("opdoctor does not recognise this message form. The causes are listed in "
                   f"the order they explained {label} (a base rate, low confidence): run "
                   "opdoctor check on the library to find the real one. " + explanation.split(
                       "cause. ", 1)[-1])
    return Explanation(ranked[0].cause, f"prior.{kind}", [], "low", title, explanation, ent,
                       steps, ranked=ranked, why=why)


# The order of the causes by how often each explained the development half of the real-message
# corpus (tests/explain_realworld/dev.toml, by the framework label; "loader" for a text that
# names only a library; "all" for every case). tests/test_explain_corpus.py recomputes it.
PRIOR_ORDER: dict[str, tuple[int, ...]] = {
    "all": (3, 4, 5),
    "pytorch": (3, 4, 1),
    "tensorflow": (3, 1, 5),
    "onnxruntime": (3, 2, 1),
    "paddle": (3, 2, 4),
    "loader": (2, 4, 3),
    "cuda": (2, 3, 4),
    "python": (5, 4, 3),  # a label of the corpus; no framework word selects it
}


def explanation_dict(e: Explanation) -> dict[str, Any]:
    """The JSON form of an explanation (``schema_version`` 1; ``alternatives``, ``why``,
    ``decides`` and ``score`` were added without changing the older keys)."""
    return {"schema_version": 1, "cause": e.cause, "subcause": e.subcause, "codes": e.codes,
            "confidence": e.confidence, "score": e.score, "title": e.title, "why": e.why,
            "explanation": e.explanation,
            "alternatives": [{"cause": a.cause, "confidence": a.confidence, "why": a.why}
                             for a in e.alternatives],
            "decides": e.decides, "entities": e.entities, "next_steps": e.next_steps,
            "evidence": e.evidence, "other_matches": e.other_matches}
