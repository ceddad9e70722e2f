"""What the conformance suite does not cover: safety, round trips, start-up errors, search details, vectors."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable
from pathlib import Path

import asyncpg
import pytest
from pg_variants import build_evidence_table_variant, embed_names

import bfsql_postgres.backend
from bfsql import (
    Edge,
    EmbedderMismatch,
    Graph,
    HashingEmbedder,
    NodeInfo,
    ServerSettings,
    StoreTimeout,
    TraversalLimits,
    bfs_query,
    hookimpl,
    path_query,
    search_entities,
)
from bfsql.server import AnswerBudget
from bfsql.testing.standard_graph import (
    ASPIRIN,
    EXPECTED_ENTITY_TYPE_COUNTS,
    EXPECTED_PREDICATE_COUNTS,
    GASTRIC,
    MDM2,
    MERGED,
    STANDARD_IDS,
    TP53,
    standard_records,
    write_standard_bundle,
)
from bfsql_postgres import PostgresBackend, PostgresConfig, PostgresStoreError, queries
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
    assert (await standard_backend.get_nodes([TP53]))[TP53].entity_type == "Gene"


async def test_statement_timeout_cancels_and_says_what_to_do(standard_dsn: str) -> None:
    backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn, statement_timeout=0.25))
    try:
        assert await backend.pool.fetchval("SHOW statement_timeout") == "250ms"
        # StoreTimeout: a walk in the store that ends so is walked again with fewer hops (bfsql.engine.traverse).
        with pytest.raises(StoreTimeout, match=r"statement timeout \(0.25s\).*--statement-timeout"):
            await backend._fetch("SELECT pg_sleep(3)")
        assert await backend.entity_types()  # the pool survives a cancelled statement
    finally:
        await backend.aclose()


class StatementLog:
    """An asyncpg query logger keeping the statements the backend sends (not asyncpg's type introspection)."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def __call__(self, record: object) -> None:
        query = getattr(record, "query", "")
        if "pg_catalog" not in query:
            self.statements.append(query)

    async def opened(self, config: PostgresConfig) -> PostgresBackend:
        """A backend logging here, once it has read the vectors' codes (in the background from its start)."""
        backend = await PostgresBackend.create(config, on_query=self)
        if backend.layout.vector_codes:
            await backend._vector_codes()
        return backend

    async def after(self, call: Awaitable[object]) -> list[str]:
        """The statements sent while ``call`` ran."""
        self.statements.clear()
        await call
        await asyncio.sleep(0.05)  # query loggers run as callbacks on the loop
        return list(self.statements)


async def test_each_primitive_is_one_statement(standard_dsn: str) -> None:
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        ids = [*STANDARD_IDS, MERGED, "NOPE:unknown"]
        edges = [Edge(TP53, "REGULATES", MDM2)] * 3 + [Edge(ASPIRIN, "TREATS", GASTRIC)]
        calls = [
            backend.hop(ids),
            backend.get_nodes(ids),
            backend.metadata_for_nodes(ids),
            backend.metadata_for_edges(edges),
            backend.provenance_for_edges(edges),
            backend.search_entities("p53"),
        ]
        for call in calls:
            assert len(await log.after(call)) == 1, log.statements
    finally:
        await backend.aclose()


async def test_a_traversal_sends_one_statement_per_hop(standard_dsn: str) -> None:
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        for hops in (1, 2, 3):
            topology = await log.after(bfs_query(Graph(backend, cache=None), [TP53], hops, topology_only=True))
            assert len(topology) == hops, f"one hop statement per hop, nothing else: {topology}"
            full = await log.after(bfs_query(Graph(backend, cache=None), [TP53], hops))
            assert len(full) == hops, f"in full mode too: the hops bring the metadata (hop memo): {full}"
            assert not any("evidence" in sql for sql in full), "a traversal never reads provenance"
        result = await bfs_query(Graph(backend, cache=None), [TP53], 2, topology_only=True)
        assert result.node_count == 9  # all but the isolated GENE:ORPHAN
    finally:
        await backend.aclose()


async def test_a_closure_from_an_id_is_one_statement_that_brings_the_names_and_metadata_shown(
    standard_dsn: str,
) -> None:
    """``@id -[p*]->``: the walk says its seed (no lookup of the entry) and the names of what it reached, so that
    nothing else is sent; asked for metadata, it brings that too (a path query's memo). The answer is the level
    walk's, metadata included."""
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        for query in (f"@{TP53} -[REGULATES, INHIBITS*]->", f"@{TP53} <-[REGULATES, INHIBITS*]-"):
            for with_metadata in (False, True):
                store = Graph(backend, plugins=[])
                await store.predicates()  # the schema, as a server's graph holds it
                sent = await log.after(path_query(store, query, with_metadata=with_metadata))
                assert len(sent) == 1 and "WITH RECURSIVE" in sent[0], [s[:80] for s in sent]
                assert "get_nodes" not in store.stats.calls
                # names alone come with the walk; metadata asked for is read from the memo in one call
                assert store.stats.calls.get("metadata_for_nodes", 0) == with_metadata
            answer = await path_query(store, query, with_metadata=True)
            level = await path_query(Graph(backend, plugins=[_LevelWalk()], cache=None), query, with_metadata=True)
            assert answer.results and all(r.entity.name and r.entity.metadata for r in answer.results)
            assert _without_time(answer) == _without_time(level)
        unknown = await path_query(Graph(backend, plugins=[]), "@NOPE:1 -[REGULATES*]->")
        assert unknown.metadata.error == "no_entry_point" and not unknown.results
    finally:
        await backend.aclose()


async def test_a_closure_past_the_small_one_budget_is_walked_level_by_level_in_the_database(
    standard_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A closure of more edges than ``CLOSURE_EDGES`` (two here) is read in vain by the plain statement and then
    walked by the level statement, with the same answer as the level walk; so is a closure from several seeds."""
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    monkeypatch.setattr(bfsql_postgres.backend, "CLOSURE_EDGES", 2)
    try:
        query = f"@{TP53} <-[REGULATES, INHIBITS*]-"
        store = Graph(backend, plugins=[])
        await store.predicates()
        sent = await log.after(path_query(store, query, with_metadata=True))
        assert len(sent) == 2 and all("WITH RECURSIVE" in s for s in sent), [s[:80] for s in sent]
        level = await path_query(Graph(backend, plugins=[_LevelWalk()], cache=None), query, with_metadata=True)
        answer = await path_query(Graph(backend, plugins=[]), query, with_metadata=True)
        assert answer.results and _without_time(answer) == _without_time(level)
        walked = await backend.closure([TP53, "GENE:MDM2"], ["REGULATES", "INHIBITS"], False, 5, 100, 10_000, None)
        alone = await backend.closure([TP53], ["REGULATES", "INHIBITS"], False, 5, 100, 10_000, None)
        assert walked is not None and alone is not None and walked.seeds is not None
        assert set(walked.seeds) == {TP53, "GENE:MDM2"} and alone.levels and walked.levels
    finally:
        await backend.aclose()


class _LevelWalk:
    """A hop wrapper that changes nothing: the graph walks level by level, and reads metadata by statement."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids):
        return (yield)


def _without_time(result):
    dumped = result.model_dump()
    dumped["metadata"].pop("execution_time_ms")
    return dumped


@pytest.mark.parametrize("count_rows", [bfsql_postgres.backend.COUNT_WALK_ROWS, 5, 0])
async def test_counts_alone_list_nothing_and_read_no_metadata(standard_dsn: str, monkeypatch, count_rows: int) -> None:
    """limit=0, walked hop by hop within COUNT_WALK_ROWS (no metadata in the hops: no memo), else in the database
    (the page cut to nothing in the statement, after the first hop found more rows than that): the counts, no
    node, no edge."""
    monkeypatch.setattr(bfsql_postgres.backend, "COUNT_WALK_ROWS", count_rows)
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        statements = await log.after(bfs_query(Graph(backend, cache=None), [TP53], 2, limit=0))
        answer = await bfs_query(Graph(backend, cache=None), [TP53], 2, limit=0)
        assert (answer.node_ids, answer.triples, answer.node_count, answer.edge_count) == ([], [], 9, 13)
        assert answer.entity_type_counts == {"Disease": 2, "Drug": 2, "Gene": 3, "Paper": 2}
        hop, walked = queries.budgeted_hop_sql(backend.layout), backend._traverse_sql.get(2)
        # TP53's 2 hops meet 8 and then 12 rows: within the default, past 5 at the first hop, none tried with 0
        expected = [hop, hop] if count_rows > 20 else [hop, walked] if count_rows else [walked]
        assert statements == expected, statements
    finally:
        await backend.aclose()


async def test_statistics_are_counted_in_one_statement(standard_dsn: str) -> None:
    """Below exact_statistics_rows: the table's size, then one statement of GROUP BYs (the conformance suite
    checks the numbers)."""
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        statements = await log.after(backend.statistics())
        assert statements == [queries.RELATIONSHIPS_SIZE_SQL, queries.exact_statistics_sql(backend.layout)]
    finally:
        await backend.aclose()


async def test_statistics_above_the_bound_are_the_planners_estimates(standard_dsn: str) -> None:
    """Above exact_statistics_rows the counts come from pg_stats (after ANALYZE), marked as estimates: the
    graph's types and predicates (the standard graph's tables are small enough for every value to be common)."""
    conn = await asyncpg.connect(standard_dsn)
    try:
        await conn.execute("ANALYZE entity; ANALYZE relationship")
    finally:
        await conn.close()
    backend = await PostgresBackend.create(PostgresConfig(dsn=standard_dsn))
    backend.exact_statistics_rows = 0
    try:
        estimated = await backend.statistics()
        assert estimated is not None and not estimated.exact
        assert estimated.entity_type_counts is not None and estimated.predicate_counts is not None
        assert set(estimated.entity_type_counts) == set(EXPECTED_ENTITY_TYPE_COUNTS), estimated
        assert set(estimated.predicate_counts) <= set(EXPECTED_PREDICATE_COUNTS), estimated
        assert all(count > 0 for count in estimated.entity_type_counts.values()), estimated
        assert all(hub.degree > 0 and hub.id != MERGED for hub in estimated.hubs or []), estimated
    finally:
        await backend.aclose()


@pytest.mark.parametrize("paged", [False, True], ids=["listed whole", "paged"])
async def test_a_full_traversal_takes_its_metadata_from_its_hops(standard_dsn: str, paged: bool) -> None:
    """A full answer's metadata comes with its hops (no statement of its own), listed whole or paged
    (the walk hop by hop within a row budget), and equals what the metadata primitives answer."""
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    room = AnswerBudget(ServerSettings().max_tokens) if paged else None
    try:
        statements = await log.after(bfs_query(Graph(backend, cache=None), [TP53], 2, room=room))
        answer = await bfs_query(Graph(backend, cache=None), [TP53], 2, room=room)
        hop = queries.budgeted_hop_sql if paged else queries.hop_sql
        assert statements == [hop(backend.layout, metadata=True)] * 2, statements
        assert answer.node_metadata and answer.edge_metadata
        assert answer.node_metadata == await backend.metadata_for_nodes(list(answer.node_metadata))
        edges = list(answer.edge_metadata)
        assert answer.edge_metadata == await backend.metadata_for_edges([Edge(*e) for e in edges])
    finally:
        await backend.aclose()


async def test_a_hop_answers_the_asked_entities_in_its_one_statement(standard_dsn: str) -> None:
    """hop answers the type and name of the ids it is asked for in its one statement, so fetching nodes never
    waits for a hop in flight."""
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=standard_dsn))
    try:
        ids = [TP53, MDM2, MERGED, "NOPE:unknown"]
        nodes = await backend.get_nodes(ids)
        answered: dict = {}

        async def hop() -> None:
            answered.update(await backend.hop(ids))

        assert len(await log.after(hop())) == 1
        assert {i: n.node for i, n in answered.items()} == nodes and set(nodes) == {TP53, MDM2}
    finally:
        await backend.aclose()


