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
import operator
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from opdoctor.facts import commandcache
from opdoctor.facts.budget import checkpoint
from opdoctor.facts.pyast import all_nodes

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

MAX_FILES = 400
MAX_BYTES = 1 << 20
_VERSION_READ = re.compile(rb"__version__|version\(\s*['\"](?:torch|tensorflow)")
# What a module's bytes must hold before it is parsed (most of a package's modules hold
# neither; parsing them was most of this reader's time on numpy or scipy, 0.2-0.3 s a check).
# A guard's message names its framework (see _framework; the name is in a string or in a
# formatted expression, so in the source): any case, or `tf` as a word.
_NAMES_A_FRAMEWORK = re.compile(rb"(?i:torch|tensorflow|keras)|\btf\b")
# A text comparison reads `str(<name>.__version__)`: the name is one of _FW_NAMES' keys.
_FRAMEWORK_NAME = re.compile(rb"\b(?:torch|tensorflow|tf)\b")
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


def _module(file: str, wanted: Callable[[bytes], bool]) -> tuple[bytes, ast.Module] | None:
    """(source, tree) of a Python file of at most MAX_BYTES whose bytes ``wanted`` accepts
    (parsed only then); None otherwise."""
    try:
        if os.path.getsize(file) > MAX_BYTES:
            return None
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    if not wanted(raw):
        return None
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file, raw)
    return None if tree is None else (raw, tree)


def guards_in(file: str) -> list[Guard]:
    """The version-guard messages of one module (parsed only when it reads a version)."""
    module = _module(file, lambda raw: bool(_VERSION_READ.search(raw)) and b"ersion" in raw
                     and bool(_NAMES_A_FRAMEWORK.search(raw)))
    if module is None:
        return []
    tree = module[1]
    out: list[Guard] = []
    for node in all_nodes(tree):
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


@dataclass(frozen=True)
class TextCompare:
    """A comparison of a framework's version *as text* with a release: ``str(torch.__version__)
    >= "2.9"`` (torchao 0.13.0). ``str()`` turns torch's TorchVersion, which compares as a
    version, into a plain string, which compares character by character: "2.13.0" < "2.9"."""

    file: str
    line: int
    framework: str  # "torch" or "tensorflow"
    op: str  # "<", "<=", ">", ">=", with the framework's version on the left
    release: str  # the release compared with
    source: str  # the comparison as written


