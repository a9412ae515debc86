"""The load probe's verdict (causes 1–3, ground truth): what really happened when the target
interpreter loaded the library, classified into codes, and compared with the static prediction.

The probe executes the library's static initialisers — that is its purpose — in a separate,
time-limited process (see :mod:`opdoctor.facts.probe.runner`). ``--static`` skips it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import (
    Check,
    device_plugin_here,
    device_plugin_severity,
    installed_release_fix,
    runtime_library_fix,
    vendored_directory_gone,
)
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.demangle import brief, demangle
from opdoctor.facts.loaderror import NOT_FOUND, UNDEFINED, VERSION, loader_error
from opdoctor.facts.probe.refusal import Refusal, message_lines, read_refusal
from opdoctor.facts.variant import cpu_build, variant_library
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:  # the probe's and the import chain's readers load only when used
    from typing import Any

    from opdoctor.facts.probe.outcome import ProbeOutcome

_DOCS = "https://pytorch.org/tutorials/advanced/dispatcher.html"
_PROBE = "opdoctor README, 'What the probe does'"

OD120 = CodeDoc(
    "OD120", "namespace or operator registered twice", Severity.ERROR,
    what="Loading the library does not register a TORCH_LIBRARY namespace or an operator that "
    "is already registered in the process.",
    why="torch refuses a second TORCH_LIBRARY for a namespace and a second definition of an "
    "op; the load fails (or aborts) and nothing of this library is registered.",
    example="RuntimeError: Only a single TORCH_LIBRARY can be used to register the namespace "
    "dupns; please put all of your definitions in a single TORCH_LIBRARY block. …previous "
    "registration of TORCH_LIBRARY was registered at a.cpp:9; latest registration was "
    "registered at b.cpp:9",
    fix="Load the extension once (one copy on sys.path, one path), rename one namespace, or use "
    "TORCH_LIBRARY_FRAGMENT for additional definitions in the same project.",
    references=(_DOCS,),
)
OD121 = CodeDoc(
    "OD121", "loaded but registered no operator", Severity.ERROR,
    what="Loading a torch extension adds operators to the dispatcher, or TorchBind classes to "
    "torch.classes (a Python module that links torch — PyInit_ and no registrar — binds "
    "functions, not operators: not expected to).",
    why="The load succeeded, so every later 'operator does not exist' is about registration: "
    "compiled out, in a translation unit the linker dropped, or a static initialiser that "
    "never ran.",
    example="torch.ops.load_library('libmyop.so') → no new entry in "
    "torch._C._dispatch_get_all_op_names() and no new torch.classes class",
    fix="See OD101 for the static evidence; check the TORCH_LIBRARY blocks are compiled and "
    "linked (static libraries need -Wl,--whole-archive for registrars).",
    references=(_DOCS,),
)
OD122 = CodeDoc(
    "OD122", "operator registered without the expected kernel", Severity.ERROR,
    what="Each --expect-op ns::op[KEY,...] is registered after the load with kernels for the "
    "listed dispatch keys (torch._C._dispatch_dump).",
    why="The call with tensors of that backend fails: \"Could not run 'myop::weighted_sum' "
    "with arguments from the 'CUDA' backend\".",
    example="myop::weighted_sum registered with CPU only, called on CUDA tensors",
    fix="Register the missing kernel (TORCH_LIBRARY_IMPL(ns, KEY, m)); for CUDA build the "
    "extension with nvcc.",
    references=(_DOCS,),
)
OD123 = CodeDoc(
    "OD123", "schema rejected while loading", Severity.ERROR,
    what="torch accepts every registration when the library's initialisers run: each m.def() "
    "schema parses and sits in a TORCH_LIBRARY block, each m.impl() kernel's C++ signature "
    "matches its schema.",
    why="torch throws inside a static initialiser: the exception cannot be caught, "
    "std::terminate aborts the whole process ('terminate called after throwing an instance "
    "of c10::Error … unknown type specifier'; '… Cannot define an operator inside of a "
    "TORCH_LIBRARY_IMPL block'; 'Inferred operator schema for a C++ kernel function doesn't "
    "match the expected function schema'). Registered from PyInit, the same text is an "
    "ImportError.",
    example="weighted_sum(Tensor x1, Tensor x2, flaot alpha) Tensor → SIGABRT",
    fix="Correct the schema string (see OD102 for the static check); move an m.def() out of "
    "TORCH_LIBRARY_IMPL into TORCH_LIBRARY; make a kernel's C++ signature match its schema. "
    "The finding's own fix says which.",
    references=(_DOCS,),
)
OD124 = CodeDoc(
    "OD124", "crashed while loading", Severity.ERROR,
    what="Loading the library does not kill the process with a signal.",
    why="A crash inside dlopen happens in a static initialiser. With several translation units "
    "the classic cause is static-initialisation order: a registrar in one file uses a global "
    "(a registry, a map) defined in another file that is not constructed yet.",
    example="Segmentation fault while loading; the registrar's _GLOBAL__sub_I_registrar.cpp "
    "runs before _GLOBAL__sub_I_registry.cpp",
    fix="Make the shared global a function-local static (`Registry& registry() { static "
    "Registry r; return r; }`), or use torch's own TORCH_LIBRARY macros instead of a home-made "
    "registry; run the load under gdb for the exact frame.",
    references=("https://isocpp.org/wiki/faq/ctors#static-init-order",),
)
OD125 = CodeDoc(
    "OD125", "load hung", Severity.ERROR,
    what="Loading the library returns within --timeout seconds.",
    why="A static initialiser that blocks (a deadlock on a lock taken during dlopen, waiting "
    "for a GPU, a network call) hangs the import forever; the probe kills it.",
    example="torch.ops.load_library('libmyop.so') never returns",
    fix="Move blocking work out of static initialisers into an explicit init function; run "
    "the load under gdb / py-spy dump to see where it waits.",
    references=(_PROBE,),
)
OD126 = CodeDoc(
    "OD126", "dangling kernel registrations", Severity.WARNING,
    what="No kernel registered by TORCH_LIBRARY_IMPL is left without its TORCH_LIBRARY "
    "definition (torch._C._dispatch_find_dangling_impls).",
    why="Kernels for a namespace nobody defined are never callable: the defining library was "
    "not loaded or uses another namespace name.",
    example="impl for myop::weighted_sum (CPU) but no schema",
    fix="Load the library that defines the namespace first, or fix the namespace name.",
    references=(_DOCS,),
)
OD127 = CodeDoc(
    "OD127", "smoke call failed", Severity.WARNING,
    what="With --smoke each new op whose schema is simple tensor math runs on small CPU "
    "tensors.",
    why="The op is registered but raises on the simplest call: a kernel bug, a wrong schema "
    "(argument types), or a CPU kernel that is really a stub.",
    example="weighted_sum(ones(4), ones(4), 0.5) → RuntimeError",
    fix="Read the exception; run the same call in a debugger.",
    references=(_PROBE,),
)
OD130 = CodeDoc(
    "OD130", "static prediction and real load disagree", Severity.WARNING,
    what="The static checks' prediction (loads or fails) matches what the probe observed.",
    why="A disagreement is either an effect of the environment the static checks cannot see "
    "(LD_PRELOAD, a library loaded by sitecustomize, a different loader) or a bug in "
    "opdoctor's prediction: either way you should know.",
    example="static: all dependencies found; probe: cannot open shared object file",
    fix="Compare the environment of the probe with the job's (--env, --python); if they are the "
    "same, please report it to opdoctor with both reports.",
    references=(_PROBE,),
)
OD129 = CodeDoc(
    "OD129", "the probe itself failed (opdoctor's fault)", Severity.WARNING,
    what="The probe script (opdoctor's code running in the target interpreter) runs to its "
    "end without raising.",
    why="When the probe script raises, what it saw of the library is incomplete: this is a "
    "bug in opdoctor, not a verdict on the library. The static findings still stand.",
    example="probe error: AttributeError: module 'torch._C' has no attribute "
    "'_dispatch_get_all_op_names'",
    fix="Report it with the traceback (in the evidence and the crash log named there); rerun "
    "with --static meanwhile.",
    references=(_PROBE,),
)
OD220 = CodeDoc(
    "OD220", "load failed: a library was not found", Severity.ERROR,
    what="The real load finds every dependency (glibc's own trace, LD_DEBUG=libs).",
    why="dlopen fails with 'cannot open shared object file'; the trace shows every directory "
    "glibc searched and why. A package that looks a library of the operating system up by "
    "name first (ctypes.util.find_library) raises its own error instead — sounddevice's "
    "'PortAudio library not found' — when the loader's cache has none: the same miss.",
    example="OSError: libmyop_dep.so: cannot open shared object file: No such file or directory",
    fix="See OD201: RPATH/RUNPATH ($ORIGIN), LD_LIBRARY_PATH, or install the dependency. A "
    "toolkit's or the driver's library (CUDA, cuDNN, TensorRT, ROCm, CANN, libcuda.so.1) "
    "gets OD201's install fix: no RPATH edit brings it.",
    references=("https://man7.org/linux/man-pages/man8/ld.so.8.html",),
)
OD315 = CodeDoc(
    "OD315", "load failed: a library of another torch build was not found", Severity.ERROR,
    what="A library the real load could not find is not one that only another build of torch "
    "provides: libc10_cuda.so / libtorch_cuda.so (CUDA builds), libc10_hip.so (ROCm), or the "
    "CUDA runtime (libcudart.so.N, libnvrtc.so.N …) that CUDA builds of torch bring in through "
    "the nvidia-* wheels.",
    why="dlopen says 'libc10_cuda.so: cannot open shared object file', which reads like a "
    "search-path problem (OD220), but the installed torch is a CPU (or other CUDA major) build "
    "that has no such library anywhere: no RPATH or LD_LIBRARY_PATH can help. The extension was "
    "built for another build of torch (cause 3).",
    example="torchcodec 0.17.0 beside torch 2.13.0+cpu: libnvrtc.so.13: cannot open shared "
    "object file; torchvision 0.28.0+cu130: libc10_cuda.so: cannot open shared object file",
    fix="Install matching builds from the same index: the CPU build of the extension for your "
    "torch (--index-url https://download.pytorch.org/whl/cpu), or the CUDA build of torch the "
    "extension was made for. Never patch RPATH/LD_LIBRARY_PATH for this.",
    references=("https://pytorch.org/get-started/locally/",
                "https://github.com/pytorch/pytorch/issues/122494"),
)
OD320 = CodeDoc(
    "OD320", "torch itself fails to import", Severity.ERROR,
    what="`import torch` works in the target interpreter.",
    why="Nothing that needs torch can load; the environment is broken, not the library: a "
    "partial install, a CUDA/cuDNN library missing, an incompatible numpy.",
    example="ImportError: libc10.so: cannot open shared object file: No such file or directory",
    fix="Reinstall torch in that environment (pip install --force-reinstall torch==<version>) "
    "and check `python -c 'import torch'` before the extension.",
    references=("https://pytorch.org/get-started/locally/",),
)
OD513 = CodeDoc(
    "OD513", "import torch fails: a device backend it auto-loads fails to import",
    Severity.ERROR,
    what="Every package that declares a `torch.backends` entry point (torch_npu and other "
    "out-of-tree device backends) imports when torch does (torch ≥ 2.5 auto-loads them).",
    why="torch imports each such backend at the end of its own import and turns the backend's "
    "error into its own: `import torch` fails for every program in the environment, whatever "
    "it loads, until the backend imports (its own error is the cause of torch's).",
    example="RuntimeError: Failed to load the backend extension: torch_npu. You can disable "
    "extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.",
    fix="Fix the backend's own error (its cause), or uninstall the backend from an environment "
    "without its device; a job that does not need it runs with "
    "TORCH_DEVICE_BACKEND_AUTOLOAD=0.",
    references=("https://pytorch.org/tutorials/prototype/python_extension_autoload.html",),
)
OD321 = CodeDoc(
    "OD321", "load failed: undefined symbol", Severity.ERROR,
    what="The real load binds every symbol.",
    why="dlopen(RTLD_NOW) fails with 'undefined symbol: …'; see the static finding it ties to "
    "(OD301 / OD303 / OD304).",
    example="OSError: libmyop.so: undefined symbol: _ZN3c109alloc_cpuEi",
    fix="Rebuild against the installed torch / with the right ABI, or link what is missing.",
    references=("https://man7.org/linux/man-pages/man3/dlopen.3.html",),
)
OD322 = CodeDoc(
    "OD322", "load failed: symbol version not found", Severity.ERROR,
    what="The real load finds every required symbol version.",
    why="'version `X' not found (required by …)': built against a newer dependency than the one "
    "loaded (see OD302).",
    example="version `GLIBCXX_3.4.32' not found",
    fix="Build with an older toolchain or ship the newer runtime.",
    references=("https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html",),
)
OD420 = CodeDoc(
    "OD420", "load failed for another reason", Severity.ERROR,
    what="The real load succeeds.",
    why="The loader or the library's initialisers raised an error none of the other codes "
    "covers; the message is the evidence.",
    example="OSError: libmyop.so: cannot enable executable stack as shared object requires",
    fix="Read the message in the evidence; `opdoctor explain \"<message>\"` maps it to a cause.",
    references=(_PROBE,),
)

OD131 = CodeDoc(
    "OD131", "an initialiser ended the process while loading", Severity.ERROR,
    what="Loading the library returns to the caller: no static initialiser calls exit(), "
    "_exit() or quick_exit().",
    why="A licence check, a failed self-test or a CLI-style main() linked into the library "
    "ends the host process with a status instead of raising: `import` never returns, no "
    "Python exception is raised, and the job just stops with that exit status.",
    example="python -c \"import torch; torch.ops.load_library('libtinyop.so')\"; echo $? → 3, "
    "nothing printed",
    fix="Never call exit() from a static initialiser: report the failure (throw, or set a "
    "flag an explicit init function checks) and let the host decide; run the load under "
    "gdb -ex 'catch syscall exit_group' to find the caller.",
    references=("https://man7.org/linux/man-pages/man3/exit.3.html",),
)
OD132 = CodeDoc(
    "OD132", "probe inconclusive: stopped before the library was touched", Severity.WARNING,
    what="The probe reached the load of the library within its limits (--timeout, "
    "--probe-memory) and with a working interpreter.",
    why="A probe stopped while the interpreter started or imported torch says nothing about "
    "the library: the limit is too tight for this machine (a cold `import torch` can take "
    "tens of seconds on a slow node) or the environment is broken. It is not a verdict on the "
    "library; the static findings stand.",
    example="opdoctor check --timeout 1 libtinyop.so → killed during 'import torch'",
    fix="Raise --timeout / --probe-memory (or [tool.opdoctor] timeout), or check that "
    "`python -c 'import torch'` works in the target interpreter; rerun.",
    references=(_PROBE,),
)

CODES = (OD120, OD121, OD122, OD123, OD124, OD125, OD126, OD127, OD129, OD130, OD220, OD315, OD320,
         OD513,
         OD321, OD322, OD420, OD131, OD132)

# Stages before the library is touched: what stops the probe there is not the library's doing.
BEFORE_LOAD = ("start", "import torch")

_NOT_FOUND = NOT_FOUND
_UNDEF = UNDEFINED
_VERSION = VERSION


def _static_prediction(facts: Facts) -> str:
    """"fails" when static checks found a load-breaking error, else "loads"."""
    binding = facts.binding
    if facts.process.tree.missing or binding.missing_versions or binding.unresolved:
        return "fails"
    return "loads"


def _refused(facts: Facts, refusal: Refusal, how: str) -> Finding:
    """OD123 for a registration torch refused while the library loaded, in torch's terms;
    ``how``: "aborted" (the process died with the signal in the message) or "failed"."""
    fix: str | None = None  # the schema parser's own error: OD123's fix
    if refusal.kind == "def-in-impl":
        where = f" (block at {refusal.reason})" if refusal.reason else ""
        what = (f"torch refused m.def(\"{refusal.op}\") inside a TORCH_LIBRARY_IMPL "
                f"block{where} — such a block registers kernels only")
        fix = ("Move the m.def() into the namespace's TORCH_LIBRARY(ns, m) block (one per "
               "namespace; TORCH_LIBRARY_FRAGMENT(ns, m) in further files; from Python a "
               "torch.library.Library(ns, \"DEF\") or \"FRAGMENT\") and keep only m.impl() in "
               "TORCH_LIBRARY_IMPL(ns, KEY, m) (a Library of kind \"IMPL\").")
    elif refusal.kind == "kernel-mismatch":
        reason = f": {refusal.reason}" if refusal.reason else ""
        what = (f"the C++ kernel registered for {refusal.op or 'an operator'} does not match "
                f"its schema{reason}")
        fix = ("Make the kernel's C++ signature match the schema argument by argument (Tensor "
               "→ const at::Tensor&, float → double, int → int64_t, Tensor[] → "
               "at::TensorList, same return type), or correct the schema if the kernel is "
               "right: torch printed both (expected schema, inferred schema).")
    else:
        what = "its schema was rejected"
    return OD123.finding(facts.path, f"the load {how}: {what}", refusal.evidence, fix=fix)


def _crash(facts: Facts, res: ProbeOutcome) -> Iterator[Finding]:
    stage = res.stage
    tail = res.stderr.strip().splitlines()[-6:]
    refusal = read_refusal(res.stderr)
    if refusal is not None:
        yield _refused(facts, refusal, f"aborted ({res.signal_name})")
        return
    if "schema" in res.stderr.lower() and "terminate called" in res.stderr:
        yield OD123.finding(facts.path, f"the library aborted while loading: its schema was "
                            f"rejected ({res.signal_name})", message_lines(res.stderr)[:4])
        return
    if "Only a single TORCH_LIBRARY" in res.stderr or "Tried to register an operator" in \
            res.stderr:
        yield from _duplicate(facts, res.stderr)
        return
    from opdoctor.facts.registration import initializers

    _count, names = initializers(facts.image)
    tus = [n for n in names if n.startswith("_GLOBAL__sub_I_")]
    ev = [f"killed by {res.signal_name} during '{stage}'"]
    ev += [f"stderr: {line}" for line in tail]
    if tus:
        ev.append(f"static initialisers, in .init_array order: {', '.join(tus)}")
    # Only a lookup of the target's own dependency tree is evidence: the interpreter's own
    # (libffi for ctypes, torch's closure) happen before the load and explain nothing.
    tree = facts.process.tree
    own = ({lib.name for lib in tree.order} | {m.name for m in tree.missing}) - {
        lib.name for lib in facts.process.preloaded}
    last = next((s.name for s in reversed(res.trace.searches) if s.name in own), "")
    if last:
        ev.append(f"last library of its dependency tree the loader looked up: {last}")
    msg = f"the process died with {res.signal_name} while loading the library"
    fix = (f"reproduce under a debugger: gdb -ex run --args {facts.options.python or 'python'} "
           f"-c \"import ctypes; ctypes.CDLL('{os.path.abspath(facts.path)}')\" and read the "
           "crashing frame (bt)")
    if stage == "load" and len(tus) >= 2 and res.signal_name in ("SIGSEGV", "SIGBUS",
                                                                  "SIGFPE", "SIGILL"):
        msg += (" — a static initialiser crashed; with initialisers from "
                f"{len(tus)} translation units, suspect static-initialisation order")
        fix = OD124.fix
    elif stage == "load":
        msg += " (inside a static initialiser)"
    yield OD124.finding(facts.path, msg, ev, fix=fix)


def _inconclusive(facts: Facts, res: ProbeOutcome) -> Finding:
    from opdoctor.facts.probe.outcome import ProbeState

    """The probe stopped before it touched the library: a note about the environment or the
    limit, never a verdict on the library."""
    what = {ProbeState.TIMED_OUT: f"the --timeout of {facts.options.timeout:g} s ran out",
            ProbeState.MEMORY_KILLED: f"the --probe-memory limit of "
            f"{facts.options.probe_memory_mb} MiB was exceeded",
            ProbeState.CRASHED: f"the interpreter died with {res.signal_name}",
            ProbeState.EXITED: f"the interpreter exited with status {res.returncode}"}
    return OD132.finding(
        facts.path, f"probe inconclusive: {what.get(res.state, res.state.value)} during "
        f"'{res.stage}', before the library was loaded — not a verdict on the library",
        (f"last probe stage: {res.stage} (the library is loaded in stage 'load')",
         f"probe ran {res.seconds:.1f} s",
         *[f"stderr: {x}" for x in res.stderr.strip().splitlines()[-3:]]))


def _exited(facts: Facts, res: ProbeOutcome) -> Iterator[Finding]:
    """The process ended with a status while loading: exit() in an initialiser."""
    tail = [f"stderr: {x}" for x in res.stderr.strip().splitlines()[-4:]] or ["stderr: (empty)"]
    yield OD131.finding(
        facts.path, f"the process exited with status {res.returncode} during '{res.stage}': a "
        "static initialiser called exit() — a real load ends the host process",
        (f"exit status {res.returncode}, no signal, no Python exception",
         f"last probe stage: {res.stage}", *tail))


def _probe_error(facts: Facts, res: ProbeOutcome) -> Iterator[Finding]:
    """The probe script raised: say it is opdoctor's fault and keep the traceback."""
    import tempfile

    err = res.probe_error
    assert err is not None
    log = os.path.join(tempfile.gettempdir(), "opdoctor-probe-error.log")
    try:
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"target: {facts.path}\nstage: {res.stage}\n\n{err.traceback}")
    except OSError:
        log = ""
    yield OD129.finding(facts.path, f"opdoctor's probe script failed during '{res.stage}' "
                        f"with {err.type}: {err.message[:200]} — not a verdict on the library",
                        (*err.tail(4), *([f"traceback: {log}"] if log else [])))


