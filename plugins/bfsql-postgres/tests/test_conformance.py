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
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from pg_variants import build_evidence_table_variant

from bfsql import Record
from bfsql.testing import BackendConformance
from bfsql.testing.standard_graph import standard_records
from bfsql_postgres import PostgresBackend, PostgresConfig, loader

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
    """The standard graph loaded with the loader of ``bfsql postgres load`` (with vectors); every traversal
    walked in the database (``walk_rows=0``), however small."""

    capabilities = dataclasses.replace(PostgresBackend.capabilities, vector_search=True)

    @pytest.fixture
    async def backend(self, standard_dsn: str) -> AsyncIterator[PostgresBackend]:
        backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn), walk_rows=0)
        try:
            yield backend
        finally:
            await backend.aclose()

    @pytest.fixture
    def load_records(self, pg_server: Server) -> Callable[[list[Record]], Awaitable[PostgresBackend]]:
        """A new database per graph, written by the loader of ``bfsql postgres load`` (no vectors)."""

        async def load(records: list[Record]) -> PostgresBackend:
            dsn = await pg_server.create_database("random")
            await loader.load_records(dsn, records, vector=False, embedder="none")
            return await PostgresBackend.create(PostgresConfig(dsn=dsn), walk_rows=0)

        return load


class TestEvidenceTableVariantConformance(BackendConformance):
    """The standard graph in a schema bfsql did not create, read unchanged (lexical search only); traversals
    small enough to be walked hop by hop."""

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
