"""Built-in post-processing, registered like any plugin.

* Vectors never reach a client: embedding fields and long numeric lists are dropped
  from node and edge metadata.
* Traversals never carry provenance: they do not fetch it (``provenance_for_edges`` is a
  call of its own), and any provenance a backend left in edge metadata is dropped from
  bfs_query and intersect_subgraphs answers.
"""

from __future__ import annotations

from typing import Any

from bfsql.backend import PROVENANCE_KEYS
from bfsql.hookspecs import hookimpl

__all__ = ["TRAVERSAL_TOOLS", "strip_vectors"]

TRAVERSAL_TOOLS = frozenset({"bfs_query", "intersect_subgraphs"})
"""Tools whose edges are slimmed."""

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


def _strip(metadata: dict[Any, dict[str, Any]], keys: frozenset[str]) -> None:
    # Plain loops and one look-up per distinct key name: a 2-hop answer has ~100k metadata dicts.
    dropped: dict[str, bool] = {}
    for key, value in metadata.items():
        for k, v in value.items():
            hit = dropped.get(k)
            if hit is None:
                hit = dropped[k] = k.lower() in keys
            if hit or (isinstance(v, list) and len(v) > _MAX_NUMERIC_LIST and _is_vector(v)):
                metadata[key] = {k: v for k, v in value.items() if k.lower() not in keys and not _is_vector(v)}
                break


@hookimpl
def process_nodes(metadata: dict[str, dict[str, Any]], tool: str) -> None:
    """Drop vectors from the full nodes' metadata."""
    _strip(metadata, VECTOR_KEYS)


@hookimpl
def process_edges(metadata: dict[tuple[str, str, str], dict[str, Any]], tool: str) -> None:
    """Drop vectors from the full edges and, in traversal results, any provenance text a backend left in."""
    _strip(metadata, VECTOR_KEYS | PROVENANCE_KEYS if tool in TRAVERSAL_TOOLS else VECTOR_KEYS)
