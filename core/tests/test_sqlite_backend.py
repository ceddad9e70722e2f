"""The sqlite backend: hand-worked answers, parity with the memory backend, search, read-only."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from bfsql import Edge, EntityStub, Graph, Node, NodeInfo
from bfsql.backends.memory import MemoryBackend
from bfsql.backends.sqlite import READERS, SqliteBackend, SqliteConfig, SqliteStoreError, fts_query
from bfsql.csr import CsrIndex
from bfsql.loading.sqlite_loader import load_sqlite
from bfsql.plugins import get_backends

# A hand-made graph. M is merged: it and every edge touching it are invisible.
# "A regulates GHOST" is dangling (GHOST is no entity) and is kept.
# The second "A associated_with B" line replaces the first (confidence 0.5 -> 0.7).
BUNDLE: list[dict[str, Any]] = [
    {
        "kind": "entity",
        "id": "A",
        "entity_type": "Gene",
        "name": "BRCA1",
        "synonyms": ["breast cancer 1", "RNF53"],
        "properties": {"chromosome": "17q21", "name": "loses to the standard field"},
        "confidence": 0.9,
        "source": "hgnc",
        "canonical_url": "https://example.org/A",
    },
    {"kind": "entity", "id": "B", "entity_type": "Disease", "name": "Breast cancer", "synonyms": ["mammary carcinoma"]},
    {"kind": "entity", "id": "C", "entity_type": "Drug", "name": "Olaparib"},
    {"kind": "entity", "id": "D", "entity_type": "Gene", "name": "BRCA2", "status": "canonical"},
    {"kind": "entity", "id": "M", "entity_type": "Obsolete", "name": "BRCA1 (old)", "status": "merged"},
    {"kind": "entity", "id": "Q", "entity_type": "Gene"},
    {"kind": "relationship", "subject": "A", "predicate": "associated_with", "object": "B", "confidence": 0.5},
    {"kind": "relationship", "subject": "C", "predicate": "treats", "object": "B", "source_documents": ["PMID:9"]},
    {"kind": "relationship", "subject": "A", "predicate": "interacts_with", "object": "D"},
    {"kind": "relationship", "subject": "M", "predicate": "interacts_with", "object": "D"},
    {"kind": "relationship", "subject": "D", "predicate": "interacts_with", "object": "M"},
    {"kind": "relationship", "subject": "A", "predicate": "regulates", "object": "GHOST"},
    {"kind": "relationship", "subject": "A", "predicate": "regulates", "object": "A"},
    {
        "kind": "relationship",
        "subject": "A",
        "predicate": "associated_with",
        "object": "B",
        "confidence": 0.7,
        "source_documents": ["PMID:1", "PMID:2"],
        "properties": {"method": "GWAS"},
    },
    {
        "kind": "evidence",
        "subject": "A",
        "predicate": "associated_with",
        "object": "B",
        "text_span": "BRCA1 mutations raise breast cancer risk",
        "confidence": 0.95,
        "document_id": "PMID:2",
        "section": "abstract",
    },
    {
        "kind": "evidence",
        "subject": "A",
        "predicate": "associated_with",
        "object": "B",
        "text_span": "carriers of BRCA1 variants",
        "document_id": "PMID:1",
    },
    {"kind": "evidence", "subject": "C", "predicate": "treats", "object": "B", "text_span": "olaparib for BRCA+"},
    {"kind": "evidence", "subject": "X", "predicate": "no", "object": "Y", "text_span": "evidence without edge"},
]

ALL_IDS = ["A", "B", "C", "D", "M", "Q", "GHOST", "nope", "A"]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


async def _indexed(db: Path, source: Path) -> tuple[SqliteBackend, CsrIndex]:
    """A store loaded from ``source``, served once its array index is read, and that index."""
    load_sqlite(db, [source])
    backend = SqliteBackend(db)
    assert await backend.wait_for_index(30)
    assert backend._csr is not None
    return backend, backend._csr


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "graph.jsonl", BUNDLE)


@pytest.fixture(params=["index", "sql"])
async def backend(request: pytest.FixtureRequest, bundle: Path, tmp_path: Path):
    """The store with its hop index built, and without one (hops from SQL)."""
    db = tmp_path / "graph.sqlite"
    load_sqlite(db, [bundle], description="A small test graph.")
    sqlite_backend = SqliteBackend(db, memory_index=0 if request.param == "sql" else 1000)
    assert await sqlite_backend.wait_for_index(0 if request.param == "sql" else 30) is (request.param == "index")
    yield sqlite_backend
    await sqlite_backend.aclose()


@pytest.fixture
def graph(backend: SqliteBackend) -> Graph:
    """The single-id calls of seed 000 (``get_node``, ``edges_from`` …), derived from the batch primitives."""
    return Graph(backend, plugins=[], cache=None)


def edge(s: str, p: str, o: str) -> Edge:
    return Edge(s, p, o)


# -- hand-worked answers ---------------------------------------------------------


@pytest.mark.asyncio
async def test_edges_by_hand(graph: Graph) -> None:
    assert await graph.edges_from("A") == [
        edge("A", "associated_with", "B"),
        edge("A", "interacts_with", "D"),
        edge("A", "regulates", "A"),
        edge("A", "regulates", "GHOST"),
    ]
    assert await graph.edges_to("A") == [edge("A", "regulates", "A")]
    assert await graph.edges_to("B") == [edge("A", "associated_with", "B"), edge("C", "treats", "B")]
    assert await graph.edges_to("D") == [edge("A", "interacts_with", "D")]
    assert await graph.edges_from("D") == []
    assert await graph.edges_from("Q") == []


@pytest.mark.asyncio
@pytest.mark.parametrize("missing", ["M", "GHOST", "nope", ""])
async def test_missing_and_merged_raise_key_error(graph: Graph, missing: str) -> None:
    for primitive in (graph.edges_from, graph.edges_to, graph.get_node, graph.metadata_for_node):
        with pytest.raises(KeyError):
            await primitive(missing)


@pytest.mark.asyncio
async def test_nodes_and_metadata_by_hand(graph: Graph) -> None:
    assert await graph.get_node("A") == Node(id="A", entity_type="Gene")
    assert await graph.metadata_for_node("A") == {
        "chromosome": "17q21",
        "name": "BRCA1",
        "synonyms": ["breast cancer 1", "RNF53"],
        "source": "hgnc",
        "canonical_url": "https://example.org/A",
        "confidence": 0.9,
    }
    assert await graph.metadata_for_node("Q") == {}
    assert await graph.metadata_for_node("D") == {"name": "BRCA2", "status": "canonical"}


@pytest.mark.asyncio
async def test_edge_metadata_by_hand(graph: Graph) -> None:
    assert await graph.metadata_for_edge(edge("A", "associated_with", "B")) == {
        "method": "GWAS",
        "confidence": 0.7,
        "source_documents": ["PMID:1", "PMID:2"],
        "provenance": [
            {"text_span": "carriers of BRCA1 variants", "document_id": "PMID:1"},
            {
                "text_span": "BRCA1 mutations raise breast cancer risk",
                "confidence": 0.95,
                "document_id": "PMID:2",
                "section": "abstract",
            },
        ],
    }
    assert await graph.metadata_for_edge(edge("A", "regulates", "GHOST")) == {"source_documents": []}
    assert await graph.metadata_for_edge(edge("X", "no", "Y")) == {}
    assert await graph.metadata_for_edge(edge("A", "nope", "B")) == {}


@pytest.mark.asyncio
async def test_schema_by_hand(backend: SqliteBackend) -> None:
    assert await backend.entity_types() == ["Disease", "Drug", "Gene"]
    assert await backend.predicates() == ["associated_with", "interacts_with", "regulates", "treats"]
    assert await backend.graph_description() == "A small test graph."
    assert backend.capabilities.batch_primitives and backend.capabilities.provenance


async def test_types_and_predicates_come_from_the_index(bundle: Path, tmp_path: Path, monkeypatch) -> None:
    """With the array index read, the schema lists are its own (the same lists): the predicates' SQL reads every
    relationship, which took seconds before the first answer on a store of millions."""
    db = tmp_path / "graph.sqlite"
    load_sqlite(db, [bundle])
    backend = SqliteBackend(db)
    assert await backend.wait_for_index(30)

    def no_sql(_self: SqliteBackend, sql: str) -> list[str]:
        raise AssertionError(f"queried the store: {sql}")

    monkeypatch.setattr(SqliteBackend, "_distinct", no_sql)
    assert await backend.entity_types() == ["Disease", "Drug", "Gene"]
    assert await backend.predicates() == ["associated_with", "interacts_with", "regulates", "treats"]
    await backend.aclose()


@pytest.mark.asyncio
async def test_a_hop_in_pieces_answers_as_in_one(tmp_path: Path, monkeypatch) -> None:
    """A walk's or an intersection's hop handles its rows a piece at a time (a hub's hop meets millions of rows,
    each costing memory while handled): any piece size gives the same answer, hub caps, dangling ends and
    excluded types included."""
    from bfsql import csr

    rng = random.Random(25)
    types = ["Gene", "Disease", "Drug"]
    rows: list[dict[str, Any]] = [
        {"kind": "entity", "id": f"E{i}", "entity_type": types[i % 3], "name": f"entity {i}"} for i in range(120)
    ]
    ends = [f"E{i}" for i in range(120)] + ["GHOST1", "GHOST2"]
    for _ in range(900):
        subject = "E0" if rng.random() < 0.2 else rng.choice(ends)  # E0: a hub
        rows.append({"kind": "relationship", "subject": subject, "predicate": rng.choice(["a", "b"]),
                     "object": rng.choice(ends)})
    backend, index = await _indexed(tmp_path / "random.sqlite", write_jsonl(tmp_path / "random.jsonl", rows))
    monkeypatch.setattr(csr, "SMALL_HOP_ROWS", 0)  # every hop of a walk with numpy, in pieces
    cases = [(seeds, k, cap, excluded)
             for seeds in (["E0", "E5"], ["E7", "E8", "E9"], ["E1", "E0"])
             for k in (1, 2, 3) for cap in (1000, 15) for excluded in ([], ["Drug"])]
    whole = [csr.overlap(index, seeds, k, cap, excluded, 50, 10, 30) for seeds, k, cap, excluded in cases]
    assert any(answer.capped for answer in whole)
    assert any(answer.dangling_edges for answer in whole) and any(answer.node_count > 5 for answer in whole)
    walks = [csr.survey(index, seeds, k, cap, excluded, 3, 40) for seeds, k, cap, excluded in cases]
    assert any(walk.dangling_edges for walk in walks) and any(walk.node_count > 40 for walk in walks)
    for rows_at_once in (1, 7):
        monkeypatch.setattr(csr, "OVERLAP_ROWS", rows_at_once)
        monkeypatch.setattr(csr, "WALK_ROWS", rows_at_once)
        assert [csr.overlap(index, seeds, k, cap, excluded, 50, 10, 30) for seeds, k, cap, excluded in cases] == whole
        assert [csr.survey(index, seeds, k, cap, excluded, 3, 40) for seeds, k, cap, excluded in cases] == walks
    await backend.aclose()


@pytest.mark.asyncio
async def test_a_few_ids_are_found_as_many_are(tmp_path: Path) -> None:
    """The array index finds a few ids by a binary search over the ids (in code-point order, as their UTF-8 bytes
    are) and many by their hashes: both find the same entities and dangling ends, and leave out the rest."""
    from bfsql import csr

    names = ["E1", "E10", "E1 ", "e1", "Gène", "Gene", "日本", "𝔘nicode", "Z", "A:1", "A:10", "A:2"]
    rows: list[dict[str, Any]] = [{"kind": "entity", "id": i, "entity_type": "Gene"} for i in names]
    rows += [{"kind": "relationship", "subject": a, "predicate": "r", "object": b}
             for a, b in zip(names, [*names[1:], "GHOST"], strict=True)]
    backend, index = await _indexed(tmp_path / "ids.sqlite", write_jsonl(tmp_path / "ids.jsonl", rows))
    asked = [*names, "GHOST", "E", "E100", "", "\uffff", "zz", "A:", "Gènes"]
    many = index.find(asked * (csr.FEW_IDS // len(asked) + 1))
    assert set(many) == {*names, "GHOST"}
    assert {i: index.find([i]).get(i) for i in asked} == {i: many.get(i) for i in asked}
    assert [index.ids[many[i]] for i in names] == names
    await backend.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("small_rows", [0, 4, 12, 40])
async def test_a_walk_answers_as_the_hop_walk_whichever_of_its_hops_are_small(
    tmp_path: Path, monkeypatch, small_rows: int
) -> None:
    """A walk's hops of at most SMALL_HOP_ROWS rows run on Python sets, the first bigger one and every later one with
    numpy: with thresholds that make the switch fall at every hop (and never, and at once), bfs_query answers as
    the engine's hop walk on random graphs (hubs, self-loops, dangling and merged ends, cuts, excluded types)."""
    from bfsql import csr
    from bfsql.loading.records import EntityRecord
    from bfsql.loading.sqlite_loader import load_records
    from bfsql.testing.conformance import _compare_walks
    from bfsql.testing.random_graphs import TYPES, random_records

    monkeypatch.setattr(csr, "SMALL_HOP_ROWS", small_rows)
    switched_after: list[int] = []  # per walk handed to numpy: the hops it had walked in Python
    in_python = 0  # walks wholly in Python
    numpy_walk, python_answer = csr._walk, csr._SmallWalk.survey

    def handed(index, visited, levels, *rest):
        switched_after.append(len(levels) - 1)
        return numpy_walk(index, visited, levels, *rest)

    def answered(walk, *arguments):
        nonlocal in_python
        in_python += 1
        return python_answer(walk, *arguments)

    monkeypatch.setattr(csr, "_walk", handed)
    monkeypatch.setattr(csr._SmallWalk, "survey", answered)
    for number in range(8):
        rng = random.Random(number)
        records = random_records(rng, entities=50, edges=200)
        db = tmp_path / f"random-{number}.db"
        load_records(db, records, embedder="none")
        backend = SqliteBackend(db)
        assert await backend.wait_for_index(30)
        try:
            ids = [r.id for r in records if isinstance(r, EntityRecord)]
            await _compare_walks(backend, rng.sample(ids, k=4), list(TYPES[:1]), rng)
        finally:
            await backend.aclose()
    if small_rows == 0:
        assert set(switched_after) == {0}  # every walk that meets a row with numpy from its seeds
    else:
        assert in_python and max(switched_after) >= 1  # some walks wholly in Python, some switching midway


