"""What the user named → the files to check, each with its package context.

* a ``.so`` file (inside a package: the package's import chain is checked too);
* a package directory (has ``__init__.py``): its import chain and the library it loads;
* any other directory: every shared library below it;
* a wheel (``.whl``): unpacked into a temporary directory, every shared library in it checked
  with the package context of the wheel's layout;
* ``--package NAME``: resolved on the target interpreter's sys.path;
* ``dir/libx.so:FuncName`` (MindSpore's AOT notation): the library, with the function MindSpore
  will ``dlsym`` (``CheckOptions.aot_function``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from opdoctor.checks.base import STAGE_BUDGETS
from opdoctor.facts import CheckOptions, Facts, budget
from opdoctor.facts.inputfile import is_shared_library
from opdoctor.facts.pkgdir import package_of
from opdoctor.model import TargetError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from opdoctor.facts.pychain import ImportChain

MAX_WHEEL_BYTES = 4 << 30  # refuse zip bombs: total uncompressed size of a wheel


@dataclass(frozen=True)
class Target:
    """One file (or package directory) to check, with its options and what the user named."""

    path: str
    options: CheckOptions
    display: str  # how to name it in reports (a wheel member keeps its in-wheel path)



def _for_this_torch(libs: list[str], facts: Facts) -> list[str]:
    """``libs`` without the per-release copies the installed torch's release and build do not
    pick (:func:`opdoctor.facts.variant.copies_for_this_torch`): twelve "built for another
    torch" errors on torch-c-dlpack-ext, a package that imports and works. A release none of
    them is for is the version guard's OD324."""
    from opdoctor.facts.variant import copies_for_this_torch

    interp = facts.interpreter
    torch = interp.torch if interp else None
    return libs if torch is None else copies_for_this_torch(libs, torch.version, torch.cuda)


def _where_the_import_fails(libs: list[str], chain: ImportChain, options: CheckOptions) -> str:
    """The package's library to check: the first its import loads (a module body's import or
    load, in the chain's order) whose load the static view predicts to fail — a dependency not
    found, a symbol nothing loaded defines — else the first library. torch-harmonics 0.9.0 loads
    the top-level helper ``disco_helpers`` (fine), then ``disco/_C`` (built for another torch):
    the report was on the helper, "No problem found" with ``--static``. At most the first
    eight are read (each a static reading of one library, no load)."""
    if len(libs) < 2:
        return libs[0]
    eager = {r for link in chain.links if not link.lazy and not link.function
             for r in link.resolved}
    for lib in [lib for lib in libs if lib in eager][:8]:
        facts = Facts(lib, options)
        try:
            if facts.structure.image is not None and (
                    facts.process.tree.missing or facts.binding.unresolved):
                return lib
        except Exception:  # a file that cannot be read (truncated): the check reports it
            return lib
    return libs[0]


def split_aot_target(path: str) -> tuple[str, str]:
    """MindSpore's ``dir/libx.so:FuncName`` → (``dir/libx.so``, ``FuncName``); only when the
    whole text is not itself a file and the part before the last colon is one."""
    if os.path.exists(path) or ":" not in path:
        return path, ""
    from opdoctor.facts.mindspore import is_function_name  # here: only `lib.so:Func` needs it

    lib, func = path.rsplit(":", 1)
    if os.path.isfile(lib) and is_function_name(func):
        return lib, func
    return path, ""


