"""The start-up caches of issue #21: they change how fast opdoctor answers, never what it says.

- ``explain.recache``: compiled regexes of the explain package, stored on disk and put into
  ``re``'s own cache at start. Every stored entry must equal what ``re.compile`` builds (Pattern
  ``==`` compares the opcodes), and explain's answers must be the same with and without it.
- ``cli.fast``: ``--version``, ``codes`` and ``explain ODnnn`` replay the full CLI's stored
  output; it must be byte-identical to the typer app's, exit codes included, and a corrupt
  cache must be no cache.

Each run here uses its own ``XDG_CACHE_HOME`` so the user's caches are neither read nor written.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opdoctor.explain import load_patterns, recache
from tests import conftest
from tests.conftest import ROOT, SCHEMA_CACHE

LINE = ("ImportError: /opt/venv/lib/python3.11/site-packages/myop/_C.so: undefined symbol: "
        "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs")
MESSAGES = [
    LINE,
    "RuntimeError: operator myops::fused_gelu does not exist",
    "OSError: libc10_cuda.so: cannot open shared object file: No such file or directory",
    "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found",
    "tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered 'ZeroOut'",
    "nothing opdoctor knows about at all",
]


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "NO_COLOR": "1",
           "XDG_CACHE_HOME": str(cache), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    return subprocess.run([sys.executable, "-m", "opdoctor", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


# ------------------------------------------------------------------ compiled-regex cache
def test_every_cached_regex_is_the_one_re_builds() -> None:
    sources = [p.source for p in load_patterns()]
    for src in sources:
        entry = recache._entry(src, 0)
        assert entry is not None, src  # every knowledge-base pattern can be cached
    # flags are part of the key: an IGNORECASE pattern is not the plain one
    entry = recache._entry(r"undefined symbol", re.IGNORECASE)
    assert entry is not None and entry[0] == int(re.IGNORECASE)
    assert recache._entry(r"undefined symbol", 0) != entry


def test_recorded_entries_are_the_parsed_ones_and_need_no_second_parse() -> None:
    """A first run keeps what ``re`` hands to ``_sre.compile`` (``recache.record``), so saving
    does not parse each pattern again: the kept entries must equal the parsed ones, named
    groups, flags and bytes patterns included. Run in a child: recording changes the process's
    ``re`` compiler for good."""
    code = r"""
import re
from re import _parser
from opdoctor.explain import recache

recache.record()
recache.record()  # twice: still one layer, every compile kept once
pats = [(r"(?P<lib>lib\w+)\.so(?:\.(\d+))?", 0), (r"undefined symbol", re.IGNORECASE),
        (rb"GLIBCXX_3\.4\.(\d+)", 0), (r"^\s+at (?P<where>.*)$", re.MULTILINE),
        (r"[a-z]{2,}|\bfoo\b", re.ASCII | re.VERBOSE)]
for p, f in pats:
    re.compile(p, f)
real = _parser.parse
def parse_again(*a, **k):
    raise AssertionError("parsed a second time")
