"""Counts without the nodes: schema_summary's counts, limit=0, and the statistics describe_schema shows.

The counts of bfs_query and intersect_subgraphs are checked against a breadth-first search written here from
the records alone (no bfsql code), on random graphs, for the memory backend's hop walk and the SQLite store's
walk on its array index (both its Python sets and numpy); the statistics of both against counts of the records.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections import Counter, deque
from pathlib import Path
from typing import Any

import pytest

from bfsql import StoreTimeout, csr
from bfsql.backends.memory import MemoryBackend
from bfsql.backends.sqlite import SqliteBackend
from bfsql.engine import bfs_query, intersect_subgraphs
from bfsql.graph import Graph
from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.sqlite_loader import load_records
from bfsql.rows import GraphStatistics, Hub
from bfsql.server.tools import SCHEMA_COUNTS, _schema_counts
from bfsql.testing.random_graphs import TYPES, random_records

GRAPHS = 8
"""Random graphs each check runs on."""


class Records:
    """A graph as plain dicts, read from its records: what the other primitives see (merged entities hidden)."""

    def __init__(self, records: list[Record]) -> None:
        entities = [r for r in records if isinstance(r, EntityRecord)]
        merged = {e.id for e in entities if e.merged}
        self.types = {e.id: e.entity_type for e in entities if not e.merged}
        self.edges = [(r.subject, r.predicate, r.object) for r in records
                      if isinstance(r, RelationshipRecord) and r.subject not in merged and r.object not in merged]
        self.neighbours = self._neighbours()

    def _neighbours(self) -> dict[str, set[str]]:
        """Every visible entity's neighbours (both ways; dangling ends are none)."""
        neighbours: dict[str, set[str]] = {i: set() for i in self.types}
        for s, _, o in self.edges:
            if s in self.types and o in self.types:
                neighbours[s].add(o)
                neighbours[o].add(s)
        return neighbours

    def distances(self, starts: list[str], hops: int, excluded: set[str], keep: list[str]) -> dict[str, int]:
        """Hops from the nearest start to every node within ``hops``: no neighbour of an excluded type is entered,
        unless it is one of ``keep`` (the seeds)."""
        distance = dict.fromkeys(starts, 0)
        queue = deque(starts)
        while queue:
            node = queue.popleft()
            if distance[node] == hops:
                continue
            for other in sorted(self.neighbours[node]):
                if other not in distance and (self.types[other] not in excluded or other in keep):
                    distance[other] = distance[node] + 1
                    queue.append(other)
        return distance

    def bfs_counts(self, seeds: list[str], hops: int, excluded: set[str]) -> tuple[Counter[str], Counter[str]]:
        """bfs_query's counts: the nodes reached by type; the edges with both ends reached, one of them nearer than
        ``hops``, by predicate."""
        distance = self.distances(seeds, hops, excluded, seeds)
        edges = [p for s, p, o in self.edges
                 if s in distance and o in distance and min(distance[s], distance[o]) < hops]
        return Counter(self.types[n] for n in distance), Counter(edges)

    def intersect_counts(self, seeds: list[str], k: int, excluded: set[str]) -> tuple[Counter[str], Counter[str]]:
        """intersect_subgraphs' counts: the nodes within k of every seed by type; the edges among them by predicate."""
        reached = [self.distances([seed], k, excluded, seeds) for seed in seeds]
        shared = set.intersection(*(set(d) for d in reached))
        edges = [p for s, p, o in self.edges if s in shared and o in shared]
        return Counter(self.types[n] for n in shared), Counter(edges)


def _graphs() -> list[tuple[random.Random, list[Record]]]:
    """The random graphs (60 entities, 600 edges, three hubs), each with its random source for the seeds."""
    graphs = []
    for number in range(GRAPHS):
        rng = random.Random(1000 + number)
        graphs.append((rng, random_records(rng, entities=60, edges=600)))
    return graphs


async def _backends(records: list[Record], tmp_path: Path) -> list[Graph]:
    """The records in the memory backend and in a SQLite store walking on its array index (without caches)."""
    db = tmp_path / f"counts-{len(list(tmp_path.iterdir()))}.db"
    load_records(db, records, embedder="none")
    store = SqliteBackend(db)
    assert await store.wait_for_index(30)
    return [Graph(MemoryBackend(records), cache=None), Graph(store, cache=None)]


