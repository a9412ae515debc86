"""File integrity (cause 4): is this file a loadable shared object for this machine at all?

The loader's own messages for these faults are terse and sometimes misleading (a library for
another architecture gives "cannot open shared object file: No such file or directory"; a
truncated one can kill the process with SIGBUS), so each fault gets its own code and evidence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.image import PF_X, PT_GNU_STACK
from opdoctor.facts.inputfile import is_shared_library, sniff
from opdoctor.model import Cause, Finding, Severity

_LDSO = "glibc ld.so, dl-load.c"

OD401 = CodeDoc(
    "OD401", "path not found", Severity.ERROR,
    what="The path given to opdoctor (or to the loader) exists.",
    why="dlopen reports a missing file as 'cannot open shared object file: No such file or "
    "directory' — the same words it uses for a dependency that is not found, and for a library "
    "built for another architecture, so the message alone does not tell which one it is.",
    example="opdoctor check build/libmyop.so → 'build/libmyop.so: no such file' (exit 2)",
    fix="Build the library first, or pass the path the build actually wrote (check the build "
    "log or `find . -name '*.so'`).",
    references=("dlopen(3)",),
)
OD402 = CodeDoc(
    "OD402", "not a regular file", Severity.ERROR,
    what="The input is a regular file, not a directory, FIFO, socket or device.",
    why="Only a regular file can be mapped by the loader; reading a FIFO or a device would block "
    "or never end, so opdoctor refuses it without reading.",
    example="opdoctor check /dev/zero → '/dev/zero: is a character device, not a library file'",
    fix="Pass the path of the .so file itself.",
    references=("stat(2)",),
)
OD403 = CodeDoc(
    "OD403", "file not readable", Severity.ERROR,
    what="The file can be opened for reading by the current user.",
    why="The loader opens the file with the caller's permissions: 'Permission denied' at load "
    "time means the job's user cannot read it.",
    example="chmod 000 libmyop.so; opdoctor check libmyop.so → 'permission denied' (exit 2)",
    fix="chmod a+r the library (and a+x every directory above it) or run as a user who can.",
    references=("open(2)",),
)
OD404 = CodeDoc(
    "OD404", "empty file", Severity.ERROR,
    what="The file has at least the bytes of an ELF header.",
    why="A zero-byte .so is what an interrupted build, a full disk or a failed copy leaves "
    "behind; dlopen says 'file too short'.",
    example="OSError: build/libmyop.so: file too short",
    fix="Delete the file and rebuild (`make clean && make`); check the disk is not full.",
    references=(_LDSO,),
)
OD405 = CodeDoc(
    "OD405", "not an ELF file", Severity.ERROR,
    what="The file starts with the ELF magic bytes \\x7fELF.",
    why="Anything else is refused by the loader with 'invalid ELF header'. Common culprits: a "
    "Git LFS pointer that was never fetched, an HTML error page saved by a download, a static "
    "archive (.a) or a linker script named .so, a macOS or Windows binary.",
    example="OSError: libmyop.so: invalid ELF header",
    fix="Replace it with the real shared object: `git lfs pull`, re-download, or rebuild; "
    "`file <path>` shows what it really is.",
    references=("elf(5)", _LDSO),
)
OD406 = CodeDoc(
    "OD406", "truncated ELF file", Severity.ERROR,
    what="Every section, segment and header table the ELF headers describe lies inside the file.",
    why="A file cut short (interrupted copy or download, full disk, partial artifact upload) "
    "passes the magic check, and dlopen may fail with 'file too short' or even crash the "
    "process with SIGBUS when it touches a mapped page past the end of the file. When only "
    "what ld.so never reads is gone — the section header table and the sections outside "
    "every segment (.symtab, debug information), the file's usual tail — the library still "
    "loads: that is a warning (tools that read sections fail), and the other checks and the "
    "probe run on what the loader reads.",
    example="python -c 'import ctypes; ctypes.CDLL(\"libmyop.so\")' → Bus error",
    fix="Copy or download the library again and compare its size/checksum with the build "
    "output; rebuild if the original is gone.",
    references=("elf(5)",),
)
OD407 = CodeDoc(
    "OD407", "wrong ELF class", Severity.ERROR,
    what="The library's ELF class (32 or 64 bit) matches the process that will load it.",
    why="A 64-bit Python cannot load a 32-bit library; dlopen says 'wrong ELF class: "
    "ELFCLASS32'.",
    example="OSError: libmyop.so: wrong ELF class: ELFCLASS32",
    fix="Rebuild for the host (drop -m32 / use the 64-bit toolchain); install the wheel built "
    "for this platform.",
    references=("elf(5)", _LDSO),
)
OD408 = CodeDoc(
    "OD408", "built for another architecture", Severity.ERROR,
    what="The library's e_machine matches the host CPU architecture.",
    why="An aarch64 library on x86-64 (or the reverse) is skipped by the loader, which then "
    "reports 'cannot open shared object file: No such file or directory' — a misleading "
    "message for a file that plainly exists.",
    example="OSError: libmyop.so: cannot open shared object file: No such file or directory",
    fix="Build on (or cross-compile for) the machine that runs the job; install the wheel whose "
    "platform tag matches `python -c 'import sysconfig; print(sysconfig.get_platform())'`.",
    references=("elf(5)", _LDSO),
)
OD417 = CodeDoc(
    "OD417", "built for another C library (musl)", Severity.ERROR,
    what="A library for this glibc system does not link musl's C library "
    "(libc.musl-x86_64.so.1): it was built for the system that runs it.",
    why="A musllinux wheel (pip's `--platform musllinux_1_2_x86_64`, a wheel copied from an "
    "Alpine image) holds extensions linked against musl libc. On a glibc system the loader "
    "looks for libc.musl-x86_64.so.1 and fails with 'cannot open shared object file' — which "
    "reads like a library-path problem, but no RPATH or LD_LIBRARY_PATH can fix it: the whole "
    "file expects another C library.",
    example="ImportError: libc.musl-x86_64.so.1: cannot open shared object file: No such file "
    "or directory (bcrypt's musllinux wheel on Debian)",
    fix="Install the build for this system — the manylinux wheel: `pip install "
    "--force-reinstall --no-deps <package>==<release>` run with this machine's pip, without "
    "--platform — or build it here from source.",
    references=("https://peps.python.org/pep-0656/", _LDSO),
)
OD419 = CodeDoc(
    "OD419", "on a file system mounted noexec", Severity.ERROR,
    what="The library (and each dependency the loader maps) is on a file system that allows "
    "executable mappings.",
    why="A file system mounted noexec (a hardened /tmp, /var/tmp, /dev/shm or home directory, "
    "a container volume) lets the loader open the file but not map its code: dlopen fails "
    "with 'failed to map segment from shared object'. The file is there and intact, so "
    "neither a search path nor a rebuild helps — and glibc gives the same words for an "
    "address-space limit (ulimit -v) smaller than the library.",
    example="OSError: /tmp/build/libmyop.so: failed to map segment from shared object",
    fix="Put the library where code may run: build or install outside the noexec mount "
    "(TMPDIR for pip's builds, the environment's own directory), or remount it with exec "
    "(`mount -o remount,exec <mount point>`) where you administer the machine.",
    references=("mount(8): noexec", "statvfs(3): ST_NOEXEC", _LDSO),
)
OD409 = CodeDoc(
    "OD409", "not a shared object", Severity.ERROR,
    what="The file is a shared library (ET_DYN without the PIE-executable flag).",
    why="Object files (ET_REL), executables (ET_EXEC) and position-independent executables "
    "cannot be dlopen'ed: 'only ET_DYN and ET_EXEC can be loaded', 'cannot dynamically load "
    "executable', 'cannot dynamically load position-independent executable'.",
    example="OSError: libmyop.so: only ET_DYN and ET_EXEC can be loaded",
    fix="Link with `-shared` (and compile with -fPIC): `g++ -shared -fPIC ... -o libmyop.so`; "
    "with CMake use add_library(myop SHARED ...).",
    references=("elf(5)", _LDSO),
)
OD410 = CodeDoc(
    "OD410", "text relocations (built without -fPIC)", Severity.WARNING,
    what="The library has no DT_TEXTREL / DF_TEXTREL: its code pages need no writes at load.",
    why="Code compiled without -fPIC forces the loader to make code pages writable while "
    "relocating: slower loads, no sharing between processes, and refused outright under "
    "SELinux or hardened kernels ('cannot restore segment prot after reloc').",
    example="readelf -d libmyop.so | grep TEXTREL → 0x16 (TEXTREL) 0x0",
    fix="Compile every object (including static libraries linked in) with -fPIC; "
    "set(CMAKE_POSITION_INDEPENDENT_CODE ON) in CMake.",
    references=("https://wiki.gentoo.org/wiki/Hardened/Textrels_Guide",),
)
OD411 = CodeDoc(
    "OD411", "malformed ELF structure", Severity.ERROR,
    what="The ELF headers are internally consistent (entry sizes, string table index) and "
    "the file can be parsed.",
    why="A corrupt or deliberately forged header makes the loader fail unpredictably.",
    example="e_shentsize is 7, ELF64 needs 64",
    fix="Rebuild the library; if it came from elsewhere, treat the file as corrupt.",
    references=("elf(5)",),
)
OD412 = CodeDoc(
    "OD412", "requires an executable stack", Severity.WARNING,
    what="The PT_GNU_STACK segment does not ask for an executable stack.",
    why="Since glibc 2.41 dlopen refuses such libraries: 'cannot enable executable stack as "
    "shared object requires: Invalid argument'. Older glibc makes every thread stack of the "
    "process executable. Usually caused by one assembly file without a .note.GNU-stack section.",
    example="readelf -lW libmyop.so | grep GNU_STACK → RWE",
    fix="Add `.section .note.GNU-stack,\"\",@progbits` to assembly sources, or link with "
    "-Wl,-z,noexecstack; `patchelf --clear-execstack` fixes an existing file.",
    references=("https://sourceware.org/glibc/wiki/Release/2.41",),
)

OD413 = CodeDoc(
    "OD413", "damaged symbol, version or dynamic tables", Severity.ERROR,
    what="The tables the dynamic loader trusts are consistent (an error when ld.so uses the "
    "damaged table; a warning when only tools read it: section headers, st_shndx): every "
    "string-table link and name offset points inside its table, .dynsym entries name real "
    "sections, the hash tables "
    "and .gnu.version/.gnu.version_d/.gnu.version_r fit their sections and agree with "
    ".dynsym, the sizes and addresses in the dynamic section (DT_STRSZ, DT_INIT_ARRAY + "
    "DT_INIT_ARRAYSZ …) lie inside the loaded segments, and PT_LOAD offsets are page-aligned.",
    why="A linker never writes these inconsistencies: they come from a corrupted copy, a "
    "bad binary patch or a forged file. ld.so believes the tables — it refuses some outright "
    "('unsupported version 0 of Verdef record', 'ELF load command address/offset not "
    "page-aligned'), and for the others it binds the wrong symbol, reads unmapped memory or "
    "runs garbage as an initialiser (a crash inside dlopen). No other check can say anything "
    "reliable about such a file, so they are skipped.",
    example=".gnu.version_d: record 0 has version 0: ld.so says 'unsupported version 0 of "
    "Verdef record'; DT_INIT_ARRAY 0x3df0 + DT_INIT_ARRAYSZ 0x10000000000 is not inside any "
    "loaded segment",
    fix="Rebuild the library, or copy it again from the build output and compare checksums; "
    "if a tool patched it (patchelf, a packager, strip), re-run that step on a fresh build "
    "with a current version of the tool. `readelf -a` shows the same damage.",
    references=("elf(5)", "https://refspecs.linuxfoundation.org/LSB_5.0.0/LSB-Core-generic/"
                "LSB-Core-generic/symversion.html", "glibc elf/dl-version.c, elf/dl-load.c"),
)

# Input-level codes: raised before any check runs (opdoctor.facts.inputfile, opdoctor.targets)
# and reported as "not analysed" with exit 2; declared here so `opdoctor explain` knows them.
OD414 = CodeDoc(
    "OD414", "symbolic link loop", Severity.ERROR,
    what="The path resolves: following its symbolic links ends at a file, not back at a link "
    "already followed.",
    why="The kernel gives up after 40 links (ELOOP) and dlopen reports 'Too many levels of "
    "symbolic links'; no file is opened, so nothing about the library can be checked. A loop "
    "usually comes from a versioned-name chain (libfoo.so → libfoo.so.1 → libfoo.so) that a "
    "packaging step or a careless `ln -sf` rewrote.",
    example="ln -s libb.so liba.so; ln -s liba.so libb.so; opdoctor check liba.so → 'liba.so: "
    "symbolic link loop (Too many levels of symbolic links)' (exit 2)",
    fix="Find the loop with `namei -l PATH` (or `ls -l` on each link) and point the last link at "
    "the real file: `ln -sf libfoo.so.1.2.3 libfoo.so.1`.",
    references=("path_resolution(7)", "symlink(7)"),
)
OD415 = CodeDoc(
    "OD415", "no compiled library to check", Severity.ERROR,
    what="What was named contains, or loads, at least one compiled shared library: a wheel "
    "with a .so, a directory with one below it, a package whose import loads one (or, for a "
    "package, defines an operator from Python with torch.library).",
    why="Every cause of a failing operator library lives in a compiled library (the "
    "operator's registration, its dependencies, its symbols). A directory or a source "
    "distribution has none, so 'no problem found' would be a claim nothing backs (an error, "
    "exit 2); the usual mistake is checking the source tree or the sdist instead of the built "
    "wheel, or a build that skipped the extension. A Python package — installed (`--package`, "
    "a package directory) or in a pure-Python wheel — is still checked for what can break its "
    "import — the import chain, its requirements, pinned releases, NumPy builds — so there "
    "it is a note (info): the report says which of those ran, and names the compiled "
    "libraries its distribution installs elsewhere (protobuf's google/_upb beside "
    "google.protobuf).",
    example="opdoctor check dist/mypkg-1.0.tar.gz → 'a source distribution of mypkg-1.0: "
    "nothing compiled in it to check' (exit 2); opdoctor check --package soupsieve (or its "
    "py3-none-any wheel) → 'ℹ OD415 Python package soupsieve has no compiled library and "
    "defines no operator' (exit 0)",
    fix="Check the built artefact: the platform wheel (…-cp311-cp311-linux_x86_64.whl), the "
    "build directory, or the installed package (`--package NAME`). A py3-none-any wheel of an "
    "operator package means the extension was not built: look for 'skipping extension' in the "
    "build log (a missing compiler or CUDA).",
    references=("https://packaging.python.org/en/latest/specifications/binary-distribution-"
                "format/",),
)

CODES = (OD401, OD402, OD403, OD404, OD405, OD406, OD407, OD408, OD409, OD410, OD411, OD412,
         OD413, OD414, OD415, OD417, OD419)


def _hex(n: int) -> str:
    return f"{n:#x}"


def not_elf_fix(what: str, head: bytes) -> str | None:
    """A fix that is right for what the file really is (None: the code's general fix)."""
    if "linker script" in what:
        text = head.decode("latin-1")
        names = re.findall(r"(/[^\s()]+\.so[.\d]*)", text.split("*/")[-1])
        shared = [n for n in names if ".so" in os.path.basename(n)]
        if shared:
            return (f"nothing to repair: this is the linker's entry point. Load the shared "
                    f"library it names instead: {shared[0]}")
        return "nothing to repair: load the shared library the script names (GROUP/INPUT)"
    if "LFS" in what:
        return "fetch the real file: `git lfs pull` (then check `file <path>` says ELF)"
    system = "macOS" if "Mach-O" in what else "Windows" if "Windows" in what else ""
    if system:
        import platform

        # a wheel for another platform (orjson's macosx / win_amd64 wheels: survey 20) — no
        # download or LFS fetch repairs it; git-lfs was the general fix's first word
        return (f"nothing repairs it here: it is a library for {system}, another operating "
                "system. Install the build for this machine — pip picks it when run here "
                "without --platform; for a wheel file, the one whose platform tag is this "
                f"machine's (manylinux_…_{platform.machine()}) — or build it here from source.")
    return None


def _musl_finding(facts: Facts) -> Finding:
    """OD417, with the wheel's tag and the reinstall command when the file belongs to an
    installed distribution."""
    libc = facts.foreign_libc
    glibc = ".".join(map(str, facts.host.glibc or ()))
    evidence = [f"DT_NEEDED: {libc}", f"this host: glibc {glibc}"]
    fix = OD417.fix
    owner = facts.installed_by
    if owner is not None:
        info = owner[0]
        from opdoctor.facts.pkgdir import distribution, wheel_tags

        dist, version = distribution(os.path.basename(info))
        tags = wheel_tags(info)
        evidence += [f"{os.path.basename(info)}/WHEEL: Tag: {t}" for t in tags[:2]]
        fix = (f"Install the build for this system: pip install --force-reinstall --no-deps "
               f"'{dist}=={version}' with this machine's pip, without --platform (it picks the "
               "manylinux wheel), or build it here from source.")
    return OD417.finding(facts.path, f"built for musl libc (it links {libc}); this host's C "
                         f"library is glibc {glibc}: no search path makes it load here",
                         evidence, fix=fix)


def _textrel_finding(facts: Facts) -> Finding:
    """OD410; for a file a distribution installed from an index records (catboost 1.2.10's
    published wheel, survey 19: no ``direct_url.json`` naming a local source), the fix is
    not "compile with -fPIC" — the user builds nothing — but whom to tell and what decides
    whether it loads."""
    from opdoctor.facts.pkgdir import direct_url_project, distribution

    evidence = ["dynamic tag: DT_TEXTREL / DF_TEXTREL"]
    owner = facts.installed_by
    if owner is None or direct_url_project(owner[0]):
        # not installed, or installed from a local project or wheel: the user's own build
        return OD410.finding(facts.path, "the library has text relocations (code compiled "
                             "without -fPIC)", evidence)
    dist, version = distribution(os.path.basename(owner[0]))
    evidence.append(f"installed by {os.path.basename(owner[0])} (its RECORD lists the file)")
    return OD410.finding(
        facts.path, f"the library has text relocations (code compiled without -fPIC), as "
        f"{dist} {version} ships it", evidence,
        fix=f"Nothing to rebuild on your side: it is {dist}'s published build. It loads "
        "where text relocations are allowed (most systems); a system that refuses them "
        "(SELinux denying execmod, a hardened kernel: 'cannot restore segment prot after "
        f"reloc') cannot load it — report it to {dist}'s maintainers (their build links "
        "code compiled without -fPIC), and meanwhile allow execmod for the file "
        "(`chcon -t textrel_shlib_t <file>`) or use another release.")


def pure_python(facts: Facts) -> str:
    """What the package target is, when it has no compiled library and defines no operator
    ("" otherwise, and for a package that was not found): nothing of the ELF checks applies,
    and the report must say so rather than "no problem found" alone."""
    chain = facts.chain
    winner = chain.winner if chain is not None else None
    if chain is None or winner is None or winner.kind == "extension":
        return ""
    if chain.extensions_on_disk or chain.libraries or any(lk.other_builds
                                                           for lk in chain.links):
        return ""  # (a Windows .pyd or another Python's build is a compiled library too)
    if any(is_shared_library(os.path.basename(p)) for p in chain.record_missing) or any(
            lk.problem and lk.kind == "submodule" for lk in chain.links):
        return ""  # a library its RECORD lists is gone, a module it imports is not there
    if winner.kind != "module" and facts.shared_libraries_under(winner.path):
        return ""
    inventory = facts.compile_inventory
    if inventory.ops or inventory.python:
        return ""
    return "Python module" if winner.kind == "module" else "Python package"


def _pure_python_finding(facts: Facts, kind: str) -> Finding:
    """OD415 as a note: the package is pure Python; its distribution's compiled libraries
    installed outside it (protobuf's google/_upb for google.protobuf) are named, since a
    check of one of them is what can say more."""
    chain = facts.chain
    assert chain is not None and chain.winner is not None
    name = facts.options.package
    evidence = [f"{'module file' if kind == 'Python module' else 'package directory'}: "
                f"{chain.winner.path}"]
    if kind == "Python package":
        evidence.append(f"Python files read: {len(chain.python_files)}; compiled files: none")
    fix = ("Nothing to fix if it is meant to be pure Python: its import chain, requirements and "
           "pinned releases were checked (the causes below). A package that should ship an "
           "extension was built without it: look for 'skipping extension' or a compiler error "
           "in its build log.")
    if chain.dist:
        from opdoctor.facts.requires import own_code_first, record_libraries  # rare

        site = os.path.dirname(chain.dist)
        libs = [os.path.join(site, rel) for rel in own_code_first(record_libraries(chain.dist))]
        if libs:
            shown = ", ".join(libs[:3]) + (f" (+{len(libs) - 3} more)" if len(libs) > 3 else "")
            evidence.append(f"compiled libraries {os.path.basename(chain.dist)} installs "
                            f"elsewhere: {shown}")
            fix += f" To check a compiled library of its distribution: opdoctor check {libs[0]}"
        else:
            from opdoctor.facts.requires import compiled_requirements

            # Its compiled part as a distribution of its own (polars → polars-runtime-32,
            # jax → jaxlib): nothing was left out of this build.
            parts = compiled_requirements(chain.dist, chain.sys_path)
            if parts:
                evidence += [f"compiled code of its requirement {dist} {version}: {lib}"
                             for dist, version, lib in parts]
                fix = ("Nothing to fix: its import chain, requirements and pinned releases were "
                       "checked (the causes below), and its compiled code is installed by its "
                       f"requirement {parts[0][0]}: opdoctor check {parts[0][2]}")
    unbuilt = _editable_without_its_build(facts) if kind == "Python package" else None
    if unbuilt is not None:
        # survey 22's D2: an editable torch_scatter whose in-place build was cleaned (`git
        # clean -xdf`): its import fails ("Could not find module '_version_cpu'") and the
        # static check said "No problem found"
        how, project, script = unbuilt
        return OD415.finding(
            chain.winner.path, f"{kind} {name} has no compiled library: it is an editable "
            f"install of {project}, whose {os.path.basename(script)} builds compiled "
            "extensions, and none is built in the source tree (a clean removed them, or the "
            "build failed)", [*evidence, f"editable install: {how}",
                              f"{script} declares compiled extensions"],
            fix=f"build them again: `python -m pip install -e {project} --no-build-isolation` "
            "(with the options it was installed with; for torch extensions in the environment "
            "that has torch), and read that build's log for the error that left them out")
    return OD415.finding(chain.winner.path, f"{kind} {name} has no compiled library and "
                         "defines no operator: what was checked is its import (causes 1–4 "
                         "of a library do not apply)", evidence, fix=fix,
                         severity=Severity.INFO)


def _editable_without_its_build(facts: Facts) -> tuple[str, str, str] | None:
    """(how, project, build script) for a package that an editable install provides from a
    project whose build script declares compiled extensions (the package holds none)."""
    from opdoctor.facts.pkgdir import declares_extensions, editable_origin

    chain = facts.chain
    win = chain.winner if chain is not None else None
    if chain is None or win is None:
        return None
    how, project = editable_origin(win.path, win.via, chain.sys_path)
    script = declares_extensions(project) if how and project else ""
    # a compiled module built anywhere in the project's packages (a sibling package of the
    # same project holds it: edpkg_extra beside edpkg) means the build is there
    return (how, project, script) if script and not _built_in(project) else None


def _built_in(project: str, limit: int = 20000) -> bool:
    """Whether the project's source tree holds a compiled module outside its build
    directories (or is too large to tell: then assumed built)."""
    seen = 0
    for _root, dirs, files in os.walk(project):
        dirs[:] = [d for d in dirs if d not in ("build", "dist", ".git", "node_modules") and
                   not d.startswith((".", "venv"))]
        seen += len(files)
        if seen > limit or any(is_shared_library(f) for f in files):
            return True
    return False


def _applies(facts: Facts) -> str:
    if facts.is_package_dir and not pure_python(facts):
        return "a package directory, not a library file"
    return ""


def run(facts: Facts) -> Iterator[Finding]:
    """Yield integrity findings for the target; stop at the first fault that blocks loading.
    A package target gets here only when it is pure Python: the note that says so."""
    if facts.is_package_dir:
        # `applies` let only a pure-Python package through (its walk is not done again)
        chain = facts.chain
        module = chain is not None and chain.winner is not None and chain.winner.kind == "module"
        yield _pure_python_finding(facts, "Python module" if module else "Python package")
        return
    path, size = facts.path, facts.file.size
    st = facts.structure
    if st.empty:
        yield OD404.finding(path, "the file is empty (0 bytes)", ("size: 0 bytes",),
                            fix=_installed_fix(facts))
        return
    if st.header is None:
        head = bytes(facts.file.buf[:512])
        what = sniff(head)
        preview = head[:40].decode("latin-1")  # !r below escapes newlines (once)
        yield OD405.finding(path, f"not an ELF file: it is {what}",
                            (f"first bytes: {preview!r}", f"size: {size} bytes"),
                            fix=not_elf_fix(what, bytes(facts.file.buf[:4096])))
        return
    hdr = st.header
    if st.beyond_eof:
        worst = max(st.beyond_eof, key=lambda e: e.end)
        ev = [f"file size: {size} bytes ({_hex(size)})"]
        ev += [f"{e.what} spans {_hex(e.start)}–{_hex(e.end)}, past the end of the file"
               for e in sorted(st.beyond_eof, key=lambda e: e.start)[:5]]
        if len(st.beyond_eof) > 5:
            ev.append(f"… and {len(st.beyond_eof) - 5} more")
        if not st.tail_only:
            yield OD406.finding(path, f"the file is truncated: the headers need at least "
                                f"{worst.end} bytes, it has {size}", ev,
                                fix=_installed_fix(facts))
            return
        # xxhash's extension cut in half: Python imports it and it works.
        yield OD406.finding(
            path, f"the file is truncated after what the loader reads: the section headers "
            f"need {worst.end} bytes, it has {size}; the program headers and every segment are "
            "whole, so it loads, but tools that read sections (nm, readelf -S, strip, gdb) fail",
            [*ev, "every segment (PT_LOAD, PT_DYNAMIC …) ends inside the file"],
            severity=Severity.WARNING,
            fix="Copy or download the library again (compare its size or checksum with the "
            "original): the file lost its tail, symbols and debug information included.")
    if st.problems:
        yield OD411.finding(path, "the ELF structure is malformed", st.problems)
        return
    if st.damage:
        yield OD413.finding(path, f"the tables the loader trusts are damaged "
                            f"({len(st.damage)} problem{'s' if len(st.damage) > 1 else ''}): "
                            f"{st.damage[0]}", [*st.damage, *st.oddities])
        return
    if st.oddities:
        yield OD413.finding(path, "section headers or symbol entries are inconsistent (ld.so "
                            f"does not read them, tools do): {st.oddities[0]}", st.oddities,
                            severity=Severity.WARNING)
    host = facts.host
    if host.bits is not None and hdr.bits != host.bits:
        yield OD407.finding(path, f"ELF{hdr.bits} library, but this host ({host.machine}) "
                            f"loads ELF{host.bits}",
                            (f"EI_CLASS: ELFCLASS{hdr.bits}", f"e_machine: {hdr.machine_name}"))
        return
    if host.e_machine is not None and hdr.e_machine != host.e_machine:
        yield OD408.finding(path, f"built for {hdr.machine_name}, this host is {host.machine}",
                            (f"e_machine: {hdr.e_machine} ({hdr.machine_name})",
                             f"host: {host.machine}"))
        return
    img = st.image
    assert img is not None  # structure guarantees an image when there is no problem
    if facts.foreign_libc:
        yield _musl_finding(facts)
        return
    if hdr.e_type != 3:
        yield OD409.finding(path, f"{hdr.describe()}, not a shared object",
                            (f"e_type: {hdr.type_name}",))
        return
    if img.is_pie_executable:
        yield OD409.finding(path, "a position-independent executable, not a shared library",
                            ("e_type: ET_DYN", "DT_FLAGS_1: PIE"))
        return
    noexec = _noexec_finding(facts)
    if noexec is not None:
        yield noexec
    if img.has_textrel:
        yield _textrel_finding(facts)
    for seg in img.segments:
        if seg.p_type == PT_GNU_STACK and seg.flags & PF_X:
            refused = host.glibc is not None and host.glibc >= (2, 41)
            glibc = ".".join(map(str, host.glibc)) if host.glibc else "unknown"
            yield OD412.finding(
                path, "the library asks for an executable stack"
                + (" — this glibc refuses to load it" if refused else ""),
                ("PT_GNU_STACK flags: RWE", f"host glibc: {glibc}"),
                severity=Severity.ERROR if refused else None,
            )
    yield from _broken_dependencies(facts)


def _noexec_finding(facts: Facts) -> Finding | None:
    """OD419 for a library on a noexec file system. A wheel's files are unpacked by opdoctor
    where code may run (``mounts.exec_tempdir``); where no such place was found, the copy's
    mount is the machine's, not the wheel's fault: a warning that the load cannot be tried
    here."""
    from opdoctor.facts.mounts import mount_options, noexec_mount

    point = noexec_mount(facts.path)
    if point is None:
        return None
    ev = (f"statvfs({facts.path}): ST_NOEXEC",
          f"mount point: {point} ({mount_options(point)})" if point != "?" else
          "mount point: not listed in /proc/self/mountinfo")
    if facts.options.wheel:
        return OD419.finding(facts.path, f"opdoctor's unpacked copy of the wheel is on {point}, "
                             "mounted noexec: nothing of it can be loaded here, so the probe "
                             "was not run (a fact of this machine, not of the wheel)", ev,
                             severity=Severity.WARNING,
                             fix="set TMPDIR (or OPDOCTOR_CACHE_DIR) to a directory where code may "
                             "run, and check the wheel again")
    return OD419.finding(facts.path, f"the library is on {point}, a file system mounted "
                         "noexec: the loader opens it but cannot map its code (\"failed to "
                         "map segment from shared object\")", ev,
                         fix=OD419.fix.replace("<mount point>", point))


def _installed_fix(facts: Facts) -> str | None:
    """For a file an installed distribution's RECORD lists (a wheel's module emptied or cut
    short), its reinstall — there is no build to `make` (tokenizers' extension emptied got
    "make clean && make"; survey 21's W11); None (the code's own fix) otherwise."""
    from opdoctor.checks.base import distribution_reinstall
    from opdoctor.facts.pkgdir import distribution

    owner = facts.installed_by
    if owner is None or facts.options.wheel:
        return None
    dist, ver = distribution(owner[0])
    return (f"{distribution_reinstall(facts, owner[0])} ({dist} {ver} installed it: its RECORD "
            "lists this file); if the disk is full, free space first")


def _broken_dependencies(facts: Facts) -> Iterator[Finding]:
    """A dependency the loader meets and cannot use — cut short, another machine's, no ELF
    file — is the same fault as the target's own would be, on that file: a vendored libgomp
    truncated by a copy was five "version GOMP_x not found" errors with a toolchain fix, its
    aarch64 copy "not found" with a patchelf fix (survey 21's W4, W5)."""
    from opdoctor.checks.base import distribution_reinstall
    from opdoctor.facts.budget import BudgetExceeded
    from opdoctor.facts.pkgdir import distribution
    from opdoctor.facts.requires import owning_dist

    try:
        broken = facts.broken_dependencies
    except BudgetExceeded:
        return  # the loader's emulation ran out of its time: the dependencies stage says so
    host = facts.host
    for path, name, requester, wrong in broken:
        base = os.path.basename(path)
        who = os.path.basename(requester) if requester else os.path.basename(facts.path)
        owner = owning_dist(path)
        if owner is not None:
            dist, ver = distribution(owner[0])
            fix = (f"{distribution_reinstall(facts, owner[0])} ({dist} {ver} installed it; its "
                   "RECORD says what the file should be)")
        else:
            fix = (f"copy {base} again from where it was built or installed from, for "
                   f"{host.machine}")
        ev = (f"{name} (DT_NEEDED of {who}) → {path}", wrong)
        if wrong.startswith("on a file system mounted noexec"):
            point = wrong.rsplit("(", 1)[-1].rstrip(")")
            yield OD419.finding(path, f"{base}, which {who} needs, is {wrong}: the loader finds "
                                "it and cannot map its code (\"failed to map segment from "
                                "shared object\")", ev, fix=OD419.fix.replace("<mount point>",
                                                                              point))
        elif wrong.startswith("truncated"):
            yield OD406.finding(path, f"{base}, which {who} needs, is {wrong}: loading it "
                                "fails (\"file too short\") or dies with SIGBUS", ev, fix=fix)
        elif "wrong machine" in wrong:
            yield OD408.finding(path, f"{base}, which {who} needs, is built for "
                                f"{wrong.split('(', 1)[-1].rstrip(')')}, this host is "
                                f"{host.machine}: the loader skips it and reports it "
                                "not found", ev, fix=fix)
        elif "wrong ELF class" in wrong:
            yield OD407.finding(path, f"{base}, which {who} needs, is "
                                f"{wrong.split('(', 1)[-1].rstrip(')')}: the loader skips it "
                                "and reports it not found", ev, fix=fix)
        else:
            yield OD405.finding(path, f"{base}, which {who} needs, is not an ELF file: the "
                                "loader skips it and reports it not found", ev, fix=fix)


CHECK = Check(
    name="integrity",
    summary="the file is an intact ELF shared object for this machine, built as PIC",
    causes=(Cause.BUILD,),
    codes=CODES,
    run=run,
    needs_elf=False,
    applies=_applies,
)
