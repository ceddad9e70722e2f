"""From what a traversal reached to the rows of its answer.

Shared by bfs_query and intersect_subgraphs: the detail filters (node_types, predicates,
topology_only), min_mentions, paging, the schema summary, and the one fetch of node and
edge metadata for the items the answer can show with detail.
"""

from __future__ import annotations

from typing import Any

from bfsql.backend import gather_or_cancel
from bfsql.engine.answer import AnswerRoom, Detail, Traversal, Triple
from bfsql.graph import Graph
from bfsql.rows import Edge

__all__ = ["Detail", "drop_low_mentions", "fetch_detail", "page_edges"]


def _mentions(metadata: dict[str, Any]) -> float | None:
    value = metadata.get("total_mentions")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


async def drop_low_mentions(
    graph: Graph, order: list[str], triples: list[Triple], min_mentions: int | None, keep: set[str]
) -> tuple[list[str], list[Triple], dict[str, dict[str, Any]]]:
    """Remove nodes whose ``total_mentions`` is below ``min_mentions`` (None: no filter), and their edges.

    Nodes without a numeric ``total_mentions`` and the ids in ``keep`` (the seeds) stay.
    Returns the kept nodes and edges and the metadata fetched, so it is not fetched twice.
    """
    if min_mentions is None:
        return order, triples, {}
    metadata = await graph.metadata_for_nodes(order)
    dropped = set()
    for node_id in order:
        mentions = _mentions(metadata.get(node_id, {}))
        if node_id not in keep and mentions is not None and mentions < min_mentions:
            dropped.add(node_id)
    kept = [n for n in order if n not in dropped]
    return kept, [e for e in triples if e[0] not in dropped and e[2] not in dropped], metadata


def page_edges(order: list[str], triples: list[Triple], start: int, stop: int) -> list[Triple]:
    """Edges belonging to nodes ``order[start:stop]``.

    An edge belongs to the page of whichever endpoint comes later in the node order,
    so across all pages every edge appears exactly once, and always on a page that
    holds or follows both of its endpoints.
    """
    if start == 0 and stop >= len(order):
        return triples
    position = {node_id: i for i, node_id in enumerate(order)}
    return [e for e in triples if start <= max(position[e[0]], position[e[2]]) < stop]


async def fetch_detail(
    graph: Graph,
    answer: Traversal,
    detail: Detail,
    room: AnswerRoom | None,
    known: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Fetch, in one call each, the metadata of the nodes and edges the answer can show with detail.

    Nodes pass ``detail``'s type filter and lie within the ``room`` the answer has (none
    beyond it could be more than a stub); edges pass the predicate filter and belong to such
    a node. ``known`` is metadata fetched earlier (min_mentions). (The tool pipeline runs the
    post-processing hooks over it, once.)
    """
    answer.detail = detail
    if detail.topology_only:
        return
    ids = answer.node_ids
    reach = len(ids) if room is None else room.nodes_with_room(ids, answer.types, answer.names)
    wanted = [i for i in ids[:reach] if detail.full_node(answer.types[i])]
    beyond = set(ids[reach:])  # an edge with an end past the room belongs to a stub (its other end may be on
    edges = [  # an earlier page)
        Edge(*e) for e in answer.triples if e[0] not in beyond and e[2] not in beyond and detail.full_edge(e[1])
    ]
    known = known or {}
    fetched, fetched_edges = await gather_or_cancel(
        graph.metadata_for_nodes([i for i in wanted if i not in known]), graph.metadata_for_edges(edges)
    )
    node_metadata = {i: dict(known[i]) if i in known else dict(fetched.get(i, {})) for i in wanted}
    edge_metadata: dict[Triple, dict[str, Any]] = {e: dict(fetched_edges.get(e) or {}) for e in edges}
    answer.node_metadata = node_metadata
    answer.edge_metadata = edge_metadata
