"""Starting and supervising the load probe: a time-, CPU- and memory-limited child process of
the target interpreter, in its own process group, that opdoctor survives whatever the library
does (crash, abort, hang, runaway allocation).

Events come back as JSON lines over a dedicated pipe (not stdout, which the library may write
to); glibc's own account of the load comes from ``LD_DEBUG=libs,versions`` written to a
temporary ``LD_DEBUG_OUTPUT`` file.

The probe is over when its child exits (or a limit kills it) — never "when the pipe closes":
an initialiser that forks a daemon hands it the pipe, stdout and stderr, so EOF may come
minutes later or never. stdout and stderr therefore go to files, and on return every process
the probe started is killed: its process group, its session, and anything that left both
(``setsid()`` daemons) but still carries the probe's tag in its environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from importlib import resources

from opdoctor.facts.probe.ldtrace import parse_ld_debug
from opdoctor.facts.probe.outcome import ProbeOutcome, build_outcome

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any


@dataclass
class ProbeRequest:
    """What the probe should do."""

    path: str
    python: str
    torch: bool
    package: str | None = None
    preload: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    smoke: bool = False
    timeout: float = 60.0
    memory_mb: int = 16384
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    hidden: list[dict[str, Any]] = field(default_factory=list)  # swallowed imports to retry
    tensorflow: bool = False  # load with TensorFlow (probe_tf.py) instead of torch/ctypes
    tf_ops: tuple[str, ...] = ()  # TensorFlow op names to look up in the registry
    opcheck: bool = False  # compile readiness + torch.library.opcheck of the new ops
    aot_function: str = ""  # MindSpore AOT: load and dlsym the MindSpore way (probe_ms.py)
    # Modules to import before the package, in order: those its own guard demands
    # (psycopg_binary raises ImportError unless psycopg was imported first).
    first: tuple[str, ...] = ()
    # ``hidden`` and ``tf_ops`` follow on stdin (:meth:`ProbeHandle.send_late`): the child
    # starts importing the framework while the parent still computes them.
    late: bool = False


def _note_start(req: ProbeRequest | None, what: str = "") -> None:
    """Append the probe's target (``package NAME``, or the library; ``what`` before it, or
    alone without a request) to ``$OPDOCTOR_PROBE_LOG`` when set: the test suite uses it to
    prove that tests not marked ``probe`` start no probe interpreter (``pytest -m "not
    probe"``), and to count the framework imports of a command."""
    log = os.environ.get("OPDOCTOR_PROBE_LOG")
    if log:
        if req is not None:
            what += f"package {req.package}" if req.package else \
                req.path or "library (path follows)"
        with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as fh:
            fh.write(what + "\n")


TAG_VAR = "OPDOCTOR_PROBE_TAG"


def _descendants(sid: int, tags: tuple[bytes, ...], spare: int = 0) -> list[int]:
    """Processes of this user in session ``sid`` or carrying one of ``tags`` in their
    environment (none: the session alone), but ``spare``."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, spare):
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            # Fields after the command name (which may contain spaces and parentheses).
            fields = stat[stat.rfind(b")") + 2:].split()
            if int(fields[3]) == sid:  # field 6, session id
                out.append(pid)
                continue
            if not tags:
                continue
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
            if any(tag in environ for tag in tags):
                out.append(pid)
        except (OSError, ValueError, IndexError):
            continue  # gone, or not ours to read
    return out


def kill_probe_processes(sid: int, *tags: bytes, spare: int = 0) -> int:
    """Kill every process the probe started (in its session, or carrying one of its tags in
    the environment it was started with), but ``spare`` (a zygote, whose tag its forks'
    own children carry); returns how many were still alive."""
    killed = 0
    for _round in range(5):  # a process may fork while we kill: look again
        pids = _descendants(sid, tags, spare)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.05)
    return killed


def request_payload(req: ProbeRequest) -> dict[str, Any]:
    """The request as probe_script.py reads it (JSON)."""
    payload: dict[str, Any] = {
        "path": req.path, "package": req.package, "torch": req.torch,
        "preload": list(req.preload), "ops": list(req.ops), "smoke": req.smoke,
        "hidden": req.hidden, "tensorflow": req.tensorflow, "tf_ops": list(req.tf_ops),
        "aot_function": req.aot_function, "late": req.late, "first": list(req.first)}
    if req.opcheck:
        # Half of the opcheck's own --timeout for the tests; later ops are marked skipped.
        payload.update(opcheck=True, opcheck_budget=req.timeout / 2)
    return payload


def probe_deadline(req: ProbeRequest) -> float:
    """Seconds a probe of ``req`` may run: its --timeout, and --opcheck's own on top
    (importing torch._dynamo alone takes seconds)."""
    return req.timeout * (2 if req.opcheck else 1)


def signal_name(returncode: int | None) -> str:
    """The signal that ended a child ("" when it exited), as ``Popen.returncode`` gives it."""
    if returncode is None or returncode >= 0:
        return ""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def child_env(req: ProbeRequest, tmp: str) -> tuple[dict[str, str], str]:
    """The environment of a probe child (the job's, plus the tag every process it starts
    carries, glibc's account of the loads into ``tmp``/ld.<pid>, unbuffered output) and
    its tag."""
    env = dict(req.env)
    tag = uuid.uuid4().hex
    env.update({TAG_VAR: tag, "LD_DEBUG": "libs,versions",
                "LD_DEBUG_OUTPUT": os.path.join(tmp, "ld"),
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    return env, tag


def limit_child(pid: int, cpu_seconds: int) -> None:
    """Bound a child just started: ``cpu_seconds`` of CPU, and no core file for a crash.

    Set from here once the child runs rather than by a ``preexec_fn`` before its exec: a
    ``preexec_fn`` makes Python fork the whole parent (its page tables: ~35 ms from a process
    of 650 MB, the test suite's workers; a scan worker) where it otherwise uses vfork (~1 ms);
    the child's interpreter start-up takes far longer than the two calls, so nothing it loads
    runs unbounded. A child already gone needs no limit."""
    with contextlib.suppress(OSError):  # ProcessLookupError: it has already exited
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
        resource.prlimit(pid, resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))


class ProbeHandle:
    """A running probe; :meth:`wait` returns its result."""

    def __init__(self, req: ProbeRequest) -> None:
        self.req = req
        self.tmp = tempfile.mkdtemp(prefix="opdoctor-probe-")
        script = str(resources.files("opdoctor").joinpath("facts/probe/probe_script.py"))
        payload = request_payload(req)
        env, self.tag = child_env(req, self.tmp)
        rfd, wfd = os.pipe()
        self.start = time.monotonic()
        cpu = int(req.timeout * 2) + 10
        # Files, not pipes: a daemon the library forks inherits them and may never close them.
        self._out = open(os.path.join(self.tmp, "stdout"), "w+b")  # noqa: SIM115
        self._err = open(os.path.join(self.tmp, "stderr"), "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [req.python, script, str(wfd), json.dumps(payload)], pass_fds=(wfd,),
            stdin=subprocess.PIPE if req.late else subprocess.DEVNULL,
            stdout=self._out, stderr=self._err,
            env=env, start_new_session=True, cwd=req.cwd or None)
        limit_child(self.proc.pid, cpu)
        os.close(wfd)
        self.leftovers = 0  # processes the probe left behind (killed on return)
        self._outcome: ProbeOutcome | None = None
        self._tails: dict[str, str] = {}  # stdout/stderr read (by file name), once
        _note_start(req)
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, args=(rfd,), daemon=True)
        self._reader.start()

    def send_late(self, path: str, preload: tuple[str, ...], hidden: list[dict[str, Any]],
                  tf_ops: tuple[str, ...], first: tuple[str, ...] = ()) -> None:
        """Give the child the request's late fields (once; later calls do nothing)."""
        stdin, self.proc.stdin = self.proc.stdin, None
        if stdin is None:
            return
        self.req.path, self.req.preload, self.req.hidden, self.req.tf_ops, self.req.first = \
            path, preload, hidden, tf_ops, first
        late = {"path": path, "preload": list(preload), "hidden": hidden,
                "tf_ops": list(tf_ops), "first": list(first)}
        # The child may be gone (a crash at start): its result says so, not a broken pipe.
        with contextlib.suppress(OSError):
            stdin.write(json.dumps(late).encode() + b"\n")
        with contextlib.suppress(OSError):
            stdin.close()

    def _close_stdin(self) -> None:
        stdin, self.proc.stdin = self.proc.stdin, None
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()

    def abandon(self) -> None:
        """Kill the child and everything it started; nothing is collected."""
        self._close_stdin()
        self._kill()
        self.proc.wait()
        kill_probe_processes(self.proc.pid, self.tag.encode())
        for fh in (self._out, self._err):
            fh.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "r", errors="replace") as fh:
            for line in fh:
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    continue

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _tail(self, fh: Any) -> str:
        if fh.closed:  # a wait() interrupted after it read them (a stage's budget ran out)
            return self._tails.get(fh.name, "")
        fh.flush()
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 8000))
        data: bytes = fh.read()
        fh.close()
        self._tails[fh.name] = text = data.decode(errors="replace")
        return text

    def wait(self) -> ProbeOutcome:
        """Wait for the probe's child to exit (bounded by its timeout and memory limit), kill
        whatever it left running, and collect it all. Called again (an earlier call was
        interrupted by a stage's budget), it finishes the collection or returns the result."""
        if self._outcome is None:
            self._outcome = self._wait()
        return self._outcome

    def _wait(self) -> ProbeOutcome:
        import psutil  # imported here: only a run with the probe pays for it

        timed_out = memory_killed = False
        self._close_stdin()  # late fields never sent: EOF, the child stops at their first use
        deadline = self.start + probe_deadline(self.req)
        try:
            ps = psutil.Process(self.proc.pid)
        except psutil.Error:
            ps = None
        exited = _exit_waiter(self.proc.pid)
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                timed_out = True
            elif ps is not None:
                try:
                    if ps.memory_info().rss > self.req.memory_mb * 2**20:
                        memory_killed = True
                except psutil.Error:
                    pass
            if timed_out or memory_killed:
                self._kill()
                self.proc.wait()
                break
            exited(0.05)
        exited(None)
        seconds = time.monotonic() - self.start
        self._kill()  # grandchildren left in the group
        self.leftovers = kill_probe_processes(self.proc.pid, self.tag.encode())
        self._reader.join(timeout=5)  # the pipe's last writers are gone: EOF comes now
        out, err = self._tail(self._out), self._tail(self._err)
        rc = self.proc.returncode
        sig = signal_name(rc)
        trace = parse_ld_debug(os.path.join(self.tmp, f"ld.{self.proc.pid}"))
        shutil.rmtree(self.tmp, ignore_errors=True)
        return build_outcome(self.events, rc, sig, timed_out, memory_killed, out, err, trace,
                             seconds)