async def test_a_hop_joins_its_ends_to_its_edges_whatever_order_its_rows_come_in(standard_backend: PostgresBackend
                                                                                  ) -> None:
    """The hop statement sends its entity rows first, and the backend joins them to the edge rows as those come;
    SQL does not promise that order, so rows in any order answer the same."""
    ids = [TP53, MDM2, MERGED, "NOPE:unknown"]
    rows = await standard_backend.pool.fetch(standard_backend._hop_sql[False], ids)
    entity_rows = [r for r in rows if r[0] is None]
    edge_rows = [r for r in rows if r[0] is not None]
    assert rows[: len(entity_rows)] == entity_rows and edge_rows  # as sent: every entity row first

    def joined(rows: list) -> tuple[dict, int]:  # each node's edges as a set: their order follows the rows'
        found, edges = bfsql_postgres.backend._neighbourhoods(ids, rows)
        return {i: (n.node, set(n.edges)) for i, n in found.items()}, edges

    answer = joined(rows)
    assert answer[1] == len(edge_rows) and set(answer[0]) == {TP53, MDM2}
    assert any(e[3] is not None for _, edges in answer[0].values() for e in edges)  # the ends were joined
    for shuffled in (edge_rows + entity_rows, edge_rows[:1] + entity_rows + edge_rows[1:], rows[::-1]):
        assert joined(shuffled) == answer

