"""Benchmark: batch primitives vs per-node calls, and the cache, on the FamPlex demo graph.

Run: ``python bench/bench_core.py`` (or ``nox -s bench``). Every figure is printed as a
ratio against a baseline measured in the same run, so machines can be compared.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bfsql import Graph, gather_bounded
from bfsql.backends.sqlite import SqliteBackend
from bfsql.demo import ensure_demo_db
from bfsql.engine import bfs_query, intersect_subgraphs

T = TypeVar("T")

SEEDS = [
    "FPLX:RING_E3_ligase",  # the demo's largest hub (327 edges)
    "FPLX:CLEC",
    "FPLX:RAB",
    "FPLX:Growth_factor",
    "FPLX:Proteasome",
    "FPLX:RAF",
    "FPLX:MAPK",
    "HGNC:BRAF",
]
REPEATS = 5


class CountingSqlite(SqliteBackend):
    """The sqlite store, counting the statements it runs on its worker thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queries = 0

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        self.queries += 1
        return await super()._run(fn, *args)


def _per_id(batch: Callable[..., Awaitable[dict[Any, Any]]]) -> Callable[..., Awaitable[dict[Any, Any]]]:
    async def one_by_one(self: CountingSqlite, keys: list[Any]) -> dict[Any, Any]:
        async def single(key: Any) -> Any:
            answer = await batch(self, [key])
            if key not in answer:
                raise KeyError(key)
            return answer[key]

        return await gather_bounded(keys, single, self.batch_concurrency)

    return one_by_one


class PerNodeSqlite(CountingSqlite):
    """The same store answering every batch call with one statement per id, as a backend without batch support."""

    edges_from_many = _per_id(SqliteBackend.edges_from_many)
    edges_to_many = _per_id(SqliteBackend.edges_to_many)
    get_nodes = _per_id(SqliteBackend.get_nodes)
    metadata_for_nodes = _per_id(SqliteBackend.metadata_for_nodes)
    metadata_for_edges = _per_id(SqliteBackend.metadata_for_edges)


async def run(backend_cls: type[CountingSqlite], hops: int, topology_only: bool, cache: bool) -> tuple[float, int]:
    """Seconds and SQL statements for bfs_query from every seed, on a fresh graph each repeat."""
    best, calls = float("inf"), 0
    for _ in range(REPEATS):
        backend = backend_cls(ensure_demo_db())
        graph = Graph(backend, plugins=[], **({} if cache else {"cache": None}))
        start = time.perf_counter()
        for seed in SEEDS:
            await bfs_query(graph, [seed], hops, topology_only=topology_only)
        best = min(best, time.perf_counter() - start)
        calls = backend.queries
        await graph.aclose()
    return best, calls


async def intersect_cost(cache: bool) -> tuple[float, int]:
    """Seconds and SQL statements for pairwise intersections of the seeds (cache helps here), best of REPEATS."""
    best, calls = float("inf"), 0
    for _ in range(REPEATS):
        backend = CountingSqlite(ensure_demo_db())
        graph = Graph(backend, plugins=[], **({} if cache else {"cache": None}))
        start = time.perf_counter()
        for a, b in itertools.pairwise(SEEDS):
            await intersect_subgraphs(graph, [a, b], 2, topology_only=True)
        best, calls = min(best, time.perf_counter() - start), backend.queries
        await graph.aclose()
    return best, calls


async def main() -> None:
    """Print the table."""
    ensure_demo_db()
    print(f"bfs_query from {len(SEEDS)} seeds on FamPlex (sqlite), best of {REPEATS}")
    print(f"{'hops':>4} {'mode':<9} {'per-node s':>11} {'batch s':>9} {'speed-up':>9} "
          f"{'per-node SQL':>15} {'batch SQL':>12} {'fewer SQL':>12}")
    for hops in (1, 2):
        for topology_only in (True, False):
            slow, slow_calls = await run(PerNodeSqlite, hops, topology_only, cache=False)
            fast, fast_calls = await run(CountingSqlite, hops, topology_only, cache=False)
            mode = "topology" if topology_only else "full"
            print(f"{hops:>4} {mode:<9} {slow:>11.4f} {fast:>9.4f} {slow / fast:>8.1f}x "
                  f"{slow_calls:>15} {fast_calls:>12} {slow_calls / fast_calls:>11.1f}x")
    uncached, uncached_calls = await intersect_cost(cache=False)
    cached, cached_calls = await intersect_cost(cache=True)
    print(f"\nintersect_subgraphs k=2 over {len(SEEDS) - 1} seed pairs: without cache {uncached:.4f}s / "
          f"{uncached_calls} statements, with cache {cached:.4f}s / {cached_calls} statements "
          f"({uncached / cached:.1f}x faster, {uncached_calls / cached_calls:.1f}x fewer statements)")


if __name__ == "__main__":
    asyncio.run(main())
