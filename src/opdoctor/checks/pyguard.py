"""A package's own version guard (cause 3): its Python refuses, or warns about, the installed
torch (or TensorFlow) release.

torchao 0.14.1 beside torch 2.13 skips loading its extension ("Skipping import of cpp
extensions due to incompatible torch version 2.13.0+cpu for torchao version 0.14.1"): every op
of it is missing afterwards, and the logged warning is easy to miss. The guard's messages are
read from the sources (:mod:`opdoctor.facts.pyguard`); the probe's output says whether one
fired; without the probe, a compatibility table in the package's code that leaves out the
installed release decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import Check, install_command, package_applies, upgrade_command
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.pep440 import below
from opdoctor.facts.pkgdir import normalized
from opdoctor.facts.pyguard import (
    Guard,
    find_guards,
    find_text_comparisons,
    fired,
    misjudged,
    paired_release,
    series,
    supported_releases,
)
from opdoctor.facts.requires import is_framework, pinned_elsewhere, shipped_libraries
from opdoctor.facts.variant import library_release, release_families, release_key
from opdoctor.model import Cause, Finding, Severity

OD323 = CodeDoc(
    "OD323", "the package's own version check rejects the installed framework release",
    Severity.ERROR,
    what="A package that checks the torch (or TensorFlow) release it runs beside — a table of "
    "supported releases, an assert on torch.__version__, a CUDA-version comparison — accepts "
    "the installed one (its message does not appear when it is imported; its table lists the "
    "release).",
    why="The package was built for another release and knows it: it refuses to load its "
    "extension (or to import), or warns that the load may crash. The ops are missing "
    "afterwards ('operator torchao::… does not exist', an AttributeError on torch.ops.ns) "
    "while the warning scrolled by at import.",
    example="Skipping import of cpp extensions due to incompatible torch version 2.13.0+cpu "
    "for torchao version 0.14.1",
    fix="Install the pair the package supports: the torch release its table lists, or a "
    "release of the package made for the installed torch (its compatibility table says which).",
    references=("https://github.com/pytorch/ao/issues/2919",
                "https://pytorch.org/get-started/previous-versions/"),
)

OD324 = CodeDoc(
    "OD324", "the package ships a library per torch release, none for the installed one",
    Severity.ERROR,
    what="A package that builds one copy of a library per torch release and picks the copy "
    "named for the running torch at import (libgraphbolt_pytorch_2.2.1.so, …) has a copy for the "
    "installed torch release.",
    why="The package was built for other torch releases: it looks for the file named for the "
    "installed one, does not find it and fails at import ('Cannot find DGL C++ graphbolt "
    "library at …/libgraphbolt_pytorch_2.13.0.so'), or skips its ops. No search path helps: "
    "the file was never built.",
    example="dgl 2.1.0 ships libgraphbolt_pytorch_<r>.so for torch 2.0.0 … 2.2.1; torch "
    "2.13.0 is installed",
    fix="Install the package's release (or build) made for the installed torch, or a torch "
    "release it ships a library for.",
    references=("https://www.dgl.ai/pages/start.html",),
)

OD325 = CodeDoc(
    "OD325", "the package's Python needs a framework module or name this release lacks",
    Severity.ERROR,
    what="`import <package>` does not fail on a module, name or attribute of torch (or "
    "TensorFlow) that the installed release does not have (probe: the framework itself "
    "imported).",
    why="The package's Python side was written for another release: the framework moved or "
    "removed the module it imports, or added the name later. Its compiled part may be fine; "
    "the import fails all the same, and the message names a module of torch, not of the "
    "package, so it reads like a broken torch or a missing dependency.",
    example="torchao 0.12.0 beside torch 2.13: ModuleNotFoundError: No module named "
    "'torch._inductor.kernel.flex_attention'",
    fix="Install the package's release made for the installed framework release, or the "
    "framework release the package was written for.",
    references=("https://pytorch.org/get-started/previous-versions/",),
)

OD326 = CodeDoc(
    "OD326", "the package compares the framework's version as text", Severity.WARNING,
    what="A package's check of the torch (or TensorFlow) release compares versions as "
    "versions: `torch.__version__ >= \"2.9\"` (torch's TorchVersion compares as a version) or "
    "packaging.version.Version, never `str(torch.__version__) >= \"2.9\"`.",
    why="str() makes the version a plain string, compared character by character: "
    "\"2.13.0\" >= \"2.9\" is False ('1' < '9'). The package's branch for the installed "
    "release is the wrong one — torchao 0.13.0's guard meant to skip loading its extension "
    "beside torch 2.9 and later loads it beside 2.13 (which then fails).",
    example="torchao/__init__.py:38: str(torch.__version__) >= \"2.9\" is False for torch "
    "2.13.0+cpu (as a version: True)",
    fix="The package's check cannot tell the installed release: pair the releases yourself (a "
    "release of the package made for the installed framework, or the framework release it was "
    "built for), and report the comparison to the package.",
    references=("https://peps.python.org/pep-0440/",),
)
OD327 = CodeDoc(
    "OD327", "a requirement is installed at a release the package does not accept",
    Severity.ERROR,
    what="Each requirement of the package's distribution (Requires-Dist) is installed at a "
    "release its specifier admits — an exact pin (pydantic-core==2.50.5) or a range "
    "(numpy<2.1,>=1.22) — the copy found first on sys.path, the one import uses.",
    why="An exact pin means the two distributions were released together: the package's "
    "Python calls into that release's compiled core. Upgraded or downgraded on its own (`pip "
    "install -U pydantic-core`, `--no-deps`, an older copy earlier on sys.path), the pair no "
    "longer matches: the import refuses it ('The installed pydantic-core version (2.27.2) is "
    "incompatible with the current pydantic version, which requires 2.50.5') or fails later "
    "on a name the other release lacks. A range says the same about releases the package was "
    "not built or tested for: numba 0.60 refuses NumPy 2.4 ('Numba needs NumPy 2.0 or "
    "less'), a NumPy-1 build fails on NumPy 2. pip keeps both satisfied; `pip check` lists "
    "what is not. An error when the probe saw the import fail (on an exact pin, or with an "
    "error that names the requirement), a warning otherwise (scipy warns about numpy<2.3 and "
    "works).",
    example="pydantic 2.14.4 requires pydantic-core==2.50.5; pydantic-core 2.27.2 is "
    "installed; numba 0.60.0 requires numpy<2.1,>=1.22; numpy 2.4.6 is installed",
    fix="Install a release the package accepts (pip install '<requirement><specifier>' where "
    "the other one is), or a release of the package that accepts the installed one, or "
    "reinstall the package so that pip resolves the pair.",
    references=("https://packaging.python.org/en/latest/specifications/version-specifiers/",),
)
CODES = (OD323, OD324, OD325, OD326, OD327)

# What a framework release lacks, as Python words it: a module, a name imported from one, an
# attribute of one. torch.ops / torch.classes namespaces are ops (registration), not API.
_FW_MODULE = r"(?P<mod>(?P<fw>torch|tensorflow)(?:\.[\w.]+)?)"
_LACKS = (
    re.compile(r"No module named '" + _FW_MODULE + "'"),
    re.compile(r"cannot import name '(?P<name>\w+)' from '" + _FW_MODULE + "'"),
    re.compile(r"module '" + _FW_MODULE + r"' has no attribute '(?P<name>\w+)'"),
)


# A guard whose message says the package stops (not a warning that it may crash).
_REFUSES = re.compile(r"skip|refus|not load|cannot|can't|will not|disabl|abort|^error\b", re.I)
_URL = re.compile(r"https?://[^\s\"')]+")
_RELEASE = re.compile(r"(?<![\w.])(\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:\.\*)?)(?![\w.]*\+)")


def _dist(facts: Facts) -> tuple[str, str]:
    """(distribution name, version) from the package's dist-info ("", "" when unknown)."""
    chain = facts.chain
    m = re.match(r"(.+?)-(\d[^-]*)\.dist-info$", os.path.basename(chain.dist)) \
        if chain and chain.dist else None
    return (m.group(1), m.group(2)) if m else ("", "")


