"""Exit codes, usage problems and the crash log: what every command needs, imported at start
(kept free of heavy imports so `opdoctor --version` stays fast)."""

from __future__ import annotations

import os
import sys
from enum import IntEnum

# Set by cli.main from --debug: print the tracebacks of crashes, not only the log's path.
DEBUG = False


class Exit(IntEnum):
    """Documented exit codes (README, --help)."""

    OK = 0
    FINDINGS = 1
    BAD_INPUT = 2
    USAGE = 3
    INTERNAL = 4


class UsageProblem(ValueError):
    """A setting is invalid (turned into exit code 3 by the CLI)."""


def write_crash_log(text: str) -> str:
    """Write the crash log (version, argv, what crashed); its path, or "" when unwritable."""
    import tempfile

    from opdoctor import __version__

    log = os.path.join(tempfile.gettempdir(), "opdoctor-crash.log")
    try:
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"opdoctor {__version__}, Python {sys.version}\nargv: {sys.argv}\n\n{text}")
    except OSError:
        return ""
    return log


def crash(exc: BaseException, debug: bool) -> int:
    """The crash handler of every command: one message naming the crash log, the traceback
    only with --debug; returns exit code 4."""
    import traceback

    from opdoctor import __version__

    text = "".join(traceback.format_exception(exc))
    log = write_crash_log(text)
    if debug:
        sys.stderr.write(text)
    where = f"; details in {log}" if log else ""
    sys.stderr.write(
        f"opdoctor: internal error: {type(exc).__name__}: {exc}{where}\n"
        f"  this is a bug in opdoctor {__version__}: please report it with that file "
        "(rerun with --debug to print the traceback)\n")
    return int(Exit.INTERNAL)
