"""bfs_query: the union of the seeds' neighbourhoods (see docs/traversal.md)."""

from __future__ import annotations

import time

from bfsql.budgets import DEFAULT_LIMITS, TraversalLimits
from bfsql.engine.answer import AnswerRoom, Traversal, page_columns, tally
from bfsql.engine.arguments import check_hops, check_min_mentions, check_page, check_seeds
from bfsql.engine.assemble import drop_low_mentions, fetch_detail, page_edges
from bfsql.engine.filters import Filters, read_filters
from bfsql.engine.traverse import ProgressFn, expand, fewer_hops, time_note, truncations
from bfsql.errors import UnknownEntity, clip
from bfsql.graph import Graph
from bfsql.hop_memo import remembers_hops
from bfsql.models import Truncation

__all__ = ["bfs_query"]


@remembers_hops
async def bfs_query(
    graph: Graph,
    seeds: list[str],
    max_hops: int,
    *,
    node_types: list[str] | None = None,
    predicates: list[str] | None = None,
    topology_only: bool = False,
    exclude_node_types: list[str] | None = None,
    min_mentions: int | None = None,
    limit: int | None = None,
    offset: int = 0,
    limits: TraversalLimits = DEFAULT_LIMITS,
    room: AnswerRoom | None = None,
    progress: ProgressFn | None = None,
    time_limit: float | None = None,
) -> Traversal:
    """Breadth-first search from every seed at once, up to ``max_hops`` undirected hops.

    ``room``, when given, tells how many nodes of the page an answer could show with
    detail; metadata is fetched for those only. ``limit=0`` answers the counts alone: no node
    is listed and no metadata fetched. Where the backend can run the whole walk itself
    (the ``traverse`` primitive) and min_mentions does not need every node's metadata, the walk
    runs there and only what an answer can show comes back (a walk the store cannot finish in its time is walked
    again with fewer hops); otherwise it runs hop by hop, and no hop after the first begins once it has run
    ``time_limit`` seconds. Either way a walk cut short says its counts are lower bounds.
    """
    seeds = check_seeds(seeds, 1, "bfs_query")
    check_hops(max_hops, "max_hops")
    check_page(limit, offset)
    check_min_mentions(min_mentions)
    filters = await read_filters(graph, node_types, predicates, exclude_node_types, topology_only)
    detail, excluded = filters.detail, filters.excluded

    if graph.walks_in_store("traverse") and min_mentions is None:
        return await _bfs_in_store(graph, seeds, max_hops, limits, filters, limit, offset, room, progress)

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    reached = await expand(graph, seeds, max_hops, limits=limits, exclude_types=excluded, progress=progress,
                           deadline=deadline)
    if not reached.distance:
        raise UnknownEntity(reached.unknown_seeds)

    distance = reached.distance
    order = reached.order()
    found = list(reached.edges)
    types_seen = sorted(set(reached.types.values()) | reached.excluded_types)
    predicates_seen = sorted(reached.predicates | reached.excluded_predicates)
    order, triples, known = await drop_low_mentions(graph, order, found, min_mentions, set(seeds))

    total = len(order)
    stop = min(total, offset + _page_size(limit, limits))
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
        types_seen=types_seen,
        predicates_seen=predicates_seen,
        entity_type_counts=tally(map(reached.types.__getitem__, order)),
        predicate_counts=tally(e[1] for e in triples),
        truncated=[*truncations(reached.capped_nodes, reached.nodes_cut, limits,
                                (total + (reached.nodes_cut if min_mentions is None else 0), len(triples))),
                   *time_note(reached.walked, max_hops, time_limit, (total, len(triples))),
                   *graph.truncations(set(distance)), *_page_note(offset, stop, total)],
        warnings=[*filters.warnings, *_warnings(reached.unknown_seeds, reached.dangling_edges)],
        offset=offset,
        found_by=reached.found_by if page is found else None,  # still in the order found
        cross_by=reached.cross_by if page is found else None,
    )
    await fetch_detail(graph, answer, detail, room, known)
    return answer


async def _bfs_in_store(graph: Graph, seeds: list[str], max_hops: int, limits: TraversalLimits, filters: Filters,
                        limit: int | None, offset: int, room: AnswerRoom | None,
                        progress: ProgressFn | None) -> Traversal:
    """:func:`bfs_query` walked in the store (the ``traverse`` primitive), ``filters`` read already."""
    if progress is not None:
        await progress(0, max_hops, f"walking {max_hops} hop(s) in the store")
    answer = await fewer_hops(
        lambda hops: _surveyed(graph, seeds, hops, limits, filters.excluded, limit, offset, room), max_hops)
    if progress is not None:
        await progress(max_hops, max_hops, f"{answer.node_count} nodes, {answer.edge_count} edges")
    await fetch_detail(graph, answer, filters.detail, room)
    answer.warnings[:0] = filters.warnings
    return answer


async def _surveyed(
    graph: Graph,
    seeds: list[str],
    max_hops: int,
    limits: TraversalLimits,
    excluded: frozenset[str],
    limit: int | None,
    offset: int,
    room: AnswerRoom | None,
) -> Traversal:
    """The answer from the store's own walk (the traverse primitive): counted there, one page listed."""
    page_size = _page_size(limit, limits)
    count = page_size if room is None else min(page_size, room.most_nodes())
    survey = await graph.traverse(seeds, max_hops, limits, sorted(excluded), offset, count)
    if survey.node_count == 0:
        raise UnknownEntity(survey.unknown_seeds)
    total = survey.node_count
    stop = min(total, offset + page_size)
    columns = page_columns(survey.page)
    return Traversal(
        tool="bfs_query",
        seeds=seeds,
        hops=max_hops,
        **columns,
        triples=list(survey.edges),
        node_count=total,
        edge_count=survey.edge_count,
        types_seen=survey.entity_types,
        predicates_seen=survey.predicates,
        entity_type_counts=survey.entity_type_counts,
        predicate_counts=survey.predicate_counts,
        truncated=[*truncations(survey.capped, survey.nodes_cut, limits,
                                (total + survey.nodes_cut, survey.edge_count)),
                   *graph.truncations(set(columns["node_ids"])),
                   *_page_note(offset, stop, total)],
        warnings=_warnings(survey.unknown_seeds, survey.dangling_edges),
        offset=offset,
        unlisted=max(0, stop - offset - len(survey.page)),
    )


def _page_size(limit: int | None, limits: TraversalLimits) -> int:
    """Nodes a page lists at most: ``limit``, within ``max_nodes`` (what one answer may list)."""
    return limits.max_nodes if limit is None else min(limit, limits.max_nodes)


def _page_note(offset: int, stop: int, total: int) -> list[Truncation]:
    if stop >= total or stop <= offset:  # the last page, or nothing listed (limit=0: the counts alone)
        return []
    return [Truncation(
        reason="page",
        detail=f"Returned nodes {offset}..{stop - 1} of {total}.",
        hint=f"Repeat the call with offset={stop} for the next page.",
        next_offset=stop,
    )]


def _warnings(unknown_seeds: list[str], dangling_edges: int) -> list[str]:
    warnings = []
    if unknown_seeds:
        warnings.append(
            f"Unknown seed id(s) ignored: {', '.join(clip(s) for s in unknown_seeds[:10])}. "
            "Call search_entities to find canonical ids."
        )
    if dangling_edges:
        warnings.append(f"{dangling_edges} edge(s) point to entities missing from the graph; left out.")
    return warnings
