"""opdoctor fleet: the check on every rank of a job, over torch.distributed on 127.0.0.1.

Nodes are simulated by processes with their own environment and working directory, each its
own node (``OPDOCTOR_FLEET_NODE``), joined through torch.distributed (``RANK``/``WORLD_SIZE``
and a free ``MASTER_PORT`` on 127.0.0.1, nothing else is ever contacted). The libraries are the
loader and probe fixtures; every fault is real: the dependency really is not on one rank's
search path, one rank really loads other bytes, one rank's probe really aborts.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from opdoctor.fleet.env import LauncherError, detect_world, first_host
from opdoctor.fleet.group import Missing, ranks_text, summarise
from tests.conftest import ROOT, fixture, reference
from tests.fleet_launch import rank_env
from tests.helpers import cli

SARIF_SCHEMA = json.loads((ROOT / "tests/resources/sarif-schema-2.1.0.json").read_text())
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A sha256 cache of the tests' own (never the developer's)."""
    return str(tmp_path_factory.mktemp("fleet-cache"))


class Launcher:
    """tests/fleet_launch.py --serve: starts the simulated ranks of each test."""

    def __init__(self, cache: str) -> None:
        env = dict(os.environ, OPDOCTOR_CACHE_DIR=cache,
                   PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fleet_launch", "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=str(ROOT))
        assert self.proc.stdout is not None and self.proc.stdin is not None
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}

    def __call__(self, tmp: Path, world: int, ranks: list[dict[str, Any]],
                 timeout: float = 90) -> list[dict[str, Any]]:
        """Run one simulated job; the results of its ranks."""
        spec = {"port": free_port(), "world_size": world, "timeout": timeout,
                "dir": str(tmp), "ranks": ranks}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the fleet launcher died"
        results: list[dict[str, Any]] = json.loads(line)["ranks"]
        return results

    def close(self) -> None:
        """Stop the launcher."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def launch(cache: str) -> Iterator[Launcher]:
    """The launcher of simulated ranks (torch imported once for the module)."""
    launcher = Launcher(cache)
    yield launcher
    launcher.close()


def node(rank: int, args: list[str], cwd: Path | None = None, **env: str) -> dict[str, Any]:
    """One simulated node: its rank, its own node identity, environment and directory."""
    # The plain-C loader fixtures register no operator (OD116, a warning on a named library);
    # these tests are about the fleet's mechanics, so that warning is ignored here.
    return {"rank": rank, "args": ["fleet", "--ignore", "OD116", *args],
            "cwd": str(cwd) if cwd else None,
            "env": {"OPDOCTOR_FLEET_NODE": f"node-{'abcdefgh'[rank % 8]}{rank}", **env}}


def two_dirs(tmp: Path, lib_a: Path, lib_b: Path) -> tuple[Path, Path]:
    """Two "nodes" that see ``libop.so`` at the same relative path, with other contents."""
    a, b = tmp / "node-a", tmp / "node-b"
    for d, lib in ((a, lib_a), (b, lib_b)):
        d.mkdir()
        shutil.copy(lib, d / "libop.so")
    return a, b


# --- launcher environments (no torch needed) -------------------------------------------------

def test_launcher_detection() -> None:
    w = detect_world({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "h0",
                      "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "x",
                      "TORCHELASTIC_USE_AGENT_STORE": "True"})
    assert (w.rank, w.size, w.local_rank, w.launcher, w.agent_store) == (3, 8, 1, "torchrun",
                                                                          True)
    w = detect_world({"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "16", "SLURM_LOCALID": "1",
                      "SLURM_STEP_NODELIST": "gpu[07-09,12],cpu1", "SLURM_JOB_ID": "4242"})
    assert (w.rank, w.size, w.local_rank, w.master_addr, w.master_port) == (5, 16, 1, "gpu07",
                                                                            29742)
    w = detect_world({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4",
                      "OMPI_COMM_WORLD_LOCAL_RANK": "0", "MASTER_ADDR": "10.0.0.1",
                      "MASTER_PORT": "1234"})
    assert (w.rank, w.size, w.local_rank, w.launcher) == (2, 4, 0, "mpirun (Open MPI)")
    w = detect_world({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1",
                      "MASTER_ADDR": "n0", "MASTER_PORT": "1234"}, node_id="forced")
    assert (w.rank, w.local_rank, w.node) == (1, 1, "forced")
    # A batch script of a Slurm allocation, outside srun: a world of one, and it says so.
    w = detect_world({"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "1"})
    assert w.alone and "outside an srun step" in w.note
    assert detect_world({}).alone
    assert detect_world({"OPDOCTOR_FLEET_NODE": "n7"}).node == "n7"
    assert first_host("node01") == "node01" and first_host("a[3-4]") == "a3"


@pytest.mark.parametrize(("env", "message"), [
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "outside"),
    ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "integer"),
    ({"WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "RANK is not"),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}, r"mpirun -x MASTER_ADDR"),
    # Hydra (MPICH): its own -genv, Open MPI's -x is "unrecognized argument" there
    ({"PMI_RANK": "0", "PMI_SIZE": "2"}, r"mpiexec -genv MASTER_ADDR \$\(hostname\) -genv"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "port"),
])
def test_launcher_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(LauncherError, match=message):
        detect_world(env)


def test_bad_launcher_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for k in rank_env({}, 0, 0, 0, {}):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    res = cli(capsys, "fleet", str(reference()))
    assert res.code == 3
    assert "MASTER_ADDR" in res.err and "Traceback" not in res.err


@pytest.mark.parametrize("args", [["-f", "xml"], ["--fail-on", "bogus"], ["--timeout", "-1"],
                                  ["--budget-scale", "0"]])
def test_a_bad_option_value_is_a_usage_error(args: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """As in `check`: one line, exit 3 — it was "internal error", exit 4 and a crash log on
    every rank (survey 16's P5)."""
    res = cli(capsys, "fleet", *args, str(reference()))
    assert res.code == 3 and res.err.startswith("Error: --") and "internal" not in res.err
    assert len(res.err.strip().splitlines()) == 1, res.err


def test_a_rank_shares_a_check_only_with_the_same_interpreter_and_files(
        tmp_path: Path) -> None:
    """Local ranks of one node reuse one check when nothing that shapes it differs. A local
    rank in another venv, or one that sees another file at the same path (a container of
    its own on the same host), was given local rank 0's result — "all agree", exit 0, and
    rank 0's interpreter in its record (survey 16's P2)."""
    from opdoctor.cli.fleet import share_key
    from opdoctor.facts import CheckOptions

    world = detect_world({"OPDOCTOR_FLEET_NODE": "n0"})
    lib = tmp_path / "libop.so"
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), lib)
    env = {"LD_LIBRARY_PATH": "/opt"}

    def key(options: CheckOptions | None = None, **more: str) -> str:
        return share_key(world, options or CheckOptions(), [str(lib)], {**env, **more}, False)

    assert key() == key()
    assert key(CheckOptions(python="/other/venv/bin/python")) != key()
    assert key(PYTHONHOME="/elsewhere") != key() and key(PYTHONUSERBASE="/u") != key()
    before = key()
    lib.write_bytes(lib.read_bytes() + b"\0another build\0")  # the same path, other file
    assert key() != before


