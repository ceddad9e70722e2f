"""Entity vectors found by sign bits the server holds, and scored exactly by PostgreSQL.

``bfsql postgres load`` saves, beside ``entity.embedding``, the sign bit of every component of
each visible entity's vector (``binary_quantize``), rows ordered by type, then id: a row's
entity, type and bits in ``bfsql_vector_row`` (one pass over ``entity``), the codes of every row
read back from there into ``bfsql_vector_part`` (parts of :data:`PART_BYTES`), and a stamp in
``bfsql_meta`` (key :data:`STAMP_KEY`: rows, words a row, kind, dimension, and a digest of the
codes). A server reads the parts once, in the background, and answers a vector search as the
SQLite store does (:mod:`bfsql.vectors`: 32-48 bytes an entity for 256 dimensions): the candidates
are chosen in memory, then PostgreSQL scores those rows' own vectors exactly (the cosine
distance of ``entity.embedding``, as an exact scan would) in one statement that reads them by
row number. No HNSW index is built: it took 214 of the 264 s of loading R-MAT 20's million
entities, and answered with a lower recall (docs/search.md).

A statement-level trigger on ``entity`` deletes the stamp whenever anything but a load (which
saves the codes again at its end) inserts, updates or deletes entities. A server whose stamp is
gone or changed searches by SQL (an exact scan), and reads the new codes once the stamp is back.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

import asyncpg
import numpy as np

from bfsql import VectorIndex
from bfsql_postgres.stamps import stale_trigger_statements

__all__ = [
    "CODES_TRIGGER", "PART_BYTES", "STAMP_KEY", "STAMP_SQL", "SavedCodes", "codes_statements", "drop_codes",
    "read_codes", "save_codes",
]

STAMP_KEY = "vector_codes"
"""The key of the codes' stamp in ``bfsql_meta``."""
CODES_TRIGGER = "bfsql_vector_codes_stale"
"""The trigger on ``entity`` that deletes the stamp (and the function it runs)."""
STAMP_SQL = f"SELECT value FROM bfsql_meta WHERE key = '{STAMP_KEY}'"
"""The codes' stamp (no row when there are none, or when the entities were written since they were saved)."""
PART_BYTES = 1 << 25
"""Bytes of codes a ``bfsql_vector_part`` row holds (a value under PostgreSQL's 1 GB; a few parts at 8M entities)."""
SAMPLE = 1000
"""Vectors looked at to tell whether any has a negative component (see :attr:`bfsql.vectors.VectorIndex.sets`)."""

_VISIBLE = "e.embedding IS NOT NULL AND e.status IS DISTINCT FROM 'merged'"
_ORDER = 'e.entity_type COLLATE "C", e.entity_id COLLATE "C"'


def codes_statements(schema: str) -> list[str]:
    """The DDL of the codes' tables and of the trigger that marks them stale, for the tables of ``schema``."""
    return [
        # a row's type and bits too: the codes and the types' bounds are read back from here, not from entity
        "CREATE TABLE IF NOT EXISTS bfsql_vector_row (row integer PRIMARY KEY, entity_id text NOT NULL, "
        "entity_type text NOT NULL, bits bit varying NOT NULL)",
        "CREATE TABLE IF NOT EXISTS bfsql_vector_part (name text NOT NULL, part integer NOT NULL, "
        "data bytea NOT NULL, PRIMARY KEY (name, part))",
        *stale_trigger_statements(schema, CODES_TRIGGER, STAMP_KEY, ["entity"]),
    ]


async def drop_codes(conn: asyncpg.Connection) -> None:
    """Remove the saved codes (inside the loader's transaction: servers keep reading the old ones until it commits)."""
    await conn.execute(f"DELETE FROM bfsql_meta WHERE key = '{STAMP_KEY}'")
    await conn.execute("DELETE FROM bfsql_vector_part")
    await conn.execute("DELETE FROM bfsql_vector_row")


