"""Turning a set of reached nodes and edges into protocol nodes and edges.

Shared by bfs_query and intersect_subgraphs: the detail filters (node_types,
predicates, topology_only), min_mentions, paging and the schema summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bfsql.backend import gather_or_cancel
from bfsql.engine.traverse import Triple
from bfsql.graph import Graph
from bfsql.models import Node, ResultEdge, SchemaSummary
from bfsql.rows import Edge

__all__ = ["Detail", "Selection", "assemble", "drop_low_mentions"]


@dataclass(frozen=True)
class Detail:
    """Which items get full detail. ``None`` means no filter (all full)."""

    node_types: frozenset[str] | None = None
    predicates: frozenset[str] | None = None
    topology_only: bool = False

    def full_node(self, entity_type: str) -> bool:
        """Whether a node of this type is returned with metadata."""
        return not self.topology_only and (self.node_types is None or entity_type in self.node_types)

    def full_edge(self, predicate: str) -> bool:
        """Whether an edge with this predicate is returned with metadata."""
        return not self.topology_only and (self.predicates is None or predicate in self.predicates)


@dataclass
class Selection:
    """The ordered nodes (with types) and the edges (sorted triples) a result is made from."""

    order: list[str]
    types: dict[str, str]
    edges: list[Triple]


def _mentions(metadata: dict[str, Any]) -> float | None:
    value = metadata.get("total_mentions")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


async def drop_low_mentions(
    graph: Graph, selection: Selection, min_mentions: int, keep: set[str]
) -> tuple[Selection, dict[str, dict[str, Any]]]:
    """Remove nodes whose ``total_mentions`` is below ``min_mentions`` and their edges.

    Nodes without a numeric ``total_mentions`` and the ids in ``keep`` (the seeds)
    stay. Returns the metadata fetched, so it is not fetched twice.
    """
    if min_mentions <= 1:
        return selection, {}
    metadata = await graph.metadata_for_nodes(selection.order)
    dropped = set()
    for node_id in selection.order:
        mentions = _mentions(metadata.get(node_id, {}))
        if node_id not in keep and mentions is not None and mentions < min_mentions:
            dropped.add(node_id)
    order = [n for n in selection.order if n not in dropped]
    edges = [e for e in selection.edges if e[0] not in dropped and e[2] not in dropped]
    return Selection(order, selection.types, edges), metadata


def page_edges(selection: Selection, start: int, stop: int) -> list[Triple]:
    """Edges belonging to nodes ``order[start:stop]``.

    An edge belongs to the page of whichever endpoint comes later in the node order,
    so across all pages every edge appears exactly once, and always on a page that
    holds or follows both of its endpoints.
    """
    if start == 0 and stop >= len(selection.order):
        return selection.edges
    position = {node_id: i for i, node_id in enumerate(selection.order)}
    return [e for e in selection.edges if start <= max(position[e[0]], position[e[2]]) < stop]


def schema_summary(types: set[str], predicates: set[str]) -> SchemaSummary:
    """A sorted schema summary."""
    return SchemaSummary(entity_types_found=sorted(types), predicates_found=sorted(predicates))


_STUB_NODE_CHARS = len('{"id":"","entity_type":""},')
_BARE_EDGE_CHARS = len('{"subject":"","predicate":"","object":""},')


def _stub_chars(node_ids: list[str], types: dict[str, str], edges: list[Triple]) -> int:
    """A lower bound of the compact JSON size of these nodes as stubs and edges as bare triples."""
    nodes = sum(_STUB_NODE_CHARS + len(n) + len(types[n]) for n in node_ids)
    return nodes + sum(_BARE_EDGE_CHARS + len(s) + len(p) + len(o) for s, p, o in edges)


async def assemble(
    graph: Graph,
    selection: Selection,
    detail: Detail,
    tool: str,
    *,
    start: int = 0,
    stop: int | None = None,
    metadata: dict[str, dict[str, Any]] | None = None,
    answer_chars: int | None = None,
) -> tuple[list[Node], list[ResultEdge]]:
    """Protocol nodes and edges for ``order[start:stop]``, full or stub per ``detail``.

    When even the stubs exceed ``answer_chars`` (see :attr:`TraversalBudget.answer_chars`),
    everything is returned as stubs without fetching metadata.
    """
    stop = len(selection.order) if stop is None else stop
    node_ids = selection.order[start:stop]
    edges = page_edges(selection, start, stop)
    if answer_chars is not None and _stub_chars(node_ids, selection.types, edges) > answer_chars:
        detail = Detail(topology_only=True)
    metadata = metadata or {}
    want_nodes = [n for n in node_ids if detail.full_node(selection.types[n]) and n not in metadata]
    want_edges = [Edge(*e) for e in edges if detail.full_edge(e[1])]
    fetched_nodes, edge_meta = await gather_or_cancel(
        graph.metadata_for_nodes(want_nodes), graph.metadata_for_edges(want_edges)
    )
    metadata = {**metadata, **fetched_nodes}

    nodes: list[Node] = []
    for node_id in node_ids:
        entity_type = selection.types[node_id]
        if detail.full_node(entity_type):
            node = Node.model_construct(id=node_id, entity_type=entity_type, metadata=dict(metadata.get(node_id, {})))
            nodes.append(graph.process_node(node, tool))
        else:
            nodes.append(Node.model_construct(id=node_id, entity_type=entity_type, metadata=None))
    result_edges: list[ResultEdge] = []
    for subject, predicate, obj in edges:
        if detail.full_edge(predicate):
            metadata = dict(edge_meta.get((subject, predicate, obj), {}))
            full = ResultEdge.model_construct(subject=subject, predicate=predicate, object=obj, metadata=metadata)
            result_edges.append(graph.process_edge(full, tool))
        else:
            bare = ResultEdge.model_construct(subject=subject, predicate=predicate, object=obj, metadata=None)
            result_edges.append(bare)
    return nodes, result_edges
