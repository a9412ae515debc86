"""The JSON report's text is exactly ``json.dumps(doc, indent=2)``'s (the encoder is a faster
copy of the standard one's output rules)."""

from __future__ import annotations

import collections
import enum
import json

import pytest

from opdoctor.report import jsontext
from tests.conftest import fixture, reference
from tests.helpers import cli


class _Level(enum.IntEnum):
    HIGH = 3


class _Text(str):
    pass


EDGES = {
    "scalars": [0, -1, 10**30, 2.5, -0.0, 1e300, 1e-7, float("nan"), float("inf"),
                -float("inf"), True, False, None, _Level.HIGH],
    "strings": ["", "é ü", "\u2028\u2029", "\"quoted\" \\ back", "tab\tnew\nline\x00",
                "\U0001f600", _Text("sub")],
    "empty": [[], {}, (), [[]], [{}], {"x": {}}],
    7: "int key", 2.5: "float key", True: "bool key", False: "false key", None: "null key",
    "ordered": collections.OrderedDict([("b", 1), ("a", [2, (3, 4)])]),
    "deep": {"a": [{"b": [{"c": [1, [2, [3]]]}]}]},
}


def test_edge_values_are_written_as_the_standard_encoder_writes_them() -> None:
    assert jsontext.dumps(EDGES) == json.dumps(EDGES, indent=2)
    for value in (*EDGES["scalars"], "plain", [], {}):
        assert jsontext.dumps(value) == json.dumps(value, indent=2)


@pytest.mark.parametrize("bad", [{"s": {1, 2}}, {(1, 2): "tuple key"}, [object()]])
def test_a_value_json_cannot_write_fails_as_json_fails(bad: object) -> None:
    with pytest.raises(TypeError) as ours:
        jsontext.dumps(bad)
    with pytest.raises(TypeError) as theirs:
        json.dumps(bad, indent=2)
    assert str(ours.value) == str(theirs.value)


def test_real_reports_are_byte_for_byte_the_standard_text(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Reports of the reference operator and of broken variants (findings, evidence,
    sections, import chains), and the error entries of a missing file."""
    for args in (["check", "--static", str(reference())],
                 ["check", "--static", str(fixture("registration/bad_schema.so")),
                  str(fixture("integrity/truncated.so")), "/no/such/lib.so"]):
        res = cli(capsys, *args, "-f", "json")
        doc = json.loads(res.out)
        assert doc["reports"] and res.out == json.dumps(doc, indent=2) + "\n"
