"""An independent breadth-first search over records: the exact counts a traversal must answer.

Written from docs/traversal.md alone, in plain Python over the records (no backend, no engine code),
without any traversal bound: what ``bfs_query`` and ``intersect_subgraphs`` must count whatever they list.
Merged entities are invisible with their edges; an end that is no entity is never a node; a neighbour of an
excluded type is not visited (seeds always are); hub caps are not applied (the graphs it is used on have
no hub past the default cap).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord, RelationshipRecord

__all__ = ["Counts", "ReferenceGraph"]

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class Counts:
    """What a traversal counts: its nodes and edges, and both by type and predicate (sorted by name)."""

    node_count: int
    edge_count: int
    entity_type_counts: dict[str, int]
    predicate_counts: dict[str, int]


def _counts(types: dict[str, str], nodes: Iterable[str], edges: Iterable[Triple]) -> Counts:
    nodes, edges = list(nodes), list(edges)
    return Counts(len(nodes), len(edges), dict(sorted(Counter(types[n] for n in nodes).items())),
                  dict(sorted(Counter(e[1] for e in edges).items())))


class ReferenceGraph:
    """The visible graph of some records, walked breadth first."""

    def __init__(self, records: Iterable[Record]) -> None:
        entities = {r.id: r for r in records if isinstance(r, EntityRecord)}
        self.types = {i: r.entity_type for i, r in entities.items() if r.status != "merged"}
        merged = set(entities) - set(self.types)
        self.edges_of: dict[str, set[Triple]] = {}
        for record in records:
            if isinstance(record, RelationshipRecord) and not {record.subject, record.object} & merged:
                triple = (record.subject, record.predicate, record.object)
                self.edges_of.setdefault(triple[0], set()).add(triple)
                self.edges_of.setdefault(triple[2], set()).add(triple)

    def _enterable(self, node: str, seeds: set[str], excluded: set[str]) -> bool:
        return node in self.types and (node in seeds or self.types[node] not in excluded)

    def distances(self, seeds: list[str], hops: int, excluded: set[str], every: set[str]) -> dict[str, int]:
        """Hops from the nearest of ``seeds`` to every node within ``hops`` (``every``: the nodes that may be
        entered whatever their type)."""
        distance = {s: 0 for s in seeds if s in self.types}
        frontier = list(distance)
        for hop in range(1, hops + 1):
            reached = []
            for node in frontier:
                for s, _, o in self.edges_of.get(node, ()):
                    other = o if s == node else s
                    if other not in distance and self._enterable(other, every, excluded):
                        distance[other] = hop
                        reached.append(other)
            frontier = reached
        return distance

    def bfs(self, seeds: list[str], hops: int, excluded: Iterable[str] = ()) -> Counts:
        """The counts of ``bfs_query(seeds, hops, exclude_node_types=excluded)``: every node within ``hops``, and
        every edge between two of them that a node before the last hop has."""
        distance = self.distances(seeds, hops, set(excluded), set(seeds))
        edges = {e for n, d in distance.items() if d < hops for e in self.edges_of.get(n, ())
                 if e[0] in distance and e[2] in distance}
        return _counts(self.types, distance, edges)

    def intersection(self, seeds: list[str], k: int, excluded: Iterable[str] = ()) -> Counts:
        """The counts of ``intersect_subgraphs(seeds, k, exclude_node_types=excluded)``: the nodes within ``k`` of
        every seed (each seed's own walk may pass through the other seeds), and every edge among them."""
        shared: set[str] | None = None
        for seed in seeds:
            reached = set(self.distances([seed], k, set(excluded), set(seeds)))
            shared = reached if shared is None else shared & reached
        nodes = shared or set()
        edges = {e for n in nodes for e in self.edges_of.get(n, ()) if e[0] in nodes and e[2] in nodes}
        return _counts(self.types, nodes, edges)