def import_cwd(parent: str, options: CheckOptions) -> str:
    """The working directory the check of a package imported from ``parent`` models the job
    in: the one given (``--cwd``); else ``parent`` only where the job's interpreter does not
    find packages there by itself (a build tree, a wheel's unpacked copy); "" (this process's
    working directory, as for ``--package``) where it does. An installed
    package's directory is on its sys.path already: run from there, its '' entry came before
    PYTHONPATH, and a copy PYTHONPATH puts first (survey 22's E6: another venv's
    site-packages) was hidden from a check of the file, which `--package` and the job see."""
    if options.cwd:
        return options.cwd
    key = (parent, options.python, options.env)
    if key not in _IMPORT_CWD:  # once per directory and job (a walk asks for each library)
        from opdoctor.facts.interp import InterpreterError, inspect_interpreter

        try:
            interp = inspect_interpreter(options.python, env=dict(options.env)
                                         if options.env is not None else None)
        except InterpreterError:
            return parent
        real = os.path.realpath(parent)
        on_path = any(e and os.path.realpath(e) == real for e in interp.sys_path)
        _IMPORT_CWD[key] = "" if on_path else parent
    return _IMPORT_CWD[key]


_IMPORT_CWD: dict[tuple[str, str | None, tuple[tuple[str, str], ...] | None], str] = {}


def _with_package(path: str, options: CheckOptions, display: str) -> Target:
    ctx = package_of(path)
    if ctx is None:
        return Target(path, options, display)
    name, parent = ctx
    return Target(path, dataclasses.replace(options, package=name,
                                            cwd=import_cwd(parent, options)), display)


# Another platform's library file names: in a wheel, what they are is the finding (a
# win_amd64 wheel's .pyd, a macOS wheel's .dylib), never "no compiled library"
_FOREIGN_LIBRARY = (".pyd", ".dll", ".dylib")


def _walk(root: str, denied: list[str] | None = None, foreign: bool = False) -> list[str]:
    """Every shared library below ``root`` (links skipped: their targets are listed where they
    live); the directories that could not be listed are appended to ``denied``. ``foreign``:
    Windows and macOS libraries too."""
    out = []

    def unlisted(exc: OSError) -> None:
        if denied is not None:
            denied.append(exc.filename or root)

    for d, dirs, files in os.walk(root, onerror=unlisted):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
        out += [os.path.join(d, f) for f in sorted(files)
                if (is_shared_library(f) or (foreign and f.endswith(_FOREIGN_LIBRARY)))
                and not os.path.islink(os.path.join(d, f))]
    return out


def _wheels_in(root: str) -> list[str]:
    """The ``*.whl`` files below ``root`` (at most two levels down: ``dist/``,
    ``wheelhouse/linux/``), in name order."""
    import glob

    out: list[str] = []
    for depth in range(3):
        pattern = os.path.join(glob.escape(root), *["*"] * depth, "*.whl")
        out += [w for w in sorted(glob.glob(pattern)) if os.path.isfile(w)]
    return out


def _sdist(path: str) -> str:
    """The project a source distribution is of (``msgpack-1.2.4``: its ``PKG-INFO``), "" for
    any other file. Only archives named as sdists are opened (.tar.gz, .tgz, .zip)."""
    if not path.endswith((".tar.gz", ".tgz", ".zip")) or not os.path.isfile(path):
        return ""
    try:
        if path.endswith(".zip"):
            import zipfile

            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()[:10000]
        else:
            import tarfile

            with tarfile.open(path, "r:gz") as tf:
                names = [m.name for _, m in zip(range(10000), tf, strict=False)]
    except (OSError, EOFError, ValueError, KeyError, RuntimeError) as exc:
        del exc  # not an archive that can be read: the file's own check says what it is
        return ""
    tops = {n.split("/")[0] for n in names if n.count("/") == 1 and n.endswith("/PKG-INFO")}
    return sorted(tops)[0] if tops else ""


class WheelError(ValueError):
    """The wheel cannot be unpacked (not a zip, unsafe member names, too large)."""


def unpack_wheel(path: str, dest: str) -> None:
    """Unpack ``path`` into ``dest``, refusing absolute/parent paths and zip bombs."""
    import zipfile  # here: only wheels need it (a check of a library starts faster)

    try:
        with zipfile.ZipFile(path) as zf:
            total = 0
            for info in zf.infolist():
                name = info.filename
                if name.startswith("/") or ".." in name.split("/"):
                    raise WheelError(f"{path}: unsafe member name {name!r}")
                total += info.file_size
                if total > MAX_WHEEL_BYTES:
                    raise WheelError(f"{path}: more than {MAX_WHEEL_BYTES >> 30} GiB unpacked")
            zf.extractall(dest)
    except zipfile.BadZipFile as exc:
        raise WheelError(f"{path}: not a valid wheel (zip): {exc}") from None