def _duplicate(facts: Facts, text: str) -> Iterator[Finding]:
    sites = re.findall(r"registered at ([^\s;]+)", text)
    ns = re.search(r"register the namespace (\w+)", text)
    op = re.search(r"Tried to register an operator \((.+?)\) with the same name", text)
    what = f"namespace {ns.group(1)}" if ns else (f"operator {op.group(1)}" if op else "a name")
    ev = [line.strip() for line in text.splitlines()
          if "registered at" in line or "Only a single" in line or "Tried to register" in line]
    if sites:
        ev.append("registered at: " + " and ".join(dict.fromkeys(sites)))
    yield OD120.finding(facts.path, f"{what} is already registered in the process", ev[:6])


def _autoload(facts: Facts) -> Iterator[Finding]:
    """OD513 when the probe's first run found ``import torch`` itself failing on a device
    backend it auto-loads (the probe then ran again with auto-loading off). An error of its own
    when the checked library is not that backend (the environment is broken for everyone); a
    warning beside the backend's own load error when it is."""
    from opdoctor.facts.backends import AUTOLOAD_VAR, failed_backend, find_backend
    first = facts.autoload_failure
    if first is None or first.framework_error is None:
        return
    err, cause = first.framework_error, first.framework_cause
    name = failed_backend(err.message)
    interp = facts.interpreter
    backend = find_backend(list(interp.sys_path) if interp else [], name)
    module = backend.module if backend else name
    own = facts.options.package == module or \
        f"{os.sep}{module}{os.sep}" in os.path.abspath(facts.path)
    why = f"{cause.type}: {cause.message}" if cause else "its error is not in the report"
    ev = [f"import torch: {err.type}: {err.message}", f"the backend's own error: {why}"[:400]]
    if backend:
        ev.append(f"entry point {backend.name} = {backend.value} in group torch.backends "
                  f"({backend.dist}, {backend.where})")
    ev.append(f"the probe ran again with {AUTOLOAD_VAR}=0: the rest of this report is that run")
    dist = backend.dist.split("-")[0] if backend else module
    if own:
        yield OD513.finding(
            module, f"because torch auto-loads {module}, `import torch` itself fails in this "
            f"environment until {module} imports", ev, severity=Severity.WARNING,
            fix=f"fixing {module}'s own load (above) fixes `import torch` too; until then a job "
            f"that does not need {module} runs with {AUTOLOAD_VAR}=0")
        return
    yield OD513.finding(
        module, f"`import torch` fails in this environment: it auto-loads the device backend "
        f"{module}, which fails to import ({why[:200]})", ev,
        fix=f"fix {module}'s own error ({why[:120]}) or `pip uninstall {dist}` where its device "
        f"is absent; a job that does not need it runs with {AUTOLOAD_VAR}=0")


