"""The plain rows the graph layer passes around: tuples, cheap to make, never validated.

A traversal handles every edge of every node it reaches; these are the shapes it handles
them in (pydantic models are built only where a tool answer is made, see
:mod:`bfsql.models`). Each is a :class:`~typing.NamedTuple`, so it equals, hashes and sorts
like the plain tuple of its fields: a backend may build the plain tuple when that is
faster, and code may unpack rows by position.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Edge", "HopEdge", "Neighbourhood", "NodeInfo"]


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
