"""Compile readiness, statically: per op, is there a fake (Meta) path and an autograd path?

torch.compile, torch.export and meta tensors run an op with *fake* tensors; that needs a Meta,
CompositeImplicitAutograd or CompositeExplicitAutograd kernel, or a Python fake impl
(``torch.library.register_fake``, ``impl_abstract``, ``Library(ns, "IMPL").impl(…, "Meta")``,
``@custom_op`` + ``.register_fake``). Nothing is loaded or imported here:

* C++ kernels per namespace come from the registration inventory (classic
  ``TORCH_LIBRARY_IMPL_init_<ns>_<Key>_<n>`` symbols) plus the stable-ABI registrars read here
  (``STABLE_TORCH_LIBRARY_IMPL_init_<ns>_<Key>_<n>``; stripped, the stable macros still leave
  the key as a string in ``.rodata`` next to ``aoti_torch_library_init_impl``);
* Python registrations come from the package's sources (package mode), parsed with ``ast``,
  one linear pass per file;
* a pystub (``m.set_python_module("mod")``) is inlined into the caller, so it leaves only the
  module name in ``.rodata``: a string equal to one of the package's module names is taken as
  the pystub.
"""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.image import ElfImage
from opdoctor.facts.pyast import all_nodes
from opdoctor.facts.registration import Inventory

FAKE_KEYS = ("Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd")
AUTOGRAD_KEYS = ("Autograd", "AutogradCPU", "AutogradCUDA", "CompositeImplicitAutograd")
# Dispatch keys a stable registrar may name (the string the macro stringises).
_KNOWN_KEYS = ("CPU", "CUDA", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
               "Autograd", "AutogradCPU", "AutogradCUDA", "HIP", "XPU", "MPS")
_MAX_FILES = 400
_MAX_BYTES = 1 << 20
# Every registration _ModuleReader recognises needs one of these words in the source (a
# custom_op, a Library object, a torch.library function, the deprecated _custom_ops API): a
# module without any of them cannot register anything, so it is not parsed. Most of a large
# package's modules mention torch; very few mention these.
_REGISTER_WORDS = (b"custom_op", b"triton_op", b"register_fake", b"impl_abstract",
                   b"register_autograd", b"register_kernel", b"impl_backward",
                   b"impl_save_for_backward")
# A Library object is only known to the reader from a call ``x = ….Library("ns", …)``:
# "Library" in a docstring does not count.
_LIBRARY_CALL = re.compile(rb"Library\s*\(")
_IMPL_CALL = re.compile(rb"\.\s*(?:impl|define)\s*\(")


# A line where a registration's call or decorator can be: every API name the reader acts on
# (register_fake, impl, define, Library, custom_op, impl_abstract …) contains one of these.
_HOT_WORD = re.compile(
    rb"\b(?:_?register_(?:fake|autograd|kernel|abstract)|impl(?:_abstract|_backward|"
    rb"_save_for_backward)?|define|Library|custom_op|triton_op)\b")


