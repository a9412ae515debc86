"""Schemas that torch's parser certainly accepts, decided without importing torch.

``torch._C.parse_schema`` is the authority on an operator schema, but asking it means a child
interpreter that imports torch (1–2 s) the first time a schema is seen. Almost every schema a
custom-op library carries is plain: ``ns::op(Tensor x, int n=1, *, Tensor(a!) out) -> Tensor``.
:func:`certified` accepts a deliberately small subset of the schema language — common types,
literal defaults of the argument's own type, alias annotations on ``Tensor`` — and answers
False for anything outside it, which then goes to torch as before. It never rejects a schema
for being invalid: False only means "ask torch".

Soundness (certified ⇒ torch parses it) is tested against torch's parser on torch's own
schemas, real libraries' schemas and mutations of both (``tests/test_schemacert.py``); the
subset is limited to torch 2 releases, whose schema language it was checked against.
"""

from __future__ import annotations

import re

# Base types of the subset. The symbolic float/bool types, containers, type variables,
# TorchBind classes and the rarer scalars (Dimname, QScheme, Storage…) are left to torch.
_BASE = frozenset(("Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Layout",
                   "Device", "MemoryFormat", "Generator", "SymInt"))
# Bases whose lists may carry a size (int[2]) and accept a single literal as default.
_SIZED = frozenset(("int", "SymInt", "float", "bool"))
# Words torch's lexer makes tokens of (lexer.h) and Python's keywords: never a certified name.
_RESERVED = frozenset((
    "def", "if", "else", "elif", "while", "return", "is", "True", "False", "None", "and", "or",
    "not", "global", "for", "in", "raise", "assert", "break", "continue", "del", "pass",
    "class", "import", "with", "as", "Ellipsis", "NoneType", "from", "lambda", "try",
    "except", "finally", "yield", "nonlocal", "async", "await", "print", "inf", "nan"))
# One token: the arrow, the scope operator, a name, a number, a plain string literal, a
# punctuation mark. Spaces between tokens only (no tabs or newlines); anything else fails.
_TOKEN = re.compile(r" *(?:(->|::|[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?|"
                    r"'[^'\\\n]*'|\"[^\"\\\n]*\"|[()\[\],*=.?!]))")
# Literals torch reads with stoll / stod without overflow: 18 digits, exponents up to 99.
_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,18}(?:\.[0-9]{1,18})?(?:e-?[0-9]{1,2})?")
_ALIAS_SET = re.compile(r"[a-z][a-z0-9]*")


class _Reject(Exception):
    """Outside the subset (not necessarily invalid)."""


class _Type:
    """A parsed subset type: base, ``?`` on the element, a list (size or -1), ``?`` outside."""

    __slots__ = ("base", "elem_optional", "optional", "size")

    def __init__(self, base: str) -> None:
        self.base = base
        self.elem_optional = False
        self.size: int | None = None  # None: not a list; -1: a list without a size
        self.optional = False


