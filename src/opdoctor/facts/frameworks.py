"""One record per framework: what a library of it looks like and how a process loads it.

Checks and facts read these records instead of spelling framework names: which ``DT_NEEDED``
names and mangled-name markers mean "links this framework", which libraries betray a build
variant (CUDA, ROCm), how its official builds set the C++11 ABI, what ``import X`` maps into
the process before an op library is loaded, and how the probe loads a library of it.
Adding a framework adds a record here (and a check module for what is specific to it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Framework:
    """What opdoctor knows about one deep-learning framework."""

    name: str  # the key used in reports: "torch", "tensorflow" …
    display: str  # "PyTorch"
    module: str  # the Python package: import <module>
    pip: str  # the distribution name on PyPI
    # DT_NEEDED prefixes that mean the library links this framework.
    needed_prefixes: tuple[str, ...]
    # Substrings of .dynstr (mangled names) that mean the library uses its C++ API.
    symbol_markers: tuple[bytes, ...] = ()
    # Build variant → framework libraries only that variant ships (DT_NEEDED names).
    variant_libraries: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Byte strings in .strtab/.rodata left by its registration macros.
    registration_markers: tuple[bytes, ...] = ()
    # _GLIBCXX_USE_CXX11_ABI of the official PyPI builds (None: read it from the install).
    cxx11_abi: int | None = None
    # What `import <module>` maps before an op library is loaded, in words (the loader
    # emulation reads the install itself: see opdoctor.facts.loader.process).
    preloads: str = ""
    # The call a user makes to load an op library, and the probe makes for them.
    load_call: str = ""
    # Where compile/link flags come from, for fix texts.
    flags_hint: str = ""

    def linked_by(self, needed: Iterable[str]) -> bool:
        """True when one of the ``DT_NEEDED`` names belongs to this framework."""
        return any(n.startswith(self.needed_prefixes) for n in needed)

    def variant_of(self, needed: Iterable[str]) -> str:
        """The build variant the ``DT_NEEDED`` names imply ("" when they imply none)."""
        names = list(needed)
        for variant, libs in self.variant_libraries.items():
            if any(n.startswith(lib) for n in names for lib in libs):
                return variant
        return ""


TORCH = Framework(
    name="torch", display="PyTorch", module="torch", pip="torch",
    needed_prefixes=("libc10", "libtorch"),
    symbol_markers=(b"_ZN3c10", b"_ZN5torch", b"_ZN2at", b"_ZNK3c10", b"_ZNK2at"),
    variant_libraries={"cuda": ("libc10_cuda.so", "libtorch_cuda.so", "libtorch_cuda_cpp.so"),
                       "rocm": ("libc10_hip.so", "libtorch_hip.so")},
    registration_markers=(b"TORCH_LIBRARY_init_", b"TORCH_LIBRARY_IMPL_init_",
                          b"TORCH_LIBRARY_FRAGMENT_init_", b"TORCH_LIBRARY_static_init_"),
    cxx11_abi=None,  # 1 since torch 2.6 on PyPI; read from the install (libc10 exports)
    preloads="torch/_C and its closure (libtorch_python, libtorch, libtorch_cpu, libc10 …), "
    "libtorch_global_deps.so with RTLD_GLOBAL",
    load_call="torch.ops.load_library(path)",
    flags_hint="torch.utils.cpp_extension",
)

TENSORFLOW = Framework(
    name="tensorflow", display="TensorFlow", module="tensorflow", pip="tensorflow",
    needed_prefixes=("libtensorflow",),
    symbol_markers=(b"_ZN10tensorflow", b"_ZNK10tensorflow"),
    registration_markers=(b"OpDefBuilderWrapper", b"OpKernelRegistrar"),
    cxx11_abi=1,  # tf.sysconfig.get_compile_flags() of the 2.x PyPI wheels
    preloads="libtensorflow_framework.so.2 and its closure",
    load_call="tf.load_op_library(path)",
    flags_hint="tf.sysconfig.get_compile_flags() / get_link_flags()",
)

MINDSPORE = Framework(
    name="mindspore", display="MindSpore", module="mindspore", pip="mindspore",
    needed_prefixes=("libmindspore",),
    symbol_markers=(b"_ZN9mindspore",),
    cxx11_abi=0,  # MindSpore is built with the old C++ ABI
    preloads="libmindspore_* through mindspore's own extension modules",
    load_call='ops.Custom("lib.so:Func", …, func_type="aot")',
    flags_hint="-D_GLIBCXX_USE_CXX11_ABI=0",
)

ONEFLOW = Framework(
    name="oneflow", display="OneFlow", module="oneflow", pip="oneflow",
    needed_prefixes=("liboneflow",),
    symbol_markers=(b"_ZN7oneflow",),
    registration_markers=(b"UserOpRegisterTrigger",),
    cxx11_abi=0,  # oneflow.sysconfig.get_compile_flags()
    preloads="liboneflow.so",
    load_call="oneflow.utils.load_library / flow.config.load_library",
    flags_hint="oneflow.sysconfig.get_compile_flags() / get_link_flags()",
)

ONNXRUNTIME = Framework(
    name="onnxruntime", display="ONNX Runtime", module="onnxruntime", pip="onnxruntime",
    needed_prefixes=("libonnxruntime",),
    load_call="SessionOptions.register_custom_ops_library(path)",
)

FRAMEWORKS: tuple[Framework, ...] = (TORCH, TENSORFLOW, MINDSPORE, ONEFLOW, ONNXRUNTIME)

# Every DT_NEEDED prefix that marks a framework-linked library (scan's candidate filter).
NEEDED_PREFIXES: tuple[str, ...] = tuple(p for f in FRAMEWORKS for p in f.needed_prefixes)
# A TensorFlow plugin may link TensorFlow's Python extension itself (ITEX's libitex_common.so
# NEEDs _pywrap_tensorflow_internal.so): a framework-linked library all the same.
LINKED_PREFIXES: tuple[str, ...] = (*NEEDED_PREFIXES, "_pywrap_tensorflow_internal")


def frameworks_linked(needed: Iterable[str]) -> tuple[Framework, ...]:
    """The frameworks whose libraries appear among the ``DT_NEEDED`` names."""
    names = list(needed)
    return tuple(f for f in FRAMEWORKS if f.linked_by(names))


def by_name(name: str) -> Framework:
    """The record called ``name`` (KeyError when unknown)."""
    for f in FRAMEWORKS:
        if f.name == name:
            return f
    raise KeyError(name)