@pytest.mark.asyncio
async def test_a_numpy_walk_counts_each_edge_once_and_lists_every_page_as_python_sets_do(
    tmp_path: Path, monkeypatch
) -> None:
    """The numpy walk counts an edge met from both ends once, from one end (hubs' caps decide which ends meet
    it), and finds a page's edges from the listed nodes' rows: on random graphs with caps of 1 to 5 rows, every
    survey, at pages from the first to past the last, equals the walk on Python sets (which holds its edges)."""
    from bfsql import csr
    from bfsql.loading.sqlite_loader import load_records
    from bfsql.testing.random_graphs import TYPES, random_records

    for number in range(6):
        rng = random.Random(500 + number)
        db = tmp_path / f"random-{number}.db"
        load_records(db, random_records(rng, entities=80, edges=800), embedder="none")
        backend = SqliteBackend(db)
        assert await backend.wait_for_index(30)
        index = await backend._walk_index()
        ids = [index.ids[i] for i in range(len(index.ids))]
        for _ in range(12):
            seeds, hops, cap = rng.sample(ids, rng.choice([1, 3])), rng.choice([1, 2, 3]), rng.choice([1, 2, 5, 100])
            excluded = [rng.choice(TYPES)] if rng.random() < 0.3 else []
            for offset, count in [(0, 1000), (0, 4), (5, 9), (rng.randrange(80), 20), (1000, 5), (0, 0)]:
                arguments = (index, seeds, hops, cap, excluded, offset, count)
                monkeypatch.setattr(csr, "SMALL_HOP_ROWS", 10**9)
                in_python = csr.survey(*arguments)
                monkeypatch.setattr(csr, "SMALL_HOP_ROWS", rng.choice([0, 5]))
                assert csr.survey(*arguments) == in_python, arguments[1:]
        assert all(not marks.any() for marks in index.spare_marks)
        await backend.aclose()


