"""Starting and supervising the load probe: a time-, CPU- and memory-limited child process of
the target interpreter, in its own process group, that opdoctor survives whatever the library
does (crash, abort, hang, runaway allocation).

Events come back as JSON lines over a dedicated pipe (not stdout, which the library may write
to); glibc's own account of the load comes from ``LD_DEBUG=libs,versions`` written to a
temporary ``LD_DEBUG_OUTPUT`` file.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from opdoctor.facts.probe.ldtrace import parse_ld_debug
from opdoctor.facts.probe.outcome import ProbeOutcome, build_outcome


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
    opcheck: bool = False  # compile readiness + torch.library.opcheck of the new ops


def _note_start(path: str) -> None:
    """Append the target to ``$OPDOCTOR_PROBE_LOG`` when set: the test suite uses it to prove
    that tests not marked ``probe`` start no probe interpreter (``pytest -m "not probe"``)."""
    log = os.environ.get("OPDOCTOR_PROBE_LOG")
    if log:
        with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as fh:
            fh.write(path + "\n")


def _limits(cpu_seconds: int) -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash must not write a core file


class ProbeHandle:
    """A running probe; :meth:`wait` returns its result."""

    def __init__(self, req: ProbeRequest) -> None:
        self.req = req
        self.tmp = tempfile.mkdtemp(prefix="opdoctor-probe-")
        script = str(resources.files("opdoctor").joinpath("facts/probe/probe_script.py"))
        payload: dict[str, Any] = {"path": req.path, "package": req.package, "torch": req.torch,
                                   "preload": list(req.preload), "ops": list(req.ops),
                                   "smoke": req.smoke, "hidden": req.hidden}
        if req.opcheck:
            # Half of the opcheck's own --timeout for the tests; later ops are marked skipped.
            payload.update(opcheck=True, opcheck_budget=req.timeout / 2)
        env = dict(req.env)
        env.update({"LD_DEBUG": "libs,versions",
                    "LD_DEBUG_OUTPUT": os.path.join(self.tmp, "ld"),
                    "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        rfd, wfd = os.pipe()
        self.start = time.monotonic()
        cpu = int(req.timeout * 2) + 10
        self.proc = subprocess.Popen(
            [req.python, script, str(wfd), json.dumps(payload)], pass_fds=(wfd,),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, start_new_session=True, preexec_fn=lambda: _limits(cpu),
            cwd=req.cwd or None)
        os.close(wfd)
        _note_start(req.path)
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, args=(rfd,), daemon=True)
        self._reader.start()

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

    def wait(self) -> ProbeOutcome:
        """Wait for the probe (bounded by its timeout and memory limit) and collect it all."""
        import psutil  # imported here: only a run with the probe pays for it

        timed_out = memory_killed = False
        # --opcheck gets its own --timeout on top: importing torch._dynamo alone takes seconds.
        deadline = self.start + self.req.timeout * (2 if self.req.opcheck else 1)
        out = err = b""
        try:
            ps = psutil.Process(self.proc.pid)
        except psutil.Error:
            ps = None
        while True:
            try:
                o, e = self.proc.communicate(timeout=0.2)
                out, err = out + (o or b""), err + (e or b"")
                break
            except subprocess.TimeoutExpired:
                pass
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
                o, e = self.proc.communicate()
                out, err = out + (o or b""), err + (e or b"")
                break
        self._kill()  # grandchildren left in the group
        self._reader.join(timeout=5)
        rc = self.proc.returncode
        sig = ""
        if rc is not None and rc < 0:
            try:
                sig = signal.Signals(-rc).name
            except ValueError:
                sig = f"signal {-rc}"
        trace = parse_ld_debug(os.path.join(self.tmp, f"ld.{self.proc.pid}"))
        shutil.rmtree(self.tmp, ignore_errors=True)
        return build_outcome(self.events, rc, sig, timed_out, memory_killed,
                             out.decode(errors="replace")[-8000:],
                             err.decode(errors="replace")[-8000:], trace,
                             time.monotonic() - self.start)


def start_probe(req: ProbeRequest) -> ProbeHandle:
    """Start the probe now; call ``wait()`` on the handle for the result."""
    return ProbeHandle(req)
