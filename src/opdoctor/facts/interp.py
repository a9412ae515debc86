"""Facts about the target interpreter and its torch install — without importing torch.

torch is located with ``importlib.util.find_spec`` (which does not execute the package) in the
target interpreter; its version and CUDA version are read from ``torch/version.py`` as text and
its C++11 ABI from the names its libraries export. Importing torch would cost seconds and run
its initialisers; static checks never do it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_SCRIPT = r"""
import sys
# what start-up imported (site, .pth lines, sitecustomize): a PYTHONPATH entry holding one of
# these could change sys.path itself, so no answer is derived for it (see _with_pythonpath)
_boot = sorted({m.partition(".")[0] for m in sys.modules})
import importlib.util, json, os, sysconfig
def _where(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None
info = {
    "executable": os.path.realpath(sys.executable),
    "version": "%d.%d.%d" % sys.version_info[:3],
    "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or "",
    "soabi": sysconfig.get_config_var("SOABI") or "",
    "ldlibrary": sysconfig.get_config_var("LDLIBRARY") or "",
    "libdir": sysconfig.get_config_var("LIBDIR") or "",
    "sys_path": sys.path,
    "torch_dir": _where("torch"),
    "tensorflow_dir": _where("tensorflow"),
    "startup_modules": _boot,
}
"""


class InterpreterError(Exception):
    """The target interpreter cannot be run or does not answer."""


@dataclass(frozen=True)
class TorchInstall:
    """A torch install on disk."""

    directory: str
    version: str
    cuda: str | None
    lib_dir: str
    c_extension: str | None  # torch/_C.<EXT_SUFFIX>
    global_deps: str | None  # torch/lib/libtorch_global_deps.so (loaded RTLD_GLOBAL)


@dataclass(frozen=True)
class Interpreter:
    """The Python that will load the library."""

    invoke: str  # the path to run it by (a venv's python: its symlink, not the base binary)
    executable: str  # the real ELF file (what the loader maps)
    version: str
    ext_suffix: str
    soabi: str
    libpython: str | None  # the shared libpython, when the interpreter links one
    sys_path: tuple[str, ...]
    torch: TorchInstall | None
    tensorflow_dir: str | None = None  # the tensorflow package directory (found, not imported)

    @property
    def site_dirs(self) -> list[str]:
        """The site-packages (and Debian dist-packages) directories on its ``sys.path``."""
        from opdoctor.facts.pkgdir import site_dirs

        return [p for p in site_dirs(self.sys_path) if os.path.isdir(p)]

    @property
    def tensorflow_framework(self) -> str | None:
        """libtensorflow_framework.so.N of the TensorFlow install, if any."""
        if not self.tensorflow_dir:
            return None
        found = sorted(glob.glob(os.path.join(self.tensorflow_dir,
                                              "libtensorflow_framework.so.*")))
        return found[0] if found else None


def read_torch(directory: str, ext_suffix: str) -> TorchInstall | None:
    """The torch installed in ``directory`` (its package directory), read from disk:
    ``version.py``'s release and CUDA version, its lib directory and _C extension."""
    text = ""
    try:
        with open(os.path.join(directory, "version.py"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        pass
    ver = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    lib_dir = os.path.join(directory, "lib")
    c_ext = os.path.join(directory, "_C" + ext_suffix)
    if not os.path.exists(c_ext):
        found = sorted(glob.glob(os.path.join(directory, "_C.*.so")))
        c_ext = found[0] if found else ""
    deps = os.path.join(lib_dir, "libtorch_global_deps.so")
    return TorchInstall(directory, ver.group(1) if ver else "unknown",
                        cuda.group(1) if cuda else None, lib_dir, c_ext or None,
                        deps if os.path.exists(deps) else None)


def _answer(stdout: str, token: str) -> dict[str, Any] | None:
    """The JSON between the two ``token`` delimiters, or None when there is none."""
    start = stdout.find(token)
    end = stdout.find(token, start + len(token)) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    try:
        info = json.loads(stdout[start + len(token):end])
    except ValueError:
        return None
    if not isinstance(info, dict) or not info.keys() >= _EXPECTED:
        return None
    return info


_EXPECTED = frozenset(("executable", "version", "ext_suffix", "soabi", "ldlibrary", "libdir",
                       "sys_path", "torch_dir"))


def _run_script(exe: str, timeout: float, env: dict[str, str] | None,
                neutral: bool = False) -> dict[str, Any]:
    """Run the inspection script in ``exe``; its answer travels between two random delimiters.
    ``neutral``: in an empty directory, so that its '' entry finds nothing.

    An interpreter may print anything around it — a banner from a ``.pth`` file or
    ``sitecustomize``, warnings, text at exit — so stdout is never parsed whole. Something that
    runs but does not answer (not a Python, or a wrapper that swallows ``-c``) is "not a usable
    Python".
    """
    import secrets  # here: a cached or in-process answer needs no token

    token = f"@@opdoctor-{secrets.token_hex(8)}@@"
    code = _SCRIPT + f"sys.stdout.write({token!r} + json.dumps(info) + {token!r})\n" \
        "sys.stdout.flush()\n"
    import subprocess  # here: a cached or in-process answer needs no child

    empty = _empty_directory() if neutral else None
    try:
        # (a relative path names the file from here, not from the empty directory)
        run = os.path.abspath(exe) if empty and os.sep in exe else exe
        proc = subprocess.run([run, "-c", code], capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env, cwd=empty)
    except subprocess.TimeoutExpired:
        raise InterpreterError(f"{exe} is not a usable Python: no answer within "
                               f"{timeout:g} s") from None
    except OSError as exc:
        raise InterpreterError(f"cannot run {exe}: {exc.strerror or exc}") from None
    finally:
        if empty:
            os.rmdir(empty)
    stdout = proc.stdout.decode("utf-8", "replace")
    info = _answer(stdout, token)
    if info is not None:
        return info
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0:
        why = f"it exited with status {proc.returncode}" + (f": {err[-1][:200]}" if err else "")
    elif not stdout.strip():
        why = "it ran but printed nothing"
    else:
        why = "it ran but did not answer like a Python 3 interpreter"
    raise InterpreterError(f"{exe} is not a usable Python: {why}")


_ANSWERS: dict[tuple[Any, ...], dict[str, Any]] = {}
_CODE: list[Any] = []


def _compiled() -> Any:
    """The script compiled, once per process (a test or a fleet asks for every command)."""
    if not _CODE:
        _CODE.append(compile(_SCRIPT, "<opdoctor interpreter facts>", "exec"))
    return _CODE[0]


def _empty_directory() -> str:
    """A new empty directory (the caller removes it)."""
    import tempfile  # here: only a child's start needs it

    return tempfile.mkdtemp(prefix="opdoctor-cwd-")


def _cached_answer(exe: str, timeout: float, env: dict[str, str] | None) -> dict[str, Any]:
    """:func:`_run_script`, once per interpreter file and environment (``check`` validates
    ``--python`` up front and then inspects it again for the checks).

    The answer depends on the environment it runs in (PYTHONPATH shapes sys.path; without an
    explicit one, that is opdoctor's own, as it is now) and on the working directory (its ''
    entry, relative PYTHONPATH entries). One child without PYTHONPATH, in an empty directory,
    answers for every PYTHONPATH and directory that :func:`_with_pythonpath` can derive: jobs,
    fleet ranks and packages under test differ mostly in those, and each child is ~25 ms.
    That child is asked again only when what shapes an interpreter's start differs (see
    :func:`_start_variables`) — as the in-process answer for opdoctor's own interpreter."""
    environ = dict(env if env is not None else os.environ)
    try:
        st = os.stat(exe)
        stamp = (os.path.abspath(exe), st.st_mtime_ns, st.st_size)
    except OSError:
        return _run_script(exe, timeout, env)
    base_env = {k: v for k, v in environ.items() if k != "PYTHONPATH"}
    base_key = (*stamp, "base", _start_variables(base_env))
    if base_key not in _ANSWERS:
        _ANSWERS[base_key] = _run_script(exe, timeout, base_env, neutral=True)
    derived = _with_pythonpath(_ANSWERS[base_key], environ.get("PYTHONPATH", ""))
    if derived is not None:
        return derived
    key = (*stamp, os.getcwd(), tuple(sorted(environ.items())))
    if key not in _ANSWERS:
        _ANSWERS[key] = _run_script(exe, timeout, env)
    return dict(_ANSWERS[key])


def _start_variables(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables of ``env`` that shape what an interpreter's start puts on ``sys.path``
    and finds: its own (PYTHONHOME, PYTHONNOUSERSITE, PYTHONSAFEPATH, PYTHONUSERBASE …),
    HOME (where the user site is) and the loader's (whether it starts at all)."""
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith("PYTHON") or k in _START_OTHERS))


_START_OTHERS = frozenset(("HOME", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT"))


def _with_pythonpath(base: dict[str, Any], pythonpath: str) -> dict[str, Any] | None:
    """``base`` (an answer without PYTHONPATH) as the interpreter answers with ``pythonpath``;
    None where the entries could change more than their own place on ``sys.path``.

    What CPython does (checked against a real child of this interpreter in the tests, whose
    cases each rule below comes from): each entry, made
    absolute against the working directory ("" is the directory itself), goes right after
    ``sys.path[0]`` in order, and ``site`` drops repeats. Running the interpreter is left to
    tell when an entry repeats one of the base path (``site`` would move that one), or holds a
    module start-up imports (a ``.pth`` line's, ``sitecustomize``, ``usercustomize``) — the
    code would run from there and could change the path; or is a file (a zip archive)."""
    startup = base.get("startup_modules")
    if not isinstance(startup, list):
        return None  # an answer from before the field (a cache of an older opdoctor)
    entries: list[str] = []
    for p in pythonpath.split(os.pathsep) if pythonpath else ():
        full = os.path.abspath(p) if p else os.getcwd()
        if full not in entries:
            entries.append(full)
    old = list(base["sys_path"])
    head = old[:1] if old[:1] == [""] else []
    if {os.path.abspath(e) for e in old[len(head):] if e} & set(entries):
        return None
    hooks = {*startup, "sitecustomize", "usercustomize"}
    for entry in entries:
        if os.path.isfile(entry) or _provides(entry, hooks):
            return None
    info = dict(base)
    info["sys_path"] = [*head, *entries, *old[len(head):]]
    for key, name in (("torch_dir", "torch"), ("tensorflow_dir", "tensorflow")):
        found = _found_in(name, [*head, *entries])
        if found is not None:
            info[key] = found
    return info


def _provides(directory: str, names: set[str]) -> bool:
    """Whether ``directory`` holds a module or package of one of ``names`` (any suffix)."""
    try:
        listing = os.listdir(directory)
    except OSError:
        return False
    return any(n.partition(".")[0] in names for n in listing)


def _found_in(name: str, path: list[str]) -> str | None:
    """The directory of ``name``'s module found on ``path`` alone (by the path finder, which
    runs nothing), as the script's ``_where`` reports it; None for none or a namespace portion
    (a regular package later on the path wins over one: the base answer has that)."""
    from importlib.machinery import PathFinder

    try:
        spec = PathFinder.find_spec(name, path)
    except (ImportError, OSError, ValueError):
        return None
    if spec is None or spec.loader is None or not spec.origin:
        return None
    return os.path.dirname(spec.origin)


def usable_python(python: str, env: dict[str, str] | None = None) -> str:
    """"" when ``python`` answers like a Python interpreter, else why not (one line)."""
    try:
        inspect_interpreter(python, env=env)
    except InterpreterError as exc:
        return str(exc)
    return ""


def inspect_interpreter(python: str | None = None, timeout: float = 30.0,
                        env: dict[str, str] | None = None) -> Interpreter:
    """Run a tiny script in ``python`` (default: this interpreter) and describe it; ``env`` is
    the job's environment (its PYTHONPATH shapes sys.path). Raises :class:`InterpreterError`
    when it cannot be run or is not a usable Python."""
    exe = python or sys.executable
    same_path = env is None or env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
    # Compare without resolving symlinks: a venv's python is a symlink to the base interpreter
    # but has its own site-packages.
    if os.path.abspath(exe) == os.path.abspath(sys.executable) and same_path:
        ns: dict[str, Any] = {}
        exec(_compiled(), ns)  # same interpreter: no need to pay for a subprocess
        info = ns["info"]
        # The job is modelled as `python -c`: sys.path[0] is '' (its cwd), not opdoctor's
        # own script directory — none with PYTHONSAFEPATH (`python -P`), which leaves it out.
        safe = (env if env is not None else os.environ).get("PYTHONSAFEPATH")
        # (this process's own first entry is its script's directory, unless it runs -P too)
        own = info["sys_path"][0 if getattr(sys.flags, "safe_path", False) else 1:]
        info["sys_path"] = [*([] if safe else [""]), *own]
    else:
        info = _cached_answer(exe, timeout, env)
    libpython = None
    if info["ldlibrary"].endswith(".so") or ".so." in info["ldlibrary"]:
        cand = os.path.join(info["libdir"], info["ldlibrary"])
        libpython = cand if os.path.exists(cand) else None
    torch = read_torch(info["torch_dir"], info["ext_suffix"]) if info["torch_dir"] else None
    return Interpreter(os.path.abspath(exe), info["executable"], info["version"],
                       info["ext_suffix"], info["soabi"],
                       libpython, tuple(info["sys_path"]), torch,
                       info.get("tensorflow_dir"))
