"""Shared fixtures for core's tests: small hand-built graphs."""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from typing import Any

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


def random_bundle(rng: random.Random, relationships: int) -> list[dict[str, Any]]:
    """Bundle rows of a random graph, shuffled: entities (some merged, some unnamed), relationships to a few
    favoured ends and to dangling ones, repeated triples, some with more than their triple."""
    rows: list[dict[str, Any]] = []
    ids = [f"E{i}" for i in range(40)] + ["é", "Z", "a b"]
    for entity_id in ids[:-5]:
        row: dict[str, Any] = {"kind": "entity", "id": entity_id, "entity_type": rng.choice(["T", "U"])}
        if rng.random() < 0.8:
            row["name"] = f"name {entity_id}"
        if rng.random() < 0.1:
            row["status"] = "merged"
        rows.append(row)
    for _ in range(relationships):
        row = {"kind": "relationship", "subject": rng.choice(ids), "predicate": rng.choice(["p", "q", "r"]),
               "object": rng.choice(ids[:10]) if rng.random() < 0.5 else rng.choice(ids)}
        if rng.random() < 0.3:
            row["confidence"] = round(rng.random(), 3)
        if rng.random() < 0.1:
            row["source_documents"] = [f"doc{rng.randrange(3)}"]
        rows.append(row)
    rng.shuffle(rows)
    return rows


@pytest.fixture
def small_graph() -> Graph:
    return Graph(MemoryBackend(small_records()), plugins=[postprocess])


@pytest.fixture
def default_signal_dispositions() -> Iterator[None]:
    """The signals as an interactive shell leaves them: under ``nohup`` SIGHUP is ignored, in a shell's background
    job SIGINT, and the load rightly leaves an ignored signal so."""
    saved = {signum: signal.signal(signum, signal.SIG_DFL) for signum in (signal.SIGTERM, signal.SIGHUP)}
    saved[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)
