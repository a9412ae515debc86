"""`opdoctor explain` on real messages (tests/explain_realworld), and the issue #16 behaviours.

The corpus was split once, by thread, into a dev half (patterns are written from it) and a test
half (read only by benchmarks/bench_explain.py, which prints aggregate numbers). Here: the
split's integrity (structure only — no test message is read), one dev case per pattern family,
an accuracy floor on the dev half, and the behaviours the issue lists, on their message forms.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from opdoctor.explain import explain_text, explanation_dict, load_patterns
from opdoctor.explain.matcher import (
    PRIOR_ORDER,
    KnowledgeBaseError,
    _needles,
    _unbounded_repeat,
)
from tests.conftest import ROOT
from tests.torchfork import run_python

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = ROOT / "tests" / "explain_realworld"


def _split_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("explain_split", CORPUS / "split.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cases(half: str) -> list[dict[str, object]]:
    cases: list[dict[str, object]] = tomllib.loads(
        (CORPUS / f"{half}.toml").read_text(encoding="utf-8"))["case"]
    return cases


DEV = _cases("dev")
DEV_BY_THREAD = {str(c["thread"]): c for c in DEV}


# ------------------------------------------------------------------ the split
def test_split_integrity() -> None:
    """Every case sits in the half its thread's hash names; no thread is in both halves; every
    case has a thread id and a cause 1–5 (only these fields of the test half are read)."""
    half = _split_module().half
    threads: dict[str, set[str]] = {"dev": set(), "test": set()}
    for name in ("dev", "test"):
        for c in _cases(name):
            thread = str(c.get("thread", ""))
            # A GitHub thread (owner/repo#N) or a forum / Q&A page by its normalised URL.
            assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+|https://[\w.-]+/[^\s?#]+", thread), thread
            assert c.get("cause") in (1, 2, 3, 4, 5), thread
            assert all(a in (1, 2, 3, 4, 5) for a in c.get("alt", [])), thread  # type: ignore[attr-defined]
            assert half(thread) == name, f"{thread} is in {name}.toml, its hash says {half(thread)}"
            threads[name].add(thread)
    assert not threads["dev"] & threads["test"]
    assert len(threads["dev"]) >= 150 and len(threads["test"]) >= 100


# ------------------------------------------------------------------ one dev case per family
FAMILY_SAMPLES = [
    ("vincefn/pyvkfft#23", "build.error-building-extension"),
    ("triton-lang/triton#2883", "cuda.library-not-found"),
    ("csuhan/ReDet#49", "cuda.no-kernel-image"),
    ("facebookresearch/pytorch3d#1563", "loader.cannot-open"),
    ("Ben-Louis/Deep-Image-Analogy-PyTorch#8", "loader.invalid-elf-header"),
    ("tensorflow/decision-forests#223", "loader.not-found-windows"),
    ("tensorflow/tensorflow#12895", "loader.symbol-not-found-macos"),
    ("pytorch/pytorch#13541", "loader.undefined-reference"),
    ("rusty1s/pytorch_cluster#100", "loader.undefined-symbol"),
    ("davisking/dlib#2719", "loader.version-not-defined"),
    ("pytorch/pytorch#8318", "loader.version-not-found"),
    ("f0cal/google-coral#43", "loader.wrong-elf-class"),
    ("Oneflow-Inc/oneflow#3509", "oneflow.op-not-registered"),
    ("microsoft/onnxruntime#3203", "ort.custom-op"),
    ("microsoft/onnxruntime#1127", "ort.native-import"),
    ("microsoft/onnxruntime#967", "ort.no-implementation"),
    ("Naozumi520/g2pW-Cantonese#1", "ort.provider-not-available"),
    ("microsoft/onnxruntime-extensions#764", "ort.register-custom-ops"),
    ("open-mmlab/PIA#30", "pair.built-for-you-have"),
    ("pytorch/pytorch#80637", "pair.compiled-linked"),
    ("geocine/sd-easy-mode#17", "pair.version-guard"),
    ("lxxue/FRNN#9", "python.cannot-import-name"),
    ("czczup/ViT-Adapter#13", "python.compiled-module-attribute"),
    ("pytorch/pytorch#1633", "python.name-c-not-defined"),
    ("vllm-project/vllm#4229", "python.no-module-named"),
    ("pytorch/vision#7036", "python.source-root"),
    ("tensorflow/io#1817", "tf.filesystem-scheme"),
    ("salesforce/ctrl#22", "tf.no-opkernel"),
    ("google/sentencepiece#309", "tf.notfound-path"),
    ("tensorflow/text#551", "tf.notfound-undefined-symbol"),
    ("tensorflow/addons#1554", "tf.op-not-registered"),
    ("tensorflow/flutter-tflite#250", "tflite.old-runtime"),
    ("asus4/tf-lite-unity-sample#253", "tflite.op-not-in-resolver"),
    ("pytorch/pytorch#79812", "torch.could-not-run-backend"),
    ("torch/cutorch#318", "torch.cuda-version-mismatch"),
    ("Lightning-AI/lightning-thunder#2530", "torch.fake-kernel"),
    ("facebookresearch/maskrcnn-benchmark#230", "torch.kernel-compiled-out"),
    ("pytorch/vision#1405", "torch.no-such-operator"),
    ("huggingface/diffusers#9109", "torch.op-does-not-exist"),
    ("pytorch/functorch#61", "torch.kernel-override-warning"),
    ("pytorch/pytorch#129370", "torch.schema-parse"),
    ("huggingface/kernel-builder#11", "torch.single-torch-library"),
    ("pytorch/pytorch#111654", "torch.torchscript-unknown-op"),
    ("ultralytics/yolov5#5511", "torch.vision-ops-mismatch"),
    ("PaddlePaddle/PaddleFormers#2284", "windows.load-error"),
    ("pytorch/pytorch#145394", "torch.schema-missing"),
    ("PaddlePaddle/Paddle#69403", "loader.undefined-symbol"),  # inside Paddle's dlopen wrapper
    ("PaddlePaddle/Paddle#77220", "build.tooling"),
    ("microsoft/onnxruntime#28523", "ort.api-version"),
    ("vllm-project/vllm-ascend#1144", "loader.undefined-symbol"),  # std::string: the C++ ABI
    ("PaddlePaddle/Paddle#42225", "paddle.avx-core"),
    ("mindspore-ai/mindspore#55", "mindspore.kernel-select"),
    ("tensorflow/text#173", "tf.op-not-registered"),  # external/org_tensorflow: a serving binary
    ("tensorflow/models#4405", "tf.duplicate-device-factory"),
    ("microsoft/onnxruntime-genai#555", "ort.native-import"),  # 1114 first, CUDA_PATH after
    ("mindspore-ai/community#4", "mindspore.kernel-select"),  # the CPU kernel factory's form
    ("abetlen/llama-cpp-python#568", "python.ctypes-base-name"),
    ("microsoft/onnxruntime#17510", "cuda.library-not-found"),  # cuDNN 8's zlibwapi.dll
    ("microsoft/onnxruntime#20745", "loader.cannot-open"),  # a hard-wrapped provider line
    ("PaddlePaddle/PaddleOCR#1521", "paddle.op-unknown"),  # 2.0's "has not been registed"
    ("facebookresearch/faiss#984", "python.no-module-named"),  # SWIG's _swig<name> is built
    ("xingyizhou/CenterNet#146", "python.no-module-named"),  # an NMS kernel compiled in place
]


@pytest.mark.parametrize(("thread", "family"), FAMILY_SAMPLES, ids=[f for _, f in FAMILY_SAMPLES])
def test_family_sample(thread: str, family: str) -> None:
    case = DEV_BY_THREAD[thread]
    e = explain_text(str(case["text"]))
    assert e.subcause == family, (e.subcause, e.title)
    assert e.cause == case["cause"], (e.cause, [a.cause for a in e.ranked], e.why)


def test_dev_accuracy_floor() -> None:
    """The dev half must not regress (the test half's numbers are in the README only)."""
    n = len(DEV)
    top1 = top2 = nothing = 0
    for c in DEV:
        e = explain_text(str(c["text"]))
        order = [a.cause for a in e.ranked]
        top1 += bool(order) and order[0] == c["cause"]
        top2 += c["cause"] in order[:2]
        nothing += e.cause == 0
    assert nothing == 0
    # 0.88 until the twelfth round (2026-12-07), 0.87 until the thirteenth (2026-12-08): each
    # round's fresh threads enter below the half's average (48–73 % top-1 before their rules)
    # and leave below it; with the 875 of the fourteenth the half is at 86.6 % / 95.4 % — a
    # floor that guards the rules, not the corpus's mix
    assert top1 / n >= 0.865, f"dev top-1 {top1}/{n}"
    assert top2 / n >= 0.95, f"dev top-2 {top2}/{n}"


# ------------------------------------------------------------------ behaviours of issue #16
def test_ranked_json_with_alternatives_and_concrete_check() -> None:
    e = explain_text("ImportError: /opt/env/lib/python3.11/site-packages/foo/_C.so: undefined "
                     "symbol: _ZN3foo6detail6helperEv")
    doc = explanation_dict(e)
    assert doc["cause"] == 4  # the package's own code: an incomplete build
    assert [a["cause"] for a in doc["alternatives"]][:1] == [3]
    assert all(set(a) == {"cause", "confidence", "why"} for a in doc["alternatives"])
    assert 0 < doc["alternatives"][0]["confidence"] < doc["score"] <= 1
    assert doc["next_steps"][0] == "opdoctor check /opt/env/lib/python3.11/site-packages/foo/_C.so"
    assert "opdoctor check /opt/env/lib/python3.11/site-packages/foo/_C.so" in doc["decides"]
    assert doc["entities"]["symbols"][0]["owner"] == "own"
    json.dumps(doc)


@pytest.mark.parametrize(("mangled", "owner", "cause"), [
    ("_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "torch", 3),  # old-ABI std::string
    ("_ZNK3c1010TensorImpl36is_congituous_nondefault_polity_implENX_12MemoryFormatE", "torch", 3),
    ("_ZTIN10tensorflow8OpKernelE", "tensorflow", 4),  # typeinfo: not linked to the framework
    ("_ZN4absl12lts_2023080212log_internal9LogMessageD1Ev", "abseil", 3),
    ("_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv", "cxx-runtime", 3),
    ("cudnnSetConvolutionGroupCount", "cuda", 2),
    ("_Z15helper_functionv", "own", 4),
    # torch's stable C ABI: extern "C", exported by a newer libtorch only (macOS adds the "_")
    ("aoti_torch_abi_version", "torch", 3),
    ("_torch_library_impl", "torch", 3),
    ("opal_cuda_check_bufs", "third-party", 3),  # an Open MPI plugin of another install
])
def test_symbol_owner_decides(mangled: str, owner: str, cause: int) -> None:
    from opdoctor.explain.entities import classify_symbol

    info = classify_symbol(mangled, "/opt/x/libop.so")
    assert (info.owner, info.causes[0]) == (owner, cause), info


@pytest.mark.parametrize(("text", "cause"), [
    # torch's schema parser aborting in a static initialiser (not a generic abort)
    ("terminate called after throwing an instance of 'torch::jit::ErrorReport'\n  what():  \n"
     "Unknown type name 'double':\nUse `float` instead of `double` in an operator's schema "
     "string.\nAborted (core dumped)", 1),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA "
     "major versions. PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1.", 3),
    ("ImportError: /opt/x/_C.so: ELF load command address/offset not page-aligned", 4),
    ("OSError: /opt/x/libgomp.so.1: cannot load any more object with static TLS", 5),
    ("RuntimeError: Tried to instantiate class 'myns.MyStack', but it does not exist! Ensure "
     "that it is registered via torch::class_", 1),
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
     "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)", 3),
    ("RuntimeError: For 'Custom' on CPU, error occurs when fetching function 'add' from "
     "./add.so", 1),  # MindSpore 2.10, verified on tests/test_mindspore.py's fixtures: a typo,
    # a missing extern "C" or another signature (OD160-OD162); a broken build is the alternative
    ("Check failed: Cannot find op_type_name: my_add", 1),
    ("InvalidArgumentError: No OpKernel was registered to support Op 'MyOp' used by {{node x}} "
     "with these attrs: [T=DT_FLOAT]\nRegistered devices: [CPU]", 1),
    # a mangled name whose underscores an issue's Markdown ate: still the package's own code
    ("ValueError: (InvalidArgument) Fail to open library: /e/site-packages/paddle_custom_device/"
     "libpaddle-custom-npu.so with error: /e/site-packages/paddle_custom_device/libpaddle-custom"
     "-npu.so: undefined symbol: ZN13custom_kernel14GatherNdKernelIbN3phi13CustomContextEEEvRKT0"
     "_RKNS1_11DenseTensorES8_PS6\n[Hint: dso_handle should not be null.] (at /paddle/paddle/"
     "fluid/platform/init.cc:152)", 4),
    # a glibc-versioned symbol: built for another glibc release
    ("ImportError: /e/site-packages/paddle/fluid/core_avx.so: undefined symbol: _dl_sym, version "
     "GLIBC_PRIVATE", 3),
    # relocatable device code without the device-link step
    ("ImportError: /x/ext/_C.so: undefined symbol: __cudaRegisterLinkedBinary_54_tmpxft_0000"
     "1a3b_00000000_7_kernel_cpp1_ii_abc", 4),
    # the soname major against the installed major the text states
    ("cuda 12.1 installed\nFAIL : Failed to load library libonnxruntime_providers_cuda.so with "
     "error: libcublasLt.so.11: cannot open shared object file: No such file or directory", 3),
    ("CUDA Version: 11.8\nImportError: libcudart.so.11.0: cannot open shared object file: No "
     "such file or directory", 2),
    ("Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot "
     "open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/cuda-12.2"
     "/lib64", 3),
    # Windows forms: a missing entry point (another release), 0xc000007b (another architecture)
    ("The procedure entry point ?dtype@TensorImpl@c10@@QEBA?AVTypeMeta@caffe2@@XZ could not be "
     "located in the dynamic link library C:\\env\\Lib\\site-packages\\torchvision\\_C.pyd.", 3),
    ("无法定位程序输入点 ?xyz@@YAXXZ 于动态链接库 C:\\env\\Lib\\site-packages\\x\\_C.pyd 上。", 3),
    ("The application was unable to start correctly (0xc000007b). Click OK to close the "
     "application.", 4),
    # glibc's translated messages, HTML entities and JSON-escaped newlines as pasted
    ("ImportError: /a/b/_C.so: 未定义的符号: _ZN3c104impl3cow11cow_deleterEPv", 3),
    ("ImportError: libc10.so: 无法打开共享对象文件: 没有那个文件或目录", 5),
    ("NotFoundError: Op type not registered &#39;SentencepieceOp&#39; in binary running on h.", 5),
    ('{"log": "Traceback (most recent call last):\\n  File \\"x.py\\", line 1\\nImportError: '
     '/opt/x/libop.so: undefined symbol: _ZN5myops6helperEv\\n"}', 4),
    # onnxruntime's Python package without its core API: shadowed or two distributions
    ("AttributeError: module 'onnxruntime' has no attribute 'InferenceSession'", 5),
    ("ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi._pybind_state' "
     "(/home/u/.local/lib/python3.10/site-packages/onnxruntime/capi/_pybind_state.py)", 5),
    # a C++ loader looking up an op whose library was never loaded
    ("Error during testing: Could not find schema for custom_ops::selective_scan_fwd", 5),
    # a low-confidence top cause with one alternative stays on top
    ("Installed CUDA version 11.8 does not match the version torch was compiled with 12.1, "
     "unable to compile cuda/cpp extensions without a matching cuda version.", 3),
    # an op missing from a serving or non-Python host binary: registration, not an import
    ("docker run -p 8501:8501 tensorflow/serving\n... Not found: Op type not registered "
     "'RegexSplitWithOffsets' in binary running on 7f.", 1),
    ("Exception in thread \"main\" org.tensorflow.exceptions.TensorFlowException: Op type not "
     "registered 'SentencepieceOp' in binary running on host.", 1),
    ("ERROR: Regular TensorFlow ops are not supported by this interpreter. Make sure you "
     "apply/link the Flex delegate before inference.", 1),
    # a worker process's environment; an extension built for another Python
    ("(raylet) ModuleNotFoundError: No module named 'my_ops'", 5),
    ("ImportError: /opt/venv/lib/python3.8/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
     "linux-gnu.so: cannot open shared object file: No such file or directory", 5),
    # a CUDA library's symbol (nvJitLink) is the search path or a CUDA release, not own code
    ("ImportError: /e/site-packages/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: "
     "__nvJitLinkAddData_12_5, version libnvJitLink.so.12", 2),
    # incomplete builds: an old glibc's alignment wording, OpenMP not linked, a Linux .so on
    # Windows; a framework's own compiled module missing is the Python side
    ("OSError: /e/site-packages/torch_npu/lib/libtorch_npu.so: ELF load command address/offset "
     "not properly aligned", 4),
    ("ImportError: /x/site-packages/pkg/_lib.so: undefined symbol: omp_get_thread_num", 4),
    ("OSError: [WinError 126] The specified module could not be found. Error loading "
     "\"C:\\x\\site-packages\\pkg\\lib\\pkg_linux.so\" or one of its dependencies.", 4),
    ("ModuleNotFoundError: No module named 'oneflow._oneflow_internal'", 5),
    # TF: an op with no GPU kernel (1) is not TensorFlow without a GPU (3)
    ("InvalidArgumentError: Cannot assign a device for operation MyOp: Could not satisfy "
     "explicit device specification '/device:GPU:0' because no supported kernel for GPU devices "
     "is available.", 1),
    ("Could not satisfy explicit device specification '/device:GPU:0' because no devices "
     "matching that specification are registered in this process", 3),
    # ptxas too old for the GPU architecture asked for
    ("ptxas fatal   : Value 'sm_90' is not defined for option 'gpu-name'", 3),
    # TorchBind: the fully qualified class form, and a serialized model whose class library
    # was not loaded; an out-of-tree device type whose backend package was not imported
    ("RuntimeError: Tried to instantiate class '__torch__.torch.classes.my_classes.MyStack', "
     "but it does not exist! Ensure that it is registered via torch::class_", 1),
    ("RuntimeError: Unknown type name '__torch__.torch.classes.my_classes.MyStack':\n  File "
     "\"code/__torch__.py\", line 3", 5),
    ("RuntimeError: Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, "
     "fpga, ort, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of "
     "device string: npu", 5),
    # registration-layer forms: fake tensors, python overrides, a wrong signature, TF kernels
    ("torch._subclasses.fake_tensor.UnsupportedOperatorException: mylib.foo.default", 1),
    ("RuntimeError: This is not allowed since there's already a kernel registered from python "
     "overriding foo's behavior for CPU dispatch key and mylib namespace.", 1),
    ("RuntimeError: Tried to access or call an operator with a wrong signature.\n  operator: "
     "mylib::foo(Tensor x) -> Tensor", 1),
    ("NotFoundError: No registered 'ZeroOut' OpKernel for 'GPU' devices compatible with node "
     "{{node ZeroOut}}", 1),
    # the Python side: a local module shadowing the framework, a build without the framework
    # in its (isolated) environment, an extension linked to another libpython
    ("AttributeError: partially initialized module 'torch' has no attribute 'cuda' (most likely "
     "due to a circular import)", 5),
    ("AttributeError: module 'tensorflow' has no attribute 'load_op_library'\n  File \"/home/me/"
     "project/tensorflow.py\", line 1", 5),
    ("ModuleNotFoundError: No module named 'torch'\n  ERROR: Failed building wheel for flash-attn",
     5),
    ("Fatal Python error: _PyInterpreterState_Get(): no current interpreter", 5),
    # a musllinux wheel on glibc (survey 12's P3; bcrypt's real message)
    ("ImportError: libc.musl-x86_64.so.1: cannot open shared object file: No such file or "
     "directory", 4),
])
def test_issue_message_forms(text: str, cause: int) -> None:
    assert explain_text(text).cause == cause


