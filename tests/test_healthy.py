"""Healthy real packages stay clean (issue #14 item 9): real PyPI wheels installed as users
install them (``pip install --no-deps --target``, ``make healthy``), which load and work here.

Each test first shows that the package really imports and runs (a child interpreter calls one
function), then asserts opdoctor finds no error in it; a companion test shows the same check
still fires on a package that really has the fault (Python itself fails on it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import FIX, SKIP
from tests.helpers import Result, cli
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

HFX = FIX / "healthy"


def _site(name: str) -> Path:
    reason = SKIP / f"healthy-{name}.txt"
    if reason.exists():
        pytest.skip(f"real wheel {name} not installed here (`make healthy`): "
                    f"{reason.read_text().strip()[:200]}")
    site = HFX / name / "site"
    assert site.is_dir(), f"{site} is missing: run `make healthy` (make test does)"
    return site


def _run(site: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a child interpreter with ``site`` on PYTHONPATH, as the user's job runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(site)
    return run_python(code, env=env, timeout=300, cwd=str(site.parent))


def _check_package(capsys: pytest.CaptureFixture[str], site: Path, package: str,
                   *extra: str) -> Result:
    return cli(capsys, "check", "-f", "json", "--static", "--package", package,
               "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent), *extra)


def _errors(res: Result) -> list[tuple[str, str]]:
    return [(f["code"], f["message"]) for rep in res.json()["reports"]
            for f in rep["findings"] if f["severity"] == "error"]


def test_tokenizers_reexported_names_are_not_missing_modules(
        capsys: pytest.CaptureFixture[str]) -> None:
    """tokenizers 0.23.3: implementations/char_level_bpe.py says ``from .. import AddedToken,
    Tokenizer``, names tokenizers/__init__.py re-exports from its Rust extension. Python takes
    the package's attribute and never looks for a module AddedToken: no OD510."""
    site = _site("tokenizers-0.23.3")
    src = (site / "tokenizers" / "implementations" / "char_level_bpe.py").read_text()
    assert "from .. import AddedToken, Tokenizer" in src
    assert not list((site / "tokenizers").glob("AddedToken*"))  # really no such module
    real = _run(site, "from tokenizers.implementations import CharBPETokenizer\n"
                "t = CharBPETokenizer()\n"
                "t.train_from_iterator(['a b c a b'], vocab_size=20)\n"
                "print(t.encode('a b').tokens)")
    assert real.returncode == 0, real.stderr
    res = _check_package(capsys, site, "tokenizers")
    assert res.code == 0, _errors(res)
    assert _errors(res) == []
    links = res.json()["reports"][0]["sections"]["import-chain"]["links"]
    assert any(li["target"] == "tokenizers.AddedToken" for li in links)  # read, not skipped
    assert all(li["attribute"] for li in links if li["target"] == "tokenizers.AddedToken")
    # The text's chain marks it as what it is, not ✗ "no module AddedToken".
    text = cli(capsys, "check", "--static", "--package", "tokenizers", "--env",
               f"PYTHONPATH={site}", "--cwd", str(site.parent)).out
    line = next(ln for ln in text.splitlines() if "→ AddedToken" in ln)
    assert line.lstrip().startswith("✓") and "a name the package defines" in line


