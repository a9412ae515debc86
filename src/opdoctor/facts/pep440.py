"""Version specifiers (PEP 440) without ``packaging``: whether an installed release is one a
requirement admits (``numpy<2.1,>=1.22`` against numpy 2.4.6).

opdoctor reads other distributions' METADATA in the environment it checks; ``packaging`` may
be absent there and in opdoctor's own environment. What is read here is what PEP 440
defines: epochs, release numbers, pre-, post- and dev-releases, local labels, and the
operators ``==``/``!=`` (with ``.*``), ``<``, ``<=``, ``>``, ``>=``, ``~=`` and ``===``. A
version or clause it cannot read makes the answer None ("cannot tell"), never False.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_VERSION = re.compile(
    r"""v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?""", re.X)
_PRE = {"alpha": 0, "a": 0, "beta": 1, "b": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_CLAUSE = re.compile(r"(~=|===|==|!=|<=|>=|<|>)\s*(\S+)")
_INF = float("inf")


class Version:
    """A parsed version: ordering key and the parts the operators look at."""

    __slots__ = ("dev", "epoch", "local", "post", "pre", "release")

    def __init__(self, epoch: int, release: tuple[int, ...], pre: tuple[int, int] | None,
                 post: int | None, dev: int | None, local: str) -> None:
        self.epoch, self.release, self.pre = epoch, release, pre
        self.post, self.dev, self.local = post, dev, local

    @property
    def is_prerelease(self) -> bool:
        """A pre- or dev-release."""
        return self.pre is not None or self.dev is not None

    def key(self, with_local: bool = False) -> tuple[Any, ...]:
        """The ordering PEP 440 defines (trailing zeros of the release do not count; a
        dev-release before the pre-releases of its release, a post-release after it)."""
        rel = list(self.release)
        while len(rel) > 1 and rel[-1] == 0:
            rel.pop()
        # a < b < rc are 0 < 1 < 2; no pre-release sorts after them, a lone dev before
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[float, int] = (-_INF, 0)
        elif self.pre is None:
            pre = (_INF, 0)
        else:
            pre = (self.pre[0], self.pre[1])
        post = -_INF if self.post is None else self.post
        dev = _INF if self.dev is None else self.dev
        # local segments: a number sorts after any word, words by their letters
        local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p)
                      for p in re.split(r"[-_.]", self.local)) if with_local and self.local \
            else ()
        return (self.epoch, tuple(rel), pre, post, dev, local)


def parse(text: str) -> Version | None:
    """The version ``text`` spells, or None when it is not a PEP 440 version."""
    m = _VERSION.fullmatch(text.strip().lower())
    if not m:
        return None
    pre = (_PRE[m["pre_l"]], int(m["pre_n"] or 0)) if m["pre_l"] else None
    post_n = m["post_n1"] or m["post_n2"]
    post = int(post_n or 0) if (m["post_n1"] or m["post_l"]) else None
    dev = int(m["dev_n"] or 0) if m["dev_l"] else None
    return Version(int(m["epoch"] or 0), tuple(int(x) for x in m["release"].split(".")), pre,
                   post, dev, m["local"] or "")


def _prefix_matches(have: Version, prefix: str) -> bool | None:
    """``== prefix.*``: the release (and epoch) starts with the prefix's numbers."""
    want = parse(prefix)
    if want is None or want.pre or want.post is not None or want.dev is not None:
        return None
    rel = list(have.release) + [0] * max(0, len(want.release) - len(have.release))
    return have.epoch == want.epoch and tuple(rel[:len(want.release)]) == want.release


def clause_holds(op: str, bound: str, have: Version) -> bool | None:
    """Whether ``have`` satisfies one clause (``op`` ``bound``); None when unreadable."""
    if op == "===":
        return None  # arbitrary equality compares strings the caller no longer has
    if op in ("==", "!=") and bound.endswith(".*"):
        match = _prefix_matches(have, bound[:-2])
        return match if match is None or op == "==" else not match
    want = parse(bound)
    if want is None:
        return None
    if op in ("==", "!="):
        same = have.key(bool(want.local)) == want.key(bool(want.local))
        return same if op == "==" else not same
    mine, theirs = have.key(), want.key()
    if op == "~=":
        if len(want.release) < 2:
            return None
        prefix = ".".join(map(str, want.release[:-1]))
        if want.epoch:
            prefix = f"{want.epoch}!{prefix}"
        inside = _prefix_matches(have, prefix)
        return None if inside is None else mine >= theirs and inside
    if op == "<=":
        return mine <= theirs
    if op == ">=":
        return mine >= theirs
    if op == "<":
        # <V excludes V's own pre-releases unless V is one
        return mine < theirs and not (not want.is_prerelease and have.is_prerelease
                                      and have.key()[:2] == theirs[:2])
    if op == ">":
        # >V excludes V's post-releases unless V is one
        return mine > theirs and not (want.post is None and have.post is not None
                                      and have.key()[:2] == theirs[:2])
    return None


