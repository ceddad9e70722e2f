"""The plain rows the graph layer passes around: tuples, cheap to make, never validated.

A traversal handles every edge of every node it reaches; these are the shapes it handles
them in (pydantic models are built only where a tool answer is made, see
:mod:`bfsql.models`). Each is a :class:`~typing.NamedTuple`, so it equals, hashes and sorts
like the plain tuple of its fields: a backend may build the plain tuple when that is
faster, and code may unpack rows by position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "Closure", "ClosureStep", "Edge", "GraphStatistics", "HopEdge", "Hub", "Neighbourhood", "NodeInfo", "Overlap",
    "Reached", "SeedPath", "Survey",
]


class Edge(NamedTuple):
    """A directed triple. Sorts by (subject, predicate, object), the canonical edge order."""

    subject: str
    predicate: str
    object: str

    def key(self) -> str:
        """The kgraph relationship key ``subject:predicate:object``."""
        return f"{self.subject}:{self.predicate}:{self.object}"


class NodeInfo(NamedTuple):
    """What identifies an entity to a reader: its type and, when the store has one, its display name."""

    entity_type: str
    name: str | None = None


class HopEdge(NamedTuple):
    """An edge of the entity a hop was asked about, with what is known of the edge's other end.

    The other end is the object of an outgoing edge and the subject of an incoming one (for
    a self-loop, the entity itself). ``other_type`` is None when the other end is no entity
    of the graph (a dangling edge); ``other_name`` is None when the store has no name for it.
    """

    subject: str
    predicate: str
    object: str
    other_type: str | None
    other_name: str | None = None

    def edge(self) -> Edge:
        """The bare triple."""
        return Edge(self.subject, self.predicate, self.object)


class Neighbourhood(NamedTuple):
    """What one ``hop`` answers for an entity it was asked about: the entity itself and its edges both ways."""

    node: NodeInfo
    """The entity's type and name (so a traversal needs no ``get_nodes`` of the ids it hops from)."""
    edges: list[HopEdge]
    """Every edge of the entity, outgoing and incoming, with what is known of its other end ([] when none)."""


class Reached(NamedTuple):
    """A node a traversal reached, as an answer lists it (a store may give the plain tuple: read it by position)."""

    id: str
    entity_type: str
    name: str | None
    distance: int
    """Hops from the nearest seed."""


@dataclass
class Survey:
    """What a whole traversal reached, counted where the data lives: the answer of the ``traverse`` primitive.

    Counts, cuts and the schema cover the whole traversal; only one page of it is listed: the
    nodes at positions ``offset`` to ``offset + count`` of the answer order (nearest first, then
    by id) and the edges that belong to them (an edge belongs to the later of its ends).
    """

    node_count: int
    edge_count: int
    page: list[Reached]
    edges: list[Edge]
    """The page's edges (plain tuples are fine: read them by position)."""
    entity_types: list[str]
    """Types of the nodes reached and of the neighbours left out by ``exclude_types``, sorted."""
    predicates: list[str]
    """Predicates of the edges kept and of the edges to excluded neighbours, sorted."""
    unknown_seeds: list[str]
    capped: dict[str, int]
    """Each hub whose edges were cut at ``max_edges_per_node``, with its edge count."""
    nodes_cut: int
    """Neighbours not visited because ``max_nodes`` was reached."""
    dangling_edges: int
    """Edges examined whose other end is no entity (left out)."""
    entity_type_counts: dict[str, int]
    """The nodes counted in ``node_count`` by type (seeds included, excluded neighbours not), sorted by type:
    the values add up to ``node_count``."""
    predicate_counts: dict[str, int]
    """The edges counted in ``edge_count`` by predicate, sorted by predicate: the values add up to
    ``edge_count``."""


class SeedPath(NamedTuple):
    """How a shared node of an intersection reaches one seed: a shortest path's edges, seed first."""

    seed: str
    node: str
    edges: list[Edge]


@dataclass
class Overlap:
    """What every seed of an intersection reaches, counted where the data lives: the answer of ``intersect``.

    The shared nodes are counted and the first ``count`` of them listed (nearest first: by the
    hop at which the last seed reached them, then by id), with the edges among the listed ones;
    the edges among all shared nodes are counted.
    """

    node_count: int
    edge_count: int
    page: list[Reached]
    """The listed shared nodes; ``distance`` is the hop at which the last seed reached each."""
    edges: list[Edge]
    entity_types: list[str]
    """Types of the shared nodes, sorted."""
    predicates: list[str]
    """Predicates of the edges among the shared nodes, sorted."""
    paths: list[SeedPath]
    paths_left_out: int
    """Seed-to-node paths of the traced nodes that were not traced (past the limit, or through a cut hub)."""
    capped: dict[str, int]
    nodes_cut: int
    dangling_edges: int
    """Distinct edges met whose other end is no entity."""
    entity_type_counts: dict[str, int]
    """The shared nodes by type, sorted by type: the values add up to ``node_count``."""
    predicate_counts: dict[str, int]
    """The edges among the shared nodes by predicate, sorted by predicate: the values add up to ``edge_count``."""


class Hub(NamedTuple):
    """One of a graph's best-connected entities: its id, type, name and degree."""

    id: str
    entity_type: str
    name: str | None
    degree: int
    """Its edges, both ways (a self-loop once), as a hop lists them."""


@dataclass
class GraphStatistics:
    """What a whole graph holds, counted: the answer of the ``statistics`` primitive.

    Each part is None where the store cannot say it cheaply. ``exact`` is False when the numbers are estimates
    (a database's planner statistics, say).
    """

    exact: bool
    entity_type_counts: dict[str, int] | None = None
    """Visible entities by type, sorted by type."""
    predicate_counts: dict[str, int] | None = None
    """Visible edges (touching no merged entity; dangling ones included) by predicate, sorted by predicate."""
    hubs: list[Hub] | None = None
    """The entities with the most edges, most first, ties by id."""


class ClosureStep(NamedTuple):
    """One edge a closure walked: from ``parent`` (a seed or an entity of the level before) to ``child``."""

    parent: str
    predicate: str
    child: str
    child_type: str | None
    """The child's entity type; None when the child is no entity of the graph (a dangling edge)."""


@dataclass
class Closure:
    """A relation's closure walked where the data lives, level by level: the answer of the ``closure`` primitive.

    ``levels[d - 1]`` holds the edges of level ``d``: every edge walked (of the predicates asked, in the
    direction asked) from a seed (level 0) or an entity first reached at level ``d - 1`` to an entity first
    reached at level ``d``, to a seed, or to an end that is no entity. So each entity's least depth is the
    level it is a child at first, and every shortest path is there.
    """

    levels: list[list[ClosureStep]]
    found: int = 0
    """When ``cut``: the entities first reached at the last level, counted (they are not all listed)."""
    cut: bool = False
    """The walk passed ``max_nodes`` at its last level: that level's edges to new entities lead only to the
    first of them by id (code-point order), as many as there was room for; the edges to seeds and to ends that
    are no entity are all there."""
    timed_out: bool = False
    """A level was due after the time left: the walk stopped before it."""
    seeds: dict[str, NodeInfo] | None = None
    """The seeds that are visible entities, with their type and name, when the store read them with the walk
    (None: not said). A path query whose walk starts from its ``@id`` entry then needs no ``get_nodes`` for it."""
    names: dict[str, str | None] | None = None
    """Names of entities of the walk (seeds or entities reached) the store read with it: some or all of them (None:
    not said). A path query that shows no metadata takes its results' names from here when all are there."""
