"""The backend contract, in two shapes.

* :class:`GraphBackend` — the batch primitives of :class:`bfsql.primitives.Primitives`
  (many ids per call; a BFS hop is one ``hop`` call). Core talks to every backend through
  these. A store that answers sets natively subclasses it and writes them directly.
* :class:`GraphDbInterface` — seed 000's eight single-id methods. A backend author may write
  just those; this class derives every batch primitive from them (bounded concurrency).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from bfsql.models import EntityStub, Node, Truncation
from bfsql.primitives import Primitives
from bfsql.rows import Edge, HopEdge, Neighbourhood, NodeInfo

if TYPE_CHECKING:
    from bfsql.embedders import Embedder

__all__ = [
    "PROVENANCE_KEYS",
    "Capabilities",
    "GraphBackend",
    "GraphDbInterface",
    "gather_bounded",
    "gather_or_cancel",
    "has_vector_search",
    "opened_for_one_call",
    "opening_for_one_call",
]

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_BATCH_CONCURRENCY = 16

PROVENANCE_KEYS = frozenset({"provenance", "evidence", "text_span", "text_spans"})
"""Keys of seed 000's ``metadata_for_edge`` answer that hold provenance rather than metadata."""

_one_call: ContextVar[bool] = ContextVar("bfsql_one_call", default=False)


@contextmanager
def opening_for_one_call() -> Iterator[None]:
    """Backends built inside answer one call and close (``bfsql query``): a store may put off reading what only
    some calls need until a call needs it (the SQLite store its array index, until the first walk), where a
    server reads it at start so that no caller's call waits for it. Answers are the same either way."""
    token = _one_call.set(True)
    try:
        yield
    finally:
        _one_call.reset(token)


def opened_for_one_call() -> bool:
    """Whether the backend being built is inside :func:`opening_for_one_call`."""
    return _one_call.get()


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the contract's minimum.

    Each flag's docstring says what reads it (``Read by:``): some change what the engine, the
    cache or describe_schema do; others only tell the conformance suite (:mod:`bfsql.testing`)
    which checks apply, and change nothing when serving. ``tests/test_architecture.py`` checks
    that every flag says.
    """

    batch_primitives: bool = False
    """The batch primitives are answered natively, ``hop`` in one round trip (not derived from single-id calls).
    Read by: the conformance suite only (it then checks ``hop`` is not the single-id fan-out); serving is the
    same either way."""
    vector_search: bool = False
    """The backend ranks entities by embedding similarity: it implements
    :meth:`GraphBackend.vector_search`, which core's hybrid search uses as its vector
    ranker (modes vector, hybrid, rrf). (A backend whose ``search_entities`` embeds the
    query itself may also set it; core then treats ``search_entities`` as its only ranker.)
    Read by: the engine's search (:func:`has_vector_search`), and the conformance suite."""
    lexical_search: bool = True
    """search_entities can rank by a lexical score (BM25, trigram, substring).
    Read by: the conformance suite only (it then runs the lexical ranking checks); serving is the same either
    way."""
    comprehensive_schema: bool = True
    """entity_types()/predicates() are complete, not samples.
    Read by: describe_schema (its ``comprehensive`` field), the engine's type filters and path queries (an
    unknown type is an error only against a complete schema), and the conformance suite."""
    provenance: bool = False
    """provenance_for_edges returns the evidence records behind edges.
    Read by: the conformance suite only (it then checks the evidence answers); serving asks
    ``provenance_for_edges`` either way."""
    in_memory: bool = False
    """Primitives are answered from memory as fast as a cache would: the graph does not cache them.
    Read by: :class:`bfsql.Graph` (which cache policies it applies)."""
    traversal: bool = False
    """The backend answers ``traverse``: a whole walk in the store, counted there, one page listed; and the other
    walk primitives it implements (``intersect``, ``closure``).
    Read by: :meth:`bfsql.Graph.walks_in_store` (the engine then asks ``traverse``, ``intersect``, ``closure``)."""
    statistics: bool = False
    """The backend answers ``statistics``: entities by type, edges by predicate and the hubs, for describe_schema.
    Read by: describe_schema (its counts and hubs), the examples a server writes in its texts, and the
    conformance suite."""

    def as_dict(self) -> dict[str, bool]:
        """The flags as a plain dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


async def gather_or_cancel(*aws: Awaitable[Any]) -> list[Any]:
    """``asyncio.gather``, except that the first failure cancels the others before it is raised.

    Plain ``gather`` leaves the siblings of a failed call running: requests to a server that
    just went down would go on retrying after the tool call has already failed, and an
    identical call made after the server is back would wait for them.
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def gather_bounded(
    keys: Iterable[K],
    fetch: Callable[[K], Awaitable[V]],
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
) -> dict[K, V]:
    """Call ``fetch`` for every key with at most ``concurrency`` calls in flight.

    Keys whose fetch raises ``KeyError`` are left out of the answer; any other error
    propagates.
    """
    semaphore = asyncio.Semaphore(concurrency)
    found: dict[K, V] = {}

    async def one(key: K) -> None:
        async with semaphore:
            try:
                found[key] = await fetch(key)
            except KeyError:
                pass

    unique = list(dict.fromkeys(keys))
    await gather_or_cancel(*(one(k) for k in unique))
    return {k: found[k] for k in unique if k in found}


