"""A real RDF data set (LUBM, one university, 100k triples) on both servers: multi-hop answers checked against
breadth-first search done here with direct SPARQL, requests per hop, search and schema."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator

import pytest
from sparql_servers import LUBM_GRAPH, RDF_TYPE, UB, SparqlServer, lubm_config, sparql_json

from bfsql import Graph, TraversalLimits, bfs_query, intersect_subgraphs
from bfsql_sparql import SparqlBackend
from bfsql_sparql.hop import ONE_QUERY_IDS

PROFESSOR = "http://www.Department0.University0.edu/FullProfessor1"
STUDENT = "http://www.Department3.University0.edu/GraduateStudent12"
BIG = TraversalLimits(max_nodes=100_000, max_edges_per_node=100_000)
CHUNK = 200


@pytest.fixture
async def lubm(server: SparqlServer) -> AsyncIterator[SparqlBackend]:
    backend = await SparqlBackend.create(lubm_config(server))
    yield backend
    await backend.aclose()


def _direct(server: SparqlServer, query: str) -> list[dict]:
    return sparql_json(server.endpoint, query, [LUBM_GRAPH])["results"]["bindings"]


def _values(iris: list[str]) -> str:
    return " ".join(f"<{iri}>" for iri in iris)


def direct_bfs(server: SparqlServer, seed: str, hops: int) -> tuple[dict[str, int], set[tuple[str, str, str]]]:
    """Distances and edges of a breadth-first search written with plain SPARQL, independent of the backend."""
    distance = {seed: 0}
    frontier = [seed]
    edges: set[tuple[str, str, str]] = set()
    for hop in range(1, hops + 1):
        found: set[tuple[str, str, str]] = set()
        for start in range(0, len(frontier), CHUNK):
            part = _values(frontier[start : start + CHUNK])
            out = _direct(server, f"SELECT ?s ?p ?o {{ VALUES ?s {{ {part} }} ?s ?p ?o FILTER(isIRI(?o)) }}")
            into = _direct(server, f"SELECT ?s ?p ?o {{ VALUES ?o {{ {part} }} ?s ?p ?o FILTER(isIRI(?s)) }}")
            found |= {(r["s"]["value"], r["p"]["value"], r["o"]["value"]) for r in out + into}
        found = {edge for edge in found if edge[1] != RDF_TYPE}
        new = sorted({end for s, _, o in found for end in (s, o)} - set(distance))
        existing: set[str] = set()
        for start in range(0, len(new), CHUNK):
            rows = _direct(
                server, f"SELECT DISTINCT ?s {{ VALUES ?s {{ {_values(new[start : start + CHUNK])} }} ?s ?p ?o }}"
            )
            existing |= {r["s"]["value"] for r in rows}
        for node in sorted(existing):
            distance[node] = hop
        edges |= found
        frontier = sorted(existing)
    return distance, {e for e in edges if e[0] in distance and e[2] in distance}


def _ub(iri: str) -> str:
    return "ub:" + iri.removeprefix(UB) if iri.startswith(UB) else iri


@pytest.mark.parametrize(("seed", "hops"), [(PROFESSOR, 2), (STUDENT, 3)])
async def test_multi_hop_bfs_equals_direct_sparql(
    server: SparqlServer, lubm: SparqlBackend, seed: str, hops: int
) -> None:
    distance, edges = direct_bfs(server, seed, hops)
    graph = Graph(lubm, cache=None)
    sent = lubm.client.requests
    started = time.perf_counter()
    result = await bfs_query(graph, [seed], hops, topology_only=True, limits=BIG)
    elapsed = time.perf_counter() - started
    requests = lubm.client.requests - sent

    assert result.node_count == len(distance) and result.edge_count == len(edges)
    assert {node.id for node in result.nodes} == set(distance)
    assert {(e.subject, e.predicate, e.object) for e in result.edges} == {(s, _ub(p), o) for s, p, o in edges}
    assert not result.truncated and not result.warnings

    # A hop of a few ids (the seed's, which also says whether it exists) is one request; a larger frontier's is
    # one request per --batch-size ids for its edges, and one per --batch-size of the distinct ends met and the
    # frontier's own ids for their identities.
    frontier_sizes = [sum(1 for d in distance.values() if d == hop) for hop in range(hops + 1)]
    batches = []
    for hop in range(hops):
        frontier = {node for node, d in distance.items() if d == hop}
        if len(frontier) <= ONE_QUERY_IDS:
            batches.append(1)
            continue
        ends = {o for s, _, o in edges if s in frontier} | {s for s, _, o in edges if o in frontier}
        size = lubm.limits.batch_size
        batches.append(math.ceil(len(frontier) / size) + math.ceil(len(ends | frontier) / size))
    print(
        f"\n{server.name}: {hops}-hop BFS from {seed}: {len(distance)} nodes, {len(edges)} edges, "
        f"{requests} requests in {elapsed:.2f}s (frontiers {frontier_sizes}, requests per hop {batches})"
    )
    assert requests == sum(batches), f"{requests} requests for frontiers of {frontier_sizes[:hops]} ids"


async def test_types_and_metadata_equal_direct_sparql(server: SparqlServer, lubm: SparqlBackend) -> None:
    distance, _ = direct_bfs(server, PROFESSOR, 1)
    ids = sorted(distance)
    rows = _direct(server, f"SELECT ?s ?t {{ VALUES ?s {{ {_values(ids)} }} ?s a ?t }}")
    types: dict[str, list[str]] = {}
    for row in rows:
        types.setdefault(row["s"]["value"], []).append(_ub(row["t"]["value"]))
    nodes = await lubm.get_nodes(ids)
    assert {i: n.entity_type for i, n in nodes.items()} == {i: min(t) for i, t in types.items()}
    several = sorted(i for i, t in types.items() if len(t) > 1)
    assert several, "LUBM has entities with two types (e.g. GraduateStudent and TeachingAssistant)"
    metadata = await lubm.metadata_for_nodes(ids)
    assert metadata[several[0]]["types"] == sorted(types[several[0]])
    assert {i: n.name for i, n in nodes.items()} == {i: m["name"] for i, m in metadata.items()}
    metadata = metadata[PROFESSOR]
    assert metadata["name"] == nodes[PROFESSOR].name == "FullProfessor1"
    assert metadata["emailAddress"] == "FullProfessor1@Department0.University0.edu"
    assert metadata["canonical_url"] == PROFESSOR


async def test_intersection_equals_direct_sparql(server: SparqlServer, lubm: SparqlBackend) -> None:
    other = "http://www.Department0.University0.edu/AssociateProfessor2"
    near_a, _ = direct_bfs(server, PROFESSOR, 2)
    near_b, _ = direct_bfs(server, other, 2)
    result = await intersect_subgraphs(Graph(lubm, cache=None), [PROFESSOR, other], 2, topology_only=True, limits=BIG)
    assert {node.id for node in result.nodes} == set(near_a) & set(near_b)
    assert result.node_count > 10


async def test_search_by_configured_label_predicate(lubm: SparqlBackend) -> None:
    stubs = await lubm.search_entities("FullProfessor1")
    assert stubs and all(stub.name == "FullProfessor1" for stub in stubs[:5])
    assert stubs[0].id == PROFESSOR
    assert len(stubs) <= 20
    typed = await lubm.search_entities("professor1", ["ub:AssociateProfessor"])
    assert typed and all(s.entity_type == "ub:AssociateProfessor" for s in typed)
    assert all("professor1" in (s.name or "").lower() for s in typed)


async def test_schema_lists_types_and_predicates(server: SparqlServer, lubm: SparqlBackend) -> None:
    types = _direct(server, f"SELECT DISTINCT ?t {{ ?s <{RDF_TYPE}> ?t }}")
    predicates = _direct(server, f"SELECT DISTINCT ?p {{ ?s ?p ?o FILTER(isIRI(?o) && ?p != <{RDF_TYPE}>) }}")
    assert await lubm.entity_types() == sorted(_ub(r["t"]["value"]) for r in types)
    assert await lubm.predicates() == sorted(_ub(r["p"]["value"]) for r in predicates)
    assert lubm.capabilities.comprehensive_schema
