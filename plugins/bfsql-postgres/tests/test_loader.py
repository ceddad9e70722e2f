"""The loader and the ``bfsql postgres`` commands: atomic, idempotent, bad rows named by file and line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bfsql import BadRow, Edge, MemoryBackend, read_bundle
from bfsql.testing.standard_graph import STANDARD_IDS, write_standard_bundle
from bfsql_postgres import PostgresBackend, PostgresConfig
from bfsql_postgres.loader import load_postgres

from conftest import write_bundle


async def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the graph tables, sorted, evidence without its serial id."""
    conn = await asyncpg.connect(dsn)
    try:
        queries = {
            "entity": "SELECT entity_id, entity_type, name, properties::text, status, confidence, synonyms::text, "
            "source, canonical_url, embedding::text FROM entity ORDER BY entity_id",
            "relationship": "SELECT subject_id, predicate, object_id, confidence, source_documents::text, "
            "properties::text FROM relationship ORDER BY 1, 2, 3",
            "evidence": "SELECT relationship_key, text_span, confidence, document_id, section FROM bundle_evidence "
            "ORDER BY 1, 2, 3, 4, 5",
            "meta": "SELECT key, value FROM bfsql_meta ORDER BY key",
        }
        return {name: [tuple(r) for r in await conn.fetch(sql)] for name, sql in queries.items()}
    finally:
        await conn.close()


def bfsql(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bfsql", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


async def test_cli_init_schema_then_load(scratch_dsn: str, tmp_path: Path) -> None:
    bundle = write_standard_bundle(tmp_path)
    done = bfsql("postgres", "init-schema", "--dsn", scratch_dsn)
    assert done.returncode == 0, done.stderr
    done = bfsql("postgres", "load", str(bundle), env={"DATABASE_URL": scratch_dsn})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["entities"], report["relationships"], report["evidence"]) == (11, 15, 5)
    assert report["embedder"] is None and "@" not in report["database"]  # no semantic embedder installed
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    try:
        assert sorted(await backend.get_nodes(list(STANDARD_IDS))) == sorted(STANDARD_IDS)
    finally:
        await backend.aclose()


async def test_cli_names_the_bad_row_and_loads_nothing(scratch_dsn: str, tmp_path: Path) -> None:
    good = write_standard_bundle(tmp_path)
    bad = write_bundle(tmp_path / "bad.jsonl", [
        '{"kind": "entity", "id": "X:1", "entity_type": "Thing"}',
        "",
        '{"kind": "relationship", "subject": "X:1", "predicate": "", "object": "X:2"}',
    ])
    assert bfsql("postgres", "init-schema", "--dsn", scratch_dsn).returncode == 0
    done = bfsql("postgres", "load", "--dsn", scratch_dsn, str(good), str(bad))
    assert done.returncode != 0
    assert f"{bad}:3: predicate" in done.stderr and "nothing was loaded" in done.stderr
    conn = await asyncpg.connect(scratch_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM entity") == 0
    finally:
        await conn.close()


async def test_load_is_atomic(scratch_dsn: str, tmp_path: Path) -> None:
    await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)])
    before = await snapshot(scratch_dsn)
    update = write_bundle(tmp_path / "update.jsonl", [
        '{"kind": "entity", "id": "GENE:TP53", "entity_type": "Gene", "name": "renamed"}',
        '{"kind": "entity", "id": "X:new", "entity_type": "Thing"}',
        '{"kind": "evidence", "subject": "X:new", "predicate": "P", "object": "GENE:TP53", "confidence": "high"}',
    ])
    with pytest.raises(BadRow, match=r"update\.jsonl:3: confidence"):
        await load_postgres(scratch_dsn, [update])
    assert await snapshot(scratch_dsn) == before


async def test_load_is_idempotent_and_matches_the_memory_backend(scratch_dsn: str, tmp_path: Path) -> None:
    bundle = write_standard_bundle(tmp_path)
    first = await load_postgres(scratch_dsn, [bundle], embedder="hashing")
    once = await snapshot(scratch_dsn)
    second = await load_postgres(scratch_dsn, [bundle, bundle])
    assert await snapshot(scratch_dsn) == once
    assert first.embedded == 10 and second.embedded == 10  # every visible loaded entity, again
    assert len(once["evidence"]) == 5

    memory = MemoryBackend(record for _, record in read_bundle(bundle))
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    try:
        ids = list(STANDARD_IDS)
        assert await backend.metadata_for_nodes(ids) == await memory.metadata_for_nodes(ids)
        edges = sorted({Edge(*row[:3]) for there in (await memory.hop(ids)).values() for row in there.edges})
        assert await backend.metadata_for_edges(edges) == await memory.metadata_for_edges(edges)
        assert await backend.provenance_for_edges(edges) == await memory.provenance_for_edges(edges)
    finally:
        await backend.aclose()


