"""Which distribution owns a file, what it requires that is not installed, and which of those
ships a library the loader cannot find (read from ``*.dist-info``; nothing imported).

Wheels split native code across distributions: sherpa-onnx's ``_sherpa_onnx`` extension
NEEDs ``libonnxruntime.so``, which the required ``sherpa-onnx-core`` installs into
``sherpa_onnx/lib``; torch's CUDA wheels find cuBLAS in ``nvidia/cublas/lib``, installed by
``nvidia-cublas-cu12``. Installed with ``--no-deps`` (or a hand-copied site-packages), the
library is simply absent, and the fix is that requirement, not a search path.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Iterable, Iterator

from opdoctor.facts import commandcache
from opdoctor.facts.pkgdir import (
    distribution,
    importable,
    machine_marker_holds,
    normalized,
    requirement_rows,
)

_FRAMEWORK_DISTS = re.compile(r"^(?:torch|tensorflow(?:-cpu|-gpu|-intel|-macos)?|tf-nightly|"
                              r"tf-keras|mindspore(?:-\w+)?|oneflow(?:-\w+)?|"
                              r"paddlepaddle(?:-gpu)?)$")
_FRAMEWORK_IMPORT = re.compile(rb"^\s*(?:import|from)\s+(?:torch|tensorflow|mindspore|oneflow|"
                               rb"paddle)\b", re.M)


def record_path(row: str) -> str:
    """The path field of a RECORD row. Build backends quote it (tensordict 0.14.3's wheel:
    `"tensordict/_C.so",sha256=…`): its files were owned by no distribution, and the wheel's
    copy of the package read as a stranger beside the installed one (survey 24)."""
    if row.startswith('"'):
        import csv

        return next(csv.reader([row]), [""])[0]
    return row.split(",", 1)[0]


def owning_dist(path: str) -> tuple[str, str, str] | None:
    """(dist-info dir, site dir, path relative to it) of the distribution whose RECORD lists
    ``path`` (walking up from the file to the first directory with ``*.dist-info``)."""
    real = os.path.realpath(path)
    d = os.path.dirname(real)
    while d and d != os.path.dirname(d):
        owners = _record_owners(d)
        if owners is not None:
            rel = os.path.relpath(real, d)
            info = owners.get(rel)
            return (info, d, rel) if info is not None else None
        d = os.path.dirname(d)
    return None


@functools.lru_cache(maxsize=256)
def _record_owners(site: str) -> dict[str, str] | None:
    """Each path the RECORDs of a directory's ``*.dist-info`` list → the first of them (in
    name order) that lists it; None when the directory holds no ``*.dist-info``. Read once per
    command: a walk of MindSpore's libraries asked 240 times, each a read of every RECORD
    sorted before the owner (14,672 lines for MindSpore's alone; survey 15's P3)."""
    infos = glob.glob(os.path.join(site, "*.dist-info"))
    if not infos:
        return None
    owners: dict[str, str] = {}
    for info in sorted(infos):
        try:
            with open(os.path.join(info, "RECORD"), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    owners.setdefault(record_path(line), info)
        except OSError:
            continue
    return owners


commandcache.register(_record_owners.cache_clear)


def _record_paths(info: str) -> list[str]:
    """The paths a distribution's RECORD lists (its first column); [] when unreadable."""
    try:
        with open(os.path.join(info, "RECORD"), encoding="utf-8", errors="replace") as fh:
            return [record_path(row) for row in fh.read(4 << 20).splitlines()]
    except OSError:
        return []


def record_changed(info: str, rel: str, path: str) -> bool:
    """Whether ``path`` (``rel`` in the RECORD of the ``.dist-info`` ``info``) differs from
    the sha256 its RECORD lists (False when the RECORD gives no hash or cannot be read)."""
    import csv

    from opdoctor.facts.hashcache import HashCache

    try:
        with open(os.path.join(info, "RECORD"), encoding="utf-8") as fh:
            row = next((r for r in csv.reader(fh) if r and r[0] == rel), None)
    except OSError:
        return False
    if row is None or len(row) < 2 or not row[1].startswith("sha256="):
        return False
    hexdigest = HashCache().many([path]).get(path)
    return hexdigest is not None and record_digest(hexdigest) != row[1][len("sha256="):]