def _hot_lines(raw: bytes) -> list[int]:
    """Sorted 1-based numbers of the lines holding a :data:`_HOT_WORD`."""
    out: list[int] = []
    line, pos = 1, 0
    for m in _HOT_WORD.finditer(raw):
        line += raw.count(b"\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


def _may_register(raw: bytes) -> bool:
    """True when the source has a word some registration needs (plain substring searches:
    much faster than one alternation regex over hundreds of files)."""
    # torch.library.impl / torch.library.define: a dotted call starting with "library" /
    # "torch.library" whose last part is "impl" or "define", so both "library" and ".impl(" or
    # ".define(" are in the source.
    return any(w in raw for w in _REGISTER_WORDS) \
        or (b"library" in raw and _IMPL_CALL.search(raw) is not None) \
        or (b"Library" in raw and _LIBRARY_CALL.search(raw) is not None)


@dataclass(frozen=True)
class PyRegistration:
    """One registration in the package's Python sources."""

    # "define", "fake", "autograd", "kernel", "autograd_unsupported"; "library": a
    # torch.library.Library(ns, kind) object (op "ns::*", key "DEF"/"IMPL"/"FRAGMENT").
    kind: str
    op: str  # "ns::op" ("" when the name is not a literal)
    how: str  # the API as written, e.g. "torch.library.register_fake"
    file: str
    line: int
    module: str  # dotted module name of the file
    imported: bool  # the module runs on `import pkg` (reached by the static import chain)
    key: str = ""  # the dispatch key of a kernel registration


@dataclass
class StableRegistrars:
    """Stable-ABI registrars: keys per namespace (from .strtab), keys seen in .rodata."""

    namespaces: dict[str, set[str]] = field(default_factory=dict)
    defines: set[str] = field(default_factory=set)
    rodata_keys: set[str] = field(default_factory=set)  # stripped: keys without a namespace
    used: bool = False  # the library calls aoti_torch_library_init_*


@dataclass(frozen=True)
class StaticOp:
    """What the static reading says about one op."""

    name: str
    origin: str  # "C++" or "Python"
    keys: tuple[str, ...]  # kernels known for it (per namespace for C++ ops)
    fake: bool | None  # None: cannot tell statically (stripped)
    fake_via: str
    autograd: bool | None
    autograd_via: str


@dataclass
class CompileInventory:
    """Everything the static reading found about compile readiness."""

    ops: list[StaticOp] = field(default_factory=list)
    python: list[PyRegistration] = field(default_factory=list)
    pystub_modules: list[str] = field(default_factory=list)  # package modules named in .rodata
    stable: StableRegistrars = field(default_factory=StableRegistrars)
    notes: list[str] = field(default_factory=list)


def _range(img: ElfImage, name: str) -> tuple[int, int] | None:
    sec = img.section(name)
    if sec is None or sec.sh_type == 8:
        return None
    return sec.offset, sec.offset + sec.size


def read_stable(img: ElfImage) -> StableRegistrars:
    """Stable-ABI registrars (:func:`opdoctor.facts.stable.read_registration`: ``.strtab``
    names, namespaced ones included, or, stripped, the ``.rodata`` literals), and the
    dispatch-key strings the macros leave in ``.rodata``."""
    from opdoctor.facts.stable import read_registration
    reg = read_registration(img)
    out = StableRegistrars(used=reg.used)
    for ns in reg.namespaces:
        out.namespaces[ns] = set(reg.impl_keys.get(ns, set()))
        if reg.defines.get(ns) or reg.fragments.get(ns):
            out.defines.add(ns)
    buf = img.data.buf
    ro = _range(img, ".rodata")
    if out.used and ro is not None:
        for key in _KNOWN_KEYS:
            if buf.find(b"\0" + key.encode() + b"\0", ro[0], min(ro[1], ro[0] + (16 << 20))) >= 0:
                out.rodata_keys.add(key)
    return out


def rodata_modules(img: ElfImage, modules: list[str]) -> list[str]:
    """Which of these dotted module names appear as NUL-terminated strings in .rodata."""
    ro = _range(img, ".rodata")
    if ro is None or not modules:
        return []
    buf = img.data.buf
    end = min(ro[1], ro[0] + (64 << 20))
    return [m for m in modules if buf.find(b"\0" + m.encode() + b"\0", ro[0] - 1, end) >= 0]


# ------------------------------------------------------------------ Python sources (ast)
def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _str(node: ast.AST | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _kwarg(call: ast.Call, name: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _keys_of(node: ast.AST | None) -> list[str]:
    """Dispatch keys / device types given as a string or a list of strings."""
    if node is None:
        return []
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for s in (_str(e) for e in node.elts) if s]
    s = _str(node)
    return [s] if s else []


# torch.library device types → the dispatch key a kernel for that device is registered at.
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "meta": "Meta",
                "hpu": "HPU", "hip": "CUDA", "default": "CompositeExplicitAutograd"}


def _device_keys(types: list[str]) -> list[str]:
    """torch.library device types ("cpu", "cuda:0", "default") as dispatch keys."""
    return [_DEVICE_KEYS.get(t.split(":")[0].lower(), t) for t in types]


def _key_kind(key: str) -> str:
    k = key.lower()
    if k == "meta" or k in ("compositeexplicitautograd", "default"):
        return "fake"
    if k == "compositeimplicitautograd":
        return "fake+autograd"
    if k.startswith("autograd"):
        return "autograd"
    return "kernel"


class _ModuleReader:
    """One pass over one module's AST, collecting registrations."""

    def __init__(self, file: str, module: str, imported: bool) -> None:
        self.file, self.module, self.imported = file, module, imported
        self.libs: dict[str, str] = {}  # variable → namespace of a torch.library.Library
        self.custom: dict[str, str] = {}  # function name → "ns::op" of a custom_op
        self.autograd_fns: set[str] = set()  # classes deriving from torch.autograd.Function
        self.funcs: dict[str, ast.AST] = {}
        self.out: list[PyRegistration] = []

    def add(self, kind: str, op: str, how: str, line: int, key: str = "") -> None:
        self.out.append(PyRegistration(kind, op, how, self.file, line, self.module,
                                       self.imported, key))

    def read(self, tree: ast.Module, raw: bytes | None = None) -> list[PyRegistration]:
        """The module's registrations. With its source ``raw``, only the top-level statements
        whose lines hold a word some registration needs are walked to their expressions (the
        definitions later calls refer to are read from every statement): a large module's
        other code is never visited (torchvision: 0.3 s of its 0.45 s here)."""
        if raw is None:
            nodes = list(all_nodes(tree))
        else:
            from opdoctor.facts.pyast import statements
            hot = _hot_lines(raw)
            nodes = list(statements(tree.body))
            for stmt in tree.body:
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
                last = stmt.end_lineno or stmt.lineno
                at = bisect_left(hot, first)
                if at < len(hot) and hot[at] <= last:
                    nodes += [n for n in all_nodes(stmt) if not isinstance(n, ast.stmt)]
        for node in nodes:  # first: names that later calls refer to
            if isinstance(node, ast.ClassDef) and any(
                    _dotted(b).endswith("autograd.Function") or _dotted(b) == "Function"
                    for b in node.bases):
                self.autograd_fns.add(node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs[node.name] = node
                for dec in node.decorator_list:
                    if not isinstance(dec, ast.Call):
                        continue
                    api = _dotted(dec.func).rsplit(".", 1)[-1]
                    if api in ("custom_op", "triton_op"):
                        op = _str(dec.args[0]) if dec.args else ""
                        if op:
                            self.custom[node.name] = op
                            self.add("define", op, f"@torch.library.{api}", node.lineno)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                fn = _dotted(node.value.func)
                args = node.value.args
                if fn.endswith("Library") and args and _str(args[0]):
                    self.libs[node.targets[0].id] = _str(args[0])
                elif fn.rsplit(".", 1)[-1] in ("custom_op", "triton_op") and args and \
                        _str(args[0]):
                    self.custom[node.targets[0].id] = _str(args[0])
                    self.add("define", _str(args[0]), f"torch.library.{fn.rsplit('.', 1)[-1]}",
                             node.lineno)
            if isinstance(node, ast.Call) and _dotted(node.func).endswith("Library") and \
                    node.args and _str(node.args[0]):
                # torch.library.Library("ns", "DEF" | "IMPL" | "FRAGMENT"[, key]): the kind
                # says whether Python defines the namespace (DEF/FRAGMENT) or only adds to it.
                kind = _str(node.args[1]) if len(node.args) > 1 else _str(_kwarg(node, "kind"))
                if kind in ("DEF", "IMPL", "FRAGMENT"):
                    self.add("library", f"{_str(node.args[0])}::*", f"torch.library.Library("
                             f"{_str(node.args[0])!r}, {kind!r})", node.lineno, kind)
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    self._decorator(dec, node)
            elif isinstance(node, ast.Call):
                self._call(node, None)
        # In source order, whichever statements were walked (a stable sort: one line's
        # registrations keep the order they were found in).
        return sorted(self.out, key=lambda r: r.line)

    def _decorator(self, dec: ast.AST, fn: ast.AST) -> None:
        # @f.register_fake / @f.register_autograd (no call) on a custom_op named f
        if isinstance(dec, ast.Attribute) and isinstance(dec.value, ast.Name) and \
                dec.value.id in self.custom:
            self._custom_method(dec.value.id, dec.attr, dec.lineno)
        # @register_custom_op("torchao::op"): the package's own decorator factory that hands
        # its argument to torch.library.register_fake (torchao's ops.py) or custom_op
        if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Name) and dec.args and \
                _str(dec.args[0]) and dec.func.id in self.funcs:
            api = _forwarded_api(self.funcs[dec.func.id])
            if api:
                kind = "define" if api in ("custom_op", "triton_op") else "fake"
                self.add(kind, _str(dec.args[0]), f"@{dec.func.id} (torch.library.{api})",
                         dec.lineno)

    def _custom_method(self, name: str, attr: str, line: int) -> None:
        op = self.custom[name]
        if attr in ("register_fake", "register_abstract", "impl_abstract"):
            self.add("fake", op, f"@custom_op + .{attr}", line)
        elif attr == "register_autograd":
            self.add("autograd", op, "@custom_op + .register_autograd", line)

    def _call(self, call: ast.Call, _fn: ast.AST | None) -> None:
        fn = _dotted(call.func)
        last = fn.rsplit(".", 1)[-1]
        args = call.args
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            owner = call.func.value.id
            if owner in self.custom:
                self._custom_method(owner, call.func.attr, call.lineno)
                return
            if owner in self.libs:
                self._library_method(self.libs[owner], call)
                return
        if last in ("register_fake", "impl_abstract", "register_autograd") and args and \
                _str(args[0]):
            kind = "autograd" if last == "register_autograd" else "fake"
            self.add(kind, _str(args[0]), f"torch.library.{last}", call.lineno)
        elif last == "define" and fn.startswith(("torch.library", "library")) and args and \
                "::" in _str(args[0]):
            # torch.library.define("ns::op", "(Tensor x) -> Tensor")
            self.add("define", _str(args[0]).split("(")[0].strip(), "torch.library.define",
                     call.lineno)
        elif last == "register_kernel" and args and "::" in _str(args[0]):
            # torch.library.register_kernel("ns::op", "cpu"|["cpu", "cuda"], fn): a kernel per
            # device type (CPU, CUDA …); None means every device (CompositeExplicitAutograd).
            node = args[1] if len(args) > 1 else _kwarg(call, "device_types")
            types = _keys_of(node)
            if isinstance(node, ast.Constant) and node.value is None:
                types = ["CompositeExplicitAutograd"]
            keys = _device_keys(types)
            self._kernel(_str(args[0]), keys, "torch.library.register_kernel", call.lineno,
                         args[2] if len(args) > 2 else None)
        elif last == "impl" and fn.startswith(("torch.library", "library")) and args:
            # torch.library.impl("ns::op", types, func) or torch.library.impl(lib, "op", key)
            if isinstance(args[0], ast.Name) and args[0].id in self.libs and len(args) > 1:
                op = f"{self.libs[args[0].id]}::{_str(args[1])}"
                keys = _keys_of(args[2] if len(args) > 2 else _kwarg(call, "dispatch_key"))
            else:
                op = _str(args[0])
                keys = _device_keys(_keys_of(args[1] if len(args) > 1 else
                                             _kwarg(call, "types")))
            func = args[2] if len(args) > 2 and not isinstance(args[0], ast.Name) else None
            self._kernel(op, keys, "torch.library.impl", call.lineno, func)
        elif last in ("impl_backward", "impl_save_for_backward"):
            self.add("autograd_unsupported", _str(args[0]) if args else "",
                     f"{fn} (deprecated torch._custom_ops API)", call.lineno)

    def _library_method(self, ns: str, call: ast.Call) -> None:
        attr = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        args = call.args
        if attr == "define" and args and _str(args[0]):
            name = _str(args[0]).split("(")[0].strip()
            self.add("define", f"{ns}::{name}", "Library.define", call.lineno)
        elif attr == "impl" and args and _str(args[0]):
            name = _str(args[0])
            op = name if "::" in name else f"{ns}::{name}"
            given = args[2] if len(args) > 2 else _kwarg(call, "dispatch_key")
            keys = _keys_of(given)
            if given is None:  # omitted: the op's CompositeImplicitAutograd kernel
                keys = ["CompositeImplicitAutograd"]
            # A key held in a variable (torchvision's `_key`) is unknown: no kernel is claimed.
            self._kernel(op, keys, "Library.impl", call.lineno,
                         args[1] if len(args) > 1 else None)
        elif attr == "_register_fake" and args and _str(args[0]):
            self.add("fake", f"{ns}::{_str(args[0])}", "Library._register_fake", call.lineno)

    def _kernel(self, op: str, keys: list[str], how: str, line: int, func: ast.AST | None
                ) -> None:
        if not op or op.endswith("::"):
            return
        for key in keys:
            kind = _key_kind(key)
            for k in kind.split("+"):
                self.add(k, op, f"{how}(…, {key!r})", line, key)
            if kind == "kernel" and self._wraps_autograd_function(func):
                self.add("autograd_unsupported", op,
                         f"{how}(…, {key!r}) registers a torch.autograd.Function at a "
                         "backend key", line)

    def _wraps_autograd_function(self, func: ast.AST | None) -> bool:
        """The kernel (a function of this module) calls SomeAutogradFunction.apply."""
        body = self.funcs.get(func.id) if isinstance(func, ast.Name) else func
        if body is None:
            return False
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "apply" and _dotted(n.func.value) in self.autograd_fns
                   for n in all_nodes(body))


