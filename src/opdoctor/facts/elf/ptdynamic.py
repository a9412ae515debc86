"""Libraries without a section header table (``sstrip``, some packers): read what ``ld.so``
reads, from ``PT_DYNAMIC`` alone.

The loader never looks at sections. It finds the dynamic array through the ``PT_DYNAMIC``
program header and everything else through its tags: ``DT_STRTAB``/``DT_STRSZ`` (names,
``DT_NEEDED``, ``DT_RUNPATH``), ``DT_SYMTAB`` (the dynamic symbols; their count comes from the
hash table, as in glibc's own ``dl-addr``), ``DT_GNU_HASH``/``DT_HASH``, ``DT_VERSYM``,
``DT_VERNEED``/``DT_VERNEEDNUM``, ``DT_VERDEF``/``DT_VERDEFNUM``, ``DT_INIT_ARRAY``. Addresses
are virtual: ``PT_LOAD`` segments map them to file offsets. The result is a list of synthetic
:class:`~opdoctor.facts.elf.image.Section` records named like the sections a linker would
have written, so every reader (dynamic tags, hash lookups, versions) works unchanged.
Everything is bounded by the file size; what cannot be mapped is simply absent.
"""

from __future__ import annotations

import struct

from opdoctor.facts.elf.image import SHT_DYNAMIC, ElfHeader, Section

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

PT_LOAD, PT_DYNAMIC = 1, 2
DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 4, 5, 6, 10, 11
DT_INIT_ARRAY, DT_INIT_ARRAYSZ = 25, 27
DT_GNU_HASH = 0x6FFFFEF5
DT_VERSYM, DT_VERDEF, DT_VERDEFNUM = 0x6FFFFFF0, 0x6FFFFFFC, 0x6FFFFFFD
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
SHT_STRTAB, SHT_DYNSYM, SHT_HASH, SHT_INIT_ARRAY = 3, 11, 5, 14
SHT_GNU_HASH, SHT_VERSYM, SHT_VERDEF, SHT_VERNEED = 0x6FFFFFF6, 0x6FFFFFFF, 0x6FFFFFFD, \
    0x6FFFFFFE


