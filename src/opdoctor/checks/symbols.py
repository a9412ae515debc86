"""Symbols and versions (cause 3): will every symbol bind, in the versions the library asks for?

Binding happens in the emulated process (interpreter + torch + the library's own tree) through
the ELF hash tables. Unresolved torch symbols get their own code, with what the installed torch
exports under the same name: that is what "built against another torch" looks like.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import (
    Check,
    device_plugin_here,
    device_plugin_severity,
    installed_release_fix,
)
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.demangle import demangle_all
from opdoctor.facts.elf.dynsym import Sym
from opdoctor.facts.elf.image import ElfImage
from opdoctor.model import Cause, Finding, Severity

OD301 = CodeDoc(
    "OD301", "undefined symbols", Severity.ERROR,
    what="Every non-weak undefined dynamic symbol is defined by a library in the process "
    "(global scope, then the library's own dependency tree), as ld.so binds them at load.",
    why="ctypes and torch.ops.load_library dlopen with RTLD_NOW: a single unresolved symbol "
    "fails the whole load with 'undefined symbol: …', and no operator gets registered.",
    example="OSError: libmyop.so: undefined symbol: _Z15helper_functionv",
    fix="Link the library that defines the symbol (-lfoo) or add the missing source file to the "
    "build; for C functions called from C++ check the extern \"C\" declarations.",
    references=("nm -D --undefined-only lib.so", "https://man7.org/linux/man-pages/man3/dlopen.3.html"),
)
OD302 = CodeDoc(
    "OD302", "required symbol version not found", Severity.ERROR,
    what="Every version the library requires (.gnu.version_r) is defined (.gnu.version_d) by "
    "the library that is loaded under that name.",
    why="The library was linked against a newer dependency than the one it runs with — the "
    "classic case is a compiler newer than the runtime libstdc++ ('GLIBCXX_3.4.32 not found'), "
    "or a newer glibc on the build machine.",
    example="ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not "
    "found (required by libmyop.so)",
    fix="Build with the toolchain of the oldest target system (e.g. the manylinux image), or "
    "ship/load the newer runtime (conda's libstdcxx-ng, LD_PRELOAD the newer libstdc++.so.6).",
    references=("https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html",
                "readelf -V lib.so"),
)
OD304 = CodeDoc(
    "OD304", "built against another torch", Severity.ERROR,
    what="Every c10::/at::/torch:: symbol the extension uses is exported by the installed torch.",
    why="torch has no stable C++ ABI: an extension compiled against one torch version refers "
    "to functions whose signatures (and so mangled names) change in the next; the load fails "
    "with 'undefined symbol: _ZN3c10…'.",
    example="OSError: libmyop.so: undefined symbol: _ZN3c109alloc_cpuEi",
    fix="Rebuild the extension against the installed torch (pip install --no-build-isolation "
    "-e . in the same environment), or install the torch version it was built for.",
    references=("https://pytorch.org/docs/stable/notes/extending.html",),
)

OD430 = CodeDoc(
    "OD430", "undefined symbols of the library's own code (incomplete build)", Severity.ERROR,
    what="No undefined symbol belongs to the library's own code: a namespace the library "
    "itself defines symbols in, that no loaded library defines — nor a NEEDed library that "
    "sits beside it and the loader does not find (torchcodec's core library: the symbols are "
    "linked in, to it; OD201 reports it not found).",
    why="A function of the project is declared and called but its definition was never "
    "linked in — a source file left out of the sources list, an object not linked. No "
    "version of any dependency can provide it; dlopen fails with 'undefined symbol'.",
    example="OSError: libtinyop.so: undefined symbol: _ZN6tinyop12helper_scaleEd "
    "(tinyop::helper_scale(double), defined in helper.cpp, which the build forgot)",
    fix="Add the source file that defines it to the extension's sources (setup.py "
    "sources=[…], CMake add_library(… helper.cpp)) or link the object/static library that "
    "has it; `nm -C --defined-only *.o | grep NAME` finds the file.",
    references=("nm -D --undefined-only lib.so",),
)

OD432 = CodeDoc(
    "OD432", "torch op library not linked to torch's libraries", Severity.ERROR,
    what="The torch symbols a library uses are defined by torch libraries it lists in "
    "DT_NEEDED (libc10.so, libtorch_cpu.so, libtorch.so …).",
    why="`import torch` loads its libraries with RTLD_LOCAL: their symbols bind only for "
    "libraries that name them in DT_NEEDED. A library compiled against the installed torch's "
    "headers but linked without `-lc10 -ltorch_cpu -ltorch` has the right symbols, and "
    "torch.ops.load_library still fails with 'undefined symbol: _ZN3c10…' — which reads like a "
    "torch release mismatch (OD304) but is a link line without torch.",
    example="g++ -shared op.cpp -o libop.so $(torch include flags)  # no -L…/torch/lib -lc10 "
    "-ltorch_cpu -ltorch",
    fix="Link torch's libraries: `-L$(python -c 'import torch, os; print(os.path.join(os."
    "path.dirname(torch.__file__), \"lib\"))') -lc10 -ltorch_cpu -ltorch` (torch.utils."
    "cpp_extension's CppExtension adds them; in CMake find_package(Torch) and "
    "target_link_libraries(op ${TORCH_LIBRARIES})).",
    references=("https://pytorch.org/tutorials/advanced/torch_script_custom_ops.html",
                "readelf -d lib.so | grep NEEDED"),
)

CODES = (OD301, OD302, OD304, OD430, OD432)

TORCH_NS = re.compile(r"^(?:c10|at|torch|caffe2)::")


def _signature_prefix(mangled: str) -> str:
    """The mangled prefix that names the function but not its parameter types."""
    if not mangled.startswith("_ZN"):
        return ""
    i, out = 3, "_ZN"
    if mangled[i:i + 1] == "K":
        out += "K"
        i += 1
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        out += mangled[i:j + n]
        i = j + n
    if mangled[i:i + 1] == "E":
        return out + "E"
    return ""


# torch's own libraries (libc10_cuda.so, libtorch_cuda.so …): the only ones that could still
# define a torch symbol the loaded torch lacks
_TORCH_LIB = re.compile(r"lib(?:c10|torch|shm|caffe2)(?:_\w+)?\.so")


def _is_torch(demangled: str) -> bool:
    return bool(TORCH_NS.match(demangled))


# The mangled form of a name TORCH_NS matches: a nested name (N, after cv/ref qualifiers) or
# a local name inside one (ZN: a function's static variable) whose first component is one of
# those namespaces.
_TORCH_MANGLED = re.compile(r"_ZZ?N[KVRO]*(?:3c10|2at|5torch|6caffe2)")
_TORCH_BYTES = (b"3c10", b"2at", b"5torch", b"6caffe2")


def _needs_torch_names(image: ElfImage) -> bool:
    """Whether the library leaves undefined a symbol whose demangled name is in one of torch's
    namespaces (what :func:`_is_torch` keeps). A byte search of .dynstr rejects most
    libraries at once."""
    from opdoctor.facts.elf.dynsym import DynSymbols

    dynstr = image.section(".dynstr")
    if dynstr is None:
        return True  # nothing to search: bind, as before
    start, end = dynstr.offset, dynstr.offset + dynstr.size
    buf = image.data.buf
    if not any(buf.find(m, start, end) >= 0 for m in _TORCH_BYTES):
        return False
    return any(_TORCH_MANGLED.match(s.name) for s in DynSymbols(image).undefined())


def abi_string_symbol(demangled: str) -> bool:
    """True when a symbol's signature involves a type the C++11 ABI changes: std::string,
    std::list (``std::__cxx11::`` in the new ABI, plain ``std::`` in the old)."""
    return "std::__cxx11::" in demangled or "std::string" in demangled or \
        "std::basic_string" in demangled or "std::list<" in demangled


def run(facts: Facts) -> Iterator[Finding]:
    """Bind the target's symbols, then its package's own libraries it NEEDs, and report what
    fails."""
    yield from _target(facts)
    yield from _package_dependencies(facts)


def _package_dependencies(facts: Facts) -> Iterator[Finding]:
    """Torch symbols the package's own libraries (NEEDed by the target, found in the package's
    directory, not yet loaded by torch) need and the installed torch lacks. Python loads with
    RTLD_NOW: a dependency's unbound symbol fails the target's load as its own would —
    intel-extension-for-pytorch 2.8.0's _C binds, but the libintel-ext-pt-cpu.so it reaches
    through libintel-ext-pt-python.so needs 21 functions torch 2.13 no longer exports."""
    from opdoctor.facts.loader.symbols import bind
    from opdoctor.facts.pkgdir import package_root
    tree = facts.process.tree
    home = package_root(facts.path)
    if home is None or len(tree.order) < 2:
        return
    root = home + os.sep
    for lib in tree.order[1:]:
        if lib.image is None or lib.preloaded_by or not lib.path.startswith(root):
            continue
        if not _needs_torch_names(lib.image):
            # Binding finds what no library defines; only the torch names are kept, so a
            # library that needs none is not bound (MindSpore's 75 libraries: 336 bindings in
            # a scan, 44 % of its CPU, for no finding — survey 15's P2).
            continue
        checkpoint(f"binding the symbols of {lib.path}")
        unresolved = bind(lib.image, facts.process, facts.symbol_tables).unresolved
        names = demangle_all(s.name for s in unresolved)
        torch_syms = [s for s in unresolved if _is_torch(names[s.name])]
        if facts.abi_mismatch is not None:
            torch_syms = [s for s in torch_syms if not abi_string_symbol(names[s.name])]
        if torch_syms:
            yield _torch_finding(facts, torch_syms, names, Severity.ERROR, "", lib.path)


def _sibling_defining(facts: Facts, own: list[Sym]) -> str:
    """A missing NEEDED library of the target that exists where the package ships it (beside
    the target or by a name the loader looked for in vain) and defines every one of ``own``:
    those symbols are linked in — to that library (torchcodec 0.5: custom_ops7 NEEDs its
    sibling core7, which defines the 26 ``facebook::torchcodec::`` functions it uses). ""
    when there is none."""
    here = os.path.dirname(facts.path)
    names = tuple(s.name for s in own)
    for miss in facts.process.tree.missing:
        candidates = [os.path.join(here, miss.name), *(os.path.join(d, miss.name)
                                                       for d, _why in miss.exists_in)]
        for cand in dict.fromkeys(candidates):
            if os.path.isfile(cand):
                checkpoint(f"reading the symbols of {cand}")
                if facts.defines_all(cand, names):
                    return cand
    return ""


def _glibc_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _glibc_fix(need: str, have: str) -> str:
    """OD302's fix for the C library itself: glibc is the system's (no program-level preload
    or conda package replaces it, unlike libstdc++)."""
    system = f" (this system's is {have})" if have else ""
    return (f"the library needs glibc {need} or newer{system}: run it on a system or container "
            f"image with glibc >= {need}, or install a build of it made for this glibc (another "
            "release, or a wheel whose manylinux tag the system satisfies); the C library "
            "cannot be swapped per program with LD_PRELOAD or LD_LIBRARY_PATH")


_MANYLINUX_LEGACY = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def _wheel_glibc(owner: tuple[str, str, str] | None) -> tuple[str, str, str] | None:
    """(distribution, the glibc its wheel's tag promises, that tag) for a library installed
    (``owner``: ``Facts.installed_by``) from a wheel tagged manylinux, else None (lingvo
    0.14.2's x_ops.so needs GLIBC_2.38 from a wheel tagged manylinux2014, glibc 2.17: survey
    18)."""
    from opdoctor.facts.pkgdir import distribution, wheel_tags

    if owner is None:
        return None
    info = os.path.join(owner[1], owner[0])
    best: tuple[str, str] | None = None
    for tag in wheel_tags(info):
        plat = tag.rsplit("-", 1)[-1]
        m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
        legacy = next((v for k, v in _MANYLINUX_LEGACY.items() if plat.startswith(k + "_")),
                      None)
        glibc = f"{m[1]}.{m[2]}" if m else legacy
        if glibc and (best is None or _glibc_key(glibc) > _glibc_key(best[0])):
            best = (glibc, plat)
    if best is None:
        return None
    name, version = distribution(info)
    return f"{name} {version}".strip() or os.path.basename(info), best[0], best[1]


def _newer_runtime(facts: Facts, name: str, version: str, provider: str) -> str:
    """Another file named ``name`` that the system's search would find (ld.so.cache, the
    default directories) and that defines ``version``, when the process's own copy
    (``provider``, loaded first by the framework) does not; "" when there is none."""
    from opdoctor.facts.core import read_elf
    from opdoctor.facts.elf.dynsym import DynSymbols

    resolver = facts.resolver
    cands = [*resolver.cache.get(name, []),
             *(os.path.join(d, name) for d in resolver.default_dirs)]
    mine = os.path.realpath(provider)
    for cand in dict.fromkeys(cands):
        if not os.path.isfile(cand) or os.path.realpath(cand) == mine:
            continue
        if read_elf(cand, lambda img: version in DynSymbols(img).defined_versions, False):
            return cand
    return ""


def _target(facts: Facts) -> Iterator[Finding]:
    """The target's own version needs and undefined symbols."""
    binding = facts.binding
    path = facts.path
    for mv in binding.missing_versions:
        have = mv.provider_versions
        newest = f"; it provides up to {have[-1]}" if have else ""
        ev = [f"{os.path.basename(path)} requires {mv.file} version {mv.version} "
              f"(readelf -V: .gnu.version_r)",
              f"{mv.provider} defines: {', '.join(have[-6:]) or 'no version of that family'}"]
        fix = None
        if mv.version.startswith("GLIBC_"):
            promised = _wheel_glibc(facts.installed_by)
            if promised and _glibc_key(promised[1]) < _glibc_key(mv.version[6:]):
                ev.append(f"{promised[0]}: its wheel tag {promised[2]} promises glibc "
                          f"{promised[1]}; the library needs {mv.version[6:]} (a mis-tagged "
                          "wheel)")
            fix = _glibc_fix(mv.version[6:], have[-1][6:] if have else "")
        else:
            newer = _newer_runtime(facts, mv.file, mv.version, mv.provider)
            if newer:
                # torch's bundled libgomp.so.1 (up to OMP_5.0) is the process's when an
                # OpenMP-5 op library loads after `import torch`; the system's defines
                # OMP_5.0.2 (the fix said "conda's libstdcxx-ng", survey 23's G1)
                ev.append(f"{newer} defines {mv.version}")
                fix = (f"{mv.provider} is the {mv.file} this process loads first, and it "
                       f"predates {mv.version}; {newer} defines it: preload that one for the "
                       f"job (`LD_PRELOAD={newer}`: it is then the process's {mv.file}, and "
                       "what needs the older versions is served by it too), or build without "
                       f"the API that needs {mv.version}")
        yield OD302.finding(mv.file, f"version {mv.version} not found in {mv.file}{newest}",
                            tuple(ev), fix=fix)
    if not binding.unresolved:
        return
    # A symbol whose required version is missing is explained by OD302 (the loader stops there).
    missing_ver = {mv.version for mv in binding.missing_versions}
    unresolved = [s for s in binding.unresolved if s.version not in missing_ver or not s.version]
    if not unresolved:
        return
    # The loader stops at the first relocation it cannot bind: that symbol's is the error
    # the load reports, so each group lists its symbols in that order (see relocation_ranks).
    ranks = facts.symbol_tables.of_image(facts.image).relocation_ranks(
        {s.name for s in unresolved if not s.weak})
    unresolved.sort(key=lambda s: ranks.get(s.name, len(ranks) + 1))
    first_failing = unresolved[0].name
    host = None if facts.registration.pyinit else \
        facts.load_group_host(tuple(s.name for s in unresolved))
    if host is not None:
        # Not a Python extension (Python loads those alone, RTLD_LOCAL): a library of the
        # package that its extension's load brings in with the libraries defining them.
        ext, definers = host
        yield OD301.finding(
            path, f"{len(unresolved)} undefined symbol(s) that no library it NEEDs defines: "
            f"it loads as part of {os.path.basename(ext)}'s load, whose libraries define them "
            f"({', '.join(os.path.basename(d) for d in definers)}); loaded on its own it fails "
            f"with \"undefined symbol: {unresolved[0].name}\"",
            [f"{os.path.basename(ext)} NEEDs {os.path.basename(path)} (directly or through "
             "its dependencies) and the libraries that define them: ld.so binds a load group "
             "as one", *(_sym_line(s, demangle_all([s.name])) for s in unresolved[:6])],
            fix=f"nothing, for the package's own import; to load it by itself (ctypes, "
            f"torch.ops.load_library), load {' and '.join(os.path.basename(d) for d in definers)}"
            " first with RTLD_GLOBAL, or link it against them",
            severity=Severity.INFO)
        return
    names = demangle_all(s.name for s in unresolved)
    if facts.process.tree.missing:
        # the missing library may define them: OD201 is the root — for a device plugin this
        # machine never loads, as much as its OD201 (info where a walk found it)
        absent = list(dict.fromkeys(m.name for m in facts.process.tree.missing))
        sev = device_plugin_severity(facts) if device_plugin_here(facts) else Severity.WARNING
        note = (" (inconclusive: a dependency is missing and may define them, see "
                f"{', '.join(absent)})")
    else:
        sev, note = Severity.ERROR, ""
    torch_syms = [s for s in unresolved if _is_torch(names[s.name])]
    own_spaces = own_namespaces(facts, [s.name for s in unresolved])
    own = [s for s in unresolved if _top_namespace(s.name) in own_spaces]
    # A C++ function at global scope (the tutorials' style: lltm_cuda_forward declared in the
    # .cpp, defined in the .cu left out of sources=) that nothing in the process defines:
    # no framework or runtime puts its C++ API there (survey 14's P4).
    global_fns = [s for s in unresolved if _GLOBAL_CXX_FUNCTION.match(s.name)
                  and not _is_torch(names[s.name]) and s not in own]
    own += global_fns
    other = [s for s in unresolved if not _is_torch(names[s.name]) and s not in own]
    if own and _sibling_defining(facts, own):
        own = []  # linked in, to a sibling library the loader does not find: OD201's
    if own:
        ev = [_sym_line(s, names) for s in own[:20]]
        spaces = sorted({_top_namespace(s.name) for s in own if s not in global_fns})
        if spaces:
            ev.append(f"{os.path.basename(path)} itself defines symbols in namespace(s) "
                      f"{', '.join(spaces)}; no loaded library defines these")
        if any(s in global_fns for s in own):
            ev.append("C++ function(s) at global scope that no loaded library defines: no "
                      "framework or runtime declares its API there — the project's own code")
        changed = facts.changed_siblings
        fix = None
        if changed:
            # linked against a library of its own distribution that is no longer what was
            # installed (overwritten, rebuilt in place): that file is the fault (survey 21's W8)
            from opdoctor.checks.base import distribution_reinstall
            from opdoctor.facts.pkgdir import distribution

            lib, info = changed[0]
            dist = " ".join(distribution(info)).strip()
            note = (f" (inconclusive: {os.path.basename(lib)}, which it NEEDs, is not the file "
                    f"{dist} installed — its RECORD hash differs — and may have defined them)")
            ev.append(f"{lib}: changed since {dist} installed it (RECORD hash differs)")
            fix = (f"{distribution_reinstall(facts, info)} ({os.path.basename(lib)} is the "
                   "changed file); nothing to add to the build")
        yield OD430.finding(
            path, f"{len(own)} symbol(s) of the library's own code are declared but never "
            f"linked in{note}; the load fails with \"undefined symbol: {first_failing}\"", ev,
            severity=sev, fix=fix)
    # Symbols taking std::string in the wrong ABI are explained by the C++11 ABI check (OD303).

    if facts.abi_mismatch is not None:
        torch_syms = [s for s in torch_syms if not abi_string_symbol(names[s.name])]
    unlinked = facts.unlinked_torch_definers([s.name for s in torch_syms])
    if unlinked:
        libs = sorted(set(unlinked.values()))
        needed = [str(n) for n in facts.image.tags.get("DT_NEEDED", [])]
        ev = [f"{_sym_line(s, names)}  — defined by {unlinked[s.name]}" for s in torch_syms
              if s.name in unlinked][:12]
        ev.append(f"DT_NEEDED of {os.path.basename(path)}: {', '.join(needed) or 'none'}")
        yield OD432.finding(
            path, f"{len(unlinked)} torch symbol(s) are exported by the installed torch "
            f"({', '.join(libs)}), but {os.path.basename(path)} does not link "
            f"{' or '.join(libs)}: torch loads its libraries RTLD_LOCAL, so they bind only "
            "for a library that names them in DT_NEEDED — it was linked without torch's "
            "libraries", ev, severity=sev)
        torch_syms = [s for s in torch_syms if s.name not in unlinked]
    if torch_syms:
        missing = {m.name for m in facts.process.tree.missing}
        if sev is Severity.WARNING and not any(_TORCH_LIB.match(m) for m in missing):
            # Only torch's own libraries define c10::/at::/torch:: symbols: a missing FFmpeg
            # or sibling library (torchcodec's) cannot, so the release mismatch is certain.
            yield _torch_finding(facts, torch_syms, names, Severity.ERROR, "")
        else:
            yield _torch_finding(facts, torch_syms, names, sev, note)
    if other:
        ev = [_sym_line(s, names) for s in other[:20]]
        if len(other) > 20:
            ev.append(f"… and {len(other) - 20} more")
        yield OD301.finding(
            path, f"{len(other)} undefined symbol(s) no loaded library defines{note}; the load "
            f"fails with \"undefined symbol: {first_failing}\"", ev, severity=sev)


