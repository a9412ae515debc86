"""What the messages of torch's device backends and their toolkits say, as plain text rules
(no file is read here; :mod:`opdoctor.facts.backends` reads the entry points). Used by the
checks through facts and by ``explain``, which imports nothing of the facts.

torch >= 2.5 imports every package that declares an entry point in group ``torch.backends``
(torch_npu and other out-of-tree backends) at the end of ``import torch``; when one fails, so
does torch's import::

    RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension
    auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.
"""

from __future__ import annotations

import re

AUTOLOAD_VAR = "TORCH_DEVICE_BACKEND_AUTOLOAD"
GROUP = "torch.backends"
_FAILED = re.compile(r"Failed to load the backend extension: ([\w.-]+?)\.?(?:\s|$)")


def failed_backend(message: str) -> str:
    """The entry point named by torch's "Failed to load the backend extension: X" ("" when
    the message is not that one)."""
    m = _FAILED.search(message)
    return m.group(1) if m else ""


# Libraries of Huawei's Ascend CANN toolkit (torch_npu, MindSpore's Ascend build): never in a
# wheel, found through the LD_LIBRARY_PATH the toolkit's set_env.sh exports. The short generic
# names (libgraph.so, libruntime.so …) count only beside an unmistakable one.
_CANN_SURE = ("libascendcl", "libascend_hal", "libhccl", "libacl_", "libge_runner",
              "libge_common", "libopapi", "libnnopbase", "libmsprofiler", "libprofapi")
_CANN_TOO = ("libgraph.so", "libruntime.so", "libregister.so", "liberror_manager",
             "libc_sec.so", "libmmpa.so", "libplatform.so", "libtiling_api", "libfmk_")
CANN_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def cann_library(name: str, missing: list[str]) -> bool:
    """Whether ``name`` is a library of the Ascend CANN toolkit (``missing``: the other names
    not found for the same target, which make a generic name unambiguous)."""
    if name.startswith(_CANN_SURE):
        return True
    return name.startswith(_CANN_TOO) and any(m.startswith(_CANN_SURE) for m in missing)
