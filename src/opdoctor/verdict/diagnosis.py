"""From all findings of a run to one verdict: the most likely cause, its root findings, and the
consequences folded under them.

Ranking follows the order in which things fail in a real process: a broken file (4) stops
everything; a missing dependency (2) stops the load before any symbol is bound; an unbindable
symbol or missing version (3) stops it before any static initialiser runs; only then can
registration (1) go wrong; the import chain (5) decides whether the load happens at all.
Within that order, errors outrank warnings, which outrank infos.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from opdoctor.codes import AFTER_THE_LIBRARY, EXPLAINS, ROOT_ORDER, RUN_NOTES, SYMPTOMS
from opdoctor.codes import NOT_A_VERDICT as _NOT_A_VERDICT
from opdoctor.model import Cause, Diagnosis, Finding, Severity

# The order in which the loader and the framework hit problems (first = root when present).
FAIL_ORDER = (Cause.BUILD, Cause.IMPORT_CHAIN, Cause.LIBRARY_PATH, Cause.VERSION,
              Cause.REGISTRATION)

# Findings about the run, not the library (opdoctor's probe failed, or stopped before it
# touched the library, or a stage stopped at its time budget): reported, never a verdict.
NOT_A_VERDICT = RUN_NOTES


def diagnose(findings: Sequence[Finding], named: str = "") -> Diagnosis:
    """Rank the causes of a report's findings and name the root. ``named``: the library the
    user named (its path as the findings give it; "" for a package, a walk, a wheel)."""
    serious = [f for f in findings if f.severity is not Severity.INFO
               and f.code not in NOT_A_VERDICT]
    if not serious:
        note = " (informational notes only)" if findings else ""
        about_run = [f for f in findings if f.code in NOT_A_VERDICT]
        if any(f.code in _NOT_A_VERDICT for f in about_run):
            note = " (opdoctor's probe failed: see the warning)"
        elif about_run:
            n = sum(1 for f in findings if f.severity is Severity.WARNING)
            return Diagnosis(0, "low", f"No error — {n} warning(s): {about_run[0].message}.",
                             ())
        return Diagnosis(0, "high", f"No problem found{note}.", ())
    # A warning never outranks an error: the root is taken among the most severe findings,
    # causes before symptoms (an error that is only a symptom still beats a warning).
    worst = max(f.severity.rank for f in serious)
    severest = [f for f in serious if f.severity.rank == worst]
    top = [f for f in severest if f.code not in SYMPTOMS] or severest
    # A requirement found missing without importing comes after a failure of the library
    # itself (AFTER_THE_LIBRARY); this decides only where nothing ran.
    # Unless the probe saw the import fail on it: auto-gptq 0.7.1 catches every load of its
    # CUDA kernels and dies on `No module named 'accelerate'` — that is what happened first.
    # Not when what it names is the device side of a build (torch-tensorrt's libnvinfer from
    # tensorrt-cu13-libs, beside its CUDA build): that story is the build's (OD307).
    seen = [f for f in top if f.code in AFTER_THE_LIBRARY and not _names_device_side(f)
            and any(g.code == "OD511" and _explains(f, g) for g in findings)]
    if named and any(f.subject == named and f.cause in (Cause.BUILD, Cause.VERSION)
                     for f in top):
        # …but not over the build of the library the user named, which cannot load whatever
        # the import does first: tensorflow-decision-forests 1.10's inference.so (TF 2.17)
        # under TF 2.21 — its package's missing tf_keras is true and comes first in `import
        # tensorflow_decision_forests`, but `tf.load_op_library` of the file fails on the
        # release, and installing tf-keras changes nothing for it (survey 23's T3).
        seen = []
    top = [f for f in top if f.code not in AFTER_THE_LIBRARY or f in seen] or top
    # A finding another top finding explains is a consequence, whatever its cause number:
    # a framework-variant mismatch (cause 3) explains the missing libc10_cuda.so (cause 2).
    top = [f for f in top if not any(_explains(o, f) for o in top if o.code != f.code)] or top
    for cause in FAIL_ORDER:
        roots = [f for f in top if f.cause == cause]
        if roots:
            break
    # A secondary root explained by a primary one is not a root.
    roots = [r for r in roots if not any(_explains(o, r) for o in roots
                                         if o.code != r.code)]
    roots.sort(key=lambda r: ROOT_ORDER.index(r.code) if r.code in ROOT_ORDER
               else len(ROOT_ORDER))  # stable: unlisted codes keep the checks' order
    folded: dict[str, list[Finding]] = {}
    # A consequence is folded under the root of the verdict that explains it, else under
    # another failure of the run that does (open3d: the OS library libusb leads, and the
    # missing libc10_cuda.so is still the CUDA build's consequence, not a root of its own).
    others = [o for o in top if o not in roots]
    for f in findings:
        if f in roots or f in others:
            continue
        # (a note is nobody's consequence: MindSpore's "no gpu_get_device_count in this
        # build" is an optional part of another build, not its NumPy-1 build's doing)
        owners = [r for r in roots if _explains(r, f)
                  or (f.code == "OD512" and f.severity is not Severity.INFO
                      and r.cause != 5 and not _foreign_module(f))] or \
            [o for o in others if _explains(o, f)]
        if owners:
            folded.setdefault(_owner(f, owners).code, []).append(f)
    explained = {code: tuple(fs) for code, fs in folded.items()}
    first = roots[0]
    confidence = "high" if first.severity is Severity.ERROR else "medium"
    more = f" (+{len(roots) - 1} more)" if len(roots) > 1 else ""
    fix = f" Fix: {_table_fix(first, findings) or first.fix}" if first.fix else ""
    if first.severity is not Severity.ERROR:
        # Nothing is broken for sure: say so first, then what deserves a look.
        n = sum(1 for f in findings if f.severity is Severity.WARNING)
        summary = (f"No error — {n} warning(s): {first.message}{more} "
                   f"(cause {int(first.cause)} — {first.cause.title}).{fix}")
    else:
        summary = (f"Most likely cause: {int(first.cause)} — {first.cause.title}: "
                   f"{first.message}{more}.{fix}")
    return Diagnosis(int(first.cause), confidence, summary, tuple(roots), explained)


def _table_fix(root: Finding, findings: Sequence[Finding]) -> str:
    """The fix of the package's own compatibility table (OD323: its version check warned, and
    its table pairs releases) for a root that says the library was built against another
    torch: fbgemm-gpu-cpu 1.9.0 beside torch 2.13 led with "install the fbgemm_gpu-cpu release
    built for torch 2.13.0+cpu (its release notes pair …)" while its own table names both
    pairs, torch 2.14 or fbgemm_gpu_cpu 1.8 (survey 18). "" when there is no such table."""
    if root.code not in ("OD304", "OD321") or "built against another torch" not in root.message:
        return ""
    table = next((f for f in findings if f.code == "OD323" and f.fix
                  and " torch " in f.message and "its table pairs" in f.fix), None)
    return f"{table.fix} (its own compatibility table, OD323)" if table else ""


_NAMES_IT = "the import's error names it: "  # checks/importchain.py's OD514 evidence
_NO_MODULE = re.compile(r"(?:raised|fails:) ModuleNotFoundError: No module named '([\w.]+)'")


def _explains(root: Finding, f: Finding) -> bool:
    """Whether ``root`` explains ``f`` (the EXPLAINS table), except that a Python module of
    another distribution missing from the environment is nobody's consequence but an import
    chain's: tensorflow-quantum's ``No module named 'cirq'`` is not caused by its op library's
    abseil mismatch, and installing the right TensorFlow would not bring cirq."""
    if f.code not in EXPLAINS.get(root.code, ()):
        return False
    if root.code in ("OD503", "OD418") and f.code == "OD301":
        # a build for another Python (PyPy's C API: PyPyExc_*, CPython 3.12's PyType_GetDict)
        # leaves its symbols undefined here: the same file only — the library itself, or the
        # file the package's import names ("only _regex.cpython-312-…so")
        return f.subject == root.subject or (
            bool(f.subject) and os.path.basename(f.subject) in root.message)
    if root.code == "OD312" and f.code in ("OD201", "OD220", "OD301"):
        # the CUDA libraries of the library's own CUDA major, which a torch of another major
        # does not bring (libcudart.so.12 beside torch+cu130), and the symbols they define
        m = re.search(r"uses CUDA runtime (\d+)", root.message)
        if m is None:
            return False
        from opdoctor.facts.variant import variant_library

        if f.code == "OD301":
            return "(inconclusive" in f.message and f".so.{m.group(1)}" in f.message
        missing = f.subject.split()[0] if f.code == "OD201" else (_missing_library(f) or "")
        return variant_library(missing) == ("cuda", int(m.group(1)))
    if root.code == "OD201" and f.code == "OD320":
        # torch's own import missing a library (checks/deps.py's framework misses) is why
        # torch fails to import; an extension's own missing dependency is not
        return "`import torch` loads" in root.message
    if root.code in ("OD201", "OD203", "OD220") and f.code == "OD511":
        # an import that failed on a library not found is this miss's consequence only when
        # its error names this library: torchcodec's custom_ops4 misses FFmpeg 4's
        # libavutil.so.56, its import fails at libtorchcodec_image.so on libnvrtc.so.13
        # (the real loader's miss, OD220, only then: fairseq2n's import raises its own
        # "requires Intel oneTBB" after its CDLL of libtbb failed — the requirement's error)
        said = next((e.removeprefix("raised: ") for e in root.evidence
                     if e.startswith("raised: ")), "")
        if root.code == "OD220" and said:
            # a library the package looked up by name, whose absence it raised in its own
            # words (sounddevice's "PortAudio library not found": checks/probe.py)
            return said in f.message
        lib = _missing_library(f)
        if lib is not None or root.code == "OD220":
            return lib is not None and \
                os.path.basename(lib) == os.path.basename(root.subject.split()[0])
    if root.code in ("OD201", "OD203") and f.code == "OD220":
        # the real loader's miss confirms the static one of the same library only (a package
        # that tries several libraries: another one's miss is not this one's)
        return f.subject == root.subject
    if root.code == "OD201" and f.code == "OD430":
        # "own code never linked in (inconclusive: a dependency is missing and may define
        # them, see libtbb.so.12)": numba's tbb:: symbols are the missing libtbb's (survey 10)
        return "(inconclusive" in f.message and root.subject in f.message
    if root.code == "OD201" and f.code == "OD304" and "(inconclusive" not in f.message:
        return False  # torch symbols a missing non-torch library cannot define: its own root
    if root.code == "OD327" and f.code in ("OD201", "OD220"):
        # a library of the pinned release, not found beside the other release's copy of it
        # (libmupdf.so.24.8 where PyMuPDFb 1.24.8 installs libmupdf.so.24.4)
        from opdoctor.facts.loaderror import soname_stem
        stem = soname_stem(f.subject)
        return bool(stem) and any(soname_stem(lib) == stem for line in root.evidence
                                  if " installs: " in line
                                  for lib in line.split(" installs: ", 1)[1].split(", "))
    if root.code == "OD328" and f.code in ("OD511", "OD512"):
        # NumPy-1 builds explain an import's failure only when NumPy refused them (its own
        # words), not MindSpore's "cannot import name 'runtime_version'" (survey 20's re-run)
        from opdoctor.facts.numpyabi import NUMPY_REFUSAL
        return NUMPY_REFUSAL.search(f"{f.message} {' '.join(f.evidence)}") is not None
    if root.code == "OD328" and f.code == "OD327":
        # a NumPy-1 build that requires numpy<2: the same pairing, said twice (pandas 2.1.4)
        return f.subject.lower() == "numpy"
    if root.code == "OD508" and f.code == "OD124":
        # a library of the package changed since install (cut short) and the package's import
        # died of SIGBUS: the changed file, not this library's initialiser (fbgemm-gpu's
        # truncated fbgemm_gpu_py.so, in the reports of its 18 other libraries; survey 21)
        return ("SIGBUS" in f.message or "Bus error" in f.message) and any(
            line.startswith("changed since install") and ".so" in line for line in root.evidence)
    if root.code == "OD508" and f.code in ("OD201", "OD301"):
        # a library the RECORD lists and the files lack (pillow's wheel without its vendored
        # libjpeg): its "not found" — and the symbols it would define — are that miss, whose
        # fix is the wheel's, not a patchelf of a copy unpacked to /tmp (survey 20)
        gone = {os.path.basename(line[len("missing: "):]) for line in root.evidence
                if line.startswith("missing: ")}
        if f.code == "OD201":
            return f.subject.split()[0] in gone
        return "(inconclusive" in f.message and any(g in f.message for g in gone)
    if root.code == "OD502" and f.code in ("OD201", "OD301", "OD320"):
        # a requirement shadowed by a copy no distribution installed (importchain's
        # _shadowing_tree): the framework's own libraries its import never loaded, the symbols
        # they define, the framework's failed import (survey 21's W1, W2)
        if not any(e.endswith("no distribution installed it") for e in root.evidence):
            return False
        if f.code == "OD320":
            return True
        from opdoctor.facts.frameworks import FRAMEWORKS
        fw = next((x for x in FRAMEWORKS if x.name == root.subject), None)
        if fw is None:
            return False
        if f.code == "OD201":
            return fw.linked_by([f.subject.split()[0]])
        return "(inconclusive" in f.message and any(
            fw.linked_by([w.strip(",;()")]) for w in f.message.split())
    if root.code in ("OD405", "OD406", "OD407", "OD408") and ", which " in root.message \
            and " needs, is " in root.message:
        # a dependency the loader cannot use (integrity's _broken_dependencies): what names
        # that file — its versions, its "not found", the symbols it would define, the RECORD
        # line of the changed file, the import or probe that died loading it
        dep = os.path.basename(root.subject)
        if f.code == "OD508":
            return any(line.startswith("changed since install") and line.endswith(dep)
                       for line in f.evidence)
        if f.code == "OD124":
            return "SIGBUS" in f.message or "Bus error" in f.message
        return dep in f"{f.subject} {f.message} {' '.join(f.evidence)}"
    if root.code in ("OD405", "OD407", "OD408"):
        return f.code in ("OD508", "OD511")  # the file itself
    if root.code == "OD406" and f.code == "OD508":
        # the truncated library is the file whose hash no longer matches the RECORD
        return any(line.startswith("changed since install") and line.endswith(
            os.path.basename(root.subject)) for line in f.evidence)
    if root.code == "OD514":
        # a requirement not installed explains the import's failure on that very module, not
        # an earlier one (torchrec 1.9.2: fbgemm_gpu's library built for another torch), or
        # on what the error names of it (fairseq2n's "requires Intel oneTBB": tbb)
        m = _NO_MODULE.search(f.message)
        if m is not None and m.group(1).split(".")[0] == root.subject:
            return True
        return f.code == "OD511" and any(
            line.startswith(_NAMES_IT) and line[len(_NAMES_IT):].strip("'\"").lower()
            in f.message.lower() for line in root.evidence)
    if root.code in ("OD307", "OD315") and f.code in _LIBRARY_MISSES:
        # Another torch build brings its own and the CUDA/ROCm libraries, nothing else: an OS
        # library missing beside it (open3d's libusb-1.0.so.0, fairseq2n's libsndfile) is a
        # root of its own that no torch install fixes.
        lib = _missing_library(f)
        if lib is not None:
            return _device_side(lib)
        if f.code != "OD511":
            return True
    if root.code == "OD342" and f.code in ("OD201", "OD220"):
        # TensorFlow's own library needed by a name the installed release does not give it
        # (ITEX 2.15 beside TF 2.21) explains that "not found" — no other missing library
        return any(part in root.message for part in f.message.split()[:1])
    # OD512 likewise: torchao's swallowed `import triton` is no consequence of its CUDA build
    # — but a module of the framework missing is what OD325 says (torch._inductor.…)
    if f.code not in ("OD511", "OD512") or root.cause is Cause.IMPORT_CHAIN or \
            root.code == "OD325":
        return True
    return not _foreign_module(f)


# The evidence line of an OD201 whose library the package's import loaded by path first, and
# that load failed (verdict/observed.py): the library that load missed is read from it.
LOADED_FIRST = "the package's import loaded it first from "

# Findings that say a library was not found, and where each names it.
_LIBRARY_MISSES = ("OD201", "OD202", "OD203", "OD220", "OD511")
_CANNOT_OPEN = re.compile(r"([^\s:'\"(]{1,300}\.so[\w.]{0,40}): cannot open shared object file")


def _missing_library(f: Finding) -> str | None:
    """The library ``f`` says was not found (None: it says something else — an import that
    failed on an undefined symbol, a module)."""
    if f.code == "OD511":
        m = _CANNOT_OPEN.search(f.message)
        return m.group(1) if m else None
    for line in f.evidence:
        # the library is there, and the package's own load of it failed on what it needs
        # (verdict/observed.py): that is the library not found
        if f.code in ("OD201", "OD220") and line.startswith(LOADED_FIRST):
            m = _CANNOT_OPEN.search(line)
            if m:
                return m.group(1)
    return f.subject.split()[0] if f.subject.strip() else None


def _names_device_side(f: Finding) -> bool:
    """Whether an OD514's evidence says the import's error names a library of a device
    build's side (``libnvinfer``: TensorRT)."""
    return any(line.startswith(_NAMES_IT) and _device_side(
        line[len(_NAMES_IT):].strip("'\"") + ".so") for line in f.evidence)


