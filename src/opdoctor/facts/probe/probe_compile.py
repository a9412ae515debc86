"""Compile readiness, observed in the probe (``--opcheck``): runs inside the target interpreter.

Loaded by ``probe_script.py`` by file path after the load succeeded and the new ops were
listed; standard library plus torch only (the target interpreter need not have opdoctor).
For each op: the dispatch keys that matter to torch.compile, whether a fake kernel exists
(torch's own predicate), the pystub (``m.set_python_module``) and whether its module imports,
whether autograd is registered, then ``torch.library.opcheck`` on sample inputs built from
the schema. Every step is guarded: an op that cannot be checked says why, it never stops the
probe.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# The keys that decide fake-tensor and autograd support (others are listed by the probe dump).
KEYS = ("CPU", "CUDA", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional", "Autograd", "AutogradCPU", "AutogradCUDA")
TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
         "test_aot_dispatch_dynamic")
_AUTOGRAD_KEYS = ("Autograd", "AutogradCPU", "AutogradCUDA", "CompositeImplicitAutograd")


def _short(exc: BaseException, limit: int = 600) -> str:
    return str(exc).strip()[:limit]


def _overload(torch: Any, name: str) -> Any:
    """``ns::op`` or ``ns::op.overload`` → the OpOverload."""
    ns, rest = name.split("::", 1)
    op, _, ov = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), op), ov or "default")


def _opdef(torch: Any, name: str) -> Any:
    """The CustomOpDef of a ``torch.library.custom_op`` op (None for every other op)."""
    mod = getattr(getattr(torch, "_library", None), "custom_ops", None)
    if mod is None:
        return None
    getter = getattr(mod, "_maybe_get_opdef", None)
    try:
        if getter is not None:
            return getter(name)
        return getattr(mod, "OPDEFS", {}).get(name)
    except Exception:
        return None


def _simple_fake(torch: Any, name: str) -> bool:
    """A Python fake impl registered with torch.library.register_fake / impl_abstract."""
    try:
        entry = torch._library.simple_registry.singleton.find(name)
        return entry.fake_impl.kernel is not None
    except Exception:
        return False


def fake_kernel(torch: Any, op: Any, name: str, keys: list[str]) -> tuple[bool, str]:
    """(exists, what provides it). torch's own predicate when this release has it.

    ``_dispatch_has_kernel_for_dispatch_key(name, "Meta")`` is not the answer: a custom_op
    always has a Meta kernel (it raises "no fake impl registered"). The fallback applies the
    rules of torch 2.13's ``has_fake_kernel`` by hand.
    """
    opdef = _opdef(torch, name)
    if opdef is not None:
        via = "register_fake (custom_op)" if getattr(opdef, "_abstract_fn", None) else ""
    elif "CompositeImplicitAutograd" in keys:
        via = "CompositeImplicitAutograd kernel"
    elif "CompositeExplicitAutograd" in keys:
        via = "CompositeExplicitAutograd kernel"
    elif _simple_fake(torch, name):
        via = "torch.library.register_fake"
    elif "Meta" in keys:
        via = "Meta kernel"
    else:
        via = ""
    try:
        from torch._library.utils import has_fake_kernel  # torch ≥ 2.4
    except ImportError:
        return bool(via), via + " (opdoctor's fallback rules)" if via else ""
    try:
        return bool(has_fake_kernel(op)), via
    except Exception as exc:
        return bool(via), f"{via} (has_fake_kernel raised {type(exc).__name__})"


def _sample(torch: Any, arg: Any, grad: bool) -> tuple[bool, Any, str]:
    """(ok, value, description) of a small CPU value for one schema argument."""
    typ = str(arg.type)
    if arg.has_default_value():
        return True, arg.default_value, f"{arg.name}=default"
    write = bool(arg.alias_info is not None and arg.alias_info.is_write)

    def tensor() -> Any:
        return torch.randn(2, 3, requires_grad=grad and not write)

    if typ == "Tensor":
        return True, tensor(), f"{arg.name}=randn(2,3)"
    if typ.startswith("Optional["):
        return True, None, f"{arg.name}=None"
    if typ == "List[Tensor]":
        return True, [tensor(), tensor()], f"{arg.name}=[randn(2,3)]*2"
    simple = {"int": 1, "float": 0.5, "bool": False, "number": 0.5, "List[int]": [1],
              "Device": torch.device("cpu")}
    if typ in simple:
        return True, simple[typ], f"{arg.name}={simple[typ]!r}"
    return False, None, f"argument '{typ} {arg.name}' (no sample value for this type)"


def sample_args(torch: Any, op: Any, grad: bool) -> tuple[tuple[Any, ...] | None, str]:
    """Positional sample inputs from the schema (None and the reason when unsatisfiable)."""
    args, desc = [], []
    for arg in op._schema.arguments:
        if arg.kwarg_only:
            if arg.has_default_value():
                continue
            return None, f"keyword-only argument '{arg.name}' without a default"
        ok, value, text = _sample(torch, arg, grad)
        if not ok:
            return None, text
        args.append(value)
        desc.append(text)
    return tuple(args), ", ".join(desc) + (" (requires_grad)" if grad else "")


class TorchTests:
    """torch's own opcheck sub-tests, importing only what each one needs.

    ``torch.library.opcheck`` imports ``torch.testing._internal.optests``, whose
    ``generate_tests.py`` imports ``torch._dynamo`` unconditionally: 2.5-3 s, more than the rest
    of the probe after ``import torch``. Only ``test_aot_dispatch_dynamic`` needs it (AOT
    autograd). The other three are run with torch's own check functions — ``fake_check`` and
    ``autograd_registration_check``, loaded from their files under a private name so that the
    package's ``__init__`` (which imports generate_tests) does not run — wrapped exactly as
    generate_tests' ``safe_*_check`` wrap them. On a release where those files are not where
    2.13 has them, every test goes through ``torch.library.opcheck`` as before.
    """

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.light: dict[str, Any] | None = None
        try:
            from torch._subclasses.schema_check_mode import SchemaCheckMode
            fake = self._load("fake_tensor.py").fake_check
            grad = self._load("autograd_registration.py").autograd_registration_check
            self.light = {"schema_mode": SchemaCheckMode, "fake_check": fake,
                          "autograd_registration_check": grad}
        except Exception:  # another layout: the full opcheck below
            self.light = None

    def _load(self, filename: str) -> Any:
        base = os.path.join(os.path.dirname(self.torch.__file__), "testing", "_internal",
                            "optests")
        spec = importlib.util.spec_from_file_location("_opdoctor_optests_" + filename[:-3],
                                                      os.path.join(base, filename))
        if spec is None or spec.loader is None:
            raise ImportError(filename)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def _copy(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """generate_tests' deepcopy_tensors (dynamo's clone_input) for dense CPU inputs."""
        def one(x: Any) -> Any:
            if isinstance(x, self.torch.Tensor):
                return x.detach().clone().requires_grad_(x.requires_grad)
            if isinstance(x, list):
                return [one(y) for y in x]
            return x
        return tuple(one(a) for a in args)

    def _needs_grad(self, args: tuple[Any, ...]) -> bool:
        flat = [y for a in args for y in (a if isinstance(a, list) else [a])]
        return any(isinstance(x, self.torch.Tensor) and x.requires_grad for x in flat)

    def _run_light(self, test: str, op: Any, args: tuple[Any, ...]) -> Any:
        assert self.light is not None
        try:
            if test == "test_schema":
                copied = self._copy(args)  # outside the mode, as safe_schema_check does
                with self.light["schema_mode"]():
                    op(*copied)
            elif test == "test_autograd_registration":
                if self._needs_grad(args):  # safe_autograd_registration_check's rule
                    self.light["autograd_registration_check"](op, self._copy(args), {})
            else:
                self.light["fake_check"](op, self._copy(args), {})
            return "SUCCESS"
        except Exception as exc:
            return exc

    def run(self, op: Any, args: tuple[Any, ...], tests: tuple[str, ...]) -> dict[str, Any]:
        """{test: "SUCCESS" | exception | a "not run: …" string}, like opcheck's dict."""
        if self.light is None:
            return dict(self.torch.library.opcheck(op, args, test_utils=tests,
                                                   raise_exception=False))
        res: dict[str, Any] = {}
        for t in tests:
            if t != "test_aot_dispatch_dynamic":
                res[t] = self._run_light(t, op, args)
            elif res.get("test_faketensor", "SUCCESS") != "SUCCESS":
                # AOT dispatch traces the op with fake tensors too: with test_faketensor
                # failing there is nothing more to learn, and running it costs the dynamo import.
                res[t] = NOT_RUN
            else:
                res.update(self.torch.library.opcheck(op, args, test_utils=t,
                                                      raise_exception=False))
        return res


