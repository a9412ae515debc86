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
import dataclasses
import glob
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.budget import checkpoint, tick
from opdoctor.facts.inputfile import is_shared_library
from opdoctor.facts.pkgdir import editable_mapping, importable, site_dirs, skbc_redirects
from opdoctor.facts.pyast import all_nodes

# Calls that load a compiled library (TensorFlow filesystem plugins load theirs through
# tf.experimental.register_filesystem_plugin).
_LOADERS = {"load_library", "CDLL", "PyDLL", "LoadLibrary", "load_op_library", "cdll",
            "register_filesystem_plugin", "dlopen"}  # (dlopen: cffi's ``ffi.dlopen``)


@dataclass(frozen=True)
class Candidate:
    """One place on sys.path that provides the name."""

    entry: str  # the sys.path entry ('' shown as the cwd)
    path: str
    kind: str  # "package", "namespace", "module", "extension"
    # The editable install's finder that maps the name to ``path`` (setuptools, PEP 660;
    # ``entry`` is then the site directory whose .pth installs it); "" for a sys.path entry.
    via: str = ""


# Appended to a swallowing except clause that hands the exception to a call (a logger, a
# helper that raises): the import is still optional, but its error is not discarded (OD509).
REPORTED = " (it reports the error)"

# A loader call whose path argument static evaluation cannot compute (a search function, a
# platform table): unknown, not wrong — the real import may still find the file.
UNEVALUATED = "the path expression cannot be evaluated statically"


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
    # A load inside an ``except`` handler, or an import of the package's own module in the
    # handler of a ``try`` whose own such imports resolve: the fallback when the main path
    # failed, not the package's load path (a missing fallback file is no finding of its own).
    fallback: bool = False
    # The function whose body holds a load call ("" at module level): whether it runs at
    # import is known only where a call site computes its argument.
    function: str = ""
    # The condition that asks whether the module exists before importing it ("" when none):
    # a module missing there is a branch not taken, not an error.
    checked: str = ""
    # A load inside a function whose every call site computing its path is inside another
    # function (torchaudio's `_load_lib("libtorchaudio_sox")` in `_import_sox_ext()`, run on
    # the SoX backend's first use): not part of the package's import.
    lazy: bool = False
    # The builds of the module for other interpreters or platforms, when only those are there
    # (file names): what `problem` says, for the check to tell which (built_for).
    other_builds: list[str] = field(default_factory=list)
    # A load in a function whose failure leaves it (re-raised as the package's own exception
    # type, or not caught there) and is caught around every call the import makes of it: the
    # except clause (xformers' `except xFormersInvalidLibException`). Not ``swallowed``: the
    # import does run the load, and a probe sees it fail as it happens (OD512).
    caught_by_caller: str = ""
    # The module-level `if` whose condition no static reading decides, around it ("" when
    # none): whether the import runs it depends on the run (tensorflow-graphics imports its
    # subpackages only `if _import_tfg_docs():`, an environment variable's value).
    branch: str = ""
    # Other distributions' modules a ``try`` body imports before this statement (metatensor-
    # torch: ``try: import metatensor_learn; from . import learn … except ImportError: pass``):
    # the import reaches it only where they import; absent, the body stops before it.
    after: list[str] = field(default_factory=list)
    # The bare library names a load asks the system's search for (``ffi.dlopen(
    # "libvips.so.42")``): no file of the install, the loader's search path decides.
    by_name: list[str] = field(default_factory=list)
    # For a load in an ``except`` handler: the other distributions' modules its ``try`` body
    # imports (pyvips: ``try: import _libvips … except Exception: … ffi.dlopen(…)``): where
    # none of them is installed, the handler is what the import runs.
    handles: list[str] = field(default_factory=list)
    # A ctypes load of ``find_library(name)``'s answer where this system has no such library
    # (python-vlc: ``ctypes.CDLL(find_library("vlc"))``): the name. CDLL(None) loads the
    # program itself, so the import goes on and the package's first call fails.
    process_handle: str = ""


_BUILD_TAG = re.compile(r"\.(?:cpython-(?P<py>\d+)(?P<ft>t?)(?:-(?P<plat>[\w-]+))?|cp(?P<cp>\d+)-"
                        r"(?P<win>win\w*)|(?P<pypy>pypy\d+)[\w.-]*|abi3)\.(?P<ext>so|pyd)$")


def interpreter_tag(ext_suffix: str) -> tuple[int, str] | None:
    """(CPython 3's minor version, the machine) an interpreter's extension suffix names:
    ``.cpython-311-x86_64-linux-gnu.so`` → (11, "x86_64"); None for another form."""
    m = _BUILD_TAG.search(ext_suffix)
    if m is None or not m["py"] or not m["py"].startswith("3") or not m["plat"] or \
            "-linux-" not in m["plat"]:
        return None
    return int(m["py"][1:]), m["plat"].split("-linux-")[0]


def built_for(name: str, this_suffix: str) -> list[str]:
    """What an extension file name says it was built for, where this interpreter's suffix
    (``.cpython-311-x86_64-linux-gnu.so``) says otherwise: ["CPython 3.12"], ["aarch64"],
    ["musl libc"], ["Windows"], ["macOS"], ["PyPy"] — [] when the name tells nothing else."""
    theirs, mine = _BUILD_TAG.search(name), _BUILD_TAG.search(this_suffix)
    if theirs is None or mine is None:
        return []
    out = []
    if theirs["ext"] == "pyd" or theirs["win"]:
        out.append("Windows")
    elif theirs["pypy"]:
        out.append("PyPy")
    elif theirs["plat"] and mine["plat"] and theirs["plat"] != mine["plat"]:
        plat, here = theirs["plat"], mine["plat"]
        if "darwin" in plat:
            out.append("macOS")
        else:
            arch, _, libc = plat.partition("-linux-")
            my_arch, _, my_libc = here.partition("-linux-")
            if arch != my_arch:
                out.append(arch)
            if libc != my_libc and "musl" in libc:
                out.append("musl libc")
    py = theirs["py"] or theirs["cp"]
    if py and mine["py"] and (py != mine["py"] or bool(theirs["ft"]) != bool(mine["ft"])):
        # free-threaded CPython (3.13t) has its own ABI and suffix (regex's cp313t wheel)
        out.append(f"{'free-threaded ' if theirs['ft'] else ''}CPython {py[0]}.{py[1:]}")
    return out


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
    # Other dist-info directories of the same site whose RECORD lists the package too (a
    # second release installed over the first: `pip install --target` reused without
    # --upgrade, a wheel unpacked over an install; survey 22's A3, A5).
    other_dists: list[str] = field(default_factory=list)
    record_changed: list[str] = field(default_factory=list)
    # The distribution's RECORD lists the package's __init__.py (None: no RECORD read); a
    # RECORD without it ships a namespace package on purpose (executorch).
    record_has_init: bool | None = None
    dist: str = ""  # the installed distribution that owns the package (dist-info dir)
    # "name version" of the distribution that installed each candidate, by its path ("" for
    # a copy no distribution records: a source checkout, a build tree); read only when there
    # are several candidates.
    releases: dict[str, str] = field(default_factory=dict)
    sys_path: tuple[str, ...] = ()  # the target interpreter's, where distributions are found
    # The walk hit a bound (MAX_MODULES modules, MAX_DEPTH levels, MAX_WALK_FILES files): what
    # was not read cannot be called missing.
    truncated: bool = False
    # Modules the package's ``__init__.py`` demands be imported before it (a top-level
    # ``if "psycopg" not in sys.modules: raise ImportError(…)``, psycopg_binary's guard).
    imported_first: list[str] = field(default_factory=list)
    # Other top-level packages ``__init__.py`` imports at module level (paddle2onnx's `import
    # paddle`, inside a try): their import runs before the package's own modules load.
    imports_packages: list[str] = field(default_factory=list)

    @property
    def package_dir(self) -> str:
        """The directory of the winning package ("" when it is not a package)."""
        if self.winner and self.winner.kind in ("package", "namespace"):
            return self.winner.path
        return ""

    def failing(self, target: str) -> str:
        """How a swallowed import the probe saw fail is named: ``import pkg.mod``, or, for a
        load call (whose target is its path expression, ``str(file)``), ``loading libx.so``."""
        for lk in self.links:
            if lk.target == target and lk.kind in ("load_library", "cdll"):
                return f"loading {os.path.basename(lk.resolved[0]) if lk.resolved else target}"
        if os.path.isabs(target) and is_shared_library(os.path.basename(target)):
            return f"loading {os.path.basename(target)}"  # a load only the output told of
        return f"import {target}"

    def called_later(self, target: str) -> str:
        """The function whose body holds every swallowed import of ``target`` ("" when one
        runs at import): numba imports its TBB threading backend inside
        ``select_known_backend()`` and tries the next backend when it fails — an optional
        path, whatever it raises here."""
        funcs = [lk.function for lk in self.links if lk.target == target and lk.swallowed]
        return funcs[0] if funcs and all(funcs) else ""

    @property
    def computed_loads(self) -> bool:
        """Whether the chain loads libraries by paths no static evaluation computes
        (``load_op_library(get_path_to_datafile(name))``): it does load something."""
        return any(link.problem == UNEVALUATED and link.kind in ("load_library", "cdll")
                   for link in self.links)

    @property
    def libraries(self) -> list[str]:
        """Compiled files the chain resolves to, in chain order, existing ones only: what the
        module bodies run first, then imports inside functions, then the loads only a lazily
        called function makes (torchaudio's SoX library, on the SoX backend's first use)."""
        out: list[str] = []
        for link in sorted(self.links, key=lambda lk: (
                lk.lazy, bool(lk.function) and lk.kind == "submodule")):
            for f in link.resolved:
                is_lib = f.endswith((".so", ".pyd")) or ".so." in f
                if is_lib and os.path.isfile(f) and f not in out:
                    out.append(f)
        return out


def locate(name: str, sys_path: list[str], suffixes: list[str], cwd: str) -> list[Candidate]:
    """Every sys.path entry that provides ``name``, in sys.path order. A dotted name
    (``google.protobuf``) is looked up as Python does: in the winning top-level package's
    directory, or in every portion of a namespace package, in order."""
    head, _, rest = name.partition(".")
    out: list[Candidate] = []
    seen: set[str] = set()
    for entry in sys_path:
        base = os.path.abspath(entry or cwd)
        if not os.path.isdir(base) or os.path.realpath(base) in seen:
            continue  # the same directory twice on sys.path is searched once in effect
        seen.add(os.path.realpath(base))
        found = _found_in(entry, base, head, suffixes)
        if found is not None:
            out.append(found)
    if not out:
        # No sys.path entry provides it: an editable install's finder (appended to
        # sys.meta_path, after the path finder) may map it to a source tree.
        mapped = editable_mapping(tuple(sys_path)).get(head)
        if mapped is not None:
            found = _mapped(mapped[0], os.path.dirname(mapped[1]), suffixes)
            if found is not None:
                out.append(Candidate(found.entry, found.path, found.kind, mapped[1]))
    if not rest:
        return out
    win = winner_of(out)
    if win is None or win.kind not in ("package", "namespace"):
        return []
    portions = [win] if win.kind == "package" else [c for c in out if c.kind == "namespace"]
    deeper: list[Candidate] = []
    for c in portions:
        where: Candidate | None = c
        for part in rest.split("."):
            if where is None or where.kind not in ("package", "namespace"):
                where = None
                break
            where = _found_in(c.entry, where.path, part, suffixes)
        if where is not None:
            deeper.append(where)
    return deeper


def _found_in(entry: str, base: str, name: str, suffixes: list[str]) -> Candidate | None:
    """What ``name`` is in directory ``base``: a package, a module, an extension, a namespace
    portion, or nothing."""
    d = os.path.join(base, name)
    if os.path.isfile(os.path.join(d, "__init__.py")):
        return Candidate(entry, d, "package")
    for suf in suffixes:
        f = os.path.join(base, name + suf)
        if os.path.isfile(f):
            return Candidate(entry, f, "extension" if suf != ".py" else "module")
    return Candidate(entry, d, "namespace") if os.path.isdir(d) else None


def _mapped(path: str, site: str, suffixes: list[str]) -> Candidate | None:
    """What setuptools' editable finder makes of a ``MAPPING`` value: a package directory
    (its ``__init__.py``), or a module file; None where it finds nothing (a directory
    without ``__init__.py``: its namespaces are mapped apart)."""
    if os.path.isfile(os.path.join(path, "__init__.py")):
        return Candidate(site, path, "package")
    if os.path.isfile(path):
        kind = "module" if path.endswith(".py") else "extension"
        return Candidate(site, path, kind) if any(path.endswith(s) for s in suffixes) else None
    return None


def winner_of(cands: list[Candidate]) -> Candidate | None:
    """What ``import name`` picks: the first regular package or module, else a namespace."""
    for c in cands:
        if c.kind != "namespace":
            return c
    return cands[0] if cands else None


@dataclass(frozen=True)
class _Func:
    """A function of a package module: evaluated with its arguments bound (call sites)."""

    node: ast.FunctionDef
    file: str
    names: dict[str, object]


@dataclass(frozen=True)
class _Finder:
    """``importlib.machinery.FileFinder(directory, (loader, suffixes))``."""

    directory: str
    suffixes: tuple[str, ...]


@dataclass(frozen=True)
class _Spec:
    """What ``FileFinder.find_spec(name)`` returns: its ``.origin`` is the file."""

    origin: str


def _find_library(name: str) -> str | None:
    """``ctypes.util.find_library(name)`` as Linux answers it from ld.so.cache: the SONAME
    of a ``lib<name>.so[.N…]`` it lists; None when it lists none (ctypes may still find one
    through the compiler: undecided here)."""
    from opdoctor.facts.loader.ldcache import load_ld_cache

    want = re.compile(rf"lib{re.escape(name)}\.so(?:\.\d+)*$")
    found = sorted(k for k in load_ld_cache("/etc/ld.so.cache") if want.match(k))
    return found[0] if found else None


@dataclass(frozen=True)
class NoLibrary:
    """``ctypes.util.find_library(name)``'s None for a library this system has nowhere that
    function looks (the ld.so cache, the linker's directories, LD_LIBRARY_PATH): a value
    known to be None — false, as None is — not an unknown one."""

    name: str

    def __bool__(self) -> bool:
        return False


def _nowhere(name: str, env: dict[str, str] | None) -> bool:
    """Whether no ``lib<name>.so*`` is where ``find_library`` looks besides the ld.so cache:
    the linker's default directories (its gcc probe: the loader's, and /usr/local/lib) and
    LD_LIBRARY_PATH (its ld probe)."""
    from opdoctor.facts.loader.search import DEFAULT_DIRS

    prefix = f"lib{name}.so"
    linker = dict.fromkeys([*(d for dirs in DEFAULT_DIRS.values() for d in dirs),
                            "/usr/local/lib"])
    # the job's environment when known (an empty one included), else this process's
    dirs = [*linker, *(d for d in ((env if env is not None else os.environ).get(
        "LD_LIBRARY_PATH") or "").split(":") if d)]
    for d in dirs:
        try:
            if any(e.startswith(prefix) for e in os.listdir(d)):
                return False
        except OSError:
            continue
    return True


