"""The body of ``opdoctor fleet``: the normal check on every node of a distributed job, gathered
on rank 0 over ``torch.distributed``, grouped by fingerprint, with what differs.

One rank's path: detect the launcher (:mod:`opdoctor.fleet.env`) → in a background thread,
import ``torch.distributed`` and join the rendezvous store while the main thread runs the
check (its load probe is a child process, so a crashing library cannot take the rank down) →
fingerprint (:mod:`opdoctor.fleet.fingerprint`) → gather on rank 0
(:mod:`opdoctor.fleet.gather`) → group (:mod:`opdoctor.fleet.group`) → render
(:mod:`opdoctor.fleet.render`) → every rank exits with the fleet's code.

One check per node: a rank whose ``LOCAL_RANK`` (``SLURM_LOCALID``, ``OMPI_COMM_WORLD_LOCAL_RANK``,
``MPI_LOCALRANKID``) is 0, or unknown, checks its node; the other local ranks reuse that result
when their node identity and load-relevant environment (:func:`share_key`) are the same, and
check for themselves when they differ or when their node's checking rank does not show up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from opdoctor.cli.commands import (
    STATIC_TIMEOUT,
    AnalysisTimeout,
    _on_alarm,
    build_options,
    report_outputs,
)
from opdoctor.cli.errors import Exit, UsageProblem
from opdoctor.facts import CheckOptions
from opdoctor.facts.hashcache import HashCache
from opdoctor.fleet.env import LauncherError, World, detect_world
from opdoctor.fleet.fingerprint import ENV_KEYS, env_facts, gpu_facts, host_facts
from opdoctor.model import CheckStatus, Report, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

DEFAULT_GATHER_TIMEOUT = 180.0


@dataclasses.dataclass(frozen=True)
class FleetArgs:
    """What ``opdoctor fleet`` was asked, besides the check settings."""

    paths: list[str]
    given: dict[str, Any]  # check settings given on the command line (None when not given)
    config: str | None
    verbose: bool
    fingerprint_only: bool
    fail_on_difference: bool
    gather_timeout: float
    node_id: str | None


class _Joiner(threading.Thread):
    """Imports torch.distributed and joins the store while the main thread checks."""

    def __init__(self, world: World, timeout: float, start: float) -> None:
        super().__init__(name="opdoctor-fleet-join", daemon=True)
        from opdoctor.fleet.gather import Exchange

        self.exchange = Exchange(world, timeout, start)
        self.error: BaseException | None = None
        self.leader: tuple[str, str] | None = None  # (node, share key) to publish
        self.ready = threading.Event()

    def run(self) -> None:
        try:
            import torch.distributed as dist

            if not dist.is_available():
                raise RuntimeError("this torch build has no torch.distributed")
            self.exchange.connect(dist)
            w = self.exchange.world
            self.exchange.announce({"hostname": w.hostname, "node": w.node,
                                    "checks": self.leader is not None})
            if self.leader is not None:
                self.exchange.publish_share(*self.leader, w.rank)
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.ready.set()


def _prepare_torch_env(world: World) -> None:
    """Quiet c10d's C++ warnings (the store's connection retries).

    Set in this process only: the check sees the environment captured before this.
    """
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")


# Variables that change what an interpreter imports besides PYTHONPATH (compared for sharing
# a check, not reported: ENV_KEYS are).
INTERPRETER_KEYS = ("PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "HOME",
                    "PYTHONSAFEPATH")


def share_key(world: World, options: CheckOptions, paths: list[str], environ: dict[str, str],
              fingerprint_only: bool) -> str:
    """What must be equal for two ranks to share one check: node (and host boot id, mount
    namespace), the interpreter, the load-relevant environment (not ``CUDA_VISIBLE_DEVICES``,
    which differs per local rank by design), working directory, targets (paths and the files'
    identity) and options."""
    opts = dataclasses.replace(options, env=None)
    # Two containers may share a host name: the kernel's boot id tells their hosts apart.
    boot = ""
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id",
                                            encoding="ascii") as fh:
        boot = fh.read().strip()
    # The interpreter, the filesystem it sees and the targets' identity on it: a local rank
    # in another venv, or in a container of its own on the same host (another mount
    # namespace), was "all agree" with local rank 0's check (survey 16's P2).
    mnt = ""
    with contextlib.suppress(OSError):
        mnt = os.readlink("/proc/self/ns/mnt")
    python = options.python or sys.executable
    files: list[list[int] | None] = []
    for p in paths:
        try:
            st = os.stat(p)
            files.append([st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns])
        except OSError:
            files.append(None)
    parts = [world.node, boot, mnt, os.getcwd(), [os.path.abspath(p) for p in paths], files,
             python, os.path.realpath(python), sys.prefix, repr(opts), fingerprint_only,
             {k: environ.get(k) for k in (*ENV_KEYS, *INTERPRETER_KEYS)
              if k != "CUDA_VISIBLE_DEVICES"}]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()
                          ).hexdigest()[:32]


def _verdict(report: Report | None, threshold: Severity, state: str = "", summary: str = "",
             code: str = "") -> dict[str, Any]:
    """The rank's verdict on one target as plain data."""
    if report is None:
        return {"state": state, "cause": 4 if state == "input error" else 0,
                "codes": [code] if code else [], "summary": summary,
                "fails": state not in ("not checked",), "internal": state == "crashed"}
    d = report.diagnosis
    internal = any(c.status is CheckStatus.FAILED for c in report.checks)
    summary, fix = d.summary, ""
    if d.root_findings:
        first = d.root_findings[0]
        more = f" (+{len(d.root_findings) - 1} more)" if len(d.root_findings) > 1 else ""
        summary = f"cause {int(first.cause)} — {first.cause.title}: {first.message}{more}"
        fix = first.fix
    return {"state": "clean" if d.cause == 0 else "findings", "cause": d.cause,
            "codes": [f.code for f in d.root_findings], "summary": summary, "fix": fix,
            "fails": report.fails(threshold), "internal": internal}