def _installed(facts: Facts, framework: str) -> str:
    interp = facts.interpreter
    if framework not in ("torch", "tensorflow"):
        return ""  # a Keras guard: its message (OD511) says what to do
    if framework == "tensorflow":
        tf = facts.tensorflow
        return tf.version if tf is not None and tf.version != "unknown" else ""
    return interp.torch.version if interp and interp.torch else ""


def _output(facts: Facts) -> str:
    """Everything the probe's import printed or raised (package mode)."""
    res = facts.probe_result() if facts.options.probe else None
    if res is None:
        return ""
    parts = [res.stderr, res.stdout, res.load_message]
    parts += [f"{h.error.type}: {h.error.message}" for h in res.swallowed]
    return "\n".join(p for p in parts if p)


def _release_family(facts: Facts, dist: str, version: str) -> Iterator[Finding]:
    """OD324: every per-release family of the package lacks the installed torch release."""
    chain = facts.chain
    installed = _installed(facts, "torch")
    base = re.match(r"\d+\.\d+(?:\.\d+)?", installed)
    if chain is None or not base:
        return
    families = release_families(chain.package_dir, chain.extensions_on_disk)
    have = base.group(0)
    short = ".".join(have.split(".")[:2])
    missing = {f: v for f, v in families.items() if have not in v and short not in v}
    if not missing or len(missing) < len(families):
        return  # a family that has the installed release: the package can run on it
    res = facts.probe_result() if facts.options.probe else None
    if res is not None and res.framework_version and not res.load_message and not any(
            res.maps(f) for f in chain.extensions_on_disk if library_release(f)):
        # The import worked and loaded none of them: this torch needs none (torch-c-dlpack-ext
        # loads its addon only into a torch without the DLPack exchange API, before 2.10).
        return
    name = dist or chain.name
    pkg = f"{name} {version}".strip()
    top = os.path.basename(chain.package_dir)
    ev = [f"{top}/{f}: torch {', '.join(v)}" for f, v in list(missing.items())[:6]]
    ev.append(f"installed: torch {installed}; no {top}/{next(iter(missing)).replace('<r>', have)}")
    releases = sorted({r for v in missing.values() for r in v}, key=release_key)
    yield OD324.finding(
        name, f"{pkg} ships its libraries for torch {releases[0]} … {releases[-1]} only; "
        f"none for the installed torch {installed}", ev,
        fix=f"install the {name} release (or build) made for torch {have} (its project "
        f"publishes one per torch release), or a torch release it ships libraries for "
        f"(pip install 'torch=={releases[-1]}')")


