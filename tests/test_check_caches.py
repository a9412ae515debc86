"""The start-up caches of ``opdoctor check`` (issue #21): they change how fast it answers,
never what it says.

- ``cli.rxcache``: the regexes a check compiles (str and bytes), stored as SRE opcodes and put
  into ``re``'s own cache at start. Every stored entry must equal what ``re.compile`` builds,
  and the report must be the same cold, warm, with a corrupt file and with runs writing the
  file concurrently.
- ``cli.configcache``: the ``[tool.opdoctor]`` table of a configuration file, keyed by the
  file's identity. An edit (even one that keeps the size), a corrupt cache file or concurrent
  writers must never yield a table other than the file's.

Each run here uses its own ``XDG_CACHE_HOME`` so the user's caches are neither read nor written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from opdoctor import cachefile
from opdoctor.cli import configcache, rxcache
from opdoctor.cli.settings import ConfigError, read_config
from opdoctor.explain import recache
from tests.conftest import ROOT, SCHEMA_CACHE, reference

# The disk cache alone, as on an interpreter the shipped regex table does not serve (another
# Python version, a patched ``re``): opdoctor's CLI with rxcache.SHIPPED turned off.
NO_TABLE = ("import sys\nfrom opdoctor.cli import rxcache\nrxcache.SHIPPED = ''\n"
            "from opdoctor.cli import main\nsys.argv[0] = 'opdoctor'\nmain()\n")


def _check(lib: Path, cache: Path, cwd: Path | None = None,
           hashseed: str = "random", table: bool = True) -> tuple[int, Any, str]:
    """``opdoctor check --static -f json LIB`` in a child: (exit code, report with the
    measured durations masked, stderr). ``table=False``: without the shipped regex table."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
           "XDG_CACHE_HOME": str(cache),
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE, "PYTHONHASHSEED": hashseed}
    start = ["-m", "opdoctor"] if table else ["-c", NO_TABLE]
    p = subprocess.run([sys.executable, *start, "check", "--static", "-f", "json",
                        str(lib)], capture_output=True, text=True, env=env,
                       timeout=120, check=False, cwd=cwd or ROOT)
    return p.returncode, _masked(json.loads(p.stdout)) if p.stdout else None, p.stderr


def _masked(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: (0 if k == "seconds" else _masked(v)) for k, v in o.items()}
    if isinstance(o, list):
        return [_masked(v) for v in o]
    return o


def _regex_files(cache: Path) -> list[Path]:
    return sorted((cache / "opdoctor").glob("regex-check-*.marshal"))


# ------------------------------------------------------------------ compiled regexes of check
def test_check_regex_cache_holds_re_own_patterns_and_changes_no_answer(tmp_path: Path) -> None:
    lib = reference()
    cold = _check(lib, tmp_path, table=False)
    (path,) = _regex_files(tmp_path)
    rewrites, entries = cachefile.read(str(path))
    assert rewrites == 1 and len(entries) > 50
    kinds = {type(e[1]) for e in entries}
    assert kinds == {str, bytes}  # the ELF readers' bytes patterns are cached too
    import _sre  # type: ignore[import-not-found]

    for key_flags, pattern, *rest in entries:
        assert _sre.compile(pattern, *rest) == re.compile(pattern, key_flags), pattern
    warm = _check(lib, tmp_path, table=False)
    assert warm == cold
    # with the shipped table (this interpreter's): the same answer
    assert _check(lib, tmp_path / "shipped") == cold
    # A run that compiles nothing new does not rewrite the file. (With the same hash seed:
    # facts/registration.py joins a set of type names into one pattern in hash order, so
    # each seed makes a new, equivalent pattern, which the bound on rewrites contains.)
    _check(lib, tmp_path, hashseed="0", table=False)
    rewrites = cachefile.read(str(path))[0]
    assert _check(lib, tmp_path, hashseed="0", table=False) == cold
    assert cachefile.read(str(path))[0] == rewrites
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one flipped byte: the CRC no longer matches
    path.write_bytes(bytes(blob))
    assert _check(lib, tmp_path, table=False) == cold  # a corrupt cache is no cache …
    assert cachefile.read(str(path))[0] == 1  # … and is written afresh
    assert len(cachefile.read(str(path))[1]) > 50


