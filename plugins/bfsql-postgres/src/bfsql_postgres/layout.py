"""What the database holds, checked once at start-up: tables, columns, evidence variant, extensions.

bfsql reads the kgraph schema (seed 000, chapter 9) in the first schema of the
connection's ``search_path``. A missing table or column, a JSON column of another type,
an evidence table lacking columns, or an absent pgvector when vector search is asked for
stops the start-up with an error naming what is missing and how to create it. A store
without evidence tables is served without provenance. Whether any entity is merged is
read here too, so that a store without merged entities is queried without status
conditions.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from bfsql_postgres.errors import PostgresStoreError
from bfsql_postgres.schema import vector_index_name

__all__ = ["BUNDLE_EVIDENCE", "EVIDENCE_TABLE", "REQUIRED_COLUMNS", "StoreLayout", "inspect_store"]

REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "entity": (
        "entity_id",
        "entity_type",
        "name",
        "properties",
        "status",
        "confidence",
        "synonyms",
        "source",
        "canonical_url",
    ),
    "relationship": ("subject_id", "predicate", "object_id", "confidence", "source_documents", "properties"),
}
"""Columns bfsql reads, per table (``entity.embedding`` only when vector search is configured)."""

JSON_COLUMNS: tuple[tuple[str, str], ...] = (
    ("entity", "properties"),
    ("entity", "synonyms"),
    ("relationship", "source_documents"),
    ("relationship", "properties"),
)
"""Columns that must be ``json`` or ``jsonb``."""

BUNDLE_EVIDENCE: tuple[str, ...] = ("relationship_key", "text_span", "confidence", "document_id", "section")
"""Columns of the kgserver evidence table ``bundle_evidence`` (key ``subject_id:predicate:object_id``)."""

EVIDENCE_TABLE: tuple[str, ...] = ("relationship_id", "text_span", "confidence", "document_id", "section")
"""Columns of the evidence-table variant ``evidence``, whose ``relationship_id`` references ``relationship.id``."""

FEW_MERGED = 10_000
"""Merged entities whose ids are read at start-up (and that PostgreSQL hashes well within its
default ``work_mem``)."""

_SETUP_HINT = "Create the schema with: bfsql postgres init-schema --dsn DSN (then load with: bfsql postgres load)."


_UNIQUE_KEYS = """
WITH unique_columns AS (
    SELECT i.indrelid, array_agg(a.attname::text ORDER BY a.attname) AS columns
    FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
    WHERE i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
      AND i.indrelid IN (to_regclass('entity'), to_regclass('relationship'))
    GROUP BY i.indexrelid, i.indrelid
)
SELECT EXISTS (SELECT 1 FROM unique_columns WHERE indrelid = to_regclass('entity') AND columns = '{entity_id}')
   AND EXISTS (SELECT 1 FROM unique_columns WHERE indrelid = to_regclass('relationship')
               AND columns = '{object_id,predicate,subject_id}')
"""

_LEADING_COLUMNS = """
SELECT c.relname::text AS table_name, a.attname::text AS column_name
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_class x ON x.oid = i.indexrelid
JOIN pg_am am ON am.oid = x.relam
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
JOIN pg_opclass opc ON opc.oid = i.indclass[0]
WHERE am.amname = 'btree' AND i.indisvalid AND i.indpred IS NULL
  AND opc.opcdefault AND i.indcollation[0] = a.attcollation
  AND i.indrelid IN (to_regclass('entity'), to_regclass('relationship'))
