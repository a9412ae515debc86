"""``opdoctor explain``: error text (a message, a traceback, a CI log) → cause, fix, next step.

The matcher lives in :mod:`opdoctor.explain.matcher`; the patterns are data
(``explain/patterns.toml``), validated when loaded.
"""

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
