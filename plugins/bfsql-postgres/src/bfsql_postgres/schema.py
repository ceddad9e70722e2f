"""The kgraph schema as bfsql creates it (``bfsql postgres init-schema`` and every load).

Every statement is ``IF NOT EXISTS``, so creating the schema over an existing one
changes nothing. Only the loader and ``init-schema`` run this; the server never
writes (it does not even create extensions).
"""

from __future__ import annotations

import asyncpg

from bfsql_postgres.errors import PostgresStoreError

__all__ = ["create_schema", "schema_statements"]

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
    # Covering: a hop reads incoming edges from this index alone and outgoing ones from the primary
    # key alone (once VACUUM has set the visibility map).
    "CREATE INDEX IF NOT EXISTS relationship_object_idx ON relationship (object_id) INCLUDE (subject_id, predicate)",
    # Tiny: edge metadata, provenance and predicates check that neither end of an edge is merged.
    "CREATE INDEX IF NOT EXISTS entity_merged_idx ON entity (entity_id) WHERE status = 'merged'",
    "CREATE INDEX IF NOT EXISTS bundle_evidence_key_idx ON bundle_evidence (relationship_key)",
    "CREATE INDEX IF NOT EXISTS entity_type_idx ON entity (entity_type)",
    "CREATE INDEX IF NOT EXISTS entity_name_trgm_idx ON entity USING gin (name gin_trgm_ops)",
    # The text form of the synonym list prefilters synonym searches (see queries.synonym_prefilter_safe).
    "CREATE INDEX IF NOT EXISTS entity_synonyms_trgm_idx ON entity USING gin ((synonyms::text) gin_trgm_ops)",
)


def schema_statements(*, vector: bool = True) -> list[str]:
    """The DDL, in order; without ``vector`` neither pgvector nor ``entity.embedding``."""
    embedding = "embedding vector," if vector else ""
    statements = [_VECTOR] if vector else []
    statements.append(_TRIGRAM)
    statements += [sql.format(embedding=embedding) for sql in _TABLES]
    return statements


async def create_schema(conn: asyncpg.Connection, *, vector: bool = True) -> None:
    """Create the extensions, tables and indexes that are missing (inside the caller's transaction)."""
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