def test_from_package_import_of_an_undefined_name_is_still_od510(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same statement shape where the package binds no such name and has no such module:
    Python fails ('cannot import name'), and OD510 still says so. A name bound only in a
    function body does not count; one bound at module level in an ``if`` block does."""
    pkg = tmp_path / "site" / "hpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import sys\nif sys.platform:\n    Bound = 1\n"
        "def helper():\n    Local = 2\n    return Local\n"
        "from . import sub\n")
    (pkg / "sub" / "__init__.py").write_text("from .. import Bound\nfrom .. import Local\n")
    real = _run(pkg.parent, "import hpkg")
    assert real.returncode != 0
    assert "cannot import name 'Local' from partially initialized module 'hpkg'" in real.stderr
    res = _check_package(capsys, pkg.parent, "hpkg")
    assert res.code == 1
    od510 = [m for c, m in _errors(res) if c == "OD510"]
    assert od510 == [f"hpkg.Local: no module Local in {pkg}"], od510
    # Bound, once Local is defined too: the package imports and the check is clean.
    (pkg / "__init__.py").write_text("Bound = 1\nLocal = 2\nfrom . import sub\n")
    assert _run(pkg.parent, "import hpkg").returncode == 0
    from opdoctor.facts.pychain import _analyse
    from opdoctor.facts.pynames import module_bindings
    _analyse.cache_clear()  # both are cached per file / package and interpreter
    module_bindings.cache_clear()
    assert "OD510" not in [c for c, _ in _errors(_check_package(capsys, pkg.parent, "hpkg"))]


def test_numpy_console_scripts_outside_site_are_no_record_mismatch(
        capsys: pytest.CaptureFixture[str]) -> None:
    """numpy 2.4.6 installed with pip --target: RECORD lists ``../../bin/f2py`` (the scheme's
    scripts directory, relative to pip's temporary layout); pip put it in site/../site/bin. A
    file outside the import directory is not part of ``import numpy``: no OD508."""
    site = _site("numpy-2.4.6")
    record = next(site.glob("numpy-*.dist-info")) / "RECORD"
    rows = [r.split(",")[0] for r in record.read_text().splitlines()]
    assert "../../bin/f2py" in rows and not (site / "../../bin/f2py").exists()
    assert (site / "bin" / "f2py").is_file()
    real = _run(site, f"import numpy; assert numpy.__file__.startswith({str(site)!r}); "
                "print(numpy.linalg.inv(numpy.eye(2) * 2))")
    assert real.returncode == 0, real.stderr
    res = _check_package(capsys, site, "numpy")
    assert res.code == 0, _errors(res)
    assert _errors(res) == []
    assert "OD508" not in {f["code"] for rep in res.json()["reports"] for f in rep["findings"]}


@pytest.mark.probe
def test_record_mismatch_inside_the_package_still_fires(capsys: pytest.CaptureFixture[str]) -> None:
    """The partial-install fixture (RECORD lists myop/libmyop.so, the file is gone): Python's
    import really fails on it, and OD508 still names the missing file."""
    site = FIX / "python" / "partial"
    assert site.is_dir(), f"{site} is missing: run `make fixtures`"
    real = _run(site, "import torch, myop")
    assert real.returncode != 0 and "libmyop.so" in real.stderr
    res = _check_package(capsys, site, "myop")
    od508 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD508"]
    assert res.code == 1 and od508
    assert "missing: myop/libmyop.so" in od508[0]["evidence"]
    dist = next(site.glob("*.dist-info")).name[:-len(".dist-info")].rpartition("-")
    # the fix reinstalls that distribution by name, not "<distribution>"
    # (into the --target directory the copy is in: survey 21's S1)
    assert f"--force-reinstall --no-deps --upgrade --target {site} '{dist[0]}=={dist[2]}'" \
        in od508[0]["fix"], od508[0]["fix"]


_NEW_OPS = ("import torch, sys\n"
            "before = set(torch._C._dispatch_get_all_op_names())\n"
            "torch.ops.load_library(sys.argv[1])\n"
            "print(sorted(set(torch._C._dispatch_get_all_op_names()) - before))\n")


@pytest.mark.probe
def test_op_library_its_package_does_not_import_is_no_od121(
        capsys: pytest.CaptureFixture[str]) -> None:
    """executorch 1.5.1's libcustom_ops_aot_lib.so sits in custom_ops/, whose __init__.py is
    empty (custom_ops.py loads it later). Loaded, it registers llama:: ops beside torch 2.13
    and one runs; the probe's package import never maps it, so "loaded but registered no
    operator" (OD121) would describe a load that did not happen."""
    site = _site("executorch-1.5.1")
    lib = site / "executorch/extension/llm/custom_ops/libcustom_ops_aot_lib.so"
    assert (lib.parent / "__init__.py").read_text().strip() == ""
    real = run_python(_NEW_OPS + (
        "x = torch.rand(1, 4, 2, 8)\n"
        "print(torch.ops.llama.custom_sdpa(x, x, x, 0, None, 0.0, True, None).shape)\n"),
        str(lib), timeout=300)
    assert real.returncode == 0, real.stderr
    assert "'llama::custom_sdpa'" in real.stdout and "torch.Size([1, 4, 2, 8])" in real.stdout
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", str(lib))
    rep = res.json()["reports"][0]
    assert rep["sections"]["probe"]["outcome"] == "loaded"
    assert "OD121" not in [f["code"] for f in rep["findings"]]


@pytest.mark.probe
def test_package_that_loads_a_library_without_ops_is_still_od121(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The registration fixture no_registration.so (no TORCH_LIBRARY block), loaded by its
    package's __init__.py: torch's registry really gains nothing, and OD121 still fires in
    package mode (the import mapped it) as on the bare library."""
    from tests.conftest import fixture
    pkg = tmp_path / "emptyops"
    pkg.mkdir()
    lib = pkg / "libempty.so"
    lib.write_bytes(fixture("registration/no_registration.so").read_bytes())
    (pkg / "__init__.py").write_text(
        "import os, torch\n"
        "torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libempty.so'))\n")
    real = run_python(_NEW_OPS, str(lib), timeout=300)
    assert real.returncode == 0 and real.stdout.strip() == "[]", real.stderr
    for args in (["--cwd", str(tmp_path), str(lib)], [str(lib)]):
        res = cli(capsys, "check", "-f", "json", *args)
        rep = res.json()["reports"][0]
        assert res.code == 1 and "OD121" in [f["code"] for f in rep["findings"]], args
    assert rep["sections"]["import-chain"]["package"] == "emptyops"


@pytest.mark.probe
def test_a_library_that_registers_only_a_torchbind_class_is_no_od121(
        capsys: pytest.CaptureFixture[str]) -> None:
    """vesin-torch 0.6.2's library registers one TorchBind class (torch.classes.vesin.
    _NeighborList) and no operator; the package works, and it was "loaded but registered no
    operator" (OD121, an error; survey 18). The fixture class_only.so has that shape: loaded,
    torch's operator registry gains nothing and torch.classes.classonly.Counter works. A
    class is a registration: no OD121, and the probe names it."""
    from tests.conftest import fixture
    lib = fixture("probe/class_only.so")
    real = run_python(_NEW_OPS + "print(torch.classes.classonly.Counter().add(3))\n",
                      str(lib), timeout=300)
    assert real.returncode == 0 and real.stdout.split() == ["[]", "3"], real.stderr
    res = cli(capsys, "check", "-f", "json", str(lib))
    rep = res.json()["reports"][0]
    assert res.code == 0 and "OD121" not in [f["code"] for f in rep["findings"]]
    assert rep["sections"]["probe"]["new_classes"] == ["classonly.Counter"]
    assert rep["sections"]["probe"]["new_ops"] == []
    text = cli(capsys, "check", str(lib)).out
    assert "registered class torch.classes.classonly.Counter" in text


_OPTFEAT_INIT = """import os, torch
torch.ops.load_library(os.path.join(os.path.dirname(__file__), "libops.so"))
try:
    import optfeat_extra  # noqa: F401  (a distribution of its own, not a requirement)

    from . import extra  # noqa: F401
except ImportError:
    pass
"""
_OPTFEAT_EXTRA = """try:
    import optfeat_extra  # noqa: F401
except ImportError as exc:
    raise ImportError("optfeat-extra is required to use optfeat.extra: "
                      "pip install optfeat-extra") from exc
"""


@pytest.mark.probe
@pytest.mark.parametrize("extra", ["absent", "broken"])
def test_an_optional_feature_behind_an_absent_distribution_is_no_hidden_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: str) -> None:
    """metatensor-torch 0.10.8: `try: import metatensor_learn; from . import learn … except
    ImportError: pass` — the learn module is a feature of the separate metatensor-learn,
    which is not installed and not required. The probe retried `from . import learn` alone
    and reported its "metatensor-learn is required" as the package's hidden error (OD512, the
    headline, exit 1; survey 18), on a package whose import and ops work. The body stops at
    the absent module before it: nothing is hidden. Installed but failing to import, that
    module's own error is what the body swallows, and it is still reported."""
    from tests.conftest import reference
    site = tmp_path / "site"
    pkg = site / "optfeat"
    pkg.mkdir(parents=True)
    (pkg / "libops.so").write_bytes(reference().read_bytes())
    (pkg / "__init__.py").write_text(_OPTFEAT_INIT)
    (pkg / "extra.py").write_text(_OPTFEAT_EXTRA)
    if extra == "broken":
        (site / "optfeat_extra.py").write_text("raise ImportError('optfeat_extra is broken')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    real = run_python("import torch, optfeat; print(torch.ops.myop.weighted_sum)",
                      env=env, timeout=300)
    assert real.returncode == 0, real.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", "/", "--env", f"PYTHONPATH={site}",
              "--package", "optfeat")
    rep = res.json()["reports"][0]
    od512 = [f["message"] for f in rep["findings"] if f["code"] == "OD512"]
    if extra == "absent":
        assert res.code == 0 and od512 == [], od512
    else:
        assert od512 and "optfeat_extra is broken" in od512[0], rep["findings"]


_GFORTRAN = "scipy.libs/libgfortran-8f1e9814.so.5.0.0"
_QUADMATH = "scipy.libs/libquadmath-828275a7.so.0.0.0"


@pytest.mark.probe
def test_vendored_library_is_checked_as_its_extensions_load_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """scipy 1.17.1 vendors libgfortran-8f1e9814 (auditwheel) with no RPATH of its own; it
    NEEDs libquadmath-828275a7 beside it, which ld.so finds through the DT_RPATH
    ($ORIGIN/../../scipy.libs) of the extensions that load it. Loaded on its own it fails; the
    way scipy loads it, it works. The check follows the loader: no OD201."""
    site = _site("scipy-1.17.1")
    lib = site / _GFORTRAN
    alone = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(lib)], capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0 and "libquadmath-828275a7.so.0.0.0: cannot open" in alone.stderr
    real = _run(site, "import scipy.interpolate as i, numpy as np\n"
                "t = i.splrep(np.arange(8.0), np.arange(8.0) ** 2)\n"
                "print(i.splev(2.5, t))\n"
                "print([l for l in open('/proc/self/maps').read().split() "
                "if 'libgfortran-8f1e9814' in l][:1])")
    assert real.returncode == 0, real.stderr
    assert "libgfortran-8f1e9814" in real.stdout  # scipy itself maps it
    for extra in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", *extra, str(lib))
        rep = res.json()["reports"][0]
        assert res.code == 0 and _errors(res) == [], _errors(res)
        assert "OD201" not in [f["code"] for f in rep["findings"]]
    assert "loaded by " in rep["sections"]["dependencies"]["context"]


