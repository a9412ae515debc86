"""The load probe's TensorFlow branch: runs inside the target interpreter (stdlib + tensorflow
only; it cannot import opdoctor). ``probe_script.py`` loads this file by path when the request
says ``"tensorflow": true``, imports TensorFlow through :func:`import_tensorflow` and then
calls :func:`after_import` (in the probe itself, or in each child forked from a zygote).

It does what ``tf.load_op_library(path)`` does, step by step, so each step's result is known:
``TF_LoadLibrary`` (the dlopen; TensorFlow raises ``NotFoundError`` with the dlerror), then
``TF_GetOpList`` on *that library's handle* (the ops this library registered — an op whose name
was already registered is silently not added, so it is absent here), then the Python wrappers.
For each op it lists the kernels per device (``kernels.get_registered_kernels_for_op``). Plugin
ops never appear in ``tf.raw_ops``, so that is not consulted.
"""

from __future__ import annotations

import os
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

Emit = Callable[..., None]


def _kernels(kernels: Any, name: str) -> list[dict[str, Any]]:
    """The kernels registered for op ``name``: device, type constraints, label."""
    out = []
    for k in kernels.get_registered_kernels_for_op(name).kernel:
        constraints = [f"{c.name}={','.join(str(v) for v in c.allowed_values.list.type)}"
                       for c in k.constraint]
        out.append({"device": k.device_type, "label": k.label, "constraints": constraints})
    return out


def _registered(registry: Any, names: list[str]) -> list[str]:
    """The names among ``names`` that the process's op registry knows (uncached C++ lookup)."""
    return [n for n in names if registry.get(n) is not None]


def import_tensorflow(emit: Emit, err: Callable[[BaseException], dict[str, str]], P: Any
                      ) -> Any:
    """``import tensorflow`` and the modules the probe uses (the module, or None after
    emitting the failure: a broken TensorFlow is what the probe reports)."""
    try:
        import tensorflow as tf
        from tensorflow.core.framework import op_def_pb2  # noqa: F401
        from tensorflow.python.client import pywrap_tf_session  # noqa: F401
        from tensorflow.python.framework import _op_def_registry, kernels  # noqa: F401
    except BaseException as exc:
        emit(P.FRAMEWORK_IMPORT_FAILED, error=err(exc), framework="tensorflow")
        return None
    return tf


def framework_fields(tf: Any) -> dict[str, Any]:
    """The FRAMEWORK event's fields for this TensorFlow."""
    return {"version": tf.__version__, "cuda": None, "file": tf.__file__,
            "framework": "tensorflow"}


def after_import(emit: Emit, err: Callable[[BaseException], dict[str, str]], P: Any,
                 req: dict[str, Any], tf: Any, mapped: Callable[[], list[str]],
                 load_target: Callable[[Callable[[str], Any], list[str]], tuple[bool, Any]],
                 retry_hidden: Callable[[Any, Callable[[str], Any]], None] | None = None
                 ) -> None:
    """Everything after ``import tensorflow``: preload, load the library (or import the
    package), report its ops — in a fresh probe, or in a child forked from a zygote that
    imported TensorFlow once (``probe_script.serve``)."""
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as py_tf
    from tensorflow.python.framework import _op_def_registry as registry
    from tensorflow.python.framework import kernels

    watch = list(dict.fromkeys(req.get("tf_ops", [])))

    def load(path: str) -> list[str]:
        """tf.load_op_library(path), step by step; the names of the ops it registered."""
        handle = py_tf.TF_LoadLibrary(path)
        try:
            op_list = op_def_pb2.OpList()
            op_list.ParseFromString(py_tf.TF_GetOpList(handle))
            # What tf.load_op_library does next: a failure here fails the user's call too.
            from tensorflow.python.framework import _pywrap_python_op_gen
            _pywrap_python_op_gen.GetPythonWrappers(py_tf.TF_GetOpList(handle))
        finally:
            py_tf.TF_DeleteLibraryHandle(handle)
        return [o.name for o in op_list.op]

    preloads: list[dict[str, Any]] = []
    for pre in req.get("preload", []):
        emit(P.STAGE, stage="preload", path=pre)
        try:
            preloads.append({"path": pre, "ops": load(pre)})
        except BaseException as exc:
            emit(P.PRELOAD_FAILED, path=pre, error=err(exc))
            return
    before = _registered(registry, watch)
    maps_before = mapped()
    loaded, ops = load_target(load, maps_before)
    if not loaded:
        return
    ops = ops or []
    if req.get("package") and req.get("hidden") and retry_hidden is not None:
        retry_hidden(None, load)
    if req.get("package"):
        # The target library, when the import loaded it: TensorFlow keeps each loaded library's
        # op list, so loading it again returns what it registered and loads nothing new.
        # Its cache is keyed by the path string, so try the path as given, then the real one.
        real = os.path.realpath(req["path"])
        if os.path.isfile(real) and real in {os.path.realpath(m) for m in mapped()}:
            for cand in dict.fromkeys([req["path"], real]):
                try:
                    ops = load(cand)
                except Exception:  # informative only: the import itself succeeded
                    ops = []
                if ops:
                    break
    by_library: dict[str, list[str]] = {}
    if req.get("package"):
        # The op list of each of the package's libraries the import loaded, so that this one
        # import answers for all of them (a scan or a directory walk reuses it): TensorFlow
        # returns a loaded library's list again; dlopen of a mapped library runs nothing.
        import sys

        mod = sys.modules.get(str(req["package"]).split(".")[0])
        init = getattr(mod, "__file__", None) or ""
        root = os.path.realpath(os.path.dirname(init) if init else
                                os.path.dirname(req["path"]))
        for lib in dict.fromkeys(os.path.realpath(m) for m in mapped()):
            if lib.startswith(root + os.sep) and lib.endswith(".so") and lib not in by_library:
                try:
                    by_library[lib] = load(lib)
                except Exception:  # informative only: the import itself succeeded
                    continue
        if not any(by_library.values()):
            # TensorFlow keys its list by the path the package loaded a library by: none
            # answered (a symlinked site, say) — say nothing rather than "no op" for each
            by_library = {}
    emit(P.STAGE, stage="inspect")
    after = _registered(registry, watch)
    try:
        devices = sorted({d.device_type for d in tf.config.list_physical_devices()})
    except Exception:  # device enumeration is informative only
        devices = []
    names = list(dict.fromkeys(ops + after + [o for v in by_library.values() for o in v]))
    emit(P.TF_OPS, ops=ops, kernels={n: _kernels(kernels, n) for n in names},
         registered_before=before, registered_after=after, devices=devices,
         preloads=preloads, mapped_before=maps_before, ops_by_library=by_library)
    emit(P.DONE)