_parser.parse = parse_again  # _entry swallows errors: a parse would give None
recorded = [recache._entry(p, f) for p, f in pats]
_parser.parse = real
recache._recorded.clear()
parsed = [recache._entry(p, f) for p, f in pats]
print(None not in recorded, recorded == parsed, len({id(v[0]) for v in recache._recorded.values()}))
"""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split()
    assert out == ["True", "True", "0"]


def test_warm_loads_what_save_wrote_and_rejects_a_corrupt_file(tmp_path: Path) -> None:
    path = str(tmp_path / "regex.marshal")
    for i in range(450):  # a long-lived process (this test run) has compiled many patterns
        re.compile(f"filler{i}x+")
    assert recache.save([p.source for p in load_patterns()], path)
    code = ("import re, sys\nfrom opdoctor.explain import recache\n"
            f"n = recache.warm({path!r})\n"
            "from opdoctor.explain.matcher import load_patterns\n"
            "hits = [re._cache.get((str, p.source, 0)) is not None for p in load_patterns()]\n"
            "print(n, all(hits))\n")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split()
    assert int(out[0]) >= len(load_patterns()) and out[1] == "True"
    blob = bytearray(Path(path).read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one flipped byte: the CRC no longer matches
    Path(path).write_bytes(bytes(blob))
    assert recache.warm(path) == 0
    Path(path).write_bytes(b"\0\0")
    assert recache.warm(path) == 0
    assert recache.warm(str(tmp_path / "missing")) == 0


def test_a_long_lived_caller_with_a_full_re_cache_does_not_save_again(tmp_path: Path) -> None:
    """The explain fast path of a process whose ``re`` cache is already full (a test run, a
    script calling the CLI in a loop) loads nothing from a good file; that is no cold start,
    and it must not re-derive every pattern to write the file again."""
    code = ("import io, contextlib, re\n"
            "from opdoctor.explain import fast, recache\n"
            "for i in range(600):\n    re.compile(f'filler{i}x+')\n"
            "calls = []\nentry = recache._entry\n"
            "recache._entry = lambda *a: calls.append(a) or entry(*a)\n"
            "def run():\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            f"        return fast.fast_main(['explain', {LINE!r}])\n"
            "first = run(); written = len(calls); calls.clear()\n"
            "print(first, run(), written > 0, len(calls))\n")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin",
           "XDG_CACHE_HOME": str(tmp_path), "OPDOCTOR_CACHE_DIR": str(tmp_path / "opdoctor")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split()
    # the first call found no file and wrote it; the second found it: nothing re-derived
    assert out == ["0", "0", "True", "0"]
    assert list((tmp_path / "opdoctor").glob("regex-*.marshal"))


# Each message in both formats through the CLI's entry point, in one interpreter: "cold" gives
# every command a cache directory of its own, empty (each compiles its regexes and writes the
# file), "warm" points every command at the first one's file, loaded into `re` at its start.
_EXPLAIN_ALL = r"""
import contextlib, io, json, os, sys
from opdoctor.cli import main
mode, base, messages = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if mode == "warm":  # the file the first cold command wrote is there, and readable
    from opdoctor.explain import recache
    os.environ["XDG_CACHE_HOME"] = os.path.join(base, "c0text")
    assert recache.stored() is not None
out = []
for i, msg in enumerate(messages):
    for fmt in ("text", "json"):
        here = f"c{i}{fmt}" if mode == "cold" else "c0text"
        os.environ["XDG_CACHE_HOME"] = os.path.join(base, here)
        so, se = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
            rc = main(["explain", msg, "-f", fmt])
        out.append([msg, fmt, rc, so.getvalue(), se.getvalue()])
print(json.dumps(out))
"""


def test_explain_answers_the_same_with_and_without_the_caches(tmp_path: Path) -> None:
    import json

    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "NO_COLOR": "1",
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    runs = {}
    for mode in ("cold", "warm"):  # cold writes the caches, warm reads them
        p = subprocess.run([sys.executable, "-c", _EXPLAIN_ALL, mode, str(tmp_path),
                            json.dumps(MESSAGES)], capture_output=True, text=True, env=env,
                           timeout=120, check=True)
        runs[mode] = json.loads(p.stdout)
    for i in range(len(MESSAGES)):
        for fmt in ("text", "json"):
            assert any((tmp_path / f"c{i}{fmt}" / "opdoctor").glob("regex-*.marshal"))
    assert len(runs["cold"]) == 2 * len(MESSAGES)
    for cold, warm in zip(runs["cold"], runs["warm"], strict=True):
        assert cold == warm, cold[:2]
        assert cold[2] == (1 if cold[0].startswith("nothing") else 0), cold
        assert cold[3].strip(), cold  # an answer was printed


# ------------------------------------------------------------------ replayed CLI answers
REPLAYED = [
    ["--version"], ["codes"], ["codes", "-f", "json"], ["codes", "--format", "markdown"],
    ["explain", "OD301"], ["explain", "od301", "-f", "json"],
    ["codes", "-f", "bogus"], ["explain", "OD999"],
]
# What the full typer app answers for each, all in one interpreter (its answers there are
# byte-identical to one interpreter per command: compared when this was made so).
_TYPER_ALL = r"""
import contextlib, io, json, sys
from opdoctor.cli.app import main
out = []
for args in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code
    out.append([rc, o.getvalue(), e.getvalue()])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def typer_answers() -> dict[str, tuple[int, str, str]]:
    import json

    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", _TYPER_ALL, json.dumps(REPLAYED)],
                       capture_output=True, text=True, env=env, timeout=120, check=True)
    return {json.dumps(a): (rc, o, e) for a, (rc, o, e) in zip(
        REPLAYED, json.loads(p.stdout), strict=True)}