@pytest.mark.parametrize("small_rows", [csr.SMALL_HOP_ROWS, 0], ids=["python sets", "numpy"])
async def test_counts_equal_an_independent_bfs_on_random_graphs(tmp_path: Path, monkeypatch, small_rows: int):
    """bfs_query and intersect_subgraphs with limit=0 (one seed and several, with and without an excluded type):
    no node, and the counts of the BFS written here."""
    monkeypatch.setattr(csr, "SMALL_HOP_ROWS", small_rows)
    for rng, records in _graphs():
        plain = Records(records)
        seeds = rng.sample(sorted(plain.types), k=3)
        for graph in await _backends(records, tmp_path):
            try:
                for chosen, hops, excluded in [([seeds[0]], 1, set()), ([seeds[0]], 2, {TYPES[0]}), (seeds, 3, set())]:
                    answer = await bfs_query(graph, chosen, hops, exclude_node_types=sorted(excluded) or None, limit=0)
                    types, predicates = plain.bfs_counts(chosen, hops, excluded)
                    where = (type(graph.backend).__name__, chosen, hops, excluded)
                    assert (answer.node_ids, answer.triples) == ([], []), where
                    assert answer.entity_type_counts == dict(sorted(types.items())), where
                    assert answer.predicate_counts == dict(sorted(predicates.items())), where
                    assert (answer.node_count, answer.edge_count) == (types.total(), predicates.total()), where
                for k, excluded in [(1, set()), (2, {TYPES[1]})]:
                    answer = await intersect_subgraphs(graph, seeds[:2], k, exclude_node_types=sorted(excluded) or None,
                                                       limit=0)
                    types, predicates = plain.intersect_counts(seeds[:2], k, excluded)
                    where = (type(graph.backend).__name__, seeds[:2], k, excluded)
                    assert (answer.node_ids, answer.triples, answer.paths) == ([], [], []), where
                    assert answer.entity_type_counts == dict(sorted(types.items())), where
                    assert answer.predicate_counts == dict(sorted(predicates.items())), where
            finally:
                await graph.aclose()


async def test_a_limited_intersection_lists_the_nearest_and_says_so(tmp_path: Path):
    """intersect_subgraphs(limit=N): the N nearest shared nodes and the edges among them, the counts of all, and
    a 'limit' note (no paging); the same from the store's walk and the engine's."""
    _, records = _graphs()[0]
    plain = Records(records)
    seeds = sorted(plain.types, key=lambda i: -len(plain.neighbours[i]))[:2]  # two hubs share the most
    whole = await intersect_subgraphs(Graph(MemoryBackend(records), cache=None), seeds, 2)
    assert whole.node_count > 3
    for graph in await _backends(records, tmp_path):
        try:
            answer = await intersect_subgraphs(graph, seeds, 2, limit=3)
            assert answer.node_ids == whole.node_ids[:3]
            assert sorted(answer.triples) == sorted(e for e in whole.triples if {e[0], e[2]} <= set(whole.node_ids[:3]))
            assert (answer.node_count, answer.edge_count) == (whole.node_count, whole.edge_count)
            assert answer.entity_type_counts == whole.entity_type_counts
            assert {p.node for p in answer.paths} <= set(answer.node_ids)
            note = [t for t in answer.truncated if t.reason == "limit"]
            assert len(note) == 1 and note[0].count == whole.node_count - 3 and note[0].next_offset is None
        finally:
            await graph.aclose()


def _expected_statistics(plain: Records, hubs: int) -> tuple[Any, ...]:
    """What :func:`_comparable` makes of the statistics, counted from the records."""
    degree: Counter[str] = Counter()
    for s, _, o in plain.edges:
        degree[s] += 1
        if o != s:
            degree[o] += 1
    ranked = sorted((i for i in plain.types if degree[i]), key=lambda i: (-degree[i], i))[:hubs]
    types, predicates = Counter(plain.types.values()), Counter(p for _, p, _ in plain.edges)
    return (True, dict(sorted(types.items())), dict(sorted(predicates.items())),
            [(i, plain.types[i], degree[i]) for i in ranked])


def _comparable(counted: GraphStatistics | None) -> tuple[Any, ...]:
    """The statistics as plain data, the hubs without their names."""
    assert counted is not None
    hubs = [(h.id, h.entity_type, h.degree) for h in counted.hubs or []]
    return counted.exact, counted.entity_type_counts, counted.predicate_counts, hubs


async def test_statistics_count_the_records(tmp_path: Path):
    """The memory backend, the store from what bfsql load saved and the store from its index in memory count
    what the records hold: visible entities by type, edges (dangling ones too) by predicate, hubs by degree."""
    for _, records in _graphs()[:4]:
        expected = _expected_statistics(Records(records), 5)
        memory, store = await _backends(records, tmp_path)
        try:
            assert _comparable(await memory.statistics(5)) == expected
            assert _comparable(await store.statistics(5)) == expected
            backend = store.backend
            assert isinstance(backend, SqliteBackend) and backend._statistics is not None  # saved by bfsql load
            backend._statistics = None
            assert _comparable(await store.statistics(5)) == expected  # from the index in memory
        finally:
            await memory.aclose()
            await store.aclose()


