"""The loader's fast path gives what the full way gives: plain rows, blocks of rows, sorted writes, labels, the index.

The SQLite loader reads the simplest rows without pydantic (:mod:`bfsql.loading.plain`),
holds relationships as codes and writes them in key order
(:mod:`bfsql.loading.relationship_buffer`), makes the search labels in one statement, and
builds the array index from what it wrote (:func:`bfsql.csr.index_of_entities`). Each is
checked against the full way here.
"""

from __future__ import annotations

import io
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfsql.csr import build_index, load_index, save_index
from bfsql.loading import lines
from bfsql.loading.bundle import parse_json_line, read_bundle
from bfsql.loading.errors import BadRow, RowErrors
from bfsql.loading.limits import LoadLimits
from bfsql.loading.plain import (
    PlainEntities,
    PlainEntity,
    PlainRelationship,
    PlainRelationships,
    block_reader,
    line_reader,
)
from bfsql.loading.progress import StderrProgress
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.sqlite_loader import load_sqlite

from conftest import random_bundle

LIMITS = LoadLimits(id_chars=6, name_chars=8)
"""Small limits, so that generated values cross them."""

EDGES = ["A", "b c", "é", "x" * 6, "x" * 7, "x" * 8, "x" * 9, " ", "\t", "\u2028", "", "a\x7fb", "a\x85", "a\\b", 'a"b',
         "\ud800", "a\x00", "a\x01", "a\nb", " a "]
"""Values at the edges of the checks (limits: 6 characters for ids, 8 for names)."""
TEXT = st.one_of(
    st.sampled_from(EDGES),
    st.text(alphabet=st.one_of(st.sampled_from(' \t"\\\x00\x7f\x85\u2028\ud800é'), st.characters(codec="utf-8")),
            max_size=9),
)
GOOD = st.sampled_from(["A", "b c", "é", "x" * 6, " a "])
"""Ids that pass: half of the generated ones, so that the other fields' checks matter."""
ID = st.one_of(GOOD, TEXT)
VALUE = st.one_of(GOOD, TEXT, st.none(), st.integers(), st.just(["x"]))


def _layouts(row: dict[str, Any]) -> list[str]:
    """The row written as writers write JSON: compact or spaced, ASCII-escaped or not."""
    return [
        json.dumps(row),
        json.dumps(row, ensure_ascii=False),
        json.dumps(row, separators=(",", ":"), ensure_ascii=False),
        json.dumps(row, indent=None, separators=(" , ", " : ")),
        f"[{json.dumps(row)}]",
        f"{json.dumps(row)} {json.dumps(row)}",
    ]


def _full_way(text: str) -> Any:
    """The record of the full way (pydantic), or the error message."""
    try:
        return parse_json_line(text, "g.jsonl", 1, LIMITS)
    except BadRow as exc:
        return f"error: {exc}"


def _same(fast: Any, full: Any) -> None:
    if isinstance(full, str):
        assert fast == full
    elif isinstance(fast, PlainRelationship):
        assert full == RelationshipRecord(subject=fast.subject, predicate=fast.predicate, object=fast.object)
    elif isinstance(fast, PlainEntity):
        assert full == EntityRecord(id=fast.id, entity_type=fast.entity_type, name=fast.name)
    else:
        assert fast == full


def _fast_ways(text: str) -> list[Any]:
    """What each fast reader makes of the line: the decoded plain row, the line pattern, the block pattern."""
    try:
        decoded = parse_json_line(text, "g.jsonl", 1, LIMITS, plain=True)
    except BadRow as exc:
        decoded = f"error: {exc}"
    found = [decoded]
    by_line = line_reader(LIMITS)(text)
    if by_line is not None:
        found.append(by_line)
    block = block_reader(LIMITS)((text + "\n").encode("utf-8", "surrogatepass"))
    if block is not None:
        assert len(block) == 1
        found.append(PlainEntity(*block[0]) if isinstance(block, PlainEntities) else PlainRelationship(*block[0]))
    return found