@pytest.mark.parametrize("args", REPLAYED)
def test_replayed_answers_equal_the_typer_app(args: list[str], tmp_path: Path,
                                              typer_answers: dict[str, Any]) -> None:
    import json

    from opdoctor.cli.app import main as app_main

    rc, out, err = typer_answers[json.dumps(args)]
    first = _run(args, tmp_path)  # computes (and, when it succeeded, stores)
    second = _run(args, tmp_path)  # replays
    for run in (first, second):
        assert (run.returncode, run.stdout, run.stderr) == (rc, out, err), args
    stored = list((tmp_path / "opdoctor").glob("cli-*.marshal")) if (
        tmp_path / "opdoctor").is_dir() else []
    # failures are never stored; the constant --version needs no cache at all
    assert bool(stored) == (rc == 0 and args != ["--version"])
    assert app_main is not None


def test_replay_needs_no_typer_and_a_corrupt_cache_is_recomputed(tmp_path: Path) -> None:
    first = _run(["codes"], tmp_path)
    (stored,) = (tmp_path / "opdoctor").glob("cli-*.marshal")
    assert first.returncode == 0 and first.stdout.startswith("OD")
    code = ("import io, sys, contextlib\nfrom opdoctor.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(['codes'])\n"
            "print(rc, [m for m in ('typer', 'pydantic', 'opdoctor.checks', 'opdoctor.facts')"
            " if m in sys.modules])\n")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "XDG_CACHE_HOME": str(tmp_path),
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=60, check=True).stdout.strip() for _ in range(2)]
    assert outs[0].startswith("0 [") and "typer" in outs[0]  # computed: the full CLI ran
    assert outs[1] == "0 []", outs  # replayed: nothing heavy imported
    stored.write_bytes(stored.read_bytes()[:-7])  # truncated: the CRC fails
    again = _run(["codes"], tmp_path)
    assert (again.returncode, again.stdout) == (0, first.stdout)


# --------------------------------------------------------------------- the lazy check registry
# `check` builds its checks from a cached manifest and imports a family's module only when the
# family runs (opdoctor.checks.load_lazy_registry); each family's "does it apply" goes to a gate
# first. Both must be the full registry's, declaration for declaration and answer for answer.


def _declared(check: object) -> tuple[object, ...]:
    c: Any = check
    return (c.name, c.summary, c.causes, c.codes, c.needs_elf, c.budget, c.section is None,
            c.applies is None)


def test_lazy_registry_declares_what_the_full_registry_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opdoctor.checks import load_lazy_registry, load_registry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    full = load_registry()
    for state in ("no cache", "cached", "corrupt cache"):
        if state == "corrupt cache":
            for f in (tmp_path / "opdoctor").glob("checks-*.marshal"):
                f.write_bytes(b"\0garbage")
        load_lazy_registry.cache_clear()
        lazy = load_lazy_registry()
        load_lazy_registry.cache_clear()
        assert lazy is not None, state
        assert lazy.catalog == full.catalog, state
        assert [_declared(c) for c in lazy.checks] == [_declared(c) for c in full.checks], state
        assert list(tmp_path.glob("opdoctor/checks-*.marshal")), state


