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
        return self.open or name in self.names


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
            # this statement binds it only when that submodule exists.
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
