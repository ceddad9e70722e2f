"""Graph: one backend and the primitive plugins around it, behind a typed facade.

Each graph owns a plugin manager on which the backend is the terminal (``trylast``)
implementation of every primitive hook, the cache sits ``tryfirst``, and every globally
loaded plugin that implements a primitive or post-processing hook is registered too. The
facade's primitive methods come from the primitive table (:class:`Graph` subclasses
:class:`~bfsql.primitives.Primitives`); the single-id calls of seed 000 (``get_node``,
``edges_from`` …) are derived here from the batch primitives, never hooks. The engine and
the server only ever talk to a :class:`Graph`: every graph-level question (its description,
workflow advice, the cuts its store made, the embedder of its stored vectors, its health) is a
method here, never asked of ``graph.backend`` (``tests/test_architecture.py`` checks).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pluggy
from pluggy import HookImpl

from bfsql.backend import GraphBackend, gather_or_cancel, has_vector_search
from bfsql.cache import CacheConfig, CachePlugin
from bfsql.embedders import CachedEmbedder, Embedder, HashingEmbedder, split_identifier
from bfsql.errors import BackendFailure, BfsqlError, StoreTimeout, clip
from bfsql.examples import DEMO, Examples
from bfsql.models import Node, Truncation
from bfsql.plugins import get_plugin_manager, new_plugin_manager
from bfsql.primitives import PRIMITIVES, CachePolicy, Primitives, PrimitiveSpec, hook_caller, implementation
from bfsql.rows import Edge
from bfsql.tracing import primitive_span, tracing

__all__ = ["BackendCallStats", "Graph", "then"]

T = TypeVar("T")
R = TypeVar("R")


async def then(inner: Awaitable[T], fn: Callable[[T], R | Awaitable[R]]) -> R:
    """Await ``inner`` and pass its result through ``fn`` (sync or async).

    The helper for async primitive wrappers::

        @bfsql.hookimpl(wrapper=True)
        def hop(entity_ids):
            inner = yield
            return bfsql.then(inner, lambda found: {
                i: there._replace(edges=[e for e in there.edges if e.predicate != "secret"])
                for i, there in found.items()})
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
    """The last implementation of every primitive hook: the backend's method of the same name."""

    def __init__(self, backend: GraphBackend, stats: BackendCallStats, timeout: float | None, graph: str) -> None:
        self.backend = backend
        self.graph = graph
        self.stats = stats
        self.timeout = timeout
        # Seed 000's search_entities takes no limit; such a backend's answer is cut here instead.
        self._search_takes_limit = "limit" in inspect.signature(backend.search_entities).parameters

    def call(self, spec: PrimitiveSpec, values: tuple[Any, ...]) -> Awaitable[Any]:
        """The backend's answer to one primitive call (its arguments in the table's order), timed and bounded by the
        primitive timeout."""
        if spec.name == "search_entities" and not self._search_takes_limit:
            return self._timed(spec.name, self._first(self.backend.search_entities(*values[:-1]), values[-1]))
        return self._timed(spec.name, getattr(self.backend, spec.name)(*values))

    @staticmethod
    async def _first(answer: Awaitable[list[Any]], limit: int) -> list[Any]:
        return (await answer)[: max(0, limit)]

    async def _timed(self, name: str, awaitable: Awaitable[T]) -> T:
        self.stats.calls[name] = self.stats.calls.get(name, 0) + 1
        start = time.perf_counter()
        try:
            if self.timeout is None and not tracing():
                return await awaitable
            with primitive_span(self.graph, name):
                if self.timeout is None:
                    return await awaitable
                async with asyncio.timeout(self.timeout):  # no task of its own, unlike wait_for on 3.11
                    return await awaitable
        except TimeoutError:
            raise StoreTimeout(
                f"The backend did not answer {name} within {self.timeout:g}s.", self.backend.slow_store_advice,
            ) from None
        except BfsqlError:
            raise
        except Exception as exc:
            # Whatever else a backend raises is the backend's failure, never blamed on bfsql or the caller.
            raise BackendFailure(
                f"The graph backend failed in {name} ({type(exc).__name__}: {clip(str(exc), 300)}).",
                "This is not caused by your arguments; try again shortly.",
            ) from exc
        finally:
            self.stats.seconds[name] = self.stats.seconds.get(name, 0.0) + time.perf_counter() - start


def _terminal(spec: PrimitiveSpec) -> Callable[..., Any]:
    return implementation(spec, lambda terminal, arguments: terminal.call(spec, tuple(arguments.values())),
                          trylast=True)


for _spec in PRIMITIVES.values():
    setattr(_BackendTerminal, _spec.name, _terminal(_spec))


DEFAULT_CACHE = CacheConfig()
"""The cache bounds used when none are given."""

POST_PROCESSING_HOOKS = ("process_nodes", "process_edges", "process_result")

