"""The embedded SQLite backend: a kgraph-style store built by ``bfsql load``.

The store is opened read-only (``mode=ro`` plus ``PRAGMA query_only``), so the
server cannot write to it by construction. All SQLite work runs on one dedicated
worker thread per backend, never on the event loop.

Traversals run on the store's **array index** (:mod:`bfsql.csr`: CSR adjacency,
about 18 bytes an edge), saved in the store by ``bfsql load`` and read when the store opens
(a store from an older bfsql has it built by a background thread, with set-based SQL hops
meanwhile); stores of more than ``memory_index`` relationships use SQL only. A store opened
for one call (``bfsql query``, see :func:`bfsql.backend.opening_for_one_call`) walks over SQL
when it is small (:data:`ONE_CALL_SQL_WALK`: no numpy is imported), else reads its saved
index at the first call that walks (``hop``, ``traverse``, ``intersect``, ``closure``);
until then the entity types and predicates come from the statistics saved with it, and
the rest from SQL, as for a store whose index is still being built. A whole
``bfs_query`` walk runs on the arrays (the ``traverse`` primitive): counts where the data
lies, only the answer's page made into Python objects. Graphs of one process serving the
same file share its index. A served store's vector codes (:mod:`bfsql.vectors`) are read in the background
when it opens; a store opened for one call reads them at its first search. Everything else is set-based SQL
(``IN (...)`` in chunks).

Answers equal the memory backend's for the same bundle: merged entities are invisible
(and so are edges touching them), dangling edges are kept, and metadata is derived with
:func:`~bfsql.loading.records.node_metadata` / :func:`~bfsql.loading.records.edge_metadata`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field

from bfsql.backend import Capabilities, GraphBackend, opened_for_one_call
from bfsql.backend_config import BackendConfig
from bfsql.budgets import TraversalLimits
from bfsql.embedders import Embedder, EmbedderMismatch
from bfsql.errors import BackendFailure, BfsqlError, clip
from bfsql.hookspecs import hookimpl
from bfsql.index_format import STORED_HUBS, index_stamp, stored_statistics
from bfsql.loading.records import (
    EntityRecord,
    EvidenceRecord,
    RelationshipRecord,
    edge_metadata,
    node_metadata,
    provenance,
)
from bfsql.loading.store_format import REQUIRED_TABLES, SCHEMA_VERSION
from bfsql.models import EntityStub
from bfsql.pacing import in_light_call
from bfsql.primitives import HUBS, SEARCH_LIMIT
from bfsql.rows import Closure, Edge, GraphStatistics, HopEdge, Neighbourhood, NodeInfo, Overlap, Survey
from bfsql.search_rank import lexical_rank

if TYPE_CHECKING:
    from bfsql.csr import CsrIndex
    from bfsql.vectors import VectorIndex

# bfsql.csr and bfsql.vectors (numpy, some 90 ms to import) are imported where the index or the vectors are
# read: a one-call `bfsql query` that neither walks nor searches by vector never needs them.

__all__ = ["DEFAULT_MEMORY_INDEX", "SqliteBackend", "SqliteConfig", "SqliteStoreError"]

T = TypeVar("T")

MAX_PARAMS = 500
"""Bound parameters per statement; batches are split into chunks of at most this many."""
FTS_CANDIDATES = 5000
"""Best-ranked labels examined by the full-text tier of search_entities."""
SUBSTRING_CANDIDATES = 2000
"""Labels examined by the substring tier of search_entities."""

INLINE_WALK_EDGES = 1_000_000
"""Stores of at most this many edges walk on the event loop itself: a whole walk there takes at most tens of
milliseconds, less than handing it to a worker thread costs a small one (0.6 -> 0.3 ms for a 2-hop walk of 100
nodes on the HPO); bigger stores walk in a worker thread (numpy leaves the loop free meanwhile)."""

READERS = 3
"""Reader threads, each with its own read-only connection: SQLite answers them in parallel (the GIL is
released while a statement runs), so a cheap query never queues behind a traversal's long one."""

DEFAULT_MEMORY_INDEX = 100_000_000
"""Stores with at most this many relationships keep their array index in memory (about 18 bytes a relationship)."""

ONE_CALL_SQL_WALK = 20_000
"""Stores of at most this many relationships opened for one call (``bfsql query``) walk hop by hop over SQL and never
read their array index: SQL reads an edge end in about 7 us, so a walk over the whole of such a store costs about
what importing numpy and reading the index would (some 140 ms), and a walk of a few hops far less. The answers are
those of the index (the conformance suite runs on both)."""

