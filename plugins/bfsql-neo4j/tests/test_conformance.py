"""The bfsql conformance suite against a real Bolt server (FalkorDB), standard graph loaded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bfsql import Capabilities
from bfsql.testing import BackendConformance
from bfsql.testing.standard_graph import standard_records
from bfsql_neo4j import Neo4jBackend


class TestNeo4jBackendOnFalkorDB(BackendConformance):
    """Relationship types keep their case (the standard graph's predicates are upper case)."""

    capabilities = Capabilities(batch_primitives=True, provenance=True)

    @pytest.fixture
    async def backend(self, falkordb_server) -> AsyncIterator[Neo4jBackend]:
        falkordb_server.use("standard", standard_records)
        async for backend in falkordb_server.open(provenance=True):
            yield backend
