"""TensorFlow op libraries (cause 1 static, cause 2 process): compiled for real against the
headers and libtensorflow_framework of the tensorflow-cpu wheel (downloaded, not installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Finding, Report
from opdoctor.pipeline import Selection, run_check
from tests.conftest import BUILD, fixture, fresh_probes
from tests.helpers import cli, cli_text_and_json, dist_info, make_package
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

OD1 = Selection(("OD1",))


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def test_op_library_inventory() -> None:
    report = run_check(str(fixture("tensorflow/zero_out.so")), CheckOptions(), OD1)
    assert codes(report) == []
    tf = report.sections["registration"]["tensorflow"]
    assert tf["ops"] == ["ZeroOut"]
    assert tf["op_registrations"] and tf["kernel_registrations"]
    assert tf["specs"] == ["to_zero: int32", "zeroed: int32"]


def test_registration_compiled_out() -> None:
    report = run_check(str(fixture("tensorflow/zero_out_noreg.so")), CheckOptions(), OD1)
    assert codes(report) == ["OD101"]
    assert "links TensorFlow" in report.findings[0].message


def test_op_without_kernel() -> None:
    report = run_check(str(fixture("tensorflow/zero_out_nokernel.so")), CheckOptions(), OD1)
    assert codes(report) == ["OD108"]
    assert report.findings[0].subject == "ZeroOut"


def test_libtensorflow_framework_missing_without_tensorflow() -> None:
    report = run_check(str(fixture("tensorflow/zero_out.so")), CheckOptions(env=()),
                       Selection(("OD201",)))
    assert codes(report) == ["OD201"]
    assert "tensorflow is not installed for" in report.findings[0].fix


def test_found_after_import_tensorflow(tmp_path: Path) -> None:
    """An interpreter whose site-packages has a tensorflow package with the wheel's real
    libtensorflow_framework.so.2: the op library's dependency is 'already loaded'."""
    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    tf = site / "tensorflow"
    tf.mkdir()
    (tf / "__init__.py").write_text("")
    shutil.copy(BUILD / "tf" / "tensorflow" / "libtensorflow_framework.so.2", tf)
    opts = CheckOptions(python=str(tmp_path / "v" / "bin" / "python"), env=())
    report = run_check(str(fixture("tensorflow/zero_out.so")), opts, Selection(("OD2",)))
    assert codes(report) == []
    deps = report.sections["dependencies"]
    assert "import tensorflow" in deps["context"]
    rules = {k["name"]: k["rule"] for k in deps["tree"]["needed"]}
    assert rules["libtensorflow_framework.so.2"] == "already loaded by import tensorflow"


# ------------------------------------------------------------------ with a real TensorFlow
# These run opdoctor against build/venv-tf (tensorflow-cpu 2.21.0, `make venv-tf`): the static
# checks read that install, the probe imports it and calls tf.load_op_library for real.

TF_PY = BUILD / "venv-tf" / "bin" / "python"
TFPKG = BUILD / "fixtures" / "tensorflow" / "pkg" / "site-packages"


def tf_python() -> str:
    """The TensorFlow venv's interpreter; skip (naming the make target) when it is absent."""
    if not TF_PY.exists():
        note = BUILD / "fixtures" / "skipped" / "venv-tf.txt"
        why = note.read_text().strip() if note.exists() else "not created"
        pytest.skip(f"{TF_PY} missing ({why}): run `make venv-tf` (tensorflow-cpu 2.21.0)")
    return str(TF_PY)


def tf_check(path: Path | str, *, probe: bool = True, **kw: object) -> Report:
    opts = CheckOptions(python=tf_python(), probe=probe, **kw)  # type: ignore[arg-type]
    return run_check(str(path), opts)


def roots(report: Report) -> list[str]:
    """The codes the diagnosis names as root causes."""
    return [f.code for f in report.diagnosis.root_findings]


def by_code(report: Report, code: str) -> Finding:
    return next(f for f in report.findings if f.code == code)


def test_tf_static_abi_mismatch() -> None:
    report = tf_check(fixture("tensorflow/zero_out_abi0.so"), probe=False)
    assert roots(report) == ["OD340"]
    f = by_code(report, "OD340")
    assert "_GLIBCXX_USE_CXX11_ABI=0; TensorFlow 2.21.0 uses 1" in f.message
    assert any("tensorflow::OpDefBuilder::Input(std::string)" in e for e in f.evidence)
    assert "get_compile_flags" in f.fix


def test_tf_old_abi_library_of_an_installed_wheel_gets_the_release_fix(
        tmp_path: Path) -> None:
    """tensorflow-graphics 2021.12.3 (survey 17): its rasterizer_op.so, built with the old C++
    ABI for a TensorFlow up to 2.8, was told to compile TensorFlow's tutorial op (zero_out.cc)
    — there is nothing to compile in a wheel. The library of an installed distribution gets
    its release built for the installed TensorFlow, or a TensorFlow before 2.9."""
    site = tmp_path / "site"
    (site / "oldabi_ops").mkdir(parents=True)
    lib = site / "oldabi_ops" / "_ops.so"
    shutil.copy(fixture("tensorflow/zero_out_abi0.so"), lib)
    (site / "oldabi_ops" / "__init__.py").write_text("")
    info = site / "oldabi_ops-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: oldabi-ops\nVersion: 0.3\n")
    (info / "RECORD").write_text("oldabi_ops/__init__.py,,\noldabi_ops/_ops.so,,\n")
    report = tf_check(lib, probe=False)
    assert roots(report) == ["OD340"]
    fix = by_code(report, "OD340").fix
    assert "oldabi_ops 0.3 was built for a TensorFlow before 2.9" in fix, fix
    assert "use tensorflow<2.9 with this oldabi_ops" in fix and "zero_out.cc" not in fix


def test_tf_static_abseil_mismatch_names_release() -> None:
    report = tf_check(fixture("tensorflow/zero_out_oldabsl.so"), probe=False)
    f = by_code(report, "OD341")
    assert "built against TensorFlow 2.16–2.19" in f.message
    assert "absl::lts_20230802" in f.message and "absl::lts_20250814" in f.message


def test_a_range_the_metadata_allows_is_the_release_span_and_the_known_pairing_leads(
        tmp_path: Path) -> None:
    """tensorflow-addons 0.23.0 (``tensorflow<2.16.0,>=2.13.0``) was said to be "built against
    TensorFlow 2.13" (its range's floor), and its fix led with "install the tensorflow_addons
    release built for TensorFlow 2.21.0" — a release that does not exist (0.23.0 is its last;
    likewise tensorflow-decision-forests 1.12.0 and tensorflow-io 0.37.1, survey 20). The
    span is every release the range allows, narrowed to the abseil the binary needs, and the
    fix leads with that pairing; another release of the package only if one is published.
    (TensorFlow 2.21 itself refusing this library: test_tf_swallowed_op_library_load_is_retried.)"""
    site = tmp_path / "site"
    (site / "rangeops").mkdir(parents=True)
    lib = site / "rangeops" / "_ops.so"
    shutil.copy(fixture("tensorflow/zero_out_oldabsl.so"), lib)  # abseil of TF 2.16–2.19
    (site / "rangeops" / "__init__.py").write_text("")
    info = site / "rangeops-0.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: rangeops\nVersion: 0.9\n"
                                   "Requires-Dist: tensorflow<2.18.0,>=2.15.0\n")
    (info / "RECORD").write_text("rangeops/__init__.py,,\nrangeops/_ops.so,,\n")
    f = by_code(tf_check(lib, probe=False), "OD341")
    assert f.message.startswith("built against TensorFlow 2.16–2.17:"), f.message
    assert (f.fix or "").startswith("use 'tensorflow>=2.16,<2.18' with this rangeops (the "
                                    "TensorFlow it was built for), or a rangeops release "
                                    "built for TensorFlow 2.21"), f.fix
    assert "if its project has published one (pip index versions rangeops" in (f.fix or "")