_VISIBLE = "status IS NOT 'merged'"
_VISIBLE_PREDICATES = (
    "SELECT DISTINCT predicate FROM relationship r WHERE NOT EXISTS "
    "(SELECT 1 FROM entity e WHERE e.entity_id IN (r.subject_id, r.object_id) AND e.status = 'merged') "
    "ORDER BY predicate"
)
_ENTITY_COLUMNS = "entity_id, entity_type, name, synonyms, properties, status, confidence, source, canonical_url"


class SqliteConfig(BackendConfig):
    """Configuration of the sqlite backend."""

    db: Path | None = Field(default=None, description="SQLite file; default: the bundled FamPlex demo graph")
    description: str | None = Field(
        default=None, description="graph_description text; default: the description stored by the loader"
    )
    memory_index: int = Field(
        default=DEFAULT_MEMORY_INDEX,
        ge=0,
        description="keep the array index in memory for stores with at most this many relationships (0: never, "
        "SQL only)",
    )


class SqliteStoreError(BfsqlError):
    """The SQLite file is missing or is not a usable bfsql store."""

    code = "store_error"


class DamagedStore(BackendFailure):
    """SQLite found the store's file damaged while reading it: trying again will not help."""

    code = "store_damaged"


_DAMAGED_PAGES = ("malformed", "disk image", "corrupt")
"""Words of SQLite's errors for a store whose pages are damaged (SQLITE_CORRUPT)."""
_NOT_A_DATABASE = ("not a database",)
"""Words of SQLite's error for a file it cannot read as a database (SQLITE_NOTADB): at open, some other file; once
open, a store damaged since."""
_DAMAGED_HINT = ("Trying again will not help: load it again from its sources (bfsql load --db FILE ...), or restore "
                 "a copy.")


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(count: int) -> str:
    return ",".join("?" * count)


def _entity(row: Sequence[Any]) -> EntityRecord:
    return EntityRecord.model_construct(
        id=row[0],
        entity_type=row[1],
        name=row[2],
        synonyms=json.loads(row[3]),
        properties=json.loads(row[4]),
        status=row[5],
        confidence=row[6],
        source=row[7],
        canonical_url=row[8],
    )


def fts_query(text: str) -> str:
    """An FTS5 query matching every whitespace-separated token of ``text``, the last as a prefix.

    Each token is an FTS5 string (double quotes doubled), so user text is never read
    as FTS5 syntax (``AND``, ``NEAR(``, ``col:x``, ``*``, quotes).
    """
    tokens = ['"' + token.replace('"', '""') + '"' for token in text.split()]
    return " ".join(tokens) + "*"


def _check_store_path(path: Path) -> None:
    """:class:`SqliteStoreError` unless ``path`` names a regular file that can be read, saying what it is instead."""
    shown = clip(str(path), 200)
    if "\0" in str(path):
        raise SqliteStoreError(f"SQLite store {shown!r} has a NUL character in its path; no file is named so.",
                               "Check the path given as db.")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SqliteStoreError(f"SQLite store {shown} does not exist.",
                               f"Build it with: bfsql load --db {shown} bundle.jsonl") from None
    except OSError as exc:
        raise SqliteStoreError(f"SQLite store {shown} cannot be reached: {exc.strerror or exc}.",
                               "Check the path given as db.") from None
    if stat.S_ISDIR(mode):
        raise SqliteStoreError(f"{shown} is a directory, not a SQLite store.",
                               "Give the store file itself (bfsql load --db FILE writes one).")
    if not stat.S_ISREG(mode):
        raise SqliteStoreError(f"{shown} is not a regular file (a device, a pipe or a socket), not a SQLite store.",
                               "Give a store file written by bfsql load --db FILE.")


