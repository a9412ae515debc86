"""Which package a file belongs to, read from the directories around it (nothing imported)."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterable, Iterator

from opdoctor.facts import commandcache


def package_of(path: str, dotted: bool = False, levels: int = 2) -> tuple[str, str] | None:
    """(top-level package, the directory it is imported from) for a path inside a package;
    ``dotted``: the package the path's own directory is (``scipy.linalg``), instead of its
    top level (``scipy``: the libraries of a directory walk share its one import);
    ``levels``: how many data directories (no ``__init__.py``) a file may sit below a
    package directory and still be the package's."""
    here = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    d, top = here, None
    if not dotted and not os.path.isdir(path):
        # A library in a data directory of a package (triton/plugins/, no __init__.py) is
        # the package's: triton loads its plugins after `import triton` has loaded
        # libtriton.so, the library they need. Two levels up at most by default.
        for _ in range(levels):
            if os.path.isfile(os.path.join(d, "__init__.py")):
                break
            d = os.path.dirname(d)
        if not os.path.isfile(os.path.join(d, "__init__.py")):
            d = here
    while os.path.isfile(os.path.join(d, "__init__.py")):
        top = d
        d = os.path.dirname(d)
    if top is None:
        return None
    name = os.path.basename(top)
    # A namespace package above it (optimum/ of optimum-quanto, nvidia/ of the nvidia-*
    # wheels: no __init__.py) is no sys.path entry: `import quanto` from optimum/ is not how
    # Python finds it. The directory above, where the distributions' metadata is, is.
    while _namespace_dir(d):
        name = f"{os.path.basename(d)}.{name}"
        d = os.path.dirname(d)
    if dotted:
        return os.path.relpath(here, d).replace(os.sep, "."), d
    return name, d


def package_root(path: str, levels: int = 2) -> str | None:
    """The directory of the top-level package (``optimum/quanto`` for a namespace package's
    ``optimum.quanto``) a path belongs to, or None outside a package (``levels``: see
    :func:`package_of`)."""
    pkg = package_of(path, levels=levels)
    return os.path.join(pkg[1], *pkg[0].split(".")) if pkg else None


@functools.lru_cache(maxsize=256)
def _namespace_dir(d: str) -> bool:
    """Whether ``d`` is a namespace package directory inside a sys.path entry: an identifier
    without ``__init__.py``, holding no distribution metadata itself, in a directory that does
    (site-packages, a --target directory)."""
    name = os.path.basename(d)
    if not name.isidentifier() or os.path.isfile(os.path.join(d, "__init__.py")):
        return False
    try:
        inside = os.listdir(d)
        above = os.listdir(os.path.dirname(d))
    except OSError:
        return False
    meta = (".dist-info", ".egg-info")
    return not any(n.endswith(meta) for n in inside) and any(n.endswith(meta) for n in above)


def wheel_tags(info: str) -> list[str]:
    """The ``Tag:`` lines of a ``*.dist-info/WHEEL`` file (empty when it has none)."""
    try:
        with open(os.path.join(info, "WHEEL"), encoding="utf-8", errors="replace") as fh:
            return [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("Tag:")]
    except OSError:
        return []


def distribution(info: str) -> tuple[str, str]:
    """(name, version) of a ``name-version.dist-info`` (or ``.egg-info``) directory; the
    version is "" when the name carries none."""
    base = os.path.basename(info.rstrip(os.sep)).rsplit(".", 1)[0]
    name, _, version = base.rpartition("-")
    return (name, version) if name else (base, "")


