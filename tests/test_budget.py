"""Per-stage time budgets (OD190): a stage that runs out stops with a finding naming it, the
rest of the report still comes out; at the default budgets nothing healthy comes near one.

The inputs are real: PyPI's torchvision 0.28.0 wheel (its 9 MB ``_C.so`` and its 185-module
package) and numpy from the venv; nothing is mocked. A budget is made tiny with
``--budget-scale`` rather than by slowing anything down.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy
import pytest

from opdoctor.checks import load_registry
from opdoctor.facts import budget
from tests.conftest import FIX, SKIP, reference
from tests.helpers import cli

WHEEL = "torchvision-0.28.0"
TINY = "0.00001"  # 10-20 s budgets become 0.1-0.2 ms: every stage with a loop stops


def _site() -> Path:
    reason = SKIP / f"{WHEEL}.txt"
    if reason.exists():
        pytest.skip(f"real wheel {WHEEL} not fetched: {reason.read_text().strip()[:200]}")
    site = FIX / "realwheels" / WHEEL / "site"
    assert site.is_dir(), f"{site} is missing: run `make fixtures`"
    return site


def _stopped(rep: dict[str, object]) -> dict[str, str]:
    checks = rep["checks"]
    assert isinstance(checks, list)
    return {c["name"]: c["reason"] for c in checks
            if c["status"] == "skipped" and c["reason"].startswith("stopped at its budget")}


# ------------------------------------------------------------------ the mechanism itself
def test_checkpoint_outside_a_stage_never_raises() -> None:
    budget.checkpoint("anything")  # target expansion, library use without the pipeline


def test_checkpoint_raises_once_the_stage_is_over_budget() -> None:
    with budget.stage("demo", 0.0):
        x = 0
        for i in range(200_000):  # burn a little CPU: process_time must move past the end
            x += i
        with pytest.raises(budget.BudgetExceeded) as info:
            budget.checkpoint("summing")
    assert info.value.stage == "demo" and info.value.doing == "summing"
    assert "stage demo stopped after" in str(info.value)
    budget.checkpoint("after the stage")  # the stage is closed: no deadline any more


def test_a_broad_except_in_a_fact_cannot_swallow_the_stop() -> None:
    """Facts catch ``Exception`` around damaged input; the stop must go past them."""
    with budget.stage("demo", 0.0):
        sum(range(200_000))
        with pytest.raises(budget.BudgetExceeded):
            try:
                budget.checkpoint("inside a try")
            except Exception:  # exactly what the test is about
                pytest.fail("BudgetExceeded was caught as an Exception")


def test_od190_is_documented_and_not_a_verdict() -> None:
    from opdoctor.verdict.diagnosis import NOT_A_VERDICT

    doc = load_registry(with_plugins=False).catalog["OD190"]
    assert doc.severity.value == "warning" and "budget" in doc.title
    assert "OD190" in NOT_A_VERDICT


def test_run_notes_are_labelled_not_a_cause() -> None:
    """OD190's number starts with 1, but it is a note about the run, not cause 1: its
    documentation says so, like the other run notes; a library code keeps its cause."""
    from opdoctor.checks.base import PIPELINE_CODES
    from opdoctor.codes import RUN_NOTE_LABEL, RUN_NOTES
    from opdoctor.verdict.diagnosis import NOT_A_VERDICT

    catalog = load_registry(with_plugins=False).catalog
    assert set(catalog) >= RUN_NOTES  # the set names real codes
    assert {d.code for d in PIPELINE_CODES} <= RUN_NOTES and NOT_A_VERDICT == RUN_NOTES
    for code in RUN_NOTES:
        assert catalog[code].run_note and catalog[code].cause_label == RUN_NOTE_LABEL
    assert catalog["OD190"].cause_label == "not a cause (run note)"
    assert catalog["OD101"].cause_label == "cause 1 (registration)"
    assert not catalog["OD101"].run_note


def test_budget_scale_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "--budget-scale", "0", str(reference()))
    assert res.code == 3 and "budget-scale" in res.err


# ------------------------------------------------------------------ real inputs, tiny budget
def test_tiny_budget_on_a_real_library_yields_od190_and_a_complete_report(
        capsys: pytest.CaptureFixture[str]) -> None:
    site = _site()
    so = site / "torchvision" / "_C.so"
    res = cli(capsys, "check", "--static", "-f", "json", "--budget-scale", TINY,
              "--env", f"PYTHONPATH={site}", str(so))
    assert res.code in (0, 1), res.err  # findings or none; never a crash or a bad-input exit
    assert "Traceback" not in res.err and "internal error" not in res.err
    rep = res.json()["reports"][0]
    stopped = _stopped(rep)
    # The stages whose loops depend on the input stop: loader emulation and symbol binding of
    # this 9 MB library at least.
    assert {"dependencies", "symbols"} <= set(stopped), stopped
    notes = [f for f in rep["findings"] if f["code"] == "OD190"]
    assert {n["message"].split()[1] for n in notes} == set(stopped)
    for n in notes:
        assert n["message"].startswith(f"stage {n['message'].split()[1]} stopped after ")
        assert "budget" in n["message"] and n["severity"] == "warning"
    # The report is complete: every check has a record, the integrity stage (no loop on a
    # sound file) still ran, and the causes of the stopped stages are "not checked".
    names = [c["name"] for c in rep["checks"]]
    assert names == [c.name for c in load_registry().checks]
    assert any(c["name"] == "integrity" and c["status"] == "ran" for c in rep["checks"])
    assert rep["diagnosis"]["cause"] in (0, 3)  # OD190 itself is never the verdict
    assert "OD190" not in rep["diagnosis"]["root_findings"]


def test_tiny_budget_bounds_the_import_chain_of_a_real_package(
        capsys: pytest.CaptureFixture[str]) -> None:
    """numpy's import chain (the package is in the venv) stops at a tiny budget with the
    module it was reading; the report still comes out."""
    res = cli(capsys, "check", "--static", "-f", "json", "--budget-scale", TINY,
              "--package", "numpy")
    assert res.code in (0, 1), res.err
    assert "Traceback" not in res.err
    rep = res.json()["reports"][0]
    stopped = _stopped(rep)
    assert "import-chain" in stopped or "variant" in stopped, stopped
    # Which of the two stages needs the chain first depends on the order facts are asked for;
    # either one stops inside numpy and says what it was reading.
    notes = [f["message"] for f in rep["findings"] if f["code"] == "OD190"
             and f["message"].split()[1] in ("import-chain", "variant")]
    assert notes
    assert all(os.path.dirname(numpy.__file__) in m for m in notes), notes
    # The import-chain stage reads the package's modules (and the names a module defines, for a
    # `from pkg import name`), then (its section) the registrations of the package's libraries,
    # whichever it reaches first with the chain already computed.
    assert all(any(w in m for w in ("reading module", "reading the names",
                                    "reading the registrations of"))
               for m in notes if m.split()[1] == "import-chain"), notes


# ------------------------------------------------------------------ healthy defaults
def test_default_budgets_never_trigger_on_the_fixtures(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every fixture library (healthy and broken ones alike) and the real wheel's library are
    checked with the default budgets: no stage comes near its budget."""
    libs = [str(reference())]
    for sub in ("registration", "loader", "integrity", "compile", "cuda", "truth", "probe"):
        root = FIX / sub
        if root.is_dir():
            libs += sorted(str(p) for p in root.rglob("*.so") if p.is_file())
    assert len(libs) > 20
    res = cli(capsys, "check", "--static", "-f", "json", *libs)
    assert res.code in (0, 1, 2), res.err
    for rep in res.json()["reports"]:
        assert not _stopped(rep), rep["target"]["path"]
        assert all(f["code"] != "OD190" for f in rep["findings"]), rep["target"]["path"]


def test_default_budgets_never_trigger_on_a_real_wheel(
        capsys: pytest.CaptureFixture[str]) -> None:
    site = _site()
    for args in ([str(site / "torchvision" / "_C.so")], ["--package", "torchvision"]):
        res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
                  *args)
        rep = res.json()["reports"][0]
        assert not _stopped(rep) and all(f["code"] != "OD190" for f in rep["findings"]), args


def test_explain_and_codes_say_a_run_note_is_no_cause(capsys: pytest.CaptureFixture[str]) -> None:
    """What a user reads (`explain OD190`, `codes`, their JSON) says the same as the docs."""
    text = cli(capsys, "explain", "OD190").out
    assert "not a cause (run note)" in text and "cause 1" not in text
    assert cli(capsys, "explain", "OD190", "-f", "json").json()["cause"] == 0
    assert cli(capsys, "explain", "OD101", "-f", "json").json()["cause"] == 1
    rows = {line.split()[0]: line for line in cli(capsys, "codes").out.splitlines() if line}
    assert "run note" in rows["OD190"] and "cause 1" in rows["OD101"]
