"""The primitive cache: coalescing, bounds, expiry, errors never cached."""

from __future__ import annotations

import asyncio

import pytest

from bfsql import Edge, Graph
from bfsql.backends.memory import MemoryBackend
from bfsql.cache import CacheConfig, LruCache

from conftest import small_records


class CountingBackend(MemoryBackend):
    """A memory backend that counts calls, can be slowed down, and can be told to fail."""

    def __init__(self) -> None:
        super().__init__(small_records())
        self.calls: dict[str, int] = {}
        self.delay = 0.0
        self.fail = False

    async def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ConnectionError("backend down")

    async def edges_from(self, entity_id: str) -> list[Edge]:
        await self._count("edges_from")
        return await super().edges_from(entity_id)

    async def edges_from_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        await self._count("edges_from_many")
        self.calls["ids"] = self.calls.get("ids", 0) + len(entity_ids)
        return {i: await MemoryBackend.edges_from(self, i) for i in entity_ids if i in self._entities}

    async def entity_types(self) -> list[str]:
        await self._count("entity_types")
        return await super().entity_types()


def graph_of(backend: CountingBackend, maxsize: int = 100, ttl: float | None = None) -> Graph:
    return Graph(backend, plugins=[], cache=CacheConfig(maxsize=maxsize, ttl=ttl))


async def test_repeated_calls_hit_the_backend_once():
    backend = CountingBackend()
    graph = graph_of(backend)
    first = await graph.edges_from("S")
    assert await graph.edges_from("S") == first
    assert backend.calls["edges_from"] == 1


async def test_concurrent_identical_calls_are_coalesced():
    backend = CountingBackend()
    backend.delay = 0.05
    graph = graph_of(backend)
    results = await asyncio.gather(*(graph.edges_from("S") for _ in range(20)))
    assert all(r == results[0] for r in results)
    assert backend.calls["edges_from"] == 1


async def test_batch_asks_only_for_missing_ids_and_shares_entries_with_single_calls():
    backend = CountingBackend()
    graph = graph_of(backend)
    await graph.edges_from("S")
    answer = await graph.edges_from_many(["S", "A", "B"])
    assert set(answer) == {"S", "A", "B"}
    assert backend.calls["ids"] == 2  # S came from the cache
    await graph.edges_from_many(["A", "B"])
    assert backend.calls["edges_from_many"] == 1


async def test_concurrent_overlapping_batches_load_each_id_once():
    backend = CountingBackend()
    backend.delay = 0.05
    graph = graph_of(backend)
    one, two = await asyncio.gather(graph.edges_from_many(["S", "A"]), graph.edges_from_many(["A", "B"]))
    assert set(one) == {"S", "A"} and set(two) == {"A", "B"}
    assert backend.calls["ids"] == 3


async def test_unknown_ids_are_not_cached():
    backend = CountingBackend()
    graph = graph_of(backend)
    assert await graph.edges_from_many(["nope"]) == {}
    assert await graph.edges_from_many(["nope"]) == {}
    assert backend.calls["edges_from_many"] == 2


async def test_errors_are_never_cached_and_the_next_call_succeeds():
    backend = CountingBackend()
    graph = graph_of(backend)
    backend.fail = True
    with pytest.raises(ConnectionError):
        await graph.edges_from("S")
    with pytest.raises(ConnectionError):
        await graph.edges_from_many(["A"])
    backend.fail = False
    assert await graph.edges_from("S")
    assert "A" in await graph.edges_from_many(["A"])


