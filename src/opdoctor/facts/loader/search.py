"""Dependency resolution the way glibc's ld.so does it, with every path considered on record.

For a DT_NEEDED name without a slash, glibc (elf/dl-load.c, _dl_map_object) searches:
  1. the DT_RPATH of the requesting object, then of the object that loaded it, up to the root
     — but only when the requesting object has no DT_RUNPATH;
  2. LD_LIBRARY_PATH;
  3. the requesting object's own DT_RUNPATH (never inherited by its dependencies);
  4. /etc/ld.so.cache — unless the object was linked with -z nodefaultlib;
  5. the default directories (same exception).
Before any search, a name that matches an object already in the process (by the name it was
loaded under or its DT_SONAME) is reused: that is why a torch extension without an RPATH to
torch/lib loads fine *after* ``import torch`` although ``ldd`` says ``libc10.so => not found``.
Candidates of the wrong ELF class or machine are skipped and the search goes on.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from opdoctor.facts.budget import checkpoint
from opdoctor.facts.elf.image import ElfFormatError, ElfHeader, ElfImage, parse_header
from opdoctor.facts.inputfile import InputError, open_input
from opdoctor.facts.loader.ldcache import load_ld_cache

DF_1_NODEFLIB = 0x800

# What `ld.so --help` prints as the system search path on Debian/Ubuntu multiarch and on
# RPM-style distributions; directories that do not exist are simply not found.
DEFAULT_DIRS = {
    62: ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
         "/usr/lib"],
    183: ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
          "/usr/lib"],
}

RULE_PATH = "path"
RULE_RPATH = "rpath"
RULE_LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
RULE_RUNPATH = "runpath"
RULE_CACHE = "ld.so.cache"
RULE_DEFAULT = "default path"
RULE_PRELOADED = "already loaded"


@dataclass(frozen=True)
class Attempt:
    """One candidate path the loader would try, and what happened."""

    path: str
    rule: str
    outcome: str  # "found" or why it was skipped


@dataclass
class Library:
    """A library in the emulated process: where it came from and who asked for it."""

    name: str  # the DT_NEEDED string (or the path given for the root)
    path: str
    rule: str
    soname: str = ""
    requested_by: str = ""
    preloaded_by: str = ""  # "python", "import torch" … when reused from the host process
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    nodeflib: bool = False
    image: ElfImage | None = field(default=None, repr=False)


@dataclass
class Missing:
    """A DT_NEEDED entry that no rule finds."""

    name: str
    requested_by: str
    attempts: list[Attempt]
    # Directories where the file does exist but the rules for this requester do not look:
    # e.g. the parent's DT_RUNPATH (not inherited).
    exists_in: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class DepTree:
    """The result of loading a root object: everything mapped, in load order, and what failed."""

    root: Library
    order: list[Library]  # breadth-first, root first (glibc's local scope order)
    edges: dict[str, list[tuple[str, Library | Missing]]]
    missing: list[Missing]


@dataclass(frozen=True)
class Environment:
    """The process environment the loader sees."""

    ld_library_path: tuple[str, ...] = ()
    cache_path: str = "/etc/ld.so.cache"
    lib: str = ""  # $LIB; computed from the machine when empty
    platform_name: str = ""  # $PLATFORM
    preload: tuple[str, ...] = ()  # LD_PRELOAD: loaded after the program, before its needs

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Environment:
        """Read LD_LIBRARY_PATH (an empty element means the current directory, as in glibc)
        and LD_PRELOAD (separated by spaces or colons, as ld.so reads it)."""
        raw = env.get("LD_LIBRARY_PATH")
        parts = tuple((p or ".") for p in raw.replace(";", ":").split(":")) if raw else ()
        pre = tuple(p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p)
        return cls(ld_library_path=parts, preload=pre)


def _expand(entry: str, origin: str, env: Environment) -> str:
    lib = env.lib or ("lib/x86_64-linux-gnu" if os.path.isdir("/lib/x86_64-linux-gnu")
                      else "lib64")
    plat = env.platform_name or ""
    if not plat and "PLATFORM" in entry:
        import platform  # here: $PLATFORM is rare, and the module's import is not free

        plat = platform.machine()
    for token, value in (("$ORIGIN", origin), ("${ORIGIN}", origin), ("$LIB", lib),
                         ("${LIB}", lib), ("$PLATFORM", plat), ("${PLATFORM}", plat)):
        entry = entry.replace(token, value)
    return entry


def _split(paths: list[str]) -> list[str]:
    return [p for value in paths for p in value.split(":") if p]


class Resolver:
    """Emulates ld.so for one ELF class/machine; images are opened once and shared."""

    def __init__(self, header: ElfHeader, env: Environment,
                 images: dict[str, ElfImage | None] | None = None) -> None:
        self.bits = header.bits
        self.machine = header.e_machine
        self.env = env
        self.cache = load_ld_cache(env.cache_path)
        self.default_dirs = DEFAULT_DIRS.get(header.e_machine, ["/lib64", "/usr/lib64", "/lib",
                                                                "/usr/lib"])
        self.images: dict[str, ElfImage | None] = images if images is not None else {}

    # ------------------------------------------------------------------ files
    def open_image(self, path: str) -> ElfImage | None:
        """Parsed image of ``path`` (cached by real path); None if it is not a usable ELF."""
        key = os.path.realpath(path)
        if key not in self.images:
            try:
                data = open_input(key)
                self.images[key] = ElfImage.open(data) if data.size else None
            except (InputError, ElfFormatError, OSError):
                self.images[key] = None
        return self.images[key]

    def _probe(self, path: str) -> str:
        """'found', or why the loader would skip this candidate."""
        if not os.path.exists(path):
            return "no such file"
        if os.path.isdir(path):
            return "is a directory"
        try:
            with open(path, "rb") as fh:
                head = fh.read(64)
        except OSError as exc:
            return f"cannot open: {exc.strerror}"
        try:
            hdr = parse_header(head)
        except ElfFormatError:
            return "not an ELF file"
        if hdr.bits != self.bits:
            return f"wrong ELF class (ELF{hdr.bits})"
        if hdr.e_machine != self.machine:
            return f"wrong machine ({hdr.machine_name})"
        return "found"

    def describe(self, lib: Library) -> Library:
        """Fill in DT_NEEDED/RPATH/RUNPATH/SONAME from the library's dynamic section."""
        img = lib.image or self.open_image(lib.path)
        lib.image = img
        if img is None:
            return lib
        tags = img.tags
        lib.needed = [str(n) for n in tags.get("DT_NEEDED", [])]
        lib.rpath = _split([str(v) for v in tags.get("DT_RPATH", [])])
        lib.runpath = _split([str(v) for v in tags.get("DT_RUNPATH", [])])
        lib.soname = str(tags.get("DT_SONAME", [""])[0])
        lib.nodeflib = any(int(v) & DF_1_NODEFLIB for v in tags.get("DT_FLAGS_1", []))
        return lib

    # ------------------------------------------------------------------ search
    def search(self, name: str, requester: Library, chain: list[Library]
               ) -> tuple[str, str, list[Attempt]]:
        """Where ``name`` requested by ``requester`` is found: (path, rule, attempts)."""
        attempts: list[Attempt] = []

        def try_dir(d: str, rule: str) -> str:
            cand = os.path.join(d, name)
            outcome = "directory does not exist" if not os.path.isdir(d) else self._probe(cand)
            attempts.append(Attempt(cand, rule, outcome))
            return cand if outcome == "found" else ""

        if "/" in name:
            origin = os.path.dirname(requester.path)
            path = name if os.path.isabs(name) else os.path.join(origin, name)
            outcome = self._probe(path)
            attempts.append(Attempt(path, RULE_PATH, outcome))
            return (path if outcome == "found" else ""), RULE_PATH, attempts
        if not requester.runpath:
            for obj in [requester, *reversed(chain)]:
                for entry in obj.rpath:
                    d = _expand(entry, os.path.dirname(obj.path), self.env)
                    rule = (RULE_RPATH if obj is requester
                            else f"{RULE_RPATH} of {os.path.basename(obj.path)}")
                    if found := try_dir(d, rule):
                        return found, rule, attempts
        for d in self.env.ld_library_path:
            if found := try_dir(d, RULE_LD_LIBRARY_PATH):
                return found, RULE_LD_LIBRARY_PATH, attempts
        for entry in requester.runpath:
            d = _expand(entry, os.path.dirname(requester.path), self.env)
            if found := try_dir(d, RULE_RUNPATH):
                return found, RULE_RUNPATH, attempts
        if requester.nodeflib:
            attempts.append(Attempt("(ld.so.cache and default dirs)", RULE_CACHE,
                                    "skipped: linked with -z nodefaultlib"))
            return "", "", attempts
        for cand in self.cache.get(name, []):
            outcome = self._probe(cand)
            attempts.append(Attempt(cand, RULE_CACHE, outcome))
            if outcome == "found":
                return cand, RULE_CACHE, attempts
        if not self.cache.get(name):
            attempts.append(Attempt(name, RULE_CACHE, "not in /etc/ld.so.cache"))
        for d in self.default_dirs:
            if found := try_dir(d, RULE_DEFAULT):
                return found, RULE_DEFAULT, attempts
        return "", "", attempts

    def load(self, root_path: str, preloaded: list[Library] | None = None,
             root_name: str | None = None, via: list[Library] | None = None) -> DepTree:
        """Emulate loading ``root_path`` into a process that already holds ``preloaded``;
        ``via``: the libraries whose DT_NEEDED loads it (their DT_RPATH is searched for its
        dependencies too, as ld.so searches every loader's in the chain)."""
        root = self.describe(Library(root_name or root_path, os.path.abspath(root_path),
                                     RULE_PATH))
        loaded: dict[str, Library] = {}
        for lib in preloaded or []:
            loaded.setdefault(lib.name, lib)
            if lib.soname:
                loaded.setdefault(lib.soname, lib)
        loaded.setdefault(root.name, root)
        if root.soname:
            loaded.setdefault(root.soname, root)
        order = [root]
        edges: dict[str, list[tuple[str, Library | Missing]]] = {}
        missing: list[Missing] = []
        chains: dict[str, list[Library]] = {root.path: list(via or [])}
        queue: deque[Library] = deque([root])
        reals: dict[str, str] = {}  # os.path.realpath once per path (an lstat per component)

        def real_of(path: str) -> str:
            found = reals.get(path)
            if found is None:
                found = reals[path] = os.path.realpath(path)
            return found

        while queue:
            obj = queue.popleft()
            checkpoint(f"emulating the load of {obj.path}'s dependencies")
            chain = chains.get(obj.path, [])
            out: list[tuple[str, Library | Missing]] = []
            for name in obj.needed:
                if name in loaded:
                    out.append((name, loaded[name]))
                    if loaded[name] not in order:
                        order.append(loaded[name])
                    continue
                path, rule, attempts = self.search(name, obj, chain)
                if not path:
                    miss = Missing(name, obj.path, attempts,
                                   self._exists_elsewhere(name, obj, chain))
                    missing.append(miss)
                    out.append((name, miss))
                    continue
                real = real_of(path)
                same = next((lib for lib in order if real_of(lib.path) == real), None)
                if same is not None:  # the same file under another name: glibc reuses it
                    loaded[name] = same
                    out.append((name, same))
                    continue
                lib = self.describe(Library(name, path, rule, requested_by=obj.path))
                loaded[name] = lib
                if lib.soname:
                    loaded.setdefault(lib.soname, lib)
                order.append(lib)
                chains[lib.path] = [*chain, obj]
                out.append((name, lib))
                queue.append(lib)
            edges[obj.path] = out
        return DepTree(root, order, edges, missing)

    def _exists_elsewhere(self, name: str, obj: Library, chain: list[Library]
                          ) -> list[tuple[str, str]]:
        """Places the file exists that this requester's rules skip (a RUNPATH of a loader)."""
        hits = []
        for loader in reversed(chain):
            for entry in loader.runpath:
                d = _expand(entry, os.path.dirname(loader.path), self.env)
                cand = os.path.join(d, name)
                if self._probe(cand) == "found":
                    hits.append((cand, f"DT_RUNPATH of {os.path.basename(loader.path)}"))
        return hits