def _import_failed(facts: Facts) -> bool:
    """Whether the probe's import of the package raised (package mode)."""
    res = facts.probe_result() if facts.options.probe else None
    return bool(res is not None and res.load_message)


def _framework_lacks(facts: Facts) -> Iterator[Finding]:
    """OD325: the probe's import of the package raised on a module, name or attribute of the
    framework, which itself imported (torchao 0.12.0: ``No module named
    'torch._inductor.kernel.flex_attention'`` beside torch 2.13)."""
    res = facts.probe_result() if facts.options.probe else None
    err = res.load_error if res is not None else None
    chain = facts.chain
    if err is None or chain is None or not res or not res.framework_version or \
            "partially initialized" in err.message:
        return
    for rx in _LACKS:
        m = rx.search(f"{err.type}: {err.message}")
        if m is None:
            continue
        where, fw_pkg = m.group("mod"), m.group("fw")
        if (where == fw_pkg and rx is _LACKS[0]) or \
                where.startswith(("torch.ops", "torch.classes")):
            return  # no framework at all (a broken install), or an op namespace
        installed = _installed(facts, fw_pkg) or res.framework_version
        fw = "TensorFlow" if fw_pkg == "tensorflow" else "torch"
        what = f"{where}.{m.group('name')}" if "name" in rx.groupindex else where
        dist, version = _dist(facts)
        name = dist or chain.name
        pkg = f"{dist} {version}".strip() or chain.name
        want = ""
        if fw_pkg == "torch" and chain.package_dir:
            from opdoctor.facts.variant import package_metadata
            req = package_metadata(chain.package_dir)[1]
            want = f" ({req}, its metadata says)" if req else ""
        yield OD325.finding(
            name, f"import {chain.name} needs {what}, which {fw} {installed} does not have: "
            f"{pkg}'s Python was written for another {fw} release",
            (f"{err.type}: {err.message[:300]}", *err.tail(4), f"installed: {fw} {installed}"),
            fix=f"install the {name} release made for {fw} {installed} "
            f"({upgrade_command(facts, name)}, or the release its notes pair with {fw} "
            f"{installed}); or install the {fw} release it was written for{want}")
        return