@pytest.mark.probe
def test_legacy_keras_asked_for_and_not_installed_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TF_USE_LEGACY_KERAS=1 without tf_keras (survey 20): `import tensorflow` works and every
    tf.keras use raises "Keras cannot be imported". The check of TensorFlow was clean; it is
    a warning naming tf-keras for this TensorFlow, and nothing without the variable (the
    venv's Keras 3) or with tf_keras on the path."""
    py = tf_python()
    # TensorFlow reads the variable when tf.keras is first used (its lazy loader), so setting
    # it after the import is what the job's environment does (and shares the TF zygote)
    real = run_python("import tensorflow as tf\nimport os\n"
                      "os.environ['TF_USE_LEGACY_KERAS'] = '1'\ntf.keras.layers.Dense(1)\n",
                      python=py, timeout=300)
    assert "ImportError: Keras cannot be imported. Check that it is installed." in \
        real.stderr, real.stderr[-1500:]
    args = ("check", "-f", "json", "--static", "--python", py, "--package", "tensorflow")
    res = cli(capsys, *args, "--env", "TF_USE_LEGACY_KERAS=1")
    found = [f for r in res.json()["reports"] for f in r["findings"]
             if f["code"] == "OD514" and f["subject"] == "tf_keras"]
    assert len(found) == 1 and found[0]["severity"] == "warning", found
    assert found[0]["fix"].startswith("pip install 'tf-keras~=2.21.0'"), found[0]["fix"]
    res = cli(capsys, *args, "--env", "TF_USE_LEGACY_KERAS=")
    assert not [f for r in res.json()["reports"] for f in r["findings"]
                if f["subject"] == "tf_keras"]
    (tmp_path / "tf_keras").mkdir()  # a tf_keras the job finds first
    res = cli(capsys, *args, "--env", "TF_USE_LEGACY_KERAS=1", "--env",
              f"PYTHONPATH={tmp_path}")
    assert not [f for r in res.json()["reports"] for f in r["findings"]
                if f["subject"] == "tf_keras"]


_TF_OP_LIST = """
import sys, tensorflow as tf
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as py_tf
for path in sys.argv[1:]:
    ops = op_def_pb2.OpList()
    ops.ParseFromString(py_tf.TF_GetOpList(py_tf.TF_LoadLibrary(path)))
    print("OPS", path, sorted(o.name for o in ops.op))
"""


def _static_ops(path: Path) -> list[str]:
    section = tf_check(path, probe=False).sections["tensorflow"]
    return sorted(section["static_ops"])


@pytest.mark.probe
def test_namespaced_op_names_are_read_statically() -> None:
    """TensorFlow allows an op name `Ns>Name` (tensorflow-text's "TFText>ByteSplitWithOffsets");
    the static reading took only plain names, so such a library's ops were "? (TensorFlow op)"
    in a scan (survey 20). TensorFlow's own op list of the library is what the static reading
    now names."""
    lib = fixture("tensorflow/zero_out_ns.so")
    real = run_python(_TF_OP_LIST, str(lib), python=tf_python(), timeout=300)
    assert f"OPS {lib} ['Opdoctor>ZeroOutNs']" in real.stdout, real.stderr[-1500:]
    assert _static_ops(lib) == ["Opdoctor>ZeroOutNs"]


@pytest.mark.probe
def test_tensorflow_text_shim_ops_are_read_statically() -> None:
    """tensorflow-text 2.21.1's ops built with the TF Lite shim keep their names in a
    `kOpName` constant, away from their specs: 7 of its 24 op libraries named no op
    statically. Each such library's static names are TensorFlow's own op list of it."""
    site = BUILD / "realworld" / "tensorflow-text-2.21.1" / "site"
    if not site.is_dir():
        pytest.skip(f"{site} missing: `make realworld` installs tensorflow-text 2.21.1")
    ops = site / "tensorflow_text" / "python" / "ops"
    libs = [ops / "_byte_splitter.so", ops / "_trimmer_ops.so"]
    real = run_python(_TF_OP_LIST, *map(str, libs), python=tf_python(), timeout=300)
    for lib in libs:
        line = next(ln for ln in real.stdout.splitlines() if ln.startswith(f"OPS {lib} "))
        assert line == f"OPS {lib} {_static_ops(lib)}", (line, real.stderr[-800:])


def test_a_requirements_span_is_every_release_it_allows() -> None:
    """Real packages' TensorFlow requirements (their METADATA), as releases."""
    from opdoctor.facts.tensorflow import span_of

    assert span_of("tensorflow<2.16.0,>=2.13.0") == "2.13–2.15"  # tensorflow-addons 0.23.0
    assert span_of("tensorflow==2.19.0") == "2.19"  # tensorflow-decision-forests 1.12.0
    assert span_of("tensorflow<2.17.0,>=2.16.0") == "2.16"  # tensorflow-io 0.37.1
    assert span_of("tensorflow~=2.15.0") == "2.15"
    assert span_of("tensorflow<=2.14,>=2.12") == "2.12–2.14"
    assert span_of("tensorflow<2.16.1,>=2.16") == "2.16"
    assert span_of("tensorflow>=2.11.0") == ""  # a floor alone: what it allows, not a build
    assert span_of("tensorflow~=2.15") == ""


def test_tf_static_removed_c_api_names_release_from_metadata() -> None:
    report = tf_check(TFPKG / "tfplug" / "libtfplug.so", probe=False)
    f = by_code(report, "OD342")
    assert "built for TensorFlow 2.16" in f.message
    assert any("requires tensorflow<2.17.0,>=2.16.0" in e for e in f.evidence)
    assert any("TF_VLog" in e for e in f.evidence)
    assert "OD101" not in codes(report)  # a filesystem plugin registers no op, by design


def test_tf_static_not_linked() -> None:
    report = tf_check(fixture("tensorflow/zero_out_nolink.so"), probe=False)
    assert codes(report) == ["OD431"]  # no OD301: import tensorflow makes TF's symbols global
    f = report.findings[0]
    assert f.severity.value == "warning"
    assert "-l:libtensorflow_framework.so.2" in f.fix


@pytest.mark.probe
def test_tf_not_linked_fails_outside_tensorflow() -> None:
    """The claim OD431 makes, checked on the real loader: the library loads with
    tf.load_op_library (the probe) but not with ctypes before `import tensorflow`."""
    report = tf_check(fixture("tensorflow/zero_out_nolink.so"))
    assert codes(report) == ["OD431"]
    assert report.sections["tensorflow"]["ops"][0]["name"] == "ZeroOut"
    proc = subprocess.run([tf_python(), "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(fixture("tensorflow/zero_out_nolink.so"))],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "undefined symbol: _ZTIN10tensorflow8OpKernelE" in proc.stderr


@pytest.mark.probe
def test_tf_healthy_zero_out_text_and_json(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    lib = str(fixture("tensorflow/zero_out.so"))
    res, doc = cli_text_and_json(capsys, tmp_path, "check", "--python", tf_python(), lib)
    assert res.code == 0, res.out
    rep = doc["reports"][0]
    assert rep["findings"] == []
    tf = rep["sections"]["tensorflow"]
    assert tf["tensorflow"] == "2.21.0" and tf["probed"]
    assert tf["ops"] == [{"name": "ZeroOut", "kernels": [
        {"device": "CPU", "label": "", "constraints": []}]}]
    assert rep["sections"]["probe"]["outcome"] == "loaded"
    assert "loaded, registered ZeroOut [CPU]" in res.out


@pytest.mark.probe
def test_tf_op_without_kernel() -> None:
    report = tf_check(fixture("tensorflow/zero_out_nokernel.so"))
    assert roots(report) == ["OD150"]
    f = by_code(report, "OD150")
    assert "No OpKernel was registered to support Op 'ZeroOut'" in f.message
    assert "Registered devices: [CPU]" in f.message


@pytest.mark.probe
def test_tf_expect_op_device_missing() -> None:
    report = tf_check(fixture("tensorflow/zero_out.so"), expect_ops=("ZeroOut[CPU,GPU]",))
    assert codes(report) == ["OD150"]
    f = report.findings[0]
    assert "ZeroOut has kernels for CPU, not GPU" in f.message
    assert "kernel: device=CPU" in f.evidence


@pytest.mark.probe
def test_tf_same_op_name_in_two_libraries() -> None:
    first = fixture("tensorflow/zero_out.so")
    second = fixture("tensorflow/other_zero_out.so")
    report = tf_check(second, preload=(str(first),))
    assert codes(report) == ["OD151"]
    f = report.findings[0]
    assert f.subject == "ZeroOut"
    assert f"already registered by {first}" in f.message and str(second) in f.message
    assert any("handle: no op" in e for e in f.evidence)


@pytest.mark.probe
def test_tf_registration_compiled_out_probe() -> None:
    report = tf_check(fixture("tensorflow/zero_out_noreg.so"))
    assert {"OD101", "OD152"} <= set(codes(report))
    assert roots(report) == ["OD152"]
    assert report.sections["probe"]["outcome"] == "loaded"


@pytest.mark.probe
def test_tf_load_fails_undefined_symbol_probe() -> None:
    """The real tf.load_op_library fails (NotFoundError, dlerror) and the static cause
    (abseil LTS of another TensorFlow) is the root."""
    report = tf_check(fixture("tensorflow/zero_out_oldabsl.so"))
    assert roots(report) == ["OD341"]
    assert "undefined symbol: _ZN4absl12lts_20230802" in report.sections["probe"]["load_error"]
    assert "OD321" in codes(report)


@pytest.mark.probe
def test_tf_op_not_registered_package_never_loads_library() -> None:
    report = tf_check(TFPKG / "zero_op_noload", package="zero_op_noload", cwd=str(TFPKG),
                      expect_ops=("ZeroOut",))
    f = by_code(report, "OD530")
    assert "Op type not registered 'ZeroOut'" in f.message
    assert str(TFPKG / "zero_op_noload" / "zero_out.so") in f.message
    assert roots(report) == ["OD530"]


def test_tf_scan_lists_op_libraries_with_ops_and_verdict(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`opdoctor scan` of the TensorFlow venv with the fixture packages on its sys.path: every
    op library with its ops and verdict; TensorFlow's own libraries are not listed."""
    monkeypatch.setenv("PYTHONPATH", str(TFPKG))
    res = cli(capsys, "scan", "--python", tf_python(), "-f", "json", "-j", "2")
    reps = {r["target"]["path"]: r for r in res.json()["reports"]}
    assert sorted(os.path.relpath(p, TFPKG) for p in reps) == [
        "tfplug/libtfplug.so", "zero_op/zero_out.so", "zero_op_noload/zero_out.so"]
    ok = reps[str(TFPKG / "zero_op" / "zero_out.so")]
    assert ok["sections"]["tensorflow"]["static_ops"] == ["ZeroOut"]
    assert ok["diagnosis"]["cause"] == 0
    bad = reps[str(TFPKG / "tfplug" / "libtfplug.so")]
    assert bad["diagnosis"]["cause"] == 3 and "OD342" in bad["diagnosis"]["root_findings"]
    res = cli(capsys, "scan", "--python", tf_python(), "-j", "2")
    assert "ZeroOut" in res.out and "cause 3: OD342" in res.out


_GRAPH = '''node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } }
  int_val: 3 int_val: 4 } } } }
node { name: "z" op: "ZeroOut" input: "c" }'''

_REPRO = '''import sys
import tensorflow as tf
from google.protobuf import text_format
import zero_op_user
g = text_format.Parse(sys.argv[2], tf.compat.v1.GraphDef())
try:
    tf.graph_util.import_graph_def(g, name="a")
    print("loaded without the op library")
except Exception as exc:
    print("FIRST:", exc)
sys.path.append(sys.argv[1])  # the other Python's site-packages
import zero_op
tf.graph_util.import_graph_def(g, name="b")
print("SECOND: imported")
'''


@pytest.mark.probe
def test_tf_op_library_installed_for_another_python(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The third way to "Op type not registered": the op library (the healthy zero_op package)
    is installed for another Python — in a user site of Python 3.10 — while the job runs the
    TensorFlow venv's 3.11, whose package imports fine and registers nothing."""
    py = tf_python()
    home = tmp_path / "home"
    other = home / ".local" / "lib" / "python3.10" / "site-packages"
    shutil.copytree(TFPKG / "zero_op", other / "zero_op")
    job = tmp_path / "job"
    (job / "zero_op_user").mkdir(parents=True)
    (job / "zero_op_user" / "__init__.py").write_text(
        '"""The job\'s model code: it uses ZeroOut and expects it registered."""\n'
        "import tensorflow as tf  # noqa: F401\n")
    # TensorFlow itself: the graph fails in this interpreter, and loads once the other
    # Python's copy of the op library is on the path.
    p = run_python(_REPRO, str(other), _GRAPH, python=py, cwd=job, timeout=300)
    assert "FIRST: Op type not registered 'ZeroOut' in binary running on" in p.stdout, \
        p.stdout + p.stderr[-2000:]
    assert "SECOND: imported" in p.stdout, p.stderr[-2000:]
    monkeypatch.setenv("HOME", str(home))
    report = tf_check(job / "zero_op_user", package="zero_op_user", cwd=str(job),
                      expect_ops=("ZeroOut",))
    f = by_code(report, "OD146")
    assert "Op type not registered 'ZeroOut'" in f.message
    assert str(other / "zero_op" / "zero_out.so") in f.message
    assert any(e.startswith(f"{other} is not on the sys.path of {py}") for e in f.evidence)
    assert roots(report) == ["OD146"]
    # Without that other install the same job is the plain "nothing defines it" (OD152).
    shutil.rmtree(other / "zero_op")
    report = tf_check(job / "zero_op_user", package="zero_op_user", cwd=str(job),
                      expect_ops=("ZeroOut",))
    assert "OD146" not in codes(report) and roots(report) == ["OD152"]


_FAILURES = '''import sys
import tensorflow as tf
from google.protobuf import text_format
noreg, nokernel, graph, abi0, plug = sys.argv[1:6]
for tag, load, path in (("ABI0", tf.load_op_library, abi0),
                        ("PLUG", tf.experimental.register_filesystem_plugin, plug)):
    try:
        load(path)
        print(tag + ": loaded")
    except Exception as exc:
        print(tag + ":", type(exc).__name__, " ".join(str(exc).split())[:400])
g = text_format.Parse(graph, tf.compat.v1.GraphDef())
def attempt(tag):
    try:
        tf.graph_util.import_graph_def(g, name=tag)
        print(tag.upper() + ": imported")
    except Exception as exc:
        print(tag.upper() + ":", str(exc).splitlines()[0])
tf.load_op_library(noreg)
attempt("noreg")
import zero_op_noload
attempt("noload")
lib = tf.load_op_library(nokernel)
try:
    lib.zero_out(tf.constant([1, 2]))
    print("NOKERNEL: ran")
except Exception as exc:
    print("NOKERNEL:", " ".join(str(exc).split())[:300])
'''


@pytest.mark.probe
def test_tf_itself_fails_as_the_fixtures_say() -> None:
    """What OD340, OD342, OD152, OD530 and OD150 claim, reproduced by TensorFlow 2.21 itself in
    one process: the old-ABI build and the 2.16 plugin fail to load; the registration compiled
    out and the package that never loads its library both end in "Op type not registered"; the
    op without a kernel fails when it is run."""
    p = run_python(_FAILURES, str(fixture("tensorflow/zero_out_noreg.so")),
                   str(fixture("tensorflow/zero_out_nokernel.so")), _GRAPH,
                   str(fixture("tensorflow/zero_out_abi0.so")),
                   str(TFPKG / "tfplug" / "libtfplug.so"),
                   python=tf_python(), cwd=TFPKG, timeout=300)
    out = p.stdout
    assert "NOREG: Op type not registered 'ZeroOut' in binary running on" in out, \
        out + p.stderr[-2000:]
    assert "NOLOAD: Op type not registered 'ZeroOut' in binary running on" in out, out
    # OD340 and OD342: the old-ABI build and the TF 2.16 plugin do not load in TF 2.21.
    assert "ABI0: NotFoundError" in out and "undefined symbol" in out, out
    assert "PLUG: " in out and "undefined symbol: TF_VLog" in out, out
    line = next(x for x in out.splitlines() if x.startswith("NOKERNEL:"))
    assert "ZeroOut" in line and ("Could not find device" in line or "No OpKernel" in line), line


def _lib_via_helper(tmp: Path) -> Path:
    """``liba.so`` → ``libb.so`` (its RUNPATH $ORIGIN) → ``libtensorflow_framework.so.2``: the
    shape of tensorflow-text's pybind modules, whose own NEEDED list has no TensorFlow library."""
    fw_dir = TF_PY.parent.parent / "lib" / "python3.11" / "site-packages" / "tensorflow"
    (tmp / "b.c").write_text("int b_value(void) { return 2; }\n")
    (tmp / "a.c").write_text("int b_value(void);\nint a_value(void) { return b_value(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp / "libb.so"), str(tmp / "b.c"),
                    "-Wl,--no-as-needed", f"-L{fw_dir}", "-l:libtensorflow_framework.so.2"],
                   check=True, timeout=120)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp / "liba.so"), str(tmp / "a.c"),
                    f"-L{tmp}", "-lb", "-Wl,-rpath,$ORIGIN"], check=True, timeout=120)
    return tmp / "liba.so"


@pytest.mark.probe
def test_dependency_needing_tensorflow_is_loaded_after_import_tensorflow(tmp_path: Path) -> None:
    py = tf_python()
    lib = _lib_via_helper(tmp_path)
    load = f"import ctypes; ctypes.CDLL({str(lib)!r})"
    # What the real loader does: alone, libb.so's libtensorflow_framework.so.2 is not found;
    # after `import tensorflow` (the only way a package gets it) the load works.
    bare = subprocess.run([py, "-c", load], capture_output=True, text=True, timeout=120)
    assert bare.returncode != 0 and "libtensorflow_framework.so.2" in bare.stderr
    run_python(f"import tensorflow; {load}", python=py, check=True, timeout=300)
    report = tf_check(lib, probe=False)
    assert "OD201" not in codes(report), [f.message for f in report.findings]
    assert "import tensorflow" in report.sections["dependencies"]["context"]
    # An interpreter without TensorFlow cannot provide it: there the finding stays.
    bare_report = run_check(str(lib), CheckOptions(probe=False), Selection(("OD201",)))
    assert codes(bare_report) == ["OD201"]


@pytest.mark.probe
@pytest.mark.parametrize("lib, hidden", [("zero_out.so", False), ("zero_out_oldabsl.so", True)])
def test_tf_swallowed_op_library_load_is_retried(tmp_path: Path, lib: str, hidden: bool) -> None:
    """A package that loads its op library inside try/except and carries on without it (the
    TensorFlow probe retries the load after the package's import, as the torch probe does):
    the healthy library loads — nothing is hidden, a note; the one built for another abseil
    fails — the hidden error surfaces (OD512). TensorFlow itself shows both first."""
    pkg = tmp_path / "tfswallow"
    pkg.mkdir()
    shutil.copy(fixture(f"tensorflow/{lib}"), pkg / "ops.so")
    (pkg / "__init__.py").write_text(
        "import os\nimport tensorflow as tf\ntry:\n"
        "    _ops = tf.load_op_library(os.path.join(os.path.dirname(__file__), 'ops.so'))\n"
        "except Exception:\n    _ops = None\n")
    real = run_python("import tfswallow; print(tfswallow._ops is None)", python=tf_python(),
                      cwd=tmp_path, timeout=300)
    assert real.stdout.strip() == str(hidden), real.stderr
    report = tf_check(pkg, package="tfswallow", cwd=str(tmp_path))
    od509 = by_code(report, "OD509")
    if hidden:
        od512 = by_code(report, "OD512").message
        assert "undefined symbol: _ZN4absl12lts_20230802" in od512
        assert od512.startswith("loading ops.so fails: ")  # not the call's path expression
        assert od509.severity.value == "warning"
    else:
        assert "OD512" not in codes(report)
        assert od509.severity.value == "info" and "it imports here" in od509.message


# tensorflow-io's way (tensorflow_io/python/ops/__init__.py): a helper finds the file next to
# its caller and picks the load function by kind — no static evaluation follows it — and the
# import turns the failed load into a UserWarning and goes on.
_TFIO_LIKE = """import inspect
import os
import sys
import warnings

import tensorflow as tf


def _load_library(filename, lib="op"):
    f = inspect.getfile(sys._getframe(1))
    filenames = [os.path.join(os.path.dirname(f), filename)]
    if lib == "op":
        load_fn = tf.load_op_library
    else:
        load_fn = lambda f: tf.experimental.register_filesystem_plugin(f) is None
    errs = []
    for f in filenames:
        try:
            loaded = load_fn(f)
            if loaded is not None:
                return loaded
        except (tf.errors.NotFoundError, OSError) as e:
            errs.append(str(e))
    raise NotImplementedError(f"unable to open file: {filename}, from paths: {filenames}\\n"
                              f"caused by: {errs}")


try:
    ops = _load_library("libops.so")
except NotImplementedError as e:
    warnings.warn(f"unable to load libops.so: {e}")
    ops = None
"""


def render_text(report: Report) -> str:
    """The report as `opdoctor check` prints it (no colour, no width limit)."""
    import io

    from opdoctor.checks import load_registry
    from opdoctor.model import Severity
    from opdoctor.report import RenderContext, text

    out = io.StringIO()
    text.render([report], RenderContext(load_registry().catalog, Severity.ERROR, 1), out)
    return out.getvalue()


@pytest.mark.probe
@pytest.mark.parametrize("lib, fails", [("zero_out.so", False), ("zero_out_oldabsl.so", True)])
def test_a_load_the_import_only_printed_is_the_librarys_failure(
        tmp_path: Path, lib: str, fails: bool) -> None:
    """tensorflow-io 0.35 beside TF 2.21: `import tensorflow_io` works and prints "UserWarning:
    unable to load libtensorflow_io.so: … undefined symbol: …"; the library stays unloaded.
    The report names that failed load (OD512, and the loader's OD321 under the release's
    OD341), not "the package loads it later, or never". TensorFlow shows it first; the healthy
    library loads and nothing is said."""
    pkg = tmp_path / "tfwarn"
    pkg.mkdir()
    shutil.copy(fixture(f"tensorflow/{lib}"), pkg / "libops.so")
    (pkg / "__init__.py").write_text(_TFIO_LIKE)
    real = run_python("import tfwarn, os; print(tfwarn.ops is None, any("
                      "'libops.so' in ln for ln in open(f'/proc/{os.getpid()}/maps')))",
                      python=tf_python(), cwd=tmp_path, timeout=300)
    assert real.returncode == 0, real.stderr
    assert real.stdout.split() == ([str(fails), str(not fails)])
    assert ("UserWarning: unable to load libops.so" in real.stderr) == fails
    report = tf_check(pkg / "libops.so", package="tfwarn", cwd=str(tmp_path))
    # the load's path is computed from the caller's frame: the static view takes the name the
    # call passes, of a library beside the module (survey 22: tensorflow-io-gcs-filesystem)
    assert [ln["resolved"] for ln in report.sections["import-chain"]["links"]
            if ln["resolved"]] == [[str(pkg / "libops.so")]]
    if not fails:
        assert "OD512" not in codes(report) and "OD321" not in codes(report)
        return
    od512 = by_code(report, "OD512")
    assert od512.message.startswith("loading libops.so fails: UserWarning: ")
    assert "undefined symbol: _ZN4absl12lts_20230802" in od512.message
    assert any("__init__.py:" in e and "UserWarning: unable to load libops.so" in e
               for e in od512.evidence)
    assert "hidden: loading libops.so fails" in by_code(report, "OD321").message
    assert roots(report) == ["OD341"]
    text = render_text(report)
    assert "the package tried, the load failed and the package caught it" in text
    assert "later, or never" not in text


_KERAS_GUARD = '''def _check_keras_version():
    import tensorflow as tf

    keras_version_fn = getattr(tf.keras, "version", None)
    if keras_version_fn:
        keras_version = keras_version_fn()
        if keras_version.startswith("3."):
            raise ImportError(
                "Package kerasguard requires tf.keras to be Keras"
                f" version 2 but got version {keras_version}. "
                "For open-source TensorFlow 2.16 and above, "
                "set the environment variable TF_USE_LEGACY_KERAS=1 to fix.")


_check_keras_version()

__version__ = "0.7.7"
'''


@pytest.mark.probe
def test_a_keras_guard_is_not_a_tensorflow_pin(tmp_path: Path) -> None:
    """tensorflow-recommenders 0.7.7 refuses Keras 3 (TensorFlow 2.21's tf.keras). Its message
    names TensorFlow 2.16 and Keras 3.x: read as a TensorFlow guard, OD323 told the user to
    `pip install 'tensorflow==3.…'` (the Keras version). A Keras guard is not judged as a
    framework pin; the failed import's own fix is passed on: set TF_USE_LEGACY_KERAS=1."""
    pkg = tmp_path / "kerasguard"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_KERAS_GUARD)
    real = subprocess.run([tf_python(), "-c", "import kerasguard"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "requires tf.keras to be Keras version 2 but got version 3." in real.stderr
    report = tf_check(pkg, package="kerasguard", cwd=str(tmp_path))
    assert "OD323" not in codes(report)
    od511 = by_code(report, "OD511")
    assert od511.fix is not None and "set TF_USE_LEGACY_KERAS=1" in od511.fix


def test_words_before_spec_strings_are_not_op_names(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The static op list takes the CamelCase string stored before an op's spec strings
    ("x: T"). tensorflow-io and tensorflow-decision-forests also store capitals ("CMYK",
    "IS3"), mangled type names ("N6pulsar7AuthTlsE") and weekdays there: none is an op. Nor is
    the word before a message that starts like a spec (tensorflow-decision-forests 1.12's
    protobuf: "GetUInt64", then "Unsupported: type mismatch")."""
    tf_lib = BUILD / "tf" / "tensorflow" / "libtensorflow_framework.so.2"
    if not tf_lib.exists():
        pytest.skip("TensorFlow's headers and library not fetched (make fixtures)")
    words = ["CMYK", "x: float", "N6pulsar7AuthTlsE", "y: int32", "Thursday", "z: T",
             "GetUInt64", "Unsupported: type mismatch", "ZeroOut", "to_zero: int32"]
    body = "".join(f'const char* s{i} = "{w}";\n' for i, w in enumerate(words))
    (tmp_path / "ops.c").write_text(body + "const char** all[] = {"
                                    + ", ".join(f"&s{i}" for i in range(len(words))) + "};\n")
    lib = tmp_path / "ops.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(lib), str(tmp_path / "ops.c"),
                    "-Wl,--no-as-needed", f"-L{tf_lib.parent}",
                    "-l:libtensorflow_framework.so.2"], check=True)
    doc = cli(capsys, "check", "-f", "json", "--static", str(lib)).json()
    assert doc["reports"][0]["sections"]["registration"]["tensorflow"]["ops"] == ["ZeroOut"]


@pytest.mark.probe
def test_tflite_symbols_are_tensorflows_not_the_librarys_own(tmp_path: Path) -> None:
    """tensorflow-text 2.18.1's op libraries instantiate tflite::shim templates (so they define
    names in ``tflite::``) and need tflite::shim functions that TensorFlow 2.18's
    libtensorflow_framework exports and 2.21's does not: a TensorFlow release mismatch, not
    "own code never linked in" (OD430, cause 4). ``tflite::`` is TensorFlow's namespace."""
    tf_lib = BUILD / "tf" / "tensorflow" / "libtensorflow_framework.so.2"
    if not tf_lib.exists():
        pytest.skip("TensorFlow's headers and library not fetched (make fixtures)")
    src = tmp_path / "shim.cc"
    src.write_text("namespace tflite { namespace shim {\n"
                   "int own_template_instance(int x) { return x; }\n"
                   "int TfShapeInferenceContextGone(int);\n} }\n"
                   "int call(int x) { return tflite::shim::TfShapeInferenceContextGone(x); }\n")
    lib = tmp_path / "_shim_ops.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src), "-Wl,--no-as-needed",
                    f"-L{tf_lib.parent}", "-l:libtensorflow_framework.so.2"], check=True,
                   timeout=60)
    real = run_python("import sys, tensorflow as tf\ntf.load_op_library(sys.argv[1])", str(lib),
                      python=tf_python(), timeout=300)
    assert real.returncode != 0 and "undefined symbol: _ZN6tflite4shim" in real.stderr, \
        real.stderr[-1500:]
    report = tf_check(lib, probe=False)
    got = codes(report)
    assert "OD430" not in got and "OD301" in got, got


@pytest.mark.probe
def test_tensorflows_own_library_needed_by_a_name_this_release_lacks(tmp_path: Path) -> None:
    """intel-extension-for-tensorflow 2.15 beside TensorFlow 2.21: libitex_common.so NEEDs
    ``_pywrap_tensorflow_internal.so`` by name, which TF 2.21 ships as a shim without that
    SONAME — even after ``import tensorflow`` the loader does not find it. It was "library
    path: find / … patchelf" (cause 2); the plugin is TF 2.15's (its distribution requires
    tensorflow~=2.15.0 from another dist-info of the same package): OD342, cause 3, with the
    "not found" its consequence. `scan` lists such a library (it was left out)."""
    site = tmp_path / "site"
    lib = site / "itexlike" / "libcommon.so"
    lib.parent.mkdir(parents=True)
    (tmp_path / "stub.c").write_text("int TF_Stub(void) { return 0; }\n")
    (tmp_path / "use.c").write_text("int TF_Stub(void);\nint use(void) { return TF_Stub(); }\n")
    stub = tmp_path / "_pywrap_tensorflow_internal.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,_pywrap_tensorflow_internal.so",
                    "-o", str(stub), str(tmp_path / "stub.c")], check=True, timeout=60)
    other = tmp_path / "libotherdep.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libotherdep.so.1", "-o", str(other),
                    str(tmp_path / "stub.c")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "use.c"),
                    str(stub)], check=True, timeout=60)
    both = site / "itexlike" / "libboth.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(both), str(tmp_path / "use.c"),
                    "-Wl,--no-as-needed", str(stub), str(other)], check=True, timeout=60)
    stub.unlink()
    other.unlink()
    for dist, files, reqs in (("itexlike_lib-1.0", ["itexlike/libcommon.so"], []),
                              ("itexlike-1.0", ["itexlike/__init__.py"],
                               ["tensorflow ~=2.15.0"])):
        info = site / f"{dist}.dist-info"
        info.mkdir()
        files = [*files, "itexlike/libboth.so"] if dist.startswith("itexlike_lib") else files
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
        (info / "METADATA").write_text(f"Name: {dist.rsplit('-', 1)[0]}\nVersion: 1.0\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in reqs))
    (site / "itexlike" / "__init__.py").write_text("")
    real = run_python("import tensorflow, ctypes, sys; ctypes.CDLL(sys.argv[1])", str(lib),
                      python=tf_python(), timeout=300)
    assert "_pywrap_tensorflow_internal.so: cannot open shared object file" in real.stderr
    report = tf_check(lib, probe=False)
    assert roots(report) == ["OD342"], [f.message for f in report.findings]
    f = by_code(report, "OD342")
    assert "built for TensorFlow 2.15" in f.message and "tensorflow==2.15.*" in (f.fix or "")
    assert any("requires tensorflow~=2.15.0" in e for e in f.evidence)
    from opdoctor.facts.core import links_framework

    assert links_framework(str(lib))  # scan's filter: a TensorFlow library
    # Another missing library is no consequence of the TensorFlow release: its own root; the
    # "not found" of TensorFlow's library stays OD342's.
    report = tf_check(both, probe=False)
    (root,) = report.diagnosis.root_findings
    assert root.code == "OD201" and root.message.startswith("libotherdep.so.1"), root.message
    assert by_code(report, "OD342").severity.value == "error"


@pytest.mark.probe
def test_a_plugin_reaching_tensorflows_own_library_by_name_is_the_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """intel-extension-for-tensorflow 2.14/2.15's real files (survey 18): the PluggableDevice
    plugin ``tensorflow-plugins/libitex_cpu.so`` uses only TensorFlow's C API (``TF_*``) and
    NEEDs ``libitex_common.so`` (found by its RPATH), which NEEDs
    ``_pywrap_tensorflow_internal.so`` by name. Neither library links libtensorflow_framework,
    and the TensorFlow family was skipped for them before it could look: "library path: find /
    … patchelf" (cause 2). Checked as its package's library, the probe's process maps TF
    2.21's ``_pywrap_tensorflow_internal.so`` — a shim with no SONAME, which glibc does not
    reuse for that NEEDED name — and the "not found" was turned into a note saying the real
    load found it. Both are OD342, cause 3; the package's import fails as TensorFlow says."""
    site = tmp_path / "site"
    pkg = site / "itexpkg"
    plugins = site / "tfplugins"
    pkg.mkdir(parents=True)
    plugins.mkdir()
    (tmp_path / "stub.c").write_text("int TF_GetCode(void *s) { return 0; }\n")
    (tmp_path / "common.c").write_text("int TF_GetCode(void *s);\n"
                                       "int itex_common(void) { return TF_GetCode(0); }\n")
    (tmp_path / "plugin.c").write_text("int itex_common(void);\nint TF_GetCode(void *s);\n"
                                       "int plugin(void) { return itex_common() + "
                                       "TF_GetCode(0); }\n")
    stub = tmp_path / "_pywrap_tensorflow_internal.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,_pywrap_tensorflow_internal.so",
                    "-o", str(stub), str(tmp_path / "stub.c")], check=True, timeout=60)
    common = pkg / "libitex_common.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libitex_common.so", "-o",
                    str(common), str(tmp_path / "common.c"), str(stub)], check=True, timeout=60)
    plugin = plugins / "libitex_cpu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(tmp_path / "plugin.c"),
                    "-Wl,-rpath,$ORIGIN/../itexpkg", str(common), str(stub)],
                   check=True, timeout=60)
    stub.unlink()
    (pkg / "__init__.py").write_text(
        "import ctypes, os\nimport tensorflow  # noqa: F401\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libitex_common.so'))\n")
    dist_info(site, "itexpkg", "2.14.0", ["itexpkg/__init__.py", "itexpkg/libitex_common.so",
                                          "tfplugins/libitex_cpu.so"], ("tensorflow ~=2.14.0",))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    real = run_python("import itexpkg", python=tf_python(), env=env, cwd=tmp_path,
                      timeout=300)
    assert "_pywrap_tensorflow_internal.so: cannot open shared object file" in real.stderr, \
        real.stderr[-2000:]
    # As a user runs it (the command's check families, their gates first).
    doc = cli(capsys, "check", "-f", "json", "--static", "--python", tf_python(),
              str(plugin)).json()
    assert doc["reports"][0]["diagnosis"]["root_findings"] == ["OD342"], \
        [(f["code"], f["message"]) for f in doc["reports"][0]["findings"]]
    report = tf_check(common, package="itexpkg", cwd=str(tmp_path), env=tuple(env.items()))
    assert roots(report) == ["OD342"], [(f.code, f.message) for f in report.findings]
    assert "built for TensorFlow 2.14" in by_code(report, "OD342").message
    od201 = by_code(report, "OD201")
    assert od201.severity.value == "error" and "found it already" not in od201.message