@pytest.mark.parametrize("text", [
    "Segmentation fault (core dumped)",
    "Process finished with exit code -1073741819 (0xC0000005)",  # Windows access violation
    "python: ../nptl/pthread_mutex_lock.c:81: __pthread_mutex_lock: Assertion "
    "`mutex->__data.__owner == 0' failed.",
])
def test_runtime_crash_is_not_blamed_on_registration(text: str) -> None:
    e = explain_text(text)
    assert e.cause not in (0, 1) and e.confidence == "low"


def test_first_root_error_of_a_chain_wins() -> None:
    log = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
           "ImportError: /opt/op/libop.so: undefined symbol: _ZN3c104impl3cow11cow_deleterEPv\n"
           "\nDuring handling of the above exception, another exception occurred:\n\n"
           "Traceback (most recent call last):\n  File \"b.py\", line 9, in <module>\n"
           "ImportError: /opt/op2/libop.so: undefined symbol: _ZN5other4funcEv\n")
    e = explain_text(log)
    assert e.evidence[0].startswith("line 3:") and e.cause == 3


def test_build_failure_earlier_in_the_log_is_the_root() -> None:
    log = ("FAILED: fused_adam_frontend.o\nsubprocess.CalledProcessError: Command '['ninja', "
           "'-v']' returned non-zero exit status 1.\n\nImportError: /root/.cache/torch_extensions"
           "/py310_cu117/fused_adam/fused_adam.so: cannot open shared object file: No such file "
           "or directory\n")
    assert explain_text(log).cause == 4


def test_python_mismatch_from_entities() -> None:
    e = explain_text("File \"/usr/lib/python3.9/site-packages/x/__init__.py\", line 1\n"
                     "ModuleNotFoundError: No module named 'x._internal'\n(the build produced "
                     "_internal.cpython-312-x86_64-linux-gnu.so)")
    assert e.cause == 5 and "3.12" in e.title + e.why


def test_unknown_message_hint_names_the_library() -> None:
    e = explain_text("something odd happened near /opt/lib/libweird.so.3 today")
    assert e.subcause == "prior.loader" and e.confidence == "low"  # a base rate, said so
    assert "opdoctor check /opt/lib/libweird.so.3" in e.explanation
    assert e.next_steps[0].startswith("opdoctor check /opt/lib/libweird.so.3")
    assert "check it: opdoctor check it" not in e.explanation


# ------------------------------------------------------------------ patterns stay safe and fast
def test_patterns_are_bounded_and_linear_on_long_lines() -> None:
    assert _unbounded_repeat(r"a+b") and _unbounded_repeat(r"(?:x|y)*") and \
        _unbounded_repeat(r"a{2,}")
    assert not _unbounded_repeat(r"[+*]{0,3}\+") and not _unbounded_repeat(r"[^]*]{1,9}")
    hostile = ["a/" * 10000, "x" * 20000, "lib" + "a." * 9999 + "so", "_Z" + "9" * 19990,
               "File \"" + "/" * 19990, "undefined symbol: " + "(" * 19980]
    for p in load_patterns():
        t = time.perf_counter()
        for line in hostile:
            p.regex.search(line)
        assert time.perf_counter() - t < 1.0, p.id  # generous: a shared, loaded machine


def test_needles_never_hide_a_match() -> None:
    """A pattern skipped for lacking its needles must not have matched: check on the dev half."""
    for c in DEV:
        for line in str(c["text"]).splitlines():
            for p in load_patterns():
                if p.regex.search(line):
                    assert p.could_match(line), (p.id, line[:120])
    needles = _needles(r"foo(?:bar|bazz)") or []
    assert needles and all(any(n in m for n in needles) for m in ("foobar", "foobazz"))
    assert _needles(r"x?") is None


def test_the_needle_index_offers_exactly_the_patterns_that_could_match() -> None:
    """The per-line candidates (a 3-gram index of the needles) are the patterns whose
    could_match is true, in order: every dev line, short and non-ASCII lines, and a needle
    shorter than a gram."""
    from opdoctor.explain.matcher import Pattern, _index

    patterns = load_patterns()
    lines = [ln for c in DEV for ln in str(c["text"]).splitlines()]
    lines += ["", "a", ".s", "段错误 (核心已转储)", "rror", "x.so y", "CUDA cuda FAIL atal"]
    idx = _index(patterns)
    for line in lines:
        assert idx.candidates(line) == [p for p in patterns if p.could_match(line)], line[:120]
    extra = (*patterns[:3],
             Pattern("short", "torch", r"ab+c", 1, (), 1, "low", "", "", "", needles=("ab",)),
             Pattern("none", "torch", r"x", 1, (), 1, "low", "", "", ""))
    for line in ("xabc", "abc", "b", ""):
        assert _index(extra).candidates(line) == [p for p in extra if p.could_match(line)]


def test_knowledge_base_rejects_unbounded(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: object) -> None:
    from pathlib import Path

    from opdoctor.explain import matcher

    bad = Path(str(tmp_path)) / "patterns.toml"
    bad.write_text("[[pattern]]\nid = 'x'\nframework = 'loader'\nregex = '''a.+b'''\ncause = 2\n"
                   "title = 't'\nexplanation = 'e'\n", encoding="utf-8")
    monkeypatch.setattr(matcher, "PATTERNS_FILE", bad)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    matcher.load_patterns.cache_clear()
    try:
        with pytest.raises(KnowledgeBaseError, match="unbounded"):
            matcher.load_patterns()
    finally:
        matcher.load_patterns.cache_clear()


# ------------------------------------------------------------------ the fast CLI path
def test_fast_path_matches_the_typer_command(capsys: pytest.CaptureFixture[str]) -> None:
    from opdoctor.cli.app import main as app_main
    from opdoctor.explain.fast import fast_main

    msg = "OSError: /opt/x/libx.so: undefined symbol: _ZN3c109alloc_cpuEi"
    for fmt in ("text", "json"):
        assert fast_main(["explain", msg, "--format", fmt]) == 0
        fast = capsys.readouterr().out
        assert app_main(["explain", msg, "--format", fmt]) == 0
        assert capsys.readouterr().out == fast
    assert fast_main(["explain", "OD303"]) is None  # codes go to the full CLI
    assert fast_main(["explain", "x", "--help"]) is None
    assert fast_main(["explain", "x", "-f", "sarif"]) is None


def test_explain_imports_neither_torch_nor_typer() -> None:
    code = ("import sys, io, contextlib\nfrom opdoctor.explain.fast import fast_main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    fast_main(['explain', 'operator myop::f does not exist'])\n"
            "    fast_main(['explain', 'x.so: undefined symbol: _ZN3c1010TensorImpl4sizeEv'])\n"
            # dataclasses pulls in inspect, ast and dis: ~15 ms of every explain (issue #21)
            "bad = [m for m in ('torch', 'typer', 'opdoctor.facts', 'opdoctor.checks', "
            "'dataclasses') "
            "if m in sys.modules]\nprint(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin"})
    assert out.stdout.strip() == "[]", out.stderr


def test_normalise_keeps_windows_paths_and_ascii_text() -> None:
    from opdoctor.explain.entities import normalise

    win = 'Error loading "C:\\Users\\x\\torch\\lib\\nvfuser_codegen.dll" or one of its deps.'
    assert normalise(win) == win  # "\lib\nvfuser": not an escaped newline
    assert normalise("a\\nTraceback (most recent") == "a\nTraceback (most recent"
    assert normalise("x: 未定义的符号: _Z1fv") == "x: undefined symbol: _Z1fv"
    plain = "ImportError: /opt/x.so: undefined symbol: _Z1fv"
    assert normalise(plain) == plain


def test_unmatched_text_naming_a_known_symbol_is_ranked_from_it() -> None:
    e = explain_text("my op wants _ZN3c104impl3cow11cow_deleterEPv and it is gone")
    assert e.cause == 3 and e.confidence == "low" and e.subcause == "entity.symbol"
    assert "cow_deleter" in e.why and "will not invent" not in e.explanation
    own = explain_text("my op wants _ZN5myops6helperEv")  # own code alone says too little
    assert own.cause == 0


# ------------------------------------------------------------------ the real-world suite's forms
# (tracebacks as benchmarks/realworld/run.py records them from real PyPI wheels; paths shortened)
_SITE = "/opt/venv/lib/python3.11/site-packages"
_TV_META = (
    "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
    f"  File \"{_SITE}/torchvision/__init__.py\", line 8, in <module>\n"
    "    from torchvision import (\n"
    f"  File \"{_SITE}/torchvision/_meta_registrations.py\", line 163, in <module>\n"
    "    @torch.library.register_fake(\"torchvision::nms\")\n"
    "     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    f"  File \"{_SITE}/torch/library.py\", line 352, in _register_fake\n"
    "    handle = entry.fake_impl.register(\n"
    f"  File \"{_SITE}/torch/library.py\", line 493, in impl\n"
    "    if torch._C._dispatch_has_kernel_for_dispatch_key(\n"
    "RuntimeError: operator torchvision::nms does not exist")


def test_package_op_missing_at_its_own_import_is_a_pairing_first() -> None:
    """torchvision's own fake registrations raise 'does not exist': the pairing (release or
    CUDA/CPU variant) first, registration second — and the frame and code lines naming
    register_fake are not the error."""
    e = explain_text(_TV_META)
    assert [a.cause for a in e.ranked][:2] == [3, 1], (e.subcause, e.why)
    assert e.subcause == "torch.op-does-not-exist"
    assert "CUDA" in e.why and "opdoctor check --package torchvision" in e.decides


def test_cuda_library_missing_for_an_op_library_loaded_into_torch() -> None:
    text = (f"  File \"{_SITE}/torch/_ops.py\", line 1516, in load_library\n    ctypes.CDLL(path)\n"
            "OSError: libnvrtc.so.13: cannot open shared object file: No such file or directory\n"
            "\nThe above exception was the direct cause of the following exception:\n\n"
            f"  File \"{_SITE}/torchcodec/_internally_replaced_utils.py\", line 71, in load\n"
            "    torch.ops.load_library(image_library_path)\n"
            f"OSError: Could not load this library: {_SITE}/torchcodec/libtorchcodec_image.so")
    e = explain_text(text)
    assert [a.cause for a in e.ranked][:2] == [3, 2], e.why
    # the same library missing for torch itself stays a search-path problem first
    assert explain_text("from torch._C import *\nImportError: libcudnn.so.9: cannot open shared "
                        "object file: No such file or directory").cause == 2


def test_source_checkout_without_the_built_library_shadows_the_install() -> None:
    lib = "/home/me/src/fbgemm_gpu/fbgemm_gpu_config.so"
    text = (f"OSError: {lib}: cannot open shared object file: No such file or directory\n\n"
            "The above exception was the direct cause of the following exception:\n\n"
            "  File \"/home/me/src/fbgemm_gpu/__init__.py\", line 108, in _load_library\n"
            "    torch.ops.load_library(os.path.join(os.path.dirname(__file__), filename))\n"
            f"  File \"{_SITE}/torch/_ops.py\", line 1518, in load_library\n"
            f"OSError: Could not load this library: {lib}")
    e = explain_text(text)
    assert e.cause == 5 and 4 in [a.cause for a in e.ranked], e.why
    assert "source tree without its built fbgemm_gpu_config.so" in e.title
    # the text cannot tell a shadowing checkout from an editable install whose in-place build
    # is gone (survey 14's P8): both are named, and the check of the package decides
    assert "shadows the installed package" in e.why and "editable install" in e.why
    assert "opdoctor check --package fbgemm_gpu" in e.decides


