"""The embedded store's graph as arrays: compact, persisted with the store, and traversed where it lies.

Every end of an edge (each visible entity, and each id an edge names that is no entity: a
dangling end) has an index; indexes follow the ids' code-point order, so sorting indexes sorts
ids. The adjacency is CSR: the rows of node ``i`` are ``rows[offsets[i]:offsets[i + 1]]``, edge
numbers in the order of their ``(subject, predicate, object)`` triples (so a hub's first
``max_edges_per_node`` rows are the ones the engine keeps), and the edges are three arrays
(subject, predicate code, object). About 18 bytes an edge and 40 a node (ids and names kept as
UTF-8 blobs), against some 350 bytes an edge for the Python hop index this replaces.

The index is built by ``bfsql load`` and saved in the store (table ``csr_part``, each array one blob up to 512 MB:
see :mod:`bfsql.saved_parts`), so a server reads it instead of building it (R-MAT 20's 192 MB in 0.3-0.7 s, R-MAT
23's 1.56 GB in 1.3 s from the page cache, on two connections at once); a store written by an older bfsql has it
built when opened.
The graph's statistics (entities by type, edges by predicate, the hubs: what ``describe_schema``
shows) are counted on the arrays and saved with it (``meta.statistics``), so that a store served
without its index in memory can say them too.
Processes serving the same file from several graphs share one copy (:func:`shared_index`).

:func:`closure` walks a relation's closure level by level on the arrays (the ``closure`` primitive:
each level's rows gathered with numpy, then sorted out in Python against the set of what was reached).
:func:`survey` runs a whole breadth-first traversal on the arrays with numpy, with the engine's
exact rules (hub caps, excluded types, dangling ends), and materialises only the
page of the answer: the cost of a hub's two-hop survey is that of the edges it visits, with no
Python object per edge, and its memory that of its frontier and a byte a node (the edges are counted, not held).
The walk is never cut at a number of nodes: its counts are the whole traversal's.
Small hops (at most :data:`SMALL_HOP_ROWS` rows) run on Python sets
instead, where numpy's fixed cost per call would be most of the walk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import weakref
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from itertools import islice, pairwise
from pathlib import Path
from typing import Any

import numpy as np

from bfsql.index_format import CSR_VERSION, STORED_HUBS, index_stamp, stored_statistics
from bfsql.rows import (
    Closure,
    ClosureStep,
    Edge,
    GraphStatistics,
    HopEdge,
    Hub,
    Neighbourhood,
    NodeInfo,
    Overlap,
    Reached,
    SeedPath,
    Survey,
)
from bfsql.saved_parts import read_parts, save_parts

__all__ = [
    "CSR_VERSION", "STORED_HUBS", "CsrIndex", "DamagedIndex", "Edges", "EntityRow", "build_index", "closure",
    "entity_rows",
    "index_of_edges", "index_of_entities", "load_index", "overlap", "save_index", "shared_index", "stored_statistics",
    "survey",
]

logger = logging.getLogger("bfsql.csr")

_VISIBLE = "status IS NOT 'merged'"


class Strings:
    """Many strings as one UTF-8 blob and their offsets: ``strings[i]`` decodes one."""

    __slots__ = ("at", "blob", "offsets")

    def __init__(self, blob: bytes, offsets: np.ndarray) -> None:
        self.blob = blob
        self.offsets = offsets
        self.at = offsets.data
        """``offsets`` as a memoryview, made once (see :class:`Views`)."""

    @classmethod
    def of(cls, texts: Sequence[str]) -> Strings:
        """The blob of ``texts``."""
        return cls.of_encoded([t.encode("utf-8") for t in texts])

    @classmethod
    def of_encoded(cls, encoded: Sequence[bytes]) -> Strings:
        """The blob of strings already encoded as UTF-8."""
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        offsets = self.at
        return self.blob[offsets[i] : offsets[i + 1]].decode()

    def many(self, indexes: Sequence[int] | np.ndarray) -> list[str]:
        """The strings at ``indexes``.

        One by one through a memoryview: quicker at every size than gathering the offsets with numpy
        (65 strings 10 against 34 µs, 30,000 8.1 against 10.8 ms).
        """
        blob, offsets = self.blob, self.at
        if isinstance(indexes, np.ndarray):
            indexes = indexes.tolist()
        return [blob[offsets[i] : offsets[i + 1]].decode() for i in indexes]


class Views:
    """Memoryviews of an index's arrays, made once with it: what walks in Python read items through.

    An item of a memoryview is a Python int without a numpy call; making the view is numpy's buffer
    export (its format string, shape and strides), which a small walk paid for a dozen arrays a call.
    """

    __slots__ = ("has_name", "hash_index", "id_hashes", "objects", "offsets", "preds", "rows", "subjects",
                 "type_code")

    def __init__(self, index: CsrIndex) -> None:
        self.has_name = index.has_name.data
        self.type_code = index.type_code.data
        self.offsets = index.offsets.data
        self.rows = index.rows.data
        self.subjects = index.subjects.data
        self.objects = index.objects.data
        self.preds = index.preds.data
        self.id_hashes = index.id_hashes.data
        self.hash_index = index.hash_index.data


FEW_IDS = 16
"""Ids up to which :meth:`CsrIndex.find` searches each in Python (numpy's fixed cost is more for a seed or two)."""


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, sorted: one sort and a comparison of neighbours. ``np.unique`` of integers (numpy
    2.4) took about 1 µs a value: 9 of the 15 s of an intersection whose shared nodes held 7.8M edges, against
    0.4 s so."""
    ordered = np.sort(values)
    keep = np.empty(len(ordered), dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    distinct: np.ndarray = ordered[keep]
    return distinct


@dataclass
class CsrIndex:
    """A store's graph as arrays (see the module)."""

    ids: Strings
    """Every end's id, by index (code-point order)."""
    names: Strings
    """Every entity's name ("" where it has none, or for a dangling end)."""
    has_name: np.ndarray
    type_code: np.ndarray
    """int16: the entity's type (an index into ``types``); -1 for a dangling end."""
    types: list[str]
    predicates: list[str]
    offsets: np.ndarray
    """int64, one more than the ends: node ``i``'s rows are ``rows[offsets[i]:offsets[i + 1]]``."""
    rows: np.ndarray
    """int32 edge numbers, each node's in its edges' triple order."""
    subjects: np.ndarray
    """int32, by edge number."""
    objects: np.ndarray
    preds: np.ndarray
    """Predicate codes (indexes into ``predicates``), by edge number, in the narrowest of uint8, uint16 and
    int32 that holds them (:func:`predicate_dtype`): most graphs have fewer than 256 predicates, and int32
    codes took 4 of an edge's 20 bytes."""
    id_hashes: np.ndarray
    """uint64, sorted: a 64-bit hash of every id, to find an id's index with one search."""
    hash_index: np.ndarray
    """int32: the index of the id of each sorted hash."""
    spare_marks: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)
    """Cleared level-mark arrays no walk is using (see :func:`_level_marks`); not saved."""
    views: Views = field(init=False, repr=False, compare=False)
    """The arrays as memoryviews (made here, not saved)."""
    dangling_ends: np.ndarray = field(init=False, repr=False, compare=False)
    """The ends that are no entity, sorted (made here, not saved): an intersection reads their rows, and finding
    them is a pass over every node."""

    def __post_init__(self) -> None:
        self.views = Views(self)
        self.dangling_ends = np.flatnonzero(self.type_code < 0)

    @property
    def edge_count(self) -> int:
        """Edges of the index (those touching no merged entity)."""
        return len(self.subjects)

    def nbytes(self) -> int:
        """Bytes the arrays and blobs take in memory."""
        arrays = [getattr(self, f.name) for f in fields(self)]
        total = len(self.ids.blob) + len(self.names.blob) + self.ids.offsets.nbytes + self.names.offsets.nbytes
        return total + sum(int(a.nbytes) for a in arrays if isinstance(a, np.ndarray))

    def find(self, ids: Sequence[str]) -> dict[str, int]:
        """The index of each of ``ids`` that is an end of this graph (unknown ids left out)."""
        if not ids:
            return {}
        if len(ids) <= FEW_IDS:
            return self._search(ids)
        hashes, hash_index = self.views.id_hashes, self.views.hash_index
        size = len(hashes)
        hashed = np.fromiter((_hash(i) for i in ids), dtype=np.uint64, count=len(ids))
        wanted, at = hashed.tolist(), np.searchsorted(self.id_hashes, hashed).tolist()
        found: dict[str, int] = {}
        for entity_id, h, position in zip(ids, wanted, at, strict=True):
            while position < size and hashes[position] == h:  # equal hashes: compare the ids themselves
                index = hash_index[position]
                if self.ids[index] == entity_id:
                    found[entity_id] = index
                    break
                position += 1
        return found

    def _search(self, ids: Sequence[str]) -> dict[str, int]:
        """:meth:`find` for a few ids: a binary search over the ids themselves, which are in code-point order, as
        their UTF-8 bytes are. Its 16-20 probes cost about 1 µs more than hashing an id, but hashing ran code
        (blake2b, int.from_bytes, bisect over 64-bit items) that nothing else of a small walk runs: a 5-node
        walk's cache misses after a flush went from 3,870 to 3,570 (callgrind)."""
        blob, at = self.ids.blob, self.ids.at
        size = len(at) - 1
        found: dict[str, int] = {}
        for entity_id in ids:
            key = entity_id.encode()
            low, high = 0, size
            while low < high:
                middle = (low + high) >> 1
                if blob[at[middle] : at[middle + 1]] < key:
                    low = middle + 1
                else:
                    high = middle
            if low < size and blob[at[low] : at[low + 1]] == key:
                found[entity_id] = low
        return found

    def node(self, index: int) -> NodeInfo:
        """The type and name of the entity at ``index``."""
        return NodeInfo(self.types[self.type_code[index]], self.names[index] if self.has_name[index] else None)

    def get_nodes(self, ids: Sequence[str]) -> dict[str, NodeInfo]:
        """Type and name of each entity among ``ids`` (dangling ends and unknown ids left out)."""
        return {i: self.node(x) for i, x in self.find(list(dict.fromkeys(ids))).items() if self.type_code[x] >= 0}

    def hop(self, ids: Sequence[str]) -> dict[str, Neighbourhood]:
        """Each entity among ``ids`` with every edge of it and its other ends (the hop primitive)."""
        found: dict[str, Neighbourhood] = {}
        for entity_id, index in self.find(list(dict.fromkeys(ids))).items():
            if self.type_code[index] < 0:
                continue
            edges = self.rows[self.offsets[index] : self.offsets[index + 1]]
            found[entity_id] = Neighbourhood(self.node(index), self._hop_rows(index, edges))
        return found

    def statistics(self, hubs: int) -> GraphStatistics:
        """Exact counts of the entities by type and the edges by predicate, and the ``hubs`` entities with the most
        rows (most first, ties by id): a few passes over the arrays."""
        entities = self.type_code >= 0
        type_bins = np.bincount(self.type_code[entities], minlength=len(self.types))
        pred_bins = np.bincount(self.preds, minlength=len(self.predicates))
        degrees = np.diff(self.offsets)
        degrees[~entities] = 0  # a dangling end is no hub
        return GraphStatistics(
            exact=True,
            entity_type_counts=_binned(self.types, type_bins),
            predicate_counts=_binned(self.predicates, pred_bins),
            hubs=[Hub(self.ids[i], *self.node(i), int(degrees[i])) for i in _most(degrees, hubs).tolist()],
        )

    def _hop_rows(self, index: int, edges: np.ndarray) -> list[HopEdge]:
        subjects, objects = self.subjects[edges], self.objects[edges]
        others = np.where(subjects == index, objects, subjects)
        ends = _unique(np.concatenate([subjects, objects]))
        id_of = dict(zip(ends.tolist(), self.ids.many(ends.tolist()), strict=True))
        codes, has_name = self.type_code[others].tolist(), self.has_name[others].tolist()
        names = self.names.many(others.tolist())
        preds = self.predicates
        return [
            HopEdge(id_of[s], preds[p], id_of[o], self.types[c] if c >= 0 else None, n if named else None)
            for s, p, o, c, n, named in zip(subjects.tolist(), self.preds[edges].tolist(), objects.tolist(), codes,
                                            names, has_name, strict=True)
        ]


