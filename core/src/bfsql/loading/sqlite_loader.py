"""Loading records into an embedded SQLite store, atomically and idempotently.

Atomicity: the store is never written in place. A load copies the existing store
(if any) to a temporary file in the same directory, applies every source to the copy
in one transaction, syncs it to disk and then ``os.replace``-s it over the store.
``os.replace`` within one directory is an atomic rename, so a reader sees either the
old store or the new one, never a mix. Bad rows, an exception, Ctrl-C, SIGTERM, SIGHUP
or SIGKILL anywhere before the rename leave the store byte-for-byte as it was (a
missing store stays missing). The temporary file is removed on any Python-level
failure and on those signals: while a load runs in the main thread, SIGINT, SIGTERM
and SIGHUP (when nobody else handles them) raise
:class:`~bfsql.loading.errors.LoadInterrupted`, which cleans up like any exception; a
signal during the final sync and rename waits for the rename and then raises with
``committed=True``. Only SIGKILL (or a crash of the machine) can leave a stray
``.<name>.*.loading`` file behind. A server that has the old store open keeps reading
the old file until it reopens. Two concurrent loads into the same store do not corrupt
it, but the last to finish wins.

Helper processes: on a machine of several processors, a big bundle is read in parts by
helper processes at once (:mod:`bfsql.loading.parallel_reading`), and the relationships of a
big load into an empty table are written by a helper into a side store
(``.<name>.*.relationships.loading``) that is copied in (:mod:`bfsql.loading.relationship_writer`).
They change nothing of the above: rows keep the sources' order, bad rows their file and
line, and a failure or a signal stops the helpers and removes the side store with the copy.

Bad rows: every source is read to its end (or to a row after which nothing can be
read, such as an over-long line), and all bad rows are reported together
(:class:`~bfsql.loading.errors.BadRows`: the first ``max_errors`` and their count).

RDF ids are compacted (:mod:`bfsql.loading.prefixes`) by the prefixes the store
recorded in earlier loads (``meta.rdf_prefixes``), then the given ones, then those the
Turtle sources declare, then the built-in ones; the result is recorded, so that a later
load, even of N-Triples without prefixes, writes the same ids.

Entity vectors: with an embedder (by default the store's own, else the preferred
semantic embedder when one is installed, else none: a lexical-only store),
every visible entity's name (its id when it has none) is embedded into ``entity_vector``
(in a worker thread while the relationships are written: :mod:`bfsql.loading.embedding_ahead`),
and the embedder's name and dimension are recorded in ``meta`` (``embedder``,
``embedder_dimension``). Only new or renamed entities are embedded again; a load with another
embedder re-embeds everything, and ``embedder=None`` removes the vectors. The backend refuses
to compare the stored vectors with query vectors of another embedder. Every load with vectors
also saves their sign-bit codes and the entity and a copy of the vector of each code's row
(:mod:`bfsql.vectors`), which the server searches instead of holding the vectors.

Idempotence: entities and relationships are upserted by key (a later record with the
same key replaces the earlier one, as in the memory backend), evidence is inserted
once per distinct row, and the search index is rebuilt from the entity table at the
end; loading the same sources twice gives the same store.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import secrets
import shutil
import signal
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bfsql.csr import CsrIndex, Edges, build_index, entity_rows, index_of_entities, save_index
from bfsql.embedders import Embedder
from bfsql.loading.bundle import Record, Row
from bfsql.loading.embedding_ahead import EmbeddingAhead, int8_rows
from bfsql.loading.errors import BadRow, LoadError, LoadInterrupted, RowErrors
from bfsql.loading.formats import FORMATS, RDF_FORMATS, check_format, expand_sources
from bfsql.loading.helper_process import processors
from bfsql.loading.id_codes import CodedRelationships, IdCodes
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.parallel_reading import read_in_parts
from bfsql.loading.partial_files import partial_copy, remove_stale
from bfsql.loading.plain import PlainEntities, PlainEntity, PlainRelationship, PlainRelationships
from bfsql.loading.prefixes import PrefixMap, parse_prefix, turtle_prefixes
from bfsql.loading.progress import LoadProgress
from bfsql.loading.readers import ImpliedEntity, read_records, refuse_sqlite_source, require_rdflib
from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord
from bfsql.loading.relationship_buffer import RelationshipBuffer
from bfsql.loading.relationship_writer import MIN_ROWS, SideStore
from bfsql.loading.store_format import SCHEMA_VERSION
from bfsql.plugins import create_embedder, preferred_embedder
from bfsql.vectors import build_codes, drop_vectors, save_vectors

__all__ = [
    "AUTO_EMBEDDER",
    "SCHEMA_VERSION",
    "LoadReport",
    "StoreFormatError",
    "create_schema",
    "decode_vector",
    "decode_vectors",
    "encode_vector",
    "encode_vectors",
    "load_records",
    "load_sqlite",
    "reembed_store",
]

AUTO_EMBEDDER = "auto"
"""Embed with the store's recorded embedder, else the preferred semantic one if installed, else store no vectors."""