def normalized(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_rows(info: str) -> list[tuple[str, str, str]]:
    """(name, what follows it — extras and version specifier —, environment marker) of each
    Requires-Dist of a distribution's METADATA; [] when it cannot be read."""
    try:
        with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as fh:
            meta = fh.read(262144)
    except OSError:
        return []
    return re.findall(r"^Requires-Dist:\s*([\w.-]+)([^;\n]*)(?:;([^\n]*))?$", meta, re.M)


def requirements(info: str, unconditional: bool = False) -> list[str]:
    """The names a distribution's METADATA lists as Requires-Dist (``unconditional``: only
    those that apply here — no environment marker, or one about this machine that holds, such
    as cut-cross-entropy's ``triton; platform_system == "Linux"``; never an extra's); [] when
    it cannot be read."""
    return [name for name, _spec, marker in requirement_rows(info)
            if not unconditional or not marker.strip() or machine_marker_holds(marker)]


# Marker variables that describe the machine (the same for every interpreter on it), with the
# values PEP 508 gives them; others (python_version, extra) are not decided here.
def machine_marker_holds(marker: str) -> bool:
    """Whether an environment marker holds for this machine and interpreter (PEP 508:
    platform and Python variables, versions compared as versions); False when it names an
    extra, a variable not known here, or cannot be read — "not known to apply"."""
    from opdoctor.facts.pep440 import marker_holds

    return marker_holds(marker, _marker_environment()) is True


@functools.lru_cache(maxsize=1)
def _marker_environment() -> dict[str, str]:
    """PEP 508's variables for the interpreter opdoctor runs in (the target's, as a rule)."""
    import platform

    impl = sys.implementation
    version = ".".join(map(str, impl.version[:3]))
    if impl.version.releaselevel != "final":
        version += impl.version.releaselevel[0] + str(impl.version.serial)
    return {"platform_system": platform.system(), "sys_platform": sys.platform,
            "os_name": os.name, "platform_machine": platform.machine(),
            "platform_python_implementation": platform.python_implementation(),
            "implementation_name": impl.name, "implementation_version": version,
            "python_version": ".".join(map(str, sys.version_info[:2])),
            "python_full_version": platform.python_version()}


@functools.lru_cache(maxsize=64)
def sibling_packages(site: str, package: str) -> frozenset[str]:
    """The other top-level packages in ``site`` that the distribution which installed
    ``package`` there installed too: tflite-support's ``tflite_support`` (pure Python) imports
    its compiled modules from ``tensorflow_lite_support``, both in its ``top_level.txt``. Read
    from each ``*.dist-info``'s ``top_level.txt``, else from the ``__init__.py`` files its RECORD
    lists; only names that are package directories in ``site``; empty when no distribution
    there lists ``package``."""
    try:
        infos = sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))
    except OSError:
        return frozenset()
    for info in infos:
        tops = top_levels(os.path.join(site, info))
        if package in tops:
            return frozenset(t for t in tops if t != package and t.isidentifier()
                             and os.path.isfile(os.path.join(site, t, "__init__.py")))
    return frozenset()


def top_levels(info: str, record: bool = True) -> set[str]:
    """A distribution's top-level import names: its ``top_level.txt`` (setuptools writes one),
    else (``record``) the top-level packages its RECORD lists an ``__init__.py`` for."""
    try:
        with open(os.path.join(info, "top_level.txt"), encoding="utf-8") as fh:
            return set(fh.read().split())
    except OSError:
        if not record:
            return set()
    try:
        with open(os.path.join(info, "RECORD"), encoding="utf-8", errors="replace") as fh:
            rows = fh.read(4 << 20).splitlines()
    except OSError:
        return set()
    # "pkg/__init__.py,sha256=…,123": a regular package the wheel installs at the top level.
    from opdoctor.facts.requires import record_path

    paths = [record_path(row) for row in rows]
    return {p.split("/", 1)[0] for p in paths if p.count("/") == 1 and
            p.endswith("/__init__.py")}


# Keyed on directories alone: what they hold is read again by the next command.
commandcache.register(_namespace_dir.cache_clear, sibling_packages.cache_clear)


def site_dirs(sys_path: Iterable[str]) -> list[str]:
    """The site-packages (and Debian dist-packages) entries of ``sys_path``: where Python runs
    ``.pth`` files and pip installs."""
    return [p for p in sys_path if p.endswith(("site-packages", "dist-packages"))]


def importable(name: str, sys_path: Iterable[str], suffixes: list[str], cwd: str) -> bool:
    """Whether ``import name`` finds something on ``sys_path`` (a package, a namespace
    portion, a module or an extension), through an editable install's finder, or is built
    into the interpreter."""
    if name in sys.builtin_module_names or name in sys.stdlib_module_names:
        return True
    entries = list(sys_path)
    for entry in entries:
        base = entry or cwd
        if os.path.isdir(os.path.join(base, name)) or any(
                os.path.isfile(os.path.join(base, name + suf)) for suf in suffixes):
            return True
    return name in editable_mapping(tuple(entries))


def _site_files(sites: Iterable[str], prefixes: tuple[str, ...], suffix: str,
                limit: int = 65536) -> Iterator[tuple[str, str, str]]:
    """(site, file name, text) of each file of ``sites`` named ``<prefix>…<suffix>``, in
    name order per site (as ``site`` reads ``.pth`` files); unreadable ones are skipped."""
    for site in sites:
        try:
            names = sorted(n for n in os.listdir(site)
                           if n.endswith(suffix) and n.startswith(prefixes))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(site, name), encoding="utf-8") as fh:
                    yield site, name, fh.read(limit)
            except (OSError, UnicodeDecodeError):
                continue


_EDITABLE_PTH = re.compile(r"^import (__editable___\w+_finder)\b", re.M)