_GRAPH_HOOKS = frozenset(PRIMITIVES) | frozenset(POST_PROCESSING_HOOKS)


class Graph(Primitives):
    """A backend wrapped by the primitive hooks of its own plugin manager.

    The primitives (``get_nodes``, ``hop`` … see :class:`~bfsql.primitives.Primitives`) are
    methods of the graph that call its hooks. ``plugins`` defaults to every plugin loaded by
    :func:`bfsql.plugins.get_plugin_manager` that implements a primitive or post-processing
    hook. ``cache=None`` disables caching. ``embedder`` (default: the built-in ``hashing``
    embedder) makes query vectors for vector search and scores fuzzy matches in path
    queries; its answers are cached (LRU). ``primitive_timeout`` bounds every backend call;
    one that takes longer fails with a :class:`~bfsql.errors.BackendFailure` naming the
    primitive (None, the default: no bound; a server passes its ``primitive_timeout`` setting).
    ``description`` is how a server describes the graph (a configuration file's words; None:
    the backend's own ``graph_description``). The graph is the one owner of the description a
    client is shown (:meth:`describe`, :attr:`shown_description`).
    """

    def __init__(
        self,
        backend: GraphBackend,
        *,
        plugins: list[object] | None = None,
        cache: CacheConfig | None = DEFAULT_CACHE,
        name: str = "graph",
        embedder: Embedder | None = None,
        primitive_timeout: float | None = None,
        description: str | None = None,
    ) -> None:
        self.backend = backend
        self.name = name
        self.description = description
        """How the server describes the graph (a configuration file's words); None: the backend's own."""
        self.stored_description: str | None = None
        """The store's own description (the backend's ``graph_description``), once :meth:`describe` has read it."""
        self.examples: Examples = DEMO
        """The examples of the texts a client reads, in this graph's words (set when a server starts serving it)."""
        self.stats = BackendCallStats()
        self.pm: pluggy.PluginManager = new_plugin_manager()
        self._terminal = _BackendTerminal(backend, self.stats, primitive_timeout, name)
        for spec in PRIMITIVES.values():  # each stub of the table, answered by its hook
            setattr(self, spec.name, hook_caller(spec, self._answerer(spec)))
        self.pm.register(self._terminal, name="backend")
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
            policies = frozenset(CachePolicy)
            if backend.capabilities.in_memory:
                policies -= {CachePolicy.PER_KEY}
            own_identity = type(backend).store_identity is not GraphBackend.store_identity
            self.cache = CachePlugin(self.pm, cache, policies, backend.store_identity if own_identity else None)
            self.pm.register(self.cache, name="cache")
        self._embedder = CachedEmbedder(embedder or HashingEmbedder())
        self.embedder_chosen = embedder is not None
        """Whether the graph was built with its embedder (a server then keeps it, whatever its embedder setting)."""
        self._embedder_bound = False
        self._bind_lock = asyncio.Lock()
        self._predicate_vectors: dict[str, list[float]] = {}

    def _answerer(self, spec: PrimitiveSpec) -> Callable[[tuple[Any, ...]], Awaitable[Any]]:
        """How the graph answers a call of the primitive ``spec``: by its hook, or by the backend itself while
        the backend alone implements the hook (no plugin, nor the cache, which hooks no primitive it never
        caches), where pluggy's round would add nothing but its cost. (pluggy's call monitoring, which bfsql
        does not use, then sees no such call.)"""
        hook, terminal = getattr(self.pm.hook, spec.name), self._terminal

        def answer(values: tuple[Any, ...]) -> Awaitable[Any]:
            implementations: list[HookImpl] = hook.get_hookimpls()
            if len(implementations) == 1 and implementations[0].plugin is terminal:
                return terminal.call(spec, values)
            return hook(**dict(zip(spec.params, values, strict=True)))  # type: ignore[no-any-return]

        return answer

    @property
    def hook(self) -> Any:
        """The raw pluggy hook relay of this graph."""
        return self.pm.hook

    @property
    def capabilities(self) -> Any:
        """The backend's capability flags."""
        return self.backend.capabilities

    # Graph-level questions: what describe_schema, the engine's answers and readiness checks ask.

    async def describe(self) -> str:
        """The description clients are shown: the configured words, else the store's own (read now)."""
        return self.description or await self.read_stored_description()

    async def read_stored_description(self) -> str:
        """The store's own description (the backend's ``graph_description``), read now and kept as
        :attr:`stored_description`: a server reads it at start-up, so that :attr:`shown_description` answers
        without a call and ``bfsql tools`` can say which description is shown."""
        self.stored_description = await self.backend.graph_description()
        return self.stored_description

    @property
    def shown_description(self) -> str | None:
        """The description clients are shown, without a call: the configured words, else the store's own as last
        read (None before that)."""
        return self.description or self.stored_description

    async def next_steps(self) -> str | None:
        """The store's own workflow advice for describe_schema, or None (the server's default then)."""
        return await self.backend.next_steps()

    def truncations(self, entity_ids: set[str]) -> list[Truncation]:
        """What the store cut from what it returned for these entities (an edge limit, say); a traversal answer
        that reached any of them lists these in its ``truncated``."""
        return self.backend.truncations(entity_ids)

    async def health(self) -> list[str]:
        """What makes the store's answers stale or unavailable now, one sentence each; [] when nothing does."""
        return await self.backend.health()

    async def probe(self, entity_id: str) -> list[str]:
        """Ask the store itself (past the cache and every plugin) for one entity, and for its :meth:`health`.

        For readiness checks: an answer means the store answered now. Raises what the store raises.
        """
        _, problems = await gather_or_cancel(self.backend.get_nodes([entity_id]), self.backend.health())
        return list(problems)

    @property
    def stored_embedder(self) -> tuple[str, int] | None:
        """``(name, dimension)`` of the embedder that made the store's entity vectors, when the store says."""
        return self.backend.vector_embedder

    def walks_in_store(self, primitive: str) -> bool:
        """Whether the engine may ask the backend's ``traverse`` (or ``intersect``, ``closure``) instead of walking
        hop by hop.

        The backend must implement it and say so (``capabilities.traversal``), and no plugin of this graph
        may hook ``hop`` or ``get_nodes`` (an access-control wrapper, say): a walk inside the store would
        pass it by.
        """
        if not self.backend.capabilities.traversal or getattr(type(self.backend), primitive) is getattr(
            Primitives, primitive
        ):
            return False
        own = {self._terminal, self.cache}
        return all(impl.plugin in own for name in ("hop", "get_nodes")
                   for impl in getattr(self.pm.hook, name).get_hookimpls())

    # Embeddings.

    @property
    def embedder(self) -> CachedEmbedder:
        """The graph's embedder, behind an LRU of recent texts."""
        return self._embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """Use another embedder (before the graph serves; forgets cached vectors)."""
        self._embedder = CachedEmbedder(embedder)
        self.embedder_chosen = True
        self._embedder_bound = False
        self._predicate_vectors.clear()
        if self.cache is not None:
            self.cache.clear("vector_search")

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

    async def aclose(self) -> None:
        """Close the backend."""
        await self.backend.aclose()

    async def __aenter__(self) -> Graph:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # Seed 000's single-id calls, derived from the batch primitives.

    async def get_node(self, entity_id: str) -> Node:
        """Identity of one entity; KeyError for an unknown id."""
        found = await self.get_nodes([entity_id])
        if entity_id not in found:
            raise KeyError(entity_id)
        return Node(id=entity_id, entity_type=found[entity_id].entity_type)

    async def _edges(self, entity_id: str, end: int) -> list[Edge]:
        found = (await self.hop([entity_id])).get(entity_id)
        if found is None:
            raise KeyError(entity_id)
        return sorted(Edge(r[0], r[1], r[2]) for r in found.edges if r[end] == entity_id)

    async def edges_from(self, entity_id: str) -> list[Edge]:
        """Outgoing edges, sorted; KeyError for an unknown id."""
        return await self._edges(entity_id, 0)

    async def edges_to(self, entity_id: str) -> list[Edge]:
        """Incoming edges, sorted; KeyError for an unknown id."""
        return await self._edges(entity_id, 2)

    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """Metadata of one entity; KeyError for an unknown id."""
        return (await self.metadata_for_nodes([entity_id]))[entity_id]

    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """Metadata of one edge with its ``provenance`` (when the store has any); ``{}`` for an unknown edge."""
        edge = Edge(*edge)
        metadata, provenance = await gather_or_cancel(
            self.metadata_for_edges([edge]), self.provenance_for_edges([edge])
        )
        found = dict(metadata.get(edge) or {})
        if found and provenance.get(edge):
            found["provenance"] = provenance[edge]
        return found

    # Post-processing.

    def process_nodes(self, metadata: dict[str, dict[str, Any]], tool: str) -> dict[str, dict[str, Any]]:
        """Run the ``process_nodes`` hooks on the metadata of an answer's full nodes; returns it for chaining."""
        if metadata:
            self.pm.hook.process_nodes(metadata=metadata, tool=tool)
        return metadata

    def process_edges(
        self, metadata: dict[tuple[str, str, str], dict[str, Any]], tool: str
    ) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Run the ``process_edges`` hooks on the metadata of an answer's full edges; returns it for chaining."""
        if metadata:
            self.pm.hook.process_edges(metadata=metadata, tool=tool)
        return metadata

    def process_result(self, result: T, tool: str) -> T:
        """Run the ``process_result`` hooks on a whole result; returns it for chaining."""
        self.pm.hook.process_result(result=result, tool=tool)
        return result