async def test_coalesced_waiters_all_see_the_error():
    backend = CountingBackend()
    backend.delay, backend.fail = 0.05, True
    graph = graph_of(backend)
    results = await asyncio.gather(*(graph.edges_from("S") for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    assert backend.calls["edges_from"] == 1


async def test_cache_is_bounded_lru():
    backend = CountingBackend()
    graph = graph_of(backend, maxsize=2)
    for entity_id in ("S", "A", "B"):
        await graph.edges_from(entity_id)
    assert len(graph.cache.caches["edges_from"]) == 2
    await graph.edges_from("S")  # evicted first, so fetched again
    assert backend.calls["edges_from"] == 4


async def test_entries_expire_after_ttl():
    cache = LruCache(10, ttl=0.01)
    cache.put("k", 1)
    assert cache.get("k") == 1
    await asyncio.sleep(0.02)
    loads = []

    async def load() -> int:
        loads.append(1)
        return 2

    assert await cache.get_or_load("k", load) == 2 and loads == [1]


async def test_schema_lists_are_cached_for_the_session():
    backend = CountingBackend()
    graph = graph_of(backend, ttl=0.001)
    await graph.entity_types()
    await asyncio.sleep(0.01)
    await graph.entity_types()
    assert backend.calls["entity_types"] == 1


async def test_no_cache_means_every_call_reaches_the_backend():
    backend = CountingBackend()
    graph = Graph(backend, plugins=[], cache=None)
    await graph.edges_from("S")
    await graph.edges_from("S")
    assert backend.calls["edges_from"] == 2


class SlowLoader:
    """A loader that blocks until released, recording each start and each cancellation."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.release = asyncio.Event()

    async def __call__(self) -> str:
        self.started += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return f"value {self.started}"


async def test_a_load_whose_only_waiter_is_cancelled_is_cancelled_and_a_retry_loads_again():
    cache = LruCache(10)
    stuck = SlowLoader()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(cache.get_or_load("k", stuck), 0.05)
    await asyncio.sleep(0)  # let the cancelled load run its cleanup
    assert stuck.cancelled == 1
    recovered = SlowLoader()
    recovered.release.set()
    assert await asyncio.wait_for(cache.get_or_load("k", recovered), 1.0) == "value 1"
    assert recovered.started == 1 and stuck.started == 1
    assert await cache.get_or_load("k", recovered) == "value 1" and recovered.started == 1  # cached


async def test_a_cancelled_waiter_leaves_the_shared_load_to_the_others():
    cache = LruCache(10)
    loader = SlowLoader()
    patient = asyncio.create_task(cache.get_or_load("k", loader))
    impatient = asyncio.create_task(cache.get_or_load("k", loader))
    await asyncio.sleep(0.01)
    impatient.cancel()
    with pytest.raises(asyncio.CancelledError):
        await impatient
    await asyncio.sleep(0.01)
    assert loader.cancelled == 0
    loader.release.set()
    assert await patient == "value 1"
    assert loader.started == 1
    assert await cache.get_or_load("k", loader) == "value 1" and loader.started == 1


async def test_a_batch_waiting_for_a_single_load_keeps_it_alive():
    cache = LruCache(10)
    loader = SlowLoader()
    single = asyncio.create_task(cache.get_or_load("k", loader))
    await asyncio.sleep(0.01)

    async def load_many(keys: list[str]) -> dict[str, str]:
        return {key: f"batch {key}" for key in keys}

    batch = asyncio.create_task(cache.get_many_or_load(["k", "j"], load_many))
    await asyncio.sleep(0.01)
    single.cancel()
    await asyncio.sleep(0.01)
    assert loader.cancelled == 0
    loader.release.set()
    assert await batch == {"k": "value 1", "j": "batch j"}


async def test_a_retry_after_a_timed_out_call_reaches_the_recovered_backend():
    backend = CountingBackend()
    graph = graph_of(backend)
    backend.delay = 3600.0  # a dead backend: the call hangs
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(graph.edges_from("S"), 0.05)
    backend.delay = 0.0
    assert await asyncio.wait_for(graph.edges_from("S"), 1.0)
    assert backend.calls["edges_from"] == 2


async def test_callers_sharing_a_batch_load_still_answer_when_its_owner_is_cancelled():
    """Regression (issue 19.1): the cancelled owner's CancelledError reached every waiter."""
    backend = CountingBackend()
    graph = graph_of(backend)
    backend.delay = 0.2
    owner = asyncio.create_task(graph.edges_from_many(["S", "A"]))
    await asyncio.sleep(0.05)  # the owner's load is under way
    waiters = [asyncio.create_task(graph.edges_from_many(["S", "A"])) for _ in range(3)]
    await asyncio.sleep(0.01)
    owner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await owner
    answers = await asyncio.gather(*waiters)
    assert all(answer == answers[0] and set(answer) == {"S", "A"} for answer in answers)
