"""Facts: everything a check may read, computed lazily once per run and shared.

Checks never open the file or parse the ELF themselves; they read these properties. Expensive
facts are ``cached_property`` so the first check that needs one pays for it and every later
check reuses it.
"""

from __future__ import annotations

import dataclasses
import functools
import mmap
import os
import re
import struct
import sys
from dataclasses import dataclass, field
from functools import cached_property

# Only the options are imported here: every reader (ELF, loader, interpreter, probe …) is
# imported by the fact that needs it, so a run pays only for the readers its checks use
# (issue #21: importing them all was most of the start-up of `opdoctor check`).
from opdoctor.facts import commandcache  # tiny (os, functools); every check imports it
from opdoctor.facts.options import CheckOptions, ExpectedOp, parse_expect_op

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    _T = TypeVar("_T")

    from opdoctor.facts.abi import AbiMismatch
    from opdoctor.facts.compile import (
        CompileInventory,
        PyRegistration,
    )
    from opdoctor.facts.cuda import Fatbin
    from opdoctor.facts.elf.dynsym import DynSymbols
    from opdoctor.facts.elf.image import (
        ElfHeader,
        ElfImage,
        Extent,
    )
    from opdoctor.facts.inputfile import FileData
    from opdoctor.facts.interp import Interpreter
    from opdoctor.facts.loader.process import Process
    from opdoctor.facts.loader.search import Resolver
    from opdoctor.facts.loader.symbols import Binding, SymbolTables
    from opdoctor.facts.mindspore import AotFunction, AotUse
    from opdoctor.facts.numpyabi import NumpyBuild
    from opdoctor.facts.oneflow import OneFlowInventory
    from opdoctor.facts.probe.outcome import ProbeOutcome, Swallowed
    from opdoctor.facts.probe.runner import ProbeHandle, ProbeRequest
    from opdoctor.facts.probe.zygote import ForkedProbe
    from opdoctor.facts.pychain import ImportChain
    from opdoctor.facts.pyreg import PackageRegistrations
    from opdoctor.facts.registration import Inventory
    from opdoctor.facts.tensorflow import TfInstall, TfRequirement
    from opdoctor.facts.variant import (
        ExtensionVariant,
        TorchVariant,
    )
    from opdoctor.facts.vendored import RpathLoader


# A package with more extension modules than this is not searched for the one whose load
# group brings a library in (load_group_host): the search emulates each one's load.
MAX_GROUP_HOSTS = 64
# namespace_definers' key for a stripped library's schema strings whose namespace it cannot
# tell (no registrar symbol left, no "ns::" in the string)
SAME_SCHEMAS = "(same schemas)"


@dataclass(frozen=True)
class HostInfo:
    """The machine the library is meant to be loaded on."""

    machine: str
    bits: int | None
    e_machine: int | None
    glibc: tuple[int, int] | None


def detect_host() -> HostInfo:
    """Describe this machine: architecture and glibc version (None on non-glibc systems)."""
    from opdoctor.facts.elf.image import HOST_MACHINES

    # platform.machine() is uname's machine field; the module only when uname has none.
    machine = os.uname().machine
    if not machine:
        import platform

        machine = platform.machine()
    machine = machine.lower()
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
    # Only the section header table is past the end of the file (it comes last: the sections
    # outside every segment, .symtab and debug info, went with it): ld.so never reads those,
    # and the program headers and segments are whole, so it loads — a lost tail.
    tail_only: bool = False
    # Inconsistent symbol/version/hash/dynamic tables (facts.elf.validate): OD413 — `damage`
    # in what ld.so uses (blocks the other checks), `oddities` in what only tools read.
    damage: list[str] = field(default_factory=list)
    oddities: list[str] = field(default_factory=list)


