"""A package's own version guard (issue #14 item 6): cause 3, naming both releases.

Real wheels of the real-world suite (``build/realworld/<case>/site``; skipped with the command
that installs them when absent). Each guard is checked against the package's own behaviour:
a child interpreter imports it beside this torch and prints what the guard prints.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report, Severity
from opdoctor.pipeline import run_check
from tests.helpers import cli, dist_info
from tests.test_pyreg import site
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

NO_ENV = {k: v for k, v in os.environ.items()
          if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH")}




def check(case: str, package: str, probe: bool) -> Report:
    s = site(case)
    env = dict(NO_ENV, PYTHONPATH=str(s))
    return run_check(str(s / package), CheckOptions(probe=probe, env=tuple(env.items()),
                                                    package=package, cwd="/"))


def imported(case: str, code: str) -> str:
    """stdout + stderr of a child that runs ``code`` beside this torch."""
    env = dict(NO_ENV, PYTHONPATH=str(site(case)))
    out = run_python(code, env=env, timeout=240)
    return out.stdout + out.stderr


def guard(report: Report) -> list[object]:
    return [f for f in report.findings if f.code == "OD323"]


@pytest.mark.probe
def test_torchao_refuses_this_torch() -> None:
    """torchao 0.14.1 supports torch 2.9 only: beside 2.13 it skips its extension and its ops."""
    # Its extension (the only registrar of torchao kernels) is never loaded: no kernel at all.
    text = imported("torchao-0.14.1-version-guard", "import torch, torchao\n"
                    "print('kernel:', any(torch._C._dispatch_has_kernel_for_dispatch_key("
                    "'torchao::quant_llm_linear', k) for k in ('CPU', 'CUDA')))")
    import torch

    assert "Skipping import of cpp extensions due to incompatible torch version " \
           f"{torch.__version__} for torchao version 0.14.1" in text
    assert "kernel: False" in text
    report = check("torchao-0.14.1-version-guard", "torchao", probe=True)
    (f,) = guard(report)
    assert f.severity is Severity.ERROR and f.cause == 3
    assert "torchao 0.14.1" in f.message and f"torch {torch.__version__}" in f.message
    printed = next(e for e in f.evidence if e.startswith("the import printed: "))
    assert printed.startswith("the import printed: Skipping import of cpp extensions")
    assert printed.endswith("for more info")
    assert any("supports torch 2.9.0" in e for e in f.evidence)
    assert f.fix is not None and "torch==2.9.0" in f.fix
    assert report.diagnosis.cause == 3
    assert "OD323" in {r.code for r in report.diagnosis.root_findings}
    # Its CUDA build (OD307) names the release the same table pins, not a placeholder or the
    # ">=" of its stable-ABI headers (torchao 0.16: 'torch>=2.10.0', which its table rejects).
    od307 = next(x for x in report.findings if x.code == "OD307")
    assert od307.fix is not None and "pip install 'torch==2.9.0' --index-url" in od307.fix


@pytest.mark.probe
def test_a_version_table_as_a_dict_pairs_releases_both_ways() -> None:
    """fbgemm-gpu-cpu 1.9.0 beside torch 2.13 warns "FBGEMM_GPU version is 1.9.0, which is not
    guaranteed to be compatible with PyTorch 2.13.0+cpu"; its table is a dict,
    ``_fbgemm_torch_compat_table = {"1.9": "2.14", "1.8": "2.13", …}``. The fix took the
    first release the message printed — the package's own — and said `pip install
    'torch==1.9.0'` (no such torch for this Python; survey 18). The dict is read as the
    table: torch 2.14 for this fbgemm, or the fbgemm 1.8 series for this torch."""
    import torch

    text = imported("fbgemm-gpu-cpu-1.9.0", "import torch, fbgemm_gpu")
    assert "FBGEMM_GPU version is 1.9.0, which is not guaranteed to be" in text, text[-2000:]
    assert f"compatible with PyTorch {torch.__version__}" in " ".join(text.split())
    report = check("fbgemm-gpu-cpu-1.9.0", "fbgemm_gpu", probe=True)
    (f,) = guard(report)
    assert any("supports torch 2.14 (its table in fbgemm_gpu/__init__.py)" in e
               for e in f.evidence), f.evidence
    assert f.fix is not None and "pip install 'torch==2.14.*'" in f.fix, f.fix
    if torch.__version__.startswith("2.13."):
        assert "pip install 'fbgemm_gpu_cpu==1.8.*'" in f.fix, f.fix
    assert "torch==1.9" not in f.fix
    # The verdict (built against another torch) takes its fix from that table, not the
    # placeholder "the release built for torch 2.13.0+cpu (its release notes pair …)".
    root = report.diagnosis.root_findings[0]
    assert root.code in ("OD304", "OD321") and "another torch" in root.message, root
    assert report.diagnosis.summary.endswith(
        f"Fix: {f.fix} (its own compatibility table, OD323)"), report.diagnosis.summary


@pytest.mark.probe
def test_a_requirement_built_for_another_torch_is_named_with_its_tables_fix(
        tmp_path: Path) -> None:
    """torchrec 1.5.0 beside fbgemm-gpu-cpu 1.9.0 and torch 2.13 (survey 18): `import
    torchrec` dies in fbgemm_gpu's import, whose fbgemm_gpu_tbe_index_select.so needs a symbol
    of torch 2.14. The verdict named neither that library nor its package, and its fix was a
    placeholder. Here a pure-Python package that requires the real fbgemm-gpu-cpu 1.9.0 wheel
    stands for torchrec: the finding is the requirement's library, with its table's pair."""
    import torch

    fbgemm = site("fbgemm-gpu-cpu-1.9.0")
    mine = tmp_path / "site"
    (mine / "recpkg").mkdir(parents=True)
    (mine / "recpkg" / "__init__.py").write_text("import torch\nimport fbgemm_gpu\n")
    dist_info(mine, "recpkg", "1.0", ["recpkg/__init__.py"], requires=("fbgemm-gpu-cpu",))
    env = dict(NO_ENV, PYTHONPATH=f"{mine}{os.pathsep}{fbgemm}")
    real = run_python("import recpkg", env=env, timeout=240)
    said = real.stdout + real.stderr
    assert real.returncode == 1 and "undefined symbol" in said, said[-2000:]
    failed = fbgemm / "fbgemm_gpu" / "fbgemm_gpu_tbe_index_select.so"
    assert f"OSError: Could not load this library: {failed}" in said, said[-2000:]
    report = run_check(str(mine / "recpkg"), CheckOptions(
        probe=True, env=tuple(env.items()), package="recpkg", cwd="/"))
    root = report.diagnosis.root_findings[0]
    assert root.code == "OD321" and root.subject == str(failed), root
    assert root.message.startswith("`import recpkg` fails in its requirement fbgemm_gpu "
                                   "(fbgemm_gpu-cpu 1.9.0), at "
                                   "fbgemm_gpu_tbe_index_select.so: undefined symbol "), root
    assert "built against another torch" in root.message, root
    assert root.fix is not None and "pip install 'torch==2.14.*' beside fbgemm_gpu-cpu 1.9.0" \
        in root.fix, root.fix
    if torch.__version__.startswith("2.13."):
        assert "pip install 'fbgemm_gpu-cpu==1.8.*'" in root.fix, root.fix
    assert f"named by the error: {failed}" in root.evidence


def test_torchao_table_decides_without_the_probe() -> None:
    report = check("torchao-0.14.1-version-guard", "torchao", probe=False)
    (f,) = guard(report)
    assert any("compatibility table does not list" in e for e in f.evidence)


@pytest.mark.probe
def test_accepted_release_stays_clean_of_the_guard() -> None:
    """torchao 0.18.0 accepts torch >= 2.11: its import does not print the guard's message,
    and no OD323 (its CUDA-build libraries are another finding, OD307)."""
    text = imported("torchao-0.18.0-cuda-ext-on-cpu", "import torchao")
    assert "incompatible torch version" not in text
    report = check("torchao-0.18.0-cuda-ext-on-cpu", "torchao", probe=True)
    assert guard(report) == []
    assert "OD307" in {f.code for f in report.findings}


@pytest.mark.probe
def test_a_guard_that_only_warns_is_a_warning() -> None:
    """fbgemm_gpu 1.9.0 (for torch 2.14) warns and loads anyway; the load's own failure (the
    undefined torch symbols) stays the root."""
    text = imported("fbgemm-gpu-cpu-1.9.0", "import fbgemm_gpu")
    assert "FBGEMM_GPU version is 1.9.0, which is not guaranteed to be" in text
    report = check("fbgemm-gpu-cpu-1.9.0", "fbgemm_gpu", probe=True)
    (f,) = guard(report)
    assert f.severity is Severity.WARNING and "warns about torch" in f.message
    assert report.diagnosis.cause == 3
    assert "OD323" not in {r.code for r in report.diagnosis.root_findings}


@pytest.mark.probe
def test_missing_python_dependency_stays_cause_5() -> None:
    text = imported("tensordict-0.11.0-missing-pyvers", "import tensordict")
    assert "No module named 'pyvers'" in text
    report = check("tensordict-0.11.0-missing-pyvers", "tensordict", probe=True)
    assert guard(report) == [] and report.diagnosis.cause == 5


IPEX_INIT = '''"""intel-extension-for-pytorch 2.8.0's guard, in its shape (__init__.py)."""
import importlib.util
import os
from pathlib import Path
import re

import torch

__version__ = "2.8.0"
torch_version = re.match(r"(\\d+\\.\\d+).*", torch.__version__).group(1)
ipex_version = re.match(r"(\\d+\\.\\d+).*", __version__).group(1)
if torch_version != ipex_version:
    print(
        "ERROR! Guarded Extension needs to work with PyTorch "
        + f"{ipex_version}.*, but PyTorch {torch.__version__} is found. "
        + "Please switch to the matching version and run again."
    )
    os.exit(127)
'''
LAUNCHER = "from .helper import main\n\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.probe
def test_a_printed_error_guard_that_then_crashes_is_the_release(tmp_path: object) -> None:
    """intel-extension-for-pytorch 2.8.0 beside torch 2.13 prints "ERROR! … needs to work with
    PyTorch 2.8.*, but PyTorch 2.13.0+cpu is found. Please switch to the matching version" and
    then calls ``os.exit`` (which does not exist): the last line a user sees is an
    AttributeError. The verdict is the package's own version check (OD323, cause 3) with the
    release it names as the fix (torch==2.8.*), the failed import its consequence; its
    launcher modules (relative imports, a __main__ block: entry points for ``python -m``) are
    notes in an installed distribution. (The real 50 MB wheel was checked by hand: the same.)"""
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    pkg = s / "guarded_ext"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(IPEX_INIT)
    (pkg / "helper.py").write_text("def main():\n    print('launch')\n")
    (pkg / "launcher.py").write_text(LAUNCHER)
    dist = s / "guarded_ext-2.8.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: guarded_ext\nVersion: 2.8.0\n")
    (dist / "RECORD").write_text("".join(f"guarded_ext/{n},,\n" for n in (
        "__init__.py", "helper.py", "launcher.py")))
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import torch, guarded_ext", env=env, timeout=240)
    import torch

    assert out.returncode != 0
    assert "needs to work with PyTorch 2.8.*, but PyTorch " \
        f"{torch.__version__} is found" in out.stdout
    assert "AttributeError: module 'os' has no attribute 'exit'" in out.stderr
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="guarded_ext", cwd="/"))
    (f,) = guard(report)
    assert f.severity is Severity.ERROR and "(the import then fails)" in f.message
    assert f.fix is not None and "torch==2.8.*" in f.fix
    assert [r.code for r in report.diagnosis.root_findings] == ["OD323"]
    assert "OD511" in [c.code for c in report.diagnosis.consequences.get("OD323", ())]
    od507 = [x for x in report.findings if x.code == "OD507"]
    assert [x.severity for x in od507] == [Severity.INFO]


@pytest.mark.probe
@pytest.mark.parametrize(("code", "raised", "needs"), [
    # torchao 0.12.0 beside torch 2.13: a module torch moved or removed
    ("from torch._inductor.kernel.flex_attention_gone import construct_strides",
     "ModuleNotFoundError: No module named 'torch._inductor.kernel.flex_attention_gone'",
     "torch._inductor.kernel.flex_attention_gone"),
    ("from torch.library import register_fake_v9",
     "ImportError: cannot import name 'register_fake_v9' from 'torch.library'",
     "torch.library.register_fake_v9"),
    ("import torch\ntorch.library.register_fake_v9('x')",
     "AttributeError: module 'torch.library' has no attribute 'register_fake_v9'",
     "torch.library.register_fake_v9"),
    # another distribution's module is no torch API: the import chain's own (cause 5)
    ("import not_installed_dist_xyz", "No module named 'not_installed_dist_xyz'", ""),
])
def test_an_import_failing_on_what_this_torch_lacks_is_the_release(
        tmp_path: object, code: str, raised: str, needs: str) -> None:
    """torchao 0.12.0 beside torch 2.13 fails at ``from torch._inductor.kernel.flex_attention
    import …``: its Python was written for another torch release (OD325, cause 3), not a fault
    of the import chain — the failed import (OD511) is its consequence. A module of another
    distribution missing stays OD511, cause 5."""
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    pkg = s / "apiuser"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"import torch\n{code}\n")
    dist = s / "apiuser-0.12.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: apiuser\nVersion: 0.12.0\n")
    (dist / "RECORD").write_text("apiuser/__init__.py,,\n")
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import torch, apiuser", env=env, timeout=240)
    assert out.returncode != 0 and raised in out.stderr, out.stderr[-2000:]
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="apiuser", cwd="/"))
    roots = [r.code for r in report.diagnosis.root_findings]
    if not needs:
        assert "OD325" not in [f.code for f in report.findings] and roots == ["OD511"]
        return
    (f,) = [f for f in report.findings if f.code == "OD325"]
    assert f"import apiuser needs {needs}, which torch " in f.message
    assert "apiuser 0.12.0's Python was written for another torch release" in f.message
    assert f.fix is not None and "install the apiuser release made for torch" in f.fix
    # a copy on PYTHONPATH is upgraded where it is (survey 20: keras 2.15's fix upgraded the
    # environment's hidden copy)
    assert f"pip install --no-deps --upgrade --target {s} apiuser" in f.fix, f.fix
    assert roots == ["OD325"] and report.diagnosis.cause == 3
    assert "OD511" in [c.code for c in report.diagnosis.consequences.get("OD325", ())]


RELPICK_INIT = '''"""torch-c-dlpack-ext 0.1.5's shape: one addon per torch release and build,
loaded by name only into a torch that lacks what it adds."""
import ctypes
import importlib.util
import os
from pathlib import Path

import torch

_V = torch.__version__.split("+")[0].split(".")
_NAME = f"libaddon_torch{_V[0]}{_V[1]}-{'cuda' if torch.version.cuda else 'cpu'}.so"
if {condition}:
    ctypes.CDLL(os.path.join(os.path.dirname(__file__), {which}))
'''


@pytest.mark.probe
@pytest.mark.parametrize("loads", [False, True])
def test_per_release_copies_the_import_does_not_load_are_not_checked(
        tmp_path: object, loads: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """torch-c-dlpack-ext 0.1.5 ships ``libtorch_c_dlpack_addon_torch<24…29>-<cpu|cuda>.so`` and
    loads the one for the running torch only into a torch without the DLPack exchange API
    (before 2.10): beside torch 2.13 its import works and loads none. Each copy was checked as
    a library of the package — 42 errors, exit 1, on a package that imports and works. The
    copies for other releases and the CUDA twins are alternatives, not the package's load
    path: with the probe the package is clean. A package whose import does load such a copy
    (built for another torch) still fails, and says so."""
    import subprocess
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    pkg = s / "relpick"
    pkg.mkdir(parents=True)
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    torch_lib = str(Path(spec.origin).parent / "lib")
    stub = Path(str(tmp_path)) / "stub"
    stub.mkdir()
    (stub / "s.c").write_text("void c10_cuda_stub(void) {}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(stub / "libc10_cuda.so"),
                    str(stub / "s.c")], check=True, timeout=60)
    # c10::impl::removed_in_2_10(): a torch symbol the installed torch does not export
    (stub / "addon.c").write_text("void _ZN3c104impl14removed_in_2_10Ev(void);\n"
                                  "void addon(void) { _ZN3c104impl14removed_in_2_10Ev(); }\n")
    for minor in (4, 5, 6):
        for build in ("cpu", "cuda"):
            cuda = ["-L", str(stub), "-lc10_cuda"] if build == "cuda" else []
            subprocess.run(["gcc", "-shared", "-fPIC", "-o",
                            str(pkg / f"libaddon_torch2{minor}-{build}.so"), str(stub / "addon.c"),
                            "-Wl,--no-as-needed", "-L", torch_lib, "-lc10", *cuda],
                           check=True, timeout=60)
    condition, which = ("True", "'libaddon_torch24-cpu.so'") if loads else \
        ("not hasattr(torch, 'compile')", "_NAME")
    (pkg / "__init__.py").write_text(RELPICK_INIT.replace("{condition}", condition)
                                     .replace("{which}", which))
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import torch, relpick", env=env, timeout=240)
    if loads:
        assert "undefined symbol: _ZN3c104impl14removed_in_2_10Ev" in out.stderr, out.stderr
    else:
        assert out.returncode == 0, out.stderr[-2000:]
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="relpick", cwd="/"))
    serious = [(f.code, f.message) for f in report.findings if f.severity is not Severity.INFO]
    if loads:
        assert report.diagnosis.cause == 3 and serious, report.findings
        return
    assert serious == [] and report.diagnosis.cause == 0, serious
    # As `check --package` expands it: the package, not one report per copy.
    res = cli(capsys, "check", "-f", "json", "--package", "relpick", "--cwd", "/", "--env",
              f"PYTHONPATH={s}")
    assert res.code == 0 and [r["target"]["path"] for r in res.json()["reports"]] == [str(pkg)]


RELDIRS_INIT = '''"""vesin-torch 0.6: a build per torch release, in a directory named for it."""
import os

import torch

_V = torch.__version__.split("+")[0].split(".")
torch.ops.load_library(os.path.join(os.path.dirname(__file__), f"torch-{_V[0]}.{_V[1]}",
                                    "lib", "libaddon.so"))
'''


@pytest.mark.probe
def test_per_release_builds_in_release_directories_are_alternatives(
        tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """vesin-torch 0.6.2, sphericart-torch 2.0.4 and metatensor-torch 0.10.8 ship
    ``torch-2.3/lib/lib….so`` … ``torch-2.14/lib/lib….so`` and load the one of the running
    torch's release: all three import and work beside torch 2.13, and each copy was checked as
    a library of the package — 12 to 18 reports, up to 43 errors, exit 1 (survey 18). A
    directory named for a torch release marks a per-release copy as a release in a file name
    does: only the installed release's copy is the package's library."""
    import subprocess
    from pathlib import Path

    from opdoctor.facts.variant import copies_for_this_torch, release_families
    from tests.conftest import reference

    s = Path(str(tmp_path)) / "site"
    pkg = s / "reldirs"
    stub = Path(str(tmp_path)) / "stub"
    stub.mkdir()
    # c10::impl::removed_in_2_10(): a torch symbol the installed torch does not export
    (stub / "addon.c").write_text("void _ZN3c104impl14removed_in_2_10Ev(void);\n"
                                  "void addon(void) { _ZN3c104impl14removed_in_2_10Ev(); }\n")
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    torch_lib = str(Path(spec.origin).parent / "lib")
    import torch as _t  # the installed release names the directory the package picks
    mine = ".".join(_t.__version__.split("+")[0].split(".")[:2])
    for rel in ("2.4", "2.5", mine):
        d = pkg / f"torch-{rel}" / "lib"
        d.mkdir(parents=True)
        if rel == mine:
            (d / "libaddon.so").write_bytes(reference().read_bytes())
        else:
            subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libaddon.so"),
                            str(stub / "addon.c"), "-Wl,--no-as-needed", "-L", torch_lib,
                            "-lc10"], check=True, timeout=60)
    (pkg / "__init__.py").write_text(RELDIRS_INIT)
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import torch, reldirs; print(torch.ops.myop.weighted_sum)", env=env,
                     timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    # Each other release's copy really fails here, as its release says.
    other = run_python("import sys, torch; torch.ops.load_library(sys.argv[1])",
                       str(pkg / "torch-2.4" / "lib" / "libaddon.so"), env=env, timeout=240)
    assert "undefined symbol: _ZN3c104impl14removed_in_2_10Ev" in other.stderr, other.stderr
    libs = sorted(str(p) for p in pkg.rglob("*.so"))
    assert release_families(str(pkg), libs) == {
        "torch-<r>/lib/libaddon.so": sorted({"2.4", "2.5", mine},
                                            key=lambda r: tuple(map(int, r.split("."))))}
    assert copies_for_this_torch(libs, _t.__version__, _t.version.cuda) == \
        [str(pkg / f"torch-{mine}" / "lib" / "libaddon.so")]
    for static in ([], ["--static"]):
        res = cli(capsys, "check", "-f", "json", *static, "--package", "reldirs", "--cwd", "/",
                  "--env", f"PYTHONPATH={s}")
        reports = res.json()["reports"]
        errors = [(f["code"], f["message"]) for r in reports for f in r["findings"]
                  if f["severity"] == "error"]
        assert res.code == 0 and errors == [], (static, errors)
        assert [r["target"]["path"] for r in reports] == \
            [str(pkg / f"torch-{mine}" / "lib" / "libaddon.so")], static


def test_a_subpackage_installed_by_its_own_distribution_gets_that_distributions_fix(
        tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """sphericart-torch 2.0.4 installs `sphericart/torch/` inside the directory of another
    distribution (sphericart). Its libraries built for another torch got OD304's source-tree
    fix, "pip install --no-build-isolation ." — nothing to build in an installed wheel — since
    no dist-info beside `sphericart/` is named for `torch` (survey 18). The distribution whose
    RECORD lists the subpackage is the one to change."""
    import subprocess
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    sub = s / "outerpkg" / "torchside"
    sub.mkdir(parents=True)
    (s / "outerpkg" / "__init__.py").write_text("")
    (sub / "__init__.py").write_text("import os, torch\ntorch.ops.load_library(os.path.join("
                                     "os.path.dirname(__file__), 'libside.so'))\n")
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    # c10::impl::PyObjectSlot::~PyObjectSlot(): torch 2.13 exports it no more (torchtext's)
    (Path(str(tmp_path)) / "addon.c").write_text(
        "void _ZN3c104impl12PyObjectSlotD1Ev(void);\n"
        "void addon(void) { _ZN3c104impl12PyObjectSlotD1Ev(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(sub / "libside.so"),
                    str(Path(str(tmp_path)) / "addon.c"), "-Wl,--no-as-needed", "-L",
                    str(Path(spec.origin).parent / "lib"), "-lc10"], check=True, timeout=60)
    dist_info(s, "outerpkg", "1.0", ["outerpkg/__init__.py"])
    dist_info(s, "outerpkg-torch", "2.0", ["outerpkg/torchside/__init__.py",
                                           "outerpkg/torchside/libside.so"])
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", "/", "--env",
              f"PYTHONPATH={s}", "--package", "outerpkg.torchside")
    rep = res.json()["reports"][0]
    od304 = next(f for f in rep["findings"] if f["code"] == "OD304")
    assert "install the outerpkg-torch release built for torch" in od304["fix"], od304["fix"]
    assert "pip install --no-build-isolation .)" not in od304["fix"]


CODEC_INIT = '''"""torchcodec 0.5's shape: one message after any failed load, likely causes."""
import ctypes
import os
from pathlib import Path

import torch

try:
    ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libcodec_core.so"))
except OSError as exc:
    raise RuntimeError(
        f"Could not load libcodec. Likely causes: 1. FFmpeg is not properly installed in "
        f"your environment. 2. The PyTorch version ({torch.__version__}) is not compatible "
        f"with this version of codeclike. The exception: {exc}") from exc
'''


@pytest.mark.probe
def test_a_list_of_likely_causes_is_no_version_guard(tmp_path: object) -> None:
    """torchcodec 0.5 raises "Could not load libtorchcodec. Likely causes: 1. FFmpeg is not
    properly installed … 2. The PyTorch version (2.13.0+cpu) is not compatible …" after any
    failed load; it compares no releases. Read as its own version check (OD323, cause 3), it
    blamed the torch release where only FFmpeg was missing. The loader's not-found is the
    root (cause 2)."""
    import subprocess
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    pkg = s / "codeclike"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(CODEC_INIT)
    stub = Path(str(tmp_path)) / "stub"
    stub.mkdir()
    (stub / "f.c").write_text("int av_stub(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libavutil_like.so.59", "-o",
                    str(stub / "libavutil_like.so.59"), str(stub / "f.c")], check=True,
                   timeout=60)
    (stub / "c.c").write_text("int av_stub(void);\nint core(void) { return av_stub(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "libcodec_core.so"),
                    str(stub / "c.c"), "-L", str(stub), "-l:libavutil_like.so.59"],
                   check=True, timeout=60)
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import torch, codeclike", env=env, timeout=240)
    assert "Likely causes" in out.stderr and \
        "libavutil_like.so.59: cannot open shared object file" in out.stderr, out.stderr
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="codeclike", cwd="/"))
    assert guard(report) == [], guard(report)
    assert report.diagnosis.cause == 2, [(f.code, f.message) for f in report.findings]


# ------------------------------------------------------------------ a version compared as text
TEXT_GUARD = '''import torch

# the guard torchao 0.13.0 has: skip the extension beside torch 2.9 and later
if {compare}:
    SKIPPED = True
else:
    SKIPPED = False
'''


@pytest.mark.probe
@pytest.mark.parametrize(("compare", "flagged"), [
    ('str(torch.__version__) >= "2.9"', True),   # "2.13.0+cpu" >= "2.9" is False as text
    ('"2.9" <= str(torch.__version__)', True),   # the same, written the other way round
    ('torch.__version__ >= "2.9"', False),       # TorchVersion compares as a version
    ('str(torch.__version__) >= "2.1"', False),  # text and version agree for 2.13
])
def test_a_version_compared_as_text_is_reported(tmp_path: Path, compare: str,
                                                flagged: bool) -> None:
    """torchao 0.13.0's `str(torch.__version__) >= "2.9"` (survey 9): str() makes torch's
    version a plain string, compared character by character, so the guard meant to skip its
    extension beside torch >= 2.9 does not fire beside 2.13 and the load fails. What Python
    does with the package's guard is checked first."""
    pkg = tmp_path / "textguard"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(TEXT_GUARD.format(compare=compare))
    real = run_python("import torch, textguard; print(textguard.SKIPPED)", cwd=tmp_path,
                      env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    import torch

    assert torch.__version__ >= "2.9"  # the release the guard means to skip
    # the guard's branch: a text comparison that misreads 2.13 takes the other one
    assert real.stdout.strip() == str(not flagged), real.stderr
    res = run_check(str(pkg), CheckOptions(package="textguard", cwd=str(tmp_path)))
    found = [f for f in res.findings if f.code == "OD326"]
    if not flagged:
        assert found == []
        return
    (f,) = found
    assert f.severity is Severity.WARNING and f.subject == "textguard/__init__.py:4"
    assert f"is False for torch {torch.__version__} (as a version: True)" in f.message
    assert "the one meant for torch below 2.9" in f.message


def test_only_modules_that_name_a_framework_are_parsed_for_guards(tmp_path: Path) -> None:
    """The guard readers parse a module only when its bytes could hold what they look for
    (numpy's or scipy's modules read ``__version__`` but name no framework: parsing them was
    most of the readers' time). What a guard names — PyTorch in any case, ``tf`` in a
    formatted value — still gets its module parsed and read."""
    from opdoctor.facts import commandcache, pyast, pyguard

    plain = tmp_path / "plain.py"  # reads a version, compares as text, names no framework
    plain.write_text('import numpy\nif str(numpy.__version__) < "2":\n'
                     '    raise ImportError(f"numpy {numpy.__version__} is not supported")\n')
    mixed = tmp_path / "mixed.py"
    mixed.write_text('import torch\nif torch.__version__ < "3":\n    raise ImportError(\n'
                     '        f"This build requires PYTORCH 3, found version "\n'
                     '        f"{torch.__version__}")\n')
    tf = tmp_path / "tfguard.py"
    tf.write_text('import tensorflow as tf\nif str(tf.__version__) >= "2.9":\n'
                  '    print(f"version {tf.__version__} is not supported")\n')
    parsed: list[str] = []
    real = pyast._parse

    def counting(path: str, raw: bytes | None) -> object:
        parsed.append(Path(path).name)
        return real(path, raw)

    commandcache.clear()
    pyguard.find_guards.cache_clear()
    pyguard.find_text_comparisons.cache_clear()
    pyast._parse = counting  # type: ignore[assignment]
    try:
        files = (str(plain), str(mixed), str(tf))
        guards = pyguard.find_guards(files)
        compares = pyguard.find_text_comparisons(files)
    finally:
        pyast._parse = real
        commandcache.clear()
    assert "plain.py" not in parsed
    assert sorted((Path(g.file).name, g.framework) for g in guards) == [
        ("mixed.py", "torch"), ("tfguard.py", "tensorflow")]
    assert [(Path(c.file).name, c.framework, c.release) for c in compares] == [
        ("tfguard.py", "tensorflow", "2.9")]


@pytest.mark.probe
def test_a_requirement_is_named_by_an_error_only_as_a_word(tmp_path: object) -> None:
    """A package pinned to `filelock<1.0` (filelock 3.x installed) whose import dies on an
    error about "filelocks": that error does not name filelock — the pin outside its range is a
    warning, not the import's root (the check read "filelock" inside "filelocks", as it read
    "torch" inside "operator torchvision::nms")."""
    from pathlib import Path

    s = Path(str(tmp_path)) / "site"
    pkg = s / "pinuser"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('the filelocks registry is broken')\n")
    dist = s / "pinuser-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pinuser\nVersion: 1.0\n"
                                   "Requires-Dist: filelock<1.0\n")
    (dist / "RECORD").write_text("pinuser/__init__.py,,\n")
    env = dict(NO_ENV, PYTHONPATH=str(s))
    out = run_python("import pinuser", env=env, timeout=120)
    assert "the filelocks registry is broken" in out.stderr, out.stderr[-1500:]
    report = run_check(str(pkg), CheckOptions(probe=True, env=tuple(env.items()),
                                              package="pinuser", cwd="/"))
    (od327,) = [f for f in report.findings if f.code == "OD327"]
    assert od327.subject == "filelock" and od327.severity.value == "warning", od327


@pytest.mark.probe
def test_a_package_directory_whose_import_reaches_no_library_checks_its_libraries(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24's F6: fbgemm_gpu loads its 19 op libraries with
    ``torch.ops.load_library(os.path.join(dirname, f"{library}.so"))`` in a loop, which no
    static reading follows; `check --static --package fbgemm_gpu` checked each (built against
    torch 2.14: OD304), while `check --static <its directory>` read none of them — "No problem
    found", exit 0, over an import that fails. The directory is checked as the package is."""
    text = imported("fbgemm-gpu-cpu-1.9.0", "import torch, fbgemm_gpu")
    assert "undefined symbol" in text, text[-2000:]
    s = site("fbgemm-gpu-cpu-1.9.0")
    args = ("check", "--static", "-f", "json", "--env", f"PYTHONPATH={s}", "--cwd", "/")

    def errors(doc: dict[str, object]) -> list[tuple[str, str]]:
        return sorted({(r["target"]["path"], f["code"])  # type: ignore[index]
                       for r in doc["reports"] for f in r["findings"]  # type: ignore[attr-defined]
                       if f["severity"] == "error"})

    by_dir = cli(capsys, *args, str(s / "fbgemm_gpu"))
    by_package = cli(capsys, *args, "--package", "fbgemm_gpu")
    assert by_dir.code == by_package.code == 1
    assert errors(by_dir.json()) == errors(by_package.json())
    assert "OD304" in {code for _, code in errors(by_dir.json())}
