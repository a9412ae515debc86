"""Real framework children in milliseconds: fork them from an interpreter that imported it.

Many tests check that the framework itself fails the way opdoctor says: a child interpreter runs
``import torch`` and loads the fixture. The import is ~1.1 s of CPU per child, most of the fast
suite's time. Here a *zygote* — ``python -c`` that imports torch and then waits — is started once
per test session and start-up environment, and every program is run in a child forked from it:
a separate process with its own address space (nothing of earlier programs in it, a crash kills
only it), in the state ``python -c "import torch; …"`` reaches after its first line, with the
real loader and the real framework. Nothing is mocked; only the import is shared.

What a fork cannot reproduce is kept out: a program that must not have torch loaded (``ctypes``
alone), or one whose start-up environment differs (``LD_LIBRARY_PATH``, ``LD_PRELOAD`` and
``PYTHONPATH`` are read when the process starts) gets the zygote of its own environment; a
program that does not start with ``import torch`` is refused (use ``subprocess`` for it).

The same holds for TensorFlow (~4 s of CPU per ``import tensorflow``) and for any interpreter:
``run_python(code, python=…)`` forks a program whose first act is importing torch or TensorFlow
from a zygote of that interpreter and framework. "First act" follows the program's own packages
(found in its working directory or ``PYTHONPATH``): ``import mypkg`` counts when ``mypkg``'s
``__init__`` itself imports the framework before doing anything else (standard-library imports,
a docstring and constant assignments do nothing a fork could not reproduce).
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# Variables read when the process starts or torch is imported (the dynamic loader's, the
# interpreter's, torch's and its runtimes'): a zygote per distinct set of their values.
STARTUP = ("LD_", "PYTHON", "TORCH", "PYTORCH", "CUDA", "OMP_", "MKL", "KMP_", "GLIBC",
           "MALLOC", "TF_")
FRAMEWORKS = ("torch", "tensorflow")

_ZYGOTE = r'''
import builtins, gc, json, os, select, signal, sys, traceback, types
gc.disable()  # as opdoctor's probe imports it (probe_script.collector_paused): ~13 % less CPU
__import__(sys.argv[1])  # the framework: torch or tensorflow
gc.freeze()
gc.enable()

print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), flush=True)

def child(req):
    os.chdir(req["cwd"])
    # PYTHONPATH given to this child only: its entries go where the interpreter puts them at
    # start-up, right after the script's directory (the parent checked that none of them
    # holds a module this process has already imported).
    sys.path[1:1] = req["pythonpath"]
    os.environ.clear()
    os.environ.update(req["env"])
    stdin = os.open(req["input"] or os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, req["out"]), (2, req["err"])):
        if path is None:  # stderr=STDOUT: one file, one offset, the order as written
            os.dup2(1, fd)
            continue
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    name = req["filename"]
    sys.argv = [name or "-c", *req["argv"]]
    if name:  # `python script.py`: the script's directory, not the working directory, first
        sys.path[0] = os.path.dirname(os.path.abspath(name))
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    rc = 0
    try:
        main.__file__ = name or None
        exec(compile(req["code"], name or "<string>", "exec"), main.__dict__)
    except SystemExit as e:
        if e.code is None:
            rc = 0
        elif isinstance(e.code, int):
            rc = e.code
        else:
            print(e.code, file=sys.stderr)
            rc = 1
    except BaseException as e:  # printed as the interpreter prints an uncaught exception
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        rc = 1
    try:
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(rc & 0xFF)

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            child(req)
        finally:
            os._exit(70)
    fd = os.pidfd_open(pid)
    ready, _, _ = select.select([fd], [], [], req["timeout"])
    timed_out = not ready
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "timeout": timed_out}),
          flush=True)
'''

_lock = threading.Lock()
_zygotes: dict[tuple[str, str, tuple[tuple[str, str], ...]], _Zygote] = {}


def _starts_with_torch(code: str) -> bool:
    """Whether the program's first import of a non-standard module is ``torch``."""
    return first_framework(code) == "torch"


def first_framework(code: str, dirs: tuple[str, ...] = ()) -> str | None:
    """The framework (torch or tensorflow) a program imports before doing anything else, or
    None. An import of a module found in ``dirs`` (the program's working directory and
    ``PYTHONPATH``) is followed into that module's source."""
    found = _first_act(code, dirs, 0)
    return found if found in FRAMEWORKS else None


