"""A package's own version guard: the check in its Python that refuses (or warns about) the
installed torch or TensorFlow release.

torchao 0.14.1 skips loading its extension beside any torch but the ones in its table
("Skipping import of cpp extensions due to incompatible torch version 2.13.0+cpu for torchao
version 0.14.1"), fbgemm_gpu warns that its release "is not guaranteed to be compatible with
PyTorch 2.13.0" before its load fails, mmcv-style packages ``assert`` on ``torch.__version__``.
Read statically: the messages such a check prints or raises (a call of ``warn``/``warning``/
``error``/``print`` or a ``raise`` whose text mentions a version and an incompatibility, in a
module that reads the framework's version), their constant parts to find in what the import
printed, and the package's compatibility table when it has one (pairs of version strings).
Nothing is imported here; the probe's output says whether the guard fired.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.budget import checkpoint

MAX_FILES = 400
MAX_BYTES = 1 << 20
_VERSION_READ = re.compile(rb"__version__|version\(\s*['\"](?:torch|tensorflow)")
_INCOMPATIBLE = ("incompatib", "not compatible", "not guaranteed to be compatible",
                 "not supported", "unsupported", "mismatch", "different", "requires",
                 "too old", "upgrade", "please install",
                 # intel-extension-for-pytorch: "needs to work with PyTorch 2.8.*, but PyTorch
                 # … is found. Please switch to the matching version"
                 "needs to work with", "matching version")
_VERSION_STR = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|a|b|rc|post)\d*)?(?:\+\w+)?$")
_SINKS = {"warn", "warning", "error", "critical", "print", "exception"}
# A message that offers the release as one of several possible causes of a failed load
# (torchcodec 0.5: "Could not load libtorchcodec. Likely causes: 1. FFmpeg is not properly
# installed … 2. The PyTorch version (…) is not compatible …", raised after any failed load):
# a diagnosis hint, not a comparison of releases.
_POSSIBLE = re.compile(r"\b(?:likely|possible|probable) (?:causes?|reasons?)\b|"
                       r"this (?:can|could|may|might) happen if")


@dataclass(frozen=True)
class Guard:
    """One version-guard message in the package's sources."""

    file: str
    line: int
    framework: str  # "torch" or "tensorflow" ("keras": a Keras guard, not judged here)
    text: str  # the message as written: computed parts shown as {…}
    pieces: tuple[str, ...]  # its constant parts worth searching for (8+ characters)
    raises: bool  # a raise (the import fails) rather than a printed warning


def _text(node: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    """(message with {…} for computed parts, constant pieces) of a str / f-string / concat."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, (node.value,)
    if isinstance(node, ast.JoinedStr):
        out, pieces = "", []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out += v.value
                pieces.append(v.value)
            else:
                src = ast.unparse(v.value) if isinstance(v, ast.FormattedValue) else "…"
                out += "{" + src + "}"
        return out, tuple(pieces)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _text(node.left), _text(node.right)
        if a and b:
            return a[0] + b[0], a[1] + b[1]
    return None


def _framework(text: str) -> str:
    low = text.lower()
    if "keras" in low:
        # tensorflow-recommenders: "requires tf.keras to be Keras version 2 but got version
        # 3.15.1. For open-source TensorFlow 2.16 and above, set … TF_USE_LEGACY_KERAS=1":
        # a Keras guard; the TensorFlow release it names is no pin.
        return "keras"
    if "tensorflow" in low or "tf.__version__" in low:
        return "tensorflow"
    if "torch" in low:
        return "torch"
    return ""


def _message(call: ast.AST) -> ast.AST | None:
    if isinstance(call, ast.Call) and call.args:
        return call.args[0]
    return None


def _pieces(pieces: tuple[str, ...]) -> tuple[str, ...]:
    """Constant parts long enough to identify the message, whitespace runs trimmed (a
    backslash-continued f-string carries the source's indentation)."""
    out = []
    for p in pieces:
        for part in re.split(r"\s{2,}|\n", p):
            part = part.strip()
            if len(part) >= 8:
                out.append(part)
    return tuple(out)


def guards_in(file: str) -> list[Guard]:
    """The version-guard messages of one module (parsed only when it reads a version)."""
    try:
        if os.path.getsize(file) > MAX_BYTES:
            return []
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    if not _VERSION_READ.search(raw) or b"ersion" not in raw:
        return []
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file, raw)
    if tree is None:
        return []
    out: list[Guard] = []
    for node in ast.walk(tree):
        raises = isinstance(node, ast.Raise)
        if raises:
            msg = _message(node.exc) if isinstance(node, ast.Raise) and node.exc else None
        elif isinstance(node, ast.Assert) and node.msg is not None:
            msg, raises = node.msg, True
        elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.JoinedStr, ast.BinOp)):
            msg = node.value  # torchao 0.18: _skip_reason = f"…"; logger.warning(_skip_reason)
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(
                fn, ast.Name) else ""
            msg = _message(node) if name in _SINKS else None
        else:
            msg = None
        got = _text(msg) if msg is not None else None
        if got is None:
            continue
        text, pieces = got
        low = " ".join(text.split()).lower()
        fw = _framework(text)
        # A guard says which release it found: the message formats a value ({torch.__version__},
        # {t_major}); a fixed text ("versions may be incompatible") is advice, not a check.
        if "version" not in low or not fw or not any(w in low for w in _INCOMPATIBLE) \
                or "{" not in text or _POSSIBLE.search(low):
            continue
        found = _pieces(pieces)
        if found:
            out.append(Guard(file, getattr(node, "lineno", 0), fw, " ".join(text.split()),
                             found, raises))
    return out


@lru_cache(maxsize=8)
def find_guards(files: tuple[str, ...]) -> list[Guard]:
    """Version-guard messages in the package's Python files (once per run and package)."""
    out: list[Guard] = []
    for file in files[:MAX_FILES]:
        checkpoint(f"looking for version checks in {file}")
        out += guards_in(file)
    return out


def fired(guard: Guard, output: str) -> str:
    """The line of ``output`` the guard printed ("" when it did not fire): every constant
    piece of its message appears, in order, within a few lines."""
    flat = " ".join(output.split())
    pos = 0
    for piece in guard.pieces:
        at = flat.find(" ".join(piece.split()), pos)
        if at < 0:
            return ""
        pos = at + len(piece)
    start = flat.find(" ".join(guard.pieces[0].split()))
    return flat[start:pos][:300]


def supported_releases(file: str, package_version: str) -> list[str]:
    """The framework releases the package's own table pairs with this package version:
    torchao's ``[(_parse_version("0.14.1"), _parse_version("2.9.0")), …]`` → ["2.9.0", …]."""
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file)
    if tree is None:
        return []
    base = re.match(r"\d+(?:\.\d+)*", package_version)
    mine = base.group(0) if base else package_version
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Tuple) or len(node.elts) != 2:
            continue
        vals = [_version_in(e) for e in node.elts]
        if all(vals) and vals[0] == mine and vals[1] not in out:
            out.append(str(vals[1]))
    return out


def _version_in(node: ast.AST) -> str:
    """A version string given literally or as the one argument of a call."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            _VERSION_STR.match(node.value):
        return node.value
    return ""


commandcache.register(find_guards.cache_clear)  # keyed on the file names alone
