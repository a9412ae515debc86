"""Entities in error text, and what they mean for the cause.

A message's wording says *what* failed; the entities in it often say *why*: which namespace an
undefined symbol lives in (the framework, the C++ runtime, CUDA, or the library's own code),
where the failing file sits (an installed package, a source checkout, a build tree, a JIT cache,
a Windows path), which release or build variant (``+cpu``/``+cu121``) each side of a "built for …
you have …" pair names, which Python a compiled module was built for.

Everything here is plain ``re`` on bounded input (linear time); nothing imports torch.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import lru_cache

TYPE_CHECKING = False  # not from typing: importing it costs start-up time

if TYPE_CHECKING:
    from typing import Any

# ------------------------------------------------------------------ demangling
_Demangle = Callable[[str], str]


@lru_cache(maxsize=1)
def _demangler() -> _Demangle:
    """A demangler that is quick to start.

    ``abi::__cxa_demangle`` of the C++ runtime, bound directly by its usual soname (the facts
    layer's binding first asks ``ctypes.util.find_library``, which runs ``ldconfig`` in a
    subprocess). Where that soname cannot be loaded, ``opdoctor.facts.elf.demangle`` is used —
    loaded from its file, because importing it the normal way runs ``opdoctor/facts/__init__``,
    the whole fact layer (~150 ms), and explain must answer a one-line message fast.
    """
    fast = _cxa_by_soname()
    if fast is not None:
        return fast
    mod = sys.modules.get("opdoctor.facts.elf.demangle")
    if mod is None:  # importlib.util and pathlib only here: they cost start-up time
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parent.parent / "facts" / "elf" / "demangle.py"
        spec = importlib.util.spec_from_file_location("opdoctor._explain_demangle", str(path))
        if spec is None or spec.loader is None:  # pragma: no cover - broken install
            return lambda s: s
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    fn: _Demangle = mod.demangle
    return fn


def _cxa_by_soname() -> _Demangle | None:
    import ctypes

    try:
        cxx = ctypes.CDLL("libstdc++.so.6")
        free = ctypes.CDLL("libc.so.6").free
        fn = cxx.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                   ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]
    free.restype = None

    def one(name: str) -> str:
        status = ctypes.c_int(0)
        ptr = fn(name.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
        if not ptr:
            return name
        try:
            return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 \
                else name
        finally:
            free(ptr)

    return one


def demangle(mangled: str) -> str:
    """Demangle one C++ name (unchanged when it is not a mangled name)."""
    name = mangled[1:] if mangled.startswith("__Z") else mangled  # Mach-O adds an underscore
    return _demangler()(name)


# ------------------------------------------------------------------ symbols
class SymbolInfo:
    """What an undefined symbol is, and the causes that makes likely (best first).

    A plain class, not a dataclass: importing ``dataclasses`` (inspect, ast, dis) costs ~15 ms of
    every ``opdoctor explain`` start."""

    __slots__ = ("causes", "code", "demangled", "is_", "mangled", "owner")

    def __init__(self, mangled: str, demangled: str, owner: str, is_: str,
                 causes: tuple[int, ...], code: str) -> None:
        self.mangled = mangled
        self.demangled = demangled
        self.owner = owner  # torch, tensorflow, abseil, paddle, …, cxx-runtime, cuda, python, own
        self.is_ = is_  # one sentence
        self.causes = causes
        self.code = code

    def _key(self) -> tuple[object, ...]:
        return (self.mangled, self.demangled, self.owner, self.is_, self.causes, self.code)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymbolInfo) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"SymbolInfo{self._key()!r}"

    def as_dict(self) -> dict[str, Any]:
        """JSON form (keys kept from schema 1: mangled, demangled, is, cause, code)."""
        return {"mangled": self.mangled, "demangled": self.demangled, "owner": self.owner,
                "is": self.is_, "cause": self.causes[0], "code": self.code}


_FRAMEWORK_NS = (
    ("torch", re.compile(r"^(?:c10|at|torch|caffe2|onnx_torch|c10d)::")),
    # perftools::gputools:: is StreamExecutor's namespace before TensorFlow 1.10
    ("tensorflow", re.compile(r"^(?:tensorflow|tsl|xla|stream_executor|tflite|"
                              r"perftools::gputools)::")),
    ("abseil", re.compile(r"^absl::(?:lts_\d+::)?")),
    ("paddle", re.compile(r"^(?:paddle|phi)::")),
    ("oneflow", re.compile(r"^oneflow::")),
    ("mindspore", re.compile(r"^mindspore::")),
    ("onnxruntime", re.compile(r"^(?:onnxruntime|Ort)::")),
)
# NVIDIA's own libraries: an undefined symbol inside one is a companion library of another release
_NVIDIA_LIB = re.compile(r"(?:^|[/\\])lib(?:nvinfer\w{0,20}|nvonnxparser|cudnn\w{0,30}|"
                         r"cublas(?:Lt)?|cusparse\w{0,5}|cufft\w{0,5}|curand|cusolver\w{0,5}|nvrtc|nccl|"
                         r"nvJitLink)\.so")
# torch's Python-binding symbols: THPVariable…, torch::python::…, torch::autograd::python::…
_TORCH_PYTHON = re.compile(r"^THP[A-Z]|^torch::(?:autograd::)?python::|^torch::utils::"
                           r"(?:wrap|unwrap)|^pybind11::detail::type_caster<at::Tensor")
# C symbols of framework-internal C libraries (TH/THC/THNN of old torch, TF's C API — which
# Mach-O spells with C's leading underscore: dyld's "Symbol not found: _TF_AllocateOutput")
# torch's C entry points: the TH* era, and the stable C ABI of torch >= 2.x (AOTInductor's
# aoti_torch_* shims, torch/csrc/stable's torch_library_impl …), which an extension built for a
# newer torch calls and an older libtorch does not export
_FRAMEWORK_C = (("torch", re.compile(r"^(?:THN?N?_?|THC|THCuda|THNN_)[A-Z]|^_?aoti_torch_\w|"
                                     r"^_?torch_(?:library_|call_dispatcher|new_list|list_|"
                                     r"parse_device|get_current_|delete_|from_blob|"
                                     r"dtype_)")),
                ("tensorflow", re.compile(r"^_?TF_[A-Z]")))
_CUDA_RT_INTERNAL = re.compile(r"^_{1,2}cuda\w|^cudaGetDriverEntryPoint")
# TensorRT's exported C entry points (libnvinfer, libnvinfer_plugin, libnvonnxparser)
_TENSORRT_C = re.compile(r"^(?:createInfer(?:Builder|Runtime|Refitter)_INTERNAL|getInferLibVersion|"
                         r"getPluginRegistry|getBuilderPluginRegistry|"
                         r"initLibNvInferPlugins|getNvOnnxParserVersion|"
                         r"createNvOnnxParser\w{0,20}_INTERNAL)$")
_THIRD_PARTY = re.compile(r"^(?:iJIT_|mkl_|MKL_|cblas_|openblas|gotoblas|GOMP_|omp_|__kmpc_|"
                          r"kmp_|del_curterm|tgetent|setupterm|SSL_|EVP_|OPENSSL_|CRYPTO_|"
                          r"inflate|deflate|png_|jpeg_|H5|google::protobuf::|google::|cv::|"
                          r"boost::|Json::|fmt::|spdlog::|folly::|dnnl_|dnnl::|mkldnn|"
                          r"opal_|ompi_|orte_)")  # Open MPI's internals: one plugin, two installs
_CUDA_C = re.compile(r"^(?:cu(?:da|blas|blasLt|dnn|fft|rand|sparse|solver|Launch|Module|Ctx|Mem|"
                     r"pti|tensor)|nccl|nvrtc|nvinfer|nvjpeg|cutlass|_{0,2}nvJitLink|nvml|nvtx)",
                     re.I)
_CXX_RT = re.compile(r"^(?:std::|__gnu_cxx::|__cxxabiv1::|operator (?:new|delete))"
                     r"|^(?:typeinfo|vtable) for std::|^__cxa_|^__gxx_")
_OLD_ABI_STRING = re.compile(r"std::(?:string\b|basic_string<)")
_PY_C = re.compile(r"^_?Py[A-Z_]")
# CPython API functions exported only from a later patch release of their minor version
_PY_PATCH_API = re.compile(r"^_?PySlice_(?:Unpack|AdjustIndices)$")
# a mangled C++ function at global scope: _Z<length><name><parameters> (no N…E nesting)
_GLOBAL_CXX_FUNCTION = re.compile(r"^_{1,2}Z\d{1,4}[A-Za-z_]")


# the return type a demangled function-template instantiation starts with ("double* ",
# "c10::optional<long> ", "void "), up to the qualified name of the function itself
_TEMPLATE_RETURN = re.compile(r"^(?:const )?[\w:]{1,200}(?:<[^()]{0,200}?>)?(?: const)?[ *&]{1,4}"
                              r"(?=\w[\w:]{0,200}::\w{1,200}<)")


def _strip_special(d: str) -> tuple[str, str]:
    """("typeinfo for X" → ("typeinfo", "X"))."""
    m = re.match(r"^(typeinfo name|typeinfo|vtable|VTT|construction vtable|guard variable)"
                 r" for (.{1,2000})$", d)
    return (m.group(1), m.group(2)) if m else ("", d)


def _namespace_from_mangled(mangled: str) -> str:
    """The outermost name of a mangled symbol, read from its length-prefixed parts — works on
    names the demangler rejects (a typo in a pasted message): '_ZNK3c1010TensorImpl…' → 'c10::'."""
    m = re.match(r"_{1,2}Z(?:T[IVS])?N?K?(?:St)?(\d{1,3})", mangled)
    if not m:
        return ""
    n = int(m.group(1))
    start = m.end()
    name = mangled[start:start + n]
    return name + "::" if len(name) == n else ""


def classify_symbol(mangled: str, library: str = "") -> SymbolInfo:
    """Classify an undefined symbol by what it names (and which library wanted it)."""
    d = demangle(mangled)
    if d == mangled and mangled.startswith(("_Z", "__Z")) and demangle(mangled + "_") != \
            mangled + "_":
        d = demangle(mangled + "_")  # a trailing underscore that Markdown ate with the first
    if d == mangled and mangled.startswith(("_Z", "__Z")):
        d = _namespace_from_mangled(mangled) + mangled  # undemanglable: keep its namespace
    if re.match(r"_{1,2}cudaRegisterLinkedBinary", mangled):
        return SymbolInfo(mangled, d, "own",
                          "the registration stub of relocatable device code (nvcc -rdc=true): "
                          "the device-link step (nvcc -dlink, or CUDA_SEPARABLE_COMPILATION / "
                          "CUDA_RESOLVE_DEVICE_SYMBOLS) is missing from the build", (4, 3),
                          "OD301")
    special, core = _strip_special(d)
    if not special and re.match(r"_{1,2}ZT[IVS]", mangled):
        special = {"I": "typeinfo", "V": "vtable", "S": "typeinfo name"}[
            mangled.lstrip("_")[2]]
    lib_kind = path_kind(library) if library else set()
    owner = "own"
    # a function template's instantiation demangles with its return type first
    # ("double* at::TensorBase::data_ptr<double>() const"): its owner is the qualified name after
    scoped = _TEMPLATE_RETURN.sub("", core, count=1) if "<" in core else core
    for name, rx in _FRAMEWORK_NS:
        if rx.match(core) or rx.match(scoped):
            owner = name
            break
    else:
        for name, rx in _FRAMEWORK_C:
            if rx.match(core):
                owner = name
                break
        else:
            if _CXX_RT.search(core) or mangled.startswith(("_ZNSt", "_ZNKSt", "_ZSt")):
                owner = "cxx-runtime"
            elif _GLOBAL_CXX_FUNCTION.match(mangled):
                # a C++ function at global scope (mangled, no namespace): CUDA's, the BLAS/MKL/
                # OpenMP and CPython APIs are extern "C" (never mangled), so whatever its name
                # says (cutlass_…, cublas_…), it is a function of the library's own code
                owner = "own"
            elif _CUDA_RT_INTERNAL.match(core):
                owner = "cuda-runtime"
            elif _TENSORRT_C.match(core):
                owner = "tensorrt"
            elif _CUDA_C.match(core):
                owner = "cuda"
            elif _THIRD_PARTY.match(core):
                owner = "third-party"
            elif _PY_C.match(core):
                owner = "python"
    if owner == "torch" and (_TORCH_PYTHON.match(core) or "type_caster<at::Tensor" in core) \
            and not lib_kind & {"framework-lib"}:
        # defined by torch's Python extension (libtorch_python / torch._C), which only
        # `import torch` loads into the process
        return SymbolInfo(mangled, d, owner,
                          "a symbol of torch's Python bindings (libtorch_python), which `import "
                          "torch` loads: the extension was imported before torch (or loaded "
                          "outside a Python process that imported it), or its link left "
                          "libtorch_python out", (5, 4), "OD505")
    if owner in ("torch", "tensorflow", "abseil", "paddle", "oneflow", "mindspore", "onnxruntime"):
        fw = "TensorFlow" if owner in ("tensorflow", "abseil") else owner
        if lib_kind & {"framework-lib"} and ("__cxx11" in mangled + d or
                                             _OLD_ABI_STRING.search(d)):
            # a std::string in the signature (read from the mangled name when the demangler
            # rejects it): the library in the framework's directory and the framework disagree
            # on libstdc++'s dual ABI before anything else
            abi = "new (cxx11)" if "__cxx11" in mangled + d else "old (pre-cxx11)"
            return SymbolInfo(mangled, d, owner,
                              f"a {fw} function taking std::string in the {abi} C++ ABI: the "
                              f"library and {fw}'s own libraries were built with different "
                              "_GLIBCXX_USE_CXX11_ABI settings (a binary for the other ABI "
                              f"next to {fw}), or two installs of {fw} are mixed", (3, 2, 4),
                              "OD303")
        if lib_kind & {"framework-lib"}:
            return SymbolInfo(mangled, d, owner,
                              f"a {fw} function missing from {fw}'s own library: two "
                              f"installs of {fw} mixed (an older copy found first on the search "
                              "path) or an incomplete upgrade", (2, 3, 4), "OD201")
        if "std::__cxx11::" not in d and _OLD_ABI_STRING.search(d) and owner != "abseil":
            return SymbolInfo(mangled, d, owner,
                              f"a {fw} function taking std::string in the old C++ ABI "
                              f"(_GLIBCXX_USE_CXX11_ABI=0): the library and {fw} disagree on "
                              "the C++ ABI (or were built for different releases)", (3,), "OD303")
        if owner == "tensorflow" and special in ("typeinfo", "vtable", "typeinfo name"):
            return SymbolInfo(mangled, d, owner,
                              f"the {special} of a TensorFlow class: only libtensorflow_framework "
                              "exports it, so the op library was not linked against it "
                              "(-ltensorflow_framework missing from the link)", (4, 3), "OD301")
        if owner == "tensorflow" and "Eigen::GpuDevice" in d:
            return SymbolInfo(mangled, d, owner,
                              "a GPU functor of the op itself (declared in the op's .cc, defined "
                              "in its .cu.cc): the CUDA part of the op was not compiled or not "
                              "linked in", (4, 3), "OD301")
        if lib_kind & {"build-tree"}:
            return SymbolInfo(mangled, d, owner,
                              f"a {fw} function, wanted by a library in a build tree: the build "
                              "used other headers than the installed framework, or is stale",
                              (3, 4), {"abseil": "OD341", "tensorflow": "OD342"}.get(
                                  owner, "OD304"))
        what = {"abseil": "an abseil (absl::lts_*) function: TensorFlow's bundled abseil release "
                          "differs from the one the library was built with — built against "
                          "another TensorFlow"}.get(
            owner, f"a {fw} function: built against another {fw} release (or build)")
        # The code `opdoctor check` gives the same fault: OD304 is torch's.
        code = {"abseil": "OD341", "tensorflow": "OD342"}.get(owner, "OD304")
        return SymbolInfo(mangled, d, owner, what, (3, 2), code)
    if owner == "cxx-runtime":
        return SymbolInfo(mangled, d, owner,
                          "a C++ standard library function: the libstdc++ loaded is older than "
                          "the one the library was built with (or another copy is found first)",
                          (3, 2), "OD302")
    if owner == "cuda":
        return SymbolInfo(mangled, d, owner,
                          "a CUDA library function: another release of that CUDA library is "
                          "found first on the search path (or the installed one is too old)",
                          (2, 3), "OD312")
    if owner == "tensorrt":
        return SymbolInfo(mangled, d, owner,
                          "a TensorRT entry point: the TensorRT loaded is of another release "
                          "than the one the library was built for (each ONNX Runtime or "
                          "framework release names the TensorRT it needs)", (3, 2), "OD312")
    if owner == "cuda-runtime":
        return SymbolInfo(mangled, d, owner,
                          "a CUDA runtime internal: the code was compiled by a newer CUDA "
                          "toolkit than the libcudart that is loaded", (3, 2), "OD312")
    if owner == "third-party" and re.match(r"(?:omp_|GOMP_|__kmpc_|kmp_)", core):
        return SymbolInfo(mangled, d, owner,
                          "an OpenMP runtime function: the library was compiled with OpenMP but "
                          "not linked against its runtime (-fopenmp / -lgomp missing from the "
                          "link), or expects another OpenMP runtime (libgomp vs libiomp5)",
                          (4, 3), "OD301")
    if owner == "third-party" and not lib_kind & {"build-tree", "torch-extensions"}:
        return SymbolInfo(mangled, d, owner,
                          "a function of a third-party library (MKL, OpenMP, ncurses, OpenSSL, "
                          "protobuf, OpenCV …): the copy of that library that is loaded is "
                          "another release than the one the binary was built with, or another "
                          "copy is found first", (3, 2), "OD301")
    if owner == "python" and _PY_PATCH_API.match(core):
        # a CPython API function that a *patch* release added (3.6.1 turned the PySlice_…
        # macros into exported functions): wheels built with a later patch release need it, the
        # older patch release of the same Python minor lacks it — not another interpreter
        return SymbolInfo(mangled, d, owner,
                          "a CPython API function added in a later patch release of the same "
                          "Python (3.6.1 / 3.5.4 export it, 3.6.0 does not): the interpreter is "
                          "an older patch release than the one the binary was built with — "
                          "upgrade the interpreter (or build the package with it)", (3, 5),
                          "OD503")
    if owner == "python" and core.startswith("PyInit_"):
        # not the interpreter's API but the module's own entry point, named after the file
        return SymbolInfo(mangled, d, owner,
                          "the extension module's init function, which Python derives from "
                          "the file name: the module was compiled under another name, or the "
                          "file renamed", (4, 5), "OD416")
    if owner == "python":
        return SymbolInfo(mangled, d, owner,
                          "a CPython API function: built for another Python (or not loaded "
                          "into a Python process)", (5, 3), "OD503")
    if owner in ("own", "third-party") and _NVIDIA_LIB.search(library):
        # the library that wants it is one of NVIDIA's own (TensorRT, cuDNN, cuBLAS …): its
        # companion library that was loaded is of another release
        return SymbolInfo(mangled, d, owner,
                          "a function NVIDIA's own library (" + library.rsplit("/", 1)[-1]
                          + ") expects from a companion library: the CUDA/cuDNN/TensorRT "
                          "libraries loaded are of different releases (or another copy is found "
                          "first)", (3, 2), "OD312")
    if owner in ("own", "third-party") and not lib_kind & {"build-tree", "torch-extensions"} \
            and ("std::__cxx11::" in d or _OLD_ABI_STRING.search(d)):
        # a std::string in the signature: the two sides of the link may disagree on libstdc++'s
        # dual ABI (_GLIBCXX_USE_CXX11_ABI) — the classic reason such a symbol is "missing"
        # although the library that defines it is there
        abi = "the new (cxx11)" if "std::__cxx11::" in d else "the old (pre-cxx11)"
        return SymbolInfo(mangled, d, owner,
                          f"a function taking std::string in {abi} C++ ABI: the library that "
                          "defines it was built with the other _GLIBCXX_USE_CXX11_ABI setting "
                          "(or is another release); an incomplete build is the alternative",
                          (3, 4), "OD303")
    if "torch-extensions" in lib_kind or "build-tree" in lib_kind:
        return SymbolInfo(mangled, d, owner,
                          "the library's own (or a bundled dependency's) function, in a local "
                          "build: a source file or static library left out of the link, or a "
                          "stale object from an earlier build", (4, 3), "OD301")
    return SymbolInfo(mangled, d, owner,
                      "the library's own (or a bundled dependency's) function: an incomplete "
                      "build — a source file (often the CUDA half) or a -l flag left out of the "
                      "link — or a build against other headers", (4, 3), "OD301")


# ------------------------------------------------------------------ paths
_SYSTEM_DIR = re.compile(r"^(?:/usr)?(?:/local)?/lib(?:64|32)?(?:/[\w.-]{1,60}-linux-gnu)?/"
                         r"[^/]{1,200}$|^/usr/local/[\w.-]{1,60}/lib(?:64)?/")
# a conda environment brings its own libstdc++/CUDA runtime; a venv does not
_ENV_DIR = re.compile(r"(?:ana|mini|micro)(?:conda|forge|mamba)\d?|/envs/|/conda/|/mambaforge/")
_FRAMEWORK_LIB = re.compile(r"/(?:torch/lib|tensorflow(?:_core)?|paddle/(?:base|fluid|libs)|"
                            r"onnxruntime/capi|mindspore/lib|oneflow)/[^/]{1,200}$")


def path_kind(path: str) -> set[str]:
    """Tags for a file path: installed, source-tree, build-tree, torch-extensions, system,
    env, windows, framework-lib."""
    tags: set[str] = set()
    p = path.strip().strip("'\"")
    if re.match(r"^[A-Za-z]:\\|^\\\\|^\.?[\w.-]{0,80}\\", p) or ("\\" in p and "/" not in p):
        tags.add("windows")
    if re.search(r"[/\\](?:site|dist)-packages[/\\]|\.egg[/\\]", p):
        tags.add("installed")
    elif "/" in p and re.search(r"[/\\](?:lib|lib64)[/\\]python\d", p) is None:
        if re.search(r"/(?:build|cmake-build[\w-]{0,40}|_build|out)/", p):
            tags.add("build-tree")
        elif not _SYSTEM_DIR.search(p) and not p.startswith(("/usr/", "/lib", "/opt/conda/lib/")):
            tags.add("source-tree")
    if re.search(r"torch_extensions[/\\]", p):
        tags.add("torch-extensions")
        tags.discard("source-tree")
    if _SYSTEM_DIR.search(p):
        tags.add("system")
    if _ENV_DIR.search(p):
        tags.add("env")
    if _FRAMEWORK_LIB.search(p):
        tags.add("framework-lib")
    return tags


# ------------------------------------------------------------------ versions, variants
_TAG = re.compile(r"\+(cpu|cu\d{2,4}|rocm[\d.]{1,10})\b")


def variant_of(s: str) -> str:
    """'cpu', 'cuda' or 'rocm' for a version string with a local tag (else '')."""
    m = _TAG.search(s)
    if not m:
        return ""
    t = m.group(1)
    return "cpu" if t == "cpu" else ("rocm" if t.startswith("rocm") else "cuda")


def release_of(s: str) -> str:
    """The release number of a version string ('2.1.2+cu121' → '2.1.2')."""
    m = re.search(r"\d{1,2}\.\d{1,3}(?:\.\d{1,3})?", s)
    return m.group(0) if m else ""


def compare_pair(built: str, have: str) -> str:
    """Which axis differs in a built-for / have pair: 'variant', 'release', or ''."""
    vb, vh = variant_of(built), variant_of(have)
    if vb and vh and vb != vh:
        return "variant"
    rb, rh = release_of(built), release_of(have)
    if rb and rh and rb != rh:
        return "release"
    if vb != vh and (vb or vh):
        return "variant"
    return ""


# ------------------------------------------------------------------ how the text was pasted
_ENTITIES = {"&#39;": "'", "&#x27;": "'", "&quot;": '"', "&lt;": "<", "&gt;": ">", "&amp;": "&",
             "\\'": "'", '\\"': '"'}
# glibc's translated loader messages (a localised system prints these), mapped to the C locale
_LOCALISED = (
    (re.compile(r"无法打开共享对象文件|無法開啟共享物件檔案|共有オブジェクトファイルを開けません|"
                r"[Kk]ann die Shared-Object-Datei nicht öffnen|ne peut ouvrir le fichier d'objet "
                r"partagé|no se puede abrir el archivo del objeto compartido|невозможно открыть "
                r"разделяемый объектный файл|impossibile aprire il file oggetto condiviso"),
     "cannot open shared object file"),
    (re.compile(r"未定义的?符号|未定義のシンボル|[Nn]icht definiertes Symbol|symbole non défini|"
                r"símbolo no definido|неопределённый символ|неопределенный символ"),
     "undefined symbol"),
    (re.compile(r"没有那个文件或目录|沒有此一檔案或目錄|そのようなファイルやディレクトリはありません|"
                r"Datei oder Verzeichnis nicht gefunden|Aucun fichier ou dossier de ce type|"
                r"No existe el archivo o el directorio|Нет такого файла или каталога"),
     "No such file or directory"),
    # Windows' own text for ERROR_MOD_NOT_FOUND (126) and ERROR_PROC_NOT_FOUND (127), as a
    # localised Windows prints them (the simplified-Chinese form is matched by the pattern)
    (re.compile(r"指定されたモジュールが見つかりません|找不到指定的模組|"
                r"지정된 모듈을 찾을 수 없습니다|"
                r"Das angegebene Modul wurde nicht gefunden|Le module spécifié est introuvable|"
                r"No se puede encontrar el módulo especificado|Не найден указанный модуль|"
                r"Impossibile trovare il modulo specificato|Não foi possível encontrar o módulo "
                r"especificado"),
     "The specified module could not be found"),
    (re.compile(r"指定されたプロシージャが見つかりません|지정된 프로시저를 찾을 수 없습니다|"
                r"Die angegebene Prozedur wurde nicht gefunden|La procédure spécifiée est "
                r"introuvable|No se encontró el proceso especificado|Не найдена указанная "
                r"процедура|Impossibile trovare la procedura specificata|Não foi possível "
                r"encontrar o procedimento especificado"),
     "The specified procedure could not be found"),
)


_ESCAPED_NL = re.compile(r"(?:\\r)?\\n(?=\s|$|\\n|Traceback|File \"|During handling|The above|"
                         r"[A-Z][A-Za-z]{0,40}(?:Error|Exception|Warning)\b|\w{1,60}Error:)")


# What a terminal, a CI runner or a forum puts around the program's own lines: colour codes,
# and a prefix on every line — a runner's timestamp (GitHub Actions, GitLab), BuildKit's
# "#12 3.456", pytest's "E   ", a Markdown quote "> ".
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,20}[A-Za-z]|\x1b\][^\x07\x1b]{0,200}(?:\x07|\x1b\\)")
_LINE_PREFIXES = (
    re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)? ?"),
    re.compile(r"^\[\d\d:\d\d:\d\d(?:\.\d{1,6})?\] "),
    re.compile(r"^#\d{1,4} \d{1,6}\.\d{1,4} "),
    re.compile(r"^E(?: {3,8}|$)"),
    re.compile(r"^> ?"),
)
# Widths terminals wrap at: a line of exactly that length continued on the next line.
_WRAP_WIDTHS = frozenset((80, 100, 120, 132, 140, 150, 160, 180, 200, 250))


def _strip_prefixes(lines: list[str]) -> list[str]:
    """Remove a per-line decoration that most lines carry (each kind at most once)."""
    body = [ln for ln in lines if ln.strip()]
    for rx in _LINE_PREFIXES:
        if body and sum(1 for ln in body if rx.match(ln)) * 10 >= len(body) * 6:
            lines = [rx.sub("", ln, count=1) for ln in lines]
            body = [ln for ln in lines if ln.strip()]
    return lines


def join_at_width(lines: list[str], width: int,
                  keep: Callable[[str, str], bool] | None = None) -> list[str]:
    """The lines with each one of exactly ``width`` characters joined with the next, as a
    terminal of that width broke them; ``keep(previous, line)`` True leaves a line apart. A
    blank line is never a continuation: a line that merely has that length (a traceback's
    `OSError: /tmp/…/abi0.so: undefined symbol: …` of 140 characters) keeps the paragraph
    break after it, and its symbol is not glued to the "The above exception …" that follows."""
    out: list[str] = []
    joining = False
    for ln in lines:
        if joining and out and ln.strip() and not (keep and keep(out[-1], ln)):
            out[-1] += ln
        else:
            out.append(ln)
        joining = len(ln) == width
    return out


def _unwrap(lines: list[str]) -> list[str]:
    """Join lines a terminal broke at its width: the longest lines all have one of the usual
    widths, and each is continued by the next. (Any width with two or more lines at it was
    tried: it joins lines that merely have the same length.)"""
    longest = max((len(ln) for ln in lines), default=0)
    return join_at_width(lines, longest) if longest in _WRAP_WIDTHS else lines


def undecorate(text: str) -> str:
    """The program's lines without what was put around them when they were shown or pasted."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    lines = text.replace("\r\n", "\n").split("\n")
    if len(lines) > 2000:
        return text
    lines = [ln.rstrip() for ln in _unwrap(_strip_prefixes(lines))]
    # A block indented as a whole (a Markdown code block, a quoted log): its own indentation
    # (a traceback's) is what the patterns read.
    margin = min((len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip()), default=0)
    if margin:
        lines = [ln[margin:] for ln in lines]
    return "\n".join(lines)


