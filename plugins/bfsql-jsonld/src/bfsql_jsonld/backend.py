"""The ``jsonld`` backend: the batch primitives over a JSON-LD REST API.

The API answers one entity per request: each id of a batch is one request (plus pages)
to a URL built from a configurable template, at most ``--max-connections`` in flight.
The schema document is read once at start-up: it checks that the API answers, gives
the vocabulary, and may advertise batch endpoints, which the primitives then use (one
POST per chunk of ids instead of one GET per id). A batch answer may be paged like a list:
its next link is POSTed the same body until none remains, so answers stay whole.

A hop reads each entity's relations (one request with ``--edges-url``, else one per
direction) and takes the other ends' types and names from the same documents, where
the API writes an end as a typed node object; only ends written as plain ids are looked
up (``get_nodes``), and those the API does not know are dangling.

A request whose URL would be longer than :data:`~bfsql_jsonld.urls.MAX_URL_BYTES` is
not sent: an id that long is unknown (left out of answers), an edge that long has no
metadata, and a search that long is refused (``InvalidArgument``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from typing_extensions import override

from bfsql import (
    PROVENANCE_KEYS,
    SEARCH_LIMIT,
    Capabilities,
    Edge,
    Embedder,
    EmbedderMismatch,
    EntityStub,
    GraphBackend,
    InvalidArgument,
    Neighbourhood,
    NodeInfo,
    gather_bounded,
    gather_or_cancel,
    hop_edges,
)
from bfsql_jsonld.config import JsonLdConfig
from bfsql_jsonld.context import ContextLoader, load_local_context
from bfsql_jsonld.documents import ID, Frame, Reader, Schema
from bfsql_jsonld.errors import ApiError, MalformedResponse, NotFound
from bfsql_jsonld.http_client import ApiClient, Response
from bfsql_jsonld.urls import MAX_URL_BYTES, same_origin, shown

__all__ = ["JsonLdBackend"]

T = TypeVar("T")

Entity = tuple[NodeInfo, dict[str, Any]]
"""What an entity document gives: type and name, and metadata."""
Relation = tuple[Edge, dict[str, NodeInfo]]
"""What a relation document gives: the edge, and the ends it describes (see :meth:`Reader.relation`)."""

JSONLD_CONTEXT_REL = "http://www.w3.org/ns/json-ld#context"


SEEN_ENTITIES = 100_000
"""Entities whose type and name the backend keeps from the API's answers (about 150 bytes each)."""


