"""What the conformance suite does not cover: safety, round trips, start-up errors, search details, vectors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import pytest
from pg_variants import build_evidence_table_variant, embed_names

from bfsql import BackendFailure, Edge, EmbedderMismatch, Graph, HashingEmbedder, TraversalBudget, bfs_query
from bfsql.testing.standard_graph import MDM2, MERGED, STANDARD_IDS, TP53, standard_records
from bfsql_postgres import PostgresBackend, PostgresConfig, PostgresStoreError
from bfsql_postgres.loader import load_postgres
from bfsql_testsupport.services import free_port

from conftest import Server, write_bundle

# --- read-only, timeouts, round trips ------------------------------------------


async def test_every_connection_is_read_only(standard_backend: PostgresBackend) -> None:
    pool = standard_backend.pool
    assert await pool.fetchval("SHOW default_transaction_read_only") == "on"
    with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
        await pool.execute("INSERT INTO entity (entity_id, entity_type) VALUES ('X:1', 'Gene')")
    with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
        await pool.execute("UPDATE entity SET name = 'changed'")
    with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
        await pool.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    assert (await standard_backend.get_node(TP53)).entity_type == "Gene"


async def test_statement_timeout_cancels_and_says_what_to_do(standard_dsn: str) -> None:
    backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn, statement_timeout=0.25))
    try:
        assert await backend.pool.fetchval("SHOW statement_timeout") == "250ms"
        with pytest.raises(BackendFailure, match=r"statement timeout \(0.25s\).*--statement-timeout"):
            await backend._fetch("SELECT pg_sleep(3)")
        assert await backend.entity_types()  # the pool survives a cancelled statement
    finally:
        await backend.aclose()


async def test_each_batch_primitive_is_one_statement(standard_dsn: str) -> None:
    statements: list[str] = []

    def observe(record: object) -> None:
        query = getattr(record, "query", "")
        if "pg_catalog" not in query:  # asyncpg's own type introspection
            statements.append(query)

    backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn), on_query=observe)
    try:
        ids = [*STANDARD_IDS, MERGED, "NOPE:unknown"]
        edges = [Edge(subject=TP53, predicate="REGULATES", object=MDM2)] * 3
        calls = [
            lambda: backend.edges_from_many(ids),
            lambda: backend.edges_to_many(ids),
            lambda: backend.get_nodes(ids),
            lambda: backend.metadata_for_nodes(ids),
            lambda: backend.metadata_for_edges(edges),
            lambda: backend.search_entities("p53"),
        ]
        for call in calls:
            statements.clear()
            await call()
            await asyncio.sleep(0.05)  # query loggers run as callbacks on the loop
            assert len(statements) == 1, statements

        statements.clear()
        result = await bfs_query(Graph(backend, cache=None), [TP53], 2, topology_only=True)
        await asyncio.sleep(0.05)
        assert result.node_count == 9  # all but the isolated GENE:ORPHAN
        assert len(statements) == 1 + 3 * 2, "seeds' identities, then per hop: out-edges, in-edges, identities"
    finally:
        await backend.aclose()


async def test_metadata_never_carries_embeddings(standard_backend: PostgresBackend) -> None:
    assert standard_backend.layout.vector_dimension == 512
    for metadata in (await standard_backend.metadata_for_nodes(list(STANDARD_IDS))).values():
        assert "embedding" not in metadata
        assert not any(isinstance(v, list) and len(v) > 64 for v in metadata.values())


async def test_edges_and_metadata_of_merged_entities_are_invisible(standard_backend: PostgresBackend) -> None:
    merged_edge = Edge(subject=MERGED, predicate="INTERACTS_WITH", object=MDM2)
    assert await standard_backend.metadata_for_edge(merged_edge) == {}
    assert MERGED not in await standard_backend.get_nodes([MERGED, TP53])
    assert all(merged_edge not in edges for edges in (await standard_backend.edges_to_many([MDM2])).values())


# --- start-up errors -------------------------------------------------------------


async def test_ids_and_types_with_a_nul_character_name_nothing(standard_backend: PostgresBackend) -> None:
    """PostgreSQL text cannot hold NUL: such an id is unknown, not a backend failure (found by the corpus)."""
    nul = "GENE:TP53\x00"
    with pytest.raises(KeyError):
        await standard_backend.get_node(nul)
    assert await standard_backend.get_nodes([nul, TP53]) == {TP53: await standard_backend.get_node(TP53)}
    assert await standard_backend.edges_from_many([nul]) == {}
    assert await standard_backend.metadata_for_nodes([nul]) == {}
    assert await standard_backend.metadata_for_edge(Edge(subject=nul, predicate="REGULATES", object=MDM2)) == {}
    assert await standard_backend.search_entities("p53", node_types=["Gene\x00"]) == []
    assert [s.id for s in await standard_backend.search_entities("p53", node_types=["Gene\x00", "Gene"])][:1] == [
        TP53
    ]


async def test_no_dsn_says_where_to_give_one() -> None:
    with pytest.raises(PostgresStoreError, match=r"--dsn.*DATABASE_URL"):
        await PostgresBackend.create(PostgresConfig())


async def test_unreachable_server_is_named_without_the_password() -> None:
    dsn = f"postgresql://someone:s3cret@127.0.0.1:{free_port()}/kg"
    with pytest.raises(PostgresStoreError, match=r"Cannot connect to PostgreSQL at 127\.0\.0\.1:\d+/kg") as info:
        await PostgresBackend.create(PostgresConfig(dsn=dsn, connect_timeout=5))
    assert "s3cret" not in str(info.value)


async def test_unknown_database_is_named(pg_server: Server) -> None:
    with pytest.raises(PostgresStoreError, match=r"refused the connection.*no_such_db"):
        await PostgresBackend.create(PostgresConfig(dsn=pg_server.dsn("no_such_db")))


async def test_empty_database_names_the_missing_tables(scratch_dsn: str) -> None:
    with pytest.raises(PostgresStoreError, match=r"entity, relationship not found.*bfsql postgres init-schema"):
        await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))


async def _schema_then(dsn: str, *statements: str) -> None:
    await load_postgres(dsn, [], embedder="none")
    conn = await asyncpg.connect(dsn)
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("alteration", "message"),
    [
        ("ALTER TABLE entity DROP COLUMN synonyms", r"entity lacks column\(s\) synonyms"),
        ("ALTER TABLE relationship DROP COLUMN source_documents", r"relationship lacks column\(s\) source_documents"),
        ("ALTER TABLE entity ALTER COLUMN properties TYPE text", r"entity\.properties has type text.*ALTER TABLE"),
        ("DROP TABLE bundle_evidence", r"No evidence table.*bundle_evidence.*evidence"),
        ("ALTER TABLE bundle_evidence DROP COLUMN section", r"bundle_evidence exists but lacks columns"),
    ],
)
async def test_schema_defects_are_named(scratch_dsn: str, alteration: str, message: str) -> None:
    await _schema_then(scratch_dsn, alteration)
    with pytest.raises(PostgresStoreError, match=message):
        await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))


async def test_stored_embedder_without_pgvector_is_refused(scratch_dsn: str) -> None:
    await load_postgres(scratch_dsn, [], vector=False)
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    assert not backend.capabilities.vector_search and not backend.layout.vector
    await backend.aclose()
    with pytest.raises(PostgresStoreError, match=r"--stored-embedder hashing.*no embedding column"):
        await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn, stored_embedder="hashing"))


# --- vectors -----------------------------------------------------------------------


async def test_bind_embedder_refuses_another_embedders_vectors(standard_backend: PostgresBackend) -> None:
    assert standard_backend.layout.vector_embedder == "hashing"
    await standard_backend.bind_embedder(HashingEmbedder())
    with pytest.raises(EmbedderMismatch, match=r"'hashing' \(512 dimensions\).*'hashing-64' \(64"):
        await standard_backend.bind_embedder(HashingEmbedder(dimension=64))


async def test_vectors_written_by_another_tool(scratch_dsn: str) -> None:
    """A kgraph database whose vectors bfsql did not make: the dimension is checked, the name configured."""
    await build_evidence_table_variant(scratch_dsn, standard_records())
    embedder = HashingEmbedder(dimension=64)
    await embed_names(scratch_dsn, embedder)
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn, stored_embedder="hashing-64"))
    try:
        assert backend.capabilities.vector_search
        await backend.bind_embedder(embedder)
        (vector,) = await embedder.embed(["Nutlin-3"])
        hits = await backend.vector_search(vector, None, 3)
        assert hits[0].id == "DRUG:nutlin-3" and hits[0].score == pytest.approx(1.0)
        assert next(h.id for h in await backend.vector_search(vector, ["Disease"], 3)).startswith("DISEASE:")
        with pytest.raises(EmbedderMismatch):
            await backend.bind_embedder(HashingEmbedder())
    finally:
        await backend.aclose()


async def test_vector_search_excludes_merged_entities(standard_backend: PostgresBackend) -> None:
    (vector,) = await HashingEmbedder().embed(["TP53"])
    hits = await standard_backend.vector_search(vector, None, 20)
    assert hits[0].id == TP53 and MERGED not in [h.id for h in hits]


# --- search ---------------------------------------------------------------------

SEARCH_BUNDLE = [
    {"kind": "entity", "id": "X:pct", "entity_type": "Thing", "name": "100% cotton"},
    {"kind": "entity", "id": "X:ab", "entity_type": "Thing", "name": "a_b"},
    {"kind": "entity", "id": "X:axb", "entity_type": "Thing", "name": "axb"},
    {"kind": "entity", "id": "X:path", "entity_type": "Thing", "name": "C:\\temp\\file"},
    {"kind": "entity", "id": "X:quote", "entity_type": "Thing", "name": "Quoted",
     "synonyms": ['he said "hi"']},
    {"kind": "entity", "id": "D:marfan", "entity_type": "Disease", "name": "Marfan syndrome", "synonyms": ["MFS"]},
    {"kind": "entity", "id": "D:marfanoid", "entity_type": "Phenotype", "name": "Marfanoid habitus"},
    {"kind": "entity", "id": "D:loeys", "entity_type": "Disease", "name": "Loeys-Dietz syndrome",
     "synonyms": ["Marfan-like disorder"]},
    {"kind": "entity", "id": "D:old-marfan", "entity_type": "Disease", "name": "Marfan syndrome", "status": "merged"},
    *({"kind": "entity", "id": f"G:{i:02d}", "entity_type": "Gene", "name": f"gene {i}"} for i in range(30)),
]


@pytest.fixture
async def search_backend(scratch_dsn: str, tmp_path: Path) -> PostgresBackend:
    bundle = write_bundle(tmp_path / "search.jsonl", [json.dumps(row) for row in SEARCH_BUNDLE])
    await load_postgres(scratch_dsn, [bundle], embedder="none")
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    yield backend
    await backend.aclose()


async def _ids(backend: PostgresBackend, query: str, node_types: list[str] | None = None) -> list[str]:
    return [s.id for s in await backend.search_entities(query, node_types)]


async def test_search_escapes_like_wildcards(search_backend: PostgresBackend) -> None:
    assert search_backend.layout.trigram
    assert await _ids(search_backend, "%") == ["X:pct"]
    assert await _ids(search_backend, "a_b") == ["X:ab"]
    assert await _ids(search_backend, "_") == ["X:ab"]
    assert await _ids(search_backend, "\\temp\\") == ["X:path"]


async def test_search_ranks_exact_then_prefix_then_substring(search_backend: PostgresBackend) -> None:
    assert (await _ids(search_backend, "marfan"))[:3] == ["D:marfan", "D:marfanoid", "D:loeys"]
    assert (await _ids(search_backend, "MFS"))[:1] == ["D:marfan"]
    assert (await _ids(search_backend, "marfan syndrome"))[:1] == ["D:marfan"]


async def test_search_tolerates_typos_with_trigrams(search_backend: PostgresBackend) -> None:
    assert (await _ids(search_backend, "Marfan sindrome"))[:1] == ["D:marfan"]
    assert await _ids(search_backend, "zzxq-no-such-entity-42") == []


async def test_search_filters_types_and_hides_merged(search_backend: PostgresBackend) -> None:
    assert await _ids(search_backend, "marfan", ["Phenotype"]) == ["D:marfanoid"]
    assert await _ids(search_backend, "marfan", []) == []
    assert "D:old-marfan" not in await _ids(search_backend, "Marfan syndrome")


async def test_search_handles_quotes_nul_and_blank_queries(search_backend: PostgresBackend) -> None:
    assert await _ids(search_backend, 'said "hi"') == ["X:quote"]
    assert await _ids(search_backend, "mar\x00fan") == await _ids(search_backend, "marfan")
    assert await _ids(search_backend, "   ") == []


async def test_search_returns_at_most_twenty(search_backend: PostgresBackend) -> None:
    hits = await _ids(search_backend, "gene")
    assert len(hits) == 20 and hits[:3] == ["G:00", "G:01", "G:02"]


async def test_search_uses_the_trigram_indexes(search_backend: PostgresBackend) -> None:
    """With the loader's indexes, a substring search need not scan the entity table."""
    async with search_backend.pool.acquire() as conn:
        await conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0] for r in await conn.fetch(
                "EXPLAIN SELECT 1 FROM entity e WHERE e.name ILIKE $1::text OR e.synonyms::jsonb::text ILIKE $1::text",
                "%marfan%",
            )
        )
        await conn.execute("RESET enable_seqscan")
    assert "entity_name_trgm_idx" in plan and "entity_synonyms_trgm_idx" in plan, plan


async def test_budget_cut_traversal_on_postgres(standard_backend: PostgresBackend) -> None:
    result = await bfs_query(
        Graph(standard_backend), [TP53], 2, budget=TraversalBudget(max_edges_per_node=2), topology_only=True
    )
    assert result.truncated and result.truncated[0].reason == "max_edges_per_node"
