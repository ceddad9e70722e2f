"""Readers (JSONL, CSV/TSV, RDF) and the SQLite loader: bad rows, atomicity, idempotence."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from bfsql import Edge, Graph, Node
from bfsql.backends.sqlite import SqliteBackend
from bfsql.loading.bundle import BadRow
from bfsql.loading.errors import LoadError
from bfsql.loading.progress import LoadProgress
from bfsql.loading.readers import ImpliedEntity, detect_format, read_records
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.sqlite_loader import LoadReport, StoreFormatError, load_sqlite

ENTITIES = [
    {"kind": "entity", "id": "A", "entity_type": "Gene", "name": "Alpha", "synonyms": ["a1"]},
    {"kind": "entity", "id": "B", "entity_type": "Gene", "name": "Beta"},
    {"kind": "relationship", "subject": "A", "predicate": "binds", "object": "B", "confidence": 0.5},
    {"kind": "evidence", "subject": "A", "predicate": "binds", "object": "B", "text_span": "A binds B"},
    {"kind": "evidence", "subject": "A", "predicate": "binds", "object": "B", "document_id": "d1", "section": "s"},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(db: Path) -> list[str]:
    """The store's schema and rows as SQL, sorted: the same content in any insertion order."""
    with sqlite3.connect(db) as conn:
        return sorted(conn.iterdump())


def stray_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".loading"))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "store.sqlite"
    load_sqlite(db, [write_jsonl(tmp_path / "base.jsonl", ENTITIES)], description="base")
    return db


# -- the loader ------------------------------------------------------------------


class Phases(LoadProgress):
    """Records each phase with its total and the amount advanced."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        self.seen.append([phase, total, unit, 0])

    def advance(self, amount: int) -> None:
        self.seen[-1][3] += amount


def test_load_report_and_progress(tmp_path: Path) -> None:
    rows = [{"kind": "entity", "id": f"n{i}", "entity_type": "T"} for i in range(2500)]
    bundle = write_jsonl(tmp_path / "p.jsonl", rows)
    phases = Phases()
    report = load_sqlite(tmp_path / "p.sqlite", [bundle], progress=phases, embedder="hashing")
    assert report == LoadReport(tmp_path / "p.sqlite", 1, 2500, 0, 0)
    size = bundle.stat().st_size
    assert phases.seen == [
        ["read", size, "bytes", size],
        ["index", 2500, "entities", 2500],
        ["embed", 2500, "entities", 2500],
        ["graph", None, "", 0],
        ["commit", None, "", 0],
    ]
    assert "2500 entities" in report.summary()


@pytest.mark.parametrize("relationships", [3_000, 260_000])  # written in the loader, and by a side process
def test_every_phase_counts_to_its_total(tmp_path: Path, relationships: int) -> None:
    """With a side process, every phase with a total ends at it (the write phase at N of N, the index phase
    counting relationships as relationships), duplicates and rows with metadata included."""
    rows: list[dict[str, Any]] = [{"kind": "entity", "id": f"n{i}", "entity_type": "T"} for i in range(2000)]
    rows += [{"kind": "relationship", "subject": f"n{i % 2000}", "predicate": f"p{i % 3}", "object": f"n{i % 1999}"}
             for i in range(relationships)]
    rows += [{**row, "confidence": 0.5} for row in rows[2000:2100]]  # a hundred said again, with metadata
    phases = Phases()
    load_sqlite(tmp_path / "p.sqlite", [write_jsonl(tmp_path / "p.jsonl", rows)], progress=phases, embedder=None)
    totals = {phase: (total, done) for phase, total, _, done in phases.seen if total is not None}
    assert [phase for phase, *_ in phases.seen] == ["read", "index", "write", "graph", "commit"] if \
        relationships > 250_000 else ["read", "write", "index", "graph", "commit"]
    assert all(done == total for total, done in totals.values()), phases.seen
    assert totals["write"][0] == relationships + 100 and totals["index"][0] == 2000


def test_bad_row_names_file_and_line_and_changes_nothing(store: Path, tmp_path: Path) -> None:
    before = digest(store)
    good = write_jsonl(tmp_path / "good.jsonl", [{"kind": "entity", "id": "C", "entity_type": "Gene"}])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"kind": "entity", "id": "D", "entity_type": "Gene"})
        + "\n\n"
        + json.dumps({"kind": "entity", "id": "E"})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(BadRow) as caught:
        load_sqlite(store, [good, bad])
    assert str(caught.value).startswith(f"{bad}:3: entity_type")
    assert (caught.value.path, caught.value.line) == (str(bad), 3)
    assert digest(store) == before
    assert stray_files(tmp_path) == []


def test_bad_row_into_missing_store_creates_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "entity", "id": "A", "entity_type": "T"}\nnot json\n', encoding="utf-8")
    with pytest.raises(BadRow, match=r"bad\.jsonl:2: invalid JSON"):
        load_sqlite(tmp_path / "new.sqlite", [bad])
    assert not (tmp_path / "new.sqlite").exists()
    assert stray_files(tmp_path) == []


def test_keyboard_interrupt_changes_nothing(store: Path, tmp_path: Path) -> None:
    before = digest(store)
    rows = [{"kind": "entity", "id": f"n{i}", "entity_type": "T"} for i in range(3000)]

    class Interrupt(LoadProgress):
        def step(self, text: str) -> None:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_sqlite(store, [write_jsonl(tmp_path / "many.jsonl", rows)], progress=Interrupt())
    assert digest(store) == before
    assert stray_files(tmp_path) == []


KILLED_LOADER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bfsql.loading.progress import LoadProgress
    from bfsql.loading.sqlite_loader import load_sqlite

    class Progress(LoadProgress):
        def step(self, text):
            print(f"PROGRESS {text}", flush=True)
            if int(text.split()[0].replace(",", "")) >= int(sys.argv[3]):
                print("KILL ME", flush=True)
                time.sleep(120)

    load_sqlite(Path(sys.argv[1]), [Path(sys.argv[2])], progress=Progress())
    print("FINISHED", flush=True)
    """
)


