"""Loader emulation and ABI (causes 2 and 3), each against a real fixture and real ld.so."""

from __future__ import annotations

import ctypes.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions, Facts
from opdoctor.facts.elf.dynsym import DynSymbols
from opdoctor.facts.loader.ldcache import load_ld_cache
from opdoctor.model import Report
from opdoctor.pipeline import run_check
from tests.conftest import BUILD, fixture, reference
from tests.helpers import cli, dist_info
from tests.torchfork import run_python

NO_ENV = CheckOptions(env=())  # a job environment without LD_LIBRARY_PATH


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def torch_lib_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin
    return Path(spec.origin).parent / "lib"


def test_reference_resolves_fully_where_ldd_says_not_found() -> None:
    """ldd reports libc10.so missing; in torch's process it is already loaded: no finding."""
    ldd = subprocess.run(["ldd", str(reference())], capture_output=True, text=True)
    assert "libc10.so => not found" in ldd.stdout
    facts = Facts(str(reference()), NO_ENV)
    report = run_check(str(reference()), NO_ENV)
    assert report.findings == []
    tree = facts.process.tree
    assert not tree.missing
    c10 = next(lib for lib in tree.order if lib.name == "libc10.so")
    assert c10.preloaded_by == "import torch"
    assert facts.binding.unresolved == [] and facts.binding.checked > 50
    deps = report.sections["dependencies"]
    assert "import torch" in deps["context"]


@pytest.mark.parametrize("lib", ["libtorch_cpu.so", "libtorch_python.so", "libc10.so"])
def test_torch_own_libraries_are_clean(lib: str) -> None:
    report = run_check(str(torch_lib_dir() / lib), NO_ENV)
    assert report.findings == [], [f.message for f in report.findings]


def test_dependency_found_only_via_ld_library_path() -> None:
    lib = str(fixture("loader/uses_dep.so"))
    missing = run_check(lib, NO_ENV)
    assert codes(missing) == ["OD201", "OD301"]
    od201 = next(f for f in missing.findings if f.code == "OD201")
    assert "libmyop_dep.so" in od201.message
    assert any("[ld.so.cache]: not in /etc/ld.so.cache" in e for e in od201.evidence)
    # OD301 is inconclusive while the dependency is missing: a warning, not a second error.
    assert next(f for f in missing.findings if f.code == "OD301").severity.value == "warning"
    env = CheckOptions(env=(("LD_LIBRARY_PATH", str(fixture("loader/depdir"))),))
    found = run_check(lib, env)
    assert codes(found) == ["OD202"]
    assert "[LD_LIBRARY_PATH]" in found.findings[0].evidence[0]


def test_wrong_runpath() -> None:
    report = run_check(str(fixture("loader/wrong_runpath.so")), NO_ENV)
    assert "OD201" in codes(report) and "OD204" in codes(report)
    od201 = next(f for f in report.findings if f.code == "OD201")
    assert any("no_such_dir/libmyop_dep.so [runpath]: directory does not exist" in e
               for e in od201.evidence)


def test_rpath_is_inherited() -> None:
    lib = str(fixture("loader/chain_a_rpath.so"))
    assert run_check(lib, NO_ENV).findings == []
    tree = Facts(lib, NO_ENV).process.tree
    c = next(x for x in tree.order if x.name == "libchain_c.so")
    assert c.rule == "rpath of chain_a_rpath.so"


def test_a_newer_glibc_is_the_systems_not_a_preload(tmp_path: Path) -> None:
    """lingvo 0.14.2's x_ops.so needs GLIBC_2.38 (this system's glibc is 2.36) from a wheel
    tagged manylinux2014 (glibc 2.17). OD302's fix said to ship or LD_PRELOAD a newer
    libstdc++ — which supplies no glibc version (survey 18). Built here: a library that needs
    strlcpy@GLIBC_2.38 (linked against a stub libc.so.6 that declares that version), in a
    distribution whose WHEEL is tagged manylinux2014: dlopen refuses it as the loader says,
    and the fix is a system with that glibc or a build for this one, the tag named wrong."""
    import platform

    have = platform.libc_ver()[1]
    if tuple(int(x) for x in have.split(".")) >= (2, 38):
        pytest.skip(f"this system's glibc {have} has GLIBC_2.38")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "v.map").write_text("GLIBC_2.38 { global: strlcpy; local: *; };\n")
    (stub / "s.c").write_text("unsigned long strlcpy(char *d, const char *s, unsigned long n)"
                              " { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-nostdlib", "-Wl,-soname,libc.so.6",
                    f"-Wl,--version-script={stub / 'v.map'}", "-o", str(stub / "libc.so.6"),
                    str(stub / "s.c")], check=True, timeout=60)
    site = tmp_path / "site"
    lib = site / "newglibc" / "ops.so"
    lib.parent.mkdir(parents=True)
    (tmp_path / "use.c").write_text(
        "unsigned long strlcpy(char *d, const char *s, unsigned long n);\n"
        "unsigned long use(char *d) { return strlcpy(d, \"x\", 2); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "use.c"),
                    str(stub / "libc.so.6")], check=True, timeout=60)
    dist_info(site, "newglibc", "1.0", ["newglibc/ops.so"],
              wheel_tag="cp311-cp311-manylinux2014_x86_64")
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60)
    assert "version `GLIBC_2.38' not found" in real.stderr, real.stderr
    report = run_check(str(lib), NO_ENV)
    f = next(f for f in report.findings if f.code == "OD302")
    assert "GLIBC_2.38" in f.message and f.fix is not None
    assert "glibc 2.38 or newer" in f.fix and "LD_PRELOAD the newer libstdc++" not in f.fix
    assert any("newglibc 1.0: its wheel tag manylinux2014_x86_64 promises glibc 2.17" in e
               for e in f.evidence), f.evidence


def test_an_opencl_device_plugin_on_a_machine_without_that_gpu(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """onnxruntime-openvino 1.24.1 ships OpenVINO's Intel GPU plugin,
    libopenvino_intel_gpu_plugin.so, which NEEDs libOpenCL.so.1; OpenVINO dlopens it only for
    a GPU device ("Device GPU is not available", and the session runs on CPU). Checked on a
    machine without libOpenCL it was an error with a patchelf fix (exit 1), where the CUDA
    provider in the same position gets warnings (survey 18). A plugin no extension of its
    package NEEDs, missing OpenCL's loader on a machine without a GPU render node, is a
    device plugin this machine never loads: a warning, and the system package as its fix."""
    import glob

    if glob.glob("/dev/dri/renderD*"):
        pytest.skip("this machine has a GPU render node: the plugin could be loaded here")
    site = tmp_path / "site"
    pkg = site / "ovlike"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "cl.c").write_text("int clGetPlatformIDs(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libOpenCL.so.1", "-o",
                    str(stub / "libOpenCL.so.1"), str(stub / "cl.c")], check=True, timeout=60)
    (tmp_path / "plugin.c").write_text("int clGetPlatformIDs(void);\n"
                                       "int gpu_plugin(void) { return clGetPlatformIDs(); }\n")
    plugin = pkg / "libov_gpu_plugin.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(tmp_path / "plugin.c"),
                    str(stub / "libOpenCL.so.1")], check=True, timeout=60)
    shutil.rmtree(stub)
    dist_info(site, "ovlike", "1.0", ["ovlike/__init__.py", "ovlike/libov_gpu_plugin.so"])
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(plugin)], capture_output=True, text=True, timeout=60)
    if ctypes.util.find_library("OpenCL"):
        pytest.skip("libOpenCL is installed here")
    assert "libOpenCL.so.1: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(plugin))
    rep = res.json()["reports"][0]
    (od201,) = [f for f in rep["findings"] if f["code"] == "OD201"]
    assert res.code == 0 and od201["severity"] == "warning", od201
    assert "is an OpenCL device plugin of its package" in od201["message"]
    assert "apt-get install ocl-icd-libopencl1" in od201["fix"]


def test_an_intel_xpu_plugin_of_a_real_wheel_is_a_device_plugin(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's F3: bitsandbytes 0.50.2 ships libbitsandbytes_xpu2025.so, which NEEDs
    Intel's SYCL runtime (libsycl.so.8) and the oneAPI compiler runtime (libsvml, libimf,
    libintlc, libirng); the package loads it only beside an XPU build of torch. Checked on
    its own it was five OD201 errors with patchelf fixes (exit 1) where its CUDA and ROCm
    libraries get the device-plugin warning: Intel oneAPI is a device toolkit too."""
    import glob

    if glob.glob("/dev/dri/renderD*"):
        pytest.skip("this machine has a GPU render node: the plugin could be loaded here")
    from tests.test_pyreg import site

    lib = site("bitsandbytes-0.50.2") / "bitsandbytes" / "libbitsandbytes_xpu2025.so"
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60)
    if real.returncode == 0:
        pytest.skip("Intel's oneAPI runtime is installed here")
    assert "cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    od201 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert res.code == 0 and len(od201) == 5, [(f["subject"], f["severity"]) for f in od201]
    assert all(f["severity"] == "warning" and "is an Intel oneAPI device plugin of its package"
               in f["message"] for f in od201), od201
    assert {f["subject"].split()[0] for f in od201} == {
        "libsycl.so.8", "libsvml.so", "libimf.so", "libintlc.so.5", "libirng.so"}


def test_device_plugins_a_wheel_walk_finds_are_info_and_warnings_where_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24b's F9: the bitsandbytes 0.50.2 wheel gave 58 warnings (OD201, OD301) for its
    CUDA, ROCm and XPU libraries, which the package loads only beside such a device, where
    `--package bitsandbytes` is clean: `--fail-on warning` on a CPU CI runner failed a wheel
    that installs and works. Found by the walk they are info; named by the user, still a
    warning (the MindSpore and XPU tests above)."""
    import glob
    import zipfile

    from opdoctor.facts.devices import CUDA, host_has
    from tests.test_pyreg import site

    if host_has(CUDA) or glob.glob("/dev/dri/renderD*") or glob.glob("/dev/kfd"):
        pytest.skip("this machine has a GPU: the plugins could be loaded here")
    root = site("bitsandbytes-0.50.2")
    pkg = root / "bitsandbytes"
    plugins = ["libbitsandbytes_cuda130.so", "libbitsandbytes_rocm64.so"]
    for name in plugins:  # what the loader does with each here
        real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                               str(pkg / name)], capture_output=True, text=True, timeout=60)
        assert "cannot open shared object file" in real.stderr, (name, real.stderr)
    # The wheel, rebuilt from its install: the Python modules, the CPU library the package
    # loads here, and two of its device plugins (stored: 5 MB, not the 125 MB of all).
    members = [p for p in pkg.rglob("*.py")] + [pkg / "libbitsandbytes_cpu.so"] + \
        [pkg / n for n in plugins]
    info = "bitsandbytes-0.50.2.dist-info"
    whl = tmp_path / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_STORED) as zf:
        names = [str(m.relative_to(root)) for m in members]
        for m, n in zip(members, names, strict=True):
            zf.write(m, n)
        for meta in ("METADATA", "WHEEL"):
            zf.write(root / info / meta, f"{info}/{meta}")
        zf.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [
            *names, f"{info}/METADATA", f"{info}/WHEEL", f"{info}/RECORD"]))
    res = cli(capsys, "check", "--static", "--fail-on", "warning", "-f", "json", str(whl))
    reports = {Path(r["target"]["path"]).name: r for r in res.json()["reports"]}
    assert res.code == 0, {n: [(f["code"], f["severity"]) for f in r["findings"]]
                           for n, r in reports.items()}
    for name in plugins:
        found = reports[name]["findings"]
        od201 = [f for f in found if f["code"] == "OD201"]
        assert od201 and all("device plugin of its package" in f["message"] for f in od201)
        assert {f["severity"] for f in found} == {"info"}, [(f["code"], f["severity"])
                                                           for f in found]
    # The same library named: the user asked about it, and it cannot load here.
    named = cli(capsys, "check", "--static", "-f", "json", str(pkg / plugins[0]))
    sev = {(f["code"], f["severity"]) for f in named.json()["reports"][0]["findings"]}
    assert named.code == 0 and ("OD201", "warning") in sev and ("OD301", "warning") in sev, sev

