"""Print make variables describing the torch install the fixtures are built against.

Run by the Makefile with the project's venv interpreter; importing torch here is fine (this is
the build, not opdoctor's static analysis).
"""

import sys
import sysconfig

import torch
from torch.utils import cpp_extension

lib_dir = cpp_extension.TORCH_LIB_PATH if hasattr(cpp_extension, "TORCH_LIB_PATH") else None
if lib_dir is None:  # pragma: no cover - older torch
    import os

    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
print(f"TORCH_VERSION := {torch.__version__}")
print(f"TORCH_INCLUDES := {' '.join('-isystem ' + p for p in cpp_extension.include_paths())}")
print(f"TORCH_LIBDIR := {lib_dir}")
print(f"TORCH_ABI := {int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
print(f"PY_EXT_SUFFIX := {sysconfig.get_config_var('EXT_SUFFIX')}")
print(f"PY_INCLUDE := {sysconfig.get_paths()['include']}")
print(f"PY_VERSION := {sys.version_info.major}.{sys.version_info.minor}")
