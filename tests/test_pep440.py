"""opdoctor's reading of version specifiers (facts/pep440.py) against ``packaging``'s, the
reference implementation pip uses: the same answer on every pair below, None only where
opdoctor declines (``===``)."""

from __future__ import annotations

import itertools

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from opdoctor.facts.pep440 import admits, below, parse

VERSIONS = ["0.9", "1.0", "1.0.0", "1.0.post1", "1.0a1", "1.0b2", "1.0rc1", "1.0.dev3",
            "1.0a1.dev1", "1.0.post1.dev2", "1.1", "1.21.6", "1.22", "1.22.0", "1.26.4", "2.0",
            "2.0.0rc1", "2.1", "2.1.0", "2.4.6", "2.13.0+cpu", "2.13.0+cu130", "1!0.5",
            "3.10.0", "0.10.2", "v1.2"]
SPECS = ["<2.1,>=1.22", "==1.0", "==1.0.*", "!=1.0.*", "~=1.0", "~=1.21.6", ">1.0", ">=1.0",
         "<1.0", "<=2.1", "==2.13.0", "==2.13.0+cpu", "!=2.0", "<2.0", ">2.0", ">=2.0.0rc1",
         "~=2.0", "==1!0.5", ">=1.0,<1.1", "<2.1", ">1.0.post1", "==1.22"]


@pytest.mark.parametrize("spec", SPECS)
def test_admits_agrees_with_packaging(spec: str) -> None:
    ref = SpecifierSet(spec)
    for version in VERSIONS:
        want = ref.contains(Version(version), prereleases=True)
        assert admits(spec, version) is want, (spec, version, want)


def test_unreadable_input_is_no_answer() -> None:
    assert admits("<2.1", "not a version") is None
    assert admits("<<2", "1.0") is None
    assert admits("===1.0", "1.0") is None
    assert admits("", "1.0") is None
    # a definite violation stands beside a clause that cannot be read
    assert admits("===1.0,<1.0", "1.0") is False


def test_ordering_matches_packaging() -> None:
    for a, b in itertools.combinations(VERSIONS, 2):
        pa, pb = parse(a), parse(b)
        assert pa is not None and pb is not None
        assert (pa.key(True) < pb.key(True)) == (Version(a) < Version(b)), (a, b)
        assert (pa.key(True) == pb.key(True)) == (Version(a) == Version(b)), (a, b)


MARKERS = [
    "platform_python_implementation != 'PyPy'",
    "python_full_version >= '3.15' and platform_python_implementation != 'PyPy'",
    "python_full_version < '3.11'",
    "python_version < '3.12'",
    "python_version >= '3.8' and python_version < '3.13'",
    "sys_platform == 'linux' or sys_platform == 'darwin'",
    "(sys_platform == 'win32' or python_version < '3.9') and os_name == 'posix'",
    "platform_machine == 'x86_64' and implementation_name == 'cpython'",
    "'linux' in sys_platform",
    "'win' not in sys_platform",
    "python_version == '3.11.*'",
    "python_version ~= '3.10'",
    "platform_system != \"Windows\"",
    "extra == 'ssh'",
    "python_version < '3.11' and extra == 'test'",
]


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize("python", ["3.8.10", "3.11.7", "3.15.0"])
def test_markers_agree_with_packaging(marker: str, python: str) -> None:
    from packaging.markers import Marker

    from opdoctor.facts.pep440 import marker_holds

    env = {"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix",
           "platform_machine": "x86_64", "platform_python_implementation": "CPython",
           "implementation_name": "cpython", "implementation_version": python,
           "python_version": python.rsplit(".", 1)[0], "python_full_version": python}
    want = Marker(marker).evaluate({**env, "extra": ""})
    assert marker_holds(marker, env) is want, (marker, python)


def test_unknown_or_unreadable_markers_are_no_answer() -> None:
    from opdoctor.facts.pep440 import marker_holds

    assert marker_holds("platform_release >= '5'", {}) is None
    assert marker_holds("python_version <", {"python_version": "3.11"}) is None
    assert marker_holds("(python_version < '3.9'", {"python_version": "3.11"}) is None


@pytest.mark.parametrize("spec", SPECS)
def test_below_is_outside_the_specifier_and_under_a_lower_bound(spec: str) -> None:
    """``below``: outside the range (packaging's own answer) on the low side — what an
    upgrade of the package requiring it cannot reach (its newer releases require more)."""
    ref = SpecifierSet(spec)
    for version in VERSIONS:
        if below(spec, version):
            assert not ref.contains(Version(version), prereleases=True), (spec, version)
    assert below(">=5.28.0,<7.0.0dev", "3.20.3")  # TensorFlow 2.21 beside protobuf 3.20.3
    assert not below("<2.1,>=1.22", "2.4.6")  # numba 0.60 beside NumPy 2.4: above, not below
    assert not below(">=1.0", "not a version")
