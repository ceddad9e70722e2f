"""Bulk-loading bundles (and CSV/TSV/RDF files) into a kgraph-schema PostgreSQL database.

Atomicity: a load is one transaction. The records are streamed as COPY text (a JSONL bundle is
read by core's reader, its blocks of bare relationships or plain entities, most of a big graph,
by one regular expression each; see :mod:`bfsql_postgres.copying`), the server storing one chunk
while the next is read. A graph table that holds rows gets them through a temporary staging
table and a set-based merge; an empty one (a fresh load) straight from COPY, its key and indexes
built after the rows (see :mod:`bfsql_postgres.merging`). A bad row (named by file and line), an
error or an interrupt anywhere rolls everything back. The target tables are locked against other
loaders (``SHARE ROW EXCLUSIVE``) for the duration; readers are not blocked and see the old graph
until the commit, except readers of a table that was empty: they wait for the commit.

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
sign-bit codes that vector search reads are saved (:mod:`bfsql_postgres.vector_codes`); a load with another
embedder re-embeds every entity, and ``embedder="none"`` removes the vectors. The server
refuses to compare the stored vectors with query vectors of another embedder.

After the commit (and ``VACUUM``, ``ANALYZE``), the graph's hub candidates and dangling ends are saved
for intersections in a short transaction of their own (:mod:`bfsql_postgres.rare_ends`); should it
fail, the graph stays loaded and servers read them from the relationships instead.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
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
from bfsql.loading import PlainEntities, PlainEntity, PlainRelationship, PlainRelationships, read_bundle
from bfsql_postgres.copying import NULL, Target, copy_rows, text_line
from bfsql_postgres.errors import PostgresStoreError, describe_dsn
from bfsql_postgres.merging import LOAD_SETTINGS, STAGING, merge, take_empty, targets
from bfsql_postgres.rare_ends import save_ends
from bfsql_postgres.schema import create_schema, drop_vector_indexes, index_statement
from bfsql_postgres.vector_codes import drop_codes, save_codes

__all__ = ["AUTO_EMBEDDER", "PROGRESS_ROWS", "LoadReport", "connect", "load_postgres", "load_records"]

PROGRESS_ROWS = 20_000
"""Records (or bundle lines) read between two calls of the progress callback."""

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

_AFTER_LOAD = ("VACUUM entity, relationship, bundle_evidence", "ANALYZE entity, relationship, bundle_evidence")
"""After the commit (VACUUM cannot run in a transaction): the visibility map, for index-only scans, then the
statistics. As one ``VACUUM (ANALYZE)`` of the three tables, PostgreSQL 18 left the map of some of them empty
(HPO: 0 of 5,632 relationship pages all-visible, and a hub's hop read 2,056 heap pages instead of its index)."""

_TO_EMBED = """
SELECT e.entity_id, coalesce(nullif(btrim(e.name), ''), e.entity_id) AS text
FROM entity e
WHERE e.status IS DISTINCT FROM 'merged'
  AND ($1 OR e.embedding IS NULL
       OR e.entity_id IN (SELECT entity_id FROM load_entity UNION ALL SELECT entity_id FROM load_implied))
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

    The vectors go to the server in pgvector's binary format (see :func:`_vector_copy`), then into
    ``entity.embedding`` by one ``UPDATE``; then the sign-bit codes of every stored vector are saved
    again (:func:`~bfsql_postgres.vector_codes.save_codes`). An HNSW index an older bfsql built is dropped.
    """
    await drop_vector_indexes(conn)
    if embedder is None:
        await conn.execute("UPDATE entity SET embedding = NULL WHERE embedding IS NOT NULL")
        await conn.execute("DELETE FROM bfsql_meta WHERE key IN ('embedder', 'embedder_dimension')")
        await drop_codes(conn)
        return 0
    recorded = dict(await conn.fetch("SELECT key, value FROM bfsql_meta"))
    same = (recorded.get("embedder"), recorded.get("embedder_dimension")) == (embedder.name, str(embedder.dimension))
    rows = await conn.fetch(_TO_EMBED, not same)
    await conn.execute(f"CREATE TEMP TABLE load_vector (entity_id text, embedding {column}) ON COMMIT DROP")
    await conn.copy_to_table(
        "load_vector", source=_vector_copy(embedder, rows, column), columns=["entity_id", "embedding"],
        format="binary",
    )
    await conn.execute(
        "UPDATE entity e SET embedding = v.embedding FROM load_vector v WHERE e.entity_id = v.entity_id"
    )
    await conn.execute(
        "UPDATE entity SET embedding = NULL WHERE status IS NOT DISTINCT FROM 'merged' AND embedding IS NOT NULL"
    )
    await conn.executemany(
        "INSERT INTO bfsql_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedder", embedder.name), ("embedder_dimension", str(embedder.dimension))],
    )
    await save_codes(conn)
    return len(rows)


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
"""The start of a binary COPY stream: its signature, no flags, no header extension."""
_COPY_TRAILER = struct.pack(">h", -1)