def _exit_waiter(pid: int) -> Callable[[float | None], None]:
    """A function that sleeps up to its argument in seconds but returns as soon as process
    ``pid`` exits (a pidfd, Linux 5.3+; else a plain sleep), and with None closes the pidfd.
    A plain 50 ms sleep between polls added 25 ms on average to every probe."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return lambda seconds: time.sleep(seconds) if seconds else None

    def wait(seconds: float | None) -> None:
        if seconds is None:
            with contextlib.suppress(OSError):
                os.close(fd)
            return
        with contextlib.suppress(OSError, ValueError):
            select.select([fd], [], [], seconds)

    return wait


def start_probe(req: ProbeRequest) -> ProbeHandle:
    """Start the probe now; call ``wait()`` on the handle for the result."""
    return ProbeHandle(req)


# Probes started before their target was known (package mode), by their request's early
# fields; the target's probe adopts the one whose request matches.
_PRESTARTED: dict[str, ProbeHandle] = {}
_LATE_FIELDS = ("path", "preload", "hidden", "tf_ops", "first")


def _early_key(req: ProbeRequest) -> str:
    early = {k: v for k, v in vars(req).items() if k not in _LATE_FIELDS}
    return json.dumps(early, sort_keys=True, default=str)


def prestart(req: ProbeRequest) -> None:
    """Start a probe whose late fields follow (``req.late``), to be taken by :func:`adopt`."""
    if not req.late:
        raise ValueError("only a probe with late fields can start before its target")
    key = _early_key(req)
    if key not in _PRESTARTED:
        _PRESTARTED[key] = ProbeHandle(req)


def adopt(req: ProbeRequest) -> ProbeHandle | None:
    """The prestarted probe with ``req``'s early fields (once), or None."""
    return _PRESTARTED.pop(_early_key(req), None) if _PRESTARTED else None


