"""Stable-ABI extensions, read statically: registrars, the C shim they import, the torch they need.

An extension built with ``STABLE_TORCH_LIBRARY*`` (``torch/csrc/stable/library.h``) links no
C++ torch symbol: it registers through the C shim (``aoti_torch_library_init_{def,impl,
fragment}``, ``aoti_torch_library_def``, ``torch_library_impl``) and calls torch through
``aoti_torch_*`` / ``torch_*`` C functions. What is read here, without loading anything:

* registrars: ``STABLE_TORCH_LIBRARY{,_FRAGMENT,_IMPL}_{static_,}init_<ns>[_<Key>]_<uid>``
  local symbols in ``.symtab``. Real packages declare them inside a C++ namespace
  (``_ZN6vision3opsL49STABLE_TORCH_LIBRARY_IMPL_init_torchvision_CUDA_0E…``), so the
  length prefix is read wherever the name starts, not only after ``_ZL``;
* stripped: the macros pass the namespace and the key to the shim as string literals
  (``C10_STRINGIZE(ns)``, ``C10_STRINGIZE(k)``): the code loads both addresses into the call's
  argument registers (``lea``), which names the namespace; failing that, a namespace literal
  sits next to its key literals in the pool (``"sop\\0CPU\\0Meta\\0"``);
* the shim functions imported (undefined ``.dynsym`` names), judged against the installed
  torch's shim headers: each declaration's ``#if TORCH_FEATURE_VERSION >= TORCH_VERSION_X``
  gate (the release that added it to the stable surface) and ``#ifdef USE_CUDA`` blocks
  (declared only for CUDA builds of torch);
* the torch the extension was compiled with: ``torch_library_impl`` and
  ``torch_call_dispatcher`` take ``TORCH_ABI_VERSION`` (``major << 56 | minor << 48 |
  patch << 40``) as an immediate, so ``movabs $0x020e010000000000, %reg`` in the code says
  "built with torch 2.14.1 headers".
"""

from __future__ import annotations

import functools
import glob
import mmap
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from opdoctor.facts import commandcache
from opdoctor.facts.elf.image import ElfImage

# A stable registrar's name after its length prefix (read by _idents, which honours the prefix).
_STABLE = re.compile(rb"(\d+)(STABLE_TORCH_LIBRARY\w+)")
# Dispatch keys the stable macros stringise (C10_STRINGIZE(k)); a stripped library keeps them.
DISPATCH_KEYS = ("CPU", "CUDA", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
                 "Autograd", "AutogradCPU", "AutogradCUDA", "HIP", "XPU", "MPS", "BackendSelect",
                 "PrivateUse1", "AutogradPrivateUse1", "QuantizedCPU", "SparseCPU", "SparseCUDA")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{0,63}")
# The shim's registration entry points: a library importing one registers through the stable ABI.
REGISTRARS = ("aoti_torch_library_init_def", "aoti_torch_library_init_impl",
              "aoti_torch_library_init_fragment")
SHIM_PREFIXES = ("aoti_torch_", "torch_")
# movabs imm64 into a register: REX.W (48/49) B8+r, then the little-endian immediate whose
# top bytes are 02 (major 2), the minor, the patch and five zero bytes (ABI tag 0).
_ABI_IMM = re.compile(rb"[\x48\x49][\xb8-\xbf]\x00\x00\x00\x00\x00([\x00-\x1f])([\x08-\x3f])\x02")
_SCAN_TEXT = 64 << 20


@dataclass
class StableRegistration:
    """The stable-ABI registrations of one library, as far as the file tells."""

    used: bool = False  # imports aoti_torch_library_init_*
    defines: Counter[str] = field(default_factory=Counter)  # STABLE_TORCH_LIBRARY(ns)
    fragments: Counter[str] = field(default_factory=Counter)  # STABLE_TORCH_LIBRARY_FRAGMENT
    impl_keys: dict[str, set[str]] = field(default_factory=dict)  # ns → keys
    from_rodata: bool = False  # stripped: namespaces/keys read from the code and .rodata

    @property
    def namespaces(self) -> set[str]:
        """Every namespace named by a registrar."""
        return set(self.defines) | set(self.fragments) | set(self.impl_keys)


