"""TensorFlow op libraries (cause 1 static, cause 2 process): compiled for real against the
headers and libtensorflow_framework of the tensorflow-cpu wheel (downloaded, not installed)."""

from __future__ import annotations

import shutil
import venv
from pathlib import Path

from opdoctor.facts import CheckOptions
from opdoctor.model import Report
from opdoctor.pipeline import Selection, run_check
from tests.conftest import BUILD, fixture

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