NOT_RUN = "not run: test_faketensor failed, and AOT dispatch runs the op on fake tensors too"


def _opcheck(torch: Any, runner: TorchTests, op: Any, grad: bool,
             entry: dict[str, Any]) -> None:
    """Run torch's opcheck tests on fresh sample inputs and record each test."""
    built, why = sample_args(torch, op, grad)
    if built is None:
        entry["skipped"] = f"schema cannot be satisfied: {why}"
        return
    entry["args"] = why
    try:  # the kernel must accept the inputs at all, or every test fails for that reason
        op(*built)
    except Exception as exc:
        entry["skipped"] = f"the kernel rejects the sample inputs: {type(exc).__name__}: " \
            f"{_short(exc, 300)}"
        return
    fresh, _ = sample_args(torch, op, grad)  # fresh: the call may have mutated them
    try:
        res = runner.run(op, fresh or built, TESTS)
    except Exception as exc:
        entry["tests"] = [{"test": t, "ok": False, "type": type(exc).__name__,
                           "message": _short(exc)} for t in TESTS]
        return
    tests: list[dict[str, Any]] = []
    for t in TESTS:
        if t not in res:  # a release that does not run this test
            tests.append({"test": t, "ok": False, "skipped": "not run by this torch release"})
            continue
        v = res[t]
        if v == "SUCCESS":
            tests.append({"test": t, "ok": True})
        elif v == NOT_RUN:
            tests.append({"test": t, "ok": False, "skipped": NOT_RUN})
        else:
            tests.append({"test": t, "ok": False, "type": type(v).__name__,
                          "message": _short(v) if isinstance(v, BaseException) else str(v)[:600]})
    if not grad:
        # No autograd registered: the op is tested as inference-only (no requires_grad, so
        # aot_dispatch does not demand a backward) — but opcheck's autograd test still runs
        # with inputs that require grad: a backend kernel whose outputs require grad (an
        # autograd.Function inside it, or differentiable ATen calls) is what it exists to catch.
        for row in tests:
            if row["test"] == "test_autograd_registration":
                _autograd_with_grad(torch, runner, op, row)
    entry["tests"] = tests


