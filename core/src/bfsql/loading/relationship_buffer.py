"""A load's relationships, held as integer codes while the sources are read and written at the end in key order.

Upserting relationships one by one in the order of the sources costs a B-tree search and
often a page split per row, in the table and in its index by object; rows in key order are
appended instead. So the loader gives every relationship to a :class:`RelationshipBuffer`:
its triple as three int32 codes (each id and predicate kept once), and a relationship with
more than its triple (confidence, source documents, properties) also as a row of a
temporary table. :meth:`RelationshipBuffer.write` then sorts the codes by the ids' code-point
order, which is SQLite's order of the primary key, keeps the last relationship of each
triple ("later wins", as writing them one by one would), and upserts them in that order.
The sorted codes are also the store's relationships for the array index (:mod:`bfsql.csr`)
when the store had none before.

A big load into an empty table has the rows with nothing but their triple written by another
process, into a side store copied in afterwards (:mod:`bfsql.loading.relationship_writer`):
:meth:`RelationshipBuffer.write` hands them over and returns, :meth:`RelationshipBuffer.finish`
copies them and writes the rest.

Memory: 12 bytes and a flag per relationship read, plus each distinct id once.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bfsql.csr import Edges
from bfsql.loading.id_codes import CodedRelationships, IdCodes
from bfsql.loading.progress import LoadProgress
from bfsql.loading.relationship_writer import SideStore, SideWriter

__all__ = ["RelationshipBuffer"]

WRITE_BATCH = 50_000
"""Relationships per write call (and progress step)."""

_TRIPLE_COLUMNS = "subject_id, predicate, object_id"
_UPDATE = (
    f"ON CONFLICT ({_TRIPLE_COLUMNS}) DO UPDATE SET confidence = excluded.confidence, "
    "source_documents = excluded.source_documents, properties = excluded.properties"
)
_UPSERT_TRIPLE = f"INSERT INTO relationship ({_TRIPLE_COLUMNS}) VALUES (?, ?, ?) {_UPDATE}"
"""A relationship with nothing but its triple: the other columns take their defaults."""
_EXTRA_DDL = (
    "CREATE TEMP TABLE relationship_extra (row INTEGER PRIMARY KEY, subject_id TEXT, predicate TEXT, "
    "object_id TEXT, confidence REAL, source_documents TEXT, properties TEXT)"
)


class RelationshipBuffer:
    """The relationships of one load, in the order read (see the module)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.codes = IdCodes()
        """The codes of the ids and predicates read (rows coded elsewhere come in these codes)."""
        self._subjects, self._preds, self._objects = array("i"), array("i"), array("i")
        self._extra = bytearray()
        """1 for a relationship with more than its triple (a row of ``relationship_extra``)."""
        self._pending: list[tuple[object, ...]] = []
        self._has_extra_table = False
        self._side: SideWriter | None = None
        self._side_rows = 0
        """Rows the side process writes (copied in by :meth:`finish`), and those they replaced: the write's progress
        when they are in."""
        self._extra_rows = 0
        """Rows with more than their triple, kept to be written."""

    def __len__(self) -> int:
        return len(self._subjects)

    def add(self, subject: str, predicate: str, obj: str) -> None:
        """A relationship with nothing but its triple."""
        self.extend([(subject, predicate, obj)])

    def extend(self, triples: Sequence[tuple[str, str, str]]) -> None:
        """Relationships with nothing but their triples, in the order read."""
        self.codes.code(triples, self._subjects, self._preds, self._objects)
        self._extra.extend(bytes(len(triples)))

    def extend_codes(self, coded: CodedRelationships) -> None:
        """Relationships with nothing but their triples, coded already (in :attr:`codes`), in the order read."""
        self._subjects.frombytes(coded.subjects.astype(np.int32, copy=False).tobytes())
        self._preds.frombytes(coded.preds.astype(np.int32, copy=False).tobytes())
        self._objects.frombytes(coded.objects.astype(np.int32, copy=False).tobytes())
        self._extra.extend(bytes(len(coded)))

    def add_row(self, row: tuple[str, str, str, float | None, str, str]) -> None:
        """A relationship as its columns (triple, confidence, source documents and properties as JSON)."""
        subject, predicate, obj, confidence, documents, properties = row
        if confidence is None and documents == "[]" and properties == "{}":
            self.add(subject, predicate, obj)
            return
        self._pending.append((len(self._subjects), *row))
        self.add(subject, predicate, obj)
        self._extra[-1] = 1
        if len(self._pending) >= WRITE_BATCH:
            self._flush_extra()

    def _flush_extra(self) -> None:
        if not self._has_extra_table:
            self._conn.execute("DROP TABLE IF EXISTS temp.relationship_extra")
            self._conn.execute(_EXTRA_DDL)
            self._has_extra_table = True
        self._conn.executemany("INSERT INTO temp.relationship_extra VALUES (?, ?, ?, ?, ?, ?, ?)", self._pending)
        self._pending.clear()

    def write(self, progress: LoadProgress, side: SideStore | None = None) -> Edges:
        """Upsert every relationship in key order, the last of each triple; the edges written, in triple order.

        With ``side`` (the table is empty), the rows with nothing but their triple go to a side
        process instead, and :meth:`finish` writes them and the others.
        """
        if self._pending:
            self._flush_extra()
        names, predicate_names = list(self.codes.ids), list(self.codes.predicates)
        ends, id_rank = _ranks(names)
        predicates, pred_rank = _ranks(predicate_names)
        codes = [np.frombuffer(a, dtype=np.int32) for a in (self._subjects, self._preds, self._objects)]
        subjects, preds, objects = id_rank[codes[0]], pred_rank[codes[1]], id_rank[codes[2]]
        order = _key_order(subjects, preds, objects, len(names), len(predicate_names))
        subjects, preds, objects = subjects[order], preds[order], objects[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = (subjects[1:] != subjects[:-1]) | (preds[1:] != preds[:-1]) | (objects[1:] != objects[:-1])
        kept = order[last]
        extra = np.frombuffer(self._extra, dtype=np.uint8).astype(bool)
        if extra.any():
            replaced = np.ones(len(extra), dtype=bool)
            replaced[kept] = False
            gone = np.flatnonzero(replaced & extra).tolist()
            self._conn.executemany("DELETE FROM temp.relationship_extra WHERE row = ?", ((row,) for row in gone))
        superseded = len(order) - len(kept)  # rows replaced by a later one: done when the others are
        plain = kept[~extra[kept]]
        self._extra_rows = int(np.count_nonzero(extra[kept]))
        if side is None:
            progress.advance(superseded)
            self._upsert_triples(_triples(names, predicate_names, codes, plain), progress)
            self._write_extra(progress)
        else:
            self._side = SideWriter(side, names, predicate_names, (codes[0][plain], codes[1][plain], codes[2][plain]))
            self._side_rows = len(plain) + superseded
        return Edges(ends, predicates, subjects[last], preds[last], objects[last])

    def finish(self, progress: LoadProgress) -> None:
        """Copy in the rows of the side store (once written) and write those with more than their triple."""
        if self._side is not None:
            self._side.copy_into(self._conn)
            progress.advance(self._side_rows)
            self.close()
        self._write_extra(progress)

    def close(self) -> None:
        """Stop the side process, if any, and remove its store."""
        if self._side is not None:
            self._side.close()
            self._side = None

    def _write_extra(self, progress: LoadProgress) -> None:
        if not self._has_extra_table:
            return
        self._conn.execute(
            f"INSERT INTO relationship ({_TRIPLE_COLUMNS}, confidence, source_documents, properties) "
            f"SELECT {_TRIPLE_COLUMNS}, confidence, source_documents, properties FROM temp.relationship_extra "
            f"WHERE true ORDER BY {_TRIPLE_COLUMNS} {_UPDATE}"
        )
        progress.advance(self._extra_rows)
        self._conn.execute("DROP TABLE temp.relationship_extra")
        self._has_extra_table = False

    def _upsert_triples(self, triples: Iterator[list[tuple[str, str, str]]], progress: LoadProgress) -> None:
        for batch in triples:
            self._conn.executemany(_UPSERT_TRIPLE, batch)
            progress.advance(len(batch))


def _ranks(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """The texts sorted (code-point order, as SQLite sorts UTF-8), and each text's position among them."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    ranks = np.empty(len(texts), dtype=np.int32)
    ranks[order] = np.arange(len(texts), dtype=np.int32)
    return [texts[i] for i in order], ranks


def _key_order(subjects: np.ndarray, preds: np.ndarray, objects: np.ndarray, ids: int, predicates: int) -> np.ndarray:
    """The rows sorted by (subject, predicate, object) ranks, each triple's rows in the order read (stable)."""
    if ids * predicates * ids < 1 << 62:  # one packed key sorts faster than three
        key = (subjects.astype(np.int64) * predicates + preds) * ids + objects
        return np.argsort(key, kind="stable")
    return np.lexsort((objects, preds, subjects))


def _triples(
    names: list[str], predicates: list[str], codes: Iterable[np.ndarray], rows: np.ndarray
) -> Iterator[list[tuple[str, str, str]]]:
    subjects, preds, objects = codes
    for start in range(0, len(rows), WRITE_BATCH):
        part = rows[start : start + WRITE_BATCH]
        yield [
            (names[s], predicates[p], names[o])
            for s, p, o in zip(subjects[part].tolist(), preds[part].tolist(), objects[part].tolist(), strict=True)
        ]