def module_name(file: str, package_dir: str, package: str) -> str:
    """Dotted module name of a file inside the package directory."""
    rel = os.path.relpath(file, package_dir)[:-3].replace(os.sep, ".")
    if rel == "__init__":
        return package
    if rel.endswith(".__init__"):
        rel = rel[: -len(".__init__")]
    return f"{package}.{rel}"


def _forwarded_api(fn: ast.AST) -> str:
    """The torch.library API (register_fake, impl_abstract, custom_op, triton_op) that a
    decorator factory calls with its first parameter as the op name — ``def
    register_custom_op(name): … torch.library.register_fake(f"{name}")(func)`` — or ""."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
        return ""
    param = fn.args.args[0].arg
    for node in all_nodes(fn):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        api = _dotted(node.func).rsplit(".", 1)[-1]
        if api not in ("register_fake", "impl_abstract", "custom_op", "triton_op"):
            continue
        arg = node.args[0]
        named = isinstance(arg, ast.Name) and arg.id == param
        formatted = isinstance(arg, ast.JoinedStr) and any(
            isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and
            v.value.id == param for v in arg.values)
        if named or formatted:
            return api
    return ""


def python_registrations(files: list[str], imported: set[str], package_dir: str,
                         package: str) -> list[PyRegistration]:
    """Registrations in the package's Python files (each parsed once; large files skipped).

    Read once per command and package: every library of a directory walk or a scan of one
    package (numpy's site: 20 libraries, 760 files) asks the same question."""
    return list(_python_registrations(tuple(files), frozenset(imported), package_dir, package))


@lru_cache(maxsize=16)
def _python_registrations(files: tuple[str, ...], imported: frozenset[str], package_dir: str,
                          package: str) -> tuple[PyRegistration, ...]:
    from opdoctor.facts.pyast import parse_file

    out: list[PyRegistration] = []
    for file in files[:_MAX_FILES]:
        checkpoint(f"looking for registrations in {file}")
        try:
            if os.path.getsize(file) > _MAX_BYTES:
                continue
            with open(file, "rb") as fh:
                raw = fh.read()
            if not _may_register(raw):
                continue  # cheap: only modules that can register anything are decoded, parsed
            tree = parse_file(file, raw)
        except OSError:
            continue
        if tree is None:
            continue
        mod = module_name(file, package_dir, package)
        out += _ModuleReader(file, mod, os.path.realpath(file) in imported).read(tree, raw)
    return tuple(out)


def static_ops(inv: Inventory | None, stable: StableRegistrars,
               python: list[PyRegistration]) -> list[StaticOp]:
    """Per op: kernels known statically and whether fake / autograd paths exist."""
    by_op: dict[str, list[PyRegistration]] = {}
    for r in python:
        by_op.setdefault(r.op, []).append(r)
    out: list[StaticOp] = []
    seen: set[str] = set()
    if inv is not None:
        # Schemas the classic inventory could not place: the stable registrars' namespace
        # when there is exactly one, "?" when the library is stripped and none is known.
        placed = {op for ns in inv.namespaces.values() for op in ns.ops}
        loose = [s.name for s in inv.schemas if "::" not in s.name and s.name not in placed]
        stable_ops: dict[str, list[str]] = {}
        if loose and stable.used:
            home = sorted(stable.defines)[0] if len(stable.defines) == 1 else "?"
            stable_ops[home] = loose
        names = set(inv.namespaces) | set(stable.namespaces) | set(stable_ops)
        for ns in sorted(names):
            info = inv.namespaces.get(ns)
            ops = (list(info.ops) if info else []) + stable_ops.get(ns, [])
            defines = bool(info and (info.defines or info.fragments)) or \
                ns in stable.defines or ns in stable_ops
            if not defines:
                continue  # kernels for a namespace defined elsewhere: not this library's ops
            keys = set(info.impl_keys if info else ()) | stable.namespaces.get(ns, set())
            unknown = inv.stripped and not stable.namespaces
            if unknown:
                keys |= stable.rodata_keys
            for op in ops:
                name = f"{ns}::{op.split('.')[0]}"
                if name in seen:
                    continue
                seen.add(name)
                out.append(_judge(name, "C++", keys, by_op.get(name, []),
                                  inv.def_with_function, unknown and not stable.rodata_keys))
    for r in python:
        if r.kind == "define" and r.op and r.op not in seen:
            seen.add(r.op)
            out.append(_judge(r.op, "Python", set(), by_op.get(r.op, []), False, False))
    return out


def _judge(name: str, origin: str, keys: set[str], regs: list[PyRegistration],
           catch_all: bool, unknown: bool) -> StaticOp:
    keys = keys | {r.key for r in regs if r.key}
    fake_keys = [k for k in FAKE_KEYS if k in keys]
    fake_py = [r for r in regs if r.kind == "fake"]
    auto_keys = [k for k in AUTOGRAD_KEYS if k in keys]
    auto_py = [r for r in regs if r.kind == "autograd"]
    fake: bool | None
    autograd: bool | None
    if fake_keys:
        fake, fake_via = True, f"{fake_keys[0]} kernel"
    elif fake_py:
        fake, fake_via = True, f"{fake_py[0].how} ({os.path.basename(fake_py[0].file)}:" \
            f"{fake_py[0].line})"
    elif catch_all:
        fake, fake_via = True, "m.def(schema, fn): CompositeImplicitAutograd"
    else:
        fake, fake_via = (None, "stripped: kernels unknown") if unknown else (False, "")
    if auto_keys:
        autograd, autograd_via = True, f"{auto_keys[0]} kernel"
    elif auto_py:
        autograd, autograd_via = True, auto_py[0].how
    elif catch_all:
        autograd, autograd_via = True, "m.def(schema, fn): CompositeImplicitAutograd"
    else:
        autograd, autograd_via = (None, "stripped") if unknown else (False, "")
    return StaticOp(name, origin, tuple(sorted(keys)), fake, fake_via, autograd, autograd_via)


commandcache.register(_python_registrations.cache_clear)  # keyed on file names alone