def _check_targets(args: FleetArgs, values: dict[str, Any], options: CheckOptions,
                   registry: Any, hashes: HashCache) -> tuple[list[dict[str, Any]],
                                                              list[dict[str, Any]]]:
    """Run the normal check (or only the fingerprint) on every target: (targets, reports)."""
    from opdoctor.checks.deps import tree_section
    from opdoctor.facts import Facts
    from opdoctor.facts.inputfile import InputError
    from opdoctor.fleet.fingerprint import dependency_list
    from opdoctor.pipeline import Selection, run_check
    from opdoctor.report import RenderContext
    from opdoctor.report.json_format import report_dict
    from opdoctor.targets import WheelError, expand

    threshold = Severity(values["fail-on"])
    overrides = {code: Severity(level) for code, level in values["severity"].items()}
    selection = Selection(tuple(values["select"]), tuple(values["ignore"]))
    ctx = RenderContext(registry.catalog, threshold, 0)
    targets: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []

    def add(display: str, path: str, verdict: dict[str, Any],
            deps: list[tuple[str, str | None, str]], ops: dict[str, str] | None = None
            ) -> None:
        targets.append({"target": display, "path": os.path.abspath(path), "verdict": verdict,
                        "deps": [[n, p, None] for n, p, _rule in deps]})
        if ops is not None:
            targets[-1]["ops"] = ops

    try:
        with expand(args.paths, options) as found:
            if not found:
                add(", ".join(args.paths), args.paths[0] if args.paths else ".",
                    _verdict(None, threshold, "input error", "no shared library found in "
                             f"{', '.join(args.paths)}", "OD401"), [])
            for t in found:
                if args.fingerprint_only:
                    facts = Facts(t.path, t.options)
                    try:
                        section = None if facts.is_package_dir or facts.blocker else \
                            tree_section(facts.process.tree, facts.process.context)
                        verdict = _verdict(None, threshold, "not checked",
                                           "--fingerprint-only: the check did not run")
                    except InputError as exc:
                        section, verdict = None, _verdict(None, threshold, "input error",
                                                          str(exc), exc.code)
                    add(t.display, t.path, verdict, dependency_list(section))
                    continue
                signal.setitimer(signal.ITIMER_REAL, STATIC_TIMEOUT + t.options.timeout)
                try:
                    report = run_check(t.path, t.options, selection=selection,
                                       registry=registry, overrides=overrides,
                                       display=t.display)
                except InputError as exc:
                    add(t.display, t.path, _verdict(None, threshold, "input error", str(exc),
                                                    exc.code), [])
                    continue
                except AnalysisTimeout:
                    add(t.display, t.path, _verdict(
                        None, threshold, "timeout", f"analysis exceeded "
                        f"{STATIC_TIMEOUT + t.options.timeout:g} s"), [])
                    continue
                except Exception as exc:  # one rank's crash is its verdict, not the fleet's
                    add(t.display, t.path, _verdict(
                        None, threshold, "crashed",
                        f"internal error: {type(exc).__name__}: {exc}"), [])
                    continue
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                add(t.display, t.path, _verdict(report, threshold),
                    dependency_list(report.sections.get("dependencies")), _probed_ops(report))
                reports.append(report_dict(report, ctx))
    except WheelError as exc:
        add(", ".join(args.paths), args.paths[0], _verdict(None, threshold, "input error",
                                                           str(exc), "OD405"), [])
    # Bytes of every target and resolved dependency (cached by stat identity, parallel).
    paths = [t["path"] for t in targets] + [d[1] for t in targets for d in t["deps"] if d[1]]
    sums = hashes.many(paths)
    for item in targets:
        item["sha256"] = sums.get(item["path"])
        try:
            item["size"] = os.stat(item["path"]).st_size if os.path.isfile(item["path"]) \
                else None
        except OSError:
            item["size"] = None
        for d in item["deps"]:
            d[2] = sums.get(d[1]) if d[1] else None
    return targets, reports


