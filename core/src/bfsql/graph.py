"""Graph: one backend and the primitive plugins around it, behind a typed facade.

Each graph owns a plugin manager on which the backend is the terminal (``trylast``)
implementation of every primitive hook, the cache sits ``tryfirst``, and every
globally loaded plugin that implements a primitive or post-processing hook is
registered too. The engine and the server only ever talk to a :class:`Graph`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pluggy

from bfsql.backend import GraphDbInterface, has_vector_search
from bfsql.cache import CacheConfig, CachePlugin
from bfsql.embedders import CachedEmbedder, Embedder, HashingEmbedder, split_identifier
from bfsql.errors import BackendFailure
from bfsql.hookspecs import BATCH_HOOKS, PRIMITIVE_HOOKS, SEARCH_HOOKS, hookimpl
from bfsql.models import Edge, EntityStub, Node, ResultEdge

__all__ = ["BackendCallStats", "Graph", "then"]

T = TypeVar("T")
R = TypeVar("R")


async def then(inner: Awaitable[T], fn: Callable[[T], R | Awaitable[R]]) -> R:
    """Await ``inner`` and pass its result through ``fn`` (sync or async).

    The helper for async primitive wrappers::

        @bfsql.hookimpl(wrapper=True)
        def edges_from(entity_id):
            inner = yield
            return bfsql.then(inner, lambda edges: [e for e in edges if keep(e)])
    """
    value = fn(await inner)
    if inspect.isawaitable(value):
        return await value  # type: ignore[no-any-return]
    return value


@dataclass
class BackendCallStats:
    """How many calls reached the backend, per primitive (cache misses only)."""

    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def total(self) -> int:
        """All backend calls."""
        return sum(self.calls.values())


class _BackendTerminal:
    """Adapts a GraphDbInterface to the primitive hooks (the last implementation)."""

    def __init__(self, backend: GraphDbInterface, stats: BackendCallStats, timeout: float | None) -> None:
        self.backend = backend
        self.stats = stats
        self.timeout = timeout

    async def _timed(self, name: str, awaitable: Awaitable[T]) -> T:
        self.stats.calls[name] = self.stats.calls.get(name, 0) + 1
        start = time.perf_counter()
        try:
            return await asyncio.wait_for(awaitable, self.timeout)
        except TimeoutError:
            raise BackendFailure(
                f"The backend did not answer {name} within {self.timeout:g}s.",
                "The graph store is slow or unreachable; try again, or narrow the query.",
            ) from None
        finally:
            self.stats.seconds[name] = self.stats.seconds.get(name, 0.0) + time.perf_counter() - start

    @hookimpl(trylast=True)
    def search_entities(self, query: str, node_types: list[str] | None) -> Awaitable[list[EntityStub]]:
        return self._timed("search_entities", self.backend.search_entities(query, node_types))

    @hookimpl(trylast=True)
    def edges_from(self, entity_id: str) -> Awaitable[list[Edge]]:
        return self._timed("edges_from", self.backend.edges_from(entity_id))

    @hookimpl(trylast=True)
    def edges_to(self, entity_id: str) -> Awaitable[list[Edge]]:
        return self._timed("edges_to", self.backend.edges_to(entity_id))

    @hookimpl(trylast=True)
    def get_node(self, entity_id: str) -> Awaitable[Node]:
        return self._timed("get_node", self.backend.get_node(entity_id))

    @hookimpl(trylast=True)
    def metadata_for_node(self, entity_id: str) -> Awaitable[dict[str, Any]]:
        return self._timed("metadata_for_node", self.backend.metadata_for_node(entity_id))

    @hookimpl(trylast=True)
    def metadata_for_edge(self, edge: Edge) -> Awaitable[dict[str, Any]]:
        return self._timed("metadata_for_edge", self.backend.metadata_for_edge(edge))

    @hookimpl(trylast=True)
    def entity_types(self) -> Awaitable[list[str]]:
        return self._timed("entity_types", self.backend.entity_types())

    @hookimpl(trylast=True)
    def predicates(self) -> Awaitable[list[str]]:
        return self._timed("predicates", self.backend.predicates())

    @hookimpl(trylast=True)
    def vector_search(
        self, vector: list[float], node_types: list[str] | None, limit: int
    ) -> Awaitable[list[EntityStub]]:
        return self._timed("vector_search", self.backend.vector_search(vector, node_types, limit))

    @hookimpl(trylast=True)
    def edges_from_many(self, entity_ids: list[str]) -> Awaitable[dict[str, list[Edge]]]:
        return self._timed("edges_from_many", self.backend.edges_from_many(entity_ids))

    @hookimpl(trylast=True)
    def edges_to_many(self, entity_ids: list[str]) -> Awaitable[dict[str, list[Edge]]]:
        return self._timed("edges_to_many", self.backend.edges_to_many(entity_ids))

    @hookimpl(trylast=True)
    def get_nodes(self, entity_ids: list[str]) -> Awaitable[dict[str, Node]]:
        return self._timed("get_nodes", self.backend.get_nodes(entity_ids))

    @hookimpl(trylast=True)
    def metadata_for_nodes(self, entity_ids: list[str]) -> Awaitable[dict[str, dict[str, Any]]]:
        return self._timed("metadata_for_nodes", self.backend.metadata_for_nodes(entity_ids))

    @hookimpl(trylast=True)
    def metadata_for_edges(self, edges: list[Edge]) -> Awaitable[dict[Edge, dict[str, Any]]]:
        return self._timed("metadata_for_edges", self.backend.metadata_for_edges(edges))


DEFAULT_PRIMITIVE_TIMEOUT = 30.0
"""Seconds one backend call may take."""

DEFAULT_CACHE = CacheConfig()
"""The cache bounds used when none are given."""

_GRAPH_HOOKS = frozenset(
    PRIMITIVE_HOOKS + BATCH_HOOKS + SEARCH_HOOKS + ("process_node", "process_edge", "process_result")
)


class Graph:
    """A backend wrapped by the primitive hooks of its own plugin manager.

    ``plugins`` defaults to every plugin loaded by :func:`bfsql.plugins.get_plugin_manager`
    that implements a primitive or post-processing hook. ``cache=None`` disables caching.
    ``embedder`` (default: the built-in ``hashing`` embedder) makes query vectors for
    vector search and scores fuzzy matches in path queries; its answers are cached (LRU).
    ``primitive_timeout`` bounds every backend call; one that takes longer fails with a
    :class:`~bfsql.errors.BackendFailure` naming the primitive (None: no bound).
    """

    def __init__(
        self,
        backend: GraphDbInterface,
        *,
        plugins: list[object] | None = None,
        cache: CacheConfig | None = DEFAULT_CACHE,
        name: str = "graph",
        embedder: Embedder | None = None,
        primitive_timeout: float | None = DEFAULT_PRIMITIVE_TIMEOUT,
    ) -> None:
        from bfsql.plugins import get_plugin_manager, new_plugin_manager

        self.backend = backend
        self.name = name
        self.stats = BackendCallStats()
        self.pm: pluggy.PluginManager = new_plugin_manager()
        self.pm.register(_BackendTerminal(backend, self.stats, primitive_timeout), name="backend")
        if plugins is None:
            global_pm = get_plugin_manager()
            plugins = [
                plugin
                for plugin in global_pm.get_plugins()
                if any(caller.name in _GRAPH_HOOKS for caller in global_pm.get_hookcallers(plugin) or [])
            ]
        for plugin in plugins:
            self.pm.register(plugin)
        self.cache: CachePlugin | None = None
        if cache is not None:
            self.cache = CachePlugin(self.pm, cache)
            self.pm.register(self.cache, name="cache")
        self._embedder = CachedEmbedder(embedder or HashingEmbedder())
        self._embedder_bound = False
        self._bind_lock = asyncio.Lock()
        self._predicate_vectors: dict[str, list[float]] = {}

    @property
    def hook(self) -> Any:
        """The raw pluggy hook relay of this graph."""
        return self.pm.hook

    @property
    def capabilities(self) -> Any:
        """The backend's capability flags."""
        return self.backend.capabilities

    # Embeddings.

    @property
    def embedder(self) -> CachedEmbedder:
        """The graph's embedder, behind an LRU of recent texts."""
        return self._embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """Use another embedder (before the graph serves; forgets cached vectors)."""
        self._embedder = CachedEmbedder(embedder)
        self._embedder_bound = False
        self._predicate_vectors.clear()
        if self.cache is not None:
            self.cache._vector.clear()

    async def bind_embedder(self) -> None:
        """Tell the backend which embedder makes query vectors (once; raises on a mismatch)."""
        if self._embedder_bound:
            return
        async with self._bind_lock:
            if not self._embedder_bound:
                await self.backend.bind_embedder(self._embedder.inner)
                self._embedder_bound = True

    @property
    def has_vector_search(self) -> bool:
        """Whether the backend offers vector search (see :func:`bfsql.backend.has_vector_search`)."""
        return has_vector_search(self.backend)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` from the graph's embedder (cached)."""
        return await self._embedder.embed(list(texts))

    async def predicate_vectors(self, predicates: list[str]) -> dict[str, list[float]]:
        """Vectors of predicates split into words (``BORN_ON`` -> ``born on``), computed once per graph."""
        missing = [p for p in dict.fromkeys(predicates) if p not in self._predicate_vectors]
        if missing:
            vectors = await self._embedder.inner.embed([split_identifier(p) or p for p in missing])
            self._predicate_vectors.update(zip(missing, vectors, strict=True))
        return {p: self._predicate_vectors[p] for p in predicates}

    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = 20
    ) -> list[EntityStub]:
        """Entities nearest to ``vector`` (cosine ``score``), through the ``vector_search`` hook (cached)."""
        await self.bind_embedder()
        result: list[EntityStub] = await self.pm.hook.vector_search(
            vector=list(vector), node_types=node_types, limit=limit
        )
        return result

    async def aclose(self) -> None:
        """Close the backend."""
        await self.backend.aclose()

    async def __aenter__(self) -> Graph:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # The eight primitives.

    async def search_entities(self, query: str, node_types: list[str] | None = None) -> list[EntityStub]:
        """Ranked stubs matching ``query``, restricted to ``node_types`` when given."""
        result: list[EntityStub] = await self.pm.hook.search_entities(query=query, node_types=node_types)
        return result

    async def edges_from(self, entity_id: str) -> list[Edge]:
        """Outgoing edges; KeyError for an unknown id."""
        result: list[Edge] = await self.pm.hook.edges_from(entity_id=entity_id)
        return result

    async def edges_to(self, entity_id: str) -> list[Edge]:
        """Incoming edges; KeyError for an unknown id."""
        result: list[Edge] = await self.pm.hook.edges_to(entity_id=entity_id)
        return result

    async def get_node(self, entity_id: str) -> Node:
        """Identity of one entity; KeyError for an unknown id."""
        result: Node = await self.pm.hook.get_node(entity_id=entity_id)
        return result

    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """Metadata of one entity; KeyError for an unknown id."""
        result: dict[str, Any] = await self.pm.hook.metadata_for_node(entity_id=entity_id)
        return result

    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """Metadata of one edge."""
        result: dict[str, Any] = await self.pm.hook.metadata_for_edge(edge=edge)
        return result

    async def entity_types(self) -> list[str]:
        """Entity type names, sorted."""
        result: list[str] = await self.pm.hook.entity_types()
        return result

    async def predicates(self) -> list[str]:
        """Predicate names, sorted."""
        result: list[str] = await self.pm.hook.predicates()
        return result

    # Batch primitives.

    async def edges_from_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Outgoing edges of many entities; unknown ids left out."""
        if not entity_ids:
            return {}
        result: dict[str, list[Edge]] = await self.pm.hook.edges_from_many(entity_ids=list(entity_ids))
        return result

    async def edges_to_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Incoming edges of many entities; unknown ids left out."""
        if not entity_ids:
            return {}
        result: dict[str, list[Edge]] = await self.pm.hook.edges_to_many(entity_ids=list(entity_ids))
        return result

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, Node]:
        """Identities of many entities; unknown ids left out."""
        if not entity_ids:
            return {}
        result: dict[str, Node] = await self.pm.hook.get_nodes(entity_ids=list(entity_ids))
        return result

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of many entities; unknown ids left out."""
        if not entity_ids:
            return {}
        result: dict[str, dict[str, Any]] = await self.pm.hook.metadata_for_nodes(entity_ids=list(entity_ids))
        return result

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of many edges, keyed by edge."""
        if not edges:
            return {}
        result: dict[Edge, dict[str, Any]] = await self.pm.hook.metadata_for_edges(edges=list(edges))
        return result

    # Post-processing.

    def process_node(self, node: Node, tool: str) -> Node:
        """Run the ``process_node`` hooks on a full node; returns it for chaining."""
        self.pm.hook.process_node(node=node, tool=tool)
        return node

    def process_edge(self, edge: ResultEdge, tool: str) -> ResultEdge:
        """Run the ``process_edge`` hooks on a full edge; returns it for chaining."""
        self.pm.hook.process_edge(edge=edge, tool=tool)
        return edge

    def process_result(self, result: T, tool: str) -> T:
        """Run the ``process_result`` hooks on a whole result; returns it for chaining."""
        self.pm.hook.process_result(result=result, tool=tool)
        return result
