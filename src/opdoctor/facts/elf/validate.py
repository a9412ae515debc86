"""The tables the dynamic loader trusts, checked before any check reads them.

:func:`opdoctor.facts.elf.image.header_extents` proves every header table and section lies inside
the file. This module goes one level deeper, into the *content* of the tables ld.so walks when
it maps a library and binds its symbols: the string-table links, ``.dynsym``, the hash tables,
the GNU version sections and the dynamic section's sizes and addresses. A healthy linker output
satisfies all of it (a test runs this over every library of the torch install and the system);
a damaged or forged file yields one line per problem, which the integrity check reports as
OD413: an error when ld.so uses the table (and no other check then reads it), a warning when
only tools do (section headers, ``st_shndx``) — such a library may still load.

Every walk is bounded by the section it walks and by a fixed number of steps, so a forged
count or a loop in a chain costs microseconds, never a hang.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field

from opdoctor.facts.elf.image import ElfImage, Section

SHT_SYMTAB, SHT_STRTAB, SHT_HASH, SHT_DYNAMIC, SHT_NOBITS, SHT_DYNSYM = 2, 3, 5, 6, 8, 11
SHT_SYMTAB_SHNDX = 18
SHT_GNU_HASH, SHT_VERDEF, SHT_VERNEED, SHT_VERSYM = 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
PT_LOAD = 1
PAGE = 4096
SHN_LORESERVE, SHN_XINDEX = 0xFF00, 0xFFFF
MAX_PROBLEMS = 12
MAX_CHAIN = 4096  # version records followed per section

# Dynamic tags that hold an address ld.so dereferences, with the tag holding its size (or 0).
_ADDRESS_TAGS = {
    4: ("DT_HASH", 0), 5: ("DT_STRTAB", 10), 6: ("DT_SYMTAB", 0), 7: ("DT_RELA", 8),
    12: ("DT_INIT", 0), 13: ("DT_FINI", 0), 17: ("DT_REL", 18), 23: ("DT_JMPREL", 2),
    25: ("DT_INIT_ARRAY", 27), 26: ("DT_FINI_ARRAY", 28), 32: ("DT_PREINIT_ARRAY", 33),
    36: ("DT_RELR", 35), 0x6FFFFEF5: ("DT_GNU_HASH", 0), 0x6FFFFFF0: ("DT_VERSYM", 0),
    0x6FFFFFFC: ("DT_VERDEF", 0), 0x6FFFFFFE: ("DT_VERNEED", 0),
}
_SIZE_NAMES = {2: "DT_PLTRELSZ", 8: "DT_RELASZ", 10: "DT_STRSZ", 18: "DT_RELSZ",
               27: "DT_INIT_ARRAYSZ", 28: "DT_FINI_ARRAYSZ", 33: "DT_PREINIT_ARRAYSZ",
               35: "DT_RELRSZ"}
_STRING_TAGS = {1: "DT_NEEDED", 14: "DT_SONAME", 15: "DT_RPATH", 29: "DT_RUNPATH"}
_POINTER_ARRAYS = {27, 28, 33}  # sizes that count pointers


class _Problems(list[str]):
    def add(self, text: str) -> None:
        if len(self) < MAX_PROBLEMS:
            self.append(text)


@dataclass
class Damage:
    """What is inconsistent: ``fatal`` in the tables ld.so uses (the load fails, crashes or
    binds wrongly), ``ignored`` in what only tools read (section headers, st_shndx): the
    library may load, but opdoctor's and readelf's view of it is unreliable."""

    fatal: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def table_damage(img: ElfImage) -> Damage:
    """Every inconsistency found in the tables (both lists empty for a healthy file)."""
    fatal, ignored = _Problems(), _Problems()
    secs = img.sections
    _section_links(img, secs, ignored)
    _segments(img, fatal)
    dynsym = next((s for s in secs if s.sh_type == SHT_DYNSYM), None)
    dynstr = _linked_strtab(secs, dynsym)
    if dynsym is not None and dynstr is not None and not ignored:
        count = _symbols(img, dynsym, dynstr, fatal, ignored)
        _gnu_hash(img, secs, count, fatal)
        _sysv_hash(img, secs, count, fatal)
        max_ver = _versions(img, secs, dynstr, fatal)
        _versym(img, secs, count, max_ver, fatal)
    _dynamic(img, secs, fatal)
    return Damage(list(fatal), list(ignored))


def _name(sec: Section, i: int) -> str:
    return f"{sec.name or 'section'} [{i}]"


def _linked_strtab(secs: list[Section], sec: Section | None) -> Section | None:
    if sec is None or not 0 < sec.link < len(secs) or secs[sec.link].sh_type != SHT_STRTAB:
        return None
    return secs[sec.link]


def _section_links(img: ElfImage, secs: list[Section], out: _Problems) -> None:
    hdr = img.header
    if not img.has_section_table:
        return  # no section header table: the sections were synthesised from PT_DYNAMIC
    # secs may be synthesised from PT_DYNAMIC (no section header table): bounds first.
    if secs and 0 < hdr.e_shstrndx < len(secs) and secs[hdr.e_shstrndx].sh_type != SHT_STRTAB:
        out.add(f"e_shstrndx {hdr.e_shstrndx} names a section of type "
                f"{secs[hdr.e_shstrndx].sh_type:#x}, not a string table: section names are "
                "unreadable")
    elif secs and 0 < hdr.e_shstrndx < len(secs):
        names = secs[hdr.e_shstrndx]
        buf = img.data.buf
        if names.size and (buf[names.offset] != 0 or buf[names.offset + names.size - 1] != 0):
            out.add(f"the section-name table ({names.size} bytes) does not start and end with "
                    "a NUL byte")
    want_link = {SHT_DYNSYM: SHT_STRTAB, SHT_SYMTAB: SHT_STRTAB, SHT_DYNAMIC: SHT_STRTAB,
                 SHT_VERDEF: SHT_STRTAB, SHT_VERNEED: SHT_STRTAB, SHT_HASH: SHT_DYNSYM,
                 SHT_GNU_HASH: SHT_DYNSYM, SHT_VERSYM: SHT_DYNSYM}
    ent = 24 if hdr.bits == 64 else 16
    for i, sec in enumerate(secs):
        kind = want_link.get(sec.sh_type)
        if kind is None:
            continue
        if not 0 < sec.link < len(secs):
            out.add(f"{_name(sec, i)}: sh_link {sec.link} is not a section index "
                    f"(the file has {len(secs)})")
        elif secs[sec.link].sh_type != kind and not (
                kind == SHT_DYNSYM and secs[sec.link].sh_type == SHT_SYMTAB):
            want = "a string table" if kind == SHT_STRTAB else ".dynsym"
            out.add(f"{_name(sec, i)}: sh_link {sec.link} names a section of type "
                    f"{secs[sec.link].sh_type:#x}, not {want}")
        if sec.sh_type in (SHT_DYNSYM, SHT_SYMTAB) and (sec.entsize != ent or sec.size % ent):
            out.add(f"{_name(sec, i)}: entry size {sec.entsize} / table size {sec.size}, "
                    f"ELF{hdr.bits} symbols are {ent} bytes")
        dyn_ent = 16 if hdr.bits == 64 else 8
        if sec.sh_type == SHT_DYNAMIC and sec.entsize not in (0, dyn_ent):
            out.add(f"{_name(sec, i)}: entry size {sec.entsize}, ELF{hdr.bits} dynamic entries "
                    f"are {dyn_ent} bytes")


def _segments(img: ElfImage, out: _Problems) -> None:
    loads = [s for s in img.segments if s.p_type == PT_LOAD]
    if not loads and img.header.e_type == 3:
        out.add("no PT_LOAD program header: ld.so says 'object file has no loadable segments'")
    for i, seg in enumerate(img.segments):
        if seg.p_type == PT_LOAD and (seg.vaddr - seg.offset) % PAGE:
            out.add(f"PT_LOAD (program header {i}): p_vaddr {seg.vaddr:#x} and p_offset "
                    f"{seg.offset:#x} differ by a non-multiple of the page size: ld.so says "
                    "'ELF load command address/offset not page-aligned'")


def _symbols(img: ElfImage, dynsym: Section, dynstr: Section, out: _Problems,
             ignored: _Problems) -> int:
    """Check every .dynsym entry's name offset and section index; returns the entry count."""
    is64 = img.header.bits == 64
    ent = 24 if is64 else 16
    count = dynsym.size // ent
    shnum = len(img.sections)
    has_xindex = any(s.sh_type == SHT_SYMTAB_SHNDX for s in img.sections)
    fmt = ("<" if img.header.little_endian else ">") + ("IBBHQQ" if is64 else "IIIBBH")
    raw = img.data.buf[dynsym.offset:dynsym.offset + count * ent]
    if _symbols_clean(raw, count, ent, is64, img.header.little_endian, dynstr.size,
                      shnum if img.has_section_table else None, has_xindex):
        return count
    bad = odd = 0
    for i, f in enumerate(struct.iter_unpack(fmt, raw)):
        name, shndx = (f[0], f[3]) if is64 else (f[0], f[5])
        if name >= dynstr.size:  # ld.so compares names: a wild offset reads other memory
            bad += 1
            if bad <= 3:
                out.add(f".dynsym entry {i}: name offset {name} is beyond .dynstr "
                        f"({dynstr.size} bytes)")
        # ld.so only distinguishes SHN_UNDEF and SHN_ABS: a wrong index misleads tools only.
        why = ""
        if shndx == SHN_XINDEX and not has_xindex:
            why = "st_shndx is 0xffff (SHN_XINDEX) but there is no SHT_SYMTAB_SHNDX section"
        elif shnum <= shndx < SHN_LORESERVE and img.has_section_table:
            # (without a section header table the sections are synthesised from PT_DYNAMIC:
            # st_shndx still counts the sections the file was linked with)
            why = f"st_shndx {shndx} is beyond the {shnum} sections"
        if why:
            odd += 1
            if odd <= 3:
                ignored.add(f".dynsym entry {i}: {why}")
    if bad > 3:
        out.add(f".dynsym: {bad - 3} more entries with a name outside .dynstr")
    if odd > 3:
        ignored.add(f".dynsym: {odd - 3} more entries with an impossible section index")
    return count


