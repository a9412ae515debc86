"""The load probe's MindSpore AOT branch: runs inside the target interpreter (stdlib, plus
mindspore when it is installed; it cannot import opdoctor). ``probe_script.py`` loads this file
by path and calls :func:`main` when the request names an AOT function (``lib.so:Func``).

It loads the library the way MindSpore 2.10's CPU AOT kernel does: libc's ``dlopen`` with
``RTLD_LAZY | RTLD_LOCAL`` (not ``ctypes.CDLL``, which adds ``RTLD_NOW``), then ``dlsym`` of
``FuncInit`` and ``Func``. With ``--smoke`` it runs the op once through MindSpore itself,
``ops.Custom("lib.so:Func", …, func_type="aot")``, on two 2x2 float32 CPU tensors, with the
output shaped like the first input. A function that no library defines and that is called
through the PLT ends the process there ("symbol lookup error", exit 127): the parent sees the
stage ("smoke") and the exit status.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import os
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Any

Emit = Callable[..., None]
RTLD_LAZY = getattr(os, "RTLD_LAZY", 1)
RTLD_LOCAL = getattr(os, "RTLD_LOCAL", 0)


def _libdl() -> Any:
    """libc's dlopen/dlsym/dlerror with C types (glibc ≥ 2.34 has them in libc itself)."""
    libc = ctypes.CDLL(None)
    libc.dlopen.restype = ctypes.c_void_p
    libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.dlsym.restype = ctypes.c_void_p
    libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    libc.dlerror.restype = ctypes.c_char_p
    return libc


def _dlerror(libc: Any) -> str:
    msg = libc.dlerror()
    return msg.decode(errors="replace") if msg else ""


def main(emit: Emit, err: Callable[[BaseException], dict[str, str]], P: Any,
         req: dict[str, Any],
         paused: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext) -> None:
    """Import MindSpore (when installed), load and look up like MindSpore, smoke-run.
    ``paused`` is what the import runs in (probe_script's ``collector_paused``)."""
    path, func = req["path"], req["aot_function"]
    ms: Any = None
    if importlib.util.find_spec("mindspore") is not None:
        emit(P.STAGE, stage="import mindspore")
        try:
            with paused():
                ms = importlib.import_module("mindspore")
        except BaseException as exc:  # a broken MindSpore is what we report
            emit(P.FRAMEWORK_IMPORT_FAILED, error=err(exc), framework="mindspore")
            return
        emit(P.FRAMEWORK, version=ms.__version__, cuda=None, file=ms.__file__,
             framework="mindspore")
    emit(P.STAGE, stage="load", path=path, package=None)
    libc = _libdl()
    handle = libc.dlopen(os.path.realpath(path).encode(), RTLD_LAZY | RTLD_LOCAL)
    if not handle:
        message = _dlerror(libc)
        emit(P.LOAD_FAILED, error={"type": "OSError", "message": message,
                                   "traceback": f"dlopen(RTLD_LAZY | RTLD_LOCAL): {message}"},
             cause=None)
        return
    emit(P.LOADED)
    found = {}
    for name in (func + "Init", func):
        _dlerror(libc)  # clear
        found[name] = bool(libc.dlsym(handle, name.encode()))
    info: dict[str, Any] = {"mindspore": ms.__version__ if ms is not None else None,
                            "function": func, "found": found[func],
                            "init_found": found[func + "Init"], "smoke": None}
    if not req.get("smoke"):
        emit(P.MS_AOT, **info)
        emit(P.DONE)
        return
    if ms is None:
        info["smoke"] = {"skipped": "mindspore is not installed for this interpreter"}
        emit(P.MS_AOT, **info)
        emit(P.DONE)
        return
    emit(P.MS_AOT, **info)  # before the call: a lazy "symbol lookup error" ends the process
    emit(P.STAGE, stage="smoke")
    info["smoke"] = _smoke(ms, f"{os.path.realpath(path)}:{func}", err)
    emit(P.MS_AOT, **info)
    emit(P.DONE)


def _smoke(ms: Any, spec: str, err: Callable[[BaseException], dict[str, str]]) -> dict[str, Any]:
    """Run ``ops.Custom(spec, …, func_type="aot")`` once on small CPU tensors."""
    try:
        import numpy as np

        ops = importlib.import_module("mindspore.ops")
        ms.set_device("CPU")
        op = ops.Custom(spec, out_shape=lambda x, *_: x, out_dtype=lambda x, *_: x,
                        func_type="aot")
        x = ms.Tensor(np.ones((2, 2), np.float32))
        res = op(x, x)
        return {"ok": True, "result": repr(res.asnumpy().tolist())[:200]}
    except Exception as exc:
        return {"ok": False, "error": err(exc)}
