"""The embedded store's entity vectors, searched without holding them in memory.

A store's vectors (``entity_vector``: int8 with a scale, ``dimension + 4`` bytes an entity) stay
in the store. The server holds one **sign bit a component** of each (``dimension / 8`` bytes an
entity: 32 for ``wordllama-256``), a row of code words an entity, the rows grouped by entity
type, and, from :data:`PREFIX_COPY_ROWS` rows, a copy of each row's first :data:`PREFIX_WORDS` words (16
bytes more), and answers a query in four steps (docs/search.md has the measurements that chose this):

1. the Hamming distance of the first 128 bits of every row of the wanted types to the query's
   (over the copy, a contiguous array a word: 16 bytes a row read), keeping the nearest
   :data:`PREFIX_SURVIVORS` per candidate (skipped when there are few rows);
2. the distance over every bit of those rows (a row's words side by side: one cache line read a
   row), the bits where the query's component is large counting more (:func:`_weighted_mismatches`),
   keeping the nearest :data:`SHORTLIST` per candidate;
3. those rows ranked by the query's own components (the sum of the query's components whose
   bits are set: the sign bits against the query as it is, not against its signs), keeping the
   candidates (at least :data:`RESCORED`, and :data:`RESCORED_PER_HIT` per hit asked for);
   vectors without a negative component (the ``hashing`` embedder's counts) have bits that say
   which components are not zero, so there steps 1-3 are one: the candidates are those whose
   sets of bits have the greatest cosine with the query's, over every row (the first bits say too
   little of a sparse vector; no copy of the first words is held for them);
4. the candidates' own vectors read from the store by row number, their cosines computed exactly
   (float64, rounded to six decimals, so that equal vectors tie whatever the batch), and the best
   kept, ties by id.

Scores are therefore the stored vectors' cosines, as before; only which entities are looked at
changes. ``bfsql load`` saves the codes with the store (table ``vector_part``) and the entity and
a copy of the vector of each row (table ``vector_row``, keyed by row: one lookup a candidate). A
store saved by bfsql before this layout (version 1: codes saved column by column, ``vector_row``
without the vectors) is still read as it is, its candidates' vectors looked up by entity id; a
store without saved codes (or with damaged ones) has them built from its vectors when first
searched, with the rows' ids held as one UTF-8 blob.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bfsql.csr import Strings
from bfsql.models import EntityStub
from bfsql.saved_parts import read_parts, save_parts

__all__ = [
    "PREFIX_COPY_ROWS", "PREFIX_SURVIVORS", "PREFIX_WORDS", "RESCORED", "RESCORED_PER_HIT", "SHORTLIST",
    "VECTORS_VERSION", "Codes", "VectorIndex", "build_codes", "candidates", "cosines", "drop_vectors", "open_vectors",
    "save_vectors", "sign_codes",
]

logger = logging.getLogger("bfsql.vectors")

VECTORS_VERSION = "2"
"""Format of the saved codes (rows of words; ``vector_row`` holds the vectors). Version ``1`` is read too;
a store with another version has its codes built when first searched."""

RESCORED = 1000
"""Candidates whose vectors are read and scored exactly, at least (recall@10 0.98-1.0, docs/search.md)."""
RESCORED_PER_HIT = 4
"""Candidates scored exactly per hit asked for, when that is more than :data:`RESCORED`."""
PREFIX_SURVIVORS = 128
"""Rows kept by the first step (the first :data:`PREFIX_WORDS` words) per candidate."""
PREFIX_WORDS = 2
"""Code words a row read by the first step (at 8.4M names the first 64 bits kept 0.91 of the true ten, 128 bits
0.99: docs/search.md)."""
PREFIX_COPY_ROWS = 1 << 21
"""Rows from which the first words are copied for the first step, a contiguous array a word (16 bytes an entity
more): read in place, every row's whole cache line is read, 1.6 times the first step's time (1.7 ms more a search
at 1M rows)."""
SHORTLIST = 4
"""Rows kept by the second step (every bit) per candidate, to be ranked by the query's components."""

