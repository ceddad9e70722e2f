"""Breadth-first expansion over the graph facade: one ``hop`` call per hop.

A hop asks the graph for the frontier's entities and their edges in both directions, each
with its other end's type and name (:meth:`~bfsql.primitives.Primitives.hop`), so the types
of the newly reached nodes come with the edges and the first hop says which seeds exist: one
call per hop, nothing else. The loop works on plain tuples; edges
are sorted only where a hub cap cuts a node's edge list.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter

from bfsql.budgets import TraversalLimits
from bfsql.engine.answer import Traversal, Triple
from bfsql.errors import StoreTimeout
from bfsql.graph import Graph
from bfsql.models import Truncation
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer
from bfsql.rows import HopEdge, Neighbourhood

__all__ = ["Expansion", "ProgressFn", "Triple", "capped", "expand", "fewer_hops", "time_note", "truncations"]

ProgressFn = Callable[[int, int, str], Awaitable[None]]
"""``progress(done, total, message)``."""

@dataclass
class Expansion:
    """What a traversal reached."""

    distance: dict[str, int] = field(default_factory=dict)
    """Hop distance of every reached node from the nearest seed."""
    levels: list[list[str]] = field(default_factory=list)
    """The reached nodes by distance (level 0: the seeds), each level in the order it was reached."""
    types: dict[str, str] = field(default_factory=dict)
    """Entity type of every reached node."""
    names: dict[str, str | None] = field(default_factory=dict)
    """Display name of every reached node (None where the store has none)."""
    edges: dict[Triple, None] = field(default_factory=dict)
    """Edges examined whose both endpoints were reached, in the order found."""
    found_by: list[int] = field(default_factory=list)
    """How many edges had been found by the end of each hop."""
    cross_by: list[list[int]] | None = field(default_factory=list)
    """For each hop, the positions (in ``edges``) of the edges it found between nodes reached
    before it; None once max_walk_nodes dropped edges (positions then shift)."""
    predicates: set[str] = field(default_factory=set)
    """Predicates of those edges."""
    unknown_seeds: list[str] = field(default_factory=list)
    excluded_types: set[str] = field(default_factory=set)
    """Types of neighbours removed by exclude_node_types (still part of schema_summary)."""
    excluded_predicates: set[str] = field(default_factory=set)
    dangling_edges: int = 0
    """Edges pointing at ids the graph does not know; left out."""
    capped_nodes: dict[str, int] = field(default_factory=dict)
    """Hub id -> its total edge count, for hubs whose edges were capped."""
    nodes_cut: int = 0
    """Neighbours not visited because the walk reached ``max_walk_nodes``."""
    walked: int | None = None
    """The hops walked when the walk ran out of its time before the last (None: it did not)."""

    def order(self) -> list[str]:
        """Every reached node, nearest first, then by id: the order of answers and pages."""
        return [node_id for level in self.levels for node_id in sorted(level)]


def truncations(capped_nodes: dict[str, int], nodes_cut: int, limits: TraversalLimits, at_least: tuple[int, int],
                whole: str = "neighbourhood") -> list[Truncation]:
    """The cuts a walk made because of ``limits``: the hubs whose edges were capped (with their edge counts), and
    the neighbours not visited once a walk taken hop by hop reached ``max_walk_nodes``. Either makes the answer's
    counts lower bounds: each note says the ``whole`` answer holds ``at_least`` (nodes, edges)."""
    nodes, edges = at_least
    bound = f"the whole {whole} holds at least {nodes} nodes and {edges} edges"
    cuts: list[Truncation] = []
    if capped_nodes:
        skipped = sum(total - limits.max_edges_per_node for total in capped_nodes.values())
        cuts.append(
            Truncation(
                reason="max_edges_per_node",
                detail=(
                    f"{len(capped_nodes)} hub node(s) have more than {limits.max_edges_per_node} edges; "
                    f"{skipped} of their edges were not followed. node_count and edge_count count the walk within "
                    f"that cap: {bound}."
                ),
                hint="Seed a bfs_query at a hub with exclude_node_types to skip high-volume neighbours, "
                "or use intersect_subgraphs to narrow the question.",
                capped_nodes=sorted(capped_nodes)[:20],
            )
        )
    if nodes_cut:
        cuts.append(
            Truncation(
                reason="max_walk_nodes",
                detail=f"The walk, taken hop by hop in the server, reached its bound of {limits.max_walk_nodes} "
                f"nodes and stopped; {nodes_cut} further neighbour(s) were not visited. node_count and edge_count "
                f"count what was walked: {bound}.",
                hint="Lower max_hops, add exclude_node_types, or start from a more specific seed.",
                count=nodes_cut,
            )
        )
    return cuts


def time_note(walked: int | None, hops: int, time_limit: float | None, at_least: tuple[int, int],
              whole: str = "neighbourhood") -> list[Truncation]:
    """Say that a walk taken hop by hop stopped after ``walked`` of its ``hops`` hops, its time (``time_limit``
    seconds) spent: its counts, those of the hops walked, are lower bounds (``at_least``: nodes, edges)."""
    if walked is None:
        return []
    nodes, edges = at_least
    return [Truncation(
        reason="time_limit",
        detail=f"The walk, taken hop by hop in the server, had run {time_limit:g}s (half the call's timeout) after "
        f"{walked} of {hops} hops and stopped. node_count and edge_count count those hops: the whole {whole} holds "
        f"at least {nodes} nodes and {edges} edges.",
        hint="Lower max_hops, add exclude_node_types, or start from a more specific seed.",
    )]


async def fewer_hops(walk: Callable[[int], Awaitable[Traversal]], hops: int, whole: str = "neighbourhood") -> Traversal:
    """``walk(hops)``, a walk in the store; where the store runs out of time, the same walk with one hop fewer, and
    so on down to one hop (whose timeout is the answer's error). A shorter walk's nodes and edges are among the
    longer one's, so its answer says it is a lower bound of the ``whole`` asked for."""
    walked = hops
    while True:
        try:
            answer = await walk(walked)
        except StoreTimeout as exc:
            if walked == 1:
                raise
            walked, cause = walked - 1, exc
            continue
        if walked < hops:
            answer.hops = hops
            answer.truncated.insert(0, Truncation(
                reason="time_limit",
                detail=f"The walk of {hops} hops in the store ran out of time ({cause.message.rstrip('.')}); this "
                f"answer is the walk of {walked} hop(s). node_count and edge_count count those hops: the whole "
                f"{whole} holds at least {answer.node_count} nodes and {answer.edge_count} edges.",
                hint="Lower the hops, add exclude_node_types, or start from a more specific seed.",
            ))
        return answer


def capped(node_id: str, rows: list[HopEdge], limits: TraversalLimits, hubs: dict[str, int]) -> list[HopEdge]:
    """``rows`` within the hub cap: the first ``max_edges_per_node`` in edge order; a cut hub is noted in ``hubs``."""
    if len(rows) <= limits.max_edges_per_node:
        return rows
    hubs[node_id] = len(rows)
    return sorted(rows)[: limits.max_edges_per_node]


async def expand(
    graph: Graph,
    seeds: list[str],
    hops: int,
    *,
    limits: TraversalLimits,
    exclude_types: frozenset[str] = frozenset(),
    progress: ProgressFn | None = None,
    deadline: float | None = None,
) -> Expansion:
    """Visit every node within ``hops`` undirected hops of any seed, within ``limits``.

    Seeds are always kept, whatever their type; neighbours of an excluded type are
    neither kept nor expanded, and the edges touching them are dropped. When a hop would
    pass ``max_walk_nodes``, the new nodes kept are the first by id and the walk stops there.
    A hop after the first does not begin past ``deadline`` (a :func:`time.perf_counter` time): the walk stops
    and says how many hops it walked (:attr:`Expansion.walked`).
    """
    result = Expansion()
    # The first hop also says which seeds exist (hop answers the entities asked, unknown ones left out).
    first_hop = await graph.hop(list(dict.fromkeys(seeds)))
    frontier = _seed_level(result, seeds, first_hop)
    pacer = Pacer()
    for hop in range(1, hops + 1):
        if not frontier:
            break
        if hop > 1 and deadline is not None and time.perf_counter() >= deadline:
            result.walked = hop - 1
            break
        rows_of = first_hop if hop == 1 else await graph.hop(frontier)
        new, cross = await _scan_hop(result, frontier, rows_of, limits, exclude_types, pacer)
        frontier = _admit(result, hop, new, cross, limits)
        result.found_by.append(len(result.edges))
        if progress is not None:
            await progress(hop, hops, f"hop {hop}/{hops}: {len(result.distance)} nodes, {len(result.edges)} edges")
        if result.nodes_cut:
            break
    return result


def _seed_level(result: Expansion, seeds: list[str], first_hop: Mapping[str, Neighbourhood]) -> list[str]:
    """Put the ``seeds`` that exist (those ``first_hop`` answers) at distance 0 and note the others as unknown;
    level 0."""
    result.unknown_seeds = [s for s in seeds if s not in first_hop]
    for seed in seeds:
        if seed in first_hop:
            result.distance[seed] = 0
            result.types[seed], result.names[seed] = first_hop[seed].node
    frontier = list(result.distance)
    result.levels.append(frontier)
    return frontier


async def _scan_hop(
    result: Expansion,
    frontier: list[str],
    rows_of: Mapping[str, Neighbourhood],
    limits: TraversalLimits,
    exclude_types: frozenset[str],
    pacer: Pacer,
) -> tuple[dict[str, tuple[str, str | None]], list[int]]:
    """Read one hop's edges (``rows_of`` the ``frontier``, each hub's within its cap): keep those to nodes reached
    before and to new neighbours (in ``result.edges``, their predicates in ``result.predicates``), note dangling and
    excluded ones in ``result``; the new neighbours (their type and name) and the positions of the edges among
    nodes reached before."""
    distance, edges = result.distance, result.edges
    found_before = len(edges)
    # Edges are kept in the order they are found (a dict, not a set): the tuples then lie in memory in the
    # order every later pass reads them, which makes those passes over 100k+ edges several times faster.
    add_edge = edges.setdefault
    new: dict[str, tuple[str, str | None]] = {}
    cross: list[int] = []
    for node_id in frontier:
        there = rows_of.get(node_id)
        rows = there.edges if there is not None else None
        if not rows:
            continue
        pacer.work += len(rows) + 64
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
        for subject, predicate, obj, other_type, other_name in capped(node_id, rows, limits, result.capped_nodes):
            other = obj if subject == node_id else subject
            if other in distance:
                triple = (subject, predicate, obj)
                if triple not in edges:
                    cross.append(len(edges))
                    edges[triple] = None
            elif other_type is None:
                result.dangling_edges += 1
            elif other_type in exclude_types:
                result.excluded_types.add(other_type)
                result.excluded_predicates.add(predicate)
            else:
                if other not in new:
                    new[other] = (other_type, other_name)
                add_edge((subject, predicate, obj))
    # Once per hop, not once per row: the predicates of the edges it added.
    result.predicates.update(map(itemgetter(1), islice(edges, found_before, None)))
    return new, cross


def _admit(result: Expansion, hop: int, new: dict[str, tuple[str, str | None]], cross: list[int],
           limits: TraversalLimits) -> list[str]:
    """Admit the ``new`` neighbours at distance ``hop`` (the first by id when ``max_walk_nodes`` leaves no room
    for all, the edges to the others dropped); the new level."""
    distance = result.distance
    admitted = list(new)
    room = limits.max_walk_nodes - len(distance)
    if len(admitted) > room:
        result.nodes_cut += len(admitted) - room
        admitted = sorted(admitted)[:room]
    for node_id in admitted:
        distance[node_id] = hop
        result.types[node_id], result.names[node_id] = new[node_id]
    result.levels.append(admitted)
    if result.nodes_cut:  # edges to the neighbours that did not fit are not part of the answer
        for e in list(islice(result.edges, result.found_by[-1] if result.found_by else 0, None)):
            if e[0] not in distance or e[2] not in distance:
                result.edges.pop(e, None)
        result.predicates = {e[1] for e in result.edges}
        result.cross_by = None
    elif result.cross_by is not None:
        result.cross_by.append(cross)
    return admitted