def run_and_kill(db: Path, bundle: Path, after: int) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_LOADER, str(db), str(bundle), str(after)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            assert line.strip() != "FINISHED"
            if line.strip() == "KILL ME":
                break
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_sigkill_mid_load_changes_nothing(store: Path, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for i in range(20000):
        rows.append({"kind": "entity", "id": f"n{i}", "entity_type": "T", "name": f"node {i}"})
        rows.append({"kind": "relationship", "subject": f"n{i}", "predicate": "next", "object": f"n{i + 1}"})
    bundle = write_jsonl(tmp_path / "big.jsonl", rows)
    before = digest(store)
    run_and_kill(store, bundle, after=15000)
    assert digest(store) == before
    run_and_kill(tmp_path / "fresh.sqlite", bundle, after=15000)
    assert not (tmp_path / "fresh.sqlite").exists()
    # Only the private temporary files are left behind; the next load still works.
    assert len(stray_files(tmp_path)) == 2
    load_sqlite(store, [bundle])
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM entity").fetchone() == (20002,)


def test_reload_is_idempotent(store: Path, tmp_path: Path) -> None:
    first = dump(store)
    load_sqlite(store, [tmp_path / "base.jsonl"])
    assert dump(store) == first
    load_sqlite(store, [tmp_path / "base.jsonl"], description="base")
    assert dump(store) == first
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM evidence").fetchone() == (2,)


@pytest.mark.asyncio
async def test_upsert_replaces_and_keeps_description(store: Path, tmp_path: Path) -> None:
    update = [
        {"kind": "entity", "id": "A", "entity_type": "Protein", "name": "Alpha prime"},
        {"kind": "relationship", "subject": "A", "predicate": "binds", "object": "B", "confidence": 0.9},
    ]
    load_sqlite(store, [write_jsonl(tmp_path / "update.jsonl", update)])
    backend = SqliteBackend(store)
    graph = Graph(backend, plugins=[], cache=None)
    try:
        assert await graph.metadata_for_node("A") == {"name": "Alpha prime"}
        assert (await graph.metadata_for_edge(Edge("A", "binds", "B")))["confidence"] == 0.9
        assert [hit.id for hit in await backend.search_entities("alpha prime")] == ["A"]
        assert await backend.search_entities("a1") == []  # the old synonym left the index
        assert await backend.graph_description() == "base"
    finally:
        await backend.aclose()


def test_refuses_foreign_and_future_stores(tmp_path: Path, store: Path) -> None:
    source = write_jsonl(tmp_path / "x.jsonl", ENTITIES)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreFormatError, match="not a bfsql store"):
        load_sqlite(foreign, [source])
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreFormatError, match="schema version 99"):
        load_sqlite(store, [source])
    assert stray_files(tmp_path) == []