@dataclass(frozen=True)
class _ModuleFile:
    """A name an import binds to a module whose file is known: its ``__file__``."""

    path: str


def _imported_file(site: str, name: str, suffixes: tuple[str, ...]) -> str:
    """The ``__file__`` of the module the import of ``name`` (``a.b.c``) finds in ``site``
    (:func:`locate`): an extension, a ``.py`` module or a package's ``__init__.py``; "" when
    none is there (or it is a namespace package, which has none)."""
    win = winner_of(locate(name, [site], [*suffixes, ".py"], site))
    if win is None or win.kind == "namespace":
        return ""
    return os.path.join(win.path, "__init__.py") if win.kind == "package" else win.path


@dataclass(frozen=True)
class Known:
    """Facts of this install that decide conditions statically: the target interpreter's
    extension suffixes (``importlib.machinery.EXTENSION_SUFFIXES``) and its torch build
    (``torch.version.hip`` / ``.cuda``: None on a CPU build)."""

    suffixes: tuple[str, ...] = (".so",)
    torch_hip: str | None = None
    torch_cuda: str | None = None
    torch_known: bool = False  # torch's version.py was read (else torch.version.* is unknown)
    # The job's environment (``os.environ.get("PYTHON_ZSTANDARD_IMPORT_POLICY", "default")``
    # picks zstandard's backend); None: unknown, so such conditions stay undecided.
    env: tuple[tuple[str, str], ...] | None = None
    # Modules an editable install's import hook maps to a file outside the package directory
    # (scikit-build-core: compiled modules stay in site-packages, the sources in the tree).
    redirects: tuple[tuple[str, str], ...] = ()
    # The job's sys.path (empty: unknown): whether another distribution's module imports here
    # decides which part of a `try: import x … else:` runs.
    sys_path: tuple[str, ...] = ()


_NO_KNOWN = Known()
_STR_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold"})
_MAX_STEPS = 400  # statements one evaluation of a function may run (call sites, nesting)


_EXISTS = {"exists": "exists", "lexists": "exists", "isfile": "isfile", "is_file": "isfile",
           "isdir": "isdir", "is_dir": "isdir"}


def _foreign_imports(stmt: ast.stmt, package: str) -> list[str]:
    """The modules of other top-level packages that ``stmt`` imports (``import x.y``,
    ``from x import y``; not the package's own, not relative imports)."""
    top = package.split(".")[0]
    if isinstance(stmt, ast.Import):
        names = [a.name for a in stmt.names]
    elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        names = [stmt.module]
    else:
        return []
    return [n for n in names if n.split(".")[0] != top]


def _spec_names(tree: ast.Module) -> dict[str, str]:
    """Names a module binds to ``importlib.util.find_spec("name")`` (→ that module's name):
    an ``if`` on one asks whether the module is installed."""
    out: dict[str, str] = {}
    for node in all_nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) and \
                _dotted(node.value.func).rsplit(".", 1)[-1] == "find_spec" and \
                node.value.args and isinstance(node.value.args[0], ast.Constant) and \
                isinstance(node.value.args[0].value, str):
            out[node.targets[0].id] = node.value.args[0].value
    return out


def _existence_test(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(path expression, "exists"/"isfile"/"isdir") for ``os.path.exists(p)``,
    ``os.path.isfile(p)``, ``Path(p).exists()`` …; None for anything else."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or \
            node.func.attr not in _EXISTS:
        return None
    kind = _EXISTS[node.func.attr]
    if node.args and _dotted(node.func.value) in ("os.path", "path", "osp"):
        return node.args[0], kind
    inner = node.func.value
    if not node.args and isinstance(inner, ast.Call) and inner.args and \
            _dotted(inner.func).rsplit(".", 1)[-1] in ("Path", "PurePath"):
        return inner.args[0], kind
    return None


class _Eval(ast.NodeVisitor):
    """A tiny evaluator for path expressions built from __file__ and string constants.

    It folds what can be computed here and nothing else: ``os.path``/``pathlib`` joins,
    f-strings, ``glob``, ``importlib.machinery.FileFinder(...).find_spec(name).origin`` with
    the interpreter's ``EXTENSION_SUFFIXES``, a dict ``.get`` on ``platform.system()``, and
    calls of the package's own functions with constant arguments (their bodies run statement
    by statement, taking only branches whose condition is decided here). ``None`` means
    "cannot be computed statically".
    """

    def __init__(self, file: str, names: dict[str, object], known: Known = _NO_KNOWN,
                 local: dict[str, object] | None = None, depth: int = 0,
                 budget: list[int] | None = None) -> None:
        self.file = file
        self.names = names
        self.known = known
        self.local = local if local is not None else {}
        self.depth = depth
        # Statements left to run, shared by nested calls: one evaluation stays bounded.
        self.budget = budget if budget is not None else [_MAX_STEPS]

    # ---------------------------------------------------------------- conditions
    def truth(self, node: ast.AST) -> bool | None:
        """The condition's value when this install decides it (platform, torch build)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            t = self.truth(node.operand)
            return None if t is None else not t
        if isinstance(node, ast.BoolOp):
            vals = [self.truth(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in vals else None if None in vals else True
            return True if True in vals else None if None in vals else False
        if isinstance(node, ast.Call) and _dotted(node.func) == "bool" and len(node.args) == 1:
            return self.truth(node.args[0])
        dotted = _dotted(node)
        if dotted in ("TYPE_CHECKING", "typing.TYPE_CHECKING", "t.TYPE_CHECKING",
                      "typing_extensions.TYPE_CHECKING"):
            # False whenever the code runs (True only for a static type checker): the
            # imports under it never execute (nvidia-cudnn-frontend's engines/base.py).
            return False
        if isinstance(node, (ast.Name, ast.NamedExpr)):
            # A flag computed once (psutil's `LINUX = sys.platform.startswith("linux")`,
            # imported from its _common module): `if LINUX: … elif WINDOWS: …`; a string
            # known here is true when not empty (`if libc_path:`)
            flag = self.value(node)
            return flag if isinstance(flag, bool) else bool(flag) if isinstance(flag, str) \
                else None
        if dotted in ("torch.version.hip", "torch.version.cuda") and self.known.torch_known:
            return bool(self.known.torch_hip if dotted.endswith("hip") else
                        self.known.torch_cuda)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.value(node.left), self.value(node.comparators[0])
            op = node.ops[0]
            if isinstance(a, str) and isinstance(b, str):
                if isinstance(op, ast.Eq):
                    return a == b
                if isinstance(op, ast.NotEq):
                    return a != b
            if isinstance(a, str) and isinstance(b, list) and all(isinstance(x, str) for x in b):
                if isinstance(op, ast.In):
                    return a in b
                if isinstance(op, ast.NotIn):
                    return a not in b
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith") and node.args:
            v, arg = self.value(node.func.value), self.value(node.args[0])
            if isinstance(v, str) and isinstance(arg, str):
                return v.startswith(arg) if node.func.attr == "startswith" else v.endswith(arg)
        path = _existence_test(node)
        if path is not None:
            # `if os.path.exists(f"{cuda_lib_path}/libcudart.so.12"): ctypes.CDLL(…)`
            # (flashinfer): the file system of this install answers it, as the load would
            v = self.value(path[0])
            if isinstance(v, str) and os.path.isabs(v):
                return {"isfile": os.path.isfile, "isdir": os.path.isdir}.get(
                    path[1], os.path.exists)(v)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get":
            # `if os.environ.get('PYGLFW_LIBRARY', ''):` — the job's environment decides it
            # (glfw's load of a user-named library runs only when the variable is set;
            # survey 23's F2)
            v = self.value(node)
            if isinstance(v, str):
                return bool(v)
        return None

    # ---------------------------------------------------------------- values
    def value(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.NamedExpr):
            # `if not (libcname := ctypes.util.find_library("c")):` (psycopg): the name is
            # bound where the condition is read, as Python binds it
            v = self.value(node.value)
            (self.local if self.depth else self.names)[node.target.id] = v
            return v
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            # `sys_name = platform.system() or 'Unknown'` (pyexiv2): the first true value
            vals = [self.value(v) for v in node.values]
            if any(isinstance(v, str) for v in vals):
                for v in vals:
                    if v is None or v:
                        return v
                return vals[-1]
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (
                isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
                node.func.attr in ("startswith", "endswith")):
            return self.truth(node)  # a condition: True/False when decided here, else None
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.file
            if node.id in self.local:
                return self.local[node.id]
            return self.names.get(node.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            keys = [self.value(k) if k is not None else None for k in node.keys]
            if all(isinstance(k, str) for k in keys):
                return dict(zip([str(k) for k in keys], [self.value(v) for v in node.values],
                                strict=False))
            return None
        if isinstance(node, ast.IfExp):
            t = self.truth(node.test)
            return None if t is None else self.value(node.body if t else node.orelse)
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v.value) if isinstance(v, ast.FormattedValue) else self.value(v)
                     for v in node.values]
            return _each(parts, lambda xs: "".join(xs))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
            a, b = self.value(node.left), self.value(node.right)
            if isinstance(a, str) and isinstance(b, str):
                return os.path.join(a, b) if isinstance(node.op, ast.Div) else a + b
            if isinstance(a, list) and isinstance(b, list) and isinstance(node.op, ast.Add):
                return a + b
            return None
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            v = self.value(node.value)
            key = self.value(node.slice) if not isinstance(node.slice, ast.Constant) or \
                isinstance(node.slice.value, str) else node.slice.value
            if isinstance(v, list) and v:
                return v[key] if isinstance(key, int) and -len(v) <= key < len(v) else v[0]
            if isinstance(v, dict) and isinstance(key, str):
                return v.get(key)
            return None
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _attribute(self, node: ast.Attribute) -> object:
        dotted = _dotted(node)
        if dotted in ("importlib.machinery.EXTENSION_SUFFIXES", "machinery.EXTENSION_SUFFIXES",
                      "EXTENSION_SUFFIXES"):
            return list(self.known.suffixes)
        if dotted == "os.name":
            return os.name
        if dotted == "sys.platform":
            return sys.platform
        if dotted in ("os.environ", "environ") and self.known.env is not None:
            return dict(self.known.env)
        if node.attr == "parent":
            v = self.value(node.value)
            return os.path.dirname(v) if isinstance(v, str) else None
        if node.attr == "origin":
            v = self.value(node.value)
            return v.origin if isinstance(v, _Spec) else None
        if node.attr == "__file__":
            v = self.value(node.value)
            return v.path if isinstance(v, _ModuleFile) else None
        return None

    def _call(self, node: ast.Call) -> object:
        fn = _dotted(node.func)
        last = fn.rsplit(".", 1)[-1] if fn else (
            node.func.attr if isinstance(node.func, ast.Attribute) else "")
        if fn in ("ctypes.util.find_library", "util.find_library", "find_library") and \
                len(node.args) == 1:
            # what ctypes finds through the system's ld.so.cache (wand: `libc_path =
            # ctypes.util.find_library('c')`, then `if libc_path:` — the other branch's guesses
            # end with macOS's /usr/lib/libc.dylib; survey 23's F3); not found: undecided
            name = self.value(node.args[0])
            if not isinstance(name, str):
                return None
            found = _find_library(name)
            if found is None and re.fullmatch(r"[\w.+-]{1,80}", name) and _nowhere(
                    name, None if self.known.env is None else dict(self.known.env)):
                return NoLibrary(name)
            return found
        if fn == "platform.system" and not node.args:
            return platform.system()
        if fn == "platform.python_implementation" and not node.args:
            return platform.python_implementation()
        if fn in ("os.getenv", "getenv") and node.args and self.known.env is not None:
            key = self.value(node.args[0])
            default = self.value(node.args[1]) if len(node.args) > 1 else None
            return dict(self.known.env).get(key, default) if isinstance(key, str) else None
        callee = self.value(node.func) if isinstance(node.func, ast.Name) else None
        if isinstance(callee, _Func):
            # (a number as its text: what an f-string of it gives — pyvips'
            # `library_name('vips', 42)` → f'{lib_prefix}{name}.so.{abi_number}')
            return self.call_function(callee, [self._argument(a) for a in node.args],
                                      {k.arg: self._argument(k.value) for k in node.keywords
                                       if k.arg})
        if isinstance(node.func, ast.Attribute):
            owner = self.value(node.func.value)
            method = node.func.attr
            if isinstance(owner, _Finder) and method == "find_spec" and node.args:
                name = self.value(node.args[0])
                if isinstance(name, str):
                    for suf in owner.suffixes:
                        f = os.path.join(owner.directory, name + suf)
                        if os.path.isfile(f):
                            return _Spec(f)
                return None
            if isinstance(owner, dict) and method == "get" and node.args:
                key = self.value(node.args[0])
                if isinstance(key, str):
                    default = self.value(node.args[1]) if len(node.args) > 1 else None
                    return owner.get(key, default)
                return None
            if isinstance(owner, str) and method in _STR_METHODS and not node.args:
                return str(getattr(owner, method)())  # an environment value, normalised
            if isinstance(owner, str) and method in ("glob", "rglob") and node.args:
                pattern = self.value(node.args[0])
                if isinstance(pattern, str):
                    pat = os.path.join(owner, "**", pattern) if method == "rglob" else \
                        os.path.join(owner, pattern)
                    return sorted(glob.glob(pat, recursive=method == "rglob"))
                return None
        if last == "FileFinder" and node.args:
            directory = self.value(node.args[0])
            details = [self.value(a) for a in node.args[1:]]
            sufs = [x for d in details if isinstance(d, list) for x in d if isinstance(x, list)]
            if isinstance(directory, str) and sufs:
                return _Finder(directory, tuple(str(x) for x in sufs[0] if isinstance(x, str)))
            return None
        args = [self.value(a) for a in node.args]
        if last in ("list", "sorted", "tuple") and len(args) == 1 and isinstance(args[0], list):
            return args[0]
        if last in ("Path", "PurePath", "str", "fspath") and len(args) == 1 and \
                isinstance(args[0], list):
            return args[0]  # a loop variable bound to every element (see parse_links)
        if any(isinstance(a, list) for a in args):  # a loop variable: the call per element
            return _each(args, lambda xs: self._plain(node, last, xs))
        return self._plain(node, last, args)

    def _plain(self, node: ast.Call, last: str, args: Sequence[object]) -> object:
        if not all(isinstance(a, str) for a in args):
            return None
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

    # ---------------------------------------------------------------- functions
    def _argument(self, node: ast.expr) -> object:
        """An argument's value; an integer constant as its decimal text."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return str(node.value)
        return self.value(node)

    def call_function(self, func: _Func, args: list[object],
                      keywords: dict[str, object] | None = None,
                      stop_at: ast.AST | None = None) -> object:
        """Run ``func``'s body with ``args`` (and ``keywords``) bound: its return value, or —
        with ``stop_at`` — the locals when the statement holding ``stop_at`` is reached (a
        ``_Locals``)."""
        if self.depth >= 3:
            return None
        params = [a.arg for a in func.node.args.args]
        local: dict[str, object] = dict(zip(params, args, strict=False))
        local.update((k, v) for k, v in (keywords or {}).items() if k in params)
        defaults = func.node.args.defaults
        for name, default in zip(params[len(params) - len(defaults):], defaults, strict=False):
            local.setdefault(name, None)
            if local[name] is None:
                local[name] = _Eval(func.file, func.names, self.known,
                                    budget=self.budget).value(default)
        inner = _Eval(func.file, func.names, self.known, local, self.depth + 1, self.budget)
        return inner.run(func.node.body, stop_at)

    def run(self, body: list[ast.stmt], stop_at: ast.AST | None) -> object:
        """Statements in order: assignments, decided branches, loops, returns."""
        for stmt in body:
            self.budget[0] -= 1
            if self.budget[0] < 0:
                return None
            holds = stop_at is not None and _contains(stmt, stop_at)
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.local[stmt.targets[0].id] = self.value(stmt.value)
            elif isinstance(stmt, ast.Return):
                if not holds:
                    return self.value(stmt.value) if stmt.value is not None else None
            elif isinstance(stmt, ast.If):
                t = self.truth(stmt.test)
                if holds:
                    branch = stmt.body if _contains_any(stmt.body, stop_at) else stmt.orelse
                    if not _contains_any(branch, stop_at):  # the call is in the test
                        return _Locals(dict(self.local))
                    return self.run(branch, stop_at)
                if t is not None:
                    out = self.run(stmt.body if t else stmt.orelse, None)
                    if out is not None:
                        return out
                # An undecided branch is not taken: the values before it stand.
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                if isinstance(stmt.target, ast.Name):
                    self.local[stmt.target.id] = self.value(stmt.iter)
                if holds:
                    return self.run(stmt.body, stop_at)
            elif isinstance(stmt, ast.Try):
                if holds:
                    for part in (stmt.body, *[h.body for h in stmt.handlers], stmt.orelse,
                                 stmt.finalbody):
                        if _contains_any(part, stop_at):
                            return self.run(part, stop_at)
                out = self.run(stmt.body, None)
                if out is not None:
                    return out
            elif isinstance(stmt, (ast.With, ast.AsyncWith)) and holds:
                return self.run(stmt.body, stop_at)
            if holds:
                return _Locals(dict(self.local))
        return None


def _each(parts: list[object], fn: Callable[[list[str]], object]) -> object:
    """``fn`` of the parts when all are strings; of each element when one part is a list of
    strings (a loop variable bound to every element); None otherwise."""
    lists = [i for i, p in enumerate(parts) if isinstance(p, list)]
    if not lists:
        return fn([str(p) for p in parts]) if all(isinstance(p, str) for p in parts) else None
    if len(lists) > 1 or not all(isinstance(p, str) for i, p in enumerate(parts)
                                 if i != lists[0]):
        return None
    seq = parts[lists[0]]
    assert isinstance(seq, list)
    out = []
    for x in seq[:64]:
        if not isinstance(x, str):
            return None
        v = fn([x if i == lists[0] else str(p) for i, p in enumerate(parts)])
        if not isinstance(v, str):
            return None
        out.append(v)
    return out


@dataclass(frozen=True)
class _Locals:
    """The locals of a function when the statement with the loader call is reached."""

    values: dict[str, object]


def _contains(node: ast.AST, target: ast.AST | None) -> bool:
    return target is not None and any(n is target for n in all_nodes(node))


def _contains_any(body: list[ast.stmt], target: ast.AST | None) -> bool:
    return any(_contains(s, target) for s in body)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _caught(h: ast.ExceptHandler) -> set[str]:
    """The exception names an except clause catches ("<bare>" for a bare ``except:``)."""
    if h.type is None:
        return {"<bare>"}
    return {_dotted(t) for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])}