def _range(img: ElfImage, name: str) -> tuple[int, int] | None:
    sec = img.section(name)
    if sec is None or sec.sh_type == 8:  # SHT_NOBITS
        return None
    return sec.offset, sec.offset + sec.size


def _idents(buf: bytes | mmap.mmap, start: int, end: int) -> list[str]:
    """STABLE_TORCH_LIBRARY* identifiers in a string table, cut at their mangled length.

    The digits before the name are its length, but a C++ namespace that ends in a digit glues
    onto them (``_ZN5foo_249STABLE…``): the right prefix is the digit suffix whose
    length ends the identifier where the mangled name goes on (``E``, ``R``) or the string
    ends; the whole digit run is tried first (``STABLE`` itself has an ``E`` at offset 5)."""
    out: list[str] = []
    # The regex starts with a digit run, so it would be tried at every digit of a string table
    # that can hold 100 MB of mangled names (4 s for tensorflow-io): find the literal at memchr
    # speed and match only around each hit.
    at = buf.find(b"STABLE_TORCH_LIBRARY", start, end)
    while at >= 0:
        lead = at
        while lead > start and 0x30 <= buf[lead - 1] <= 0x39:
            lead -= 1
        m = _STABLE.match(buf, lead, end) if lead < at else None
        # Resume after the match, as finditer would (a second literal inside it is no hit).
        at = buf.find(b"STABLE_TORCH_LIBRARY", m.end() if m else at + 1, end)
        if m is None:
            continue
        digits, name = m.group(1), m.group(2)
        ident = ""
        for k in range(len(digits), 0, -1):
            n = int(digits[-k:])
            if len("STABLE_TORCH_LIBRARY") < n <= len(name) and \
                    (n == len(name) or name[n:n + 1] in (b"E", b"R")):
                ident = name[:n].decode("ascii", "replace")
                break
        if ident and ident not in out:
            out.append(ident.replace("_static_init_", "_init_"))
    return out


def _strtab(img: ElfImage) -> tuple[int, int] | None:
    sym = img.symtab_section()
    if sym is not None and 0 < sym.link < len(img.sections):
        sec = img.sections[sym.link]
        if sec.sh_type != 8:
            return sec.offset, sec.offset + sec.size
    return _range(img, ".strtab")


def _imports(img: ElfImage, names: tuple[str, ...]) -> bool:
    dyn = _range(img, ".dynstr")
    return dyn is not None and any(
        img.data.buf.find(b"\0" + n.encode() + b"\0", dyn[0] - 1, dyn[1]) >= 0 for n in names)


def registers(img: ElfImage) -> bool:
    """Whether the library registers through the stable shim at all: it imports a registrar
    entry point or names a STABLE_TORCH_LIBRARY* initialiser (cheap: no code is read)."""
    if _imports(img, REGISTRARS):
        return True
    strtab = _strtab(img)
    return strtab is not None and any(
        i.startswith(("STABLE_TORCH_LIBRARY_IMPL_init_", "STABLE_TORCH_LIBRARY_FRAGMENT_init_",
                      "STABLE_TORCH_LIBRARY_init_")) for i in _idents(img.data.buf, *strtab))