def _probed_ops(report: Report) -> dict[str, str] | None:
    """The ops the rank's probe saw registered after the load, each with its dispatch keys
    (None when no probe loaded the library). The same bytes can register differently: a
    library that dlopen()s its CUDA kernels' plugin registers [CPU] alone on a node without
    it — no file or dependency hash shows that (survey 16's P6)."""
    probe = report.sections.get("probe") or {}
    if not probe.get("ran") or probe.get("outcome") != "loaded":
        return None
    return {str(o["name"]): ", ".join(sorted(map(str, o.get("keys", []))))
            for o in probe.get("ops", [])}


def _own_record(args: FleetArgs, values: dict[str, Any], options: CheckOptions,
                registry: Any, world: World, environ: dict[str, str],
                gpus: Future[dict[str, str]]) -> dict[str, Any]:
    """This rank checks (or fingerprints) for itself."""
    from opdoctor.facts.interp import InterpreterError, inspect_interpreter

    start = time.monotonic()
    hashes = HashCache()
    targets, reports = _check_targets(args, values, options, registry, hashes)
    hashes.save()
    try:
        interp = inspect_interpreter(options.python,
                                     env=environ if options.env is not None else None)
    except InterpreterError:
        interp = None
    return _identity(world, environ) | {
        "checked_by": world.rank, "mode": "fingerprint" if args.fingerprint_only else "check",
        "host": host_facts(interp, gpus.result()), "targets": targets, "reports": reports,
        "seconds": round(time.monotonic() - start, 3)}


def _identity(world: World, environ: dict[str, str]) -> dict[str, Any]:
    return {"rank": world.rank, "local_rank": world.local_rank, "node": world.node,
            "hostname": world.hostname, "pid": os.getpid(), "env": env_facts(environ)}


def _settings(args: FleetArgs) -> dict[str, Any]:
    from opdoctor.cli.settings import ConfigError, find_config, merge, read_config

    try:
        if args.config:
            table = read_config(args.config)
            if table is None:
                raise ConfigError(f"{args.config}: no [tool.opdoctor] table")
            found: tuple[str, dict[str, Any]] | None = (args.config, table)
        else:
            found = find_config(os.getcwd())
        # A bad value on the command line (-f xml, --timeout -1) is a usage error as in
        # `check` (exit 3), not an internal one (survey 16's P5).
        values, _sources = merge(args.given, found)
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None
    return values