@pytest.mark.asyncio
async def test_an_intersection_in_the_store_asks_no_hop(bundle: Path, tmp_path: Path, monkeypatch) -> None:
    """With the store's own intersection walk the seeds are checked by get_nodes, not hop: a seed's hop brings
    every edge it has (a million for a mega-hub, which ran an intersection past its 60 s timeout)."""
    from bfsql.engine.intersect import intersect_subgraphs
    from bfsql.errors import UnknownEntity

    db = tmp_path / "graph.sqlite"
    load_sqlite(db, [bundle])
    backend = SqliteBackend(db)
    assert await backend.wait_for_index(30)
    graph = Graph(backend, plugins=[], cache=None)
    assert graph.walks_in_store("intersect")
    expected = await intersect_subgraphs(graph, ["A", "C"], 2, topology_only=True)
    assert expected.node_ids

    async def no_hop(_self: SqliteBackend, entity_ids: list[str]) -> Any:
        raise AssertionError(f"hop asked for {entity_ids}")

    monkeypatch.setattr(SqliteBackend, "hop", no_hop)
    assert await intersect_subgraphs(graph, ["A", "C"], 2, topology_only=True) == expected
    with pytest.raises(UnknownEntity):
        await intersect_subgraphs(graph, ["A", "M"], 2, topology_only=True)  # M is merged: not an entity
    await backend.aclose()


