"""A load embeds its entities' names in a worker thread while it writes its relationships and indexes them
(bfsql.loading.embedding_ahead): the vectors stored are the embedder's, in order; an embedder's error fails the
load and leaves the store as it was; no worker outlives its load."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
from pathlib import Path

import pytest

from bfsql.embedders import HashingEmbedder
from bfsql.loading.progress import LoadProgress
from bfsql.loading.sqlite_loader import encode_vectors, load_sqlite

from conftest import random_bundle


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _workers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "bfsql-load-embed"]


class _Phases(LoadProgress):
    """Remembers the phase the load is in; ``index`` is set when the index phase begins."""

    def __init__(self) -> None:
        self.phase = ""
        self.index = threading.Event()

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        self.phase = phase
        if phase == "index":
            self.index.set()


class _Watching(HashingEmbedder):
    """The hashing embedder, noting the load's phase at each call; its first call waits for the index phase (for at
    most 10 s), so that a load that embeds only once everything else is written cannot pass for one that does not."""

    def __init__(self, phases: _Phases, fail: bool = False) -> None:
        super().__init__(64)
        self.phases, self.fail = phases, fail
        self.seen: list[str] = []

    def embed_array(self, texts: list[str]) -> list[list[float]]:
        if not self.seen:
            self.phases.index.wait(10)
        self.seen.append(self.phases.phase)
        if self.fail:
            raise RuntimeError("the model is gone")
        return [self.embed_one(text) for text in texts]


def test_names_are_embedded_while_the_relationships_are_written_and_stored_in_order(tmp_path: Path) -> None:
    phases = _Phases()
    embedder = _Watching(phases)
    db = tmp_path / "g.sqlite"
    load_sqlite(db, [_write(tmp_path / "g.jsonl", random_bundle(random.Random(3), 400))], progress=phases,
                embedder=embedder)
    assert embedder.seen and embedder.seen[0] in {"index", "write"}, embedder.seen
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT entity_id, text, vector FROM entity_vector ORDER BY entity_id").fetchall()
    assert len(stored) > 20
    expected = encode_vectors([HashingEmbedder(64).embed_one(text) for _, text, _ in stored])
    assert [vector for _, _, vector in stored] == expected
    assert _workers() == []


def test_an_embedders_error_fails_the_load_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    load_sqlite(db, [_write(tmp_path / "a.jsonl", [{"kind": "entity", "id": "A", "entity_type": "T"}])])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    phases = _Phases()
    with pytest.raises(RuntimeError, match="the model is gone"):
        load_sqlite(db, [_write(tmp_path / "g.jsonl", random_bundle(random.Random(4), 400))], progress=phases,
                    embedder=_Watching(phases, fail=True))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "g.jsonl", "g.sqlite"]
    assert _workers() == []