async def test_edge_metadata_and_provenance_answer_only_the_asked_edges(standard_backend: PostgresBackend) -> None:
    """Only the asked edges come back, not others between the same ends with the same predicates."""
    asked = [Edge(TP53, "REGULATES", MDM2), Edge(MDM2, "INHIBITS", TP53)]  # MDM2 REGULATES MDM2 is among their ends
    assert sorted(await standard_backend.metadata_for_edges(asked)) == sorted(asked)
    assert set(await standard_backend.provenance_for_edges(asked)) <= set(asked)


async def test_metadata_never_carries_embeddings(standard_backend: PostgresBackend) -> None:
    assert standard_backend.layout.vector_dimension == 512
    for metadata in (await standard_backend.metadata_for_nodes(list(STANDARD_IDS))).values():
        assert "embedding" not in metadata
        assert not any(isinstance(v, list) and len(v) > 64 for v in metadata.values())


@pytest.mark.parametrize("left_out_by", ["backend", "statements"])
async def test_edges_and_metadata_of_merged_entities_are_invisible(
    standard_backend: PostgresBackend, left_out_by: str
) -> None:
    assert standard_backend.layout.merged_ids == {MERGED}
    backend = standard_backend
    if left_out_by == "statements":  # as in a store with more merged entities than the backend reads
        layout = dataclasses.replace(standard_backend.layout, merged_ids=None)
        backend = PostgresBackend(standard_backend.pool, layout, statement_timeout=standard_backend.statement_timeout)
        assert "merged" in backend._edge_metadata_sql
    merged_edge, kept = Edge(MERGED, "INTERACTS_WITH", MDM2), Edge(TP53, "REGULATES", MDM2)
    assert list(await backend.metadata_for_edges([merged_edge, kept])) == [kept]
    assert await backend.provenance_for_edges([merged_edge]) == {}
    assert await backend.predicates() == await standard_backend.predicates()
    assert MERGED not in await backend.get_nodes([MERGED, TP53])
    hop = await backend.hop([MDM2, MERGED])
    assert MERGED not in hop and all(row[:3] != merged_edge for row in hop[MDM2].edges)