def _wheel_kind(path: str) -> str:
    """``a pure-Python wheel: py3-none-any`` from the wheel's file name tags (PEP 427)."""
    tags = os.path.basename(path)[:-4].split("-")[-3:]
    if len(tags) == 3 and tags[1:] == ["none", "any"]:
        return f"a pure-Python wheel: {'-'.join(tags)}"
    return "only Python files in it"


def _op_libraries_on_disk(files: list[str]) -> list[str]:
    """The package's libraries that link a framework, when its import chain reaches none:
    it loads them by paths it computes at run time (tensorflow-addons:
    ``tf.load_op_library(get_path_to_datafile(…))``), lazily when an op is first used
    (tensorflow-io), or never (OD505). Each is checked as a library of the package, so that
    its static checks run — the package directory alone let "✓ version mismatch: no problem
    found" stand over op libraries built for another TensorFlow. None when no library links
    one (a package of plain extensions). A library whose dynamic section cannot be read (cut
    short, overwritten) is kept too: what links it is unknown, and it is what is wrong
    (fbgemm-gpu's fbgemm_gpu_py.so truncated had no report in the package's 18; survey 21)."""
    from opdoctor.facts.core import damaged_elf, links_framework
    return [f for f in files if links_framework(f) or damaged_elf(f)]


def _unreached_libraries(chain: ImportChain, package: str, facts: Facts) -> list[str]:
    """The package's framework libraries to check when its import chain reaches none of its
    compiled libraries: those on disk that link a framework (for this torch's release), else
    — a subpackage that loads one by a path computed at run time — the package above's."""
    libs = _for_this_torch(_op_libraries_on_disk(chain.extensions_on_disk), facts)
    if not libs and chain.computed_loads and "." in package:
        libs = _for_this_torch(_loaded_from_the_package_above(chain, package, facts), facts)
    if not libs and chain.computed_loads:
        libs = _installed_beside(chain)
    return libs


def _installed_beside(chain: ImportChain) -> list[str]:
    """The libraries a pure-Python package's distribution installs outside the package, for
    an import that loads a library by a path computed at run time: what that load finds.
    rtree 1.4.1's finder loads ``rtree.libs/libspatialindex-….so`` (auditwheel's directory)
    through ``ctypes.cdll.LoadLibrary`` over candidates from ``importlib.metadata.files``
    (survey 24b: "has no compiled library", the library never checked). Only the roots:
    a library another of them NEEDs is loaded, and checked, through it."""
    from opdoctor.facts.core import needed_names
    from opdoctor.facts.requires import own_code_first, record_libraries

    if not chain.dist:
        return []
    site = os.path.dirname(chain.dist)
    inside = chain.package_dir.rstrip(os.sep) + os.sep if chain.package_dir else None
    libs = [p for p in (os.path.join(site, rel) for rel in
                        own_code_first(record_libraries(chain.dist)))
            if os.path.isfile(p) and not (inside and p.startswith(inside))]
    needed = {n for lib in libs for n in needed_names(lib)}
    return [lib for lib in libs if os.path.basename(lib) not in needed]


