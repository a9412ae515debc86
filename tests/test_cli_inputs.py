"""Each kind of bad input gets its own label and code, on real files: a symbolic link loop
(OD414), a directory the user cannot list (OD403, not "no library here"), a pure-Python wheel,
directory or package (OD415, not "path not found"), and scan's documented exit code for a
--python that is not a Python. The kernel, ld.so or zipfile is asked first that the fault is
real."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PKG_DIR, fixture, reference
from tests.helpers import cli, cli_proc


def _one_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_symlink_loop_is_od414(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "liba.so", tmp_path / "libb.so"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OSError) as exc:
        os.stat(a)
    assert exc.value.errno == errno.ELOOP
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        ctypes.CDLL(str(a))  # what the loader says: nothing is opened, nothing runs
    res = cli(capsys, "check", "--static", str(a))
    line = _one_error(res.err)
    assert res.code == 2 and "[OD414]" in line and "symbolic link loop" in line, line
    assert "permission" not in line and "not readable" not in line
    loopdir = tmp_path / "loopdir"
    loopdir.symlink_to(loopdir)
    res = cli(capsys, "check", "--static", str(loopdir))
    assert res.code == 2 and "[OD414]" in _one_error(res.err)
    explained = cli(capsys, "explain", "OD414")
    assert explained.code == 0 and "symbolic link loop" in explained.out


def _pure_wheel(where: Path) -> Path:
    """A real pure-Python wheel (PEP 427 layout), as `pip wheel` writes one."""
    whl = where / "purepkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("purepkg/__init__.py", "VALUE = 1\n")
        zf.writestr("purepkg-1.0.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: purepkg\nVersion: 1.0\n")
        zf.writestr("purepkg-1.0.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr("purepkg-1.0.dist-info/RECORD", "")
    return whl


@pytest.mark.probe
def test_pure_python_wheel_is_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pure-Python wheel is checked as the installed package would be (its import chain,
    statically), OD415 a note, exit 0: in `dist/*.whl` beside a compiled wheel it failed the
    whole gate with exit 2 (survey 20). Python imports it from the unpacked files."""
    whl = _pure_wheel(tmp_path)
    with zipfile.ZipFile(whl) as zf:
        assert zipfile.is_zipfile(whl) and not [n for n in zf.namelist() if ".so" in n]
        zf.extractall(tmp_path / "unpacked")
    real = subprocess.run([sys.executable, "-c", "import purepkg; print(purepkg.VALUE)"],
                          cwd=tmp_path / "unpacked", capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "1", real.stderr
    for args in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", *args, str(whl), str(reference()))
        assert res.code == 0 and res.err == "", res.err
        reports = res.json()["reports"]
        assert [r["target"]["path"].endswith(p) for r, p in
                zip(reports, ("purepkg", "libmyop.so"), strict=True)] == [True, True], reports
        assert [f["code"] for f in reports[0]["findings"]] == ["OD415"]
        assert reports[0]["findings"][0]["severity"] == "info"


def _wheel(where: Path, name: str, files: dict[str, bytes], *, info: bool = True,
           meta: str = "") -> Path:
    """A wheel ``name`` holding ``files`` and (``info``) its dist-info (``meta``: more
    METADATA lines)."""
    whl = where / name
    dist, version = name.split("-")[:2]
    with zipfile.ZipFile(whl, "w") as zf:
        for member, data in files.items():
            zf.writestr(member, data)
        if info:
            zf.writestr(f"{dist}-{version}.dist-info/METADATA",
                        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{meta}")
            zf.writestr(f"{dist}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: "
                        + "-".join(name[:-4].split("-")[2:]) + "\n")
            zf.writestr(f"{dist}-{version}.dist-info/RECORD", "".join(
                f"{m},,\n" for m in [*files, f"{dist}-{version}.dist-info/METADATA",
                                     f"{dist}-{version}.dist-info/WHEEL",
                                     f"{dist}-{version}.dist-info/RECORD"]))
    return whl


def test_a_windows_wheel_is_checked_not_called_pure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """regex's win_amd64 wheel holds ``_regex.cp311-win_amd64.pyd``: the wheel walk collected
    ``.so`` names only and said "no compiled library in the wheel (only Python files in it)",
    exit 2 (survey 20). The .pyd is checked: a library for Windows, OD405 with that fix."""
    whl = _wheel(tmp_path, "winpkg-1.0-cp311-cp311-win_amd64.whl", {
        "winpkg/__init__.py": b"from . import _w\n",
        "winpkg/_w.cp311-win_amd64.pyd": b"MZ\x90\x00" + bytes(4096)})
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(tmp_path / "u")
    real = subprocess.run([sys.executable, "-c", "import winpkg"], cwd=tmp_path / "u",
                          capture_output=True, text=True, timeout=60)
    assert "cannot import name '_w'" in real.stderr, real.stderr
    res = cli(capsys, "check", "--static", "-f", "json", str(whl))
    (rep,) = res.json()["reports"]
    assert res.code == 1 and rep["target"]["path"].endswith("_w.cp311-win_amd64.pyd")
    od405 = next(f for f in rep["findings"] if f["code"] == "OD405")
    assert od405["fix"].startswith("nothing repairs it here: it is a library for Windows")


def test_a_zip_without_dist_info_is_no_wheel(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A zip named .whl with a library and no .dist-info passed with "No problem found",
    exit 0 (survey 20); pip refuses it ("invalid wheel, .dist-info directory not found")."""
    whl = _wheel(tmp_path, "zipso-1.0-py3-none-any.whl",
                 {"zipso/__init__.py": b"", "zipso/libx.so": reference().read_bytes()},
                 info=False)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
                          "--no-index", str(whl)], capture_output=True, text=True, timeout=120)
    assert pip.returncode != 0 and ".dist-info directory not found" in pip.stderr, pip.stderr
    res = cli(capsys, "check", "--static", str(whl))
    line = _one_error(res.err)
    assert res.code == 2 and "[OD405]" in line and "no .dist-info directory" in line, line


def test_a_dist_directory_is_its_wheels_and_an_sdist_is_its_wheels_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m build` writes an sdist and a wheel into dist/. `check dist/` said "no shared
    library in this directory", exit 2; the sdist given alone was OD405 "a gzip-compressed
    file … git lfs pull" (survey 20). The directory's wheels are checked; an sdist beside its
    own wheel is that wheel's source, and alone it is OD415 "a source distribution", exit 2."""
    import tarfile

    dist = tmp_path / "dist"
    dist.mkdir()
    whl = _wheel(dist, "distpkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "distpkg/__init__.py": b"import os, torch\ntorch.ops.load_library(os.path.join("
                               b"os.path.dirname(__file__), 'libmyop.so'))\n",
        "distpkg/libmyop.so": reference().read_bytes()})
    src = tmp_path / "distpkg-1.0"
    src.mkdir()
    (src / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: distpkg\nVersion: 1.0\n")
    sdist = dist / "distpkg-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        tf.add(src, arcname="distpkg-1.0")
    res = cli(capsys, "check", "--static", "-f", "json", str(dist))
    assert res.code == 0, res.err
    assert [r["target"]["path"].rsplit("!/", 1)[-1] for r in res.json()["reports"]] == \
        ["distpkg/libmyop.so"], res.json()["reports"]
    res = cli(capsys, "check", "--static", str(sdist), str(whl))
    assert res.code == 0 and res.err == "", res.err
    res = cli(capsys, "check", "--static", str(sdist))
    line = _one_error(res.err)
    assert res.code == 2 and "[OD415]" in line and "a source distribution of distpkg-1.0" \
        in line, line


def test_pure_python_package_is_a_note_not_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A package with no compiled library is still checked for what breaks an import (its
    chain, requirements, pins): OD415 is a note in its report, exit 0 — the exit code no
    longer depends on whether some other note was found (bs4's OD507 made it a report, exit
    0; soupsieve's nothing made it 'nothing to check', exit 2: survey 11's P13)."""
    pkg = tmp_path / "tinyop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    # It imports (the chain is fine): there is simply no compiled library behind it.
    subprocess.run([sys.executable, "-c", "import tinyop"], cwd=tmp_path, check=True,
                   timeout=60)
    for args in ([str(pkg)], ["--package", "tinyop", "--cwd", str(tmp_path)]):
        res = cli(capsys, "check", "--static", *args)
        assert res.code == 0 and "[OD415]" not in res.err, res.err
        assert "No problem found (informational notes only)" in res.out, res.out
        assert "OD415 Python package tinyop has no compiled library and defines no operator" \
            in res.out, res.out
    res = cli(capsys, "check", "--static", "-f", "json", str(pkg))
    [finding] = res.json()["reports"][0]["findings"]
    assert (finding["code"], finding["severity"], finding["subject"]) == (
        "OD415", "info", str(pkg)), finding
    assert "Python files read: 1; compiled files: none" in finding["evidence"], finding
    # A pure-Python package that defines an op (torch.library.custom_op) is checked as usual.
    pyop = fixture("compile/python/pyop_fake")
    assert not list(pyop.rglob("*.so"))
    res = cli(capsys, "check", "--static", str(pyop))
    assert res.code == 0 and "OD415" not in res.err, res.err
    assert "pyfake::double" in res.out and "(Python package pyop_fake)" in res.out


def test_package_directory_header_names_the_library(
        capsys: pytest.CaptureFixture[str]) -> None:
    pkg = PKG_DIR / "myop"
    assert (pkg / "__init__.py").exists(), "run `make fixtures`"
    res = cli(capsys, "check", "--static", str(pkg))
    header = res.out.splitlines()[0]
    assert "(Python package myop, loads libmyop.so: ELF64 x86-64, shared object," in header
    assert "?" not in header


def test_missing_package_header_does_not_call_the_directory_the_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "--package", "nosuchpkg_xyz", "--cwd", str(tmp_path))
    assert res.code == 1 and "OD501" in res.out
    header = res.out.splitlines()[0]
    assert header.endswith(f"{tmp_path} (the directory Python package nosuchpkg_xyz was "
                           "looked up from)"), header


@pytest.mark.skipif(shutil.which("setpriv") is None and os.geteuid() == 0,
                    reason="root reads every directory; setpriv (util-linux) is needed to drop "
                    "CAP_DAC_OVERRIDE")
def test_unlistable_directory_is_permission_denied(tmp_path: Path) -> None:
    """A directory mode 000: as a normal user, or as root without the capabilities that let
    root read anything (setpriv drops them), listing it fails — and the report says so."""
    top = tmp_path / "libs"
    locked = top / "locked"
    locked.mkdir(parents=True)
    shutil.copy(reference(), locked / "libmyop.so")
    shutil.copy(reference(), top / "libmyop.so")
    locked.chmod(0)
    prefix = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                  "--inh-caps=-dac_override,-dac_read_search"]
    try:
        probe = subprocess.run([*prefix, sys.executable, "-c",
                                f"import os; os.listdir({str(locked)!r})"],
                               capture_output=True, text=True, timeout=60)
        assert "PermissionError" in probe.stderr  # the fault is real for this user
        for target, checked in ((locked, False), (top, True)):
            p = subprocess.run([*prefix, sys.executable, "-m", "opdoctor", "check", "--static",
                                str(target)], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, NO_COLOR="1"))
            line = _one_error(p.stderr)
            assert p.returncode == 2, p.stderr
            assert f"{locked}: permission denied" in line and "[OD403]" in line, line
            assert "no shared library" not in p.stderr
            # The readable library beside it is still checked.
            assert (f"— {top / 'libmyop.so'} (" in p.stdout) is checked, p.stdout
    finally:
        locked.chmod(0o755)


def test_missing_path_stays_od401(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "/nonexistent/libmyop.so")
    assert res.code == 2 and "[OD401]" in _one_error(res.err)


def test_scan_python_exit_code_is_the_documented_one() -> None:
    helptext = " ".join(cli_proc("scan", "--help").out.split())
    assert "3 usage (a --python that is not a usable Python included)" in helptext
    for bad in ("/nonexistent/python", str(fixture("integrity/not_elf.so"))):
        res = cli_proc("scan", "--python", bad)
        assert res.code == 3, (bad, res.err)
        assert "Traceback" not in res.err and f"--python {bad}" in _one_error(res.err)


@pytest.mark.probe
def test_dangling_impl_evidence_is_one_line_per_op(
        capsys: pytest.CaptureFixture[str]) -> None:
    """OD126 on a library whose TORCH_LIBRARY_IMPL has no TORCH_LIBRARY def: torch's own
    _dispatch_find_dangling_impls dump (several lines per op) becomes one evidence line."""
    res = cli(capsys, "check", "-f", "json", str(fixture("registration/impl_only.so")))
    found = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD126"]
    assert found, res.out
    for line in found[0]["evidence"]:
        assert "\n" not in line, line
        assert line.startswith("myop::weighted_sum: no schema (no def); CPU kernel registered "
                               "at ") and "weighted_sum.cpp:" in line, line


def test_linker_script_preview_is_escaped_once(capsys: pytest.CaptureFixture[str]) -> None:
    """glibc's libc.so is a GNU ld script: ld.so refuses it, and the report shows its first
    bytes as Python would (one backslash per newline, not two)."""
    candidates = ("/usr/lib/x86_64-linux-gnu/libc.so", "/usr/lib64/libc.so", "/usr/lib/libc.so")
    script = next((Path(p) for p in candidates if Path(p).is_file()), None)
    if script is None:
        pytest.skip("no libc.so linker script here (libc6-dev / glibc-devel not installed)")
    assert script.read_bytes().startswith(b"/* GNU ld script")
    with pytest.raises(OSError, match="invalid ELF header"):
        ctypes.CDLL(str(script))
    res = cli(capsys, "check", "--static", str(script))
    assert res.code == 1
    line = next(x for x in res.out.splitlines() if "first bytes:" in x)
    assert "first bytes: '/* GNU ld script\\n" in line and "\\\\n" not in line, line


def test_a_python_module_file_is_checked_as_its_module(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """openmmtorch ships `openmmtorch.py` beside its extension (survey 19): given that path,
    opdoctor checked the text file as a library too — OD405 "not an ELF file: it is a text
    file", exit 1 — beside the package-mode report. A `.py` file is checked as the module it
    is, from the directory Python finds it in; with `--package` of the same name, once."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "plainmod.py").write_text("import json\nVALUE = json.dumps([1])\n")
    real = subprocess.run([sys.executable, "-c", "import plainmod; print(plainmod.VALUE)"],
                          cwd=site, capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "[1]", real.stderr
    for extra in ((), ("--package", "plainmod")):
        res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
                  *extra, str(site / "plainmod.py"))
        reports = res.json()["reports"]
        assert res.code == 0 and len(reports) == 1, (extra, res.out)
        assert reports[0]["target"]["kind"] == "Python module plainmod", reports[0]["target"]
        assert "OD405" not in [f["code"] for f in reports[0]["findings"]]
    # a package's __init__.py is its package
    (site / "plainpkg").mkdir()
    (site / "plainpkg" / "__init__.py").write_text("VALUE = 2\n")
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"PYTHONPATH={site}",
              str(site / "plainpkg" / "__init__.py"))
    assert res.code == 0 and res.json()["reports"][0]["target"]["kind"] == \
        "Python package plainpkg", res.out
    # a file that no import can name (a hyphen) is still read as the file it is
    odd = site / "not-a-module.py"
    odd.write_text("X = 1\n")
    res = cli(capsys, "check", "--static", "-f", "json", str(odd))
    assert [f["code"] for f in res.json()["reports"][0]["findings"]] == ["OD405"]


@pytest.mark.parametrize("dist", ["shpkg", "otherdist"])
def test_a_wheel_of_a_release_the_environment_has_is_no_shadowing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], dist: str) -> None:
    """PyYAML 6.0.2's wheel checked in an environment with pyyaml 6.0.4: "6.0.4 installed
    later on sys.path is hidden" (OD502, a warning) named opdoctor's own unpack directory and
    failed `--fail-on warning` (survey 20); installing the wheel replaces that release. A
    note; a wheel of another distribution that brings the same package still warns (pip
    installs both, one hides the other)."""
    site = tmp_path / "site"
    (site / "shpkg").mkdir(parents=True)
    (site / "shpkg" / "__init__.py").write_text("VERSION = '2.0'\n")
    info = site / "shpkg-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shpkg\nVersion: 2.0\n")
    (info / "RECORD").write_text("shpkg/__init__.py,,\nshpkg-2.0.dist-info/METADATA,,\n")
    whl = _wheel(tmp_path, f"{dist}-1.0-py3-none-any.whl",
                 {"shpkg/__init__.py": b"VERSION = '1.0'\n"})
    res = cli(capsys, "check", "-f", "json", "--fail-on", "warning", "--env",
              f"PYTHONPATH={site}", str(whl))
    (od502,) = [f for f in res.json()["reports"][0]["findings"] if f["code"] == "OD502"]
    if dist == "shpkg":
        assert res.code == 0 and od502["severity"] == "info", od502
        assert "the environment also has shpkg 2.0; the wheel's shpkg 1.0 was checked" in \
            od502["message"], od502
    else:
        assert res.code == 1 and od502["severity"] == "warning", od502


@pytest.mark.probe
def test_a_wheel_edited_after_it_was_built_is_one_warning_in_both_modes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """msgpack's wheel with one file changed after the build (its RECORD hash stale): OD508
    said "the installed files … differ", offered a reinstall from the index, and was an error
    with --static but a warning with the probe — the gate flipped with the mode (survey 20).
    pip installs such a wheel (it does not verify RECORD): one warning, the wheel's words."""
    import base64
    import hashlib

    init = b"import os, torch\ntorch.ops.load_library(os.path.join(os.path.dirname(__file__)," \
        b" 'libmyop.so'))\n"
    whl = _wheel(tmp_path, "recpkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "recpkg/__init__.py": init + b"# edited after the build\n",
        "recpkg/libmyop.so": reference().read_bytes()})
    digest = base64.urlsafe_b64encode(hashlib.sha256(init).digest()).rstrip(b"=").decode()
    rebuilt = tmp_path / "w" / whl.name
    rebuilt.parent.mkdir()
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(rebuilt, "w") as dst:
        for item in src.infolist():  # the RECORD of the file before it was edited
            data = src.read(item)
            if item.filename.endswith("RECORD"):
                data = data.replace(b"recpkg/__init__.py,,",
                                    f"recpkg/__init__.py,sha256={digest},{len(init)}".encode())
            dst.writestr(item, data)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                          "--target", str(tmp_path / "t"), str(rebuilt)], capture_output=True,
                         text=True, timeout=120)
    assert pip.returncode == 0, pip.stderr  # pip installs it anyway
    for args in (["--static"], []):
        res = cli(capsys, "check", "-f", "json", *args, str(rebuilt))
        (od508,) = [f for r in res.json()["reports"] for f in r["findings"]
                    if f["code"] == "OD508"]
        assert res.code == 0 and od508["severity"] == "warning", (args, od508["message"])
        assert od508["message"] == "the wheel's RECORD does not match its files (0 missing, 1 " \
            "changed): it was modified after it was built", od508
        assert od508["fix"].startswith("Rebuild the wheel")


