"""Facts about TensorFlow installs and TensorFlow op libraries, read from disk (nothing imported).

* The install: its release (the ``tensorflow*.dist-info`` beside the package), its C++11 ABI and
  the abseil LTS inline namespace its ``libtensorflow_framework`` exports (``absl::lts_2025…``).
* A library: the abseil namespaces and the old-ABI ``std::string`` its TensorFlow-facing symbols
  use, and the distribution that installed it with the TensorFlow release it requires
  (``Requires-Dist`` in its metadata, or a ``tensorflow>=X,<Y`` guard in its Python files).
"""

from __future__ import annotations

import glob
import mmap
import os
import re
from dataclasses import dataclass

from opdoctor.facts.elf.demangle import demangle_all
from opdoctor.facts.inputfile import shared_libraries_under
from opdoctor.facts.requires import owning_dist

# Distribution names that install the ``tensorflow`` package.
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                    "tensorflow-macos", "tf-nightly", "tf-nightly-cpu", "tensorflow-aarch64")

# abseil LTS inline namespace → the TensorFlow releases whose wheels export it (observed on the
# PyPI wheels: tensorflow-io 0.37.1 for TF 2.16 and tensorflow-text 2.19.0 use lts_20230802,
# tensorflow-text 2.20.1 lts_20250127, tensorflow-cpu 2.21.0 lts_20250814).
ABSL_RELEASES = {
    "lts_20230125": "2.13–2.15",
    "lts_20230802": "2.16–2.19",
    "lts_20250127": "2.20",
    "lts_20250814": "2.21",
}

_ABSL = re.compile(rb"absl12(lts_\d{8})")
_REQ = re.compile(r"^(?:Requires-Dist:\s*)?(tensorflow(?:-cpu|-gpu|-intel|-macos)?|tf-nightly)"
                  r"\s*\(?\s*([<>=!~][^;)\"']*)", re.I)
_GUARD = re.compile(r"""["'](tensorflow(?:-cpu|-gpu)?\s*[<>=~!][^"']{1,60})["']""")


@dataclass(frozen=True)
class TfInstall:
    """A TensorFlow install on disk."""

    directory: str  # the tensorflow package directory
    version: str  # "2.21.0" ("unknown" when no dist-info says)
    framework: str | None  # libtensorflow_framework.so.N
    absl: str  # the abseil LTS namespace it exports ("" when none found)
    cxx11_abi: int | None  # 1 when it exports std::__cxx11 names


@dataclass(frozen=True)
class TfRequirement:
    """The TensorFlow release a library's distribution says it was built for."""

    distribution: str  # "tensorflow-io-gcs-filesystem 0.37.1"
    spec: str  # "tensorflow<2.17.0,>=2.16.0"
    release: str  # "2.16" (the lower bound's major.minor; "" when it has none)
    source: str  # where it was read: METADATA path or the guard's file:line


def _search(path: str, pattern: re.Pattern[bytes]) -> list[bytes]:
    """All distinct first groups of ``pattern`` in the file (memory-mapped)."""
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return sorted({m.group(1) for m in pattern.finditer(mm)})
    except (OSError, ValueError):
        return []


def _contains(path: str, needle: bytes) -> bool:
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return mm.find(needle) >= 0
    except (OSError, ValueError):
        return False


def _dist_version(site: str, names: tuple[str, ...]) -> tuple[str, str]:
    """(distribution name, version) of the first installed distribution among ``names``."""
    for info in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        try:
            with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        name = re.search(r"^Name:\s*(\S+)", head, re.M)
        ver = re.search(r"^Version:\s*(\S+)", head, re.M)
        if name and ver and name.group(1).lower().replace("_", "-") in names:
            return name.group(1), ver.group(1)
    return "", ""


def read_install(tensorflow_dir: str, framework: str | None) -> TfInstall:
    """Describe the TensorFlow install at ``tensorflow_dir`` without importing it."""
    _name, version = _dist_version(os.path.dirname(tensorflow_dir), TF_DISTRIBUTIONS)
    absl = ""
    abi: int | None = None
    if framework:
        found = _search(framework, _ABSL)
        absl = found[-1].decode() if found else ""
        abi = 1 if _contains(framework, b"St7__cxx11") else 0
    return TfInstall(tensorflow_dir, version or "unknown", framework, absl, abi)


