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
from bfsql.engine.search import (
    STORE_CHARS,
    STORE_TERMS,
    available_modes,
    default_mode,
    lexical_score,
    search_entities,
    store_text,
)
from bfsql.errors import InvalidArgument
from bfsql.loading.sqlite_loader import load_sqlite, reembed_store
from bfsql.models import EntityStub
from bfsql.server import build_server
from bfsql.settings import ServerSettings

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
    """lexical: A, B, C (no scores); vector: B 0.9, D 0.7, A 0.1."""

    lexical: ClassVar[list[EntityStub]] = [stub("A"), stub("B"), stub("C")]

    async def search_entities(self, query, node_types=None):
        return [s for s in self.lexical if node_types is None or s.entity_type in node_types]

    async def vector_search(self, vector, node_types=None, limit=20):
        hits = [stub("B", 0.9), stub("D", 0.7), stub("A", 0.1)]
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


@pytest.mark.parametrize(
    ("query", "labels", "score"),
    [
        ("Alpha", ["alpha"], 1.0),  # exact, case-insensitive
        ("first", ["alpha", "first"], 1.0),  # an exact synonym
        ("heart", ["Abnormality of the heart"], 0.6),  # every query word, 1 of the label's 4
        ("heart ab", ["Abnormality of the heart"], 0.7),  # the last word as a prefix
        ("RAF", ["BRAF"], 0.425),  # contained: 0.2 + 0.3 * 3/4
        ("zzz", ["alpha"], 0.2),  # found by the backend, no label shows why
    ],
)
def test_lexical_score(query, labels, score):
    assert lexical_score(query, "X:1", labels) == pytest.approx(score)
    assert lexical_score("x:1", "X:1", labels) == 1.0  # the id


async def test_hybrid_is_alpha_weighted_over_each_rankers_own_scores():
    # lexical (query "q" matches no label): A .2, B .2, C .2; vector: B .9, D .7 (A .1 is below 0.6: dropped)
    # alpha .5: B .5*.9 + .5*.2 = .55, D .35, A .1, C .1 (A first: better rank)
    got = await search_entities(fixed_graph(), "q", mode="hybrid")
    assert ranked(got) == [
        ("B", 0.55, ["lexical", "vector"]),
        ("D", 0.35, ["vector"]),
        ("A", 0.1, ["lexical"]),
        ("C", 0.1, ["lexical"]),
    ]
    assert [(s.lexical_score, s.vector_score) for s in got] == [(0.2, 0.9), (None, 0.7), (0.2, None), (0.2, None)]
    assert [(s.id, s.score) for s in await search_entities(fixed_graph(), "q", mode="hybrid", alpha=1.0)] == [
        ("B", 0.9), ("D", 0.7), ("A", 0.0), ("C", 0.0)]


async def test_vector_hits_below_the_least_similarity_are_dropped():
    assert [s.id for s in await search_entities(fixed_graph(), "q", mode="vector")] == ["B", "D"]
    low = await search_entities(fixed_graph(), "q", mode="vector", min_similarity=0.05)
    assert ranked(low) == [("B", 0.9, ["vector"]), ("D", 0.7, ["vector"]), ("A", 0.1, ["vector"])]
    assert await search_entities(fixed_graph(), "q", mode="vector", min_similarity=0.95) == []
    with pytest.raises(InvalidArgument, match="min_similarity must be a number from 0 to 1"):
        await search_entities(fixed_graph(), "q", mode="vector", min_similarity=2)


async def test_exact_matches_come_first_with_score_one():
    for mode in ("lexical", "hybrid", "rrf"):
        got = await search_entities(fixed_graph(), "beta", mode=mode)
        assert (got[0].id, got[0].score, got[0].lexical_score) == ("B", 1.0, 1.0), mode


async def test_rrf_sums_reciprocal_ranks_with_k_60():
    got = await search_entities(fixed_graph(), "q", mode="rrf")
    expected = {
        "B": 1 / 62 + 1 / 61,  # lexical 2nd, vector 1st
        "A": 1 / 61,  # lexical 1st (its vector hit is below the least similarity)
        "D": 1 / 62,
        "C": 1 / 63,
    }
    assert [s.id for s in got] == ["B", "A", "D", "C"]
    assert {s.id: s.score for s in got} == {k: round(v, 6) for k, v in expected.items()}
    assert got[0].rankers == ["lexical", "vector"] and got[1].rankers == ["lexical"]


async def test_single_ranker_modes_keep_their_scores():
    lexical = await search_entities(fixed_graph(), "q", mode="lexical")
    assert ranked(lexical) == [("A", 0.2, ["lexical"]), ("B", 0.2, ["lexical"]), ("C", 0.2, ["lexical"])]
    vector = await search_entities(fixed_graph(), "q", mode="vector")
    assert ranked(vector) == [("B", 0.9, ["vector"]), ("D", 0.7, ["vector"])]


@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid", "rrf", "exact"])
async def test_nothing_relevant_is_an_empty_list(mode):
    graph = Graph(MemoryBackend(RECORDS))
    assert await search_entities(graph, "xyzzy nonsense query", mode=mode) == []
    assert await search_entities(graph, "zzqqq", mode=mode) == []


@pytest.mark.parametrize("query", ["!!!", "\x00", "\x00\x00", "--- ...", "\t\x07"])
async def test_junk_queries_are_refused_on_every_mode(query):
    graph = Graph(MemoryBackend(RECORDS))
    for mode in (None, "lexical", "exact"):
        with pytest.raises(InvalidArgument, match="has no letter or digit"):
            await search_entities(graph, query, mode=mode)


