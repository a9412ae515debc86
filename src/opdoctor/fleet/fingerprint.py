"""What one rank knows about itself: the fingerprint its node contributes to the fleet.

A fingerprint is plain data (dicts, lists, strings) so that it crosses ``gather_object`` the
same way between two opdoctor versions, and is rendered by rank 0 without any class of the
sending rank. It holds:

* the rank's identity: rank, local rank, node identity, host name, process id;
* the environment that shapes a load (``LD_LIBRARY_PATH``, ``LD_PRELOAD``, ``PYTHONPATH``,
  ``CUDA_VISIBLE_DEVICES``, ``TORCH_CUDA_ARCH_LIST``);
* the host: interpreter, torch and TensorFlow release and build variant (read from their files,
  never imported), CUDA runtime (the one torch was built with), driver and GPUs (``nvidia-smi``);
* per target: size, sha256, every resolved dependency with its path and sha256, and the
  verdict of the normal check.

sha256 of large files (``libtorch_cpu.so`` is 400 MB) is cached on disk
(:mod:`opdoctor.facts.hashcache`), keyed by (device, inode, size, mtime, ctime) as git's index
does: a changed or replaced file has another key, so the cache never hides a stale library.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# The variables that change what a load finds; compared across ranks.
ENV_KEYS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CUDA_VISIBLE_DEVICES",
            "TORCH_CUDA_ARCH_LIST")
def env_facts(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The load-relevant variables of the job's environment (None: unset)."""
    return {k: environ.get(k) for k in ENV_KEYS}


def _dist_version(site: str, names: tuple[str, ...]) -> tuple[str, str] | None:
    """(distribution name, version) of the first installed distribution among ``names``."""
    for name in names:
        found = sorted(glob.glob(os.path.join(site, f"{name.replace('-', '_')}-*.dist-info")))
        if found:
            base = os.path.basename(found[-1])[:-len(".dist-info")]
            return name, base.split("-", 1)[1]
    return None


def _torch_release(directory: str) -> dict[str, str]:
    """torch's release, build variant and CUDA/ROCm runtime, from ``torch/version.py``."""
    text = ""
    with contextlib.suppress(OSError), open(os.path.join(directory, "version.py"),
                                            encoding="utf-8") as fh:
        text = fh.read()

    def field(name: str) -> str | None:
        m = re.search(rf"^{name}\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        return m.group(1) if m else None

    version = field("__version__") or "unknown"
    cuda, hip = field("cuda"), field("hip")
    variant = f"CUDA {cuda}" if cuda else f"ROCm {hip}" if hip else "CPU"
    return {"torch": f"{version} ({variant})",
            "CUDA runtime": f"{cuda} (torch)" if cuda else "none (CPU build of torch)"
            if not hip else f"ROCm {hip} (torch)"}


def gpu_facts(timeout: float = 15.0) -> dict[str, str]:
    """CUDA driver and GPUs from ``nvidia-smi`` ("none" when there is none)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        driver = "none (no nvidia-smi)"
        with contextlib.suppress(OSError), open("/proc/driver/nvidia/version",
                                                encoding="utf-8") as fh:
            m = re.search(r"Kernel Module\s+(\S+)", fh.read())
            driver = m.group(1) if m else driver
        return {"CUDA driver": driver, "GPUs": "none"}
    try:
        out = subprocess.run([smi, "--query-gpu=name,driver_version,compute_cap",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {"CUDA driver": "unknown (nvidia-smi did not answer)", "GPUs": "unknown"}
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]
    rows = [r for r in rows if len(r) == 3]
    if not rows:
        return {"CUDA driver": "unknown (nvidia-smi found no GPU)", "GPUs": "none"}
    counts: dict[str, int] = {}
    for name, _drv, cap in rows:
        label = f"{name} (sm_{cap.replace('.', '')})"
        counts[label] = counts.get(label, 0) + 1
    return {"CUDA driver": ", ".join(sorted({r[1] for r in rows})),
            "GPUs": ", ".join(f"{n}× {label}" for label, n in sorted(counts.items()))}


def host_facts(interp: Any, gpus: dict[str, str]) -> dict[str, str]:
    """Interpreter, frameworks, CUDA runtime, driver and GPUs of this rank.

    ``interp`` is an :class:`opdoctor.facts.interp.Interpreter` (or None when it could not be
    inspected).
    """
    facts: dict[str, str] = {}
    if interp is None:
        facts["python"] = "unknown (the target interpreter cannot be run)"
        facts["python executable"] = "unknown"
    else:
        facts["python"] = interp.version
        facts["python executable"] = interp.invoke
    if interp is not None and interp.torch is not None:
        facts.update(_torch_release(interp.torch.directory))
    else:
        facts["torch"] = "not installed"
        facts["CUDA runtime"] = "none (no torch)"
    tf_dir = interp.tensorflow_dir if interp is not None else None
    if tf_dir:
        dist = _dist_version(os.path.dirname(tf_dir),
                             ("tensorflow", "tensorflow-cpu", "tensorflow-gpu",
                              "tensorflow-intel", "tf-nightly"))
        facts["tensorflow"] = f"{dist[1]} ({dist[0]})" if dist else "installed (version unknown)"
    else:
        facts["tensorflow"] = "not installed"
    facts.update(gpus)
    return facts


def dependency_list(section: Mapping[str, Any] | None) -> list[tuple[str, str | None, str]]:
    """(name, resolved path or None, rule) of every library in a dependency-tree section
    (:func:`opdoctor.checks.deps.tree_section`), first occurrence of each name."""
    out: dict[str, tuple[str, str | None, str]] = {}
    if not section:
        return []
    stack = list(reversed(section.get("tree", {}).get("needed", [])))
    while stack:
        node = stack.pop()
        name = str(node.get("name", ""))
        if name and name not in out:
            out[name] = (name, node.get("path"), str(node.get("rule", "")))
        stack.extend(reversed(node.get("needed", [])))
    return list(out.values())