def test_python_line_of_a_built_for_banner_names_the_package_build() -> None:
    text = ("    Python  3.10.19 (you have 3.11.7)\n  Please reinstall xformers (see https://"
            "github.com/facebookresearch/xformers#installing-xformers)\n`ckF` is not supported "
            "because:\n    device=cpu (supported: {'cuda'})\n    operator wasn't built")
    e = explain_text(text)
    assert e.cause == 3 and "Python 3.10.19" in e.why and "CUDA" in e.why
    assert "opdoctor check --package xformers" in e.decides


def test_a_std_string_symbol_of_another_library_is_the_cxx11_abi_first() -> None:
    e = explain_text("ImportError: undefined symbol: _ZNK6AsdOps3Ops18GetOperationByNameERKSs")
    assert [a.cause for a in e.ranked][:2] == [3, 4], e.why
    assert "ABI" in e.why


@pytest.mark.parametrize("text", [
    "ImportError: DLL load failed while importing onnxruntime_pybind11_state: A dynamic link "
    "library (DLL) initialization routine failed.",
    "OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error "
    "loading \"C:\\env\\Lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies.",
])
def test_a_dll_that_fails_to_initialise_is_a_runtime_of_another_release(text: str) -> None:
    e = explain_text(text)
    assert [a.cause for a in e.ranked][:2] == [3, 2], (e.subcause, e.why)
    assert "1114" in e.why


@pytest.mark.parametrize(("text", "order"), [
    # a compiler installation's libstdc++ put first on the search path
    ("/u/local/compilers/gcc/10.2.0/lib/../lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not "
     "found", [2, 3]),
    # a local build (system compiler) run in a conda env whose libstdc++ is older
    ("ImportError: /home/me/anaconda3/envs/x/lib/libstdc++.so.6: version `GLIBCXX_3.4.29' not "
     "found (required by /home/me/src/proj/proj/_ext.cpython-38-x86_64-linux-gnu.so)", [2, 3]),
    # a wheel's library needing a newer runtime than the environment has: another release
    ("/home/me/anaconda3/bin/../lib/libstdc++.so.6: version 'GLIBCXX_3.4.30' not found "
     "(required by /home/me/anaconda3/lib/python3.9/site-packages/paddle/base/libpaddle.so)",
     [3, 2]),
])
def test_which_libstdcxx_was_found_decides_path_or_release(text: str, order: list[int]) -> None:
    e = explain_text(text)
    assert [a.cause for a in e.ranked][:2] == order, e.why


def test_a_torch_python_binding_symbol_means_torch_was_not_imported_first() -> None:
    e = explain_text("/env/lib/python3.6/site-packages/x/lltm_cpp.cpython-36m-x86_64-linux-gnu.so:"
                     " undefined symbol: THPVariableClass")
    assert [a.cause for a in e.ranked][:2] == [5, 4], e.why
    assert "import torch" in e.why


def test_an_undefined_symbol_inside_an_nvidia_library_is_a_release_mix() -> None:
    from opdoctor.explain.entities import classify_symbol

    info = classify_symbol("_ZN5pwgen18nvrtcCreateProgramE",
                           "/opt/TensorRT-8.2/build/lib/libnvinfer_plugin.so.8")
    assert info.causes[:2] == (3, 2), info
    # the same symbol in the package's own library stays an incomplete build first
    assert classify_symbol("_ZN5pwgen18nvrtcCreateProgramE", "/opt/x/libop.so").causes[0] == 4


def test_a_torch_library_of_another_era_names_the_release() -> None:
    text = ("pytorch version: 1.4\nImportError: libtorch_cpu.so: cannot open shared object file: "
            "No such file or directory")
    e = explain_text(text)
    assert [a.cause for a in e.ranked][:2] == [3, 5], e.why
    assert "1.4" in e.why
    # with no torch release in the text it stays 'torch not imported first'
    assert explain_text("ImportError: libtorch_cpu.so: cannot open shared object file: No such "
                        "file or directory").cause == 5


def test_unmatched_text_of_a_framework_is_ranked_by_its_base_rate() -> None:
    """No message form, no symbol, but the text names a framework or a library: the answer is
    the base rate of the causes for that framework in the development half, marked low
    (issue #16: no message answered with nothing); a text naming neither stays unanswered."""
    tf = explain_text("tensorflow: the frobnicator is sad")
    assert (tf.cause, tf.subcause, tf.confidence) == (3, "prior.tensorflow", "low")
    assert [a.cause for a in tf.ranked] == list(PRIOR_ORDER["tensorflow"])
    assert "base rate" in tf.explanation and "development corpus" in tf.why
    lib = explain_text("it stopped after loading /opt/lib/libfoo.so today")
    assert lib.subcause == "prior.loader" and lib.cause == PRIOR_ORDER["loader"][0]
    assert any("opdoctor check /opt/lib/libfoo.so" in s for s in lib.next_steps)
    assert explain_text("the coffee machine is empty").cause == 0


def test_base_rates_are_the_development_halfs() -> None:
    """PRIOR_ORDER is what dev.toml says: the three most frequent causes per framework label
    with at least 20 cases (ties by cause number), for all cases, and for the loader."""
    counts: dict[str, Counter[int]] = {}
    for case in DEV:
        cause = int(str(case["cause"]))
        counts.setdefault(str(case["framework"]), Counter())[cause] += 1
        counts.setdefault("all", Counter())[cause] += 1
    expect = {fw: tuple(sorted(c, key=lambda k: (-c[k], k))[:3])
              for fw, c in counts.items() if sum(c.values()) >= 20}
    assert expect == PRIOR_ORDER


# ------------------------------------------------------------------ e1: PyTorch/loader/Python forms
E1_FAMILY_SAMPLES = [
    ("meta-pytorch/torchcodec#1072", "link.wrong-format", 4),
    ("torchpipe/torchpipe#70", "packaging.wheel-without-library", 4),
    ("alibaba/MNN#3390", "loader.execstack", 4),
    ("vllm-project/vllm#29030", "loader.undefined-symbol", 4),
    ("pytorch/pytorch#39473", "python.framework-api-moved", 5),
    ("hszhao/PointWeb#11", "build.objects-failed", 3),
    ("open-mmlab/mmdetection#2113", "build.nvcc-path", 2),
    ("NVIDIA/apex#86", "build.extension-skipped", 4),
    ("SysCV/qd-3dt#25", "build.arch-unknown-to-torch", 3),
    ("jwyang/faster-rcnn.pytorch#739", "torch.kernel-missing-for-device", 1),
    ("pytorch/pytorch#111887", "torch.kernel-override-warning", 1),
    ("pytorch/pytorch#21794", "link.dso-missing", 4),
    # a framework's own library missing at link time: the package lacks it
    ("conda-forge/pytorch-cpu-feedstock#313", "link.library-not-found", 4),
    # a framework's Python-level name, its module read from the quoted import statement
    ("jkli1998/T-CAR#2", "python.cannot-import-name", 3),
    # libc10.so missing (torch not imported), then the same import with torch: the symbol decides
    ("Dao-AILab/flash-attention#1644", "loader.cannot-open", 3),
]


# ------------------------------------------------------------------ e3: PyTorch/loader/Python forms
E3_FAMILY_SAMPLES = [
    # torch's own op without CUDA kernels in a program linking libtorch: libtorch_cuda dropped
    ("LaurentMazare/tch-rs#923", "torch.could-not-run-backend", 4),
    ("pytorch/pytorch#54131", "torch.could-not-run-backend", 4),
    # a package's per-operator report that its CUDA build is absent: a wheel for another torch
    ("yufu-wang/PromptHMR#4", "torch.package-ops-unavailable", 3),
    ("vladmandic/sdnext#118", "torch.package-ops-unavailable", 3),
    # a CPython API function only a later patch release exports (PySlice_Unpack: 3.6.1+)
    ("pytorch/pytorch#19161", "loader.undefined-symbol", 3),
    ("layumi/Person_reID_baseline_pytorch#139", "loader.undefined-symbol", 3),
    # an extension module named for its device (…_cpu / …_gpu) missing from an installed package
    ("longcw/RoIAlign.pytorch#32", "python.no-module-named", 4),
    # torch's dispatcher: no kernel registered for this device (MPS) for a package's op
    ("pytorch/vision#9164", "torch.op-not-implemented-for-device", 1),
    ("invoke-ai/InvokeAI#232", "torch.op-not-implemented-for-device", 1),
    # a bare "cannot import name '<compiled module>'": the extension was not built
    ("Tony607/mmdetection_instance_segmentation_demo#1", "python.cannot-import-name", 4),
]


def test_a_mangled_global_function_is_own_code_whatever_its_name() -> None:
    """CUDA's, BLAS's, OpenMP's and CPython's APIs are extern "C": a *mangled* function at
    global scope (_Z<len><name>…) is the library's own code even when named cutlass_…/cublas…;
    the unmangled C name stays a CUDA library function."""
    from opdoctor.explain.entities import classify_symbol

    own = classify_symbol("_Z20cutlass_moe_mm_sm100RN2at6TensorERKS0_S3_S3_S3_S3_S3_S3_S3_S3_bb")
    assert own.owner == "own" and own.causes[0] == 4, own
    assert classify_symbol("cublasLtHSHMatmulAlgoInit").owner == "cuda"
    assert classify_symbol("PyUnicode_DATA").owner == "python"


def test_a_local_file_imported_by_library_code_is_shadowing() -> None:
    """A frame of the standard library (or an installed package) runs ``import X`` and the next
    frame executes the user's X.py: the user's file shadows the module. The same import
    resolving to the standard library's own file is not shadowing."""
    from opdoctor.explain.rank import shadowing_files

    case = DEV_BY_THREAD["pytorch/pytorch#39473"]
    assert [p.rsplit("/", 1)[-1] for p in shadowing_files(str(case["text"]))] == ["dis.py"]
    healthy = ('  File "/usr/lib/python3.11/inspect.py", line 35, in <module>\n    import dis\n'
               '  File "/usr/lib/python3.11/dis.py", line 10, in <module>\n    import x\n')
    assert shadowing_files(healthy) == []


def test_pyinit_missing_without_its_parenthesis_is_still_recognised() -> None:
    """The message pasted without '(PyInit_X)' is the same failure; the build alternative (a
    module compiled under another name, this thread's resolution) stays in the top two."""
    case = DEV_BY_THREAD["sophgo/LLM-TPU#33"]
    e = explain_text(str(case["text"]))
    assert e.subcause == "python.no-module-export"
    assert case["cause"] in [a.cause for a in e.ranked][:2]


def test_an_attribute_error_naming_register_fake_is_not_a_missing_fake_kernel() -> None:
    """'module torch.library has no attribute register_fake' says the torch that was imported
    predates the API (or is another copy): the release/import side, not a fake kernel."""
    e = explain_text("AttributeError: module 'torch.library' has no attribute 'register_fake'")
    assert e.subcause == "python.framework-api-moved" and e.cause in (3, 5), e.subcause


_TORCH_DISPATCH_PROBE = r'''
import warnings, torch
lib = torch.library.Library("odprobe", "DEF")
lib.define("foo(Tensor x) -> Tensor")
lib.impl("foo", lambda x: x * 2, "CPU")
lib.define("bar(Tensor[] xs) -> Tensor")
lib.impl("bar", lambda xs: xs[0], "CPU")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    torch.ops.odprobe.foo(torch.ones(2, requires_grad=True)).sum().backward()
print("MSG1", [str(x.message) for x in w if "autograd kernel" in str(x.message)][0])
try:
    torch.ops.odprobe.bar([])
except NotImplementedError as e:
    print("MSG2", str(e).splitlines()[0])
'''


def _needs_torch() -> None:
    """Skip when torch is not installed — found, not imported: importing it would leave this
    test process holding torch (~600 MB; every later fork of it copies the page tables)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")


@pytest.mark.probe
def test_torch_dispatcher_messages_for_a_missing_kernel_are_registration() -> None:
    """The messages real torch prints for an op registered without an Autograd kernel and for a
    call that reaches no fallback (taken from torch itself, in a time-limited child) rank
    registration first."""
    _needs_torch()
    out = run_python(_TORCH_DISPATCH_PROBE, timeout=120, check=True).stdout
    msgs = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("MSG")]
    assert len(msgs) == 2, out
    for m in msgs:
        e = explain_text(m)
        assert e.subcause == "torch.autograd-kernel-missing" and e.cause == 1, (m, e.subcause)


@pytest.mark.probe
def test_a_module_file_named_like_the_framework_is_shadowing(tmp_path: object) -> None:
    """Real Python, in a child: a directory holding a torch.py makes `import torch.nn` fail
    with "'torch' is not a package" — a local file shadowing the framework (cause 5), not the
    framework's API of another release."""
    from pathlib import Path

    work = Path(str(tmp_path))
    (work / "torch.py").write_text("x = 1\n")
    out = subprocess.run([sys.executable, "-c", "import torch.nn"], cwd=work,
                         capture_output=True, text=True, timeout=60)
    last = out.stderr.strip().splitlines()[-1]
    assert "is not a package" in last, out.stderr
    e = explain_text(last)
    assert e.cause == 5, ([a.cause for a in e.ranked], e.why)


def test_torchs_own_minor_cuda_mismatch_warning_does_not_outrank_the_error_after_it() -> None:
    """torch.utils.cpp_extension's CUDA_MISMATCH_WARN (read from the installed torch's source,
    not retyped) says itself that it is most likely not a problem: the error after it decides."""
    import importlib.util
    import re
    from pathlib import Path

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    src = (Path(spec.origin).parent / "utils" / "cpp_extension.py").read_text()
    m = re.search(r'CUDA_MISMATCH_WARN = \(\s*"([^"]{20,400})"', src)
    assert m, "torch's CUDA_MISMATCH_WARN text not found"
    warn = "UserWarning: " + m.group(1) % ("12.1", "12.4")
    own = ("ImportError: /env/lib/python3.10/site-packages/fused/_C.so: undefined symbol: "
           "_Z9fused_fwdRKN2at6TensorE")
    e = explain_text(warn + "\n" + own)
    assert e.subcause == "loader.undefined-symbol" and e.cause == 4, (e.subcause, e.why)
    alone = explain_text(warn)
    assert alone.subcause == "torch.cuda-minor-mismatch-warning" and alone.confidence == "low"


def test_a_kernel_override_warning_does_not_outrank_an_error_after_it() -> None:
    """The dispatcher's 'Overriding a previously registered kernel' is a warning (a plugin's log
    prints pages of it and goes on): an error later in the same text is the root."""
    warn = str(DEV_BY_THREAD["pytorch/pytorch#111887"]["text"])
    err = str(DEV_BY_THREAD["rusty1s/pytorch_cluster#100"]["text"])
    e = explain_text(warn + "\n" + err)
    assert e.subcause == "loader.undefined-symbol" and e.cause == 3, (e.subcause, e.why)


