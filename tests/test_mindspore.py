"""MindSpore AOT custom operators (``ops.Custom("lib.so:Func", …, func_type="aot")``).

Each fixture (native/mindspore/, built by `make fixtures`) is checked statically, and the same
library is run through real MindSpore 2.10 (build/venv-ms, `make venv-ms`) to prove that it
fails (or works) the way the finding says. Nothing is mocked: the MindSpore half is skipped,
naming the make target, only when that venv is absent.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report
from opdoctor.pipeline import run_check
from opdoctor.targets import split_aot_target
from tests.conftest import BUILD, fixture
from tests.helpers import cli, dist_info

MS_PY = BUILD / "venv-ms" / "bin" / "python"
RUNNER = Path(__file__).parent / "resources" / "ms_run_aot.py"


def check(name: str, func: str = "CustomAdd") -> Report:
    """Static check of ``mindspore/<name>:<func>`` (the library is never loaded)."""
    return run_check(str(fixture(f"mindspore/{name}")), CheckOptions(aot_function=func))


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def spec(name: str, func: str = "CustomAdd") -> str:
    return f"{fixture(f'mindspore/{name}').resolve()}:{func}"


def ms_python() -> str:
    """The MindSpore venv's interpreter; skip (naming the make target) when it is absent."""
    if not MS_PY.exists():
        note = BUILD / "fixtures" / "skipped" / "venv-ms.txt"
        why = note.read_text().strip() if note.exists() else "not created"
        pytest.skip(f"{MS_PY} missing ({why}): run `make venv-ms` (mindspore 2.10.0)")
    return str(MS_PY)


# Specs that MindSpore survives (it raises or returns): run in one MindSpore process.
SURVIVABLE = [("aot_add.so", "CustomAdd"), ("aot_add_noinit.so", "CustomAdd"),
              ("aot_add.so", "CustomAd"), ("aot_add_mangled.so", "CustomAdd"),
              ("aot_add_badsig.so", "CustomAdd"), ("aot_add_initmangled.so", "CustomAdd"),
              ("needs_missing.so", "CustomAdd")]


@pytest.fixture(scope="module")
def mindspore_runs() -> dict[str, dict[str, Any]]:
    """What real MindSpore does with each survivable spec: {spec: {result | error, stderr}};
    empty when the MindSpore venv is absent (each test's MindSpore half then skips)."""
    if not MS_PY.exists():
        return {}
    py = ms_python()
    specs = [spec(n, f) for n, f in SURVIVABLE]
    proc = subprocess.run([py, str(RUNNER), *specs], capture_output=True, text=True,
                          timeout=600)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert lines[0] == {"mindspore": "2.10.0"}
    return {d["spec"]: d for d in lines[1:]}


def ms_run(runs: dict[str, dict[str, Any]], name: str, func: str = "CustomAdd") -> dict[str, Any]:
    """Real MindSpore's outcome for one spec; skips (after the static half ran) without it."""
    if not runs:
        ms_python()
    return runs[spec(name, func)]



# What MindSpore itself does with each spec: the ground truth of the static tests below (one
# MindSpore process for all of them, so the static halves stay in the fast suite).
def _ran(result: list[list[float]], init: bool) -> Callable[[dict[str, Any]], None]:
    def check_run(run: dict[str, Any]) -> None:
        assert run.get("result") == result, run
        assert ("CustomAddInit called" in run["stderr"]) is init, run["stderr"][-500:]
    return check_run


def _failed(*parts: str, starts: str = "") -> Callable[[dict[str, Any]], None]:
    def check_run(run: dict[str, Any]) -> None:
        err = run.get("error", "")
        assert all(p in err for p in parts) and err.startswith(starts), run
    return check_run


def _missing_helper(run: dict[str, Any]) -> None:
    """MindSpore's exception has no message of its own: the library it could not open is
    named only in its ERROR log (stderr)."""
    assert run.get("error", "").startswith("RuntimeError: \n"), run
    assert "libaot_helper.so" not in run["error"], run
    assert "libaot_helper.so: cannot open shared object file" in run["stderr"], run


