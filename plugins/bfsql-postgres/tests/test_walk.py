"""The walk in the database (the traverse primitive) on stores the conformance suite does not build.

Each test compares bfs_query answered by the walk in the database (``walk_rows=0``) with the
engine's own walk, hop by hop over the same backend, on random graphs (hubs, self-loops,
dangling and merged ends): counts, pages, edges, schema, cuts and warnings must be equal.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from pg_variants import build_evidence_table_variant

from bfsql import (
    EntityRecord,
    Graph,
    Record,
    RelationshipRecord,
    TraversalLimits,
    UnknownEntity,
    bfs_query,
    hookimpl,
)
from bfsql.testing.random_graphs import TYPES, random_records
from bfsql_postgres import PostgresBackend, PostgresConfig, layout
from bfsql_postgres.loader import load_records

from conftest import Server

GRAPHS = 4


class HopByHop:
    """A ``hop`` wrapper that changes nothing: a graph with it walks hop by hop."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]) -> Any:
        return (yield)


def _answer(result: Any) -> tuple[Any, ...]:
    return (
        result.node_count, result.edge_count, result.node_ids, sorted(map(tuple, result.triples)),
        result.schema_summary, [(t.reason, t.detail, t.next_offset, t.capped_nodes) for t in result.truncated],
        result.warnings, {i: result.distance[i] for i in result.node_ids},
    )


async def assert_walks_agree(backend: PostgresBackend, records: list[Record], rng: random.Random) -> int:
    """bfs_query walked in the database equals the hop walk, for random seeds and settings; how many compared."""
    in_database = Graph(backend, plugins=[], cache=None)
    hop_by_hop = Graph(backend, plugins=[HopByHop()], cache=None)
    assert in_database.walks_in_store("traverse") and not hop_by_hop.walks_in_store("traverse")
    ids = [r.id for r in records if isinstance(r, EntityRecord)]
    compared = 0
    for seeds, hops, limits, exclude, limit, offset in itertools.product(
        [rng.sample(ids, k=1), rng.sample(ids, k=1), rng.sample(ids, k=3)], (1, 2, 3),
        (TraversalLimits(), TraversalLimits(max_nodes=5, max_edges_per_node=2)), (None, [TYPES[0]]), (None, 4),
        (0, 3),
    ):
        arguments: dict[str, Any] = {"topology_only": True, "limits": limits, "exclude_node_types": exclude,
                                     "limit": limit, "offset": offset}
        try:
            expected = _answer(await bfs_query(hop_by_hop, seeds, hops, **arguments))
        except UnknownEntity:
            with pytest.raises(UnknownEntity):
                await bfs_query(in_database, seeds, hops, **arguments)
            continue
        assert _answer(await bfs_query(in_database, seeds, hops, **arguments)) == expected, (seeds, hops, arguments)
        compared += 1
    return compared


async def test_a_store_holding_each_relationship_twice(pg_server: Server) -> None:
    """No unique key: the walk reads each triple once, however many rows hold it."""
    for number in range(GRAPHS):
        rng = random.Random(number)
        records = random_records(rng)
        twice = records + [r for r in records if isinstance(r, RelationshipRecord)]
        dsn = await pg_server.create_database("twice")
        await build_evidence_table_variant(dsn, twice)
        backend = await PostgresBackend.create(PostgresConfig(dsn=dsn), walk_rows=0)
        try:
            assert not backend.layout.unique_keys
            assert await assert_walks_agree(backend, records, rng) > 0
        finally:
            await backend.aclose()


async def test_a_store_with_more_merged_entities_than_are_read_at_start_up(
    pg_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merged ends probed per row (the ids not held by the backend): hubs are still cut on their visible rows."""
    monkeypatch.setattr(layout, "FEW_MERGED", 0)
    for number in range(GRAPHS):
        rng = random.Random(100 + number)
        records = random_records(rng)
        dsn = await pg_server.create_database("merged")
        await load_records(dsn, records, vector=False, embedder="none")
        backend = await PostgresBackend.create(PostgresConfig(dsn=dsn), walk_rows=0)
        try:
            assert backend.layout.merged and backend.layout.merged_ids is None
            assert await assert_walks_agree(backend, records, rng) > 0
        finally:
            await backend.aclose()


async def test_walks_handed_to_the_database_at_every_point_of_their_budget(pg_server: Server) -> None:
    """A walk goes hop by hop while its edges fit ``walk_rows``, then to the database: the same answers wherever
    the budget runs out (paged calls, which are the ones budgeted)."""
    rng = random.Random(7)
    records = random_records(rng)
    dsn = await pg_server.create_database("budget")
    await load_records(dsn, records, vector=False, embedder="none")
    ids = [r.id for r in records if isinstance(r, EntityRecord)]
    for walk_rows in (1, 2, 5, 10, 20, 40, 80):
        backend = await PostgresBackend.create(PostgresConfig(dsn=dsn), walk_rows=walk_rows)
        try:
            in_database = Graph(backend, plugins=[], cache=None)
            hop_by_hop = Graph(backend, plugins=[HopByHop()], cache=None)
            for seed in ids[:6]:
                for hops in (1, 2, 3):
                    arguments: dict[str, Any] = {"topology_only": True, "limit": 5, "offset": 1}
                    try:
                        expected = _answer(await bfs_query(hop_by_hop, [seed], hops, **arguments))
                    except UnknownEntity:
                        continue
                    got = _answer(await bfs_query(in_database, [seed], hops, **arguments))
                    assert got == expected, (walk_rows, seed, hops)
        finally:
            await backend.aclose()
