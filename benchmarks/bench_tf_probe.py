"""TensorFlow probe overhead: opdoctor's probe of a TensorFlow op library (child process,
LD_DEBUG trace, TF_GetOpList, kernels per device, registry lookups) against a bare
`python -c "import tensorflow as tf; tf.load_op_library(p)"`, same interpreter, same library.
Runs are interleaved (bare, probe, bare, probe …) so that load from other processes on a shared
machine falls on both alike. The target is at most 1.2× the bare load.

Usage: python benchmarks/bench_tf_probe.py [--repeat N] [--python PY] [LIB]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from opdoctor.facts.probe.outcome import ProbeState
from opdoctor.facts.probe.runner import ProbeRequest, start_probe

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OPDOCTOR_BUILD", ROOT / "build"))


def main() -> int:
    """Run the comparison and print a Markdown table; exit 1 when over 1.2×."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python", default=str(BUILD / "venv-tf/bin/python"))
    ap.add_argument("lib", nargs="?", default=str(BUILD / "fixtures/tensorflow/zero_out.so"))
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    if not os.path.exists(args.python):
        print(f"{args.python} missing: run `make venv-tf`", file=sys.stderr)
        return 2
    bare_code = f"import tensorflow as tf; tf.load_op_library({lib!r})"
    bare_t: list[float] = []
    probe_t: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([args.python, "-c", bare_code], check=True, capture_output=True)
        bare_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        res = start_probe(ProbeRequest(lib, args.python, False, tensorflow=True,
                                       tf_ops=("ZeroOut",), env=dict(os.environ))).wait()
        probe_t.append(time.perf_counter() - start)
        assert res.state is ProbeState.LOADED and res.tensorflow is not None, res.stderr[-2000:]
    bare, probe = statistics.median(bare_t), statistics.median(probe_t)
    print(f"library: {lib}, python: {args.python}, repeat={args.repeat}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    print("| what | median wall (s) | runs (s) | vs bare |")
    print("| --- | --- | --- | --- |")
    print(f"| bare import tensorflow + tf.load_op_library | {bare:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in bare_t)} | 1.00× |")
    print(f"| opdoctor TensorFlow probe | {probe:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in probe_t)} | {probe / bare:.2f}× |")
    return 0 if probe <= 1.2 * bare else 1


if __name__ == "__main__":
    sys.exit(main())
