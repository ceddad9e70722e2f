"""The SQLite store's vector search (bfsql.vectors): sign-bit candidates, exact rescoring, against exact search.

Exact search here is the definition the backend keeps: the cosine of the query with every
stored vector of the wanted types (float64, rounded to six decimals), best first, ties by id.
Candidate limits are lowered in the recall tests, so that a few thousand vectors go through both
steps (first word, then every bit) as millions do at the defaults.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pytest

from bfsql import vectors
from bfsql.backend import opening_for_one_call
from bfsql.backends.sqlite import SqliteBackend
from bfsql.demo import famplex_records
from bfsql.embedders import HashingEmbedder
from bfsql.loading.sqlite_loader import load_records, load_sqlite, reembed_store
from bfsql.vectors import cosines, open_vectors


class TableEmbedder:
    """Vectors given in advance, by text: stands for a model whose vectors the test draws."""

    semantic = True
    min_similarity = 0.0

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.table = vectors
        self.name = "table"
        self.dimension = len(next(iter(vectors.values())))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]


def unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def planted(queries: int, background: int, dimension: int, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray]:
    """Query vectors, and random unit vectors among which each query has ten neighbours at cosines 0.9 to 0.45.

    The neighbours stand for names related to a query: apart from them, random vectors in 256
    dimensions are all about as far from a query (cosine 0 +- 0.06), and which of them exact
    search ranks tenth is chance.
    """
    found = unit(rng.standard_normal((queries, dimension)))
    rows = [unit(rng.standard_normal((background, dimension)))]
    for query in found:
        for cosine in np.linspace(0.9, 0.45, 10):
            away = rng.standard_normal(dimension)
            away = unit(away - (away @ query) * query)
            rows.append((cosine * query + np.sqrt(1 - cosine**2) * away)[None])
    return found, np.concatenate(rows)


def write_bundle(path: Path, names: list[str], types: list[str]) -> Path:
    rows = [{"kind": "entity", "id": f"e:{i:05d}", "entity_type": t, "name": n}
            for i, (n, t) in enumerate(zip(names, types, strict=True))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def exact(db: Path, query: np.ndarray, node_types: list[str] | None, limit: int) -> list[tuple[str, float]]:
    """(id, score) of the exact search over every stored vector, by the definition above."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT v.entity_id, e.entity_type, v.vector FROM entity_vector v JOIN entity e USING (entity_id) "
            "WHERE e.status IS NOT 'merged'"
        ).fetchall()
        dimension = int(conn.execute("SELECT value FROM meta WHERE key = 'embedder_dimension'").fetchone()[0])
    rows = [row for row in rows if node_types is None or row[1] in node_types]
    unit = np.asarray(query, dtype=np.float64) / np.linalg.norm(query)
    scores = cosines([row[2] for row in rows], unit, dimension).tolist()
    return sorted(((row[0], s) for row, s in zip(rows, scores, strict=True)), key=lambda hit: (-hit[1], hit[0]))[
        :limit]


async def found(backend: SqliteBackend, query: np.ndarray, node_types: list[str] | None, limit: int
                ) -> list[tuple[str, float]]:
    return [(s.id, s.score) for s in await backend.vector_search(query.tolist(), node_types, limit)]


