"""Bulk-loading bundles (and CSV/TSV/RDF files) into a kgraph-schema PostgreSQL database.

Atomicity: a load is one transaction. The records are streamed with COPY into temporary
tables (a JSONL bundle is read by core's reader: its blocks of bare relationships, most of a
big graph, as COPY text, the other rows as binary COPY), then merged into ``entity``,
``relationship`` and ``bundle_evidence`` with set-based statements; a bad row (named
by file and line), an error or an interrupt anywhere rolls everything back. The target
tables are locked against other loaders (``SHARE ROW EXCLUSIVE``) for the duration;
readers are not blocked and see the old graph until the commit.

Idempotence: entities and relationships are upserted by key (within one load the last
record with a key wins, as in the memory backend); implied entities (mentioned by a
triple table or RDF file only) are inserted only when the id is unknown; evidence rows
are inserted once per distinct row. Loading the same files twice gives the same
database. The merge statements need no unique constraints, so tables created by other
kgraph tools can be loaded into unchanged.

Entity vectors (pgvector): with an embedder (by default the one recorded in
``bfsql_meta``, else the preferred semantic embedder when one is installed, else none),
the name (else the id) of every visible entity loaded now or still without a vector is
embedded into ``entity.embedding`` (``halfvec``: 2 bytes a component) in the same
transaction, the embedder's name and dimension are recorded in ``bfsql_meta``, and the
HNSW index that vector search uses is built for that dimension; a load with another
embedder re-embeds every entity, and ``embedder="none"`` removes the vectors. The server
refuses to compare the stored vectors with query vectors of another embedder.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import asyncpg

from bfsql import (
    BfsqlError,
    Embedder,
    EntityRecord,
    ImpliedEntity,
    Record,
    RelationshipRecord,
    create_embedder,
    detect_format,
    preferred_embedder,
    read_records,
)
from bfsql.loading import PlainEntities, PlainEntity, PlainRelationships, read_bundle
from bfsql_postgres.errors import PostgresStoreError, describe_dsn
from bfsql_postgres.schema import INDEXES, create_schema, ensure_vector_index, index_statement

__all__ = ["AUTO_EMBEDDER", "CHUNK_ROWS", "LoadReport", "connect", "load_postgres", "load_records"]

CHUNK_ROWS = 20_000
"""Rows buffered per table before they are sent with one COPY."""

AUTO_EMBEDDER = "auto"
"""Embed with the embedder recorded in the database, else the default (``hashing``)."""

EMBED_BATCH = 512
"""Texts per embedder call."""

EmbedderChoice: TypeAlias = Embedder | str | None
"""An embedder, a registered name, ``"auto"``, or ``"none"``/None (no vectors)."""

Progress = Callable[[int], None]
"""Called with the number of records (or lines of a JSONL bundle) processed since its previous call."""

Source: TypeAlias = tuple[Path, str] | Iterable[Record]
"""A file and its format, or records made in Python."""

_STAGING = """
CREATE TEMP TABLE load_entity (
    seq bigint, implied boolean, entity_id text, entity_type text, name text, properties jsonb,
    status text, confidence double precision, synonyms jsonb, source text, canonical_url text
) ON COMMIT DROP;
CREATE TEMP TABLE load_relationship (
    seq bigint, subject_id text, predicate text, object_id text, confidence double precision,
    source_documents jsonb DEFAULT '[]', properties jsonb DEFAULT '{}'
) ON COMMIT DROP;
CREATE TEMP TABLE load_evidence (
    relationship_key text, text_span text, confidence double precision, document_id text, section text
) ON COMMIT DROP;
"""

_ENTITY_COLUMNS = (
    "seq", "implied", "entity_id", "entity_type", "name", "properties",
    "status", "confidence", "synonyms", "source", "canonical_url",
)
_RELATIONSHIP_COLUMNS = ("seq", "subject_id", "predicate", "object_id", "confidence", "source_documents", "properties")
_EVIDENCE_COLUMNS = ("relationship_key", "text_span", "confidence", "document_id", "section")

_ENTITY_COLUMNS_LIST = "entity_id, entity_type, name, properties, status, confidence, synonyms, source, canonical_url"

_IMPLIED = f"""
INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
SELECT DISTINCT ON (l.entity_id) l.entity_id, l.entity_type, l.name, l.properties, l.status, l.confidence,
       l.synonyms, l.source, l.canonical_url
