"""TensorFlow op libraries: what the library registered in a real TensorFlow process (the probe),
kernels per device, duplicate op names, and why a library built for another TensorFlow (C++ ABI,
abseil LTS namespace, removed C API symbols) or built without the link flags fails.

Static facts come from :mod:`opdoctor.facts.tensorflow`; the probe's from
:mod:`opdoctor.facts.probe.probe_tf` (``tf.load_op_library`` step by step).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterator

from opdoctor.checks.base import Check
from opdoctor.codes import CodeDoc
from opdoctor.facts import Facts
from opdoctor.facts.elf.demangle import demangle
from opdoctor.facts.tensorflow import (
    ABSL_RELEASES,
    TfRequirement,
    absl_namespaces,
    installed_elsewhere,
    libraries_defining,
    old_abi_tf_symbols,
    requirement_for,
    span_of,
)
from opdoctor.model import Cause, Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:  # the probe's and the import chain's readers load only when used
    from typing import Any

    from opdoctor.facts.probe.outcome import TfProbe

_GUIDE = "https://www.tensorflow.org/guide/create_op"
_BUILD = "https://www.tensorflow.org/guide/create_op#compile_the_op_using_your_system_compiler_tensorflow_binary_installation"

OD150 = CodeDoc(
    "OD150", "TensorFlow op has no kernel for a device", Severity.ERROR,
    what="Each op the library registered (TF_GetOpList on its handle) has a kernel "
    "(REGISTER_KERNEL_BUILDER) for every device it must run on: any device at all, and the ones "
    "--expect-op Op[CPU,GPU] lists (kernels.get_registered_kernels_for_op after the load).",
    why="The op is defined, so the Python wrapper exists, but running it fails: in a graph "
    "\"No OpKernel was registered to support Op 'ZeroOut' used by {{node ZeroOut}} … Registered "
    "devices: [CPU] Registered kernels: <no registered kernels>\", eagerly \"Could not find "
    "device for node: {{node ZeroOut}}\".",
    example="ZeroOut registered with kernels for CPU only; --expect-op ZeroOut[CPU,GPU]",
    fix="Register a kernel per device: REGISTER_KERNEL_BUILDER(Name(\"ZeroOut\")"
    ".Device(DEVICE_CPU), ZeroOutOp); for GPU compile a CUDA kernel and register it with "
    "DEVICE_GPU (and install a TensorFlow build with GPU support).",
    references=(_GUIDE,),
)
OD151 = CodeDoc(
    "OD151", "TensorFlow op name already registered by another library", Severity.ERROR,
    what="The ops this library defines were not already registered in the process before it "
    "was loaded.",
    why="TensorFlow keeps the first registration of an op name and silently drops the later "
    "one: the second library loads, registers nothing, and its Python module calls the other "
    "library's op (or kernels of the other project run). There is no error, only wrong results "
    "or 'No OpKernel' later.",
    example="tf.load_op_library('b/zero_out.so') after 'a/zero_out.so': TF_GetOpList lists "
    "no op",
    fix="Load only one of the two libraries, or rename the op in one project (REGISTER_OP "
    "names are global to the process).",
    references=(_GUIDE,),
)
OD152 = CodeDoc(
    "OD152", "TensorFlow op not registered after the load", Severity.ERROR,
    what="Each op --expect-op names is in the process's op registry after the library is "
    "loaded (or the package imported), and a loaded TensorFlow op library registers ops.",
    why="\"Op type not registered 'ZeroOut' in binary running on <host>. Make sure the Op and "
    "Kernel are registered in the binary running in this process.\" The library did load, so "
    "its REGISTER_OP was compiled out or is in a file the build left out.",
    example="tf.load_op_library('zero_out_noreg.so') → TF_GetOpList lists no op",
    fix="Compile the file with REGISTER_OP(\"ZeroOut\") into the library (check #ifdefs and "
    "the sources list); `strings lib.so | grep ZeroOut` must show the op name.",
    references=(_GUIDE,),
)
OD340 = CodeDoc(
    "OD340", "built with the other C++11 ABI than TensorFlow", Severity.ERROR,
    what="The library's TensorFlow symbols use the same _GLIBCXX_USE_CXX11_ABI as the installed "
    "TensorFlow (tf.sysconfig.get_compile_flags() says -D_GLIBCXX_USE_CXX11_ABI=1).",
    why="Every TensorFlow function taking or returning std::string has another mangled name "
    "under the old ABI; the load fails with \"undefined symbol: "
    "_ZN10tensorflow12OpDefBuilder5InputESs\" (NotFoundError from tf.load_op_library).",
    example="g++ -D_GLIBCXX_USE_CXX11_ABI=0 … zero_out.cc → undefined symbol "
    "tensorflow::OpDefBuilder::Input(std::string)",
    fix="Compile with the flags TensorFlow reports: g++ -std=c++17 -shared zero_out.cc -o "
    "zero_out.so -fPIC $(python -c 'import tensorflow as tf; print(\" \".join("
    "tf.sysconfig.get_compile_flags()))') $(python -c 'import tensorflow as tf; print(\" \""
    ".join(tf.sysconfig.get_link_flags()))')",
    references=(_BUILD,),
)
OD341 = CodeDoc(
    "OD341", "built against another TensorFlow (abseil LTS namespace)", Severity.ERROR,
    what="The abseil inline namespace in the library's symbols (absl::lts_YYYYMMDD) is the one "
    "the installed TensorFlow exports.",
    why="Every TensorFlow release pins an abseil LTS; Status, StatusOr and logging live in "
    "absl::lts_<date>, so a library compiled against another release's headers needs symbols "
    "like tensorflow::OpDefBuilder::SetShapeFn(std::function<absl::lts_20230802::Status(…)>) "
    "that this TensorFlow does not export: \"undefined symbol\".",
    example="tensorflow-text 2.20.1 (absl lts_20250127) beside tensorflow 2.21 (lts_20250814)",
    fix="Install the release of the package built for the installed TensorFlow (or the "
    "TensorFlow it was built for), or rebuild it against the installed TensorFlow's headers.",
    references=(_BUILD, "https://github.com/tensorflow/text#compatibility"),
)
OD342 = CodeDoc(
    "OD342", "TensorFlow API symbol missing: built for another TensorFlow release", Severity.ERROR,
    what="Every TensorFlow C API (TF_*) and C++ symbol the library needs is exported by the "
    "installed TensorFlow, and every TensorFlow library it needs by name "
    "(_pywrap_tensorflow_internal.so) is one the installed TensorFlow gives that name.",
    why="TensorFlow removes and renames C API and C++ functions between releases (TF_VLog "
    "left with tensorflow/c/logging.h; DatasetBase::Finalize changed signature): a plugin "
    "built for an older release fails with \"undefined symbol: TF_VLog\". Its libraries "
    "change too: TF 2.21 ships _pywrap_tensorflow_internal.so as a shim without that SONAME, "
    "so a TF 2.15 plugin that NEEDs it (intel-extension-for-tensorflow 2.15) fails with "
    "\"cannot open shared object file\" even after `import tensorflow` — no path fix helps.",
    example="tensorflow-io-gcs-filesystem 0.37.1 (requires tensorflow<2.17,>=2.16) on TF 2.21",
    fix="Install the package release made for the installed TensorFlow, or the TensorFlow "
    "release the package requires (its metadata names it); for a plugin TF no longer needs, "
    "uninstall it.",
    references=(_BUILD, "https://github.com/tensorflow/io#tensorflow-version-compatibility"),
)
OD431 = CodeDoc(
    "OD431", "TensorFlow op library not linked to libtensorflow_framework", Severity.WARNING,
    what="A library that uses TensorFlow's C++ API links libtensorflow_framework.so.2 "
    "(tf.sysconfig.get_link_flags()).",
    why="Its TensorFlow symbols (typeinfo for tensorflow::OpKernel, OpDefBuilder …) are then "
    "undefined with no library named to define them. tf.load_op_library still works because "
    "`import tensorflow` loads _pywrap_tensorflow_internal with RTLD_GLOBAL, but any other "
    "loader fails: ctypes before import tensorflow, a C++ program, TF Serving: "
    "\"undefined symbol: _ZTIN10tensorflow8OpKernelE\".",
    example="g++ -shared zero_out.cc -o zero_out.so $(compile flags) — without the link flags",
    fix="Link with the flags TensorFlow reports: … $(python -c 'import tensorflow as tf; "
    "print(\" \".join(tf.sysconfig.get_link_flags()))') (-L<tensorflow dir> "
    "-l:libtensorflow_framework.so.2).",
    references=(_BUILD,),
)


def _link_flags(facts: Facts) -> str:
    tf = facts.tensorflow
    if tf is None or not tf.framework:
        return "-l:libtensorflow_framework.so.2"
    return f"-L{os.path.dirname(tf.framework)} -l:{os.path.basename(tf.framework)}"


def _release_hint(facts: Facts, absl: list[str]) -> tuple[str, list[str]]:
    """(release the library was built for, evidence): see :func:`built_for`."""
    return built_for(facts.tf_requirement, absl)


def _minor(release: str) -> tuple[int, int]:
    major, _, minor = release.partition(".")
    return int(major), int(minor or 0)


def _overlap(a: str, b: str) -> str:
    """The releases two spans share: ``2.16`` for ``2.16`` and ``2.16–2.19``; "" for none."""
    a_lo, _, a_hi = a.partition("–")
    b_lo, _, b_hi = b.partition("–")
    lo = max(_minor(a_lo), _minor(b_lo))
    hi = min(_minor(a_hi or a_lo), _minor(b_hi or b_lo))
    if hi < lo:
        return ""
    return f"{lo[0]}.{lo[1]}" if lo == hi else f"{lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}"


def built_for(req: TfRequirement | None, absl: list[str]) -> tuple[str, list[str]]:
    """(the TensorFlow release a library was built for, evidence). The package metadata when
    it pins a release (an upper bound, ``==``/``~=``) that agrees with the abseil the binary
    needs; else the abseil's releases (read from the binary itself); else nothing. A bare
    lower bound (``tensorflow>=2.11.0``, tensorflow-recommenders-addons 0.8.1, whose library
    needs the abseil of TensorFlow 2.16–2.19) says what it allows, not what it was built
    against."""
    span = next((ABSL_RELEASES[ns] for ns in absl if ns in ABSL_RELEASES), "")
    meta = [f"{req.distribution} requires {req.spec}", f"read from {req.source}"] if req else []
    pinned = bool(req and req.release and re.search(r"<|==|~=", req.spec))
    if req and pinned:
        # Every release the range allows (tensorflow-addons 0.23.0: <2.16.0,>=2.13.0 is
        # 2.13–2.15, not its floor), narrowed to the abseil's when the binary names one.
        allowed = span_of(req.spec) or req.release
        both = _overlap(allowed, span) if span else allowed
        if both:
            return both, meta
    if span:
        ns = next(ns for ns in absl if ns in ABSL_RELEASES)
        return span, [f"absl::{ns} is the abseil of TensorFlow {span} wheels", *meta]
    return (req.release, meta) if req and pinned else ("", meta)


def _static(facts: Facts) -> Iterator[Finding]:
    """Version and build findings from the library's undefined symbols (nothing loaded)."""
    tf = facts.tensorflow
    image = facts.image
    needed = [str(n) for n in image.tags.get("DT_NEEDED", [])]
    table = facts.symbol_tables.of_image(image)
    undefined = [s.name for s in table.undefined()]
    tf_undef = [n for n in undefined if "10tensorflow" in n]
    if tf_undef and not any(n.startswith("libtensorflow") for n in needed):
        yield OD431.finding(
            facts.path, f"uses {len(tf_undef)} TensorFlow C++ symbol(s) but does not link "
            "libtensorflow_framework: it loads only into a process where `import tensorflow` "
            "made TensorFlow's symbols global",
            (f"DT_NEEDED: {', '.join(needed) or 'none'}",
             *[f"undefined: {demangle(n)}  [{n}]" for n in sorted(tf_undef)[:3]],
             "`import tensorflow` loads _pywrap_tensorflow_internal.so with RTLD_GLOBAL "
             "(tensorflow/python/pywrap_tensorflow.py); ctypes.CDLL before it fails with "
             f"\"undefined symbol: {sorted(tf_undef)[0]}\""),
            fix=f"add the link flags to the build: {_link_flags(facts)} "
            "(python -c 'import tensorflow as tf; print(tf.sysconfig.get_link_flags())')")
    if tf is None:
        return
    unresolved = [s.name for s in facts.binding.unresolved]
    if not unresolved:
        return
    installed = f"TensorFlow {tf.version}"
    old = old_abi_tf_symbols(unresolved)
    if old and tf.cxx11_abi == 1:
        yield OD340.finding(
            facts.path, f"built with _GLIBCXX_USE_CXX11_ABI=0; {installed} uses 1: "
            f"{len(old)} TensorFlow function(s) taking std::string are not found",
            (*[f"needs (old ABI): {d}" for d in old[:3]],
             f"{tf.framework} exports the std::__cxx11 names",
             "tf.sysconfig.get_compile_flags() includes -D_GLIBCXX_USE_CXX11_ABI=1"),
            fix=_old_abi_fix(facts, installed))
        return
    absl = [ns for ns in absl_namespaces(unresolved) if ns != tf.absl]
    release, rev = _release_hint(facts, absl)
    built_for = f"TensorFlow {release}" if release else "another TensorFlow release"
    if absl and tf.absl:
        ex = [n for n in unresolved if absl[0] in n][:3]
        yield OD341.finding(
            facts.path, f"built against {built_for}: it needs abseil absl::{absl[0]}, "
            f"{installed} exports absl::{tf.absl}",
            (*[f"undefined: {demangle(n)}" for n in ex], *rev,
             f"{tf.framework}: absl::{tf.absl}"),
            fix=_fix_for(facts, release, installed))
        return
    api = [n for n in unresolved if n.startswith(("TF_", "TFE_", "TFL_")) or "10tensorflow" in n]
    if api:
        yield OD342.finding(
            facts.path, f"built for {built_for}: {len(api)} TensorFlow API symbol(s) are not "
            f"exported by {installed} (removed or renamed since)",
            (*[f"undefined: {demangle(n)}" for n in api[:3]], *rev,
             f"not exported by {tf.framework}"),
            fix=_fix_for(facts, release, installed))