def normalise(text: str) -> str:
    """The message as the program printed it, from the way it was pasted: HTML entities and
    escaped quotes of an issue page or a JSON log, a log that kept its newlines as ``\\n``
    (a one-line JSON field, a CI annotation), and glibc's translated loader messages."""
    text = undecorate(text)
    if "&" in text or "\\" in text:
        for k, v in _ENTITIES.items():
            text = text.replace(k, v)
    if "\\n" in text and text.count("\n") < 3:
        # only where a line break is plausible: a Windows path's "\\lib\\nvrtc…" stays whole
        text = _ESCAPED_NL.sub("\n", text)
    if not text.isascii():
        for rx, english in _LOCALISED:
            text = rx.sub(english, text)
    return text


# ------------------------------------------------------------------ general extraction
SYMBOL = re.compile(r"(?<![\w$])(_{1,2}Z[A-Za-z0-9_$]{2,2000})")
LIBRARY = re.compile(r"(?<![\w/.\\-])((?:[A-Za-z]:\\|/|\./|\.\./|~/|\.\.\./|…/)?"
                     r"(?:[\w.+-]{1,200}[/\\]){0,40}[\w.+-]{0,200}?\.(?:so(?:\.[\d.]{1,20})?"
                     r"|dylib|dll|pyd))(?![\w])")
