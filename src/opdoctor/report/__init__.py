"""Report formats: one module per format, one ``render`` signature, chosen by :class:`Format`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from opdoctor.codes import CodeDoc
from opdoctor.model import Report, Severity, TargetError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import TextIO


class Format(str, Enum):
    """Output formats of ``opdoctor check``."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    JUNIT = "junit"
    GITHUB = "github"


@dataclass(frozen=True)
class RenderContext:
    """What a renderer needs besides the report itself."""

    catalog: dict[str, CodeDoc]
    fail_on: Severity
    exit_code: int
    color: bool = False
    verbose: bool = False
    width: int | None = None
    # Fingerprints accepted by --baseline: reported, marked, and not counted for the gate.
    baseline: frozenset[str] = frozenset()
    # Targets that could not be analysed, reported beside the others (exit 2 at the end).
    errors: tuple[TargetError, ...] = ()


if TYPE_CHECKING:
    Renderer = Callable[[list[Report], RenderContext, TextIO], None]


def renderer(fmt: Format) -> Renderer:
    """The render function for ``fmt``."""
    # Imported lazily: rich is only needed for the text format.
    if fmt is Format.JSON:
        from opdoctor.report import json_format

        return json_format.render
    if fmt is Format.SARIF:
        from opdoctor.report import sarif

        return sarif.render
    if fmt is Format.JUNIT:
        from opdoctor.report import junit

        return junit.render
    if fmt is Format.GITHUB:
        from opdoctor.report import github

        return github.render
    from opdoctor.report import text

    return text.render
