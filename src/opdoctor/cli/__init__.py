"""The command-line interface: the typer app (:mod:`opdoctor.cli.app`), the settings table
(:mod:`opdoctor.cli.settings`) and the bodies of the commands (:mod:`opdoctor.cli.commands`).

``main(argv) -> int`` is the console script's entry point.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import NoReturn


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``opdoctor`` script; returns the exit code.

    Without ``argv`` (the console script, ``python -m opdoctor``) it reads ``sys.argv`` and
    ends the process itself once the answer is out (see :func:`_exit_now`); with ``argv`` (the
    tests, an embedding program) it returns, its per-command caches emptied
    (:mod:`opdoctor.facts.commandcache`).

    ``opdoctor explain "<message>"`` (:mod:`opdoctor.explain.fast`), ``--version``, ``codes``
    and ``explain ODnnn`` (:mod:`opdoctor.cli.fast`), and ``check`` with a command line of its
    documented options (:mod:`opdoctor.cli.fastcheck`) are answered without importing the
    typer app (which alone costs more than a static check of a small library); everything
    else, ``--help`` and every usage error included, goes to :mod:`opdoctor.cli.app`.
    """
    if argv is None:
        code = _main(sys.argv[1:])
        # The console script and `python -m opdoctor`: the process ends here — unless a
        # profiler or a coverage tracer still has to write its results at exit.
        if sys.getprofile() is None and sys.gettrace() is None:
            _exit_now(code)
        return code
    try:
        return _main(list(argv))
    finally:
        # The caller stays: what this command read (module trees, directory listings, import
        # chains keyed on a path) must neither go stale for its next command nor stay in memory.
        cached = sys.modules.get("opdoctor.facts.commandcache")
        if cached is not None:
            cached.clear()


def _main(args: list[str]) -> int:
    from opdoctor.cli.fast import fast_main as fast_cli

    code = None
    if args[:1] == ["explain"]:
        from opdoctor.explain.fast import fast_main

        code = fast_main(args)
    if code is None:
        code = fast_cli(args)
    if code is None and "check" in args:
        import gc

        # A short run that frees little: the cyclic collector ran ~30 times in a check of a
        # small library (~10 ms, 7 % of its CPU time; ~130 times, 90 ms, for a directory of
        # 13 libraries) and found ~1,000 objects to free each time — the same for
        # libtorch_cpu.so (peak RSS unchanged). Restored for callers that stay.
        enabled = gc.isenabled()
        gc.disable()
        try:
            code = _check(args)
        finally:
            if enabled:
                # Enabled as it is, the collector would start at once on all the run made
                # (~9 ms): its young generation counted every allocation. Moving the run's
                # objects to the oldest generation resets that count, and a later full
                # collection still frees whatever of them becomes garbage.
                gc.freeze()
                gc.unfreeze()
                gc.enable()
    if code is not None:
        return code
    from opdoctor.cli.app import main as app_main

    return app_main(args)


def _check(args: list[str]) -> int | None:
    """``check`` without the typer app (:mod:`opdoctor.cli.fastcheck`); None: not handled."""
    from opdoctor.cli import dccache, rxcache

    # Before the modules that define dataclasses and compile regexes are imported; the
    # regexes first, so every pattern compiled from here on is looked up in the cache.
    rxcache.warm()
    dccache.install()
    # facts/compile.py imports ast at the top but uses it only to read Python sources (a
    # package's registrations), which a check of a lone library never does (~1.6 ms).
    dccache.defer("ast")
    from opdoctor.cli import errors
    from opdoctor.cli.fastcheck import fast_check

    debug = "--debug" in args
    errors.DEBUG = debug
    code = None
    try:
        code = fast_check([a for a in args if a != "--debug"], debug)
    finally:
        dccache.save()
        if code is not None:  # not for the typer app's own regexes (--help, usage errors)
            rxcache.save()
    if code is None:
        dccache.stop_recording()
    return code


def _exit_now(code: int) -> NoReturn:
    """Exit with ``code`` without tearing the interpreter down.

    Freeing what a check built (ASTs of a package's modules, symbol tables, mapped files)
    one object at a time took 0.5–0.7 s after the answer was printed (``check --package
    bitsandbytes``); the exit handlers still run and both streams are flushed first.
    """
    import atexit
    import contextlib
    import os

    atexit._run_exitfuncs()  # what a normal exit runs (handlers of the libraries used)
    for stream in (sys.stdout, sys.stderr):
        # The reader went away (`| head`) or the stream is closed: nothing left to say.
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code if isinstance(code, int) and 0 <= code <= 255 else 1)


__all__ = ["main"]
