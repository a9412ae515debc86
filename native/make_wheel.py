"""Build a wheel of the reference package (or of a broken variant) for the CI-gating tests.

A real wheel: a zip with the package files and a dist-info (WHEEL, METADATA, RECORD with
sha256 hashes), tagged for this interpreter. Usage:
    python native/make_wheel.py OUT_DIR NAME VERSION PKG_DIR [LIBRARY_TO_SHIP_AS_libmyop.so]
"""

import base64
import hashlib
import os
import sys
import sysconfig
import zipfile

out_dir, name, version, pkg_dir = sys.argv[1:5]
override = sys.argv[5] if len(sys.argv) > 5 else None
tag = "cp%d%d" % sys.version_info[:2]
plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
os.makedirs(out_dir, exist_ok=True)
wheel = os.path.join(out_dir, f"{name}-{version}-{tag}-{tag}-{plat}.whl")
dist = f"{name}-{version}.dist-info"
records = []


def add(zf, arcname, data):
    zf.writestr(arcname, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    records.append(f"{arcname},sha256={digest},{len(data)}")


with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
    for fname in sorted(os.listdir(pkg_dir)):
        src = os.path.join(pkg_dir, fname)
        if fname == "libmyop.so" and override:
            src = override
        if os.path.isfile(src):
            with open(src, "rb") as fh:
                add(zf, f"myop/{fname}", fh.read())
    add(zf, f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        .encode())
    add(zf, f"{dist}/WHEEL", f"Wheel-Version: 1.0\nGenerator: opdoctor-fixtures\n"
        f"Root-Is-Purelib: false\nTag: {tag}-{tag}-{plat}\n".encode())
    records.append(f"{dist}/RECORD,,")
    zf.writestr(f"{dist}/RECORD", "\n".join(records) + "\n")
print(wheel)
