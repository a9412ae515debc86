"""Python import chain (cause 5): real packages on disk, built by the Makefile."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.model import Report, Severity
from opdoctor.pipeline import run_check
from tests.conftest import FIX, PKG_DIR, fixture
from tests.helpers import Result, cli, cli_text_and_json, dist_info, make_package

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

PYFIX = FIX / "python"


def chain(cwd: Path, package: str, *, probe: bool = True, env: dict[str, str] | None = None,
          path: Path | None = None) -> Report:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    base.update(env or {})
    opts = CheckOptions(package=package, cwd=str(cwd), probe=probe, env=tuple(base.items()))
    target = path or (cwd / package)
    return run_check(str(target), opts)


def codes(report: Report, prefix: str = "OD5") -> list[str]:
    return sorted(f.code for f in report.findings if f.code.startswith(prefix))


@pytest.mark.probe
def test_reference_package_clean_with_chain() -> None:
    report = chain(PKG_DIR, "myop", path=PKG_DIR / "myop" / "libmyop.so")
    assert report.findings == []
    sec = report.sections["import-chain"]
    assert sec["winner"] == str(PKG_DIR / "myop")
    link = sec["links"][0]
    assert link["kind"] == "load_library" and link["resolved"] == [str(PKG_DIR / "myop/libmyop.so")]
    assert [o["name"] for o in sec["ops"]] == ["myop::weighted_sum"]
    assert sec["imported"][0]["module"] == "myop"
    assert str(PKG_DIR / "myop" / "libmyop.so") in sec["libraries_loaded"]


@pytest.mark.probe
def test_reference_text_chain(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--cwd", str(PKG_DIR), "--package", "myop")
    assert res.code == 0, res.out
    assert "import chain: ✓ import myop →" in res.out
    assert "✓ ops registered by the import: myop::weighted_sum" in res.out


def test_so_inside_package_walks_up(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "-f", "json", "--static", str(PKG_DIR / "myop" / "libmyop.so"))
    rep = res.json()["reports"][0]
    assert rep["sections"]["import-chain"]["package"] == "myop"
    assert {c["cause"]: c["state"] for c in rep["causes"]}[5] == "clean"


@pytest.mark.probe
def test_never_imports_extension() -> None:
    report = chain(PYFIX / "noimport", "myop")
    assert codes(report) == ["OD505"]
    assert "never imports or loads libmyop.so" in report.findings[0].message


@pytest.mark.probe
def test_shadowed_by_source_checkout() -> None:
    report = chain(PYFIX / "shadow_src", "myop", env={"PYTHONPATH": str(PKG_DIR)})
    assert "OD502" in codes(report) and "OD510" in codes(report)
    f = next(f for f in report.findings if f.code == "OD502")
    assert "shadow_src/myop, which has no compiled extension" in f.message
    assert any(f"hidden: {PKG_DIR / 'myop'}" in e for e in f.evidence)
    # Without the shadow on sys.path the installed copy wins and all is well.
    ok = chain(PKG_DIR, "myop", env={"PYTHONPATH": str(PKG_DIR)})
    assert codes(ok) == []


@pytest.mark.probe
def test_built_for_another_python() -> None:
    report = chain(PYFIX / "wrongabi", "myext")
    assert "OD503" in codes(report)
    f = next(f for f in report.findings if f.code == "OD503")
    assert "only _C.cpython-3" in f.message and "this interpreter imports _C" in f.message


@pytest.mark.probe
def test_pyinit_mismatch() -> None:
    report = chain(PYFIX / "pyinit", "myext")
    assert "OD416" in codes(report, "OD4")
    f = next(f for f in report.findings if f.code == "OD416")
    assert "does not export PyInit__C" in f.message and "PyInit_other" in f.evidence[0]
    od511 = next(f for f in report.findings if f.code == "OD511")
    assert "dynamic module does not define module export function (PyInit__C)" in od511.message


@pytest.mark.probe
def test_swallowed_import_error_is_surfaced() -> None:
    report = chain(PYFIX / "swallow", "myext")
    assert {"OD509", "OD512"} <= set(codes(report))
    f = next(f for f in report.findings if f.code == "OD512")
    assert "undefined symbol: missing_helper" in f.message
    static = chain(PYFIX / "swallow", "myext", probe=False)
    assert codes(static) == ["OD509"]
    # Statically its file is read: the symbol the real load misses is named, and the
    # handler that would hide that failure stays a warning.
    (od509,) = [f for f in static.findings if f.code == "OD509"]
    assert od509.severity is Severity.WARNING
    assert "reading it, the load fails: undefined symbol: missing_helper" in od509.message
    # The chain's line for it: ✗ once the probe saw the swallowed import fail; statically it
    # resolves to a file (a swallowed import is wrong only when it fails) and is ✓.
    assert chain_mark(report, "from . import _C") == "✗"
    assert chain_mark(static, "from . import _C") == "✓"


def chain_mark(report: Report, text: str) -> str:
    """The mark the text report's import-chain section gives the link written ``text``."""
    import io

    from opdoctor.report import text as text_report
    from opdoctor.report.layout import Printer

    out = io.StringIO()
    failed = frozenset(f.subject for f in report.findings if f.code == "OD512")
    text_report._chain(Printer(out, None), report.sections["import-chain"], "", failed)
    return next(ln.split()[0] for ln in out.getvalue().splitlines() if text in ln)


@pytest.mark.probe
def test_partial_install_record() -> None:
    report = chain(PYFIX / "partial", "myop")
    assert {"OD508", "OD510"} <= set(codes(report))
    f = next(f for f in report.findings if f.code == "OD508")
    assert "missing: myop/libmyop.so" in f.evidence


def test_record_hash_changed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(PYFIX / "partial", site)
    shutil.copy(PKG_DIR / "myop" / "libmyop.so", site / "myop" / "libmyop.so")
    with open(site / "myop" / "__init__.py", "a") as fh:
        fh.write("# edited after install\n")
    report = chain(site, "myop", probe=False)
    f = next(f for f in report.findings if f.code == "OD508")
    assert "changed since install (hash differs): myop/__init__.py" in f.evidence


def test_record_rows_of_another_dist_info_are_not_missing_files(tmp_path: Path) -> None:
    """eva-decord 0.6.1's wheel (survey 19): its RECORD lists decord-0.6.0.dist-info's
    METADATA, WHEEL and top_level.txt, which the wheel never held; `import decord` works, and
    `--static` said OD508 "installed files differ from its RECORD (3 missing)", exit 1, with a
    reinstall that reproduces it. Another distribution's metadata is no file an import needs;
    a missing file of the package itself still is."""
    site = tmp_path / "site"
    _write(site, {"evapkg/__init__.py": "VALUE = 1\n",
                  "eva_pkg-0.6.1.dist-info/METADATA": "Name: eva-pkg\nVersion: 0.6.1\n",
                  "eva_pkg-0.6.1.dist-info/RECORD": (
                      "evapkg/__init__.py,,\neva_pkg-0.6.1.dist-info/METADATA,,\n"
                      "evapkg-0.6.0.dist-info/METADATA,,\nevapkg-0.6.0.dist-info/WHEEL,,\n"
                      "eva_pkg-0.6.1.dist-info/RECORD,,\n")})
    real = subprocess.run([sys.executable, "-c", "import evapkg; print(evapkg.VALUE)"],
                          cwd=site, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "1", real.stderr
    report = chain(tmp_path, "evapkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "evapkg")
    assert "OD508" not in codes(report), report.findings
    with open(site / "eva_pkg-0.6.1.dist-info" / "RECORD", "a") as fh:
        fh.write("evapkg/_gone.py,,\n")
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()
    report = chain(tmp_path, "evapkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "evapkg")
    f = next(f for f in report.findings if f.code == "OD508")
    assert "missing: evapkg/_gone.py" in f.evidence and not any(
        "0.6.0.dist-info" in e for e in f.evidence), f.evidence


def test_record_hashes_are_remembered_by_stat_identity(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A package's RECORD check hashes its libraries once: the digests are kept on disk by
    (device, inode, size, mtime, ctime). A library rewritten in place to the same size with
    its mtime set back has another key (its ctime moved), so the edit is found; and a later
    check takes the digest from the cache (one planted under the file's key is believed:
    the file is not read again)."""
    import base64
    import csv
    import json

    from opdoctor.facts import commandcache

    monkeypatch.setenv("OPDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    shutil.copytree(PYFIX / "partial", site)
    lib = site / "myop" / "libmyop.so"
    shutil.copy(PKG_DIR / "myop" / "libmyop.so", lib)

    def changed() -> list[str]:
        commandcache.clear()  # a new command: nothing of the last one's reading is kept
        found = [f for f in chain(site, "myop", probe=False).findings if f.code == "OD508"]
        return [e for f in found for e in f.evidence if e.startswith("changed")]

    assert changed() == []  # the installed library is the one RECORD lists
    cache = tmp_path / "cache" / "sha256-cache.json"
    real = os.path.realpath(lib)
    st = lib.stat()
    assert json.loads(cache.read_text())["entries"][real][:3] == [st.st_dev, st.st_ino,
                                                                  st.st_size]
    data = bytearray(lib.read_bytes())
    data[-1] ^= 0xFF
    lib.write_bytes(bytes(data))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changed() == ["changed since install (hash differs): myop/libmyop.so"]
    # RECORD's digest planted as the cached digest of the edited file: believed.
    rows = list(csv.reader((site / "myop-0.1.0.dist-info" / "RECORD").open()))
    recorded = next(r[1] for r in rows if r[0] == "myop/libmyop.so")[len("sha256="):]
    entries = json.loads(cache.read_text())["entries"]
    entries[real][5] = base64.urlsafe_b64decode(recorded + "==").hex()
    cache.write_text(json.dumps({"version": 1, "entries": entries}))
    assert changed() == []


@pytest.mark.probe
def test_namespace_package() -> None:
    report = chain(PYFIX / "namespace", "myop")
    assert codes(report) == ["OD506"]


@pytest.mark.probe
def test_relative_import_in_script() -> None:
    report = chain(PYFIX / "scriptrel", "myext")
    assert codes(report) == ["OD507"]
    assert report.findings[0].fix == "run it as python -m myext.tool"


def test_package_not_found(tmp_path: Path) -> None:
    report = chain(tmp_path, "no_such_package_xyz", probe=False, path=tmp_path)
    assert codes(report) == ["OD501"]


def test_package_dir_without_library(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "-f", "json", "--static", str(PYFIX / "shadow_src" / "myop"))
    rep = res.json()["reports"][0]
    assert "OD510" in [f["code"] for f in rep["findings"]]
    skipped = {c["name"]: c["reason"] for c in rep["checks"] if c["status"] == "skipped"}
    assert skipped["symbols"] == "the package has no compiled library to analyse"


@pytest.mark.probe
def test_fixture_errors_of_python_are_explained() -> None:
    from opdoctor.explain import explain_text

    report = chain(PYFIX / "pyinit", "myext")
    od511 = next(f for f in report.findings if f.code == "OD511")
    # The module was compiled under another name (a build matter, 4, as the real threads of
    # the explain corpus resolved it): explain names the cause the check's OD416 has.
    e = explain_text(od511.message)
    assert [a.cause for a in e.ranked][:2] == [4, 5] and e.codes == ["OD416"]
    assert next(f for f in report.findings if f.code == "OD416").cause == 4
    assert fixture("integrity/empty.so").exists()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_a_requirement_older_than_the_range_gets_no_upgrade_of_the_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TensorFlow 2.21 requires protobuf>=6.31.1; with protobuf 3.20.3 first on sys.path the
    second fix was "a release of tensorflow that accepts protobuf 3.20.3 (`pip install
    --upgrade tensorflow` lets pip choose one)" — an upgrade never goes back to the older
    release that would (survey 20). The installed metadata, as importlib reads it, then the
    check: the older release, and how to list them."""
    import importlib.metadata

    site = tmp_path / "site"
    _write(site, {"pbuser/__init__.py": "", "pbuser-2.0.dist-info/METADATA":
                  "Name: pbuser\nVersion: 2.0\nRequires-Dist: pbdep>=5.28.0\n",
                  "pbuser-2.0.dist-info/RECORD": "pbuser/__init__.py,,\n",
                  "pbdep/__init__.py": "", "pbdep-3.20.3.dist-info/METADATA":
                  "Name: pbdep\nVersion: 3.20.3\n", "pbdep-3.20.3.dist-info/RECORD":
                  "pbdep/__init__.py,,\n"})
    dists = {d.metadata["Name"]: d for d in importlib.metadata.distributions(path=[str(site)])}
    assert dists["pbuser"].requires == ["pbdep>=5.28.0"] and dists["pbdep"].version == "3.20.3"
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "pbuser")
    od327 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD327"]
    assert len(od327) == 1 and od327[0]["message"].startswith(
        "pbuser 2.0 requires pbdep>=5.28.0; pbdep 3.20.3 is installed"), od327
    assert od327[0]["fix"].endswith("or an older release of pbuser that accepts pbdep 3.20.3 "
                                    "(pip index versions pbuser lists them; `pip install "
                                    "--upgrade` never goes back to one)"), od327[0]["fix"]


def test_chain_fallbacks_build_targets_and_subpackage_imports(tmp_path: Path) -> None:
    # The shapes of fbgemm_gpu 1.8 and torchcodec 0.17 that OD510 used to report: a load in an
    # except handler (a fallback), a Buck target passed to load_library, absolute imports from
    # inside a subpackage, a two-dot relative import.
    _write(tmp_path, {
        "pkg/__init__.py": (
            "import os\nimport torch\nfrom . import sub\n"
            "try:\n    from . import _core\nexcept ImportError:\n"
            "    torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'libfb.so'))\n"
            "torch.ops.load_library('//deeplearning/fbgemm/fbgemm_gpu:cumem_utils')\n"
            "torch.ops.load_library('https://example.org/lib.so')\n"),
        "pkg/_core.py": "X = 1\n",
        "pkg/utils.py": "Y = 2\n",
        "pkg/sub/__init__.py": ("from pkg.utils import Y\nfrom .._core import X\n"
                                "from . import deep\n"),
        "pkg/sub/deep.py": "import pkg.utils\nfrom pkg._core import X\n",
    })
    report = chain(tmp_path, "pkg", probe=False)
    assert "OD510" not in codes(report)
    links = report.sections["import-chain"]["links"]
    fb = next(li for li in links if "libfb.so" in li["text"])
    assert fb["fallback"] and "does not exist" in fb["problem"]
    # A module that really is missing still fires, from the subpackage as from the top.
    _write(tmp_path, {"pkg/sub/deep.py": "from pkg.missing import Z\nfrom .._gone import W\n"})
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()  # the chain is cached per package and interpreter
    missing = chain(tmp_path, "pkg", probe=False)
    msgs = [f.message for f in missing.findings if f.code == "OD510"]
    assert len(msgs) == 2 and all(str(tmp_path / "pkg") + " " not in m for m in msgs), msgs
    assert any(m.startswith("pkg.missing: no module missing in") for m in msgs)
    assert any(m.startswith("pkg._gone: no module _gone in") for m in msgs)


@pytest.mark.probe
def test_swallowed_loader_error_is_the_root_not_the_warning() -> None:
    # The static symbol check (OD301) is left out, as on real wheels where it cannot see the
    # missing symbol: the verdict then rests on what the probe saw behind the try/except.
    from opdoctor.pipeline import Selection
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    cwd = PYFIX / "swallow"
    opts = CheckOptions(package="myext", cwd=str(cwd), probe=True, env=tuple(base.items()))
    so = next((cwd / "myext").glob("_C*.so"))
    report = run_check(str(so), opts, Selection(ignore=("OD30", "OD43")))
    assert {"OD509", "OD512", "OD321"} <= {f.code for f in report.findings}
    d = report.diagnosis
    assert d.cause == 3
    assert [r.code for r in d.root_findings] == ["OD321"]
    assert "undefined symbol missing_helper" in d.summary


def test_a_warning_never_outranks_an_error() -> None:
    # Only a symptom is an error (OD511 without a loader message): it still beats a warning.
    from opdoctor.checks.importchain import OD509, OD511
    from opdoctor.verdict.diagnosis import diagnose
    d = diagnose([OD509.finding("p._C", "the import of p._C is inside `except Exception`"),
                  OD511.finding("p", "import p raised NameError: name 'x' is not defined")])
    assert [r.code for r in d.root_findings] == ["OD511"] and d.confidence == "high"


def _deep_package(root: Path) -> Path:
    """A package whose library is loaded three packages down, the way tensorflow-text loads its
    op libraries: ``from pkg.python.ops import *`` → ``ops/__init__`` → a module that loads
    ``_x.so`` through ``resource_loader.get_path_to_datafile`` (or ``ctypes.CDLL``)."""
    pkg = root / "deeppkg"
    ops = pkg / "python" / "ops"
    ops.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from deeppkg.python import extras\n"
                                     "from deeppkg.python.ops import *\n")
    (pkg / "python" / "__init__.py").write_text("")
    (pkg / "python" / "extras.py").write_text("VALUE = 1\n")
    (ops / "__init__.py").write_text("from deeppkg.python.ops.loader import lib\n")
    (ops / "loader.py").write_text(
        "import ctypes\n"
        "try:\n"
        "    from tensorflow.python.platform import resource_loader\n"
        "    path = resource_loader.get_path_to_datafile('_x.so')\n"
        "except ImportError:\n"
        "    import os\n"
        "    path = os.path.join(os.path.dirname(__file__), '_x.so')\n"
        "lib = ctypes.CDLL(path)\n")
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), ops / "_x.so")
    return pkg