def hop_edges(entity_id: str, edges: Iterable[tuple[str, str, str]], ends: dict[str, NodeInfo]) -> list[HopEdge]:
    """The hop rows of ``entity_id`` from its edges (both directions) and what is known of their ends.

    A helper for backends that read edges and entities separately: an edge appearing in both
    directions (a self-loop) is kept once; an end missing from ``ends`` is dangling.
    """
    rows: dict[tuple[str, str, str], HopEdge] = {}
    for subject, predicate, obj in edges:
        other = ends.get(obj if subject == entity_id else subject)
        rows[(subject, predicate, obj)] = HopEdge(
            subject, predicate, obj, other.entity_type if other else None, other.name if other else None
        )
    return list(rows.values())


class GraphBackend(Primitives, ABC):
    """A graph store answering the batch primitives: the methods of the primitive table.

    The table, :class:`bfsql.primitives.Primitives`, is the only place a primitive's signature
    and contract are written; this class inherits them. Write ``search_entities``,
    ``entity_types``, ``predicates``, ``get_nodes``, ``hop``, ``metadata_for_nodes`` and
    ``metadata_for_edges`` (abstract here); ``vector_search`` and ``provenance_for_edges`` are
    optional. Register a factory with the ``register_backends`` hook. The conformance suite
    (:class:`bfsql.testing.BackendConformance`) checks every method against the table.
    """

    capabilities: Capabilities = Capabilities(batch_primitives=True)
    """What the backend can do; each flag says what reads it (see :class:`Capabilities`)."""

    slow_store_advice: str = "The graph store is slow or unreachable; try again, or narrow the query."
    """What a call that timed out waiting for this store tells the caller to do (an embedded store is never
    unreachable: it is busy)."""

    vector_embedder: tuple[str, int] | None = None
    """``(name, dimension)`` of the embedder that made the store's entity vectors, when the store
    says; with the default embedder setting (``auto``) the server embeds queries with that one
    when it is installed, instead of the preferred one."""

    async def bind_embedder(self, embedder: Embedder) -> None:
        """Learn the embedder that makes query vectors, once, before the first vector_search.

        A backend with stored vectors checks they come from the same embedder (name and
        dimension) and raises :class:`bfsql.embedders.EmbedderMismatch` otherwise; a
        backend that embeds entities on the fly keeps it. The default does nothing.
        """

    async def graph_description(self) -> str:
        """A human-readable summary of the graph's domain and source."""
        return "A knowledge graph."

    async def next_steps(self) -> str | None:
        """Backend-authored workflow advice for describe_schema, or None for the default."""
        return None

    def truncations(self, entity_ids: set[str]) -> list[Truncation]:
        """What the backend cut from what it returned for these entities (e.g. an edge limit).

        A traversal answer that reached any of ``entity_ids`` carries these entries in its
        ``truncated`` list, so a cut the backend made is never hidden. Default: none.
        """
        return []

    def store_identity(self) -> Hashable | None:
        """Whom the store answers the running call as, when it applies each caller's own permissions; else None.

        A backend that passes the caller's identity (:func:`bfsql.call_identity`) to its store
        returns what the store will know the call as (PostgreSQL: the role it sets), so that the
        graph's cache keeps each identity's answers apart; calls with equal values share them. It
        may raise :class:`~bfsql.AccessDenied` for a caller the store must not answer. Called
        for every cached primitive call: keep it cheap. Default: None (every caller reads the same).
        """
        return None

    async def health(self) -> list[str]:
        """What makes the store's answers stale or unavailable now, one plain sentence each; [] when nothing does.

        describe_schema shows these as ``warnings``, and a readiness check can take a server whose
        store has any out of rotation (e.g. a PostgreSQL standby that lost its primary). Default: none.
        """
        return []

    async def aclose(self) -> None:
        """Release connections, pools and files. Called once when the graph closes."""


