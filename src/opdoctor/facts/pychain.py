"""The Python import chain, statically: from ``import myop`` to the ``.so`` it loads.

Nothing is imported. The package is located the way CPython's PathFinder does it on the
target interpreter's ``sys.path`` (a regular package or a module in an entry wins at once; a
directory without ``__init__.py`` is only a namespace portion, and the scan goes on), every
candidate is recorded (shadowing), and ``__init__.py`` is parsed (AST) for the statements that
lead to compiled code: ``from . import _C``, ``import myop._C``, ``importlib.import_module``,
``torch.ops.load_library(<expr>)``, ``ctypes.CDLL(<expr>)`` — with path expressions evaluated
when they are built from ``__file__``, ``os.path``, ``pathlib`` and string constants.
"""

from __future__ import annotations

import ast
import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from opdoctor.facts.budget import checkpoint, tick

# Calls that load a compiled library (TensorFlow filesystem plugins load theirs through
# tf.experimental.register_filesystem_plugin).
_LOADERS = {"load_library", "CDLL", "PyDLL", "LoadLibrary", "load_op_library", "cdll",
            "register_filesystem_plugin"}


@dataclass(frozen=True)
class Candidate:
    """One place on sys.path that provides the name."""

    entry: str  # the sys.path entry ('' shown as the cwd)
    path: str
    kind: str  # "package", "namespace", "module", "extension"


@dataclass
class Link:
    """One statement in the chain that leads to compiled code."""

    file: str
    line: int
    kind: str  # "submodule", "load_library", "cdll", "import_module"
    text: str  # the source of the statement
    target: str  # module name or path expression as written
    resolved: list[str] = field(default_factory=list)  # files it resolves to
    swallowed: str = ""  # "try: … except ImportError: pass" around it (the except clause)
    problem: str = ""  # why it cannot work (no file for this interpreter …)
    # A load inside an ``except`` handler: the fallback when the main path failed, not the
    # package's load path (a missing fallback file is no finding of its own).
    fallback: bool = False


@dataclass
class ImportChain:
    """Everything the static reading found for one package."""

    name: str
    candidates: list[Candidate]
    winner: Candidate | None
    links: list[Link] = field(default_factory=list)
    extensions_on_disk: list[str] = field(default_factory=list)  # .so files in the package
    python_files: list[str] = field(default_factory=list)
    script_relative: list[tuple[str, int]] = field(default_factory=list)
    record_missing: list[str] = field(default_factory=list)
    record_changed: list[str] = field(default_factory=list)
    dist: str = ""  # the installed distribution that owns the package (dist-info dir)
    # The walk hit a bound (MAX_MODULES modules, MAX_DEPTH levels, MAX_WALK_FILES files): what
    # was not read cannot be called missing.
    truncated: bool = False

    @property
    def package_dir(self) -> str:
        """The directory of the winning package ("" when it is not a package)."""
        if self.winner and self.winner.kind in ("package", "namespace"):
            return self.winner.path
        return ""

    @property
    def libraries(self) -> list[str]:
        """Compiled files the chain resolves to, in chain order, existing ones only."""
        out: list[str] = []
        for link in self.links:
            for f in link.resolved:
                is_lib = f.endswith((".so", ".pyd")) or ".so." in f
                if is_lib and os.path.isfile(f) and f not in out:
                    out.append(f)
        return out