def _old_abi_fix(facts: Facts, installed: str) -> str | None:
    """For a library of an installed distribution (a wheel: nothing to compile), the release
    that pairs with the installed TensorFlow: pip's TensorFlow used the old C++ ABI up to 2.8
    (2.9 moved to manylinux2014 and _GLIBCXX_USE_CXX11_ABI=1), so an old-ABI wheel was built
    for one of those — tensorflow-graphics 2021.12.3's rasterizer_op.so was told to
    "compile zero_out.cc" (survey 17). None (OD340's own fix) for a library of no
    distribution: one being built, which the compile flags fix."""
    from opdoctor.facts.pkgdir import distribution
    from opdoctor.facts.requires import owning_dist

    if facts.options.wheel:
        return None  # a wheel a CI job gates: the build's flags are the fix
    owner = owning_dist(facts.path)
    if owner is None:
        return None
    name, version = distribution(owner[0])
    if not name:
        return None
    return (f"{name} {version} was built for a TensorFlow before 2.9 (pip's TensorFlow used "
            f"_GLIBCXX_USE_CXX11_ABI=0 up to 2.8): install the {name} release built for "
            f"{installed} (pip install --upgrade {name}: a release whose metadata allows "
            f"{installed}), if its project publishes one, or use tensorflow<2.9 with this "
            f"{name}; rebuilding it needs its sources and tf.sysconfig's compile flags")