def test_a_vendored_librarys_neighbour_its_loader_needs_too_is_already_loaded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's F1: imagecodecs' liblzokay-c (in imagecodecs.libs/, with a stale RUNPATH of
    its build tree) NEEDs liblzokay beside it, and only _lzo.abi3.so (RPATH
    $ORIGIN/../imagecodecs.libs) loads it — NEEDing liblzokay itself. glibc maps the
    extension's dependencies breadth first, so liblzokay is in the process before
    liblzokay-c's are searched for: the real load works. It was OD201 and OD220, exit 1.
    Here the same layout, built: the extension loads; the library alone does not (what the
    old verdict described); the check of the library is clean."""
    site = tmp_path / "site"
    libs, pkg = site / "pkg.libs", site / "pkg"
    libs.mkdir(parents=True)
    pkg.mkdir()
    src = tmp_path / "src"
    src.mkdir()
    (src / "b.c").write_text("int b_fn(void) { return 2; }\n")
    (src / "a.c").write_text("int b_fn(void);\nint a_fn(void) { return b_fn() + 1; }\n")
    (src / "e.c").write_text("int a_fn(void);\nint b_fn(void);\n"
                             "int ext_fn(void) { return a_fn() + b_fn(); }\n")
    cc = ["gcc", "-shared", "-fPIC"]
    subprocess.run([*cc, "-Wl,-soname,libb.so", "-o", str(libs / "libb.so"), str(src / "b.c")],
                   check=True, timeout=60)
    subprocess.run([*cc, "-Wl,-soname,liba.so", "-Wl,--enable-new-dtags,-rpath,/nonexistent/build",
                    "-o", str(libs / "liba.so"), str(src / "a.c"), "-L", str(libs), "-lb"],
                   check=True, timeout=60)
    subprocess.run([*cc, "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../pkg.libs", "-o",
                    str(pkg / "_ext.so"), str(src / "e.c"), "-L", str(libs), "-la", "-lb"],
                   check=True, timeout=60)
    load = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).{}())"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    real = subprocess.run([sys.executable, "-c", load.format("ext_fn"), str(pkg / "_ext.so")],
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.returncode == 0 and real.stdout.strip() == "5", real.stderr
    alone = subprocess.run([sys.executable, "-c", load.format("a_fn"), str(libs / "liba.so")],
                           capture_output=True, text=True, timeout=60, env=env)
    assert "libb.so: cannot open shared object file" in alone.stderr, alone.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(libs / "liba.so"))
    codes = {f["code"]: f["severity"] for f in res.json()["reports"][0]["findings"]}
    assert res.code == 0 and "OD201" not in codes and codes.get("OD204") == "info", codes

def test_runpath_is_not_inherited() -> None:
    report = run_check(str(fixture("loader/chain_a_runpath.so")), NO_ENV)
    assert codes(report) == ["OD203"]
    f = report.findings[0]
    assert "libchain_c.so" in f.message and "libchain_b.so" in f.message
    assert any("DT_RUNPATH of chain_a_runpath.so" in e for e in f.evidence)


def test_symbol_version_not_found() -> None:
    report = run_check(str(fixture("loader/uses_verdep.so")), NO_ENV)
    assert codes(report) == ["OD302"]  # the unresolved verdep_new@DEP_2.0 is folded into it
    f = report.findings[0]
    assert "DEP_2.0" in f.message and "up to DEP_1.0" in f.message


def test_cxx11_abi_mismatch() -> None:
    report = run_check(str(fixture("loader/abi0.so")), NO_ENV)
    assert codes(report) == ["OD303"]
    f = report.findings[0]
    assert "_GLIBCXX_USE_CXX11_ABI=0, torch uses 1" in f.message
    assert any("torch::Library::Library" in e for e in f.evidence)


def test_built_against_another_torch() -> None:
    report = run_check(str(fixture("loader/other_torch.so")), NO_ENV)
    assert codes(report) == ["OD304"]
    ev = "\n".join(report.findings[0].evidence)
    assert "c10::alloc_cpu(int)" in ev
    assert "installed torch exports instead: c10::alloc_cpu(unsigned long)" in ev


@pytest.mark.probe
def test_a_stale_jit_build_is_deleted_not_rebuilt_with_pip(tmp_path: Path) -> None:
    """Survey 23's F3: torch.utils.cpp_extension.load() built jitop under torch 2.13; torch was
    upgraded, load() ran again, ninja found "no work to do" (the sources had not changed) and
    the old jitop.so failed on a symbol the new torch lacks. OD304's fix said "pip install
    --no-build-isolation ." — there is no project in a JIT build directory. Its build.ninja
    beside <name>/<name>.so says what it is: deleting the directory makes load() compile it
    again. Here: a library built against another torch, in load()'s layout."""
    build = tmp_path / "torch_extensions" / "jitop"
    build.mkdir(parents=True)
    lib = build / "jitop.so"
    shutil.copy(fixture("loader/other_torch.so"), lib)
    (build / "build.ninja").write_text("ninja_required_version = 1.3\ncxx = c++\n"
                                       "build jitop.o: compile jitop.cpp\n"
                                       "build jitop.so: link jitop.o\ndefault jitop.so\n")
    real = run_python("import sys, torch; torch.ops.load_library(sys.argv[1])", str(lib))
    assert "undefined symbol" in real.stderr, real.stderr[-600:]
    (f,) = [f for f in run_check(str(lib), NO_ENV).findings if f.code == "OD304"]
    assert f.fix is not None and f.fix.startswith(f"delete the JIT build directory {build} ")
    assert "pip install" not in f.fix
    # the same file outside such a directory keeps the project rebuild
    plain = tmp_path / "jitop.so"
    shutil.copy(lib, plain)
    (f,) = [f for f in run_check(str(plain), NO_ENV).findings if f.code == "OD304"]
    assert f.fix is not None and "pip install --no-build-isolation ." in f.fix


def test_pybind11_internals_mismatch() -> None:
    report = run_check(str(fixture("loader/pybind_mismatch.so")), NO_ENV)
    assert codes(report) == ["OD306"]
    assert "internals_v12" in report.findings[0].evidence[0]


@pytest.mark.probe
def test_pybind11_internals_of_another_release_are_its_consequence() -> None:
    """An extension built for another torch release carries that release's pybind11 too
    (xformers 0.0.26 and torchvision 0.23 beside torch 2.13: internals v4 against v11, survey
    9): OD306's "build against the pybind11 in torch's include directory" was a second root;
    it is a consequence of the release mismatch, whose fix is the one to follow."""
    lib = fixture("loader/pybind_other_torch.so")
    real = run_python(LOAD, str(lib))
    assert "undefined symbol: _ZN3c109alloc_cpuEi" in real.stdout  # the other release's c10
    report = run_check(str(lib), NO_ENV)
    assert codes(report) == ["OD304", "OD306"]
    diag = report.diagnosis
    assert [f.code for f in diag.root_findings] == ["OD304"]
    assert [f.code for f in diag.consequences["OD304"]] == ["OD306"]


# Ground truth: the real loader, in a process that imported torch, fails the same way.
LOAD = "import ctypes, sys, torch\ntry:\n    ctypes.CDLL(sys.argv[1])\n    print('LOADED')\n" \
       "except OSError as e:\n    print(e)\n"


