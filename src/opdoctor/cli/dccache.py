"""The methods ``dataclasses`` generates, compiled once per interpreter instead of once per run.

For every ``@dataclass`` the module writes the source of ``__init__``, ``__repr__``, ``__eq__``
… and compiles it with ``exec``. A static check of one small library defines ~60 dataclasses
(the facts, the findings, the reports), and compiling their ~280 generated functions is about
a third of its CPU time — more than the analysis itself.

:func:`install` gives the ``dataclasses`` module an ``exec`` of its own (a module global, which
its code finds before the builtin) that looks the source up in a cache of code objects and
compiles only what is not there: the same ``compile`` with the same file name and flags, so
each code object is the one ``exec`` would have built (``tests/test_startup_caches.py``
compares them). The cache is one ``marshal`` file per interpreter (code objects are only
valid for the interpreter that made them) and version of opdoctor's sources under
``$XDG_CACHE_HOME/opdoctor``; a corrupt or foreign file is no cache, and the file is
rewritten only when a run compiled something new.

Before that cache comes the table that ships with the package for this Python version
(``opdoctor/_startup/dataclasses_pyXY.py``, written by ``native/gen_startup.py``): the same
texts and, as Python source, the same code, whose bytecode is compiled at install like any
module's — so the first run after an install or an upgrade compiles none of opdoctor's
methods either (~35 ms of a first static check). The disk cache is read only on a text the
table lacks (another Python version, a class changed without ``make startup-tables``).
"""

from __future__ import annotations

import builtins
import os
import sys
import types
import zlib

from opdoctor import cachefile

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
MAX_ENTRIES = 4096  # bounded: a process that builds dataclasses from data never grows it
_CODE = type(compile("", "<string>", "exec"))
_state: dict[str, object] = {}


def cache_path() -> str:
    """The cache file of this interpreter and opdoctor's sources. Keyed on the sources (the
    walk the check registry's manifest is keyed on, done once per process) so the file holds
    only what the current classes generate: keyed on the interpreter alone, it kept every
    version's methods (1,054 entries, 1.1 MB read and unmarshalled per run, where a check
    needs ~280)."""
    ident = "|".join([str(FORMAT), sys.version, sys.implementation.cache_tag, sys.executable,
                      *cachefile.source_stamps()])
    return os.path.join(cachefile.cache_dir(), f"dataclasses-{zlib.crc32(ident.encode()):08x}"
                        ".marshal")


class _OnFirstUse(types.ModuleType):
    """A stand-in for a standard module that imports it when an attribute is first asked
    for, then serves the real module's attributes (and leaves it in ``sys.modules``)."""

    def __getattr__(self, attr: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        import importlib

        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def defer(name: str) -> None:
    """Put a stand-in for the standard module ``name`` into ``sys.modules``, so importing it
    costs nothing until something uses it.

    ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``, ``linecache``:
    ~10 ms, 5 % of a static check of a small library) but uses it only to write a docstring
    for a class that has none, and every dataclass ``check`` defines has one
    (``tests/test_check_caches.py`` checks that ``inspect`` stays unloaded). Whatever does use
    ``inspect`` (the typer app, a class without a docstring) gets the real module then.
    (``importlib.util.LazyLoader`` does not help: the ``import`` statement itself reads the
    module's ``__spec__``, which loads it.)"""
    if name not in sys.modules:
        sys.modules[name] = _OnFirstUse(name)


def install() -> None:
    """Route the ``exec`` calls of ``dataclasses`` through the cache (once per process; not
    when ``dataclasses`` already has an ``exec`` of someone else's)."""
    if "dataclasses" not in sys.modules:
        defer("inspect")
    import dataclasses

    if "exec" in vars(dataclasses):
        return
    shipped = _shipped()
    codes: dict[str, object] = {}
    _state["codes"], _state["dirty"], _state["recording"] = codes, False, False
    _state["path"] = ""

    def cached_exec(source: Any, globals: Any = None, locals: Any = None) -> None:
        if type(source) is str:
            made = shipped.get(source)
            if made is not None and type(locals) is dict and type(globals) is dict:
                # What exec(source, globals, locals) does: define __create_fn__ there.
                locals["__create_fn__"] = types.FunctionType(made, globals)
                return
            if "loaded" not in _state:
                _load(codes)
            code = codes.get(source)
            if type(code) is not _CODE:
                # dataclasses.py has no __future__ import: compile as its exec does, with no
                # flags of this module (whose `annotations` future would change the result).
                code = compile(source, "<string>", "exec", dont_inherit=True)
                # Only opdoctor's own classes are stored: a process that goes on to import
                # torch (a test calling main() in-process) defined hundreds of torch's, which
                # grew the file every check reads to 1.1 MB (7 ms to unmarshal, of ~110).
                if (_state["recording"] and len(codes) < MAX_ENTRIES
                        and _owned(globals)):
                    codes[source] = code
                    _state["dirty"] = True
            source = code
        builtins.exec(source, globals, locals)

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]


def _shipped() -> dict[str, Any]:
    """The table of this Python version that ships with the package (text → code of the
    ``__create_fn__`` it defines; ``native/gen_startup.py``), {} when there is none: its
    bytecode is compiled at install like any module's, so a first run compiles nothing for
    the classes it lists."""
    name = f"opdoctor._startup.dataclasses_py{sys.version_info[0]}{sys.version_info[1]}"
    try:
        __import__(name)
        table = sys.modules[name]
        texts, made = table.TEXTS, table.CODES
    except (ImportError, AttributeError):
        return {}
    if len(texts) != len(made) or not all(type(c) is _CODE for c in made):
        return {}
    return dict(zip(texts, made, strict=True))


def _load(codes: dict[str, object]) -> None:
    """Read this interpreter's disk cache into ``codes`` (on the first text the shipped
    table lacks: another Python version, a class changed since the table was written)."""
    _state["loaded"] = True
    try:
        path = cache_path()
    except OSError:  # a source file vanished while the package was listed: no cache this run
        return
    stored = cachefile.read(path)
    if isinstance(stored, dict):
        codes.update(stored)
    _state["path"], _state["recording"] = path, _state.get("recording_allowed", True)


def _owned(namespace: Any) -> bool:
    """Whether ``namespace`` (the globals ``dataclasses`` runs a generated method in: the
    class's module) is one of opdoctor's modules."""
    name = namespace.get("__name__") if isinstance(namespace, dict) else None
    return isinstance(name, str) and (name == "opdoctor" or name.startswith("opdoctor."))


def stop_recording() -> None:
    """Compile what is not cached without storing it from now on: the command went to the
    typer app (``--help``, a usage error), whose classes would only make the file every
    ``check`` reads larger."""
    _state["recording"] = False
    _state["recording_allowed"] = False


def save() -> None:
    """Store what this run compiled (nothing when it compiled nothing new)."""
    if _state.get("dirty") and _state.get("path"):
        _state["dirty"] = False
        cachefile.write(str(_state["path"]), _state["codes"])
