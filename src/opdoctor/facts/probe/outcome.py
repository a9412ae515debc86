"""One typed outcome of the load probe, built from its event stream and the child's exit.

Every reader of the probe (the probe check, the import-chain check, the report sections) reads
these fields; nobody looks events up by name. :attr:`ProbeOutcome.state` is the single answer to
"what happened", in the order that decides it: killed by opdoctor's limits, the probe script's
own failure, a crash, then what the script reported.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from enum import Enum

from opdoctor.facts.probe import protocol as P
from opdoctor.facts.probe.ldtrace import LdTrace

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class ProbeState(str, Enum):
    """What happened in the probe process, as one value."""

    LOADED = "loaded"  # the load (or package import) succeeded
    LOAD_FAILED = "load failed"  # the load raised (dlopen error, import error …)
    FRAMEWORK_IMPORT_FAILED = "torch import failed"  # the environment is broken
    PRELOAD_FAILED = "preload failed"  # a --preload library failed first
    CRASHED = "crashed"  # killed by a signal before the probe finished
    EXITED = "exited"  # the process exited (exit() in an initialiser) before finishing
    TIMED_OUT = "timeout"  # killed at the wall-clock limit
    MEMORY_KILLED = "memory limit"  # killed at the RSS limit
    PROBE_ERROR = "probe error"  # the probe script itself raised: opdoctor's bug


@dataclass(frozen=True)
class Failure:
    """An exception reported by the probe."""

    type: str
    message: str
    traceback: str

    @classmethod
    def of(cls, data: Any) -> Failure | None:
        """From a protocol ``ErrorInfo`` (None when absent or malformed)."""
        if not isinstance(data, dict):
            return None
        return cls(str(data.get("type", "")), str(data.get("message", "")),
                   str(data.get("traceback", "")))

    def tail(self, n: int) -> list[str]:
        """The last ``n`` lines of the traceback."""
        return self.traceback.strip().splitlines()[-n:]


@dataclass(frozen=True)
class OpSeen:
    """One operator the dispatcher knows after the load."""

    name: str
    schema: str
    registered_at: str
    keys: tuple[str, ...]
    key_sites: dict[str, str]
    # The Meta kernel is torch.library.custom_op's stub, which raises until register_fake.
    meta_stub: bool = False


@dataclass(frozen=True)
class SmokeCall:
    """One ``--smoke`` call."""

    name: str
    ok: bool | None  # None: skipped
    detail: str  # the result's repr, the skip reason, or the error message
    error: Failure | None = None


# A warning as Python prints it: "…/file.py:33: UserWarning: …".
_WARNING = re.compile(r"\b(\w*Warning): ")


@dataclass(frozen=True)
class Swallowed:
    """An import that a try/except hid, retried by the probe."""

    target: str
    where: str
    error: Failure


@dataclass(frozen=True)
class TfKernel:
    """One kernel registration of a TensorFlow op."""

    device: str  # "CPU", "GPU" …
    label: str
    constraints: tuple[str, ...]  # "T=3,9" (attr=DataType enum values)


@dataclass(frozen=True)
class TfProbe:
    """What the TensorFlow probe saw after ``tf.load_op_library`` (or the package import)."""

    ops: tuple[str, ...]  # TF_GetOpList on the library's handle: the ops it registered
    kernels: dict[str, tuple[TfKernel, ...]]  # op → kernels (ops and watched names)
    registered_before: tuple[str, ...]  # watched op names already registered before the load
    registered_after: tuple[str, ...]  # watched op names registered after the load
    devices: tuple[str, ...]  # physical device types of the process
    preloads: tuple[tuple[str, tuple[str, ...]], ...]  # (--preload path, ops it registered)
    mapped_before: tuple[str, ...]  # shared objects mapped before the load
    # Package mode: TF_GetOpList of each of the package's libraries the import mapped (real
    # path → ops), so that the import, run once for all of them, tells each its own ops.
    ops_by_library: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def for_library(self, path: str) -> TfProbe:
        """This outcome as seen for another library of the same package import: its own op
        list (``ops_by_library``) in place of the library the probe was started for."""
        real = os.path.realpath(path)
        own = next((ops for lib, ops in self.ops_by_library if lib == real), None)
        return self if own is None else dataclasses.replace(self, ops=own)


def _tensorflow(raw: Any) -> TfProbe | None:
    """The ``tf_ops`` event as a :class:`TfProbe` (None when the event is absent)."""
    if not isinstance(raw, dict):
        return None

    def names(key: str) -> tuple[str, ...]:
        value = raw.get(key)
        return tuple(str(x) for x in value) if isinstance(value, list) else ()

    kernels: dict[str, tuple[TfKernel, ...]] = {}
    for op, ks in (raw.get("kernels") or {}).items():
        kernels[str(op)] = tuple(
            TfKernel(str(k.get("device", "")), str(k.get("label", "")),
                     tuple(str(c) for c in k.get("constraints", []) or []))
            for k in ks if isinstance(k, dict)) if isinstance(ks, list) else ()
    preloads = tuple((str(p.get("path", "")), tuple(str(o) for o in p.get("ops", []) or []))
                     for p in raw.get("preloads", []) or [] if isinstance(p, dict))
    by_library = tuple((str(lib), tuple(str(o) for o in ops)) for lib, ops in
                       (raw.get("ops_by_library") or {}).items() if isinstance(ops, list))
    return TfProbe(names("ops"), kernels, names("registered_before"),
                   names("registered_after"), names("devices"), preloads,
                   names("mapped_before"), by_library)


@dataclass(frozen=True)
class OpcheckTest:
    """One ``torch.library.opcheck`` test of one op (``--opcheck``)."""

    test: str
    ok: bool
    skipped: str = ""  # why it did not really test anything ("" when it did)
    error_type: str = ""
    message: str = ""


@dataclass(frozen=True)
class CompileOp:
    """The compile readiness of one op, as the probe observed it (``--opcheck``)."""

    name: str
    keys: tuple[str, ...]
    custom_op: bool
    fake: bool | None  # None: could not be decided
    fake_via: str
    pystub: str
    pystub_error: str
    fake_after_pystub: bool | None  # None: no pystub to import, or a fake kernel already
    autograd: bool | None
    autograd_via: str
    skipped: str  # why opcheck did not run for this op
    args: str
    tests: tuple[OpcheckTest, ...]


@dataclass(frozen=True)
class ProbeOutcome:
    """Everything the probe established, typed."""

    state: ProbeState
    stage: str  # the last stage the probe entered
    returncode: int | None
    signal_name: str
    stdout: str
    stderr: str
    trace: LdTrace
    seconds: float
    python: str = ""
    framework_version: str | None = None
    framework_cuda: str | None = None
    load_error: Failure | None = None
    load_cause: Failure | None = None  # __cause__/__context__ of the load error
    framework_error: Failure | None = None
    # the framework whose import failed (FRAMEWORK_IMPORT_FAILED): "torch", "tensorflow" …
    failed_framework: str = ""
    framework_cause: Failure | None = None  # its __cause__ (a backend torch auto-loads)
    preload_path: str = ""
    preload_error: Failure | None = None
    probe_error: Failure | None = None
    mapped: tuple[str, ...] = ()
    imported: tuple[tuple[str, str], ...] = ()  # (module, file)
    new_ops: tuple[str, ...] = ()
    new_classes: tuple[str, ...] = ()  # TorchBind classes the load registered (ns.Class)
    ops: tuple[OpSeen, ...] = ()
    inspected: bool = False  # the registry was listed after the load
    dangling: tuple[str, ...] = ()
    smoke: tuple[SmokeCall, ...] = ()
    swallowed: tuple[Swallowed, ...] = ()
    retried: bool = False  # the swallowed imports were retried (``swallowed``: those failing)
    finished: bool = False  # the probe reached a final event
    # TensorFlow (probe_tf.py): what TF_GetOpList listed on the library's own handle, and
    # the kernels per device of each op; see TfProbe.
    tensorflow: TfProbe | None = None
    compile_checked: bool = False  # the --opcheck stage reported
    compile_ops: tuple[CompileOp, ...] = ()
    opcheck_seconds: float = 0.0
    # Of ``seconds``, how long the child waited for opdoctor to send the late request fields
    # (the import-chain walk of a package can outlast the framework's import).
    waited_seconds: float = 0.0
    # Forked from a child that had imported the framework already (zygote.py): the module
    # probes of one command share one framework import.
    forked: bool = False
    opcheck_error: Failure | None = None  # the opcheck stage itself raised (opdoctor's bug)
    # Package mode: ctypes loads that failed during the import (path, the package's line that
    # asked for it, the loader's error), caught by the package or not.
    failed_loads: tuple[tuple[str, str, str], ...] = ()

    def maps(self, *files: str) -> bool:
        """Whether the probe's process mapped one of ``files`` (compared by real path): the
        real load reached that library, whatever the static view says."""
        if not self.mapped:
            return False
        real = {os.path.realpath(m) for m in self.mapped}
        return any(os.path.realpath(f) in real for f in files)
    # MindSpore AOT (probe_ms.py): the last ms_aot event as sent (see protocol.MS_AOT).
    mindspore: dict[str, Any] | None = None

    def printed_load_failures(self, path: str) -> tuple[Swallowed, ...]:
        """Loads of ``path`` that the package's import tried, saw fail and only printed
        (tensorflow-io: a helper turns the failed ``tf.load_op_library`` into an exception the
        import catches into a ``UserWarning`` and goes on): each output line that names the
        library's path (as given or resolved) together with the dynamic loader's error, on the
        line or one of the two before it (a warning's first line names the file it tried, the
        next quotes dlerror, which names only a missing dependency). A file name alone is not
        enough: xformers ships two ``_C.so``. The caller asks only when the import worked
        without mapping the library."""
        from opdoctor.facts.loaderror import loader_error

        names = {path, os.path.realpath(path)}
        out: list[Swallowed] = []
        for stream in (self.stderr, self.stdout):
            lines = stream.splitlines()
            for i, line in enumerate(lines):
                if loader_error(line) is None or not any(
                        n in ln for n in names for ln in lines[max(0, i - 2):i + 1]):
                    continue
                # The warning's own first line ("…/__init__.py:33: UserWarning: …") when the
                # loader's words are on a continuation line of it.
                head = next((lines[j] for j in range(i, max(-1, i - 3), -1)
                             if _WARNING.search(lines[j])), "")
                kind = m.group(1) if (m := _WARNING.search(head)) else "output"
                where = f": {head.strip()[:160]}" if head else ""
                out.append(Swallowed(path, f"the package's import, which printed it{where}",
                                     Failure(kind, line.strip()[:600], "")))
        return tuple(dict.fromkeys(out))

    def caught_load_failures(self, path: str) -> tuple[Swallowed, ...]:
        """Loads of ``path`` that the package's import asked ctypes (or
        ``torch.ops.load_library``) for and that failed, seen as they happened: the package
        caught the error, since its import went on (xformers prints a banner naming no
        file)."""
        names = {path, os.path.realpath(path)}
        return tuple(dict.fromkeys(
            Swallowed(path, "the package's import, which caught it" +
                      (f" ({os.path.basename(os.path.dirname(where))}/"
                       f"{os.path.basename(where)})" if where else ""),
                      Failure("OSError", error, ""))
            for p, where, error in self.failed_loads
            if p in names or os.path.realpath(p) in names))

    @property
    def load_message(self) -> str:
        """The load error's message, its cause first (" | "-joined); "" when it loaded."""
        if self.load_error is None:
            return ""
        msgs = [self.load_error.message]
        if self.load_cause is not None:
            msgs.insert(0, self.load_cause.message)
        return " | ".join(m for m in msgs if m)