def run(facts: Facts) -> Iterator[Finding]:
    """Classify the probe's outcome."""
    res = facts.probe_result()
    if res is None:
        return
    yield from _autoload(facts)
    from opdoctor.facts.probe.outcome import ProbeState  # loaded by the probe that ran

    if facts.options.aot_function and res.stage == "smoke" and not res.finished:
        return  # the load succeeded; the op's launch ended it: checks/mindspore.py says why
    if facts.options.package:
        yield from _swallowed_load_errors(facts, res)
    if _import_only(facts):
        # The package's import chain resolved no library (it loads them through paths built at
        # run time), or the target is a module: the real import is still the ground truth —
        # classify why it failed.
        if res.state is ProbeState.LOAD_FAILED:
            yield from (f for f in _classify_load_error(facts, res, res.load_message)
                        if f.code != "OD420")
        return
    prediction = _static_prediction(facts)
    failed_load = False  # failed in a way the static loader emulation claims to predict
    if res.state is ProbeState.PROBE_ERROR:
        yield from _probe_error(facts, res)
        return
    if res.stage in BEFORE_LOAD and res.state in (
            ProbeState.TIMED_OUT, ProbeState.MEMORY_KILLED, ProbeState.CRASHED,
            ProbeState.EXITED):
        yield _inconclusive(facts, res)
        return
    if res.state is ProbeState.EXITED:
        yield from _exited(facts, res)
        return
    if res.state is ProbeState.TIMED_OUT:
        yield OD125.finding(facts.path, f"loading did not finish within {facts.options.timeout:g} "
                            f"s: killed during '{res.stage}'",
                            [f"last probe stage: {res.stage}",
                             *[f"stderr: {x}" for x in res.stderr.strip().splitlines()[-3:]]])
    elif res.state is ProbeState.MEMORY_KILLED:
        mib = facts.options.probe_memory_mb
        yield OD124.finding(facts.path, f"loading allocated more than {mib} MiB: the probe's "
                            f"memory limit killed it during '{res.stage}'",
                            (f"--probe-memory: {mib} MiB (resident set size of the probe)",
                             f"last probe stage: {res.stage}",
                             *[f"stderr: {x}" for x in res.stderr.strip().splitlines()[-3:]]),
                            fix=f"a static initialiser allocated more than {mib} MiB; if that "
                            "is expected, raise --probe-memory, otherwise find the allocation "
                            "(heaptrack/valgrind --tool=massif on the load)")
    elif res.state is ProbeState.CRASHED:
        yield from _crash(facts, res)  # initialisers: beyond what the static checks predict
        return
    elif res.state is ProbeState.FRAMEWORK_IMPORT_FAILED and res.framework_error:
        t = res.framework_error
        fw = "tensorflow" if facts.tf_probe else "torch"
        yield OD320.finding(fw, f"{fw} itself fails to import in "
                            f"{facts.options.python or 'this interpreter'}: the environment is "
                            "broken, not the library", [t.message, *t.tail(3)])
        return
    elif res.state is ProbeState.PRELOAD_FAILED and res.preload_error:
        p = res.preload_error
        yield from _classify_load_error(facts, res, p.message + "\n" + p.traceback)
        return
    elif res.state is ProbeState.LOAD_FAILED:
        found = list(_classify_load_error(facts, res, res.load_message + "\n" + res.stderr))
        if facts.options.package:
            # Importing a package: its Python errors are the import chain's (OD511).
            found = [f for f in found if f.code != "OD420"]
        yield from found
        # Only loader-level failures are what the static emulation predicts.
        failed_load = any(f.code in ("OD220", "OD315", "OD321", "OD322") for f in found)
        if not failed_load:
            return
    elif res.state is ProbeState.LOADED and facts.torch_context and res.inspected:
        yield from _registered(facts, res)
    if facts.options.package:
        return  # a package import is not the library's load: nothing to compare
    if (res.state is ProbeState.LOADED and res.finished) or failed_load:
        actual = "fails" if failed_load else "loads"
        if actual != prediction:
            yield OD130.finding(facts.path, f"the static checks predicted the load "
                                f"{'to fail' if prediction == 'fails' else 'to succeed'}; it "
                                f"{'failed' if actual == 'fails' else 'succeeded'}",
                                (f"static: {prediction}", f"probe: {actual}",
                                 f"probe error: {res.load_message or 'none'}"))