async def test_last_record_wins_and_evidence_is_deduplicated(scratch_dsn: str, tmp_path: Path) -> None:
    rows = [
        '{"kind": "entity", "id": "X:1", "entity_type": "Thing", "name": "first"}',
        '{"kind": "entity", "id": "X:2", "entity_type": "Thing", "name": "two"}',
        '{"kind": "relationship", "subject": "X:1", "predicate": "P", "object": "X:2", "confidence": 0.1}',
        '{"kind": "evidence", "subject": "X:1", "predicate": "P", "object": "X:2", "text_span": "a"}',
        '{"kind": "evidence", "subject": "X:1", "predicate": "P", "object": "X:2", "text_span": "a"}',
        '{"kind": "evidence", "subject": "X:1", "predicate": "P", "object": "X:2"}',
        '{"kind": "entity", "id": "X:1", "entity_type": "Thing", "name": "last", "synonyms": ["one"]}',
        '{"kind": "relationship", "subject": "X:1", "predicate": "P", "object": "X:2", "confidence": 0.9}',
    ]
    bundle = write_bundle(tmp_path / "dupes.jsonl", rows)
    await load_postgres(scratch_dsn, [bundle])
    await load_postgres(scratch_dsn, [bundle])
    state = await snapshot(scratch_dsn)
    assert [(r[0], r[2], r[6]) for r in state["entity"]] == [("X:1", "last", '["one"]'), ("X:2", "two", "[]")]
    assert [r[3] for r in state["relationship"]] == [0.9]
    assert state["evidence"] == [("X:1:P:X:2", "a", None, None, None), ("X:1:P:X:2", None, None, None, None)]

    reload = write_bundle(tmp_path / "rename.jsonl", [rows[0]])
    await load_postgres(scratch_dsn, [reload])
    assert (await snapshot(scratch_dsn))["entity"][0][2] == "first"


@pytest.mark.parametrize("order", ["entities first", "edges first"])
async def test_implied_entities_never_replace_full_ones(scratch_dsn: str, tmp_path: Path, order: str) -> None:
    entities = write_bundle(tmp_path / "entities.jsonl", [
        '{"kind": "entity", "id": "G:1", "entity_type": "Gene", "name": "Full name", "synonyms": ["alias"]}',
    ])
    edges = tmp_path / "edges.csv"
    edges.write_text("subject,predicate,object,subject_type,object_type\nG:1,REGULATES,G:2,Gene,Gene\n")
    sources = [entities, edges] if order == "entities first" else [edges, entities]
    await load_postgres(scratch_dsn, sources)
    state = await snapshot(scratch_dsn)
    assert [(r[0], r[2], r[6]) for r in state["entity"]] == [("G:1", "Full name", '["alias"]'), ("G:2", "G:2", "[]")]


async def test_nul_characters_are_named(scratch_dsn: str, tmp_path: Path) -> None:
    """PostgreSQL cannot store U+0000: bfsql's reader refuses the row by name before any COPY."""
    bundle = write_bundle(tmp_path / "nul.jsonl", [
        '{"kind": "entity", "id": "X:1", "entity_type": "Thing", "name": "fine"}',
        '{"kind": "entity", "id": "X:2", "entity_type": "Thing", "properties": {"note": "a\\u0000b"}}',
    ])
    with pytest.raises(BadRow, match=r"nul\.jsonl:2: properties\.note: contains a NUL"):
        await load_postgres(scratch_dsn, [bundle])


async def test_embedder_none_drops_vectors_and_no_vector_schema_has_none(scratch_dsn: str, tmp_path: Path) -> None:
    bundle = write_standard_bundle(tmp_path)
    await load_postgres(scratch_dsn, [bundle], embedder="none")
    state = await snapshot(scratch_dsn)
    # no embedder recorded: only the saved ends' stamp (bfsql_postgres.rare_ends)
    assert state["meta"] == [("rare_ends", "1000")] and all(r[9] is None for r in state["entity"])
    report = await load_postgres(scratch_dsn, [bundle])  # auto, nothing recorded, no semantic embedder: none
    assert report.embedder is None and report.embedded == 0
    report = await load_postgres(scratch_dsn, [bundle], embedder="hashing")  # every visible entity
    assert report.embedder == "hashing" and report.embedded == 10
    assert (await load_postgres(scratch_dsn, [bundle])).embedder == "hashing"  # auto: the recorded one
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    assert backend.capabilities.vector_search
    await backend.aclose()