def _fix_for(facts: Facts, release: str, installed: str) -> str:
    """Install the package release made for the installed TF, or the TF it was made for."""
    req = facts.tf_requirement
    return _fix_with(req.distribution.split()[0] if req else "", release, installed)


def _fix_with(name: str, release: str, installed: str) -> str:
    """The fix text: the package release made for the installed TF, or the TF it was made for."""
    pin = f"tensorflow=={release}.*"
    if "–" in release:
        lo, _, hi = release.partition("–")
        major, minor = _minor(hi)
        pin = f"'tensorflow>={lo},<{major}.{minor + 1}'"
    if name and release:
        # The pairing known to work first: a release of the package built for the installed
        # TensorFlow may not exist (tensorflow-addons ended at 0.23.0, TensorFlow < 2.16;
        # tensorflow-decision-forests 1.12.0 pins 2.19.0) and opdoctor cannot know offline.
        return (f"use {pin} with this {name} (the TensorFlow it was built for), or a {name} "
                f"release built for {installed} if its project has published one (pip index "
                f"versions {name} lists its releases; its metadata must allow {installed})")
    if release:
        return (f"rebuild against {installed}'s headers and flags (tf.sysconfig."
                f"get_compile_flags()/get_link_flags()), or use {pin}")
    return OD341.fix


