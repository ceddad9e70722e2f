"""The records of a graph bundle, and how they become node and edge metadata.

Every built-in store (memory, sqlite) and the Postgres loader read the same
records, and derive metadata with the same two functions, so that the same bundle
answers identically everywhere.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bfsql.models import Edge

__all__ = [
    "EntityRecord",
    "EvidenceRecord",
    "RelationshipRecord",
    "edge_metadata",
    "entity_metadata",
    "node_metadata",
    "provenance",
    "relationship_metadata",
]


_NOT_IN_IDS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _id_text(value: str) -> str:
    """Ids, types and predicates: not blank, and no control characters or lone surrogates."""
    if not value or not value.strip():
        raise ValueError("must be a non-empty string")
    bad = _NOT_IN_IDS.search(value)
    if bad is not None:
        raise ValueError(f"must not contain control characters or lone surrogates (found {bad[0]!r})")
    return value


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {value}")
    return value


class EntityRecord(BaseModel):
    """An entity: canonical id, type, display name, synonyms and free properties."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: Literal["entity"] = "entity"
    id: str
    entity_type: str
    name: str | None = None
    synonyms: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)
    status: str | None = None
    confidence: float | None = None
    source: str | None = None
    canonical_url: str | None = None

    _check_id = field_validator("id", "entity_type")(_id_text)
    _check_confidence = field_validator("confidence")(_finite)

    @property
    def merged(self) -> bool:
        """Merged entities are kept for audit but invisible everywhere."""
        return self.status == "merged"


class RelationshipRecord(BaseModel):
    """A directed relationship with confidence, supporting documents and properties."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: Literal["relationship"] = "relationship"
    subject: str
    predicate: str
    object: str
    confidence: float | None = None
    source_documents: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)

    _check = field_validator("subject", "predicate", "object")(_id_text)
    _check_confidence = field_validator("confidence")(_finite)

    def edge(self) -> Edge:
        """The bare triple."""
        return Edge(self.subject, self.predicate, self.object)


class EvidenceRecord(BaseModel):
    """One piece of provenance for a relationship: a text span from a document."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: Literal["evidence"] = "evidence"
    subject: str
    predicate: str
    object: str
    text_span: str | None = None
    confidence: float | None = None
    document_id: str | None = None
    section: str | None = None

    _check = field_validator("subject", "predicate", "object")(_id_text)
    _check_confidence = field_validator("confidence")(_finite)

    def edge(self) -> Edge:
        """The triple this evidence supports."""
        return Edge(self.subject, self.predicate, self.object)

    def provenance(self) -> dict[str, Any]:
        """The evidence as a provenance entry (None fields dropped)."""
        entry = {
            "text_span": self.text_span,
            "confidence": self.confidence,
            "document_id": self.document_id,
            "section": self.section,
        }
        return {k: v for k, v in entry.items() if v is not None}


def node_metadata(entity: EntityRecord) -> dict[str, Any]:
    """Metadata of an entity: its properties, then the standard fields (which win)."""
    return entity_metadata(
        entity.properties,
        name=entity.name,
        synonyms=entity.synonyms,
        source=entity.source,
        canonical_url=entity.canonical_url,
        confidence=entity.confidence,
        status=entity.status,
    )


def entity_metadata(
    properties: dict[str, Any],
    *,
    name: str | None,
    synonyms: list[str],
    source: str | None,
    canonical_url: str | None,
    confidence: float | None,
    status: str | None,
) -> dict[str, Any]:
    """Metadata of an entity's columns: its properties, then the standard fields that are set (which win).

    What :func:`node_metadata` answers; for backends that read the columns as plain values
    rather than as an :class:`EntityRecord`.
    """
    metadata: dict[str, Any] = dict(properties)
    if name is not None:
        metadata["name"] = name
    if synonyms:
        metadata["synonyms"] = list(synonyms)
    if source is not None:
        metadata["source"] = source
    if canonical_url is not None:
        metadata["canonical_url"] = canonical_url
    if confidence is not None:
        metadata["confidence"] = confidence
    if status is not None:
        metadata["status"] = status
    return metadata


def relationship_metadata(
    properties: dict[str, Any], confidence: float | None, source_documents: list[str]
) -> dict[str, Any]:
    """Metadata of a relationship's columns: its properties, then confidence and source_documents (which win).

    What :func:`edge_metadata` answers for a relationship without evidence; for backends that
    read the columns as plain values rather than as a :class:`RelationshipRecord`.
    """
    metadata: dict[str, Any] = dict(properties)
    if confidence is not None:
        metadata["confidence"] = confidence
    metadata["source_documents"] = list(source_documents)
    return metadata


def edge_metadata(rel: RelationshipRecord, evidence: list[EvidenceRecord]) -> dict[str, Any]:
    """Metadata of a relationship: properties, confidence, source_documents, provenance."""
    metadata = relationship_metadata(rel.properties, rel.confidence, rel.source_documents)
    if evidence:
        metadata["provenance"] = provenance(evidence)
    return metadata


def provenance(evidence: list[EvidenceRecord]) -> list[dict[str, Any]]:
    """An edge's evidence as its ``provenance`` list, in a stable order (document, section, text)."""
    ordered = sorted(evidence, key=lambda e: (e.document_id or "", e.section or "", e.text_span or ""))
    return [e.provenance() for e in ordered]
