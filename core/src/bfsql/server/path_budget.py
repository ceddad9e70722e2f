"""Fitting a path_query answer to the answer budget.

First the result entities lose their ``metadata`` (id, type, name and path stay), then
results are cut from the end (the lowest scores); a ``truncated`` note in ``metadata``
says what was cut and how to get it.
"""

from __future__ import annotations

from typing import Any

from bfsql.server.budget import CHARS_PER_TOKEN, compact_json

__all__ = ["fit_paths"]

_RESERVE_CHARS = 800


def _fits(answer: Any, max_tokens: int) -> bool:
    return len(compact_json(answer)) <= max(max_tokens * CHARS_PER_TOKEN - _RESERVE_CHARS, 200)


def _with_note(answer: dict[str, Any], note: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(answer["metadata"])
    metadata["truncated"] = [*metadata.get("truncated", []), note]
    return {**answer, "metadata": metadata}


def fit_paths(answer: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Fit a path_query answer within ``max_tokens`` (estimated)."""
    if _fits(answer, max_tokens):
        return answer
    slim = {
        **answer,
        "results": [
            {**r, "entity": {key: v for key, v in r["entity"].items() if key != "metadata"}} for r in answer["results"]
        ],
    }
    slim = _with_note(
        slim,
        {
            "reason": "max_tokens",
            "detail": f"Entity metadata was left out to keep the answer under {max_tokens} tokens.",
            "hint": "Call describe_entities with the result ids for their full records.",
        },
    )
    if _fits(slim, max_tokens):
        return slim
    results = slim["results"]
    low, high = 0, len(results)
    while low < high:
        middle = (low + high + 1) // 2
        if _fits({**slim, "results": results[:middle]}, max_tokens):
            low = middle
        else:
            high = middle - 1
    cut = _with_note(
        {**slim, "results": results[:low]},
        {
            "reason": "max_tokens",
            "detail": f"Only the best {low} of {len(results)} results fit the answer budget of {max_tokens} tokens.",
            "hint": "Lower max_results, or narrow the query with type: or \"text\" filters.",
        },
    )
    return cut
