"""`opdoctor explain` and the diagnosis verdict of `opdoctor check`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opdoctor.checks import load_registry
from opdoctor.explain import explain_text, load_patterns
from opdoctor.facts import CheckOptions
from opdoctor.pipeline import run_check
from tests.conftest import ROOT, fixture, reference
from tests.helpers import cli
from tests.torchfork import run_python

# Probes fork from the worker's zygotes where they can (see tests/conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = tomllib.loads((ROOT / "tests/explain_corpus.toml").read_text())["case"]


def test_knowledge_base_validates_against_the_catalog() -> None:
    patterns = load_patterns(frozenset(load_registry().catalog))
    assert len(patterns) >= 30
    frameworks = {p.framework for p in patterns}
    assert frameworks >= {"pytorch", "tensorflow", "mindspore", "oneflow", "onnxruntime",
                          "loader", "cuda", "python", "build"}


@pytest.mark.parametrize("case", CORPUS, ids=[c.get("subcause") or c.get("code") for c in CORPUS])
def test_corpus(case: dict[str, object]) -> None:
    e = explain_text(str(case["text"]))
    assert e.cause == case["cause"], (e.subcause, e.title)
    if "subcause" in case:
        assert e.subcause == case["subcause"]
    if "code" in case:
        assert e.codes == [case["code"]]


# fixture → (cause, code the explanation must name)
FIXTURE_ERRORS = {
    "integrity/empty.so": (4, "OD404"),
    "integrity/not_elf.so": (4, "OD405"),
    "integrity/elf32.so": (4, "OD407"),
    "integrity/aarch64.so": (4, "OD408"),
    "integrity/relocatable.so": (4, "OD409"),
    "integrity/executable.so": (4, "OD409"),
    "integrity/pie.so": (4, "OD409"),
    "loader/uses_dep.so": (2, "OD201"),
    "loader/wrong_runpath.so": (2, "OD201"),
    "loader/chain_a_runpath.so": (2, "OD201"),
    "loader/uses_verdep.so": (3, "OD302"),
    "loader/abi0.so": (3, "OD303"),
    "loader/other_torch.so": (3, "OD304"),
    "registration/no_registration.so": (1, "OD101"),
    "registration/extension_name.so": (1, "OD105"),
    "registration/bad_schema.so": (1, "OD102"),
    "registration/cpu_only.so": (1, "OD103"),
    "probe/init_order.so": (1, "OD124"),
    "probe/ctor_abort.so": (1, "OD124"),
    "probe/dup_a.so probe/dup_b.so": (1, "OD120"),
}


@pytest.mark.probe
@pytest.mark.parametrize("name", sorted(FIXTURE_ERRORS))
def test_fixture_errors_are_explained(name: str) -> None:
    """Load the fixture for real, take what a user sees (the traceback, or what the shell prints
    when the process dies), explain it."""
    import shlex

    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    paths = [str(fixture(n)) for n in name.split()]
    script = ROOT / "tests" / "real_errors.py"
    p = run_python("", *paths, script=script, env=env, timeout=120)
    if p.returncode < 0:
        # Killed by a signal: what the shell then prints ("Segmentation fault", "Aborted") is
        # part of what the user sees — run it again under bash, as a terminal would.
        libs = " ".join(shlex.quote(x) for x in paths)
        cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {libs}"
        p = subprocess.run(["bash", "-c", f"{cmd}; exit $?"], capture_output=True, text=True,
                           timeout=120, env=env)
    text = p.stdout + p.stderr
    assert "OK" not in p.stdout.split(), f"{name} loaded and ran: {text}"
    e = explain_text(text)
    cause, code = FIXTURE_ERRORS[name]
    assert e.cause == cause, (name, e.subcause, e.title, text[-500:])
    assert code in e.codes, (name, e.codes)


@pytest.mark.probe
def test_a_line_as_long_as_a_terminal_is_wide_keeps_the_blank_line_after_it(
        tmp_path: Path) -> None:
    """The answer must not depend on where the library sits: with a directory name that makes
    the loader's line exactly a usual terminal width (140, 180 …), the terminal-wrap repair
    joined it with the blank line after it, and the symbol got "The above exception" glued
    on (a fresh clone under /tmp/fresh-rv read OD304 where /work/main read OD303)."""
    import shutil

    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    script = ROOT / "tests" / "real_errors.py"

    def failure(lib: Path) -> str:
        p = run_python("", str(lib), script=script, env=env, timeout=120)
        return p.stdout + p.stderr

    probe = tmp_path / "abi0.so"
    shutil.copy(fixture("loader/abi0.so"), probe)
    line = next(ln for ln in failure(probe).splitlines() if "undefined symbol" in ln)
    from opdoctor.explain.entities import _WRAP_WIDTHS

    width = min(w for w in _WRAP_WIDTHS if w >= len(line) + 2)  # a usual terminal width
    pad = width - len(line) - 1  # one directory named "x" * pad, plus its "/"
    lib = tmp_path / ("x" * pad) / "abi0.so"
    lib.parent.mkdir()
    shutil.copy(probe, lib)
    text = failure(lib)
    assert any(len(ln) == width and "undefined symbol" in ln for ln in text.splitlines())
    assert "\n\nThe above exception was the direct cause" in text
    e = explain_text(text)
    assert (e.cause, e.codes) == (3, ["OD303"])
    assert e.entities["symbols"][0]["mangled"].endswith("EEPKcj")


# Registration mistakes torch itself reports through its Python library API (the same
# checks as a C++ TORCH_LIBRARY block's): the program, the pattern, the catalogue code.
TORCH_LIBRARY_ERRORS = {
    "def-in-impl": ("from torch.library import Library\n"
                    "Library('odx_impl', 'IMPL', 'CPU').define('f(Tensor x) -> Tensor')\n",
                    "torch.def-in-impl-block", "OD123"),
    "opcheck-schema": ("from torch.library import Library\n"
                       "lib = Library('odx_alias', 'DEF')\n"
                       "lib.define('op(Tensor x) -> Tensor')\n"
                       "lib.impl('op', lambda x: x, 'CPU')  # returns its input: an alias\n"
                       "torch.library.opcheck(torch.ops.odx_alias.op, (torch.ones(2),))\n",
                       "torch.opcheck-failed", "OD144"),
}


@pytest.mark.probe
@pytest.mark.parametrize("name", sorted(TORCH_LIBRARY_ERRORS))
def test_torchs_own_registration_errors_are_explained(name: str) -> None:
    """torch 2.13 itself raises these (a def() in a TORCH_LIBRARY_IMPL block; opcheck's
    test_schema on a kernel that returns its input under a schema that says nothing about
    aliasing); the traceback a user pastes is a registration problem, with the check's code."""
    code, pattern, od = TORCH_LIBRARY_ERRORS[name]
    p = run_python("import torch\n" + code, timeout=240)
    assert p.returncode == 1 and "Traceback" in p.stderr, p.stdout + p.stderr
    e = explain_text(p.stderr)
    assert (e.cause, e.subcause) == (1, pattern), (e.subcause, p.stderr[-800:])
    assert od in e.codes