def _loaded_from_the_package_above(chain: ImportChain, package: str,
                                   facts: Facts) -> list[str]:
    """The framework op libraries of the top-level package, for a subpackage that loads one
    by a path no static reading computes and holds none itself: open3d.ml.torch runs
    ``torch.ops.load_library(os.path.join(_this_dir, '..', '..', _lib_name))`` for
    open3d/open3d_torch_ops.so (survey 17: "no compiled library", exit 0 with --static, over
    an op library built for a CUDA torch). Only libraries of the framework the computed load
    calls (``torch.ops…``: those that link torch; ``tf.…``: those that link TensorFlow)."""
    from opdoctor.facts.pychain import UNEVALUATED

    top = chain.package_dir
    for _ in range(package.count(".")):
        top = os.path.dirname(top)
    if not os.path.isfile(os.path.join(top, "__init__.py")):
        return []
    texts = " ".join(link.text for link in chain.links if link.kind in ("load_library", "cdll")
                     and link.problem == UNEVALUATED)
    found = _op_libraries_on_disk(_walk(top))
    if "torch" in texts and not ("tf." in texts or "tensorflow" in texts):
        return [f for f in found if facts.links_torch(f)]
    if "tf." in texts or "tensorflow" in texts:
        from opdoctor.facts.core import read_elf
        from opdoctor.facts.loader.process import needs_tensorflow

        return [f for f in found if read_elf(f, needs_tensorflow, False)]
    return found


def _self_named_extension(chain: ImportChain, package: str, facts: Facts) -> list[str]:
    """The extension module in the package's own directory named as the package
    (``cv2/cv2.abi3.so``), for a package whose import chain reaches no compiled library:
    opencv's ``bootstrap()`` puts its own directory first on sys.path, drops ``cv2`` from
    sys.modules and re-imports ``cv2`` — that file, which no static reading follows (`check
    --static --package cv2` of a copy without its vendored libraries said "its compiled
    library was not analysed", exit 0; survey 21's W12)."""
    interp = facts.interpreter
    if interp is None or not chain.package_dir:
        return []
    # a file this interpreter's import takes for that name (orjson/orjson.cpython-311-aarch64-
    # linux-gnu.so is no import of `orjson` here: OD418 is the package's finding)
    name = package.rsplit(".", 1)[-1]
    wanted = {name + suffix for suffix in (interp.ext_suffix, ".abi3.so", ".so")}
    home = os.path.realpath(chain.package_dir)
    return [f for f in chain.extensions_on_disk
            if os.path.realpath(os.path.dirname(f)) == home and os.path.basename(f) in wanted]


def _distinct(libs: list[str]) -> list[str]:
    """``libs`` without the files identical to one listed before (same size, same bytes),
    in their order; of identical files the one named as their SONAME is kept (the name a
    dependent's NEEDED gives the loader)."""
    from opdoctor.facts.core import read_elf
    from opdoctor.facts.hashcache import HashCache

    sizes: dict[int, list[str]] = {}
    for lib in libs:
        try:
            sizes.setdefault(os.path.getsize(lib), []).append(lib)
        except OSError:
            sizes.setdefault(-1, []).append(lib)
    drop: set[str] = set()
    for size, same in sizes.items():
        if size < 0 or len(same) < 2:
            continue
        # the package's RECORD check has just hashed its files: the cache has them
        digests = HashCache().many(same)
        groups: dict[str, list[str]] = {}
        for lib in same:
            if digests.get(lib) is not None:
                groups.setdefault(str(digests[lib]), []).append(lib)
        for group in groups.values():
            soname = read_elf(group[0], lambda img: str(
                (img.tags.get("DT_SONAME") or [""])[0]), "")
            keep = next((g for g in group if os.path.basename(g) == soname), group[0])
            drop.update(g for g in group if g != keep)
    return [lib for lib in libs if lib not in drop]


def _bare_library_name(name: str) -> bool:
    """A library named as ``dlopen`` takes it (``libodbc.so.2``: no directory) that is no
    file here: what explain suggests checking for a message that names only the library."""
    return os.sep not in name and is_shared_library(name) and not os.path.lexists(name)


