"""The target interpreter's facts for a job's PYTHONPATH, derived without running it.

Ground truth is the interpreter itself: each derived answer is compared with what a real child
with that PYTHONPATH reports, and the cases where a derivation would be wrong (a
``sitecustomize`` that edits sys.path, a module a ``.pth`` line imports) must be left to the
child — shown by the child answering differently from the naive derivation.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import interp

BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _real(pythonpath: str) -> dict[str, Any]:
    return interp._run_script(sys.executable, 30, {**BASE_ENV, "PYTHONPATH": pythonpath})


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = set(a) | set(b)
    return all(a.get(k) == b.get(k) for k in keys)


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return interp._run_script(sys.executable, 30, BASE_ENV)


def _tree(root: Path) -> None:
    """A shadowing torch (a regular package), a namespace-only tensorflow, plain modules."""
    (root / "a").mkdir()
    (root / "a" / "torch").mkdir()
    (root / "a" / "torch" / "__init__.py").write_text("")
    (root / "b").mkdir()
    (root / "b" / "tensorflow").mkdir()  # no __init__: a namespace portion
    (root / "b" / "mod.py").write_text("")


@pytest.mark.parametrize("pythonpath", [
    "a", "b:a", ":a", "a::b", "./a/../b", "a:a", "missing:a", "{root}/a", "{root}//b/../a",
])
def test_a_derived_answer_is_what_the_interpreter_reports(
        pythonpath: str, base: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)  # relative entries and "" are the working directory's
    pp = pythonpath.format(root=tmp_path)
    derived = interp._with_pythonpath(base, pp)
    real = _real(pp)
    assert derived is not None
    assert _same(derived, real), (derived, real)
    if os.path.abspath(pp.split(":")[0]) == str(tmp_path / "a"):  # the shadowing torch
        assert real["torch_dir"] == str(tmp_path / "a" / "torch")


def test_entries_that_could_edit_the_path_are_left_to_the_interpreter(
        base: dict[str, Any], tmp_path: Path) -> None:
    # sitecustomize on PYTHONPATH runs at start-up and may move sys.path: the child's answer
    # is not the naive one, and no answer is derived
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import sys; sys.path.append('/added-by-hook')\n")
    real = _real(str(hook))
    assert "/added-by-hook" in real["sys_path"]
    assert interp._with_pythonpath(base, str(hook)) is None
    # a module start-up imported (here the standard library's `encodings`, imported before
    # site runs) shadowed from PYTHONPATH
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "encodings").mkdir()
    assert "encodings" in base["startup_modules"]
    assert interp._with_pythonpath(base, str(shadow)) is None
    # an entry that repeats the base path: site moves it rather than adding it
    site = next(p for p in base["sys_path"] if p.endswith("site-packages"))
    real = _real(site)
    assert real["sys_path"].count(site) == 1
    assert interp._with_pythonpath(base, site) is None
    # a zip archive
    archive = tmp_path / "lib.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    assert interp._with_pythonpath(base, str(archive)) is None


def test_an_answer_cached_without_the_startup_modules_is_not_derived_from(
        base: dict[str, Any]) -> None:
    old = {k: v for k, v in base.items() if k != "startup_modules"}
    assert interp._with_pythonpath(old, "/tmp") is None


def test_inspecting_with_a_pythonpath_runs_no_interpreter_per_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs that differ in PYTHONPATH only share one child (the one without it)."""
    _tree(tmp_path)
    ran: list[dict[str, str] | None] = []
    real_run = interp._run_script

    def counting(exe: str, timeout: float, env: dict[str, str] | None,
                 neutral: bool = False) -> dict[str, Any]:
        ran.append(env)
        return real_run(exe, timeout, env, neutral)

    monkeypatch.setattr(interp, "_run_script", counting)
    monkeypatch.setattr(interp, "_ANSWERS", {})
    # another interpreter path than this process's (a venv's symlink is one), so no
    # in-process answer
    alias = tmp_path / "python"
    alias.symlink_to(sys.executable)
    found = [interp.inspect_interpreter(str(alias), env={**BASE_ENV, "PYTHONPATH": str(d)})
             for d in (tmp_path / "a", tmp_path / "b", tmp_path / "missing")]
    assert [e is not None and "PYTHONPATH" not in e for e in ran] == [True]
    assert found[0].torch is not None and found[0].torch.directory == str(tmp_path / "a" / "torch")
    assert found[0].sys_path[1] == str(tmp_path / "a")
    assert found[1].sys_path[1] == str(tmp_path / "b")


def test_an_interpreter_named_by_a_relative_path_is_run_from_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--python venv/bin/python`: the base answer's child runs in an empty directory, and the
    relative path still names the interpreter (it said "cannot run …: No such file")."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(interp, "_ANSWERS", {})
    found = interp.inspect_interpreter(os.path.join("bin", "python"),
                                       env={**BASE_ENV, "PYTHONPATH": str(tmp_path)})
    assert found.sys_path[1] == str(tmp_path)
