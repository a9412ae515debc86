"""opdoctor with ``ast.get_source_segment`` memoised per source text.

``pychain.parse_links`` calls ``ast.get_source_segment(src, node)`` for every AST node it
visits, and each call re-splits the whole file into lines: quadratic in the file's size. This
entry point measures what opdoctor does once that is fixed, without touching ``src/``::

    run.py --entry benchmarks/realworld/fastseg_entry.py \
           --results build/realworld/results-fastseg.json
"""

from __future__ import annotations

import ast
import functools
import sys

_orig = ast._splitlines_no_ff  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=64)
def _cached(source: str) -> tuple[str, ...]:
    return tuple(_orig(source))


def _split(source: str, *rest: object) -> list[str]:
    return list(_cached(source)) if not rest else list(_orig(source, *rest))


ast._splitlines_no_ff = _split  # type: ignore[attr-defined]

if __name__ == "__main__":
    from opdoctor.cli import main

    sys.argv = ["opdoctor", *sys.argv[1:]]
    sys.exit(main())