def _gate_targets() -> list[tuple[str, str, dict[str, Any]]]:
    from tests.conftest import BUILD, fixture, reference

    pkg = BUILD / "pkg"
    return [
        ("reference --static", str(reference()), {}),
        ("reference, probe", str(reference()), {"probe": True}),
        ("TensorFlow op", str(fixture("tensorflow/zero_out.so")), {}),
        ("MindSpore AOT", str(fixture("mindspore/aot_add.so")), {}),
        ("MindSpore AOT named", str(fixture("mindspore/aot_add.so")),
         {"aot_function": "CustomAdd"}),
        ("OneFlow op", str(fixture("oneflow/relu_op.so")), {}),
        ("package", str(pkg / "myop"), {"package": "myop", "cwd": str(pkg)}),
        ("package, probe", str(pkg / "myop"), {"package": "myop", "cwd": str(pkg),
                                               "probe": True}),
        ("broken file", str(fixture("integrity/not_elf.so")), {}),
    ]


def test_gates_answer_as_the_check_families_do() -> None:
    import importlib

    from opdoctor.checks import GATES
    from opdoctor.facts import CheckOptions, Facts

    answered: dict[str, set[bool]] = {m: set() for m in GATES}
    for label, path, opts in _gate_targets():
        for module, gate in GATES.items():
            real = importlib.import_module(f"opdoctor.checks.{module}").CHECK
            why = gate(Facts(path, CheckOptions(**opts)))
            truth = real.applies(Facts(path, CheckOptions(**opts)))
            assert why in ("", truth), (label, module, why, truth)
            answered[module].add(bool(why))
    # Every gate both skipped a family itself and let one through to the family.
    assert all(seen == {True, False} for seen in answered.values()), answered


# ------------------------------------------------------------ compiled dataclass methods
_DATACLASS_CODE = r'''
import dataclasses, sys, types
if sys.argv[1] != "plain":
    from opdoctor.cli import dccache
    if sys.argv[1] == "cached":
        dccache._shipped = dict  # the disk cache alone, as on a Python without a table
    dccache.install()
import opdoctor.cli.settings, opdoctor.codes, opdoctor.facts.core, opdoctor.facts.elf.dynsym
import opdoctor.model, opdoctor.pipeline

TABLE = getattr(sys.modules.get(
    f"opdoctor._startup.dataclasses_py{sys.version_info[0]}{sys.version_info[1]}"),
    "__file__", "")

def canon(c):
    return tuple(canon(k) if isinstance(k, types.CodeType) else repr(k) if not
                 isinstance(k, tuple) else tuple(map(repr, k)) for k in c.co_consts) + tuple(
        repr(getattr(c, a, None)) for a in (
            "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags",
            "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_qualname",
            "co_linetable", "co_exceptiontable", "co_name", "co_stacksize",
            # the shipped table's code is compiled in its own file, at its own lines
            *(() if sys.argv[1] == "shipped" else ("co_filename", "co_firstlineno"))))

out = []
for mod in (opdoctor.cli.settings, opdoctor.codes, opdoctor.facts.core,
            opdoctor.facts.elf.dynsym, opdoctor.model, opdoctor.pipeline):
    for name, cls in sorted(vars(mod).items()):
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and \
                cls.__module__ == mod.__name__:
            for attr, fn in sorted(vars(cls).items()):
                code = getattr(fn, "__code__", None)
                if code is not None and code.co_filename in ("<string>", TABLE):
                    out.append((mod.__name__, name, attr, canon(code)))
compiled = True
if sys.argv[1] == "cached":
    compiled = bool(dccache._state.get("dirty"))
    dccache.save()
elif sys.argv[1] == "shipped":
    compiled = "loaded" in dccache._state  # a text the table lacks would read the disk cache
print(len(out), compiled)
sys.stdout.write(repr(out))
'''