class JsonLdBackend(GraphBackend):
    """A graph read from a JSON-LD REST API. Build it with :meth:`create` inside the serving loop."""

    def __init__(self, config: JsonLdConfig, client: ApiClient, reader: Reader) -> None:
        self.config = config
        self._client = client
        self._reader = reader
        self._templates = config.templates()
        self._schema = Schema(entity_types=[], predicates=[], comprehensive=False)
        self._concurrency = config.max_connections
        self.capabilities = Capabilities(batch_primitives=False, comprehensive_schema=False)
        self._seen: OrderedDict[str, NodeInfo] = OrderedDict()
        """Type and name of entities the API described lately (as relations' ends or entities): a traversal's
        frontier was the previous hop's ends, so its hop needs no entity request of its own."""

    @classmethod
    async def create(cls, config: JsonLdConfig) -> JsonLdBackend:
        """Open the HTTP session, load local contexts, and read the schema (a start-up check)."""
        local = {}
        for item in config.context_map:
            url, _, path = item.partition("=")
            local[url] = {"@context": load_local_context(path, f"--context-map {url}")}
        client = ApiClient(
            config.base_url,
            auth_headers=config.auth_headers(),
            request_timeout=config.query_timeout,
            retry=config.retry_policy(),
            max_connections=config.max_connections,
            max_response_bytes=int(config.max_response_mb * 2**20),
        )
        await client.open()
        try:
            loader = ContextLoader(local, cls._context_fetcher(client) if config.allow_remote_contexts else None)
            reader = Reader(
                loader,
                config.templates()["entity_url"],
                expand_context=_option_context(config.expand_context, "--expand-context"),
                client_context=_option_context(config.context, "--context"),
            )
            await reader.prepare()
            backend = cls(config, client, reader)
            await backend._load_schema()
        except BaseException:
            await client.aclose()
            raise
        return backend

    @staticmethod
    def _context_fetcher(client: ApiClient) -> Callable[[str], Awaitable[Any]]:
        async def fetch(url: str) -> Any:
            try:
                return (await client.get(url)).data
            except NotFound:
                raise ApiError(
                    f"The JSON-LD context {shown(url)} does not exist (404).", "Fix the reference."
                ) from None

        return fetch

    async def _load_schema(self) -> None:
        if not self.config.schema_url:
            return
        url = self._absolute(self.config.schema_url)
        try:
            frame = await self._fetch(url)
        except NotFound:
            raise ApiError(
                f"The JSON-LD API at {self.config.base_url} has no schema document at {shown(url)} (404).",
                "Check --base-url and --schema-url; give --schema-url '' if the API has none.",
            ) from None
        except ApiError as exc:
            raise ApiError(
                f"Cannot read the schema of the JSON-LD API at {self.config.base_url}: {exc.message}",
                exc.hint or "Check --base-url and that the API is running.",
            ) from None
        self._schema = schema = self._reader.schema(frame)
        self.vector_embedder = (schema.vector.embedder, schema.vector.dimension) if schema.vector else None
        flags = schema.capabilities or {}
        self.capabilities = Capabilities(
            batch_primitives=self._batch_url("relations") is not None,
            vector_search=schema.vector is not None,
            lexical_search=flags.get("lexical_search", True),
            comprehensive_schema=schema.comprehensive,
            provenance=flags.get("provenance", False),
        )

    def _absolute(self, url: str) -> str:
        return url if url.startswith(("http://", "https://")) else self.config.base_url + "/" + url.lstrip("/")

    async def _fetch(self, url: str, body: Any = None, post: bool = False) -> Frame:
        response = await (self._client.post(url, body) if post else self._client.get(url))
        return await self._frame(response)

    async def _frame(self, response: Response) -> Frame:
        return await self._reader.document(response.data, response.url, response.links.get(JSONLD_CONTEXT_REL))

    async def _pages(self, url: str, limit: int | None = None, body: Any = None) -> list[Frame]:
        """The members of a list document and of every following page (hydra:next, Link: rel=next).

        With a ``body``, every page is asked for by POSTing it (a batch answer and its continuations).
        """
        members: list[Frame] = []
        seen: set[str] = set()
        next_url: str | None = url
        while next_url is not None:
            if next_url in seen:
                raise MalformedResponse(
                    f"The pages of {shown(url)} loop back to {shown(next_url)}.", "Fix the API's next links."
                )
            if len(seen) >= self.config.max_pages:
                raise ApiError(
                    f"{shown(url)} has more than {self.config.max_pages} pages.",
                    "Raise --max-pages, or ask the API for larger pages.",
                )
            seen.add(next_url)
            response = await (self._client.get(next_url) if body is None else self._client.post(next_url, body))
            frame = await self._frame(response)
            members.extend(self._reader.members(frame))
            if limit is not None and len(members) >= limit:
                break
            next_url = self._reader.next_link(frame) or response.links.get("next")
            if next_url is not None and not same_origin(next_url, self.config.base_url):
                raise MalformedResponse(
                    f"The next page of {shown(url)} is on another site: {shown(next_url)}.",
                    "bfsql only follows next links within --base-url's origin.",
                )
        return members

    def _url(self, name: str, **values: Any) -> str | None:
        """The request URL of template ``name``; None when it would be longer than MAX_URL_BYTES."""
        url = self._templates[name].expand(values, self.config.list_separator)
        return url if len(url.encode("utf-8")) <= MAX_URL_BYTES else None

    # -- search and schema -------------------------------------------------------

    @override
    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        types = [self._schema.spelling.get(t, t) for t in node_types] if node_types is not None else None
        if types == [] or limit < 1:
            return []
        url = self._url("search_url", q=query, types=types, limit=str(min(limit, self.config.search_limit)))
        if url is None:
            raise InvalidArgument(
                f"This search would need a request URL longer than {MAX_URL_BYTES} bytes, "
                "the most the JSON-LD backend sends.",
                "Search for a shorter text, or pass fewer or shorter node_types.",
            )
        try:
            members = await self._pages(url, limit)
        except NotFound:
            return []
        stubs = [self._reader.stub(m) for m in members]
        if node_types is not None:  # an API that ignores the types parameter must not leak other types
            stubs = [s for s in stubs if s.entity_type in node_types]
        return stubs[:limit]

    @override
    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        endpoint = self._schema.vector
        if endpoint is None:
            return await super().vector_search(vector, node_types, limit)
        if node_types == [] or limit < 1:
            return []
        types = [self._schema.spelling.get(t, t) for t in node_types] if node_types is not None else None
        asked = min(limit, self.config.search_limit)
        frame = await self._fetch(endpoint.url, {"vector": vector, "types": types, "limit": asked}, post=True)
        stubs = [self._reader.stub(m) for m in self._reader.members(frame)]
        if node_types is not None:
            stubs = [s for s in stubs if s.entity_type in node_types]
        return stubs[:limit]

    @override
    async def bind_embedder(self, embedder: Embedder) -> None:
        endpoint = self._schema.vector
        if endpoint is not None and (embedder.name, embedder.dimension) != (endpoint.embedder, endpoint.dimension):
            raise EmbedderMismatch(
                f"The JSON-LD API at {self.config.base_url} ranks by vectors of embedder {endpoint.embedder!r} "
                f"({endpoint.dimension} dimensions), but queries here are embedded with {embedder.name!r} "
                f"({embedder.dimension}).",
                f"Serve with --embedder {endpoint.embedder}.",
            )

    @override
    async def entity_types(self) -> list[str]:
        return list(self._schema.entity_types)

    @override
    async def predicates(self) -> list[str]:
        return list(self._schema.predicates)

    @override
    async def graph_description(self) -> str:
        return (self.config.description or self._schema.description
                or f"A knowledge graph published as JSON-LD at {self.config.base_url}.")

    @override
    async def next_steps(self) -> str | None:
        return self._schema.next_steps

    @override
    async def aclose(self) -> None:
        await self._client.aclose()

    # -- entities ------------------------------------------------------------------

    @override
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        found = {i: info for i, (info, _) in (await self._entities(entity_ids)).items()}
        self._remember(found)
        return found

    def _remember(self, described: dict[str, NodeInfo]) -> None:
        for entity_id, info in described.items():
            self._seen[entity_id] = info
            self._seen.move_to_end(entity_id)
        while len(self._seen) > SEEN_ENTITIES:
            self._seen.popitem(last=False)

    @override
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        return {i: metadata for i, (_, metadata) in (await self._entities(entity_ids)).items()}

    async def _entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        """The entity documents of the known ids: one batch POST per chunk, else one GET per id."""
        ids = _distinct(entity_ids)
        url = self._batch_url("entities")
        if url is None:
            return await gather_bounded(ids, self._entity, self._concurrency)
        found = {}
        for member in await self._batched(url, ids, lambda chunk: {"ids": list(chunk)}):
            entity_id, info, metadata = self._reader.entity(member)
            found[entity_id] = (info, metadata)
        return {i: found[i] for i in ids if i in found}

    async def _entity(self, entity_id: str) -> Entity:
        url = self._url("entity_url", id=entity_id)
        if url is None:
            raise KeyError(entity_id)
        try:
            frame = await self._fetch(url)
        except NotFound:
            raise KeyError(entity_id) from None
        _, info, metadata = self._reader.entity(frame)
        return info, metadata

    # -- the hop -------------------------------------------------------------------

    @override
    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        relations = await self._relations(_distinct(entity_ids))
        ends: dict[str, NodeInfo] = {}
        for found in relations.values():
            for _, described in found:
                ends.update(described)
        undescribed = {
            edge.object if edge.subject == entity_id else edge.subject
            for entity_id, found in relations.items()
            for edge, _ in found
        } - ends.keys()
        self._remember(ends)
        ends.update((i, self._seen[i]) for i in relations.keys() - ends.keys() if i in self._seen)
        undescribed |= relations.keys() - ends.keys()  # the asked entities no document described lately
        if undescribed:  # ends the documents wrote as plain ids; those the API does not know are dangling
            ends.update(await self.get_nodes(sorted(undescribed)))
        return {
            i: Neighbourhood(ends[i], hop_edges(i, [edge for edge, _ in found], ends))
            for i, found in relations.items()
            if i in ends
        }

    async def _relations(self, ids: list[str]) -> dict[str, list[Relation]]:
        """The relations of the known ids, both directions: two batch POSTs per chunk, else GETs per id."""
        url = self._batch_url("relations")
        if url is None:
            return await gather_bounded(ids, self._relations_of, self._concurrency)
        outgoing, incoming = await gather_or_cancel(
            self._relations_batch(url, ids, "out"), self._relations_batch(url, ids, "in")
        )
        return {i: [*outgoing.get(i, []), *incoming.get(i, [])] for i in ids if i in outgoing or i in incoming}

    async def _relations_of(self, entity_id: str) -> list[Relation]:
        if "edges_url" in self._templates:
            return await self._relation_list("edges_url", entity_id)
        outgoing, incoming = await gather_or_cancel(
            self._relation_list("edges_from_url", entity_id), self._relation_list("edges_to_url", entity_id)
        )
        return [*outgoing, *incoming]

    async def _relation_list(self, template: str, entity_id: str) -> list[Relation]:
        url = self._url(template, id=entity_id)
        if url is None:
            raise KeyError(entity_id)
        try:
            members = await self._pages(url)
        except NotFound:
            raise KeyError(entity_id) from None
        return [self._reader.relation(m) for m in members]

    async def _relations_batch(self, url: str, ids: list[str], direction: str) -> dict[str, list[Relation]]:
        found: dict[str, list[Relation]] = {}
        for member in await self._batched(url, ids, lambda chunk: {"ids": list(chunk), "direction": direction}):
            _, _, raw_id = self._reader.required(member, ID, "batch relations entry")
            relations = [self._reader.relation(m) for m in self._reader.members(member)]
            # an entity whose relations span two pages is listed in both
            found.setdefault(self._reader.node_id(member, raw_id), []).extend(relations)
        return found

    # -- edges ---------------------------------------------------------------------

    @override
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        documents = await self._relation_documents(edges)
        return {e: {k: v for k, v in m.items() if k not in PROVENANCE_KEYS} for e, m in documents.items()}

    @override
    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        if not self.capabilities.provenance:
            return {}
        documents = await self._relation_documents(edges)
        return {e: list(m["provenance"]) for e, m in documents.items() if isinstance(m.get("provenance"), list)}

    async def _relation_documents(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """The metadata of each relation document, provenance included ({} for an unknown edge)."""
        unique = list(dict.fromkeys(Edge(*e) for e in edges))
        url = self._batch_url("relation_metadata")
        if url is None:
            return await gather_bounded(unique, self._relation_document, self._concurrency)
        spell = self._schema.spelling

        def body(chunk: Sequence[Edge]) -> Any:
            return {
                "relations": [
                    {"subject": e.subject, "predicate": spell.get(e.predicate, e.predicate), "object": e.object}
                    for e in chunk
                ]
            }

        found = {}
        for member in await self._batched(url, unique, body):
            found[self._reader.triple(member)] = self._reader.relation_metadata(member)
        return {e: found.get(e, {}) for e in unique}

    async def _relation_document(self, edge: Edge) -> dict[str, Any]:
        spell = self._schema.spelling
        url = self._url(
            "relation_url",
            subject=edge.subject,
            predicate=spell.get(edge.predicate, edge.predicate),
            object=edge.object,
        )
        if url is None:
            return {}
        try:
            return self._reader.relation_metadata(await self._fetch(url))
        except NotFound:
            return {}

    # -- batch endpoints -------------------------------------------------------------

    def _batch_url(self, name: str) -> str | None:
        if not self.config.use_batch or not self._schema.batch:
            return None
        return self._schema.batch.get(name)

    async def _batched(self, url: str, items: Sequence[T], body: Callable[[Sequence[T]], Any]) -> list[Frame]:
        size = self._schema.max_batch
        chunks = [items[i : i + size] for i in range(0, len(items), size)]

        async def one(i: int) -> list[Frame]:
            try:
                return await self._pages(url, body=body(chunks[i]))
            except NotFound:
                raise ApiError(
                    f"The batch endpoint {shown(url)} advertised by the schema answered 404.",
                    "Fix the API's schema document, or give --no-use-batch.",
                ) from None

        answers = await gather_bounded(range(len(chunks)), one, self._concurrency)
        return [member for i in range(len(chunks)) for member in answers[i]]


def _distinct(entity_ids: list[str]) -> list[str]:
    """The ids once each, in order, without the empty id (no URL names it)."""
    return [i for i in dict.fromkeys(entity_ids) if i]


def _option_context(value: str | None, option: str) -> Any:
    return load_local_context(value, option) if value else None
