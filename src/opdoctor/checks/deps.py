"""Dependencies (cause 2): will the loader find every DT_NEEDED library, and by which rule?

Resolution emulates glibc's search order in the process the library is really loaded into (see
:mod:`opdoctor.facts.loader.search`), so a torch extension's ``libc10.so`` is "already loaded by
import torch" — never the false "not found" that ``ldd`` prints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import (
    Check,
    device_plugin_here,
    device_plugin_severity,
    distribution_reinstall,
    runtime_library_fix,
    vendored_directory_gone,
)
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.devices import toolkit_of
from opdoctor.facts.frameworks import TORCH
from opdoctor.facts.loader.search import (
    RULE_LD_LIBRARY_PATH,
    RULE_PRELOADED,
    RULE_RPATH,
    RULE_RUNPATH,
    DepTree,
    Library,
    Missing,
)
from opdoctor.facts.pkgdir import package_root
from opdoctor.facts.requires import (
    owning_dist,
    requirement_shipping,
    uninstalled_requirements,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_DLOPEN = "glibc ld.so(8), 'Rpath token expansion' and search order"

OD201 = CodeDoc(
    "OD201", "dependency not found", Severity.ERROR,
    what="Every DT_NEEDED library is found by the loader's search (RPATH, LD_LIBRARY_PATH, "
    "RUNPATH, ld.so.cache, default directories), in the process that will load the library.",
    why="A missing dependency makes dlopen fail with 'libfoo.so: cannot open shared object "
    "file: No such file or directory', and the framework then reports the operator as not "
    "registered. A device plugin a package's native code loads only for a device this "
    "machine lacks (MindSpore's GPU and Ascend plugins without their toolkits, no GPU or NPU "
    "here) is never loaded here: its missing libraries are warnings.",
    example="OSError: libmyop_dep.so: cannot open shared object file: No such file or directory",
    fix="Ship the dependency next to the library and link with -Wl,-rpath,'$ORIGIN' (or "
    "`patchelf --set-rpath '$ORIGIN' libmyop.so`), install it system-wide and run ldconfig, "
    "or export LD_LIBRARY_PATH for the job.",
    references=(_DLOPEN, "https://man7.org/linux/man-pages/man8/ld.so.8.html"),
)
OD202 = CodeDoc(
    "OD202", "dependency found only through LD_LIBRARY_PATH", Severity.WARNING,
    what="No dependency is found only because of the caller's LD_LIBRARY_PATH.",
    why="It works in this shell and breaks in the job, the service or the other node whose "
    "environment does not carry the same variable.",
    example="libmyop_dep.so => /opt/deps/libmyop_dep.so [LD_LIBRARY_PATH]",
    fix="Embed the location: -Wl,-rpath,'$ORIGIN/<relative dir>' at link time or "
    "`patchelf --set-rpath '$ORIGIN/<relative dir>' lib.so`; or install the dependency where "
    "ld.so.cache finds it.",
    references=(_DLOPEN,),
)
OD203 = CodeDoc(
    "OD203", "dependency missing because RUNPATH is not inherited", Severity.ERROR,
    what="A library needed by a dependency is not found, although it sits in a directory "
    "listed in the DT_RUNPATH of the library that loaded that dependency.",
    why="Unlike DT_RPATH, DT_RUNPATH only applies to the object's own direct dependencies. "
    "Modern linkers emit RUNPATH for -rpath (--enable-new-dtags), so a plugin whose own "
    "dependency has further dependencies in the same folder fails to load.",
    example="libA (RUNPATH $ORIGIN/deps) → libB → libC: 'libC.so: cannot open shared object file'",
    fix="Give the intermediate library its own RUNPATH (`patchelf --set-rpath '$ORIGIN' "
    "deps/libB.so`), or link the top library with -Wl,--disable-new-dtags to get an inherited "
    "DT_RPATH, or add the top library's own DT_NEEDED on libC.",
    references=(_DLOPEN, "https://sourceware.org/bugzilla/show_bug.cgi?id=13945"),
)
OD204 = CodeDoc(
    "OD204", "RPATH/RUNPATH entry does not exist", Severity.INFO,
    what="Every directory in the library's DT_RPATH / DT_RUNPATH exists on this machine.",
    why="A non-existent entry is usually the build machine's path leaking into the binary "
    "(/home/ci/build/...): harmless while something else finds the dependencies, the reason "
    "they are not found when nothing does.",
    example="RUNPATH /home/builder/myop/build/lib (does not exist)",
    fix="Use $ORIGIN-relative entries: `patchelf --set-rpath '$ORIGIN/../lib' lib.so`; in "
    "CMake set INSTALL_RPATH to $ORIGIN-relative paths and BUILD_WITH_INSTALL_RPATH.",
    references=(_DLOPEN,),
)
OD205 = CodeDoc(
    "OD205", "framework libraries taken from another installation", Severity.ERROR,
    what="The libraries `import torch` loads are torch's own, from its torch/lib directory.",
    why="LD_LIBRARY_PATH is searched before a library's DT_RUNPATH: a directory holding another "
    "torch's libraries (another environment's torch/lib, a libtorch download) makes `import "
    "torch` load that torch's libtorch_python.so, libtorch_cpu.so, libc10.so … under this "
    "torch's Python code. The import fails on names of torch's own modules, or an extension "
    "built for this torch meets another release's symbols — and rebuilding it changes nothing. "
    "LD_PRELOAD does the same earlier still: its objects are mapped before the program's "
    "dependencies, and torch's own libraries then bind the preloaded one of the same name.",
    example="import torch: ModuleNotFoundError: No module named 'torch._custom_class_base' "
    "(LD_LIBRARY_PATH=/other/venv/lib/python3.11/site-packages/torch/lib)",
    fix="Remove that directory from LD_LIBRARY_PATH (that library from LD_PRELOAD), or unset "
    "it for the job: torch finds its own libraries through its RUNPATH.",
    references=(_DLOPEN,),
)

CODES = (OD201, OD202, OD203, OD204, OD205)


# torch's own build products (the framework table's library names, and the two helper
# libraries torch/lib ships besides): not the runtimes it bundles (libgomp, libcudart)
_TORCH_OWN = re.compile("(?:" + "|".join((*TORCH.needed_prefixes, "libshm", "libcaffe2"))
                        + r")\w*\.so")


def _framework_from_elsewhere(facts: Facts) -> Iterator[Finding]:
    """OD205: libraries the emulated `import torch` takes from another torch although torch's
    own lib directory holds a file of that name — from an LD_LIBRARY_PATH directory (survey
    22's E2: another venv's torch/lib — `check --package torch` said "No problem found" while
    `import torch` failed, and an extension built for this torch got "rebuild it against this
    torch"), or preloaded by LD_PRELOAD, which torch's own libraries then bind by name (survey
    24's F2: torch 2.14.1's libtorch_cpu.so in a torch 2.13 job)."""
    interp = facts.interpreter
    torch = interp.torch if interp is not None else None
    if torch is None or not torch.c_extension:
        return
    own = os.path.realpath(os.path.join(os.path.dirname(torch.c_extension), "lib"))

    def others(by: str, dirs: set[str] | None) -> list[Library]:
        # torch's own build products only: a system libgomp.so.1 on LD_LIBRARY_PATH (a Docker
        # image's /usr/lib/x86_64-linux-gnu) in place of the copy torch bundles is no other
        # torch
        return [lib for lib in facts.process.preloaded if lib.preloaded_by == by
                and _TORCH_OWN.match(os.path.basename(lib.path))
                and (os.path.realpath(os.path.dirname(lib.path)) in dirs - {own} if dirs
                     is not None else os.path.realpath(os.path.dirname(lib.path)) != own)
                and os.path.exists(os.path.join(own, os.path.basename(lib.path)))]

    pre = others("LD_PRELOAD", None)
    if pre:
        given = [e for e in re.split(r"[:\s]+", facts.environ.get("LD_PRELOAD", "")) if e]
        mine = [e for e in given if os.path.realpath(os.path.dirname(e)) in
                {os.path.realpath(os.path.dirname(lib.path)) for lib in pre}] or \
            [lib.path for lib in pre[:1]]
        yield _other_torch(pre, own, torch.version, "LD_PRELOAD loads another torch's "
                           "libraries into every process", "before torch {v}'s own ({own}), "
                           "which then bind to them by name", "LD_PRELOAD's objects are mapped "
                           "before the program's dependencies: a later DT_NEEDED of the same "
                           "name is that object", f"remove {', '.join(mine[:3])} from "
                           "LD_PRELOAD (or unset it for the job): torch {v} loads its own "
                           "libraries; nothing to rebuild")
        return
    entries = [e for e in facts.environ.get("LD_LIBRARY_PATH", "").split(":") if e]
    taken = others("import torch", {os.path.realpath(e) for e in entries}) if entries else []
    if taken:
        yield _other_torch(taken, own, torch.version, "LD_LIBRARY_PATH makes `import torch` "
                           "load another torch's libraries", "not torch {v}'s own ({own})",
                           "LD_LIBRARY_PATH is searched before torch's RUNPATH ($ORIGIN)",
                           f"remove {os.path.dirname(taken[0].path)} from LD_LIBRARY_PATH (or "
                           "unset it for the job): torch {v} finds its own libraries through "
                           "its RUNPATH; nothing to rebuild")


def _other_torch(libs: list[Library], own: str, version: str, what: str, whose: str,
                 why: str, fix: str) -> Finding:
    """The OD205 finding for ``libs`` of another torch (``whose`` and ``fix`` may name ``{v}``,
    this torch's version, and ``{own}``, its lib directory); ``why``: how they got in."""
    where = os.path.dirname(libs[0].path)
    rule = "LD_PRELOAD" if what.startswith("LD_PRELOAD") else "LD_LIBRARY_PATH"
    names = [os.path.basename(lib.path) for lib in libs]
    return OD205.finding(
        where, f"{what}: {', '.join(names[:4])}{' …' if len(names) > 4 else ''} from {where}, "
        + whose.replace("{v}", version).replace("{own}", own),
        [*(f"{n} => {lib.path} [{rule}]; torch's own: {os.path.join(own, n)}"
           for n, lib in zip(names[:6], libs, strict=False)), why],
        fix=fix.replace("{v}", version).replace("{own}", own))


def _attempt_lines(miss: Missing) -> list[str]:
    lines = [f"needed by {miss.requested_by}"]
    for a in miss.attempts:
        lines.append(f"tried {a.path} [{a.rule}]: {a.outcome}")
    return lines


def _other_package_of(miss: Missing, facts: Facts) -> str:
    """The other top-level package a missing library of the target belongs to (see
    ``Facts.imported_package_dirs``; "" otherwise)."""
    if os.path.realpath(miss.requested_by) != os.path.realpath(facts.path):
        return ""
    return next((package for package, _rest in facts.imported_package_dirs), "")


def _recorded_but_missing(miss: Missing, facts: Facts) -> tuple[str, str, str] | None:
    """(dist-info, site, RECORD row) when a file the loader tried for ``miss`` by an RPATH or
    RUNPATH directory is listed by an installed distribution's RECORD and is not on disk:
    that distribution's install is incomplete (survey 22's A2: an interrupted `pip install
    --force-reinstall torch` left torch/lib without libtorch_cuda.so — the fix was "find it,
    then patchelf torchvision", and `find` found the copy in pip's stash ~orch/)."""
    tried = [a.path for a in miss.attempts
             if a.rule in (RULE_RPATH, RULE_RUNPATH) and os.path.isabs(a.path)]
    # torch's own libraries are found because `import torch` loaded them from torch/lib
    # (torchvision's _C_stable.so has no RPATH there): that is where one is missing from
    interp = facts.interpreter
    if interp is not None and interp.torch is not None and interp.torch.c_extension and \
            _TORCH_OWN.match(miss.name):
        tried.append(os.path.join(os.path.dirname(interp.torch.c_extension), "lib", miss.name))
    for path in tried:
        if not os.path.exists(path):
            owner = owning_dist(path)
            if owner is not None:
                return owner
    return None


def _pip_stash(site: str, row: str) -> list[str]:
    """The directories an interrupted pip left in ``site`` for the top-level directory of
    ``row`` (pip renames `torch/` to `~orch/` while it replaces it)."""
    top = row.split("/", 1)[0]
    try:
        names = os.listdir(site)
    except OSError:
        return []
    return sorted(os.path.join(site, n) for n in names
                  if n.startswith("~") and len(top) > 1 and n[1:].startswith(top[1:]))


def _incomplete_install_fix(miss: Missing, facts: Facts) -> str:
    """The fix for a library missing from its own distribution's install ("" otherwise; a
    wheel's temporary copy is no install: the wheel's own RECORD check names the file)."""
    owner = None if facts.options.wheel else _recorded_but_missing(miss, facts)
    if owner is None:
        return ""
    info, site, row = owner
    stash = _pip_stash(site, row)
    return (f"{os.path.basename(info)}'s RECORD lists {row} and the file is missing: the "
            f"install is incomplete (an interrupted or failed pip run); "
            f"{distribution_reinstall(facts, info)}"
            + (f", then delete what the interrupted pip left: rm -rf {' '.join(stash)}"
               if stash else "") + "; no RPATH edit or copy of the file repairs it")


def _fix_for(miss: Missing, facts: Facts) -> str:
    req = miss.requested_by
    interp = facts.interpreter
    incomplete = _incomplete_install_fix(miss, facts)
    if incomplete:
        return incomplete
    shipped = _requirement_shipping(miss, facts)  # named by the library's own distribution
    if shipped:
        return shipped
    runtime = runtime_library_fix(miss.name, [m.name for m in facts.process.tree.missing])
    if runtime:
        return runtime
    if miss.name.startswith("libtensorflow") and (interp is None or not interp.tensorflow_dir):
        exe = interp.invoke if interp else (facts.options.python or "the interpreter")
        return (f"tensorflow is not installed for {exe}, so nothing loads {miss.name} before "
                "this op library (tf.load_op_library runs after `import tensorflow`): install "
                "tensorflow there, or pass --python with the interpreter that has it")
    if miss.name.startswith(("libc10", "libtorch")) and (interp is None or interp.torch is None):
        exe = interp.invoke if interp else (facts.options.python or "the interpreter")
        return (f"torch is not installed for {exe}, so nothing loads {miss.name} before this "
                "library: install torch in that environment, or pass --python with the "
                "interpreter that has it")
    owner = _other_package_of(miss, facts)
    if owner:
        # paddle2onnx's extension: RUNPATH …/site-packages/paddle/base, NEEDs libpaddle.so,
        # and its __init__.py imports paddle first — which is not installed here.
        return (f"{miss.name} is the `{owner}` package's (the library's RUNPATH names "
                f"site-packages/{owner}/… of its build environment), and the package imports "
                f"`{owner}` before this module: install the distribution that provides `import "
                f"{owner}` in this environment (the release this one was built against); no "
                "RPATH edit brings it")
    beside = os.path.join(os.path.dirname(req), miss.name)
    if facts.options.wheel:
        # What was checked is a copy of the wheel unpacked to a temporary directory: a patchelf
        # of it, or an LD_LIBRARY_PATH to it, fixes nothing (survey 20's pillow wheel).
        wheel = os.path.basename(facts.options.wheel)
        if os.path.isfile(beside):
            return (f"{miss.name} is beside {os.path.basename(req)} in {wheel}, and the loader "
                    "does not look there without an RPATH: a package that loads it first "
                    "(ctypes / torch.ops.load_library) never meets this; to load this file on "
                    "its own, build the wheel with an RPATH of $ORIGIN for it")
        return (f"{miss.name} is neither in {wheel} nor found on this system: install it where "
                "the wheel is to run (the system package that provides it), or vendor it into "
                "the wheel (`auditwheel repair` copies it into the wheel and sets the RPATH "
                "to it); the files checked here are a temporary copy of the wheel, which no "
                "edit fixes")
    if os.path.isfile(beside):
        # torchcodec's libtorchcodec_custom_ops7.so NEEDs libtorchcodec_core7.so, which sits
        # in the same directory: the package loads it first (a process that has it mapped
        # finds it by its soname), so only a load of this file on its own misses it.
        # In package mode that is what this run does (torchcodec's --package run advised
        # running --package): the advice is for a file checked on its own.
        order = "" if facts.options.package else (
            "; check the package with `opdoctor check --package <name>` to see the order it "
            "really loads them")
        return (f"{miss.name} is beside {os.path.basename(req)} in {os.path.dirname(req)}, and "
                "the loader does not look there without an RPATH: a package that loads it "
                "first (ctypes / torch.ops.load_library) never meets this; to load this file "
                f"on its own, load {beside} first or `patchelf --set-rpath '$ORIGIN' {req}`"
                + order)
    libs = next((os.path.normpath(os.path.dirname(a.path)) for a in miss.attempts
                 if a.rule in (RULE_RPATH, RULE_RUNPATH) and a.outcome ==
                 "directory does not exist" and os.path.dirname(a.path).endswith(".libs")), "")
    if libs:
        # auditwheel's <dist>.libs/ beside the package, named by the extension's RPATH, is
        # gone: the package was copied (or deleted) without it — cv2/ copied alone, 7 of its
        # 15 libraries nowhere (survey 21's W12); no patchelf brings them
        return vendored_directory_gone(libs)
    return (f"find it (`find / -name '{miss.name}*' 2>/dev/null`), then either "
            f"`patchelf --set-rpath '$ORIGIN/<dir relative to {os.path.basename(req)}>' {req}`, "
            f"link with -Wl,-rpath,'$ORIGIN/...', or `export LD_LIBRARY_PATH=<its dir>`")


def _requirement_shipping(miss: Missing, facts: Facts) -> str:
    """The fix when a requirement of the library's own distribution is not installed and the
    library looks for the missing one inside site-packages, where that requirement installs
    its files (sherpa-onnx without sherpa-onnx-core, a torch CUDA wheel without nvidia-*);
    "" otherwise."""
    found = _shipping(miss, facts)
    if found is None:
        return ""
    req, dist, where = found
    fix = (f"pip install '{req}': {dist} requires it and it is not installed (installed with "
           f"--no-deps, or copied without it); {os.path.basename(miss.requested_by)} looks "
           f"for {miss.name} in {where}, inside the site-packages where that distribution "
           "installs its files — no RPATH edit brings it")
    # many of them absent (survey 22's F6: a CUDA torch installed with --no-deps lacks eleven
    # nvidia-* wheels, one OD201 each): one install of the distribution brings them all
    lacking = _lacking_requirements(miss.requested_by, facts)
    if lacking is not None:
        name, version, absent, _info = lacking
        shown = ", ".join(a for a, _spec in absent[:4]) + (" …" if len(absent) > 4 else "")
        fix += (f". {name} {version} lacks {len(absent)} of its requirements ({shown}): `pip "
                f"install '{name}=={version}'` without --no-deps installs them all")
    return fix


def _lacking_requirements(path: str, facts: Facts
                          ) -> tuple[str, str, list[tuple[str, str]], str] | None:
    """(distribution, release, its uninstalled requirements, its dist-info) when the
    distribution that installed ``path`` lacks three or more of its requirements; None
    otherwise."""
    from opdoctor.facts.pkgdir import distribution

    owner = owning_dist(path)
    if owner is None:
        return None
    interp = facts.interpreter
    absent = uninstalled_requirements(owner[0], interp.sys_path if interp else ())
    if len(absent) < 3:
        return None
    name, version = distribution(owner[0])
    return name, version, absent, owner[0]


def _without_its_requirements(misses: list[Missing], facts: Facts) -> Finding | None:
    """One OD201 for what `import torch` cannot find when torch's distribution lacks three or
    more of its requirements and they ship what is missing (survey 22's F6: a CUDA torch
    installed with `pip install --no-deps` — eleven OD201s, each fix one nvidia-* wheel, one
    of them "find it, then patchelf"; one install of torch with its requirements is the fix).
    None when that is not the case (each miss is then reported by itself)."""
    lacking = _lacking_requirements(misses[0].requested_by, facts) if len(misses) >= 2 \
        else None
    if lacking is None:
        return None
    name, version, absent, info = lacking
    lines, shipped = [], 0
    for m in misses:
        found = _shipping(m, facts)
        shipped += found is not None
        lines.append(f"{m.name} (needed by {os.path.basename(m.requested_by)}): " + (
            f"the {found[0]} wheel installs it in {found[2]}" if found else
            "not found by its search path"))
    if not shipped:
        return None  # the requirements absent say nothing of these libraries
    names = [m.name for m in misses]
    shown = ", ".join(names[:4]) + (" …" if len(names) > 4 else "")
    return OD201.finding(
        names[0], f"{len(names)} libraries that `import torch` loads are not found ({shown}): "
        f"{name} {version} is installed without {len(absent)} of its requirements, and torch "
        "itself cannot be imported",
        [*lines,
         f"not installed: {', '.join(a + spec for a, spec in absent)} (Requires-Dist of "
         f"{os.path.basename(info)})",
         "the emulated `import torch` (torch's _C extension and what it NEEDs) stops there, "
         "before any extension is loaded"],
        fix=f"`pip install '{name}=={version}'` without --no-deps installs its "
        f"{len(absent)} missing requirements (installed with --no-deps, or copied without "
        "them); no RPATH edit or LD_LIBRARY_PATH brings them")


def _shipping(miss: Missing, facts: Facts) -> tuple[str, str, str] | None:
    """:func:`requirement_shipping` of ``miss``: (requirement, its distribution, the directory
    inside site-packages it installs the file in), or None."""
    looked = [os.path.dirname(a.path) for a in miss.attempts
              if a.rule in (RULE_RPATH, RULE_RUNPATH) and os.path.isabs(a.path)]
    interp = facts.interpreter
    return requirement_shipping(miss.requested_by, miss.name, looked,
                                interp.sys_path if interp else ())


def _loaded_first_by_the_package(name: str, facts: Facts) -> tuple[str, str] | None:
    """(the file's path in the package, the load statement) when a missing dependency is a file
    the package ships elsewhere in its tree and the package's import makes a library load whose
    path nothing here computes: dgl 1.1.3's ``_ffi/base.py:39 ctypes.CDLL(lib_path[0])`` loads
    ``dgl/libdgl.so`` (found by ``libinfo.find_lib_path()``) before the Cython module that
    NEEDs it — the static view's "not found" with a patchelf fix was a false alarm. None
    otherwise (the file is not in the package, or every load's path is known)."""
    from opdoctor.facts.pychain import UNEVALUATED

    chain = facts.chain if facts.options.package else None
    if chain is None or not chain.package_dir:
        return None
    loads = [lk for lk in chain.links if lk.kind in ("cdll", "load_library")
             and lk.problem == UNEVALUATED and not lk.lazy]
    shipped = [f for f in chain.extensions_on_disk if os.path.basename(f) == name]
    if not loads or not shipped:
        return None
    rel = os.path.relpath(shipped[0], os.path.dirname(chain.package_dir))
    load = loads[0]
    return rel, f"{os.path.relpath(load.file, os.path.dirname(chain.package_dir))}:{load.line} " \
        f"{' '.join(load.text.split())[:120]}"


def tree_section(tree: DepTree, context: str) -> dict[str, Any]:
    """The dependency tree as plain data for the report (JSON and text -v).

    Each library's own needs are listed once, under its first occurrence (depth first, in
    DT_NEEDED order); a later occurrence carries ``"listed_above": true`` and no ``needed``.
    Expanding every occurrence (as ``ldd``-style trees do) grows with the paths through the
    graph, not the libraries: MindSpore 2.10's ``_c_expression`` gave 75,923 nodes for 34
    libraries, a 26 MB JSON report and seconds of encoding. A repeated leaf (no needs of its
    own) carries no marker."""
    expanded: set[str] = set()

    def node(lib: Library, depth: int) -> dict[str, Any]:
        d: dict[str, Any] = {"name": lib.name, "path": lib.path, "rule": lib.rule}
        if lib.preloaded_by:
            d["rule"] = f"{RULE_PRELOADED} by {lib.preloaded_by}"
        if lib.path in expanded:
            if tree.edges.get(lib.path):  # a leaf has nothing to refer to
                d["listed_above"] = True
            return d
        if depth > 64:  # a guard only: each library is expanded once, so depth ≤ libraries
            return d
        expanded.add(lib.path)
        kids = []
        for name, dep in tree.edges.get(lib.path, []):
            if isinstance(dep, Missing):
                kids.append({"name": name, "path": None, "rule": "not found"})
            elif dep.preloaded_by:
                kids.append({"name": name, "path": dep.path,
                             "rule": f"{RULE_PRELOADED} by {dep.preloaded_by}"})
            else:
                kids.append(node(dep, depth + 1))
        d["needed"] = kids
        return d

    return {"context": context, "tree": node(tree.root, 0),
            "found": sum(1 for lib in tree.order[1:]), "missing": len(tree.missing)}


def _a_python_extension(facts: Facts) -> bool:
    """Whether the target exports a ``PyInit_`` (Python imports it by itself)."""
    from opdoctor.facts.core import extension_name

    own, others = facts.pyinit_exports(facts.path, extension_name(facts.path))
    return own or bool(others)


def run(facts: Facts) -> Iterator[Finding]:
    """Resolve the dependency tree and report what is missing or fragile."""
    proc = facts.process
    tree = proc.tree
    # One OD201 per missing name, however many libraries need it (torch_npu: libhccl.so is
    # needed by three of its libraries; twelve findings told the same story).
    others: dict[str, list[str]] = {}
    for miss in tree.missing:
        others.setdefault(miss.name, []).append(miss.requested_by)
    told: set[str] = set()
    plugin = device_plugin_here(facts)  # (others' names are the tree's misses, in order)
    order = list(tree.missing)
    if plugin:
        # the toolkit's libraries first: the plugin of MindSpore's Ascend backend led with
        # "_c_dataengine….so is not found" — MindSpore's own module, which its import has
        # loaded before the plugin — instead of CANN's libascendcl.so (survey 20)
        order.sort(key=lambda m: not toolkit_of(m.name, list(others)))
    # (read once: code Python imports or loads by itself — an extension module, an op
    # library — is loaded alone, not as part of another extension's load)
    alone = facts.imports_as_code(facts.path) if tree.missing else True
    if alone and tree.missing and not _a_python_extension(facts):
        # …but a library that needs a framework and is no extension module may be one that an
        # extension module of its package NEEDs (dm-reverb's libcheckpoint_cc_proto.so, needed
        # by libpybind.so): asked below whether that load brings what it misses
        alone = False
    for miss in order:
        ev = _attempt_lines(miss)
        if miss.exists_in:
            for path, why in miss.exists_in:
                ev.append(f"exists at {path} — listed in the {why}, which is not inherited")
            yield OD203.finding(miss.name, f"{miss.name} (needed by "
                                f"{os.path.basename(miss.requested_by)}) is not found: it is "
                                "only in a RUNPATH directory of another library", ev)
            continue
        if miss.name in told:
            continue
        told.add(miss.name)
        users = list(dict.fromkeys(others[miss.name]))
        ev += [f"also needed by {u}" for u in users[1:]]
        hosts = [] if alone else [facts.load_group_finds(u, miss.name) for u in users]
        if hosts and all(hosts):
            ext, where = hosts[0]  # type: ignore[misc]
            home = package_root(where, levels=3)
            found = os.path.relpath(where, os.path.dirname(home)) if home else where
            yield OD201.finding(
                miss.name, f"{miss.name} (needed by "
                f"{', '.join(os.path.basename(u) for u in users)}) is not found by "
                f"{'its' if len(users) == 1 else 'their'} own search path: "
                f"{'it loads' if len(users) == 1 else 'they load'} as part of "
                f"{os.path.basename(ext)}'s load, which loads {found} first",
                [*ev, f"{os.path.basename(ext)}'s load: {found} is loaded before "
                 f"{os.path.basename(users[0])}'s needs are looked up, and ld.so finds a "
                 "loaded library by its name"],
                severity=Severity.INFO,
                fix=f"nothing, for the package's own import; to load "
                f"{os.path.basename(users[0])} by itself (ctypes), load {found} first or set "
                "its RPATH to $ORIGIN")
            continue
        first = _loaded_first_by_the_package(miss.name, facts)
        if first:
            in_pkg, load = first
            yield OD201.finding(
                miss.name, f"{miss.name} (needed by "
                f"{', '.join(os.path.basename(u) for u in users)}) is not found by a search "
                f"path; the package ships it ({in_pkg}) and probably loads it first",
                [*ev, f"in the package: {in_pkg}",
                 f"{load}: a library load whose path is computed at run time"],
                severity=Severity.WARNING,
                fix=f"nothing to fix if the package loads {in_pkg} before this library (a "
                "process that has it mapped finds it by its name): run the check with the probe "
                "(it imports the package as a job does) to see; if it does not, set an RPATH "
                "to its directory")
            continue
        if plugin:
            toolkit, device, evidence = plugin
            yield OD201.finding(
                miss.name, f"{miss.name} (needed by "
                f"{', '.join(os.path.basename(u) for u in users)}) is not found: "
                f"{os.path.basename(facts.path)} is {'an' if toolkit[0] in 'AEIOU' else 'a'} "
                f"{toolkit} device plugin of its package, "
                f"loaded only on a machine with an {device} (this one has none)",
                [*ev, *evidence], severity=device_plugin_severity(facts),
                fix=f"nothing to fix on this machine, which never loads it; where the "
                f"package runs on an {device}: " + (_fix_for(miss, facts)))
            continue
        yield OD201.finding(miss.name, f"{miss.name} (needed by "
                            f"{', '.join(os.path.basename(u) for u in users)}) is not found",
                            ev, fix=_fix_for(miss, facts))
    yield from _framework_from_elsewhere(facts)
    unfound: dict[str, Missing] = {}
    for miss in proc.framework_missing:
        if miss.name not in told and miss.name not in others:
            unfound.setdefault(miss.name, miss)
    bundle = _without_its_requirements(list(unfound.values()), facts)
    if bundle is not None:
        yield bundle
        unfound.clear()
    for miss in unfound.values():
        yield OD201.finding(
            miss.name, f"{miss.name} (needed by {os.path.basename(miss.requested_by)}, which "
            "`import torch` loads) is not found: torch itself cannot be imported",
            [*_attempt_lines(miss), "the emulated `import torch` (torch's _C extension and "
             "what it NEEDs) stops there, before any extension is loaded"],
            fix=_fix_for(miss, facts))
    for lib in tree.order[1:]:
        if lib.rule == RULE_LD_LIBRARY_PATH:
            yield OD202.finding(lib.name, f"{lib.name} is found only through LD_LIBRARY_PATH",
                                (f"{lib.name} => {lib.path} [LD_LIBRARY_PATH]",
                                 f"needed by {lib.requested_by}"))
    for lib in [tree.root, *[x for x in tree.order[1:] if not x.preloaded_by]]:
        for kind, entries in (("RUNPATH", lib.runpath), ("RPATH", lib.rpath)):
            for entry in entries:
                if "$" in entry and "$ORIGIN" not in entry and "${ORIGIN}" not in entry:
                    continue
                d = entry.replace("${ORIGIN}", "$ORIGIN").replace(
                    "$ORIGIN", os.path.dirname(lib.path))
                if not os.path.isdir(d):
                    # An $ORIGIN entry is relative already: a build tree's layout (Bazel's
                    # runfiles in tensorflow-io), not a build machine's path to rewrite.
                    relative = "$ORIGIN" in entry.replace("${ORIGIN}", "$ORIGIN")
                    yield OD204.finding(lib.path, f"{kind} entry {entry} of "
                                        f"{os.path.basename(lib.path)} does not exist",
                                        (f"{kind}: {':'.join(entries)}", f"{d}: no such directory"),
                                        fix="nothing to fix while the dependencies are found "
                                        "otherwise (an $ORIGIN-relative entry for a directory "
                                        "of the build tree's layout); if one is not (OD201), "
                                        "point the entry at where it is installed"
                                        if relative else None)


CHECK = Check(
    name="dependencies",
    summary="every DT_NEEDED library is found as ld.so would, in the framework's process",
    causes=(Cause.LIBRARY_PATH,),
    codes=CODES,
    run=run,
    section=lambda facts: tree_section(facts.process.tree, facts.process.context),
)
