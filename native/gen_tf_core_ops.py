"""Write src/opdoctor/explain/tf_core_ops.txt: the op names TensorFlow itself registers.

Usage: build/venv-tf/bin/python native/gen_tf_core_ops.py [--check]

`opdoctor explain` reads "Op type not registered 'X'" differently for an op of TensorFlow's own
(a binary built without it, or older than the graph: VariableV2, NcclAllReduce, QuantizedAdd)
and for a custom op (its package's op library not loaded). The list is TensorFlow's op
registry as `tf.raw_ops` exposes it, taken from the TensorFlow the project pins (build/venv-tf);
explain never imports TensorFlow, it reads this file.
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "opdoctor" / "explain" / "tf_core_ops.txt"


def main(argv: list[str]) -> int:
    """Write the list (or, with --check, say whether the file is current)."""
    import tensorflow as tf

    names = sorted(n for n in dir(tf.raw_ops) if not n.startswith("_"))
    head = f"# TensorFlow {tf.__version__}: tf.raw_ops ({len(names)} ops)\n"
    text = head + "\n".join(names) + "\n"
    if "--check" in argv:
        ok = OUT.exists() and OUT.read_text() == text
        print(f"{OUT} is {'current' if ok else 'out of date: run native/gen_tf_core_ops.py'}")
        return 0 if ok else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(names)} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
