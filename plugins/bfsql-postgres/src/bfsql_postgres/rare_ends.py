"""The graph's hub candidates and its ends that are no entity, saved by the loader for the intersection.

An intersection walked in the database (:mod:`bfsql_postgres.overlap`) must know, before it expands a
node, whether the node may have more rows than the hub cap, and which ends of rows are no entity.
Read from the relationships, that is an ordered pass over each index and a probe per end (12 s at
R-MAT 23's 66M relationships, before the first intersection can start). ``bfsql postgres load``
saves them at its end instead: ``bfsql_rare_end`` holds every id with more than :data:`FLOOR` rows in
one index (with both counts) and every end that is no entity, and a stamp in ``bfsql_meta`` (key
:data:`STAMP_KEY`, the floor) says they are current.

Statement-level triggers on ``entity`` and ``relationship`` delete the stamp whenever anything but a
load (which saves the ends again at its end) writes either table. A server without the stamp, or
asked for a cap under twice the floor, reads the ends from the relationships (:data:`ENDS_SQL`).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from bfsql_postgres.stamps import stale_trigger_statements

__all__ = [
    "ENDS_SETTINGS", "ENDS_SQL", "ENDS_TRIGGER", "FLOOR", "SAVED_SQL", "STAMP_KEY", "RareEnds", "ends_statements",
    "save_ends", "saved_for",
]

STAMP_KEY = "rare_ends"
"""The key of the saved ends' stamp in ``bfsql_meta`` (its value: the floor they were saved with)."""
ENDS_TRIGGER = "bfsql_rare_ends_stale"
"""The triggers on ``entity`` and ``relationship`` that delete the stamp (and the function they run)."""
FLOOR = 1000
"""An id is saved as a hub candidate with more rows than this in one index: a cap of twice as many or more (the
default is 20,000) finds its candidates among the saved ids."""

ENDS_SQL = """
WITH subjects AS (SELECT r.subject_id AS id, count(*) AS n FROM relationship r GROUP BY r.subject_id),
objects AS (SELECT r.object_id AS id, count(*) AS n FROM relationship r GROUP BY r.object_id)
SELECT coalesce(s.id, o.id)::text AS id, coalesce(s.n, 0) AS subjects, coalesce(o.n, 0) AS objects,
    NOT EXISTS (SELECT FROM entity e WHERE e.entity_id = coalesce(s.id, o.id)) AS dangling
FROM subjects s FULL JOIN objects o ON s.id = o.id
WHERE s.n > $1::bigint OR o.n > $1::bigint OR NOT EXISTS (SELECT FROM entity e WHERE e.entity_id = coalesce(s.id, o.id))
"""
"""Every id with more than ``$1`` rows in one index and every end that is no entity, with its row counts: each
index read once in its order (:data:`ENDS_SETTINGS`), the two counts merged by id, a probe per end."""

ENDS_SETTINGS = ("SET LOCAL enable_hashagg = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_sort = off; "
                 "SET LOCAL max_parallel_workers_per_gather = 2")
"""How :data:`ENDS_SQL` runs (inside its own transaction): hashing every end instead, as the planner chose when
misled by R-MAT-like skew, took 41 s at R-MAT 23 against 12 s for the ordered, merged passes."""

SAVED_SQL = f"""
SELECT NULL::text AS id, 0::bigint AS subjects, 0::bigint AS objects, FALSE AS dangling, value AS stamp
FROM bfsql_meta WHERE key = '{STAMP_KEY}'
UNION ALL
SELECT id, subjects, objects, dangling, NULL FROM bfsql_rare_end
WHERE EXISTS (SELECT FROM bfsql_meta WHERE key = '{STAMP_KEY}')
"""
"""The saved ends with their stamp, in one snapshot (no row when they are not current)."""


@dataclass(frozen=True)
class RareEnds:
    """The hub candidates for one cap and the ends that are no entity."""

    hubs: list[str]
    dangling: list[str]

    @classmethod
    def of_rows(cls, rows: list[asyncpg.Record], cap: int) -> RareEnds:
        """The ends for the hub cap ``cap`` among rows of :data:`ENDS_SQL` (or saved ones) read for half of it or
        less."""
        return cls([r["id"] for r in rows if max(r["subjects"], r["objects"]) > cap // 2],
                   [r["id"] for r in rows if r["dangling"]])


def ends_statements(schema: str) -> list[str]:
    """The DDL of the saved ends' table and of the triggers that mark it stale, for the tables of ``schema``."""
    return [
        "CREATE TABLE IF NOT EXISTS bfsql_rare_end (id text PRIMARY KEY, subjects bigint NOT NULL, "
        "objects bigint NOT NULL, dangling boolean NOT NULL)",
        *stale_trigger_statements(schema, ENDS_TRIGGER, STAMP_KEY, ["entity", "relationship"]),
    ]


async def save_ends(conn: asyncpg.Connection) -> int:
    """Save the ends and their stamp, in a transaction of their own after the load's (its ``VACUUM`` and
    ``ANALYZE`` done, for the ordered passes); writers wait until it commits. How many rows were saved."""
    async with conn.transaction():
        await conn.execute("LOCK TABLE entity, relationship IN SHARE MODE")
        await conn.execute(ENDS_SETTINGS)
        await conn.execute(f"DELETE FROM bfsql_meta WHERE key = '{STAMP_KEY}'")
        await conn.execute("DELETE FROM bfsql_rare_end")
        status = await conn.execute(
            f"INSERT INTO bfsql_rare_end (id, subjects, objects, dangling) {ENDS_SQL}", FLOOR)
        await conn.execute("INSERT INTO bfsql_meta (key, value) VALUES ($1, $2)", STAMP_KEY, str(FLOOR))
    return int(status.split()[-1])


def saved_for(rows: list[asyncpg.Record], cap: int) -> RareEnds | None:
    """The ends for the hub cap ``cap`` among the rows of :data:`SAVED_SQL`; None when they are not current or were
    saved with a floor above half of it."""
    stamps = [row["stamp"] for row in rows if row["id"] is None]
    if not stamps or not stamps[0].isdigit() or int(stamps[0]) > cap // 2:
        return None
    return RareEnds.of_rows([row for row in rows if row["id"] is not None], cap)
