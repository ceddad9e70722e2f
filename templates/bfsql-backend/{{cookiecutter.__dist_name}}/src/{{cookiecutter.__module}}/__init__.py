"""{{ cookiecutter.description }}

A bfsql backend: the eight primitives of the contract over a JSONL graph bundle held in
dictionaries. It is a working starting point: replace the store (``_load`` and the
dictionaries) with yours and keep the behaviour the conformance suite checks.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import bfsql
from bfsql import Capabilities, Edge, EntityStub, GraphDbInterface, Node
from bfsql import read_bundle
from bfsql import EntityRecord, EvidenceRecord, RelationshipRecord
from pydantic import BaseModel, Field

__all__ = ["{{ cookiecutter.__backend_class }}", "{{ cookiecutter.__config_class }}", "register_backends"]

SEARCH_LIMIT = 20
"""Most stubs search_entities returns."""

_NODE_FIELDS = ("name", "synonyms", "source", "canonical_url", "confidence")


class {{ cookiecutter.__config_class }}(BaseModel):
    """How the backend opens its store: ``--bundle`` or ``BFSQL_{{ cookiecutter.name.upper().replace('-', '_') }}_BUNDLE``."""

    bundle: Path = Field(description="JSONL graph bundle to serve.")


class {{ cookiecutter.__backend_class }}(GraphDbInterface):
    """A graph bundle in dictionaries. Merged entities are hidden everywhere; dangling edges are kept."""

    capabilities = Capabilities(provenance=True)

    def __init__(self, bundle: str | Path) -> None:
        """Load ``bundle``; the store is read once, at start-up."""
        self._entities: dict[str, EntityRecord] = {}
        self._relationships: dict[Edge, RelationshipRecord] = {}
        self._evidence: dict[Edge, list[EvidenceRecord]] = defaultdict(list)
        self._outgoing: dict[str, list[Edge]] = defaultdict(list)
        self._incoming: dict[str, list[Edge]] = defaultdict(list)
        self._load(Path(bundle))

    def _load(self, bundle: Path) -> None:
        entities: dict[str, EntityRecord] = {}
        for _, record in read_bundle(bundle):
            if isinstance(record, EntityRecord):
                entities[record.id] = record
            elif isinstance(record, RelationshipRecord):
                self._relationships[record.edge()] = record
            else:
                self._evidence[record.edge()].append(record)
        hidden = {i for i, e in entities.items() if e.status == "merged"}
        self._entities = {i: e for i, e in entities.items() if i not in hidden}
        # An edge touching a merged entity is invisible like the entity: no edge lists, no metadata.
        self._relationships = {
            edge: rel
            for edge, rel in self._relationships.items()
            if edge.subject not in hidden and edge.object not in hidden
        }
        for edge in self._relationships:
            self._outgoing[edge.subject].append(edge)
            self._incoming[edge.object].append(edge)

    def _entity(self, entity_id: str) -> EntityRecord:
        """The visible entity; KeyError for an unknown or merged id, as the contract requires."""
        return self._entities[entity_id]

    async def search_entities(self, query: str, node_types: list[str] | None = None) -> list[EntityStub]:
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
        return [EntityStub(id=e.id, entity_type=e.entity_type, name=e.name) for _, _, e in ranked[:SEARCH_LIMIT]]

    async def edges_from(self, entity_id: str) -> list[Edge]:
        """Every outgoing edge, dangling ones included."""
        self._entity(entity_id)
        return list(self._outgoing.get(entity_id, []))

    async def edges_to(self, entity_id: str) -> list[Edge]:
        """Every incoming edge."""
        self._entity(entity_id)
        return list(self._incoming.get(entity_id, []))

    async def get_node(self, entity_id: str) -> Node:
        """Identity only: id and type."""
        entity = self._entity(entity_id)
        return Node(id=entity.id, entity_type=entity.entity_type)

    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """Everything known about the entity: its properties and the standard fields."""
        entity = self._entity(entity_id)
        metadata: dict[str, Any] = dict(entity.properties)
        for key in _NODE_FIELDS:
            value = getattr(entity, key)
            if value not in (None, []):
                metadata[key] = value
        return metadata

    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """Properties, confidence, source documents and the provenance of every piece of evidence."""
        relationship = self._relationships.get(edge)
        if relationship is None:
            return {}
        metadata: dict[str, Any] = dict(relationship.properties)
        if relationship.confidence is not None:
            metadata["confidence"] = relationship.confidence
        metadata["source_documents"] = list(relationship.source_documents)
        if self._evidence.get(edge):
            metadata["provenance"] = [evidence.provenance() for evidence in self._evidence[edge]]
        return metadata

    async def entity_types(self) -> list[str]:
        """Types of the visible entities, sorted."""
        return sorted({entity.entity_type for entity in self._entities.values()})

    async def predicates(self) -> list[str]:
        """Predicates of the visible edges, sorted."""
        return sorted({edge.predicate for edges in self._outgoing.values() for edge in edges})


def _create(config: {{ cookiecutter.__config_class }}) -> {{ cookiecutter.__backend_class }}:
    return {{ cookiecutter.__backend_class }}(config.bundle)


@bfsql.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``{{ cookiecutter.name }}`` backend with bfsql."""
    register("{{ cookiecutter.name }}", _create, {{ cookiecutter.__config_class }}, {{ cookiecutter.description | tojson }})