# -- building ---------------------------------------------------------------------------------


@dataclass
class Edges:
    """A store's relationships as integer codes, in triple order: what :func:`index_of_edges` arrays.

    ``subjects[k]``, ``preds[k]``, ``objects[k]`` are the k-th relationship's codes, the relationships
    sorted by their ``(subject, predicate, object)`` ids (code-point order); the codes index ``ends``
    and ``predicates``, which need not be sorted.
    """

    ends: list[str]
    predicates: list[str]
    subjects: np.ndarray
    preds: np.ndarray
    objects: np.ndarray


def build_index(conn: sqlite3.Connection) -> CsrIndex:
    """The index of the store ``conn`` reads (its visible entities and the edges touching no merged one)."""
    codes: dict[str, int] = {}
    counts: list[int] = []
    for subject, count in conn.execute(
        "SELECT subject_id, count(*) FROM relationship GROUP BY subject_id ORDER BY subject_id"
    ):
        codes[subject] = len(codes)
        counts.append(count)
    subjects = np.repeat(np.arange(len(counts), dtype=np.int32), np.array(counts, dtype=np.int64))
    predicate_codes: dict[str, int] = {}
    preds, objects = array("i"), array("i")
    cursor = conn.execute("SELECT predicate, object_id FROM relationship ORDER BY subject_id, predicate, object_id")
    while chunk := cursor.fetchmany(100_000):
        preds.extend([predicate_codes.setdefault(p, len(predicate_codes)) for p, _ in chunk])
        objects.extend([codes.setdefault(o, len(codes)) for _, o in chunk])
    edges = Edges(list(codes), list(predicate_codes), subjects, np.frombuffer(preds, dtype=np.int32),
                  np.frombuffer(objects, dtype=np.int32))
    return index_of_edges(conn, edges)


def index_of_edges(conn: sqlite3.Connection, edges: Edges) -> CsrIndex:
    """The index of the store ``conn`` reads, whose relationship table holds exactly ``edges``.

    What :func:`build_index` gives, without reading the relationships again: the loader
    passes the edges it has just written in order.
    """
    return index_of_entities(entity_rows(conn), edges)


EntityRow = tuple[str, str, str | None, int]
"""An entity as the index takes it: id, type, name, and 1 when it is merged (hidden)."""


def entity_rows(conn: sqlite3.Connection) -> list[EntityRow]:
    """The entities of the store ``conn`` reads, by id, as :func:`index_of_entities` takes them."""
    return conn.execute(
        "SELECT entity_id, entity_type, name, status IS 'merged' FROM entity ORDER BY entity_id"
    ).fetchall()


def index_of_entities(rows: list[EntityRow], edges: Edges) -> CsrIndex:
    """The index of a store of the entities ``rows`` (:func:`entity_rows`) and the relationships ``edges``.

    Touches no connection, so it can run in another thread while the store is written.
    """
    merged = {row[0] for row in rows if row[3]}
    return _arrays([row for row in rows if not row[3]] if merged else rows, merged, edges)


def _arrays(visible: list[tuple[str, str, str | None, int]], merged: set[str], edges: Edges) -> CsrIndex:
    """The index of ``edges`` and the ``visible`` entities (id, type, name; by id) when ``merged`` ones are hidden."""
    subjects, preds, objects, ends, used = _unmerged_edges(edges, merged)
    visible_ids = [row[0] for row in visible]
    # Two sorted runs (the visible entities by id, the ends sorted): merged by the sort, duplicates dropped.
    ids = list(dict.fromkeys(sorted([*visible_ids, *sorted(ends)])))
    index_of = {entity_id: i for i, entity_id in enumerate(ids)}
    to_index = np.full(len(edges.ends), -1, dtype=np.int32)
    to_index[used] = [index_of[end] for end in ends]
    subjects, objects = to_index[subjects], to_index[objects]
    predicates, preds = _sorted_predicates(edges, preds)
    if not _in_triple_order(subjects, preds, objects):  # codes remapped: check rather than trust the caller
        order = np.lexsort((objects, preds, subjects))
        subjects, preds, objects = subjects[order], preds[order], objects[order]
    at = np.array([index_of[i] for i in visible_ids], dtype=np.int64)
    del index_of
    types, type_code, has_name, names = _entity_columns(visible, at, len(ids))
    offsets, rows = _node_rows(subjects, objects, len(ids))
    encoded = [i.encode("utf-8") for i in ids]
    hashes = np.frombuffer(b"".join(hashlib.blake2b(e, digest_size=8).digest() for e in encoded), dtype="<u8")
    by_hash = np.argsort(hashes, kind="stable")
    return CsrIndex(
        ids=Strings.of_encoded(encoded), names=Strings.of(names.tolist()), has_name=has_name, type_code=type_code,
        types=types, predicates=predicates, offsets=offsets, rows=rows.astype(np.int32, copy=False),
        subjects=subjects.astype(np.int32, copy=False), objects=objects.astype(np.int32, copy=False),
        preds=preds.astype(predicate_dtype(len(predicates)), copy=False),
        id_hashes=hashes[by_hash].astype(np.uint64, copy=False), hash_index=by_hash.astype(np.int32),
    )