def run(facts: Facts) -> Iterator[Finding]:
    """One finding per version guard that fired (probe) or whose table leaves the installed
    release out (static); one when the package's per-release libraries miss the installed
    torch; one when the package's import fails on what the framework release lacks."""
    chain = facts.chain
    if chain is None or not chain.package_dir:
        return
    pinned = list(_pins(facts))
    yield from pinned
    yield from _requirements_pins(facts, {normalized(f.subject) for f in pinned})
    yield from _release_family(facts, *_dist(facts))
    yield from _framework_lacks(facts)
    yield from _text_comparisons(facts)
    guards = find_guards(tuple(chain.python_files))
    if not guards:
        return
    dist, version = _dist(facts)
    output = _output(facts)
    reported: set[str] = set()
    for guard in guards:
        installed = _installed(facts, guard.framework)
        if not installed or guard.framework in reported:
            continue
        printed = fired(guard, output) if output else ""
        supported = supported_releases(guard.file, version) if version else []
        base = re.match(r"\d+\.\d+(?:\.\d+)?", installed)
        table_says_no = bool(supported) and not any(
            base and base.group(0).startswith(s.split(".dev")[0]) for s in supported)
        if not printed and not (table_says_no and not output):
            continue
        reported.add(guard.framework)
        yield _finding(facts, guard, dist or chain.name, version, installed, printed, supported)


