"""ELF reading: a hand-checked header and layout first, pyelftools for the details after.

The header and every section/segment extent are validated against the file size *before*
pyelftools touches the file, so a truncated or hostile file yields a precise finding instead of
an exception deep in a parser (or a loop over a forged ``e_shnum``).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from opdoctor.inputfile import FileData

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


@dataclass
class ElfImage:
    """A structurally sound ELF file, with pyelftools behind lazily computed facts."""

    data: FileData
    header: ElfHeader
    elf: ELFFile = field(repr=False)

    @classmethod
    def open(cls, data: FileData) -> ElfImage:
        """Wrap a file whose header and extents were already validated."""
        header = parse_header(data.buf)
        try:
            # mmap: pyelftools seeks and reads on demand, the file is never copied whole.
            stream: Any = io.BytesIO(data.buf) if isinstance(data.buf, bytes) else data.buf
            elf = ELFFile(stream)
        except (ELFError, struct.error, ValueError) as exc:
            raise ElfFormatError(f"pyelftools cannot parse the file: {exc}") from exc
        return cls(data, header, elf)

    @cached_property
    def section_names(self) -> list[str]:
        """Section names in header order (empty for a file without sections)."""
        return [s.name for s in self.elf.iter_sections()]

    @cached_property
    def dynamic(self) -> DynamicSection | None:
        """The ``.dynamic`` section (or PT_DYNAMIC segment's section), if any."""
        for sec in self.elf.iter_sections():
            if isinstance(sec, DynamicSection):
                return sec
        return None

    def dynamic_tags(self) -> Iterator[tuple[str, Any]]:
        """``(d_tag name, value)`` pairs of the dynamic section; names resolved to strings."""
        if self.dynamic is None:
            return
        for tag in self.dynamic.iter_tags():
            name = tag.entry.d_tag
            if name == "DT_NULL":
                break
            for attr in ("needed", "rpath", "runpath", "soname"):
                if hasattr(tag, attr):
                    yield name, getattr(tag, attr)
                    break
            else:
                yield name, tag.entry.d_val

    @cached_property
    def tags(self) -> dict[str, list[Any]]:
        """All dynamic tags by name, in order (DT_NEEDED can occur many times)."""
        out: dict[str, list[Any]] = {}
        for name, value in self.dynamic_tags():
            out.setdefault(name, []).append(value)
        return out

    def segments_of_type(self, p_type: str) -> list[Any]:
        """Program headers of one type, e.g. ``PT_GNU_STACK``."""
        return [s for s in self.elf.iter_segments() if s["p_type"] == p_type]

    @property
    def is_pie_executable(self) -> bool:
        """ET_DYN marked DF_1_PIE: a position-independent *executable*, which dlopen refuses."""
        return any(v & DF_1_PIE for v in self.tags.get("DT_FLAGS_1", []))

    @property
    def has_textrel(self) -> bool:
        """DT_TEXTREL, or DF_TEXTREL in DT_FLAGS: relocations that write into code pages."""
        flags = self.tags.get("DT_FLAGS", [])
        return "DT_TEXTREL" in self.tags or any(v & DF_TEXTREL for v in flags)