def record_digest(hexdigest: str) -> str:
    """A sha256 hex digest in RECORD's form (urlsafe base64, no padding)."""
    import base64

    return base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def record_directories(info: str) -> set[str]:
    """The top-level directories a distribution installed files into (its RECORD), its
    ``*.dist-info`` and ``*.libs`` directories left out."""
    tops = {path.split("/", 1)[0] for path in _record_paths(info) if "/" in path}
    return {t for t in tops if t and not t.endswith((".dist-info", ".libs", ".data"))
            and t not in ("..", ".")}


def record_top_names(info: str) -> set[str]:
    """The top-level import names a distribution installed (its RECORD): its top-level
    directories and the modules at the site's root (``_cffi_backend.cpython-311-….so`` →
    ``_cffi_backend``)."""
    names = set(record_directories(info))
    for path in _record_paths(info):
        if "/" not in path and path.endswith((".py", ".so")) and (path[0].isalpha() or \
                                                                  path.startswith("_")):
            names.add(path.split(".", 1)[0])
    return {n for n in names if n.isidentifier()}


def unconditional_requirements(info: str) -> list[tuple[str, str]]:
    """(name, version specifier) of each Requires-Dist of a distribution that applies here
    (no marker, or a marker about this machine that holds; never an extra's)."""
    out = []
    for name, rest, marker in requirement_rows(info):
        if marker.strip() and not machine_marker_holds(marker):
            continue
        # " [extra] (>=1.0)" → ">=1.0"
        spec = re.sub(r"^\s*\[[^\]]*\]", "", rest).strip()
        if spec.startswith("(") and spec.endswith(")"):
            spec = spec[1:-1].strip()
        out.append((name, spec))
    return out


def requires_no_framework(info: str, site: str) -> bool:
    """Whether a distribution neither requires a framework (torch, TensorFlow, MindSpore,
    OneFlow, Paddle) nor imports one in its packages' ``__init__.py``: its native libraries
    serve its own code. A torch extension wheel often leaves torch out of its requirements
    (so pip does not replace the user's build), but its package imports it."""
    if any(_FRAMEWORK_DISTS.match(normalized(n)) for n, _spec in unconditional_requirements(info)):
        return False
    for top in record_directories(info):
        try:
            with open(os.path.join(site, top, "__init__.py"), "rb") as fh:
                if _FRAMEWORK_IMPORT.search(fh.read(1 << 20)):
                    return False
        except OSError:
            continue
    return True


def uninstalled_requirements(info: str, dirs: Iterable[str]) -> list[tuple[str, str]]:
    """The unconditional requirements of ``info`` that none of ``dirs`` (sys.path entries;
    the distribution's own site directory is always looked in) has a ``*.dist-info`` or
    ``*.egg-info`` of (polars without polars-runtime-32)."""
    wanted = unconditional_requirements(info)
    if not wanted:
        return []
    installed: set[str] = set()
    for _entry, names in _listings({*dirs, os.path.dirname(info)}):
        installed |= {normalized(distribution(n)[0]) for n in names
                      if n.endswith((".dist-info", ".egg-info"))}
    absent = [(w, spec) for w, spec in wanted if normalized(w) not in installed]
    # A module of that name provided by another distribution satisfies the import, if not
    # pip: tensorflow-text requires tensorflow, and tensorflow-cpu installs `tensorflow`.
    from importlib.machinery import EXTENSION_SUFFIXES

    suffixes = [".py", *EXTENSION_SUFFIXES]
    return [(w, spec) for w, spec in absent
            if not importable(re.sub(r"[-.]+", "_", w).lower(), [*dirs], suffixes, ".")]


