"""The fast path of ``opdoctor explain "<message>"``: answer without loading the CLI framework.

typer (and pydantic behind it) and the check registry take several hundred milliseconds to
import; explaining one line must take well under 100 ms beyond the interpreter's own start.
:func:`fast_main` handles exactly the plain forms — ``explain TEXT``, ``explain -`` (stdin), with
``--format/-f text|json`` — and returns ``None`` for anything else (a code such as OD303,
``--help``, an unknown option or format), which the typer app then handles as before. The
output is byte-identical to the typer command's (same renderer, same JSON, same exit codes:
0 explained, 1 nothing matched, 3 usage error).

The regexes come from :mod:`opdoctor.explain.recache` (compiled once, stored on disk), which
is warmed before the matcher is imported; the first run with new sources writes it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence


def _parse(args: Sequence[str]) -> tuple[str, str] | None:
    """(what, format) for the plain forms, else None."""
    what: str | None = None
    fmt = "text"
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--format", "-f"):
            if i + 1 >= len(args):
                return None
            fmt = args[i + 1]
            i += 2
            continue
        if a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a.startswith("-") and a != "-":
            return None  # --help, --debug, unknown options: the typer app answers
        elif what is None:
            what = a
        else:
            return None
        i += 1
    code = what.strip().upper() if what is not None else ""
    if what is None or fmt not in ("text", "json") or (  # a code: not with re (start-up time)
            len(code) == 5 and code.startswith("OD") and code[2:].isdecimal()):  # = \d
        return None
    return what, fmt


def fast_main(argv: Sequence[str]) -> int | None:
    """Run ``explain`` for the plain forms; None when the full CLI must handle ``argv``."""
    if not argv or argv[0] != "explain":
        return None
    import gc

    # One short answer: the cyclic collector would only run during the imports (a few ms of
    # start-up) and find nothing to free. Restored for callers that stay (tests, the app).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _answer(argv)
    finally:
        if enabled:
            # Without this the collector, enabled again, would at once collect everything the
            # answer allocated (~1 ms): its young generation counted each allocation. The
            # objects go to the oldest generation instead, for a later full collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _answer(argv: Sequence[str]) -> int | None:
    parsed = _parse(argv[1:])
    if parsed is None:
        return None
    what, fmt = parsed
    text = sys.stdin.read() if what == "-" else what
    if not text.strip():
        sys.stderr.write("Error: nothing to explain (empty input)\n")
        return 3
    try:
        from opdoctor.explain import recache

        # Before the matcher's import compiles its regexes. Cold means no usable file, not
        # "nothing loaded": a long-lived caller (a test run) whose re cache is already full
        # loads nothing, and re-deriving ~700 patterns to save them again cost it ~80 ms a call.
        stored = recache.stored()
        recache.install(stored)
        warmed = stored is not None
        if not warmed:  # this run writes the cache: keep what re compiles as it compiles it
            recache.record()
        from opdoctor.explain.matcher import explain_text, explanation_dict, load_patterns

        result = explain_text(text)
        if fmt == "json":
            import json

            out = json.dumps(explanation_dict(result), indent=2)
        else:
            from opdoctor.explain.render import render_explanation

            out = render_explanation(result)
    except Exception:  # the full CLI reruns it and reports through its crash handler
        if what == "-":
            sys.stdin = __import__("io").StringIO(text)
        return None
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    finally:
        if not warmed:  # first run with these sources: the next one starts from the cache
            recache.save(p.source for p in load_patterns())
    return 0 if result.cause else 1
