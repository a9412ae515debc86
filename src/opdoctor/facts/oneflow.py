"""Facts about OneFlow user-op libraries, read from the file (OneFlow has no wheel for Python
3.11, so nothing is ever loaded with OneFlow).

OneFlow's ``REGISTER_USER_OP(name)`` / ``REGISTER_USER_KERNEL(name)`` (user_op_registry_manager.h)
expand to a static ``oneflow::user_op::UserOpRegisterTrigger<OpRegistry>`` /
``<OpKernelRegistry>`` initialised from ``UserOpRegistryMgr::Get().CheckAndGetOpRegistry(name)``
/ ``CheckAndGetOpKernelRegistry(name)``. In the binary that leaves: imports of those two member
functions (their ``std::string`` parameter tells the C++ ABI), the trigger's constructor
instantiated per registry type, and the op names as C strings in ``.rodata``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from opdoctor.facts.elf.image import ElfImage

OP_REGISTRY = "_ZN7oneflow7user_op17UserOpRegistryMgr21CheckAndGetOpRegistry"
KERNEL_REGISTRY = "_ZN7oneflow7user_op17UserOpRegistryMgr27CheckAndGetOpKernelRegistry"
OP_TRIGGER = "UserOpRegisterTriggerINS0_10OpRegistryE"
KERNEL_TRIGGER = "UserOpRegisterTriggerINS0_16OpKernelRegistryE"
OPKERNEL_TYPEINFO = "_ZTIN7oneflow7user_op8OpKernelE"
# Input/output/attr names that share .rodata with op names but are not op names.
_ARG_NAMES = frozenset({"in", "out", "x", "y", "dx", "dy", "input", "output", "weight", "bias",
                        "dtype", "shape", "axis", "like", "grad", "index", "indices", "mask"})
_IDENT = re.compile(rb"(?<=\0)([a-z][a-z0-9_]{1,63})(?=\0)")


@dataclass(frozen=True)
class OneFlowInventory:
    """What a library's OneFlow registrations look like statically."""

    op_registrations: bool  # REGISTER_USER_OP: imports CheckAndGetOpRegistry
    kernel_registrations: bool  # REGISTER_USER_KERNEL: imports CheckAndGetOpKernelRegistry
    names: tuple[str, ...]  # op-name candidates from .rodata (identifier strings)
    new_abi: tuple[str, ...]  # OneFlow symbols needed in the std::__cxx11 form
    opkernel_typeinfo: bool  # needs typeinfo for oneflow::user_op::OpKernel
    linked: bool  # DT_NEEDED names liboneflow

    @property
    def is_oneflow(self) -> bool:
        """True when the library registers OneFlow ops or kernels."""
        return self.op_registrations or self.kernel_registrations


def rodata_names(image: ElfImage) -> tuple[str, ...]:
    """Lower-case identifier strings in ``.rodata`` that are not usual argument names."""
    sec = image.section(".rodata")
    if sec is None:
        return ()
    data = bytes(image.data.buf[sec.offset:sec.offset + min(sec.size, 4 << 20)])
    found = dict.fromkeys(m.group(1).decode() for m in _IDENT.finditer(b"\0" + data))
    return tuple(n for n in found if n not in _ARG_NAMES and len(n) >= 3)


def read_oneflow(image: ElfImage, undefined: list[str], defined: list[str]) -> OneFlowInventory:
    """The OneFlow inventory from the library's dynamic symbols and ``.rodata``."""
    names = undefined + defined
    ops = any(n.startswith(OP_REGISTRY) for n in undefined) or any(
        OP_TRIGGER in n for n in names)
    kernels = any(n.startswith(KERNEL_REGISTRY) for n in undefined) or any(
        KERNEL_TRIGGER in n for n in names)
    new_abi = tuple(sorted(n for n in undefined if "7oneflow" in n
                           and ("St7__cxx11" in n or "B5cxx11" in n)))
    needed = [str(n) for n in image.tags.get("DT_NEEDED", [])]
    return OneFlowInventory(ops, kernels, rodata_names(image) if ops or kernels else (),
                            new_abi, OPKERNEL_TYPEINFO in undefined,
                            any(n.startswith("liboneflow") for n in needed))
