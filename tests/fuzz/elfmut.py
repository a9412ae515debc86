"""Structure-aware ELF mutations, described by replayable recipes.

A *recipe* is a list of JSON-ready steps located by structure, not by absolute offset, so a
recorded failure still means the same thing when the seed library is rebuilt:

* ``{"op": "field", "region": "ehdr", "field": "e_shnum", "value": 65535}``
* ``{"op": "field", "region": "phdr", "index": 2, "field": "p_filesz", "value": 2**40}``
* ``{"op": "field", "region": "shdr", "section": ".dynsym", "field": "sh_size", "value": 0}``
* ``{"op": "field", "region": "dyn", "tag": "DT_INIT_ARRAYSZ", "field": "d_val", "value": …}``
  (or ``"index": i`` for the i-th dynamic entry)
* ``{"op": "field", "region": "sym", "section": ".dynsym", "index": 5, "field": "st_shndx",
  "value": 65535}``
* ``{"op": "word", "section": ".gnu.hash", "offset": 4, "width": 4, "value": 4294967295}``
* ``{"op": "flip", "section": ".shstrtab", "offset": 12, "mask": 4}`` (no section: whole file)
* ``{"op": "truncate", "section": ".dynsym", "offset": 10}`` / ``{"op": "truncate", "size": N}``

Offsets inside a section are taken modulo its size, and every location is resolved against the
*seed's* layout, so a step never fails to apply (a step whose section the seed lacks is a no-op).
This module does not import opdoctor: the mutator must not share the reader's bugs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

Recipe = list[dict[str, Any]]

# name → (offset, width) for ELF32 and ELF64
EHDR = {
    "ei_class": ((4, 1), (4, 1)), "ei_data": ((5, 1), (5, 1)), "ei_version": ((6, 1), (6, 1)),
    "e_type": ((16, 2), (16, 2)), "e_machine": ((18, 2), (18, 2)),
    "e_version": ((20, 4), (20, 4)), "e_entry": ((24, 4), (24, 8)),
    "e_phoff": ((28, 4), (32, 8)), "e_shoff": ((32, 4), (40, 8)),
    "e_flags": ((36, 4), (48, 4)), "e_ehsize": ((40, 2), (52, 2)),
    "e_phentsize": ((42, 2), (54, 2)), "e_phnum": ((44, 2), (56, 2)),
    "e_shentsize": ((46, 2), (58, 2)), "e_shnum": ((48, 2), (60, 2)),
    "e_shstrndx": ((50, 2), (62, 2)),
}
PHDR = {
    "p_type": ((0, 4), (0, 4)), "p_flags": ((24, 4), (4, 4)), "p_offset": ((4, 4), (8, 8)),
    "p_vaddr": ((8, 4), (16, 8)), "p_filesz": ((16, 4), (32, 8)),
    "p_memsz": ((20, 4), (40, 8)), "p_align": ((28, 4), (48, 8)),
}
SHDR = {
    "sh_name": ((0, 4), (0, 4)), "sh_type": ((4, 4), (4, 4)), "sh_flags": ((8, 4), (8, 8)),
    "sh_addr": ((12, 4), (16, 8)), "sh_offset": ((16, 4), (24, 8)),
    "sh_size": ((20, 4), (32, 8)), "sh_link": ((24, 4), (40, 4)),
    "sh_info": ((28, 4), (44, 4)), "sh_addralign": ((32, 4), (48, 8)),
    "sh_entsize": ((36, 4), (56, 8)),
}
SYM = {
    "st_name": ((0, 4), (0, 4)), "st_value": ((4, 4), (8, 8)), "st_size": ((8, 4), (16, 8)),
    "st_info": ((12, 1), (4, 1)), "st_other": ((13, 1), (5, 1)),
    "st_shndx": ((14, 2), (6, 2)),
}
DYN = {"d_tag": ((0, 4), (0, 8)), "d_val": ((4, 4), (8, 8))}
DT = {"DT_NEEDED": 1, "DT_PLTRELSZ": 2, "DT_HASH": 4, "DT_STRTAB": 5, "DT_SYMTAB": 6,
      "DT_RELA": 7, "DT_RELASZ": 8, "DT_STRSZ": 10, "DT_SYMENT": 11, "DT_INIT": 12,
      "DT_FINI": 13, "DT_SONAME": 14, "DT_RPATH": 15, "DT_TEXTREL": 22, "DT_JMPREL": 23,
      "DT_INIT_ARRAY": 25, "DT_FINI_ARRAY": 26, "DT_INIT_ARRAYSZ": 27, "DT_FINI_ARRAYSZ": 28,
      "DT_RUNPATH": 29, "DT_FLAGS": 30, "DT_GNU_HASH": 0x6FFFFEF5, "DT_VERSYM": 0x6FFFFFF0,
      "DT_FLAGS_1": 0x6FFFFFFB, "DT_VERDEF": 0x6FFFFFFC, "DT_VERDEFNUM": 0x6FFFFFFD,
      "DT_VERNEED": 0x6FFFFFFE, "DT_VERNEEDNUM": 0x6FFFFFFF}

# Sections worth aiming at (the readers decode each of them); others are hit by file-wide flips.
HOT_SECTIONS = (".shstrtab", ".dynamic", ".dynsym", ".dynstr", ".gnu.hash", ".hash",
                ".gnu.version", ".gnu.version_d", ".gnu.version_r", ".nv_fatbin",
                ".nvFatBinSegment", ".symtab", ".strtab", ".rodata", ".init_array",
                ".note.gnu.build-id", ".interp")


@dataclass
class Section:
    """One section header of the seed."""

    index: int
    name: str
    sh_type: int
    offset: int
    size: int
    hdr_off: int


@dataclass
class Layout:
    """The seed's structure, decoded once (tolerant: a broken seed just has fewer parts)."""

    size: int
    bits: int
    endian: str
    phoff: int = 0
    phnum: int = 0
    shoff: int = 0
    shnum: int = 0
    sections: list[Section] = field(default_factory=list)
    dyn_tags: list[int] = field(default_factory=list)  # d_tag of each dynamic entry

    def section(self, name: str) -> Section | None:
        """The first section called ``name``."""
        return next((s for s in self.sections if s.name == name), None)


