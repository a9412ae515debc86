"""Fetch one real PyPI wheel (no dependencies, nothing installed) and unpack it as a
site-packages directory, for the tests that check real packages (make realwheels).

Usage: python native/fetch_wheel.py SPEC DEST   — exit 1 (and say why) when unavailable, so
the Makefile records a skip reason instead of failing the build.
"""

from __future__ import annotations

import glob
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def main(spec: str, dest: str) -> int:
    """Download ``spec`` with pip and unpack it into ``dest/site``."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--only-binary=:all:", "-d", tmp, spec],
                              capture_output=True, text=True, timeout=600)
        wheels = glob.glob(f"{tmp}/*.whl")
        if proc.returncode != 0 or not wheels:
            print(f"pip download {spec} failed: {proc.stderr.strip()[-400:]}")
            return 1
        site = Path(dest) / "site"
        site.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as zf:
            zf.extractall(site)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
