"""Probes forked from one child that imported the framework once (a zygote).

A package whose extension modules the package's import does not load gets one more probe per
module (:meth:`opdoctor.facts.core.Facts._through_its_module`): vllm's twelve libraries were
twelve children that each imported torch (~1.8 s) before importing their one module. Inside one
command (:func:`opdoctor.facts.probe.runner.reuse_scope`) those probes are instead forked from
a zygote, a probe child of the same interpreter, environment, working directory and limits that
imported torch once and then waits for requests (``probe_script.serve``). Each fork is what a
fresh probe is after its own ``import torch``: its own process, session, event file, stdout,
stderr and LD_DEBUG output; a crash or a hang is its result alone, and the zygote forks the
next one from its unchanged state. Inside a scope, module probes, every TensorFlow probe and
torch probes from the scope's second on are forked (a check of one library keeps its plain
child, started at once beside the static checks); :func:`runner.keep_zygotes` forks every
forkable probe and keeps the zygotes between commands.

A zygote is keyed by interpreter, limits and the environment the process starts with; a fork
takes its request's own working directory, environment variables that nothing reads at
start-up (opdoctor's, a test runner's) and, when no entry holds a module the framework's
import looked for, its PYTHONPATH (:meth:`Zygote.admits`): one zygote serves a walk of
several sites.

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
    _note_start,
    child_env,
    kill_probe_processes,
    limit_child,
    probe_deadline,
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

    def __init__(self, req: ProbeRequest, with_path: bool = True) -> None:
        self.req = req
        self.with_path = with_path
        self.owner = os.getpid()  # a process forked from this one (a scan worker) has its own
        self.tmp = tempfile.mkdtemp(prefix="opdoctor-zygote-")
        script = str(resources.files("opdoctor").joinpath("facts/probe/probe_script.py"))
        payload = {"path": "", "package": None, "torch": req.torch,
                   "tensorflow": req.tensorflow, "zygote": True}
        env, self.tag = child_env(req, self.tmp)
        if not with_path:  # a zygote shared by requests whose PYTHONPATH differs (see admits)
            env.pop("PYTHONPATH", None)
        # Every top-level module name its framework import looked for, found or not, and
        # what the interpreter had imported before (ZYGOTE_READY): what a fork's own
        # PYTHONPATH must not hold.
        self.names: frozenset[str] = frozenset()
        rfd, wfd = os.pipe()
        cpu = int(req.timeout * 2) + 10  # per process: each fork starts from zero CPU time
        self._err = open(os.path.join(self.tmp, "stderr"), "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [req.python, script, str(wfd), json.dumps(payload)], pass_fds=(wfd,),
            stdin=subprocess.PIPE, stdout=self._err, stderr=self._err, env=env,
            start_new_session=True, cwd=req.cwd or None)
        limit_child(self.proc.pid, cpu)
        os.close(wfd)
        _note_start(None, "zygote " + ("tensorflow" if req.tensorflow else "torch") +
                    (" with its PYTHONPATH" if with_path and req.env.get("PYTHONPATH") else ""))
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
            event = self._next(P.ZYGOTE_READY, self.started + grace)
            self._ready = event is not None
            self.broken = not self._ready
            if event is not None:
                self.names = frozenset(event.get("names") or ())
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

    def admits(self, req: ProbeRequest) -> bool:
        """Whether a fork of this zygote is what a fresh probe of ``req`` is after its
        framework import: always for the zygote of ``req``'s own start-up environment; for
        the one shared by several PYTHONPATHs (``with_path`` false), when none of ``req``'s
        PYTHONPATH entries holds a module the framework's import looked for (a fresh child
        would have found it there), distribution metadata the framework enumerates at import
        (torch's device-backend entry points) or TensorFlow's plug-in directory. Waits for
        the zygote to be ready (what it looked for is known then)."""
        if self.with_path:
            return True
        entries = _path_entries(req)
        if entries == []:
            return True
        return entries is not None and self.ready() and \
            not any(_holds_any(entry, self.names) for entry in entries)

    def _fork(self, req: ProbeRequest, stdin: IO[bytes]) -> ForkedProbe | None:
        where = tempfile.mkdtemp(prefix="opdoctor-probe-")
        fields = {**request_payload(req), "late": False}
        # The fork becomes the request's own process: its working directory, its whole
        # environment (with its own tag and LD_DEBUG_OUTPUT), its PYTHONPATH on sys.path.
        env, tag = child_env(req, where)
        job = {"dir": where, "req": fields, "cwd": req.cwd or os.getcwd(), "env": env,
               "path": [] if self.with_path else (_path_entries(req) or [])}
        try:
            stdin.write(json.dumps(job).encode() + b"\n")
            stdin.flush()
        except OSError:
            self.broken = True
        forked = None if self.broken else \
            self._next(P.FORKED, time.monotonic() + _READY_GRACE)
        if forked is None:
            self.broken = True
            shutil.rmtree(where, ignore_errors=True)
            return None
        _note_start(req, "fork: ")
        self.current = ForkedProbe(self, req, int(forked["pid"]), where, tag)
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

    def __init__(self, zygote: Zygote, req: ProbeRequest, pid: int, where: str,
                 tag: str = "") -> None:
        self.zygote, self.req, self.pid, self.tmp, self.tag = zygote, req, pid, where, tag
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
        # Its own session: what it started and left is killed by session; a daemon that
        # left the session, by its environment's tag: the fork's own if it was started by
        # exec, the zygote's if only forked (/proc shows the environment a process was
        # exec'd with, and the fork was not). One fork runs at a time: nothing but the
        # zygote itself and this fork's leftovers carries the zygote's tag.
        tags = [t.encode() for t in (self.tag, self.zygote.tag) if t]
        self.leftovers = kill_probe_processes(self.pid, *tags, spare=self.zygote.proc.pid)
        if self.zygote.current is self:
            self.zygote.current = None

    def _wait(self) -> ProbeOutcome:
        import psutil  # imported here: only a run with the probe pays for it

        timed_out = memory_killed = False
        deadline = self.start + probe_deadline(self.req)
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
    imports torch or TensorFlow first, inside a reuse scope or while zygotes are kept; not
    MindSpore's AOT load. An --opcheck probe forks too: torch._dynamo is imported in the
    fork, after the fork (the zygote imported torch alone), with the same deadline."""
    return not req.late and could_fork(req)


def could_fork(req: ProbeRequest) -> bool:
    """:func:`forkable` but for the late fields (a request that will be complete)."""
    from opdoctor.facts.probe.runner import scope_open, zygotes_kept
    return (scope_open() or zygotes_kept()) and bool(req.torch or req.tensorflow) and \
        not req.aot_function


# Variables no interpreter, loader or framework reads at start-up: opdoctor's own settings
# and a test runner's per-test bookkeeping. A fork may differ from its zygote in them (the
# fork's environment is replaced by its own); any other variable keys a zygote of its own.
_NOT_AT_START = ("OPDOCTOR_", "PYTEST_")


def _key(req: ProbeRequest, with_path: bool) -> str:
    env = {k: v for k, v in req.env.items() if not k.startswith(_NOT_AT_START) and
           (with_path or k != "PYTHONPATH")}
    # The timeout as a number (60 and 60.0 set the same limits: one zygote, not two).
    return json.dumps([req.python, env, float(req.timeout), req.memory_mb, req.torch,
                       req.tensorflow, with_path], sort_keys=True)


def worth_a_zygote(req: ProbeRequest) -> bool:
    """Whether ``req``'s probe (torch or TensorFlow, the package's or a library's own) should
    be forked: while zygotes are kept, or when its zygote already runs; a TensorFlow probe in
    a reuse scope always (its import is seconds); a torch probe from the second of a scope
    on (a check of one library starts its one probe at once, beside its static checks)."""
    from opdoctor.facts.probe.runner import PLAIN_STARTS, ZYGOTES, zygotes_kept
    if not could_fork(req):
        return False
    key = _key(req, False)
    return zygotes_kept() or bool(req.tensorflow) or key in ZYGOTES or key in PLAIN_STARTS


def note_plain_start(req: ProbeRequest) -> None:
    """Remember that a plain torch probe started in this scope (the next one is forked)."""
    from opdoctor.facts.probe.runner import PLAIN_STARTS, scope_open
    if scope_open() and could_fork(req):
        PLAIN_STARTS.add(_key(req, False))


def warm(req: ProbeRequest) -> None:
    """Start the zygote ``req``'s probe will be forked from, now (it imports the framework
    while the static checks and the import chain run)."""
    _zygote(req, False)


def _zygote(req: ProbeRequest, with_path: bool) -> Zygote:
    from opdoctor.facts.probe.runner import ZYGOTES
    if any(z.owner != os.getpid() for z in ZYGOTES.values()):
        # Inherited by a fork of the process that started them (a scan worker): theirs to
        # use and close, not this process's (their pipes and event readers are the parent's).
        ZYGOTES.clear()
    key = _key(req, with_path)
    zygote = ZYGOTES.get(key)
    if zygote is None or zygote.broken:
        if zygote is not None:
            zygote.close()
        zygote = ZYGOTES[key] = Zygote(req, with_path)
    return zygote


def _path_entries(req: ProbeRequest) -> list[str] | None:
    """``req``'s PYTHONPATH entries as the interpreter puts them on sys.path (absolute,
    relative to its working directory); None when one cannot be placed by a fork (empty: the
    working directory itself)."""
    value = req.env.get("PYTHONPATH", "")
    if not value:
        return []
    out = []
    for entry in value.split(os.pathsep):
        if not entry:
            return None
        out.append(os.path.normpath(os.path.join(req.cwd or os.getcwd(), entry)))
    return out


def _holds_any(entry: str, names: frozenset[str]) -> bool:
    """Whether sys.path entry ``entry`` holds a module named in ``names``, distribution
    metadata with entry points of torch or TensorFlow, or TensorFlow's plug-in directory (a
    file that is not a directory — a zip — counts as holding anything)."""
    if not os.path.isdir(entry):
        return os.path.exists(entry)
    try:
        items = os.listdir(entry)
    except OSError:
        return True
    for item in items:
        if item.partition(".")[0] in names or item == "tensorflow-plugins":
            return True
        if item.endswith((".dist-info", ".egg-info")):
            try:
                with open(os.path.join(entry, item, "entry_points.txt"),
                          encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if "[torch" in text or "[tensorflow" in text:
                return True
    return False


def module_probe(req: ProbeRequest) -> ProbeHandle | ForkedProbe:
    """Start the probe of ``req`` (complete, no late fields): forked from the zygote of its
    interpreter, framework, start-up environment and limits inside a reuse scope (or while
    zygotes are kept), else (no scope, MindSpore, a zygote that cannot serve) as a
    plain child. One zygote serves requests whose PYTHONPATH differs when the fork can put
    it on sys.path itself (:meth:`Zygote.admits`); otherwise the PYTHONPATH has a zygote of
    its own."""
    from opdoctor.facts.probe.runner import start_probe
    if not forkable(req):
        return start_probe(req)
    zygote = _zygote(req, False)
    if req.env.get("PYTHONPATH") and not zygote.admits(req):
        zygote = _zygote(req, True)
    return zygote.fork(req) or start_probe(req)

