"""Built-in post-processing, registered like any plugin.

* Slimming: verbose provenance (evidence text) is stripped from edges in traversal
  results; ``describe_entity`` and ``metadata_for_edge`` still return it.
* Vectors never reach a client: embedding fields and long numeric lists are dropped
  from node and edge metadata.
"""

from __future__ import annotations

from typing import Any

from bfsql.hookspecs import hookimpl
from bfsql.models import Node, ResultEdge

__all__ = ["PROVENANCE_KEYS", "TRAVERSAL_TOOLS", "strip_vectors"]

TRAVERSAL_TOOLS = frozenset({"bfs_query", "intersect_subgraphs"})
"""Tools whose edges are slimmed."""

PROVENANCE_KEYS = frozenset({"provenance", "evidence", "text_span", "text_spans"})
"""Edge metadata keys removed from traversal results."""

VECTOR_KEYS = frozenset({"embedding", "embeddings", "vector"})
_MAX_NUMERIC_LIST = 64


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > _MAX_NUMERIC_LIST
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )


def strip_vectors(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without embedding fields or long numeric lists."""
    return {k: v for k, v in metadata.items() if k.lower() not in VECTOR_KEYS and not _is_vector(v)}


@hookimpl
def process_node(node: Node, tool: str) -> None:
    """Drop vectors from a full node's metadata."""
    if node.metadata:
        node.metadata = strip_vectors(node.metadata)


@hookimpl
def process_edge(edge: ResultEdge, tool: str) -> None:
    """Drop vectors from a full edge and, in traversal results, its provenance text."""
    if not edge.metadata:
        return
    metadata = strip_vectors(edge.metadata)
    if tool in TRAVERSAL_TOOLS:
        metadata = {k: v for k, v in metadata.items() if k not in PROVENANCE_KEYS}
    edge.metadata = metadata