def _device_side(library: str) -> bool:
    """Whether ``library`` belongs to the device side of a build of torch: torch's own
    libraries (libc10_cuda.so, libtorch_hip.so …), a device toolkit's (CUDA and its driver,
    ROCm, CANN) or TensorRT's."""
    from opdoctor.facts.devices import OPENCL, toolkit_of
    from opdoctor.facts.variant import TENSORRT_LIB

    base = os.path.basename(library)
    # TensorRT too: OD307's fix names it beside the CUDA torch (torch-tensorrt); not OpenCL's
    # loader, which no build of torch brings
    return base.startswith(("libtorch", "libc10", "libcaffe2", "libshm")) or \
        toolkit_of(base, []) not in ("", OPENCL) or TENSORRT_LIB.match(base) is not None


def _foreign_module(f: Finding) -> bool:
    """Whether the import error ``f`` reports is a module of another distribution missing
    (``No module named 'triton'`` under torchao), not one of the package's own."""
    m = _NO_MODULE.search(f.message)
    return m is not None and m.group(1).split(".")[0] != f.subject.split(".")[0]


_MANGLED = re.compile(r"_Z[A-Za-z0-9_]{2,2000}")
_USES = re.compile(r"^extension uses: (.{1,3000})$")


def _names(f: Finding) -> set[str]:
    """The symbols a finding names: mangled anywhere, demangled where its evidence says
    "extension uses: …" (the C++11 ABI check's form)."""
    out = set(_MANGLED.findall(" ".join((f.message, *f.evidence))))
    out.update(m.group(1) for e in f.evidence if (m := _USES.match(e.strip())))
    return out


def _owner(f: Finding, roots: list[Finding]) -> Finding:
    """The root a consequence is shown under when several roots explain it: the one whose
    evidence names a symbol the consequence names (a failed load's undefined symbol belongs
    to the root that lists it: an old-ABI string symbol to OD303, a removed function to
    OD304), else the first. Each consequence is shown once."""
    if len(roots) > 1:
        text = " ".join((f.message, *f.evidence))
        for r in roots:
            if any(n in text for n in _names(r)):
                return r
        # else the one naming more of the libraries the consequence names: undefined CUDA and
        # c10::cuda symbols "inconclusive: … see libc10_cuda.so, libcudart.so.12,
        # libusb-1.0.so.0" belong to the CUDA build that needs the first two, not to libusb
        libs = set(_LIBRARY.findall(text))
        if libs:
            return max(roots, key=lambda r: len(libs & set(_LIBRARY.findall(
                " ".join((r.subject, r.message, *r.evidence))))))
    return roots[0]


_LIBRARY = re.compile(r"lib[\w+-]{1,100}\.so(?:\.\d{1,10}){0,4}")
