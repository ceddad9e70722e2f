"""The in-memory backend: a whole graph in dictionaries, for tests and examples.

It reads a bundle whole at start-up and embeds every name on the first vector search,
so it refuses bundles above ``max_bundle_mb`` (16 MB by default) and points to the
SQLite store, which is built once by ``bfsql load`` and opens instantly.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from typing_extensions import override

from bfsql.backend import Capabilities, GraphBackend, hop_edges
from bfsql.backend_config import BackendConfig
from bfsql.embedders import Embedder, HashingEmbedder, dot, normalise
from bfsql.errors import BfsqlError
from bfsql.hookspecs import hookimpl
from bfsql.loading.records import (
    EntityRecord,
    EvidenceRecord,
    RelationshipRecord,
    edge_metadata,
    node_metadata,
)
from bfsql.models import EntityStub
from bfsql.primitives import HUBS, SEARCH_LIMIT
from bfsql.rows import Edge, GraphStatistics, Hub, Neighbourhood, NodeInfo
from bfsql.search_rank import lexical_rank

if TYPE_CHECKING:
    from bfsql.loading.bundle import Record

__all__ = ["DEFAULT_MAX_BUNDLE_MB", "MemoryBackend", "MemoryBundleError", "MemoryConfig"]

DEFAULT_MAX_BUNDLE_MB = 16
"""Largest bundle the memory backend reads by default (about 75,000 records)."""

EMBED_BATCH = 256
"""Names embedded per embedder call when vector search first needs them."""


class MemoryConfig(BackendConfig):
    """Configuration of the memory backend (``description``: see :class:`bfsql.BackendConfig`)."""

    bundle: Path | None = Field(default=None, description="JSONL bundle to load at start-up.")
    description: str = Field(
        default="An in-memory knowledge graph.", description="graph_description text shown by describe_schema."
    )
    max_bundle_mb: int = Field(
        default=DEFAULT_MAX_BUNDLE_MB,
        ge=1,
        description="Largest bundle (MB) read into memory; load a larger one into SQLite with 'bfsql load'.",
    )


class MemoryBundleError(BfsqlError):
    """The bundle cannot be served from memory: too large, missing, or with bad rows."""


class MemoryBackend(GraphBackend):
    """A graph held in dictionaries. Merged entities are invisible; dangling edges are kept.

    The hop rows of every entity are built once, on first use after a change. Vector search
    embeds every visible entity's name (its id when it has none) with the bound embedder on
    first use, and keeps the vectors until the graph changes.
    """

    capabilities = Capabilities(
        batch_primitives=True, provenance=True, vector_search=True, in_memory=True, statistics=True
    )

    def __init__(self, records: Iterable[Record] = (), description: str = "An in-memory knowledge graph.") -> None:
        self._description = description
        self._entities: dict[str, EntityRecord] = {}
        self._rels: dict[Edge, RelationshipRecord] = {}
        self._evidence: dict[Edge, list[EvidenceRecord]] = defaultdict(list)
        self._hops: dict[str, Neighbourhood] | None = None
        self._embedder: Embedder | None = None
        self._vectors: dict[str, array[float]] | None = None
        for record in records:
            self.add(record)

    @classmethod
    def from_bundle(
        cls,
        path: str | Path,
        description: str = "An in-memory knowledge graph.",
        max_bundle_mb: int | None = DEFAULT_MAX_BUNDLE_MB,
    ) -> MemoryBackend:
        """Load a JSONL bundle; :class:`MemoryBundleError` when it is above ``max_bundle_mb`` (None: no limit)."""
        path = Path(path)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise MemoryBundleError(f"Cannot read the bundle {path}: {exc.strerror}.", "Check --bundle.") from None
        with path.open("rb") as head:
            is_store = head.read(16) == b"SQLite format 3\x00"
        if is_store:
            raise MemoryBundleError(
                f"{path} is a SQLite store (made by 'bfsql load'), not a JSONL bundle.",
                f"Serve it with the sqlite backend: bfsql serve --db {path}",
            )
        if max_bundle_mb is not None and size > max_bundle_mb * 1_000_000:
            store = path.with_suffix(".sqlite")
            raise MemoryBundleError(
                f"The bundle {path} is {size / 1e6:,.1f} MB; the memory backend reads bundles up to "
                f"{max_bundle_mb} MB (--max-bundle-mb), as it holds and embeds the whole graph in memory.",
                f"Build a SQLite store once and serve that: bfsql load --db {store} {path} && "
                f"bfsql serve --db {store}",
            )
        from bfsql.loading.bundle import read_bundle  # here: serving a store never loads the bundle reader
        from bfsql.loading.errors import LoadError

        try:
            return cls((record for _, record in read_bundle(path)), description)
        except LoadError as exc:
            raise MemoryBundleError(f"Cannot load the bundle: {exc}.", "Fix the row and start again.") from None

    def add(self, record: Record) -> None:
        """Add one record; a later record with the same key replaces the earlier one."""
        self._vectors = None
        self._hops = None
        if isinstance(record, EntityRecord):
            self._entities[record.id] = record
        elif isinstance(record, RelationshipRecord):
            self._rels[record.edge()] = record
        elif record not in self._evidence[record.edge()]:  # evidence is deduplicated, as in the sqlite store
            self._evidence[record.edge()].append(record)

    def _visible(self, entity_id: str) -> EntityRecord | None:
        entity = self._entities.get(entity_id)
        return None if entity is None or entity.merged else entity

    def _touches_merged(self, edge: Edge) -> bool:
        return any((e := self._entities.get(end)) is not None and e.merged for end in (edge.subject, edge.object))

    def _hop_index(self) -> dict[str, Neighbourhood]:
        if self._hops is None:
            edges: dict[str, list[Edge]] = defaultdict(list)
            for edge in sorted(self._rels):
                if self._touches_merged(edge):
                    continue
                edges[edge.subject].append(edge)
                if edge.object != edge.subject:
                    edges[edge.object].append(edge)
            ends = {i: NodeInfo(e.entity_type, e.name) for i, e in self._entities.items() if not e.merged}
            self._hops = {i: Neighbourhood(info, hop_edges(i, edges.get(i, []), ends)) for i, info in ends.items()}
        return self._hops

    @override
    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        ranked = []
        for entity in self._entities.values():
            if entity.merged or (node_types is not None and entity.entity_type not in node_types):
                continue
            rank = lexical_rank(query, entity.name, entity.synonyms)
            if rank is not None:
                ranked.append((rank, entity.id, entity))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [EntityStub(id=e.id, entity_type=e.entity_type, name=e.name) for _, _, e in ranked[: max(0, limit)]]

    @override
    async def bind_embedder(self, embedder: Embedder) -> None:
        if self._embedder is None or (self._embedder.name, self._embedder.dimension) != (
            embedder.name,
            embedder.dimension,
        ):
            self._vectors = None
        self._embedder = embedder

    @override
    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        if self._embedder is None:
            self._embedder = HashingEmbedder()
        if len(vector) != self._embedder.dimension:
            raise ValueError(
                f"query vector has {len(vector)} dimensions; embedder {self._embedder.name!r} makes "
                f"{self._embedder.dimension}"
            )
        if self._vectors is None:
            self._vectors = await self._embed_all(self._embedder)
        query = normalise([float(x) for x in vector])
        scored = []
        for entity_id, entity_vector in self._vectors.items():
            entity = self._entities[entity_id]
            if node_types is not None and entity.entity_type not in node_types:
                continue
            scored.append((-dot(query, entity_vector), entity_id))
        scored.sort()
        return [
            EntityStub(
                id=i, entity_type=self._entities[i].entity_type, name=self._entities[i].name, score=round(-s, 6)
            )
            for s, i in scored[:limit]
        ]

    async def _embed_all(self, embedder: Embedder) -> dict[str, array[float]]:
        """Every visible entity's name (its id when it has none) as a packed float32 vector, embedded in batches."""
        visible = sorted(e.id for e in self._entities.values() if not e.merged)
        vectors: dict[str, array[float]] = {}
        for start in range(0, len(visible), EMBED_BATCH):
            ids = visible[start : start + EMBED_BATCH]
            embedded = await embedder.embed([self._entities[i].name or i for i in ids])
            for entity_id, vector in zip(ids, embedded, strict=True):
                vectors[entity_id] = array("f", normalise([float(x) for x in vector]))
        return vectors

    @override
    async def entity_types(self) -> list[str]:
        return sorted({e.entity_type for e in self._entities.values() if not e.merged})

    @override
    async def predicates(self) -> list[str]:
        return sorted({edge.predicate for edge in self._rels if not self._touches_merged(edge)})

    @override
    async def statistics(self, hubs: int = HUBS) -> GraphStatistics:
        """Exact counts from the dictionaries; the hubs are the entities with the most hop rows."""
        index = self._hop_index()
        types = Counter(there.node.entity_type for there in index.values())
        predicates = Counter(edge.predicate for edge in self._rels if not self._touches_merged(edge))
        connected = ((i, there) for i, there in index.items() if there.edges)
        top = heapq.nsmallest(hubs, connected, key=lambda item: (-len(item[1].edges), item[0]))
        return GraphStatistics(
            exact=True,
            entity_type_counts=dict(sorted(types.items())),
            predicate_counts=dict(sorted(predicates.items())),
            hubs=[Hub(i, there.node.entity_type, there.node.name, len(there.edges)) for i, there in top],
        )

    @override
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        found = {}
        for entity_id in entity_ids:
            entity = self._visible(entity_id)
            if entity is not None:
                found[entity_id] = NodeInfo(entity.entity_type, entity.name)
        return found

    @override
    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        index = self._hop_index()
        return {i: index[i] for i in entity_ids if i in index}

    @override
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        found = {}
        for entity_id in entity_ids:
            entity = self._visible(entity_id)
            if entity is not None:
                found[entity_id] = node_metadata(entity)
        return found

    @override
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        found = {}
        for edge in edges:
            rel = self._rels.get(edge)
            found[edge] = {} if rel is None or self._touches_merged(edge) else edge_metadata(rel, [])
        return found

    @override
    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        found = {}
        for edge in edges:
            if edge in self._rels and self._evidence.get(edge) and not self._touches_merged(edge):
                found[edge] = edge_metadata(self._rels[edge], self._evidence[edge])["provenance"]
        return found

    @override
    async def graph_description(self) -> str:
        return self._description


def _create(config: MemoryConfig) -> MemoryBackend:
    if config.bundle is None:
        return MemoryBackend(description=config.description)
    return MemoryBackend.from_bundle(config.bundle, config.description, config.max_bundle_mb)


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``memory`` backend."""
    register("memory", _create, MemoryConfig, "In-memory graph loaded from a JSONL bundle (tests, examples).")