def below(specifier: str, version: str) -> bool:
    """Whether ``version`` is below a lower bound of ``specifier`` (``>=``, ``>``, ``~=``, or
    an ``==`` release above it): what only an older release of the package requiring it can
    accept (protobuf 3.20.3 under ``protobuf>=5.28.0``). False when it is not, or unreadable."""
    have = parse(version)
    if have is None:
        return False
    for clause in (c.strip() for c in specifier.split(",") if c.strip()):
        m = re.match(r"(~=|==|>=|>)\s*(\S+)", clause)
        if not m or m.group(2).endswith(".*"):
            continue
        want = parse(m.group(2))
        if want is not None and have.key() < want.key() and \
                clause_holds(m.group(1), m.group(2), have) is False:
            return True
    return False


def admits(specifier: str, version: str) -> bool | None:
    """Whether ``version`` satisfies every clause of ``specifier`` (``<2.1,>=1.22``): True,
    False, or None when either cannot be read (then nothing may be concluded)."""
    have = parse(version)
    clauses = [c.strip() for c in specifier.split(",") if c.strip()]
    if have is None or not clauses:
        return None
    verdict: bool | None = True
    for clause in clauses:
        m = _CLAUSE.fullmatch(clause)
        if not m:
            return None
        holds = clause_holds(m.group(1), m.group(2), have)
        if holds is None:
            verdict = None
        elif not holds:
            return False
    return verdict


# ------------------------------------------------------------------ environment markers
_MARKER_TOKEN = re.compile(r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<op>===|==|!=|<=|>=|~=|<|>|"""
                           r"""not\s+in\b|in\b)|(?P<word>and\b|or\b)|(?P<paren>[()])|"""
                           r"""(?P<var>[a-z_][a-z0-9_.]*))""")
_VERSION_VARS = {"python_version", "python_full_version", "implementation_version",
                 "platform_release"}


def marker_holds(marker: str, env: dict[str, str]) -> bool | None:
    """Whether a PEP 508 environment marker holds for ``env`` (variable → value): True,
    False, or None when it names a variable ``env`` lacks or cannot be read. Version
    variables compare as versions, others as strings (``in`` a substring test, as PEP 508
    says)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = marker.strip()
    while pos < len(text):
        m = _MARKER_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        kind = m.lastgroup or ""
        tokens.append((kind, " ".join(m.group(kind).split())))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    try:
        value, rest = _or(tokens, env)
    except (IndexError, KeyError, ValueError):
        return None
    return value if not rest else None


def _or(tokens: list[tuple[str, str]], env: dict[str, str]) -> tuple[bool | None, Any]:
    return _joined(tokens, env, "or")


def _joined(tokens: list[tuple[str, str]], env: dict[str, str], word: str
            ) -> tuple[bool | None, Any]:
    """Terms joined by ``word`` ("or" of "and"-groups, "and" of atoms), three-valued: a known
    True decides an "or", a known False an "and", else an unknown term leaves None."""
    def inner(part: list[tuple[str, str]]) -> tuple[bool | None, Any]:
        return _joined(part, env, "and") if word == "or" else _atom(part, env)

    decides = word == "or"
    left, tokens = inner(tokens)
    while tokens and tokens[0] == ("word", word):
        right, tokens = inner(tokens[1:])
        left = decides if decides in (left, right) else \
            None if left is None or right is None else not decides
    return left, tokens


def _atom(tokens: list[tuple[str, str]], env: dict[str, str]) -> tuple[bool | None, Any]:
    if tokens[0] == ("paren", "("):
        value, rest = _or(tokens[1:], env)
        if not rest or rest[0] != ("paren", ")"):
            raise ValueError("unbalanced parentheses")
        return value, rest[1:]
    (lk, lv), (ok, op), (rk, rv) = tokens[:3]
    if ok != "op":
        raise ValueError(f"no operator in {tokens[:3]}")
    var = lv if lk == "var" else rv if rk == "var" else ""
    if var and var != "extra" and var not in env:
        return None, tokens[3:]
    left = env.get(lv, "") if lk == "var" else lv[1:-1]
    right = env.get(rv, "") if rk == "var" else rv[1:-1]
    if var == "extra":
        return False, tokens[3:]  # an extra's requirement never applies unconditionally
    return _compare(left, op, right, var in _VERSION_VARS), tokens[3:]


def _compare(left: str, op: str, right: str, as_version: bool) -> bool | None:
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if as_version and op != "===":
        held = admits(f"{op}{right}", left) if not right.endswith(".*") or op in ("==", "!=") \
            else None
        if held is not None:
            return held
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    return None
