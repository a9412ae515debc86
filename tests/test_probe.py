"""The load probe: real loads in a sandboxed child of the target interpreter."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report
from opdoctor.pipeline import run_check
from tests.conftest import cuda_built, fixture, fresh_probes, reference
from tests.helpers import cli
from tests.torchfork import run_python

# Probes fork from the worker's zygotes where they can (see tests/conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

NO_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}


def probe(path: Path, **kw: object) -> Report:
    opts = CheckOptions(probe=True, env=tuple(NO_ENV.items()), **kw)  # type: ignore[arg-type]
    return run_check(str(path), opts)


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


@pytest.mark.probe
def test_reference_loads_and_registers() -> None:
    with fresh_probes():  # a one-library check's own child, as a user's run starts it
        report = probe(reference(), smoke=True, expect_ops=("myop::weighted_sum[CPU]",))
    assert report.findings == []
    p = report.sections["probe"]
    assert p["outcome"] == "loaded" and p["new_ops"] == ["myop::weighted_sum"]
    op = p["ops"][0]
    assert op["schema"] == "myop::weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor"
    assert op["keys"] == (["CPU"] if cuda_built() else ["CPU", "CUDA"])
    assert op["registered_at"].startswith("native/myop/weighted_sum.cpp:")
    assert p["smoke"][0]["ok"] is True
    assert p["static_prediction"] == "loads"


@pytest.mark.probe
def test_reference_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", str(reference()))
    assert res.code == 0
    assert "executed the library): loaded, registered myop::weighted_sum [CPU" in res.out
    static = cli(capsys, "check", "--static", str(reference()))
    assert "probe" not in static.out


@pytest.mark.probe
def test_duplicate_namespace() -> None:
    report = probe(fixture("probe/dup_b.so"), preload=(str(fixture("probe/dup_a.so")),))
    assert codes(report) == ["OD120"]
    ev = "\n".join(report.findings[0].evidence)
    assert "namespace dupns" in report.findings[0].message
    assert "Previous registration of TORCH_LIBRARY was registered at" in ev
    assert "registered at: tests/fixtures/probe/dup_ns.cpp:9" in ev


@pytest.mark.probe
def test_static_initialisation_order_crash() -> None:
    report = probe(fixture("probe/init_order.so"))
    assert codes(report) == ["OD124"]
    f = report.findings[0]
    assert "SIGSEGV" in f.message and "static-initialisation order" in f.message
    assert any("_GLOBAL__sub_I_init_order_registrar.cpp, _GLOBAL__sub_I_init_order_registry.cpp"
               in e for e in f.evidence)


# torch refusing a registration while the library's initialisers run: what torch itself does
# with the fixture, what the probe makes of it, and what explain makes of torch's own text.
REFUSALS = {
    "def_in_impl.so": ('def("thrice"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL '
                       "block", 'torch refused m.def("thrice") inside a TORCH_LIBRARY_IMPL block',
                       "Move the m.def() into the namespace's TORCH_LIBRARY(ns, m) block",
                       "torch.def-in-impl-block"),
    "kernel_mismatch.so": ("Inferred operator schema for a C++ kernel function doesn't match",
                           "the C++ kernel registered for kmismatch::scale does not match its "
                           "schema: The number of arguments is different. 1 vs 2",
                           "Make the kernel's C++ signature match the schema",
                           "torch.kernel-schema-mismatch"),
}


@pytest.mark.probe
@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_registration_torch_refuses_while_loading(name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    torch_says, message, fix, pattern = REFUSALS[name]
    lib = fixture(f"probe/{name}")
    real = run_python("import torch, sys; torch.ops.load_library(sys.argv[1])", str(lib))
    assert real.returncode == -6 and "terminate called after throwing" in real.stderr
    assert torch_says in real.stderr
    report = probe(lib)
    f = next(f for f in report.findings if f.code == "OD123")
    assert [x.code for x in report.findings if x.severity.value == "error"] == ["OD123"]
    assert "SIGABRT" in f.message and message in f.message and f.fix.startswith(fix)
    # torch's message is the evidence, never the C++ stack frames it appends
    assert torch_says in f.evidence[0] and not any("frame #" in e for e in f.evidence)
    res = cli(capsys, "explain", "-f", "json", real.stderr)
    out = res.json()
    assert (out["cause"], out["subcause"], out["codes"]) == (1, pattern, ["OD123"])


@pytest.mark.probe
def test_a_refusal_raised_by_a_packages_import_is_read_the_same_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same refusal through torch.library's Python API: an exception of the package's
    import, not an abort."""
    (tmp_path / "pyimpl").mkdir()
    (tmp_path / "pyimpl" / "__init__.py").write_text(
        'import torch\n\n_lib = torch.library.Library("pyimpl", "IMPL", "CPU")\n'
        '_lib.define("twice(Tensor x) -> Tensor")\n')
    env = {**NO_ENV, "PYTHONPATH": ""}
    real = run_python("import torch, pyimpl", cwd=tmp_path, env=env)
    assert real.returncode == 1 and 'RuntimeError: def("twice"): Cannot define an operator ' \
        "inside of a TORCH_LIBRARY_IMPL block" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "pyimpl")
    rep = res.json()["reports"][0]
    f = next(f for f in rep["findings"] if f["code"] == "OD123")
    assert 'torch refused m.def("twice") inside a TORCH_LIBRARY_IMPL block' in f["message"]
    assert 'torch.library.Library(ns, "DEF")' in f["fix"]
    assert rep["diagnosis"]["cause"] == 1