"""
"""The columns of ``entity`` and ``relationship`` that lead a whole (not partial) btree index in their own order
(the type's default operator class, the column's collation): one that ``ORDER BY column`` can read."""


@dataclass(frozen=True)
class StoreLayout:
    """The parts of the kgraph schema this database has."""

    schema: str
    """The schema the tables were found in (the first of the search_path)."""
    bundle_evidence: bool
    """Evidence is in ``bundle_evidence`` keyed by ``subject_id:predicate:object_id``."""
    evidence_table: bool
    """Evidence is in ``evidence`` keyed by ``relationship.id``."""
    synonyms_jsonb: bool
    """``entity.synonyms`` is jsonb, so its text form can prefilter synonym searches (through an index)."""
    trigram: bool
    """pg_trgm's ``similarity`` and ``%`` are usable (fuzzy name matching)."""
    vector: bool
    """pgvector is installed and ``entity.embedding`` is a ``vector`` or ``halfvec`` column."""
    unique_keys: bool = False
    """Unique indexes make ``entity.entity_id`` and ``relationship (subject_id, predicate, object_id)``
    unique, so edge queries need no DISTINCT."""
    merged: bool = True
    """Some entity has ``status = 'merged'`` (as of start-up), so statements must hide them; without
    any, statements carry no status condition."""
    merged_ids: frozenset[str] | None = None
    """The merged entities' ids when there are at most :data:`FEW_MERGED` (as of start-up): the
    backend leaves out the relationships touching them itself, instead of every statement
    checking each relationship's ends. None without merged entities or with more."""
    vector_dimension: int | None = None
    """Dimension of the stored entity vectors; None when no entity has one."""
    vector_embedder: str | None = None
    """Name of the embedder that made them, as recorded by the loader in ``bfsql_meta`` (or configured)."""
    vector_type: str = "vector"
    """The pgvector type of ``entity.embedding``: ``halfvec`` (bfsql's schema) or ``vector``."""
    vector_index: bool = False
    """The HNSW index over ``embedding::halfvec(vector_dimension)`` exists (made by an older bfsql), so a search by
    SQL uses it."""
    vector_codes: bool = False
    """The tables of the vectors' sign-bit codes exist (:mod:`bfsql_postgres.vector_codes`): a search reads the codes
    while their stamp is current."""
    rare_ends: bool = False
    """The table of the hub candidates and dangling ends the loader saves exists (:mod:`bfsql_postgres.rare_ends`):
    an intersection reads them there while their stamp is current."""
    types_indexed: bool = False
    """A btree index leads with ``entity.entity_type``, so the types are listed by skipping through it (a probe a
    type) instead of reading every entity."""
    predicates_indexed: bool = False
    """A btree index leads with ``relationship.predicate``, so the predicates are listed by skipping through it."""

    @property
    def provenance(self) -> bool:
        """The store has evidence (either table), so edges can have provenance."""
        return self.bundle_evidence or self.evidence_table


def _missing_columns(found: dict[str, dict[str, str]], table: str, columns: tuple[str, ...]) -> list[str]:
    return [c for c in columns if c not in found.get(table, {})]


async def inspect_store(conn: asyncpg.Connection, *, stored_embedder: str | None = None) -> StoreLayout:
    """Check the kgraph schema on ``conn``; :class:`PostgresStoreError` naming whatever is missing.

    ``stored_embedder`` names the embedder of the stored vectors when the database does
    not record it; giving it asks for vector search, so pgvector and vectors must exist.
    """
    schema = await _current_schema(conn)
    found = await _table_columns(conn, schema)
    _check_kgraph_tables(found, schema)
    bundle_evidence, evidence_table = _evidence_variant(found, schema)
    trigram = bool(
        await conn.fetchval(
            "SELECT to_regprocedure('similarity(text,text)') IS NOT NULL AND to_regoperator('%(text,text)') IS NOT NULL"
        )
    )
    vector_type = found["entity"].get("embedding", "")
    vector = vector_type in ("vector", "halfvec") and bool(
        await conn.fetchval(f"SELECT to_regoperator('<=>({vector_type},{vector_type})') IS NOT NULL")
    )
    unique_keys = bool(await conn.fetchval(_UNIQUE_KEYS))
    merged_ids = [
        row[0]
        for row in await conn.fetch(
            "SELECT entity_id::text FROM entity WHERE status::text = 'merged' LIMIT $1", FEW_MERGED + 1
        )
    ]
    leading = {(row["table_name"], row["column_name"]) for row in await conn.fetch(_LEADING_COLUMNS)}
    dimension, embedder, index = await _stored_vectors(conn, schema, found, vector, stored_embedder)
    if stored_embedder is not None and (not vector or dimension is None):
        raise PostgresStoreError(
            f"Vector search was asked for (--stored-embedder {stored_embedder}), but "
            f"{_why_no_vectors(found, schema, vector)}.",
            "Load with embeddings (bfsql postgres load --embedder NAME, which needs pgvector on the server), "
            "or leave --stored-embedder unset.",
        )
    return StoreLayout(
        schema=schema,
        bundle_evidence=bundle_evidence,
        evidence_table=evidence_table,
        synonyms_jsonb=found["entity"]["synonyms"] == "jsonb",
        trigram=trigram,
        vector=vector,
        unique_keys=unique_keys,
        merged=bool(merged_ids),
        merged_ids=frozenset(merged_ids) if 0 < len(merged_ids) <= FEW_MERGED else None,
        vector_dimension=dimension,
        vector_embedder=embedder if dimension is not None else None,
        vector_type=vector_type if vector else "vector",
        vector_index=index,
        vector_codes=vector and {"bfsql_meta", "bfsql_vector_row", "bfsql_vector_part"} <= set(found),
        rare_ends={"bfsql_meta", "bfsql_rare_end"} <= set(found),
        types_indexed=("entity", "entity_type") in leading,
        predicates_indexed=("relationship", "predicate") in leading,
    )


async def _current_schema(conn: asyncpg.Connection) -> str:
    """The first existing schema of the connection's search_path, where the tables are read."""
    schema = await conn.fetchval("SELECT current_schema()")
    if schema is None:
        raise PostgresStoreError(
            "None of the schemas on the connection's search_path exists.",
            "Set ?search_path=NAME in the DSN to the schema holding the entity and relationship tables.",
        )
    return str(schema)


