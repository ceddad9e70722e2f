"""Protocol models: the shapes of Appendix A, key for key.

Every model serialises with :func:`to_output`, which drops optional fields that are
``None`` so that a stub node is exactly ``{"id", "entity_type"}`` and a bare edge is
exactly ``{"subject", "predicate", "object"}``. :class:`~bfsql.rows.Edge`, a plain named
tuple, is re-exported here.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from bfsql.rows import Edge

__all__ = [
    "BfsResult",
    "ConnectionPath",
    "Edge",
    "EntityStub",
    "GraphListing",
    "IntersectionResult",
    "ListAnswer",
    "Node",
    "NodePaths",
    "Page",
    "PathEntity",
    "PathMetadata",
    "PathQueryResult",
    "PathResult",
    "PathStep",
    "ResultEdge",
    "SchemaDescription",
    "SchemaHub",
    "SchemaSummary",
    "Truncation",
    "to_output",
]


class _Model(BaseModel):
    model_config = ConfigDict(defer_build=True)


class EntityStub(_Model):
    """A search hit: a canonical id, its type, and optionally a display name and scores.

    ``score`` is the rank score of the search mode (docs/search.md); ``rankers`` names the
    rankers that found the entity and ``lexical_score`` / ``vector_score`` / ``graph_score`` are
    their own scores (seed 003's ``bm25_score``, ``vector_score`` and ``graph_score``).
    """

    id: str
    entity_type: str
    name: str | None = None
    score: float | None = None
    rankers: list[str] | None = Field(default=None, description="Which rankers found the entity.")
    lexical_score: float | None = Field(
        default=None, description="How well a name or synonym matches the query (1 = exactly), when lexical found it."
    )
    vector_score: float | None = Field(
        default=None, description="Cosine similarity of the query and the entity's name, when vector found it."
    )
    graph_score: float | None = Field(
        default=None, description="The share of the query's words the entity's links explain (a linked entity the "
        "query names, the link's predicate, its own name or type), when graph found it.",
    )


class ResultEdge(_Model):
    """An edge in a tool result: a bare triple, or a full edge carrying ``metadata``."""

    subject: str
    predicate: str
    object: str
    metadata: dict[str, Any] | None = None

    def triple(self) -> Edge:
        """The edge without its metadata."""
        return Edge(self.subject, self.predicate, self.object)


class Node(_Model):
    """A node: identity (``id``, ``entity_type``) and, for a full node, ``metadata``.

    Tool results carry full nodes (with ``metadata``) or stubs (without). A stub carries the
    entity's display ``name`` when the store has one: a superset of Appendix A's stub that
    saves a describe call per opaque id (``bfsql serve --bare-stubs`` leaves it out).
    """

    id: str
    entity_type: str
    name: str | None = None
    metadata: dict[str, Any] | None = None


class SchemaSummary(_Model):
    """The entity types and predicates actually present in a traversal, and how many nodes and edges of each.

    The counts are of the nodes and edges ``node_count`` and ``edge_count`` count (the whole traversal, whatever
    the page or the budget shows): a type seen only among neighbours removed by ``exclude_node_types`` is in
    ``entity_types_found`` but has no count, and the counts add up to ``node_count`` and ``edge_count``.
    """

    entity_types_found: list[str]
    predicates_found: list[str]
    entity_type_counts: dict[str, int] | None = Field(
        default=None, description="Nodes of the whole traversal by entity type; they add up to node_count."
    )
    predicate_counts: dict[str, int] | None = Field(
        default=None, description="Edges of the whole traversal by predicate; they add up to edge_count."
    )


class Truncation(_Model):
    """Something was cut from an answer: what, why, and how to get the rest."""

    reason: str
    detail: str
    hint: str
    count: int | None = Field(default=None, description="How many items this cut or degradation applied to.")
    next_offset: int | None = None
    capped_nodes: list[str] | None = None
    remaining_ids: list[str] | None = Field(default=None, description="Ids left out of a cut list (first 100).")


class Page(_Model):
    """Where a paged list answer stands in the whole list."""

    offset: int = Field(description="Index of the first item returned.")
    returned: int = Field(description="Items returned.")
    total: int = Field(description="Items in the whole list (with a search_depth note: at least this many).")
    next_offset: int | None = Field(default=None, description="The offset of the next page, when there is one.")


Item = TypeVar("Item")


class ListAnswer(_Model, Generic[Item]):
    """The answer of a list tool (search_entities, describe_entities, describe_edges, a plugin's list).

    ``items`` holds only items, as Appendix A types the list; what is said about the list comes
    beside it in the same document: the page, the ids or edges the graph does not know, and the
    notes of what was cut (docs/protocol.md).
    """

    items: list[Item]
    page: Page | None = None
    unknown_ids: list[str] | None = Field(default=None, description="Ids asked for that the graph does not have.")
    unknown_edges: list[tuple[str, str, str]] | None = Field(
        default=None, description="Edges asked for that the graph does not have."
    )
    truncated: list[Truncation] | None = None


class ConnectionPath(_Model):
    """How a shared node of intersect_subgraphs reaches one seed: the edges of a shortest path, seed first (the
    engine's form; an answer groups them per node, :class:`NodePaths`)."""

    seed: str
    node: str
    edges: list[tuple[str, str, str]]


class NodePaths(_Model):
    """How a shared node of intersect_subgraphs reaches the seeds: the edges of a shortest path from each seed, in
    the order of the seeds, each path from its seed to the node (an edge on two paths is given once)."""

    node: str
    edges: list[tuple[str, str, str]]


class BfsResult(_Model):
    """The answer of ``bfs_query``: the union of the seeds' neighbourhoods."""

    seeds: list[str]
    max_hops: int
    node_count: int
    edge_count: int
    nodes: list[Node]
    edges: list[ResultEdge]
    schema_summary: SchemaSummary
    truncated: list[Truncation] | None = None
    warnings: list[str] | None = None


class IntersectionResult(_Model):
    """The answer of ``intersect_subgraphs``: nodes within ``k`` hops of every seed.

    ``paths`` shows how the shared nodes connect to the seeds: for each shared node (nearest
    first, as far as the answer budget goes), the edges of a shortest path from every seed. ``context``
    names, as stubs, the seeds and the nodes on those paths that are not shared nodes (they
    are not counted in ``node_count``).
    """

    seeds: list[str]
    k: int
    node_count: int
    edge_count: int
    nodes: list[Node]
    edges: list[ResultEdge]
    schema_summary: SchemaSummary
    paths: list[NodePaths] | None = None
    context: list[Node] | None = Field(
        default=None, description="The seeds and the other nodes on paths, as stubs; not among the shared nodes."
    )
    truncated: list[Truncation] | None = None
    warnings: list[str] | None = None


class GraphListing(_Model):
    """One graph of a server that serves several: pass its ``name`` as the tools' ``graph`` argument."""

    name: str
    description: str | None = None
    backend: str
    default: bool = False
    """Whether it answers calls that name no graph."""
    available: bool = True
    """False when it could not be opened at start-up (its calls fail; the others answer)."""


class SchemaHub(_Model):
    """One of the graph's best-connected entities, as describe_schema lists it."""

    id: str
    entity_type: str
    name: str | None = None
    degree: int = Field(description="Its edges, both ways.")


class SchemaDescription(_Model):
    """The answer of ``describe_schema``.

    ``graphs`` is present only when the server serves several graphs and the call named none:
    the schema is then the default graph's. The counts and ``hubs`` are present only when the
    backend can say them cheaply (its ``statistics``); ``counts_exact`` says whether they are
    exact or estimates. ``warnings`` (the backend's :meth:`~bfsql.GraphBackend.health`) only
    when the store's answers are stale or at risk.
    """

    graph_description: str
    comprehensive: bool
    entity_types: list[str]
    predicates: list[str]
    next_steps: str
    tool_usage_notes: str
    entity_type_counts: dict[str, int] | None = Field(default=None, description="Entities by type.")
    predicate_counts: dict[str, int] | None = Field(default=None, description="Edges by predicate.")
    hubs: list[SchemaHub] | None = Field(default=None, description="The entities with the most edges, most first.")
    counts_exact: bool | None = Field(
        default=None, description="Whether the counts and degrees are exact (false: the store's estimates)."
    )
    graphs: list[GraphListing] | None = None
    warnings: list[str] | None = None
    truncated: list[Truncation] | None = None


class PathStep(_Model):
    """One step of a path: an entity (``entity``, ``label``) or an edge (``edge``, ``direction``).

    ``score`` is the step's own score: the semantic match of an entry point or semantic
    filter, or the relation match of an edge. An edge step whose relation matched exactly
    (a predicate named, or ``[*]``) has no score: it is 1, and a path of exact relations
    says so once, in the result's ``score``.
    """

    entity: str | None = None
    label: str | None = None
    edge: str | None = None
    direction: Literal["outgoing", "incoming"] | None = None
    score: float | None = None


class PathEntity(_Model):
    """The entity a path reaches: id, type and display name; its metadata only when the query asked for it
    (``with_metadata``) and the budget held it."""

    id: str
    entity_type: str
    name: str | None = None
    metadata: dict[str, Any] | None = None


class PathResult(_Model):
    """One answer of ``path_query``: the entity reached, its best path, the path's score and, for a query with a
    variable-length edge, its depth."""

    entity: PathEntity
    path: list[PathStep]
    score: float
    depth: int | None = Field(
        default=None,
        description="Edges walked by the query's variable-length edges (-[isa*]->) to reach the entity: its least "
        "depth (the sum, with several); absent when the query has none.",
    )


class PathMetadata(_Model):
    """How a path query ran, and why it stopped early when it did."""

    query: str
    hops: int
    k: int
    threshold: float
    max_results: int
    total_results: int = 0
    total_candidates_explored: int = 0
    execution_time_ms: float = 0.0
    entry_points: list[PathStep] | None = None
    error: str | None = None
    message: str | None = None
    partial_path: list[PathStep] | None = None
    stopped_at_hop: int | None = None
    reason: str | None = None
    available_relations: list[str] | None = None
    hint: str | None = None
    truncated: list[Truncation] | None = None
    warnings: list[str] | None = None


class PathQueryResult(_Model):
    """The answer of ``path_query`` (seed 002's QueryResponse)."""

    results: list[PathResult]
    metadata: PathMetadata


def to_output(model: BaseModel) -> dict[str, Any]:
    """Serialise a protocol model for a tool answer, omitting optional fields that are None."""
    return model.model_dump(mode="json", exclude_none=True)
