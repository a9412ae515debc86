"""Device backends torch auto-loads, read from disk: the ``torch.backends`` entry points of the
interpreter's installed distributions (``*.dist-info/entry_points.txt``), never by importing
anything. The backend's own error is the ``__cause__`` of torch's "Failed to load the backend
extension" (``ImportError: libhccl.so: cannot open shared object file``); the text rules are
in :mod:`opdoctor.backends`, re-exported here for the checks.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from opdoctor.backends import AUTOLOAD_VAR, CANN_SET_ENV, GROUP, cann_library, failed_backend

__all__ = ["AUTOLOAD_VAR", "CANN_SET_ENV", "Backend", "cann_library", "failed_backend",
           "find_backend"]


@dataclass(frozen=True)
class Backend:
    """One ``torch.backends`` entry point."""

    name: str  # the entry point's name (what torch's message says)
    value: str  # "torch_npu:_autoload"
    dist: str  # the distribution that declares it ("torch_npu-2.13.0")
    where: str  # its entry_points.txt

    @property
    def module(self) -> str:
        """The top-level module torch imports for it."""
        return self.value.split(":", 1)[0].split(".", 1)[0].strip()


def find_backend(sys_path: list[str], name: str) -> Backend | None:
    """The ``torch.backends`` entry point called ``name`` among the distributions on
    ``sys_path`` (the first, in sys.path order, as importlib.metadata finds it)."""
    for entry in sys_path:
        for ep_file in sorted(glob.glob(os.path.join(entry or ".", "*.dist-info",
                                                     "entry_points.txt"))):
            for ep_name, value in _group(ep_file, GROUP):
                if ep_name == name:
                    dist = os.path.basename(os.path.dirname(ep_file))[:-len(".dist-info")]
                    return Backend(name, value, dist, ep_file)
    return None


def _group(path: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` lines of ``[group]`` in an entry_points.txt (an INI file)."""
    out: list[tuple[str, str]] = []
    current = ""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                line = raw.strip()
                if line.startswith("[") and line.endswith("]"):
                    current = line[1:-1].strip()
                elif current == group and "=" in line and not line.startswith(("#", ";")):
                    key, _, value = line.partition("=")
                    out.append((key.strip(), value.strip()))
    except OSError:
        return []
    return out
