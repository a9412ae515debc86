"""The probe's wire protocol, shared by both sides.

The probe script runs inside the *target* interpreter, which may not have opdoctor installed,
so this module is plain standard library and is imported by the script from its own directory.
Each event is one JSON object per line: ``{"event": NAME, "t": seconds, ...fields}``. The field
shapes are the ``TypedDict``s below; :mod:`opdoctor.facts.probe.outcome` turns a stream of them
into one typed :class:`~opdoctor.facts.probe.outcome.ProbeOutcome`.
"""

from __future__ import annotations

from typing import TypedDict  # Python 3.8+: the oldest target interpreter the probe supports

# Event names (the only strings both sides must agree on).
START = "start"  # pid, python, executable
STAGE = "stage"  # stage, [path], [package]
LATE = "late"  # waited: seconds the probe waited for its late request fields (opdoctor's time)
FRAMEWORK = "torch"  # version, cuda, file: the framework imported in the probe
FRAMEWORK_IMPORT_FAILED = "torch_import_failed"  # error
PRELOAD_FAILED = "preload_failed"  # path, error
LOAD_FAILED = "load_failed"  # error, cause
LOADED = "loaded"
MAPPED = "mapped"  # libraries: shared objects mapped by the load
IMPORTED = "imported"  # modules: [{module, file}]
HIDDEN = "hidden"  # errors: [{target, where, error}] — swallowed imports, retried
# loads: [{path, where, error}] — ctypes loads (torch.ops.load_library's too) that failed
# during the package's import, whether or not the package caught the error
FAILED_LOADS = "failed_loads"
OPS = "ops"  # new: [names], ops: [OpDetails]
DANGLING = "dangling"  # impls: [str]
SMOKE = "smoke"  # results: [SmokeCall]
COMPILE = "compile"  # ops: [CompileOp], opcheck: bool, seconds — only when asked (--opcheck)
DONE = "done"
PROBE_ERROR = "probe_error"  # error: the probe script itself failed (opdoctor's bug)
# Zygote mode (runner.Zygote): the framework is imported, requests are read from stdin; a
# child forked for one has this pid; it exited with this status (as Popen.returncode).
ZYGOTE_READY = "zygote_ready"
FORKED = "forked"  # pid
EXITED = "exited"  # pid, status
# TensorFlow (probe_tf.py): ops: [names TF_GetOpList listed on the library's handle],
# kernels: {op: [TfKernel]}, registered_before/after: [watched op names the registry knew],
# devices: [physical device types], preloads: [{path, ops}], mapped_before: [paths]
TF_OPS = "tf_ops"
# MindSpore AOT (probe_ms.py): mindspore (version or null), function, found, init_found (dlsym
# after dlopen(RTLD_LAZY | RTLD_LOCAL)), smoke: null | {ok, result} | {ok, error} | {skipped}
MS_AOT = "ms_aot"

# Events after which the probe has said everything it will say about the load.
FINAL = (DONE, LOAD_FAILED, FRAMEWORK_IMPORT_FAILED, PRELOAD_FAILED, PROBE_ERROR)

# Stages, in order (``STAGE`` events).
STAGES = ("start", "import torch", "import tensorflow", "import mindspore", "preload", "load",
          "inspect", "smoke", "opcheck")


class ErrorInfo(TypedDict):
    """An exception as data."""

    type: str
    message: str
    traceback: str


class OpDetails(TypedDict, total=False):
    """One operator as the dispatcher describes it after the load."""

    name: str
    schema: str
    registered_at: str
    keys: list[str]
    key_sites: dict[str, str]
    meta_stub: bool  # present (True) only for torch.library.custom_op's raising Meta stub
    dump_error: str


class SmokeCall(TypedDict, total=False):
    """One ``--smoke`` call of an operator on small CPU tensors."""

    name: str
    ok: bool
    result: str
    skipped: str
    error: ErrorInfo


class HiddenError(TypedDict):
    """An import a ``try/except`` swallowed, retried in the probe."""

    target: str
    where: str
    error: ErrorInfo


class TfKernel(TypedDict):
    """One TensorFlow kernel registration of an op (kernels.get_registered_kernels_for_op)."""

    device: str
    label: str
    constraints: list[str]


class OpcheckResult(TypedDict, total=False):
    """One ``torch.library.opcheck`` test of one op: "SUCCESS", or the exception."""

    test: str  # test_schema, test_autograd_registration, test_faketensor, test_aot_dispatch_dynamic
    ok: bool
    skipped: str  # why it did not run ("" when it ran)
    type: str  # the exception's type name
    message: str


class CompileOp(TypedDict, total=False):
    """The compile readiness of one op the load registered (``--opcheck``)."""

    name: str
    keys: list[str]  # dispatch keys with a kernel (from a fixed list of the relevant ones)
    custom_op: bool  # defined by torch.library.custom_op
    fake: bool  # torch's own predicate (torch._library.utils.has_fake_kernel) or the fallback
    fake_via: str  # what provides it / which predicate answered
    pystub: str  # m.set_python_module("…") of the op ("" when none)
    pystub_error: str  # importing that module failed (type: message)
    fake_after_pystub: bool  # a fake kernel exists once the pystub module is imported
    autograd: bool
    autograd_via: str
    skipped: str  # why opcheck did not run for this op
    args: str  # the sample inputs, described
    tests: list[OpcheckResult]