@settings(max_examples=1000, deadline=None)
@given(subject=VALUE, predicate=ID, obj=ID, extra=st.booleans())
def test_a_relationship_row_reads_alike_every_way(subject: Any, predicate: str, obj: str, extra: bool) -> None:
    row: dict[str, Any] = {"kind": "relationship", "subject": subject, "predicate": predicate, "object": obj}
    if extra:
        row["confidence"] = 0.5
    for text in _layouts(row):
        full = _full_way(text)
        for fast in _fast_ways(text):
            _same(fast, full)


@settings(max_examples=1000, deadline=None)
@given(entity_id=VALUE, entity_type=ID, name=st.one_of(TEXT, st.none(), st.integers()), named=st.booleans())
def test_an_entity_row_reads_alike_every_way(entity_id: Any, entity_type: str, name: Any, named: bool) -> None:
    row: dict[str, Any] = {"kind": "entity", "id": entity_id, "entity_type": entity_type}
    if named:
        row["name"] = name
    for text in _layouts(row):
        full = _full_way(text)
        for fast in _fast_ways(text):
            _same(fast, full)


def test_keys_in_another_order_or_more_keys_take_the_full_way() -> None:
    read = line_reader(LIMITS)
    assert read('{"subject": "A", "kind": "relationship", "predicate": "p", "object": "B"}') is None
    assert read('{"kind": "entity", "id": "A", "entity_type": "T", "name": "n", "source": "s"}') is None
    assert parse_json_line('{"subject": "A", "kind": "relationship", "predicate": "p", "object": "B"}', "g", 1,
                           plain=True) == PlainRelationship("A", "p", "B")
    row = '{"kind": "relationship", "subject": "A", "predicate": "p", "object": "B", "properties": {"w": 1}}'
    assert parse_json_line(row, "g", 1, plain=True) == RelationshipRecord(
        subject="A", predicate="p", object="B", properties={"w": 1})


def _bundle_lines(rng: random.Random, count: int) -> list[str]:
    kinds = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.6:
            kinds.append(json.dumps({"kind": "relationship", "subject": f"N{rng.randrange(50)}", "predicate": "p",
                                     "object": f"N{rng.randrange(50)}"}))
        elif roll < 0.7:
            kinds.append(json.dumps({"kind": "entity", "id": f"N{i}", "entity_type": "T", "name": f"n {i}"}))
        elif roll < 0.75:
            kinds.append("")
        elif roll < 0.8:
            kinds.append('{"kind": "relationship", "subject": "A"}')  # bad: fields missing
        elif roll < 0.85:
            kinds.append(json.dumps({"kind": "relationship", "subject": "A", "predicate": "p", "object": "B",
                                     "confidence": 0.1}))
        elif roll < 0.88:  # a relationship inside a line that is no record
            kinds.append(f'[{json.dumps({"kind": "relationship", "subject": "A", "predicate": "p", "object": "B"})}]')
        else:
            kinds.append(json.dumps({"subject": "A", "kind": "relationship", "predicate": "q", "object": "C"}))
    return kinds


@pytest.mark.parametrize("seed", range(5))
def test_blocks_of_relationships_read_as_their_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Small blocks (some all relationships, some not), every line's number and record as the full way reads them."""
    monkeypatch.setattr(lines, "BLOCK_BYTES", 300)
    rng = random.Random(seed)
    text = "\n".join(_bundle_lines(rng, 400)) + rng.choice(["", "\n", "\r\n"])
    path = tmp_path / "g.jsonl"
    path.write_text(text, encoding="utf-8")
    full_errors, fast_errors = RowErrors(1000), RowErrors(1000)
    full = list(read_bundle(path, limits=LIMITS, errors=full_errors))
    fast: list[tuple[int, Any]] = []
    blocks = 0
    for number, row in read_bundle(path, limits=LIMITS, errors=fast_errors, plain=True):
        if isinstance(row, PlainRelationships):
            blocks += 1
            fast += [(number + i, PlainRelationship(*triple)) for i, triple in enumerate(row)]
        elif isinstance(row, PlainEntities):
            blocks += 1
            fast += [(number + i, PlainEntity(*entity)) for i, entity in enumerate(row)]
        else:
            fast.append((number, row))
    assert blocks  # the test reads some blocks whole
    assert [n for n, _ in fast] == [n for n, _ in full]
    for (_, one), (_, other) in zip(fast, full, strict=True):
        _same(one, other)
    assert [str(e) for e in fast_errors.rows] == [str(e) for e in full_errors.rows]


