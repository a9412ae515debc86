"""Facts: everything a check may read, computed lazily once per run and shared.

Checks never open the file or parse the ELF themselves; they read these properties. Expensive
facts are ``cached_property`` so the first check that needs one pays for it and every later
check reuses it.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from functools import cached_property

from opdoctor.facts.elf.image import (
    HOST_MACHINES,
    ElfFormatError,
    ElfHeader,
    ElfImage,
    Extent,
    header_extents,
    parse_header,
)
from opdoctor.facts.elf.validate import table_damage
from opdoctor.facts.inputfile import FileData, open_input
from opdoctor.facts.interp import Interpreter, InterpreterError, inspect_interpreter
from opdoctor.facts.loader.process import Process, emulate, needs_tensorflow, needs_torch
from opdoctor.facts.loader.search import Environment, Resolver
from opdoctor.facts.loader.symbols import Binding, SymbolTables, bind
from opdoctor.facts.probe.runner import ProbeHandle, ProbeRequest, ProbeResult, start_probe
from opdoctor.facts.pychain import ImportChain, analyse


@dataclass(frozen=True)
class CheckOptions:
    """What the user asked for that checks may need (grows with the check families)."""

    expect_ops: tuple[str, ...] = ()
    expect_symbols: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()  # target GPUs (sm_90, 9.0, H100 …); empty: detect
    python: str | None = None  # target interpreter (default: the one opdoctor runs in)
    # The environment the job will run with; None means opdoctor's own os.environ.
    env: tuple[tuple[str, str], ...] | None = None
    probe: bool = False  # load the library for real in a child process (the CLI's default)
    timeout: float = 60.0  # seconds for the probe
    probe_memory_mb: int = 16384
    smoke: bool = False
    preload: tuple[str, ...] = ()  # libraries the job loads before this one
    against_site_packages: bool = False  # look for the same namespace in other installed .so
    package: str | None = None  # import chain: the package `import` should find
    cwd: str = ""  # the job's working directory (sys.path[0] of `python -c`); "" = os.getcwd()


@dataclass(frozen=True)
class HostInfo:
    """The machine the library is meant to be loaded on."""

    machine: str
    bits: int | None
    e_machine: int | None
    glibc: tuple[int, int] | None


def detect_host() -> HostInfo:
    """Describe this machine: architecture and glibc version (None on non-glibc systems)."""
    machine = platform.machine().lower()
    bits, em = HOST_MACHINES.get(machine, (None, None))
    glibc: tuple[int, int] | None = None
    try:
        ver = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.36"
        major, minor = ver.split()[1].split(".")[:2]
        glibc = (int(major), int(minor))
    except (ValueError, IndexError, OSError):
        glibc = None
    return HostInfo(machine, bits, em, glibc)


@dataclass
class Structure:
    """What the file is, structurally: the input to the integrity check and the gate for others."""

    empty: bool = False
    header: ElfHeader | None = None
    not_elf: str = ""  # why it is not ELF (empty when it is)
    beyond_eof: list[Extent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    image: ElfImage | None = None
    # Inconsistent symbol/version/hash/dynamic tables (facts.elf.validate): OD413 — `damage`
    # in what ld.so uses (blocks the other checks), `oddities` in what only tools read.
    damage: list[str] = field(default_factory=list)
    oddities: list[str] = field(default_factory=list)


class Facts:
    """Lazily computed, shared facts about one target."""

    def __init__(self, path: str, options: CheckOptions | None = None,
                 host: HostInfo | None = None) -> None:
        self.path = path
        self.options = options or CheckOptions()
        self._host = host
        # Per-run memo for facts owned by one check family (e.g. the registration inventory).
        self.extra: dict[str, object] = {}

    @cached_property
    def file(self) -> FileData:
        """The target's bytes (memory-mapped). Raises InputError when it cannot be read."""
        return open_input(self.path)

    @cached_property
    def host(self) -> HostInfo:
        """The machine the library will be loaded on (this one, unless given)."""
        return self._host or detect_host()

    @cached_property
    def structure(self) -> Structure:
        """Header, layout and pyelftools image, with every structural problem recorded."""
        data = self.file
        st = Structure()
        if data.size == 0:
            st.empty = True
            return st
        try:
            st.header = parse_header(data.buf)
        except ElfFormatError as exc:
            st.not_elf = str(exc)
            return st
        extents, st.problems = header_extents(st.header, data.buf)
        st.beyond_eof = [e for e in extents if e.end > data.size]
        if st.problems or st.beyond_eof:
            return st
        try:
            st.image = ElfImage.open(data)
        except ElfFormatError as exc:
            st.problems.append(str(exc))
            return st
        found = table_damage(st.image)
        st.damage, st.oddities = found.fatal, found.ignored
        return st

    @cached_property
    def blocker(self) -> str:
        """Why checks that need a loadable ELF shared object cannot run ("" when they can)."""
        st = self.structure
        if st.empty:
            return "the file is empty"
        if st.header is None:
            return "the file is not ELF"
        if st.beyond_eof:
            return "the file is truncated"
        if st.problems or st.image is None:
            return "the ELF structure is malformed"
        if st.damage:
            return "the ELF symbol/version/dynamic tables are damaged"
        host = self.host
        if host.bits is not None and st.header.bits != host.bits:
            return f"the file is ELF{st.header.bits}, this host loads ELF{host.bits}"
        if host.e_machine is not None and st.header.e_machine != host.e_machine:
            return f"the file is for {st.header.machine_name}, not {host.machine}"
        if st.header.e_type != 3 or st.image.is_pie_executable:
            return "the file is not a shared library"
        return ""

    @cached_property
    def interpreter(self) -> Interpreter | None:
        """The target interpreter and its torch install (None when it cannot be run)."""
        try:
            return inspect_interpreter(self.options.python,
                                       env=self.environ if self.options.env is not None
                                       else None)
        except InterpreterError as exc:
            self.interpreter_error = str(exc)
            return None

    interpreter_error: str = ""

    @cached_property
    def environ(self) -> dict[str, str]:
        """The environment the library will be loaded with."""
        if self.options.env is None:
            return dict(os.environ)
        return dict(self.options.env)

    @cached_property
    def resolver(self) -> Resolver:
        """The ld.so emulation for this file's class/machine; images are shared."""
        return Resolver(self.image.header, Environment.from_env(self.environ),
                        {os.path.realpath(self.path): self.image})

    @cached_property
    def torch_context(self) -> bool:
        """True when the library will be loaded into a process that imported torch."""
        interp = self.interpreter
        lib_dir = interp.torch.lib_dir if interp and interp.torch else None
        return needs_torch(self.image, lib_dir)

    @cached_property
    def framework_library(self) -> str:
        """The framework install this file belongs to ("" for a user's library)."""
        interp = self.interpreter
        if interp and interp.torch:
            real = os.path.realpath(self.path)
            if real.startswith(os.path.realpath(interp.torch.directory) + os.sep):
                return f"torch {interp.torch.version}"
        return ""

    @cached_property
    def process(self) -> Process:
        """The emulated process after loading the target (dependency tree included)."""
        return emulate(self.path, self.resolver, self.interpreter, self.torch_context,
                       needs_tensorflow(self.image))

    @cached_property
    def symbol_tables(self) -> SymbolTables:
        """Hash-table symbol access per library, shared by every check."""
        return SymbolTables()

    @cached_property
    def binding(self) -> Binding:
        """Version needs and undefined symbols of the target, bound in the emulated process."""
        return bind(self.image, self.process, self.symbol_tables)

    @property
    def is_package_dir(self) -> bool:
        """True when the target is a package directory without a compiled library to check."""
        return bool(self.options.package) and os.path.isdir(self.path)

    @cached_property
    def chain(self) -> ImportChain | None:
        """The static import chain of the target package (None when not in package mode)."""
        if not self.options.package or self.framework_library:
            return None
        interp = self.interpreter
        sys_path = list(interp.sys_path) if interp else []
        suffix = interp.ext_suffix if interp else ".so"
        return analyse(self.options.package, sys_path, suffix,
                       self.options.cwd or os.getcwd())

    def start_probe(self) -> None:
        """Start the load probe now, so it runs while the static checks run."""
        if "probe_handle" in self.extra:
            return
        if not self.options.package and self.structure.image is None:
            return
        interp = self.interpreter
        python = interp.invoke if interp else (self.options.python or sys.executable)
        chain = self.chain
        hidden = [{"kind": link.kind, "target": link.target, "paths": link.resolved,
                   "where": f"{os.path.basename(link.file)}:{link.line} {link.swallowed}"}
                  for link in (chain.links if chain else []) if link.swallowed]
        uses_torch = bool(interp and interp.torch) and (
            bool(self.options.package) or self.torch_context)
        req = ProbeRequest(
            path=os.path.abspath(self.path), python=python, torch=uses_torch,
            package=self.options.package, cwd=self.options.cwd or os.getcwd(), hidden=hidden,
            preload=tuple(os.path.abspath(p) for p in self.options.preload),
            ops=tuple(op.split("[")[0] for op in self.options.expect_ops),
            smoke=self.options.smoke, timeout=self.options.timeout,
            memory_mb=self.options.probe_memory_mb, env=self.environ)
        self.extra["probe_handle"] = start_probe(req)

    def probe_result(self) -> ProbeResult | None:
        """The probe's result (waits for it); None when it was not started."""
        if "probe_result" not in self.extra:
            handle = self.extra.get("probe_handle")
            if not isinstance(handle, ProbeHandle):
                return None
            self.extra["probe_result"] = handle.wait()
        res = self.extra["probe_result"]
        return res if isinstance(res, ProbeResult) else None

    @property
    def image(self) -> ElfImage:
        """The parsed image; only valid for checks that run (the runner gates on blocker)."""
        img = self.structure.image
        if img is None:
            raise RuntimeError("facts.image used although the file is not a sound ELF")
        return img