def test_vendored_library_without_a_loader_still_misses_its_dependency(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same two vendored files in a directory no extension loads from: ld.so really fails,
    and OD201 names libquadmath-828275a7."""
    site = _site("scipy-1.17.1")
    libs = tmp_path / "alone.libs"
    libs.mkdir()
    for rel in (_GFORTRAN, _QUADMATH):
        (libs / Path(rel).name).write_bytes((site / rel).read_bytes())
    (libs / Path(_QUADMATH).name).rename(libs / "elsewhere.so")  # not beside it any more
    lib = libs / Path(_GFORTRAN).name
    alone = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(lib)], capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0 and "libquadmath-828275a7.so.0.0.0" in alone.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    assert res.code == 1
    assert ("OD201", "libquadmath-828275a7.so.0.0.0 (needed by libgfortran-8f1e9814.so.5.0.0) "
            "is not found") in _errors(res)
    # Beside it again but with no library that loads it: still missing for ld.so.
    (libs / "elsewhere.so").rename(libs / Path(_QUADMATH).name)
    alone = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(lib)], capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    assert res.code == 1 and "OD201" in [c for c, _ in _errors(res)]


@pytest.mark.probe
def test_other_pybind11_key_still_converts_tensors(capsys: pytest.CaptureFixture[str]) -> None:
    """An extension built with pybind11 internals v12 beside torch's v11 (executorch 1.5.1's
    pybindings carry that key): torch.Tensor converts, a type torch binds with pybind11
    (torch._C.DispatchKey) does not. OD306 still fires, and says that, not "Tensor arguments
    will not convert"."""
    lib = HFX / "pybind_tensor" / f"pybind_tensor{sysconfig.get_config_var('EXT_SUFFIX')}"
    assert lib.exists(), f"{lib} is missing: run `make healthy` (make test does)"
    real = _run(lib.parent, "import torch, pybind_tensor as p\n"
                "print('sum', p.tensor_sum(torch.ones(3)))\n"
                "try:\n    p.dispatch_key(torch._C.DispatchKey.CPU)\n"
                "except TypeError as e:\n    print('TypeError', str(e).splitlines()[0])\n")
    assert real.returncode == 0, real.stderr
    assert "sum 3.0" in real.stdout
    assert "TypeError dispatch_key(): incompatible function arguments" in real.stdout
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    od306 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD306"]
    assert len(od306) == 1 and od306[0]["severity"] == "warning"
    msg = od306[0]["message"]
    assert "torch._C.DispatchKey" in msg and "torch.Tensor still does" in msg, msg
    assert "Tensor arguments will not convert" not in msg