# The TensorFlow venv's ground truth imports TensorFlow (the package asks its resource_loader).
@pytest.mark.parametrize("python", ["venv", pytest.param("tf", marks=pytest.mark.probe)])
def test_library_loaded_packages_down_is_found(tmp_path: Path, python: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    from tests.conftest import BUILD

    interp = sys.executable if python == "venv" else str(BUILD / "venv-tf" / "bin" / "python")
    if not os.path.exists(interp):
        pytest.skip("build/venv-tf missing: run `make venv-tf`")
    pkg = _deep_package(tmp_path)
    lib = pkg / "python" / "ops" / "_x.so"
    # What Python itself does: importing the package maps _x.so into the process.
    maps = subprocess.run([interp, "-c", "import deeppkg; print(open('/proc/self/maps').read())"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    assert str(lib) in maps.stdout
    res = cli(capsys, "check", "-f", "json", "--static", "--python", interp,
              "--cwd", str(tmp_path), "--package", "deeppkg")
    doc = res.json()
    assert res.code == 0 and not doc["errors"], res.err  # not OD415 "loads no compiled library"
    rep = doc["reports"][0]
    assert rep["target"]["path"] == str(lib)
    links = rep["sections"]["import-chain"]["links"]
    assert any(link["resolved"] == [str(lib)] for link in links), links
    assert not [link for link in links if link.get("problem")], links


def test_large_chain_text_shows_loads_and_counts_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = _deep_package(tmp_path)
    extra = [f"mod{i}" for i in range(15)]
    for name in extra:
        (pkg / "python" / f"{name}.py").write_text("VALUE = 1\n")
    init = pkg / "__init__.py"
    init.write_text("".join(f"from deeppkg.python import {n}\n" for n in extra)
                    + init.read_text())
    res = cli(capsys, "check", "--static", "--cwd", str(tmp_path), "--package", "deeppkg")
    assert res.code == 0, res.out
    chain_lines = res.out[res.out.index("import chain:"):].splitlines()
    assert any("_x.so" in line for line in chain_lines), chain_lines
    assert not any("mod3.py" in line for line in chain_lines), chain_lines
    more = [line for line in chain_lines if "more imports of the package's own Python" in line]
    assert more and int(more[0].split("✓")[1].split()[0]) >= 15, chain_lines
    doc = cli(capsys, "check", "-f", "json", "--static", "--cwd", str(tmp_path),
              "--package", "deeppkg").json()
    links = doc["reports"][0]["sections"]["import-chain"]["links"]
    assert {f"{n}.py" for n in extra} <= {os.path.basename(r) for lk in links
                                          for r in lk["resolved"]}


@pytest.mark.parametrize("handler, swallowed", [
    ("    pass\n", True),
    ("    lib = ctypes.CDLL(os.path.join(here, '_x_fallback.so'))\n", False),
])
def test_fallback_load_in_handler_is_not_a_swallowed_error(tmp_path: Path, handler: str,
                                                           swallowed: bool) -> None:
    """fbgemm_gpu's loader: ``try: load_library(a) except Exception: load_library(b)``. When
    the fallback fails, its own error propagates (checked with the real import), so nothing is
    discarded; ``except Exception: pass`` does discard it."""
    import subprocess
    import sys

    pkg = tmp_path / "fbpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import ctypes, os\nhere = os.path.dirname(__file__)\n"
        "try:\n    lib = ctypes.CDLL(os.path.join(here, '_x.so'))\nexcept Exception:\n"
        + handler)
    (pkg / "_x.so").write_bytes(b"not an ELF file")  # the first load fails for real
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), pkg / "_x_fallback.so")
    run = subprocess.run([sys.executable, "-c", "import fbpkg"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr  # the import succeeds both ways
    (pkg / "_x_fallback.so").unlink()
    if not swallowed:  # without its file the fallback raises: the error is not discarded
        run = subprocess.run([sys.executable, "-c", "import fbpkg"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode != 0 and "_x_fallback.so" in run.stderr
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), pkg / "_x_fallback.so")
    report = chain(tmp_path, "fbpkg", probe=False)
    assert ("OD509" in codes(report)) is swallowed, [f.message for f in report.findings]


def test_script_in_subpackage_fix_names_the_full_module(tmp_path: Path) -> None:
    import subprocess
    import sys

    sub = tmp_path / "scpkg" / "tools"
    sub.mkdir(parents=True)
    (tmp_path / "scpkg" / "__init__.py").write_text("")
    (sub / "__init__.py").write_text("")
    (sub / "helper.py").write_text("VALUE = 1\n")
    (sub / "tool.py").write_text("from .helper import VALUE\n\nif __name__ == '__main__':\n"
                                 "    print(VALUE)\n")
    # What Python does: as a script the relative import fails; the fix's command runs.
    bad = subprocess.run([sys.executable, str(sub / "tool.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "relative import" in bad.stderr
    report = chain(tmp_path, "scpkg", probe=False)
    od507 = [f for f in report.findings if f.code == "OD507"]
    assert len(od507) == 1 and od507[0].fix == "run it as python -m scpkg.tools.tool"
    good = subprocess.run([sys.executable, "-m", "scpkg.tools.tool"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and good.stdout.strip() == "1", good.stderr


def test_a_packages_main_module_is_no_script(tmp_path: Path) -> None:
    """A package's ``__main__.py`` with a relative import and a ``__main__`` block (spconv's
    benchmark/__main__.py) is run by ``python -m pkg``, where the import works: no OD507. A
    sibling module of the same shape still gets it."""
    import subprocess
    import sys

    pkg = tmp_path / "mpkg" / "bench"
    pkg.mkdir(parents=True)
    (tmp_path / "mpkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("VALUE = 1\n")
    body = "from .helper import VALUE\n\nif __name__ == '__main__':\n    print(VALUE)\n"
    (pkg / "__main__.py").write_text(body)
    good = subprocess.run([sys.executable, "-m", "mpkg.bench"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and good.stdout.strip() == "1", good.stderr
    (pkg / "tool.py").write_text(body)
    report = chain(tmp_path, "mpkg", probe=False)
    assert [f.subject for f in report.findings if f.code == "OD507"] == ["mpkg/bench/tool.py"]


def test_probing_for_system_libraries_is_no_load_path(tmp_path: Path) -> None:
    """onnxruntime's shape: ``CDLL("vcruntime140.dll")`` under ``except OSError`` and
    ``CDLL(f"libcudart.so.{v}")`` in a helper — bare names dlopen looks up in the system, not
    files of the package: neither OD510 (no file in the cwd is meant) nor OD509. The package's
    own extension import, swallowed, still is OD509."""
    import subprocess
    import sys

    pkg = tmp_path / "probepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import ctypes\n"
        "try:\n    ctypes.CDLL('libno_such_runtime_xyz.so')\nexcept OSError:\n"
        "    print('runtime missing: optional')\n"
        "def cuda_version(v=None):\n"
        "    name = 'libcudart_xyz.so' + ('.' + v if v else '')\n"
        "    try:\n        return ctypes.CDLL(name)\n    except Exception:\n        return None\n"
        "cuda_version()\n"
        "import os\n"
        "_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_ext.so'))\n")
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), pkg / "_ext.so")
    run = subprocess.run([sys.executable, "-c", "import probepkg"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "runtime missing: optional" in run.stdout, run.stderr
    report = chain(tmp_path, "probepkg", probe=False, path=pkg / "_ext.so")
    assert not {"OD509", "OD510"} & set(codes(report)), [f.message for f in report.findings]
    sec = report.sections["import-chain"]
    assert any(lk["resolved"] == [str(pkg / "_ext.so")] for lk in sec["links"]), sec["links"]
    # The same package with its extension import swallowed: that one is reported.
    # (another directory: the chain of a package is analysed once per process)
    shutil.copytree(pkg, tmp_path / "b" / "probepkg")
    init = tmp_path / "b" / "probepkg" / "__init__.py"
    init.write_text(init.read_text().replace(
        "_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_ext.so'))\n",
        "try:\n    _lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_ext.so'))\n"
        "except OSError:\n    pass\n"))
    swallowed = chain(tmp_path / "b", "probepkg", probe=False,
                      path=tmp_path / "b" / "probepkg" / "_ext.so")
    assert codes(swallowed) == ["OD509"], [f.message for f in swallowed.findings]


def test_from_package_import_submodule_is_followed(tmp_path: Path) -> None:
    """regex's ``from regex import _regex``: a submodule of the package itself."""
    pkg = tmp_path / "rxpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from rxpkg import _core\nfrom rxpkg import VALUE2\n")
    (pkg / "_core.py").write_text("from rxpkg import _rx\n")
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), pkg / "_rx.so")
    report = chain(tmp_path, "rxpkg", probe=False, path=pkg / "_rx.so")
    links = report.sections["import-chain"]["links"]
    assert [lk["resolved"] for lk in links] == [[str(pkg / "_core.py")], [str(pkg / "_rx.so")]]
    # The library is reached and read as the extension it is imported as (no PyInit__rx in it).
    assert codes(report, "OD4") + codes(report) == ["OD416"]


def test_one_parse_per_module_shared_by_the_readers(tmp_path: Path) -> None:
    """The import chain, the registrations and the version guards read one tree per version
    of a file; a changed file is parsed again."""
    import time

    from opdoctor.facts.pyast import parse_file

    mod = tmp_path / "m.py"
    mod.write_text("import torch\nX = 1\n")
    first = parse_file(str(mod))
    assert first is not None and parse_file(str(mod), mod.read_bytes()) is first
    time.sleep(0.01)
    mod.write_text("import torch\nX = 22\n")
    second = parse_file(str(mod))
    assert second is not None and second is not first
    mod.write_text("def broken(:\n")
    assert parse_file(str(mod)) is None


def test_nested_optional_version_module_is_not_missing(tmp_path: Path) -> None:
    """torchrl 0.11.0's __init__: ``except Exception: try: from ._version import …  except
    Exception: try: from .version import … except Exception: __version__ = None`` — the
    generated version modules are optional (the import works without them)."""
    import subprocess
    import sys

    pkg = tmp_path / "verpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "try:\n    raise RuntimeError('no metadata')\nexcept Exception:\n"
        "    try:\n        from ._version import __version__\n    except Exception:\n"
        "        try:\n            from .version import __version__\n"
        "        except Exception:\n            __version__ = None\n")
    run = subprocess.run([sys.executable, "-c", "import verpkg; print(verpkg.__version__)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "None", run.stderr
    report = chain(tmp_path, "verpkg", probe=False)
    assert "OD510" not in codes(report), [f.message for f in report.findings]


def test_the_retired_od504_stands_for_od416(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """OD504 became OD416 (cause 4): a configuration or command line that names the old code
    still ignores or re-grades the finding, and `explain OD504` names the new one."""
    site = PYFIX / "pyinit"
    monkeypatch.setenv("PYTHONPATH", str(site))
    args = ["check", "-f", "json", "--static", str(site / "myext")]
    plain = cli(capsys, *args).json()["reports"][0]
    assert [f["code"] for f in plain["findings"]] == ["OD416"]
    assert plain["findings"][0]["cause"] == 4
    ignored = cli(capsys, *args, "--ignore", "OD504")
    assert ignored.code == 0 and ignored.json()["reports"][0]["findings"] == []
    graded = cli(capsys, *args, "--severity", "OD504=warning").json()["reports"][0]
    assert [f["severity"] for f in graded["findings"]] == ["warning"]
    page = cli(capsys, "explain", "OD504")
    assert "OD504 is retired; it is reported as OD416 now." in page.err
    assert page.out.startswith("OD416")


@pytest.mark.parametrize("name", ["lazypkg.npu.graph_ex", ".graph_ex"])
def test_import_module_of_a_dotted_name_resolves_in_its_subpackage(tmp_path: Path,
                                                                    name: str) -> None:
    """torch_npu 2.13.0's npu/__init__.py imports ``importlib.import_module(
    "torch_npu.npu.npugraph_ex")`` — torch_npu/npu/npugraph_ex/, a subpackage of a subpackage. It
    was looked up as torch_npu/npugraph_ex and reported missing (OD510, the verdict's headline).
    A relative name resolves from the importing file's package. Python itself imports both; a
    name that is really missing is still OD510."""
    import subprocess
    import sys

    for where, there in (("ok", True), ("missing", False)):
        pkg = tmp_path / where / "lazypkg"
        (pkg / "npu").mkdir(parents=True)
        (pkg / "__init__.py").write_text("from . import npu\nfrom . import _C\n")
        (pkg / "_C.py").write_text("")  # stands in for the extension: something to check
        (pkg / "npu" / "__init__.py").write_text(
            f"import importlib\ngraph_ex = importlib.import_module({name!r}, __name__)\n")
        (pkg / "npu" / ("graph_ex.py" if there else "elsewhere.py")).write_text("VALUE = 1\n")
        real = subprocess.run([sys.executable, "-B", "-c",
                               "import lazypkg; print(lazypkg.npu.graph_ex.VALUE)"],
                              cwd=pkg.parent, capture_output=True, text=True, timeout=60)
        if there:
            assert real.stdout.strip() == "1", real.stderr
            assert codes(chain(pkg.parent, "lazypkg", probe=False)) == []
        else:
            assert "No module named 'lazypkg.npu.graph_ex'" in real.stderr
            assert codes(chain(pkg.parent, "lazypkg", probe=False)) == ["OD510"]


def test_a_namespace_portion_with_libraries_below_it_hides_nothing(tmp_path: Path) -> None:
    """torchrec 1.9.2 checked from a working directory that holds a directory called torchrec
    (no __init__.py) with the site-packages below it: the regular package on PYTHONPATH wins
    wherever it is on sys.path, whatever lies below the portion. It was OD502 "the installed
    copy with asmjit.so is hidden", heading the verdict over the real undefined symbol."""
    import subprocess
    import sys

    cwd, site = tmp_path / "work", tmp_path / "site"
    (cwd / "nspkg" / "deep" / "lib").mkdir(parents=True)
    shutil.copy(PKG_DIR / "myop" / "libmyop.so", cwd / "nspkg" / "deep" / "lib" / "libx.so")
    (site / "nspkg").mkdir(parents=True)
    (site / "nspkg" / "__init__.py").write_text("from . import _C\n")
    (site / "nspkg" / "_C.py").write_text("")
    real = subprocess.run([sys.executable, "-c", "import nspkg; print(nspkg.__file__)"],
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == str(site / "nspkg" / "__init__.py"), real.stderr
    report = chain(cwd, "nspkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "nspkg")
    assert "OD502" not in codes(report), [f.message for f in report.findings]


def test_a_top_level_extension_module_is_the_target_of_its_package_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """autoawq-kernels 0.0.9 installs top-level extension modules (awq_v2_ext.cpython-311-….so,
    no package directory): `--package awq_v2_ext` checked the directory it was found in, so
    no static check read the library (its old C++ ABI, OD303, went unseen). The module file is
    the target now."""
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    so = site / "_C.cpython-311-x86_64-linux-gnu.so"
    shutil.copy(PYFIX / "scriptrel" / "myext" / so.name, so)
    real = subprocess.run([sys.executable, "-c", "import _C; print(_C.__file__)"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                          text=True, timeout=60)
    assert real.stdout.strip() == str(so), real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              "--package", "_C", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert rep["target"]["path"] == str(so), rep["target"]
    assert "dependencies" in rep["sections"]  # the library's own static checks ran


@pytest.mark.probe  # the ground truth imports the package, which imports torch
def test_a_package_that_computes_its_load_path_gets_its_op_library_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-addons 0.23.0 loads its op libraries with
    ``tf.load_op_library(get_path_to_datafile(…))``, a path no static evaluation computes: the
    package check looked at the directory alone and said "✓ version mismatch: no problem
    found" over libraries built for TensorFlow 2.13. Such a package's first library that links
    the framework is now its target: here one built against another torch (the real import
    fails on its undefined symbol), whose static check names it even with --static."""
    from tests.torchfork import run_python

    pkg = tmp_path / "site" / "cpkg"
    (pkg / "lib").mkdir(parents=True)
    shutil.copy(fixture("loader/other_torch.so"), pkg / "lib" / "libcops.so")
    (pkg / "lib" / "name.txt").write_text("libcops.so\n")
    (pkg / "__init__.py").write_text(  # the file name is read at run time, from name.txt
        "import os\nimport torch\n\nHERE = os.path.join(os.path.dirname(__file__), 'lib')\n\n\n"
        "def _find():\n    with open(os.path.join(HERE, 'name.txt')) as fh:\n"
        "        return os.path.join(HERE, fh.read().strip())\n\n\n"
        "torch.ops.load_library(_find())\n")
    # cpkg imports torch first: forked from the tests' torch zygote (tests/torchfork.py)
    real = run_python("import cpkg", cwd=tmp_path,
                      env={**os.environ, "PYTHONPATH": str(pkg.parent)}, timeout=300)
    assert real.returncode != 0 and "undefined symbol" in real.stderr, real.stderr[-1500:]
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={pkg.parent}",
              "--package", "cpkg", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert rep["target"]["path"] == str(pkg / "lib" / "libcops.so"), rep["target"]
    assert res.code == 1 and rep["diagnosis"]["cause"] == 3, rep["diagnosis"]


@pytest.mark.parametrize("linux_module", ["present", "missing"])
def test_a_branch_for_another_platform_imports_nothing_here(
        tmp_path: Path, linux_module: str) -> None:
    """psutil 7: `from ._common import LINUX, WINDOWS` (flags computed there from
    sys.platform and os.name), then `if LINUX: from . import _pslinux … elif WINDOWS: from
    ._psutil_windows import …`. The Windows branch never runs here; its modules, absent from a
    Linux wheel, were 19 OD510 errors on a package that works. A module missing from the
    branch this platform takes is still OD510 (Python itself fails on it)."""
    import subprocess
    import sys

    pkg = tmp_path / "platpkg"
    pkg.mkdir()
    (pkg / "_common.py").write_text("import os\nimport sys\n\nWINDOWS = os.name == 'nt'\n"
                                    "LINUX = sys.platform.startswith('linux')\nOSX = "
                                    "sys.platform.startswith('darwin')\nPOSIX = not WINDOWS\n")
    (pkg / "__init__.py").write_text(
        "from ._common import LINUX, OSX, WINDOWS\nfrom . import _C\n\n"
        "if LINUX:\n    from . import _linux\nelif WINDOWS:\n    from ._win_ext import X\n"
        "elif OSX:\n    from . import _osx\n")
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    if linux_module == "present":
        (pkg / "_linux.py").write_text("")
    real = subprocess.run([sys.executable, "-c", "import platpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    report = chain(tmp_path, "platpkg", probe=False)
    texts = [lk["text"] for lk in report.sections["import-chain"]["links"]]
    assert not any("_win_ext" in t or "_osx" in t for t in texts), texts
    if linux_module == "present":
        assert real.returncode == 0, real.stderr
        assert codes(report) == [], [f.message for f in report.findings]
    else:
        assert real.returncode != 0 and "cannot import name '_linux'" in real.stderr
        assert codes(report) == ["OD510"]


@pytest.mark.probe
@pytest.mark.parametrize("where", ["function", "module"])
def test_a_swallowed_import_inside_a_function_is_an_optional_path(
        tmp_path: Path, where: str) -> None:
    """numba 0.6x imports its TBB threading backend inside select_known_backend(),
    `try: from numba.np.ufunc import tbbpool except ImportError: pass`, and takes the next
    backend when it fails (libtbb.so.12 is absent here; numba works). Its package check was
    OD220 + OD512 errors, exit 1. An import in a function body does not run at import: its
    hidden failure is a note. The same swallowed import at module level still hides a real
    load failure: an error, as before."""
    import subprocess
    import sys

    pkg = tmp_path / "optpkg"
    pkg.mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    # An extension module whose dependency is not found at run time (linked against a
    # library in a directory no search path names).
    (tmp_path / "fast.c").write_text("extern int myop_dep_value(void);\n"
                                     "void *PyInit__fast(void) { myop_dep_value(); return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o",
                    str(pkg / "_fast.cpython-311-x86_64-linux-gnu.so"), str(tmp_path / "fast.c"),
                    f"-L{fixture('loader/depdir')}", "-lmyop_dep"], check=True, timeout=60)
    body = "try:\n    from . import _fast\nexcept ImportError:\n    _fast = None\n"
    if where == "function":
        body = "def backend():\n" + "".join(f"    {ln}\n" for ln in body.splitlines()) + \
            "    return _fast\n"
    (pkg / "__init__.py").write_text("from . import _C\n\n" + body)
    real = subprocess.run([sys.executable, "-c", "import optpkg, sys\n"
                           "b = optpkg.backend() if hasattr(optpkg, 'backend') else optpkg._fast\n"
                           "print(b)"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.returncode == 0 and real.stdout.strip() == "None", real.stderr  # it works
    hidden = subprocess.run([sys.executable, "-c", "import optpkg._fast"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert "libmyop_dep.so: cannot open shared object file" in hidden.stderr
    report = chain(tmp_path, "optpkg")
    errors = [f.code for f in report.findings if f.severity.name == "ERROR"]
    od512 = [f for f in report.findings if f.code == "OD512"]
    assert od512, [f.message for f in report.findings]
    if where == "function":
        assert errors == [] and od512[0].severity.name == "INFO", errors
        assert "inside backend()" in od512[0].message
    else:
        assert errors, [f.message for f in report.findings]


@pytest.mark.parametrize("handler, discarded", [
    ("    pass\n", True),
    ("    saved = e\n", True),  # kept in a variable: nothing is reported at import
    ("    raise_build_error(e)\n", False),
    ("    import warnings\n    warnings.warn(f'extension not loaded: {e}')\n", False),
])
def test_a_handler_that_reports_the_error_does_not_discard_it(
        tmp_path: Path, handler: str, discarded: bool) -> None:
    """scikit-learn 1.x: `try: from ._check_build import check_build except ImportError as e:
    raise_build_error(e)` — the helper raises with a long explanation (checked with the real
    import), and a warnings.warn(str(e)) shows it too: neither discards the error, so no OD509
    "discards the error" warning; `pass` or keeping it in a variable does."""
    import subprocess
    import sys

    pkg = tmp_path / "rpkg"
    pkg.mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    (pkg / "__init__.py").write_text(
        "def raise_build_error(e):\n    raise ImportError(f'rpkg is not built: {e}')\n\n\n"
        "try:\n    from . import _C\nexcept ImportError as e:\n" + handler)
    (pkg / "_C.cpython-311-x86_64-linux-gnu.so").rename(pkg / "_C.away")
    run = subprocess.run([sys.executable, "-W", "error", "-c", "import rpkg"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode == 0) is discarded, run.stderr  # reported: the import says so
    (pkg / "_C.away").rename(pkg / "_C.cpython-311-x86_64-linux-gnu.so")
    report = chain(tmp_path, "rpkg", probe=False)
    assert ("OD509" in codes(report)) is discarded, [f.message for f in report.findings]


def test_an_extension_module_beside_a_source_of_the_same_name_is_what_imports(
        tmp_path: Path) -> None:
    """PyAV 18 ships av/_core.py beside av/_core.abi3.so: the import system tries extension
    suffixes before .py, so the compiled module is imported. The chain followed the .py and
    reached none of the package's 49 compiled libraries (no binary read with --static, while
    the report said "✓ broken build: no problem found")."""
    import subprocess
    import sys

    pkg = tmp_path / "twin"
    pkg.mkdir()
    so = pkg / "_C.cpython-311-x86_64-linux-gnu.so"
    shutil.copy(PYFIX / "scriptrel" / "myext" / so.name, so)
    (pkg / "_C.py").write_text("# the pure-Python fallback\n")
    (pkg / "__init__.py").write_text("from . import _C\n")
    real = subprocess.run([sys.executable, "-c", "import twin; print(twin._C.__file__)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == str(so), real.stderr
    report = chain(tmp_path, "twin", probe=False)
    (link,) = [lk for lk in report.sections["import-chain"]["links"]
               if lk["text"] == "from . import _C"]
    assert link["resolved"] == [str(so)], link


def test_no_od505_for_a_lazily_imported_extension_or_a_plain_c_library(tmp_path: Path) -> None:
    """Two healthy layouts that were OD505 "never imports or loads":
    tfx-bsl 1.21 imports its extension's pybind submodules from other modules
    (`from tfx_bsl.cc.tfx_bsl_extension.arrow.table_util import …`) — a component of the dotted
    name, not its last, is the extension; soundfile's `_soundfile_data/` holds libsndfile, a
    plain C library (no PyInit_, no framework) that the top-level soundfile.py dlopens by
    path. A package that ships an extension and never imports it is still OD505 (the
    truth fixture of test_package_mode_names_the_libraries_it_did_not_reach)."""
    lazy = tmp_path / "a" / "lazyext"
    (lazy / "cc").mkdir(parents=True)
    (lazy / "__init__.py").write_text("")
    (lazy / "cc" / "__init__.py").write_text("")
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so",
                lazy / "cc" / "_C.cpython-311-x86_64-linux-gnu.so")
    (lazy / "table_util.py").write_text("from lazyext.cc._C.arrow import table\n")
    assert "OD505" not in codes(chain(tmp_path / "a", "lazyext", probe=False))
    data = tmp_path / "b" / "_sndfile_data"
    data.mkdir(parents=True)
    (data / "__init__.py").write_text("")
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), data / "libsndfile_x86_64.so")
    assert "OD505" not in codes(chain(tmp_path / "b", "_sndfile_data", probe=False))


@pytest.mark.parametrize("guard", [True, False])
def test_an_import_the_code_asks_for_first_is_a_branch_not_taken(tmp_path: Path,
                                                                   guard: bool) -> None:
    """jaxlib 0.10's _mlir_libs: `if process_initializer_module("_mlirRegisterEverything"):
    importlib.import_module("._mlirRegisterEverything", __name__)` — the helper returns False
    when the module is not there (ModuleNotFoundError caught). It was 16 OD510 errors on
    jaxlib's working extensions. Without the question, the same missing import is OD510."""
    import subprocess
    import sys

    pkg = tmp_path / "askpkg"
    pkg.mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    call = 'importlib.import_module("._extra", __name__)'
    (pkg / "__init__.py").write_text(
        "import importlib\nfrom . import _C\n\n\ndef have(name):\n    try:\n"
        "        importlib.import_module('.' + name, __name__)\n"
        "    except ModuleNotFoundError:\n        return False\n    return True\n\n\n"
        + (f'if have("_extra"):\n    {call}\n' if guard else f"{call}\n"))
    real = subprocess.run([sys.executable, "-c", "import askpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (real.returncode == 0) is guard, real.stderr
    report = chain(tmp_path, "askpkg", probe=False)
    assert ("OD510" in codes(report)) is not guard, [f.message for f in report.findings]


@pytest.mark.parametrize("head, fails", [
    ("from .helper import VALUE\n", True),
    ("if __package__ is None or __package__ == '':\n    from helper import VALUE\n"
     "else:\n    from .helper import VALUE\n", False),
    ("try:\n    from .helper import VALUE\nexcept ImportError:\n    from helper import VALUE\n",
     False),
])
def test_od507_only_for_a_relative_import_a_script_run_really_hits(
        tmp_path: Path, head: str, fails: bool) -> None:
    """OD507: a module with a __main__ block and a relative import fails when run as a script.
    scipy's datasets/_download_all.py asks `if __package__ is None or __package__ == ''` and
    imports absolutely then; pymupdf's ImageFeatureExtractorV2.py falls back in
    `except ImportError`: both run as scripts, and were OD507 (shown ×109 in a walk of
    scikit-learn's site). Python itself decides each case here."""
    import subprocess
    import sys

    pkg = tmp_path / "scr"
    pkg.mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    (pkg / "__init__.py").write_text("from . import _C\n")
    (pkg / "helper.py").write_text("VALUE = 3\n")
    (pkg / "tool.py").write_text(head + "\nif __name__ == '__main__':\n    print(VALUE)\n")
    run = subprocess.run([sys.executable, str(pkg / "tool.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode != 0) is fails, run.stderr
    report = chain(tmp_path, "scr", probe=False)
    assert ("OD507" in codes(report)) is fails, [f.message for f in report.findings]


def test_an_optional_module_whose_error_is_logged_is_still_optional(tmp_path: Path) -> None:
    """faiss-cpu 1.15's loader.py tries `from .swigfaiss_avx512 import *` and logs the error in
    `except ImportError as e: logger.info(f"… {e!r}")` before the next variant. Logging the
    error makes the handler report it (no OD509) — it must not make the variant, absent from
    this wheel, a required module (it was four OD510 errors, exit 1)."""
    import subprocess
    import sys

    pkg = tmp_path / "varpkg"
    pkg.mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so", pkg)
    (pkg / "__init__.py").write_text(
        "import logging\nlogger = logging.getLogger(__name__)\ntry:\n"
        "    from ._fast_variant import *\nexcept ImportError as e:\n"
        "    logger.info(f'no fast variant: {e!r}')\n    from . import _C\n")
    real = subprocess.run([sys.executable, "-c", "import varpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.returncode == 0, real.stderr
    assert codes(chain(tmp_path, "varpkg", probe=False)) == []


def _lazy(variant: str) -> tuple[Path, Path]:
    cwd = fixture(f"python/{variant}/lazyext/__init__.py").parent.parent
    return cwd, next((cwd / "lazyext").glob("_core.variant*.so"))


def _python(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.probe
def test_a_dependency_the_packages_finder_loads_is_no_false_alarm() -> None:
    """mpi4py's way: ``import pkg._core`` goes through the package's own finder, which loads
    the module's DT_NEEDED library from the package before the module is created. The file
    alone cannot load (no search path finds the library), the import works: no error."""
    cwd, so = _lazy("lazydep")
    alone = _python(cwd, f"import ctypes; ctypes.CDLL({str(so)!r})")
    assert "liblazy.so.1: cannot open shared object file" in alone.stderr
    assert _python(cwd, "import lazyext._core as m; print(m.answer())").stdout.strip() == "42"
    assert _python(cwd, "import lazyext, sys; print('lazyext._core' in sys.modules)"
                   ).stdout.strip() == "False"  # the package import alone does not load it
    report = chain(cwd, "lazyext", path=so)
    bad = [f.code for f in report.findings if f.severity is not Severity.INFO]
    assert bad == [] and not report.fails(Severity.WARNING)
    # The finder's CDLL of .libs/liblazy.so.1 is read statically: the module's process has
    # it (the static view no longer says "not found" for the probe to answer).
    assert "OD201" not in [f.code for f in report.findings]
    assert report.sections["dependencies"]["context"].endswith(
        "liblazy.so.1 (loaded by the package's import)")
    assert report.sections["probe"]["outcome"] == "loaded"


@pytest.mark.probe
def test_a_module_whose_dependency_is_absent_fails_through_its_own_import() -> None:
    """The same package without the library: ``import lazyext._core`` fails, and the report
    says so from that import (not "loaded", which only the package import would have said)."""
    cwd, so = _lazy("lazydep_nolib")
    failed = _python(cwd, "import lazyext._core")
    assert "liblazy.so.1: cannot open shared object file" in failed.stderr
    report = chain(cwd, "lazyext", path=so)
    got = {f.code: f for f in report.findings}
    assert got["OD201"].severity is Severity.ERROR
    assert got["OD511"].message.startswith("import lazyext._core raised ImportError: "
                                           "liblazy.so.1: cannot open shared object file")
    assert "OD220" in got and report.fails(Severity.ERROR)


@pytest.mark.probe
def test_a_missing_python_dependency_is_its_own_root_not_a_consequence(tmp_path: Path) -> None:
    """tensorflow-quantum's way: the package imports a dependency that is not installed (cirq)
    before it loads an op library that is broken on its own. The ModuleNotFoundError is no
    consequence of the library's fault (fixing the build would not install the module): it is
    shown as its own cause 5, not folded under the library's root."""
    pkg = tmp_path / "needsdep"
    pkg.mkdir()
    shutil.copy(fixture("truth/undef.so"), pkg / "undef.so")
    (pkg / "__init__.py").write_text(
        "import opdoctor_absent_dependency\nimport os\nimport torch\n"
        "torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'undef.so'))\n")
    failed = _python(tmp_path, "import needsdep")
    assert "ModuleNotFoundError: No module named 'opdoctor_absent_dependency'" in failed.stderr
    report = chain(tmp_path, "needsdep", path=pkg / "undef.so")
    od511 = next(f for f in report.findings if f.code == "OD511")
    assert "No module named 'opdoctor_absent_dependency'" in od511.message
    diag = report.diagnosis
    assert [r.code for r in diag.root_findings] == ["OD430"]  # own code left out of the link
    assert all(od511 not in folded for folded in diag.consequences.values())


def test_a_single_module_is_the_report_target(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """soundfile is one file, soundfile.py: what is said is about that module, not about the
    directory it was looked up from (which the header used to call the package's directory)."""
    (tmp_path / "lonemod.py").write_text("import os\n")
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", str(tmp_path),
              "--package", "lonemod")
    doc = res.json()
    assert doc["reports"][0]["target"]["path"] == str(tmp_path / "lonemod.py"), doc
    [note] = doc["reports"][0]["findings"]
    assert note["code"] == "OD415" and note["subject"] == str(tmp_path / "lonemod.py")
    assert note["message"].startswith("Python module lonemod has no compiled library")
    assert res.code == 0 and not doc["errors"]


@pytest.mark.probe
def test_a_swallowed_import_that_works_hides_nothing(tmp_path: Path) -> None:
    """wrapt's and pyarrow's way: ``try: from . import _C`` / ``except ImportError: pass`` —
    a pure-Python fallback — around an extension that imports fine. The handler could hide a
    loader error, but once the probe has retried the import after the package's and it
    worked, nothing is hidden: a note, not a warning. Statically the file is read instead
    (survey 13: pyarrow's optional filesystems, cffi's _cffi_backend, gevent, rapidfuzz had a
    warning headline with --static only): built for this interpreter, exporting PyInit__C,
    every library and symbol it needs found — a note too, which names the run that can tell."""
    pkg = tmp_path / "okswallow"
    pkg.mkdir()
    so = next((fixture("python/scriptrel/myext/tool.py").parent).glob("_C*.so"))
    shutil.copy(so, pkg / so.name)
    (pkg / "__init__.py").write_text("try:\n    from . import _C\nexcept ImportError:\n"
                                     "    _C = None\n")
    ran = _python(tmp_path, "import okswallow; print(okswallow._C.answer())")
    assert ran.stdout.strip() == "42", ran.stderr
    static = chain(tmp_path, "okswallow", probe=False)
    assert [(f.code, f.severity) for f in static.findings if f.code == "OD509"] == \
        [("OD509", Severity.INFO)]
    (note,) = [f.message for f in static.findings if f.code == "OD509"]
    assert f"statically {so.name} looks loadable" in note and "without --static" in note
    probed = chain(tmp_path, "okswallow")
    od509 = [f for f in probed.findings if f.code == "OD509"]
    assert [f.severity for f in od509] == [Severity.INFO]
    assert "it imports here (the probe retried it)" in od509[0].message
    assert not [f for f in probed.findings if f.severity is not Severity.INFO]


def test_a_dotted_package_is_found_as_python_finds_it(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``--package google.protobuf``: ``google`` is a namespace package whose portions lie in
    several sys.path entries; the sub-package is looked up in each portion, in order (it was
    OD501 "no package google.protobuf on sys.path", an error, although it imports)."""
    for entry, sub in (("e1", "pa"), ("e2", "pb")):
        (tmp_path / entry / "nsx" / sub).mkdir(parents=True)
        (tmp_path / entry / "nsx" / sub / "__init__.py").write_text("X = 1\n")
    env = f"PYTHONPATH={tmp_path / 'e1'}{os.pathsep}{tmp_path / 'e2'}"
    ran = subprocess.run([sys.executable, "-c", "import nsx.pb; print(nsx.pb.__file__)"],
                         env={**os.environ, "PYTHONPATH": env.split("=", 1)[1]},
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert ran.stdout.strip() == str(tmp_path / "e2" / "nsx" / "pb" / "__init__.py")
    res = cli(capsys, "check", "-f", "json", "--static", "--env", env, "--cwd", str(tmp_path),
              "--package", "nsx.pb")
    doc = res.json()
    assert not [f for r in doc["reports"] for f in r["findings"] if f["code"] == "OD501"]
    # found: pure Python, nothing compiled in it (a note on the portion Python imports)
    [note] = [f for r in doc["reports"] for f in r["findings"]]
    assert (note["code"], note["severity"]) == ("OD415", "info"), note
    assert note["subject"] == str(tmp_path / "e2" / "nsx" / "pb")



def test_a_namespace_of_sub_packages_is_meant(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``google`` holds only sub-packages (protobuf, api …) and no __init__.py, on purpose:
    no OD506. The fixture namespace/myop (a package that lost its __init__.py beside its
    libmyop.so) keeps it (test_namespace_package)."""
    (tmp_path / "nsy" / "sub").mkdir(parents=True)
    (tmp_path / "nsy" / "sub" / "__init__.py").write_text("")
    assert _python(tmp_path, "import nsy.sub").returncode == 0
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", str(tmp_path),
              "--package", "nsy")
    doc = res.json()
    assert not [f for r in doc["reports"] for f in r["findings"] if f["code"] == "OD506"]


@pytest.mark.parametrize("policy", ["", "default", "rust"])
def test_a_branch_the_environment_decides(tmp_path: Path, policy: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """zstandard's way: ``os.environ.get("PYTHON_ZSTANDARD_IMPORT_POLICY", "default")
    .strip()`` picks the backend it imports. The job's environment decides the branch: the
    default imports the backend that is there (clean; it was OD510 for the rust backend the
    branch never imports), the rust policy imports one that is not (OD510, as Python fails)."""
    pkg = tmp_path / "envpick"
    pkg.mkdir()
    so = next((fixture("python/scriptrel/myext/tool.py").parent).glob("_C*.so"))
    shutil.copy(so, pkg / so.name)
    (pkg / "backend_c.py").write_text("X = 1\n")
    (pkg / "__init__.py").write_text(
        "import os\nfrom . import _C\n"
        "_policy = os.environ.get('ENVPICK_POLICY', 'default').strip()\n"
        "if _policy == 'default':\n    from .backend_c import *\n"
        "elif _policy == 'rust':\n    from .backend_rust import *\n")
    env = {k: v for k, v in os.environ.items() if k != "ENVPICK_POLICY"}
    if policy:
        env["ENVPICK_POLICY"] = policy
    ran = subprocess.run([sys.executable, "-c", "import envpick"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", str(tmp_path),
              *(("--env", f"ENVPICK_POLICY={policy}") if policy else ()),
              "--package", "envpick")
    od510 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD510"]
    if policy == "rust":
        assert "No module named 'envpick.backend_rust'" in ran.stderr
        assert od510 and "backend_rust" in od510[0]["message"]
    else:
        assert ran.returncode == 0, ran.stderr
        assert not od510 and res.code == 0


@pytest.mark.probe
def test_op_libraries_no_import_reaches_are_each_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-io's way: ``import tensorflow_io`` loads none of its op libraries (a lazy
    loader loads each when an op is first used), so ``--package`` had only the package
    directory to check: "No problem found" over libraries that cannot load. Each library that
    links the framework is now checked as the package's; the probe line says the import
    worked but did not load it (it said "loaded")."""
    make_package(tmp_path, "lazyops", {"libbroken.so": fixture("truth/undef.so"),
                                       "libfine.so": fixture("truth/tinyop.so")},
                 "import os\nimport torch\n\n\ndef load(name):\n"
                 "    torch.ops.load_library(os.path.join(os.path.dirname(__file__), name))\n")
    assert _python(tmp_path, "import lazyops").returncode == 0
    failed = _python(tmp_path, "import lazyops; lazyops.load('libbroken.so')")
    assert "undefined symbol: _ZN6tinyop12helper_scaleEd" in failed.stderr
    res, doc = cli_text_and_json(capsys, tmp_path, "check", "--cwd", str(tmp_path), "--package",
                                 "lazyops")
    reps = {os.path.basename(r["target"]["path"]): r for r in doc["reports"]}
    assert sorted(reps) == ["libbroken.so", "libfine.so"]
    assert reps["libbroken.so"]["diagnosis"]["cause"] == 4
    assert "OD430" in reps["libbroken.so"]["diagnosis"]["root_findings"]
    probe = reps["libfine.so"]["sections"]["probe"]
    assert probe["imported"] == "lazyops" and probe["target_loaded"] is False
    assert "`import lazyops` worked; it did not load libbroken.so" in res.out


@pytest.mark.probe
def test_a_plugin_in_a_data_directory_is_the_packages(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """triton's way: triton/plugins/ (no __init__.py) holds libraries that NEED libtriton.so,
    which no search path finds; `import triton` loads triton/_C/libtriton.so first and glibc
    reuses it by name. The plugin is checked as the package's: what the import put in the
    process answers the static "not found" (it was OD201 + OD220, exit 1)."""
    pkg = tmp_path / "plugpkg"
    (pkg / "_C").mkdir(parents=True)
    (pkg / "plugins").mkdir()
    (tmp_path / "core.c").write_text("int core_answer(void) { return 42; }\n")
    (tmp_path / "plug.c").write_text("int core_answer(void);\n"
                                     "int plug_answer(void) { return core_answer(); }\n")
    core = pkg / "_C" / "libcore.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcore.so", "-o", str(core),
                    str(tmp_path / "core.c")], check=True)
    plug = pkg / "plugins" / "libplug.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plug), str(tmp_path / "plug.c"),
                    "-L", str(core.parent), "-lcore"], check=True)
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n_core = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_C', "
        "'libcore.so'), mode=ctypes.RTLD_GLOBAL)\n")
    alone = _python(tmp_path, f"import ctypes; ctypes.CDLL({str(plug)!r})")
    assert "libcore.so: cannot open shared object file" in alone.stderr
    ok = _python(tmp_path, f"import plugpkg, ctypes; print(ctypes.CDLL({str(plug)!r})"
                 ".plug_answer())")
    assert ok.stdout.strip() == "42", ok.stderr
    res = cli(capsys, "check", "-f", "json", str(plug))
    rep = res.json()["reports"][0]
    assert rep["sections"]["import-chain"]["package"] == "plugpkg"
    assert not [f for f in rep["findings"] if f["severity"] == "error"] and res.code == 0
    # The package's import loads libcore.so by path: the static view has it in the process
    # too (before, only the probe's real load answered the static "not found", as a note).
    assert not [f for f in rep["findings"] if f["code"] in ("OD201", "OD301")], rep["findings"]
    assert rep["sections"]["dependencies"]["context"].endswith(
        "libcore.so (loaded by the package's import)")


def test_a_load_guarded_by_an_existence_test_is_a_branch_not_taken(tmp_path: Path) -> None:
    """flashinfer 0.7.4: `if os.path.exists(f"{cuda_lib_path}/libcudart.so.12"): ctypes.CDLL(…)`
    with a system path that is absent here. Python imports the package (the branch is not
    taken); the same load without the test fails, and OD510 says so."""
    gone = tmp_path / "no_cuda" / "libcudart.so.12"
    _write(tmp_path, {
        "guarded/__init__.py": (
            "import ctypes, os\nfrom pathlib import Path\n"
            f"lib_dir = os.environ.get('GUARDED_LIB_DIR', {str(gone.parent)!r})\n"
            "if os.path.exists(f'{lib_dir}/libcudart.so.12'):\n"
            "    ctypes.CDLL(f'{lib_dir}/libcudart.so.12', mode=ctypes.RTLD_GLOBAL)\n"
            "if Path(lib_dir + '/libother.so').is_file():\n"
            "    ctypes.CDLL(lib_dir + '/libother.so')\n"),
        "bare/__init__.py": (
            "import ctypes, os\n"
            f"lib_dir = os.environ.get('GUARDED_LIB_DIR', {str(gone.parent)!r})\n"
            "ctypes.CDLL(f'{lib_dir}/libcudart.so.12', mode=ctypes.RTLD_GLOBAL)\n"),
    })
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("GUARDED_LIB_DIR", None)
    ok = subprocess.run([sys.executable, "-c", "import guarded"], env=env, capture_output=True)
    bad = subprocess.run([sys.executable, "-c", "import bare"], env=env, capture_output=True,
                         text=True)
    assert ok.returncode == 0 and bad.returncode != 0 and "libcudart.so.12" in bad.stderr
    assert "OD510" not in codes(chain(tmp_path, "guarded", probe=False))
    assert "OD510" in codes(chain(tmp_path, "bare", probe=False))


def test_a_namespace_the_wheel_ships_is_by_design(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """executorch 1.5.1 ships ``executorch/`` without ``__init__.py`` (its RECORD lists none)
    and with modules in it: a namespace package by design, its subpackages load the libraries.
    No OD506 then. The same layout whose RECORD lists an ``__init__.py`` the disk lacks lost
    it: OD506 (and OD508) stay."""
    site = tmp_path / "site-packages"
    for name, listed in (("nsd", False), ("nsl", True)):
        _write(site, {f"{name}/version.py": "V = 1\n", f"{name}/sub/__init__.py": "X = 2\n"})
        rows = [f"{name}/version.py,,", f"{name}/sub/__init__.py,,"]
        if listed:
            rows.append(f"{name}/__init__.py,,")
        _write(site, {f"{name}-1.0.dist-info/RECORD": "\n".join(
            [*rows, f"{name}-1.0.dist-info/RECORD,,"]) + "\n",
            f"{name}-1.0.dist-info/METADATA": f"Name: {name}\nVersion: 1.0\n"})
    assert _python(site, "import nsd.sub, nsd.version").returncode == 0
    found = {}
    for name in ("nsd", "nsl"):
        res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
                  "--package", name)
        found[name] = [f["code"] for r in res.json()["reports"] for f in r["findings"]]
    assert "OD506" not in found["nsd"], found
    assert "OD506" in found["nsl"] and "OD508" in found["nsl"], found


@pytest.mark.parametrize("fallback", [True, False])
def test_cpu_specific_build_tried_first_under_suppress(tmp_path: Path, fallback: bool) -> None:
    """rapidfuzz 3.14's shape: ``with contextlib.suppress(ImportError): from .fast_avx2
    import ratio`` (a build for one CPU, absent on other platforms), ``…_sse2`` the same,
    then ``from .fast import ratio``. ``suppress`` is ``try/except ImportError: pass``: an
    absent build is no OD510, and a present one whose names the next import binds again is a
    fallback (OD509 info), not a hidden error. Without the plain import after them, the
    present build's swallowed error is the OD509 warning it always was. The real import works
    in both shapes (the present build here cannot load: its ImportError is suppressed)."""
    import sys

    pkg = tmp_path / "rfpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import contextlib\n"
        "with contextlib.suppress(ImportError):\n    from rfpkg.fast_avx2 import ratio\n"
        "with contextlib.suppress(ImportError):\n    from rfpkg.fast_sse2 import ratio\n"
        + ("from rfpkg.fast import ratio\n" if fallback else "ratio = None\n"))
    (pkg / "fast.py").write_text("def ratio(a, b):\n    return 1.0\n")
    # a compiled module of that name (no PyInit_fast_avx2: its import raises ImportError)
    import _json  # a compiled module of the standard library

    shutil.copy(str(_json.__file__), pkg / ("fast_avx2" + Path(str(_json.__file__)).name[5:]))
    real = subprocess.run([sys.executable, "-c", "import rfpkg; print(rfpkg.ratio)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.returncode == 0, real.stderr
    report = chain(tmp_path, "rfpkg", probe=False)
    assert "OD510" not in codes(report), [f.message for f in report.findings]
    od509 = [f for f in report.findings if f.code == "OD509"]
    assert od509 and all("fast_avx2" in f.subject for f in od509)
    assert {f.severity for f in od509} == ({Severity.INFO} if fallback else {Severity.WARNING})
    if fallback:
        assert "imported from rfpkg.fast after it" in od509[0].message


def _c_extension(tmp_path: Path, directory: Path, module: str) -> Path:
    """A real Python extension module ``module`` built into ``directory`` (gcc and this
    Python's headers), with one function ``answer()`` returning 42."""
    import sysconfig

    src = tmp_path / f"{module}.c"
    src.write_text('#include <Python.h>\nstatic PyObject *answer(PyObject *s, PyObject *a) '
                   '{ return PyLong_FromLong(42); }\nstatic PyMethodDef M[] = {{"answer", '
                   'answer, METH_NOARGS, ""}, {0}};\nstatic struct PyModuleDef D = '
                   f'{{PyModuleDef_HEAD_INIT, "{module}", "", -1, M}};\n'
                   f"PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&D); }}\n")
    ext = directory / (module + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    "-o", str(ext), str(src)], check=True, timeout=60)
    return ext


@pytest.mark.probe
def test_a_module_probe_imports_the_extension_by_its_file_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """polars' `_polars_runtime_32/_polars_runtime.abi3.so` exports PyInit__expr_nodes,
    PyInit__ir_nodes and PyInit__polars_runtime; the probe of that library (its package never
    imports it) imported `_polars_runtime_32._expr_nodes` — the first PyInit_ — which is no
    module, and OD511 said the library fails to import (survey 19). Python imports a file by
    its name and calls PyInit_<name>: so does the probe."""
    import sysconfig

    site = tmp_path / "site"
    (site / "_rtpkg2").mkdir(parents=True)
    (site / "_rtpkg2" / "__init__.py").write_text("")
    src = tmp_path / "rt.c"
    src.write_text("#include <Python.h>\n"
                   "static struct PyModuleDef A = {PyModuleDef_HEAD_INIT, \"_aaa\", 0, -1, 0};\n"
                   "static struct PyModuleDef R = {PyModuleDef_HEAD_INIT, \"_runtime\", 0, -1, "
                   "0};\n"
                   "PyMODINIT_FUNC PyInit__aaa(void) { return PyModule_Create(&A); }\n"
                   "PyMODINIT_FUNC PyInit__runtime(void) { return PyModule_Create(&R); }\n")
    ext = site / "_rtpkg2" / "_runtime.abi3.so"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(ext), str(src)], check=True, timeout=60)
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import _rtpkg2._runtime as m; print(m)\n"
                           "import _rtpkg2._aaa"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert "module '_rtpkg2._runtime'" in real.stdout, real.stderr
    assert "No module named '_rtpkg2._aaa'" in real.stderr, real.stderr
    from opdoctor.facts import Facts
    facts = Facts(str(ext), CheckOptions(package="_rtpkg2", env=tuple(env.items()),
                                         cwd=str(tmp_path)))
    assert facts.registration.pyinit[0] == "PyInit__aaa", facts.registration.pyinit
    res = cli(capsys, "check", "-f", "json", "--env", f"PYTHONPATH={site}", "--cwd",
              str(tmp_path), str(ext))
    rep = res.json()["reports"][0]
    assert res.code == 0 and "OD511" not in [f["code"] for f in rep["findings"]], rep["findings"]
    assert rep["sections"]["probe"]["outcome"] == "loaded", rep["sections"]["probe"]


def test_the_package_named_twice_is_one_report(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`check --package lmdeploy site/lmdeploy` (the README's form) made two reports of one
    package — its library's and the directory's — and each probed the package's import
    (lmdeploy's 8-second import: 16 s, survey 19). The directory the option's import finds is
    the option's target: one report. Another copy of the package (a checkout elsewhere) is
    still its own report."""
    site, other = tmp_path / "site", tmp_path / "checkout"
    for where in (site, other):
        (where / "twopkg").mkdir(parents=True)
        (where / "twopkg" / "__init__.py").write_text("from ._ext import answer\n")
        _c_extension(tmp_path, where / "twopkg", "_ext")
    args = ["check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}", "--cwd",
            str(tmp_path), "--package", "twopkg"]
    alone = cli(capsys, *args)
    named = cli(capsys, *args, str(site / "twopkg"))
    assert alone.code == named.code == 0, named.out + named.err
    assert [r["target"]["path"] for r in named.json()["reports"]] == \
        [r["target"]["path"] for r in alone.json()["reports"]], named.json()["reports"]
    both = cli(capsys, *args, str(other / "twopkg"))
    assert len(both.json()["reports"]) == 2, both.json()["reports"]


def test_a_stub_directory_named_by_package_is_no_walk(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """mmh3 5.x installs `mmh3.cpython-311-….so` and, beside it, `mmh3/` with its type stubs
    and C sources (no __init__.py). `check --package mmh3 site/mmh3` (the README's form) walked
    that directory too: "no shared library in this directory or below it", exit 2 (survey 19).
    The package's own target checks the module Python imports; its stub directory is not
    walked."""
    site = tmp_path / "site"
    (site / "stubmod").mkdir(parents=True)
    (site / "stubmod" / "__init__.pyi").write_text("def answer() -> int: ...\n")
    (site / "stubmod" / "py.typed").write_text("")
    _c_extension(tmp_path, site, "stubmod")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import stubmod; print(stubmod.__file__)"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip().endswith(".so"), real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "stubmod", str(site / "stubmod"))
    assert res.code == 0 and res.json()["errors"] == [], res.err
    (rep,) = res.json()["reports"]
    assert rep["target"]["path"] == real.stdout.strip(), rep["target"]
    # the directory alone, without --package, is still a walk that finds nothing
    res = cli(capsys, "check", "--static", str(site / "stubmod"))
    assert res.code == 2 and "no shared library" in res.err, res.err


def test_extension_installed_beside_the_package(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """duckdb 2.0's layout: site-packages/duckdb/ is pure Python and its ``__init__.py`` does
    ``import _duckdb``, a compiled module installed beside it at the top level. ``--package``
    used to see no compiled library (OD415, exit 2) and, with that module truncated, no
    problem in cause 4. The import is followed to the module now: healthy, exit 0; truncated,
    OD406 (and no crash of the chain's own reading of it)."""
    site = tmp_path / "site"
    (site / "dkpkg").mkdir(parents=True)
    (site / "dkpkg" / "__init__.py").write_text("import _dkpkg\nfrom _dkpkg import answer\n")
    ext = _c_extension(tmp_path, site, "_dkpkg")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import dkpkg; print(dkpkg.answer())"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "42", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "dkpkg")
    assert res.code == 0, res.out + res.err
    rep = res.json()["reports"][0]
    assert rep["target"]["path"].endswith(ext.name)
    links = rep["sections"]["import-chain"]["links"]
    assert any(lk["target"] == "_dkpkg" and lk["resolved"] == [str(ext)] for lk in links)
    data = ext.read_bytes()
    ext.write_bytes(data[:4096])  # cut as a failed download leaves it
    real = subprocess.run([sys.executable, "-c", "import dkpkg"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.returncode != 0
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "dkpkg")
    assert res.code == 1 and "internal error" not in res.err, res.err
    assert "OD406" in [f["code"] for f in res.json()["reports"][0]["findings"]]


def test_a_single_module_distribution_is_followed_to_its_extension(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """brotli 1.2's layout: the distribution is one module, ``brotli.py``, whose first import
    is ``import _brotli``, a compiled module beside it. ``--package brotli`` checked the
    ``.py`` file alone: statically, "its compiled library was not analysed" and a damaged
    ``_brotli`` went unseen. The module's imports are read as a package's: the extension is
    the target; truncated (Python's import fails), OD406."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "dkmod.py").write_text("import _dkmod\nfrom _dkmod import answer\n")
    ext = _c_extension(tmp_path, site, "_dkmod")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import dkmod; print(dkmod.answer())"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "42", real.stderr
    args = ["check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}", "--cwd",
            str(tmp_path), "--package", "dkmod"]
    res = cli(capsys, *args)
    assert res.code == 0, res.out + res.err
    rep = res.json()["reports"][0]
    assert rep["target"]["path"] == str(ext), rep["target"]
    links = rep["sections"]["import-chain"]["links"]
    assert any(lk["target"] == "_dkmod" and lk["resolved"] == [str(ext)] for lk in links)
    ext.write_bytes(ext.read_bytes()[:4096])  # cut as a failed download leaves it
    real = subprocess.run([sys.executable, "-c", "import dkmod"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.returncode != 0
    res = cli(capsys, *args)
    assert res.code == 1 and "internal error" not in res.err, res.err
    assert "OD406" in [f["code"] for f in res.json()["reports"][0]["findings"]]


def test_extension_beside_the_package_built_for_another_python(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """k2 1.23.2's wheel puts ``_k2.cpython-39-x86_64-linux-gnu.so`` beside ``k2/`` and k2's
    ``__init__.py`` turns the failed ``from _k2 import …`` into "k2 was built using PyTorch
    1.12.1 … you are using PyTorch 2.13.0". The import fails because this Python looks for
    another file name: OD503 (built for another Python), found from the top-level module."""
    site = tmp_path / "site"
    (site / "kpkg").mkdir(parents=True)
    (site / "kpkg" / "__init__.py").write_text(
        "try:\n    from _kpkg import thing\nexcept ImportError as e:\n"
        "    raise ImportError('kpkg was built using PyTorch 1.12.1') from e\n"
        "from . import ops\n")
    (site / "kpkg" / "ops.py").write_text("import _kpkg\nfrom _kpkg import other\n")
    other = "_kpkg.cpython-39-x86_64-linux-gnu.so"
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), site / other)
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import kpkg"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "No module named '_kpkg'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "kpkg")
    rep = res.json()["reports"][0]
    od503 = [f for f in rep["findings"] if f["code"] == "OD503"]
    assert res.code == 1 and od503 and other in od503[0]["message"], rep["findings"]
    # one finding for the module, naming the three places that import it
    assert len(od503) == 1 and len(od503[0]["evidence"]) == 3, od503


@pytest.mark.parametrize(("name", "built"), [
    ("_pp.pypy311-pp73-x86_64-linux-gnu.so", "PyPy"),
    ("_pp.cpython-313t-x86_64-linux-gnu.so", "free-threaded CPython 3.13"),
])
def test_a_library_named_for_another_python_leads_with_that(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, built: str) -> None:
    """pillow's PyPy wheel checked as a wheel file (survey 20): each
    ``_imaging.pypy311-pp73-…so`` led with "undefined symbol: PyPyExc_TypeError … link the
    library that defines it". Its file name says it is PyPy's extension module, which CPython
    never imports: OD503 leads and the undefined PyPy C API is its consequence."""
    import ctypes

    (tmp_path / "pp.c").write_text("extern void *PyPyExc_TypeError;\n"
                                   "void *PyInit__pp(void) { return PyPyExc_TypeError; }\n")
    (tmp_path / "ppkg").mkdir()
    (tmp_path / "ppkg" / "__init__.py").write_text("")
    lib = tmp_path / "ppkg" / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "pp.c")],
                   check=True, timeout=60)
    with pytest.raises(OSError, match="undefined symbol: PyPyExc_TypeError"):
        ctypes.CDLL(str(lib))
    real = subprocess.run([sys.executable, "-c", "import ppkg._pp"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "No module named 'ppkg._pp'" in real.stderr, real.stderr  # never even tried
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    (rep,) = res.json()["reports"]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD503"], rep["diagnosis"]
    assert rep["diagnosis"]["summary"].startswith(
        f"Most likely cause: 5 — Python import chain: {name} is built for {built}: this "
        "interpreter never imports it"), rep["diagnosis"]["summary"]
    assert rep["diagnosis"]["consequences"] == {"OD503": ["OD301"]}


@pytest.mark.parametrize("tag", ["312", "313t"])
def test_another_pythons_build_the_package_imports_explains_its_undefined_symbols(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str) -> None:
    """orjson's cp312 wheel unpacked under CPython 3.11: OD503 ("only
    orjson.cpython-312-…so") led, and the file's undefined CPython 3.12 API (PyType_GetDict)
    stood beside it as a cause-3 root with a "link the library" fix (survey 20). The build
    for another Python explains its own undefined symbols. regex's cp313t wheel (free-threaded
    CPython 3.13) was "built for another platform" (OD418, cause 4) with the same cause-3
    root beside it: another Python, the same verdict."""
    import ctypes

    pkg = tmp_path / "o12"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .o12 import *\n")
    (tmp_path / "o.c").write_text("extern void *PyType_GetDict_312(void *);\n"
                                  "void *PyInit_o12(void) { return PyType_GetDict_312(0); }\n")
    lib = pkg / f"o12.cpython-{tag}-x86_64-linux-gnu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "o.c")],
                   check=True, timeout=60)
    with pytest.raises(OSError, match="undefined symbol: PyType_GetDict_312"):
        ctypes.CDLL(str(lib))
    real = subprocess.run([sys.executable, "-c", "import o12"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "No module named 'o12.o12'" in real.stderr, real.stderr  # never even tried
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", str(tmp_path), str(lib))
    (rep,) = res.json()["reports"]
    assert rep["diagnosis"]["root_findings"] == ["OD503"], rep["diagnosis"]
    assert rep["diagnosis"]["consequences"].get("OD503", []).count("OD301") == 1, \
        rep["diagnosis"]


def test_a_library_loaded_by_path_is_no_module_whatever_its_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchao 0.18's `_C_mxfp8.cpython-310-x86_64-linux-gnu.so` is a torch op library that
    torchao loads by path (torch.ops.load_library), whatever the tag in its name: no
    PyInit_, no Python module. Read as another Python's module it got a false OD503 (survey
    20's re-run). A file that exports no PyInit_<name> is not judged by its name."""
    import ctypes

    (tmp_path / "ppkg").mkdir()
    (tmp_path / "ppkg" / "__init__.py").write_text("")
    (tmp_path / "o.c").write_text("int op_entry(void) { return 1; }\n")
    lib = tmp_path / "ppkg" / "_C_x.cpython-310-x86_64-linux-gnu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "o.c")],
                   check=True, timeout=60)
    assert ctypes.CDLL(str(lib)).op_entry() == 1  # loads by path under CPython 3.11
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    assert "OD503" not in [f["code"] for f in res.json()["reports"][0]["findings"]]


@pytest.mark.parametrize("tag", ["py38-none-any", "cp38-cp38-manylinux_2_17_x86_64"])
def test_a_mis_tagged_wheel_gets_no_reinstall_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str) -> None:
    """kaldifeat 1.4's only wheel is tagged ``py38-none-any`` and holds
    ``_kaldifeat.cpython-38-x86_64-linux-gnu.so`` (survey 19): pip installs it on any Python,
    and OD503's fix — reinstall with this interpreter's pip — brings the same file. A wheel
    whose tag fits this interpreter is named as mis-tagged, with fixes that can work; a
    ``cp38`` wheel (installed with ``--python-version``) keeps the reinstall fix."""
    import sysconfig

    site = tmp_path / "site"
    _write(site, {"mtpkg/__init__.py": "from ._mt import answer\n",
                  "mtpkg-1.4.dist-info/METADATA": "Name: mtpkg\nVersion: 1.4\n",
                  "mtpkg-1.4.dist-info/WHEEL": f"Wheel-Version: 1.0\nTag: {tag}\n",
                  "mtpkg-1.4.dist-info/RECORD": "mtpkg/__init__.py,,\n"})
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"),
                site / "mtpkg" / "_mt.cpython-38-x86_64-linux-gnu.so")
    assert sysconfig.get_config_var("EXT_SUFFIX") == ".cpython-311-x86_64-linux-gnu.so"
    real = subprocess.run([sys.executable, "-c", "import mtpkg"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                          text=True, timeout=60)
    assert "No module named 'mtpkg._mt'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), "--package", "mtpkg")
    (od503,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD503"]
    if tag.startswith("py38"):
        assert "the wheel is mis-tagged py38-none-any" in od503["message"], od503
        assert od503["fix"].startswith("No reinstall helps: mtpkg 1.4's wheel claims to fit "
                                       "this Python (py38-none-any)"), od503["fix"]
    else:
        assert "mis-tagged" not in od503["message"], od503
        # (into the PYTHONPATH directory it is in: survey 23's V3)
        assert od503["fix"].startswith("pip install --force-reinstall --no-deps --upgrade "
                                       f"--target {site} 'mtpkg==1.4'"), od503["fix"]


@pytest.mark.parametrize("required", [True, False])
def test_runtime_package_imported_by_the_distribution_that_requires_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], required: bool) -> None:
    """polars 2.1's layout: the polars-runtime-32 distribution ships ``_polars_runtime_32/``
    whose ``__init__.py`` never imports its extension; polars (which requires that
    distribution) imports ``_polars_runtime_32._polars_runtime`` itself. Checking the
    runtime's library said OD505 "never imports or loads" (exit 1). When an installed
    distribution that requires this one imports the package, OD505 is a note naming that
    import."""
    site = tmp_path / "site"
    (site / "_rtpkg").mkdir(parents=True)
    (site / "_rtpkg" / "__init__.py").write_text("FLAGS = ''\n")
    ext = _c_extension(tmp_path, site / "_rtpkg", "_core")
    for dist, top, meta in (("rtpkg-1.0", "_rtpkg", ""),
                            ("mainpkg-1.0", "mainpkg",
                             "Requires-Dist: rtpkg==1.0\n" if required else "")):
        info = site / f"{dist}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist[:-4]}\n"
                                       f"Version: 1.0\n{meta}")
        (info / "top_level.txt").write_text(top + "\n")
        rows = [p.relative_to(site) for p in (site / top).rglob("*") if p.is_file()] \
            if (site / top).is_dir() else []
        (info / "RECORD").write_text("".join(f"{r},,\n" for r in rows))
    (site / "mainpkg").mkdir()
    (site / "mainpkg" / "__init__.py").write_text("import _rtpkg._core as core\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import mainpkg, sys\n"
                           "print('_rtpkg._core' in sys.modules)"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "True", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), str(ext))
    od505 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD505"]
    assert od505, res.json()["reports"][0]["findings"]
    if required:
        assert od505[0]["severity"] == "info" and "mainpkg/__init__.py:1" in od505[0]["message"]
        assert res.code == 0
    else:
        # Without it, the module is still a Python extension of its own name that links no
        # framework: imported by name by whoever uses it (jax-cuda12-plugin's _hybrid, which
        # jaxlib imports; survey 19) — a note naming no importer. A library that links a
        # framework and is never loaded stays an error (test_truth's nopyimport package).
        assert od505[0]["severity"] == "info", od505
        assert "imports none of its extension modules _core" in od505[0]["message"], od505
        assert "mainpkg" not in od505[0]["message"] and res.code == 0


@pytest.mark.probe
def test_swallowed_error_of_a_package_whose_requirement_is_not_installed(
        tmp_path: Path) -> None:
    """polars 2.1 without polars-runtime-32 (a --no-deps install): ``polars._plr`` raises its
    own "could not find Polars' Rust module" and polars swallows it (OD512). The fix was "stop
    swallowing it"; the distribution's Requires-Dist names a distribution that no sys.path
    directory has: installing it is the fix."""
    site = tmp_path / "site"
    (site / "plpkg").mkdir(parents=True)
    (site / "plpkg" / "__init__.py").write_text(
        "try:\n    from plpkg import _plr\nexcept ImportError:\n    _plr = None\n")
    (site / "plpkg" / "_plr.py").write_text(
        "try:\n    import _plrt_runtime\nexcept ImportError:\n"
        "    raise ImportError(\"could not find the package's Rust module\") from None\n")
    info = site / "plpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plpkg\nVersion: 1.0\n"
                                   "Requires-Dist: plrt-runtime==1.0\n"
                                   "Requires-Dist: extra-thing; extra == 'x'\n")
    (info / "RECORD").write_text("plpkg/__init__.py,,\nplpkg/_plr.py,,\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import plpkg._plr"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "could not find the package's Rust module" in real.stderr, real.stderr
    report = chain(tmp_path, "plpkg", env={"PYTHONPATH": str(site)}, path=site / "plpkg")
    od512 = [f for f in report.findings if f.code == "OD512"]
    assert od512 and "requires plrt-runtime, which is not installed" in od512[0].message
    assert od512[0].fix is not None and od512[0].fix.startswith("pip install plrt-runtime ")


def test_package_inside_a_namespace_package(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """optimum-quanto 0.2.7 installs ``optimum/quanto/`` where ``optimum/`` has no
    ``__init__.py`` (a namespace package, as ``nvidia/`` of the nvidia-* wheels). A library
    checked under it was taken to belong to a top-level package ``quanto`` imported from
    ``optimum/`` ("import quanto raised …"): Python imports ``optimum.quanto`` from the
    directory with the distributions' metadata, and so does the check now."""
    site = tmp_path / "site"
    (site / "nsroot" / "sub").mkdir(parents=True)
    (site / "nsroot" / "sub" / "__init__.py").write_text("from . import _ext\n")
    ext = _c_extension(tmp_path, site / "nsroot" / "sub", "_ext")
    info = site / "nsroot_sub-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nsroot-sub\nVersion: 1.0\n")
    (info / "RECORD").write_text("nsroot/sub/__init__.py,,\n" f"nsroot/sub/{ext.name},,\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import nsroot.sub as s; print(s._ext.answer())"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "42", real.stderr
    from opdoctor.facts.pkgdir import package_of
    assert package_of(str(ext)) == ("nsroot.sub", str(site))
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), str(ext))
    rep = res.json()["reports"][0]
    assert res.code == 0, rep["findings"]
    chain_sec = rep["sections"]["import-chain"]
    assert chain_sec["package"] == "nsroot.sub" and chain_sec["winner"] == str(site / "nsroot"
                                                                                / "sub")


@pytest.mark.parametrize("primary_present", [True, False])
def test_an_import_in_the_handler_of_a_try_that_resolves_is_a_fallback(
        tmp_path: Path, primary_present: bool) -> None:
    """pyzstd 0.17's shape: ``try: from ._c import (…) except ImportError: try: from ._cffi
    import (…) except ImportError: raise ImportError(…)`` — the CFFI build is not in the wheel,
    and the import works through ``_c``: no OD510 for ``_cffi``. Without ``_c`` the import
    fails (the real one says so), and the missing modules are the findings they were."""
    import sys

    pkg = tmp_path / "zpk"
    (pkg / "_c").mkdir(parents=True)
    (pkg / "_c" / "__init__.py").write_text("VALUE = 1\n")
    if not primary_present:
        shutil.rmtree(pkg / "_c")
    (pkg / "__init__.py").write_text(
        "try:\n    from ._c import (\n        VALUE,\n    )\nexcept ImportError:\n"
        "    try:\n        from ._cffi import (\n            VALUE,\n        )\n"
        "    except ImportError:\n        raise ImportError(\"zpk: can't import its build\")\n")
    real = subprocess.run([sys.executable, "-c", "import zpk; print(zpk.VALUE)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (real.returncode == 0) is primary_present, real.stderr
    report = chain(tmp_path, "zpk", probe=False)
    od510 = sorted(f.subject for f in report.findings if f.code == "OD510")
    assert od510 == ([] if primary_present else ["zpk._c", "zpk._cffi"]), od510


@pytest.mark.probe
def test_a_package_whose_guard_demands_another_import_first_is_imported_after_it(
        tmp_path: Path) -> None:
    """psycopg-binary 3.2's ``__init__.py``: ``if "psycopg" not in sys.modules: raise
    ImportError("the psycopg package should be imported before psycopg_binary")`` — a bare
    ``import psycopg_binary`` fails by design, ``import psycopg`` imports it and works. The
    probe imports what the guard names first (it reported the guard's ImportError as OD511,
    exit 1, on a working install); without that module the failure is its absence."""
    import sys

    site = tmp_path / "site"
    (site / "gpkg").mkdir(parents=True)
    (site / "gparent").mkdir()
    shutil.copy(PYFIX / "scriptrel" / "myext" / "_C.cpython-311-x86_64-linux-gnu.so",
                site / "gpkg")
    (site / "gpkg" / "__init__.py").write_text(
        "import sys\nif 'gparent' not in sys.modules:\n"
        "    raise ImportError('the gparent package should be imported before gpkg')\n")
    (site / "gparent" / "__init__.py").write_text("import gpkg\nfrom gpkg import _C\n")

    def real(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env={"PYTHONPATH": str(site)})

    assert "should be imported before gpkg" in real("import gpkg").stderr
    assert real("import gparent, sys; print('gpkg._C' in sys.modules)").stdout.strip() == "True"
    report = chain(tmp_path, "gpkg", env={"PYTHONPATH": str(site)}, path=site / "gpkg")
    assert report.sections["import-chain"]["imported_first"] == ["gparent"]
    assert report.sections["probe"]["imported"] == "gparent, gpkg"
    assert "OD511" not in codes(report), [f.message for f in report.findings]
    shutil.rmtree(site / "gparent")
    assert "No module named 'gparent'" in real("import gparent").stderr
    report = chain(tmp_path, "gpkg", env={"PYTHONPATH": str(site)}, path=site / "gpkg")
    od511 = [f.message for f in report.findings if f.code == "OD511"]
    assert od511 and "No module named 'gparent'" in od511[0], od511


def _lazy_user(lib_dir: Path, ext: Path, *flags: str) -> None:
    """liblazy.so.1 (fixtures/python/lazy.c) built into ``lib_dir``, and the Python extension
    ``ext`` (ext.c with -DNEEDS_LAZY: ``answer()`` returns its ``lazy_helper()``) linked to it
    with no search path of its own to find it (``flags``: more link flags)."""
    import sysconfig

    fx = Path(__file__).parent / "fixtures" / "python"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wl,-soname,liblazy.so.1",
                    str(fx / "lazy.c"), "-o", str(lib_dir / "liblazy.so.1")],
                   check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-isystem",
                    sysconfig.get_paths()["include"], "-DNEEDS_LAZY", str(fx / "ext.c"),
                    "-o", str(ext), "-Wl,--no-as-needed", "-L", str(lib_dir),
                    "-l:liblazy.so.1", *flags], check=True, timeout=60)


def test_a_library_the_package_loads_by_path_first_is_in_the_process(tmp_path: Path) -> None:
    """torchtext 0.18: ``_extension.py`` loads ``lib/libtorchtext.so`` by path, then imports
    ``_torchtext.so``, which NEEDs ``libtorchtext.so`` with no RUNPATH: glibc finds it by its
    SONAME, already in the process. Checked on its own, the module's OD201 "libtorchtext.so
    is not found" (fix: patchelf) was the headline; in the package's process it is found."""
    import sys
    import sysconfig

    pkg = tmp_path / "ldpkg"
    (pkg / "lib").mkdir(parents=True)
    ext = pkg / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    _lazy_user(pkg / "lib", ext)
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'liblazy.so.1'))\n"
        "from . import _C\n")
    real = subprocess.run([sys.executable, "-c", "import ldpkg; print(ldpkg._C.answer())"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "42", real.stderr
    alone = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(ext)!r})"],
                           capture_output=True, text=True, timeout=60)
    assert "liblazy.so.1: cannot open shared object file" in alone.stderr
    report = chain(tmp_path, "ldpkg", probe=False, path=ext)
    assert "OD201" not in [f.code for f in report.findings], [f.message for f in report.findings]
    assert report.sections["dependencies"]["context"].endswith("liblazy.so.1 (loaded by the "
                                                       "package's import)")


@pytest.mark.parametrize("test", ["TYPE_CHECKING", "typing.TYPE_CHECKING"])
def test_an_import_for_the_type_checker_never_runs(tmp_path: Path, test: str) -> None:
    """nvidia-cudnn-frontend 1.32: ``if TYPE_CHECKING: from ..pygraph import pygraph`` names a
    class, not a module; the import never runs (TYPE_CHECKING is False at run time), and the
    package imports: no OD510 (it was exit 1 on a working install). The same import outside
    the condition fails, and is OD510."""
    import sys

    pkg = tmp_path / "tcpkg"
    pkg.mkdir()
    guard = f"import typing\nfrom typing import TYPE_CHECKING\nif {test}:\n    "
    (pkg / "__init__.py").write_text(guard + "from .pygraph import pygraph\nVALUE = 1\n")
    real = subprocess.run([sys.executable, "-c", "import tcpkg; print(tcpkg.VALUE)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "1", real.stderr
    assert "OD510" not in codes(chain(tmp_path, "tcpkg", probe=False))
    bad = tmp_path / "tcbad"
    bad.mkdir()
    (bad / "__init__.py").write_text("from .pygraph import pygraph\n")
    assert "OD510" in codes(chain(tmp_path, "tcbad", probe=False))


def test_a_library_of_a_package_imported_first_is_in_the_process(tmp_path: Path) -> None:
    """paddle2onnx 2.1: its extension NEEDs libpaddle.so, RUNPATH
    ``/tmp/build-env-…/site-packages/paddle/base`` (its build environment), and its
    ``__init__.py`` runs ``import paddle`` first, which loads paddle/base/libpaddle.so from
    this install. ``--static`` said "libpaddle.so is not found" (patchelf fix, exit 1); the
    import works. Without paddle the fix is to install it, not an RPATH edit."""
    import sys
    import sysconfig

    dep = tmp_path / "deps" / "depkg"
    (dep / "base").mkdir(parents=True)
    (dep / "__init__.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'base', 'liblazy.so.1'))\n")
    pkg = tmp_path / "site" / "usepkg"
    pkg.mkdir(parents=True)
    ext = pkg / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    _lazy_user(dep / "base", ext, "-Wl,--enable-new-dtags,-rpath,"
               "/tmp/build-env-x/lib/python3.11/site-packages/depkg/base")
    (pkg / "__init__.py").write_text(
        "try:\n    import depkg\nexcept ImportError:\n"
        "    raise ImportError('Failed to import depkg. Please install it.')\n"
        "from . import _C\n")
    both = f"{pkg.parent}:{dep.parent}"
    real = subprocess.run([sys.executable, "-c", "import usepkg; print(usepkg._C.answer())"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": both})
    assert real.stdout.strip() == "42", real.stderr
    report = chain(tmp_path, "usepkg", probe=False, env={"PYTHONPATH": both}, path=ext)
    assert "OD201" not in codes(report, "OD2"), [f.message for f in report.findings]
    shutil.rmtree(dep)
    report = chain(tmp_path, "usepkg", probe=False, env={"PYTHONPATH": str(pkg.parent)},
                   path=ext)
    od201 = next(f for f in report.findings if f.code == "OD201")
    assert "provides `import depkg`" in (od201.fix or ""), od201.fix


def test_a_dotted_namespace_the_wheel_ships_is_by_design(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """protobuf 7.36: ``google/_upb/`` holds ``_message.abi3.so`` and no ``__init__.py``, as
    protobuf's RECORD lists it; ``--package google._upb`` said OD506 "add an __init__.py"
    (its RECORD was looked up as ``google._upb/``, and the site directory one level too
    deep). Read under the package's path, the RECORD shows the namespace is by design; a
    RECORD that lists the lost ``__init__.py`` is still OD506 and OD508."""
    site = tmp_path / "site-packages"
    for top, listed in (("gtop", False), ("gbad", True)):
        _write(site, {f"{top}/_ns/mod.py": "V = 1\n"})
        rows = [f"{top}/_ns/mod.py,,"] + ([f"{top}/_ns/__init__.py,,"] if listed else [])
        _write(site, {f"{top}like-1.0.dist-info/RECORD": "\n".join(
            [*rows, f"{top}like-1.0.dist-info/RECORD,,"]) + "\n",
            f"{top}like-1.0.dist-info/METADATA": f"Name: {top}like\nVersion: 1.0\n"})
    assert _python(site, "import gtop._ns.mod; print(gtop._ns.mod.V)").stdout.strip() == "1"
    found = {}
    for top in ("gtop", "gbad"):
        res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
                  "--package", f"{top}._ns")
        found[top] = [f["code"] for r in res.json()["reports"] for f in r["findings"]]
    assert "OD506" not in found["gtop"], found
    assert "OD506" in found["gbad"] and "OD508" in found["gbad"], found


@pytest.mark.probe
@pytest.mark.parametrize(("module", "reqs", "install"), [
    ("needed_mod", "needed-mod>=1.0", "needed-mod"),
    ("PILlike", "pillowlike\nRequires-Dist: otherdist", "pillowlike otherdist"),
    # cut-cross-entropy 25.1.1: `triton; platform_system == "Linux"` applies on this machine
    ("needed_mod", 'needed-mod ; platform_system == "Linux" and os_name == "posix"',
     "needed-mod"),
    # one for another platform, or an extra's, does not: no requirement to name
    ("needed_mod", 'needed-mod ; sys_platform == "win32"\nRequires-Dist: other ; extra == "x"',
     ""),
    # nvidia-modelopt 0.33.1: 'torch.onnx._globals', a submodule of an installed package,
    # which no uninstalled requirement brings (the fix said "pip install ninja torchvision")
    ("json.not_a_module_xyz", "needed-mod", ""),
])
def test_a_missing_required_module_names_the_distribution_to_install(
        tmp_path: Path, module: str, reqs: str, install: str) -> None:
    """xgrammar 0.2.9 without transformers: ``No module named 'transformers'`` and its METADATA
    has ``Requires-Dist: transformers``; OD511's fix said "Read the exception". It names the
    requirement to install — the one named like the module, or every uninstalled one when
    none is (PIL is pillow's)."""
    import sys

    site = tmp_path / "site"
    _write(site, {"reqpkg/__init__.py": f"import {module}\n",
                  "reqpkg-1.0.dist-info/METADATA": f"Name: reqpkg\nVersion: 1.0\n"
                                                   f"Requires-Dist: {reqs}\n",
                  "reqpkg-1.0.dist-info/RECORD": "reqpkg/__init__.py,,\n"})
    real = subprocess.run([sys.executable, "-c", "import reqpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(site)})
    assert f"No module named '{module}'" in real.stderr
    report = chain(tmp_path, "reqpkg", env={"PYTHONPATH": str(site)}, path=site / "reqpkg")
    od511 = next(f for f in report.findings if f.code == "OD511")
    if not install:
        assert "pip install" not in (od511.fix or ""), od511.fix
        return
    assert od511.fix == f"pip install {install} (reqpkg-1.0 requires it; a --no-deps or " \
        "partial install left it out)", od511.fix


@pytest.mark.probe
def test_a_module_only_an_extra_requires_names_the_extra(tmp_path: Path) -> None:
    """greenlet 3.5's test extension: its ``tests/__init__`` imports objgraph, which greenlet
    requires only under ``extra == "test"``; OD511's fix was the generic "not installed or
    shadowed" one. It names the extra: ``pip install 'greenlet[test]'``."""
    import sys

    site = tmp_path / "site"
    _write(site, {"xtpkg/__init__.py": "", "xtpkg/tests/__init__.py": "import needed_mod\n",
                  "xtpkg-1.0.dist-info/METADATA": "Name: xtpkg\nVersion: 1.0\n"
                                                  "Requires-Dist: needed-mod ; extra == 'test'\n"
                                                  "Requires-Dist: other ; extra == 'docs'\n",
                  "xtpkg-1.0.dist-info/RECORD": "xtpkg/__init__.py,,\n"
                                                "xtpkg/tests/__init__.py,,\n"})
    real = subprocess.run([sys.executable, "-c", "import xtpkg.tests"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(site)})
    assert "No module named 'needed_mod'" in real.stderr
    report = chain(tmp_path, "xtpkg.tests", env={"PYTHONPATH": str(site)},
                   path=site / "xtpkg" / "tests")
    od511 = next(f for f in report.findings if f.code == "OD511")
    assert (od511.fix or "").startswith("pip install 'xtpkg[test]' (needed_mod is a "
                                        "requirement of xtpkg's optional 'test' extra"), od511.fix


@pytest.mark.probe
@pytest.mark.parametrize("compiled", [True, False])
def test_a_name_this_build_of_the_compiled_module_lacks_is_an_optional_part(
        tmp_path: Path, compiled: bool) -> None:
    """MindSpore 2.10 on a CPU machine: hal/device.py tries ``from ._gpu import _HalGPU``
    under ``except ImportError: pass``, and _gpu.py imports ``gpu_get_device_count`` from
    ``_c_expression``, which a build has only with its GPU plugin. The probe's retry surfaced
    it as OD512, an error: a healthy install exited 1 (survey 20). A name the package's own
    compiled module (loaded: Python names its file) lacks is an optional part of another
    build — a note. A Python module missing a name stays a hidden failure."""
    site = tmp_path / "site"
    _write(site, {"mspkg/__init__.py": "from . import hal\n",
                  "mspkg/hal.py": "try:\n    from ._gpu import HalGPU\n    GPU_AVAILABLE = "
                                  "True\nexcept ImportError:\n    pass\n",
                  "mspkg/_gpu.py": "from mspkg._core import gpu_count\nHalGPU = gpu_count\n"})
    if compiled:
        _c_extension(tmp_path, site / "mspkg", "_core")
    else:
        (site / "mspkg" / "_core.py").write_text("def answer():\n    return 42\n")
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import mspkg; import mspkg._gpu"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert "cannot import name 'gpu_count' from 'mspkg._core'" in real.stderr, real.stderr
    assert subprocess.run([sys.executable, "-c", "import mspkg"], cwd=tmp_path, env=env,
                          timeout=60).returncode == 0
    report = chain(tmp_path, "mspkg", env=env, path=site / "mspkg")
    od512 = [f for f in report.findings if f.code == "OD512"]
    assert len(od512) == 1 and "gpu_count" in od512[0].message, report.findings
    if compiled:
        assert od512[0].severity is Severity.INFO and report.diagnosis.cause == 0, od512
        assert "has no gpu_count in this build" in od512[0].message
    else:
        assert od512[0].severity is not Severity.INFO, od512


@pytest.mark.probe
@pytest.mark.parametrize(("have", "own"), [("1.0", ""), ("2.1", ""), ("1.0", "basepkg>=2.0")])
def test_an_import_that_dies_in_a_requirement_with_an_unmet_pin_leads_with_it(
        tmp_path: Path, have: str, own: str) -> None:
    """TensorFlow 2.21 under a NumPy 1.26 put first on sys.path: its import dies in ml_dtypes
    0.7.0 (which requires numpy>=2.0.0) with "SystemError: <built-in function __import__>
    returned a result with an exception set"; the verdict was cause 5, "read the exception"
    (survey 20). The installed distribution the import died in, whose own requirement is not
    met, leads: OD327, cause 3. With the requirement met, nothing of it; one the package
    requires itself too is said once, as the package's own pin."""
    site = tmp_path / "site"
    files = {"toppkg/__init__.py": "import midpkg\n",
             "midpkg/__init__.py": "import basepkg\nif basepkg.VERSION < (2,):\n    raise "
                                   "ImportError('basepkg is too old for midpkg')\n",
             "basepkg/__init__.py": f"VERSION = {tuple(int(x) for x in have.split('.'))}\n"}
    for dist, version, reqs in (("toppkg", "1.0", ["midpkg", own]),
                                ("midpkg", "3.0", ["basepkg>=2.0"]), ("basepkg", have, [])):
        info = f"{dist}-{version}.dist-info"
        files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" \
            + "".join(f"Requires-Dist: {r}\n" for r in reqs if r)
        files[f"{info}/RECORD"] = f"{dist}/__init__.py,,\n{info}/METADATA,,\n"
    _write(site, files)
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import toppkg"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    report = chain(tmp_path, "toppkg", env=env, path=site / "toppkg")
    od327 = [f for f in report.findings if f.code == "OD327"]
    if have == "2.1":
        assert real.returncode == 0 and not od327, report.findings
        return
    assert "basepkg is too old for midpkg" in real.stderr, real.stderr
    assert report.diagnosis.cause == 3 and od327, report.diagnosis.summary
    if own:
        assert [f.message for f in od327] == ["toppkg 1.0 requires basepkg>=2.0; basepkg 1.0 is "
                                              f"installed ({site})"], od327
        return
    assert od327[0].message.startswith("`import toppkg` fails in midpkg 3.0, which requires "
                                       "basepkg>=2.0; basepkg 1.0 is installed"), od327
    assert od327[0].severity is Severity.ERROR


def test_a_load_only_a_lazily_called_function_makes_comes_last(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchaudio 2.8: ``_extension/utils.py`` has ``_load_lib(lib)`` and calls it itself only
    inside ``_import_sox_ext()`` (the SoX backend's first use); ``__init__`` calls
    ``_load_lib("libtorchaudio")`` at import. ``--package`` checked the SoX library (its
    missing libsox the headline) instead of the one the import loads and fails on."""
    import sys

    pkg = tmp_path / "lzpkg"
    (pkg / "lib").mkdir(parents=True)
    (tmp_path / "e.c").write_text("int f(void) { return 1; }\n")
    for name in ("libmain.so", "libextra.so"):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "lib" / name),
                        str(tmp_path / "e.c")], check=True, timeout=60)
    _write(tmp_path, {
        "lzpkg/utils.py": "import ctypes, os\n\n\ndef _load_lib(name):\n"
                          "    ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', "
                          "f'{name}.so'))\n\n\ndef _import_extra():\n"
                          "    _load_lib('libextra')\n",
        "lzpkg/__init__.py": "from .utils import _load_lib\n_load_lib('libmain')\n"})
    maps = subprocess.run([sys.executable, "-c", "import lzpkg; print(open('/proc/self/maps')"
                           ".read())"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60).stdout
    assert "libmain.so" in maps and "libextra.so" not in maps
    from opdoctor.facts.pychain import analyse

    ch = analyse("lzpkg", [str(tmp_path)], ".so", str(tmp_path))
    assert [os.path.basename(p) for p in ch.libraries] == ["libmain.so", "libextra.so"]
    assert [lk.lazy for lk in ch.links if lk.kind == "cdll"] == [True, False]
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--package",
              "lzpkg")
    assert [os.path.basename(r["target"]["path"]) for r in res.json()["reports"]] == \
        ["libmain.so"]


@pytest.mark.probe
def test_a_load_error_of_another_library_is_named_as_that_librarys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fbgemm-gpu-cpu 1.7.0: the package's import stops at fbgemm_gpu_tbe_utils.so (a torch
    symbol missing); every other library's report called that undefined symbol its own
    (asmjit.so, which the import never reached). The symbol is reported as the failing
    library's, in each report."""
    import sys

    pkg = tmp_path / "twolib"
    pkg.mkdir()
    (tmp_path / "a.c").write_text("int a_fn(void) { return 1; }\n")
    (tmp_path / "b.c").write_text("int missing_fn(void);\n"
                                  "int b_fn(void) { return missing_fn(); }\n")
    for name in ("a", "b"):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / f"lib{name}.so"),
                        str(tmp_path / f"{name}.c")], check=True, timeout=60)
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n_HERE = os.path.dirname(__file__)\n"
        "ctypes.CDLL(os.path.join(_HERE, 'liba.so'))\n"
        "ctypes.CDLL(os.path.join(_HERE, 'libb.so'))\n")
    real = subprocess.run([sys.executable, "-c", "import twolib"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "libb.so: undefined symbol: missing_fn" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), str(pkg / "liba.so"))
    rep = res.json()["reports"][0]
    od321 = [f for f in rep["findings"] if f["code"] == "OD321"]
    assert od321 and od321[0]["subject"] == str(pkg / "libb.so"), od321
    assert "fails at libb.so, not at this library" in od321[0]["message"]


def _record_line(site: Path, path: Path) -> str:
    """A RECORD row for ``path`` with its real sha256, as pip writes it."""
    import base64
    import hashlib

    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path.relative_to(site)},sha256={digest},{len(data)}"


@pytest.mark.parametrize(("healthy", "listed_by"), [(False, "top_level.txt"), (True, "RECORD")])
def test_a_package_whose_compiled_code_is_in_its_distributions_other_top_level_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], healthy: bool,
        listed_by: str) -> None:
    """tflite-support 0.4.4: ``tflite_support`` (pure Python) runs ``from
    tensorflow_lite_support.metadata.cc.python import _pywrap_metadata_version``, a compiled
    module of the other top-level package the same wheel installs (its ``top_level.txt``
    lists both; newer wheels have only a RECORD), and the import fails on a library no search
    path finds. ``--static`` said "no compiled library … nothing to check" (exit 2); it follows
    that import now and finds what Python finds — or, the library found, nothing."""
    import sysconfig

    site = tmp_path / "site"
    front, back = site / "frontpkg", site / "backpkg"
    (back / "cc").mkdir(parents=True)
    (back / "libs").mkdir()
    front.mkdir()
    (front / "__init__.py").write_text('"""The distribution\'s pure-Python face."""\n'
                                       "from backpkg.cc import _C\n\n\n"
                                       "def answer():\n    return _C.answer()\n")
    (back / "__init__.py").write_text("")
    (back / "cc" / "__init__.py").write_text("")
    ext = back / "cc" / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    _lazy_user(back / "libs", ext, *(["-Wl,-rpath,$ORIGIN/../libs"] if healthy else []))
    info = site / "front_dist-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: front-dist\nVersion: 1.0\n")
    if listed_by == "top_level.txt":
        (info / "top_level.txt").write_text("backpkg\nfrontpkg\n")
    files = [p for p in sorted(site.rglob("*")) if p.is_file() and info not in p.parents]
    (info / "RECORD").write_text("\n".join(
        [*(_record_line(site, p) for p in files), f"{info.name}/RECORD,,"]) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    real = subprocess.run([sys.executable, "-c", "import frontpkg; print(frontpkg.answer())"],
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=60)
    if healthy:
        assert real.returncode == 0 and real.stdout.strip() == "42", real.stderr
    else:
        assert "liblazy.so.1: cannot open shared object file" in real.stderr, real.stderr

    res = cli(capsys, "check", "--static", "-f", "json", "--package", "frontpkg", "--cwd",
              str(tmp_path), "--env", f"PYTHONPATH={site}")
    assert res.code == (0 if healthy else 1), res.out + res.err
    (rep,) = res.json()["reports"]
    assert rep["target"]["path"] == str(ext)
    found = [(f["code"], f["severity"]) for f in rep["findings"]]
    if healthy:
        assert not [f for f in found if f[1] != "info"], found
    else:
        od201 = [f for f in rep["findings"] if f["code"] == "OD201"]
        assert od201 and "liblazy.so.1" in od201[0]["message"], found
        assert rep["diagnosis"]["cause"] == 2


@pytest.mark.parametrize("broken", [True, False])
def test_a_package_is_checked_at_the_library_its_import_fails_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: bool) -> None:
    """torch-harmonics 0.9.0: ``import torch_harmonics`` loads the top-level helper
    ``disco_helpers`` (fine), then ``disco/_C`` (built for another torch), where the import
    fails. ``--package`` checked the first library the chain reaches: "No problem found", exit
    0, with ``--static``. Now the first whose load the static view predicts to fail is the
    target; with both libraries fine, the first still is."""
    import sysconfig

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    pkg = tmp_path / "twolib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import _helper\nfrom . import _core\n")
    fx = Path(__file__).parent / "fixtures" / "python"
    inc = sysconfig.get_paths()["include"]
    for name, flags in (("_helper", []), ("_core", ["-DNEEDS_MISSING"] if broken else [])):
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-isystem", inc, f"-DMODNAME={name}",
                        *flags, str(fx / "ext.c"), "-o", str(pkg / (name + suffix))],
                       check=True, timeout=60)
    real = _python(tmp_path, "import twolib")
    if broken:
        assert f"_core{suffix}: undefined symbol: missing_helper" in real.stderr, real.stderr
    else:
        assert real.returncode == 0, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--package",
              "twolib")
    (rep,) = res.json()["reports"]
    want = "_core" if broken else "_helper"
    assert os.path.basename(rep["target"]["path"]) == want + suffix
    assert res.code == (1 if broken else 0), rep["findings"]
    if broken:
        assert any("missing_helper" in f["message"] for f in rep["findings"]), rep["findings"]


@pytest.mark.probe
def test_an_import_that_fails_at_another_librarys_miss_is_that_misss_consequence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchcodec 0.17.0's wheel: each FFmpeg-variant library misses its FFmpeg (OD201), and
    `import torchcodec` fails at libtorchcodec_image.so on libnvrtc.so.13 (a CUDA build).
    custom_ops4's report said the import's failure was "a consequence of OD201" — its own
    libavutil.so.56, which the error does not name. Built here: the package's import loads
    liba.so, which misses libx.so; libb.so (checked) misses liby.so. The import's failure is
    the real loader's miss of libx.so (OD220, "fails at liba.so, not at this library")."""
    pkg = tmp_path / "twolibs"
    gone = tmp_path / "gone"
    pkg.mkdir()
    gone.mkdir()
    for lib, dep in (("a", "x"), ("b", "y")):
        (tmp_path / f"{dep}.c").write_text(f"int {dep}_fn(void) {{ return 1; }}\n")
        (tmp_path / f"{lib}.c").write_text(f"int {dep}_fn(void);\n"
                                           f"int {lib}_fn(void) {{ return {dep}_fn(); }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(gone / f"lib{dep}.so"),
                        str(tmp_path / f"{dep}.c")], check=True, timeout=60)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / f"lib{lib}.so"),
                        str(tmp_path / f"{lib}.c"), f"-L{gone}", f"-l{dep}"],
                       check=True, timeout=60)
    shutil.rmtree(gone)
    (pkg / "__init__.py").write_text("import ctypes, os\nctypes.CDLL(os.path.join("
                                     "os.path.dirname(__file__), 'liba.so'))\n")
    real = _python(tmp_path, "import twolibs")
    assert "OSError: libx.so: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), str(pkg / "libb.so"))
    (rep,) = res.json()["reports"]
    assert res.code == 1
    consequences = rep["diagnosis"]["consequences"]  # root → what it explains
    assert consequences["OD220"] == ["OD511"], consequences
    assert "OD511" not in consequences.get("OD201", []), consequences
    od220 = next(f for f in rep["findings"] if f["code"] == "OD220")
    assert od220["message"].startswith("`import twolibs` fails at liba.so, not at this "
                                       "library: libx.so"), od220["message"]
    assert "OD201" in rep["diagnosis"]["root_findings"]  # libb.so's own miss, liby.so


@pytest.mark.probe
@pytest.mark.parametrize("beside", [False, True])
def test_a_package_check_that_read_none_of_its_libraries_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], beside: bool) -> None:
    """bitblas 0.1.0: ``--static`` opened with "No problem found." and exit 0 while none of the
    package's compiled libraries was read (its import chain reaches them by paths computed at
    run time) and its import fails. The verdict now says what was not analysed (low
    confidence; exit 0: nothing was found); with the probe, that the import works and loaded
    none of them. torch-memory-saver 0.0.9 installs its hook libraries beside the package (its
    RECORD lists them) and loads them on first use: that was OD415 "has no compiled library
    … nothing to check", exit 2."""
    site = tmp_path / "site"
    pkg = site / "plainlib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VERSION = 1\n")
    lib = (site if beside else pkg) / "libplain.so"
    (tmp_path / "p.c").write_text("int plain(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "p.c")],
                   check=True, timeout=60)
    info = site / "plainlib-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plainlib\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"plainlib/__init__.py,,\n{lib.relative_to(site)},,\n"
                                 "plainlib-1.0.dist-info/RECORD,,\n")
    env = f"PYTHONPATH={site}"
    real = subprocess.run([sys.executable, "-c", "import plainlib; print(plainlib.VERSION)"],
                          env={"PYTHONPATH": str(site)}, capture_output=True, text=True,
                          timeout=60)
    assert real.stdout.strip() == "1", real.stderr
    static = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
                 env, "--package", "plainlib")
    (rep,) = static.json()["reports"]
    assert static.code == 0 and rep["diagnosis"]["confidence"] == "low"
    assert rep["diagnosis"]["summary"].startswith(
        "No problem found in what was read; its compiled library (libplain.so) was not "
        "analysed, and no probe imported it"), rep["diagnosis"]["summary"]
    probed = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--env", env,
                 "--package", "plainlib")
    (rep,) = probed.json()["reports"]
    assert probed.code == 0 and rep["diagnosis"]["summary"] == (
        "No problem found: the import works; it did not load its compiled library "
        "(libplain.so) — the package loads it later (first use), or never: check it to "
        "analyse it.")


def test_a_dependency_the_package_ships_and_loads_by_a_computed_path_is_no_static_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dgl 1.1.3: ``_ffi/base.py:39 ctypes.CDLL(lib_path[0])`` loads ``dgl/libdgl.so`` (a path
    ``libinfo.find_lib_path()`` computes) before the Cython module that NEEDs it; ``--static``
    said "libdgl.so is not found" (error, cause 2) with a patchelf fix for a package that
    imports and works. A missing dependency the package ships, beside a load whose path is
    computed at run time, is a warning that says so; the probe decides."""
    import sysconfig

    pkg = tmp_path / "dglike"
    (pkg / "_ffi").mkdir(parents=True)
    (pkg / "_ffi" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n\n\ndef _find_lib_path():\n"
        "    here = os.path.dirname(os.path.abspath(__file__))\n"
        "    return [os.path.join(here, n) for n in sorted(os.listdir(here))\n"
        "            if n.startswith('liblazy')]\n\n\n"
        "_LIB = ctypes.CDLL(_find_lib_path()[0], ctypes.RTLD_GLOBAL)\n"
        "from ._ffi import _C  # noqa: E402\n")
    _lazy_user(pkg, pkg / "_ffi" / ("_C" + sysconfig.get_config_var("EXT_SUFFIX")))
    real = _python(tmp_path, "import dglike._ffi._C as m; print(m.answer())")
    assert real.stdout.strip() == "42", real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--package",
              "dglike")
    (rep,) = res.json()["reports"]
    od201 = [f for f in rep["findings"] if f["code"] == "OD201"]
    assert len(od201) == 1 and od201[0]["severity"] == "warning", od201
    assert "the package ships it (dglike/liblazy.so.1) and probably loads it first" in \
        od201[0]["message"]
    assert "patchelf" not in od201[0]["fix"]
    assert res.code == 0, rep["findings"]


_CANDIDATES = '''import ctypes

_lib = None
_failures = []
for d in ("/nonexistent/libfoo.so", "libm.so.6"):
    try:
        _lib = ctypes.CDLL(d)
        break
    except Exception as e:
        _failures += [e]
if _lib is None:
    raise ImportError(f"no library: {_failures}")
'''


def test_candidate_paths_tried_in_turn_are_no_missing_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """z3's shape (survey 8's P12): a loop tries candidate libraries until one loads. A
    missing absolute candidate beside a bare name the loader searches for was OD510 "the
    package loads /nonexistent/libfoo.so, which does not exist" (an error, on a package that
    imports); and the swallowed load was "the import of d", the loop variable."""
    pkg = tmp_path / "candlib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_CANDIDATES)
    # a compiled library of its own, as z3 ships libz3.so (else: nothing to check, exit 2)
    shutil.copy(fixture("loader/depdir/libmyop_dep.so"), pkg / "libcand.so")
    real = _python(tmp_path, "import candlib; print(candlib._lib._name, "
                             "len(candlib._failures))")
    assert real.stdout.split() == ["libm.so.6", "1"], real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--package",
              "candlib")
    assert res.code == 0, res.out
    found = res.json()["reports"][0]["findings"]
    assert not [f for f in found if f["code"] == "OD510"], found
    # The errors are kept (`_failures += [e]`) and shown when no candidate loads: nothing is
    # discarded (z3 prints its list and raises), so no OD509 either.
    assert not [f for f in found if f["code"] == "OD509"], found
    (pkg / "__init__.py").write_text(_CANDIDATES.replace('"/nonexistent/libfoo.so", "libm.so.6"',
                                                         '"/nonexistent/libfoo.so",'))
    none = _python(tmp_path, "import candlib")  # Python: the kept error reaches the user
    assert "ImportError: no library: [OSError('/nonexistent/libfoo.so: cannot open" in \
        none.stderr, none.stderr

    # Kept in a list nothing ever shows: discarded, and the warning names the statement.
    (pkg / "__init__.py").write_text(_CANDIDATES.replace(
        'raise ImportError(f"no library: {_failures}")', "_lib = False"))
    silent = _python(tmp_path, "import candlib; print(candlib._lib._name)")
    assert silent.returncode == 0 and silent.stdout.split() == ["libm.so.6"], silent.stderr
    found = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--package",
                "candlib").json()["reports"][0]["findings"]
    od509 = [f["message"] for f in found if f["code"] == "OD509"]
    assert od509 and od509[0].startswith("the load `ctypes.CDLL(d)` is inside"), od509
    assert od509[0].endswith("that discards the error"), od509
    assert not any("the import of d " in m for m in od509)


@pytest.mark.probe
def test_an_import_error_explain_knows_gets_its_reading_as_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """exllamav2 0.3.2 JIT-builds its extension at import (torch.utils.cpp_extension.load):
    on a machine whose torch has no CUDA, torch raises "CUDA_HOME environment variable is not
    set". OD511's fix was "Read the exception; `opdoctor explain` maps it to a cause" — the
    check now does what it asked the user to do: the build cannot find its toolchain (cause 2)
    and the next step. An exception explain only reads generically keeps the generic fix."""
    from tests.torchfork import run_python

    pkg = tmp_path / "jitpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import torch\nfrom torch.utils.cpp_extension import _join_cuda_home\n\n"
        "_nvcc = _join_cuda_home('bin', 'nvcc')  # a JIT build at import\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    real = run_python("import jitpkg", cwd=tmp_path, env=env, timeout=300)
    assert "OSError: CUDA_HOME environment variable is not set" in real.stderr, real.stderr
    doc = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package",
              "jitpkg").json()
    od511 = next(f for f in doc["reports"][0]["findings"] if f["code"] == "OD511")
    assert od511["fix"].startswith("the exception reads as cause 2 — library path: the build "
                                   "cannot find its toolchain"), od511["fix"]
    assert "Next: which nvcc" in od511["fix"]
    (pkg / "__init__.py").write_text("import torch\nraise RuntimeError('something odd')\n")
    doc = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package",
              "jitpkg").json()
    od511 = next(f for f in doc["reports"][0]["findings"] if f["code"] == "OD511")
    assert od511["fix"].startswith("Read the exception"), od511["fix"]


@pytest.mark.parametrize(("first_line", "handler", "severity", "words"), [
    # gmpy2's layout: loaded unguarded first (and imported again in the handler)
    ("from ._fast import *\n", "from ._fast import answer", "info",
     "imported unguarded before it (gpkg/__init__.py:1)"),
    # the handler imports the same module again: a failed load raises from there
    ("", "from ._fast import answer", "info", "whose handler imports gpkg._fast again"),
    # the guarded import is the only load and the handler drops its error: a note when the
    # file reads loadable (statically: nothing retried it) …
    ("", "answer = None", "info", "that discards the error; statically _fast"),
    # … and the warning stands when reading it finds a load that fails (below: the file
    # replaced by another extension, which exports no PyInit__fast)
    ("", "answer = None #broken", "warning", "the load fails: _fast"),
])
def test_a_guarded_import_of_a_module_already_loaded_hides_nothing(
        tmp_path: Path, first_line: str, handler: str, severity: str, words: str) -> None:
    """gmpy2 2.3 (survey 10): `from .gmpy2 import *` at line 1, then `try: from .gmpy2 import
    _C_API, … except ImportError: from .gmpy2 import …` — a test for names a static build
    lacks, in a module already loaded. OD509 said the handler "discards the error"; a failed
    load raises at line 1 (Python shows it, below), so nothing can be hidden: a note. Without
    the unguarded import first, the guarded one is the load, and the warning stands."""
    pkg = tmp_path / "gpkg"
    pkg.mkdir()
    _c_extension(tmp_path, pkg, "_fast")
    (pkg / "__init__.py").write_text(
        first_line + "try:\n    from ._fast import _C_API\nexcept ImportError:\n"
        f"    {handler}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ok = subprocess.run([sys.executable, "-c", "import gpkg"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    if first_line:  # a broken extension: the unguarded line 1 raises, the handler never runs
        ext = next(pkg.glob("_fast*.so"))
        ext.write_bytes(b"\0" * 64)
        bad = subprocess.run([sys.executable, "-c", "import gpkg"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
        assert 'gpkg/__init__.py", line 1' in bad.stderr and "ImportError" in bad.stderr
        shutil.rmtree(pkg)
        pkg.mkdir()
        _c_extension(tmp_path, pkg, "_fast")
        (pkg / "__init__.py").write_text(
            first_line + "try:\n    from ._fast import _C_API\nexcept ImportError:\n"
            f"    {handler}\n")
    if handler.endswith("#broken"):
        import _json  # a compiled module of the standard library

        shutil.copy(str(_json.__file__), next(pkg.glob("_fast*.so")))
        again = subprocess.run([sys.executable, "-c", "import gpkg._fast"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=60)
        assert "PyInit__fast" in again.stderr, again.stderr
    report = run_check(str(pkg), CheckOptions(package="gpkg", cwd=str(tmp_path)))
    (f,) = [f for f in report.findings if f.code == "OD509"]
    assert f.severity.value == severity and words in f.message, f.message


@pytest.mark.probe
def test_a_module_the_package_import_does_not_load_is_imported_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cryptography 51 without cffi (survey 10): `import cryptography` works and loads none of
    its extensions; `import cryptography.hazmat.bindings._rust` fails in the module's own init
    (No module named '_cffi_backend'). Checked by its path, _rust.abi3.so was "No problem
    found" — the probe imported the package only, and the static view predicts nothing for
    a failure in PyInit_. The module itself is imported now when the package's import did
    not load it."""
    import sysconfig

    pkg = tmp_path / "cryptolike"
    (pkg / "bindings").mkdir(parents=True)
    (pkg / "__init__.py").write_text("VERSION = 1\n")
    (pkg / "bindings" / "__init__.py").write_text("")
    src = tmp_path / "rust.c"
    src.write_text(
        '#include <Python.h>\nstatic struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_rust", '
        '"", -1, NULL};\nPyMODINIT_FUNC PyInit__rust(void) {\n'
        '  PyObject *b = PyImport_ImportModule("_cffi_backend_like");\n'
        "  if (b == NULL) return NULL;\n  Py_DECREF(b);\n  return PyModule_Create(&D);\n}\n")
    ext = pkg / "bindings" / ("_rust" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(ext), str(src)], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    top = subprocess.run([sys.executable, "-c", "import cryptolike"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert top.returncode == 0, top.stderr
    sub = subprocess.run([sys.executable, "-c", "import cryptolike.bindings._rust"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert "No module named '_cffi_backend_like'" in sub.stderr, sub.stderr
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), str(ext))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["cause"] == 5, rep["diagnosis"]
    od511 = next(f for f in rep["findings"] if f["code"] == "OD511")
    assert od511["message"].startswith("import cryptolike.bindings._rust raised "
                                       "ModuleNotFoundError: No module named "
                                       "'_cffi_backend_like'"), od511["message"]


def test_a_module_only_a_function_imports_is_not_run_by_the_import(tmp_path: Path) -> None:
    """vllm 0.34 (survey 15's F1): ``envs.py`` imports ``vllm.platforms`` inside a function,
    and ``platforms/__init__.py`` imports ``regex`` at module level. ``import vllm`` never runs
    that file, and works without regex; the OD514 error "import vllm runs `import regex`"
    was a false alarm. Only what the import reaches through module-level imports counts:
    the same ``import absent_late`` reached from ``__init__`` through a subpackage's
    module (``import fnpkg.platforms.mod``: ``platforms/__init__.py`` runs first) is still the
    error Python raises."""
    import sys

    site = tmp_path / "site"
    _write(site, {
        "fnpkg/__init__.py": "from fnpkg import envs\n",
        "fnpkg/envs.py": "import os\n\n\ndef on_one_rank():\n"
                         "    from fnpkg.platforms import current\n    return current\n",
        "fnpkg/platforms/__init__.py": "import absent_late\ncurrent = 1\n",
        "fnpkg-1.0.dist-info/METADATA": "Name: fnpkg\nVersion: 1.0\n"
                                        "Requires-Dist: absent-late\n",
        "fnpkg-1.0.dist-info/RECORD": "fnpkg/__init__.py,,\n"})

    def python(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env={"PYTHONPATH": str(site)})

    real = python("import fnpkg, sys; print('fnpkg.platforms' in sys.modules)")
    assert real.returncode == 0 and real.stdout.strip() == "False", real.stderr
    report = chain(tmp_path, "fnpkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "fnpkg")
    od514 = [(f.message, f.severity) for f in report.findings if f.code == "OD514"]
    assert od514 == [("fnpkg 1.0 requires absent-late, which is not installed; its import "
                      "does not reach it (its first use may)", Severity.WARNING)], od514
    # Reached at module level through a subpackage's module: its __init__ runs, and fails.
    _write(site, {"fnpkg/__init__.py": "from fnpkg import envs\nimport fnpkg.platforms.mod\n",
                  "fnpkg/platforms/mod.py": "X = 1\n"})
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()
    real = python("import fnpkg")
    assert real.stderr.strip().splitlines()[-1] == \
        "ModuleNotFoundError: No module named 'absent_late'"
    report = chain(tmp_path, "fnpkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "fnpkg")
    od514 = [(f.message, f.severity) for f in report.findings if f.code == "OD514"]
    assert od514 == [("import fnpkg runs `import absent_late` (fnpkg/platforms/__init__.py:1);"
                      " absent-late is not installed", Severity.ERROR)], od514


def test_a_packages_warnings_are_printed_once_in_a_walk(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A walk of a package checks each of its libraries in package mode: the package's own
    warnings (a requirement not installed) are in every report. vllm's 66 OD514 warnings were
    printed in each of its twelve reports; the text prints them once and refers to them
    after, as it does the notes; the JSON keeps every finding in every report."""
    site = tmp_path / "site"
    _write(site, {"twopkg/__init__.py": "from twopkg import _a, _b\n\n\ndef later():\n"
                                        "    import absent_later\n",
                  "twopkg-1.0.dist-info/METADATA": "Name: twopkg\nVersion: 1.0\n"
                                                   "Requires-Dist: absent-later\n",
                  "twopkg-1.0.dist-info/RECORD": "twopkg/__init__.py,,\n"})
    for name in ("_a", "_b"):
        _c_extension(tmp_path, site / "twopkg", name)
    args = ("check", "--static", "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path),
            str(site))
    doc = cli(capsys, *args, "-f", "json").json()
    assert len(doc["reports"]) == 2 and all(
        [f["code"] for f in r["findings"] if f["severity"] == "warning"] == ["OD514"]
        for r in doc["reports"]), [r["findings"] for r in doc["reports"]]
    text = cli(capsys, *args).out
    assert text.count("OD514 twopkg 1.0 requires absent-later") == 1, text
    assert text.count("1 warning(s) (OD514) as in a report above") == 1, text
    # the closing list marks a verdict of warnings only "!", not "✗"
    assert "2 reports, 1 verdict(s):" in text and "  ! 2 × No error — 1 warning(s)" in text, text


def _static_check_of_a_failing_import(tmp_path: Path, site: Path, package: str,
                                      module: str) -> Report:
    """The static report of ``package`` in ``site``, after checking that Python's own import
    of it really fails on ``module``."""
    real = subprocess.run([sys.executable, "-c", f"import {package}"], cwd=tmp_path, text=True,
                          capture_output=True, timeout=60, env={"PYTHONPATH": str(site)})
    assert real.stderr.strip().splitlines()[-1] == \
        f"ModuleNotFoundError: No module named '{module}'", real.stderr
    return chain(tmp_path, package, probe=False, env={"PYTHONPATH": str(site)},
                 path=site / package)


def test_a_requirement_a_called_function_imports_under_a_condition_may_be_reached(
        tmp_path: Path) -> None:
    """tensorflow-model-optimization 0.8.1 without tf-keras (survey 18): keras/compat.py runs
    ``keras = _get_keras_instance()``, whose ``import tf_keras`` under an ``if`` is what its
    import dies on. ``--static`` said the import "does not reach" tf-keras. An import the
    package's import may run — in a function its module calls, under a condition — is named,
    as "may reach it"; one in a function nothing calls at import, inside ``try`` or under
    ``if TYPE_CHECKING:`` is not."""
    site = tmp_path / "site"
    _write(site, {
        "condpkg/__init__.py": "from condpkg import compat\n",
        "condpkg/compat.py": ("import os\n\n\ndef _get():\n"
                              "    if os.environ.get('CONDPKG_OLD') != '1':\n"
                              "        import absent_cond\n"
                              "        return absent_cond\n"
                              "    return os\n\n\n"
                              "def later():\n    import absent_before\n\n\n"
                              "try:\n    import absent_tried\nexcept ImportError:\n"
                              "    absent_tried = None\n"
                              "thing = _get()\n"
                              "from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    import absent_typed\n"),
        "condpkg-1.0.dist-info/METADATA": ("Name: condpkg\nVersion: 1.0\n"
                                           "Requires-Dist: absent-cond\n"
                                           "Requires-Dist: absent-before\n"
                                           "Requires-Dist: absent-tried\n"
                                           "Requires-Dist: absent-typed\n"),
        "condpkg-1.0.dist-info/RECORD": "condpkg/__init__.py,,\ncondpkg/compat.py,,\n"})
    report = _static_check_of_a_failing_import(tmp_path, site, "condpkg", "absent_cond")
    od514 = {f.subject: f for f in report.findings if f.code == "OD514"}
    assert sorted(od514) == ["absent-before", "absent-cond", "absent-tried", "absent-typed"], \
        od514
    cond = od514["absent-cond"]
    assert cond.severity is Severity.WARNING
    # first (before absent-before): the text shows the first few warnings of a code and
    # counts the rest
    assert next(f for f in report.findings if f.code == "OD514") is cond
    assert cond.message.endswith(
        "which is not installed; its import may reach it: `import absent_cond` at "
        "condpkg/compat.py:6, in _get(), which the module's import calls, under a condition "
        "(whether that runs is decided when it runs: the probe tells)"), cond.message
    assert "condpkg/compat.py:6: import absent_cond (in _get(), which the module's import " \
        "calls, under a condition)" in cond.evidence, cond.evidence
    for name in ("absent-before", "absent-tried", "absent-typed"):
        assert od514[name].message.endswith("its import does not reach it (its first use "
                                            "may)"), od514[name].message


def test_an_undeclared_module_the_import_runs_is_named_statically(tmp_path: Path) -> None:
    """sageattention 1.0.6 (survey 19): its core.py runs `import triton` at module level and
    its METADATA requires nothing; `--static` said "No problem found" and the import fails.
    Statically, an unconditional import that nothing on sys.path provides is a warning even
    when no requirement declares it; a requirement not installed may be the provider (its
    module name is not known here), and then the finding says so."""
    site = tmp_path / "site"
    _write(site, {"sagepkg/__init__.py": "from sagepkg.core import run\n",
                  "sagepkg/core.py": "import json\nimport absent_undeclared\n\n\n"
                                     "def run():\n    return json.dumps(1)\n",
                  "sagepkg-1.0.dist-info/METADATA": "Name: sagepkg\nVersion: 1.0\n",
                  "sagepkg-1.0.dist-info/RECORD": "sagepkg/__init__.py,,\n"
                                                  "sagepkg/core.py,,\n"})
    report = _static_check_of_a_failing_import(tmp_path, site, "sagepkg", "absent_undeclared")
    (f,) = [f for f in report.findings if f.code == "OD514"]
    assert f.severity is Severity.WARNING and f.message == (
        "import sagepkg runs `import absent_undeclared` (sagepkg/core.py:2), which nothing on "
        "sys.path provides and sagepkg 1.0 does not declare"), f.message
    assert "pip install absent_undeclared" not in (f.fix or "")  # a module is no dist name
    meta = site / "sagepkg-1.0.dist-info" / "METADATA"
    meta.write_text(meta.read_text() + "Requires-Dist: provider-dist\n")
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()
    report = chain(tmp_path, "sagepkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "sagepkg")
    f = next(f for f in report.findings if f.code == "OD514" and f.subject == "absent_undeclared")
    assert "does not declare" not in f.message and "provider-dist" in (f.fix or ""), f


def test_an_error_every_library_of_a_package_shares_is_told_once_and_summed_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fbgemm_gpu 1.9.0 (survey 18): the package's import fails, and each of its 19
    libraries' reports repeated that error's evidence and fix word for word. The text prints
    them once and refers to that report after; a closing list gives each verdict once with the
    libraries that have it. The JSON keeps every finding, evidence included, in every report."""
    site = tmp_path / "site"
    _write(site, {"twopkg/__init__.py": "import absent_now\nfrom twopkg import _a, _b\n",
                  "twopkg-1.0.dist-info/METADATA": "Name: twopkg\nVersion: 1.0\n"
                                                   "Requires-Dist: absent-now\n",
                  "twopkg-1.0.dist-info/RECORD": "twopkg/__init__.py,,\n"})
    for name in ("_a", "_b"):
        _c_extension(tmp_path, site / "twopkg", name)
    real = subprocess.run([sys.executable, "-c", "import twopkg"], cwd=tmp_path, text=True,
                          capture_output=True, env={"PYTHONPATH": str(site)}, timeout=60)
    assert "No module named 'absent_now'" in real.stderr, real.stderr
    args = ("check", "--static", "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path),
            str(site))
    doc = cli(capsys, *args, "-f", "json").json()
    errors = [[(f["code"], f["message"], f["evidence"]) for f in r["findings"]
               if f["severity"] == "error"] for r in doc["reports"]]
    assert len(errors) == 2 and errors[0] == errors[1] and errors[0], errors
    code, message, evidence = errors[0][0]
    assert evidence, errors
    text = cli(capsys, *args).out
    first = os.path.basename(doc["reports"][0]["target"]["path"])
    assert text.count(f"{code} {message}") == 2, text
    assert text.count(evidence[0]) == 1, text
    assert text.count(f"evidence and fix as in the report of {first} above") == 1, text
    summary = doc["reports"][0]["diagnosis"]["summary"].replace("Most likely cause: ", "cause ")
    assert "2 reports, 1 verdict(s):" in text, text
    names = ", ".join(os.path.basename(r["target"]["path"]) for r in doc["reports"])
    assert f"✗ 2 × {summary}" in text and names in text, text
    # One library: no closing list, and -v prints every error in full.
    one = cli(capsys, *args[:-1], doc["reports"][1]["target"]["path"]).out
    assert "verdict(s):" not in one and one.count(evidence[0]) == 1, one
    verbose = cli(capsys, *args, "-v").out
    assert verbose.count(evidence[0]) == 2 and "as in the report of" not in verbose, verbose


def test_an_unconditional_import_of_an_uninstalled_requirement_is_found_statically(
        tmp_path: Path) -> None:
    """pyproj 3.7.2 without certifi (survey 10's P3): ``__init__`` imports ``pyproj.network``,
    whose module-level ``import certifi`` fails — the probe saw it, ``--static`` did not. Read
    from the modules the import runs: an unconditional import (module level, not in a try) of
    a module nothing on sys.path provides, which the distribution requires, is OD514 with the
    requirement's specifier. A guarded import and one inside a function are requirements not
    installed all the same (warnings: the import does not reach them); Python agrees on which
    one fails."""
    import sys

    site = tmp_path / "site"
    _write(site, {
        "uipkg/__init__.py": "import json\nimport uipkg.net\n"
                             "try:\n    import absent_opt\nexcept ImportError:\n"
                             "    absent_opt = None\n\n\ndef later():\n    import absent_fn\n",
        "uipkg/net.py": "import os\nimport absent_req.sub\n",
        "uipkg-1.0.dist-info/METADATA": "Name: uipkg\nVersion: 1.0\n"
                                        "Requires-Dist: absent-req>=2.1\n"
                                        "Requires-Dist: absent_opt\nRequires-Dist: absent_fn\n",
        "uipkg-1.0.dist-info/RECORD": "uipkg/__init__.py,,\nuipkg/net.py,,\n"})
    real = subprocess.run([sys.executable, "-c", "import uipkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(site)})
    assert real.stderr.strip().splitlines()[-1] == \
        "ModuleNotFoundError: No module named 'absent_req'"
    report = chain(tmp_path, "uipkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "uipkg")
    od514 = [f for f in report.findings if f.code == "OD514"]
    assert [(f.message, f.severity) for f in od514] == [
        ("import uipkg runs `import absent_req` (uipkg/net.py:2); absent-req is not installed",
         Severity.ERROR),
        # the guarded and the lazy ones: requirements all the same, which `pip check` lists
        # and a first use may need (cryptography's cffi, survey 12's P8): warnings
        ("uipkg 1.0 requires absent_fn, which is not installed; its import does not reach "
         "it (its first use may)", Severity.WARNING),
        ("uipkg 1.0 requires absent_opt, which is not installed; its import does not reach "
         "it (its first use may)", Severity.WARNING)]
    assert od514[0].fix == "pip install 'absent-req>=2.1' (uipkg 1.0 requires it; a " \
        "--no-deps or partial install left it out)"
    # installed: nothing to report, and Python imports it
    _write(site, {"absent_req/__init__.py": "", "absent_req/sub.py": "",
                  "absent_req-2.1.dist-info/METADATA": "Name: absent-req\nVersion: 2.1\n"})
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()
    assert subprocess.run([sys.executable, "-c", "import uipkg"], cwd=tmp_path, timeout=60,
                          env={"PYTHONPATH": str(site)}).returncode == 0
    report = chain(tmp_path, "uipkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "uipkg")
    assert [f.subject for f in report.findings if f.code == "OD514"] == [
        "absent_fn", "absent_opt"]


@pytest.mark.probe
def test_a_missing_requirement_after_an_earlier_failure_is_no_root(tmp_path: Path) -> None:
    """torchrec 1.9.2 beside fbgemm-gpu-cpu built for another torch: the real import stops on
    fbgemm_gpu's library before it reaches the module-level ``import tensordict`` that is also
    missing. OD514 stays, as a warning that says the failure comes next; the verdict is the
    earlier error's, and the import's failure is not folded under OD514. With that error
    gone, the import fails on the requirement and OD514 is the root again."""
    import sys

    site = tmp_path / "site"
    _write(site, {
        "eapkg/__init__.py": "from eapkg import first\nimport eapkg.net\n",
        "eapkg/first.py": "raise ImportError('eapkg: its compiled part was not built')\n",
        "eapkg/net.py": "import absent_later\n",
        "eapkg-1.0.dist-info/METADATA": "Name: eapkg\nVersion: 1.0\n"
                                        "Requires-Dist: absent-later\n",
        "eapkg-1.0.dist-info/RECORD": "eapkg/__init__.py,,\n"})
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import eapkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.stderr.strip().splitlines()[-1] == \
        "ImportError: eapkg: its compiled part was not built"
    report = chain(tmp_path, "eapkg", env=env, path=site / "eapkg")
    od514 = next(f for f in report.findings if f.code == "OD514")
    assert od514.severity is Severity.WARNING and od514.message.endswith(
        "(the import fails earlier, on another error: this failure comes next)")
    diag = report.diagnosis
    assert [r.code for r in diag.root_findings] == ["OD511"] and \
        "OD514" not in diag.consequences, diag
    (site / "eapkg" / "first.py").write_text("")
    real = subprocess.run([sys.executable, "-c", "import eapkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.stderr.strip().splitlines()[-1] == \
        "ModuleNotFoundError: No module named 'absent_later'"
    from opdoctor.facts.pychain import _analyse
    _analyse.cache_clear()
    diag = chain(tmp_path, "eapkg", env=env, path=site / "eapkg").diagnosis
    assert [r.code for r in diag.root_findings] == ["OD514"]
    assert [f.code for f in diag.consequences["OD514"]] == ["OD511"]


def test_a_missing_requirement_imported_by_another_name(tmp_path: Path) -> None:
    """matplotlib 3.9 installed with --no-deps fails on `from PIL import Image` (survey 11's
    P8): the module PIL is what the distribution pillow installs, so OD514 must look the
    requirement up by the names a module is installed under, not only its own."""
    import sys

    site = tmp_path / "site"
    _write(site, {
        "alpkg/__init__.py": "from PIL import Image\nimport dateutil.parser\n",
        "alpkg-1.0.dist-info/METADATA": "Name: alpkg\nVersion: 1.0\nRequires-Dist: pillow>=8\n"
                                        "Requires-Dist: python-dateutil>=2.8.2\n",
        "alpkg-1.0.dist-info/RECORD": "alpkg/__init__.py,,\n"})
    real = subprocess.run([sys.executable, "-c", "import alpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(site)})
    assert real.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'PIL'"
    report = chain(tmp_path, "alpkg", probe=False, env={"PYTHONPATH": str(site)},
                   path=site / "alpkg")
    assert [(f.subject, f.fix.split(" (")[0]) for f in report.findings if f.code == "OD514"] \
        == [("PIL", "pip install 'pillow>=8'"),
            ("dateutil", "pip install 'python-dateutil>=2.8.2'")]


def test_many_notes_of_one_code_are_counted_not_each_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rich: 38 modules with a relative import and a __main__ block were 114 lines of OD507
    notes in the text report (survey 11's P14). The first three warnings or notes of a code
    are printed, the rest counted in one line that names a few; ``-v`` and the JSON keep
    every one. Running one of them as a script does fail as the finding says."""
    pkg = tmp_path / "manymain"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("X = 1\n")
    for i in range(7):
        (pkg / f"tool{i}.py").write_text("from .base import X\n\nif __name__ == '__main__':\n"
                                         "    print(X)\n")
    ran = subprocess.run([sys.executable, str(pkg / "tool0.py")], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)
    assert ran.returncode != 0 and "attempted relative import" in ran.stderr, ran.stderr
    args = ("check", "--static", "--cwd", str(tmp_path), "--package", "manymain")
    doc = cli(capsys, *args, "-f", "json").json()
    notes = [f["subject"] for f in doc["reports"][0]["findings"] if f["code"] == "OD507"]
    assert len(notes) == 7, notes
    text = cli(capsys, *args).out
    assert text.count("  OD507 ") == 3, text
    # a source tree's scripts: warnings (an installed package's are notes, as rich's)
    assert "+ 4 more OD507 warning(s) like these (tool3.py, tool4.py, tool5.py, … 1 more; " \
        "-v shows each)" in text, text
    assert cli(capsys, *args, "-v").out.count("  OD507 ") == 7


def test_a_multi_line_import_is_one_line_of_evidence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """aiohttp's ``from ._http_parser import (  # type: ignore …`` over five lines was
    evidence with raw newlines and its comment, cut mid-word (survey 12's P11): one line,
    comment dropped, cut at a word."""
    pkg = tmp_path / "multiline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from ._speed import (  # type: ignore[import-not-found]\n"
        "    alpha,\n    beta,\n)\n")
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "multiline",
              "--cwd", str(tmp_path))
    [od] = [f for f in res.json()["reports"][0]["findings"] if f["code"] in ("OD509", "OD510")
            and f["evidence"]][:1]
    line = od["evidence"][0]
    assert line == "multiline/__init__.py:1: from ._speed import (alpha, beta,)", od


def test_names_bound_by_relative_imports_and_guarded_optional_modules_are_no_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 13's false alarms (errors, exit 1, on working packages): transformers'
    ``utils/hub.py`` runs ``from . import __version__`` where ``utils/__init__.py`` binds it
    by ``from .. import __version__``; datasets' ``from . import _tqdm`` where it is ``from .
    import tqdm as _tqdm``; Cython imports its optional pgen ``Parser`` module in a method,
    under ``except ImportError: raise RuntimeError(…)``. Names a relative import binds are the
    package's attributes, and a module guarded by an ImportError handler (whatever the
    handler does) is optional. An unguarded import of a missing module inside a function is
    a warning: it fails when the function is called."""
    import sys

    site = tmp_path / "site"
    _write(site, {
        "relbind/__init__.py": "__version__ = '1.0'\nfrom .utils import hub\n"
                               "from . import gram\n",
        "relbind/utils/__init__.py": "from .. import __version__\n"
                                     "from . import tqdm as _tqdm\n",
        "relbind/utils/tqdm.py": "BAR = 1\n",
        "relbind/utils/hub.py": "from . import __version__, _tqdm\n",
        "relbind/gram.py": "def parse(formal):\n    if formal:\n        try:\n"
                           "            from .Parser import tree\n        except ImportError:\n"
                           "            raise RuntimeError('needs the compiled grammar')\n"
                           "\n\ndef later():\n    from . import absent_helper\n"})
    ran = subprocess.run([sys.executable, "-c", "import relbind.utils.hub as h; "
                          "print(h.__version__, h._tqdm.BAR)"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(site)})
    assert ran.stdout.split() == ["1.0", "1"], ran.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "relbind",
              "--env", f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    findings = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD510"]
    assert [(f["subject"], f["severity"]) for f in findings] == [
        ("relbind.absent_helper", "warning")], findings
    assert findings[0]["message"].endswith("(in later(): when it is called)")
    assert res.code == 0


def _installed_venv(fixture: str, variant: str) -> Path:
    """A venv of an install fixture the Makefile made with pip (python/editable,
    python/skbc); skipped with pip's reason where it could not be made here."""
    from tests.conftest import SKIP

    reason = SKIP / f"{fixture}.txt"
    if reason.exists():
        pytest.skip(f"{fixture} install not made here: {reason.read_text().strip()[:200]}")
    root = PYFIX / fixture
    assert (root / ".ready").exists(), f"{root} is missing: run `make fixtures`"
    return root / variant


def _editable(variant: str) -> Path:
    """A venv of the editable-install fixture (Makefile: `pip install -e` of
    tests/fixtures/python/editable into its own venv; ok / unbuilt / moved …)."""
    return _installed_venv("editable", variant)


def _editable_run(venv: Path, cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _editable_check(capsys: pytest.CaptureFixture[str], venv: Path, cwd: Path,
                    *extra: str) -> Result:
    """``opdoctor check -f json --package edpkg`` with the fixture venv's interpreter."""
    return cli(capsys, "check", "-f", "json", "--python", str(venv / "bin" / "python"),
               "--package", "edpkg", "--cwd", str(cwd), *extra)


def test_an_editable_install_is_found_through_its_finder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pip install -e .` of a flat-layout project: setuptools writes a ``.pth`` that appends
    a finder (``__editable___edpkg_0_1_finder``) to ``sys.meta_path``, mapping edpkg to the
    source tree, where the extension is built in place; no sys.path entry holds edpkg. The
    healthy install was OD501 "no package edpkg on sys.path" (an error, exit 1) although
    Python imports it; now it is found where the finder maps it, and checked there."""
    venv = _editable("ok")
    src = venv.parent / "ok-src"
    real = _editable_run(venv, tmp_path, "import edpkg; print(edpkg.answer(), edpkg.__file__)")
    assert real.returncode == 0 and real.stdout.split() == [
        "42", str(src / "edpkg" / "__init__.py")], real.stdout + real.stderr
    res = _editable_check(capsys, venv, tmp_path, "--static")
    rep = res.json()["reports"][0]
    assert res.code == 0, [f["message"] for f in rep["findings"]]
    assert not [f for f in rep["findings"] if f["severity"] != "info"], rep["findings"]
    assert rep["target"]["path"].startswith(str(src / "edpkg" / "_fast"))


def test_an_editable_install_without_its_build_or_its_source_tree_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same editable install whose in-place build is gone (a build that left the
    extension out): Python's `from . import _fast` fails; OD510, whose fix builds it in place
    again from the project the install records (direct_url.json). And one whose source tree
    was moved away: `No module named 'edpkg'`; OD501 names the finder and the path it maps to,
    with the reinstall or the uninstall as the fix."""
    unbuilt = _editable("unbuilt")
    real = _editable_run(unbuilt, tmp_path, "import edpkg")
    assert "cannot import name '_fast'" in real.stderr, real.stderr
    res = _editable_check(capsys, unbuilt, tmp_path, "--static")
    (od510,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD510"]
    assert res.code == 1 and od510["severity"] == "error"
    project = unbuilt.parent / "unbuilt-src"
    assert "edpkg is an editable install" in od510["fix"], od510["fix"]
    assert f"python -m pip install -e {project}`" in od510["fix"], od510["fix"]

    moved = _editable("moved")
    real = _editable_run(moved, tmp_path, "import edpkg")
    assert "No module named 'edpkg'" in real.stderr, real.stderr
    res = _editable_check(capsys, moved, tmp_path, "--static")
    (od501,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD501"]
    gone = moved.parent / "moved-src" / "edpkg"
    assert f"an editable install maps it to {gone}, which does not exist" in od501["message"]
    assert any("__editable___edpkg_0_1_finder.py" in e for e in od501["evidence"])
    assert "pip install -e DIR" in od501["fix"] and "pip uninstall edpkg" in od501["fix"]
    # a module of it asked for: the uninstall names the distribution (the finder's), not the
    # module — `pip uninstall lz4.frame` answered "not installed" (survey 24's F10)
    res = _editable_check(capsys, moved, tmp_path, "--static", "--package", "edpkg._fast")
    (od501,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD501"]
    assert "`python -m pip uninstall edpkg`" in od501["fix"], od501["fix"]


@pytest.mark.probe
def test_an_editable_install_loads_in_the_probe_as_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The full check of the healthy editable install: the probe imports edpkg through the
    finder and loads the in-place build the static view found."""
    venv = _editable("ok")
    res = _editable_check(capsys, venv, tmp_path)
    rep = res.json()["reports"][0]
    assert res.code == 0, [f["message"] for f in rep["findings"]]
    assert rep["sections"]["probe"]["outcome"] == "loaded"


def _installed(site: Path, name: str, version: str) -> None:
    """A distribution ``name`` ``version`` installed into ``site`` as pip lays one out: the
    package and a dist-info whose RECORD lists its files."""
    pkg = site / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n"
                                 f"{info.name}/RECORD,,\n")


def test_a_package_whose_import_runs_another_release_of_its_dependency_says_which(
        tmp_path: Path) -> None:
    """Survey 13: a `--target` site on PYTHONPATH that brought its own torch 2.14.1 hid the
    environment's torch 2.13.0+cpu, and a check of torchvision there said nothing of it (it
    analyses the first, as the job runs it). A package whose ``__init__`` imports a
    dependency installed at two releases on sys.path gets an OD502 note naming both; two
    installs of one release get none."""
    first, second, own = tmp_path / "first", tmp_path / "second", tmp_path / "own"
    _installed(first, "depx", "1.0")
    _installed(second, "depx", "2.0")
    pkg = own / "usesdep"
    pkg.mkdir(parents=True)
    _c_extension(tmp_path, pkg, "_core")
    (pkg / "__init__.py").write_text("import depx\nfrom . import _core\n")
    path = os.pathsep.join(str(d) for d in (own, first, second))
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": path}
    real = subprocess.run([sys.executable, "-c", "import usesdep, depx; print(depx.__version__,"
                           " usesdep._core.answer())"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert real.stdout.split() == ["1.0", "42"], real.stdout + real.stderr
    report = chain(tmp_path, "usesdep", probe=False, env={"PYTHONPATH": path}, path=pkg)
    (note,) = [f for f in report.findings if f.code == "OD502"]
    assert note.severity is Severity.INFO and note.subject == "depx"
    assert "import depx (from usesdep) runs depx 1.0" in note.message
    assert "depx 2.0 later on sys.path is hidden" in note.message
    assert any(str(second / "depx") in e for e in note.evidence)
    shutil.rmtree(second)
    _installed(second, "depx", "1.0")  # the same release twice: nothing worth a line
    from opdoctor.facts import commandcache
    commandcache.clear()  # another command: what the last one read of the sites is gone
    report = chain(tmp_path, "usesdep", probe=False, env={"PYTHONPATH": path}, path=pkg)
    assert not [f for f in report.findings if f.code == "OD502"]


@pytest.mark.parametrize(("variant", "words"), [
    # strict mode: a link tree of symbolic links on sys.path; the built file one points at
    # was deleted (it was OD503 "no file for this interpreter: only _fast…so", naming the
    # very file it wanted, with a --force-reinstall fix: survey 14's P1)
    ("strict-unbuilt", "is a symbolic link to"),
    # compat mode: a .pth line puts the project on sys.path (its fix was "include it in
    # package_data": survey 14's P2)
    ("compat-unbuilt", "no module _fast in"),
])
def test_an_editable_install_of_another_mode_without_its_build_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], variant: str, words: str) -> None:
    venv = _editable(variant)
    real = _editable_run(venv, tmp_path, "import edpkg")
    assert "cannot import name '_fast'" in real.stderr, real.stderr
    res = _editable_check(capsys, venv, tmp_path, "--static")
    (od510,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD510"]
    assert res.code == 1 and words in od510["message"], od510["message"]
    assert "OD503" not in [f["code"] for f in res.json()["reports"][0]["findings"]]
    project = venv.parent / f"{variant}-src"
    assert "edpkg is an editable install (__editable__.edpkg-0.1.pth puts " in od510["fix"]
    assert f"python -m pip install -e {project}`" in od510["fix"], od510["fix"]


def test_a_pth_editable_install_whose_tree_is_gone_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compat mode's .pth line names the moved project: Python skips a directory that does not
    exist, so `No module named 'edpkg'`; OD501 names the .pth and the directory (it was the
    plain "no package", with `pip install .` as the fix: survey 14's P2)."""
    venv = _editable("compat-moved")
    real = _editable_run(venv, tmp_path, "import edpkg")
    assert "No module named 'edpkg'" in real.stderr, real.stderr
    res = _editable_check(capsys, venv, tmp_path, "--static")
    (od501,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD501"]
    gone = venv.parent / "compat-moved-src"
    assert (f"an editable install (__editable__.edpkg-0.1.pth) puts {gone} on sys.path, which "
            "does not exist") in od501["message"], od501["message"]
    assert "pip install -e DIR" in od501["fix"] and "pip uninstall edpkg" in od501["fix"]


def _skbc(variant: str) -> Path:
    return _installed_venv("skbc", variant)


def test_a_scikit_build_core_editable_install_is_followed_through_its_hook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """scikit-build-core's editable mode keeps the sources in the tree and installs the
    compiled module into site-packages; its import hook (``_editable_skbc_skpkg.py``)
    redirects skpkg._fast there. The healthy install was OD510 "no module _fast" — an error
    with --static, the compiled module never analysed (survey 14's P6). Its ``install(…)``
    call is read (not run): the module is followed to site-packages and checked; deleted,
    it is OD510 saying where the hook points, with the editable rebuild."""
    ok = _skbc("ok")
    real = _editable_run(ok, tmp_path, "import skpkg; print(skpkg.answer(), skpkg._fast.__file__)")
    site_so = next(ok.glob("lib/python3*/site-packages/skpkg/_fast*.so"))
    assert real.stdout.split() == ["42", str(site_so)], real.stdout + real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--python", str(ok / "bin" / "python"),
              "--package", "skpkg", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 0 and rep["target"]["path"] == str(site_so), rep["findings"]
    assert not [f for f in rep["findings"] if f["severity"] != "info"], rep["findings"]
    gone = _skbc("gone")
    real = _editable_run(gone, tmp_path, "import skpkg")
    assert "cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--python",
              str(gone / "bin" / "python"), "--package", "skpkg", "--cwd", str(tmp_path))
    (od510,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD510"]
    assert res.code == 1 and "an editable install's import hook maps skpkg._fast to" in \
        od510["message"], od510["message"]
    assert f"python -m pip install -e {gone.parent / 'gone-src'}`" in od510["fix"]


def test_a_sibling_package_whose_import_fails_fails_the_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 14's P3: edpkg_extra's `__init__` does `from edpkg import answer`; edpkg (the
    same distribution) has no built _fast, so `import edpkg_extra` fails — and `--static`
    said "No problem found", exit 0, the walk stopping at the absolute import. The first-party
    package is followed: OD510 on edpkg_extra naming edpkg's failing line, with the editable
    rebuild; with edpkg built, nothing."""
    unbuilt = _editable("unbuilt")
    real = _editable_run(unbuilt, tmp_path, "import edpkg_extra")
    assert "cannot import name '_fast'" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--python",
              str(unbuilt / "bin" / "python"), "--package", "edpkg_extra", "--cwd",
              str(tmp_path))
    rep = res.json()["reports"][0]
    (od510,) = [f for f in rep["findings"] if f["code"] == "OD510"]
    assert res.code == 1 and od510["message"].startswith(
        "edpkg_extra imports edpkg (of the same distribution) at module level, whose import "
        "fails: edpkg._fast: no module _fast"), od510["message"]
    assert "edpkg/__init__.py:1: from . import _fast" in od510["evidence"]
    assert "pip install -e" in od510["fix"]
    ok = _editable("ok")
    assert _editable_run(ok, tmp_path, "import edpkg_extra").returncode == 0
    res = cli(capsys, "check", "--static", "-f", "json", "--python", str(ok / "bin" / "python"),
              "--package", "edpkg_extra", "--cwd", str(tmp_path))
    assert res.code == 0 and not [f for f in res.json()["reports"][0]["findings"]
                                  if f["severity"] != "info"]


@pytest.mark.probe
def test_a_probe_whose_import_failed_claims_no_cause_clean(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 14's O2: beside an import that failed before any library loaded (the editable
    install without its build), the report said "✓ Cause 2 — library path: no problem found
    (checked by probe)". A probe that did not load anything established nothing: it no longer
    counts as a check of a cause it found nothing of."""
    venv = _editable("unbuilt")
    res = _editable_check(capsys, venv, tmp_path)
    rep = res.json()["reports"][0]
    assert rep["sections"]["probe"]["outcome"] == "load failed"
    causes = {c["cause"]: c for c in rep["causes"]}
    assert causes[2]["state"] == "not_checked", causes[2]
    assert 'probe: its run ended "load failed" before it could tell' in causes[2]["reason"]
    assert all("probe" not in c["reason"] for c in causes.values() if c["state"] == "clean")
    ok = _editable_check(capsys, _editable("ok"), tmp_path)  # a probe that loaded: counts
    assert any("probe" in c["reason"] for c in ok.json()["reports"][0]["causes"]
               if c["state"] == "clean")


_REWRAP = (
    "import ctypes, os, warnings\n"
    "class LibError(Exception):\n    pass\n"
    "def _register():\n"
    "    try:\n"
    "        ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libk.so'))\n"
    "    except OSError as exc:\n"
    "        raise LibError('cannot load the kernels') from exc\n"
    "try:\n    _register()\nexcept {caught} as e:\n"
    "    warnings.warn(f'without kernels: {{e}}')\n    LOADED = False\n")


@pytest.mark.parametrize(("caught", "imports"), [("LibError", True), ("ValueError", False)])
def test_a_load_error_re_raised_as_the_packages_own_type_is_seen_caught(
        tmp_path: Path, caught: str, imports: bool) -> None:
    """xformers 0.0.35 (survey 15's F4): the load's OSError is re-raised in a function as the
    package's own exception, which the module-level call catches — Python's import goes on
    without the library, and the chain line says the failure is caught. Caught as another
    type, the import really fails, and the line is no caught load."""
    _write(tmp_path, {"rw/__init__.py": _REWRAP.format(caught=caught),
                      "rw/libk.so": "not a shared object\n"})
    real = subprocess.run([sys.executable, "-c", "import rw"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert (real.returncode == 0) is imports, real.stderr
    assert ("without kernels" in real.stderr) is imports
    report = chain(tmp_path, "rw", probe=False, path=tmp_path / "rw" / "libk.so")
    load = next(li for li in report.sections["import-chain"]["links"]
                if li["kind"] == "cdll")
    assert not load["swallowed"]  # the import runs the load (a probe sees it fail: OD512)
    assert load["caught_by_caller"].startswith("except LibError: (line 11)") is imports
    import io

    from opdoctor.report import text as text_report
    from opdoctor.report.layout import Printer

    out = io.StringIO()
    text_report._chain(Printer(out, None), report.sections["import-chain"], "", frozenset())
    line = next(ln for ln in out.getvalue().splitlines() if "ctypes.CDLL" in ln)
    assert ("(a failure is caught: except LibError)" in line) is imports, line


@pytest.mark.probe
def test_a_subpackage_loading_the_op_library_above_it_by_a_computed_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """open3d 0.20's open3d.ml.torch (survey 17) runs ``torch.ops.load_library(os.path.join(
    _this_dir, '..', '..', _lib_name))`` with a name computed at run time: the library,
    open3d/open3d_torch_ops.so, is built for a CUDA torch. `check --package open3d.ml.torch`
    said "no compiled library" and, with --static, exit 0. The op libraries of the top-level
    package that link the framework of the computed load are what the subpackage loads."""
    from tests.test_loader import torch_lib_dir

    top = tmp_path / "topo"
    sub = top / "ml" / "torchops"
    sub.mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "ml" / "__init__.py").write_text("")
    (top / "_cfg.py").write_text("NAME = ''.join(reversed('os.spo_hcrot_opot'))\n")
    (sub / "__init__.py").write_text(
        "import os\nimport torch\nfrom topo import _cfg\n"
        "_lib = os.path.join(os.path.dirname(__file__), '..', '..', _cfg.NAME)\n"
        "torch.ops.load_library(_lib)\n")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "s.c").write_text("int stub_fn(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libc10_cuda.so", "-o",
                    str(stub / "libc10_cuda.so"), str(stub / "s.c")], check=True, timeout=60)
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(top / "topo_torch_ops.so"),
                    str(tmp_path / "op.c"), f"-L{torch_lib_dir()}", "-Wl,--no-as-needed",
                    "-lc10", str(stub / "libc10_cuda.so")], check=True, timeout=60)
    shutil.rmtree(stub)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import topo.ml.torchops"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert "libc10_cuda.so: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path),
              "--package", "topo.ml.torchops")
    (rep,) = res.json()["reports"]
    assert res.code == 1
    assert rep["target"]["path"] == str(top / "topo_torch_ops.so")
    assert rep["diagnosis"]["root_findings"][0] == "OD307"


@pytest.mark.probe
def test_a_missing_requirement_the_import_fails_on_leads_over_optional_cuda_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """auto-gptq 0.7.1 without its requirements (survey 17): every load of its CUDA kernels
    (built for a CUDA torch) is inside ``try … except``, and the import dies on ``No module
    named 'accelerate'``. The verdict was the CUDA build (cause 3), whose fix would not make
    the import work; it is the missing requirement the probe saw the import fail on (cause 5),
    with the CUDA build still reported beside it."""
    from tests.test_loader import torch_lib_dir

    site = tmp_path / "site"
    _write(site, {
        "gqpkg/__init__.py": "try:\n    from gqpkg import _kern\nexcept Exception:\n"
                             "    _kern = None\nimport absent_accel\n",
        "gqpkg-1.0.dist-info/METADATA": "Name: gqpkg\nVersion: 1.0\n"
                                        "Requires-Dist: absent-accel>=0.26\n",
        "gqpkg-1.0.dist-info/RECORD": "gqpkg/__init__.py,,\n"})
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "s.c").write_text("int stub_fn(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libc10_cuda.so", "-o",
                    str(stub / "libc10_cuda.so"), str(stub / "s.c")], check=True, timeout=60)
    import sysconfig

    kern = site / "gqpkg" / ("_kern" + sysconfig.get_config_var("EXT_SUFFIX"))
    (tmp_path / "k.c").write_text("void* PyInit__kern(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(kern), str(tmp_path / "k.c"),
                    f"-L{torch_lib_dir()}", "-Wl,--no-as-needed", "-lc10",
                    str(stub / "libc10_cuda.so")], check=True, timeout=60)
    shutil.rmtree(stub)
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import gqpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.stderr.strip().splitlines()[-1] == \
        "ModuleNotFoundError: No module named 'absent_accel'", real.stderr
    report = chain(tmp_path, "gqpkg", env=env, path=kern)
    diag = report.diagnosis
    assert diag.cause == 5 and [r.code for r in diag.root_findings] == ["OD514"], diag
    assert [f.code for f in diag.consequences["OD514"]] == ["OD511"]
    assert "OD307" in [f.code for f in report.findings]  # the CUDA build, still said
    # the probe line says what the import did, not that the library was executed
    text = cli(capsys, "check", "--cwd", str(tmp_path), "--env", f"PYTHONPATH={site}",
               "--package", "gqpkg").out
    assert f"`import gqpkg` failed (No module named 'absent_accel'); it did not load " \
        f"{kern.name}" in text, text[-800:]


@pytest.mark.probe
@pytest.mark.parametrize(("init", "failing", "raised"), [
    # flashinfer 0.7.4: jit/core.py's `import tvm_ffi` (apache-tvm-ffi), run at import
    ("def _load():\n    import tvmlike_ffi\n_load()\n", "apache-tvmlike-ffi",
     "ModuleNotFoundError: No module named 'tvmlike_ffi'"),
    # fairseq2n 0.8.1: CDLL("libtbb.so.12") of the tbb wheel, its failure in its own words
    ("import ctypes\ntry:\n    ctypes.CDLL('libfaketbb.so.12')\nexcept OSError:\n"
     "    raise OSError('rqpkg requires Intel oneFAKETBB, normally installed with it') "
     "from None\n", "faketbb",
     "OSError: rqpkg requires Intel oneFAKETBB, normally installed with it"),
    # cryptography 51: its Rust extension imports cffi's module, named otherwise (here a
    # name computed at run time: no static reading sees the import either)
    ("import importlib\nimportlib.import_module('_cffi' + '_backend')\n", "cffi",
     "ModuleNotFoundError: No module named '_cffi_backend'"),
])
def test_a_requirement_the_import_fails_on_is_named_as_the_failure(
        tmp_path: Path, init: str, failing: str, raised: str) -> None:
    """Survey 17's F2: OD514 said "its import does not reach it (its first use may)" of the
    very requirement the probe's import failed on (a module or library named unlike its
    distribution). A requirement the error names is the failure (an error that explains the
    import's); of one it does not name, nothing is claimed but that the import failed first.
    A module its distribution names otherwise (cffi's _cffi_backend) is that distribution's."""
    if failing == "cffi" and importlib.util.find_spec("_cffi_backend") is not None:
        pytest.skip("cffi is installed here: its module imports")
    site = tmp_path / "site"
    _write(site, {
        "rqpkg/__init__.py": init,
        "rqpkg-1.0.dist-info/METADATA": f"Name: rqpkg\nVersion: 1.0\nRequires-Dist: "
                                        f"{failing}>=1.0\nRequires-Dist: clicky\n",
        "rqpkg-1.0.dist-info/RECORD": "rqpkg/__init__.py,,\n"})
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import rqpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.stderr.strip().splitlines()[-1] == raised, real.stderr
    report = chain(tmp_path, "rqpkg", env=env, path=site / "rqpkg")
    od514 = {f.subject: f for f in report.findings if f.code == "OD514"}
    assert od514[failing].severity is Severity.ERROR
    assert "which is not installed; the import fails on it" in od514[failing].message
    assert od514["clicky"].severity is Severity.WARNING
    assert od514["clicky"].message.endswith("the import fails on another error first: whether "
                                            "it reaches it is not known (its first use may "
                                            "need it)")
    diag = report.diagnosis
    assert diag.cause == 5 and [r.subject for r in diag.root_findings] == [failing], diag
    assert [f.code for f in diag.consequences["OD514"]] == ["OD511"]


def test_an_import_under_a_condition_no_static_reading_decides_is_no_sure_failure(
        tmp_path: Path) -> None:
    """tensorflow-graphics 2021.12.3 (survey 17): `__init__` imports its subpackages only
    `if _import_tfg_docs():` (an environment variable set for building its documentation);
    `--static` reported their module-level imports of uninstalled requirements as errors
    ("import tensorflow_graphics runs import tensorflow_addons") of a package that imports.
    Under a condition the static reading cannot decide they are warnings."""
    site = tmp_path / "site"
    _write(site, {
        "envpkg/__init__.py": "from envpkg.util import _docs\nif _docs():\n"
                              "    from envpkg import image\n__version__ = '1.0'\n",
        "envpkg/util.py": "import os\n\n\ndef _docs():\n"
                          "    return os.getenv('ENVPKG_DOC_IMPORTS', '0') == '1'\n",
        "envpkg/image.py": "import absent_addons\n",
        "envpkg-1.0.dist-info/METADATA": "Name: envpkg\nVersion: 1.0\n"
                                         "Requires-Dist: absent-addons\n",
        "envpkg-1.0.dist-info/RECORD": "envpkg/__init__.py,,\n"})
    env = {"PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import envpkg"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert real.returncode == 0, real.stderr
    report = chain(tmp_path, "envpkg", probe=False, env=env, path=site / "envpkg")
    od514 = [f for f in report.findings if f.code == "OD514"]
    assert [(f.subject, f.severity) for f in od514] == [("absent-addons", Severity.WARNING)]
    assert not [f for f in report.findings if f.severity is Severity.ERROR]


@pytest.mark.probe
def test_identical_copies_of_a_library_in_a_package_are_checked_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fairseq2n 0.8.1 (survey 17): a wheel holds no symlinks, so its lib/ has
    libfairseq2n.so, .so.0 and .so.0.8.0 as three identical files, and each got a full
    report (the same errors three times). Identical files are one library: checked once,
    under the name its SONAME gives it (what a dependent's NEEDED asks the loader for)."""
    from tests.test_loader import torch_lib_dir

    pkg = tmp_path / "copypkg"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "_where.py").write_text("NAME = ''.join(reversed('0.os.ypocbil'))\n")
    (pkg / "__init__.py").write_text(
        "import os\nimport torch\nfrom copypkg import _where\n"
        "torch.ops.load_library(os.path.join(os.path.dirname(__file__), 'lib', _where.NAME))\n")
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    first = pkg / "lib" / "libcopy.so.0.1.0"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcopy.so.0", "-o", str(first),
                    str(tmp_path / "op.c"), f"-L{torch_lib_dir()}", "-Wl,--no-as-needed",
                    "-lc10"], check=True, timeout=60)
    for name in ("libcopy.so", "libcopy.so.0"):
        shutil.copy(first, pkg / "lib" / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import copypkg"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert real.returncode == 0, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path),
              "--package", "copypkg")
    paths = [r["target"]["path"] for r in res.json()["reports"]]
    assert paths == [str(pkg / "lib" / "libcopy.so.0")], paths


@pytest.mark.probe
def test_a_load_five_modules_below_the_package_is_followed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """struct2tensor 0.48.1: `import struct2tensor` reaches `ops/gen_decode_proto_map_op.py`
    (its `load_library`) through five modules; the walk stopped four deep, knew only a
    library loaded higher up and checked that one, "`import struct2tensor` fails at
    _decode_proto_map_op.so, not at this library" (survey 17's F7). Five levels are
    followed: the report is on the library the import fails at."""
    import importlib.util
    import sysconfig

    from opdoctor.facts import pychain
    from tests.conftest import reference
    from tests.torchfork import run_python

    site = tmp_path / "site"
    pkg = site / "deepchain"
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    torch_lib = str(Path(spec.origin).parent / "lib")
    _write(pkg, {
        "__init__.py": "from . import a  # noqa: F401\n",
        "a.py": "from . import b  # noqa: F401\nfrom .ops import gen_ok  # noqa: F401\n",
        "b.py": "from . import c  # noqa: F401\n",
        "c.py": "from . import d  # noqa: F401\n",
        "d.py": "from .ops import gen_deep  # noqa: F401\n",
        "ops/__init__.py": "",
        "ops/gen_deep.py": "import os, torch\ntorch.ops.load_library(os.path.join("
                           "os.path.dirname(__file__), '_deep_op.so'))\n",
        "ops/gen_ok.py": "import os, torch\ntorch.ops.load_library(os.path.join("
                         "os.path.dirname(__file__), '_ok_op.so'))\n",
        "stub/addon.c": "void _ZN3c104impl14removed_in_2_10Ev(void);\n"
                        "void addon(void) { _ZN3c104impl14removed_in_2_10Ev(); }\n",
    })
    (pkg / "ops" / "_ok_op.so").write_bytes(reference().read_bytes())
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "ops" / "_deep_op.so"),
                    str(pkg / "stub" / "addon.c"), "-Wl,--no-as-needed", "-L", torch_lib,
                    "-lc10"], check=True, timeout=60)
    shutil.rmtree(pkg / "stub")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    real = run_python("import torch, deepchain", env=env, timeout=300)
    assert "_deep_op.so: undefined symbol: _ZN3c104impl14removed_in_2_10Ev" in real.stderr, \
        real.stderr[-2000:]
    chain = pychain.analyse("deepchain", [str(site)], str(sysconfig.get_config_var("EXT_SUFFIX")),
                            str(tmp_path))
    loads = [os.path.basename(r) for lk in chain.links if lk.kind == "load_library"
             for r in lk.resolved]
    assert loads == ["_deep_op.so", "_ok_op.so"], loads
    res = cli(capsys, "check", "-f", "json", "--static", "--cwd", "/", "--env",
              f"PYTHONPATH={site}", "--package", "deepchain")
    assert [os.path.basename(r["target"]["path"]) for r in res.json()["reports"]] == \
        ["_deep_op.so"]
    assert res.code == 1


@pytest.mark.probe
def test_a_requirements_library_its_record_lists_and_the_disk_lacks_is_a_partial_install(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W3: numba's import runs llvmlite's ctypes load of its own
    llvmlite/binding/libllvmlite.so, which llvmlite's RECORD lists and the disk lacked. The
    check crashed (exit 4: the variant check read the build of a file that is not there), and
    the verdict was "libllvmlite.so was not found by the real loader" with an RPATH fix. Here
    a package ``aa`` loads ``bb/libbb.so`` by its path the same way; bb's RECORD lists it, the
    file is gone: OD508 for bb is the root, with its reinstall into the --target directory
    the copy is in, and the real loader's miss confirms it."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    (site / "aa").mkdir(parents=True)
    (site / "bb").mkdir()
    (site / "aa" / "__init__.py").write_text(
        "import ctypes, os\nimport bb\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(bb.__file__), 'libbb.so'))\n")
    (site / "bb" / "__init__.py").write_text("")
    dist_info(site, "aa", "1.0", ["aa/__init__.py"], requires=("bb",))
    dist_info(site, "bb", "2.0", ["bb/__init__.py", "bb/libbb.so"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import aa"], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(site)}, timeout=60)
    assert real.returncode != 0 and "libbb.so: cannot open shared object file" in real.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "aa", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path))
    assert res.code == 1 and "internal error" not in res.err, res.err
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"] == ["OD508"], rep["diagnosis"]
    od508 = next(f for f in rep["findings"] if f["code"] == "OD508")
    assert od508["subject"] == "bb 2.0" and "bb/libbb.so is missing" in od508["message"]
    assert od508["fix"].startswith(
        f"pip install --force-reinstall --no-deps --upgrade --target {site} 'bb==2.0'"), \
        od508["fix"]
    assert "OD220" in rep["diagnosis"]["consequences"]["OD508"], rep["diagnosis"]


def test_a_partial_install_on_pythonpath_is_reinstalled_where_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's S1: a distribution installed with `pip install --target DIR` and found on
    PYTHONPATH, whose RECORD lists a file the disk lacks: OD508's `pip install
    --force-reinstall --no-deps 'x==v'` repaired the interpreter's own copy and left the
    broken one first on sys.path; the reinstall goes to DIR now (and stays plain for the
    interpreter's own site-packages)."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    (site / "cc").mkdir(parents=True)
    (site / "cc" / "__init__.py").write_text("from . import helper\n")
    dist_info(site, "cc", "3.0", ["cc/__init__.py", "cc/helper.py"])
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "cc", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    od508 = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD508"]
    assert od508 and od508[0]["fix"].startswith(
        f"pip install --force-reinstall --no-deps --upgrade --target {site} 'cc==3.0'"), od508


def test_a_load_of_what_find_library_finds_is_no_swallowed_extension(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's F2: pyerfa 2.0.1.5's version check runs `CDLL(util.find_library('erfa'))`
    inside `try … except Exception: pass` (only to word a better error about a system
    liberfa); its extension is bundled. OD509 warned that the load's error is discarded: a
    name ctypes.util.find_library looks up in the system (or None) is the package probing for
    a system library, as a bare name is — not a file of its own whose failure it hides."""
    site = tmp_path / "site"
    pkg = site / "erfalike"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import core\nfrom .version import v\n")
    (pkg / "core.py").write_text("x = 1\n")
    (pkg / "version.py").write_text(
        "try:\n    from . import core\nexcept ImportError:\n    try:\n"
        "        from ctypes import CDLL, util\n        lib = CDLL(util.find_library('erfa'))\n"
        "    except Exception:\n        pass\n    raise\nv = '1.0'\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import erfalike; print(erfalike.v)"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(site)},
                          timeout=60)
    assert real.returncode == 0 and real.stdout.strip() == "1.0", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "erfalike", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    codes = [f["code"] for f in res.json()["reports"][0]["findings"]]
    assert res.code == 0 and "OD509" not in codes, codes
    # the package's own file loaded the same way still is one
    (pkg / "version.py").write_text(
        "try:\n    from ctypes import CDLL\n    import os\n"
        "    lib = CDLL(os.path.join(os.path.dirname(__file__), 'libown.so'))\n"
        "except Exception:\n    pass\nv = '1.0'\n")
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "erfalike", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    assert "OD509" in [f["code"] for f in res.json()["reports"][0]["findings"]]


@pytest.mark.probe
def test_a_framework_shadowed_by_a_module_file_is_the_root_not_its_libraries(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W1: a `torch.py` experiment first on PYTHONPATH, beside fbgemm-gpu-cpu: the
    package's `import torch` picks the file, torch's libraries are never loaded, and the check
    said "libtorch_cpu.so is not found" with patchelf in every report. The reference op's
    package (import torch; torch.ops.load_library of libmyop.so) under such a file: OD502 for
    torch — the file, the installed torch it hides — is the root, and the libraries of torch
    not found are its consequences."""
    from tests.conftest import reference

    site = tmp_path / "site"
    site.mkdir()
    make_package(site, "refop", {"libmyop.so": reference()},
                 "import os, torch\ntorch.ops.load_library(os.path.join("
                 "os.path.dirname(__file__), 'libmyop.so'))\n")
    shadow = tmp_path / "work"
    shadow.mkdir()
    (shadow / "torch.py").write_text("print('my torch experiment')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    path = os.pathsep.join([str(shadow), str(site)])
    real = subprocess.run([sys.executable, "-c", "import refop"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": path}, timeout=120)
    assert real.returncode != 0 and "my torch experiment" in real.stdout, real.stderr[-1500:]
    assert "has no attribute 'ops'" in real.stderr, real.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "refop", "--env",
              f"PYTHONPATH={path}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD502"], rep["diagnosis"]
    od502 = next(f for f in rep["findings"] if f["code"] == "OD502")
    assert od502["subject"] == "torch" and str(shadow / "torch.py") in od502["message"]
    assert f"rename {shadow / 'torch.py'}" in od502["fix"]
    missing = [f["subject"] for f in rep["findings"] if f["code"] == "OD201"]
    assert missing and all(m.startswith(("libtorch", "libc10")) for m in missing), missing
    assert "OD201" in rep["diagnosis"]["consequences"]["OD502"], rep["diagnosis"]


def test_a_requirement_shadowed_by_its_source_tree_is_named_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W2: NumPy's Python files (a source tree without its build) first on
    PYTHONPATH: a package whose import runs `import numpy` dies in NumPy's own "Importing the
    numpy C-extensions failed"; `--static` said nothing (exit 0). OD502 names the tree and the
    installed NumPy it hides. A copy that is itself installed (a --target site) is no such
    tree: nothing is said of it here."""
    import numpy

    tree = tmp_path / "src"
    shutil.copytree(Path(numpy.__file__).parent, tree / "numpy",
                    ignore=lambda d, names: [n for n in names if not (
                        n.endswith(".py") or os.path.isdir(os.path.join(d, n)))])
    site = tmp_path / "site"
    site.mkdir()
    make_package(site, "usesnp", {}, "import numpy\nVALUE = numpy.__name__\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    path = os.pathsep.join([str(tree), str(site)])
    real = subprocess.run([sys.executable, "-c", "import usesnp"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": path}, timeout=120)
    assert real.returncode != 0 and "numpy C-extensions failed" in real.stderr, \
        real.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "usesnp", "--env",
              f"PYTHONPATH={path}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD502"], rep["findings"]
    od502 = next(f for f in rep["findings"] if f["code"] == "OD502")
    assert od502["subject"] == "numpy" and "a directory without its compiled modules" in \
        od502["message"] and f"({Path(numpy.__file__).parent})" in od502["message"]
    # the same package without the tree: clean
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "usesnp", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    assert res.code == 0 and "OD502" not in res.out


def _static_od514_where_the_import_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         site: Path, package: str, missing: str
                                         ) -> tuple[Result, list[dict[str, str]]]:
    """The real import of ``package`` (``site`` on PYTHONPATH) fails on ``missing``; then the
    static check of the package and its OD514 findings."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", f"import {package}"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(site)}, timeout=60)
    assert f"No module named '{missing}'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", package, "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    return res, [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD514"]


def test_a_requirement_imported_deeper_than_the_link_walk_is_still_reached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 21's W9: kornia 0.8.1's `import kornia_rs` sits seven modules deep (__init__ →
    filters → bilateral → kernels → utils → image_print → io → io.py), each import
    unconditional; without kornia_rs `import kornia` fails. `--static` said "its import does not
    reach it" (a warning, exit 0): the walk that follows imports for compiled code stops five
    levels down. The package's own unconditional imports are followed by module name further."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    pkg = site / "deeppkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import m0\n")
    for i in range(7):
        (pkg / f"m{i}.py").write_text(f"from deeppkg.m{i + 1} import thing\n")
    (pkg / "m7.py").write_text("import absent_dep_xyz\nthing = 1\n")
    dist_info(site, "deeppkg", "1.0", ["deeppkg/__init__.py"] +
              [f"deeppkg/m{i}.py" for i in range(8)], requires=("absent-dep-xyz>=1",))
    res, od514 = _static_od514_where_the_import_fails(capsys, tmp_path, site, "deeppkg",
                                                      "absent_dep_xyz")
    assert res.code == 1 and od514 and od514[0]["severity"] == "error", od514
    assert "deeppkg/m7.py:1" in od514[0]["message"], od514[0]["message"]


@pytest.mark.probe
@pytest.mark.parametrize("needed", [False, True])
def test_a_missing_library_nothing_needs_is_a_warning_when_the_import_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], needed: bool) -> None:
    """Survey 21's W13: onnxruntime without libonnxruntime_providers_shared.so (its runtime
    dlopens it for GPU providers only): import and CPU inference work, and OD508 was an error
    (exit 1). A library the RECORD lists and the disk lacks, which no library of the package
    NEEDs, is a warning once the probe's import worked; one that a library of the package
    NEEDs stays an error (that library cannot load)."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    pkg = site / "rtpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    files = ["rtpkg/__init__.py", "rtpkg/libplugin.so"]
    if needed:
        (tmp_path / "p.c").write_text("int plugin_fn(void) { return 1; }\n")
        (tmp_path / "u.c").write_text("int plugin_fn(void);\nint user_fn(void) "
                                      "{ return plugin_fn(); }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libplugin.so", "-o",
                        str(tmp_path / "libplugin.so"), str(tmp_path / "p.c")], check=True,
                       timeout=60)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "libuser.so"),
                        str(tmp_path / "u.c"), "-L", str(tmp_path), "-lplugin"], check=True,
                       timeout=60)
        files.append("rtpkg/libuser.so")
    dist_info(site, "rtpkg", "1.0", files)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import rtpkg; print(rtpkg.VALUE)"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(site)},
                          timeout=60)
    assert real.returncode == 0 and real.stdout.strip() == "1", real.stderr
    res = cli(capsys, "check", "-f", "json", "--package", "rtpkg", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    od508 = [f for rep in res.json()["reports"] for f in rep["findings"] if f["code"] == "OD508"]
    assert od508 and od508[0]["severity"] == ("error" if needed else "warning"), od508


def test_an_import_after_a_semicolon_is_still_read(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The walk reads a module's import lines as text first and parses only a module that
    names something not installed: `import os; import absent_mod_abc` — two statements on
    one line, the second the one that fails — is parsed and reported (the real import fails
    on it)."""
    site = tmp_path / "site"
    make_package(site.mkdir() or site, "semipkg", {}, "from . import inner\n")
    (site / "semipkg" / "inner.py").write_text("import os; import absent_mod_abc\n")
    from tests.helpers import dist_info
    dist_info(site, "semipkg", "1.0", ["semipkg/__init__.py", "semipkg/inner.py"])
    _res, od514 = _static_od514_where_the_import_fails(capsys, tmp_path, site, "semipkg",
                                                       "absent_mod_abc")
    assert any("absent_mod_abc" in f["message"] for f in od514), od514


def _clean_static_package(capsys: pytest.CaptureFixture[str], tmp_path: Path, site: Path,
                          package: str, proof: str) -> list[tuple[str, str]]:
    """The package's real import (``proof`` prints "ok") works; the errors and warnings of
    ``check --static --package`` on it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", proof], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(site)}, timeout=60, cwd=tmp_path)
    assert real.returncode == 0 and real.stdout.strip() == "ok", real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", package, "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    return [(f["code"], f["message"]) for f in res.json()["reports"][0]["findings"]
            if f["severity"] in ("error", "warning")]


def test_a_module_attribute_the_import_system_sets_is_no_missing_submodule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22: oracledb 26.1.0's base.py says ``from . import __name__ as MODULE_NAME`` —
    the package's name, which the import system sets on every module. OD510 "no module
    __name__" was an error (exit 1) on a working package."""
    pkg = tmp_path / "site" / "oralike"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import base\n")
    (pkg / "base.py").write_text("from . import __name__ as MODULE_NAME\n")
    assert _clean_static_package(capsys, tmp_path, pkg.parent, "oralike",
                                 "import oralike.base as b; print('ok' if b.MODULE_NAME == "
                                 "'oralike' else b.MODULE_NAME)") == []


def test_what_a_fallback_module_imports_is_part_of_the_fallback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22: pyppmd 1.3.1 imports its C implementation, and only when that fails its
    CFFI one, whose module imports the CFFI build the wheel does not ship. The fallback import
    was not reported, but what the fallback's module imports was: OD510, exit 1, on a working
    package."""
    pkg = tmp_path / "site" / "ppmdlike"
    (pkg / "c").mkdir(parents=True)
    (pkg / "cffi").mkdir()
    (pkg / "__init__.py").write_text(
        "try:\n    from .c.c_impl import encode\nexcept ImportError:\n"
        "    from .cffi.cffi_impl import encode\n")
    (pkg / "c" / "c_impl.py").write_text("def encode(x):\n    return x\n")
    (pkg / "cffi" / "cffi_impl.py").write_text(
        "from ._cffi_build import lib\nencode = lib.encode\n")
    assert _clean_static_package(capsys, tmp_path, pkg.parent, "ppmdlike",
                                 "import sys, ppmdlike; print('ok' if ppmdlike.encode(1) == 1 "
                                 "and 'ppmdlike.cffi' not in sys.modules else 'cffi')") == []


def test_the_else_of_a_try_that_imports_a_module_runs_only_where_it_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22: healpy 1.20.1 imports its plotting module in the ``else`` of ``try: import
    matplotlib / except ImportError: pass``; that module imports matplotlib unconditionally.
    Without matplotlib the else never runs and ``import healpy`` works; OD514 warned "import
    healpy runs import matplotlib". The same module imported outside such a try still gets
    it."""
    pkg = tmp_path / "site" / "healike"
    pkg.mkdir(parents=True)
    absent = "plotlib_not_installed_anywhere"
    (pkg / "visu.py").write_text(f"import {absent}\ndef plot():\n    pass\n")
    from tests.helpers import dist_info
    dist_info(pkg.parent, "healike", "1.0", ["healike/__init__.py", "healike/visu.py"],
              requires=(f"{absent}; extra == 'all'",))  # healpy's matplotlib: an extra
    (pkg / "__init__.py").write_text(
        f"try:\n    import {absent}\nexcept ImportError:\n    pass\n"
        "else:\n    from .visu import plot\n")
    assert _clean_static_package(capsys, tmp_path, pkg.parent, "healike",
                                 "import healike; print('ok')") == []
    (pkg / "__init__.py").write_text("from .visu import plot\n")
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "healike", "--env",
              f"PYTHONPATH={pkg.parent}", "--cwd", str(tmp_path))
    assert any(f["code"] == "OD514" and absent in f["message"]
               for f in res.json()["reports"][0]["findings"]), res.out
    # Where the try's import works the else runs: a module it imports that is missing fails
    # the import (it was read as an existence test whatever the try imported: "No problem
    # found" over `try: import json … else: from . import _ext`).
    (pkg / "__init__.py").write_text("try:\n    import json\nexcept ImportError:\n    pass\n"
                                     "else:\n    from . import _ext\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import healike"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(pkg.parent)}, timeout=60,
                          cwd=tmp_path)
    assert "cannot import name '_ext'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "healike", "--env",
              f"PYTHONPATH={pkg.parent}", "--cwd", str(tmp_path))
    assert res.code == 1 and any(
        f["code"] == "OD510" and f["severity"] == "error" and "_ext" in f["message"]
        for f in res.json()["reports"][0]["findings"]), res.out


def test_a_distribution_whose_files_are_gone_gets_a_forced_reinstall(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's A8: torchvision/ deleted from site-packages, its dist-info left. OD501's fix
    was `python -m pip install .`; pip answers "Requirement already satisfied" for a plain
    install, since the metadata says it is there. The distribution is named and forced."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    site.mkdir()
    dist_info(site, "gonepkg", "1.2", ["gonepkg/__init__.py", "gonepkg/_ext.so"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import gonepkg"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(site)}, timeout=60,
                          cwd=tmp_path)
    assert "No module named 'gonepkg'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "gonepkg", "--env",
              f"PYTHONPATH={site}", "--cwd", str(tmp_path))
    (od501,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD501"]
    assert "gonepkg-1.2.dist-info says it is installed" in od501["message"], od501
    assert "--force-reinstall --no-deps" in od501["fix"] and "'gonepkg==1.2'" in od501["fix"]


def test_another_copy_of_a_module_the_distribution_installs_first_on_sys_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's E5: Debian's dist-packages on PYTHONPATH holds its own _cffi_backend
    (1.15.1), which comes before the one cffi 2.1.1 installed: `import cffi` works and
    `cffi.FFI()` raises "Version mismatch"; the check (which read cffi's own copy) said "No
    problem found". The same shape: a distribution that installs a package and a top-level
    backend module, and a stray older backend earlier on sys.path."""
    from tests.helpers import dist_info

    site, system = tmp_path / "site", tmp_path / "dist-packages"
    (site / "ffilike").mkdir(parents=True)
    system.mkdir()
    (site / "ffilike" / "__init__.py").write_text(
        "__version__ = '2.0'\n"
        "def FFI():\n    import _ffilike_backend as b\n"
        "    if b.__version__ != __version__:\n"
        "        raise Exception(f'Version mismatch: {__version__} vs {b.__version__} in '\n"
        "                        f'{b.__file__}')\n    return b\n")
    (site / "_ffilike_backend.py").write_text("__version__ = '2.0'\n")
    (system / "_ffilike_backend.py").write_text("__version__ = '1.0'\n")
    dist_info(site, "ffilike", "2.0", ["ffilike/__init__.py", "_ffilike_backend.py"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    path = f"{system}:{site}"
    real = subprocess.run([sys.executable, "-c", "import ffilike; ffilike.FFI()"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": path},
                          timeout=60, cwd=tmp_path)
    assert "Version mismatch: 2.0 vs 1.0" in real.stderr, real.stderr
    rep = _static_package_report(capsys, tmp_path, path, "ffilike")
    od502 = [f for f in rep["findings"] if f["code"] == "OD502"]
    assert [f["severity"] for f in od502] == ["error"], rep["findings"]
    assert f"picks {system / '_ffilike_backend.py'}" in od502[0]["message"]
    # its own copy first: nothing
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "ffilike", "--env",
              f"PYTHONPATH={site}:{system}", "--cwd", str(tmp_path)).json()["reports"][0]
    assert "OD502" not in [f["code"] for f in rep["findings"]], rep["findings"]


def test_another_pythons_build_on_pythonpath_before_an_install_for_this_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's E1: numpy 2.5.5 for CPython 3.12 unpacked with `pip install --target
    --python-version 3.12` onto PYTHONPATH, numpy 2.4.6 installed for this Python behind it.
    OD503's fix "pip install --force-reinstall --no-deps 'numpy==2.5.5'" named a release with
    no wheel for this Python, into a site the PYTHONPATH copy still beats. The copy on
    PYTHONPATH is what to take away."""
    from tests.helpers import dist_info

    other = tmp_path / "py312"
    (other / "twopy").mkdir(parents=True)
    (other / "twopy" / "__init__.py").write_text("from . import _core\n")
    (tmp_path / "c.c").write_text("int x;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o",
                    str(other / "twopy" / "_core.cpython-312-x86_64-linux-gnu.so"),
                    str(tmp_path / "c.c")], check=True, timeout=60)
    dist_info(other, "twopy", "2.5", ["twopy/__init__.py",
                                      "twopy/_core.cpython-312-x86_64-linux-gnu.so"],
              wheel_tag="cp312-cp312-manylinux_2_28_x86_64")
    site = tmp_path / "venv" / "site-packages"
    (site / "twopy").mkdir(parents=True)
    (site / "twopy" / "__init__.py").write_text("from . import _core\n")
    (site / "twopy" / "_core.py").write_text("x = 1\n")
    dist_info(site, "twopy", "2.4", ["twopy/__init__.py", "twopy/_core.py"])
    path = f"{other}:{site}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import twopy"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": path}, timeout=60, cwd=tmp_path)
    assert "cannot import name '_core'" in real.stderr, real.stderr
    assert subprocess.run([sys.executable, "-c", "import twopy"], env={
        **env, "PYTHONPATH": str(site)}, timeout=60, cwd=tmp_path).returncode == 0
    rep = _static_package_report(capsys, tmp_path, path, "twopy")
    (od503,) = [f for f in rep["findings"] if f["code"] == "OD503"]
    assert od503["fix"].startswith(f"take {other} off sys.path for this job (PYTHONPATH): "
                                   f"twopy 2.4, installed for this Python"), od503["fix"]


def test_two_releases_installed_over_each_other_are_named_with_a_clean_reinstall(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's A3, A5: `pip install --target T` of torchvision 0.29.1 into a T that held
    0.28.0 (no --upgrade) keeps 0.28.0's files and adds 0.29.1's metadata; a wheel unpacked
    over an install does the same the other way. The fix "install the torchvision release
    built for torch 2.14.1" got "Requirement already satisfied". Here the files say 0.28 and
    Python's metadata lists both releases installed."""
    from tests.helpers import dist_info

    target = tmp_path / "target"
    (target / "mixpkg").mkdir(parents=True)
    (target / "mixpkg" / "__init__.py").write_text("__version__ = '0.28.0'\n")
    for release in ("0.28.0", "0.29.1"):
        dist_info(target, "mixpkg", release, ["mixpkg/__init__.py"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import mixpkg, importlib.metadata as m; "
                           "print(mixpkg.__version__, *sorted(d.version for d in "
                           "m.distributions(name='mixpkg')))"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(target)}, timeout=60,
                          cwd=tmp_path)
    assert real.stdout.split() == ["0.28.0", "0.28.0", "0.29.1"], real.stderr
    rep = _static_package_report(capsys, tmp_path, target, "mixpkg")
    (od508,) = [f for f in rep["findings"] if f["code"] == "OD508"]
    assert "2 releases of mixpkg are recorded" in od508["message"], od508
    assert f"--target {target} 'mixpkg==<the release you want: 0.28.0 or 0.29.1>'" in \
        od508["fix"] and "mixpkg-0.28.0.dist-info" in od508["fix"], od508["fix"]


def test_a_package_in_the_user_site_the_job_turns_off_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's B5: torch_scatter installed with `pip install --user`, the job run with
    PYTHONNOUSERSITE=1: "No module named 'torch_scatter'", and OD501 said `pip install .`
    without why. The user site holds it and the variable keeps it off sys.path."""
    base = tmp_path / "userbase"
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    pkg = base / "lib" / f"python{ver}" / "site-packages" / "userpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    env["PYTHONUSERBASE"] = str(base)
    # the interpreter the venv was made from: a venv turns the user site off by itself
    python = os.path.join(sys.base_prefix, "bin", f"python{ver}")
    on = subprocess.run([python, "-c", "import userpkg"], env=env, timeout=60,
                        cwd=tmp_path, capture_output=True, text=True)
    off = subprocess.run([python, "-c", "import userpkg"], timeout=60, cwd=tmp_path,
                         env={**env, "PYTHONNOUSERSITE": "1"}, capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    assert "No module named 'userpkg'" in off.stderr, off.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "userpkg", "--python",
              python, "--env", f"PYTHONUSERBASE={base}", "--env", "PYTHONNOUSERSITE=1", "--cwd",
              str(tmp_path)).json()["reports"][0]
    (od501,) = [f for f in rep["findings"] if f["code"] == "OD501"]
    assert "which PYTHONNOUSERSITE turns off" in od501["message"], od501
    assert od501["fix"].startswith("unset PYTHONNOUSERSITE")


def test_a_requirement_release_without_a_submodule_the_import_needs_is_an_error_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's B3: numpy 1.23.5 in a user site hides numpy 2.4.6, and scipy 1.17.1's
    import runs `from numpy.exceptions import …` unconditionally: it fails whatever happens,
    and `--static` said only OD327 "a warning" (exit 0). An unconditional import of a
    submodule the installed release lacks makes it an error; a release that has it stays a
    warning (the range alone does not say the import fails)."""
    from tests.helpers import dist_info

    site, old = tmp_path / "site", tmp_path / "old"
    (site / "needsub").mkdir(parents=True)
    (site / "needsub" / "__init__.py").write_text("from subreq.exceptions import Oops\n")
    dist_info(site, "needsub", "1.0", ["needsub/__init__.py"], requires=("subreq>=2",))
    (old / "subreq").mkdir(parents=True)
    (old / "subreq" / "__init__.py").write_text("")
    dist_info(old, "subreq", "1.0", ["subreq/__init__.py"])
    path = f"{old}:{site}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import needsub"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": path}, timeout=60, cwd=tmp_path)
    assert "No module named 'subreq.exceptions'" in real.stderr, real.stderr

    def od327() -> dict[str, object]:
        rep = cli(capsys, "check", "-f", "json", "--static", "--package", "needsub", "--env",
                  f"PYTHONPATH={path}", "--cwd", str(tmp_path)).json()["reports"][0]
        (f,) = [f for f in rep["findings"] if f["code"] == "OD327"]
        return f

    f = od327()
    assert f["severity"] == "error" and "which has no subreq.exceptions" in f["message"], f
    (old / "subreq" / "exceptions.py").write_text("class Oops(Exception):\n    pass\n")
    assert od327()["severity"] == "warning"


def test_a_name_a_requirement_release_lacks_in_its_namespace_package_is_an_error_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24's F6: the real protobuf 4.25.8 first on PYTHONPATH of TensorFlow 2.21
    (requires protobuf>=6.31.1): the generated ``_pb2`` modules run ``from google.protobuf
    import runtime_version`` (protobuf 5.26+) and the import fails, while `--static` said
    OD327 "a warning", exit 0. protobuf's package is ``google.protobuf`` (``google`` is a
    namespace), and ``runtime_version`` a module it lacks: an error. A name the old release
    has (a module, or one its ``__init__`` binds) leaves the range a warning."""
    from tests.helpers import dist_info
    from tests.test_realpkg import _rp_site

    pb = _rp_site("protobuf-4.25.8")
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    path = f"{pb}:{site}"

    def user(imports: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
        pkg = site / "pbuser"
        if site.exists():
            import shutil

            shutil.rmtree(site)
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(imports)
        (pkg / "ops_pb2.py").write_text("from google.protobuf import descriptor as _d\n")
        dist_info(site, "pbuser", "1.0", ["pbuser/__init__.py", "pbuser/ops_pb2.py"],
                  requires=("protobuf>=6.31.1",))
        real = subprocess.run([sys.executable, "-c", "import pbuser"], capture_output=True,
                              text=True, env={**env, "PYTHONPATH": path}, timeout=60,
                              cwd=tmp_path)
        rep = cli(capsys, "check", "-f", "json", "--static", "--package", "pbuser", "--env",
                  f"PYTHONPATH={path}", "--cwd", str(tmp_path)).json()["reports"][0]
        (f,) = [f for f in rep["findings"] if f["code"] == "OD327"]
        return real, f

    real, f = user("from . import ops_pb2\nfrom google.protobuf import runtime_version\n")
    assert "cannot import name 'runtime_version' from 'google.protobuf'" in real.stderr, \
        real.stderr
    assert f["severity"] == "error", f
    assert "which has no google.protobuf.runtime_version: the import fails" in f["message"], f
    assert "pbuser/__init__.py:2 imports google.protobuf.runtime_version unconditionally" in \
        f["evidence"], f["evidence"]
    # names protobuf 4.25.8 has: a module, and a name its __init__ binds; `import google.x`
    # of another distribution's namespace part is not protobuf's to lack
    for ok in ("from google.protobuf import descriptor, __version__\n",
               "try:\n    import google.rpc\nexcept ImportError:\n    pass\n"
               "from google.protobuf import message\n"):
        real, f = user(ok)
        assert real.returncode == 0, real.stderr
        assert f["severity"] == "warning", (ok, f)


def test_a_name_bound_in_a_condition_is_the_one_the_load_asks_for(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """psycopg 3.3's ``if not (libcname := ctypes.util.find_library("c")): libcname =
    "libc.so"`` then ``LoadLibrary(libcname)`` (survey 24's re-check): the walrus binds
    libc.so.6 and the musl fallback never runs — read as "libc.so", the load looked like a
    missing system library (OD221, an error, on a package that imports). A name the system
    lacks, bound the same way, is one."""
    site = tmp_path / "site"
    for name, lib in (("wlok", "c"), ("wlbad", "no_such_lib_opdoctor")):
        _write(site, {f"{name}/__init__.py": (
            "import ctypes, ctypes.util\n"
            f"if not (libname := ctypes.util.find_library({lib!r})):\n"
            f"    libname = 'lib{lib}.so'\n"
            "lib = ctypes.cdll.LoadLibrary(libname)\n")})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(name: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, object]]]:
        real = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                              text=True, env={**env, "PYTHONPATH": str(site)}, timeout=60,
                              cwd=tmp_path)
        rep = cli(capsys, "check", "-f", "json", "--static", "--package", name, "--env",
                  f"PYTHONPATH={site}", "--cwd", str(tmp_path)).json()["reports"][0]
        return real, [f for f in rep["findings"] if f["code"] == "OD221"]

    real, found = run("wlok")
    assert real.returncode == 0 and found == [], (real.stderr, found)
    real, found = run("wlbad")
    assert "libno_such_lib_opdoctor.so: cannot open shared object file" in real.stderr, \
        real.stderr
    assert [f["subject"] for f in found] == ["libno_such_lib_opdoctor.so"], found


def test_a_module_the_installed_release_of_another_package_lacks_is_an_error_statically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 24's F5: torchtune 0.6.1's common_utils.py runs `from torchao.dtypes.nf4tensor
    import NF4Tensor`, and torchao 0.18 has no such module — `import torchtune` fails, and
    `--static` said "No problem found". An unconditional import of a module, or a name, that
    the installed release of another package lacks is OD514, an error, with the release
    pairing; the same import where the release has it (a module, or a name its package binds)
    is clean, and so is one of a package that reshapes its ``__path__``."""
    from tests.helpers import dist_info

    site = tmp_path / "site"
    _write(site, {"tunepkg/__init__.py": "from . import common\n",
                  "tunepkg/common.py": "import os\nfrom aopkg.dtypes.nf4 import NF4\n",
                  "aopkg/__init__.py": "", "aopkg/dtypes/__init__.py": "X = 1\n"})
    dist_info(site, "tunepkg", "0.6.1", ["tunepkg/__init__.py", "tunepkg/common.py"])
    dist_info(site, "aopkg", "0.18.0", ["aopkg/__init__.py", "aopkg/dtypes/__init__.py"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run() -> tuple[subprocess.CompletedProcess[str], list[dict[str, object]]]:
        real = subprocess.run([sys.executable, "-c", "import tunepkg"], capture_output=True,
                              text=True, env={**env, "PYTHONPATH": str(site)}, timeout=60,
                              cwd=tmp_path)
        rep = cli(capsys, "check", "-f", "json", "--static", "--package", "tunepkg", "--env",
                  f"PYTHONPATH={site}", "--cwd", str(tmp_path)).json()["reports"][0]
        return real, [f for f in rep["findings"] if f["code"] == "OD514"]

    real, found = run()
    assert "No module named 'aopkg.dtypes.nf4'" in real.stderr, real.stderr
    (f,) = found
    assert f["severity"] == "error" and "aopkg 0.18.0 is installed and has no " \
        "aopkg.dtypes.nf4: the import fails" in f["message"], f
    assert "tunepkg 0.6.1 was written for another release of aopkg" in f["fix"], f["fix"]
    # a name the package does not bind: the same
    (site / "tunepkg" / "common.py").write_text("from aopkg.dtypes import NF4\n")
    real, found = run()
    assert "cannot import name 'NF4'" in real.stderr and len(found) == 1, (real.stderr, found)
    # the release that has it: a name its __init__ binds, or the module
    (site / "aopkg" / "dtypes" / "__init__.py").write_text("NF4 = 1\n")
    real, found = run()
    assert real.returncode == 0 and found == [], (real.stderr, found)
    (site / "tunepkg" / "common.py").write_text("from aopkg.dtypes.nf4 import NF4\n")
    (site / "aopkg" / "dtypes" / "nf4.py").write_text("NF4 = 1\n")
    real, found = run()
    assert real.returncode == 0 and found == [], (real.stderr, found)
    # a package that reshapes its __path__ may have its modules elsewhere: not told
    (site / "aopkg" / "dtypes" / "nf4.py").unlink()
    (site / "aopkg" / "__init__.py").write_text(
        "import pkgutil\n__path__ = pkgutil.extend_path(__path__, __name__)\n")
    assert run()[1] == []
    # nor one that registers its modules (opacus beside torch 2.13: torch.distributed._tensor
    # aliases torch.distributed.tensor's modules in sys.modules), nor the standard library's
    # (kivy: `from re import MULTILINE`, which enum.global_enum binds) — both import fine
    (site / "aopkg" / "__init__.py").write_text("")
    (site / "aopkg" / "dtypes" / "__init__.py").write_text(
        "import sys, types\nsys.modules[__name__ + '.nf4'] = types.SimpleNamespace(NF4=1)\n")
    (site / "tunepkg" / "common.py").write_text(
        "from re import MULTILINE\nimport aopkg.dtypes\nfrom aopkg.dtypes.nf4 import NF4\n")
    real, found = run()
    assert real.returncode == 0 and found == [], (real.stderr, found)


def test_an_editable_install_that_finds_its_module_at_run_time_without_its_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22's D2: torch_scatter installed with `pip install -e .`, its in-place build
    then cleaned (`git clean -xdf`); its __init__ finds its compiled modules at run time, so
    no import line points at a missing file, and `--static` said "No problem found" (OD415,
    a note) while the import fails. The editable install's project declares compiled
    extensions (setup.py's ext_modules) and none is built: OD415 says so, as an error, with
    the rebuild."""
    venv = _editable("dynamic-unbuilt")
    real = _editable_run(venv, tmp_path, "import edpkg")
    assert "No module named 'edpkg._fast'" in real.stderr, real.stderr
    rep = _editable_check(capsys, venv, tmp_path, "--static").json()["reports"][0]
    (od415,) = [f for f in rep["findings"] if f["code"] == "OD415"]
    project = venv.parent / "dynamic-unbuilt-src"
    assert od415["severity"] == "error" and f"editable install of {project}" in od415[
        "message"], od415
    assert f"pip install -e {project} --no-build-isolation" in od415["fix"]
    # built, the same install is clean
    ok = _editable_check(capsys, _editable("ok"), tmp_path, "--static").json()["reports"][0]
    assert not [f for f in ok["findings"] if f["severity"] == "error"], ok["findings"]


def test_a_library_named_at_the_call_of_a_loader_that_finds_its_callers_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 22: tensorflow-io-gcs-filesystem 0.37.1's `_load_library(filename)` joins the
    name to the directory of its caller's file, found with `inspect.getfile(sys._getframe(1))`
    — no static reading evaluates that — and is called as
    `_load_library("libtensorflow_io_gcs_filesystem.so")`. `check --static` of the package
    directory said its library "was not analysed" (exit 0) while the import fails (built for
    TensorFlow 2.16). A call-site name of a library that sits beside the module is that load.
    Here the library misses a dependency; the real import fails on it."""
    pkg = tmp_path / "site" / "callerpkg"
    pkg.mkdir(parents=True)
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "p.c").write_text("int dep(void);\nint plug(void) { return dep(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcallerdep.so", "-o",
                    str(tmp_path / "libcallerdep.so"), str(tmp_path / "dep.c")], check=True,
                   timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "libplug.so"),
                    str(tmp_path / "p.c"), str(tmp_path / "libcallerdep.so")], check=True,
                   timeout=60)
    (tmp_path / "libcallerdep.so").unlink()
    (pkg / "__init__.py").write_text(
        "import ctypes, inspect, os, sys\n\n\ndef _load_library(filename):\n"
        "    f = inspect.getfile(sys._getframe(1))\n"
        "    return ctypes.CDLL(os.path.join(os.path.dirname(f), filename))\n\n\n"
        "plug = _load_library('libplug.so')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    real = subprocess.run([sys.executable, "-c", "import callerpkg"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(pkg.parent)}, timeout=60,
                          cwd=tmp_path)
    assert "libcallerdep.so: cannot open shared object file" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={pkg.parent}",
              "--cwd", str(tmp_path), str(pkg)).json()["reports"][0]
    assert "loads libplug.so" in rep["target"]["kind"], rep["target"]
    assert rep["diagnosis"]["root_findings"] == ["OD201"], rep["diagnosis"]


def test_a_library_checked_by_path_sees_the_copy_pythonpath_puts_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Survey 22's E6: a library of an installed package checked by its path was analysed
    with the package's parent directory as the working directory — whose '' sys.path entry
    precedes PYTHONPATH — so another copy of the package PYTHONPATH puts first was hidden
    (the check of the file said "1 other copy … the checked one wins", a warning; `--package`
    and the job get the other copy). A directory on the job's sys.path is the job's own; a
    package outside it (a build tree) is still imported from its parent."""
    installed, stale, work = tmp_path / "installed", tmp_path / "stale", tmp_path / "work"
    for d in (installed / "twinpkg", stale / "twinpkg", work):
        d.mkdir(parents=True)
    (tmp_path / "a.c").write_text("int twin_answer(void) { return 42; }\n")
    lib = installed / "twinpkg" / "_ext.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / "a.c"), "-o", str(lib)],
                   check=True, timeout=60)
    (installed / "twinpkg" / "__init__.py").write_text(
        "import ctypes, os\n_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "
        "'_ext.so'))\n")
    (stale / "twinpkg" / "__init__.py").write_text("raise ImportError('the stale copy')\n")
    path = f"{stale}{os.pathsep}{installed}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import twinpkg"], cwd=work, timeout=60,
                          env={**env, "PYTHONPATH": path}, capture_output=True, text=True)
    assert "ImportError: the stale copy" in real.stderr, real.stderr

    def od502(pythonpath: str) -> list[dict[str, str]]:
        rep = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={pythonpath}",
                  str(lib)).json()["reports"][0]
        return [f for f in rep["findings"] if f["code"] == "OD502"]

    monkeypatch.chdir(work)  # the job's working directory: no --cwd given
    (f,) = od502(path)
    assert f["severity"] == "error" and f"picks {stale / 'twinpkg'}" in f["message"], f
    # installed alone: the installed copy is what the job imports — nothing to report
    assert not od502(str(installed))
    # not on sys.path (a build tree): imported from its parent, found, nothing to report
    assert not od502("")


def test_a_copy_a_start_up_hook_puts_first_names_the_hook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's P2: a sitecustomize.py inserts a shared directory at the head of sys.path,
    whose older release of a package hides the one installed; OD502 said "put the wanted
    directory first on sys.path (PYTHONPATH)" — the directory is on no PYTHONPATH, and the
    file that adds it was not named. The entry's origin is named in the evidence and the fix."""
    from tests.helpers import dist_info

    hook, shared, installed = tmp_path / "hook", tmp_path / "shared", tmp_path / "installed"
    for site, version in ((shared, "1.0"), (installed, "2.0")):
        (site / "twinrel").mkdir(parents=True)
        (site / "twinrel" / "__init__.py").write_text(f"__version__ = {version!r}\n")
        dist_info(site, "twinrel", version, ["twinrel/__init__.py"])
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(f"import sys\nsys.path.insert(0, {str(shared)!r})\n")
    path = f"{hook}{os.pathsep}{installed}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import twinrel; print(twinrel.__version__)"],
                          env={**env, "PYTHONPATH": path}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert real.stdout.strip() == "1.0", real.stderr
    rep = _static_package_report(capsys, tmp_path, path, "twinrel")
    (f,) = [f for f in rep["findings"] if f["code"] == "OD502"]
    assert "runs twinrel 1.0" in f["message"] and "2.0 installed later" in f["message"], f
    origin = hook / "sitecustomize.py"
    assert f"which {origin} puts there" in f["evidence"][0], f["evidence"]
    assert f"take {shared} off sys.path ({origin} puts it there)" in f["fix"], f["fix"]
    # the same copies with the shared directory on PYTHONPATH: that is where it comes from
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "twinrel", "--env",
              f"PYTHONPATH={shared}{os.pathsep}{installed}", "--cwd", str(tmp_path)
              ).json()["reports"][0]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD502"]
    assert f"take {shared} off sys.path (it is on PYTHONPATH)" in f["fix"], f["fix"]


def test_a_load_the_job_environment_never_reaches_is_no_swallowed_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F2: glfw loads a user-named library only `if
    os.environ.get('PYGLFW_LIBRARY', '')`, inside `except OSError`, and falls back to its own;
    `--static` warned of a load whose error is discarded (OD509) for a job that never sets the
    variable. The job's environment decides the branch."""
    pkg = tmp_path / "envload"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import ctypes, os\n"
        "if os.environ.get('ENVLOAD_LIBRARY', ''):\n"
        "    try:\n"
        "        lib = ctypes.CDLL(os.environ['ENVLOAD_LIBRARY'])\n"
        "    except OSError:\n"
        "        lib = None\n"
        "else:\n"
        "    lib = None\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVLOAD_LIBRARY")}
    real = subprocess.run([sys.executable, "-c", "import envload; print(envload.lib)"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "None", real.stderr

    def od509(*extra: str) -> list[dict[str, str]]:
        rep = cli(capsys, "check", "-f", "json", "--static", "--package", "envload",
                  "--cwd", str(tmp_path), "--env", "PYTHONPATH=", *extra).json()["reports"][0]
        return [f for f in rep["findings"] if f["code"] == "OD509"]

    assert not od509()
    # set for the job: the load runs, and its error would be discarded
    (f,) = od509("--env", f"ENVLOAD_LIBRARY={tmp_path / 'libabsent.so'}")
    assert f["severity"] != "info", f


def test_an_import_of_pkg_resources_beside_a_setuptools_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F5: pyworld 0.3.5 and pytorch-wavelets 1.3.0 `import pkg_resources`, which
    setuptools 82 and later no longer ship (setuptools 84 here). `--static` warned "install the
    distribution that provides pkg_resources" (exit 0); the probe's fix spoke of a shadowing
    directory and an extension never built. The import certainly fails: an error, with the
    setuptools that brings the module back; explain's read of the error says the same."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    have = subprocess.run([sys.executable, "-c", "import pkg_resources"], env=env,
                          capture_output=True, text=True, timeout=60)
    if have.returncode == 0:
        pytest.skip("this environment's setuptools still ships pkg_resources (before 82)")
    pkg = tmp_path / "site" / "prpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import pkg_resources\nVERSION = '1.0'\n")
    from tests.helpers import dist_info

    dist_info(pkg.parent, "prpkg", "1.0", ["prpkg/__init__.py"])
    real = subprocess.run([sys.executable, "-c", "import prpkg"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(pkg.parent)}, capture_output=True,
                          text=True, timeout=60)
    assert "No module named 'pkg_resources'" in real.stderr, real.stderr
    rep = _static_package_report(capsys, tmp_path, pkg.parent, "prpkg")
    (f,) = [f for f in rep["findings"] if f["code"] == "OD514"]
    assert f["severity"] == "error" and "setuptools 82 and later no longer ship" in \
        f["message"], f
    assert f["fix"].startswith("pip install 'setuptools<82'"), f["fix"]
    read = cli(capsys, "explain", "-f", "json", real.stderr).json()
    assert read["cause"] == 5 and "setuptools 82" in read["title"], read


def test_a_package_in_the_working_directory_under_pythonsafepath(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's P1: a package importable only from the job's working directory, and the job
    runs with PYTHONSAFEPATH=1 (`python -P`), which keeps that directory off sys.path. OD501
    said "pip install ." (there is no project there) and not why."""
    (tmp_path / "safepkg").mkdir()
    (tmp_path / "safepkg" / "__init__.py").write_text("VALUE = 1\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    ok = subprocess.run([sys.executable, "-c", "import safepkg"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    real = subprocess.run([sys.executable, "-c", "import safepkg"], cwd=tmp_path,
                          env={**env, "PYTHONSAFEPATH": "1"}, capture_output=True, text=True,
                          timeout=60)
    assert "No module named 'safepkg'" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "safepkg", "--cwd",
              str(tmp_path), "--env", "PYTHONPATH=", "--env", "PYTHONSAFEPATH=1"
              ).json()["reports"][0]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD501"]
    assert "which PYTHONSAFEPATH keeps off sys.path" in f["message"], f
    assert f["fix"].startswith("unset PYTHONSAFEPATH"), f["fix"]


def test_an_extension_whose_pyinit_a_version_script_hides(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F2: an extension linked with a version script `{ local: *; }` defines
    PyInit__C but does not export it: "dynamic module does not define module export function
    (PyInit__C)". OD416 said to rename the file or compile it under another module name — the
    name was right. The local symbol in .symtab says what happened."""
    import sysconfig

    pkg = tmp_path / "site" / "hidmod"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import _C\n")
    (tmp_path / "m.c").write_text(
        "#include <Python.h>\nstatic struct PyModuleDef def = {PyModuleDef_HEAD_INIT, \"_C\", "
        "NULL, -1, NULL};\nPyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&def); }\n")
    (tmp_path / "hide.map").write_text("{ local: *; };\n")
    ext = pkg / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-isystem", sysconfig.get_paths()["include"],
                    f"-Wl,--version-script={tmp_path / 'hide.map'}", str(tmp_path / "m.c"),
                    "-o", str(ext)], check=True, timeout=60)
    real = _job_imports(tmp_path, pkg.parent, "import hidmod")
    assert "does not define module export function (PyInit__C)" in real.stderr, real.stderr
    rep = _static_package_report(capsys, tmp_path, pkg.parent, "hidmod")
    (f,) = [f for f in rep["findings"] if f["code"] == "OD416"]
    assert "defines PyInit__C but does not export it" in f["message"], f
    assert f["fix"].startswith("export PyInit__C") and "rename" not in f["fix"], f["fix"]


@pytest.mark.parametrize("stray_first", [True, False])
def test_a_stray_init_hides_the_namespace_package_that_holds_the_module(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], stray_first: bool) -> None:
    """Survey 23's P3b: protobuf is a portion of the namespace package `google`; a stray
    google/__init__.py in another sys.path entry makes `google` a regular package, which
    wins wherever it stands, and `import google.protobuf` fails. OD501 said "pip install ."
    (protobuf is installed). It names the stray file now."""
    stray, good = tmp_path / "stray", tmp_path / "good"
    (stray / "nsx").mkdir(parents=True)
    (stray / "nsx" / "__init__.py").write_text("")
    (good / "nsx" / "payload").mkdir(parents=True)
    (good / "nsx" / "payload" / "__init__.py").write_text("VALUE = 1\n")
    order = [stray, good] if stray_first else [good, stray]
    path = os.pathsep.join(str(d) for d in order)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import nsx.payload"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": path}, capture_output=True, text=True,
                          timeout=60)
    assert "No module named 'nsx.payload'" in real.stderr, real.stderr
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "nsx.payload", "--env",
              f"PYTHONPATH={path}", "--cwd", str(tmp_path)).json()["reports"][0]
    (f,) = [f for f in rep["findings"] if f["code"] in ("OD501", "OD502")]
    assert f["code"] == "OD502" and f"{stray / 'nsx' / '__init__.py'} makes `nsx` a regular " \
        "package" in f["message"], f
    assert f["fix"].startswith(f"delete {stray / 'nsx' / '__init__.py'}"), f["fix"]
    # without the stray file Python imports the namespace portion, and nothing is reported
    (stray / "nsx" / "__init__.py").unlink()
    rep = cli(capsys, "check", "-f", "json", "--static", "--package", "nsx.payload", "--env",
              f"PYTHONPATH={path}", "--cwd", str(tmp_path)).json()["reports"][0]
    assert not [f for f in rep["findings"] if f["code"] in ("OD501", "OD502")], rep["findings"]


def _job_imports(tmp_path: Path, site: Path, statement: str) -> subprocess.CompletedProcess[str]:
    """What Python itself does with ``statement`` run from ``tmp_path`` with ``site`` on
    PYTHONPATH (the job's truth)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", statement], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
                          timeout=60)


def _static_package_report(capsys: pytest.CaptureFixture[str], tmp_path: Path, site: Path,
                           name: str) -> dict:  # type: ignore[type-arg]
    """The first report of `check --static --package NAME` for that job."""
    return cli(capsys, "check", "-f", "json", "--static", "--package", name, "--env",
               f"PYTHONPATH={site}", "--cwd", str(tmp_path)).json()["reports"][0]


def _extension_needing_a_gone_library(tmp_path: Path, where: Path, module: str,
                                      soname: str) -> Path:
    """A Python extension ``module`` in ``where`` that NEEDs ``soname`` — a library built for
    the link and removed after it: its import fails with "cannot open shared object file"."""
    import sysconfig

    (tmp_path / "dep.c").write_text("int gone_fn(void) { return 1; }\n")
    dep = tmp_path / soname
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(dep),
                    str(tmp_path / "dep.c")], check=True, timeout=60)
    (tmp_path / "m.c").write_text(
        "#include <Python.h>\nint gone_fn(void);\n"
        f"static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, \"{module}\", NULL, -1, "
        f"NULL}};\nPyMODINIT_FUNC PyInit_{module}(void) {{ gone_fn(); return "
        "PyModule_Create(&def); }\n")
    ext = where / (module + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-isystem", sysconfig.get_paths()["include"],
                    str(tmp_path / "m.c"), "-o", str(ext), str(dep)], check=True, timeout=60)
    dep.unlink()
    return ext


def test_a_package_directory_whose_import_loads_its_sibling_packages_library(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's F6: tflite-support installs `tflite_support` (Python only) and
    `tensorflow_lite_support` (its compiled modules); `import tflite_support` loads the
    latter's _pywrap_*.so, which needs libusb-1.0.so.0 — absent. `check --static
    site/tflite_support` said "No error" (the libraries its import loads lie outside the
    directory); `--package` saw it. The directory check takes them too."""

    from tests.helpers import dist_info

    site = tmp_path / "site"
    top, native = site / "twotop", site / "lowerlib"
    for d in (top, native):
        d.mkdir(parents=True)
    (top / "__init__.py").write_text("from lowerlib import _ext\n")
    (native / "__init__.py").write_text("")
    ext = _extension_needing_a_gone_library(tmp_path, native, "_ext", "libusbish.so.0")
    dist_info(site, "twotop", "1.0", ["twotop/__init__.py", "lowerlib/__init__.py",
                                      f"lowerlib/{ext.name}"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import twotop"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
                          timeout=60)
    assert "libusbish.so.0: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--env", f"PYTHONPATH={site}",
              "--cwd", str(tmp_path), str(top))
    rep = res.json()["reports"][0]
    assert res.code == 1 and [f["subject"] for f in rep["findings"] if f["code"] == "OD201"] \
        == ["libusbish.so.0"], rep["findings"]


def test_a_module_of_a_package_is_followed_to_the_extension_it_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 23's L1: `from PIL import Image` fails (a vendored library of _imaging replaced
    by an older one); `check --static --package PIL.Image` said "no compiled library", exit 0:
    a module of a package was not read at all. It is read as the package's modules are, and
    the extension its `from . import _imaging` loads is checked."""

    pkg = tmp_path / "site" / "modpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("from . import _native as native\n")
    ext = _extension_needing_a_gone_library(tmp_path, pkg, "_native", "libgonedep.so.1")
    real = _job_imports(tmp_path, pkg.parent, "import modpkg.core")
    assert "libgonedep.so.1: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", "--package", "modpkg.core", "--env",
              f"PYTHONPATH={pkg.parent}", "--cwd", str(tmp_path))
    rep = res.json()["reports"][0]
    assert rep["target"]["path"] == str(ext), rep["target"]
    assert res.code == 1 and [f["subject"] for f in rep["findings"] if f["code"] == "OD201"] \
        == ["libgonedep.so.1"], rep["findings"]


_PRELOAD_OTHER = '''try:
    import ctypes as _ctypes
    import glob as _glob
    import importlib.util as _ilu

    _pkg_spec = _ilu.find_spec("hisolver")
    if _pkg_spec is not None and _pkg_spec.submodule_search_locations:
        for _loc in _pkg_spec.submodule_search_locations:
            for _so in _glob.glob(_loc + "/_core*.so"):
                _ctypes.CDLL(_so, _ctypes.RTLD_GLOBAL)
                break
    del _ctypes, _glob, _ilu, _pkg_spec
except Exception:
    pass
VALUE = 1
'''


def test_a_swallowed_preload_of_another_installed_packages_library_is_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pulp 3.3 preloads highspy's `_core*.so` with RTLD_GLOBAL, found through
    `find_spec("highspy")`, inside `except Exception: pass` (survey 23): `import pulp` works
    with or without highspy, and with a highspy whose library fails to load — whose own
    import then raises. `--static` warned (OD509) on every healthy pulp; it is a note."""
    site = tmp_path / "site"
    _write(site, {"lpish/__init__.py": _PRELOAD_OTHER, "hisolver/__init__.py":
                  "from hisolver._core import answer\n"})
    _c_extension(tmp_path, site / "hisolver", "_core")
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = [sys.executable, "-c", "import lpish, hisolver; print(hisolver.answer())"]
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path).stdout.strip() == "42"
    core = next((site / "hisolver").glob("_core*.so"))
    core.write_bytes(core.read_bytes()[:200])  # hisolver broken: lpish still imports
    assert subprocess.run([sys.executable, "-c", "import lpish"], env=env,
                          capture_output=True, timeout=60, cwd=tmp_path).returncode == 0
    broken = subprocess.run([sys.executable, "-c", "import hisolver"], env=env,
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert broken.returncode != 0 and "ImportError" in broken.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={site}", "--package", "lpish")
    (rep,) = res.json()["reports"]
    od509 = [f for f in rep["findings"] if f["code"] == "OD509"]
    assert res.code == 0 and len(od509) == 1 and od509[0]["severity"] == "info", od509
    assert "an optional preload of hisolver's library" in od509[0]["message"]
    assert not [f for f in rep["findings"] if f["severity"] != "info"], rep["findings"]


@pytest.mark.probe
@pytest.mark.parametrize(("files", "fails"), [
    # survey 24's F5: the extension first, torch nowhere before it
    ({"tinyop/__init__.py": "from . import _C\n"}, True),
    ({"tinyop/__init__.py": "import os\nfrom tinyop import _C\n"}, True),
    # a module of its own that imports torch runs first
    ({"tinyop/__init__.py": "from .util import x\nfrom . import _C\n",
      "tinyop/util.py": "import torch\nx = 1\n"}, False),
    ({"tinyop/__init__.py": "import torch\nfrom . import _C\n"}, False),
    # both inside one statement: the earlier line still runs first
    ({"tinyop/__init__.py": "import warnings\nwith warnings.catch_warnings():\n"
                            "    import torch\n    from . import _C\n"}, False),
])
def test_a_torch_extension_imported_before_torch_fails_on_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str],
        fails: bool) -> None:
    """A package whose __init__.py imports its torch extension before anything imports torch:
    the extension (torch.utils.cpp_extension's build, no RUNPATH to torch/lib) finds
    libc10.so only in a process that imported torch, so `import tinyop` fails on its own. The
    probe imports torch first and the static view loads torch first: both said "No problem
    found". A job that imports torch first works (and a package that does, is clean)."""
    ext = fixture("truth/pkg_ok/tinyop/__init__.py").parent / \
        ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    _write(tmp_path, files)
    shutil.copy(ext, tmp_path / "tinyop" / ext.name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    alone = subprocess.run([sys.executable, "-c", "import tinyop"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert (alone.returncode != 0) == fails, alone.stderr[-1500:]
    if fails:
        assert "libc10.so: cannot open shared object file" in alone.stderr, alone.stderr
    after = subprocess.run([sys.executable, "-c", "import torch, tinyop"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
    assert after.returncode == 0, after.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--package", "tinyop")
    (rep,) = res.json()["reports"]
    od515 = [f for f in rep["findings"] if f["code"] == "OD515"]
    if not fails:
        assert od515 == [] and res.code == 0, rep["diagnosis"]["summary"]
        return
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD515"], rep["diagnosis"]
    assert "libc10.so" in od515[0]["message"] and "before anything imports torch" in \
        od515[0]["message"]
    assert od515[0]["fix"].startswith("put `import torch` before `"), od515[0]["fix"]


@pytest.mark.parametrize("uses", [False, True])
def test_a_top_level_module_named_like_the_standard_librarys_is_hidden_by_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], uses: bool) -> None:
    """torchao 0.18.0's wheel installs its test suite as a top-level `test` (survey 24): the
    standard library's `test` always wins. OD502 was the verdict, an error, with the fix
    "take …/lib/python3.11 off sys.path". Nothing imports it: a note. A package whose import
    does use its `test` really fails: an error, whose fix is no sys.path order."""
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    init = "from test.helpers import VALUE\n" if uses else "VALUE = 1\n"
    _write(site, {"clashpkg/__init__.py": init, "test/__init__.py": "",
                  "test/helpers.py": "VALUE = 2\n"})
    dist_info(site, "clashpkg", "0.4", ["clashpkg/__init__.py", "test/__init__.py",
                                        "test/helpers.py"])
    py = str(tmp_path / "v" / "bin" / "python")
    real = subprocess.run([py, "-c", "import test, clashpkg; print(test.__file__)"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    if uses:
        assert "No module named 'test.helpers'" in real.stderr, real.stderr
    else:
        assert real.returncode == 0 and str(site) not in real.stdout, real.stdout
    res = cli(capsys, "check", "--static", "-f", "json", "--python", py, "--cwd", str(tmp_path),
              "--package", "clashpkg")
    od502 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD502"]
    assert len(od502) == 1 and "a name of the standard library" in od502[0]["message"], od502
    assert od502[0]["severity"] == ("error" if uses else "info"), od502
    assert "off sys.path" not in od502[0]["fix"], od502[0]["fix"]


_PLATFORM_BRANCHES = '''import ctypes
import os
import platform

lib_dir = os.path.dirname(__file__)
sys_name = platform.system() or 'Unknown'
if sys_name == 'Linux':
    ctypes.CDLL(os.path.join(lib_dir, 'libcore.so'))
    from . import _api
elif sys_name == 'Darwin':
    ctypes.CDLL(os.path.join(lib_dir, 'libcore.dylib'))
    from . import _api
else:
    ctypes.CDLL(os.path.join(lib_dir, 'core.dll'))
    from . import _api
'''


@pytest.mark.probe
def test_a_library_preloaded_by_its_file_name_is_found_by_its_soname(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pyexiv2 2.16 (survey 24): `sys_name = platform.system() or 'Unknown'`, then on Linux
    `ctypes.CDLL(lib/libexiv2.so)` — SONAME libexiv2.so.28, which exiv2api.so NEEDs — before
    `from . import exiv2api`. The import works; the check said OD201 "libexiv2.so.28 is not
    found" (the preload was matched by file name, not SONAME) and OD510 for the Darwin and
    Windows branches' files (the variable's `or` was not evaluated): errors, exit 1."""
    pkg = tmp_path / "exivish"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_PLATFORM_BRANCHES)
    (tmp_path / "core.c").write_text("int core(void) { return 7; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcore.so.28", "-o",
                    str(pkg / "libcore.so"), str(tmp_path / "core.c")], check=True, timeout=60)
    api = _c_extension(tmp_path, pkg, "_api")
    (tmp_path / "libcore.so.28").symlink_to(pkg / "libcore.so")  # to link against, then gone
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(api), str(tmp_path / "_api.c"), f"-L{tmp_path}", "-Wl,--no-as-needed",
                    "-l:libcore.so.28"],
                   check=True, timeout=60)
    (tmp_path / "libcore.so.28").unlink()
    real = subprocess.run([sys.executable, "-c", "import exivish; print(exivish._api.answer())"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "42", real.stderr
    alone = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(api)], capture_output=True, text=True, timeout=60)
    assert "libcore.so.28: cannot open shared object file" in alone.stderr, alone.stderr
    for mode in ((), ("--static",)):
        res = cli(capsys, "check", *mode, "-f", "json", "--cwd", str(tmp_path), "--package",
                  "exivish")
        found = [(f["code"], f["severity"]) for r in res.json()["reports"]
                 for f in r["findings"]]
        assert res.code == 0 and not [c for c, s in found if s != "info"], (mode, found)


@pytest.mark.parametrize("damage", ["strip", "cut"])
def test_a_stripped_library_is_a_changed_file_that_still_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    """`strip --strip-all` of an installed extension (what slim Docker images do to every
    .so: survey 24's H15, tokenizers) changes its RECORD hash and nothing else: the import
    works. `--static` said OD508, an error. A changed library that still reads as loadable is
    a warning; one cut short stays the error."""
    from tests.test_realpkg import _rp_site

    site = tmp_path / "site"
    shutil.copytree(_rp_site("cffi-2.1.1"), site)
    lib = next(site.glob("_cffi_backend*.so"))
    if damage == "strip":
        subprocess.run(["strip", "--strip-all", str(lib)], check=True, timeout=60)
    else:
        lib.write_bytes(lib.read_bytes()[:4096])
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import cffi, _cffi_backend as b; "
                           "b.new_primitive_type('int')"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert (real.returncode == 0) == (damage == "strip"), real.stderr[-1500:]
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={site}", "--package", "cffi")
    od508 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD508"]
    assert od508, res.out[-2000:]
    if damage == "strip":
        assert {f["severity"] for f in od508} == {"warning"} and res.code == 0, od508
        assert "still reads as loadable here" in od508[0]["message"]
    else:
        assert res.code == 1 and "error" in {f["severity"] for f in od508}, od508


@pytest.mark.parametrize(("name", "code", "what"), [
    ("ujsonish.cp311-win_amd64.pyd", "OD418", "Windows"),
    ("ujsonish.cpython-310-x86_64-linux-gnu.so", "OD503", "CPython 3.10"),
])
def test_a_single_module_built_for_another_platform_is_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, code: str,
        what: str) -> None:
    """ujson's win_amd64 wheel installed with `pip install --target T --platform win_amd64`
    (survey 24's F8): T holds ujson.cp311-win_amd64.pyd, which Python never imports here —
    "No module named 'ujson'". The verdict was OD501 "no package ujson … pip install .", a
    command that installs nothing of it; it is the build for another platform (or Python)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / name).write_bytes(b"MZ" + bytes(200))
    dist_info(site, "ujsonish", "5.11.0", [name])
    env = {**os.environ, "PYTHONPATH": str(site)}
    real = subprocess.run([sys.executable, "-c", "import ujsonish"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "No module named 'ujsonish'" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={site}", "--package", "ujsonish")
    (rep,) = res.json()["reports"]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == [code], rep["diagnosis"]
    f = next(f for f in rep["findings"] if f["code"] == code)
    assert f"built for {what}" in f["message"], f["message"]
    assert f["fix"].startswith("pip install --force-reinstall --no-deps --upgrade --target "
                               f"{site} 'ujsonish==5.11.0'"), f["fix"]


@pytest.mark.probe
def test_a_submodule_that_needs_an_undeclared_framework_is_an_optional_part(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """openvino 2026.4's wheel (survey 24's F7): its PyTorch frontend's extension lives in
    openvino/frontend/pytorch/, whose __init__.py imports torch — not a requirement of
    openvino, which works without it. The wheel's check probed that module and reported its
    `No module named 'torch'` as an error. Walking the package it is a note; the library named
    by its path stays an error (its import does fail)."""
    root, run = tmp_path / "build", tmp_path / "run"
    run.mkdir()
    pkg = root / "ovish"
    _write(root, {
        "ovish/__init__.py": "VALUE = 1\n",
        "ovish/front/__init__.py": "",
        "ovish/front/tf/__init__.py": "try:\n    import tensorflow\n"
                                      "    from ovish.front.tf._ext import answer\n"
                                      "except ImportError as err:\n"
                                      "    raise ImportError(f'TF frontend is not available. "
                                      "{err}')\n"})
    # an extension whose helper TensorFlow's libraries would define (undefined here, as the
    # frontend's are without torch's): what makes the probe import its module
    src = root / "_ext.c"
    src.write_text('#include <Python.h>\nextern int tf_helper(void);\nstatic PyObject *answer('
                   'PyObject *s, PyObject *a) { return PyLong_FromLong(tf_helper()); }\n'
                   'static PyMethodDef M[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
                   'static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_ext", "", -1, M};\n'
                   'PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&D); }\n')
    ext = pkg / "front" / "tf" / ("_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(ext), str(src)], check=True, timeout=60)
    dist_info(root, "ovish", "1.0", ["ovish/__init__.py"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if importlib.util.find_spec("tensorflow") is not None:
        pytest.skip("tensorflow is importable here")
    for module, fails in (("ovish", False), ("ovish.front.tf._ext", True)):
        real = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=root,
                              env=env, capture_output=True, text=True, timeout=60)
        assert (real.returncode != 0) == fails, real.stderr
    import zipfile

    wheel = tmp_path / "ovish-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for f in sorted(root.rglob("*")):
            if f.is_file() and f.relative_to(root).parts[0] in ("ovish", "ovish-1.0.dist-info"):
                zf.write(f, str(f.relative_to(root)))
    monkeypatch.chdir(run)  # (the job runs where the wheel's own copy is the one imported)
    walk = cli(capsys, "check", "-f", "json", str(wheel))
    od511 = [f for r in walk.json()["reports"] for f in r["findings"] if f["code"] == "OD511"]
    assert [f["severity"] for f in od511] == ["info"], od511
    assert "an optional part of ovish: tensorflow is not one of its requirements" in \
        od511[0]["message"], od511[0]["message"]
    # the wheel's copy is the one imported whatever --cwd says (it said "no package ovish")
    moved = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), str(wheel))
    assert [f["code"] for r in moved.json()["reports"] for f in r["findings"]
            if f["code"].startswith("OD5")] == ["OD511"], moved.out[-1500:]
    named = cli(capsys, "check", "-f", "json", "--cwd", str(root), str(ext))
    assert named.code == 1 and "OD511" in [f["code"] for r in named.json()["reports"]
                                           for f in r["findings"] if f["severity"] == "error"]


def test_a_leftover_extension_picked_before_the_installed_one_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tokenizers 0.23.3 installs tokenizers.abi3.so; a 0.15.2 tokenizers.cpython-311-…so left
    beside it (survey 24's B04) is what `import` picks — the version-specific suffix comes
    first — and the old module breaks the new Python code. The probe said "read the
    exception", --static nothing. The file no RECORD lists, imported instead of the one the
    distribution installed, is the fault; deleting it is the fix."""
    pkg = tmp_path / "site" / "fastpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .fastmod import answer\n")
    built = _c_extension(tmp_path, pkg, "fastmod")
    recorded = pkg / "fastmod.abi3.so"
    built.rename(recorded)
    (tmp_path / "old.c").write_text(
        '#include <Python.h>\nstatic struct PyModuleDef D = {PyModuleDef_HEAD_INIT, '
        '"fastmod", "", -1, NULL};\nPyMODINIT_FUNC PyInit_fastmod(void) '
        '{ return PyModule_Create(&D); }\n')
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(built), str(tmp_path / "old.c")], check=True, timeout=60)
    dist_info(tmp_path / "site", "fastpkg", "2.0", ["fastpkg/__init__.py",
                                                    "fastpkg/fastmod.abi3.so"])
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    real = subprocess.run([sys.executable, "-c", "import fastpkg"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "cannot import name 'answer'" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={tmp_path / 'site'}", "--package", "fastpkg")
    (rep,) = res.json()["reports"]
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD508"], rep["diagnosis"]
    od508 = next(f for f in rep["findings"] if f["code"] == "OD508")
    assert od508["message"].startswith(f"{built.name} is in no distribution's RECORD and is "
                                       "imported instead of fastmod.abi3.so"), od508
    assert od508["fix"].startswith(f"delete {built}"), od508["fix"]
    built.unlink()  # the fix: the installed module imports, and the check is clean
    fixed = subprocess.run([sys.executable, "-c", "import fastpkg; print(fastpkg.answer())"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert fixed.stdout.strip() == "42", fixed.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={tmp_path / 'site'}", "--package", "fastpkg")
    assert not [f for r in res.json()["reports"] for f in r["findings"]
                if f["code"] == "OD508"], res.out[-1500:]


@pytest.mark.probe
def test_a_module_gone_from_a_requirements_installed_release_is_no_failed_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchtune 0.6.1 beside torchao 0.18.0 on a CPU torch (survey 24's F5): `import
    torchtune` dies on `No module named 'torchao.dtypes.nf4tensor'` (gone from that release),
    while torchao's optional CUDA kernels also failed to load, caught. The verdict blamed
    torchao's CUDA build (OD307), whose fix changes nothing; the fix now names the release
    pairing."""
    from tests.test_pyreg import site as pyreg_site
    from tests.torchfork import run_python

    ao = pyreg_site("torchao-0.18.0-cuda-ext-on-cpu")
    mine = tmp_path / "mine"
    _write(mine, {"tunish/__init__.py": "import torchao\nfrom torchao.dtypes.nf4gone import "
                                        "NF4Tensor\n"})
    dist_info(mine, "tunish", "0.6.1", ["tunish/__init__.py"])
    path = f"{mine}{os.pathsep}{ao}"
    real = run_python("import tunish", env={**os.environ, "PYTHONPATH": path}, cwd=tmp_path,
                      timeout=300)
    assert "No module named 'torchao.dtypes.nf4gone'" in real.stderr, real.stderr[-1500:]
    res = cli(capsys, "check", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={path}", "--package", "tunish")
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"] == ["OD511"], rep["diagnosis"]
    od511 = next(f for f in rep["findings"] if f["code"] == "OD511")
    assert od511["fix"].startswith("torchao 0.18.0 is installed and has no "
                                   "torchao.dtypes.nf4gone: tunish 0.6.1 was written for "
                                   "another release of torchao"), od511["fix"]


def test_a_dotted_module_under_a_source_tree_that_hides_the_installed_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--package lz4.frame` run from lz4's unpacked sdist (survey 24's F4): Python imports
    `lz4` from the working directory — the source tree, without compiled modules — and the
    installed wheel's is hidden. The check of the dotted module said "build the extension into
    the package directory" (OD510) while `--package lz4` said the tree hides the wheel; both
    say it now."""
    src, site = tmp_path / "src", tmp_path / "site"
    files = {"dotpkg/__init__.py": "", "dotpkg/sub/__init__.py": "from . import _fast\n"}
    _write(src, files)
    _write(site, files)
    fast = _c_extension(tmp_path, site / "dotpkg" / "sub", "_fast")
    dist_info(site, "dotpkg", "1.0", [*files, f"dotpkg/sub/{fast.name}"])
    env = {**os.environ, "PYTHONPATH": str(site)}
    for cwd, fails in ((src, True), (tmp_path, False)):
        real = subprocess.run([sys.executable, "-c", "import dotpkg.sub"], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=60)
        assert (real.returncode != 0) == fails, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(src), "--env",
              f"PYTHONPATH={site}", "--package", "dotpkg.sub")
    (rep,) = res.json()["reports"]
    assert rep["diagnosis"]["root_findings"] == ["OD502"], rep["diagnosis"]
    od502 = next(f for f in rep["findings"] if f["code"] == "OD502")
    assert od502["message"].startswith(f"import dotpkg picks {src / 'dotpkg'}, which has no "
                                       "compiled extension"), od502["message"]
    assert od502["fix"].startswith(f"run from outside {src}"), od502["fix"]
