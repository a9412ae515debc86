"""The load probe: runs *inside the target interpreter*, in a child process opdoctor started.

It must not import opdoctor (the target interpreter may not have it): plain standard library
plus torch. Events are written as JSON lines to the file descriptor given on the command line,
flushed one by one, so that when the library crashes or hangs the parent still knows how far
the probe got. Usage:
    python probe_script.py FD '{"path": ..., "package": ..., "torch": true, "smoke": false,
                                "preload": [...], "ops": [...]}'
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# The shared protocol (event names), loaded by file path: the target interpreter need not have
# opdoctor installed, and a user module called "protocol" must not shadow ours.
_spec = importlib.util.spec_from_file_location(
    "_opdoctor_probe_protocol", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "protocol.py"))
assert _spec is not None and _spec.loader is not None
P: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)

class _Request(dict):  # type: ignore[type-arg]
    """The request. Its late fields (the library, what to preload, the swallowed imports to
    retry, the TensorFlow ops to watch) are what the parent computes while this child starts
    (the import-chain walk picks the library of a package; the op names are read from it): with
    ``"late": true`` they come as one JSON line on stdin, read at their first use, which is
    after the framework's import. Without them (EOF: the parent gave up) the probe stops with
    an error about itself, never a load of nothing blamed on the library."""

    LATE = ("path", "preload", "hidden", "tf_ops", "first")

    def _late(self, key: str) -> None:
        if key in self.LATE and super().pop("late", False):
            start = time.monotonic()
            line = sys.stdin.readline()
            # The wait is opdoctor's time, not the library's: reported apart.
            emit(P.LATE, waited=round(time.monotonic() - start, 3))
            try:
                extra = json.loads(line)
            except ValueError:
                raise RuntimeError("opdoctor sent no late request fields (path, preload, "
                                   f"hidden, tf_ops): {line[:200]!r}") from None
            self.update({k: v for k, v in extra.items() if k in self.LATE})

    def get(self, key: str, default: Any = None) -> Any:
        self._late(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._late(key)
        return super().__getitem__(key)


FD = int(sys.argv[1])
REQ = _Request(json.loads(sys.argv[2]))
_out = os.fdopen(FD, "w", buffering=1)


def emit(event: str, **data: Any) -> None:
    """Write one event line and flush it at once."""
    data["event"] = event
    data["t"] = round(time.monotonic(), 4)
    _out.write(json.dumps(data) + "\n")
    _out.flush()


def err(exc: BaseException) -> dict[str, str]:
    """An exception as JSON-ready data, with its traceback."""
    return {"type": type(exc).__name__, "message": str(exc),
            "traceback": traceback.format_exc()[-6000:]}


def op_details(torch: Any, name: str) -> dict[str, Any]:
    """Schema, registration site and dispatch keys of one op, from the dispatcher dump."""
    d: dict[str, Any] = {"name": name, "schema": "", "registered_at": "", "keys": [],
                         "key_sites": {}}
    try:
        dump = torch._C._dispatch_dump(name)
    except Exception as exc:
        d["dump_error"] = str(exc)
        return d
    for line in dump.splitlines():
        if line.startswith("schema:"):
            d["schema"] = line.split(":", 1)[1].strip()
        elif line.startswith("debug:"):
            d["registered_at"] = line.split("registered at", 1)[-1].strip()
        elif ": registered at " in line and not line.startswith(("name:", "alias")):
            key, rest = line.split(":", 1)
            d["keys"].append(key.strip())
            d["key_sites"][key.strip()] = rest.split("registered at", 1)[1].split("::")[0].strip()
    if "Meta" in d["keys"] and _custom_op_meta_stub(torch, name, d["keys"]):
        d["meta_stub"] = True
    return d


def _custom_op_meta_stub(torch: Any, name: str, keys: list[str]) -> bool:
    """Whether the op's Meta kernel is the one ``torch.library.custom_op`` registers for every
    op, which raises "There was no fake impl registered" until ``register_fake`` is called:
    a custom_op without a fake kernel by torch's own predicate (probe_compile.fake_kernel;
    an op that returns nothing gets a trivial fake)."""
    try:
        compile_mod = _compile_module()
        if compile_mod._opdef(torch, name) is None:
            return False
        has, _via = compile_mod.fake_kernel(torch, compile_mod._overload(torch, name), name,
                                            keys)
        return not has
    except Exception:  # torch without custom_op, or its internals changed: not provably a stub
        return False


_COMPILE_MODULE: list[Any] = []


def _compile_module() -> Any:
    """probe_compile.py, loaded once (the --opcheck stage and the op list both use it)."""
    if not _COMPILE_MODULE:
        _COMPILE_MODULE.append(_sibling("probe_compile.py"))
    return _COMPILE_MODULE[0]


def torch_owns(torch: Any, name: str, registered_at: str) -> bool:
    """Whether torch itself defines the op: registered from a file of torch's own modules
    (``quantized_decomposed_lib.define`` in torch/ao/…), or through ``torch.library.custom_op``
    by a function of torch's own modules. The registration API's own files (torch/library.py,
    torch/_library/) are where every package's ``torch.library.define``/``custom_op`` is
    recorded (bitsandbytes'): only custom_op's record of the defining function tells."""
    root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    site = registered_at.split("::")[0].strip().rsplit(":", 1)[0]
    if not os.path.isabs(site) or not os.path.abspath(site).startswith(root):
        return False
    rel = os.path.relpath(os.path.abspath(site), root)
    if rel != "library.py" and not rel.startswith("_library" + os.sep):
        return True
    try:
        from torch._library.custom_ops import OPDEFS
        fn = OPDEFS[name]._init_fn
        return bool(os.path.abspath(fn.__code__.co_filename).startswith(root))
    except Exception:  # not a custom_op, or torch changed its internals: not provably torch's
        return False


def smoke(torch: Any, name: str, schema: str) -> dict[str, Any]:
    """Call ops whose schema is simple tensor math on small CPU tensors."""
    args = schema[schema.find("(") + 1:schema.rfind(") ->")]
    values: list[Any] = []
    for a in [x.strip() for x in args.split(",") if x.strip()]:
        if a == "*":
            continue
        typ = a.split()[0]
        if typ == "Tensor":
            values.append(torch.ones(4))
        elif typ in ("float", "Scalar"):
            values.append(0.5)
        elif typ == "int":
            values.append(1)
        elif typ == "bool":
            values.append(True)
        else:
            return {"name": name, "skipped": f"argument type {typ}"}
    ns, op = name.split("::", 1)
    try:
        fn = getattr(getattr(torch.ops, ns), op.split(".")[0])
        res = fn(*values)
        return {"name": name, "ok": True, "result": repr(res)[:200]}
    except Exception as exc:
        return {"name": name, "ok": False, "error": err(exc)}


def mapped() -> list[str]:
    """Shared objects mapped in this process, in address order (Linux /proc/self/maps)."""
    out: list[str] = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6 and ".so" in parts[5]:
                    path = parts[5].strip()
                    if path not in out:
                        out.append(path)
    except OSError:
        pass
    return out


def imported_since(before: set[str]) -> list[dict[str, str]]:
    """Modules imported since ``before``, in import order, with their files."""
    out = []
    for name, mod in list(sys.modules.items()):
        if name in before:
            continue
        out.append({"module": name, "file": str(getattr(mod, "__file__", "") or "")})
    return out


def load_target(load: Callable[[str], Any], maps_before: list[str]) -> tuple[bool, Any]:
    """Load the request's target and report it; shared by the torch and TensorFlow branches.

    Imports ``REQ["package"]`` when given (as ``python -c "import pkg"`` would), otherwise
    calls ``load(REQ["path"])``. Emits the load stage, then LOADED or LOAD_FAILED (with the
    exception's cause), the libraries mapped since ``maps_before`` and, for a package, the
    modules the import brought in. Returns (True, what ``load`` returned; None for a package)
    or (False, None) when it failed.
    """
    emit(P.STAGE, stage="load", path=REQ["path"], package=REQ.get("package"))
    modules_before = set(sys.modules)
    result: Any = None
    ok = True
    failed_loads: list[dict[str, str]] = []
    try:
        if REQ.get("package"):
            _watch_failed_loads(failed_loads)
            import importlib
            # Model `python -c "import pkg"` run in the job's cwd: sys.path[0] is ''.
            if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
                sys.path[0] = ""
            for first in REQ.get("first", []) or []:  # what the package demands before it
                importlib.import_module(first)
            importlib.import_module(REQ["package"])
        else:
            result = load(REQ["path"])
    except BaseException as exc:
        cause = exc.__cause__ or exc.__context__
        emit(P.LOAD_FAILED, error=err(exc), cause=err(cause) if cause else None)
        ok = False
    else:
        emit(P.LOADED)
    emit(P.MAPPED, libraries=[m for m in mapped() if m not in maps_before])
    if REQ.get("package"):
        emit(P.IMPORTED, modules=imported_since(modules_before))
        if failed_loads:
            emit(P.FAILED_LOADS, loads=failed_loads)
    return ok, result


def _watch_failed_loads(into: list[dict[str, str]]) -> None:
    """Note every ctypes load (``torch.ops.load_library`` loads through ctypes too) that
    fails from here on: the path, the package's line that asked for it, the loader's error.
    The exception is re-raised unchanged: what the package does with it is the package's
    (xformers catches it and prints a version banner that names no file)."""
    import ctypes

    original = ctypes.CDLL.__init__
    if getattr(original, "_opdoctor_watch", False):
        return

    def init(self: Any, name: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(self, name, *args, **kwargs)
        except OSError as exc:
            where = ""
            for frame in reversed(traceback.extract_stack()[:-1]):
                parts = frame.filename.replace(os.sep, "/")
                if "/ctypes/" not in parts and "/torch/" not in parts:
                    where = f"{frame.filename}:{frame.lineno}"
                    break
            into.append({"path": os.path.abspath(name) if isinstance(name, str) and
                         os.sep in name else str(name), "where": where,
                         "error": str(exc)[:600]})
            raise

    init._opdoctor_watch = True  # type: ignore[attr-defined]
    ctypes.CDLL.__init__ = init  # type: ignore[method-assign]


def retry_hidden(torch: Any, load: Callable[[str], Any] | None = None) -> None:
    """Re-run the imports a try/except swallowed, to surface the hidden error. ``load``: how
    the framework loads a library (TensorFlow's branch passes tf.load_op_library's steps)."""
    errors = []
    for h in REQ.get("hidden", []):
        try:
            if not _reached(h):
                continue
            if h["kind"] == "submodule" or h["kind"] == "import_module":
                importlib.import_module(h["target"])
            elif h["paths"]:
                if load is not None and h["kind"] == "load_library":
                    load(h["paths"][0])
                elif torch is not None and h["kind"] == "load_library":
                    torch.ops.load_library(h["paths"][0])
                else:
                    import ctypes
                    ctypes.CDLL(h["paths"][0])
        except BaseException as exc:  # the hidden error is the product
            errors.append({"target": h["target"], "where": h["where"], "error": err(exc)})
    emit(P.HIDDEN, errors=errors)


def _reached(hidden: dict[str, Any]) -> bool:
    """Whether the package's own ``try`` body reaches a swallowed import: the other
    distributions' modules it imports first (``hidden["after"]``) import here. One that is not
    installed stops the body before it (an optional feature, not a hidden error); one that is
    installed and fails raises its own error, which the body swallowed."""
    for name in hidden.get("after", []):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                return False
            raise
    return True


def selftest_fault(stage: str) -> None:
    """Fail on purpose at ``stage`` when OPDOCTOR_PROBE_SELFTEST_FAULT names it.

    The test suite uses this to prove that a bug in this script becomes a finding that blames
    opdoctor, not the library; nothing else sets the variable.
    """
    if os.environ.get("OPDOCTOR_PROBE_SELFTEST_FAULT") == stage:
        raise RuntimeError(f"opdoctor probe self-test fault at stage {stage!r}")


def _sibling(filename: str) -> Any:
    """A module of this directory, loaded by file path (like the protocol above)."""
    spec = importlib.util.spec_from_file_location(
        "_opdoctor_" + filename[:-3], os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   filename))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def opcheck_stage(torch: Any, names: list[str]) -> None:
    """--opcheck: compile readiness of the new ops (probe_compile.py, loaded by file path)."""
    emit(P.STAGE, stage="opcheck")
    try:  # a failure here must not hide what the load established
        budget = float(REQ.get("opcheck_budget", 60))
        result = _compile_module().run(torch, names, True, budget)
    except Exception as exc:
        result = {"ops": [], "opcheck": True, "seconds": 0.0, "error": err(exc)}
    emit(P.COMPILE, **result)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run a framework's import with the cyclic garbage collector paused.

    The import makes a few hundred thousand objects and almost no garbage cycles: the
    collector ran ~350 times during ``import torch`` (~0.15 s, 13 % of its CPU time; ~0.3 s of
    ``import tensorflow``'s) and freed ~7,000 objects. Nothing the import or the load does
    depends on when cycles are freed. Afterwards the import's objects are frozen (``freeze``,
    kept out of every later collection) before the collector is enabled again: the probe ends
    once it has loaded and reported, and a full collection in a child forked from a zygote
    would otherwise walk all of them and copy every page they are on (measured: 0.1 s and
    10,000 page faults per fork that allocates like a probe). What the import left as
    cycles (a few thousand objects) stays until the probe exits."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def import_torch() -> tuple[bool, Any]:
    """Import torch when the request asks for it: (False, None) when that failed (reported),
    else (True, the module or None)."""
    if not REQ.get("torch"):
        return True, None
    emit(P.STAGE, stage="import torch")
    try:
        with collector_paused():
            import torch
    except BaseException as exc:  # a broken torch is what we report
        # Its cause: what a device backend torch auto-loads raised (torch_npu's ImportError).
        cause = exc.__cause__ or exc.__context__
        emit(P.FRAMEWORK_IMPORT_FAILED, error=err(exc), cause=err(cause) if cause else None)
        return False, None
    emit(P.FRAMEWORK, version=torch.__version__, cuda=torch.version.cuda, file=torch.__file__)
    return True, torch


# Zygote mode: the top-level name of every module looked for during the framework's import,
# found or not (noted by _Looked): a fork may take a PYTHONPATH of its own only when none of
# its entries holds one of them.
_LOOKED_FOR: set[str] = set()


class _Looked:
    """A meta-path finder that finds nothing and notes what was looked for."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> None:
        _LOOKED_FOR.add(fullname.partition(".")[0])


def main() -> None:
    """Import torch, snapshot the registry, load, snapshot again, report."""
    emit(P.START, pid=os.getpid(), python=sys.version.split()[0], executable=sys.executable)
    if REQ.get("zygote"):
        sys.meta_path.insert(0, _Looked)
    if REQ.get("tensorflow"):  # a TensorFlow op library: probe_tf.py, loaded by path
        tfp = _sibling("probe_tf.py")
        emit(P.STAGE, stage="import tensorflow")
        with collector_paused():
            tf = tfp.import_tensorflow(emit, err, P)
        if tf is None:
            return

        def after() -> None:  # in a zygote, REQ is read when a fork runs: its own request
            tfp.after_import(emit, err, P, REQ, tf, mapped, load_target, retry_hidden)

        if REQ.get("zygote"):
            serve(tfp.framework_fields(tf), "import tensorflow", after)
        else:
            emit(P.FRAMEWORK, **tfp.framework_fields(tf))
            after()
        return
    if REQ.get("aot_function"):  # a MindSpore AOT library: probe_ms.py, loaded by path
        _sibling("probe_ms.py").main(emit, err, P, REQ, collector_paused)
        return
    ok, torch = import_torch()
    if not ok:
        return
    if REQ.get("zygote"):
        framework = {"version": torch.__version__, "cuda": torch.version.cuda,
                     "file": torch.__file__} if torch is not None else None
        serve(framework, "import torch", lambda: after_framework(torch))
        return
    after_framework(torch)


def _redirect(fd: int, path: str) -> None:
    """Point file descriptor ``fd`` at a new file ``path``."""
    new = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(new, fd)
    os.close(new)


def _ld_debug_fd() -> int | None:
    """The descriptor glibc writes this process's LD_DEBUG output to (it opened
    ``$LD_DEBUG_OUTPUT.<pid>`` at start), or None."""
    base = os.environ.get("LD_DEBUG_OUTPUT")
    if not base:
        return None
    want = f"{base}.{os.getpid()}"
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == want:
                return int(name)
        except (OSError, ValueError):
            continue
    return None


def serve(framework: dict[str, Any] | None, stage: str, after: Callable[[], None]) -> None:
    """Zygote mode: the framework (torch, or TensorFlow) is imported once here; each request
    line on stdin is probed in a child forked from this process, exactly as a fresh probe would
    after its own framework import (same interpreter, environment, working directory and
    limits), with its own event file, stdout, stderr and LD_DEBUG output in the request's
    directory: the child reports the import (``stage``, ``framework``) and runs ``after``. One
    child at a time; its pid and exit status are reported on this process's event pipe. A
    crash or hang of a child is the child's result alone: this process only waits (opdoctor
    kills a child past its time or memory limit)."""
    global REQ, _out
    ld_fd = _ld_debug_fd()
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_Looked)
    names = _LOOKED_FOR | {m.partition(".")[0] for m in sys.modules}
    emit(P.ZYGOTE_READY, names=sorted(names))
    for line in sys.stdin:
        try:
            job = json.loads(line)
            where, req = str(job["dir"]), dict(job["req"])
        except (ValueError, KeyError, TypeError) as exc:
            emit(P.PROBE_ERROR, error=err(exc))
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: becomes a probe of its own and returns to the script's end
            os.setsid()  # its own session and group: opdoctor kills it (and what it starts)
            _redirect(1, os.path.join(where, "stdout"))
            _redirect(2, os.path.join(where, "stderr"))
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            if ld_fd is not None:
                _redirect(ld_fd, os.path.join(where, f"ld.{os.getpid()}"))
            _out.close()  # the zygote's event pipe: this child reports to its own file
            _out = open(os.path.join(where, "events"), "w", buffering=1)  # noqa: SIM115
            REQ = _Request(req)
            _become(job)
            emit(P.START, pid=os.getpid(), python=sys.version.split()[0],
                 executable=sys.executable, forked=True)
            if framework is not None:
                emit(P.STAGE, stage=stage)
                emit(P.FRAMEWORK, **framework)
            after()
            return
        emit(P.FORKED, pid=pid)
        _, status = os.waitpid(pid, 0)
        emit(P.EXITED, pid=pid, status=os.waitstatus_to_exitcode(status))


def _become(job: dict[str, Any]) -> None:
    """A fork takes its request's working directory, environment and PYTHONPATH entries
    (after the script's directory, where the interpreter puts them at start-up)."""
    if job.get("cwd"):
        os.chdir(job["cwd"])
    if job.get("env") is not None:
        os.environ.clear()
        os.environ.update(job["env"])
    if job.get("path"):
        # An entry already on sys.path moves to its PYTHONPATH place (site.py keeps the first
        # of duplicate entries).
        sys.path[:] = sys.path[:1] + list(dict.fromkeys(job["path"])) + \
            [p for p in sys.path[1:] if p not in job["path"]]
        import importlib
        importlib.invalidate_caches()


def after_framework(torch: Any) -> None:
    """Everything after the framework's import: preload, load, inspect, report."""
    for pre in REQ.get("preload", []):
        emit(P.STAGE, stage="preload", path=pre)
        try:
            if torch is not None:
                torch.ops.load_library(pre)
            else:
                import ctypes
                ctypes.CDLL(pre, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
        except BaseException as exc:
            emit(P.PRELOAD_FAILED, path=pre, error=err(exc))
            return
    before: set[str] = set()
    classes_before: set[str] = set()
    if torch is not None:
        before = set(torch._C._dispatch_get_all_op_names())
        classes_before = custom_classes(torch)
    maps_before = mapped()

    def load(path: str) -> None:
        if torch is not None:
            torch.ops.load_library(path)
        else:
            import ctypes
            ctypes.CDLL(path)

    if not load_target(load, maps_before)[0]:
        return
    if REQ.get("package") and REQ.get("hidden"):
        retry_hidden(torch)
    if torch is None:
        emit(P.DONE)
        return
    emit(P.STAGE, stage="inspect")
    selftest_fault("inspect")
    after = set(torch._C._dispatch_get_all_op_names())
    details = [op_details(torch, n) for n in sorted(after - before)]
    # The package's import can import torch modules that register torch's own ops
    # (torch.distributed's c10d_functional::, torch._inductor's, prims::): not the package's.
    ops = [d for d in details if not torch_owns(torch, d["name"], d["registered_at"])]
    new = [d["name"] for d in ops]
    for name in REQ.get("ops", []):
        if name not in new and name in after:
            ops.append(op_details(torch, name))
    emit(P.OPS, new=new, ops=ops, classes=sorted(custom_classes(torch) - classes_before))
    if REQ.get("opcheck"):
        opcheck_stage(torch, new)
    try:
        dangling = [str(x) for x in torch._C._dispatch_find_dangling_impls()]
    except Exception as exc:
        dangling = [f"<could not list: {exc}>"]
    emit(P.DANGLING, impls=dangling)
    if REQ.get("smoke"):
        emit(P.STAGE, stage="smoke")
        emit(P.SMOKE, results=[smoke(torch, o["name"], o["schema"]) for o in ops
                               if o["schema"]])
    emit(P.DONE)


def custom_classes(torch: Any) -> set[str]:
    """The TorchBind classes registered so far (``vesin._NeighborList``): a library whose
    ``TORCH_LIBRARY`` block registers a class and no operator registers something
    (``torch.classes.vesin._NeighborList``), read from the classes' method schemas."""
    out: set[str] = set()
    try:
        schemas = torch._C._jit_get_custom_class_schemas()
    except Exception:  # a torch without the listing (before 1.8): nothing to add
        return out
    for s in schemas:
        args = getattr(s, "arguments", None)
        kind = str(args[0].type) if args else ""
        if kind.startswith("__torch__.torch.classes."):
            out.add(kind[len("__torch__.torch.classes."):])
    return out


def finish() -> None:
    """End the probe without the interpreter's teardown.

    Its report is written; what is left is Python freeing every object the framework's import
    made — ~0.4 s of CPU and ~0.5 s of wall time after ``import torch``, which opdoctor waited
    for on every probe (a forked probe pays it too). The package's ``atexit`` functions still
    run and every stream is flushed, Python's and C's; ``exit()`` of the C library then runs
    what C and C++ run at exit (static destructors: a crash there still ends the probe with
    its signal), as after any program. Not waited for: Python's non-daemon threads (a package
    that starts one made every probe of it hang at exit, a timeout with the answer in hand)."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, _out):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).exit(0)
    # no C library to call: the interpreter's own exit


try:
    main()
except BaseException as exc:  # the probe must always say what happened
    emit(P.PROBE_ERROR, error=err(exc))
finish()
