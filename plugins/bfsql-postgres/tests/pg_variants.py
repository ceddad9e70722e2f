"""Databases built the way other kgraph tools build them (not by bfsql's loader), for the backend to read unchanged.

* :func:`build_evidence_table_variant`: the integration-test schema of seed 000 — an
  ``evidence`` table keyed by ``relationship.id`` (a UUID), ``json`` (not jsonb) columns,
  ``varchar`` ids, ``numeric`` confidences, ``status`` as an enum; no indexes, no pg_trgm.
* :func:`embed_names`: a pgvector ``embedding`` column filled with the vectors of the names.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

import asyncpg

from bfsql import Embedder, EntityRecord, Record, RelationshipRecord

VARIANT_DDL = """
CREATE TYPE entity_status AS ENUM ('canonical', 'provisional', 'merged');
CREATE TABLE entity (
    entity_id varchar(200) PRIMARY KEY,
    entity_type varchar(100) NOT NULL,
    name varchar(500),
    properties json,
    status entity_status,
    confidence numeric,
    synonyms json,
    source varchar(100),
    canonical_url varchar(500)
);
CREATE TABLE relationship (
    id uuid PRIMARY KEY,
    subject_id varchar(200) NOT NULL,
    predicate varchar(100) NOT NULL,
    object_id varchar(200) NOT NULL,
    confidence numeric,
    source_documents json,
    properties json
);
CREATE TABLE evidence (
    id serial PRIMARY KEY,
    relationship_id uuid NOT NULL REFERENCES relationship (id),
    text_span text,
    confidence numeric,
    document_id varchar(100),
    section varchar(100)
);
"""


async def build_evidence_table_variant(dsn: str, records: Iterable[Record]) -> None:
    """Create the evidence-table variant of the schema in ``dsn`` and fill it with ``records`` (a relationship
    given twice is held in two rows)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(VARIANT_DDL)
        rel_ids: dict[tuple[str, str, str], uuid.UUID] = {}
        for record in records:
            if isinstance(record, EntityRecord):
                await conn.execute(
                    "INSERT INTO entity VALUES ($1, $2, $3, $4::json, $5, $6, $7::json, $8, $9)",
                    record.id, record.entity_type, record.name, json.dumps(record.properties), record.status,
                    record.confidence, json.dumps(record.synonyms), record.source, record.canonical_url,
                )
            elif isinstance(record, RelationshipRecord):
                key = (record.subject, record.predicate, record.object)
                # A triple given twice is held twice (the schema has no unique key on triples).
                row_id = uuid.uuid4() if key in rel_ids else uuid.uuid5(uuid.NAMESPACE_URL, ":".join(key))
                rel_ids.setdefault(key, row_id)
                await conn.execute(
                    "INSERT INTO relationship VALUES ($1, $2, $3, $4, $5, $6::json, $7::json)",
                    row_id, *key, record.confidence, json.dumps(record.source_documents),
                    json.dumps(record.properties),
                )
            else:
                await conn.execute(
                    "INSERT INTO evidence (relationship_id, text_span, confidence, document_id, section) "
                    "VALUES ($1, $2, $3, $4, $5)",
                    rel_ids[(record.subject, record.predicate, record.object)], record.text_span,
                    record.confidence, record.document_id, record.section,
                )
    finally:
        await conn.close()


async def embed_names(dsn: str, embedder: Embedder) -> None:
    """Write ``embedder``'s vector of every entity's name into ``entity.embedding``, as another tool would."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await conn.execute("ALTER TABLE entity ADD COLUMN IF NOT EXISTS embedding vector")
        rows = await conn.fetch("SELECT entity_id, name FROM entity WHERE name IS NOT NULL")
        vectors = await embedder.embed([r["name"] for r in rows])
        for row, vector in zip(rows, vectors, strict=True):
            literal = "[" + ",".join(repr(x) for x in vector) + "]"
            await conn.execute(
                "UPDATE entity SET embedding = $1::text::vector WHERE entity_id = $2", literal, row["entity_id"]
            )
    finally:
        await conn.close()