def test_a_vendored_library_missing_from_a_wheel_is_the_wheels_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pillow 13.0.0's wheel without its vendored libjpeg (its RECORD still lists it): the
    report of _imaging led with "✗ Cause 2 — libjpeg-….so is not found" and a fix to
    `patchelf --set-rpath … /tmp/opdoctor-wheel-…/PIL/_imaging….so` — a copy opdoctor unpacked
    (survey 20). The miss is the wheel's: folded under OD508, which names the file."""
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "use.c").write_text("int dep(void);\nint use(void) { return dep(); }\n")
    libs = tmp_path / "vendpkg.libs"
    pkg = tmp_path / "vendpkg"
    libs.mkdir()
    pkg.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(libs / "libdep-1a2b3c4d.so"),
                    str(tmp_path / "dep.c")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "libuse.so"),
                    str(tmp_path / "use.c"), f"-L{libs}", "-ldep-1a2b3c4d",
                    "-Wl,-rpath,$ORIGIN/../vendpkg.libs"], check=True, timeout=60)
    init = b"import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), " \
        b"'libuse.so'))\n"
    built = _wheel(tmp_path, "vendpkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "vendpkg/__init__.py": init, "vendpkg/libuse.so": (pkg / "libuse.so").read_bytes(),
        "vendpkg.libs/libdep-1a2b3c4d.so": (libs / "libdep-1a2b3c4d.so").read_bytes()})
    whl = tmp_path / "dist" / built.name
    whl.parent.mkdir()
    with zipfile.ZipFile(built) as src, zipfile.ZipFile(whl, "w") as dst:
        for item in src.infolist():  # everything but the vendored library; RECORD lists it
            if not item.filename.startswith("vendpkg.libs/"):
                dst.writestr(item, src.read(item))
    site = tmp_path / "t"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                          "--target", str(site), str(whl)], capture_output=True, text=True,
                         timeout=120)
    assert pip.returncode == 0, pip.stderr  # pip installs it anyway
    real = subprocess.run([sys.executable, "-c", "import vendpkg"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(site)})
    assert "libdep-1a2b3c4d.so: cannot open shared object file" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(whl))
    (rep,) = [r for r in res.json()["reports"] if r["target"]["path"].endswith("libuse.so")]
    assert res.code == 1
    assert rep["diagnosis"]["root_findings"] == ["OD508"], rep["diagnosis"]
    assert rep["diagnosis"]["consequences"]["OD508"] == ["OD201", "OD301"], rep["diagnosis"]
    od508 = next(f for f in rep["findings"] if f["code"] == "OD508")
    assert od508["message"] == "the wheel's RECORD does not match its files (1 missing: " \
        "vendpkg.libs/libdep-1a2b3c4d.so; 0 changed): it was modified after it was built", od508
    assert "/tmp/" not in rep["diagnosis"]["summary"]
    # No string of the report names the temporary copy (it is gone when the command ends;
    # a baseline's subjects must not change from run to run): the wheel's own paths instead.
    assert "opdoctor-wheel-" not in res.out, res.out[:2000]
    assert any(f"{whl}!/vendpkg/libuse.so" in line for f in rep["findings"]
               for line in f["evidence"]), rep["findings"]
    again = cli(capsys, "check", "-f", "json", "--static", str(whl)).json()["reports"][0]
    assert [f["subject"] for f in again["findings"]] == [f["subject"] for f in rep["findings"]]