def _unmerged_edges(
    edges: Edges, merged: set[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[int]]:
    """The subject, predicate and object codes of the edges touching no ``merged`` end, the ends they use and
    those ends' codes."""
    subjects, preds, objects, ends = edges.subjects, edges.preds, edges.objects, edges.ends
    if not merged:  # every end is used
        return subjects, preds, objects, ends, list(range(len(ends)))
    hidden = np.fromiter((end in merged for end in ends), dtype=bool, count=len(ends))
    keep = ~(hidden[subjects] | hidden[objects])
    subjects, preds, objects = subjects[keep], preds[keep], objects[keep]
    used = _unique(np.concatenate([subjects, objects])).tolist()
    return subjects, preds, objects, [ends[code] for code in used], used


def _sorted_predicates(edges: Edges, preds: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The predicates ``preds`` uses, sorted, and ``preds`` recoded to their places in that list."""
    used_preds = _unique(preds).tolist()
    predicates = sorted(edges.predicates[code] for code in used_preds)
    pred_index = {p: i for i, p in enumerate(predicates)}
    to_pred = np.full(len(edges.predicates), -1, dtype=np.int32)
    to_pred[used_preds] = [pred_index[edges.predicates[code]] for code in used_preds]
    return predicates, to_pred[preds]


def _entity_columns(
    visible: list[tuple[str, str, str | None, int]], at: np.ndarray, count: int
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The sorted types and, per node (``visible`` rows placed at ``at``), its type code, has-name flag and name."""
    types = sorted({row[1] for row in visible})
    type_index = {t: i for i, t in enumerate(types)}
    type_code = np.full(count, -1, dtype=np.int16)
    type_code[at] = [type_index[row[1]] for row in visible]
    has_name = np.zeros(count, dtype=bool)
    has_name[at] = [row[2] is not None for row in visible]
    names = np.full(count, "", dtype=object)
    names[at] = [row[2] or "" for row in visible]
    return types, type_code, has_name, names


def _node_rows(subjects: np.ndarray, objects: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The offsets and rows of each node's edges in triple order (the order a hub's cap keeps): both ends of
    every edge, in edge order, sorted stably by node."""
    loops = subjects == objects
    node = np.stack([subjects, objects], axis=1).ravel()
    edge = np.repeat(np.arange(len(subjects), dtype=np.int32), 2)
    if loops.any():
        twice = np.ones(len(node), dtype=bool)
        twice[1::2] = ~loops
        node, edge = node[twice], edge[twice]
    key = (node.astype(np.int64) << 32) | edge  # unique, so a plain sort of the packed pairs is stable
    key.sort()
    rows = (key & 0xFFFFFFFF).astype(np.int32)
    del key
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(node, minlength=count), out=offsets[1:])
    return offsets, rows


def _most(values: np.ndarray, count: int) -> np.ndarray:
    """The indexes of the ``count`` largest positive ``values``, largest first, ties by index."""
    positive = np.flatnonzero(values > 0)
    if len(positive) > count > 0:
        least = np.partition(values[positive], len(positive) - count)[len(positive) - count]
        positive = positive[values[positive] >= least]  # the top values and every tie of the least of them
    ranked = positive[np.lexsort((positive, -values[positive]))]
    return ranked[: max(count, 0)]


def _in_triple_order(subjects: np.ndarray, preds: np.ndarray, objects: np.ndarray) -> bool:
    if len(subjects) < 2:
        return True
    s0, s1, p0, p1, o0, o1 = subjects[:-1], subjects[1:], preds[:-1], preds[1:], objects[:-1], objects[1:]
    ahead = (s0 < s1) | ((s0 == s1) & ((p0 < p1) | ((p0 == p1) & (o0 < o1))))
    return bool(ahead.all())


# -- saving with the store ------------------------------------------------------------------------

_ARRAYS = ("has_name", "type_code", "offsets", "rows", "subjects", "objects", "preds", "id_hashes", "hash_index")
_DDL = "CREATE TABLE IF NOT EXISTS csr_part (name TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, " \
       "PRIMARY KEY (name, part)) WITHOUT ROWID"


def _stamp(conn: sqlite3.Connection, relationships: int | None = None) -> str:
    """What the saved index must match: the store's entity and relationship counts (the latter counted unless
    given)."""
    entities = conn.execute("SELECT COUNT(*) FROM entity").fetchone()[0]
    if relationships is None:
        relationships = conn.execute("SELECT COUNT(*) FROM relationship").fetchone()[0]
    return index_stamp(entities, relationships)


def save_index(conn: sqlite3.Connection, index: CsrIndex) -> None:
    """Save ``index`` in the store ``conn`` writes (inside its transaction)."""
    conn.execute(_DDL)
    conn.execute("DELETE FROM csr_part")
    blobs: dict[str, bytes] = {name: getattr(index, name).tobytes() for name in _ARRAYS}
    blobs |= {"ids": index.ids.blob, "ids_offsets": index.ids.offsets.tobytes(), "names": index.names.blob,
              "names_offsets": index.names.offsets.tobytes(), "types": "\n".join(index.types).encode("utf-8"),
              "predicates": "\n".join(index.predicates).encode("utf-8")}
    checksum = save_parts(conn, "csr_part", blobs)
    stamp = _stamp(conn)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('csr', ?)", (stamp,))
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('csr_checksum', ?)", (str(checksum),))
    counted = index.statistics(STORED_HUBS)
    saved = {"stamp": stamp, "entity_type_counts": counted.entity_type_counts,
             "predicate_counts": counted.predicate_counts, "hubs": [list(hub) for hub in counted.hubs or []]}
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('statistics', ?)", (json.dumps(saved),))


_DTYPES = {"has_name": np.bool_, "type_code": np.int16, "offsets": np.int64, "rows": np.int32, "subjects": np.int32,
           "objects": np.int32, "id_hashes": np.uint64, "hash_index": np.int32, "ids_offsets": np.int64,
           "names_offsets": np.int64}
"""The saved arrays' types, but ``preds``'s (:func:`predicate_dtype`)."""


def predicate_dtype(predicates: int) -> type[np.integer[Any]]:
    """The narrowest integer type of the codes of ``predicates`` predicates."""
    return np.uint8 if predicates <= 1 << 8 else np.uint16 if predicates <= 1 << 16 else np.int32


class DamagedIndex(ValueError):
    """The array index saved in a store does not hold what was saved (a damaged file, a partial copy)."""


def load_index(conn: sqlite3.Connection, relationships: int | None = None) -> CsrIndex | None:
    """The index saved in the store, or None when there is none or it does not match the store (``relationships``:
    the store's count of them, when the caller has it: counting them again took 0.7 s at R-MAT 23).

    :class:`DamagedIndex` when the saved arrays do not hold what was saved: their checksum
    (stores written before checksums were saved are read without one) or their shapes differ.
    """
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('csr', 'csr_checksum')").fetchall())
    if meta.get("csr") != _stamp(conn, relationships):
        return None
    whole, checksum = read_parts(conn, "csr_part")
    if checksum is None:
        raise DamagedIndex("a saved part is not a blob of its length")
    if "csr_checksum" in meta and str(checksum) != meta["csr_checksum"]:
        raise DamagedIndex("its checksum differs from the one saved with it")
    def listed(name: str) -> list[str]:
        text = bytes(whole[name]).decode("utf-8")
        return text.split("\n") if text else []

    try:
        arrays: dict[str, Any] = {name: np.frombuffer(whole[name], dtype=dtype) for name, dtype in _DTYPES.items()}
        # An index saved before the codes were narrowed holds int32 ones: their width is the blob's per edge.
        width = len(whole["preds"]) // max(len(arrays["subjects"]), 1)
        arrays["preds"] = np.frombuffer(whole["preds"], dtype={1: np.uint8, 2: np.uint16}.get(width, np.int32))
        index = CsrIndex(
            ids=Strings(bytes(whole["ids"]), arrays.pop("ids_offsets")),
            names=Strings(bytes(whole["names"]), arrays.pop("names_offsets")),
            types=listed("types"), predicates=listed("predicates"), **arrays,
        )
    except (KeyError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise DamagedIndex(f"an array is missing or cut ({exc})") from None
    _check_shapes(index)
    return index


def _check_shapes(index: CsrIndex) -> None:
    """:class:`DamagedIndex` unless the arrays fit together (lengths and bounds a walk relies on)."""
    ends, edges = len(index.ids.offsets) - 1, len(index.subjects)
    problems = [
        what for what, wrong in (
            ("names", len(index.names.offsets) - 1 != ends or len(index.has_name) != ends),
            ("types", len(index.type_code) != ends or bool(ends and index.type_code.max() >= len(index.types))),
            ("offsets", len(index.offsets) != ends + 1 or bool(ends and (index.offsets[-1] != len(index.rows)
                                                                         or (np.diff(index.offsets) < 0).any()))),
            ("edges", len(index.objects) != edges or len(index.preds) != edges),
            ("edge ends", bool(edges and (index.subjects.max() >= ends or index.objects.max() >= ends
                                          or index.subjects.min() < 0 or index.objects.min() < 0))),
            ("predicates", bool(edges and index.preds.max() >= len(index.predicates))),
            ("rows", bool(len(index.rows) and (index.rows.max() >= edges or index.rows.min() < 0))),
            ("id hashes", len(index.id_hashes) != ends or len(index.hash_index) != ends),
        ) if wrong
    ]
    if problems:
        raise DamagedIndex(f"its arrays do not fit together ({', '.join(problems)})")


_shared: weakref.WeakValueDictionary[tuple[Any, ...], CsrIndex] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()



def shared_index(path: Path, conn: sqlite3.Connection, relationships: int | None = None) -> tuple[CsrIndex, bool]:
    """The index of the store at ``path``, shared by every graph of this process that serves the same file.

    Loaded from the store when it was saved there, else built (a store from an older bfsql). A
    damaged saved index is refused, said in one line on the log, and built from the store's
    tables instead, so that no answer is read from it. Returns the index and whether it was
    saved in the store (and sound). ``relationships``: the store's count of them, when the caller has it.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    with _shared_lock:
        index = _shared.get(key)
        if index is not None:
            return index, True
        try:
            loaded = load_index(conn, relationships)
        except DamagedIndex as exc:
            logger.warning("The array index saved in %s is damaged (%s): it is not used; building it from the "
                           "store's tables for this run. Load the store again (bfsql load) to save a sound one.",
                           path, exc)
            loaded = None
        index = loaded if loaded is not None else build_index(conn)
        _shared[key] = index
        return index, loaded is not None


# -- the traversal --------------------------------------------------------------------------------


def _gather(index: CsrIndex, frontier: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first ``cap`` rows of every frontier node: (row's node, edge number), and the degrees and rows taken."""
    starts = index.offsets[frontier]
    degrees = index.offsets[frontier + 1] - starts
    taken = np.minimum(degrees, cap)
    return np.repeat(frontier, taken), _edges_from(index, starts, taken), degrees, taken


def _edges_from(index: CsrIndex, starts: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """The edge numbers of ``taken`` rows from each of ``starts`` (positions in ``rows``), in that order."""
    firsts = np.cumsum(taken) - taken
    return index.rows[np.repeat(starts - firsts, taken) + np.arange(int(taken.sum()), dtype=np.int64)]


def survey(
    index: CsrIndex,
    seeds: Sequence[str],
    hops: int,
    max_edges_per_node: int,
    exclude_types: Iterable[str],
    offset: int,
    count: int,
) -> Survey:
    """A whole traversal on the arrays (the traverse primitive): its counts, cuts, schema, and one listed page.

    The same rules as the hop-by-hop engine (:func:`bfsql.engine.traverse.expand`): every seed
    at distance 0; each hop expands the last level's nodes, a hub's first ``max_edges_per_node``
    rows only; an edge to a node reached before is kept, one to a new node keeps it unless
    its type is excluded (an end that is no entity is dangling). The walk is never cut: visiting a node costs
    a mark, so the counts are the whole traversal's however big it is, and only the page is materialised.

    Hops of at most :data:`SMALL_HOP_ROWS` rows are walked with Python sets (:class:`_SmallWalk`);
    from the first bigger hop on, the walk goes on with numpy on the whole frontier (:func:`_walk`).
    """
    if hops > MAX_WALK_HOPS:
        raise ValueError(f"a walk on the arrays takes at most {MAX_WALK_HOPS} hops; got {hops}")
    distinct = list(dict.fromkeys(seeds))
    known, type_code = index.find(distinct), index.views.type_code
    starts = sorted({i for i in known.values() if type_code[i] >= 0})
    unknown = [s for s in distinct if s not in known or type_code[known[s]] < 0]
    excluded = [index.types.index(t) for t in exclude_types if t in index.types] if exclude_types else []
    small = _SmallWalk(index, starts, max_edges_per_node, excluded)
    if small.walk(hops):
        return small.survey(unknown, offset, count)
    levels = [np.array(level, dtype=np.int64) for level in small.levels]
    with _level_marks(index) as marks:
        return _walk(index, marks, levels, _Tally(index, small.kept), small.found, unknown, hops, max_edges_per_node,
                     excluded, offset, count)


MAX_WALK_HOPS = 253
"""Hops up to which :func:`survey` walks: it marks a node's level + 1 in a byte (the protocol allows 5)."""

SMALL_HOP_ROWS = 512
"""Rows up to which a walk's hop is walked with Python sets and lists rather than numpy: a numpy hop and the
answer made from its arrays cost some 0.2 ms whatever their size (tens of numpy calls on tiny arrays), which made a
1-hop walk of 50 edges on the HPO 3.5 times slower than in Python; a 1-hop survey costs the same both ways at about
500 rows (on the HPO, 2026-11-25), and numpy wins above."""


@dataclass
class _Found:
    """What a walk found besides its nodes and edges (both ways of walking a hop add to it)."""

    excluded_types: set[int] = field(default_factory=set)
    """Type codes of the new neighbours left out by ``exclude_types``."""
    excluded_preds: set[int] = field(default_factory=set)
    """Predicate codes of the edges to them."""
    capped: dict[int, int] = field(default_factory=dict)
    """Each hub whose rows were cut at ``max_edges_per_node``: its degree."""
    dangling: int = 0
    """Rows whose other end is no entity."""


class _SmallWalk:
    """A walk's hops with Python sets and lists, for as long as each meets at most :data:`SMALL_HOP_ROWS` rows.

    The same rules as :func:`_walk`, which goes on from :attr:`levels`, :attr:`kept` and :attr:`found` when a
    hop is bigger; a walk whose hops are all small also makes its answer here (:meth:`survey`). The arrays
    are read through memoryviews, whose items are Python ints: no numpy call at all.
    """

    def __init__(self, index: CsrIndex, starts: list[int], cap: int, excluded: list[int]) -> None:
        self.index = index
        self.cap = cap
        self.excluded = frozenset(excluded)
        self.type_code = index.views.type_code
        self.levels: list[list[int]] = [starts]
        """The nodes reached at each hop, sorted (level 0: the seeds)."""
        self.type_of: dict[int, int] = {node: self.type_code[node] for node in starts}
        """Every node reached: its type code."""
        self.kept: dict[int, object] = {}
        """Every edge kept (the keys; the order found)."""
        self.found = _Found()
        self.hops = 0
        """Hops walked."""

    def walk(self, hops: int) -> bool:
        """Walk up to ``hops`` hops while they are small; whether the whole walk is done."""
        while self.hops < hops and self.levels[-1]:
            if not self._hop():
                return False
            self.hops += 1
        return True

    def _hop(self) -> bool:
        """The next hop from the last level, unless it has more than :data:`SMALL_HOP_ROWS` rows (whether it ran)."""
        index, found, type_of, kept, type_code = self.index, self.found, self.type_of, self.kept, self.type_code
        views, cap = index.views, self.cap
        offsets = views.offsets
        spans = []
        total = 0
        for node in self.levels[-1]:
            start, degree = offsets[node], offsets[node + 1] - offsets[node]
            spans.append((node, start, start + min(degree, cap), degree))
            total += min(degree, cap)
            if total > SMALL_HOP_ROWS:
                return False
        rows, subjects, objects, excluded = views.rows, views.subjects, views.objects, self.excluded
        new: dict[int, int] = {}  # the new ends: their type codes
        fresh: dict[int, int] = {}  # the edges to them: their new end
        dangling = 0
        for node, start, stop, degree in spans:
            if degree > stop - start:
                found.capped[node] = degree
            for edge in rows[start:stop].tolist():
                other = subjects[edge]
                if other == node:
                    other = objects[edge]
                if other in type_of:  # reached before this hop (the frontier included: a self-loop)
                    kept[edge] = None
                    continue
                code = type_code[other]
                if code < 0:
                    dangling += 1
                elif code in excluded:
                    found.excluded_types.add(code)
                    found.excluded_preds.add(views.preds[edge])
                else:
                    new[other] = code
                    fresh[edge] = other
        found.dangling += dangling
        type_of.update(new)
        kept.update(fresh)
        self.levels.append(sorted(new))
        return True

    def survey(self, unknown: list[str], offset: int, count: int) -> Survey:
        """The walk's answer, its nodes at ``offset:offset + count`` listed (as :func:`_walk` makes it)."""
        index, kept, found, type_of, views = self.index, self.kept, self.found, self.type_of, self.index.views
        reached = len(type_of)
        end = min(reached, offset + count)
        page, id_of = self._page(offset, end)
        page_edges = self._page_edges(offset, end, reached, id_of)
        subjects, objects, preds = views.subjects, views.objects, views.preds
        predicates, types = index.predicates, index.types
        return Survey(
            node_count=reached,
            edge_count=len(kept),
            page=page,
            edges=[(id_of[subjects[edge]], predicates[preds[edge]], id_of[objects[edge]])  # type: ignore[misc]
                   for edge in page_edges],
            entity_types=sorted({types[c] for c in {*type_of.values(), *found.excluded_types}}),
            predicates=sorted({predicates[preds[edge]] for edge in kept}
                              | {predicates[p] for p in found.excluded_preds}),
            unknown_seeds=unknown,
            capped={index.ids[node]: degree for node, degree in found.capped.items()},
            nodes_cut=0,
            dangling_edges=found.dangling,
            **self._counts(),
        )

    def _page(self, offset: int, end: int) -> tuple[list[Reached], dict[int, str]]:
        """The nodes at answer positions ``offset:end`` (levels in order) as listed, and their ids by node."""
        index, type_of, views = self.index, self.type_of, self.index.views
        ids, id_at, names, name_at = index.ids.blob, index.ids.at, index.names.blob, index.names.at
        has_name, types = views.has_name, index.types
        page: list[Reached] = []
        id_of: dict[int, str] = {}
        first = 0  # the answer position of the level's first node
        for hop, level in enumerate(self.levels):
            if first >= end:
                break
            for node in level[max(offset - first, 0) : end - first]:
                entity_id = ids[id_at[node] : id_at[node + 1]].decode()  # UTF-8; no argument to parse
                id_of[node] = entity_id
                start, stop = name_at[node], name_at[node + 1]  # a name's bytes; none: has_name says "" or None
                page.append((entity_id, types[type_of[node]],  # type: ignore[arg-type]
                             names[start:stop].decode() if start != stop else "" if has_name[node] else None, hop))
            first += len(level)
        return page, id_of

    def _page_edges(self, offset: int, end: int, reached: int, id_of: dict[int, str]) -> list[int]:
        """The kept edges whose later end is listed (at ``offset:end`` of ``reached`` nodes), sorted; adds the ids
        of their ends listed on earlier pages to ``id_of``."""
        kept, views = self.kept, self.index.views
        if offset == 0 and end == reached:  # the whole walk listed: every edge on the page
            return sorted(kept)
        subjects, objects = views.subjects, views.objects
        position = {node: at for at, node in enumerate(islice(
            (node for level in self.levels for node in level), end))}
        page_edges = sorted(edge for edge in kept if subjects[edge] in position and objects[edge] in position
                            and max(position[subjects[edge]], position[objects[edge]]) >= offset)
        earlier = list({node for edge in page_edges for node in (subjects[edge], objects[edge])
                        if node not in id_of})
        id_of.update(zip(earlier, self.index.ids.many(earlier), strict=True))  # ends on earlier pages
        return page_edges

    def _counts(self) -> dict[str, dict[str, int]]:
        """The answer's counts: the nodes reached by type, the edges kept by predicate."""
        preds = self.index.views.preds
        return {"entity_type_counts": _named(self.index.types, Counter(self.type_of.values())),
                "predicate_counts": _named(self.index.predicates, Counter(preds[edge] for edge in self.kept))}


def _named(names: list[str], counts: Mapping[int, int]) -> dict[str, int]:
    """Counts by code as counts by name (``names`` by code, sorted: so is the answer), zeros left out."""
    return {names[code]: count for code, count in sorted(counts.items()) if count}


def _binned(names: list[str], bins: np.ndarray) -> dict[str, int]:
    """:func:`_named` of ``np.bincount``'s answer."""
    codes = np.flatnonzero(bins)
    return dict(zip([names[code] for code in codes.tolist()], bins[codes].tolist(), strict=True))


@contextmanager
def _level_marks(index: CsrIndex) -> Iterator[np.ndarray]:
    """A cleared byte array, one per node, to mark the level a walk reached each node at (level + 1; 0: not
    reached); the walk clears what it marked.

    Walks reuse these (allocating and clearing one per walk would cost what the graph's size
    costs, not what the answer's does); concurrent walks each get their own.
    """
    with _shared_lock:
        marks = index.spare_marks.pop() if index.spare_marks else np.zeros(len(index.ids), dtype=np.uint8)
    try:
        yield marks
    except BaseException:
        marks[:] = 0  # a walk that failed midway may leave marks
        raise
    finally:
        with _shared_lock:
            index.spare_marks.append(marks)


class _Tally:
    """The edges a walk keeps, counted as it keeps them (each exactly once), not held: their number and their
    counts by predicate code."""

    def __init__(self, index: CsrIndex, edges: Iterable[int]) -> None:
        self.preds = index.preds
        self.edges = 0
        self.by_pred = np.zeros(len(index.predicates), dtype=np.int64)
        self.add(np.fromiter(edges, dtype=np.int64))

    def add(self, edges: np.ndarray) -> None:
        """Count ``edges`` (distinct, and none counted before)."""
        self.edges += len(edges)
        self.by_pred += np.bincount(self.preds[edges], minlength=len(self.by_pred))


def _walk(
    index: CsrIndex,
    marks: np.ndarray,
    levels: list[np.ndarray],
    tally: _Tally,
    found: _Found,
    unknown: list[str],
    hops: int,
    max_edges_per_node: int,
    exclude_codes: list[int],
    offset: int,
    count: int,
) -> Survey:
    """:func:`survey`'s walk with numpy up to ``hops`` hops, on from ``levels`` (its edges so far in ``tally``,
    the rest in ``found``) with ``marks`` cleared; leaves them cleared."""
    excluded_codes = np.array(exclude_codes, dtype=np.int16)
    for level, nodes in enumerate(levels):
        marks[nodes] = level + 1
    while len(levels) <= hops and len(levels[-1]):
        levels.append(_numpy_hop(index, marks, levels[-1], len(levels) - 1, max_edges_per_node, excluded_codes,
                                 tally, found))
    return _numpy_survey(index, marks, levels, tally, found, unknown, hops, max_edges_per_node, offset, count)


def _numpy_hop(index: CsrIndex, marks: np.ndarray, frontier: np.ndarray, level: int, max_edges_per_node: int,
               excluded_codes: np.ndarray, tally: _Tally, found: _Found) -> np.ndarray:
    """One hop of :func:`_walk` from ``frontier`` (the nodes at ``level``): marks the new nodes, counts the edges
    it keeps in ``tally`` and adds what else it finds to ``found``; the new nodes, sorted.

    An edge between two reached nodes is met from both ends when both are expanded within their caps; it is
    counted from one end only (see :func:`_counted_here`), so nothing the walk keeps is held to find it twice.
    """
    degrees = index.offsets[frontier + 1] - index.offsets[frontier]
    taken = np.minimum(degrees, max_edges_per_node)
    found.capped.update(zip(frontier[degrees > taken].tolist(), degrees[degrees > taken].tolist(), strict=True))
    here, new_mark = level + 1, level + 2
    new_parts: list[np.ndarray] | None = []  # the new nodes met, until a pass over the marks finds them sooner
    new_met, enough = 0, len(marks) >> 6
    for piece in _pieces(taken, WALK_ROWS):
        node, edges, _, _ = _gather(index, frontier[piece], max_edges_per_node)
        subjects = index.subjects[edges]
        others = np.where(subjects == node, index.objects[edges], subjects)
        mark = marks[others]
        seen = (mark != 0) & (mark <= here)  # reached before this hop; those reached in it are new
        again = np.flatnonzero(seen)
        tally.add(edges[again[_counted_here(index, node[again], edges[again], others[again], mark[again] == here,
                                            max_edges_per_node)]])
        codes = index.type_code[others]
        fresh = ~seen & (codes >= 0)
        found.dangling += int(np.count_nonzero(~seen & (codes < 0)))
        if len(excluded_codes):
            excluded = fresh & np.isin(codes, excluded_codes)
            found.excluded_types.update(_unique(codes[excluded]).tolist())
            found.excluded_preds.update(_unique(index.preds[edges[excluded]]).tolist())
            fresh &= ~excluded
        tally.add(edges[fresh])  # every new end is admitted: each edge to one is kept, met from this end only
        reached = others[fresh]
        if new_parts is not None:
            new_parts.append(reached[marks[reached] == 0])
            new_met += len(new_parts[-1])
            if new_met > enough:
                new_parts = None
        marks[reached] = new_mark
        del node, edges, subjects, others, mark, seen, again, codes, fresh, reached
    if new_parts is None:
        return np.flatnonzero(marks == new_mark)
    return _unique(np.concatenate(new_parts)) if new_parts else frontier[:0]


def _counted_here(index: CsrIndex, nodes: np.ndarray, edges: np.ndarray, others: np.ndarray, same_level: np.ndarray,
                  max_edges_per_node: int) -> np.ndarray:
    """Which of ``edges``, met from ``nodes`` to ``others`` reached before (at the level of ``nodes`` where
    ``same_level``, else nearer), are counted from this end.

    The other end was expanded too (it is nearer, or it is in this hop); it met the edge unless the edge
    lies past its cap. So an edge is counted here when the other end did not meet it, or, both in this hop,
    when this end is the lower node; a self-loop (one row) is met once.
    """
    counted: np.ndarray = (others == nodes) | ~_within_cap(index, edges, others, max_edges_per_node)
    return counted | (same_level & (nodes < others))


def _numpy_survey(index: CsrIndex, marks: np.ndarray, levels: list[np.ndarray], tally: _Tally, found: _Found,
                  unknown: list[str], hops: int, max_edges_per_node: int, offset: int, count: int) -> Survey:
    """:func:`_walk`'s answer, its nodes at ``offset:offset + count`` listed; clears ``marks``."""
    order = np.concatenate(levels)
    type_bins = np.bincount(index.type_code[order], minlength=len(index.types))
    types = set(np.flatnonzero(type_bins).tolist()) | found.excluded_types
    preds = set(np.flatnonzero(tally.by_pred).tolist()) | found.excluded_preds
    listed = order[offset : offset + count]
    page_edges = _page_edges(index, marks, order, offset, offset + len(listed), hops, max_edges_per_node)
    marks[order] = 0
    distance = np.concatenate([np.full(len(level), hop) for hop, level in enumerate(levels)])[offset : offset + count]
    page = _listed(index, listed, distance)
    return Survey(
        node_count=len(order),
        edge_count=tally.edges,
        page=page,
        edges=_triples(index, page_edges, dict(zip(listed.tolist(), [row[0] for row in page], strict=True))),
        entity_types=sorted(index.types[c] for c in types),
        predicates=sorted(index.predicates[p] for p in preds),
        unknown_seeds=unknown,
        capped=dict(zip(index.ids.many(list(found.capped)), found.capped.values(), strict=True)),
        nodes_cut=0,
        dangling_edges=found.dangling,
        entity_type_counts=_binned(index.types, type_bins),
        predicate_counts=_binned(index.predicates, tally.by_pred),
    )


def _page_edges(index: CsrIndex, marks: np.ndarray, order: np.ndarray, start: int, end: int, hops: int,
                max_edges_per_node: int) -> np.ndarray:
    """The edges the walk kept whose later end is listed (at ``start:end`` of ``order``, which ``marks`` marks),
    sorted: found again in the rows the walk met (the walk counts its edges, it does not hold them).

    An edge was kept when an end nearer than ``hops`` met it within its cap and its other end was reached, so
    each edge between two nodes up to the page's end is among the rows of such a node up to there.
    """
    if start >= end:  # nothing listed (count 0: the counts alone)
        return order[:0]
    upto = order[:end]
    expanded = upto[marks[upto] <= hops]
    taken = np.minimum(index.offsets[expanded + 1] - index.offsets[expanded], max_edges_per_node)
    parts = []
    for piece in _pieces(taken, WALK_ROWS):
        node, edges, _, _ = _gather(index, expanded[piece], max_edges_per_node)
        subjects = index.subjects[edges]
        others = np.where(subjects == node, index.objects[edges], subjects)
        on_page = _before(marks, order, end, others)
        if start:
            on_page &= ~(_before(marks, order, start, others) & _before(marks, order, start, node))
        parts.append(edges[on_page])
    return _unique(np.concatenate(parts)) if parts else order[:0]


def _before(marks: np.ndarray, order: np.ndarray, position: int, nodes: np.ndarray) -> np.ndarray:
    """Whether each of ``nodes`` is at a position of ``order`` (which ``marks`` marks) before ``position``: on an
    earlier level than the node there, or on that level and lower (each level is sorted)."""
    mark = marks[nodes]
    before: np.ndarray = mark != 0
    if position < len(order):
        bound, first_after = marks[order[position]], order[position]
        before &= (mark < bound) | ((mark == bound) & (nodes < first_after))
    return before


def _listed(index: CsrIndex, nodes: np.ndarray, distance: np.ndarray) -> list[Reached]:
    """The nodes as an answer lists them (a few thousand at most: what an answer can show), as plain tuples."""
    names: list[str | None] = list(index.names.many(nodes))
    for unnamed in np.flatnonzero(~index.has_name[nodes]).tolist():
        names[unnamed] = None
    types = list(map(index.types.__getitem__, index.type_code[nodes].tolist()))
    return list(zip(index.ids.many(nodes), types, names, distance.tolist(), strict=True))  # type: ignore[arg-type]


def _triples(index: CsrIndex, edges: np.ndarray, known: dict[int, str] | None = None) -> list[Edge]:
    """The edges as plain (subject, predicate, object) tuples; ``known``: ids already decoded, by index."""
    subjects, objects = index.subjects[edges], index.objects[edges]
    ends = _unique(np.concatenate([subjects, objects])).tolist()
    names = dict(known or {})
    if names:
        ends = [end for end in ends if end not in names]
    names.update(zip(ends, index.ids.many(ends), strict=True))
    id_of = names.__getitem__
    preds = map(index.predicates.__getitem__, index.preds[edges].tolist())
    return list(zip(map(id_of, subjects.tolist()), preds, map(id_of, objects.tolist()), strict=True))  # type: ignore[arg-type]


WALK_ROWS = 1 << 20
"""Rows a walk's hop handles at once: a hub's hop meets millions, each costing tens of bytes while handled (all
at once grew the server by 227 MB in one hub 2-hop call on an 8M-edge graph)."""

SEED_WORD = np.uint8
"""A word of an intersection's seed bits: a byte, so that two seeds take a byte a node (in ``uint64`` words the
walk's mask and a hop's arrivals were 67 MB each at R-MAT 23, of a call's 261 MB growth)."""
_WORD_BITS = 8

OVERLAP_ROWS = 1 << 18
"""Rows an intersection walk handles at once (in a hop, and finding the edges among the shared nodes): a hub's
hop meets millions, each costing tens of bytes while handled (all at once grew the server by 257 MB in one
call on an 8M-edge graph; a piece of 2**20 rows, 73 MB in the last hop of intersect(hub, median, k=3) there; of
2**18, 30 MB, in the same time)."""


def _or_by_node(nodes: np.ndarray, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``nodes`` (sorted) and, for each, the OR of the ``bits`` rows given for it."""
    if not len(nodes):
        return nodes, bits
    order = np.argsort(nodes, kind="stable")
    nodes, bits = nodes[order], bits[order]
    starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
    return nodes[starts], np.bitwise_or.reduceat(bits, starts, axis=0)


class _Arrivals:
    """When each seed reached each node: per hop, the nodes (sorted) and the seed bits that arrived there."""

    def __init__(self) -> None:
        self.levels: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, nodes: np.ndarray, bits: np.ndarray) -> None:
        order = np.argsort(nodes, kind="stable")
        self.levels.append((nodes[order], bits[order]))

    def distance(self, nodes: np.ndarray, bit: int) -> np.ndarray:
        """Hops from the seed of ``bit`` to each of ``nodes`` (-1: never reached by it)."""
        found = np.full(len(nodes), -1, dtype=np.int64)
        word, flag = _flag(bit)
        for hop, (level_nodes, level_bits) in enumerate(self.levels):
            if not len(level_nodes):
                continue
            at = np.minimum(np.searchsorted(level_nodes, nodes), len(level_nodes) - 1)
            arrived = (level_nodes[at] == nodes) & ((level_bits[at, word] & flag) != 0) & (found < 0)
            found[arrived] = hop
        return found


def closure(
    index: CsrIndex,
    seeds: Sequence[str],
    predicates: Sequence[str] | None,
    outgoing: bool,
    depth: int,
    max_nodes: int,
    cap: int,
    time_left: float | None,
) -> Closure | None:
    """The ``closure`` primitive on the arrays (:meth:`bfsql.primitives.Primitives.closure` says what it answers):
    None when an entity to expand has more than ``cap`` rows in the direction."""
    deadline = None if time_left is None else time.perf_counter() + time_left
    wanted = None if predicates is None else set(predicates)
    codes = None if wanted is None else np.array([i for i, p in enumerate(index.predicates) if p in wanted])
    seeded = frozenset(x for x in index.find(list(seeds)).values() if index.type_code[x] >= 0)
    seen, frontier, total = set(seeded), sorted(seeded), 0
    answer = Closure([])
    while frontier and len(answer.levels) < depth:
        if deadline is not None and time.perf_counter() > deadline:
            answer.timed_out = True
            break
        level = _closure_level(index, frontier, codes, outgoing, cap, seen, seeded)
        if level is None:
            return None
        steps, new = level
        room = max_nodes - total
        if len(new) > room:
            kept = set(sorted(new)[:room])
            steps = [step for step in steps if step[2] not in new or step[2] in kept]
            answer.cut, answer.found = True, len(new)
        answer.levels.append(_named_steps(index, steps))
        total += len(new)
        seen |= new
        frontier = sorted(new)
        if answer.cut:
            break
    return answer


def _closure_level(
    index: CsrIndex, frontier: list[int], codes: np.ndarray | None, outgoing: bool, cap: int, seen: set[int],
    seeded: frozenset[int],
) -> tuple[list[tuple[int, int, int, int]], set[int]] | None:
    """One level of :func:`closure`: its rows ``(parent, predicate, child, child's type code)`` and the entities it
    reaches first; None when a frontier entity has more than ``cap`` rows in the direction (a hub)."""
    nodes = np.array(frontier, dtype=np.int64)
    starts = index.offsets[nodes]
    degrees = index.offsets[nodes + 1] - starts
    ends = index.subjects if outgoing else index.objects
    for node in nodes[degrees > cap].tolist():  # more rows than the cap both ways: count those of the direction
        if int(np.count_nonzero(ends[index.rows[index.offsets[node] : index.offsets[node + 1]]] == node)) > cap:
            return None
    parents = np.repeat(nodes, degrees)
    edges = _edges_from(index, starts, degrees)
    keep = ends[edges] == parents
    if codes is not None:
        keep &= np.isin(index.preds[edges], codes)
    edges, parents = edges[keep], parents[keep]
    children = (index.objects if outgoing else index.subjects)[edges]
    steps: list[tuple[int, int, int, int]] = []
    new: set[int] = set()
    for parent, predicate, child, code in zip(parents.tolist(), index.preds[edges].tolist(), children.tolist(),
                                              index.type_code[children].tolist(), strict=True):
        if code >= 0 and child not in seeded:
            if child in seen:
                continue
            new.add(child)
        steps.append((parent, predicate, child, code))
    return steps, new


def _named_steps(index: CsrIndex, steps: list[tuple[int, int, int, int]]) -> list[ClosureStep]:
    """The rows of a level with ids, predicate and type names."""
    ends = sorted({end for step in steps for end in (step[0], step[2])})
    id_of = dict(zip(ends, index.ids.many(ends), strict=True))
    predicates, types = index.predicates, index.types
    return [ClosureStep(id_of[parent], predicates[predicate], id_of[child], types[code] if code >= 0 else None)
            for parent, predicate, child, code in steps]


def overlap(
    index: CsrIndex,
    seeds: Sequence[str],
    k: int,
    max_edges_per_node: int,
    exclude_types: Iterable[str],
    count: int,
    path_nodes: int,
    path_limit: int,
) -> Overlap:
    """An intersection walk on the arrays (the intersect primitive): every seed walks at once, one bit each.

    The rules of :func:`bfsql.engine.intersect.reach_all`: each hop expands the nodes that
    gained seed bits, a hub's first ``max_edges_per_node`` rows only, passing those bits on; a
    new node of an excluded type is not visited, an end that is no entity is dangling. The walk is never cut
    (a visit costs a row of seed bits): the counts are the whole intersection's.
    A node is shared once every seed's bit has reached it; the edges among shared nodes are all
    their edges (no cap).
    """
    found = index.find(list(seeds))
    seed_index = np.array([found[s] for s in seeds], dtype=np.int64)
    seed_bits = _seed_bits(len(seeds))
    everyone = np.bitwise_or.reduce(seed_bits, axis=0)
    size = len(index.ids)
    mask = np.zeros((size, seed_bits.shape[1]), dtype=SEED_WORD)
    mask[seed_index] = seed_bits
    shared_at = np.full(size, -1, dtype=np.int8)  # k is at most a few hops: a byte a node, not eight
    dangling: list[np.ndarray] = []  # the edges to ends that are no entity (few), not a flag for every edge
    excluded_codes = np.array([index.types.index(t) for t in exclude_types if t in index.types], dtype=np.int16)
    arrivals = _Arrivals()
    arrivals.add(seed_index, seed_bits)
    capped: dict[int, int] = {}
    gained, gained_bits = seed_index, seed_bits
    for hop in range(1, k + 1):
        if not len(gained):
            break
        if hop == k and len(seeds) > 1:
            gained, gained_bits = _last_overlap_hop(index, mask, dangling, excluded_codes, gained, gained_bits,
                                                    max_edges_per_node, capped, len(seeds))
        else:
            gained, gained_bits = _overlap_hop(index, mask, dangling, excluded_codes, gained, gained_bits,
                                               max_edges_per_node, capped)
        arrivals.add(gained, gained_bits)
        complete = (mask[gained] == everyone).all(axis=1) & (shared_at[gained] < 0)
        shared_at[gained[complete]] = hop
    shared = np.flatnonzero(shared_at >= 0)
    order = shared[np.lexsort((shared, shared_at[shared]))]
    is_shared = shared_at >= 0
    listed = order[:count]
    edge_count, pred_bins, page_edges = _among(index, order, is_shared, listed)
    paths, left_out = _seed_paths(index, arrivals, seed_index, list(seeds), order[:path_nodes], path_limit,
                                  max_edges_per_node)
    type_bins = np.bincount(index.type_code[order], minlength=len(index.types))
    return Overlap(
        node_count=len(order),
        edge_count=edge_count,
        page=_listed(index, listed, shared_at[listed]),
        edges=_triples(index, page_edges),
        entity_types=list(_binned(index.types, type_bins)),
        predicates=list(_binned(index.predicates, pred_bins)),
        paths=paths,
        paths_left_out=left_out,
        capped=dict(zip(index.ids.many(list(capped)), capped.values(), strict=True)),
        nodes_cut=0,
        dangling_edges=len(_unique(np.concatenate(dangling))) if dangling else 0,
        entity_type_counts=_binned(index.types, type_bins),
        predicate_counts=_binned(index.predicates, pred_bins),
    )


def _seed_bits(seeds: int) -> np.ndarray:
    """One row of bits per seed (in words of :data:`SEED_WORD`), seed ``i``'s row with bit ``i`` alone set."""
    seed_bits = np.zeros((seeds, -(-seeds // _WORD_BITS)), dtype=SEED_WORD)
    for bit in range(seeds):
        word, flag = _flag(bit)
        seed_bits[bit, word] = flag
    return seed_bits


def _flag(bit: int) -> tuple[int, np.integer[Any]]:
    """The word of seed bit ``bit`` in a row of seed bits, and the flag of that bit in it."""
    return bit // _WORD_BITS, SEED_WORD(1 << (bit % _WORD_BITS))


def _overlap_hop(index: CsrIndex, mask: np.ndarray, dangling: list[np.ndarray], excluded_codes: np.ndarray,
                 gained: np.ndarray, gained_bits: np.ndarray, max_edges_per_node: int,
                 capped: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """One hop of :func:`overlap`: the nodes that ``gained`` seed bits (``gained_bits``) pass them on; adds them
    to ``mask``, the cut hubs to ``capped``; the nodes (sorted) that gain bits now and the bits they gain.

    A hop of one piece uses that piece's reached nodes as they are. A hop of several ORs each piece's bits into
    one row of bits a node (``arrived``, the size of ``mask``): keeping every piece's reached nodes until the
    hop's end held 16 bytes a row reached (300 MB for a hop of an 8M-edge graph), and a graph-sized array for a
    small hop would cost a pass over every node."""
    taken = np.minimum(_note_capped(index, gained, max_edges_per_node, capped), max_edges_per_node)
    pieces = _pieces(taken, OVERLAP_ROWS)
    reach = [(index, mask, dangling, excluded_codes, gained[piece], gained_bits[piece], max_edges_per_node)
             for piece in pieces]
    if len(reach) == 1:
        targets, bits = _reach(*reach[0])
    else:
        arrived = np.zeros_like(mask)
        for arguments in reach:
            piece_targets, piece_bits = _reach(*arguments)
            arrived[piece_targets] |= piece_bits  # distinct within a piece
        targets = np.flatnonzero(arrived.any(axis=1))
        bits = arrived[targets]
    gains = bits & ~mask[targets]
    now = gains.any(axis=1)
    targets, gains = targets[now], gains[now]
    mask[targets] |= gains
    return targets, gains


def _last_overlap_hop(index: CsrIndex, mask: np.ndarray, dangling: list[np.ndarray], excluded_codes: np.ndarray,
                      gained: np.ndarray, gained_bits: np.ndarray, max_edges_per_node: int,
                      capped: dict[int, int], seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """The last hop of :func:`overlap` (of ``seeds`` seeds), as :func:`_overlap_hop` gives it wherever it can make a
    node shared.

    A node shared at the last hop is reached by every seed, so by the seed ``j`` whose frontier is the
    smallest: only ``j`` expands its frontier; every node ``j`` has reached (the zone) then gains each other
    seed's bit where one of its rows leads to that seed's frontier within the frontier node's cap. So the
    rows read are those of the smallest frontier and of the zone, not those of a hub's frontier, which may
    hold most of the graph (intersect(hub, median, k=3) at R-MAT 23 read 132M rows for 358 shared nodes).
    The bits other seeds would pass to nodes outside the zone are never given (no path is traced to them);
    the frontier's edges to ends that are no entity are read from those ends' side."""
    _note_capped(index, gained, max_edges_per_node, capped)
    flags = [_flag(bit) for bit in range(seeds)]
    has = [(gained_bits[:, word] & flag) != 0 for word, flag in flags]
    j = min(range(seeds), key=lambda bit: (int(np.count_nonzero(has[bit])), bit))
    j_bits = _seed_bits(seeds)[j : j + 1]
    frontier = gained[has[j]]
    nodes, bits = [], []
    if len(frontier):
        found, gains = _overlap_hop(index, mask, dangling, excluded_codes, frontier,
                                    np.repeat(j_bits, len(frontier), axis=0), max_edges_per_node, {})
        nodes.append(found)
        bits.append(gains)
    zone = np.flatnonzero((mask[:, flags[j][0]] & flags[j][1]) != 0)
    for bit in range(seeds):
        if bit != j:
            word, flag = flags[bit]
            arrived = _arrivals_from_side(index, zone[(mask[zone, word] & flag) == 0], gained[has[bit]],
                                          max_edges_per_node)
            gains = np.zeros((len(arrived), gained_bits.shape[1]), dtype=SEED_WORD)
            gains[:, word] = flag
            mask[arrived, word] |= flag
            nodes.append(arrived)
            bits.append(gains)
    _mark_dangling(index, dangling, gained, max_edges_per_node)
    return _or_by_node(np.concatenate(nodes), np.concatenate(bits)) if nodes else (gained[:0], gained_bits[:0])


def _note_capped(index: CsrIndex, frontier: np.ndarray, cap: int, capped: dict[int, int]) -> np.ndarray:
    """The degrees of ``frontier``'s nodes; those of more than ``cap`` rows (the hubs a hop cuts) noted in
    ``capped``."""
    degrees: np.ndarray = index.offsets[frontier + 1] - index.offsets[frontier]
    over = degrees > cap
    capped.update(zip(frontier[over].tolist(), degrees[over].tolist(), strict=True))
    return degrees


def _arrivals_from_side(index: CsrIndex, candidates: np.ndarray, frontier: np.ndarray, cap: int) -> np.ndarray:
    """Those of ``candidates`` (sorted) with a row to a node of ``frontier`` within that node's first ``cap`` rows."""
    reached = [node for node, _ in _rows_into(index, candidates, frontier, cap)]
    return _unique(np.concatenate(reached)) if reached else candidates[:0]


def _mark_dangling(index: CsrIndex, dangling: list[np.ndarray], frontier: np.ndarray, cap: int) -> None:
    """Add to ``dangling`` the edges of ``frontier``'s rows within the cap whose other end is no entity, read from
    those ends' rows."""
    dangling.extend(edges for _, edges in _rows_into(index, index.dangling_ends, frontier, cap))


def _rows_into(index: CsrIndex, nodes: np.ndarray, frontier: np.ndarray, cap: int) -> Iterator[tuple[np.ndarray,
                                                                                                    np.ndarray]]:
    """The rows of ``nodes`` (their node, their edge) that a hop from ``frontier`` follows: to a frontier node,
    within its first ``cap`` rows. Read from ``nodes``' side, a piece at a time."""
    if not len(nodes):
        return
    in_frontier = np.zeros(len(index.ids), dtype=bool)
    in_frontier[frontier] = True
    degrees = index.offsets[nodes + 1] - index.offsets[nodes]
    for piece in _pieces(degrees, OVERLAP_ROWS):
        node, edges, _, _ = _gather(index, nodes[piece], int(degrees[piece].max(initial=0)))
        subjects = index.subjects[edges]
        others = np.where(subjects == node, index.objects[edges], subjects)
        hits = in_frontier[others]
        hits[hits] = _within_cap(index, edges[hits], others[hits], cap)
        yield node[hits], edges[hits]


def _within_cap(index: CsrIndex, edges: np.ndarray, ends: np.ndarray, cap: int) -> np.ndarray:
    """Whether each of ``edges`` is among the first ``cap`` rows of its end in ``ends`` (the rows a hop from that
    end follows): a node's rows are in edge order, so whether it is at most the last of them."""
    starts = index.offsets[ends]
    hubs = np.flatnonzero(index.offsets[ends + 1] - starts > cap)
    kept = np.ones(len(ends), dtype=bool)
    kept[hubs] = edges[hubs] <= index.rows[starts[hubs] + (cap - 1)]
    return kept


def _spans(length: int, size: int) -> list[tuple[int, int]]:
    """``range(length)`` as consecutive (start, end) spans of ``size`` (the last shorter)."""
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def _pieces(taken: np.ndarray, rows: int) -> list[slice]:
    """Consecutive slices of a frontier whose rows (``taken`` per node) add up to about ``rows`` each (more when
    one node has more: a node's rows are never split)."""
    ends = np.cumsum(taken)
    bounds = [0]
    while bounds[-1] < len(taken):
        done = int(ends[bounds[-1] - 1]) if bounds[-1] else 0
        bounds.append(max(int(np.searchsorted(ends, done + rows, side="right")), bounds[-1] + 1))
    return [slice(start, end) for start, end in pairwise(bounds)]


def _among(index: CsrIndex, nodes: np.ndarray, is_shared: np.ndarray,
           listed: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """The edges between two of ``nodes`` (flagged by ``is_shared``), counted a piece at a time rather than held
    (held with a flag for every edge, the 10.6M-32M edges among a hub's and a median entity's shared nodes at
    R-MAT 23 brought the call's peak to 172-449 MB; counted, 73-88 MB): their number, their counts by predicate
    code, and those between two of ``listed`` (sorted: the page's edges)."""
    pred_bins = np.zeros(len(index.predicates), dtype=np.int64)
    count, page = 0, []
    on_page = None
    if len(listed):  # nothing listed (count 0: the counts alone): no graph-sized array for nothing
        on_page = np.zeros(len(index.ids), dtype=bool)
        on_page[listed] = True
    for edges in _pieces_among(index, nodes, is_shared):
        count += len(edges)
        pred_bins += np.bincount(index.preds[edges], minlength=len(pred_bins))
        if on_page is not None:
            page.append(edges[on_page[index.subjects[edges]] & on_page[index.objects[edges]]])
    return count, pred_bins, np.concatenate(page) if page else listed[:0]


def _pieces_among(index: CsrIndex, nodes: np.ndarray, is_shared: np.ndarray) -> Iterator[np.ndarray]:
    """The edges between two of ``nodes`` (flagged by ``is_shared``), in order, a piece at a time: from all their
    rows when they have at most :data:`OVERLAP_ROWS`, else by one pass over every edge (their rows' edge numbers,
    each edge twice, and the sort that made them distinct held 16 bytes a row: 250 MB for 7.8M edges)."""
    rows = index.offsets[nodes + 1] - index.offsets[nodes]
    if int(rows.sum()) > OVERLAP_ROWS:
        for start, end in _spans(index.edge_count, OVERLAP_ROWS):
            yield np.flatnonzero(is_shared[index.subjects[start:end]] & is_shared[index.objects[start:end]]) + start
        return
    node, edges, _, _ = _gather(index, nodes, np.iinfo(np.int64).max)
    subjects = index.subjects[edges]
    others = np.where(subjects == node, index.objects[edges], subjects)
    yield _unique(edges[is_shared[others]])


def _reach(
    index: CsrIndex,
    mask: np.ndarray,
    dangling: list[np.ndarray],
    excluded_codes: np.ndarray,
    gained: np.ndarray,
    gained_bits: np.ndarray,
    cap: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One piece of an intersection hop from ``gained``: the nodes its rows reach (seen before, or new and of
    no excluded type; sorted) and the OR of the seed bits each gets; adds the rows' dangling edges to ``dangling``."""
    node, edges, _, taken = _gather(index, gained, cap)
    subjects = index.subjects[edges]
    others = np.where(subjects == node, index.objects[edges], subjects)
    seen = mask[others].any(axis=1)
    codes = index.type_code[others]
    dangling.append(edges[~seen & (codes < 0)])
    going = seen | (codes >= 0)
    if len(excluded_codes):
        going &= seen | ~np.isin(codes, excluded_codes)
    return _or_by_node(others[going], np.repeat(gained_bits, taken, axis=0)[going])


def _seed_paths(
    index: CsrIndex,
    arrivals: _Arrivals,
    seed_index: np.ndarray,
    seeds: list[str],
    traced: np.ndarray,
    limit: int,
    max_edges_per_node: int,
) -> tuple[list[SeedPath], int]:
    """A shortest path from every seed to each traced node, walked back from the node: at every step to the
    first neighbour (by id, then edge) that the seed reached one hop sooner (the rule of the engine's
    :func:`~bfsql.engine.intersect.connections`). Paths through a cut hub's unfollowed edges are not found."""
    wanted = [(int(node), bit) for node in traced.tolist() for bit in range(len(seeds))]
    paths: list[SeedPath] = []
    for node, bit in wanted[:limit]:
        seed = int(seed_index[bit])
        if node == seed:
            continue
        here, steps = node, []
        distance = int(arrivals.distance(np.array([here]), bit)[0])
        while here != seed:
            _, edges, _, _ = _gather(index, np.array([here]), max_edges_per_node)
            subjects = index.subjects[edges]
            others = np.where(subjects == here, index.objects[edges], subjects)
            closer = np.flatnonzero(arrivals.distance(others, bit) == distance - 1)
            if not len(closer):
                break  # the walk went through a hub's edge past the cap: no path to show
            best = closer[np.argmin(others[closer])]  # the first such row: rows are in triple order
            steps.append(int(edges[best]))
            here, distance = int(others[best]), distance - 1
        if here == seed:
            triples = _triples(index, np.array(steps[::-1], dtype=np.int64))
            paths.append(SeedPath(seeds[bit], index.ids[node], triples))
    return paths, max(0, len(wanted) - limit)