def _ops(raw: Any) -> tuple[OpSeen, ...]:
    out = []
    for o in raw if isinstance(raw, list) else []:
        if not isinstance(o, dict):
            continue
        sites = o.get("key_sites") if isinstance(o.get("key_sites"), dict) else {}
        out.append(OpSeen(str(o.get("name", "")), str(o.get("schema", "")),
                          str(o.get("registered_at", "")),
                          tuple(str(k) for k in o.get("keys", []) or []),
                          {str(k): str(v) for k, v in (sites or {}).items()},
                          o.get("meta_stub") is True))
    return tuple(out)


def _smoke(raw: Any) -> tuple[SmokeCall, ...]:
    out = []
    for r in raw if isinstance(raw, list) else []:
        if not isinstance(r, dict):
            continue
        err = Failure.of(r.get("error"))
        ok = r.get("ok")
        detail = (str(r.get("skipped", "")) if ok is None else
                  str(r.get("result", "")) if ok else (err.message if err else ""))
        out.append(SmokeCall(str(r.get("name", "")), ok if isinstance(ok, bool) else None,
                             detail, err))
    return tuple(out)


def _opt_bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _compile_ops(raw: Any) -> tuple[CompileOp, ...]:
    out = []
    for o in raw if isinstance(raw, list) else []:
        if not isinstance(o, dict):
            continue
        tests = tuple(OpcheckTest(str(t.get("test", "")), bool(t.get("ok")),
                                  str(t.get("skipped", "")), str(t.get("type", "")),
                                  str(t.get("message", "")))
                      for t in o.get("tests", []) or [] if isinstance(t, dict))
        out.append(CompileOp(
            str(o.get("name", "")), tuple(str(k) for k in o.get("keys", []) or []),
            bool(o.get("custom_op")), _opt_bool(o.get("fake")), str(o.get("fake_via", "")),
            str(o.get("pystub", "")), str(o.get("pystub_error", "")),
            _opt_bool(o.get("fake_after_pystub")), _opt_bool(o.get("autograd")),
            str(o.get("autograd_via", "")), str(o.get("skipped", "")), str(o.get("args", "")),
            tests))
    return tuple(out)