def test_a_wheels_library_needing_what_no_one_installed_gets_no_fix_on_a_temporary_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wheel's library that NEEDs a library neither the wheel nor this system has: the fix
    said `patchelf --set-rpath … /tmp/opdoctor-wheel-…/…` or LD_LIBRARY_PATH — edits of the
    copy opdoctor unpacked. It says where the library must come from: the system where the
    wheel runs, or the wheel itself (auditwheel repair)."""
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "use.c").write_text("int dep(void);\nint use(void) { return dep(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libsysdep.so"),
                    str(tmp_path / "dep.c")], check=True, timeout=60)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libuse.so"),
                    str(tmp_path / "use.c"), f"-L{tmp_path}", "-lsysdep"], check=True,
                   timeout=60)
    (tmp_path / "libsysdep.so").unlink()
    with pytest.raises(OSError, match=r"libsysdep\.so: cannot open shared object file"):
        ctypes.CDLL(str(tmp_path / "libuse.so"))
    whl = _wheel(tmp_path, "syspkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "syspkg/__init__.py": b"", "syspkg/libuse.so": (tmp_path / "libuse.so").read_bytes()})
    res = cli(capsys, "check", "-f", "json", "--static", str(whl))
    (rep,) = res.json()["reports"]
    od201 = next(f for f in rep["findings"] if f["code"] == "OD201")
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD201"]
    assert od201["fix"].startswith(f"libsysdep.so is neither in {whl.name} nor found on this "
                                   "system: install it where the wheel is to run"), od201["fix"]
    assert "auditwheel repair" in od201["fix"] and "/tmp/" not in od201["fix"]
    # A library the wheel does ship beside it: said so, still no edit of the temporary copy.
    whl = _wheel(tmp_path, "besidepkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "besidepkg/__init__.py": b"", "besidepkg/libuse.so": (tmp_path / "libuse.so").read_bytes(),
        "besidepkg/libsysdep.so": b"\x7fELF" + bytes(60)})
    res = cli(capsys, "check", "-f", "json", "--static", str(whl))
    fixes = [f["fix"] for r in res.json()["reports"] for f in r["findings"]
             if f["code"] == "OD201"]
    assert fixes and all("/tmp/" not in f for f in fixes), fixes


def test_a_renamed_wheel_says_its_file_name_and_metadata_disagree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """orjson's cp312 wheel renamed to ``…-cp311-cp311-…whl`` (its WHEEL still says cp312):
    pip installs it under CPython 3.11 (it trusts the file name) and the import fails. The
    fix was "pip install --force-reinstall … with this interpreter" — the file itself is the
    fault: its name and its metadata disagree (survey 20)."""
    (tmp_path / "e.c").write_text("extern void *PyType_GetDict_312(void *);\n"
                                  "void *PyInit__ext(void) { return PyType_GetDict_312(0); }\n")
    lib = tmp_path / "_ext.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "e.c")],
                   check=True, timeout=60)
    built = _wheel(tmp_path, "mtpkg-1.0-cp312-cp312-linux_x86_64.whl", {
        "mtpkg/__init__.py": b"from . import _ext\n",
        "mtpkg/_ext.cpython-312-x86_64-linux-gnu.so": lib.read_bytes()})
    whl = tmp_path / "dist" / "mtpkg-1.0-cp311-cp311-linux_x86_64.whl"
    whl.parent.mkdir()
    built.rename(whl)
    site = tmp_path / "t"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                          "--target", str(site), str(whl)], capture_output=True, text=True,
                         timeout=120)
    assert pip.returncode == 0, pip.stderr  # pip installs it: the file name fits
    real = subprocess.run([sys.executable, "-c", "import mtpkg"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(site)})
    assert "cannot import name '_ext'" in real.stderr, real.stderr
    res = cli(capsys, "check", "-f", "json", "--static", str(whl))
    (rep,) = res.json()["reports"]
    od503 = next(f for f in rep["findings"] if f["code"] == "OD503")
    assert res.code == 1 and rep["diagnosis"]["root_findings"] == ["OD503"]
    assert od503["message"].endswith("— the wheel's file name says cp311-cp311-linux_x86_64, "
                                     "its WHEEL metadata cp312-cp312-linux_x86_64: it was "
                                     "renamed"), od503["message"]
    assert od503["fix"].startswith("Use the wheel built for this Python (mtpkg 1.0's "
                                   "cp311-cp311-linux_x86_64 wheel"), od503["fix"]


@pytest.mark.probe
def test_a_wheel_checked_without_its_requirements_is_the_environments_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cryptography's wheel checked where cffi is not installed: the probe's import fails on
    `No module named '_cffi_backend'` — OD511, an error, exit 1 — while `--static` said an
    OD514 warning, exit 0 (survey 20). The wheel is not at fault (installing it brings its
    requirements): both modes warn, and the fix installs the requirement where it is checked."""
    whl = _wheel(tmp_path, "needsreq-1.0-cp311-cp311-linux_x86_64.whl", {
        "needsreq/__init__.py": b"import absentreq\nimport os, torch\ntorch.ops.load_library("
                                b"os.path.join(os.path.dirname(__file__), 'libmyop.so'))\n",
        "needsreq/libmyop.so": reference().read_bytes()}, meta="Requires-Dist: absentreq>=1.0\n")
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(tmp_path / "u")
    real = subprocess.run([sys.executable, "-c", "import needsreq"], cwd=tmp_path / "u",
                          capture_output=True, text=True, timeout=60)
    assert "No module named 'absentreq'" in real.stderr, real.stderr
    for args in ([], ["--static"]):
        res = cli(capsys, "check", "-f", "json", *args, str(whl))
        findings = [f for r in res.json()["reports"] for f in r["findings"]]
        assert res.code == 0, (args, [(f["code"], f["severity"]) for f in findings])
        if not args:
            (od511,) = [f for f in findings if f["code"] == "OD511"]
            assert od511["severity"] == "warning" and "the environment checking the wheel " \
                "lacks its requirement(s) absentreq" in od511["message"], od511


