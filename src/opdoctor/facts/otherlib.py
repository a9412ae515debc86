"""Facts about a library other than the target, read on a check's request: whether it defines
a set of symbols, whether it links torch. Checks see files only through ``facts``
(tests/test_layout.py); each answer reads the file once per command (memoised on its path,
size and mtime, cleared with the per-command caches)."""

from __future__ import annotations

import os
from functools import lru_cache

from opdoctor.facts import commandcache


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def defines_all(path: str, names: tuple[str, ...]) -> bool:
    """Whether the ELF library ``path`` exports (defined, visible) every symbol of ``names``;
    False when it cannot be read."""
    stamp = _stamp(path)
    return stamp is not None and _defines_all(path, stamp, names)


@lru_cache(maxsize=64)
def _defines_all(path: str, _stamp: tuple[int, int], names: tuple[str, ...]) -> bool:
    from opdoctor.facts.elf.dynsym import DynSymbols
    from opdoctor.facts.elf.image import ElfFormatError, ElfImage
    from opdoctor.facts.inputfile import InputError, open_input

    try:
        data = open_input(path)
    except (OSError, InputError):
        return False
    try:
        table = DynSymbols(ElfImage.open(data))
        return all(table.lookup(n) for n in names)
    except (ValueError, ElfFormatError, IndexError, KeyError):
        return False
    finally:
        data.close()


def links_torch(path: str, torch_lib_dir: str | None) -> bool | None:
    """Whether the ELF library ``path`` links torch's libraries or uses its symbols; None
    when it cannot be read."""
    stamp = _stamp(path)
    return None if stamp is None else _links_torch(path, stamp, torch_lib_dir)


@lru_cache(maxsize=64)
def _links_torch(path: str, _stamp: tuple[int, int], torch_lib_dir: str | None) -> bool | None:
    from opdoctor.facts.elf.image import ElfFormatError, ElfImage
    from opdoctor.facts.inputfile import InputError, open_input
    from opdoctor.facts.loader.process import needs_torch

    try:
        data = open_input(path)
    except (OSError, InputError):
        return None
    try:
        return needs_torch(ElfImage.open(data), torch_lib_dir)
    except (ValueError, ElfFormatError, IndexError, KeyError):
        return None
    finally:
        data.close()


commandcache.register(_defines_all.cache_clear, _links_torch.cache_clear)