def _suppressor(node: ast.With | ast.AsyncWith) -> ast.ExceptHandler | None:
    """The ``except …: pass`` a ``with contextlib.suppress(…)`` block amounts to, if it is one."""
    for item in node.items:
        ctx = item.context_expr
        if isinstance(ctx, ast.Call) and ctx.args and \
                _dotted(ctx.func).rsplit(".", 1)[-1] == "suppress":
            caught = ctx.args[0] if len(ctx.args) == 1 else ast.Tuple(elts=list(ctx.args),
                                                                       ctx=ast.Load())
            handler = ast.ExceptHandler(type=caught, name=None, body=[ast.Pass()])
            return ast.copy_location(handler, node)
    return None


# Calls that look at a kept exception without showing it to anyone.
_SILENT_CALLS = frozenset({"len", "bool", "isinstance", "id", "type", "hash"})
# Methods that put an exception into a container kept for later.
_STORE_METHODS = frozenset({"append", "extend", "add", "insert", "appendleft"})


def _stored_in(h: ast.ExceptHandler) -> set[str]:
    """Names the handler keeps its exception in (``failures += [e]``, ``errors.append(e)``,
    ``last = e``, ``errs[name] = e``)."""
    if not h.name:
        return set()
    name = h.name

    def uses(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name for n in all_nodes(node))

    out: set[str] = set()
    for n in all_nodes(h):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and uses(n.value):
            out.add(n.target.id)
        elif isinstance(n, ast.Assign) and uses(n.value):
            for t in n.targets:
                base = t.value if isinstance(t, ast.Subscript) else t
                if isinstance(base, ast.Name):
                    out.add(base.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr in _STORE_METHODS and isinstance(n.func.value, ast.Name) and \
                any(uses(arg) for arg in n.args):
            out.add(n.func.value.id)
    out.discard(name)
    return out


@lru_cache(maxsize=64)
def _shown_names(tree: ast.Module) -> frozenset[str]:
    """Names the module hands to a call (``print(_failures)``, ``log.error(errors)``) or puts
    in a ``raise`` — where a kept exception reaches the user."""
    out: set[str] = set()
    for n in all_nodes(tree):
        if isinstance(n, ast.Call) and _dotted(n.func) not in _SILENT_CALLS:
            parts: list[ast.AST] = [*n.args, *(k.value for k in n.keywords)]
        elif isinstance(n, ast.Raise):
            parts = [x for x in (n.exc, n.cause) if x is not None]
        else:
            continue
        out.update(x.id for part in parts for x in all_nodes(part) if isinstance(x, ast.Name))
    return frozenset(out)


# What an import or a library load raises when it fails, and the clauses that catch anything.
_LOAD_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "OSError", "RuntimeError"})
_CATCH_ALL = frozenset({"Exception", "BaseException", "<bare>"})


def _swallow(handler_stack: list[ast.ExceptHandler], module: ast.Module | None = None,
             raised: frozenset[str] = _LOAD_ERRORS) -> str:
    """The except clause that swallows ImportError/OSError around a statement, if any.
    ``module``: the module the statement is in, to see where a kept exception goes;
    ``raised``: the exception names that reach the clauses (another for a call of a function
    that re-raises a load's error as its own type)."""
    for h in reversed(handler_stack):
        catches = {c for c in _caught(h)
                   if c in _CATCH_ALL or c in raised or c.rsplit(".", 1)[-1] in raised}
        reraises = any(isinstance(n, ast.Raise) for n in all_nodes(h))
        # A handler that loads another library (fbgemm_gpu: load_library(unified_path), on
        # failure load_library(cuda_path)) does not discard the error: when the fallback fails
        # too, its own error propagates. (An import in the handler is no such fallback:
        # torchrl's `except: from ._version import …` sits in nested handlers that end in
        # `__version__ = None`, an optional module.)
        falls_back = any(isinstance(n, ast.Call) and _dotted(n.func).rsplit(".", 1)[-1]
                         in _LOADERS for n in all_nodes(h))
        # A handler that hands the exception to a call reports it (scikit-learn's
        # `except ImportError as e: raise_build_error(e)`, a warnings.warn(str(e))): not
        # discarded. Keeping it in a variable counts when the module shows that variable
        # later (z3: `_failures += [e]` for each candidate library, then, when none loaded,
        # `print(_failures); raise Z3Exception(…)`); kept and never shown, it is discarded.
        reports = bool(h.name) and any(
            isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == h.name
                                            for arg in n.args for a in all_nodes(arg))
            for n in all_nodes(h))
        if not reports and module is not None:
            kept = _stored_in(h)
            reports = bool(kept) and bool(kept & _shown_names(module))
        if catches and not reraises and not falls_back:
            clause = f"except {', '.join(sorted(catches)).replace('<bare>', '')}: (line {h.lineno})"
            return clause + REPORTED if reports else clause
    return ""


@lru_cache(maxsize=4096)
def _entries(directory: str) -> dict[str, str]:
    """A directory's names, each "f" (a file), "d" (a directory) or "" (anything else, a
    dangling link), following links as ``os.path.isfile``/``isdir`` do. Read once per
    command: the import chain of a large package asks about the same directories thousands
    of times (TensorFlow's: ~2,900 module lookups, each a few stat calls and a glob)."""
    out: dict[str, str] = {}
    try:
        with os.scandir(directory) as it:
            for e in it:
                try:
                    out[e.name] = "f" if e.is_file() else "d" if e.is_dir() else ""
                except OSError:
                    out[e.name] = ""
    except OSError:
        pass
    return out


def _kind(path: str) -> str:
    """"f", "d" or "" for ``path``, from its directory's listing (:func:`_entries`)."""
    head, name = os.path.split(path)
    return _entries(head).get(name, "")


def module_files(pkg_dir: str, mod: str, suffixes: list[str]) -> tuple[list[str], list[str]]:
    """(files that import as ``mod`` here, other builds of ``mod`` that do not)."""
    names = _entries(pkg_dir)
    good = [os.path.join(pkg_dir, mod + suf) for suf in suffixes if names.get(mod + suf) == "f"]
    if names.get(mod) == "d" and _entries(os.path.join(pkg_dir, mod)).get("__init__.py") == "f":
        good.append(os.path.join(pkg_dir, mod, "__init__.py"))
    # what glob("<mod>.*") finds, whatever its type: other builds of the same module
    others = sorted(f for f in (os.path.join(pkg_dir, n) for n in names
                                if n.startswith(mod + "."))
                    if f not in good and (f.endswith(".so") or f.endswith(".pyd")))
    return good, others


# Bounds: a package's import chain to its extension is a few modules deep (struct2tensor's
# `load_library` is five modules below its `__init__`: four was not enough, survey 17); a
# file larger than this is generated code, not the statements that load a library.
MAX_DEPTH = 5
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

    def mentions(self, node: ast.AST, words: set[bytes]) -> bool:
        """True when a line of ``node`` mentions one of ``words`` (imported loading functions:
        torchaudio's ``_load_lib``, which the loader-name count cannot see)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if not isinstance(first, int) or not isinstance(last, int):
            return True
        return any(w in line for line in self.lines[first - 1:last] for w in words)

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
                  rb"register_filesystem_plugin|dlopen")


@lru_cache(maxsize=256)
def _parse(file: str, mtime_ns: int, size: int) -> _Source | None:
    """Parse a module once per run (memoised on its path, mtime and size)."""
    if size > MAX_SOURCE_BYTES:
        return None
    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file, raw)  # shared with the package's other readers
    if tree is None:
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
    strings a loader call may get in another build of the package, never a file here; or a bare
    library name (``libcudart.so.12``, ``vcruntime140.dll``), which dlopen looks up in the
    system's search path, not in the working directory: the package probing for a system
    library, not loading a file of its own."""
    return value.startswith("//") or "://" in value or "/" not in value


