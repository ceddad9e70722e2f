"""Breadth-first expansion over the graph facade, hop by hop, in batches.

One hop from a frontier costs three batch calls: outgoing edges, incoming edges
(concurrently), then the identities of the newly reached ids. With a backend that
implements the batch primitives that is O(1) round trips per hop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bfsql.backend import gather_or_cancel
from bfsql.engine.budget import TraversalBudget
from bfsql.graph import Graph
from bfsql.models import Edge, Truncation

__all__ = ["Expansion", "ProgressFn", "edge_order", "expand"]

ProgressFn = Callable[[int, int, str], Awaitable[None]]
"""``progress(hop, total_hops, message)``."""


def edge_order(edge: Edge) -> tuple[str, str, str]:
    """The canonical edge order: subject, predicate, object."""
    return (edge.subject, edge.predicate, edge.object)


@dataclass
class Expansion:
    """What a traversal reached."""

    distance: dict[str, int] = field(default_factory=dict)
    """Hop distance of every reached node from the nearest seed."""
    types: dict[str, str] = field(default_factory=dict)
    """Entity type of every reached node."""
    edges: set[Edge] = field(default_factory=set)
    """Edges examined whose both endpoints were reached."""
    unknown_seeds: list[str] = field(default_factory=list)
    excluded_types: set[str] = field(default_factory=set)
    """Types of neighbours removed by exclude_node_types (still part of schema_summary)."""
    excluded_predicates: set[str] = field(default_factory=set)
    dangling_edges: int = 0
    """Edges pointing at ids the graph does not know; left out."""
    capped_nodes: dict[str, int] = field(default_factory=dict)
    """Hub id -> its total edge count, for hubs whose edges were capped."""
    nodes_cut: int = 0
    """Neighbours not visited because max_nodes was reached."""

    def truncations(self, budget: TraversalBudget) -> list[Truncation]:
        """Report every cut made because of the budget."""
        cuts: list[Truncation] = []
        if self.capped_nodes:
            skipped = sum(total - budget.max_edges_per_node for total in self.capped_nodes.values())
            cuts.append(
                Truncation(
                    reason="max_edges_per_node",
                    detail=(
                        f"{len(self.capped_nodes)} hub node(s) have more than {budget.max_edges_per_node} edges; "
                        f"{skipped} of their edges were not followed."
                    ),
                    hint="Seed a bfs_query at a hub with exclude_node_types to skip high-volume neighbours, "
                    "or use intersect_subgraphs to narrow the question.",
                    capped_nodes=sorted(self.capped_nodes)[:20],
                )
            )
        if self.nodes_cut:
            cuts.append(
                Truncation(
                    reason="max_nodes",
                    detail=f"The traversal reached its limit of {budget.max_nodes} nodes; "
                    f"{self.nodes_cut} further neighbour(s) were not visited.",
                    hint="Lower max_hops, add exclude_node_types, or start from a more specific seed.",
                )
            )
        return cuts


async def expand(
    graph: Graph,
    seeds: list[str],
    hops: int,
    *,
    budget: TraversalBudget,
    exclude_types: frozenset[str] = frozenset(),
    progress: ProgressFn | None = None,
) -> Expansion:
    """Visit every node within ``hops`` undirected hops of any seed, within ``budget``.

    Seeds are always kept, whatever their type; neighbours of an excluded type are
    neither kept nor expanded, and the edges touching them are dropped.
    """
    result = Expansion()
    seed_nodes = await graph.get_nodes(seeds)
    result.unknown_seeds = [s for s in seeds if s not in seed_nodes]
    for seed in seeds:
        if seed in seed_nodes:
            result.distance[seed] = 0
            result.types[seed] = seed_nodes[seed].entity_type
    frontier = sorted(result.distance)

    for hop in range(1, hops + 1):
        if not frontier:
            break
        out, inc = await gather_or_cancel(graph.edges_from_many(frontier), graph.edges_to_many(frontier))
        candidate_edges: list[Edge] = []
        new_ids: set[str] = set()
        for node_id in frontier:
            node_edges = sorted(set(out.get(node_id, [])) | set(inc.get(node_id, [])), key=edge_order)
            if len(node_edges) > budget.max_edges_per_node:
                result.capped_nodes[node_id] = len(node_edges)
                node_edges = node_edges[: budget.max_edges_per_node]
            for edge in node_edges:
                candidate_edges.append(edge)
                for end in (edge.subject, edge.object):
                    if end not in result.distance:
                        new_ids.add(end)

        found = await graph.get_nodes(sorted(new_ids))
        admitted: list[str] = []
        for node_id in sorted(found):
            entity_type = found[node_id].entity_type
            if entity_type in exclude_types:
                result.excluded_types.add(entity_type)
            else:
                admitted.append(node_id)
        room = budget.max_nodes - len(result.distance)
        if len(admitted) > room:
            result.nodes_cut += len(admitted) - room
            admitted = admitted[:room]
        for node_id in admitted:
            result.distance[node_id] = hop
            result.types[node_id] = found[node_id].entity_type

        for edge in candidate_edges:
            if edge.subject in result.distance and edge.object in result.distance:
                result.edges.add(edge)
            elif edge.subject not in found and edge.subject not in result.distance:
                result.dangling_edges += 1
            elif edge.object not in found and edge.object not in result.distance:
                result.dangling_edges += 1
            elif edge.subject in found and found[edge.subject].entity_type in exclude_types:
                result.excluded_predicates.add(edge.predicate)
            elif edge.object in found and found[edge.object].entity_type in exclude_types:
                result.excluded_predicates.add(edge.predicate)

        frontier = admitted
        if progress is not None:
            await progress(hop, hops, f"hop {hop}/{hops}: {len(result.distance)} nodes, {len(result.edges)} edges")
        if result.nodes_cut:
            break
    return result
