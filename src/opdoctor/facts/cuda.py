"""CUDA fat binaries: which GPU code a library carries, read without decompressing anything.

Layout (as nvcc/fatbinary 12–13 write it, checked against this project's fixtures):
* ``.nv_fatbin`` holds one or more containers back to back (8-byte aligned), each:
  ``u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 size`` then ``size`` bytes of
  entries;
* each entry: ``u16 kind`` (1 PTX, 2 ELF cubin, other values reported as-is), ``u16``,
  ``u32 header_size``, ``u64 payload_size``, …, ``u16 minor`` at 0x18 and ``u16 major`` at 0x1A
  (the PTX ISA version for PTX), ``u32 arch`` at 0x1C (80 = sm_80/compute_80), ``u64 flags`` at
  0x28 (compression bits 0x2000 / 0x8000), ``u64 uncompressed size`` at 0x38 when compressed;
  the next entry starts at ``entry + header_size + payload_size``.
* ``.nvFatBinSegment`` wrappers (``u32 magic 0x466243B1, u32 version, u64 fatbin address``)
  point at containers, possibly outside ``.nv_fatbin``; they are followed too.
Every size is checked against the section before use and the walk is bounded, so a corrupt
fatbin ends in a reported problem, never a loop or a read past the end.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.image import ElfImage

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

FATBIN_MAGIC = 0xBA55ED50
SEGMENT_MAGIC = 0x466243B1
KIND_NAMES = {1: "PTX", 2: "SASS", 4: "old cubin", 8: "LTO IR"}
COMPRESSED = 0x2000 | 0x8000


@dataclass(frozen=True)
class FatbinEntry:
    """One piece of GPU code in a fat binary."""

    kind: int
    arch: int  # 80 for sm_80 / compute_80
    size: int
    compressed: bool
    ptx_version: tuple[int, int] | None = None

    @property
    def kind_name(self) -> str:
        """``SASS``, ``PTX``, ``LTO IR`` or ``kind N``."""
        return KIND_NAMES.get(self.kind, f"kind {self.kind}")

    @property
    def label(self) -> str:
        """``sm_80`` for SASS, ``compute_90`` for PTX."""
        prefix = "compute" if self.kind in (1, 8) else "sm"
        return f"{prefix}_{self.arch}"


@dataclass
class Fatbin:
    """All GPU code of a library, and any structural problem met while reading it."""

    entries: list[FatbinEntry] = field(default_factory=list)
    containers: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def sass_archs(self) -> list[int]:
        """Architectures with SASS (native code), sorted."""
        return sorted({e.arch for e in self.entries if e.kind == 2})

    @property
    def ptx_archs(self) -> list[int]:
        """Architectures with PTX (JIT-compilable), sorted."""
        return sorted({e.arch for e in self.entries if e.kind == 1})


def _parse_container(buf: Any, off: int, end: int, out: Fatbin) -> int:
    """Parse one container at ``off``; returns the offset after it (or ``end`` on error)."""
    if off + 16 > end:
        out.problems.append(f"container header at {off:#x} runs past the section")
        return end
    magic, _version, hsz, size = struct.unpack_from("<IHHQ", buf, off)
    if magic != FATBIN_MAGIC:
        out.problems.append(f"bad fatbin magic {magic:#x} at {off:#x}")
        return end
    body, stop = off + hsz, off + hsz + size
    if hsz < 16 or stop > end:
        out.problems.append(f"container at {off:#x} claims {size} bytes, section has "
                            f"{end - body}")
        return end
    out.containers += 1
    checkpoint(f"reading the fat binary container at {off:#x}")
    pos, count = body, 0
    while pos + 0x20 <= stop and count < 10_000:
        kind, _u, ehsz, psz = struct.unpack_from("<HHIQ", buf, pos)
        if ehsz < 0x20 or pos + ehsz + psz > stop:
            out.problems.append(f"entry at {pos:#x} has header {ehsz} / payload {psz} bytes "
                                "past its container")
            break
        minor, major, arch = struct.unpack_from("<HHI", buf, pos + 0x18)
        flags = struct.unpack_from("<Q", buf, pos + 0x28)[0] if ehsz >= 0x30 else 0
        compressed = bool(flags & COMPRESSED)
        out.entries.append(FatbinEntry(kind, arch, psz, compressed,
                                       (major, minor) if kind == 1 else None))
        pos += ehsz + psz
        count += 1
    return int((stop + 7) & ~7)


def _addr_to_offset(img: ElfImage, addr: int) -> int | None:
    for sec in img.sections:
        if sec.sh_type != 8 and sec.addr and sec.addr <= addr < sec.addr + sec.size:
            return sec.offset + (addr - sec.addr)
    return None


# Relocations whose value is the load base plus the addend (x86-64's and AArch64's).
_RELATIVE = {62: 8, 183: 1027}  # e_machine -> R_*_RELATIVE


def _relocated(img: ElfImage, start: int, end: int) -> dict[int, int]:
    """What the loader writes in ``[start, end)`` of a 64-bit little-endian library: address
    → the addend of its RELATIVE relocation in a SHT_RELA section (relative to the load base,
    as the section addresses are). One pass over the relocations, however many wrappers."""
    kind = _RELATIVE.get(img.header.e_machine)
    out: dict[int, int] = {}
    if kind is None or not img.header.little_endian:
        return out
    buf = img.data.buf
    rows = struct.Struct("<QQq")
    for sec in img.sections:
        if sec.sh_type != 4 or sec.offset + sec.size > len(buf):  # SHT_RELA
            continue
        for off, info, addend in rows.iter_unpack(buf[sec.offset:sec.offset + sec.size
                                                      // 24 * 24]):
            if start <= off < end and info & 0xFFFFFFFF == kind:
                out[off] = int(addend)
    return out


def read_fatbin(img: ElfImage) -> Fatbin | None:
    """The library's fat binary, or None when it carries no GPU code."""
    buf = img.data.buf
    out = Fatbin()
    starts: set[int] = set()
    sec = img.section(".nv_fatbin")
    if sec is not None and sec.sh_type != 8:
        off, end = sec.offset, sec.offset + sec.size
        while off + 16 <= end and out.containers < 10_000:
            if struct.unpack_from("<I", buf, off)[0] != FATBIN_MAGIC:
                off += 8  # padding between containers
                continue
            starts.add(off)
            off = _parse_container(buf, off, end, out)
    seg = img.section(".nvFatBinSegment")
    relocated: dict[int, int] | None = None
    if seg is not None and seg.sh_type != 8:
        fmt = "<IIQ" if img.header.bits == 64 else "<IIL"
        step = 24 if img.header.bits == 64 else 16
        for pos in range(seg.offset, seg.offset + seg.size - step + 1, step):
            magic, _v, addr = struct.unpack_from(fmt, buf, pos)
            if magic != SEGMENT_MAGIC:
                continue
            if _addr_to_offset(img, addr) is None and step == 24 and seg.addr:
                # lld (Rust builds: torchmonarch) leaves the pointer 0 in the file and its
                # value in a relocation's addend, applied when the library loads
                if relocated is None:
                    relocated = _relocated(img, seg.addr, seg.addr + seg.size)
                addr = relocated.get(seg.addr + (pos - seg.offset) + 8, addr)
            target = _addr_to_offset(img, addr)
            if target is None:
                out.problems.append(f"fatbin wrapper points at {addr:#x}, outside the file")
            elif target not in starts:
                holder = next((s for s in img.sections if s.offset <= target < s.offset
                               + s.size), None)
                if holder is not None:
                    starts.add(target)
                    _parse_container(buf, target, holder.offset + holder.size, out)
    if not out.containers and not out.problems:
        return None
    return out


