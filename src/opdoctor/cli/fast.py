"""Fast answers for the commands whose output depends only on opdoctor itself.

``opdoctor --version`` prints a constant. ``opdoctor codes …`` and ``opdoctor explain OD301``
print the code catalog, which only changes when opdoctor's sources or the installed plugins
change — yet computing it means importing typer (and pydantic behind it) and every check
family with its readers, ~0.5 s, for a command people run to look something up.

So the first run of such a command goes through the full CLI, in this process, and its exact
output (stdout, stderr, exit code) is stored; later runs with the same arguments replay it
without importing anything heavy. The stored answer is keyed by everything it depends on:

* opdoctor's version and the size and mtime of every file of the package (a changed check
  declares other codes);
* the interpreter, and the directories of ``sys.path`` with their mtimes (installing or
  removing a distribution — a plugin of the ``opdoctor.checks`` entry-point group included —
  adds or removes a ``*.dist-info`` directory there, which changes the directory's mtime);
* the arguments.

An answer is stored only when the registry had no plugin at all (a plugin's own code could
change its codes without any of the above changing), the command exited 0, and it wrote
nothing to stderr but what it always writes. A corrupt or unreadable cache is no cache.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Sequence

from opdoctor import __version__, cachefile

FORMAT = 1  # bump when the stored layout changes


def _memoizable(args: Sequence[str]) -> bool:
    """True for ``codes [options]`` and ``explain ODnnn [options]``, without --help."""
    if not args or any(a in ("--help", "-h", "--debug") for a in args):
        return False
    if args[0] == "codes":
        return True
    return (args[0] == "explain" and len(args) >= 2 and len(args[1]) == 5
            and args[1].upper().startswith("OD") and args[1][2:].isdecimal())


def _key(args: Sequence[str]) -> str:
    """Everything the answer depends on, as one string."""
    parts = [str(FORMAT), __version__, sys.executable, sys.version]
    parts += cachefile.source_stamps()
    for entry in sys.path:
        try:
            parts.append(f"{entry}:{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}:-")
    parts.append("\0".join(args))
    return "\n".join(parts)


def _cache_file(key: str) -> str:
    return os.path.join(cachefile.cache_dir(), f"cli-{zlib.crc32(key.encode()):08x}.marshal")


def _read(path: str, key: str) -> tuple[str, str, int] | None:
    try:
        stored_key, out, err, code = cachefile.read(path)
        if stored_key != key or not isinstance(out, str) or not isinstance(err, str):
            return None
        return out, err, int(code)
    except (ValueError, TypeError):  # no cache (None), or not what this module stores
        return None


def _write(path: str, key: str, out: str, err: str, code: int) -> None:
    # A failed write is no cache: the next run computes the answer again.
    cachefile.write(path, (key, out, err, code))


def _emit(out: str, err: str) -> None:
    try:
        if err:
            sys.stderr.write(err)
            sys.stderr.flush()
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # `opdoctor codes | head`: as the full CLI, not an error
        pass


def _run_and_store(args: list[str], path: str, key: str) -> int:
    """Run the full CLI in this process, capture what it writes, store it when safe."""
    import contextlib
    import io

    from opdoctor.cli.app import main as app_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = app_main(args)
    _emit(out.getvalue(), err.getvalue())
    checks = sys.modules.get("opdoctor.checks")
    registry = checks.load_registry() if checks is not None else None  # lru-cached: no cost
    builtin_only = (registry is not None and not registry.problems
                    and len(registry.checks) == len(checks.BUILTIN_CHECKS))  # type: ignore[union-attr]
    if code == 0 and builtin_only:
        _write(path, key, out.getvalue(), err.getvalue(), code)
    return code


def fast_main(args: list[str]) -> int | None:
    """Answer ``--version``, ``codes …`` and ``explain ODnnn …`` quickly; None: not handled."""
    if args == ["--version"]:
        _emit(f"opdoctor {__version__}\n", "")
        return 0
    if not _memoizable(args):
        return None
    try:
        key = _key(args)
    except OSError:
        return None
    path = _cache_file(key)
    hit = _read(path, key)
    if hit is not None:
        _emit(hit[0], hit[1])
        return hit[2]
    return _run_and_store(args, path, key)
