"""The sqlite backend passes the conformance suite, both ways it answers hops, and opened for one call (its
saved array index read at the first walk).

Capabilities are read from the backend at run time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bfsql.backend import opening_for_one_call
from bfsql.backends.sqlite import SqliteBackend
from bfsql.loading.bundle import Record
from bfsql.loading.sqlite_loader import load_records, load_sqlite
from bfsql.testing import BackendConformance


def _random_store(tmp_path: Path, records: list[Record]) -> Path:
    """A new store in ``tmp_path`` holding ``records`` (a random graph), without vectors."""
    db = tmp_path / f"random-{len(list(tmp_path.iterdir()))}.db"
    load_records(db, records, embedder="none")
    return db


class TestSqliteBackend(BackendConformance):
    """Hops and whole walks from the array index saved in the store."""

    @pytest.fixture
    async def backend(self, standard_bundle: Path, tmp_path: Path) -> AsyncIterator[SqliteBackend]:
        db = tmp_path / "standard.db"
        load_sqlite(db, [standard_bundle], embedder="hashing")
        backend = SqliteBackend(db)
        assert await backend.wait_for_index(30)
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, tmp_path: Path) -> Callable[[list[Record]], Awaitable[SqliteBackend]]:
        async def load(records: list[Record]) -> SqliteBackend:
            backend = SqliteBackend(_random_store(tmp_path, records))
            assert await backend.wait_for_index(30)
            return backend

        return load


class TestSqliteBackendWithoutIndex(BackendConformance):
    """Hops from set-based SQL, as for stores bigger than ``memory_index``."""

    @pytest.fixture
    async def backend(self, standard_bundle: Path, tmp_path: Path) -> AsyncIterator[SqliteBackend]:
        db = tmp_path / "standard.db"
        load_sqlite(db, [standard_bundle], embedder="hashing")
        backend = SqliteBackend(db, memory_index=0)
        assert not await backend.wait_for_index(0)
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, tmp_path: Path) -> Callable[[list[Record]], Awaitable[SqliteBackend]]:
        """Random graphs served without the array index: the engine walks them hop by hop over SQL."""

        async def load(records: list[Record]) -> SqliteBackend:
            return SqliteBackend(_random_store(tmp_path, records), memory_index=0)

        return load


class TestSqliteBackendOpenedForOneCall(BackendConformance):
    """Opened for one call (``bfsql query``), a store above ``one_call_sql_walk``: types, predicates and nodes
    answered before the saved index is read, the index read by the first walk."""

    @pytest.fixture
    async def backend(self, standard_bundle: Path, tmp_path: Path) -> AsyncIterator[SqliteBackend]:
        db = tmp_path / "standard.db"
        load_sqlite(db, [standard_bundle], embedder="hashing")
        with opening_for_one_call():
            backend = SqliteBackend(db, one_call_sql_walk=0)
        assert backend._csr is None and backend.capabilities.traversal
        yield backend
        await backend.aclose()

    @pytest.fixture
    def load_records(self, tmp_path: Path) -> Callable[[list[Record]], Awaitable[SqliteBackend]]:
        return _one_call_loader(tmp_path, sql_walk=False)


class TestSmallSqliteBackendOpenedForOneCall(BackendConformance):
    """Opened for one call, a store of at most ``one_call_sql_walk`` relationships (the demo): every walk hop by
    hop over SQL, the array index never read."""

    @pytest.fixture
    async def backend(self, standard_bundle: Path, tmp_path: Path) -> AsyncIterator[SqliteBackend]:
        db = tmp_path / "standard.db"
        load_sqlite(db, [standard_bundle], embedder="hashing")
        with opening_for_one_call():
            backend = SqliteBackend(db)
        assert not backend.capabilities.traversal and not backend.capabilities.in_memory
        yield backend
        assert backend._csr is None, "the array index was read"
        await backend.aclose()

    @pytest.fixture
    def load_records(self, tmp_path: Path) -> Callable[[list[Record]], Awaitable[SqliteBackend]]:
        return _one_call_loader(tmp_path, sql_walk=True)


def _one_call_loader(tmp_path: Path, sql_walk: bool) -> Callable[[list[Record]], Awaitable[SqliteBackend]]:
    """Random records loaded into a store opened for one call: walking over SQL (``sql_walk``) or reading its saved
    index at the first walk."""
    async def load(records: list[Record]) -> SqliteBackend:
        db = _random_store(tmp_path, records)
        with opening_for_one_call():
            return SqliteBackend(db, one_call_sql_walk=len(records) if sql_walk else 0)

    return load