FROM load_entity l WHERE l.implied AND NOT EXISTS (SELECT 1 FROM entity e WHERE e.entity_id = l.entity_id)
ORDER BY l.entity_id, l.seq
"""
"""Implied ids not known yet (after the full records)."""

_MERGE: dict[str, tuple[str, ...]] = {
    # Entities: the last full record of each id wins (rows that would not change are not rewritten);
    # then implied ids not known yet.
    "entity": (
        """
        CREATE TEMP TABLE new_entity ON COMMIT DROP AS
        SELECT DISTINCT ON (entity_id) * FROM load_entity WHERE NOT implied ORDER BY entity_id, seq DESC
        """,
        """
        UPDATE entity e SET entity_type = n.entity_type, name = n.name, properties = n.properties,
            status = n.status, confidence = n.confidence, synonyms = n.synonyms, source = n.source,
            canonical_url = n.canonical_url
        FROM new_entity n
        WHERE e.entity_id = n.entity_id
          AND (e.entity_type, e.name, e.properties, e.status, e.confidence, e.synonyms, e.source, e.canonical_url)
              IS DISTINCT FROM
              (n.entity_type, n.name, n.properties, n.status, n.confidence, n.synonyms, n.source, n.canonical_url)
        """,
        f"""
        INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
        SELECT n.entity_id, n.entity_type, n.name, n.properties, n.status, n.confidence, n.synonyms, n.source,
               n.canonical_url
        FROM new_entity n WHERE NOT EXISTS (SELECT 1 FROM entity e WHERE e.entity_id = n.entity_id)
        """,
        _IMPLIED,
    ),
    # Relationships: the last record of each triple wins.
    "relationship": (
        """
        CREATE TEMP TABLE new_relationship ON COMMIT DROP AS
        SELECT DISTINCT ON (subject_id, predicate, object_id) * FROM load_relationship
        ORDER BY subject_id, predicate, object_id, seq DESC
        """,
        """
        UPDATE relationship r SET confidence = n.confidence, source_documents = n.source_documents,
            properties = n.properties
        FROM new_relationship n
        WHERE r.subject_id = n.subject_id AND r.predicate = n.predicate AND r.object_id = n.object_id
          AND (r.confidence, r.source_documents, r.properties)
              IS DISTINCT FROM (n.confidence, n.source_documents, n.properties)
        """,
        """
        INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties)
        SELECT n.subject_id, n.predicate, n.object_id, n.confidence, n.source_documents, n.properties
        FROM new_relationship n WHERE NOT EXISTS (
            SELECT 1 FROM relationship r
            WHERE r.subject_id = n.subject_id AND r.predicate = n.predicate AND r.object_id = n.object_id)
        """,
    ),
    # Evidence: each distinct row once.
    "bundle_evidence": (
        """
        INSERT INTO bundle_evidence (relationship_key, text_span, confidence, document_id, section)
        SELECT DISTINCT l.relationship_key, l.text_span, l.confidence, l.document_id, l.section
        FROM load_evidence l WHERE NOT EXISTS (
            SELECT 1 FROM bundle_evidence b
            WHERE b.relationship_key = l.relationship_key AND b.text_span IS NOT DISTINCT FROM l.text_span
              AND b.confidence IS NOT DISTINCT FROM l.confidence AND b.document_id IS NOT DISTINCT FROM l.document_id
              AND b.section IS NOT DISTINCT FROM l.section)
        """,
    ),
}
"""Each table's merge of the staged records into what it holds."""

_INTO_EMPTY: dict[str, tuple[str, ...]] = {
    "entity": (
        f"""
        INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
        SELECT DISTINCT ON (entity_id) {_ENTITY_COLUMNS_LIST} FROM load_entity WHERE NOT implied
        ORDER BY entity_id, seq DESC
        """,
        _IMPLIED,
    ),
    "relationship": (
        """
        INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties)
        SELECT DISTINCT ON (subject_id, predicate, object_id) subject_id, predicate, object_id, confidence,
               source_documents, properties
        FROM load_relationship ORDER BY subject_id, predicate, object_id, seq DESC
        """,
    ),
    "bundle_evidence": (
        """
        INSERT INTO bundle_evidence (relationship_key, text_span, confidence, document_id, section)
        SELECT DISTINCT relationship_key, text_span, confidence, document_id, section FROM load_evidence
        """,
    ),
}
"""The same merges into a table that holds nothing yet: the staged records as they win, nothing compared."""

