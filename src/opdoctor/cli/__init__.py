"""The command-line interface: the typer app (:mod:`opdoctor.cli.app`), the settings table
(:mod:`opdoctor.cli.settings`) and the bodies of the commands (:mod:`opdoctor.cli.commands`).

``main(argv) -> int`` is the console script's entry point.
"""

from __future__ import annotations

import sys

_FREEZE_AT_EXIT: list[bool] = []  # registered once per process


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``opdoctor`` script; returns the exit code.

    ``opdoctor explain "<message>"`` (:mod:`opdoctor.explain.fast`), ``--version``, ``codes``
    and ``explain ODnnn`` (:mod:`opdoctor.cli.fast`), and ``check`` with a command line of its
    documented options (:mod:`opdoctor.cli.fastcheck`) are answered without importing the
    typer app (which alone costs more than a static check of a small library); everything
    else, ``--help`` and every usage error included, goes to :mod:`opdoctor.cli.app`.
    """
    from opdoctor.cli.fast import fast_main as fast_cli

    args = list(sys.argv[1:] if argv is None else argv)
    code = None
    if args[:1] == ["explain"]:
        from opdoctor.explain.fast import fast_main

        code = fast_main(args)
        if code is not None:
            _freeze_at_exit()
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
            _freeze_at_exit()
    if code is not None:
        return code
    from opdoctor.cli.app import main as app_main

    return app_main(args)


def _freeze_at_exit() -> None:
    """At exit, move every object into the collector's permanent generation (once).

    The interpreter's last collection walks every object the run made: 12-27 ms of a small
    library's check and ~6 ms of ``explain``, measured from main's return to the process's
    end; ~4 and ~3 ms with this. Nothing of these commands needs it then: their output files
    are closed, their temporary directories removed by their own finalizers (which atexit
    runs after this)."""
    if not _FREEZE_AT_EXIT:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _FREEZE_AT_EXIT.append(True)


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


__all__ = ["main"]
