"""Where this process sits in the job: rank, world size, local rank and rendezvous point, read
from the launcher's environment — never guessed from the network.

Launchers, in the order they are looked for:

* ``torchrun`` (and anything else that sets them): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``MASTER_ADDR``, ``MASTER_PORT``; under torchrun the agent hosts the store
  (``TORCHELASTIC_USE_AGENT_STORE=True``), so every rank connects to it as a client;
* ``srun`` (a Slurm job step): ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_LOCALID``;
  the rendezvous host is ``MASTER_ADDR`` or else the first node of ``SLURM_STEP_NODELIST``, the
  port ``MASTER_PORT`` or else ``29500 + SLURM_JOB_ID % 1000``. A batch script outside ``srun``
  also has ``SLURM_PROCID`` but no step: that is a world of one;
* Open MPI's ``mpirun``: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``,
  ``OMPI_COMM_WORLD_LOCAL_RANK``; MPICH / Intel MPI (Hydra): ``PMI_RANK``, ``PMI_SIZE``,
  ``MPI_LOCALRANKID``. MPI does not publish a rendezvous address: pass ``MASTER_ADDR`` and
  ``MASTER_PORT`` (``mpirun -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 …``).

None of them: a world of one. The node identity (which ranks share one check) is
``--node-id``, else ``$OPDOCTOR_FLEET_NODE``, else the host name.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PORT = 29500


class LauncherError(ValueError):
    """The launcher's environment is incomplete or inconsistent (a usage error)."""


@dataclass(frozen=True)
class World:
    """This process's place in the job."""

    rank: int
    size: int
    local_rank: int | None  # None when the launcher does not say
    launcher: str  # "torchrun", "srun", "mpirun (Open MPI)", "mpirun (PMI)", "none"
    master_addr: str
    master_port: int
    agent_store: bool  # torchrun's agent hosts the store: rank 0 is a client too
    node: str  # the node identity used to share one check between local ranks
    hostname: str
    note: str = ""  # said in the report (e.g. why this is a world of one)

    @property
    def alone(self) -> bool:
        """True for a world of one (no launcher): nothing to gather."""
        return self.size == 1


def _int(env: Mapping[str, str], name: str) -> int:
    value = env.get(name, "")
    try:
        return int(value)
    except ValueError:
        raise LauncherError(f"{name}={value!r} is not an integer") from None


def _opt_int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        if env.get(name, "") != "":
            return _int(env, name)
    return None


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list: ``gpu[07-09,12],cpu1`` → ``gpu07``."""
    m = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if not m:
        return ""
    prefix, ranges = m.group(1), m.group(2)
    if not ranges:
        return prefix
    first = ranges.split(",")[0].split("-")[0]
    return prefix + first


def _rendezvous(env: Mapping[str, str], launcher: str, fallback_host: str = "",
                fallback_port: int | None = None) -> tuple[str, int]:
    addr = env.get("MASTER_ADDR") or fallback_host
    if not addr:
        # Hydra (MPICH, Intel MPI) takes -genv NAME VALUE; Open MPI's -x is "unrecognized
        # argument" there (survey 16's P7).
        how = "mpirun -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 …" \
            if launcher == "mpirun (Open MPI)" else \
            "mpiexec -genv MASTER_ADDR $(hostname) -genv MASTER_PORT 29500 …" \
            if launcher == "mpirun (PMI)" else "export MASTER_ADDR=<rank 0's host> " \
            "MASTER_PORT=29500 in every rank's environment"
        raise LauncherError(f"{launcher}: set MASTER_ADDR and MASTER_PORT to the rendezvous "
                            f"host and a free port ({how})")
    if env.get("MASTER_PORT"):
        port = _int(env, "MASTER_PORT")
    elif fallback_port is not None:
        port = fallback_port
    else:
        raise LauncherError(f"{launcher}: MASTER_ADDR is set but MASTER_PORT is not")
    if not 0 < port < 65536:
        raise LauncherError(f"MASTER_PORT={port} is not a TCP port")
    return addr, port


def detect_world(env: Mapping[str, str], node_id: str | None = None) -> World:
    """The world this process belongs to, from ``env`` (the process environment).

    Raises :class:`LauncherError` when a launcher is recognised but its variables are
    inconsistent (rank outside the world, no rendezvous address under MPI).
    """
    hostname = socket.gethostname()
    node = node_id or env.get("OPDOCTOR_FLEET_NODE") or hostname
    agent = False
    note = ""
    if env.get("WORLD_SIZE", "") != "":
        size = _int(env, "WORLD_SIZE")
        rank = _int(env, "RANK") if env.get("RANK", "") != "" else 0
        local = _opt_int(env, "LOCAL_RANK")
        launcher = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "RANK/WORLD_SIZE"
        agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
        if size > 1 and env.get("RANK", "") == "":
            raise LauncherError("WORLD_SIZE is set but RANK is not")
        addr, port = _rendezvous(env, launcher) if size > 1 else ("", 0)
    elif env.get("SLURM_STEP_NUM_TASKS", "") != "" and env.get("SLURM_PROCID", "") != "":
        size = _int(env, "SLURM_STEP_NUM_TASKS")
        rank = _int(env, "SLURM_PROCID")
        local = _opt_int(env, "SLURM_LOCALID")
        launcher = "srun"
        job = _opt_int(env, "SLURM_JOB_ID", "SLURM_JOBID") or 0
        addr, port = _rendezvous(env, launcher,
                                 first_host(env.get("SLURM_STEP_NODELIST", "")
                                            or env.get("SLURM_JOB_NODELIST", "")),
                                 DEFAULT_PORT + job % 1000) if size > 1 else ("", 0)
    elif env.get("OMPI_COMM_WORLD_SIZE", "") != "":
        size = _int(env, "OMPI_COMM_WORLD_SIZE")
        rank = _int(env, "OMPI_COMM_WORLD_RANK")
        local = _opt_int(env, "OMPI_COMM_WORLD_LOCAL_RANK")
        launcher = "mpirun (Open MPI)"
        addr, port = _rendezvous(env, launcher) if size > 1 else ("", 0)
    elif env.get("PMI_SIZE", "") != "":
        size = _int(env, "PMI_SIZE")
        rank = _int(env, "PMI_RANK")
        local = _opt_int(env, "MPI_LOCALRANKID", "PMI_LOCAL_RANK")
        launcher = "mpirun (PMI)"
        addr, port = _rendezvous(env, launcher) if size > 1 else ("", 0)
    else:
        size, rank, local, launcher, addr, port = 1, 0, None, "none", "", 0
        note = "no launcher environment (WORLD_SIZE, SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE " \
               "and PMI_SIZE unset): running as a world of one"
        if env.get("SLURM_PROCID", "") != "":
            note += " (a Slurm allocation outside an srun step: start it with srun)"
    if size < 1:
        raise LauncherError(f"{launcher}: world size {size} is not positive")
    if not 0 <= rank < size:
        raise LauncherError(f"{launcher}: rank {rank} is outside a world of {size}")
    if local is not None and local < 0:
        raise LauncherError(f"{launcher}: local rank {local} is negative")
    if size == 1 and not note:
        note = f"{launcher}: a world of one"
    return World(rank, size, local, launcher, addr, port, agent, node, hostname, note)