@pytest.mark.probe
def test_a_framework_the_package_does_not_declare_is_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """onnxruntime-training 1.19.2: `import onnxruntime.training.api` dies on `No module named
    'torch'`; torch is not in its Requires-Dist, while cerberus and sympy, which are, are absent
    too. The fix was "pip install cerberus sympy (onnxruntime_training requires it …)", which
    leaves the same error (survey 18). The framework the import needs is the fix, said to be
    undeclared. Here a package requiring an absent `cerbix`, importing torch, in the
    TensorFlow venv (no torch there)."""
    site = tmp_path / "site"
    (site / "trainlike").mkdir(parents=True)
    (site / "trainlike" / "__init__.py").write_text("import torch  # noqa: F401\n")
    dist_info(site, "trainlike", "1.0", ["trainlike/__init__.py"], ("cerbix",))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    real = subprocess.run([tf_python(), "-c", "import trainlike"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "No module named 'torch'" in real.stderr, real.stderr
    doc = cli(capsys, "check", "-f", "json", "--python", tf_python(), "--cwd", str(tmp_path),
              "--env", f"PYTHONPATH={site}", "--package", "trainlike").json()
    (od511,) = [f for r in doc["reports"] for f in r["findings"] if f["code"] == "OD511"]
    assert "No module named 'torch'" in od511["message"]
    assert od511["fix"].startswith("pip install torch (the import needs it; trainlike-1.0 "
                                   "does not declare it"), od511["fix"]
    assert "cerbix" not in od511["fix"]


def test_a_printed_load_failure_must_name_the_librarys_path() -> None:
    """The output line (or the warning line before it) must name the library's path: another
    library of the same file name failing (xformers ships `_C.so` and `flash_attn_3/_C.so`)
    is not this one's failure, nor is a loader error that names no path of it."""
    from opdoctor.facts.probe.ldtrace import LdTrace
    from opdoctor.facts.probe.outcome import build_outcome

    target = "/site/xformers/_C.so"
    other = ("/site/xformers/__init__.py:12: UserWarning: unable to load the extension\n"
             "ImportError: /site/xformers/flash_attn_3/_C.so: undefined symbol: _ZN3c104warnE\n")
    mine = ("/site/xformers/__init__.py:9: UserWarning: unable to open file: _C.so, from paths:"
            f" ['{target}']\ncaused by: ['libcudart.so.12: cannot open shared object file: No "
            "such file or directory']\n")

    def printed(stderr: str) -> list[tuple[str, str]]:
        res = build_outcome([], 0, "", False, False, "", stderr, LdTrace(), 1.0)
        return [(h.error.type, h.error.message) for h in res.printed_load_failures(target)]

    assert printed(other) == []
    assert printed("ImportError: libcudart.so.12: cannot open shared object file\n") == []
    assert printed(other + mine) == [("UserWarning", "caused by: ['libcudart.so.12: cannot "
                                      "open shared object file: No such file or directory']")]


@pytest.mark.probe
def test_a_walk_forks_its_tensorflow_probes_from_one_import(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory walk (and a scan) forks every TensorFlow probe from one zygote that imported
    TensorFlow once, instead of one ~3 s import per library (tensorflow-text's 27 libraries:
    77 s). Each forked probe reports what a fresh probe of that library alone reports: a
    healthy library, one whose load fails (OD340, TensorFlow's own failure checked in
    test_tf_itself_fails_as_the_fixtures_say) and one that registers nothing (OD152)."""
    py = tf_python()
    libs = ["zero_out.so", "zero_out_abi0.so", "zero_out_noreg.so"]
    for name in libs:
        shutil.copy(fixture(f"tensorflow/{name}"), tmp_path / name)
    doc = cli(capsys, "check", "--python", py, "-f", "json", str(tmp_path)).json()
    walked = {os.path.basename(r["target"]["path"]): r for r in doc["reports"]}
    assert sorted(walked) == sorted(libs)
    assert all(r["sections"]["probe"]["forked"] for r in walked.values())
    outcomes = {n: r["sections"]["probe"]["outcome"] for n, r in walked.items()}
    assert outcomes == {"zero_out.so": "loaded", "zero_out_abi0.so": "load failed",
                        "zero_out_noreg.so": "loaded"}
    for name in libs:
        with fresh_probes():
            alone = tf_check(tmp_path / name)  # no walk: a fresh child of its own
        assert alone.sections["probe"]["forked"] is False
        mine = walked[name]
        assert sorted((f.code, f.severity.value, f.message) for f in alone.findings) == \
            sorted((f["code"], f["severity"], f["message"]) for f in mine["findings"]), name
        assert alone.sections["probe"]["outcome"] == mine["sections"]["probe"]["outcome"]
        assert alone.sections["tensorflow"] == mine["sections"]["tensorflow"], name


@pytest.mark.probe
def test_a_packages_tensorflow_op_libraries_share_one_tensorflow_import(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-io's shape: the package's import loads none of its op libraries, so each is
    checked as the package's (six for tensorflow-io 0.34). The first was the probe started
    before the import chain was read (a plain child importing TensorFlow), the others forks of
    a zygote that imported it again: two imports (10.5 s → 6.9 s for tensorflow-io 0.34). The
    zygote now starts where that plain child did. Each library's report is what a fresh probe
    of it gives (a healthy one, one whose load fails: test_tf_itself_fails_as_the_fixtures_say)."""
    make_package(tmp_path, "lazytf",
                 {n: fixture(f"tensorflow/{n}") for n in ("zero_out.so", "zero_out_abi0.so")},
                 "import os\nimport tensorflow as tf\n\n\ndef load(name):\n"
                 "    return tf.load_op_library(os.path.join(os.path.dirname(__file__), name))\n")
    log = Path(os.environ["OPDOCTOR_PROBE_LOG"])
    with fresh_probes():  # this command's own probes, as a user's run starts them
        doc = cli(capsys, "check", "-f", "json", "--python", tf_python(), "--cwd",
                  str(tmp_path), "--package", "lazytf").json()
        reps = {os.path.basename(r["target"]["path"]): r for r in doc["reports"]}
        assert sorted(reps) == ["zero_out.so", "zero_out_abi0.so"]
        starts = log.read_text().splitlines()
        assert starts.count("zygote tensorflow") == 1 and \
            [s for s in starts if not s.startswith(("zygote ", "fork: "))] == [], starts
        assert all(r["sections"]["probe"]["forked"] for r in reps.values())
        assert reps["zero_out_abi0.so"]["diagnosis"]["root_findings"] == ["OD340"]
        assert reps["zero_out.so"]["diagnosis"]["root_findings"] == []
        assert not [f for f in reps["zero_out.so"]["findings"] if f["severity"] == "error"]


@pytest.mark.probe
def test_a_sibling_the_import_fails_at_is_named_not_blamed_on_the_library(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """scann's shape (survey 8's P15): the package loads a healthy op library, then one built
    against another TensorFlow's abseil, and its import fails there. A check of the healthy
    one said "built against TensorFlow 2.16–2.19: it needs abseil …" as though it did; the
    finding is the failing library's, and the message says the import fails at it."""
    pkg = make_package(
        tmp_path, "twolib", {"_fine.so": fixture("tensorflow/zero_out.so"),
                             "_ops.so": fixture("tensorflow/zero_out_oldabsl.so")},
        "import os\nimport tensorflow as tf\n\n_here = os.path.dirname(__file__)\n"
        "fine = tf.load_op_library(os.path.join(_here, '_fine.so'))\n"
        "ops = tf.load_op_library(os.path.join(_here, '_ops.so'))\n")
    real = run_python("import twolib", python=tf_python(), cwd=tmp_path, timeout=300)
    # line 6: _fine.so loaded on line 5; _ops.so's abseil 2023-08-02 is not TF 2.21's
    assert 'line 6, in <module>' in real.stderr and \
        "_ops.so: undefined symbol: _ZN4absl12lts_20230802" in real.stderr, real.stderr[-2000:]
    doc = cli(capsys, "check", "-f", "json", "--python", tf_python(),
              str(pkg / "_fine.so")).json()
    od341 = next(f for f in doc["reports"][0]["findings"] if f["code"] == "OD341")
    assert od341["subject"] == str(pkg / "_ops.so")
    assert od341["message"].startswith("`import twolib` fails at _ops.so, built against "
                                       "TensorFlow 2.16–2.19: it needs abseil"), od341
    assert doc["reports"][0]["diagnosis"]["root_findings"] == ["OD341"]
    own = cli(capsys, "check", "-f", "json", "--python", tf_python(),
              str(pkg / "_ops.so")).json()
    mine = [f for f in own["reports"][0]["findings"] if f["code"] == "OD341"]
    assert mine and all(f["message"].startswith("built against TensorFlow 2.16–2.19")
                        for f in mine), mine



@pytest.mark.probe
def test_the_named_librarys_own_release_leads_over_its_packages_missing_requirement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-decision-forests 1.10.0 (TF 2.17) installed without tf_keras beside TF 2.21
    (survey 23's T3): `import tensorflow_decision_forests` dies on `No module named
    'tf_keras'` before it loads inference.so, and `tf.load_op_library(inference.so)` fails on
    the abseil of another TensorFlow. A check of the library named by its path led with
    "install tf-keras", which changes nothing for that load; the library's own build leads
    there, and the package's check still leads with the requirement its import fails on."""
    pkg = make_package(
        tmp_path, "dfish", {"_ops.so": fixture("tensorflow/zero_out_oldabsl.so")},
        "import dfish_keras_absent\nimport os\nimport tensorflow as tf\n"
        "ops = tf.load_op_library(os.path.join(os.path.dirname(__file__), '_ops.so'))\n")
    dist_info(tmp_path, "dfish", "1.1", ["dfish/__init__.py", "dfish/_ops.so"],
              requires=("dfish-keras-absent", "tensorflow==2.17.0"))
    lib = str(pkg / "_ops.so")
    real = run_python("import dfish", python=tf_python(), cwd=tmp_path, timeout=300)
    assert "No module named 'dfish_keras_absent'" in real.stderr, real.stderr[-1500:]
    real = run_python("import sys, tensorflow as tf; tf.load_op_library(sys.argv[1])", lib,
                      python=tf_python(), timeout=300)
    assert "undefined symbol: _ZN4absl12lts_20230802" in real.stderr, real.stderr[-1500:]
    env = ("--python", tf_python(), "--cwd", str(tmp_path))
    named = cli(capsys, "check", "-f", "json", *env, lib).json()["reports"][0]
    assert named["diagnosis"]["cause"] == 3, named["diagnosis"]
    assert named["diagnosis"]["root_findings"] == ["OD341"], named["diagnosis"]
    assert any(f["code"] == "OD514" and f["severity"] == "error" for f in named["findings"])
    package = cli(capsys, "check", "-f", "json", *env, "--package", "dfish").json()
    diag = package["reports"][0]["diagnosis"]
    assert diag["cause"] == 5 and diag["root_findings"][0] == "OD514", diag

_PLAIN_EXT = r'''
#include <Python.h>
static PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&mod); }
'''


@pytest.mark.probe
def test_a_package_with_nothing_of_tensorflow_is_probed_as_its_import_runs(
        tmp_path: Path) -> None:
    """PaddlePaddle 3.3 in the TensorFlow venv (survey 17): `import paddle` works, but
    `import tensorflow; import paddle` dies with SIGSEGV. The package probe imported
    TensorFlow first for any package of a TensorFlow interpreter and reported that crash
    (OD124, an error) for a package no user imports after TensorFlow. A package whose library
    has nothing of TensorFlow's is now imported as the user's own import runs it."""
    import sysconfig

    python = tf_python()
    pkg = tmp_path / "plainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import sys, pathlib\n"
        "pathlib.Path(__file__).with_name('seen.txt').write_text("
        "str('tensorflow' in sys.modules))\n"
        "from . import _ext\n")
    (tmp_path / "ext.c").write_text(_PLAIN_EXT)
    include = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['include'])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    ext = pkg / ("_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-I", include, "-o", str(ext),
                    str(tmp_path / "ext.c")], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([python, "-c", "import plainpkg"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert real.returncode == 0, real.stderr
    assert (pkg / "seen.txt").read_text() == "False"  # the user's import: no TensorFlow
    (pkg / "seen.txt").unlink()
    report = tf_check(ext, package="plainpkg", cwd=str(tmp_path))  # as --package expands
    assert report.sections["probe"]["outcome"] == "loaded"
    assert (pkg / "seen.txt").read_text() == "False"  # the probe's import: the same
    assert not [f for f in report.findings if f.severity.value == "error"]


@pytest.mark.probe
def test_a_package_that_never_imports_tensorflow_is_not_probed_through_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W10: jax 0.10.2 with a too-old jaxlib in a TensorFlow venv without torch:
    the probe imported tensorflow first (every pure-Python package there got the TensorFlow
    probe), TensorFlow's own import died on the same jaxlib, and the report said "torch import
    failed", exit 0 — jax never imported, its failure unseen. A package whose import does not
    run `import tensorflow` gets the plain probe: its own failure is what is reported."""
    py = tf_python()
    site = tmp_path / "site"
    pkg = site / "nottf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('nottf refuses this environment')\n")
    real = subprocess.run([py, "-c", "import nottf"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)}, timeout=120)
    assert "nottf refuses this environment" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--python", py, "--package", "nottf", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    probe = rep["sections"]["probe"]
    # no framework imported first ("torch" holds the framework's version: TensorFlow's was
    # 2.21.0 here), and the TensorFlow check does not run for it
    assert probe["outcome"] == "load failed" and probe["torch"] is None, probe
    assert "tensorflow" not in [c["name"] for c in rep["checks"] if c["status"] == "ran"]
    od511 = [f for f in rep["findings"] if f["code"] == "OD511"]
    assert res.code == 1 and od511 and "nottf refuses this environment" in od511[0]["message"]


@pytest.mark.probe
def test_tensorflow_with_a_protobuf_below_its_range_fails_statically_too(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24's B10: the real protobuf 4.25.8 first on PYTHONPATH of TensorFlow 2.21
    (requires protobuf>=6.31.1): its import fails in the generated ``_pb2`` modules' ``from
    google.protobuf import runtime_version``, and `--static` said OD327 "a warning", exit 0.
    The static check's OD327 is the error that says why, leading the report."""
    from tests.test_realpkg import _rp_site

    python = tf_python()
    pb = _rp_site("protobuf-4.25.8")
    real = subprocess.run([python, "-c", "import tensorflow"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(pb)}, timeout=240)
    assert "cannot import name 'runtime_version' from 'google.protobuf'" in real.stderr, \
        real.stderr[-2000:]
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "tensorflow", "--python",
              python, "--env", f"PYTHONPATH={pb}")
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD327"], rep["diagnosis"]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD327"]
    assert "which has no google.protobuf.runtime_version" in f["message"], f


@pytest.mark.probe
def test_each_library_of_one_package_import_gets_its_own_op_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The libraries of one package share one probe of its import (a scan, several libraries
    of a package in one command); the op list TensorFlow gives for a library
    (TF_GetOpList on its handle) was the first library's for all of them — tensorflow-text's
    _mst_ops.so showed "? (TensorFlow op)" in `scan --probe`, and a package whose second
    library registers an op the first already did was clean. The import now lists each
    library's ops: TensorFlow itself says b.so registered nothing (a.so's ZeroOut came
    first), and b.so is OD151 naming a.so."""
    make_package(tmp_path, "twozero", {"a.so": fixture("tensorflow/zero_out.so"),
                                       "b.so": fixture("tensorflow/other_zero_out.so")},
                 "import os\nimport tensorflow as tf\n_here = os.path.dirname(__file__)\n"
                 "a = tf.load_op_library(os.path.join(_here, 'a.so'))\n"
                 "b = tf.load_op_library(os.path.join(_here, 'b.so'))\n")
    real = run_python("import tensorflow as tf, twozero, os\n"
                      "from tensorflow.core.framework import op_def_pb2\n"
                      "from tensorflow.python.client import pywrap_tf_session as t\n"
                      "for n in ('a.so', 'b.so'):\n"
                      "    ops = op_def_pb2.OpList()\n"
                      "    ops.ParseFromString(t.TF_GetOpList(t.TF_LoadLibrary("
                      "os.path.join(os.path.dirname(twozero.__file__), n))))\n"
                      "    print(n, [o.name for o in ops.op])\n",
                      python=tf_python(), cwd=tmp_path, timeout=300)
    assert real.stdout.split("\n")[:2] == ["a.so ['ZeroOut']", "b.so []"], real.stderr[-1500:]
    lib_a, lib_b = tmp_path / "twozero" / "a.so", tmp_path / "twozero" / "b.so"
    doc = cli(capsys, "check", "-f", "json", "--python", tf_python(), "--cwd", str(tmp_path),
              str(lib_a), str(lib_b)).json()
    reps = {os.path.basename(r["target"]["path"]): r for r in doc["reports"]}
    assert reps["a.so"]["diagnosis"]["root_findings"] == [], reps["a.so"]["diagnosis"]
    od151 = [f for f in reps["b.so"]["findings"] if f["code"] == "OD151"]
    assert len(od151) == 1 and f"already registered by {lib_a}" in od151[0]["message"], \
        reps["b.so"]["findings"]
    assert "the package's import loaded a.so first, which lists ZeroOut" in \
        od151[0]["evidence"], od151[0]["evidence"]
