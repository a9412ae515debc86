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
    also-write = { sarif = "opdoctor.sarif" }
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class ConfigError(ValueError):
    """The configuration file is invalid (unknown key, wrong type)."""


@dataclass(frozen=True)
class Setting:
    """One setting, spelled once: its config key (= the CLI flag without ``--``), type,
    default, help, how the command line shows it, its bounds, and the CheckOptions field it
    feeds (``""`` when the command itself uses it)."""

    key: str
    kind: str  # "str", "list", "bool", "float", "int", "table"
    default: Any
    help: str
    metavar: str = ""
    short: str = ""  # "-f"
    option: str = ""  # CheckOptions field
    positive: bool = False  # numbers must be > 0
    choices: tuple[str, ...] = ()
    in_config: bool = True  # accepted in [tool.opdoctor]

    @property
    def flag(self) -> str:
        """The long command-line flag."""
        return f"--{self.key}"


FORMATS = ("text", "json", "sarif", "junit", "github")
SEVERITIES = ("error", "warning", "info")

SETTINGS: tuple[Setting, ...] = (
    Setting("format", "str", "text", "Report format.", "FORMAT", "-f", choices=FORMATS),
    Setting("output", "str", None, "Write the report to this file (refused when it is one of "
            "the inputs).", "FILE", "-o"),
    Setting("also-write", "table", {}, "Also write the report in this format to this file, "
            "e.g. sarif=opdoctor.sarif (repeatable): several formats from one run, one probe.",
            "FORMAT=FILE"),
    Setting("fail-on", "str", "error", "Lowest severity that fails the run.", "SEVERITY",
            choices=SEVERITIES),
    Setting("select", "list", [], "Only these codes (prefixes: OD4 selects cause 4).", "CODE"),
    Setting("ignore", "list", [], "Drop these codes (prefixes).", "CODE"),
    Setting("severity", "table", {}, "Override a code's severity: OD410=error (repeatable).",
            "CODE=LEVEL"),
    Setting("expect-op", "list", [], "ns::op[KEY,...] that must be in the library, e.g. "
            "myop::weighted_sum[CPU,CUDA] (repeatable).", "OP", option="expect_ops"),
    Setting("expect-symbol", "list", [], "C entry point the host dlsym()s, e.g. "
            "register_myop_kernels (repeatable).", "SYMBOL", option="expect_symbols"),
    Setting("gpu", "list", [], "Target GPUs, e.g. sm_80,sm_90 or H100,A100 (repeatable; "
            "default: this machine's, from nvidia-smi).", "GPU", option="gpus"),
    Setting("python", "str", None, "Target interpreter that will load the library (default: "
            "this one).", "PYTHON", option="python"),
    Setting("timeout", "float", 60.0, "Seconds the load probe may take.", "SECONDS",
            option="timeout", positive=True),
    Setting("budget-scale", "float", 1.0, "Multiply every analysis stage's CPU-time budget "
            "(a stage that runs out stops with finding OD190; the rest of the report still "
            "comes out).", "FACTOR", option="budget_scale", positive=True),
    Setting("static", "bool", False, "Static checks only: never load or execute the library. "
            "The target interpreter may still be started to read facts (sys.path, torch's "
            "schema parser); the library itself is never loaded.", option="probe"),
    Setting("smoke", "bool", False, "Probe: call each new op on small CPU tensors.",
            option="smoke"),
    Setting("preload", "list", [], "Probe: load this library first, as the job does "
            "(repeatable).", "PATH", option="preload"),
    Setting("probe-memory", "int", 16384, "Probe memory limit (RSS).", "MIB",
            option="probe_memory_mb", positive=True),
    Setting("env", "table", {}, "KEY=VALUE of the job's environment, e.g. "
            "LD_LIBRARY_PATH=/opt/lib (repeatable; KEY= removes it).", "KEY=VALUE",
            option="env"),
    Setting("package", "str", None, "Check the import chain of this package as the target "
            "interpreter resolves it (and the library it loads).", "NAME", option="package"),
    Setting("cwd", "str", None, "The job's working directory (sys.path[0]) for resolving "
            "--package.", "DIR", option="cwd"),
    Setting("against-site-packages", "bool", False, "Find other installed libraries that "
            "define the same TORCH_LIBRARY namespace.", option="against_site_packages"),
    Setting("opcheck", "bool", False, "Probe: decide per op whether a fake (Meta) kernel "
            "exists and run torch.library.opcheck on sample inputs (imports torch._dynamo: "
            "seconds).", option="opcheck"),
    Setting("require", "list", [], "Readiness the library must have: compile (ops without a "
            "fake kernel, broken pystubs … become errors) (repeatable).", "WHAT",
            option="require", choices=("compile",)),
    Setting("baseline", "str", None, "Only findings not in this baseline fail the run.",
            "FILE"),
)

