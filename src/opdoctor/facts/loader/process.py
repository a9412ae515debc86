"""The process the library is loaded into: the interpreter, and torch when the library needs it.

A torch extension is loaded after ``import torch``: torch/_C.so has pulled in libtorch_python,
libtorch, libtorch_cpu, libc10 …, and libtorch_global_deps.so was loaded RTLD_GLOBAL. We learn
that set from the torch install's own DT_NEEDED closure (read from disk, no import), so the
emulated load finds those sonames "already loaded" exactly as the real one does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from opdoctor.facts.elf.image import ElfImage
from opdoctor.facts.frameworks import TENSORFLOW, TORCH
from opdoctor.facts.interp import Interpreter
from opdoctor.facts.loader.search import (
    RULE_PATH,
    RULE_PRELOADED,
    DepTree,
    Library,
    Missing,
    Resolver,
)


@dataclass
class Process:
    """The emulated process after loading the target."""

    context: str  # e.g. "python 3.11.7 + import torch 2.13.0+cpu"
    preloaded: list[Library]
    global_scope: list[Library]  # searched before the target's own tree for symbols
    tree: DepTree
    # The dependency closure of each library the package's import loaded first (``first``):
    # when the target NEEDs one, glibc searches that library's dependencies too.
    closures: dict[str, list[Library]] = field(default_factory=dict)
    # The DT_NEEDED edges of the libraries already in the process (each load that put them
    # there): the target's tree stops at a preloaded library, glibc's search list does not.
    preload_edges: dict[str, list[tuple[str, Library | Missing]]] = field(
        default_factory=dict)
    # What the framework's own import (`import torch`, `import tensorflow`) failed to find:
    # that import fails before any extension is loaded (survey 22: a torch whose
    # libtorch_cuda.so or whose nvidia-cudnn requirement is gone).
    framework_missing: list[Missing] = field(default_factory=list)


# Runtimes torch's wheel carries in torch/lib for its own use that any OpenMP/C++ program
# also needs (lightgbm's lib_lightgbm.so NEEDs libgomp.so.1): not a sign of a torch extension.
_SHARED_RUNTIMES = ("libgomp", "libiomp", "libomp", "libgfortran", "libquadmath", "libstdc++",
                    "libgcc_s")


def needs_torch(image: ElfImage, torch_lib_dir: str | None) -> bool:
    """True when the library links torch's libraries or uses c10/at/torch symbols."""
    needed = [str(n) for n in image.tags.get("DT_NEEDED", [])]
    if torch_lib_dir and any(os.path.exists(os.path.join(torch_lib_dir, n)) and
                             not n.startswith(_SHARED_RUNTIMES) for n in needed):
        return True
    if TORCH.linked_by(needed):
        return True
    return _uses_symbols(image, TORCH.symbol_markers) and \
        not _defined_by_own_dependencies(image, needed, TORCH.symbol_markers)


def _defined_by_own_dependencies(image: ElfImage, needed: list[str],
                                 markers: tuple[bytes, ...]) -> bool:
    """Whether every torch-namespaced symbol the library needs is defined by one of its own
    dependencies, found where its RUNPATH/RPATH says (torch links none of them: the NEEDED
    names were checked before). PaddlePaddle 3's libpaddle.so needs ``torch::
    OperatorRegistry::instance()`` from its own libphi_core.so, a compatibility layer that
    links no torch: it is no torch extension, and no torch is imported to load it."""
    from opdoctor.facts.core import read_elf  # here: core imports this module
    from opdoctor.facts.elf.dynsym import DynSymbols
    from opdoctor.facts.loader.search import Environment, _expand

    prefixes = tuple(m.decode() for m in markers)
    wanted = {s.name for s in DynSymbols(image).undefined() if s.name.startswith(prefixes)}
    origin = os.path.dirname(os.path.abspath(image.data.path))
    env = Environment()
    dirs = [_expand(e, origin, env) for tag in ("DT_RUNPATH", "DT_RPATH")
            for v in image.tags.get(tag, []) for e in str(v).split(":") if e]
    for name in needed:
        if not wanted:
            break
        path = next((os.path.join(d, name) for d in dirs
                     if os.path.isfile(os.path.join(d, name))), None)
        if path is not None:
            wanted = read_elf(path, functools.partial(_not_defined, wanted), wanted)
    return not wanted