class Facts:
    """Lazily computed, shared facts about one target."""

    def __init__(self, path: str, options: CheckOptions | None = None) -> None:
        self.path = path
        self.options = options or CheckOptions()
        self._probe: ProbeHandle | ForkedProbe | None = None
        self._probe_outcome: ProbeOutcome | None = None
        # The first probe's outcome when torch's import failed on a device backend it
        # auto-loads (the probe then ran again without auto-loading): see probe_result.
        self.autoload_failure: ProbeOutcome | None = None
        self._package_key = ""  # package mode: the key its outcome is kept under
        self._module_tried = False  # package mode: the follow-up import of the module ran
        self._pyinit: dict[tuple[str, str], tuple[bool, list[str]]] = {}
        self._load_problems: dict[str, str | None] = {}

    @cached_property
    def file(self) -> FileData:
        """The target's bytes (memory-mapped). Raises InputError when it cannot be read."""
        from opdoctor.facts.inputfile import open_input
        return open_input(self.path)

    @cached_property
    def host(self) -> HostInfo:
        """The machine the library will be loaded on (this one, unless given)."""
        return detect_host()

    @cached_property
    def structure(self) -> Structure:
        """Header, layout and pyelftools image, with every structural problem recorded."""
        from opdoctor.facts.elf.image import ElfFormatError, ElfImage, header_extents, parse_header
        from opdoctor.facts.elf.validate import table_damage
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
        # Only the section header table itself: a section whose offset points past the end
        # while the table is whole is a damaged header, not a lost tail (the fuzz campaign).
        st.tail_only = [e.what for e in st.beyond_eof] == ["section header table"]
        if st.problems or (st.beyond_eof and not st.tail_only):
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
    def broken_dependencies(self) -> list[tuple[str, str, str, str]]:
        """(file, the DT_NEEDED name, the library that needs it, what is wrong) for each
        dependency whose file the loader meets and cannot use: cut short (its headers describe
        bytes past the end: dlopen dies with SIGBUS or "file too short", and its version
        definitions are unreadable), or skipped as another machine's or class's ELF file, or
        no ELF file at all, where its RPATH/RUNPATH points — then the loader goes on and
        says "cannot open shared object file: No such file or directory". A wheel's vendored
        libgomp cut short or replaced by the aarch64 copy (survey 21's W4, W5) read as five
        missing symbol versions, or as a path to patchelf."""
        if self.structure.image is None:
            return []
        out: list[tuple[str, str, str, str]] = []
        tree = self.process.tree
        from opdoctor.facts.mounts import noexec_mount

        for lib in tree.order[1:]:
            cut = None if lib.preloaded_by else cut_short(lib.path)
            if cut is not None and cut[1]:
                out.append((os.path.normpath(lib.path), lib.name, lib.requested_by,
                            f"truncated: its headers need at least {cut[0]} bytes, it has "
                            f"{cut[1]}"))
            point = None if lib.preloaded_by else noexec_mount(lib.path)
            if point is not None:
                out.append((os.path.normpath(lib.path), lib.name, lib.requested_by,
                            f"on a file system mounted noexec ({point})"))
        skipped = ("wrong machine", "wrong ELF class", "not an ELF file")
        for miss in tree.missing:
            for att in miss.attempts:
                if att.outcome.startswith(skipped) and \
                        att.rule.split(" ")[0] in ("rpath", "runpath") and \
                        all(os.path.normpath(att.path) != o[0] for o in out):
                    out.append((os.path.normpath(att.path), miss.name, miss.requested_by,
                                f"skipped by the loader: {att.outcome}"))
        return out

    @cached_property
    def changed_siblings(self) -> list[tuple[str, str]]:
        """(library, its distribution's ``.dist-info``) for each library the target NEEDs
        directly that the target's own distribution installed and whose bytes differ from its
        RECORD since (overwritten, rebuilt in place): what the target was linked against is
        no longer there. fbgemm_gpu_config.so overwritten by a sibling left its own symbols
        undefined in fbgemm_gpu_tbe_inference.so, read as "never linked in" (survey 21's W8)."""
        from opdoctor.facts.requires import owning_dist, record_changed
        mine = self.installed_by
        if mine is None or self.structure.image is None:
            return []
        out: list[tuple[str, str]] = []
        for _name, dep in self.process.tree.edges.get(self.process.tree.root.path, []):
            path = getattr(dep, "path", "")
            owner = owning_dist(path) if path else None
            if owner is None or owner[0] != mine[0]:
                continue
            if record_changed(owner[0], owner[2], path):
                out.append((path, owner[0]))
        return out

    @cached_property
    def blocker(self) -> str:
        """Why checks that need a loadable ELF shared object cannot run ("" when they can)."""
        st = self.structure
        if st.empty:
            return "the file is empty"
        if st.header is None:
            return "the file is not ELF"
        if st.beyond_eof and not st.tail_only:
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
        if self.foreign_libc:
            return "the file is built for musl libc, this host's C library is glibc"
        return ""

    @cached_property
    def unpacked_on_noexec(self) -> str:
        """The noexec mount opdoctor's unpacked copy of a wheel's library is on ("" when it is
        not): where no place that allows execution was found to unpack it
        (``mounts.exec_tempdir``), nothing of the copy can be loaded — a fact of this machine,
        not of the wheel, so the probe is not run (OD419 says why)."""
        if not self.options.wheel or not os.path.isfile(self.path):
            return ""
        from opdoctor.facts.mounts import noexec_mount

        return noexec_mount(self.path) or ""

    @cached_property
    def foreign_libc(self) -> str:
        """The musl C library the file links (``libc.musl-x86_64.so.1``: a musllinux wheel,
        an Alpine build) when this host runs glibc — no search path makes it load here; ""
        otherwise."""
        st = self.structure
        if st.image is None or self.host.glibc is None:
            return ""
        needed = [str(n) for n in st.image.tags.get("DT_NEEDED", [])]
        return next((n for n in needed if n.startswith(("libc.musl-", "ld-musl-"))), "")

    @cached_property
    def interpreter(self) -> Interpreter | None:
        """The target interpreter and its torch install (None when it cannot be run)."""
        from opdoctor.facts.interp import InterpreterError, inspect_interpreter
        try:
            return inspect_interpreter(self.options.python,
                                       env=self.environ if self.options.env is not None
                                       else None)
        except InterpreterError:
            return None

    @cached_property
    def environ(self) -> dict[str, str]:
        """The environment the library will be loaded with."""
        if self.options.env is None:
            return dict(os.environ)
        return dict(self.options.env)

    @cached_property
    def resolver(self) -> Resolver:
        """The ld.so emulation for this file's class/machine; images are shared."""
        from opdoctor.facts.loader.search import Environment, Resolver
        return Resolver(self.image.header, Environment.from_env(self.environ),
                        {os.path.realpath(self.path): self.image})

    @cached_property
    def torch_context(self) -> bool:
        """True when the library will be loaded into a process that imported torch."""
        from opdoctor.facts.loader.process import needs_torch
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
        from opdoctor.facts.frameworks import TENSORFLOW, TORCH
        from opdoctor.facts.loader.process import emulate, needs_tensorflow
        interp = self.interpreter
        with_torch, with_tf = self.torch_context, needs_tensorflow(self.image)
        via = tuple(v.path for v in self.vendored_loaders[:1])
        first = self._loaded_first_by_package()
        bridge = self._onnxruntime_bridge()
        shared = self._global_first_loads(first)
        proc = emulate(self.path, self.resolver, interp, with_torch, with_tf, via, first,
                       bridge, shared)
        missing = [m.name for m in proc.tree.missing]
        # A dependency of the library needs the framework's own library (tensorflow-text's pybind
        # modules need libpybinds_library_common.so, which needs libtensorflow_framework.so.2):
        # nothing but the framework's import can provide it, so the package imports the
        # framework first — load it into that process, as the real one is.
        more_tf = not with_tf and interp is not None and bool(
            interp.tensorflow_framework) and TENSORFLOW.linked_by(missing)
        more_torch = not with_torch and interp is not None and interp.torch is not None and \
            TORCH.linked_by(missing)
        if more_tf or more_torch:
            proc = emulate(self.path, self.resolver, interp, with_torch or more_torch,
                           with_tf or more_tf, via, first, bridge, shared)
        return proc

    @cached_property
    def torch_libraries_import_torch_brings(self) -> list[str]:
        """The torch libraries the target NEEDs that its load finds only because `import
        torch` put them in the process (its own search path does not: no RUNPATH to
        torch/lib, as torch.utils.cpp_extension builds it); [] for a library that needs no
        torch, or finds them itself. One more emulated load, without torch."""
        from opdoctor.facts.frameworks import TORCH
        from opdoctor.facts.loader.process import emulate, needs_tensorflow

        if not self.torch_context or self.structure.image is None:
            return []
        first = self._loaded_first_by_package()
        alone = emulate(self.path, self.resolver, self.interpreter, False,
                        needs_tensorflow(self.image), tuple(v.path for v in
                                                            self.vendored_loaders[:1]),
                        first, self._onnxruntime_bridge(), self._global_first_loads(first))
        return [m.name for m in alone.tree.missing if TORCH.linked_by([m.name])]

    def _onnxruntime_bridge(self) -> tuple[str, ...]:
        """``libonnxruntime_providers_shared.so`` beside an ONNX Runtime execution provider
        (it exports ``GetProvider`` or ``CreateEpFactories``): ONNX Runtime loads that bridge
        before any provider, and the provider needs its ``Provider_GetHost`` (onnxruntime-
        openvino 1.24's OpenVINO provider was "1 undefined symbol no loaded library defines",
        exit 1, on a session that runs; survey 18)."""
        if self.structure.image is None or not {"GetProvider", "CreateEpFactories"} & set(
                self.onnxruntime_entry_points):
            return ()
        bridge = os.path.join(os.path.dirname(self.path), "libonnxruntime_providers_shared.so")
        if os.path.basename(self.path) == os.path.basename(bridge) or \
                not os.path.isfile(bridge):
            return ()
        return (bridge,)

    def _global_first_loads(self, first: tuple[str, ...]) -> tuple[str, ...]:
        """The libraries of ``first`` the package's import loads with RTLD_GLOBAL."""
        chain = self.chain if first else None
        if chain is None:
            return ()
        return tuple(f for link in chain.links if link.kind in ("load_library", "cdll")
                     and not link.fallback and _global_load(link.text)
                     for f in link.resolved if f in first)

    def _loaded_first_by_package(self) -> tuple[str, ...]:
        """Libraries the package's import loads by path (its chain's load_library/CDLL calls,
        not a fallback) whose file name the target NEEDs: in the process before the target's
        own import, so glibc finds them there by SONAME (torchtext's _torchtext.so NEEDs
        libtorchtext.so, which torchtext/_extension.py loads from lib/ first)."""
        if not self.options.package or self.structure.image is None:
            return ()
        chain = self.chain
        if chain is None:
            return ()
        needed = {str(n) for n in self.image.tags.get("DT_NEEDED", [])}
        me = os.path.realpath(self.path)
        out: list[str] = []
        for link in chain.links:
            if link.kind not in ("load_library", "cdll") or link.fallback:
                continue
            for f in link.resolved:
                # by SONAME when the target NEEDs it; RTLD_GLOBAL: its symbols bind the
                # target's whether it NEEDs it or not (usearch preloads numkong's extension);
                # glibc matches the loaded file's SONAME, not its file name (pyexiv2 loads
                # lib/libexiv2.so, SONAME libexiv2.so.28, which exiv2api.so NEEDs)
                wanted = os.path.basename(f) in needed or _global_load(link.text) or \
                    soname_of(f) in needed
                if wanted and os.path.realpath(f) != me and os.path.isfile(f) and f not in out:
                    out.append(f)
        # Libraries of another installed package the package imports first, where the target's
        # RUNPATH names that package's directory (paddle2onnx: …/site-packages/paddle/base,
        # NEEDED libpaddle.so; `import paddle` loads paddle/base/libpaddle.so from this install).
        for _package, rest in self.imported_package_dirs:
            for site in chain.sys_path:
                for name in sorted(needed):
                    f = os.path.join(site, rest, name)
                    if os.path.isfile(f) and f not in out:
                        out.append(f)
        return tuple(out)

    @cached_property
    def imported_package_dirs(self) -> list[tuple[str, str]]:
        """(package, its directory below site-packages) for each RUNPATH/RPATH entry of the
        target that names a site-packages directory of a package its own package's
        ``__init__.py`` imports at module level (paddle2onnx's RUNPATH
        /tmp/build-env-…/site-packages/paddle/base, and `import paddle`): the build linked
        against that package's library, which its import puts in the process."""
        chain = self.chain if self.options.package and self.structure.image is not None \
            else None
        if chain is None or not chain.imports_packages:
            return []
        tags = self.image.tags
        out: list[tuple[str, str]] = []
        for v in (*tags.get("DT_RUNPATH", []), *tags.get("DT_RPATH", [])):
            for entry in str(v).split(":"):
                _, sep, rest = entry.replace("dist-packages/", "site-packages/").partition(
                    "site-packages/")
                top = rest.split("/")[0]
                if sep and top in chain.imports_packages and (top, rest) not in out:
                    out.append((top, rest))
        return out

    @cached_property
    def dependents(self) -> list[str]:
        """Libraries of the same install whose DT_NEEDED names this one (a support library
        they load, not an op library of its own); at most 3."""
        from opdoctor.facts.vendored import dependents
        if os.path.isdir(self.path) or self.structure.image is None:
            return []
        found = dependents(self.resolver, self.path)
        owner = self.installed_by
        if found or owner is None or \
                not os.path.basename(os.path.dirname(self.path)).endswith(".libs"):
            return found
        # auditwheel's <dist>.libs/ (h5py.libs/libhdf5-9e18f0c6.so…): the extensions that NEED
        # it are in the distribution's own top-level directories beside it.
        from opdoctor.facts.requires import record_directories
        info, site, _rel = owner
        roots = tuple(os.path.join(site, t) for t in sorted(record_directories(info))
                      if os.path.isdir(os.path.join(site, t)))
        return dependents(self.resolver, self.path, roots=roots) if roots else []

    @cached_property
    def installed_without_framework(self) -> str:
        """"name version" of the distribution that installed the target when it requires and
        imports no framework (llvmlite, soundfile: their libraries serve their own code); ""
        otherwise, or for a file no distribution records."""
        from opdoctor.facts.pkgdir import distribution
        from opdoctor.facts.requires import requires_no_framework
        owner = self.installed_by
        if owner is None or not requires_no_framework(owner[0], owner[1]):
            return ""
        name, version = distribution(owner[0])
        return f"{name} {version}".strip()

    @cached_property
    def missing_imports(self) -> list[tuple[str, int, str]]:
        """(file, line, module) of the unconditional imports of other distributions that the
        package's import runs and nothing on sys.path provides (package mode; [] else)."""
        from opdoctor.facts.pychain import missing_imports
        from opdoctor.facts.requires import uninstalled_requirements
        chain, interp = self.chain, self.interpreter
        if chain is None:
            return []
        # below the link walk's depth only when a requirement is missing (kornia_rs)
        deep = bool(chain.dist) and bool(uninstalled_requirements(chain.dist, chain.sys_path))
        return missing_imports(chain, self.options.cwd or os.getcwd(),
                               interp.ext_suffix if interp else ".so", deep)

    @cached_property
    def maybe_missing_imports(self) -> list[tuple[str, int, str, str]]:
        """(file, line, module, how) of the imports the package's import may run (under a
        condition, in a function it calls) that nothing on sys.path provides ([] outside
        package mode)."""
        from opdoctor.facts.pychain import maybe_missing_imports
        chain, interp = self.chain, self.interpreter
        if chain is None:
            return []
        return maybe_missing_imports(chain, self.options.cwd or os.getcwd(),
                                     interp.ext_suffix if interp else ".so")

    @cached_property
    def numpy_build(self) -> NumpyBuild | None:
        """The NumPy C API the library was compiled against (None: it holds no NumPy
        ``_import_array()``)."""
        from opdoctor.facts.numpyabi import numpy_build
        if os.path.isdir(self.path) or self.structure.image is None:
            return None
        return numpy_build(self.image)

    @cached_property
    def installed_numpy(self) -> tuple[str, str] | None:
        """(version, directory) of the NumPy the target interpreter imports first; None
        without one."""
        from opdoctor.facts.numpyabi import installed_numpy
        interp = self.interpreter
        if interp is None:
            return None
        return installed_numpy(interp.sys_path, self.options.cwd or os.getcwd())

    @cached_property
    def installed_by(self) -> tuple[str, str, str] | None:
        """(dist-info, site directory, path relative to it) of the distribution whose RECORD
        lists the target; None for a file no installed distribution records."""
        from opdoctor.facts.requires import owning_dist
        if os.path.isdir(self.path):
            return None
        return owning_dist(self.path)

    @cached_property
    def name_callers(self) -> list[tuple[str, str]]:
        """(library, function) pairs: libraries of this one's package that call one of its C
        functions by name (``dlsym``); at most 3."""
        from opdoctor.facts.vendored import callers_by_name
        if os.path.isdir(self.path) or self.structure.image is None:
            return []
        return callers_by_name(self.resolver, self.path,
                               self.symbol_tables.of_image(self.image).c_functions())

    @cached_property
    def vendored_loaders(self) -> list[RpathLoader]:
        """The libraries of the same install that load this one (a wheel's vendored library
        whose dependencies are found only through their DT_RPATH); empty for any other."""
        from opdoctor.facts.vendored import vendored_loaders
        if os.path.isdir(self.path) or self.structure.image is None:
            return []  # a package directory (package mode) is no library to load
        return vendored_loaders(self.resolver, self.path)

    @cached_property
    def symbol_tables(self) -> SymbolTables:
        """Hash-table symbol access per library, shared by every check."""
        from opdoctor.facts.loader.symbols import SymbolTables
        return SymbolTables()

    @cached_property
    def binding(self) -> Binding:
        """Version needs and undefined symbols of the target, bound in the emulated process."""
        from opdoctor.facts.loader.symbols import bind
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
        from opdoctor.facts.pychain import analyse
        interp = self.interpreter
        sys_path = list(interp.sys_path) if interp else []
        suffix = interp.ext_suffix if interp else ".so"
        return analyse(self.options.package, sys_path, suffix,
                       self.options.cwd or os.getcwd(), self.environ)

    def _probe_request(self) -> ProbeRequest:
        """The probe's request without its late fields (which library, what to preload, the
        swallowed imports to retry, the TensorFlow ops to watch): nothing in it depends on
        the target library in package mode, so the probe can start before one is chosen."""
        from opdoctor.facts.probe.runner import ProbeRequest
        interp = self.interpreter
        python = interp.invoke if interp else (self.options.python or sys.executable)
        uses_torch = bool(interp and interp.torch) and (
            bool(self.options.package) or self.torch_context)
        return ProbeRequest(
            path="", python=python, torch=uses_torch,
            package=self.options.package, cwd=self.options.cwd or os.getcwd(),
            ops=tuple(f"{e.namespace}::{e.op}" for e in self.expected_ops),
            smoke=self.options.smoke, timeout=self.options.timeout,
            memory_mb=self.options.probe_memory_mb, env=self.environ,
            tensorflow=self.tf_probe, late=True,
            opcheck=self.options.opcheck and uses_torch,
            aot_function="" if self.options.package else self.options.aot_function)

    def prestart_probe(self) -> None:
        """Package mode: start the probe before the import chain picks the target library
        (its child imports the framework meanwhile); the target's :meth:`start_probe` adopts
        it. :func:`opdoctor.targets.expand` kills one no target adopted when it closes."""
        if self.options.package and self.options.probe:
            # A static run never needs these.
            from opdoctor.facts.probe.runner import prestart
            from opdoctor.facts.probe.zygote import warm, worth_a_zygote
            req = self._probe_request()
            # A TensorFlow probe is forked in the command's scope anyway (and a package's
            # op libraries are often several: tensorflow-io's six): its zygote imports
            # TensorFlow now, instead of a plain child for the first and a zygote later.
            if req.tensorflow or worth_a_zygote(req):
                warm(req)  # its probe will be forked: the zygote imports the framework now
            else:
                prestart(req)

    def start_probe(self) -> None:
        """Start the load probe now (or adopt the one :meth:`prestart_probe` started), so it
        runs while the static checks run."""
        from opdoctor.facts.probe.runner import adopt, any_finished, start_probe
        if self._probe is not None or self._probe_outcome is not None:
            return
        if not self.options.package and self.structure.image is None:
            return
        req = self._probe_request()
        # Only when an outcome is kept (a walk's later libraries): the late fields are
        # otherwise computed while the child imports the framework, not before it starts.
        late = None
        if req.package and any_finished():
            late = self._late_fields(req)
            if self._reuse_package_probe(req, *late):
                return
        from opdoctor.facts.probe.zygote import note_plain_start, worth_a_zygote
        prestarted = adopt(req)
        if prestarted is None and worth_a_zygote(req) and self._fork_probe(req, late):
            return
        if prestarted is None:
            note_plain_start(req)
        self._probe = probe = prestarted or start_probe(req)
        # What the child needs only after its framework import is computed while it imports:
        # the import-chain walk alone takes seconds on a large package (tensorflow-io).
        path = os.path.abspath(self.path)
        preload: tuple[str, ...] = ()
        hidden: list[dict[str, Any]] = []
        tf_ops: tuple[str, ...] = ()
        first: tuple[str, ...] = ()
        try:
            preload, hidden, tf_ops, first = late or self._late_fields(req)
        finally:
            probe.send_late(path, preload, hidden, tf_ops, first)
            if req.package:  # what the outcome is kept under for the package's other libraries
                from opdoctor.facts.probe.runner import package_key as key_of
                self._package_key = key_of(probe.req)

    def _fork_probe(self, req: ProbeRequest, late: tuple[Any, ...] | None) -> bool:
        """Inside a reuse scope (a walk, a scan), a TensorFlow probe, and a torch probe from
        the scope's second on, is forked from a zygote that imported the framework once
        (tensorflow-text's 27 libraries paid 27 imports of ~3 s; see ``worth_a_zygote``):
        its request is completed first (the late fields computed now, not during a child's
        import). False when it cannot be forked: the probe starts as a plain child."""
        from opdoctor.facts.probe.zygote import forkable, module_probe
        preload, hidden, tf_ops, first = late or self._late_fields(req)
        whole = dataclasses.replace(req, path=os.path.abspath(self.path), preload=preload,
                                    hidden=hidden, tf_ops=tf_ops, first=first, late=False)
        if not forkable(whole):
            return False
        self._probe = module_probe(whole)
        if req.package:
            from opdoctor.facts.probe.runner import package_key
            self._package_key = package_key(whole)
        return True

    def _late_fields(self, req: ProbeRequest) -> tuple[tuple[str, ...], list[dict[str, Any]],
                                                       tuple[str, ...], tuple[str, ...]]:
        """What to preload, the swallowed imports to retry, the TensorFlow ops to watch, the
        modules the package's own guard demands be imported before it."""
        preload = tuple(os.path.abspath(p) for p in self.options.preload)
        preload += tuple(v.path for v in self.vendored_loaders[:1])
        chain = self.chain if self.options.package else None
        hidden = [{"kind": link.kind, "target": link.target, "paths": link.resolved,
                   "where": f"{os.path.basename(link.file)}:{link.line} {link.swallowed}",
                   **({"after": link.after} if link.after else {})}
                  for link in (chain.links if chain else []) if link.swallowed]
        tf_ops = self._tf_watch() if req.tensorflow else ()
        first = tuple(chain.imported_first) if chain else ()
        return preload, hidden, tf_ops, first

    def _reuse_package_probe(self, req: ProbeRequest, preload: tuple[str, ...],
                             hidden: list[dict[str, Any]], tf_ops: tuple[str, ...],
                             first: tuple[str, ...]) -> bool:
        """Package mode: take the outcome of the same package import, run earlier in this
        process for another of the package's libraries (a directory walk), instead of
        importing the package again. True when it did."""
        from opdoctor.facts.probe.runner import finished, package_key
        key = package_key(dataclasses.replace(req, preload=preload, hidden=hidden,
                                              tf_ops=tf_ops, first=first))
        hit = finished(key)
        if hit is None:
            return False
        self._probe_outcome, self.autoload_failure = hit
        tfp = self._probe_outcome.tensorflow
        if tfp is not None and tfp.ops_by_library:
            # the ops TensorFlow lists for *this* library, not for the one the import ran for
            self._probe_outcome = dataclasses.replace(self._probe_outcome,
                                                      tensorflow=tfp.for_library(self.path))
        return True

    def swallowed(self, res: ProbeOutcome) -> tuple[Swallowed, ...]:
        """Package mode: the failures the package's import hid — those the probe's retry of a
        swallowed import surfaced, and, when the import worked without loading this library,
        a failed load of it the import caught (seen as it happened: ``caught_load_failures``),
        else one it only printed (``printed_load_failures``)."""
        from opdoctor.facts.probe.outcome import ProbeState

        out = res.swallowed
        if self.options.package and not self.is_package_dir and res.state is \
                ProbeState.LOADED and os.path.isfile(self.path) and not res.maps(self.path):
            seen = {h.target for h in out}
            caught = res.caught_load_failures(self.path)
            out += tuple(h for h in caught or res.printed_load_failures(self.path)
                         if h.target not in seen)
        return out

    def probe_result(self) -> ProbeOutcome | None:
        """The probe's outcome (waits for it); None when it was not started."""
        early = None
        if self._probe_outcome is None and self._probe is not None:
            if not self._module_tried:
                # The module's own import (see _through_its_module) starts beside the package's
                # when the static view already says it will be needed: the two run on two
                # cores instead of one after the other (torchrl's _torchrl: +3.9 s → ~0).
                early = self._start_module_probe()
            self._probe_outcome = self._probe.wait()
            self._past_a_failed_backend()
            if self._package_key:
                from opdoctor.facts.probe.runner import remember
                remember(self._package_key, self._probe_outcome, self.autoload_failure)
        if not self._module_tried:
            self._module_tried = True
            self._through_its_module(early)
        return self._probe_outcome

    @property
    def probed_import(self) -> str:
        """What the probe's import was in package mode: the package, or the extension module
        itself when :meth:`_through_its_module` imported it."""
        probe = self._probe
        name = (probe.req.package if probe is not None else None) or self.options.package or ""
        first = probe.req.first if probe is not None else ()
        return ", ".join([*first, name]) if name and first else name

    def _module_to_import(self, predicted: bool = True) -> str:
        """The dotted module of a Python extension target inside the package that no line of
        the package's import chain loads ("": nothing for :meth:`_through_its_module` to
        import); ``predicted``: only when the static view predicts its load fails (the early
        start, beside the package's import)."""
        chain = self.chain
        if chain is None or not chain.package_dir or self.is_package_dir or \
                self.structure.image is None or not self.registration.pyinit:
            return ""
        if predicted and not (self.process.tree.missing or self.binding.unresolved):
            return ""  # the static view predicts nothing a load could disprove
        real = os.path.realpath(self.path)
        from opdoctor.facts.commandcache import realpath
        if any(real == realpath(r) for link in chain.links for r in link.resolved):
            return ""  # the package's import does reach it (and failed, or swallowed the error)
        parent = os.path.dirname(os.path.realpath(chain.package_dir))
        where = os.path.relpath(os.path.dirname(os.path.realpath(self.path)), parent)
        if where.startswith(os.pardir) or not all(p.isidentifier() for p in where.split(os.sep)):
            return ""
        # Python imports a file by its name and calls PyInit_<that name>: polars' runtime
        # library exports PyInit__expr_nodes, PyInit__ir_nodes and PyInit__polars_runtime,
        # and `import …._expr_nodes` is no module there (survey 19's false OD511)
        stem = extension_name(self.path)
        names = [p[len("PyInit_"):] for p in self.registration.pyinit]
        return ".".join([*where.split(os.sep), stem if stem in names else names[0]])

    def _start_module_probe(self) -> ProbeHandle | ForkedProbe | None:
        """Start the module's own import now when :meth:`_module_to_import` names one (None
        otherwise, or when reading the static facts fails here: it is then started later)."""
        try:
            module = self._module_to_import()
        except Exception:  # a fact that fails here fails again in its own check, reported there
            return None
        if not module:
            return None
        return self._module_probe(module)

    def _module_probe(self, module: str) -> ProbeHandle | ForkedProbe:
        """A probe that imports ``module`` (the target's own extension module) instead of the
        package, with the package probe's interpreter, environment and limits: forked from a
        child that imported the framework once for all of a command's module probes
        (:mod:`opdoctor.facts.probe.zygote`; vllm's twelve libraries)."""
        from opdoctor.facts.probe.zygote import module_probe
        req = self._probe.req if self._probe is not None else self._probe_request()
        return module_probe(dataclasses.replace(
            req, package=module, path=os.path.abspath(self.path), hidden=[], late=False))

    def _through_its_module(self, early: ProbeHandle | ForkedProbe | None = None) -> None:
        """Package mode, a Python extension module the package import did not load: import
        the module itself (``import mpi4py.MPI``), the way the file is really loaded, and keep
        that outcome. A package can make a module's dependencies present before it is
        imported: mpi4py's finder loads libmpi.so.12 from the MPI implementation's own
        directory, and glibc then reuses it by name, so a "libmpi.so.12 not found" from the
        file alone would be a false alarm. And a module's own init can fail where the static
        view sees nothing: cryptography's _rust imports _cffi_backend, scipy 1.11's _fblas
        needs NumPy 1's C API (survey 10: "No problem found" while the import fails). One
        more probe, only for such a file; ``early``: that probe, started beside the
        package's when the static view already predicted the failure."""
        from opdoctor.facts.probe.outcome import ProbeState
        res = self._probe_outcome
        module = "" if res is None or res.state is not ProbeState.LOADED or \
            res.maps(self.path) else self._module_to_import(predicted=False)
        if not module:
            if early is not None:
                early.abandon()  # the package's import loaded it (or failed): not needed
            return
        predicted = bool(self.process.tree.missing or self.binding.unresolved)
        probe = early if early is not None else self._module_probe(module)
        outcome = probe.wait()
        if not predicted and outcome.state is ProbeState.LOADED:
            # Nothing predicted, and the module imports: the package's own outcome stands
            # (a package that never loads its op library is OD505 — its import is the job's).
            return
        self._probe, self._probe_outcome = probe, outcome

    def _past_a_failed_backend(self) -> None:
        """When ``import torch`` itself failed because a device backend it auto-loads failed
        (torch_npu without Ascend's libraries), keep that outcome as :attr:`autoload_failure`
        and probe again with auto-loading off: the library is then loaded as it would be
        once that backend is fixed (or is the backend itself, whose own load error then shows
        as any load error does). One more probe, only on this failure."""
        from opdoctor.facts.backends import AUTOLOAD_VAR, failed_backend
        from opdoctor.facts.probe.outcome import ProbeState
        from opdoctor.facts.probe.runner import start_probe
        first, probe = self._probe_outcome, self._probe
        if first is None or probe is None or first.state is not \
                ProbeState.FRAMEWORK_IMPORT_FAILED or first.framework_error is None or \
                not failed_backend(first.framework_error.message) or \
                probe.req.env.get(AUTOLOAD_VAR) == "0":
            return
        self.autoload_failure = first
        req = dataclasses.replace(probe.req, env={**probe.req.env, AUTOLOAD_VAR: "0"},
                                  late=False)
        self._probe = start_probe(req)
        self._probe_outcome = self._probe.wait()

    # ------------------------------------------------------------ per-family facts
    @cached_property
    def torch_variant(self) -> TorchVariant | None:
        """The installed torch's build (CPU, CUDA, ROCm) in the target interpreter."""
        from opdoctor.facts.variant import torch_variant
        interp = self.interpreter
        if interp is None or interp.torch is None:
            return None
        t = interp.torch
        return torch_variant(t.version, t.cuda, t.lib_dir)

    @cached_property
    def extension_variant(self) -> ExtensionVariant:
        """The torch build the target (or, in package mode, the package's extensions) was
        made for: from DT_NEEDED names and the package's version / dist-info."""
        from opdoctor.facts.budget import checkpoint
        from opdoctor.facts.variant import (
            ExtensionVariant,
            build_record,
            package_metadata,
            variant_of_needed,
        )
        libs: list[tuple[str, list[str]]] = []
        if not self.is_package_dir and self.structure.image is not None:
            libs.append((self.path, [str(n) for n in self.image.tags.get("DT_NEEDED", [])]))
        chain = self.chain
        if chain is not None and (self.is_package_dir or not libs):
            from opdoctor.facts.variant import gpu_twins
            twins = gpu_twins(chain.extensions_on_disk)
            libs += [(p, self.needed_of(p)) for p in chain.extensions_on_disk[:64]
                     if p not in twins]
        variant, major, evidence = "", None, []
        # A missing CUDA runtime says "a CUDA build of torch brought it" only for a library
        # that uses torch: bitsandbytes' libbitsandbytes_cuda130.so links none (bitsandbytes
        # loads it with ctypes, or its CPU sibling): without CUDA its runtime is just missing.
        missing = frozenset(m.name for m in self.process.tree.missing) \
            if not self.is_package_dir and self.structure.image is not None and not self.blocker \
            and self._uses_torch else frozenset()
        for path, needed in libs:
            checkpoint(f"reading the build variant of {path}")
            v, m, shown = variant_of_needed(needed, missing)
            if shown:
                evidence.append(f"{os.path.basename(path)} needs {', '.join(shown[:4])}")
            variant = variant or v
            major = major or m
        pkg_dir = chain.package_dir if chain is not None else _package_dir_of(self.path)
        version, requires, dist = package_metadata(pkg_dir) if pkg_dir else ("", "", "")
        return ExtensionVariant(variant, major, tuple(evidence[:4]), version, requires, dist,
                                build_record(pkg_dir) if pkg_dir else "")

    @property
    def _uses_torch(self) -> bool:
        from opdoctor.facts.loader.process import needs_torch
        interp = self.interpreter
        return needs_torch(self.image, interp.torch.lib_dir if interp and interp.torch else None)

    def needed_of(self, path: str) -> list[str]:
        """DT_NEEDED names of a file (empty when unreadable or not ELF); the target's from its
        parsed image."""
        if self._is_target(path):
            return [str(n) for n in self.image.tags.get("DT_NEEDED", [])]
        return needed_names(path)

    def _is_target(self, path: str) -> bool:
        """Whether ``path`` is the target library, whose image is parsed already."""
        return not self.is_package_dir and self.structure.image is not None and \
            commandcache.realpath(path) == commandcache.realpath(self.path)

    @cached_property
    def abi_mismatch(self) -> AbiMismatch | None:
        """The extension's C++11 ABI vs the installed torch's, when both are known and differ
        (computed once: the ABI check and the symbol check both read it)."""
        from opdoctor.facts.abi import abi_mismatch
        interp = self.interpreter
        if interp is None or interp.torch is None:
            return None
        return abi_mismatch(self.symbol_tables.of_image(self.image), self.process,
                            self.symbol_tables)

    @cached_property
    def expected_ops(self) -> tuple[ExpectedOp, ...]:
        """``--expect-op`` parsed (the CLI has validated each with the same parser)."""
        return tuple(parse_expect_op(text) for text in self.options.expect_ops)

    @cached_property
    def registration(self) -> Inventory:
        """What the library would register: registrars, schemas, PyInit_, initialisers."""
        from opdoctor.facts.registration import read_inventory
        table = self.symbol_tables.of_image(self.image)
        # Without torch in the process, read_inventory keeps no schema-like text.
        return read_inventory(self.image, table.names_with_prefix("PyInit_", limit=8),
                              self.torch_context)

    @cached_property
    def schema_verdicts(self) -> tuple[dict[str, str], str]:
        """({schema: "" or torch's parse error}, label) for the inventory's schemas.

        A schema whose return part was inlined into code is parsed with a neutral ``-> ()``.
        The label names the parser ("" when torch could not be asked).
        """
        from opdoctor.facts.opschema import parse_with_torch
        from opdoctor.facts.registration import is_template
        from opdoctor.facts.schemacert import certified, torch_in_scope
        # A format template (open3d's "index_dtype=%d") is filled in before m.def: only the
        # formatted text would reach torch's parser, so the template is not asked about.
        full = {s.text: (s.text if not s.partial else s.text + " -> ()")
                for s in self.registration.schemas if not is_template(s.text)}
        interp = self.interpreter
        if interp is None or interp.torch is None or not full:
            return {}, ""
        label = f"torch._C.parse_schema (torch {interp.torch.version})"
        # Schemas in the subset torch certainly parses need no child that imports torch (the
        # first run's 1-2 s); only the others are asked (schemacert.py says why it is sound).
        todo = sorted({f for f in full.values()
                       if not (torch_in_scope(interp.torch.version) and certified(f))})
        if not todo:
            return ({orig: "" for orig in full},
                    f"opdoctor's subset of torch {interp.torch.version}'s schema grammar")
        parsed, problem = parse_with_torch(interp, todo)
        if problem:
            return {}, ""
        return ({orig: parsed.get(f, "") for orig, f in full.items()}, label)

    @cached_property
    def fatbin(self) -> Fatbin | None:
        """The target's CUDA fat binary (None when it has none)."""
        from opdoctor.facts.cuda import read_fatbin
        return read_fatbin(self.image)

    @cached_property
    def target_gpus(self) -> tuple[list[int], str]:
        """(compute capabilities to judge the fatbin against, where they came from).

        ``--gpu`` wins; otherwise ``nvidia-smi`` on this machine, asked once per run.
        """
        from opdoctor.facts.cuda import parse_gpu
        if self.options.gpus:
            return sorted({parse_gpu(g) for g in self.options.gpus}), "--gpu"
        smi = _which("nvidia-smi")
        if not smi:
            return [], "no --gpu given and no nvidia-smi on this machine"
        import subprocess
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=15).stdout
        except (OSError, subprocess.TimeoutExpired):
            return [], "nvidia-smi did not answer"
        gpus = sorted({parse_gpu(line) for line in out.split()
                       if re.fullmatch(r"\d+\.\d", line)})
        return gpus, "nvidia-smi" if gpus else "nvidia-smi found no GPU"

    @cached_property
    def site_dirs(self) -> list[str]:
        """The target interpreter's site-packages directories."""
        interp = self.interpreter
        return interp.site_dirs if interp else []

    @cached_property
    def namespace_definers(self) -> dict[str, list[tuple[str, str]]]:
        """Other installed libraries defining one of this library's TORCH_LIBRARY namespaces:
        namespace → [(library path, site-packages dir)] (byte search, nothing loaded)."""
        from opdoctor.facts.budget import checkpoint
        inv = self.registration
        names = [ns.name for ns in inv.namespaces.values() if ns.defines]
        found: dict[str, list[tuple[str, str]]] = {}
        needles: dict[str, tuple[bytes, ...]] = {
            ns: (f"TORCH_LIBRARY_init_{ns}RN5torch".encode(),
                 f"TORCH_LIBRARY_static_init_{ns}\0".encode()) for ns in names}
        # Fragments (torchvision's STABLE_TORCH_LIBRARY_FRAGMENT) and stripped libraries
        # (fbgemm's) define their ops without a registrar to search for: another library
        # holding the same complete schema strings defines those ops too — a second copy of
        # the package loaded beside it aborts with "registered … multiple times" (survey 23's
        # X2, X3; the option found nothing). Keyed by namespace when the library has one.
        only = [ns.name for ns in inv.namespaces.values()]
        for sch in [x for x in inv.schemas if not x.partial and len(x.text) >= 24][:8]:
            key = sch.name.split("::", 1)[0] if "::" in sch.name else \
                (only[0] if len(only) == 1 else SAME_SCHEMAS)
            if key not in names:
                needles[key] = (*needles.get(key, ()), b"\0" + sch.text.encode() + b"\0")
        if not needles:
            return found
        me = os.path.realpath(self.path)
        seen: set[str] = set()
        for site in self.site_dirs:
            for path in self.shared_libraries_under(site):
                real = os.path.realpath(path)
                if real == me or real in seen:
                    continue
                seen.add(real)
                checkpoint(f"searching {path} for the same namespace")
                try:
                    with open(real, "rb") as fh, mmap.mmap(fh.fileno(), 0,
                                                           access=mmap.ACCESS_READ) as mm:
                        for ns, pats in needles.items():
                            if any(mm.find(p) >= 0 for p in pats):
                                found.setdefault(ns, []).append((path, site))
                except (OSError, ValueError):
                    continue
        return found

    @staticmethod
    def shared_libraries_under(path: str) -> list[str]:
        """Shared libraries at or below ``path`` (a file is returned when it is one)."""
        from opdoctor.facts.inputfile import shared_libraries_under

        return shared_libraries_under(path)

    def pyinit_exports(self, path: str, module: str) -> tuple[bool, list[str]]:
        """(``path`` exports ``PyInit_<module>``, the PyInit_ names it does export).

        Looked up through the hash table; the target's own parsed image is reused. An
        unreadable or malformed file answers (True, []): its own integrity check speaks for it.
        """
        key = (os.path.realpath(path), module)
        if key not in self._pyinit:
            self._pyinit[key] = self._read_pyinit(path, module)
        return self._pyinit[key]

    @cached_property
    def torch_build_version(self) -> str:
        """The torch release whose headers built a stable-ABI library (its
        ``TORCH_ABI_VERSION`` immediates; "" when none): a scan of up to 64 MB of .text that
        the stable check, its section and the variant check each asked for (vllm's libraries:
        18 scans for 9, survey 15's P7)."""
        from opdoctor.facts.stable import build_version

        return build_version(self.image)

    def unlinked_torch_definers(self, names: list[str]) -> dict[str, str]:
        """Symbol → the file name of the torch library `import torch` loads that defines it,
        for the ``names`` whose definer the target's dependency tree does not hold under that
        name: a library compiled against this torch but linked without torch's libraries
        (torch loads them RTLD_LOCAL, so they bind only for a library that NEEDs them). A
        tree with a library of that name (another torch's copy) is no such case: that copy
        lacks them (OD304)."""
        from opdoctor.facts.frameworks import TORCH

        tree = self.process.tree.order
        have = {os.path.basename(lib.path) for lib in tree} | {lib.soname for lib in tree
                                                                 if lib.soname}
        libs = [lib for lib in self.process.preloaded
                if TORCH.linked_by([os.path.basename(lib.path)])
                and os.path.basename(lib.path) not in have and (lib.soname or "") not in have]
        out: dict[str, str] = {}
        for name in names:
            for lib in libs:
                table = self.symbol_tables.of(lib)
                if table is not None and table.lookup(name):
                    out[name] = os.path.basename(lib.path)
                    break
        return out

    def hidden_torch_defining(self, names: tuple[str, ...]) -> tuple[str, str, str] | None:
        """(torch package directory, its version, the sys.path entry that hides it) of a torch
        installed later on the interpreter's sys.path than the one it imports, whose own
        libraries define every one of ``names`` — the torch an extension was built for, hidden
        by another environment's site on PYTHONPATH (survey 22's E6: "rebuild it for torch
        2.14.1" where the torch 2.13.0+cpu it was built for sat behind that entry)."""
        from opdoctor.facts.elf.dynsym import DynSymbols
        from opdoctor.facts.interp import read_torch
        from opdoctor.facts.pychain import import_suffixes, locate

        interp = self.interpreter
        if interp is None or interp.torch is None or not names:
            return None
        cands = [c for c in locate("torch", list(interp.sys_path),
                                   import_suffixes(interp.ext_suffix), self.options.cwd or
                                   os.getcwd()) if c.kind == "package"]
        for cand in cands[1:3]:
            lib = os.path.join(cand.path, "lib")
            left = set(names)
            for name in ("libtorch_cpu.so", "libc10.so", "libtorch.so", "libtorch_python.so",
                         "libtorch_cuda.so", "libc10_cuda.so"):
                path = os.path.join(lib, name)
                if not os.path.isfile(path):
                    continue
                # looked up while the file is open (read_elf closes it after)
                wanted = frozenset(left)
                left -= read_elf(path, lambda img, w=wanted: {  # type: ignore[misc]
                    n for n in w if DynSymbols(img).lookup(n)}, set())
                if not left:
                    break
            if not left:
                hidden = read_torch(cand.path, interp.ext_suffix)
                return cand.path, hidden.version if hidden else "", cands[0].entry
        return None

    def load_problem(self, path: str) -> str | None:
        """What reading ``path`` says would stop the loader here ("" when nothing does: its
        file is whole and for this machine, every library it needs is found, every symbol it
        needs is defined in the process it would join); None when it cannot be read.

        A static answer about a library another statement of the package imports (not the
        target): it is analysed as a lone library in the target's environment, so its
        dependencies are searched and its symbols bound as the loader would, without
        loading it."""
        if path not in self._load_problems:
            self._load_problems[path] = self._read_load_problem(path)
        return self._load_problems[path]

    def _read_load_problem(self, path: str) -> str | None:
        other = Facts(path, dataclasses.replace(self.options, package="", probe=False))
        try:
            if other.structure.image is None:
                return None
            if other.blocker:
                return other.blocker
            missing = other.process.tree.missing
            if missing:
                return f"{missing[0].name} (needed by " \
                    f"{os.path.basename(missing[0].requested_by)}) is not found"
            binding = other.binding
            if binding.missing_versions:
                v = binding.missing_versions[0]
                return f"{v.file} lacks version {v.version}"
            strong = [sym.name for sym in binding.unresolved if not sym.weak]
            return f"undefined symbol: {strong[0]}" if strong else ""
        except Exception:  # an unreadable or malformed file: its own checks speak for it
            return None

    def imports_as_code(self, path: str) -> bool:
        """Whether ``path`` is code a package has to import or load itself: a Python extension
        (exports a ``PyInit_``) or a library that needs a framework. A plain C library that
        another module dlopens (soundfile's libsndfile in ``_soundfile_data/``) is neither.
        Unreadable files count as code (nothing is concluded from them)."""
        from opdoctor.facts.elf.dynsym import DynSymbols
        from opdoctor.facts.loader.process import needs_tensorflow, needs_torch
        return read_elf(path, lambda img: bool(
            DynSymbols(img).names_with_prefix("PyInit_", limit=1)) or needs_torch(img, None)
            or needs_tensorflow(img), True)

    def plain_python_module(self, path: str) -> bool:
        """Whether ``path`` is a Python extension module of its own name (exports
        ``PyInit_<file name>``) that needs no framework library and uses no torch symbol:
        importing it or not registers no operator (jax-cuda12-plugin's ``_hybrid.so``). One
        read of the file; an unreadable one is not (nothing is concluded from it)."""
        from opdoctor.facts.elf.dynsym import DynSymbols
        from opdoctor.facts.frameworks import LINKED_PREFIXES
        from opdoctor.facts.loader.process import needs_torch
        interp = self.interpreter
        lib_dir = interp.torch.lib_dir if interp and interp.torch else None

        def read(img: ElfImage) -> bool:
            needed = [str(n) for n in img.tags.get("DT_NEEDED", [])]
            return bool(DynSymbols(img).lookup(f"PyInit_{extension_name(path)}")) and \
                not any(n.startswith(LINKED_PREFIXES) for n in needed) and \
                not needs_torch(img, lib_dir)
        return read_elf(path, read, False)

    def load_group_host(self, names: tuple[str, ...]) -> tuple[str, list[str]] | None:
        """An extension module of the target's own package whose load brings the target in
        (it is in its NEEDED closure) together with libraries that define every one of
        ``names``: (the extension, those libraries). None when there is none.

        ld.so binds a library loaded as part of another's load group against that whole
        group: MindSpore's ``libmindspore_cpu.so`` leaves 104 ``mindspore::`` functions to
        ``libmindspore_cluster.so``, which it does not NEED but ``_c_expression`` (which NEEDs
        both) loads with it — ``import mindspore`` works; loaded on its own it fails (survey
        15's F2: OD301 errors on a healthy install)."""
        if not names:
            return None
        me = commandcache.realpath(self.path)
        for ext, host in self._package_extension_hosts() or ():
            order = host.process.tree.order
            definers: list[str] = []
            left = set(names)
            for lib in order[1:]:
                if not left or os.path.realpath(lib.path) == me:
                    continue
                # the tree's own parse of each library (no second read of the file)
                table = host.symbol_tables.of(lib)
                found = {n for n in left if table is not None and table.lookup(n)}
                if found:
                    definers.append(lib.path)
                    left -= found
            if not left:
                return ext, definers
        return None

    def load_group_finds(self, requested_by: str, name: str) -> tuple[str, str] | None:
        """An extension module of the target's own package whose load brings in
        ``requested_by`` (the target or one of its dependencies) and finds the library
        ``requested_by`` NEEDs as ``name``, which its own search path does not: (the
        extension, where it is found). None when there is none.

        ld.so finds a DT_NEEDED name already loaded by its SONAME, whatever the searcher's
        paths: MindSpore 2.10's ``libmindspore_grpc.so.48`` has no RUNPATH to its directory,
        and ``_c_dataengine`` (which NEEDs it) loads ``libupb_json_lib.so.48`` before it —
        ``import mindspore`` works; loaded on its own it does not (survey 20: 28 libraries
        of a healthy MindSpore with "probably loads it first" warnings). The host's own
        emulated load says it, in glibc's order: a library loaded later would not count."""
        from opdoctor.facts.loader.search import Missing

        me = commandcache.realpath(requested_by)
        for ext, host in self._package_extension_hosts() or ():
            tree = host.process.tree
            for path, edges in tree.edges.items():
                if commandcache.realpath(path) != me:
                    continue
                dep = next((d for n, d in edges if n == name), None)
                if dep is not None and not isinstance(dep, Missing):
                    return ext, dep.path
        return None

    def _package_extension_hosts(self) -> Iterator[tuple[str, Facts]] | None:
        """The extension modules of the target's own package (but the target) whose NEEDED
        closure holds the target, each with its facts (its resolved dependency tree); None
        when the target is in no package or the package has more than ``MAX_GROUP_HOSTS``
        extensions (not searched)."""
        from opdoctor.facts.pkgdir import package_root

        # Deeper than package_of's two data-directory levels: MindSpore's
        # lib/plugin/ascend/ holds its Ascend plugins, three levels below mindspore/.
        home = package_root(self.path, levels=3)
        if home is None:
            return None
        interp = self.interpreter
        suffixes = (interp.ext_suffix if interp else ".so", ".abi3.so")
        candidates = _extension_modules(home, suffixes)
        if candidates is None:
            return None
        # …and the bare-suffix ones that are extension modules (export PyInit_<name>): a
        # library only they NEED loads as part of their load (dm-reverb's
        # libcheckpoint_cc_proto.so, whose libschema_cc_proto.so libpybind.so loads first)
        bare = [p for p in _bare_modules(home, suffixes)
                if len(candidates) < MAX_GROUP_HOSTS
                and self.pyinit_exports(p, os.path.basename(p)[:-3]) == (True, [])]
        return self._hosts_among(candidates + bare[:MAX_GROUP_HOSTS - len(candidates)])

    def _hosts_among(self, candidates: list[str]) -> Iterator[tuple[str, Facts]]:
        from opdoctor.facts.budget import checkpoint

        me = commandcache.realpath(self.path)
        for ext in candidates:
            if commandcache.realpath(ext) == me:
                continue
            checkpoint(f"reading the load group of {ext}")
            host = _host_facts(ext, self.options)
            try:
                closure = _closure(host)
            except Exception:  # an extension that cannot be read is no host
                continue
            if me in closure:
                yield ext, host

    @cached_property
    def loaded_on_demand(self) -> bool:
        """Whether the target is a library of a package that nothing the package's import
        loads NEEDs: neither a Python extension module nor a framework op library, and in the
        NEEDED closure of none of the package's extension modules (native code dlopens it
        when it wants it: MindSpore's device plugins). False when that cannot be told (no
        package, too many extensions)."""
        if self.imports_as_code(self.path):
            # An extension module, or an op library that needs torch or TensorFlow: the
            # package's Python loads it (torchcodec's torch.ops.load_library of the core for
            # the FFmpeg installed, at import), not its native code on demand.
            return False
        hosts = self._package_extension_hosts()
        return hosts is not None and next(hosts, None) is None

    def defines_all(self, path: str, names: tuple[str, ...]) -> bool:
        """Whether the library ``path`` (another than the target: a sibling the loader does not
        find) exports every symbol of ``names``; False when it cannot be read."""
        from opdoctor.facts.elf.dynsym import DynSymbols

        def every(img: ElfImage) -> bool:
            table = DynSymbols(img)
            return all(table.lookup(n) for n in names)
        return read_elf(path, every, False)

    @cached_property
    def onnxruntime_entry_points(self) -> tuple[str, ...]:
        """The entry points of ONNX Runtime the target exports (its C API ``OrtGetApiBase``,
        an execution provider's ``GetProvider`` or ``CreateEpFactories``, a custom-op
        library's ``RegisterCustomOps``): such a library is ONNX Runtime's, loaded by its own
        API, with no torch or TensorFlow operator to register."""
        try:
            table = self.symbol_tables.of_image(self.image)
            return tuple(n for n in ONNXRUNTIME_ENTRY_POINTS if table.lookup(n))
        except (struct.error, ValueError, IndexError, AttributeError):
            return ()

    def links_torch(self, path: str) -> bool | None:
        """Whether the library ``path`` (one a package's import failed to load, or the target)
        links torch's libraries or uses its symbols; None when unreadable."""
        from opdoctor.facts.loader.process import needs_torch
        if self._is_target(path):
            return self._uses_torch
        interp = self.interpreter
        lib_dir = interp.torch.lib_dir if interp and interp.torch else None
        unreadable: bool | None = None
        return read_elf(path, lambda img: needs_torch(img, lib_dir), unreadable)

    def _read_pyinit(self, path: str, module: str) -> tuple[bool, list[str]]:
        from opdoctor.facts.elf.dynsym import DynSymbols
        unreadable: tuple[bool, list[str]] = (True, [])
        if not self.is_package_dir and os.path.realpath(path) == os.path.realpath(self.path) \
                and self.structure.image is not None:
            try:
                return _pyinit_in(self.symbol_tables.of_image(self.image), module)
            except (struct.error, ValueError, IndexError):
                # a truncated target (duckdb's _duckdb.so cut at 4 KiB): its tables lie past
                # the end of the file; the integrity check reports it (OD406)
                return unreadable
        return read_elf(path, lambda img: _pyinit_in(DynSymbols(img), module), unreadable)

    @property
    def image(self) -> ElfImage:
        """The parsed image; only valid for checks that run (the runner gates on blocker)."""
        img = self.structure.image
        if img is None:
            raise RuntimeError("facts.image used although the file is not a sound ELF")
        return img

    # ------------------------------------------------------------ TensorFlow (facts/tensorflow.py)
    def _tf_watch(self) -> tuple[str, ...]:
        """TensorFlow op names the probe looks up in the registry before and after the load:
        the expected ones and (for a library) the ones its .rodata names."""
        names = [e.op for e in self.tf_expected_ops]
        if self.tf_op_library:
            names += self.registration.tf_ops
        return tuple(dict.fromkeys(names))

    @cached_property
    def tensorflow(self) -> TfInstall | None:
        """The target interpreter's TensorFlow install (None when it has none)."""
        interp = self.interpreter
        if interp is None or not interp.tensorflow_dir:
            return None
        from opdoctor.facts.tensorflow import read_install
        return read_install(interp.tensorflow_dir, interp.tensorflow_framework)

    @cached_property
    def tf_op_library(self) -> bool:
        """True when the target is a TensorFlow library (links libtensorflow_framework or uses
        its C++ API) outside the TensorFlow install itself."""
        from opdoctor.facts.loader.process import needs_tensorflow
        if self.is_package_dir or self.structure.image is None \
                or not needs_tensorflow(self.image):
            return False
        tf = self.tensorflow
        return tf is None or not os.path.realpath(self.path).startswith(
            os.path.realpath(tf.directory) + os.sep)

    @cached_property
    def tf_probe(self) -> bool:
        """Whether the probe loads the target the TensorFlow way (tf.load_op_library, or the
        package import followed by a registry lookup of the expected TensorFlow ops)."""
        if self.tensorflow is None:
            return False
        if self.options.package:
            interp = self.interpreter
            # Not for a library that has nothing of TensorFlow's (PaddlePaddle's libpaddle.so
            # in a TensorFlow venv, survey 17): the import of tensorflow first put a process
            # together that no user's `import paddle` makes, and it crashed there.
            return bool(self.tf_expected_ops) or (not (interp and interp.torch) and (
                self.tf_op_library or ((self.is_package_dir or self.structure.image is None)
                                       and self._imports_tensorflow())))
        return self.tf_op_library

    def _imports_tensorflow(self) -> bool:
        """Whether the package's import runs ``import tensorflow`` (or Keras) unconditionally —
        else the TensorFlow probe's ``import tensorflow`` first is nothing the job does: jax
        0.10.2 in a TensorFlow venv, whose jaxlib 0.9.2 broke TensorFlow's own import, was
        "torch import failed" and never imported jax (survey 21's W10)."""
        from opdoctor.facts.pychain import unconditional_imports
        chain = self.chain
        if chain is None:
            return True  # unknown: as before
        names = {*chain.imports_packages, *unconditional_imports(chain)}
        return bool(names & {"tensorflow", "keras", "tf_keras", "tensorflow_text"})

    @cached_property
    def tf_expected_ops(self) -> tuple[ExpectedOp, ...]:
        """``--expect-op`` entries without a namespace: TensorFlow op names (``ZeroOut[CPU]``)."""
        return tuple(e for e in self.expected_ops if not e.namespace)

    @cached_property
    def tf_requirement(self) -> TfRequirement | None:
        """The TensorFlow release the distribution that installed the target requires."""
        from opdoctor.facts.tensorflow import requirement_for
        return requirement_for(self.path)

    # ------------------------------------------------------------ MindSpore (facts/mindspore.py)
    @cached_property
    def mindspore_aot(self) -> AotFunction | None:
        """The AOT function ``lib.so:Func`` names, as MindSpore's dlsym will find it (None when
        no function was named or the file is not a loadable ELF)."""
        name = self.options.aot_function
        if not name or self.is_package_dir or self.blocker:
            return None
        from opdoctor.facts.mindspore import read_aot
        unresolved = [s.name for s in self.binding.unresolved if not s.weak]
        return read_aot(self.image, self.symbol_tables.of_image(self.image), name, unresolved)

    @cached_property
    def mindspore_aot_uses(self) -> list[tuple[AotUse, AotFunction | None]]:
        """Package mode: the ``ops.Custom("lib.so:Func", …, func_type="aot")`` calls in the
        package's Python files, each with what its library offers (None: no such library)."""
        chain = self.chain
        if chain is None or not chain.package_dir:
            return []
        from opdoctor.facts.elf.dynsym import DynSymbols
        from opdoctor.facts.elf.image import ElfFormatError, ElfImage
        from opdoctor.facts.inputfile import InputError, open_input
        from opdoctor.facts.mindspore import aot_uses, read_aot

        out: list[tuple[AotUse, AotFunction | None]] = []
        # MindSpore resolves a relative path against the process's working directory; the
        # package directory is the fallback that finds the library the author meant.
        bases = [self.options.cwd or os.getcwd(), chain.package_dir]
        for use in aot_uses(chain.python_files[:500], bases)[:20]:
            aot = None
            if use.resolved:
                try:
                    data = open_input(use.resolved)
                except InputError:
                    data = None
                if data is not None:
                    try:
                        image = ElfImage.open(data)
                        aot = read_aot(image, DynSymbols(image), use.function, [])
                    except (ElfFormatError, OSError, ValueError):
                        aot = None
                    finally:
                        data.close()
            out.append((use, aot))
        return out

    @cached_property
    def mindspore_library(self) -> bool:
        """True when the target links libmindspore_* or needs MindSpore C++ symbols."""
        from opdoctor.facts.frameworks import MINDSPORE
        if self.is_package_dir or self.structure.image is None or self.blocker:
            return False
        needed = [str(n) for n in self.image.tags.get("DT_NEEDED", [])]
        return MINDSPORE.linked_by(needed) or self.symbol_tables.of_image(
            self.image).dynstr_contains(b"_ZN9mindspore")

    # ------------------------------------------------------------ OneFlow (facts/oneflow.py)
    @cached_property
    def oneflow(self) -> OneFlowInventory | None:
        """The OneFlow registrations of the target (None when it uses no OneFlow C++ API)."""
        if self.is_package_dir or self.structure.image is None or self.blocker:
            return None
        table = self.symbol_tables.of_image(self.image)
        if not table.dynstr_contains(b"_ZN7oneflow") and not table.dynstr_contains(
                b"_ZTIN7oneflow"):
            return None
        from opdoctor.facts.oneflow import read_oneflow
        undefined = [s.name for s in table.undefined()]
        defined = [table.symbol(i).name for i in range(1, min(table.count, 200000))]
        defined = [n for n in defined if "7oneflow" in n and n not in undefined]
        return read_oneflow(self.image, undefined, defined)

    # ------------------------------------------------------------ compile readiness (#19)
    @cached_property
    def compile_python(self) -> list[PyRegistration]:
        """Registrations in the package's Python sources (package mode; [] otherwise)."""
        from opdoctor.facts.compile import python_registrations
        chain = self.chain
        if chain is None or not chain.package_dir:
            return []
        init = os.path.join(chain.package_dir, "__init__.py")
        from opdoctor.facts.commandcache import realpath
        imported = {realpath(f) for f in [init] + [
            r for link in chain.links if link.kind == "submodule" for r in link.resolved
            if r.endswith(".py")]}
        return python_registrations(chain.python_files, imported, chain.package_dir,
                                    chain.name)

    @cached_property
    def compile_inventory(self) -> CompileInventory:
        """Per op: fake / autograd paths known statically, pystub module names in .rodata."""
        from opdoctor.facts.compile import CompileInventory, read_stable, rodata_modules, static_ops
        out = CompileInventory(python=self.compile_python)
        has_elf = not self.is_package_dir and self.structure.image is not None \
            and not self.blocker
        inv = self.registration if has_elf else None
        if has_elf:
            out.stable = read_stable(self.image)
            modules = sorted({r.module for r in out.python})
            out.pystub_modules = rodata_modules(self.image, modules)
        out.ops = static_ops(inv, out.stable, out.python)
        if self.package_registrations is not None:  # the other side's kernels and fakes
            from opdoctor.facts.pyreg import complete_static_ops
            out.ops = complete_static_ops(out.ops, self.package_registrations)
        return out

    @cached_property
    def package_registrations(self) -> PackageRegistrations | None:
        """The package's ops with their C++ (every library of the package, read statically)
        and Python registrations joined (package mode; None otherwise)."""
        from opdoctor.facts.budget import checkpoint
        from opdoctor.facts.pyreg import MAX_LIBRARIES, merge, read_library
        chain = self.chain
        if chain is None or not chain.package_dir:
            return None
        libs = []
        for path in chain.extensions_on_disk[:MAX_LIBRARIES]:
            checkpoint(f"reading the registrations of {path}")
            lib = read_library(path)
            if lib is not None:
                libs.append(lib)
        return merge(chain.name, chain.package_dir, libs, self.compile_python)


