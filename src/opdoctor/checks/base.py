"""The check interface shared by built-in checks and third-party plugins."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.model import Cause, Finding


@dataclass(frozen=True)
class Check:
    """A family of related checks: reads facts, yields findings of the codes it declares.

    ``needs_elf``: skip the check (with the reason) when the file is not a loadable ELF shared
    object for this host; only the integrity check itself looks at broken files.
    ``section``: inventory published under ``report.sections[check.name]`` when the check ran.
    """

    name: str
    summary: str
    causes: tuple[Cause, ...]
    codes: tuple[CodeDoc, ...]
    run: Callable[[Facts], Iterable[Finding]]
    needs_elf: bool = True
    # Optional inventory for the report ("dependencies", "registration" …): name → data.
    section: Callable[[Facts], dict[str, Any]] | None = None
    # Optional: why the check does not apply to this target ("" when it does).
    applies: Callable[[Facts], str] | None = None

    def code(self, code: str) -> CodeDoc:
        """The declaration of one of this check's codes (KeyError when not declared)."""
        for doc in self.codes:
            if doc.code == code:
                return doc
        raise KeyError(f"{self.name} does not declare {code}")
