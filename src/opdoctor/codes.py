"""Finding codes and their documentation.

Each code is declared once, next to the check that emits it, as a :class:`CodeDoc` with fixed
sections (What it checks · Why it matters · Example · Fix · References). The catalog is the union
of what the registered checks declare; ``opdoctor explain OD401`` renders one entry, and a test
fails when a section is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from opdoctor.model import Cause, Finding, Severity

CODE_RE = re.compile(r"^OD([1-5])\d\d$")

SECTIONS = ("what", "why", "example", "fix", "references")
SECTION_TITLES = {
    "what": "What it checks",
    "why": "Why it matters",
    "example": "Example",
    "fix": "Fix",
    "references": "References",
}


# ------------------------------------------------------------------ relations between codes
# A finding of the key code explains findings of these codes when both are present (the one
# table of these relations; verdict/diagnosis.py folds the consequences under their root).
# Probe codes listed here confirm the static finding with the real load's evidence; a failed
# load (OD511) and a failed import (OD420) are consequences of whatever stopped the load.
EXPLAINS: dict[str, tuple[str, ...]] = {
    "OD201": ("OD301", "OD304", "OD101", "OD106", "OD220", "OD321", "OD511", "OD420",
              "OD430", "OD320"),
    "OD203": ("OD301", "OD304", "OD101", "OD106", "OD220", "OD321"),
    # Another torch's libraries loaded by `import torch` (LD_LIBRARY_PATH): torch's import
    # fails, an extension built for this torch meets that release's symbols.
    "OD205": ("OD301", "OD304", "OD303", "OD306", "OD321", "OD320", "OD432", "OD511", "OD420",
              "OD512"),
    "OD302": ("OD301", "OD322", "OD321", "OD511", "OD420"),
    # Built for another torch release: the pybind11 that release bundled (its internals
    # version) is part of what differs — xformers 0.0.26 and torchvision 0.23 (survey 9).
    "OD303": ("OD301", "OD321", "OD511", "OD420", "OD306"),
    "OD304": ("OD301", "OD321", "OD511", "OD420", "OD306"),
    "OD301": ("OD321", "OD511", "OD420"),
    # Linked without torch's libraries: the real load's undefined torch symbol is the same.
    "OD432": ("OD301", "OD321", "OD511", "OD420"),
    "OD101": ("OD121", "OD106"),
    "OD102": ("OD123",),
    "OD105": ("OD106",),
    "OD106": ("OD122",),
    "OD313": ("OD310", "OD311"),
    # (and, for a requirement shadowed by a tree without its build — a torch.py —, the
    # framework libraries no `import torch` put in the process, and "torch fails to import")
    "OD502": ("OD510", "OD511", "OD220", "OD201", "OD301", "OD320"),
    "OD503": ("OD511", "OD301", "OD508"),
    "OD418": ("OD511", "OD301"),
    # A dependency cut short, another machine's or no ELF file (integrity's
    # _broken_dependencies): its unreadable versions, its "not found", the crash loading it.
    "OD406": ("OD508", "OD511", "OD420", "OD302", "OD301", "OD124", "OD220", "OD201"),
    "OD408": ("OD508", "OD511", "OD201", "OD301", "OD220"),
    "OD407": ("OD508", "OD511", "OD201", "OD301", "OD220"),
    "OD405": ("OD508", "OD511", "OD201", "OD301", "OD220"),
    "OD416": ("OD511",),
    # A library (or a dependency) on a noexec file system: every load of it fails to map it.
    "OD419": ("OD420", "OD511", "OD220", "OD124"),
    "OD324": ("OD511", "OD512", "OD505"),
    "OD323": ("OD511", "OD512", "OD505"),
    "OD325": ("OD511",),
    "OD327": ("OD511", "OD512", "OD505", "OD201", "OD220"),
    "OD328": ("OD511", "OD512", "OD420", "OD327"),
    "OD506": ("OD505", "OD511"),
    "OD508": ("OD510", "OD511", "OD220", "OD201", "OD301", "OD124"),
    "OD514": ("OD511",),
    "OD510": ("OD511", "OD220"),
    # The real loader's miss that stopped the package's import (at another library).
    "OD220": ("OD511",),
    # TensorFlow (checks/tensorflow.py): the static cause explains the generic symbol findings.
    "OD340": ("OD301", "OD321", "OD511"),
    "OD341": ("OD301", "OD321", "OD342", "OD511"),
    "OD342": ("OD301", "OD321", "OD511", "OD201", "OD220"),
    "OD150": ("OD108",),
    "OD152": ("OD101", "OD121"),
    "OD530": ("OD505", "OD511"),
    # MindSpore (checks/mindspore.py): a lazily bound undefined function is an AOT op's own
    # failure mode (RTLD_LAZY); the old C++ ABI explains the unbound std::__cxx11 symbols.
    "OD164": ("OD301",),
    "OD350": ("OD301", "OD321", "OD511"),
    "OD351": ("OD301", "OD321", "OD511"),
    "OD352": ("OD301",),
    # Import chain and registration (verdict/diagnosis.py reads this table): the package never
    # loads the extension, so "registered no operator" is the consequence.
    "OD505": ("OD121", "OD101", "OD106", "OD122", "OD126"),
    # A misspelt IMPL namespace: the bare def, the orphan impls, the dangling kernels.
    "OD115": ("OD103", "OD104", "OD126", "OD122", "OD127"),
    # A named library with no registration at all.
    "OD116": ("OD121", "OD106"),
    # Own code left out of the link: the real load's undefined symbol confirms it.
    "OD430": ("OD321", "OD301", "OD420", "OD511"),
    # A CUDA/ROCm build of the extension beside another torch build: every missing framework
    # or CUDA library, unbound symbol, failed load and import is its consequence.
    "OD307": ("OD315", "OD201", "OD202", "OD203", "OD220", "OD301", "OD304", "OD321", "OD420",
              "OD505", "OD509", "OD510", "OD511", "OD512", "OD101", "OD121", "OD313", "OD312",
              "OD306"),
}
# Built for another CUDA major than torch's (checks/cuda.py): that major's runtime libraries
# are not installed beside a torch of another one (verdict/diagnosis.py: those libraries only)
# — torchaudio 2.9.0 (CUDA 12) beside torch 2.14.1+cu130 led with "install CUDA 12"
# (survey 23's V1).
EXPLAINS["OD312"] = ("OD201", "OD301", "OD321", "OD220", "OD511", "OD420")
# Stable-ABI extensions (checks/stable.py): the missing shim function is why the load fails.
EXPLAINS["OD316"] = ("OD301", "OD321", "OD511", "OD420", "OD101", "OD121")
EXPLAINS["OD317"] = ("OD301", "OD321", "OD511", "OD420", "OD101", "OD121")
# A CUDA build beside a CPU torch (OD307) also explains its CUDA-only shim imports.
EXPLAINS["OD307"] = (*EXPLAINS["OD307"], "OD317")
# The real load missed a library only another build of torch ships (OD315): the same story
# told by the probe, with the same consequences.
EXPLAINS["OD315"] = tuple(c for c in EXPLAINS["OD307"] if c != "OD315")

# Findings that report *that* something failed rather than why: they become the root only when
# nothing else explains the failure.
# Roots of one cause in the order a real load meets them (the first leads the verdict): a
# library of another torch build that is not there stops the loader before any symbol is
# bound; then symbol versions; then symbols of another release, which no ABI flag brings back;
# then the C++ ABI. Codes not listed follow, in the order the checks reported them.
ROOT_ORDER = ("OD307", "OD315", "OD317", "OD316", "OD302", "OD322", "OD304", "OD342", "OD341",
              "OD303", "OD340")

SYMPTOMS = frozenset({"OD511", "OD512", "OD129", "OD130", "OD420"})

# Causes read from the package's Python that its import reaches only after loading its
# compiled core: beside a failure of the library itself they are no root (torchvision 0.28's
# CUDA _C fails before its datasets import PIL). With the probe they are warnings instead.
AFTER_THE_LIBRARY = frozenset({"OD514"})

# Findings about opdoctor itself (its probe script failed): reported, never a verdict.
NOT_A_VERDICT = frozenset({"OD129"})

# Findings about the run, not the library: opdoctor's probe failed (OD129), stopped before it
# touched the library (OD132), or a stage ran out of its time budget (OD190, the pipeline's
# own code). Reported as notes, never a verdict, and not a cause whatever the code's first
# digit says (verdict/diagnosis.py and the code's documentation read this set).
RUN_NOTES = NOT_A_VERDICT | {"OD132", "OD190"}
RUN_NOTE_LABEL = "not a cause (run note)"

# Retired codes and the code that replaced each (a code number is never reused):
# `opdoctor explain` of a retired code names its replacement.
RETIRED: dict[str, str] = {
    # The PyInit_ mismatch moved from the import chain (5) to broken build / file (4).
    "OD504": "OD416",
}


class CodeError(ValueError):
    """A code declaration is malformed (bad number, wrong cause, missing section)."""


@dataclass(frozen=True)
class CodeDoc:
    """A stable finding code with its documentation."""

    code: str
    title: str
    severity: Severity
    what: str
    why: str
    example: str
    fix: str
    references: tuple[str, ...]

    @property
    def cause(self) -> Cause:
        """The cause is the code's first digit: OD3xx is a version mismatch."""
        return Cause(int(self.code[2]))

    @property
    def run_note(self) -> bool:
        """True for a code about the run rather than the library (:data:`RUN_NOTES`)."""
        return self.code in RUN_NOTES

    @property
    def cause_label(self) -> str:
        """How the code's documentation names its cause: "cause 3 (version mismatch)", or
        "not a cause (run note)" for a run note (its first digit only places it)."""
        if self.run_note:
            return RUN_NOTE_LABEL
        return f"cause {int(self.cause)} ({self.cause.title})"

    def validate(self) -> None:
        """Raise :class:`CodeError` unless the code is well-formed and fully documented."""
        if not CODE_RE.match(self.code):
            raise CodeError(f"{self.code!r} is not of the form OD[1-5]NN")
        if not self.title.strip():
            raise CodeError(f"{self.code}: empty title")
        for name in SECTIONS:
            value = getattr(self, name)
            if isinstance(value, tuple):
                if not value or not all(str(v).strip() for v in value):
                    raise CodeError(f"{self.code}: section {SECTION_TITLES[name]!r} is empty")
            elif not str(value).strip():
                raise CodeError(f"{self.code}: section {SECTION_TITLES[name]!r} is empty")

    def finding(
        self,
        subject: str,
        message: str,
        evidence: Sequence[str] = (),
        fix: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """Make a finding of this code; cause and default severity come from the declaration."""
        return Finding(
            code=self.code,
            severity=severity or self.severity,
            cause=self.cause,
            subject=subject,
            message=message,
            evidence=tuple(evidence),
            fix=self.fix if fix is None else fix,
        )


def build_catalog(groups: Iterable[Iterable[CodeDoc]]) -> dict[str, CodeDoc]:
    """Validate every declaration and index them by code; a duplicate code is an error."""
    catalog: dict[str, CodeDoc] = {}
    for group in groups:
        for doc in group:
            doc.validate()
            if doc.code in catalog:
                raise CodeError(f"{doc.code} is declared twice")
            catalog[doc.code] = doc
    return dict(sorted(catalog.items()))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(docs: Sequence[CodeDoc]) -> str:
    """The README's table of codes (generated: ``opdoctor codes -f markdown --check NAME``)."""
    rows = ["| code | severity | finding | example |", "| --- | --- | --- | --- |"]
    rows += [f"| {d.code} | {d.severity.value} | {_cell(d.title)} | {_cell(d.example)} |"
             for d in docs]
    return "\n".join(rows) + "\n"