ONNXRUNTIME_ENTRY_POINTS = ("OrtGetApiBase", "GetProvider", "CreateEpFactories",
                            "RegisterCustomOps")


def _global_load(text: str) -> bool:
    """Whether a load call's text asks for RTLD_GLOBAL (``mode=ctypes.RTLD_GLOBAL``, …)."""
    return "RTLD_GLOBAL" in text


def read_elf(path: str, read: Callable[[ElfImage], _T], unreadable: _T) -> _T:
    """``read`` of another ELF file than the target (opened, parsed, closed); ``unreadable``
    when it cannot be opened or parsed (nothing is concluded from such a file)."""
    from opdoctor.facts.elf.image import ElfFormatError, ElfImage
    from opdoctor.facts.inputfile import InputError, open_input
    try:
        data = open_input(path)
    except InputError:
        return unreadable
    try:
        return read(ElfImage.open(data))
    except (ElfFormatError, OSError, ValueError, IndexError, struct.error):
        return unreadable
    finally:
        data.close()


def extension_name(path: str) -> str:
    """The module name Python imports an extension file as, whose ``PyInit_<name>`` it calls
    (``_hybrid.cpython-311-x86_64-linux-gnu.so``, ``_runtime.abi3.so``: the part before the
    first dot)."""
    return os.path.basename(path).split(".", 1)[0]


