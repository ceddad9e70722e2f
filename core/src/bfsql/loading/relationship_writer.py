"""Writing a fresh load's relationships in another process, into a side store, while the loader builds the rest.

Writing millions of relationships into SQLite takes one connection some 1.5 µs a row, and one
SQLite file has one writer at a time. So when a load fills an empty relationship table, a
:class:`SideWriter` process writes those rows into a side store of their own (the same table,
made by the same statement), while the loading process builds the search labels, the
full-text indexes and the array index of the store. :meth:`SideWriter.copy_into` then moves
the table into the store with one ``INSERT INTO relationship SELECT * FROM side.relationship``:
SQLite copies the records of an identical table into an empty one as they are, in order,
without decoding them (its transfer optimisation), some seven times faster than writing them.

The side store lives next to the store's temporary copy (``.<name>.*.loading``, so a stray one
is recognised and removed like it); :meth:`SideWriter.close` stops the process and removes the
file, and the process gives up by itself, removing it, when the loading process is gone.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bfsql.loading.helper_process import HelperProcess

__all__ = ["MIN_ROWS", "SideStore", "SideWriter"]

MIN_ROWS = 250_000
"""Fewest rows worth a side process (starting it and copying its rows cost some 0.4 s)."""

BATCH = 50_000
"""Rows per ``executemany`` call in the side process."""

_SIDE = "bfsql_side"
"""The side store's name while it is attached to the store."""


def _write(
    path: Path, table: str, ids: list[str], predicates: list[str], rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    parent: int,
) -> None:
    """The side process: the table and its rows (``ids[subjects[k]], predicates[preds[k]], ids[objects[k]]``, in
    key order and distinct)."""
    subjects, preds, objects = rows
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")
        conn.execute(table)
        conn.execute("BEGIN")
        insert = "INSERT INTO relationship (subject_id, predicate, object_id) VALUES (?, ?, ?)"
        for start in range(0, len(subjects), BATCH):
            if os.getppid() != parent:  # the loading process is gone: nobody will copy or remove the file
                conn.close()
                path.unlink(missing_ok=True)
                return
            end = start + BATCH
            conn.executemany(insert, [
                (ids[s], predicates[p], ids[o])
                for s, p, o in zip(subjects[start:end].tolist(), preds[start:end].tolist(),
                                   objects[start:end].tolist(), strict=True)
            ])
        conn.execute("COMMIT")
    finally:
        conn.close()


@dataclass(frozen=True)
class SideStore:
    """Where a side store goes, and the statement that made the store's relationship table."""

    path: Path
    table: str


class SideWriter:
    """A process writing relationships into the side store ``path`` (see the module)."""

    def __init__(
        self, side: SideStore, ids: list[str], predicates: list[str], rows: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> None:
        """Start writing ``rows`` (subject, predicate and object codes into ``ids`` and ``predicates``, in key order,
        each triple once) into the side store ``side``."""
        self.path = side.path
        self._process = HelperProcess(
            _write, side.path, side.table, ids, predicates, rows, os.getpid()
        )

    def copy_into(self, conn: sqlite3.Connection) -> None:
        """Wait for the side store, then copy its relationships into the empty table of ``conn`` (without indexes).

        ``conn`` is in a transaction, which this commits and begins again (SQLite attaches a
        database only between transactions); the store's copy is private until it is renamed,
        so nothing sees the store in between.
        """
        self._process.result()
        conn.execute("COMMIT")
        conn.execute(f"ATTACH DATABASE ? AS {_SIDE}", (str(self.path),))
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO main.relationship SELECT * FROM {_SIDE}.relationship")
        conn.execute("COMMIT")
        conn.execute(f"DETACH DATABASE {_SIDE}")
        conn.execute("BEGIN")

    def close(self) -> None:
        """Stop the process if it still runs, and remove the side store."""
        self._process.stop()
        self.path.unlink(missing_ok=True)
