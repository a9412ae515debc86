"""Names a package's ``__init__.py`` binds, read from its AST (nothing is imported).

``from . import X`` (and ``from .. import X``) takes ``X`` from the package's namespace first;
only when the package has no attribute ``X`` does the import system look for a submodule
``X`` (``importlib._bootstrap._handle_fromlist``). So a statement that imports a *name* the
package defines — tokenizers' ``from .. import AddedToken, Tokenizer``, where
``tokenizers/__init__.py`` re-exports them from its extension — is no missing module.
"""

from __future__ import annotations

import ast
import os
import textwrap
from dataclasses import dataclass
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.budget import checkpoint

# An __init__.py larger than this is generated code; reading it is not worth the time, and the
# answer "may bind anything" keeps the verdict on the safe side of a false alarm.
_MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Bindings:
    """The top-level names of one module. ``open`` when the module can bind names that cannot
    be listed statically (``from x import *``, a module ``__getattr__``, an unreadable file)."""

    names: frozenset[str]
    open: bool

    def has(self, name: str) -> bool:
        """Whether ``name`` is (or may be) an attribute of the module after it ran."""
        return self.open or name in self.names or name in MODULE_ATTRIBUTES


# What the import system sets on every module (and ``__path__`` on a package) before its code
# runs: oracledb's ``from . import __name__ as MODULE_NAME`` takes the package's name, no
# submodule ``__name__`` (survey 22).
MODULE_ATTRIBUTES = frozenset(("__name__", "__doc__", "__package__", "__loader__", "__spec__",
                               "__file__", "__cached__", "__builtins__", "__path__",
                               "__dict__"))


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _bound(stmt: ast.stmt, names: set[str]) -> bool:
    """Add the names ``stmt`` binds at module level; True when it makes the namespace open."""
    if isinstance(stmt, ast.ImportFrom):
        if any(a.name == "*" for a in stmt.names):
            return True
        if stmt.module is None and stmt.level >= 1:
            # `from . import X`: X is a submodule (or a name some other statement bound):
            # this statement binds it only when that submodule exists. What it binds under
            # another name (`from . import tqdm as _tqdm`, datasets) or takes from a parent
            # package (`from .. import __version__`, transformers' utils) is bound once the
            # module has run (a missing one fails this statement, reported where it stands).
            names.update(a.asname or a.name for a in stmt.names
                         if stmt.level >= 2 or (a.asname and a.asname != a.name))
            return False
        names.update(a.asname or a.name for a in stmt.names)
    elif isinstance(stmt, ast.Import):
        names.update(a.asname or a.name.split(".")[0] for a in stmt.names)
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
        return stmt.name == "__getattr__"  # PEP 562: any attribute may exist
    elif isinstance(stmt, ast.Assign):
        names.update(n for t in stmt.targets for n in _targets(t))
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        names.update(_targets(stmt.target))
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        names.update(n for item in stmt.items if item.optional_vars is not None
                     for n in _targets(item.optional_vars))
    return False


def _walk(body: list[ast.stmt], names: set[str]) -> bool:
    """Module-level statements, including those nested in if/try/with/for blocks (they run at
    import too), but not function or class bodies."""
    open_ = False
    for stmt in body:
        open_ |= _bound(stmt, names)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block in ("body", "orelse", "finalbody"):
            open_ |= _walk(getattr(stmt, block, []) or [], names)
        for handler in getattr(stmt, "handlers", []) or []:
            open_ |= _walk(handler.body, names)
        for case in getattr(stmt, "cases", []) or []:
            open_ |= _walk(case.body, names)
    return open_


@lru_cache(maxsize=256)
def module_bindings(file: str) -> Bindings:
    """The names ``file`` binds at module level (an open set when it cannot be read)."""
    checkpoint(f"reading the names {file} defines")
    try:
        if os.path.getsize(file) > _MAX_BYTES:
            return Bindings(frozenset(), True)
    except OSError:
        return Bindings(frozenset(), True)
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file)
    if tree is None:
        return Bindings(frozenset(), True)
    names: set[str] = set()
    open_ = _walk(tree.body, names)
    return Bindings(frozenset(names), open_)


def from_package_import(statement: str, file: str) -> tuple[str, list[str]] | None:
    """For ``from . import a, b`` / ``from .. import a`` written in ``file``: the package's
    ``__init__.py`` the names are taken from, and the names. None for any other statement
    (``from .mod import x`` names a module, which must exist) or text that does not parse."""
    try:
        tree = ast.parse(textwrap.dedent(statement).strip())
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1:
        return None
    node = tree.body[0]
    if not isinstance(node, ast.ImportFrom) or node.module or node.level < 1:
        return None
    pkg_dir = os.path.dirname(file)
    for _ in range(node.level - 1):  # one directory up per dot beyond the first
        pkg_dir = os.path.dirname(pkg_dir)
    return os.path.join(pkg_dir, "__init__.py"), [a.name for a in node.names]


