"""Python import chain (cause 5): from ``import myop`` to the loaded ``.so``, statically (see
:mod:`opdoctor.facts.pychain`) and — with the probe — for real.

Applies when the target is a package: ``--package NAME``, a package directory, or a ``.so``
that sits inside a package.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import sys
from collections.abc import Iterator

from opdoctor.checks.base import (
    Check,
    distribution_reinstall,
    package_applies,
    reinstall_command,
)
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts, commandcache
from opdoctor.facts.pkgdir import (
    distribution,
    entry_origin,
    importable,
    normalized,
    requirement_rows,
    requirements,
    top_levels,
    wheel_tags,
)
from opdoctor.facts.pychain import (
    REPORTED,
    UNEVALUATED,
    Candidate,
    ImportChain,
    Link,
    built_for,
    import_suffixes,
    interpreter_tag,
    loader_calls,
)
from opdoctor.facts.pynames import (
    designed_fallback,
    from_package_import,
    import_guarded,
    module_bindings,
    one_line,
)
from opdoctor.facts.pyreg import describe
from opdoctor.facts.requires import (
    distributions_of,
    record_directories,
    uninstalled_requirements,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from opdoctor.facts.elf.image import ElfImage

_IMPORT = "https://docs.python.org/3/reference/import.html"

OD501 = CodeDoc(
    "OD501", "package not found", Severity.ERROR,
    what="The target interpreter finds the package on its sys.path.",
    why="'No module named myop': not installed for this interpreter (another venv, another "
    "Python), or installed under another name.",
    example="ModuleNotFoundError: No module named 'myop'",
    fix="Install it for this interpreter (`python -m pip install .`), or check which python the "
    "job runs (`--python`).",
    references=(_IMPORT,),
)
OD502 = CodeDoc(
    "OD502", "package shadowed by another directory", Severity.ERROR,
    what="The copy of the package that `import` picks is the one with the built extension.",
    why="sys.path is searched in order and the first regular package wins: a source checkout in "
    "the current directory (sys.path[0]) hides the installed package, and the checkout has no "
    "compiled extension — 'No module named myop._C', or the ops never register.",
    example="cwd /src contains myop/ (sources); site-packages/myop has _C.so; "
    "import myop → /src/myop",
    fix="Run from another directory, remove the stale copy, or install in editable mode "
    "(pip install -e .) so the checkout has the built extension.",
    references=(_IMPORT,),
)
OD503 = CodeDoc(
    "OD503", "extension not built for this interpreter", Severity.ERROR,
    what="Every extension module the package imports has a file with this interpreter's "
    "EXT_SUFFIX (or .abi3.so / .so).",
    why="A _C.cpython-310-x86_64-linux-gnu.so is invisible to Python 3.11: 'No module named "
    "myop._C'.",
    example="only _C.cpython-310-x86_64-linux-gnu.so under python 3.11",
    fix="Rebuild/reinstall the package with this interpreter (python -m pip install "
    "--force-reinstall .), or install the wheel for this Python version.",
    references=("https://peps.python.org/pep-3149/",),
)
OD418 = CodeDoc(
    "OD418", "extension built for another platform", Severity.ERROR,
    what="The extension module the package imports has a file for this machine: its name "
    "carries this interpreter's platform (x86_64-linux-gnu), not another CPU, operating "
    "system or C library.",
    why="A wheel for another platform — installed with pip's --platform, copied from another "
    "machine, a Windows .pyd or a macOS .so in the tree — puts files Python does not even "
    "try: the import fails with 'No module named pkg._ext', or the package silently runs its "
    "pure-Python fallback. Rebuilding with this interpreter is not the fix; installing the "
    "package for this machine is.",
    example="only orjson.cpython-311-aarch64-linux-gnu.so, built for aarch64 (this "
    "interpreter imports orjson.cpython-311-x86_64-linux-gnu.so)",
    fix="Install the package for this machine: `pip install --force-reinstall --no-deps "
    "<package>==<release>` with this machine's pip, without --platform or --python-version "
    "(or build it here).",
    references=("https://packaging.python.org/en/latest/specifications/platform-compatibility-"
                "tags/",),
)
# A build/file fault (cause 4) found by following the import: the module was compiled under
# another name, or the file renamed; the real threads of explain's corpus were fixed by a
# rebuild or a rename, never by a change to what Python imports (OD504 before 2026-12-04).
OD416 = CodeDoc(
    "OD416", "extension's PyInit_ does not match its file name", Severity.ERROR,
    what="The extension file <name>.<suffix> exports PyInit_<name>.",
    why="Python calls PyInit_<file name>: 'dynamic module does not define module export "
    "function (PyInit__C)' when the file was renamed or compiled with another module name.",
    example="_C.cpython-311-x86_64-linux-gnu.so exports PyInit_myop_ext",
    fix="Name the file after the module it was compiled as, or compile it with the name it "
    "is imported by (PYBIND11_MODULE(_C, m), TORCH_EXTENSION_NAME=_C).",
    references=("https://docs.python.org/3/extending/extending.html",),
)
OD505 = CodeDoc(
    "OD505", "the package never imports its extension", Severity.ERROR,
    what="A package that ships a compiled library imports or loads it from __init__.py "
    "(directly or through the modules it imports). Python extension modules of their own name "
    "that link no framework (jax-cuda12-plugin's, imported by name by jaxlib) are a note: "
    "they register no operator either way.",
    why="`import myop` succeeds but registers nothing until some other code imports "
    "myop._C or calls torch.ops.load_library: 'operator myop::x does not exist'.",
    example="myop/__init__.py imports only Python helpers; myop/libmyop.so is never loaded",
    fix="Load it in __init__.py: `from . import _C` or "
    "`torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libmyop.so'))`.",
    references=(_IMPORT,),
)
OD506 = CodeDoc(
    "OD506", "namespace package where a regular package was meant", Severity.WARNING,
    what="The package directory has an __init__.py (a namespace package that its wheel's "
    "RECORD ships without one is one by design and is not reported).",
    why="Without __init__.py it is a namespace package: nothing runs at import, so no extension "
    "is loaded, and a same-named directory elsewhere on sys.path merges in.",
    example="site-packages/myop/ has _C.so but no __init__.py",
    fix="Add myop/__init__.py (and make sure the build includes it in the wheel).",
    references=("https://peps.python.org/pep-0420/",),
)
OD507 = CodeDoc(
    "OD507", "relative import in a module that is run as a script", Severity.WARNING,
    what="Package modules with an `if __name__ == '__main__'` block do not use relative "
    "imports.",
    why="`python myop/tool.py` runs the file outside its package: 'attempted relative import "
    "with no known parent package'.",
    example="myop/bench.py: from . import _C … if __name__ == '__main__':",
    fix="Run it as `python -m myop.bench`, or use absolute imports.",
    references=(_IMPORT,),
)
OD508 = CodeDoc(
    "OD508", "installed files differ from the RECORD", Severity.ERROR,
    what="Every file the distribution's dist-info/RECORD lists exists and has the recorded "
    "hash.",
    why="A partial install (interrupted pip, files deleted by hand) or a library rebuilt in "
    "place after installing: the package on disk is not the one whose version pip reports.",
    example="myop/libmyop.so listed in RECORD, missing on disk",
    fix="pip install --force-reinstall <distribution>; never rebuild into site-packages by hand.",
    references=("https://packaging.python.org/en/latest/specifications/"
                "recording-installed-packages/",),
)
OD509 = CodeDoc(
    "OD509", "extension import inside a try/except that swallows the error", Severity.WARNING,
    what="The statement that imports/loads the compiled extension is not wrapped in a "
    "try/except that discards the exception. A handler that hands the exception to a call "
    "(a warning, a logger, a helper that raises), or keeps it in a name the module later "
    "prints, logs or raises (z3's `_failures += [e]` … `print(_failures)`), reports it.",
    why="The real error (undefined symbol, missing library) is hidden; the user only sees "
    "'operator does not exist' much later. The probe surfaces the hidden error.",
    example="try:\n    from . import _C\nexcept ImportError:\n    pass",
    fix="Re-raise, or at least warn with the original exception (warnings.warn(str(e))).",
    references=(_IMPORT,),
)
OD510 = CodeDoc(
    "OD510", "the import chain points at a missing file", Severity.ERROR,
    what="Each library path the package loads (torch.ops.load_library / ctypes.CDLL) exists. "
    "A load the code guards with an existence test (`if os.path.exists(p):`) or makes in an "
    "except handler (a fallback) is a branch: not reported when the file is absent; nor is "
    "one of several candidates tried in turn when another is a bare name the loader "
    "searches for.",
    why="The load fails with 'cannot open shared object file' for the package's own library: "
    "not built, not included in the wheel, or the path is computed wrongly.",
    example="torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libmyop.so'))",
    fix="Build the extension into the package directory / include it in package_data.",
    references=(_IMPORT,),
)
OD511 = CodeDoc(
    "OD511", "importing the package fails", Severity.ERROR,
    what="`import <package>` works in the target interpreter (probe).",
    why="The exception is the evidence: an error in the package's Python code or in loading its "
    "extension.",
    example="ImportError: cannot import name '_C' from 'myop'",
    fix="Read the exception; `opdoctor explain \"<message>\"` maps it to a cause. (When one "
    "of explain's message forms matches it, the finding's fix is that reading already.)",
    references=(_IMPORT,),
)
OD512 = CodeDoc(
    "OD512", "hidden import error", Severity.ERROR,
    what="The error an import or a library load inside the package's import hid (probe): a "
    "try/except the probe retried after the import, or a load of the library that failed "
    "and the import caught: seen as it happened (a ctypes / torch.ops.load_library load; "
    "xformers' banner names no file), else read from a warning the import printed before "
    "going on (tensorflow-io's UserWarning).",
    why="This is the error the package swallowed: with it, the extension's ops are never "
    "registered.",
    example="from . import _C → ImportError: _C.so: undefined symbol: missing_helper",
    fix="Fix the hidden error (see its own explanation), and stop swallowing it (OD509).",
    references=(_IMPORT,),
)
OD514 = CodeDoc(
    "OD514", "the import needs a requirement that is not installed", Severity.ERROR,
    what="Every other distribution that the package's import imports unconditionally (module "
    "level, outside try/except, in __init__.py or a module it imports) and that its "
    "distribution requires is installed on the target interpreter's sys.path.",
    why="A --no-deps install, a hand-copied site-packages or a requirement uninstalled later "
    "leaves it out: 'import pkg' fails with \"No module named 'x'\" from a module of its own, "
    "before any extension is loaded — found here without running the import. A requirement "
    "the import does not reach is a warning: `pip check` lists it, and a first use may need "
    "it (cryptography without cffi imports; its Rust extension then fails on "
    "'_cffi_backend'; tokenizers' from_pretrained on huggingface_hub). One the probe's "
    "import failed on is the failure, also when the error names it otherwise than the "
    "distribution (flashinfer: No module named 'tvm_ffi', from apache-tvm-ffi; fairseq2n: "
    "'requires Intel oneTBB', from tbb); while the import fails on something else, whether "
    "it reaches the others is not known.",
    example="pyproj 3.7.2's network.py:8: import certifi; certifi is not installed",
    fix="pip install '<requirement>' (the package's METADATA lists it, with its version "
    "specifier).",
    references=(_IMPORT,),
)

OD515 = CodeDoc(
    "OD515", "the package loads its torch extension before importing torch", Severity.ERROR,
    what="A torch extension that finds torch's libraries (libc10.so, libtorch_cpu.so …) only "
    "because `import torch` put them in the process is loaded by the package's import after "
    "something has imported torch.",
    why="torch.utils.cpp_extension builds set no RUNPATH to torch/lib: the extension relies on "
    "`import torch` having loaded those libraries. A package whose __init__.py runs `from . "
    "import _C` before any `import torch` fails on its own — \"ImportError: libc10.so: cannot "
    "open shared object file\" — and works only in a job that imports torch first (as "
    "opdoctor's probe does).",
    example="myext/__init__.py:1: from . import _C (no import torch before it)",
    fix="Put `import torch` before the extension's import in the package's __init__.py (or "
    "import torch before the package in the job).",
    references=(_IMPORT, "https://pytorch.org/tutorials/advanced/cpp_extension.html"),
)

OD221 = CodeDoc(
    "OD221", "the package's import loads a library of the system by name, and none is installed",
    Severity.ERROR,
    what="A library the package's import loads by its bare file name (cffi's ffi.dlopen, "
    "ctypes.CDLL: `libvips.so.42`) is found by the loader's search: LD_LIBRARY_PATH, "
    "/etc/ld.so.cache, the default directories.",
    why="A Python package that binds a system library through cffi or ctypes ships none: "
    "`import pyvips` without libvips raises \"OSError: cannot load library 'libvips.so.42': "
    "… cannot open shared object file\" (the package's code is fine, the system lacks the "
    "library). Read statically, with no probe; where the load sits in an except handler its "
    "try decides whether it runs (a warning when that is not known). A warning, with or "
    "without the probe: `ctypes.CDLL(p)` after `p = ctypes.util.find_library(\"vlc\")` with "
    "nothing testing p — find_library answers None where the system has no libvlc, and "
    "CDLL(None) opens the program itself: `import vlc` works and its first call fails "
    "(\"NameError: no function 'libvlc_new'\").",
    example="pyvips/__init__.py:62 loads libvips.so.42 by name: not in the loader's cache",
    fix="Install the system package that provides the library (apt-get install libvips42, "
    "dnf install vips …), or point LD_LIBRARY_PATH at a directory holding it.",
    references=(_IMPORT, "https://man7.org/linux/man-pages/man3/dlopen.3.html"),
)

CODES = (OD501, OD502, OD503, OD416, OD418, OD505, OD506, OD507, OD508, OD509, OD510, OD511, OD512,
         OD514, OD515, OD221)


def _system_library_by_name(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD221: the import loads a library by its bare name (``ffi.dlopen("libvips.so.42")``)
    that the loader's search does not find — statically only (the probe sees the load fail
    itself: OD220). Survey 24's F1: pyvips without libvips, "No problem found"."""
    from opdoctor.facts.loader.search import dlopen_by_name, searched
    from opdoctor.facts.pychain import runs_at_import
    from opdoctor.facts.syslibs import system_library_fix

    if facts.options.probe or facts.interpreter is None or \
            not any(link.by_name for link in chain.links):
        return
    # only in a module the import runs whatever happens (psycopg's _pq_ctypes.py is one of
    # three implementations its pq package chooses among at run time)
    runs_here = runs_at_import(chain)
    interp = facts.interpreter
    program = interp.executable
    cwd = facts.options.cwd or os.getcwd()
    suffixes = [interp.ext_suffix, ".abi3.so", ".so", ".py"]
    for link in chain.links:
        if not link.by_name or link.function or link.lazy or link.swallowed or link.checked \
                or link.branch or link.caught_by_caller or link.file not in runs_here:
            continue
        tried: list[str] = []
        for name in link.by_name:
            path, attempts = dlopen_by_name(name, facts.environ, program)
            if path or not attempts:
                break  # found (or no way to tell): the load may well work
            tried.append(searched(attempts))
        else:
            # in an except handler: it runs where the try's import fails — known when that
            # import is of a module no entry of sys.path provides; where all resolve, the
            # handler is not what the import runs (pyvips-binary's _libvips: API mode)
            missing = [m for m in link.handles
                       if not importable(m, chain.sys_path, suffixes, cwd)]
            if link.fallback and link.handles and not missing:
                continue
            runs = not link.fallback or bool(missing)
            name = link.by_name[0]
            where = f"{_rel(link.file, chain)}:{link.line}"
            why = (f", in the handler that runs when `import {missing[0]}` fails — no "
                   f"module {missing[0]} here" if link.fallback and runs else "")
            yield OD221.finding(
                name, f"`import {chain.name}` loads {name} by name ({where}{why}), and the "
                "loader finds none: the import fails with \"cannot open shared object file\""
                if runs else f"`import {chain.name}` loads {name} by name ({where}) where "
                f"{'its try fails' if link.fallback else 'it runs'}, and the loader finds none",
                (f"{where}: {one_line(link.text, 120)}",
                 *([f"handler of a try that imports {', '.join(link.handles[:3])}"]
                   if link.fallback else []),
                 f"{name}: not found (searched {tried[0]})"),
                fix=system_library_fix(name) or f"install the system package that provides "
                f"{name}, or put its directory on LD_LIBRARY_PATH",
                severity=None if runs else Severity.WARNING)