def _listings(dirs: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
    """(entry, its file names) of each sys.path entry that can be listed ("" is the cwd)."""
    for entry in dirs:
        try:
            yield entry, os.listdir(entry or ".")
        except OSError:
            continue


def _tokens(name: str) -> set[str]:
    """The words of a distribution name that can name a directory (``nvidia-cublas-cu12`` →
    nvidia, cublas; version tags such as cu12 are left out)."""
    return {t for t in re.split(r"[-_.]+", name.lower())
            if t and not re.fullmatch(r"(cu|py|cp|v)?\d+\w*", t)}


def requirement_shipping(requester: str, needed: str, looked_in: Iterable[str],
                         dirs: Iterable[str] = ()) -> tuple[str, str, str] | None:
    """(requirement with its version specifier, the requiring distribution's name, the
    directory inside site-packages the requester looks in) when the library ``requester``
    belongs to a distribution that requires a distribution not installed, and the requester's
    RPATH/RUNPATH (``looked_in``: the directories its search tried) points inside the
    site-packages directory it is installed in — where such a requirement puts its files.
    The requirement must be singled out by its name: its words name that directory
    (``nvidia-cublas-cu12`` → nvidia/cublas/lib) or the missing library (``onnxruntime`` →
    libonnxruntime.so), or it extends the distribution's own name (sherpa-onnx-core of
    sherpa-onnx); a requirement such as numpy that says nothing of the library, or a tie, is
    no answer (None)."""
    owner = owning_dist(requester)
    if owner is None:
        return None
    info, site, _rel = owner
    inside = [os.path.normpath(d) for d in looked_in
              if os.path.normpath(d).startswith(os.path.realpath(site) + os.sep)
              or os.path.normpath(d).startswith(site + os.sep)]
    if not inside:
        return None
    absent = uninstalled_requirements(info, dirs)
    if not absent:
        return None
    dist = distribution(info)[0]

    def words(dirs: Iterable[str]) -> set[str]:
        parts = {p for d in dirs for p in re.split(r"[/\\]", os.path.relpath(d, site).lower())}
        return {w for part in parts for w in re.split(r"[-_.]+", part)}

    path_words = words(inside)

    def score(name: str) -> int:
        lib = re.sub(r"^lib|\.so.*$", "", needed.lower())
        return 2 * len(_tokens(name) & path_words) + \
            2 * sum(1 for t in _tokens(name) if len(t) > 3 and t in lib) + \
            (1 if normalized(name).startswith(normalized(dist) + "-") else 0)

    ranked = sorted(absent, key=lambda r: -score(r[0]))
    best = ranked[0]
    if score(best[0]) == 0 or (len(ranked) > 1 and score(best[0]) == score(ranked[1][0])):
        return None
    req = best[0] + (best[1] if best[1] and best[1][0] in "=<>!~" else "")
    # the directory of the requirement named (a CUDA torch's RPATH lists nvidia/cudnn/lib
    # first: libnccl.so.2's fix said it looks "in nvidia/cudnn/lib"; it is nvidia/nccl/lib)
    own = max(inside, key=lambda d: len(_tokens(best[0]) & words([d])))
    return req, dist, os.path.relpath(own, site)


def pin_holds(pin: str, version: str) -> bool | None:
    """Whether ``version`` matches an exact requirement ``==pin`` (``2.8.*`` a prefix; a local
    label of the installed version ignored unless the pin has one, as PEP 440 says); None
    when the pin cannot be read."""
    from opdoctor.facts.pep440 import admits

    return admits(f"=={pin}", version)


def _first_installed(name: str, dirs: Iterable[str]) -> tuple[str, str] | None:
    """(version, directory) of the first distribution called ``name`` on ``dirs``, in order,
    as importlib.metadata finds it."""
    want = normalized(name)
    for entry, names in _listings(dirs):
        for n in names:
            if n.endswith((".dist-info", ".egg-info")):
                dist, version = distribution(n)
                if normalized(dist) == want and version:
                    return version, entry
    return None


def pinned_elsewhere(info: str, dirs: Iterable[str], frameworks: bool = False
                     ) -> list[tuple[str, str, str, str, str]]:
    """(requirement, pinned release — "" for a range —, installed release, its directory, the
    specifier as written) for each unconditional requirement of ``info`` that the first
    installed distribution of that name on ``dirs`` (sys.path order) does not satisfy: an
    exact pin (pydantic 2.14.4 pins pydantic-core==2.50.5, whose compiled core it was
    released with) or a range (numba 0.60.0 requires numpy<2.1,>=1.22; its import refuses
    numpy 2.4). A specifier or version that cannot be read is no finding. Framework
    requirements (torchvision's torch==…) are left out unless ``frameworks``: a package with
    binaries says through them which release they were built for (the symbol and variant
    checks); a pure-Python add-on (mindnlp 0.5.1: ``mindspore<=2.7.0,>=2.5.0``) has only its
    metadata to say it."""
    from opdoctor.facts.pep440 import admits

    out = []
    order = [*dirs]
    for name, spec in unconditional_requirements(info):
        if not spec or (not frameworks and _FRAMEWORK_DISTS.match(normalized(name))):
            continue
        pin = exact_pin(spec)
        found = _first_installed(name, order)
        if found is None:
            continue  # not installed at all: uninstalled_requirements says so
        holds = pin_holds(pin, found[0]) if pin else admits(spec, found[0])
        if holds is False:
            out.append((name, pin, found[0], found[1], spec))
    return out


def is_framework(name: str) -> bool:
    """Whether a distribution name is a framework's (torch, tensorflow-cpu, mindspore …)."""
    return bool(_FRAMEWORK_DISTS.match(normalized(name)))


def exact_pin(spec: str) -> str:
    """The one release a version specifier admits: ``==X`` (``===X``), or a pair of bounds
    that meet, ``>=X,<=X`` (jax pins its jaxlib so); "" for any other specifier."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    eq = [m.group(1) for p in parts if (m := re.fullmatch(r"===?\s*([\w.!+*-]+)", p))]
    if len(parts) == 1 and eq:
        return eq[0]
    low = {m.group(1) for p in parts if (m := re.fullmatch(r">=\s*([\w.!+-]+)", p))}
    high = {m.group(1) for p in parts if (m := re.fullmatch(r"<=\s*([\w.!+-]+)", p))}
    same = low & high
    return next(iter(same)) if len(parts) == 2 and len(same) == 1 else ""


# Top-level modules whose distribution is named otherwise (the usual cases; a module named
# like its distribution needs no entry): what `import X` needs installed.
_IMPORT_NAMES: dict[str, tuple[str, ...]] = {
    "PIL": ("pillow",), "dateutil": ("python-dateutil",), "yaml": ("pyyaml",),
    "bs4": ("beautifulsoup4",), "sklearn": ("scikit-learn",), "skimage": ("scikit-image",),
    "cv2": ("opencv-python", "opencv-python-headless", "opencv-contrib-python",
            "opencv-contrib-python-headless"),
    "attr": ("attrs",), "jwt": ("pyjwt",), "fitz": ("pymupdf",), "dotenv": ("python-dotenv",),
    "magic": ("python-magic",), "serial": ("pyserial",), "zmq": ("pyzmq",),
    "Crypto": ("pycryptodome",), "OpenSSL": ("pyopenssl",), "docx": ("python-docx",),
    "pptx": ("python-pptx",), "git": ("gitpython",), "multipart": ("python-multipart",),
    "google": ("protobuf",), "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu"),
    "sentencepiece": ("sentencepiece",), "websocket": ("websocket-client",),
    "pkg_resources": ("setuptools",), "typing_extensions": ("typing-extensions",),
    "_cffi_backend": ("cffi",),
}


def distributions_of(module: str) -> set[str]:
    """The distribution names (normalized) that can provide top-level module ``module``."""
    return {normalized(module), *(normalized(d) for d in _IMPORT_NAMES.get(module, ()))}


def shipped_libraries(name: str, where: str, limit: int = 20) -> list[str]:
    """File names of the shared libraries the distribution ``name`` installed in directory
    ``where`` (its RECORD): what a pinned requirement brings (PyMuPDFb's libmupdf.so.24.4)."""
    want = normalized(name)
    try:
        infos = [n for n in os.listdir(where) if n.endswith(".dist-info")
                 and normalized(distribution(n)[0]) == want]
    except OSError:
        return []
    out: list[str] = []
    for path in record_libraries(os.path.join(where, infos[0])) if infos else []:
        base = os.path.basename(path)
        if base not in out:
            out.append(base)
            if len(out) >= limit:
                break
    return out


def compiled_requirements(info: str, dirs: Iterable[str], limit: int = 3
                          ) -> list[tuple[str, str, str]]:
    """(name, version, site-relative path of a shared library it installs) of each
    unconditional requirement of a distribution that is installed on ``dirs`` and ships
    compiled code: where a pure-Python package's compiled part lives (polars 2.1's engine in
    polars-runtime-32, jax's in jaxlib). At most ``limit``, in METADATA order."""
    out: list[tuple[str, str, str]] = []
    listings = list(_listings(dirs))
    for name, _spec in unconditional_requirements(info):
        want = normalized(name)
        for entry, names in listings:
            hit = next((n for n in names if n.endswith(".dist-info")
                        and normalized(distribution(n)[0]) == want), None)
            if hit is None:
                continue
            libs = own_code_first(record_libraries(os.path.join(entry or ".", hit)))
            if libs:  # named as the requirement names it (polars-runtime-32)
                out.append((name, distribution(hit)[1], os.path.join(entry, libs[0])))
            break
        if len(out) >= limit:
            break
    return out


def own_code_first(paths: list[str]) -> list[str]:
    """``paths`` with the libraries a wheel vendors (auditwheel's ``numpy.libs/`` or
    ``pkg/.libs/``: libgfortran, libopenblas, renamed with a hash) after the distribution's own
    compiled code, each group in its order: what names "the compiled code of numpy" is
    ``_multiarray_umath``, not its Fortran runtime (survey 17)."""
    def vendored(path: str) -> bool:
        return any(part.endswith(".libs") for part in path.replace(os.sep, "/").split("/")[:-1])

    return sorted(paths, key=vendored)


def record_libraries(info: str) -> list[str]:
    """The shared libraries a distribution's RECORD lists, as paths relative to its site
    directory (``google/_upb/_message.abi3.so`` of protobuf)."""
    from opdoctor.facts.inputfile import is_shared_library

    return [p for p in _record_paths(info) if is_shared_library(os.path.basename(p))]


def dist_info_in(name: str, where: str) -> str | None:
    """The ``.dist-info`` directory of the distribution ``name`` in the directory ``where``."""
    want = normalized(name)
    try:
        entries = os.listdir(where)
    except OSError:
        return None
    for entry in sorted(entries):
        if entry.endswith(".dist-info") and normalized(distribution(entry)[0]) == want:
            return os.path.join(where, entry)
    return None


def record_packages(info: str) -> set[str]:
    """The outermost regular packages a distribution installed (dotted, from its RECORD's
    ``…/__init__.py`` rows): ``numpy``; ``google.protobuf`` for protobuf, whose ``google`` is a
    namespace package other distributions install into too."""
    found = {path[:-len("/__init__.py")].replace("/", ".") for path in _record_paths(info)
             if path.endswith("/__init__.py") and not path.startswith("..")}
    return {p for p in found if p.replace(".", "").isidentifier() and not any(
        p.startswith(q + ".") for q in found)}