def fleet_command(args: FleetArgs) -> int:
    """Check this rank's node, gather on rank 0, report; returns the fleet's exit code."""
    start = time.monotonic()
    environ = dict(os.environ)  # the job's environment, before this command adds anything
    try:
        world = detect_world(environ, args.node_id)
    except LauncherError as exc:
        raise UsageProblem(str(exc)) from None
    if args.gather_timeout <= 0:
        raise UsageProblem("--gather-timeout must be positive")
    from opdoctor.checks import load_registry

    registry = load_registry()
    values = _settings(args)
    if not args.paths and not values["package"]:
        raise UsageProblem("give at least one library, directory or wheel to check, or "
                           "--package NAME")
    # Rank 0 writes the reports: only its files are checked (another node may lack the
    # directory); every rank refuses an unknown format.
    outputs = report_outputs(values, list(args.paths), check_paths=world.rank == 0)
    for level in [values["fail-on"], *values["severity"].values()]:
        if level not in ("error", "warning", "info"):
            raise UsageProblem(f"{level!r} is not error | warning | info")
    options = build_options(values, registry)
    if options.env is None:  # pin the job's environment: the fleet adds variables to its own
        options = dataclasses.replace(options, env=tuple(sorted(environ.items())))
    job_env = dict(options.env or ())
    key = share_key(world, options, args.paths, job_env, args.fingerprint_only)
    leader = world.alone or world.local_rank in (None, 0)

    joiner: _Joiner | None = None
    if not world.alone:
        _prepare_torch_env(world)
        joiner = _Joiner(world, args.gather_timeout, start)
        if leader:
            joiner.leader = (world.node, key)
        joiner.start()
    pool = ThreadPoolExecutor(max_workers=1)
    gpus = pool.submit(gpu_facts)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    old_term = signal.getsignal(signal.SIGTERM)
    if joiner is not None and world.rank == 0:
        signal.signal(signal.SIGTERM, _on_term)
    record_box: list[dict[str, Any]] = []
    try:
        try:
            return _fleet_body(args, values, outputs, options, registry, world, job_env, key,
                               leader, joiner, gpus, record_box)
        except _Terminated:
            # torchrun's agent and Hydra stop every rank when one exits non-zero (a node
            # without torch exits 2, an OOM kill): report what there is (survey 16's P3).
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            record = record_box[0] if record_box else None
            return _terminated_report(args, values, outputs, world, registry, joiner, record)
    finally:
        signal.signal(signal.SIGALRM, old)
        if joiner is not None and world.rank == 0:
            signal.signal(signal.SIGTERM, old_term)
        pool.shutdown(wait=False)


class _Terminated(BaseException):
    """Rank 0 got the launcher's SIGTERM (not an Exception: no handler of a check stops it)."""


def _on_term(signum: int, frame: Any) -> None:
    raise _Terminated


def _terminated_report(args: FleetArgs, values: dict[str, Any],
                       outputs: list[tuple[Any, str | None]], world: World, registry: Any,
                       joiner: _Joiner | None, record: dict[str, Any] | None) -> int:
    """Rank 0's report when the launcher stopped the job before the roster closed."""
    why = "the launcher stopped the job (SIGTERM: another rank exited, or the job was " \
        "cancelled)"
    ex = joiner.exchange if joiner is not None and joiner.ready.wait(5) and \
        joiner.error is None else None
    if ex is not None:
        gathered = ex.partial(record, why)
    else:
        from opdoctor.fleet.gather import Gathered
        from opdoctor.fleet.group import Missing

        gathered = Gathered([record] if record else [], [
            Missing(r, f"no word from it when {why}") for r in range(world.size)
            if r or record is None], 0.0, 0.0)
    return _report(args, values, outputs, world, registry, gathered.records, gathered.missing,
                   {"waiting": 0.0, "gather": 0.0})


