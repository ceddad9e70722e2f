"""Arrays saved in a store as blobs cut into parts: the array index (``csr_part``) and the vector codes
(``vector_part``), each a table of ``(name, part, data)`` rows with a CRC-32 over every name and part.

A blob is cut only where SQLite would refuse it (a value over 1,000,000,000 bytes), since reading an array of
several parts copies them into one: at R-MAT 23 the index's 504 MB of rows in 128 MB parts, joined, took 5 of the
11 s its arrays took to read. An array of one part is its blob as SQLite handed it over.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

__all__ = ["PART_BYTES", "TABLES", "read_parts", "save_parts"]

PART_BYTES = 512 << 20
"""Largest blob of one saved part (SQLite's own limit is 1,000,000,000 bytes)."""
TABLES = frozenset({"csr_part", "vector_part"})
"""The tables of parts (their names are written into statements, so only these)."""


def _table(name: str) -> str:
    if name not in TABLES:
        raise ValueError(f"no table of saved parts is named {name!r}")
    return name


def save_parts(conn: sqlite3.Connection, table: str, blobs: Mapping[str, bytes]) -> int:
    """Insert every blob of ``blobs`` into ``table`` (of this module's shape), in parts; their checksum."""
    checksum = 0
    for name in sorted(blobs):
        blob = blobs[name]
        parts = [blob[start : start + PART_BYTES] for start in range(0, len(blob), PART_BYTES)] or [b""]
        conn.executemany(f"INSERT INTO {_table(table)} (name, part, data) VALUES (?, ?, ?)",
                         [(name, i, part) for i, part in enumerate(parts)])
        checksum = zlib.crc32(name.encode("utf-8"), checksum)
        for part in parts:
            checksum = zlib.crc32(part, checksum)
    return checksum


def read_parts(conn: sqlite3.Connection, table: str) -> tuple[dict[str, bytes | np.ndarray], int | None]:
    """Each blob saved in ``table`` (its bytes when saved in one part, else its parts read one after another into
    one uint8 array) and the checksum of them all, as :func:`save_parts` gave it; None when a part is not a blob (or
    does not fit the length its table gives), which only a damaged store holds.

    A store in a file (read outside a transaction) has about half the bytes read on a second connection of their own
    meanwhile: SQLite lets go of the GIL while it reads, and R-MAT 23's 1.56 GB index took 1.8 s on one connection.
    """
    sizes = {name: int(size) for name, size in
             conn.execute(f"SELECT name, SUM(length(data)) FROM {_table(table)} GROUP BY name")}
    halves: tuple[list[str], list[str]] = ([], [])
    for name in sorted(sizes, key=sizes.__getitem__, reverse=True):  # the biggest first, each to the lighter half
        min(halves, key=lambda half: sum(sizes[n] for n in half)).append(name)
    blobs: dict[str, bytes | np.ndarray] = {}
    path = "" if conn.in_transaction else next(  # another connection would not see this one's writes
        (row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    with ThreadPoolExecutor(max_workers=1) as other:
        elsewhere = other.submit(_read_elsewhere, path, table, halves[1], sizes) if path and halves[1] else None
        sound = _read_into(conn, table, halves[0] if elsewhere else [*halves[0], *halves[1]], sizes, blobs)
        if elsewhere is not None:
            read, sound_there = elsewhere.result()
            blobs.update(read)
            sound = sound and sound_there
    if not sound:
        return blobs, None
    checksum = 0
    for name, blob in sorted(blobs.items()):
        checksum = zlib.crc32(name.encode("utf-8"), checksum)
        checksum = zlib.crc32(blob if isinstance(blob, bytes) else blob.data, checksum)
    return blobs, checksum


def _read_elsewhere(path: str, table: str, names: list[str], sizes: dict[str, int]
                    ) -> tuple[dict[str, bytes | np.ndarray], bool]:
    """:func:`_read_into` on a read-only connection of its own to the store at ``path``."""
    conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True)
    try:
        blobs: dict[str, bytes | np.ndarray] = {}
        return blobs, _read_into(conn, table, names, sizes, blobs)
    finally:
        conn.close()


def _read_into(conn: sqlite3.Connection, table: str, names: list[str], sizes: dict[str, int],
               blobs: dict[str, bytes | np.ndarray]) -> bool:
    """Read the blobs ``names`` of ``table`` into ``blobs``; whether every part was a blob within its length.

    One pass over the table, its other blobs left unread: a search by name compares whole rows of a
    ``WITHOUT ROWID`` table, blobs and all (R-MAT 23's 505 MB of rows took 1.4 s so, against 1.6 s for all 1.56 GB
    in one pass).
    """
    chosen, filled = set(names), dict.fromkeys(names, 0)
    marks = ",".join("?" * len(names))
    for name, data in conn.execute(f"SELECT name, CASE WHEN name IN ({marks}) THEN data END FROM {_table(table)} "
                                   "ORDER BY name, part", names):
        if name not in chosen:
            continue
        whole = sizes[name]
        if not isinstance(data, bytes) or filled[name] + len(data) > whole:
            return False
        if name not in blobs:
            blobs[name] = data if len(data) == whole else np.empty(whole, dtype=np.uint8)
        target = blobs[name]
        if isinstance(target, np.ndarray):
            target[filled[name] : filled[name] + len(data)] = np.frombuffer(data, dtype=np.uint8)
        filled[name] += len(data)
    return True