# --- grouping (rank 0's arithmetic) ------------------------------------------------------

def _record(rank: int, sha: str = "aa", verdict: str = "clean", ld: str | None = None,
            checked_by: int | None = None) -> dict[str, Any]:
    v = {"state": verdict, "cause": 0 if verdict == "clean" else 2,
         "codes": [] if verdict == "clean" else ["OD201"], "summary": verdict,
         "fails": verdict != "clean", "internal": False}
    own = checked_by is None or checked_by == rank
    return {"rank": rank, "local_rank": 0, "node": f"n{rank}", "hostname": f"h{rank}",
            "pid": 1, "checked_by": rank if checked_by is None else checked_by,
            "env": {"LD_LIBRARY_PATH": ld, "CUDA_VISIBLE_DEVICES": str(rank % 8)},
            "host": {"python": "3.11.7", "torch": "2.13.0+cpu (CPU)"} if own else None,
            "targets": [{"target": "lib.so", "path": "/x/lib.so", "size": 10, "sha256": sha,
                         "deps": [["libdep.so", "/d/libdep.so", "bb"]], "verdict": v}]
            if own else None, "reports": []}


def test_groups_and_differences() -> None:
    recs = [_record(r) for r in range(7)] + [_record(7, sha="cc", ld="/opt")]
    s = summarise(recs, 8, [], fail_on_difference=False)
    assert [g.ranks for g in s.groups] == [list(range(7)), [7]]
    texts = [d.text() for d in s.differences]
    assert "file: 10 bytes, sha256 aa on ranks 0-6 vs 10 bytes, sha256 cc on rank 7" in texts
    assert "env LD_LIBRARY_PATH: (unset) on ranks 0-6 vs /opt on rank 7" in texts
    # CUDA_VISIBLE_DEVICES differs per local rank by design: compared by meaning only.
    assert not any("CUDA_VISIBLE_DEVICES" in t for t in texts)
    assert s.exit_code == 1 and "differ in what matters: file" in s.reasons[0]


def test_ops_registered_otherwise_matter() -> None:
    """The same bytes can register otherwise: a library that dlopen()s its CUDA kernels'
    plugin registers [CPU] alone on a node without it (survey 16's P6). What the probe saw
    registered is compared, op by op."""
    recs = [_record(0), _record(1), _record(2)]
    for r, keys in zip(recs, ("CPU, CUDA", "CPU, CUDA", "CPU"), strict=True):
        r["targets"][0]["ops"] = {"myop2::scale": keys}
    recs[2]["targets"][0]["ops"]["myop2::extra"] = "CPU"
    s = summarise(recs, 3, [], fail_on_difference=False)
    texts = [d.text() for d in s.differences if d.matters]
    assert "op myop2::scale: registered [CPU, CUDA] on ranks 0-1 vs registered [CPU] on " \
        "rank 2" in texts, texts
    assert any(t.startswith("op myop2::extra: ") for t in texts)
    assert s.exit_code == 1 and "op myop2::scale" in s.reasons[0]


