"""opdoctor's reading of version specifiers (facts/pep440.py) against ``packaging``'s, the
reference implementation pip uses: the same answer on every pair below, None only where
opdoctor declines (``===``)."""

from __future__ import annotations

import itertools

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from opdoctor.facts.pep440 import admits, parse

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