@functools.lru_cache(maxsize=8)
def editable_mapping(sys_path: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Top-level names that setuptools' editable installs (PEP 660, ``pip install -e .``)
    map to their source tree: name → (file or directory, the finder module's file).

    setuptools writes ``__editable__.<dist>-<version>.pth`` into site-packages, whose line
    ``import __editable___<dist>_<version>_finder; …install()`` appends a finder to
    ``sys.meta_path`` at start-up: after the path finder, so a name any ``sys.path`` entry
    provides is never looked up there. The finder's ``MAPPING`` literal is read, not run.
    Only site directories are looked at: Python runs ``.pth`` files only there (not in
    ``PYTHONPATH`` entries). Each site's files in name order, as ``site`` runs them; the
    first finder that maps a name wins."""
    out: dict[str, tuple[str, str]] = {}
    sites = site_dirs(sys_path)
    for site, _name, text in _site_files(sites, ("__editable__",), ".pth"):
        for module in _EDITABLE_PTH.findall(text):
            finder = os.path.join(site, module + ".py")
            for key, value in _finder_mapping(finder).items():
                out.setdefault(key, (value, finder))
    return out


def pth_directories(sites: Iterable[str]) -> list[str]:
    """The directories the ``.pth`` files of ``sites`` put on sys.path, in the order ``site``
    adds them (each site's files in name order): an editable install's source tree (a
    src-layout ``pip install -e .``), ``setup.py develop``'s project."""
    out: list[str] = []
    for d, _pth, exists in _pth_lines(sites, ("",)):
        if exists and d not in out:
            out.append(d)
    return out


def editable_paths(sites: Iterable[str]) -> list[tuple[str, str, bool]]:
    """(directory, the ``.pth`` that adds it, whether it exists) for the path lines of the
    ``.pth`` files editable installs write: setuptools' ``__editable__.<dist>-<version>.pth``
    (a src layout, ``editable_mode=compat`` or ``strict``'s link tree) and scikit-build-core's
    ``_editable_skbc_<name>.pth`` — the ones whose directory is gone too (Python skips those
    silently: a moved checkout)."""
    return _pth_lines(sites, ("__editable__.", "_editable_skbc_"))


def _pth_lines(sites: Iterable[str], prefixes: tuple[str, ...]) -> list[tuple[str, str, bool]]:
    """(directory, .pth, exists) for each path line of the ``.pth`` files of ``sites`` whose
    name starts with one of ``prefixes``, in the order ``site`` reads them. Lines that run
    code (``import …``) add no directory; a relative line is relative to its site."""
    out: list[tuple[str, str, bool]] = []
    for site, pth, text in _site_files(sites, prefixes, ".pth"):
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                d = os.path.normpath(os.path.join(site, line))
                out.append((d, os.path.join(site, pth), os.path.isdir(d)))
    return out


def entry_origin(entry: str, sys_path: Iterable[str], environ: dict[str, str]) -> str:
    """What puts ``entry`` on a job's sys.path, when it is not the interpreter's own: "PYTHONPATH",
    the ``.pth`` file of a site directory that lists it, or the ``sitecustomize.py`` /
    ``usercustomize.py`` that names it (a cluster's start-up hook inserting a shared directory
    first: survey 23's P2 said "put the wanted directory first (PYTHONPATH)" and never named
    the file); "" when none of them does."""
    if not entry:
        return ""
    real = os.path.realpath(entry)
    if any(p and os.path.realpath(p) == real
           for p in environ.get("PYTHONPATH", "").split(os.pathsep)):
        return "PYTHONPATH"
    entries = [e for e in sys_path if e]
    for d, pth, _exists in _pth_lines(site_dirs(entries), ("",)):
        if os.path.realpath(d) == real:
            return pth
    for d in entries:
        for hook in ("sitecustomize.py", "usercustomize.py"):
            path = os.path.join(d, hook)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if entry in fh.read(1 << 20):
                        return path
            except OSError:
                continue
    return ""


def pth_distribution(pth: str) -> str:
    """The dist-info directory of the distribution an editable install's ``.pth`` belongs to
    (setuptools' ``__editable__.<dist>-<version>.pth``, scikit-build-core's
    ``_editable_skbc_<dist>.pth``; "" when not found)."""
    name, site = os.path.basename(pth), os.path.dirname(pth)
    if name.startswith("__editable__.") and name.endswith(".pth"):
        info = os.path.join(site, name[len("__editable__."):-len(".pth")] + ".dist-info")
        return info if os.path.isdir(info) else ""
    if name.startswith("_editable_skbc_") and name.endswith(".pth"):
        want = normalized(name[len("_editable_skbc_"):-len(".pth")])
        try:
            infos = sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))
        except OSError:
            return ""
        return next((os.path.join(site, n) for n in infos
                     if normalized(distribution(n)[0]) == want), "")
    return ""


def skbc_redirects(sites: Iterable[str]) -> dict[str, str]:
    """Module → file for scikit-build-core editable installs: its ``_editable_skbc_<name>.py``
    calls ``install(known_source_files, known_wheel_files, …)`` with literal dicts — sources
    by absolute path, built files by path below site-packages (the compiled modules stay
    there while the Python files come from the source tree). Read, not run."""
    import ast as _ast

    out: dict[str, str] = {}
    for site, _name, text in _site_files(sites, ("_editable_skbc_",), ".py", 1 << 20):
        try:
            tree = _ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for stmt in tree.body:
            call = stmt.value if isinstance(stmt, _ast.Expr) else None
            if not (isinstance(call, _ast.Call) and isinstance(call.func, _ast.Name)
                    and call.func.id == "install" and len(call.args) >= 2):
                continue
            try:
                sources, built = (_ast.literal_eval(a) for a in call.args[:2])
            except ValueError:
                continue
            if isinstance(sources, dict):
                out.update({k: v for k, v in sources.items()
                            if isinstance(k, str) and isinstance(v, str)})
            if isinstance(built, dict):
                out.update({k: os.path.join(site, v) for k, v in built.items()
                            if isinstance(k, str) and isinstance(v, str)})
    return out


def editable_project(finder: str) -> str:
    """The project directory a setuptools finder-mode editable install was made from ("" when
    not recorded): the distribution whose ``.pth`` imports ``finder``."""
    module = os.path.basename(finder)[:-3]
    for site, pth, text in _site_files([os.path.dirname(finder)], ("__editable__.",), ".pth"):
        info = pth_distribution(os.path.join(site, pth)) \
            if module in _EDITABLE_PTH.findall(text) else ""
        if info:
            return direct_url_project(info)
    return ""


def direct_url_project(info: str) -> str:
    """The directory a distribution was installed from, where its ``direct_url.json`` records
    a local one (``file://…``: an editable install's project), else ""."""
    import json

    try:
        with open(os.path.join(info, "direct_url.json"), encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return ""
    url = record.get("url", "") if isinstance(record, dict) else ""
    if isinstance(url, str) and url.startswith("file://"):
        from urllib.parse import unquote

        return unquote(url[len("file://"):])
    return ""


def _finder_mapping(finder: str) -> dict[str, str]:
    """The ``MAPPING`` literal of a setuptools editable finder module ({} when unreadable)."""
    import ast as _ast  # only where an editable install is looked up

    try:
        with open(finder, encoding="utf-8") as fh:
            tree = _ast.parse(fh.read(1 << 20))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    for stmt in tree.body:
        target: _ast.expr
        node: _ast.expr | None
        if isinstance(stmt, _ast.AnnAssign):
            target, node = stmt.target, stmt.value
        elif isinstance(stmt, _ast.Assign) and len(stmt.targets) == 1:
            target, node = stmt.targets[0], stmt.value
        else:
            continue
        if isinstance(target, _ast.Name) and target.id == "MAPPING" and node is not None:
            try:
                value = _ast.literal_eval(node)
            except ValueError:
                return {}
            if isinstance(value, dict):
                return {k: v for k, v in value.items() if isinstance(k, str) and
                        isinstance(v, str)}
    return {}



def editable_origin(path: str, via: str, sys_path: Iterable[str]) -> tuple[str, str]:
    """(how an editable install provides the package at ``path``, the project it was
    installed from) — ("", "") when it is not one: setuptools' finder ``via``, or a ``.pth``
    line that puts the tree on sys.path (setuptools' src layout, compat and strict modes;
    scikit-build-core)."""
    if via:
        return (f"setuptools' finder {os.path.basename(via)} maps it to {path}",
                editable_project(via) or os.path.dirname(path))
    for d, pth, exists in editable_paths(site_dirs(sys_path)):
        if exists and (path == d or path.startswith(d + os.sep)):
            info = pth_distribution(pth)
            return (f"{os.path.basename(pth)} puts {d} on sys.path",
                    (direct_url_project(info) if info else "") or d)
    return "", ""


# A project's build script that compiles extensions: setuptools' ext_modules, torch's
# CppExtension/CUDAExtension, pybind11's and Cython's helpers, CMake-driven builds.
_BUILDS_EXTENSIONS = re.compile(rb"\bext_modules\b|\b(?:Cpp|CUDA|Pybind11)Extension\b|"
                                rb"\bcythonize\(|scikit[-_]build|\bBuildExtension\b")


def declares_extensions(project: str) -> str:
    """The build file of the project directory that declares compiled extensions ("" when
    none does, or it cannot be read): setup.py, or pyproject.toml naming a compiled backend."""
    for name in ("setup.py", "pyproject.toml"):
        try:
            with open(os.path.join(project, name), "rb") as fh:
                text = fh.read(1 << 20)
        except OSError:
            continue
        if _BUILDS_EXTENSIONS.search(text):
            return os.path.join(project, name)
    return ""
