"""Device toolkits a missing library belongs to, and whether this host has such a device.

A framework ships libraries for devices a machine may not have: MindSpore's CPU wheel carries
``lib/plugin/libmindspore_gpu.so.11.1`` (NEEDs CUDA 11's runtime and the NVIDIA driver) and
``lib/plugin/ascend/*`` (NEED Huawei's CANN toolkit), which its backend dlopens only when
the job asks for that device. On a machine without the device those libraries are never
loaded, and their missing toolkit is not what breaks anything (survey 15's F3: 130 OD201
errors on a healthy CPU install whose ``import mindspore`` and CPU ops work).
"""

from __future__ import annotations

import glob
import os
import re

from opdoctor.facts.backends import cann_library
from opdoctor.facts.variant import DRIVER_LIB, ROCM_LIB, cuda_library, variant_library

CUDA, CANN, ROCM, OPENCL, ONEAPI = "CUDA", "Ascend CANN", "ROCm", "OpenCL", "Intel oneAPI"
# Intel's SYCL runtime and Level Zero loader (an XPU build: bitsandbytes 0.50's
# libbitsandbytes_xpu2025.so NEEDs libsycl.so.8), and the oneAPI compiler runtime those builds
# need beside it (libsvml, libimf, libintlc, libirng): the latter count only beside a SYCL
# library, since a CPU build of Intel's compiler needs them too (survey 21's F3).
_SYCL_LIB = re.compile(r"lib(?:sycl|ze_loader|ur_loader|ur_adapter_\w+|pi_level_zero)\.so")
_ONEAPI_RUNTIME = re.compile(r"lib(?:svml|imf|intlc|irng)\.so")

# The device nodes each kind of accelerator's driver creates (what a container that is given
# the device sees too): NVIDIA's control node, Huawei's Ascend NPUs, AMD's kernel fusion driver.
# An OpenCL GPU (OpenVINO's Intel GPU plugin: libopenvino_intel_gpu_plugin.so NEEDs
# libOpenCL.so.1; survey 18) shows as a DRM render node.
_DEVICE_NODES = {CUDA: ("/dev/nvidiactl", "/dev/nvidia[0-9]*"),
                 CANN: ("/dev/davinci_manager", "/dev/davinci[0-9]*"),
                  ROCM: ("/dev/kfd",), OPENCL: ("/dev/dri/renderD*",),
                 ONEAPI: ("/dev/dri/renderD*",)}
DEVICE_NAMES = {CUDA: "NVIDIA GPU", CANN: "Ascend NPU", ROCM: "AMD GPU",
                OPENCL: "OpenCL GPU", ONEAPI: "Intel GPU"}


def toolkit_of(name: str, missing: list[str]) -> str:
    """The device toolkit or driver library ``name`` belongs to (CUDA — the NVIDIA driver and
    NVIDIA's CUDA libraries —, Ascend CANN, ROCm, OpenCL, Intel oneAPI's SYCL), "" for any
    other library. ``missing``: the
    other names not found for the same library (a generic CANN name counts beside a sure one)."""
    base = os.path.basename(name)
    if cann_library(base, missing):
        return CANN
    if DRIVER_LIB.match(base) or cuda_library(base) or variant_library(base)[0] == "cuda":
        return CUDA
    if ROCM_LIB.match(base):
        return ROCM
    if base.startswith("libOpenCL.so"):
        return OPENCL
    if _SYCL_LIB.match(base) or (_ONEAPI_RUNTIME.match(base) and any(
            _SYCL_LIB.match(os.path.basename(m)) for m in missing)):
        return ONEAPI
    return ""


def host_has(toolkit: str) -> bool:
    """Whether this machine has a device of ``toolkit``'s kind (its driver's device node)."""
    return any(glob.glob(pattern) for pattern in _DEVICE_NODES.get(toolkit, ()))


def device_plugin(on_demand: bool, missing: list[str]) -> tuple[str, str, list[str]] | None:
    """(toolkit, device, evidence) when the target is a device plugin this machine never
    loads: a library of a package that no extension module of the package NEEDs (its native
    code dlopens it on demand), whose load misses a device toolkit's library, on a machine
    without that device. MindSpore's CPU wheel ships ``lib/plugin/libmindspore_gpu.so.11.1``
    and ``lib/plugin/ascend/*``; its backend loads them only for a GPU or Ascend job, and
    ``import mindspore`` with CPU ops works (survey 15's F3: 130 OD201 errors on a healthy
    install). Each of its missing libraries is then a warning, not what breaks a load here.
    ``on_demand``: ``Facts.loaded_on_demand`` of the target."""
    kits = [kit for kit in dict.fromkeys(toolkit_of(m, missing) for m in missing) if kit]
    if not kits or any(host_has(kit) for kit in kits) or not on_demand:
        return None
    toolkit = kits[0]
    needs = [m for m in missing if toolkit_of(m, missing) == toolkit]
    return toolkit, DEVICE_NAMES[toolkit], [
        f"{toolkit}'s libraries it needs: {', '.join(needs[:6])}"
        + (f" and {len(needs) - 6} more" if len(needs) > 6 else ""),
        "no extension module of its package NEEDs it: the package's native code loads it "
        "on demand", f"this machine has no {DEVICE_NAMES[toolkit]} (no device node of its "
        "driver under /dev)"]