@pytest.mark.probe
@pytest.mark.parametrize(("name", "words"), [
    ("loader/uses_dep.so", "libmyop_dep.so: cannot open shared object file"),
    ("loader/wrong_runpath.so", "libmyop_dep.so: cannot open shared object file"),
    ("loader/chain_a_runpath.so", "libchain_c.so: cannot open shared object file"),
    ("loader/chain_a_rpath.so", "LOADED"),
    ("loader/uses_verdep.so", "version `DEP_2.0' not found"),
    ("loader/abi0.so", "undefined symbol: _ZN5torch7LibraryC1ENS0_4KindESs"),
    ("loader/other_torch.so", "undefined symbol: _ZN3c109alloc_cpuEi"),
])
def test_prediction_matches_real_loader(name: str, words: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    p = run_python(LOAD, str(fixture(name)), timeout=120, env=env)
    assert words in p.stdout, p.stdout + p.stderr
    report = run_check(str(fixture(name)), NO_ENV)
    assert bool(report.fails(__import__("opdoctor.model").model.Severity.ERROR)) == (
        words != "LOADED")


def test_ld_cache_parser_agrees_with_ldconfig() -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout.splitlines()
    cache = load_ld_cache()
    total = sum(len(v) for v in cache.values())
    assert out[0].startswith(f"{total} libs found")
    for line in out[1:20]:
        name, _, path = line.strip().partition(" => ")
        assert path in cache[name.split(" (")[0]]


def test_hash_lookup_agrees_with_nm() -> None:
    c10 = torch_lib_dir() / "libc10.so"
    nm = subprocess.run(["nm", "-D", "--defined-only", str(c10)], capture_output=True,
                        text=True).stdout.split()
    names = [n for n in nm if n.startswith("_ZN3c10")][:200]
    table = DynSymbols(Facts(str(c10)).image)
    for n in names:
        assert table.lookup(n), n
    assert table.lookup("_ZN3c109alloc_cpuEi") == []
    libc = Facts("/lib/x86_64-linux-gnu/libc.so.6") if os.path.exists(
        "/lib/x86_64-linux-gnu/libc.so.6") else None
    if libc is not None:
        syms = DynSymbols(libc.image).lookup("memcpy")
        assert {s.version for s in syms} >= {"GLIBC_2.14", "GLIBC_2.2.5"}


def test_interpreter_without_torch_explains_missing_torch_libs(tmp_path: Path) -> None:
    """A venv without torch: libc10.so really is not found, and the fix says why."""
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    py = str(tmp_path / "v" / "bin" / "python")
    report = run_check(str(reference()), CheckOptions(python=py, env=()))
    od201 = [f for f in report.findings if f.code == "OD201"]
    assert {f.subject for f in od201} >= {"libc10.so", "libtorch_cpu.so"}
    assert all("torch is not installed for" in f.fix for f in od201 if "torch" in f.subject
               or "c10" in f.subject)


def test_origin_entries_that_do_not_exist_are_a_layout_not_a_path_to_rewrite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-io's op libraries carry Bazel runfiles entries ($ORIGIN/../../../_solib_local
    …) that do not exist in the wheel. OD204's fix said to make them $ORIGIN-relative — they
    are. And a fix several findings share is printed once per report."""
    (tmp_path / "t.c").write_text("int f(void) { return 1; }\n")
    lib = tmp_path / "libbazel.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "t.c"),
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/_solib_local/a:$ORIGIN/x.runfiles/b"],
                   check=True)
    doc = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()
    od204 = [f for f in doc["reports"][0]["findings"] if f["code"] == "OD204"]
    assert len(od204) == 2 and all(f["fix"].startswith("nothing to fix while the dependencies "
                                                       "are found otherwise") for f in od204)
    text = cli(capsys, "check", "--static", str(lib)).out
    assert text.count("fix:      nothing to fix while") == 1 and text.count("(as above)") == 1


@pytest.mark.probe
def test_torch_symbols_a_missing_non_torch_library_cannot_define_are_certain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchcodec 0.8.0's libtorchcodec_custom_ops7.so beside torch 2.13: it NEEDs a sibling
    library (libtorchcodec_core7.so, beside it, loaded first by the package) and FFmpeg, both
    missing from the search path, and torch functions torch 2.13 does not export. Only torch's
    own libraries define c10:: symbols, so the release mismatch is certain (an OD304 root of
    its own, not "inconclusive" under OD201); the sibling's fix says it is beside the file."""
    (tmp_path / "sib.c").write_text("int sib_fn(void) { return 1; }\n")
    (tmp_path / "op.cpp").write_text(
        "namespace c10 { void no_such_function_in_torch(int); }\n"
        "extern \"C\" int sib_fn(void);\n"
        "extern \"C\" int op_fn(void) { c10::no_such_function_in_torch(1); return sib_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libsib.so", "-o",
                    str(tmp_path / "libsib.so"), str(tmp_path / "sib.c")], check=True,
                   timeout=60)
    lib = tmp_path / "libop.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "op.cpp"),
                    f"-L{tmp_path}", f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lsib",
                    "-lc10"], check=True, timeout=60)
    alone = run_python("import ctypes, sys, torch\nctypes.CDLL(sys.argv[1])", str(lib),
                       timeout=300)
    assert alone.returncode != 0 and "libsib.so: cannot open shared object file" in alone.stderr
    first = run_python("import ctypes, sys, torch\nctypes.CDLL(sys.argv[2], ctypes.RTLD_GLOBAL)"
                       "\nctypes.CDLL(sys.argv[1])", str(lib), str(tmp_path / "libsib.so"),
                       timeout=300)
    assert "undefined symbol: _ZN3c1025no_such_function_in_torchEi" in first.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    rep = res.json()["reports"][0]
    by = {f["code"]: f for f in rep["findings"]}
    assert by["OD304"]["severity"] == "error" and "inconclusive" not in by["OD304"]["message"]
    # its own error under cause 3, not folded under the missing library
    assert not any("OD304" in fs for fs in rep["diagnosis"]["consequences"].values())
    assert f"libsib.so is beside libop.so in {tmp_path}" in by["OD201"]["fix"]
    assert "opdoctor check --package <name>" in by["OD201"]["fix"]
    # The same files in a package (whose import loads neither: its own code does, on first
    # use) checked as the package's (survey 8's P7: a --package run was told to run
    # --package): no such advice there.
    pkg = tmp_path / "sibpkg"
    pkg.mkdir()
    for name in ("libsib.so", "libop.so"):
        shutil.copy(tmp_path / name, pkg / name)
    (pkg / "__init__.py").write_text("")
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "sibpkg", "--cwd",
              str(tmp_path), str(pkg / "libop.so"))
    fixes = [f["fix"] for r in res.json()["reports"] for f in r["findings"]
             if f["code"] == "OD201" and "libsib.so is beside" in f["fix"]]
    assert fixes and not any("--package" in f for f in fixes), fixes


@pytest.mark.probe
def test_the_gpu_driver_and_tensorrt_are_named_beside_the_torch_variant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sgl-kernel 0.3.21 needs a CUDA torch's libc10_cuda.so and the GPU driver's
    libcuda.so.1; torch-tensorrt needs TensorRT's libnvinfer.so.11 too. A CUDA build of torch
    brings neither the driver nor TensorRT: the verdict stays the torch variant (OD307), and its
    fix says what else the library needs; the driver's OD201 says no wheel brings it."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in ("libc10_cuda.so", "libcuda.so.1", "libnvinfer.so.11"):
        (stubs / "s.c").write_text("int stub_fn(void) { return 0; }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o",
                        str(stubs / name), str(stubs / "s.c")], check=True, timeout=60)
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    lib = tmp_path / "libgpuop.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "op.c"),
                    f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lc10", str(
                        stubs / "libc10_cuda.so"), str(stubs / "libcuda.so.1"),
                    str(stubs / "libnvinfer.so.11"), "-Wl,-rpath,$ORIGIN/_solib_k8"],
                   check=True, timeout=60)
    shutil.rmtree(stubs)
    real = run_python("import ctypes, sys, torch\nctypes.CDLL(sys.argv[1])", str(lib),
                      timeout=300)
    assert real.returncode != 0 and "cannot open shared object file" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"][0] == "OD307"
    od307 = next(f for f in rep["findings"] if f["code"] == "OD307")
    assert "libcuda.so.1 is the driver's own library" in od307["fix"], od307["fix"]
    assert "with TensorRT installed (libnvinfer.so.11" in od307["fix"]
    driver = next(f for f in rep["findings"] if f["code"] == "OD201"
                  and f["message"].startswith("libcuda.so.1"))
    assert "the NVIDIA driver's own library" in driver["fix"]
    # torch-tensorrt's shape: a RUNPATH note (OD204, info) is all cause 2 shows of its own, the
    # missing libraries being OD307's consequences: the error's cause comes first in the text
    text = cli(capsys, "check", "--static", str(lib)).out
    assert "OD204" in text
    assert text.index("✗ Cause 3") < text.index("ℹ Cause 2"), text[:600]