def _swallowed_load_errors(facts: Facts, res: ProbeOutcome) -> Iterator[Finding]:
    """Package mode: an import error the package swallowed (OD512, a symptom) that is the
    dynamic loader's is classified as the probe's own load errors are (OD321/OD322/OD220),
    so the verdict names the loader's cause instead of the try/except warning (OD509)."""
    chain = facts.chain
    for hidden in facts.swallowed(res):
        err = loader_error(hidden.error.message)
        if err is None:
            continue
        where = f"swallowed by {hidden.where} around {hidden.target}"
        if chain is not None and chain.called_later(hidden.target):
            continue  # an optional path the import does not take: OD512 notes it
        what = chain.failing(hidden.target) if chain is not None else f"import {hidden.target}"
        if err.kind == "version":
            yield OD322.finding(facts.path, f"version {err.subject} not found (hidden: "
                                f"{what} fails)", (err.text, where))
        elif err.kind == "not-found":
            name = os.path.basename(err.subject)
            yield _not_found(facts, name, f" (hidden: {what} fails)",
                             [f"dlopen: {err.text}", where], res.failed_loads)
        else:
            yield OD321.finding(facts.path, f"undefined symbol {brief(demangle(err.subject))}"
                                f"{_framework_symbol_note(facts, err.subject)} (hidden: "
                                f"{what} fails)",
                                (f"dlopen: {err.text}", where, *_in_full(err.subject)),
                                fix=_symbol_fix(facts, err.subject))