def parse_links(file: str, package: str, suffixes: list[str], depth: int = 0,
                seen: set[str] | None = None, top_dir: str = "",
                known: Known | None = None) -> list[Link]:
    """Statements in ``file`` (and the package modules it imports) that lead to compiled code.

    ``top_dir`` is the top-level package's directory (the directory of ``file`` when empty):
    absolute imports ``from pkg.x import y`` resolve from it wherever ``file`` sits.
    Linear in the size of the modules read: each is parsed once, statement text is cut from a
    line table only for the statements that become links, at most ``MAX_MODULES`` modules are
    followed ``MAX_DEPTH`` deep, and the walk stops at compiled code. ``known``: what decides
    conditions here (the interpreter's suffixes, torch's build); a branch whose condition is
    false here (``if torch.version.hip:`` on a CUDA or CPU torch, ``if os.name == "nt"``) is
    not a load path.
    """
    known = known or Known(tuple(x for x in suffixes if x != ".py"))
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
    names = _Names()
    links: list[Link] = []
    ev = _Eval(file, names, known)
    flat: dict[str, object] = {}
    ev_flat = _Eval(file, flat, known)
    loader_funcs: set[bytes] = set()
    specs = _spec_names(tree) if b"find_spec" in b"".join(parsed.lines) else {}
    for stmt in tree.body:  # the module's functions, for calls that come before their def
        if isinstance(stmt, ast.FunctionDef):
            names[stmt.name] = _Func(stmt, file, names)

    def _import_path(parts: list[str], base: str, node: ast.ImportFrom | None,
                     seg: str, pkg: str = package, top: str = "") -> list[Link]:
        """Links for importing ``parts`` (``a.b.c`` under ``base``), as the import system runs
        them: each package's ``__init__`` in turn, then, for ``from a.b import x``, each name
        that is a submodule of ``a.b`` (``from tensorflow_text.python import keras``).
        ``pkg``/``top``: the top-level package they belong to (another top-level package of
        the same distribution, see :func:`_sibling_import`)."""
        top = top or top_dir
        out: list[Link] = []
        step: Link | None = None  # the statement's own link: one per statement, its last level
        here = base
        for i, mod in enumerate(parts):
            if i and not module_files(here, mod, suffixes)[0] and \
                    _kind(os.path.join(here, mod)) != "d":
                break  # a deeper level not found here: an attribute, not a module
            if step is not None and not step.problem:
                out.remove(step)
            got = _submodule(file, lineno, seg, mod, here, pkg, suffixes, handlers_now,
                             depth, seen, top, known)
            step = got[0]
            out += got
            sub = os.path.join(here, mod)
            if _kind(os.path.join(sub, "__init__.py")) != "f" and (
                    _kind(sub) != "d" or module_files(here, mod, suffixes)[0]):
                # A module file (or missing): what follows are its attributes. A directory
                # without __init__.py and without a module file of that name is a namespace
                # package, as the import system finds it: its submodules are followed.
                break
            here = os.path.join(here, mod)
        else:
            for a in node.names if node is not None else []:
                # a module of that name, or only builds of it for another Python or
                # platform (regex's cp312 _regex under 3.11: OD503, not "not imported")
                if a.name != "*" and any(module_files(here, a.name, suffixes)):
                    out += _submodule(file, lineno, seg, a.name, here, pkg, suffixes,
                                      handlers_now, depth, seen, top, known)
        return out

    def _sibling_import(parts: list[str], node: ast.ImportFrom | None,
                        seg: str) -> list[Link] | None:
        """Links for an absolute import into another top-level package that the package's
        own distribution installed beside it (tflite-support: ``tflite_support/__init__.py``
        runs ``from tensorflow_lite_support.metadata.python import metadata``, whose compiled
        modules fail to load): its ``__init__`` and the path below it, as for the package's
        own modules. None when ``parts[0]`` is no such package (the stdlib, another
        distribution: not followed)."""
        from opdoctor.facts.pkgdir import sibling_packages

        site = os.path.dirname(top_dir)
        if parts[0] not in sibling_packages(site, package.split(".")[0]):
            return None
        sib_dir = os.path.join(site, parts[0])
        init = os.path.join(sib_dir, "__init__.py")
        root = Link(file, lineno, "submodule", seg, parts[0], [init], _swallow(handlers_now))
        out = parse_links(init, parts[0], suffixes, depth + 1, seen, sib_dir, known)
        below = _import_path(parts[1:], sib_dir, node, seg, parts[0], sib_dir)
        # One link per statement, its last level (as _import_path keeps them).
        return out + (below if below else [root])

    lineno = 0
    handlers_now: list[ast.ExceptHandler] = []

    def visit(node: ast.AST, handlers: list[ast.ExceptHandler], in_except: bool = False,
              func: ast.FunctionDef | None = None) -> None:
        nonlocal lineno, handlers_now
        if isinstance(node, ast.Try):
            inner = handlers + list(node.handlers)
            start = len(links)
            before: list[str] = []  # other distributions' modules imported above in the body
            for n in node.body:
                first = len(links)
                visit(n, inner, in_except, func)
                for lk in links[first:] if before else []:
                    lk.after = [*before, *lk.after]
                before += _foreign_imports(n, package)
            # The body's own imports of the package's modules all resolve: its handlers run
            # only when one of them fails to import, so a module they import instead (pyzstd:
            # `try: from ._c import … except ImportError: from ._cffi import …`, the CFFI
            # build absent from the wheel) is a fallback, not the package's import path. An
            # import of another distribution's module leaves no link: not known to resolve.
            own = [lk for lk in links[start:] if lk.file == file and lk.kind == "submodule"]
            primary_resolves = bool(own) and not any(lk.problem for lk in own)
            tested = before if any(_caught(h) & (_LOAD_ERRORS | _CATCH_ALL)
                                   for h in node.handlers) else []
            # every module the body imports is here: the else runs, and what it imports is
            # the package's import path (`try: import json … else: from . import _ext` fails
            # on a missing _ext); the handlers below still know what their try imports
            else_runs = bool(tested) and bool(known.sys_path) and all(
                importable(m.split(".")[0], known.sys_path, [*known.suffixes, ".py"],
                           os.getcwd()) for m in tested)
            for n in node.orelse:
                first = len(links)
                visit(n, handlers, in_except, func)
                # `try: import matplotlib except ImportError: … else: from .visufunc import …`
                # (healpy): the else runs only where the body's imports worked — an existence
                # test of those modules, as an `if importlib.util.find_spec(…)` is (survey 22)
                for lk in links[first:] if tested and not else_runs else []:
                    if lk.file == file and lk.kind == "submodule" and not lk.checked:
                        lk.checked = f"else of `try: import {', '.join(tested[:3])}`"
            for n in node.finalbody:
                visit(n, handlers, in_except, func)
            for h in node.handlers:
                start = len(links)
                for n in h.body:
                    visit(n, handlers, True, func)
                for lk in links[start:] if tested and _caught(h) & (_LOAD_ERRORS | _CATCH_ALL) \
                        else []:
                    if lk.kind in ("cdll", "load_library") and not lk.handles:
                        lk.handles = list(tested)
                # and so is what that module imports in turn (pyppmd's cffi/cffi_ppmd.py
                # imports its absent `_cffi_ppmd`: survey 22)
                for lk in links[start:] if primary_resolves else []:
                    if lk.kind == "submodule":
                        lk.fallback = True
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            quiet = _suppressor(node)
            if quiet is not None:
                # `with contextlib.suppress(ImportError): from .x_avx2 import …` (rapidfuzz's
                # optional builds) is `try: … except ImportError: pass`
                for item in node.items:
                    visit(item.context_expr, handlers, in_except, func)
                for n in node.body:
                    visit(n, [*handlers, quiet], in_except, func)
                return
        if isinstance(node, ast.If):
            decided = ev.truth(node.test)
            if decided is not None:
                # A branch this install never takes (another platform, a ROCm-only or a
                # CUDA-only path on another torch build) loads nothing here.
                for n in node.body if decided else node.orelse:
                    visit(n, handlers, in_except, func)
                return
            probed = {c.value.rsplit(".", 1)[-1] for c in all_nodes(node.test)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            # `spec = find_spec("highspy")` … `if spec is not None:` (pulp 3.3's RTLD_GLOBAL
            # preload of highspy's _core*.so): asks whether another module is installed
            spec_of = [specs[c.id] for c in all_nodes(node.test)
                       if isinstance(c, ast.Name) and c.id in specs]
            probed.update(m.rsplit(".", 1)[-1] for m in spec_of)
            asks_file = any(_existence_test(c) for c in all_nodes(node.test)) or bool(spec_of)
            if probed or asks_file:
                # `if process_initializer_module("_mlirRegisterEverything"): import_module(
                # "._mlirRegisterEverything")` (jaxlib), `if find_spec("x"): import x`: the
                # condition asks whether the module is there; its import is taken only then.
                visit(node.test, handlers, in_except, func)
                start = len(links)
                for n in node.body:
                    visit(n, handlers, in_except, func)
                for lk in links[start:]:
                    if (lk.kind == "submodule" and lk.file == file and
                            lk.target.rsplit(".", 1)[-1] in probed) or (
                            asks_file and lk.kind in ("load_library", "cdll") and
                            lk.file == file):
                        # the condition asks whether the module (or the file) is there
                        lk.checked = f"if {ast.unparse(node.test)[:80]}" + (
                            f" (asks whether {spec_of[0]} is installed)" if spec_of else "")
                    elif func is None and not lk.checked:
                        # a condition with strings that asks about something else (`if
                        # numpy.__version__ >= "2":`) is undecided, as below
                        lk.branch = lk.branch or f"if {ast.unparse(node.test)[:80]}"
                start = len(links)
                for n in node.orelse:
                    visit(n, handlers, in_except, func)
                for lk in links[start:] if func is None else []:
                    lk.branch = lk.branch or f"if {ast.unparse(node.test)[:80]}"
                return
            if func is None:
                visit(node.test, handlers, in_except, func)
                start = len(links)
                for n in (*node.body, *node.orelse):
                    visit(n, handlers, in_except, func)
                for lk in links[start:]:
                    lk.branch = lk.branch or f"if {ast.unparse(node.test)[:80]}"
                return
        if isinstance(node, ast.FunctionDef):
            func = node
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            if func is None:  # each element (see _Eval._call)
                names[node.target.id] = ev.value(node.iter)
            flat[node.target.id] = ev_flat.value(node.iter)
        if isinstance(node, ast.stmt):
            tick(f"reading module {file}", 64)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            # Module-level names are the module's; an assignment inside a function is kept
            # apart (the function's own evaluation binds it, see _through_calls).
            if func is None:
                names[node.targets[0].id] = ev.value(node.value)
            flat[node.targets[0].id] = ev_flat.value(node.value)
        seg = parsed.segment(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)) \
            else ""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lineno, handlers_now = node.lineno, handlers
        mark = len(links)
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.level >= 1 or node.module.split(".")[0] == package):
            bound = _bind_imported(node, names, pkg_dir, top_dir, known)
            for a in node.names if bound and _names_a_loader(bound) else ():
                # imported functions that load: their calls are followed
                f = names.get(a.asname or a.name)
                if isinstance(f, _Func) and f.file != file and _has_loader(f):
                    loader_funcs.add((a.asname or a.name).encode())
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
                                            suffixes, handlers, depth, seen, top_dir, known))
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == package:
            # `from pkg.a.b import x`, and `from pkg import _ext` (regex: a submodule of the
            # package itself, followed when a module of that name exists)
            links.extend(_import_path(node.module.split(".")[1:], top_dir, node, seg))
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == package and len(parts) > 1:
                    links.extend(_import_path(parts[1:], top_dir, None, seg))
                elif parts[0] != package:
                    sib = _sibling_import(parts, None, seg)
                    links.extend(sib if sib is not None else _top_level_extension(
                        file, node.lineno, seg, parts[0], top_dir, suffixes, handlers))
        if func is None and isinstance(node, ast.ImportFrom) and node.level == 0 and \
                node.module and node.module.split(".")[0] != package:
            # `from numkong import _numkong as ext` then `CDLL(ext.__file__, RTLD_GLOBAL)`
            # (usearch: the other distribution's extension, preloaded for its symbols)
            for a in node.names:
                found = _imported_file(os.path.dirname(top_dir), f"{node.module}.{a.name}",
                                       known.suffixes)
                if found and (a.asname or a.name) not in names:
                    names[a.asname or a.name] = _ModuleFile(found)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] != package:
            sib = _sibling_import(node.module.split("."), node, seg)
            links.extend(sib if sib is not None else _top_level_extension(
                file, node.lineno, seg, node.module.split(".")[0], top_dir, suffixes, handlers))
        if func is not None and isinstance(node, (ast.Import, ast.ImportFrom)):
            # An import in a function body runs when the function is called, not at import
            # (numba's optional TBB backend: `try: from … import tbbpool except ImportError`).
            for lk in links[mark:]:
                if lk.file == file and lk.kind == "submodule" and not lk.function:
                    lk.function = func.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                isinstance(names.get(node.func.id), _Func):
            callee = names[node.func.id]
            assert isinstance(callee, _Func)
            if callee.file != file:  # imported: its own module cannot see this call site
                links.extend(_loads_in_call(callee, node, seg, ev, handlers, in_except))
        if isinstance(node, ast.Call):
            fn = _dotted(node.func)
            last = fn.rsplit(".", 1)[-1]
            if last == "import_module" and node.args:
                target = ev.value(node.args[0])
                if isinstance(target, str):
                    level = len(target) - len(target.lstrip("."))
                    parts = target.lstrip(".").split(".")
                    sub = parts[-1] if level or parts[0] == package else ""
                    if sub and (len(parts) > 1 or level):
                        # The module's own directory: "pkg.npu.graph" is pkg/npu/graph, not
                        # pkg/graph; "..x.y" climbs one package up from this file's.
                        base = top_dir if not level else os.path.normpath(
                            os.path.join(pkg_dir, *[".."] * (level - 1)))
                        dirs = parts[:-1] if level else parts[1:-1]
                        links.extend(_submodule(file, node.lineno, seg, sub,
                                                os.path.join(base, *dirs), package, suffixes,
                                                handlers, depth, seen, top_dir, known))
            elif last in _LOADERS and node.args:
                link = Link(file, node.lineno, "cdll" if "CDLL" in last or last == "cdll"
                            else "load_library", seg,
                            parsed.segment(node.args[0]) or "?", [],
                            _swallow(handlers, tree), fallback=in_except)
                if func is not None:
                    # Inside a function: computed from its call sites once the whole module
                    # is read (a call site may come after the def, with names bound later).
                    link.function = func.name
                    pending.append((link, func, node))
                    load_handlers[id(link)] = handlers
                elif _system_lookup(node.args[0]):
                    link.problem = ""  # a system library's name, not a file it ships
                else:
                    _resolve_link(link, ev.value(node.args[0]))
                links.append(link)
        for child in ast.iter_child_nodes(node):
            # Statements are always visited (imports, assignments); an expression only when
            # its lines mention a loader: the calls looked for cannot hide anywhere else.
            if isinstance(child, (ast.stmt, ast.ExceptHandler)) or parsed.may_call(child) or \
                    (loader_funcs and parsed.mentions(child, loader_funcs)):
                visit(child, handlers, in_except, func)

    pending: list[tuple[Link, ast.FunctionDef, ast.Call]] = []
    load_handlers: dict[int, list[ast.ExceptHandler]] = {}  # around each load in a function
    for stmt in tree.body:
        visit(stmt, [])
    at_import = _module_level_calls(tree) if pending else set()  # once per module
    calls: dict[str, list[tuple[int, list[ast.ExceptHandler]]]] | None = None
    for link, fdef, call in pending:
        value, link.lazy = _through_calls(tree, fdef, call, file, names, known, at_import)
        if value is None:
            value = _literal_libraries_beside(tree, fdef, file)
        # No call site to compute it from: every assignment of the module, in order.
        if _system_lookup(call.args[0]):
            link.problem = ""
        else:
            _resolve_link(link, value if value is not None else ev_flat.value(call.args[0]))
        if not link.swallowed and not link.fallback:
            if calls is None:
                calls = _calls_with_handlers(tree)  # one walk of the module, however many loads
            sites = [h for node_id, h in calls.get(fdef.name, []) if node_id in at_import]
            link.caught_by_caller = _swallowed_by_callers(load_handlers.get(id(link), []),
                                                          sites, tree)
    return links


def _calls_with_handlers(tree: ast.Module) -> dict[str, list[tuple[int, list[ast.ExceptHandler]]]]:
    """By function name: (id, the except clauses around it) of each call of a plain name in
    the module — the handlers of every ``try`` whose body holds the call (and
    ``contextlib.suppress`` blocks). A walk of its own: ``parse_links``' visit descends only
    into expressions whose lines mention a loader, and a call site rarely does."""
    out: dict[str, list[tuple[int, list[ast.ExceptHandler]]]] = {}

    def walk(node: ast.AST, handlers: list[ast.ExceptHandler]) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            out.setdefault(node.func.id, []).append((id(node), handlers))
        if isinstance(node, ast.Try):
            for stmt in node.body:
                walk(stmt, handlers + list(node.handlers))
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                walk(part, handlers)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            quiet = _suppressor(node)
            if quiet is not None:
                for stmt in node.body:
                    walk(stmt, [*handlers, quiet])
                return
        for child in ast.iter_child_nodes(node):
            walk(child, handlers)

    walk(tree, [])
    return out


