"""Backend-specific behaviour against the real FalkorDB Bolt server."""

from __future__ import annotations

import itertools
import re

import neo4j
import pytest

from bfsql import (
    Edge,
    EntityRecord,
    Graph,
    HopEdge,
    InvalidArgument,
    NodeInfo,
    RelationshipRecord,
    TraversalLimits,
    bfs_query,
)
from bfsql.testing.standard_graph import standard_records
from bfsql_neo4j import Neo4jBackend, Neo4jSetupError

NASTY_IDS = ["O'Brien", "back\\slash", "trail\\", "x' OR 1=1 //", 'quote"d', "é😀 id", "brace}{ // id"]
VECTOR = [0.25] * 32


def facade(backend: Neo4jBackend) -> Graph:
    """The backend behind a Graph without cache or plugins: the single-id calls, derived from the primitives."""
    return Graph(backend, plugins=[], cache=None)


def nasty_records() -> list[EntityRecord | RelationshipRecord]:
    records: list[EntityRecord | RelationshipRecord] = [
        EntityRecord(id=i, entity_type="Thing", name=f"name of {i}") for i in NASTY_IDS
    ]
    records.append(
        EntityRecord(id="V", entity_type="Thing", name="Vector holder", properties={"embedding": VECTOR, "vec": VECTOR})
    )
    records += [RelationshipRecord(subject=a, predicate="Links_To", object=b) for a, b in itertools.pairwise(NASTY_IDS)]
    return records


