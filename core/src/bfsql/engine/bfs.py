"""bfs_query: the union of the seeds' neighbourhoods (see docs/traversal.md)."""

from __future__ import annotations

from bfsql.budgets import DEFAULT_LIMITS, TraversalLimits
from bfsql.engine.answer import AnswerRoom, Detail, Traversal
from bfsql.engine.arguments import check_hops, check_min_mentions, check_page, check_seeds, type_set
from bfsql.engine.assemble import drop_low_mentions, fetch_detail, page_edges, schema_summary
from bfsql.engine.traverse import ProgressFn, expand
from bfsql.errors import UnknownEntity, clip
from bfsql.graph import Graph
from bfsql.models import Truncation

__all__ = ["bfs_query"]


async def bfs_query(
    graph: Graph,
    seeds: list[str],
    max_hops: int,
    *,
    node_types: list[str] | None = None,
    predicates: list[str] | None = None,
    topology_only: bool = False,
    exclude_node_types: list[str] | None = None,
    min_mentions: int = 1,
    limit: int | None = None,
    offset: int = 0,
    limits: TraversalLimits = DEFAULT_LIMITS,
    room: AnswerRoom | None = None,
    progress: ProgressFn | None = None,
) -> Traversal:
    """Breadth-first search from every seed at once, up to ``max_hops`` undirected hops.

    ``room``, when given, tells how many nodes of the page an answer could show with
    detail; metadata is fetched for those only.
    """
    seeds = check_seeds(seeds, 1, "bfs_query")
    check_hops(max_hops, "max_hops")
    check_page(limit, offset)
    check_min_mentions(min_mentions)
    detail = Detail(type_set(node_types, "node_types"), type_set(predicates, "predicates"), bool(topology_only))
    excluded = type_set(exclude_node_types, "exclude_node_types") or frozenset()

    reached = await expand(graph, seeds, max_hops, limits=limits, exclude_types=excluded, progress=progress)
    if not reached.distance:
        raise UnknownEntity(reached.unknown_seeds)

    distance = reached.distance
    order = reached.order()
    found = list(reached.edges)
    summary = schema_summary(
        set(reached.types.values()) | reached.excluded_types,
        reached.predicates | reached.excluded_predicates,
    )
    order, triples, known = await drop_low_mentions(graph, order, found, min_mentions, set(seeds))

    total = len(order)
    stop = total if limit is None else min(total, offset + limit)
    truncated = [*reached.truncations(limits), *graph.backend.truncations(set(distance))]
    if stop < total:
        truncated.append(
            Truncation(
                reason="page",
                detail=f"Returned nodes {offset}..{stop - 1} of {total}.",
                hint=f"Repeat the call with offset={stop} for the next page.",
                next_offset=stop,
            )
        )
    warnings = []
    if reached.unknown_seeds:
        warnings.append(
            f"Unknown seed id(s) ignored: {', '.join(clip(s) for s in reached.unknown_seeds[:10])}. "
            "Call search_entities to find canonical ids."
        )
    if reached.dangling_edges:
        warnings.append(f"{reached.dangling_edges} edge(s) point to entities missing from the graph; left out.")
    page = page_edges(order, triples, offset, stop)
    answer = Traversal(
        tool="bfs_query",
        seeds=seeds,
        hops=max_hops,
        node_ids=order[offset:stop],
        types=reached.types,
        names=reached.names,
        distance=distance,
        triples=page,
        node_count=total,
        edge_count=len(triples),
        schema_summary=summary,
        truncated=truncated,
        warnings=warnings,
        offset=offset,
        found_by=reached.found_by if page is found else None,  # still in the order found
        cross_by=reached.cross_by if page is found else None,
    )
    await fetch_detail(graph, answer, detail, room, known)
    return answer
