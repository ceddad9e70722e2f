"""The primitive table: every primitive a graph answers, written once.

Each primitive is a stub method of :class:`Primitives` marked with :func:`primitive`. The
stub's name, parameters and return type are the primitive's; its docstring is the contract;
``cache=`` says how a graph caches it; an optional primitive's body is its default. From this
table alone:

* the backend contract: :class:`bfsql.backend.GraphBackend` subclasses :class:`Primitives`, so
  a backend implements these very methods (the required ones are abstract there), and the
  conformance suite checks that every backend method has the table's parameters;
* every graph's plugin manager gets one ``firstresult`` hookspec per primitive
  (:class:`PrimitiveHookspecs`), so plugins wrap or answer primitives by these names;
* :mod:`bfsql.graph` builds the terminal implementation that calls the backend's method of
  the same name, and the :class:`~bfsql.graph.Graph` facade (a subclass of
  :class:`Primitives`) answers each stub by calling its hook;
* :mod:`bfsql.cache` builds one cached implementation per primitive from its policy.

Adding a primitive is one stub here (plus an implementation in the backends that answer it).

All primitives are batch-level: they take many ids (or edges) at once. The single-id calls
of seed 000's contract (``get_node``, ``edges_from`` …) are derived from them by the facade
and are never hooks, so a wrapper written once on a primitive changes what every tool answers.
Every hook returns an awaitable.
"""

from __future__ import annotations

import enum
import inspect
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from bfsql.budgets import TraversalLimits
from bfsql.hookspecs import hookimpl, hookspec
from bfsql.models import EntityStub
from bfsql.rows import Closure, Edge, GraphStatistics, Neighbourhood, NodeInfo, Overlap, Survey

__all__ = [
    "HUBS",
    "PRIMITIVES",
    "SEARCH_LIMIT",
    "CachePolicy",
    "PrimitiveHookspecs",
    "PrimitiveSpec",
    "Primitives",
    "bind",
    "hook_caller",
    "implementation",
    "primitive",
]

F = TypeVar("F", bound=Callable[..., Any])

SEARCH_LIMIT = 20
"""Candidates a search asks a ranker for, unless told otherwise."""

HUBS = 10
"""Best-connected entities the ``statistics`` primitive names, unless told otherwise."""


class CachePolicy(enum.Enum):
    """How a graph caches a primitive."""

    PER_KEY = "per key"
    """The primitive takes a list of keys (ids or edges) and answers ``{key: value}``; each key's
    value is cached on its own, a call asks the backend only for the keys not cached, and
    concurrent calls share the loads of the keys they have in common. Keys left out of an
    answer (unknown ids) are not cached."""
    PER_CALL = "per call"
    """The whole answer, keyed by all the arguments, for the cache's time to live."""
    SESSION = "session"
    """The whole answer, kept for the life of the graph (schema lists)."""
    NEVER = "never"
    """Not cached: each answer is a whole traversal's, costly to keep and rarely asked twice."""


@dataclass(frozen=True)
class PrimitiveSpec:
    """One entry of the table, as read from its stub."""

    name: str
    params: tuple[str, ...]
    """Parameter names, in order (hooks are called with keyword arguments)."""
    defaults: dict[str, Any]
    cache: CachePolicy
    keys: str | None
    """The parameter holding the keys of a PER_KEY primitive."""
    weighed: bool
    """A cached value weighs its length (an edge list), not one entry: the cache bounds their total."""
    optional: bool
    """Not every backend answers it (the stub's body is the default); the backend's capabilities say."""
    doc: str
    hookspec: Callable[..., Any]
    """The function pluggy reads as the hookspec (the stub without defaults); implementations generated
    for this primitive wrap it, so that pluggy reads their parameters from it."""


PRIMITIVES: dict[str, PrimitiveSpec] = {}
"""Every primitive by name, in the order of the table."""

_MARK = "__bfsql_primitive__"