KEYS: dict[str, Setting] = {s.key: s for s in SETTINGS}

# The largest number a setting takes: a year of seconds, a petabyte of MiB — far past any real
# limit, far below what time_t or an rlimit overflows at.
MAX_NUMBER = 1e9

_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str, "list": list, "bool": bool, "float": (int, float), "int": int, "table": dict}


def check_value(spec: Setting, value: Any, where: str) -> None:
    """Reject a value of the wrong type, outside its choices, or a non-positive limit."""
    if not isinstance(value, _TYPES[spec.kind]) or (spec.kind in ("int", "float") and
                                                    isinstance(value, bool)):
        raise ConfigError(f"{where}: {spec.key} must be a {spec.kind}, got {value!r}")
    if spec.choices and isinstance(value, list):
        bad = [v for v in value if v not in spec.choices]
        if bad:
            raise ConfigError(f"{where}: {spec.key} must be one of {' | '.join(spec.choices)}, "
                              f"got {bad[0]!r}")
    elif spec.choices and value not in spec.choices:
        raise ConfigError(f"{where}: {spec.key} must be one of {' | '.join(spec.choices)}, "
                          f"got {value!r}")
    if spec.positive and isinstance(value, (int, float)) and value <= 0:
        raise ConfigError(f"{where}: {spec.key} must be greater than 0, got {value!r}")
    # inf, nan, 1e400: no clock or rlimit takes them (OverflowError deep in a wait otherwise).
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and not 0 <= abs(value) <= MAX_NUMBER:
        raise ConfigError(f"{where}: {spec.key} must be a finite number up to "
                          f"{MAX_NUMBER:.0e}, got {value!r}")


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
    from opdoctor.cli import configcache

    found = configcache.lookup(path)
    if found is None:
        before = configcache.stamp(path)
        table = _parse_table(path)
        configcache.store(path, before, table)
    else:
        (table,) = found
    if table is None:
        return None
    validate(table, path)
    return dict(table)


def _parse_table(path: str) -> dict[str, Any] | None:
    """The opdoctor table of a file as written, not validated (None: a pyproject.toml
    without one)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    pyproject = os.path.basename(path) == "pyproject.toml"
    if pyproject:
        from opdoctor.cli.tomlscan import may_have_opdoctor_table

        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = ""  # parsed below, which says so
        if text and not may_have_opdoctor_table(text):
            # No [tool.opdoctor] table (the word absent, or only a dependency's or a
            # script's name): importing tomllib (typing, datetime: ~5 ms of a first check)
            # and parsing the file is skipped.
            return None
    # Imported here: most runs have no configuration file, and the parser is not free.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found]

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if pyproject or "tool" in data:
        table: dict[str, Any] | None = data.get("tool", {}).get("opdoctor")
    else:
        table = data
    return table


def validate(table: dict[str, Any], where: str) -> None:
    """Reject unknown keys, wrong types and out-of-range values, naming the file and key."""
    for key, value in table.items():
        spec = KEYS.get(key)
        if spec is None or not spec.in_config:
            known = ", ".join(sorted(k for k, s in KEYS.items() if s.in_config))
            raise ConfigError(f"{where}: unknown key {key!r} (known: {known})")
        check_value(spec, value, where)


def merge(cli: dict[str, Any], config: tuple[str, dict[str, Any]] | None
          ) -> tuple[dict[str, Any], dict[str, str]]:
    """Effective values and their sources: command line > config file > default.

    ``cli`` maps keys to the value given on the command line, or None / [] when not given.
    Raises :class:`ConfigError` for an invalid command-line value too (exit 3).
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path, table = config if config else ("", {})
    label = f"{os.path.relpath(path)} [tool.opdoctor]" if path.endswith("pyproject.toml") \
        else os.path.relpath(path) if path else ""
    for key, spec in KEYS.items():
        given = cli.get(key)
        if given is not None and given is not False and given != [] and given != {}:
            check_value(spec, given, spec.flag)
            values[key], sources[key] = given, "command line"
        elif key in table:
            values[key], sources[key] = table[key], label
        else:
            values[key], sources[key] = spec.default, "default"
    from opdoctor.codes import RETIRED

    # A retired code, from the command line or a configuration, stands for its replacement.
    values["select"] = [RETIRED.get(c, c) for c in values["select"]]
    values["ignore"] = [RETIRED.get(c, c) for c in values["ignore"]]
    values["severity"] = {RETIRED.get(c, c): v for c, v in values["severity"].items()}
    return values, sources