class GraphDbInterface(GraphBackend):
    """Seed 000's contract: eight single-id async methods. Every batch primitive is derived from them.

    ``edges_from``/``edges_to``/``get_node``/``metadata_for_node`` raise ``KeyError`` for an
    entity that does not exist and return ``[]`` for one without edges; edge lists are
    complete; ``metadata_for_edge`` includes provenance (a ``provenance`` list); ``entity_types``
    and ``predicates`` are sorted; ``search_entities`` returns at most 20 ranked stubs, ``[]``
    when nothing matches. Batch primitives call these with at most ``batch_concurrency``
    calls in flight; a backend may override any of them with a set-based query.
    """

    capabilities: Capabilities = Capabilities()

    batch_concurrency: int = DEFAULT_BATCH_CONCURRENCY
    """Calls in flight at once when a batch primitive fans out to single-id calls."""

    @abstractmethod
    async def search_entities(  # type: ignore[override]
        self, query: str, node_types: list[str] | None = None
    ) -> list[EntityStub]:
        """Resolve a name or alias to ranked candidate stubs (at most 20)."""

    @abstractmethod
    async def edges_from(self, entity_id: str) -> list[Edge]:
        """Return all outgoing edges of the entity; ``KeyError`` if it does not exist."""

    @abstractmethod
    async def edges_to(self, entity_id: str) -> list[Edge]:
        """Return all incoming edges of the entity; ``KeyError`` if it does not exist."""

    @abstractmethod
    async def get_node(self, entity_id: str) -> Node:
        """Return the node's identity (id and type); ``KeyError`` if it does not exist."""

    @abstractmethod
    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """Return all metadata of the entity; ``KeyError`` if it does not exist."""

    @abstractmethod
    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """Return all metadata of the edge, provenance included; ``{}`` if there is none."""

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """``get_node`` per id (without names: the eight methods have no cheap way to them)."""
        nodes = await gather_bounded(entity_ids, self.get_node, self.batch_concurrency)
        return {i: NodeInfo(node.entity_type) for i, node in nodes.items()}

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """``edges_from`` and ``edges_to`` per id, then ``get_nodes`` of the asked ids and the other ends."""
        outgoing, incoming = await gather_or_cancel(
            gather_bounded(entity_ids, self.edges_from, self.batch_concurrency),
            gather_bounded(entity_ids, self.edges_to, self.batch_concurrency),
        )
        edges = {i: [*outgoing[i], *incoming.get(i, [])] for i in outgoing}
        ends = {e.object if e.subject == i else e.subject for i, found in edges.items() for e in found}
        info = await self.get_nodes(sorted(ends | set(edges)))
        return {i: Neighbourhood(info[i], hop_edges(i, found, info)) for i, found in edges.items() if i in info}

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """``metadata_for_node`` per id."""
        return await gather_bounded(entity_ids, self.metadata_for_node, self.batch_concurrency)

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """``metadata_for_edge`` per edge, without its provenance keys."""
        found = await gather_bounded(edges, self.metadata_for_edge, self.batch_concurrency)
        return {e: {k: v for k, v in m.items() if k not in PROVENANCE_KEYS} for e, m in found.items()}

    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The ``provenance`` list of ``metadata_for_edge`` per edge."""
        found = await gather_bounded(edges, self.metadata_for_edge, self.batch_concurrency)
        return {e: list(m["provenance"]) for e, m in found.items() if isinstance(m.get("provenance"), list)}


def has_vector_search(backend: GraphBackend) -> bool:
    """Whether core may use ``backend.vector_search`` as a ranker: flagged and overridden."""
    return bool(backend.capabilities.vector_search) and type(backend).vector_search is not Primitives.vector_search
