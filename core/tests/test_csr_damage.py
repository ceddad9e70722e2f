"""A damaged array index is refused at open, in one line, and never answers: the store's tables do."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from bfsql import Graph
from bfsql.backends.sqlite import SqliteBackend, SqliteStoreError
from bfsql.csr import DamagedIndex, build_index, load_index
from bfsql.engine import bfs_query
from bfsql.errors import BackendFailure
from bfsql.loading.sqlite_loader import load_sqlite

from conftest import random_bundle


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


BUNDLE = random_bundle(random.Random(7), 400)
SEED = Counter(row["subject"] for row in BUNDLE if row["kind"] == "relationship").most_common(1)[0][0]
"""The entity with the most edges of its own."""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A random store of 400 relationships with its index saved."""
    db = tmp_path / "graph.sqlite"
    load_sqlite(db, [write_jsonl(tmp_path / "graph.jsonl", BUNDLE)])
    return db


def _damage(db: Path, array: str, change: bytes) -> None:
    """Overwrite the first bytes of the saved ``array`` with ``change`` (as a bad disk or a partial copy would)."""
    with sqlite3.connect(db) as conn:
        (data,) = conn.execute("SELECT data FROM csr_part WHERE name = ? AND part = 0", (array,)).fetchone()
        conn.execute("UPDATE csr_part SET data = ? WHERE name = ? AND part = 0",
                     (change + data[len(change):], array))


def _answer(db: Path, seed: str) -> tuple[int, int, list[str]]:
    """A 2-hop traversal of the store at ``db``, served once its index is read (or refused)."""

    async def walk() -> tuple[int, int, list[str]]:
        backend = SqliteBackend(db)
        try:
            await backend.wait_for_index(30)
            answer = await bfs_query(Graph(backend), [seed], 2, topology_only=True)
            return answer.node_count, answer.edge_count, sorted(answer.node_ids)
        finally:
            await backend.aclose()

    return asyncio.run(walk())


@pytest.mark.parametrize("array, change", [
    ("subjects", b"\x01\x00\x00\x00\x02\x00\x00\x00"),  # edges moved to other nodes: every shape still fits
    ("rows", b"\xff\xff\xff\x7f"),  # an edge number out of range
    ("offsets", b"\x00" * 16),
])
def test_a_damaged_index_is_refused_and_the_tables_answer(
    store: Path, array: str, change: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    sound = _answer(store, SEED)
    assert sound[0] > 10
    _damage(store, array, change)
    with sqlite3.connect(store) as conn, pytest.raises(DamagedIndex, match="checksum"):
        load_index(conn)
    with caplog.at_level(logging.WARNING, logger="bfsql.csr"):
        assert _answer(store, SEED) == sound
    (said,) = [r.getMessage() for r in caplog.records if r.name == "bfsql.csr"]
    assert "is damaged" in said and "\n" not in said and "bfsql load" in said


def test_without_a_saved_checksum_the_shapes_are_still_checked(store: Path) -> None:
    """A store written before checksums were saved: its index is read, and one whose arrays do not fit is refused."""
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'csr_checksum'")
        loaded = load_index(conn)
        assert loaded is not None and loaded.edge_count == build_index(conn).edge_count
    _damage(store, "rows", b"\xff\xff\xff\x7f")
    with sqlite3.connect(store) as conn, pytest.raises(DamagedIndex, match="do not fit together"):
        load_index(conn)


@pytest.mark.parametrize("array", ["subjects", "ids", "types"])
def test_without_a_saved_checksum_a_missing_array_is_refused(store: Path, array: str) -> None:
    """A part gone from an older store's index (no checksum to notice it): refused as damaged, whichever it was."""
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'csr_checksum'")
        conn.execute("DELETE FROM csr_part WHERE name = ?", (array,))
    with sqlite3.connect(store) as conn, pytest.raises(DamagedIndex, match="missing or cut"):
        load_index(conn)


def test_a_damaged_store_says_so_and_that_trying_again_will_not_help(store: Path) -> None:
    """Pages of the store overwritten: the error names the damage and how to mend it, not "try again", whether
    opening the store meets it (the pages it counts relationships from: where they lie depends on the store's
    other tables) or the call does."""
    size = store.stat().st_size
    with store.open("r+b") as damaged:
        damaged.seek(size // 3)
        damaged.write(b"\xa5" * (size // 3))

    async def walk() -> str:
        try:
            backend = SqliteBackend(store, memory_index=0)
        except SqliteStoreError as exc:
            return str(exc)
        try:
            await bfs_query(Graph(backend), [SEED], 2, topology_only=True)
        except BackendFailure as exc:
            return str(exc)
        finally:
            await backend.aclose()
        return "answered"

    said = asyncio.run(walk())
    assert "is damaged" in said and "Trying again will not help" in said and "bfsql load" in said, said
