"""Bad input: one clear line on stderr, exit 2 (or 1 with a finding), never a traceback or hang."""

from __future__ import annotations

import os
import random
import shutil
import struct
import time
from pathlib import Path

import pytest

from opdoctor.pipeline import run_check
from tests.conftest import reference
from tests.helpers import cli, cli_proc


def _one_clean_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line, got: {err!r}"
    assert "Traceback" not in err
    return lines[0]


def test_missing_path_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "/nonexistent/libmyop.so")
    assert res.code == 2
    line = _one_clean_line(res.err)
    assert "no such file" in line and "OD401" in line


def test_dangling_symlink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "libgone.so"
    link.symlink_to(tmp_path / "nowhere.so")
    res = cli(capsys, "check", str(link))
    assert res.code == 2
    assert "dangling symbolic link" in _one_clean_line(res.err)


def test_directory_without_libraries_exits_2(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("no library here")
    res = cli(capsys, "check", str(tmp_path))
    assert res.code == 2
    line = _one_clean_line(res.err)
    assert "no shared library in this directory" in line and "[OD415]" in line


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    start = time.monotonic()
    res = cli_proc("check", str(fifo), timeout=30)
    assert time.monotonic() - start < 30
    assert res.code == 2
    assert "FIFO" in _one_clean_line(res.err)


def test_dev_zero_does_not_hang() -> None:
    res = cli_proc("check", "/dev/zero", timeout=30)
    assert res.code == 2
    assert "character device" in _one_clean_line(res.err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "libsecret.so"
    shutil.copy(reference(), p)
    p.chmod(0)
    res = cli(capsys, "check", str(p))
    assert res.code == 2
    assert "permission denied" in _one_clean_line(res.err)


def _patched(tmp_path: Path, name: str, offset: int, fmt: str, value: int) -> Path:
    data = bytearray(reference().read_bytes())
    struct.pack_into(fmt, data, offset, value)
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def test_forged_section_header_offset_is_truncation(tmp_path: Path) -> None:
    p = _patched(tmp_path, "shoff.so", 0x28, "<Q", 1 << 40)  # e_shoff far past EOF
    assert [f.code for f in run_check(str(p)).findings] == ["OD406"]


def test_forged_entry_size_is_malformed(tmp_path: Path) -> None:
    p = _patched(tmp_path, "shentsize.so", 0x3A, "<H", 7)  # e_shentsize
    report = run_check(str(p))
    assert [f.code for f in report.findings] == ["OD411"]
    assert "e_shentsize is 7" in report.findings[0].evidence[0]


def test_forged_huge_phnum_is_bounded(tmp_path: Path) -> None:
    p = _patched(tmp_path, "phnum.so", 0x38, "<H", 0xFFFF)  # e_phnum
    start = time.monotonic()
    report = run_check(str(p))
    assert time.monotonic() - start < 5
    assert report.findings and report.findings[0].code == "OD406"


def test_invalid_class_byte_is_not_elf(tmp_path: Path) -> None:
    p = _patched(tmp_path, "class.so", 4, "<B", 9)
    report = run_check(str(p))
    assert [f.code for f in report.findings] == ["OD405"]


def test_random_corruption_never_crashes(tmp_path: Path) -> None:
    """Seeded corruption of a real library: every outcome is a report, never an exception."""
    base = reference().read_bytes()
    rng = random.Random(1234)
    p = tmp_path / "fuzz.so"
    for _ in range(60):
        data = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            off = rng.randrange(0, 0x800 if rng.random() < 0.7 else len(data))
            data[off:off + 8] = rng.randbytes(8)
        p.write_bytes(bytes(data[: rng.choice([len(data), rng.randrange(64, len(data))])]))
        report = run_check(str(p))
        for f in report.findings:
            assert f.code.startswith("OD"), f
        assert all(c.status.value != "failed" for c in report.checks), report.checks


@pytest.mark.parametrize("content", [b"", b"hello\n"], ids=["empty", "text"])
def test_a_file_that_is_no_library_claims_no_cause_checked(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes) -> None:
    """An empty file or a text file named .so is cause 4 and nothing else is "checked": no
    family that reads no ELF (numpy-abi runs on package directories too) may mark a cause
    clean for it."""
    lib = tmp_path / "x.so"
    lib.write_bytes(content)
    res = cli(capsys, "check", "-f", "json", str(lib))
    causes = {c["cause"]: c for c in res.json()["reports"][0]["causes"]}
    assert res.code == 1 and causes[4]["state"] == "found"
    assert all(c["state"] == "not_checked" for n, c in causes.items() if n != 4), causes


def test_a_library_named_as_dlopen_takes_it_is_looked_up_as_the_loader_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """explain suggests `opdoctor check libodbc.so.2` for a message that names only the
    library; that was "no such file" (OD401) unless the file lay in the current directory
    (survey 11's P14). A bare library name that is no file here is looked up as dlopen looks
    it up in the target interpreter's process: found, that file is checked; not found, one
    line says where the loader looked — as ctypes sees it."""
    import ctypes
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    lib_dir = tmp_path / "libs"
    lib_dir.mkdir()
    shutil.copy(reference(), lib_dir / "libodnamed.so")
    absent = "libopdoctor_absent_name.so.7"
    with pytest.raises(OSError, match=f"{absent}: cannot open shared object file"):
        ctypes.CDLL(absent)
    res = cli(capsys, "check", "--static", absent)
    line = _one_clean_line(res.err)
    assert res.code == 2 and line.startswith(
        f"opdoctor: error: {absent}: no such file here, and the dynamic loader does not find "
        "it either (") and "not in /etc/ld.so.cache" in line and "[OD401]" in line, line
    # found through LD_LIBRARY_PATH, as the target process has it: that file is checked (the
    # real loader finds it there too: its error is about libmyop.so's own dependency)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    ran = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libodnamed.so')"],
                         env={**env, "LD_LIBRARY_PATH": str(lib_dir)}, capture_output=True,
                         text=True, timeout=60)
    assert "libodnamed.so: cannot open" not in ran.stderr, ran.stderr
    res = cli(capsys, "check", "--static", "-f", "json", "--env", f"LD_LIBRARY_PATH={lib_dir}",
              "libodnamed.so")
    assert res.json()["reports"][0]["target"]["path"] == str(lib_dir / "libodnamed.so")
    assert not res.json()["errors"]
    # a library of the operating system: checked where the loader finds it, else its package
    res = cli(capsys, "check", "--static", "libodbc.so.2")
    try:
        ctypes.CDLL("libodbc.so.2")
    except OSError:
        assert res.code == 2 and "apt-get install libodbc2" in _one_clean_line(res.err)
    else:
        assert res.code in (0, 1) and "libodbc.so.2" in res.out, res.err