async def test_a_store_without_merged_entities_is_asked_no_status_condition(scratch_dsn: str) -> None:
    records = [
        r for r in standard_records()
        if MERGED not in (getattr(r, "id", None), getattr(r, "subject", None), getattr(r, "object", None))
    ]
    await build_evidence_table_variant(scratch_dsn, records)
    log = StatementLog()
    backend = await log.opened(PostgresConfig(dsn=scratch_dsn))
    try:
        assert not backend.layout.merged
        sent = await log.after(bfs_query(Graph(backend, cache=None), [TP53], 2))
        assert sent and not any("merged" in sql for sql in sent), sent
        assert Edge(TP53, "REGULATES", MDM2) in {Edge(*row[:3]) for row in (await backend.hop([TP53]))[TP53].edges}
    finally:
        await backend.aclose()


VOCABULARY_BUNDLE = [
    {"kind": "entity", "id": "V:a", "entity_type": "Gene", "name": "a"},
    {"kind": "entity", "id": "V:b", "entity_type": "Disease", "name": "b"},
    {"kind": "entity", "id": "V:c", "entity_type": "Gene", "name": "c"},
    {"kind": "entity", "id": "V:old", "entity_type": "Ghost", "name": "old", "status": "merged"},
    {"kind": "relationship", "subject": "V:a", "predicate": "causes", "object": "V:b"},
    {"kind": "relationship", "subject": "V:c", "predicate": "causes", "object": "V:b"},
    {"kind": "relationship", "subject": "V:c", "predicate": "binds", "object": "V:a"},
    {"kind": "relationship", "subject": "V:old", "predicate": "haunts", "object": "V:a"},
    {"kind": "relationship", "subject": "V:b", "predicate": "zapped_by", "object": "V:old"},
]