def test_the_real_linkers_missing_library_message_is_the_search_path(tmp_path: object) -> None:
    """The system linker, asked for a library that exists nowhere (a time-limited child), says
    'cannot find -lX': a search-path / not-installed matter (2) for a library that is not the
    framework's own."""
    import shutil
    from pathlib import Path

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    work = Path(str(tmp_path))
    (work / "x.c").write_text("int f(void) { return 1; }\n")
    out = subprocess.run([cc, "-shared", "-fPIC", "x.c", "-o", "x.so", "-lopdoctor_no_such_lib"],
                         cwd=work, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "opdoctor_no_such_lib" in out.stderr, out.stderr
    e = explain_text(out.stderr)
    assert e.subcause == "link.library-not-found" and e.cause == 2, (e.subcause, e.why)


@pytest.mark.probe
def test_torchs_own_op_without_a_cuda_kernel_is_a_cpu_build_of_torch() -> None:
    """The message a CPU build of torch itself prints when a CUDA tensor reaches an aten op
    (taken from the installed CPU torch, in a time-limited child): from a Python traceback the
    torch build variant (3); the bare line, as programs linking libtorch print it, puts the
    CUDA library dropped at link time (4) first and the CPU build (3) second — never an
    extension's kernel compiled out (1)."""
    _needs_torch()
    code = ("import torch\n"
            "try:\n"
            "    torch.ops.aten.empty_strided.default([2], [1], device='cuda')\n"
            "except NotImplementedError as e:\n"
            "    print(str(e).splitlines()[0])\n")
    out = run_python(code, timeout=120, check=True).stdout.strip()
    if "Could not run" not in out:
        pytest.skip("this torch has CUDA kernels: " + out[:80])
    e = explain_text(out)
    assert e.subcause == "torch.could-not-run-backend", (out, e.why)
    assert [a.cause for a in e.ranked][:2] == [4, 3], (out, e.why)
    tb = ('Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
          "    x = torch.ops.aten.empty_strided.default([2], [1], device='cuda')\n"
          "NotImplementedError: " + out)
    e = explain_text(tb)
    assert e.subcause == "torch.could-not-run-backend" and e.cause == 3, (tb, e.why)


# ---------------------------------------------------- e4: TensorFlow, ONNX Runtime, Paddle, Windows
E4_FAMILY_SAMPLES = [
    # ORT's GetApi(N) refused: a native program loaded an older onnxruntime found first …
    ("MaxReimann/video-stream-consistency#1", "ort.api-version-loaded", 2),
    # … a Python program: the installed onnxruntime is older than its custom-op library
    ("open-mmlab/mmdeploy#2491", "ort.api-version-loaded", 3),
    # X(N) with N from a recent opset: the runtime predates the model's opset
    ("gtbluesky/onnxruntime_flutter#41", "ort.no-implementation", 3),
    # ORT's "Failed to get symbol RegisterCustomOps with error: …" (Linux) form
    ("onnx/onnx#3654", "ort.register-custom-ops", 4),
    # TensorFlow's C++ status text ("Not found: …"): a C++ host without the op
    ("NVIDIA/FasterTransformer#137", "tf.op-not-registered", 1),
    ("tensorflow/tensorflow#79362", "windows.dll-init-failed", 3),
    ("tensorflow/tensorflow#5949", "windows.illegal-instruction-status", 3),
    ("PaddlePaddle/PaddleClas#268", "paddle.cpu-version-installed", 3),
    # TensorFlow's dso_loader looks for the exact CUDA soname of its build
    ("tensorflow/tensorflow#39132", "tf.dso-loader", 3),
]


def test_tf_op_python_not_found_error_stays_an_import_question() -> None:
    """Python raises NotFoundError (and logs C++ lines that say 'Not found:'): with the Python
    exception in the text the op library is still the package not imported (cause 5)."""
    text = ("2020-01-01 W tensorflow/core/framework/op_kernel.cc:1622] OP_REQUIRES failed at "
            "partitioned_function_ops.cc:113 : Not found: Op type not registered 'Foo' in binary "
            "running on h.\ntensorflow.python.framework.errors_impl.NotFoundError: Op type not "
            "registered 'Foo' in binary running on h.")
    assert explain_text(text).cause == 5


def test_ort_low_opset_versions_keep_the_type_question() -> None:
    """An op version from an opset every current runtime has (13) is a type/provider question
    (cause 1 first); only versions from recent opsets point at the runtime's age."""
    e = explain_text("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
                     "implementation for Reciprocal(13) node with name 'r'")
    assert [a.cause for a in e.ranked][:2] == [1, 3]
    e = explain_text("Could not find an implementation for Cast(19) node with name 'c'")
    assert [a.cause for a in e.ranked][:2] == [3, 1]


def test_windows_status_forms_do_not_fire_on_healthy_lines() -> None:
    """The DLL-initialisation and illegal-instruction forms need Windows' own wording."""
    for line in ("DLL loaded: python311.dll", "initialization of module done",
                 "exit code 0", "Process finished with exit code 1073741795"):
        assert explain_text(line).subcause not in ("windows.dll-init-failed",
                                                   "windows.illegal-instruction-status"), line


def test_mindspore_custom_dlopen_wrapper_lets_the_inner_error_decide() -> None:
    """MindSpore's 'For 'Custom' on <target>, dlopen file … Error message is: <dlerror>' is a
    wrapper: the loader's error inside decides, on every device target; alone it still answers."""
    head = ("RuntimeError: For 'Custom' on GPU, dlopen file '/h/add.so' should be successful, "
            "but error occurs! Error message is: ")
    e = explain_text(head + "/h/add.so: undefined symbol: _Z9CustomAddiPPvPiPPlPPKcS_S_")
    assert (e.subcause, e.cause) == ("loader.undefined-symbol", 4), e.why
    e = explain_text(head + "libcudart.so.11.0: cannot open shared object file: No such file or "
                     "directory")
    assert (e.subcause, e.cause) == ("loader.cannot-open", 2), e.why
    assert explain_text(head).subcause == "mindspore.aot-dlopen"


def test_tf_dso_loader_needs_tensorflow_and_keeps_the_installed_pairing() -> None:
    """The exact-soname reading applies to TensorFlow's wording only; when the text shows the
    same CUDA major installed, the search path comes first."""
    bare = "Could not load dynamic library 'libcudart.so.11.0'"
    assert explain_text(bare).subcause != "tf.dso-loader"
    e = explain_text("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] " + bare
                     + "; dlerror: libcudart.so.11.0: cannot open shared object file: No such "
                     "file or directory; LD_LIBRARY_PATH: /usr/local/cuda-11.0/lib64")
    assert e.subcause == "tf.dso-loader" and [a.cause for a in e.ranked][:2] == [2, 3], e.why


# ---------------------------------------------------- e5: the frameworks' own message forms
def test_oneflow_load_library_wrapper_lets_the_dlerror_decide() -> None:
    """OneFlow's LoadLibrary (oneflow/core/framework/load_library.cpp, v0.9–master 2025) throws
    '<space>LoadLibrary ERROR! Cannot load library file: <path> the Error is: <dlerror>': a
    wrapper, so the loader's error it carries decides; alone it still answers."""
    head = (" LoadLibrary ERROR! Cannot load library file: ./build/libleaky_relu.so the Error "
            "is: ")
    e = explain_text(head + "libcudart.so.11.0: cannot open shared object file: No such file "
                     "or directory")
    assert e.subcause == "loader.cannot-open" and e.cause == 2, e.why
    e = explain_text(head + "./build/libleaky_relu.so: undefined symbol: "
                     "_ZN7oneflow8user_op19UserOpDefWrapperC1ERKNS_9UserOpDefE")
    assert e.subcause == "loader.undefined-symbol", e.why
    assert explain_text(head.strip()).subcause == "oneflow.load-library"


def test_oneflow_no_kernel_for_the_op_type_at_all() -> None:
    """UserOpRegistryMgr::GetOpKernelRegistryResult (oneflow/core/framework/
    user_op_registry_manager.cpp, master 2025) has two forms: no kernel of the op type at all
    ('There is no kernel registered for Current OperatorConf.') and none matching the
    device/dtype ('Cannot find the kernel matching …'); both are registration first."""
    text = ('  File "oneflow/core/framework/user_op_registry_manager.cpp", line 90, in '
            "GetOpKernelRegistryResult\n    Error::OpKernelNotFoundError({})\n"
            "There is no kernel registered for Current OperatorConf.  The Info of OperatorConf "
            "are \n op_name: my_op0\n op_type_name: my_op\n DeviceType_Name: kCUDA")
    e = explain_text(text)
    assert (e.subcause, e.cause) == ("oneflow.op-not-registered", 1), e.why


@pytest.mark.parametrize("text", [
    "[WARNING] ME(7788:1,MainProcess):2022-01-01 [mindspore/run_check/_check_version.py:92] Can "
    "not found cuda libs. Please confirm that the correct cuda version has been installed.",
    "[ERROR] ME(7788:1,MainProcess) [mindspore/run_check/_check_version.py:224] Cuda ['10.1', "
    "'11.1', '11.6'] version(libcudart*.so need by mindspore-gpu) is not found. Please confirm "
    "that the path of cuda is set to the env LD_LIBRARY_PATH",
    "[WARNING] ME(1:1,MainProcess) [mindspore/run_check/_check_version.py:420] Can not find "
    "driver so(need by mindspore-ascend). Please check whether the Environment Variable "
    "LD_LIBRARY_PATH is set.",
    "[ERROR] ME(1:1,MainProcess) [mindspore/run_check/_check_version.py:290] No such directory: "
    "/usr/local/Ascend/latest/fwkacllib/lib64. Please check if Ascend AI software package "
    "(Ascend Data Center Solution) is installed correctly.",
])
def test_mindspore_start_up_environment_check_is_the_search_path(text: str) -> None:
    """MindSpore's own start-up checks (mindspore/python/mindspore/run_check/_check_version.py,
    r1.8–r2.2): the CUDA libraries or the CANN environment variables are not found — the
    environment, not the build, comes first."""
    e = explain_text(text)
    assert e.subcause == "mindspore.env-check", e.why
    assert [a.cause for a in e.ranked][:2] == [2, 3]


def test_mindspore_version_pair_with_the_long_ascend_package_name() -> None:
    """_check_version.py's Ascend form puts the package's long name between the two versions:
    'MindSpore version X and Ascend AI software package (Ascend Data Center Solution)version Y
    does not match' is the release pair, like the cuda and te forms."""
    e = explain_text("[WARNING] ME(1:1,MainProcess) [mindspore/run_check/_check_version.py:375] "
                     "MindSpore version 2.2.0 and Ascend AI software package (Ascend Data Center "
                     "Solution)version 6.3 does not match, the version of software package "
                     "expect one of ['7.0'].")
    assert (e.subcause, e.cause) == ("mindspore.ascend-version", 3), e.why


def test_mindspore_custom_and_plugin_load_wrappers_carry_the_loader_error() -> None:
    """custom_aot_cpu_kernel.cc's Launch form ('… dlopen file 'X' must be successful …') and
    device_context_manager.cc's 'Load dynamic library: <plugin> failed. <error>' are wrappers:
    the dlerror inside decides; the Windows plugin form carries only an error number."""
    e = explain_text("For 'Custom' on CPU, dlopen file '/h/add.so' must be successful, but error "
                     "occurs! Error message is: ")
    assert e.subcause == "mindspore.aot-dlopen"
    e = explain_text("[WARNING] ME(1:1) [mindspore/ccsrc/runtime/hardware/device_context_manager"
                     ".cc:75] LoadDynamicLib] Load dynamic library: libmindspore_ascend.so.2 "
                     "failed. libge_runner.so: cannot open shared object file: No such file or "
                     "directory")
    assert (e.subcause, e.cause) == ("loader.cannot-open", 2), e.why
    e = explain_text("Load dynamic library: mindspore_gpu.dll failed. 126")
    assert (e.subcause, e.cause) == ("mindspore.plugin-load", 2), e.why


_ORT_CHAIN = ('[ONNXRuntimeError] : 1 : FAIL : Error loading "C:\\venv\\Lib\\site-packages\\'
              'onnxruntime\\capi\\onnxruntime_providers_{ep}.dll" which depends on "{dll}" which '
              'is missing. (Error 126: "The specified module could not be found.")')


@pytest.mark.parametrize(("ep", "dll", "extra", "order"), [
    ("cuda", "cudnn64_9.dll", "", [3, 2]),
    ("cuda", "cublasLt64_12.dll", "", [3, 2]),
    ("cuda", "cudnn64_9.dll", "\ncuDNN version: 8.9.7", [3, 2]),
    ("cuda", "cudnn64_9.dll", "\ninstalled cuDNN 9.1", [2, 3]),
    ("tensorrt", "nvinfer_10.dll", "", [2, 3]),
])
def test_ort_windows_dependency_chain_reads_like_the_linux_provider_form(
        ep: str, dll: str, extra: str, order: list[int]) -> None:
    """ORT 1.20+ on Windows names the DLL that is missing (onnxruntime/core/platform/windows/
    dll_load_error.cc: 'Error loading "A" which depends on "B" which is missing.'): read as the
    Linux 'Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9 …'
    is — the provider's CUDA/cuDNN major first, the search path when that major is installed,
    TensorRT's own libraries the search path."""
    e = explain_text(_ORT_CHAIN.format(ep=ep, dll=dll) + extra)
    assert e.subcause == "ort.dll-dependency-chain", e.why
    assert [a.cause for a in e.ranked][:2] == order, e.why


def test_ort_windows_dependency_chain_other_links() -> None:
    """The last name of a longer chain is the missing one; the Visual C++ runtime is an install
    matter; the provider DLL itself missing is the package."""
    e = explain_text('Error loading "C:\\app\\custom_ops.dll" which depends on "foo.dll" which '
                     'depends on "MSVCP140.dll" which is missing.')
    assert e.entities.get("library") == "MSVCP140.dll" and e.cause == 2, e.entities
    e = explain_text('Error loading "C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\'
                     'onnxruntime_providers_cuda.dll" which is missing.')
    assert e.cause == 4, e.why


def test_ort_language_binding_version_check() -> None:
    """The Rust ort crate's load-dynamic check (ort src/lib.rs, 1.14–2.0.0-rc.11): 'ort X is
    not compatible with the ONNX Runtime binary found at `…`; expected GetVersionString to
    return '1.N.x', but got …' — the library found is an older release (3, alt 2); the bare
    load failure is the search path first."""
    e = explain_text("thread 'main' panicked at ort-2.0.0-rc.11/src/lib.rs:191:41:\nFailed to "
                     "load ONNX Runtime dylib: Error { code: GenericFailure, msg: \"ort "
                     "2.0.0-rc.11 is not compatible with the ONNX Runtime binary found at "
                     "`onnxruntime.dll`; expected version >= '1.23.x', but got '1.17.1'\" }")
    assert (e.subcause, [a.cause for a in e.ranked][:2]) == ("ort.binding-version", [3, 2])
    e = explain_text("An error occurred while attempting to load the ONNX Runtime binary at "
                     "`libonnxruntime.so`")
    assert (e.subcause, e.cause) == ("ort.binding-load", 2)


def test_tf_device_selection_and_gpu_skip_forms() -> None:
    """TensorFlow's eager device selection ('Could not find valid device for node.',
    core/common_runtime/eager/execute.cc, TF 2.x) is the no-kernel family; gpu_device.cc's
    'Cannot dlopen some GPU libraries.' is low so that the dso_loader lines above it decide."""
    e = explain_text("tensorflow.python.framework.errors_impl.NotFoundError: Could not find "
                     "valid device for node.\nNode:{{node Bincount}}")
    assert (e.subcause, e.cause) == ("tf.no-opkernel", 1)
    skip = ("Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned "
            "above are installed properly if you would like to use GPU.")
    assert explain_text(skip).subcause == "tf.gpu-libraries-skipped"
    e = explain_text("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not "
                     "load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open "
                     "shared object file: No such file or directory\n" + skip)
    assert e.subcause == "tf.dso-loader"


def test_tf_invalid_op_name_a_sentence_is_another_tensorflows_layout() -> None:
    """tensorflow/core/framework/op_def_util.cc (ValidateOpDef, TF 1.x–2.x): 'Invalid name:
    <name> (Did you use CamelCase?)'. A lower-case identifier is a naming error in REGISTER_OP
    (1); a sentence — the op's documentation read as its name — is registration code built
    against another TensorFlow than the one reading it (3)."""
    e = explain_text("Invalid argument: Invalid name: my_custom_op (Did you use CamelCase?)")
    assert (e.subcause, e.cause) == ("tf.invalid-name", 1)
    e = explain_text("tensorflow.python.framework.errors_impl.InvalidArgumentError: Invalid "
                     "name: An op that loads optimized parameters into HBM for embedding. Must "
                     "be preceded by a ConfigureTPUEmbeddingHost op that sets up the correct "
                     "embedding table configuration. (Did you use CamelCase?); in OpDef: name: "
                     "\"An op that loads optimized parameters into HBM for embedding.\"")
    assert (e.subcause, e.cause) == ("tf.invalid-name-garbled", 3)


_TF_TRT = ("2022-03-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader"
           ".cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: "
           "cannot open shared object file: No such file or directory\n2022-03-01 10:00:00.000000:"
           " W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen"
           " some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please "
           "make sure the missing libraries mentioned above are installed properly.\n")
_TF_CUDART = ("2022-03-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could "
              "not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot "
              "open shared object file: No such file or directory\n2022-03-01 I tensorflow/"
              "stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not "
              "have a GPU set up on your machine.\n")


@pytest.mark.parametrize("noise", [_TF_TRT, _TF_CUDART])
def test_tensorflows_dso_loader_warnings_do_not_outrank_the_error_after_them(noise: str) -> None:
    """TensorFlow 2.x prints dso_loader warnings at import (TensorRT for TF-TRT at every import,
    tf2tensorrt/utils/py_utils.cc; CUDA libraries it then runs without): the loader's words they
    quote must not outrank the error of the log; alone they still answer."""
    err = ("tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered "
           "'SentencepieceOp' in binary running on h. Make sure the Op and Kernel are registered "
           "in the binary running in this process.")
    e = explain_text(noise + err)
    assert (e.subcause, e.cause) == ("tf.op-not-registered", 5), e.why
    e = explain_text(noise + "ModuleNotFoundError: No module named 'tensorflow_addons'")
    assert e.subcause == "python.no-module-named", e.why
    alone = explain_text(noise)
    assert alone.subcause in ("tf.optional-tensorrt", "tf.dso-loader")
    assert alone.subcause == ("tf.optional-tensorrt" if "nvinfer" in noise else "tf.dso-loader")


@pytest.mark.parametrize(("text", "first"), [
    ("Load model from model.onnx failed:Fatal error: com.microsoft:SkipLayerNormalization(-1) "
     "is not a registered function/op", 3),
    ("Load model from m_opt.onnx failed:Fatal error: com.microsoft.nchwc:Conv(-1) is not a "
     "registered function/op", 3),
    ("Fatal error: ai.onnx.ml:TreeEnsembleRegressor(-1) is not a registered function/op", 3),
    ("Fatal error: ai.onnx.contrib:CLIPTokenizer(-1) is not a registered function/op", 1),
    ("Fatal error: mmdeploy:grid_sampler(-1) is not a registered function/op", 1),
])
def test_ort_unknown_op_domain_decides_build_or_registration(text: str, first: int) -> None:
    """ORT's graph resolution 'Fatal error: <domain>:<op>(<ver>) is not a registered
    function/op' (onnxruntime/core/graph/graph.cc, 1.x): onnxruntime's own domains
    (com.microsoft contrib ops, its nchwc layout, ai.onnx.ml) are compiled into the runtime, so
    their absence is this build or release (3); any other domain is a custom-op library not
    registered (1), as the dev case microsoft/onnxruntime-extensions#374 shows."""
    e = explain_text(text)
    assert e.subcause == "ort.custom-op"
    assert e.cause == first, e.why


def test_paddles_no_avx_hint_is_not_the_error() -> None:
    """python/paddle/base/core.py (2.5+) prints 'Hint: Your machine support AVX, but the
    installed paddlepaddle doesn't have avx core …' after libpaddle imported fine: a
    performance hint that must not outrank an error after it; its 'Error: … the installed
    PaddlePaddle is avx core' sibling (a CPU without AVX) stays the build variant."""
    hint = ("Hint: Your machine support AVX, but the installed paddlepaddle doesn't have avx "
            "core. Hence, no-avx core with worse performance will be imported.\n")
    e = explain_text(hint + "ModuleNotFoundError: No module named 'paddlenlp'")
    assert e.subcause == "python.no-module-named", e.why
    assert explain_text(hint).subcause == "paddle.avx-hint"
    e = explain_text("Error: Your machine doesn't support AVX, but the installed PaddlePaddle is "
                     "avx core, you should reinstall paddlepaddle with no-avx core.")
    assert (e.subcause, e.cause) == ("paddle.avx-core", 3)


def test_tensorflows_windows_loader_form() -> None:
    """tsl/platform/windows/load_library.cc (TF 1.x–2.x): every LoadLibraryExW failure is
    '<path with backslashes> not found', error code dropped — a DLL/.pyd is the search path
    first (a dependency not on PATH); a Linux .so on a Windows path stays the foreign binary."""
    e = explain_text("tensorflow.python.framework.errors_impl.NotFoundError: C:\\Users\\u\\op\\"
                     "zero_out.dll not found")
    assert (e.subcause, [a.cause for a in e.ranked][:2]) == ("tf.notfound-windows", [2, 4])
    e = explain_text(str(DEV_BY_THREAD["tensorflow/decision-forests#223"]["text"]))
    assert e.cause == 4
    assert explain_text("C:\\x\\foo.dll not found in cache").subcause != "tf.notfound-windows"


def test_ort_missing_provider_entry_point_is_a_cpu_build() -> None:
    """OrtSessionOptionsAppendExecutionProvider_CUDA is exported only by onnxruntime builds with
    the CUDA provider (include/onnxruntime/core/providers/cuda/cuda_provider_factory.h): .NET's
    'Unable to find an entry point named …_CUDA' means the onnxruntime.dll loaded is a CPU build,
    the C# side of Python's 'not in available provider names'."""
    e = explain_text("System.EntryPointNotFoundException: Unable to find an entry point named "
                     "'OrtSessionOptionsAppendExecutionProvider_CUDA' in DLL 'onnxruntime'.")
    assert (e.subcause, e.cause) == ("ort.provider-not-available", 3), e.why
    assert e.entities.get("backend") == "CUDA"


def test_ort_providers_argument_required_since_1_9() -> None:
    """onnxruntime/python/onnxruntime_inference_collection.py (1.9+): a GPU build refuses an
    InferenceSession without providers — code written for an earlier release (3)."""
    e = explain_text("ValueError: This ORT build has ['CUDAExecutionProvider', "
                     "'CPUExecutionProvider'] enabled. Since ORT 1.9, you are required to "
                     "explicitly set the providers parameter when instantiating "
                     "InferenceSession. For example, onnxruntime.InferenceSession(..., "
                     "providers=['CUDAExecutionProvider', 'CPUExecutionProvider'], ...)")
    assert (e.subcause, [a.cause for a in e.ranked][:2]) == ("ort.providers-required", [3, 5])


def test_ort_older_provider_unavailable_form() -> None:
    """onnxruntime_inference_collection.py before 1.9 raised ValueError "Specified provider 'X'
    is unavailable. Available providers: '…'" (later a UserWarning "… is not in available
    provider names"): both are a build without that provider (3)."""
    e = explain_text("ValueError: Specified provider 'CUDAExecutionProvider' is unavailable. "
                     "Available providers: 'CPUExecutionProvider'")
    assert (e.subcause, e.cause) == ("ort.provider-not-available", 3), e.why


def test_tensorflow_js_unknown_and_unregistered_custom_op() -> None:
    """tfjs-converter operation_executor.ts (tfjs 1.x–4.x): "Unknown op 'X'. File an issue at
    https://github.com/tensorflow/tfjs/issues …, or register a custom execution with
    tf.registerOp()" and "Custom op X is not registered." — the executor registry lacks the op
    (1), this tfjs release (3) next."""
    e = explain_text("TypeError: Unknown op 'NonMaxSuppressionV4'. File an issue at "
                     "https://github.com/tensorflow/tfjs/issues so we can add it, or register a "
                     "custom execution with tf.registerOp()")
    assert (e.subcause, [a.cause for a in e.ranked][:2]) == ("tfjs.unknown-op", [1, 3])
    e = explain_text("TypeError: Custom op SentencepieceOp is not registered.")
    assert e.subcause == "tfjs.unknown-op"


# ---------------------------------------------------- e7: TensorFlow and Paddle start-up notes
_TF_CUDART_WIN = ("2022-03-07 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] "
                  "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll "
                  "not found\n2022-03-07 I tensorflow/stream_executor/cuda/cudart_stub.cc:29] "
                  "Ignore above cudart dlerror if you do not have a GPU set up on your machine.\n")
_TF_NO_DRIVER = ("2024-02-15 17:38:56.694239: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not "
                 "find cuda drivers on your machine, GPU will not be used.\n")
_TF_LIBCUDA = ("2020-01-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:55] Could "
               "not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared"
               " object file: No such file or directory\n")
_TF_NOTES = ("2024-03-26 09:06:50.717849: E external/local_xla/xla/stream_executor/cuda/"
             "cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory"
             " for plugin cuDNN when one has already been registered\n2024-03-26 09:06:50.718008:"
             " E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:607] Unable to register "
             "cuFFT factory: Attempting to register factory for plugin cuFFT when one has already "
             "been registered\n2023-11-01 I tensorflow/core/util/port.cc:113] oneDNN custom "
             "operations are on. You may see slightly different numerical results due to "
             "floating-point round-off errors from different computation orders.\n2024-03-26 I "
             "tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is "
             "optimized to use available CPU instructions in performance-critical operations.\n")


@pytest.mark.parametrize(("noise", "alone"), [
    (_TF_CUDART_WIN, "tf.dso-loader"), (_TF_NO_DRIVER, "tf.no-cuda-driver"),
    (_TF_LIBCUDA, "tf.no-cuda-driver"), (_TF_NOTES, "tf.startup-notes")])
def test_tensorflows_start_up_notes_do_not_outrank_the_error_after_them(noise: str,
                                                                         alone: str) -> None:
    """Lines TensorFlow prints at every import and then goes on: the Windows form of the
    dso_loader warning (cudart64_110.dll, 'dlerror: … not found'), the cudart stub's 'Could not
    find cuda drivers on your machine, GPU will not be used.' (tsl/cuda/cudart_stub.cc) with
    libcuda/nvcuda not loaded, XLA's 'Unable to register cuDNN/cuFFT/cuBLAS factory … when one
    has already been registered' (2.14–2.16), the oneDNN and CPU-instruction notes. Before e7
    the Windows dso line (cuda.library-not-found, 52) outranked the real error and the other
    notes answered as a generic GPU problem; now the error after them decides and alone they
    still answer."""
    err = ("tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered "
           "'SentencepieceOp' in binary running on h. Make sure the Op and Kernel are registered "
           "in the binary running in this process.")
    e = explain_text(noise + err)
    assert (e.subcause, e.cause) == ("tf.op-not-registered", 5), e.why
    e = explain_text(noise + "ModuleNotFoundError: No module named 'tensorflow_addons'")
    assert e.subcause == "python.no-module-named", e.why
    e = explain_text(noise + "tensorflow.python.framework.errors_impl.NotFoundError: "
                     "C:\\Users\\u\\op\\zero_out.dll not found")
    assert e.subcause == "tf.notfound-windows", e.why
    assert explain_text(noise).subcause == alone


def test_tensorflows_windows_dso_warning_reads_like_the_linux_one() -> None:
    """The same dso_loader line names cudart64_110.dll on Windows and libcudart.so.11.0 on
    Linux: one family, the same order."""
    linux = explain_text("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could "
                         "not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: "
                         "cannot open shared object file: No such file or directory")
    win = explain_text("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could "
                       "not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not "
                       "found")
    assert linux.subcause == win.subcause == "tf.dso-loader"
    assert [a.cause for a in linux.ranked][:2] == [a.cause for a in win.ranked][:2] == [3, 2]


_PD_NO_GPU = ("W1203 09:46:38.052230  8109 init.cc:182] Compiled with WITH_GPU, but no GPU found "
              "in runtime.\n/home/u/venv/lib/python3.10/site-packages/paddle/base/framework.py:"
              "688: UserWarning: You are using GPU version Paddle, but your CUDA device is not "
              "set properly. CPU device will be used by default.\n  warnings.warn(\n")


def test_paddles_gpu_build_without_a_device_is_a_note_before_the_error() -> None:
    """base/framework.py (fluid/framework.py before 2.5) warns 'You are using GPU version
    Paddle, but your CUDA device is not set properly. CPU device will be used by default.' when
    core.get_cuda_device_count() is 0, init.cc 'Compiled with WITH_GPU, but no GPU found in
    runtime.': Paddle goes on with the CPU, so the error after them decides; alone it is the
    driver not found (2), a driver too old next (3)."""
    e = explain_text(_PD_NO_GPU + "RuntimeError: (NotFound) The kernel with key (GPU, NCHW, "
                     "float32) of kernel `custom_relu` is not registered.")
    assert (e.subcause, e.cause) == ("paddle.kernel-not-registered", 1), e.why
    e = explain_text(_PD_NO_GPU + "ImportError: libssl.so.1.1: cannot open shared object file: "
                     "No such file or directory")
    assert e.subcause == "loader.cannot-open", e.why
    alone = explain_text(_PD_NO_GPU)
    assert (alone.subcause, [a.cause for a in alone.ranked]) == ("paddle.gpu-not-visible", [2, 3])


def test_tensorflows_c_api_missing_from_the_flat_namespace_is_another_release() -> None:
    """dyld spells C symbols with a leading underscore (_TF_AssignUpdateVariable): TensorFlow's
    C API (tensorflow/c/, what PluggableDevice plugins such as tensorflow-metal call) is resolved
    from the running TensorFlow by design, so its absence is a TensorFlow release the plugin
    was not built for (3) — while a C++ TensorFlow symbol expected in the flat namespace stays
    an op library not linked against libtensorflow_framework (4)."""
    e = explain_text(str(DEV_BY_THREAD["tensorflow/text#654"]["text"]))
    assert [a.cause for a in e.ranked][:2] == [3, 4], e.why
    assert e.entities["symbols"][0]["owner"] == "tensorflow"
    e = explain_text(str(DEV_BY_THREAD["tensorflow/tensorflow#12895"]["text"]))
    assert e.cause == 4, e.why


# ----------------------------------------------------------------- e3b: PyTorch/loader/Python forms
E3B_FAMILY_SAMPLES = [
    # TorchScript resolving a custom op (not torch's own namespace): the code was written where
    # the op existed, so the library defining it is not imported in this process
    ("pytorch/pytorch#143773", "torch.torchscript-unknown-op", 5),
    # an out-of-tree backend that allocates tensors (empty/_copy_from) but lacks this op's kernel
    ("bdhirsh/pytorch_open_registration_example#6", "torch.could-not-run-backend", 1),
    # the installed package's own files fail half-way through its import: mixed releases
    ("Isi-dev/Google-Colab_Notebooks#10", "python.partially-initialized", 3),
    ("camenduru/flux-jupyter#28", "python.partially-initialized", 3),
    # a function template's instantiation ("double* at::TensorBase::data_ptr<double>() const")
    # is torch's, not the library's own code: built against another torch
    ("facebookresearch/detectron2#3710", "loader.undefined-symbol", 3),
    # a std::string (cxx11) torch symbol missing from a library in torch/lib: the C++ ABI
    ("deepjavalibrary/djl#3656", "loader.undefined-symbol", 3),
    # the linker: a CUDA library's C function no library on the link line defines (link order)
    ("rusty1s/pytorch_sparse#144", "loader.undefined-reference", 4),
    # a torch::class_ registered twice (a second copy of the library loaded)
    ("pytorch/pytorch#78028", "torch.registered-multiple-times", 1),
    # torch.compile's run-time C++ build without a compiler in the environment
    ("pytorch/pytorch#92745", "build.jit-no-compiler", 4),
    # "name '_C' is not defined" after the package reported it goes on without its C++ ops
    ("IDEA-Research/Grounded-Segment-Anything#436", "python.name-c-not-defined", 4),
    ("UTAustin-SwarmLab/Neuro-Symbolic-Video-Search-Temporal-Logic#1",
     "python.name-c-not-defined", 4),
    # a JIT-built op plugin (…_plugin) missing: the build did not produce it
    ("sicxu/Deep3DFaceRecon_pytorch#30", "python.no-module-named", 4),
    # macOS (libc++) asked for a GNU libstdc++ symbol: built with gcc instead of clang
    ("pytorch/pytorch#1228", "loader.symbol-not-found-macos", 4),
    # a Python name missing from an installed package's own module (its site-packages file in
    # the message), or from triton (torch.compile's compiler): another release of that package
    ("coreweave/ml-containers#64", "python.cannot-import-name", 3),
    ("woct0rdho/triton-windows#158", "python.cannot-import-name", 3),
]


def test_an_out_of_tree_backend_missing_its_allocation_kernels_is_not_loaded() -> None:
    """With no kernel even for empty_strided the backend extension is not loaded (cause 5
    first); a later op missing on a backend that allocated the tensor is that op's kernel."""
    bare = "Could not run 'aten::empty_strided' with arguments from the 'PrivateUse1' backend"
    assert [a.cause for a in explain_text(bare).ranked][:2] == [5, 1]
    later = "Could not run 'aten::index_add_' with arguments from the 'PrivateUse1' backend"
    assert [a.cause for a in explain_text(later).ranked][:2] == [1, 5]


def test_a_partially_initialised_module_of_the_users_own_code_stays_the_import_chain() -> None:
    """The same AttributeError raised from the user's own files (a local module named like a
    package, a circular import) is the import chain, not a release mix."""
    text = ('Traceback (most recent call last):\n'
            '  File "/home/me/proj/train.py", line 1, in <module>\n'
            '    import cv2\n'
            '  File "/home/me/proj/cv2.py", line 3, in <module>\n'
            '    cv2.imread("x")\n'
            "AttributeError: partially initialized module 'cv2' has no attribute 'imread' "
            "(most likely due to a circular import)")
    e = explain_text(text)
    assert e.subcause == "python.partially-initialized"
    assert e.cause == 5
    installed = ('  File "/usr/lib/python3/dist-packages/cv2/__init__.py", line 181, in <module>\n'
                 '    bootstrap()\n'
                 '  File "/usr/lib/python3/dist-packages/cv2/__init__.py", line 175, in bootstrap\n'
                 '    if hasattr(cv2, "_registerMatType"):\n'
                 "AttributeError: partially initialized module 'cv2' has no attribute "
                 "'_registerMatType' (most likely due to a circular import)")
    assert explain_text(installed).cause == 3


def test_name_c_not_defined_from_a_source_tree_stays_the_import_chain() -> None:
    """The same NameError with the package run from a source/build tree is that tree shadowing
    the install (5), as before."""
    text = ('Traceback (most recent call last):\n'
            '  File "<stdin>", line 1, in <module>\n'
            '  File "/home/me/src/pkg/pkg/__init__.py", line 5, in <module>\n'
            '    x = _C.f()\n'
            "NameError: name '_C' is not defined")
    assert explain_text(text).cause == 5


def test_link_time_references_with_a_symbol_version_stay_a_release_question() -> None:
    """A versioned reference (cudaLaunchKernelExC@libcudart.so.11.0) names the release the
    linked library lacks: not a missing -l flag."""
    text = ("/usr/bin/ld: libtorch_cuda.so: undefined reference to "
            "`cudaLaunchKernelExC@libcudart.so.11.0'")
    assert explain_text(text).cause != 4


# ------------------------------------------------------------------ e8: PyTorch extension forms
E8_FAMILY_SAMPLES = [
    # a package's own report that its compiled part is not installed / not compiled
    ("AutoGPTQ/AutoGPTQ#246", "build.extension-skipped", 4),
    # ... or that loading it failed and it carries on without it (low: its import error decides)
    ("IDEA-Research/Grounded-Segment-Anything#152", "build.compiled-ops-load-failed", 4),
    # a package named like the directory that holds it: "could be shadowed by the repository"
    ("yangchris11/samurai#68", "python.source-root", 5),
    ("facebookresearch/sam2#560", "python.source-root", 5),
    # "undefined symbol" with the symbol's name cut off: the file loaded, a release question first
    ("state-spaces/mamba#28", "loader.undefined-symbol-unnamed", 3),
    ("traveller59/spconv#579", "loader.undefined-symbol-unnamed", 3),
    # a compiled submodule named for its source language (…_cc like …_cpp)
    ("traveller59/spconv#454", "python.no-module-named", 4),
    # a compiled module's missing attribute, the pasted name without its closing quote
    ("Tencent-Hunyuan/Hunyuan3D-2.1#40", "python.compiled-module-attribute", 4),
    # a failed build whose compiler error names torch's own API as unknown (batch 2)
    ("CharlesShang/DCNv2#79", "build.error-building-extension", 3),
    # TorchScript's exception wrapper gives way to the unknown op it carries (batch 3)
    ("rusty1s/pytorch_scatter#147", "torch.torchscript-unknown-op", 5),
]


def test_torchscripts_error_report_wrapper_lets_the_message_decide() -> None:
    """"terminate called after throwing an instance of 'torch::jit::ErrorReport'" only names
    the exception type: the message after what() decides; alone it is still the TorchScript
    front end's (registration / schema) question."""
    alone = explain_text("terminate called after throwing an instance of 'torch::jit::ErrorReport'")
    assert alone.subcause == "torch.jit-error-report" and alone.cause == 1
    schema = explain_text("terminate called after throwing an instance of "
                          "'torch::jit::ErrorReport'\n  what():  \nexpected ident but found "
                          "'(' here:\nmy_ns::my_op(Tensor x) -> Tensor")
    assert schema.subcause == "torch.schema-parse" and schema.cause == 1


def test_a_build_failing_on_the_frameworks_own_api_is_another_release() -> None:
    """The first compiler error names torch's C++ API (a TH* function, THC/THC.h, an at:: or
    c10:: name) as unknown: the sources are written for another torch (3, then 4). A failed
    build without such a line stays the build (4)."""
    thc = ("src/cuda/roi_align.cu:2:10: fatal error: THC/THC.h: No such file or directory\n"
           "compilation terminated.\n"
           "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1")
    member = ("csrc/ops.cpp:41:18: error: 'DeprecatedTypeProperties' is not a member of 'at'\n"
              "error: command 'g++' failed with exit status 1")
    for text in (thc, member):
        assert [a.cause for a in explain_text(text).ranked][:2] == [3, 4], text
    toolchain = ("gcc: error trying to exec 'cc1plus': execvp: No such file or directory\n"
                 "error: command 'gcc' failed with exit status 1")
    assert explain_text(toolchain).cause == 4


def test_a_compiled_ops_warning_yields_to_the_nameerror_from_a_source_tree() -> None:
    """The package's "Failed to load custom C++ ops" line is low: with the NameError of its
    compiled module raised from a source tree, that tree shadowing the install decides (5)."""
    text = ('Traceback (most recent call last):\n'
            '  File "<stdin>", line 1, in <module>\n'
            '  File "/home/me/src/pkg/pkg/__init__.py", line 5, in <module>\n'
            '    x = _C.f()\n'
            "NameError: name '_C' is not defined\n"
            'UserWarning: Failed to load custom C++ ops. Running on CPU mode Only!')
    assert explain_text(text).cause == 5
    alone = explain_text("UserWarning: Failed to load custom C++ ops. Running on CPU mode Only!")
    assert alone.subcause == "build.compiled-ops-load-failed" and alone.cause == 4


def test_cpythons_own_shadowing_hint_is_the_import_chain() -> None:
    """CPython 3.13 names a local file that shadows a module ("consider renaming '…' since it
    has the same name as …"): the import chain (5). "Shadowed by" a variable is not a module."""
    stdlib = ("AttributeError: module 'random' has no attribute 'randint' (consider renaming "
              "'/home/me/random.py' since it has the same name as the standard library module "
              "named 'random' and prevents importing that standard library module)")
    library = ("AttributeError: module 'torch' has no attribute 'ops' (consider renaming "
               "'/home/me/torch.py' if it has the same name as a library you intended to import)")
    for text in (stdlib, library):
        e = explain_text(text)
        assert e.subcause == "python.source-root" and e.cause == 5, (text, e.subcause)
    assert explain_text("warning: x is shadowed by a local variable").subcause != \
        "python.source-root"


def test_an_undefined_symbol_with_its_name_keeps_the_symbol_reading() -> None:
    """The unnamed form only answers when the line ends at "undefined symbol": a named symbol
    is classified as before."""
    named = explain_text("ImportError: /x/ext.so: undefined symbol: _ZN3c104cuda9SetDeviceEi")
    assert named.subcause == "loader.undefined-symbol"
    bare = explain_text("ImportError: /x/site-packages/ext.cpython-310-x86_64-linux-gnu.so: "
                        "undefined symbol:")
    assert bare.subcause == "loader.undefined-symbol-unnamed" and bare.cause == 3
    assert [a.cause for a in bare.ranked][:2] == [3, 4]


# ------------------------------------------------------------------ one sample per round's family
RESOLVED_SAMPLES = [*E1_FAMILY_SAMPLES, *E3_FAMILY_SAMPLES, *E4_FAMILY_SAMPLES,
                    *E3B_FAMILY_SAMPLES, *E8_FAMILY_SAMPLES]


@pytest.mark.parametrize(("thread", "family", "cause"), RESOLVED_SAMPLES,
                         ids=[f"{f}:{t}" for t, f, _ in RESOLVED_SAMPLES])
def test_round_family_sample(thread: str, family: str, cause: int) -> None:
    """A dev case per pattern family or refinement added in the later rounds (PyTorch, the
    loader and Python: e1, e3, e3b, e8; TensorFlow, ONNX Runtime, Paddle and Windows: e4); the
    cause its thread's resolution established comes first."""
    case = DEV_BY_THREAD[thread]
    assert case["cause"] == cause
    e = explain_text(str(case["text"]))
    assert e.subcause == family, (e.subcause, e.title)
    assert e.cause == cause, ([a.cause for a in e.ranked], e.why)


def test_a_pyinit_symbol_is_the_modules_own_entry_point() -> None:
    """PyInit_<name> is not CPython's API (built for another Python) but the module's own init
    function, named after the file: explain reads it as the build (OD416, cause 4)."""
    e = explain_text("ImportError: dynamic module does not define module export function "
                     "(PyInit__C)")
    assert e.cause == 4 and e.codes == ["OD416"]
    assert "init function" in e.entities["symbols"][0]["is"]
    api = explain_text("ImportError: /x/_C.so: undefined symbol: PyUnicode_AsUTF8AndSize")
    assert "CPython API function" in api.entities["symbols"][0]["is"]


# ------------------------------------------------------------------ e6: MindSpore and OneFlow
E6_FAMILY_SAMPLES = [
    ("siliconflow/onediff#947", "mindspore-oneflow.api-missing", 3),
    ("candle-org/d2l-mindspore#52", "mindspore-oneflow.api-missing", 3),
    ("Oneflow-Inc/oneflow#9398", "mindspore-oneflow.placeholder-package", 4),
    ("mindspore-lab/mindocr#615", "cann.inner-error", 3),
]


@pytest.mark.parametrize(("thread", "family", "cause"), E6_FAMILY_SAMPLES,
                         ids=[f"{f}:{t}" for t, f, _ in E6_FAMILY_SAMPLES])
def test_e6_family_sample(thread: str, family: str, cause: int) -> None:
    """A dev thread per MindSpore / OneFlow family added in round e6; the cause its resolution
    established comes first."""
    case = DEV_BY_THREAD[thread]
    assert case["cause"] == cause
    e = explain_text(str(case["text"]))
    assert e.subcause == family, (e.subcause, e.title)
    assert e.cause == cause, ([a.cause for a in e.ranked], e.why)


def test_framework_api_missing_is_not_the_import_chain_unless_half_initialised() -> None:
    """A name missing from mindspore / oneflow (their generated functional module oneflow._C
    included) is another framework release; 'partially initialized module' stays the import
    chain, and an extension's own _C keeps its build reading."""
    e = explain_text("ImportError: cannot import name 'jit' from 'mindspore' "
                     "(/usr/lib/python3.9/site-packages/mindspore/__init__.py)")
    assert e.cause == 3, e.why
    e = explain_text("AttributeError: partially initialized module 'oneflow' has no attribute "
                     "'nn' (most likely due to a circular import)")
    assert e.subcause != "mindspore-oneflow.api-missing" and e.cause == 5, e.why
    e = explain_text("AttributeError: module 'pointnet2_ops._ext' has no attribute "
                     "'furthest_point_sampling'")
    assert e.subcause == "python.compiled-module-attribute", e.why


def test_oneflow_own_cuda_warnings() -> None:
    """OneFlow's CUDA checks (oneflow/core/hardware/cuda_device_descriptor.cpp and
    core/ep/cuda/cuda_stream.cpp, master 2025): a GPU architecture the wheel was not compiled
    for (3, OD310); a cuBLAS / cuDNN of another release loaded (3, then the search path), low so
    that a later error decides."""
    e = explain_text("W20230915 21:28:40.715044 2569473 cuda_device_descriptor.cpp:91] The CUDA "
                     "device 'NVIDIA TITAN Xp' with capability 61 is not compatible with the "
                     "current OneFlow installation. The current program may throw a 'no kernel "
                     "image is available for execution on the device' error or hang for a long "
                     "time. Please reinstall OneFlow compiled with a newer version of CUDA.")
    assert (e.subcause, e.cause, e.codes[0]) == ("oneflow.cuda-arch", 3, "OD310"), e.why
    warn = ("W20240327 10:21:25.513151 715 cuda_stream.cpp:49] Runtime version 8.5 of cuDNN "
            "incompatible with compiletime version 8.9.")
    e = explain_text(warn)
    assert (e.subcause, [a.cause for a in e.ranked][:2]) == ("oneflow.runtime-compiletime",
                                                               [3, 2]), e.why
    e = explain_text(warn + "\nImportError: libcudnn_cnn_infer.so.8: cannot open shared object "
                     "file: No such file or directory")
    assert e.subcause == "loader.cannot-open", e.why


def test_mindspore_custom_reg_info_rejected() -> None:
    """ops.Custom (mindspore/ops/operations/custom_ops.py, 1.6–2.x) raises 'Invalid reg info
    <file>: <json>' when Oplib.reg_op refuses the registration: the op's registration (1)."""
    e = explain_text("ValueError: Invalid reg info /home/u/add.py: {\"op_name\": \"Custom_add\", "
                     "\"inputs\": [{\"index\": 0, \"name\": \"x\"}], \"target\": \"GPU\"}")
    assert (e.subcause, e.cause) == ("mindspore.custom-reg-info", 1), e.why


def test_placeholder_words_elsewhere_do_not_match() -> None:
    """Only a package that calls itself a placeholder: MindSpore's own 'Add a placeholder
    instead' warning (Custom with an empty output) is not it."""
    e = explain_text("[WARNING] ME(1:1,MainProcess) [mindspore/ops/operations/custom_ops.py] The "
                     "function output are empty tuple. Add a placeholder instead. Do not use it "
                     "as it could be any uninitialized data.")
    assert e.subcause != "mindspore-oneflow.placeholder-package"


@pytest.mark.parametrize(("text", "family", "cause"), [
    ("TypeError: For 'Custom', 'func_type': aot, 'func': add.so, 'func' should be like "
     "'file_name:func_name', but got add.so", "mindspore.custom-func-spec", 1),
    ("ValueError: For 'Custom', 'func_type': aicpu, 'func': <function f>, the registration "
     "information must be set, but current is None. Use 'CustomRegOp' to generate the "
     "registration information, then pass it to 'reg_info'", "mindspore.custom-reg-info", 1),
    ("RuntimeError: Compilation error in compiling ./ops/add.cpp:", "mindspore.custom-aot-compile",
     4),
])
def test_mindspore_custom_declaration_forms(text: str, family: str, cause: int) -> None:
    """ops.Custom's own checks (mindspore/ops/operations/custom_ops.py, 1.8–2.x): the declared
    function ('file:func' for aot), the registration info, and the AOT source it compiles
    itself; the compiler's own error, when pasted below, decides instead."""
    e = explain_text(text)
    assert (e.subcause, e.cause) == (family, cause), e.why
    e = explain_text("RuntimeError: Compilation error in compiling /home/u/add.cu:\nnvcc fatal   : "
                     "Unsupported gpu architecture 'compute_80'")
    assert e.cause == 3, e.why


def test_framework_api_missing_through_a_local_shadow_is_the_import_chain() -> None:
    """A local mindspore.py in the traceback is imported instead of the installed package: the
    import chain first (refiner framework-api), not another release."""
    text = ('Traceback (most recent call last):\n'
            '  File "/home/u/proj/train.py", line 1, in <module>\n'
            '    import mindspore as ms\n'
            '  File "/home/u/proj/mindspore.py", line 3, in <module>\n'
            '    x = ms.Tensor([1])\n'
            "AttributeError: module 'mindspore' has no attribute 'Tensor'")
    e = explain_text(text)
    assert e.subcause == "mindspore-oneflow.api-missing" and e.cause == 5, e.why


# ------------------------------------------------------------------ how a message was pasted
def _decorations() -> list[tuple[str, Any]]:
    """What a runner, a terminal or a forum does to a message's lines (not what it says)."""
    def wrap80(t: str) -> str:
        out = []
        for line in t.splitlines():
            while len(line) > 80:
                out.append(line[:80])
                line = line[80:]
            out.append(line)
        return "\n".join(out)

    def each(prefix: Any) -> Any:
        return lambda t: "\n".join(prefix(i) + ln for i, ln in enumerate(t.splitlines()))

    return [
        ("GitHub Actions timestamps", each(lambda i: f"2025-03-01T12:34:{i % 60:02d}.1234567Z ")),
        ("GitLab / Jenkins times", each(lambda i: f"[12:34:{i % 60:02d}] ")),
        ("BuildKit step prefix", each(lambda i: f"#12 3.{i:03d} ")),
        ("pytest's E lines", each(lambda i: "E       ")),
        ("a Markdown quote", each(lambda i: "> ")),
        ("a uniformly indented block", each(lambda i: "    ")),
        ("colour codes on error lines", lambda t: "\n".join(
            f"\x1b[31;1m{ln}\x1b[0m" if "rror" in ln else ln for ln in t.splitlines())),
        ("Windows line ends, trailing blanks", lambda t: t.replace("\n", "   \r\n")),
        ("a terminal 80 columns wide", wrap80),
    ]


def test_the_way_a_message_was_pasted_does_not_change_the_answer() -> None:
    """Every 4th dev message, decorated the ways CI logs, terminals and forums decorate it,
    gets the same top cause and pattern as the message itself (before `undecorate`, 154 of
    641 × 15 such variants changed their answer; an 80-column wrap alone 98)."""
    changed = []
    for case in DEV[::4]:
        text = str(case["text"])
        plain = explain_text(text)
        for name, deco in _decorations():
            got = explain_text(deco(text))
            if (got.cause, got.subcause) != (plain.cause, plain.subcause):
                changed.append((case["thread"], name, plain.subcause, got.subcause))
    assert not changed, changed[:10]


# ------------------------------------------------------------------ e10: round 8's mechanisms
E10_SAMPLES = [
    # ONNX's schema registry refuses a second schema of one name: registered twice (1)
    ("microsoft/onnxruntime#3394", "onnx.schema-registered-twice", 1),
    # TensorFlow's self-check names the cuDNN DLL of its build; R's "module not found" follows
    ("rstudio/keras3#102", "tf.self-check-cuda", 3),
    # `_k2` imported by k2's own __init__.py in site-packages: the install lacks its core (4)
    ("k2-fsa/k2#930", "python.no-module-named", 4),
    # torch's frames run (torch.ops.load_library), so a core torch library missing is one this
    # torch does not have: built for another release (3), not "import torch first"
    ("traveller59/spconv#156", "loader.cannot-open", 3),
    # a C++ program linked against libtorch: no import to wait for, the search path (2)
    ("hasktorch/hasktorch#293", "loader.cannot-open", 2),
    # the .so a JIT build (cpp_extension._jit_compile) should have produced is missing (4)
    ("alibaba/Megatron-LLaMA#28", "loader.cannot-open", 4),
]


@pytest.mark.parametrize(("thread", "family", "cause"), E10_SAMPLES,
                         ids=[t for t, _, _ in E10_SAMPLES])
def test_e10_sample(thread: str, family: str, cause: int) -> None:
    case = DEV_BY_THREAD[thread]
    assert case["cause"] == cause
    e = explain_text(str(case["text"]))
    assert (e.subcause, e.cause) == (family, cause), (e.subcause, [a.cause for a in e.ranked])


@pytest.mark.parametrize("thread", ["rusty1s/pytorch_cluster#100",
                                    "alexandrosstergiou/SoftPool#55",
                                    "jhj0517/Whisper-WebUI#114"])
def test_a_wrap_at_an_unusual_width_is_read_joined(thread: str) -> None:
    """A 90-column terminal (not a usual width, so `undecorate` leaves it) breaks the message's
    one line inside its path or symbol: line by line, only a generic form matches. The longest
    lines joined with the next are read as well, and that reading wins because it finds the
    specific form — the answer of the unwrapped message."""
    from opdoctor.explain import load_patterns
    from opdoctor.explain.entities import normalise
    from opdoctor.explain.matcher import _join_wrapped, _match_lines

    text = str(DEV_BY_THREAD[thread]["text"]).strip()
    wrapped = "\n".join(text[i:i + 90] for i in range(0, len(text), 90))
    assert "\n" in wrapped and len(text.splitlines()) == 1
    plain = explain_text(text)
    line_by_line = _match_lines(_join_wrapped(normalise(wrapped)), load_patterns())
    assert max((m.pattern.priority for m in line_by_line), default=-1) < \
        max(m.pattern.priority for m in _match_lines([text], load_patterns()))
    got = explain_text(wrapped)
    assert (got.cause, got.subcause) == (plain.cause, plain.subcause)


# ------------------------------------------------------------------ e11: round 9's mechanisms
E11_SAMPLES = [
    # MSVC's linker: the library's own function at global scope, not exported (4)
    ("pytorch/vision#2139", "link.unresolved-external", 4),
    # StreamExecutor's pre-1.10 namespace is TensorFlow's: a plugin for another TF release (3)
    ("NVIDIA/DALI#52", "tf.notfound-undefined-symbol", 3),
    # a TensorRT entry point missing from the TensorRT loaded: another TensorRT release (3)
    ("microsoft/onnxruntime#12766", "loader.undefined-symbol", 3),
]


@pytest.mark.parametrize(("thread", "family", "cause"), E11_SAMPLES,
                         ids=[t for t, _, _ in E11_SAMPLES])
def test_e11_sample(thread: str, family: str, cause: int) -> None:
    case = DEV_BY_THREAD[thread]
    assert case["cause"] == cause
    e = explain_text(str(case["text"]))
    assert (e.subcause, e.cause) == (family, cause), (e.subcause, [a.cause for a in e.ranked])


@pytest.mark.parametrize(("text", "cause", "owner_words"), [
    # a torch function at link time: built against another torch (3)
    ('my_op.obj : error LNK2019: unresolved external symbol "public: static class '
     'c10::intrusive_ptr<struct c10::TensorImpl> __cdecl c10::make_foo(void)" '
     '(?make_foo@c10@@SA?AV) referenced in function "void __cdecl my_func(void)"', 3, "torch"),
    # CPython's API through its import thunk: python3x.lib missing from the link (4)
    ("ext.obj : error LNK2001: unresolved external symbol __imp_PyLong_FromLong", 4,
     "CPython"),
    # a CUDA runtime function: cudart.lib missing from the link (4)
    ('kernel.obj : error LNK2019: unresolved external symbol cudaLaunchKernel referenced in '
     'function "void __cdecl launch(void)"', 4, "CUDA"),
])
def test_msvc_unresolved_externals_are_read_by_their_owner(text: str, cause: int,
                                                           owner_words: str) -> None:
    """MSVC's undecorated name (access specifier, return type, calling convention first) is
    read as a symbol entity, as GNU ld's `undefined reference to` is."""
    e = explain_text(text)
    assert e.subcause == "link.unresolved-external"
    assert e.cause == cause and owner_words in e.ranked[0].why


def test_a_source_tree_without_its_build_is_not_asserted_to_shadow_anything() -> None:
    """Survey 14's P8: Python's message for an editable install (`pip install -e .`) whose
    in-place build was deleted is the one a shadowing checkout gives; explain said "a source
    checkout shadows the installed package" at high confidence, and the user was sent to run
    from another directory. Both readings are named, and `check --package` decides."""
    e = explain_text("ImportError: cannot import name '_C' from partially initialized module "
                     "'myext' (most likely due to a circular import) "
                     "(/home/me/work/myext/myext/__init__.py)")
    assert e.cause == 5 and e.confidence != "high", (e.cause, e.confidence)
    assert "editable install" in e.why and "shadows the installed package" in e.why
    assert "opdoctor check --package myext" in e.decides


def test_an_installed_extension_the_loader_cannot_open_may_be_missing() -> None:
    """Survey 14's P7: a scikit-build-core editable install whose compiled module in
    site-packages was deleted fails with "cannot open shared object file: No such file"; the
    answer said the file "exists … built for another CPU/OS". Python found the file name, so
    a foreign build stays first, but the title no longer asserts the file is there."""
    lib = f"{_SITE}/delta/_fast.cpython-311-x86_64-linux-gnu.so"
    e = explain_text(f"ImportError: {lib}: cannot open shared object file: No such file or "
                     "directory")
    assert e.cause == 4 and "exists" not in e.title and "missing" in e.title, e.title
    assert "the file is gone" in e.why and f"opdoctor check {lib}" in e.decides


def test_a_torch_symbol_names_the_link_line_as_the_other_reading() -> None:
    """Survey 14's P5: an op library linked without -lc10 -ltorch_cpu fails on a c10 symbol
    the installed torch defines — the text reads like another torch release. The release
    stays first (the commoner case), and the link line is the alternative, with the check
    that tells (OD432)."""
    e = explain_text("OSError: /work/op/libop.so: undefined symbol: "
                     "_ZN3c1019UndefinedTensorImpl10_singletonE")
    alts = {a.cause: a.why for a in e.ranked}
    assert e.cause == 3 and "-lc10 -ltorch_cpu" in alts[4] and "OD432" in alts[4], alts
    assert "opdoctor check /work/op/libop.so" in e.decides and "OD432" in e.decides


# ------------------------------------------------ the process died: the real texts of each way
def _shell_words(sig: str) -> str:
    """What bash itself prints when its child dies of ``sig`` (a real bash, a real signal)."""
    out = subprocess.run(["bash", "-c", f"sh -c 'kill -{sig} $$'; true"], capture_output=True,
                         text=True, timeout=30)
    return out.stderr.strip()


@pytest.mark.parametrize("sig,words,subcause", [
    ("FPE", "Floating point exception", "crash.signal"),
    ("TRAP", "Trace/breakpoint trap", "crash.signal"),
    ("SYS", "Bad system call", "crash.signal"),
    ("KILL", "Killed", "process.killed"),
    ("XCPU", "CPU time limit exceeded", "process.killed"),
])
def test_a_fatal_signal_in_the_shells_words_is_a_crash_not_nothing(sig: str, words: str,
                                                                   subcause: str) -> None:
    """The shell's line for each fatal signal gets an answer (it got none): a native crash or
    a kill from outside, at low confidence, never registration first."""
    text = _shell_words(sig)
    assert words in text, text
    e = explain_text(text)
    assert e.subcause == subcause and e.cause == 3 and e.confidence == "low", (text, e.subcause)
    assert [a.cause for a in e.ranked][:3] == [3, 4, 1]


_HEAP = r"""
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv) {
  char *p = malloc(32), b[8];
  switch (atoi(argv[1])) {
  case 0: free(p); free(p); break;                /* freed twice */
  case 1: free(p + 8); break;                     /* not a pointer malloc returned */
  case 2: strcpy(b, argv[2]); puts(b); break;     /* written past the end of the stack */
  }
  return 0;
}
"""


def test_glibcs_heap_and_stack_checks_are_a_crash_of_two_builds_or_the_op(tmp_path: Any) -> None:
    """glibc's own abort messages (a real program: a double free, a bad free, a stack overrun
    under -fstack-protector) are a native crash ranked like one (3, 4, 1), with or without a
    load in sight — they got no answer before."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "heap.c").write_text(_HEAP)
    subprocess.run([cc, "-O0", "-fstack-protector-all", "heap.c", "-o", "heap"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=120)
    seen = []
    for args in (["0"], ["1"], ["2", "A" * 64]):
        run = subprocess.run([str(tmp_path / "heap"), *args], capture_output=True, text=True,
                             timeout=30)
        line = run.stderr.strip().splitlines()[0]
        assert run.returncode == -6, (args, run.returncode, line)  # glibc aborts
        e = explain_text(line)
        assert e.subcause == "crash.heap-corruption" and e.cause == 3, (line, e.subcause)
        assert [a.cause for a in e.ranked][:3] == [3, 4, 1], line
        seen.append(line)
    assert any("double free" in s for s in seen) and any("stack smashing" in s for s in seen)
    e = explain_text("Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
                     "    import myop\n" + seen[0] + "\nAborted (core dumped)")
    # at import: two copies of a library or an ABI mix first, a registrar's bug after
    assert e.subcause == "crash.heap-corruption" and [a.cause for a in e.ranked] == [3, 1, 4]


def test_a_compiler_killed_by_the_oom_killer_is_a_build_that_did_not_happen(
        tmp_path: Any) -> None:
    """What g++ really says when its cc1plus gets SIGKILL (what the out-of-memory killer
    sends; here the test sends it): the build failed (4), and the fix is fewer jobs — not
    the generic "an error" prior it got. A bare "Killed" after a build line is the same."""
    import os
    import shutil
    import signal

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++")
    (tmp_path / "slow.cpp").write_text(
        "#include <regex>\n#include <map>\n#include <string>\n"
        "int main() { std::regex r(\"a+\"); std::map<int, std::string> m; return 0; }\n")
    cc = subprocess.Popen([gxx, "-O2", "-c", "slow.cpp", "-o", "slow.o"], cwd=tmp_path,
                          stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    killed = False
    while not killed and time.monotonic() < deadline and cc.poll() is None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            name, rest = stat.split("(", 1)[1].rsplit(")", 1)
            if name == "cc1plus" and int(rest.split()[1]) == cc.pid:
                os.kill(int(pid), signal.SIGKILL)
                killed = True
                break
        time.sleep(0.005)
    err = cc.communicate(timeout=60)[1]
    if not killed:
        pytest.skip("cc1plus finished before it could be killed")
    assert "Killed signal terminated program cc1plus" in err, err
    e = explain_text(err)
    assert e.subcause == "build.compiler-killed" and e.cause == 4, (err, e.subcause)
    assert "MAX_JOBS" in e.explanation + " ".join(e.next_steps)
    e = explain_text("[3/12] c++ -MMD -MF x.o.d -c x.cpp -o x.o\n" + _shell_words("KILL"))
    assert e.subcause == "process.killed" and e.cause == 4 and "MAX_JOBS" in e.decides


@pytest.mark.parametrize("sig,subcause", [
    ("SEGV", "crash.segfault"), ("BUS", "loader.bus-error"),
    ("ILL", "cpu.illegal-instruction"), ("ABRT", "crash.abort"),
])
def test_core_dumped_never_outranks_the_signal_it_follows(sig: str, subcause: str) -> None:
    """"(core dumped)", which the shell adds where core files are on, is the catch-all's
    word: the named signal on the same line decides ("Bus error (core dumped)" is a truncated
    library, cause 4 — `make realworld`'s truncated cases said cause 3 when it outranked)."""
    e = explain_text(_shell_words(sig) + " (core dumped)")
    assert e.subcause == subcause, e.subcause


def test_a_core_name_missing_from_the_framework_is_a_shadowing_copy(tmp_path: Any) -> None:
    """Survey 21's W1: with a `torch.py` first on the path, `torch.cuda` fails with "module
    'torch' has no attribute 'cuda'" (the real interpreter's words, from a script that imports
    the shadow); explain said "the code expects another torch release". Every torch release
    has torch.cuda: the module imported is not the installed one — cause 5 first. A name a
    release may really lack (torch.compile before 2.0, numpy.float since 1.24) stays cause 3."""
    (tmp_path / "torch.py").write_text("VERSION = 'mine'\n")
    (tmp_path / "run.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    out = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True,
                         text=True, timeout=60, cwd=str(tmp_path))
    assert "AttributeError: module 'torch' has no attribute 'cuda'" in out.stderr, out.stderr
    e = explain_text(out.stderr.strip().splitlines()[-1])
    assert [a.cause for a in e.ranked][:2] == [5, 3] and "every torch release has torch.cuda" \
        in e.why, e.why
    for text in ("AttributeError: module 'torch' has no attribute 'compile'",
                 "AttributeError: module 'numpy' has no attribute 'float'"):
        assert explain_text(text).cause == 3, text


def test_pips_leftover_of_an_interrupted_install_is_named_and_outranked(tmp_path: Any) -> None:
    """Survey 22's A1x: pip's warning about the `~orch` directories an interrupted
    uninstall or upgrade of torch leaves was "an error opdoctor has no specific pattern for"
    (cause 3). It is pip's leftover (5): named, muted — the error after it decides. The
    warning as this pip prints it, and in the older wording users paste."""
    site = tmp_path / "site"
    (site / "~orch").mkdir(parents=True)
    (site / "~orch-2.14.1.dist-info").mkdir()
    (site / "~orch-2.14.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.14.1\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "list", "--path", str(site)],
                         capture_output=True, text=True, timeout=120)
    warning = next((line for line in pip.stderr.splitlines() if "distribution ~orch" in line),
                   "")
    assert warning.startswith("WARNING: Ignoring"), pip.stderr
    for text in (warning, f"WARNING: Ignoring invalid distribution ~orch ({site})"):
        e = explain_text(text)
        assert (e.cause, e.subcause) == (5, "pip.interrupted-leftover"), (text, e.subcause)
        assert str(site) in e.title
    later = explain_text(warning + "\nImportError: libtorch_cuda.so: cannot open shared object "
                         "file: No such file or directory")
    assert later.subcause.startswith("loader."), later.subcause


def test_a_preload_the_loader_skipped_is_not_the_failure(tmp_path: Any) -> None:
    """Survey 22's E7x: glibc's "ld.so: object … from LD_PRELOAD cannot be preloaded …:
    ignored." read as the job's failure ("a shared library was not found", 69 %) although the
    program ran. Alone it is a low-confidence note on the variable; the error after it wins."""
    real = subprocess.run([sys.executable, "-c", "print('ran')"], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "LD_PRELOAD": str(tmp_path / "libgone.so")})
    assert real.returncode == 0 and real.stdout.strip() == "ran", real.stderr
    line = real.stderr.strip().splitlines()[0]
    assert "cannot be preloaded" in line and line.endswith("ignored."), real.stderr
    alone = explain_text(line)
    assert (alone.subcause, alone.confidence) == ("loader.preload-ignored", "low")
    after = explain_text(line + "\nImportError: libfoo.so.1: cannot open shared object file: "
                         "No such file or directory")
    assert after.subcause == "loader.cannot-open" and "libfoo.so.1" in str(after.entities), after


def test_numpys_own_message_about_another_pythons_core_is_that_build(tmp_path: Any) -> None:
    """Survey 22's E1: numpy 2.5.5 for CPython 3.12 first on a 3.11 PYTHONPATH; NumPy's own
    import check says "The following compiled module files exist, but seem incompatible with
    with either python 'cpython-311' or the platform 'linux'". explain read the missing
    `numpy._core._multiarray_umath` as a NumPy release's API change (cause 3). It is another
    Python's build (5, OD503). The text is NumPy's, from a copy of this NumPy whose core is
    renamed to CPython 3.12's name."""
    import shutil
    import sysconfig

    src = Path(importlib.util.find_spec("numpy").origin).parent  # type: ignore[arg-type,union-attr]
    dst = tmp_path / "np312" / "numpy"

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    core = next(dst.glob(f"_core/_multiarray_umath{suffix}"))
    core.rename(core.with_name(f"_multiarray_umath{suffix.replace('-311-', '-312-')}"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import numpy"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(dst.parent)})
    assert "seem incompatible" in real.stderr and "cpython-311" in real.stderr, real.stderr[-800:]
    e = explain_text(real.stderr)
    assert (e.cause, e.subcause) == (5, "python.numpy-core-other-python"), (e.cause, e.subcause)
    assert "cpython-311" in e.title


@pytest.mark.parametrize(("thread", "order"), [
    # pre-CUDA-11 sonames carry the toolkit's minor: another CUDA release first
    ("pytorch/pytorch#10910", [3, 2]),  # libcudart.so.9.0 after conda moved to 9.2
    ("pytorch/pytorch#41975", [3, 2]),  # libcufft.so.10.0 on JetPack's CUDA 10.2
    ("isarsoft/yolov4-triton-tensorrt#16", [3, 2]),  # a plugin built with CUDA 10.1
    ("casper-hansen/AutoAWQ#164", [2, 3]),  # libcudart.so.12: a major-only soname stays 2 first
    # torch's own namespace in TorchScript: a static link or an older torch, not an import
    ("https://blog.gitcode.com/c45565b2b3ba5dfb512fb30c584ade4b.html", [1, 3]),
    ("pytorch/pytorch#111654", [1, 3]),
    # cuDNN 8's own loader on Windows names its sub-library: the search path
    ("ILikeAI/AlwaysReddy#40", [2, 3]),
])
def test_the_tenth_rounds_entities(thread: str, order: list[int]) -> None:
    """Rules written from the tenth collection round's dev threads (README_e12.md)."""
    e = explain_text(str(DEV_BY_THREAD[thread]["text"]))
    assert [a.cause for a in e.ranked][:2] == order, (e.subcause, e.why)


@pytest.mark.parametrize(("thread", "order"), [
    # TensorRT's plugin registry: the plugin's library was not loaded (registration first)
    ("open-mmlab/mmdeploy#186", [1, 2]),
    ("enazoe/yolo-tensorrt#157", [1, 2]),
    # its loader's entry point not exported by the plugin library: the build
    ("NVIDIA/TensorRT#4051", [4, 1]),
    # a TFLite builtin op of a version above 1: a runtime older than the converter
    ("google/automl#802", [3, 1]),
    ("tensorflow/tensorflow#40704", [1, 3]),  # version 1 missing: the resolver lacks the op
    # the Edge TPU delegate cannot prepare its custom op: tflite_runtime vs libedgetpu
    ("google-coral/edgetpu#259", [3, 1]),
    # twelfth round: a library wheels expect the system to have (libgomp) is its package
    ("tenstorrent/tt-forge-onnx#3285", [2, 4]),
    # torch's stable C shim (torch_dtype_*) undefined: another torch release
    ("deepbeepmeep/Wan2GP#1701", [3, 2]),
    # a C++ program (Paddle Inference, libtorch) lacking a custom op / TorchBind class
    ("PaddlePaddle/Paddle3D#276", [1, 3]),
    ("pytorch/TensorRT#632", [1, 3]),
    ("PaddlePaddle/PaddleOCR#1521", [3, 5]),  # a Python program: Paddle's own op, a release
    # TensorFlow's placer: no kernel for a device type (a custom device here)
    ("tensorflow/tensorflow#4359", [1, 3]),
    # "name '_C' is not defined" alone, no frame: an install without its compiled part first
    ("IDEA-Research/GroundingDINO#377", [4, 5]),
    ("pytorch/pytorch#1633", [5, 4]),  # run from torch's source tree
])
def test_the_eleventh_rounds_entities(thread: str, order: list[int]) -> None:
    """Rules written from the eleventh and twelfth collection rounds' dev threads
    (README_e13.md, README_e14.md)."""
    e = explain_text(str(DEV_BY_THREAD[thread]["text"]))
    assert [a.cause for a in e.ranked][:2] == order, (e.subcause, e.why)


@pytest.mark.parametrize(("thread", "order"), [
    # Pillow's own Image.py: `from . import _imaging` fails — its compiled module (a 32-bit
    # wheel in a 64-bit Python), not code of another Pillow release
    ("https://keathmilligan.net/nasty-pip-gotchya", [4, 5]),
    # macOS: a library of the installed wheel references one the wheel should bundle
    ("apache/arrow#1797", [4, 2]),
    ("pytorch/pytorch#39640", [4, 2]),
    # pybind11's "type not registered yet": modules built with different compilers
    ("JIA-Lab-research/spconv-plus#6", [3, 5]),
    # a package folder inside a project's code (model/pointnet2/): its build step not run
    ("JiehongLin/SAM-6D#19", [4, 5]),
    ("rusty1s/pytorch_scatter#274", [3]),  # unchanged: a checkout of the package itself
    # the loader found the file and could not map it
    ("apcamargo/genomad#10", [4, 2]),
])
def test_the_thirteenth_rounds_entities(thread: str, order: list[int]) -> None:
    """Rules written from the thirteenth collection round's dev threads (README_e15.md)."""
    e = explain_text(str(DEV_BY_THREAD[thread]["text"]))
    assert [a.cause for a in e.ranked][:len(order)] == order, (e.subcause, e.why)


def test_the_thirteenth_rounds_rules_keep_their_bounds() -> None:
    """What the rules above do not claim: a library from Homebrew (an absolute path, the
    wheel expects the system to have it) stays the search path; another package importing a
    private name of an installed one stays that package's release; a checkout of the package
    itself stays the checkout shadowing the installed copy."""
    brew = ("OSError: dlopen(/usr/local/lib/python3.9/site-packages/lightgbm/lib_lightgbm.so, "
            "6): Library not loaded: /usr/local/opt/libomp/lib/libomp.dylib\n  Referenced "
            "from: /usr/local/lib/python3.9/site-packages/lightgbm/lib_lightgbm.so\n  Reason: "
            "image not found")
    assert explain_text(brew).ranked[0].cause == 2
    other = ('Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/'
             'sklearnext/base.py", line 3, in <module>\n    from sklearn.utils import '
             '_joblib\nImportError: cannot import name \'_joblib\' from \'sklearn.utils\' '
             '(/usr/lib/python3/site-packages/sklearn/utils/__init__.py)')
    assert explain_text(other).ranked[0].cause == 3
    checkout = ('Traceback (most recent call last):\n  File "/home/u/pytorch_scatter/'
                'torch_scatter/__init__.py", line 3, in <module>\n    from torch_scatter._ext '
                "import scatter\nModuleNotFoundError: No module named 'torch_scatter._ext'")
    assert explain_text(checkout).ranked[0].cause == 5


def test_failed_to_map_segment_is_the_file_the_loader_found(tmp_path: Path) -> None:
    """The loader's own message, made for real: a library larger than the process's
    address-space limit (`ulimit -v`) cannot be mapped — "failed to map segment from shared
    object", the file found. explain says cause 4 and names the library, not the search
    path."""
    import resource
    lib = next((ROOT / ".venv").glob("lib/python3*/site-packages/torch/lib/libtorch_cpu.so"),
               None)
    if lib is None:
        pytest.skip("torch's libtorch_cpu.so is not in the venv")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (200 << 20, 200 << 20))  # below its 430 MB

    res = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                          str(lib)], capture_output=True, text=True, timeout=60,
                         preexec_fn=limit, cwd=tmp_path)
    assert res.returncode != 0 and "failed to map segment from shared object" in res.stderr, \
        res.stderr[-800:]
    e = explain_text(res.stderr)
    assert e.subcause == "loader.map-segment" and e.cause == 4, (e.subcause, e.why)
    assert e.entities.get("library") == [str(lib)] or str(lib) in json.dumps(e.entities), \
        e.entities


