"""Static loader findings that the real load disproved.

The static checks emulate the dynamic loader from the library's file alone. A package can do
what no file says: dgl's ``_ffi/base.py`` loads ``libdgl.so`` with ``ctypes.CDLL`` from a path
it computes, and only then imports its Cython module, whose ``DT_NEEDED`` entry ``libdgl.so``
no search path finds. glibc reuses a library already in the process when its name matches, so
the import works — and a static "libdgl.so is not found" (OD201) would send the user to
patchelf for nothing. When the probe ran and its process mapped the library that was "not
found", or mapped the target whose undefined symbols were "inconclusive", those findings are
kept as notes, saying what the real load did; they no longer decide the verdict.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

from opdoctor.facts import Facts
from opdoctor.model import Finding, Severity
from opdoctor.verdict.diagnosis import LOADED_FIRST


def _mapped(facts: Facts) -> tuple[dict[str, str], bool]:
    """The probe's mapped libraries by file name (→ path), and whether the target is one;
    ({}, False) when no probe ran."""
    if not facts.options.probe:
        return {}, False
    res = facts.probe_result()
    if res is None or not res.mapped:
        return {}, False
    by_name = {os.path.basename(m): m for m in res.mapped}
    by_name.update({os.path.basename(os.path.realpath(m)): m for m in res.mapped})
    return by_name, os.path.isfile(facts.path) and res.maps(facts.path)


_SEE = re.compile(r"inconclusive: a dependency is missing and may define them, see ([^)]+)\)")


def _answers_to(path: str, name: str) -> bool:
    """Whether glibc reuses the mapped ``path`` for a ``DT_NEEDED`` entry ``name``: a loaded
    object matches a name by its ``DT_SONAME`` (or the exact path it was opened by), not by its
    file name. TensorFlow 2.21's ``_pywrap_tensorflow_internal.so`` is a shim without a
    SONAME: mapped by ``import tensorflow``, it still answers no library that needs it by that
    name (ITEX's libitex_common.so fails to load, survey 18)."""
    if path == name:
        return True
    from opdoctor.facts.core import read_elf

    # unreadable here: keep what the probe's process showed
    return read_elf(os.path.realpath(path),
                    lambda img: name in [str(v) for v in img.tags.get("DT_SONAME", [])], True)


def _inconclusive_for(message: str) -> list[str]:
    """The missing dependencies an inconclusive OD301 names ("… see libtriton.so)")."""
    m = _SEE.search(message)
    return [d.strip() for d in m.group(1).split(",") if d.strip()] if m else []


def with_failed_first_loads(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with each OD201 / OD220 ("X not found") told what the probe saw: the package's
    import loaded a file named X by its path first, and that load failed. The dependency is
    there; what it needs is not (cuequivariance-ops-torch-cu13: its import preloads
    ``cuequivariance_ops/lib/libcue_ops.so``, which needs libnvrtc.so.13; the extension then
    finds no libcue_ops.so — the headline was "libcue_ops.so not found: patchelf", the CUDA 13
    build second; survey 18)."""
    if not facts.options.probe:
        return list(findings)
    res = facts.probe_result()
    if res is None or not res.failed_loads:
        return list(findings)
    first = {os.path.basename(p): (p, error) for p, _where, error in res.failed_loads}
    out = []
    for f in findings:
        if f.code in ("OD201", "OD220") and f.severity is not Severity.INFO and \
                f.subject in first:
            path, error = first[f.subject]
            f = dataclasses.replace(
                f, message=f"{f.message}; the package's import loaded it from {path} first, "
                f"and that load failed: {error[:200]}",
                evidence=(*f.evidence, f"{LOADED_FIRST}{path}: {error[:300]}"))
        out.append(f)
    return out


def disproved_by_the_load(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with OD201 (a dependency not found) and an inconclusive OD301 (symbols a
    missing dependency may define) made notes when the probe's process mapped that dependency
    (or, for OD301, the library itself, which binds every symbol when it loads)."""
    by_name, target_loaded = _mapped(facts)
    if not by_name:
        return list(findings)
    out: list[Finding] = []
    notes: list[Finding] = []  # after the findings that still stand, as reports list notes
    for f in findings:
        if f.severity is not Severity.INFO and f.code == "OD201" and f.subject in by_name \
                and _answers_to(by_name[f.subject], f.subject):
            f = dataclasses.replace(
                f, severity=Severity.INFO,
                message=f"{f.message} by the loader's search rules, but the real load found "
                f"it already in the process ({by_name[f.subject]}: loaded before by the "
                "package's own code, which glibc reuses by name)")
            notes.append(f)
            continue
        elif (f.severity is not Severity.INFO and f.code == "OD301" and target_loaded):
            # mapped by a load that succeeded: dlopen binds every symbol first (Python's
            # imports and ctypes load RTLD_NOW), so what the static view left undefined was
            # defined in the real process — usearch's import preloads numkong's extension
            # RTLD_GLOBAL by its module's __file__ (survey 23's F1: an error, exit 1, on a
            # package that works)
            count = f.message.split(" undefined symbol(s)")[0]
            why = "a dependency not found there" if "inconclusive" in f.message else \
                "what the package's import loads first defines them"
            f = dataclasses.replace(
                f, severity=Severity.INFO,
                message=f"{count} symbol(s) undefined in the static view ({why}) were bound "
                "by the real load: the library loaded")
            notes.append(f)
            continue
        elif (f.severity is not Severity.INFO and f.code == "OD301"
              and (deps := _inconclusive_for(f.message))
              and all(d in by_name and _answers_to(by_name[d], d) for d in deps)):
            # triton's plugins: libtriton.so, the dependency that was "missing", is in the
            # process once `import triton` ran; the symbols are its to define.
            count = f.message.split(" undefined symbol(s)")[0]
            f = dataclasses.replace(
                f, severity=Severity.INFO,
                message=f"{count} symbol(s) undefined in the static view, where "
                f"{', '.join(deps)} was not found; the real process has "
                f"{'them' if len(deps) > 1 else 'it'} ({', '.join(by_name[d] for d in deps)}), "
                "which the package loads first")
            notes.append(f)
            continue
        out.append(f)
    return out + notes