@pytest.mark.parametrize("merged_ids", ["read", "probed"])
async def test_types_and_predicates_are_listed_by_skipping_through_their_indexes(
    scratch_dsn: str, tmp_path: Path, merged_ids: str
) -> None:
    """The loader's indexes lead with the type and the predicate: start-up lists them a probe a value (a DISTINCT
    over R-MAT 23's relationships took 5.2 s), and hides those only merged entities have, as the scan does."""
    bundle = write_bundle(tmp_path / "vocabulary.jsonl", [json.dumps(row) for row in VOCABULARY_BUNDLE])
    await load_postgres(scratch_dsn, [bundle], embedder="none")
    opened = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    try:
        layout = opened.layout
        assert layout.types_indexed and layout.predicates_indexed
        if merged_ids == "probed":
            layout = dataclasses.replace(layout, merged_ids=None)
        skipping = PostgresBackend(opened.pool, layout, statement_timeout=opened.statement_timeout)
        scanning = PostgresBackend(
            opened.pool, dataclasses.replace(layout, types_indexed=False, predicates_indexed=False),
            statement_timeout=opened.statement_timeout,
        )
        assert "RECURSIVE" in skipping._predicates_sql and "RECURSIVE" not in scanning._predicates_sql
        for backend in (skipping, scanning):
            assert await backend.entity_types() == ["Disease", "Gene"]
            assert await backend.predicates() == ["binds", "causes"]
        async with opened.pool.acquire() as conn:
            # as for big tables (these few rows are read and sorted faster)
            await conn.execute("SET enable_seqscan = off; SET enable_sort = off")
            plans = ["\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql))
                     for sql in (skipping._entity_types_sql, skipping._predicates_sql)]
            await conn.execute("RESET enable_seqscan; RESET enable_sort")
        assert "entity_type_idx" in plans[0] and "relationship_predicate_idx" in plans[1], plans
    finally:
        await opened.aclose()


@pytest.mark.parametrize("index", [None, "(predicate COLLATE \"C\")", "(predicate text_pattern_ops)"])
async def test_a_store_without_those_indexes_lists_its_types_and_predicates_by_reading_them(
    scratch_dsn: str, index: str | None
) -> None:
    """A schema of another tool (primary keys only), or an index in another order than the column's, which
    ``ORDER BY predicate`` could not read: every row is read, not once a value."""
    await build_evidence_table_variant(scratch_dsn, standard_records())
    if index is not None:
        conn = await asyncpg.connect(scratch_dsn)
        try:
            await conn.execute(f"CREATE INDEX ON relationship {index}")
        finally:
            await conn.close()
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    try:
        assert not backend.layout.types_indexed and not backend.layout.predicates_indexed
        assert await backend.predicates() == sorted(EXPECTED_PREDICATE_COUNTS)
        assert await backend.entity_types() == sorted(EXPECTED_ENTITY_TYPE_COUNTS)
    finally:
        await backend.aclose()


