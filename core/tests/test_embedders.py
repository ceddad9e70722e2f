"""Embedders: the hashing default, the LRU cache, the registry and the plugin hook."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest

from bfsql import Graph, hookimpl, plugins
from bfsql.backends.memory import MemoryBackend
from bfsql.embedders import (
    CachedEmbedder,
    Embedder,
    HashingEmbedder,
    cosine,
    split_identifier,
    sync_embedding,
)
from bfsql.errors import InvalidArgument
from bfsql.plugins import create_embedder

from conftest import small_records


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


async def test_hashing_is_deterministic_normalised_and_512_dimensional():
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("hashing", 512)
    first, again, empty = await embedder.embed(["BRAF kinase", "BRAF kinase", ""])
    assert first == again and len(first) == 512
    assert norm(first) == pytest.approx(1.0)
    assert norm(empty) == 0.0
    assert (await HashingEmbedder().embed(["BRAF kinase"]))[0] == first  # no per-process hash seed
    assert HashingEmbedder(dimension=64).name == "hashing-64"
    with pytest.raises(ValueError):
        HashingEmbedder(dimension=4)


async def test_hashing_features_are_word_unigrams_and_character_trigrams():
    embedder = HashingEmbedder()
    # "ab": word "ab" and the 3-grams of "#ab#": "#ab", "ab#" -> three features of weight 1
    (vector,) = await embedder.embed(["ab"])
    buckets = {embedder._bucket(f) for f in ("w:ab", "c:#ab", "c:ab#")}
    expected = [0.0] * 512
    for feature in ("w:ab", "c:#ab", "c:ab#"):
        expected[embedder._bucket(feature)] += 1.0
    length = norm(expected)
    assert vector == [x / length for x in expected]
    assert {i for i, x in enumerate(vector) if x} == buckets
    # case and punctuation do not matter; spelling does
    a, b, c = await embedder.embed(["born on", "BORN_ON", "died on"])
    assert cosine(a, b) == pytest.approx(1.0)
    assert cosine(a, c) < cosine(a, b)


def test_split_identifier():
    assert split_identifier("BORN_ON") == "born on"
    assert split_identifier("dateOfBirth") == "date of birth"
    assert split_identifier("HTTPServer") == "http server"
    assert split_identifier("has-part") == "has part"
    assert split_identifier("rdfs:subClassOf") == "sub class of"
    assert split_identifier("http://x.org/onto#hasPart") == "has part"
    assert split_identifier("isa") == "isa"


class Counting:
    name = "counting"
    dimension = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


async def test_cache_embeds_each_text_once_in_one_batch_and_normalises():
    inner = Counting()
    cached = CachedEmbedder(inner, maxsize=3)
    first = await cached.embed(["a", "bb", "a"])
    assert inner.calls == [["a", "bb"]]
    assert first[0] == first[2] and norm(first[1]) == pytest.approx(1.0)
    await cached.embed(["bb", "ccc"])
    assert inner.calls[-1] == ["ccc"]
    assert (cached.hits, cached.misses) == (2, 3)
    await cached.embed(["dddd"])  # evicts the least recently used ("a")
    await cached.embed(["a"])
    assert inner.calls[-1] == ["a"]
    assert (cached.name, cached.dimension) == ("counting", 2)


async def test_graph_embeds_predicates_once_per_session():
    inner = Counting()
    graph = Graph(MemoryBackend(small_records()), embedder=inner)
    await graph.predicate_vectors(["BORN_ON", "isa"])
    await graph.predicate_vectors(["isa", "partOf"])
    assert inner.calls == [["born on", "isa"], ["part of"]]


def test_sync_embedding_works_inside_and_outside_a_running_loop():
    embedder = HashingEmbedder()
    with sync_embedding(embedder) as embed:
        outside = [embed(["x"]), embed(["y"])]

    async def inside() -> list[Any]:
        with sync_embedding(embedder) as embed:
            return [embed(["x"]), embed(["y"])]

    assert [m.tolist() for m in asyncio.run(inside())] == [m.tolist() for m in outside]
    assert outside[0].shape == (1, embedder.dimension) and outside[0].dtype == np.float32


def test_sync_embedding_uses_an_embedders_array_and_checks_its_shape():
    class Arrays(HashingEmbedder):
        def embed_array(self, texts: list[str]) -> Any:
            return np.ones((len(texts) - 1, self.dimension)) if "short" in texts else np.ones((len(texts), 2))

    with sync_embedding(HashingEmbedder()) as embed:
        assert embed([]).shape == (0, HashingEmbedder().dimension)
    with sync_embedding(Arrays()) as embed:
        for texts in (["a", "short"], ["a"]):
            with pytest.raises(ValueError, match="'hashing' returned vectors of the wrong number or dimension"):
                embed(texts)


def test_registry_has_hashing_and_names_installed_embedders_on_error():
    plugins.reset()
    assert "hashing" in plugins.get_embedders()
    assert plugins.get_embedders()["hashing"].plugin == "bfsql.embedders"
    assert isinstance(create_embedder("hashing"), HashingEmbedder)
    with pytest.raises(InvalidArgument) as info:
        create_embedder("nope")
    assert "Unknown embedder 'nope'; installed: " in info.value.message and "hashing" in info.value.message
    assert "bfsql-embed-minilm" in info.value.hint


def test_plugins_register_embedders_through_the_hook():
    class Plugin:
        @hookimpl
        def register_embedders(self, register):
            register("counting", Counting, "counts calls")

    plugins.reset()
    pm = plugins.get_plugin_manager()
    pm.register(Plugin(), name="counting-plugin")
    try:
        spec = plugins.get_embedders()["counting"]
        assert (spec.plugin, spec.description) == ("counting-plugin", "counts calls")
        assert create_embedder("counting").name == "counting"
    finally:
        plugins.reset()


def test_a_duplicate_embedder_name_is_a_recorded_load_error():
    class Duplicate:
        @hookimpl
        def register_embedders(self, register):
            register("hashing", HashingEmbedder, "again")

    plugins.reset()
    plugins.get_plugin_manager().register(Duplicate(), name="dup")
    try:
        plugins.get_embedders()
        assert any(e["name"] == "dup" and "already registered" in e["error"] for e in plugins.load_errors())
    finally:
        plugins.reset()