def read_registration(img: ElfImage, op_names: frozenset[str] = frozenset()
                      ) -> StableRegistration:
    """Stable registrars from ``.symtab``, or, stripped, from ``.rodata`` literals
    (``op_names``: the ops of the schemas found, never taken for a namespace)."""
    out = StableRegistration(used=_imports(img, REGISTRARS))
    strtab = _strtab(img)
    if strtab is not None:
        for ident in _idents(img.data.buf, *strtab):
            if ident.startswith("STABLE_TORCH_LIBRARY_IMPL_init_"):
                km = re.match(r"^(.+)_([A-Za-z0-9]+)_(\d+)$",
                              ident[len("STABLE_TORCH_LIBRARY_IMPL_init_"):])
                if km:
                    out.impl_keys.setdefault(km.group(1), set()).add(km.group(2))
            elif ident.startswith("STABLE_TORCH_LIBRARY_FRAGMENT_init_"):
                ns = re.sub(r"_\d+$", "", ident[len("STABLE_TORCH_LIBRARY_FRAGMENT_init_"):])
                out.fragments[ns] += 1
            elif ident.startswith("STABLE_TORCH_LIBRARY_init_"):
                out.defines[ident[len("STABLE_TORCH_LIBRARY_init_"):]] += 1
    if out.used and not out.namespaces:
        # Stripped: a namespace seen before a key literal. It is defined here when the library
        # imports the def/fragment entry points (one namespace: it is that one).
        defines = _imports(img, REGISTRARS[0:1] + REGISTRARS[2:3])
        found = code_namespaces(img)
        # The literal pool may name keys the code reading missed (and the reverse).
        for ns, keys in rodata_namespaces(img, op_names).items():
            if ns in found or not found:
                found.setdefault(ns, set()).update(keys)
        for ns, keys in found.items():
            out.from_rodata = True
            out.impl_keys.setdefault(ns, set()).update(keys)
            if defines and len(found) == 1:
                out.fragments[ns] += 1
    return out


# lea disp32(%rip),%r64: how the code passes a string literal's address.
_LEA = re.compile(rb"([\x48\x4c])\x8d([\x05\x0d\x15\x1d\x25\x2d\x35\x3d])(.{4})", re.S)
# Where the namespace goes when the key is in a given register: the StableLibrary constructor
# inlined calls aoti_torch_library_init_impl(ns=%rdi, k=%rsi, …); not inlined,
# StableTorchLibraryInit(kind, fn, ns=%rdx, k=%rcx, …).
_NS_REG_FOR_KEY_REG = {6: 7, 1: 2}
# mov %r64,%r64 (REX.W 89 /r, register form).
_MOV_TO = re.compile(rb"([\x48\x49\x4c\x4d])\x89([\xc0-\xff])")


def _cstring_at(img: ElfImage, vaddr: int, ro: tuple[int, int, int]) -> str:
    """The NUL-terminated identifier at ``vaddr`` in .rodata ("" when not one)."""
    off, size, addr = ro
    if not 0 <= vaddr - addr < size:
        return ""
    start = off + vaddr - addr
    end = img.data.buf.find(b"\0", start, min(off + size, start + 65))
    word = bytes(img.data.buf[start:end]) if end > start else b""
    return word.decode() if _IDENT.fullmatch(word) else ""


def code_namespaces(img: ElfImage) -> dict[str, set[str]]:
    """Stripped: ``{namespace: keys}`` from the registrars' calls in the code.

    Each ``STABLE_TORCH_LIBRARY_IMPL`` initialiser loads the addresses of ``"ns"`` and
    ``"Key"`` with ``lea …(%rip)`` into the argument registers of the shim call. A lea of a
    key literal into %rsi (%rcx) with a lea of an identifier into %rdi (%rdx) close by names
    the namespace, even when the linker merged it into the tail of another literal
    (torchvision's ``"image"`` is the end of ``"decode_image"``)."""
    text, rosec = img.section(".text"), img.section(".rodata")
    if text is None or rosec is None or text.sh_type == 8 or rosec.sh_type == 8:
        return {}
    ro = (rosec.offset, rosec.size, rosec.addr)
    buf = img.data.buf
    leas: list[tuple[int, int, str]] = []  # (code offset, register, identifier)
    end = text.offset + min(text.size, _SCAN_TEXT)
    for m in _LEA.finditer(buf, text.offset, end):
        reg = ((m.group(2)[0] >> 3) & 7) | (8 if m.group(1)[0] & 4 else 0)
        target = text.addr + (m.end() - text.offset) + int.from_bytes(m.group(3), "little",
                                                                      signed=True)
        word = _cstring_at(img, target, ro)
        if word:
            leas.append((m.start(), reg, word))
    keys = set(DISPATCH_KEYS)
    out: dict[str, set[str]] = {}
    for i, (at, reg, word) in enumerate(leas):
        if word not in keys or reg not in _NS_REG_FOR_KEY_REG:
            continue
        want = _NS_REG_FOR_KEY_REG[reg]
        near = [w for a, r, w in leas[max(0, i - 4):i + 5]
                if r == want and abs(a - at) <= 48 and w not in keys]
        if not near:
            # The namespace's address was loaded once into a callee-saved register and is
            # copied for each call: mov %rbx,%rdi next to the key's lea.
            for mv in _MOV_TO.finditer(buf, max(text.offset, at - 48), at + 48):
                rex, modrm = mv.group(1)[0], mv.group(2)[0]
                if (modrm & 7) | (8 if rex & 1 else 0) != want:
                    continue
                src = ((modrm >> 3) & 7) | (8 if rex & 4 else 0)
                near = [w for a, r, w in reversed(leas[max(0, i - 64):i])
                        if r == src and at - a <= 4096 and w not in keys][:1]
                if near:
                    break
        if near:
            out.setdefault(near[0], set()).add(word)
    return out