def _swallowed_by_callers(inside: list[ast.ExceptHandler],
                          sites: list[list[ast.ExceptHandler]], module: ast.Module) -> str:
    """The except clause around every call the import makes of a function whose load fails
    out of it (``inside``: the handlers around the load in the function) — "" when a call
    site lets it through. xformers 0.0.35's ``_register_extensions()`` turns the load's
    OSError into ``xFormersInvalidLibException`` (``raise … from exc``), and the module-level
    ``try: _register_extensions() except (xFormersInvalidLibException, …): logger.warning``
    catches that: ``import xformers`` goes on without its extension (survey 15's F4)."""
    if not sites:
        return ""
    raised: frozenset[str] = _LOAD_ERRORS
    for h in reversed(inside):
        if not _caught(h) & (_LOAD_ERRORS | _CATCH_ALL):
            continue
        again = [n for n in all_nodes(h) if isinstance(n, ast.Raise)]
        if not again:
            return ""  # caught and kept inside: not an error that leaves the function
        named = {_dotted(n.exc.func if isinstance(n.exc, ast.Call) else n.exc)
                 for n in again if n.exc is not None}
        raised = frozenset({x.rsplit(".", 1)[-1] for x in named if x}) | (
            raised if any(n.exc is None for n in again) else frozenset())
        break
    clauses = [_swallow(h, module, raised) for h in sites]
    return clauses[0] if all(clauses) else ""


_LIBRARY_NAME = re.compile(r"^[\w.+-]+\.so(?:\.\d+)*$")


def _library_name(value: str) -> bool:
    """A shared library's file name with no directory (``libvips.so.42``), as dlopen takes
    one to search for."""
    return bool(_LIBRARY_NAME.match(value))


def _system_lookup(arg: ast.expr) -> bool:
    """Whether a load's argument is ``ctypes.util.find_library(…)``: the name (or None) of a
    library the system's search finds — the package probing for a system library, never a
    file it ships (pyerfa's version check: ``CDLL(util.find_library('erfa'))``; survey 21's
    F2), like a bare name (:func:`_not_a_path`)."""
    return isinstance(arg, ast.Call) and _dotted(arg.func).rsplit(".", 1)[-1] == "find_library"


def _resolve_link(link: Link, value: object) -> None:
    """Set a loader link's files and problem from the evaluated path argument."""
    resolved = value if isinstance(value, list) else [value] \
        if isinstance(value, (str, NoLibrary)) else []
    # find_library's None where the system has no such library: ctypes.CDLL(None) opens the
    # program itself — the load works, and every symbol the package then asks for is missing
    link.process_handle = next((r.name for r in resolved if isinstance(r, NoLibrary)), "") \
        if link.kind == "cdll" and all(isinstance(r, NoLibrary) for r in resolved) else ""
    if link.process_handle:
        link.resolved, link.by_name, link.problem = [], [], ""
        return
    resolved = [r for r in resolved if isinstance(r, str)]
    targets = [r for r in resolved if isinstance(r, str) and not _not_a_path(r)]
    not_paths = len(targets) < len(resolved)
    link.by_name = [r for r in resolved if isinstance(r, str) and _library_name(r)]
    link.resolved = [os.path.abspath(r) for r in targets]
    if not targets and not_paths:
        link.problem = ""  # a build target, URL or bare name: not a file this install ships
    elif not targets:
        link.problem = UNEVALUATED
    elif not any(os.path.isfile(r) for r in targets) and not not_paths:
        # (Candidates tried in turn — `for d in ("/opt/x/libfoo.so", "libfoo.so.1")` — that
        # include a bare name the loader searches for: that one may be what loads.)
        link.problem = f"{targets[0]} does not exist"
    else:
        link.problem = ""


def _module_level_calls(tree: ast.Module) -> set[int]:
    """ids of the call nodes the module's import runs: not inside a function body (class
    bodies run at import), or inside a function of this module that such a call runs
    (torchtext's `_init_extension()` at the bottom of _extension.py), a few levels deep."""
    funcs = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))}
    out: set[int] = set()
    todo: list[ast.AST] = list(tree.body)
    entered: set[str] = set()
    for _level in range(4):
        called: list[str] = []
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out.update(id(d) for dec in getattr(node, "decorator_list", [])
                           for d in all_nodes(dec) if isinstance(d, ast.Call))
                continue
            if isinstance(node, ast.Call):
                out.add(id(node))
                if isinstance(node.func, ast.Name) and node.func.id in funcs:
                    called.append(node.func.id)
            todo.extend(ast.iter_child_nodes(node))
        fresh = [n for n in dict.fromkeys(called) if n not in entered]
        if not fresh:
            break
        entered.update(fresh)
        todo = [stmt for n in fresh for stmt in funcs[n].body]
    return out