def primitive(*, cache: CachePolicy, optional: bool = False, weighed: bool = False) -> Callable[[F], F]:
    """Mark a stub method of :class:`Primitives` as a primitive with the given cache policy.

    A required primitive's stub is abstract, so that a backend (an ABC) must implement it.
    """

    def mark(stub: F) -> F:
        setattr(stub, _MARK, (cache, optional, weighed))
        if not optional:
            stub.__isabstractmethod__ = True  # type: ignore[attr-defined]
        return stub

    return mark


def _spec(stub: Callable[..., Any]) -> PrimitiveSpec:
    cache, optional, weighed = getattr(stub, _MARK)
    params = [p for p in inspect.signature(stub).parameters.values() if p.name != "self"]
    return PrimitiveSpec(
        name=stub.__name__,
        params=tuple(p.name for p in params),
        defaults={p.name: p.default for p in params if p.default is not inspect.Parameter.empty},
        cache=cache,
        keys=params[0].name if cache is CachePolicy.PER_KEY else None,
        weighed=weighed,
        optional=optional,
        doc=inspect.cleandoc(stub.__doc__ or ""),
        hookspec=hookspec(firstresult=True)(_without_defaults(stub)),
    )


def _without_defaults(stub: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of ``stub`` whose parameters have no defaults.

    pluggy passes hook arguments by name and treats parameters with defaults as optional
    extras; every argument of a primitive hook is always passed, so the spec takes none.
    """
    copy = types.FunctionType(stub.__code__, stub.__globals__, stub.__name__, None, stub.__closure__)
    copy.__qualname__, copy.__doc__, copy.__annotations__ = stub.__qualname__, stub.__doc__, stub.__annotations__
    return copy


def hook_caller(
    spec: PrimitiveSpec, answer: Callable[[tuple[Any, ...]], Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    """A coroutine function taking the stub's arguments (positional or keyword), answered by ``answer(values)``:
    the values of the stub's parameters in their order, defaults filled in (the graph's answer: its hook).

    An empty batch of keys is answered ``{}`` without calling anyone.
    """
    count, keys = len(spec.params), spec.params.index(spec.keys) if spec.keys is not None else None

    async def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != count:
            args = bind(spec, args, kwargs)
        if keys is not None:
            if not args[keys]:
                return {}
            args = (*args[:keys], list(args[keys]), *args[keys + 1 :])
        return await answer(args)

    call.__name__ = call.__qualname__ = spec.name
    call.__doc__ = spec.doc
    return call


def bind(spec: PrimitiveSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The values of ``spec``'s parameters, in order, from a call's arguments and the defaults.

    Keyword arguments the primitive has no parameter for are ignored, as pluggy ignores them.
    """
    values = list(args[: len(spec.params)])
    for name in spec.params[len(values) :]:
        if name in kwargs:
            values.append(kwargs[name])
        elif name in spec.defaults:
            values.append(spec.defaults[name])
        else:
            raise TypeError(f"{spec.name}() missing its argument {name!r}")
    return tuple(values)


def implementation(
    spec: PrimitiveSpec, body: Callable[[Any, dict[str, Any]], Any], **options: bool
) -> Callable[..., Any]:
    """A hookimpl of ``spec`` for a plugin class: ``body(plugin, arguments)`` answers every call.

    ``options`` are hookimpl options (``tryfirst=True`` …). The function takes its parameter
    names from the spec (pluggy reads them through ``__wrapped__``), so one body serves
    every primitive.
    """
    params = spec.params

    def impl(self: Any, *args: Any) -> Any:
        return body(self, dict(zip(params, args, strict=True)))

    impl.__name__, impl.__qualname__, impl.__doc__ = spec.name, spec.name, spec.doc
    impl.__wrapped__ = spec.hookspec  # type: ignore[attr-defined]
    marked: Callable[..., Any] = hookimpl(impl, **options)  # type: ignore[call-overload]
    return marked