def absl_namespaces(names: list[str]) -> list[str]:
    """The abseil LTS namespaces (``lts_20230802`` …) that mangled ``names`` use."""
    return sorted({m.group(1).decode() for n in names for m in _ABSL.finditer(n.encode())})


def old_abi_tf_symbols(names: list[str]) -> list[str]:
    """Demangled TensorFlow symbols among ``names`` that take ``std::string`` in the pre-C++11
    ABI (``Ss`` / ``std::basic_string<…>`` without ``__cxx11``)."""
    out = []
    for _mangled, d in demangle_all([n for n in names if "10tensorflow" in n]).items():
        if d.startswith("tensorflow::") and "std::__cxx11::" not in d and (
                "std::string" in d or "std::basic_string<" in d):
            out.append(d)
    return out


def release_of(spec: str) -> str:
    """The major.minor of a requirement's lower bound (``>=2.16.0,<2.17`` → ``2.16``)."""
    m = re.search(r"(?:>=|==|~=)\s*(\d+)\.(\d+)", spec)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    m = re.search(r"<\s*(\d+)\.(\d+)", spec)  # only an upper bound: the release before it
    if m and int(m.group(2)) > 0:
        return f"{m.group(1)}.{int(m.group(2)) - 1}"
    return ""


_BOUND = re.compile(r"(>=|<=|==|~=|<|>)\s*(\d+)\.(\d+)(?:\.(\d+))?")


def span_of(spec: str) -> str:
    """The TensorFlow releases (major.minor) a requirement with an upper bound allows: ``2.19``
    for ``==2.19.0``, ``2.13–2.15`` for ``>=2.13.0,<2.16.0`` (tensorflow-addons 0.23.0, whose
    lower bound alone read as "built for 2.13"); "" without both a lower and an upper bound."""
    lo: tuple[int, int] | None = None
    hi: tuple[int, int] | None = None
    for op, major, minor, patch in _BOUND.findall(spec):
        rel = (int(major), int(minor))
        if op == "==":
            lo = hi = rel
        elif op == "~=":  # ~=2.15.0 allows 2.15.x; ~=2.15 every 2.x from 2.15 on
            lo, hi = rel, (rel if patch else None)
        elif op in (">=", ">"):
            lo = rel
        elif op == "<=":
            hi = rel
        elif op == "<":
            hi = rel if patch and int(patch) > 0 else (rel[0], rel[1] - 1) if rel[1] else None
    if lo is None or hi is None or hi < lo:
        return ""
    first, last = f"{lo[0]}.{lo[1]}", f"{hi[0]}.{hi[1]}"
    return first if first == last else f"{first}–{last}"