# Finished package-mode probes of this process, by their request without the library path:
# a package's import is the same whichever of its libraries is being checked (a directory walk
# of PyAV checks 49 libraries of one package), so it is run once. The value is the outcome and
# the first outcome of a run that had to probe again (see Facts.probe_result).
_FINISHED: dict[str, tuple[ProbeOutcome, ProbeOutcome | None]] = {}
_SCOPES = [0]  # open reuse scopes: outcomes are kept only inside one command's targets
_KEPT = [0]  # open keep_zygotes() contexts: zygotes outlive the commands run inside them
# Zygotes (zygote.Zygote) of the open scope, by interpreter, start-up environment and limits.
ZYGOTES: dict[str, Any] = {}
# Zygote keys of the plain torch probes started in the open scope: the next probe with one of
# them is forked (see zygote.worth_a_zygote).
PLAIN_STARTS: set[str] = set()


@contextlib.contextmanager
def reuse_scope() -> Iterator[None]:
    """Keep package-mode outcomes for the targets of one command (one expansion of its
    paths); forgotten when it closes, so that nothing outlives the files it was read from."""
    _SCOPES[0] += 1
    try:
        yield
    finally:
        _SCOPES[0] -= 1
        if not _SCOPES[0]:
            _FINISHED.clear()
            PLAIN_STARTS.clear()
            if not _KEPT[0]:
                close_zygotes()