_LOAD_UNDEF = re.compile(r"(/\S+\.so(?:\.\d+)*): undefined symbol: (\S+)")


def _package_load_error(facts: Facts, message: str) -> Iterator[Finding]:
    """A package import that failed in tf.load_op_library with "undefined symbol": name the
    TensorFlow release the failing library was built for (its metadata, else its abseil)."""
    tf = facts.tensorflow
    m = _LOAD_UNDEF.search(message)
    if tf is None or m is None:
        return
    lib, sym = m.group(1), m.group(2)
    installed = f"TensorFlow {tf.version}"
    req = requirement_for(lib)
    absl = [ns for ns in absl_namespaces([sym]) if ns != tf.absl]
    release, rev = built_for(req, absl)
    built = f"TensorFlow {release}" if release else "another TensorFlow release"
    fix = _fix_with(req.distribution.split()[0] if req else "", release, installed)
    ev = [f"tf.load_op_library: {lib}: undefined symbol: {sym}", f"  = {demangle(sym)}", *rev]
    # The library that failed may be another of the package's (scann: `import scann` fails at
    # _scann_ops.so while the scann_pybind.so checked loads): the finding is that library's,
    # and its message says where the import fails, not that the library checked "needs" it.
    where = "" if os.path.realpath(lib) == os.path.realpath(facts.path) else \
        f"`import {facts.probed_import}` fails at {os.path.basename(lib)}, "
    if absl and tf.absl:
        yield OD341.finding(lib, f"{where}built against {built}: it needs abseil "
                            f"absl::{absl[0]}, {installed} exports absl::{tf.absl}",
                            (*ev, f"{tf.framework}: absl::{tf.absl}"), fix=fix)
    elif sym.startswith(("TF_", "TFE_", "TFL_")) or "10tensorflow" in sym:
        yield OD342.finding(lib, f"{where}built for {built}: {installed} does not export "
                            f"{demangle(sym)}", (*ev, f"not exported by {tf.framework}"),
                            fix=fix)