def _metadata_requirement(info: str) -> TfRequirement | None:
    """The ``Requires-Dist: tensorflow…`` of one dist-info's METADATA (None when none)."""
    meta = os.path.join(info, "METADATA")
    dist = os.path.basename(info)[:-len(".dist-info")].replace("-", " ", 1)
    try:
        with open(meta, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.startswith("Requires-Dist:"):
                    continue
                m = _REQ.match(line.strip())
                if m:
                    spec = m.group(1) + m.group(2).strip().replace(" ", "")
                    return TfRequirement(dist, spec, release_of(spec),
                                         f"{meta}: {line.strip()}")
    except OSError:
        pass
    return None


def requirement_for(path: str) -> TfRequirement | None:
    """The TensorFlow release the distribution that installed ``path`` requires: its METADATA's
    ``Requires-Dist: tensorflow…`` (extras included), else a ``"tensorflow>=…"`` guard string in
    the Python files of the library's top-level package."""
    owner = owning_dist(path)
    if owner is None:
        return None
    info, site, rel = owner
    found = _metadata_requirement(info)
    if found is not None:
        return found
    # Another distribution installing files into the same top-level package: ITEX's
    # _pywrap_itex.so is intel_extension_for_tensorflow_lib's, the TensorFlow requirement is
    # intel_extension_for_tensorflow's.
    head = rel.split(os.sep)[0] + "/"
    for other in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        if other == info:
            continue
        try:
            with open(os.path.join(other, "RECORD"), encoding="utf-8", errors="replace") as fh:
                shares = any(line.startswith(head) for line in fh)
        except OSError:
            continue
        if shares and (found := _metadata_requirement(other)) is not None:
            return found
    dist = os.path.basename(info)[:-len(".dist-info")].replace("-", " ", 1)
    top = os.path.join(site, rel.split(os.sep)[0])
    for py in sorted(glob.glob(os.path.join(top, "**", "*.py"), recursive=True))[:200]:
        try:
            with open(py, encoding="utf-8", errors="replace") as fh:
                for no, line in enumerate(fh, 1):
                    m = _GUARD.search(line)
                    if m:
                        spec = m.group(1).replace(" ", "")
                        return TfRequirement(dist, spec, release_of(spec),
                                             f"{py}:{no}: {line.strip()[:120]}")
        except OSError:
            continue
    return None


def libraries_defining(op: str, paths: list[str], exclude: tuple[str, ...]) -> list[str]:
    """Shared objects among ``paths`` (not under ``exclude`` directories) whose bytes hold the op
    name as a C string beside TensorFlow's op registration (``OpDefBuilderWrapper``)."""
    needle = b"\0" + op.encode() + b"\0"
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if any(real.startswith(os.path.realpath(x) + os.sep) for x in exclude):
            continue
        if _contains(real, needle) and _contains(real, b"OpDefBuilderWrapper"):
            out.append(p)
    return out


# Framework libraries (libtensorflow_cc, libtorch_cpu: hundreds of MB) are not op libraries of a
# package; reading them would make the search cost seconds.
_MAX_SCAN_BYTES = 256 << 20


def other_site_dirs(sys_path: tuple[str, ...] | list[str]) -> list[str]:
    """site-packages of Python environments other than the one whose ``sys_path`` is given.

    Where "installed for another Python" usually means: the user site of each Python release
    (``~/.local/lib/python3.X/site-packages``), the system's (``/usr/lib``, ``/usr/local/lib``),
    and sibling environments of the target's own (other venvs or conda envs beside it). Only
    directories that exist and are not on ``sys_path``.
    """
    mine = {os.path.realpath(p) for p in sys_path if p}
    pats = [os.path.join(os.path.expanduser("~"), ".local/lib/python3*/site-packages")]
    for base in ("/usr/lib", "/usr/local/lib"):
        pats += [f"{base}/python3*/site-packages", f"{base}/python3*/dist-packages"]
    for p in sys_path:
        if os.path.basename(p) in ("site-packages", "dist-packages"):
            env = os.path.dirname(os.path.dirname(os.path.dirname(p)))  # <env>/lib/python3.X
            pats.append(os.path.join(os.path.dirname(env), "*/lib/python3*/site-packages"))
    out: list[str] = []
    for pat in pats:
        for d in sorted(glob.glob(pat)):
            real = os.path.realpath(d)
            if os.path.isdir(real) and real not in mine and d not in out:
                out.append(d)
    return out


def _size(path: str) -> int:
    """Size in bytes; an unreadable entry counts as too large to scan."""
    try:
        return os.path.getsize(path)
    except OSError:
        return _MAX_SCAN_BYTES + 1


def installed_elsewhere(op: str, sys_path: tuple[str, ...] | list[str],
                        exclude: tuple[str, ...]) -> list[tuple[str, str]]:
    """(library, site-packages directory) of op libraries that define ``op`` in the
    environments of :func:`other_site_dirs` — nothing is loaded, the bytes are searched."""
    found: list[tuple[str, str]] = []
    for site in other_site_dirs(sys_path):
        libs = [p for p in shared_libraries_under(site) if _size(p) <= _MAX_SCAN_BYTES]
        found += [(lib, site) for lib in libraries_defining(op, libs, exclude)]
    return found