ARCH = re.compile(r"\b(sm_\d{2,3}a?|compute_\d{2,3})\b")
GLIBC_VERSION = re.compile(r"\b((?:GLIBCXX|GLIBC|CXXABI|GCC)_[\d.]{1,12})")
OP = re.compile(r"(?<![\w:])([a-z_][a-z0-9_]{0,60}::[A-Za-z_][\w.]{0,120})(?![\w:])")
FRAMEWORK_WORDS = (
    ("pytorch", re.compile(r"\btorch\b|\bc10\b|TORCH_LIBRARY|torchvision|\bat::")),
    ("tensorflow", re.compile(r"tensorflow|\btf\.|load_op_library|TFLite|tflite")),
    ("onnxruntime", re.compile(r"onnxruntime|ORT_|OrtException|ExecutionProvider")),
    ("paddle", re.compile(r"[Pp]addle|\bphi::")),
    ("oneflow", re.compile(r"oneflow|OperatorConf")),
    ("mindspore", re.compile(r"[Mm]ind[Ss]pore")),
)
_CPY_TAG = re.compile(r"\.cpython-3(\d{1,2})[\w-]{0,40}\.so\b")
_PY_DIR = re.compile(r"python3\.(\d{1,2})[/\\]")


def python_versions(text: str) -> tuple[set[str], set[str]]:
    """(Pythons the text's compiled modules were built for, Pythons whose directories appear)."""
    built = {"3." + m for m in _CPY_TAG.findall(text)}
    ran = {"3." + m for m in _PY_DIR.findall(text)}
    return built, ran


def extract(text: str) -> dict[str, Any]:
    """The entities of a whole text (bounded: the first five of each kind)."""
    ent: dict[str, Any] = {}
    libs = [x for x in dict.fromkeys(m.group(1) for m in LIBRARY.finditer(text))][:5]
    if libs:
        ent["libraries"] = libs
    for key, rx in (("archs", ARCH), ("versions", GLIBC_VERSION), ("ops", OP)):
        found = list(dict.fromkeys(rx.findall(text)))[:5]
        if found:
            ent[key] = found
    tags = list(dict.fromkeys(m.group(0) for m in re.finditer(
        r"\b\d{1,2}\.\d{1,3}(?:\.\d{1,3})?\+(?:cpu|cu\d{2,4}|rocm[\d.]{1,10})\b", text)))[:5]
    if tags:
        ent["build_tags"] = tags
    fws = [name for name, rx in FRAMEWORK_WORDS if rx.search(text)]
    if fws:
        ent["frameworks"] = fws
    built, ran = python_versions(text)
    if built:
        ent["python_built_for"] = sorted(built)
    if ran:
        ent["python_dirs"] = sorted(ran)
    return ent