def _first_act(code: str, dirs: tuple[str, ...], depth: int) -> str | None:
    """A framework's name, "" when the code only imported standard modules (nothing a fork
    could not reproduce), or None when it did something else first."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return None
    for node in body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or (
                isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and all(isinstance(t, ast.Name) for t in node.targets)):
            continue  # a docstring, `__version__ = "1.0"` (not `os.environ["X"] = "1"`)
        else:
            return None  # an action (or a relative import) before any framework import
        for name in names:
            top = name.split(".")[0]
            local = _found_in(top, dirs)
            if top in sys.stdlib_module_names:
                if local:  # shadows the standard module, which the framework may have loaded
                    return None
                continue
            if top in FRAMEWORKS and not local:
                return top
            sources = _own_sources(name, dirs) if local and depth < 4 else None
            if sources is None:
                return None  # a third-party module: what it does first is not known here
            for source in sources:
                found = _first_act(source, dirs, depth + 1)
                if found != "":
                    return found
    return ""


def _found_in(top: str, dirs: tuple[str, ...]) -> bool:
    """Whether a top-level module ``top`` sits in one of ``dirs``."""
    return any((Path(d or ".") / top).is_dir() or (Path(d or ".") / f"{top}.py").is_file()
               for d in dirs)


def _own_sources(name: str, dirs: tuple[str, ...]) -> list[str] | None:
    """The sources Python runs for ``import name`` (each package's ``__init__`` along the
    dotted name, then the module) when its top level sits in one of ``dirs``; else None."""
    parts = name.split(".")
    for d in dirs:
        base = Path(d or ".")
        if not _found_in(parts[0], (d,)):
            continue
        out = []
        for i in range(len(parts)):
            here = base.joinpath(*parts[:i + 1])
            init = here / "__init__.py"
            if init.is_file():
                out.append(init.read_text(encoding="utf-8", errors="replace"))
            elif here.with_suffix(".py").is_file() and i == len(parts) - 1:
                out.append(here.with_suffix(".py").read_text(encoding="utf-8", errors="replace"))
            else:
                return None  # a namespace package, an extension module: not followed
        return out
    return None


class _Zygote:
    """A zygote process (``python`` having imported ``framework``) and the top-level modules it
    imported at start."""

    def __init__(self, env: dict[str, str], python: str, framework: str) -> None:
        self.proc = subprocess.Popen([python, "-c", _ZYGOTE, framework], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=os.getcwd())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.modules: frozenset[str] = frozenset(json.loads(line) if line else ())


def _key(python: str, framework: str, env: dict[str, str], *, without: str = "",
         ) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    return python, framework, tuple(sorted(
        (k, v) for k, v in env.items() if k.startswith(STARTUP) and k != without))


def _shadows(entries: list[str], modules: frozenset[str]) -> bool:
    """Whether a ``PYTHONPATH`` entry holds a top-level module or package of ``modules``
    (then a process started with it could have imported that one instead)."""
    for entry in entries:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        if "tensorflow-plugins" in names:  # TensorFlow loads these at its import
            return True
        for name in names:  # torch's import loads the backends that entry points name
            ep = os.path.join(entry, name, "entry_points.txt")
            if name.endswith(".dist-info") and os.path.isfile(ep):
                with open(ep, encoding="utf-8", errors="replace") as fh:
                    if "[torch.backends]" in fh.read():
                        return True
        for name in names:
            top = name.split(".")[0]
            if top in modules and (os.path.isdir(os.path.join(entry, name)) or
                                   name.endswith((".py", ".pyc", ".so", ".pth"))):
                return True
    return False


def _zygote(env: dict[str, str], python: str, framework: str) -> tuple[_Zygote, list[str]]:
    """The zygote for ``env``, and the ``PYTHONPATH`` entries its child must add itself: a
    ``PYTHONPATH`` that shadows nothing the framework's import loaded shares the zygote
    without it."""
    extra = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
    if extra:
        bkey = _key(python, framework, env, without="PYTHONPATH")
        base = _zygotes.get(bkey)
        if base is None or base.proc.poll() is not None:
            base = _Zygote({k: v for k, v in env.items() if k != "PYTHONPATH"}, python, framework)
            _zygotes[bkey] = base
        if not _shadows(extra, base.modules):
            return base, extra
    key = _key(python, framework, env)
    z = _zygotes.get(key)
    if z is None or z.proc.poll() is not None:
        z = _Zygote(env, python, framework)
        _zygotes[key] = z
    return z, []


def run_torch(code: str, *argv: str, env: dict[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None,
              timeout: float = 120, input: str | None = None,
              check: bool = False, filename: str | None = None,
              merge_stderr: bool = False,
              ) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, "-c", code, *argv], capture_output=True, text=True, …)`` (with
    ``filename``: ``[python, filename, *argv]``, ``code`` being that file's text) for a
    program that starts with ``import torch``, run in a child forked from a zygote that already
    imported it. ``merge_stderr``: as ``stderr=subprocess.STDOUT`` (both in ``stdout``, in the
    order written). Raises :class:`subprocess.TimeoutExpired` and (``check``)
    :class:`subprocess.CalledProcessError` as ``subprocess.run`` does."""
    if not _starts_with_torch(code):
        raise ValueError("run_torch: the program does not start with `import torch`")
    return _run_forked(code, argv, sys.executable, "torch", env, cwd, timeout, input, check,
                       filename, merge_stderr)