def _found_by_the_loader(name: str, options: CheckOptions, errors: list[TargetError]) -> str:
    """The file ``dlopen(name)`` in the target interpreter's process opens (its RPATH,
    LD_LIBRARY_PATH as the target runs it, ld.so.cache, the default directories), or "" with
    the error that says where the loader looked (and, for a library of the operating system,
    the package that provides it)."""
    import shutil
    import sys

    from opdoctor.facts.loader.search import dlopen_by_name, searched
    from opdoctor.facts.syslibs import system_library_fix

    program = shutil.which(options.python) if options.python else sys.executable
    environ = dict(options.env) if options.env is not None else dict(os.environ)
    path, attempts = dlopen_by_name(name, environ, program or sys.executable)
    if path:
        return path
    fix = system_library_fix(name)
    message = (f"{name}: no such file here, and the dynamic loader does not find it either"
               + (f" ({searched(attempts)})" if attempts else "")
               + (f"; {fix}" if fix else ""))
    errors.append(TargetError(name, "OD401", message))
    return ""


@contextmanager
def expand(paths: list[str], options: CheckOptions,
           errors: list[TargetError] | None = None) -> Iterator[list[Target]]:
    """The targets for ``paths`` (and ``options.package``); temporary dirs live until exit.

    With ``errors``, a path that yields nothing to check (a bad wheel, a directory without a
    shared library) is recorded there and the other paths still expand; without it, a bad
    wheel raises :class:`WheelError`.
    """
    tmpdirs: list[str] = []
    targets: list[Target] = []
    package_dir = ""  # the directory of the package --package names, as its import finds it
    try:
        if options.package:
            # The import chain decides the target; it is read under the import-chain stage's
            # budget. When it runs out, the package directory is the target and the pipeline's
            # import-chain stage stops at the same point with finding OD190.
            facts = Facts(".", options)
            facts.prestart_probe()  # the child imports the framework while the chain is read
            try:
                with budget.stage("import-chain",
                                  STAGE_BUDGETS["import-chain"] * options.budget_scale):
                    chain = facts.chain
            except budget.BudgetExceeded:
                chain = None
            libs = chain.libraries if chain else []
            package_dir = os.path.realpath(chain.package_dir) if chain and \
                chain.package_dir else ""
            # the package's own libraries before what it loads of another's (usearch's import
            # preloads numkong's extension by its __file__: the report is on usearch's)
            libs = sorted(libs, key=lambda f: not os.path.realpath(f).startswith(
                package_dir + os.sep)) if package_dir else libs
            if not libs and chain and chain.winner and chain.winner.kind == "extension":
                libs = [chain.winner.path]  # a top-level extension module (awq_v2_ext.so)
            elif not libs and chain and chain.package_dir:
                libs = _unreached_libraries(chain, options.package, facts) or \
                    _self_named_extension(chain, options.package, facts)
            if not libs:
                where = chain.package_dir if chain and chain.package_dir \
                    else os.path.abspath(options.cwd or ".")
                targets.append(Target(where, options, where))
            elif chain and not chain.libraries and len(libs) > 1:
                # Op libraries the package loads later, by paths no static reading follows
                # (tensorflow-io's LazyLoader): each is what the package will load — once
                # each: a wheel holds no symlinks, so libfairseq2n.so, .so.0 and .so.0.8.0 are
                # three identical files (survey 17: three identical reports, 18 errors).
                targets += [Target(lib, options, lib) for lib in _distinct(libs)]
            else:
                lib = _where_the_import_fails(libs, chain, options) if chain else libs[0]
                targets.append(Target(lib, options, lib))
        queue = list(paths)  # a walked directory's wheels are appended (`check dist/`)
        for path in queue:
            project = _sdist(path) if errors is not None else ""
            if project and errors is not None:
                # `python -m build` writes the sdist beside the wheel: OD405 "a gzip-compressed
                # file … git lfs pull" called it a broken library (survey 20). Beside its own
                # wheel (`check dist/*`) it is that wheel's source: the wheel is checked.
                from opdoctor.facts.pkgdir import normalized

                name, _, version = project.rpartition("-")
                if any(q.endswith(".whl") and os.path.basename(q).count("-") >= 2 and
                       normalized(os.path.basename(q).split("-")[0]) == normalized(name) and
                       os.path.basename(q).split("-")[1] == version for q in queue):
                    continue
                errors.append(TargetError(path, "OD415", f"a source distribution of {project}: "
                                          "nothing compiled in it to check — check the wheel "
                                          "built from it (python -m build --wheel, then "
                                          "opdoctor check dist/*.whl)"))
                continue
            if path.endswith(".whl") and os.path.isfile(path):
                from opdoctor.facts.mounts import exec_tempdir

                tmp = exec_tempdir("opdoctor-wheel-")
                tmpdirs.append(tmp)
                try:
                    unpack_wheel(path, tmp)
                except WheelError as exc:
                    if errors is None:
                        raise
                    errors.append(TargetError(path, "OD405", str(exc)))
                    continue
                if not any(d.endswith(".dist-info") and os.path.isdir(os.path.join(tmp, d))
                           for d in os.listdir(tmp)):
                    # a zip named .whl (pip: "invalid wheel, .dist-info directory not found"):
                    # nothing of it installs, whatever it holds (survey 20)
                    if errors is None:
                        raise WheelError(f"{path}: not a valid wheel: no .dist-info directory")
                    errors.append(TargetError(path, "OD405", f"{path}: not a valid wheel: no "
                                              ".dist-info directory (pip refuses to install it)"))
                    continue
                # another platform's libraries too (a win_amd64 wheel's .pyd, a macOS .dylib):
                # what they are is the finding, not "only Python files in it" (survey 20)
                libs = _walk(tmp, foreign=True)
                # (the wheel's copy is the one imported, as installing it makes it: a --cwd
                # given for the job would put another directory's copy, or none, first)
                from_wheel = dataclasses.replace(options, wheel=os.path.abspath(path), cwd="")
                if not libs:
                    # A pure-Python wheel is checked as the installed package would be: its
                    # import chain statically, OD415 a note — one in `dist/*.whl` beside
                    # compiled ones failed the whole gate with exit 2 (survey 20)
                    # (six is one module, six.py: its target is the module, as for `.py`)
                    pure = [(d, os.path.join(tmp, d), d) for d in sorted(os.listdir(tmp))
                            if d.isidentifier() and
                            os.path.isfile(os.path.join(tmp, d, "__init__.py"))] + \
                        [(f[:-3], tmp, f) for f in sorted(os.listdir(tmp))
                         if f.endswith(".py") and f[:-3].isidentifier()]
                    if not pure and errors is not None:
                        errors.append(TargetError(path, "OD415", "no compiled library in the "
                                                  f"wheel ({_wheel_kind(path)})"))
                    for name, where, shown in pure:
                        opts = dataclasses.replace(from_wheel, package=name, cwd=tmp,
                                                   probe=False)
                        targets.append(Target(where, opts, f"{path}!/{shown}"))
                    continue
                for lib in libs:
                    rel = os.path.relpath(lib, tmp)
                    targets.append(_with_package(lib, from_wheel, f"{path}!/{rel}"))
            elif os.path.isdir(path) and not os.path.isfile(os.path.join(path, "__init__.py")) \
                    and options.package and targets and os.path.basename(
                        os.path.abspath(path)) == options.package.split(".")[-1]:
                # `--package mmh3 site-packages/mmh3`: that directory holds mmh3's type stubs
                # only, and Python imports the extension module beside it — which the
                # package's own target above checks; walking the stubs found "no shared
                # library", exit 2 (survey 19)
                continue
            elif os.path.isdir(path) and not os.path.isfile(os.path.join(path, "__init__.py")):
                denied: list[str] = []
                found = _walk(path, denied)
                # `check dist/`: the wheels a build wrote there are checked as if listed (it
                # said "no shared library in this directory", exit 2: survey 20)
                wheels = _wheels_in(path)
                queue += [w for w in wheels if w not in queue]
                if errors is not None:
                    for d in denied:
                        # Not "no library here": the libraries in it were never seen.
                        errors.append(TargetError(d, "OD403", "permission denied: cannot list "
                                                  "this directory"))
                    if not found and not denied and not wheels:
                        errors.append(TargetError(path, "OD415", "no shared library in this "
                                                  "directory or below it"))
                targets += [_with_package(lib, options, lib) for lib in found]
            elif os.path.isdir(path) and package_dir == os.path.realpath(path):
                # `--package lmdeploy site/lmdeploy`: the package the option's target above
                # checks, as its import finds it; a second report of it probed its import a
                # second time (lmdeploy's 8 s import: 16 s, survey 19)
                continue
            elif os.path.isdir(path):
                # A sub-package (triton/backends) is imported as Python imports it, through
                # its top-level package (`import triton.backends`), never as a top level.
                name, parent = package_of(path, dotted=True) or (
                    os.path.basename(os.path.abspath(path)), os.path.dirname(os.path.abspath(path)))
                opts = dataclasses.replace(options, package=name, cwd=import_cwd(parent, options))
                facts = Facts(path, opts)
                facts.prestart_probe()
                chain = facts.chain
                libs = [lib for lib in (chain.libraries if chain else [])
                        if os.path.abspath(lib).startswith(os.path.abspath(path) + os.sep)] or (
                    _self_named_extension(chain, name, facts) if chain else []) or (
                    # a top-level package whose import loads only another top-level
                    # package's libraries, which its distribution installs beside it
                    # (tflite_support → tensorflow_lite_support's _pywrap_*.so: the directory
                    # check said "No error" on an import that fails; survey 23's F6)
                    chain.libraries if chain and "." not in name else [])
                if not libs and chain and chain.package_dir:
                    # what `--package` checks of a package whose import reaches none of its
                    # libraries (torchrl's _torchrl.so, fbgemm_gpu's 19 op libraries, built
                    # for another torch: the directory said "No problem found"; survey 24's F6)
                    libs = _unreached_libraries(chain, name, facts)
                    if len(libs) > 1:
                        targets += [Target(lib, opts, lib) for lib in _distinct(libs)]
                        continue
                targets.append(Target(libs[0] if libs else path, opts, path))
            elif path.endswith(".py") and os.path.isfile(path) and \
                    os.path.basename(path)[:-3].isidentifier():
                # A Python module (openmmtorch.py): checked as what it is, its import — never
                # as a library, whose ELF check said "not an ELF file: it is a text file"
                # (survey 19). Once: `--package openmmtorch openmmtorch.py` is one target.
                inside = package_of(path, dotted=True)
                stem = os.path.basename(path)[:-3]
                name, parent = (f"{inside[0]}.{stem}" if stem != "__init__" else inside[0],
                                inside[1]) if inside else \
                    (stem, os.path.dirname(os.path.abspath(path)))
                if any(t.options.package == name for t in targets):
                    continue
                opts = dataclasses.replace(options, package=name, cwd=import_cwd(parent, options))
                # as `--package NAME` checks a module: from the directory it is looked up in;
                # a package's __init__.py is its package directory
                where = os.path.dirname(os.path.abspath(path)) if stem == "__init__" else parent
                Facts(where, opts).prestart_probe()
                targets.append(Target(where, opts, where if stem == "__init__" else path))
            else:
                lib, func = split_aot_target(path)
                if _bare_library_name(lib) and errors is not None:
                    lib = path = _found_by_the_loader(lib, options, errors)
                    if not lib:
                        continue
                opts = dataclasses.replace(options, named=True, aot_function=func)
                targets.append(_with_package(lib, opts, path))
        if options.probe:
            # The libraries of one package share one import of it (a directory walk).
            from opdoctor.facts.probe.runner import reuse_scope
            with reuse_scope():
                yield targets
        else:
            yield targets
    finally:
        if options.probe:
            from opdoctor.facts.probe.runner import discard_prestarted
            discard_prestarted()
        for tmp in tmpdirs:
            import shutil  # here: only wheels leave a directory to remove

            shutil.rmtree(tmp, ignore_errors=True)
