"""The bundled reference operator computes alpha*x1 + (1-alpha)*x2 through torch.ops."""

from __future__ import annotations

import pytest

from tests.conftest import PKG_DIR, cuda_built, reference
from tests.torchfork import run_python

SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import myop
x1 = torch.arange(6, dtype=torch.float32).reshape(2, 3)
x2 = torch.full((2, 3), 10.0)
got = torch.ops.myop.weighted_sum(x1, x2, 0.25)
want = 0.25 * x1 + 0.75 * x2
assert torch.allclose(got, want), (got, want)
assert torch.allclose(myop.weighted_sum(x1, x2, 1.0), x1)
keys = [k for k in ("CPU", "CUDA")
        if torch._C._dispatch_has_kernel_for_dispatch_key("myop::weighted_sum", k)]
print(",".join(keys))
"""


@pytest.mark.probe
def test_weighted_sum_numbers_on_cpu() -> None:
    reference()
    p = run_python(SCRIPT, str(PKG_DIR), timeout=120)
    assert p.returncode == 0, p.stderr
    keys = p.stdout.strip().splitlines()[-1].split(",")
    assert "CPU" in keys
    if cuda_built():
        print(f"CUDA kernel not checked: {cuda_built()}")
    else:
        assert "CUDA" in keys, "the reference was built with nvcc but registers no CUDA kernel"