@pytest.mark.probe
def test_a_python_module_linking_torch_is_not_an_op_library_that_registered_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A pybind11 module that links torch for its tensors (executorch's pybindings,
    torch-harmonics' helpers) registers no operator, by design: the probe loads it, nothing new
    appears in torch's dispatcher, and that is no OD121. Its functions work from Python."""
    lib = HFX / "pybind_tensor" / f"pybind_tensor{sysconfig.get_config_var('EXT_SUFFIX')}"
    real = _run(lib.parent, "import torch\nn = len(torch._C._dispatch_get_all_op_names())\n"
                "import pybind_tensor as p\nprint(p.tensor_sum(torch.ones(2)), "
                "len(torch._C._dispatch_get_all_op_names()) - n)\n")
    assert real.returncode == 0 and real.stdout.split() == ["2.0", "0"], real.stderr
    res = cli(capsys, "check", "-f", "json", str(lib))
    rep = res.json()["reports"][0]
    assert rep["sections"]["probe"]["outcome"] == "loaded", rep["sections"]["probe"]
    assert "OD121" not in [f["code"] for f in rep["findings"]]
    assert res.code == 0, _errors(res)


TF_PYTHON = FIX.parent / "venv-tf" / "bin" / "python"


@pytest.mark.probe
def test_tensorflow_support_library_is_not_an_op_library(
        capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-text 2.21.1 beside TensorFlow 2.21: core/pybinds/libpybinds_library_common.so
    links libtensorflow_framework and registers nothing; six pybind modules of the package NEED
    it. The package works (a tokenizer runs); the library is their dependency, not an op
    library: no OD101/OD152 error."""
    name = "tensorflow-text-2.21.1"
    site = HFX / name / "site"
    if (SKIP / f"healthy-{name}.txt").exists() or not site.is_dir():
        pytest.skip(f"real wheel {name} not installed here: run `make healthy-tf` (60 MB)")
    if not TF_PYTHON.exists():
        pytest.skip(f"{TF_PYTHON} missing: run `make venv-tf`")
    lib = site / "tensorflow_text/core/pybinds/libpybinds_library_common.so"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(site)
    real = subprocess.run([str(TF_PYTHON), "-c", (
        "import tensorflow as tf, tensorflow_text as text\n"
        "print(text.WhitespaceTokenizer().tokenize(['a b c']).to_list())\n"
        "from tensorflow_text.core.pybinds import pywrap_whitespace_tokenizer_config_builder\n"
        "print(sorted(l for l in open('/proc/self/maps').read().split() "
        "if l.endswith('libpybinds_library_common.so'))[:1])\n")],
        capture_output=True, text=True, env=env, timeout=300)
    assert real.returncode == 0, real.stderr[-2000:]
    assert "[[b'a', b'b', b'c']]" in real.stdout and str(lib) in real.stdout
    for extra in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", "--python", str(TF_PYTHON),
                  "--env", f"PYTHONPATH={site}", *extra, str(lib))
        assert res.code == 0 and _errors(res) == [], _errors(res)
        od101 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD101"]
        assert od101 and od101[0]["severity"] == "info" and "NEED" in od101[0]["message"]


@pytest.mark.probe
def test_framework_library_without_registration_or_dependents_is_still_od101(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """no_registration.so (links torch, no TORCH_LIBRARY) alone in its directory, as a user's
    op library that lost its registrations: loaded, torch's registry gains nothing, and OD101
    is still an error."""
    from tests.conftest import fixture
    lib = tmp_path / "pkgdir" / "libnoreg.so"
    lib.parent.mkdir()
    lib.write_bytes(fixture("registration/no_registration.so").read_bytes())
    real = run_python(_NEW_OPS, str(lib), timeout=300)
    assert real.returncode == 0 and real.stdout.strip() == "[]", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    assert res.code == 1
    assert any(c == "OD101" for c, _ in _errors(res)), _errors(res)


@pytest.mark.probe
def test_library_that_needs_the_openmp_runtime_torch_also_ships_is_not_a_torch_extension(
        capsys: pytest.CaptureFixture[str]) -> None:
    """lightgbm 4.7.0's lib_lightgbm.so NEEDs libgomp.so.1 (and no torch library, no torch
    symbol); torch's wheel happens to carry a libgomp.so.1 in torch/lib. The library is no torch
    extension: it loads and works in a plain interpreter, and checked by itself it is no
    "links torch but registers nothing" (OD101) error — it was, when any DT_NEEDED name found in
    torch/lib counted as linking torch."""
    site = _site("lightgbm-4.7.0")
    lib = site / "lightgbm" / "lib" / "lib_lightgbm.so"
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys\n"
                           "lib = ctypes.CDLL(sys.argv[1])\n"
                           "lib.LGBM_GetLastError.restype = ctypes.c_char_p\n"
                           "h = ctypes.c_void_p()\n"
                           "print(lib.LGBM_BoosterCreateFromModelfile(b'/nonexistent', "
                           "ctypes.byref(ctypes.c_int()), ctypes.byref(h)), "
                           "lib.LGBM_GetLastError().decode())", str(lib)],
                          capture_output=True, text=True, timeout=60)
    assert real.returncode == 0 and real.stdout.startswith("-1 ") and \
        "/nonexistent" in real.stdout, real.stdout + real.stderr  # it runs: its own error
    torch_lib = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert list(torch_lib.glob("site-packages/torch/lib/libgomp.so.1")), \
        "torch/lib has no libgomp.so.1 here: the confusion this test guards cannot arise"
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    rep = res.json()["reports"][0]
    assert not {"OD101", "OD121"} & {f["code"] for f in rep["findings"]}
    # The site was installed with --no-deps: `import lightgbm` itself really fails on
    # lightgbm/basic.py's module-level `import narwhals` (then scipy), both requirements of
    # lightgbm 4.7.0 — the only errors, found without importing (OD514).
    imported = _run(site, "import lightgbm")
    assert "ModuleNotFoundError: No module named 'narwhals'" in imported.stderr
    assert _errors(res) == [
        ("OD514", "import lightgbm runs `import narwhals` (lightgbm/basic.py:26); narwhals is "
                  "not installed"),
        ("OD514", "import lightgbm runs `import scipy` (lightgbm/basic.py:30); scipy is not "
                  "installed")], _errors(res)
    # With the probe, lib/ (no __init__.py) is checked as package lightgbm's, whose import
    # needs Python packages this --no-deps fixture lacks: that error, and only that one, is
    # what Python says too.
    py = subprocess.run([sys.executable, "-c", "import lightgbm"], cwd=site,
                        capture_output=True, text=True, timeout=120)
    res = cli(capsys, "check", "-f", "json", str(lib))
    rep = res.json()["reports"][0]
    assert not {"OD101", "OD121"} & {f["code"] for f in rep["findings"]}
    if py.returncode == 0:
        assert res.code == 0 and _errors(res) == [], _errors(res)
    else:
        missing = py.stderr.strip().splitlines()[-1]
        assert missing.startswith("ModuleNotFoundError: No module named")
        # the probe's failed import, a consequence of the static OD514 that names the module
        raised = [m.split(" raised ", 1)[1] for c, m in _errors(res) if c == "OD511"]
        assert raised == [missing] and rep["diagnosis"]["root_findings"][0] == "OD514"
        assert {c for c, _ in _errors(res)} == {"OD511", "OD514"}
    assert "import torch" not in rep["sections"]["dependencies"]["context"]


def test_a_vendored_library_loaded_two_levels_down_is_found_as_its_package_loads_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """faiss-cpu 1.15: faiss_cpu.libs/libgfortran NEEDs libquadmath beside it and has no RPATH;
    it is loaded by libopenblaso (no RPATH either), which libfaiss.so loads with DT_RPATH
    $ORIGIN/../faiss_cpu.libs — inherited down the chain, so ld.so finds libquadmath. Only a
    direct loader with the RPATH was looked for: the walk of faiss_cpu.libs was OD201 + OD220
    errors. The same layout built here: alone it fails, loaded the package's way it works."""
    site = tmp_path / "site"
    libs, pkg = site / "top.libs", site / "top"
    libs.mkdir(parents=True)
    pkg.mkdir()
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "target.c").write_text("int dep(void);\nint target(void) { return dep(); }\n")
    (tmp_path / "mid.c").write_text("int target(void);\nint mid(void) { return target(); }\n")
    (tmp_path / "ext.c").write_text("int mid(void);\nint ext(void) { return mid(); }\n")

    def cc(src: str, out: Path, *flags: str) -> None:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(tmp_path / src),
                        *flags], check=True, timeout=60)

    cc("dep.c", libs / "libdep.so")
    cc("target.c", libs / "libtarget.so", f"-L{libs}", "-ldep")
    cc("mid.c", libs / "libmid.so", f"-L{libs}", "-ltarget")
    cc("ext.c", pkg / "ext.so", f"-L{libs}", "-lmid", "-Wl,--disable-new-dtags",
       "-Wl,-rpath,$ORIGIN/../top.libs")
    load = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
    alone = subprocess.run([sys.executable, "-c", load, str(libs / "libtarget.so")],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0 and "libdep.so: cannot open" in alone.stderr
    chained = subprocess.run([sys.executable, "-c", load, str(pkg / "ext.so")],
                             capture_output=True, text=True, timeout=60)
    assert chained.returncode == 0, chained.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(libs / "libtarget.so"))
    assert res.code == 0 and _errors(res) == [], _errors(res)
    # Without the top loader nothing loads it with that RPATH: a real OD201 again.
    (pkg / "ext.so").unlink()
    res = cli(capsys, "check", "-f", "json", "--static", str(libs / "libtarget.so"))
    assert res.code == 1 and "OD201" in [c for c, _ in _errors(res)]


def test_a_dependency_the_packages_extension_loads_first_is_found_by_its_name(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """MindSpore 2.10: lib/libmindspore_grpc.so.48 NEEDs libupb_json_lib.so.48 beside it and
    has no RUNPATH; _c_dataengine (RUNPATH $ORIGIN/lib) NEEDs both, so ld.so has the upb
    library mapped before it looks up grpc's needs and finds it by its name — `import
    mindspore` works. A scan of a healthy MindSpore had 28 libraries with "probably loads it
    first" warnings. The same layout built here: alone it fails, the package's way it loads;
    the static check says so as a note. Without the extension loading it first, the real
    load fails and so does the check."""
    import sysconfig

    pkg = tmp_path / "site" / "grpcpkg"
    lib = pkg / "lib"
    lib.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "grpc.c").write_text("int dep(void);\nint grpc(void) { return dep(); }\n")
    (tmp_path / "core.c").write_text("int grpc(void);\nint core(void) { return grpc(); }\n")
    ext = pkg / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))

    def cc(src: str, out: Path, *flags: str) -> None:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(tmp_path / src),
                        *flags], check=True, timeout=60)

    cc("dep.c", lib / "libdep.so")
    cc("grpc.c", lib / "libgrpc.so", f"-L{lib}", "-ldep")  # no RUNPATH
    cc("core.c", ext, f"-L{lib}", "-Wl,--no-as-needed", "-lgrpc", "-ldep",
       "-Wl,-rpath,$ORIGIN/lib")
    load = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
    alone = subprocess.run([sys.executable, "-c", load, str(lib / "libgrpc.so")],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0 and "libdep.so: cannot open" in alone.stderr
    grouped = subprocess.run([sys.executable, "-c", load, str(ext)],
                             capture_output=True, text=True, timeout=60)
    assert grouped.returncode == 0, grouped.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib / "libgrpc.so"))
    assert res.code == 0 and _errors(res) == [], _errors(res)
    od201 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD201"]
    assert [f["severity"] for f in od201] == ["info"], od201
    assert od201[0]["message"].endswith(f"loads as part of {ext.name}'s load, which loads "
                                        "grpcpkg/lib/libdep.so first"), od201[0]["message"]
    # The extension no longer NEEDs libdep.so: nothing maps it before libgrpc.so's lookup.
    cc("core.c", ext, f"-L{lib}", "-lgrpc", "-Wl,-rpath,$ORIGIN/lib")
    grouped = subprocess.run([sys.executable, "-c", load, str(ext)],
                             capture_output=True, text=True, timeout=60)
    assert grouped.returncode != 0 and "libdep.so: cannot open" in grouped.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(lib / "libgrpc.so"))
    assert res.code == 1 and "OD201" in [c for c, _ in _errors(res)]