def _probe(facts: Facts) -> Iterator[Finding]:
    """What the real TensorFlow process says about the library's registrations."""
    res = facts.probe_result()
    if res is None:
        return
    from opdoctor.facts.probe.outcome import ProbeState  # loaded by the probe that ran

    if facts.options.package and res.state is ProbeState.LOAD_FAILED:
        yield from _package_load_error(facts, res.load_message)
        return
    if res.tensorflow is None or res.state is not ProbeState.LOADED:
        return
    tfp = res.tensorflow
    static_ops = list(facts.registration.tf_ops) if facts.tf_op_library else []
    yield from _duplicates(facts, tfp, static_ops)
    devices = "[" + ", ".join(tfp.devices) + "]" if tfp.devices else "[CPU]"
    for op in tfp.ops:
        if not tfp.kernels.get(op):
            yield OD150.finding(
                op, f"{op} is registered without any kernel: calling it fails with \"No "
                f"OpKernel was registered to support Op '{op}' … Registered devices: "
                f"{devices}\" (eagerly: \"Could not find device for node\")",
                (f"TF_GetOpList on the library's handle: {op}",
                 f"kernels.get_registered_kernels_for_op('{op}'): <no registered kernels>"))
    if not facts.options.package and facts.tf_op_library and not tfp.ops and not any(
            op in tfp.registered_before for op in static_ops) and not (
            not static_ops and facts.dependents):  # a support library others NEED
        yield OD152.finding(facts.path, "the library loaded but registered no TensorFlow op",
                            ("TF_GetOpList on the library's handle: no op",
                             "static: " + (f"op names in .rodata: {', '.join(static_ops)}"
                                           if static_ops else "no REGISTER_OP in the file")))
    for exp in facts.tf_expected_ops:
        ks = tfp.kernels.get(exp.op, ())
        if exp.op not in tfp.registered_after:
            yield from _not_registered(facts, res.mapped, exp.op)
            continue
        have = sorted({k.device for k in ks})
        missing = [d for d in exp.keys if d not in have]
        if missing and ks:
            yield OD150.finding(
                exp.op, f"{exp.op} has kernels for {', '.join(have)}, not {'/'.join(missing)}: "
                f"on {missing[0]} it fails with \"No OpKernel was registered to support Op "
                f"'{exp.op}'\"", (*[f"kernel: device={k.device}"
                                    + (f" {' '.join(k.constraints)}" if k.constraints else "")
                                    for k in ks],
                                  f"devices in this process: {devices}"))