async def test_a_load_into_empty_tables_leaves_every_key_and_index(scratch_dsn: str, tmp_path: Path) -> None:
    """Keys and indexes are dropped and built after the rows when the tables are empty: all are back, valid."""
    from bfsql_postgres.schema import INDEXES

    await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder="none")
    conn = await asyncpg.connect(scratch_dsn)
    try:
        keys = dict(await conn.fetch(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'p'"))
        assert keys["relationship"] == "PRIMARY KEY (subject_id, predicate, object_id)"
        assert keys["entity"] == "PRIMARY KEY (entity_id)"
        indexes = {r[0] for r in await conn.fetch(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indisvalid")}
        assert set(INDEXES) <= indexes
    finally:
        await conn.close()


async def test_a_load_leaves_every_page_all_visible(scratch_dsn: str, tmp_path: Path) -> None:
    """After a load the visibility map covers every page of the graph tables: hops read the covering indexes alone."""
    await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder="none")
    conn = await asyncpg.connect(scratch_dsn)
    try:
        pages = {r[0]: (r[1], r[2]) for r in await conn.fetch(
            "SELECT relname, relpages, relallvisible FROM pg_class "
            "WHERE relname IN ('entity', 'relationship', 'bundle_evidence')")}
        assert len(pages) == 3 and all(total > 0 for total, _ in pages.values())
        assert {name: visible for name, (_, visible) in pages.items()} == {
            name: total for name, (total, _) in pages.items()}
    finally:
        await conn.close()


async def test_a_load_into_empty_tables_stores_the_rows_frozen(scratch_dsn: str, tmp_path: Path) -> None:
    """Rows copied straight into empty tables are stored frozen: no later VACUUM has to rewrite every page to
    freeze them, and no reader has to set their hint bits."""
    await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder="none")
    conn = await asyncpg.connect(scratch_dsn)
    try:
        pages = {r[0]: (r[1], r[2]) for r in await conn.fetch(
            "SELECT relname, relpages, relallfrozen FROM pg_class WHERE relname IN ('entity', 'relationship')")}
        assert len(pages) == 2 and all(total > 0 and frozen == total for total, frozen in pages.values()), pages
    finally:
        await conn.close()


class _TieVectors:
    """Vectors whose components round every way: float64 values halfway between two float32 and between two halves
    (ties), half-precision subnormals, and plain decimals. Each text gets its own rotation of them."""

    name = "ties-12"
    dimension = 12
    _COMPONENTS = (
        1 + 2**-24, -(1 + 3 * 2**-24), 1 + 2**-11 + 2**-24, 1 + 2**-11, 1 + 3 * 2**-11, 3 * 2**-25,
        2**-25, 5e-8, 0.1, 1 / 3, -0.7, 2**-149 * 1.5,
    )

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[*self._COMPONENTS[i % 12:], *self._COMPONENTS[: i % 12]] for i, _ in enumerate(texts)]


class _TieArrays(_TieVectors):
    """The same, as a float32 matrix from ``embed_array`` (the loader's way for embedders that offer it)."""

    def embed_array(self, texts: list[str]) -> Any:
        import numpy as np

        return np.asarray([[*self._COMPONENTS[i % 12:], *self._COMPONENTS[: i % 12]] for i, _ in enumerate(texts)],
                          dtype=np.float32)


@pytest.mark.parametrize("column", ["halfvec", "vector"])
@pytest.mark.parametrize("embedder", [_TieVectors, _TieArrays])
async def test_vectors_are_stored_as_their_decimal_text_would_be(
    scratch_dsn: str, tmp_path: Path, column: str, embedder: type[_TieVectors]
) -> None:
    """The loader sends vectors in pgvector's binary format: what it stores is what the server makes of the
    components' decimal text (``repr``), rounding ties and subnormals alike, in a ``halfvec`` or a ``vector``
    column."""
    from bfsql_postgres.schema import create_schema

    conn = await asyncpg.connect(scratch_dsn)
    try:
        await create_schema(conn)
        if column == "vector":
            await conn.execute("ALTER TABLE entity ALTER COLUMN embedding TYPE vector")
        await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder=embedder())
        ids = [r[0] for r in await conn.fetch(
            "SELECT entity_id FROM entity WHERE embedding IS NOT NULL ORDER BY entity_id")]
        assert len(ids) == 10  # embedded in this order, one batch: the i-th got the i-th rotation
        made = embedder()
        vectors = made.embed_array(ids).tolist() if isinstance(made, _TieArrays) else await made.embed(ids)
        for entity_id, vector in zip(ids, vectors, strict=True):
            text = "[" + ",".join(repr(float(x)) for x in vector) + "]"
            assert await conn.fetchval(
                f"SELECT embedding IS NOT DISTINCT FROM $2::{column} FROM entity WHERE entity_id = $1", entity_id, text
            ), (entity_id, text)
    finally:
        await conn.close()


class _ShortVectors(_TieVectors):
    """Promises 12 components, gives 11."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [vector[:-1] for vector in await super().embed(texts)]


async def test_vectors_of_the_wrong_dimension_load_nothing(scratch_dsn: str, tmp_path: Path) -> None:
    """An embedder that breaks its promise fails the load, which then leaves nothing behind."""
    from bfsql_postgres.schema import create_schema

    conn = await asyncpg.connect(scratch_dsn)
    try:
        await create_schema(conn)
    finally:
        await conn.close()
    with pytest.raises(ValueError, match="'ties-12' returned vectors of the wrong number or dimension"):
        await load_postgres(scratch_dsn, [write_standard_bundle(tmp_path)], embedder=_ShortVectors())
    state = await snapshot(scratch_dsn)
    assert state["entity"] == [] and state["relationship"] == [] and state["meta"] == []


