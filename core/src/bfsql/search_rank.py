"""Lexical ranking shared by stores without a full-text engine of their own."""

from __future__ import annotations

__all__ = ["lexical_rank"]


def lexical_rank(query: str, name: str | None, synonyms: list[str]) -> tuple[int, int] | None:
    """Rank of a match of ``query`` against a name and synonyms, lower is better.

    0: exact name, 1: exact synonym, 2: name prefix, 3: synonym prefix,
    4: name contains, 5: synonym contains; the second element is the length of the
    matched label, so shorter labels come first. None when nothing matches.
    """
    q = query.casefold().strip()
    if not q:
        return None
    best: tuple[int, int] | None = None
    labels = [(0, name)] if name else []
    labels += [(1, s) for s in synonyms]
    for offset, label in labels:
        text = label.casefold()
        if text == q:
            rank = 0
        elif text.startswith(q):
            rank = 2
        elif q in text:
            rank = 4
        else:
            continue
        candidate = (rank + offset, len(label))
        if best is None or candidate < best:
            best = candidate
    return best
