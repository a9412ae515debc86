"""Registration evidence (cause 1, static), each code against a real fixture."""

from __future__ import annotations

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.facts.registration import Schema, check_schema_syntax, plausible_schema
from opdoctor.model import Report
from opdoctor.pipeline import Selection, run_check
from tests.conftest import cuda_built, fixture, reference
from tests.helpers import cli

OD1 = Selection(("OD1",))


def check(path: str, *, ops: tuple[str, ...] = (), syms: tuple[str, ...] = ()) -> Report:
    return run_check(path, CheckOptions(expect_ops=ops, expect_symbols=syms), OD1)


def codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def test_reference_inventory_and_clean() -> None:
    want = "CPU" if cuda_built() else "CPU,CUDA"
    report = check(str(reference()), ops=(f"myop::weighted_sum[{want}]",))
    assert report.findings == []
    ns = report.sections["registration"]["namespaces"]["myop"]
    assert ns["ops"] == ["weighted_sum"]
    assert ns["kernels"] == (["CPU"] if cuda_built() else ["CPU", "CUDA"])
    schemas = report.sections["registration"]["schemas"]
    assert schemas == [{"schema": "weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor",
                        "partial": False}]


@pytest.mark.probe
def test_reference_text_shows_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", str(reference()))
    keys = "CPU" if cuda_built() else "CPU, CUDA"
    assert f"✓ Cause 1 — registration: myop::weighted_sum [{keys}]" in res.out


def test_registration_compiled_out() -> None:
    report = check(str(fixture("registration/no_registration.so")))
    assert codes(report) == ["OD101"]
    ev = "\n".join(report.findings[0].evidence)
    assert "no TORCH_LIBRARY* registrar" in ev and "weighted_sum.cpp" in ev


def test_bad_schema() -> None:
    report = check(str(fixture("registration/bad_schema.so")))
    assert codes(report) == ["OD102"]
    f = report.findings[0]
    assert "flaot" in f.message
    assert any("weighted_sum(Tensor x1, Tensor x2, flaot alpha)" in e for e in f.evidence)


def test_cpu_only_against_expectation() -> None:
    path = str(fixture("registration/cpu_only.so"))
    assert check(path).findings == []  # nothing expected: a CPU-only op is legitimate
    report = check(path, ops=("myop::weighted_sum[CPU,CUDA]",))
    assert codes(report) == ["OD106"]
    assert "no CUDA kernel" in report.findings[0].message
    assert check(path, ops=("myop::weighted_sum[CPU]",)).findings == []


def test_expected_op_absent() -> None:
    report = check(str(reference()), ops=("myop::weighted_product",))
    assert codes(report) == ["OD106"]
    assert "defined here: myop::weighted_sum" in report.findings[0].evidence[0]


def test_def_without_kernel() -> None:
    report = check(str(fixture("registration/def_only.so")))
    assert codes(report) == ["OD103"]


def test_impl_without_def() -> None:
    report = check(str(fixture("registration/impl_only.so")))
    assert codes(report) == ["OD104"]
    assert "(CPU)" in report.findings[0].message


def test_torch_extension_name_namespace() -> None:
    report = check(str(fixture("registration/extension_name.so")))
    assert codes(report) == ["OD105"]
    assert "torch.ops.TORCH_EXTENSION_NAME.weighted_sum" in report.findings[0].evidence[1]


def test_stripped_inventory_from_rodata() -> None:
    report = check(str(fixture("registration/stripped.so")), ops=("myop::weighted_sum",))
    assert codes(report) == ["OD107"]
    schemas = report.sections["registration"]["schemas"]
    assert schemas[0]["schema"] == "weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor"
    missing = check(str(fixture("registration/stripped.so")), ops=("myop::other_op",))
    assert "OD106" in codes(missing)


@pytest.mark.parametrize(("name", "code", "words"), [
    ("entry_hidden.so", "OD112", "defined but not exported (LOCAL"),
    ("entry_mangled.so", "OD111", "_Z21register_myop_kernelsv"),
])
def test_entry_points(name: str, code: str, words: str) -> None:
    report = check(str(fixture(f"registration/{name}")), syms=("register_myop_kernels",))
    assert codes(report) == [code]
    assert words in report.findings[0].message


def test_entry_point_ok_and_absent() -> None:
    ok = str(fixture("registration/entry_ok.so"))
    assert check(ok, syms=("register_myop_kernels",)).findings == []
    report = check(ok, syms=("register_other",))
    assert codes(report) == ["OD110"]


def test_builtin_schema_grammar() -> None:
    assert check_schema_syntax("f(Tensor(a!) x, int[2] k=1, *, Tensor? y=None) -> Tensor(a!)") == ""
    assert check_schema_syntax("f(Tensor x, Dimname[]? names, __torch__.C c) -> ()") == ""
    assert "unknown type 'flaot'" in check_schema_syntax("f(Tensor x, flaot a) -> Tensor")
    assert "expected '->'" in check_schema_syntax("f(Tensor x) Tensor")
    assert "needs a type and a name" in check_schema_syntax("f(Tensor) -> Tensor")


def test_expect_op_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--expect-op", "weighted_sum", str(reference()))
    assert res.code == 3


def test_schema_grammar_tuple_returns() -> None:
    # Real schemas from torchcodec 0.17 / torchaudio 2.11 / xformers 0.0.35 that the greedy
    # split used to reject ("argument 'Tensor' needs a type and a name"); torch parses them all.
    for text in ("get_next_frame(Tensor(a!) decoder) -> (Tensor, Tensor, Tensor)",
                 "_blocks_demuxer_add_stream(Tensor(a!) demuxer, int? stream_index=None, "
                 "str? media_type=None) -> (int, str)",
                 "_overdrive_core_loop(Tensor waveform,Tensor temp,Tensor(a!) last_in,"
                 "Tensor(b!) last_out,Tensor(c!) output_waveform) -> "
                 "(Tensor(a!), Tensor(b!), Tensor(c!))",
                 "_nvcc_build_version() -> (int, int, int)",
                 "xformers::_sparse24_sm90_cutlass_compress(Tensor a) -> (Tensor, Tensor)"):
        assert check_schema_syntax(text) == "", text
    assert "needs a type and a name" in check_schema_syntax("f(Tensor) -> (Tensor, Tensor)")
    assert check_schema_syntax("f(Tensor x -> Tensor") == "not of the form name(args) -> returns"


def test_not_schemas_are_dropped() -> None:
    assert not plausible_schema(Schema('torch_call_dispatcher( "aten::slice", "Tensor", x)',
                                       "torch_call_dispatcher", True), True)
    assert not plausible_schema(Schema("Ten(Tensor x, Tensor y)", "Ten", True), False)
    assert not plausible_schema(Schema("list(int n)", "list", True), False)
    assert plausible_schema(Schema("ns::op(Tensor x)", "ns::op", True), False)
    assert plausible_schema(Schema("op(Tensor x)", "op", True), True)  # m.def in a registrar
    assert plausible_schema(Schema('op(str r="sum") -> Tensor', "op", False), False)