@pytest.mark.probe
def test_a_framework_library_only_a_bare_suffix_extension_needs_loads_in_its_load(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """dm-reverb 0.14's wheel (survey 23's F4): `reverb/libpybind.so` is an extension module
    with the bare `.so` suffix (`from .libpybind import *`), RUNPATH $ORIGIN, NEEDing
    libcheckpoint_cc_proto.so (which links TensorFlow, has no RUNPATH to its directory) and
    libschema_cc_proto.so, which libcheckpoint needs too. Loaded on its own libcheckpoint
    misses libschema; in the package's load it is mapped first. The wheel check led its report
    with an OD201 error: neither a bare-suffix extension nor a library that needs a framework
    was asked whether another extension's load brings it in."""
    from tests.test_loader import torch_lib_dir

    pkg = tmp_path / "site" / "grppkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import torch\nfrom grppkg.libhost import *\n")
    (tmp_path / "leaf.c").write_text("int leaf(void) { return 1; }\n")
    (tmp_path / "mid.c").write_text("int leaf(void);\nint mid(void) { return leaf(); }\n")
    (tmp_path / "host.c").write_text(
        "#include <Python.h>\nint mid(void);\nstatic struct PyModuleDef D = "
        "{PyModuleDef_HEAD_INIT, \"libhost\", \"\", -1, NULL};\n"
        "PyMODINIT_FUNC PyInit_libhost(void) { mid(); return PyModule_Create(&D); }\n")

    def cc(src: str, out: Path, *flags: str) -> None:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(tmp_path / src),
                        *flags], check=True, timeout=60)

    cc("leaf.c", pkg / "libleaf.so")
    cc("mid.c", pkg / "libmid.so", f"-L{pkg}", f"-L{torch_lib_dir()}", "-Wl,--no-as-needed",
       "-lleaf", "-lc10")  # needs torch's libc10.so; no RUNPATH
    cc("host.c", pkg / "libhost.so", f"-I{sysconfig.get_paths()['include']}", f"-L{pkg}",
       "-Wl,--no-as-needed", "-lmid", "-lleaf", "-Wl,-rpath,$ORIGIN")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    alone = run_python("import torch, ctypes, sys; ctypes.CDLL(sys.argv[1])",
                       str(pkg / "libmid.so"), env=env, timeout=300)
    assert alone.returncode != 0 and "libleaf.so: cannot open" in alone.stderr, alone.stderr
    grouped = run_python("import grppkg", env=env, timeout=300)
    assert grouped.returncode == 0, grouped.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(pkg / "libmid.so"))
    rep = res.json()["reports"][0]
    od201 = [f for f in rep["findings"] if f["code"] == "OD201"]
    assert [f["severity"] for f in od201] == ["info"], od201
    assert "loads as part of libhost.so's load" in od201[0]["message"], od201[0]["message"]
    assert res.code == 0, rep["diagnosis"]["summary"]

def test_a_walk_tells_what_every_library_of_a_package_shares_once(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A static walk of numpy's site: its libraries are checked in package mode, one report
    each. The package's notes (OD507 for three scripts) and its import chain (297 imports) are
    the same in every such report: the text prints them once and refers to them after; the
    JSON keeps every finding in every report. (One run writes both: --also-write.)"""
    site = _site("numpy-2.4.6")
    out = tmp_path / "walk.json"
    text = cli(capsys, "check", "--static", "--env", f"PYTHONPATH={site}", str(site),
               "-f", "text", "--also-write", f"json={out}").out
    doc = json.loads(out.read_text())
    in_pkg = [r for r in doc["reports"] if "import-chain" in r["sections"]]
    assert len(in_pkg) > 10
    assert all(sum(f["code"] == "OD507" for f in r["findings"]) == 3 for r in in_pkg)
    assert text.count("OD507 numpy/_configtool.py uses a relative import") == 1
    # The venv's own numpy is a second copy on sys.path: the same release is one more note
    # (OD502), another release a warning in every report.
    from importlib.metadata import version
    notes = "4 note(s) (OD502, OD507)" if version("numpy") == "2.4.6" else \
        "1 warning(s) and 3 note(s) (OD502, OD507)"
    assert text.count(f"{notes} as in a report above") == len(in_pkg) - 1
    assert text.count("import chain: ✓ import numpy →") == len(in_pkg)
    assert text.count("the same 297 import(s) as in a report above") == len(in_pkg) - 1


def test_a_sub_package_directory_is_imported_through_its_top_level(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``opdoctor check …/scipy/linalg``: Python imports that directory as ``scipy.linalg``
    (a top-level ``linalg`` would break its relative imports: triton/backends raised)."""
    site = _site("scipy-1.17.1")
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              str(site / "scipy" / "linalg"))
    rep = res.json()["reports"][0]
    assert rep["sections"]["import-chain"]["package"] == "scipy.linalg"
    assert rep["sections"]["import-chain"]["winner"] == str(site / "scipy" / "linalg")
    assert res.code == 0


