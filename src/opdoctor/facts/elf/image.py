"""ELF reading: a hand-checked header and layout first, pyelftools for the details after.

The header and every section/segment extent are validated against the file size *before*
pyelftools touches the file, so a truncated or hostile file yields a precise finding instead of
an exception deep in a parser (or a loop over a forged ``e_shnum``).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from opdoctor.facts.inputfile import FileData

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

ELF_MAGIC = b"\x7fELF"

ET_NAMES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}

# The machines users actually meet; anything else is printed as its number.
EM_NAMES = {
    3: "x86 (i386)",
    8: "MIPS",
    20: "PowerPC",
    21: "PowerPC64",
    22: "s390",
    40: "ARM (32-bit)",
    62: "x86-64",
    183: "AArch64",
    243: "RISC-V",
    258: "LoongArch",
}

# platform.machine() → (ELF class bits, e_machine) of native libraries.
HOST_MACHINES = {
    "x86_64": (64, 62),
    "amd64": (64, 62),
    "aarch64": (64, 183),
    "arm64": (64, 183),
    "ppc64le": (64, 21),
    "s390x": (64, 22),
    "riscv64": (64, 243),
    "loongarch64": (64, 258),
    "i686": (32, 3),
    "i386": (32, 3),
    "armv7l": (32, 40),
}

SHT_NOBITS = 8
PT_NAMES = {1: "PT_LOAD", 2: "PT_DYNAMIC", 3: "PT_INTERP", 4: "PT_NOTE", 7: "PT_TLS",
            0x6474E550: "PT_GNU_EH_FRAME", 0x6474E551: "PT_GNU_STACK",
            0x6474E552: "PT_GNU_RELRO", 0x6474E553: "PT_GNU_PROPERTY"}
PF_X = 1
PT_GNU_STACK = 0x6474E551
DF_TEXTREL = 0x4
DF_1_PIE = 0x08000000


class ElfFormatError(Exception):
    """The file claims to be ELF but its structure is inconsistent."""


@dataclass(frozen=True)
class Extent:
    """A byte range a header claims exists in the file."""

    what: str
    start: int
    end: int


@dataclass(frozen=True)
class ElfHeader:
    """The fields of the ELF header that decide whether the file can be loaded at all."""

    bits: int  # 32 or 64
    little_endian: bool
    e_type: int
    e_machine: int
    e_phoff: int
    e_shoff: int
    e_phentsize: int
    e_phnum: int
    e_shentsize: int
    e_shnum: int
    e_shstrndx: int

    @property
    def type_name(self) -> str:
        """``ET_DYN`` etc."""
        return ET_NAMES.get(self.e_type, f"type {self.e_type:#x}")

    @property
    def machine_name(self) -> str:
        """``x86-64`` etc."""
        return EM_NAMES.get(self.e_machine, f"machine {self.e_machine}")

    def describe(self) -> str:
        """``ELF64 x86-64, shared object`` — the report's one-line identification."""
        kind = {1: "relocatable object", 2: "executable", 3: "shared object", 4: "core dump"}
        return f"ELF{self.bits} {self.machine_name}, {kind.get(self.e_type, self.type_name)}"


def parse_header(buf: bytes | Any) -> ElfHeader:
    """Parse the ELF header from the first bytes; raise :class:`ElfFormatError` if impossible."""
    if len(buf) < 16 or buf[:4] != ELF_MAGIC:
        raise ElfFormatError("no ELF magic")
    ei_class, ei_data = buf[4], buf[5]
    if ei_class not in (1, 2):
        raise ElfFormatError(f"invalid EI_CLASS {ei_class}")
    if ei_data not in (1, 2):
        raise ElfFormatError(f"invalid EI_DATA {ei_data}")
    bits = 32 if ei_class == 1 else 64
    end = "<" if ei_data == 1 else ">"
    fmt = end + ("HHIIIIIHHHHHH" if bits == 32 else "HHIQQQIHHHHHH")
    need = 16 + struct.calcsize(fmt)
    if len(buf) < need:
        raise ElfFormatError(f"ELF header needs {need} bytes, file has {len(buf)}")
    (e_type, e_machine, _ver, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum,
     shentsize, shnum, shstrndx) = struct.unpack_from(fmt, buf, 16)
    return ElfHeader(bits, ei_data == 1, e_type, e_machine, phoff, shoff, phentsize, phnum,
                     shentsize, shnum, shstrndx)