def _in_full(sym: str) -> tuple[str, ...]:
    """The whole demangled name, as evidence, where the message gives it shortened."""
    full = demangle(sym)
    return (f"in full: {full}",) if brief(full) != full else ()


_FRAMEWORK_SYMBOL = re.compile(r"^_ZN?K?(?:3c10|2at|5torch)")


_TF_SYMBOL = re.compile(r"^(?:_ZN?K?(?:10tensorflow|3tsl)|TF_)")


def _framework_symbol_note(facts: Facts, symbol: str, own: bool = False) -> str:
    """For a torch symbol (c10::, at::, torch::) the installed torch does not export — or a
    TensorFlow one (tensorflow::, tsl::, the TF_ C API) TensorFlow does not: the library was
    built against another release (or C++ ABI) of that framework, said with the version."""
    tv = facts.torch_variant
    if tv is not None and _FRAMEWORK_SYMBOL.match(symbol):
        # only where the failed load is the target's own (a library file, its tree read)
        definer = facts.unlinked_torch_definers([symbol]).get(symbol) if own else None
        if definer:
            return (f" — a torch symbol the installed torch {tv.version} exports ({definer}), "
                    f"but the library does not link {definer}: linked without torch's "
                    "libraries")
        return (f" — a torch symbol the installed torch {tv.version} does not export: built "
                "against another torch (release or C++ ABI)")
    tf = facts.tensorflow
    if tf is not None and _TF_SYMBOL.match(symbol):
        return (f" — a TensorFlow symbol the installed TensorFlow {tf.version} does not "
                "export: built against another tensorflow release")
    return ""


def _symbol_fix(facts: Facts, symbol: str, own: bool = False) -> str | None:
    """OD321's fix for a framework symbol: install the matching pair (None: the generic fix)."""
    note = _framework_symbol_note(facts, symbol, own)
    hidden = facts.hidden_torch_defining((symbol,)) if "torch" in note else None
    if hidden:
        # the torch it was built for is installed, behind another environment's site on
        # PYTHONPATH (survey 22's E6): the rebuild the fix offered bakes the pollution in
        where, hver, entry = hidden
        return (f"take {entry} off sys.path for this job (PYTHONPATH): it puts another torch "
                f"first, and torch {hver} — installed at {where}, exporting "
                f"{brief(demangle(symbol))} — is the torch the extension was built for; nothing "
                "to rebuild")
    if "TensorFlow" in note:
        return ("install the release of the package built for the installed TensorFlow (each "
                "release pairs with one TensorFlow minor), or the TensorFlow it was built for")
    if "linked without torch's libraries" in note:
        return ("link torch's libraries: -L<torch>/lib -lc10 -ltorch_cpu -ltorch "
                "(torch.utils.cpp_extension and CMake's find_package(Torch) add them)")
    if note:
        return ("install the release of the extension built for the installed torch (or the "
                "torch it was built for), or rebuild it against this torch")
    return None


def _links_torch(facts: Facts, name: str, loads: tuple[tuple[str, str, str], ...]
                 ) -> bool | None:
    """Whether the library that needs ``name`` links torch: the target when it is a file;
    in a package run, the library whose ctypes load failed on ``name`` during the import
    (bitblas: tvm's ``_load_lib`` loads libtvm.so, which needs libnvrtc.so.12). None when
    that is not known."""
    if os.path.isfile(facts.path):
        return None if facts.structure.image is None else facts.torch_context
    for path, _where, error in loads:
        if name in error and os.path.isfile(path):
            return facts.links_torch(path)
    return None


def _vendored_directory_searched(facts: Facts, name: str) -> str:
    """An auditwheel ``<dist>.libs`` directory that an RPATH or RUNPATH told the real loader
    to search for ``name`` and that does not exist (the package copied without it: survey
    21's ``cv2/`` alone, whose probe gave the generic search-path fix); "" otherwise."""
    res = facts.probe_result()
    search = res.trace.search_for(name) if res is not None else None
    for dirs, why in search.paths if search is not None else ():
        if "RPATH" not in why and "RUNPATH" not in why:
            continue
        for d in dirs.split(":"):
            d = os.path.normpath(d)
            if d.endswith(".libs") and not os.path.exists(d):
                return d
    return ""

