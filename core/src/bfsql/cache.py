"""The primitive cache, itself a plugin on the per-graph plugin manager.

It answers a primitive call from a bounded LRU when it can and otherwise passes the
call (only the missing ids of a batch) to the rest of the hook chain. Concurrent
identical calls share one backend call, which is cancelled when every caller
waiting for it has been cancelled (a tool call that timed out), so that a retry asks
the backend again. Errors are never cached. ``entity_types`` and ``predicates`` are
kept for the life of the graph.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

import pluggy

from bfsql.hookspecs import hookimpl
from bfsql.models import Edge

__all__ = ["CacheConfig", "CachePlugin", "LruCache"]

_MISSING: Any = object()
_RETRY: Any = object()
"""What a batch load tells the callers waiting for it when the caller that started it was cancelled."""


@dataclass(frozen=True)
class CacheConfig:
    """Cache bounds."""

    maxsize: int = 4096
    """Entries kept per primitive."""
    ttl: float | None = 600.0
    """Seconds an entry stays valid; None keeps entries until evicted."""


class LruCache:
    """A bounded LRU with optional expiry and coalescing of concurrent loads."""

    def __init__(self, maxsize: int, ttl: float | None = None) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.ttl = ttl
        self._data: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[Any]] = {}
        self._waiters: dict[asyncio.Future[Any], int] = {}
        """Callers waiting for each load started by :meth:`get_or_load` (batch loads are not counted)."""
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Any:
        """The cached value, or the module's ``_MISSING`` sentinel."""
        item = self._data.get(key)
        if item is None:
            return _MISSING
        stamp, value = item
        if self.ttl is not None and time.monotonic() - stamp > self.ttl:
            del self._data[key]
            return _MISSING
        self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store a value, evicting the least recently used entries past ``maxsize``."""
        self._data[key] = (time.monotonic(), value)
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        self._data.clear()

    async def get_or_load(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        """Return the cached value or load it once, however many callers ask at once.

        The load outlives a cancelled caller while others still wait for it; once the
        last one is cancelled it is cancelled too and forgotten, so the next call
        starts a fresh load instead of joining one that may be stuck.
        """
        value = self.get(key)
        if value is not _MISSING:
            self.hits += 1
            return value
        pending = self._inflight.get(key)
        if pending is None:
            self.misses += 1
            pending = asyncio.create_task(self._load_one(key, load))
            self._inflight[key] = pending
            self._waiters[pending] = 0
        else:
            self.hits += 1
        self._join(pending)
        try:
            return await asyncio.shield(pending)
        finally:
            self._leave(key, pending)

    def _join(self, pending: asyncio.Future[Any]) -> asyncio.Future[Any]:
        """Count one more caller waiting for ``pending`` (if it is a counted load); ``pending``."""
        if pending in self._waiters:
            self._waiters[pending] += 1
        return pending

    def _leave(self, key: Hashable, pending: asyncio.Future[Any]) -> None:
        """One caller stopped waiting for ``pending``; cancel and forget the load if it was the last."""
        if pending not in self._waiters:
            return
        self._waiters[pending] -= 1
        if self._waiters[pending] > 0:
            return
        del self._waiters[pending]
        if not pending.done():
            pending.cancel()
            if self._inflight.get(key) is pending:
                del self._inflight[key]

    async def _load_one(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        try:
            value = await load()
            self.put(key, value)
            return value
        finally:
            # A cancelled load may finish after a fresh one for the same key took its place.
            if self._inflight.get(key) is asyncio.current_task():
                del self._inflight[key]

    async def get_many_or_load(
        self,
        keys: list[Hashable],
        load_many: Callable[[list[Any]], Awaitable[dict[Any, Any]]],
    ) -> dict[Any, Any]:
        """Answer a batch: cached keys from the cache, the rest with one ``load_many`` call.

        Keys already being loaded by another caller are awaited, not loaded twice.
        Keys that ``load_many`` leaves out (unknown entities) are left out here too
        and not cached.
        """
        result: dict[Any, Any] = {}
        waiting: dict[Any, asyncio.Future[Any]] = {}
        missing: list[Any] = []
        for key in dict.fromkeys(keys):
            value = self.get(key)
            if value is not _MISSING:
                self.hits += 1
                result[key] = value
            elif key in self._inflight:
                self.hits += 1
                waiting[key] = self._join(self._inflight[key])
            else:
                missing.append(key)
        try:
            if missing:
                self.misses += len(missing)
                loop = asyncio.get_running_loop()
                futures = {key: loop.create_future() for key in missing}
                self._inflight.update(futures)
                try:
                    loaded = await load_many(missing)
                except asyncio.CancelledError:
                    # This caller was cancelled, not the others: callers waiting for these keys load them again.
                    for key, fut in futures.items():
                        self._inflight.pop(key, None)
                        if not fut.done():
                            fut.set_result(_RETRY)
                    raise
                except BaseException as exc:
                    for key, fut in futures.items():
                        self._inflight.pop(key, None)
                        if not fut.done():
                            fut.set_exception(exc)
                            fut.exception()  # mark retrieved: the error is raised here, not lost
                    raise
                for key, fut in futures.items():
                    self._inflight.pop(key, None)
                    if key in loaded:
                        self.put(key, loaded[key])
                        result[key] = loaded[key]
                        fut.set_result(loaded[key])
                    else:
                        fut.set_result(_MISSING)
            retry: list[Any] = []
            for key, fut in waiting.items():
                try:
                    value = await asyncio.shield(fut)
                except KeyError:
                    continue
                if value is _RETRY:
                    retry.append(key)
                elif value is not _MISSING:
                    result[key] = value
            if retry:
                result.update(await self.get_many_or_load(retry, load_many))
            return {key: result[key] for key in dict.fromkeys(keys) if key in result}
        finally:
            for key, fut in waiting.items():
                self._leave(key, fut)


def _cached_by_id(hook: str) -> Any:
    """A tryfirst implementation of a single-id primitive, answered from the cache."""

    def impl(self: CachePlugin, entity_id: str) -> Awaitable[Any]:
        return self.caches[hook].get_or_load(entity_id, lambda: self._rest(hook)(entity_id=entity_id))

    impl.__name__ = impl.__qualname__ = hook
    impl.__doc__ = f"{hook}, from the cache when possible."
    return hookimpl(tryfirst=True)(impl)


def _cached_by_ids(hook: str, single: str) -> Any:
    """A tryfirst implementation of an id-batch primitive: cached ids from the cache, one call for the rest."""

    def impl(self: CachePlugin, entity_ids: list[str]) -> Awaitable[Any]:
        return self.caches[single].get_many_or_load(
            list(entity_ids), lambda missing: self._rest(hook)(entity_ids=missing)
        )

    impl.__name__ = impl.__qualname__ = hook
    impl.__doc__ = f"{hook}, sharing cache entries with {single}."
    return hookimpl(tryfirst=True)(impl)


class CachePlugin:
    """Caches the primitives of one graph. Registered ``tryfirst`` on its plugin manager."""

    _single = ("edges_from", "edges_to", "get_node", "metadata_for_node", "metadata_for_edge")

    def __init__(self, pm: pluggy.PluginManager, config: CacheConfig | None = None) -> None:
        self.config = config or CacheConfig()
        self._pm = pm
        self.caches = {name: LruCache(self.config.maxsize, self.config.ttl) for name in self._single}
        self._schema = LruCache(4, None)
        self._search = LruCache(min(self.config.maxsize, 512), self.config.ttl)
        self._vector = LruCache(min(self.config.maxsize, 512), self.config.ttl)
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

    def clear(self) -> None:
        """Forget everything cached, the schema included."""
        for cache in self.caches.values():
            cache.clear()
        self._schema.clear()
        self._search.clear()
        self._vector.clear()

    edges_from = _cached_by_id("edges_from")
    edges_to = _cached_by_id("edges_to")
    get_node = _cached_by_id("get_node")
    metadata_for_node = _cached_by_id("metadata_for_node")
    edges_from_many = _cached_by_ids("edges_from_many", "edges_from")
    edges_to_many = _cached_by_ids("edges_to_many", "edges_to")
    get_nodes = _cached_by_ids("get_nodes", "get_node")
    metadata_for_nodes = _cached_by_ids("metadata_for_nodes", "metadata_for_node")

    @hookimpl(tryfirst=True)
    def metadata_for_edge(self, edge: Edge) -> Awaitable[Any]:
        """metadata_for_edge, from the cache when possible."""
        return self.caches["metadata_for_edge"].get_or_load(edge, lambda: self._rest("metadata_for_edge")(edge=edge))

    @hookimpl(tryfirst=True)
    def metadata_for_edges(self, edges: list[Edge]) -> Awaitable[Any]:
        """metadata_for_edges, sharing cache entries with metadata_for_edge."""
        return self.caches["metadata_for_edge"].get_many_or_load(
            list(edges), lambda missing: self._rest("metadata_for_edges")(edges=missing)
        )

    @hookimpl(tryfirst=True)
    def search_entities(self, query: str, node_types: list[str] | None) -> Awaitable[Any]:
        """search_entities, from the cache when possible."""
        key = (query, tuple(node_types) if node_types is not None else None)
        return self._search.get_or_load(
            key, lambda: self._rest("search_entities")(query=query, node_types=node_types)
        )

    @hookimpl(tryfirst=True)
    def vector_search(self, vector: list[float], node_types: list[str] | None, limit: int) -> Awaitable[Any]:
        """vector_search, from the cache when possible (keyed by the vector itself)."""
        key = (tuple(vector), tuple(node_types) if node_types is not None else None, limit)
        return self._vector.get_or_load(
            key, lambda: self._rest("vector_search")(vector=vector, node_types=node_types, limit=limit)
        )

    @hookimpl(tryfirst=True)
    def entity_types(self) -> Awaitable[Any]:
        """entity_types, cached for the life of the graph."""
        return self._schema.get_or_load("entity_types", lambda: self._rest("entity_types")())

    @hookimpl(tryfirst=True)
    def predicates(self) -> Awaitable[Any]:
        """predicates, cached for the life of the graph."""
        return self._schema.get_or_load("predicates", lambda: self._rest("predicates")())
