"""Turning parsed command-line values into settings, without the CLI framework.

Shared by the typer app (:mod:`opdoctor.cli.app`) and the fast ``check`` path
(:mod:`opdoctor.cli.fastcheck`), so both compute the same values the same way. Problems raise
:class:`ArgError`; the typer app turns it into click's usage error (its message and exit code),
the fast path hands the whole command line to the typer app instead.
"""

from __future__ import annotations

import os
import re

from opdoctor.cli.settings import SETTINGS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")
NOT_PLAIN = object()


class ArgError(ValueError):
    """A command-line value or the configuration file is invalid (a usage error)."""


def plain_value(annotation: Any, value: Any) -> Any:
    """``value`` coerced to ``annotation`` when it is a plain value whose coercion is obvious
    (the same as pydantic's lax mode); :data:`NOT_PLAIN` for everything else."""
    kind = type(value)
    if annotation is str:
        return value if kind is str else NOT_PLAIN
    if annotation is bool:
        return value if kind is bool else NOT_PLAIN
    if annotation is int:
        if kind is int:
            return value
        return int(value) if kind is str and _INT.fullmatch(value) else NOT_PLAIN
    if annotation is float:
        if kind is float:
            return value
        if kind is int:
            return float(value)
        return float(value) if kind is str and _FLOAT.fullmatch(value) else NOT_PLAIN
    if annotation == list[str] and kind in (list, tuple):
        return list(value) if all(type(v) is str for v in value) else NOT_PLAIN
    return NOT_PLAIN


def pairs(items: list[str] | None, flag: str, allow_empty: bool = False) -> dict[str, str]:
    """KEY=VALUE arguments as a dict (``KEY=`` gives an empty value when allowed)."""
    out: dict[str, str] = {}
    for pair in items or []:
        key, sep, value = pair.partition("=")
        if not sep or not key or (not value and not allow_empty):
            raise ArgError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def given(kw: dict[str, Any]) -> dict[str, Any]:
    """The settings given on the command line, keyed like the table (tables parsed); ``kw``
    holds the command's parameters by their Python names (``fail_on``)."""
    out: dict[str, Any] = {}
    for spec in SETTINGS:
        value = kw.get(spec.key.replace("-", "_"))
        if spec.key == "gpu" and value:
            value = [g for item in value for g in item.split(",") if g.strip()]
        elif spec.kind == "table" and value:
            value = pairs(value, spec.flag, allow_empty=spec.key == "env")
        out[spec.key] = value
    return out


def effective(given_values: dict[str, Any], config: str | None
              ) -> tuple[dict[str, Any], dict[str, str]]:
    """Effective values and their sources: command line > configuration file > default."""
    from opdoctor.cli.settings import ConfigError, find_config, merge, read_config

    try:
        if config:
            table = read_config(config)
            if table is None:
                raise ConfigError(f"{config}: no [tool.opdoctor] table")
            found: tuple[str, dict[str, Any]] | None = (config, table)
        else:
            found = find_config(os.getcwd())
        return merge(given_values, found)
    except ConfigError as exc:
        raise ArgError(str(exc)) from None