def locate(name: str, sys_path: list[str], suffixes: list[str], cwd: str) -> list[Candidate]:
    """Every sys.path entry that provides top-level ``name``, in sys.path order."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for entry in sys_path:
        base = os.path.abspath(entry or cwd)
        if not os.path.isdir(base) or os.path.realpath(base) in seen:
            continue  # the same directory twice on sys.path is searched once in effect
        seen.add(os.path.realpath(base))
        d = os.path.join(base, name)
        if os.path.isfile(os.path.join(d, "__init__.py")):
            out.append(Candidate(entry, d, "package"))
            continue
        found = False
        for suf in suffixes:
            f = os.path.join(base, name + suf)
            if os.path.isfile(f):
                out.append(Candidate(entry, f, "extension" if suf != ".py" else "module"))
                found = True
                break
        if not found and os.path.isdir(d):
            out.append(Candidate(entry, d, "namespace"))
    return out


def winner_of(cands: list[Candidate]) -> Candidate | None:
    """What ``import name`` picks: the first regular package or module, else a namespace."""
    for c in cands:
        if c.kind != "namespace":
            return c
    return cands[0] if cands else None


class _Eval(ast.NodeVisitor):
    """A tiny evaluator for path expressions built from __file__ and string constants."""

    def __init__(self, file: str, names: dict[str, object]) -> None:
        self.file = file
        self.names = names

    def value(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.file
            return self.names.get(node.id)
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v.value) if isinstance(v, ast.FormattedValue) else self.value(v)
                     for v in node.values]
            return "".join(str(p) for p in parts) if all(isinstance(p, str) for p in parts) \
                else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
            a, b = self.value(node.left), self.value(node.right)
            if isinstance(a, str) and isinstance(b, str):
                return os.path.join(a, b) if isinstance(node.op, ast.Div) else a + b
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            v = self.value(node.value)
            return os.path.dirname(v) if isinstance(v, str) else None
        if isinstance(node, ast.Subscript):
            v = self.value(node.value)
            if isinstance(v, list) and v:
                return v[0]
            return None
        if isinstance(node, ast.Call):
            fn = _dotted(node.func)
            args = [self.value(a) for a in node.args]
            if not all(isinstance(a, str) for a in args):
                return None
            last = fn.rsplit(".", 1)[-1]
            if last == "join" and args:
                return os.path.join(*[str(a) for a in args])
            if last in ("dirname",) and args:
                return os.path.dirname(str(args[0]))
            if last in ("abspath", "realpath", "normpath", "resolve", "expanduser") and args:
                return os.path.abspath(str(args[0]))
            if last in ("resolve", "absolute") and not args and isinstance(node.func,
                                                                          ast.Attribute):
                v = self.value(node.func.value)
                return os.path.abspath(v) if isinstance(v, str) else None
            if last in ("Path", "PurePath", "str", "fspath") and len(args) == 1:
                return args[0]
            if last in ("glob", "iglob") and args:
                return sorted(glob.glob(str(args[0])))
            if last == "get_path_to_datafile" and len(args) == 1:
                # TensorFlow's resource_loader: the path relative to the calling module's
                # directory (how tensorflow-text and tensorflow-io name their op libraries).
                return os.path.join(os.path.dirname(self.file), str(args[0]))
        return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _swallow(handler_stack: list[ast.ExceptHandler]) -> str:
    """The except clause that swallows ImportError/OSError around a statement, if any."""
    for h in reversed(handler_stack):
        names = {_dotted(t) for t in (h.type.elts if isinstance(h.type, ast.Tuple) else
                                       [h.type])} if h.type is not None else {"<bare>"}
        catches = names & {"ImportError", "ModuleNotFoundError", "OSError", "Exception",
                           "BaseException", "<bare>", "RuntimeError"}
        reraises = any(isinstance(n, ast.Raise) for n in ast.walk(h))
        # A handler that loads something else (fbgemm_gpu: load_library(unified_path), on failure
        # load_library(cuda_path); or `from ._C_fallback import x`) does not discard the error:
        # when the fallback fails too, its own error propagates.
        falls_back = any(
            (isinstance(n, ast.Call) and _dotted(n.func).rsplit(".", 1)[-1] in _LOADERS) or
            (isinstance(n, ast.ImportFrom) and n.level >= 1) for n in ast.walk(h))
        if catches and not reraises and not falls_back:
            return f"except {', '.join(sorted(catches)).replace('<bare>', '')}: (line {h.lineno})"
    return ""


def module_files(pkg_dir: str, mod: str, suffixes: list[str]) -> tuple[list[str], list[str]]:
    """(files that import as ``mod`` here, other builds of ``mod`` that do not)."""
    good = []
    for suf in suffixes:
        f = os.path.join(pkg_dir, mod + suf)
        if os.path.isfile(f):
            good.append(f)
    if os.path.isfile(os.path.join(pkg_dir, mod, "__init__.py")):
        good.append(os.path.join(pkg_dir, mod, "__init__.py"))
    others = sorted(f for f in glob.glob(os.path.join(pkg_dir, mod + ".*"))
                    if f not in good and (f.endswith(".so") or f.endswith(".pyd")))
    return good, others


# Bounds: a package's import chain to its extension is a few modules deep; a file larger than
# this is generated code, not the statements that load a library.
MAX_DEPTH = 3
MAX_MODULES = 48
MAX_SOURCE_BYTES = 4 << 20  # one module
MAX_TOTAL_BYTES = 3 << 20  # all modules followed for one package
MAX_WALK_FILES = 50_000


_TRUNCATED = "\0truncated"  # put in `seen` when a bound stopped the walk


def _size(file: str) -> int:
    try:
        return os.path.getsize(file)
    except OSError:
        return 0


@dataclass(frozen=True)
class _Source:
    """A parsed module and the byte offsets of its lines (for statement text in O(length))."""

    tree: ast.Module
    lines: tuple[bytes, ...]
    hot: tuple[int, ...]  # hot[i]: lines 1..i that mention a loader name (a running count)

    def may_call(self, node: ast.AST) -> bool:
        """False only when no line of ``node`` mentions a loader or import_module."""
        first = getattr(node, "lineno", None)
        last = getattr(node, "end_lineno", None)
        if not isinstance(first, int) or not isinstance(last, int) or \
                not 1 <= first <= last < len(self.hot):
            return True
        return self.hot[last] > self.hot[first - 1]

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node`` — what ``ast.get_source_segment`` returns, without
        re-splitting the whole file on every call (which made a long module quadratic)."""
        first = getattr(node, "lineno", 0) - 1
        last = getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", None)
        if not isinstance(last, int) or not isinstance(end_col, int) or \
                not 0 <= first < last <= len(self.lines):
            return ""
        if first == last - 1:  # col offsets are UTF-8 byte offsets, as in the AST
            raw = self.lines[first][col:end_col]
        else:
            raw = (self.lines[first][col:] + b"".join(self.lines[first + 1:last - 1])
                   + self.lines[last - 1][:end_col])
        return raw.decode("utf-8", "replace")