def _soundfile_copy(tmp_path: Path) -> Path:
    """A copy of the soundfile 0.14.0 install (soundfile.py, _soundfile_data/, cffi, pycparser
    and their dist-info), so a test can take files away from it."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(_site("soundfile-0.14.0"), site, symlinks=True)
    return site


_SF_ROUNDTRIP = ("import soundfile as sf, io\n"
                 "b = io.BytesIO()\n"
                 "sf.write(b, [0.0, 0.5, -0.5], 8000, format='WAV')\n"
                 "b.seek(0)\n"
                 "print(sf.read(b)[0].tolist(), sf.__file__)")


@pytest.mark.probe
def test_single_module_distribution_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    """soundfile 0.14.0 is one module (soundfile.py) whose distribution installs its libsndfile
    in _soundfile_data/ beside it: it imports and writes and reads a WAV file; opdoctor finds
    nothing wrong, with and without the probe."""
    site = _site("soundfile-0.14.0")
    real = _run(site, _SF_ROUNDTRIP)
    assert real.returncode == 0 and "[0.0, 0.5, -0.5]" in real.stdout, real.stderr
    for extra in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", *extra, "--package", "soundfile",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        assert res.code == 0 and _errors(res) == [], _errors(res)


def test_single_module_distribution_missing_its_library_is_a_partial_install(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same install with _soundfile_data/ deleted: Python's import really fails (soundfile
    falls back to a system libsndfile.so, which is not there), and RECORD says why — the
    single-module distribution's RECORD is checked as a package's is (OD508, with the
    reinstall of soundfile==0.14.0), not only the loader's miss."""
    import shutil

    site = _soundfile_copy(tmp_path)
    shutil.rmtree(site / "_soundfile_data")
    real = _run(site, "import soundfile")
    assert real.returncode != 0 and "OSError" in real.stderr and "libsndfile" in real.stderr
    res = _check_package(capsys, site, "soundfile")
    assert res.code == 1
    od508 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD508"]
    assert od508 and "missing: _soundfile_data/libsndfile_x86_64.so" in od508[0]["evidence"]
    assert f"--force-reinstall --no-deps --upgrade --target {site} 'soundfile==0.14.0'" in \
        od508[0]["fix"], od508[0]["fix"]


def test_bytecode_caches_removed_are_no_partial_install(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Every __pycache__ removed (as the official python Docker images slim themselves): the
    RECORD rows of the .pyc files pip compiled point at nothing, the import still works (it
    compiles again), and there is no OD508 — for the single module and for a package (cffi)."""
    import shutil

    site = _soundfile_copy(tmp_path)
    record = (site / "cffi-2.1.1.dist-info" / "RECORD").read_text()
    assert ".pyc," in record  # pip listed the bytecode it compiled
    for d in list(site.rglob("__pycache__")):
        shutil.rmtree(d)
    real = _run(site, "import sys; sys.dont_write_bytecode = True\n" + _SF_ROUNDTRIP)
    assert real.returncode == 0 and "[0.0, 0.5, -0.5]" in real.stdout, real.stderr
    for package in ("soundfile", "cffi"):
        res = _check_package(capsys, site, package)
        codes = {f["code"] for rep in res.json()["reports"] for f in rep["findings"]}
        assert res.code == 0 and "OD508" not in codes, (package, _errors(res))


def test_installed_copies_are_told_apart_by_release(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Two pip installs of soundfile on sys.path. The same release twice (0.14.0 and a copy of
    it): Python imports the first and both work alike — a note, never a warning about a stale
    checkout. 0.14.0 before 0.13.1: import really runs 0.14.0 while the later directory holds
    0.13.1 — a warning naming both releases and that directory."""
    first = _soundfile_copy(tmp_path)
    older = _site("soundfile-0.13.1")
    twin = tmp_path / "twin"
    import shutil
    shutil.copytree(first, twin, symlinks=True)
    for later, want in ((twin, "info"), (older, "warning")):
        path = f"{first}{os.pathsep}{later}"
        real = run_python("import soundfile; print(soundfile.__version__, soundfile.__file__)",
                          env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                               "PYTHONPATH": path}, timeout=120)
        assert real.returncode == 0 and real.stdout.split() == ["0.14.0",
                                                                 str(first / "soundfile.py")]
        res = cli(capsys, "check", "-f", "json", "--static", "--package", "soundfile",
                  "--env", f"PYTHONPATH={path}", "--cwd", str(tmp_path))
        od502 = [f for rep in res.json()["reports"] for f in rep["findings"]
                 if f["code"] == "OD502"]
        assert res.code == 0 and len(od502) == 1, _errors(res)
        assert od502[0]["severity"] == want, od502
        assert "installed by soundfile 0.14.0" in od502[0]["evidence"][0]
        assert "checkout" not in od502[0]["fix"] and "pip install -e" not in od502[0]["fix"]
        if want == "warning":
            assert "soundfile 0.13.1 installed later on sys.path is hidden" in od502[0]["message"]
            assert str(older) in od502[0]["fix"]


def test_numpy2_builds_are_no_numpy_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    """Modules built with NumPy 2's headers beside NumPy 2 — scipy 1.17.1's _fblas (its C API
    targets NumPy 1.23 and later), NumPy's own _umath_linalg and torch's libtorch_python.so —
    are read as NumPy 2 builds and get no OD328; scipy's module really imports and runs."""
    from opdoctor.facts.core import read_elf
    from opdoctor.facts.numpyabi import numpy_build

    site = _site("scipy-1.17.1")
    numpy_site = _site("numpy-2.4.6")
    fblas = next(site.glob("scipy/linalg/_fblas.cpython-*.so"))
    linalg = next(numpy_site.glob("numpy/linalg/_umath_linalg.cpython-*.so"))
    torch_python = Path(sysconfig.get_paths()["purelib"]) / "torch" / "lib" / "libtorch_python.so"
    real = _run(site, "import scipy.linalg.blas as b, numpy as np\n"
                "print(b.ddot(np.ones(3), np.ones(3)))")
    assert real.returncode == 0 and real.stdout.strip() == "3.0", real.stderr
    for lib, env in ((fblas, site), (linalg, numpy_site), (torch_python, None)):
        build = read_elf(str(lib), numpy_build, None)
        assert build is not None and build.major == 2, lib
        res = cli(capsys, "check", "-f", "json", "--static",
                  *(["--env", f"PYTHONPATH={env}"] if env else []), str(lib))
        codes = {f["code"] for rep in res.json()["reports"] for f in rep["findings"]}
        assert "OD328" not in codes and _errors(res) == [], (lib, _errors(res))
    # the package reading (every compiled module of scipy) finds none either
    res = _check_package(capsys, site, "scipy")
    assert "OD328" not in {f["code"] for rep in res.json()["reports"] for f in rep["findings"]}