def test_undefined_symbol_is_demangled_and_classified() -> None:
    e = explain_text("OSError: libx.so: undefined symbol: _ZN3c109alloc_cpuEi")
    sym = e.entities["symbols"][0]
    assert sym["demangled"] == "c10::alloc_cpu(int)"
    assert "another torch" in sym["is"]
    assert e.next_steps[0] == "opdoctor check libx.so"


def test_cannot_open_existing_file_means_wrong_arch() -> None:
    path = fixture("integrity/aarch64.so")
    e = explain_text(f"OSError: {path}: cannot open shared object file: No such file or directory")
    assert e.cause == 4 and e.codes == ["OD408"]


def test_long_log_finds_the_lines_that_matter(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    noise = "\n".join(f"INFO step {i}: loss=0.{i % 97:02d}" for i in range(5000))
    log = (noise + "\nTraceback (most recent call last):\n  File \"train.py\", line 3\n"
           "OSError: /opt/libmyop.so: undefined symbol: _ZN2at4_ops3add4callERKNS_6TensorES4_"
           "RKN3c106ScalarE\n\nThe above exception was the direct cause of the following:\n"
           "RuntimeError: operator myop::weighted_sum does not exist\n" + noise)
    monkeypatch.setattr("sys.stdin", io.StringIO(log))
    res = cli(capsys, "explain", "-", "--format", "json")
    doc = res.json()
    assert res.code == 0
    assert doc["cause"] == 3 and doc["codes"] == ["OD304"]
    assert doc["evidence"][0].startswith("line 5003:")
    assert any("torch.op-does-not-exist" in m for m in doc["other_matches"])
    assert set(doc) >= {"cause", "subcause", "codes", "confidence", "entities", "next_steps"}


def test_no_match_is_honest(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "explain", "--format", "json", "the coffee machine is empty")
    doc = res.json()
    assert res.code == 1
    assert doc["cause"] == 0 and doc["confidence"] == "low" and doc["codes"] == []
    assert "will not invent" in doc["explanation"]


def test_explain_code_still_renders(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "explain", "OD303", "--format", "json")
    assert res.json()["code"] == "OD303"


# ------------------------------------------------------------------ diagnosis in check
@pytest.mark.probe
def test_verdict_first_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", str(fixture("loader/abi0.so")))
    second = res.out.splitlines()[1]
    assert second.startswith("Most likely cause: 3 — version mismatch: built with "
                             "_GLIBCXX_USE_CXX11_ABI=0")
    clean = cli(capsys, "check", str(reference()))
    assert clean.out.splitlines()[1] == "No problem found."


def test_root_and_consequences() -> None:
    report = run_check(str(fixture("loader/uses_dep.so")), CheckOptions(env=()))
    d = report.diagnosis
    assert d.cause == 2 and d.confidence == "high"
    assert [f.code for f in d.root_findings] == ["OD201"]
    assert [f.code for f in d.consequences["OD201"]] == ["OD301"]


def test_broken_file_outranks_everything() -> None:
    d = run_check(str(fixture("integrity/truncated.so"))).diagnosis
    assert d.cause == 4 and d.root_findings[0].code == "OD406"


@pytest.mark.probe
def test_json_diagnosis(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = cli(capsys, "check", "-f", "json", "--env", "LD_LIBRARY_PATH=",
              str(fixture("loader/chain_a_runpath.so")))
    diag = res.json()["reports"][0]["diagnosis"]
    assert diag["cause"] == 2 and diag["root_findings"] == ["OD203"]
    ok = cli(capsys, "check", "-f", "json", str(reference())).json()["reports"][0]["diagnosis"]
    assert ok["cause"] == 0


def test_a_backend_torch_auto_loads_and_its_missing_toolkit() -> None:
    """The text a fresh `import torch` prints when torch_npu 2.13.0 is installed without the
    Ascend CANN toolkit (our own run, its paths as a venv has them): the root error is the
    missing libhccl.so (cause 2); the next step checks the package whose import needed it —
    never `opdoctor check libhccl.so`, the file that is missing —, and the explanation says
    that torch auto-loads the backend and that the library is CANN's (its set_env.sh)."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/__init__.py", line 3030, in '
        "_import_device_backends\n    entrypoint = backend_extension.load()\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch_npu/__init__.py", line 33, in '
        "<module>\n    import torch_npu.npu\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch_npu/utils/_error_code.py", line '
        "49, in <module>\n    import torch_npu._C\n"
        "ImportError: libhccl.so: cannot open shared object file: No such file or directory\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        '  File "/opt/venv/lib/python3.11/site-packages/torch/__init__.py", line 3077, in '
        "<module>\n    _import_device_backends()\n"
        "RuntimeError: Failed to load the backend extension: torch_npu. You can disable "
        "extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.\n")
    exp = explain_text(text)
    assert exp.cause == 2
    assert exp.next_steps[0].startswith("opdoctor check --package torch_npu")
    assert not any("check libhccl.so" in s or "check -v libhccl.so" in s for s in exp.next_steps)
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in exp.explanation
    assert "CANN" in exp.explanation and "set_env.sh" in exp.explanation
    # a bare missing library with no package in the text: checked by name, as before
    plain = explain_text("OSError: libfoo.so: cannot open shared object file: No such file")
    assert plain.next_steps[0] == "opdoctor check libfoo.so"


# tensorflow-io-gcs-filesystem 0.37.1 beside TensorFlow 2.21 (its op library lists the load
# error inside a Python list), and an op library built against TensorFlow 2.16-2.19's abseil.
_TF_GCS = ("tensorflow.python.framework.errors_impl.NotFoundError: unable to open file: "
           "libtensorflow_io.so, from paths: ['/venv/lib/python3.11/site-packages/"
           "tensorflow_io_gcs_filesystem/core/python/ops/libtensorflow_io.so']\n"
           "caused by: ['/venv/lib/python3.11/site-packages/tensorflow_io_gcs_filesystem/core/"
           "python/ops/libtensorflow_io_gcs_filesystem.so: undefined symbol: TF_VLog']")
_TF_ABSL = ("tensorflow.python.framework.errors_impl.NotFoundError: /site/ops.so: undefined "
            "symbol: _ZN4absl12lts_2023080212log_internal17MakeCheckOpStringIllEEPKcT_T0_S4_")


@pytest.mark.parametrize("text, code", [(_TF_GCS, "OD342"), (_TF_ABSL, "OD341")])
def test_tensorflow_symbols_get_the_codes_check_gives(text: str, code: str) -> None:
    """A TensorFlow API symbol or an abseil one missing is what `opdoctor check` calls OD342 /
    OD341; explain named OD304, torch's code for the same fault."""
    e = explain_text(text)
    assert e.cause == 3 and code in e.codes and "OD304" not in e.codes


def test_a_symbol_in_a_listed_error_is_read_without_the_list() -> None:
    """"caused by: ['…: undefined symbol: TF_VLog']": the symbol is TF_VLog, not TF_VLog']."""
    from opdoctor.facts.loaderror import UNDEFINED
    m = UNDEFINED.search(_TF_GCS)
    assert m is not None and m.group(1) == "TF_VLog"


def test_onnxruntime_provider_error_126_is_the_cuda_major_first() -> None:
    """Windows error 126 loading ONNX Runtime's CUDA provider (dev threads, e.g.
    dme-compunet/YoloSharp#74 and microsoft/onnxruntime#21849: the build targets another
    CUDA/cuDNN major than the one installed) ranks the release pairing first and PATH second;
    the same error for any other DLL keeps PATH first."""
    from opdoctor.explain import explain_text

    ort = explain_text("I am encountering a `LoadLibrary failed with error 126` when trying to "
                       "use `onnxruntime_providers_cuda.dll`. I have CUDA 12.6 and cuDNN "
                       "v8.9.7 installed.")
    assert [a.cause for a in ort.ranked][:2] == [3, 2]
    assert "loading ONNX Runtime's execution provider" in ort.ranked[0].why
    other = explain_text("OSError: [WinError 126] The specified module could not be found. "
                         "Error loading \"C:\\env\\Lib\\site-packages\\foo\\bar.dll\" or one of "
                         "its dependencies.")
    assert [a.cause for a in other.ranked][:2] == [2, 3]


def test_a_library_a_pypi_wheel_brings_is_explained_with_that_wheel() -> None:
    """`explain` of a missing library that a PyPI wheel brings (libiomp5.so: intel-openmp,
    libtbb.so.12: tbb; survey 19) names that wheel as the first step; an operating-system
    library keeps its apt/dnf step. (The wheel's step once raised KeyError: explain assumed
    every library with a known fix was the operating system's.)"""
    for lib, step in (("libiomp5.so", "pip install intel-openmp"),
                      ("libtbb.so.12", "pip install tbb"),
                      ("libGL.so.1", "apt-get install libgl1")):
        e = explain_text(f"OSError: {lib}: cannot open shared object file: No such file or "
                         "directory")
        assert e.cause == 2 and e.next_steps[0].startswith(step), (lib, e.next_steps)


def test_a_moved_framework_module_asks_pip_about_the_distribution() -> None:
    """"No module named 'keras.src.engine'" (Keras 3 under code written for Keras 2): the next
    step was `pip show keras.src.engine`, which pip answers "Package(s) not found" (survey
    20). pip is asked about the top-level package."""
    e = explain_text("ModuleNotFoundError: No module named 'keras.src.engine'")
    assert e is not None and e.cause == 3
    assert e.next_steps[0].startswith("pip show keras   #"), e.next_steps
    pip = subprocess.run([sys.executable, "-m", "pip", "show", "keras.src.engine"],
                         capture_output=True, text=True, timeout=120)
    assert pip.returncode != 0  # what the old step asked: no such distribution


@pytest.mark.parametrize(("signal_code", "subcause"), [
    ("import os; os.abort()", "crash.abort"),
    ("import ctypes; ctypes.string_at(0)", "crash.segfault"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGILL)", "cpu.illegal-instruction"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGBUS)", "loader.bus-error"),
])
def test_a_shells_exit_status_of_a_crash_is_read_as_its_signal(signal_code: str,
                                                               subcause: str) -> None:
    """What a launcher, an IDE or a CI step prints of a crashed Python is often only the
    shell's exit status (128 + the signal: 134 abort, 139 segmentation fault, 132 illegal
    instruction, 135 bus error), taken here from a real crash under bash."""
    import subprocess
    import sys

    rc = subprocess.run(["bash", "-c", f"{sys.executable} -c '{signal_code}' 2>/dev/null; "
                         "exit $?"], timeout=60).returncode
    assert rc > 128, rc
    for text in (f"python3 exited with code {rc}", f"Process completed with exit code {rc}.",
                 f"error: exit status {rc}"):
        e = explain_text(text)
        assert e.subcause == subcause, (text, e.subcause)


def test_a_notebook_kernel_that_died_is_a_native_crash() -> None:
    """Jupyter's words when the kernel process ends without a Python exception."""
    for text in ("The kernel appears to have died. It will restart automatically.",
                 "Kernel Restarting\nThe kernel for train.ipynb appears to have died. It will "
                 "restart automatically."):
        e = explain_text(text)
        assert e.subcause == "crash.kernel-died" and e.cause == 3, (e.subcause, e.cause)
        assert "faulthandler" in " ".join(e.next_steps)


@pytest.mark.parametrize("text", [
    "ImportError: DLL load failed while importing _C: 指定されたモジュールが見つかりません。",
    "ImportError: DLL load failed while importing _C: Das angegebene Modul wurde nicht gefunden.",
    "OSError: [WinError 126] Le module spécifié est introuvable. Error loading \"C:\\x\\c10.dll\"",
    "ImportError: DLL load failed while importing _C: No se puede encontrar el módulo "
    "especificado.",
])
def test_windows_load_errors_in_other_languages(text: str) -> None:
    """A localised Windows prints error 126 in its own language: read as the English one."""
    e = explain_text(text)
    assert e.cause == 2 and e.subcause in ("loader.dll-load-failed", "windows.load-error"), \
        (e.subcause, e.why)