def _literal_libraries_beside(tree: ast.Module, func: ast.FunctionDef, file: str
                              ) -> list[str] | None:
    """The libraries a function that loads one is called with as a string constant, when a
    file of that name sits beside the module (tensorflow-io-gcs-filesystem's
    ``_load_library("libtensorflow_io_gcs_filesystem.so")``, whose path is joined to the
    caller's file found through ``inspect.getfile(sys._getframe(1))``; survey 22): the load
    reads that file. None when no call site names one."""
    here = os.path.dirname(file)
    found: list[str] = []
    for node in all_nodes(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == func.name:
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and \
                        is_shared_library(arg.value) and "/" not in arg.value and \
                        os.path.isfile(os.path.join(here, arg.value)):
                    found.append(os.path.join(here, arg.value))
    return found or None


def _through_calls(tree: ast.Module, func: ast.FunctionDef, call: ast.Call, file: str,
                   names: dict[str, object], known: Known,
                   at_import: set[int]) -> tuple[object, bool]:
    """The loader's argument inside ``func``, computed by running ``func`` up to the call for
    each call site in the module with constant arguments (``_load_library("_C_stable")``), or
    once without arguments when it takes none (``get_native_library()``). A list of every
    value found (None when none could be computed), and whether every call site it was
    computed from is inside another function (a load the import itself never runs);
    ``at_import``: the module's calls its import runs (:func:`_module_level_calls`)."""
    sites: list[list[object]] = []
    top = _Eval(file, names, known)
    lazy = False
    if not func.args.args:
        sites.append([])
    else:
        lazy = True
        for node in all_nodes(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == func.name:
                args = [top.value(a) for a in node.args]
                if args and all(a is not None for a in args):
                    sites.append(args)
                    lazy = lazy and id(node) not in at_import
            if len(sites) >= 8:
                break
    found: list[object] = []
    for args in sites:
        state = top.call_function(_Func(func, file, names), args, stop_at=call)
        if not isinstance(state, _Locals):
            continue
        value = _Eval(file, names, known, state.values).value(call.args[0])
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, (str, NoLibrary)) and v not in found:
                found.append(v)
    return (found or None), lazy and bool(found)


def _loads_in_call(callee: _Func, call: ast.Call, seg: str, ev: _Eval,
                   handlers: list[ast.ExceptHandler], in_except: bool) -> list[Link]:
    """The loads a call of an imported package function makes with these constant arguments
    (torchaudio's ``_load_lib("libtorchaudio")`` of ``_extension/utils.py``): one resolved link
    per loader call in the function's body."""
    args = [ev.value(a) for a in call.args]
    if not args or any(a is None for a in args):
        return []
    out = []
    for inner in all_nodes(callee.node):
        if not (isinstance(inner, ast.Call) and inner.args and
                _dotted(inner.func).rsplit(".", 1)[-1] in _LOADERS):
            continue
        state = ev.call_function(callee, args, stop_at=inner)
        if not isinstance(state, _Locals):
            continue
        value = _Eval(callee.file, callee.names, ev.known, state.values).value(inner.args[0])
        last = _dotted(inner.func).rsplit(".", 1)[-1]
        link = Link(callee.file, inner.lineno, "cdll" if "CDLL" in last or last == "cdll"
                    else "load_library", f"{seg.strip()[:120]} → {callee.node.name}()",
                    ast.unparse(inner.args[0]), [], _swallow(handlers), fallback=in_except)
        _resolve_link(link, value)
        if link.resolved:
            out.append(link)
    return out


def _has_loader(func: _Func) -> bool:
    """Whether the function calls a loader. Only a function whose lines (decorators included)
    name a loader is walked (``_Source.may_call``): torchvision binds 201 imported functions,
    and walking each whole body took 0.35 s when a handful of them name a loader at all."""
    src = _source(func.file)
    if src is not None and not any(src.may_call(n) for n in (func.node,
                                                              *func.node.decorator_list)):
        return False
    known: bool | None = getattr(func.node, "_opdoctor_loads", None)
    if known is None:
        known = any(isinstance(n, ast.Call) and _dotted(n.func).rsplit(".", 1)[-1] in _LOADERS
                    for n in all_nodes(func.node))
        func.node._opdoctor_loads = known  # type: ignore[attr-defined]
    return known


def _without_superseded(links: list[Link]) -> list[Link]:
    """A loader call left unevaluated in its own module but computed at a call site in
    another module is that computed link, not a second, unresolved one."""
    done = {(lk.file, lk.line) for lk in links if lk.kind != "submodule" and lk.resolved}
    return [lk for lk in links if lk.kind == "submodule" or lk.resolved or
            (lk.file, lk.line) not in done]


def _module_file(base: str, dotted: str) -> str:
    """The ``.py`` file of module ``dotted`` (relative to ``base``) ("" when none)."""
    path = os.path.join(base, *dotted.split("."))
    for f in (path + ".py", os.path.join(path, "__init__.py")):
        if os.path.isfile(f):
            return f
    return ""


def _bind_imported(node: ast.ImportFrom, names: _Names, pkg_dir: str, top_dir: str,
                   known: Known) -> str:
    """``from .consts import PACKAGE_DIR, load`` of a package module: the names' values
    (constants, path expressions, functions) as that module defines them, read when asked
    for (:class:`_Pending`); the module's file ("" when none is found)."""
    if node.level >= 1:
        base = pkg_dir
        for _ in range(node.level - 1):
            base = os.path.dirname(base)
        target = _module_file(base, node.module or "")
    else:
        rest = (node.module or "").split(".", 1)
        target = _module_file(top_dir, rest[1]) if len(rest) > 1 else \
            os.path.join(top_dir, "__init__.py")
    if not target:
        return ""
    for a in node.names:
        key = a.asname or a.name
        names[key] = _Pending(target, a.name, known, dict.get(names, key, _UNBOUND))
    return target


_UNBOUND = object()  # a name with no binding before an import's


@dataclass(frozen=True)
class _Pending:
    """A name ``from .mod import name`` bound: its value is read from ``mod`` (parsed for its
    globals) only when the walk asks for it. A package's modules import hundreds of names
    from each other and the walk reads a handful: parsing every imported module for them was
    most of the parsing of torch's import chain (1,111 of 1,283 parses in test_loader.py)."""

    target: str
    name: str
    known: Known
    before: object  # the binding the import replaces when the module defines the name


class _Names(dict[str, object]):
    """A module's names, some of them imported and read lazily (:class:`_Pending`): as the
    eager binding did, a name whose value the module does not define keeps its earlier
    binding (or none)."""

    def _resolve(self, key: str) -> object:
        value = dict.__getitem__(self, key)
        while isinstance(value, _Pending):
            got = _module_globals(value.target, value.known).get(value.name)
            value = got if got is not None else value.before
        if value is _UNBOUND:
            dict.__delitem__(self, key)
            raise KeyError(key)
        dict.__setitem__(self, key, value)
        return value

    def __getitem__(self, key: str) -> object:
        return self._resolve(key)

    def get(self, key: str, default: object = None) -> object:
        try:
            return self._resolve(key)
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not dict.__contains__(self, key):
            return False
        try:
            self._resolve(key)
        except KeyError:
            return False
        return True


@lru_cache(maxsize=1024)
def _names_a_loader(file: str) -> bool:
    """Whether a module's text mentions a loader (:data:`_HOT`) at all: no function of one
    that does not can load a library (``_has_loader``), so importing its names says nothing
    about loading until a name's value is wanted."""
    try:
        with open(file, "rb") as fh:
            return _HOT.search(fh.read(MAX_SOURCE_BYTES + 1)) is not None
    except OSError:
        return False


def _module_globals(file: str, known: Known) -> dict[str, object]:
    try:
        st = os.stat(file)
    except OSError:
        return {}
    return _globals(file, st.st_mtime_ns, st.st_size, known)


@lru_cache(maxsize=256)
def _globals(file: str, mtime_ns: int, size: int, known: Known) -> dict[str, object]:
    """A module's top-level names computable here: functions, constants, path expressions
    (its own imports are not followed: one module deep is what real packages need)."""
    parsed = _parse(file, mtime_ns, size)
    out: dict[str, object] = {}
    if parsed is None:
        return out
    ev = _Eval(file, out, known)

    def run(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef):
                out[stmt.name] = _Func(stmt, file, out)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                out[stmt.targets[0].id] = ev.value(stmt.value)
            elif isinstance(stmt, ast.If):
                decided = ev.truth(stmt.test)
                if decided is not None:
                    run(stmt.body if decided else stmt.orelse)

    run(parsed.tree.body)
    return out


def _other_builds_only(mod: str, names: list[str], suffixes: list[str]) -> str:
    """The problem of a module only other interpreters' builds of which are there (OD503)."""
    what = sorted({w for n in names for w in built_for(n, suffixes[0])})
    return (f"no file for this interpreter: only {', '.join(names)}"
            + (f", built for {' / '.join(what)}" if what else "")
            + f" (this interpreter imports {mod}{suffixes[0]})")


@lru_cache(maxsize=64)
def _compiled_top_level(site: str, suffixes: tuple[str, ...]
                        ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The compiled modules directly in a sys.path directory: (module → its file for this
    interpreter's suffixes, module → files of other interpreters' builds only, such as k2's
    ``_k2.cpython-39-x86_64-linux-gnu.so`` beside Python 3.11)."""
    mine: dict[str, str] = {}
    others: dict[str, list[str]] = {}
    try:
        names = sorted(os.listdir(site))
    except OSError:
        return mine, others
    for suffix in (x for x in suffixes if x != ".py"):
        for n in names:
            if n.endswith(suffix) and "." not in n[:-len(suffix)]:
                mine.setdefault(n[:-len(suffix)], os.path.join(site, n))
    for n in names:
        m = re.fullmatch(r"(\w+)\.(?:cpython-\d+|pypy\d+|abi3)[\w.-]*\.(?:so|pyd)", n)
        if m and m.group(1) not in mine:
            others.setdefault(m.group(1), []).append(n)
    return mine, others


def _top_level_extension(file: str, line: int, seg: str, mod: str, top_dir: str,
                         suffixes: list[str], handlers: list[ast.ExceptHandler]) -> list[Link]:
    """A link for ``import mod`` when ``mod`` is a compiled module beside the package in its
    sys.path directory — duckdb's ``import _duckdb``, the package's own extension installed at
    the top level (or, k2's ``_k2``, only builds for other interpreters are there); [] for any
    other module (the stdlib, another package)."""
    if not top_dir:
        return []
    mine, others = _compiled_top_level(os.path.dirname(top_dir), tuple(suffixes))
    if mod in mine:
        return [Link(file, line, "submodule", seg, mod, [mine[mod]], _swallow(handlers))]
    if mod in others:
        link = Link(file, line, "submodule", seg, mod, [], _swallow(handlers))
        link.problem = _other_builds_only(mod, others[mod], suffixes)
        link.other_builds = list(others[mod])
        return [link]
    return []


def _submodule(file: str, line: int, seg: str, mod: str, pkg_dir: str, package: str,
               suffixes: list[str], handlers: list[ast.ExceptHandler], depth: int,
               seen: set[str], top_dir: str = "", known: Known | None = None) -> list[Link]:
    good, others = module_files(pkg_dir, mod, suffixes)
    # The module's full dotted name, as the import system names it: `from . import x` in
    # pkg/docs/__init__.py imports pkg.docs.x, not pkg.x (the probe re-imports this name).
    rel = os.path.relpath(pkg_dir, top_dir) if top_dir else "."
    inner = "" if rel == "." or rel.startswith("..") else "." + rel.replace(os.sep, ".")
    link = Link(file, line, "submodule", seg, f"{package}{inner}.{mod}", good,
                _swallow(handlers))
    out = [link]
    # What the import system picks, in its order: a package directory, then an extension
    # module (its suffixes in order), then source. PyAV ships av/_core.py beside
    # av/_core.abi3.so: the compiled one is imported.
    package_init = [g for g in good if g.endswith(os.sep + "__init__.py")]
    compiled = [g for g in good if not g.endswith(".py")]
    if compiled and not package_init:
        link.resolved = compiled[:1]
    py = package_init or ([] if compiled else [g for g in good if g.endswith(".py")])
    if py:
        link.resolved = py
        out += parse_links(py[0], package, suffixes, depth + 1, seen, top_dir or pkg_dir,
                           known)
        return out
    redirected = dict(known.redirects).get(link.target) if known is not None else None
    dangling = [o for o in others if os.path.islink(o) and not os.path.exists(o)]
    if not good and redirected:
        # scikit-build-core's editable hook imports it from there (site-packages)
        if os.path.isfile(redirected):
            link.resolved = [redirected]
        else:
            link.problem = (f"an editable install's import hook maps {link.target} to "
                            f"{redirected}, which does not exist (its build output was "
                            "deleted: build it again with the install command)")
    elif not good and dangling:
        # setuptools' strict editable mode links each file of the tree into a link tree:
        # the built file the link points at is gone
        link.problem = (f"{os.path.basename(dangling[0])} is a symbolic link to "
                        f"{os.path.realpath(dangling[0])}, which does not exist (the build "
                        "output it links to was deleted)")
    elif not good and others:
        link.other_builds = [os.path.basename(o) for o in others]
        link.problem = _other_builds_only(mod, link.other_builds, suffixes)
    elif not good and os.path.isdir(os.path.join(pkg_dir, mod)):
        # A directory without __init__.py imports as a namespace subpackage (tensorflow_text's
        # core/ is one): importable, nothing to follow.
        link.resolved = [os.path.join(pkg_dir, mod)]
    elif not good:
        link.problem = f"no module {mod} in {pkg_dir}"
    return out


def installed_release(cand: Candidate) -> str:
    """"name version" of the distribution whose RECORD lists this copy of a package (its
    ``__init__.py``) or module ("" for a copy none records: a checkout, a build tree)."""
    from opdoctor.facts.pkgdir import distribution
    from opdoctor.facts.requires import owning_dist

    owner = owning_dist(os.path.join(cand.path, "__init__.py")
                        if cand.kind == "package" else cand.path)
    return " ".join(distribution(owner[0])).strip() if owner else ""


def _record_check(chain: ImportChain, site: str) -> None:
    """Files a dist-info RECORD lists that are missing or whose hash differs."""
    # Imported here: only a package analysis reads RECORD files (not a check of a library).
    import csv

    from opdoctor.facts.hashcache import HashCache
    from opdoctor.facts.requires import record_digest

    owners = _owning_dist_infos(site, chain.name)
    chain.other_dists = owners[1:]
    for dist in owners[:1]:
        record = os.path.join(dist, "RECORD")
        try:
            with open(record, encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
        except OSError:
            continue
        # A dotted package's files are listed under its path (google._upb: google/_upb/…).
        rel = chain.name.replace(".", "/")
        chain.dist = dist
        chain.record_has_init = any(r and r[0] == f"{rel}/__init__.py" for r in rows)
        if not chain.extensions_on_disk:
            # A package with no compiled file of its own whose distribution installs some
            # at the top level beside it (torch-memory-saver's hook libraries, loaded with
            # ctypes on first use): they are the package's, not "no compiled library".
            chain.extensions_on_disk = [
                os.path.join(site, r[0]) for r in rows if r and "/" not in r[0]
                and is_shared_library(r[0]) and os.path.isfile(os.path.join(site, r[0]))]
        hashed: list[tuple[str, str, str]] = []  # (RECORD row, path, recorded digest)
        own_info = os.path.basename(dist)
        for row in rows:
            if not row or not row[0] or row[0].endswith("RECORD"):
                continue
            top = row[0].split("/", 1)[0]
            if top.endswith(".dist-info") and top != own_info:
                # eva-decord 0.6.1's wheel lists decord-0.6.0.dist-info's files, which it never
                # shipped: another distribution's metadata, which no import reads (survey 19)
                continue
            path = os.path.normpath(os.path.join(site, row[0]))
            checkpoint(f"checking {row[0]} against {os.path.basename(dist)}/RECORD")
            if not os.path.exists(path):
                # A bytecode cache is rebuilt by the next import: images slimmed with `find
                # -name __pycache__ -exec rm -rf` (the official python Docker images) are
                # complete installs.
                if not row[0].endswith(".pyc"):
                    chain.record_missing.append(row[0])
            elif len(row) > 1 and row[1].startswith("sha256=") and \
                    (path.endswith((".so", "__init__.py")) or ".so." in path) and \
                    os.path.getsize(path) < (512 << 20):
                # Hash the compiled libraries and __init__ files (what a rebuild in place or a
                # hand edit changes), not every .py of a large package.
                hashed.append((row[0], path, row[1][len("sha256="):]))
        # Hashed in parallel threads and remembered by each file's stat identity: a second
        # check of the package reads none of them again (a changed file has another key).
        cache = HashCache()
        digests = cache.many(path for _, path, _ in hashed)
        for name, path, recorded in hashed:
            hexdigest = digests.get(path)
            if hexdigest is None:
                continue  # unreadable: the import's own checks say what that breaks
            if record_digest(hexdigest) != recorded:
                chain.record_changed.append(name)
        cache.save()
        return


def _owning_dist_infos(site: str, name: str) -> list[str]:
    """The ``*.dist-info`` directories of ``site`` whose RECORD lists files of the package
    ``name`` (dotted: its path), in name order."""
    import csv

    rel = name.replace(".", "/")
    out = []
    for dist in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        try:
            with open(os.path.join(dist, "RECORD"), encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
        except OSError:
            continue
        if any(r and (r[0].startswith(rel + "/") or r[0].startswith(name + "."))
               for r in rows):
            out.append(dist)
    return out


_TORCH_FIELD = re.compile(r"^(hip|cuda)\s*(?::[^=]*)?=\s*(None|['\"]([^'\"]*)['\"])", re.M)


def known_here(sys_path: list[str], suffixes: list[str],
               env: tuple[tuple[str, str], ...] | None = None) -> Known:
    """What decides a package's conditions in this install: the interpreter's extension
    suffixes, the torch build on its sys.path (``torch/version.py``: ``hip``, ``cuda``) and
    the job's environment (``env``, when known)."""
    exts = tuple(x for x in suffixes if x != ".py")
    redirects = tuple(sorted(skbc_redirects(site_dirs(sys_path)).items()))
    base = Known(exts, env=env, redirects=redirects, sys_path=tuple(sys_path))
    known = _torch_known(sys_path, exts)
    return dataclasses.replace(known, env=env, redirects=redirects,
                               sys_path=tuple(sys_path)) if known is not None else base


def _torch_known(sys_path: list[str], exts: tuple[str, ...]) -> Known | None:
    """The torch build of the first torch on ``sys_path``; None without one."""
    for entry in sys_path:
        version = os.path.join(entry or ".", "torch", "version.py")
        if not os.path.isfile(os.path.join(entry or ".", "torch", "__init__.py")):
            continue
        try:
            with open(version, encoding="utf-8") as fh:
                text = fh.read(1 << 16)
        except OSError:
            return Known(exts)
        fields = {m.group(1): m.group(3) for m in _TORCH_FIELD.finditer(text)}
        if "hip" not in fields or "cuda" not in fields:
            return Known(exts)
        return Known(exts, fields["hip"] or None, fields["cuda"] or None, True)
    return None


def import_suffixes(ext_suffix: str) -> list[str]:
    """The file suffixes an import of this interpreter tries, in its order (its extension
    suffix, the stable ABI's, a bare .so, source)."""
    return [ext_suffix, ".abi3.so", ".so", ".py"]


def analyse(name: str, sys_path: list[str], ext_suffix: str, cwd: str,
            env: dict[str, str] | None = None) -> ImportChain:
    """Locate the package, follow its ``__init__.py``, check its installed RECORD (once per
    run for the same package and interpreter: target expansion and the check share it).
    ``env``: the environment the job imports it with (None: unknown)."""
    items = tuple(sorted(env.items())) if env is not None else None
    return _analyse(name, tuple(sys_path), ext_suffix, cwd, items)


@lru_cache(maxsize=16)
def _analyse(name: str, sys_path: tuple[str, ...], ext_suffix: str, cwd: str,
             env: tuple[tuple[str, str], ...] | None = None) -> ImportChain:
    suffixes = import_suffixes(ext_suffix)
    cands = locate(name, list(sys_path), suffixes, cwd)
    chain = ImportChain(name, cands, winner_of(cands))
    chain.sys_path = sys_path
    if len(cands) > 1:
        chain.releases = {c.path: installed_release(c) for c in cands}
    pkg = chain.package_dir
    if not pkg:
        win = chain.winner
        if win is not None and win.kind in ("module", "extension") and "." not in name:
            # A single-module distribution (soundfile.py with its _soundfile_data/ beside
            # it): its RECORD lists the files it needs as much as a package's does.
            _record_check(chain, os.path.dirname(win.path))
        if win is not None and win.kind == "module" and "." not in name:
            # A single-module distribution's compiled code is a top-level extension beside it
            # (brotli.py runs `import _brotli`): the module is read as a package's __init__,
            # with its directory as the site its top-level imports resolve in.
            chain.links = _without_superseded(parse_links(
                win.path, name, suffixes, top_dir=os.path.join(os.path.dirname(win.path), name),
                known=known_here(list(sys_path), suffixes, env)))
        elif win is not None and win.kind == "module":
            # A module of a package (`--package PIL.Image`): read as its package's modules
            # are, relative imports from its directory — Image.py's `from . import _imaging`
            # is the extension its import loads (the check said "no compiled library" over a
            # _imaging whose vendored libtiff was replaced; survey 23's L1)
            chain.links = _without_superseded(parse_links(
                win.path, name.rsplit(".", 1)[0], suffixes,
                known=known_here(list(sys_path), suffixes, env)))
        return chain
    init = os.path.join(pkg, "__init__.py")
    if os.path.isfile(init):
        seen: set[str] = set()
        chain.links = _without_superseded(parse_links(init, name, suffixes, seen=seen,
                                                      known=known_here(list(sys_path),
                                                                       suffixes, env)))
        chain.truncated = _TRUNCATED in seen
        parsed = _source(init)
        chain.imported_first = _required_first(parsed.tree.body) if parsed is not None else []
        chain.imports_packages = _module_level_imports(parsed.tree.body, name) \
            if parsed is not None else []
    walked = 0
    for root, _dirs, files in os.walk(pkg):
        walked += len(files)
        if walked > MAX_WALK_FILES:
            chain.truncated = True
            break
        checkpoint(f"listing package directory {root}")
        for f in sorted(files):
            full = os.path.join(root, f)
            if is_shared_library(f):
                chain.extensions_on_disk.append(full)
            elif f.endswith(".py"):
                chain.python_files.append(full)
                chain.script_relative += _script_relative(full)
    # The directory the top-level package sits in: one level up per dotted part
    # (google._upb's is two levels above google/_upb).
    site = pkg
    for _part in name.split("."):
        site = os.path.dirname(site)
    _record_check(chain, site)
    return chain


def _module_level_imports(body: list[ast.stmt], package: str) -> list[str]:
    """Top-level names of the absolute imports a module's body runs (into ``try`` bodies, not
    functions, handlers or branches), other than ``package`` itself."""
    out: list[str] = []
    for stmt in body:
        names: list[str] = []
        if isinstance(stmt, ast.Import):
            names = [a.name.split(".")[0] for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            names = [stmt.module.split(".")[0]]
        elif isinstance(stmt, ast.Try):
            names = _module_level_imports(stmt.body, package)
        out += [n for n in names if n != package and n not in out]
    return out


def _unguarded_imports(body: list[ast.stmt]) -> list[tuple[int, str]]:
    """(line, top-level name) of the absolute imports a module's body runs unconditionally:
    module level, outside ``try``, functions and branches — an ImportError there is the
    import's failure."""
    out: list[tuple[int, str]] = []
    for stmt in body:
        if isinstance(stmt, ast.Import):
            out += [(stmt.lineno, a.name.split(".")[0]) for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            out.append((stmt.lineno, stmt.module.split(".")[0]))
    return out


def unconditional_imports(chain: ImportChain) -> list[str]:
    """The top-level names the package's import imports whatever happens: the unguarded
    absolute imports of its modules that the import reaches unconditionally (fbgemm_gpu's
    ``import torch``, faiss's loader.py ``import numpy``)."""
    pkg = chain.package_dir
    if not pkg:
        return []
    out: dict[str, None] = {}
    for file in _reached_unconditionally(chain, pkg):
        parsed = _source(file)
        for _line, name in _unguarded_imports(parsed.tree.body) if parsed else []:
            out[name] = None
    return list(out)


def absent_submodules(chain: ImportChain, name: str, where: str, ext_suffix: str
                      ) -> list[tuple[str, int, str]]:
    """(file, line, dotted module) of the unconditional imports the package's import runs of
    a module of the distribution ``name`` (``from numpy.exceptions import …``, ``import
    numpy.exceptions``, ``from google.protobuf import runtime_version``) that its copy in the
    directory ``where`` does not have: that import fails whatever happens (survey 22's B3 — a
    user-site numpy 1.23.5 before numpy 2.4.6, and scipy's ``from numpy.exceptions import
    …``; survey 24's F6 — protobuf 4.25.8 before TensorFlow 2.21's generated ``_pb2``
    modules, whose ``runtime_version`` arrived in protobuf 5.26).

    The distribution's own packages are what its RECORD installed (protobuf's is
    ``google.protobuf``: ``google`` is a namespace other distributions share), and a name
    imported from one of them is missing only when it is neither a module there nor a name
    its ``__init__.py`` binds."""
    from opdoctor.facts.requires import dist_info_in, record_packages

    pkg = chain.package_dir
    info = dist_info_in(name, where)
    roots = record_packages(info) if info else set()
    if not roots and os.path.isdir(os.path.join(where, name)):
        roots = {name}  # no RECORD (a copied or egg install): the import name as the dist's
    if not pkg or not roots:
        return []
    suffixes = [".py", ext_suffix, ".abi3.so", ".so"]
    out: list[tuple[str, int, str]] = []
    for file in _reached_unconditionally(chain, pkg, deep=True):
        parsed = _source(file)
        if parsed is None:
            continue
        for stmt in parsed.tree.body:
            for mod, attr in _absolute_imports(stmt):
                if not any(mod == r or mod.startswith(r + ".") for r in roots):
                    continue
                missing = _missing_in(where, mod, attr, suffixes)
                if missing:
                    out.append((file, stmt.lineno, missing))
                    break
    return out


def _absolute_imports(stmt: ast.stmt) -> list[tuple[str, str]]:
    """(module, name) of what an absolute import statement imports: ``import a.b`` → (a.b, ""),
    ``from a.b import c, d`` → (a.b, c), (a.b, d); a star import → (a.b, "")."""
    if isinstance(stmt, ast.Import):
        return [(a.name, "") for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return [(stmt.module, a.name) for a in stmt.names if a.name != "*"] or \
            [(stmt.module, "")]
    return []


def gone_from_installed(chain: ImportChain, cwd: str, ext_suffix: str
                        ) -> list[tuple[str, int, str, str]]:
    """(file, line, dotted name, release) of the unconditional imports the package's import
    runs of a module — or a name ``from a.b import name`` takes — of another distribution's
    package that is installed and lacks it: ``from torchao.dtypes.nf4tensor import …`` in
    torchtune 0.6.1 beside torchao 0.18, which has no such module (survey 24's F5, "No
    problem found" with ``--static``). Only a regular package found first on sys.path whose
    ``__init__.py`` does not reshape its ``__path__`` (pkgutil.extend_path: submodules can
    live elsewhere); a namespace package is not one distribution's."""
    pkg = chain.package_dir
    if not pkg:
        return []
    suffixes = import_suffixes(ext_suffix)
    top_own = chain.name.split(".")[0]
    homes: dict[str, Candidate | None] = {}
    out: list[tuple[str, int, str, str]] = []
    for file in _reached_unconditionally(chain, pkg):
        parsed = _source(file)
        if parsed is None:
            continue
        for stmt in parsed.tree.body:
            for mod, attr in _absolute_imports(stmt):
                top = mod.split(".")[0]
                if top == top_own or (top == mod and not attr):
                    continue
                if top not in homes:
                    homes[top] = regular_home(top, list(chain.sys_path), suffixes, cwd)
                home = homes[top]
                if home is None:
                    continue
                release = installed_release(home)
                if not release:
                    continue  # the standard library's (kivy: `from re import MULTILINE`,
                    # which enum.global_enum binds), or a copy no distribution installed
                missing = _missing_in(os.path.dirname(home.path), mod, attr, suffixes)
                if missing:
                    out.append((file, stmt.lineno, missing, release))
                    break
    return out


def regular_home(top: str, sys_path: list[str], suffixes: list[str], cwd: str
                 ) -> Candidate | None:
    """The package ``import top`` finds first on ``sys_path`` when it is a regular package
    whose ``__init__.py`` does not reshape its ``__path__`` — one whose submodules are the
    files below it, so a missing one is missing; None otherwise (a module, a namespace
    package, nothing found)."""
    first = winner_of(locate(top, sys_path, suffixes, cwd))
    if first is None or first.kind != "package" or \
            _reshapes_path(os.path.join(first.path, "__init__.py")):
        return None
    return first


_RESHAPES = re.compile(rb"__path__|sys\.modules|def __getattr__")


def _reshapes_path(init: str) -> bool:
    """Whether a package's ``__init__.py`` may provide submodules that are not files below
    it: it changes its ``__path__`` (extend_path, a plugin directory), registers modules in
    ``sys.modules`` (torch.distributed._tensor's aliases of torch.distributed.tensor), or
    makes them on access (a module ``__getattr__``). A missing ``__init__.py`` is none."""
    if not os.path.isfile(init):
        return False
    parsed = _source(init)
    return parsed is None or any(_RESHAPES.search(line) for line in parsed.lines)


def _missing_in(where: str, mod: str, attr: str, suffixes: list[str]) -> str:
    """The first part of ``mod`` (then ``mod.attr``, a name ``from mod import attr`` takes)
    that the copy under the directory ``where`` lacks; "" when all are there or cannot be
    told apart from a name set at run time."""
    parts = mod.split(".")
    here = where
    for i, part in enumerate(parts):
        if i and _reshapes_path(os.path.join(here, "__init__.py")):
            return ""  # its modules may live elsewhere, or be aliases it registers
        below = os.path.join(here, part)
        if os.path.isdir(below):
            here = below
            continue
        if i == len(parts) - 1 and any(os.path.isfile(below + s) for s in suffixes):
            return ""  # a module: the names it defines are not read
        return ".".join(parts[:i + 1])
    init = os.path.join(here, "__init__.py")
    if not attr or not os.path.isfile(init) or _reshapes_path(init):
        return ""
    if os.path.isdir(os.path.join(here, attr)) or any(
            os.path.isfile(os.path.join(here, attr + s)) for s in suffixes):
        return ""
    return "" if _may_bind(init, attr) else f"{mod}.{attr}"


# Names a module can bind that no statement lists (``globals().update(…)``, ``setattr(…)``);
# a module ``__getattr__`` and ``sys.modules`` entries are :func:`_reshapes_path`'s.
_RUNTIME_BINDERS = re.compile(rb"\b(?:globals|setattr|exec|vars)\s*\(")


def _may_bind(init: str, name: str) -> bool:
    """Whether the module ``init`` binds ``name`` at its top level (in any branch of an
    ``if`` or ``try``: :func:`opdoctor.facts.pynames.module_bindings`), or may at run time."""
    from opdoctor.facts.pynames import module_bindings

    parsed = _source(init)
    if parsed is None or any(_RUNTIME_BINDERS.search(line) for line in parsed.lines):
        return True
    return module_bindings(init).has(name)


def missing_imports(chain: ImportChain, cwd: str, ext_suffix: str, deep: bool = False
                    ) -> list[tuple[str, int, str]]:
    """(file, line, top-level name) of the unconditional imports of other distributions
    that the package's import runs — in ``__init__.py`` and in each of its own modules that
    the import reaches unconditionally — and that nothing on ``sys.path`` provides (pyproj
    3.7.2's network.py: ``import certifi``, without certifi installed)."""
    pkg = chain.package_dir
    if not pkg:
        return []
    suffixes = [".py", ext_suffix, ".abi3.so", ".so"]
    files = _reached_unconditionally(chain, pkg, deep)
    top = chain.name.split(".")[0]
    found: dict[str, bool] = {top: True, "__future__": True}  # each name looked up once
    out: list[tuple[str, int, str]] = []
    for file in files:
        # A module whose top-level import lines all name importable modules needs no parse
        # (the deep walk reaches hundreds: torchvision's took 0.25 s of parsing otherwise).
        lines = _top_import_lines(file)
        names = {n for _mod, n in lines if n}
        for name in names - set(found):
            found[name] = importable(name, chain.sys_path, suffixes, cwd)
        if all(found[n] for n in names) and ("", "?") not in lines:
            continue
        parsed = _source(file)
        for line, name in _unguarded_imports(parsed.tree.body) if parsed else []:
            if name not in found:
                found[name] = importable(name, chain.sys_path, suffixes, cwd)
            if not found[name]:
                out.append((file, line, name))
    return out


# An import statement at the start of a line: module level (a `try`, `if` or function body
# is indented). A line of a multi-line string may look like one too: what this finds is
# confirmed by a parse before it is reported.
_TOP_IMPORT = re.compile(rb"^(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w., \t]*)|"
                         rb"import[ \t]+([\w., \t]+))", re.M)


def _top_import_lines(file: str) -> list[tuple[str, str]]:
    """(module as written, top-level name of another package or "") of each import line at
    column 0 of ``file``: ``from .x import y`` → (".x", ""), ``import a.b, c`` → ("a.b", "a"),
    ("c", "c"); read as text, not parsed. ("", "?") for a line with more statements on it (a
    ``;``, a backslash continuation) than this reading splits."""
    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_SOURCE_BYTES)
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    for m in _TOP_IMPORT.finditer(raw):
        end = raw.find(b"\n", m.end())
        rest = raw[m.end():end if end >= 0 else len(raw)]
        if b";" in rest or rest.rstrip().endswith(b"\\"):
            out.append(("", "?"))  # more on the line than this reading splits: parse it
        if m.group(3) is not None:
            for part in m.group(3).decode("utf-8", "replace").split(","):
                mod = part.strip().split(" ")[0]
                if mod:
                    out.append((mod, mod.split(".")[0]))
        else:
            mod = m.group(1).decode("utf-8", "replace")
            out.append((mod, "" if mod.startswith(".") or not mod else mod.split(".")[0]))
    return out


def maybe_missing_imports(chain: ImportChain, cwd: str, ext_suffix: str
                          ) -> list[tuple[str, int, str, str]]:
    """(file, line, top-level name, how) of the absolute imports that the package's import
    may run, which nothing on ``sys.path`` provides: under a module-level ``if``, or in a
    function of the module that its import calls (``how`` says which). In the modules the
    import reaches unconditionally; never inside ``try``. tensorflow-model-optimization 0.8.1's
    keras/compat.py runs ``keras = _get_keras_instance()``, whose ``import tf_keras`` under an
    ``if`` is what its import dies on without tf-keras — ``--static`` said its import "does not
    reach" that requirement (survey 18)."""
    pkg = chain.package_dir
    if not pkg:
        return []
    suffixes = [".py", ext_suffix, ".abi3.so", ".so"]
    top = chain.name.split(".")[0]
    found: dict[str, bool] = {top: True, "__future__": True}
    out: list[tuple[str, int, str, str]] = []
    for file in _reached_unconditionally(chain, pkg):
        parsed = _source(file)
        for line, name, how in _conditional_imports(parsed.tree, file) if parsed else []:
            if name not in found:
                found[name] = importable(name, chain.sys_path, suffixes, cwd)
            if not found[name]:
                out.append((file, line, name, how))
    return out


# `try` statements (`try … except*` from Python 3.11 on).
_TRIES: tuple[type[ast.stmt], ...] = tuple(getattr(ast, n) for n in ("Try", "TryStar")
                                           if hasattr(ast, n))


def _conditional_imports(tree: ast.Module, file: str) -> list[tuple[int, str, str]]:
    """(line, top-level name, how) of a module's absolute imports that its import may run
    but not unconditionally: under a module-level ``if`` no static reading decides, or in a
    module function that the module's body calls (a few calls deep). Not inside ``try`` (a
    guarded import), nor in nested functions, lambdas or classes; not under an ``if`` decided
    false here (``if TYPE_CHECKING:``)."""
    funcs = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))}
    out: list[tuple[int, str, str]] = []
    called: list[str] = []

    def visit(stmts: list[ast.stmt], how: str, branch: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 *_TRIES)):
                continue
            names: list[str] = []
            if isinstance(stmt, ast.Import):
                names = [a.name.split(".")[0] for a in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                names = [stmt.module.split(".")[0]]
            if names and (branch or how):
                said = ", ".join(x for x in (how, "under a condition" if branch else "") if x)
                out.extend((stmt.lineno, n, said) for n in names)
            for node in all_nodes(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in funcs:
                    called.append(node.func.id)
            if isinstance(stmt, ast.If):
                # decided here (`if TYPE_CHECKING:`, `if sys.platform == "win32":`): only the
                # branch that runs, and as surely as the `if` itself
                truth = ev.truth(stmt.test)
                if truth is not None:
                    visit(stmt.body if truth else stmt.orelse, how, branch)
                    continue
            if isinstance(stmt, (ast.If, ast.For, ast.While)):
                visit(stmt.body, how, True)
                visit(stmt.orelse, how, True)
            elif isinstance(stmt, ast.With):
                visit(stmt.body, how, branch)

    ev = _Eval(file, {})
    visit(tree.body, "", False)
    entered: set[str] = set()
    for _level in range(3):
        fresh = [n for n in dict.fromkeys(called) if n not in entered]
        if not fresh:
            break
        entered.update(fresh)
        called.clear()
        for name in fresh:
            visit(funcs[name].body, f"in {name}(), which the module's import calls", False)
    return out


_REACHED: dict[tuple[int, bool], tuple[ImportChain, list[str]]] = {}
commandcache.register(_REACHED.clear)


def unguarded_process_handle(link: Link) -> bool:
    """Whether ``link`` — a ``ctypes.CDLL(name)`` whose ``name`` is ``find_library``'s None here
    (:attr:`Link.process_handle`) — runs at import with nothing testing that name first: its
    function (if any) is called when the module runs, the argument is a plain name bound by
    ``name = …find_library(…)`` earlier in the same block, and no statement between the two
    tests it (sounddevice's ``if _libname is None: raise OSError(…)`` does; python-vlc's
    Linux branch, ``p = find_library("vlc")`` then ``ctypes.CDLL(p)``, does not)."""
    parsed = _source(link.file)
    if parsed is None or not link.process_handle:
        return False
    tree = parsed.tree
    load = next((n for n in all_nodes(tree) if isinstance(n, ast.Call) and
                 getattr(n, "lineno", 0) == link.line and n.args and
                 _dotted(n.func).rsplit(".", 1)[-1] in _LOADERS), None)
    if load is None or not isinstance(load.args[0], ast.Name):
        return False
    name = load.args[0].id
    if link.function:
        funcs = {f.name for f in tree.body if isinstance(f, (ast.FunctionDef,
                                                             ast.AsyncFunctionDef))}
        at_import = _module_level_calls(tree)
        if link.function not in funcs or not any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                n.func.id == link.function and id(n) in at_import for n in all_nodes(tree)):
            return False
    # the statement lists holding the load, innermost first: the assignment is looked for
    # before the load in each, going out; what runs between the two must not test the name
    holders = sorted(((b, k) for n in all_nodes(tree) for b in _bodies(n)
                      for k, st in enumerate(b) if any(x is load for x in all_nodes(st))),
                     key=lambda h: len(list(all_nodes(h[0][h[1]]))))
    if not holders or _tests(name, holders[0][0][holders[0][1]], until=load):
        return False
    for block, i in holders:
        for j in range(i - 1, -1, -1):
            st = block[j]
            if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                  for t in st.targets):
                return isinstance(st.value, ast.Call) and \
                    _dotted(st.value.func).rsplit(".", 1)[-1] == "find_library"
            if _tests(name, st):
                return False
    return False


def _bodies(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly inside ``node`` (a module's, a function's, a branch's)."""
    return [v for f in ("body", "orelse", "finalbody") if isinstance(
        v := getattr(node, f, None), list) and v and isinstance(v[0], ast.stmt)]


def _tests(name: str, stmt: ast.AST, until: ast.AST | None = None) -> bool:
    """Whether ``stmt`` tests ``name`` (an ``if``/``while``/``assert`` condition, a comparison,
    ``not name``, ``name or …``) — before the node ``until`` when given."""
    for n in all_nodes(stmt):
        if n is until:
            return False
        cond = n.test if isinstance(n, (ast.If, ast.While, ast.Assert, ast.IfExp)) else \
            n if isinstance(n, (ast.Compare, ast.BoolOp)) or (
                isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)) else None
        if cond is not None and any(isinstance(x, ast.Name) and x.id == name
                                    for x in all_nodes(cond)):
            return True
    return False


def runs_at_import(chain: ImportChain) -> set[str]:
    """The files of the package that ``import <package>`` runs whatever happens (a module
    target: its own file) — see :func:`_reach`."""
    if chain.package_dir:
        return set(_reached_unconditionally(chain, chain.package_dir))
    return {chain.winner.path} if chain.winner is not None else set()


def _reached_unconditionally(chain: ImportChain, pkg: str, deep: bool = False) -> list[str]:
    """:func:`_reach` of the chain, once per command (four readers ask)."""
    key = (id(chain), deep)
    hit = _REACHED.get(key)
    if hit is not None and hit[0] is chain:
        return hit[1]
    out = _reach(chain, pkg, deep)
    _REACHED[key] = (chain, out)
    return out


def _reach(chain: ImportChain, pkg: str, deep: bool) -> list[str]:
    """The package's own source files that ``import <package>`` runs whatever happens: its
    ``__init__.py``, and each module an unconditional import *in a file already reached*
    names, with the ``__init__.py`` of every package between (Python runs those first).

    An unconditional import in a module that only a function body imports is not run by the
    import: vllm 0.34's ``envs.py`` imports ``vllm.platforms`` inside a function, and
    ``platforms/__init__.py``'s ``import regex`` was an OD514 error ("import vllm runs import
    regex") although ``import vllm`` works without regex (survey 15's F1)."""
    start = os.path.join(pkg, "__init__.py")
    reached = {start: None}
    plain = [lk for lk in chain.links if lk.kind == "submodule" and not (
        lk.function or lk.lazy or lk.fallback or lk.swallowed or lk.checked or lk.problem
        or lk.branch)]
    grown = True
    while grown:  # the links are in visiting order, not always after the file they are in
        grown = False
        for lk in plain:
            if lk.file not in reached:
                continue
            for f in lk.resolved:
                if not f.endswith(".py"):
                    continue
                for g in [*_parent_inits(f, pkg), f]:
                    if g not in reached:
                        reached[g] = None
                        grown = True
    # The link walk stops MAX_DEPTH modules deep; the package's own unguarded module-level
    # imports go on below that (kornia 0.8.1: __init__ → filters → bilateral → kernels →
    # utils → image_print → io → io.py, whose `import kornia_rs` is what `import kornia`
    # fails on; survey 21's W9). Followed here by module name alone, to MAX_REACHED files —
    # when ``deep`` (a requirement is not installed: where the import meets it matters).
    queue = list(reached) if deep else []
    top = chain.name.split(".")[0]
    root = pkg
    for _part in chain.name.split(".")[1:]:
        root = os.path.dirname(root)
    while queue and len(reached) < MAX_REACHED:
        file = queue.pop(0)
        for g in _own_imports(file, root, top):
            for h in [*_parent_inits(g, pkg), g]:
                if h not in reached and h.startswith(pkg):
                    reached[h] = None
                    queue.append(h)
    return list(reached)


MAX_REACHED = 250  # modules of the package its import is followed through, by module name


def _own_imports(file: str, root: str, top: str) -> list[str]:
    """The files of the package's own modules that a module imports at module level (its
    import lines at column 0, read as text): ``import top.a.b``, ``from top.a import b``
    (``b`` a module or a name of ``a``), ``from .x import y``. ``root``: the top-level
    package's directory. (Only where the import walk goes: a line of a docstring that looks
    like an import adds a module to follow, never a finding by itself.)"""
    out: list[str] = []

    def module(parts: list[str]) -> None:
        base = os.path.join(os.path.dirname(root), *parts)
        for f in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(f):
                out.append(f)
                return

    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_SOURCE_BYTES)
    except OSError:
        return out
    for m in _TOP_IMPORT.finditer(raw):
        if m.group(3) is not None:  # import a.b, c
            for part in m.group(3).decode("utf-8", "replace").split(","):
                parts = part.strip().split(" ")[0].split(".")
                if parts[0] == top:
                    module(parts)
            continue
        mod = m.group(1).decode("utf-8", "replace")
        level = len(mod) - len(mod.lstrip("."))
        if level:
            here = os.path.dirname(file)
            for _ in range(level - 1):
                here = os.path.dirname(here)
            rel = os.path.relpath(here, os.path.dirname(root))
            if rel.startswith(".."):
                continue
            parts = rel.split(os.sep) + ([p for p in mod[level:].split(".") if p])
        elif mod.split(".")[0] == top:
            parts = mod.split(".")
        else:
            continue
        module(parts)
        for name in m.group(2).decode("utf-8", "replace").split(","):
            name = name.strip().split(" ")[0]
            if name.isidentifier():
                module([*parts, name])
    return out


def extensions_at_import(chain: ImportChain) -> list[str]:
    """The compiled modules ``import <package>`` imports whatever happens: the files of the
    unconditional imports (no ``try``, ``if``, function body or fallback around them) in the
    package's modules that its import reaches unconditionally. ml_dtypes' ``_finfo.py`` runs
    ``from ml_dtypes._ml_dtypes_ext import bcomplex32``; h5py imports ``_npystrings`` only
    under NumPy 2 (an ``if``), so it is not one of h5py's."""
    pkg = chain.package_dir
    if not pkg:
        return []
    reached = set(_reached_unconditionally(chain, pkg))
    out: list[str] = []
    for lk in chain.links:
        if lk.kind != "submodule" or lk.file not in reached or lk.function or lk.lazy or \
                lk.fallback or lk.swallowed or lk.checked or lk.problem or lk.branch:
            continue
        out += [f for f in lk.resolved if not f.endswith(".py") and f not in out]
    return out

def _parent_inits(path: str, pkg: str) -> list[str]:
    """The ``__init__.py`` files of the packages between ``pkg`` and the module ``path``,
    outermost first (those that exist)."""
    out: list[str] = []
    d = os.path.dirname(path)
    root = os.path.normpath(pkg)
    while os.path.normpath(d).startswith(root + os.sep):
        init = os.path.join(d, "__init__.py")
        if init != path and os.path.isfile(init):
            out.append(init)
        d = os.path.dirname(d)
    return out[::-1]


def _required_first(body: list[ast.stmt]) -> list[str]:
    """Modules a package's top-level guard requires in ``sys.modules`` before it imports:
    ``if "psycopg" not in sys.modules: raise ImportError(…)``. Importing the package alone
    fails by design; the job imports those first."""
    out: list[str] = []
    for stmt in body:
        if not isinstance(stmt, ast.If) or not stmt.body or \
                not isinstance(stmt.body[0], ast.Raise):
            continue
        exc = stmt.body[0].exc
        raised = exc.func if isinstance(exc, ast.Call) else exc
        test = stmt.test
        if isinstance(raised, ast.Name) and raised.id in ("ImportError", "RuntimeError") and \
                isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                isinstance(test.ops[0], ast.NotIn) and isinstance(test.left, ast.Constant) and \
                isinstance(test.left.value, str) and _dotted(test.comparators[0]) == \
                "sys.modules" and test.left.value.replace(".", "_").isidentifier():
            out.append(test.left.value)
    return out


_MAIN_GUARD = re.compile(rb"^if __name__ == ['\"]__main__['\"]", re.M)
_RELATIVE_FROM = re.compile(rb"^[ \t]*from[ \t]+\.", re.M)


def _script_relative(file: str) -> list[tuple[str, int]]:
    """Relative imports in a file that also has an ``if __name__ == "__main__"`` block. A
    package's ``__main__.py`` is not such a script: ``python -m pkg`` runs it as ``pkg.__main__``
    with its package set, so its relative imports work (spconv's benchmark/__main__.py)."""
    if os.path.basename(file) == "__main__.py":
        return []
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
    return [(file, line) for line in _unguarded_relative(parsed.tree.body)][:1]


def _unguarded_relative(body: list[ast.stmt], guarded: bool = False) -> Iterator[int]:
    """Lines of module-level relative imports that fail when the file runs as a script: not
    those under ``if __package__ …`` (scipy's datasets/_download_all.py imports absolutely
    when run as a script) or inside ``try`` with an ImportError fallback (pymupdf)."""
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level >= 1 and not guarded:
            yield stmt.lineno
        elif isinstance(stmt, ast.Try):
            caught = set().union(*(_caught(h) for h in stmt.handlers))
            falls_back = bool(caught & {"ImportError", "ModuleNotFoundError", "Exception",
                                         "BaseException", "<bare>"})
            yield from _unguarded_relative(stmt.body, guarded or falls_back)
            for part in (*[h.body for h in stmt.handlers], stmt.orelse, stmt.finalbody):
                yield from _unguarded_relative(part, guarded)
        elif isinstance(stmt, ast.If):
            asks = any(isinstance(n, ast.Name) and n.id in ("__package__", "__spec__")
                       for n in all_nodes(stmt.test))
            yield from _unguarded_relative(stmt.body, guarded or asks)
            yield from _unguarded_relative(stmt.orelse, guarded or asks)
        elif isinstance(stmt, (ast.With, ast.For, ast.While)):
            yield from _unguarded_relative(stmt.body, guarded)




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
        for node in all_nodes(parsed.tree):
            hit = False
            if isinstance(node, ast.Call):
                hit = _dotted(node.func).rsplit(".", 1)[-1] in _LOADERS
            # Any component of the dotted name: tfx_bsl imports its extension's pybind
            # submodules (`from tfx_bsl.cc.tfx_bsl_extension.arrow.table_util import …`).
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or "", *(a.name for a in node.names)]
                hit = any(stems & set(m.split(".")) for m in mods if m)
            elif isinstance(node, ast.Import):
                hit = any(stems & set(a.name.split(".")) for a in node.names)
            if hit:
                found.append(f"{file}:{getattr(node, 'lineno', 0)}")
                break
        if len(found) >= 3:
            break
    return found