@pytest.mark.parametrize(("thread", "order"), [
    # onnx-tensorrt's parser: no importer and no plugin registered for the op
    ("DerryHub/BEVFormer_tensorrt#97", [1, 4]),
    ("JosephChenHub/CenterNet-TensorRT#21", [1, 4]),
    # a full path in a project's directory: nothing is searched, the file was not built
    ("DerryHub/BEVFormer_tensorrt#90", [4, 2]),
    # names every torch has, a namespace package, a framework package that "is not a package",
    # a project folder named like the framework: the import chain
    ("pytorch/pytorch#167365", [5, 3]),
    ("pytorch/pytorch#47968", [5, 3]),
    ("pytorch/pytorch#29305", [5, 3]),
    ("tensorflow/tensorflow#34722", [5, 3]),
    ("PaddlePaddle/X2Paddle#589", [5, 3]),
    ("PaddlePaddle/Paddle#63317", [3, 5]),  # unchanged: paddle's API of another release
    # no __version__: not the installed package, or its __init__ stopped part-way
    ("pytorch/vision#7658", [5, 4]),
])
def test_the_fourteenth_rounds_entities(thread: str, order: list[int]) -> None:
    """Rules written from the fourteenth collection round's dev threads (README_e16.md)."""
    e = explain_text(str(DEV_BY_THREAD[thread]["text"]))
    assert [a.cause for a in e.ranked][:len(order)] == order, (e.subcause, e.why)


