"""A package's registrations per op: the C++ ones of its libraries joined with its Python ones.

A package may define its ops in C++ (``TORCH_LIBRARY``) and add fake impls, autograd or
kernels from Python, or define them in Python (``torch.library.define``, ``Library(ns,
"DEF").define``, ``@custom_op``, ``@triton_op``) and ship a C++ library that only registers
kernels (``TORCH_LIBRARY_IMPL``, the stable ``STABLE_TORCH_LIBRARY_IMPL``) or none at all
(bitsandbytes calls its library through ctypes from Python kernels). Judged one side at a time,
either looks broken ("registers nothing", "kernels for a namespace defined elsewhere"); joined,
each op says which part comes from where.

Nothing is imported: the Python side is :func:`opdoctor.facts.compile.python_registrations`
(the same parse the compile-readiness check reads), the C++ side the static inventory of each
library (:func:`opdoctor.facts.registration.read_inventory`, the stable registrars of
:func:`opdoctor.facts.compile.read_stable`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.compile import FAKE_KEYS, PyRegistration, StaticOp
from opdoctor.facts.registration import Inventory

# The package's libraries read for their C++ inventory (a package ships a few; fbgemm_gpu 19).
MAX_LIBRARIES = 48
MAX_LIBRARY_BYTES = 1 << 30


@dataclass
class LibraryOps:
    """The C++ registrations one library carries (static reading)."""

    path: str
    defines: dict[str, list[str]] = field(default_factory=dict)  # namespace → ops it defines
    impl: dict[str, set[str]] = field(default_factory=dict)  # namespace → kernel keys
    loose: list[str] = field(default_factory=list)  # schema names without a namespace
    registers: bool = False  # any registration evidence (classic or stable)
    stable: bool = False  # imports the stable-ABI registrar (aoti_torch_library_init_*)

    @property
    def name(self) -> str:
        """The library's file name."""
        return os.path.basename(self.path)


TORCH_OWN_NAMESPACES = frozenset(("aten", "prim", "prims"))


def library_ops(path: str, inv: Inventory, stable_namespaces: dict[str, set[str]],
                stable_defines: set[str], stable_used: bool) -> LibraryOps:
    """One library's C++ view from its inventory and its stable registrars."""
    out = LibraryOps(path, registers=inv.registers_anything or stable_used,
                     stable=stable_used)
    placed: set[str] = set()
    for ns in inv.namespaces.values():
        if ns.unresolved:
            continue
        if ns.defines or ns.fragments:
            out.defines.setdefault(ns.name, []).extend(o.split(".")[0] for o in ns.ops)
        if ns.impl_keys:
            out.impl.setdefault(ns.name, set()).update(ns.impl_keys)
        placed.update(ns.ops)
    for ns_name, keys in stable_namespaces.items():
        if keys:
            out.impl.setdefault(ns_name, set()).update(keys)
        if ns_name in stable_defines:
            out.defines.setdefault(ns_name, [])
    for s in inv.schemas:
        if "::" in s.name:
            ns_name, op = s.name.split("::", 1)
            if ns_name in TORCH_OWN_NAMESPACES:
                # torch defines these (a second TORCH_LIBRARY(aten) fails to load): their
                # schema text in another library is a reference — TorchScript lowering patterns
                # in torch-tensorrt's libtorchtrt.so ("aten::Bool(Tensor a) -> bool") — not an
                # op the package defines
                continue
            out.defines.setdefault(ns_name, [])
            if op.split(".")[0] not in out.defines[ns_name]:
                out.defines[ns_name].append(op.split(".")[0])
        elif s.name not in placed:
            out.loose.append(s.name.split(".")[0])
    return out


