"""Module probes forked from one framework import (facts/probe/zygote.py).

A package whose extension modules its own import does not load gets one probe per module
(vllm: twelve). Inside one command they are forked from a child that imported torch once. The
forks must report exactly what a fresh child reports for each module — also after a sibling
crashed or hung — and a zygote that cannot serve must fall back to a plain child. The same
holds for a walk's torch probes and for a fork that takes its own PYTHONPATH.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
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
from tests.torchfork import run_python

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
    """What Python itself does with ``code`` (a program that starts with ``import torch``:
    forked from the tests' own torch zygote, tests/torchfork.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    return run_python(code, cwd=cwd, env=env, timeout=60)


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
            run_python("import torch, zpkg._b_hang", cwd=zpkg, timeout=4,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})

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
    # (10 s: a fresh child's `import torch` and crash took longer than 6 s once on a machine
    # busy with the rest of the suite, and was reported as a timeout)
    res = cli(capsys, "check", "-f", "json", "--timeout", "10", "--cwd", str(zpkg),
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
                            probe=True, timeout=10.0)
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
        # The zygote shared by other PYTHONPATHs imported the real torch: this PYTHONPATH
        # shadows it, so its own zygote imported it with the PYTHONPATH, and failed.
        shared, own = sorted(ZYGOTES.values(), key=lambda z: z.with_path)
        assert not shared.admits(req) and not shared.broken and "torch" in shared.names
        assert own.broken
    assert not ZYGOTES  # closed with the scope
    assert outcome.state is ProbeState.FRAMEWORK_IMPORT_FAILED and not outcome.forked
    assert outcome.framework_error is not None
    assert "this torch is broken" in outcome.framework_error.message


def test_outside_a_command_scope_the_module_probe_is_a_plain_child(tmp_path: Path) -> None:
    req = ProbeRequest(path="", python=sys.executable, torch=True, package="json",
                       cwd=str(tmp_path), timeout=60, env=dict(os.environ))
    outcome = module_probe(req).wait()
    assert outcome.state is ProbeState.LOADED and not outcome.forked
    # torch's release as its distribution records it (importing torch here would leave this
    # test process holding torch: every later fork of it copying ~600 MB of page tables).
    assert outcome.framework_version == importlib.metadata.version("torch")


def test_one_zygote_serves_probes_with_their_own_pythonpath_and_directory(
        tmp_path: Path) -> None:
    """A walk or the suite checks packages of several sites: one zygote serves them all when
    the fork can put the site on sys.path itself (nothing there that torch's import looked
    for), in the probe's own working directory and environment. The package refuses to
    import anywhere else, so a fork that missed any of the three fails."""
    site, job = tmp_path / "site", tmp_path / "job"
    (site / "ppkg").mkdir(parents=True)
    job.mkdir()
    (site / "ppkg" / "__init__.py").write_text(
        "import os, sys\n"
        "where = (os.getcwd(), os.environ.get('OPDOCTOR_TEST_MARK'), sys.path.index(\n"
        f"    {str(site)!r}) < min(i for i, p in enumerate(sys.path) if 'site-packages' in p))\n"
        f"if where != ({str(job)!r}, 'fork', True):\n"
        "    raise ImportError(f'not the job: {where}')\n")
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    first = ProbeRequest(path="", python=sys.executable, torch=True, package="json",
                         cwd=str(tmp_path), timeout=60, env=base)
    own = {**base, "PYTHONPATH": str(site), "OPDOCTOR_TEST_MARK": "fork"}
    req = ProbeRequest(path="", python=sys.executable, torch=True, package="ppkg",
                       cwd=str(job), timeout=60, env=own)
    fresh = module_probe(req).wait()  # outside a scope: a plain child
    assert fresh.state is ProbeState.LOADED and not fresh.forked
    with reuse_scope():
        from opdoctor.facts.probe.runner import ZYGOTES
        assert module_probe(first).wait().forked
        outcome = module_probe(req).wait()
        assert len(ZYGOTES) == 1  # the first request's zygote, without that PYTHONPATH
    assert outcome.forked and outcome.state is ProbeState.LOADED, outcome.load_error
    assert [m for m, _file in outcome.imported] == [m for m, _file in fresh.imported]


def test_a_walk_forks_its_torch_probes_from_the_second_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory walk of torch libraries (not one package's) paid one torch import per
    library; from the walk's second probe on they fork from one zygote. Each forked probe
    reports what a fresh probe of that library alone reports: healthy, a schema torch rejects,
    failing to load (its own undefined symbol; both checked against torch in test_truth); a
    library that links no torch is loaded without it, by a plain child."""
    from tests.conftest import FIX, reference

    libs = {"a_myop.so": reference(), "b_tiny.so": FIX / "truth" / "tinyop.so",
            "c_noreg.so": FIX / "truth" / "noreg.so", "d_typo.so": FIX / "truth" / "typo.so",
            "e_undef.so": FIX / "truth" / "undef.so"}
    for name, src in libs.items():
        (tmp_path / name).write_bytes(src.read_bytes())
    doc = cli(capsys, "check", "-f", "json", str(tmp_path)).json()
    walked = {Path(r["target"]["path"]).name: r for r in doc["reports"]}
    assert sorted(walked) == sorted(libs)
    forked = {n: r["sections"]["probe"]["forked"] for n, r in walked.items()}
    assert forked == {"a_myop.so": False, "b_tiny.so": True, "c_noreg.so": False,
                      "d_typo.so": True, "e_undef.so": True}
    assert walked["e_undef.so"]["sections"]["probe"]["outcome"] == "load failed"
    for name in (n for n, f in forked.items() if f):  # the plain ones are plain alone too
        alone = run_check(str(tmp_path / name), CheckOptions(probe=True))
        assert alone.sections["probe"]["forked"] is False
        mine = walked[name]
        assert sorted((f.code, f.severity.value, f.message) for f in alone.findings) == \
            sorted((f["code"], f["severity"], f["message"]) for f in mine["findings"]), name
        assert alone.sections["probe"]["outcome"] == mine["sections"]["probe"]["outcome"]
        assert alone.sections["probe"]["new_ops"] == mine["sections"]["probe"]["new_ops"]


def test_a_timeout_given_as_int_or_float_keys_one_zygote() -> None:
    """Limits key a zygote (its forks inherit them); 60 and 60.0 are the same limits, so
    probes asking for either fork from one import, not two. Another timeout keys another."""
    from opdoctor.facts.probe.zygote import _key

    def req(timeout: float) -> ProbeRequest:
        return ProbeRequest(path="", python=sys.executable, torch=True, timeout=timeout)

    assert _key(req(60), False) == _key(req(60.0), False)
    assert _key(req(60), False) != _key(req(20), False)
