"""Computed load paths (issue #14 item 7): what a real package's import chain loads, folded
statically, checked against what the package's own code computes or maps when it runs.

Real wheels of the real-world suite (``build/realworld/<case>/site``; skipped with the command
that installs them when absent).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig

import pytest

from opdoctor.facts.pychain import ImportChain, analyse
from tests.test_pyreg import site
from tests.torchfork import run_python

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
NO_ENV = {k: v for k, v in os.environ.items()
          if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH")}




def chain_of(case: str, package: str) -> ImportChain:
    # The case's site, then this interpreter's own sys.path (torch's build decides branches).
    return analyse(package, [str(site(case)), *sys.path[1:]], SUFFIX, "/")


def loads(chain: ImportChain) -> dict[str, list[str]]:
    """file:line of each loader call → the files it resolves to (names only)."""
    return {f"{os.path.basename(link.file)}:{link.line}": [os.path.basename(r)
                                                           for r in link.resolved]
            for link in chain.links if link.kind in ("load_library", "cdll")}


def child(case: str, code: str) -> object:
    env = dict(NO_ENV, PYTHONPATH=str(site(case)))
    out = run_python(code, env=env, timeout=240)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.probe
def test_function_with_constant_argument_through_filefinder() -> None:
    """torchvision: extension.py `_load_library("_C_stable")` → `_get_extension_path(lib_name)`
    (another module) → FileFinder(dirname(__file__), EXTENSION_SUFFIXES).find_spec().origin."""
    ch = chain_of("torchvision-0.29.1-cu130", "torchvision")
    assert loads(ch)["extension.py:15"] == ["_C_stable.so"]
    assert [os.path.basename(f) for f in ch.libraries] == ["_C_stable.so"]
    # The package's own function computes the same file (run from its source file alone:
    # importing torchvision itself fails here, the CUDA build cannot load).
    path = site("torchvision-0.29.1-cu130") / "torchvision" / "_internally_replaced_utils.py"
    truth = child("torchvision-0.29.1-cu130", f"""
import importlib.util, json
spec = importlib.util.spec_from_file_location("tv_utils", {str(path)!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
print(json.dumps(mod._get_extension_path("_C_stable")))
""")
    assert truth == next(f for f in ch.libraries if f.endswith("_C_stable.so"))


@pytest.mark.probe  # the ground truth imports torchaudio, which imports torch
def test_imported_function_called_with_a_constant_torchaudio() -> None:
    """torchaudio: `_extension/__init__.py` calls `_load_lib("_torchaudio")`, imported from
    `_extension/utils.py`, which globs `_LIB_DIR.glob(f"{lib}*{suffix}")` (suffix ".so" unless
    os.name == "nt"): the file the real import tries to load (and fails to: a CUDA build)."""
    ch = chain_of("torchaudio-2.11.1", "torchaudio")
    assert [os.path.basename(f) for f in ch.libraries] == ["_torchaudio.so", "libtorchaudio.so"]
    assert not [link for link in ch.links if "cannot be evaluated" in link.problem]
    env = dict(NO_ENV, PYTHONPATH=str(site("torchaudio-2.11.1")))
    # its __init__ imports torch before anything else: forked from the tests' torch zygote
    out = run_python("import torchaudio", env=env, timeout=240)
    assert f"Could not load this library: {ch.libraries[0]}" in out.stderr


def test_filefinder_in_a_module_function_xformers() -> None:
    ch = chain_of("xformers-0.0.35", "xformers")
    assert [os.path.basename(f) for f in ch.libraries] == ["_C.so"]


def test_glob_in_a_for_loop_torchao() -> None:
    """torchao: `for file in Path(__file__).parent.glob("_C*.so"): load_library(str(file))`."""
    ch = chain_of("torchao-0.18.0-cuda-ext-on-cpu", "torchao")
    names = sorted(os.path.basename(f) for f in ch.libraries)
    assert names == sorted(p.name for p in (site("torchao-0.18.0-cuda-ext-on-cpu") /
                                            "torchao").glob("_C*.so"))
    assert len(names) == 2
    assert not [link for link in ch.links if "cannot be evaluated" in link.problem]


@pytest.mark.probe
def test_function_locals_and_imported_constants_bitsandbytes() -> None:
    """bitsandbytes: `get_native_library()` starts from PACKAGE_DIR /
    f"libbitsandbytes_cpu{DYNAMIC_LIBRARY_SUFFIX}" (both from consts.py, the suffix a dict
    `.get(platform.system(), ".so")`), and switches only in branches not decided here (CUDA
    specs, XPU): the CPU library, as the real import maps it on this CPU machine."""
    ch = chain_of("bitsandbytes-0.50.2", "bitsandbytes")
    assert [os.path.basename(f) for f in ch.libraries] == ["libbitsandbytes_cpu.so"]
    truth = child("bitsandbytes-0.50.2", """
import json, bitsandbytes
with open("/proc/self/maps") as fh:
    maps = {line.split()[-1] for line in fh if "libbitsandbytes" in line}
print(json.dumps(sorted(maps)))
""")
    assert truth == [ch.libraries[0]]


def test_branch_false_here_is_not_a_load_path_fbgemm() -> None:
    """fbgemm_gpu's sparse_ops.py: `if torch.version.hip: load_library("…embedding_ops_hip")`
    is never taken beside this torch (hip is None): no link for it; the build-system target
    strings of the other branch are not file paths either."""
    ch = chain_of("fbgemm-gpu-cpu-1.8.0", "fbgemm_gpu")
    texts = [link.text for link in ch.links if link.kind == "load_library"]
    assert texts and not [t for t in texts if "embedding_ops_hip" in t]
    assert any("embedding_ops_cpu" in t for t in texts)
    assert not [link for link in ch.links if "//deeplearning" in " ".join(link.resolved)]
    # torch.version.hip is None here: read from torch/version.py, which defines it (importing
    # torch would cost this fast test ~1 s)
    import importlib.util
    import re

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as fh:
        version_py = fh.read()
    assert re.search(r"^hip(?:\s*:[^=\n]*)?\s*=\s*None\s*$", version_py, re.M), version_py