# by the node's class name: reading ast's classes at import would load the ast module, which
# a check of a lone library never needs (cli.dccache defers it)
_OPS = {"Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_FW_NAMES = {"torch": "torch", "tensorflow": "tensorflow", "tf": "tensorflow"}


def _str_of_version(node: ast.AST) -> str:
    """The framework whose ``__version__`` ``node`` turns into a plain ``str`` ("" if none)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "str" and len(node.args) == 1 and not node.keywords:
        arg = node.args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "__version__" and \
                isinstance(arg.value, ast.Name):
            return _FW_NAMES.get(arg.value.id, "")
    return ""


def text_comparisons_in(file: str) -> list[TextCompare]:
    """The comparisons of ``str(<framework>.__version__)`` with a release in one module."""
    module = _module(file, lambda raw: b"str(" in raw and b"__version__" in raw
                     and bool(_FRAMEWORK_NAME.search(raw)))
    if module is None:
        return []
    raw, tree = module
    text = raw.decode("utf-8", "replace")
    out: list[TextCompare] = []
    for node in all_nodes(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1 or \
                type(node.ops[0]).__name__ not in _OPS:
            continue
        op = _OPS[type(node.ops[0]).__name__]
        left, right = node.left, node.comparators[0]
        fw, release = _str_of_version(left), _version_in(right)
        if not fw:
            fw, release, op = _str_of_version(right), _version_in(left), _FLIP[op]
        if fw and release:
            out.append(TextCompare(file, node.lineno, fw, op, release,
                                   ast.get_source_segment(text, node) or ""))
    return out


@lru_cache(maxsize=8)
def find_text_comparisons(files: tuple[str, ...]) -> list[TextCompare]:
    """Text comparisons of a framework's version in the package's Python files."""
    out: list[TextCompare] = []
    for file in files[:MAX_FILES]:
        checkpoint(f"looking for version comparisons in {file}")
        out += text_comparisons_in(file)
    return out


def _release_tuple(version: str) -> tuple[int, ...]:
    m = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compare(a: str | tuple[int, ...], op: str, b: str | tuple[int, ...]) -> bool:
    """``a op b`` for two strings or two tuples."""
    fn: Any = _CMP[op]
    return bool(fn(a, b))


def misjudged(cmp: TextCompare, installed: str) -> tuple[bool, bool] | None:
    """(as text, as a version) when the comparison's two readings of ``installed`` differ —
    the package's check then takes the wrong branch for this release; None when they agree.
    Releases are compared padded with zeros (2.9 is 2.9.0)."""
    have, want = _release_tuple(installed), _release_tuple(cmp.release)
    if not have or not want:
        return None
    width = max(len(have), len(want))
    as_version = compare(have + (0,) * (width - len(have)), cmp.op,
                         want + (0,) * (width - len(want)))
    as_text = compare(installed, cmp.op, cmp.release)
    return None if as_text == as_version else (as_text, as_version)


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
    for pkg, fw in _pairs(tree):
        if (pkg == mine or mine.startswith(pkg + ".")) and fw not in out:
            out.append(fw)
    return out


def series(release: str) -> str:
    """A pip version for a release a table names: ``2.14`` → ``2.14.*`` (the series, not
    2.14.0 alone); a full ``2.9.0`` as it stands."""
    return f"{release}.*" if release.count(".") == 1 else release


def table_pair_fix(file: str, dist: str, version: str, framework: str,
                   installed: str) -> str:
    """The fix a package's own compatibility table in ``file`` gives for ``dist`` ``version``
    beside ``framework`` (torch) ``installed``: the framework release it pairs with this
    release, or the release it pairs with the installed framework ("" when the table lists
    neither)."""
    want = supported_releases(file, version) if version else []
    mine = paired_release(file, installed)
    if not want and not mine:
        return ""
    pieces = [f"pip install '{framework}=={series(want[0].split('.dev')[0])}' beside {dist} "
              f"{version}"] if want else []
    pieces += [f"the {dist} release its table pairs with {framework} {installed}: pip install "
               f"'{dist}=={series(mine[0])}'"] if mine else []
    return f"install the pair {dist} supports: " + ", or ".join(pieces)


def paired_release(file: str, framework_version: str) -> list[str]:
    """The package releases the same table pairs with the installed framework release
    (fbgemm-gpu's ``{"1.9": "2.14", "1.8": "2.13", …}`` and torch 2.13 → ["1.8"])."""
    from opdoctor.facts.pyast import parse_file

    tree = parse_file(file)
    if tree is None:
        return []
    base = re.match(r"\d+(?:\.\d+)*", framework_version)
    have = base.group(0) if base else framework_version
    return list(dict.fromkeys(pkg for pkg, fw in _pairs(tree)
                              if have == fw or have.startswith(fw + ".")))


def _pairs(tree: ast.Module) -> list[tuple[str, str]]:
    """(package release, framework release) pairs of a module's compatibility tables: tuples
    of two versions (torchao's ``(_parse_version("0.14.1"), _parse_version("2.9.0"))``) and
    dict entries (fbgemm-gpu's ``_fbgemm_torch_compat_table = {"1.9": "2.14", …}``)."""
    out: list[tuple[str, str]] = []
    for node in all_nodes(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            pair = [_version_in(e) for e in node.elts]
        elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
            out += [(k, v) for k, v in ((_version_in(k) if k else "", _version_in(v))
                                        for k, v in zip(node.keys, node.values, strict=True))
                    if k and v]
            continue
        else:
            continue
        if all(pair):
            out.append((pair[0], pair[1]))
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
commandcache.register(find_text_comparisons.cache_clear)
