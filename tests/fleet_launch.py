"""Simulated nodes for the fleet tests: one process per rank, each with its own environment and
working directory, joined through torch.distributed on 127.0.0.1.

torch is imported once, here; then every rank is a ``fork()``ed child that sets its own
environment (``RANK``, ``WORLD_SIZE``, ``MASTER_PORT``, ``OPDOCTOR_FLEET_NODE``,
``LD_LIBRARY_PATH`` …), changes to its own directory and runs ``opdoctor fleet`` exactly as
``python -m opdoctor fleet`` would. Why fork: CI has 2 cores and ``import torch`` costs
seconds of CPU per process; a test of 32 ranks would otherwise spend a minute importing torch
and measure nothing about the fleet. Each child is still its own process with its own
rendezvous connection, gloo endpoint and probe children; ``test_fleet.py`` also runs real
separate interpreters (``torchrun``, and a rank that waits alone).

Usage: ``python -m tests.fleet_launch SPEC.json``, or ``--serve`` to read one SPEC per line
on stdin and answer each with one line (what the tests use: one torch import for all), SPEC::

    {"port": 29500, "world_size": 2, "timeout": 60, "dir": "/tmp/x",
     "ranks": [{"rank": 0, "env": {...}, "cwd": "...", "args": ["fleet", ...]}, ...]}

prints ``{"ranks": [{"rank", "code", "out", "err", "seconds"}]}`` as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

# Launcher variables of the surrounding environment never leak into a simulated rank.
LAUNCH_PREFIXES = ("SLURM_", "OMPI_", "PMI_", "TORCHELASTIC_")
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "MASTER_ADDR", "MASTER_PORT", "MPI_LOCALRANKID", "OPDOCTOR_FLEET_NODE",
               "LD_LIBRARY_PATH")


def rank_env(base: dict[str, str], port: int, world: int, rank: int,
             extra: dict[str, str]) -> dict[str, str]:
    """The environment of one simulated rank."""
    env = {k: v for k, v in base.items()
           if k not in LAUNCH_VARS and not k.startswith(LAUNCH_PREFIXES)}
    env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "WORLD_SIZE": str(world), "RANK": str(rank), "NO_COLOR": "1"})
    env.update(extra)
    return env


def _child(spec: dict[str, Any], r: dict[str, Any], out: str, err: str) -> None:
    from opdoctor.cli import main

    os.environ.clear()
    os.environ.update(rank_env(dict(BASE), spec["port"], spec["world_size"], r["rank"],
                               r.get("env", {})))
    os.chdir(r.get("cwd") or os.getcwd())
    for fd, path in ((1, out), (2, err)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    code = 4
    try:
        code = main(list(r["args"]))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


BASE: dict[str, str] = {}


def _warm() -> None:
    """Import, once and before fork, what every rank imports: torch.distributed, the CLI and
    its lazily imported parts (typer's parser, the check registry, the fleet modules)."""
    import contextlib
    import io

    # As opdoctor fleet does before it imports torch: c10d's C++ log stays quiet (the fleet
    # reports rendezvous problems itself, in one line).
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    import torch.distributed  # noqa: F401

    import opdoctor.cli.fleet
    import opdoctor.fleet.gather
    import opdoctor.fleet.render
    import opdoctor.pipeline  # noqa: F401
    from opdoctor.checks import load_registry
    from opdoctor.cli import main

    load_registry()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["fleet", "--help"])


def launch(spec: dict[str, Any]) -> dict[str, Any]:
    """Fork one child per rank, wait for all (killing any left at the timeout)."""
    _warm()  # a no-op after the first time

    BASE.update(os.environ)
    children: dict[int, tuple[dict[str, Any], str, str, float]] = {}
    for r in spec["ranks"]:
        out = os.path.join(spec["dir"], f"rank{r['rank']}.out")
        err = os.path.join(spec["dir"], f"rank{r['rank']}.err")
        pid = os.fork()
        if pid == 0:
            _child(spec, r, out, err)
        children[pid] = (r, out, err, time.monotonic())
    deadline = time.monotonic() + float(spec.get("timeout", 60))
    results = []
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            if time.monotonic() > deadline:
                for left in list(children):
                    os.kill(left, signal.SIGKILL)
                    os.waitpid(left, 0)
                    r, out, err, t0 = children.pop(left)
                    results.append(_result(r, None, out, err, t0))
                break
            time.sleep(0.02)
            continue
        r, out, err, t0 = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        results.append(_result(r, code, out, err, t0))
    return {"ranks": sorted(results, key=lambda x: x["rank"])}


def _result(r: dict[str, Any], code: int | None, out: str, err: str, t0: float
            ) -> dict[str, Any]:
    def read(path: str) -> str:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    return {"rank": r["rank"], "code": code, "out": read(out), "err": read(err),
            "seconds": round(time.monotonic() - t0, 3)}


def serve() -> None:
    """Answer one JSON spec per stdin line with one JSON result line (torch imported once for
    all the tests of a module)."""
    _warm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(launch(json.loads(line))), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve()
    else:
        with open(sys.argv[1], encoding="utf-8") as fh:
            SPEC = json.load(fh)
        print(json.dumps(launch(SPEC)))