def read_library(path: str) -> LibraryOps | None:
    """The C++ view of one library file (None when it cannot be read as ELF); read once per
    run for the same file (every report of a package's libraries joins them all)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _read_library(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=128)
def _read_library(path: str, _mtime_ns: int, size: int) -> LibraryOps | None:
    from opdoctor.facts.compile import read_stable
    from opdoctor.facts.elf.image import ElfFormatError, ElfImage
    from opdoctor.facts.inputfile import InputError, open_input
    from opdoctor.facts.registration import read_inventory

    if size > MAX_LIBRARY_BYTES:
        return None
    from opdoctor.facts.loader.process import needs_torch

    try:
        img = ElfImage.open(open_input(path))
        st = read_stable(img)
        if not st.used and not needs_torch(img, None):
            # Neither torch's registration API nor the stable shim: whatever reads like a
            # schema in it is text (OpenCV's cv2.abi3.so carries "destroyAllWindows() -> None"
            # docstrings and "cv::VideoCapture(int index)"), not an operator of the package.
            return LibraryOps(path)
        inv = read_inventory(img, [])
    except (OSError, ValueError, InputError, ElfFormatError, IndexError, KeyError):
        return None
    return library_ops(path, inv, st.namespaces, st.defines, st.used)


@dataclass
class PackageOp:
    """One op of the package, every registration of it, with where each comes from."""

    name: str  # "ns::op" ("?::op": a C++ schema whose namespace is unknown)
    defined: list[str] = field(default_factory=list)  # "C++ _C.so", "Python ops.py:12"
    keys: dict[str, list[str]] = field(default_factory=dict)  # dispatch key → origins
    fake: list[str] = field(default_factory=list)  # Python fake impls
    autograd: list[str] = field(default_factory=list)  # Python autograd registrations

    @property
    def origin(self) -> str:
        """Who defines it: "C++", "Python", "C++ and Python" or "" (no definition found)."""
        cpp = any(d.startswith("C++") for d in self.defined)
        py = any(d.startswith("Python") for d in self.defined)
        return "C++ and Python" if cpp and py else "C++" if cpp else "Python" if py else ""


@dataclass
class PackageRegistrations:
    """Every op of a package with its C++ and Python registrations joined."""

    package: str
    ops: list[PackageOp] = field(default_factory=list)
    # Namespaces the package's Python defines (Library(ns, "DEF"/"FRAGMENT"), a define of
    # one of its ops): namespace → where.
    python_namespaces: dict[str, list[str]] = field(default_factory=dict)
    libraries: list[LibraryOps] = field(default_factory=list)
    python: list[PyRegistration] = field(default_factory=list)

    def op(self, name: str) -> PackageOp | None:
        """The op of that name, if the package registers it."""
        return next((o for o in self.ops if o.name == name), None)

    def python_ops(self, kinds: tuple[str, ...] = ("define",)) -> list[PyRegistration]:
        """The Python registrations of these kinds (imported modules first)."""
        regs = [r for r in self.python if r.kind in kinds and r.op]
        return sorted(regs, key=lambda r: (not r.imported, r.file, r.line))

    def python_keys(self, namespace: str) -> dict[str, list[str]]:
        """Kernel keys the package's Python registers for ops of ``namespace``."""
        out: dict[str, list[str]] = {}
        for o in self.ops:
            if o.name.split("::", 1)[0] != namespace:
                continue
            for key, origins in o.keys.items():
                py = [s for s in origins if s.startswith("Python")]
                if py:
                    out.setdefault(key, []).extend(py)
        return out


def _site(r: PyRegistration, package_dir: str) -> str:
    base = os.path.dirname(package_dir) if package_dir else ""
    rel = os.path.relpath(r.file, base) if base and r.file.startswith(base + os.sep) else \
        os.path.basename(r.file)
    return f"Python {rel}:{r.line}"


def merge(package: str, package_dir: str, libraries: list[LibraryOps],
          python: list[PyRegistration]) -> PackageRegistrations:
    """Join the libraries' C++ inventories with the Python registrations, per op."""
    out = PackageRegistrations(package, libraries=libraries, python=python)
    ops: dict[str, PackageOp] = {}

    def get(name: str) -> PackageOp:
        if name not in ops:
            ops[name] = PackageOp(name)
        return ops[name]

    for r in python:
        site = _site(r, package_dir)
        if r.kind == "library":
            if r.key in ("DEF", "FRAGMENT"):
                out.python_namespaces.setdefault(r.op.split("::", 1)[0], []).append(
                    f"{site} {r.how}")
            continue
        if not r.op or "::" not in r.op or r.op.endswith("::"):
            continue
        op = get(r.op.split(".")[0])
        if r.kind == "define":
            op.defined.append(site)
            out.python_namespaces.setdefault(r.op.split("::", 1)[0], []).append(
                f"{site} {r.how}")
        elif r.key:
            op.keys.setdefault(r.key, []).append(site)
        elif r.kind == "fake":
            op.fake.append(f"{site} {r.how}")
        elif r.kind == "autograd":
            op.autograd.append(f"{site} {r.how}")
    for lib in libraries:
        for ns, names in lib.defines.items():
            for name in names:
                get(f"{ns}::{name}").defined.append(f"C++ {lib.name}")
    for lib in libraries:
        # A schema without its namespace (stripped, or a stable-ABI library): the package's
        # Python names the op with its namespace (a fake impl, a kernel): that namespace.
        for bare in lib.loose:
            homes = sorted({o.name.split("::", 1)[0] for o in ops.values()
                            if o.name.split("::", 1)[1] == bare and not o.name.startswith("?")})
            if not homes and len(lib.defines) == 1:  # the one namespace the library defines
                homes = list(lib.defines)
            op = get(f"{homes[0]}::{bare}" if len(homes) == 1 else f"?::{bare}")
            op.defined.append(f"C++ {lib.name} (schema in .rodata)")
    for lib in libraries:
        for ns, keys in lib.impl.items():
            for op in [o for o in ops.values() if o.name.split("::", 1)[0] == ns]:
                for key in sorted(keys):
                    op.keys.setdefault(key, []).append(f"C++ {lib.name}")
    out.ops = sorted(ops.values(), key=lambda o: o.name)
    return out