def build_outcome(events: list[dict[str, Any]], returncode: int | None, signal_name: str,
                  timed_out: bool, memory_killed: bool, stdout: str, stderr: str,
                  trace: LdTrace, seconds: float) -> ProbeOutcome:
    """Fold the event stream and the child's exit into one :class:`ProbeOutcome`."""
    last: dict[str, dict[str, Any]] = {}
    stage = "start"
    for e in events:
        name = str(e.get("event", ""))
        last[name] = e
        if name == P.STAGE:
            stage = str(e.get("stage", stage))
    finished = any(n in last for n in P.FINAL)
    fw = last.get(P.FRAMEWORK, {})
    pre = last.get(P.PRELOAD_FAILED, {})
    failed = last.get(P.LOAD_FAILED, {})
    swallowed = tuple(
        Swallowed(str(h.get("target", "")), str(h.get("where", "")), err)
        for h in last.get(P.HIDDEN, {}).get("errors", []) or []
        if isinstance(h, dict) and (err := Failure.of(h.get("error"))) is not None)
    probe_error = Failure.of(last.get(P.PROBE_ERROR, {}).get("error"))
    if timed_out:
        state = ProbeState.TIMED_OUT
    elif memory_killed:
        state = ProbeState.MEMORY_KILLED
    elif probe_error is not None:
        state = ProbeState.PROBE_ERROR
    elif signal_name and not finished:
        state = ProbeState.CRASHED
    elif P.FRAMEWORK_IMPORT_FAILED in last:
        state = ProbeState.FRAMEWORK_IMPORT_FAILED
    elif P.PRELOAD_FAILED in last:
        state = ProbeState.PRELOAD_FAILED
    elif P.LOAD_FAILED in last:
        state = ProbeState.LOAD_FAILED
    elif P.LOADED in last:
        state = ProbeState.LOADED
    elif signal_name:
        state = ProbeState.CRASHED
    else:
        state = ProbeState.EXITED
    ops_event = last.get(P.OPS, {})
    return ProbeOutcome(
        state=state, stage=stage, returncode=returncode, signal_name=signal_name,
        stdout=stdout, stderr=stderr, trace=trace, seconds=seconds,
        python=str(last.get(P.START, {}).get("python", "")),
        framework_version=fw.get("version"), framework_cuda=fw.get("cuda"),
        load_error=Failure.of(failed.get("error")), load_cause=Failure.of(failed.get("cause")),
        framework_error=Failure.of(last.get(P.FRAMEWORK_IMPORT_FAILED, {}).get("error")),
        failed_framework=str(last[P.FRAMEWORK_IMPORT_FAILED].get("framework") or "torch")
        if P.FRAMEWORK_IMPORT_FAILED in last else "",
        framework_cause=Failure.of(last.get(P.FRAMEWORK_IMPORT_FAILED, {}).get("cause")),
        preload_path=str(pre.get("path", "")), preload_error=Failure.of(pre.get("error")),
        probe_error=probe_error,
        mapped=tuple(str(x) for x in last.get(P.MAPPED, {}).get("libraries", []) or []),
        imported=tuple((str(m.get("module", "")), str(m.get("file", "")))
                       for m in last.get(P.IMPORTED, {}).get("modules", []) or []
                       if isinstance(m, dict)),
        new_ops=tuple(str(x) for x in ops_event.get("new", []) or []),
        new_classes=tuple(str(x) for x in ops_event.get("classes", []) or []),
        ops=_ops(ops_event.get("ops")), inspected=P.OPS in last,
        dangling=tuple(str(x) for x in last.get(P.DANGLING, {}).get("impls", []) or []),
        smoke=_smoke(last.get(P.SMOKE, {}).get("results")),
        swallowed=swallowed, retried=P.HIDDEN in last, finished=finished,
        tensorflow=_tensorflow(last.get(P.TF_OPS)),
        mindspore=last.get(P.MS_AOT) if isinstance(last.get(P.MS_AOT), dict) else None,
        compile_checked=P.COMPILE in last,
        compile_ops=_compile_ops(last.get(P.COMPILE, {}).get("ops")),
        opcheck_seconds=float(last.get(P.COMPILE, {}).get("seconds", 0.0) or 0.0),
        waited_seconds=float(last.get(P.LATE, {}).get("waited", 0.0) or 0.0),
        forked=bool(last.get(P.START, {}).get("forked", False)),
        opcheck_error=Failure.of(last.get(P.COMPILE, {}).get("error")),
        failed_loads=tuple((str(f.get("path", "")), str(f.get("where", "")),
                            str(f.get("error", "")))
                           for f in last.get(P.FAILED_LOADS, {}).get("loads", []) or []
                           if isinstance(f, dict)))
