"""Answer budgets: every tool answer fits ``max_tokens``, estimated from its JSON size.

A traversal answer that is too large first loses detail (full nodes and edges
become stubs), then loses nodes from the end of the page; what was cut is named in
a ``truncated`` entry with a hint, and for bfs_query the offset to continue from.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CHARS_PER_TOKEN",
    "answer_limit",
    "compact_json",
    "estimate_tokens",
    "fit_list",
    "fit_record",
    "fit_schema",
    "fit_traversal",
]

CHARS_PER_TOKEN = 3
"""A deliberately low estimate: JSON full of ids tokenises worse than prose."""

_RESERVE_CHARS = 800
"""Room kept for the truncation notes added while fitting."""


def compact_json(obj: Any) -> str:
    """The answer's wire text: compact JSON, unicode kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def estimate_tokens(obj: Any) -> int:
    """Estimated tokens of an answer."""
    return len(compact_json(obj)) // CHARS_PER_TOKEN + 1


def answer_limit(max_tokens: int) -> int:
    """The characters of compact JSON an answer of ``max_tokens`` may use (room kept for truncation notes)."""
    return max(max_tokens * CHARS_PER_TOKEN - _RESERVE_CHARS, 200)


def _fits(obj: Any, max_tokens: int) -> bool:
    return len(compact_json(obj)) <= answer_limit(max_tokens)


def _stub_node(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": node["id"], "entity_type": node["entity_type"]}


def _bare_edge(edge: dict[str, Any]) -> dict[str, Any]:
    return {"subject": edge["subject"], "predicate": edge["predicate"], "object": edge["object"]}


def _cut_nodes(answer: dict[str, Any], keep: int) -> dict[str, Any]:
    nodes = answer["nodes"][:keep]
    position = {n["id"]: i for i, n in enumerate(answer["nodes"])}
    edges = [
        e for e in answer["edges"] if max(position.get(e["subject"], -1), position.get(e["object"], -1)) < keep
    ]
    return {**answer, "nodes": nodes, "edges": edges}


def fit_traversal(answer: dict[str, Any], max_tokens: int, *, offset: int | None) -> dict[str, Any]:
    """Fit a bfs_query (``offset`` given) or intersect_subgraphs (``offset=None``) answer."""
    if _fits(answer, max_tokens):
        return answer
    notes = list(answer.get("truncated", []))
    stubbed = {
        **answer,
        "nodes": [_stub_node(n) for n in answer["nodes"]],
        "edges": [_bare_edge(e) for e in answer["edges"]],
    }
    notes.append(
        {
            "reason": "max_tokens",
            "detail": f"Metadata was left out (nodes and edges returned as stubs) to keep the answer "
            f"under {max_tokens} tokens.",
            "hint": "Call describe_entities for the stubs you need, or narrow with node_types / predicates.",
        }
    )
    stubbed["truncated"] = notes
    if _fits(stubbed, max_tokens):
        return stubbed

    low, high = 0, len(stubbed["nodes"])
    while low < high:
        middle = (low + high + 1) // 2
        if _fits(_cut_nodes(stubbed, middle), max_tokens):
            low = middle
        else:
            high = middle - 1
    cut = _cut_nodes(stubbed, low)
    shown = len(answer["nodes"])
    notes = [n for n in notes if n.get("reason") != "page"]
    if offset is not None:
        next_offset = offset + low
        notes.append(
            {
                "reason": "max_tokens",
                "detail": f"Only {low} of the {shown} nodes of this page fit the answer budget of {max_tokens} "
                "tokens.",
                "hint": f"Repeat the call with offset={next_offset} (and a limit) for the rest, or use "
                "exclude_node_types to drop high-volume types.",
                "next_offset": next_offset,
            }
        )
    else:
        notes.append(
            {
                "reason": "max_tokens",
                "detail": f"Only {low} of the {shown} nodes fit the answer budget of {max_tokens} tokens.",
                "hint": "Lower k, add exclude_node_types or min_mentions, or intersect fewer hubs.",
            }
        )
    cut["truncated"] = notes
    return cut


def _shorten(value: Any, max_chars: int) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > max_chars:
        return value[:max_chars] + "…", True
    if isinstance(value, list):
        items = [_shorten(v, max_chars) for v in value[: max(max_chars // 20, 3)]]
        changed = len(value) > len(items) or any(c for _, c in items)
        return [v for v, _ in items], changed
    if isinstance(value, dict):
        pairs = {k: _shorten(v, max_chars) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    return value, False


def fit_record(record: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Fit one flat record by shortening long strings and lists; names the cut keys."""
    if _fits(record, max_tokens):
        return record
    max_chars = 4000
    while True:
        shortened: dict[str, Any] = {}
        cut_keys = []
        for key, value in record.items():
            new, changed = _shorten(value, max_chars) if key not in ("id", "entity_type") else (value, False)
            shortened[key] = new
            if changed:
                cut_keys.append(key)
        shortened["truncated"] = {
            "reason": "max_tokens",
            "detail": f"Long values of {', '.join(cut_keys)} were shortened to fit {max_tokens} tokens.",
            "hint": "The full values are in the backend; query it directly if you need them whole.",
        }
        if _fits(shortened, max_tokens) or max_chars <= 16:
            return shortened
        max_chars //= 2


def fit_list(items: list[Any], max_tokens: int, *, what: str, id_key: str = "id") -> list[Any]:
    """Fit a list answer by dropping items from the end; a final marker names the rest."""
    items = [fit_record(i, max_tokens) if isinstance(i, dict) else i for i in items]
    if _fits(items, max_tokens):
        return items

    def with_marker(keep: int) -> list[Any]:
        rest = [i.get(id_key) for i in items[keep:] if isinstance(i, dict)]
        marker = {
            "truncated": {
                "reason": "max_tokens",
                "detail": f"{len(items) - keep} of {len(items)} {what} did not fit the answer budget of "
                f"{max_tokens} tokens.",
                "hint": "Call again with the remaining ids" + (" (first 100 listed)." if len(rest) > 100 else "."),
                "remaining_ids": rest[:100],
            }
        }
        return [*items[:keep], marker]

    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _fits(with_marker(middle), max_tokens):
            low = middle
        else:
            high = middle - 1
    return with_marker(low)


def fit_schema(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Fit describe_schema by sampling its type and predicate lists (marked not comprehensive)."""
    if _fits(schema, max_tokens):
        return schema
    fitted = dict(schema)
    types, preds = list(schema["entity_types"]), list(schema["predicates"])
    keep = max(len(types), len(preds))
    while keep > 0:
        fitted["entity_types"], fitted["predicates"] = types[:keep], preds[:keep]
        fitted["comprehensive"] = False
        fitted["truncated"] = {
            "reason": "max_tokens",
            "detail": f"Only the first {keep} entity types and predicates are listed "
            f"(of {len(types)} and {len(preds)}).",
            "hint": "Use schema_summary from a bfs_query survey for the types and predicates near your seeds.",
        }
        if _fits(fitted, max_tokens):
            break
        keep //= 2
    return fitted