def test_concurrent_check_runs_leave_a_valid_regex_cache(tmp_path: Path) -> None:
    lib = reference()
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
           "XDG_CACHE_HOME": str(tmp_path), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    procs = [subprocess.Popen([sys.executable, "-c", NO_TABLE, "check", "--static", "-f",
                               "json", str(lib)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
             for _ in range(4)]
    outs = [_masked(json.loads(p.communicate(timeout=120)[0])) for p in procs]
    assert all(o == outs[0] for o in outs)
    (path,) = _regex_files(tmp_path)  # no temporary file left behind
    assert not list((tmp_path / "opdoctor").glob("*.tmp"))
    stored = cachefile.read(str(path))
    assert stored is not None and len(stored[1]) > 50
    assert _check(lib, tmp_path, table=False)[1] == outs[0]


def test_regex_cache_adds_new_patterns_within_bounds_and_rejects_foreign_files(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(rxcache, "SHIPPED", "")  # the disk file alone
    path = str(tmp_path / "rx.marshal")
    re.purge()  # as at a CLI's start: re's cache holds few patterns, the file's fit in it
    host = re.compile(r"compiled-by-the-caller-before-" + str(time.time_ns()))
    assert rxcache.warm(path) == 0
    mine = re.compile(r"opdoctor-test-(\d+)-" + str(time.time_ns()))  # a pattern no file has
    assert rxcache.save()
    rewrites, entries = cachefile.read(path)
    assert rewrites == 1 and entries
    stored = {e[1] for e in entries}
    assert mine.pattern in stored and host.pattern not in stored  # the caller's are not check's
    assert rxcache.warm(path) == len(entries)
    assert not rxcache.save()  # nothing new since
    # A pattern built from data that differs run to run rewrites the file at most
    # MAX_REWRITES times; after that, only runs that bring two or more new patterns do.
    for i in range(rxcache.MAX_REWRITES + 3):
        re.compile(rb"opdoctor-bytes-" + str(time.time_ns() + i).encode())
        rxcache.save()
    assert cachefile.read(path)[0] == rxcache.MAX_REWRITES
    family = [re.compile(f"opdoctor-family-{i}-{time.time_ns()}") for i in range(2)]
    assert rxcache.save()
    rewrites, entries = cachefile.read(path)
    assert rewrites == rxcache.MAX_REWRITES + 1
    assert {p.pattern for p in family} <= {e[1] for e in entries}
    # Foreign content behind a valid CRC: no cache, no crash; the next save starts afresh.
    for foreign in ([1, 2], (1, [("x",)]), (2, [(0, 5, 0, [], 0, {}, ())]), "text"):
        cachefile.write(path, foreign)
        assert rxcache.warm(path) == 0
    re.compile(r"opdoctor-after-foreign-" + str(time.time_ns()))
    assert rxcache.save() and cachefile.read(path)[0] == 1


def test_regex_cache_file_is_keyed_by_the_sources() -> None:
    """A new version of opdoctor's sources (a stale key) never reads the old file."""
    saved = list(cachefile._STAMPS)
    try:
        cachefile._STAMPS[:] = [["a.py:1:1"]]
        first = rxcache.cache_file()
        cachefile._STAMPS[:] = [["a.py:1:2"]]
        assert rxcache.cache_file() != first
    finally:
        cachefile._STAMPS[:] = saved
    assert recache.MAX_ENTRIES < 512  # re's own cache must hold what is loaded


# ------------------------------------------------------------------ configuration table
def _settled(path: Path) -> None:
    old = time.time() - 60
    os.utime(path, (old, old))


def test_config_cache_hits_and_an_edit_of_the_same_size_is_seen(tmp_path: Path,
                                                                monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[project]\nname = "x"\n[tool.opdoctor]\nfail-on = "warning"\n')
    _settled(cfg)
    assert configcache.lookup(str(cfg)) is None
    assert read_config(str(cfg)) == {"fail-on": "warning"}  # parsed, stored
    assert configcache.lookup(str(cfg)) == ({"fail-on": "warning"},)
    assert read_config(str(cfg)) == {"fail-on": "warning"}  # from the cache
    cfg.write_text('[project]\nname = "x"\n[tool.opdoctor]\nfail-on = "error!!"\n')
    assert len(cfg.read_bytes()) == len(
        b'[project]\nname = "x"\n[tool.opdoctor]\nfail-on = "warning"\n')
    # Same size, written now: the stamp (mtime, ctime) differs, so the old table is not used;
    # and a file this fresh is not stored (its next change could keep the stamp).
    assert configcache.lookup(str(cfg)) is None
    with pytest.raises(ConfigError, match="fail-on"):
        read_config(str(cfg))
    assert configcache.lookup(str(cfg)) is None
    cfg.write_text('[project]\nname = "x"\n')  # no table: None is cached too
    _settled(cfg)
    assert read_config(str(cfg)) is None
    assert configcache.lookup(str(cfg)) == (None,)


def test_config_cache_never_stores_an_invalid_file_and_survives_corruption(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bad = tmp_path / "opdoctor.toml"
    bad.write_text("fail-on = \n")
    _settled(bad)
    for _ in range(2):
        with pytest.raises(ConfigError, match="invalid TOML"):
            read_config(str(bad))
    assert not (tmp_path / "cache" / "opdoctor").exists() or not list(
        (tmp_path / "cache" / "opdoctor").glob("config-*"))
    good = tmp_path / "pyproject.toml"
    good.write_text("[tool.opdoctor]\ntimeout = 7\n")
    _settled(good)
    assert read_config(str(good)) == {"timeout": 7}
    (stored,) = (tmp_path / "cache" / "opdoctor").glob("config-*.marshal")
    stored.write_bytes(stored.read_bytes()[:-3])  # truncated: the CRC fails
    assert configcache.lookup(str(good)) is None
    assert read_config(str(good)) == {"timeout": 7}
    # Foreign content behind a valid CRC (another path's, another format): no cache.
    cachefile.write(str(stored), (configcache.FORMAT, "/elsewhere/pyproject.toml",
                                  configcache.stamp(str(good)), {"timeout": 1}))
    assert read_config(str(good)) == {"timeout": 7}
    cachefile.write(str(stored), "junk")
    assert read_config(str(good)) == {"timeout": 7}


_WRITER = r"""
import sys
from opdoctor.cli import configcache
path = sys.argv[1]
for _ in range(200):
    configcache.store(path, configcache.stamp(path), {"timeout": int(sys.argv[2])})
"""


def test_concurrent_config_cache_writers_leave_a_valid_entry(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text("[tool.opdoctor]\ntimeout = 7\n")
    _settled(cfg)
    env = {"PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": str(cache),
           "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(cfg), str(7 + i % 2)],
                              env=env) for i in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    found = configcache.lookup(str(cfg))
    assert found in (({"timeout": 7},), ({"timeout": 8},))  # one writer's whole entry
    assert not list((cache / "opdoctor").glob("*.tmp"))


def test_check_reads_the_project_configuration_the_same_cold_and_warm(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    cfg = proj / "pyproject.toml"
    cfg.write_text('[project]\nname = "x"\n[tool.opdoctor]\nignore = ["OD204"]\n'
                   'fail-on = "info"\n')
    _settled(cfg)
    lib = reference()
    cold = _check(lib, tmp_path / "c", proj)
    assert list((tmp_path / "c" / "opdoctor").glob("config-*.marshal"))
    warm = _check(lib, tmp_path / "c", proj)
    assert cold == warm and cold[0] == 0
    # An edit takes effect at once: an invalid value is reported, exit 3.
    cfg.write_text('[project]\nname = "x"\n[tool.opdoctor]\nignore = ["OD204"]\n'
                   'fail-on = "nevr!"\n')
    edited = _check(lib, tmp_path / "c", proj)
    assert edited[0] == 3 and "fail-on" in edited[2]


# ------------------------------------------------------------------ modules check does not load
_LEAN = r"""
import io, sys
from contextlib import redirect_stdout
from opdoctor.cli import main
with redirect_stdout(io.StringIO()):
    rc = main(["check", "--static", "-f", "json", sys.argv[1]])
print(rc, type(sys.modules["inspect"]).__name__, type(sys.modules["ast"]).__name__,
      sorted(m for m in ("dis", "tokenize", "shutil", "signal", "typing") if m in sys.modules))
import dataclasses, inspect

@dataclasses.dataclass
class NoDoc:
    a: int
    b: str = "x"

print(NoDoc.__doc__, type(sys.modules["inspect"]).__name__, inspect.signature(NoDoc))
import ast  # the stand-in: the real module on first use
print(ast.dump(ast.parse("x = 1")), type(sys.modules["ast"]).__name__)
"""


def test_check_leaves_inspect_ast_shutil_and_signal_unloaded_and_they_still_work(
        tmp_path: Path) -> None:
    """dataclasses imports inspect only to write docstrings (check's classes all have one),
    facts/compile.py ast only to read Python sources (a lone library has none): cli.dccache
    gives both a stand-in that imports the real module on first use. typing is not imported
    at all: annotation-only names sit under a ``TYPE_CHECKING = False`` guard (~5 ms)."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
           "XDG_CACHE_HOME": str(tmp_path), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    for _ in range(2):  # the first run fills the caches (and imports every check family)
        out = subprocess.run([sys.executable, "-c", _LEAN, str(reference())],
                             capture_output=True, text=True, env=env, timeout=120,
                             check=True).stdout.splitlines()
    assert out[0] in ("0 _OnFirstUse _OnFirstUse []", "1 _OnFirstUse _OnFirstUse []"), out
    # Used later (a class without a docstring, the typer app): the real module, same answer.
    assert out[1] == "NoDoc(a: int, b: str = 'x') module (a: int, b: str = 'x') -> None", out
    assert out[2] == ("Module(body=[Assign(targets=[Name(id='x', ctx=Store())], "
                      "value=Constant(value=1))], type_ignores=[]) module"), out


@pytest.mark.parametrize("path", [None, "", "/usr/bin:/bin", "/nonexistent::/usr/bin:/usr/bin",
                                  "/tmp:/bin"])
def test_which_is_shutil_which(path: str | None, monkeypatch: Any) -> None:
    import shutil

    from opdoctor.facts.core import _which

    if path is None:
        monkeypatch.delenv("PATH", raising=False)
    else:
        monkeypatch.setenv("PATH", path)
    for name in ("ls", "sh", "nvidia-smi", "tmp", "bin", "definitely-not-a-program"):
        assert _which(name) == shutil.which(name), (path, name)


_GC = r"""
import gc, io, sys
from contextlib import redirect_stdout
from opdoctor.cli import main
with redirect_stdout(io.StringIO()):
    main(["check", "--static", "-f", "json", sys.argv[1]])
print(gc.isenabled(), gc.collect())
"""


def test_check_runs_without_the_cyclic_collector_and_leaves_little_for_it(
        tmp_path: Path) -> None:
    """cli.main disables the cyclic collector for a check (a short run): that is only sound
    while a check leaves little cyclic garbage. Measured: ~1,000 objects for the reference
    library, libtorch_cpu.so and a directory of 13 libraries alike."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
           "XDG_CACHE_HOME": str(tmp_path), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    out = subprocess.run([sys.executable, "-c", _GC, str(reference())], capture_output=True,
                         text=True, env=env, timeout=120, check=True).stdout.split()
    assert out[0] == "True"  # restored for a caller that stays
    assert int(out[1]) < 20_000, out


_VANISHED = r"""
import io, sys
from contextlib import redirect_stdout
from opdoctor import cachefile

def walk():
    raise FileNotFoundError(2, "No such file or directory", "opdoctor/gone.py")

cachefile._walk = walk  # a source file removed while the package is listed (an upgrade)
from opdoctor.cli import main
with redirect_stdout(io.StringIO()) as out:
    rc = main(["check", "--static", "-f", "json", sys.argv[1]])
print(rc, len(out.getvalue()) > 100)
"""


def test_check_runs_without_its_caches_when_the_sources_cannot_be_listed(
        tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
           "XDG_CACHE_HOME": str(tmp_path), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    p = subprocess.run([sys.executable, "-c", _VANISHED, str(reference())], capture_output=True,
                       text=True, env=env, timeout=120, check=False)
    assert p.stdout.split()[1:] == ["True"], (p.stdout, p.stderr)
    assert not list((tmp_path / "opdoctor").glob("regex-check-*")) if (
        tmp_path / "opdoctor").exists() else True


def test_exit_after_a_check_still_cleans_up_and_writes_everything(tmp_path: Path) -> None:
    """cli.main ends the process without the interpreter's teardown (os._exit after the exit
    handlers) and runs the check without the cyclic collector: a wheel's unpacked copy must
    still be removed, and ``-o FILE`` must hold the whole report."""
    from tests.conftest import FIX

    wheel = FIX / "wheels" / "good" / "myop-0.1.0-cp311-cp311-linux_x86_64.whl"
    if not wheel.is_file():
        pytest.skip(f"{wheel} not built")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "OPDOCTOR_CACHE_DIR": SCHEMA_CACHE}
    out = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "opdoctor", "check", "--static", "-f", "json", str(wheel)]
    shown = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120,
                           check=False)
    written = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True, env=env,
                             timeout=120, check=False)
    assert shown.returncode == written.returncode == 0, shown.stderr
    def same(text: str) -> Any:  # each run unpacks the wheel into its own temporary directory
        return _masked(json.loads(re.sub(r"opdoctor-wheel-[A-Za-z0-9_]+", "W", text)))

    assert same(out.read_text()) == same(shown.stdout)
    assert list(tmp.iterdir()) == []  # the unpacked wheel is gone


def test_an_embedding_programs_next_command_reads_the_package_afresh(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cli.main(argv) returns to a caller that stays: its next command must see the package as
    it is now. The import chain is memoised on the package's name and path, the bindings of a
    module on its path; both are per-command caches, emptied when the command returns."""
    import shutil

    from opdoctor.cli import main
    from opdoctor.facts import pyast
    from tests.conftest import fixture

    pkg = tmp_path / "myop"
    shutil.copytree(fixture("python/noimport/myop"), pkg)

    def chain() -> tuple[list[str], list[str]]:
        assert main(["check", "--static", "-f", "json", str(pkg)]) in (0, 1)
        report = json.loads(capsys.readouterr().out)["reports"][0]
        return (sorted(f["code"] for f in report["findings"] if f["code"].startswith("OD5")),
                [link["kind"] for link in report["sections"]["import-chain"]["links"]])

    assert chain() == (["OD505"], ["submodule"])  # its __init__ never loads libmyop.so
    assert not pyast._trees  # the command's module trees went with it
    (pkg / "__init__.py").write_text(
        "import os\n\nimport torch\n\n"
        "torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libmyop.so'))\n")
    assert chain() == ([], ["load_library"])


_TOML_CODE = r'''
import sys
from opdoctor.cli.settings import read_config
print(read_config(sys.argv[1]), "tomllib" in sys.modules)
'''


def test_a_pyproject_that_never_names_opdoctor_is_not_parsed(tmp_path: Path) -> None:
    """A project's pyproject.toml without the word has no [tool.opdoctor] table: it is read
    but not parsed (no tomllib import, ~5 ms of a first check). One that names opdoctor in any
    form of the table (header, dotted key, inline table) is parsed and its table used; an
    opdoctor.toml is always parsed; invalid UTF-8 is one ConfigError line."""
    def read(text: str | bytes, name: str = "pyproject.toml") -> str:
        d = tmp_path / str(abs(hash((text, name))))
        d.mkdir()
        path = d / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin",
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
        p = subprocess.run([sys.executable, "-c", _TOML_CODE, str(path)], env=env,
                           capture_output=True, text=True, timeout=60, check=False)
        return (p.stdout + p.stderr).strip().splitlines()[-1]

    assert read('[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n') == "None False"
    assert read("[project\nname = \n") == "None False"  # nothing of ours in it to report
    assert read('[tool.opdoctor]\ntimeout = 7\n') == "{'timeout': 7} True"
    assert read('[tool]\nopdoctor = { timeout = 8 }\n') == "{'timeout': 8} True"
    assert read('tool.opdoctor.timeout = 9\n') == "{'timeout': 9} True"
    assert read('[tool."opdoctor"]\ntimeout = 6\n') == "{'timeout': 6} True"
    # the word elsewhere (a dependency, a script's name): read line by line (cli/tomlscan.py),
    # no table there, not parsed; a form that reading does not follow is parsed
    assert read('[project.scripts]\nopdoctor = "opdoctor.cli:main"\n') == "None False"
    assert read('[project]\ndependencies = [\n  "opdoctor>=0.1",\n]\n') == "None False"
    assert read('x = """\nopdoctor\n"""\n') == "None True"
    assert "invalid TOML" in read("[project\nname = 'opdoctor'\n")
    assert read('timeout = 5\n', "opdoctor.toml") == "{'timeout': 5} True"
    assert "invalid TOML: not UTF-8" in read(b'[tool.opdoctor]\ntimeout = "\xff"\n')


def test_the_table_scan_never_misses_a_table_tomllib_finds() -> None:
    """cli/tomlscan.py may answer "no [tool.opdoctor] table" only where tomllib agrees: over
    generated documents (headers, dotted and quoted keys, inline tables, arrays spanning lines,
    comments and strings that mention the table, escapes), every one whose parsed form has
    tool.opdoctor gets True; and opdoctor's own pyproject.toml (which names opdoctor only as
    the project, a script and package data) gets False."""
    import random

    import tomllib

    from opdoctor.cli.tomlscan import may_have_opdoctor_table

    assert not may_have_opdoctor_table((ROOT / "pyproject.toml").read_text())
    keys = ["tool", "opdoctor", '"opdoctor"', "'opdoctor'", "ruff", "x", "project", "scripts",
            '"op\\u0064octor"', "tool.opdoctor", "opdoctor.timeout", "a-b"]
    values = ["1", '"opdoctor"', '"[tool.opdoctor]"', "'x # y'", "[1, 2]", "[\n  [1],\n  2,\n]",
              '["opdoctor",\n "b"]', "{opdoctor = 1}", "{a = {b = 2}}", "true", '"a\\"b"',
              "[\n  {opdoctor = 1},\n]"]
    rng = random.Random(21)
    tables_seen = checked = 0
    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.3:
                path = ".".join(rng.choice(keys) for _ in range(rng.randint(1, 3)))
                lines.append(("[[{}]]" if rng.random() < 0.15 else "[{}]").format(path))
            elif r < 0.4:
                lines.append("# " + rng.choice(keys + values))
            else:
                path = ".".join(rng.choice(keys) for _ in range(rng.randint(1, 2)))
                lines.append(f"{path} = {rng.choice(values)}")
        doc = "\n".join(lines) + "\n"
        try:
            data = tomllib.loads(doc)
        except tomllib.TOMLDecodeError:
            continue
        checked += 1
        tool = data.get("tool")
        if isinstance(tool, dict) and "opdoctor" in tool:
            tables_seen += 1
            assert may_have_opdoctor_table(doc), doc
    assert checked > 300 and tables_seen > 30, (checked, tables_seen)
