"""The bfsql conformance suite against a real Bolt server (FalkorDB), standard graph loaded."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from bfsql import Capabilities, Record
from bfsql.testing import BackendConformance
from bfsql.testing.standard_graph import standard_records
from bfsql_neo4j import Neo4jBackend

from conftest import FalkorServer, reset_bolt

_RANDOM_GRAPHS = itertools.count()


class TestNeo4jBackendOnFalkorDB(BackendConformance):
    """Relationship types keep their case (the standard graph's predicates are upper case)."""

    capabilities = Capabilities(batch_primitives=True, provenance=True)

    @pytest.fixture
    async def backend(self, falkordb_server) -> AsyncIterator[Neo4jBackend]:
        falkordb_server.use("standard", standard_records)
        async for backend in falkordb_server.open(provenance=True):
            yield backend

    @pytest.fixture
    def load_records(self, falkordb_server: FalkorServer) -> Callable[[list[Record]], Awaitable[Neo4jBackend]]:
        """A random graph written as the served graph (the suite closes the backend; the next open resets Bolt)."""

        async def load(records: list[Record]) -> Neo4jBackend:
            falkordb_server.serve_only(f"random-{next(_RANDOM_GRAPHS)}", lambda: records)
            reset_bolt(falkordb_server.bolt_port)
            return await Neo4jBackend.open(falkordb_server.config())

        return load