# -- parity with the memory backend ---------------------------------------------


@pytest.mark.asyncio
async def test_answers_equal_memory_backend(graph: Graph, bundle: Path) -> None:
    memory = Graph(MemoryBackend.from_bundle(bundle), plugins=[], cache=None)
    for entity_id in dict.fromkeys(ALL_IDS):
        for name in ("edges_from", "edges_to", "get_node", "metadata_for_node"):
            expected: Any
            try:
                expected = await getattr(memory, name)(entity_id)
            except KeyError:
                expected = KeyError
            try:
                got: Any = await getattr(graph, name)(entity_id)
            except KeyError:
                got = KeyError
            assert got == expected, (name, entity_id)
            if isinstance(got, dict):
                assert list(got) == list(expected), (name, entity_id)
    edges = [edge(r["subject"], r["predicate"], r["object"]) for r in BUNDLE if "subject" in r]
    edges.append(edge("A", "nope", "B"))
    for one in edges:
        got_meta = await graph.metadata_for_edge(one)
        assert got_meta == await memory.metadata_for_edge(one)
        assert json.dumps(got_meta) == json.dumps(await memory.metadata_for_edge(one))
    assert await graph.entity_types() == await memory.entity_types()
    assert await graph.predicates() == await memory.predicates()
    for name, keys in (
        ("get_nodes", ALL_IDS),
        ("hop", ALL_IDS),
        ("metadata_for_nodes", ALL_IDS),
        ("provenance_for_edges", [*edges, edges[0]]),
    ):
        got_many = await getattr(graph, name)(keys)
        expected_many = await getattr(memory, name)(keys)
        if name == "hop":
            got_many = {i: (there.node, sorted(map(tuple, there.edges))) for i, there in got_many.items()}
            expected_many = {i: (there.node, sorted(map(tuple, there.edges))) for i, there in expected_many.items()}
        assert got_many == expected_many, name
        assert await getattr(graph, name)([]) == {}
    got_edges = await graph.metadata_for_edges(edges)
    expected_edges = await memory.metadata_for_edges(edges)
    assert {e: m for e, m in got_edges.items() if m} == {e: m for e, m in expected_edges.items() if m}


