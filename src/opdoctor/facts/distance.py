"""Edit distance between short names (namespaces, function names): "did you mean" hints."""

from __future__ import annotations


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (names are short: the quadratic table is fine)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