@pytest.mark.probe
def test_a_missing_file_nothing_imports_is_a_warning_not_an_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Survey 11's P10: a file RECORD lists deleted from an install whose import never needs
    it (cffi/setuptools_ext.py, which only setuptools' plugin hook imports) was an OD508 error
    on a package that imports and works. It is a warning now, with and without the probe;
    deleting a module the import does run (cffi/api.py) is still an error, and Python fails
    on it."""
    site = _soundfile_copy(tmp_path)
    (site / "cffi" / "setuptools_ext.py").unlink()
    real = _run(site, "import cffi; print(cffi.FFI().sizeof('int'))")
    assert real.returncode == 0 and real.stdout.strip() == "4", real.stderr
    for extra in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", *extra, "--package", "cffi",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
        od508 = [f for rep in res.json()["reports"] for f in rep["findings"]
                 if f["code"] == "OD508"]
        assert res.code == 0 and [f["severity"] for f in od508] == ["warning"], od508
        assert od508[0]["message"].endswith("nothing the import runs needs them")
        assert "missing: cffi/setuptools_ext.py" in od508[0]["evidence"]
    (site / "cffi" / "api.py").unlink()
    real = _run(site, "import cffi")
    assert "No module named 'cffi.api'" in real.stderr
    res = _check_package(capsys, site, "cffi")
    assert ("OD508", "the installed files of cffi-2.1.1.dist-info differ from its RECORD (2 "
            "missing, 0 changed)") in _errors(res)


@pytest.mark.probe
def test_an_optional_extra_the_package_catches_is_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    """beautifulsoup4 4.12.3 (with soupsieve, its one requirement): its builders catch
    `import lxml` and `import html5lib`, which its METADATA lists only under extras; the
    package imports and parses. The swallowed imports are notes (OD512 info, "an optional
    dependency"), not the warnings that made a working package's headline cause 5 (survey
    11's P12)."""
    site = _site("bs4-4.12.3")
    real = _run(site, "import bs4\n"
                "print(bs4.BeautifulSoup('<p>x</p>', 'html.parser').p.text)\n"
                "import importlib.util as u; print(u.find_spec('lxml'), u.find_spec('html5lib'))")
    assert real.returncode == 0 and real.stdout.split() == ["x", "None", "None"], real.stderr
    meta = (site / "beautifulsoup4-4.12.3.dist-info" / "METADATA").read_text()
    assert "Requires-Dist: lxml; extra == 'lxml'" in meta
    res = cli(capsys, "check", "-f", "json", "--package", "bs4", "--env", f"PYTHONPATH={site}",
              "--cwd", str(site.parent))
    findings = [f for rep in res.json()["reports"] for f in rep["findings"]]
    od512 = sorted(f["message"].split(" fails:")[0] for f in findings if f["code"] == "OD512")
    assert od512 == ["import bs4.builder._html5lib", "import bs4.builder._lxml"], od512
    assert res.code == 0 and {f["severity"] for f in findings} == {"info"}, findings


@pytest.mark.probe
def test_pure_python_packages_are_checked_and_clean(capsys: pytest.CaptureFixture[str]) -> None:
    """Real pure-Python packages that import and work: soupsieve 2.6 (beside bs4) and
    google.protobuf 5.29.3, whose distribution installs its compiled module elsewhere
    (google/_upb/_message.abi3.so), which `import google.protobuf` does not load. Each is
    one report with the OD415 note and exit 0, with and without the probe — it was exit 2,
    "nothing to check", while a package with some other note (bs4's OD507) got a report
    (survey 11's P13 and P9). The note names protobuf's compiled module, whose own check is
    clean."""
    bs4_site, pb_site = _site("bs4-4.12.3"), _site("protobuf-5.29.3")
    upb = pb_site / "google" / "_upb" / "_message.abi3.so"
    real = _run(pb_site, "import sys, google.protobuf\n"
                "print(google.protobuf.__version__, 'google._upb._message' in sys.modules)\n"
                "from google.protobuf.internal import api_implementation\n"
                "print(api_implementation.Type(), 'google._upb._message' in sys.modules)")
    assert real.returncode == 0 and real.stdout.split() == [
        "5.29.3", "False", "upb", "True"], real.stderr
    works = _run(bs4_site, "import bs4, soupsieve\n"
                 "print(soupsieve.select_one('b', bs4.BeautifulSoup('<p><b>x</b></p>', "
                 "'html.parser')).text)")
    assert works.returncode == 0 and works.stdout.strip() == "x", works.stderr
    for site, name in ((bs4_site, "soupsieve"), (pb_site, "google.protobuf")):
        for mode in ((), ("--static",)):
            res = cli(capsys, "check", "-f", "json", *mode, "--package", name,
                      "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
            doc = res.json()
            assert res.code == 0 and not doc["errors"], (name, mode, doc["errors"])
            [note] = doc["reports"][0]["findings"]
            assert (note["code"], note["severity"]) == ("OD415", "info"), note
            assert note["message"].startswith(f"Python package {name} has no compiled "
                                              "library and defines no operator"), note
            assert (str(upb) in " ".join(note["evidence"])) == (name == "google.protobuf")
    assert f"opdoctor check {upb}" in note["fix"]
    res = cli(capsys, "check", "--static", str(upb))
    assert res.code == 0 and "No problem found." in res.out, res.out


def test_a_pure_python_package_whose_compiled_part_is_a_requirement_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    """pydantic 2.11.7 is pure Python; its compiled core is the distribution pydantic-core
    (an exact pin), as polars 2.1's engine is polars-runtime-32 and jax's is jaxlib (survey
    12's P9). Its OD415 note said "a package that should ship an extension was built without
    it" — nothing was left out: the note names the requirement and its library instead."""
    site = _site("pydantic-2.11.7")
    real = _run(site, "import pydantic, pydantic_core\n"
                "class M(pydantic.BaseModel):\n    x: int\n"
                "print(pydantic.VERSION, pydantic_core.__version__, M(x='3').x)")
    assert real.returncode == 0 and real.stdout.split() == ["2.11.7", "2.33.2", "3"], \
        real.stdout + real.stderr
    res = _check_package(capsys, site, "pydantic")
    (note,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD415"]
    core = next((site / "pydantic_core").glob("_pydantic_core*.so"))
    assert note["severity"] == "info" and res.code == 0
    assert f"compiled code of its requirement pydantic-core 2.33.2: {core}" in note["evidence"]
    assert "built without it" not in note["fix"]
    assert note["fix"].endswith(f"installed by its requirement pydantic-core: opdoctor check "
                                f"{core}"), note["fix"]


def test_the_compiled_code_named_for_a_requirement_is_its_own_not_what_it_vendors(
        tmp_path: Path) -> None:
    """torchmetrics' OD415 (survey 17) named numpy's "compiled code" as
    numpy.libs/libgfortran-….so — the Fortran runtime auditwheel vendored, first in numpy's
    RECORD — and told to check that. The distribution's own extension comes first; vendored
    libraries (``<dist>.libs/``, ``pkg/.libs/``) after it."""
    from opdoctor.facts.requires import compiled_requirements, own_code_first

    site = tmp_path / "site"
    for rel in ("numpylike.libs/libgfortran-040039e1.so.5.0.0",
                "numpylike/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(b"\x7fELF")
    (site / "numpylike-2.4.6.dist-info").mkdir()
    (site / "numpylike-2.4.6.dist-info" / "METADATA").write_text(
        "Name: numpylike\nVersion: 2.4.6\n")
    (site / "numpylike-2.4.6.dist-info" / "RECORD").write_text(
        "numpylike.libs/libgfortran-040039e1.so.5.0.0,,\n"
        "numpylike/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so,,\n")
    (site / "metricslike-1.0.dist-info").mkdir()
    (site / "metricslike-1.0.dist-info" / "METADATA").write_text(
        "Name: metricslike\nVersion: 1.0\nRequires-Dist: numpylike>1.20\n")
    [(dist, version, lib)] = compiled_requirements(
        str(site / "metricslike-1.0.dist-info"), [str(site)])
    assert dist.startswith("numpylike") and version == "2.4.6"
    assert lib == str(site / "numpylike/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so")
    assert own_code_first(["a/.libs/x.so", "a/b.so", "a.libs/y.so", "a/c.so"]) == [
        "a/b.so", "a/c.so", "a/.libs/x.so", "a.libs/y.so"]


def test_a_c_accelerator_over_a_python_version_is_a_note_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """frozenlist 1.8.0 defines ``class FrozenList`` in Python, then ``try: from
    ._frozenlist import FrozenList as CFrozenList … else: FrozenList = CFrozenList``;
    propcache 0.5.4's handler imports ``._helpers_py`` instead. Both import their C
    extension here, and ``--static`` reported warnings with a "✗ Cause 5" headline for them
    (survey 12's P2). Such a try keeps a pure-Python version: a note. A try that replaces a
    placeholder (``_C = None``) or whose handler only imports ``warnings`` still hides a
    failed load: a warning."""
    site = _site("accelerators")
    real = _run(site, "import frozenlist, propcache._helpers as h\n"
                "print(frozenlist.FrozenList.__module__, h.under_cached_property.__module__)")
    assert real.returncode == 0 and real.stdout.split() == [
        "frozenlist._frozenlist", "propcache._helpers_c"], real.stdout + real.stderr
    for name in ("frozenlist", "propcache"):
        res = cli(capsys, "check", "-f", "json", "--static", "--package", name,
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        findings = res.json()["reports"][0]["findings"]
        od509 = [f for f in findings if f["code"] == "OD509"]
        assert od509 and {f["severity"] for f in od509} == {"info"}, findings
        assert all("(a pure-Python fallback): nothing is lost but speed" in f["message"]
                   for f in od509), od509
        assert res.code == 0 and res.json()["reports"][0]["diagnosis"]["cause"] == 0
    for init in ("_C = None\ntry:\n    from . import _C\nexcept ImportError:\n    pass\n",
                 "try:\n    from . import _C\nexcept ImportError:\n    import warnings\n"
                 "    warnings.warn('no C extension')\n"):
        pkg = tmp_path / "hider"
        pkg.mkdir(exist_ok=True)
        (pkg / "__init__.py").write_text(init)
        (pkg / f"_C{sysconfig.get_config_var('EXT_SUFFIX')}").write_bytes(b"")  # a bad build
        res = cli(capsys, "check", "-f", "json", "--static", "--package", "hider",
                  "--cwd", str(tmp_path))
        od509 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD509"]
        assert [f["severity"] for f in od509] == ["warning"], (init, od509)


def test_a_swallowed_import_of_an_extension_that_reads_loadable_is_a_note_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cffi 2.1.1's commontypes.py: ``try: import _cffi_backend`` / ``except ImportError:``
    that drops the error. The extension is there and imports; ``--static`` gave a warning
    headline for it (survey 13, with pyarrow's optional filesystems, gevent and rapidfuzz).
    Read without loading it, the file is for this interpreter, exports its PyInit_ and every
    library and symbol it needs is found: a note. The same package with that file replaced
    by another extension (no PyInit__cffi_backend: the real import fails and the handler
    hides it) keeps the warning, and says what reading it found."""
    import shutil

    site = _site("optional-ext")
    real = _run(site, "import cffi, _cffi_backend; print(cffi.FFI().sizeof('int'))")
    assert real.returncode == 0 and real.stdout.strip() == "4", real.stdout + real.stderr
    res = _check_package(capsys, site, "cffi")
    od509 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD509"]
    guarded = [f for f in od509 if "_cffi_backend is inside `except ImportError: (line 12)"
               in f["message"]]
    assert guarded and all(f["severity"] == "info" for f in od509), od509
    assert "looks loadable" in guarded[0]["message"]
    assert res.code == 0 and not [f for f in res.json()["reports"][0]["findings"]
                                  if f["severity"] != "info"]
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    (so,) = broken.glob("_cffi_backend*.so")
    import _json  # a compiled module of the standard library: no PyInit__cffi_backend

    shutil.copy(str(_json.__file__), so)
    failed = _run(broken, "import _cffi_backend")
    assert "PyInit__cffi_backend" in failed.stderr, failed.stderr
    res = _check_package(capsys, broken, "cffi")
    od509 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD509"
             and "(line 12)" in f["message"]]
    assert [f["severity"] for f in od509] == ["warning"], od509
    assert "reading it, the load fails: " in od509[0]["message"]
    assert "does not export PyInit__cffi_backend" in od509[0]["message"]


@pytest.mark.probe
def test_a_requirement_only_first_use_needs_is_a_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    """tokenizers 0.23.3 installed without huggingface-hub (its one requirement, left out by
    --no-deps): ``import tokenizers`` works, its first ``Tokenizer.from_pretrained`` fails
    with "No module named 'huggingface_hub'" — and the check said nothing (survey 12's P8,
    cryptography without cffi). Every unconditional requirement not installed is OD514 now: a
    warning when the import does not reach it (what `pip check` says), exit 0."""
    site = _site("tokenizers-0.23.3")
    real = _run(site, "import tokenizers\nprint('imported')\n"
                "tokenizers.Tokenizer.from_pretrained('bert-base-uncased')")
    assert real.stdout.strip() == "imported", real.stderr
    assert "ModuleNotFoundError: No module named 'huggingface_hub'" in real.stderr
    for mode in ((), ("--static",)):
        res = cli(capsys, "check", "-f", "json", *mode, "--package", "tokenizers",
                  "--env", f"PYTHONPATH={site}", "--cwd", str(site.parent))
        findings = [f for r in res.json()["reports"] for f in r["findings"]]
        od514 = [f for f in findings if f["code"] == "OD514"]
        assert od514 and {f["severity"] for f in od514} == {"warning"}, findings
        assert od514[0]["message"] == ("tokenizers 0.23.3 requires huggingface-hub>=0.16.4,"
                                       "<3.0, which is not installed; its import does not "
                                       "reach it (its first use may)"), od514[0]
        assert od514[0]["fix"].startswith("pip install 'huggingface-hub>=0.16.4,<3.0'")
        assert res.code == 0 and not [f for f in findings if f["severity"] == "error"]


def test_an_emptied_module_of_an_installed_wheel_is_reinstalled_not_rebuilt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W11: tokenizers 0.23.3's extension emptied (a full disk, an interrupted
    copy): the import fails ("file too short") and OD404's fix was "make clean && make" —
    there is no build: the file is the wheel's. The fix reinstalls the distribution, into the
    --target directory the copy is in; a file no distribution lists keeps the rebuild fix."""
    site = tmp_path / "site"
    shutil.copytree(_site("tokenizers-0.23.3"), site, symlinks=True)
    (ext,) = site.glob("tokenizers/tokenizers*.so")
    ext.write_bytes(b"")
    real = _run(site, "import tokenizers")
    assert real.returncode != 0 and "file too short" in real.stderr, real.stderr[-1500:]
    res = _check_package(capsys, site, "tokenizers", "--static")
    od404 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD404"]
    assert res.code == 1 and od404, res.json()["reports"][0]["findings"]
    assert od404[0]["fix"].startswith(f"pip install --force-reinstall --no-deps --upgrade "
                                      f"--target {site} 'tokenizers==0.23.3'"), od404[0]["fix"]
    loose = tmp_path / "loose.so"
    loose.write_bytes(b"")
    res = cli(capsys, "check", "-f", "json", "--static", str(loose))
    assert "make clean" in res.json()["reports"][0]["findings"][0]["fix"]
