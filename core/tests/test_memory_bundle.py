"""The memory backend's bundle: refused above its size limit, and bad rows reported as a plain error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bfsql.backends.memory import MemoryBackend, MemoryBundleError
from bfsql.embedders import HashingEmbedder


def write_bundle(path: Path, count: int) -> Path:
    rows = ({"kind": "entity", "id": f"n{i}", "entity_type": "T", "name": f"node {i:06d}"} for i in range(count))
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_bundle_above_the_limit_is_refused_with_a_pointer_to_bfsql_load(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "g.jsonl", 20_000)  # about 1.4 MB
    with pytest.raises(MemoryBundleError) as caught:
        MemoryBackend.from_bundle(bundle, max_bundle_mb=1)
    assert "is 1.5 MB; the memory backend reads bundles up to 1 MB (--max-bundle-mb)" in caught.value.message
    store = bundle.with_suffix(".sqlite")
    assert caught.value.hint == f"Build a SQLite store once and serve that: bfsql load --db {store} {bundle} && " \
        f"bfsql serve --db {store}"
    assert len(MemoryBackend.from_bundle(bundle, max_bundle_mb=None)._entities) == 20_000


@pytest.mark.asyncio
async def test_vector_search_over_the_packed_vectors(tmp_path: Path) -> None:
    backend = MemoryBackend.from_bundle(write_bundle(tmp_path / "g.jsonl", 600))
    embedder = HashingEmbedder()
    await backend.bind_embedder(embedder)
    (query,) = await embedder.embed(["node 000421"])
    hits = await backend.vector_search(query, limit=3)
    assert hits[0].id == "n421" and hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_bad_rows_and_missing_bundles_are_plain_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "entity", "id": "A"}\n', encoding="utf-8")
    with pytest.raises(MemoryBundleError, match=r"bad\.jsonl:1: entity_type: Field required"):
        MemoryBackend.from_bundle(bad)
    with pytest.raises(MemoryBundleError, match="Cannot read the bundle"):
        MemoryBackend.from_bundle(tmp_path / "absent.jsonl")


def test_a_sqlite_store_given_as_a_bundle_says_to_serve_it_with_the_sqlite_backend(tmp_path: Path) -> None:
    from bfsql.loading.sqlite_loader import load_sqlite

    store = tmp_path / "GO.sqlite"
    load_sqlite(store, [write_bundle(tmp_path / "g.jsonl", 3)])
    with pytest.raises(MemoryBundleError) as caught:
        MemoryBackend.from_bundle(store)
    assert caught.value.message == f"{store} is a SQLite store (made by 'bfsql load'), not a JSONL bundle."
    assert caught.value.hint == f"Serve it with the sqlite backend: bfsql serve --db {store}"