def soname_of(path: str) -> str:
    """A file's DT_SONAME ("" when it has none or cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return _soname_of(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _soname_of(path: str, _mtime_ns: int, _size: int) -> str:
    return str(read_elf(path, lambda img: (img.tags.get("DT_SONAME") or [""])[0], ""))


def needed_names(path: str) -> list[str]:
    """DT_NEEDED names of a file (empty when unreadable or not ELF); read once per command
    for the same file (each report of a wheel's or package's libraries asks about all of
    them: an expected op's CUDA build, the extensions' variant)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return list(_needed_names(path, st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=256)
def _needed_names(path: str, _mtime_ns: int, _size: int) -> tuple[str, ...]:
    return tuple(read_elf(path, lambda img: [str(n) for n in img.tags.get("DT_NEEDED", [])],
                          []))


commandcache.register(_needed_names.cache_clear, _soname_of.cache_clear)


def cut_short(path: str) -> tuple[int, int] | None:
    """(bytes its headers need, bytes it has) when the file is empty — (0, 0) — or an ELF
    file whose headers describe what the loader reads (segments, program headers) past its
    end; None otherwise: whole, a lost section-table tail only (the loader never reads it,
    as ``Facts.structure``'s ``tail_only``), or not readable as ELF."""
    from opdoctor.facts.elf.image import ElfFormatError, header_extents, parse_header
    from opdoctor.facts.inputfile import InputError, open_input
    try:
        data = open_input(path)
        if data.size == 0:
            return (0, 0)
        extents, _problems = header_extents(parse_header(data.buf), data.buf)
    except (InputError, ElfFormatError, OSError, ValueError):
        return None
    beyond = [e for e in extents if e.end > data.size]
    if not beyond or [e.what for e in beyond] == ["section header table"]:
        return None
    return (max(e.end for e in beyond), data.size)


def damaged_elf(path: str) -> bool:
    """True when the file is empty or cut short where the loader reads (:func:`cut_short`)."""
    return cut_short(path) is not None


def links_framework(path: str) -> bool:
    """True when the library needs a framework library (read from DT_NEEDED, nothing loaded;
    TensorFlow's own Python extension counts: ITEX's libitex_common.so links it)."""
    from opdoctor.facts.frameworks import LINKED_PREFIXES
    return any(n.startswith(LINKED_PREFIXES) for n in needed_names(path))


def _pyinit_in(table: DynSymbols, module: str) -> tuple[bool, list[str]]:
    if table.lookup(f"PyInit_{module}"):
        return True, []
    return False, table.names_with_prefix("PyInit_", limit=4)


def _package_dir_of(path: str) -> str:
    """The top-level package directory containing ``path`` ("" when not in a package)."""
    d = os.path.dirname(os.path.abspath(path))
    top = ""
    while os.path.isfile(os.path.join(d, "__init__.py")):
        top = d
        d = os.path.dirname(d)
    return top


def _which(name: str) -> str | None:
    """``shutil.which(name)`` for a bare program name, as Python 3.11's does it (PATH, else
    the system's default path; each directory once; an executable file, not a directory).
    Importing shutil (with bz2 and lzma behind it) costs ~4 ms of a check of a small CUDA
    library, which looks for nvidia-smi only."""
    path = os.environ.get("PATH", None)
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    if not path:
        return None
    seen: set[str] = set()
    for d in os.fsdecode(path).split(os.pathsep):
        norm = os.path.normcase(d)
        if norm in seen:
            continue
        seen.add(norm)
        full = os.path.join(d, name)
        if os.path.exists(full) and os.access(full, os.F_OK | os.X_OK) \
                and not os.path.isdir(full):
            return full
    return None


def _closure(host: Facts) -> frozenset[str]:
    """The real paths of the libraries an extension's load brings in (its NEEDED closure),
    kept for the command: every library of a package asks about the same extensions."""
    key = (commandcache.realpath(host.path), host.options)
    found = _CLOSURES.get(key)
    if found is None:
        found = _CLOSURES[key] = frozenset(commandcache.realpath(lib.path)
                                           for lib in host.process.tree.order)
    return found


_CLOSURES: dict[tuple[str, CheckOptions], frozenset[str]] = {}
commandcache.register(_CLOSURES.clear)


def _extension_modules(home: str, suffixes: tuple[str, ...]) -> list[str] | None:
    """The extension modules under the package directory ``home``, kept for the command (a
    walk of MindSpore's tree is ~70 ms, asked for each library and each name not found);
    None past ``MAX_GROUP_HOSTS`` (a package of hundreds of extensions: not searched)."""
    key = (home, suffixes)
    if key in _EXTENSIONS:
        return _EXTENSIONS[key]
    found: list[str] = []
    bare: list[str] = []
    for root, dirs, files in os.walk(home):
        dirs.sort()
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(suffixes)]
        # `libpybind.so`: an extension module with the bare suffix (dm-reverb's `from
        # .libpybind import *`) — or any plain library; the caller tells them apart
        bare += [os.path.join(root, f) for f in sorted(files)
                 if f.endswith(".so") and "." not in f[:-3] and not f.endswith(suffixes)]
        if len(found) > MAX_GROUP_HOSTS:
            break
    candidates = found if len(found) <= MAX_GROUP_HOSTS else None
    _EXTENSIONS[key] = candidates
    _BARE[key] = bare
    return candidates


def _bare_modules(home: str, suffixes: tuple[str, ...]) -> list[str]:
    """Files under ``home`` named ``<identifier>.so`` (an import finds an extension module
    there by the bare suffix; most are plain libraries), from the walk above."""
    _extension_modules(home, suffixes)
    return _BARE.get((home, suffixes), [])


_EXTENSIONS: dict[tuple[str, tuple[str, ...]], list[str] | None] = {}
_BARE: dict[tuple[str, tuple[str, ...]], list[str]] = {}
commandcache.register(_EXTENSIONS.clear, _BARE.clear)


def _host_facts(ext: str, options: CheckOptions) -> Facts:
    """The facts of a package's extension module asked about as a load-group host, kept for
    the command: a scan asks each of a package's libraries, for each library a dependency
    is not found for, about the same extensions (MindSpore's 47 libraries, three extensions;
    their emulated loads were 10 of a 20 s scan)."""
    key = (commandcache.realpath(ext), options)
    host = _HOSTS.get(key)
    if host is None:
        host = _HOSTS[key] = Facts(ext, options)
    return host


_HOSTS: dict[tuple[str, CheckOptions], Facts] = {}
commandcache.register(_HOSTS.clear)