@pytest.mark.probe
def test_the_package_imports_with_the_collector_as_python_leaves_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The probe imports torch with the cyclic garbage collector paused (probe_script's
    ``collector_paused``, ~13 % of the import's CPU time): the package's own import and its
    load run with the collector as ``python -c "import pkg"`` has it — enabled, default
    thresholds — in a probe of its own and in one forked from a zygote."""
    pkg = tmp_path / "gcpkg"
    pkg.mkdir()
    shutil.copy(reference(), pkg / "libmyop.so")
    (pkg / "__init__.py").write_text(
        "import gc, os, torch\n"
        "here = os.path.dirname(__file__)\n"
        "with open(os.path.join(here, f'gc-{os.getpid()}.txt'), 'w') as fh:\n"
        "    fh.write(f'{gc.isenabled()} {gc.get_threshold()}')\n"
        "torch.ops.load_library(os.path.join(here, 'libmyop.so'))\n")
    env = {**NO_ENV, "PYTHONPATH": ""}
    # A plain interpreter, not a fork of the tests' zygote (which imported torch the same way).
    real = subprocess.run([sys.executable, "-c", "import gcpkg"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert real.returncode == 0, real.stderr
    truth = {p.read_text() for p in pkg.glob("gc-*.txt")}
    assert truth == {"True (700, 10, 10)"}
    for p in pkg.glob("gc-*.txt"):
        p.unlink()
    with fresh_probes():
        fresh = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "gcpkg")
    forked = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "gcpkg")
    for res, was_forked in ((fresh, False), (forked, True)):
        probe_section = res.json()["reports"][0]["sections"]["probe"]
        assert probe_section["outcome"] == "loaded", probe_section
        assert probe_section["forked"] is was_forked
    seen = [p.read_text() for p in pkg.glob("gc-*.txt")]
    assert len(seen) == 2 and set(seen) == truth


@pytest.mark.probe
def test_constructor_abort() -> None:
    report = probe(fixture("probe/ctor_abort.so"))
    assert codes(report) == ["OD124"]
    assert "SIGABRT" in report.findings[0].message


@pytest.mark.probe
def test_hang_is_killed_and_leaves_nothing() -> None:
    start = time.monotonic()
    limits: list[tuple[int, int]] = []
    before = {p.pid for p in psutil.Process().children()}
    watcher = threading.Thread(target=_limits_of_the_child, args=(before, limits))
    watcher.start()
    with fresh_probes():  # a plain child, whose command line names the library
        report = probe(fixture("probe/ctor_hang.so"), timeout=3.0)
    watcher.join()
    assert time.monotonic() - start < 20
    assert codes(report) == ["OD125"]
    # The child was bounded while it ran (set once it was started, not by a preexec_fn):
    # 2 × its timeout + 10 s of CPU, and no core file.
    assert limits == [(16, 21), (0, 0)]
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if any("ctor_hang.so" in a for a in (p.info["cmdline"] or []))]
    assert leftovers == []


def _limits_of_the_child(before: set[int], into: list[tuple[int, int]]) -> None:
    """The CPU and core-file limits of the first probe child this process starts that is not
    in ``before`` (the worker's kept zygotes), within 15 s."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for proc in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if proc.pid not in before and \
                        any(a.endswith("probe_script.py") for a in proc.cmdline()):
                    time.sleep(0.5)  # the limits are set just after the child starts
                    into[:] = [proc.rlimit(psutil.RLIMIT_CPU), proc.rlimit(psutil.RLIMIT_CORE)]
                    return
        time.sleep(0.05)


@pytest.mark.probe
def test_schema_rejected_at_load() -> None:
    report = probe(fixture("registration/bad_schema.so"))
    assert "OD123" in codes(report)
    od123 = next(f for f in report.findings if f.code == "OD123")
    assert any("unknown type specifier" in e for e in od123.evidence)


@pytest.mark.probe
def test_cpu_only_called_for_cuda() -> None:
    report = probe(fixture("registration/cpu_only.so"),
                   expect_ops=("myop::weighted_sum[CUDA]",))
    assert "OD122" in codes(report)
    f = next(f for f in report.findings if f.code == "OD122")
    assert "registered with CPU kernels, not CUDA" in f.message
    assert "Could not run 'myop::weighted_sum' with arguments from the 'CUDA' backend" \
        in f.message


@pytest.mark.probe
def test_missing_dependency_with_loader_trace() -> None:
    report = probe(fixture("loader/wrong_runpath.so"))
    assert "OD220" in codes(report) and "OD201" in codes(report)
    f = next(f for f in report.findings if f.code == "OD220")
    assert any("no_such_dir (RUNPATH from file" in e for e in f.evidence)
    assert "OD130" not in codes(report)  # static and real agree


@pytest.mark.probe
def test_undefined_symbol_and_version_agree_with_static() -> None:
    r1 = probe(fixture("loader/other_torch.so"))
    assert {"OD304", "OD321"} <= set(codes(r1)) and "OD130" not in codes(r1)
    r2 = probe(fixture("loader/uses_verdep.so"))
    assert {"OD302", "OD322"} <= set(codes(r2)) and "OD130" not in codes(r2)


@pytest.mark.probe
def test_disagreement_is_reported(tmp_path: Path) -> None:
    """A loader mechanism the static emulation does not model — an LD_AUDIT library whose
    la_objsearch hands ld.so another path for a name — makes the real load find the dependency
    the emulation does not (LD_PRELOAD was this test's mechanism until the emulation learnt
    it: survey 23's G1c)."""
    dep = fixture("loader/depdir/libmyop_dep.so")
    (tmp_path / "audit.c").write_text(
        "#define _GNU_SOURCE\n#include <link.h>\n#include <string.h>\n"
        "unsigned int la_version(unsigned int v) { return LAV_CURRENT; }\n"
        "char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag) {\n"
        f"  if (flag == LA_SER_ORIG && strcmp(name, \"{dep.name}\") == 0) return \"{dep}\";\n"
        "  return (char *)name;\n}\n")
    audit = tmp_path / "audit.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(audit), str(tmp_path / "audit.c")],
                   check=True, timeout=60)
    lib = fixture("loader/uses_dep.so")
    load = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('loaded')"
    plain = subprocess.run([sys.executable, "-c", load, str(lib)], capture_output=True,
                           text=True, timeout=60, env=dict(NO_ENV))
    assert f"{dep.name}: cannot open shared object file" in plain.stderr, plain.stderr
    audited = subprocess.run([sys.executable, "-c", load, str(lib)], capture_output=True,
                             text=True, timeout=60, env=dict(NO_ENV, LD_AUDIT=str(audit)))
    assert audited.stdout.strip() == "loaded", audited.stderr
    env = dict(NO_ENV, LD_AUDIT=str(audit))
    opts = CheckOptions(probe=True, env=tuple(env.items()))
    report = run_check(str(fixture("loader/uses_dep.so")), opts)
    assert "OD201" in codes(report) and "OD130" in codes(report)
    f = next(f for f in report.findings if f.code == "OD130")
    assert "predicted the load to fail; it succeeded" in f.message


@pytest.mark.probe
def test_torch_import_failure(tmp_path: Path) -> None:
    """A venv whose torch install lacks libc10.so (a partial install): import torch fails."""
    import importlib.util
    import venv

    real = Path(importlib.util.find_spec("torch").origin).parent  # type: ignore[union-attr]
    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    torch = site / "torch"
    torch.mkdir()
    for entry in real.iterdir():
        if entry.name != "lib":
            (torch / entry.name).symlink_to(entry)
    (torch / "lib").mkdir()
    for entry in (real / "lib").iterdir():
        if entry.name != "libc10.so":
            (torch / "lib" / entry.name).symlink_to(entry)
    for dep in real.parent.glob("*"):  # torch's own dependencies (numpy is optional)
        if dep.name.startswith(("typing_extensions", "sympy", "mpmath", "networkx", "jinja2",
                                "markupsafe", "fsspec", "filelock")):
            (site / dep.name).symlink_to(dep)
    py = str(tmp_path / "v" / "bin" / "python")
    report = probe(reference(), python=py)
    assert "OD320" in codes(report)
    f = next(f for f in report.findings if f.code == "OD320")
    assert "libc10.so" in "\n".join(f.evidence)


def test_broken_file_is_not_probed() -> None:
    report = probe(fixture("integrity/truncated.so"))
    assert codes(report) == ["OD406"]
    run = next(c for c in report.checks if c.name == "probe")
    assert run.status.value == "skipped"


def test_same_namespace_in_site_packages(tmp_path: Path) -> None:
    import shutil
    import venv

    from opdoctor.pipeline import Selection

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    (site / "oldcopy").mkdir()
    shutil.copy(fixture("probe/dup_a.so"), site / "oldcopy" / "libdup.so")
    opts = CheckOptions(python=str(tmp_path / "v" / "bin" / "python"),
                        against_site_packages=True)
    report = run_check(str(fixture("probe/dup_b.so")), opts, Selection(("OD128",)))
    assert codes(report) == ["OD128"]
    assert "oldcopy/libdup.so also defines TORCH_LIBRARY(dupns)" in report.findings[0].message
    clean = run_check(str(reference()), opts, Selection(("OD128",)))
    assert clean.findings == []


@pytest.mark.probe
def test_the_same_operators_in_a_stripped_copy_in_site_packages(tmp_path: Path) -> None:
    """Survey 23's X2, X3: a second copy of torchvision (its ops in STABLE_TORCH_LIBRARY
    fragments) or of fbgemm-gpu-cpu (stripped: no registrar symbol left) loaded beside the
    installed one aborts with "registered … multiple times"; `--against-site-packages`, whose
    purpose that is, found nothing — it searched for registrar symbols only. The same complete
    schema strings in another installed library are the same operators. Here: fbgemm-gpu-cpu
    1.8.0's sparse_async_cumsum library (a real wheel's, stripped), and a copy of it."""
    import venv

    from opdoctor.pipeline import Selection
    from tests.test_pyreg import site as pyreg_site
    from tests.torchfork import run_python

    lib = pyreg_site("fbgemm-gpu-cpu-1.8.0") / "fbgemm_gpu" / \
        "fbgemm_gpu_sparse_async_cumsum.so"
    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    (site / "oldcopy").mkdir()
    shutil.copy(lib, site / "oldcopy" / "libcumsum.so")
    real = run_python("import sys, torch\nfor p in sys.argv[1:]: torch.ops.load_library(p)",
                      str(site / "oldcopy" / "libcumsum.so"), str(lib))
    assert real.returncode != 0 and "with the same name and overload name multiple times" \
        in real.stderr, real.stderr[-800:]
    opts = CheckOptions(python=str(tmp_path / "v" / "bin" / "python"),
                        against_site_packages=True)
    report = run_check(str(lib), opts, Selection(("OD128",)))
    assert codes(report) == ["OD128"], report.findings
    assert "oldcopy/libcumsum.so also defines this library's operators (asynchronous_" in \
        report.findings[0].message, report.findings[0].message
    clean = run_check(str(reference()), opts, Selection(("OD128",)))
    assert clean.findings == []


@pytest.mark.probe
def test_probe_script_error_is_opdoctors_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the probe script (forced through its self-test hook) is a finding that blames
    opdoctor, keeps the traceback, and is never the verdict on the library."""
    monkeypatch.setenv("OPDOCTOR_PROBE_SELFTEST_FAULT", "inspect")
    report = run_check(str(reference()), CheckOptions(probe=True))
    assert codes(report) == ["OD129"]
    f = report.findings[0]
    assert "probe script failed during 'inspect' with RuntimeError" in f.message
    assert "not a verdict on the library" in f.message
    assert any("self-test fault" in e for e in f.evidence)
    assert any(e.startswith("traceback: ") for e in f.evidence)
    assert report.sections["probe"]["outcome"] == "probe error"
    assert report.diagnosis.cause == 0 and "opdoctor's probe failed" in report.diagnosis.summary


MULTI_INIT = """
import os, traceback
import torch

_here = os.path.dirname(os.path.abspath(__file__))
errors = []
for variant in ("b", "a"):  # the newest first, as torchcodec tries FFmpeg 8 … 4
    try:
        torch.ops.load_library(os.path.join(_here, f"lib_{variant}.so"))
        break
    except OSError:
        errors.append(f"variant {variant}:\\n{traceback.format_exc()}")
else:
    raise RuntimeError("Could not load any variant:\\n" + "\\n".join(errors))
"""


@pytest.mark.probe
def test_each_library_of_a_package_that_tries_several_gets_its_own_miss(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A package that tries one library after another (torchcodec's libtorchcodec_core8 …
    core4, one per FFmpeg major) reports every attempt's error. Each library's report must
    confirm its own missing dependency with the real loader's, not the first attempt's
    (survey 9: core4's report said libavutil.so.60 — core8's — "confirms" its OD201)."""
    import importlib.util
    import subprocess

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    torch_lib = str(Path(spec.origin).parent / "lib")
    pkg = tmp_path / "multi"
    pkg.mkdir()
    for v in ("a", "b"):
        (tmp_path / f"dep_{v}.c").write_text(f"int dep_{v}(void) {{ return 1; }}\n")
        (tmp_path / f"lib_{v}.c").write_text(
            f"int dep_{v}(void);\nint use_{v}(void) {{ return dep_{v}(); }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / f"dep_{v}.c"), "-o",
                        str(tmp_path / f"libmissing_{v}.so")], check=True, timeout=60)
        # linked to libc10 as a torch extension is: each such library of a package is checked
        subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / f"lib_{v}.c"), "-o",
                        str(pkg / f"lib_{v}.so"), "-L", str(tmp_path), f"-lmissing_{v}",
                        "-Wl,--no-as-needed", "-L", torch_lib, "-lc10"], check=True, timeout=60)
        (tmp_path / f"libmissing_{v}.so").unlink()  # never installed
    (pkg / "__init__.py").write_text(MULTI_INIT)
    real = run_python("import torch, multi", cwd=tmp_path, env={**NO_ENV, "PYTHONPATH": ""})
    assert "RuntimeError: Could not load any variant" in real.stderr
    assert real.stderr.index("libmissing_b.so: cannot open shared object file") < \
        real.stderr.index("libmissing_a.so: cannot open shared object file")
    # each library checked in package mode (the package's import is the probe's)
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "multi",
              str(pkg / "lib_a.so"), str(pkg / "lib_b.so"))
    reports = {Path(r["target"]["path"]).name: r for r in res.json()["reports"]}
    assert sorted(reports) == ["lib_a.so", "lib_b.so"]
    for name, rep in reports.items():
        v = name[len("lib_")]
        probe_miss = [f["subject"] for f in rep["findings"] if f["code"] == "OD220"]
        assert probe_miss == [f"libmissing_{v}.so"], (v, probe_miss)
        assert "OD220" in rep["diagnosis"]["consequences"].get("OD201", [])