def _dump_dataclasses(mode: str, cache: Path, code: str = _DATACLASS_CODE) -> str:
    """The methods of opdoctor's dataclasses, canonicalised, as a child built them in
    ``mode`` (plain / cached / shipped) with ``cache`` as its XDG_CACHE_HOME."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "XDG_CACHE_HOME": str(cache),
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE, "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True,
                          env=env, timeout=120, check=True).stdout


def test_cached_dataclass_methods_are_the_ones_exec_compiles(tmp_path: Path) -> None:
    """opdoctor.cli.dccache: with a cold cache, a warm one and a corrupt one, every method
    dataclasses generates for opdoctor's classes has exactly the code it has without it."""
    def dump(mode: str) -> str:
        return _dump_dataclasses(mode, tmp_path)

    n, _, plain = dump("plain").partition(" ")
    assert int(n) > 50  # dataclass methods of opdoctor's classes compared
    assert dump("cached") == f"{n} {plain}"  # cold: compiled (True) and stored
    files = list((tmp_path / "opdoctor").glob("dataclasses-*.marshal"))
    assert len(files) == 1
    warm = dump("cached")
    assert warm == f"{n} {plain.replace('True', 'False', 1)}"  # warm: nothing compiled
    files[0].write_bytes(b"\0corrupt")
    assert dump("cached") == f"{n} {plain}"  # a corrupt cache is no cache


def test_shipped_dataclass_methods_are_the_ones_exec_compiles(tmp_path: Path) -> None:
    """The table that ships with the package (native/gen_startup.py): a first run, with an
    empty cache directory, takes every method of opdoctor's classes from it, compiles
    nothing and reads no disk cache, and each method's code is the one exec compiles (its
    file and line numbers aside: the table's code is compiled in its own file)."""
    n, _, shipped = _dump_dataclasses("shipped", tmp_path).partition(" ")
    assert int(n) > 50
    assert shipped.startswith("False"), shipped[:80]  # nothing compiled, no disk cache read
    assert not list((tmp_path / "opdoctor").glob("dataclasses-*.marshal"))
    # "plain" canonicalises with file and line; compare the same fields both ways
    plain = _dump_dataclasses("plain", tmp_path, _DATACLASS_CODE.replace(
        'sys.argv[1] == "shipped" else', 'sys.argv[1] in ("shipped", "plain") else'))
    assert plain == f"{n} True{shipped[len('False'):]}"