# --- start-up errors -------------------------------------------------------------


async def test_ids_and_types_with_a_nul_character_name_nothing(standard_backend: PostgresBackend) -> None:
    """PostgreSQL text cannot hold NUL: such an id is unknown, not a backend failure (found by the corpus)."""
    nul = "GENE:TP53\x00"
    with pytest.raises(KeyError):
        await Graph(standard_backend, cache=None).get_node(nul)
    assert await standard_backend.get_nodes([nul, TP53]) == {TP53: NodeInfo("Gene", "TP53")}
    assert await standard_backend.hop([nul]) == {}
    assert await standard_backend.metadata_for_nodes([nul]) == {}
    assert await standard_backend.metadata_for_edges([Edge(nul, "REGULATES", MDM2)]) == {}
    assert await standard_backend.provenance_for_edges([Edge(nul, "REGULATES", MDM2)]) == {}
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
        ("ALTER TABLE bundle_evidence DROP COLUMN section", r"bundle_evidence exists .* but lacks columns"),
    ],
)
async def test_schema_defects_are_named(scratch_dsn: str, alteration: str, message: str) -> None:
    await _schema_then(scratch_dsn, alteration)
    with pytest.raises(PostgresStoreError, match=message):
        await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))


async def test_a_store_without_evidence_tables_is_served_without_provenance(scratch_dsn: str) -> None:
    await _schema_then(scratch_dsn, "DROP TABLE bundle_evidence")
    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn))
    try:
        assert not backend.layout.provenance and not backend.capabilities.provenance
        assert await backend.provenance_for_edges([Edge(TP53, "REGULATES", MDM2)]) == {}
    finally:
        await backend.aclose()


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


async def test_vectors_are_halfvec_and_searched_through_the_codes_else_through_an_hnsw_index(
    standard_backend: PostgresBackend, standard_dsn: str
) -> None:
    """The loader stores halfvec (2 bytes a component) and the vectors' codes, which the search reads; a store
    without current codes and with an older bfsql's HNSW index is searched through the index, by its expression."""
    layout = standard_backend.layout
    assert (layout.vector_type, layout.vector_dimension, layout.vector_codes, layout.vector_index) == (
        "halfvec", 512, True, False)
    (vector,) = await HashingEmbedder().embed(["TP53"])
    genes = await standard_backend.vector_search(vector, ["Gene"], 5)
    assert genes[0].id == TP53 and all(h.entity_type == "Gene" for h in genes)
    saved = await standard_backend._vector_codes()
    assert saved is not None and saved.index.sets  # hashing's counts: bits that say which components are not 0
    indexed = dataclasses.replace(layout, vector_codes=False, vector_index=True)
    literal = "[" + ",".join(repr(x) for x in vector) + "]"
    writer = await asyncpg.connect(standard_dsn)
    try:
        async with writer.transaction():  # the index goes with the transaction, rolled back below
            await writer.execute("CREATE INDEX entity_embedding_hnsw_512 ON entity "
                                 "USING hnsw ((embedding::halfvec(512)) halfvec_cosine_ops)")
            await writer.execute("SET LOCAL enable_seqscan = off")  # a ten-row table: make the index path show
            plan = "\n".join(r[0] for r in await writer.fetch(
                "EXPLAIN " + queries.vector_search_sql(indexed), literal, None, 5))
            raise _Rollback
    except _Rollback:
        pass
    finally:
        await writer.close()
    assert "entity_embedding_hnsw_512" in plan, plan
    async with standard_backend.pool.acquire() as conn:
        assert await conn.fetchval("SHOW hnsw.iterative_scan") == "relaxed_order"


class _Rollback(Exception):
    """Leaves a transaction, undone."""