def recall(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> float:
    return len({i for i, _ in got} & {i for i, _ in want}) / len(want)


@pytest.fixture
def few_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate limits far lower: 5 rescored (or 4 a hit), 8 kept by the first step each."""
    monkeypatch.setattr(vectors, "RESCORED", 5)
    monkeypatch.setattr(vectors, "PREFIX_SURVIVORS", 8)


def planted_store(tmp_path: Path, rng: np.random.Generator, dimension: int) -> tuple[Path, np.ndarray]:
    """A store of 3,600 random vectors of three types and 40 queries' planted neighbours, all of type Disease."""
    queries, table = planted(40, 3600, dimension, rng)
    names = [f"n{i}" for i in range(len(table))]
    types = [*rng.choice(["Gene", "Protein", "Disease"], 3600, p=[0.5, 0.4, 0.1]).tolist(), *["Disease"] * 400]
    db = tmp_path / "r.sqlite"
    load_sqlite(db, [write_bundle(tmp_path / "r.jsonl", names, types)],
                embedder=TableEmbedder(dict(zip(names, table, strict=True))))
    return db, queries


async def test_recall_on_random_vectors_against_exact_search(tmp_path: Path, few_candidates: None) -> None:
    db, queries = planted_store(tmp_path, np.random.default_rng(11), 256)
    backend = SqliteBackend(db)
    try:
        at_10 = [recall(await found(backend, q, None, 10), exact(db, q, None, 10)) for q in queries]
        typed = [recall(await found(backend, q, ["Disease"], 10), exact(db, q, ["Disease"], 10)) for q in queries]
    finally:
        await backend.aclose()
    # 40 of 4,000 vectors scored exactly: the 160 nearest by every bit of the 320 nearest by the first 128 bits,
    # ranked by the query's components
    assert np.mean(at_10) >= 0.95 and np.mean(typed) >= 0.95


async def test_scores_are_the_exact_cosines_of_the_stored_vectors(tmp_path: Path, few_candidates: None) -> None:
    db, queries = planted_store(tmp_path, np.random.default_rng(5), 96)  # 96: two code words, half of one empty
    backend = SqliteBackend(db)
    try:
        for query in queries[:20]:
            got, want = await found(backend, query, None, 10), dict(exact(db, query, None, 4000))
            assert all(score == want[i] for i, score in got)
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    finally:
        await backend.aclose()


def famplex_store(tmp_path: Path) -> Path:
    db = tmp_path / "famplex.sqlite"
    load_records(db, famplex_records(), embedder="hashing")
    return db


def typo(text: str, rng: random.Random) -> str:
    if len(text) < 4:
        return text + "s"
    at = rng.randrange(1, len(text) - 2)
    return text[:at] + text[at + 1] + text[at] + text[at + 2 :]


async def test_recall_on_real_names_embedded_with_the_hashing_embedder(tmp_path: Path, few_candidates: None) -> None:
    db = famplex_store(tmp_path)
    with sqlite3.connect(db) as conn:
        names = [row[0] for row in conn.execute("SELECT text FROM entity_vector ORDER BY entity_id")]
        types = [row[0] for row in conn.execute("SELECT DISTINCT entity_type FROM entity ORDER BY 1")]
    rng = random.Random(3)
    texts = [typo(rng.choice(names), rng) for _ in range(40)] + [rng.choice(names).split()[0] for _ in range(40)]
    embedded = np.asarray(await HashingEmbedder().embed(texts))
    backend = SqliteBackend(db)
    try:
        at_10 = [recall(await found(backend, q, None, 10), exact(db, q, None, 10)) for q in embedded]
        typed = [recall(await found(backend, q, types[:1], 10), exact(db, q, types[:1], 10)) for q in embedded]
    finally:
        await backend.aclose()
    assert len(names) > 1000 and np.mean(at_10) >= 0.95 and np.mean(typed) >= 0.95


async def test_node_types_filter_and_equal_vectors_tie_by_id(tmp_path: Path) -> None:
    names = ["kinase", "kinase", "kinase", "protein kinase", "kinases", "phosphatase"]
    types = ["Gene", "Family", "Gene", "Gene", "Family", "Gene"]
    db = tmp_path / "t.sqlite"
    rows = [{"kind": "entity", "id": i, "entity_type": t, "name": n}
            for i, n, t in zip(["z", "m", "a", "b", "c", "d"], names, types, strict=True)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    load_sqlite(db, [tmp_path / "t.jsonl"], embedder="hashing")
    (query,) = await HashingEmbedder().embed(["kinase"])
    backend = SqliteBackend(db)
    try:
        hits = await backend.vector_search(query, None, 4)
        assert [h.id for h in hits][:3] == ["a", "m", "z"] and hits[0].score == hits[2].score == 1.0
        genes = await backend.vector_search(query, ["Gene"], 10)
        assert [h.id for h in genes][:2] == ["a", "z"] and {h.entity_type for h in genes} == {"Gene"}
        assert [h.id for h in await backend.vector_search(query, ["Family"], 10)][:1] == ["m"]
        assert await backend.vector_search(query, ["Nothing"], 10) == []
        assert await backend.vector_search(query, [], 10) == []
        assert await backend.vector_search([0.0] * len(query), None, 10) == []
    finally:
        await backend.aclose()


def strip_saved_codes(db: Path) -> None:
    """Make ``db`` a store as an older bfsql wrote it: vectors without their saved codes."""
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE vector_row")
        conn.execute("DROP TABLE vector_part")
        conn.execute("DELETE FROM meta WHERE key = 'vectors'")


async def test_a_store_without_saved_codes_builds_them_and_answers_the_same(tmp_path: Path) -> None:
    db = famplex_store(tmp_path)
    rng = random.Random(9)
    with sqlite3.connect(db) as conn:
        names = [row[0] for row in conn.execute("SELECT text FROM entity_vector")]
    embedded = await HashingEmbedder().embed([typo(rng.choice(names), rng) for _ in range(20)])
    answers = []
    for strip in (False, True):
        if strip:
            strip_saved_codes(db)
        backend = SqliteBackend(db)
        try:
            answers.append([await backend.vector_search(q, ["Family"], 20) for q in embedded])
            assert isinstance(backend._vectors.rows, vectors._HeldRows) == strip  # type: ignore[union-attr]
        finally:
            await backend.aclose()
    assert answers[0] == answers[1]
    assert reembed_store(db, "hashing").embedded == 0  # the store's own embedder: nothing embedded, codes saved
    with sqlite3.connect(db) as conn:
        assert isinstance(open_vectors(conn, 512).rows, vectors._StoredRows)


async def test_a_served_store_reads_its_codes_before_the_first_search_and_one_call_at_it(tmp_path: Path) -> None:
    """Served, the codes are read in the background at open: the first search neither waits for them nor grows the
    server under its clock. Opened for one call (``bfsql query``), a store reads them only if the call searches."""
    db = famplex_store(tmp_path)
    backend = SqliteBackend(db)
    try:
        for _ in range(200):
            if backend._vectors is not None:
                break
            await asyncio.sleep(0.05)
        assert backend._vectors is not None and len(backend._vectors) > 1000
    finally:
        await backend.aclose()
    with opening_for_one_call():
        once = SqliteBackend(db)
    try:
        await asyncio.sleep(0.5)
        assert once._vectors is None
        (query,) = await HashingEmbedder().embed(["RAF"])
        assert await once.vector_search(query, None, 3) and once._vectors is not None
    finally:
        await once.aclose()


def test_the_codes_take_a_bit_a_dimension_in_memory(tmp_path: Path) -> None:
    db = famplex_store(tmp_path)
    with sqlite3.connect(db) as conn:
        saved = open_vectors(conn, 512)
        count = conn.execute("SELECT COUNT(*) FROM entity_vector").fetchone()[0]
    assert len(saved) == count > 1000
    assert saved.words.nbytes == 64 * count  # 512 bits
    assert saved.nbytes() <= 64 * count + 8 * (len(saved.types) + 1)  # and nothing an entity beside them
    strip_saved_codes(db)
    with sqlite3.connect(db) as conn:
        held = open_vectors(conn, 512)
    assert held.nbytes() - saved.nbytes() < 40 * count  # ids held as one UTF-8 blob and their offsets


def test_reloads_save_the_codes_again_and_dropping_the_vectors_drops_them(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    names = ["alpha", "beta", "gamma"]
    source = write_bundle(tmp_path / "d.jsonl", names, ["T", "U", "T"])
    load_sqlite(db, [source], embedder="hashing")
    more = write_bundle(tmp_path / "e.jsonl", [*names, "delta"], ["T", "U", "T", "V"])
    load_sqlite(db, [more])
    with sqlite3.connect(db) as conn:
        index = open_vectors(conn, 512)
        assert (len(index), index.types) == (4, ["T", "U", "V"])
        assert conn.execute("SELECT entity_id FROM vector_row ORDER BY row").fetchall() == [
            ("e:00000",), ("e:00002",), ("e:00001",), ("e:00003",)]
    load_sqlite(db, [more], embedder=None)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vector_row").fetchone()[0] == 0
        assert conn.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone() is None


def test_damaged_codes_are_built_again_from_the_vectors(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "d.sqlite"
    load_sqlite(db, [write_bundle(tmp_path / "d.jsonl", ["alpha", "beta"], ["T", "T"])], embedder="hashing")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE vector_part SET data = zeroblob(length(data)) WHERE name = 'words'")
    with sqlite3.connect(db) as conn:
        index = open_vectors(conn, 512)
    assert isinstance(index.rows, vectors._HeldRows) and "damaged" in caplog.text


def as_version_1(db: Path) -> None:
    """Rewrite ``db``'s saved codes as bfsql saved them before rows of words (version 1): the words a column at a
    time (``words[w, row]``), ``vector_row`` without the vectors, the same checksum over the blobs."""
    with sqlite3.connect(db) as conn:
        stamp = conn.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone()[0].split(":")
        rows, width = int(stamp[1]), int(stamp[2])
        blobs = {name: b"".join(data for (data,) in conn.execute(
            "SELECT data FROM vector_part WHERE name = ? ORDER BY part", (name,))) for name in ("type_rows", "types")}
        saved = b"".join(data for (data,) in conn.execute("SELECT data FROM vector_part WHERE name = 'words' "
                                                          "ORDER BY part"))
        blobs["words"] = np.frombuffer(saved, dtype="<u8").reshape(rows, width).T.copy().tobytes()
        checksum = 0
        for name, blob in sorted(blobs.items()):
            checksum = zlib.crc32(blob, zlib.crc32(name.encode(), checksum))
        conn.execute("DELETE FROM vector_part")
        conn.executemany("INSERT INTO vector_part (name, part, data) VALUES (?, 0, ?)", blobs.items())
        conn.execute("ALTER TABLE vector_row DROP COLUMN vector")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'vectors'", (f"1:{rows}:{width}:{stamp[3]}:{checksum}",))


async def test_a_store_saved_by_the_previous_version_is_read_as_it_is_and_answers_the_same(tmp_path: Path) -> None:
    db, queries = planted_store(tmp_path, np.random.default_rng(7), 256)
    answers, kinds = [], []
    for old in (False, True):
        if old:
            as_version_1(db)
        backend = SqliteBackend(db)
        try:
            answers.append([await backend.vector_search(q.tolist(), types, 10)
                            for q in queries[:10] for types in (None, ["Gene"])])
            kinds.append(type(backend._vectors.rows))  # type: ignore[union-attr]
        finally:
            await backend.aclose()
    assert answers[0] == answers[1] and all(len(hits) == 10 for hits in answers[0])
    assert kinds == [vectors._StoredRows, vectors._JoinedRows]  # read, not built again


def test_loading_a_store_of_the_previous_version_again_saves_this_one(tmp_path: Path) -> None:
    db = famplex_store(tmp_path)
    as_version_1(db)
    with sqlite3.connect(db) as conn:
        assert isinstance(open_vectors(conn, 512).rows, vectors._JoinedRows)
    assert reembed_store(db, "hashing").embedded == 0
    with sqlite3.connect(db) as conn:
        assert isinstance(open_vectors(conn, 512).rows, vectors._StoredRows)
        assert conn.execute("SELECT COUNT(*) FROM vector_row WHERE vector IS NULL").fetchone()[0] == 0


def test_each_row_keeps_its_entity_and_a_copy_of_its_vector_in_row_order(tmp_path: Path) -> None:
    db, _ = planted_store(tmp_path, np.random.default_rng(3), 256)
    with sqlite3.connect(db) as conn:
        index = open_vectors(conn, 256)
        stored = conn.execute("SELECT r.row, r.vector = v.vector, e.entity_type FROM vector_row r "
                              "JOIN entity_vector v USING (entity_id) JOIN entity e USING (entity_id) ORDER BY r.row"
                              ).fetchall()
    assert [row for row, _, _ in stored] == list(range(len(index))) and all(same for _, same, _ in stored)
    bounds = index.type_rows.tolist()
    assert [kind for _, _, kind in stored] == [t for i, t in enumerate(index.types)
                                               for _ in range(bounds[i], bounds[i + 1])]
    # a row of words an entity (one cache line); the first step reads each row's first two words in place
    assert index.words.shape == (len(index), 4) and index.words.flags.c_contiguous
    assert np.array_equal(index.prefix, index.words[:, :2].T) and np.shares_memory(index.prefix, index.words)
    assert index.nbytes() == 32 * len(index) + index.type_rows.nbytes


def test_from_millions_of_rows_the_first_step_reads_a_copy_of_the_first_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "PREFIX_COPY_ROWS", 1000)  # stands for 2M
    db, _ = planted_store(tmp_path, np.random.default_rng(3), 256)
    with sqlite3.connect(db) as conn:
        index = open_vectors(conn, 256)
    assert np.array_equal(index.prefix, index.words[:, :2].T) and index.prefix.flags.c_contiguous
    assert not np.shares_memory(index.prefix, index.words)  # a contiguous array a word: 16 bytes a row more
    assert index.nbytes() == 48 * len(index) + index.type_rows.nbytes


@pytest.mark.parametrize("damage", [
    "UPDATE vector_part SET data = zeroblob(length(data)) WHERE name = 'words'",
    "UPDATE vector_part SET data = substr(data, 1, length(data) - 8) WHERE name = 'type_rows'",
    "UPDATE vector_part SET data = 'text' WHERE name = 'types'",
    "DELETE FROM vector_row WHERE row = (SELECT MAX(row) FROM vector_row)",
])
@pytest.mark.parametrize("old", [False, True])
def test_damaged_codes_of_either_version_are_detected_and_built_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str, old: bool
) -> None:
    db = tmp_path / "d.sqlite"
    load_sqlite(db, [write_bundle(tmp_path / "d.jsonl", ["alpha", "beta", "gamma"], ["T", "T", "U"])],
                embedder="hashing")
    if old:
        as_version_1(db)
    with sqlite3.connect(db) as conn:
        conn.execute(damage)
    with sqlite3.connect(db) as conn:
        index = open_vectors(conn, 512)
    assert isinstance(index.rows, vectors._HeldRows) and "damaged" in caplog.text
    assert len(index) == 3 and index.types == ["T", "U"]


def test_the_first_step_split_among_threads_keeps_the_same_rows_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    vectors_ = rng.standard_normal((50_000, 256))
    vectors_[17] = vectors_[16] + 0.01 * rng.standard_normal(256)
    query = vectors_[16] / np.linalg.norm(vectors_[16])
    words = vectors.sign_codes(vectors_)
    ranges = [(0, 12_345), (20_000, 20_001), (30_000, 50_000)]
    monkeypatch.setattr(vectors, "RESCORED", 20)
    monkeypatch.setattr(vectors, "PREFIX_SURVIVORS", 16)
    found = {}
    for threads in (1, 3):
        monkeypatch.setattr(vectors, "THREADS", threads)
        monkeypatch.setattr(vectors, "SPLIT_ROWS", 1000)
        found[threads] = vectors.candidates(words, query, ranges, 20, False, np.ascontiguousarray(words[:, :2].T))
    assert np.array_equal(found[1], found[3]) and {16, 17} <= set(found[1].tolist())
    assert all(any(start <= row < end for start, end in ranges) for row in found[1].tolist())
    pieces = vectors._split(ranges, 3)
    rows = [row for piece in pieces for start, end in piece for row in range(start, end)]
    assert len(pieces) == 3 and rows == [row for start, end in ranges for row in range(start, end)]
    assert max(sum(end - start for start, end in piece) for piece in pieces) == -(-len(rows) // 3)


def test_the_third_step_ranks_rows_by_the_query_components_their_bits_set() -> None:
    rng = np.random.default_rng(8)
    query = rng.standard_normal(96)  # two code words, half of the second empty
    words = vectors.sign_codes(rng.standard_normal((300, 96)))
    bits = np.unpackbits(words.view(np.uint8), axis=1)[:, :96]  # component i is bit i, first in a byte's highest
    assert np.allclose(vectors._component_sums(words, query), bits @ query, atol=1e-4)
    signs = 2.0 * bits - 1.0  # so they order rows as the dot product with each row's vector of signs does
    assert np.allclose(2 * vectors._component_sums(words, query) - query.sum(), signs @ query, atol=1e-4)
