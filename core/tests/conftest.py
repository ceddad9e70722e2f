"""Shared fixtures for core's tests: small hand-built graphs."""

from __future__ import annotations

import pytest

from bfsql import Graph, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord


def entity(id: str, entity_type: str, **extra: object) -> EntityRecord:
    return EntityRecord(id=id, entity_type=entity_type, name=extra.pop("name", id.lower()), **extra)  # type: ignore[arg-type]


def rel(subject: str, predicate: str, obj: str, **extra: object) -> RelationshipRecord:
    return RelationshipRecord(subject=subject, predicate=predicate, object=obj, **extra)  # type: ignore[arg-type]


def small_records() -> list:
    """The hand-built graph of test_engine.py (drawn in its docstring)."""
    return [
        entity("S", "Gene"),
        entity("A", "Gene"),
        entity("B", "Disease"),
        entity("C", "Drug"),
        entity("D", "Paper"),
        entity("E", "Gene", properties={"total_mentions": 1}),
        entity("F", "Gene", properties={"total_mentions": 5}),
        entity("M", "Gene", status="merged"),
        rel("S", "assoc", "A", confidence=0.9, source_documents=["doc1"]),
        rel("B", "assoc", "S"),
        rel("D", "mentions", "S"),
        rel("S", "r", "X"),
        rel("S", "r", "M"),
        rel("A", "r", "E"),
        rel("C", "treats", "B", confidence=0.8, source_documents=["doc2"]),
        rel("B", "r", "F"),
        rel("D", "mentions", "C"),
        EvidenceRecord(subject="C", predicate="treats", object="B", text_span="C treats B", document_id="doc2"),
    ]


@pytest.fixture
def small_graph() -> Graph:
    return Graph(MemoryBackend(small_records()), plugins=[postprocess])