def _symbols_clean(raw: bytes, count: int, ent: int, is64: bool, little: bool, strsize: int,
                   shnum: int | None, has_xindex: bool) -> bool:
    """True when no entry of ``raw`` would be reported by :func:`_symbols` — decided with C-level
    slices and ``max``/``set`` over the fields (libtorch_cpu.so has 75k entries) instead of a
    Python loop per entry. False means "maybe": the exact loop then finds and words them."""
    if len(raw) != count * ent or little != (sys.byteorder == "little") or not count:
        return False
    view = memoryview(raw)
    names = view.cast("I")[::ent // 4]
    halves = view.cast("H")
    shndx = halves[3::12] if is64 else halves[7::8]
    if max(names) >= strsize:
        return False
    for value in set(shndx):
        if value == SHN_XINDEX and not has_xindex:
            return False
        if shnum is not None and shnum <= value < SHN_LORESERVE:
            return False
    return True


def _section_of(secs: list[Section], kind: int) -> Section | None:
    return next((s for s in secs if s.sh_type == kind and s.size), None)


def _gnu_hash(img: ElfImage, secs: list[Section], count: int, out: _Problems) -> None:
    sec = _section_of(secs, SHT_GNU_HASH)
    if sec is None:
        return
    e = "<" if img.header.little_endian else ">"
    word = 8 if img.header.bits == 64 else 4
    if sec.size < 16:
        out.add(f".gnu.hash is {sec.size} bytes, shorter than its 16-byte header")
        return
    nbuckets, symoffset, bloom, _shift = struct.unpack_from(e + "IIII", img.data.buf, sec.offset)
    need = 16 + bloom * word + nbuckets * 4
    if nbuckets == 0 or bloom == 0 or bloom & (bloom - 1):
        out.add(f".gnu.hash: {nbuckets} buckets, bloom filter of {bloom} words (needs ≥ 1 "
                "bucket and a power-of-two bloom size)")
        return
    if symoffset > count or need > sec.size:
        out.add(f".gnu.hash: {nbuckets} buckets and {bloom} bloom words need {need} bytes, "
                f"the section has {sec.size} (symoffset {symoffset}, {count} symbols)")
        return
    off = sec.offset + 16 + bloom * word
    buckets = struct.unpack_from(f"{e}{nbuckets}I", img.data.buf, off)
    # Decided on the distinct values first (C-level set and sort; libtorch_cpu.so has 16k
    # buckets); only a table that has a wrong one is walked in order to name it.
    used = sorted(set(buckets) - {0})
    wrong = [] if not used or (used[0] >= symoffset and used[-1] < count) else [
        b for b in buckets if b and not symoffset <= b < count]
    if wrong:
        out.add(f".gnu.hash: {len(wrong)} bucket(s) point outside .dynsym (e.g. symbol "
                f"{wrong[0]}; valid {symoffset}–{count - 1})")
        return
    # The last chain (from the highest bucket) must end, with its end bit, inside the section
    # and inside .dynsym; the chains before it end where the next one starts.
    idx, chains = max(buckets), off + nbuckets * 4
    while idx:
        pos = chains + (idx - symoffset) * 4
        if idx >= count or pos + 4 > sec.offset + sec.size:
            out.add(f".gnu.hash: the chain from bucket value {max(buckets)} runs past "
                    f"{'.dynsym' if idx >= count else 'the section'} without its end bit")
            return
        (h,) = struct.unpack_from(e + "I", img.data.buf, pos)
        if h & 1:
            break
        idx += 1


def _sysv_hash(img: ElfImage, secs: list[Section], count: int, out: _Problems) -> None:
    sec = _section_of(secs, SHT_HASH)
    if sec is None:
        return
    e = "<" if img.header.little_endian else ">"
    if sec.size < 8:
        out.add(f".hash is {sec.size} bytes, shorter than its header")
        return
    nbucket, nchain = struct.unpack_from(e + "II", img.data.buf, sec.offset)
    if 8 + (nbucket + nchain) * 4 > sec.size or nchain != count:
        out.add(f".hash: {nbucket} buckets and {nchain} chains need "
                f"{8 + (nbucket + nchain) * 4} bytes, the section has {sec.size}; .dynsym has "
                f"{count} symbols")
        return
    values = struct.unpack_from(f"{e}{nbucket + nchain}I", img.data.buf, sec.offset + 8)
    if any(v >= nchain for v in values):
        out.add(f".hash: bucket or chain entries point beyond the {nchain} symbols")


def _versions(img: ElfImage, secs: list[Section], dynstr: Section, out: _Problems) -> int:
    """Walk .gnu.version_d and .gnu.version_r as glibc does; returns the highest index."""
    e = "<" if img.header.little_endian else ">"
    buf = img.data.buf
    top = 1
    vd = _section_of(secs, SHT_VERDEF)
    if vd is not None:
        off, end = vd.offset, vd.offset + vd.size
        for n in range(MAX_CHAIN):
            if off + 20 > end:
                out.add(f".gnu.version_d: record {n} at {off - vd.offset:#x} runs past the "
                        "section")
                break
            ver, _flags, ndx, cnt, _hash, aux, nxt = struct.unpack_from(e + "HHHHIII", buf, off)
            if ver != 1:
                out.add(f".gnu.version_d: record {n} has version {ver}: ld.so refuses every "
                        f"library that needs one of its versions ('unsupported version {ver} "
                        "of Verdef record')")
                break
            if cnt and (aux < 20 or off + aux + 8 > end):
                out.add(f".gnu.version_d: record {n} points at its names {aux} bytes ahead, "
                        "past the section")
                break
            if cnt:
                (name,) = struct.unpack_from(e + "I", buf, off + aux)
                if name >= dynstr.size:
                    out.add(f".gnu.version_d: record {n}'s name offset {name} is beyond "
                            f".dynstr ({dynstr.size} bytes)")
                    break
            top = max(top, ndx & 0x7FFF)
            if not nxt:
                break
            if nxt < 20:
                out.add(f".gnu.version_d: record {n}'s next offset {nxt} overlaps itself")
                break
            off += nxt
    vn = _section_of(secs, SHT_VERNEED)
    if vn is not None:
        off, end = vn.offset, vn.offset + vn.size
        for n in range(MAX_CHAIN):
            if off + 16 > end:
                out.add(f".gnu.version_r: record {n} at {off - vn.offset:#x} runs past the "
                        "section")
                break
            ver, cnt, file_off, aux, nxt = struct.unpack_from(e + "HHIII", buf, off)
            if ver != 1:
                out.add(f".gnu.version_r: record {n} has version {ver}: ld.so says "
                        f"'unsupported version {ver} of Verneed record'")
                break
            if file_off >= dynstr.size:
                out.add(f".gnu.version_r: record {n}'s file name offset {file_off} is beyond "
                        f".dynstr ({dynstr.size} bytes)")
                break
            a = off + aux
            for k in range(min(cnt, MAX_CHAIN)):
                if a + 16 > end:
                    out.add(f".gnu.version_r: version {k} of record {n} runs past the section")
                    return top
                _h, _fl, other, name, anext = struct.unpack_from(e + "IHHII", buf, a)
                if name >= dynstr.size:
                    out.add(f".gnu.version_r: version {k} of record {n} has name offset {name}"
                            f" beyond .dynstr ({dynstr.size} bytes)")
                    return top
                top = max(top, other & 0x7FFF)
                if not anext:
                    break
                a += anext
            if not nxt:
                break
            off += nxt
    return top


def _versym(img: ElfImage, secs: list[Section], count: int, top: int, out: _Problems) -> None:
    sec = _section_of(secs, SHT_VERSYM)
    if sec is None:
        return
    if sec.size < count * 2:
        out.add(f".gnu.version has {sec.size // 2} entries, .dynsym has {count} symbols")
        return
    e = "<" if img.header.little_endian else ">"
    values = struct.unpack_from(f"{e}{count}H", img.data.buf, sec.offset)
    # max() in C first: v & 0x7FFF <= v, so a largest value within range clears them all.
    bad = [] if not values or max(values) <= top else [
        i for i, v in enumerate(values) if (v & 0x7FFF) > top]
    if bad:
        out.add(f".gnu.version: {len(bad)} symbol(s) use a version index no version section "
                f"defines (e.g. symbol {bad[0]}: index {values[bad[0]] & 0x7FFF}, highest "
                f"defined {top})")


def _dynamic(img: ElfImage, secs: list[Section], out: _Problems) -> None:
    dyn = next((s for s in secs if s.sh_type == SHT_DYNAMIC), None)
    if dyn is None:
        return
    is64 = img.header.bits == 64
    ent = 16 if is64 else 8
    fmt = ("<" if img.header.little_endian else ">") + ("qQ" if is64 else "iI")
    entries: dict[int, int] = {}
    strings: list[tuple[int, int]] = []
    for i in range(min(dyn.size // ent, 4096)):
        tag, val = struct.unpack_from(fmt, img.data.buf, dyn.offset + i * ent)
        if tag == 0:
            break
        if tag in _STRING_TAGS:
            strings.append((tag, val))
        else:
            entries.setdefault(tag, val)
    dynstr = _linked_strtab(secs, dyn)
    strsz = entries.get(10, dynstr.size if dynstr else 0)
    if dynstr is not None and strsz > dynstr.size:
        out.add(f"DT_STRSZ is {strsz} bytes, .dynstr has {dynstr.size}")
    for tag, val in strings:
        if val >= strsz:
            out.add(f"{_STRING_TAGS[tag]}: string offset {val} is beyond the dynamic string "
                    f"table ({strsz} bytes)")
    if 11 in entries and entries[11] != (24 if is64 else 16):
        out.add(f"DT_SYMENT is {entries[11]}, ELF{img.header.bits} symbols are "
                f"{24 if is64 else 16} bytes")
    loads = [(s.vaddr, s.vaddr + s.memsz) for s in img.segments if s.p_type == PT_LOAD]
    ptr = 8 if is64 else 4
    for tag, (name, size_tag) in _ADDRESS_TAGS.items():
        if tag not in entries:
            continue
        addr, size = entries[tag], entries.get(size_tag, 0) if size_tag else 0
        if size_tag in _POINTER_ARRAYS and size % ptr:
            out.add(f"{_SIZE_NAMES[size_tag]} is {size}, not a multiple of the {ptr}-byte "
                    "pointer size")
            continue
        if loads and not any(lo <= addr and addr + max(size, 1) <= hi for lo, hi in loads):
            what = f"{name} {addr:#x}" + (f" + {_SIZE_NAMES[size_tag]} {size:#x}" if size else "")
            effect = ("depending on the value the load crashes or the initialisers are "
                      "silently skipped (glibc keeps the count in 32 bits)"
                      if size_tag in _POINTER_ARRAYS else "ld.so reads whatever is there")
            out.add(f"{what} is not inside any loaded segment: {effect}")
