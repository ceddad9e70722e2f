"""The sqlite backend passes the conformance suite (capabilities read from the backend at run time)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bfsql.backends.sqlite import SqliteBackend
from bfsql.loading.sqlite_loader import load_sqlite
from bfsql.testing import BackendConformance


class TestSqliteBackend(BackendConformance):
    @pytest.fixture
    async def backend(self, standard_bundle: Path, tmp_path: Path) -> AsyncIterator[SqliteBackend]:
        db = tmp_path / "standard.db"
        load_sqlite(db, [standard_bundle])
        backend = SqliteBackend(db)
        yield backend
        await backend.aclose()