def _not_found(facts: Facts, name: str, hidden: str, ev: list[str],
               loads: tuple[tuple[str, str, str], ...] = ()) -> Finding:
    """A library the real loader did not find: OD220 (a search-path problem), or OD315 when
    only another build of torch provides it (libc10_cuda.so beside a CPU torch,
    libcudart.so.12 beside a CUDA 13 torch) — a variant mismatch no search path can fix.
    ``loads``: the ctypes loads that failed during a package's import (path, where, error)."""
    variant, major = variant_library(name)
    tv = facts.torch_variant if variant else None
    torch_major = int(tv.cuda.split(".")[0]) if tv is not None and tv.cuda and \
        tv.cuda.split(".")[0].isdigit() else None
    other_build = tv is not None and (variant != tv.variant or (
        major is not None and torch_major is not None and major != torch_major))
    if other_build and not name.startswith(("libc10", "libtorch", "libcaffe2")) and \
            _links_torch(facts, name, loads) is False:
        # A CUDA runtime missing for a library that links no torch (bitblas's libtvm.so needs
        # libnvrtc.so.12): no torch build brings it to that library — a search-path problem.
        other_build = False
    if tv is None or not other_build:
        # a toolkit's or the driver's library (libnvrtc.so.12 of bitblas's libtvm.so): the
        # static check's fix for it, not "RPATH or LD_LIBRARY_PATH"
        gone = _vendored_directory_searched(facts, name)
        return OD220.finding(name, f"{name} was not found by the real loader{hidden}", ev,
                             fix=vendored_directory_gone(gone) if gone else
                             runtime_library_fix(name, [name]) or None)
    have = {"cpu": "a CPU-only build", "rocm": "a ROCm build"}.get(
        tv.variant, f"a CUDA {tv.cuda or ''} build".replace(" build", " build").strip())
    want = "CUDA" if variant == "cuda" else "ROCm"
    if major is not None:
        want += f" {major}"
    ext = facts.extension_variant
    dist = ext.distribution or "the extension"
    built = f"{dist} {ext.package_version}".strip() if ext.package_version else dist
    ev = [*ev, f"{name} ships only with a {want} build of torch",
          f"installed torch {tv.version}: {have}"]
    if ext.package_version:
        ev.append(f"{dist} version {ext.package_version}"
                  + (f" (requires {ext.requires_torch})" if ext.requires_torch else ""))
    fix = (f"install matching builds: {cpu_build(dist, tv.version)}, or the "
           f"{want} build of torch {built} was made for"
           + (f" ({ext.requires_torch})" if ext.requires_torch else "")
           + "; never patch RPATH/LD_LIBRARY_PATH for this") if tv.variant == "cpu" else (
        f"install {dist} built for torch {tv.version} from the same index as torch, or the "
        f"torch build it was made for")
    return OD315.finding(name, f"{name} was not found by the real loader{hidden}: it belongs "
                         f"to a {want} build of torch, and the installed torch {tv.version} is "
                         f"{have}", ev, fix=fix)


_FAILED_FILE = re.compile(r"(/[^\s:'\"]+\.so(?:\.[\w.]+)?): undefined symbol")


def _mine(facts: Facts) -> set[str]:
    """The real paths of the target and of every library its dependency tree loads."""
    return {os.path.realpath(facts.path)} | {
        os.path.realpath(lib.path) for lib in facts.process.tree.order if lib.path}


def _own_not_found(facts: Facts, text: str) -> re.Match[str] | None:
    """The first "cannot open shared object file" of ``text`` whose library the target's own
    dependency tree needs (None: none of them, or the target is a package directory)."""
    if facts.is_package_dir:
        return None
    tree = facts.process.tree
    names = {m.name for m in tree.missing} | {lib.name for lib in tree.order}
    return next((m for m in _NOT_FOUND.finditer(text)
                 if os.path.basename(m.group(1)) in names), None)


def _failed_elsewhere(facts: Facts, res: ProbeOutcome, name: str) -> str:
    """Package mode: the library whose load failed on ``name`` during the import, when it is
    neither the target nor in its tree ("" otherwise, or when no failed load names it)."""
    if not facts.options.package or facts.is_package_dir:
        return ""
    mine = _mine(facts)
    return next((path for path, _where, error in res.failed_loads
                 if name in error and os.path.realpath(path) not in mine), "")


def _another_library(facts: Facts, text: str) -> str:
    """Package mode: the library an "undefined symbol" load error names when it is neither
    the target nor one the target loads ("" otherwise). fbgemm-gpu-cpu 1.7's import stops at
    fbgemm_gpu_tbe_utils.so; the report of asmjit.so (which that import never reached) must
    not call that symbol its own."""
    if not facts.options.package or facts.is_package_dir:
        return ""
    m = _FAILED_FILE.search(text)
    if m is None:
        return ""
    return "" if os.path.realpath(m.group(1)) in _mine(facts) else m.group(1)


def _in_requirement(facts: Facts, text: str, sym: str) -> Finding | None:
    """Package mode: OD321 for an "undefined symbol" load error of a library of another
    installed package than the one checked — a requirement its import reaches. torchrec 1.5.0
    beside fbgemm-gpu-cpu 1.9.0 and torch 2.13: `import torchrec` dies in fbgemm_gpu's import
    (fbgemm_gpu_tbe_index_select.so needs a torch 2.14 symbol), and the verdict named neither
    that library nor its package (survey 18). Subject, message and fix are the requirement's:
    its own compatibility table's pair where it has one (fbgemm_gpu/__init__.py)."""
    # Read only on this failure's path: not at every check's start-up.
    from opdoctor.facts.pkgdir import package_of
    from opdoctor.facts.pyguard import table_pair_fix
    from opdoctor.facts.requires import is_framework
    from opdoctor.facts.variant import package_metadata

    chain = facts.chain
    m = _FAILED_FILE.search(text)
    if not facts.options.package or chain is None or not chain.package_dir or m is None:
        return None
    path = m.group(1)
    got = package_of(path)  # (its top-level package, the directory it is imported from)
    if got is None or os.path.realpath(os.path.join(got[1], got[0])) == \
            os.path.realpath(chain.package_dir):
        return None
    top = os.path.join(got[1], got[0])
    version, _requires, dist = package_metadata(top)
    if is_framework(dist or got[0]):
        return None  # the framework's own library: its install is the story, told elsewhere
    name = f"{got[0]} ({dist} {version})" if dist and version else got[0]
    req = Facts(path, dataclasses.replace(facts.options, package="", probe=False))
    note = _framework_symbol_note(req, sym, True)
    fix = _symbol_fix(req, sym, True)
    interp = facts.interpreter
    if "another torch" in note and interp is not None and interp.torch is not None:
        tv = interp.torch.version
        init = os.path.join(top, "__init__.py")
        fix = (table_pair_fix(init, dist or got[0], version, "torch", tv)
               if os.path.isfile(init) else "") or installed_release_fix(
            req, tv, why=f" (the release {got[0]}'s notes pair with it)") or fix
    return OD321.finding(
        path, f"`import {facts.probed_import or chain.name}` fails in its requirement {name}, "
        f"at {os.path.basename(path)}: undefined symbol {brief(demangle(sym))}{note}",
        (f"dlopen: undefined symbol: {sym}", *_in_full(sym), f"named by the error: {path}"),
        fix=fix)