class Primitives:
    """The table. Backends implement these methods (:class:`bfsql.backend.GraphBackend` is this class);
    plugins wrap or answer the hooks of the same names; :class:`~bfsql.graph.Graph` calls them.

    Keys of batch primitives may repeat; answers hold each once. Every answer is complete
    (no relevance filtering); merged entities (kgraph's ``status = 'merged'``) are invisible
    everywhere, together with the edges touching them.
    """

    @primitive(cache=CachePolicy.PER_CALL)
    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Resolve a name or alias to ranked entity stubs, best first, at most ``limit``.

        ``node_types`` restricts the types (``[]``: nothing); ``[]`` when nothing matches.
        This is the lexical ranker of hybrid search (BM25, full text, trigram, substring:
        whatever the store has).
        """
        raise NotImplementedError

    @primitive(cache=CachePolicy.PER_CALL, optional=True)
    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Entities whose stored vectors are nearest to ``vector``, best first, at most ``limit``.

        ``score`` is the cosine similarity; ``node_types`` restricts the types. Answered only
        by backends with entity vectors (``Capabilities.vector_search``, and this method
        overridden); ``vector`` comes from the embedder the graph bound to the backend.
        """
        raise NotImplementedError(f"{type(self).__name__} has no vector search")

    @primitive(cache=CachePolicy.SESSION)
    async def entity_types(self) -> list[str]:
        """The graph's entity type names, sorted, without duplicates, stable for the session."""
        raise NotImplementedError

    @primitive(cache=CachePolicy.SESSION)
    async def predicates(self) -> list[str]:
        """The graph's predicate names, sorted, without duplicates, stable for the session."""
        raise NotImplementedError

    @primitive(cache=CachePolicy.PER_KEY)
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """Type and display name of each visible entity among ``entity_ids``; unknown ids left out."""
        raise NotImplementedError

    @primitive(cache=CachePolicy.PER_KEY, weighed=True)
    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """One traversal step: each visible entity asked, with its type and name and every edge of it, both ways.

        An outgoing edge has the entity as subject, an incoming one as object; a self-loop
        appears once; each edge comes with its other end's type and name. An edge to an id
        that is no entity is kept with ``other_type=None`` (the engine reports it as
        dangling). Unknown (and merged) ids are left out, so the answer also says which of
        the asked ids exist: a traversal asks nothing else about the ids it hops from. This is
        the call a BFS makes once per hop: one round trip where the store allows.
        """
        raise NotImplementedError

    @primitive(cache=CachePolicy.NEVER, optional=True)
    async def traverse(
        self,
        seeds: list[str],
        hops: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        offset: int,
        count: int,
    ) -> Survey:
        """A whole breadth-first traversal run where the data lives: its exact counts and one page of it.

        The answer is what the engine's hop-by-hop walk (:func:`bfsql.engine.traverse.expand`)
        would reach from ``seeds`` in ``hops`` undirected hops within ``limits``, without
        neighbours of ``exclude_types``: the same nodes, edges, cuts and schema, but only the
        nodes at positions ``offset`` to ``offset + count`` of the answer order (nearest first,
        then by id) and their edges are listed; the rest is counted. A store that can run the
        traversal itself (an array index, a database's set-based query) answers it at the cost
        of what it visits, not of moving every edge to bfsql. Optional: the engine walks hop by
        hop where it is not implemented (or where a plugin wraps ``hop``); the conformance suite
        checks both give the same answers.
        """
        raise NotImplementedError(f"{type(self).__name__} does not traverse in the store")

    @primitive(cache=CachePolicy.NEVER, optional=True)
    async def intersect(
        self,
        seeds: list[str],
        k: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        count: int,
        path_nodes: int,
        path_limit: int,
    ) -> Overlap:
        """A whole intersection walk run where the data lives: the nodes within ``k`` hops of every seed.

        The answer is what the engine's multi-source walk (:func:`bfsql.engine.intersect.reach_all`)
        finds from ``seeds`` (all visible entities), within ``limits`` and without neighbours of
        ``exclude_types``: the shared nodes and the edges among them counted, the first ``count``
        shared nodes listed with their edges, and a shortest path from every seed to each of the
        first ``path_nodes`` shared nodes (at most ``path_limit`` paths). Optional, like ``traverse``:
        the engine walks hop by hop where it is not implemented; the conformance suite compares both.
        """
        raise NotImplementedError(f"{type(self).__name__} does not intersect in the store")

    @primitive(cache=CachePolicy.NEVER, optional=True)
    async def closure(
        self,
        seeds: list[str],
        predicates: list[str] | None,
        outgoing: bool,
        depth: int,
        max_nodes: int,
        max_edges_per_node: int,
        time_left: float | None,
    ) -> Closure | None:
        """A relation's closure walked where the data lives: the edges of each level, ``depth`` levels at most.

        From ``seeds`` (visible entities, level 0) along the edges of ``predicates`` (None: every
        predicate), subject to object when ``outgoing``, else object to subject, breadth first: level
        ``d`` lists every such edge from an entity of level ``d - 1`` to an entity no level before
        reached, to a seed, or to an end that is no entity (``child_type`` None; never walked on).
        Merged entities and their edges are invisible. The walk ends after ``depth`` levels or at a
        level that reaches no new entity; it stops after the level at which the new entities pass
        ``max_nodes`` in all (``cut``: that level's edges to new entities lead only to the first of
        them by id, as many as there was room for, and ``found`` counts them all), and before a level
        due after ``time_left`` seconds (``timed_out``). The engine's variable-length path edges
        (:func:`bfsql.engine.closures.walk`) replay these levels exactly as their level-by-level walk
        would have gone: one call instead of one ``hop`` call per level.

        None when the store cannot answer it exactly: it would expand an entity with more than
        ``max_edges_per_node`` edges in the direction (all predicates; a hub, whose edges the engine
        caps), which a store may also answer None for when it cannot count them cheaply and only
        might be one. The engine then walks level by level. Optional, like ``traverse``; the
        conformance suite compares both walks.

        A path query asks it for its first edge before it looked up its ``@id`` entry (the walk from an
        unknown id is empty): a store that says its seeds (``Closure.seeds``: type and name, as ``get_nodes``
        answers) spares the query that lookup, and one that keeps the metadata of what it reached in the
        call's memo (:func:`bfsql.call_memo`) spares it ``metadata_for_nodes``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not walk closures in the store")

    @primitive(cache=CachePolicy.SESSION, optional=True)
    async def statistics(self, hubs: int = HUBS) -> GraphStatistics | None:
        """How many visible entities of each type and edges of each predicate the graph holds, and its ``hubs``
        best-connected entities (most edges first, ties by id); None when the store cannot say it cheaply.

        Entities and edges are those the other primitives see: merged entities and the edges touching them are
        left out, dangling edges counted (with their predicate, and in their entity's degree). A degree is the
        number of edges ``hop`` lists for the entity. A part the store cannot say cheaply is None; ``exact``
        is False for estimates. Asked by ``describe_schema`` once per session, only of backends declaring
        ``capabilities.statistics``. Default: None.
        """
        return None

    @primitive(cache=CachePolicy.PER_KEY)
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """All metadata of each visible entity (name, synonyms, properties …); unknown ids left out.

        Embedding vectors may be included; core strips them before any answer.
        """
        raise NotImplementedError

    @primitive(cache=CachePolicy.PER_KEY)
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of each edge (confidence, source_documents, properties), without provenance.

        An unknown edge, or one touching a merged entity, is left out or ``{}``.
        """
        raise NotImplementedError

    @primitive(cache=CachePolicy.PER_KEY, optional=True)
    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The evidence behind each edge: records with ``text_span``, ``document_id``, ``section``, ``confidence``.

        Edges without evidence are left out or ``[]``. Fetched only by calls that return
        provenance, never by traversals (``Capabilities.provenance`` says whether the store has any).
        Default: the store keeps none.
        """
        return {}


PRIMITIVES.update(
    (stub.__name__, _spec(stub)) for stub in vars(Primitives).values() if callable(stub) and hasattr(stub, _MARK)
)


class PrimitiveHookspecs:
    """The hookspecs of the table, as pluggy reads them (plain functions, without defaults)."""


for _entry in PRIMITIVES.values():
    setattr(PrimitiveHookspecs, _entry.name, _entry.hookspec)
