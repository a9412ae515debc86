"""opdoctor decodes ELF structures directly (for speed); pyelftools is the ground truth they
must agree with, on real binaries."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from opdoctor.facts import Facts
from opdoctor.facts.elf.dynsym import DynSymbols
from tests.conftest import fixture, reference


def torch_lib(name: str) -> Path:
    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin
    return Path(spec.origin).parent / "lib" / name


LIBS = [lambda: reference(), lambda: fixture("loader/chain_a_rpath.so"),
        lambda: fixture("loader/wrong_runpath.so"), lambda: torch_lib("libc10.so")]


@pytest.mark.parametrize("get", LIBS, ids=["reference", "rpath", "runpath", "libc10"])
def test_sections_and_dynamic_match_pyelftools(get: object) -> None:
    path = get()  # type: ignore[operator]
    img = Facts(str(path)).image
    elf = img.elf
    theirs = [(s.name, s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()]
    assert [(s.name, s.offset, s.size) for s in img.sections] == theirs
    dyn = elf.get_section_by_name(".dynamic")
    tags: dict[str, list[object]] = {}
    for t in dyn.iter_tags():
        name = t.entry.d_tag
        if name in ("DT_NEEDED", "DT_RPATH", "DT_RUNPATH", "DT_SONAME"):
            value = getattr(t, name[3:].lower())
            tags.setdefault(name, []).append(value)
    for name, values in tags.items():
        assert img.tags.get(name) == values, name


def test_hash_lookup_matches_pyelftools() -> None:
    img = Facts(str(torch_lib("libc10.so"))).image
    ours = DynSymbols(img)
    gnu = img.elf.get_section_by_name(".gnu.hash")
    dynsym = img.elf.get_section_by_name(".dynsym")
    names = [dynsym.get_symbol(i).name for i in range(1, min(dynsym.num_symbols(), 400))]
    for name in names:
        theirs = gnu.get_symbol(name)
        mine = ours.lookup(name)
        if theirs is not None and theirs["st_shndx"] != "SHN_UNDEF":
            assert mine, name
        else:
            assert not mine, name
