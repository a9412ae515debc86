"""Facts: everything a check may read about one target, computed lazily once per run.

The :class:`Facts` object is the only door through which checks see the world: the file and
its ELF structure, the emulated loader, the target interpreter and its frameworks, the import
chain, the GPUs and the load probe. The readers behind it live in this package's modules
(``elf/``, ``loader/``, ``probe/``, ``interp``, ``registration``, ``cuda``, ``pychain`` …).
"""

from opdoctor.facts.core import Facts, HostInfo, detect_host
from opdoctor.facts.options import CheckOptions, ExpectedOp, parse_expect_op

__all__ = ["CheckOptions", "ExpectedOp", "Facts", "HostInfo", "detect_host", "parse_expect_op"]
