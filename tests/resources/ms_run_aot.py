"""Run MindSpore AOT custom ops for real (inside build/venv-ms): one JSON line per spec.

    python ms_run_aot.py [--raw] /abs/lib.so:Func [...]

Each spec is called as ``ops.Custom(spec, out_shape=x, out_dtype=x, func_type="aot")`` on two
2x2 float32 ones tensors on CPU. The line says whether it returned (and what), or the exception
MindSpore raised, and what the process wrote to fd 2 meanwhile (MindSpore's log, the op's own
output). A spec that kills the process (exit 127, "symbol lookup error") writes no line; with
``--raw`` fd 2 is left alone, so the loader's own last words reach the parent.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import mindspore as ms
import numpy as np
from mindspore import ops

ms.set_device("CPU")


def call(spec: str) -> list[list[float]]:
    """Call the op once on two 2x2 float32 ones tensors."""
    op = ops.Custom(spec, out_shape=lambda x, _: x, out_dtype=lambda x, _: x, func_type="aot")
    x = ms.Tensor(np.ones((2, 2), np.float32))
    result: list[list[float]] = op(x, x).asnumpy().tolist()
    return result


def run(spec: str) -> dict[str, object]:
    """Call the op once; redirect fd 2 to a file meanwhile so its output is this spec's."""
    out: dict[str, object] = {"spec": spec}
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            out["result"] = call(spec)
        except Exception as exc:  # what MindSpore raises is the product
            out["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        out["stderr"] = tmp.read().decode(errors="replace")
    return out


if __name__ == "__main__":
    print(json.dumps({"mindspore": ms.__version__}), flush=True)
    if sys.argv[1:2] == ["--raw"]:
        for arg in sys.argv[2:]:
            print(json.dumps({"spec": arg, "result": call(arg)}), flush=True)
    else:
        for arg in sys.argv[1:]:
            print(json.dumps(run(arg)), flush=True)
