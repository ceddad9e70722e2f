"""Vector search by the sign-bit codes the loader saves and the server holds (bfsql_postgres.vector_codes), against
PostgreSQL's own exact scan over the same vectors, on a real server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import numpy as np
import pytest
from test_loader import bfsql

from bfsql import EntityStub
from bfsql.testing.standard_graph import write_standard_bundle
from bfsql_postgres import PostgresBackend, PostgresConfig, queries
from bfsql_postgres.loader import load_postgres
from bfsql_postgres.vector_codes import STAMP_SQL

DIMENSION = 64
QUERIES = 12


class TableEmbedder:
    """Vectors given in advance, by text: stands for a model whose vectors the test draws."""

    semantic = True
    min_similarity = 0.0

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.table = vectors
        self.name = "table"
        self.dimension = DIMENSION

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]


def unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


@pytest.fixture
def few_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 rows scored exactly of some 2,600 (4 a hit for 10 hits), so that the codes choose them."""
    from bfsql import vectors

    monkeypatch.setattr(vectors, "RESCORED", 5)
    monkeypatch.setattr(vectors, "PREFIX_SURVIVORS", 8)


@pytest.fixture
async def planted(scratch_dsn: str, tmp_path: Path) -> AsyncIterator[tuple[str, np.ndarray, TableEmbedder]]:
    """A loaded store of 2,480 random vectors of two types, and queries with ten neighbours each among them."""
    rng = np.random.default_rng(7)
    queries_ = unit(rng.standard_normal((QUERIES, DIMENSION)))
    rows = [unit(rng.standard_normal((2480 - 10 * QUERIES, DIMENSION)))]
    for query in queries_:
        for cosine in np.linspace(0.95, 0.6, 10):  # random ones: 0 +- 0.125, at most ~0.45
            away = rng.standard_normal(DIMENSION)
            away = unit(away - (away @ query) * query)
            rows.append((cosine * query + np.sqrt(1 - cosine**2) * away)[None])
    table = np.concatenate(rows)
    names = [f"n{i}" for i in range(len(table))]
    bundle = tmp_path / "planted.jsonl"
    bundle.write_text("".join(
        json.dumps({"kind": "entity", "id": f"e:{i:05d}", "entity_type": "Gene" if i % 3 else "Disease", "name": n})
        + "\n" for i, n in enumerate(names)), encoding="utf-8")
    embedder = TableEmbedder(dict(zip(names, table, strict=True)))
    await load_postgres(scratch_dsn, [bundle], embedder=embedder)
    yield scratch_dsn, queries_, embedder


async def exact(backend: PostgresBackend, query: np.ndarray, types: list[str] | None, limit: int) -> list[EntityStub]:
    """PostgreSQL's exact scan over every stored vector (the search without codes or index)."""
    literal = "[" + ",".join(repr(float(x)) for x in query) + "]"
    rows = await backend.pool.fetch(queries.vector_search_sql(backend.layout), literal, types, limit)
    return [EntityStub(id=r["entity_id"], entity_type=r["entity_type"], name=r["name"], score=r["similarity"])
            for r in rows]


async def test_a_load_saves_codes_and_a_search_by_them_finds_what_an_exact_scan_finds(
    planted: tuple[str, np.ndarray, TableEmbedder], few_candidates: None
) -> None:
    dsn, queries_, _ = planted
    conn = await asyncpg.connect(dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'entity_embedding%'") == 0
        assert await conn.fetchval("SELECT count(*) FROM bfsql_vector_row") == 2480
        stamp = await conn.fetchval(STAMP_SQL)
    finally:
        await conn.close()
    backend = await PostgresBackend.create(PostgresConfig(dsn=dsn))
    try:
        assert backend.layout.vector_codes and not backend.layout.vector_index
        for query in queries_:
            for types in (None, ["Gene"]):
                found = await backend.vector_search(query.tolist(), types, 10)
                want = await exact(backend, query, types, 10)
                # the planted neighbours (of the type) stand far above the rest: the 40 candidates hold them all
                planted_ = [(h.id, h.score) for h in want if (h.score or 0) > 0.55]
                assert len(planted_) >= (10 if types is None else 4)
                assert [(h.id, h.score) for h in found][: len(planted_)] == planted_
        assert backend._codes is not None and backend._codes.done()  # searched by the codes, none stale
        saved = backend._codes.result()
        assert saved is not None and saved.stamp == stamp and len(saved.index) == 2480
        assert saved.index.nbytes() < 2480 * 24  # one word of codes and two copied words a row, the types' bounds
    finally:
        await backend.aclose()


async def test_a_write_by_other_means_leaves_search_exact_until_a_load_saves_the_codes_again(
    planted: tuple[str, np.ndarray, TableEmbedder], few_candidates: None
) -> None:
    dsn, queries_, embedder = planted
    backend = await PostgresBackend.create(PostgresConfig(dsn=dsn))
    writer = await asyncpg.connect(dsn)
    try:
        query = queries_[0]
        before = await backend.vector_search(query.tolist(), None, 10)
        # another tool moves a far entity next to the query: the trigger marks the codes stale
        literal = "[" + ",".join(repr(float(x)) for x in query) + "]"
        far = (await exact(backend, -query, None, 1))[0].id
        await writer.execute("UPDATE entity SET embedding = $1::text::halfvec WHERE entity_id = $2", literal, far)
        assert await writer.fetchval(STAMP_SQL) is None
        after = await backend.vector_search(query.tolist(), None, 10)
        assert after[0].id == far and after == await exact(backend, query, None, 10)
        assert before[0].id != far and backend._codes is None
        await load_postgres(dsn, [], embedder=embedder)  # saves the codes of the vectors as they now are
        assert await writer.fetchval(STAMP_SQL) is not None
        again = await backend.vector_search(query.tolist(), None, 10)
        assert again == after and (await backend._vector_codes()) is not None
    finally:
        await writer.close()
        await backend.aclose()


async def test_a_load_drops_the_hnsw_index_an_older_bfsql_built(
    planted: tuple[str, np.ndarray, TableEmbedder]
) -> None:
    dsn, _, embedder = planted
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE INDEX entity_embedding_hnsw_64 ON entity "
                           "USING hnsw ((embedding::halfvec(64)) halfvec_cosine_ops)")
        await load_postgres(dsn, [], embedder=embedder)
        assert await conn.fetchval("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'entity_embedding%'") == 0
        await load_postgres(dsn, [], embedder="none")
        assert await conn.fetchval(STAMP_SQL) is None
        assert await conn.fetchval("SELECT count(*) FROM bfsql_vector_row") == 0
    finally:
        await conn.close()


async def test_bfsql_postgres_load_without_files_saves_the_codes_again(scratch_dsn: str, tmp_path: Path) -> None:
    await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder="hashing")
    conn = await asyncpg.connect(scratch_dsn)
    try:
        stamp = await conn.fetchval(STAMP_SQL)
        await conn.execute("UPDATE entity SET name = name WHERE entity_id = 'GENE:TP53'")  # another tool's write
        assert await conn.fetchval(STAMP_SQL) is None
        done = bfsql("postgres", "load", "--dsn", scratch_dsn)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["embedder"] == "hashing"
        assert await conn.fetchval(STAMP_SQL) == stamp  # the same vectors: the same codes and stamp
    finally:
        await conn.close()