def test_a_differing_file_is_one_difference_not_one_per_dependency() -> None:
    """The target missing on rank 1: its dependencies were each a "✗ dep … (absent)" line
    (ten for the reference operator), burying the file's own line, and codes were repeated
    ("cause 2 (OD201, OD201)"). The dependencies of a file another rank does not have are
    the file's difference; a dependency missing from one tree of the same file is named as
    such; codes are listed once (survey 16's P9)."""
    recs = [_record(0), _record(1, verdict="findings")]
    t1 = recs[1]["targets"][0]
    t1.update(size=None, sha256=None, deps=[])
    t1["verdict"]["codes"] = ["OD201", "OD201"]
    s = summarise(recs, 2, [], fail_on_difference=False)
    keys = [d.key for d in s.differences]
    assert keys == ["verdict", "file"], keys
    assert s.differences[0].text() == "verdict: clean on rank 0 vs cause 2 (OD201) on rank 1"
    # The same file, one tree without a dependency (another one of it was not found there).
    recs = [_record(0), _record(1)]
    recs[1]["targets"][0]["deps"] = []
    (d,) = summarise(recs, 2, [], fail_on_difference=False).differences
    assert d.text() == "dep libdep.so: /d/libdep.so (sha256 bb) on rank 0 vs (not in its " \
        "dependency tree) on rank 1"


def test_a_rank_that_sees_no_gpu_where_the_others_do_matters() -> None:
    """CUDA_VISIBLE_DEVICES is compared by meaning: one device each is no difference; an empty
    one on a rank whose peers see devices is a job whose CUDA ops run nowhere there (survey
    16's O7: reported, and exit 0)."""
    recs = [_record(0), _record(1)]
    recs[1]["env"]["CUDA_VISIBLE_DEVICES"] = ""
    s = summarise(recs, 2, [], fail_on_difference=False)
    (d,) = s.differences
    assert d.matters and d.text() == "env CUDA_VISIBLE_DEVICES: 1 device on rank 0 vs " \
        "empty: no GPU visible on rank 1"
    assert s.exit_code == 1
    recs[1]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"  # two devices: a share, not a fault
    assert summarise(recs, 2, [], fail_on_difference=False).exit_code == 0


def test_exit_codes_informational_differences() -> None:
    recs = [_record(0), _record(1, ld="/opt")]
    assert summarise(recs, 2, [], fail_on_difference=False).exit_code == 0
    assert summarise(recs, 2, [], fail_on_difference=True).exit_code == 1
    s = summarise([_record(0)], 2, [Missing(1, "never joined within 3 s")], False)
    assert s.exit_code == 1 and "rank 1 never answered" in s.reasons


def test_the_headline_says_what_the_exit_code_says() -> None:
    """A fleet that differs only in what does not matter exits 0: its headline was "✗ 1 of 2
    ranks agree"; one group with a rank that never answered was "✗ 1 of 2 ranks agree" too,
    with nothing to disagree with (survey 16's O2)."""
    import io

    from opdoctor.fleet.render import render_text

    _, ctx = _four_ranks()

    def headline(s: Any) -> str:
        out = io.StringIO()
        render_text(s, ctx, out)
        return next(ln for ln in out.getvalue().splitlines() if ln[:2] in ("✓ ", "✗ ", "! "))

    s = summarise([_record(0), _record(1, ld="/opt")], 2, [], fail_on_difference=False)
    assert s.exit_code == 0 and headline(s) == "! all 2 ranks that answered agree in what " \
        "matters; 2 groups differ in what does not (below)"
    s = summarise([_record(0)], 2, [Missing(1, "never joined within 3 s")], False)
    assert headline(s) == "✗ 1 of 2 ranks answered; they agree"
    s = summarise([_record(0), _record(1, sha="cc")], 2, [], False)
    assert headline(s) == "✗ 1 of 2 ranks agree (group A); outliers: rank 1"


def test_shared_results_and_summary_size() -> None:
    # 64 ranks on 8 nodes, local rank 0 checks, the others reuse: one group, 8 checks.
    recs = [_record(r, checked_by=r - r % 8) for r in range(64)]
    s = summarise(recs, 64, [], fail_on_difference=False)
    assert len(s.groups) == 1 and s.groups[0].ranks == list(range(64)) and s.exit_code == 0
    assert ranks_text([0, 1, 2, 5, 7, 8]) == "ranks 0-2, 5, 7-8"
    recs = [_record(0), _record(1, checked_by=5)]  # its node's checking rank never answered
    s = summarise(recs, 2, [], fail_on_difference=False)
    assert s.exit_code == 1 and "rank 5" in s.records[1]["unknown"]


def _four_ranks() -> tuple[Any, Any]:
    """A summary of four ranks (one with a finding, one reusing its check, one missing) and
    the FleetContext to render it with."""
    from opdoctor.checks import load_registry
    from opdoctor.fleet.render import FleetContext
    from opdoctor.model import Severity

    finding = {"code": "OD201", "title": "", "severity": "error", "cause": 2,
               "subject": "libdep.so", "message": "libdep.so is not found", "evidence": [],
               "fix": "set it"}
    recs = [_record(0), _record(1, verdict="findings", ld="/opt"), _record(2, checked_by=1)]
    recs[1]["reports"] = [{"target": {"path": "/x/lib.so", "size": 10, "kind": "ELF"},
                           "findings": [finding], "checks": [
                               {"name": "dependencies", "causes": [2], "status": "ran",
                                "seconds": 0.1, "reason": ""}], "sections": {}}]
    s = summarise(recs, 4, [Missing(3, "never joined within 3 s", "h3")], False)
    world = detect_world({"RANK": "0", "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1",
                          "MASTER_PORT": "29500"})
    return s, FleetContext(load_registry().catalog, Severity.ERROR, world)


