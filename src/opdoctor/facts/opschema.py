"""Validating operator schemas with the target interpreter's own torch parser.

``torch._C.parse_schema`` runs in a subprocess of the target interpreter (opdoctor's process
never imports torch), all schemas of a run in one batch. Importing torch costs a second or two,
so verdicts are cached on disk per torch install and version (``$OPDOCTOR_CACHE_DIR`` or
``~/.cache/opdoctor``). Without torch, :func:`opdoctor.facts.registration.check_schema_syntax` is
the documented fallback.
"""

from __future__ import annotations

import json
import os

from opdoctor.facts.interp import Interpreter

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_PARSE = r"""
import json, sys
import torch
out = {}
for s in json.load(sys.stdin):
    try:
        # m.def parses with allow_typevars=False: an unknown type ("flaot") is an error there,
        # where the default parse would take it for a type variable. Older torch lacks it.
        try:
            torch._C.parse_schema(s, allow_typevars=False)
        except TypeError:
            torch._C.parse_schema(s)
        out[s] = ""
    except Exception as e:
        out[s] = str(e).strip().splitlines()[0]
print("OPDOCTOR-JSON" + json.dumps(out), flush=True)
import os
os._exit(0)  # the verdicts are out: freeing what import torch made would take ~0.5 s more
"""


def _sha256(data: bytes) -> Any:
    """SHA-256 from CPython's own module when it has one: hashlib's loads OpenSSL's libcrypto
    first, which costs more than the rest of a cached lookup (the digest is the same)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # Python <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]  # Python >= 3.12
        except ImportError:
            from hashlib import sha256
    return sha256(data)


def cache_dir() -> str:
    """Where parse verdicts are cached (plain paths: pathlib's import costs more than the
    cached lookup it would serve)."""
    return os.environ.get("OPDOCTOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "opdoctor")


def _cache_file(interp: Interpreter) -> str:
    assert interp.torch is not None
    # "typevars-off": verdicts cached before the parser ran as m.def does are not reused.
    ident = f"{interp.torch.directory}|{interp.torch.version}|typevars-off"
    key = _sha256(ident.encode()).hexdigest()
    return os.path.join(cache_dir(), f"schemas-{key[:16]}.json")


def parse_with_torch(interp: Interpreter, texts: list[str], timeout: float = 120.0
                     ) -> tuple[dict[str, str], str]:
    """({schema: "" or the parser's message}, problem) — problem is "" when torch answered."""
    if interp.torch is None or not texts:
        return {}, "torch is not installed in the target interpreter"
    path = _cache_file(interp)
    cached: dict[str, str] = {}
    try:
        with open(path) as fh:
            cached = json.loads(fh.read())
    except (OSError, ValueError):
        cached = {}
    todo = [t for t in texts if t not in cached]
    if todo:
        import subprocess  # here: cached verdicts need no child

        try:
            proc = subprocess.run([interp.invoke, "-c", _PARSE], input=json.dumps(todo),
                                  capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {}, f"torch's parser could not run: {exc}"
        marker = proc.stdout.rfind("OPDOCTOR-JSON")
        if proc.returncode != 0 or marker < 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {}, f"torch's parser failed: {last}"
        cached.update(json.loads(proc.stdout[marker + len("OPDOCTOR-JSON"):]))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(json.dumps(cached))
        except OSError:
            pass  # a read-only home only costs the next run a torch import
    return {t: cached[t] for t in texts if t in cached}, ""