def parse_layout(buf: bytes) -> Layout:
    """Decode header, program/section headers and the dynamic tags of a well-formed seed."""
    if len(buf) < 52 or buf[:4] != b"\x7fELF":
        return Layout(len(buf), 64, "<")
    bits = 64 if buf[4] == 2 else 32
    e = "<" if buf[5] != 2 else ">"
    lay = Layout(len(buf), bits, e)
    i64 = 1 if bits == 64 else 0

    def get(spec: tuple[tuple[int, int], tuple[int, int]], base: int) -> int:
        off, width = spec[i64]
        return int.from_bytes(buf[base + off:base + off + width], "little" if e == "<" else "big")

    lay.phoff, lay.phnum = get(EHDR["e_phoff"], 0), get(EHDR["e_phnum"], 0)
    lay.shoff, lay.shnum = get(EHDR["e_shoff"], 0), get(EHDR["e_shnum"], 0)
    shent = 64 if bits == 64 else 40
    shstrndx = get(EHDR["e_shstrndx"], 0)
    if lay.shoff + lay.shnum * shent > len(buf):
        return lay
    raw = []
    for i in range(lay.shnum):
        base = lay.shoff + i * shent
        raw.append((base, get(SHDR["sh_name"], base), get(SHDR["sh_type"], base),
                    get(SHDR["sh_offset"], base), get(SHDR["sh_size"], base)))
    names_off = raw[shstrndx][3] if shstrndx < len(raw) else 0
    for i, (base, name_off, sh_type, off, size) in enumerate(raw):
        start = names_off + name_off
        end = buf.find(b"\0", start)
        name = buf[start:end].decode("latin-1") if names_off and end > 0 else ""
        lay.sections.append(Section(i, name, sh_type, off, size, base))
    dyn = next((s for s in lay.sections if s.sh_type == 6), None)
    if dyn is not None:
        ent = 16 if bits == 64 else 8
        for k in range(min(dyn.size // ent, 512)):
            tag = get(DYN["d_tag"], dyn.offset + k * ent)
            lay.dyn_tags.append(tag)
            if tag == 0:
                break
    return lay


def _write(buf: bytearray, off: int, width: int, value: int, endian: str) -> None:
    if off < 0 or off + width > len(buf):
        return
    value &= (1 << (8 * width)) - 1
    buf[off:off + width] = value.to_bytes(width, "little" if endian == "<" else "big")


def _field_location(lay: Layout, step: dict[str, Any]) -> tuple[int, int] | None:
    """(absolute offset, width) of a ``field`` step in the seed, or None when absent."""
    i64 = 1 if lay.bits == 64 else 0
    region, name = step["region"], step["field"]
    if region == "ehdr":
        off, width = EHDR[name][i64]
        return off, width
    if region == "phdr":
        if not lay.phnum:
            return None
        off, width = PHDR[name][i64]
        return lay.phoff + (step["index"] % lay.phnum) * (56 if i64 else 32) + off, width
    if region == "shdr":
        sec = _find(lay, step)
        if sec is None:
            return None
        off, width = SHDR[name][i64]
        return sec.hdr_off + off, width
    if region == "dyn":
        dyn = next((s for s in lay.sections if s.sh_type == 6), None)
        if dyn is None or not lay.dyn_tags:
            return None
        if "tag" in step:
            want = DT.get(step["tag"], -1)
            if want not in lay.dyn_tags:
                return None
            idx = lay.dyn_tags.index(want)
        else:
            idx = step["index"] % len(lay.dyn_tags)
        off, width = DYN[name][i64]
        return dyn.offset + idx * (16 if i64 else 8) + off, width
    if region == "sym":
        sec = lay.section(step["section"])
        ent = 24 if i64 else 16
        if sec is None or sec.size < ent:
            return None
        off, width = SYM[name][i64]
        return sec.offset + (step["index"] % (sec.size // ent)) * ent + off, width
    raise ValueError(f"unknown region {region!r}")


def _find(lay: Layout, step: dict[str, Any]) -> Section | None:
    if "section" in step:
        return lay.section(step["section"])
    if lay.sections and "index" in step:
        return lay.sections[step["index"] % len(lay.sections)]
    return None


def apply(seed: bytes, recipe: Recipe) -> bytes:
    """The seed with every step of ``recipe`` applied, in order (truncations last)."""
    lay = parse_layout(seed)
    buf = bytearray(seed)
    cut: int | None = None
    for step in recipe:
        op = step["op"]
        if op == "field":
            loc = _field_location(lay, step)
            if loc is not None:
                _write(buf, loc[0], loc[1], int(step["value"]), lay.endian)
        elif op in ("word", "flip"):
            if "section" in step:
                sec = lay.section(step["section"])
                if sec is None or sec.size == 0 or sec.offset >= len(buf):
                    continue
                base, span = sec.offset, min(sec.size, len(buf) - sec.offset)
            else:
                base, span = 0, len(buf)
            off = base + int(step["offset"]) % span
            if op == "word":
                _write(buf, off, int(step["width"]), int(step["value"]), lay.endian)
            else:
                buf[off] ^= int(step["mask"]) & 0xFF or 1
        elif op == "truncate":
            if "section" in step:
                sec = lay.section(step["section"])
                if sec is None or sec.size == 0:
                    continue
                size = sec.offset + int(step["offset"]) % sec.size
            else:
                size = int(step["size"])
            cut = size if cut is None else min(cut, size)
        else:
            raise ValueError(f"unknown recipe step {op!r}")
    return bytes(buf[:cut] if cut is not None else buf)


# ---------------------------------------------------------------------------- generation
def _extreme(rng: random.Random, width: int, lay: Layout) -> int:
    """A value that stresses a reader: 0, all ones, 2^40, sizes near the file's, overflows."""
    top = (1 << (8 * width)) - 1
    choices = [0, 1, 2, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 63), top,
               top - 1, lay.size, lay.size - 1, lay.size + 1, lay.size // 2,
               (1 << 61) + 1,  # times any entry size overflows 64 bits
               0x10000000 // 3, rng.randrange(0, 256), rng.randrange(0, 1 << 16),
               rng.getrandbits(8 * width)]
    return rng.choice(choices) & top


def _step(rng: random.Random, lay: Layout) -> dict[str, Any]:
    i64 = 1 if lay.bits == 64 else 0
    hot = [s for s in lay.sections if s.name in HOT_SECTIONS and s.size]
    kind = rng.choices(
        ["ehdr", "phdr", "shdr", "dyn", "sym", "word", "flip", "fileflip", "truncate"],
        weights=[8, 10, 16, 14, 12, 16, 16, 5, 3])[0]
    if kind == "ehdr":
        name = rng.choice(sorted(EHDR))
        return {"op": "field", "region": "ehdr", "field": name,
                "value": _extreme(rng, EHDR[name][i64][1], lay)}
    if kind == "phdr" and lay.phnum:
        name = rng.choice(sorted(PHDR))
        return {"op": "field", "region": "phdr", "index": rng.randrange(lay.phnum),
                "field": name, "value": _extreme(rng, PHDR[name][i64][1], lay)}
    if kind == "shdr" and lay.sections:
        name = rng.choice(sorted(SHDR))
        sec = rng.choice(hot or lay.sections)
        return {"op": "field", "region": "shdr", "section": sec.name, "field": name,
                "value": _extreme(rng, SHDR[name][i64][1], lay)}
    if kind == "dyn" and lay.dyn_tags:
        name = rng.choice(sorted(DYN))
        present = [t for t, v in DT.items() if v in lay.dyn_tags]
        if present and rng.random() < 0.6:
            return {"op": "field", "region": "dyn", "tag": rng.choice(present),
                    "field": "d_val", "value": _extreme(rng, DYN["d_val"][i64][1], lay)}
        value = (rng.choice(list(DT.values())) if name == "d_tag" and rng.random() < 0.5
                 else _extreme(rng, DYN[name][i64][1], lay))
        return {"op": "field", "region": "dyn", "index": rng.randrange(len(lay.dyn_tags)),
                "field": name, "value": value}
    if kind == "sym":
        tables = [s for s in lay.sections if s.name in (".dynsym", ".symtab") and s.size]
        if tables:
            sec = rng.choice(tables)
            name = rng.choice(sorted(SYM))
            return {"op": "field", "region": "sym", "section": sec.name,
                    "index": rng.randrange(max(1, sec.size // (24 if i64 else 16))),
                    "field": name, "value": _extreme(rng, SYM[name][i64][1], lay)}
    if kind == "word" and hot:
        sec = rng.choice(hot)
        width = rng.choice([1, 2, 4, 8])
        return {"op": "word", "section": sec.name, "offset": rng.randrange(sec.size),
                "width": width, "value": _extreme(rng, width, lay)}
    if kind == "flip" and hot:
        sec = rng.choice(hot)
        return {"op": "flip", "section": sec.name, "offset": rng.randrange(sec.size),
                "mask": 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)}
    if kind == "truncate":
        if hot and rng.random() < 0.7:
            sec = rng.choice(hot)
            return {"op": "truncate", "section": sec.name, "offset": rng.randrange(sec.size)}
        return {"op": "truncate", "size": rng.randrange(0, max(1, lay.size))}
    # fileflip, or the chosen region does not exist in this seed
    return {"op": "flip", "offset": rng.randrange(max(1, min(lay.size, 1 << 20))),
            "mask": 1 << rng.randrange(8)}


def generate(rng: random.Random, seed: bytes, max_steps: int = 3) -> Recipe:
    """A random recipe of 1..max_steps steps for ``seed``."""
    lay = parse_layout(seed)
    n = rng.choices(range(1, max_steps + 1), weights=[6, 3, 1][:max_steps])[0]
    return [_step(rng, lay) for _ in range(n)]