def _duplicates(facts: Facts, tfp: TfProbe, static_ops: list[str]) -> Iterator[Finding]:
    """Ops this library defines that were registered before it loaded: TF kept the first."""
    tf = facts.tensorflow
    me = os.path.realpath(facts.path)
    for op in static_ops:
        # package mode: another library of the same import whose handle lists the op (the
        # import loaded it first: both register while the package is imported)
        sibling = [lib for lib, ops in tfp.ops_by_library if op in ops and lib != me]
        if op in tfp.ops or not (op in tfp.registered_before or
                                 (sibling and me in dict(tfp.ops_by_library))):
            continue
        first = [p for p, ops in tfp.preloads if op in ops] or sibling
        if not first:
            exclude = (tf.directory,) if tf else ()
            first = libraries_defining(op, list(tfp.mapped_before), exclude)
        first = [p for p in first if os.path.realpath(p) != me]
        who = first[0] if first else (f"TensorFlow {tf.version} itself (a built-in op)"
                                      if tf else "another library")
        yield OD151.finding(
            op, f"{op} was already registered by {who}; TensorFlow kept that one and this "
            f"library ({facts.path}) registered nothing",
            (f"before the load the registry already had {op}" if not sibling else
             f"the package's import loaded {os.path.basename(sibling[0])} first, which lists "
             f"{op}",
             f"TF_GetOpList on {os.path.basename(facts.path)}'s handle: "
             f"{', '.join(tfp.ops) or 'no op'}",
             *[f"first registered by: {p}" for p in first[:3]],
             f"this library defines {op} (.rodata)"))


