"""What a library would register, read from the binary without loading it.

Sources, best first:
* local symbols in ``.symtab`` left by the PyTorch macros: ``TORCH_LIBRARY_init_<ns>``,
  ``TORCH_LIBRARY_FRAGMENT_init_<ns>_<uid>``, ``TORCH_LIBRARY_IMPL_init_<ns>_<Key>_<uid>``
  (found by a byte search of ``.strtab``, no symbol iteration);
* schema strings in ``.rodata``. Compilers often inline the ``std::string`` built from a schema
  literal as 16-byte vector constants whose last chunk overlaps the previous ones
  ("…float alpha) " + "alpha) -> Tensor"); the overlap is undone here. A schema whose return
  part was inlined into code is recovered without it (``partial``);
* schema strings the *code* assembles: a long literal is built with 16-byte vector moves from
  a deduplicated constant pool (so its bytes are not contiguous in ``.rodata``) plus immediate
  stores for the tail; the moves are read from ``.text`` and the literal put back together
  (:func:`inlined_literals`), whole;
* ``PyInit_<name>`` in ``.dynsym`` (pybind11 / CPython extensions), the legacy
  ``torch::RegisterOperators`` referenced as an undefined symbol;
* ``.init_array`` / ``DT_INIT``: the static constructors that run the registrations.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.image import ElfImage

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# Types the TorchScript schema language knows (with ?, [], [N], (a!) suffixes handled apart).
SCHEMA_TYPES = frozenset((
    "Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Layout", "Device",
    "MemoryFormat", "Generator", "Storage", "Stream", "SymInt", "SymFloat", "SymBool", "Dimname",
    "QScheme", "ConstQuantizerPtr", "Any", "complex", "t", "t1", "t2", "number", "None",
    "DeviceIndex", "AnyEnumType", "GenericList", "Future", "RRef", "Await", "Capsule"))

_MARKER = re.compile(rb"(?:_ZL|_Z)(\d+)(TORCH_LIBRARY\w+)")
# The only parentheses inside a schema's argument or return list are alias annotations:
# Tensor(a), Tensor(a!), Tensor(a -> *), Tensor(a|b). A nested "(Tensor state, …" is another
# literal run into this one (IPEX's .rodata stores literals back to back, without NULs).
# Container types (Dict(str, t), Tuple(int, int), Future(t) …) are the other parentheses.
# A bare tuple type lists types without names: ((Tensor, t)[]), (bool, tVal)[].
_ALIAS = (rb"\([a-z*][\w|!* >-]{0,30}\)|"
          rb"\([A-Za-z_]\w{0,30}(?:\[\d*\])?\??(?:, ?[A-Za-z_]\w{0,30}(?:\[\d*\])?\??){1,20}\)|"
          rb"(?:(?<=Dict)|(?<=Tuple)|(?<=Future)|(?<=RRef)|"
          rb"(?<=Union)|(?<=Await)|(?<=List)|(?<=Optional))\([^()\x00-\x1f\x7f-\xff]{1,200}\)")
_SCHEMA = re.compile(
    rb"(?<![\w:.])((?:[A-Za-z_]\w*::)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)"
    rb"\(((?:[^()\x00-\x1f\x7f-\xff]|" + _ALIAS + rb")*)\)")
_RET = re.compile(rb"\s*->\s*(\((?:[^()\x00-\x1f\x7f-\xff]|" + _ALIAS + rb")*\)|"
                  # Longest first; a fixed order (not the frozenset's, which follows the
                  # hash seed) keeps the pattern, and the compiled-regex cache, the same.
                  rb"(?:" + b"|".join(t.encode() for t in sorted(
                      SCHEMA_TYPES, key=lambda t: (-len(t), t))) +
                  # A whole word: "data()->tensor_data" in an assertion is no schema
                  # returning type variable "t" (torch_xla's _XLAC).
                  rb")(?![A-Za-z0-9_])(?:\([a-z]!?\))?(?:\[\d*\])?\??)")
_TYPE_HINT = re.compile(r"\b(Tensor|int|float|bool|str|Scalar|SymInt|Any)\b")
# What a C++ signature (``__PRETTY_FUNCTION__``, a demangled name in a message) has and the
# schema language never has: references, scope operators, cv-qualifiers, templates, pointers.
_CPP_SIGNATURE = re.compile(r"&|::|<|\bconst\b|\bunsigned\b|\bvolatile\b|\w\s*\*|\.\.\.")


def _unnamed_args(args: str) -> bool:
    """True when an argument list has an argument without a name (``int`` rather than
    ``int x``): C and C++ signatures, never a schema that ``m.def`` accepts with names."""
    depth, cur, parts = 0, "", []
    for ch in args:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return any(len(p.split("=")[0].split()) < 2 and p.strip() != "*" for p in parts
               if p.strip())


# A reference to the legacy registrar class (any member: its constructor, op<>, the schema
# check it calls), in .dynstr.
_LEGACY_REGISTRAR = re.compile(rb"_ZNO?(?:5torch(?:3jit)?|3c10)17RegisterOperators")

@dataclass
class Namespace:
    """What one namespace gets from this library."""

    name: str
    defines: int = 0  # TORCH_LIBRARY blocks (more than one in a process is an error at load)
    fragments: int = 0
    impl_keys: set[str] = field(default_factory=set)
    ops: list[str] = field(default_factory=list)
    # The registrar's name when it is not the namespace torch registers: TORCH_LIBRARY(MY_NS, m)
    # with -DMY_NS=foo names its registrar TORCH_LIBRARY_init_MY_NS but registers "foo".
    macro: str = ""
    # True when the registrar names a macro whose value could not be read from the binary: the
    # namespace torch registers is unknown statically (the probe knows it).
    unresolved: bool = False
    # Registered through the stable ABI's C shim (STABLE_TORCH_LIBRARY*), not torch::Library.
    stable: bool = False


@dataclass(frozen=True)
class Schema:
    """A schema string found in ``.rodata``."""

    text: str
    name: str
    partial: bool  # the return part could not be recovered


@dataclass
class Inventory:
    """Everything the static reading found."""

    stripped: bool
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    schemas: list[Schema] = field(default_factory=list)
    pyinit: list[str] = field(default_factory=list)
    legacy_register_operators: bool = False
    def_with_function: bool = False  # m.def(schema, fn): a catch-all kernel comes with the def
    # The library constructs a torch::Library (what every TORCH_LIBRARY* block expands to): it
    # registers something even when no schema string survives (m.def("op", &fn) infers the
    # schema from the C++ type; short literals are built from immediates; strip drops markers).
    constructs_library: bool = False
    initializers: int = 0
    initializer_names: list[str] = field(default_factory=list)
    source_files: list[str] = field(default_factory=list)
    # TensorFlow: REGISTER_OP / REGISTER_KERNEL_BUILDER leave references to these entry points.
    tf_library: bool = False  # links libtensorflow_framework / uses tensorflow:: symbols
    tf_op_registrars: bool = False
    tf_kernel_registrars: bool = False
    tf_ops: list[str] = field(default_factory=list)  # op names (by proximity to their specs)
    tf_specs: list[str] = field(default_factory=list)  # "to_zero: int32" …
    # Stable ABI (STABLE_TORCH_LIBRARY*): the library imports the C shim's registrars
    # (aoti_torch_library_init_*); its namespaces carry ``stable=True``.
    stable_abi: bool = False
    # Stripped stable library: its namespaces were read from the registrars' calls in the code
    # and the literals they load (no .symtab names).
    stable_from_rodata: bool = False

    @property
    def registers_anything(self) -> bool:
        """True when any registration evidence was found."""
        return bool(self.namespaces or self.schemas or self.pyinit
                    or self.legacy_register_operators or self.constructs_library
                    or self.stable_abi
                    or self.tf_op_registrars or self.tf_kernel_registrars)


def _section_range(img: ElfImage, name: str) -> tuple[int, int] | None:
    sec = img.section(name)
    if sec is None or sec.sh_type == 8:  # SHT_NOBITS
        return None
    return sec.offset, sec.offset + sec.size


def markers(img: ElfImage) -> list[str]:
    """TORCH_LIBRARY* function names from ``.strtab`` (demangled identifier only)."""
    sym = img.symtab_section()
    strtab = img.sections[sym.link] if sym is not None and 0 < sym.link < len(img.sections) \
        else img.section(".strtab")
    if strtab is None or strtab.sh_type == 8:  # SHT_NOBITS
        return []
    rng = strtab.offset, strtab.offset + strtab.size
    out: list[str] = []
    for i, m in enumerate(_MARKER.finditer(img.data.buf, rng[0], rng[1])):
        if not i % 256:
            checkpoint(f"scanning .strtab for registrars ({m.start() - rng[0]:,} bytes in)")
        n = int(m.group(1))
        ident = m.group(2)[:n].decode("ascii", "replace")
        # When the init function is inlined only the static registrar object is left
        # (TORCH_LIBRARY_static_init_<ns>); both name the same registration.
        ident = ident.replace("_static_init_", "_init_")
        if ident not in out:
            out.append(ident)
    return out


def _namespaces(names: list[str]) -> dict[str, Namespace]:
    out: dict[str, Namespace] = {}
    for ident in names:
        if ident.startswith("TORCH_LIBRARY_IMPL_init_"):
            rest = ident[len("TORCH_LIBRARY_IMPL_init_"):]
            m = re.match(r"^(.+)_([A-Za-z0-9]+)_(\d+)$", rest)
            if m:
                out.setdefault(m.group(1), Namespace(m.group(1))).impl_keys.add(m.group(2))
        elif ident.startswith("TORCH_LIBRARY_FRAGMENT_init_"):
            rest = ident[len("TORCH_LIBRARY_FRAGMENT_init_"):]
            ns = re.sub(r"_\d+$", "", rest)
            out.setdefault(ns, Namespace(ns)).fragments += 1
        elif ident.startswith("TORCH_LIBRARY_init_"):
            ns = ident[len("TORCH_LIBRARY_init_"):]
            out.setdefault(ns, Namespace(ns)).defines += 1
    return out


def _literal_present(img: ElfImage, text: str) -> bool:
    """True when ``text`` is a NUL-terminated string literal in ``.rodata``."""
    rng = _section_range(img, ".rodata")
    if rng is None:
        return False
    return img.data.buf.find(b"\0" + text.encode() + b"\0", rng[0] - 1, rng[1]) >= 0


def resolve_namespaces(img: ElfImage, found: dict[str, Namespace]) -> dict[str, Namespace]:
    """Namespaces as torch registers them: from the registration strings, not registrar names.

    ``TORCH_LIBRARY(ns, m)`` pastes ``ns`` into its registrar's name *unexpanded* but passes
    ``C10_STRINGIZE(ns)`` — the expanded macro — to torch; ``TORCH_LIBRARY_IMPL`` and
    ``TORCH_LIBRARY_FRAGMENT`` expand ``ns`` in both. So a defining registrar whose name is not
    a string literal of the library names a macro: its namespace is the literal of the
    implementation registrars that no ``TORCH_LIBRARY`` of this library defines (when exactly
    one), else unknown.
    """
    out = dict(found)
    for name, ns in list(out.items()):
        if not ns.defines or _literal_present(img, name):
            continue
        orphans = [o for o in out.values() if o is not ns and not o.defines
                   and (o.impl_keys or o.fragments) and _literal_present(img, o.name)]
        if len(orphans) == 1:
            real = orphans[0]
            real.defines += ns.defines
            real.ops += [op for op in ns.ops if op not in real.ops]
            real.macro = name
            del out[name]
        else:
            ns.unresolved = True
    return out


def _overlap(prev: str, nxt: str) -> int:
    """Length of the longest suffix of ``prev`` that is a prefix of ``nxt`` (≥ 3)."""
    for k in range(min(len(prev), len(nxt)), 2, -1):
        if prev.endswith(nxt[:k]):
            return k
    return 0


# A schema is printable text: the runs of printable bytes that hold a "(" and a type name are
# the only places the (much slower) schema pattern can match — a 64 MiB .rodata of kernels
# (fbgemm_gpu's 1.2 GB training library) is mostly other bytes.
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{4,}")
_RUN_HINT = re.compile(rb"Tensor|int|float|bool|str|Scalar|SymInt|Any|\(\)|Device|Layout|"
                       rb"Generator|Storage|Stream|Dimname|number|None|complex|t\b")


def _schema_matches(buf: Any, start: int, limit: int) -> Iterator[re.Match[bytes]]:
    """``_SCHEMA`` matches in ``buf[start:limit]``, searched only inside printable runs that
    contain an opening parenthesis and a schema type."""
    for run in _PRINTABLE_RUN.finditer(buf, start, limit):
        text = run.group()
        # "&" is C++ (__PRETTY_FUNCTION__ texts, thousands in a templated CUDA library): the
        # schema language has no references, and those runs are most of the printable bytes
        if b"(" in text and b"&" not in text and _RUN_HINT.search(text):
            yield from _SCHEMA.finditer(buf, run.start(), run.end())


def schemas(img: ElfImage) -> list[Schema]:
    """Schema-like strings in ``.rodata``, with overlapping vector chunks merged back."""
    rng = _section_range(img, ".rodata")
    if rng is None:
        return []
    buf = img.data.buf
    found: dict[str, Schema] = {}
    limit = min(rng[1], rng[0] + (64 << 20))  # bound the scan of a huge .rodata
    for i, m in enumerate(_schema_matches(buf, rng[0], limit)):
        if not i % 256:
            checkpoint(f"scanning .rodata for schemas ({m.start() - rng[0]:,} bytes in)")
        name = m.group(1).decode()
        args = m.group(2).decode()
        if args.strip() and not _TYPE_HINT.search(args):
            continue
        if _CPP_SIGNATURE.search(args):
            continue  # __PRETTY_FUNCTION__ / a C++ signature: never reaches torch's parser
        head = f"{name}({args})"
        ret = _RET.match(buf, m.end(), min(m.end() + 200, rng[1]))
        text, partial = head, True
        if ret:
            text, partial = head + " -> " + ret.group(1).decode(), False
        else:
            # The last 16-byte chunk of an inlined literal overlaps the previous ones.
            tail = bytes(buf[m.end():min(m.end() + 32, rng[1])]).decode("latin-1")
            arrow = tail.find("->")
            if 0 <= arrow < 17:
                k = _overlap(head, tail[:arrow].rstrip() + " ")
                k = k or _overlap(head, tail[:arrow])
                r = _RET.match(tail[arrow - 1:].encode("latin-1")) if arrow else None
                if k and r:
                    text, partial = head + " -> " + r.group(1).decode(), False
        if not args.strip() and partial:
            continue  # "refcount()" in a message: only a full "f() -> T" counts as a schema
        if partial and _unnamed_args(args):
            continue  # "des(int)": a C signature; m.def schemas name their arguments
        if _spliced(name, args):
            continue  # two literals run together: no schema the library ever passes to torch
        found.setdefault(text, Schema(text, name, partial))
    # The code-assembled literals are whole; a .rodata reading of the same op (possibly with
    # another literal's chunk spliced in, "iou_thresholdshold") gives way to them.
    whole = _inlined_schemas(img)
    if whole:
        names = {s.name.split("::")[-1] for s in whole}
        kept = [s for s in _unglue(list(found.values())) if s.name.split("::")[-1] not in names
                and not _chunk_of(s, whole)]
        return _unglue(whole + kept)
    return _unglue(list(found.values()))


# ------------------------------------------------------------------ literals inlined into code
# GCC/Clang build a long std::string literal ("torchvision::nms(Tensor dets, …) -> Tensor")
# with 16-byte vector moves: ``movdqa .LCk(%rip),%xmmN`` then ``movups %xmmN,off(%rax)`` per
# chunk, the last chunk overlapping the previous one (``off = len - 16``). The chunks live in
# the .rodata constant pool, which the linker deduplicates: a chunk two literals share is
# stored once, so the literal is not contiguous in .rodata (torchvision 0.28's _C.so: 7 of
# its 17 schemas were whole there). The code says where each chunk goes: it is read here.
# movdqa/movdqu/movaps/movups %xmm, [rip+disp32] (GCC loads with movdqa, Clang with movups):
# searched from its 0F opcode byte (a memchr-speed
# scan); the prefixes (66/F3, REX) are read backwards from there.
_VLOAD = re.compile(rb"\x0f([\x6f\x28\x10])([\x05\x0d\x15\x1d\x25\x2d\x35\x3d])(.{4})", re.S)
# movups/movaps/movdqu/movdqa %xmm, [base], [base+disp8] or [base+disp32] (no SIB, no RIP):
# a literal longer than 127 bytes stores its later chunks with a 32-bit displacement.
_VSTORE = re.compile(
    rb"(?:\x66([\x40-\x4f])?\x0f\x7f|\xf3([\x40-\x4f])?\x0f\x7f|([\x40-\x4f])?\x0f[\x11\x29])"
    rb"([\x00-\x03\x06-\x3f\x40-\x43\x45-\x7f\x80-\x83\x85-\xbf])", re.S)
_MAX_TEXT_SCAN = 64 << 20


def _disp(buf: bytes | Any, at: int, modrm: int) -> int:
    """The displacement after a ModRM byte: none (mod 0), disp8 (1), disp32 (2)."""
    mod = modrm >> 6
    if at + (1 if mod == 1 else 4) > len(buf):
        return -1  # past the end of a damaged file: no displacement to read (callers skip <0)
    if mod == 1:
        return int(struct.unpack_from("<b", buf, at)[0])
    if mod == 2:
        return int(struct.unpack_from("<i", buf, at)[0])
    return 0


def _rex(*groups: bytes | None) -> int:
    return next((g[0] for g in groups if g), 0)


def inlined_literals(img: ElfImage) -> list[str]:
    """Long string literals the code assembles from 16-byte .rodata chunks (see above)."""
    text, ro = img.section(".text"), img.section(".rodata")
    if text is None or ro is None or text.sh_type == 8 or ro.sh_type == 8:
        return []
    buf = img.data.buf
    stores: list[tuple[int, int, int, bytes]] = []  # (code offset, base reg, disp, chunk)
    end = text.offset + min(text.size, _MAX_TEXT_SCAN)
    for i, m in enumerate(_VLOAD.finditer(buf, text.offset, end)):
        if not i % 65536:
            checkpoint(f"reading vector string moves in .text ({m.start() - text.offset:,} "
                       "bytes in)")
        at = m.start()
        rex = buf[at - 1] if 0x40 <= buf[at - 1] <= 0x4F else 0
        prefix = buf[at - 2 if rex else at - 1]
        if m.group(1) == b"\x6f" and prefix not in (0x66, 0xF3):
            continue  # 0F 6F without 66/F3 is the 8-byte MMX movq
        if m.group(1) == b"\x10" and prefix in (0xF2, 0xF3):
            continue  # F3/F2 0F 10: movss/movsd, 4 or 8 bytes
        reg = ((m.group(2)[0] >> 3) & 7) | (8 if rex & 4 else 0)
        m_end = m.end()
        target = text.addr + (m_end - text.offset) + struct.unpack("<i", m.group(3))[0]
        off = target - ro.addr
        if not 0 <= off <= ro.size - 16:
            continue
        chunk = bytes(buf[ro.offset + off:ro.offset + off + 16])
        if not all(32 <= c < 127 for c in chunk):
            continue  # not text: a float constant, a mask
        st = _VSTORE.search(buf, m.end(), min(end, m.end() + 40))
        while st is not None:
            srex = _rex(st.group(1), st.group(2), st.group(3))
            modrm = st.group(4)[0]
            if (((modrm >> 3) & 7) | (8 if srex & 4 else 0)) == reg:
                base = (modrm & 7) | (8 if srex & 1 else 0)
                disp = _disp(buf, st.end(), modrm)
                stores.append((m.start(), base, disp, chunk))
                break
            st = _VSTORE.search(buf, st.end(), min(end, m.end() + 40))
    out: list[str] = []
    group: list[tuple[int, int, int, bytes]] = []

    def flush() -> None:
        if group and group[0][2] == 0 and len(group) > 1:
            base = group[0][1]
            parts = [(d, c) for _, _, d, c in group]
            # The tail shorter than 16 bytes: immediate stores into the same buffer nearby.
            size = 0
            for d, c in _immediate_stores(buf, base, max(text.offset, group[0][0] - 64),
                                          min(end, group[-1][0] + 64)):
                if not 0 <= d < 4096:
                    continue
                if c == b"\0":
                    size = size or d  # movb $0, len(%rax): the terminator
                else:
                    parts.append((d, c))
            size = size or max(d + len(c) for d, c in parts)
            lit = bytearray(max(size, max(d + len(c) for d, c in parts)))
            for d, c in parts:
                lit[d:d + len(c)] = c
            out.append(lit[:size].decode("latin-1"))
        group.clear()

    for rec in stores:
        if not 0 <= rec[2] < 4096:
            continue
        if group and (rec[1] != group[-1][1] or rec[0] - group[-1][0] > 160 or rec[2] == 0
                      or rec[2] <= group[-1][2]):
            flush()
        group.append(rec)
    flush()
    return out


# movl $imm32 / movw $imm16 / movb $imm8 into disp(base); movabs $imm64,%r then mov %r,disp(base)
_IMM_STORE = re.compile(rb"(\x66)?([\x40-\x4f])?([\xc6\xc7])([\x40-\x47\x80-\x87])", re.S)
_MOVABS = re.compile(rb"([\x48\x49])([\xb8-\xbf])(.{8})", re.S)
_STORE64 = re.compile(rb"([\x48-\x4f])\x89([\x40-\x7f\x80-\xbf])", re.S)


def _immediate_stores(buf: bytes | Any, base: int, start: int, stop: int
                      ) -> list[tuple[int, bytes]]:
    """(disp, bytes) of immediate stores into ``disp8(base)`` between two code offsets."""
    out: list[tuple[int, bytes]] = []
    for m in _IMM_STORE.finditer(buf, start, stop):
        rex = m.group(2)[0] if m.group(2) else 0
        if (m.group(4)[0] & 7) | (8 if rex & 1 else 0) != base or rex & 8:
            continue
        modrm = m.group(4)[0]
        disp = _disp(buf, m.end(), modrm)
        at = m.end() + (1 if modrm >> 6 == 1 else 4)
        size = 1 if m.group(3) == b"\xc6" else 2 if m.group(1) else 4
        imm = bytes(buf[at:at + size])
        if imm == b"\0" or all(32 <= c < 127 for c in imm):
            out.append((disp, imm))
    # movabs $imm64,%reg … mov %reg,disp(base): the two are often apart (scheduling).
    loaded: list[tuple[int, int, bytes]] = []  # (offset, reg, 8 text bytes)
    for m in _MOVABS.finditer(buf, start, stop):
        imm8: bytes = m.group(3) or b""
        if all(32 <= c < 127 for c in imm8):
            loaded.append((m.start(), (m.group(2)[0] - 0xB8) | (8 if m.group(1)[0] & 1 else 0),
                           imm8))
    for m in _STORE64.finditer(buf, start, stop) if loaded else ():
        rex, modrm = m.group(1)[0], m.group(2)[0]
        if (modrm & 7) | (8 if rex & 1 else 0) != base:
            continue
        src = ((modrm >> 3) & 7) | (8 if rex & 4 else 0)
        imm = next((v for at, reg, v in reversed(loaded) if at < m.start() and reg == src), b"")
        if imm:
            out.append((_disp(buf, m.end(), modrm), imm))
    return out


def _chunk_of(s: Schema, whole: list[Schema]) -> bool:
    """A .rodata reading made of another literal's chunks around a whole schema's: the same
    argument list, a name ending like the whole one's (the chunk that overlaps it) and a
    return that is not the whole one's (xformers 0.0.31: "meta_reorder" + "e24_sparsify_both_
    ways(Tensor input, …) -> (Tensor, Tensor, Tensor, Ten Tensor, Tensor)" against the code's
    "xformers::sparse24_sparsify_both_ways(…) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")."""
    mine = split_schema(s.text)
    if mine is None:
        return False
    bare = s.name.split("::")[-1]
    for w in whole:
        theirs = split_schema(w.text)
        other = w.name.split("::")[-1]
        if theirs is None or theirs[1] != mine[1] or theirs[2] == mine[2]:
            continue
        common = 0  # the length of the names' common ending
        while common < min(len(bare), len(other)) and \
                bare[-1 - common] == other[-1 - common]:
            common += 1
        if common >= 8:
            return True
    return False


def _inlined_schemas(img: ElfImage) -> list[Schema]:
    """Whole schemas among the literals the code assembles (never partial: the code has the
    literal's every byte)."""
    found: list[Schema] = []
    for text in inlined_literals(img):
        lit = text.encode("latin-1")
        m = _SCHEMA.match(lit)
        if not m:
            continue
        ret = _RET.match(lit, m.end())
        if not ret or ret.end() != len(lit.rstrip()):
            continue  # a literal that is more than one schema, or not one
        name, args = m.group(1).decode(), m.group(2).decode()
        if (args.strip() and not _TYPE_HINT.search(args)) or _CPP_SIGNATURE.search(args):
            continue
        found.append(Schema(f"{name}({args}) -> {ret.group(1).decode()}", name, False))
    return found


# Capitalised schema types whose truncated head, glued to the next literal, makes a name
# ("Tenso" + "selective_state_update"), and whose tail glued to a whole type makes a type
# ("Tensor" + "nsor"): the marks of back-to-back literals read as one.
_GLUABLE = ("Tensor", "Scalar", "Device", "Layout", "Generator", "Storage", "SymInt",
            "MemoryFormat", "ScalarType", "Dimname")
_TYPE_TOKEN = re.compile(r"(?:^|[,(]\s*)([A-Za-z_]\w*)")


def _spliced(name: str, args: str) -> bool:
    """Whether a .rodata schema candidate is the end of one literal run into the next: its op
    name starts with a truncated type (``Tensoselective_state_update``), or an argument type
    is a type followed by a piece of its own tail (``Tensornsor``)."""
    op = name.split("::")[-1]
    for t in _GLUABLE:
        for k in range(4, len(t) + 1):
            # "Tens" alone, "Tenso" + "selective…", "Tensor" + "ckward": a type's head glued on
            if op == t[:k] != t or (op.startswith(t[:k]) and op[k:k + 1].islower() and
                                    not t.startswith(op[:k + 1])):
                return True
    for tok in _TYPE_TOKEN.findall(args):
        for t in _GLUABLE:
            rest = tok[len(t):]
            if tok.startswith(t) and rest and t.endswith(rest) and tok not in SCHEMA_TYPES:
                return True
    return False


def _unglue(found: list[Schema]) -> list[Schema]:
    """Undo the tail of a neighbouring literal glued to a namespace.

    Inlined literals sit back to back in ``.rodata`` without NULs, so the chunk before
    ``torchvision::qnms(…`` can end in the previous schema's text: torchvision 0.28's ``_C.so``
    yields ``iou_thresholtorchvision::qroi_align``. A namespace that ends with another
    namespace of the same library (and is not it) is that one with a glued prefix.
    """
    spaces = {s.name.split("::")[0] for s in found if "::" in s.name}
    out: dict[str, Schema] = {}
    for s in found:
        ns, sep, _ = s.name.partition("::")
        real = next((k for k in spaces if ns != k and ns.endswith(k)), None) if sep else None
        if real is not None:
            cut = len(ns) - len(real)
            s = Schema(s.text[cut:], s.name[cut:], s.partial)
        out.setdefault(s.text, s)
    return list(out.values())


def plausible_schema(s: Schema, has_registrar: bool) -> bool:
    """False for text that only looks like a schema: C++ call text (``torch_call_dispatcher(
    "aten::slice", …)``), a fragment of a C signature (``Ten(Tensor, Tensor)``), a TensorFlow
    attr spec (``list(int)``). A schema names its op ``ns::op``, or — the ``m.def("op(…)")``
    form — is a whole ``op(args) -> returns`` or sits in a library with a registrar."""
    if re.search(r'[(,]\s*"', s.text):
        return False  # an argument that is a string literal: call text (defaults follow "=")
    return "::" in s.name or not s.partial or has_registrar


def initializers(img: ElfImage) -> tuple[int, list[str]]:
    """(count, names) of ``.init_array`` entries (+ DT_INIT, + ``.ctors``)."""
    count, addrs = 0, []
    ptr = 8 if img.header.bits == 64 else 4
    fmt = ("<" if img.header.little_endian else ">") + ("Q" if ptr == 8 else "I")
    for name in (".init_array", ".ctors"):
        sec = img.section(name)
        if sec is None or sec.sh_type == 8:
            continue
        n = sec.size // ptr
        for i in range(min(n, 4096)):
            (v,) = struct.unpack_from(fmt, img.data.buf, sec.offset + i * ptr)
            if v not in (0, (1 << (ptr * 8)) - 1):  # .ctors uses 0 / -1 sentinels
                addrs.append(v)
                count += 1
    if "DT_INIT" in img.tags:
        count += 1
    return count, _names_at(img, addrs)


def _names_at(img: ElfImage, addrs: list[int]) -> list[str]:
    """FUNC names in ``.symtab`` at these addresses (skipped for very large symbol tables)."""
    if not addrs:
        return []
    want = set(addrs)
    strtab, funcs = img.symtab_typed(2, 8 << 20)  # STT_FUNC
    return [] if strtab is None else sorted(
        {img.cstring(strtab, name) for name, value in funcs if value in want})


def source_file_symbols(img: ElfImage) -> list[str]:
    """The translation units named by ``STT_FILE`` entries of ``.symtab`` (unstripped builds),
    C/C++/CUDA sources only (crtstuff.c and the like are the toolchain's)."""
    strtab, files = img.symtab_typed(4, 8 << 20)  # STT_FILE
    names = set() if strtab is None else {img.cstring(strtab, name) for name, _ in files}
    return sorted(n for n in names if n.endswith((".cpp", ".cc", ".cxx", ".cu", ".c"))
                  and not n.startswith("crt"))[:20]


def read_inventory(img: ElfImage, dynstr_names: list[str],
                   torch_context: bool = True) -> Inventory:
    """Everything this module can read; ``dynstr_names`` are the PyInit_ names exported.

    ``torch_context`` False (neither torch nor its stable shim will be in the process): text
    that reads like a schema is not one, so it is dropped, and ``.rodata`` is not scanned for
    schemas at all unless the stable shim is used (1.2 s on tensorflow-io's 132 MB library);
    registrars found by their symbols stay."""
    stripped = img.symtab_section() is None
    inv = Inventory(stripped=stripped)
    inv.namespaces = resolve_namespaces(img, _namespaces(markers(img)))
    from opdoctor.facts.stable import registers
    if torch_context or registers(img):
        inv.schemas = schemas(img)
    _add_stable(img, inv)
    if not torch_context and not inv.stable_abi:
        # Neither torch nor its stable shim: text that reads like a schema is not one (OpenCV's
        # cv2.abi3.so: "cv::VideoCapture(int index)", "reset() -> None" docstrings), so no
        # namespace is made of it below; registrars found by their symbols stay.
        inv.schemas = []
    inv.pyinit = dynstr_names
    inv.initializers, inv.initializer_names = initializers(img)
    read_tensorflow(img, inv)
    dynstr = _section_range(img, ".dynstr")
    if dynstr:
        buf = img.data.buf
        # torch::RegisterOperators is an alias of c10::RegisterOperators (its members mangle
        # as c10's, `op<…>() &&` with the rvalue qualifier: `_ZNO3c10…`): torch_scatter 2.1.2
        # and torch_spline_conv register every op through it (survey 22: OD101 on each).
        # torch::jit::RegisterOperators registers TorchScript operators the same way.
        inv.legacy_register_operators = _LEGACY_REGISTRAR.search(
            bytes(buf[dynstr[0]:dynstr[1]])) is not None
        inv.constructs_library = any(buf.find(ctor, *dynstr) >= 0 for ctor in (
            b"_ZN5torch7LibraryC1ENS0_4Kind", b"_ZN5torch7LibraryC2ENS0_4Kind"))
        # torch::Library::_def(schema, CppFunction&&, ...) means m.def binds a function.
        inv.def_with_function = re.search(
            rb"_ZNR?5torch7Library4_def\w*CppFunction", bytes(buf[dynstr[0]:dynstr[1]])) is not None
    ro = _section_range(img, ".rodata")
    if ro:
        files = re.findall(rb"(?<=\x00)[\w./-]+\.(?:cpp|cc|cu|cxx)(?=\x00)",
                           bytes(img.data.buf[ro[0]:min(ro[1], ro[0] + (8 << 20))]))
        inv.source_files = sorted({f.decode() for f in files if b"/include/" not in f})[:20]
    # Assign schemas to the namespace this library defines when there is exactly one.
    defined = [ns for ns in inv.namespaces.values() if ns.defines or ns.fragments]
    inv.schemas = [s for s in inv.schemas if plausible_schema(s, bool(defined))]
    for s in inv.schemas:
        if "::" in s.name:
            ns_name, op = s.name.split("::", 1)
            target = inv.namespaces.setdefault(ns_name, Namespace(ns_name))
        elif len(defined) == 1:
            target, op = defined[0], s.name
        else:
            continue
        if op not in target.ops:
            target.ops.append(op)
    return inv


def _add_stable(img: ElfImage, inv: Inventory) -> None:
    """Stable-ABI registrars join the inventory like classic ones (namespaces, keys)."""
    from opdoctor.facts.stable import read_registration
    reg = read_registration(img, frozenset(s.name.split("::")[-1].split(".")[0]
                                           for s in inv.schemas))
    inv.stable_abi = reg.used or bool(reg.namespaces)
    inv.stable_from_rodata = reg.from_rodata
    for name in sorted(reg.namespaces):
        ns = inv.namespaces.setdefault(name, Namespace(name))
        ns.stable = True
        ns.defines += reg.defines.get(name, 0)
        ns.fragments += reg.fragments.get(name, 0)
        ns.impl_keys |= reg.impl_keys.get(name, set())


_TF_OP_REGISTRAR = (b"_ZN10tensorflow11register_op19OpDefBuilderWrapperclEv",
                    b"register_op20OpDefBuilderReceiver")
_TF_KERNEL_REGISTRAR = b"kernel_factory17OpKernelRegistrar12InitInternal"
# Input/Output/Attr specs: "name: type" where type is a TF dtype, an attr type, a type
# variable (T), a list/ref/number expression ("N * T", "int >= 1", "{float, int32}").
_TF_SPEC = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*: (?:Ref\(|list\(|\{|[A-Z]\w*\b|\d|"
    r"(?:u?int(?:8|16|32|64)|float|double|"
    r"half|bfloat16|bool|string|complex(?:64|128)|resource|variant|q?u?int\d+|type|shape|"
    r"tensor|func|int)\b)[\w\s{}(),*=<>.+\-]*$")
# The whole shape of a spec: one type expression (a name, a number, Ref(…)/list(…), a {…}
# set), then at most "* T", ">= N" and "= default". Messages that start like one
# ("Unsupported: type mismatch" in protobuf, "DcmItem: Parse error …") go on with more words.
_TF_SPEC_SHAPE = re.compile(
    r"^[A-Za-z_]\w*: (?:(?:Ref|list)\([^()]*(?:\([^()]*\))?[^()]*\)|\{[^}]*\}|[A-Za-z_]\w*|\d+)"
    r"(?: ?\* ?[A-Za-z_]\w*)?(?: ?>= ?-?\d+)?(?: ?= ?.+)?$")
# "Sd", "St": mangled-name fragments; "Ns>Name": a namespaced op (tensorflow-text's TFText>…)
_TF_OP_NAME = re.compile(r"^(?:[A-Z][A-Za-z0-9_]{1,40}>)?[A-Z][A-Za-z0-9]{2,}$")
# What stands before a spec-like string without being an op name (tensorflow-io, -decision-
# forests): an all-capitals token ("DICM", "CMYK", "IS3"), a mangled type name
# ("N6pulsar7AuthTlsE"), a calendar word ("Thursday").
_NOT_TF_OP = re.compile(
    r"^(?:[A-Z0-9]+|N\d+[A-Za-z_]\w*E|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|"
    r"January|February|March|April|June|July|August|September|October|November|December)$")
_RODATA_STR = re.compile(rb"(?<=\x00)[\x20-\x7e]{2,200}(?=\x00)")
# A namespaced TensorFlow op name ("TFText>ByteSplitWithOffsets"): tensorflow-text's ops built
# with the TF Lite shim keep it in a `kOpName` constant, not beside their specs.
_TF_NS_OP = re.compile(r"^[A-Z][A-Za-z0-9_]{1,40}>[A-Z][A-Za-z0-9_]{2,80}$")


def read_tensorflow(img: ElfImage, inv: Inventory) -> None:
    """TensorFlow markers: the REGISTER_OP / REGISTER_KERNEL_BUILDER entry points referenced,
    the Input/Output/Attr spec strings, and the op name literal stored just before them."""
    needed = [str(n) for n in img.tags.get("DT_NEEDED", [])]
    dyn = _section_range(img, ".dynstr")
    buf = img.data.buf

    def has(needle: bytes) -> bool:
        return dyn is not None and buf.find(needle, dyn[0], dyn[1]) >= 0

    inv.tf_library = any(n.startswith("libtensorflow") for n in needed) or has(b"_ZN10tensorflow")
    if not inv.tf_library:
        return
    inv.tf_op_registrars = any(has(m) for m in _TF_OP_REGISTRAR)
    inv.tf_kernel_registrars = has(_TF_KERNEL_REGISTRAR)
    ro = _section_range(img, ".rodata")
    if ro is None:
        return
    strings = [m.group(0).decode() for m in
               _RODATA_STR.finditer(buf, ro[0], min(ro[1], ro[0] + (16 << 20)))]
    for i, text in enumerate(strings):
        if not i % 4096:
            checkpoint(f"scanning .rodata strings for TensorFlow op specs ({i:,} read)")
        if not _TF_SPEC.match(text) or not _TF_SPEC_SHAPE.match(text):
            continue
        inv.tf_specs.append(text)
        for prev in reversed(strings[max(0, i - 4):i]):
            if _TF_OP_NAME.match(prev) and not _NOT_TF_OP.match(prev):
                if prev not in inv.tf_ops:
                    inv.tf_ops.append(prev)
                break
    if inv.tf_op_registrars and has(b"6tflite4shim7Runtime"):
        # ops registered through the TF Lite shim's OpDefBuilderWrapper: their `kOpName`
        # (the scan's ops column said "? (TensorFlow op)" for them: survey 20)
        inv.tf_ops += [t for t in dict.fromkeys(strings)
                       if _TF_NS_OP.match(t) and t not in inv.tf_ops]


# A conversion of printf or of {fmt} / std::format: the library formats this text before it
# registers it (open3d 0.20: "ScalarType index_dtype=%d" filled with the dtype's number).
_FORMAT_FIELD = re.compile(r"%[-+ #0]{0,3}\d{0,3}(?:\.\d{1,3})?(?:hh|h|ll|l|z|j|t|L)?"
                           r"[diouxXeEfgGs]|\{\w{0,20}(?::[^{}]{0,10})?\}")


def is_template(text: str) -> bool:
    """Whether a schema string is a format template the library fills in before ``m.def``
    (only the formatted text reaches torch's parser, so the template is not judged)."""
    return ("%" in text or "{" in text) and _FORMAT_FIELD.search(text) is not None


def split_schema(text: str) -> tuple[str, str, str] | None:
    """(name, argument list, rest) of ``name(args) rest``, the argument list ending at the
    parenthesis that balances the first one — a greedy match would swallow a tuple return
    (``f(Tensor a) -> (Tensor, Tensor)``) into the arguments. None when not of that form."""
    m = re.match(r"^([\w:.]+)\(", text)
    if not m:
        return None
    depth = 0
    for i in range(m.end() - 1, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return m.group(1), text[m.end():i], text[i + 1:]
    return None  # unbalanced


def check_schema_syntax(text: str) -> str:
    """Built-in grammar check of a schema's argument list; "" when it looks valid.

    Checks: balanced parentheses, each argument is ``Type name[=default]`` (or ``*``), every
    type is one the schema language knows (with ``?``, ``[]``, ``[N]``, ``(a!)`` suffixes), and
    the return part, when present, follows ``->``.
    """
    split = split_schema(text)
    if split is None:
        return "not of the form name(args) -> returns"
    _, arglist, rest = split
    rest = rest.strip()
    if rest and not rest.startswith("->"):
        return f"expected '->' after the argument list, found {rest!r}"
    args, depth, cur = [], 0, ""
    for ch in arglist:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur)
    for arg in (a.strip() for a in args):
        if arg == "*":
            continue
        parts = arg.split("=")[0].split()
        if len(parts) < 2:
            return f"argument {arg!r} needs a type and a name"
        # Twice: "Tensor?[]" and "Tensor(a!)[]?" carry two layers of suffixes.
        base = re.sub(r"(\([a-z*]+!?\))?(\[\d*\])?\??$", "", parts[0])
        base = re.sub(r"(\([a-z*]+!?\))?(\[\d*\])?\??$", "", base)
        if base not in SCHEMA_TYPES and not base.startswith("__torch__"):
            return f"unknown type {base!r} in argument {arg!r}"
    return ""