def _program_as_library(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD221 (a warning): the import loads ``ctypes.CDLL(find_library(name))``'s answer with
    nothing testing it, where this system has no such library — CDLL(None) is the program
    itself, so the import works and the package's first call into the library fails (survey
    24a's F7: python-vlc without libvlc, "No problem found" with and without the probe)."""
    from opdoctor.facts.pychain import runs_at_import, unguarded_process_handle
    from opdoctor.facts.syslibs import by_project, system_library_fix

    if not any(link.process_handle for link in chain.links):
        return
    runs_here = runs_at_import(chain)
    for link in chain.links:
        if not link.process_handle or link.lazy or link.branch or link.fallback or \
                link.file not in runs_here or not unguarded_process_handle(link):
            continue
        name = link.process_handle
        where = f"{_rel(link.file, chain)}:{link.line}"
        yield OD221.finding(
            f"lib{name}", f"`import {chain.name}` loads what ctypes.util.find_library(\"{name}\") "
            f"answers ({where}), and this system has no lib{name}: find_library answers None, "
            "and ctypes.CDLL(None) is the program itself — the import works, and the "
            f"package's first call into lib{name} fails", (
                f"{where}: {one_line(link.text, 120)}",
                f"find_library(\"{name}\"): no lib{name}.so* in the loader's cache, the "
                "linker's directories or LD_LIBRARY_PATH",
                "nothing between the lookup and the load tests its answer"),
            fix=system_library_fix(by_project(name)) or f"install the system package that "
            f"provides lib{name} (its development or runtime package), or put its directory "
            "on LD_LIBRARY_PATH", severity=Severity.WARNING)


def _before_torch(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD515: the target, a torch extension that finds torch's libraries only in a process
    that imported torch, is loaded by the package's import before anything imports torch
    (survey 24: `from . import _C` on the first line of __init__.py — `import myext` fails on
    libc10.so; the probe, which imports torch first, and the static view, which loads torch
    first, both said "No problem found")."""
    from opdoctor.facts.pychain import framework_imported_before

    if os.path.isdir(facts.path) or facts.structure.image is None or not facts.torch_context:
        return  # (first: the link search below resolves every path the import loads)
    me = os.path.realpath(facts.path)
    link = next((lk for lk in chain.links if not lk.fallback and not lk.function and
                 any(os.path.realpath(r) == me for r in lk.resolved)), None)
    if link is None or link.swallowed or link.caught_by_caller:
        return  # (a load whose failure the package catches does not fail its import)
    brings = facts.torch_libraries_import_torch_brings
    if not brings or framework_imported_before(chain, link) != "":
        return
    where = f"{_rel(link.file, chain)}:{link.line}: {one_line(link.text, 120)}"
    yield OD515.finding(
        os.path.basename(facts.path), f"`import {chain.name}` loads {os.path.basename(facts.path)}"
        f" ({_rel(link.file, chain)}:{link.line}) before anything imports torch, and it finds "
        f"{', '.join(brings)} only in a process that imported torch: the import fails on its "
        f"own (\"{brings[0]}: cannot open shared object file\")",
        (where, "run before it: nothing imports torch (the package's own modules and the "
         "standard library only)", f"{os.path.basename(facts.path)} NEEDs "
         f"{', '.join(brings)}; its own search path (no RUNPATH to torch/lib) finds none of "
         "them", "a job that imports torch first works: opdoctor's probe does, so its load "
         "succeeds"),
        fix=f"put `import torch` before `{one_line(link.text, 80)}` in "
        f"{_rel(link.file, chain)} (torch's import loads {brings[0]} and the others first), "
        f"or import torch before {chain.name} in the job")


def _optional(link: Link) -> bool:
    """An optional import: ``try: from . import _version except ImportError: …`` of a module
    that is not in the package at all, built or not (no file of any build, no directory). The
    package was written to run without it (fbgemm_gpu's optional op modules, torchrl's and
    tensordict's generated version modules); a missing extension the package needs is still
    reported where it is loaded (OD510 for a load path, OD505/OD506 for the package)."""
    mod = link.target.rsplit(".", 1)[-1]
    # `_C` is what cpp_extension names the extension itself: its absence is never optional.
    # In a function, a handler that raises a clear error of its own guards it as much as one
    # that swallows it (Cython's optional pgen Parser module, used by one option); at module
    # level such a handler makes the import fail (pyzstd's `raise ImportError(…)`).
    return link.kind == "submodule" and link.problem.startswith("no module ") and \
        not mod.startswith("_C") and (bool(link.swallowed) or (
            bool(link.function) and import_guarded(link.file, link.line)))


def _lost_its_init(path: str) -> bool:
    """Whether a namespace package looks like a regular one without its ``__init__.py``:
    modules or compiled files directly in it. A directory of sub-packages only is a namespace
    on purpose (``google``, shared by protobuf and googleapis-common-protos)."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(n.endswith((".py", ".so", ".pyd")) or ".so." in n for n in names
               if os.path.isfile(os.path.join(path, n)))


def _namespace_by_design(chain: ImportChain) -> bool:
    """Whether the installed distribution ships the package without ``__init__.py`` (its
    RECORD, read once by the chain, lists none): executorch 1.5.1 is a namespace package on
    purpose, its subpackages load the libraries. A RECORD that lists the file while the disk
    lacks it is the opposite: an ``__init__.py`` lost (OD508 says it too)."""
    return chain.record_has_init is False


# "set the environment variable TF_USE_LEGACY_KERAS=1 to fix" (tensorflow-recommenders).
_ENV_FIX = re.compile(r"\bset (?:the )?(?:environment variable |env(?:ironment)? var )?"
                      r"`?([A-Z][A-Z0-9_]{3,})`?\s*=\s*`?([\w.-]+)`?")


def _stale_extensions(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD508 for an extension module the import picks that no RECORD lists, while a file of
    the same module that the distribution did install comes later in the import system's
    suffix order: a leftover of another release (survey 24's B04: tokenizers 0.15.2's
    ``tokenizers.cpython-311-…so`` beside 0.23.3's ``tokenizers.abi3.so`` — the
    version-specific suffix wins, the old module runs under new Python code, "module
    'decoders' has no attribute 'DecodeStream'"; the probe said "read the exception", the
    static check nothing)."""
    from opdoctor.facts.pychain import import_suffixes
    from opdoctor.facts.requires import owning_dist

    interp = facts.interpreter
    suffixes = [x for x in import_suffixes(interp.ext_suffix if interp else ".so")
                if x != ".py"]
    told: set[str] = set()
    for link in chain.links:
        if link.kind != "submodule" or not link.resolved or link.resolved[0] in told:
            continue
        picked = link.resolved[0]
        suffix = next((x for x in suffixes if picked.endswith(x)), "")
        if not suffix or owning_dist(picked) is not None:
            continue
        stem = picked[:-len(suffix)]
        later = [stem + x for x in suffixes[suffixes.index(suffix) + 1:]
                 if os.path.isfile(stem + x)]
        owner = next(((f, o) for f in later if (o := owning_dist(f)) is not None), None)
        if owner is None:
            continue
        told.add(picked)
        shadowed, (info, _site, _row) = owner
        dist, version = distribution(info)
        yield OD508.finding(
            link.target, f"{os.path.basename(picked)} is in no distribution's RECORD and is "
            f"imported instead of {os.path.basename(shadowed)}, which {dist} {version} "
            "installed: a leftover of another install, picked first by its version-specific "
            "suffix", (f"import {link.target} → {picked} (no RECORD lists it)",
                       f"{info}/RECORD lists {os.path.relpath(shadowed, _site)}",
                       f"the import system tries {' before '.join(suffixes)}"),
            fix=f"delete {picked} (or reinstall {dist} into a clean directory: pip removes "
            "only the files its RECORD lists)")


def _gone_from_the_installed_release(facts: Facts, chain: ImportChain, message: str) -> str:
    """The fix for ``No module named 'a.b.c'`` where another distribution's package ``a`` is
    installed and has no ``a.b.c``: the package was written for another release of it
    (torchtune 0.6.1's `torchao.dtypes.nf4tensor`, gone from torchao 0.18: survey 24's F5 —
    the fix spoke of a source checkout and an extension never built); "" otherwise."""
    from opdoctor.facts.pychain import import_suffixes, installed_release, regular_home

    m = _NO_MODULE.search(f"raised ModuleNotFoundError: {message}")
    if m is None or "." not in m.group(1):
        return ""
    missing = m.group(1)
    top = missing.split(".")[0]
    if top == chain.name.split(".")[0]:
        return ""
    interp = facts.interpreter
    suffixes = import_suffixes(interp.ext_suffix if interp else ".so")
    # the copy the import finds, read as the static rule reads it (gone_from_installed)
    home = regular_home(top, list(chain.sys_path), suffixes, facts.options.cwd or os.getcwd())
    release = installed_release(home) if home else ""
    if not release:
        return ""
    return f"{release} is installed and has no {missing}: " + _pairing_fix(chain, release)


def _pairing_fix(chain: ImportChain, release: str) -> str:
    """The fix for a package written for another release of an installed distribution
    (``release``: "torchao 0.18.0"): the release pairing, either way."""
    dist = release.split(" ")[0]
    mine = " ".join(distribution(chain.dist)) if chain.dist else chain.name
    return (f"{mine} was written for another release of {dist}, one that has it — install "
            f"the {dist} release {mine}'s requirements or release notes pair with it (`pip "
            f"index versions {dist}` lists them), or a {chain.name.split('.')[0]} release "
            f"written for {release}")


def _top_level_chain(facts: Facts, top: str) -> ImportChain | None:
    """The static chain of the top-level package ``top`` in the job's environment."""
    from opdoctor.facts.pychain import analyse

    interp = facts.interpreter
    if interp is None:
        return None
    return analyse(top, list(interp.sys_path), interp.ext_suffix,
                   facts.options.cwd or os.getcwd(), facts.environ)


def _still_loadable(facts: Facts, paths: list[str]) -> bool:
    """Whether every one of ``paths`` is a shared library whose load the loader's rules would
    complete here, an extension module of this interpreter exporting its ``PyInit_``."""
    from opdoctor.facts.core import extension_name

    interp = facts.interpreter
    suffixes = (interp.ext_suffix if interp else ".so", ".abi3.so")
    for p in paths:
        if not (p.endswith(".so") or ".so." in p) or facts.load_problem(p) != "":
            return False
        if p.endswith(suffixes) and not facts.pyinit_exports(p, extension_name(p))[0]:
            return False
    return True


def _read_load(link: Link, facts: Facts) -> tuple[bool, str]:
    """A swallowed import's compiled module (or a swallowed load's library), read without
    loading it: (True, its file name) when it looks loadable here — an extension file of this
    interpreter that exports its ``PyInit_`` (a library loaded by path: any) and whose load the
    loader's rules would complete; (False, what would stop the load) when reading it tells;
    (False, "") when it cannot be told."""
    loads = link.kind in ("cdll", "load_library")
    if (link.kind != "submodule" and not loads) or link.problem or not link.resolved:
        return False, ""
    mod = link.target.rsplit(".", 1)[-1]
    for f in link.resolved:
        if not (f.endswith(".so") or ".so." in f):
            return False, ""
        if not loads and not facts.pyinit_exports(f, mod)[0]:
            return False, f"{os.path.basename(f)} does not export PyInit_{mod}"
        problem = facts.load_problem(f)
        if problem != "":
            return False, problem or ""
    return True, os.path.basename(link.resolved[0])


def _shadowed_imports(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD502 notes for the packages the package's ``__init__`` imports at module level (its
    framework among them) of which another release is installed later on sys.path: the job
    runs the first (a ``--target`` site on PYTHONPATH that brought its own torch hides the
    environment's), and a check of the package analyses that one — worth knowing which, not
    a fault. Copies of one release, or copies no RECORD lists, are not reported here."""
    from opdoctor.facts.pychain import (
        import_suffixes,
        installed_release,
        locate,
        unconditional_imports,
    )

    interp = facts.interpreter
    suffixes = import_suffixes(interp.ext_suffix if interp else ".so")
    cwd = facts.options.cwd or os.getcwd()
    own = chain.name.split(".")[0]
    deps = [d for d in dict.fromkeys([*chain.imports_packages, *unconditional_imports(chain)])
            if d != own and d not in sys.stdlib_module_names]
    for dep in deps[:24]:
        cands = [c for c in locate(dep, list(chain.sys_path), suffixes, cwd)
                 if c.kind != "namespace"]
        if len(cands) < 2:
            continue
        releases = [installed_release(c) for c in cands]
        mine = releases[0]
        if not mine:
            shadow = _shadowing_tree(facts, chain, dep, cands, releases)
            if shadow is not None:
                yield shadow
            continue
        hidden = [(c, rel) for c, rel in zip(cands[1:], releases[1:], strict=True)
                  if rel and rel != mine]
        if not mine or not hidden:
            continue
        other = sorted({rel for _c, rel in hidden})
        dirs = ", ".join(sorted({os.path.dirname(c.path) for c, _rel in hidden}))
        yield OD502.finding(dep, f"import {dep} (from {chain.name}) runs {mine} "
                            f"({cands[0].path}); {', '.join(other)} later on sys.path is "
                            "hidden: this check analysed the first",
                            [f"import {dep} → {cands[0].path}, installed by {mine}",
                             *[f"hidden: {c.path}, installed by {rel}" for c, rel in hidden]],
                            severity=Severity.INFO,
                            fix=f"nothing to fix if the job means to run {mine}. To run "
                            f"{', '.join(other)}: put {dirs} first on sys.path (PYTHONPATH), "
                            "or uninstall the copy the job should not use (`python -m pip "
                            "list --path DIR` reports each).")


def _own_modules_shadowed(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD502 for another top-level module the package's own distribution installs (its
    RECORD) of which an earlier sys.path entry holds a copy no release of that distribution
    installed: survey 22's E5 — Debian's dist-packages on PYTHONPATH puts its
    _cffi_backend 1.15.1 before the one cffi 2.1.1 installed; `import cffi` works, `cffi.FFI()`
    raises "Version mismatch", and the check (which read cffi's own copy) said nothing."""
    from opdoctor.facts.pychain import import_suffixes, installed_release, locate
    from opdoctor.facts.requires import record_top_names

    if not chain.dist or chain.winner is None:
        return
    site = os.path.realpath(os.path.dirname(chain.dist))
    dist, version = distribution(chain.dist)
    interp = facts.interpreter
    suffixes = import_suffixes(interp.ext_suffix if interp else ".so")
    cwd = facts.options.cwd or os.getcwd()
    for name in sorted(record_top_names(chain.dist) - {chain.name.split(".")[0]})[:24]:
        cands = [c for c in locate(name, list(chain.sys_path), suffixes, cwd)
                 if c.kind != "namespace"]
        own = [c for c in cands if os.path.realpath(os.path.dirname(c.path)) == site]
        if not cands or not own or cands[0] is own[0]:
            continue
        first = cands[0]
        other = installed_release(first)
        if normalized(other.split(" ")[0]) == normalized(dist):
            continue  # another release of the same distribution: _shadowed_imports' note
        if os.path.isfile(os.path.join(os.path.dirname(first.path), "os.py")):
            yield _stdlib_clash(chain, name, own[0].path, first.path, f"{dist} {version}")
            continue
        yield OD502.finding(
            name, f"{dist} {version} installs {name} ({own[0].path}), but import {name} picks "
            f"{first.path}, earlier on sys.path" + (f" (installed by {other})" if other else
                                                   ", which no distribution here installed"),
            [f"import {name} → {first.path}", f"{dist} {version}'s own: {own[0].path}",
             f"sys.path entry of the copy that wins: {os.path.dirname(first.path)}"],
            fix=f"take {os.path.dirname(first.path)} off sys.path for this job (PYTHONPATH), or "
            f"remove that copy of {name}: {dist} uses the {name} of its own release")


def _stdlib_clash(chain: ImportChain, name: str, own: str, first: str, dist: str) -> Finding:
    """OD502 for a top-level module a distribution installs under a name of the standard
    library, which always comes first: torchao 0.18.0's wheel ships its test suite as `test`
    (survey 24). An error whose fix was "take …/lib/python3.11 off sys.path" — for a module
    nothing imports; a note unless the package's own import imports it."""
    from opdoctor.facts.pychain import unconditional_imports

    used = name in unconditional_imports(chain)
    return OD502.finding(
        name, f"{dist} installs {name} ({own}), a name of the standard library, whose {first} "
        "always comes first" + ("" if used else f"; the package's import does not import "
                                f"{name}: nothing of it is lost"),
        [f"import {name} → {first} (the standard library)", f"{dist}'s own: {own}"],
        fix=(f"nothing to do for the job ({dist}'s wheel ships a top-level {name} it never "
             "imports)") if not used else (f"no sys.path order fixes a clash with the standard "
                                            f"library: a release of {dist.split(' ')[0]} that "
                                            f"renames its {name}"),
        severity=None if used else Severity.INFO)


def _shadowing_tree(facts: Facts, chain: ImportChain, dep: str, cands: list[Candidate],
                    releases: list[str]) -> Finding | None:
    """OD502 for a requirement the package's import runs, when ``import <dep>`` picks a copy
    no distribution installed and without compiled code (a ``torch.py`` experiment, a NumPy
    source tree on PYTHONPATH) while an installed release is hidden behind it. fbgemm-gpu
    under a ``torch.py`` was "libtorch_cpu.so is not found" with patchelf in 19 reports;
    faiss under a NumPy checkout "torch itself fails to import" (survey 21's W1, W2)."""
    first = cands[0]
    installed = [(c, rel) for c, rel in zip(cands[1:], releases[1:], strict=True) if rel]
    if not installed or (first.kind == "package" and facts.shared_libraries_under(first.path)):
        return None
    if first.kind == "extension" or os.path.isfile(os.path.join(os.path.dirname(first.path),
                                                                 "os.py")):
        return None  # (the standard library's own module: _stdlib_clash says it)
    hidden, rel = installed[0]
    what = "a module file" if first.kind == "module" else "a directory without its compiled " \
        "modules (a source tree)"
    works = _imported_fine(facts)
    return OD502.finding(
        dep, f"import {dep} (from {chain.name}) picks {first.path}, {what}; the installed {rel} "
        f"({hidden.path}) is hidden" + ("; the import works with it" if works else ""),
        [f"import {dep} → {first.path} ({first.kind}, from sys.path entry "
         f"{first.entry or '(cwd)'!r}); no distribution installed it",
         f"hidden: {hidden.path}, installed by {rel}"],
        fix=f"rename {first.path} or remove {os.path.dirname(first.path)} from sys.path "
        "(PYTHONPATH, the working directory, the script's directory): the job must import the "
        f"installed {dep}", severity=Severity.WARNING if works else None)


def _first_party_imports(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD510 for a package of the same distribution (or editable install) that the package's
    ``__init__`` imports at module level and whose own chain cannot work: ``beta`` doing
    ``from alpha import …`` while ``alpha/_fast`` was never built fails in ``import beta``,
    which the static walk of beta alone called clean (survey 14's P3)."""
    from opdoctor.facts.pkgdir import editable_mapping
    from opdoctor.facts.pychain import analyse

    win = chain.winner
    if win is None or not chain.imports_packages:
        return
    siblings: set[str] = set()
    if win.via:
        siblings = {n for n, (_p, f) in editable_mapping(tuple(chain.sys_path)).items()
                    if f == win.via}
    if chain.dist:
        siblings |= top_levels(chain.dist, record=False)
    interp = facts.interpreter
    for dep in [d for d in chain.imports_packages if d in siblings and d != chain.name][:6]:
        other = analyse(dep, list(chain.sys_path), interp.ext_suffix if interp else ".so",
                        facts.options.cwd or os.getcwd(), facts.environ)
        broken = [lk for lk in other.links if _missing_import(lk) and not lk.function
                  and not lk.swallowed]
        if other.winner is None:
            problem, where = f"{dep} is not on the target interpreter's sys.path", []
        elif broken:
            lk = broken[0]
            problem = f"{lk.target}: {lk.problem}"
            where = [f"{_rel(lk.file, other)}:{lk.line}: {one_line(lk.text, 120)}"]
        else:
            continue
        rebuild = _editable_rebuild(other) if broken and _may_be_built(broken[0]) else ""
        yield OD510.finding(dep, f"{chain.name} imports {dep} (of the same distribution) at "
                            f"module level, whose import fails: {problem}",
                            [f"{chain.name}/__init__.py imports {dep} at module level", *where],
                            severity=Severity.WARNING if _imported_fine(facts) else None,
                            **({"fix": rebuild} if rebuild else {}))


def _not_found(name: str, order: list[str], chain: ImportChain, facts: Facts) -> Finding:
    """OD501; an editable install whose source tree is gone (moved, deleted) says so, and so
    does a distribution whose metadata is installed and whose files are not."""
    from opdoctor.facts.pkgdir import editable_mapping, editable_project

    top = name.split(".")[0]
    mapped = editable_mapping(tuple(chain.sys_path)).get(top)
    if mapped is not None:
        path, finder = mapped
        project = editable_project(finder)
        return _stale_editable(name, order, f"an editable install maps it to {path}, which "
                               + ("is no package" if os.path.exists(path) else
                                  "does not exist"),
                               [f"editable finder: {finder} ({name} → {path})"], project,
                               _editable_distribution(finder) or top)
    stale = _stale_editable_path(top, chain)
    if stale is not None:
        d, pth, project = stale
        return _stale_editable(name, order, f"an editable install ({os.path.basename(pth)}) "
                               f"puts {d} on sys.path, which does not exist",
                               [f"{pth}: {d} (Python skips a directory that does not exist)"],
                               project, _editable_distribution(pth) or top)
    user_site = _user_site_turned_off(facts, top)
    if user_site:
        # survey 22's B5: `pip install --user` put it there; the job runs with
        # PYTHONNOUSERSITE=1, and OD501's "pip install ." did not say why it is not found
        return OD501.finding(name, f"no package {name} on the target interpreter's sys.path: "
                             f"it is installed in the user site ({user_site}), which "
                             "PYTHONNOUSERSITE turns off", [*order[:12],
                                                            f"{os.path.join(user_site, top)} "
                                                            "exists",
                                                            "PYTHONNOUSERSITE is set in the "
                                                            "job's environment"],
                             fix="unset PYTHONNOUSERSITE for this job, or install the package "
                             "into the environment itself (python -m pip install <it>, "
                             "without --user)")
    hidden = _namespace_hidden(name, chain, facts)
    if hidden is not None:
        return hidden
    cwd = _safe_path_hides(facts, top)
    if cwd:
        # survey 23's P1: the job runs with PYTHONSAFEPATH=1 (`python -P`), the package is in
        # its working directory; "pip install ." named no project there and not the variable
        return OD501.finding(name, f"no package {name} on the target interpreter's sys.path: "
                             f"it is in the working directory ({cwd}), which PYTHONSAFEPATH "
                             "keeps off sys.path (as `python -P` does)",
                             [*order[:12], f"{os.path.join(cwd, top)} exists",
                              "PYTHONSAFEPATH is set in the job's environment"],
                             fix=f"unset PYTHONSAFEPATH for this job (or drop -P), put {cwd} on "
                             "PYTHONPATH, or install the package into the environment")
    foreign = _foreign_module_only(top, chain, facts)
    if foreign is not None:
        return foreign
    recorded = _recorded_without_files(top, chain)
    if recorded is not None:
        # survey 22's A8: torchvision/ deleted, its dist-info left: `pip install torchvision`
        # answers "Requirement already satisfied", the old fix `pip install .` did nothing
        info, row = recorded
        return OD501.finding(name, f"no package {name} on the target interpreter's sys.path: "
                             f"{os.path.basename(info)} says it is installed, and its files "
                             "are gone", [*order[:12], f"{info}/RECORD lists {row}, which "
                                          "does not exist"],
                             fix=f"{distribution_reinstall(facts, info)} (a plain `pip install` "
                             "answers \"Requirement already satisfied\": the metadata is there)")
    return OD501.finding(name, f"no package {name} on the target interpreter's sys.path",
                         order[:12])


def _foreign_module_only(top: str, chain: ImportChain, facts: Facts) -> Finding | None:
    """OD418 (or OD503) when no ``top`` is found because a sys.path directory holds only builds
    of that single-module extension for another platform or Python: ujson's
    ``ujson.cp311-win_amd64.pyd`` put there by `pip install --target … --platform win_amd64`
    (survey 24's F8: "no package ujson … pip install ." — a command that installs nothing of
    it). A package directory's builds are the import chain's (``_other_builds``)."""
    from opdoctor.facts.pychain import built_for
    from opdoctor.facts.requires import owning_dist

    interp = facts.interpreter
    suffix = interp.ext_suffix if interp else ".so"
    for entry in chain.sys_path:
        d = entry or facts.options.cwd or os.getcwd()
        try:
            names = sorted(n for n in os.listdir(d) if n.startswith(f"{top}.") and
                           n.endswith((".so", ".pyd", ".dylib")))
        except OSError:
            continue
        what = sorted({w for n in names for w in built_for(n, suffix)})
        if not names or not what:
            continue
        files = [os.path.join(d, n) for n in names]
        owner = owning_dist(files[0])
        dist, version = distribution(owner[0]) if owner else ("", "")
        pin = f"'{dist}=={version}'" if dist and version else top
        how = reinstall_command(facts, pin, owner[0]) if owner else \
            f"pip install --force-reinstall --no-deps {pin}"
        other_python = all(w.startswith(("CPython ", "free-threaded ", "PyPy")) for w in what)
        code = OD503 if other_python else OD418
        return code.finding(
            top, f"no module {top} this interpreter imports: {d} holds only "
            f"{', '.join(names[:3])}, built for {' / '.join(what)}",
            [*(f"{f}: built for {' / '.join(built_for(os.path.basename(f), suffix))}"
               for f in files[:3]), *([f"installed by {dist} {version} ({owner[0]})"]
                                      if owner else [])],
            fix=f"{how} with this machine's pip, without --platform or --python-version (it "
            "picks the build for this machine and Python)")
    return None


def _releases_over_each_other(facts: Facts, chain: ImportChain) -> Finding | None:
    """OD508 for two releases of one distribution recorded in one site directory, both owning
    the package (survey 22's A3, A5: `pip install --target T` of torchvision 0.29.1 into a T
    that held 0.28.0 keeps 0.28.0's files and adds 0.29.1's metadata; the fix "install the
    release built for torch 2.14.1" got "Requirement already satisfied")."""
    if not chain.dist or facts.options.wheel:
        return None
    dist, ver = distribution(chain.dist)
    same = [o for o in chain.other_dists
            if normalized(distribution(o)[0]) == normalized(dist) and dist]
    if not same:
        return None
    site = os.path.dirname(chain.dist)
    releases = [ver, *(distribution(o)[1] for o in same)]
    infos = [os.path.basename(i) for i in (chain.dist, *same)]
    tops = sorted({t for i in (chain.dist, *same) for t in record_directories(i)})
    target = f" --target {site}" if "site-packages" not in site else ""
    return OD508.finding(
        dist, f"{len(infos)} releases of {dist} are recorded in {site}: "
        f"{' and '.join(releases)}, installed over each other — the files on disk are a mix, "
        "and pip trusts the metadata", [f"{i}/RECORD lists {chain.name}/" for i in infos],
        fix=f"remove both and install one: rm -rf "
        f"{' '.join(os.path.join(site, t) for t in [*tops, *infos])}; then pip install "
        f"--no-deps{target} '{dist}==<the release you want: {' or '.join(releases)}>' (a plain "
        "pip install answers \"Requirement already satisfied\" while both are recorded)")


def _user_site_turned_off(facts: Facts, top: str) -> str:
    """The user site directory holding ``top`` when the job's PYTHONNOUSERSITE keeps it off
    sys.path ("" otherwise): PYTHONUSERBASE, or ~/.local, + lib/pythonX.Y/site-packages."""
    env = facts.environ
    interp = facts.interpreter
    if not env.get("PYTHONNOUSERSITE") or interp is None:
        return ""
    major_minor = ".".join(interp.version.split(".")[:2])
    base = env.get("PYTHONUSERBASE") or os.path.join(env.get("HOME") or
                                                     os.path.expanduser("~"), ".local")
    site = os.path.join(base, "lib", f"python{major_minor}", "site-packages")
    return site if os.path.isdir(os.path.join(site, top)) or os.path.isfile(
        os.path.join(site, f"{top}.py")) else ""


def _namespace_hidden(name: str, chain: ImportChain, facts: Facts) -> Finding | None:
    """OD502 when ``a.b`` is not found because a regular package ``a`` (a directory with an
    ``__init__.py``, anywhere on sys.path) wins over the namespace package ``a`` whose portion
    in another entry holds ``b``: Python prefers a regular package wherever it stands
    (survey 23's P3b: a stray google/__init__.py hid protobuf; OD501 said "pip install .")."""
    parts = name.split(".")
    if len(parts) < 2:
        return None
    top, sub = parts[0], parts[1]
    cwd = facts.options.cwd or os.getcwd()
    dirs = [e or cwd for e in chain.sys_path]
    regular = next((d for d in dirs if os.path.isfile(os.path.join(d, top, "__init__.py"))),
                   None)
    if regular is None or any(f.split(".", 1)[0] == sub
                              for f in _listing(os.path.join(regular, top))):
        return None  # the regular package has it: not this
    portions = [d for d in dirs if d != regular and os.path.isdir(os.path.join(d, top))
                and not os.path.isfile(os.path.join(d, top, "__init__.py"))
                and (os.path.isdir(os.path.join(d, top, sub)) or any(
                    f.split(".", 1)[0] == sub for f in _listing(os.path.join(d, top))))]
    if not portions:
        return None
    stray = os.path.join(regular, top, "__init__.py")
    origin = entry_origin(regular, chain.sys_path, facts.environ)
    return OD502.finding(
        name, f"no package {name}: {stray} makes `{top}` a regular package, which hides the "
        f"namespace package `{top}` whose portion in {portions[0]} holds {sub}",
        (f"{stray}: a regular package wins over namespace portions wherever it is on sys.path",
         *[f"namespace portion: {os.path.join(d, top)} (holds {sub})" for d in portions[:3]]),
        fix=f"delete {stray} (a namespace package has no __init__.py: something wrote one "
        f"there), or take {regular} off sys.path" + (f" ({_entry_source(origin)})"
                                                   if origin else ""))


def _listing(d: str) -> list[str]:
    """The names in ``d`` ([] when it cannot be listed)."""
    try:
        return os.listdir(d)
    except OSError:
        return []


def _safe_path_hides(facts: Facts, top: str) -> str:
    """The job's working directory when it holds ``top`` (a package or module) and the job's
    PYTHONSAFEPATH keeps it off sys.path; "" otherwise."""
    if not facts.environ.get("PYTHONSAFEPATH"):
        return ""
    cwd = facts.options.cwd or os.getcwd()
    interp = facts.interpreter
    suffixes = (".py", interp.ext_suffix if interp else ".so", ".abi3.so", ".so")
    if os.path.isfile(os.path.join(cwd, top, "__init__.py")) or any(
            os.path.isfile(os.path.join(cwd, top + suf)) for suf in suffixes):
        return cwd
    return ""


def _recorded_without_files(top: str, chain: ImportChain) -> tuple[str, str] | None:
    """(dist-info, RECORD row) of a distribution in a sys.path directory whose RECORD lists
    the package's ``__init__.py`` (or a module file of that name) while it is not on disk."""
    from opdoctor.facts.requires import owning_dist

    for entry in chain.sys_path:
        for rel in (os.path.join(top, "__init__.py"), f"{top}.py"):
            path = os.path.join(entry, rel)
            if os.path.exists(path):
                continue
            owner = owning_dist(path)
            if owner is not None:
                return owner[0], owner[2]
    return None


_EDITABLE_FILE = re.compile(r"__editable__(?:_|\.)(?P<dist>[A-Za-z0-9][\w.]*?)[-_]\d[\w.]*?"
                            r"(?:_finder\.py|\.pth)$")


def _editable_distribution(path: str) -> str:
    """The distribution an editable install's finder or .pth file is named for
    (``__editable___lz4_4_4_5_finder.py``, ``__editable__.lz4-4.4.5.pth`` → lz4); ""."""
    m = _EDITABLE_FILE.match(os.path.basename(path))
    return m.group("dist") if m else ""


def _stale_editable(name: str, order: list[str], what: str, ev: list[str],
                    project: str, dist: str) -> Finding:
    return OD501.finding(name, f"no package {name} on the target interpreter's sys.path: "
                         f"{what} (the checkout was moved or deleted)",
                         [*order[:12], *ev,
                          *([f"installed from: {project}"] if project else [])],
                         fix="Install it again from where the project is now "
                         "(`python -m pip install -e DIR`), or uninstall the stale editable "
                         f"install (`python -m pip uninstall {dist}`).")


def _stale_editable_path(top: str, chain: ImportChain) -> tuple[str, str, str] | None:
    """(directory, .pth, project) of an editable install of the distribution that provides
    ``top`` whose ``.pth`` line names a directory that does not exist."""
    from opdoctor.facts.pkgdir import (
        direct_url_project,
        distribution,
        editable_paths,
        normalized,
        pth_distribution,
        site_dirs,
    )

    sites = site_dirs(chain.sys_path)
    for d, pth, exists in editable_paths(sites):
        info = pth_distribution(pth) if not exists else ""
        if info and (top in top_levels(info) or
                     normalized(distribution(info)[0]) == normalized(top)):
            return d, pth, direct_url_project(info)
    return None


def _missing_import(link: Link) -> bool:
    """A submodule import that cannot work and nothing excuses: not optional, not behind an
    existence test, not a fallback, not a name the package itself provides (OD510)."""
    return bool(link.problem) and link.kind == "submodule" and not _optional(link) and \
        not link.checked and not link.fallback and not _package_attribute(link)


def _may_be_built(link: Link) -> bool:
    """A missing submodule that a build makes (no .py of that name anywhere: not a module
    left out of the sources), or a build output an editable install points at that is gone."""
    return not link.other_builds and (
        link.problem.startswith(("no module", "an editable install's import hook"))
        or "is a symbolic link to" in link.problem)


def _editable_origin(chain: ImportChain) -> tuple[str, str]:
    """:func:`opdoctor.facts.pkgdir.editable_origin` of the chain's winning copy."""
    from opdoctor.facts.pkgdir import editable_origin

    win = chain.winner
    return editable_origin(win.path, win.via, chain.sys_path) if win else ("", "")


def _editable_rebuild(chain: ImportChain) -> str:
    """The fix for a compiled module missing from an editable install ("" when the package
    is not one): the install command builds it, so running it again does."""
    how, project = _editable_origin(chain)
    if not how:
        return ""
    return (f"{chain.name} is an editable install ({how}): its compiled modules are built by "
            "the install command, and this one is not there. Build it again: `python -m pip "
            f"install -e {project}` (with the options it was installed with), and read that "
            "build's log for the error that left it out.")


def _retried_fine(facts: Facts, chain: ImportChain) -> frozenset[str]:
    """The swallowed imports the probe retried after importing the package, and that worked:
    wrapt's ``from ._wrappers import …`` (with a pure-Python fallback), pyarrow's optional
    filesystems. Nothing is hidden where they import. Empty without a probe, or when the
    package import failed (the retry runs only after it) or no retry was reported."""
    from opdoctor.facts.probe.outcome import ProbeState
    res = facts.probe_result() if facts.options.probe else None
    if res is None or res.state is not ProbeState.LOADED or not res.retried:
        return frozenset()
    failed = {h.target for h in res.swallowed}
    return frozenset(link.target for link in chain.links
                     if link.swallowed and link.target not in failed)


def _leads_to_compiled(link: Link) -> bool:
    """Whether the statement loads compiled code (a load call, a compiled module, or a
    module of that name built for another interpreter): only then does swallowing its error
    hide a loader failure (OD509). A swallowed import of a Python module is the package's own
    business."""
    if link.kind != "submodule":
        # A load whose argument is no file of this install (a bare name dlopen looks up in the
        # system — onnxruntime probing for libcudart.so or vcruntime140.dll —, a build target,
        # a URL): the package probing for something optional, not its extension.
        # An argument computed from nothing known inside a function (onnxruntime's
        # get_cudart_version(v): CDLL(f"libcudart.so.{v}")) is not known to be the package's
        # load path either; the probe sees the error if the import really swallows one.
        return bool(link.resolved) or bool(link.problem and not link.function)
    if link.problem.startswith("no file for this interpreter"):
        return True
    return any(f.endswith((".so", ".pyd")) or ".so." in f for f in link.resolved) or \
        link.target.rsplit(".", 1)[-1].startswith("_C")


def _imported_from(text: str) -> tuple[str, set[str]]:
    """(module, names) of a ``from module import names`` statement; ("", set()) otherwise."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError):
        return "", set()
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.ImportFrom) or not node.module:
        return "", set()
    return node.module, {a.asname or a.name for a in node.names}


def _fallback_import(link: Link, chain: ImportChain) -> str:
    """The module a later import of the same file takes the same names from, when the
    swallowed ``link`` binds names (a CPU-specific build tried before the plain one) and that
    module is there; ""."""
    _, names = _imported_from(link.text)
    if not names or link.kind != "submodule":
        return ""
    for other in sorted(chain.links, key=lambda o: o.line):
        if other.file != link.file or other.line <= link.line or other.kind != "submodule" \
                or other.problem or other.target == link.target:
            continue
        module, bound = _imported_from(other.text)
        # one statement gives a link per package on its dotted path: the module's own one
        if names <= bound and other.target.rsplit(".", 1)[-1] == module.rsplit(".", 1)[-1]:
            return other.target
    return ""


def _package_attribute(link: Link) -> bool:
    """``from . import X`` / ``from .. import X`` of a name the package's ``__init__.py``
    binds: the import system takes the attribute and never looks for a module ``X``
    (tokenizers' ``from .. import AddedToken``, re-exported from its extension). Only a name
    the package does not define has to be a submodule."""
    got = from_package_import(link.text, link.file)
    if got is None:
        return False
    init, names = got
    name = link.target.rsplit(".", 1)[-1]
    return name in names and os.path.isfile(init) and module_bindings(init).has(name)


def _in_site(row: str) -> bool:
    """A RECORD row inside the directory the package is imported from. Rows that climb out of
    it (``../../bin/onnxruntime_test``: console scripts, data files) land where the install
    scheme puts them (--target, --prefix, --user, a venv's bin/), not where RECORD's relative
    path points; whether they exist says nothing about ``import``."""
    return not os.path.normpath(row).startswith(os.pardir + os.sep)


def _hidden_optional(chain: ImportChain, target: str, message: str) -> bool:
    """A swallowed ModuleNotFoundError for that very module, which does not exist on disk:
    the package's own fallback for an optional module, not a hidden failure."""
    return any(link.target == target and _optional(link) for link in chain.links) and \
        f"No module named '{target}'" in message


_MISSING_NAME = re.compile(r"cannot import name '(\w{1,200})' from '([\w.]{1,200})' "
                           r"\(([^()\n]{1,1000})\)")


def _name_this_build_lacks(chain: ImportChain, kind: str, message: str) -> str:
    """What a swallowed ``cannot import name 'n' from 'pkg.mod' (…/mod….so)`` means when
    ``pkg.mod`` is the package's own compiled module: it loaded (Python names the file it
    loaded) and this build of it has no ``n`` — an optional part the package tests for,
    not a failure it hides. "" for anything else (a module that failed to load, another
    distribution's module, a Python module missing a name)."""
    m = _MISSING_NAME.search(message) if kind == "ImportError" else None
    if m is None or m.group(2).split(".")[0] != chain.name.split(".")[0]:
        return ""
    from opdoctor.facts.inputfile import is_shared_library

    if not is_shared_library(os.path.basename(m.group(3))):
        return ""
    return (f"{m.group(2)} (compiled, loaded from {os.path.basename(m.group(3))}) has no "
            f"{m.group(1)} in this build: the package tests for it and runs without that part")


_MISSING_MODULE = re.compile(r"No module named '([\w.]{1,200})'")


def _other_distribution(chain: ImportChain, etype: str, message: str) -> str:
    """The top-level module a swallowed ``ModuleNotFoundError`` names when it is not the
    package's own (``triton`` for torchao): an optional dependency left out ("" otherwise)."""
    m = _MISSING_MODULE.search(message) if etype == "ModuleNotFoundError" else None
    top = m.group(1).split(".")[0] if m else ""
    return top if top and top != chain.name.split(".")[0] else ""


# A loader's or the import system's own failure names what broke; a requirement missing is
# the reading only for a package's own message ("could not find Polars' Rust module").
_LOADER_WORDS = re.compile(r"undefined symbol|shared object|\.so\b|\.dll\b|version `|GLIBC|"
                           r"cannot import name|DLL load failed|No module named")


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def _requirement_for(chain: ImportChain, kind: str, message: str) -> list[str]:
    """For a ``No module named 'x'`` raised by the package's import: the unconditional
    requirements of its distribution that are not installed — the one named like the module
    when there is one (xgrammar without transformers), else all of them (a module named
    unlike its distribution: PIL is pillow's). Empty for a module of the package itself."""
    m = _NO_MODULE.search(message)
    if not m:
        return _named_requirement(chain, kind, message)
    if kind != "ModuleNotFoundError":
        return []
    top = m.group(1).split(".")[0]
    if top == chain.name.split(".")[0]:
        return []
    if "." in m.group(1) and any(os.path.isdir(os.path.join(entry or ".", top))
                                 for entry in chain.sys_path):
        # A submodule of an installed package (nvidia-modelopt: 'torch.onnx._globals', which
        # torch 2.13 no longer has): no requirement to install brings it (OD325 for torch's).
        return []
    absent = _uninstalled_requirements(chain)
    named = [a for a in absent if normalized(a) == normalized(top)]
    if not named and _undeclared_framework(chain, message):
        return []  # not one of its requirements: the fix names the framework itself
    return named or absent


_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([\w.-]+)["']""")


def _extra_providing(chain: ImportChain, kind: str, message: str) -> str:
    """The fix when the import died on ``No module named 'x'`` and ``x`` is a requirement of
    one of the distribution's extras only (greenlet's test extension imports objgraph, which
    greenlet requires under ``extra == "test"``): ``pip install 'dist[extra]'``; else ""."""
    m = _NO_MODULE.search(message)
    if kind != "ModuleNotFoundError" or not m or not chain.dist:
        return ""
    top = normalized(m.group(1).split(".")[0])
    extras = sorted({x.group(1) for name, _spec, marker in requirement_rows(chain.dist)
                     if normalized(name) == top and (x := _EXTRA_MARKER.search(marker))})
    if not extras:
        return ""
    dist = distribution(chain.dist)[0]
    return (f"pip install '{dist}[{extras[0]}]' ({m.group(1).split('.')[0]} is a requirement "
            f"of {dist}'s optional '{extras[0]}' extra"
            + (f" — also of {', '.join(repr(x) for x in extras[1:])}" if extras[1:] else "")
            + ", which a plain install leaves out)")


# The frameworks' import names → their distributions: an import of one that the package's
# metadata does not require is no requirement a partial install left out.
_FRAMEWORK_DISTS = {"torch": "torch", "tensorflow": "tensorflow", "mindspore": "mindspore",
                    "oneflow": "oneflow", "paddle": "paddlepaddle", "jax": "jax",
                    "onnxruntime": "onnxruntime"}


def _undeclared_framework(chain: ImportChain, message: str) -> str:
    """The framework's distribution when the import died on ``No module named '<framework>'``
    and the package's distribution does not require it (onnxruntime-training 1.19's
    ``onnxruntime.training.api`` imports torch, which its metadata never names: the fix was
    "pip install cerberus sympy", its other absent requirements; survey 18); else ""."""
    m = _NO_MODULE.search(message)
    dist = _FRAMEWORK_DISTS.get(m.group(1).split(".")[0], "") if m else ""
    if not dist or not chain.dist:
        return ""
    if normalized(dist) in {normalized(r) for r in requirements(chain.dist)}:
        return ""
    return dist


def _imported_unguarded_first(link: Link, chain: ImportChain) -> str:
    """``file:line`` of an import of the same module that runs before ``link`` and is not
    guarded (module level, no handler, not a fallback): earlier in the same file, or in the
    package's ``__init__.py`` (run first); "" when there is none."""
    if link.kind != "submodule" or not chain.package_dir:
        return ""
    init = os.path.realpath(os.path.join(chain.package_dir, "__init__.py"))
    for other in chain.links:
        if other is link or other.kind != "submodule" or other.target != link.target or \
                other.swallowed or other.function or other.lazy or other.fallback or \
                other.problem or other.checked:
            continue
        same = os.path.realpath(other.file) == os.path.realpath(link.file)
        if (same and other.line < link.line) or (not same and os.path.realpath(other.file) ==
                                                  init):
            return f"{_rel(other.file, chain)}:{other.line}"
    return ""


def _imported_again(link: Link, chain: ImportChain) -> str:
    """``file:line`` of an import of the same module in the handler of ``link``'s try (an
    unguarded one: a failed load raises from the handler too); "" when there is none."""
    if link.kind != "submodule":
        return ""
    here = os.path.realpath(link.file)
    for other in chain.links:
        if other is not link and other.kind == "submodule" and other.target == link.target \
                and other.fallback and not other.swallowed and other.line > link.line and \
                os.path.realpath(other.file) == here and other.function == link.function:
            return f"{_rel(other.file, chain)}:{other.line}"
    return ""


def _named_requirement(chain: ImportChain, kind: str, message: str) -> list[str]:
    """For the package's own words on a missing part ("jax requires jaxlib to be installed",
    a ModuleNotFoundError or ImportError that is not the loader's): the uninstalled
    requirements of its distribution that the message names, each with its version specifier
    as a pip argument (jax pins the jaxlib it was released with)."""
    if kind not in ("ModuleNotFoundError", "ImportError") or not chain.dist or \
            _LOADER_WORDS.search(message):
        return []
    words = {normalized(w) for w in re.findall(r"[A-Za-z][\w.-]*[A-Za-z0-9]", message)}
    return [_pip_arg(name, spec)
            for name, spec in uninstalled_requirements(chain.dist, chain.sys_path)
            if normalized(name) in words]


def _defines_hidden(path: str, name: str) -> bool:
    """Whether ``path``'s ``.symtab`` defines ``name`` as a local or hidden symbol (a stripped
    file: no)."""
    from opdoctor.facts.core import read_elf

    def read(img: ElfImage) -> bool:
        for sym in img.symtab():
            if sym.shndx and img.cstring(sym.strtab, sym.st_name) == name:
                return sym.binding == 0 or sym.other & 3 in (1, 2)  # STB_LOCAL / hidden
        return False
    return read_elf(path, read, False)


def _setuptools_without_pkg_resources(chain: ImportChain) -> str:
    """The release of the setuptools first on sys.path when it is 82 or later (those ship no
    pkg_resources); "" otherwise."""
    for entry in chain.sys_path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") and normalized(distribution(n)[0]) == "setuptools":
                version = distribution(n)[1]
                major = re.match(r"\d+", version)
                return version if major and int(major.group(0)) >= 82 else ""
    return ""


def _uninstalled_requirements(chain: ImportChain) -> list[str]:
    """The unconditional Requires-Dist of the package's distribution that no sys.path
    directory has a ``*.dist-info`` of (polars without polars-runtime-32)."""
    if not chain.dist:
        return []
    return [name for name, _spec in uninstalled_requirements(chain.dist, chain.sys_path)]


def _imported_by_dependent(chain: ImportChain, max_files: int = 3000) -> str:
    """``file:line`` of an import of this package by another installed distribution that
    requires this package's distribution (its METADATA's Requires-Dist), read from that
    distribution's own top-level packages (bounded); "" when there is none."""
    if not chain.dist or not chain.package_dir:
        return ""
    site = os.path.dirname(chain.dist)
    ours = normalized(distribution(chain.dist)[0])
    top = chain.name.split(".")[0]
    pattern = re.compile(r"^\s*(?:from|import)\s+" + re.escape(top) + r"\b", re.M)
    seen = 0
    for info in sorted(os.listdir(site)):
        if not info.endswith(".dist-info") or os.path.join(site, info) == chain.dist or \
                ours not in {normalized(r) for r in requirements(os.path.join(site, info))}:
            continue
        for t in sorted(top_levels(os.path.join(site, info), record=False)):
            for dirpath, _dirs, files in os.walk(os.path.join(site, t)):
                for f in files:
                    seen += 1
                    if seen > max_files:
                        return ""
                    if not f.endswith(".py"):
                        continue
                    path = os.path.join(dirpath, f)
                    try:
                        with open(path, encoding="utf-8", errors="replace") as fh:
                            text = fh.read(1 << 20)
                    except OSError:
                        continue
                    m = pattern.search(text)
                    if m:
                        line = text.count("\n", 0, m.start()) + 1
                        return f"{os.path.relpath(path, site)}:{line}"
    return ""


def _dotted_module(file: str, chain: ImportChain, name: str) -> str:
    """``pkg.sub.mod`` for ``…/pkg/sub/mod.py``: the name ``python -m`` takes."""
    rel = _rel(file, chain)
    if rel == file:  # not under the package's parent directory
        return f"{name}.{os.path.basename(file)[:-3]}"
    return rel[:-3].replace(os.sep, ".")


def _entry_source(origin: str) -> str:
    """Where to take a sys.path entry away, for a fix: the file or variable that adds it
    (:func:`entry_origin`), else the usual places."""
    if origin == "PYTHONPATH":
        return "it is on PYTHONPATH"
    return f"{origin} puts it there" if origin else "PYTHONPATH, cwd"


def _installed_copies(name: str, win: Candidate, others: list[Candidate],
                      releases: dict[str, str], ev: list[str], origin: str = "") -> Finding:
    """OD502 for several copies of a package whose winner has what it needs. Copies that pip
    installed (each one's RECORD lists it) are no stale checkout: the same release twice is
    harmless (a note), another release hidden is a warning that names both — `pip list
    --path` on the other directory reports the release that import does not run."""
    many = f"{len(others)} other cop{'y' if len(others) == 1 else 'ies'} of {name} on sys.path"
    mine = releases.get(win.path, "")
    theirs = [releases.get(c.path, "") for c in others]
    if not mine or not all(theirs):  # a checkout or a build tree among them
        return OD502.finding(name, f"{many}; {win.path} wins", ev, severity=Severity.WARNING)
    ev = [ev[0] + f", installed by {mine}",
          *[f"{line}, installed by {rel}" for line, rel in zip(ev[1:], theirs, strict=True)]]
    if all(rel == mine for rel in theirs):
        dirs = ", ".join(sorted({os.path.dirname(c.path) for c in others}))
        return OD502.finding(name, f"{many}, all installs of {mine}; {win.path} wins", ev,
                             severity=Severity.INFO,
                             fix=f"nothing breaks: each copy is {mine}. Uninstall the ones this "
                             f"job does not need ({dirs}) so that an upgrade of one cannot hide "
                             "behind another.")
    other = sorted({rel for rel in theirs if rel != mine})
    dirs = ", ".join(sorted({os.path.dirname(c.path) for c, rel in zip(others, theirs, strict=True)
                             if rel != mine}))
    return OD502.finding(name, f"import {name} runs {mine} ({win.path}); {', '.join(other)} "
                         f"installed later on sys.path is hidden", ev, severity=Severity.WARNING,
                         fix=f"`python -m pip list --path DIR` reports {', '.join(other)} for "
                         f"{dirs}, which import never runs: uninstall the copy this job should "
                         "not use, or " + (f"take {os.path.dirname(win.path)} off sys.path "
                                           f"({_entry_source(origin)})." if origin else
                                           "put the wanted directory first on sys.path "
                                           "(PYTHONPATH)."))


def _same_distribution(mine: str, theirs: list[str]) -> bool:
    """Whether every copy is a release of the distribution ``mine`` names ("PyYAML 6.0.2"
    against "pyyaml 6.0.4": the names as pip compares them)."""
    name = normalized(mine.split(" ")[0]) if mine else ""
    return bool(name) and all(t and normalized(t.split(" ")[0]) == name for t in theirs)


def _rel(path: str, chain: ImportChain) -> str:
    pkg = chain.package_dir
    if pkg and path.startswith(os.path.dirname(pkg) + os.sep):
        return os.path.relpath(path, os.path.dirname(pkg))
    return path


def _probe_mapped(facts: Facts, files: list[str]) -> bool:
    """True when the probe's real import mapped one of ``files``: the package does load its
    libraries, through code the static walk cannot follow (tensorflow_text's python/ops/*.py
    call tf.load_op_library via a resource helper). Probe evidence outranks the static walk."""
    res = facts.probe_result() if facts.options.probe else None
    return res is not None and res.maps(*files)


def run(facts: Facts) -> Iterator[Finding]:
    """Static findings of the chain, then the probe's observations in package mode."""
    chain = facts.chain
    if chain is None:
        return
    name = chain.name
    order = [f"sys.path[{i}] = {e or '(cwd) ' + (facts.options.cwd or os.getcwd())}" for i, e in
             enumerate(facts.interpreter.sys_path if facts.interpreter else [])]
    if not chain.candidates:
        yield _not_found(name, order, chain, facts)
        return
    win = chain.winner
    assert win is not None
    another = _target_for_another_python(facts, chain)
    if another is not None:
        yield another
    # A directory without __init__.py (a namespace portion) never wins over a regular package,
    # wherever it is on sys.path: a data or output directory named like the package in the
    # working directory hides nothing, whatever files lie below it (torchrec run from a
    # directory called torchrec that holds the site-packages).
    # `--package lz4.frame` run from lz4's source tree: Python imports `lz4` first, and the
    # tree's copy without compiled modules hides the installed one — the dotted module's own
    # candidates are all below that copy (survey 24's F4: "build the extension into the
    # package directory"); the top-level package's copies are what tell it
    cchain, cname, cwin = chain, name, win
    if "." in name and len(chain.candidates) < 2:
        top = _top_level_chain(facts, name.split(".")[0])
        if top is not None and top.winner is not None and len(top.candidates) > 1:
            cchain, cname, cwin = top, top.name, top.winner
    others = [c for c in cchain.candidates if c is not cwin and
              (cwin.kind == "namespace" or c.kind != "namespace")]
    if others:
        origin = entry_origin(cwin.entry, cchain.sys_path, facts.environ)
        ev = [f"import {cname} → {cwin.path} ({cwin.kind}, from sys.path entry "
              f"{cwin.entry or '(cwd)'!r}" + (f", which {origin} puts there" if origin else "")
              + ")"]
        ev += [f"hidden: {c.path} ({c.kind}, later on sys.path)" for c in others]
        win_so = facts.shared_libraries_under(cwin.path)
        other_so = [f for c in others for f in facts.shared_libraries_under(c.path)]
        if not win_so and other_so:
            hidden_so = os.path.basename(other_so[0])
            foreign = sorted({b for lk in cchain.links for b in lk.other_builds})
            has = (f"no extension for this machine (only {', '.join(foreign[:2])})" if foreign
                   else "no compiled extension")
            dist, version = distribution(cchain.dist) if cchain.dist else ("", "")
            there = (f"`pip install --force-reinstall --no-deps --target "
                     f"{os.path.dirname(cwin.path)} '{dist}=={version}'` with this machine's pip"
                     if foreign and dist and version else "`pip install -e .` there")
            # The import works (markupsafe runs its pure-Python fallback): worth knowing, not
            # the verdict.
            works = _imported_fine(facts)
            yield OD502.finding(cname, f"import {cname} picks {cwin.path}, which has {has}; the "
                                f"installed copy with {hidden_so} is hidden"
                                + ("; the import works without it" if works else ""), ev,
                                fix=f"run from outside {os.path.dirname(cwin.path)} or remove it "
                                f"from sys.path ({_entry_source(origin)}); or {there}",
                                severity=Severity.WARNING if works else None)
        elif facts.options.wheel and cwin.kind != "namespace" and _same_distribution(
                cchain.releases.get(cwin.path, ""), [cchain.releases.get(c.path, "")
                                                   for c in others]):
            # The wheel being checked is unpacked ahead of the environment's copy on purpose:
            # that copy hides nothing a `pip install` of the wheel would keep (it replaces
            # it). A note: pyyaml's 6.0.2 wheel beside an installed 6.0.4 failed every
            # `--fail-on warning` gate with opdoctor's own temporary directory (survey 20).
            installed = [f"{cchain.releases.get(c.path) or c.path}" for c in others]
            yield OD502.finding(cname, f"the environment also has {', '.join(installed)}; the "
                                f"wheel's {cchain.releases.get(cwin.path) or cname} was checked, "
                                "as `pip install` of the wheel would replace it", ev,
                                severity=Severity.INFO, fix="nothing to do for the wheel")
        elif cwin.kind != "namespace":
            yield _installed_copies(cname, cwin, others, cchain.releases, ev, origin)
    if win.kind == "namespace" and _lost_its_init(win.path) and not _namespace_by_design(chain):
        inside = facts.shared_libraries_under(win.path)[:3]
        yield OD506.finding(name, f"{win.path} has no __init__.py: it imports as a namespace "
                            "package and loads nothing", (f"{win.path}/__init__.py: missing",
                                                          *[f"contains {os.path.basename(f)}"
                                                            for f in inside]),
                            fix=f"Add {os.path.basename(win.path)}/__init__.py (and make sure "
                            "the build includes it in the wheel).")
    yield from _before_torch(facts, chain)
    yield from _system_library_by_name(facts, chain)
    yield from _program_as_library(facts, chain)
    yield from _shadowed_imports(facts, chain)
    yield from _own_modules_shadowed(facts, chain)
    yield from _first_party_imports(facts, chain)
    retried_fine = _retried_fine(facts, chain)
    other_python: dict[str, list[str]] = {}  # one OD503 per module, however many import it
    for link in chain.links:
        # one line: a parenthesised multi-line import kept its newlines and comments
        where = f"{_rel(link.file, chain)}:{link.line}: {one_line(link.text, 120)}"
        if link.problem.startswith("no file for this interpreter"):
            other_python.setdefault(link.target, []).append(where)  # reported after the walk
        elif link.problem and link.kind in ("load_library", "cdll") and "does not exist" in \
                link.problem and not link.fallback and not link.checked:
            # a fallback in an except, or a load under `if os.path.exists(…)`: not the path
            yield OD510.finding(link.target, f"the package loads {link.resolved[0]}, which does "
                                "not exist", (where,))
        elif _missing_import(link):
            # Inside a function it runs when that is called; beside a working import it is a
            # branch the import did not take: worth knowing, not the verdict.
            not_now = bool(link.function) or _imported_fine(facts)
            rebuild = _editable_rebuild(chain) if _may_be_built(link) else ""
            yield OD510.finding(link.target, f"{link.target}: {link.problem}"
                                + (f" (in {link.function}(): when it is called)"
                                   if link.function else ""), (where,),
                                severity=Severity.WARNING if not_now else None,
                                **({"fix": rebuild} if rebuild else {}))
        if link.swallowed and not link.swallowed.endswith(REPORTED) and \
                not _optional(link) and _leads_to_compiled(link):
            # A load's target is its argument's text: a variable (z3's `ctypes.CDLL(d)` in a
            # loop over candidate paths) is no module; the statement names what is loaded.
            what = f"the load `{one_line(link.text, 120)}`" if link.kind in \
                ("cdll", "load_library") else f"the import of {link.target}"
            later = link.kind == "submodule" and link.function
            works = not later and link.target in retried_fine
            first = "" if later or works else _imported_unguarded_first(link, chain)
            again = "" if later or works or first else _imported_again(link, chain)
            if again:
                yield OD509.finding(link.target, f"{what} is inside `{link.swallowed}`, whose "
                                    f"handler imports {link.target} again ({again}): a failed "
                                    "load raises there; the handler only covers names the "
                                    "module may lack", (where, f"handler: {link.swallowed}"),
                                    severity=Severity.INFO)
                continue
            if first:
                # gmpy2: `from .gmpy2 import *` at line 1, then `try: from .gmpy2 import
                # _C_API … except ImportError:` — a test for names (absent in static builds) of
                # a module already loaded; pycurl's __init__.py imports _pycurl before
                # async_multi.py tries its optional constants (survey 10)
                yield OD509.finding(link.target, f"{what} is inside `{link.swallowed}`, but "
                                    f"{link.target} is imported unguarded before it ({first}): "
                                    "a failed load raises there; the handler only covers "
                                    "names the module may lack", (where, f"handler: "
                                                                  f"{link.swallowed}"),
                                    severity=Severity.INFO)
                continue
            other = re.search(r"\(asks whether ([\w.]+) is installed\)", link.checked)
            if other and link.kind in ("cdll", "load_library"):
                # pulp 3.3: `if find_spec("highspy") …: CDLL(<highspy's _core*.so>,
                # RTLD_GLOBAL)` in `except Exception: pass` — a preload of another installed
                # package's library, whose own import loads it (and raises) again
                yield OD509.finding(link.target, f"{what} is inside `{link.swallowed}` that "
                                    f"discards the error, under `{link.checked}`: an optional "
                                    f"preload of {other.group(1)}'s library, which "
                                    f"`import {other.group(1)}` loads (and reports) itself",
                                    (where, f"handler: {link.swallowed}"),
                                    severity=Severity.INFO)
                continue
            backup = "" if later or works else _fallback_import(link, chain)
            designed = "" if later or works or backup or link.kind != "submodule" else \
                designed_fallback(link.file, link.line, chain.name)
            if designed:
                # frozenlist, propcache, aiohttp: a C accelerator over a pure-Python version
                # (the probe's retry says the same where the extension does import)
                yield OD509.finding(link.target, f"{what} is inside `{link.swallowed}`; "
                                    f"{designed} (a pure-Python fallback): nothing is lost but "
                                    "speed", (where, f"handler: {link.swallowed}"),
                                    severity=Severity.INFO)
                continue
            if backup:
                # rapidfuzz: `with suppress(ImportError): from .fuzz_cpp_avx2 import ratio`,
                # then `from .fuzz_cpp import ratio`: a CPU-specific build tried first, the
                # same names imported after it — a failure there loses nothing
                yield OD509.finding(link.target, f"{what} is inside "
                                    f"`{link.swallowed}`; the same names are imported from "
                                    f"{backup} after it (a fallback): nothing is lost",
                                    (where, f"handler: {link.swallowed}"),
                                    severity=Severity.INFO)
                continue
            # --static: nothing retried it, but reading the file can: built for this
            # interpreter, its libraries found, its symbols defined (pyarrow's optional
            # filesystems, cffi's _cffi_backend) — a handler that would hide a failure, and
            # none to hide that reading can see.
            looks, fails = (False, "") if later or works or facts.options.probe else \
                _read_load(link, facts)
            yield OD509.finding(link.target, f"{what} is inside "
                                f"`{link.swallowed}` that discards the error"
                                + (f" (in {link.function}(): a fallback when it is called)"
                                   if later else "")
                                + ("; it imports here (the probe retried it): nothing is "
                                   "hidden now" if works else "")
                                + (f"; statically {fails} looks loadable (built for this "
                                   "interpreter, every library and symbol it needs found): "
                                   "run without --static to have the probe import it"
                                   if looks else "")
                                + (f"; reading it, the load fails: {fails}"
                                   if fails and not looks else ""),
                                (where, f"handler: {link.swallowed}"),
                                severity=Severity.INFO if later or works or looks else None)
        for f in link.resolved:
            if link.kind == "submodule" and (f.endswith(".so") or ".so." in f):
                mod = link.target.rsplit(".", 1)[-1]
                ok, have = facts.pyinit_exports(f, mod)
                if not ok:
                    exports = ", ".join(have) or "no PyInit_"
                    if _defines_hidden(f, f"PyInit_{mod}"):
                        # survey 23's F2: linked with a version script `{ local: *; }`: the
                        # name is right, the symbol is there, only not exported
                        yield OD416.finding(
                            link.target, f"{os.path.basename(f)} defines PyInit_{mod} but "
                            "does not export it (a local symbol: hidden by a linker version "
                            "script or by -fvisibility=hidden)",
                            (f"exports: {exports}", f".symtab: PyInit_{mod} (local or hidden)",
                             where),
                            fix=f"export PyInit_{mod}: declare it with PyMODINIT_FUNC (which "
                            "gives it default visibility) and list it under `global:` in the "
                            "linker version script (or drop the script); the file's name is "
                            "right")
                        continue
                    yield OD416.finding(link.target, f"{os.path.basename(f)} does not export "
                                        f"PyInit_{mod}", (f"exports: {exports}", where))
    for target, sites in other_python.items():
        yield _other_builds(facts, chain, target, sites)
    loaded = {f for link in chain.links for f in link.resolved}
    unloaded = [f for f in chain.extensions_on_disk if f not in loaded]
    if win.kind == "package" and chain.extensions_on_disk and not chain.libraries:
        # Only code the package itself must import or load counts: a plain C library that
        # another module dlopens by path (soundfile's _soundfile_data/libsndfile) does not.
        unloaded = [f for f in unloaded if facts.imports_as_code(f)]
    if win.kind == "package" and unloaded and not chain.libraries and \
            not any(link.problem for link in chain.links) and not chain.truncated \
            and not _probe_mapped(facts, unloaded) and not loader_calls(chain, unloaded):
        never = (f"{_rel(os.path.join(win.path, '__init__.py'), chain)}: no import of a "
                 "compiled module, no load_library/CDLL",
                 *[f"on disk: {_rel(f, chain)}" for f in unloaded[:3]])
        from opdoctor.facts.core import extension_name

        importer = _imported_by_dependent(chain)
        modules = [f for f in unloaded if facts.plain_python_module(f)]
        if len(modules) == len(unloaded):
            # jax-cuda12-plugin: an empty __init__.py, and each library a Python extension
            # module that jaxlib imports by name (`jax_cuda12_plugin._hybrid`), linking no
            # framework: no operator depends on the package's own import (survey 19)
            yield OD505.finding(name, f"{name}/__init__.py imports none of its extension "
                                f"modules {', '.join(os.path.basename(f) for f in modules[:3])}"
                                ": Python modules (their own PyInit_) that link no framework, "
                                "imported by name by the code that uses them"
                                + (f" ({importer})" if importer else ""),
                                (*never, *[f"exports PyInit_{extension_name(f)}; needs no "
                                           f"framework library: {_rel(f, chain)}"
                                           for f in modules[:3]]),
                                severity=Severity.INFO,
                                fix=f"nothing to fix: `import {name}."
                                f"{extension_name(modules[0])}` imports one")
        elif importer:
            # polars-runtime-32: its package only carries the extension; polars (which
            # requires that distribution) imports _polars_runtime_32._polars_runtime itself
            yield OD505.finding(name, f"{name}/__init__.py never imports "
                                f"{', '.join(os.path.basename(f) for f in unloaded[:3])}: "
                                f"{importer} does (its distribution requires this one)",
                                (*never, f"imported by: {importer}"), severity=Severity.INFO,
                                fix="nothing to fix; check the package that imports it")
        else:
            yield OD505.finding(name, f"{name}/__init__.py never imports or loads "
                                f"{', '.join(os.path.basename(f) for f in unloaded[:3])}", never)
    for file, line in chain.script_relative:
        # In an installed distribution such a module is an entry point for `python -m`
        # (intel-extension-for-pytorch's launchers): worth knowing, not a warning. In a
        # source tree it is the script someone runs by its path.
        yield OD507.finding(_rel(file, chain), f"{_rel(file, chain)} uses a relative import "
                            "and has a __main__ block: running it as a script fails",
                            (f"{_rel(file, chain)}:{line}: relative import",),
                            fix=f"run it as python -m {_dotted_module(file, chain, name)}",
                            severity=Severity.INFO if chain.dist else None)
    missing = [p for p in chain.record_missing if _in_site(p)]
    changed = [p for p in chain.record_changed if _in_site(p)]
    mixed = _releases_over_each_other(facts, chain)
    if mixed is not None:
        yield mixed
        missing = changed = []  # each RECORD disagrees with the mix: the same story
    if missing or changed:
        ev = [f"RECORD: {chain.dist}/RECORD"]
        ev += [f"missing: {p}" for p in missing[:6]]
        ev += [f"changed since install (hash differs): {p}" for p in changed[:6]]
        # the distribution's own name in the fix ("duckdb-2.0.1.dist-info" → duckdb==2.0.1)
        dist, ver = distribution(chain.dist)
        pin = f"'{dist}=={ver}'" if dist and ver else "<distribution>"
        # A changed file the real import loaded and ran with (xxhash's extension cut after
        # its segments) breaks nothing now: worth knowing, not the verdict.
        imported = changed and _imported_fine(facts)
        # --static: a changed library that still reads as loadable for this machine (a
        # `strip --strip-all`, as slim images do to every .so: survey 24's H15) is worth a
        # warning; one of another release that needs what is not here stays the error
        loadable = bool(changed) and not imported and not facts.options.probe and \
            _still_loadable(facts, [os.path.join(os.path.dirname(chain.dist), p)
                                    for p in changed])
        harmless = (not changed or imported or loadable) and \
            not (missing and _missing_on_the_path(facts, chain, missing))
        if facts.options.wheel:
            # A wheel file edited after it was built: pip installs it (it does not verify
            # RECORD), stricter installers refuse it. Not "installed files", no reinstall from
            # the index, and one severity whether the probe ran or not (survey 20: the gate
            # flipped with --static).
            # the files by name, as the wheel lists them (pillow without its vendored libjpeg)
            gone = f": {', '.join(_rel(p, chain) for p in missing[:3])}" + (
                f" … {len(missing) - 3} more" if len(missing) > 3 else "") + ";" \
                if missing else ","
            yield OD508.finding(
                name, f"the wheel's RECORD does not match its files ({len(missing)} missing"
                f"{gone} {len(changed)} changed): it was modified after it was built",
                [line.replace("changed since install", "changed since the wheel was built")
                 for line in ev],
                fix="Rebuild the wheel (python -m build --wheel); to change an unpacked wheel, "
                "repack it with `wheel pack` (it rewrites RECORD) — never edit a .whl in place. "
                "pip installs it anyway (it does not check RECORD); `python -m installer "
                "--validate-record all` and hash-checking mirrors reject it.",
                severity=None if missing and _missing_on_the_path(facts, chain, missing)
                else Severity.WARNING)
            missing = changed = []
        if missing or changed:
            yield OD508.finding(name, f"the installed files of {os.path.basename(chain.dist)} "
                                f"differ from its RECORD ({len(missing)} missing, "
                                f"{len(changed)} changed)" + (
                                    ("; the import works with them" if imported else
                                     "; each changed library still reads as loadable here "
                                     "(a `strip` changes the hash only)" if loadable else
                                     "; nothing the import runs needs them")
                                    if harmless else ""), ev,
                                fix=f"{reinstall_command(facts, pin, chain.dist)}; never "
                                "rebuild into site-packages by hand.",
                                severity=Severity.WARNING if harmless else None)
    yield from _stale_extensions(facts, chain)
    yield from _legacy_keras_missing(facts, chain)
    another = _installed_for_another_python(facts, chain)
    if another is not None:
        yield another
    for req in _requirements_not_installed(facts, chain):
        # A wheel file's requirements missing where it is checked are the environment's, not
        # the wheel's (installing it brings them): a warning in both modes (survey 20).
        yield dataclasses.replace(req, severity=Severity.WARNING) \
            if facts.options.wheel and req.severity is Severity.ERROR else req
    yield from _dynamic(facts, chain)


def _other_builds(facts: Facts, chain: ImportChain, target: str, sites: list[str]
                  ) -> Finding:
    """OD503 (builds for other Python versions only) or OD418 (for another CPU, OS or C
    library): what the file names say, and the reinstall that brings this machine's file.
    A warning when every import of it is caught and the package runs without it (msgpack's
    pure-Python fallback), an error otherwise."""
    links = [lk for lk in chain.links
             if lk.target == target and lk.problem.startswith("no file for this interpreter")]
    interp = facts.interpreter
    suffix = interp.ext_suffix if interp else ".so"
    names = links[0].other_builds
    what = {w for n in names for w in built_for(n, suffix)}
    # another Python, free-threaded included (regex's cp313t wheel was "another platform")
    platform = sorted(w for w in what if "CPython " not in w)
    more = f"+{len(sites) - 4} more imports of it" if len(sites) > 4 else ""
    evidence = (*sites[:4], *([more] if more else []))
    dist, version = distribution(chain.dist) if chain.dist else ("", "")
    pin = f"'{dist}=={version}'" if dist and version else chain.name
    caught = all(lk.swallowed and not lk.swallowed.endswith(REPORTED) for lk in links) and \
        _imported_fine(facts)
    severity = Severity.WARNING if caught else None
    tail = "; the package catches the failed import and runs without it" if caught else ""
    if platform:
        # into the directory the copy is in (a `--target … --platform` copy on PYTHONPATH:
        # a plain reinstall lands in the venv, behind it; survey 23's V3)
        how = reinstall_command(facts, pin, chain.dist) if chain.dist else \
            f"pip install --force-reinstall --no-deps {pin}"
        return OD418.finding(target, f"{target}: {links[0].problem}{tail}", evidence,
                             fix=f"{how} with this "
                             "machine's pip, without --platform or --python-version (it picks "
                             f"the wheel for this machine), or build it here; the files here are "
                             f"for {' / '.join(platform)}.", severity=severity)
    fits = [t for t in wheel_tags(chain.dist) if _tag_fits(t, suffix)] if chain.dist else []
    if fits and not platform:
        # kaldifeat 1.4, k2 1.23.2: a `py38-none-any` wheel holding a CPython 3.8 extension —
        # pip takes it for any Python, so the reinstall brings the same files (survey 19)
        return OD503.finding(
            target, f"{target}: {links[0].problem}{tail} — the wheel is mis-tagged "
            f"{fits[0]}: pip installs it on this Python", [*evidence,
                                                           f"{os.path.basename(chain.dist)}/"
                                                           f"WHEEL: Tag: {fits[0]}"],
            fix=f"No reinstall helps: {dist} {version}'s wheel claims to fit this Python "
            f"({fits[0]}) but holds {', '.join(sorted(what)) or 'another build'}'s files, so "
            "pip brings the same ones. Run the Python they were built for, install a release "
            f"of {dist} that publishes a wheel for this Python, or build it from its source "
            f"distribution (pip install --no-binary {dist} {dist}).", severity=severity)
    renamed = _renamed_wheel(facts, chain)
    if renamed:
        named, tags = renamed
        return OD503.finding(
            target, f"{target}: {links[0].problem}{tail} — the wheel's file name says {named}, "
            f"its WHEEL metadata {tags}: it was renamed", [*evidence, f"wheel file: "
                                                          f"{os.path.basename(facts.options.wheel)}",
                                                          f"{os.path.basename(chain.dist)}/WHEEL: "
                                                          f"Tag: {tags}"],
            fix=f"Use the wheel built for this Python ({dist} {version}'s {named} wheel, or "
            f"build one here: pip wheel --no-deps --no-binary {dist} {dist}=={version}); pip "
            f"installs a wheel by its file name, so this {tags} build installs here and its "
            "import fails — and fix whatever renamed it (a CI step, an upload script).",
            severity=severity)
    fix = (f"{reinstall_command(facts, pin, chain.dist)} with this interpreter (its pip "
           "picks the wheel for this Python)" if chain.dist else
           "Rebuild/reinstall the package with this interpreter (python -m pip install "
           "--force-reinstall .)") + ", or run the Python the files were built for."
    hidden = _hidden_install_for_this_python(chain)
    if hidden:
        # survey 22's E1: numpy 2.5.5 for CPython 3.12 unpacked with --target onto PYTHONPATH,
        # numpy 2.4.6 installed for this Python behind it; "reinstall numpy==2.5.5" named a
        # release with no wheel for this Python, into a place the PYTHONPATH copy still beats
        entry, release = hidden
        where = os.path.dirname(chain.winner.path) if chain.winner else ""
        fix = (f"take {where} off sys.path for this job (PYTHONPATH): {release}, installed "
               f"for this Python at {entry}, is behind it; or replace the copy there with a "
               f"build for this Python (pip install --upgrade --force-reinstall --no-deps "
               f"--target {where} {dist or chain.name}, without the pin: {dist} {version} may "
               "publish no wheel for this Python).")
    return OD503.finding(target, f"{target}: {links[0].problem}{tail}", evidence, fix=fix,
                         severity=severity)


def _hidden_install_for_this_python(chain: ImportChain) -> tuple[str, str] | None:
    """(path, "name version") of an installed copy of the package later on sys.path than the
    one imported, when the imported one sits outside the interpreter's own site directories
    (a --target directory on PYTHONPATH); None otherwise."""
    from opdoctor.facts.pychain import installed_release

    cands = [c for c in chain.candidates if c.kind != "namespace"]
    if len(cands) < 2 or "site-packages" in os.path.basename(os.path.dirname(cands[0].path)):
        return None
    for c in cands[1:]:
        release = installed_release(c)
        if release and "site-packages" in c.path:
            return c.path, release
    return None


def _installed_for_another_python(facts: Facts, chain: ImportChain) -> Finding | None:
    """OD503 for an installed distribution with compiled modules whose WHEEL tags name
    another CPython only (cp312-cp312-…, none fitting this interpreter): its modules are that
    Python's builds whatever their file names say. ctranslate2 4.8.5's cp312 module renamed
    to the cpython-311 name was only "RECORD: 1 missing" — pybind11's "module was compiled for
    Python 3.12" said what it is (survey 21's W6). A wheel file being checked is the other
    check's (``_renamed_wheel``); tags of another platform are OD418's."""
    if not chain.dist or facts.options.wheel or not chain.extensions_on_disk:
        return None
    interp = facts.interpreter
    suffix = interp.ext_suffix if interp else ""
    here = interpreter_tag(suffix) if suffix else None
    # (modules named for another Python are the import chain's OD503 already: only files
    # that carry this interpreter's own suffix — renamed — are read here)
    if here is None or not any(f.endswith(suffix) for f in chain.extensions_on_disk):
        return None
    tags = wheel_tags(chain.dist)
    if not tags or any(_tag_fits(t, suffix) for t in tags):
        return None
    minor, machine = here
    others = sorted({p for t in tags for p in t.split("-")[0].split(".")
                     if re.fullmatch(r"cp3\d+t?", p) and p != f"cp3{minor}"})
    plats = [p for t in tags for p in t.split("-")[-1].split(".")]
    if not others or not any(p == "any" or p.endswith(machine) for p in plats):
        return None
    dist, version = distribution(chain.dist)
    pin = f"'{dist}=={version}'" if dist and version else dist
    pythons = " / ".join(f"CPython 3.{o[3:].rstrip('t')}" + (" (free-threaded)" if
                                                               o.endswith("t") else "")
                         for o in others)
    return OD503.finding(
        chain.name, f"{dist} {version} was installed from a wheel for {pythons} "
        f"({tags[0]}); this interpreter is CPython 3.{minor}: its compiled modules are "
        f"{pythons}'s builds, whatever their file names say",
        (f"{os.path.basename(chain.dist)}/WHEEL: Tag: {', '.join(tags[:3])}",
         f"this interpreter's extension suffix: {suffix}",
         *[f"compiled module: {_rel(f, chain)}" for f in chain.extensions_on_disk[:3]]),
        fix=f"{reinstall_command(facts, pin, chain.dist)} with this interpreter's pip (it "
        f"picks the cp3{minor} wheel); never rename a module to another Python's suffix.")


def _renamed_wheel(facts: Facts, chain: ImportChain) -> tuple[str, str] | None:
    """(the tags a wheel file's name says, the tags its WHEEL metadata says) when none of the
    first is among the second: the file was renamed (orjson's cp312 wheel as
    ``…-cp311-cp311-…whl``; pip installs it under CPython 3.11 and its import fails). None for
    a target that is no wheel file, or tags that agree."""
    if not facts.options.wheel or not chain.dist:
        return None
    parts = os.path.basename(facts.options.wheel)[:-len(".whl")].split("-")
    if len(parts) < 5:
        return None
    py, abi, plat = parts[-3:]
    named = {f"{p}-{a}-{x}" for p in py.split(".") for a in abi.split(".")
             for x in plat.split(".")}
    tags = wheel_tags(chain.dist)
    if not tags or named & set(tags):
        return None
    return "-".join(parts[-3:]), tags[0] + (" …" if len(tags) > 1 else "")


def _target_for_another_python(facts: Facts, chain: ImportChain) -> Finding | None:
    """OD503 for the library checked itself when its file name says it is an extension
    module of another Python (pillow's PyPy wheel: ``_imaging.pypy311-pp73-…so``; a
    ``cpython-310`` or free-threaded ``cpython-313t`` build under CPython 3.11): this
    interpreter never imports it, whatever its symbols say (survey 20: the verdict was
    "undefined symbol: PyPyExc_MemoryError … link the library that defines it"). None when the
    package's imports already report the file, and for another platform (OD405/OD408/OD417
    read the file itself)."""
    if facts.is_package_dir or not os.path.isfile(facts.path) or facts.interpreter is None:
        return None
    name, suffix = os.path.basename(facts.path), facts.interpreter.ext_suffix
    what = built_for(name, suffix)
    if not what or not all(w.startswith(("CPython ", "free-threaded ", "PyPy")) for w in what) \
            or any(name in lk.other_builds for lk in chain.links):
        return None
    stem = name.split(".", 1)[0]
    if not facts.pyinit_exports(facts.path, stem)[0]:
        # no PyInit_<name>: not a Python module but a library loaded by path (torchao's
        # `_C_mxfp8.cpython-310-…so`, a torch op library torch.ops.load_library loads
        # whatever its name says: survey 20's re-run)
        return None
    owner = facts.installed_by
    if facts.options.wheel:
        fix = (f"This wheel ({os.path.basename(facts.options.wheel)}) is for {what[0]}: build "
               "or download the one for this Python — `pip download --no-deps --only-binary "
               ":all: <package>==<release>` run with this interpreter picks it.")
    elif owner is not None:
        from opdoctor.facts.pkgdir import distribution

        dist, version = distribution(os.path.basename(owner[0]))
        fix = (f"pip install --force-reinstall --no-deps '{dist}=={version}' with this "
               "interpreter, without --python-version (its pip picks the wheel for this "
               f"Python), or run {what[0]}.")
    else:
        fix = (f"Build it with this interpreter (python -m pip install --force-reinstall .), "
               f"or run it with {what[0]}.")
    return OD503.finding(facts.path, f"{name} is built for {what[0]}: this interpreter never "
                         f"imports it (it looks for {stem}{suffix})",
                         [f"file name: {name}", f"this interpreter's EXT_SUFFIX: {suffix}"],
                         fix=fix)


def _tag_fits(tag: str, ext_suffix: str) -> bool:
    """Whether pip on the interpreter whose extension suffix is ``ext_suffix``
    (``.cpython-311-x86_64-linux-gnu.so``) accepts a wheel tag (``py38-none-any``,
    ``cp311-cp311-manylinux_2_28_x86_64``; compressed parts such as ``py2.py3`` allowed)."""
    here = interpreter_tag(ext_suffix)
    parts = tag.split("-")
    if here is None or len(parts) != 3:
        return False
    minor, machine = here
    pys, abis, plats = (p.split(".") for p in parts)
    # (a stable-ABI wheel, cp39-abi3, fits every CPython from 3.9 on)
    py_ok = any(p in ("py3", f"cp3{minor}") or
                (re.fullmatch(r"py3(\d+)", p) is not None and int(p[3:]) <= minor) or
                ("abi3" in abis and re.fullmatch(r"cp3(\d+)", p) is not None
                 and int(p[3:]) <= minor) for p in pys)
    abi_ok = any(a in ("none", "abi3", f"cp3{minor}") for a in abis)
    plat_ok = any(p == "any" or (re.fullmatch(r"(many)?linux[\w]*_" + re.escape(machine), p)
                                 is not None) for p in plats)
    return py_ok and abi_ok and plat_ok


def _imported_fine(facts: Facts) -> bool:
    """Whether the probe imported the package (and loaded what it loads) without an error."""
    from opdoctor.facts.probe.outcome import ProbeState

    res = facts.probe_result() if facts.options.probe else None
    return res is not None and res.state is ProbeState.LOADED and res.load_error is None


def _missing_on_the_path(facts: Facts, chain: ImportChain, missing: list[str]) -> bool:
    """Whether a file RECORD lists and the disk lacks can matter to ``import``: a compiled
    library, an ``__init__.py``, a module some module of the package imports, a data file —
    or any, when the probe's import failed. A missing module nothing imports (requests'
    help.py, run only as ``python -m requests.help``) leaves a working import."""
    from opdoctor.facts.inputfile import is_shared_library

    res = facts.probe_result() if facts.options.probe else None
    if res is not None and res.load_error is not None:
        return True
    if any(p.endswith("__init__.py") for p in missing):
        return True
    libs = [p for p in missing if is_shared_library(os.path.basename(p))]
    if libs and (res is None or _needed_in_package(chain, libs)):
        return True
    if res is not None:
        # the real import worked without them — a library no library of the package NEEDs is
        # one its runtime dlopens on demand (onnxruntime's libonnxruntime_providers_shared.so,
        # for GPU providers only: CPU inference works; survey 21's W13)
        return False
    # Static: a missing module matters when any module of the package names it in an import
    # (read as text: the walk stops at its bounds, and a lazy import counts too).
    names = {os.path.basename(p)[:-3] for p in missing if p.endswith(".py")}
    if len(names) < len([p for p in missing if not p.endswith((".pyi", ".typed"))]):
        return True  # data or other files: no way to tell from the sources
    pattern = re.compile(r"^\s*(?:from|import)\s[^\n]*\b(?:" +
                         "|".join(re.escape(n) for n in sorted(names)) + r")\b", re.M)
    for file in chain.python_files[:4000]:
        try:
            with open(file, encoding="utf-8", errors="replace") as fh:
                if pattern.search(fh.read(1 << 20)):
                    return True
        except OSError:
            continue
    return False


def _needed_in_package(chain: ImportChain, libs: list[str]) -> bool:
    """Whether a compiled file of the package NEEDs (DT_NEEDED) one of ``libs`` by name."""
    from opdoctor.facts.core import needed_names

    names = {os.path.basename(p) for p in libs}
    return any(names & set(needed_names(f)) for f in chain.extensions_on_disk[:600])


# TensorFlow's lazy loader of tf.keras (tensorflow/python/util/lazy_loader.py) reads the
# variable this way; any other value means Keras 3.
_LEGACY_KERAS = ("true", "True", "1")


def _legacy_keras_missing(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD514 (a warning): the job's environment sets TF_USE_LEGACY_KERAS, so TensorFlow's
    tf.keras imports tf_keras — which nothing on sys.path provides. `import tensorflow`
    works; every tf.keras use raises "ImportError: Keras cannot be imported. Check that it is
    installed." (survey 20: the check was clean)."""
    value = facts.environ.get("TF_USE_LEGACY_KERAS")
    if value not in _LEGACY_KERAS or facts.tensorflow is None or not (
            chain.name.split(".")[0] == "tensorflow" or facts.tf_probe):
        return
    interp = facts.interpreter
    suffixes = import_suffixes(interp.ext_suffix if interp else ".so")
    if importable("tf_keras", chain.sys_path, suffixes, facts.options.cwd or os.getcwd()):
        return
    release = ".".join(facts.tensorflow.version.split(".")[:2])
    yield OD514.finding(
        "tf_keras", f"TF_USE_LEGACY_KERAS={value} makes tf.keras import tf_keras, which is not "
        f"installed: `import tensorflow` works, every use of tf.keras fails (\"Keras cannot be "
        "imported. Check that it is installed.\")",
        (f"environment: TF_USE_LEGACY_KERAS={value}",
         f"no tf_keras on sys.path ({len(chain.sys_path)} entries)",
         f"{facts.tensorflow.directory}/python/util/lazy_loader.py: tf.keras imports tf_keras "
         "when TF_USE_LEGACY_KERAS is true"),
        fix=f"pip install 'tf-keras~={release}.0' (its releases follow TensorFlow's: the one for "
        f"TensorFlow {facts.tensorflow.version}), or unset TF_USE_LEGACY_KERAS to use Keras 3",
        severity=Severity.WARNING)


def _requirements_not_installed(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD514: an unconditional import of another distribution that the package's import
    runs, whose distribution its METADATA requires and nothing on sys.path provides — the
    same failure the probe's import shows, seen without running it."""
    from opdoctor.facts.probe.outcome import ProbeState

    if not chain.dist:
        return
    absent = {normalized(name): (name, spec) for name, spec in
              uninstalled_requirements(chain.dist, chain.sys_path)}
    # Static: every such import (one no requirement provides is said too); with the probe,
    # only when a requirement is missing (the real import tells about the rest).
    missing = facts.missing_imports if absent or not facts.options.probe else []
    res = facts.probe_result() if missing and facts.options.probe else None
    reported: set[str] = set()
    if res is not None and res.load_error is None and res.state is ProbeState.LOADED:
        missing = []  # the real import worked: something the static reading does not see
    for file, line, module in missing:
        req = next((absent[d] for d in sorted(distributions_of(module)) if d in absent), None)
        if req is None and module.split(".")[0] == "pkg_resources" and \
                module not in reported and not facts.options.probe:
            gone = _setuptools_without_pkg_resources(chain)
            if gone:
                # pytorch-wavelets 1.3.0, pyworld 0.3.5 beside setuptools 84 (survey 23's F5):
                # a warning "install the distribution that provides it", exit 0, for an
                # import that certainly fails
                reported.add(module)
                yield OD514.finding(
                    module, f"import {chain.name} runs `import {module}` "
                    f"({_rel(file, chain)}:{line}): setuptools {gone} is installed, and "
                    "setuptools 82 and later no longer ship pkg_resources",
                    (f"{_rel(file, chain)}:{line}: import {module} (module level, not in a "
                     "try)", f"setuptools {gone}: no pkg_resources on sys.path"),
                    fix="pip install 'setuptools<82' (the last releases with pkg_resources), "
                    f"or a release of {distribution(chain.dist)[0]} that no longer imports it")
                continue
        if req is None and not facts.options.probe and module not in reported:
            # sageattention 1.0.6's core.py: `import triton`, which its METADATA never
            # requires; `--static` said nothing and the import fails (survey 19)
            reported.add(module)
            pkg = " ".join(distribution(chain.dist)).strip()
            # A requirement not installed may be the one (nvidia-cutlass-dsl provides
            # `cutlass`): no name known here says which, so it is not "undeclared" then.
            others = sorted(name for name, _spec in absent.values())
            yield OD514.finding(module, f"import {chain.name} runs `import {module}` "
                                f"({_rel(file, chain)}:{line}), which nothing on sys.path "
                                "provides" + ("" if others else
                                              f" and {pkg} does not declare"),
                                (f"{_rel(file, chain)}:{line}: import {module} (module level, "
                                 "not in a try)",
                                 f"{os.path.basename(chain.dist)}/METADATA: no requirement "
                                 f"known to provide {module}"
                                 + (f"; not installed: {', '.join(others[:6])}" if others
                                    else ""),
                                 f"no {module} on sys.path ({len(chain.sys_path)} entries)"),
                                fix=(f"install {pkg}'s requirements ({', '.join(others[:6])}: "
                                     f"one of them may provide `{module}`), or " if others
                                     else "") + f"install the distribution that provides "
                                f"`{module}` (its name may differ from the module's: the "
                                "package's documentation names it); without --static the "
                                "probe imports the package and tells",
                                severity=Severity.WARNING)
            continue
        if req is None or module in reported:
            continue  # no requirement provides it by any name known here: the probe tells
        reported.add(module)
        name, spec = req
        pkg = " ".join(distribution(chain.dist)).strip()
        err = res.load_error if res is not None else None
        # The real import stopped earlier, on another error (torchrec 1.9.2: fbgemm_gpu's
        # library built for another torch): this one comes next, and is no root.
        earlier = err is not None and f"No module named '{module}" not in err.message
        yield OD514.finding(module, f"import {chain.name} runs `import {module}` "
                            f"({_rel(file, chain)}:{line}); {name} is not installed"
                            + (" (the import fails earlier, on another error: this failure "
                               "comes next)" if earlier else ""),
                            (f"{_rel(file, chain)}:{line}: import {module} (module level, "
                             "not in a try)",
                             f"{os.path.basename(chain.dist)}/METADATA: Requires-Dist: "
                             f"{name}{(' ' + spec) if spec else ''}",
                             f"no {module} on sys.path ({len(chain.sys_path)} entries)"),
                            fix=f"pip install {_pip_arg(name, spec)} ({pkg} requires it; a "
                            "--no-deps or partial install left it out)",
                            severity=Severity.WARNING if earlier else None)
    yield from _requirements_for_later(facts, chain, absent, reported)
    yield from _gone_from_installed(facts, chain)


def _gone_from_installed(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    """OD514, with ``--static``: an unconditional import of a module (or a name) of another
    installed distribution's package that its installed release lacks — the import fails
    whatever happens (torchtune 0.6.1's ``from torchao.dtypes.nf4tensor import NF4Tensor``
    beside torchao 0.18: survey 24's F5, "No problem found"). The probe sees the real error
    (OD511, with the same fix)."""
    from opdoctor.facts.pychain import gone_from_installed

    interp = facts.interpreter
    if facts.options.probe or interp is None:
        return
    for file, line, missing, release in gone_from_installed(
            chain, facts.options.cwd or os.getcwd(), interp.ext_suffix)[:1]:
        have = release or missing.split(".")[0]
        yield OD514.finding(
            missing, f"import {chain.name} runs an import of {missing} "
            f"({_rel(file, chain)}:{line}); {have} is installed and has no {missing}: the "
            "import fails", (f"{_rel(file, chain)}:{line}: module level, not in a try",
                             f"{have}: no {missing} (neither a module nor a name its package "
                             "defines)"),
            fix=_pairing_fix(chain, have))


def _requirements_for_later(facts: Facts, chain: ImportChain,
                            absent: dict[str, tuple[str, str]], reported: set[str]
                            ) -> Iterator[Finding]:
    """OD514 as a warning: an unconditional requirement not installed that the import does not
    reach — what `pip check` lists. cryptography without cffi imports, and its first use
    fails in its Rust extension ("No module named '_cffi_backend'"; survey 12's P8)."""
    res = facts.probe_result() if facts.options.probe else None
    if res is not None and facts.swallowed(res):
        return  # the probe saw a caught import fail: OD512 names the requirement there
    done = {d for module in reported for d in distributions_of(module)}
    pkg = " ".join(distribution(chain.dist)).strip()
    err = res.load_error if res is not None else None
    said = _words(err.message) if err is not None else set()
    own = set(_name_words(chain.name.split(".")[0])) | set(
        _name_words(distribution(chain.dist)[0]))
    # Without a probe's verdict: an import of it that the package's import may run (in a
    # function it calls, under a condition) — tensorflow-model-optimization's tf_keras. Those
    # first: the text shows the first few warnings of a code.
    reachable = {} if err is not None or not absent else {
        key: (file, line, module, how) for file, line, module, how in
        reversed(facts.maybe_missing_imports) for key in distributions_of(module)}
    for key, (name, spec) in sorted(absent.items(), key=lambda kv: (kv[0] not in reachable,
                                                                    kv[0])):
        if key in done:
            continue
        word = next((w for w in _name_words(name, err.message if err else "")
                     if w in said and w not in own), "") if err is not None else ""
        if err is not None and not word:
            # a module its distribution names otherwise: cryptography's "No module named
            # '_cffi_backend'" is cffi's (survey 20: "whether it reaches it is not known")
            gone = _NO_MODULE.search(err.message)
            if gone and key in distributions_of(gone.group(1).split(".")[0]):
                word = gone.group(1)
        if err is not None and word:
            # the probe's import failed with an error that names it: flashinfer's `No module
            # named 'tvm_ffi'` (apache-tvm-ffi), fairseq2n's "requires Intel oneTBB" (tbb),
            # torch-tensorrt's "Could not find libnvinfer.so.11" (tensorrt-cu13-libs)
            yield OD514.finding(name, f"{pkg} requires {_pip_arg(name, spec).strip(chr(39))}, "
                                f"which is not installed; the import fails on it ({err.type}: "
                                f"{err.message[:120].rstrip('.')})",
                                (f"{os.path.basename(chain.dist)}/METADATA: Requires-Dist: "
                                 f"{name}{(' ' + spec) if spec else ''}",
                                 f"the import's error names it: {word!r}"),
                                fix=f"pip install {_pip_arg(name, spec)} ({pkg} requires it; a "
                                "--no-deps or partial install left it out)")
            continue
        maybe = reachable.get(key)
        where = f"{_rel(maybe[0], chain)}:{maybe[1]}" if maybe else ""
        reach = "the import fails on another error first: whether it reaches it is not " \
            "known (its first use may need it)" if err is not None else \
            "its import does not reach it (its first use may)" if maybe is None else \
            (f"its import may reach it: `import {maybe[2]}` at {where}, {maybe[3]} (whether "
             "that runs is decided when it runs: the probe tells)")
        yield OD514.finding(name, f"{pkg} requires {_pip_arg(name, spec).strip(chr(39))}, "
                            f"which is not installed; {reach}",
                            (f"{os.path.basename(chain.dist)}/METADATA: Requires-Dist: "
                             f"{name}{(' ' + spec) if spec else ''}",
                             f"no {name} distribution on sys.path ({len(chain.sys_path)} "
                             "entries); `pip check` lists it",
                             *([f"{where}: import {maybe[2]} ({maybe[3]})"] if maybe else [])),
                            fix=f"pip install {_pip_arg(name, spec)} ({pkg} requires it; a "
                            "--no-deps or partial install left it out)",
                            severity=Severity.WARNING)


# Parts of distribution names that name no module or library of their own.
_GENERIC = frozenset({"py", "python", "lib", "libs", "core", "base", "bin", "dev", "cpu", "gpu",
                      "api", "sdk", "runtime", "plugin", "plugins", "ext", "extensions", "cu11",
                      "cu12", "cu13", "apache", "google", "nvidia", "the", "and"})


def _words(message: str) -> set[str]:
    """An error message's words, lower case, as a requirement's names are matched against
    them: each word, its camel-case parts ("oneTBB": one, tbb) and, for a library file, its
    stem without "lib" (libtbb.so.12: tbb)."""
    out: set[str] = set()
    for word in re.findall(r"[A-Za-z][\w.+-]{0,100}", message):
        word = word.rstrip(".-+")
        low = word.lower()
        out.add(low)
        if word != low:  # camel case: oneTBB, TensorRT
            out.update(p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", word))
        stem = re.match(r"lib([a-z0-9_+-]+?)\.so\b", low)
        if stem:
            out.add(stem.group(1))
            out.add("lib" + stem.group(1))
    return out


def _name_words(name: str, message: str = "") -> list[str]:
    """What a distribution's name calls its module or library in a message: the name with
    underscores (tf-keras: tf_keras), its parts without the first or the last (apache-tvm-ffi:
    tvm_ffi; cirq-core: cirq), each part that is no generic word (tbb); TensorRT's packages by
    the libraries they ship (libnvinfer), when ``message`` names one."""
    from opdoctor.facts.variant import TENSORRT_LIB

    parts = [p for p in re.split(r"[-_.]+", name.lower()) if p]
    out = ["_".join(parts)]
    if len(parts) > 1:
        out += ["_".join(parts[1:]), "_".join(parts[:-1])]
    out += [p for p in parts if p not in _GENERIC and len(p) >= 3 and not p.isdigit()]
    trt = TENSORRT_LIB.search(message) if parts and parts[0] == "tensorrt" else None
    if trt is not None:
        out.append(trt.group(0).split(".so")[0])
    return [w for w in dict.fromkeys(out) if len(w) >= 3 and w not in _GENERIC]


def _partial_requirement(facts: Facts, chain: ImportChain, kind: str, message: str
                         ) -> Finding | None:
    """OD508 for another distribution's partial install that the import failed on: "No
    module named 'urllib3.util.retry'" under requests, where urllib3's RECORD lists
    urllib3/util/retry.py and the disk lacks it (survey 11's P9: only `--package urllib3`
    said so)."""
    from opdoctor.facts.requires import owning_dist

    m = _NO_MODULE.search(message)
    if kind != "ModuleNotFoundError" or not m or "." not in m.group(1):
        return None
    parts = m.group(1).split(".")
    if parts[0] == chain.name.split(".")[0]:
        return None  # the package's own module: its own RECORD check says so
    for entry in chain.sys_path:
        base = os.path.join(entry or ".", *parts[:-1])
        if not os.path.isdir(os.path.join(entry or ".", parts[0])):
            continue
        for rel in (f"{parts[-1]}.py", os.path.join(parts[-1], "__init__.py")):
            path = os.path.join(base, rel)
            owner = owning_dist(path) if not os.path.exists(path) else None
            if owner is not None:
                info, _site, row = owner
                dist, ver = distribution(info)
                pin = f"'{dist}=={ver}'" if dist and ver else dist
                return OD508.finding(
                    f"{dist} {ver}".strip(), f"the installed files of {os.path.basename(info)} "
                    f"differ from its RECORD: {row} is missing, and import {chain.name} needs "
                    f"it (No module named '{m.group(1)}')",
                    (f"RECORD: {info}/RECORD", f"missing: {row}"),
                    fix=f"{reinstall_command(facts, pin, info)}; never rebuild into "
                    "site-packages by hand.")
        return None  # the first directory with that package is the one import uses
    return None


def _partial_requirement_library(facts: Facts, chain: ImportChain,
                                 loads: tuple[tuple[str, str, str], ...]) -> Iterator[Finding]:
    """OD508 for another distribution's partial install whose library a load during the
    failed import asked for by its path: numba's import runs llvmlite's ctypes load of
    llvmlite/binding/libllvmlite.so, which llvmlite's RECORD lists and the disk lacks — it was
    "libllvmlite.so was not found by the real loader" with an RPATH fix (survey 21's W3)."""
    from opdoctor.facts.requires import owning_dist

    told: set[str] = set()
    own = os.path.realpath(chain.dist) if chain.dist else ""
    for path, _where, _error in loads:
        if not os.path.isabs(path) or os.path.exists(path):
            continue
        owner = owning_dist(path)
        if owner is None or os.path.realpath(owner[0]) in (own, *told):
            continue  # the package's own RECORD check says it for its own files
        info, _site, row = owner
        told.add(os.path.realpath(info))
        dist, ver = distribution(info)
        pin = f"'{dist}=={ver}'" if dist and ver else dist
        yield OD508.finding(
            f"{dist} {ver}".strip(), f"the installed files of {os.path.basename(info)} differ "
            f"from its RECORD: {row} is missing, and import {chain.name} loads it",
            (f"RECORD: {info}/RECORD", f"missing: {row}",
             f"the load that failed during the import: {path}"),
            fix=f"{reinstall_command(facts, pin, info)}; never rebuild into site-packages "
            "by hand.")


def _pip_arg(name: str, spec: str) -> str:
    """A requirement as one shell word for pip: quoted when it carries a specifier."""
    return f"'{name}{spec.replace(' ', '')}'" if spec else name


# A CUDA extension build that cannot find its toolkit (torch.utils.cpp_extension's words).
_CUDA_BUILD = re.compile(r"CUDA_HOME environment variable is not set|No CUDA runtime is found|"
                         r"nvcc: (?:command )?not found")


def _explained_fix(kind: str, message: str) -> str | None:
    """What ``opdoctor explain`` makes of the import's exception, when one of its message forms
    matched (not its generic fallback): the cause, what the form means and the next step, as
    OD511's fix — instead of "read the exception; opdoctor explain maps it to a cause"
    (exllamav2's JIT build at import: `CUDA_HOME environment variable is not set`, the build
    cannot find its toolchain; transformer-engine's failed `ldconfig -p | grep libcudnn.so`)."""
    from opdoctor.facts.exceptionreading import read_exception

    e = read_exception(kind, message)
    if e is None:
        return None
    # a step other than opdoctor itself (the user is running it): `which nvcc …`, `pip install`
    step = next((s for s in e.next_steps if not s.startswith("opdoctor ")), "")
    text = f"the exception reads as cause {e.cause} — {e.cause_name}: {e.title}. " \
        f"{e.explanation}"
    if len(text) > 600:
        # whole sentences (compressai's fix stopped mid-sentence: survey 18)
        end = text.rfind(". ", 0, 600)
        text = text[:end + 1] if end > 200 else text[:597].rsplit(" ", 1)[0] + " …"
    return text + (f" Next: {step}" if step else "")


def _dynamic(facts: Facts, chain: ImportChain) -> Iterator[Finding]:
    res = facts.probe_result()
    if res is None or not facts.options.package:
        return
    err = res.load_error
    partial = _partial_requirement(facts, chain, err.type, err.message) \
        if err is not None else None
    if partial is not None:
        yield partial
    if err is not None:
        yield from _partial_requirement_library(facts, chain, res.failed_loads)
    if err is not None:
        env = _ENV_FIX.search(err.message)
        install = _requirement_for(chain, err.type, err.message)
        fix = f"as the message says: set {env.group(1)}={env.group(2)} in the job's " \
            f"environment (opdoctor check --env {env.group(1)}={env.group(2)} … to check " \
            "with it)" if env else None
        if install and not fix:
            fix = (f"pip install {' '.join(install)} ({'-'.join(distribution(chain.dist))} "
                   "requires it; a --no-deps or partial install left it out)")
        framework = _undeclared_framework(chain, err.message) if not fix else ""
        # A walk or a wheel probing a submodule for its library (openvino's PyTorch frontend,
        # whose import needs torch, which openvino does not require: survey 24's F7): an
        # optional part of the package, not its failure — the package's own import is
        # another report's
        optional_part = bool(framework) and not facts.options.named and \
            facts.probed_import != (facts.options.package or "") and \
            "." in facts.probed_import
        if framework:
            fix = (f"pip install {framework} (the import needs it; "
                   f"{'-'.join(distribution(chain.dist))} does not declare it as a "
                   "requirement, so pip never installs it for you)")
            if optional_part:
                fix = (f"nothing, unless the job uses {facts.probed_import}: then {fix}")
        extra = _extra_providing(chain, err.type, err.message) if not fix else ""
        if extra:
            fix = extra
        if not fix and err.type == "ModuleNotFoundError":
            fix = _gone_from_the_installed_release(facts, chain, err.message)
        cause = res.load_cause
        if not fix and cause is not None:
            # the chain's first error says what broke: TensorFlow 2.21's import under NumPy
            # 1.26 surfaces as "SystemError: <built-in function __import__> returned a result
            # with an exception set" after "numpy._core.multiarray failed to import" (survey 20)
            fix = _explained_fix(cause.type, cause.message)
        if not fix:
            fix = _explained_fix(err.type, err.message)
        tv = facts.torch_variant
        if fix and _CUDA_BUILD.search(err.message) and tv is not None and tv.variant == "cpu":
            # exllamav3 1.6.5 compiles its CUDA kernels at import: with a toolkit found, the
            # build still needs torch's CUDA half, which this torch does not have (survey 19)
            fix += (f" — and the installed torch {tv.version} is a CPU-only build: a CUDA "
                    "extension built at import needs a CUDA build of torch as well as the "
                    "toolkit (https://pytorch.org/get-started/locally/), or the package's CPU "
                    "path")
        # A wheel file checked in an environment without its requirements (cryptography's
        # wheel where cffi is not installed: survey 20): the wheel is not at fault, and the
        # static check says a warning (OD514) — the two modes agree on the gate.
        wheel_env = bool(facts.options.wheel and install and not env)
        yield OD511.finding(chain.name, f"import {facts.probed_import or chain.name} raised "
                            f"{err.type}: {err.message[:200].rstrip('.')}"
                            + (f" (after {cause.type}: {cause.message[:200].rstrip('.')})"
                               if cause is not None and cause.message and
                               cause.message not in err.message else "")
                            + (" — the environment checking the wheel lacks its "
                               f"requirement(s) {', '.join(install)}, which installing the "
                               "wheel brings" if wheel_env else "")
                            + (f" — an optional part of {chain.name}: {framework} is not one "
                               f"of its requirements" if optional_part else ""),
                            [*err.tail(5), *([f"{os.path.basename(chain.dist)}/METADATA: "
                                              f"Requires-Dist: {', '.join(install)}, not "
                                              "installed"] if install else [])],
                            fix=(f"pip install {' '.join(install)} into the environment that "
                                 "checks the wheel (or install the wheel itself with its "
                                 "requirements first): the probe imports the wheel's package "
                                 "there" if wheel_env else fix),
                            severity=Severity.WARNING if wheel_env else
                            Severity.INFO if optional_part else None)
    told: set[tuple[str, str]] = set()  # polars: one failure, caught at 23 import sites
    for hidden in facts.swallowed(res):
        if _hidden_optional(chain, hidden.target, hidden.error.message) or \
                (hidden.target, hidden.error.message) in told:
            continue
        told.add((hidden.target, hidden.error.message))
        if any(lk.target == hidden.target and lk.other_builds for lk in chain.links):
            continue  # only builds for another Python or platform are there: OD503 / OD418
        func = chain.called_later(hidden.target)
        lacks = _name_this_build_lacks(chain, hidden.error.type, hidden.error.message)
        if lacks:
            # MindSpore's hal/device.py: `try: from ._gpu import _HalGPU … except ImportError:
            # pass`, _gpu.py importing gpu_* names _c_expression has only with the GPU plugin
            # — a healthy CPU install got two errors and exit 1 (survey 20)
            yield OD512.finding(hidden.target, f"{chain.failing(hidden.target)} fails: "
                                f"{hidden.error.type}: {hidden.error.message[:300]} — {lacks}",
                                (f"swallowed by {hidden.where}", *hidden.error.tail(3)),
                                severity=Severity.INFO,
                                fix="nothing to fix unless that part is needed: it needs a "
                                "build of the package that has it (another device's build)")
            continue
        other = _other_distribution(chain, hidden.error.type, hidden.error.message)
        if not other and hidden.error.type in ("ImportError", "ModuleNotFoundError") and \
                not _LOADER_WORDS.search(hidden.error.message) and \
                (absent := _uninstalled_requirements(chain)):
            # polars without polars-runtime-32: "could not find Polars' Rust module"; the
            # distribution it requires is not installed, which installing fixes
            yield OD512.finding(hidden.target, f"{chain.failing(hidden.target)} fails: "
                                f"{hidden.error.type}: {hidden.error.message[:300]} — "
                                f"{'-'.join(distribution(chain.dist))} requires "
                                f"{', '.join(absent)}, which is not installed",
                                (f"swallowed by {hidden.where}", *hidden.error.tail(3),
                                 f"{chain.dist}/METADATA: Requires-Dist: {', '.join(absent)}"),
                                fix=f"pip install {' '.join(absent)} (a requirement left out "
                                "by a --no-deps or partial install)")
            continue
        # Another distribution that the package does not require (an extra's, or none:
        # bs4's lxml, httpx's click) is an optional part it runs without by design.
        optional = bool(other) and not (distributions_of(other) & {
            normalized(n) for n in requirements(chain.dist, unconditional=True)})
        yield OD512.finding(hidden.target, f"{chain.failing(hidden.target)} fails: "
                            f"{hidden.error.type}: {hidden.error.message[:300]}"
                            + (f" (inside {func}(), an optional path: the package's import "
                               "does not run it)" if func else "")
                            + (f" — {other} is another distribution, not installed: the "
                               "package catches it and runs without that part" if other
                               else "")
                            + (" (an optional dependency: no unconditional requirement of "
                               f"{'-'.join(distribution(chain.dist))})" if optional and
                               chain.dist else ""),
                            (f"swallowed by {hidden.where}", *hidden.error.tail(3)),
                            severity=Severity.INFO if func or optional else
                            Severity.WARNING if other else None,
                            fix=f"pip install {other} if that part of the package is needed"
                            if other else None)


def section(facts: Facts) -> dict[str, Any]:
    """The chain as data: candidates, winner, links, what the probe saw imported."""
    chain = facts.chain
    if chain is None:
        return {}
    res = facts.probe_result()
    imported = [{"module": m, "file": f} for m, f in res.imported] if res else []
    mapped = list(res.mapped) if res else []
    ops = res.ops if res else ()
    unaccounted = _loaded_by_no_link(chain, mapped, [f for _m, f in res.imported] if res else [])
    return {
        "package": chain.name,
        # imported before the package, as its own guard demands (psycopg before psycopg_binary)
        "imported_first": list(chain.imported_first),
        "winner": chain.winner.path if chain.winner else None,
        "candidates": [{"entry": c.entry, "path": c.path, "kind": c.kind}
                       for c in chain.candidates],
        "links": [{"file": link.file, "line": link.line, "kind": link.kind, "text": link.text,
                   "target": link.target, "resolved": link.resolved, "problem": link.problem,
                   "swallowed": link.swallowed, "caught_by_caller": link.caught_by_caller,
                   "fallback": link.fallback,
                   "unevaluated": link.problem == UNEVALUATED, "checked": link.checked,
                   "observed": unaccounted if link.problem == UNEVALUATED else [],
                   # `from .. import AddedToken`: a name the package binds, no module to find
                   "attribute": bool(link.problem) and link.kind == "submodule"
                   and _package_attribute(link)}
                  for link in chain.links],
        "extensions_on_disk": chain.extensions_on_disk,
        "imported": imported,
        "libraries_loaded": mapped,
        "ops": [{"name": o.name, "keys": list(o.keys),
                 **({"meta_stub": True} if o.meta_stub else {})} for o in ops],
        "registrations": registrations(facts),
    }


def _loaded_by_no_link(chain: ImportChain, mapped: list[str], imported: list[str]) -> list[str]:
    """Libraries of the package that the real import mapped but that no statically resolved
    line of the chain loads and no Python import brought in (dgl's ``ctypes.CDLL(lib_path[0])``
    whose path a search function computes: the real import mapped dgl/libdgl.so)."""
    if not mapped:
        return []
    root = _real(chain.package_dir) + os.sep
    known = {_real(r) for link in chain.links for r in link.resolved}
    known |= {_real(f) for f in imported if f}
    return sorted({m for m in mapped if _real(m).startswith(root) and _real(m) not in known})


_real = commandcache.realpath  # one lstat chain per file and command


def registrations(facts: Facts) -> list[dict[str, Any]]:
    """The package's ops, C++ and Python registrations joined: which key comes from where."""
    merged = facts.package_registrations
    if merged is None:
        return []
    return [{"name": o.name, "origin": o.origin, "defined": o.defined,
             "keys": {k: v for k, v in sorted(o.keys.items())}, "fake": o.fake,
             "autograd": o.autograd, "summary": describe(o)} for o in merged.ops]


CHECK = Check(
    name="import-chain",
    summary="import <package> reaches the compiled extension: found, not shadowed, built for "
    "this interpreter, imported, intact",
    causes=(Cause.IMPORT_CHAIN, Cause.BUILD),
    codes=CODES,
    run=run,
    needs_elf=False,
    section=section,
    applies=package_applies,
)