_WITHOUT_REPEATS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "entity": (
        "entity_id",
        f"INSERT INTO entity ({_ENTITY_COLUMNS_LIST}) SELECT {_ENTITY_COLUMNS_LIST} FROM load_entity WHERE NOT implied",
        (_IMPLIED,),
    ),
    "relationship": (
        "subject_id, predicate, object_id",
        "INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties) "
        "SELECT subject_id, predicate, object_id, confidence, source_documents, properties FROM load_relationship",
        (),
    ),
}
"""A table whose primary key is the record's key, filled when no key is given twice: the key column(s), the insert
of the staged records as they are, and what follows once the key is back. Sorting the records to keep the last of
each key costs as much as building the key's index: when no key repeats (the usual bundle), it is not needed."""

_EMPTY = "SELECT NOT EXISTS (SELECT FROM {table})"

_LOAD_SETTINGS = "SET LOCAL work_mem = '256MB'; SET LOCAL maintenance_work_mem = '512MB'"
"""Memory of this load's sorts and index builds (the loader's own transaction only)."""

_PRIMARY_KEY = """
SELECT c.conname, array_agg(a.attname::text ORDER BY a.attname) AS columns
FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
WHERE c.conrelid = to_regclass($1) AND c.contype = 'p' GROUP BY c.conname
"""


async def _fill_without_repeats(conn: asyncpg.Connection, table: str) -> bool:
    """Fill the empty ``table`` with the staged records, its primary key dropped and built again after them; False
    (and nothing done) when it has no such key, another role's, or a key is staged twice."""
    if table not in _WITHOUT_REPEATS:
        return False
    key, insert, after = _WITHOUT_REPEATS[table]
    found = await conn.fetchrow(_PRIMARY_KEY, table)
    if found is None or sorted(found["columns"]) != sorted(c.strip() for c in key.split(",")):
        return False
    name = found["conname"]
    try:
        async with conn.transaction():
            await conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
            await conn.execute(insert)
            await conn.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" PRIMARY KEY ({key})')
    except (asyncpg.UniqueViolationError, asyncpg.InsufficientPrivilegeError):
        return False
    for sql in after:
        await conn.execute(sql)
    return True


async def _drop(conn: asyncpg.Connection, index: str) -> bool:
    """Drop ``index`` (to build it again later); False when the loader's role may not (another role's table)."""
    try:
        async with conn.transaction():
            await conn.execute(f"DROP INDEX IF EXISTS {index}")
    except asyncpg.InsufficientPrivilegeError:
        return False
    return True


async def _merge(conn: asyncpg.Connection) -> None:
    """Merge the staged records into each table. A table that holds nothing yet takes them without comparing, its
    indexes dropped and built after the rows are in (its primary key too, when no key repeats); one that holds rows
    is merged row by row (an upsert)."""
    for table, statements in _MERGE.items():
        empty = bool(await conn.fetchval(_EMPTY.format(table=table)))
        indexes = [name for name, (on, _) in INDEXES.items() if on == table and empty and await _drop(conn, name)]
        if not (empty and await _fill_without_repeats(conn, table)):
            for sql in _INTO_EMPTY[table] if empty else statements:
                await conn.execute(sql)
        for name in indexes:
            await conn.execute(index_statement(name))



_AFTER_LOAD = ("VACUUM entity, relationship, bundle_evidence", "ANALYZE entity, relationship, bundle_evidence")
"""After the commit (VACUUM cannot run in a transaction): the visibility map, for index-only scans, then the
statistics. As one ``VACUUM (ANALYZE)`` of the three tables, PostgreSQL 18 left the map of some of them empty
(HPO: 0 of 5,632 relationship pages all-visible, and a hub's hop read 2,056 heap pages instead of its index)."""

_TO_EMBED = """
SELECT e.entity_id, coalesce(nullif(btrim(e.name), ''), e.entity_id) AS text
FROM entity e
WHERE e.status IS DISTINCT FROM 'merged'
  AND ($1 OR e.embedding IS NULL OR e.entity_id IN (SELECT entity_id FROM load_entity))
ORDER BY e.entity_id
"""


