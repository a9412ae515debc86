"""Running the real CLI in-process and as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from opdoctor.cli import main


@dataclass
class Result:
    """Exit code and captured streams of one CLI run."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.out)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """Run ``opdoctor ARGS`` in this process (fast) and capture its output."""
    capsys.readouterr()
    code = main(list(args))
    cap = capsys.readouterr()
    return Result(code, cap.out, cap.err)


def cli_text_and_json(capsys: pytest.CaptureFixture[str], tmp: Any, *args: str
                      ) -> tuple[Result, Any]:
    """One in-process ``opdoctor ARGS`` run: its text report (stdout) and the same run's JSON
    report (``--also-write json=FILE`` under the directory ``tmp``) — one probe, not two."""
    path = os.path.join(str(tmp), "also-written-report.json")
    res = cli(capsys, *args, "--also-write", f"json={path}")
    with open(path, encoding="utf-8") as fh:
        return res, json.load(fh)


def cli_proc(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
             stdin: int | None = subprocess.DEVNULL, cwd: object = None) -> Result:
    """Run ``python -m opdoctor ARGS`` as a real subprocess (for hangs, signals, plugins)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-m", "opdoctor", *args], capture_output=True,
                       text=True, timeout=timeout, env=full_env, stdin=stdin,
                       cwd=str(cwd) if cwd is not None else None)
    return Result(p.returncode, p.stdout, p.stderr)


def make_package(root: Any, name: str, files: dict[str, Any], init: str) -> Any:
    """A package directory ``root/name`` holding copies of ``files`` (name in the package →
    source path) and ``init`` as its ``__init__.py``; returns the directory."""
    import shutil
    from pathlib import Path

    pkg = Path(root) / name
    pkg.mkdir()
    for dest, src in files.items():
        shutil.copy(src, pkg / dest)
    (pkg / "__init__.py").write_text(init)
    return pkg


def dist_info(site: Any, name: str, version: str, files: list[str],
              requires: tuple[str, ...] = (), wheel_tag: str = "") -> Any:
    """An installed distribution's ``name-version.dist-info`` in ``site``: METADATA (with
    each of ``requires`` as a Requires-Dist), a RECORD listing ``files`` (paths relative to
    the site) and, with ``wheel_tag``, a WHEEL file with that tag; returns the directory."""
    from pathlib import Path

    info = Path(site) / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    if wheel_tag:
        (info / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                    f"Tag: {wheel_tag}\n")
    return info