class _Parser:
    """Recursive descent over the subset's tokens; any surprise raises :class:`_Reject`."""

    def __init__(self, tokens: list[str]) -> None:
        self.toks = tokens
        self.pos = 0

    def peek(self) -> str:
        return self.toks[self.pos] if self.pos < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if not tok or (expected is not None and tok != expected):
            raise _Reject
        self.pos += 1
        return tok

    def name(self) -> str:
        tok = self.take()
        if not (tok[0].isalpha() or tok[0] == "_") or tok in _RESERVED:
            raise _Reject
        return tok

    def schema(self) -> None:
        self.name()
        if self.peek() == "::":
            self.take()
            self.name()
        if self.peek() == ".":
            self.take()
            # torch refuses "default" and dunder names as overload names.
            if self.name() == "default" or self.toks[self.pos - 1].startswith("__"):
                raise _Reject
        self.take("(")
        self.arguments()
        self.take("->")
        self.returns()
        if self.pos != len(self.toks):
            raise _Reject

    def arguments(self) -> None:
        kwarg_only = seen_default = False
        if self.peek() == ")":
            self.take()
            return
        while True:
            if self.peek() == "*":
                if kwarg_only:
                    raise _Reject
                self.take()
                kwarg_only = True
            else:
                typ = self.type()
                self.name()
                if self.peek() == "=":
                    self.take()
                    self.default(typ)
                    seen_default = True
                elif seen_default and not kwarg_only:
                    raise _Reject  # torch asserts on a positional argument after a default
            if self.take() == ")":
                return
            if self.toks[self.pos - 1] != ",":
                raise _Reject

    def type(self) -> _Type:
        typ = _Type(self.take())
        if typ.base not in _BASE:
            raise _Reject
        alias = typ.base == "Tensor" and self.alias()
        if self.peek() == "?" and self.toks[self.pos + 1:self.pos + 2] == ["["]:
            self.take()
            typ.elem_optional = True
        if self.peek() == "[":
            self.take()
            typ.size = -1
            if self.peek() != "]":
                size = self.take()
                if typ.base not in _SIZED or not size.isdigit() or len(size) > 6:
                    raise _Reject
                typ.size = int(size)
            self.take("]")
            if typ.base == "Tensor" and not alias:
                self.alias()  # Tensor[](a!): the list's annotation after it
        if self.peek() == "?":
            self.take()
            typ.optional = True
        return typ

    def alias(self) -> bool:
        """An alias annotation at this point (``(a)``, ``(a!)``, a bare ``!``), if any."""
        if self.peek() == "!":
            self.take()
            return True
        if self.peek() != "(":
            return False
        self.take()
        if not _ALIAS_SET.fullmatch(self.take()) or self.toks[self.pos - 1] in _RESERVED:
            raise _Reject
        if self.peek() == "!":
            self.take()
        self.take(")")
        return True

    def default(self, typ: _Type) -> None:
        if self.peek() == "None":
            if not typ.optional:
                raise _Reject
            self.take()
            return
        if typ.elem_optional or (typ.optional and typ.size is not None):
            # torch takes only None for an optional list (int[]? x=[3] fails to parse)
            raise _Reject
        if typ.size is None:
            self.literal(typ.base)
            return
        if typ.base not in _SIZED:
            raise _Reject
        if self.peek() != "[":
            if typ.size < 0:  # torch takes a single literal only for a sized list
                raise _Reject
            self.literal(typ.base)
            return
        self.take("[")
        if self.peek() == "]":
            self.take()
            return
        while True:
            self.literal(typ.base)
            if self.take() == "]":
                return
            if self.toks[self.pos - 1] != ",":
                raise _Reject

    def literal(self, base: str) -> None:
        tok = self.take()
        if base in ("int", "SymInt"):
            ok = _INT.fullmatch(tok) is not None
        elif base in ("float", "Scalar"):
            ok = _FLOAT.fullmatch(tok) is not None
        elif base == "bool":
            ok = tok in ("True", "False")
        elif base == "str":
            ok = tok[0] in "'\""
        else:
            ok = False
        if not ok:
            raise _Reject

    def returns(self) -> None:
        if self.peek() != "(":
            self.return_value()
            return
        self.take()
        if self.peek() == ")":
            self.take()
            return
        while True:
            self.return_value()
            if self.take() == ")":
                return
            if self.toks[self.pos - 1] != ",":
                raise _Reject

    def return_value(self) -> None:
        self.type()
        if self.peek() not in ("", ",", ")"):
            self.name()


def _tokens(text: str) -> list[str] | None:
    """The subset's tokens of ``text``; None when a character falls outside them."""
    tokens: list[str] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.group(1) is None:
            return None
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def torch_in_scope(version: str) -> bool:
    """Whether the subset was checked against this torch release's schema language (torch 2)."""
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) == 2


def certified(text: str) -> bool:
    """True when ``torch._C.parse_schema(text, allow_typevars=False)`` certainly accepts the
    schema (torch 2); False when it is outside the subset — torch must be asked then."""
    if len(text) > 2000 or text != text.strip():
        return False
    tokens = _tokens(text)
    if not tokens:
        return False
    try:
        _Parser(tokens).schema()
    except (_Reject, IndexError):
        return False
    return True
