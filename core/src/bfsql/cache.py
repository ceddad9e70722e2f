"""The primitive cache, itself a plugin on each graph's plugin manager.

One cached implementation per primitive of the table (:mod:`bfsql.primitives`), chosen by
the primitive's :class:`~bfsql.primitives.CachePolicy`. A call is answered from a bounded LRU
where it can; the rest goes down the hook chain (overrides and the backend) as **one**
batch. Concurrent calls share the loads of the keys they have in common: a load is a task
of its own, not part of the call that started it, so cancelling that call (a client's
stop button, a tool timeout) ends only that call; the load is cancelled once no call
waits for it any more, so that a retry asks the backend again instead of joining a stuck
load. Errors are never cached.

Where the store applies each caller's own permissions (identity to the store, see
:mod:`bfsql.identity`), every key is kept under the store identity of the call that asked
(``partition``: the backend's :meth:`~bfsql.GraphBackend.store_identity`): a call is answered
only from what calls of the same identity read, and joins only their loads.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import pluggy

from bfsql.primitives import PRIMITIVES, CachePolicy, PrimitiveSpec, implementation
from bfsql.rows import Neighbourhood

__all__ = ["CacheConfig", "CachePlugin", "KeyCache", "LruCache"]

MISSING: Any = object()
"""What :meth:`LruCache.get` returns for a key it does not hold."""


@dataclass(frozen=True)
class CacheConfig:
    """Cache bounds."""

    maxsize: int = 4096
    """Entries kept per primitive."""
    ttl: float | None = 600.0
    """Seconds an entry stays valid; None keeps entries until evicted."""
    max_edges: int = 250_000
    """Edges kept in all by the cache of an edge-list primitive (``hop``: a hub's list is one entry of thousands).
    A cached edge holds about 200 bytes (its row, the other end's id and name): 250,000 are about 50 MB. At
    1,000,000 one wildcard path query on PostgreSQL at R-MAT 20 left the server 449 MB larger, the cache full."""


class LruCache:
    """A bounded LRU with optional expiry, bounded by entries and, optionally, by total weight."""

    def __init__(
        self,
        maxsize: int,
        ttl: float | None = None,
        max_weight: int | None = None,
        weigh: Callable[[Any], int] | None = None,
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.ttl = ttl
        self.max_weight = max_weight
        self._weigh = weigh
        self.weight = 0
        self._data: OrderedDict[Hashable, tuple[float, Any, int]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Any:
        """The cached value, or :data:`MISSING`."""
        item = self._data.get(key)
        if item is None:
            return MISSING
        if self.ttl is not None and time.monotonic() - item[0] > self.ttl:
            self._drop(key)
            return MISSING
        self._data.move_to_end(key)
        return item[1]

    def put(self, key: Hashable, value: Any, stamp: float | None = None) -> None:
        """Store a value, evicting the least recently used entries past the bounds."""
        if key in self._data:
            self._drop(key)
        weight = self._weigh(value) if self._weigh is not None else 1
        self._data[key] = (time.monotonic() if stamp is None else stamp, value, weight)
        self.weight += weight
        while len(self._data) > self.maxsize or (
            self.max_weight is not None and self.weight > self.max_weight and len(self._data) > 1
        ):
            _, (_, _, dropped) = self._data.popitem(last=False)
            self.weight -= dropped

    def _drop(self, key: Hashable) -> None:
        _, _, weight = self._data.pop(key)
        self.weight -= weight

    def clear(self) -> None:
        """Drop every entry."""
        self._data.clear()
        self.weight = 0


class _Load:
    """One backend call for some keys, awaited by every call that needs them."""

    __slots__ = ("keys", "task", "waiters")

    def __init__(self, keys: list[Any]) -> None:
        self.keys = keys
        self.waiters = 0
        self.task: asyncio.Task[dict[Any, Any]]


class KeyCache:
    """Answers ``{key: value}`` calls from an LRU, loading the missing keys in one shared call."""

    def __init__(self, lru: LruCache) -> None:
        self.lru = lru
        self._loading: dict[Hashable, _Load] = {}

    async def get_many(
        self, keys: Iterable[Hashable], load_many: Callable[[list[Any]], Awaitable[dict[Any, Any]]]
    ) -> dict[Any, Any]:
        """Cached keys from the cache, keys being loaded from their loads, the rest with one ``load_many``.

        Keys that ``load_many`` leaves out (unknown ids) are left out here too and not cached.
        """
        found: dict[Any, Any] = {}
        waiting: dict[_Load, list[Any]] = {}
        missing: list[Any] = []
        lru, loading = self.lru, self._loading
        for key in keys:
            value = lru.get(key)
            if value is not MISSING:
                found[key] = value
                continue
            load = loading.get(key)
            if load is None:
                missing.append(key)
            else:
                waiting.setdefault(load, []).append(key)
        lru.hits += len(found)
        lru.misses += len(missing)
        if missing:
            load = self._start(list(dict.fromkeys(missing)), load_many)
            waiting[load] = load.keys
        if waiting:
            await self._wait(waiting, found)
        return found

    async def get_or_load(self, key: Hashable, load_one: Callable[[], Awaitable[Any]]) -> Any:
        """The cached value of ``key``, or the one load of it, however many callers ask at once."""

        async def load_many(keys: list[Any]) -> dict[Any, Any]:
            return {key: await load_one()}

        return (await self.get_many([key], load_many))[key]

    def _start(self, keys: list[Any], load_many: Callable[[list[Any]], Awaitable[dict[Any, Any]]]) -> _Load:
        load = _Load(keys)

        async def run() -> dict[Any, Any]:
            try:
                answer = await load_many(keys)
                stamp = time.monotonic()
                # Only the last maxsize keys could stay: putting the others would evict them again.
                for key in keys[-self.lru.maxsize :]:
                    if key in answer:
                        self.lru.put(key, answer[key], stamp)
                return answer
            finally:
                self._forget(load)

        load.task = asyncio.create_task(run())
        load.task.add_done_callback(_retrieve)
        for key in keys:
            self._loading[key] = load
        return load

    async def _wait(self, waiting: dict[_Load, list[Any]], found: dict[Any, Any]) -> None:
        for load in waiting:
            load.waiters += 1
        try:
            for load, keys in waiting.items():
                answer = await asyncio.shield(load.task)
                for key in keys:
                    if key in answer:
                        found[key] = answer[key]
        finally:
            for load in waiting:
                load.waiters -= 1
                if load.waiters == 0 and not load.task.done():
                    load.task.cancel()  # nobody waits any more: a retry must not join a stuck load
                    self._forget(load)

    def _forget(self, load: _Load) -> None:
        for key in load.keys:
            if self._loading.get(key) is load:
                del self._loading[key]

    def clear(self) -> None:
        """Forget the cached entries (loads under way finish for their callers)."""
        self.lru.clear()


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a load's error as retrieved: the callers that waited got it; nobody else needs a log line."""
    if not task.cancelled():
        task.exception()


def _frozen(value: Any) -> Hashable:
    """A hashable form of a hook argument (lists become tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Partition:
    """The store identity a cached key belongs to (a type of its own: never equal to any argument value)."""

    identity: Hashable


async def _get_many_in(
    cache: KeyCache, partition: _Partition, keys: Iterable[Hashable],
    load_many: Callable[[list[Any]], Awaitable[dict[Any, Any]]],
) -> dict[Any, Any]:
    """:meth:`KeyCache.get_many` with every key kept under ``partition``."""

    async def load_in(missing: list[Any]) -> dict[Any, Any]:
        answer = await load_many([key for _, key in missing])
        return {(partition, key): value for key, value in answer.items()}

    found = await cache.get_many([(partition, key) for key in keys], load_in)
    return {key: value for (_, key), value in found.items()}


def _edge_count(value: Any) -> int:
    return 1 + len(value.edges) if isinstance(value, Neighbourhood) else 1


class CachePlugin:
    """Caches the primitives of one graph. Registered ``tryfirst`` on its plugin manager.

    ``policies`` limits caching to primitives of those policies (a backend answering from
    memory gains nothing from a per-key cache); the others pass through untouched.
    ``partition`` names the store identity of the running call (see the module); None: one for all.
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        config: CacheConfig | None = None,
        policies: frozenset[CachePolicy] = frozenset(CachePolicy),
        partition: Callable[[], Hashable | None] | None = None,
    ) -> None:
        self.config = config = config or CacheConfig()
        self._pm = pm
        self.policies = policies
        self._partition = partition
        self.caches: dict[str, KeyCache] = {}
        for spec in PRIMITIVES.values():
            if spec.cache is CachePolicy.NEVER:
                continue
            if spec.cache is CachePolicy.SESSION:
                lru = LruCache(4)
            elif spec.cache is CachePolicy.PER_CALL:
                lru = LruCache(min(config.maxsize, 512), config.ttl)
            elif spec.weighed:
                lru = LruCache(config.maxsize, config.ttl, config.max_edges, _edge_count)
            else:
                lru = LruCache(config.maxsize, config.ttl)
            self.caches[spec.name] = KeyCache(lru)
        self._rest_callers: dict[str, Any] = {}

    def _rest(self, hook: str) -> Any:
        """The hook chain below the cache: overrides and the backend, not the wrappers.

        Wrappers already ran around this call; leaving them out of the inner call means
        a wrapper sees each call exactly once, whether the cache or the backend answers.
        """
        caller = self._rest_callers.get(hook)
        if caller is None:
            wrappers = [
                impl.plugin
                for impl in getattr(self._pm.hook, hook).get_hookimpls()
                if impl.wrapper or impl.hookwrapper
            ]
            caller = self._pm.subset_hook_caller(hook, remove_plugins=[self, *wrappers])
            self._rest_callers[hook] = caller
        return caller

    def answer(self, spec: PrimitiveSpec, arguments: dict[str, Any]) -> Awaitable[Any] | None:
        """The cached answer of one primitive call (an awaitable), or None to pass the call on."""
        if spec.cache not in self.policies:
            return None
        cache, rest = self.caches[spec.name], self._rest(spec.name)
        identity = self._partition() if self._partition is not None else None
        if spec.keys is not None:
            keys = spec.keys

            def load(missing: list[Any]) -> Awaitable[dict[Any, Any]]:
                return rest(**{**arguments, keys: missing})  # type: ignore[no-any-return]

            if identity is not None:
                return _get_many_in(cache, _Partition(identity), arguments[keys], load)
            return cache.get_many(arguments[keys], load)
        key: Hashable = tuple(_frozen(arguments[name]) for name in spec.params)
        if identity is not None:
            key = (_Partition(identity), key)
        return cache.get_or_load(key, lambda: rest(**arguments))

    def clear(self, *names: str) -> None:
        """Forget what is cached for these primitives (all of them when none is named)."""
        for name in names or self.caches:
            self.caches[name].clear()


def _cached(spec: PrimitiveSpec) -> Callable[..., Any]:
    return implementation(spec, lambda plugin, arguments: plugin.answer(spec, arguments), tryfirst=True)


for _spec in PRIMITIVES.values():
    if _spec.cache is not CachePolicy.NEVER:  # a primitive never cached is no hook of the cache's
        setattr(CachePlugin, _spec.name, _cached(_spec))