def _not_registered(facts: Facts, mapped: tuple[str, ...], op: str) -> Iterator[Finding]:
    """An expected op missing after the load: trace it back to the library that defines it."""
    tf = facts.tensorflow
    msg = f"Op type not registered '{op}' in binary running on {platform.node()}"
    if not facts.options.package:
        yield OD152.finding(op, f"{msg}: the library loaded but did not register {op}",
                            (f"static op names in the library: "
                             f"{', '.join(facts.registration.tf_ops) or 'none'}",))
        return
    where = facts.path if os.path.isdir(facts.path) else os.path.dirname(facts.path)
    candidates = libraries_defining(op, facts.shared_libraries_under(where),
                                    (tf.directory,) if tf else ())
    loaded = {os.path.realpath(m) for m in mapped}
    never = [c for c in candidates if os.path.realpath(c) not in loaded]
    if candidates and never:
        yield OD530.finding(
            op, f"{msg}: `import {facts.options.package}` never loads {never[0]}, the library "
            f"that defines {op}",
            [f"defines {op}: {c}" for c in candidates],
            fix=f"load it where the package is imported: tf.load_op_library(os.path.join("
            f"os.path.dirname(__file__), '{os.path.basename(never[0])}')) in the package's "
            "__init__.py (or the module that wraps the op)")
        return
    if candidates:
        yield OD152.finding(op, f"{msg}: {candidates[0]} was loaded by the import but "
                            f"registered nothing under that name",
                            (f"mapped by the import: {candidates[0]}",))
        return
    interp = facts.interpreter
    elsewhere = installed_elsewhere(op, interp.sys_path if interp else (),
                                    (tf.directory,) if tf else ())
    if elsewhere:
        lib, site = elsewhere[0]
        who = interp.invoke if interp else "this interpreter"
        yield OD146.finding(
            op, f"{msg}: {op} is defined by {lib}, installed for another Python ({site}), "
            f"not for the interpreter that runs the job ({who})",
            [f"defines {op}: {lib}" for lib, _s in elsewhere[:3]]
            + [f"{site} is not on the sys.path of {who}"
               + (f" (Python {interp.version})" if interp else ""),
               f"no library under {where} defines {op}"],
            fix=f"install the package that holds {os.path.basename(lib)} for this interpreter "
            f"(`{who} -m pip install …`, then load it with tf.load_op_library before the graph "
            "or model that uses the op), or run the job with the Python it is installed for")
        return
    yield OD152.finding(op, f"{msg}: no library under {where} defines {op}",
                        (f"searched: {where}",),
                        fix="build the library that defines the op into this package; if it "
                        "was built for another interpreter, install it for this one "
                        "(--python)")


OD146 = CodeDoc(
    "OD146", "TensorFlow op library installed only for another Python", Severity.ERROR,
    what="When --expect-op names a TensorFlow op that the package's import did not register, "
    "and no library of the package defines it: the site-packages of other Python environments "
    "(user sites ~/.local/lib/python3.X, /usr/lib and /usr/local/lib, environments beside the "
    "target's) are searched, by bytes, for an op library that defines it.",
    why="\"Op type not registered 'ZeroOut' in binary running on …\": the op library exists "
    "and works, but it was installed (and loaded) for another interpreter — pip of another "
    "Python, another venv or conda env — so nothing in this process can load it.",
    example="ZeroOut is defined by ~/.local/lib/python3.10/site-packages/zero_op/zero_out.so; "
    "the job runs venv/bin/python (3.11), whose sys.path does not have that directory",
    fix="Install the package for the interpreter the job runs (`<that python> -m pip install "
    "…`) and load its op library before the graph that uses the op, or run the job with the "
    "Python it is installed for.",
    references=(_GUIDE,),
)
OD530 = CodeDoc(
    "OD530", "the package never loads the op library that defines the op", Severity.ERROR,
    what="When --expect-op names a TensorFlow op and a package is imported, the package's "
    "import loads the library in it that defines the op.",
    why="\"Op type not registered 'ZeroOut' in binary running on …\": the op library is "
    "installed, intact and correct, but nothing in the import chain calls "
    "tf.load_op_library on it, so the op never reaches the registry.",
    example="zero_op/__init__.py computes the library path but never calls tf.load_op_library",
    fix="Call tf.load_op_library(<the library>) in the module that defines the op's Python "
    "wrapper (usually the package __init__.py).",
    references=(_GUIDE,),
)

CODES = (OD146, OD150, OD151, OD152, OD340, OD341, OD342, OD431, OD530)


# TensorFlow's own libraries, which only TensorFlow's import puts in a process.
_TF_OWN = re.compile(r"^(?:_pywrap_tensorflow_internal\.so|libtensorflow_(?:framework|cc)"
                     r"\.so(?:\.\d+)*)$")


