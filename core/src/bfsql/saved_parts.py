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
    """Each blob saved in ``table`` (its bytes when saved in one part, else its parts read one at a time into one
    uint8 array) and the checksum of them all, as :func:`save_parts` gave it; None when a part is not a blob (or
    does not fit the length its table gives), which only a damaged store holds."""
    sizes = dict(conn.execute(f"SELECT name, SUM(length(data)) FROM {_table(table)} GROUP BY name"))
    blobs: dict[str, bytes | np.ndarray] = {}
    checksum, filled, last = 0, 0, None
    for name, data in conn.execute(f"SELECT name, data FROM {_table(table)} ORDER BY name, part"):
        if not isinstance(data, bytes):
            return blobs, None
        whole = int(sizes[name])
        if name != last:
            checksum, filled, last = zlib.crc32(name.encode("utf-8"), checksum), 0, name
            blobs[name] = data if len(data) == whole else np.empty(whole, dtype=np.uint8)
        if filled + len(data) > whole:
            return blobs, None
        target = blobs[name]
        if isinstance(target, np.ndarray):
            target[filled : filled + len(data)] = np.frombuffer(data, dtype=np.uint8)
        filled += len(data)
        checksum = zlib.crc32(data, checksum)
    return blobs, checksum
