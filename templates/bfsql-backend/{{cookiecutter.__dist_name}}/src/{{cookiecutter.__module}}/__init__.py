"""{{ cookiecutter.description }}

A bfsql backend: the batch primitives of bfsql's backend contract over a JSONL graph
bundle held in dictionaries. It is a working starting point: replace the store (``_load``
and the dictionaries) with yours, write each primitive as one query for the whole batch
of ids, and keep the behaviour the conformance suite checks (bfsql's
docs/backend-contract.md).

A store that can only answer one id at a time may instead subclass
``bfsql.GraphDbInterface`` and write seed 000's eight single-id methods
(``search_entities``, ``edges_from``, ``edges_to``, ``get_node``, ``metadata_for_node``,
``metadata_for_edge``, ``entity_types``, ``predicates``): bfsql then derives every batch
primitive from them, one call per id.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import bfsql
from bfsql import (
    SEARCH_LIMIT,
    BackendConfig,
    Capabilities,
    Edge,
    EntityRecord,
    EntityStub,
    EvidenceRecord,
    GraphBackend,
    HopEdge,
    Neighbourhood,
    NodeInfo,
    RelationshipRecord,
    read_bundle,
)
from pydantic import Field

__all__ = ["{{ cookiecutter.__backend_class }}", "{{ cookiecutter.__config_class }}", "register_backends"]

_NODE_FIELDS = ("name", "synonyms", "source", "canonical_url", "confidence")
"""Fields of an entity record that metadata_for_nodes returns next to its properties."""


class {{ cookiecutter.__config_class }}(BackendConfig):
    """How the backend opens its store: ``--bundle`` or ``BFSQL_{{ cookiecutter.name.upper().replace('-', '_') }}_BUNDLE``.

    ``bfsql.BackendConfig`` brings the options every backend shares, under the names every backend
    uses: ``description`` (the graph's description, answered by ``graph_description``). A store
    reached over connections extends ``bfsql.StoreConfig`` instead, for ``query_timeout`` and
    ``max_connections`` (and a store answering over HTTP ``bfsql.HttpStoreConfig``, for the shared
    retry policy); honour those rather than inventing names of your own.
    """

    bundle: Path = Field(description="JSONL graph bundle to serve.")


class {{ cookiecutter.__backend_class }}(GraphBackend):
    """A graph bundle in dictionaries. Merged entities are hidden everywhere; dangling edges are kept.

    Every primitive takes a whole batch of ids (a BFS frontier) and answers it in one go;
    against a real store, each is one query (``WHERE id = ANY(...)``, ``UNWIND``, ``VALUES``).
    """

    capabilities = Capabilities(batch_primitives=True, provenance=True, in_memory=True)
    """``batch_primitives``: hop is answered natively, in one round trip. ``provenance``:
    provenance_for_edges returns evidence. ``in_memory``: answers come from dictionaries, so
    bfsql does not cache them; drop it when the store is a server."""

    def __init__(self, bundle: str | Path, description: str | None = None) -> None:
        """Load ``bundle``; the store is read once, at start-up. ``description``: what describe_schema says of it."""
        self._bundle = Path(bundle)
        self._description = description
        self._entities: dict[str, EntityRecord] = {}
        self._relationships: dict[Edge, RelationshipRecord] = {}
        self._evidence: dict[Edge, list[EvidenceRecord]] = defaultdict(list)
        self._edges_of: dict[str, list[Edge]] = defaultdict(list)
        self._load(self._bundle)

    def _load(self, bundle: Path) -> None:
        entities: dict[str, EntityRecord] = {}
        relationships: dict[Edge, RelationshipRecord] = {}
        for _, record in read_bundle(bundle):
            if isinstance(record, EntityRecord):
                entities[record.id] = record
            elif isinstance(record, RelationshipRecord):
                relationships[record.edge()] = record
            else:
                self._evidence[record.edge()].append(record)
        hidden = {i for i, e in entities.items() if e.status == "merged"}
        self._entities = {i: e for i, e in entities.items() if i not in hidden}
        # An edge touching a merged entity is invisible like the entity: no hop row, no metadata.
        self._relationships = {
            edge: rel for edge, rel in relationships.items() if edge.subject not in hidden and edge.object not in hidden
        }
        for edge in sorted(self._relationships):
            self._edges_of[edge.subject].append(edge)
            if edge.object != edge.subject:  # a self-loop is listed once
                self._edges_of[edge.object].append(edge)

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """Type and name of each visible entity; unknown and merged ids are left out."""
        found = {}
        for entity_id in entity_ids:
            entity = self._entities.get(entity_id)
            if entity is not None:
                found[entity_id] = NodeInfo(entity.entity_type, entity.name)
        return found

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """Each visible entity asked, with its type and name and every edge of it, both directions.

        An edge comes with the type and name of its other end: the object of an outgoing edge
        and the subject of an incoming one (the entity itself for a self-loop). An end that is
        no visible entity is dangling: the row is kept with ``other_type`` None. Unknown ids
        are left out; an entity without edges answers an empty list.
        """
        found: dict[str, Neighbourhood] = {}
        for entity_id in dict.fromkeys(entity_ids):
            entity = self._entities.get(entity_id)
            if entity is None:
                continue
            rows = []
            for edge in self._edges_of.get(entity_id, []):
                other = self._entities.get(edge.object if edge.subject == entity_id else edge.subject)
                rows.append(
                    HopEdge(
                        edge.subject,
                        edge.predicate,
                        edge.object,
                        other.entity_type if other else None,
                        other.name if other else None,
                    )
                )
            found[entity_id] = Neighbourhood(NodeInfo(entity.entity_type, entity.name), rows)
        return found

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Everything known about each visible entity: its properties and the standard fields."""
        found = {}
        for entity_id in entity_ids:
            entity = self._entities.get(entity_id)
            if entity is None:
                continue
            metadata: dict[str, Any] = dict(entity.properties)
            for key in _NODE_FIELDS:
                value = getattr(entity, key)
                if value not in (None, []):
                    metadata[key] = value
            found[entity_id] = metadata
        return found

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Properties, confidence and source documents of each known edge (never its provenance)."""
        found = {}
        for edge in edges:
            relationship = self._relationships.get(edge)
            if relationship is None:
                continue
            metadata: dict[str, Any] = dict(relationship.properties)
            if relationship.confidence is not None:
                metadata["confidence"] = relationship.confidence
            metadata["source_documents"] = list(relationship.source_documents)
            found[edge] = metadata
        return found

    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The evidence behind each known edge, one record per piece of evidence."""
        return {
            edge: [evidence.provenance() for evidence in self._evidence[edge]]
            for edge in edges
            if edge in self._relationships and self._evidence.get(edge)
        }

    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Exact name or synonym matches first, then prefixes, then substrings (case-insensitive)."""
        wanted = query.casefold().strip()
        if not wanted:
            return []
        ranked: list[tuple[int, str, EntityRecord]] = []
        for entity in self._entities.values():
            if node_types is not None and entity.entity_type not in node_types:
                continue
            labels = [label.casefold() for label in (entity.name, *entity.synonyms) if label]
            if wanted in labels:
                ranked.append((0, entity.id, entity))
            elif any(label.startswith(wanted) for label in labels):
                ranked.append((1, entity.id, entity))
            elif any(wanted in label for label in labels):
                ranked.append((2, entity.id, entity))
        ranked.sort(key=lambda item: item[:2])
        return [EntityStub(id=e.id, entity_type=e.entity_type, name=e.name) for _, _, e in ranked[: max(0, limit)]]

    async def entity_types(self) -> list[str]:
        """Types of the visible entities, sorted."""
        return sorted({entity.entity_type for entity in self._entities.values()})

    async def predicates(self) -> list[str]:
        """Predicates of the visible edges, sorted."""
        return sorted({edge.predicate for edge in self._relationships})

    async def graph_description(self) -> str:
        """The configured description, else one naming the bundle."""
        return self._description or f"A knowledge graph read from {self._bundle.name}."


def _create(config: {{ cookiecutter.__config_class }}) -> {{ cookiecutter.__backend_class }}:
    return {{ cookiecutter.__backend_class }}(config.bundle, config.description)


@bfsql.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``{{ cookiecutter.name }}`` backend with bfsql."""
    register("{{ cookiecutter.name }}", _create, {{ cookiecutter.__config_class }}, {{ cookiecutter.description | tojson }})