async def save_codes(conn: asyncpg.Connection) -> int:
    """Save the codes of every visible entity's vector (inside the loader's transaction, after the vectors); how many
    rows."""
    await drop_codes(conn)
    rows = int(await conn.fetchval(
        "WITH saved AS (INSERT INTO bfsql_vector_row (row, entity_id, entity_type, bits) "
        f"SELECT (row_number() OVER (ORDER BY {_ORDER}) - 1)::int, e.entity_id, e.entity_type, "
        f"binary_quantize(e.embedding) FROM entity e WHERE {_VISIBLE} RETURNING 1) SELECT count(*) FROM saved"
    ))
    if not rows:
        return 0
    copied = bytearray()

    async def gather(chunk: bytes) -> None:
        copied.extend(chunk)

    await conn.copy_from_query("SELECT bits FROM bfsql_vector_row ORDER BY row", output=gather, format="binary")
    dimension = int(await conn.fetchval("SELECT length(bits) FROM bfsql_vector_row LIMIT 1"))
    words = _words(bytes(copied), rows, dimension)
    counts = await conn.fetch(
        "SELECT entity_type AS t, count(*) AS n FROM bfsql_vector_row GROUP BY entity_type "
        'ORDER BY entity_type COLLATE "C"'
    )
    type_rows = np.zeros(len(counts) + 1, dtype="<i8")
    np.cumsum([r["n"] for r in counts], out=type_rows[1:])
    sets = bool(await conn.fetchval(
        "SELECT bool_and(NOT EXISTS (SELECT 1 FROM unnest(s.embedding::real[]) x WHERE x < 0)) "
        f"FROM (SELECT e.embedding FROM entity e WHERE {_VISIBLE} LIMIT {SAMPLE}) s"
    ))
    blobs = {"words": words.tobytes(), "type_rows": type_rows.tobytes(),
             "types": "\n".join(r["t"] for r in counts).encode("utf-8")}
    await conn.executemany(
        "INSERT INTO bfsql_vector_part (name, part, data) VALUES ($1, $2, $3)",
        [(name, i, blob[start : start + PART_BYTES])
         for name, blob in blobs.items() for i, start in enumerate(range(0, max(len(blob), 1), PART_BYTES))],
    )
    digest = hashlib.blake2b(digest_size=16)
    for blob in blobs.values():
        digest.update(blob)
    # the same codes give the same stamp: a server holding them goes on using them after a load changed nothing
    stamp = f"{rows}:{words.shape[1]}:{'sets' if sets else 'signs'}:{dimension}:{digest.hexdigest()}"
    await conn.execute("INSERT INTO bfsql_meta (key, value) VALUES ($1, $2)", STAMP_KEY, stamp)
    return rows


def _words(copied: bytes, rows: int, dimension: int) -> np.ndarray:
    """The code words (a row of ``<u8`` words an entity) of a binary COPY of ``rows`` ``bit(dimension)`` values."""
    size = -(-dimension // 8)
    record = 2 + 4 + 4 + size  # fields (1), the value's length, its bit count, its bytes
    header, trailer = 19, 2
    if len(copied) != header + rows * record + trailer:
        raise ValueError(f"the codes' COPY has {len(copied)} bytes; expected {header + rows * record + trailer}")
    table = np.frombuffer(copied, dtype=np.uint8, offset=header, count=rows * record).reshape(rows, record)
    words = -(-dimension // 64)
    packed = np.zeros((rows, words * 8), dtype=np.uint8)
    packed[:, :size] = table[:, 10:]
    return packed.view("<u8")


@dataclass(frozen=True)
class SavedCodes:
    """Codes read from the store, and the stamp they were saved with."""

    stamp: str
    index: VectorIndex


async def read_codes(pool: asyncpg.Pool) -> SavedCodes | None:
    """The saved codes (one snapshot of stamp and parts), or None when there are none or they do not fit their
    stamp."""
    async with pool.acquire() as conn, conn.transaction(readonly=True, isolation="repeatable_read"):
        stamp = await conn.fetchval(STAMP_SQL)
        if stamp is None:
            return None
        blobs: dict[str, bytearray] = {}
        for part in await conn.fetch("SELECT name, data FROM bfsql_vector_part ORDER BY name, part"):
            blobs.setdefault(part["name"], bytearray()).extend(part["data"])
    fields = str(stamp).split(":")
    if len(fields) != 5 or not all(name in blobs for name in ("words", "type_rows", "types")):
        return None
    rows, width, kind, dimension = int(fields[0]), int(fields[1]), fields[2], int(fields[3])
    types = bytes(blobs["types"]).decode("utf-8").split("\n") if blobs["types"] else []
    type_rows = np.frombuffer(bytes(blobs["type_rows"]), dtype="<i8")
    if len(blobs["words"]) != 8 * rows * width or len(type_rows) != len(types) + 1 or int(type_rows[-1]) != rows:
        return None
    words = np.frombuffer(blobs.pop("words"), dtype="<u8").reshape(rows, width)
    index = await asyncio.to_thread(VectorIndex, words, types, type_rows, dimension, None, kind == "sets")
    return SavedCodes(str(stamp), index)
