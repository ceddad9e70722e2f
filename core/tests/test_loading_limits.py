"""Load limits, row checks and bad-row collection (bfsql.loading.limits / errors), and the readers that use them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bfsql.loading.bundle import read_bundle
from bfsql.loading.errors import BadRow, BadRows, LoadError, RowErrors
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits, check_row, describe_size, may_break_limits
from bfsql.loading.readers import read_records
from bfsql.loading.sqlite_loader import load_sqlite


def test_limits_parse_sizes_and_refuse_unknown_names() -> None:
    limits = LoadLimits.parse(["line_bytes=64M", "list_items = 5_000", "depth=8", "text_chars=2KiB"])
    assert (limits.line_bytes, limits.list_items, limits.depth, limits.text_chars) == (64 << 20, 5000, 8, 2048)
    assert limits.id_chars == DEFAULT_LIMITS.id_chars
    with pytest.raises(LoadError, match=r"unknown limit 'lines=5'.*line_bytes"):
        LoadLimits.parse(["lines=5"])
    with pytest.raises(LoadError, match="depth: 'deep' is not a number"):
        LoadLimits.parse(["depth=deep"])
    with pytest.raises(LoadError, match="positive"):
        LoadLimits.parse(["depth=0"])
    assert describe_size(16 << 20) == "16 MiB" and describe_size(1500) == "1,500 bytes"


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"id": "x" * 2049}, "id: 2,049 characters, more than the limit id_chars = 2,048"),
        ({"predicate": "p" * 2049}, "predicate: 2,049 characters"),
        ({"name": "n" * 4097}, "name: 4,097 characters, more than the limit name_chars = 4,096"),
        ({"synonyms": ["ok", "s" * 4097]}, "synonyms[1]: 4,097 characters"),
        ({"synonyms": ["s"] * 10_001}, "synonyms: 10,001 items, more than the limit list_items = 10,000"),
        ({"properties": {"k" * 2_000_000: 1}}, "properties: a key: 2,000,000 characters"),
        ({"properties": {"a": [float("nan")]}}, "properties.a[0]: nan is not a finite number"),
        ({"text_span": "a\x00b"}, "text_span: contains a NUL character"),
        ({"document_id": "\udc80"}, "document_id: contains a lone surrogate"),
        ({"properties": {"a": json.loads("[" * 40 + "]" * 40)}}, "nested more than 32 levels deep"),
    ],
)
def test_check_row_names_the_field_and_the_limit(row: dict[str, object], problem: str) -> None:
    found = check_row(row, DEFAULT_LIMITS)
    assert found is not None and problem in found, found


def test_check_row_accepts_what_is_within_the_limits() -> None:
    row = {"id": "x" * 2048, "name": "ü" * 4096, "synonyms": ["s"] * 10_000, "properties": {"a": [{"b": 1.5}]}}
    assert check_row(row, DEFAULT_LIMITS) is None


SMALL = LoadLimits(id_chars=30, name_chars=25, text_chars=20, list_items=12, depth=3)
CHARS = st.one_of(st.characters(), st.sampled_from(["\x00", "\ud800", "\udfff", "\x7f"]))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(CHARS, max_size=24),
    lambda inner: st.lists(inner, max_size=14) | st.dictionaries(st.text(CHARS, max_size=22), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(row=st.dictionaries(st.sampled_from(["id", "name", "synonyms", "properties"]), JSON_VALUES, max_size=2),
       ensure_ascii=st.booleans())
@example(row={"id": "\ud800"}, ensure_ascii=False)
@example(row={"id": "\x00"}, ensure_ascii=False)
@example(row={"properties": [[[[1]]]]}, ensure_ascii=False)
@example(row={"properties": 1e300}, ensure_ascii=False)
def test_a_line_said_to_be_safe_never_breaks_the_limits(row: dict[str, object], ensure_ascii: bool) -> None:
    line = json.dumps(row, ensure_ascii=ensure_ascii)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a file cannot hold a raw lone surrogate: JSON writers escape it
        line = json.dumps(row)
    if check_row(json.loads(line), SMALL) is not None:
        assert may_break_limits(line, SMALL), line


def test_row_errors_keep_the_first_and_count_all() -> None:
    errors = RowErrors(keep=2)
    for line in range(1, 6):
        errors.add(BadRow("f.jsonl", line, "bad"))
    with pytest.raises(BadRows) as caught:
        errors.raise_if_any()
    assert caught.value.count == 5 and [row.line for row in caught.value.rows] == [1, 2]
    assert str(caught.value) == "f.jsonl:1: bad\nf.jsonl:2: bad\n... and 3 more bad row(s)"
    assert (caught.value.path, caught.value.line) == ("f.jsonl", 1)  # a BadRow like the first
    RowErrors().raise_if_any()  # nothing collected: nothing raised


def test_read_bundle_stops_at_the_first_bad_row_unless_it_collects(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text('{"kind": "entity", "id": "A", "entity_type": "T"}\nnope\n{"kind": "x"}\n\n', encoding="utf-8")
    with pytest.raises(BadRow, match=r"g\.jsonl:2: invalid JSON: Expecting value at column 1"):
        list(read_bundle(path))
    errors = RowErrors()
    assert [line for line, _ in read_bundle(path, errors=errors)] == [1]
    assert [row.line for row in errors.rows] == [2, 3]


def test_a_line_above_the_limit_is_never_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    first = b'{"kind": "entity", "id": "A", "entity_type": "T"}\n'
    path.write_bytes(first + b"x" * 5000 + b"\n")
    seen: list[int] = []
    limits = LoadLimits(line_bytes=1024)
    with pytest.raises(BadRow, match=r"g\.jsonl:2: the line is longer than 1 KiB"):
        list(read_bundle(path, limits=limits, errors=RowErrors(), on_bytes=seen.append))
    assert sum(seen) == len(first) + 1025  # the first line, then one byte past the limit, no more


def test_a_line_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    line = b'{"kind": "entity", "id": "A", "entity_type": "T"}\n'
    path = tmp_path / "g.jsonl"
    path.write_bytes(line)
    assert len(list(read_bundle(path, limits=LoadLimits(line_bytes=len(line))))) == 1


def test_csv_rows_are_all_checked_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "g.csv"
    path.write_text(
        "subject,predicate,object,subject_type,confidence\n"
        "A,r,B,Gene,0.5\n"
        "A,,B,,\n"
        "C,r,D,T\x01,\n"
        "E,r,F,,nan\n",
        encoding="utf-8",
    )
    errors = RowErrors()
    records = list(read_records(path, errors=errors))
    assert [(line, type(r).__name__) for line, r in records] == [
        (2, "RelationshipRecord"),
        (2, "ImpliedEntity"),
        (2, "ImpliedEntity"),
    ]
    assert [(row.line, row.message.split(":")[0]) for row in errors.rows] == [
        (3, "predicate"),
        (4, "entity_type"),
        (5, "confidence"),
    ]


def test_a_multi_line_value_in_an_id_column_points_at_the_missing_quote(tmp_path: Path) -> None:
    path = tmp_path / "g.csv"
    path.write_text('A,r,"B\nC,r,D"\nE,r,F\n', encoding="utf-8")
    with pytest.raises(BadRow, match=r"g\.csv:1: object: a quoted value runs from line 1 to line 2"):
        list(read_records(path))


def test_load_reports_bad_rows_of_every_source_and_writes_nothing(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    first.write_text('{"kind": "entity", "id": "A"}\n', encoding="utf-8")
    second = tmp_path / "b.csv"
    second.write_text('A,r,"B\n', encoding="utf-8")
    third = tmp_path / "c.jsonl"
    third.write_text("".join(f'{{"kind": "entity", "id": "{i}"}}\n' for i in range(30)), encoding="utf-8")
    db = tmp_path / "s.sqlite"
    with pytest.raises(BadRows) as caught:
        load_sqlite(db, [first, second, third], max_errors=5)
    assert caught.value.count == 32
    assert [(Path(row.path).name, row.line) for row in caught.value.rows] == [
        ("a.jsonl", 1), ("b.csv", 1), ("c.jsonl", 1), ("c.jsonl", 2), ("c.jsonl", 3),
    ]
    assert not db.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.csv", "c.jsonl"]


def test_records_refuse_control_characters_in_ids_and_non_finite_confidences(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(
        '{"kind": "evidence", "subject": "A\\tB", "predicate": "r", "object": "C"}\n'
        '{"kind": "relationship", "subject": "A", "predicate": "r", "object": "B", "confidence": 1e400}\n',
        encoding="utf-8",
    )
    errors = RowErrors()
    assert list(read_bundle(path, errors=errors)) == []
    assert [row.message for row in errors.rows] == [
        "subject: must not contain control characters or lone surrogates (found '\\t')",
        "confidence: inf is not a finite number",
    ]


def test_a_store_with_a_valid_loaded_row_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(
        '\ufeff{"kind": "entity", "id": "A", "entity_type": "T", "name": "caf\u00e9 \U0001f600"}\n', encoding="utf-8"
    )
    load_sqlite(tmp_path / "s.sqlite", [path], embedder=None)
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        assert conn.execute("SELECT name FROM entity").fetchall() == [("caf\u00e9 \U0001f600",)]