# Line ends as the tokenizer (and ast.get_source_segment) see them: not form feeds or the other
# characters str.splitlines() also splits on.
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


_HOT = re.compile(rb"load_library|load_op_library|CDLL|PyDLL|LoadLibrary|cdll|import_module|"
                  rb"register_filesystem_plugin")


@lru_cache(maxsize=256)
def _parse(file: str, mtime_ns: int, size: int) -> _Source | None:
    """Parse a module once per run (memoised on its path, mtime and size)."""
    if size > MAX_SOURCE_BYTES:
        return None
    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_SOURCE_BYTES + 1)
        tree = ast.parse(raw.decode("utf-8"), file)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = tuple(_LINE.findall(raw))
    hot = [0]
    for line in lines:
        hot.append(hot[-1] + (1 if _HOT.search(line) else 0))
    return _Source(tree, lines, tuple(hot))


def _source(file: str) -> _Source | None:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return _parse(file, st.st_mtime_ns, st.st_size)


def _not_a_path(value: str) -> bool:
    """A build-system target (``//deeplearning/fbgemm/fbgemm_gpu:cumem_utils``) or a URL:
    strings a loader call may get in another build of the package, never a file here."""
    return value.startswith("//") or "://" in value


def parse_links(file: str, package: str, suffixes: list[str], depth: int = 0,
                seen: set[str] | None = None, top_dir: str = "") -> list[Link]:
    """Statements in ``file`` (and the package modules it imports) that lead to compiled code.

    ``top_dir`` is the top-level package's directory (the directory of ``file`` when empty):
    absolute imports ``from pkg.x import y`` resolve from it wherever ``file`` sits.
    Linear in the size of the modules read: each is parsed once, statement text is cut from a
    line table only for the statements that become links, at most ``MAX_MODULES`` modules are
    followed ``MAX_DEPTH`` deep, and the walk stops at compiled code.
    """
    seen = seen if seen is not None else set()
    if file in seen:
        return []
    read = [f for f in seen if f != _TRUNCATED]
    if depth > MAX_DEPTH or len(read) >= MAX_MODULES or \
            sum(_size(f) for f in read) > MAX_TOTAL_BYTES:
        seen.add(_TRUNCATED)
        return []
    seen.add(file)
    checkpoint(f"reading module {file}")
    parsed = _source(file)
    if parsed is None:
        return []
    tree = parsed.tree
    pkg_dir = os.path.dirname(file)
    top_dir = top_dir or pkg_dir
    names: dict[str, object] = {}
    links: list[Link] = []
    ev = _Eval(file, names)

    def _import_path(parts: list[str], base: str, node: ast.ImportFrom | None,
                seg: str) -> list[Link]:
        """Links for importing ``parts`` (``a.b.c`` under ``base``), as the import system runs
        them: each package's ``__init__`` in turn, then, for ``from a.b import x``, each name
        that is a submodule of ``a.b`` (``from tensorflow_text.python import keras``)."""
        out: list[Link] = []
        step: Link | None = None  # the statement's own link: one per statement, its last level
        here = base
        for i, mod in enumerate(parts):
            if i and not module_files(here, mod, suffixes)[0] and \
                    not os.path.isdir(os.path.join(here, mod)):
                break  # a deeper level not found here: an attribute, not a module
            if step is not None and not step.problem:
                out.remove(step)
            got = _submodule(file, lineno, seg, mod, here, package, suffixes, handlers_now,
                             depth, seen, top_dir)
            step = got[0]
            out += got
            sub = os.path.join(here, mod)
            if not os.path.isfile(os.path.join(sub, "__init__.py")) and (
                    not os.path.isdir(sub) or module_files(here, mod, suffixes)[0]):
                # A module file (or missing): what follows are its attributes. A directory
                # without __init__.py and without a module file of that name is a namespace
                # package, as the import system finds it: its submodules are followed.
                break
            here = os.path.join(here, mod)
        else:
            for a in node.names if node is not None else []:
                if a.name != "*" and module_files(here, a.name, suffixes)[0]:
                    out += _submodule(file, lineno, seg, a.name, here, package, suffixes,
                                      handlers_now, depth, seen, top_dir)
        return out

    lineno = 0
    handlers_now: list[ast.ExceptHandler] = []

    def visit(node: ast.AST, handlers: list[ast.ExceptHandler], in_except: bool = False) -> None:
        nonlocal lineno, handlers_now
        if isinstance(node, ast.Try):
            inner = handlers + list(node.handlers)
            for n in node.body:
                visit(n, inner, in_except)
            for n in [*node.orelse, *node.finalbody]:
                visit(n, handlers, in_except)
            for h in node.handlers:
                for n in h.body:
                    visit(n, handlers, True)
            return
        if isinstance(node, ast.stmt):
            tick(f"reading module {file}", 64)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = ev.value(node.value)
        seg = parsed.segment(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)) \
            else ""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lineno, handlers_now = node.lineno, handlers
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            # "from .." climbs one directory per dot beyond the first, as the import system does.
            rel_dir = pkg_dir
            for _ in range(node.level - 1):
                rel_dir = os.path.dirname(rel_dir)
            if node.module:
                links.extend(_import_path(node.module.split("."), rel_dir, node, seg))
            else:
                for a in node.names:
                    links.extend(_submodule(file, node.lineno, seg, a.name, rel_dir, package,
                                            suffixes, handlers, depth, seen, top_dir))
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == package and "." in node.module:
            links.extend(_import_path(node.module.split(".")[1:], top_dir, node, seg))
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == package and len(parts) > 1:
                    links.extend(_import_path(parts[1:], top_dir, None, seg))
        if isinstance(node, ast.Call):
            fn = _dotted(node.func)
            last = fn.rsplit(".", 1)[-1]
            if last == "import_module" and node.args:
                target = ev.value(node.args[0])
                if isinstance(target, str):
                    parts = target.lstrip(".").split(".")
                    sub = parts[-1] if target.startswith(".") or parts[0] == package else ""
                    if sub and (len(parts) > 1 or target.startswith(".")):
                        links.extend(_submodule(file, node.lineno, seg, sub,
                                                pkg_dir if target.startswith(".") else top_dir,
                                                package, suffixes, handlers, depth, seen,
                                                top_dir))
            elif last in _LOADERS and node.args:
                value = ev.value(node.args[0])
                resolved = value if isinstance(value, list) else [value] if isinstance(
                    value, str) else []
                targets = [r for r in resolved if not _not_a_path(str(r))]
                not_paths = len(targets) < len(resolved)
                resolved = targets
                link = Link(file, node.lineno, "cdll" if "CDLL" in last or last == "cdll"
                            else "load_library", seg,
                            parsed.segment(node.args[0]) or "?",
                            [os.path.abspath(str(r)) for r in resolved],
                            _swallow(handlers), fallback=in_except)
                if not resolved and not_paths:
                    link.problem = ""  # a build target / URL: not a file this install loads
                elif not resolved:
                    link.problem = "the path expression cannot be evaluated statically"
                elif not any(os.path.isfile(str(r)) for r in resolved):
                    link.problem = f"{resolved[0]} does not exist"
                links.append(link)
        for child in ast.iter_child_nodes(node):
            # Statements are always visited (imports, assignments); an expression only when
            # its lines mention a loader: the calls looked for cannot hide anywhere else.
            if isinstance(child, (ast.stmt, ast.ExceptHandler)) or parsed.may_call(child):
                visit(child, handlers, in_except)

    for stmt in tree.body:
        visit(stmt, [])
    return links