async def test_the_store_sees_a_bounded_query():
    seen: list[str] = []

    class Recording(LexicalOnly):
        async def search_entities(self, query, node_types=None, limit=20):
            seen.append(query)
            return []

    long = " ".join(f"word{i}" for i in range(300))[:1000]
    assert await search_entities(Graph(Recording(RECORDS)), long) == []
    assert seen == [store_text(long)] and len(seen[0].split()) == STORE_TERMS and len(seen[0]) <= STORE_CHARS
    assert store_text("a\x00b  \n c") == "a b c"


async def test_node_types_restrict_every_ranker():
    got = await search_entities(fixed_graph(), "q", ["Drug"], mode="hybrid")
    # lexical: C alone (.2); vector: D alone (.7)
    assert [(s.id, s.score) for s in got] == [("D", 0.35), ("C", 0.1)]
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
    assert default_mode(plain) == "lexical" and available_modes(plain) == ["exact", "lexical", "rrf"]
    assert [s.rankers for s in await search_entities(plain, "alpha")] == [["lexical"]]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
async def test_vector_modes_without_vectors_name_the_available_modes(mode):
    with pytest.raises(InvalidArgument) as info:
        await search_entities(Graph(LexicalOnly(RECORDS)), "alpha", mode=mode)
    assert f"Search mode {mode!r} needs entity vectors, which this graph does not have" in info.value.message
    assert "Backend" not in info.value.message
    assert "Available modes: exact, lexical, rrf." in info.value.message


async def test_rrf_without_vectors_fuses_lexical_and_graph():
    assert [s.rankers for s in await search_entities(Graph(LexicalOnly(RECORDS)), "alpha", mode="rrf")] == [
        ["lexical"]]


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
        assert available_modes(Graph(backend)) == ["exact", "lexical", "rrf"]


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
    report = load_sqlite(db, [bundle(tmp_path, ROWS)], embedder="hashing")
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
        assert fused[0].rankers == ["lexical", "vector"] and fused[0].score == 1.0  # "RAF" is a synonym of f:1
        assert await search_entities(graph, "xyzzy nonsense query") == []
    finally:
        await backend.aclose()


def test_reloads_embed_only_new_or_renamed_entities(tmp_path):
    db = tmp_path / "s.sqlite"
    source = bundle(tmp_path, ROWS)
    load_sqlite(db, [source], embedder="hashing")
    assert load_sqlite(db, [source]).embedded == 0  # the store's own embedder
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
    load_sqlite(db, [bundle(tmp_path, ROWS)], embedder="hashing")
    small = HashingEmbedder(dimension=64)
    backend = SqliteBackend(db)
    try:
        with pytest.raises(EmbedderMismatch) as info:
            await Graph(backend, embedder=small).bind_embedder()
        assert "'hashing' (512 dimensions)" in info.value.message and "'hashing-64' (64" in info.value.message
        assert "--embedder hashing" in info.value.hint and "bfsql load --db" in info.value.hint
        with pytest.raises(EmbedderMismatch):  # at server start-up, not at the first query
            await build_server(Graph(backend, embedder=small), ServerSettings())
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


class Meaningful(HashingEmbedder):
    """Stands for a semantic embedder (the demo store takes vectors of semantic embedders only)."""

    semantic = True

    @property
    def name(self) -> str:
        return "meaningful"


def test_by_default_a_store_without_a_semantic_embedder_installed_has_no_vectors(tmp_path):
    report = load_sqlite(tmp_path / "s.sqlite", [bundle(tmp_path, ROWS)])
    assert (report.embedder, report.embedded) == (None, 0)


def test_int8_vectors_keep_the_cosine_and_older_float32_rows_still_read():
    import numpy as np

    from bfsql.loading.sqlite_loader import decode_vectors, encode_vectors

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((50, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    blobs = encode_vectors(vectors)
    assert {len(b) for b in blobs} == {384 + 4}
    decoded = decode_vectors(blobs, 384)
    exact, approx = vectors @ vectors[0], decoded @ decoded[0]
    assert np.abs(exact - approx).max() < 0.01
    legacy = decode_vectors([vectors[1].astype("<f4").tobytes()], 384)
    assert np.allclose(legacy[0], vectors[1])


# -- the MCP tool ---------------------------------------------------------------------


async def test_search_entities_tool_takes_mode_and_alpha():
    graph = Graph(Fixed(RECORDS), plugins=[postprocess])
    async with Client(await build_server(graph, ServerSettings())) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "search_entities")
        assert {"query", "node_types", "mode", "alpha", "limit", "offset", "min_similarity"} == set(
            tool.input_schema["properties"])
        result = await client.call_tool("search_entities", {"query": "q", "mode": "rrf"})
        hits = json.loads(result.content[0].text)["items"]
        assert [h["id"] for h in hits] == ["B", "A", "D", "C"] and hits[0]["rankers"] == ["lexical", "vector"]
        assert hits[0]["vector_score"] == 0.9 and hits[0]["lexical_score"] == 0.2
        result = await client.call_tool("search_entities", {"query": "q", "mode": "vector", "min_similarity": 0.05})
        assert [h["id"] for h in json.loads(result.content[0].text)["items"]] == ["B", "D", "A"]
        result = await client.call_tool("search_entities", {"query": "q", "mode": "hybrid", "alpha": 7})
        assert result.is_error and "alpha must be a number from 0 to 1" in result.content[0].text
    plain = Graph(LexicalOnly(RECORDS), plugins=[postprocess])
    async with Client(await build_server(plain, ServerSettings())) as client:
        result = await client.call_tool("search_entities", {"query": "alpha", "mode": "vector"})
        assert result.is_error and "Available modes: exact, lexical" in result.content[0].text