CHUNK = 1 << 16
"""Rows per numpy call in the first step: its arrays stay in the CPU's caches."""
FETCH = 500
"""Rows per statement when reading the candidates' vectors."""
SAMPLE = 1 << 14
"""Rows whose first-word distance sets the first step's threshold."""
THREADS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
"""Threads the first step is split among (the cores this process may use, at most 4)."""
SPLIT_ROWS = 1 << 21
"""Rows from which the first step is split among threads (below, one thread is as fast)."""

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()

_VISIBLE = "e.status IS NOT 'merged'"
_DDL = (
    # vector: a copy of the row's entity_vector.vector (NULL in rows an older bfsql saved: version 1)
    "CREATE TABLE IF NOT EXISTS vector_row (row INTEGER PRIMARY KEY, entity_id TEXT NOT NULL, vector BLOB)",
    "CREATE TABLE IF NOT EXISTS vector_part (name TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, "
    "PRIMARY KEY (name, part)) WITHOUT ROWID",
)


def sign_codes(matrix: Any) -> np.ndarray:
    """The sign bits of each row of ``matrix`` as 64-bit words, one row of words per vector (padded with 0)."""
    matrix = np.asarray(matrix)
    words = -(-matrix.shape[1] // 64)
    packed = np.zeros((len(matrix), words * 8), dtype=np.uint8)
    packed[:, : -(-matrix.shape[1] // 8)] = np.packbits(matrix > 0, axis=1)
    return packed.view("<u8")


def _decode(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    """The stored vectors as float64 (exact: int8 times its float32 scale, or float32 rows of older stores)."""
    if all(len(blob) == dimension + 4 for blob in blobs):
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), dimension + 4)
        scales = raw[:, :4].copy().view("<f4").astype(np.float64)
        return raw[:, 4:].view(np.int8).astype(np.float64) * scales
    matrix = np.zeros((len(blobs), dimension), dtype=np.float64)
    for i, blob in enumerate(blobs):
        if len(blob) == 4 * dimension:
            matrix[i] = np.frombuffer(blob, dtype="<f4")
        elif len(blob) == dimension + 4:
            matrix[i] = np.frombuffer(blob[4:], dtype=np.int8) * float(np.frombuffer(blob[:4], dtype="<f4")[0])
        else:
            raise ValueError(f"a stored vector has {len(blob)} bytes; expected {dimension + 4}")
    return matrix


def cosines(blobs: Sequence[bytes], query: np.ndarray, dimension: int) -> np.ndarray:
    """The cosine of each stored vector with the unit ``query`` (float64), in [-1, 1], rounded to six decimals."""
    if not blobs:
        return np.zeros(0)
    scores: np.ndarray = np.round(np.clip(_decode(blobs, dimension) @ query, -1.0, 1.0), 6)
    return scores


def _in_chunks(conn: sqlite3.Connection, sql: str, keys: Sequence[Any]) -> list[Any]:
    """The rows of ``sql`` (whose ``{}`` is the placeholders of ``IN``) for ``keys``, :data:`FETCH` at a time."""
    found: list[Any] = []
    for start in range(0, len(keys), FETCH):
        chunk = keys[start : start + FETCH]
        found += conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
    return found


class _Rows(Protocol):
    """Where the entity and the vector of each row are read."""

    def fetch(self, conn: sqlite3.Connection, rows: list[int]) -> list[tuple[int, str, bytes]]:
        """(row, entity id, stored vector) of each of ``rows`` (the rows are the visible entities' when saved or
        built; the hits' visibility is checked again with their names)."""
        ...


class _StoredRows:
    """Rows whose entity and vector the store keeps in ``vector_row`` (saved by ``bfsql load``): one lookup a row."""

    def fetch(self, conn: sqlite3.Connection, rows: list[int]) -> list[tuple[int, str, bytes]]:
        """See :class:`_Rows`."""
        return _in_chunks(conn, "SELECT row, entity_id, vector FROM vector_row WHERE row IN ({})", rows)


class _JoinedRows:
    """Rows whose entities the store lists in ``vector_row`` without their vectors (saved by an older bfsql,
    version 1): the vectors are looked up in ``entity_vector`` by id."""

    def fetch(self, conn: sqlite3.Connection, rows: list[int]) -> list[tuple[int, str, bytes]]:
        """See :class:`_Rows`."""
        return _in_chunks(conn, "SELECT r.row, r.entity_id, v.vector FROM vector_row r "
                                "JOIN entity_vector v ON v.entity_id = r.entity_id WHERE r.row IN ({})", rows)


class _HeldRows:
    """Rows whose entities' ids are held here (a store saved without ``vector_row``)."""

    def __init__(self, ids: Strings) -> None:
        self.ids = ids

    def fetch(self, conn: sqlite3.Connection, rows: list[int]) -> list[tuple[int, str, bytes]]:
        """See :class:`_Rows`."""
        row_of = dict(zip(self.ids.many(rows), rows, strict=True))
        found = _in_chunks(conn, "SELECT entity_id, vector FROM entity_vector WHERE entity_id IN ({})", list(row_of))
        return [(row_of[entity_id], entity_id, blob) for entity_id, blob in found]


@dataclass
class VectorIndex:
    """Sign-bit codes of a store's entity vectors, rows grouped by type (see the module)."""

    words: np.ndarray
    """uint64, one row of code words per entity row: ``words[row, w]`` holds bits ``64 w`` to ``64 w + 63``."""
    types: list[str]
    """Entity types, sorted."""
    type_rows: np.ndarray
    """int64, one more than the types: the rows of ``types[i]`` are ``type_rows[i]:type_rows[i + 1]``."""
    dimension: int
    rows: _Rows | None
    """Where :meth:`nearest` reads the candidates' entities and vectors; None where the caller scores them itself
    (the PostgreSQL store: :meth:`candidate_rows` only)."""
    sets: bool = False
    """True when no vector has a negative component: candidates by the cosine of bit sets, not by Hamming."""
    prefix: np.ndarray = field(init=False)
    """The first :data:`PREFIX_WORDS` words of every row for the first step, ``prefix[w, row]``: a copy, a contiguous
    array a word, from :data:`PREFIX_COPY_ROWS` rows, else a view of :attr:`words` (no words with :attr:`sets`)."""

    def __post_init__(self) -> None:
        width = 0 if self.sets or not len(self.words) else min(PREFIX_WORDS, self.words.shape[1])
        first = self.words[:, :width].T
        self.prefix = np.ascontiguousarray(first) if len(self.words) >= PREFIX_COPY_ROWS else first

    def __len__(self) -> int:
        return int(self.words.shape[0])

    def nbytes(self) -> int:
        """Bytes the index holds in memory (codes, first words, type bounds and any ids held)."""
        held = self.rows.ids if isinstance(self.rows, _HeldRows) else None
        extra = len(held.blob) + held.offsets.nbytes if held is not None else 0
        copied = self.prefix.nbytes if self.prefix.base is None else 0
        return int(self.words.nbytes + copied + self.type_rows.nbytes) + extra

    def candidate_rows(self, vector: Sequence[float], node_types: list[str] | None, limit: int) -> list[int]:
        """The rows (ascending) whose vectors are to be scored exactly for the ``limit`` entities (of ``node_types``)
        most similar to ``vector``: steps 1-3 of the module's; none for a zero vector or no such rows."""
        query = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(query))
        ranges = self._ranges(node_types)
        if norm == 0.0 or limit < 1 or not ranges:
            return []
        count = max(RESCORED, RESCORED_PER_HIT * limit)
        return sorted(candidates(self.words, query / norm, ranges, count, self.sets, self.prefix).tolist())

    def nearest(
        self, conn: sqlite3.Connection, vector: Sequence[float], node_types: list[str] | None, limit: int
    ) -> list[EntityStub]:
        """The ``limit`` entities (of ``node_types``) most similar to ``vector``, best first, ties by id."""
        rows = self.candidate_rows(vector, node_types, limit)
        if not rows or self.rows is None:
            return []
        query = np.asarray(vector, dtype=np.float64)
        found = self.rows.fetch(conn, rows)
        scores = cosines([blob for _, _, blob in found], query / np.linalg.norm(query), self.dimension)
        return _stubs(conn, _best(scores, [entity_id for _, entity_id, _ in found], limit))

    def _ranges(self, node_types: list[str] | None) -> list[tuple[int, int]]:
        """The rows of each wanted type (every row without a filter), empty ones left out."""
        wanted = set(self.types if node_types is None else node_types)
        bounds = self.type_rows.tolist()
        return [(bounds[i], bounds[i + 1]) for i, t in enumerate(self.types)
                if t in wanted and bounds[i + 1] > bounds[i]]


def _best(scores: np.ndarray, ids: list[str], limit: int) -> list[tuple[float, str]]:
    """The ``limit`` best (score, id), ties by id (only those scoring at least the ``limit``-th are sorted)."""
    if len(scores) > limit:
        kept = np.flatnonzero(scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit])
    else:
        kept = np.arange(len(scores))
    hits = [(float(scores[i]), ids[i]) for i in kept.tolist()]
    return sorted(hits, key=lambda hit: (-hit[0], hit[1]))[:limit]