# Per-command memos (opdoctor.facts.commandcache): _analyse is keyed on the package's name
# and path, _compiled_top_level on a directory, not on what the files hold now.
commandcache.register(_entries.cache_clear, _names_a_loader.cache_clear, _parse.cache_clear,
                      _globals.cache_clear, _compiled_top_level.cache_clear, _analyse.cache_clear,
                      _shown_names.cache_clear)


def framework_imported_before(chain: ImportChain, link: Link, framework: str = "torch"
                              ) -> str | None:
    """What the package's import has imported when it runs ``link``, as far as ``framework``
    goes: "" when certainly not — every statement run before it, through the package's own
    modules, imports only the standard library and the package itself —; ``framework`` when
    it has; another top-level name when a module that may import it ran first (a third-party
    package, a compiled module of the package); None when this reading cannot tell (a load in
    a function, a dotted package name, a module it cannot read).

    ``myext/__init__.py``: ``from . import _C`` on line 1, and ``_C`` NEEDs libc10.so: `import
    myext` fails ("libc10.so: cannot open shared object file") unless the job imported torch
    first — torch.utils.cpp_extension builds set no RUNPATH to torch/lib (survey 24)."""
    pkg = chain.package_dir
    if not pkg or "." in chain.name or link.function:
        return None
    parents: dict[str, Link] = {}
    for lk in chain.links:
        if lk.kind == "submodule" and lk.resolved and lk.resolved[0].endswith(".py"):
            parents.setdefault(os.path.realpath(lk.resolved[0]), lk)
    init = os.path.realpath(os.path.join(pkg, "__init__.py"))
    path: list[tuple[str, int]] = [(link.file, link.line)]
    while os.path.realpath(path[-1][0]) != init:
        up = parents.get(os.path.realpath(path[-1][0]))
        if up is None or up.function or len(path) > MAX_DEPTH + 1:
            return None
        path.append((up.file, up.line))
    seen = {os.path.realpath(f) for f, _line in path}  # being imported: not again
    for file, line in reversed(path):  # __init__.py first, the link's module last
        found = _imports_in(file, line, pkg, framework, seen)
        if found != "":
            return found
    return ""


