"""The conformance suite through the reference server, over real HTTP on loopback.

The server is a ``bfsql jsonld-serve --backend memory`` subprocess over the standard
graph, with pages of 2 relations and batches of 3 ids. Three ways of reading it must
all conform: with its batch endpoints, without them (one request per id, fanned out),
and with a client @context that expands and re-compacts every type, predicate and key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bfsql import Capabilities
from bfsql.testing.conformance import BackendConformance
from bfsql_jsonld import JsonLdBackend, JsonLdConfig, server_context


class TestJsonLdWithBatchEndpoints(BackendConformance):
    capabilities = Capabilities(batch_primitives=True, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url))
        yield backend
        await backend.aclose()


class TestJsonLdOneRequestPerId(BackendConformance):
    capabilities = Capabilities(batch_primitives=False, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url, use_batch=False, max_connections=4))
        yield backend
        await backend.aclose()


class TestJsonLdCompactedWithClientContext(BackendConformance):
    capabilities = Capabilities(batch_primitives=True, provenance=True, vector_search=True)

    @pytest.fixture
    async def backend(self, reference_url: str) -> AsyncIterator[JsonLdBackend]:
        client_context = json.dumps({"@context": server_context()})
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=reference_url, context=client_context))
        yield backend
        await backend.aclose()