def _not_defined(names: set[str], image: ElfImage) -> set[str]:
    """The names of ``names`` that ``image`` does not export."""
    from opdoctor.facts.elf.dynsym import DynSymbols

    syms = DynSymbols(image)
    return {n for n in names if not syms.lookup(n)}


def _uses_symbols(image: ElfImage, markers: tuple[bytes, ...]) -> bool:
    """Whether the library *needs* (undefined dynamic symbol) a name that starts with one of
    ``markers``. A name it defines says nothing: ctranslate2's library carries its own copy of
    ATen's softmax kernels (``at::native::cunn_SoftMaxForward``) and links no torch. A byte
    search of .dynstr first: most libraries have no such name at all."""
    dynstr = image.section(".dynstr")
    if dynstr is None:
        return False
    start, end = dynstr.offset, dynstr.offset + dynstr.size
    buf = image.data.buf
    if not any(buf.find(m, start, end) >= 0 for m in markers):
        return False
    from opdoctor.facts.elf.dynsym import DynSymbols
    prefixes = tuple(m.decode() for m in markers)
    return any(s.name.startswith(prefixes) for s in DynSymbols(image).undefined())


def _mark(tree: DepTree, by: str, skip: set[str]) -> list[Library]:
    out = []
    for lib in tree.order:
        if lib.path in skip:
            continue
        lib.preloaded_by = lib.preloaded_by or by
        out.append(lib)
    return out


def needs_tensorflow(image: ElfImage) -> bool:
    """True when the library links libtensorflow_framework or uses TensorFlow's C++ API (a
    TensorFlow op library, possibly one built without the link flags)."""
    if TENSORFLOW.linked_by(str(n) for n in image.tags.get("DT_NEEDED", [])):
        return True
    return _uses_symbols(image, TENSORFLOW.symbol_markers)


def _tf_pywrap(framework: str) -> str | None:
    """tensorflow/python/_pywrap_tensorflow_internal.so beside libtensorflow_framework."""
    path = os.path.join(os.path.dirname(framework), "python", "_pywrap_tensorflow_internal.so")
    return path if os.path.exists(path) else None


def _ld_preload(resolver: Resolver, preloaded: list[Library],
                load: Callable[[str], DepTree]) -> list[Library]:
    """The libraries LD_PRELOAD maps into the program ``preloaded`` holds (its executable
    first), with what they need; an entry ld.so cannot find is skipped, as ld.so skips it
    ("cannot be preloaded … ignored")."""
    if not resolver.env.preload or not preloaded:
        return []
    seen = {lib.path for lib in preloaded}
    out: list[Library] = []
    for entry in resolver.env.preload:
        path, _rule, _attempts = resolver.search(entry, preloaded[0], [])
        if not path or os.path.realpath(path) in {os.path.realpath(p) for p in seen}:
            continue
        new = _mark(load(path), "LD_PRELOAD", seen)
        seen |= {lib.path for lib in new}
        out += new
    return out