def _imports_in(file: str, before: int, pkg: str, framework: str, seen: set[str]
                ) -> str | None:
    """:func:`framework_imported_before` for the module-level statements of ``file`` that
    end before line ``before`` (all of them when ``before`` is 0)."""
    real = os.path.realpath(file)
    if before == 0:
        if real in seen:
            return ""
        seen.add(real)
    parsed = _source(file)
    if parsed is None:
        return None
    top = os.path.basename(pkg)
    for stmt in parsed.tree.body:
        if before and stmt.lineno >= before:
            break
        # the statement that holds the load (a `with warnings.catch_warnings():` around
        # `import torch` and `from . import _C`): its imports on earlier lines ran first
        inner = before and (getattr(stmt, "end_lineno", None) or stmt.lineno) >= before
        for node in all_nodes(stmt):
            if inner and getattr(node, "lineno", before) >= before:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
                level = 0
            elif isinstance(node, ast.ImportFrom):
                level = node.level
                base = node.module or ""
                names = [f"{base}.{a.name}".lstrip(".") for a in node.names] \
                    if level or not base else [base]
            else:
                continue
            for name in names:
                found = _one_import(file, name, level, pkg, top, framework, seen)
                if found != "":
                    return found
    return ""


def _one_import(file: str, name: str, level: int, pkg: str, top: str, framework: str,
                seen: set[str]) -> str | None:
    """One imported name's answer (see :func:`_imports_in`)."""
    first = name.split(".")[0]
    if not level:
        if first == framework:
            return framework
        if first != top:
            return "" if first in sys.stdlib_module_names else first
        parts, base = name.split(".")[1:], pkg
    else:
        base = os.path.dirname(file)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        parts = [p for p in name.split(".") if p]
    for i in range(len(parts), 0, -1):  # `from .a import b`: b a module, or a name of a
        here = os.path.join(base, *parts[:i])
        for cand in (here + ".py", os.path.join(here, "__init__.py")):
            if os.path.isfile(cand):
                return _imports_in(cand, 0, pkg, framework, seen)
        if glob.glob(glob.escape(here) + ".*.so") or os.path.isfile(here + ".so"):
            return parts[i - 1]  # a compiled module of the package: it may import anything
    return ""  # a name the package's module defines, not a module
