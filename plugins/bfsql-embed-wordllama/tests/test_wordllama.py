"""The wordllama-256 embedder: offline, a light install, meaning, honest search, the default semantic embedder."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from bfsql import (
    AUTO,
    EntityRecord,
    Graph,
    HashingEmbedder,
    RelationshipRecord,
    SqliteBackend,
    cosine,
    create_embedder,
    load_sqlite,
    path_query,
    resolve_embedder_name,
    search_entities,
)
from bfsql.testing import reset_plugins
from bfsql_testsupport.services import unavailable

try:
    from bfsql_embed_wordllama import model_files, prepare

    model_files()
except (ImportError, RuntimeError) as exc:  # pragma: no cover - depends on the environment
    MISSING: str | None = f"{exc} (pip install ./plugins/bfsql-embed-wordllama)"
else:
    MISSING = None

HEAVY = re.compile(
    r"^(torch|triton|tensorflow|jax|jaxlib|nvidia-.*|cuda-.*|sentence-transformers|transformers|onnxruntime)$"
)
"""Distributions the embedder must not pull in (PyTorch, CUDA, a neural-network runtime)."""
INSTALL_LIMIT_MB = 120
"""Most megabytes the embedder's own closure may take installed (core's dependencies excluded)."""


@pytest.fixture(scope="module")
def wordllama():
    if MISSING is not None:
        unavailable("the wordllama model package", MISSING)
    reset_plugins()
    return create_embedder("wordllama-256")


def _closure(name: str) -> dict[str, metadata.Distribution]:
    """The installed distribution ``name`` and everything it requires (without extras)."""
    found: dict[str, metadata.Distribution] = {}
    todo = [name]
    while todo:
        wanted = re.split(r"[\s;<>=!~\[(]", todo.pop(), maxsplit=1)[0]
        key = re.sub(r"[-_.]+", "-", wanted).lower()
        if key in found:
            continue
        try:
            dist = metadata.distribution(wanted)
        except metadata.PackageNotFoundError:
            continue
        found[key] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return found


def _installed_bytes(dist: metadata.Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def test_the_install_pulls_no_neural_network_runtime_and_stays_small(wordllama):
    closure = _closure("bfsql-embed-wordllama")
    assert {"bfsql", "tokenizers", "wordllama", "numpy"} <= set(closure)
    heavy = sorted(name for name in closure if HEAVY.match(name))
    assert not heavy, f"bfsql-embed-wordllama pulls in {heavy}"
    own = set(closure) - set(_closure("bfsql"))
    size = sum(_installed_bytes(closure[name]) for name in own) / 1e6
    assert size <= INSTALL_LIMIT_MB, f"wordllama-256 adds {size:.0f} MB to core (limit {INSTALL_LIMIT_MB}): {own}"


def test_the_plugin_registers_wordllama_256_without_loading_the_model(wordllama):
    code = (
        "import sys, bfsql; specs = bfsql.get_embedders(); "
        "print(specs['wordllama-256'].plugin, 'tokenizers' in sys.modules, 'wordllama' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["embed-wordllama", "False", "False"]


def test_it_is_the_preferred_semantic_embedder(wordllama):
    assert resolve_embedder_name(AUTO) == "wordllama-256"
    assert resolve_embedder_name(AUTO, stored="hashing") == "hashing"  # a store's own embedder still wins


async def test_vectors_are_256_normalised_deterministic_and_offline(wordllama, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the wordllama-256 embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    fresh = create_embedder("wordllama-256")
    assert (fresh.name, fresh.dimension, fresh.semantic) == ("wordllama-256", 256, True)
    first, again, *_ = await fresh.embed(["born on", "born on", "a much longer text in the same call"])
    assert len(first) == 256 and math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-5)
    assert first == again
    (alone,) = await fresh.embed(["born on"])
    assert max(abs(a - b) for a, b in zip(alone, first, strict=True)) < 1e-6  # other texts do not change a vector
    assert await fresh.embed([]) == []
    empty, punctuation = await fresh.embed(["", "--- !!"])
    assert not any(empty) and not any(punctuation)  # no token: a zero vector, never NaN


async def test_identifiers_and_case_read_as_words(wordllama):
    assert prepare("OCCURRED_ON") == prepare("occurredOn") == prepare("Occurred on") == "occurred on"
    occurred, spaced, camel = await wordllama.embed(["OCCURRED_ON", "occurred on", "occurredOn"])
    assert cosine(occurred, spaced) > 0.999 and cosine(camel, spaced) > 0.999


async def test_it_matches_by_meaning_where_hashing_cannot(wordllama):
    born, birth, located = await wordllama.embed(["born", "date of birth", "located in"])
    assert cosine(born, birth) > cosine(born, located) + 0.2
    hashed = await HashingEmbedder().embed(["born", "date of birth"])
    assert cosine(hashed[0], hashed[1]) == 0.0  # no shared spelling


async def test_a_whole_batch_is_embedded_like_one_text_at_a_time(wordllama):
    texts = [f"phenotype number {i} of the heart" if i % 7 else "" for i in range(1500)]  # crosses chunk bounds
    batch = wordllama.embed_array(texts)
    for i in (0, 1, 511, 512, 513, 1024, 1499):
        (one,) = wordllama.embed_array([texts[i]])
        assert max(abs(float(a) - float(b)) for a, b in zip(batch[i], one, strict=True)) < 1e-6, i


def washington() -> list:
    """Seed 002's George Washington example as a small graph."""
    return [
        EntityRecord(id="george_washington", entity_type="person", name="George Washington"),
        EntityRecord(id="washington_irving", entity_type="person", name="Washington Irving"),
        EntityRecord(id="date_1732_02_22", entity_type="date", name="February 22, 1732"),
        EntityRecord(id="battle_of_yorktown", entity_type="event", name="Battle of Yorktown"),
        EntityRecord(id="mount_vernon", entity_type="place", name="Mount Vernon"),
        EntityRecord(id="continental_congress", entity_type="organization", name="Continental Congress"),
        RelationshipRecord(subject="george_washington", predicate="BORN_ON", object="date_1732_02_22"),
        RelationshipRecord(subject="battle_of_yorktown", predicate="OCCURRED_ON", object="date_1732_02_22"),
        RelationshipRecord(subject="mount_vernon", predicate="MENTIONED_ON", object="date_1732_02_22"),
        RelationshipRecord(subject="george_washington", predicate="LIVED_IN", object="mount_vernon"),
        RelationshipRecord(subject="continental_congress", predicate="HAS_MEMBER", object="george_washington"),
    ]