def test_a_wheel_whose_record_quotes_its_paths_is_the_installed_distributions_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensordict 0.14.3's wheel quotes RECORD's path fields (`"tensordict/_C.so",sha256=…`,
    valid CSV; pip installs it and rewrites them unquoted). Checked beside the installed
    tensordict, the wheel's copy was owned by no distribution: a warning "1 other copy … run
    from another directory" instead of the note every other wheel gets (survey 24's F8)."""
    init = b"VALUE = 1\n"
    import base64
    import hashlib

    digest = base64.urlsafe_b64encode(hashlib.sha256(init).digest()).rstrip(b"=").decode()
    whl = tmp_path / "quotedpkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("quotedpkg/__init__.py", init)
        zf.writestr("quotedpkg-1.0.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: quotedpkg\nVersion: 1.0\n")
        zf.writestr("quotedpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: "
                    "true\nTag: py3-none-any\n")
        zf.writestr("quotedpkg-1.0.dist-info/RECORD",
                    f'"quotedpkg/__init__.py",sha256={digest},{len(init)}\n'
                    '"quotedpkg-1.0.dist-info/METADATA",,\n"quotedpkg-1.0.dist-info/WHEEL",,\n'
                    '"quotedpkg-1.0.dist-info/RECORD",,\n')
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--no-index", "--target", str(site), str(whl)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr  # pip takes it (and writes its own RECORD)
    assert (site / "quotedpkg" / "__init__.py").is_file()
    res = cli(capsys, "check", "--static", "-f", "json", "--cwd", str(tmp_path), "--env",
              f"PYTHONPATH={site}", str(whl))
    od502 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD502"]
    assert [f["severity"] for f in od502] == ["info"], od502
    assert od502[0]["message"].startswith("the environment also has quotedpkg 1.0"), od502