async def test_predicates_are_lower_case_by_default_with_the_type_in_metadata(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open(predicate_case="lower", provenance=True):
        assert await backend.predicates() == [
            "associated_with",
            "inhibits",
            "interacts_with",
            "mentions",
            "regulates",
            "treats",
        ]
        graph = facade(backend)
        edge = Edge("GENE:MDM2", "inhibits", "GENE:TP53")
        assert edge in await graph.edges_from("GENE:MDM2")
        metadata = await backend.metadata_for_edges([edge])
        assert metadata[edge]["relationship_type"] == "INHIBITS"
        assert metadata[edge]["confidence"] == pytest.approx(0.97)
        assert "provenance" not in metadata[edge]
        assert len((await backend.provenance_for_edges([edge]))[edge]) == 2
        assert len((await graph.metadata_for_edge(edge))["provenance"]) == 2


async def test_entity_types_exclude_the_served_label(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open():
        assert await backend.entity_types() == ["Disease", "Drug", "Gene", "Paper"]
        assert backend.id_property == "entity_id"


async def test_quotes_and_backslashes_in_ids_and_search(falkordb_server) -> None:
    falkordb_server.use("nasty", nasty_records)
    async for backend in falkordb_server.open():
        nodes = await backend.get_nodes([*NASTY_IDS, "x' OR 'a'='a", "\\'", "'; MATCH (n) DETACH DELETE n //"])
        assert sorted(nodes) == sorted(NASTY_IDS)
        graph = facade(backend)
        for a, b in itertools.pairwise(NASTY_IDS):
            assert await graph.edges_from(a) == [Edge(a, "Links_To", b)]
            assert (await graph.metadata_for_node(a))["name"] == f"name of {a}"
        hops = await backend.hop(NASTY_IDS)
        for before, here, after in zip(NASTY_IDS, NASTY_IDS[1:], NASTY_IDS[2:], strict=False):
            assert hops[here].node == NodeInfo("Thing", f"name of {here}")
            assert sorted(hops[here].edges) == sorted(
                [
                    HopEdge(before, "Links_To", here, "Thing", f"name of {before}"),
                    HopEdge(here, "Links_To", after, "Thing", f"name of {after}"),
                ]
            )
        for query in ["O'Brien", "x' OR 1=1 //", "\\", "-(", "@name:x", "a*|b", '"', "%%x%%", "name of"]:
            assert isinstance(await backend.search_entities(query), list)
        assert [s.id for s in await backend.search_entities("O'Brien")][:1] == ["O'Brien"]
        assert sorted(await backend.get_nodes(NASTY_IDS)) == sorted(NASTY_IDS)  # the server survived all of it


async def test_values_beyond_the_bolt_buffer_do_not_crash_the_server(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open():
        many = [f"UNKNOWN:{i:06d}-{'z' * 30}" for i in range(3000)]
        assert await backend.get_nodes([*many, "GENE:TP53"]) == {"GENE:TP53": NodeInfo("Gene", "TP53")}
        with pytest.raises(KeyError):
            await facade(backend).get_node("x" * 10_000)
        assert isinstance(await backend.search_entities("p53 " * 2000), list)
        assert sorted(await backend.hop([*many, "GENE:TP53", "GENE:MDM2"])) == ["GENE:MDM2", "GENE:TP53"]


def statements_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement run in a read transaction from now on, in order."""
    statements: list[str] = []
    run = neo4j.AsyncManagedTransaction.run

    async def counted(self, query, *args, **kwargs):
        statements.append(query)
        return await run(self, query, *args, **kwargs)

    monkeypatch.setattr(neo4j.AsyncManagedTransaction, "run", counted)
    return statements


async def test_hop_is_one_statement_for_the_whole_frontier(falkordb_server, monkeypatch) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open():
        statements = statements_run(monkeypatch)
        frontier = ["GENE:TP53", "GENE:MDM2", "DRUG:aspirin", "DISEASE:LFS", "NOPE"]
        found = await backend.hop(frontier)
        assert statements == [backend.statements.hop()]
        assert found["GENE:MDM2"].node == NodeInfo("Gene", "MDM2")
        mdm2 = found["GENE:MDM2"].edges
        assert ("GENE:MDM2", "INHIBITS", "GENE:TP53", "Gene", "TP53") in mdm2  # outgoing, with the other end
        assert any(row[2] == "GENE:MDM2" and row[0] != "GENE:MDM2" for row in mdm2)  # incoming
        assert "NOPE" not in found


async def test_a_full_traversal_takes_edge_properties_with_the_hop(falkordb_server, monkeypatch) -> None:
    """No statement after the hops for edge metadata, and the same metadata as asked for afterwards."""
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open(predicate_case="lower", provenance=True):
        statements = statements_run(monkeypatch)
        seeds = ["GENE:TP53", "DRUG:aspirin"]
        answer = await bfs_query(facade(backend), seeds, 2, limits=TraversalLimits(max_nodes=1000))
        hops = [s for s in statements if "-[r]-" in s]
        assert len(hops) == 2 and all("keys(r)" in s for s in hops), (
            "one statement per hop, the relationships' properties in it"
        )
        assert backend.statements.edge_properties() not in statements, "no edge is read again after the hop"
        assert len(statements) == 3, f"two hops and the node metadata: {statements}"
        edges = list(answer.edge_metadata)
        assert edges and any(metadata.get("confidence") for metadata in answer.edge_metadata.values())
        assert await backend.metadata_for_edges(edges) == answer.edge_metadata
        assert all("provenance" not in metadata for metadata in answer.edge_metadata.values())
        statements.clear()
        await bfs_query(facade(backend), seeds, 2, topology_only=True)
        assert len(statements) == 2 and all("keys(r)" not in s for s in statements), "topology: no properties"


LONG_TYPES = [f"{'T' * 1000}{i}" for i in range(5)]


def long_type_records() -> list[EntityRecord | RelationshipRecord]:
    return [EntityRecord(id=f"LONG:{i}", entity_type=t, name=f"p53 long {i}") for i, t in enumerate(LONG_TYPES)]


async def test_an_oversized_type_filter_is_pruned_or_refused_without_crashing_the_server(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open():
        assert await backend.search_entities("p53", ["A" * 5000]) == []  # no such label: nothing sent
        gene_hits = await backend.search_entities("p53", ["Gene"])
        assert gene_hits and await backend.search_entities("p53", ["Gene", "A" * 5000]) == gene_hits
        assert await backend.search_entities("p53", ["Gene"] * 1000) == gene_hits
        assert list(await backend.get_nodes(["GENE:TP53"])) == ["GENE:TP53"]  # the server survived
    falkordb_server.use("long_types", long_type_records)
    async for backend in falkordb_server.open():
        assert [s.id for s in await backend.search_entities("p53", LONG_TYPES[:1])] == ["LONG:0"]
        with pytest.raises(InvalidArgument, match="Pass fewer or shorter node_types"):
            await backend.search_entities("p53", LONG_TYPES)
        assert sorted(await backend.get_nodes(["LONG:0", "LONG:4"])) == ["LONG:0", "LONG:4"]  # still alive


async def test_embedding_vectors_are_dropped_unless_asked_for(falkordb_server) -> None:
    falkordb_server.use("nasty", nasty_records)
    async for backend in falkordb_server.open():
        metadata = (await backend.metadata_for_nodes(["V"]))["V"]
        assert "embedding" not in metadata and "vec" not in metadata and metadata["name"] == "Vector holder"
    async for backend in falkordb_server.open(keep_vectors=True):
        metadata = (await backend.metadata_for_nodes(["V"]))["V"]
        assert metadata["vec"] == VECTOR
        assert "embedding" not in metadata  # a --drop-properties key


async def test_id_property_is_found_among_the_candidates(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open(id_candidates=["id", "uri", "entity_id"]):
        assert backend.id_property == "entity_id"


async def test_unindexed_id_property_fails_with_the_create_statement(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    with pytest.raises(Neo4jSetupError) as info:
        async for _ in falkordb_server.open(id_property="name"):
            pass
    assert "CREATE INDEX FOR (n:`Entity`) ON (n.`name`)" in str(info.value)
    with pytest.raises(Neo4jSetupError, match="None of the id properties id, uri"):
        async for _ in falkordb_server.open(id_candidates=["id", "uri"]):
            pass


async def test_missing_label_and_foreign_graph_fail_clearly(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    with pytest.raises(Neo4jSetupError, match="No node in the graph has the label 'Protein'"):
        async for _ in falkordb_server.open(node_label="Protein"):
            pass
    with pytest.raises(Neo4jSetupError, match="serves only the graph named 'falkordb'"):
        async for _ in falkordb_server.open(database="kg"):
            pass


async def test_missing_fulltext_index_fails_with_the_create_statement(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    falkordb_server.db.select_graph("falkordb").query("CALL db.idx.fulltext.drop('Entity')")
    falkordb_server.active = None  # the served copy lost its index: copy it again for the next test
    with pytest.raises(Neo4jSetupError) as info:
        async for _ in falkordb_server.open():
            pass
    assert "search_entities needs a full-text index on :Entity" in str(info.value)
    assert "CREATE FULLTEXT INDEX FOR (n:`Entity`) ON (n.`name`, n.`synonyms`)" in str(info.value)


async def test_unreachable_server_is_a_clear_failure(falkordb_server) -> None:
    config = falkordb_server.config(uri="bolt://127.0.0.1:1", query_timeout=3.0)
    with pytest.raises(Neo4jSetupError, match=re.escape("Cannot reach the Bolt server at bolt://127.0.0.1:1")):
        await Neo4jBackend.open(config)


async def test_every_connection_to_falkordb_acknowledges_answers_at_once(falkordb_server, monkeypatch) -> None:
    """FalkorDB writes an answer over 4 kB in pieces with Nagle on: each connection sets TCP_QUICKACK (quickack.py)."""
    from bfsql_neo4j import quickack

    sockets: list[object] = []
    arm = quickack._arm
    monkeypatch.setattr(quickack, "_arm", lambda bolt_socket: (sockets.append(bolt_socket), arm(bolt_socket)))
    falkordb_server.use("standard", standard_records)
    async for backend in falkordb_server.open():
        assert await backend.get_nodes(["GENE:TP53"])
        assert sockets, "no connection of the backend was armed"
        assert all(quickack.armed(bolt_socket) for bolt_socket in sockets)
