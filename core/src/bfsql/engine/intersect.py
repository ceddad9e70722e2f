"""intersect_subgraphs: the nodes within k hops of every seed (see docs/traversal.md)."""

from __future__ import annotations

from bfsql.backend import gather_or_cancel
from bfsql.engine.arguments import check_hops, check_min_mentions, check_seeds, type_set
from bfsql.engine.assemble import Detail, Selection, assemble, drop_low_mentions, schema_summary
from bfsql.engine.budget import DEFAULT_BUDGET, TraversalBudget
from bfsql.engine.traverse import Expansion, ProgressFn, edge_order, expand
from bfsql.errors import UnknownEntity
from bfsql.graph import Graph
from bfsql.models import Edge, IntersectionResult

__all__ = ["intersect_subgraphs"]


async def _induced_edges(graph: Graph, nodes: set[str]) -> set[Edge]:
    """Every edge whose both endpoints are in ``nodes`` (one batch call)."""
    out = await graph.edges_from_many(sorted(nodes))
    return {e for edges in out.values() for e in edges if e.object in nodes}


async def intersect_subgraphs(
    graph: Graph,
    seeds: list[str],
    k: int,
    *,
    node_types: list[str] | None = None,
    predicates: list[str] | None = None,
    topology_only: bool = False,
    exclude_node_types: list[str] | None = None,
    min_mentions: int = 1,
    budget: TraversalBudget = DEFAULT_BUDGET,
    progress: ProgressFn | None = None,
) -> IntersectionResult:
    """Nodes within ``k`` undirected hops of every seed, and the edges among them."""
    seeds = check_seeds(seeds, 2, "intersect_subgraphs")
    check_hops(k, "k")
    check_min_mentions(min_mentions)
    detail = Detail(type_set(node_types, "node_types"), type_set(predicates, "predicates"), bool(topology_only))
    excluded = type_set(exclude_node_types, "exclude_node_types") or frozenset()

    known = await graph.get_nodes(seeds)
    unknown = [s for s in seeds if s not in known]
    if unknown:
        raise UnknownEntity(unknown)

    done = 0

    async def one(seed: str) -> Expansion:
        nonlocal done
        reached = await expand(graph, [seed], k, budget=budget, exclude_types=excluded)
        done += 1
        if progress is not None:
            await progress(done, len(seeds), f"expanded seed {done}/{len(seeds)}")
        return reached

    expansions = await gather_or_cancel(*(one(s) for s in seeds))
    common = set(expansions[0].distance)
    for reached in expansions[1:]:
        common &= set(reached.distance)
    types = {n: expansions[0].types[n] for n in common}
    edges = await _induced_edges(graph, common)

    order = sorted(common, key=lambda n: (max(r.distance[n] for r in expansions), n))
    selection = Selection(order, types, sorted(edges, key=edge_order))
    summary = schema_summary(set(types.values()), {e.predicate for e in edges})
    selection, metadata = await drop_low_mentions(graph, selection, min_mentions, set(seeds))
    nodes, result_edges = await assemble(
        graph, selection, detail, "intersect_subgraphs", metadata=metadata, answer_chars=budget.answer_chars
    )

    cuts = Expansion()
    for reached in expansions:
        cuts.capped_nodes.update(reached.capped_nodes)
        cuts.nodes_cut += reached.nodes_cut
    reached_ids = {node_id for reached in expansions for node_id in reached.distance}
    truncated = [*cuts.truncations(budget), *graph.backend.truncations(reached_ids)]
    dangling = sum(r.dangling_edges for r in expansions)
    warnings = [f"{dangling} edge(s) point to entities missing from the graph; left out."] if dangling else []
    result = IntersectionResult(
        seeds=seeds,
        k=k,
        node_count=len(selection.order),
        edge_count=len(selection.edges),
        nodes=nodes,
        edges=result_edges,
        schema_summary=summary,
        truncated=truncated or None,
        warnings=warnings or None,
    )
    return graph.process_result(result, "intersect_subgraphs")