def test_a_block_of_entity_lines_is_read_whole(tmp_path: Path) -> None:
    """Entities with a name, an empty name and none come as one PlainEntities, each as the full way reads it;
    a block with a line of another shape (a null name) is read line by line."""
    rows = [{"kind": "entity", "id": "A", "entity_type": "T", "name": "Ann"},
            {"kind": "entity", "id": "B", "entity_type": "T", "name": ""},
            {"kind": "entity", "id": "C", "entity_type": "U"}]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    [(number, block)] = read_bundle(path, limits=LIMITS, plain=True)
    assert number == 1 and isinstance(block, PlainEntities)
    assert block == [("A", "T", "Ann"), ("B", "T", ""), ("C", "U", None)]
    assert [(r.id, r.entity_type, r.name) for _, r in read_bundle(path, limits=LIMITS)] == block
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"kind": "entity", "id": "D", "entity_type": "U", "name": None}) + "\n")
    assert list(read_bundle(path, limits=LIMITS, plain=True)) == [
        (1, PlainEntity("A", "T", "Ann")), (2, PlainEntity("B", "T", "")), (3, PlainEntity("C", "U", None)),
        (4, PlainEntity("D", "U", None))]


def test_search_labels_fold_as_python_does(tmp_path: Path) -> None:
    """The labels statement keeps every name and synonym but empty ones, in order, each casefolded as Python does."""
    names = ["Ann", "", None, "STRASSE", "Straße", "İstanbul", "ǅemal", "ﬁre", "Ω", "a\tb", "ＡＢＣ"]
    rows = [{"kind": "entity", "id": f"E{i}", "entity_type": "T", "name": name,
             "synonyms": [n for n in names[i:i + 3] if n is not None]}
            for i, name in enumerate(names)]
    rows.append({"kind": "entity", "id": "M", "entity_type": "T", "name": "Merged", "status": "merged"})
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=bool(i % 2)) + "\n" for i, row in enumerate(rows)),
                    encoding="utf-8")
    load_sqlite(tmp_path / "s.sqlite", [path], embedder=None)
    expected = [
        (row["id"], kind, label, label.casefold())
        for row in sorted(rows[:-1], key=lambda r: r["id"])
        for kind, label in [(0, row["name"]), *((1, synonym) for synonym in row["synonyms"])]
        if label
    ]
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        stored = conn.execute("SELECT entity_id, kind, label, norm FROM entity_label ORDER BY label_id").fetchall()
    assert stored == expected


def test_the_lines_before_an_over_long_line_are_read(tmp_path: Path) -> None:
    first = json.dumps({"kind": "relationship", "subject": "A", "predicate": "p", "object": "B"}) + "\n"
    path = tmp_path / "g.jsonl"
    path.write_text(first * 3 + "x" * 2000 + "\n" + first, encoding="utf-8")
    read: list[int] = []
    with pytest.raises(BadRow, match=r"g\.jsonl:4: the line is longer than 1 KiB"):
        for number, row in read_bundle(path, limits=LoadLimits(line_bytes=1024), plain=True):
            read += [number + i for i in range(len(row))] if isinstance(row, PlainRelationships) else [number]
    assert read == [1, 2, 3]


# -- the loader --------------------------------------------------------------------------------


