"""The NumPy C API a compiled module was built against, against the installed NumPy (cause 3).

NumPy 2 changed its ABI: a module compiled with NumPy 1.x headers refuses to initialise under
NumPy 2 ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x …",
"numpy.core.multiarray failed to import"). The import then fails with a message about NumPy,
far from the package that was built for the other release — or, where the module initialises
NumPy lazily (torch), its NumPy calls fail later. Read statically
(:mod:`opdoctor.facts.numpyabi`): the module's ``_import_array()`` and ``numpy/version.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.numpyabi import release
from opdoctor.model import Cause, Finding, Severity

OD328 = CodeDoc(
    "OD328", "built against another NumPy's C API", Severity.ERROR,
    what="A compiled module that calls NumPy's C API was built with headers the installed "
    "NumPy accepts: under NumPy 2, NumPy 2's headers (their modules also run on the NumPy 1.x "
    "releases they target).",
    why="NumPy checks the ABI and C-API version compiled into a module when the module "
    "initialises NumPy: a NumPy 1.x build under NumPy 2 fails ('A module that was compiled "
    "using NumPy 1.x cannot be run in NumPy 2.x', 'numpy.core.multiarray failed to import', "
    "'_ARRAY_API not found'). The message speaks of NumPy while the fault is the pairing "
    "with the package.",
    example="numexpr 2.8.7's interpreter.so imports numpy.core._multiarray_umath (NumPy 1.x "
    "headers); numpy 2.4.6 is installed",
    fix="Install the package's release built for the installed NumPy (NumPy 2 builds run on "
    "both majors), or the NumPy it was built for (pip install 'numpy<2').",
    references=("https://numpy.org/devdocs/dev/depending_on_numpy.html",
                "https://numpy.org/devdocs/user/troubleshooting-importerror.html"),
)
CODES = (OD328,)


def _outcome(facts: Facts) -> tuple[Severity, str]:
    """How hard the refusal hits, and the words for it. NumPy refuses the module when the
    module initialises NumPy: a Python extension module (Cython's, numexpr's) does so in its
    ``PyInit_`` — its import fails; a library does so when first used (torch's
    libtorch_python, MindSpore's libmindspore_common warn "Numpy init failed" and run on
    without NumPy). The probe, when it ran, says which happened."""
    from opdoctor.facts.probe.outcome import ProbeState

    res = facts.probe_result() if facts.options.probe else None
    if res is not None:
        if res.state is ProbeState.LOADED:
            return Severity.WARNING, " (the load worked: its NumPy calls are what fail)"
        return Severity.ERROR, ""
    if facts.registration.pyinit:
        return Severity.ERROR, " (its import fails)"
    return Severity.WARNING, (" (a library that initialises NumPy on first use: it warns "
                              "and runs on, and its NumPy calls fail)")


def run(facts: Facts) -> Iterator[Finding]:
    """OD328 when the module's NumPy headers and the installed NumPy do not pair."""
    numpy = facts.installed_numpy  # a few stat calls: first, before .rodata is searched
    build = facts.numpy_build if numpy is not None else None
    # Only the unambiguous pairing: a NumPy 1.x build can never initialise under NumPy 2. A
    # NumPy 2 build whose C-API target is above an older installed NumPy is left out:
    # packages ship such modules for NumPy 2 and import them only there (h5py's _npystrings).
    if build is None or numpy is None or build.major != 1 or release(numpy[0])[0] < 2:
        return
    from opdoctor.facts.pkgdir import distribution

    version, where = numpy
    owner = facts.installed_by
    dist = " ".join(distribution(owner[0])).strip() if owner else ""
    name = dist.split(" ")[0] if dist else ""
    severity, later = _outcome(facts)
    yield OD328.finding(
        facts.path, f"built against NumPy 1.x's C API; numpy {version} is installed, which "
        f"refuses it{later}",
        (f"{facts.path}: {build.evidence}", f"import numpy → numpy {version} ({where})"),
        fix=(f"install a release of {name} built for NumPy 2 (pip install --upgrade {name}; "
             f"NumPy 2 builds also run on NumPy 1.x), or keep NumPy 1 for {dist}: pip install "
             "'numpy<2'") if name else
        "rebuild it with NumPy 2 installed (its build then also runs on NumPy 1.x), or install "
        "NumPy 1: pip install 'numpy<2'", severity=severity)


CHECK = Check(
    name="numpy-abi",
    summary="a module's NumPy C API (the headers it was built with) pairs with the installed "
    "NumPy",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
)