@dataclass(frozen=True)
class LoadReport:
    """What one load read: records per kind and the number of source files."""

    database: str
    """``host:port/dbname`` (never the password)."""
    files: int
    entities: int
    relationships: int
    evidence: int
    embedder: str | None = None
    """The embedder of the stored entity vectors (None: there are none)."""
    embedded: int = 0
    """Entities (re-)embedded by this load."""

    @property
    def records(self) -> int:
        """All records read."""
        return self.entities + self.relationships + self.evidence

    def summary(self) -> str:
        """A one-line human-readable summary."""
        return (
            f"loaded {self.entities} entities, {self.relationships} relationships and {self.evidence} evidence "
            f"records from {self.files} file(s) into {self.database}"
        )


def _dump(value: Any) -> str:
    if not value:  # most records have no properties, synonyms or documents
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False)


class _Staging:
    """Buffers rows per staging table and sends each full buffer with one COPY.

    ``seq`` numbers the records in the order they were read (the last record of a key wins).
    """

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.seq = 0
        self.counts = {"entity": 0, "relationship": 0, "evidence": 0}
        self.buffers: dict[str, list[tuple[Any, ...]]] = {"entity": [], "relationship": [], "evidence": []}
        self.relationship_text: list[str] = []
        """Bare relationships as lines of COPY text (``seq``, subject, predicate, object)."""

    @staticmethod
    def row(seq: int, record: Any) -> tuple[str, tuple[Any, ...]]:
        """The staging table and row of ``record``: a :class:`~bfsql.Record`, or a plain entity or relationship
        row of core's bundle reader (a named tuple: ``id, entity_type, name`` or ``subject, predicate, object``)."""
        if isinstance(record, tuple):
            if record.kind == "relationship":
                return "relationship", (seq, *record, None, "[]", "{}")
            return "entity", (seq, False, *record, "{}", None, None, "[]", None, None)
        if isinstance(record, EntityRecord):
            return "entity", (
                seq, isinstance(record, ImpliedEntity), record.id, record.entity_type, record.name,
                _dump(record.properties), record.status, record.confidence, _dump(record.synonyms), record.source,
                record.canonical_url,
            )
        if isinstance(record, RelationshipRecord):
            return "relationship", (
                seq, record.subject, record.predicate, record.object, record.confidence,
                _dump(record.source_documents), _dump(record.properties),
            )
        return "evidence", (
            record.edge().key(), record.text_span, record.confidence, record.document_id, record.section,
        )

    async def add(self, record: Any, seq: int | None = None) -> None:
        """Stage ``record``, numbered ``seq`` (by default the next number)."""
        if seq is None:
            self.seq += 1
            seq = self.seq
        kind, row = self.row(seq, record)
        self.counts[kind] += 1
        buffer = self.buffers[kind]
        buffer.append(row)
        if len(buffer) >= CHUNK_ROWS:
            await self.flush(kind)

    async def flush_text(self) -> None:
        """Send the buffered COPY text lines of bare relationships."""
        if self.relationship_text:
            data = "".join(self.relationship_text).encode()
            self.relationship_text = []
            await self.conn.copy_to_table("load_relationship", source=io.BytesIO(data), format="text",
                                          columns=["seq", "subject_id", "predicate", "object_id"])

    async def flush(self, kind: str) -> None:
        columns = {"entity": _ENTITY_COLUMNS, "relationship": _RELATIONSHIP_COLUMNS, "evidence": _EVIDENCE_COLUMNS}
        if self.buffers[kind]:
            await self.conn.copy_records_to_table(f"load_{kind}", records=self.buffers[kind], columns=columns[kind])
            self.buffers[kind] = []


async def _vector_column(conn: asyncpg.Connection) -> str | None:
    """The pgvector type of ``entity.embedding`` (``halfvec`` or ``vector``), None without one."""
    kind = await conn.fetchval(
        "SELECT udt_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'entity' AND column_name = 'embedding'"
    )
    return str(kind) if kind in ("vector", "halfvec") else None


async def _resolve_embedder(conn: asyncpg.Connection, choice: EmbedderChoice) -> Embedder | None:
    if choice is None or choice == "none":
        return None
    if not isinstance(choice, str):
        return choice
    if choice != AUTO_EMBEDDER:
        return create_embedder(choice)
    recorded = await conn.fetchval("SELECT value FROM bfsql_meta WHERE key = 'embedder'")
    if recorded is None:
        preferred = preferred_embedder()
        return create_embedder(preferred) if preferred is not None else None
    try:
        return create_embedder(recorded)
    except BfsqlError as exc:
        raise PostgresStoreError(
            f"The entity vectors were made by embedder {recorded!r}, which is not installed ({exc.message}).",
            "Install it, or re-embed with another: --embedder NAME (or --embedder none to drop the vectors).",
        ) from None


