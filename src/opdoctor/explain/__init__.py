"""``opdoctor explain``: error text (a message, a traceback, a CI log) → cause, fix, next step.

The matcher lives in :mod:`opdoctor.explain.matcher`; the patterns are data
(``explain/patterns.toml``), validated when loaded. The names below are imported on first use
(PEP 562): importing a submodule such as :mod:`opdoctor.explain.fast` runs this file, and the
matcher's imports and regexes must not be paid by commands that never explain anything.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: importing typing costs start-up time
if TYPE_CHECKING:
    from opdoctor.explain.matcher import (
        Explanation,
        KnowledgeBaseError,
        Pattern,
        classify_symbol,
        explain_text,
        explanation_dict,
        load_patterns,
    )

__all__ = ["Explanation", "KnowledgeBaseError", "Pattern", "classify_symbol", "explain_text",
           "explanation_dict", "load_patterns"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from opdoctor.explain import matcher

        return getattr(matcher, name)
    raise AttributeError(f"module 'opdoctor.explain' has no attribute {name!r}")