@pytest.mark.probe
def test_an_os_library_missing_beside_a_cuda_build_is_a_root_of_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """open3d 0.20's torch ops (survey 17): built for a CUDA torch (libc10_cuda.so) and
    needing the OS library libusb-1.0.so.0, absent here. A CUDA build of torch does not bring
    libusb: its miss is a root of its own with the system package as the fix, while the
    missing libc10_cuda.so stays the CUDA build's consequence, shown under OD307."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "s.c").write_text("int stub_fn(void) { return 0; }\n")
    for name in ("libc10_cuda.so", "libusb-1.0.so.0"):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o",
                        str(stubs / name), str(stubs / "s.c")], check=True, timeout=60)
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    lib = tmp_path / "libusbop.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "op.c"),
                    f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lc10",
                    str(stubs / "libusb-1.0.so.0"), str(stubs / "libc10_cuda.so")],
                   check=True, timeout=60)
    shutil.rmtree(stubs)
    if ctypes.util.find_library("usb-1.0"):
        pytest.skip("libusb-1.0 is installed on this machine")
    real = run_python("import ctypes, sys, torch\nctypes.CDLL(sys.argv[1])", str(lib),
                      timeout=300)
    # the real loader stops at the first NEEDED it cannot find: the OS library
    assert "libusb-1.0.so.0: cannot open shared object file" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()["reports"][0]
    roots = rep["diagnosis"]["root_findings"]
    usb = next(f for f in rep["findings"] if f["code"] == "OD201"
               and f["subject"] == "libusb-1.0.so.0")
    assert "apt-get install libusb-1.0-0" in usb["fix"]
    assert roots[0] == "OD201" and rep["diagnosis"]["cause"] == 2
    consequences = rep["diagnosis"]["consequences"]
    assert "OD201" in consequences.get("OD307", []), consequences  # libc10_cuda.so's miss
    text = cli(capsys, "check", "--static", str(lib)).out
    assert "libc10_cuda.so (needed by libusbop.so) is not found — a consequence of OD307" \
        in text, text
    assert "libusb-1.0.so.0 (needed by libusbop.so) is not found\n" in text, text


@pytest.mark.probe
def test_torch_symbols_of_a_package_library_the_target_needs_are_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """intel-extension-for-pytorch 2.8.0: _C binds, but it NEEDs the package's
    lib/libintel-ext-pt-python.so, which NEEDs lib/libintel-ext-pt-cpu.so, which needs torch
    functions torch 2.13 does not export. Python loads with RTLD_NOW, so _C's import fails on
    that symbol; `check --static --package` said "No error". The package's own libraries that
    the target reaches are bound too."""
    pkg = tmp_path / "site" / "ipexlike"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import ctypes, os\nimport torch\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_C.so'))\n")
    (tmp_path / "cpu.cpp").write_text(
        "namespace c10 { void gone_from_this_torch(int); }\n"
        "extern \"C\" int cpu_fn(void) { c10::gone_from_this_torch(1); return 1; }\n")
    (tmp_path / "c.c").write_text("int cpu_fn(void);\nint ext_fn(void) { return cpu_fn(); }\n")
    subprocess.run(["g++", "-shared", "-fPIC", "-Wl,-soname,libcpu.so", "-o",
                    str(pkg / "lib" / "libcpu.so"), str(tmp_path / "cpu.cpp"),
                    f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lc10"], check=True,
                   timeout=60)
    ext = pkg / "_C.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(ext), str(tmp_path / "c.c"),
                    f"-L{pkg / 'lib'}", f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lcpu",
                    "-lc10", "-Wl,-rpath,$ORIGIN/lib"], check=True, timeout=60)
    real = run_python("import ctypes, sys, torch\nctypes.CDLL(sys.argv[1])", str(ext),
                      timeout=300)
    assert "undefined symbol: _ZN3c1020gone_from_this_torchEi" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(ext))
    rep = res.json()["reports"][0]
    od304 = [f for f in rep["findings"] if f["code"] == "OD304"]
    assert len(od304) == 1 and od304[0]["message"].startswith(
        "libcpu.so, a library of the package that _C.so loads, needs 1 torch symbol(s)")
    assert res.code == 1 and rep["diagnosis"]["cause"] == 3


def test_own_symbols_a_sibling_library_defines_are_not_an_incomplete_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchcodec 0.5's libtorchcodec_custom_ops7.so uses 26 facebook::torchcodec:: functions
    that its sibling libtorchcodec_core7.so (NEEDed, beside it, not on the loader's path)
    defines; OD430 said they were "declared but never linked in" with a rebuild fix. They are
    linked in — to the sibling: the loader's verdict is the sibling not found (OD201), and
    once the sibling is loaded first the library loads. A symbol the sibling does not define
    is still OD430."""
    (tmp_path / "core.cpp").write_text("namespace mypkg { int helper(int x) { return x + 1; } }\n")
    subprocess.run(["g++", "-shared", "-fPIC", "-Wl,-soname,libcore.so", "-o",
                    str(tmp_path / "libcore.so"), str(tmp_path / "core.cpp")], check=True,
                   timeout=60)

    def build(extra_decl: str, extra_call: str) -> Path:
        src = tmp_path / "ops.cpp"
        src.write_text("namespace mypkg { int helper(int);" + extra_decl +
                       "\n  int ops(int x) { return helper(x)" + extra_call + "; } }\n")
        lib = tmp_path / "libops.so"
        subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src), f"-L{tmp_path}",
                        "-lcore"], check=True, timeout=60)
        return lib

    lib = build("", "")
    load = "import ctypes, sys\nfor p in sys.argv[1:]: ctypes.CDLL(p, ctypes.RTLD_GLOBAL)\n"
    alone = subprocess.run([sys.executable, "-c", load, str(lib)], capture_output=True,
                           text=True, timeout=60)
    assert alone.returncode != 0 and "libcore.so: cannot open shared object file" in \
        alone.stderr, alone.stderr
    together = subprocess.run([sys.executable, "-c", load, str(tmp_path / "libcore.so"),
                               str(lib)], capture_output=True, text=True, timeout=60)
    assert together.returncode == 0, together.stderr
    found = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()["reports"][0][
        "findings"]
    assert [f["subject"] for f in found if f["code"] == "OD201"] == ["libcore.so"], found
    assert not [f for f in found if f["code"] == "OD430"], found

    # One function of its own that nothing defines: still an incomplete build (a warning
    # while the sibling is missing: it might have defined it; it does not).
    lib = build(" int lost(int);", " + lost(x)")
    together = subprocess.run([sys.executable, "-c", load, str(tmp_path / "libcore.so"),
                               str(lib)], capture_output=True, text=True, timeout=60)
    assert "undefined symbol: _ZN5mypkg4lostEi" in together.stderr, together.stderr
    found = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()["reports"][0][
        "findings"]
    assert [f["code"] for f in found if f["code"] == "OD430"] == ["OD430"], found


def test_a_name_reserved_to_the_implementation_is_no_own_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bitsandbytes 0.50.2's libbitsandbytes_xpu2025.so calls `__spirv_ControlBarrier`, a
    SPIR-V builtin that Intel's SYCL runtime provides: OD430 read it as "the project's own
    code, declared but never linked in". A name that starts with two underscores (or one and
    a capital) is reserved to the compiler and its runtime; a plain global function is still
    the project's own. Both really leave the library unloadable."""
    codes = {}
    for name, decl in (("reserved", "__rt_barrier"), ("own", "helper_barrier")):
        src = tmp_path / f"{name}.cpp"
        src.write_text(f"void {decl}(unsigned);\nvoid sync(unsigned x) {{ {decl}(x); }}\n")
        lib = tmp_path / f"lib{name}.so"
        subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True,
                       timeout=60)
        real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                               str(lib)], capture_output=True, text=True, timeout=60)
        assert f"undefined symbol: _Z{len(decl)}{decl}j" in real.stderr, real.stderr
        found = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()["reports"][0][
            "findings"]
        codes[name] = sorted(f["code"] for f in found if f["severity"] == "error")
    assert codes == {"reserved": ["OD301"], "own": ["OD430"]}


def test_own_namespace_symbols_of_a_missing_dependency_are_its_consequence(
        tmp_path: Path) -> None:
    """numba's tbbpool extension without the optional libtbb.so.12 (survey 10): the tbb::
    functions it calls (its own inline tbb:: code is compiled into it, so they look like its
    own namespace) got OD430 "own code never linked in (inconclusive: a dependency is missing
    …)" as a cause-4 root beside OD201, with an "add the source file" fix. Inconclusive and
    naming the missing library, it is OD201's consequence."""
    (tmp_path / "dep.cpp").write_text("namespace tbblike { namespace r1 { int spawn(int x) "
                                      "{ return x; } } }\n")
    subprocess.run(["g++", "-shared", "-fPIC", "-Wl,-soname,libtbblike.so.12", "-o",
                    str(tmp_path / "libtbblike.so.12"), str(tmp_path / "dep.cpp")],
                   check=True, timeout=60)
    (tmp_path / "pool.cpp").write_text(
        "namespace tbblike { namespace r1 { int spawn(int); }\n"
        "  int __attribute__((noinline)) inline_helper(int x) { return r1::spawn(x) + 1; } }\n"
        "int pool(int x) { return tbblike::inline_helper(x); }\n")
    lib = tmp_path / "tbbpool.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "pool.cpp"),
                    str(tmp_path / "libtbblike.so.12")], check=True, timeout=60)
    (tmp_path / "libtbblike.so.12").unlink()  # the optional dependency, not installed
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60)
    assert "libtbblike.so.12: cannot open shared object file" in real.stderr, real.stderr
    report = run_check(str(lib), NO_ENV)
    assert [f.code for f in report.diagnosis.root_findings] == ["OD201"]
    # read as its own code (the inline tbblike:: function it defines) — OD201's consequence
    (od430,) = [f for f in report.findings if f.code == "OD430"]
    assert "(inconclusive" in od430.message and "libtbblike.so.12" in od430.message
    assert [f.code for f in report.diagnosis.consequences["OD201"]].count("OD430") == 1


def test_a_library_a_pypi_wheel_brings_gets_that_wheel(tmp_path: Path) -> None:
    """numba's optional tbbpool extension checked alone (survey 19): libtbb.so.12 is missing
    and the fix was "find it, then patchelf"; the `tbb` wheel on PyPI installs it into the
    environment's lib/ (numba's RUNPATH looks there). The fix names that wheel."""
    (tmp_path / "tbb.c").write_text("int tbb_stub(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libtbb.so.12", "-o",
                    str(tmp_path / "libtbb.so.12"), str(tmp_path / "tbb.c")], check=True,
                   timeout=60)
    (tmp_path / "pool.c").write_text("int tbb_stub(void);\nint pool(void) { return tbb_stub(); }\n")
    lib = tmp_path / "tbbpool.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "pool.c"),
                    str(tmp_path / "libtbb.so.12")], check=True, timeout=60)
    (tmp_path / "libtbb.so.12").unlink()
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60)
    assert "libtbb.so.12: cannot open shared object file" in real.stderr, real.stderr
    report = run_check(str(lib), NO_ENV)
    (od201,) = [f for f in report.findings if f.code == "OD201"]
    assert od201.fix is not None and "pip install tbb" in od201.fix and \
        "patchelf" not in od201.fix, od201.fix


# ------------------------------------------------------------------ a requirement ships it
def _split_wheel_site(tmp_path: Path, requires: list[str]) -> Path:
    """A site-packages as pip leaves one after `--no-deps`: package ``shpkg`` (distribution
    shpkg 1.0, Requires-Dist ``requires``) whose lib/libshpkg_ext.so NEEDs libshcore.so from
    its own directory (RPATH $ORIGIN) — the file a ``shpkg-core`` distribution would install
    there (sherpa-onnx and sherpa-onnx-core's layout). ``build/libshcore.so`` is that file."""
    build, site = tmp_path / "build", tmp_path / "site"
    lib = site / "shpkg" / "lib"
    for d in (build, lib):
        d.mkdir(parents=True)
    (build / "core.c").write_text("int shcore_answer(void) { return 42; }\n")
    (build / "ext.c").write_text("int shcore_answer(void);\n"
                                 "int shpkg_answer(void) { return shcore_answer(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(build / "core.c"), "-o",
                    str(build / "libshcore.so")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", str(build / "ext.c"), "-o",
                    str(lib / "libshpkg_ext.so"), "-L", str(build), "-lshcore",
                    "-Wl,--disable-new-dtags,-rpath,$ORIGIN"], check=True, timeout=60)
    (site / "shpkg" / "__init__.py").write_text(
        "import ctypes, os\n"
        "_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', "
        "'libshpkg_ext.so'))\n")
    info = site / "shpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shpkg\nVersion: 1.0\n" +
                                   "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("shpkg/__init__.py,,\nshpkg/lib/libshpkg_ext.so,,\n"
                                 "shpkg-1.0.dist-info/METADATA,,\n")
    return site


