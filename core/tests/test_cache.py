"""The primitive cache: coalescing, bounds, expiry, errors never cached, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from bfsql import AccessDenied, BackendFailure, CallIdentity, Capabilities, Graph, HopEdge, call_identity, identified_as
from bfsql.backends.memory import MemoryBackend
from bfsql.cache import CacheConfig, KeyCache, LruCache

from conftest import small_records


class CountingBackend(MemoryBackend):
    """A memory backend that counts calls and asked ids, can be slowed down, and can be told to fail."""

    capabilities = Capabilities(batch_primitives=True)  # not in_memory: its hops are cached

    def __init__(self) -> None:
        super().__init__(small_records())
        self.calls: dict[str, int] = {}
        self.asked: list[str] = []
        self.delay = 0.0
        self.fail = False

    async def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ConnectionError("backend down")

    async def hop(self, entity_ids: list[str]) -> dict[str, list[HopEdge]]:
        self.asked.extend(entity_ids)
        await self._count("hop")
        return await super().hop(entity_ids)

    async def entity_types(self) -> list[str]:
        await self._count("entity_types")
        return await super().entity_types()


def graph_of(backend: CountingBackend, maxsize: int = 100, ttl: float | None = None) -> Graph:
    return Graph(backend, plugins=[], cache=CacheConfig(maxsize=maxsize, ttl=ttl))


async def test_repeated_calls_hit_the_backend_once():
    backend = CountingBackend()
    graph = graph_of(backend)
    first = await graph.hop(["S"])
    assert await graph.hop(["S"]) == first
    assert backend.calls["hop"] == 1


async def test_concurrent_identical_calls_are_coalesced():
    backend = CountingBackend()
    backend.delay = 0.05
    graph = graph_of(backend)
    results = await asyncio.gather(*(graph.hop(["S", "A"]) for _ in range(20)))
    assert all(r == results[0] for r in results)
    assert backend.calls["hop"] == 1


async def test_a_batch_asks_only_for_the_ids_not_cached():
    backend = CountingBackend()
    graph = graph_of(backend)
    await graph.hop(["S"])
    answer = await graph.hop(["S", "A", "B", "A"])
    assert set(answer) == {"S", "A", "B"}
    assert backend.asked == ["S", "A", "B"]  # S came from the cache, A was asked once
    await graph.hop(["A", "B"])
    assert backend.calls["hop"] == 2


async def test_concurrent_overlapping_batches_load_each_id_once():
    backend = CountingBackend()
    backend.delay = 0.05
    graph = graph_of(backend)
    one, two = await asyncio.gather(graph.hop(["S", "A"]), graph.hop(["A", "B"]))
    assert set(one) == {"S", "A"} and set(two) == {"A", "B"}
    assert sorted(backend.asked) == ["A", "B", "S"]


async def test_unknown_ids_are_not_cached():
    backend = CountingBackend()
    graph = graph_of(backend)
    assert await graph.hop(["nope"]) == {}
    assert await graph.hop(["nope"]) == {}
    assert backend.calls["hop"] == 2


async def test_an_empty_batch_asks_nobody():
    backend = CountingBackend()
    graph = graph_of(backend)
    assert await graph.hop([]) == {}
    assert "hop" not in backend.calls


async def test_errors_are_never_cached_and_the_next_call_succeeds():
    backend = CountingBackend()
    graph = graph_of(backend)
    backend.fail = True
    with pytest.raises(BackendFailure, match="ConnectionError: backend down"):
        await graph.hop(["S"])
    backend.fail = False
    assert "S" in await graph.hop(["S"])
    assert backend.calls["hop"] == 2


async def test_coalesced_waiters_all_see_the_error():
    backend = CountingBackend()
    backend.delay, backend.fail = 0.05, True
    graph = graph_of(backend)
    results = await asyncio.gather(*(graph.hop(["S"]) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, BackendFailure) for r in results)
    assert backend.calls["hop"] == 1


async def test_cache_is_bounded_lru():
    backend = CountingBackend()
    graph = graph_of(backend, maxsize=2)
    for entity_id in ("S", "A", "B"):
        await graph.hop([entity_id])
    assert graph.cache is not None and len(graph.cache.caches["hop"].lru) == 2
    await graph.hop(["S"])  # evicted first, so fetched again
    assert backend.calls["hop"] == 4


def test_the_hop_cache_is_bounded_by_edges_too():
    cache = LruCache(100, max_weight=5, weigh=len)
    cache.put("hub", [1, 2, 3, 4])
    cache.put("small", [1])
    assert cache.weight == 5 and len(cache) == 2
    cache.put("other", [1, 2])
    assert cache.get("hub") is cache.get("missing")  # the oldest entry went to make room
    assert cache.weight == 3


async def test_entries_expire_after_ttl():
    cache = KeyCache(LruCache(10, ttl=0.01))
    cache.lru.put("k", 1)
    assert cache.lru.get("k") == 1
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
    await graph.hop(["S"])
    await graph.hop(["S"])
    assert backend.calls["hop"] == 2


async def test_an_in_memory_backend_is_not_cached_per_id():
    backend = MemoryBackend(small_records())
    graph = Graph(backend, plugins=[])
    await graph.hop(["S"])
    await graph.hop(["S"])
    assert graph.stats.calls["hop"] == 2
    await graph.entity_types()
    await graph.entity_types()
    assert graph.stats.calls["entity_types"] == 1  # schema lists are still kept


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
    cache = KeyCache(LruCache(10))
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
    cache = KeyCache(LruCache(10))
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


async def test_a_batch_waiting_for_another_callers_load_keeps_it_alive():
    cache = KeyCache(LruCache(10))
    loader = SlowLoader()
    single = asyncio.create_task(cache.get_or_load("k", loader))
    await asyncio.sleep(0.01)

    async def load_many(keys: list[str]) -> dict[str, str]:
        return {key: f"batch {key}" for key in keys}

    batch = asyncio.create_task(cache.get_many(["k", "j"], load_many))
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
        await asyncio.wait_for(graph.hop(["S"]), 0.05)
    backend.delay = 0.0
    assert await asyncio.wait_for(graph.hop(["S"]), 1.0)
    assert backend.calls["hop"] == 2


async def test_callers_sharing_a_batch_load_still_answer_when_its_owner_is_cancelled():
    """Cancelling the call that owns a shared load does not cancel the calls waiting on it: they get the answer."""
    backend = CountingBackend()
    graph = graph_of(backend)
    backend.delay = 0.2
    owner = asyncio.create_task(graph.hop(["S", "A"]))
    await asyncio.sleep(0.05)  # the owner's load is under way
    waiters = [asyncio.create_task(graph.hop(["S", "A"])) for _ in range(3)]
    await asyncio.sleep(0.01)
    owner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await owner
    answers = await asyncio.gather(*waiters)
    assert all(answer == answers[0] and set(answer) == {"S", "A"} for answer in answers)
    assert backend.calls["hop"] == 1  # the waiters shared the owner's load


class PerCallerBackend(CountingBackend):
    """Answers each caller differently (a store applying its own permissions): a caller named ``user:hidden-S``
    does not see entity S. Its store identity is the caller's principal."""

    def store_identity(self) -> str | None:
        identity = call_identity()
        if identity is not None and identity.principal == "user:nobody":
            raise AccessDenied("no store identity for user:nobody")
        return identity.principal if identity is not None else None

    async def hop(self, entity_ids: list[str]) -> dict[str, list[HopEdge]]:
        found = await super().hop(entity_ids)
        identity = call_identity()
        hidden = identity.principal.removeprefix("user:hidden-") if identity is not None else None
        return {k: v for k, v in found.items() if k != hidden}


async def test_the_cache_keeps_each_store_identity_apart():
    """When the store answers each caller as its own identity, a caller is never answered from what another
    identity read, and loads under way are shared only within one identity."""
    backend = PerCallerBackend()
    backend.delay = 0.02
    graph = graph_of(backend)

    async def hop_as(principal: str | None) -> set[str]:
        with identified_as(CallIdentity(principal) if principal else None):
            return set(await graph.hop(["S", "A"]))

    first = await asyncio.gather(hop_as("user:hidden-S"), hop_as(None), hop_as("user:hidden-S"), hop_as("user:x"))
    assert first == [{"A"}, {"S", "A"}, {"A"}, {"S", "A"}]
    assert backend.calls["hop"] == 3, "one load per identity, shared by the calls of the same identity"
    assert await hop_as("user:hidden-S") == {"A"} and await hop_as(None) == {"S", "A"}
    assert backend.calls["hop"] == 4, "S unknown to hidden-S is not cached for it, A is"
    with identified_as(CallIdentity("user:nobody")), pytest.raises(AccessDenied):
        await graph.entity_types()
