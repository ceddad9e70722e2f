"""The bfsql conformance suite (and parity with the memory backend) on a real PostgreSQL server.

Two databases, built two ways: the standard graph loaded by bfsql's own loader (jsonb,
bundle_evidence, pg_trgm, entity vectors of the ``hashing`` embedder, so vector search
is on); and the same graph in the evidence-table variant of the schema written by
"another tool" (json columns, varchar ids, numeric confidences, an enum status, evidence
keyed by a relationship UUID, no index, no vectors).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from pg_variants import build_evidence_table_variant

from bfsql.testing import BackendConformance
from bfsql.testing.standard_graph import standard_records
from bfsql_postgres import PostgresBackend, PostgresConfig

from conftest import Server


@pytest.fixture(scope="session")
def variant_dsn(pg_server: Server) -> str:
    """The standard graph in the evidence-table variant of the kgraph schema, written by plain INSERTs."""

    async def build() -> str:
        dsn = await pg_server.create_database("variant")
        await build_evidence_table_variant(dsn, standard_records())
        return dsn

    return asyncio.run(build())


class TestPostgresConformance(BackendConformance):
    """The standard graph loaded with the loader of ``bfsql postgres load`` (with vectors)."""

    capabilities = dataclasses.replace(PostgresBackend.capabilities, vector_search=True)

    @pytest.fixture
    async def backend(self, standard_dsn: str) -> AsyncIterator[PostgresBackend]:
        backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn))
        try:
            yield backend
        finally:
            await backend.aclose()


class TestEvidenceTableVariantConformance(BackendConformance):
    """The standard graph in a schema bfsql did not create, read unchanged (lexical search only)."""

    capabilities = PostgresBackend.capabilities

    @pytest.fixture
    async def backend(self, variant_dsn: str) -> AsyncIterator[PostgresBackend]:
        backend = await PostgresBackend.create(PostgresConfig(dsn=variant_dsn))
        assert (backend.layout.evidence_table, backend.layout.bundle_evidence) == (True, False)
        assert not backend.layout.synonyms_jsonb
        try:
            yield backend
        finally:
            await backend.aclose()