FROM_HELPER = "from the helper"
"""What the write phase says while it waits for and copies in the relationships a helper process wrote."""

EMBED_BATCH = 2048
"""Texts per embedder call while loading (large, so that a model can batch names of similar length)."""

PROGRESS_EVERY = 1000
"""Records between two progress updates (and batched writes)."""

MAX_ERRORS = 20
"""Bad rows reported by default (all of them are counted)."""

_SILENT = LoadProgress()

_BY_OBJECT = "relationship_by_object ON relationship (object_id, subject_id, predicate)"
"""The relationships' index by object (built after the rows when a load fills an empty table)."""

_BASE_DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entity (
    entity_id TEXT PRIMARY KEY,
    entity_type TEXT NOT NULL,
    name TEXT,
    synonyms TEXT NOT NULL DEFAULT '[]',
    properties TEXT NOT NULL DEFAULT '{}',
    status TEXT,
    confidence REAL,
    source TEXT,
    canonical_url TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS relationship (
    subject_id TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object_id TEXT NOT NULL,
    confidence REAL,
    source_documents TEXT NOT NULL DEFAULT '[]',
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (subject_id, predicate, object_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS """ + _BY_OBJECT + """;
CREATE TABLE IF NOT EXISTS evidence (
    subject_id TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object_id TEXT NOT NULL,
    text_span TEXT,
    confidence REAL,
    document_id TEXT,
    section TEXT
);
-- UNIQUE over all columns. A plain UNIQUE constraint treats NULLs as distinct, which
-- would let evidence without a document id be inserted again on every reload; an
-- empty blob never equals a TEXT or REAL value, so ifnull(x, x'') keeps NULL apart.
CREATE UNIQUE INDEX IF NOT EXISTS evidence_unique ON evidence (
    subject_id, predicate, object_id,
    ifnull(text_span, x''), ifnull(confidence, x''), ifnull(document_id, x''), ifnull(section, x'')
);
-- One row per searchable label (name: kind 0, synonym: kind 1) of every visible
-- entity; norm is the Python casefold of the label, for exact matching.
CREATE TABLE IF NOT EXISTS entity_label (
    label_id INTEGER PRIMARY KEY,
    entity_id TEXT NOT NULL,
    kind INTEGER NOT NULL,
    label TEXT NOT NULL,
    norm TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_label_by_norm ON entity_label (norm);
CREATE VIRTUAL TABLE IF NOT EXISTS entity_fts USING fts5 (
    label, content='entity_label', content_rowid='label_id', tokenize='unicode61 remove_diacritics 2'
);
-- One L2-normalised vector per visible entity, made from text by the embedder named in
-- meta.embedder (dimension meta.embedder_dimension), as int8 with a float32 scale
-- (encode_vectors; rows of 4 * dimension bytes from older stores are plain float32).
CREATE TABLE IF NOT EXISTS entity_vector (
    entity_id TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    vector BLOB NOT NULL
) WITHOUT ROWID;
"""

# Substring search index; the trigram tokenizer needs SQLite >= 3.34, so it is optional.
_TRIGRAM_DDL = """
CREATE VIRTUAL TABLE IF NOT EXISTS entity_trigram USING fts5 (
    label, content='entity_label', content_rowid='label_id', tokenize='trigram'
)
"""

def encode_vectors(vectors: Any) -> list[bytes]:
    """Vectors (rows of a matrix) normalised and stored as int8 with one scale each.

    A row is its scale ``max|x| / 127`` as little-endian float32, then one signed byte per
    component: ``dimension + 4`` bytes instead of float32's ``4 * dimension``. The cosine
    of two decoded vectors stays within 0.01 of the original.
    """
    return [row.tobytes() for row in int8_rows(vectors)]


def encode_vector(vector: Sequence[float]) -> bytes:
    """One vector as :func:`encode_vectors` stores it."""
    return encode_vectors([list(vector)])[0]


def decode_vectors(blobs: Sequence[bytes], dimension: int) -> Any:
    """A float32 matrix (one row per blob) of vectors stored by :func:`encode_vectors`.

    Rows of ``4 * dimension`` bytes are plain little-endian float32 (stores written before
    int8 vectors) and are read as such.
    """
    import numpy as np

    sizes = {len(blob) for blob in blobs}
    if sizes <= {dimension + 4}:  # every row int8 (the usual case): one vectorised pass
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), dimension + 4)
        scales = raw[:, :4].copy().view("<f4")
        return raw[:, 4:].view(np.int8).astype(np.float32) * scales
    if not sizes <= {dimension + 4, 4 * dimension}:
        odd = sorted(sizes - {dimension + 4, 4 * dimension})[0]
        raise StoreFormatError(f"a stored vector has {odd} bytes; expected {dimension + 4}")
    matrix = np.zeros((len(blobs), dimension), dtype=np.float32)
    for i, blob in enumerate(blobs):
        if len(blob) == 4 * dimension:
            matrix[i] = np.frombuffer(blob, dtype="<f4")
        else:
            matrix[i] = np.frombuffer(blob[4:], dtype=np.int8) * np.frombuffer(blob[:4], dtype="<f4")[0]
    return matrix


def decode_vector(blob: bytes, dimension: int) -> list[float]:
    """One vector stored by :func:`encode_vector`."""
    return [float(x) for x in decode_vectors([blob], dimension)[0]]


class StoreFormatError(LoadError):
    """The file is not a bfsql SQLite store this version can use."""


@dataclass(frozen=True)
class LoadReport:
    """What one load read: records per kind, source files, and the entity vectors written."""

    db: Path
    files: int
    entities: int
    relationships: int
    evidence: int
    embedder: str | None = field(default=None, compare=False)
    """The embedder of the store's entity vectors (None: the store has none)."""
    embedded: int = field(default=0, compare=False)
    """Entities (re-)embedded by this load."""

    @property
    def records(self) -> int:
        """All records read."""
        return self.entities + self.relationships + self.evidence

    def summary(self) -> str:
        """A one-line human-readable summary."""
        vectors = f"; {self.embedded} entities embedded with {self.embedder!r}" if self.embedder else ""
        return (
            f"loaded {self.entities} entities, {self.relationships} relationships and {self.evidence} evidence "
            f"records from {self.files} file(s) into {self.db}{vectors}"
        )


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the store's tables if missing; refuse a store of another schema version."""
    try:
        existing = _tables(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreFormatError(f"not a SQLite database ({exc})") from None
    if "meta" in existing:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and row[0] != SCHEMA_VERSION:
            raise StoreFormatError(
                f"store has schema version {row[0]}, this bfsql writes version {SCHEMA_VERSION}; "
                "load into a new file instead"
            )
    elif existing:
        raise StoreFormatError("the file is a SQLite database but not a bfsql store; load into a new file instead")
    conn.executescript(_BASE_DDL)
    with contextlib.suppress(sqlite3.OperationalError):
        conn.executescript(_TRIGRAM_DDL)
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))


def _json(value: Any) -> str:
    if not value:  # most records have no synonyms, properties or documents
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False)


_UPSERT_ENTITY = """
INSERT INTO entity (entity_id, entity_type, name, synonyms, properties, status, confidence, source, canonical_url)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (entity_id) DO UPDATE SET
    entity_type = excluded.entity_type, name = excluded.name, synonyms = excluded.synonyms,
    properties = excluded.properties, status = excluded.status, confidence = excluded.confidence,
    source = excluded.source, canonical_url = excluded.canonical_url
"""
_INSERT_IMPLIED = """
INSERT INTO entity (entity_id, entity_type, name, synonyms, properties, status, confidence, source, canonical_url)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (entity_id) DO NOTHING
"""
_INSERT_EVIDENCE = """
INSERT OR IGNORE INTO evidence (subject_id, predicate, object_id, text_span, confidence, document_id, section)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""


def _relationship_row(record: RelationshipRecord) -> tuple[str, str, str, float | None, str, str]:
    """A relationship's columns."""
    return (
        record.subject,
        record.predicate,
        record.object,
        record.confidence,
        _json(record.source_documents),
        _json(record.properties),
    )


def _statement(record: EntityRecord | EvidenceRecord | PlainEntity) -> tuple[str, tuple[Any, ...]]:
    """The SQL statement and parameters that store one entity or evidence record."""
    if isinstance(record, PlainEntity):
        return _UPSERT_ENTITY, (record.id, record.entity_type, record.name, "[]", "{}", None, None, None, None)
    if isinstance(record, EntityRecord):
        return _INSERT_IMPLIED if isinstance(record, ImpliedEntity) else _UPSERT_ENTITY, (
            record.id,
            record.entity_type,
            record.name,
            _json(record.synonyms),
            _json(record.properties),
            record.status,
            record.confidence,
            record.source,
            record.canonical_url,
        )
    return _INSERT_EVIDENCE, (
        record.subject,
        record.predicate,
        record.object,
        record.text_span,
        record.confidence,
        record.document_id,
        record.section,
    )


# Batches are written in this order. Upserts before implied inserts makes a full entity
# win over an implied one whichever came first, exactly as record-by-record writing would.
# Relationships are written after everything is read (bfsql.loading.relationship_buffer).
_STATEMENT_ORDER = (_UPSERT_ENTITY, _INSERT_IMPLIED, _INSERT_EVIDENCE)


def _flush(conn: sqlite3.Connection, batch: dict[str, list[tuple[Any, ...]]]) -> None:
    for sql in _STATEMENT_ORDER:
        if batch[sql]:
            conn.executemany(sql, batch[sql])
            batch[sql].clear()


_INSERT_LABELS = """
INSERT INTO entity_label (entity_id, kind, label, norm)
SELECT e.entity_id, l.key > 0, l.value,
       CASE WHEN length(CAST(l.value AS BLOB)) = length(l.value) THEN lower(l.value) ELSE bfsql_casefold(l.value) END
FROM entity e, json_each(CASE e.synonyms WHEN '[]' THEN json_array(e.name)
                         ELSE '[' || json_quote(e.name) || ',' || substr(e.synonyms, 2) END) l
WHERE e.status IS NOT 'merged' AND l.type = 'text' AND l.value != ''
ORDER BY e.entity_id, l.key
"""
"""Every visible entity's name (kind 0) and synonyms (kind 1), by entity and in order, the empty ones left out.

One statement, without a Python call per row: an ASCII label (as many bytes as characters) is
folded by SQLite's ``lower``, which is then what Python's ``casefold`` gives; any other by
``bfsql_casefold``, the Python one.
"""


def _rebuild_labels(conn: sqlite3.Connection, progress: LoadProgress) -> None:
    """Start the index phase: the search labels of every visible entity."""
    (visible,) = conn.execute("SELECT count(*) FROM entity WHERE status IS NOT 'merged'").fetchone()
    progress.start("index", visible, "entities")
    progress.step("labels")
    conn.execute("DELETE FROM entity_label")
    conn.create_function("bfsql_casefold", 1, str.casefold, deterministic=True)
    conn.execute(_INSERT_LABELS)
    progress.advance(visible)


def _rebuild_text_indexes(conn: sqlite3.Connection, progress: LoadProgress) -> None:
    """The full-text and substring indexes of the labels."""
    progress.step("full-text index")
    conn.execute("INSERT INTO entity_fts (entity_fts) VALUES ('rebuild')")
    if "entity_trigram" in _tables(conn):
        progress.step("substring index")
        conn.execute("INSERT INTO entity_trigram (entity_trigram) VALUES ('rebuild')")
    progress.step("")


def _resolve_embedder(conn: sqlite3.Connection, choice: Embedder | str | None) -> Embedder | None:
    """The embedder to store vectors with: ``auto`` is the store's own, else the preferred
    (semantic) embedder when one is installed, else none (a lexical-only store)."""
    if choice is None or choice == "none":
        return None
    if not isinstance(choice, str):
        return choice
    if choice == AUTO_EMBEDDER:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if row is None:
            preferred = preferred_embedder()
            return create_embedder(preferred) if preferred is not None else None
        try:
            return create_embedder(row[0])
        except Exception as exc:
            raise StoreFormatError(
                f"the store's entity vectors were made by embedder {row[0]!r}, which is not installed ({exc}); "
                "install it, or re-embed with another: --embedder NAME (or --embedder none to drop the vectors)"
            ) from None
    return create_embedder(choice)


def _embed_ahead(conn: sqlite3.Connection, embedder: Embedder | None, folder: Path | None) -> EmbeddingAhead | None:
    """Start embedding the new and renamed entities (all of them when the embedder changed) in a worker thread,
    the rest of the load going on (:mod:`bfsql.loading.embedding_ahead`); None when the store keeps no vectors
    (they are dropped here)."""
    if embedder is None:
        conn.execute("DELETE FROM entity_vector")
        conn.execute("DELETE FROM meta WHERE key IN ('embedder', 'embedder_dimension')")
        drop_vectors(conn)
        return None
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')"))
    if (meta.get("embedder"), meta.get("embedder_dimension")) != (embedder.name, str(embedder.dimension)):
        conn.execute("DELETE FROM entity_vector")
    conn.execute(
        "DELETE FROM entity_vector WHERE entity_id NOT IN (SELECT entity_id FROM entity WHERE status IS NOT 'merged')"
    )
    texts = [text for _, text in conn.execute(_TO_EMBED)]
    return EmbeddingAhead(texts, embedder, EMBED_BATCH, folder)


_TO_EMBED = """
    SELECT e.entity_id, coalesce(nullif(trim(e.name), ''), e.entity_id) AS text
    FROM entity e LEFT JOIN entity_vector v ON v.entity_id = e.entity_id
    WHERE e.status IS NOT 'merged'
      AND (v.entity_id IS NULL OR v.text IS NOT coalesce(nullif(trim(e.name), ''), e.entity_id))
    ORDER BY e.entity_id
"""
"""The entities to (re-)embed, with the text embedded: read again to store the vectors (the entities cannot change
in between: one transaction, one connection), so that their ids are not held while the relationships are written."""


def _store_vectors(conn: sqlite3.Connection, ahead: EmbeddingAhead | None, progress: LoadProgress = _SILENT) -> int:
    """Wait for the vectors embedded ahead and store them, with their embedder's name and their codes; how many
    (0 without ``ahead``: the store keeps no vectors)."""
    if ahead is None:
        return 0
    embedder = ahead.embedder
    progress.start("embed", ahead.count, "entities")
    ahead.wait(progress)
    progress.step("storing")
    entities = conn.execute(_TO_EMBED).fetchall()  # all read before any is written: the statement reads the table
    start = 0
    for rows in ahead.rows():
        conn.executemany(
            "INSERT OR REPLACE INTO entity_vector (entity_id, text, vector) VALUES (?, ?, ?)",
            [(*entity, row) for entity, row in zip(entities[start : start + len(rows)], rows, strict=True)],
        )
        start += len(rows)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedder", embedder.name), ("embedder_dimension", str(embedder.dimension))],
    )
    progress.step("vector codes")
    save_vectors(conn, build_codes(conn, embedder.dimension))
    return ahead.count


@dataclass(frozen=True)
class _Reading:
    """What one load reads, and within which limits."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    """Source files and their formats."""
    records: Iterable[Record] | None = None
    """Records made in Python, instead of files."""
    limits: LoadLimits = DEFAULT_LIMITS
    max_errors: int = MAX_ERRORS
    prefixes: tuple[tuple[str, str], ...] = ()
    """Given RDF prefixes, (name, namespace)."""
    file_prefixes: bool = True
    """Whether Turtle sources' own @prefix declarations compact ids."""
    term_type: str | None = None
    """The type of every term of an ontology source (OBO, OWL); None: each term's namespace."""


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _prefix_map(conn: sqlite3.Connection, reading: _Reading) -> PrefixMap:
    """The RDF prefixes of this load (see the module docstring), recorded in ``meta.rdf_prefixes``."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'rdf_prefixes'").fetchone()
    stored = [(name, namespace) for name, namespace in json.loads(row[0])] if row else []
    for name, namespace in reading.prefixes:
        for known, known_namespace in stored:
            if (name == known) != (namespace == known_namespace):
                raise LoadError(
                    f"the store already writes ids under {known_namespace} as '{known}:…' (recorded by an earlier "
                    f"load), so the prefix {name or '(default)'}={namespace} would change ids; drop it or use "
                    f"--prefix {known}={known_namespace}"
                )
    declared = [
        pair
        for path, fmt in reading.files
        if fmt == "ttl" and reading.file_prefixes
        for pair in turtle_prefixes(path, reading.limits)
    ]
    prefixes = PrefixMap.build(stored, reading.prefixes, declared)
    _set_meta(conn, "rdf_prefixes", json.dumps(prefixes.prefixes))
    return prefixes


def _streams(
    conn: sqlite3.Connection, reading: _Reading, errors: RowErrors, progress: LoadProgress, codes: IdCodes
) -> Iterator[Iterator[tuple[int, Row | CodedRelationships]]]:
    """One stream of records per source, in order; the read phase counts their bytes (or records).

    A bundle is read in parts by several processes at once (:mod:`bfsql.loading.parallel_reading`),
    its bare relationships coded in ``codes``.
    """
    if reading.records is not None:
        progress.start("read", None, "records")
        yield ((0, record) for record in reading.records)
        return
    if not reading.files:
        return
    sizes = [path.stat() for path, _ in reading.files]
    regular = all(stat.S_ISREG(size.st_mode) for size in sizes)
    prefixes = _prefix_map(conn, reading) if any(fmt in RDF_FORMATS for _, fmt in reading.files) else None
    progress.start("read", sum(size.st_size for size in sizes) if regular else None, "bytes")
    for (path, fmt), size in zip(reading.files, sizes, strict=True):
        if fmt == "jsonl" and stat.S_ISREG(size.st_mode):
            refuse_sqlite_source(path)
            yield read_in_parts(path, codes, limits=reading.limits, errors=errors, on_bytes=progress.advance)
        else:
            yield read_records(
                path, fmt, limits=reading.limits, errors=errors, prefixes=prefixes, on_bytes=progress.advance,
                plain=True, term_type=reading.term_type,
            )


def _records(counts: dict[str, Any]) -> str:
    total = sum(counts.values())
    return f"{total:,} record{'' if total == 1 else 's'}"


def _fill(
    conn: sqlite3.Connection,
    reading: _Reading,
    description: str | None,
    progress: LoadProgress,
    embedder: Embedder | str | None = AUTO_EMBEDDER,
    side: Path | None = None,
) -> dict[str, Any]:
    """Apply ``reading`` to the store ``conn`` writes; ``side``: where a side store may go
    (:mod:`bfsql.loading.relationship_writer`)."""
    chosen = _resolve_embedder(conn, embedder)
    conn.execute("BEGIN")
    fresh = conn.execute("SELECT 1 FROM relationship LIMIT 1").fetchone() is None
    relationships = RelationshipBuffer(conn)
    ahead: EmbeddingAhead | None = None
    try:
        try:
            counts = _read(conn, reading, progress, relationships)
            ahead = _embed_ahead(conn, chosen, side.parent if side is not None else None)
            graph = _write_graph(conn, relationships, fresh, progress, side)
        finally:
            relationships.close()
        counts["embedded"] = _store_vectors(conn, ahead, progress)
    finally:
        if ahead is not None:
            ahead.close()
    counts["embedder"] = chosen.name if chosen is not None else None
    if description is not None:
        _set_meta(conn, "description", description)
    progress.start("graph")
    # Read by the server at start, instead of rebuilt there.
    save_index(conn, graph.result() if graph is not None else build_index(conn))
    progress.start("commit")
    conn.execute("COMMIT")
    return counts


def _write_graph(conn: sqlite3.Connection, relationships: RelationshipBuffer, fresh: bool, progress: LoadProgress,
                 side: Path | None) -> Future[CsrIndex] | None:
    """Write the relationships read and build the store's indexes; the array index being made of them, when they
    are the whole table (a fresh store)."""
    side_store = _side_store(conn, side) if fresh and len(relationships) >= max(MIN_ROWS, 1) else None
    edges = _write_relationships(conn, relationships, fresh, progress, side_store) if len(relationships) else None
    _rebuild_labels(conn, progress)
    graph: Future[CsrIndex] | None = None
    if side_store is None and fresh and edges is not None:
        _index_by_object(conn, progress)
    if fresh and edges is not None:
        # The relationships just written are the whole table, so the array index is made of them
        # (not read again), in another thread while SQLite builds the text indexes: statements that
        # release the GIL for their whole run. Not beside the index by object, whose sort holds up
        # to the page cache's size in memory.
        pool = ThreadPoolExecutor(1, thread_name_prefix="bfsql-load-graph")
        graph = pool.submit(index_of_entities, entity_rows(conn), edges)
        pool.shutdown(wait=False)  # the load goes on; graph.result() waits for the index
    _rebuild_text_indexes(conn, progress)
    if side_store is not None:  # written meanwhile by the side process: counted as it is copied in
        progress.start("write", len(relationships), "relationships")
        progress.step(FROM_HELPER)
    relationships.finish(progress)
    if side_store is not None:
        _index_by_object(conn, progress)
    progress.step("")
    return graph


def _read(
    conn: sqlite3.Connection, reading: _Reading, progress: LoadProgress, relationships: RelationshipBuffer
) -> dict[str, Any]:
    """Read every source: entities and evidence written, relationships given to ``relationships``; the counts."""
    counts: dict[str, Any] = {"entity": 0, "relationship": 0, "evidence": 0}
    batch: dict[str, list[tuple[Any, ...]]] = {sql: [] for sql in _STATEMENT_ORDER}
    errors = RowErrors(reading.max_errors)
    pending = 0
    triples: list[tuple[str, str, str]] = []  # the most frequent rows, given to the buffer a batch at a time
    for stream in _streams(conn, reading, errors, progress, relationships.codes):
        try:
            try:
                for _, record in stream:
                    pending += 1
                    if isinstance(record, PlainRelationship):
                        triples.append(record)
                    elif isinstance(record, PlainRelationships):
                        triples.extend(record)
                        pending += len(record) - 1
                    elif isinstance(record, CodedRelationships):
                        _take(relationships, triples, counts, errors)  # those read before them come before them
                        counts["relationship"] += len(record)
                        pending += len(record) - 1
                        if not errors.count:
                            relationships.extend_codes(record)
                    elif isinstance(record, PlainEntities):
                        counts["entity"] += len(record)
                        pending += len(record) - 1
                        if not errors.count:
                            batch[_UPSERT_ENTITY].extend(
                                [(i, kind, name, "[]", "{}", None, None, None, None) for i, kind, name in record]
                            )
                    else:
                        counts[record.kind] += 1
                        if errors.count:
                            pass  # the load fails: only look for more bad rows
                        elif isinstance(record, RelationshipRecord):
                            if triples:  # those read before it come before it
                                _take(relationships, triples, counts, errors)
                            relationships.add_row(_relationship_row(record))
                        else:
                            sql, params = _statement(record)
                            batch[sql].append(params)
                    if pending >= PROGRESS_EVERY:
                        _take(relationships, triples, counts, errors)
                        _flush(conn, batch)
                        if reading.records is not None:
                            progress.advance(pending)
                        pending = 0
                        progress.step(_records(counts))
            finally:  # an error or a signal here stops the stream's helper processes
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except BadRow as exc:  # a row after which the source cannot be read on
            errors.add(exc)
    _take(relationships, triples, counts, errors)
    errors.raise_if_any()
    _flush(conn, batch)
    if reading.records is not None:
        progress.advance(pending)
    progress.step(_records(counts))
    return counts


def _take(
    relationships: RelationshipBuffer, triples: list[tuple[str, str, str]], counts: dict[str, Any], errors: RowErrors
) -> None:
    """Count the plain relationships read since the last call and buffer them (unless the load already failed)."""
    counts["relationship"] += len(triples)
    if not errors.count:
        relationships.extend(triples)
    triples.clear()


def _side_store(conn: sqlite3.Connection, path: Path | None) -> SideStore | None:
    """Where and how a side process writes the relationships, when there is room for one."""
    if path is None or processors() < 2:
        return None
    (table,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'relationship'").fetchone()
    return SideStore(path, table)


def _index_by_object(conn: sqlite3.Connection, progress: LoadProgress) -> None:
    """Build the index by object of a table filled by this load, sorting in as many threads as there are
    processors (nothing else of the load runs meanwhile)."""
    progress.step("index by object")
    conn.execute(f"PRAGMA threads = {processors() - 1}")
    conn.execute(f"CREATE INDEX {_BY_OBJECT}")
    conn.execute("PRAGMA threads = 0")


def _write_relationships(
    conn: sqlite3.Connection,
    relationships: RelationshipBuffer,
    fresh: bool,
    progress: LoadProgress,
    side: SideStore | None,
) -> Edges:
    """Write the relationships read, in key order (or hand them to a side process, whose write phase :func:`_fill`
    shows when it waits for it); an empty table gets its index by object afterwards (in :func:`_fill`), so it is
    dropped here."""
    if side is None:
        progress.start("write", len(relationships), "relationships")
    if fresh:
        conn.execute("DROP INDEX IF EXISTS relationship_by_object")
    return relationships.write(progress, side)


def _fsync(path: Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # directories cannot be opened on Windows; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class _Interruptible:
    """While a load runs in the main thread, Ctrl-C, SIGTERM and SIGHUP raise :class:`LoadInterrupted`.

    Only signals whose handling nobody has changed are taken over (an application with its
    own handlers keeps them), and the previous handlers come back afterwards. Inside
    :meth:`critical` a signal waits until the block ends.
    """

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._deferring = False
        self._pending: int | None = None

    def __enter__(self) -> _Interruptible:
        if threading.current_thread() is threading.main_thread():
            for signum in _STOP_SIGNALS:
                current = signal.getsignal(signum)
                if current in (signal.SIG_DFL, signal.default_int_handler):
                    self._previous[signum] = current
                    signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    def _handle(self, signum: int, frame: object) -> None:
        if self._deferring:
            self._pending = signum
            return
        raise LoadInterrupted(signum)

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        """Run the block whole; a signal received meanwhile raises (``committed=True``) after it."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self._pending is not None:
            raise LoadInterrupted(self._pending, committed=True)


@contextlib.contextmanager
def _cycles_collected_after() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (process-wide), as it was afterwards.

    A load makes millions of short-lived tuples and no reference cycles; the collector's
    passes over them cost 5-10% of reading a big bundle.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _copy(source: Path, target: Path, progress: LoadProgress) -> None:
    progress.start("copy", source.stat().st_size, "bytes")
    with open(source, "rb") as reader, open(target, "wb") as writer:
        while chunk := reader.read(1 << 20):
            writer.write(chunk)
            progress.advance(len(chunk))
    shutil.copymode(source, target)


def _source_hint(db: Path) -> str:
    """When --db names what looks like a file to load, say how the command goes."""
    if db.suffix.lower() not in FORMATS:
        return ""
    return (
        f". --db names the store to write; the files to load come after it: "
        f"bfsql load --db {db.with_suffix('.sqlite')} {db}"
    )


_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_store_file(db: Path) -> None:
    """Refuse, before copying it, an existing ``db`` that is no SQLite file (an empty file is a new store)."""
    if not db.exists():
        return
    if not db.is_file():
        raise StoreFormatError(f"{db}: not a file; --db names the SQLite store to write")
    with open(db, "rb") as handle:
        header = handle.read(len(_SQLITE_HEADER))
    if header and header != _SQLITE_HEADER:
        raise StoreFormatError(f"{db}: not a SQLite database{_source_hint(db)}")


def _build(
    db: Path,
    reading: _Reading,
    description: str | None,
    progress: LoadProgress,
    embedder: Embedder | str | None = AUTO_EMBEDDER,
    copy_from: Path | None = None,
) -> dict[str, Any]:
    """Apply ``reading`` to a copy of ``db`` (or of ``copy_from`` when ``db`` is missing) and
    atomically replace ``db`` with it."""
    db = Path(db)
    if not db.parent.is_dir():
        raise LoadError(f"cannot write the store {db}: the directory {db.parent} does not exist (create it first)")
    _check_store_file(db)
    remove_stale(db)
    token = secrets.token_hex(8)
    tmp = db.parent / f".{db.name}.{token}.loading"
    with _Interruptible() as signals:
        try:
            with partial_copy(tmp):  # locked while this load writes it: a later load leaves it alone
                source = db if db.exists() else copy_from
                if source is not None:
                    _copy(source, tmp, progress)
                # The copy is private until the rename, so SQLite's own journal is not needed.
                conn = sqlite3.connect(tmp, isolation_level=None)
                try:
                    try:
                        conn.execute("PRAGMA journal_mode = OFF")
                        conn.execute("PRAGMA synchronous = OFF")
                        # 256 MiB: random-key upserts thrash the 2 MiB default
                        conn.execute("PRAGMA cache_size = -262144")
                        create_schema(conn)
                    except sqlite3.DatabaseError as exc:
                        raise StoreFormatError(f"{db}: not a SQLite database ({exc}){_source_hint(db)}") from None
                    except StoreFormatError as exc:
                        raise StoreFormatError(f"{db}: {exc}{_source_hint(db)}") from None
                    with _cycles_collected_after():
                        side = db.parent / f".{db.name}.{token}.relationships.loading"
                        counts = _fill(conn, reading, description, progress, embedder, side)
                finally:
                    conn.close()
                with signals.critical():
                    _fsync(tmp)
                    os.replace(tmp, db)
                    _fsync(db.parent, directory=True)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            progress.finish()
    return counts


def _check_sources(
    sources: Iterable[Path | str], fmt: str | None, prefixes: Iterable[str]
) -> tuple[list[tuple[Path, str]], tuple[tuple[str, str], ...]]:
    """The sources with their formats, and the parsed prefixes; :class:`LoadError` before anything is touched."""
    if fmt is not None:
        check_format(fmt)
    files = expand_sources([Path(p) for p in sources], fmt)
    for _, file_format in files:
        if file_format in RDF_FORMATS:
            require_rdflib(file_format)
    return files, tuple(parse_prefix(spec) for spec in prefixes)


def load_sqlite(
    db: Path,
    sources: list[Path],
    fmt: str | None = None,
    description: str | None = None,
    progress: LoadProgress | None = None,
    embedder: Embedder | str | None = AUTO_EMBEDDER,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    max_errors: int = MAX_ERRORS,
    prefixes: Iterable[str] = (),
    file_prefixes: bool = True,
    term_type: str | None = None,
) -> LoadReport:
    """Load graph files (bundles, tables, RDF, ontologies, property graphs) into the SQLite store ``db``
    (created if missing).

    ``fmt`` forces one format for every source (see
    :func:`bfsql.loading.formats.detect_format`; a directory is a source of ``kgx``); by default each
    file's extension decides. ``term_type`` is the type of every term of an OBO or OWL source (by
    default its namespace). ``description`` is stored as the graph description (kept from an
    earlier load when None). ``progress`` hears of each phase (see
    :mod:`bfsql.loading.progress`). Bad rows raise
    :class:`~bfsql.loading.errors.BadRows` naming the file and line of the first
    ``max_errors`` (and counting all), and the store is left untouched: see the module
    docstring for the atomicity guarantee. ``limits`` bounds lines, ids, names, texts,
    lists and nesting (:mod:`bfsql.loading.limits`). ``prefixes`` (``NAME=IRI``) and,
    with ``file_prefixes``, the Turtle files' own declarations compact RDF ids.
    ``embedder`` (an Embedder, a registered name, ``"auto"`` or None) makes the entity
    vectors; see the module docstring. Mistakes in the call itself (an unknown format,
    a missing directory or rdflib, a file that is not a store) raise
    :class:`~bfsql.loading.errors.LoadError` before anything is written.
    """
    if term_type is not None and not term_type.strip():
        raise LoadError("the term type must not be empty")
    files, given = _check_sources(sources, fmt, prefixes)
    reading = _Reading(files, None, limits, max_errors, given, file_prefixes, term_type)
    counts = _build(Path(db), reading, description, progress or _SILENT, embedder)
    return LoadReport(
        Path(db), len(files), counts["entity"], counts["relationship"], counts["evidence"],
        counts["embedder"], counts["embedded"],
    )


def load_records(
    db: Path,
    records: Iterable[Record],
    description: str | None = None,
    progress: LoadProgress | None = None,
    embedder: Embedder | str | None = AUTO_EMBEDDER,
) -> LoadReport:
    """Load records produced in Python (e.g. the demo graph) with the guarantees of :func:`load_sqlite`."""
    counts = _build(Path(db), _Reading(records=records), description, progress or _SILENT, embedder)
    return LoadReport(
        Path(db), 0, counts["entity"], counts["relationship"], counts["evidence"],
        counts["embedder"], counts["embedded"],
    )


def reembed_store(
    db: Path, embedder: Embedder | str | None, copy_from: Path | None = None, progress: LoadProgress | None = None
) -> LoadReport:
    """(Re-)embed the entities of the store ``db`` with ``embedder``, atomically, loading nothing.

    With ``copy_from`` and no ``db`` yet, ``db`` starts as a copy of ``copy_from`` (used to
    give the demo store vectors of another embedder).
    """
    counts = _build(Path(db), _Reading(), None, progress or _SILENT, embedder, copy_from)
    return LoadReport(Path(db), 0, 0, 0, 0, counts["embedder"], counts["embedded"])
