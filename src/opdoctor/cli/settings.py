"""Configuration: ``[tool.opdoctor]`` in ``pyproject.toml`` or an ``opdoctor.toml``, merged
with the command line (which wins) and the built-in defaults — and where each value came from.

The first ``opdoctor.toml`` or ``pyproject.toml`` with a ``[tool.opdoctor]`` table found in the
current directory or one of its parents is used (``--config FILE`` names one explicitly).
Keys use dashes, as on the command line::

    [tool.opdoctor]
    expect-op = ["myop::weighted_sum[CPU,CUDA]"]
    gpu = ["sm_80", "sm_90"]
    ignore = ["OD204"]
    fail-on = "warning"
    python = ".venv/bin/python"
    timeout = 120
    severity = { OD410 = "error" }
    env = { LD_LIBRARY_PATH = "/opt/deps/lib" }
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found]


class ConfigError(ValueError):
    """The configuration file is invalid (unknown key, wrong type)."""


@dataclass(frozen=True)
class Key:
    """One setting: its type, default and meaning."""

    kind: str  # "str", "list", "bool", "float", "int", "table"
    default: Any
    help: str


KEYS: dict[str, Key] = {
    "format": Key("str", "text", "text | json | sarif | junit | github"),
    "output": Key("str", None, "write the report to this file"),
    "fail-on": Key("str", "error", "lowest severity that fails the gate"),
    "select": Key("list", [], "only these code prefixes"),
    "ignore": Key("list", [], "drop these code prefixes"),
    "severity": Key("table", {}, "per-code severity overrides, e.g. {OD410 = \"error\"}"),
    "expect-op": Key("list", [], "ns::op[KEY,...] that must be in the library"),
    "expect-symbol": Key("list", [], "C entry points that must be exported"),
    "gpu": Key("list", [], "target GPUs (sm_XY, X.Y, product names)"),
    "python": Key("str", None, "target interpreter"),
    "timeout": Key("float", 60.0, "seconds for the load probe"),
    "static": Key("bool", False, "static checks only (no probe)"),
    "smoke": Key("bool", False, "probe: call new ops on small CPU tensors"),
    "preload": Key("list", [], "probe: libraries to load first"),
    "probe-memory": Key("int", 16384, "probe memory limit in MiB"),
    "env": Key("table", {}, "the job's environment variables"),
    "package": Key("str", None, "check this package's import chain"),
    "cwd": Key("str", None, "the job's working directory"),
    "against-site-packages": Key("bool", False, "find other libraries with the same namespace"),
    "baseline": Key("str", None, "baseline file: only findings not in it fail the gate"),
}

_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str, "list": list, "bool": bool, "float": (int, float), "int": int, "table": dict}


def find_config(start: str) -> tuple[str, dict[str, Any]] | None:
    """(path, table) of the nearest configuration, or None."""
    d = os.path.abspath(start)
    while True:
        for name in ("opdoctor.toml", "pyproject.toml"):
            path = os.path.join(d, name)
            if os.path.isfile(path):
                table = read_config(path)
                if table is not None:
                    return path, table
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def read_config(path: str) -> dict[str, Any] | None:
    """The opdoctor table of a file (None when a pyproject.toml has none)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if os.path.basename(path) == "pyproject.toml" or "tool" in data:
        table = data.get("tool", {}).get("opdoctor")
        if table is None:
            return None
    else:
        table = data
    validate(table, path)
    return dict(table)


def validate(table: dict[str, Any], where: str) -> None:
    """Reject unknown keys and wrong types, naming the file and key."""
    for key, value in table.items():
        spec = KEYS.get(key)
        if spec is None:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(KEYS))})")
        if not isinstance(value, _TYPES[spec.kind]) or (spec.kind == "int" and
                                                        isinstance(value, bool)):
            raise ConfigError(f"{where}: {key} must be a {spec.kind}, got {value!r}")


def merge(cli: dict[str, Any], config: tuple[str, dict[str, Any]] | None
          ) -> tuple[dict[str, Any], dict[str, str]]:
    """Effective values and their sources: command line > config file > default.

    ``cli`` maps keys to the value given on the command line, or None / [] when not given.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path, table = config if config else ("", {})
    label = f"{os.path.relpath(path)} [tool.opdoctor]" if path.endswith("pyproject.toml") \
        else os.path.relpath(path) if path else ""
    for key, spec in KEYS.items():
        given = cli.get(key)
        if given is not None and given is not False and given != [] and given != {}:
            values[key], sources[key] = given, "command line"
        elif key in table:
            values[key], sources[key] = table[key], label
        else:
            values[key], sources[key] = spec.default, "default"
    return values, sources