# A mangled C++ function outside any namespace: _Z<length><name><parameters>
# A name reserved to the implementation (two underscores, or one and a capital: SYCL's
# `__spirv_ControlBarrier`, the compiler's own builtins) is no project's own function.
_GLOBAL_CXX_FUNCTION = re.compile(r"_Z\d+(?!__|_[A-Z])[A-Za-z_]")


def _top_namespace(mangled: str) -> str:
    """The outermost namespace of a mangled C++ name (``_ZN6tinyop3fooEv`` → ``tinyop``)."""
    i = 3 if mangled.startswith("_ZN") else 0
    if not i:
        return ""
    if mangled[i:i + 1] in ("K", "V"):
        i += 1
    j = i
    while j < len(mangled) and mangled[j].isdigit():
        j += 1
    if j == i:
        return ""
    return mangled[j:j + int(mangled[i:j])]


def own_namespaces(facts: Facts, undefined: list[str]) -> set[str]:
    """Namespaces of ``undefined`` in which the library itself exports definitions (through
    its hash table: one prefix search per namespace) — its own code, not a dependency's."""
    table = facts.symbol_tables.of_image(facts.image)
    out = set()
    # Frameworks' and runtimes' namespaces: an extension instantiates their templates (so it
    # "defines" names there), but an undefined one is theirs to provide, not a missing file.
    # tflite:: is TensorFlow's (tensorflow-text's ops instantiate tflite::shim templates and
    # need the tflite::shim functions TensorFlow 2.18's libtensorflow_framework exports).
    foreign = {"", "c10", "at", "torch", "caffe2", "std", "__gnu_cxx", "pybind11", "tensorflow",
               "absl", "tsl", "xla", "google", "mindspore", "oneflow", "Eigen", "tflite"}
    for ns in {_top_namespace(n) for n in undefined} - foreign:
        if table.names_with_prefix(f"_ZN{len(ns)}{ns}", limit=1):
            out.add(ns)
    return out


