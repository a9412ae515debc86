"""The check registry: built-in checks listed explicitly, plugins through entry points.

Built-ins are named here one by one (no "import every file in the folder"), so the order of
checks and the set of codes are reviewable in one place. Third-party checks register a
:class:`~opdoctor.checks.base.Check` under the entry-point group ``opdoctor.checks``; a broken
plugin is reported, never fatal.

Importing this package imports no check family: :func:`load_registry` imports them all (and
the plugins); :func:`load_lazy_registry`, used by ``opdoctor check``, imports each family only
when it runs (see "the lazy registry" below).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache

from opdoctor.checks.base import NOT_A_PACKAGE, PIPELINE_CODES, Check
from opdoctor.codes import CodeDoc, CodeError, build_catalog

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from opdoctor.facts import Facts

ENTRY_POINT_GROUP = "opdoctor.checks"

# The built-in checks, in the order they run: the module of each (its ``CHECK``).
BUILTIN_MODULES: tuple[str, ...] = (
    "integrity",
    "deps",
    "symbols",
    "abi",
    "cuda",
    "variant",
    "stable",  # stable-ABI extensions: shim imports vs the installed torch
    "registration",
    "importchain",
    "mindspore",
    "oneflow",
    "tensorflow",  # waits for the probe too, when it loads the library the TF way
    "probe",  # last: it waits for the load probe started before the static checks
    "numpyabi",  # after the probe: a NumPy refusal that the load survived is a warning
    "pyguard",  # after the probe: a package's version check fires in its import
    "compile",  # after the probe: with --opcheck it reads the probe's opcheck stage
)


def _check_of(module: str) -> Check:
    import importlib

    check: Check = importlib.import_module(f"opdoctor.checks.{module}").CHECK
    return check


def builtin_checks() -> tuple[Check, ...]:
    """The built-in checks, their modules imported."""
    return tuple(_check_of(m) for m in BUILTIN_MODULES)


def __getattr__(name: str) -> Any:
    # BUILTIN_CHECKS is computed on first use: importing this package (for Check, say) must not
    # import every check family with its readers.
    if name == "BUILTIN_CHECKS":
        return builtin_checks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class PluginProblem:
    """A plugin that could not be loaded, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class Registry:
    """All usable checks, the code catalog they declare, and the plugins that failed."""

    checks: tuple[Check, ...]
    catalog: dict[str, CodeDoc]
    problems: tuple[PluginProblem, ...]


def _load_plugin(ep_name: str, obj: object, taken: set[str]) -> Check:
    if callable(obj) and not isinstance(obj, Check):
        obj = obj()  # a factory returning a Check is accepted too
    if not isinstance(obj, Check):
        raise CodeError(f"entry point {ep_name!r} is {type(obj).__name__}, not opdoctor Check")
    for doc in obj.codes:
        doc.validate()
        if doc.code in taken:
            raise CodeError(f"code {doc.code} is already declared by another check")
    return obj


def _may_declare(group: str) -> bool:
    """False only when no distribution importlib.metadata would find declares entry points
    of ``group``: its own search (each ``sys.path`` directory's ``*.dist-info`` and
    ``*.egg-info`` children, and ``EGG-INFO`` of an ``.egg`` directory) with a byte search of
    each ``entry_points.txt``. Importing importlib.metadata (email, zipfile, csv …) and
    parsing every distribution's metadata costs more than a static check of a small library,
    and almost no environment has an opdoctor plugin. True whenever it cannot tell: a zip on
    ``sys.path``, or a finder of distributions other than the standard one."""
    from importlib.machinery import PathFinder

    if any(getattr(f, "find_distributions", None) is not None and f is not PathFinder
           for f in sys.meta_path):
        return True
    needle = group.encode()
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.isfile(root):
                return True  # a zip: importlib.metadata reads its members
            continue
        is_egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (is_egg and low == "egg-info"):
                try:
                    with open(os.path.join(root, child, "entry_points.txt"), "rb") as fh:
                        if needle in fh.read():
                            return True
                except OSError:
                    continue
    return False


def _plugin_entry_points() -> list[Any]:
    """The entry points of the ``opdoctor.checks`` group, sorted by name."""
    if not _may_declare(ENTRY_POINT_GROUP):
        return []
    from importlib.metadata import entry_points

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)


