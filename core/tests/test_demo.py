"""The bundled FamPlex demo graph: records, the cached store, and the default sqlite backend."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bfsql import Edge, Graph, HashingEmbedder, Node, hookimpl, plugins
from bfsql.backends.sqlite import SqliteBackend, SqliteConfig, SqliteStoreError
from bfsql.demo import DATA_DIR, demo_store, ensure_demo_db, famplex_records
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.plugins import get_backends


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("bfsql-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BFSQL_CACHE_DIR", str(directory))
        yield directory


@pytest.fixture(scope="module")
def demo_db(cache: Path) -> Path:
    return ensure_demo_db()


@pytest.fixture
async def demo(demo_db: Path) -> Iterator[SqliteBackend]:
    backend = SqliteBackend(demo_db)
    yield backend
    await backend.aclose()


def test_vendored_data_is_complete() -> None:
    names = {p.name for p in DATA_DIR.iterdir()}
    assert {"entities.csv", "relations.csv", "descriptions.csv", "equivalences.csv", "grounding_map.csv"} <= names
    assert any(name.upper().startswith(("README", "NOTICE")) for name in names)


def test_records() -> None:
    records = famplex_records()
    entities = {r.id: r for r in records if isinstance(r, EntityRecord)}
    relations = [r for r in records if isinstance(r, RelationshipRecord)]
    assert len(entities) == len([r for r in records if isinstance(r, EntityRecord)])
    assert len(entities) > 1000
    raf = entities["FPLX:RAF"]
    assert (raf.entity_type, raf.name) == ("Family", "RAF Family")
    assert "RAF" in raf.synonyms and raf.properties["description_source"] == "mesh:D048490"
    assert "MESH:D048490" in raf.properties["xrefs"]
    assert entities["FPLX:p14_3_3"].name == "14-3-3 Family"
    assert entities["FPLX:AMPK"].entity_type == "Complex"  # AMPK_alpha is partof AMPK
    assert entities["FPLX:ETC_complex_V"].name == "ETC complex V"  # no BEL label: underscores as spaces
    assert (entities["HGNC:BRAF"].entity_type, entities["HGNC:BRAF"].name) == ("Gene", "BRAF")
    assert entities["UP:P0C0S8"].entity_type == "Protein"
    braf_isa_raf = RelationshipRecord(
        subject="HGNC:BRAF", predicate="isa", object="FPLX:RAF", source_documents=["famplex:relations.csv"]
    )
    assert braf_isa_raf in relations
    assert {r.predicate for r in relations} == {"isa", "partof"}
    assert all(r.confidence is None for r in relations)


def test_demo_db_is_built_once(demo_db: Path, cache: Path) -> None:
    assert demo_db.parent == cache and demo_db.is_file()
    stamp = demo_db.stat().st_mtime_ns
    assert ensure_demo_db() == demo_db
    assert demo_db.stat().st_mtime_ns == stamp
    with sqlite3.connect(demo_db) as conn:
        assert conn.execute("SELECT count(*) FROM entity").fetchone()[0] > 1000
    assert not [p for p in cache.iterdir() if p.name.endswith(".loading")]


def test_concurrent_builds_race_safely(tmp_path: Path) -> None:
    code = "from bfsql.demo import ensure_demo_db; print(ensure_demo_db())"
    env = {**__import__("os").environ, "BFSQL_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
    paths = {run.communicate(timeout=120)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(paths) == 1
    with sqlite3.connect(paths.pop()) as conn:
        assert conn.execute("SELECT count(*) FROM entity").fetchone()[0] > 1000


@pytest.mark.asyncio
async def test_demo_answers(demo: SqliteBackend) -> None:
    hits = await demo.search_entities("BRAF")
    assert hits[0].id == "HGNC:BRAF" and hits[0].name == "BRAF"
    assert (await demo.search_entities("RAF"))[0].id == "FPLX:RAF"
    graph = Graph(demo, plugins=[], cache=None)
    assert Edge("HGNC:BRAF", "isa", "FPLX:RAF") in await graph.edges_to("FPLX:RAF")
    assert await graph.edges_from("FPLX:RAF") == [Edge("FPLX:RAF", "isa", "FPLX:MAP3K")]
    assert await graph.get_node("FPLX:RAF") == Node(id="FPLX:RAF", entity_type="Family")
    assert await demo.entity_types() == ["Complex", "Family", "Gene", "Protein"]
    assert await demo.predicates() == ["isa", "partof"]
    assert "FamPlex" in await demo.graph_description()


class _Meaningful(HashingEmbedder):
    """A hashing embedder of 64 dimensions that says it is semantic (so the demo gets a copy with its vectors)."""

    semantic = True

    def __init__(self) -> None:
        super().__init__(64)

    @property
    def name(self) -> str:
        return "meaningful"


async def test_the_sqlite_backend_needs_a_store_and_the_cli_serves_the_demo_without_one(demo_db: Path) -> None:
    """The demo is chosen by the command line before it is opened: no served store switches files (23.0, 24.4)."""
    with pytest.raises(SqliteStoreError, match="--db"):
        get_backends()["sqlite"].factory(SqliteConfig())
    assert demo_store("auto") == demo_db

    class Plugin:
        @hookimpl
        def register_embedders(self, register):
            register("meaningful", _Meaningful, "a test embedder")

    plugins.reset()
    plugins.get_plugin_manager().register(Plugin(), name="meaningful-plugin")
    try:
        copy = demo_store("meaningful")
        assert copy != demo_db and copy.name.endswith("-meaningful-64.sqlite")
        assert demo_store("meaningful") == copy  # built once
        async with Graph(SqliteBackend(copy), embedder=_Meaningful()) as graph:
            await graph.bind_embedder()
            assert graph.backend.vector_embedder == ("meaningful", 64)
            (vector,) = await graph.embed(["BRAF"])
            assert (await graph.vector_search(vector, ["Gene"], 1))[0].id == "HGNC:BRAF"
    finally:
        plugins.reset()


def test_tests_never_use_the_users_cache():
    """bfsql's pytest plugin gives a run its own cache unless BFSQL_CACHE_DIR says where."""
    from bfsql.demo import cache_dir

    assert cache_dir() != Path.home() / ".cache" / "bfsql"


def test_the_demo_store_is_keyed_by_the_embedder_that_built_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A cache built by a virtualenv with a semantic embedder does not stop one without it: each finds
    its own store, and installing the embedder gives the demo its vectors at the next start."""
    monkeypatch.setenv("BFSQL_CACHE_DIR", str(tmp_path))

    class Plugin:
        @hookimpl
        def register_embedders(self, register):
            register("meaningful", _Meaningful, "a test embedder")

    monkeypatch.setattr("bfsql.plugins.PREFERRED_EMBEDDERS", ("meaningful",))
    plugins.reset()
    plugins.get_plugin_manager().register(Plugin(), name="meaningful-plugin")
    try:
        with_embedder = demo_store("auto")
        assert with_embedder.name.endswith("-meaningful.sqlite")
        with sqlite3.connect(with_embedder) as conn:
            assert conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone() == ("meaningful",)
    finally:
        plugins.reset()
    lexical = demo_store("auto")  # the embedder uninstalled: a store of its own, no mismatch
    assert lexical != with_embedder and lexical.name.endswith("-lexical.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".sqlite") == sorted(
        [with_embedder.name, lexical.name])


def test_the_cache_follows_the_platform_unless_bfsql_cache_dir_says_where(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    from bfsql.demo import cache_dir

    monkeypatch.delenv("BFSQL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_dir() == tmp_path / "xdg" / "bfsql"
    monkeypatch.setenv("BFSQL_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