@pytest.mark.parametrize(("thread", "order"), [
    # TensorFlow's own ops: the binary lacks them or is older, no import registers them
    ("tensorflow/tensorflow#10254", [1, 3]),
    ("triton-inference-server/server#47", [1, 3]),
    ("tensorflow/tensorflow#21470", [1, 3]),
    ("bytedeco/javacpp-presets#387", [1, 3]),
    ("tensorflow/addons#1554", [5, 1]),  # unchanged: an add-on's op, its package not imported
    # an operator-named top-level module: a research repository's ops folder never built
    ("fundamentalvision/Deformable-DETR#18", [4, 5]),
    ("OpenGVLab/InternImage#21", [4, 5]),
])
def test_the_fifteenth_rounds_entities(thread: str, order: list[int]) -> None:
    """Rules written from the fifteenth collection round's dev threads (README_e17.md)."""
    e = explain_text(str(DEV_BY_THREAD[thread]["text"]))
    assert [a.cause for a in e.ranked][:len(order)] == order, (e.subcause, e.why)


def test_tensorflows_own_ops_are_the_pinned_tensorflows() -> None:
    """tf_core_ops.txt is TensorFlow's registry as written by native/gen_tf_core_ops.py: its
    own ops are there, the add-ons' ops of the dev half are not."""
    from opdoctor.explain.rank import tf_core_ops

    core = tf_core_ops()
    assert len(core) > 1000 and {"VariableV2", "NcclAllReduce", "QuantizedAdd", "PyFunc",
                                 "MatMul"} <= core
    assert not core & {"Addons>Mish", "CaseFoldUTF8", "SentencepieceOp", "ZeroOut",
                       "RegexSplitWithOffsets", "SimpleMLCreateModelResource"}