def complete_static_ops(ops: list[StaticOp], merged: PackageRegistrations) -> list[StaticOp]:
    """The compile table's ops with what the other side adds: C++ fake kernels of an op the
    Python defines, Python fake impls of a C++ op whose namespace the library does not keep
    (``?::nms`` of a stable library is ``torchvision::nms`` of the Python fake impl)."""
    out = []
    for s in ops:
        name = s.name
        if name.startswith("?::"):
            homes = [o.name for o in merged.ops if o.name.split("::", 1)[1] == name[3:]
                     and not o.name.startswith("?")]
            name = homes[0] if len(homes) == 1 else name
        m = merged.op(name)
        if m is None:
            out.append(s)
            continue
        keys = tuple(sorted(set(s.keys) | set(m.keys)))
        fake_keys = [k for k in FAKE_KEYS if k in m.keys]
        new = dataclasses.replace(s, name=name, keys=keys)
        if not s.fake and fake_keys:
            new = dataclasses.replace(new, fake=True, fake_via=f"{fake_keys[0]} kernel "
                                      f"({m.keys[fake_keys[0]][0]})")
        elif not s.fake and m.fake:
            new = dataclasses.replace(new, fake=True, fake_via=m.fake[0])
        if not s.autograd and m.autograd:
            new = dataclasses.replace(new, autograd=True, autograd_via=m.autograd[0])
        out.append(new)
    return out


def describe(op: PackageOp) -> str:
    """``ns::op [CPU (C++), Meta (Python)] defined in C++, fake: Python`` for the report."""
    def side(origins: list[str]) -> str:
        sides = {o.split(" ", 1)[0] for o in origins}
        return "C++ and Python" if len(sides) > 1 else next(iter(sides), "?")

    keys = ", ".join(f"{k} ({side(v)})" for k, v in sorted(op.keys.items()))
    # "?::op": a schema stored without its namespace in a library that defines several.
    name = f"{op.name[3:]} (namespace not recorded)" if op.name.startswith("?::") else op.name
    text = name + (f" [{keys}]" if keys else "")
    text += f" defined in {op.origin}" if op.origin else " (no definition found statically)"
    if op.fake:
        text += ", fake impl: Python"
    if op.autograd:
        text += ", autograd: Python"
    return text



def _examples(regs: list[str], n: int = 3) -> str:
    return "; ".join(regs[:n]) + (f" (+{len(regs) - n} more)" if len(regs) > n else "")


def refutation(merged: PackageRegistrations, code: str, subject: str, path: str) -> str:
    """Why the package's Python registrations make a static registration finding of one of
    its libraries no fault ("" when they do not): the ops are defined in Python (OD101: the
    library registers nothing itself; OD104: its kernels' namespace is defined in Python), or
    their kernels are registered from Python (OD103)."""
    ns = subject.split("::", 1)[0] if subject.endswith("::*") else ""
    if code == "OD101":
        defined = [f"{r.op} ({_site(r, '')[7:]})" for r in merged.python_ops()]
        if not defined:
            return ""
        lib = next((x for x in merged.libraries if os.path.realpath(x.path) ==
                    os.path.realpath(path)), None)
        how = " and this library registers kernels through the stable ABI (it imports " \
            "aoti_torch_library_init_impl)" if lib is not None and lib.stable else ""
        return (f"the package {merged.package} defines its ops from Python: "
                f"{_examples(defined)}{how}")
    if code == "OD104" and ns in merged.python_namespaces:
        return f"{ns} is defined from Python: {_examples(merged.python_namespaces[ns])}"
    if code == "OD103" and ns:
        keys = merged.python_keys(ns)
        if keys:
            return "kernels for its ops are registered from Python: " + _examples(
                [f"{k} ({v[0]})" for k, v in sorted(keys.items())])
    return ""


commandcache.register(_read_library.cache_clear)  # a package's libraries: one command's