async def _embed(conn: asyncpg.Connection, embedder: Embedder | None, column: str) -> int:
    """Store vectors of new, changed and unembedded entities (all after a change of embedder); how many.

    Then the HNSW index for the embedder's dimension is made (see :func:`ensure_vector_index`).
    """
    if embedder is None:
        await conn.execute("UPDATE entity SET embedding = NULL WHERE embedding IS NOT NULL")
        await conn.execute("DELETE FROM bfsql_meta WHERE key IN ('embedder', 'embedder_dimension')")
        await ensure_vector_index(conn, None)
        return 0
    recorded = dict(await conn.fetch("SELECT key, value FROM bfsql_meta"))
    same = (recorded.get("embedder"), recorded.get("embedder_dimension")) == (embedder.name, str(embedder.dimension))
    rows = await conn.fetch(_TO_EMBED, not same)
    if not same:  # an index of the earlier vectors' dimension would refuse the new ones; rebuilt below
        await ensure_vector_index(conn, None)
    await conn.execute("CREATE TEMP TABLE load_vector (entity_id text, embedding text) ON COMMIT DROP")
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        vectors = await embedder.embed([r["text"] for r in batch])
        if len(vectors) != len(batch) or any(len(v) != embedder.dimension for v in vectors):
            raise ValueError(f"embedder {embedder.name!r} returned vectors of the wrong number or dimension")
        await conn.copy_records_to_table(
            "load_vector",
            records=[
                (r["entity_id"], "[" + ",".join(repr(float(x)) for x in v) + "]")
                for r, v in zip(batch, vectors, strict=True)
            ],
        )
    await conn.execute(
        f"UPDATE entity e SET embedding = v.embedding::{column} FROM load_vector v WHERE e.entity_id = v.entity_id"
    )
    await conn.execute(
        "UPDATE entity SET embedding = NULL WHERE status IS NOT DISTINCT FROM 'merged' AND embedding IS NOT NULL"
    )
    await conn.executemany(
        "INSERT INTO bfsql_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedder", embedder.name), ("embedder_dimension", str(embedder.dimension))],
    )
    await ensure_vector_index(conn, embedder.dimension)
    return len(rows)


async def _stage_bundle(staging: _Staging, path: Path, progress: Progress | None) -> None:
    """Stage the records of the JSONL bundle ``path`` as core's reader reads them (a bad row raises its
    :class:`~bfsql.BadRow`), numbered by line after what was staged before.

    The reader gives a block of lines that are all bare relationships (most of a big graph's lines) as
    its triples, checked by one regular expression: their strings hold no backslash, quote or control
    character, so they go to the database as COPY text without escaping. A block of plain entity lines
    and the other rows are staged one by one.
    """
    first = staging.seq
    last = pending = 0
    for number, row in read_bundle(path, plain=True):
        if isinstance(row, PlainRelationships):  # a block of bare relationships, from line ``number`` on
            seq = first + number
            staging.relationship_text.extend(
                f"{seq + i}\t{s}\t{p}\t{o}\n" for i, (s, p, o) in enumerate(row)
            )
            staging.counts["relationship"] += len(row)
            last = number + len(row) - 1
            if len(staging.relationship_text) >= CHUNK_ROWS:
                await staging.flush_text()
        elif isinstance(row, PlainEntities):  # a block of plain entities, from line ``number`` on
            for i, entity in enumerate(row):
                await staging.add(PlainEntity(*entity), first + number + i)
            last = number + len(row) - 1
        else:
            await staging.add(row, first + number)
            last = number
        if progress is not None and last - pending >= CHUNK_ROWS:
            progress(last - pending)
            pending = last
    if progress is not None and last > pending:
        progress(last - pending)
    staging.seq = first + last