_BINARY_COMPONENT = {"halfvec": ">f2", "vector": ">f4"}
"""A component of each pgvector type in its binary format (``halfvec_recv``, ``vector_recv``): big-endian IEEE."""


async def _vector_copy(embedder: Embedder, rows: list[asyncpg.Record], column: str) -> AsyncIterator[bytes]:
    """The rows' ids and vectors as a binary COPY stream, a batch of :data:`EMBED_BATCH` texts at a time: the server
    stores a batch while the next is embedded (in a worker thread when the embedder offers ``embed_array``).

    The vectors are exactly those that decimal text would give: the components as float32 (what ``vector`` keeps and
    what ``halfvec`` parses text into), then, for ``halfvec``, rounded to half precision to the nearest, ties to
    even, as the server does. Decimal text took 256 ``repr`` calls an entity and a text column as big as the
    vectors (300 MB for 65,536 entities) for the server to parse again.
    """
    yield _COPY_HEADER
    as_array = getattr(embedder, "embed_array", None)
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        texts = [r["text"] for r in batch]
        ids = [r["entity_id"] for r in batch]
        if callable(as_array):
            yield await asyncio.to_thread(_embed_rows, embedder, as_array, texts, ids, column)
        else:
            yield _binary_rows(embedder, ids, _as_decimal_text_would(await embedder.embed(texts)), column)
    yield _COPY_TRAILER


def _as_decimal_text_would(vectors: list[list[float]]) -> Any:
    """Python floats as the float32 that the server parses their decimal text (``repr``) into, as a matrix (the
    vectors as they are when they are not all of one length).

    Rounded once, a float64 halfway between two float32 goes to the even one; its shortest decimal text is a little
    above or below it, and the server's ``strtof`` rounds that to the float32 on that side: those few are moved."""
    import numpy as np

    try:
        exact = np.asarray(vectors, dtype=np.float64)
    except ValueError:  # rows of several lengths: refused by _binary_rows
        return vectors
    if exact.ndim != 2:
        return vectors
    with np.errstate(invalid="ignore", over="ignore"):  # too big for float32: infinite, refused by the server
        rounded = exact.astype(np.float32)
        other = np.nextafter(rounded, np.where(exact > rounded, np.float32(np.inf), np.float32(-np.inf)))
        tied = (exact != rounded) & (exact - rounded.astype(np.float64) == other.astype(np.float64) - exact)
    for row, col in zip(*np.nonzero(tied), strict=True):
        value = float(exact[row, col])
        if (Decimal(repr(value)) > Decimal(value)) == (other[row, col] > rounded[row, col]):
            rounded[row, col] = other[row, col]
    return rounded


def _embed_rows(embedder: Embedder, as_array: Callable[[list[str]], Any], texts: list[str], ids: list[str],
                column: str) -> bytes:
    """:func:`_binary_rows` of the vectors that ``as_array`` (the embedder's ``embed_array``) gives ``texts``."""
    return _binary_rows(embedder, ids, as_array(texts), column)


