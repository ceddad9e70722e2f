"""What a traversal answers, as rows: the shape the tool pipeline fits to its budget and serialises once.

bfs_query and intersect_subgraphs return a :class:`Traversal`: the page's node ids in answer
order with their types and names, the page's edges as sorted triples, and the metadata of
the items shown with detail. Nothing is a pydantic model until someone asks for one
(:attr:`Traversal.nodes`, :attr:`Traversal.edges`, :meth:`Traversal.model`), so a traversal
of thousands of nodes costs no per-item object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, TypedDict

from bfsql.models import (
    BfsResult,
    ConnectionPath,
    IntersectionResult,
    Node,
    NodePaths,
    ResultEdge,
    SchemaSummary,
    Truncation,
)
from bfsql.rows import Reached

__all__ = [
    "AnswerRoom", "Detail", "EdgeRecords", "EntityRecords", "Listing", "PageColumns", "Traversal", "Triple",
    "page_columns", "tally",
]

Triple = tuple[str, str, str]
"""An edge as (subject, predicate, object): sorted, it is the canonical edge order."""


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


class AnswerRoom(Protocol):
    """Asked by the engine how far detail can still go, so it fetches no metadata an answer could not hold.

    The tool pipeline gives one, built from the answer budget; the engine knows nothing of
    characters or tokens.
    """

    def nodes_with_room(self, node_ids: list[str], types: dict[str, str], names: dict[str, str | None]) -> int:
        """How many of ``node_ids``, from the first, could be shown with more than a stub."""
        ...

    def most_nodes(self) -> int:
        """More nodes than any answer within the budget can show (a store lists no more of a traversal)."""
        ...


class PageColumns(TypedDict):
    """The fields of a :class:`Traversal` that list its page's nodes."""

    node_ids: list[str]
    types: dict[str, str]
    names: dict[str, str | None]
    distance: dict[str, int]


def page_columns(page: Sequence[Reached]) -> PageColumns:
    """A store walk's page of reached nodes (id, type, name, distance) as a :class:`Traversal`'s columns."""
    node_ids: list[str] = []
    types: dict[str, str] = {}
    names: dict[str, str | None] = {}
    distance: dict[str, int] = {}
    for entity_id, entity_type, name, hops in page:  # one pass: quicker than a comprehension per column
        node_ids.append(entity_id)
        types[entity_id] = entity_type
        names[entity_id] = name
        distance[entity_id] = hops
    return PageColumns(node_ids=node_ids, types=types, names=names, distance=distance)


def tally(names: Iterable[str]) -> dict[str, int]:
    """How many times each name occurs, sorted by name (a schema summary's counts)."""
    return dict(sorted(Counter(names).items()))