async def test_saved_statistics_of_another_index_are_not_read(tmp_path: Path):
    """Statistics saved with an index the store no longer has (a later load by an older bfsql) are ignored."""
    _, records = _graphs()[0]
    db = tmp_path / "stale.db"
    load_records(db, records, embedder="none")
    with sqlite3.connect(db) as conn:
        saved = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'statistics'").fetchone()[0])
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert csr.stored_statistics(meta) is not None
    assert csr.stored_statistics({**meta, "csr": meta["csr"] + "0"}) is None
    assert csr.stored_statistics({k: v for k, v in meta.items() if k != "statistics"}) is None
    assert len(saved["hubs"]) <= csr.STORED_HUBS


async def test_store_without_saved_statistics_or_index_cannot_say(tmp_path: Path):
    """A store above memory_index whose load saved no statistics (an older bfsql) answers None: counting would
    read every relationship."""
    _, records = _graphs()[0]
    db = tmp_path / "big.db"
    load_records(db, records, embedder="none")
    store = SqliteBackend(db, memory_index=0)
    try:
        assert await store.statistics() is not None  # saved by bfsql load
        store._statistics = None
        assert await store.statistics() is None
    finally:
        await store.aclose()


def test_describe_schema_shows_the_most_numerous_counts_sorted():
    """At most SCHEMA_COUNTS types and predicates (the most numerous, shown by name), and 10 hubs."""
    many = {f"T{i:03}": i for i in range(1, SCHEMA_COUNTS + 11)}
    shown = _schema_counts(GraphStatistics(
        exact=False, entity_type_counts=many, predicate_counts={"b": 1, "a": 2},
        hubs=[Hub(f"n{i}", "T", None, 100 - i) for i in range(20)],
    ))
    types = shown["entity_type_counts"]
    assert len(types) == SCHEMA_COUNTS and list(types) == sorted(types) and min(types.values()) == 11
    assert shown["predicate_counts"] == {"a": 2, "b": 1} and list(shown["predicate_counts"]) == ["a", "b"]
    assert [h.id for h in shown["hubs"]] == [f"n{i}" for i in range(10)] and shown["counts_exact"] is False
    assert _schema_counts(None) == {}
    partial: dict[str, Any] = _schema_counts(GraphStatistics(exact=True, entity_type_counts={"A": 1}))
    assert partial == {"counts_exact": True, "entity_type_counts": {"A": 1}}


class SlowStore(SqliteBackend):
    """A SQLite store that cannot walk ``slow_from`` hops or more within any timeout (it sleeps instead)."""

    slow_from = 2

    async def traverse(self, seeds, hops, *args, **kwargs):  # type: ignore[no-untyped-def]
        if hops >= self.slow_from:
            await asyncio.sleep(60)
        return await super().traverse(seeds, hops, *args, **kwargs)

    async def intersect(self, seeds, k, *args, **kwargs):  # type: ignore[no-untyped-def]
        if k >= self.slow_from:
            await asyncio.sleep(60)
        return await super().intersect(seeds, k, *args, **kwargs)


async def test_a_walk_the_store_cannot_finish_in_time_answers_fewer_hops_as_a_lower_bound(tmp_path: Path):
    """The store's walk of 3 hops (intersection of k=2) passes the primitive timeout: the answer is the walk of 1
    hop, the same as asked for directly, with a time_limit note giving its counts as lower bounds; when even one
    hop runs out of time, the timeout is the error."""
    _, records = _graphs()[0]
    plain = Records(records)
    seeds = sorted(plain.types, key=lambda i: -len(plain.neighbours[i]))[:2]
    db = tmp_path / "slow.db"
    load_records(db, records, embedder="none")
    store = SlowStore(db)
    assert await store.wait_for_index(30)
    graph = Graph(store, cache=None, primitive_timeout=0.3)
    try:
        cut = await bfs_query(graph, seeds[:1], 3, limit=5)
        one = await bfs_query(graph, seeds[:1], 1, limit=5)
        assert (cut.hops, cut.node_ids, cut.node_count, cut.edge_count) == (3, one.node_ids, one.node_count,
                                                                              one.edge_count)
        note = cut.truncated[0]
        assert note.reason == "time_limit" and "walk of 3 hops in the store ran out of time" in note.detail
        assert f"at least {one.node_count} nodes and {one.edge_count} edges" in note.detail
        assert "did not answer traverse within 0.3s" in note.detail
        assert not [t for t in one.truncated if t.reason == "time_limit"]

        shared = await intersect_subgraphs(graph, seeds, 2, limit=0)
        assert shared.hops == 2 and shared.truncated[0].reason == "time_limit"
        assert shared.node_count == (await intersect_subgraphs(graph, seeds, 1, limit=0)).node_count
        assert "the whole intersection holds at least" in shared.truncated[0].detail

        store.slow_from = 1
        with pytest.raises(StoreTimeout, match=r"did not answer traverse within 0\.3s"):
            await bfs_query(graph, seeds[:1], 2)
    finally:
        await graph.aclose()
