"""The check registry: built-in checks listed explicitly, plugins through entry points.

Built-ins are named here one by one (no "import every file in the folder"), so the order of
checks and the set of codes are reviewable in one place. Third-party checks register a
:class:`~opdoctor.checks.base.Check` under the entry-point group ``opdoctor.checks``; a broken
plugin is reported, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

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
    stable,
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
    stable.CHECK,  # stable-ABI extensions: shim imports vs the installed torch
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


@lru_cache(maxsize=1)
def load_registry(with_plugins: bool = True) -> Registry:
    """Built-in checks plus every plugin that loads and validates."""
    checks = list(BUILTIN_CHECKS)
    catalog = build_catalog([*(c.codes for c in checks), PIPELINE_CODES])
    problems: list[PluginProblem] = []
    if with_plugins:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
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