def _submodule(file: str, line: int, seg: str, mod: str, pkg_dir: str, package: str,
               suffixes: list[str], handlers: list[ast.ExceptHandler], depth: int,
               seen: set[str], top_dir: str = "") -> list[Link]:
    good, others = module_files(pkg_dir, mod, suffixes)
    # The module's full dotted name, as the import system names it: `from . import x` in
    # pkg/docs/__init__.py imports pkg.docs.x, not pkg.x (the probe re-imports this name).
    rel = os.path.relpath(pkg_dir, top_dir) if top_dir else "."
    inner = "" if rel == "." or rel.startswith("..") else "." + rel.replace(os.sep, ".")
    link = Link(file, line, "submodule", seg, f"{package}{inner}.{mod}", good,
                _swallow(handlers))
    out = [link]
    py = [g for g in good if g.endswith(".py")]
    if py:
        link.resolved = py
        out += parse_links(py[0], package, suffixes, depth + 1, seen, top_dir or pkg_dir)
        return out
    if not good and others:
        names = ", ".join(os.path.basename(o) for o in others)
        link.problem = (f"no file for this interpreter: only {names} (this interpreter "
                        f"imports {mod}{suffixes[0]})")
    elif not good and os.path.isdir(os.path.join(pkg_dir, mod)):
        # A directory without __init__.py imports as a namespace subpackage (tensorflow_text's
        # core/ is one): importable, nothing to follow.
        link.resolved = [os.path.join(pkg_dir, mod)]
    elif not good:
        link.problem = f"no module {mod} in {pkg_dir}"
    return out


