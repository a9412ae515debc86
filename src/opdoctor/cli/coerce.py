"""Parameter coercion without pydantic for the plain values opdoctor's options take.

typer (>= 0.25) coerces every parameter value through a pydantic ``TypeAdapter``, built the
first time the parameter is processed: for ``check``'s ~30 options that is importing pydantic
and building ~30 adapters, about a third of the CPU time of ``opdoctor check --static`` on a
small library. Every option of opdoctor is a ``str``, ``int``, ``float``, ``bool`` or
``list[str]``, and almost every value given is one pydantic would return unchanged (a string,
the tuple click collects for a repeatable option, a plain decimal number).

So each typer parameter gets a runtime parameter that returns those values itself — exactly
what the adapter returns for them (``tests/test_cli_coerce.py`` compares the two on real
pydantic) — and hands anything else (``1_000``, `` 5 ``, ``inf``, ``abc`` …) to typer's own
pydantic coercion, so its values and error messages stay typer's. With a typer without that
machinery (older releases) nothing is installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from opdoctor.cli.values import NOT_PLAIN, plain_value

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NOT_PLAIN", "_NOT_PLAIN", "install", "plain_value"]

try:  # typer's private coercion layer (typer >= 0.25); absent in older releases
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # pragma: no cover - depends on the installed typer
    RuntimeParam = None  # type: ignore[assignment,misc]

# The coercion itself lives in opdoctor.cli.values (the fast `check` path uses it without typer).
_NOT_PLAIN = NOT_PLAIN


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        """Coerces plain values itself; anything else through typer's pydantic adapter."""

        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            fast = plain_value(self.annotation, value)
            if fast is not _NOT_PLAIN:
                return fast
            slow = build_runtime_param(self.descriptor)
            return slow._coerce_value(value, param=param, ctx=ctx)


def install(params: list[Any]) -> None:
    """Give every typer parameter of a command the pydantic-free fast path (when this typer
    has the coercion layer this relies on; otherwise leave them alone)."""
    if RuntimeParam is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if (descriptor is None or getattr(param, "_runtime_param", 0) is not None
                or descriptor.file_annotation is not None
                or getattr(descriptor, "is_ranged", True)
                or getattr(descriptor, "is_choice", True)):
            continue
        param._runtime_param = PlainRuntimeParam(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
            descriptor=descriptor)
