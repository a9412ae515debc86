"""What the user asked for that facts and checks may need, validated once.

``--expect-op`` is parsed here and nowhere else (the CLI validates with the same function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckOptions:
    """What the user asked for that checks may need (grows with the check families)."""

    expect_ops: tuple[str, ...] = ()
    expect_symbols: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()  # target GPUs (sm_90, 9.0, H100 …); empty: detect
    python: str | None = None  # target interpreter (default: the one opdoctor runs in)
    # The environment the job will run with; None means opdoctor's own os.environ.
    env: tuple[tuple[str, str], ...] | None = None
    probe: bool = False  # load the library for real in a child process (the CLI's default)
    timeout: float = 60.0  # seconds for the probe
    probe_memory_mb: int = 16384
    smoke: bool = False
    preload: tuple[str, ...] = ()  # libraries the job loads before this one
    against_site_packages: bool = False  # look for the same namespace in other installed .so
    package: str | None = None  # import chain: the package `import` should find
    cwd: str = ""  # the job's working directory (sys.path[0] of `python -c`); "" = os.getcwd()
    # The user named this library itself (not found by a directory walk, a wheel or `scan`):
    # a library that registers nothing then gets a finding saying so (OD116).
    named: bool = False
    opcheck: bool = False  # probe: compile readiness + torch.library.opcheck of each new op
    require: tuple[str, ...] = ()  # readiness the user requires: "compile" makes OD14x errors
    # Multiplies every stage's CPU budget (OD190); < 1 only to test, > 1 for huge inputs.
    budget_scale: float = 1.0
    # MindSpore AOT: the function named by ``lib.so:Func`` (ops.Custom's own notation).
    aot_function: str = ""
    # The wheel file this library was unpacked from (a build being gated, not an install: its
    # fixes rebuild it rather than swap releases).
    wheel: str = ""


# ``ns::op[KEYS]`` (torch) or ``Op[DEVICES]`` without a namespace: a TensorFlow op, whose
# name TensorFlow requires to start with a capital letter (so `weighted_sum` stays an error).
_EXPECT = re.compile(r"^(?:(?P<ns>[A-Za-z_]\w*)::(?P<op>[A-Za-z_][\w.]*)|(?P<tfop>[A-Z]\w*))"
                     r"(?:\[(?P<keys>[\w ,]*)\])?$")


@dataclass(frozen=True)
class ExpectedOp:
    """A parsed --expect-op ns::op[KEY,...]."""

    namespace: str
    op: str
    keys: tuple[str, ...]


def parse_expect_op(text: str) -> ExpectedOp:
    """Parse ``ns::op[CPU,CUDA]`` (or TensorFlow's ``Op[CPU,GPU]``, namespace "");
    raise ValueError with the expected form."""
    m = _EXPECT.match(text.strip())
    if not m:
        raise ValueError(f"--expect-op {text!r}: expected ns::op or ns::op[KEY,...] "
                         "(a TensorFlow op, capitalised: Op or Op[CPU,GPU])")
    keys = tuple(k.strip() for k in (m.group("keys") or "").split(",") if k.strip())
    if m.group("tfop"):
        return ExpectedOp("", m.group("tfop"), keys)
    return ExpectedOp(m.group("ns"), m.group("op").split(".")[0], keys)