MINDSPORE_TRUTH: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    # the healthy op runs and MindSpore calls its extern "C" Init
    ("aot_add.so", "CustomAdd"): _ran([[2.0, 2.0], [2.0, 2.0]], init=True),
    ("aot_add_noinit.so", "CustomAdd"): _ran([[2.0, 2.0], [2.0, 2.0]], init=False),
    # a misspelt function (OD161)
    ("aot_add.so", "CustomAd"): _failed("error occurs when fetching function 'CustomAd'",
                                        "undefined symbol: CustomAd"),
    ("aot_add_mangled.so", "CustomAdd"): _failed("undefined symbol: CustomAdd"),  # OD160
    ("aot_add_badsig.so", "CustomAdd"): _failed("undefined symbol: CustomAdd"),  # OD162
    # a C++ Init: no error at all, and the Init never runs (OD163)
    ("aot_add_initmangled.so", "CustomAdd"): _ran([[2.0, 2.0], [2.0, 2.0]], init=False),
    ("needs_missing.so", "CustomAdd"): _missing_helper,  # OD201
}


@pytest.mark.probe  # MindSpore itself runs every spec (the module's mindspore_runs)
@pytest.mark.parametrize(("name", "func"), sorted(MINDSPORE_TRUTH))
def test_mindspore_itself_does_what_the_static_checks_say(
        mindspore_runs: dict[str, dict[str, Any]], name: str, func: str) -> None:
    assert sorted(MINDSPORE_TRUTH) == sorted(SURVIVABLE)
    MINDSPORE_TRUTH[(name, func)](ms_run(mindspore_runs, name, func))


# ------------------------------------------------------------------ healthy

def test_healthy_aot_op_is_clean() -> None:
    report = check("aot_add.so")
    assert codes(report) == []
    sec = report.sections["mindspore"]
    assert sec["exported"] and sec["init"] == "exported"


def test_healthy_without_init_is_clean() -> None:
    report = check("aot_add_noinit.so")
    assert codes(report) == []
    assert report.sections["mindspore"]["init"] == "absent (optional)"


# ------------------------------------------------------------------ the function

def test_wrong_name_suggests_the_exported_one() -> None:
    report = check("aot_add.so", "CustomAd")
    assert codes(report) == ["OD161"]
    f = report.findings[0]
    assert "did you mean CustomAdd?" in f.message
    assert f.fix.endswith("aot_add.so:CustomAdd\"")


def test_mangled_function_shows_signature_and_extern_c() -> None:
    report = check("aot_add_mangled.so")
    assert codes(report) == ["OD160"]
    f = report.findings[0]
    assert "_Z9CustomAddiPPvPiPPlPPKcS_S_" in f.message
    assert any("CustomAdd(int, void**, int*, long**, char const**, void*, void*)" in e
               for e in f.evidence)
    assert f.fix.startswith('declare it extern "C": extern "C" int CustomAdd(int nparam')


def test_signature_mismatch_from_mangled_name() -> None:
    report = check("aot_add_badsig.so")
    assert codes(report) == ["OD162"]
    f = report.findings[0]
    assert "CustomAdd(float*, float*, float*, long)" in f.message
    assert "void **params" in f.fix


def test_init_without_extern_c_is_silently_skipped() -> None:
    report = check("aot_add_initmangled.so")
    assert codes(report) == ["OD163"]
    assert report.findings[0].severity.value == "warning"
    assert "_Z13CustomAddInitPiPPlPPKcPv" in report.findings[0].message


# ------------------------------------------------------------------ loading

def test_needed_library_not_found() -> None:
    report = check("needs_missing.so")
    assert "OD201" in codes(report)
    assert "libaot_helper.so" in next(f for f in report.findings if f.code == "OD201").message
    assert "OD164" not in codes(report)  # the dlopen fails first: no launch-time claim


