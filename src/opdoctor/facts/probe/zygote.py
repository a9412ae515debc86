"""Probes forked from one child that imported the framework once (a zygote).

A package whose extension modules the package's import does not load gets one more probe per
module (:meth:`opdoctor.facts.core.Facts._through_its_module`): vllm's twelve libraries were
twelve children that each imported torch (~1.8 s) before importing their one module. Inside one
command (:func:`opdoctor.facts.probe.runner.reuse_scope`) those probes are instead forked from
a zygote, a probe child of the same interpreter, environment, working directory and limits that
imported torch once and then waits for requests (``probe_script.serve``). Each fork is what a
fresh probe is after its own ``import torch``: its own process, session, event file, stdout,
stderr and LD_DEBUG output; a crash or a hang is its result alone, and the zygote forks the
next one from its unchanged state. Only the module probes use it: the package's own probe is
the first child to import torch anyway.

A zygote that cannot serve (its framework import failed, it died, it does not answer) is
closed, and the probe runs as a plain child: the zygote only ever saves time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from importlib import resources

from opdoctor.facts.probe import protocol as P
from opdoctor.facts.probe.ldtrace import parse_ld_debug
from opdoctor.facts.probe.outcome import ProbeOutcome, build_outcome
from opdoctor.facts.probe.runner import (
    ProbeHandle,
    ProbeRequest,
    _limits,
    _note_start,
    child_env,
    kill_probe_processes,
    request_payload,
    signal_name,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import IO, Any

# How long a zygote may take to import its framework before its first fork is given up on
# (then that probe runs as a plain child, which has its own --timeout).
_READY_GRACE = 5.0


class Zygote:
    """A probe child that imported the framework and forks one probe per request."""

    def __init__(self, req: ProbeRequest) -> None:
        self.req = req
        self.tmp = tempfile.mkdtemp(prefix="opdoctor-zygote-")
        script = str(resources.files("opdoctor").joinpath("facts/probe/probe_script.py"))
        payload = {"path": "", "package": None, "torch": req.torch,
                   "tensorflow": req.tensorflow, "zygote": True}
        env, self.tag = child_env(req, self.tmp)
        rfd, wfd = os.pipe()
        cpu = int(req.timeout * 2) + 10  # per process: each fork starts from zero CPU time
        self._err = open(os.path.join(self.tmp, "stderr"), "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [req.python, script, str(wfd), json.dumps(payload)], pass_fds=(wfd,),
            stdin=subprocess.PIPE, stdout=self._err, stderr=self._err, env=env,
            start_new_session=True, preexec_fn=lambda: _limits(cpu), cwd=req.cwd or None)
        os.close(wfd)
        self.started = time.monotonic()
        self._cond = threading.Condition()
        self._events: list[dict[str, Any]] = []
        self._eof = False
        self.current: ForkedProbe | None = None  # one fork at a time: the zygote waits for it
        self._lock = threading.Lock()
        self._ready = False
        self.ld_prefix = b""
        self.broken = False
        self._reader = threading.Thread(target=self._read, args=(rfd,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "r", errors="replace") as fh:
            for line in fh:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                with self._cond:
                    self._events.append(event)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _next(self, name: str, deadline: float, pid: int | None = None) -> dict[str, Any] | None:
        """The first event called ``name`` (for ``pid``) not yet taken, waiting until
        ``deadline``; None when the zygote is gone or the time is up."""
        with self._cond:
            while True:
                for i, e in enumerate(self._events):
                    if e.get("event") == name and (pid is None or e.get("pid") == pid):
                        return self._events.pop(i)
                if self._eof or time.monotonic() >= deadline:
                    return None
                self._cond.wait(max(0.0, min(0.5, deadline - time.monotonic())))

    def ready(self) -> bool:
        """Whether the zygote imported its framework and waits for requests (waits for that
        up to the probe's timeout)."""
        if not self._ready and not self.broken:
            grace = max(_READY_GRACE, self.req.timeout)
            self._ready = self._next(P.ZYGOTE_READY, self.started + grace) is not None
            self.broken = not self._ready
            if self._ready:
                # glibc's account of the framework's import, which each fork's trace lacks
                # (it happened before the fork): prepended to every fork's (ForkedProbe).
                with contextlib.suppress(OSError), \
                        open(os.path.join(self.tmp, f"ld.{self.proc.pid}"), "rb") as fh:
                    self.ld_prefix = fh.read()
        return self._ready and not self.broken

    def fork(self, req: ProbeRequest) -> ForkedProbe | None:
        """A probe of ``req`` forked from the zygote, or None when the zygote cannot serve
        (then the caller starts a plain probe): broken, or busy with a fork not yet waited
        for."""
        with self._lock:  # one request in flight: its FORKED event is the next one
            stdin = self.proc.stdin
            if self.current is not None or not self.ready() or stdin is None:
                return None
            return self._fork(req, stdin)

    def _fork(self, req: ProbeRequest, stdin: IO[bytes]) -> ForkedProbe | None:
        where = tempfile.mkdtemp(prefix="opdoctor-probe-")
        fields = {**request_payload(req), "late": False}
        try:
            stdin.write(json.dumps({"dir": where, "req": fields}).encode() + b"\n")
            stdin.flush()
        except OSError:
            self.broken = True
        forked = None if self.broken else \
            self._next(P.FORKED, time.monotonic() + _READY_GRACE)
        if forked is None:
            self.broken = True
            shutil.rmtree(where, ignore_errors=True)
            return None
        _note_start(req.path or f"package {req.package}")
        self.current = ForkedProbe(self, req, int(forked["pid"]), where)
        return self.current

    def close(self) -> None:
        """Stop the zygote and everything it or its forks left running."""
        stdin, self.proc.stdin = self.proc.stdin, None
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        kill_probe_processes(self.proc.pid, self.tag.encode())
        self._err.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class ForkedProbe:
    """A probe forked from a :class:`Zygote`: the same interface as ``ProbeHandle``."""

    def __init__(self, zygote: Zygote, req: ProbeRequest, pid: int, where: str) -> None:
        self.zygote, self.req, self.pid, self.tmp = zygote, req, pid, where
        self.start = time.monotonic()
        self.leftovers = 0
        self._outcome: ProbeOutcome | None = None

    def send_late(self, path: str, preload: tuple[str, ...], hidden: list[dict[str, Any]],
                  tf_ops: tuple[str, ...], first: tuple[str, ...] = ()) -> None:
        """A forked probe has no late fields (its request is complete when it forks)."""

    def abandon(self) -> None:
        """Kill the fork and everything it started; nothing is collected."""
        if self._outcome is None:
            self._kill()
            self._exit_status(time.monotonic() + _READY_GRACE)
            self._finish()

    def wait(self) -> ProbeOutcome:
        """Wait for the fork to exit (bounded by its timeout and memory limit) and collect
        it, as ``ProbeHandle.wait`` does."""
        if self._outcome is None:
            self._outcome = self._wait()
        return self._outcome

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def _exit_status(self, deadline: float) -> int | None:
        event = self.zygote._next(P.EXITED, deadline, self.pid)
        return None if event is None else int(event.get("status", 0))

    def _finish(self) -> None:
        # Its own session: what it started and left (a daemon) is killed by session. The
        # environment tag is the zygote's, shared by every fork: not used here.
        self.leftovers = kill_probe_processes(self.pid, None)
        if self.zygote.current is self:
            self.zygote.current = None

    def _wait(self) -> ProbeOutcome:
        import psutil  # imported here: only a run with the probe pays for it

        timed_out = memory_killed = False
        deadline = self.start + self.req.timeout
        try:
            ps = psutil.Process(self.pid)
        except psutil.Error:
            ps = None
        status: int | None = None
        while status is None:
            status = self._exit_status(min(deadline, time.monotonic() + 0.05))
            if status is not None:
                break
            if self.zygote._eof:  # the zygote died: nobody reaps the fork any more
                self._kill()
                self.zygote.broken = True
                break
            if time.monotonic() > deadline:
                timed_out = True
            elif ps is not None:
                with contextlib.suppress(psutil.Error):
                    memory_killed = ps.memory_info().rss > self.req.memory_mb * 2**20
            if timed_out or memory_killed:
                self._kill()
                status = self._exit_status(time.monotonic() + _READY_GRACE)
                break
        seconds = time.monotonic() - self.start
        if status is None:  # not reaped in time: the zygote is not answering; no more forks
            self.zygote.broken = True
        self._finish()
        events: list[dict[str, Any]] = []
        with contextlib.suppress(OSError), \
                open(os.path.join(self.tmp, "events"), errors="replace") as fh:
            for line in fh:
                with contextlib.suppress(ValueError):
                    events.append(json.loads(line))
        out, err = (self._tail(name) for name in ("stdout", "stderr"))
        sig = signal_name(status)
        trace = parse_ld_debug(self._whole_trace())
        shutil.rmtree(self.tmp, ignore_errors=True)
        return build_outcome(events, status, sig, timed_out, memory_killed, out, err, trace,
                             seconds)

    def _whole_trace(self) -> str:
        """The fork's LD_DEBUG file with the zygote's (the framework's import) before it, as
        one fresh probe's trace would read."""
        path = os.path.join(self.tmp, f"ld.{self.pid}")
        if self.zygote.ld_prefix:
            with contextlib.suppress(OSError):
                with open(path, "rb") as fh:
                    own = fh.read()
                with open(path, "wb") as fh:
                    fh.write(self.zygote.ld_prefix + own)
        return path

    def _tail(self, name: str) -> str:
        try:
            with open(os.path.join(self.tmp, name), "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 8000))
                return fh.read().decode(errors="replace")
        except OSError:
            return ""


def forkable(req: ProbeRequest) -> bool:
    """Whether ``req`` can be forked from a zygote: a complete request (no late fields) that
    imports torch or TensorFlow first, inside a reuse scope; not MindSpore's AOT load, not
    --opcheck (torch._dynamo)."""
    from opdoctor.facts.probe.runner import scope_open
    return scope_open() and (req.torch or req.tensorflow) and not req.aot_function \
        and not req.opcheck and not req.late


def module_probe(req: ProbeRequest) -> ProbeHandle | ForkedProbe:
    """Start the probe of ``req`` (complete, no late fields): forked from the zygote of its
    interpreter, framework, environment and limits inside a reuse scope, else (no scope,
    MindSpore, --opcheck, a zygote that cannot serve) as a plain child. Used for a module's
    own import (torch) and, in a walk or scan, for every TensorFlow probe."""
    from opdoctor.facts.probe.runner import ZYGOTES, start_probe
    if not forkable(req):
        return start_probe(req)
    key = json.dumps([req.python, req.env, req.cwd, req.timeout, req.memory_mb,
                      req.torch, req.tensorflow], sort_keys=True)
    zygote = ZYGOTES.get(key)
    if zygote is None or zygote.broken:
        if zygote is not None:
            zygote.close()
        zygote = ZYGOTES[key] = Zygote(req)
    return zygote.fork(req) or start_probe(req)