@pytest.mark.asyncio
async def test_batches_are_set_based(bundle: Path, tmp_path: Path) -> None:
    db = tmp_path / "sql.sqlite"
    load_sqlite(db, [bundle])
    backend = SqliteBackend(db, memory_index=0)
    try:
        statements: list[str] = []
        everyone = threading.Barrier(READERS)  # holds every reader thread at once: each traces its own connection

        def trace() -> None:
            backend._db.set_trace_callback(statements.append)
            everyone.wait(10)

        await asyncio.gather(*(backend._run(trace) for _ in range(READERS)))
        await backend.hop(["A", "B", "C", "D", "nope"])
        assert len(statements) == 3  # outgoing, incoming, and the asked entities
        statements.clear()
        await backend.metadata_for_edges([edge("A", "associated_with", "B"), edge("C", "treats", "B")])
        assert len(statements) == 1
        statements.clear()
        many = [f"id{i}" for i in range(1200)] + ["A"]
        assert list(await backend.get_nodes(many)) == ["A"]
        assert len(statements) == 3  # chunks of at most 500 ids
    finally:
        await backend.aclose()


# -- search ----------------------------------------------------------------------

SEARCH_BUNDLE: list[dict[str, Any]] = [
    {"kind": "entity", "id": "e:kin", "entity_type": "Thing", "name": "Kin"},
    {"kind": "entity", "id": "e:other", "entity_type": "Thing", "name": "Other", "synonyms": ["KIN"]},
    {"kind": "entity", "id": "e:kinase_a", "entity_type": "Enzyme", "name": "Kinase A"},
    {"kind": "entity", "id": "e:protein_kinase", "entity_type": "Enzyme", "name": "Protein kinase"},
    {"kind": "entity", "id": "e:skinny", "entity_type": "Thing", "name": "Skinny"},
    {"kind": "entity", "id": "e:merged", "entity_type": "Thing", "name": "kin", "status": "merged"},
    {"kind": "entity", "id": "e:unrelated", "entity_type": "Thing", "name": "Zebra", "synonyms": ["NEAR stripes"]},
    {"kind": "entity", "id": "e:cafe", "entity_type": "Place", "name": "Café Ü"},
    *({"kind": "entity", "id": f"e:many{i:02}", "entity_type": "Many", "name": f"common {i}"} for i in range(30)),
]


