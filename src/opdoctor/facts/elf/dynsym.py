"""Dynamic symbols through the ELF hash tables, with GNU symbol versions.

Looking a name up goes through ``.gnu.hash`` (or the SysV ``.hash``): a bloom-filter test and
one hash chain, never a walk over the 75k symbols of ``libtorch_cpu.so``. Only the target's own
(small) list of undefined symbols is iterated. All reads are ``struct.unpack_from`` on the
memory-mapped file and bounded by the section sizes, so a forged table cannot make us loop.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import compress
from operator import not_

from opdoctor.facts.elf.image import ElfImage

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

SHN_UNDEF = 0
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
STV_HIDDEN, STV_PROTECTED = 2, 3
VERSYM_HIDDEN = 0x8000
_SHT = {11: "SHT_DYNSYM", 0x6FFFFFF6: "SHT_GNU_HASH", 5: "SHT_HASH", 0x6FFFFFFF: "SHT_GNU_versym",
        0x6FFFFFFD: "SHT_GNU_verdef", 0x6FFFFFFE: "SHT_GNU_verneed"}


@lru_cache(maxsize=1 << 16)
def _gnu_hash(name: bytes) -> int:
    """The GNU hash (djb2 mod 2**32) of a name — once per name, not once per library the name
    is looked up in (binding looks every undefined symbol up along the whole scope)."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class Sym:
    """One dynamic symbol with its version (empty when unversioned)."""

    name: str
    defined: bool
    binding: int
    visibility: int
    sym_type: int
    version: str = ""
    hidden_version: bool = False  # name@VER (non-default) rather than name@@VER

    @property
    def weak(self) -> bool:
        """Weak binding: an undefined weak symbol may stay unresolved."""
        return self.binding == STB_WEAK


@dataclass
class _Sec:
    """Where a section lies in the file."""

    offset: int
    size: int
    entsize: int = 0
    link: int = 0


