"""The kgraph schema as bfsql creates it (``bfsql postgres init-schema`` and every load).

Every statement is ``IF NOT EXISTS``, so creating the schema over an existing one
changes nothing. Only the loader and ``init-schema`` run this; the server never
writes (it does not even create extensions).
"""

from __future__ import annotations

import asyncpg

from bfsql_postgres.errors import PostgresStoreError

__all__ = [
    "HNSW_ELEMENT_BYTES",
    "HNSW_INDEX_PREFIX",
    "HNSW_MEMORY_LIMIT",
    "INDEXES",
    "create_schema",
    "ensure_vector_index",
    "hnsw_memory",
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
"""Name of the HNSW index over ``entity.embedding`` as ``halfvec(D)``, followed by D."""


def vector_index_name(dimension: int) -> str:
    """The HNSW index of vectors of ``dimension``."""
    return f"{HNSW_INDEX_PREFIX}{int(dimension)}"


HNSW_ELEMENT_BYTES = 768
"""Memory of one element of an HNSW graph being built, besides its vector (``halfvec``: 8 bytes and 2 a component),
with pgvector's default ``m`` (16): the neighbour lists of its layers and their bookkeeping. Measured with pgvector
0.8.6 on PostgreSQL 18: a graph of 256-dimensional vectors outgrew 16 MB after 13,671 of them (1,227 bytes each)."""

HNSW_MEMORY_LIMIT = 4 << 30
"""The most ``maintenance_work_mem`` an HNSW build is given (sized by :func:`hnsw_memory`)."""


def hnsw_memory(vectors: int, dimension: int) -> int:
    """Bytes of ``maintenance_work_mem`` that hold the HNSW graph of ``vectors`` vectors of ``dimension`` while it is
    built, with a quarter to spare, at most :data:`HNSW_MEMORY_LIMIT`. A graph that outgrows it goes on being built
    on disk, many times slower (pgvector says so in a notice); a parallel build takes all of it as shared memory at
    once, so it is not set higher than needed."""
    need = vectors * (HNSW_ELEMENT_BYTES + 8 + 2 * dimension)
    return min(need + need // 4, HNSW_MEMORY_LIMIT)


async def ensure_vector_index(conn: asyncpg.Connection, dimension: int | None, *, vectors: int | None = None) -> None:
    """The HNSW index (cosine, over ``embedding::halfvec(dimension)``) that vector search uses:
    created when missing; indexes of another dimension (an earlier embedder) dropped; all
    dropped when there are no vectors (``dimension`` None).

    Before the index is built, ``maintenance_work_mem`` is raised for the rest of the caller's transaction to hold
    its graph (:func:`hnsw_memory`) of ``vectors`` vectors (by default, those stored), when it is lower."""
    keep = vector_index_name(dimension) if dimension else None
    existing = await conn.fetch(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'entity' "
        "AND indexname LIKE $1",
        HNSW_INDEX_PREFIX + "%",
    )
    for row in existing:
        if row["indexname"] != keep:
            await conn.execute(f'DROP INDEX IF EXISTS "{row["indexname"]}"')
    if dimension and keep not in {row["indexname"] for row in existing}:
        if vectors is None:
            vectors = int(await conn.fetchval("SELECT count(*) FROM entity WHERE embedding IS NOT NULL"))
        memory = hnsw_memory(vectors, int(dimension))
        if memory > int(await conn.fetchval(_MAINTENANCE_MEMORY)):
            await conn.execute("SELECT set_config('maintenance_work_mem', $1, true)", f"{memory >> 10}kB")
        await conn.execute(
            f'CREATE INDEX IF NOT EXISTS "{keep}" ON entity '
            f"USING hnsw ((embedding::halfvec({int(dimension)})) halfvec_cosine_ops)"
        )


_MAINTENANCE_MEMORY = "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
"""``maintenance_work_mem`` in bytes (the setting is in kB)."""


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

    With ``vector`` and entity vectors already recorded in ``bfsql_meta``, their HNSW index too.
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
    if vector:
        dimension = await conn.fetchval("SELECT value FROM bfsql_meta WHERE key = 'embedder_dimension'")
        if dimension is not None:
            await ensure_vector_index(conn, int(dimension))
