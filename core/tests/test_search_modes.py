"""Hybrid entity search (seed 003): modes, fusion formulas, error cases, and the backend seam.

The fusion tests use a backend whose two rankings are fixed, so every fused score is
computed by hand below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from mcp import Client

from bfsql import Capabilities, Graph, GraphDbInterface, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.backends.sqlite import SqliteBackend
from bfsql.embedders import EmbedderMismatch, HashingEmbedder
from bfsql.engine.search import available_modes, default_mode, min_max, rank_scores, search_entities
from bfsql.errors import InvalidArgument
from bfsql.loading.sqlite_loader import load_sqlite, reembed_store
from bfsql.models import EntityStub
from bfsql.server import ServeSettings, build_server

from conftest import entity, rel

RECORDS = [
    entity("A", "Gene", name="alpha", synonyms=["first"]),
    entity("B", "Gene", name="beta"),
    entity("C", "Drug", name="gamma"),
    entity("D", "Drug", name="delta"),
    rel("A", "binds", "B"),
]


def stub(i: str, score: float | None = None) -> EntityStub:
    types = {"A": "Gene", "B": "Gene", "C": "Drug", "D": "Drug"}
    return EntityStub(id=i, entity_type=types[i], name=i.lower(), score=score)


class Fixed(MemoryBackend):
    """lexical: A, B, C (no scores); vector: B 0.9, D 0.5, A 0.1."""

    lexical: ClassVar[list[EntityStub]] = [stub("A"), stub("B"), stub("C")]

    async def search_entities(self, query, node_types=None):
        return [s for s in self.lexical if node_types is None or s.entity_type in node_types]

    async def vector_search(self, vector, node_types=None, limit=20):
        hits = [stub("B", 0.9), stub("D", 0.5), stub("A", 0.1)]
        return [s for s in hits if node_types is None or s.entity_type in node_types][:limit]


class LexicalOnly(MemoryBackend):
    capabilities = Capabilities(batch_primitives=True)


def fixed_graph(lexical: list[EntityStub] | None = None) -> Graph:
    backend = Fixed(RECORDS)
    if lexical is not None:
        backend.lexical = lexical  # type: ignore[misc]
    return Graph(backend)


def ranked(stubs: list[EntityStub]) -> list[tuple[str, float | None, list[str] | None]]:
    return [(s.id, s.score, s.rankers) for s in stubs]


def test_normalisation_helpers():
    assert min_max({"a": 10.0, "b": 5.0, "c": 0.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert min_max({"a": 3.0}) == {"a": 1.0} and min_max({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    assert rank_scores([stub("A"), stub("B"), stub("C")]) == {"A": 1.0, "B": 2 / 3, "C": 1 / 3}
    assert rank_scores([stub("A", 7.0), stub("B", 2.0)]) == {"A": 7.0, "B": 2.0}


async def test_hybrid_is_alpha_weighted_min_max_fusion():
    # lexical by rank: A 1, B 2/3, C 1/3 -> min-max A 1, B 0.5, C 0
    # vector: B 0.9, D 0.5, A 0.1 -> min-max B 1, D 0.5, A 0
    # alpha 0.5: B .5*1+.5*.5 = .75, A .5*0+.5*1 = .5, D .5*.5 = .25, C 0
    got = await search_entities(fixed_graph(), "q", mode="hybrid")
    assert ranked(got) == [
        ("B", 0.75, ["lexical", "vector"]),
        ("A", 0.5, ["lexical", "vector"]),
        ("D", 0.25, ["vector"]),
        ("C", 0.0, ["lexical"]),
    ]
    # alpha 1: vector only; A and C tie at 0, A first (better lexical rank)
    assert [(s.id, s.score) for s in await search_entities(fixed_graph(), "q", mode="hybrid", alpha=1.0)] == [
        ("B", 1.0), ("D", 0.5), ("A", 0.0), ("C", 0.0)]
    # alpha 0: lexical only; C and D tie at 0, D first (2nd in a ranking beats 3rd)
    assert [(s.id, s.score) for s in await search_entities(fixed_graph(), "q", mode="hybrid", alpha=0.0)] == [
        ("A", 1.0), ("B", 0.5), ("D", 0.0), ("C", 0.0)]


async def test_hybrid_uses_the_lexical_rankers_own_scores_when_it_gives_them():
    graph = fixed_graph([stub("A", 12.0), stub("B", 3.0), stub("C", 2.0)])
    # lexical min-max: A 1, B .1, C 0; fused: A .5, B .5*.1 + .5*1 = .55, D .25, C 0
    got = await search_entities(graph, "q", mode="hybrid")
    assert [(s.id, s.score) for s in got] == [("B", 0.55), ("A", 0.5), ("D", 0.25), ("C", 0.0)]


async def test_rrf_sums_reciprocal_ranks_with_k_60():
    got = await search_entities(fixed_graph(), "q", mode="rrf")
    expected = {
        "A": 1 / 61 + 1 / 63,  # lexical 1st, vector 3rd
        "B": 1 / 62 + 1 / 61,  # lexical 2nd, vector 1st
        "C": 1 / 63,
        "D": 1 / 62,
    }
    assert [s.id for s in got] == ["B", "A", "D", "C"]
    assert {s.id: s.score for s in got} == {k: round(v, 6) for k, v in expected.items()}
    assert got[0].rankers == ["lexical", "vector"] and got[3].rankers == ["lexical"]


async def test_single_ranker_modes_keep_their_scores():
    lexical = await search_entities(fixed_graph(), "q", mode="lexical")
    assert ranked(lexical) == [("A", None, ["lexical"]), ("B", None, ["lexical"]), ("C", None, ["lexical"])]
    vector = await search_entities(fixed_graph(), "q", mode="vector")
    assert ranked(vector) == [("B", 0.9, ["vector"]), ("D", 0.5, ["vector"]), ("A", 0.1, ["vector"])]


async def test_node_types_restrict_every_ranker():
    got = await search_entities(fixed_graph(), "q", ["Drug"], mode="hybrid")
    # lexical: C alone -> 1; vector: D alone -> 1
    assert [(s.id, s.score) for s in got] == [("C", 0.5), ("D", 0.5)]
    assert await search_entities(fixed_graph(), "q", [], mode="rrf") == []


async def test_exact_mode_matches_id_name_or_synonym_case_insensitively():
    graph = Graph(MemoryBackend(RECORDS))
    assert ranked(await search_entities(graph, "ALPHA", mode="exact")) == [("A", 1.0, ["exact"])]
    assert [s.id for s in await search_entities(graph, "first", mode="exact")] == ["A"]
    assert [s.id for s in await search_entities(graph, "C", mode="exact")] == ["C"]
    assert await search_entities(graph, "alp", mode="exact") == []  # a prefix is not exact
    assert await search_entities(graph, "alpha", ["Drug"], mode="exact") == []


async def test_default_mode_is_the_best_the_backend_supports():
    assert default_mode(fixed_graph()) == "hybrid"
    assert available_modes(fixed_graph()) == ["exact", "lexical", "vector", "hybrid", "rrf"]
    plain = Graph(LexicalOnly(RECORDS))
    assert default_mode(plain) == "lexical" and available_modes(plain) == ["exact", "lexical"]
    assert [s.rankers for s in await search_entities(plain, "alpha")] == [["lexical"]]


@pytest.mark.parametrize("mode", ["vector", "hybrid", "rrf"])
async def test_vector_modes_without_vectors_name_the_available_modes(mode):
    with pytest.raises(InvalidArgument) as info:
        await search_entities(Graph(LexicalOnly(RECORDS)), "alpha", mode=mode)
    assert f"Search mode {mode!r} needs vector search" in info.value.message
    assert "Available modes: exact, lexical." in info.value.message


async def test_unknown_mode_and_bad_alpha():
    with pytest.raises(InvalidArgument, match="Unknown search mode 'fuzzy'"):
        await search_entities(fixed_graph(), "q", mode="fuzzy")
    for alpha in (-0.1, 1.5, True):
        with pytest.raises(InvalidArgument, match="alpha must be a number from 0 to 1"):
            await search_entities(fixed_graph(), "q", mode="hybrid", alpha=alpha)


async def test_a_flag_without_the_method_is_not_a_vector_ranker():
    class EmbedsInsideSearch(LexicalOnly):  # like a backend whose search_entities embeds the query itself
        capabilities = Capabilities(vector_search=True)
        vector_search = GraphDbInterface.vector_search  # not overridden

    class MethodWithoutFlag(Fixed):
        capabilities = Capabilities()

    for backend in (EmbedsInsideSearch(RECORDS), MethodWithoutFlag(RECORDS)):
        assert available_modes(Graph(backend)) == ["exact", "lexical"]


async def test_memory_embeds_names_on_the_fly():
    graph = Graph(MemoryBackend(RECORDS))
    (vector,) = await graph.embed(["gamma"])
    hits = await graph.vector_search(vector, None, 2)
    assert hits[0].id == "C" and hits[0].score == pytest.approx(1.0)
    genes = await graph.vector_search(vector, ["Gene"], 5)
    assert sorted(h.id for h in genes) == ["A", "B"]
    assert graph.stats.calls["vector_search"] == 2
    await graph.vector_search(vector, None, 2)
    assert graph.stats.calls["vector_search"] == 2  # the repeated call was answered by the cache


# -- the sqlite store -----------------------------------------------------------------


def bundle(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {"kind": "entity", "id": "g:1", "entity_type": "Gene", "name": "BRAF"},
    {"kind": "entity", "id": "g:2", "entity_type": "Gene", "name": "RAF1"},
    {"kind": "entity", "id": "f:1", "entity_type": "Family", "name": "RAF family", "synonyms": ["RAF"]},
    {"kind": "entity", "id": "x:9", "entity_type": "Gene", "name": "gone", "status": "merged"},
    {"kind": "relationship", "subject": "g:1", "predicate": "isa", "object": "f:1"},
]


async def test_sqlite_stores_vectors_at_load_and_searches_them(tmp_path):
    db = tmp_path / "s.sqlite"
    report = load_sqlite(db, [bundle(tmp_path, ROWS)])
    assert (report.embedder, report.embedded) == ("hashing", 3)  # merged entities get none
    backend = SqliteBackend(db)
    try:
        assert backend.vector_embedder == ("hashing", 512) and backend.capabilities.vector_search
        graph = Graph(backend)
        (vector,) = await graph.embed(["BRAF"])
        hits = await graph.vector_search(vector, None, 10)
        assert hits[0].id == "g:1" and hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert "x:9" not in {h.id for h in hits}
        assert all(h.entity_type == "Family" for h in await graph.vector_search(vector, ["Family"], 10))
        fused = await search_entities(graph, "RAF")
        assert fused[0].rankers == ["lexical", "vector"] and fused[0].score is not None
    finally:
        await backend.aclose()


def test_reloads_embed_only_new_or_renamed_entities(tmp_path):
    db = tmp_path / "s.sqlite"
    source = bundle(tmp_path, ROWS)
    load_sqlite(db, [source])
    assert load_sqlite(db, [source]).embedded == 0
    renamed = bundle(tmp_path, [{"kind": "entity", "id": "g:2", "entity_type": "Gene", "name": "C-RAF"}])
    assert load_sqlite(db, [renamed]).embedded == 1


async def test_a_store_without_vectors_has_lexical_modes_only(tmp_path):
    db = tmp_path / "s.sqlite"
    report = load_sqlite(db, [bundle(tmp_path, ROWS)], embedder=None)
    assert report.embedder is None
    backend = SqliteBackend(db)
    try:
        assert backend.vector_embedder is None and not backend.capabilities.vector_search
        with pytest.raises(InvalidArgument, match="Available modes: exact, lexical"):
            await search_entities(Graph(backend), "RAF", mode="vector")
    finally:
        await backend.aclose()


async def test_mismatched_embedder_is_refused_and_reembedding_switches_safely(tmp_path):
    db = tmp_path / "s.sqlite"
    load_sqlite(db, [bundle(tmp_path, ROWS)])
    small = HashingEmbedder(dimension=64)
    backend = SqliteBackend(db)
    try:
        with pytest.raises(EmbedderMismatch) as info:
            await Graph(backend, embedder=small).bind_embedder()
        assert "'hashing' (512 dimensions)" in info.value.message and "'hashing-64' (64" in info.value.message
        assert "--embedder hashing" in info.value.hint and "bfsql load --db" in info.value.hint
        with pytest.raises(EmbedderMismatch):  # at server start-up, not at the first query
            await build_server(Graph(backend, embedder=small), ServeSettings())
    finally:
        await backend.aclose()
    assert reembed_store(db, small).embedded == 3
    backend = SqliteBackend(db)
    try:
        graph = Graph(backend, embedder=small)
        await graph.bind_embedder()
        (vector,) = await graph.embed(["RAF1"])
        assert (await graph.vector_search(vector, None, 1))[0].id == "g:2"
    finally:
        await backend.aclose()


async def test_the_demo_store_follows_the_servers_embedder(tmp_path, monkeypatch):
    monkeypatch.setenv("BFSQL_CACHE_DIR", str(tmp_path))
    from bfsql.plugins import get_backends

    backend = get_backends()["sqlite"].factory(get_backends()["sqlite"].config_model())
    try:
        assert backend.vector_embedder == ("hashing", 512)
        graph = Graph(backend, embedder=HashingEmbedder(dimension=128))
        await graph.bind_embedder()
        assert backend.vector_embedder == ("hashing-128", 128) and backend.path.name.endswith("-hashing-128-128.sqlite")
        (vector,) = await graph.embed(["BRAF"])
        assert (await graph.vector_search(vector, ["Gene"], 1))[0].id == "HGNC:BRAF"
    finally:
        await backend.aclose()


# -- the MCP tool ---------------------------------------------------------------------


async def test_search_entities_tool_takes_mode_and_alpha():
    graph = Graph(Fixed(RECORDS), plugins=[postprocess])
    async with Client(await build_server(graph, ServeSettings())) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "search_entities")
        assert {"query", "node_types", "mode", "alpha", "limit", "offset"} == set(tool.input_schema["properties"])
        result = await client.call_tool("search_entities", {"query": "q", "mode": "rrf"})
        hits = json.loads(result.content[0].text)
        assert [h["id"] for h in hits] == ["B", "A", "D", "C"] and hits[0]["rankers"] == ["lexical", "vector"]
        result = await client.call_tool("search_entities", {"query": "q", "mode": "hybrid", "alpha": 7})
        assert result.is_error and "alpha must be a number from 0 to 1" in result.content[0].text
    plain = Graph(LexicalOnly(RECORDS), plugins=[postprocess])
    async with Client(await build_server(plain, ServeSettings())) as client:
        result = await client.call_tool("search_entities", {"query": "alpha", "mode": "vector"})
        assert result.is_error and "Available modes: exact, lexical" in result.content[0].text