@pytest.fixture
async def searchable(tmp_path: Path):
    db = tmp_path / "search.sqlite"
    load_sqlite(db, [write_jsonl(tmp_path / "search.jsonl", SEARCH_BUNDLE)])
    sqlite_backend = SqliteBackend(db)
    yield sqlite_backend
    await sqlite_backend.aclose()


@pytest.mark.asyncio
async def test_search_ranks_exact_then_prefix_then_contains(searchable: SqliteBackend) -> None:
    hits = await searchable.search_entities("kin")
    ids = [hit.id for hit in hits]
    assert ids[:2] == ["e:kin", "e:other"]  # exact name, then exact synonym
    assert set(ids[2:4]) == {"e:kinase_a", "e:protein_kinase"}  # word-prefix (full-text) matches
    assert ids[4:] == ["e:skinny"]  # substring
    assert hits[0] == EntityStub(id="e:kin", entity_type="Thing", name="Kin")
    assert all(hit.score is None for hit in hits)


@pytest.mark.asyncio
async def test_search_filters_and_limits(searchable: SqliteBackend) -> None:
    enzymes = await searchable.search_entities("kin", node_types=["Enzyme"])
    assert {hit.id for hit in enzymes} == {"e:kinase_a", "e:protein_kinase"}
    assert await searchable.search_entities("kin", node_types=[]) == []
    assert await searchable.search_entities("kin", node_types=["Nothing"]) == []
    many = await searchable.search_entities("common")
    assert len(many) == 20
    assert [hit.id for hit in await searchable.search_entities("common 7")] == ["e:many07"]
    assert [hit.id for hit in await searchable.search_entities("cafe")] == ["e:cafe"]  # diacritics folded
    assert [hit.id for hit in await searchable.search_entities("KINASE a")] == ["e:kinase_a"]
    assert [hit.id for hit in await searchable.search_entities("inn")] == ["e:skinny"]
    assert [hit.id for hit in await searchable.search_entities("ki")][:2] == ["e:kin", "e:other"]
    assert await searchable.search_entities("xyzzy") == []


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", " ", "\t\n"])
async def test_search_blank_query(searchable: SqliteBackend, query: str) -> None:
    assert await searchable.search_entities(query) == []


INJECTIONS = [
    "AND",
    "OR",
    "NOT kin",
    '"',
    '""',
    '"kin',
    "*",
    "kin*",
    "^kin",
    "NEAR(",
    "NEAR(kin other, 2)",
    "col:x",
    "label:kin",
    "{label}: kin",
    "'; DROP TABLE entity; --",
    "kin) OR (1=1",
    "-kin",
    "+",
    "%",
    "_",
    "\\",
    "\x00",
    "k\u0301in",
]


@pytest.mark.asyncio
@pytest.mark.parametrize("query", INJECTIONS)
async def test_search_never_reads_user_text_as_syntax(searchable: SqliteBackend, query: str) -> None:
    hits = await searchable.search_entities(query)
    assert isinstance(hits, list) and len(hits) <= 20
    assert await searchable.entity_types()  # the store is intact


@pytest.mark.asyncio
async def test_search_fuzz(searchable: SqliteBackend) -> None:
    rng = random.Random(1234)
    alphabet = "kinAORNEAR\"*^:(){}-+'; %_\\.,|&"
    for _ in range(300):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        assert len(await searchable.search_entities(query)) <= 20


@pytest.mark.asyncio
async def test_search_matches_phrases_literally(searchable: SqliteBackend) -> None:
    assert [hit.id for hit in await searchable.search_entities("NEAR stripes")] == ["e:unrelated"]
    assert fts_query('a "b" c') == '"a" """b""" "c"*'


# -- opening, read-only, closing ------------------------------------------------