def test_every_format_renders(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from opdoctor.fleet.render import render
    from opdoctor.report import Format

    s, ctx = _four_ranks()
    out = {}
    for form in Format:
        buf = io.StringIO()
        render(form, s, ctx, buf)
        out[form] = buf.getvalue()
    assert "outliers: ranks 1-2" in out[Format.TEXT] and "rank 3 (host h3)" in out[Format.TEXT]
    doc = json.loads(out[Format.JSON])
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3] and not doc["ranks"][3]["answered"]
    log = json.loads(out[Format.SARIF])
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    (res,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "OD201"]
    assert res["properties"]["ranks"] == [1, 2]  # rank 2 reuses rank 1's check
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"fleet-difference",
                                                                 "fleet-no-answer"}
    diff = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "fleet-difference")
    assert diff["properties"]["ranks"] == [0, 1, 2] and \
        [v["ranks"] for v in diff["properties"]["values"]] == [[1, 2], [0]], diff["properties"]
    suites = [x.get("name") for x in ET.fromstring(out[Format.JUNIT])]
    assert "opdoctor ranks 1-2 (node n1) /x/lib.so" in suites
    assert "::error file=" in out[Format.GITHUB] and "ranks 1-2 (node n1)%3A OD201" in \
        out[Format.GITHUB]
    assert "rank 3: never joined" in out[Format.GITHUB]



def test_text_wraps_like_the_report_at_a_fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """At a fixed width the fleet text is wrapped at spaces with a hanging indent (the report's
    Printer); unwrapped, the same words in the same order."""
    import dataclasses
    import io

    from rich.cells import cell_len

    from opdoctor.fleet.render import render_text

    monkeypatch.delenv("COLUMNS", raising=False)
    s, ctx = _four_ranks()
    flat, narrow = io.StringIO(), io.StringIO()
    render_text(s, ctx, flat)  # a StringIO is no terminal: not wrapped
    render_text(s, dataclasses.replace(ctx, width=48), narrow)
    wide = flat.getvalue().splitlines()
    lines = narrow.getvalue().splitlines()
    assert max(cell_len(x) for x in wide) > 48  # there is something to wrap
    assert max(cell_len(x) for x in lines) <= 48
    assert narrow.getvalue().split() == flat.getvalue().split()  # never inside a word
    # The group line "  group A — …" continues under its verdicts' column (6); a difference
    # "  ✗ …" under its text (4).
    i = next(n for n, x in enumerate(lines) if x.startswith("  group B"))
    assert lines[i + 1].startswith(" " * 6) and not lines[i + 1].startswith(" " * 7)
    diffs = [n for n, x in enumerate(lines) if x.startswith("  ✗ ") and n > i]
    assert any(lines[n + 1].startswith("    ") and lines[n + 1][4] != " " for n in diffs)

# --- a world of one ----------------------------------------------------------------------

@pytest.mark.probe
def test_world_of_one(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                      cache: str, tmp_path: Path) -> None:
    for k in [*rank_env({}, 0, 0, 0, {}), "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
              "SLURM_STEP_NUM_TASKS", "SLURM_PROCID"]:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OPDOCTOR_CACHE_DIR", cache)
    lib = fixture("loader/depdir/libmyop_dep.so")
    out = tmp_path / "fleet.json"
    res = cli(capsys, "fleet", "--ignore", "OD116", "--also-write", f"json={out}", str(lib))
    assert res.code == 0, res.out + res.err
    assert "world of one" in res.out and "✓ clean" in res.out
    doc = json.loads(out.read_text())  # the same run's report, as JSON
    assert doc["world"]["size"] == 1 and doc["world"]["launcher"] == "none"
    (rank,) = doc["ranks"]
    t = rank["targets"][0]
    assert t["sha256"] == __import__("hashlib").sha256(lib.read_bytes()).hexdigest()
    assert t["size"] == lib.stat().st_size and t["verdict"]["state"] == "clean"
    assert rank["reports"][0]["sections"]["probe"]["outcome"] == "loaded"
    assert set(rank["env"]) >= {"LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_VISIBLE_DEVICES",
                                "TORCH_CUDA_ARCH_LIST"}
    assert {"python", "torch", "CUDA runtime", "CUDA driver", "GPUs"} <= set(rank["host"])


# --- simulated nodes ---------------------------------------------------------------------

@pytest.mark.probe
def test_identical_ranks_are_clean(tmp_path: Path, launch: Launcher) -> None:
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    res = launch(tmp_path, 2, [node(0, [lib]), node(1, [lib])])
    assert [r["code"] for r in res] == [0, 0], res
    out = res[0]["out"]
    assert "✓ all 2 ranks agree" in out and "2 checks" in out and "differences" not in out
    assert res[1]["out"] == ""  # only rank 0 reports