def _fleet_body(args: FleetArgs, values: dict[str, Any], outputs: list[tuple[Any, str | None]],
                options: CheckOptions, registry: Any, world: World, job_env: dict[str, str],
                key: str, leader: bool, joiner: _Joiner | None, gpus: Any,
                record_box: list[dict[str, Any]]) -> int:
    """Check this rank (or reuse its node's check), gather, report. ``record_box`` gets this
    rank's record as soon as it exists (for the report of a job stopped after that)."""
    record = _own_record(args, values, options, registry, world, job_env, gpus) \
        if leader else None
    if record is not None:
        record_box.append(record)
    if joiner is None:
        assert record is not None
        return _report(args, values, outputs, world, registry, [record], [], {})
    joiner.join()
    if joiner.error is not None:
        return _gather_failed(world, joiner.error)
    ex = joiner.exchange
    if record is None:
        share = ex.node_share(world.node, min(60.0, args.gather_timeout / 3))
        checker = int(share["rank"]) if share is not None and share["key"] == key else \
            ex.claim_check(world.node, key)  # another environment: one check for it
        if checker != world.rank:
            record = _identity(world, job_env) | {
                "checked_by": checker, "host": None, "targets": None,
                "reports": [], "mode": "shared", "seconds": 0.0}
        else:  # the first of this node's ranks in this environment: check here
            record = _own_record(args, values, options, registry, world, job_env, gpus)
        record_box.append(record)
    follower_wait = args.gather_timeout + STATIC_TIMEOUT + options.timeout + 30
    stopped = False
    try:
        try:
            gathered = ex.gather(record, follower_wait)
            if gathered is None:
                return ex.share_code(None)
        except Exception as exc:  # rendezvous and transport failures: one line, exit 2
            return _gather_failed(world, exc)
        t0 = time.monotonic()
        try:
            code = _report(args, values, outputs, world, registry, gathered.records,
                           gathered.missing, {"waiting": gathered.seconds_waiting,
                                              "gather": gathered.seconds_gather}, t0)
        except _Terminated:
            raise
        except BaseException:
            # The other ranks wait for the code: send "internal error", then let the
            # crash handler report this one.
            with contextlib.suppress(Exception):
                ex.share_code(int(Exit.INTERNAL))
            raise
        try:
            return ex.share_code(code)
        except Exception:  # the others left already: rank 0's verdict stands
            return code
    except _Terminated:
        stopped = True  # the store stays open: the report of what there is reads it
        raise
    finally:
        if not stopped:
            ex.close()


def _gather_failed(world: World, exc: BaseException) -> int:
    from opdoctor.fleet.gather import GatherError

    text = str(exc) if isinstance(exc, GatherError) else \
        f"rank {world.rank}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if isinstance(exc, ImportError):
        text = f"rank {world.rank}: torch.distributed cannot be imported ({exc}): the fleet " \
               "needs torch in the interpreter that runs opdoctor"
    sys.stderr.write(f"opdoctor fleet: error: {text}\n")
    return int(Exit.BAD_INPUT)


def _report(args: FleetArgs, values: dict[str, Any], outputs: list[tuple[Any, str | None]],
            world: World, registry: Any,
            records: list[dict[str, Any]], missing: list[Any], timing: dict[str, float],
            t0: float | None = None) -> int:
    """Rank 0: group, render, return the exit code."""
    from opdoctor.fleet.group import summarise
    from opdoctor.fleet.render import FleetContext, render

    t0 = t0 if t0 is not None else time.monotonic()
    summary = summarise(records, world.size, missing, args.fail_on_difference)
    timing["group"] = time.monotonic() - t0
    # Files first: a closed stdout (`| head`) must not cost the report files.
    for form, output in sorted(outputs, key=lambda o: o[1] is None):
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            color = form.value == "text" and not output and not os.environ.get("NO_COLOR") \
                and bool(getattr(out, "isatty", lambda: False)())
            ctx = FleetContext(registry.catalog, Severity(values["fail-on"]), world,
                               args.fail_on_difference, color, args.verbose, timing)
            render(form, summary, ctx, out)
        finally:
            if output:
                out.close()
    return summary.exit_code