def test_a_library_an_uninstalled_requirement_ships_gets_that_requirement(
        tmp_path: Path) -> None:
    site = _split_wheel_site(tmp_path, ["shpkg-core==1.0", "zzz-unrelated-helper>=2"])
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    real = subprocess.run([sys.executable, "-c", "import shpkg"], cwd=site, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "libshcore.so: cannot open shared object file" in real.stderr
    lib = site / "shpkg" / "lib" / "libshpkg_ext.so"
    report = run_check(str(lib), CheckOptions())
    f = next(f for f in report.findings if f.code == "OD201")
    assert f.fix.startswith("pip install 'shpkg-core==1.0': shpkg requires it"), f.fix
    assert "in shpkg/lib" in f.fix and "zzz" not in f.fix
    # What that requirement would install, installed: Python imports it, nothing is missing.
    shutil.copy(tmp_path / "build" / "libshcore.so", site / "shpkg" / "lib")
    (site / "shpkg_core-1.0.dist-info").mkdir()
    subprocess.run([sys.executable, "-c", "import shpkg; print(shpkg._lib.shpkg_answer())"],
                   cwd=site, env=env, check=True, timeout=60)
    assert not [x for x in run_check(str(lib), CheckOptions()).findings if x.code == "OD201"]


def test_many_uninstalled_requirements_get_one_install_of_their_distribution(
        tmp_path: Path) -> None:
    """Survey 22's F6: a CUDA torch installed with `--no-deps` lacks eleven nvidia-* wheels,
    one OD201 each, each fix installing one of them. The requirement that ships the missing
    library is still named first; with three or more of the distribution's requirements
    absent, the fix adds the one install that brings them all."""
    site = _split_wheel_site(tmp_path, ["shpkg-core==1.0", "shpkg-extra>=1", "shpkg-more>=1"])
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    real = subprocess.run([sys.executable, "-c", "import shpkg"], cwd=site, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "libshcore.so: cannot open shared object file" in real.stderr
    lib = site / "shpkg" / "lib" / "libshpkg_ext.so"
    f = next(f for f in run_check(str(lib), CheckOptions()).findings if f.code == "OD201")
    assert f.fix is not None and f.fix.startswith("pip install 'shpkg-core==1.0'"), f.fix
    assert "shpkg 1.0 lacks 3 of its requirements" in f.fix and \
        "`pip install 'shpkg==1.0'` without --no-deps installs them all" in f.fix, f.fix

def test_a_requirement_that_says_nothing_of_the_library_is_not_named(tmp_path: Path) -> None:
    site = _split_wheel_site(tmp_path, ["zzz-unrelated-helper>=2"])
    lib = site / "shpkg" / "lib" / "libshpkg_ext.so"
    f = next(f for f in run_check(str(lib), CheckOptions()).findings if f.code == "OD201")
    assert "pip install" not in f.fix and f.fix.startswith("find it")


# ------------------------------------------------------------------ FFmpeg, a system library
@pytest.mark.parametrize(("core", "needed", "release"), [
    ("libtorchcodec_core4.so", "libavutil.so.56", "FFmpeg 4's libavutil"),
    ("libtorchcodec_core7.so", "libavutil.so.59", "FFmpeg 7's libavutil"),
])
def test_an_absent_ffmpeg_is_installed_not_searched_for(core: str, needed: str,
                                                        release: str) -> None:
    """torchcodec ships one core library per FFmpeg major (core4 … core9) and loads the one
    that matches the FFmpeg installed. Without FFmpeg on the machine every one lacks its
    libavutil: the fix is installing FFmpeg, not "find it, then patchelf" (survey 9)."""
    import ctypes

    site = BUILD / "realworld" / "torchcodec-0.17.0-needs-nvrtc" / "site"
    lib = site / "torchcodec" / core
    if not lib.is_file():
        pytest.skip(f"{lib} not installed: run `make realworld-small`")
    try:  # the loader's own verdict on the name: FFmpeg really is absent here
        ctypes.CDLL(needed)
        pytest.skip(f"{needed} loads on this machine: FFmpeg is installed")
    except OSError as exc:
        assert "cannot open shared object file" in str(exc)
    report = run_check(str(lib), CheckOptions(env=(("PYTHONPATH", str(site)),)))
    f = next(f for f in report.findings if f.code == "OD201" and f.subject == needed)
    assert f.fix.startswith(f"{needed} is {release}: FFmpeg is a system library"), f.fix
    assert "No RPATH edit brings FFmpeg" in f.fix and "patchelf" not in f.fix


def _absent_system_library() -> str:
    """A library of SYSTEM_LIBS that this machine's loader cannot find (so a consumer of it
    really fails to load here)."""
    from opdoctor.syslibs import SYSTEM_LIBS

    cache = set(load_ld_cache() or {})
    for name in ("libaio.so.1", "libportaudio.so.2", "libibverbs.so.1", "libsndfile.so.1",
                 *SYSTEM_LIBS):
        if name not in cache and not any(Path(d, name).exists() for d in
                                         ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                          "/lib64", "/usr/lib64", "/lib", "/usr/lib")):
            return name
    pytest.skip("every library of SYSTEM_LIBS is installed here: no miss to reproduce")


def test_a_missing_system_library_names_the_system_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A library that NEEDs a library of the operating system which slim images leave out
    (libGL.so.1 for cv2; here whichever of the table is not installed, e.g. libaio.so.1):
    the loader really fails on it, and OD201's fix is the system package that provides it
    (apt-get / dnf), not an RPATH or LD_LIBRARY_PATH edit; explain on the loader's own
    message gives the same package as its first step."""
    from opdoctor.syslibs import SYSTEM_LIBS

    name = _absent_system_library()
    what, deb, rpm = SYSTEM_LIBS[name]
    (tmp_path / "stub.c").write_text("int sys_fn(void) { return 0; }\n")
    (tmp_path / "use.c").write_text("extern int sys_fn(void);\n"
                                    "int use(void) { return sys_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{name}", str(tmp_path / "stub.c"),
                    "-o", str(tmp_path / name)], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / "use.c"), "-o",
                    str(tmp_path / "libuse.so"), "-L", str(tmp_path), f"-l:{name}"],
                   check=True, timeout=60)
    (tmp_path / name).unlink()  # built against it; not installed
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(tmp_path / "libuse.so")], capture_output=True, text=True,
                          timeout=60)
    assert f"OSError: {name}: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(tmp_path / "libuse.so"))
    od201 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert res.code == 1 and len(od201) == 1, od201
    assert od201[0]["fix"].startswith(f"{name} is {what}, a library of the operating system")
    assert f"apt-get install {deb};" in od201[0]["fix"]
    assert f"dnf install {rpm}" in od201[0]["fix"] and "RPATH" in od201[0]["fix"]
    said = cli(capsys, "explain", "--format", "json", real.stderr).json()
    assert said["cause"] == 2 and said["next_steps"][0].startswith(
        f"apt-get install {deb.split(' ')[0]}   # Debian/Ubuntu"), said["next_steps"]


def test_the_torch_name_filter_before_binding_misses_no_library() -> None:
    """A package library is bound (every undefined symbol looked up in its load's scope)
    only when it leaves a name in torch's namespaces undefined: the finding keeps only those.
    The filter reads the mangled names (``_ZN3c10…``, ``_ZNK2at…``, ``_ZZN5torch…``); on
    every library of the fixtures and of torch itself it says yes wherever the demangled
    names say so (and no for most others: MindSpore's 75 libraries were bound 336 times in a
    scan for nothing)."""
    from opdoctor.checks.symbols import _is_torch, _needs_torch_names
    from opdoctor.facts.elf.demangle import demangle_all
    from opdoctor.facts.elf.image import ElfImage
    from opdoctor.facts.inputfile import open_input

    def elf(p: Path) -> bool:
        with p.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"

    libs = [p for root in (BUILD / "fixtures", torch_lib_dir()) for p in root.rglob("*.so*")
            if p.is_file() and elf(p)]
    needs = skipped = 0
    for path in libs:
        try:
            image = ElfImage.open(open_input(str(path)))
            undefined = [s.name for s in DynSymbols(image).undefined()]
        except Exception:  # a deliberately broken fixture: nothing to bind either
            continue
        names = demangle_all(undefined)
        truth = any(_is_torch(names[u]) for u in undefined)
        assert _needs_torch_names(image) or not truth, path
        needs += truth
        skipped += not _needs_torch_names(image)
    assert needs >= 50 and skipped >= 200, (needs, skipped, len(libs))


def test_a_library_its_packages_extension_loads_with_its_definers_is_no_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MindSpore 2.10 (survey 15's F2): ``libmindspore_cpu.so`` leaves functions to
    ``libmindspore_cluster.so``, which it does not NEED; ``_c_expression`` NEEDs both, and
    ld.so binds a load group as one, so ``import mindspore`` works. Checked alone, or in a
    walk or scan of the package, it was an OD301 error. It is a note now, naming the
    extension whose load brings it in; a library that no extension loads with its definers
    stays the error ctypes really raises."""
    import sysconfig

    pkg = tmp_path / "site" / "grppkg"
    (pkg / "lib").mkdir(parents=True)
    (tmp_path / "cluster.c").write_text("int cluster_fn(void) { return 41; }\n")
    (tmp_path / "cpu.c").write_text("int cluster_fn(void);\n"
                                    "int cpu_fn(void) { return cluster_fn() + 1; }\n")
    lib = pkg / "lib"
    for name, extra in (("cluster", []), ("cpu", [])):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib / f"lib{name}.so"),
                        str(tmp_path / f"{name}.c"), *extra], check=True, timeout=60)
    (tmp_path / "ext.c").write_text(
        '#include <Python.h>\nint cpu_fn(void);\n'
        'static PyObject *answer(PyObject *s, PyObject *a) { return PyLong_FromLong(cpu_fn()); }'
        '\nstatic PyMethodDef M[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
        'static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_core", "", -1, M};\n'
        "PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&D); }\n")
    ext = pkg / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(ext), str(tmp_path / "ext.c"), f"-L{lib}", "-Wl,--no-as-needed",
                    "-lcpu", "-lcluster", "-Wl,-rpath,$ORIGIN/lib"], check=True, timeout=60)
    (pkg / "__init__.py").write_text("from grppkg._core import answer\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ok = subprocess.run([sys.executable, "-c", "import grppkg; print(grppkg.answer())"],
                        capture_output=True, text=True, timeout=60,
                        env={**env, "PYTHONPATH": str(tmp_path / "site")})
    assert ok.stdout.split() == ["42"], ok.stderr
    alone = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(lib / "libcpu.so")], capture_output=True, text=True, timeout=60)
    assert "undefined symbol: cluster_fn" in alone.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib / "libcpu.so"))
    rep = res.json()["reports"][0]
    (od301,) = [f for f in rep["findings"] if f["code"] == "OD301"]
    assert od301["severity"] == "info" and res.code == 0, od301
    assert f"it loads as part of {ext.name}'s load, whose libraries define them " \
        "(libcluster.so)" in od301["message"]
    # No extension brings it in with its definer: the error ctypes raises.
    ext.unlink()
    from opdoctor.facts import commandcache
    commandcache.clear()
    res = cli(capsys, "check", "-f", "json", "--static", str(lib / "libcpu.so"))
    (od301,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD301"]
    assert od301["severity"] == "error" and res.code == 1


def test_the_symbol_a_failed_load_names_is_the_first_relocation_it_cannot_bind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OD301 says which "undefined symbol: X" the load fails with. It named the first of
    .dynsym's order, and 6 of the real TensorFlow op libraries of survey 17 fail on another:
    the loader applies the relocations in their order (.rela.dyn, then .rela.plt) and stops
    at the first one nothing binds. Here a data reference (.rela.dyn) to zzz_data comes
    after aaa_func in .dynsym."""
    (tmp_path / "r.c").write_text("extern int zzz_data;\nextern void aaa_func(void);\n"
                                  "int *p = &zzz_data;\nvoid f(void) { aaa_func(); }\n")
    lib = tmp_path / "librel.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "r.c")],
                   check=True, timeout=60)
    dynsym = subprocess.run(["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True,
                            text=True, check=True).stdout
    assert dynsym.index("aaa_func") < dynsym.index("zzz_data")  # what the old rule named
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60)
    assert real.stderr.strip().endswith("undefined symbol: zzz_data"), real.stderr
    rep = cli(capsys, "check", "--static", "-f", "json", str(lib)).json()["reports"][0]
    od301 = next(f for f in rep["findings"] if f["code"] == "OD301")
    assert od301["message"].endswith('the load fails with "undefined symbol: zzz_data"'), \
        od301["message"]


def test_a_long_demangled_name_is_brief_in_a_headline() -> None:
    """torchrec 1.5.0 beside fbgemm-gpu-cpu 1.9.0: the verdict line was "undefined symbol
    torch::autograd::_wrap_outputs(std::vector<at::Tensor, …" for ~900 characters (survey
    18). A long name keeps its qualified name and shows its parameters as (…); templates,
    operator() and a trailing const survive; a short name is unchanged."""
    from opdoctor.facts.elf.demangle import brief, demangle

    full = demangle("_ZN5torch8autograd13_wrap_outputsERKSt6vectorIN2at6TensorESaIS3_EERKSt13"
                    "unordered_setIPN3c1010TensorImplESt4hashIS9_ESt8equal_toIS9_ESaIS9_EESH_"
                    "SH_SH_SH_S7_RKSt10shared_ptrINS0_4NodeEESt8functionIFS5_S7_S7_EEbb")
    assert len(full) > 800 and full.startswith("torch::autograd::_wrap_outputs(std::vector")
    assert brief(full) == "torch::autograd::_wrap_outputs(…)"
    assert brief("c10::impl::foo(int)") == "c10::impl::foo(int)"
    long_op = "ns::x<std::pair<int, int> >::operator()(" + "int, " * 60 + "int) const"
    assert brief(long_op) == "ns::x<std::pair<int, int> >::operator()(…) const"
    assert len(brief("a" * 400)) == 160


def _vendored_pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An installed package as auditwheel lays it out: pkg/_ext.so (RPATH
    $ORIGIN/../pkg.libs) NEEDs pkg.libs/libvend.so; both in pkg's RECORD."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    libs, pkg = site / "pkg.libs", site / "pkg"
    libs.mkdir(parents=True)
    pkg.mkdir()
    (tmp_path / "v.c").write_text("int vend_fn(void) { return 7; }\n" * 1 +
                                  "static char big[65536] = {1};\n"
                                  "char *vend_data(void) { return big; }\n")
    (tmp_path / "e.c").write_text("int vend_fn(void);\nint ext_fn(void) { return vend_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libvend.so", "-o",
                    str(libs / "libvend.so"), str(tmp_path / "v.c")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../pkg.libs",
                    "-o", str(pkg / "_ext.so"), str(tmp_path / "e.c"), "-L", str(libs),
                    "-lvend"], check=True, timeout=60)
    (pkg / "__init__.py").write_text("")
    dist_info(site, "pkg", "1.0", ["pkg/__init__.py", "pkg/_ext.so", "pkg.libs/libvend.so"])
    return site, pkg / "_ext.so", libs / "libvend.so"


@pytest.mark.parametrize("damage", ["truncated", "aarch64"])
def test_a_vendored_dependency_that_is_cut_short_or_foreign_is_that_files_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    """Survey 21's W4, W5: faiss-cpu's vendored libgomp cut short by a copy (its import dies
    with SIGBUS) was five OD302 "version GOMP_x not found" errors with a toolchain fix and
    "✓ Cause 4"; the aarch64 copy in its place ("cannot open shared object file": the loader
    skips a foreign ELF) was OD201 with a patchelf fix. Now the dependency's own fault, on
    that file — OD406 / OD408, cause 4 — with the distribution's reinstall into the directory
    it is in; the rest folds under it."""
    site, ext, vend = _vendored_pair(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    load = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).ext_fn())"
    ok = subprocess.run([sys.executable, "-c", load, str(ext)], capture_output=True, text=True,
                        timeout=60, env=env)
    assert ok.returncode == 0 and ok.stdout.strip() == "7", ok.stderr
    if damage == "truncated":
        with open(vend, "r+b") as fh:
            fh.truncate(vend.stat().st_size // 3)
    else:
        shutil.copy(fixture("integrity/aarch64.so"), vend)
    real = subprocess.run([sys.executable, "-c", load, str(ext)], capture_output=True, text=True,
                          timeout=60, env=env)
    assert real.returncode != 0, real.stdout
    if damage == "aarch64":
        assert "libvend.so: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(ext))
    rep = res.json()["reports"][0]
    code = {"truncated": "OD406", "aarch64": "OD408"}[damage]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == [code], rep["diagnosis"]
    assert rep["diagnosis"]["cause"] == 4
    root = next(f for f in rep["findings"] if f["code"] == code)
    assert root["subject"] == str(vend) and "which _ext.so needs" in root["message"], root
    assert root["fix"].startswith(
        f"pip install --force-reinstall --no-deps --upgrade --target {site} 'pkg==1.0'")
    others = {f["code"] for f in rep["findings"] if f["severity"] == "error"} - {code}
    assert others <= set(rep["diagnosis"]["consequences"].get(code, [])), rep["diagnosis"]


def test_a_vendored_libraries_directory_copied_away_is_no_rpath_to_edit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W12: cv2/ copied without opencv_python_headless.libs/ beside it: seven of
    its fifteen libraries are nowhere, and OD201's fix was "find it … patchelf --set-rpath".
    The directory its RPATH names (auditwheel's <dist>.libs) does not exist: the fix says so —
    install the package, or copy that directory — and no patchelf."""
    site, ext, vend = _vendored_pair(tmp_path)
    shutil.rmtree(vend.parent)
    # copied alone, as cv2/ was: no metadata either (with its RECORD there, the fix is the
    # distribution's reinstall: test_a_library_missing_from_torchs_own_install_is_torchs_…)
    shutil.rmtree(next(site.glob("*.dist-info")))
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(ext)], capture_output=True, text=True, timeout=60, env=env)
    assert "libvend.so: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(ext))
    (od201,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert od201["fix"].startswith("pkg.libs, the directory of vendored libraries its RPATH "
                                   "names"), od201["fix"]
    assert "patchelf" not in od201["fix"]


@pytest.mark.probe
def test_a_package_copied_without_its_vendored_directory_gets_that_fix_from_the_probe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W12 with the probe: `--package cv2` of cv2/ copied alone led with the real
    loader's miss (OD220) and its generic fix ("RPATH/RUNPATH ($ORIGIN), LD_LIBRARY_PATH"):
    the directory the RPATH named, where the loader really searched, is the vendored one that
    was left behind."""
    site, _ext, vend = _vendored_pair(tmp_path)
    shutil.rmtree(vend.parent)
    shutil.rmtree(next(site.glob("*.dist-info")))  # copied alone: no metadata either
    (site / "pkg" / "__init__.py").write_text(
        "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), '_ext.so'))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    real = subprocess.run([sys.executable, "-c", "import pkg"], capture_output=True, text=True,
                          timeout=60, env=dict(env, PYTHONPATH=str(site)), cwd=tmp_path)
    assert "libvend.so: cannot open shared object file" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--package", "pkg", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path)).json()["reports"][0]
    (od220,) = [f for f in rep["findings"] if f["code"] == "OD220"]
    assert od220["fix"].startswith("pkg.libs, the directory of vendored libraries its RPATH "
                                   "names"), od220["fix"]
    # whichever leads (here the static reading reaches the load too; cv2's bootstrap import
    # it does not), the verdict's fix is that one
    assert "pkg.libs, the directory of vendored libraries" in rep["diagnosis"]["summary"]


def test_what_a_preloaded_dependency_needs_is_in_the_targets_search_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's K7: torch 2.14.1's CUDA libtorch.so uses std:: symbols and NEEDs no
    libstdc++.so.6 — libtorch_cpu.so, which it NEEDs and `import torch` has loaded, does. glibc's
    search list for a new library is its whole NEEDED closure, already-loaded libraries' own
    dependencies included; the emulated tree stopped at the preloaded library, and `scan` of a
    healthy CUDA torch exited 1 on OD301. Here the same shape: a C++ library linked without
    libstdc++, NEEDing only libtorch_cpu.so."""
    lib_dir = torch_lib_dir()
    src = tmp_path / "user.cpp"
    src.write_text("#include <string>\nextern \"C\" int user_len(const char *s) "
                   "{ return (int)std::string(s).size(); }\n")
    obj = tmp_path / "user.o"
    lib = tmp_path / "libuser.so"
    subprocess.run(["g++", "-c", "-fPIC", "-O1", "-o", str(obj), str(src)], check=True,
                   timeout=60)
    subprocess.run(["gcc", "-shared", "-o", str(lib), str(obj), f"-L{lib_dir}",
                    "-Wl,--no-as-needed", "-ltorch_cpu",
                    f"-Wl,-rpath,{lib_dir}"], check=True, timeout=60)
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                            check=True).stdout
    assert "libstdc++" not in needed and "libtorch_cpu.so" in needed, needed
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                               text=True, check=True).stdout
    assert "_ZNSt7__cxx1112basic_string" in undefined, undefined
    real = run_python("import ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\n"
                      "print(lib.user_len(b'four'))", str(lib))
    assert real.returncode == 0 and real.stdout.strip() == "4", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    found = res.json()["reports"][0]["findings"]
    # (it links torch and registers nothing: OD101, true of this fixture, is not the point)
    assert not [f for f in found if f["code"] in ("OD301", "OD432")], found