@pytest.mark.probe
def test_rank_missing_a_dependency(tmp_path: Path, launch: Launcher) -> None:
    lib = str(fixture("loader/uses_dep.so"))
    depdir = str(fixture("loader/depdir"))
    res = launch(tmp_path, 2, [node(0, ["-f", "sarif", lib], LD_LIBRARY_PATH=depdir),
                                      node(1, ["-f", "sarif", lib])])
    assert [r["code"] for r in res] == [1, 1], res
    log = json.loads(res[0]["out"])
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    od201 = [r for r in results if r["ruleId"] == "OD201"]
    assert len(od201) == 1 and od201[0]["properties"]["ranks"] == [1]
    assert od201[0]["locations"][0]["logicalLocations"][0]["name"] == "rank 1"
    assert od201[0]["properties"]["cause"] == 2
    # The probe confirms it in rank 1's real process; rank 0 loads it.
    assert "OD220" in {r["ruleId"] for r in results if r["properties"].get("ranks") == [1]}
    diff = {r["properties"]["key"]: r for r in results if r["ruleId"] == "fleet-difference"}
    assert "verdict" in diff and "dep libmyop_dep.so" in diff
    assert "not found on rank 1" in diff["dep libmyop_dep.so"]["message"]["text"]


@pytest.mark.probe
def test_rank_with_another_copy_of_the_library(tmp_path: Path, launch: Launcher) -> None:
    good = fixture("loader/depdir/libmyop_dep.so")
    stale = tmp_path / "stale.so"
    stale.write_bytes(good.read_bytes() + b"\0stale build\0")  # still loads, other bytes
    a, b = two_dirs(tmp_path, good, stale)
    res = launch(tmp_path, 2, [node(0, ["-f", "json", "libop.so"], a),
                                      node(1, ["-f", "json", "libop.so"], b)])
    assert [r["code"] for r in res] == [1, 1], res
    doc = json.loads(res[0]["out"])
    assert [g["ranks"] for g in doc["groups"]] == [[0], [1]]
    (diff,) = [d for d in doc["differences"] if d["key"] == "file"]
    assert diff["matters"] and [v["ranks"] for v in diff["values"]] == [[0], [1]]
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert ranks[1]["targets"][0]["sha256"] != ranks[0]["targets"][0]["sha256"]
    assert all(r["targets"][0]["verdict"]["state"] == "clean" for r in ranks.values())
    assert doc["reasons"] == ["the ranks differ in what matters: file"]


@pytest.mark.probe
def test_ranks_whose_package_registers_otherwise(tmp_path: Path, launch: Launcher) -> None:
    """One package, the same files on both nodes; on node 1 the package also registers a
    CUDA kernel for its op (as a library that loads its CUDA plugin where one is installed
    does). Torch itself says the two processes differ; every file, dependency and compared
    variable is equal, so the fleet said "all agree". The ops the probes saw differ."""
    pkg = tmp_path / "site" / "regpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import os\nimport torch\n"
        "_lib = torch.library.Library('regpkg', 'DEF')\n"
        "_lib.define('scale(Tensor x) -> Tensor')\n"
        "_lib.impl('scale', lambda x: x * 2, 'CPU')\n"
        "if os.environ.get('REGPKG_PLUGIN'):\n"
        "    _lib.impl('scale', lambda x: x * 2, 'CUDA')\n")
    site = str(tmp_path / "site")
    truth = "import regpkg, torch\n" \
        "print(torch._C._dispatch_has_kernel_for_dispatch_key('regpkg::scale', 'CUDA'))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    seen = [subprocess.run([sys.executable, "-c", truth], capture_output=True, text=True,
                           timeout=120, env={**env, "PYTHONPATH": site, **extra}
                           ).stdout.split() for extra in ({}, {"REGPKG_PLUGIN": "1"})]
    assert seen == [["False"], ["True"]], seen
    args = ["-f", "json", "--package", "regpkg", "--env", f"PYTHONPATH={site}"]
    res = launch(tmp_path, 2, [node(0, args, tmp_path),
                               node(1, args, tmp_path, REGPKG_PLUGIN="1")])
    doc = json.loads(res[0]["out"])
    assert [r["code"] for r in res] == [1, 1], [r["err"][-800:] for r in res]
    (diff,) = [d for d in doc["differences"] if d["key"] == "op regpkg::scale"]
    assert diff["matters"] and {v["value"]: v["ranks"] for v in diff["values"]} == {
        "registered [CPU]": [0], "registered [CPU, CUDA]": [1]}, diff
    assert "the ranks differ in what matters: op regpkg::scale" in doc["reasons"]


@pytest.mark.probe
def test_a_node_without_local_rank_0_does_not_wait_for_a_checker(tmp_path: Path,
                                                                   launch: Launcher) -> None:
    """Nodes named per rank (``OPDOCTOR_FLEET_NODE``, ``--node-id``) while the launcher counts
    local ranks per host: rank 1 is its node's only rank but local rank 1, so it waited for
    a checking rank of its node — min(60 s, a third of --gather-timeout) — that no rank would
    be, then checked anyway (survey 16's P1: 70 s instead of 6). Once every rank has joined
    and none checks for its node, it checks at once."""
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    args = ["-f", "json", "--gather-timeout", "90", lib]
    res = launch(tmp_path, 2, [node(0, args, LOCAL_RANK="0"), node(1, args, LOCAL_RANK="1")],
                 timeout=150)
    assert [r["code"] for r in res] == [0, 0], [r["err"][-800:] for r in res]
    doc = json.loads(res[0]["out"])
    assert {r["rank"]: r["checked_by"] for r in doc["ranks"]} == {0: 0, 1: 1}
    assert doc["timing"]["waiting"] < 15, doc["timing"]  # it was 30 s (90 / 3)