@pytest.mark.asyncio
async def test_store_is_read_only(backend: SqliteBackend, graph: Graph) -> None:
    with pytest.raises(sqlite3.OperationalError):
        await backend._run(lambda: backend._db.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')"))

    def bypass_query_only() -> None:
        backend._db.execute("PRAGMA query_only = OFF")
        backend._db.execute("DELETE FROM entity")

    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await backend._run(bypass_query_only)
    assert await graph.get_node("A") == Node(id="A", entity_type="Gene")


def test_missing_store_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(SqliteStoreError, match="bfsql load --db"):
        SqliteBackend(tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(SqliteStoreError, match="not a bfsql store"):
        SqliteBackend(other)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SqliteStoreError, match="bfsql load"):
        SqliteBackend(garbage)


@pytest.mark.asyncio
async def test_aclose(bundle: Path, tmp_path: Path) -> None:
    db = tmp_path / "closing.sqlite"
    load_sqlite(db, [bundle])
    sqlite_backend = SqliteBackend(db, description="configured")
    assert await sqlite_backend.graph_description() == "configured"
    await sqlite_backend.aclose()
    await sqlite_backend.aclose()
    with pytest.raises(RuntimeError):
        await sqlite_backend.get_nodes(["A"])


@pytest.mark.asyncio
async def test_registered_factory(bundle: Path, tmp_path: Path) -> None:
    db = tmp_path / "registered.sqlite"
    load_sqlite(db, [bundle])
    spec = get_backends()["sqlite"]
    assert spec.config_model is SqliteConfig
    created = spec.factory(SqliteConfig(db=db))
    try:
        assert isinstance(created, SqliteBackend)
        assert await created.get_nodes(["C"]) == {"C": NodeInfo("Drug", "Olaparib")}
    finally:
        await created.aclose()


@pytest.mark.asyncio
async def test_closing_waits_for_the_calls_in_flight(tmp_path: Path) -> None:
    """Closing a store while searches and an index build run on other threads waits for the reads in flight (a
    connection closed under a running statement crashes the process); later calls fail cleanly. Repeated, since
    such a race depends on timing."""
    from bfsql.embedders import HashingEmbedder

    db = tmp_path / "close.sqlite"
    load_sqlite(db, [write_jsonl(tmp_path / "search.jsonl", SEARCH_BUNDLE)], embedder=HashingEmbedder(64))
    query = (await HashingEmbedder(64).embed(["kinase"]))[0]
    for _ in range(8):
        store = SqliteBackend(db)
        closed = asyncio.Event()

        rounds = [0] * (2 * READERS)

        async def search(reader: int, store: SqliteBackend = store, closed: asyncio.Event = closed,
                         rounds: list[int] = rounds) -> int:
            while not closed.is_set():
                try:
                    assert [h.id for h in await store.search_entities("kin")][:2] == ["e:kin", "e:other"]
                    await store.vector_search(query, limit=5)
                except RuntimeError:  # closed: the executor takes no more calls, or the store says it is closed
                    break
                rounds[reader] += 1
            return rounds[reader]

        readers = [asyncio.create_task(search(reader)) for reader in range(len(rounds))]
        while not all(rounds):  # close while every reader is busy (on a loaded machine a round takes a while)
            await asyncio.sleep(0.005)
        await store.aclose()
        closed.set()
        assert all(await asyncio.gather(*readers))


async def test_a_walk_that_fails_midway_leaves_no_marks(bundle: Path, tmp_path: Path, monkeypatch) -> None:
    """Walks reuse their visited marks (clearing a graph-sized array per walk would cost the graph's size): a walk
    that fails after marking must not leave its marks to the next one."""
    from bfsql import csr

    backend, index = await _indexed(tmp_path / "graph.sqlite", bundle)
    monkeypatch.setattr(csr, "SMALL_HOP_ROWS", 0)  # the walk with numpy, which marks
    first = csr.survey(index, ["A"], 2, 100, [], 0, 100)
    assert first.node_count > 1

    def broken(_index, visited, levels, *rest):
        visited[:] = True
        raise RuntimeError("a walk failed midway")

    with monkeypatch.context() as patched:
        patched.setattr(csr, "_walk", broken)
        with pytest.raises(RuntimeError):
            csr.survey(index, ["A"], 2, 100, [], 0, 100)
    assert csr.survey(index, ["A"], 2, 100, [], 0, 100) == first
    assert all(not marks.any() for marks in index.spare_marks)
    await backend.aclose()