def header_extents(hdr: ElfHeader, buf: bytes | Any) -> tuple[list[Extent], list[str]]:
    """All byte ranges the headers claim, plus structural problems found on the way.

    Section and program header tables are only walked when they lie inside the file, so a
    forged count can never make us read past the end or loop for long.
    """
    problems: list[str] = []
    extents: list[Extent] = []
    size = len(buf)
    end = "<" if hdr.little_endian else ">"
    want_ph = 32 if hdr.bits == 32 else 56
    want_sh = 40 if hdr.bits == 32 else 64
    if hdr.e_phnum and hdr.e_phentsize != want_ph:
        problems.append(f"e_phentsize is {hdr.e_phentsize}, ELF{hdr.bits} needs {want_ph}")
    if hdr.e_shnum and hdr.e_shentsize != want_sh:
        problems.append(f"e_shentsize is {hdr.e_shentsize}, ELF{hdr.bits} needs {want_sh}")
    if problems:
        return extents, problems
    ph = Extent("program header table", hdr.e_phoff, hdr.e_phoff + hdr.e_phnum * want_ph)
    sh = Extent("section header table", hdr.e_shoff, hdr.e_shoff + hdr.e_shnum * want_sh)
    if hdr.e_phnum:
        extents.append(ph)
    if hdr.e_shnum:
        extents.append(sh)
    if hdr.e_phnum and ph.end <= size:
        fmt = end + ("IIIIIIII" if hdr.bits == 32 else "IIQQQQQQ")
        for i in range(hdr.e_phnum):
            f = struct.unpack_from(fmt, buf, hdr.e_phoff + i * want_ph)
            if hdr.bits == 32:
                p_type, p_offset, p_filesz = f[0], f[1], f[4]
            else:
                p_type, p_offset, p_filesz = f[0], f[2], f[5]
            if p_filesz:
                name = PT_NAMES.get(p_type, f"segment type {p_type:#x}")
                what = f"{name} (program header {i})"
                extents.append(Extent(what, p_offset, p_offset + p_filesz))
    if hdr.e_shnum and sh.end <= size:
        fmt = end + ("IIIIIIIIII" if hdr.bits == 32 else "IIQQQQIIQQ")
        if hdr.e_shstrndx >= hdr.e_shnum and hdr.e_shstrndx != 0:
            problems.append(f"e_shstrndx {hdr.e_shstrndx} is beyond e_shnum {hdr.e_shnum}")
        for i in range(hdr.e_shnum):
            f = struct.unpack_from(fmt, buf, hdr.e_shoff + i * want_sh)
            sh_type, sh_offset, sh_size = f[1], f[4], f[5]
            if sh_type != SHT_NOBITS and sh_size:
                extents.append(Extent(f"section {i}", sh_offset, sh_offset + sh_size))
    return extents, problems


DT_NAMES = {1: "DT_NEEDED", 12: "DT_INIT", 13: "DT_FINI", 14: "DT_SONAME", 15: "DT_RPATH",
            22: "DT_TEXTREL", 25: "DT_INIT_ARRAY", 27: "DT_INIT_ARRAYSZ", 29: "DT_RUNPATH",
            30: "DT_FLAGS", 0x6FFFFFFB: "DT_FLAGS_1"}
_DT_STRINGS = {1, 14, 15, 29}
SHT_DYNAMIC = 6


@dataclass(frozen=True)
class Section:
    """One section header, decoded without pyelftools (a few microseconds per file)."""

    name: str
    sh_type: int
    offset: int
    size: int
    entsize: int
    link: int
    addr: int


@dataclass(frozen=True)
class RawSymbol:
    """One ``.symtab`` entry, name not yet read (``ElfImage.cstring(strtab, st_name)``)."""

    st_name: int
    strtab: Section
    info: int
    other: int
    shndx: int
    value: int

    @property
    def binding(self) -> int:
        """STB_* value."""
        return self.info >> 4

    @property
    def sym_type(self) -> int:
        """STT_* value."""
        return self.info & 0xF