def rodata_namespaces(img: ElfImage, exclude: frozenset[str] = frozenset()
                      ) -> dict[str, set[str]]:
    """Stripped: ``{namespace: keys}`` from literal runs around key literals in ``.rodata``.

    The static initialiser of each ``STABLE_TORCH_LIBRARY_IMPL(ns, Key, m)`` passes ``"ns"``
    and ``"Key"``; the literal pool keeps a translation unit's literals together, so the
    namespace is an identifier literal next to a key literal (``"sop\\0CPU\\0Meta"`` from
    our fixture, ``"CUDA\\0torchvision"`` from torchvision's wheel). Keys, op names of the
    schemas (``exclude``: ``m.impl("twin", …)`` sits there too) and other words do not count;
    the identifier next to the most key literals wins (a best guess, marked as such)."""
    ro = _range(img, ".rodata")
    if ro is None:
        return {}
    buf = img.data.buf
    end = min(ro[1], ro[0] + (16 << 20))
    keys = set(DISPATCH_KEYS)
    votes: Counter[str] = Counter()
    seen: dict[str, set[str]] = {}

    def word_at(start: int, stop: int) -> str:
        word = bytes(buf[start:stop])
        return word.decode() if _IDENT.fullmatch(word) else ""

    for key in DISPATCH_KEYS:
        needle = b"\0" + key.encode() + b"\0"
        pos = buf.find(needle, ro[0] - 1, end)
        while pos >= 0:
            run = [key]
            # Backwards over neighbouring key literals, then one identifier.
            cur = pos
            while True:
                start = buf.rfind(b"\0", max(ro[0] - 1, cur - 65), cur)
                w = word_at(start + 1, cur) if start >= 0 else ""
                if w in keys:
                    run.append(w)
                    cur = start
                    continue
                before = w
                break
            # Forwards: the literal after this key.
            nxt = pos + len(needle)
            stop = buf.find(b"\0", nxt, min(end, nxt + 65))
            after = word_at(nxt, stop) if stop > nxt else ""
            # An overload name passed to torch_call_dispatcher("aten::empty", "memory_format")
            # sits next to its op's literal (torchvision's image_stable.so: "…Autograd\\0
            # memory_format\\0aten::empty"): not a namespace.
            far_after = bytes(buf[stop + 1:stop + 8]) if stop > nxt else b""
            if far_after.startswith(b"aten::"):
                after = ""
            for w in (before, after):
                if w and w not in keys and w not in exclude:
                    votes[w] += 1
                    seen.setdefault(w, set()).update(run)
            pos = buf.find(needle, pos + 1, end)
    if not votes:
        return {}
    best = max(votes.values())
    return {w: seen[w] for w, n in votes.items() if n == best}


# ------------------------------------------------------------------ the C shim and its gates
@dataclass(frozen=True)
class ShimDecl:
    """One shim function as the installed torch's headers declare it."""

    name: str
    since: str  # "2.12.0" from #if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0; "" ungated
    cuda_only: bool  # inside #ifdef USE_CUDA
    header: str  # path relative to torch/include


