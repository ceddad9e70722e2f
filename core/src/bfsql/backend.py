"""The backend contract: eight async primitives, plus batch primitives with defaults.

A backend author subclasses :class:`GraphDbInterface` and implements the eight
abstract methods. Overriding the batch methods (``edges_from_many`` and friends) is
optional; it lets a backend answer a whole BFS frontier in one round trip.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from bfsql.models import Edge, EntityStub, Node, Truncation

if TYPE_CHECKING:
    from bfsql.embedders import Embedder

__all__ = [
    "BatchFirstBackend",
    "Capabilities",
    "GraphDbInterface",
    "gather_bounded",
    "gather_or_cancel",
    "has_vector_search",
]

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_BATCH_CONCURRENCY = 16


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the contract's minimum.

    The conformance suite reads these flags to decide which checks apply.
    """

    batch_primitives: bool = False
    """The batch methods are overridden with set-based queries (O(1) round trips)."""
    vector_search: bool = False
    """The backend ranks entities by embedding similarity: it implements
    :meth:`GraphDbInterface.vector_search`, which core's hybrid search uses as its vector
    ranker (modes vector, hybrid, rrf). (A backend whose ``search_entities`` embeds the
    query itself may also set it; core then treats ``search_entities`` as its only ranker.)"""
    lexical_search: bool = True
    """search_entities can rank by a lexical score (BM25, trigram, substring)."""
    comprehensive_schema: bool = True
    """entity_types()/predicates() are complete, not samples."""
    provenance: bool = False
    """metadata_for_edge includes a ``provenance`` list of evidence records."""


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


class GraphDbInterface(ABC):
    """The eight primitives every backend answers.

    Contract (seeds 000/001): ``edges_from``/``edges_to``/``get_node``/
    ``metadata_for_node`` raise ``KeyError`` for an entity that does not exist and
    return ``[]`` for one without edges; edge lists are complete (no relevance
    filtering); ``entity_types``/``predicates`` are stable and sorted;
    ``search_entities`` returns at most 20 ranked stubs, ``[]`` when nothing matches.
    """

    capabilities: Capabilities = Capabilities()
    """Flags read by the engine and the conformance suite."""

    batch_concurrency: int = DEFAULT_BATCH_CONCURRENCY
    """Calls in flight at once when the default batch methods fan out."""

    @abstractmethod
    async def search_entities(self, query: str, node_types: list[str] | None = None) -> list[EntityStub]:
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

    @abstractmethod
    async def entity_types(self) -> list[str]:
        """Return the graph's entity type names, sorted."""

    @abstractmethod
    async def predicates(self) -> list[str]:
        """Return the graph's predicate names, sorted."""

    # Batch primitives. Missing entities are left out of the answer, never raised.

    async def edges_from_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Outgoing edges of each existing entity, keyed by id."""
        return await gather_bounded(entity_ids, self.edges_from, self.batch_concurrency)

    async def edges_to_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Incoming edges of each existing entity, keyed by id."""
        return await gather_bounded(entity_ids, self.edges_to, self.batch_concurrency)

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, Node]:
        """Identity of each existing entity, keyed by id."""
        return await gather_bounded(entity_ids, self.get_node, self.batch_concurrency)

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of each existing entity, keyed by id."""
        return await gather_bounded(entity_ids, self.metadata_for_node, self.batch_concurrency)

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of each edge, keyed by the edge."""
        return await gather_bounded(edges, self.metadata_for_edge, self.batch_concurrency)

    # Optional vector search (hybrid entity search, docs/backend-contract.md#vector-search).

    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = 20
    ) -> list[EntityStub]:
        """Entities whose stored vectors are nearest to ``vector``, best first, at most ``limit``.

        ``score`` is the cosine similarity (higher is better); ``node_types`` restricts the
        types (``[]``: nothing). Only called when ``capabilities.vector_search`` is true and
        this method is overridden; ``vector`` comes from the embedder passed to
        :meth:`bind_embedder`.
        """
        raise NotImplementedError(f"{type(self).__name__} has no vector search")

    async def bind_embedder(self, embedder: Embedder) -> None:  # noqa: B027 - optional hook
        """Learn the embedder that makes query vectors, once, before the first vector_search.

        A backend with stored vectors checks they come from the same embedder (name and
        dimension) and raises :class:`bfsql.embedders.EmbedderMismatch` otherwise; a
        backend that embeds entities on the fly keeps it. The default does nothing.
        """

    # Optional descriptive hooks with sensible defaults.

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

    async def aclose(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release connections, pools and files. Called once when the graph closes."""


class BatchFirstBackend(GraphDbInterface):
    """A base for backends that answer a whole frontier at once: write the batch primitives only.

    Each single primitive is its batch primitive on one id (``KeyError`` when the id is not
    in the answer), so the two can never disagree.
    """

    capabilities = Capabilities(batch_primitives=True)

    @abstractmethod
    async def edges_from_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Outgoing edges of each existing entity, keyed by id (missing ids left out)."""

    @abstractmethod
    async def edges_to_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Incoming edges of each existing entity, keyed by id (missing ids left out)."""

    @abstractmethod
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, Node]:
        """Identity of each existing entity, keyed by id (missing ids left out)."""

    @abstractmethod
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of each existing entity, keyed by id (missing ids left out)."""

    @abstractmethod
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of every given edge, ``{}`` for an unknown one."""

    async def edges_from(self, entity_id: str) -> list[Edge]:
        """Outgoing edges, sorted; ``KeyError`` for an unknown id."""
        return (await self.edges_from_many([entity_id]))[entity_id]

    async def edges_to(self, entity_id: str) -> list[Edge]:
        """Incoming edges, sorted; ``KeyError`` for an unknown id."""
        return (await self.edges_to_many([entity_id]))[entity_id]

    async def get_node(self, entity_id: str) -> Node:
        """Id and type; ``KeyError`` for an unknown id."""
        return (await self.get_nodes([entity_id]))[entity_id]

    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """All metadata of the entity; ``KeyError`` for an unknown id."""
        return (await self.metadata_for_nodes([entity_id]))[entity_id]

    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """All metadata of the edge; ``{}`` for an unknown one."""
        return (await self.metadata_for_edges([edge]))[edge]


def has_vector_search(backend: GraphDbInterface) -> bool:
    """Whether core may use ``backend.vector_search`` as a ranker: flagged and overridden."""
    return bool(backend.capabilities.vector_search) and (
        type(backend).vector_search is not GraphDbInterface.vector_search
    )