async def test_reembedding_saves_the_codes_of_the_new_vectors(scratch_dsn: str, tmp_path: Path) -> None:
    bundle = write_standard_bundle(tmp_path)
    await load_postgres(scratch_dsn, [bundle], embedder="hashing")
    small = HashingEmbedder(dimension=64)
    await load_postgres(scratch_dsn, [], embedder=small)
    conn = await asyncpg.connect(scratch_dsn)
    try:
        stamp = await conn.fetchval("SELECT value FROM bfsql_meta WHERE key = 'vector_codes'")
        assert stamp.split(":")[:4] == [str(await conn.fetchval("SELECT count(*) FROM bfsql_vector_row")), "1",
                                        "sets", "64"]
        await load_postgres(scratch_dsn, [], embedder="none")
        assert await conn.fetchval("SELECT count(*) FROM bfsql_meta WHERE key = 'vector_codes'") == 0
        assert await conn.fetchval("SELECT count(*) FROM bfsql_vector_part") == 0
    finally:
        await conn.close()


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


async def test_search_returns_at_most_limit(search_backend: PostgresBackend) -> None:
    hits = await _ids(search_backend, "gene")
    assert len(hits) == 20 and hits[:3] == ["G:00", "G:01", "G:02"]
    assert [s.id for s in await search_backend.search_entities("gene", None, 25)] == [f"G:{i:02d}" for i in range(25)]
    assert [s.id for s in await search_backend.search_entities("gene", None, 2)] == ["G:00", "G:01"]
    assert await search_backend.search_entities("gene", None, 0) == []


async def test_a_long_search_costs_what_a_name_costs(search_backend: PostgresBackend, scratch_dsn: str) -> None:
    """19.7: whatever the query's length, PostgreSQL gets at most 200 characters of it, and trigram
    similarity (whose index scan grows with the query's trigrams) only up to 64; 32 searches of
    1,000 characters at once all answer through bfsql's search within a 2 s statement timeout."""
    assert "% $1" not in queries.search_sql(search_backend.layout, synonym_prefilter=True, fuzzy=False)
    assert "% $1" in queries.search_sql(search_backend.layout, synonym_prefilter=True)
    sent: list[tuple[str, object]] = []

    def record(query: object) -> None:
        args = getattr(query, "args", ())
        if args and "candidates" in getattr(query, "query", ""):
            sent.append((getattr(query, "query", ""), args[0]))

    backend = await PostgresBackend.create(PostgresConfig(dsn=scratch_dsn, statement_timeout=2), on_query=record)
    try:
        graph = Graph(backend, cache=None)
        long = ("Marfan syndrome with " + " ".join(f"feature{i}" for i in range(200)))[:1000]
        answers = await asyncio.gather(*(search_entities(graph, long) for _ in range(32)))
        assert all(a == [] for a in answers)
        hits = await backend.search_entities("Marfan syndrome " + "x" * 900)  # called directly: cut to 200 too
        assert hits == []
        await asyncio.sleep(0.05)  # query loggers run as callbacks on the loop
        assert len(sent) == 33 and all(len(text) <= 200 and "% $1" not in sql for sql, text in sent)
        assert [h.id for h in await search_entities(graph, "Marfan sindrome")][:1] == ["D:marfan"]  # short: fuzzy
    finally:
        await backend.aclose()


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


async def test_a_hop_reads_relationships_from_the_indexes_the_schema_creates(standard_backend: PostgresBackend) -> None:
    """init-schema and load create the indexes the hop statement scans: outgoing edges from the primary key,
    incoming ones from the covering object index, the other ends from entity's primary key."""
    async with standard_backend.pool.acquire() as conn:
        await conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + standard_backend._hop_sql[False], [TP53, MDM2]))
        await conn.execute("RESET enable_seqscan")
    assert "Index Only Scan using relationship_pkey" in plan, plan
    assert "Index Only Scan using relationship_object_idx" in plan, plan
    assert "entity_pkey" in plan and "Seq Scan" not in plan, plan


async def test_budget_cut_traversal_on_postgres(standard_backend: PostgresBackend) -> None:
    result = await bfs_query(
        Graph(standard_backend), [TP53], 2, limits=TraversalLimits(max_edges_per_node=2), topology_only=True
    )
    assert result.truncated and result.truncated[0].reason == "max_edges_per_node"