def _record_check(chain: ImportChain, site: str) -> None:
    """Files a dist-info RECORD lists that are missing or whose hash differs."""
    # Imported here: only a package analysis reads RECORD files (not a check of a library).
    import base64
    import csv
    import hashlib

    for dist in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        record = os.path.join(dist, "RECORD")
        try:
            with open(record, encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
        except OSError:
            continue
        owns = any(r and (r[0].startswith(chain.name + "/") or r[0].startswith(chain.name + "."))
                   for r in rows)
        if not owns:
            continue
        chain.dist = dist
        for row in rows:
            if not row or not row[0] or row[0].endswith("RECORD"):
                continue
            path = os.path.normpath(os.path.join(site, row[0]))
            checkpoint(f"checking {row[0]} against {os.path.basename(dist)}/RECORD")
            if not os.path.exists(path):
                chain.record_missing.append(row[0])
            elif len(row) > 1 and row[1].startswith("sha256=") and \
                    (path.endswith((".so", "__init__.py")) or ".so." in path) and \
                    os.path.getsize(path) < (512 << 20):
                # Hash the compiled libraries and __init__ files (what a rebuild in place or a
                # hand edit changes), not every .py of a large package.
                with open(path, "rb") as fh:
                    digest = base64.urlsafe_b64encode(
                        hashlib.sha256(fh.read()).digest()).rstrip(b"=").decode()
                if digest != row[1][len("sha256="):]:
                    chain.record_changed.append(row[0])
        return


def analyse(name: str, sys_path: list[str], ext_suffix: str, cwd: str) -> ImportChain:
    """Locate the package, follow its ``__init__.py``, check its installed RECORD (once per
    run for the same package and interpreter: target expansion and the check share it)."""
    return _analyse(name, tuple(sys_path), ext_suffix, cwd)


@lru_cache(maxsize=16)
def _analyse(name: str, sys_path: tuple[str, ...], ext_suffix: str, cwd: str) -> ImportChain:
    suffixes = [ext_suffix, ".abi3.so", ".so", ".py"]
    cands = locate(name, list(sys_path), suffixes, cwd)
    chain = ImportChain(name, cands, winner_of(cands))
    pkg = chain.package_dir
    if not pkg:
        return chain
    init = os.path.join(pkg, "__init__.py")
    if os.path.isfile(init):
        seen: set[str] = set()
        chain.links = parse_links(init, name, suffixes, seen=seen)
        chain.truncated = _TRUNCATED in seen
    walked = 0
    for root, _dirs, files in os.walk(pkg):
        walked += len(files)
        if walked > MAX_WALK_FILES:
            chain.truncated = True
            break
        checkpoint(f"listing package directory {root}")
        for f in sorted(files):
            full = os.path.join(root, f)
            if f.endswith(".so") or ".so." in f:
                chain.extensions_on_disk.append(full)
            elif f.endswith(".py"):
                chain.python_files.append(full)
                chain.script_relative += _script_relative(full)
    site = os.path.dirname(pkg)
    _record_check(chain, site)
    return chain


_MAIN_GUARD = re.compile(rb"^if __name__ == ['\"]__main__['\"]", re.M)
_RELATIVE_FROM = re.compile(rb"^[ \t]*from[ \t]+\.", re.M)


def _script_relative(file: str) -> list[tuple[str, int]]:
    """Relative imports in a file that also has an ``if __name__ == "__main__"`` block."""
    try:
        if os.path.getsize(file) > MAX_SOURCE_BYTES:
            return []
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    # Bytes, not decoded text: the patterns are ASCII, so they match the same lines, and most
    # files are rejected by the first substring test without decoding anything.
    if b"__main__" not in raw or not _MAIN_GUARD.search(raw) or not _RELATIVE_FROM.search(raw):
        return []  # parse only a file that may have both
    parsed = _source(file)
    if parsed is None:
        return []
    return [(file, n.lineno) for n in _statements(parsed.tree.body)
            if isinstance(n, ast.ImportFrom) and n.level >= 1][:1]


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without visiting a single expression."""
    for stmt in body:
        yield stmt
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for part in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
            yield from _statements(part.body)


MAX_SCAN_FILES = 4000  # Python files of one package scanned for loader calls (loader_calls)


def loader_calls(chain: ImportChain, libraries: list[str]) -> list[str]:
    """``file:line`` of code anywhere in the package that loads compiled code or imports one
    of ``libraries`` by its module name — outside the chain followed from ``__init__.py`` too.

    A package may load its libraries lazily or through names built at run time
    (``tensorflow_io``'s ops modules, ``bitsandbytes.cextension`` picking a file per backend):
    the static chain then resolves nothing, yet saying "the package never loads it" (OD505)
    would be a guess the code refutes. Docstrings and comments do not count: only calls
    (``load_library``, ``CDLL``, ``load_op_library`` …) and import statements, from the AST.
    """
    stems = {os.path.basename(lib).split(".")[0] for lib in libraries}
    stems.discard("")
    pattern = re.compile(_HOT.pattern + b"|" + b"|".join(
        re.escape(s.encode()) for s in sorted(stems))) if stems else _HOT
    found: list[str] = []
    for file in chain.python_files[:MAX_SCAN_FILES]:
        try:
            if _size(file) > MAX_SOURCE_BYTES:
                continue
            with open(file, "rb") as fh:
                if not pattern.search(fh.read()):
                    continue
        except OSError:
            continue
        parsed = _source(file)
        if parsed is None:
            continue
        for node in ast.walk(parsed.tree):
            hit = False
            if isinstance(node, ast.Call):
                hit = _dotted(node.func).rsplit(".", 1)[-1] in _LOADERS
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or "", *(a.name for a in node.names)]
                hit = any(m.split(".")[-1] in stems for m in mods if m)
            elif isinstance(node, ast.Import):
                hit = any(a.name.split(".")[-1] in stems for a in node.names)
            if hit:
                found.append(f"{file}:{getattr(node, 'lineno', 0)}")
                break
        if len(found) >= 3:
            break
    return found
