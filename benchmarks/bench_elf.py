"""Why opdoctor keeps its own hand-checked ELF reader instead of pyelftools at run time.

Measured side by side in one run on the largest library at hand (torch's libtorch_cpu.so):
open the file and read its dynamic section, then look up 1,000 of its exported names through
the GNU hash table — opdoctor's reader vs pyelftools' (GNUHashSection.get_symbol) — and, for
scale, pyelftools iterating every dynamic symbol. Median of 5 runs; ratios are printed.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from elftools.elf.elffile import ELFFile

from opdoctor.facts.elf.dynsym import DynSymbols
from opdoctor.facts.elf.image import ElfImage
from opdoctor.facts.inputfile import open_input


def _lib() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin, "torch is not installed in this interpreter"
    return Path(spec.origin).parent / "lib" / "libtorch_cpu.so"


def _median(fn: Callable[[], object], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    """Print the table."""
    path = _lib()
    data = open_input(str(path))
    table = DynSymbols(ElfImage.open(data))
    step = max(1, table.count // 1000)
    names = [s.name for i in range(1, table.count, step)
             if (s := table.symbol(i)).name and s.defined and table.lookup(s.name)][:1000]

    def ours() -> None:
        d = open_input(str(path))
        table = DynSymbols(ElfImage.open(d))
        assert all(table.lookup(n) for n in names)
        d.close()

    def pyelf() -> None:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            gnu = elf.get_section_by_name(".gnu.hash")
            assert all(gnu.get_symbol(n) is not None for n in names)

    def pyelf_iter() -> None:
        with open(path, "rb") as fh:
            sum(1 for _ in ELFFile(fh).get_section_by_name(".dynsym").iter_symbols())

    a, b, c = _median(ours), _median(pyelf), _median(pyelf_iter, 3)
    size = path.stat().st_size / 2**20
    print(f"libtorch_cpu.so ({size:.0f} MiB), {len(names)} hash lookups, median of 5")
    print(f"  opdoctor reader     {a:8.3f} s   1.00x")
    print(f"  pyelftools lookups  {b:8.3f} s   {b / a:5.1f}x")
    print(f"  pyelftools iterate  {c:8.3f} s   {c / a:5.1f}x  (every dynamic symbol)")


if __name__ == "__main__":
    sys.exit(main())
