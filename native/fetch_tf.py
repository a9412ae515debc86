"""Fetch TensorFlow's C++ headers and libtensorflow_framework from the tensorflow-cpu wheel
(pip download, nothing installed), for building the TensorFlow op-library fixtures.

Usage: python native/fetch_tf.py VERSION DEST    — exit 1 (and say why) when unavailable.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

version, dest = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="opdoctor-tf-")
try:
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                           "--only-binary=:all:", f"tensorflow-cpu=={version}", "-d", tmp],
                          capture_output=True, text=True)
    wheels = glob.glob(os.path.join(tmp, "*.whl"))
    if proc.returncode != 0 or not wheels:
        print(f"tensorflow-cpu=={version} could not be downloaded: "
              f"{(proc.stderr.strip().splitlines() or ['no wheel'])[-1]}")
        sys.exit(1)
    with zipfile.ZipFile(wheels[0]) as zf:
        members = [m for m in zf.namelist() if m.startswith("tensorflow/include/")
                   or m == "tensorflow/libtensorflow_framework.so.2"]
        zf.extractall(dest, members)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