@dataclass(frozen=True)
class Segment:
    """One program header."""

    p_type: int
    flags: int
    offset: int
    filesz: int
    vaddr: int = 0
    memsz: int = 0


@dataclass
class ElfImage:
    """A structurally sound ELF file. Headers, sections and the dynamic section are decoded
    directly with ``struct`` (opening 20 libraries of a process stays in milliseconds);
    pyelftools is available as :attr:`elf` for anything deeper."""

    data: FileData
    header: ElfHeader

    @classmethod
    def open(cls, data: FileData) -> ElfImage:
        """Wrap a file whose header and extents were already validated."""
        return cls(data, parse_header(data.buf))

    @cached_property
    def elf(self) -> Any:
        """pyelftools' ``ELFFile`` view of the file (constructed, and imported, on first use:
        the checks themselves decode what they need directly)."""
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        # mmap: pyelftools seeks and reads on demand, the file is never copied whole.
        buf = self.data.buf
        stream: Any = io.BytesIO(buf) if isinstance(buf, bytes) else buf
        try:
            return ELFFile(stream)
        except (ELFError, struct.error, ValueError) as exc:
            raise ElfFormatError(f"pyelftools cannot parse the file: {exc}") from exc

    @property
    def _end(self) -> str:
        return "<" if self.header.little_endian else ">"

    @property
    def has_section_table(self) -> bool:
        """Whether the file has a section header table to read: none (sstrip) or one cut off
        with the file's tail (ld.so never reads it) gives sections synthesised from
        PT_DYNAMIC."""
        hdr = self.header
        size = 40 if hdr.bits == 32 else 64
        return hdr.e_shnum > 0 and hdr.e_shoff + hdr.e_shnum * size <= len(self.data.buf)

    @cached_property
    def sections(self) -> list[Section]:
        """Section headers in file order, with names from the section-name string table."""
        hdr, buf, e = self.header, self.data.buf, self._end
        size = 40 if hdr.bits == 32 else 64
        if not self.has_section_table:
            # No section header table (sstrip), or one cut off with the file's tail (ld.so
            # never reads it): what ld.so reads, from PT_DYNAMIC alone.
            from opdoctor.facts.elf.ptdynamic import synthesize_sections

            return synthesize_sections(hdr, buf)
        fmt = e + ("IIIIIIIIII" if hdr.bits == 32 else "IIQQQQIIQQ")
        raw = []
        for i in range(hdr.e_shnum):
            f = struct.unpack_from(fmt, buf, hdr.e_shoff + i * size)
            raw.append(f)
        names_off = raw[hdr.e_shstrndx][4] if 0 < hdr.e_shstrndx < len(raw) else None
        out = []
        for f in raw:
            name = ""
            if names_off is not None:
                start = names_off + f[0]
                end = buf.find(b"\0", start, start + 256)
                name = bytes(buf[start:end if end >= 0 else start]).decode("latin-1")
            out.append(Section(name, f[1], f[4], f[5], f[9], f[6], f[3]))
        return out

    def section(self, name: str) -> Section | None:
        """The first section called ``name``."""
        return next((s for s in self.sections if s.name == name), None)

    def symtab_section(self) -> Section | None:
        """``.symtab``, found by its type (SHT_SYMTAB): section names may be damaged."""
        return next((s for s in self.sections if s.sh_type == 2), None)

    @cached_property
    def segments(self) -> list[Segment]:
        """Program headers."""
        hdr, buf, e = self.header, self.data.buf, self._end
        out = []
        for i in range(hdr.e_phnum):
            off = hdr.e_phoff + i * (32 if hdr.bits == 32 else 56)
            if hdr.bits == 32:
                p_type, p_offset, va, _pa, p_filesz, memsz, p_flags, _al = struct.unpack_from(
                    e + "IIIIIIII", buf, off)
            else:
                p_type, p_flags, p_offset, va, _pa, p_filesz, memsz, _al = struct.unpack_from(
                    e + "IIQQQQQQ", buf, off)
            out.append(Segment(p_type, p_flags, p_offset, p_filesz, va, memsz))
        return out

    def cstring(self, section: Section, offset: int) -> str:
        """A NUL-terminated string at ``offset`` inside a string-table section."""
        if offset >= section.size:
            return ""
        start = section.offset + offset
        end = self.data.buf.find(b"\0", start, section.offset + section.size)
        return bytes(self.data.buf[start:end if end >= 0 else section.offset + section.size]
                     ).decode("utf-8", "replace")

    @cached_property
    def tags(self) -> dict[str, list[Any]]:
        """Dynamic tags by name, in order (DT_NEEDED can occur many times); strings resolved."""
        out: dict[str, list[Any]] = {}
        dyn = next((s for s in self.sections if s.sh_type == SHT_DYNAMIC), None)
        if dyn is None or not 0 <= dyn.link < len(self.sections):
            return out
        strtab = self.sections[dyn.link]
        ent = 8 if self.header.bits == 32 else 16
        fmt = self._end + ("iI" if self.header.bits == 32 else "qQ")
        for i in range(dyn.size // ent):
            tag, val = struct.unpack_from(fmt, self.data.buf, dyn.offset + i * ent)
            if tag == 0:
                break
            name = DT_NAMES.get(tag, f"DT_{tag:#x}")
            out.setdefault(name, []).append(self.cstring(strtab, val) if tag in _DT_STRINGS
                                            else val)
        return out

    def symtab(self, max_bytes: int = 16 << 20) -> Iterator[RawSymbol]:
        """Entries of ``.symtab`` (nothing for a stripped file or a table over ``max_bytes``).

        Only for the small tables of user libraries: exported names are looked up through the
        hash tables (:mod:`opdoctor.facts.elf.dynsym`), never by walking a symbol table.
        """
        sym = self.symtab_section()
        if sym is None or sym.link >= len(self.sections) or sym.size > max_bytes:
            return
        strtab = self.sections[sym.link]
        is64 = self.header.bits == 64
        ent = 24 if is64 else 16
        e, buf = self._end, self.data.buf
        for i in range(sym.size // ent):
            off = sym.offset + i * ent
            if is64:
                st_name, info, other, shndx, value = struct.unpack_from(e + "IBBHQ", buf, off)
            else:
                st_name, value, _sz, info, other, shndx = struct.unpack_from(e + "IIIBBH", buf,
                                                                            off)
            yield RawSymbol(st_name, strtab, info, other, shndx, value)

    def symtab_typed(self, sym_type: int, max_bytes: int = 16 << 20
                     ) -> tuple[Section | None, list[tuple[int, int]]]:
        """(the string table, [(name offset, value)]) of the ``.symtab`` entries of one STT_*
        type, read in one C-level pass (:meth:`symtab` builds an object per entry: 30 ms for
        torchvision's 15,000); entries past the end of a damaged file are left out."""
        sym = self.symtab_section()
        if sym is None or sym.link >= len(self.sections) or sym.size > max_bytes:
            return None, []
        is64 = self.header.bits == 64
        ent = 24 if is64 else 16
        raw = bytes(self.data.buf[sym.offset:sym.offset + sym.size // ent * ent])
        rows = struct.iter_unpack(self._end + ("IBBHQQ" if is64 else "IIIBBH"),
                                  raw[:len(raw) // ent * ent])
        if is64:
            found = [(r[0], r[4]) for r in rows if r[1] & 0xF == sym_type]
        else:
            found = [(r[0], r[1]) for r in rows if r[3] & 0xF == sym_type]
        return self.sections[sym.link], found

    @property
    def is_pie_executable(self) -> bool:
        """ET_DYN marked DF_1_PIE: a position-independent *executable*, which dlopen refuses."""
        return any(v & DF_1_PIE for v in self.tags.get("DT_FLAGS_1", []))

    @property
    def has_textrel(self) -> bool:
        """DT_TEXTREL, or DF_TEXTREL in DT_FLAGS: relocations that write into code pages."""
        flags = self.tags.get("DT_FLAGS", [])
        return "DT_TEXTREL" in self.tags or any(v & DF_TEXTREL for v in flags)