# Waits until rank N of a fleet on 127.0.0.1:PORT has said it is ready (exit 0). It connects
# only once rank 0 listens: c10d's client backs off for up to a minute after a refused try.
_WAIT_READY = """
import socket, sys, time
from datetime import timedelta
port, rank = int(sys.argv[1]), sys.argv[2]
deadline = time.monotonic() + 120
while True:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("rank 0 never listened")
        time.sleep(0.1)
print(f"rank 0 listens after {120 - deadline + time.monotonic():.1f} s", file=sys.stderr,
      flush=True)
import torch.distributed as dist
store = dist.PrefixStore("opdoctor-fleet///", dist.TCPStore(
    "127.0.0.1", port, None, False, timedelta(seconds=60)))
print(f"connected after {120 - deadline + time.monotonic():.1f} s", file=sys.stderr, flush=True)
while not store.check([f"ready/{rank}"]):
    if time.monotonic() > deadline:
        sys.exit(f"rank {rank} never said it was ready")
    time.sleep(0.1)
"""


@pytest.mark.probe
def test_a_rank_lost_after_its_check_is_still_reported(tmp_path: Path, cache: str) -> None:
    """Rank 1 finishes its check, says it is ready, and is killed (OOM, preemption) while rank
    0's check still runs. Its record is in the store already: rank 0 reports both ranks and
    exits with the fleet's code. With a gloo group over the roster, rank 0 waited 30 s for the
    lost peer and exited 2 with c10d's key path, every result lost (survey 16's P4)."""
    import signal

    port = free_port()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def rank(r: int, args: list[str]) -> subprocess.Popen[str]:
        env = rank_env(base, port, 2, r, {"OPDOCTOR_CACHE_DIR": cache, "PYTHONPATH": str(
            ROOT / "src"), "OPDOCTOR_FLEET_NODE": f"node{r}"})
        return subprocess.Popen([sys.executable, "-m", "opdoctor", "fleet", "--ignore",
                                 "OD116", "-f", "json", *args], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    # Rank 0's probe hangs in a library constructor until its --timeout: rank 1 is ready
    # long before the roster closes. (At 8 s, rank 0 had finished once by the time a loaded
    # machine's watcher saw rank 1 ready — 9.3 s —, before rank 1 could be lost: 25 s.)
    # A copy under another name: test_probe looks for any process left with ctor_hang.so in
    # its command line, and this rank runs for seconds beside it.
    slow = tmp_path / "slow_start.so"
    shutil.copy(fixture("probe/ctor_hang.so"), slow)
    zero = rank(0, ["--timeout", "25", str(slow)])
    one = rank(1, ["--static", str(fixture("loader/depdir/libmyop_dep.so"))])
    try:
        # A child reads the store (torch is not imported into the test worker: its objects
        # would slow every later test's garbage collection).
        # Its budget: 120 s for rank 0 to listen and rank 1 to be ready, plus up to a minute
        # of c10d's back-off on connecting, plus its own start (it timed out at 150 s once,
        # on a machine loaded with another test run: what it had reached is said then).
        try:
            seen = subprocess.run([sys.executable, "-c", _WAIT_READY, str(port), "1"],
                                  capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired as exc:
            got = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) \
                else exc.stderr or ""
            pytest.fail(f"the store watcher hung: {got[-800:]}")
        assert seen.returncode == 0 and zero.poll() is None, seen.stderr[-1500:]
        one.send_signal(signal.SIGKILL)
        out, err = zero.communicate(timeout=120)
    finally:
        for p in (zero, one):
            if p.poll() is None:
                p.kill()
            p.communicate()
    assert zero.returncode == 1, err[-1500:]
    doc = json.loads(out)
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert ranks[1]["targets"][0]["verdict"]["state"] == "clean"
    assert ranks[0]["targets"][0]["verdict"]["state"] != "clean" and doc["missing"] == []


@pytest.mark.probe
def test_rank_whose_probe_crashes(tmp_path: Path, launch: Launcher) -> None:
    a, b = two_dirs(tmp_path, fixture("loader/depdir/libmyop_dep.so"),
                    fixture("probe/ctor_abort.so"))
    res = launch(tmp_path, 2, [node(0, ["-f", "junit", "libop.so"], a),
                                      node(1, ["-f", "junit", "libop.so"], b)])
    assert [r["code"] for r in res] == [1, 1], res  # the job survives: both ranks report
    root = ET.fromstring(res[0]["out"])
    suites = {s.get("name"): s for s in root}
    (crashed,) = [s for n, s in suites.items() if n and "rank 1 (node" in n]
    failure = crashed.find("testcase[@name='probe']/failure")
    assert failure is not None and failure.get("type") == "OD124"
    assert "SIGABRT" in (failure.get("message") or "")
    clean = suites["opdoctor fleet"].find("testcase[@name='every rank is clean']/failure")
    assert clean is not None and "rank 1" in (clean.text or "") and "rank 0" not in (
        clean.text or "")


@pytest.mark.probe
def test_rank_that_never_joins(tmp_path: Path, launch: Launcher) -> None:
    # Rank 0 alone in a world of two: rank 1 is never started.
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    (res,) = launch(tmp_path, 2, [node(0, ["--gather-timeout", "2", lib])])
    assert res["code"] == 1, res
    assert "rank 1: never joined within 2 s" in res["out"]
    assert "1/2 ranks answered" in res["out"] and "Traceback" not in res["err"]


@pytest.mark.probe
def test_one_check_per_node_and_environment_when_local_rank_0_differs(
        tmp_path: Path, launch: Launcher) -> None:
    """Three local ranks of one node; local rank 0 has no LD_LIBRARY_PATH, the other two the
    same one. Each of the two used to check for itself (survey 16's P8: 4 checks for 2
    environments with 4 ranks); the first to claim that environment checks, the other
    reuses its result."""
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    args = ["fleet", "--static", "-f", "json", lib]
    ranks = [{"rank": r, "args": args, "env": {"OPDOCTOR_FLEET_NODE": "one-node",
                                              "LOCAL_RANK": str(r),
                                              **({"LD_LIBRARY_PATH": "/opt/x"} if r else {})}}
             for r in range(3)]
    res = launch(tmp_path, 3, ranks)
    assert [r["code"] for r in res] == [0, 0, 0], [r["err"][-800:] for r in res]
    doc = json.loads(res[0]["out"])
    by = {r["rank"]: r["checked_by"] for r in doc["ranks"]}
    assert by[0] == 0 and by[1] == by[2] and by[1] in (1, 2), by
    assert [g["ranks"] for g in doc["groups"]] == [[1, 2], [0]]


@pytest.mark.probe
def test_a_rank_whose_rank_0_never_starts_says_so_in_its_time(tmp_path: Path,
                                                             launch: Launcher) -> None:
    """Rank 1 alone: nothing listens at the rendezvous. It tried c10d's client at once, which
    backs off after a refused try — "cannot reach … within 5 s" came after 14 s (with a 10 s
    limit, 19–30 s; survey 16's O5). It waits for the port to listen, up to
    --gather-timeout, and says how long it tried."""
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    (res,) = launch(tmp_path, 2, [node(1, ["--gather-timeout", "3", lib])])
    assert res["code"] == 2, res
    line = res["err"].strip().splitlines()[-1]
    assert "rank 1 cannot reach the rendezvous store at 127.0.0.1:" in line, line
    tried = int(line.split("(tried for ", 1)[1].split(" s;", 1)[0])
    assert tried <= 4 and "nothing listens there" in line and "Traceback" not in res["err"]


def _torchrun(cache: str) -> tuple[list[str], dict[str, str]]:
    """torchrun for two local ranks on 127.0.0.1 (the command's start) and its environment:
    the tests' sha256 cache, opdoctor's sources, no rank variables of the test's own."""
    torchrun = VENV_BIN / "torchrun"
    if not torchrun.exists():
        pytest.skip(f"no torchrun next to {sys.executable}")
    env = rank_env(dict(os.environ), 0, 0, 0, {"OPDOCTOR_CACHE_DIR": cache, "PYTHONPATH":
                                               str(ROOT / "src")})
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k)
    return [str(torchrun), "--nnodes=1", "--nproc_per_node=2", "--master_addr=127.0.0.1",
            f"--master_port={free_port()}"], env