def test_the_shipped_table_is_current() -> None:
    """Every text dataclasses runs for opdoctor's classes on this Python is in the table, and
    nothing else: a changed class without `make startup-tables` fails here (at run time it
    would only be compiled again, the cold start slower)."""
    p = subprocess.run([sys.executable, str(ROOT / "native" / "gen_startup.py"), "--check"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


_FOREIGN_CODE = r'''
import dataclasses, sys, types
from opdoctor import cachefile
from opdoctor.cli import dccache
dccache._shipped = dict  # the disk cache alone: opdoctor's classes are stored there
dccache.install()
import opdoctor.model
other = types.ModuleType("someone_else")
sys.modules["someone_else"] = other
exec("import dataclasses\n@dataclasses.dataclass\nclass Foreign:\n    zz_foreign_field: int = 0\n",
     other.__dict__)
assert other.Foreign(3).zz_foreign_field == 3
dccache.save()
stored = cachefile.read(dccache.cache_path())
print(len(stored), sum("zz_foreign_field" in s for s in stored))
'''


def test_dataclass_cache_stores_only_opdoctors_classes(tmp_path: Path) -> None:
    """A class of another module defined in the same process (torch, imported after main()
    ran in-process) is compiled as usual but not written to the cache every check reads."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "XDG_CACHE_HOME": str(tmp_path),
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    p = subprocess.run([sys.executable, "-c", _FOREIGN_CODE], capture_output=True, text=True,
                       env=env, timeout=120, check=True)
    total, foreign = (int(x) for x in p.stdout.split())
    assert total > 20 and foreign == 0, p.stdout


# ------------------------------------------------------------------ the shipped regex table
_NO_TABLE = ("import sys\nfrom opdoctor.cli import rxcache\nrxcache.SHIPPED = ''\n"
             "from opdoctor.cli import main\nsys.argv[0] = 'opdoctor'\nmain()\n")


def test_the_shipped_regex_table_builds_res_own_patterns() -> None:
    """Every entry of the table a static check's regexes ship in (native/gen_startup.py
    --regex) builds the object ``re.compile`` builds here (Pattern ``==`` compares the
    opcodes); its key is this interpreter's, so a first check uses it."""
    import _sre  # type: ignore[import-not-found]

    from opdoctor import cachefile
    from opdoctor.cli import rxcache

    key, entries = cachefile.read(rxcache.SHIPPED)
    assert key == recache.compiler_key()
    assert rxcache.shipped_entries() == entries and len(entries) > 100
    for key_flags, pattern, *rest in entries:
        assert _sre.compile(pattern, *rest) == re.compile(pattern, key_flags), pattern


def test_a_first_static_check_compiles_no_regex_the_table_lacks(tmp_path: Path) -> None:
    """A first `check --static` of the reference operator (an empty cache directory) finds
    every regex it compiles in the shipped table: it stores none on disk. Without the table
    the same run stores them all (a regex added without `make startup-tables` fails here)."""
    reference = conftest.reference()
    with_table = _run(["check", "--static", str(reference)], tmp_path / "a")
    assert with_table.returncode == 0, with_table.stderr
    assert not list((tmp_path / "a" / "opdoctor").glob("regex-check-*"))
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "NO_COLOR": "1",
           "XDG_CACHE_HOME": str(tmp_path / "b"), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    without = subprocess.run([sys.executable, "-c", _NO_TABLE, "check", "--static",
                              str(reference)], capture_output=True, text=True, env=env,
                             timeout=120, check=False)
    assert without.returncode == 0 and without.stdout == with_table.stdout
    assert len(list((tmp_path / "b" / "opdoctor").glob("regex-check-*"))) == 1


def test_a_table_of_another_interpreter_is_not_used(tmp_path: Path) -> None:
    """A table written under another compiler key (another Python, a patched ``re``) or a
    damaged one serves nothing: those patterns are compiled and cached on disk as before."""
    from opdoctor import cachefile
    from opdoctor.cli import rxcache

    key, entries = cachefile.read(rxcache.SHIPPED)
    foreign = tmp_path / "foreign.marshal"
    cachefile.write(str(foreign), (key.replace("3.", "9.", 1), entries))
    assert rxcache.shipped_entries(str(foreign)) == []
    damaged = tmp_path / "damaged.marshal"
    damaged.write_bytes(Path(rxcache.SHIPPED).read_bytes()[:-10])
    assert rxcache.shipped_entries(str(damaged)) == []
    assert rxcache.shipped_entries(str(tmp_path / "absent.marshal")) == []


# ------------------------------------------------------------------ the shipped check manifest
_MANIFEST_CODE = r'''
import sys
from opdoctor import checks
if sys.argv[1] != "shipped":
    checks.SHIPPED_MANIFEST = sys.argv[1]
registry = checks.load_lazy_registry()
families = sorted(m for m in sys.modules if m.startswith("opdoctor.checks.")
                  and m != "opdoctor.checks.base")
print(registry is not None, families)
'''


def test_a_first_run_takes_the_check_manifest_from_the_package(tmp_path: Path) -> None:
    """With an empty cache directory the lazy registry's manifest comes from the shipped table
    (no check family imported); a table whose key is not these sources' is not used (every
    family imported to build it), and either way the registry is the full one's."""
    from opdoctor import cachefile, checks

    def families(table: str, cache: Path) -> str:
        env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin", "XDG_CACHE_HOME": str(cache)}
        return subprocess.run([sys.executable, "-c", _MANIFEST_CODE, table], env=env,
                              capture_output=True, text=True, timeout=60,
                              check=True).stdout.strip()

    assert families("shipped", tmp_path / "a") == "True []"
    key, entries = cachefile.read(checks.SHIPPED_MANIFEST)
    assert key == checks.content_key() and entries == checks.built_manifest()
    stale = tmp_path / "stale.marshal"
    cachefile.write(str(stale), (key + "0", entries))
    built = families(str(stale), tmp_path / "b")
    assert built.startswith("True [") and "'opdoctor.checks.deps'" in built
