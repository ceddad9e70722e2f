"""How property-graph records become bfsql ids, types, predicates and metadata."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["EntityTypes", "PredicateCase", "PropertyFilter", "entity_type", "normalize_predicate"]

VECTOR_MIN_LENGTH = 16
"""A list of at least this many numbers is taken for an embedding vector."""


class PredicateCase(StrEnum):
    """How relationship types become predicates."""

    LOWER = "lower"
    UPPER = "upper"
    PRESERVE = "preserve"


def normalize_predicate(relationship_type: str, case: PredicateCase) -> str:
    """The predicate for a relationship type (``TREATS`` -> ``treats`` by default)."""
    if case is PredicateCase.LOWER:
        return relationship_type.lower()
    if case is PredicateCase.UPPER:
        return relationship_type.upper()
    return relationship_type


def entity_type(labels: Iterable[str], node_label: str) -> str:
    """A node's entity type: the first (sorted) label other than the served label, else the served label."""
    others = sorted(label for label in labels if label != node_label)
    return others[0] if others else node_label


class EntityTypes:
    """The entity type of a node from its labels, remembered per label set (a graph has few of them)."""

    def __init__(self, node_label: str) -> None:
        """Type nodes as served under ``node_label``."""
        self.node_label = node_label
        self._known: dict[tuple[str, ...], str | None] = {}

    def of(self, labels: Iterable[str]) -> str | None:
        """The entity type of a node with ``labels``; None when it lacks the served label (no entity)."""
        key = tuple(labels)
        try:
            return self._known[key]
        except KeyError:
            found = entity_type(key, self.node_label) if self.node_label in key else None
            self._known[key] = found
            return found


def _is_vector(value: Any) -> bool:
    if isinstance(value, list):  # most often a short list of strings: its length says
        return len(value) >= VECTOR_MIN_LENGTH and all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in value
        )
    return type(value).__name__ == "Vector" and type(value).__module__.startswith("neo4j")


@dataclass(frozen=True)
class PropertyFilter:
    """Turns a node's or relationship's property pairs into a metadata dict."""

    drop: frozenset[str]
    """Keys never returned (the id property, embeddings); filtered on the server already."""
    json_keys: frozenset[str]
    """Keys whose string values hold JSON (maps and nested lists a property graph cannot store)."""
    keep_vectors: bool = False
    """Keep numeric lists that look like embedding vectors."""

    @property
    def drop_list(self) -> list[str]:
        """The dropped keys, sorted: the ``$drop`` parameter of the statements that filter on the server."""
        return sorted(self.drop)

    def metadata(self, pairs: Iterable[Iterable[Any]]) -> dict[str, Any]:
        """Metadata from ``[key, value]`` pairs, sorted by key, vectors dropped and JSON decoded."""
        found: dict[str, Any] = {}
        drop, json_keys, keep_vectors = self.drop, self.json_keys, self.keep_vectors
        for key, value in pairs:
            if value is None or key in drop:
                continue
            if isinstance(value, str):  # most values: never a vector, JSON only under a JSON key
                if key in json_keys:
                    try:
                        value = json.loads(value)
                    except ValueError:
                        pass  # not JSON after all: keep the text rather than lose it
            elif not keep_vectors and _is_vector(value):
                continue
            found[key] = value
        return dict(sorted(found.items())) if len(found) > 1 else found