def dlopen_by_name(name: str, environ: dict[str, str], program: str
                   ) -> tuple[str, list[Attempt]]:
    """Where ``dlopen(name)`` in a process of ``program`` (the interpreter that will load it)
    finds a bare file name (``libodbc.so.2``): the program's DT_RPATH, LD_LIBRARY_PATH, its
    DT_RUNPATH, /etc/ld.so.cache, the default directories — ld.so's order. ("", the places
    tried) when none has it; ("", []) when ``program`` is no ELF file to read the class from."""
    from opdoctor.facts.elf.image import ElfFormatError, parse_header

    try:
        with open(program, "rb") as fh:
            header = parse_header(fh.read(64))
    except (OSError, ElfFormatError):
        return "", []
    resolver = Resolver(header, Environment.from_env(environ))
    requester = resolver.describe(Library(program, os.path.realpath(program), RULE_PATH))
    path, _rule, attempts = resolver.search(name, requester, [])
    return path, attempts


def searched(attempts: list[Attempt], limit: int = 4) -> str:
    """The places a search looked, in one line: each rule once, with its first directories."""
    by_rule: dict[str, list[str]] = {}
    for a in attempts:
        place = a.path if a.rule == RULE_CACHE else os.path.dirname(a.path)
        by_rule.setdefault(a.rule, [])
        if place not in by_rule[a.rule]:
            by_rule[a.rule].append(place)
    parts = []
    for rule, where in by_rule.items():
        if rule == RULE_CACHE:
            listed = [a for a in attempts if a.rule == RULE_CACHE and a.path != a.outcome
                      and not a.outcome.startswith("not in")]
            parts.append("ld.so.cache: " + ", ".join(f"{a.path} ({a.outcome})"
                                                     for a in listed[:limit])
                         if listed else "not in /etc/ld.so.cache")
            continue
        more = f" (+{len(where) - limit})" if len(where) > limit else ""
        parts.append(f"{rule}: {', '.join(where[:limit])}{more}")
    return "; ".join(parts)