def _tf_own_missing(facts: Facts) -> list[str]:
    """TensorFlow's own libraries the target's dependency tree needs by a name that nothing
    in the process answers, TensorFlow being installed."""
    if facts.is_package_dir or os.path.isdir(facts.path) or facts.tensorflow is None or \
            facts.structure.image is None or facts.blocker:
        return []
    return [m.name for m in facts.process.tree.missing if _TF_OWN.match(m.name)]


def _own_library_by_name(facts: Facts, names: list[str]) -> Iterator[Finding]:
    """ITEX 2.15 (a TensorFlow 2.15 plugin) beside TensorFlow 2.21: libitex_common.so NEEDs
    ``_pywrap_tensorflow_internal.so`` by name; TensorFlow 2.21 ships that file as a small
    shim without the SONAME the loader would match, so no path fix makes the plugin work —
    it was built for another TensorFlow release (its metadata says which)."""
    tf = facts.tensorflow
    assert tf is not None
    installed = f"TensorFlow {tf.version}"
    req = facts.tf_requirement
    release, meta = built_for(req, [])
    built = f"TensorFlow {release}" if release else "another TensorFlow release"
    have = [os.path.join(tf.directory, "python", n) for n in names
            if os.path.isfile(os.path.join(tf.directory, "python", n))]
    yield OD342.finding(
        facts.path, f"needs TensorFlow's own {', '.join(names)} by name: built for {built}; "
        f"{installed} does not provide {'it' if len(names) == 1 else 'them'} under that "
        "name (no library in its process carries that SONAME)",
        (*meta, *[f"{installed} ships {h} without that SONAME" for h in have],
         *[f"needed by {m.requested_by}" for m in facts.process.tree.missing
           if m.name in names][:2]),
        fix=_fix_for(facts, release, installed))


def run(facts: Facts) -> Iterator[Finding]:
    """Static version/build findings for a TensorFlow library, then what the probe saw."""
    own = _tf_own_missing(facts)
    if own:
        yield from _own_library_by_name(facts, own)
    if facts.tf_op_library and not facts.blocker:
        yield from _static(facts)
    if facts.tf_probe:
        yield from _probe(facts)


def section(facts: Facts) -> dict[str, Any]:
    """The TensorFlow install, and the library's ops with their kernels per device."""
    tf = facts.tensorflow
    out: dict[str, Any] = {
        "tensorflow": tf.version if tf else None,
        "absl": tf.absl if tf else None,
        "cxx11_abi": tf.cxx11_abi if tf else None,
        "static_ops": (list(facts.registration.tf_ops)
                       if facts.tf_op_library and not facts.blocker else []),
        "library": facts.tf_op_library,
    }
    req = facts.tf_requirement if facts.tf_op_library else None
    if req is not None:
        out["requires"] = {"distribution": req.distribution, "spec": req.spec,
                           "release": req.release}
    res = facts.probe_result() if facts.tf_probe else None
    tfp = res.tensorflow if res is not None else None
    out["probed"] = tfp is not None
    if tfp is not None:
        out["ops"] = [{"name": op, "kernels": [{"device": k.device, "label": k.label,
                                                "constraints": list(k.constraints)}
                                               for k in tfp.kernels.get(op, ())]}
                      for op in dict.fromkeys([*tfp.ops, *tfp.registered_after])]
        out["devices"] = list(tfp.devices)
    return out


def _applies(facts: Facts) -> str:
    if facts.tf_probe or facts.tf_op_library or _tf_own_missing(facts):
        return ""
    if facts.options.package:
        return "TensorFlow is not installed for the target interpreter"
    return "not a TensorFlow library"


CHECK = Check(
    name="tensorflow",
    summary="TensorFlow op libraries: ops and kernels per device in a real TensorFlow process, "
    "duplicate op names, built for another TensorFlow (ABI, abseil, C API), link flags",
    causes=(Cause.REGISTRATION, Cause.VERSION, Cause.BUILD),
    codes=CODES,
    run=run,
    needs_elf=False,
    section=section,
    applies=_applies,
)
