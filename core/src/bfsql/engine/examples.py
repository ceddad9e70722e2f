"""Picking the served graph's own examples at start-up (see :mod:`bfsql.examples`).

Around one of the graph's hubs (its ``statistics``, where the store can say them cheaply): two
named entities that reach the hub by the same predicate play the demo's BRAF and RAF1, the hub
its RAF family. The ten biggest hubs are tried smallest first (none of more than
:data:`LARGEST_HOP` edges), so that their hops stay cheap.
A graph whose store cannot name hubs gets placeholders for the ids, and its own predicates and
types: never ids it does not have.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict

from bfsql.errors import BfsqlError
from bfsql.examples import DEMO, Examples
from bfsql.graph import Graph
from bfsql.rows import HopEdge, Hub

__all__ = ["examples_of", "examples_or_placeholders"]

logger = logging.getLogger("bfsql.server")

LARGEST_HOP = 50_000
"""Edges of the biggest hub whose neighbourhood is read for examples (a mega-hub's hop costs seconds)."""


async def examples_of(graph: Graph) -> Examples:
    """Examples in ``graph``'s words (the demo's own when ``graph`` has the demo's entities)."""
    types, predicates = await graph.entity_types(), await graph.predicates()
    if len(await graph.get_nodes([DEMO.entity, DEMO.other, DEMO.group])) == 3 and DEMO.predicate in predicates:
        return DEMO
    statistics = await graph.statistics(10) if graph.capabilities.statistics else None
    own = frozenset([*types, *predicates])
    hubs = (statistics.hubs or []) if statistics else []
    for hub in sorted((h for h in hubs if 2 <= h.degree <= LARGEST_HOP), key=lambda h: (h.degree, h.id)):
        found = await _around(graph, hub, predicates)
        if found is not None:
            return dataclasses.replace(found, own_words=own)
    return dataclasses.replace(_placeholders(types, predicates), own_words=own)


async def examples_or_placeholders(graph: Graph, types: list[str], predicates: list[str]) -> Examples:
    """:func:`examples_of`, or placeholders in the graph's types and predicates when its store fails to say them:
    examples are never worth a graph that does not start."""
    try:
        return await examples_of(graph)
    except BfsqlError as exc:
        logger.warning("graph %s: its own examples could not be read (%s); placeholders are shown", graph.name, exc)
        return dataclasses.replace(_placeholders(types, predicates), own_words=frozenset([*types, *predicates]))


async def _around(graph: Graph, hub: Hub, predicates: list[str]) -> Examples | None:
    """Examples of two named entities that reach ``hub`` by one predicate, when it has such neighbours."""
    neighbourhood = (await graph.hop([hub.id])).get(hub.id)
    if neighbourhood is None:
        return None
    by_predicate: dict[tuple[str, str], list[HopEdge]] = defaultdict(list)
    for row in neighbourhood.edges:
        edge = HopEdge(*row)  # a store may answer plain tuples in HopEdge's order
        if edge.object == hub.id and edge.subject != hub.id and edge.other_name and edge.other_type:
            by_predicate[(edge.predicate, edge.other_type)].append(edge)
    pairs = sorted((key, edges) for key, edges in by_predicate.items() if len(edges) >= 2)
    if not pairs:
        return None
    (predicate, entity_type), edges = pairs[0]
    first, second = sorted(edges, key=lambda e: e.subject)[:2]
    return Examples(
        entity=first.subject, entity_name=str(first.other_name), other=second.subject,
        other_name=str(second.other_name), group=hub.id, predicate=predicate,
        second_predicate=next((p for p in predicates if p != predicate), predicate),
        entity_type=entity_type, group_type=hub.entity_type,
    )


def _placeholders(types: list[str], predicates: list[str]) -> Examples:
    """Placeholder ids and names with the graph's own predicates and types."""
    return Examples(
        entity="ID:1", entity_name="a name", other="ID:2", other_name="another name", group="ID:3",
        predicate=predicates[0] if predicates else "relation",
        second_predicate=predicates[1] if len(predicates) > 1 else (predicates[0] if predicates else "relation"),
        entity_type=types[0] if types else "Type", group_type=types[1] if len(types) > 1 else (
            types[0] if types else "Type"),
    )
