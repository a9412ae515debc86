"""The result model: causes, severities, findings and the report they make up.

Everything here is plain data. Presentation lives in :mod:`opdoctor.report`, never on these
classes, so every output format sees exactly the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Cause(IntEnum):
    """The five root causes of an operator that is "not registered"."""

    REGISTRATION = 1
    LIBRARY_PATH = 2
    VERSION = 3
    BUILD = 4
    IMPORT_CHAIN = 5

    @property
    def title(self) -> str:
        """Short human name of the cause."""
        return _CAUSE_TITLES[self]

    @property
    def description(self) -> str:
        """One line saying what the cause covers."""
        return _CAUSE_DESCRIPTIONS[self]


_CAUSE_TITLES = {
    Cause.REGISTRATION: "registration",
    Cause.LIBRARY_PATH: "library path",
    Cause.VERSION: "version mismatch",
    Cause.BUILD: "broken build / file",
    Cause.IMPORT_CHAIN: "Python import chain",
}

_CAUSE_DESCRIPTIONS = {
    Cause.REGISTRATION: "the registration code is missing, compiled out, duplicated, has a bad "
    "schema or no kernel for the device that was called",
    Cause.LIBRARY_PATH: "a dependency of the library is not found by the dynamic loader",
    Cause.VERSION: "built against another framework, C++ runtime or CUDA than the one it runs with",
    Cause.BUILD: "the file itself is empty, truncated, not ELF, for another machine or not "
    "loadable as a shared library",
    Cause.IMPORT_CHAIN: "the Python package that should load the library is not found, shadowed "
    "or never imports it",
}


class Severity(str, Enum):
    """How bad a finding is; ``--fail-on`` compares against :attr:`rank`."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is worse: info 0, warning 1, error 2."""
        return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[self]


@dataclass(frozen=True)
class Finding:
    """One thing a check found. The code never lives inside the message text."""

    code: str
    severity: Severity
    cause: Cause
    subject: str
    message: str
    evidence: tuple[str, ...] = ()
    fix: str = ""


class CheckStatus(str, Enum):
    """What happened to one check in one run."""

    RAN = "ran"
    SKIPPED = "skipped"
    FAILED = "failed"  # the check itself crashed: reported, never fatal


@dataclass(frozen=True)
class CheckRun:
    """The record of one check: whether it ran, why not, and how long it took."""

    name: str
    causes: tuple[Cause, ...]
    status: CheckStatus
    seconds: float = 0.0
    reason: str = ""
    detail: str = ""  # a crashed check's traceback (for the crash log and --debug)


@dataclass(frozen=True)
class TargetError:
    """A target that could not be analysed (missing, unreadable, not a valid wheel, analysis
    timeout): reported beside the reports of the targets that could be."""

    target: str
    code: str  # OD401 … (the integrity code that names the problem)
    message: str


@dataclass(frozen=True)
class TargetInfo:
    """What was analysed, as far as it could be identified."""

    path: str
    size: int | None = None
    kind: str = ""  # e.g. "ELF64 x86-64, shared object"


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of one report: the most likely cause, its root findings, and the findings
    each root explains (consequences, folded under it)."""

    cause: int  # 1–5, 0 when nothing is wrong
    confidence: str  # high / medium / low
    summary: str
    root_findings: tuple[Finding, ...]
    consequences: dict[str, tuple[Finding, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """Everything one ``opdoctor check`` run produced for one target, verdict included.

    Built once by :func:`opdoctor.pipeline.run_check` (findings after ``--select``/``--ignore``
    and ``--severity`` overrides, then the diagnosis); renderers and the gate only read it.
    """

    target: TargetInfo
    findings: list[Finding]
    checks: list[CheckRun]
    diagnosis: Diagnosis
    # Structured inventories that checks publish for the report (e.g. "registration").
    sections: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def fails(self, threshold: Severity) -> bool:
        """True when any finding is at or above ``threshold``."""
        return any(f.severity.rank >= threshold.rank for f in self.findings)