class _Gate:
    """Many reads or one close: closing waits for the reads in flight, and reads after it wait, then fail cleanly.

    Connections are closed only on the close's side of the gate, so no thread ever runs a
    statement on a connection another thread is closing (SQLite does not survive that: a segmentation fault).
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._reading = 0
        self._closing = False

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Hold the store open for one call."""
        with self._changed:
            while self._closing:
                self._changed.wait()
            self._reading += 1
        try:
            yield
        finally:
            with self._changed:
                self._reading -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Have the store to oneself: new reads wait, the reads in flight end first."""
        with self._changed:
            while self._closing:
                self._changed.wait()
            self._closing = True
            while self._reading:
                self._changed.wait()
        try:
            yield
        finally:
            with self._changed:
                self._closing = False
                self._changed.notify_all()


class SqliteBackend(GraphBackend):
    """A read-only view of a SQLite store written by :func:`bfsql.loading.sqlite_loader.load_sqlite`."""

    slow_store_advice = ("The embedded store is busy (the machine's processors are loaded, or the call walks far); "
                         "try again, or narrow the query.")
    capabilities = Capabilities(batch_primitives=True, provenance=True, statistics=True)

    def __init__(
        self,
        db: str | Path,
        description: str | None = None,
        *,
        memory_index: int = DEFAULT_MEMORY_INDEX,
        one_call_sql_walk: int = ONE_CALL_SQL_WALK,
    ) -> None:
        """Open ``db`` read-only; :class:`SqliteStoreError` if it is missing or not a bfsql store.

        Opening is quick (a connection and a schema check) and waits for the worker thread;
        the hop index (for stores of at most ``memory_index`` relationships) is built in the
        background. Opened for one call (:func:`bfsql.backend.opening_for_one_call`), a store of at most
        ``one_call_sql_walk`` relationships walks over SQL instead, and a bigger one reads its saved index at
        its first walk.
        """
        self.path = Path(db)
        self._description = description
        self._memory_index = memory_index
        self._csr: CsrIndex | None = None
        """The array index, once read (or built in the background)."""
        self._index_put_off = False
        """Whether the saved index is read at the first walk, not at open (a store opened for one call)."""
        self._saved_statistics_current = False
        """Whether the statistics saved with the index are the store's as it is (checked for one call only): until
        an index is read they answer the entity types and predicates, which SQL would scan every row for."""
        self._index_lock = threading.Lock()
        self._has_merged = True
        self._closing = threading.Event()
        self._indexed = threading.Event()
        self.vector_embedder: tuple[str, int] | None = None
        """(name, dimension) of the embedder of the stored entity vectors; None without vectors."""
        self._vectors: VectorIndex | None = None
        self._vectors_lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._has_trigram = False
        self._stored_description: str | None = None
        self._statistics: GraphStatistics | None = None
        """The counts ``bfsql load`` saved with the array index, when they match the store."""
        self._schema_cache: dict[str, list[str]] = {}
        _check_store_path(self.path)
        self._local = threading.local()
        self._gate = _Gate()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="bfsql-sqlite")
        self._light_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bfsql-sqlite-light")
        try:
            relationships = self._executor.submit(self._connect).result()
        except BaseException:
            self._executor.shutdown(wait=False)
            self._light_executor.shutdown(wait=False)
            raise
        self._relationships = relationships
        """The store's relationships, counted once at open (reading the saved index checks them)."""
        self._plan_index(relationships, memory_index, one_call_sql_walk)
        if self.vector_embedder is not None and not opened_for_one_call():
            threading.Thread(target=self._read_vectors, name="bfsql-sqlite-vectors", daemon=True).start()

    def _plan_index(self, relationships: int, memory_index: int, one_call_sql_walk: int) -> None:
        """Read the array index now, in the background, at the first walk (one call) or never (SQL walks)."""
        one_call = opened_for_one_call()
        if one_call and self._saved_index and self._statistics is not None:
            self._saved_statistics_current = self._executor.submit(self._saved_index_current, relationships).result()
        if one_call and relationships <= one_call_sql_walk:
            self.capabilities = dataclasses.replace(self.capabilities, in_memory=False)  # hops by SQL: cache them
        elif 0 < relationships <= memory_index:
            if not self._saved_index:
                threading.Thread(target=self._use_index, name="bfsql-sqlite-index", daemon=True).start()
            elif self._saved_statistics_current:
                self._index_put_off = True  # read by the first walk (_walk_index)
                self.capabilities = dataclasses.replace(self.capabilities, traversal=True)
            else:
                self._use_index()

    # -- worker-thread side ---------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        # Each reader thread has its own connection; they are closed together (from any thread) by _close.
        conn = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        return conn

    def _connect(self) -> int:
        """Open and check the store; its number of relationships."""
        try:
            conn = self._open()
        except sqlite3.Error as exc:
            raise SqliteStoreError(
                f"{clip(str(self.path), 200)} cannot be opened as a SQLite store ({exc}).",
                "Give a store file written by bfsql load --db FILE.",
            ) from None
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = REQUIRED_TABLES - tables
            if missing:
                raise SqliteStoreError(
                    f"{self.path} is not a bfsql store (missing tables: {', '.join(sorted(missing))}).",
                    f"Build a store with: bfsql load --db NEW_FILE bundle.jsonl (not over {self.path}).",
                )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            # A scan of every entity, while this thread counts: on the pool of cheap calls, which is idle while the
            # store opens (not on this one, whose threads the open may hold).
            merged = self._light_executor.submit(self._any_merged)
            relationships: int = conn.execute("SELECT COUNT(*) FROM relationship").fetchone()[0]
            self._has_merged = merged.result()
        except sqlite3.DatabaseError as exc:
            conn.close()
            if any(word in str(exc).lower() for word in _DAMAGED_PAGES):
                raise SqliteStoreError(f"The SQLite store {self.path} is damaged ({exc}).", _DAMAGED_HINT) from None
            raise SqliteStoreError(
                f"{self.path} is not a SQLite database ({exc}).",
                "Build a store with: bfsql load --db NEW_FILE bundle.jsonl",
            ) from None
        except BaseException:
            conn.close()
            raise
        if meta.get("schema_version") != SCHEMA_VERSION:
            conn.close()
            raise SqliteStoreError(
                f"{self.path} has store schema version {meta.get('schema_version')!r}; "
                f"this bfsql reads version {SCHEMA_VERSION}.",
                "Rebuild it: bfsql load --db NEW_FILE bundle.jsonl with this version of bfsql.",
            )
        self._has_trigram = "entity_trigram" in tables
        self._stored_description = meta.get("description")
        self._statistics = stored_statistics(meta)
        self.vector_embedder = None
        if "entity_vector" in tables and meta.get("embedder") and meta.get("embedder_dimension"):
            self.vector_embedder = (meta["embedder"], int(meta["embedder_dimension"]))
        self._vectors = None
        self._conn = conn
        with self._readers_lock:
            self._readers.append(conn)
        self._local.conn = conn
        self._saved_index = "csr_part" in tables
        self._saved_stamp = meta.get("csr")
        self.capabilities = dataclasses.replace(
            type(self).capabilities,
            vector_search=self.vector_embedder is not None,
            in_memory=0 < relationships <= self._memory_index,  # hops from the index: nothing for a cache to save
        )
        return relationships

    def _any_merged(self) -> bool:
        """Whether any entity is merged (on a connection of its own)."""
        conn = self._open()
        try:
            return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM entity WHERE status = 'merged')").fetchone()[0])
        finally:
            conn.close()

    def _saved_index_current(self, relationships: int) -> bool:
        """Whether the saved index (and the statistics saved with it) is the store's as it is, as reading the index
        checks it; False when the store cannot say (reading the index will meet the same error)."""
        try:
            entities = self._db.execute("SELECT COUNT(*) FROM entity").fetchone()[0]
        except sqlite3.Error:
            return False
        return self._saved_stamp == index_stamp(entities, relationships)

    def _use_index(self) -> None:
        """Read the array index saved in the store (or build it), then publish it (a thread of its own)."""
        from bfsql.csr import shared_index

        conn = self._open()
        try:
            index, _ = shared_index(self.path, conn, self._relationships)
            if self._closing.is_set():
                return
            self._csr = index
            self.capabilities = dataclasses.replace(self.capabilities, traversal=True)
            self._indexed.set()
        except sqlite3.Error:
            pass  # the store went away (closed, replaced); hops keep using SQL
        finally:
            conn.close()

    def _read_vectors(self) -> None:
        """Read the vector codes (a thread of its own, for a served store), so that the first search neither waits
        for them nor grows the server under its own clock: R-MAT 23's 268 MB took 1.9 s and +516 MB there."""
        assert self.vector_embedder is not None
        conn = self._open()
        try:
            self._vector_index(conn, self.vector_embedder[1])
        except Exception:  # the store went away, or is damaged: a search meets the same and says so
            pass
        finally:
            conn.close()

    def _vector_index(self, conn: sqlite3.Connection, dimension: int) -> VectorIndex:
        """The vector codes, read (or built) once: not by every reader thread at the same time."""
        from bfsql.vectors import open_vectors

        with self._vectors_lock:
            if self._vectors is None and not self._closing.is_set():
                self._vectors = open_vectors(conn, dimension)
            if self._vectors is None:
                raise RuntimeError("the sqlite backend is closed")
            return self._vectors

    @property
    def _db(self) -> sqlite3.Connection:
        """This reader thread's connection (opened on its first query)."""
        if self._conn is None:
            raise RuntimeError("the sqlite backend is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open()
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _sql_hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        found: dict[str, list[HopEdge]] = {}
        if self._has_merged:
            visible = f"JOIN entity f ON f.entity_id = {{key}} AND f.{_VISIBLE} "
            other_visible = f"AND o.{_VISIBLE}"
        else:
            visible = other_visible = ""
        for key, other, own in (("r.subject_id", "r.object_id", 0), ("r.object_id", "r.subject_id", 2)):
            loops = "AND r.subject_id <> r.object_id" if own == 2 else ""
            for chunk in _chunks(list(dict.fromkeys(entity_ids)), MAX_PARAMS):
                rows = self._db.execute(
                    f"""
                    SELECT r.subject_id, r.predicate, r.object_id, o.entity_type, o.name
                    FROM relationship r {visible.format(key=key)}LEFT JOIN entity o ON o.entity_id = {other}
                    WHERE {key} IN ({_marks(len(chunk))}) {loops} {other_visible}
                    """,
                    chunk,
                )
                for row in rows:
                    edges = found.get(row[own])
                    if edges is None:
                        found[row[own]] = [row]
                    else:
                        edges.append(row)
        return {i: Neighbourhood(info, found.get(i, [])) for i, info in self._get_nodes(entity_ids).items()}

    def _entities(self, entity_ids: list[str], columns: str) -> dict[str, tuple[Any, ...]]:
        found: dict[str, tuple[Any, ...]] = {}
        for chunk in _chunks(list(dict.fromkeys(entity_ids)), MAX_PARAMS):
            sql = f"SELECT {columns} FROM entity WHERE entity_id IN ({_marks(len(chunk))}) AND {_VISIBLE}"
            for row in self._db.execute(sql, chunk):
                found[row[0]] = row
        return {i: found[i] for i in dict.fromkeys(entity_ids) if i in found}

    def _get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        rows = self._entities(entity_ids, "entity_id, entity_type, name")
        return {i: NodeInfo(row[1], row[2]) for i, row in rows.items()}

    def _metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        rows = self._entities(entity_ids, _ENTITY_COLUMNS)
        return {i: node_metadata(_entity(row)) for i, row in rows.items()}

    def _edge_rows(self, edges: list[Edge], columns: str, join: str) -> Iterator[Sequence[Any]]:
        """``columns`` of the visible relationships among ``edges`` (``r``), with the ``join`` added."""
        merged = (
            "AND NOT EXISTS (SELECT 1 FROM entity m WHERE m.entity_id IN (r.subject_id, r.object_id) "
            "AND m.status = 'merged')"
            if self._has_merged
            else ""
        )
        for chunk in _chunks(list(dict.fromkeys(edges)), MAX_PARAMS // 3):
            yield from self._db.execute(
                f"""
                WITH wanted (s, p, o) AS (VALUES {",".join(["(?, ?, ?)"] * len(chunk))})
                SELECT r.subject_id, r.predicate, r.object_id, {columns}
                FROM wanted w
                JOIN relationship r ON r.subject_id = w.s AND r.predicate = w.p AND r.object_id = w.o {merged}
                {join}
                """,
                [part for edge in chunk for part in edge],
            )

    def _metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        found: dict[Edge, dict[str, Any]] = {}
        for s, p, o, confidence, documents, properties in self._edge_rows(
            edges, "r.confidence, r.source_documents, r.properties", ""
        ):
            rel = RelationshipRecord.model_construct(
                subject=s,
                predicate=p,
                object=o,
                confidence=confidence,
                source_documents=json.loads(documents),
                properties=json.loads(properties),
            )
            found[Edge(s, p, o)] = edge_metadata(rel, [])
        return found

    def _provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        evidence: dict[Edge, list[EvidenceRecord]] = {}
        join = (
            "JOIN evidence v ON v.subject_id = r.subject_id AND v.predicate = r.predicate AND v.object_id = r.object_id"
        )
        columns = "v.text_span, v.confidence, v.document_id, v.section"
        for s, p, o, span, confidence, document, section in self._edge_rows(edges, columns, join):
            evidence.setdefault(Edge(s, p, o), []).append(
                EvidenceRecord.model_construct(
                    subject=s,
                    predicate=p,
                    object=o,
                    text_span=span,
                    confidence=confidence,
                    document_id=document,
                    section=section,
                )
            )
        return {edge: provenance(found) for edge, found in evidence.items()}

    def _distinct(self, sql: str) -> list[str]:
        if sql not in self._schema_cache:  # the store is read-only, so the answer never changes
            self._schema_cache[sql] = [row[0] for row in self._db.execute(sql)]
        return self._schema_cache[sql]

    def _search(self, query: str, node_types: list[str] | None, limit: int) -> list[EntityStub]:
        text = query.replace("\x00", "").strip()  # FTS5 parses queries as C strings: NUL would end one early
        q = text.casefold()
        if not q or node_types == [] or limit < 1:
            return []
        type_filter = f"AND e.entity_type IN ({_marks(len(node_types))})" if node_types else ""
        types = list(node_types or [])
        hits: dict[str, tuple[str, str | None]] = {}

        def take(rows: Sequence[Sequence[Any]]) -> None:
            for entity_id, entity_type, name in rows:
                if len(hits) < limit:
                    hits.setdefault(entity_id, (entity_type, name))

        # Tier 1: exact (case-insensitive) name, then exact synonym.
        take(
            self._db.execute(
                f"""
                SELECT e.entity_id, e.entity_type, e.name
                FROM entity_label l JOIN entity e ON e.entity_id = l.entity_id
                WHERE l.norm = ? AND e.{_VISIBLE} {type_filter}
                GROUP BY e.entity_id ORDER BY MIN(l.kind), e.entity_id LIMIT ?
                """,
                [q, *types, limit],
            ).fetchall()
        )
        # Tier 2: full-text matches of every token (the last one as a prefix), best BM25 first.
        if len(hits) < limit:
            take(
                self._db.execute(
                    f"""
                    SELECT e.entity_id, e.entity_type, e.name
                    FROM (
                        SELECT rowid AS label_id, rank AS score FROM entity_fts WHERE entity_fts MATCH ?
                        ORDER BY rank LIMIT ?
                    ) f
                    JOIN entity_label l ON l.label_id = f.label_id
                    JOIN entity e ON e.entity_id = l.entity_id
                    WHERE e.{_VISIBLE} {type_filter}
                    GROUP BY e.entity_id ORDER BY MIN(f.score), MIN(l.kind), e.entity_id LIMIT ?
                    """,
                    [fts_query(text), FTS_CANDIDATES, *types, 2 * limit],
                ).fetchall()
            )
        # Tier 3: substrings, ranked like the memory backend. The trigram index answers
        # queries of three or more characters; shorter ones scan, and only as a last resort.
        if len(hits) < limit and ((self._has_trigram and len(text) >= 3) or not hits):
            if self._has_trigram and len(text) >= 3:
                source = "entity_trigram t JOIN entity_label l ON l.label_id = t.rowid"
                condition, needle = "entity_trigram MATCH ?", '"' + text.replace('"', '""') + '"'
            else:
                source, condition, needle = "entity_label l", "instr(l.norm, ?) > 0", q
            rows = self._db.execute(
                f"""
                SELECT e.entity_id, e.entity_type, e.name, l.kind, l.label
                FROM {source} JOIN entity e ON e.entity_id = l.entity_id
                WHERE {condition} AND e.{_VISIBLE} {type_filter} LIMIT ?
                """,
                [needle, *types, SUBSTRING_CANDIDATES],
            ).fetchall()
            ranked: dict[str, tuple[tuple[int, int], str, str | None]] = {}
            for entity_id, entity_type, name, kind, label in rows:
                rank = lexical_rank(text, label, []) if kind == 0 else lexical_rank(text, None, [label])
                if rank is not None and (entity_id not in ranked or rank < ranked[entity_id][0]):
                    ranked[entity_id] = (rank, entity_type, name)
            ordered = sorted(ranked.items(), key=lambda item: (item[1][0], item[0]))
            take([(entity_id, entity_type, name) for entity_id, (_, entity_type, name) in ordered])
        return [EntityStub(id=i, entity_type=t, name=n) for i, (t, n) in hits.items()]

    def _vector_search(self, vector: list[float], node_types: list[str] | None, limit: int) -> list[EntityStub]:
        if self.vector_embedder is None:
            return []
        name, dimension = self.vector_embedder
        if len(vector) != dimension:
            raise EmbedderMismatch(
                f"The query vector has {len(vector)} dimensions; the store's vectors ({name}) have {dimension}.",
                f"Serve with --embedder {name}.",
            )
        return self._vector_index(self._db, dimension).nearest(self._db, vector, node_types, limit)

    def _close(self) -> None:
        with self._gate.alone():
            self._close_readers()

    def _close_readers(self) -> None:
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        self._conn = None
        self._local = threading.local()

    # -- event-loop side ------------------------------------------------------

    async def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait until the array index is read or built (False if it is not within ``timeout`` or never is); an
        index put off until the first walk is read now."""
        if await self._walk_index() is not None:
            return True
        return await asyncio.to_thread(self._indexed.wait, timeout)

    async def _walk_index(self) -> CsrIndex | None:
        """The array index for a walk: read now when it was put off (a store opened for one call), else the one
        read or built so far (None: SQL answers)."""
        if self._csr is None and self._index_put_off:
            await asyncio.to_thread(self._read_put_off_index)
        return self._csr

    def _read_put_off_index(self) -> None:
        with self._index_lock:  # two walks at once read it once
            if self._index_put_off and not self._closing.is_set():
                self._use_index()
                self._index_put_off = False

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on one of the backend's reader threads (each with its own connection), so that
        a cheap query need not wait behind a long one. Cheap calls have a reader of their own: they
        never queue behind the metadata queries of traversals."""
        loop = asyncio.get_running_loop()
        executor = self._light_executor if in_light_call() else self._executor
        return await loop.run_in_executor(executor, functools.partial(self._read, fn, *args))

    def _read(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            with self._gate.read():
                return fn(*args)
        except sqlite3.DatabaseError as exc:
            if not any(word in str(exc).lower() for word in _DAMAGED_PAGES + _NOT_A_DATABASE):
                raise
            raise DamagedStore(f"The SQLite store {clip(str(self.path), 200)} is damaged ({exc}).",
                               _DAMAGED_HINT) from None

    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Exact name/synonym matches, then BM25 full-text (prefix) matches, then substrings; at most ``limit``."""
        return await self._run(self._search, query, node_types, limit)

    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Nearest entities by cosine, best first: candidates found by the sign bits held in memory, scored
        exactly from their stored vectors (:mod:`bfsql.vectors`)."""
        return await self._run(self._vector_search, list(vector), node_types, limit)

    async def bind_embedder(self, embedder: Embedder) -> None:
        """Check the stored vectors come from ``embedder``; :class:`EmbedderMismatch` if not (a store without
        vectors takes any)."""
        if self.vector_embedder is None or self.vector_embedder == (embedder.name, embedder.dimension):
            return
        name, dimension = self.vector_embedder
        raise EmbedderMismatch(
            f"The store {self.path} holds entity vectors made by embedder {name!r} ({dimension} dimensions), "
            f"but the server uses {embedder.name!r} ({embedder.dimension} dimensions); vectors of different "
            "models cannot be compared.",
            f"Serve with --embedder {name}, or re-embed the store first: "
            f"bfsql load --db {self.path} --embedder {embedder.name}",
        )

    async def entity_types(self) -> list[str]:
        """Types of the visible entities, sorted: from the array index once read (the same list; the statistics
        saved with it when a store opened for one call has not read it), else by SQL."""
        if self._csr is not None:
            return list(self._csr.types)
        saved = self._statistics
        if self._saved_statistics_current and saved is not None and saved.entity_type_counts is not None:
            return sorted(saved.entity_type_counts)
        sql = f"SELECT DISTINCT entity_type FROM entity WHERE {_VISIBLE} ORDER BY entity_type"
        return list(await self._run(self._distinct, sql))

    async def predicates(self) -> list[str]:
        """Predicates of the relationships that touch no merged entity, sorted: from the array index once read
        (the same list; the SQL scans every relationship, seconds at millions), else by SQL."""
        if self._csr is not None:
            return list(self._csr.predicates)
        saved = self._statistics
        if self._saved_statistics_current and saved is not None and saved.predicate_counts is not None:
            return sorted(saved.predicate_counts)
        return list(await self._run(self._distinct, _VISIBLE_PREDICATES))

    async def statistics(self, hubs: int = HUBS) -> GraphStatistics | None:
        """Exact counts and hubs: saved by ``bfsql load`` with the array index, else from the index in memory; None
        for a store of an older bfsql served without its index (above ``memory_index``)."""
        saved = self._statistics
        if saved is not None and saved.hubs is not None and (hubs <= STORED_HUBS or len(saved.hubs) < STORED_HUBS):
            return dataclasses.replace(saved, hubs=saved.hubs[:hubs])
        index = await self._walk_index()
        return index.statistics(hubs) if index is not None else None

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """Type and name of each visible entity: from the array index once read, else one query per chunk."""
        index = self._csr
        if index is not None:
            return index.get_nodes(entity_ids)
        return await self._run(self._get_nodes, list(entity_ids))

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """Each entity with its edges both ways and their other ends: from the array index, else three queries a
        chunk."""
        index = await self._walk_index()
        if index is not None:
            if len(entity_ids) <= 16:  # a seed or two: quicker than a trip to a worker thread
                return index.hop(entity_ids)
            return await self._run(index.hop, list(entity_ids))
        return await self._run(self._sql_hop, list(entity_ids))

    async def traverse(
        self,
        seeds: list[str],
        hops: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        offset: int,
        count: int,
    ) -> Survey:
        """The whole walk on the array index, in a worker thread (numpy does the work; see :func:`csr.survey`)."""
        index = await self._walk_index()
        if index is None:
            raise RuntimeError("the array index is not read yet (capabilities.traversal is false)")
        from bfsql.csr import survey

        arguments = (index, list(seeds), hops, limits.max_edges_per_node, list(exclude_types), offset, count)
        if index.edge_count <= INLINE_WALK_EDGES:
            return survey(*arguments)
        return await self._run(survey, *arguments)

    async def intersect(
        self,
        seeds: list[str],
        k: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        count: int,
        path_nodes: int,
        path_limit: int,
    ) -> Overlap:
        """The whole intersection walk on the array index, in a worker thread (see :func:`csr.overlap`)."""
        index = await self._walk_index()
        if index is None:
            raise RuntimeError("the array index is not read yet (capabilities.traversal is false)")
        from bfsql.csr import overlap

        arguments = (index, list(seeds), k, limits.max_edges_per_node, list(exclude_types), count, path_nodes,
                     path_limit)
        if index.edge_count <= INLINE_WALK_EDGES:
            return overlap(*arguments)
        return await self._run(overlap, *arguments)

    async def closure(
        self,
        seeds: list[str],
        predicates: list[str] | None,
        outgoing: bool,
        depth: int,
        max_nodes: int,
        max_edges_per_node: int,
        time_left: float | None,
    ) -> Closure | None:
        """A relation's closure walked on the array index, without a statement per level (see :func:`csr.closure`)."""
        index = await self._walk_index()
        if index is None:
            raise RuntimeError("the array index is not read yet (capabilities.traversal is false)")
        from bfsql.csr import closure

        arguments = (index, list(seeds), predicates, outgoing, depth, max_nodes, max_edges_per_node, time_left)
        if index.edge_count <= INLINE_WALK_EDGES:
            return closure(*arguments)
        return await self._run(closure, *arguments)

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of each visible entity, one query per chunk of ids."""
        return await self._run(self._metadata_for_nodes, list(entity_ids))

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of every given edge (``{}`` for unknown ones), one query per chunk of edges."""
        return await self._run(self._metadata_for_edges, list(edges))

    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The evidence of every given edge that has some, one query per chunk of edges."""
        return await self._run(self._provenance_for_edges, list(edges))

    async def graph_description(self) -> str:
        """The configured description, else the one stored by the loader."""
        return self._description or self._stored_description or f"A knowledge graph stored in {self.path.name}."

    async def aclose(self) -> None:
        """Close the connection, stop the worker thread and any index build (idempotent)."""
        self._closing.set()
        self._csr = None
        if self._conn is not None:
            await asyncio.to_thread(self._close)
        self._executor.shutdown(wait=False)
        self._light_executor.shutdown(wait=False)


def _create(config: SqliteConfig) -> SqliteBackend:
    if config.db is None:
        raise SqliteStoreError("No SQLite store given.", "Name one with --db FILE (bfsql serve alone serves the demo).")
    return SqliteBackend(config.db, config.description, memory_index=config.memory_index)


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``sqlite`` backend."""
    register("sqlite", _create, SqliteConfig, "Embedded SQLite store (default: bundled FamPlex demo graph)")
