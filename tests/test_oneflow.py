"""OneFlow user-op libraries, statically. OneFlow has no wheel for Python 3.11, so the fixtures
(native/oneflow/) are compiled against oneflow_min.h, a minimal header declaring OneFlow's
registry API with the same names, and linked to a stub liboneflow.so: the ELF markers the checks
read are the ones OneFlow's REGISTER_USER_OP / REGISTER_USER_KERNEL leave, but no OneFlow runtime
is involved anywhere. What is real is the loader: each library is loaded with ctypes to prove
that the ABI and link faults fail (and the healthy ones load) the way the findings say."""

from __future__ import annotations

import ctypes

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report
from opdoctor.pipeline import run_check
from tests.conftest import fixture


def check(name: str) -> Report:
    return run_check(str(fixture(f"oneflow/{name}")), CheckOptions(named=True))


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def test_healthy_op_library_inventory() -> None:
    report = check("relu_op.so")
    assert codes(report) == []  # no OD116 either: OneFlow registrations are registrations
    sec = report.sections["oneflow"]
    assert sec["op_registrations"] and sec["kernel_registrations"]
    assert sec["op_names"] == ["my_relu"] and sec["cxx11_abi"] == 0 and sec["linked"]
    ctypes.CDLL(str(fixture("oneflow/relu_op.so")))  # loads (against the stub liboneflow)


def test_op_without_kernel() -> None:
    report = check("relu_op_nokernel.so")
    assert codes(report) == ["OD170"]
    assert report.findings[0].subject == "my_relu"
    assert not report.sections["oneflow"]["kernel_registrations"]


def test_new_abi_against_oneflow() -> None:
    report = check("relu_op_abi1.so")
    assert [f.code for f in report.diagnosis.root_findings] == ["OD351"]
    f = next(f for f in report.findings if f.code == "OD351")
    assert any("CheckAndGetOpRegistry(std::__cxx11::basic_string" in e for e in f.evidence)
    with pytest.raises(OSError, match="undefined symbol: _ZN7oneflow7user_op17UserOpRegistry"
                       "Mgr21CheckAndGetOpRegistryERKNSt7__cxx11"):
        ctypes.CDLL(str(fixture("oneflow/relu_op_abi1.so")))


def test_not_linked_to_liboneflow() -> None:
    report = check("relu_op_nolink.so")
    assert "OD352" in codes(report)
    f = next(f for f in report.findings if f.code == "OD352")
    assert "DT_NEEDED" in f.evidence[0] and "liboneflow" not in f.evidence[0]
    with pytest.raises(OSError, match="undefined symbol: _Z"):
        ctypes.CDLL(str(fixture("oneflow/relu_op_nolink.so")))


def test_not_a_oneflow_library() -> None:
    report = run_check(str(fixture("mindspore/aot_add.so")), CheckOptions())
    assert "oneflow" not in report.sections or report.sections["oneflow"] == {}