def _jit_build_dir(path: str) -> str:
    """The directory of a ``torch.utils.cpp_extension.load()`` build the library is the product
    of (``<extensions dir>/<name>/<name>.so`` beside its ``build.ninja``); "" otherwise."""
    d = os.path.dirname(os.path.abspath(path))
    stem = os.path.basename(path).split(".", 1)[0]
    if os.path.isfile(os.path.join(d, "build.ninja")) and stem == os.path.basename(d):
        return d
    return ""


def _sym_line(s: Sym, names: dict[str, str]) -> str:
    ver = f"@{s.version}" if s.version else ""
    d = names[s.name]
    return f"{d}{ver}  [{s.name}]" if d != s.name else f"{s.name}{ver}"


def _torch_finding(facts: Facts, syms: list[Sym], names: dict[str, str], sev: Severity,
                   note: str, dependency: str = "") -> Finding:
    """OD304 for the torch symbols ``syms`` of the target, or of ``dependency`` (a library of
    the package the target NEEDs)."""
    interp = facts.interpreter
    version = interp.torch.version if interp and interp.torch else "none found"
    # "the installed torch none found" said nothing: without torch, nothing exports them
    installed = f"the installed torch {version}" if interp and interp.torch else \
        "any library here (no torch is installed for this interpreter)"
    ev: list[str] = []
    torch_libs = [lib for lib in facts.process.preloaded if "torch" in lib.path]
    for s in syms[:10]:
        ev.append(_sym_line(s, names))
        prefix = _signature_prefix(s.name)
        for lib in torch_libs:
            table = facts.symbol_tables.of(lib)
            if table is None or not prefix:
                continue
            alts = table.names_with_prefix(prefix, limit=3)
            alt_names = demangle_all(alts)
            for a in alts:
                ev.append(f"    installed torch exports instead: {alt_names[a]} "
                          f"[{os.path.basename(lib.path)}]")
    if len(syms) > 10:
        ev.append(f"… and {len(syms) - 10} more")
    ext = facts.extension_variant
    # An installed distribution: no source tree to rebuild in ("pip install ." means nothing
    # there); the release pairing is what to change.
    fix = installed_release_fix(
        facts, version, why=" (its release notes pair each release with one torch)",
        want=f" (its metadata requires {ext.requires_torch})" if ext.requires_torch else "") \
        or (f"rebuild the extension against torch {version} (in this environment: pip "
            "install --no-build-isolation .), or install the torch it was built with")
    jit = _jit_build_dir(facts.path)
    if jit and not installed_release_fix(facts, version):
        # torch.utils.cpp_extension.load()'s build directory, kept across a torch upgrade:
        # its sources did not change, so ninja says "no work to do" and load() reloads the
        # stale file ("pip install ." names no project there; survey 23's F3)
        fix = (f"delete the JIT build directory {jit} (torch.utils.cpp_extension.load() "
               f"builds there; TORCH_EXTENSIONS_DIR moves it) so that the next load() compiles "
               f"it against torch {version}: its sources did not change, so ninja rebuilds "
               "nothing and the old file is loaded again")
    hidden = facts.hidden_torch_defining(tuple(s.name for s in syms))
    if hidden:
        # the torch it was built for is installed, behind another environment's site
        where, hver, entry = hidden
        ev.append(f"torch {hver} at {where}, later on sys.path, exports all {len(syms)}")
        fix = (f"take {entry} off sys.path for this job (PYTHONPATH): it puts torch {version} "
               f"first, and torch {hver} — installed at {where} and exporting every one of "
               "these symbols — is the torch the extension was built for; nothing to rebuild")
    if dependency:
        dep, target = os.path.basename(dependency), os.path.basename(facts.path)
        return OD304.finding(
            dependency, f"{dep}, a library of the package that {target} loads, needs "
            f"{len(syms)} torch symbol(s) {installed} does not export: it was "
            "built against another torch", (f"DT_NEEDED chain: {target} → … → {dep}", *ev),
            severity=sev, fix=fix)
    return OD304.finding(
        facts.path, f"{len(syms)} torch symbol(s) are not exported by {installed}: the "
        f"extension was built against another torch{note}", ev, severity=sev,
        fix=fix)


CHECK = Check(
    name="symbols",
    summary="every undefined symbol binds, with the symbol versions the library requires",
    causes=(Cause.VERSION, Cause.BUILD),
    codes=CODES,
    run=run,
)
