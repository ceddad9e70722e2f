"""intersect_subgraphs: the nodes within k hops of every seed (see docs/traversal.md).

All seeds are walked at once (multi-source BFS with bit sets): every visited node carries
one bit per seed that has reached it, and each level expands only the nodes that gained
bits, passing those bits on. A node's edges are fetched once per level it gains bits in (the
cache answers the repeats), the whole call shares one set of traversal limits, and memory is one
integer per visited node, however many seeds there are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bfsql.budgets import DEFAULT_LIMITS, TraversalLimits
from bfsql.engine.answer import AnswerRoom, Traversal, page_columns, tally
from bfsql.engine.arguments import check_hops, check_limit, check_min_mentions, check_seeds
from bfsql.engine.assemble import drop_low_mentions, fetch_detail
from bfsql.engine.filters import Filters, read_filters
from bfsql.engine.traverse import Expansion, ProgressFn, Triple, capped, fewer_hops, time_note, truncations
from bfsql.errors import UnknownEntity
from bfsql.graph import Graph
from bfsql.hop_memo import remembers_hops
from bfsql.models import ConnectionPath, Truncation
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer
from bfsql.rows import Neighbourhood

__all__ = ["PATHS_MAX", "PATHS_NODES", "connections", "intersect_subgraphs", "reach_all"]

PATHS_NODES = 50
"""Shared nodes, nearest first, whose connections to the seeds are traced."""

PATHS_MAX = 200
"""Seed-to-node paths traced in all (the answer budget may show fewer)."""


@dataclass
class Reach:
    """What a multi-source walk reached."""

    common: dict[str, int] = field(default_factory=dict)
    """Nodes reached by every seed -> the hop at which the last seed reached them."""
    types: dict[str, str] = field(default_factory=dict)
    """Entity type of every visited node."""
    names: dict[str, str | None] = field(default_factory=dict)
    """Display name of every visited node."""
    arrivals: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """For every visited node, ``(hop, seed bits)`` each time seeds reached it: hop = the distance to those seeds."""
    cuts: Expansion = field(default_factory=Expansion)
    """Hub caps, nodes cut and dangling edges (in ``capped_nodes``, ``nodes_cut``, ``dangling_edges``)."""
    visited: set[str] = field(default_factory=set)


async def reach_all(
    graph: Graph,
    seeds: list[str],
    k: int,
    *,
    limits: TraversalLimits,
    exclude_types: frozenset[str] = frozenset(),
    progress: ProgressFn | None = None,
    first_hop: dict[str, Neighbourhood] | None = None,
    deadline: float | None = None,
) -> Reach:
    """Walk ``k`` undirected hops from all ``seeds`` (known ids) at once; the nodes every seed reaches.

    ``limits.max_walk_nodes`` bounds the nodes visited by the whole walk; when a level would pass
    it, the new nodes kept are the first by id. Neighbours of an excluded type are not visited.
    ``first_hop`` is the seeds' hop when the caller has it already. A level after the first does not begin past
    ``deadline`` (a :func:`time.perf_counter` time): the walk stops there (``cuts.walked``).
    """
    reach = Reach()
    if first_hop is None:
        first_hop = await graph.hop(seeds)
    mask = _seed_bits(reach, seeds, first_hop)
    everyone = (1 << len(seeds)) - 1
    dangling: set[Triple] = set()
    gained = dict(mask)
    pacer = Pacer()
    for level in range(1, k + 1):
        if not gained:
            break
        if level > 1 and deadline is not None and time.perf_counter() >= deadline:
            reach.cuts.walked = level - 1
            break
        rows_of = first_hop if level == 1 else await graph.hop(list(gained))
        now, fresh = await _spread(reach, gained, rows_of, mask, dangling, limits, exclude_types, pacer)
        _admit_level(reach, level, mask, now, fresh, everyone, limits)
        gained = now
        if progress is not None:
            await progress(level, k, f"hop {level}/{k}: {len(mask)} nodes visited, {len(reach.common)} shared")
    reach.cuts.dangling_edges = len(dangling)
    reach.visited = set(mask)
    return reach


def _seed_bits(reach: Reach, seeds: list[str], first_hop: dict[str, Neighbourhood]) -> dict[str, int]:
    """Give each seed its bit (its arrival at hop 0, its type and name in ``reach``); the seed bits by node."""
    known = {seed: first_hop[seed].node for seed in seeds}
    mask: dict[str, int] = {}
    for bit, seed in enumerate(seeds):
        mask[seed] = 1 << bit
        reach.arrivals[seed] = [(0, 1 << bit)]
        reach.types[seed], reach.names[seed] = known[seed]
    if len(seeds) == 1:
        reach.common[seeds[0]] = 0
    return mask


async def _spread(
    reach: Reach,
    gained: dict[str, int],
    rows_of: dict[str, Neighbourhood],
    mask: dict[str, int],
    dangling: set[Triple],
    limits: TraversalLimits,
    exclude_types: frozenset[str],
    pacer: Pacer,
) -> tuple[dict[str, int], dict[str, int]]:
    """One level: the nodes that ``gained`` seed bits pass them along their edges (``rows_of`` them, each hub's
    within its cap). Visited nodes' new bits go into ``mask`` at once; the bits gained by visited nodes and those
    reaching new nodes (not yet in ``mask``; their types and names put in ``reach``)."""
    now: dict[str, int] = {}
    fresh: dict[str, int] = {}
    for node_id, bits in gained.items():
        there = rows_of.get(node_id)
        rows = there.edges if there is not None else None
        if not rows:
            continue
        pacer.work += len(rows) + 64
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
        for subject, predicate, obj, other_type, other_name in capped(
            node_id, rows, limits, reach.cuts.capped_nodes
        ):
            other = obj if subject == node_id else subject
            before = mask.get(other)
            if before is None:
                if other_type is None:
                    dangling.add((subject, predicate, obj))
                elif other_type in exclude_types:
                    reach.cuts.excluded_types.add(other_type)
                else:
                    fresh[other] = fresh.get(other, 0) | bits
                    if other not in reach.types:
                        reach.types[other], reach.names[other] = other_type, other_name
            elif bits & ~before:
                mask[other] = before | bits
                now[other] = now.get(other, 0) | (bits & ~before)
    return now, fresh


def _admit_level(reach: Reach, level: int, mask: dict[str, int], now: dict[str, int], fresh: dict[str, int],
                 everyone: int, limits: TraversalLimits) -> None:
    """Visit the ``fresh`` nodes (the first by id when ``max_walk_nodes`` leaves no room for all), adding them to
    ``now``; note each gain of ``now`` as an arrival at ``level``, and the nodes every seed has now reached."""
    admitted = list(fresh)
    room = limits.max_walk_nodes - len(mask)
    if len(admitted) > room:
        reach.cuts.nodes_cut += len(admitted) - room
        admitted = sorted(admitted)[: max(0, room)]
    for node_id in admitted:
        mask[node_id] = now[node_id] = fresh[node_id]
    for node_id, bits in now.items():
        reach.arrivals.setdefault(node_id, []).append((level, bits))
        if mask[node_id] == everyone:
            reach.common.setdefault(node_id, level)


def _distance(reach: Reach, node_id: str, bit: int) -> int | None:
    """Hops from the seed of ``bit`` to the node (None: not reached by it)."""
    return next((hop for hop, bits in reach.arrivals.get(node_id, []) if bits & bit), None)


async def connections(
    graph: Graph, reach: Reach, seeds: list[str], shared: list[str], limits: TraversalLimits, most: int
) -> tuple[list[ConnectionPath], int]:
    """A shortest path from every seed to each shared node, nearest nodes first, at most ``most`` paths.

    Each path is walked back from the shared node: at every step, to the first neighbour (by
    id, then edge) that the seed reached one hop sooner; one ``hop`` call per step for all
    paths. Returns the paths and how many were left out.
    """
    wanted = [(node, bit) for node in shared for bit, _ in enumerate(seeds)]
    left_out = max(0, len(wanted) - most)
    pending = [(node, bit) for node, bit in wanted[:most] if node != seeds[bit]]  # a seed needs no path to itself
    found: dict[tuple[str, int], list[Triple]] = {}
    at = {key: key[0] for key in pending}
    steps: dict[tuple[str, int], list[Triple]] = {key: [] for key in pending}
    while pending:
        rows_of = await graph.hop(sorted({at[key] for key in pending}))
        still = []
        for key in pending:
            _, bit = key
            here = at[key]
            distance = _distance(reach, here, 1 << bit)
            choices = sorted(
                ((row[2] if row[0] == here else row[0]), (row[0], row[1], row[2]))
                for row in capped(here, rows_of[here].edges if here in rows_of else [], limits, {})
                if _distance(reach, row[2] if row[0] == here else row[0], 1 << bit) == (distance or 0) - 1
            )
            if not choices:  # the walk went through a hub edge past the cap: no path to show
                continue
            other, edge = choices[0]
            steps[key].append(edge)
            at[key] = other
            if other == seeds[bit]:
                found[key] = list(reversed(steps[key]))
            else:
                still.append(key)
        pending = still
    paths = [
        ConnectionPath(seed=seeds[bit], node=node, edges=found[(node, bit)])
        for node, bit in wanted[:most]
        if (node, bit) in found
    ]
    return paths, left_out


async def _induced_edges(graph: Graph, nodes: set[str]) -> dict[Triple, None]:
    """Every edge whose both endpoints are in ``nodes`` (one ``hop`` call), in the order found (see traverse.py)."""
    rows_of = await graph.hop(sorted(nodes))
    edges: dict[Triple, None] = {}
    pacer = Pacer()
    for there in rows_of.values():
        edges.update(((s, p, o), None) for s, p, o, _, _ in there.edges if s in nodes and o in nodes)
        pacer.work += len(there.edges) + 64
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
    return edges


@remembers_hops
async def intersect_subgraphs(
    graph: Graph,
    seeds: list[str],
    k: int,
    *,
    node_types: list[str] | None = None,
    predicates: list[str] | None = None,
    topology_only: bool = False,
    exclude_node_types: list[str] | None = None,
    min_mentions: int | None = None,
    limit: int | None = None,
    limits: TraversalLimits = DEFAULT_LIMITS,
    room: AnswerRoom | None = None,
    progress: ProgressFn | None = None,
    time_limit: float | None = None,
) -> Traversal:
    """Nodes within ``k`` undirected hops of every seed, and the edges among them.

    ``limit`` caps the shared nodes listed (the nearest first, with the edges among them; no paging): ``0``
    answers the counts alone. ``room``, when given, tells how many nodes an answer could show with detail;
    metadata is fetched for those only. Walked hop by hop, no level after the first begins once the walk has run
    ``time_limit`` seconds; walked in the store, a walk the store cannot finish in its time is walked again with a
    smaller ``k``. Either way a walk cut short says its counts are lower bounds.
    """
    seeds = check_seeds(seeds, 2, "intersect_subgraphs")
    check_hops(k, "k")
    check_limit(limit)
    check_min_mentions(min_mentions)
    filters = await read_filters(graph, node_types, predicates, exclude_node_types, topology_only)
    detail, excluded = filters.detail, filters.excluded

    if graph.walks_in_store("intersect") and min_mentions is None:
        return await _intersect_in_store(graph, seeds, k, limits, filters, room, limit)

    known = await graph.hop(seeds)  # the walk's first hop
    unknown = [s for s in seeds if s not in known]
    if unknown:
        raise UnknownEntity(unknown)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    reach = await reach_all(graph, seeds, k, limits=limits, exclude_types=excluded, progress=progress, first_hop=known,
                            deadline=deadline)
    common = set(reach.common)
    edges = await _induced_edges(graph, common)

    order = sorted(common, key=lambda n: (reach.common[n], n))
    types_seen, predicates_seen = sorted({reach.types[n] for n in common}), sorted({e[1] for e in edges})
    order, triples, metadata = await drop_low_mentions(graph, order, list(edges), min_mentions, set(seeds))
    listed, listed_triples = _first(order, triples, _most(limit, limits))

    truncated = _walk_cuts(graph, reach, k, limits, time_limit, (len(order), len(triples)))
    paths, left_out = await connections(graph, reach, seeds, listed[:PATHS_NODES], limits, PATHS_MAX)
    left_out += max(0, len(listed) - PATHS_NODES) * len(seeds)
    if left_out:
        truncated.append(_paths_note(min(len(listed), PATHS_NODES), left_out))
    truncated.extend(_limit_note(len(listed), len(order), limit, limits))
    dangling = reach.cuts.dangling_edges
    answer = Traversal(
        tool="intersect_subgraphs",
        seeds=seeds,
        hops=k,
        node_ids=listed,
        types=reach.types,
        names=reach.names,
        distance=reach.common,
        triples=listed_triples,
        node_count=len(order),
        edge_count=len(triples),
        types_seen=types_seen,
        predicates_seen=predicates_seen,
        entity_type_counts=tally(map(reach.types.__getitem__, order)),
        predicate_counts=tally(e[1] for e in triples),
        truncated=truncated,
        warnings=[*filters.warnings,
                  *([f"{dangling} edge(s) point to entities missing from the graph; left out."] if dangling else [])],
        paths=paths,
    )
    await fetch_detail(graph, answer, detail, room, metadata)
    await _add_context(graph, answer, limit)
    return answer


async def _intersect_in_store(graph: Graph, seeds: list[str], k: int, limits: TraversalLimits, filters: Filters,
                              room: AnswerRoom | None, limit: int | None) -> Traversal:
    """:func:`intersect_subgraphs` walked in the store (not hop by hop), ``filters`` read already."""
    # Not the seeds' hop: it would bring every edge of a seed with a million of them, for nothing.
    found = await graph.get_nodes(seeds)
    unknown = [s for s in seeds if s not in found]
    if unknown:
        raise UnknownEntity(unknown)
    answer = await fewer_hops(lambda hops: _overlapped(graph, seeds, hops, limits, filters.excluded, room, limit), k,
                              "intersection")
    await fetch_detail(graph, answer, filters.detail, room)
    answer.warnings[:0] = filters.warnings
    await _add_context(graph, answer, limit)
    return answer


def _walk_cuts(graph: Graph, reach: Reach, k: int, limits: TraversalLimits, time_limit: float | None,
               at_least: tuple[int, int]) -> list[Truncation]:
    """The notes on what cut a walk taken hop by hop (hub caps, ``max_walk_nodes``, time, the graph's own), its
    intersection holding ``at_least`` (nodes, edges)."""
    cuts = reach.cuts
    return [*truncations(cuts.capped_nodes, cuts.nodes_cut, limits, at_least, "intersection"),
            *time_note(cuts.walked, k, time_limit, at_least, "intersection"),
            *graph.truncations(reach.visited)]


def _most(limit: int | None, limits: TraversalLimits) -> int:
    """Shared nodes an answer lists at most: ``limit``, within ``max_nodes`` (what one answer may list)."""
    return limits.max_nodes if limit is None else min(limit, limits.max_nodes)


def _first(order: list[str], triples: list[Triple], most: int) -> tuple[list[str], list[Triple]]:
    """The first ``most`` shared nodes and the edges among them."""
    if most >= len(order):
        return order, triples
    listed = set(order[:most])
    return order[:most], [e for e in triples if e[0] in listed and e[2] in listed]


def _limit_note(listed: int, shared: int, limit: int | None, limits: TraversalLimits) -> list[Truncation]:
    """Say that ``limit``, or ``max_nodes``, cut the shared nodes listed (not when ``limit`` is 0: the counts alone
    were asked for)."""
    if limit == 0 or listed >= shared:
        return []
    if limit is not None and limit <= limits.max_nodes:
        return [Truncation(
            reason="limit",
            detail=f"Returned the {listed} nearest of {shared} shared nodes (limit={limit}).",
            hint="Raise limit, or omit it, for more (intersect_subgraphs has no paging); exclude_node_types or "
            "a smaller k narrows the intersection.",
            count=shared - listed,
        )]
    return [Truncation(
        reason="max_nodes",
        detail=f"Returned the {listed} nearest of {shared} shared nodes: an answer lists at most "
        f"{limits.max_nodes} (max_nodes); the counts are of all of them.",
        hint="exclude_node_types or a smaller k narrows the intersection (intersect_subgraphs has no paging).",
        count=shared - listed,
    )]


async def _add_context(graph: Graph, answer: Traversal, limit: int | None) -> None:
    """Name the seeds and the path nodes that are not shared nodes (``answer.context``), their types and names
    read in one call where the walk did not give them; none when the call asked for the counts alone (limit 0)."""
    if limit == 0:
        return
    shared = set(answer.node_ids)
    ends = (end for path in answer.paths for s, _, o in path.edges for end in (s, o))
    answer.context = [i for i in dict.fromkeys([*answer.seeds, *ends]) if i not in shared]
    unknown = [i for i in answer.context if i not in answer.types or i not in answer.names]
    if unknown:
        nodes = await graph.get_nodes(unknown)
        for node_id, node in nodes.items():
            answer.types[node_id], answer.names[node_id] = node.entity_type, node.name
    answer.context = [i for i in answer.context if i in answer.types]


async def _overlapped(
    graph: Graph,
    seeds: list[str],
    k: int,
    limits: TraversalLimits,
    excluded: frozenset[str],
    room: AnswerRoom | None,
    limit: int | None,
) -> Traversal:
    """The answer from the store's own intersection walk (the intersect primitive): counted there, the nearest
    shared nodes listed (at most ``limit``)."""
    most = _most(limit, limits)
    count = most if room is None else min(most, room.most_nodes())
    found = await graph.intersect(seeds, k, limits, sorted(excluded), count, min(PATHS_NODES, most), PATHS_MAX)
    shown = min(found.node_count, most)
    truncated = truncations(found.capped, found.nodes_cut, limits, (found.node_count, found.edge_count),
                            "intersection")
    left_out = found.paths_left_out + max(0, shown - PATHS_NODES) * len(seeds)
    if left_out:
        truncated.append(_paths_note(min(shown, PATHS_NODES), left_out))
    truncated.extend(_limit_note(shown, found.node_count, limit, limits))
    dangling = found.dangling_edges
    return Traversal(
        tool="intersect_subgraphs",
        seeds=seeds,
        hops=k,
        **page_columns(found.page),
        triples=[(s, p, o) for s, p, o in found.edges],
        node_count=found.node_count,
        edge_count=found.edge_count,
        types_seen=found.entity_types,
        predicates_seen=found.predicates,
        entity_type_counts=found.entity_type_counts,
        predicate_counts=found.predicate_counts,
        truncated=truncated,
        warnings=[f"{dangling} edge(s) point to entities missing from the graph; left out."] if dangling else [],
        paths=[ConnectionPath(seed=p.seed, node=p.node, edges=[(s, q, o) for s, q, o in p.edges]) for p in found.paths],
        unlisted=shown - len(found.page),
    )


def _paths_note(traced: int, left_out: int) -> Truncation:
    return Truncation(
        reason="paths",
        detail=f"paths shows how the {traced} nearest shared nodes connect to the seeds; "
        f"{left_out} more seed-to-node paths were not traced.",
        hint="intersect fewer seeds, or bfs_query from a seed to a shared node with max_hops=k.",
        count=left_out,
    )