def _autograd_with_grad(torch: Any, runner: TorchTests, op: Any, row: dict[str, Any]) -> None:
    built, _why = sample_args(torch, op, True)
    if built is None or not any(getattr(a, "requires_grad", False) for a in built):
        row.update(ok=True, skipped="no input can require grad")
        return
    try:
        v = runner.run(op, built, ("test_autograd_registration",)).get(
            "test_autograd_registration", "SUCCESS")
    except Exception as exc:
        v = exc
    row.pop("type", None)
    row.pop("message", None)
    if v == "SUCCESS":
        row.update(ok=True, skipped="")
    else:
        row.update(ok=False, type=type(v).__name__,
                   message=_short(v) if isinstance(v, BaseException) else str(v)[:600])


def inspect_op(torch: Any, name: str, opcheck: bool,
               runner: TorchTests | None = None) -> dict[str, Any]:
    """Keys, fake kernel, pystub, autograd and (when asked) opcheck results of one op."""
    entry: dict[str, Any] = {"name": name, "keys": [], "tests": []}
    try:
        op = _overload(torch, name)
    except Exception as exc:
        entry["skipped"] = f"not reachable as torch.ops.{name.replace('::', '.')}: {exc}"
        return entry
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    keys = [k for k in KEYS if has(name, k)]
    entry["keys"] = keys
    opdef = _opdef(torch, name)
    entry["custom_op"] = opdef is not None
    entry["fake"], entry["fake_via"] = fake_kernel(torch, op, name, keys)
    stub = None
    try:
        stub = torch._C._dispatch_pystub(op._schema.name, op._schema.overload_name)
    except Exception:
        stub = None
    entry["pystub"] = stub[0] if stub else ""
    if stub and not entry["fake"]:
        # What the user is told to do ("you may need to import the 'x' Python module").
        try:
            importlib.import_module(stub[0])
        except BaseException as exc:  # a broken module is the finding
            entry["pystub_error"] = f"{type(exc).__name__}: {_short(exc, 300)}"
        entry["fake_after_pystub"] = fake_kernel(torch, op, name, keys)[0]
    if opdef is not None:
        entry["autograd"] = getattr(opdef, "_backward_fn", None) is not None
        entry["autograd_via"] = "register_autograd" if entry["autograd"] else ""
    else:
        via = [k for k in _AUTOGRAD_KEYS if k in keys]
        entry["autograd"] = bool(via)
        entry["autograd_via"] = f"{via[0]} kernel" if via else ""
    if opcheck:
        _opcheck(torch, runner or TorchTests(torch), op, bool(entry["autograd"]), entry)
    return entry


def run(torch: Any, names: list[str], opcheck: bool, budget: float) -> dict[str, Any]:
    """Inspect every op (opcheck within ``budget`` seconds; later ops are marked skipped)."""
    start = time.monotonic()
    ops = []
    runner = TorchTests(torch) if opcheck else None
    for name in names:
        over = time.monotonic() - start > budget
        entry = inspect_op(torch, name, opcheck and not over, runner)
        if opcheck and over:
            entry["skipped"] = f"opcheck time budget ({budget:g} s) used up by earlier ops"
        ops.append(entry)
    return {"ops": ops, "opcheck": opcheck, "seconds": round(time.monotonic() - start, 3)}