_GATE = re.compile(r"#\s*if\s+TORCH_FEATURE_VERSION\s*>=\s*TORCH_VERSION_(\d+)_(\d+)_(\d+)")
_CUDA = re.compile(r"#\s*if(?:def\s+USE_CUDA\b|\s+defined\s*\(?\s*USE_CUDA)")
_FUNC = re.compile(r"\b((?:aoti_torch|torch)_\w+)\s*\(")


def shim_headers(torch_dir: str) -> list[str]:
    """The installed torch's C-shim headers (stable ``shim.h``, AOTI shims, generated shims)."""
    inc = os.path.join(torch_dir, "include", "torch", "csrc")
    pats = ("stable/c/*.h", "inductor/aoti_torch/c/*.h", "inductor/aoti_torch/generated/*.h")
    return sorted(f for p in pats for f in glob.glob(os.path.join(inc, p)))


@functools.lru_cache(maxsize=4)
def read_shim_headers(torch_dir: str) -> dict[str, ShimDecl]:
    """Every shim function the installed headers declare, with its version gate and whether
    only CUDA builds declare it (a tiny preprocessor: #if / #ifdef nesting, no evaluation)."""
    out: dict[str, ShimDecl] = {}
    include = os.path.join(torch_dir, "include")
    for path in shim_headers(torch_dir):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.readlines()
        except OSError:
            continue
        stack: list[tuple[str, bool]] = []  # (gate version or "", USE_CUDA) per open #if
        for line in lines:
            s = line.lstrip()
            if s.startswith("#"):
                gate = _GATE.match(s)
                if gate:
                    stack.append((".".join(gate.groups()), False))
                elif _CUDA.match(s):
                    stack.append(("", True))
                elif re.match(r"#\s*if", s):
                    stack.append(("", False))
                elif re.match(r"#\s*endif", s) and stack:
                    stack.pop()
                continue
            if "AOTI_TORCH_EXPORT" not in line and not _FUNC.search(line):
                continue
            for name in _FUNC.findall(line):
                if name in out:
                    continue
                since = next((g for g, _ in reversed(stack) if g), "")
                out[name] = ShimDecl(name, since, any(c for _, c in stack),
                                     os.path.relpath(path, include))
    return out


def shim_imports(undefined: list[str]) -> list[str]:
    """The C-shim functions among a library's undefined symbols (plain C names)."""
    return sorted(n for n in undefined if n.startswith(SHIM_PREFIXES) and not n.startswith("_"))


def version_key(v: str) -> tuple[int, ...]:
    """``"2.12.0"`` → ``(2, 12, 0)`` (non-numeric parts dropped) for comparisons."""
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:3])


def build_versions(img: ElfImage) -> Counter[str]:
    """Torch versions (``TORCH_ABI_VERSION`` immediates) the code passes to the shim.

    Only read for libraries that call ``torch_library_impl`` / ``torch_call_dispatcher``
    (the two functions that take the extension's build version); a few spurious 64-bit
    immediates of the same shape are outvoted by the real one."""
    if not _imports(img, ("torch_library_impl", "torch_call_dispatcher")):
        return Counter()
    out: Counter[str] = Counter()
    buf = img.data.buf
    for name in (".text",):
        rng = _range(img, name)
        if rng is None:
            continue
        for m in _ABI_IMM.finditer(buf, rng[0], min(rng[1], rng[0] + _SCAN_TEXT)):
            out[f"2.{m.group(2)[0]}.{m.group(1)[0]}"] += 1
    return out


def build_version(img: ElfImage) -> str:
    """The most frequent ``TORCH_ABI_VERSION`` immediate ("" when none). A check reads it
    through ``Facts.torch_build_version`` (read once per target)."""
    found = build_versions(img)
    return found.most_common(1)[0][0] if found else ""


commandcache.register(read_shim_headers.cache_clear)  # keyed on torch's directory alone