@contextlib.contextmanager
def keep_zygotes() -> Iterator[None]:
    """Fork every probe that can be forked from a zygote, and keep the zygotes between the
    commands run inside (a process that runs many checks against one unchanged framework
    install: the Python API in a loop, the test suite); they are closed when it closes. Each
    fork is still its own process with the real framework and loader: only the framework's
    import is shared (see :mod:`opdoctor.facts.probe.zygote`)."""
    _KEPT[0] += 1
    try:
        yield
    finally:
        _KEPT[0] -= 1
        if not _KEPT[0] and not _SCOPES[0]:
            close_zygotes()


def close_zygotes() -> None:
    """Stop every zygote this process started (and what its forks left running)."""
    while ZYGOTES:
        zygote = ZYGOTES.popitem()[1]
        if zygote.owner == os.getpid():
            zygote.close()


def scope_open() -> bool:
    """Whether a :func:`reuse_scope` is open."""
    return bool(_SCOPES[0])


def zygotes_kept() -> bool:
    """Whether a :func:`keep_zygotes` context is open."""
    return bool(_KEPT[0])


def package_key(req: ProbeRequest) -> str:
    """The key of a package-mode probe's outcome: every field but the library's path."""
    fields = {k: v for k, v in vars(req).items() if k not in ("path", "late")}
    return json.dumps(fields, sort_keys=True, default=str)


def any_finished() -> bool:
    """Whether an outcome is kept at all (a cheap test before computing a key)."""
    return bool(_SCOPES[0] and _FINISHED)


def finished(key: str) -> tuple[ProbeOutcome, ProbeOutcome | None] | None:
    """The outcome of the same package import run earlier for this command, or None."""
    return _FINISHED.get(key) if _SCOPES[0] else None


def remember(key: str, outcome: ProbeOutcome, first: ProbeOutcome | None) -> None:
    """Keep a package-mode probe's outcome for the package's other libraries (inside a
    :func:`reuse_scope` only)."""
    if _SCOPES[0]:
        _FINISHED[key] = (outcome, first)


def discard_prestarted() -> int:
    """Kill the prestarted probes no target adopted (the target was a broken file, or its
    check stopped early); returns how many there were."""
    count = len(_PRESTARTED)
    while _PRESTARTED:
        handle = _PRESTARTED.popitem()[1]
        handle.abandon()
    if not _SCOPES[0] and not _KEPT[0]:
        close_zygotes()  # warmed for a package whose command stopped before its scope
    return count