def _stubs(conn: sqlite3.Connection, hits: list[tuple[float, str]]) -> list[EntityStub]:
    """The hits (score, id) as stubs, with each entity's type and name from the store (visible ones only: a
    store written again by an older bfsql may have merged an entity since its codes were saved)."""
    if not hits:
        return []
    sql = f"SELECT entity_id, entity_type, name FROM entity e WHERE entity_id IN ({{}}) AND {_VISIBLE}"
    known = {row[0]: row for row in _in_chunks(conn, sql, [entity_id for _, entity_id in hits])}
    return [EntityStub(id=i, entity_type=known[i][1], name=known[i][2], score=score)
            for score, i in hits if i in known]


def candidates(
    words: np.ndarray, query: np.ndarray, ranges: list[tuple[int, int]], count: int, sets: bool = False,
    prefix: np.ndarray | None = None,
) -> np.ndarray:
    """Rows of ``ranges`` nearest to the unit ``query`` vector, at least ``count`` of them when there are as many.

    Rows as near as the last one kept come too (up to ``2 * count``), so that equal vectors are
    scored together. ``sets``: see :attr:`VectorIndex.sets`; ``prefix``: :attr:`VectorIndex.prefix`
    (taken from ``words`` when not given).
    """
    total = sum(end - start for start, end in ranges)
    if total <= count:
        return np.concatenate([np.arange(start, end) for start, end in ranges])
    code = sign_codes(query[None, :])[0]
    if sets:
        return _nearest(*_set_distances(words, code, ranges), count)
    if total > PREFIX_SURVIVORS * count:
        if prefix is None or not len(prefix):
            prefix = words[:, :PREFIX_WORDS].T
        rows = _prefix_pass(prefix, code[: len(prefix)], ranges, PREFIX_SURVIVORS * count, total)
    else:
        rows = np.concatenate([np.arange(start, end) for start, end in ranges])
    rows = _nearest(rows, _weighted_mismatches(np.take(words, rows, axis=0) ^ code, query), SHORTLIST * count)
    return _nearest(rows, -_component_sums(np.take(words, rows, axis=0), query), count)