def _pins(facts: Facts) -> Iterator[Finding]:
    """OD327: an exact pin of the package's distribution that the installed requirement
    does not match — an error when the probe saw the import fail, a warning otherwise."""
    chain = facts.chain
    assert chain is not None
    if not chain.dist:
        return
    dist, version = _dist(facts)
    pkg = f"{dist or chain.name} {version}".strip()
    dirs = [e or facts.options.cwd or os.getcwd() for e in chain.sys_path]
    failed = _import_failed(facts)
    # A package without compiled code of its own: its framework pin is the only word on the
    # release it was written for (mindnlp 0.5.1 requires mindspore<=2.7.0 and its import
    # fails on MindSpore 2.10's changed API: survey 18).
    pure = not chain.extensions_on_disk
    for name, pin, have, where, spec in pinned_elsewhere(chain.dist, dirs, frameworks=pure):
        # The libraries the installed release brings: a library of the pinned release that
        # the package's own extension NEEDs is then not found (PyMuPDF 1.24.9 needs
        # libmupdf.so.24.8 beside PyMuPDFb 1.24.8's libmupdf.so.24.4) — that "not found" is
        # this pin's consequence (verdict/diagnosis).
        libs = shipped_libraries(name, where)
        want = f"{name}=={pin}" if pin else f"{name}{spec.replace(' ', '')}"
        install = install_command(facts, f"'{want}'", where)
        if pin:
            fix = (f"{install} (the release {pkg} was released with), or reinstall "
                   f"{dist or chain.name} so that pip resolves the pair")
        elif below(spec, have):
            # an upgrade never goes back to the older release that would accept it (protobuf
            # 3.20.3 under TensorFlow 2.21, which requires protobuf>=5.28.0: survey 20)
            fix = (f"{install} (the releases {pkg} accepts), or an older release of "
                   f"{dist or chain.name} that accepts {name} {have} (pip index versions "
                   f"{dist or chain.name} lists them; `pip install --upgrade` never goes back "
                   "to one)")
        else:
            fix = (f"{install} (the releases {pkg} accepts), or a release of "
                   f"{dist or chain.name} that accepts {name} {have} (`pip install --upgrade "
                   f"{dist or chain.name}` lets pip choose one)")
        # A range is the import's root only when the import's own error names the requirement
        # (numba: "Numba needs NumPy 2.0 or less"): scipy warns about numpy<2.3 and works.
        # Or when the import's load missed a library this requirement ships at another
        # release (tilelang 0.1.15 needs libz3.so.4.15; z3-solver 5.4 installs libz3.so.5.4:
        # survey 19).
        misses = failed and _misses_a_release_of(facts, libs)
        named = failed and (bool(pin) or _error_names(facts, name) or misses or (
            is_framework(name) and not _missing_module(facts)))
        libs = libs if pin or misses else []
        # Without the probe: an unconditional import of a submodule the installed release
        # lacks fails whatever happens (scipy's `from numpy.exceptions import …` under numpy
        # 1.23.5 in a user site: survey 22's B3 was a warning, exit 0)
        from opdoctor.facts.pychain import absent_submodules  # here: it imports ast
        interp = facts.interpreter
        absent = [] if failed else absent_submodules(
            chain, name.lower().replace("-", "_"), where, interp.ext_suffix if interp else ".so")
        yield OD327.finding(
            name, f"{pkg} requires {want}; {name} {have} is installed ({where})"
            + (f", which has no {absent[0][2]}: the import fails" if absent else ""),
            (f"{os.path.basename(chain.dist)}/METADATA: Requires-Dist: {name}{spec}",
             f"first on sys.path: {name} {have} in {where}",
             *([f"{name} {have} installs: {', '.join(libs[:8])}"] if libs else []),
             *(f"{os.path.relpath(f, os.path.dirname(chain.package_dir))}:{line} imports {mod} "
               "unconditionally" for f, line, mod in absent[:3])),
            fix=fix, severity=Severity.ERROR if named or absent else Severity.WARNING)


_FRAME = re.compile(r'^\s*File "([^"\n]{1,1000})", line \d+', re.M)


def _requirements_pins(facts: Facts, told: set[str]) -> Iterator[Finding]:
    """OD327 for the distribution the failed import died in, when that is another installed
    distribution (a requirement, or one of its requirements) whose own requirement is not
    met: ``import tensorflow`` under NumPy 1.26 dies in ml_dtypes 0.7.0, which requires
    numpy>=2.0.0 — "SystemError: <built-in function __import__> returned a result with an
    exception set" said nothing of it (survey 20). An error when the import's error names
    the requirement, a warning otherwise. ``told``: requirements the package's own pins
    already reported (one OD327 per requirement)."""
    from opdoctor.facts.pkgdir import distribution
    from opdoctor.facts.requires import owning_dist

    chain = facts.chain
    res = facts.probe_result() if facts.options.probe else None
    err = res.load_error if res is not None else None
    if chain is None or err is None:
        return
    dirs = [e or facts.options.cwd or os.getcwd() for e in chain.sys_path]
    own = os.path.realpath(chain.dist) if chain.dist else ""
    seen: set[str] = set()
    # From the innermost frame out, the installed distributions the failure went through
    # (NumPy's own frames first, then ml_dtypes'), up to the package's own: the first
    # whose requirement is not met.
    for path in reversed(_FRAME.findall(err.traceback)):
        owner = owning_dist(path) if os.path.isabs(path) else None
        info = os.path.realpath(owner[0]) if owner is not None else ""
        if owner is None or info in seen:
            continue
        if info == own or len(seen) >= 6:
            return
        seen.add(info)
        # (a framework pin is left to the symbol and variant checks, as for the package's
        # own: torchvision 0.29.1's torch>=2.14 beside its CUDA build is OD307's story)
        unmet = pinned_elsewhere(owner[0], dirs)
        if unmet:
            break
    else:
        return
    dist, version = distribution(os.path.basename(owner[0]))
    for name, pin, have, where, spec in unmet:
        if normalized(name) in told:
            continue
        want = f"{name}=={pin}" if pin else f"{name}{spec.replace(' ', '')}"
        install = install_command(facts, f"'{want}'", where)
        yield OD327.finding(
            name, f"`import {facts.probed_import or chain.name}` fails in {dist} {version}, "
            f"which requires {want}; {name} {have} is installed ({where})",
            (f"the import's failure went through {owner[2]} "
             f"({os.path.basename(owner[0])})",
             f"{os.path.basename(owner[0])}/METADATA: Requires-Dist: {name}{spec}",
             f"first on sys.path: {name} {have} in {where}"),
            fix=f"{install} (the releases {dist} {version} accepts), or the release of {dist} "
            f"made for {name} {have}",
            severity=Severity.ERROR if _error_names(facts, name) else Severity.WARNING)


