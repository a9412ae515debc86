"""The schema subset opdoctor certifies without torch: never a schema torch's parser rejects.

Ground truth is ``torch._C.parse_schema(s, allow_typevars=False)`` (as ``m.def`` parses) in a
real torch child, asked once for every candidate: torch's own registered schemas, the schemas
read from the fixtures' and the real packages' libraries, and seeded mutations of them (a
character dropped or inserted, a token replaced, swapped or inserted — the typos, stray
keywords, overflowing literals and misplaced annotations a hand-written schema has).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts.schemacert import certified, torch_in_scope
from tests.conftest import BUILD, FIX, fixture, reference
from tests.helpers import cli
from tests.torchfork import run_torch

_PARSE = r"""
import torch
import json, sys
out = {}
for s in json.load(sys.stdin):
    try:
        torch._C.parse_schema(s, allow_typevars=False)
        out[s] = ""
    except Exception as e:
        out[s] = (str(e).strip().splitlines() or ["?"])[0]
registry = sorted({str(x) for x in torch._C._jit_get_all_schemas()})
print(json.dumps({"verdicts": out, "registry": registry}))
"""

# Tokens the mutations put in: types (valid, unknown, misspelt), keywords of torch's lexer,
# literals torch cannot read (hex, overflow), annotations and punctuation out of place.
_TOKENS = ("Tensor", "int", "float", "bool", "str", "Scalar", "SymInt", "SymFloat", "SymBool",
           "Dimname", "t", "flaot", "Tensor?", "int[]", "int[2]", "None", "True", "False", "1",
           "1.5", "-1", "'a'", '"s"', "in", "def", "from", "self", "out", "(a!)", "(a)", "[]",
           "[3]", "?", "*", "=", ",", "(", ")", "->", "::", ".", "default", "!", " ", "x",
           "1e5", "0x1", "inf", "[1, 2]", "[1,]", "\t", "\n", "\\", "__x",
           "99999999999999999999", "(in!)", "(def)", "[](a!)", "!?", "1e999", "-0.5e-3", ".5")
_MUTANTS = 30_000


def _mutate(text: str, rng: random.Random) -> str:
    op = rng.randrange(12)
    if op == 0 and len(text) > 1:
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1:]
    if op in (0, 1):
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(_TOKENS) + text[i:]
    if op == 2:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice("()[]?!*=,.:-> 0a\"'") + text[i:]
    parts = re.split(r"(\W)", text)
    idx = [i for i, p in enumerate(parts) if p]
    i = rng.choice(idx)
    if op < 8:
        parts[i] = rng.choice(_TOKENS)
    elif op < 10:
        j = rng.choice(idx)
        parts[i], parts[j] = parts[j], parts[i]
    else:
        parts.insert(i, rng.choice(_TOKENS) + rng.choice((" ", "", ", ")))
    return "".join(parts)


def _library_schemas() -> list[str]:
    """Schemas the static reader finds in the built fixtures and the real packages of
    build/realworld (partial ones completed with ``-> ()``, as the check does)."""
    from opdoctor.facts.elf.image import ElfImage
    from opdoctor.facts.inputfile import open_input
    from opdoctor.facts.registration import read_inventory

    found: set[str] = set()
    seen: set[tuple[str, int]] = set()  # the cases share wheels: one read per library
    for root in (FIX, BUILD / "realworld"):
        for path in sorted(root.rglob("*.so")) if root.is_dir() else []:
            try:
                size = path.stat().st_size
                if not path.is_file() or not 1000 < size < (64 << 20) or \
                        (path.name, size) in seen:
                    continue
                seen.add((path.name, size))
                img = ElfImage.open(open_input(str(path)))
                # Only libraries that link torch have schemas torch will be asked about.
                if not any(str(n).startswith(("libc10", "libtorch"))
                           for n in img.tags.get("DT_NEEDED", [])):
                    continue
                inv = read_inventory(img, [])
            except Exception:  # broken fixtures are the point of some
                continue
            found.update(s.text + (" -> ()" if s.partial else "") for s in inv.schemas)
    return sorted(found)


def _torch_verdicts(texts: list[str]) -> tuple[dict[str, str], list[str]]:
    """(torch's verdict for each text, torch's registered schemas), from one real torch child."""
    proc = run_torch(_PARSE, input=json.dumps(texts), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout.splitlines()[-1])
    return answer["verdicts"], answer["registry"]


@pytest.mark.probe
def test_certified_schemas_are_ones_torch_parses() -> None:
    libs = _library_schemas()
    assert len(libs) > 100, "too few library schemas read: are the fixtures built?"
    _, registry = _torch_verdicts([])
    rng = random.Random(20261205)
    seeds = libs + registry
    mutants: set[str] = set()
    while len(mutants) < _MUTANTS:
        text = rng.choice(seeds)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            text = _mutate(text, rng)
        mutants.add(text)
    verdicts, _ = _torch_verdicts(sorted(mutants | set(seeds)))
    wrong = [(s, v) for s, v in verdicts.items() if v and certified(s)]
    assert not wrong, wrong[:10]
    # The comparison has teeth: many candidates are rejected by torch, many are certified.
    rejected = sum(1 for v in verdicts.values() if v)
    certified_ok = sum(1 for s, v in verdicts.items() if not v and certified(s))
    assert rejected > 10_000 and certified_ok > 5_000, (rejected, certified_ok)
    # What the first run saves: no torch import for most real libraries' schemas.
    accepted = [s for s in libs if not verdicts[s]]
    assert sum(map(certified, accepted)) / len(accepted) > 0.9
    assert sum(map(certified, registry)) / len(registry) > 0.8


_TRAPS = (
    "foo.default(Tensor x) -> ()",                         # reserved overload name
    "aten::int.__xor__(int a, Tensor b) -> int",           # dunder overload name
    "foo(Tensor in) -> ()",                                # a keyword of torch's lexer
    "foo(Tensor(def!) x) -> ()",                           # ... as an alias set
    "foo(int[]? x=[3]) -> ()",                             # optional list: only None
    "foo(int x=99999999999999999999) -> ()",               # stoll overflow
    "foo(float x=1e999) -> ()",                            # stod overflow
    "foo(int[99999999999999999999] x) -> ()",              # list size overflow
    "foo(Tensor x, int y=1, Tensor z) -> ()",              # positional after a default
    "foo(Tensor x)",                                       # no return part
    "foo(Tensor x, flaot alpha) -> ()",                    # unknown type (typevars off)
    "foo(int[] x=1) -> ()",                                # scalar default for a list
    "foo(Tensor x) -> (Tensor,)",                          # trailing comma
)


@pytest.mark.probe
def test_traps_torch_rejects_are_not_certified() -> None:
    verdicts, _ = _torch_verdicts(list(_TRAPS))
    for text in _TRAPS:
        assert verdicts[text], f"torch accepts {text!r}: not a trap"
        assert not certified(text), text


def test_plain_custom_op_schemas_are_certified() -> None:
    for text in ("myop::weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor",
                 "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                 "f.out(Tensor x, int[2] k=1, *, Tensor(a!) out) -> Tensor(a!)",
                 "g(Tensor! q, Tensor[](a!) w, str mode='x', Tensor? b=None) -> (Tensor, Tensor)",
                 "h(SymInt[] size, ScalarType? dtype=None, bool flag=True) -> ()"):
        assert certified(text), text


def test_only_torch_2_is_in_scope() -> None:
    assert torch_in_scope("2.13.0+cpu") and torch_in_scope("2.0.1")
    assert not torch_in_scope("1.13.1") and not torch_in_scope("3.0.0") \
        and not torch_in_scope("")


def _check(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: Path,
           cache: Path) -> tuple[int, Any]:
    monkeypatch.setenv("OPDOCTOR_CACHE_DIR", str(cache))
    res = cli(capsys, "check", "--static", "-f", "json", str(path))
    return res.code, res.json()["reports"][0]


def test_first_run_of_a_plain_library_asks_no_torch(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    # An empty verdict cache, as on a new machine: libmyop's schemas are all in the subset, so
    # no child imports torch — it would have written its verdicts to the cache.
    code, report = _check(capsys, monkeypatch, reference(), tmp_path)
    assert code == 0 and report["summary"]["error"] == 0, report
    assert not list(tmp_path.glob("schemas-*.json"))


@pytest.mark.probe
def test_a_schema_outside_the_subset_still_goes_to_torch(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    code, report = _check(capsys, monkeypatch, fixture("registration/bad_schema.so"), tmp_path)
    assert code == 1, report
    od102 = [f for f in report["findings"] if f["code"] == "OD102"]
    assert od102 and any("torch._C.parse_schema" in e for e in od102[0]["evidence"])
    assert list(tmp_path.glob("schemas-*.json"))