def _looked_up_by_name(text: str) -> Finding | None:
    """OD220 for a library of the operating system that the package looks up by name before
    loading it (``ctypes.util.find_library``) and, not finding it, raises its own error:
    sounddevice's "OSError: PortAudio library not found" without libportaudio2. No dlopen
    ran, so nothing else names the library; the import's failure (OD511) was the verdict —
    cause 5, with a fix that said "reads as cause 2" (survey 23's F7). The message form is
    explain's (python.ctypes-library-not-found), and only where the loader's cache really
    lacks the library."""
    from opdoctor.facts.exceptionreading import read_exception
    from opdoctor.facts.loader.ldcache import load_ld_cache
    from opdoctor.facts.syslibs import by_project, system_library_fix

    lines = text.strip().splitlines()
    said = re.sub(r"^\w+(?:Error|Exception): ", "", lines[0]) if lines else ""
    reading = read_exception("OSError", said) if said else None
    if reading is None or reading.subcause != "python.ctypes-library-not-found":
        return None
    project = reading.entities.get("project", "")
    lib = by_project(project)
    if not lib or lib in load_ld_cache("/etc/ld.so.cache"):
        return None
    return OD220.finding(
        lib, f"{lib} ({project}) was not found: the package looks it up by name at import "
        f"and raised \"{said}\"",
        (f"raised: {said}", f"{lib}: not in the loader's cache (/etc/ld.so.cache), "
         "where ctypes.util.find_library looks"),
        fix=system_library_fix(lib) or None)


def _classify_load_error(facts: Facts, res: ProbeOutcome, text: str) -> Iterator[Finding]:
    if "Only a single TORCH_LIBRARY" in text or "Tried to register an operator" in text:
        yield from _duplicate(facts, text)
        return
    refusal = read_refusal(text)
    if refusal is not None:
        yield _refused(facts, refusal, "failed")
        return
    if m := _VERSION.search(text):
        yield OD322.finding(facts.path, f"version {m.group(1)} not found",
                            (text.strip().splitlines()[0][:400], *[
                                f"ld.so checked {v} in {f}" for v, f, _r in res.trace.versions
                                if v == m.group(1)][:3]))
        return
    if looked_up := _looked_up_by_name(text):
        yield looked_up
        return
    if m := _NOT_FOUND.search(text):
        # A package that tries one library after another (torchcodec: core8 … core4, one per
        # FFmpeg major) reports every attempt: this report's is the name its own library
        # needs, not the first attempt's (survey 9: core4's report confirmed its missing
        # libavutil.so.56 with core8's libavutil.so.60).
        own = _own_not_found(facts, text)
        m = own or m
        name = os.path.basename(m.group(1))
        ev = [f"dlopen: {m.group(0)}", *res.trace.evidence_for(name)]
        found = _not_found(facts, name, "", ev, res.failed_loads)
        plugin = device_plugin_here(facts) if found.code == "OD220" else None
        if plugin is not None:
            # MindSpore's lib/plugin/ascend/*: loaded alone its first miss is one of
            # MindSpore's own libraries; on this machine its package never loads it (the
            # static check's reading, which the probe's error overrode: survey 20)
            toolkit, device, why = plugin
            yield dataclasses.replace(
                found, severity=device_plugin_severity(facts), message=f"{found.message}: "
                f"{os.path.basename(facts.path)} is {'an' if toolkit[0] in 'AEIOU' else 'a'} "
                f"{toolkit} device plugin of its package, loaded only on a machine with an "
                f"{device} (this one has none)", evidence=(*found.evidence, *why),
                fix=f"nothing to fix on this machine, which never loads it; where the package "
                f"runs on an {device}, its package's libraries and {toolkit}'s must be found")
            return
        other = "" if own else _failed_elsewhere(facts, res, name)
        if other:
            found = dataclasses.replace(
                found, message=f"`import {facts.probed_import}` fails at "
                f"{os.path.basename(other)}, not at this library: {found.message}",
                evidence=(*found.evidence, f"the load that failed: {other}"))
        yield found
        return
    if m := _UNDEF.search(text):
        sym = m.group(1)
        required = _in_requirement(facts, text, sym)
        if required is not None:
            yield required
            return
        other = _another_library(facts, text)
        mine = not other and not facts.is_package_dir and facts.structure.image is not None
        yield OD321.finding(other or facts.path,
                            (f"`import {facts.probed_import}` fails at "
                             f"{os.path.basename(other)}, not at this library: " if other
                             else "") + f"undefined symbol {brief(demangle(sym))}"
                            f"{_framework_symbol_note(facts, sym, mine)}",
                            (f"dlopen: undefined symbol: {sym}", *_in_full(sym),
                             *([f"named by the error: {other}"] if other else [])),
                            fix=_symbol_fix(facts, sym, mine))
        return
    mapped = _map_failure(facts, text)
    if mapped is not None:
        yield mapped
        return
    yield OD420.finding(facts.path, "the load failed", text.strip().splitlines()[-4:])


def _map_failure(facts: Facts, text: str) -> Finding | None:
    """The loader's "failed to map segment from shared object" on a file system that allows
    execution (OD419 covers a noexec one): the process's address-space limit (``ulimit -v``,
    a job's memory limit), which the probe inherits, is below what mapping the library takes —
    said with the limit and the file's size, rather than "the load failed"."""
    import resource

    from opdoctor.facts.loaderror import MAP_SEGMENT

    m = MAP_SEGMENT.search(text)
    if m is None:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None  # not the limit: the file's copy or a security policy (the message says)
    named = m.group(1) or facts.path
    ev = [f"{m.group(0)}", f"address-space limit of this process and its children: "
          f"{soft >> 20} MiB (ulimit -v {soft >> 10})"]
    img = facts.structure.image
    if img is not None and os.path.basename(named) == os.path.basename(facts.path):
        # what mapping it takes: its loadable segments' memory sizes (.bss included), not
        # the file's size
        from opdoctor.facts.elf.validate import PT_LOAD

        span = sum(seg.memsz for seg in img.segments if seg.p_type == PT_LOAD)
        ev.append(f"{os.path.basename(named)} maps {span >> 20} MiB (its PT_LOAD segments), "
                  "beside what the process has mapped already")
    return OD420.finding(
        facts.path, f"the load failed: the loader found {os.path.basename(named)} and could not "
        f"map it within the process's address-space limit ({soft >> 20} MiB)", ev,
        fix="raise the limit for the job — `ulimit -v unlimited` in its shell, or the "
        "scheduler's virtual-memory limit (Slurm's VSizeFactor, a container's) — a framework "
        "process maps gigabytes of address space it never touches")


def _target_was_loaded(facts: Facts, res: ProbeOutcome) -> bool:
    """Whether the probe's load mapped the library checked. In package mode the probe imports
    the package, which need not load this library at all (executorch's custom_ops/__init__.py is
    empty; its ops library is loaded later by custom_ops.py): "loaded but registered no
    operator" would then describe a load that never happened. The import chain judges whether
    the package reaches its libraries (OD505)."""
    if not facts.options.package or not os.path.isfile(facts.path):
        return True
    return res.maps(facts.path)


def _python_module_only(facts: Facts) -> bool:
    """A Python extension module (PyInit_) with no sign of an operator registration: its
    functions are called from Python (executorch's pybindings, torch-harmonics' helpers), it
    links torch for tensors, and registering no operator is what it is built to do."""
    if facts.is_package_dir:
        return False  # no library file of its own to read
    inv = facts.registration
    return bool(inv.pyinit) and not (inv.namespaces or inv.schemas or
                                     inv.legacy_register_operators or inv.constructs_library or
                                     inv.stable_abi)