def _misses_a_release_of(facts: Facts, libs: list[str]) -> bool:
    """Whether the probe's import failed on a library not found whose name, up to ``.so``, is
    that of one in ``libs`` (another release's copy of it)."""
    from opdoctor.facts.loaderror import NOT_FOUND, soname_stem

    res = facts.probe_result() if facts.options.probe else None
    text = (res.load_message if res is not None else "") or ""
    stems = {soname_stem(lib) for lib in libs} - {""}
    return any(soname_stem(m.group(1)) in stems for m in NOT_FOUND.finditer(text))


def _missing_module(facts: Facts) -> bool:
    """Whether the probe's import failed on a module that is not there (a requirement of
    its own, not the framework's API): that failure leads, not a framework pin."""
    res = facts.probe_result() if facts.options.probe else None
    err = res.load_error if res is not None else None
    return err is not None and err.type == "ModuleNotFoundError"


def _error_names(facts: Facts, name: str) -> bool:
    """Whether the probe's import error names distribution ``name`` (any case, - or _)."""
    res = facts.probe_result() if facts.options.probe else None
    text = (res.load_message if res is not None else "") or ""
    words = {name.lower(), name.lower().replace("-", "_"), name.lower().replace("_", "-")}
    # as a word: "torch" is not named by "operator torchvision::nms does not exist"
    return any(re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", text.lower())
               for w in words)


def _text_comparisons(facts: Facts) -> Iterator[Finding]:
    """OD326: a comparison of ``str(torch.__version__)`` with a release that reads the
    installed release the other way round than a version comparison would."""
    chain = facts.chain
    assert chain is not None
    dist, version = _dist(facts)
    pkg = f"{dist or chain.name} {version}".strip()
    for cmp in find_text_comparisons(tuple(chain.python_files)):
        installed = _installed(facts, cmp.framework)
        readings = misjudged(cmp, installed) if installed else None
        if readings is None:
            continue
        as_text, as_version = readings
        fw = "TensorFlow" if cmp.framework == "tensorflow" else "torch"
        rel = os.path.relpath(cmp.file, os.path.dirname(chain.package_dir))
        yield OD326.finding(
            f"{rel}:{cmp.line}", f"{pkg} compares {fw}'s version as text: {cmp.source} is "
            f"{as_text} for {fw} {installed} (as a version: {as_version}), so the branch it "
            f"takes is the one meant for {fw} {_side(cmp.op, not as_version)} {cmp.release}",
            (f"{rel}:{cmp.line}: {cmp.source}",
             f"as text: {installed!r} {cmp.op} {cmp.release!r} → {as_text}",
             f"as versions: {installed} {cmp.op} {cmp.release} → {as_version}"),
            fix=f"{pkg}'s check cannot tell {fw} {installed} from a release "
            f"{_side(cmp.op, not as_version)} {cmp.release}: pair the releases yourself — a "
            f"release of {dist or chain.name} made for {fw} {installed}, or the {fw} release "
            f"{pkg} was built for — and report the comparison to {dist or chain.name} "
            f"(compare {cmp.framework}.__version__ itself, or packaging.version.Version)")