commandcache.register(module_bindings.cache_clear)  # keyed on the path alone


def _innermost_try(body: list[ast.stmt], line: int) -> ast.Try | None:
    """The innermost ``try`` whose body holds the statement at ``line``."""
    found: ast.Try | None = None
    for stmt in body:
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        if not stmt.lineno <= line <= end:
            continue
        if isinstance(stmt, ast.Try) and any(
                s.lineno <= line <= (getattr(s, "end_lineno", None) or s.lineno)
                for s in stmt.body):
            found = stmt
        for block in ("body", "orelse", "finalbody"):
            inner = _innermost_try(getattr(stmt, block, []) or [], line)
            found = inner or found
        for handler in getattr(stmt, "handlers", []) or []:
            found = _innermost_try(handler.body, line) or found
    return found


def designed_fallback(file: str, line: int, package: str) -> str:
    """How the ``try`` around the import at ``line`` of ``file`` keeps a pure-Python version
    when the import fails, or "": its handler imports another module of ``package`` instead
    (propcache's ``except ImportError: from ._helpers_py import …``), or the ``try`` rebinds
    a name the module defined before it (frozenlist's ``class FrozenList`` … ``else:
    FrozenList = CFrozenList``; aiohttp's ``_serialize_headers``): an accelerator by
    design."""
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file)
    node = _innermost_try(tree.body, line) if tree is not None else None
    if node is None:
        return ""
    top = package.split(".")[0]
    for handler in node.handlers:
        for stmt in handler.body:
            # a module of the package itself (not `import warnings` to say it failed)
            if isinstance(stmt, ast.ImportFrom) and stmt.module and (
                    stmt.level or stmt.module.split(".")[0] == top):
                return f"its handler imports {'.' * stmt.level}{stmt.module} instead"
            if isinstance(stmt, ast.Import) and stmt.names[0].name.split(".")[0] == top:
                return f"its handler imports {stmt.names[0].name} instead"
    rebound: set[str] = set()
    _walk([*node.body, *node.orelse], rebound)
    before: set[str] = set()
    assert tree is not None
    _defined_before(tree.body, node.lineno, before)
    same = sorted(rebound & before)
    return f"it rebinds {same[0]}, which the module defined before it" if same else ""


def _defined_before(body: list[ast.stmt], line: int, names: set[str]) -> None:
    """The names the module defines before ``line`` as an implementation — a def, a class,
    an import, an assignment of another name (``_serialize_headers =
    _py_serialize_headers``) — in the statements that end before it and in the blocks that
    hold it (``if not NO_EXTENSIONS:`` around frozenlist's ``try``). A placeholder (``_C =
    None``) is no implementation: a ``try`` that replaces it hides a failed load."""
    for stmt in body:
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        if end < line:
            for inner in _module_statements(stmt):
                if isinstance(inner, (ast.Assign, ast.AnnAssign)) and (
                        inner.value is None or isinstance(inner.value, ast.Constant)):
                    continue
                _bound(inner, names)
        elif stmt.lineno < line and not isinstance(
                stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in ("body", "orelse", "finalbody"):
                _defined_before(getattr(stmt, block, []) or [], line, names)


def _module_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """``stmt`` and the statements of its blocks that run with it (not function bodies)."""
    out = [stmt]
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for block in ("body", "orelse", "finalbody"):
            for inner in getattr(stmt, block, []) or []:
                out += _module_statements(inner)
        for handler in getattr(stmt, "handlers", []) or []:
            for inner in handler.body:
                out += _module_statements(inner)
    return out


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def import_guarded(file: str, line: int) -> bool:
    """Whether the statement at ``line`` of ``file`` is inside a ``try`` whose handler catches
    ImportError (or a bare ``except``), whatever the handler does: an optional module the
    package answers for itself (Cython's ``except ImportError: raise RuntimeError("Formal
    grammar can only be used with compiled Cython …")``)."""
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file)
    node = _innermost_try(tree.body, line) if tree is not None else None
    if node is None:
        return False
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if handler.type is None or any(
                isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds):
            return True
    return False


def one_line(statement: str, limit: int = 0, comments: bool = False) -> str:
    """A statement as one line: whitespace runs and backslash continuations made one space (a
    parenthesised import over 25 lines, pyzstd's), ``#`` comments dropped unless
    ``comments`` (aiohttp's ``from ._http_parser import (  # type: ignore …``); with
    ``limit``, cut at a word with "…" rather than in the middle of a name."""
    text = statement if comments else _without_comments(statement)
    text = " ".join(text.replace("\\\n", " ").split())
    text = text.replace("( ", "(").replace(" )", ")")
    if not limit or len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _without_comments(source: str) -> str:
    """``source`` without its ``#`` comments (a ``#`` inside a string stays); unchanged when
    it does not tokenize."""
    if "#" not in source:
        return source
    import io
    import tokenize

    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source