@pytest.mark.probe
def test_symbols_a_package_preloads_by_a_modules_file_are_bound_by_the_real_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F1: usearch's import loads numkong's extension RTLD_GLOBAL by its module's
    `__file__`, then its own extension, which uses nk_* symbols without NEEDing numkong.
    OD301 "the load fails with undefined symbol", an error, exit 1, on a package that works.
    The probe's process mapped the extension — a load that succeeded binds every symbol
    (RTLD_NOW) —, so a static OD301 is a note there; and statically, the imported module's
    `__file__` is its file, loaded RTLD_GLOBAL before the extension: its symbols bind the
    extension's. Here: the same layout, built from two C files."""
    import sysconfig

    from tests.helpers import cli

    pkg, provider = tmp_path / "site" / "upkg", tmp_path / "site" / "nkpkg"
    for d in (pkg, provider):
        d.mkdir(parents=True)
    (provider / "__init__.py").write_text("")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    inc = sysconfig.get_paths()["include"]
    module = ("#include <Python.h>\n{extra}\n"
              "static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, \"{name}\", NULL, -1, "
              "NULL}};\nPyMODINIT_FUNC PyInit_{name}(void) {{ PyObject *m = "
              "PyModule_Create(&def); if (m) PyModule_AddIntConstant(m, \"answer\", {value}); "
              "return m; }}\n")
    for name, extra, value in (("_provider", "int nk_fn(void) { return 41; }", "0"),
                               ("_user", "int nk_fn(void);", "nk_fn() + 1")):
        (tmp_path / f"{name}.c").write_text(module.format(name=name, extra=extra, value=value))
        where = provider if name == "_provider" else pkg
        subprocess.run(["gcc", "-shared", "-fPIC", "-isystem", inc, str(tmp_path / f"{name}.c"),
                        "-o", str(where / f"{name}{suffix}")], check=True, timeout=60)
    init = ("import ctypes\n"
            "try:\n"
            "    from nkpkg import _provider as _ext\n"
            "    _path = {path}\n"
            "    _lib = ctypes.CDLL(_path, mode=ctypes.RTLD_GLOBAL)\n"
            "except ImportError:\n"
            "    pass\n"
            "from upkg import _user\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def check(*mode: str) -> tuple[int, dict]:  # type: ignore[type-arg]
        res = cli(capsys, "check", "-f", "json", *mode, "--package", "upkg", "--env",
                  f"PYTHONPATH={pkg.parent}", "--cwd", str(tmp_path))
        rep = res.json()["reports"][0]
        assert rep["target"]["path"].endswith(f"_user{suffix}"), rep["target"]
        return res.code, rep

    for path in ("_ext.__file__", "getattr(_ext, '__fi' + 'le__')"):
        (pkg / "__init__.py").write_text(init.format(path=path))
        real = subprocess.run([sys.executable, "-c", "import upkg; print(upkg._user.answer)"],
                              env={**env, "PYTHONPATH": str(pkg.parent)}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert real.stdout.strip() == "42", real.stderr
        code, rep = check()
        assert code == 0 and not [f for f in rep["findings"] if f["severity"] != "info"], \
            rep["findings"]
        static_code, static = check("--static")
        od301 = [f for f in static["findings"] if f["code"] == "OD301"]
        if path == "_ext.__file__":
            # statically: the imported module's file, loaded RTLD_GLOBAL before the
            # extension; the handler around it hides nothing that reading shows
            assert static_code == 0 and not [f for f in static["findings"]
                                             if f["severity"] != "info"], static["findings"]
        else:
            # a path no reading computes: the static view misses the symbols, the probe's
            # process bound them — its OD301 is a note saying so
            assert static_code == 1 and od301 and od301[0]["severity"] == "error"
            (note,) = [f for f in rep["findings"] if f["code"] == "OD301"]
            assert "were bound by the real load" in note["message"], note


@pytest.mark.probe
def test_a_guess_list_for_a_library_ctypes_finds_is_not_retried(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F3 (Wand 0.7.2 without ImageMagick): its import runs `libc_path =
    ctypes.util.find_library('c')`, and `if libc_path:` loads it, else tries a list of guesses
    ending with macOS's /usr/lib/libc.dylib inside `except OSError`. The probe retried that
    last guess and led with "libc.dylib was not found" (OD220), the real MagickWand error
    "a consequence" of it. ctypes finds libc through ld.so.cache here: the guesses never run."""
    from tests.helpers import cli

    pkg = tmp_path / "site" / "guesspkg"
    pkg.mkdir(parents=True)
    # as Wand's version.py does: the package's import catches its api module's ImportError
    (pkg / "__init__.py").write_text("try:\n    from . import api\nexcept ImportError:\n"
                                     "    api = None\n")
    (pkg / "api.py").write_text(
        "import ctypes, ctypes.util\n"
        "libc_path = ctypes.util.find_library('c')\n"
        "if libc_path:\n"
        "    libc = ctypes.cdll.LoadLibrary(libc_path)\n"
        "else:\n"
        "    for libc_path in ('libc.so.6', '/usr/lib/libc.dylib'):\n"
        "        try:\n"
        "            libc = ctypes.cdll.LoadLibrary(libc_path)\n"
        "            break\n"
        "        except OSError:\n"
        "            continue\n"
        "try:\n"
        "    lib = ctypes.CDLL('libguessmagick-absent.so.9')\n"
        "except OSError:\n"
        "    raise ImportError('GuessMagick shared library not found.')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import guesspkg.api"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(pkg.parent)}, capture_output=True,
                          text=True, timeout=60)
    assert "ImportError: GuessMagick shared library not found." in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--package", "guesspkg", "--env",
              f"PYTHONPATH={pkg.parent}", "--cwd", str(tmp_path)).json()["reports"][0]
    assert "libc.dylib" not in json.dumps(rep["findings"]), rep["findings"]
    roots = [f for f in rep["findings"] if f["code"] in rep["diagnosis"]["root_findings"]]
    assert roots and all("guessmagick" in json.dumps(f).lower() for f in roots), roots