@dataclass
class Traversal:
    """The answer of bfs_query or intersect_subgraphs, as rows."""

    tool: Literal["bfs_query", "intersect_subgraphs"]
    seeds: list[str]
    hops: int
    """``max_hops`` of bfs_query, ``k`` of intersect_subgraphs."""
    node_ids: list[str]
    """The nodes of this page, in answer order: nearest first, then by id."""
    types: dict[str, str]
    names: dict[str, str | None]
    """Display names where the store has them: stubs carry them."""
    distance: dict[str, int]
    """Hops from the nearest seed (bfs_query), or from the farthest seed (intersect_subgraphs)."""
    triples: list[Triple]
    """The edges of this page (each belongs to the page of its later endpoint), in no particular order."""
    node_count: int
    """Nodes of the whole traversal (every page)."""
    edge_count: int
    types_seen: list[str]
    """Every entity type the traversal saw, sorted (``schema_summary``'s)."""
    predicates_seen: list[str]
    """Every predicate the traversal saw, sorted."""
    node_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Metadata of the nodes shown with detail (the others are stubs)."""
    edge_metadata: dict[Triple, dict[str, Any]] = field(default_factory=dict)
    """Metadata of the edges shown with detail (the others are bare triples)."""
    truncated: list[Truncation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    offset: int = 0
    """Index of this page's first node among all the traversal's nodes (bfs_query paging)."""
    paths: list[ConnectionPath] = field(default_factory=list)
    """intersect_subgraphs: for shared nodes, a shortest path from each seed."""
    context: list[str] = field(default_factory=list)
    """intersect_subgraphs: the seeds and the other nodes on ``paths`` that are not shared nodes, in that order
    (shown as stubs, so that every id of the answer has a type and a name); their types and names are in
    ``types`` and ``names``."""
    detail: Detail = Detail()
    """Which items the call asked detail for (node_types, predicates, topology_only)."""
    found_by: list[int] | None = None
    """When ``triples`` are in the order a bfs_query found them: how many were found by the end of each hop.
    Every edge among nodes at distance ≤ d is then among the first ``found_by[d]`` (fitting reads no further)."""
    unlisted: int = 0
    """Nodes of the page after ``node_ids`` that were counted but not listed: no answer could show them."""
    cross_by: list[list[int]] | None = None
    """With ``found_by``: for each hop, the positions of the edges it found between nodes reached before it.
    The edges among nodes at distance ≤ d are then the first ``found_by[d - 1]`` and ``cross_by[d]``."""
    entity_type_counts: dict[str, int] = field(kw_only=True)
    """The nodes ``node_count`` counts, by type, sorted by type: they add up to ``node_count`` (a type seen only
    among excluded neighbours is in ``types_seen`` but not here)."""
    predicate_counts: dict[str, int] = field(kw_only=True)
    """The edges ``edge_count`` counts, by predicate, sorted by predicate: they add up to ``edge_count``."""

    @cached_property
    def schema_summary(self) -> SchemaSummary:
        """The types and predicates seen, with their counts, as the protocol's model, made when first asked (a
        plugin may edit it)."""
        return SchemaSummary(
            entity_types_found=self.types_seen, predicates_found=self.predicates_seen,
            entity_type_counts=self.entity_type_counts, predicate_counts=self.predicate_counts,
        )

    def schema_record(self, counts: bool = True) -> dict[str, Any]:
        """``schema_summary`` as an answer's JSON holds it, with its counts unless ``counts`` is False (an answer
        that lists every node and edge leaves them out: they are its own lists counted); the model is made only if
        someone asked for it first."""
        model = self.__dict__.get("schema_summary")
        if model is not None:
            record: dict[str, Any] = model.model_dump(exclude_none=True)
        else:
            record = {"entity_types_found": list(self.types_seen), "predicates_found": list(self.predicates_seen),
                      "entity_type_counts": dict(self.entity_type_counts),
                      "predicate_counts": dict(self.predicate_counts)}
        if not counts:
            record.pop("entity_type_counts", None)
            record.pop("predicate_counts", None)
        return record

    def node_paths(self, kept: set[str] | None = None) -> list[dict[str, Any]]:
        """``paths`` as an answer shows them: one entry per shared node (of ``kept``, when given), in their order,
        with the edges of its paths from every seed, seed order, each edge once (:class:`~bfsql.models.NodePaths`)."""
        edges: dict[str, dict[Triple, None]] = {}
        for path in self.paths:
            if kept is None or path.node in kept:
                edges.setdefault(path.node, {}).update(dict.fromkeys((s, p, o) for s, p, o in path.edges))
        return [{"node": node, "edges": [list(e) for e in found]} for node, found in edges.items()]

    @property
    def nodes(self) -> list[Node]:
        """The nodes as protocol models: full where metadata was fetched, else stubs (with names)."""
        metadata, names = self.node_metadata, self.names
        return [
            Node(id=i, entity_type=self.types[i], metadata=metadata[i])
            if i in metadata
            else Node(id=i, entity_type=self.types[i], name=names.get(i))
            for i in self.node_ids
        ]

    @property
    def edges(self) -> list[ResultEdge]:
        """The edges as protocol models, sorted: full where metadata was fetched, else bare triples."""
        return [
            ResultEdge(subject=s, predicate=p, object=o, metadata=self.edge_metadata.get((s, p, o)))
            for s, p, o in sorted(self.triples)
        ]

    def model(self) -> BfsResult | IntersectionResult:
        """The whole answer as its protocol model (no budget applied)."""
        common: dict[str, Any] = {
            "seeds": self.seeds,
            "node_count": self.node_count,
            "edge_count": self.edge_count,
            "nodes": self.nodes,
            "edges": self.edges,
            "schema_summary": self.schema_summary,
            "truncated": self.truncated or None,
            "warnings": self.warnings or None,
        }
        if self.tool == "bfs_query":
            return BfsResult(max_hops=self.hops, **common)
        context = [Node(id=i, entity_type=self.types[i], name=self.names.get(i)) for i in self.context]
        paths = [NodePaths.model_validate(p) for p in self.node_paths()]
        return IntersectionResult(k=self.hops, paths=paths or None, context=context or None, **common)


@dataclass
class EntityRecords:
    """The answer of describe_entity (``single``: one flat record) and describe_entities: records in the order asked."""

    ids: list[str]
    """The entities found, in the order asked."""
    types: dict[str, str]
    metadata: dict[str, dict[str, Any]]
    """Each found entity's metadata (post-processing edits it in place)."""
    missing: list[str] = field(default_factory=list)
    """Asked ids the graph does not know."""
    single: bool = False


@dataclass
class EdgeRecords:
    """The answer of describe_edges: each known edge's metadata (with its provenance), in the order asked."""

    edges: list[Triple]
    metadata: dict[Triple, dict[str, Any]]
    """Each found edge's metadata (post-processing edits it in place)."""
    missing: list[Triple] = field(default_factory=list)
    """Asked edges the graph does not know."""


@dataclass
class Listing:
    """A list answer (search hits, a plugin's list) and the notes said beside its items, never among them."""

    items: list[Any]
    notes: list[Truncation] = field(default_factory=list)
    offset: int | None = None
    """Index of the first item, for a paged list: its answer then says where the page stands (and a cut, where to
    go on)."""
    total: int | None = None
    """Items of the whole list, for a paged list (default: up to the end of this page)."""
