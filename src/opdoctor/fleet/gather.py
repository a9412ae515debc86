"""Collecting every rank's record on rank 0 through ``torch.distributed``'s c10d store.

One layer of torch.distributed, nothing home-made: the c10d ``TCPStore`` (rank 0 hosts it on
``MASTER_ADDR:MASTER_PORT``; under torchrun the agent's store is used). Each rank says it
joined and which rank checks its node, writes its record (``record/N``, JSON) and then says it
is ready. Rank 0 waits for all ``ready`` keys until its deadline (``--gather-timeout`` seconds
from its start), then closes the *roster*: the ranks that were ready. A rank that is not on it
is reported as "never joined" or "joined, but its check did not finish" — never waited on
forever. Rank 0 reads the roster's records from the store and writes the fleet's exit code
(``code``), which every other rank waits for, so every rank exits with the same code.

A record is in the store before its rank says it is ready, so a rank lost after that (OOM
killed or preempted while it waits for the slowest node) is still reported: with a gloo
process group over the roster, ``init_process_group`` waited 30 s for the lost peer and rank 0
exited 2 with c10d's key path, every rank's result thrown away (survey 16's P4).

``torch.distributed`` is imported only here, and only when the world has more than one rank.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import timedelta

from opdoctor.fleet.env import World
from opdoctor.fleet.group import Missing

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

POLL = 0.05
# How long rank 0 waits for the other ranks to read the exit code before it leaves (a rank
# lost after its record was written never reads it).
CODE_READ_WAIT = 5.0


class GatherError(RuntimeError):
    """The fleet cannot be assembled (rank 0 unreachable, this rank left out)."""


def _wait_listening(addr: str, port: int, deadline: float) -> None:
    """Return once ``addr:port`` accepts a TCP connection; TimeoutError at ``deadline``."""
    while True:
        try:
            socket.create_connection((addr, port), timeout=1.0).close()
            return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"nothing listens there: {exc.strerror or exc} (is rank 0 "
                                   "running, and MASTER_ADDR/MASTER_PORT its address?)"
                                   ) from None
        time.sleep(POLL * 2)


def _listen_socket(addr: str, port: int) -> socket.socket | None:
    """A socket bound to the rendezvous address itself (not every interface); None when the
    address is not one of this host's (TCPStore then binds its default)."""
    try:
        infos = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)
    except OSError:
        return None
    for family, stype, proto, _name, sockaddr in infos:
        sock = socket.socket(family, stype, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
            sock.listen(128)
            return sock
        except OSError as exc:
            sock.close()
            if exc.errno == 98:  # EADDRINUSE: say so rather than bind elsewhere
                raise GatherError(f"rank 0 cannot listen on {addr}:{port}: the port is in use "
                                  "(choose another MASTER_PORT)") from None
    return None


@dataclass
class Gathered:
    """What rank 0 collected."""

    records: list[dict[str, Any]]
    missing: list[Missing]
    seconds_waiting: float  # rank 0: from its own record ready to the roster closed
    seconds_gather: float  # process group set-up and gather_object


class Exchange:
    """One rank's side of the fleet exchange."""

    def __init__(self, world: World, timeout: float, start: float) -> None:
        self.world = world
        self.timeout = timeout  # --gather-timeout
        self.start = start  # time.monotonic() at this rank's start
        self.dist: Any = None
        self.store: Any = None
        self._sock: socket.socket | None = None  # rank 0's listening socket, until handed over
        self._followers = 0  # rank 0: the other ranks on the roster (they read the code)

    def connect(self, dist: Any) -> None:
        """Join the store (rank 0 starts it unless torchrun's agent hosts it)."""
        self.dist = dist
        w = self.world
        tmo = timedelta(seconds=max(self.timeout, 1.0))
        t0 = time.monotonic()
        try:
            if w.rank == 0 and not w.agent_store:
                self._sock = _listen_socket(w.master_addr, w.master_port)
                kw: dict[str, Any] = {}
                if self._sock is not None:
                    # TCPStore takes the descriptor over (and closes it): detach it.
                    kw["master_listen_fd"] = self._sock.detach()
                    self._sock = None
                store = dist.TCPStore(w.master_addr, w.master_port, None, True, tmo,
                                      wait_for_workers=False, **kw)
            else:
                # Connect only once the store listens: c10d's client backs off after a refused
                # try (delays of tens of seconds past its own timeout were seen), so a rank that
                # starts before rank 0's store waited far longer than --gather-timeout or
                # missed it (survey 16's O5).
                _wait_listening(w.master_addr, w.master_port, t0 + self.timeout)
                store = dist.TCPStore(w.master_addr, w.master_port, None, False, tmo)
        except GatherError:
            raise
        except Exception as exc:  # DistNetworkError, DistStoreError, RuntimeError
            who = "start the rendezvous store" if w.rank == 0 and not w.agent_store \
                else "reach the rendezvous store"
            raise GatherError(f"rank {w.rank} cannot {who} at {w.master_addr}:"
                              f"{w.master_port} (tried for {time.monotonic() - t0:.0f} s; "
                              f"--gather-timeout {self.timeout:g} s): "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                              ) from None
        run = os.environ.get("TORCHELASTIC_RUN_ID", "")
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "")
        self.store = dist.PrefixStore(f"opdoctor-fleet/{run}/{restart}/", store)

    def announce(self, info: dict[str, Any]) -> None:
        """Say this rank joined (rank 0 tells "never joined" from "did not finish")."""
        self.store.set(f"joined/{self.world.rank}", json.dumps(info))

    def publish_share(self, node: str, key: str, rank: int) -> None:
        """As the checking rank of ``node``: the key its followers compare with."""
        self.store.set(f"share/{node}", json.dumps({"key": key, "rank": rank}))

    def node_share(self, node: str, wait: float) -> dict[str, Any] | None:
        """The checking rank of ``node`` and its share key (None if none within ``wait``, or
        as soon as every rank has joined and none of them checks for ``node``)."""
        key = f"share/{node}"
        deadline = time.monotonic() + wait
        while True:
            if self.store.check([key]):
                value: dict[str, Any] = json.loads(self.store.get(key))
                return value
            if time.monotonic() >= deadline or self._no_checker(node):
                return None
            time.sleep(POLL)

    def claim_check(self, node: str, key: str) -> int:
        """For a rank whose environment differs from its node's checking rank's: the rank that
        checks for ``(node, key)`` — this one when it is the first to claim it. The other
        local ranks of that environment reuse its check: with a special local rank 0 every
        other local rank checked for itself (4 checks for 2 environments; survey 16's P8)."""
        won = self.store.compare_set(f"claim/{node}/{key}", "", str(self.world.rank))
        return int(won)

    def _no_checker(self, node: str) -> bool:
        """Whether every rank has joined and none of them is the checking rank of ``node``.
        A node named per rank (``--node-id``, ``OPDOCTOR_FLEET_NODE``) while the launcher
        counts local ranks per host has no local rank 0: its rank waited a minute for a
        checker no rank would be (survey 16's P1)."""
        names = [f"joined/{r}" for r in range(self.world.size)]
        if not self.store.check(names):
            return False
        for name in names:
            info = json.loads(self.store.get(name))
            # An announcement without "checks" (another opdoctor release) may be one.
            if info.get("node") == node and info.get("checks", True):
                return False
        return True

    def _left(self) -> float:
        return max(0.0, self.start + self.timeout - time.monotonic())

    def _roster(self) -> tuple[list[int], list[Missing], float]:
        """Rank 0: wait for every ``ready`` key until the deadline; publish the roster."""
        n = self.world.size
        t0 = time.monotonic()
        ready = [f"ready/{r}" for r in range(n)]
        # Polled, not one blocking wait: a signal (the launcher's SIGTERM when another rank
        # exits) is handled at once, not after --gather-timeout.
        while self._left() > 0 and not self.store.check(ready):
            time.sleep(min(POLL * 4, self._left()))
        roster: list[int] = []
        missing: list[Missing] = []
        for r in range(n):
            if self.store.check([f"ready/{r}"]):
                roster.append(r)
                continue
            joined = self.store.check([f"joined/{r}"])
            host = ""
            if joined:
                with contextlib.suppress(Exception):
                    host = str(json.loads(self.store.get(f"joined/{r}")).get("hostname", ""))
            missing.append(Missing(r, "joined, but its check did not finish within "
                                   f"{self.timeout:g} s" if joined
                                   else f"never joined within {self.timeout:g} s", host))
        self.store.set("roster", json.dumps(roster))
        return roster, missing, time.monotonic() - t0

    def gather(self, record: dict[str, Any], follower_wait: float) -> Gathered | None:
        """Send this rank's record to rank 0; rank 0 gets everyone's (others get None).

        ``follower_wait``: how long a non-zero rank waits for rank 0 to close the roster (rank 0
        may still be checking its own node).
        """
        w = self.world
        self.store.set(f"record/{w.rank}", json.dumps(record, default=str))
        self.store.set(f"ready/{w.rank}", "1")
        missing: list[Missing] = []
        waited = 0.0
        if w.rank == 0:
            roster, missing, waited = self._roster()
        else:
            t0 = time.monotonic()
            try:
                self.store.wait(["roster"], timedelta(seconds=follower_wait))
            except Exception as exc:  # a timeout, or rank 0's store went away
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise GatherError(f"rank {w.rank}: no roster from rank 0 after "
                                  f"{time.monotonic() - t0:.0f} s (limit {follower_wait:g} s): "
                                  f"{first}") from None
            roster = json.loads(self.store.get("roster"))
            if w.rank not in roster:
                raise GatherError(f"rank {w.rank}: rank 0 closed the gather without this rank "
                                  f"(not ready within {self.timeout:g} s)")
            self._followers = 0
            return None
        self._followers = len(roster) - 1
        t0 = time.monotonic()
        records = [record if r == 0 else json.loads(self.store.get(f"record/{r}"))
                   for r in roster]
        return Gathered(records, missing, waited, time.monotonic() - t0)

    def partial(self, own: dict[str, Any] | None, why: str) -> Gathered:
        """Rank 0, stopped before the roster closed (the launcher's SIGTERM): the records the
        store holds, and every other rank as missing with ``why``."""
        records: list[dict[str, Any]] = []
        missing: list[Missing] = []
        for r in range(self.world.size):
            rec = own if r == 0 else None
            if r and self.store is not None:
                with contextlib.suppress(Exception):
                    if self.store.check([f"record/{r}"]):
                        rec = json.loads(self.store.get(f"record/{r}"))
            if rec is not None:
                records.append(rec)
                continue
            joined = False
            if self.store is not None:
                with contextlib.suppress(Exception):
                    joined = bool(self.store.check([f"joined/{r}"]))
            state = "its own check was cut short" if r == 0 else \
                "joined, but had not answered" if joined else "had not joined"
            missing.append(Missing(r, f"{state} when {why}"))
        return Gathered(records, missing, 0.0, 0.0)

    def share_code(self, code: int | None) -> int:
        """Rank 0 sends the fleet's exit code, the others receive it. Rank 0 (which may host
        the store) then waits, briefly, until the others have read it."""
        if self.world.rank == 0:
            self.store.set("code", str(1 if code is None else code))
            deadline = time.monotonic() + CODE_READ_WAIT
            while self._followers > 0 and time.monotonic() < deadline:
                if int(self.store.add("code-read", 0)) >= self._followers:
                    break
                time.sleep(POLL)
            return 1 if code is None else int(code)
        self.store.wait(["code"], timedelta(seconds=max(self.timeout, 60.0)))
        value = int(self.store.get("code"))
        with contextlib.suppress(Exception):
            self.store.add("code-read", 1)
        return value

    def close(self) -> None:
        """Drop the store."""
        self.store = None