def _stand_in_torch_python(tmp_path: Path) -> Path:
    """Another torch's libtorch_python.so, as far as the loader goes: a library of that SONAME
    in ``tmp_path/other-torch/lib`` defining none of its symbols."""
    other = tmp_path / "other-torch" / "lib"
    other.mkdir(parents=True)
    (tmp_path / "stub.c").write_text("int stub_fn(void) { return 0; }\n")
    stub = other / "libtorch_python.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libtorch_python.so", "-o",
                    str(stub), str(tmp_path / "stub.c")], check=True, timeout=60)
    return stub


def _torch_import_fails_and_is_od205(capsys: pytest.CaptureFixture[str], var: str,
                                     value: str) -> dict[str, Any]:
    """`import torch` fails with ``var=value`` in its environment (the real import), and
    `check --static --package torch` with it has OD205 as its root: that finding."""
    real = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, var: value})
    assert real.returncode != 0 and "undefined symbol" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "torch", "--env",
              f"{var}={value}")
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD205"], rep["diagnosis"]
    (od205,) = [f for f in rep["findings"] if f["code"] == "OD205"]
    return od205


@pytest.mark.probe
def test_another_torchs_libraries_on_ld_library_path_are_the_root(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's E2: LD_LIBRARY_PATH at another environment's torch/lib (searched before
    torch's RUNPATH): `import torch` loads that torch's libtorch_python.so and fails, and
    `check --package torch` said "No problem found" (an extension built for this torch got
    "rebuild it against this torch"). Here the other torch is one stand-in libtorch_python.so;
    the real import fails on it. torch's own lib directory on LD_LIBRARY_PATH is no finding."""
    other = _stand_in_torch_python(tmp_path).parent
    od205 = _torch_import_fails_and_is_od205(capsys, "LD_LIBRARY_PATH", str(other))
    assert "libtorch_python.so" in od205["message"] and f"remove {other}" in od205["fix"]
    own = cli(capsys, "check", "-f", "json", "--static", "--package", "torch", "--env",
              f"LD_LIBRARY_PATH={torch_lib_dir()}")
    assert "OD205" not in [f["code"] for f in own.json()["reports"][0]["findings"]]


@pytest.mark.probe
def test_another_torchs_library_in_ld_preload_is_the_root(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24's F2: LD_PRELOAD with another torch's libtorch_cpu.so (torch 2.14.1's into a
    torch 2.13 job): `import torch` fails on an undefined symbol, and `check --package torch`
    said "No problem found". Here the other torch is one stand-in libtorch_python.so, which
    the real import binds by name and fails on; torch's own libc10.so preloaded is no
    finding."""
    stub = _stand_in_torch_python(tmp_path)
    od205 = _torch_import_fails_and_is_od205(capsys, "LD_PRELOAD", str(stub))
    assert od205["message"].startswith("LD_PRELOAD loads another torch's libraries into every "
                                       "process: libtorch_python.so"), od205["message"]
    assert od205["fix"].startswith(f"remove {stub} from LD_PRELOAD"), od205["fix"]
    own = cli(capsys, "check", "-f", "json", "--static", "--package", "torch", "--env",
              f"LD_PRELOAD={torch_lib_dir() / 'libc10.so'}")
    assert "OD205" not in [f["code"] for f in own.json()["reports"][0]["findings"]]


def _torch_copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(this torch's site-packages, a site under ``tmp_path`` holding a copy of its torch —
    hard links — and its dist-info, that dist-info in this torch's site)."""
    src_site = torch_lib_dir().parent.parent
    site = tmp_path / "site"
    site.mkdir()
    shutil.copytree(src_site / "torch", site / "torch", copy_function=_link_or_copy)
    info = next(src_site.glob("torch-*.dist-info"))
    shutil.copytree(info, site / info.name)
    return src_site, site, info


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy (slower, the same files)
        shutil.copy2(src, dst)


@pytest.mark.probe
def test_a_library_missing_from_torchs_own_install_is_torchs_to_reinstall(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's A2 and F4: an interrupted `pip install --force-reinstall torch` left
    torch/lib without libtorch_cuda.so (and pip's stash ~orch/ beside it); uninstalling
    nvidia-cudnn-cu13 took torch's libcudnn.so.9. `import torch` fails; `check --package torch`
    said "No problem found" and torchvision's check "find it, then patchelf" (`find` found the
    stash). What torch's own import cannot find is reported, and a file torch's RECORD lists
    gets torch's reinstall. Here: a copy of this torch (hard links) without libshm.so, which
    libtorch_python.so NEEDs, and the stash an interrupted pip leaves."""
    _src_site, site, info = _torch_copy(tmp_path)
    (site / "~orch").mkdir()  # pip's stash of the torch it was replacing
    (site / "torch" / "lib" / "libshm.so").unlink()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    real = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                          text=True, timeout=120, env={**env, "PYTHONPATH": str(site)})
    assert "libshm.so: cannot open shared object file" in real.stderr, real.stderr
    for args in (["--package", "torch"], [str(reference())]):
        rep = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
                  "--cwd", str(tmp_path), *args).json()["reports"][0]
        (root,) = [f for f in rep["findings"]
                   if f["code"] in rep["diagnosis"]["root_findings"]]
        assert root["code"] == "OD201" and root["subject"] == "libshm.so", rep["diagnosis"]
        assert "which `import torch` loads" in root["message"]
        assert f"{info.name}'s RECORD lists torch/lib/libshm.so" in root["fix"], root["fix"]
        assert "--force-reinstall" in root["fix"] and f"rm -rf {site / '~orch'}" in root["fix"]
    # with the probe, its "torch itself fails to import" is that miss's consequence
    diag = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--cwd",
               str(tmp_path), str(reference())).json()["reports"][0]["diagnosis"]
    assert diag["root_findings"] == ["OD201"] and "OD320" in diag["consequences"]["OD201"], diag


@pytest.mark.probe
def test_the_torch_an_extension_was_built_for_behind_pythonpath_is_found(
        tmp_path: Path) -> None:
    """Survey 22's E6: PYTHONPATH at another environment's site-packages puts its torch
    first; torch_scatter, built for the torch installed here, got "rebuild it for torch
    2.14.1" (OD304/OD321) — which would bake the pollution in. The torch behind that entry
    that exports every symbol the extension needs is the one it was built for. Here: a stand-in
    torch first on PYTHONPATH (its libraries define none of them), this venv's torch behind it,
    which really defines all of the reference operator's."""
    other = tmp_path / "other-site"
    lib = other / "torch" / "lib"
    lib.mkdir(parents=True)
    (other / "torch" / "__init__.py").write_text("")
    (other / "torch" / "version.py").write_text("__version__ = '9.9.9'\ncuda = None\n")
    (tmp_path / "stub.c").write_text("int stub(void) { return 0; }\n")
    for name in ("libtorch_cpu.so", "libc10.so", "libtorch.so", "libtorch_python.so"):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o", str(lib / name),
                        str(tmp_path / "stub.c")], check=True, timeout=60)
    ref = reference()
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(ref)], capture_output=True,
                               text=True, check=True).stdout.split()
    wanted = tuple(n for n in undefined if n.startswith(("_ZN3c10", "_ZN2at")))[:20]
    assert wanted
    real = torch_lib_dir()
    defined = subprocess.run(["nm", "-D", "--defined-only", str(real / "libc10.so"),
                              str(real / "libtorch_cpu.so")], capture_output=True, text=True,
                             check=True).stdout
    assert all(n in defined for n in wanted)
    facts = Facts(str(ref), CheckOptions(env=(("PYTHONPATH", str(other)),), probe=False))
    assert facts.interpreter is not None and facts.interpreter.torch is not None
    found = facts.hidden_torch_defining(wanted)
    assert found is not None, facts.interpreter.sys_path[:3]
    where, version, entry = found
    assert Path(where) == real.parent and entry == str(other)
    assert version == subprocess.run([sys.executable, "-c", "import torch; print(torch."
                                      "__version__)"], capture_output=True, text=True,
                                     timeout=120, env={k: v for k, v in os.environ.items()
                                                       if k != "PYTHONPATH"}).stdout.strip()
    # with no other torch first, nothing is hidden
    assert Facts(str(ref), CheckOptions(env=(), probe=False)).hidden_torch_defining(wanted) is None