async def _stage(
    conn: asyncpg.Connection, staging: _Staging, sources: Iterable[Source], progress: Progress | None
) -> None:
    """Stage every record of ``sources`` in order: a JSONL bundle by :func:`_stage_bundle`, anything else through
    core's readers."""
    for source in sources:
        if isinstance(source, tuple):
            path, fmt = source
            if fmt == "jsonl":
                await _stage_bundle(staging, path, progress)
                continue
            records: Iterable[Record] = (record for _, record in read_records(path, fmt))
        else:
            records = source
        pending = 0
        for record in records:
            await staging.add(record)
            pending += 1
            if progress is not None and pending >= CHUNK_ROWS:
                progress(pending)
                pending = 0
        if progress is not None and pending:
            progress(pending)
    await staging.flush_text()
    for kind in staging.buffers:
        await staging.flush(kind)


async def _load(
    conn: asyncpg.Connection,
    sources: Iterable[Source],
    *,
    vector: bool,
    embedder: EmbedderChoice,
    progress: Progress | None,
) -> tuple[dict[str, int], Embedder | None, int]:
    async with conn.transaction():
        await create_schema(conn, vector=vector)
        column = await _vector_column(conn)
        if column is None:
            if embedder not in (None, "none", AUTO_EMBEDDER):
                raise PostgresStoreError(
                    "Cannot store entity vectors: entity.embedding is missing or not a pgvector column.",
                    "Load without --embedder (or with --embedder none), or create the schema with pgvector.",
                )
            embedder = None
        chosen = await _resolve_embedder(conn, embedder)
        await conn.execute("LOCK TABLE entity, relationship, bundle_evidence IN SHARE ROW EXCLUSIVE MODE")
        await conn.execute(_LOAD_SETTINGS)
        await conn.execute(_STAGING)
        staging = _Staging(conn)
        await _stage(conn, staging, sources, progress)
        await _merge(conn)
        embedded = await _embed(conn, chosen, column) if column is not None else 0
    return staging.counts, chosen, embedded


async def connect(dsn: str) -> asyncpg.Connection:
    """A read-write connection for loading; :class:`PostgresStoreError` when it cannot be opened."""
    try:
        return await asyncpg.connect(dsn, server_settings={"application_name": "bfsql-load"})
    except (OSError, TimeoutError) as exc:
        raise PostgresStoreError(
            f"Cannot connect to PostgreSQL at {describe_dsn(dsn)}: {exc}.",
            "Check that the server runs and that host and port in the DSN are right.",
        ) from None
    except asyncpg.PostgresError as exc:
        raise PostgresStoreError(
            f"PostgreSQL at {describe_dsn(dsn)} refused the connection: {exc}.",
            "Check the user, password and database name in the DSN.",
        ) from None


async def load_postgres(
    dsn: str,
    sources: list[Path],
    fmt: str | None = None,
    *,
    vector: bool = True,
    embedder: EmbedderChoice = AUTO_EMBEDDER,
    progress: Progress | None = None,
) -> LoadReport:
    """Load bundle/CSV/TSV/RDF files into the database at ``dsn`` in one transaction.

    The schema is created first when missing (see :mod:`bfsql_postgres.schema`; without
    ``vector``, no pgvector and no embedding column). ``fmt`` forces one format for every
    source; by default each file's extension decides. ``embedder`` makes the entity
    vectors (see the module docstring). A bad row raises
    :class:`~bfsql.loading.errors.BadRow` naming its file and line, and nothing is loaded.
    """
    paths = [Path(p) for p in sources]
    formats = [fmt or detect_format(p) for p in paths]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
    return await _run(dsn, list(zip(paths, formats, strict=True)), len(paths), vector=vector, embedder=embedder,
                      progress=progress)


async def load_records(
    dsn: str, records: Iterable[Record], *, vector: bool = True, embedder: EmbedderChoice = AUTO_EMBEDDER
) -> LoadReport:
    """Load records produced in Python, with the guarantees of :func:`load_postgres`."""
    return await _run(dsn, [records], 0, vector=vector, embedder=embedder, progress=None)


async def _run(
    dsn: str,
    sources: list[Source],
    files: int,
    *,
    vector: bool,
    embedder: EmbedderChoice,
    progress: Progress | None,
) -> LoadReport:
    conn = await connect(dsn)
    try:
        counts, chosen, embedded = await _load(conn, sources, vector=vector, embedder=embedder, progress=progress)
        for statement in _AFTER_LOAD:
            await conn.execute(statement)
    finally:
        await conn.close()
    return LoadReport(
        describe_dsn(dsn), files, counts["entity"], counts["relationship"], counts["evidence"],
        chosen.name if chosen is not None else None, embedded,
    )