def test_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot tell the format"):
        load_sqlite(tmp_path / "s.sqlite", [tmp_path / "graph.xml"])
    with pytest.raises(FileNotFoundError):
        load_sqlite(tmp_path / "s.sqlite", [tmp_path / "absent.jsonl"])
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        load_sqlite(tmp_path / "s.sqlite", [], fmt="xml")
    assert not (tmp_path / "s.sqlite").exists()


# -- readers ---------------------------------------------------------------------


def test_detect_format() -> None:
    assert [detect_format(n) for n in ["a.jsonl", "a.NDJSON", "a.csv", "a.tsv", "a.nt", "a.ttl"]] == [
        "jsonl",
        "jsonl",
        "csv",
        "tsv",
        "nt",
        "ttl",
    ]
    with pytest.raises(ValueError):
        detect_format("a.txt")


def test_csv_with_header_and_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "edges.csv"
    path.write_text(
        "subject,predicate,object,object_type,confidence,source_documents,subject_type\n"
        "A,binds,B,Protein,0.75,PMID:1; PMID:2,Gene\n"
        "\n"
        'A,"is near, roughly",C,,,,\n'
        "C,binds,A,,,,Compound\n",
        encoding="utf-8",
    )
    records = list(read_records(path))
    assert records == [
        (
            2,
            RelationshipRecord(
                subject="A", predicate="binds", object="B", confidence=0.75, source_documents=["PMID:1", "PMID:2"]
            ),
        ),
        (4, RelationshipRecord(subject="A", predicate="is near, roughly", object="C")),
        (5, RelationshipRecord(subject="C", predicate="binds", object="A")),
        (2, ImpliedEntity(id="A", entity_type="Gene", name="A")),
        (2, ImpliedEntity(id="B", entity_type="Protein", name="B")),
        (4, ImpliedEntity(id="C", entity_type="Compound", name="C")),
    ]


def test_headerless_tsv(tmp_path: Path) -> None:
    path = tmp_path / "edges.tsv"
    path.write_text('x\trelates to\t"y"\nx\trelates to\tz\n', encoding="utf-8")
    records = [record for _, record in read_records(path)]
    assert records[0] == RelationshipRecord(subject="x", predicate="relates to", object='"y"')  # TSV has no quoting
    assert [r.id for r in records if isinstance(r, EntityRecord)] == ["x", '"y"', "z"]
    assert all(r.entity_type == "Entity" for r in records if isinstance(r, EntityRecord))


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("subject,predicate,object\nA,r,B\nA,r,B,extra\n", 3, "expected 3 columns"),
        ("subject,predicate,object,weight\n", 1, "unknown column"),
        ("subject,predicate,object,confidence\nA,r,B,high\n", 2, "confidence"),
        ("A,r\n", 1, "expected 3 to 7 columns"),
        ("subject,predicate,object\nA,,B\n", 2, "predicate"),
    ],
)
def test_csv_bad_rows(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadRow, match=message) as caught:
        list(read_records(path))
    assert caught.value.line == line and caught.value.path == str(path)