def _kernels_for_defined_ops(facts: Facts, res: ProbeOutcome) -> bool:
    """A library that only adds kernels (TORCH_LIBRARY_IMPL) to a namespace another library
    defined, loaded after that one (`--preload` of the schema library, as OD126 advises):
    no new operator name is what it does, and no registration was left dangling (survey 24's
    H8: "registered no operator", an error, for a kernel library that works)."""
    if facts.is_package_dir or res.dangling:
        return False
    spaces = facts.registration.namespaces.values()
    impl = [ns for ns in spaces if ns.impl_keys]
    return bool(impl) and not any(ns.defines or ns.fragments for ns in spaces)


def _registered(facts: Facts, res: ProbeOutcome) -> Iterator[Finding]:
    ops = {o.name: o for o in res.ops}
    # A TorchBind class is a registration too (vesin-torch registers only
    # torch.classes.vesin._NeighborList and works: survey 18).
    if not res.new_ops and not res.new_classes and _target_was_loaded(facts, res) and \
            not _python_module_only(facts) and not _kernels_for_defined_ops(facts, res):
        yield OD121.finding(facts.path, "the library loaded but registered no operator",
                            ("torch._C._dispatch_get_all_op_names(): no new entry after the "
                             "load",))
    for exp in facts.expected_ops:
        name = f"{exp.namespace}::{exp.op}"
        o = ops.get(name)
        if o is None:
            continue  # not registered at all: the static OD106 says it, OD121 if nothing is
        missing = [k for k in exp.keys if k not in o.keys
                   and "CompositeImplicitAutograd" not in o.keys]
        if missing:
            yield OD122.finding(name, f"{name} is registered with {', '.join(o.keys) or 'no'} "
                                f"kernels, not {'/'.join(missing)}: calls with "
                                f"{missing[0]} tensors fail with \"Could not run '{name}' with "
                                f"arguments from the '{missing[0]}' backend\"",
                                (f"registered at {o.registered_at}",
                                 *[f"{k}: registered at {s}" for k, s in o.key_sites.items()]))
    if res.dangling:
        yield OD126.finding(facts.path, f"{len(res.dangling)} kernel registration(s) without a "
                            "definition", tuple(dangling_line(d) for d in res.dangling[:5]))
    for r in res.smoke:
        if r.ok is False:
            kind = r.error.type if r.error else "an error"
            yield OD127.finding(r.name, f"calling {r.name} on small CPU tensors raised "
                                f"{kind}", (r.detail[:400],))


def dangling_line(dump: str) -> str:
    """One evidence line for one entry of ``torch._C._dispatch_find_dangling_impls()``, which is
    a multi-line dispatcher dump ("name: ns::op", "schema: (none)", "CPU: registered at
    file.cpp:44 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]"): ``ns::op: no schema (no
    def); CPU kernel registered at file.cpp:44``. Lines it does not recognise are kept, joined."""
    name, schema, kernels, other = "", "", [], []
    for line in (x.strip() for x in dump.splitlines()):
        key, sep, rest = line.partition(": ")
        if not line:
            continue
        if key == "name" and sep:
            name = rest
        elif key == "schema" and sep:
            schema = "no schema (no def)" if rest.strip() == "(none)" else f"schema {rest}"
        elif sep and rest.startswith("registered at "):
            kernels.append(f"{key} kernel registered at {rest[14:].split(' :: ')[0]}")
        else:
            other.append(line)
    parts = [p for p in (schema, *kernels, *other) if p]
    return f"{name}: {'; '.join(parts)}" if name else "; ".join(parts) or dump.strip()


def section(facts: Facts) -> dict[str, Any]:
    """What the probe observed, for the report."""
    res = facts.probe_result()
    if res is None:
        return {"ran": False}
    from opdoctor.facts.probe.outcome import ProbeState

    return {
        "ran": True,
        "seconds": round(res.seconds, 3),
        # Of those, waiting for opdoctor's own analysis (the library it picks, the imports
        # to retry): the probe's own time is the difference.
        "waited_for_opdoctor": round(res.waited_seconds, 3),
        "outcome": (res.signal_name if res.state is ProbeState.CRASHED and res.signal_name
                    else f"{res.failed_framework} import failed"
                    if res.state is ProbeState.FRAMEWORK_IMPORT_FAILED and res.failed_framework
                    else res.state.value),
        "torch": res.framework_version,
        "new_ops": list(res.new_ops),
        **({"new_classes": list(res.new_classes)} if res.new_classes else {}),
        "ops": [{"name": o.name, "schema": o.schema, "keys": list(o.keys),
                 "registered_at": o.registered_at, **({"meta_stub": True} if o.meta_stub
                                                      else {})} for o in res.ops],
        "load_error": res.load_message,
        "static_prediction": "" if facts.is_package_dir else _static_prediction(facts),
        # Package mode: what the probe ran was `import <package>`, and whether that import
        # mapped the library checked (tensorflow-io loads its op libraries only when an op
        # is first used): "loaded" must not be read as "this library loaded".
        "imported": facts.probed_import if facts.options.package else "",
        "target_loaded": facts.is_package_dir or _target_was_loaded(facts, res),
        "smoke": [{"name": s.name, "ok": s.ok, "detail": s.detail} for s in res.smoke],
        "ld_trace_lines": res.trace.lines,
        # Forked from a child that had imported the framework once for the command's module
        # probes (facts/probe/zygote.py), not a child of its own.
        "forked": res.forked,
    }


def _import_only(facts: Facts) -> bool:
    """Package mode with no library to load: a package directory, or a single-file module
    (sounddevice.py): the probe's import is all there is to classify."""
    return facts.is_package_dir or (bool(facts.options.package) and facts.path.endswith(".py"))


def _applies(facts: Facts) -> str:
    if not facts.options.probe:
        if facts.options.wheel and facts.is_package_dir:
            return "a pure-Python wheel: nothing compiled to execute"
        return "--static: the probe (which executes the library) was not run"
    if facts.unpacked_on_noexec:
        return (f"the wheel's unpacked copy is on {facts.unpacked_on_noexec}, mounted noexec: "
                "nothing of it can be loaded here (OD419)")
    if _import_only(facts):
        return ""  # package mode: the probe imports the package (see run)
    if facts.blocker:
        return facts.blocker
    if facts.framework_library:
        return f"part of the {facts.framework_library} install"
    return ""


CHECK = Check(
    name="probe",
    summary="load the library for real in a sandboxed child of the target interpreter",
    # Not IMPORT_CHAIN, although OD513 (torch's own import failing on a backend it
    # auto-loads) is of cause 5: the probe does not check a library's import chain, and a
    # static run must not list it as what would have checked cause 5.
    causes=(Cause.REGISTRATION, Cause.LIBRARY_PATH, Cause.VERSION),
    codes=CODES,
    run=run,
    section=section,
    # A package whose chain resolves no library is still imported for real (package mode).
    needs_elf=False,
    applies=_applies,
)