async def _table_columns(conn: asyncpg.Connection, schema: str) -> dict[str, dict[str, str]]:
    """The columns of the tables bfsql reads, by table: each column's type (a user-defined one by its name)."""
    rows = await conn.fetch(
        """
        SELECT table_name::text, column_name::text, data_type::text, udt_name::text
        FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = ANY($2::text[])
        """,
        schema,
        ["entity", "relationship", "bundle_evidence", "evidence", "bfsql_meta", "bfsql_vector_row",
         "bfsql_vector_part", "bfsql_rare_end"],
    )
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        kind = row["udt_name"] if row["data_type"] == "USER-DEFINED" else row["data_type"]
        found.setdefault(row["table_name"], {})[row["column_name"]] = kind
    return found


def _check_kgraph_tables(found: dict[str, dict[str, str]], schema: str) -> None:
    """The entity and relationship tables exist with every column bfsql reads, the JSON ones as json or jsonb."""
    missing_tables = [t for t in REQUIRED_COLUMNS if t not in found]
    if missing_tables:
        raise PostgresStoreError(
            f"Table(s) {', '.join(missing_tables)} not found in schema {schema!r}: this database does not hold "
            "a kgraph graph.",
            _SETUP_HINT,
        )
    for table, columns in REQUIRED_COLUMNS.items():
        missing = _missing_columns(found, table, columns)
        if missing:
            raise PostgresStoreError(
                f"Table {schema}.{table} lacks column(s) {', '.join(missing)} of the kgraph schema.",
                "Add them (see docs/backends/postgres.md for the schema) or rebuild with: bfsql postgres load.",
            )
    for table, column in JSON_COLUMNS:
        kind = found[table][column]
        if kind not in ("json", "jsonb"):
            raise PostgresStoreError(
                f"Column {schema}.{table}.{column} has type {kind}; bfsql reads it as json or jsonb.",
                f"Convert it: ALTER TABLE {table} ALTER COLUMN {column} TYPE jsonb USING to_jsonb({column}).",
            )


def _evidence_variant(found: dict[str, dict[str, str]], schema: str) -> tuple[bool, bool]:
    """Whether evidence is in a complete ``bundle_evidence``, or ``evidence``, table; an error if only partly there."""
    bundle_evidence = "bundle_evidence" in found and not _missing_columns(found, "bundle_evidence", BUNDLE_EVIDENCE)
    evidence_table = (
        "evidence" in found
        and not _missing_columns(found, "evidence", EVIDENCE_TABLE)
        and "id" in found["relationship"]
    )
    partial = [t for t in ("bundle_evidence", "evidence") if t in found]
    if partial and not (bundle_evidence or evidence_table):
        raise PostgresStoreError(
            f"{', '.join(partial)} exists in schema {schema!r} but lacks columns: bundle_evidence needs "
            f"{', '.join(BUNDLE_EVIDENCE)}; evidence needs {', '.join(EVIDENCE_TABLE)} and relationship.id.",
            "Add the missing columns, or drop the table to serve the graph without provenance.",
        )
    return bundle_evidence, evidence_table


async def _stored_vectors(
    conn: asyncpg.Connection, schema: str, found: dict[str, dict[str, str]], vector: bool,
    stored_embedder: str | None,
) -> tuple[int | None, str | None, bool]:
    """The stored vectors' dimension, their embedder (as ``bfsql_meta`` records it) and whether their index exists."""
    dimension = None
    embedder = stored_embedder
    if vector:
        dimension = await conn.fetchval("SELECT vector_dims(embedding) FROM entity WHERE embedding IS NOT NULL LIMIT 1")
        if "bfsql_meta" in found and dimension is not None:
            recorded = dict(await conn.fetch("SELECT key, value FROM bfsql_meta WHERE key = 'embedder'"))
            embedder = recorded.get("embedder", embedder)
    index = dimension is not None and bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_indexes "
            "WHERE schemaname = $1 AND tablename = 'entity' AND indexname = $2)",
            schema,
            vector_index_name(dimension),
        )
    )
    return dimension, embedder, index


def _why_no_vectors(found: dict[str, dict[str, str]], schema: str, vector: bool) -> str:
    """What stops vector search: no embedding column, a column of another type, no pgvector, or no vectors."""
    if "embedding" not in found["entity"]:
        return f"table {schema}.entity has no embedding column"
    if found["entity"]["embedding"] not in ("vector", "halfvec"):
        return f"column {schema}.entity.embedding has type {found['entity']['embedding']}, not vector"
    if not vector:
        return "the pgvector operator <=> is not on the search_path (is the vector extension installed?)"
    return f"no entity in {schema}.entity has an embedding"
