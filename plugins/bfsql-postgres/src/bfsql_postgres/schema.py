"""The kgraph schema as bfsql creates it (``bfsql postgres init-schema`` and every load).

Every statement is ``IF NOT EXISTS`` (the triggers' functions are replaced by the same), so
creating the schema over an existing one changes nothing. Only the loader and ``init-schema`` run
this; the server never writes (it does not even create extensions).
"""

from __future__ import annotations

import asyncpg

from bfsql_postgres.errors import PostgresStoreError
from bfsql_postgres.rare_ends import ends_statements
from bfsql_postgres.vector_codes import codes_statements

__all__ = [
    "HNSW_INDEX_PREFIX",
    "INDEXES",
    "create_schema",
    "drop_vector_indexes",
    "index_statement",
    "schema_statements",
    "vector_index_name",
]

_VECTOR = "CREATE EXTENSION IF NOT EXISTS vector"
_TRIGRAM = "CREATE EXTENSION IF NOT EXISTS pg_trgm"

_TABLES = (
    """
    CREATE TABLE IF NOT EXISTS entity (
        entity_id text PRIMARY KEY,
        entity_type text NOT NULL,
        name text,
        {embedding}
        properties jsonb NOT NULL DEFAULT '{{}}'::jsonb,
        status text,
        confidence double precision,
        synonyms jsonb NOT NULL DEFAULT '[]'::jsonb,
        source text,
        canonical_url text
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS relationship (
        subject_id text NOT NULL,
        predicate text NOT NULL,
        object_id text NOT NULL,
        confidence double precision,
        source_documents jsonb NOT NULL DEFAULT '[]'::jsonb,
        properties jsonb NOT NULL DEFAULT '{{}}'::jsonb,
        PRIMARY KEY (subject_id, predicate, object_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS bundle_evidence (
        id bigserial PRIMARY KEY,
        relationship_key text NOT NULL,
        text_span text,
        confidence double precision,
        document_id text,
        section text
    )
    """,
    # Written by the loader only: which embedder made entity.embedding (keys embedder, embedder_dimension).
    """
    CREATE TABLE IF NOT EXISTS bfsql_meta (
        key text PRIMARY KEY,
        value text NOT NULL
    )
    """,
)

INDEXES: dict[str, tuple[str, str]] = {
    # Covering: a hop reads incoming edges from this index alone and outgoing ones from the primary
    # key alone (once VACUUM has set the visibility map).
    "relationship_object_idx": ("relationship", "relationship (object_id) INCLUDE (subject_id, predicate)"),
    # Start-up lists the predicates by skipping through it, one probe a predicate (DISTINCT over R-MAT 23's 66M
    # rows: 5.2 s before the first answer).
    "relationship_predicate_idx": ("relationship", "relationship (predicate)"),
    # Tiny: edge metadata, provenance and predicates check that neither end of an edge is merged.
    "entity_merged_idx": ("entity", "entity (entity_id) WHERE status = 'merged'"),
    "bundle_evidence_key_idx": ("bundle_evidence", "bundle_evidence (relationship_key)"),
    "entity_type_idx": ("entity", "entity (entity_type)"),
    "entity_name_trgm_idx": ("entity", "entity USING gin (name gin_trgm_ops)"),
    # The text form of the synonym list prefilters synonym searches (see queries.synonym_prefilter_safe).
    "entity_synonyms_trgm_idx": ("entity", "entity USING gin ((synonyms::text) gin_trgm_ops)"),
}
"""bfsql's indexes (beyond the primary keys) by name: the table and what ``CREATE INDEX name ON`` takes.
A load into an empty table drops its indexes and builds them after the rows are in (far faster
than growing them row by row)."""


def index_statement(name: str) -> str:
    """``CREATE INDEX IF NOT EXISTS`` for the index ``name`` of :data:`INDEXES`."""
    return f"CREATE INDEX IF NOT EXISTS {name} ON {INDEXES[name][1]}"


HNSW_INDEX_PREFIX = "entity_embedding_hnsw_"
"""Name of the HNSW index over ``entity.embedding`` as ``halfvec(D)`` that bfsql built before its codes, followed
by D."""


def vector_index_name(dimension: int) -> str:
    """The HNSW index of vectors of ``dimension``."""
    return f"{HNSW_INDEX_PREFIX}{int(dimension)}"


async def drop_vector_indexes(conn: asyncpg.Connection) -> None:
    """Drop the HNSW indexes an older bfsql built over ``entity.embedding`` (the codes of
    :mod:`bfsql_postgres.vector_codes` replace them; kept, every load would rewrite them)."""
    existing = await conn.fetch(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'entity' "
        "AND indexname LIKE $1",
        HNSW_INDEX_PREFIX + "%",
    )
    for row in existing:
        await conn.execute(f'DROP INDEX IF EXISTS "{row["indexname"]}"')


def schema_statements(*, vector: bool = True) -> list[str]:
    """The DDL, in order; without ``vector`` neither pgvector nor ``entity.embedding``.

    Vectors are stored as ``halfvec`` (2 bytes a component); a database made by other tools
    may hold ``vector`` (4 bytes), which bfsql reads as well.
    """
    embedding = "embedding halfvec," if vector else ""
    statements = [_VECTOR] if vector else []
    statements.append(_TRIGRAM)
    statements += [sql.format(embedding=embedding) for sql in _TABLES]
    statements += [index_statement(name) for name in INDEXES]
    return statements


async def create_schema(conn: asyncpg.Connection, *, vector: bool = True) -> None:
    """Create the extensions, tables and indexes that are missing (inside the caller's transaction).

    Then the table of the saved hub candidates and dangling ends with the triggers that mark it stale
    (:mod:`bfsql_postgres.rare_ends`), and with ``vector`` the tables of the vectors' codes and their trigger
    (:mod:`bfsql_postgres.vector_codes`).
    """
    for sql in schema_statements(vector=vector):
        try:
            await conn.execute(sql)
        except asyncpg.FeatureNotSupportedError as exc:
            raise PostgresStoreError(
                f"PostgreSQL cannot create the schema: {exc}.",
                "Install the extension on the server (pgvector: package postgresql-NN-pgvector), "
                "or pass --no-vector to go without embeddings.",
            ) from None
        except asyncpg.UndefinedFileError as exc:
            raise PostgresStoreError(
                f"PostgreSQL cannot create an extension: {exc}.",
                "Install it on the server (pgvector: package postgresql-NN-pgvector; pg_trgm: postgresql-contrib), "
                "or pass --no-vector to go without embeddings.",
            ) from None
        except asyncpg.InsufficientPrivilegeError as exc:
            raise PostgresStoreError(
                f"Not allowed to create the schema: {exc}.",
                "Run init-schema once as a role that may CREATE EXTENSION and CREATE TABLE (e.g. the database owner).",
            ) from None
    schema = str(await conn.fetchval("SELECT current_schema()"))
    for sql in [*ends_statements(schema), *(codes_statements(schema) if vector else [])]:
        await conn.execute(sql)
