"""The pydantic-free coercion of plain option values (``opdoctor.cli.coerce``, issue #21).

It must return exactly what typer's pydantic ``TypeAdapter`` returns for the values it takes
on, and leave every other value (and every error message) to typer: compared here on real
pydantic, and end to end on the real CLI — the check command's parsing imports no pydantic.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import TypeAdapter, ValidationError

from opdoctor.cli import main
from opdoctor.cli.coerce import _NOT_PLAIN, plain_value
from tests.conftest import ROOT

STRINGS = ["0", "7", "007", "-3", "42", "123456789012345678", "1.5", "0.25", "60", "60.0",
           "-0.5", "1e3", "1_000", " 5 ", "+5", "inf", "nan", "abc", "", "0x10", "5.", ".5",
           "1.0000000000000001", "3.14159265358979"]


@pytest.mark.parametrize("annotation", [int, float])
@pytest.mark.parametrize("text", STRINGS)
def test_numbers_match_pydantic(annotation: type, text: str) -> None:
    fast = plain_value(annotation, text)
    try:
        slow: object = TypeAdapter(annotation).validate_python(text)
    except ValidationError:
        assert fast is _NOT_PLAIN  # invalid input: always typer's message
        return
    if fast is not _NOT_PLAIN:
        assert type(fast) is type(slow) and fast == slow


@pytest.mark.parametrize("annotation,value", [
    (str, "x"), (str, ""), (bool, True), (bool, False), (float, 180.0), (float, 3),
    (int, 0), (list[str], ("a", "b")), (list[str], ()), (list[str], ["x"])])
def test_plain_values_match_pydantic(annotation: object, value: object) -> None:
    fast = plain_value(annotation, value)
    assert fast is not _NOT_PLAIN
    slow = TypeAdapter(annotation).validate_python(value)
    assert type(fast) is type(slow) and fast == slow


def test_plain_decimal_numbers_take_the_fast_path() -> None:
    """Not a test that cannot fail: the common values must not fall back to pydantic."""
    assert plain_value(float, "60") == 60.0 and plain_value(float, "0.5") == 0.5
    assert plain_value(int, "16384") == 16384
    assert plain_value(list[str], ("OD204",)) == ["OD204"]


@pytest.mark.parametrize("flag,value,message", [
    ("--timeout", "abc", "Input should be a valid number, unable to parse string as a number"),
    ("--probe-memory", "1.5",
     "Input should be a valid integer, unable to parse string as an integer")])
def test_invalid_numbers_keep_typer_messages(capsys: pytest.CaptureFixture[str], flag: str,
                                             value: str, message: str) -> None:
    assert main(["check", "--static", flag, value, "/nonexistent"]) == 3
    assert f"Invalid value for '{flag}': {message}" in capsys.readouterr().err


def test_check_parses_without_pydantic() -> None:
    code = ("import sys; from opdoctor.cli import main; "
            "rc = main(['check', '--static', '-f', 'json', '--timeout', '30', "
            "'--ignore', 'OD204', '/nonexistent']); "
            "print(rc, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin"},
                         timeout=120, check=False).stdout.split()
    assert out[-2:] == ["2", "False"]