def _expected(*loads: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The relationship table after the loads: one row per triple, the last one read."""
    table: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for rows in loads:
        for row in rows:
            if row["kind"] == "relationship":
                key = (row["subject"], row["predicate"], row["object"])
                table[key] = (*key, row.get("confidence"), json.dumps(row.get("source_documents", [])), "{}")
    return sorted(table.values())


def _table(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT * FROM relationship ORDER BY subject_id, predicate, object_id").fetchall()


def _same_index(db: Path) -> None:
    """The index saved by the load is the one built from the store's tables."""
    with sqlite3.connect(db) as conn:
        saved, built = load_index(conn), build_index(conn)
    assert saved is not None
    for name in ("has_name", "type_code", "offsets", "rows", "subjects", "objects", "preds", "id_hashes",
                 "hash_index"):
        assert np.array_equal(getattr(saved, name), getattr(built, name)), name
    assert (saved.ids.blob, saved.names.blob, saved.types, saved.predicates) == (
        built.ids.blob, built.names.blob, built.types, built.predicates)


@pytest.mark.parametrize("seed", range(6))
def test_a_load_writes_the_last_of_each_triple_and_the_index_of_the_store(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    first, second = random_bundle(rng, 300), random_bundle(rng, 200)
    db = tmp_path / "s.sqlite"
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in first), encoding="utf-8")
    load_sqlite(db, [source], embedder=None)  # an empty store: written in order, index from what was written
    assert _table(db) == _expected(first)
    _same_index(db)
    source.write_text("".join(json.dumps(row) + "\n" for row in second), encoding="utf-8")
    load_sqlite(db, [source], embedder=None)  # into a store with relationships: upserts, index from the tables
    assert _table(db) == _expected(first, second)
    _same_index(db)
    with sqlite3.connect(db) as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'relationship_by_object'").fetchone()
        plan = conn.execute("EXPLAIN QUERY PLAN SELECT subject_id FROM relationship WHERE object_id = 'E1'").fetchall()
    assert sql == "CREATE INDEX relationship_by_object ON relationship (object_id, subject_id, predicate)"
    assert "relationship_by_object" in str(plan)


def test_a_later_row_wins_whether_it_has_more_than_its_triple_or_not(tmp_path: Path) -> None:
    rows = [
        {"kind": "relationship", "subject": "A", "predicate": "p", "object": "B", "confidence": 0.5},
        {"kind": "relationship", "subject": "A", "predicate": "p", "object": "B"},
        {"kind": "relationship", "subject": "A", "predicate": "p", "object": "C"},
        {"kind": "relationship", "subject": "A", "predicate": "p", "object": "C", "source_documents": ["d"]},
    ]
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    load_sqlite(tmp_path / "s.sqlite", [source], embedder=None)
    assert _table(tmp_path / "s.sqlite") == [("A", "p", "B", None, "[]", "{}"), ("A", "p", "C", None, '["d"]', "{}")]


def test_the_write_phase_counts_the_relationships(tmp_path: Path) -> None:
    rows = [{"kind": "relationship", "subject": f"N{i}", "predicate": "p", "object": "N0"} for i in range(2500)]
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    stream = io.StringIO()
    load_sqlite(tmp_path / "s.sqlite", [source], embedder=None, progress=StderrProgress(stream, live=False))
    phases = stream.getvalue().splitlines()
    assert [line.split()[0] for line in phases] == ["read", "write", "index", "graph", "commit"]
    assert phases[1].startswith("write   2,500 relationships in ")


@pytest.mark.parametrize(("predicates", "dtype"), [(3, np.uint8), (256, np.uint8), (257, np.uint16)])
def test_the_index_keeps_predicate_codes_in_the_narrowest_type_and_reads_saved_int32_ones(
        tmp_path: Path, predicates: int, dtype: type) -> None:
    """Issue 36: an edge's predicate code is one byte where the graph has at most 256 predicates (two up to
    65,536), not four; an index saved with int32 codes (before) is read as it was saved."""
    rows = [{"kind": "relationship", "subject": f"S{i % 7}", "predicate": f"p{i}", "object": f"O{i % 5}"}
            for i in range(predicates)]
    db, source = tmp_path / "s.sqlite", tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    load_sqlite(db, [source], embedder="none")
    with sqlite3.connect(db) as conn:
        saved = load_index(conn)
        assert saved is not None and saved.preds.dtype == dtype
        assert sorted(saved.predicates[code] for code in saved.preds.tolist()) == sorted(f"p{i}" for i in
                                                                                          range(predicates))
        saved.preds = saved.preds.astype(np.int32)
        save_index(conn, saved)
        wide = load_index(conn)
    assert wide is not None and wide.preds.dtype == np.int32
    assert np.array_equal(wide.preds, saved.preds) and wide.statistics(3) == saved.statistics(3)
