"""Module probes forked from one framework import (facts/probe/zygote.py).

A package whose extension modules its own import does not load gets one probe per module
(vllm: twelve). Inside one command they are forked from a child that imported torch once. The
forks must report exactly what a fresh child reports for each module — also after a sibling
crashed or hung — and a zygote that cannot serve must fall back to a plain child.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.facts.probe.outcome import ProbeState
from opdoctor.facts.probe.runner import ProbeRequest, reuse_scope
from opdoctor.facts.probe.zygote import module_probe
from opdoctor.pipeline import run_check
from tests.helpers import cli

pytestmark = pytest.mark.probe

SRC = Path(__file__).parent / "fixtures" / "python"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
# Module name → extra compiler flags (ext.c); every one needs liblazy.so.1, which no search
# path finds and the package's finder preloads, so the static view predicts each load fails
# and each is checked through its own import.
MODULES = {
    "_a_crash": ["-DNEEDS_LAZY", "-DINIT_CRASH"],
    "_b_hang": ["-DNEEDS_LAZY", "-DINIT_HANG"],
    "_c_missing": ["-DNEEDS_MISSING"],  # also needs liblazy (--no-as-needed)
    "_d_ok": ["-DNEEDS_LAZY"],
}
FINDER = '''"""zpkg: preloads .libs/liblazy.so.1 for its compiled modules (mpi4py's way)."""
import ctypes, os, sys
_HERE = os.path.dirname(os.path.abspath(__file__))
class _Preload:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "._"):
            # The library's name is configuration (mpi4py reads its MPI's from a file).
            with open(os.path.join(_HERE, ".libs", "preload.txt")) as fh:
                name = fh.read().strip()
            ctypes.CDLL(os.path.join(_HERE, ".libs", name), mode=ctypes.RTLD_GLOBAL)
        return None  # the default finders find the module's file
sys.meta_path.insert(0, _Preload)
'''


@pytest.fixture(scope="module")
def zpkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zygote")
    pkg = root / "zpkg"
    (pkg / ".libs").mkdir(parents=True)
    (pkg / "__init__.py").write_text(FINDER)
    (pkg / ".libs" / "preload.txt").write_text("liblazy.so.1\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wl,-soname,liblazy.so.1",
                    str(SRC / "lazy.c"), "-o", str(pkg / ".libs" / "liblazy.so.1")], check=True)
    include = sysconfig.get_paths()["include"]
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    torch_lib = str(Path(spec.origin).parent / "lib")
    for name, flags in MODULES.items():
        # Linked to libc10 (no RPATH: torch's import brings it), as a torch extension is: the
        # package's libraries that link a framework are each checked (vllm's way).
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-isystem", include, *flags,
                        f"-DMODNAME={name}", str(SRC / "ext.c"), "-o", str(pkg / (name + SUFFIX)),
                        "-Wl,--no-as-needed", "-L", str(pkg / ".libs"), "-l:liblazy.so.1",
                        "-L", torch_lib, "-lc10"], check=True)
    return root


def _python(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def _summary(rep: dict) -> tuple[list[tuple[str, str]], str]:  # type: ignore[type-arg]
    findings = sorted((f["code"], f["severity"]) for f in rep["findings"])
    return findings, rep["sections"]["probe"]["outcome"]


def test_forked_module_probes_report_what_fresh_children_report(
        zpkg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What Python itself does with each module (the five interpreters at once: each only
    # imports torch and one module, and the hanging one sleeps).
    codes = {name: f"import torch, zpkg.{name} as m; print(m.answer())"
             for name in ("_a_crash", "_c_missing", "_d_ok")}
    codes["plain"] = ("import torch, zpkg, sys; print(sorted(m for m in sys.modules "
                      "if m.startswith('zpkg.')))")

    def hang() -> None:
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run([sys.executable, "-c", "import torch, zpkg._b_hang"], cwd=zpkg,
                           timeout=4, env={k: v for k, v in os.environ.items()
                                           if k != "PYTHONPATH"})

    with ThreadPoolExecutor(len(codes) + 1) as pool:
        hung = pool.submit(hang)
        ran = pool.map(lambda code: _python(zpkg, code), codes.values())
        real = dict(zip(codes, ran, strict=True))
        hung.result()
    assert real["_a_crash"].returncode == -11  # SIGSEGV in the module's init
    assert "undefined symbol: missing_helper" in real["_c_missing"].stderr
    assert real["_d_ok"].stdout.strip() == "42"
    assert real["plain"].stdout.strip() == "[]"

    # One command: the four module probes forked from one zygote, in order, the crash and
    # the hang before the ones after them.
    res = cli(capsys, "check", "-f", "json", "--timeout", "6", "--cwd", str(zpkg),
              "--package", "zpkg")
    reports = {Path(r["target"]["path"]).name.split(".")[0]: r for r in res.json()["reports"]}
    assert sorted(reports) == sorted(MODULES)
    assert all(r["sections"]["probe"]["forked"] for r in reports.values())
    assert all(r["sections"]["probe"]["imported"] == f"zpkg.{n}" for n, r in reports.items())
    forked = {n: _summary(r) for n, r in reports.items()}
    assert forked["_a_crash"][1] == "SIGSEGV"
    assert forked["_b_hang"][1] == "timeout"
    assert forked["_c_missing"][1] == "load failed"
    assert forked["_d_ok"][1] == "loaded"
    assert not [f for f in forked["_d_ok"][0] if f[1] != "info"]

    # Each module alone, in a fresh child of its own (no command scope: no zygote).
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    for name in MODULES:
        opts = CheckOptions(package="zpkg", cwd=str(zpkg), env=tuple(base.items()),
                            probe=True, timeout=6.0)
        report = run_check(str(zpkg / "zpkg" / (name + SUFFIX)), opts)
        probe = report.sections["probe"]
        assert probe["forked"] is False
        alone = sorted((f.code, f.severity.value) for f in report.findings)
        assert (alone, probe["outcome"]) == forked[name], name


def test_a_zygote_that_cannot_import_its_framework_falls_back_to_a_plain_child(
        tmp_path: Path) -> None:
    (tmp_path / "torch.py").write_text("raise ImportError('this torch is broken')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)
    req = ProbeRequest(path="", python=sys.executable, torch=True, package="json",
                       cwd=str(tmp_path), timeout=20, env=env)
    with reuse_scope():
        from opdoctor.facts.probe.runner import ZYGOTES
        handle = module_probe(req)
        outcome = handle.wait()
        (zygote,) = ZYGOTES.values()
        assert zygote.broken
    assert not ZYGOTES  # closed with the scope
    assert outcome.state is ProbeState.FRAMEWORK_IMPORT_FAILED and not outcome.forked
    assert outcome.framework_error is not None
    assert "this torch is broken" in outcome.framework_error.message


def test_outside_a_command_scope_the_module_probe_is_a_plain_child(tmp_path: Path) -> None:
    req = ProbeRequest(path="", python=sys.executable, torch=True, package="json",
                       cwd=str(tmp_path), timeout=60, env=dict(os.environ))
    outcome = module_probe(req).wait()
    assert outcome.state is ProbeState.LOADED and not outcome.forked
    import torch

    assert outcome.framework_version == torch.__version__