# ------------------------------------------------------------------------- GPUs and the rule
GPU_NAMES = {
    "T4": 75, "RTX2080": 75, "TITANRTX": 75,
    "A100": 80, "A30": 80, "A10": 86, "A10G": 86, "A40": 86, "A6000": 86, "RTX3090": 86,
    "RTX3080": 86, "A2": 86, "L4": 89, "L40": 89, "L40S": 89, "RTX4090": 89, "RTX6000ADA": 89,
    "H100": 90, "H200": 90, "GH200": 90, "H20": 90, "H800": 90,
    "B200": 100, "GB200": 100, "B100": 100, "B300": 103, "RTX5090": 120, "RTXPRO6000": 120,
    "V100": 70, "P100": 60,
}


def parse_gpu(text: str) -> int:
    """``sm_90``, ``9.0``, ``90``, ``compute_90`` or a product name (H100) → 90."""
    t = text.strip().upper().replace(" ", "").replace("-", "").replace("NVIDIA", "")
    m = re.fullmatch(r"(?:SM_?|COMPUTE_?)?(\d{2,3})A?", t)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"(\d{1,2})\.(\d)", t)
    if m:
        return int(m.group(1)) * 10 + int(m.group(2))
    for name, cc in GPU_NAMES.items():
        if t == name or (t.endswith(name) and t[: -len(name)] in ("TESLA", "GEFORCE", "")):
            return cc
    raise ValueError(f"unknown GPU {text!r}: use sm_XY, X.Y or a product name such as H100")


@dataclass(frozen=True)
class GpuVerdict:
    """How a library's kernels would run on one GPU."""

    gpu: int
    how: str  # "native", "jit", "none"
    via: str  # the entry that serves it: "sm_80", "compute_90", ""


def verdict(fb: Fatbin, gpu: int) -> GpuVerdict:
    """SASS sm_XY runs on the same major with minor ≥ Y; PTX compute_XY JITs on any ≥ XY."""
    native = [a for a in fb.sass_archs if a // 10 == gpu // 10 and a <= gpu]
    if native:
        return GpuVerdict(gpu, "native", f"sm_{max(native)}")
    ptx = [a for a in fb.ptx_archs if a <= gpu]
    if ptx:
        return GpuVerdict(gpu, "jit", f"compute_{max(ptx)}")
    return GpuVerdict(gpu, "none", "")


def gencode_for(gpus: list[int]) -> str:
    """The nvcc flags (and TORCH_CUDA_ARCH_LIST) that give every GPU native code plus PTX."""
    flags = " ".join(f"-gencode arch=compute_{g},code=sm_{g}" for g in sorted(set(gpus)))
    top = max(gpus)
    arch_list = ";".join(f"{g // 10}.{g % 10}" for g in sorted(set(gpus)))
    return (f"nvcc {flags} -gencode arch=compute_{top},code=compute_{top} "
            f"(torch.utils.cpp_extension: TORCH_CUDA_ARCH_LIST=\"{arch_list}+PTX\")")