@pytest.mark.probe
def test_undefined_function_kills_at_first_launch() -> None:
    report = check("aot_add_undef.so")
    assert {"OD164", "OD301"} <= set(codes(report))
    f = next(f for f in report.findings if f.code == "OD164")
    assert "aot_helper_log" in f.message and "exit 127" in f.message
    proc = subprocess.run([ms_python(), str(RUNNER), "--raw", spec("aot_add_undef.so")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 127
    assert "symbol lookup error" in proc.stderr and "aot_helper_log" in proc.stderr
    assert len(proc.stdout.splitlines()) == 1  # the version line; the call never returned


# ------------------------------------------------------------------ the notation

def test_split_aot_target() -> None:
    lib = str(fixture("mindspore/aot_add.so"))
    assert split_aot_target(f"{lib}:CustomAdd") == (lib, "CustomAdd")
    assert split_aot_target(lib) == (lib, "")
    assert split_aot_target(f"{lib}:not a name") == (f"{lib}:not a name", "")
    assert split_aot_target("/no/such.so:CustomAdd") == ("/no/such.so:CustomAdd", "")


def test_cli_accepts_lib_colon_function(capsys: pytest.CaptureFixture[str]) -> None:
    lib = fixture("mindspore/aot_add_mangled.so")
    res = cli(capsys, "check", "--static", "-f", "json", f"{lib}:CustomAdd")
    assert res.code == 1
    assert "OD160" in {f["code"] for f in res.json()["reports"][0]["findings"]}
    res = cli(capsys, "check", "--static", f"{fixture('mindspore/aot_add.so')}:CustomAdd")
    assert res.code == 0


def test_cli_missing_library_with_function_is_an_input_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = cli(capsys, "check", "--static", f"{tmp_path}/nope.so:CustomAdd")
    assert res.code == 2
    assert "Traceback" not in res.out + res.err


# ------------------------------------------------------------------ the probe (real MindSpore)

def probe(name: str, func: str = "CustomAdd", python: str | None = None) -> Report:
    """Check with the probe: MindSpore's dlopen/dlsym, then the op run through MindSpore."""
    opts = CheckOptions(aot_function=func, probe=True, smoke=True,
                        python=python or ms_python(), timeout=120)
    return run_check(str(fixture(f"mindspore/{name}")), opts)


@pytest.mark.probe
def test_probe_runs_the_healthy_op() -> None:
    report = probe("aot_add.so")
    assert codes(report) == []
    seen = report.sections["mindspore"]["probe"]
    assert seen["mindspore"] == "2.10.0" and seen["found"] and seen["init_found"]
    assert seen["smoke"] == {"ok": True, "result": "[[2.0, 2.0], [2.0, 2.0]]"}


@pytest.mark.probe
def test_probe_survives_the_lazy_symbol_lookup_error() -> None:
    report = probe("aot_add_undef.so")
    f = next(f for f in report.findings if f.code == "OD164")
    assert "exited with status 127" in f.message and "aot_helper_log" in f.message
    assert not any(f.code == "OD131" for f in report.findings)  # not an initialiser's exit()


@pytest.mark.probe
def test_probe_confirms_the_missing_function() -> None:
    report = probe("aot_add.so", "CustomAd")
    assert codes(report) == ["OD161"]  # the smoke run's identical error is not repeated
    assert any('dlsym("CustomAd") returned NULL' in e for e in report.findings[0].evidence)


@pytest.mark.probe
def test_probe_without_mindspore_loads_the_mindspore_way() -> None:
    """The interpreter opdoctor runs in has no MindSpore: the probe still dlopens with
    RTLD_LAZY (the lazy undefined function does not fail the load) and says it did not run."""
    import sys

    report = probe("aot_add_undef.so", python=sys.executable)
    seen = report.sections["mindspore"]["probe"]
    assert seen["mindspore"] is None and seen["found"]
    assert seen["smoke"] == {"skipped": "mindspore is not installed for this interpreter"}


# ------------------------------------------------------------------ MindSpore's old C++ ABI

EXT = "ms_ext.cpython-311-x86_64-linux-gnu.so"


@pytest.mark.probe
def test_new_abi_module_against_old_abi_mindspore() -> None:
    """A CustomOpBuilder-like module linking libmindspore_core.so: built with
    -D_GLIBCXX_USE_CXX11_ABI=1 it needs std::__cxx11 names MindSpore does not export, and
    `import mindspore; import ms_ext` really fails with that undefined symbol."""
    bad = fixture(f"mindspore/abi1/{EXT}")
    report = run_check(str(bad), CheckOptions())
    assert [f.code for f in report.diagnosis.root_findings] == ["OD350"]
    f = next(f for f in report.findings if f.code == "OD350")
    assert "std::__cxx11::basic_string" in f.evidence[0]
    assert f.fix == "rebuild with -D_GLIBCXX_USE_CXX11_ABI=0"
    good = fixture(f"mindspore/abi0/{EXT}")
    assert "OD350" not in codes(run_check(str(good), CheckOptions()))
    assert run_check(str(good), CheckOptions()).sections["mindspore"] == {}
    code = "import mindspore, ms_ext; print('imported')"
    ok = subprocess.run([ms_python(), "-c", code], cwd=good.parent, capture_output=True,
                        text=True, timeout=300)
    assert ok.returncode == 0 and "imported" in ok.stdout
    fail = subprocess.run([ms_python(), "-c", code], cwd=bad.parent, capture_output=True,
                          text=True, timeout=300)
    assert fail.returncode == 1
    assert "undefined symbol: _ZN9mindspore10InitializeERKNSt7__cxx11" in fail.stderr


# ------------------------------------------------------------------ ops.Custom in a package

def test_package_ops_custom_calls_are_checked(tmp_path: Path) -> None:
    """--package: the ops.Custom("lib.so:Func", …, func_type="aot") strings in the package's
    Python files are found and each named function is checked in its library."""
    import shutil

    pkg = tmp_path / "aotpkg"
    pkg.mkdir()
    shutil.copy(fixture("mindspore/aot_add_mangled.so"), pkg)
    (pkg / "__init__.py").write_text(
        "from mindspore import ops\n"
        "add = ops.Custom(\"aot_add_mangled.so:CustomAdd\", out_shape=lambda x, _: x,\n"
        "                 out_dtype=lambda x, _: x, func_type=\"aot\")\n")
    opts = CheckOptions(package="aotpkg", cwd=str(tmp_path))
    report = run_check(str(pkg), opts)
    f = next(f for f in report.findings if f.code == "OD160")
    assert f.evidence[0] == f"called at {pkg / '__init__.py'}:2"
    calls = report.sections["mindspore"]["aot_calls"]
    assert calls[0]["function"] == "CustomAdd" and calls[0]["exported"] is False


@pytest.mark.probe
def test_numpy1_library_that_initialises_numpy_on_first_use(
        capsys: pytest.CaptureFixture[str]) -> None:
    """MindSpore 2.10's libmindspore_common.so was built with NumPy 1.x headers, and pip
    installed NumPy 2 beside it (MindSpore requires numpy>=1.25.0). MindSpore itself says so
    when it first needs NumPy's C API ("Numpy init failed") and runs on. A library that is no
    Python extension module initialises NumPy on first use: OD328 is a warning there, not the
    "its import fails" error of an extension module."""
    py = ms_python()
    lib = MS_PY.parent.parent / "lib" / "python3.11" / "site-packages" / "mindspore" / "lib" / \
        "libmindspore_common.so"
    assert lib.is_file(), lib
    real = subprocess.run([py, "-c", "import mindspore, numpy as np\n"
                           "t = mindspore.Tensor(np.ones((2, 2), np.float32))\n"
                           "print(np.__version__, (t + t).asnumpy().tolist())"],
                          capture_output=True, text=True, timeout=300)
    assert real.returncode == 0, real.stderr[-2000:]
    version = real.stdout.split()[0]
    assert version.startswith("2.") and "Numpy init failed" in real.stderr, real.stderr[-2000:]
    res = cli(capsys, "check", "-f", "json", "--static", "--python", py, str(lib))
    od328 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD328"]
    assert len(od328) == 1 and od328[0]["severity"] == "warning", od328
    assert od328[0]["message"].startswith(f"built against NumPy 1.x's C API; numpy {version} "
                                          "is installed, which refuses it (a library that "
                                          "initialises NumPy on first use")
    assert "mindspore 2.10.0" in od328[0]["fix"]
    # The package reading says the same of MindSpore as a whole: a warning, the import works.
    res = cli(capsys, "check", "-f", "json", "--static", "--python", py, "--package",
              "mindspore")
    od328 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD328"]
    assert res.code == 0 and [f["severity"] for f in od328] == ["warning"], od328
    assert od328[0]["message"].endswith("(libraries that initialise NumPy on first use: they "
                                        "warn and run on, and their NumPy calls fail)")
    # With the probe: the names its CPU build lacks (gpu_*, ascend_*) are notes of their own,
    # not consequences of the NumPy-1 build (they were shown under "! Cause 3": survey 20)
    res = cli(capsys, "check", "-f", "json", "--python", py, "--package", "mindspore")
    (rep,) = res.json()["reports"]
    notes = [f for f in rep["findings"] if f["code"] == "OD512"]
    assert res.code == 0 and notes and all(f["severity"] == "info" for f in notes), notes
    assert "OD512" not in rep["diagnosis"]["consequences"].get("OD328", []), rep["diagnosis"]


def test_dependency_tree_lists_each_librarys_needs_once() -> None:
    """MindSpore's ``_c_expression`` reaches 34 libraries through many paths: expanded at
    every occurrence its tree had 75,923 nodes (a 26 MB JSON report). Each library's needs are
    listed once, under its first occurrence, and nothing of the graph is lost: every edge the
    resolver found is in the section exactly once."""
    from opdoctor.checks.deps import tree_section
    from opdoctor.facts import Facts

    site = Path(ms_python()).parent.parent / "lib" / "python3.11" / "site-packages"
    lib = site / "mindspore" / "_c_expression.cpython-311-x86_64-linux-gnu.so"
    tree = Facts(str(lib), CheckOptions(env=())).process.tree
    section = tree_section(tree, "")["tree"]
    listed: dict[str, list[str]] = {}
    nodes, stack, repeats = 0, [section], 0
    while stack:
        node = stack.pop()
        nodes += 1
        if "needed" in node:
            assert node["path"] not in listed, f"{node['path']} expanded twice"
            listed[node["path"]] = [k["name"] for k in node["needed"]]
            stack.extend(node["needed"])
        repeats += bool(node.get("listed_above"))
    edges = {lib.path: [name for name, _ in tree.edges.get(lib.path, [])]
             for lib in tree.order if not lib.preloaded_by}
    assert listed == edges
    assert nodes == 1 + sum(map(len, edges.values())) and repeats > 50, (nodes, repeats)


_PLUGIN_TRUTH = """
import ctypes, sys
import mindspore, numpy as np
print("cpu op", (mindspore.Tensor(np.ones(3, np.float32)) * 2).asnumpy().tolist())
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
        print("loaded", path)
    except OSError as exc:
        print("refused", exc)
"""


@pytest.mark.probe
def test_device_plugins_of_a_cpu_install_are_warnings_here(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 15's F3: MindSpore's CPU wheel ships GPU and Ascend plugins that its backend
    dlopens only for such a device. MindSpore itself: `import mindspore` and a CPU op work,
    and each plugin really cannot load here (CUDA's, CANN's libraries are absent). opdoctor:
    their missing libraries are warnings naming the plugin and the device, exit 0."""
    from opdoctor.facts.devices import CANN, CUDA, host_has

    py = ms_python()
    if host_has(CUDA) or host_has(CANN):
        pytest.skip("this machine has an NVIDIA GPU or an Ascend NPU: the plugins are loaded")
    site = MS_PY.parent.parent / "lib" / "python3.11" / "site-packages" / "mindspore" / "lib"
    plugins = [site / "plugin" / "libmindspore_gpu.so.11.1",
               site / "plugin" / "ascend" / "libmindspore_graph_ir.so"]
    real = subprocess.run([py, "-c", _PLUGIN_TRUTH, *map(str, plugins)], capture_output=True,
                          text=True, timeout=300)
    assert "cpu op [2.0, 2.0, 2.0]" in real.stdout, real.stderr[-2000:]
    refused = [ln for ln in real.stdout.splitlines() if ln.startswith("refused")]
    assert len(refused) == 2 and "libcu" in refused[0] and "cannot open" in refused[1]
    res = cli(capsys, "check", "--static", "-f", "json", "--python", py, *map(str, plugins))
    assert res.code == 0
    for rep, device in zip(res.json()["reports"], ("NVIDIA GPU", "Ascend NPU"), strict=True):
        od201 = [f for f in rep["findings"] if f["code"] == "OD201"]
        assert od201 and all(f["severity"] == "warning" for f in od201)
        assert all(f"device plugin of its package, loaded only on a machine with an {device}"
                   in f["message"] for f in od201)
    # With the probe, which loads each alone (survey 20: `scan --probe` made 9 Ascend plugins
    # OD220 errors, naming MindSpore's own libraries): the same reading, warnings, exit 0.
    ascend = site / "plugin" / "ascend" / "libdvpp_utils.so"
    res = cli(capsys, "check", "-f", "json", "--python", py, str(plugins[1]), str(ascend))
    assert res.code == 0, [r["diagnosis"]["summary"] for r in res.json()["reports"]]
    od220 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD220"]
    assert od220 and all(f["severity"] == "warning" and "Ascend CANN device plugin" in
                         f["message"] for f in od220), od220
    # The headline names CANN's library, not MindSpore's own _c_dataengine module (which its
    # import loads before any plugin; it led libdvpp_utils.so's report: survey 20's re-run).
    summary = res.json()["reports"][1]["diagnosis"]["summary"]
    assert summary.startswith("No error — ") and ": libascendcl.so (needed by " in summary, \
        summary


def test_a_plugin_an_extension_module_needs_stays_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same kind of library reached by the package's import is no plugin loaded on
    demand: a package's lib/plugin/libplug.so NEEDs CUDA 11's runtime (absent here). Alone
    in the package, its OD201 is a warning; once the package's extension module NEEDs it,
    Python's own import of that module fails on it, and the OD201 is an error again."""
    import shutil
    import sys

    from opdoctor.facts.devices import CUDA, host_has

    if host_has(CUDA):
        pytest.skip("this machine has an NVIDIA GPU")
    pkg = tmp_path / "devpkg"
    plugdir = pkg / "lib" / "plugin"
    plugdir.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    stub = tmp_path / "stub"
    stub.mkdir()
    (tmp_path / "s.c").write_text("int cudaStub(void) { return 0; }\n")
    (tmp_path / "p.c").write_text("int cudaStub(void);\nint plug(void) { return cudaStub(); }\n")
    cc = shutil.which("gcc") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(stub / "libcudart.so.11.0"),
                    "-Wl,-soname,libcudart.so.11.0", str(tmp_path / "s.c")], check=True)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(plugdir / "libplug.so"),
                    str(tmp_path / "p.c"), str(stub / "libcudart.so.11.0")], check=True)
    shutil.rmtree(stub)  # built against CUDA's runtime, which this machine does not have
    plug = str(plugdir / "libplug.so")

    alone = cli(capsys, "check", "--static", "-f", "json", plug)
    od201 = [f for f in alone.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert alone.code == 0 and [f["severity"] for f in od201] == ["warning"]
    assert "CUDA device plugin" in od201[0]["message"]

    import sysconfig
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    (tmp_path / "e.c").write_text(
        "#include <Python.h>\nint plug(void);\n"
        "static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_ext\", 0, -1, 0};\n"
        "PyMODINIT_FUNC PyInit__ext(void) { plug(); return PyModule_Create(&m); }\n")
    subprocess.run([cc, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(pkg / f"_ext{suffix}"), str(tmp_path / "e.c"), plug,
                    "-Wl,-rpath,$ORIGIN/lib/plugin"], check=True)
    real = subprocess.run([sys.executable, "-c", "import devpkg._ext"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.returncode != 0 and "libcudart.so.11.0: cannot open shared object file" in \
        real.stderr
    from opdoctor.facts import commandcache
    commandcache.clear()
    reached = cli(capsys, "check", "--static", "-f", "json", plug)
    od201 = [f for f in reached.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert reached.code == 1 and [f["severity"] for f in od201] == ["error"]
    assert "device plugin" not in od201[0]["message"]


@pytest.mark.probe
@pytest.mark.parametrize("spec", ["<=2.7.0,>=2.5.0", ">=2.5.0"])
def test_a_pure_python_add_on_pinned_to_another_mindspore(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    """mindnlp 0.5.1 requires mindspore<=2.7.0,>=2.5.0; beside MindSpore 2.10 its import dies
    in MindSpore's changed API (`Generator.__init__() missing 2 required positional arguments:
    'seed' and 'offset'`). The verdict was "read the exception" (cause 5) and "cause 3: no
    problem found": framework pins were compared only through a package's binaries, and a
    pure-Python add-on has none (survey 18). Here the same call in a package of the same
    metadata: its MindSpore pin is the root (cause 3); a range that admits the installed
    MindSpore is no finding."""
    site = tmp_path / "site"
    (site / "msaddon").mkdir(parents=True)
    (site / "msaddon" / "__init__.py").write_text(
        "from mindspore.ops.operations._inner_ops import Generator\n"
        "_GEN = Generator()  # the 2.5-2.7 signature: no seed, no offset\n")
    dist_info(site, "msaddon", "0.5.1", ["msaddon/__init__.py"], (f"mindspore{spec}",))
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    real = subprocess.run([ms_python(), "-c", "import msaddon"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "Generator.__init__() missing 2 required positional arguments" in real.stderr, \
        real.stderr[-2000:]
    doc = cli(capsys, "check", "-f", "json", "--python", ms_python(), "--cwd", str(tmp_path),
              "--env", f"PYTHONPATH={site}", "--package", "msaddon").json()
    rep = doc["reports"][0]
    od327 = [f for f in rep["findings"] if f["code"] == "OD327"]
    if spec == ">=2.5.0":
        assert od327 == [] and rep["diagnosis"]["cause"] == 5, rep["diagnosis"]
        return
    assert rep["diagnosis"]["root_findings"] == ["OD327"], rep["diagnosis"]
    assert od327[0]["severity"] == "error" and "mindspore<=2.7.0,>=2.5.0" in od327[0]["message"]
    assert rep["diagnosis"]["consequences"] == {"OD327": ["OD511"]}