def _weighted_mismatches(mismatched: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For each row of ``mismatched`` code words (a row's bits xor the query's), the sum of the weights of its bits
    set: each component's magnitude in the query, as a share of the largest, quantised to 0-3 (two bit planes).

    A cheap stand-in for :func:`_component_sums` over many rows: a bit whose component is near zero in the query
    says little of the cosine (at 8.4M names recall@10 0.976 against plain Hamming's 0.965 in this step).
    """
    magnitude = np.abs(query)
    weight = np.minimum((magnitude * (4.0 / max(float(magnitude.max()), 1e-30))).astype(np.int64), 3)
    low, high = (sign_codes(((weight >> plane) & 1)[None, :])[0] for plane in (0, 1))
    per_word = np.bitwise_count(mismatched & high)  # at most 64 a word: 3 * 64 fits a byte
    per_word <<= 1
    per_word += np.bitwise_count(mismatched & low)
    distance: np.ndarray = per_word.sum(axis=1, dtype=np.uint16)
    return distance


def _component_sums(words: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For each row of code ``words``, the sum of ``query``'s components whose sign bits are set (float32).

    Over the rows, this orders as the dot product of the query with each row's vector of signs: that
    is twice the sum less the sum of every component, the same for every row.
    """
    table = np.zeros((words.shape[1] * 64,), dtype=np.float32)
    table[: len(query)] = query
    # a byte's bits are 8 components, the first in its highest bit (np.packbits): one sum per byte value
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
    sums = (table.reshape(-1, 8) @ bits.T).ravel()
    place = np.arange(words.shape[1] * 8, dtype=np.intp) * 256
    found: np.ndarray = sums[words.view(np.uint8).astype(np.intp) + place].sum(axis=1)
    return found


def _set_distances(
    words: np.ndarray, query: np.ndarray, ranges: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Every row of ``ranges`` and minus the cosine of its bit set with the query's (shared bits over the
    square root of its own; the query's count is the same for every row)."""
    rows = np.concatenate([np.arange(start, end) for start, end in ranges])
    shared = np.zeros(len(rows), dtype=np.float32)
    own = np.zeros(len(rows), dtype=np.float32)
    at = 0
    for start, end in ranges:
        for first in range(start, end, CHUNK):
            block = words[first : min(end, first + CHUNK)]
            shared[at : at + len(block)] = np.bitwise_count(block & query).sum(axis=1, dtype=np.uint16)
            own[at : at + len(block)] = np.bitwise_count(block).sum(axis=1, dtype=np.uint16)
            at += len(block)
    return rows, -shared / np.sqrt(np.maximum(own, 1.0))


def _nearest(rows: np.ndarray, distance: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` rows of least distance, with those tied with the last (at most ``2 * count`` in all)."""
    if len(rows) <= count:
        return rows
    reach = int(np.partition(distance, count - 1)[count - 1])
    within = np.flatnonzero(distance <= reach)
    if len(within) > 2 * count:
        within = np.argsort(distance, kind="stable")[: 2 * count]
    return rows[within]


def _prefix_pass(
    prefix: np.ndarray, query: np.ndarray, ranges: list[tuple[int, int]], keep: int, total: int
) -> np.ndarray:
    """Rows of ``ranges`` whose first code words (``prefix[w, row]``) are among the ``keep`` (about) nearest to
    the ``query``'s.

    The threshold comes from a sample of the rows; if it keeps too few, it is raised and the pass
    run again (rare: the sample errs by a few percent).
    """
    step = max(1, total // SAMPLE)
    sample = np.concatenate([prefix[:, start:end:step] for start, end in ranges], axis=1)
    bits = np.bitwise_count(sample ^ query[:, None]).sum(axis=0)
    counts = np.cumsum(np.bincount(bits, minlength=64 * len(prefix) + 1))
    reach = int(np.searchsorted(counts, keep * len(bits) / total))
    while True:
        kept = _within_split(prefix, query, ranges, reach)
        if len(kept) >= keep // 2 or reach >= 64 * len(prefix):
            return kept
        reach += 2


def _within_split(prefix: np.ndarray, query: np.ndarray, ranges: list[tuple[int, int]], reach: int) -> np.ndarray:
    """:func:`_within` over all of ``ranges``, split among :data:`THREADS` threads when they hold many rows
    (numpy lets go of the GIL in each step; the pieces are joined in row order)."""
    total = sum(end - start for start, end in ranges)
    if THREADS < 2 or total < SPLIT_ROWS:
        return np.concatenate(list(_within(prefix, query, ranges, reach)))
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="bfsql-vectors")
    pieces = _split(ranges, THREADS)
    found = [_POOL.submit(lambda piece: np.concatenate(list(_within(prefix, query, piece, reach))), piece)
             for piece in pieces]
    return np.concatenate([future.result() for future in found])


def _split(ranges: list[tuple[int, int]], count: int) -> list[list[tuple[int, int]]]:
    """``ranges`` cut into ``count`` pieces of about as many rows each, in order."""
    total = sum(end - start for start, end in ranges)
    size = -(-total // count)
    pieces: list[list[tuple[int, int]]] = [[]]
    room = size
    for start, end in ranges:
        while start < end:
            take = min(end - start, room)
            pieces[-1].append((start, start + take))
            start, room = start + take, room - take
            if room == 0 and start < end:
                pieces.append([])
                room = size
    return pieces


def _within(prefix: np.ndarray, query: np.ndarray, ranges: list[tuple[int, int]], reach: int) -> Iterator[np.ndarray]:
    """Rows of ``ranges`` whose first words (``prefix[w, row]``) are at most ``reach`` bits from ``query``'s, a
    chunk at a time (a word at a time over a chunk: each word's copy is read contiguously)."""
    buffer = np.empty(CHUNK, dtype=np.uint64)
    bits = np.empty(CHUNK, dtype=np.uint8)
    more = np.empty(CHUNK, dtype=np.uint8)
    near = np.empty(CHUNK, dtype=np.bool_)
    for start, end in ranges:
        for first in range(start, end, CHUNK):
            size = min(CHUNK, end - first)
            for w in range(len(prefix)):
                np.bitwise_xor(prefix[w, first : first + size], query[w], out=buffer[:size])
                np.bitwise_count(buffer[:size], out=bits[:size] if w == 0 else more[:size])
                if w:
                    np.add(bits[:size], more[:size], out=bits[:size])
            np.less_equal(bits[:size], reach, out=near[:size])
            yield np.flatnonzero(near[:size]) + first
    yield np.zeros(0, dtype=np.int64)


# -- building and saving -----------------------------------------------------------------------


@dataclass
class Codes:
    """What :func:`build_codes` reads: the index's codes and types, and each row's entity id."""

    words: np.ndarray
    """uint64, a row of words an entity row (as :attr:`VectorIndex.words`)."""
    types: list[str]
    type_rows: np.ndarray
    ids: list[str]
    sets: bool
    """No vector has a negative component (see :attr:`VectorIndex.sets`)."""


def _components(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    """The stored vectors with their signs: the int8 components as they are (their scale is positive), or
    older stores' float32 rows decoded."""
    from bfsql.loading.sqlite_loader import decode_vectors

    if all(len(blob) == dimension + 4 for blob in blobs):
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), dimension + 4)
        return raw[:, 4:].view(np.int8)
    return np.asarray(decode_vectors(blobs, dimension))


def build_codes(conn: sqlite3.Connection, dimension: int) -> Codes:
    """The codes of every visible entity's stored vector, rows by type, then id (a pass over ``entity_vector``)."""
    ids: list[str] = []
    kinds: list[str] = []
    parts: list[np.ndarray] = []
    negative = False
    cursor = conn.execute(
        f"""
        SELECT v.entity_id, e.entity_type, v.vector FROM entity_vector v
        JOIN entity e ON e.entity_id = v.entity_id AND {_VISIBLE} ORDER BY v.entity_id
        """
    )
    while chunk := cursor.fetchmany(CHUNK):
        ids += [row[0] for row in chunk]
        kinds += [row[1] for row in chunk]
        matrix = _components([row[2] for row in chunk], dimension)
        negative = negative or bool((matrix < 0).any())
        parts.append(sign_codes(matrix))
    types = sorted(set(kinds))
    code_of = {t: i for i, t in enumerate(types)}
    type_codes = np.fromiter((code_of[k] for k in kinds), dtype=np.int32, count=len(kinds))
    order = np.argsort(type_codes, kind="stable")  # ids stay sorted within a type
    width = -(-dimension // 64)
    codes = np.concatenate(parts) if parts else np.zeros((0, width), dtype="<u8")
    type_rows = np.zeros(len(types) + 1, dtype=np.int64)
    np.cumsum(np.bincount(type_codes, minlength=len(types)), out=type_rows[1:])
    return Codes(codes[order], types, type_rows, [ids[i] for i in order.tolist()], sets=bool(ids) and not negative)


def save_vectors(conn: sqlite3.Connection, codes: Codes) -> None:
    """Save ``codes`` in the store ``conn`` writes (inside its transaction), replacing any saved before, with
    each row's entity and a copy of its vector in ``vector_row`` (in row order)."""
    conn.execute("DROP TABLE IF EXISTS vector_row")  # a version 1 table has no vector column
    for statement in _DDL:
        conn.execute(statement)
    drop_vectors(conn)
    conn.execute("CREATE TEMP TABLE vector_order (row INTEGER PRIMARY KEY, entity_id TEXT NOT NULL)")
    try:
        conn.executemany("INSERT INTO temp.vector_order (row, entity_id) VALUES (?, ?)", enumerate(codes.ids))
        conn.execute("INSERT INTO vector_row (row, entity_id, vector) SELECT o.row, o.entity_id, v.vector "
                     "FROM temp.vector_order o JOIN entity_vector v ON v.entity_id = o.entity_id ORDER BY o.row")
    finally:
        conn.execute("DROP TABLE temp.vector_order")
    blobs = {"words": codes.words.astype("<u8").tobytes(), "type_rows": codes.type_rows.astype("<i8").tobytes(),
             "types": "\n".join(codes.types).encode("utf-8")}
    checksum = save_parts(conn, "vector_part", blobs)
    kind = "sets" if codes.sets else "signs"
    width = codes.words.shape[1] if codes.words.ndim == 2 else 0
    stamp = f"{VECTORS_VERSION}:{len(codes.ids)}:{width}:{kind}:{checksum}"
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('vectors', ?)", (stamp,))


def drop_vectors(conn: sqlite3.Connection) -> None:
    """Remove the saved codes (a store whose vectors are dropped or about to be saved again)."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in ("vector_row", "vector_part"):
        if table in tables:
            conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM meta WHERE key = 'vectors'")


def _load(conn: sqlite3.Connection, dimension: int) -> VectorIndex | None:
    """The codes saved in the store, or None when there are none (or they are not of a version read here, or not
    whole)."""
    stamp = conn.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone()
    fields = stamp[0].split(":") if stamp is not None else []
    if len(fields) != 5 or fields[0] not in ("1", VECTORS_VERSION):
        return None
    version, count, width, kind, checksum = fields
    blobs, running = read_parts(conn, "vector_part")
    rows, words = int(count), int(width)
    last = conn.execute("SELECT coalesce(MAX(row), -1) FROM vector_row").fetchone()[0]
    if str(running) != checksum or len(blobs.get("words", b"")) != 8 * rows * words or last != rows - 1:
        logger.warning("The vector codes saved in this store are damaged; they are built from its vectors instead.")
        return None
    types = bytes(blobs["types"]).decode("utf-8").split("\n") if len(blobs["types"]) else []
    type_rows = np.frombuffer(blobs["type_rows"], dtype="<i8")
    if len(type_rows) != len(types) + 1 or int(type_rows[-1]) != rows or -(-dimension // 64) != words:
        return None
    if version == "1":  # saved a word at a time, every row's: made rows of words here
        matrix = np.ascontiguousarray(np.frombuffer(blobs.pop("words"), dtype="<u8").reshape(words, rows).T)
        return VectorIndex(matrix, types, type_rows, dimension, _JoinedRows(), sets=kind == "sets")
    matrix = np.frombuffer(blobs.pop("words"), dtype="<u8").reshape(rows, words)
    return VectorIndex(matrix, types, type_rows, dimension, _StoredRows(), sets=kind == "sets")


def open_vectors(conn: sqlite3.Connection, dimension: int) -> VectorIndex:
    """The store's vector index: the saved one, else built from its vectors (a store from an older bfsql)."""
    saved = _load(conn, dimension)
    if saved is not None:
        return saved
    codes = build_codes(conn, dimension)
    logger.info("Built the vector codes of %d entities in memory (load the store again to save them with it).",
                len(codes.ids))
    return VectorIndex(codes.words, codes.types, codes.type_rows, dimension, _HeldRows(Strings.of(codes.ids)),
                       sets=codes.sets)