@pytest.mark.probe
def test_torchrun(tmp_path: Path, cache: str) -> None:
    cmd, env = _torchrun(cache)
    out = tmp_path / "fleet.json"
    p = subprocess.run([*cmd, "-m", "opdoctor", "fleet", "--ignore", "OD116", "-f", "json", "-o",
                        str(out),
                        str(fixture("loader/depdir/libmyop_dep.so"))],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["world"]["launcher"] == "torchrun" and doc["exit_code"] == 0
    ranks = {r["rank"]: r for r in doc["ranks"]}
    # One check per node: local rank 0 checks, local rank 1 reuses its result.
    assert ranks[0]["checked_by"] == 0 and ranks[1]["checked_by"] == 0
    assert ranks[1]["local_rank"] == 1 and ranks[1]["reports"] == []
    assert [g["ranks"] for g in doc["groups"]] == [[0, 1]]


@pytest.mark.probe
def test_a_rank_that_exits_under_torchrun_still_gets_a_report(tmp_path: Path,
                                                              cache: str) -> None:
    """torchrun's agent stops every rank when one exits non-zero (a node's image without
    torch exits 2; an OOM kill): rank 0 got SIGTERM while it waited and printed nothing — the
    user saw only ChildFailedError (survey 16's P3). Rank 0 now reports what there is: its
    own check, and the rank that never answered."""
    wrap = tmp_path / "rank.py"
    wrap.write_text("import os, runpy, sys\n"
                    "if os.environ['LOCAL_RANK'] == '1':\n"
                    "    import time; time.sleep(4)  # rank 0 is under way\n"
                    "    sys.exit(2)  # as a rank whose interpreter cannot run the fleet\n"
                    "sys.argv = ['opdoctor', *sys.argv[1:]]\n"
                    "runpy.run_module('opdoctor', run_name='__main__')\n")
    cmd, env = _torchrun(cache)
    out = tmp_path / "fleet.json"
    p = subprocess.run([*cmd, str(wrap), "fleet", "--ignore", "OD116", "-f", "json", "-o", str(out),
                        str(fixture("loader/depdir/libmyop_dep.so"))],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode != 0 and "ChildFailedError" in p.stderr, p.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["exit_code"] == 1 and [m["rank"] for m in doc["missing"]] == [1], doc["missing"]
    assert "the launcher stopped the job" in doc["missing"][0]["state"]


@pytest.mark.probe
def test_32_local_ranks_fingerprint_only(tmp_path: Path, launch: Launcher) -> None:
    lib = str(reference())
    ranks = [{"rank": r, "args": ["fleet", "--fingerprint-only", "-f", "json", lib],
              "env": {"OPDOCTOR_FLEET_NODE": "one-node", "LOCAL_RANK": str(r),
                      "CUDA_VISIBLE_DEVICES": str(r % 8)}} for r in range(32)]
    res = launch(tmp_path, 32, ranks, timeout=120)
    assert [r["code"] for r in res] == [0] * 32, [r["err"][-500:] for r in res if r["code"]]
    doc = json.loads(res[0]["out"])
    assert [g["ranks"] for g in doc["groups"]] == [list(range(32))]
    assert sum(1 for r in doc["ranks"] if r["checked_by"] == r["rank"]) == 1
    assert doc["ranks"][0]["targets"][0]["verdict"]["state"] == "not checked"
    assert doc["ranks"][0]["reports"] == []
    t = doc["timing"]
    print(f"32 ranks: rank 0 gather {t['gather']:.3f} s, grouping {t['group']:.3f} s "
          f"(waiting for the others: {t['waiting']:.3f} s)")
    assert t["gather"] + t["group"] < 5.0


def _slurm_port() -> tuple[int, int]:
    """(SLURM_JOB_ID, port): a job id whose derived port (29500 + id % 1000) is free now."""
    for job in range(4242, 5242):
        port = 29500 + job % 1000
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return job, port
    pytest.skip("no free port in 29500-30499")


@pytest.mark.probe
def test_srun_environment(tmp_path: Path, cache: str) -> None:
    # No Slurm here: two real interpreters get the variables srun gives a 2-task job step
    # (no RANK/WORLD_SIZE/MASTER_*): rank, size and local rank from SLURM_*, the store on the
    # first host of SLURM_STEP_NODELIST, its port derived from SLURM_JOB_ID.
    job, port = _slurm_port()
    base = rank_env(dict(os.environ), 0, 0, 0, {"OPDOCTOR_CACHE_DIR": cache,
                                                "PYTHONPATH": str(ROOT / "src")})
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        base.pop(k)
    lib = str(fixture("loader/depdir/libmyop_dep.so"))
    out = tmp_path / "fleet.json"
    procs = []
    for r in (0, 1):
        env = dict(base, SLURM_PROCID=str(r), SLURM_LOCALID="0", SLURM_STEP_NUM_TASKS="2",
                   SLURM_NTASKS="2", SLURM_JOB_ID=str(job), SLURM_STEP_NODELIST="127.0.0.1",
                   OPDOCTOR_FLEET_NODE=f"node{r}")
        args = [sys.executable, "-m", "opdoctor", "fleet", "--fingerprint-only", "-f", "json",
                *(["-o", str(out)] if r == 0 else []), lib]
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    res = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _o, e in res]
    doc = json.loads(out.read_text())
    assert doc["world"]["launcher"] == "srun" and doc["world"]["size"] == 2
    assert doc["world"]["rendezvous"] == f"127.0.0.1:{port}"
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1]
    assert all(r["checked_by"] == r["rank"] for r in doc["ranks"])  # two nodes: two checks