@lru_cache(maxsize=1)
def load_registry(with_plugins: bool = True) -> Registry:
    """Built-in checks plus every plugin that loads and validates."""
    checks = list(builtin_checks())
    catalog = build_catalog([*(c.codes for c in checks), PIPELINE_CODES])
    problems: list[PluginProblem] = []
    if with_plugins:
        for ep in _plugin_entry_points():
            try:
                check = _load_plugin(ep.name, ep.load(), set(catalog))
            except Exception as exc:  # any error in third-party code is the plugin's problem
                problems.append(PluginProblem(ep.name, f"{type(exc).__name__}: {exc}"))
                continue
            if any(c.name == check.name for c in checks):
                problems.append(PluginProblem(ep.name, f"check name {check.name!r} is taken"))
                continue
            checks.append(check)
            catalog.update({d.code: d for d in check.codes})
    return Registry(tuple(checks), dict(sorted(catalog.items())), tuple(problems))


# ---------------------------------------------------------------------------- the lazy registry
# `opdoctor check` of one library runs 13 check families, but on most targets several of them
# only say why they do not apply (not a package, not a TensorFlow library, --static …), and
# importing a family means its code catalog, its readers and their regexes. The lazy registry
# builds the same checks from a manifest — every family's name, summary, causes, code
# documentation, flags — cached on disk and keyed by the size and mtime of every file of the
# package, and imports a family's module only when the family runs. Its "does it apply"
# question is first put to a gate below, which answers only the cases it is sure of, in the
# family's own words (tests/test_registry.py holds each gate to the family's applies); anything
# else is asked of the family itself.

MANIFEST_FORMAT = 1
# The manifest also ships with the package (``native/gen_startup.py``, ``make
# startup-tables``), keyed by the content of the files the declarations are written in (the
# check modules, codes.py, model.py): a first run after an install or an upgrade, whose disk
# cache is keyed by stamps it has never seen, imports no family it does not run (~10 ms).
# ``tests/test_startup_caches.py`` holds the table to what the modules declare.
SHIPPED_MANIFEST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "_startup", "checks-manifest.marshal")


def _not_a_package(facts: Facts) -> str:
    return "" if facts.options.package else NOT_A_PACKAGE


def _not_probed(facts: Facts) -> str:
    if facts.options.probe:
        return ""
    if facts.options.wheel and facts.is_package_dir:
        return "a pure-Python wheel: nothing compiled to execute"
    return "--static: the probe (which executes the library) was not run"


def _not_mindspore(facts: Facts) -> str:
    if facts.options.aot_function or facts.mindspore_library or facts.mindspore_aot_uses:
        return ""
    return "not a MindSpore library, and no AOT function named (use lib.so:FuncName)"


def _not_oneflow(facts: Facts) -> str:
    return "" if facts.oneflow is not None else "not a OneFlow library"


def _not_tensorflow(facts: Facts) -> str:
    if facts.tf_probe or facts.tf_op_library:
        return ""
    interp = facts.interpreter
    if interp is not None and interp.tensorflow_dir:
        # TensorFlow is installed: a library that needs one of its libraries by a name this
        # release lacks (ITEX's `_pywrap_tensorflow_internal.so`) is the family's to decide;
        # the gate cannot read the dependency tree without importing it (survey 18).
        return ""
    if facts.options.package:
        return "TensorFlow is not installed for the target interpreter"
    return "not a TensorFlow library"


# module → the family's applies for the cases the gate is sure of ("": ask the family)
GATES: dict[str, Any] = {
    "importchain": _not_a_package,
    "probe": _not_probed,
    "mindspore": _not_mindspore,
    "oneflow": _not_oneflow,
    "tensorflow": _not_tensorflow,
}


class _Deferred:
    """``CHECK.<attr>`` of a check module, the module imported on the first call."""

    def __init__(self, module: str, attr: str) -> None:
        self.module, self.attr = module, attr

    def __call__(self, facts: Facts) -> Any:
        return getattr(_check_of(self.module), self.attr)(facts)