@pytest.mark.probe
def test_a_torch_installed_without_its_requirements_is_one_install(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's F6: a CUDA torch installed with `pip install --no-deps` lacks its nvidia-*
    requirement wheels; `import torch` fails on the first library they ship. The check listed
    eleven OD201s, each fix one wheel (one said "looks for libnccl.so.2 in nvidia/cudnn/lib",
    others "find it, then patchelf"). One finding: torch's own install with its requirements.
    Here: a copy of this torch (hard links) whose libtorch_python.so NEEDs three libraries
    found, as a CUDA wheel's are, through RUNPATH entries under site-packages/nvidia/<name>/lib,
    and whose metadata requires the three wheels that install them — none installed."""
    src_site, site, info = _torch_copy(tmp_path)
    python_lib = site / "torch" / "lib" / "libtorch_python.so"
    python_lib.unlink()  # a copy of its own: patchelf must not write through the hard link
    shutil.copy2(src_site / "torch" / "lib" / python_lib.name, python_lib)
    wheels = {"cudnn": ("libcudnn.so.9", "9.24.0.43"), "nccl": ("libnccl.so.2", "2.30.7"),
              "cusparselt": ("libcusparseLt.so.0", "0.8.1")}
    # (two runs: patchelf 0.14 garbles the string table when one run does both)
    subprocess.run(["patchelf", *[a for lib, _v in wheels.values() for a in ("--add-needed", lib)],
                    str(python_lib)], check=True, timeout=60)
    subprocess.run(["patchelf", "--set-rpath", ":".join(
        ["$ORIGIN", *(f"$ORIGIN/../../nvidia/{d}/lib" for d in wheels)]), str(python_lib)],
        check=True, timeout=60)
    meta = site / info.name / "METADATA"
    head, _, body = meta.read_text().partition("\n\n")
    meta.write_text(head + "".join(f"\nRequires-Dist: nvidia-{d}-cu13=={v}"
                                   for d, (_lib, v) in wheels.items()) + "\n\n" + body)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    real = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                          text=True, timeout=120, env={**env, "PYTHONPATH": str(site)})
    assert re.search(r"lib(cudnn|nccl|cusparseLt)\.so\.\d: cannot open shared object file",
                     real.stderr), real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "torch").json()["reports"][0]
    od201 = [f for f in rep["findings"] if f["code"] == "OD201"]
    assert len(od201) == 1 and od201[0]["code"] in rep["diagnosis"]["root_findings"], od201
    (f,) = od201
    assert all(lib in f["message"] for lib, _v in wheels.values()), f["message"]
    version = info.name[len("torch-"):-len(".dist-info")]
    assert f"torch {version} is installed without 3 of its requirements" in f["message"]
    assert f"`pip install 'torch=={version}'` without --no-deps" in f["fix"], f["fix"]
    assert "patchelf" not in f["fix"]
    # each library named with the wheel that installs it, in that wheel's own directory
    for d, (lib, v) in wheels.items():
        assert f"{lib} (needed by libtorch_python.so): the nvidia-{d}-cu13=={v} wheel " \
            f"installs it in nvidia/{d}/lib" in f["evidence"], f["evidence"]
    # with two of the three installed, one is missing: its own finding, its own wheel
    for d in ("cudnn", "nccl"):
        lib_dir = site / "nvidia" / d / "lib"
        lib_dir.mkdir(parents=True)
        subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o",
                        str(lib_dir / wheels[d][0]), f"-Wl,-soname,{wheels[d][0]}"],
                       input="int stub(void) { return 0; }\n", text=True, check=True,
                       timeout=60)
        (site / f"nvidia_{d}_cu13-{wheels[d][1]}.dist-info").mkdir()
    real = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                          text=True, timeout=120, env={**env, "PYTHONPATH": str(site)})
    assert "libcusparseLt.so.0: cannot open shared object file" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "torch").json()["reports"][0]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD201"]
    assert f["subject"] == "libcusparseLt.so.0" and f["fix"].startswith(
        "pip install 'nvidia-cusparselt-cu13==0.8.1'") and "in nvidia/cusparselt/lib" in \
        f["fix"], f["fix"]


_SELF_IMPORT = '''import importlib, os, sys


def bootstrap():
    # opencv's way: its own directory first on sys.path, itself out of sys.modules, and the
    # extension module of the same name imported in its place
    here = sys.modules.pop("selfpkg")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        native = importlib.import_module("selfpkg")
    finally:
        del sys.path[0]
        sys.modules["selfpkg"] = here
    for name, value in native.__dict__.items():
        if not name.startswith("__"):
            globals()[name] = value


bootstrap()
'''


def test_a_package_that_reimports_itself_as_its_extension_has_that_library_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W12 with --static: cv2's bootstrap() puts cv2/ first on sys.path and
    re-imports `cv2`, which then is cv2/cv2.abi3.so — no static reading follows that, and
    `check --static --package cv2` of a copy without opencv_python_headless.libs said "its
    compiled library was not analysed", exit 0. The extension in the package's own directory
    named as the package is what its import loads: it is checked. Here a package laid out
    and bootstrapped as cv2 is, its extension NEEDing a library of <dist>.libs."""
    import sysconfig

    site, _ext, vend = _vendored_pair(tmp_path)
    pkg = site / "selfpkg"
    (site / "pkg").rename(pkg)
    (site / "pkg.libs").rename(site / "selfpkg.libs")
    (pkg / "_ext.so").unlink()
    (tmp_path / "m.c").write_text(
        "#include <Python.h>\nint vend_fn(void);\n"
        "static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, \"selfpkg\", NULL, -1, NULL};\n"
        "PyMODINIT_FUNC PyInit_selfpkg(void) {\n"
        "  PyObject *m = PyModule_Create(&def);\n"
        "  if (m) PyModule_AddIntConstant(m, \"answer\", vend_fn());\n  return m;\n}\n")
    ext = pkg / ("selfpkg" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-isystem", sysconfig.get_paths()["include"],
                    "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../selfpkg.libs", "-o", str(ext),
                    str(tmp_path / "m.c"), "-L", str(site / "selfpkg.libs"), "-lvend"],
                   check=True, timeout=60)
    (pkg / "__init__.py").write_text(_SELF_IMPORT)
    shutil.rmtree(next(site.glob("*.dist-info")))  # copied alone, as cv2/ was
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(site)

    def truth() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", "import selfpkg; print(selfpkg.answer)"],
                              capture_output=True, text=True, timeout=60, env=env,
                              cwd=tmp_path)

    def check(*target: str) -> dict:  # type: ignore[type-arg]
        return cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
                   "--cwd", str(tmp_path), *target).json()["reports"][0]

    healthy = truth()
    assert healthy.returncode == 0 and healthy.stdout.strip() == "7", healthy.stderr
    for target in (["--package", "selfpkg"], [str(pkg)]):
        rep = check(*target)
        # the library itself, or the package directory that "loads" it
        assert rep["target"]["path"] == str(ext) or f"loads {ext.name}:" in \
            rep["target"]["kind"], rep["target"]
        assert not [f for f in rep["findings"] if f["severity"] in ("error", "warning")], \
            rep["findings"]
    shutil.rmtree(vend.parent.parent / "selfpkg.libs")
    broken = truth()
    assert "libvend.so: cannot open shared object file" in broken.stderr, broken.stderr
    for target in (["--package", "selfpkg"], [str(pkg)]):
        rep = check(*target)
        (od201,) = [f for f in rep["findings"] if f["code"] == "OD201"]
        assert od201["subject"] == "libvend.so" and od201["fix"].startswith(
            "selfpkg.libs, the directory of vendored libraries its RPATH names"), od201
        assert "OD201" in rep["diagnosis"]["root_findings"]