def _run_forked(code: str, argv: tuple[str, ...], python: str, framework: str,
                env: dict[str, str] | None, cwd: str | os.PathLike[str] | None,
                timeout: float, input: str | None, check: bool, filename: str | None,
                merge_stderr: bool) -> subprocess.CompletedProcess[str]:
    """``run_torch`` for any interpreter and framework (the program was checked to start
    with importing it)."""
    log = os.environ.get("OPDOCTOR_PROBE_LOG")
    if log:  # a framework child, forked or not: what the probe marker covers (conftest)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{framework} child: " + " ".join(code.split())[:100] + "\n")
    env = dict(os.environ if env is None else env)
    args = [python, *([filename] if filename else ["-c", code]), *argv]
    with tempfile.TemporaryDirectory(prefix="torchfork-") as tmp, _lock:
        out, err, given = Path(tmp, "out"), Path(tmp, "err"), Path(tmp, "in")
        if input is not None:
            given.write_text(input, encoding="utf-8")
        zygote, pythonpath = _zygote(env, python, framework)
        z = zygote.proc
        assert z.stdin is not None and z.stdout is not None
        line = ""
        if z.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                z.stdin.write(json.dumps({
                    "pythonpath": pythonpath, "code": code, "argv": list(argv), "env": env,
                    "timeout": timeout, "cwd": str(cwd or os.getcwd()), "out": str(out),
                    "err": None if merge_stderr else str(err), "filename": filename,
                    "input": str(given) if input is not None else None}) + "\n")
                z.stdin.flush()
                line = z.stdout.readline()
        if not line:
            # The zygote could not import the framework in this environment (or died): a
            # plain child shows what such a process does.
            return subprocess.run(args, stdout=subprocess.PIPE, text=True, env=env, cwd=cwd,
                                  stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                  timeout=timeout, input=input, check=check)
        reply = json.loads(line)
        stdout = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
        stderr = None if merge_stderr else \
            err.read_text(encoding="utf-8", errors="replace") if err.exists() else ""
    if reply["timeout"]:
        raise subprocess.TimeoutExpired(args, timeout, stdout, stderr)
    if check and reply["rc"]:
        raise subprocess.CalledProcessError(reply["rc"], args, stdout, stderr)
    return subprocess.CompletedProcess(args, reply["rc"], stdout, stderr)


def run_python(code: str, *argv: str, env: dict[str, str] | None = None,
               cwd: str | os.PathLike[str] | None = None, timeout: float = 120,
               input: str | None = None,
               check: bool = False, script: Path | None = None,
               merge_stderr: bool = False, python: str | None = None,
               ) -> subprocess.CompletedProcess[str]:
    """``python -c code *argv`` (or ``python script *argv``, ``code`` then read from it; the
    interpreter ``python``, this one by default) with its output captured as text
    (``merge_stderr``: both streams in ``stdout``): forked from a zygote when the program's
    first act is importing torch or TensorFlow (:func:`first_framework`, following the
    program's own packages), else a plain ``subprocess.run``."""
    if script is not None:
        code = script.read_text(encoding="utf-8")
    python = python or sys.executable
    where = str(script.parent) if script is not None else str(cwd or os.getcwd())
    path = (os.environ if env is None else env).get("PYTHONPATH", "")
    framework = first_framework(code, (where, *[e for e in path.split(os.pathsep) if e]))
    if framework is not None:
        return _run_forked(code, argv, python, framework, env, cwd, timeout, input, check,
                           str(script) if script else None, merge_stderr)
    return subprocess.run([python, *([str(script)] if script else ["-c", code]), *argv],
                          stdout=subprocess.PIPE, text=True, env=env, cwd=cwd, timeout=timeout,
                          stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                          input=input, check=check)


@atexit.register
def _stop() -> None:
    for zygote in _zygotes.values():
        z = zygote.proc
        if z.stdin:
            with contextlib.suppress(OSError):
                z.stdin.close()
        try:
            z.wait(timeout=10)
        except subprocess.TimeoutExpired:
            z.kill()
