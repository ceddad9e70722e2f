"""The hub candidates and dangling ends the loader saves for intersections (bfsql_postgres.rare_ends), on a real
server: what is saved, when it goes stale, and that intersections answer the same from it as hop by hop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from bfsql import EntityRecord, Graph, Record, RelationshipRecord, TraversalLimits, hookimpl, intersect_subgraphs
from bfsql_postgres import PostgresBackend, PostgresConfig, rare_ends
from bfsql_postgres.loader import load_records
from bfsql_postgres.merging import take_empty

FANS = 2_100
"""The hub's rows but one: more than the floor, and a hub cut by a cap of 2,000."""
CAPS = (2_000, 2_400, 4_202, 20_000)
"""Hub caps of at least twice the floor (their candidates are among the saved ids): the hub is cut by the first, a
candidate for the second, neither for the last two."""


class HopByHop:
    """A ``hop`` wrapper that changes nothing: a graph with it walks hop by hop."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]) -> Any:
        return (yield)


def star() -> list[Record]:
    """A hub with FANS rows out, a node with FANS rows in, a path between them, and ends that are no entity."""
    records: list[Record] = [EntityRecord(id=i, entity_type="Gene", name=i) for i in ("hub", "sink", "a", "b")]
    for n in range(FANS):
        records.append(EntityRecord(id=f"f{n}", entity_type="Disease", name=f"f{n}"))
        records.append(RelationshipRecord(subject="hub", predicate="links", object=f"f{n}"))
        records.append(RelationshipRecord(subject=f"f{n}", predicate="links", object="sink"))
    records += [RelationshipRecord(subject="hub", predicate="links", object="a"),
                RelationshipRecord(subject="a", predicate="links", object="b"),
                RelationshipRecord(subject="b", predicate="links", object="sink"),
                RelationshipRecord(subject="a", predicate="cites", object="nowhere"),
                RelationshipRecord(subject="gone", predicate="cites", object="b")]
    return records


@pytest.fixture
async def loaded(scratch_dsn: str) -> AsyncIterator[tuple[str, asyncpg.Connection]]:
    await load_records(scratch_dsn, star(), vector=False)
    conn = await asyncpg.connect(scratch_dsn)
    try:
        yield scratch_dsn, conn
    finally:
        await conn.close()


async def test_a_load_saves_the_candidates_and_dangling_ends_with_their_stamp(
    loaded: tuple[str, asyncpg.Connection],
) -> None:
    _, conn = loaded
    saved = {r["id"]: (r["subjects"], r["objects"], r["dangling"]) for r in await conn.fetch(
        "SELECT * FROM bfsql_rare_end")}
    assert saved == {"hub": (FANS + 1, 0, False), "sink": (0, FANS + 1, False), "nowhere": (0, 1, True),
                     "gone": (1, 0, True)}
    assert await conn.fetchval(f"SELECT value FROM bfsql_meta WHERE key = '{rare_ends.STAMP_KEY}'") == str(
        rare_ends.FLOOR)


async def test_the_saved_ends_are_those_read_from_the_relationships(loaded: tuple[str, asyncpg.Connection]) -> None:
    _, conn = loaded
    saved = await conn.fetch(rare_ends.SAVED_SQL)
    for cap in CAPS:
        async with conn.transaction():
            await conn.execute(rare_ends.ENDS_SETTINGS)
            read = rare_ends.RareEnds.of_rows(await conn.fetch(rare_ends.ENDS_SQL, cap // 2), cap)
        assert sets(rare_ends.saved_for(saved, cap)) == sets(read), cap
    assert [sets(rare_ends.saved_for(saved, cap))[0] for cap in CAPS] == [{"hub", "sink"}, {"hub", "sink"}, set(),
                                                                          set()]
    assert rare_ends.saved_for(saved, 2 * rare_ends.FLOOR - 1) is None  # under twice the floor: read instead


@pytest.mark.parametrize("write", [
    "INSERT INTO relationship (subject_id, predicate, object_id) VALUES ('b', 'cites', 'elsewhere')",
    "DELETE FROM entity WHERE entity_id = 'f0'",
    "UPDATE relationship SET object_id = 'elsewhere' WHERE subject_id = 'a' AND predicate = 'links'",
])
async def test_another_writer_makes_them_stale_and_intersections_read_the_graph(
    loaded: tuple[str, asyncpg.Connection], write: str,
) -> None:
    dsn, conn = loaded
    await conn.execute(write)
    assert await conn.fetch(rare_ends.SAVED_SQL) == []
    await assert_intersections_agree(dsn)


async def test_intersections_answer_from_the_saved_ends_as_hop_by_hop(loaded: tuple[str, asyncpg.Connection]) -> None:
    dsn, conn = loaded
    assert len(await conn.fetch(rare_ends.SAVED_SQL)) == 5
    await assert_intersections_agree(dsn)


async def test_a_load_into_a_store_with_the_triggers_still_takes_empty_tables(scratch_dsn: str) -> None:
    """The triggers are bfsql's own: a fresh load still fills the emptied tables by COPY and builds their keys."""
    await load_records(scratch_dsn, star(), vector=False)
    conn = await asyncpg.connect(scratch_dsn)
    try:
        await conn.execute("DELETE FROM relationship")
        async with conn.transaction():
            assert await take_empty(conn, "relationship") == "relationship_pkey"
    finally:
        await conn.close()


def sets(ends: rare_ends.RareEnds | None) -> tuple[set[str], set[str]]:
    assert ends is not None
    return set(ends.hubs), set(ends.dangling)


def shown(answer: Any) -> tuple[Any, ...]:
    """What an intersection answers: counts, nodes, edges, schema, cuts (the dangling rows among them), paths."""
    return (answer.node_count, answer.edge_count, answer.node_ids, sorted(map(tuple, answer.triples)),
            answer.schema_summary, answer.truncated, answer.warnings,
            [(p.seed, p.node, [tuple(e) for e in p.edges]) for p in answer.paths])


async def assert_intersections_agree(dsn: str) -> None:
    """intersect_subgraphs in the database equals the hop walk, for caps that cut the hub and caps that do not."""
    backend = await PostgresBackend.create(PostgresConfig(dsn=dsn))
    try:
        store = Graph(backend, plugins=[], cache=None)
        hop_by_hop = Graph(backend, plugins=[HopByHop()], cache=None)
        assert store.walks_in_store("intersect") and not hop_by_hop.walks_in_store("intersect")
        for seeds in (["hub", "sink"], ["a", "sink"], ["hub", "b"]):
            for k in (1, 2, 3):
                for cap in CAPS:
                    arguments: dict[str, Any] = {"topology_only": True,
                                                 "limits": TraversalLimits(max_edges_per_node=cap)}
                    walked = await intersect_subgraphs(hop_by_hop, seeds, k, **arguments)
                    answer = await intersect_subgraphs(store, seeds, k, **arguments)
                    assert shown(answer) == shown(walked), (seeds, k, cap)
    finally:
        await backend.aclose()