@dataclass
class DynSymbols:
    """Hash-table access to one library's dynamic symbol table."""

    image: ElfImage
    _secs: dict[str, _Sec] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        secs = self.image.sections
        for sec in secs:
            kind = _SHT.get(sec.sh_type)
            if kind and kind not in self._secs:
                self._secs[kind] = _Sec(sec.offset, sec.size, sec.entsize, sec.link)
        # The string table is the one .dynsym links to (what the ELF spec and the tools use);
        # the name ".dynstr" only when that link is broken — section names may be damaged.
        dynsym = self._secs.get("SHT_DYNSYM")
        linked = secs[dynsym.link] if dynsym and 0 < dynsym.link < len(secs) else None
        if linked is not None and linked.sh_type == 3:  # SHT_STRTAB
            self._secs["dynstr"] = _Sec(linked.offset, linked.size)
        else:
            named = next((x for x in secs if x.sh_type == 3 and x.name == ".dynstr"), None)
            if named is not None:
                self._secs["dynstr"] = _Sec(named.offset, named.size)

    # ------------------------------------------------------------------ raw helpers
    @property
    def _buf(self) -> Any:
        return self.image.data.buf

    @property
    def _end(self) -> str:
        return "<" if self.image.header.little_endian else ">"

    @property
    def _is64(self) -> bool:
        return self.image.header.bits == 64

    @property
    def present(self) -> bool:
        """True when the library has a dynamic symbol table at all."""
        return "SHT_DYNSYM" in self._secs and "dynstr" in self._secs

    def _str(self, off: int) -> str:
        sec = self._secs.get("dynstr")
        if sec is None or off >= sec.size:
            return ""
        start = sec.offset + off
        end = self._buf.find(b"\0", start, sec.offset + sec.size)
        if end < 0:
            end = sec.offset + sec.size
        return bytes(self._buf[start:end]).decode("utf-8", "replace")

    @cached_property
    def count(self) -> int:
        """Number of entries in ``.dynsym``."""
        sec = self._secs.get("SHT_DYNSYM")
        if not sec:
            return 0
        ent = 24 if self._is64 else 16
        return sec.size // ent

    @cached_property
    def _sym_struct(self) -> tuple[int, int, struct.Struct, bool]:
        """(offset of .dynsym, entry size, the entry's Struct, 64-bit?), computed once: the
        properties behind them cost more than the unpack itself, called per symbol."""
        is64 = self._is64
        fmt = self._end + ("IBBHQQ" if is64 else "IIIBBH")
        return self._secs["SHT_DYNSYM"].offset, 24 if is64 else 16, struct.Struct(fmt), is64

    def _raw(self, idx: int) -> tuple[int, int, int, int]:
        """(st_name, st_info, st_other, st_shndx) of symbol ``idx`` (all zero outside the
        table: an index from a damaged hash table never reads past .dynsym)."""
        if not 0 <= idx < self.count:
            return 0, 0, 0, 0
        off, _ent, st, is64 = self._sym_struct
        buf = self.image.data.buf
        if is64:
            if off + idx * 24 + 24 > len(buf):  # a short last entry: read what the old
                # four-field format read (it raises, as before, only past those 8 bytes)
                name, info, other, shndx = struct.unpack_from(self._end + "IBBH", buf,
                                                              off + idx * 24)
                return name, info, other, shndx
            name, info, other, shndx, _v, _s = st.unpack_from(buf, off + idx * 24)
        else:
            name, _v, _s, info, other, shndx = st.unpack_from(buf, off + idx * 16)
        return name, info, other, shndx

    @cached_property
    def _verdef_names(self) -> dict[int, str]:
        """Version index → name for the versions this library defines (``.gnu.version_d``)."""
        names: dict[int, str] = {}
        e = self._end
        vd = self._secs.get("SHT_GNU_verdef")
        if vd:
            off, seen = vd.offset, 0
            while seen < 4096 and off + 20 <= vd.offset + vd.size:
                _ver, flags, ndx, cnt, _h, aux, nxt = struct.unpack_from(e + "HHHHIII",
                                                                         self._buf, off)
                # VER_FLG_BASE names the file itself; an aux record outside the section is
                # damage (reported by the integrity check), never read.
                if cnt and aux and not flags & 1 and off + aux + 4 <= vd.offset + vd.size:
                    (name_off,) = struct.unpack_from(e + "I", self._buf, off + aux)
                    names[ndx] = self._str(name_off)
                if not nxt:
                    break
                off, seen = off + nxt, seen + 1
        return names

    @cached_property
    def _version_names(self) -> dict[int, str]:
        """Version index → name, from both verdef (defined) and verneed (required)."""
        names = dict(self._verdef_names)
        for _file, vers in self._verneed_raw:
            for ndx, name in vers:
                names[ndx] = name
        return names

    @cached_property
    def _verneed_raw(self) -> list[tuple[str, list[tuple[int, str]]]]:
        out: list[tuple[str, list[tuple[int, str]]]] = []
        vn = self._secs.get("SHT_GNU_verneed")
        if not vn:
            return out
        e = self._end
        off, seen = vn.offset, 0
        while seen < 4096 and off + 16 <= vn.offset + vn.size:
            _ver, cnt, file_off, aux, nxt = struct.unpack_from(e + "HHIII", self._buf, off)
            vers: list[tuple[int, str]] = []
            a = off + aux
            for _ in range(min(cnt, 4096)):
                if a + 16 > vn.offset + vn.size:
                    break
                _h, _flags, other, name_off, anext = struct.unpack_from(e + "IHHII", self._buf, a)
                vers.append((other, self._str(name_off)))
                if not anext:
                    break
                a += anext
            out.append((self._str(file_off), vers))
            if not nxt:
                break
            off, seen = off + nxt, seen + 1
        return out

    @cached_property
    def defined_versions(self) -> frozenset[str]:
        """Version names this library defines (``.gnu.version_d``), e.g. GLIBCXX_3.4.30."""
        return frozenset(self._verdef_names.values())

    @cached_property
    def needed_versions(self) -> dict[str, list[str]]:
        """Versions required from each DT_NEEDED file (``.gnu.version_r``)."""
        return {f: [n for _i, n in vs] for f, vs in self._verneed_raw}

    def _versym(self, idx: int) -> tuple[str, bool]:
        sec = self._secs.get("SHT_GNU_versym")
        if not sec or idx * 2 + 2 > sec.size:
            return "", False
        (v,) = struct.unpack_from(self._end + "H", self._buf, sec.offset + idx * 2)
        hidden = bool(v & VERSYM_HIDDEN)
        v &= 0x7FFF
        if v <= 1:  # 0 local, 1 global (unversioned)
            return "", hidden
        return self._version_names.get(v, f"<version {v}>"), hidden

    def symbol(self, idx: int) -> Sym:
        """Symbol ``idx`` of ``.dynsym``, fully decoded."""
        name_off, info, other, shndx = self._raw(idx)
        version, hidden = self._versym(idx)
        return Sym(self._str(name_off), shndx != SHN_UNDEF, info >> 4, other & 3, info & 0xF,
                   version, hidden)

    def relocation_ranks(self, wanted: set[str]) -> dict[str, int]:
        """For the symbols named in ``wanted``: the position of each one's first relocation,
        in the order glibc applies them to a library loaded with RTLD_NOW (the relocation
        sections in file order — .rela.dyn, then .rela.plt —, each entry in turn). The first
        of them that nothing defines is the one ``dlopen`` reports ("undefined symbol: X");
        ``.dynsym``'s order is not that (survey 17: 6 of the libraries checked). Names
        without a relocation are left out."""
        out: dict[str, int] = {}
        if not wanted or not self.present:
            return out
        little, is64 = self.image.header.little_endian, self._is64
        dynsym = next((i for i, sec in enumerate(self.image.sections) if sec.sh_type == 11),
                      -1)
        seen: set[int] = set()
        pos = 0
        buf = self.image.data.buf
        for sec in self.image.sections:
            if sec.sh_type not in (4, 9) or sec.link != dynsym:  # SHT_RELA, SHT_REL
                continue
            ent = (24 if sec.sh_type == 4 else 16) if is64 else (12 if sec.sh_type == 4 else 8)
            if sec.offset + sec.size > len(buf) or sec.size < ent:
                continue
            fmt = ("<" if little else ">") + ("QQ" if is64 else "II")
            rows = struct.Struct(fmt + "x" * (ent - struct.calcsize(fmt)))
            for _off, info in rows.iter_unpack(buf[sec.offset:sec.offset + sec.size // ent
                                                   * ent]):
                pos += 1
                idx = info >> 32 if is64 else info >> 8
                if idx == 0 or idx in seen:
                    continue
                seen.add(idx)
                name = self.symbol(idx).name if idx < self.count else ""
                if name in wanted and name not in out:
                    out[name] = pos
                    if len(out) == len(wanted):
                        return out
        return out

    # ------------------------------------------------------------------ iteration (small libs)
    def undefined(self) -> list[Sym]:
        """Undefined dynamic symbols (what this library needs from others); computed once."""
        return list(self._undefined)

    @cached_property
    def _undefined(self) -> tuple[Sym, ...]:
        if not self.present:
            return ()
        out = []
        off, ent, st, is64 = self._sym_struct
        buf, n = self.image.data.buf, self.count
        if n > 1 and off >= 0 and off + n * ent <= len(buf):
            # One C-level pass over the table (75k entries in libtorch_cpu.so) instead of an
            # unpack per symbol; the same fields, in bounds (checked above).
            raw = buf[off + ent:off + n * ent]
            if self.image.header.little_endian == (sys.byteorder == "little"):
                # Native byte order: the st_shndx and st_name columns as strided views, the
                # undefined ones picked by compress() — no Python code per symbol.
                halves, words = memoryview(raw).cast("H"), memoryview(raw).cast("I")
                shndx = halves[3::12] if is64 else halves[7::8]
                names = words[::ent // 4]
                return tuple(self.symbol(i) for i in compress(range(1, n), map(not_, shndx))
                             if names[i - 1])
            rows = st.iter_unpack(raw)
            if is64:
                idxs = [i for i, (name_off, _i, _o, sh, _v, _s) in enumerate(rows, 1)
                        if sh == SHN_UNDEF and name_off]
            else:
                idxs = [i for i, (name_off, _v, _s, _i, _o, sh) in enumerate(rows, 1)
                        if sh == SHN_UNDEF and name_off]
            return tuple(self.symbol(i) for i in idxs)
        for i in range(1, n):
            name_off, _info, _other, sh = self._raw(i)
            if sh == SHN_UNDEF and name_off:
                out.append(self.symbol(i))
        return tuple(out)

    # ------------------------------------------------------------------ hash lookups
    def lookup(self, name: str) -> list[Sym]:
        """All *defined*, exported symbols called ``name`` (one per version), via the hash table."""
        if not self.present:
            return []
        idxs = self._gnu_lookup(name) if "SHT_GNU_HASH" in self._secs else self._sysv_lookup(name)
        out = []
        for i in idxs:
            s = self.symbol(i)
            if s.defined and s.binding != STB_LOCAL and s.visibility != STV_HIDDEN:
                out.append(s)
        return out

    @cached_property
    def _gnu_header(self) -> tuple[int, int, int, int, int, int, int, int,
                                   struct.Struct, struct.Struct] | None:
        """The fixed part of ``.gnu.hash`` read once (not per lookup): (nbuckets, symoffset,
        bloom_size, bloom_shift, word, bloom_off, buckets_off, chain_off, bloom word Struct,
        u32 Struct); None when the table is unusable (then no lookup finds anything)."""
        sec = self._secs["SHT_GNU_HASH"]
        e = self._end
        if sec.size < 16:
            return None
        nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack_from(e + "IIII",
                                                                          self._buf, sec.offset)
        word = 8 if self._is64 else 4
        bloom_off = sec.offset + 16
        buckets_off = bloom_off + bloom_size * word
        chain_off = buckets_off + nbuckets * 4
        if nbuckets == 0 or bloom_size == 0 or chain_off > sec.offset + sec.size:
            return None
        return (nbuckets, symoffset, bloom_size, bloom_shift, word, bloom_off, buckets_off,
                chain_off, struct.Struct(e + ("Q" if word == 8 else "I")), struct.Struct(e + "I"))

    def _gnu_lookup(self, name: str) -> list[int]:
        head = self._gnu_header
        if head is None:
            return []
        (nbuckets, symoffset, bloom_size, bloom_shift, word, bloom_off, buckets_off, chain_off,
         bloom_st, u32) = head
        buf = self._buf
        bits = word * 8
        want = name.encode()
        h = _gnu_hash(want)
        (bword,) = bloom_st.unpack_from(buf, bloom_off + ((h // bits) % bloom_size) * word)
        mask = (1 << (h % bits)) | (1 << ((h >> bloom_shift) % bits))
        if bword & mask != mask:
            return []
        (idx,) = u32.unpack_from(buf, buckets_off + (h % nbuckets) * 4)
        if idx < symoffset:
            return []
        out = []
        sec = self._secs["SHT_GNU_HASH"]
        end = sec.offset + sec.size
        count = self.count
        while idx < count:
            pos = chain_off + (idx - symoffset) * 4
            if pos + 4 > end:
                break
            (ch,) = u32.unpack_from(buf, pos)
            if (ch | 1) == (h | 1) and self._name_is(idx, want):
                out.append(idx)
            if ch & 1:
                break
            idx += 1
        return out

    def _sysv_lookup(self, name: str) -> list[int]:
        sec = self._secs.get("SHT_HASH")
        if not sec or sec.size < 8:
            return []
        e, buf = self._end, self._buf
        nbucket, nchain = struct.unpack_from(e + "II", buf, sec.offset)
        if nbucket == 0 or 8 + (nbucket + nchain) * 4 > sec.size:
            return []
        h = 0
        for c in name.encode():
            h = ((h << 4) + c) & 0xFFFFFFFF
            g = h & 0xF0000000
            if g:
                h ^= g >> 24
            h &= ~g & 0xFFFFFFFF
        want = name.encode()
        (idx,) = struct.unpack_from(e + "I", buf, sec.offset + 8 + (h % nbucket) * 4)
        out, steps = [], 0
        while idx and idx < min(nchain, self.count) and steps < nchain:
            if self._name_is(idx, want):
                out.append(idx)
            (idx,) = struct.unpack_from(e + "I", buf, sec.offset + 8 + (nbucket + idx) * 4)
            steps += 1
        return out

    def _name_is(self, idx: int, want: bytes) -> bool:
        name_off = self._raw(idx)[0]
        sec = self._secs.get("dynstr")
        if sec is None or name_off >= sec.size:
            return False
        start = sec.offset + name_off
        return bool(self._buf[start:start + len(want) + 1] == want + b"\0")

    def names_with_prefix(self, prefix: str, limit: int = 8) -> list[str]:
        """Exported names starting with ``prefix``, by a byte search of ``.dynstr``.

        Used to show "the installed torch exports the same function with another signature":
        one memchr-speed scan of the string table, then hash lookups to keep only defined ones.
        """
        sec = self._secs.get("dynstr")
        if not sec or not prefix:
            return []
        buf, want = self._buf, b"\0" + prefix.encode()
        pos, end = sec.offset, sec.offset + sec.size
        out: list[str] = []
        while len(out) < limit * 4:
            hit = buf.find(want, pos, end)
            if hit < 0:
                break
            stop = buf.find(b"\0", hit + 1, end)
            name = bytes(buf[hit + 1:stop if stop >= 0 else end]).decode("utf-8", "replace")
            if name not in out:
                out.append(name)
            pos = hit + 1
        return [n for n in out if self.lookup(n)][:limit]

    def c_functions(self, limit: int = 16, scan: int = 50_000) -> list[str]:
        """Up to ``limit`` defined, global functions with C names (not mangled, no PyInit_ or
        ELF init/fini): an API another library calls by name through ``dlsym``. At most
        ``scan`` symbols are read (a framework library has hundreds of thousands)."""
        out: list[str] = []
        for idx in range(1, min(self.count, scan)):
            sym = self.symbol(idx)
            if sym.defined and sym.sym_type == 2 and sym.binding == 1 and len(sym.name) >= 5 \
                    and not sym.name.startswith(("_Z", "PyInit_", "_init", "_fini")):
                out.append(sym.name)
                if len(out) >= limit:
                    break
        return out

    def defines_anything(self, scan: int = 50_000) -> bool:
        """Whether the library defines a function or an object of its own in ``.dynsym``
        (the linker's markers ``_edata``/``_end``/``__bss_start`` and ELF ``_init``/``_fini``
        are no one's code)."""
        for idx in range(1, min(self.count, scan)):
            sym = self.symbol(idx)
            if sym.defined and sym.sym_type in (1, 2, 6, 10) and \
                    sym.name not in ("_init", "_fini"):  # OBJECT, FUNC, TLS, IFUNC
                return True
        return False

    def dynstr_contains(self, needle: bytes) -> bool:
        """True when ``needle`` occurs in ``.dynstr`` (cheap whole-table byte search)."""
        sec = self._secs.get("dynstr")
        if sec is None:
            return False
        return bool(self._buf.find(needle, sec.offset, sec.offset + sec.size) >= 0)
