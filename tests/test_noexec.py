"""Libraries the loader finds and cannot map: on a file system mounted noexec (OD419; a real
tmpfs mounted noexec, the real loader's failure, and the healthy copy of the same files
elsewhere), and under an address-space limit below the library's size (OD420 with both).

Mounting needs the privilege to mount (root in the CI container); without it the noexec tests
are skipped, naming why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BUILD, fixture
from tests.helpers import cli


@pytest.fixture
def noexec(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tmpfs mounted noexec (unmounted afterwards)."""
    where = tmp_path / "noexec"
    where.mkdir()
    mount = shutil.which("mount")
    res = subprocess.run([mount or "mount", "-t", "tmpfs", "-o", "noexec,size=64m", "tmpfs",
                          str(where)], capture_output=True, text=True, timeout=30) \
        if mount else None
    if res is None or res.returncode != 0:
        pytest.skip("cannot mount a noexec tmpfs here: "
                    + (res.stderr.strip()[:200] if res is not None else "no mount(8)"))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _load(path: Path) -> subprocess.CompletedProcess[str]:
    """What the real loader says of ``path`` (a child that dlopens it, nothing else)."""
    return subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]);"
                           " print('loaded')", str(path)], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.probe
def test_a_library_on_a_noexec_mount_is_od419(noexec: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The loader opens the file and cannot map it ("failed to map segment from shared
    object"); the check said "the load failed" with no reason (OD420). Statically: OD419,
    cause 4, the mount point and its options in the evidence and in the fix; with the probe,
    the real load's failure is folded under it. The same file in a directory that allows
    execution loads and gets no OD419."""
    lib = noexec / "chain_a_rpath.so"
    shutil.copy(fixture("loader/chain_a_rpath.so"), lib)
    shutil.copytree(fixture("loader/chain_deps"), noexec / "chain_deps")
    real = _load(lib)
    assert real.returncode != 0 and "failed to map segment from shared object" in real.stderr, \
        real.stderr[-600:]
    res = cli(capsys, "check", "-f", "json", "--static", str(lib))
    rep = res.json()["reports"][0]
    assert res.code == 1 and rep["diagnosis"]["cause"] == 4, rep["diagnosis"]
    found = [f for f in rep["findings"] if f["code"] == "OD419"]
    assert [f["subject"] for f in found][:1] == [str(lib)], found
    assert f"mount point: {noexec} (" in " ".join(found[0]["evidence"]) and "noexec" in \
        " ".join(found[0]["evidence"]), found[0]["evidence"]
    assert f"mount -o remount,exec {noexec}" in found[0]["fix"], found[0]["fix"]
    res = cli(capsys, "check", "-f", "json", str(lib))  # the probe: a plain C library, no torch
    rep = res.json()["reports"][0]
    assert rep["diagnosis"]["root_findings"][:1] == ["OD419"], rep["diagnosis"]
    assert "OD420" in rep["diagnosis"]["consequences"].get("OD419", []), rep["diagnosis"]
    ok = tmp_path / "exec"
    ok.mkdir()
    shutil.copy(lib, ok / lib.name)
    shutil.copytree(noexec / "chain_deps", ok / "chain_deps")
    assert _load(ok / lib.name).stdout.strip() == "loaded"
    res = cli(capsys, "check", "-f", "json", "--static", str(ok / lib.name))
    assert res.code == 0 and "OD419" not in res.out, res.out[-800:]


@pytest.mark.probe
def test_a_dependency_on_a_noexec_mount_is_named(noexec: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The library is fine and its RPATH leads to dependencies on a noexec mount: the real
    loader fails mapping the dependency; OD419 names it (and the library that needs it), not
    the library the user checked."""
    top = tmp_path / "top"
    top.mkdir()
    lib = top / "chain_a_rpath.so"
    shutil.copy(fixture("loader/chain_a_rpath.so"), lib)
    shutil.copytree(fixture("loader/chain_deps"), noexec / "chain_deps")
    (top / "chain_deps").symlink_to(noexec / "chain_deps")
    real = _load(lib)
    assert "libchain_b.so: failed to map segment from shared object" in real.stderr, \
        real.stderr[-600:]
    res = cli(capsys, "check", "-f", "json", str(lib))
    rep = res.json()["reports"][0]
    found = [f for f in rep["findings"] if f["code"] == "OD419"]
    assert res.code == 1 and rep["diagnosis"]["cause"] == 4, rep["diagnosis"]
    assert [Path(f["subject"]).name for f in found] == ["libchain_b.so", "libchain_c.so"], found
    assert found[0]["message"].startswith("libchain_b.so, which chain_a_rpath.so needs, is on "
                                          f"a file system mounted noexec ({noexec})"), found[0]
    assert not [f for f in rep["findings"] if f["code"] == "OD201"], rep["findings"]


@pytest.mark.probe
def test_a_wheel_is_unpacked_where_its_libraries_can_load(
        noexec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine whose temporary directory is noexec (TMPDIR here), a healthy wheel was
    an import-chain error: opdoctor unpacked it there and the probe's `import` could not map
    its library. It is now unpacked where code may run (opdoctor's cache directory), and the
    wheel is clean; nothing is left behind."""
    src = tmp_path / "h.c"
    src.write_text("int nx_helper(void) { return 7; }\n")
    so = tmp_path / "libnxhelper.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True,
                   timeout=60)
    wheel = tmp_path / "nxpkg-1.0-py3-none-linux_x86_64.whl"
    info = "nxpkg-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("nxpkg/__init__.py", "import ctypes, os\nLIB = ctypes.CDLL(os.path.join("
                    "os.path.dirname(__file__), 'libnxhelper.so'))\n")
        zf.write(so, "nxpkg/libnxhelper.so")
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: nxpkg\nVersion: 1.0\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\n")
        zf.writestr(f"{info}/RECORD", f"nxpkg/__init__.py,,\nnxpkg/libnxhelper.so,,\n"
                    f"{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TMPDIR", str(noexec))
    monkeypatch.setenv("OPDOCTOR_CACHE_DIR", str(cache))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile reads TMPDIR again
    res = cli(capsys, "check", "-f", "json", str(wheel))
    reps = res.json()["reports"]
    assert res.code == 0, [r["diagnosis"]["summary"] for r in reps]
    assert not [f for r in reps for f in r["findings"] if f["severity"] != "info"], reps
    assert not list(noexec.iterdir()) and not list((cache / "unpacked").iterdir())


@pytest.mark.probe
def test_an_address_space_limit_below_the_library_is_said_with_both_sizes(
        tmp_path: Path) -> None:
    """The loader's same words on a file system that allows execution: the job's `ulimit -v`
    (RLIMIT_AS, which the probe inherits) is below what mapping the library takes. The check
    said "the load failed"; it names the limit and the library's loadable size."""
    import json
    import resource

    src = tmp_path / "big.c"
    src.write_text("char big[400 << 20];\nint get(void) { return big[5]; }\n")
    lib = tmp_path / "libbig.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True,
                   timeout=60)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(lib)], capture_output=True, text=True, timeout=60,
                          preexec_fn=limit)
    assert "libbig.so: failed to map segment from shared object" in real.stderr, real.stderr
    assert _load(lib).stdout.strip() == "loaded"  # without the limit
    res = subprocess.run([sys.executable, "-m", "opdoctor", "check", "-f", "json", str(lib)],
                         capture_output=True, text=True, timeout=120, preexec_fn=limit)
    rep = json.loads(res.stdout)["reports"][0]
    f = next(f for f in rep["findings"] if f["code"] == "OD420")
    assert res.returncode == 1 and "address-space limit (300 MiB)" in f["message"], f
    assert "libbig.so maps 400 MiB (its PT_LOAD segments)" in " ".join(f["evidence"]), f
    assert "ulimit -v unlimited" in f["fix"], f


@pytest.mark.probe
def test_a_wheel_with_nowhere_to_run_its_copy_is_a_note_on_the_machine(
        noexec: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the temporary directory, opdoctor's cache directory and the working directory
    are all noexec, the wheel's copy cannot be loaded anywhere: the reference wheel (healthy)
    was cause 5, "import myop raised … failed to map segment". It is a warning about this
    machine (OD419, exit 0) and the probe is not run."""
    wheel = BUILD / "fixtures" / "wheels" / "good" / "myop-0.1.0-cp311-cp311-linux_x86_64.whl"
    assert wheel.exists(), f"{wheel} is missing: run `make fixtures`"
    (noexec / "cwd").mkdir()
    monkeypatch.chdir(noexec / "cwd")
    monkeypatch.setenv("TMPDIR", str(noexec))
    monkeypatch.setenv("OPDOCTOR_CACHE_DIR", str(noexec / "cache"))
    monkeypatch.setattr("tempfile.tempdir", None)
    res = cli(capsys, "check", "-f", "json", str(wheel))
    rep = res.json()["reports"][0]
    assert res.code == 0, rep["diagnosis"]
    found = [(f["code"], f["severity"]) for f in rep["findings"] if f["severity"] != "info"]
    assert found == [("OD419", "warning")], rep["findings"]
    assert not rep["sections"].get("probe", {}).get("ran"), rep["sections"].get("probe")