@pytest.mark.probe
def test_an_openmp5_library_after_torchs_libgomp_and_the_preload_that_fixes_it(
        tmp_path: Path) -> None:
    """Survey 23's G1, G1c: an op library compiled with this system's GCC and its OpenMP 5
    allocator (omp_aligned_alloc: OMP_5.0.1) loads after `import torch`, whose bundled
    libgomp.so.1 (up to OMP_5.0) is the process's: "version `OMP_5.0.1' not found". OD302's
    fix spoke of libstdc++ and conda's libstdcxx-ng; the system's libgomp defines the version:
    the fix preloads it. And with LD_PRELOAD of it the load works — the check said OD302
    still (exit 1): LD_PRELOAD is in the emulated process now."""
    src = tmp_path / "omp5.c"
    src.write_text("#include <omp.h>\n"
                   "void *omp5_buffer(void) { return omp_aligned_alloc(64, 256, "
                   "omp_default_mem_alloc); }\n")
    lib = tmp_path / "libomp5op.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-fopenmp", str(src), "-o", str(lib),
                    f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lc10"],
                   check=True, timeout=60)
    gomp = os.path.realpath(subprocess.run(["gcc", "-print-file-name=libgomp.so.1"],
                                           capture_output=True, text=True, check=True,
                                           timeout=60).stdout.strip())
    load = "import ctypes, sys, torch; ctypes.CDLL(sys.argv[1]); print('loaded')"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    real = run_python(load, str(lib), env=env)
    assert re.search(r"version `OMP_5\.0\.\d' not found", real.stderr), real.stderr[-600:]
    (f,) = [f for f in run_check(str(lib), CheckOptions(env=tuple(env.items()))).findings
            if f.code == "OD302"][:1]
    named = re.search(r"`LD_PRELOAD=(\S+)`", f.fix or "")
    assert named and os.path.realpath(named[1]) == gomp, f.fix  # the system's, by its name
    assert "libstdc" not in (f.fix or "")
    # the fix, applied: a fresh interpreter (the preload is read at its start)
    fixed = subprocess.run([sys.executable, "-c", load, str(lib)], capture_output=True,
                           text=True, timeout=120, env={**env, "LD_PRELOAD": gomp})
    assert fixed.stdout.strip() == "loaded", fixed.stderr[-600:]
    report = run_check(str(lib), CheckOptions(env=tuple({**env, "LD_PRELOAD": gomp}.items())))
    assert not [x for x in report.findings if x.code in ("OD302", "OD301")], report.findings