def _binary_rows(embedder: Embedder, ids: list[str], vectors: Any, column: str) -> bytes:
    """Binary COPY tuples of (entity_id text, embedding) for ``ids`` and their ``vectors``."""
    import numpy as np

    dimension = embedder.dimension
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except ValueError:  # rows of several lengths
        matrix = None
    if matrix is None or matrix.shape != (len(ids), dimension):
        raise ValueError(f"embedder {embedder.name!r} returned vectors of the wrong number or dimension")
    kind = np.dtype(_BINARY_COMPONENT[column])
    size = 4 + kind.itemsize * dimension  # dim, unused, components
    packed = np.empty(len(ids), dtype=[("size", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("x", kind, dimension)])
    packed["size"], packed["dim"], packed["unused"] = size, dimension, 0
    with np.errstate(over="ignore"):  # too big for a half: infinite, refused by the server
        packed["x"] = matrix  # float32 to half: nearest, ties to even
    raw, step = packed.tobytes(), 4 + size
    out = []
    for i, entity_id in enumerate(ids):
        key = entity_id.encode()
        out.append(struct.pack(">hi", 2, len(key)) + key + raw[i * step : (i + 1) * step])
    return b"".join(out)


_ENTITY_REST = "\t{}\t" + NULL + "\t" + NULL + "\t[]\t" + NULL + "\t" + NULL + "\n"
"""The COPY text of a plain entity after its name: no properties, status, confidence, synonyms, source or URL."""
_RELATIONSHIP_REST = "\t" + NULL + "\t[]\t{}\n"
"""The COPY text of a bare relationship after its triple: no confidence, documents or properties."""


class _Rows:
    """Turns what the readers give into COPY text for the load's targets (see :func:`~bfsql_postgres.merging.targets`)
    and counts the records."""

    def __init__(self, targets: dict[str, Target]) -> None:
        self.entity, self.implied = targets["entity"], targets["implied"]
        self.relationship, self.bare, self.evidence = targets["relationship"], targets["bare"], targets["evidence"]
        self.counts = {"entity": 0, "relationship": 0, "evidence": 0}

    def record(self, record: Record | PlainEntity | PlainRelationship) -> tuple[Target, str]:
        """One record, or a plain row of core's bundle reader (its strings may need escaping)."""
        if isinstance(record, PlainRelationship):
            self.counts["relationship"] += 1
            return self.relationship, text_line(record)[:-1] + _RELATIONSHIP_REST
        if isinstance(record, PlainEntity):
            self.counts["entity"] += 1
            return self.entity, text_line(record)[:-1] + _ENTITY_REST
        if isinstance(record, EntityRecord):
            self.counts["entity"] += 1
            values = (
                record.id, record.entity_type, record.name, _dump(record.properties), record.status,
                record.confidence, _dump(record.synonyms), record.source, record.canonical_url,
            )
            if isinstance(record, ImpliedEntity):
                return self.implied, text_line(values)
            return self.entity, text_line(values)
        if isinstance(record, RelationshipRecord):
            self.counts["relationship"] += 1
            return self.relationship, text_line((
                record.subject, record.predicate, record.object, record.confidence,
                _dump(record.source_documents), _dump(record.properties),
            ))
        self.counts["evidence"] += 1
        return self.evidence, text_line(
            (record.edge().key(), record.text_span, record.confidence, record.document_id, record.section)
        )

    def relationships(self, block: PlainRelationships) -> tuple[Target, str]:
        """A block of bare relationships read by one regular expression: their strings hold no backslash, quote or
        control character, so they go to the database as they are."""
        self.counts["relationship"] += len(block)
        if self.bare != self.relationship:
            return self.bare, "\n".join(map("\t".join, block)) + "\n"
        return self.relationship, _RELATIONSHIP_REST.join(map("\t".join, block)) + _RELATIONSHIP_REST

    def entities(self, block: PlainEntities) -> tuple[Target, str]:
        """A block of plain entities read by one regular expression (nothing to escape either)."""
        self.counts["entity"] += len(block)
        return self.entity, "".join(
            [f"{i}\t{kind}\t{NULL if name is None else name}{_ENTITY_REST}" for i, kind, name in block]
        )


def _bundle_rows(rows: _Rows, path: Path, progress: Progress | None) -> Iterator[tuple[Target, str]]:
    """The rows of the JSONL bundle ``path`` as core's reader reads them (a bad row raises its
    :class:`~bfsql.BadRow`); ``progress`` hears of the lines read."""
    last = pending = 0
    for number, row in read_bundle(path, plain=True):
        if isinstance(row, PlainRelationships):  # a block of bare relationships, from line ``number`` on
            yield rows.relationships(row)
            last = number + len(row) - 1
        elif isinstance(row, PlainEntities):
            yield rows.entities(row)
            last = number + len(row) - 1
        else:
            yield rows.record(row)
            last = number
        if progress is not None and last - pending >= PROGRESS_ROWS:
            progress(last - pending)
            pending = last
    if progress is not None and last > pending:
        progress(last - pending)


def _source_rows(rows: _Rows, sources: Iterable[Source], progress: Progress | None) -> Iterator[tuple[Target, str]]:
    """The rows of every source in order: a JSONL bundle by :func:`_bundle_rows`, anything else through core's
    readers."""
    for source in sources:
        if isinstance(source, tuple):
            path, fmt = source
            if fmt == "jsonl":
                yield from _bundle_rows(rows, path, progress)
                continue
            records: Iterable[Record] = (record for _, record in read_records(path, fmt))
        else:
            records = source
        pending = 0
        for record in records:
            yield rows.record(record)
            pending += 1
            if progress is not None and pending >= PROGRESS_ROWS:
                progress(pending)
                pending = 0
        if progress is not None and pending:
            progress(pending)


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
        await conn.execute(LOAD_SETTINGS)
        await conn.execute(STAGING)
        taken = {table: key for table in ("entity", "relationship") if (key := await take_empty(conn, table))}
        rows = _Rows(await targets(conn, taken))
        await copy_rows(conn, _source_rows(rows, sources, progress))
        deferred = await merge(conn, taken)
        embedded = await _embed(conn, chosen, column) if column is not None else 0
        for name in deferred:
            await conn.execute(index_statement(name))
    return rows.counts, chosen, embedded


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
        try:
            await save_ends(conn)
        except asyncpg.PostgresError as exc:
            raise PostgresStoreError(
                f"The graph is loaded, but saving its hub candidates for intersections failed: {exc}.",
                "Intersections read them from the relationships meanwhile (slower on a big graph); load again "
                "(nothing changes but them) once the cause is fixed.",
            ) from None
    finally:
        await conn.close()
    return LoadReport(
        describe_dsn(dsn), files, counts["entity"], counts["relationship"], counts["evidence"],
        chosen.name if chosen is not None else None, embedded,
    )
