"""The embedded store's graph as arrays: compact, persisted with the store, and traversed where it lies.

Every end of an edge (each visible entity, and each id an edge names that is no entity: a
dangling end) has an index; indexes follow the ids' code-point order, so sorting indexes sorts
ids. The adjacency is CSR: the rows of node ``i`` are ``rows[offsets[i]:offsets[i + 1]]``, edge
numbers in the order of their ``(subject, predicate, object)`` triples (so a hub's first
``max_edges_per_node`` rows are the ones the engine keeps), and the edges are three arrays
(subject, predicate code, object). About 18 bytes an edge and 40 a node (ids and names kept as
UTF-8 blobs), against some 350 bytes an edge for the Python hop index this replaces.

The index is built by ``bfsql load`` and saved in the store (table ``csr_part``), so a server
opens it in a fraction of a second; a store written by an older bfsql has it built when opened.
Processes serving the same file from several graphs share one copy (:func:`shared_index`).

:func:`survey` runs a whole breadth-first traversal on the arrays with numpy, with the engine's
exact rules (hub caps, ``max_nodes``, excluded types, dangling ends), and materialises only the
page of the answer: the cost of a hub's two-hop survey is that of the edges it visits, with no
Python object per edge.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from bfsql.rows import Edge, HopEdge, Neighbourhood, NodeInfo, Overlap, Reached, SeedPath, Survey

__all__ = ["CSR_VERSION", "CsrIndex", "build_index", "load_index", "overlap", "save_index", "shared_index", "survey"]

CSR_VERSION = "1"
"""Format of the saved arrays; a store with another version has its index built when opened."""

PART_BYTES = 128 << 20
"""Largest blob of one saved array part (SQLite's own limit is 1 GB)."""

_VISIBLE = "status IS NOT 'merged'"


class Strings:
    """Many strings as one UTF-8 blob and their offsets: ``strings[i]`` decodes one."""

    __slots__ = ("blob", "offsets")

    def __init__(self, blob: bytes, offsets: np.ndarray) -> None:
        self.blob = blob
        self.offsets = offsets

    @classmethod
    def of(cls, texts: Sequence[str]) -> Strings:
        """The blob of ``texts``."""
        encoded = [t.encode("utf-8") for t in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.blob[self.offsets[i] : self.offsets[i + 1]].decode("utf-8")

    def many(self, indexes: Sequence[int] | np.ndarray) -> list[str]:
        """The strings at ``indexes``."""
        at = np.asarray(indexes, dtype=np.int64)
        blob = self.blob
        return [blob[start:end].decode("utf-8")
                for start, end in zip(self.offsets[at].tolist(), self.offsets[at + 1].tolist(), strict=True)]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


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
    """int32 predicate codes (indexes into ``predicates``), by edge number."""
    id_hashes: np.ndarray
    """uint64, sorted: a 64-bit hash of every id, to find an id's index with one search."""
    hash_index: np.ndarray
    """int32: the index of the id of each sorted hash."""
    spare_marks: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)
    """Cleared visited-mark arrays no walk is using (see :func:`_visited_marks`); not saved."""

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
        wanted = np.fromiter((_hash(i) for i in ids), dtype=np.uint64, count=len(ids))
        at = np.searchsorted(self.id_hashes, wanted)
        found: dict[str, int] = {}
        hashes, size = self.id_hashes, len(self.id_hashes)
        for entity_id, h, position in zip(ids, wanted.tolist(), at.tolist(), strict=True):
            while position < size and int(hashes[position]) == h:  # equal hashes: compare the ids themselves
                index = int(self.hash_index[position])
                if self.ids[index] == entity_id:
                    found[entity_id] = index
                    break
                position += 1
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

    def _hop_rows(self, index: int, edges: np.ndarray) -> list[HopEdge]:
        subjects, objects = self.subjects[edges], self.objects[edges]
        others = np.where(subjects == index, objects, subjects)
        ends = np.unique(np.concatenate([subjects, objects]))
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


def build_index(conn: sqlite3.Connection) -> CsrIndex:
    """The index of the store ``conn`` reads (its visible entities and the edges touching no merged one)."""
    entities: dict[str, tuple[str, str | None]] = {}
    merged: set[str] = set()
    for entity_id, entity_type, name, status in conn.execute(
        "SELECT entity_id, entity_type, name, status FROM entity"
    ):
        if status == "merged":
            merged.add(entity_id)
        else:
            entities[entity_id] = (entity_type, name)
    triples: list[tuple[str, str, str]] = []
    ends = set(entities)
    cursor = conn.execute("SELECT subject_id, predicate, object_id FROM relationship")
    while chunk := cursor.fetchmany(200_000):
        for subject, predicate, obj in chunk:
            if merged and (subject in merged or obj in merged):
                continue
            triples.append((subject, predicate, obj))
            ends.add(subject)
            ends.add(obj)
    return _arrays(entities, sorted(ends), triples)


def _arrays(
    entities: dict[str, tuple[str, str | None]], ids: list[str], triples: list[tuple[str, str, str]]
) -> CsrIndex:
    index_of = {entity_id: i for i, entity_id in enumerate(ids)}
    types = sorted({t for t, _ in entities.values()})
    type_index = {t: i for i, t in enumerate(types)}
    type_code = np.full(len(ids), -1, dtype=np.int16)
    has_name = np.zeros(len(ids), dtype=bool)
    names = [""] * len(ids)
    for entity_id, (entity_type, name) in entities.items():
        i = index_of[entity_id]
        type_code[i] = type_index[entity_type]
        if name is not None:
            names[i], has_name[i] = name, True
    predicates = sorted({p for _, p, _ in triples})
    pred_index = {p: i for i, p in enumerate(predicates)}
    subjects = np.fromiter((index_of[s] for s, _, _ in triples), dtype=np.int32, count=len(triples))
    preds = np.fromiter((pred_index[p] for _, p, _ in triples), dtype=np.int32, count=len(triples))
    objects = np.fromiter((index_of[o] for _, _, o in triples), dtype=np.int32, count=len(triples))
    del index_of, triples
    edge_numbers = np.arange(len(subjects), dtype=np.int32)
    loops = subjects == objects
    node = np.concatenate([subjects, objects[~loops]])
    edge = np.concatenate([edge_numbers, edge_numbers[~loops]])
    # Each node's rows in triple order: the order a hub's cap keeps (subject, then predicate, then object).
    order = np.lexsort((objects[edge], preds[edge], subjects[edge], node))
    rows = edge[order].astype(np.int32)
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(np.bincount(node, minlength=len(ids)), out=offsets[1:])
    hashes = np.fromiter((_hash(i) for i in ids), dtype=np.uint64, count=len(ids))
    by_hash = np.argsort(hashes, kind="stable")
    return CsrIndex(
        ids=Strings.of(ids), names=Strings.of(names), has_name=has_name, type_code=type_code, types=types,
        predicates=predicates, offsets=offsets, rows=rows, subjects=subjects, objects=objects, preds=preds,
        id_hashes=hashes[by_hash], hash_index=by_hash.astype(np.int32),
    )


# -- saving with the store ------------------------------------------------------------------------

_ARRAYS = ("has_name", "type_code", "offsets", "rows", "subjects", "objects", "preds", "id_hashes", "hash_index")
_DDL = "CREATE TABLE IF NOT EXISTS csr_part (name TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, " \
       "PRIMARY KEY (name, part)) WITHOUT ROWID"


def _stamp(conn: sqlite3.Connection) -> str:
    """What the saved index must match: the store's entity and relationship counts."""
    entities = conn.execute("SELECT COUNT(*) FROM entity").fetchone()[0]
    relationships = conn.execute("SELECT COUNT(*) FROM relationship").fetchone()[0]
    return f"{CSR_VERSION}:{entities}:{relationships}"


def save_index(conn: sqlite3.Connection, index: CsrIndex) -> None:
    """Save ``index`` in the store ``conn`` writes (inside its transaction)."""
    conn.execute(_DDL)
    conn.execute("DELETE FROM csr_part")
    blobs: dict[str, bytes] = {name: getattr(index, name).tobytes() for name in _ARRAYS}
    blobs |= {"ids": index.ids.blob, "ids_offsets": index.ids.offsets.tobytes(), "names": index.names.blob,
              "names_offsets": index.names.offsets.tobytes(), "types": "\n".join(index.types).encode("utf-8"),
              "predicates": "\n".join(index.predicates).encode("utf-8")}
    for name, blob in blobs.items():
        parts = [blob[start : start + PART_BYTES] for start in range(0, len(blob), PART_BYTES)] or [b""]
        conn.executemany("INSERT INTO csr_part (name, part, data) VALUES (?, ?, ?)",
                         [(name, i, part) for i, part in enumerate(parts)])
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('csr', ?)", (_stamp(conn),))


_DTYPES = {"has_name": np.bool_, "type_code": np.int16, "offsets": np.int64, "rows": np.int32, "subjects": np.int32,
           "objects": np.int32, "preds": np.int32, "id_hashes": np.uint64, "hash_index": np.int32,
           "ids_offsets": np.int64, "names_offsets": np.int64}


def load_index(conn: sqlite3.Connection) -> CsrIndex | None:
    """The index saved in the store, or None when there is none or it does not match the store."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'csr'").fetchone()
    if row is None or row[0] != _stamp(conn):
        return None
    blobs: dict[str, list[bytes]] = {}
    for name, data in conn.execute("SELECT name, data FROM csr_part ORDER BY name, part"):
        blobs.setdefault(name, []).append(data)
    whole = {name: b"".join(parts) for name, parts in blobs.items()}
    arrays: dict[str, Any] = {name: np.frombuffer(whole[name], dtype=dtype) for name, dtype in _DTYPES.items()}

    def listed(name: str) -> list[str]:
        text = whole[name].decode("utf-8")
        return text.split("\n") if text else []

    return CsrIndex(
        ids=Strings(whole["ids"], arrays.pop("ids_offsets")),
        names=Strings(whole["names"], arrays.pop("names_offsets")),
        types=listed("types"), predicates=listed("predicates"), **arrays,
    )


_shared: weakref.WeakValueDictionary[tuple[Any, ...], CsrIndex] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()



def shared_index(path: Path, conn: sqlite3.Connection) -> tuple[CsrIndex, bool]:
    """The index of the store at ``path``, shared by every graph of this process that serves the same file.

    Loaded from the store when it was saved there, else built (a store from an older bfsql).
    Returns the index and whether it was saved in the store.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    with _shared_lock:
        index = _shared.get(key)
        if index is not None:
            return index, True
        loaded = load_index(conn)
        index = loaded if loaded is not None else build_index(conn)
        _shared[key] = index
        return index, loaded is not None


# -- the traversal --------------------------------------------------------------------------------


def _gather(index: CsrIndex, frontier: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first ``cap`` rows of every frontier node: (row's node, edge number), and the degrees and starts."""
    starts = index.offsets[frontier]
    degrees = index.offsets[frontier + 1] - starts
    taken = np.minimum(degrees, cap)
    total = int(taken.sum())
    firsts = np.cumsum(taken) - taken
    positions = np.repeat(starts - firsts, taken) + np.arange(total, dtype=np.int64)
    return np.repeat(frontier, taken), index.rows[positions], degrees, taken


def survey(
    index: CsrIndex,
    seeds: Sequence[str],
    hops: int,
    max_nodes: int,
    max_edges_per_node: int,
    exclude_types: Iterable[str],
    offset: int,
    count: int,
) -> Survey:
    """A whole traversal on the arrays (the traverse primitive): its counts, cuts, schema, and one listed page.

    The same rules as the hop-by-hop engine (:func:`bfsql.engine.traverse.expand`): every seed
    at distance 0; each hop expands the last level's nodes, a hub's first ``max_edges_per_node``
    rows only; an edge to a node reached before is kept, one to a new node keeps it unless
    its type is excluded (an end that is no entity is dangling); when ``max_nodes`` would be
    passed, the new nodes kept are the first by id and the walk stops there.
    """
    known = index.find(list(dict.fromkeys(seeds)))
    starts = sorted({i for i in known.values() if index.type_code[i] >= 0})
    unknown = [s for s in dict.fromkeys(seeds) if s not in known or index.type_code[known[s]] < 0]
    levels = [np.array(starts, dtype=np.int64)]
    with _visited_marks(index) as visited:
        return _walk(index, visited, levels, unknown, hops, max_nodes, max_edges_per_node, exclude_types, offset,
                     count)


@contextmanager
def _visited_marks(index: CsrIndex) -> Iterator[np.ndarray]:
    """A cleared bool array, one flag per node, to mark what a walk visits; the walk un-marks what it marked.

    Walks reuse these (allocating and clearing one per walk would cost what the graph's size
    costs, not what the answer's does); concurrent walks each get their own.
    """
    with _shared_lock:
        marks = index.spare_marks.pop() if index.spare_marks else np.zeros(len(index.ids), dtype=bool)
    try:
        yield marks
    except BaseException:
        marks[:] = False  # a walk that failed midway may leave marks
        raise
    finally:
        with _shared_lock:
            index.spare_marks.append(marks)


def _walk(
    index: CsrIndex,
    visited: np.ndarray,
    levels: list[np.ndarray],
    unknown: list[str],
    hops: int,
    max_nodes: int,
    max_edges_per_node: int,
    exclude_types: Iterable[str],
    offset: int,
    count: int,
) -> Survey:
    """:func:`survey`'s walk from ``levels[0]`` with ``visited`` cleared; leaves it cleared."""
    kept_parts: list[np.ndarray] = []
    excluded_codes = np.array([index.types.index(t) for t in exclude_types if t in index.types], dtype=np.int16)
    excluded_types: set[int] = set()
    excluded_preds: set[int] = set()
    capped: dict[int, int] = {}
    dangling = nodes_cut = 0
    visited[levels[0]] = True
    reached = len(levels[0])
    for _ in range(hops):
        frontier = levels[-1]
        if not len(frontier):
            break
        node, edges, degrees, taken = _gather(index, frontier, max_edges_per_node)
        capped.update(zip(frontier[degrees > taken].tolist(), degrees[degrees > taken].tolist(), strict=True))
        subjects = index.subjects[edges]
        others = np.where(subjects == node, index.objects[edges], subjects)
        seen = visited[others]
        kept_parts.append(edges[seen])
        codes = index.type_code[others]
        fresh = ~seen & (codes >= 0)
        dangling += int(np.count_nonzero(~seen & (codes < 0)))
        if len(excluded_codes):
            excluded = fresh & np.isin(codes, excluded_codes)
            excluded_types.update(np.unique(codes[excluded]).tolist())
            excluded_preds.update(np.unique(index.preds[edges[excluded]]).tolist())
            fresh &= ~excluded
        new = np.unique(others[fresh])
        room = max_nodes - reached
        if len(new) > room:
            nodes_cut += len(new) - room
            new = new[: max(room, 0)]
        visited[new] = True
        reached += len(new)
        candidates = edges[fresh]
        kept_parts.append(candidates[visited[others[fresh]]])
        levels.append(new)
        if nodes_cut:
            break
    order = np.concatenate(levels)
    visited[order] = False
    kept_edges = np.unique(np.concatenate(kept_parts)) if kept_parts else np.zeros(0, dtype=np.int64)
    types = set(np.unique(index.type_code[order]).tolist()) | excluded_types
    preds = set(np.unique(index.preds[kept_edges]).tolist()) | excluded_preds
    listed = order[offset : offset + count]
    later = np.maximum(_positions(order, index.subjects[kept_edges]), _positions(order, index.objects[kept_edges]))
    page_edges = kept_edges[(later >= offset) & (later < offset + len(listed))]
    distance = np.concatenate([np.full(len(level), hop) for hop, level in enumerate(levels)])[offset : offset + count]
    return Survey(
        node_count=len(order),
        edge_count=len(kept_edges),
        page=_listed(index, listed, distance),
        edges=_triples(index, page_edges),
        entity_types=sorted(index.types[c] for c in types),
        predicates=sorted(index.predicates[p] for p in preds),
        unknown_seeds=unknown,
        capped=dict(zip(index.ids.many(list(capped)), capped.values(), strict=True)),
        nodes_cut=nodes_cut,
        dangling_edges=dangling,
    )


def _positions(order: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The position in ``order`` of each of ``nodes`` (all of which are in it), in time that grows with them."""
    sorter = np.argsort(order, kind="stable")
    return sorter[np.searchsorted(order, nodes, sorter=sorter)]


def _listed(index: CsrIndex, nodes: np.ndarray, distance: np.ndarray) -> list[Reached]:
    """The nodes as an answer lists them (a few thousand at most: what an answer can show), as plain tuples."""
    names: list[str | None] = list(index.names.many(nodes))
    for unnamed in np.flatnonzero(~index.has_name[nodes]).tolist():
        names[unnamed] = None
    types = list(map(index.types.__getitem__, index.type_code[nodes].tolist()))
    return list(zip(index.ids.many(nodes), types, names, distance.tolist(), strict=True))  # type: ignore[arg-type]


def _triples(index: CsrIndex, edges: np.ndarray) -> list[Edge]:
    """The edges as plain (subject, predicate, object) tuples."""
    subjects, objects = index.subjects[edges], index.objects[edges]
    ends = np.unique(np.concatenate([subjects, objects]))
    id_of = dict(zip(ends.tolist(), index.ids.many(ends), strict=True)).__getitem__
    preds = map(index.predicates.__getitem__, index.preds[edges].tolist())
    return list(zip(map(id_of, subjects.tolist()), preds, map(id_of, objects.tolist()), strict=True))  # type: ignore[arg-type]


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
        word, flag = bit // 64, np.uint64(1 << (bit % 64))
        for hop, (level_nodes, level_bits) in enumerate(self.levels):
            if not len(level_nodes):
                continue
            at = np.minimum(np.searchsorted(level_nodes, nodes), len(level_nodes) - 1)
            arrived = (level_nodes[at] == nodes) & ((level_bits[at, word] & flag) != 0) & (found < 0)
            found[arrived] = hop
        return found


def overlap(
    index: CsrIndex,
    seeds: Sequence[str],
    k: int,
    max_nodes: int,
    max_edges_per_node: int,
    exclude_types: Iterable[str],
    count: int,
    path_nodes: int,
    path_limit: int,
) -> Overlap:
    """An intersection walk on the arrays (the intersect primitive): every seed walks at once, one bit each.

    The rules of :func:`bfsql.engine.intersect.reach_all`: each hop expands the nodes that
    gained seed bits, a hub's first ``max_edges_per_node`` rows only, passing those bits on; a
    new node of an excluded type is not visited, an end that is no entity is dangling; when
    ``max_nodes`` would be passed, the new nodes kept are the first by id (the walk goes on).
    A node is shared once every seed's bit has reached it; the edges among shared nodes are all
    their edges (no cap).
    """
    found = index.find(list(seeds))
    seed_index = np.array([found[s] for s in seeds], dtype=np.int64)
    words = (len(seeds) + 63) // 64
    seed_bits = np.zeros((len(seeds), words), dtype=np.uint64)
    for bit in range(len(seeds)):
        seed_bits[bit, bit // 64] = np.uint64(1 << (bit % 64))
    everyone = np.bitwise_or.reduce(seed_bits, axis=0)
    size = len(index.ids)
    mask = np.zeros((size, words), dtype=np.uint64)
    mask[seed_index] = seed_bits
    shared_at = np.full(size, -1, dtype=np.int64)
    dangling = np.zeros(index.edge_count, dtype=bool)
    excluded_codes = np.array([index.types.index(t) for t in exclude_types if t in index.types], dtype=np.int16)
    arrivals = _Arrivals()
    arrivals.add(seed_index, seed_bits)
    capped: dict[int, int] = {}
    visited, nodes_cut = len(seeds), 0
    gained, gained_bits = seed_index, seed_bits
    for hop in range(1, k + 1):
        if not len(gained):
            break
        node, edges, degrees, taken = _gather(index, gained, max_edges_per_node)
        capped.update(zip(gained[degrees > taken].tolist(), degrees[degrees > taken].tolist(), strict=True))
        row_bits = np.repeat(gained_bits, taken, axis=0)
        subjects = index.subjects[edges]
        others = np.where(subjects == node, index.objects[edges], subjects)
        seen = mask[others].any(axis=1)
        codes = index.type_code[others]
        dangling[edges[~seen & (codes < 0)]] = True
        fresh = ~seen & (codes >= 0)
        if len(excluded_codes):
            fresh &= ~np.isin(codes, excluded_codes)
        targets, bits = _or_by_node(others[seen | fresh], row_bits[seen | fresh])
        before = mask[targets]
        old = before.any(axis=1)
        gains = bits & ~before
        more = old & gains.any(axis=1)
        newcomers, newcomer_bits = targets[~old], bits[~old]
        room = max_nodes - visited
        if len(newcomers) > room:
            nodes_cut += len(newcomers) - room
            newcomers, newcomer_bits = newcomers[: max(room, 0)], newcomer_bits[: max(room, 0)]
        mask[targets[more]] |= gains[more]
        mask[newcomers] = newcomer_bits
        visited += len(newcomers)
        gained = np.concatenate([targets[more], newcomers])
        gained_bits = np.concatenate([gains[more], newcomer_bits])
        arrivals.add(gained, gained_bits)
        complete = (mask[gained] == everyone).all(axis=1) & (shared_at[gained] < 0)
        shared_at[gained[complete]] = hop
    shared = np.flatnonzero(shared_at >= 0)
    order = shared[np.lexsort((shared, shared_at[shared]))]
    is_shared = shared_at >= 0
    node, edges, _, _ = _gather(index, order, np.iinfo(np.int64).max)
    subjects = index.subjects[edges]
    others = np.where(subjects == node, index.objects[edges], subjects)
    among = np.unique(edges[is_shared[others]])
    listed = order[:count]
    position = np.full(size, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    later = np.maximum(position[index.subjects[among]], position[index.objects[among]])
    paths, left_out = _seed_paths(index, arrivals, seed_index, list(seeds), order[:path_nodes], path_limit,
                                  max_edges_per_node)
    return Overlap(
        node_count=len(order),
        edge_count=len(among),
        page=_listed(index, listed, shared_at[listed]),
        edges=_triples(index, among[later < len(listed)]),
        entity_types=sorted({index.types[c] for c in np.unique(index.type_code[order]).tolist()}),
        predicates=sorted({index.predicates[p] for p in np.unique(index.preds[among]).tolist()}),
        paths=paths,
        paths_left_out=left_out,
        capped=dict(zip(index.ids.many(list(capped)), capped.values(), strict=True)),
        nodes_cut=nodes_cut,
        dangling_edges=int(np.count_nonzero(dangling)),
    )


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