def _phdrs(hdr: ElfHeader, buf: Any) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of every program header inside the file."""
    e = "<" if hdr.little_endian else ">"
    size = 32 if hdr.bits == 32 else 56
    out = []
    for i in range(min(hdr.e_phnum, 4096)):
        off = hdr.e_phoff + i * size
        if off + size > len(buf):
            break
        if hdr.bits == 32:
            p_type, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(e + "IIIII", buf, off)
        else:
            p_type, _f, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(e + "IIQQQQ", buf,
                                                                              off)
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def synthesize_sections(hdr: ElfHeader, buf: Any) -> list[Section]:
    """Synthetic sections for a file with no section header table (empty when it has no
    ``PT_DYNAMIC``: then there is nothing the loader would read either)."""
    ph = _phdrs(hdr, buf)
    loads = [(off, va, sz) for t, off, va, sz in ph if t == PT_LOAD]
    dyn = next(((off, sz) for t, off, _va, sz in ph if t == PT_DYNAMIC), None)
    if dyn is None or dyn[0] + dyn[1] > len(buf):
        return []

    def to_off(vaddr: int) -> int | None:
        for off, va, sz in loads:
            if va <= vaddr < va + sz:
                return off + (vaddr - va)
        return None

    e = "<" if hdr.little_endian else ">"
    ent = 8 if hdr.bits == 32 else 16
    fmt = e + ("iI" if hdr.bits == 32 else "qQ")
    tags: dict[int, int] = {}
    for i in range(dyn[1] // ent):
        tag, val = struct.unpack_from(fmt, buf, dyn[0] + i * ent)
        if tag == 0:
            break
        tags.setdefault(tag, val)
    secs: list[Section] = [Section("", 0, 0, 0, 0, 0, 0)]  # index 0 is SHN_UNDEF
    strtab = to_off(tags.get(DT_STRTAB, -1))
    if strtab is None:
        return []
    strsz = min(tags.get(DT_STRSZ, 0), len(buf) - strtab)
    secs.append(Section(".dynstr", SHT_STRTAB, strtab, strsz, 0, 0, tags[DT_STRTAB]))
    secs.append(Section(".dynamic", SHT_DYNAMIC, dyn[0], dyn[1], ent, 1, 0))
    symsz = 24 if hdr.bits == 64 else 16
    count = symbol_count(hdr, buf, to_off(tags[DT_GNU_HASH]) if DT_GNU_HASH in tags else None,
                         to_off(tags[DT_HASH]) if DT_HASH in tags else None)
    symtab = to_off(tags.get(DT_SYMTAB, -1))
    if symtab is not None and count:
        secs.append(Section(".dynsym", SHT_DYNSYM, symtab,
                            min(count * symsz, len(buf) - symtab), symsz, 1, tags[DT_SYMTAB]))
        if DT_VERSYM in tags and (vs := to_off(tags[DT_VERSYM])) is not None:
            secs.append(Section(".gnu.version", SHT_VERSYM, vs, min(count * 2, len(buf) - vs),
                                2, len(secs) - 1, tags[DT_VERSYM]))
    if DT_GNU_HASH in tags and (gh := to_off(tags[DT_GNU_HASH])) is not None:
        secs.append(Section(".gnu.hash", SHT_GNU_HASH, gh, len(buf) - gh, 0, 0,
                            tags[DT_GNU_HASH]))
    if DT_HASH in tags and (h := to_off(tags[DT_HASH])) is not None:
        secs.append(Section(".hash", SHT_HASH, h, len(buf) - h, 4, 0, tags[DT_HASH]))
    # Version records are linked lists bounded by the readers; the section ends at the file.
    for tag, name, kind in ((DT_VERNEED, ".gnu.version_r", SHT_VERNEED),
                            (DT_VERDEF, ".gnu.version_d", SHT_VERDEF)):
        if tag in tags and (off := to_off(tags[tag])) is not None:
            secs.append(Section(name, kind, off, len(buf) - off, 0, 1, tags[tag]))
    if DT_INIT_ARRAY in tags and (ia := to_off(tags[DT_INIT_ARRAY])) is not None:
        secs.append(Section(".init_array", SHT_INIT_ARRAY, ia,
                            min(tags.get(DT_INIT_ARRAYSZ, 0), len(buf) - ia), 0, 0,
                            tags[DT_INIT_ARRAY]))
    return secs


def symbol_count(hdr: ElfHeader, buf: Any, gnu_hash: int | None, sysv_hash: int | None) -> int:
    """Number of dynamic symbols, from the hash table (there is no section size to divide).

    SysV ``.hash``: ``nchain``. GNU hash: past the highest bucket start, follow that chain to
    the entry whose low bit marks its end.
    """
    e = "<" if hdr.little_endian else ">"
    if gnu_hash is not None and gnu_hash + 16 <= len(buf):
        nbuckets, symoffset, bloom_size, _shift = struct.unpack_from(e + "IIII", buf, gnu_hash)
        word = 8 if hdr.bits == 64 else 4
        buckets = gnu_hash + 16 + bloom_size * word
        chains = buckets + nbuckets * 4
        if chains > len(buf):
            return 0
        top: int = max(struct.unpack_from(e + f"{nbuckets}I", buf, buckets), default=0)
        if top < symoffset:
            return int(symoffset)
        idx = top
        while chains + (idx - symoffset) * 4 + 4 <= len(buf):
            (h,) = struct.unpack_from(e + "I", buf, chains + (idx - symoffset) * 4)
            idx += 1
            if h & 1:
                return idx
        return 0
    if sysv_hash is not None and sysv_hash + 8 <= len(buf):
        _nbucket, nchain = struct.unpack_from(e + "II", buf, sysv_hash)
        return int(nchain)
    return 0
