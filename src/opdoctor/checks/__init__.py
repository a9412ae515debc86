"""The check registry: built-in checks listed explicitly, plugins through entry points.

Built-ins are named here one by one (no "import every file in the folder"), so the order of
checks and the set of codes are reviewable in one place. Third-party checks register a
:class:`~opdoctor.checks.base.Check` under the entry-point group ``opdoctor.checks``; a broken
plugin is reported, never fatal.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from opdoctor.checks import (
    abi,
    compile,
    cuda,
    deps,
    importchain,
    integrity,
    mindspore,
    oneflow,
    probe,
    registration,
    symbols,
    tensorflow,
    variant,
)
from opdoctor.checks.base import PIPELINE_CODES, Check
from opdoctor.codes import CodeDoc, CodeError, build_catalog

ENTRY_POINT_GROUP = "opdoctor.checks"

BUILTIN_CHECKS: tuple[Check, ...] = (
    integrity.CHECK,
    deps.CHECK,
    symbols.CHECK,
    abi.CHECK,
    cuda.CHECK,
    variant.CHECK,
    registration.CHECK,
    importchain.CHECK,
    mindspore.CHECK,
    oneflow.CHECK,
    tensorflow.CHECK,  # waits for the probe too, when it loads the library the TF way
    probe.CHECK,  # last: it waits for the load probe started before the static checks
    compile.CHECK,  # after the probe: with --opcheck it reads the probe's opcheck stage
)


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
    checks = list(BUILTIN_CHECKS)
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
