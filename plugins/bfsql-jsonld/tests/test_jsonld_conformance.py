"""The conformance suite through the reference server, over real HTTP on loopback.

The server is a ``bfsql jsonld-serve --backend memory`` subprocess over the standard
graph, with pages of 2 relations, batches of 3 ids and batch answers of 3 relations. Four
ways of reading it must all conform: with its batch endpoints (their answers continued
over next links); without them, one request per id and hop (``--edges-url`` lists both
directions); without them, one request per id and direction (the default templates); and
with a client @context that expands and re-compacts every type, predicate and key. The exact-count
check's random graphs are served by reference servers of their own, read in the same four ways.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bfsql import Capabilities, Record
from bfsql.testing import BackendConformance
from bfsql_jsonld import JsonLdBackend, JsonLdConfig, server_context

BOTH_DIRECTIONS = "/entities/{id}/relations?direction=both"


def loader(reference_for: Callable[[list[Record]], str], **options: Any) -> Callable[[list[Record]],
                                                                                      Awaitable[JsonLdBackend]]:
    """Backends over random graphs, each served by its reference server, read with ``options``."""

    async def load(records: list[Record]) -> JsonLdBackend:
        return await JsonLdBackend.create(JsonLdConfig(base_url=reference_for(records), **options))

    return load


class TestJsonLdWithBatchEndpoints(BackendConformance):
    capabilities = Capabilities(batch_primitives=True, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url))
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, reference_for: Callable[[list[Record]], str]) -> Callable[[list[Record]],
                                                                                     Awaitable[JsonLdBackend]]:
        return loader(reference_for)


class TestJsonLdOneRequestPerId(BackendConformance):
    capabilities = Capabilities(batch_primitives=False, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        config = JsonLdConfig(base_url=reference_url, use_batch=False, max_connections=4, edges_url=BOTH_DIRECTIONS)
        backend = await JsonLdBackend.create(config)
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, reference_for: Callable[[list[Record]], str]) -> Callable[[list[Record]],
                                                                                     Awaitable[JsonLdBackend]]:
        return loader(reference_for, use_batch=False, max_connections=4, edges_url=BOTH_DIRECTIONS)


class TestJsonLdOneRequestPerDirection(BackendConformance):
    capabilities = Capabilities(batch_primitives=False, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url, use_batch=False, max_connections=4))
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, reference_for: Callable[[list[Record]], str]) -> Callable[[list[Record]],
                                                                                     Awaitable[JsonLdBackend]]:
        return loader(reference_for, use_batch=False, max_connections=4)


class TestJsonLdCompactedWithClientContext(BackendConformance):
    capabilities = Capabilities(batch_primitives=True, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        client_context = json.dumps({"@context": server_context()})
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url, context=client_context))
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, reference_for: Callable[[list[Record]], str]) -> Callable[[list[Record]],
                                                                                     Awaitable[JsonLdBackend]]:
        return loader(reference_for, context=json.dumps({"@context": server_context()}))
