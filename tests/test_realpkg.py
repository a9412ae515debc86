"""Right verdicts on real PyPI packages (issue #14): real wheels beside the pinned CPU torch.

Each test first shows what torch / ld.so really do with the wheel (the load or the import fails
or works as the verdict says), then asserts opdoctor's verdict.
"""

from __future__ import annotations

import glob
import io
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.pipeline import run_check
from opdoctor.report import text as text_report
from opdoctor.report.layout import Printer
from tests.conftest import BUILD, FIX, SKIP, fixture
from tests.helpers import cli, cli_proc, cli_text_and_json, dist_info
from tests.test_loader import torch_lib_dir
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")


def _site(wheel: str) -> Path:
    reason = SKIP / f"{wheel}.txt"
    if reason.exists():
        pytest.skip(f"real wheel {wheel} not fetched: {reason.read_text().strip()[:200]}")
    site = FIX / "realwheels" / wheel / "site"
    assert site.is_dir(), f"{site} is missing: run `make fixtures`"
    return site


@pytest.mark.probe
def test_variant_library_missing_in_the_real_load_is_cause_3(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """PyPI's torchvision 0.28.0 (+cu130) _C.so loaded on its own beside torch 2.13.0+cpu: the
    real dlopen fails on libc10_cuda.so. That is a variant mismatch (OD315, cause 3), never a
    library-path finding (OD220): a CPU torch has no libc10_cuda.so anywhere."""
    lib = tmp_path / "_C.so"
    shutil.copy(_site("torchvision-0.28.0") / "torchvision" / "_C.so", lib)
    real = run_python("import torch, sys; torch.ops.load_library(sys.argv[1])", str(lib),
                      timeout=300)
    assert real.returncode != 0 and "libc10_cuda.so: cannot open shared object file" in \
        real.stderr
    assert not any(name.startswith("libc10_cuda") for name in os.listdir(torch_lib_dir()))
    res = cli(capsys, "check", "-f", "json", str(lib))
    assert res.code == 1
    rep = res.json()["reports"][0]
    codes = {f["code"]: f for f in rep["findings"]}
    assert "OD220" not in codes, codes.get("OD220")
    od315 = codes["OD315"]
    assert od315["cause"] == 3 and od315["severity"] == "error"
    assert "CUDA" in od315["message"] and "2.13.0+cpu" in od315["message"]
    # A lone copy names no distribution: no index to promise a CPU build from.
    assert "patchelf" not in od315["fix"] and "a CPU build of the extension" in od315["fix"]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD307"]
    assert "OD315" in diag["consequences"]["OD307"]


# ------------------------------------------------------------------ issue #15: remaining cases
SYSLIB = Path("/usr/lib/x86_64-linux-gnu")


@pytest.mark.probe
def test_memory_limit_kill_gets_the_allocation_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """alloc.so's initialiser keeps a 640 MiB table: a real load really grows the process by
    that much; under --probe-memory 500 the fix names the allocation and the limit, not
    static-initialisation order."""
    lib = FIX / "realpkg" / "alloc.so"
    assert lib.exists(), f"{lib} is missing: run `make fixtures`"
    # Resident size now, not ru_maxrss: Linux keeps a process's peak across exec, so a child
    # of a large pytest process would start with the parent's peak.
    real = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import ctypes, sys
        def rss():
            with open("/proc/self/status") as fh:
                return next(int(x.split()[1]) for x in fh if x.startswith("VmRSS:"))
        before = rss()
        ctypes.CDLL(sys.argv[1])
        print((rss() - before) // 1024)
        """), str(lib)], capture_output=True, text=True, timeout=120)
    assert real.returncode == 0 and int(real.stdout) > 500, real  # MiB the load added
    res = cli(capsys, "check", "-f", "json", "--probe-memory", "500", str(lib))
    assert res.code == 1
    rep = res.json()["reports"][0]
    f = next(f for f in rep["findings"] if f["code"] == "OD124")
    assert rep["diagnosis"]["root_findings"] == ["OD124"]
    assert "allocated more than 500 MiB" in f["message"]
    assert "--probe-memory" in f["fix"] and "500 MiB" in f["fix"]
    assert "order" not in f["fix"].lower() and "translation unit" not in f["fix"].lower()
    # Within the limit it loads: the same library is not a failure.
    res = cli(capsys, "check", "-f", "json", "--probe-memory", "2048", str(lib))
    assert "OD124" not in [f["code"] for f in res.json()["reports"][0]["findings"]]


def test_package_mode_names_the_libraries_it_did_not_reach(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--package` on a package that ships _C but never imports it: OD505, and the library
    no import reaches is checked itself (its ELF checks run) — never "has no compiled
    library"."""
    pkg_root = FIX / "truth" / "pkg_noimport"
    if not (pkg_root / "tinyop" / "__init__.py").exists():
        pytest.skip("truth fixtures not built")
    ext = next((pkg_root / "tinyop").glob("_C*.so"))
    res = cli_proc("check", "-f", "json", "--static", "--package", "tinyop", cwd=pkg_root)
    assert res.code == 1, res.out
    rep = res.json()["reports"][0]
    assert "OD505" in [f["code"] for f in rep["findings"]]
    reasons = [c["reason"] for c in rep["checks"] if c["status"] == "skipped"]
    assert not any("no compiled library" in r for r in reasons), reasons
    assert rep["target"]["path"] == str(ext)
    assert {c["name"]: c["status"] for c in rep["checks"]}["dependencies"] == "ran"
    text = cli_proc("check", "--static", "--package", "tinyop", cwd=pkg_root)
    assert "has no compiled library" not in text.out


def test_static_walk_of_system_libraries_has_no_registration_finding() -> None:
    """Every third library under 2 MB in /usr/lib/x86_64-linux-gnu (by name) and the big ones
    that once got OD102 (libcrypto, libpython, libLLVM), each checked as a named library with
    --static: none links torch or TensorFlow, so none gets a registration finding other than
    OD116's note that it registers nothing. (The whole < 2 MB set, 413 libraries here, takes
    about 65 s and is clean too.)"""
    small = sorted(p for p in glob.glob(str(SYSLIB / "lib*.so*"))
                   if not os.path.islink(p) and os.path.getsize(p) < (2 << 20))[::3]
    big = [p for pat in ("libcrypto.so.3", "libpython3*.so.1.0", "libLLVM-1[0-9].so.1")
           for p in sorted(glob.glob(str(SYSLIB / pat)))[:1]]
    if not small:
        pytest.skip(f"no libraries under {SYSLIB}")
    import mmap

    bad = []
    for lib in [*small, *big]:
        with open(lib, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue  # a linker script (libc.so): not a library, see test_truth.py
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                # a framework's name anywhere in it (its NEEDED entries among the rest): a
                # library that may link one is not what this test is about (no readelf
                # process per library: 139 of them)
                if any(data.find(n) >= 0 for n in (b"libtorch", b"libc10", b"libtensorflow")):
                    continue
        rep = run_check(lib, CheckOptions(named=True))
        # Registration findings only: other findings can be true (libunwind-ptrace really
        # fails to load: it is under-linked, OD301).
        bad += [(lib, f.code) for f in rep.findings
                if (f.cause == 1 or f.code.startswith("OD1")) and f.code != "OD116"]
    assert bad == []


# ------------------------------------------------------------------ issue #14: real packages
def _rp_site(wheel: str) -> Path:
    reason = SKIP / f"{wheel}.txt"
    if reason.exists():
        pytest.skip(f"real wheel {wheel} not fetched: {reason.read_text().strip()[:200]}")
    site = FIX / "realpkg" / "wheels" / wheel / "site"
    assert site.is_dir(), f"{site} is missing: run `make fixtures`"
    return site


@pytest.mark.probe
def test_build_record_names_the_exact_torch_build(capsys: pytest.CaptureFixture[str]) -> None:
    """xformers 0.0.35 records the torch it was built for in cpp_lib.json, which its own
    import-time guard reads ("xFormers was built for: PyTorch 2.10.0+cu128"); its _C.so really
    fails to load beside torch 2.13.0+cpu. OD307 cites the record and installs that build."""
    site = _rp_site("xformers-0.0.35")
    guard = (site / "xformers" / "_cpp_lib.py").read_text()
    assert "xFormers was built for" in guard and "cpp_lib.json" in guard
    real = run_python("import torch, ctypes, sys; ctypes.CDLL(sys.argv[1])",
                      str(site / "xformers" / "_C.so"), timeout=300)
    assert real.returncode != 0 and "cannot open shared object file" in real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              str(site / "xformers" / "_C.so"))
    assert res.code == 1
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["cause"] == 3 and rep["diagnosis"]["root_findings"] == ["OD307"]
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    assert "xformers/cpp_lib.json: built for torch 2.10.0+cu128, CUDA 12.8" in od307["evidence"]
    assert "torch==2.10.0" in od307["fix"] and "whl/cu128" in od307["fix"]
    # xformers is not on PyTorch's CPU index: no "pip install xformers --index-url …/cpu".
    assert "whl/cpu" not in od307["fix"] and "if its project publishes one" in od307["fix"]


@pytest.mark.probe
def test_a_load_the_package_caught_is_seen_as_it_happened(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`import xformers` (0.0.35) calls torch.ops.load_library(_C.so), catches the OSError and
    prints a banner naming the releases but no file: the probe said it "did not load _C.so
    (the package loads it later, or never)" (survey 8's P13). The probe now sees the failed
    load happen (the path, the package's line, the loader's error), and the real load's
    missing libcudart.so.12 confirms the build variant."""
    site = _rp_site("xformers-0.0.35")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = run_python("import torch, xformers, xformers._cpp_lib as c\n"
                      "print(type(c._cpp_library_load_exception).__name__)\n"
                      "e = c._cpp_library_load_exception.__cause__\n"
                      "print(repr(e), repr(e.__cause__))",
                      env=env, timeout=300)
    assert real.returncode == 0, real.stderr[-2000:]
    assert real.stdout.split("\n")[0] == "xFormersInvalidLibException"
    # torch.ops.load_library's "Could not load this library: …/_C.so", from ctypes' error
    assert "_C.so" in real.stdout and "libcudart.so.12: cannot open" in real.stdout
    assert "xFormers was built for" in real.stderr
    assert "_C.so" not in real.stderr  # the banner names no file
    res, doc = cli_text_and_json(capsys, tmp_path, "check", "--package", "xformers", "--env",
                                 f"PYTHONPATH={site}")
    rep = doc["reports"][0]
    assert rep["diagnosis"]["root_findings"] == ["OD307"]
    caught = [f for f in rep["findings"] if f["code"] == "OD512"]
    assert len(caught) == 1 and caught[0]["message"].startswith("loading _C.so fails: OSError: "
                                                                "libcudart.so.12"), caught
    assert any("caught it (xformers/_cpp_lib.py:" in e for e in caught[0]["evidence"])
    assert "OD315" in rep["diagnosis"]["consequences"]["OD307"]  # the real load confirms it
    assert "the package tried, the load failed and the package caught it: OD512" in res.out
    assert "loads it later, or never" not in res.out


@pytest.mark.probe
def test_package_with_run_time_library_paths_gets_the_loaders_verdict(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """fbgemm-gpu-cpu 1.9.0 (built for torch 2.14) loads its libraries from a loop over file
    names, which the static chain cannot resolve. `import fbgemm_gpu` really fails on an
    undefined torch symbol; --package names that (cause 3), not "import raised" (cause 5)."""
    site = _rp_site("fbgemm-gpu-cpu-1.9.0")
    env = dict(os.environ, PYTHONPATH=str(site))
    real = run_python("import torch, fbgemm_gpu", env=env, cwd=tmp_path, timeout=300)
    assert real.returncode != 0 and "undefined symbol: _ZN5torch8autograd" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--package",
              "fbgemm_gpu", "--cwd", str(tmp_path))
    assert res.code == 1
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and "OD321" in diag["root_findings"], diag
    od321 = next(f for f in rep["findings"] if f["code"] == "OD321")
    assert "built against another torch" in od321["message"] and "2.13.0" in od321["message"]


@pytest.mark.probe
def test_healthy_package_with_optional_modules_is_clean(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """fbgemm-gpu-cpu 1.8.0 works beside torch 2.13 (its op runs). Its docs/__init__.py does
    `from . import jagged_tensor_ops` inside try/except: that is fbgemm_gpu.docs.…, not
    fbgemm_gpu.…; importing the wrong name made a ModuleNotFoundError of opdoctor's own."""
    site = _rp_site("fbgemm-gpu-cpu-1.8.0")
    env = dict(os.environ, PYTHONPATH=str(site))
    real = run_python("import torch, fbgemm_gpu; print(torch.ops."
                      "fbgemm.asynchronous_complete_cumsum(torch.tensor([1, 2, 3])))",
                      env=env, cwd=tmp_path, timeout=300)
    assert real.returncode == 0 and "tensor([0, 1, 3, 6])" in real.stdout, real.stderr[-500:]
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--package",
              "fbgemm_gpu", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 0, rep["diagnosis"]
    assert [f["code"] for f in rep["findings"] if f["severity"] == "error"] == []
    targets = [link["target"] for link in rep["sections"]["import-chain"]["links"]]
    assert "fbgemm_gpu.docs.jagged_tensor_ops" in targets
    assert "fbgemm_gpu.jagged_tensor_ops" not in targets


@pytest.mark.probe
def test_old_release_with_the_old_abi_leads_with_the_release(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """torchtext 0.18.0, its last release, was built for torch 2.3, whose PyPI wheels used the
    old C++ ABI. Beside torch 2.13 the real load fails on an old-ABI ``std::string`` symbol
    (``Ss``), and the library also needs torch functions 2.13 no longer exports under any ABI
    (``c10::impl::PyObjectSlot::~PyObjectSlot()``). So the verdict leads with the release (OD304:
    rebuild against the installed torch, which sets the ABI too), lists the ABI (OD303) as a
    second root — not as OD304's cause — and shows each consequence once, under the root that
    names its symbol."""
    site = _rp_site("torchtext-0.18.0")
    lib = site / "torchtext" / "lib" / "libtorchtext.so"
    real = run_python("import torch, sys; torch.ops.load_library(sys.argv[1])", str(lib),
                      timeout=300)
    assert real.returncode != 0 and \
        "undefined symbol: _ZN5torch6detail10class_baseC2ERKSsS3_SsRKSt9type_infoS6_" in \
        real.stderr, real.stderr[-2000:]
    gone = run_python("import torch, ctypes, os\n"
                      "c10 = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), 'lib', "
                      "'libc10.so'))\n"
                      "print(hasattr(c10, '_ZN3c104impl12PyObjectSlotD1Ev'))\n", timeout=300)
    assert gone.stdout.strip() == "False", gone.stderr[-2000:]
    res, doc = cli_text_and_json(capsys, tmp_path, "check", "--env", f"PYTHONPATH={site}",
                                 "--package", "torchtext")
    assert res.code == 1
    rep = doc["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD304", "OD303"]
    assert diag["consequences"] == {"OD304": ["OD511"], "OD303": ["OD321"]}
    od304 = next(f for f in rep["findings"] if f["code"] == "OD304")
    assert any("PyObjectSlot::~PyObjectSlot()" in e for e in od304["evidence"])
    assert not any("std::string" in e for e in od304["evidence"])  # those are OD303's
    # an installed wheel: a release paired with this torch, or a build from its source here
    assert "install the torchtext release built for torch 2.13" in od304["fix"]
    assert "rebuild it against this torch (pip install --no-build-isolation --no-binary " \
        "torchtext torchtext — where the index has its source distribution" in od304["fix"], \
        od304["fix"]
    assert "build from its source repository" in od304["fix"]  # wheels-only packages
    # the text report shows each consequence once
    assert res.out.count("OD511 import torchtext raised") == 1
    assert res.out.count("OD321 undefined symbol") == 1


@pytest.mark.probe
def test_the_old_abi_of_an_installed_wheel_is_fixed_by_its_release_not_a_rebuild(
        capsys: pytest.CaptureFixture[str]) -> None:
    """torchtext 0.18.0's `_torchtext.so` (an installed wheel) alone gets OD303: "rebuild with
    -D_GLIBCXX_USE_CXX11_ABI=1" assumed a source tree. An old-ABI PyPI wheel is a build for
    torch < 2.7: the fix is its release for this torch, or a rebuild of it by pip, or the
    torch it was built for (survey 8's P16). The library needs the old-ABI `std::string`
    form of a c10 function that torch 2.13 exports only in the new ABI."""
    site = _rp_site("torchtext-0.18.0")
    lib = site / "torchtext" / "_torchtext.so"
    old = "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKSs"
    new = "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKNSt7__cxx1112basic_stringIcSt11" \
        "char_traitsIcESaIcEEE"
    real = run_python("import torch, ctypes, os, sys\n"
                      "c10 = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), 'lib', "
                      "'libc10.so'))\n"
                      "print(hasattr(c10, sys.argv[1]), hasattr(c10, sys.argv[2]))\n",
                      old, new, timeout=300)
    assert real.stdout.split() == ["False", "True"], real.stderr[-2000:]
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}", str(lib))
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"][0] == "OD303"
    od303 = next(f for f in rep["findings"] if f["code"] == "OD303")
    assert od303["fix"].startswith("install the torchtext release built for torch 2.13"), \
        od303["fix"]
    assert "built for torch < 2.7" in od303["fix"] and \
        "pip install --no-build-isolation --no-binary torchtext torchtext" in od303["fix"]
    # A library outside any installed distribution keeps the rebuild.
    bare = cli(capsys, "check", "--static", "-f", "json", str(fixture("loader/abi0.so")))
    fix = next(f["fix"] for f in bare.json()["reports"][0]["findings"] if f["code"] == "OD303")
    assert fix.startswith("rebuild with -D_GLIBCXX_USE_CXX11_ABI=1"), fix


def test_a_wheel_file_being_checked_is_rebuilt_not_swapped(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same torchtext 0.18.0 files packed as a wheel file, checked as a CI job checks
    the wheel it built: OD303 and OD304 say to rebuild it (against this torch, with its ABI),
    not to install another release of it."""
    import zipfile

    site = _rp_site("torchtext-0.18.0")
    whl = tmp_path / "torchtext-0.18.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for f in sorted(site.rglob("*")):
            if f.is_file() and f.parts[len(site.parts)].startswith("torchtext"):
                z.write(f, f.relative_to(site).as_posix())
    res = cli(capsys, "check", "--static", "-f", "json", str(whl))
    reports = {r["target"]["path"].rsplit("/", 1)[-1]: r for r in res.json()["reports"]}
    fixes = {f["code"]: f["fix"] for r in reports.values() for f in r["findings"]
             if f["code"] in ("OD303", "OD304")}
    assert set(fixes) == {"OD303", "OD304"}, reports.keys()
    assert fixes["OD303"].startswith("rebuild with -D_GLIBCXX_USE_CXX11_ABI=1"), fixes
    assert fixes["OD304"].startswith("rebuild the extension against torch 2.13"), fixes
    assert not any("release built for torch" in f for f in fixes.values())


@pytest.mark.probe
def test_cuda_build_with_the_old_abi_leads_with_the_build(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """torchvision 0.21.0 from PyPI is a CUDA 12.4 build for torch 2.6, compiled with the old C++
    ABI like every torch 2.6 wheel. Beside torch 2.13.0+cpu the real load stops at a CUDA
    library before any symbol is bound, so the build variant (OD307) leads the verdict and its
    fix (the matching builds) comes first; the ABI (OD303) is the second root, never the
    headline "rebuild with -D_GLIBCXX_USE_CXX11_ABI=1" for a wheel nobody builds. Its _C.so
    alone (no version.py to name +cu124) still gets a CUDA 12 index, not cu130's CUDA 13."""
    site = _rp_site("torchvision-0.21.0")
    so = site / "torchvision" / "_C.so"
    real = run_python("import torch, ctypes, sys; ctypes.CDLL(sys.argv[1])", str(so),
                      timeout=300)
    assert real.returncode != 0 and "libcudart.so.12: cannot open shared object file" in \
        real.stderr, real.stderr[-2000:]
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}",
              "--package", "torchvision", "--cwd", str(tmp_path))
    assert res.code == 1
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD307", "OD303"], diag
    assert "CUDA 12 build" in diag["summary"] and "_GLIBCXX_USE_CXX11_ABI" not in \
        diag["summary"].split("(+1 more)")[0]
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    assert "whl/cu124" in od307["fix"] and "torch==2.6.0" in od307["fix"]
    alone = tmp_path / "_C.so"
    shutil.copy(so, alone)
    res = cli(capsys, "check", "-f", "json", "--static", str(alone))
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"] == ["OD307", "OD303"]
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    assert "CUDA 12" in od307["message"] and "whl/cu126" in od307["fix"], od307


@pytest.mark.probe
def test_plugin_its_package_calls_by_name_is_no_op_library(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """dgl 2.1.0's tensoradapter/pytorch/libtensoradapter_pytorch_<r>.so links torch (it turns
    dgl's arrays into tensors) and registers no operator; libdgl.so dlopens it and looks up
    its C functions by name (``CPURawAlloc`` is a string in libdgl.so's .rodata). Loaded for
    real beside torch, the function is there and torch's registry gains nothing. Statically it
    is a plugin (OD101 info naming libdgl.so), not "links torch but contains no operator
    registration" (an error); the same file alone in a directory still is that error."""
    site = _pip_site("dgl-2.1.0", "dgl")
    lib = site / "dgl/tensoradapter/pytorch/libtensoradapter_pytorch_2.2.0.so"
    assert lib.is_file(), f"{lib} is missing: run `make fixtures`"
    real = run_python("import torch, ctypes, sys\n"
                      "before = set(torch._C._dispatch_get_all_op_names())\n"
                      "lib = ctypes.CDLL(sys.argv[1])\n"
                      "print(bool(lib.CPURawAlloc), "
                      "len(set(torch._C._dispatch_get_all_op_names()) - before))\n",
                      str(lib), timeout=300)
    assert real.stdout.split() == ["True", "0"], real.stderr[-2000:]
    assert b"\0CPURawAlloc\0" in (site / "dgl/libdgl.so").read_bytes()
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    od101 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD101"]
    assert od101 and od101[0]["severity"] == "info", od101
    assert "libdgl.so looks up CPURawAlloc" in od101[0]["message"]
    alone = tmp_path / lib.name
    alone.write_bytes(lib.read_bytes())
    res = cli(capsys, "check", "-f", "json", "--static", str(alone))
    od101 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD101"]
    assert res.code == 1 and od101 and od101[0]["severity"] == "error", od101


@pytest.mark.probe
def test_per_release_libraries_without_the_installed_release(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """dgl 2.1.0 (with its Python dependencies) ships libgraphbolt_pytorch_<r>.so and two more
    library families once per torch release, 2.0.0 … 2.2.1. Beside torch 2.13 its import really
    fails looking for libgraphbolt_pytorch_2.13.0.so: another release (OD324, cause 3), not a
    library path. Its Cython core needs libdgl.so, which no search path finds — but dgl loads
    libdgl.so itself first (ctypes, a computed path), and the real import gets past the core:
    the static "not found" (OD201) stays a note and never heads the verdict (it used to say
    "patchelf"). A directory named dgl in the working directory (a namespace portion) hides
    nothing: no OD502."""
    site = _pip_site("dgl-2.1.0", "dgl")
    (tmp_path / "dgl").mkdir()  # a data directory named like the package, in the cwd
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    real = run_python("import torch, dgl, sys\nprint(sys.modules['dgl._ffi._cy3.core'])\n",
                      env=env, cwd=tmp_path, timeout=300)
    assert real.returncode != 0 and "Cannot find DGL C++ graphbolt library at" in real.stderr \
        and "libgraphbolt_pytorch_2.13.0.so" in real.stderr, real.stderr[-2000:]
    # explain reads the file name: a library named for the running torch release (cause 3)
    said = cli(capsys, "explain", "-f", "json", real.stderr[-3000:]).json()
    assert (said["cause"], said["subcause"]) == (3, "torch.release-named-library-missing"), said
    core = run_python("import torch, sys\ntry:\n    import dgl\nexcept FileNotFoundError:\n"
                      "    pass\nprint('dgl._ffi._cy3.core' in sys.modules)\n", env=env,
                      cwd=tmp_path, timeout=300)
    assert core.stdout.strip() == "True", core.stderr[-2000:]  # the core module did load
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--package", "dgl",
              "--cwd", str(tmp_path))
    assert res.code == 1
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"] == ["OD324"], diag
    assert "OD511" in diag["consequences"]["OD324"]
    found = {f["code"]: f for f in rep["findings"]}
    od324 = found["OD324"]
    assert "2.0.0 … 2.2.1" in od324["message"] and "2.13.0" in od324["message"]
    assert any(e.startswith("dgl/graphbolt/libgraphbolt_pytorch_<r>.so: torch 2.0.0")
               for e in od324["evidence"])
    assert found["OD201"]["severity"] == "info" and "real load found it" in \
        found["OD201"]["message"]
    assert "patchelf" not in diag["summary"] and "OD502" not in found
    # The chain's ctypes.CDLL(lib_path[0]) (a search function computes the path) is unknown
    # statically, not wrong: marked '?', with the library the real import mapped.
    chain = rep["sections"]["import-chain"]
    (cdll,) = [lk for lk in chain["links"] if lk["text"].startswith("ctypes.CDLL(lib_path")]
    assert cdll["unevaluated"] and [os.path.basename(f) for f in cdll["observed"]] == \
        ["libdgl.so"], cdll
    out = io.StringIO()
    text_report._chain(Printer(out, None), chain)
    line = next(ln for ln in out.getvalue().splitlines() if "ctypes.CDLL(lib_path" in ln)
    assert line.lstrip().startswith("? ") and line.endswith("the real import mapped libdgl.so")
    # Without the probe: the package ships libdgl.so and loads a library by a computed path
    # at import, so OD201 is a warning that says so (not a patchelf error); OD324 leads.
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--package", "dgl", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    found = {f["code"]: f for f in rep["findings"]}
    assert found["OD201"]["severity"] == "warning" and found["OD324"]["severity"] == "error"
    assert "probably loads it first" in found["OD201"]["message"]
    assert rep["diagnosis"]["root_findings"] == ["OD324"], rep["diagnosis"]


def _pip_site(name: str, package: str) -> Path:
    """The site `make fixtures` installed real wheels into (build/fixtures/realpkg/<name>,
    the Makefile's pip_site), holding ``package``; skips naming pip's reason when it could
    not."""
    reason = SKIP / f"{name}.txt"
    if reason.exists():
        pytest.skip(f"{name} not installed: {reason.read_text().strip()[:200]}")
    site = FIX / "realpkg" / name / "site"
    assert (site / package).exists(), f"{site} is missing: run `make fixtures`"
    return site


def _npu_site() -> Path:
    return _pip_site("torch-npu-2.13.0", "torch_npu")


@pytest.mark.probe
def test_device_backend_without_its_toolkit_breaks_import_torch(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """torch_npu 2.13.0 (the Ascend backend) declares a torch.backends entry point, so torch
    imports it at the end of `import torch`; without Huawei's CANN toolkit its libraries
    (libhccl.so, libascendcl.so …) are missing and `import torch` itself fails with
    "Failed to load the backend extension: torch_npu", the ImportError as its cause. The
    verdict is the missing toolkit (cause 2, its set_env.sh — not patchelf), with torch's own
    failure a warning beside it (OD513); it was cause 5 on a missing submodule the package
    does have (npu/npugraph_ex) and "torch itself fails to import: the environment is broken"
    (OD320)."""
    site = _npu_site()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    # A fresh interpreter, not the tests' torch zygote: what fails is torch's own import.
    real = subprocess.run([sys.executable, "-c", "import torch"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert real.returncode != 0 and "Failed to load the backend extension: torch_npu" in \
        real.stderr and "libhccl.so: cannot open shared object file" in real.stderr, \
        real.stderr[-2000:]
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--package",
              "torch_npu", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    found = {f["code"]: f for f in rep["findings"]}
    assert res.code == 1 and diag["cause"] == 2 and diag["root_findings"][0] == "OD201", diag
    assert "CANN" in found["OD201"]["fix"] and "set_env.sh" in found["OD201"]["fix"]
    assert "patchelf" not in diag["summary"]
    assert found["OD513"]["severity"] == "warning" and "torch_npu" in found["OD513"]["message"]
    assert not {"OD320", "OD510"} & set(found), sorted(found)
    assert found["OD220"]["message"].startswith("libhccl.so")  # the re-run's real load
    # One finding per missing library, with every library of the package that needs it.
    hccl = [f for f in rep["findings"] if f["code"] == "OD201"
            and f["message"].startswith("libhccl.so ")]
    assert len(hccl) == 1 and "libtorch_npu.so" in hccl[0]["message"] and \
        "_C.cpython-311-x86_64-linux-gnu.so" in hccl[0]["message"], hccl


@pytest.mark.probe
def test_a_broken_device_backend_is_the_verdict_for_any_library_beside_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The reference operator, healthy, in an environment where torch_npu is installed
    without its toolkit: `import torch` fails, so the library cannot be used at all — the
    verdict is the backend that breaks torch's import (OD513, an error), and the library's own
    load (probed again with TORCH_DEVICE_BACKEND_AUTOLOAD=0) is clean. With that variable set
    in the job's environment torch imports and nothing is wrong."""
    site = _npu_site()
    lib = str(BUILD / "myop" / "libmyop.so")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    for autoload, ok in (("1", False), ("0", True)):  # fresh interpreters: torch's own import
        real = subprocess.run([sys.executable, "-c", "import torch"], cwd=tmp_path,
                              env={**env, "TORCH_DEVICE_BACKEND_AUTOLOAD": autoload},
                              capture_output=True, text=True, timeout=300)
        assert (real.returncode == 0) is ok, real.stderr[-2000:]
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", lib)
    rep = res.json()["reports"][0]
    errors = [f["code"] for f in rep["findings"] if f["severity"] == "error"]
    assert res.code == 1 and errors == ["OD513"] and rep["diagnosis"]["cause"] == 5, errors
    od513 = rep["findings"][[f["code"] for f in rep["findings"]].index("OD513")]
    assert "libhccl.so" in od513["message"] and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in od513["fix"]
    assert rep["sections"]["probe"]["outcome"] == "loaded"
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--env",
              "TORCH_DEVICE_BACKEND_AUTOLOAD=0", lib)
    assert res.code == 0, [f["message"] for f in res.json()["reports"][0]["findings"]]


def test_a_cpu_build_is_promised_only_where_pytorch_publishes_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    """torchvision 0.28.0+cu130 beside a CPU torch: its CPU build is on PyTorch's CPU index,
    and the fix says so, with torch pinned at the installed release (survey 12's P11: `pip
    install torchvision` alone picks the newest torchvision, which requires and installs
    another torch — pip's own resolution, below); torch_tensorrt or xformers have none, and
    theirs must not (see the xformers test)."""
    site = _site("torchvision-0.28.0")
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              str(site / "torchvision" / "_C.so"))
    od307 = next(f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD307")
    from importlib.metadata import version

    release = version("torch").split("+")[0]  # the installed torch, without importing it
    assert (f"pip install torchvision 'torch=={release}' --index-url "
            "https://download.pytorch.org/whl/cpu") in od307["fix"], od307["fix"]
    # What the pin does: the torchvision release that requires this torch (its wheel's own
    # Requires-Dist), never a newer torch.
    meta = next(site.glob("torchvision-*.dist-info")) / "METADATA"
    assert f"Requires-Dist: torch (=={release})" in meta.read_text(), meta


def _imports(log: Path, package: str) -> int:
    """How many probes imported ``package`` (plain children, or forks of a zygote)."""
    return sum(1 for line in log.read_text().splitlines()
               if line in (f"package {package}", f"fork: package {package}"))


@pytest.mark.probe
def test_a_directory_walk_imports_each_package_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Checking a site directory checks each library as its package loads it: by importing
    the package. fbgemm-gpu-cpu 1.8.0 has 19 libraries, and each check imported fbgemm_gpu
    again with the same result (PyAV's 49: 102 s). The import now runs once per package and
    command: one probe start, the same outcome in every report, the same verdict as a check
    of one of its libraries alone."""
    site = _rp_site("fbgemm-gpu-cpu-1.8.0")
    log = Path(os.environ["OPDOCTOR_PROBE_LOG"])
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", str(site))
    reports = res.json()["reports"]
    libs = sorted(str(p) for p in (site / "fbgemm_gpu").rglob("*.so"))
    assert len(reports) >= len(libs) >= 10, (len(reports), len(libs))
    assert _imports(log, "fbgemm_gpu") == 1
    assert {r["sections"]["probe"]["outcome"] for r in reports} == {"loaded"}
    one = next(r for r in reports if r["target"]["path"] == libs[0])
    alone = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", libs[0])
    rep = alone.json()["reports"][0]
    assert sorted(f["code"] for f in rep["findings"]) == \
        sorted(f["code"] for f in one["findings"]), (rep["findings"], one["findings"])
    assert _imports(log, "fbgemm_gpu") == 2  # a new command


@pytest.mark.probe
def test_scan_checks_a_packages_libraries_in_one_worker_with_one_import() -> None:
    """`scan --probe` checked each library in its own worker, each importing its package: the
    libraries of one package now go to one worker, which imports the package once for all of
    them (fbgemm-gpu-cpu 1.8.0: 19 libraries, one probe), while other packages' libraries run
    in the other workers. Each library still gets its own report."""
    from opdoctor.facts import CheckOptions
    from opdoctor.targets.discover import ScanItem, scan

    site = _rp_site("fbgemm-gpu-cpu-1.8.0")
    libs = sorted(str(p) for p in (site / "fbgemm_gpu").rglob("*.so"))[:6]
    lone = str(FIX / "realpkg" / "alloc.so")  # a library outside any package: its own probe
    log = Path(os.environ["OPDOCTOR_PROBE_LOG"])
    env = tuple({**os.environ, "PYTHONPATH": str(site)}.items())
    items = [ScanItem(p, "fbgemm_gpu") for p in libs] + [ScanItem(lone, "alloc")]
    got = scan(items, CheckOptions(probe=True, env=env), jobs=2)
    assert [it.path for it, _r in got] == [it.path for it in items]  # in the order given
    reports = [r for _it, r in got]
    assert all(not isinstance(r, str) for r in reports), reports
    starts = [s for s in log.read_text().splitlines() if not s.startswith("zygote ")]
    # (a plain probe's start is logged before its library is sent: "library (path follows)")
    assert _imports(log, "fbgemm_gpu") == 1 and len(starts) == 2, starts
    assert all(r.sections["probe"]["outcome"] == "loaded" for r in reports
               if not isinstance(r, str))


@pytest.mark.probe
def test_a_missing_optional_dependency_is_not_a_consequence_of_the_build_variant(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """torchao 0.18.0 (a CUDA build beside torch 2.13.0+cpu) catches `import triton` in
    torchao.kernel.intmm_triton; triton is another distribution, not installed here. The CUDA
    variant (OD307) is the root of the library failures, but installing a CUDA torch would not
    bring triton: that swallowed import is its own cause-5 finding, not folded under OD307 —
    a note, since torchao does not require triton (an optional part it runs without; it was a
    warning until survey 11's P12)."""
    site = BUILD / "realworld" / "torchao-0.18.0-cuda-ext-on-cpu" / "site"
    if not site.is_dir():
        pytest.skip(f"{site} is missing: `make test` installs it (realworld-small)")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = run_python("import torchao.kernel.intmm", timeout=300, env=env)
    assert real.returncode == 0, real.stderr  # intmm.py's own except: the import goes on
    direct = run_python("import torchao.kernel.intmm_triton", timeout=300, env=env)
    assert direct.returncode != 0 and "No module named 'triton'" in direct.stderr
    res, doc = cli_text_and_json(capsys, tmp_path, "check", "--package", "torchao", "--env",
                                 f"PYTHONPATH={site}")
    rep = doc["reports"][0]
    diag = rep["diagnosis"]
    assert diag["cause"] == 3 and diag["root_findings"][0] == "OD307"
    triton = [f for f in rep["findings"] if f["code"] == "OD512" and "'triton'" in f["message"]]
    assert len(triton) == 1 and triton[0]["severity"] == "info", triton
    assert "another distribution" in triton[0]["message"] and "triton" in triton[0]["fix"]
    assert "(an optional dependency: no unconditional requirement of torchao" in \
        triton[0]["message"]
    folded = [c for fs in diag["consequences"].values() for c in fs]
    assert folded.count("OD512") == sum(1 for f in rep["findings"] if f["code"] == "OD512") - 1
    # The fix names the torch its stable-ABI libraries were compiled against (TORCH_ABI_VERSION
    # 2.13.0), not a phrase inside a pip command.
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    assert "pip install 'torch>=2.13.0' --index-url https://download.pytorch.org/whl/cu130" in \
        od307["fix"], od307["fix"]
    # The probe line says the package tried its library and caught the failure (not "loads it
    # later, or never": its own OD512 shows the load that failed).
    assert "the package tried, the load failed and the package caught it: OD512" in res.out


@pytest.mark.probe
def test_the_chain_line_marks_the_submodule_import_that_failed(
        capsys: pytest.CaptureFixture[str]) -> None:
    """torchrl 0.11's `import torchrl` works; `import torchrl._torchrl` (its extension, which
    the probe imports) fails on a symbol of another torch. The chain line said "✗ import
    torchrl … (raised: import torchrl._torchrl raised …)", as if the package's import failed
    (survey 9 P4); the ✗ is the submodule's now."""
    site = BUILD / "realworld" / "torchrl-0.11.0" / "site"
    if not (site / "torchrl").is_dir():
        pytest.skip("make realworld-small installs torchrl-0.11.0")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = run_python("import torch, torchrl\nprint('import torchrl: ok')\n"
                      "try:\n    import torchrl._torchrl\nexcept ImportError as e:\n"
                      "    print('import torchrl._torchrl:', e)\n", env=env)
    assert real.stdout.startswith("import torchrl: ok\nimport torchrl._torchrl: "), real.stderr
    assert "undefined symbol" in real.stdout
    res = cli(capsys, "check", "--env", f"PYTHONPATH={site}", "--package", "torchrl")
    line = next(x for x in res.out.splitlines() if x.startswith("import chain:"))
    assert line.startswith("import chain: ✗ import torchrl._torchrl raised ImportError:"), line


@pytest.mark.probe
def test_exact_pin_installed_at_another_release(capsys: pytest.CaptureFixture[str]) -> None:
    """pydantic 2.14.4 pins pydantic-core==2.50.5 (its METADATA); installed beside
    pydantic-core 2.27.2, its import really refuses the pair. The verdict is cause 3 — OD327
    naming the pin, the installed release and the pip command for that directory — with the
    failed import as its consequence (it was cause 5, "read the exception"). Without the probe
    the same finding is a warning. The venv's own pydantic, a pair pip resolved, has none."""
    site = _pip_site("pydantic-pin", "pydantic")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import pydantic", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.returncode != 0
    assert "The installed pydantic-core version (2.27.2) is incompatible" in real.stderr
    # explain reads the real traceback the same way (it was the generic "version words")
    said = cli(capsys, "explain", "--format", "json", real.stderr).json()
    assert said["cause"] == 3 and said["codes"] == ["OD327"], said
    for extra, severity in (([], "error"), (["--static"], "warning")):
        res = cli(capsys, "check", "-f", "json", *extra, "--package", "pydantic",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        rep = res.json()["reports"][0]
        od327 = [f for f in rep["findings"] if f["code"] == "OD327"]
        assert len(od327) == 1 and od327[0]["severity"] == severity, rep["findings"]
        assert od327[0]["message"] == (f"pydantic 2.14.4 requires pydantic-core==2.50.5; "
                                       f"pydantic-core 2.27.2 is installed ({site})")
        assert od327[0]["fix"].startswith(
            f"pip install --no-deps --upgrade --target {site} 'pydantic-core==2.50.5'")
        if severity == "error":
            assert res.code == 1 and rep["diagnosis"]["cause"] == 3, rep["diagnosis"]
            assert rep["diagnosis"]["consequences"] == {"OD327": ["OD511"]}
    ok = run_python("import pydantic, pydantic_core; print(pydantic.VERSION)", env=env,
                    timeout=120)
    assert ok.returncode == 0, ok.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "pydantic")
    # A pure-Python package with nothing wrong: the OD415 note alone, no OD327.
    doc = res.json()
    assert res.code == 0 and not doc["errors"], res.out[-800:]
    assert [(f["code"], f["severity"]) for f in doc["reports"][0]["findings"]] == [
        ("OD415", "info")]


@pytest.mark.probe
def test_requirement_the_package_names_in_its_own_words(capsys: pytest.CaptureFixture[str]) -> None:
    """jax 0.10.2 installed without its requirements: its import really raises its own
    ModuleNotFoundError, "jax requires jaxlib to be installed" (from "No module named
    'jaxlib'", which only the chained traceback shows). The
    message names a requirement of jax's distribution that is not installed, so the fix is
    that requirement with the specifier jax's METADATA gives it (it was "read the
    exception")."""
    site = _pip_site("jax-0.10.2", "jax")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import jax", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.returncode != 0
    assert "ModuleNotFoundError: jax requires jaxlib to be installed" in real.stderr
    # the exception raised is jax's own words; "No module named 'jaxlib'" is only its cause
    assert real.stderr.strip().splitlines()[-1].startswith(
        "ModuleNotFoundError: jax requires jaxlib")
    meta = next(site.glob("jax-0.10.2.dist-info")) / "METADATA"
    assert "Requires-Dist: jaxlib<=0.10.2,>=0.10.1" in meta.read_text().splitlines()
    res = cli(capsys, "check", "-f", "json", "--package", "jax",
              "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    rep = res.json()["reports"][0]
    od511 = [f for f in rep["findings"] if f["code"] == "OD511"]
    assert res.code == 1 and od511, rep["findings"]
    assert od511[0]["fix"].startswith("pip install 'jaxlib<=0.10.2,>=0.10.1' (jax-0.10.2 "
                                      "requires it"), od511[0]["fix"]


@pytest.mark.probe
def test_numpy1_build_beside_numpy2(capsys: pytest.CaptureFixture[str]) -> None:
    """numexpr 2.8.7 was built against NumPy 1.x; beside the venv's NumPy 2 its import really
    fails in NumPy's own import_array() ("A module that was compiled using NumPy 1.x cannot be
    run in NumPy 2.x", "numpy.core.multiarray failed to import"). The verdict is cause 3 —
    OD328 naming the NumPy 1.x headers (read from the module's .rodata) and the installed
    NumPy, with the failed import as its consequence (it was cause 5 with a cause-3 reading
    in the fix) — and `--static`, which never imports it, says the same. explain reads the
    real traceback as the same code."""
    site = _pip_site("numexpr-2.8.7", "numexpr")
    ext = next(site.glob("numexpr/interpreter.cpython-*.so"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import numpy; print(numpy.__version__); import numexpr",
                      env={**env, "PYTHONPATH": str(site)}, timeout=120)
    numpy_version = real.stdout.split()[0]
    assert real.returncode != 0 and numpy_version.startswith("2."), real.stdout
    assert "compiled using NumPy 1.x cannot be run in" in real.stderr
    assert "ImportError: numpy.core.multiarray failed to import" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "numexpr",
              "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD328"], rep["diagnosis"]
    assert rep["diagnosis"]["cause"] == 3
    assert rep["diagnosis"]["consequences"] == {"OD328": ["OD511"]}
    od328 = next(f for f in rep["findings"] if f["code"] == "OD328")
    assert od328["message"] == (f"built against NumPy 1.x's C API; numpy {numpy_version} is "
                                "installed, which refuses it")
    assert "imports numpy.core._multiarray_umath and not numpy._core" in od328["evidence"][0]
    # the package is a --target copy on PYTHONPATH: its upgrade goes there (survey 20: `pip
    # install --upgrade h5py` upgraded the venv's hidden, good copy instead)
    assert f"pip install --no-deps --upgrade --target {site} numexpr" in od328["fix"], \
        od328["fix"]
    assert "'numpy<2'" in od328["fix"]
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(ext))
    od328 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD328"]
    assert res.code == 1 and od328 and od328[0]["severity"] == "error"
    assert od328[0]["message"].endswith("which refuses it (its import fails)")
    said = cli(capsys, "explain", "--format", "json", real.stderr).json()
    assert said["cause"] == 3 and said["codes"] == ["OD328"], said


def _ml_dtypes_under_numpy1() -> tuple[Path, Path, dict[str, str]]:
    """The site with ml_dtypes 0.7.0 and numpy 1.26.4, its extension module, and an
    environment without the caller's PYTHONPATH."""
    site = _pip_site("ml_dtypes-numpy1", "ml_dtypes")
    ext = next(site.glob("ml_dtypes/_ml_dtypes_ext.cpython-*.so"))
    return site, ext, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_a_numpy2_build_for_a_newer_c_api_under_numpy1_is_read_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ml_dtypes 0.7.0 is built with NumPy 2's headers for NumPy 2.0's C API (the module's
    own refusal message names the target: "… (NumPy 2.0) but the running NumPy …"); under
    numpy 1.26.4 its import really fails. `--static` was a warning on the requirement pin
    (exit 0; survey 20, TensorFlow under NumPy 1.26); it is OD328, an error, with the NumPy
    upgrade where that copy is. Beside NumPy 2 (the venv's) it is clean; a package that
    imports such a module only under NumPy 2 (h5py's _npystrings) gets a note, not an
    error — its import works."""
    site, ext, env = _ml_dtypes_under_numpy1()
    real = run_python("import numpy; print(numpy.__version__); import ml_dtypes",
                      env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.returncode != 0 and real.stdout.split()[0] == "1.26.4", real.stdout
    assert "module was compiled against NumPy C-API version 0x12 (NumPy 2.0) but the running " \
           "NumPy has C-API version 0x11" in real.stderr, real.stderr[-2000:]
    for target in (["--package", "ml_dtypes"], [str(ext)]):
        res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
                  "--cwd", str(tmp_path), *target)
        rep = res.json()["reports"][0]
        od328 = [f for f in rep["findings"] if f["code"] == "OD328"]
        assert res.code == 1 and od328 and od328[0]["severity"] == "error", rep["findings"]
        assert rep["diagnosis"]["root_findings"] == ["OD328"], rep["diagnosis"]
        assert od328[0]["message"] == ("built for NumPy 2.0's C API and later; numpy 1.26.4 "
                                       "is installed, which is older: NumPy refuses it (its "
                                       "import fails)")
        assert "for NumPy 2.0's C API and later" in od328[0]["evidence"][0]
        assert od328[0]["fix"].startswith(f"pip install --no-deps --upgrade --target {site} "
                                          "'numpy>=2.0'"), od328[0]["fix"]
    # beside the venv's NumPy 2: the same module works and nothing is said
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("ml_dtypes", "ml_dtypes-0.7.0.dist-info"):
        shutil.copytree(site / name, alone / name)
    works = run_python("import ml_dtypes, numpy; print(ml_dtypes.bfloat16(1.5) * 2)",
                       env={**env, "PYTHONPATH": str(alone)}, timeout=120)
    assert works.returncode == 0 and works.stdout.strip() == "3", works.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={alone}",
              "--cwd", str(tmp_path), "--package", "ml_dtypes")
    assert res.code == 0 and "OD328" not in res.out, res.out[-2000:]
    # a package that imports the module only under NumPy 2: its import works under 1.26
    cond = tmp_path / "cond"
    (cond / "condnp").mkdir(parents=True)
    shutil.copy(ext, cond / "condnp" / ext.name)
    (cond / "condnp" / "__init__.py").write_text(
        "import numpy\nif int(numpy.__version__.split('.')[0]) >= 2:\n"
        "    from . import _ml_dtypes_ext\n")
    path = os.pathsep.join([str(cond), str(site)])
    ok = run_python("import condnp, sys; print('condnp._ml_dtypes_ext' in sys.modules)",
                    env={**env, "PYTHONPATH": path}, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip() == "False", ok.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={path}",
              "--cwd", str(tmp_path), "--package", "condnp")
    od328 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD328"]
    assert res.code == 0 and [f["severity"] for f in od328] == ["info"], od328
    assert "`import condnp` does not import it" in od328[0]["message"]


@pytest.mark.probe
def test_a_numpy2_build_for_a_newer_c_api_leads_the_failed_import(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the probe: ml_dtypes' import under numpy 1.26.4 ends in "SystemError: … returned
    a result with an exception set" after NumPy's refusal; OD328 is the root and the failed
    import and the requirement pin its consequences (the refusal was read as "the import
    fails earlier, on another error", a warning, under an OD327 root)."""
    site, _ext, _env = _ml_dtypes_under_numpy1()
    res = cli(capsys, "check", "-f", "json", "--package", "ml_dtypes", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD328"], rep["diagnosis"]
    assert sorted(rep["diagnosis"]["consequences"]["OD328"]) == ["OD327", "OD511"]
    od328 = next(f for f in rep["findings"] if f["code"] == "OD328")
    assert od328["severity"] == "error" and "earlier" not in od328["message"]


@pytest.mark.probe
def test_numpy1_builds_do_not_explain_an_import_that_fails_on_something_else(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MindSpore 2.10 (a NumPy-1 library inside) under protobuf 3.20.3 on PYTHONPATH: its
    import fails on "cannot import name 'runtime_version' from 'google.protobuf'"; the verdict
    was OD328 (NumPy), the import's failure "a consequence of OD328" (survey 20's re-run).
    Here numexpr 2.8.7 (built for NumPy 1.x) whose import fails on a missing module before it
    reaches NumPy: OD328 stays a warning and explains nothing; the import's own failure leads."""
    site = tmp_path / "site"
    shutil.copytree(_pip_site("numexpr-2.8.7", "numexpr"), site)
    init = site / "numexpr" / "__init__.py"
    init.write_text("import absent_module_xyz\n" + init.read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import numexpr", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert "No module named 'absent_module_xyz'" in real.stderr, real.stderr[-1500:]
    assert "NumPy 1.x" not in real.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "numexpr", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    od328 = [f for f in rep["findings"] if f["code"] == "OD328"]
    assert od328 and od328[0]["severity"] == "warning", od328
    assert "OD328" not in rep["diagnosis"]["root_findings"], rep["diagnosis"]
    assert "OD328" not in rep["diagnosis"]["consequences"], rep["diagnosis"]


def test_bounds_that_meet_are_an_exact_pin(tmp_path: Path) -> None:
    """jax pins its jaxlib as `jaxlib<=0.4.38,>=0.4.38` (survey 11's P7: jax 0.4.38 beside
    jaxlib 0.4.36 failed at run time with "jaxlib is version 0.4.36, but this version of jax
    requires version >= 0.4.38" and got the generic cause 5). Bounds that meet are one
    release; a range is not, nor a pin PEP 440 equality satisfies (a local label, zeros)."""
    from opdoctor.facts.requires import exact_pin, pinned_elsewhere

    assert exact_pin("<=0.4.38,>=0.4.38") == exact_pin(">=0.4.38,<=0.4.38") == "0.4.38"
    assert exact_pin("==2.50.5") == "2.50.5" and exact_pin("<=0.10.2,>=0.10.1") == ""
    assert exact_pin(">=1") == "" and exact_pin("==1,!=2") == ""
    site = tmp_path / "site"
    for dist, meta in (("jaxlike-0.4.38", "Requires-Dist: corelike<=0.4.38,>=0.4.38\n"
                                          "Requires-Dist: other==1.0\nRequires-Dist: torch==2.9"),
                       ("corelike-0.4.36", ""), ("other-1.0.0+cpu", ""), ("torch-2.13.0", "")):
        info = site / f"{dist}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Name: {dist.rsplit('-', 1)[0]}\n{meta}\n")
    # corelike is the other release; other==1.0 holds for 1.0.0+cpu; torch's pin is the
    # binary checks' (left out)
    assert pinned_elsewhere(str(site / "jaxlike-0.4.38.dist-info"), [str(site)]) == [
        ("corelike", "0.4.38", "0.4.36", str(site), "<=0.4.38,>=0.4.38")]


@pytest.mark.probe
def test_a_package_with_numpy1_modules_beside_the_one_checked(
        capsys: pytest.CaptureFixture[str]) -> None:
    """pandas 2.1.4 (NumPy 1.x builds) beside NumPy 2: `import pandas` really fails in
    Cython's check of numpy.dtype's size. The library `--package pandas` checks is not the
    one that fails, and the failure's text is not NumPy's ABI message — the package's compiled
    modules are read for their NumPy headers (survey 11's P1/P5: sklearn, matplotlib, h5py,
    cv2, pyarrow 14 were cause 5 or clean), with and without the probe: cause 3, OD328 naming
    the modules, the failed import its consequence."""
    site = _pip_site("pandas-2.1.4", "pandas")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import pandas", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.returncode != 0
    assert "numpy.dtype size changed, may indicate binary incompatibility" in real.stderr
    for extra in ([], ["--static"]):
        res = cli(capsys, "check", "-f", "json", *extra, "--package", "pandas",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        rep = res.json()["reports"][0]
        assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD328"], rep["diagnosis"]
        od328 = next(f for f in rep["findings"] if f["code"] == "OD328")
        # the library the check picks is one of them (the probe saw where the import failed)
        # or the package reading names them
        assert od328["severity"] == "error" and (
            od328["subject"].startswith(str(site / "pandas" / "_libs")) or
            "compiled module(s) of pandas built against NumPy 1.x's C API (pandas/_libs/"
            in od328["message"]), od328
        assert f"pip install --no-deps --upgrade --target {site} pandas" in od328["fix"]
        # pandas 2.1.4 requires numpy<2 on this Python: the same pairing, under OD328
        if not extra:
            assert rep["diagnosis"]["consequences"] == {"OD328": ["OD511", "OD327"]}
        else:
            assert rep["diagnosis"]["consequences"] == {"OD328": ["OD327"]}
    # A module of the package that holds no NumPy code (byteswap.so) checked by its path: its
    # report still says that the package's other modules are NumPy 1.x builds.
    lib = next(site.glob("pandas/_libs/byteswap.cpython-*.so"))
    from opdoctor.facts.core import read_elf
    from opdoctor.facts.numpyabi import numpy_build
    assert read_elf(str(lib), numpy_build, None) is None
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(lib))
    rep = res.json()["reports"][0]
    od328 = [f for f in rep["findings"] if f["code"] == "OD328"]
    olds = [f for f in site.glob("pandas/**/*.so")
            if (b := read_elf(str(f), numpy_build, None)) is not None and b.major == 1]
    assert res.code == 1 and od328 and od328[0]["message"].startswith(
        f"{len(olds)} compiled module(s) of pandas built against NumPy 1.x's C API "
        "(pandas/_libs/"), od328


@pytest.mark.probe
def test_a_system_library_looked_up_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    """sounddevice 0.5.1 looks PortAudio up with ctypes.util.find_library; where PortAudio is
    not installed its import raises its own "OSError: PortAudio library not found" (survey
    11's P11: explain read it as cause 3, the check said "read the exception"). explain: cause
    2 with the system package first; the check's fix names the same package."""
    import ctypes.util

    if ctypes.util.find_library("portaudio"):
        pytest.skip("PortAudio is installed here: sounddevice imports")
    site = _pip_site("sounddevice-0.5.1", "sounddevice.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import sounddevice", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.stderr.strip().splitlines()[-1] == "OSError: PortAudio library not found"
    said = cli(capsys, "explain", "--format", "json", real.stderr).json()
    assert said["cause"] == 2 and said["codes"] == ["OD201"], said
    assert said["next_steps"][0].startswith("apt-get install libportaudio2   # Debian/Ubuntu")
    res = cli(capsys, "check", "-f", "json", "--package", "sounddevice",
              "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    od511 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD511"]
    assert res.code == 1 and od511 and "apt-get install libportaudio2" in od511[0]["fix"]


@pytest.mark.probe
def test_a_pinned_release_whose_libraries_are_not_found(
        capsys: pytest.CaptureFixture[str]) -> None:
    """PyMuPDF 1.24.9 pins PyMuPDFb==1.24.9, whose libmupdf.so.24.8 its extension NEEDs;
    beside PyMuPDFb 1.24.8 (which installs libmupdf.so.24.4) the import really fails with the
    loader's "libmupdf.so.24.8: cannot open shared object file". That "not found" is the pin's
    consequence: cause 3, OD327 the root with the pinned release to install — it was cause 2
    with a patchelf fix (survey 11's P6)."""
    site = _pip_site("pymupdf-pin", "pymupdf")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import pymupdf", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert "libmupdf.so.24.8: cannot open shared object file" in real.stderr, real.stderr[-500:]
    assert (site / "pymupdf" / "libmupdf.so.24.4").is_file()
    res = cli(capsys, "check", "-f", "json", "--package", "pymupdf",
              "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert res.code == 1 and diag["cause"] == 3 and diag["root_findings"] == ["OD327"], diag
    assert "OD201" in diag["consequences"]["OD327"]
    od327 = next(f for f in rep["findings"] if f["code"] == "OD327")
    assert "'PyMuPDFb==1.24.9'" in od327["fix"] and "patchelf" not in diag["summary"]


@pytest.mark.probe
def test_a_range_whose_installed_release_ships_another_soname_leads(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """tilelang 0.1.15 requires z3-solver<4.15.5,>=4.13.0 and its library NEEDs libz3.so.4.15
    (RUNPATH ../../z3/lib); beside z3-solver 5.4, which installs libz3.so.5.4 there, the import
    fails "libz3.so.4.15: cannot open shared object file". The headline was cause 2 with an
    RPATH fix and OD327 a warning below it (survey 19): a range (not a pin) is now the root when
    the import's load missed a library the installed release ships under another version."""
    site = tmp_path / "site"
    lib = site / "zed" / "lib"
    lib.mkdir(parents=True)
    src = tmp_path / "zed.c"
    src.write_text("int zed_version(void) { return 5; }\n")
    for soname, where in (("libzed.so.4.15", tmp_path), ("libzed.so.5.4", lib)):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", str(src), "-o",
                        str(where / soname)], check=True)
    (tmp_path / "libzed.so").symlink_to(tmp_path / "libzed.so.4.15")
    pkg = site / "tilepkg"
    pkg.mkdir()
    ext = tmp_path / "ext.c"
    ext.write_text("#include <Python.h>\nint zed_version(void);\n"
                   "static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_ext\", 0, -1, 0};\n"
                   "PyMODINIT_FUNC PyInit__ext(void) { zed_version(); "
                   "return PyModule_Create(&m); }\n")
    import sysconfig
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run(["gcc", "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"], str(ext),
                    "-o", str(pkg / f"_ext{suffix}"), "-L", str(tmp_path), "-lzed",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../zed/lib"], check=True)
    (pkg / "__init__.py").write_text("from . import _ext\n")
    dist_info(site, "tilepkg", "0.1", ["tilepkg/__init__.py", f"tilepkg/_ext{suffix}"],
              requires=("zed-solver<4.16,>=4.13",))
    dist_info(site, "zed-solver", "5.4", ["zed/lib/libzed.so.5.4"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    real = subprocess.run([sys.executable, "-c", "import tilepkg"], cwd=tmp_path, text=True,
                          capture_output=True, env={**env, "PYTHONPATH": str(site)}, timeout=60)
    assert "libzed.so.4.15: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "tilepkg",
              "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert res.code == 1 and diag["cause"] == 3 and diag["root_findings"] == ["OD327"], diag
    od327 = next(f for f in rep["findings"] if f["code"] == "OD327")
    assert od327["severity"] == "error" and "'zed-solver<4.16,>=4.13'" in od327["fix"], od327
    assert "zed-solver 5.4 installs: libzed.so.5.4" in od327["evidence"], od327
    assert {"OD201", "OD220"} & set(diag["consequences"]["OD327"]), diag
    # The release it accepts: clean.
    (lib / "libzed.so.5.4").rename(lib / "libzed.so.4.15")
    shutil.rmtree(site / "zed_solver-5.4.dist-info")
    dist_info(site, "zed-solver", "4.15", ["zed/lib/libzed.so.4.15"])
    res = cli(capsys, "check", "-f", "json", "--package", "tilepkg",
              "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    assert res.code == 0, res.json()["reports"][0]["findings"]


@pytest.mark.probe
def test_a_cuda_build_at_import_beside_a_cpu_torch_says_so(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """exllamav3 1.6.5 compiles its CUDA kernels when imported; without a toolkit it dies on
    torch.utils.cpp_extension's "CUDA_HOME environment variable is not set". The fix said to
    look for nvcc only, and never that this torch is a CPU-only build, with which a toolkit
    alone builds nothing usable (survey 19). (The stand-in raises torch's message itself:
    this machine has a toolkit.)"""
    import torch

    if torch.version.cuda is not None:
        pytest.skip("torch here is a CUDA build")
    site = tmp_path / "site"
    (site / "jitpkg").mkdir(parents=True)
    (site / "jitpkg" / "__init__.py").write_text(
        "import torch\nraise OSError('CUDA_HOME environment variable is not set. Please set "
        "it to your CUDA install root.')\n")
    dist_info(site, "jitpkg", "1.0", ["jitpkg/__init__.py"], requires=("torch",))
    res = cli(capsys, "check", "-f", "json", "--package", "jitpkg",
              "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    od511 = next(f for f in rep["findings"] if f["code"] == "OD511")
    assert "CUDA_HOME environment variable is not set" in od511["message"], od511
    assert "which nvcc" in od511["fix"] and \
        f"the installed torch {torch.__version__} is a CPU-only build" in od511["fix"], od511


@pytest.mark.probe
def test_a_partial_install_of_a_requirement_is_named(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """requests 2.32.3 with urllib3 2.2.3, one of urllib3's modules deleted (util/retry.py):
    `import requests` really fails with "No module named 'urllib3.util.retry'", and the check
    of requests said only that (OD511; survey 11's P9). urllib3's RECORD lists the file: the
    root is that distribution's partial install (OD508) with its reinstall. The intact copy
    has no OD508."""
    site = tmp_path / "site"
    shutil.copytree(_pip_site("requests-2.32.3", "requests"), site, symlinks=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def check() -> dict:  # type: ignore[type-arg]
        res = cli(capsys, "check", "-f", "json", "--package", "requests",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
        return res.json()["reports"][0]  # type: ignore[no-any-return]

    ok = run_python("import requests; print(requests.Request('GET', 'http://x/').prepare().url)",
                    env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip() == "http://x/", ok.stderr
    assert "OD508" not in {f["code"] for f in check()["findings"]}
    (site / "urllib3" / "util" / "retry.py").unlink()
    real = run_python("import requests", env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert real.stderr.strip().splitlines()[-1] == \
        "ModuleNotFoundError: No module named 'urllib3.util.retry'"
    rep = check()
    assert rep["diagnosis"]["root_findings"] == ["OD508"], rep["diagnosis"]
    assert rep["diagnosis"]["consequences"] == {"OD508": ["OD511"]}
    od508 = next(f for f in rep["findings"] if f["code"] == "OD508")
    assert od508["subject"] == "urllib3 2.2.3" and "missing: urllib3/util/retry.py" in \
        od508["evidence"]
    assert od508["fix"].startswith("pip install --force-reinstall --no-deps --upgrade --target "
                                   f"{site} 'urllib3==2.2.3'"), od508["fix"]


@pytest.mark.probe
def test_a_requirement_outside_the_range_the_package_accepts(
        capsys: pytest.CaptureFixture[str]) -> None:
    """numba 0.60.0 requires numpy<2.1,>=1.22; beside the venv's NumPy 2.4 its import refuses
    it ("Numba needs NumPy 2.0 or less"), and the check said cause 5, "read the exception"
    (full) or nothing about NumPy (static; survey 12's P4). OD327 reads ranges as well as
    exact pins (facts/pep440.py): cause 3 with the import's failure its consequence;
    statically a warning. llvmlite, missing too, is the failure that comes next (OD514: a
    warning beside the probe's failure, an error statically)."""
    site = _pip_site("numba-0.60.0", "numba")
    env = {"PYTHONPATH": str(site)}
    failed = run_python("import numba", env=env, timeout=120)
    assert failed.returncode != 0 and "Numba needs NumPy 2.0 or less" in failed.stderr, \
        failed.stderr[-600:]
    want = f"numba 0.60.0 requires numpy<2.1,>=1.22; numpy {version('numpy')} is installed"
    for mode, severity in (((), "error"), (("--static",), "warning")):
        res = cli(capsys, "check", "-f", "json", *mode, "--package", "numba",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        rep = res.json()["reports"][0]
        od327 = [f for f in rep["findings"] if f["code"] == "OD327"]
        assert len(od327) == 1 and od327[0]["message"].startswith(want), rep["findings"]
        assert od327[0]["severity"] == severity
        assert od327[0]["fix"].startswith("pip install 'numpy<2.1,>=1.22'")
        # NumPy 2.4 is above the range: a newer numba may accept it
        assert "`pip install --upgrade numba` lets pip choose one" in od327[0]["fix"]
        od514 = {f["severity"] for f in rep["findings"] if f["code"] == "OD514"}
        if severity == "error":
            assert res.code == 1 and rep["diagnosis"]["cause"] == 3, rep["diagnosis"]
            assert "OD511" in rep["diagnosis"]["consequences"]["OD327"]
            assert od514 == {"warning"}  # the import stopped earlier: it comes next
        else:
            # statically nothing says which comes first: llvmlite is missing all the same
            assert res.code == 1 and od514 == {"error"}, rep["findings"]


@pytest.mark.probe
def test_a_musl_build_on_a_glibc_system_is_the_build_not_a_search_path(
        capsys: pytest.CaptureFixture[str]) -> None:
    """bcrypt 5.0.0's musllinux wheel on this glibc system: its import fails with
    "libc.musl-x86_64.so.1: cannot open shared object file", and the verdict was cause 2
    with a patchelf / LD_LIBRARY_PATH fix that cannot work (survey 12's P3). OD417: the file
    links musl's C library; the fix installs the manylinux wheel. The check of the library
    itself says the same; the glibc build of the same release is not reported."""
    site = _pip_site("bcrypt-musl", "bcrypt")
    failed = run_python("import bcrypt", env={"PYTHONPATH": str(site)}, timeout=120)
    assert "libc.musl-x86_64.so.1: cannot open shared object file" in failed.stderr, \
        failed.stderr[-600:]
    for mode in ((), ("--static",)):
        res = cli(capsys, "check", "-f", "json", *mode, "--package", "bcrypt",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        rep = res.json()["reports"][0]
        assert res.code == 1 and rep["diagnosis"]["cause"] == 4, rep["diagnosis"]
        assert [f["code"] for f in rep["findings"] if f["severity"] == "error"] == ["OD417"]
        od417 = next(f for f in rep["findings"] if f["code"] == "OD417")
        assert "bcrypt-5.0.0.dist-info/WHEEL: Tag: cp39-abi3-musllinux_1_2_x86_64" in \
            od417["evidence"]
        assert od417["fix"].startswith("Install the build for this system: pip install "
                                       "--force-reinstall --no-deps 'bcrypt==5.0.0'")
        assert not [f for f in rep["findings"] if f["code"] in ("OD201", "OD220")]
    res = cli(capsys, "check", "--static", str(site / "bcrypt" / "_bcrypt.abi3.so"))
    assert res.code == 1 and "OD417 built for musl libc" in res.out
    # the release's manylinux build, in the venv's own environment: no OD417
    glibc = _pip_site("bcrypt-glibc", "bcrypt")
    ok = run_python("import bcrypt; print(bcrypt.checkpw(b'a', bcrypt.hashpw(b'a', "
                    "bcrypt.gensalt(4))))", env={"PYTHONPATH": str(glibc)}, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip() == "True", ok.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "bcrypt",
              "--env", f"PYTHONPATH={glibc}", "--cwd", str(glibc.parent))
    assert res.code == 0 and "OD417" not in res.out, res.out[-600:]


@pytest.mark.probe
@pytest.mark.parametrize(("site_name", "package", "built", "code", "works"), [
    ("orjson-aarch64", "orjson", "aarch64", "OD418", False),
    ("orjson-win", "orjson", "Windows", "OD418", False),
    ("msgpack-musl", "msgpack", "musl libc", "OD418", True),
    ("msgpack-py310", "msgpack", "CPython 3.10", "OD503", True),
    # imported as `from regex import _regex` (an absolute import of its own submodule)
    ("regex-py312", "regex", "CPython 3.12", "OD503", False),
])
def test_a_wheel_for_another_platform_or_python_says_which(
        capsys: pytest.CaptureFixture[str], site_name: str, package: str, built: str,
        code: str, works: bool) -> None:
    """Wheels installed with pip's --platform / --python-version (survey 12's P6, P10): the
    extension's file names say what they were built for. Another CPU, OS or C library is
    OD418 (cause 4), another Python OD503; the fix reinstalls the distribution's release with
    this machine's pip (it was "rebuild with `pip install --force-reinstall .`" for all of
    them), into the directory the copy is in. A package that catches the failed import and
    runs its pure-Python fallback (msgpack) works: a warning, not an error beside a note
    saying nothing is lost, and no "no compiled library" note for a package whose .pyd is
    right there."""
    site = _pip_site(site_name, package)
    real = run_python(f"import {package}", env={"PYTHONPATH": str(site)}, timeout=120)
    assert (real.returncode == 0) is works, real.stderr[-600:]
    version = next(site.glob(f"{package}-*.dist-info")).name.split("-")[1].removesuffix(
        ".dist")
    res = cli(capsys, "check", "-f", "json", "--package", package,
              "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    rep = res.json()["reports"][0]
    found = [f for f in rep["findings"] if f["code"] == code]
    assert len(found) == 1, rep["findings"]
    assert f", built for {built} (this interpreter imports" in found[0]["message"]
    # into the --target directory the copy is in (a plain reinstall lands in the venv,
    # behind it on sys.path: survey 23's V3)
    assert found[0]["fix"].startswith(f"pip install --force-reinstall --no-deps --upgrade "
                                      f"--target {site} '{package}=={version}'"), found[0]["fix"]
    assert found[0]["severity"] == ("warning" if works else "error")
    codes = {f["code"] for f in rep["findings"]}
    assert "OD415" not in codes and "OD512" not in codes, rep["findings"]
    if works:
        assert res.code == 0
    else:
        assert res.code == 1 and rep["diagnosis"]["cause"] == int(code[2]), rep["diagnosis"]
        assert rep["diagnosis"]["consequences"][code] == ["OD511"], rep["diagnosis"]
    static = cli(capsys, "check", "-f", "json", "--static", "--package", package,
                 "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
    assert code in {f["code"] for f in static.json()["reports"][0]["findings"]}


@pytest.mark.probe
def test_a_truncated_library_of_a_package_keeps_its_report_in_package_mode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W7: fbgemm-gpu-cpu 1.8.0 with fbgemm_gpu_py.so cut to 60 %: its import dies
    of SIGBUS. `--package fbgemm_gpu` gave 18 reports — none for the cut file (its dynamic
    section unreadable, it did not count as a library that links torch) — and in each an
    OD124 "SIGBUS while loading the library" under registration. Now the cut file has its
    report, OD406, and the other reports' SIGBUS folds under their OD508 (the changed file)."""
    from tests.test_pyreg import site as pyreg_site

    site = tmp_path / "site"
    shutil.copytree(pyreg_site("fbgemm-gpu-cpu-1.8.0"), site, symlinks=True)
    cut = site / "fbgemm_gpu" / "fbgemm_gpu_py.so"
    with open(cut, "r+b") as fh:
        fh.truncate(cut.stat().st_size * 6 // 10)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import torch, fbgemm_gpu", env={**env, "PYTHONPATH": str(site)},
                      timeout=180)
    assert real.returncode == -7, (real.returncode, real.stderr[-1500:])  # SIGBUS
    res = cli(capsys, "check", "-f", "json", "--package", "fbgemm_gpu", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    reps = res.json()["reports"]
    mine = [r for r in reps if r["target"]["path"] == str(cut)]
    assert res.code == 1 and len(mine) == 1, [r["target"]["path"] for r in reps]
    assert mine[0]["diagnosis"]["root_findings"] == ["OD406"], mine[0]["diagnosis"]
    for rep in reps:
        od124 = [f for f in rep["findings"] if f["code"] == "OD124"]
        if od124 and rep is not mine[0]:
            assert "OD124" in rep["diagnosis"]["consequences"].get("OD508", []), \
                rep["diagnosis"]


def test_a_module_of_another_python_renamed_for_this_one_is_that_pythons_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W6: a CPython 3.12 module renamed to this interpreter's suffix (ctranslate2
    4.8.5's _ext) was only "RECORD: 1 missing". regex 2026.12.2's cp312 build renamed so: the
    real interpreter imports it and it is silently wrong (`regex.match('a+', 'aaa')` is None).
    The distribution's WHEEL tags (cp312-cp312-…) say whose build it is: OD503, with the
    reinstall of the cp311 wheel into the directory it is in; the RECORD line folds under it."""
    site = tmp_path / "site"
    shutil.copytree(_pip_site("regex-py312", "regex"), site, symlinks=True)
    (old,) = site.glob("regex/_regex.cpython-312-*.so")
    old.rename(site / "regex" / old.name.replace("cpython-312", "cpython-311"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import re, regex; print(repr(regex.match('a+', 'aaa')), "
                      "re.match('a+', 'aaa').span())", env={**env, "PYTHONPATH": str(site)},
                      timeout=120)
    assert real.returncode != 0 or real.stdout.split()[0] == "None", (real.stdout, real.stderr)
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "regex", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD503"], rep["diagnosis"]
    od503 = next(f for f in rep["findings"] if f["code"] == "OD503")
    assert "installed from a wheel for CPython 3.12" in od503["message"], od503["message"]
    assert od503["fix"].startswith(f"pip install --force-reinstall --no-deps --upgrade "
                                   f"--target {site} 'regex==2026.12.2'"), od503["fix"]
    assert "OD508" in rep["diagnosis"]["consequences"]["OD503"]


@pytest.mark.probe
def test_own_symbols_of_an_overwritten_sibling_are_that_files_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W8: fbgemm-gpu-cpu 1.8.0 with fbgemm_gpu_config.so overwritten by another
    of its libraries: fbgemm_gpu_tbe_inference.so NEEDs it, and its import fails on
    fbgemm_gpu::config::is_feature_enabled. OD430's fix was "add the source file that defines
    it to the extension's sources" — the library is linked to its definer, whose file is not
    what the distribution installed: the fix reinstalls it."""
    from tests.test_pyreg import site as pyreg_site

    site = tmp_path / "site"
    shutil.copytree(pyreg_site("fbgemm-gpu-cpu-1.8.0"), site, symlinks=True)
    pkg = site / "fbgemm_gpu"
    shutil.copy(pkg / "fbgemm_gpu_sparse_async_cumsum.so", pkg / "fbgemm_gpu_config.so")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = run_python("import torch, fbgemm_gpu", env={**env, "PYTHONPATH": str(site)},
                      timeout=180)
    assert "is_feature_enabled" in real.stderr, real.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(pkg / "fbgemm_gpu_tbe_inference.so"))
    od430 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD430"]
    assert od430 and "fbgemm_gpu_config.so, which it NEEDs, is not the file" in \
        od430[0]["message"], od430
    assert od430[0]["fix"].startswith(f"pip install --force-reinstall --no-deps --upgrade "
                                      f"--target {site} 'fbgemm_gpu_cpu==1.8.0'"), od430[0]["fix"]


@pytest.mark.probe
def test_a_system_library_the_package_looks_up_by_name_is_the_cause(
        capsys: pytest.CaptureFixture[str]) -> None:
    """sounddevice 0.5.6 on a machine without libportaudio2 (survey 23's F7): the module asks
    ctypes.util.find_library for PortAudio and raises its own `OSError: PortAudio library not
    found`. The verdict was its import (cause 5) with a fix that read "the exception reads as
    cause 2": it is the missing library of the operating system (cause 2), the import's
    failure its consequence."""
    from opdoctor.facts.loader.ldcache import load_ld_cache

    if "libportaudio.so.2" in load_ld_cache("/etc/ld.so.cache"):
        pytest.skip("this machine has PortAudio: sounddevice imports")
    path = f"{_rp_site('sounddevice-0.5.6')}{os.pathsep}{_rp_site('cffi-2.1.1')}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import sounddevice"], capture_output=True,
                          text=True, timeout=60, env={**env, "PYTHONPATH": path}, cwd="/")
    assert real.stderr.strip().splitlines()[-1] == "OSError: PortAudio library not found", \
        real.stderr
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={path}", "--package",
              "sounddevice")
    rep = res.json()["reports"][0]
    diag = rep["diagnosis"]
    assert res.code == 1 and diag["cause"] == 2 and diag["root_findings"] == ["OD220"], diag
    assert diag["consequences"]["OD220"] == ["OD511"], diag
    od220 = next(f for f in rep["findings"] if f["code"] == "OD220")
    assert od220["subject"] == "libportaudio.so.2"
    assert "apt-get install libportaudio2" in od220["fix"], od220["fix"]


def test_a_system_library_the_import_loads_by_name_is_read_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pyvips 2.1.0 on a machine without libvips (survey 24's F1): its import tries the
    compiled `_libvips`, and in that try's handler runs cffi's `ffi.dlopen('libvips.so.42')`
    — which fails. `check --static` said "No problem found". Read statically: the name, the
    handler that runs (no module `_libvips` anywhere), the loader's search that finds nothing
    → OD221, cause 2, the system package to install. A load by name that the loader finds, and
    one in a handler whose try's import works, are no finding."""
    from opdoctor.facts.loader.ldcache import load_ld_cache

    if "libvips.so.42" in load_ld_cache("/etc/ld.so.cache"):
        pytest.skip("this machine has libvips: pyvips imports")
    site = FIX / "realpkg" / "pyvips-2.1.0" / "site"
    reason = SKIP / "pyvips-2.1.0.txt"
    if reason.exists():
        pytest.skip(f"pyvips 2.1.0 not fetched: {reason.read_text().strip()[:200]}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def imported(path: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", "import pyvips"], capture_output=True,
                              text=True, timeout=60, env={**env, "PYTHONPATH": path}, cwd="/")

    def od221(path: str) -> tuple[int, list[dict[str, object]]]:
        res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={path}",
                  "--package", "pyvips", "--cwd", "/")
        return res.code, [f for f in res.json()["reports"][0]["findings"]
                          if f["code"] == "OD221"]

    real = imported(str(site))
    assert "cannot load library 'libvips.so.42'" in real.stderr, real.stderr
    code, (f,) = od221(str(site))
    assert code == 1 and f["severity"] == "error" and f["subject"] == "libvips.so.42", f
    assert "when `import _libvips` fails — no module _libvips here" in f["message"], f
    assert "apt-get install libvips42" in f["fix"], f["fix"]
    # the same package where the names it loads are this system's (zlib, libm): it imports
    # (and fails later, on what the stand-ins lack), and nothing is reported
    import shutil

    copy = tmp_path / "site"
    shutil.copytree(site, copy, symlinks=True)
    init = copy / "pyvips" / "__init__.py"
    text = init.read_text()
    assert "_vips_libname = 'libvips.so.42'" in text
    init.write_text(text.replace("'libvips.so.42'", "'libz.so.1'").replace(
        "'libgobject-2.0.so.0'", "'libm.so.6'"))
    real = imported(str(copy))
    assert "cannot load library" not in real.stderr, real.stderr
    assert od221(str(copy))[1] == []
    # a `_libvips` that imports (pyvips-binary's, API mode): the handler does not run (the
    # import goes on past it, to what this stand-in lacks), and nothing is reported
    (copy / "_libvips.py").write_text("ffi = lib = None\n")
    init.write_text(text)
    real = imported(str(copy))
    assert "cannot load library" not in real.stderr and "vips_init" in real.stderr, \
        real.stderr
    assert od221(str(copy))[1] == []


def test_a_library_a_pure_python_package_loads_by_a_computed_path_is_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rtree 1.4.1 is pure Python; its finder loads `rtree.libs/libspatialindex-….so`
    (auditwheel's directory) with `ctypes.cdll.LoadLibrary`, over candidates it reads from
    `importlib.metadata.files` — a path no static reading computes. `--package rtree` said
    "has no compiled library" (OD415) and never checked that library (survey 24b). The
    library its distribution installs beside the package is what such a load finds: it is
    checked. Healthy, it is clean; built against a library this machine lacks, rtree's import
    fails (its finder swallows the loader's error into its own) and the check says why."""
    site = _rp_site("rtree-1.4.1")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = ("import rtree.index as i; ix = i.Index(); ix.insert(0, (0, 0, 1, 1)); "
             "print(list(ix.intersection((0, 0, 2, 2))))")

    def imported(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              timeout=60, env={**env, "PYTHONPATH": str(path)}, cwd="/")

    def check(path: Path) -> tuple[int, dict[str, object]]:
        res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={path}",
                  "--package", "rtree", "--cwd", "/")
        (rep,) = res.json()["reports"]
        return res.code, rep

    (lib,) = (site / "rtree.libs").glob("libspatialindex-*.so")
    real = imported(site)
    assert real.returncode == 0 and real.stdout.strip() == "[0]", real.stderr
    code, rep = check(site)
    assert code == 0 and rep["target"]["path"] == str(lib), rep["target"]  # type: ignore[index]
    assert [(f["code"], f["severity"]) for f in rep["findings"]  # type: ignore[attr-defined]
            if f["severity"] != "info" or f["code"] == "OD415"] == []
    # The same install whose library NEEDs one that is gone (a stand-in under its name).
    copy = tmp_path / "site"
    shutil.copytree(site, copy, symlinks=True)
    stub = tmp_path / "stub"
    stub.mkdir()
    (tmp_path / "gone.c").write_text("int gone_fn(void) { return 1; }\n")
    (tmp_path / "lib.c").write_text("int gone_fn(void);\nint Index_Create(void) "
                                    "{ return gone_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libspatialgone.so.9", "-o",
                    str(stub / "libspatialgone.so.9"), str(tmp_path / "gone.c")], check=True,
                   timeout=60)
    target = copy / "rtree.libs" / lib.name
    target.unlink()
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{lib.name}", "-o", str(target),
                    str(tmp_path / "lib.c"), str(stub / "libspatialgone.so.9")], check=True,
                   timeout=60)
    shutil.rmtree(stub)
    real = imported(copy)
    assert "Could not load libspatialindex_c library" in real.stderr, real.stderr
    assert "libspatialgone.so.9: cannot open shared object file" in real.stderr, real.stderr
    code, rep = check(copy)
    od201 = [f for f in rep["findings"] if f["code"] == "OD201"]  # type: ignore[attr-defined]
    assert code == 1 and [(f["subject"].split()[0], f["severity"]) for f in od201] == [
        ("libspatialgone.so.9", "error")], od201


@pytest.mark.probe
def test_a_find_library_answer_loaded_unchecked_is_the_program_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """python-vlc 3.0.21203 on a machine without libvlc (survey 24a's F7): `vlc.py` runs
    `p = find_library("vlc")` then `ctypes.CDLL(p)`; find_library answers None, CDLL(None)
    opens the program itself, and `import vlc` works — its first call fails ("NameError: no
    function 'libvlc_new'"). Both modes said "No problem found". Now OD221, a warning, with
    and without the probe; nothing where a test of the answer comes between, or where the
    system has the library."""
    import ctypes.util

    if ctypes.util.find_library("vlc"):
        pytest.skip("this machine has libvlc")
    site = _rp_site("python-vlc-3.0.21203")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}

    def real(path: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", "import vlc; print('imported'); "
                               "vlc.Instance()"], capture_output=True, text=True, timeout=60,
                              env={**env, "PYTHONPATH": str(path), **(extra or {})}, cwd="/")

    def od221(path: Path, *extra: str) -> tuple[int, list[dict[str, str]]]:
        res = cli(capsys, "check", "-f", "json", *extra, "--env", f"PYTHONPATH={path}",
                  "--package", "vlc", "--cwd", "/")
        return res.code, [f for r in res.json()["reports"] for f in r["findings"]
                          if f["code"] == "OD221"]

    got = real(site)
    assert got.stdout.strip() == "imported", got.stderr
    assert "NameError: no function 'libvlc_new'" in got.stderr, got.stderr
    for mode in (["--static"], []):
        code, found = od221(site, *mode)
        assert code == 0 and [(f["subject"], f["severity"]) for f in found] == [
            ("libvlc", "warning")], (mode, found)
        assert "ctypes.CDLL(None) is the program itself" in found[0]["message"]
        assert "apt-get install libvlc5" in found[0]["fix"], found[0]["fix"]
    # The answer tested before the load: the package's own error, no OD221.
    guarded = tmp_path / "guarded"
    guarded.mkdir()
    text = (site / "vlc.py").read_text()
    unguarded = '        p = find_library("vlc")\n        try:\n            dll = ctypes.CDLL(p)\n'
    assert unguarded in text
    (guarded / "vlc.py").write_text(text.replace(unguarded, unguarded.replace(
        "        try:\n", "        if p is None:\n            raise OSError('no libvlc')\n"
        "        try:\n")))
    got = real(guarded)
    assert "OSError: no libvlc" in got.stderr, got.stderr
    assert od221(guarded, "--static")[1] == []
    # The system has it (a stand-in libvlc on LD_LIBRARY_PATH, as find_library's ld probe
    # finds it): find_library answers, and nothing is said.
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (tmp_path / "v.c").write_text("int libvlc_get_version(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libvlc.so.5", "-o",
                    str(libdir / "libvlc.so.5"), str(tmp_path / "v.c")], check=True, timeout=60)
    (libdir / "libvlc.so").symlink_to("libvlc.so.5")
    found = subprocess.run([sys.executable, "-c", "import ctypes.util; "
                            "print(ctypes.util.find_library('vlc'))"], capture_output=True,
                           text=True, timeout=60, env={**env, "LD_LIBRARY_PATH": str(libdir)})
    assert found.stdout.strip() not in ("", "None"), found.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--env", f"LD_LIBRARY_PATH={libdir}", "--package", "vlc", "--cwd", "/")
    assert [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD221"] \
        == []