MPIRUN = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build")) / "probe/mpi/bin/mpirun"


@pytest.mark.probe
def test_mpirun(tmp_path: Path, cache: str) -> None:
    # A real MPICH (Hydra) mpirun from the mpich wheel (`make mpi`): it starts both ranks with
    # PMI_RANK/PMI_SIZE/MPI_LOCALRANKID; MPI publishes no rendezvous address, so MASTER_* are
    # passed with -genv as the README says.
    if not MPIRUN.exists():
        pytest.skip(f"no {MPIRUN} (make mpi)")
    env = rank_env(dict(os.environ), 0, 0, 0, {"OPDOCTOR_CACHE_DIR": cache,
                                               "PYTHONPATH": str(ROOT / "src")})
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k)
    out = tmp_path / "fleet.json"
    p = subprocess.run([str(MPIRUN), "-n", "2", "-hosts", "127.0.0.1",
                        "-genv", "MASTER_ADDR", "127.0.0.1", "-genv", "MASTER_PORT",
                        str(free_port()), sys.executable, "-m", "opdoctor", "fleet", "--ignore",
                        "OD116", "-f", "json", "-o", str(out),
                        str(fixture("loader/depdir/libmyop_dep.so"))],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["world"]["launcher"] == "mpirun (PMI)" and doc["exit_code"] == 0
    ranks = {r["rank"]: r for r in doc["ranks"]}
    # Both ranks on this host: local rank 0 (MPI_LOCALRANKID) checks, local rank 1 reuses it.
    assert ranks[0]["checked_by"] == 0 and ranks[1]["checked_by"] == 0
    assert ranks[1]["local_rank"] == 1 and ranks[1]["reports"] == []