def emulate(target: str, resolver: Resolver, interp: Interpreter | None,
            with_torch: bool, with_tensorflow: bool = False,
            via: tuple[str, ...] = (), first: tuple[str, ...] = (),
            bridge: tuple[str, ...] = (), shared: tuple[str, ...] = ()) -> Process:
    """Load the interpreter (and torch) first, then ``target``, as the real process would;
    ``via``: the library that loads ``target`` (a wheel's vendored library is loaded by its
    extension, never on its own: see :mod:`opdoctor.facts.vendored`); ``first``: libraries
    the package's import loads by path before it (torchtext's lib/libtorchtext.so, which
    ``_torchtext.so`` then finds by its SONAME already in the process); ``shared``: those of
    them it loads RTLD_GLOBAL (their symbols bind the target's too)."""
    preloaded: list[Library] = []
    global_scope: list[Library] = []
    edges: dict[str, list[tuple[str, Library | Missing]]] = {}
    framework_missing: list[Missing] = []
    context = "a bare process (no interpreter found)"

    def load(path: str) -> DepTree:
        loaded = resolver.load(path, preloaded)
        for k, v in loaded.edges.items():
            edges.setdefault(k, v)
        return loaded
    if interp is not None:
        exe = load(interp.executable)
        preloaded = _mark(exe, "python", set())
        global_scope = list(preloaded)
        context = f"python {interp.version}"
        pre = _ld_preload(resolver, preloaded, load)
        if pre:
            # ld.so maps LD_PRELOAD's objects after the program and before its dependencies:
            # first in the global scope after it, and a later DT_NEEDED of the same SONAME
            # is that object (an OpenMP-5 op library after `import torch` with the system's
            # libgomp preloaded in place of torch's older copy; survey 23's G1c)
            preloaded[1:1] = pre
            global_scope[1:1] = pre
            context += " + LD_PRELOAD " + ", ".join(os.path.basename(p)
                                                    for p in resolver.env.preload)
        if with_torch and interp.torch is not None:
            torch = interp.torch
            seen = {lib.path for lib in preloaded}
            if torch.global_deps:  # torch/__init__.py loads it with RTLD_GLOBAL
                gd = load(torch.global_deps)
                new = _mark(gd, "import torch", seen)
                preloaded += new
                global_scope += new
                seen |= {lib.path for lib in new}
            if torch.c_extension:
                c = load(torch.c_extension)
                preloaded += _mark(c, "import torch", seen)
                framework_missing += c.missing
            context += f" + import torch {torch.version}"
        framework = interp.tensorflow_framework
        if with_tensorflow and framework:
            # `import tensorflow` maps libtensorflow_framework (and its closure) before
            # tf.load_op_library loads an op library.
            # tensorflow/python/pywrap_tensorflow.py loads _pywrap_tensorflow_internal with
            # RTLD_GLOBAL: its closure (libtensorflow_framework, libtensorflow_cc …) binds the
            # op library's symbols even when the op library does not link them itself.
            pywrap = _tf_pywrap(framework)
            tf = load(pywrap or framework)
            new = _mark(tf, "import tensorflow", {lib.path for lib in preloaded})
            preloaded += new
            if pywrap:
                global_scope += new
            context += " + import tensorflow"
    closures: dict[str, list[Library]] = {}
    if first:
        seen = {lib.path for lib in preloaded}
        for path in first:
            loaded = load(path)
            new = _mark(loaded, "the package's import", seen)
            closures[loaded.root.path] = [lib for lib in loaded.order if lib.image is not None]
            preloaded += new
            if path in shared:
                global_scope += new
            seen |= {lib.path for lib in new}
        context += " + " + ", ".join(os.path.basename(p) for p in first) + \
            " (loaded by the package's import)"
    # ONNX Runtime loads its provider bridge (libonnxruntime_providers_shared.so, beside the
    # providers) with RTLD_GLOBAL before any execution provider: the provider's Provider_GetHost
    # is the bridge's to define.
    for path in bridge:
        loaded = load(path)
        new = _mark(loaded, "ONNX Runtime's provider bridge", {lib.path for lib in preloaded})
        preloaded += new
        global_scope += new
        context += f" + {os.path.basename(path)} (ONNX Runtime loads it before a provider)"
    if via:
        # glibc maps a library's dependencies breadth first: every DT_NEEDED of the extension
        # that loads the target is in the process before the target's own are searched for,
        # and a name one of them has as its SONAME is that library. imagecodecs' _lzo.abi3.so
        # NEEDs liblzokay-c and liblzokay (both by its RPATH); liblzokay-c's RUNPATH does not
        # find liblzokay, and never has to (survey 21's F1: OD201 on a working package).
        consumer = load(via[0])
        seen = {lib.path for lib in preloaded}
        me = os.path.realpath(target)
        for _name, dep in consumer.edges.get(consumer.root.path, []):
            if isinstance(dep, Library) and dep.path not in seen and \
                    os.path.realpath(dep.path) != me:
                dep.preloaded_by = dep.preloaded_by or \
                    f"{os.path.basename(via[0])}, which NEEDs it too"
                preloaded.append(dep)
                seen.add(dep.path)
    for lib in preloaded:
        lib.rule = RULE_PRELOADED
    loaders = [resolver.describe(Library(p, p, RULE_PATH)) for p in via]
    if loaders:
        context += f" + loaded by {os.path.basename(loaders[0].path)}"
    tree = resolver.load(target, preloaded, via=loaders)
    return Process(context, preloaded, global_scope, tree, closures, edges, framework_missing)
