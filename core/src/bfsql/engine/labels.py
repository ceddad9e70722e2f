"""The names an entity goes by, as search matches and scores them."""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_LABELS", "labels_of"]

MAX_LABELS = 20
"""Synonyms per entity considered by exact matching and scoring."""


def labels_of(entity_id: str, metadata: dict[str, Any], limit: int = MAX_LABELS) -> list[str]:
    """The names an entity goes by: its ``name`` (else its id) and up to ``limit`` synonyms."""
    labels: list[str] = []
    name = metadata.get("name")
    labels.append(name if isinstance(name, str) and name.strip() else entity_id)
    synonyms = metadata.get("synonyms")
    if isinstance(synonyms, list):
        labels.extend(s for s in synonyms[:limit] if isinstance(s, str) and s.strip())
    return list(dict.fromkeys(labels))
