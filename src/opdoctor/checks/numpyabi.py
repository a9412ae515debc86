"""The NumPy C API a compiled module was built against, against the installed NumPy (cause 3).

NumPy 2 changed its ABI: a module compiled with NumPy 1.x headers refuses to initialise under
NumPy 2 ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x …",
"numpy.core.multiarray failed to import"). The import then fails with a message about NumPy,
far from the package that was built for the other release — or, where the module initialises
NumPy lazily (torch), its NumPy calls fail later. Read statically
(:mod:`opdoctor.facts.numpyabi`): the module's ``_import_array()`` and ``numpy/version.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from opdoctor.checks.base import Check, install_command, upgrade_command
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.numpyabi import release
from opdoctor.model import Cause, Finding, Severity

OD328 = CodeDoc(
    "OD328", "built against another NumPy's C API", Severity.ERROR,
    what="A compiled module that calls NumPy's C API was built with headers the installed "
    "NumPy accepts: under NumPy 2, NumPy 2's headers (their modules also run on the NumPy 1.x "
    "releases they target); under NumPy 1.x, headers whose C-API target is not newer than "
    "it.",
    why="NumPy checks the ABI and C-API version compiled into a module when the module "
    "initialises NumPy: a NumPy 1.x build under NumPy 2 fails ('A module that was compiled "
    "using NumPy 1.x cannot be run in NumPy 2.x', 'numpy.core.multiarray failed to import', "
    "'_ARRAY_API not found'); a module built for NumPy 2.0's C API under NumPy 1.26 fails "
    "too ('module was compiled against NumPy C-API version 0x12 (NumPy 2.0) but the running "
    "NumPy has C-API version 0x11'). The message speaks of NumPy while the fault is the "
    "pairing with the package.",
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
    from opdoctor.facts.numpyabi import NUMPY_REFUSAL
    from opdoctor.facts.probe.outcome import ProbeState

    res = facts.probe_result() if facts.options.probe else None
    if res is not None:
        if res.state is ProbeState.LOADED:
            return Severity.WARNING, " (the load worked: its NumPy calls are what fail)"
        err = res.load_error
        # (the refusal may be an earlier exception of the chain: ml_dtypes' RuntimeError,
        # under "SystemError: … returned a result with an exception set")
        if err is not None and not NUMPY_REFUSAL.search(
                f"{res.load_message or ''}\n{err.traceback}"):
            # the import failed first on something else (survey 20's re-run: MindSpore under
            # an old protobuf): that failure leads; this one comes after it
            return Severity.WARNING, " (the import fails earlier, on another error)"
        return Severity.ERROR, ""
    if facts.registration.pyinit:
        return Severity.ERROR, " (its import fails)"
    return Severity.WARNING, (" (a library that initialises NumPy on first use: it warns "
                              "and runs on, and its NumPy calls fail)")


def run(facts: Facts) -> Iterator[Finding]:
    """OD328 when the module's NumPy headers and the installed NumPy do not pair; in package
    mode, also when another compiled module of the package does, or the import fails in
    NumPy's own check (a module of a requirement: scikit-learn's scipy)."""
    numpy = facts.installed_numpy  # a few stat calls: first, before .rodata is searched
    if numpy is None:
        return
    if release(numpy[0])[0] < 2:
        yield from _under_numpy1(facts, numpy)
        return
    # A NumPy 1.x build can never initialise under NumPy 2.
    build = facts.numpy_build
    if build is not None and build.major == 1:
        yield _this_library(facts, numpy, build.evidence)
    elif facts.options.package and facts.chain is not None:
        yield from _the_package(facts, numpy)


def _under_numpy1(facts: Facts, numpy: tuple[str, str]) -> Iterator[Finding]:
    """Under NumPy 1.x: modules built with NumPy 2's headers for a C API above the installed
    one (NPY_TARGET_VERSION 2.0: ml_dtypes 0.7, pyarrow 26). Their ``_import_array()``
    refuses the older NumPy ("module was compiled against NumPy C-API version 0x12 (NumPy
    2.0) but the running NumPy has C-API version 0x11"). A module the package's import does
    not import unconditionally is a note: packages ship such modules for NumPy 2 and import
    them only there (h5py's _npystrings)."""
    from opdoctor.facts.numpyabi import newer_c_api_modules
    from opdoctor.facts.pychain import extensions_at_import

    have = release(numpy[0])
    chain = facts.chain if facts.chain is not None and facts.chain.package_dir else None
    at_import = {os.path.realpath(f) for f in extensions_at_import(chain)} if chain else set()
    build = facts.numpy_build
    if build is not None and build.target is not None and have < build.target:
        yield _too_new(facts, numpy, build.evidence, build.target, chain, at_import)
    elif facts.options.package and chain is not None:
        mine = os.path.realpath(facts.path)
        newer = [(f, t) for f, t in newer_c_api_modules(tuple(sorted(at_import)), have)
                 if f != mine]
        if newer:
            yield _package_too_new(facts, numpy, newer)


def _api(target: tuple[int, int]) -> str:
    return f"NumPy {target[0]}.{target[1]}"


def _numpy_fix(facts: Facts, numpy: tuple[str, str], target: tuple[int, int]) -> str:
    """Upgrade NumPy (where the copy the import runs is), or a release of the package for it."""
    name = _owner(facts)[0]
    want = f"'numpy>={target[0]}.{target[1]}'"
    other = (f", or a release of {name} that supports NumPy {numpy[0]} (one built for NumPy "
             "1.x)") if name else ""
    return f"{install_command(facts, want, numpy[1])} (the C API it was built for){other}"


def _too_new(facts: Facts, numpy: tuple[str, str], evidence: str, target: tuple[int, int],
             chain: object, at_import: set[str]) -> Finding:
    version = numpy[0]
    name = getattr(chain, "name", "")
    imported = os.path.realpath(facts.path) in at_import
    if chain is not None and not imported and not facts.options.probe:
        severity, later = Severity.INFO, (f" (`import {name}` does not import it: a module "
                                          "it may import only under NumPy 2, or on first use)")
    else:
        severity, later = _outcome(facts)
    return _library_finding(facts, numpy, f"built for {_api(target)}'s C API and later; numpy "
                            f"{version} is installed, which is older: NumPy refuses it{later}",
                            evidence, _numpy_fix(facts, numpy, target), severity)


def _library_finding(facts: Facts, numpy: tuple[str, str], message: str, evidence: str,
                     fix: str, severity: Severity) -> Finding:
    """OD328 on the target library: what it was built for, and the NumPy the import runs."""
    version, where = numpy
    return OD328.finding(facts.path, message, (f"{facts.path}: {evidence}",
                                               f"import numpy → numpy {version} ({where})"),
                         fix=fix, severity=severity)


def _package_too_new(facts: Facts, numpy: tuple[str, str],
                     newer: list[tuple[str, tuple[int, int]]]) -> Finding:
    chain = facts.chain
    assert chain is not None
    version, where = numpy
    top = os.path.dirname(chain.package_dir)
    shown = ", ".join(f"{os.path.relpath(f, top)} ({_api(t)})" for f, t in newer[:3])
    more = f" and {len(newer) - 3} more" if len(newer) > 3 else ""
    res = facts.probe_result() if facts.options.probe else None
    loaded = res is not None and res.load_error is None
    return OD328.finding(
        chain.name, f"`import {chain.name}` imports {len(newer)} compiled module(s) built for a "
        f"newer NumPy's C API ({shown}{more}); numpy {version} is installed, which they refuse"
        + (" (the import worked: their NumPy calls are what fail)" if loaded else ""),
        (*[f"{f}: NumPy 2 headers, for {_api(t)}'s C API and later" for f, t in newer[:6]],
         f"import numpy → numpy {version} ({where})"),
        fix=_numpy_fix(facts, numpy, max(t for _f, t in newer)),
        severity=Severity.WARNING if loaded else Severity.ERROR)


def _fix(name: str, dist: str, upgrade: str = "") -> str:
    """Install the NumPy 2 build of the distribution, or NumPy 1 for it. ``upgrade``: the
    pip command for the copy the import runs (``upgrade_command``: a --target copy on
    PYTHONPATH is upgraded there — survey 20's h5py 3.10)."""
    if name:
        upgrade = upgrade or f"pip install --upgrade {name}"
        return (f"install a release of {name} built for NumPy 2 ({upgrade}; "
                f"NumPy 2 builds also run on NumPy 1.x), or keep NumPy 1 for {dist}: pip "
                "install 'numpy<2'")
    return ("rebuild it with NumPy 2 installed (its build then also runs on NumPy 1.x), or "
            "install NumPy 1: pip install 'numpy<2'")


def _owner(facts: Facts) -> tuple[str, str, str]:
    """(distribution name, "name version", the pip command that upgrades that copy) of the
    distribution that installed the target."""
    from opdoctor.facts.pkgdir import distribution

    owner = facts.installed_by
    if owner is None and facts.chain is not None and facts.chain.dist:
        owner = (facts.chain.dist, "", "")
    dist = " ".join(distribution(owner[0])).strip() if owner else ""
    name = dist.split(" ")[0] if dist else ""
    return name, dist, upgrade_command(facts, name, owner[0]) if owner and name else ""


def _this_library(facts: Facts, numpy: tuple[str, str], evidence: str) -> Finding:
    name, dist, upgrade = _owner(facts)
    severity, later = _outcome(facts)
    return _library_finding(facts, numpy, f"built against NumPy 1.x's C API; numpy {numpy[0]} "
                            f"is installed, which refuses it{later}", evidence,
                            _fix(name, dist, upgrade), severity)


def _the_package(facts: Facts, numpy: tuple[str, str]) -> Iterator[Finding]:
    """The package's other compiled modules built with NumPy 1.x headers (matplotlib's
    _path.so beside the _c_internal_utils.so the check picked; cv2.abi3.so, which cv2 loads
    through importlib), and the probe's import failing in NumPy's own check."""
    from opdoctor.facts.numpyabi import NUMPY_REFUSAL, numpy1_modules
    from opdoctor.facts.probe.outcome import ProbeState

    chain = facts.chain
    assert chain is not None
    version, where = numpy
    name, dist, upgrade = _owner(facts)
    olds = [f for f in numpy1_modules(tuple(sorted(chain.extensions_on_disk)))
            if os.path.realpath(f) != os.path.realpath(facts.path)]
    res = facts.probe_result() if facts.options.probe else None
    err = res.load_error if res is not None else None
    refused = err is not None and NUMPY_REFUSAL.search(f"{err.type}: {err.message}")
    top = os.path.dirname(chain.package_dir) if chain.package_dir else ""
    if olds:
        shown = ", ".join(os.path.relpath(f, top) if top else f for f in olds[:3])
        more = f" and {len(olds) - 3} more" if len(olds) > 3 else ""
        loaded = res is not None and res.state is ProbeState.LOADED and err is None
        # Python extension modules initialise NumPy in their PyInit_: importing one fails. A
        # library (lib*.so: MindSpore's libmindspore_common.so) does so on first use and runs on.
        modules = [f for f in olds if not os.path.basename(f).startswith("lib")]
        # An import that failed on something else (MindSpore under protobuf 3.20: "cannot
        # import name 'runtime_version'", survey 20's re-run) did not fail on NumPy: the
        # NumPy-1 builds stay what they were, a warning, and that failure leads.
        other = res is not None and err is not None and not refused
        fails = not loaded and not other and (res is not None or bool(modules))
        yield OD328.finding(
            chain.name, f"{len(olds)} compiled module(s) of {chain.name} built against NumPy "
            f"1.x's C API ({shown}{more}); numpy {version} is installed, which refuses them"
            + (" (the import worked: their NumPy calls are what fail)" if loaded else
               "" if fails else " (libraries that initialise NumPy on first use: they warn "
               "and run on, and their NumPy calls fail)"),
            (*[f"{f}: NumPy 1.x headers" for f in olds[:6]],
             f"import numpy → numpy {version} ({where})"),
            fix=_fix(name, dist, upgrade),
            severity=Severity.ERROR if fails else Severity.WARNING)
    elif refused and err is not None:
        yield OD328.finding(
            chain.name, f"import {chain.name} fails in NumPy's own C-API check ({err.type}: "
            f"{err.message[:160]}): a compiled module it imports was built against NumPy "
            f"1.x; numpy {version} is installed",
            (*err.tail(4), f"import numpy → numpy {version} ({where})"),
            fix="install the NumPy 2 builds of the packages whose modules the traceback names "
            "(pip install --upgrade <package>; NumPy 2 builds also run on NumPy 1.x), or "
            "pip install 'numpy<2'")


def applies(facts: Facts) -> str:
    """Why the check does not apply ("" when it does): a file that is no loadable ELF
    library (empty, truncated, text) is checked by nothing of its NumPy; a package directory
    is read as a package."""
    return "" if facts.is_package_dir else facts.blocker or ""


CHECK = Check(
    name="numpy-abi",
    summary="a module's NumPy C API (the headers it was built with) pairs with the installed "
    "NumPy",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
    # a package whose compiled module the import loads through importlib (cv2) is checked as
    # its directory: the package reading runs without an ELF target
    needs_elf=False,
    applies=applies,
)