@pytest.fixture
async def washington_store(wordllama, tmp_path: Path):
    """The Washington graph in a sqlite store loaded with the default embedder (wordllama-256 once installed)."""
    bundle = tmp_path / "b.jsonl"
    bundle.write_text("".join(json.dumps(r.model_dump(mode="json", exclude_none=True) | {"kind": r.kind}) + "\n"
                              for r in washington()), encoding="utf-8")
    db = tmp_path / "gw.sqlite"
    report = load_sqlite(db, [bundle])
    assert (report.embedder, report.embedded) == ("wordllama-256", 6)
    backend = SqliteBackend(db)
    yield Graph(backend, embedder=wordllama)
    await backend.aclose()


async def test_path_queries_match_relations_by_meaning(washington_store):
    answer = await path_query(washington_store, '"George Washington" -[birth]-> type:date')
    assert [r.entity.id for r in answer.results] == ["date_1732_02_22"]
    assert answer.results[0].path[1].edge == "BORN_ON"
    exact = await path_query(washington_store, "@george_washington -[lived_in]->")
    assert [r.entity.id for r in exact.results] == ["mount_vernon"]
    assert exact.results[0].path[1].score is None  # an exact match shows no score


async def test_search_is_honest_with_static_vectors(washington_store):
    graph = washington_store
    assert graph.has_vector_search
    for mode in (None, "lexical", "vector", "hybrid", "rrf", "exact"):
        for nonsense in ("xyzzy nonsense query", "zzqqq", "qwzx vbnmk plorf"):
            assert await search_entities(graph, nonsense, mode=mode) == [], (nonsense, mode)
    hits = await search_entities(graph, "George Washington")
    assert (hits[0].id, hits[0].score) == ("george_washington", 1.0)
    siege = await search_entities(graph, "Yorktown siege", mode="vector")
    assert siege and siege[0].id == "battle_of_yorktown"