class _Gated(_Deferred):
    """A family's applies: its gate first, the family itself when the gate is not sure."""

    def __call__(self, facts: Facts) -> Any:
        gate = GATES.get(self.module)
        why = gate(facts) if gate is not None else ""
        return why or super().__call__(facts)


def _sources_key() -> str:
    """Everything the built-in checks' declarations depend on: opdoctor's sources."""
    from opdoctor import cachefile

    parts = [str(MANIFEST_FORMAT), sys.version, *cachefile.source_stamps()]
    return "\n".join(parts)


def content_key() -> str:
    """The built-in checks' declarations as written: a checksum of the check modules,
    ``codes.py`` and ``model.py`` (what the shipped manifest is keyed on; OSError when one
    cannot be read)."""
    import zlib

    here = os.path.dirname(os.path.abspath(__file__))
    names = [os.path.join(here, f"{m}.py") for m in ("__init__", "base", *BUILTIN_MODULES)]
    names += [os.path.join(os.path.dirname(here), f) for f in ("codes.py", "model.py")]
    crc = 0
    for name in names:
        with open(name, "rb") as fh:
            crc = zlib.crc32(fh.read(), crc)
    return f"{MANIFEST_FORMAT}-{crc:08x}"


def _shipped_manifest() -> list[tuple[Any, ...]] | None:
    """The shipped manifest's entries when its key is these sources' (None otherwise)."""
    from opdoctor import cachefile

    stored = cachefile.read(SHIPPED_MANIFEST) if SHIPPED_MANIFEST else None
    if not (isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[1], list)):
        return None
    try:
        return list(stored[1]) if stored[0] == content_key() else None
    except OSError:
        return None


def built_manifest() -> list[tuple[Any, ...]]:
    """The built-in checks' declarations, from their modules (every family imported)."""
    return [_describe(m, _check_of(m)) for m in BUILTIN_MODULES]


def _describe(module: str, check: Check) -> tuple[Any, ...]:
    docs = tuple((d.code, d.title, d.severity.value, d.what, d.why, d.example, d.fix,
                  tuple(d.references)) for d in check.codes)
    return (module, check.name, check.summary, tuple(int(c) for c in check.causes), docs,
            check.needs_elf, check.budget_s, check.section is not None,
            check.applies is not None)


def _manifest() -> list[tuple[Any, ...]]:
    """The built-in checks' declarations: from the cache, else from the modules (stored)."""
    import zlib

    from opdoctor import cachefile

    key = _sources_key()
    path = os.path.join(cachefile.cache_dir(), f"checks-{zlib.crc32(key.encode()):08x}.marshal")
    stored = cachefile.read(path)
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
        return list(stored[1])
    entries = _shipped_manifest()
    if entries is None:
        entries = built_manifest()
    cachefile.write(path, (key, entries))
    return entries


def _lazy_check(entry: tuple[Any, ...]) -> Check:
    from opdoctor.model import Cause, Severity

    module, name, summary, causes, docs, needs_elf, budget_s, has_section, has_applies = entry
    codes = tuple(CodeDoc(code, title, Severity(sev), what=what, why=why, example=example,
                          fix=fix, references=tuple(refs))
                  for code, title, sev, what, why, example, fix, refs in docs)
    return Check(name, summary, tuple(Cause(c) for c in causes), codes, _Deferred(module, "run"),
                 needs_elf=needs_elf,
                 section=_Deferred(module, "section") if has_section else None,
                 applies=_Gated(module, "applies") if has_applies else None, budget_s=budget_s)


@lru_cache(maxsize=1)
def load_lazy_registry() -> Registry | None:
    """The built-in checks as :func:`load_registry` has them (same order, names, codes and
    documentation, same results), each family's module imported when the family runs; None
    when a plugin may be installed or the manifest cannot be read (use :func:`load_registry`)."""
    if _may_declare(ENTRY_POINT_GROUP):
        return None
    try:
        entries = _manifest()
        if tuple(e[0] for e in entries) != BUILTIN_MODULES:
            return None
        checks = tuple(_lazy_check(e) for e in entries)
    except Exception:  # a damaged cache or a broken module: the full registry says what
        return None
    catalog = build_catalog([*(c.codes for c in checks), PIPELINE_CODES])
    return Registry(checks, dict(sorted(catalog.items())), ())