_FW_RELEASE = re.compile(r"\b(?:PyTorch|[Tt]orch|TensorFlow|tensorflow)\s+(?:version\s+)?"
                         r"(?:[=<>~]=?\s*)?(\d+\.\d+(?:\.\d+)?(?:\.\*)?)")


def _side(op: str, holds: bool) -> str:
    """The releases for which ``version op release`` is ``holds``, as a relation."""
    if holds:
        return {"<": "below", "<=": "at or below", ">": "above", ">=": "at or above"}[op]
    return {"<": "at or above", "<=": "above", ">": "at or below", ">=": "below"}[op]


def _finding(facts: Facts, guard: Guard, dist: str, version: str, installed: str,
             printed: str, supported: list[str]) -> Finding:
    chain = facts.chain
    assert chain is not None
    rel = os.path.relpath(guard.file, os.path.dirname(chain.package_dir))
    fw = "TensorFlow" if guard.framework == "tensorflow" else "torch"
    pkg = f"{dist} {version}".strip()
    refuses = guard.raises or bool(_REFUSES.search(guard.text))
    what = "rejects" if refuses else "warns about"
    ev = [f"{rel}:{guard.line}: {guard.text[:240]}"]
    if printed:
        ev.append(f"the import printed: {printed[:300]}")
    else:
        ev.append("static: its compatibility table does not list the installed release "
                  "(no probe ran to see the message)")
    if supported:
        ev.append(f"{pkg} supports {fw} {', '.join(supported)} (its table in {rel})")
    ev.append(f"installed: {fw} {installed}")
    fw_pkg = "tensorflow" if fw == "TensorFlow" else "torch"
    # The release the printed message names, when it names one besides the installed one
    # ("needs to work with PyTorch 2.8.*"): a pip specifier as it stands.
    # Not the package's own version, which such a message prints too ("FBGEMM_GPU version is
    # 1.9.0, which is not guaranteed to be compatible with PyTorch 2.13.0+cpu": survey 18).
    # A release printed next to the framework's name ("needs to work with PyTorch 2.8.*":
    # intel-extension-for-pytorch's own version is 2.8.0 too) first; else any other release
    # than the installed one and the package's own.
    beside = [v for v in _FW_RELEASE.findall(printed)
              if not installed.startswith(v.rstrip(".*"))]
    named = beside or [v for v in _RELEASE.findall(printed)
                       if not installed.startswith(v.rstrip(".*"))
                       and not (version and version.startswith(v.rstrip(".*")))]
    want = f"{fw_pkg}=={series(supported[0].split('.dev')[0])}" if supported else \
        f"{fw_pkg}=={named[0]}" if named else f"the {fw} release {pkg} was built for"
    url = _URL.search(guard.text)
    name = dist or chain.name
    mine = paired_release(guard.file, installed)
    other = (f"the {name} release its table pairs with {fw} {installed}: pip install "
             f"'{name}=={series(mine[0])}'" if mine else
             f"a release of {name} made for {fw} {installed} ({upgrade_command(facts, name)}")
    fix = (f"install the pair {name} supports: pip install '{want}' beside {pkg}, or {other}"
           + (f"; see {url.group(0).rstrip('.')}" if url else "") + ("" if mine else ")"))
    return OD323.finding(
        dist or chain.name, f"{pkg}'s own version check {what} {fw} {installed}"
        + ((" (the import then fails)" if _import_failed(facts) else
            " (it then skips loading its extension)") if refuses and not guard.raises else ""),
        ev, fix=fix, severity=Severity.ERROR if refuses else Severity.WARNING)


CHECK = Check(
    name="version-guard",
    summary="the package's own check of the torch/TensorFlow release accepts the installed one, "
    "and its per-release libraries include the installed one",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
    needs_elf=False,
    applies=package_applies,
)
