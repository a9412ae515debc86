"""Stable-ABI extensions (cause 3, static): does the installed torch export every C-shim
function the library imports, and which torch does the library need?

A ``STABLE_TORCH_LIBRARY*`` extension binds to torch only through C functions
(``aoti_torch_*``, ``torch_*``). Each was added to the stable surface in some release; the
installed torch's own headers say which (``#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0``)
and which only CUDA builds declare (``#ifdef USE_CUDA``). A function the installed torch does
not export makes the load fail with "undefined symbol: torch_…". See
:mod:`opdoctor.facts.stable` for how the library and the headers are read.
"""

from __future__ import annotations

from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.stable import (
    ShimDecl,
    read_shim_headers,
    shim_imports,
    version_key,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_DOCS = "https://docs.pytorch.org/docs/stable/notes/libtorch_stable_abi.html"

OD316 = CodeDoc(
    "OD316", "stable-ABI extension needs a newer torch", Severity.ERROR,
    what="Every C-shim function (aoti_torch_*, torch_*) a stable-ABI extension imports is "
    "exported by the installed torch (libtorch_cpu.so and the libraries torch loads).",
    why="The stable ABI is forward compatible only: an extension built against torch X runs "
    "on torch ≥ X. A shim function added after the installed release is missing from it, and "
    "the load fails with 'undefined symbol: torch_…' (torch.ops.load_library raises OSError), "
    "so none of its ops is registered.",
    example="OSError: libfoo.so: undefined symbol: torch_new_list_reserve_size (an extension "
    "built for torch 2.10 on torch 2.9)",
    fix="Install a torch at least as new as the extension needs (pip install 'torch>=X'), or "
    "an older build of the extension made for the installed torch; when building it yourself, "
    "set -DTORCH_TARGET_VERSION to the oldest torch it must run on.",
    references=(_DOCS, "torch/include/torch/csrc/stable/c/shim.h"),
)
OD317 = CodeDoc(
    "OD317", "stable-ABI extension needs the CUDA shim of a CUDA torch", Severity.ERROR,
    what="A stable-ABI extension imports a shim function that torch declares only for CUDA "
    "builds (#ifdef USE_CUDA in the shim headers), and the installed torch is not a CUDA "
    "build.",
    why="A CPU (or ROCm) build of torch never exports aoti_torch_get_current_cuda_stream, "
    "torch_c10_cuda_check_msg and the other CUDA shim functions: an extension built with CUDA "
    "kernels cannot load there, whatever the release. No library path can fix it.",
    example="undefined symbol: aoti_torch_get_current_cuda_stream (torchvision 0.29.1+cu130 "
    "beside torch 2.13.0+cpu)",
    fix="Install matching builds: the CUDA build of torch the extension was made for, or the "
    "extension's CPU build (e.g. from https://download.pytorch.org/whl/cpu).",
    references=(_DOCS, "torch/include/torch/csrc/stable/c/shim.h"),
)
OD318 = CodeDoc(
    "OD318", "stable-ABI extension: minimum torch", Severity.INFO,
    what="For a stable-ABI extension: the oldest torch whose shim declares every function it "
    "imports (the highest TORCH_FEATURE_VERSION gate in the installed torch's headers), and "
    "the torch release whose headers built it (the TORCH_ABI_VERSION it passes to "
    "torch_library_impl).",
    why="A note, not a fault: it tells which torch releases the extension can run on before "
    "anyone installs one (torch < the minimum fails with 'undefined symbol').",
    example="needs torch ≥ 2.12.0 (torch_library_def_with_tags is gated at 2.12.0 in "
    "shim.h); built with torch 2.14.1 headers",
    fix="Nothing to fix; pin 'torch>=<minimum>' in the package metadata.",
    references=(_DOCS,),
)
CODES = (OD316, OD317, OD318)


def _torch_facts(facts: Facts) -> tuple[str, str, str] | None:
    """(torch directory, version, variant) of the target torch; None without one."""
    interp = facts.interpreter
    if interp is None or interp.torch is None:
        return None
    variant = facts.torch_variant
    return interp.torch.directory, interp.torch.version, variant.variant if variant else ""


def stable_imports(facts: Facts) -> list[str]:
    """The C-shim functions this library imports ([] for a classic extension)."""
    if not facts.registration.stable_abi:
        return []
    undefined = [s.name for s in facts.symbol_tables.of_image(facts.image).undefined()]
    return shim_imports(undefined)


def minimum(imports: list[str], decls: dict[str, ShimDecl]) -> tuple[str, str]:
    """(minimum torch, the import that sets it) from the headers' gates ("" when ungated)."""
    gated = [(version_key(decls[n].since), decls[n].since, n) for n in imports
             if n in decls and decls[n].since]
    if not gated:
        return "", ""
    _, since, name = max(gated)
    return since, name


def run(facts: Facts) -> Iterator[Finding]:
    """Judge the imported shim functions against the installed torch's exports and headers."""
    imports = stable_imports(facts)
    env = _torch_facts(facts)
    if not imports or env is None:
        return
    torch_dir, version, variant = env
    decls = read_shim_headers(torch_dir)
    unbound = {s.name for s in facts.binding.unresolved}
    missing = [n for n in imports if n in unbound]
    built = facts.torch_build_version
    built_ev = [f"built with torch {built} headers (TORCH_ABI_VERSION passed to "
                "torch_library_impl / torch_call_dispatcher)"] if built else []
    cuda = [n for n in missing if n in decls and decls[n].cuda_only]
    if cuda and variant != "cuda":
        yield OD317.finding(
            facts.path, f"imports {len(cuda)} CUDA-only shim function(s) that the installed "
            f"torch {version} ({variant or 'non-CUDA'} build) does not export: the library was "
            "built for a CUDA build of torch",
            (*[f"{n}  [declared under #ifdef USE_CUDA in {decls[n].header}; not exported "
               f"by torch {version}]" for n in cuda[:8]], *built_ev),
            fix="install matching builds: the CUDA torch the extension was built for, or the "
            "extension's CPU build (pip install <package> --index-url "
            "https://download.pytorch.org/whl/cpu)")
    newer = [n for n in missing if n not in cuda]
    if newer:
        gated = [n for n in newer if n in decls and decls[n].since
                 and version_key(decls[n].since) > version_key(version)]
        unknown = [n for n in newer if n not in decls]
        ev = [f"{n}  [gated at torch ≥ {decls[n].since} in {decls[n].header}]" for n in gated]
        ev += [f"{n}  [not exported by torch {version}, not declared in its shim headers: "
               "added by a later release]" for n in unknown[:8]]
        ev += [f"{n}  [declared in {decls[n].header} but not exported by torch {version}]"
               for n in newer if n in decls and n not in gated][:4]
        if built and version_key(built) > version_key(version):
            need = f"torch ≥ {built.rsplit('.', 1)[0]} (it was built with torch {built})"
            pin = built.rsplit(".", 1)[0]
        elif gated:
            since = max((decls[n].since for n in gated), key=version_key)
            need, pin = f"torch ≥ {since}", since
        else:
            need, pin = f"a torch newer than {version}", ""
        yield OD316.finding(
            facts.path, f"built for {need}: {len(newer)} stable-ABI shim function(s) are not "
            f"exported by the installed torch {version}; the load fails with "
            f"\"undefined symbol: {newer[0]}\"", (*ev, *built_ev),
            fix=(f"pip install 'torch>={pin}'" if pin else "pip install --upgrade torch")
            + ", or install a build of the extension made for torch " + version)
    if not missing:
        since, name = minimum(imports, decls)
        ev = [f"imports {len(imports)} shim function(s), all exported by torch {version}"]
        if since:
            ev.append(f"highest gate: {name} (TORCH_FEATURE_VERSION ≥ {since} in "
                      f"{decls[name].header})")
        yield OD318.finding(
            facts.path, f"stable-ABI extension: needs torch ≥ {since or '2.10 (stable ABI)'}"
            + (f"; built with torch {built} headers" if built else ""), (*ev, *built_ev))


def section(facts: Facts) -> dict[str, Any]:
    """The stable-ABI facts for the report: imports, minimum torch, build version."""
    imports = stable_imports(facts)
    env = _torch_facts(facts)
    decls = read_shim_headers(env[0]) if env else {}
    since, name = minimum(imports, decls)
    return {"stable_abi": facts.registration.stable_abi, "shim_imports": len(imports),
            "minimum_torch": since, "minimum_set_by": name,
            "built_with_torch": facts.torch_build_version if imports else ""}


def _applies(facts: Facts) -> str:
    if facts.framework_library:
        return f"part of the {facts.framework_library} install, not an operator extension"
    if not facts.registration.stable_abi:
        return "not a stable-ABI extension (no STABLE_TORCH_LIBRARY registrar, no C-shim " \
            "registration import)"
    return ""


CHECK = Check(
    name="stable-abi",
    summary="a stable-ABI extension's C-shim imports are exported by the installed torch; "
    "the torch it needs",
    causes=(Cause.VERSION,),
    codes=CODES,
    run=run,
    section=section,
    applies=_applies,
    budget_s=10.0,  # one .text scan for the build version, the headers read once
)