@pytest.mark.asyncio
async def test_implied_entities_never_replace_full_ones(tmp_path: Path) -> None:
    full = write_jsonl(
        tmp_path / "entities.jsonl", [{"kind": "entity", "id": "A", "entity_type": "Gene", "name": "Al"}]
    )
    edges = tmp_path / "edges.csv"
    edges.write_text("A,binds,B\n", encoding="utf-8")
    for number, loads in enumerate([[[full, edges]], [[edges, full]], [[edges], [full]], [[full], [edges]]]):
        db = tmp_path / f"{number}.sqlite"
        for sources in loads:
            load_sqlite(db, sources)
        backend = SqliteBackend(db)
        graph = Graph(backend, plugins=[], cache=None)
        try:
            assert await graph.get_node("A") == Node(id="A", entity_type="Gene")
            assert await graph.metadata_for_node("A") == {"name": "Al"}
            assert await graph.get_node("B") == Node(id="B", entity_type="Entity")
            assert await graph.metadata_for_node("B") == {"name": "B"}
            assert await graph.edges_from("A") == [Edge("A", "binds", "B")]
        finally:
            await backend.aclose()


def test_format_override(tmp_path: Path) -> None:
    edges = tmp_path / "edges.txt"
    edges.write_text("A\tbinds\tB\n", encoding="utf-8")
    report = load_sqlite(tmp_path / "o.sqlite", [edges], fmt="tsv")
    assert (report.relationships, report.entities) == (1, 2)


TURTLE = """\
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .

ex:braf a ex:Gene ;
    rdfs:label "BRAF"@en, "B-Raf"@de ;
    skos:altLabel "B-RAF proto-oncogene" ;
    ex:chromosome "7" ;
    ex:length 766 ;
    ex:memberOf ex:raf ;
    ex:note [ ex:text "a blank node" ] .

ex:raf a ex:Family, ex:Group ;
    skos:prefLabel "RAF family" .

ex:unlabelled ex:relatedTo ex:elsewhere .
"""


def test_turtle_mapping(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    path = tmp_path / "graph.ttl"
    path.write_text(TURTLE, encoding="utf-8")
    records = [record for _, record in read_records(path)]
    ex = "http://example.org/"
    assert records == [
        EntityRecord(
            id=f"{ex}braf",
            entity_type="Gene",
            name="BRAF",
            synonyms=["B-Raf", "B-RAF proto-oncogene"],
            properties={"chromosome": "7", "length": 766},
        ),
        RelationshipRecord(subject=f"{ex}braf", predicate="memberOf", object=f"{ex}raf"),
        EntityRecord(id=f"{ex}raf", entity_type="Family", name="RAF family", properties={"types": ["Family", "Group"]}),
        EntityRecord(id=f"{ex}unlabelled", entity_type="Entity", name="unlabelled"),
        RelationshipRecord(subject=f"{ex}unlabelled", predicate="relatedTo", object=f"{ex}elsewhere"),
        ImpliedEntity(id=f"{ex}elsewhere", entity_type="Entity", name="elsewhere"),
    ]


@pytest.mark.asyncio
async def test_ntriples_load_and_errors(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    good = tmp_path / "graph.nt"
    good.write_text(
        '<http://x.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "Aye" .\n'
        "<http://x.org/a> <http://x.org/vocab#likes> <http://x.org/b> .\n",
        encoding="utf-8",
    )
    db = tmp_path / "rdf.sqlite"
    load_sqlite(db, [good])
    backend = SqliteBackend(db)
    try:
        assert [hit.id for hit in await backend.search_entities("aye")] == ["http://x.org/a"]
        assert await Graph(backend, plugins=[], cache=None).edges_to("http://x.org/b") == [
            Edge("http://x.org/a", "likes", "http://x.org/b")
        ]
    finally:
        await backend.aclose()
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://x.org/a> <http://x.org/p> <http://x.org/b> .\n<http://x.org/a> oops .\n", encoding="utf-8")
    with pytest.raises(BadRow, match=r"bad\.nt:2: cannot parse N-Triples"):
        load_sqlite(db, [bad])
    bad_turtle = tmp_path / "bad.ttl"
    bad_turtle.write_text('@prefix ex: <http://x.org/> .\nex:a ex:b "open .\n', encoding="utf-8")
    with pytest.raises(BadRow, match=r"bad\.ttl:2: cannot parse Turtle"):
        list(read_records(bad_turtle))


def test_rdf_without_rdflib_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rdflib", None)
    path = tmp_path / "graph.ttl"
    path.write_text(TURTLE, encoding="utf-8")
    with pytest.raises(LoadError, match=r"from a checkout of the bfsql repository, pip install '\./core\[rdf\]'"):
        list(read_records(path))
