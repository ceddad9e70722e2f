"""JSONL bundles loaded by ``load_postgres`` store what core's reader reads, and fail as it fails.

Each bundle is loaded twice into fresh databases: by ``load_postgres`` (blocks of bare
relationships sent as COPY text, other rows staged one by one) and by ``load_records`` over core's
own ``read_bundle``; every row of every table must be equal. Bad lines must raise the BadRow core's
reader raises, and leave nothing loaded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from test_loader import snapshot

from bfsql import BadRow, EntityRecord, RelationshipRecord, read_bundle
from bfsql_postgres import copying
from bfsql_postgres.loader import load_postgres, load_records

from conftest import Server


def _value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(9 if depth < 3 else 6)
    if choice == 0:
        return rng.randrange(-1000, 1000)
    if choice == 1:
        return rng.choice([0.5, 1.0, 0.1, 123.456, -2.25, 1e-7, 3.0e10, 0.30000000000000004])
    if choice == 2:
        return rng.choice(["", "plain", "ünïcödé", "日本語", "quote \" inside", "back\\slash", "tab\there", "😀"])
    if choice == 3:
        return rng.choice([True, False, None])
    if choice in (4, 5):
        return f"text {rng.randrange(100)}"
    if choice == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randrange(4))}


def _id(rng: random.Random, n: int) -> str:
    return rng.choice(["E:{}", "é/{}", "日{}", "a b {}", "x\u00a0{}", "id-{}"]).format(n)


def bundle_lines(rng: random.Random, size: int = 300) -> list[str]:
    """JSONL lines of every kind, with optional fields present or not, repeated keys, and odd spellings."""
    lines = []
    for _ in range(size):
        kind = rng.choice(["entity", "entity", "relationship", "relationship", "evidence"])
        if kind == "entity":
            row: dict[str, Any] = {"kind": "entity", "id": _id(rng, rng.randrange(60)),
                                   "entity_type": rng.choice(["Gene", "Disease"])}
            for key, make in (("name", lambda: rng.choice([None, "", "Name", "naïve ☃"])),
                              ("synonyms", lambda: [f"syn {i}" for i in range(rng.randrange(3))]),
                              ("properties", lambda: {f"p{i}": _value(rng) for i in range(rng.randrange(4))}),
                              ("status", lambda: rng.choice([None, "canonical", "merged"])),
                              ("confidence", lambda: rng.choice([None, 1, 0.75, 0, 2.5e-3])),
                              ("source", lambda: "src"), ("canonical_url", lambda: "https://example.org/x")):
                if rng.random() < 0.5:
                    row[key] = make()
        elif kind == "relationship":
            row = {"kind": "relationship", "subject": _id(rng, rng.randrange(60)),
                   "predicate": rng.choice(["binds", "is a", "→"]), "object": _id(rng, rng.randrange(80))}
            for key, make in (("confidence", lambda: rng.choice([None, 1, 0.5])),
                              ("source_documents", lambda: [f"PMID:{n}" for n in range(rng.randrange(3))]),
                              ("properties", lambda: {"weight": _value(rng), "nested": {"a": [1, 2.0, "x"]}})):
                if rng.random() < 0.5:
                    row[key] = make()
        else:
            row = {"kind": "evidence", "subject": _id(rng, rng.randrange(60)), "predicate": "binds",
                   "object": _id(rng, rng.randrange(80))}
            for key in ("text_span", "document_id", "section"):
                if rng.random() < 0.6:
                    row[key] = rng.choice([None, "a span", "PMID:1", "results"])
            if rng.random() < 0.5:
                row["confidence"] = rng.choice([None, 0.9, 1])
        items = list(row.items())
        rng.shuffle(items)  # key order is no record's business
        text = json.dumps(dict(items), ensure_ascii=rng.random() < 0.2)
        if rng.random() < 0.1:
            text = text.replace(": ", ":").replace(", ", ",")
        lines.append(text)
        if rng.random() < 0.03:
            lines.append(rng.choice(["", "   ", "\t"]))
    return lines


async def _both_ways(pg_server: Server, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    ours, cores = await pg_server.create_database("sqlread"), await pg_server.create_database("coreread")
    await load_postgres(ours, [path], embedder="none")
    await load_records(cores, (record for _, record in read_bundle(path)), embedder="none")
    return await snapshot(ours), await snapshot(cores)


@pytest.mark.parametrize("number", range(3))
async def test_the_database_stores_what_cores_reader_reads(pg_server: Server, tmp_path: Path, number: int) -> None:
    rng = random.Random(number)
    lines = bundle_lines(rng)
    path = tmp_path / "bundle.jsonl"
    path.write_text("\n".join(lines) + ("\n" if number % 2 else ""), encoding="utf-8")
    ours, cores = await _both_ways(pg_server, path)
    assert ours == cores
    assert len(ours["relationship"]) > 50 and len(ours["entity"]) > 30 and ours["evidence"]


def _bare(rng: random.Random, count: int) -> list[str]:
    """Bare relationship lines written the usual way (a block of them is read by one regular expression)."""
    ids = ["E:{}", "é/{}", "日{}", "a b {}", "x\u00a0{}", "id-{}", "semi;colon {}"]
    return [json.dumps({"kind": "relationship", "subject": rng.choice(ids).format(rng.randrange(500)),
                        "predicate": rng.choice(["binds", "is a", "→"]),
                        "object": rng.choice(ids).format(rng.randrange(500))}, ensure_ascii=False)
            for _ in range(count)]


@pytest.mark.parametrize("repeats", [False, True], ids=["no triple twice", "triples repeated"])
async def test_blocks_of_bare_relationships_store_what_cores_reader_reads(
    pg_server: Server, tmp_path: Path, repeats: bool
) -> None:
    """Blocks of bare relationships (more than a reader's block of them, sent as COPY text) among rows staged one
    by one: a triple given again later, bare or with columns, wins as core's reader says."""
    rng = random.Random(7)
    bare = _bare(rng, 40_000)
    if not repeats:
        bare = list(dict.fromkeys(bare))
    lines = bundle_lines(rng, 50) + bare[: len(bare) // 2] + bundle_lines(rng, 50) + bare[len(bare) // 2 :]
    if repeats:
        lines += [*bare[:5], json.dumps({**json.loads(bare[10]), "confidence": 0.5})]
    path = tmp_path / "blocks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ours, cores = await _both_ways(pg_server, path)
    assert ours == cores
    assert len(ours["relationship"]) > 10_000


async def test_odd_lines_are_read_by_core(pg_server: Server, tmp_path: Path) -> None:
    """A BOM, CRLF line ends, numbers Python reads as floats, escapes, control and C1 characters, deep nesting."""
    lines = [
        '\ufeff{"kind": "entity", "id": "A", "entity_type": "T"}',
        '{"kind": "entity", "id": "B", "entity_type": "T", "properties": {"big": 1e2, "small": 2.5E-3, "z": -0.0}}',
        '{"kind": "entity", "id": "C", "entity_type": "T", "confidence": -0.0, "name": "tab\\tin name"}',
        '{"kind": "entity", "id": "D", "entity_type": "T", "name": "\\u00e9t\\u00e9", "synonyms": ["\\"q\\""]}',
        '{"kind": "entity", "id": "E", "entity_type": "T", "name": "del \x7f and c1 \x85"}',
        '{"kind": "relationship", "subject": "A", "predicate": "p", "object": "B", "properties": {"lists": ['
        + ", ".join(["[]"] * 40) + "]}}",
        '{"kind": "relationship", "subject": "A", "predicate": "p", "object": "C", "confidence": 1}',
        '  {"kind": "relationship", "subject": "B", "predicate": "p", "object": "C"}  ',
    ]
    for ending in ("\n", "\r\n"):
        path = tmp_path / f"odd{len(ending)}.jsonl"
        path.write_bytes(ending.join(lines).encode("utf-8") + ending.encode())
        ours, cores = await _both_ways(pg_server, path)
        assert ours == cores and len(ours["entity"]) == 5 and len(ours["relationship"]) == 3


BAD_LINES = [
    '{"kind": "entity", "id": "X", "entity_type": "T", "colour": "red"}',  # a key no record has
    '{"kind": "entiti", "id": "X", "entity_type": "T"}',
    '{"kind": "entity", "id": "   ", "entity_type": "T"}',
    '{"kind": "entity", "id": "\u3000", "entity_type": "T"}',  # blank to Python
    '{"kind": "entity", "id": "a\\nb", "entity_type": "T"}',
    '{"kind": "entity", "id": "a\x85b", "entity_type": "T"}',
    '{"kind": "relationship", "subject": "a", "predicate": "p", "object": 5}',
    '{"kind": "relationship", "subject": "a", "predicate": "p", "object": "b", "confidence": NaN}',
    '{"kind": "relationship", "subject": "a", "predicate": "p", "object": "b", "confidence": "high"}',
    '{"kind": "relationship", "subject": "a", "predicate": "p", "object": "b", "source_documents": [1]}',
    '{"kind": "relationship", "subject": "a", "predicate": "p", "object": "b", "source_documents": null}',
    '{"kind": "entity", "id": "X", "entity_type": "T", "name": "nul \\u0000"}',
    '{"kind": "entity", "id": "X", "entity_type": "T", "properties": ' + "[" * 40 + "]" * 40 + "}",
    '{"kind": "entity", "id": "X", "entity_type": "T"',
    "[1, 2]",
    "\\.",
    '{"kind": "entity", "id": "X", "entity_type": "T"}\x01',
]


@pytest.mark.parametrize("bad", BAD_LINES)
async def test_a_bad_line_fails_as_cores_reader_fails(pg_server: Server, tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = '{"kind": "entity", "id": "G", "entity_type": "T"}'
    path.write_text("\n".join([good, bad, good]) + "\n", encoding="utf-8")
    with pytest.raises(BadRow) as core:
        list(read_bundle(path))
    dsn = await pg_server.create_database("bad")
    with pytest.raises(BadRow) as ours:
        await load_postgres(dsn, [path], embedder="none")
    assert str(ours.value) == str(core.value)
    conn = await asyncpg.connect(dsn)
    try:
        assert await conn.fetchval("SELECT to_regclass('entity')") is None  # not even the schema was made
    finally:
        await conn.close()


async def test_bytes_that_are_not_utf8_are_named(pg_server: Server, tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"kind": "entity", "id": "G", "entity_type": "T"}\n'
                     b'{"kind": "entity", "id": "caf\xe9", "entity_type": "T"}\n')
    with pytest.raises(BadRow) as core:
        list(read_bundle(path))
    with pytest.raises(BadRow) as ours:
        await load_postgres(await pg_server.create_database("latin"), [path], embedder="none")
    assert str(ours.value) == str(core.value) and ":2:" in str(ours.value)


SEED = [
    '{"kind": "entity", "id": "SEED:1", "entity_type": "Seed"}',
    '{"kind": "relationship", "subject": "SEED:1", "predicate": "seeds", "object": "SEED:1"}',
    '{"kind": "evidence", "subject": "SEED:1", "predicate": "seeds", "object": "SEED:1", "text_span": "s"}',
]


def _without_seed(state: dict[str, Any]) -> dict[str, Any]:
    return {name: [row for row in rows if not str(row[0]).startswith("SEED:")] for name, rows in state.items()}


@pytest.mark.parametrize(("number", "small"), [(0, False), (1, False), (2, True)])
async def test_a_load_into_empty_tables_keeps_what_a_merge_keeps(
    pg_server: Server, tmp_path: Path, number: int, small: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty tables take the rows straight from COPY (a key given twice is settled after); tables that hold rows
    take them through the staging tables' merge. Both keep the last record of every key, within a bundle (bare
    relationships repeated in blocks and one by one, with columns or without, entities repeated) and across two;
    also when the rows of each table wait for their turn only briefly (``small``: many COPY statements)."""
    if small:
        monkeypatch.setattr(copying, "WAITING_BYTES", 2_000)
        monkeypatch.setattr(copying, "CHUNK_BYTES", 500)
    rng = random.Random(100 + number)
    bare = _bare(rng, 60_000)  # halves of 2.5 MB: each holds a block of the reader's that is all bare lines
    first = [json.dumps({**json.loads(bare[14_000]), "confidence": 0.25}), *bundle_lines(rng, 200), *bare[:30_000],
             *bundle_lines(rng, 200), *bare[30_000:], *bare[:5], *bare[20_000:20_005],
             json.dumps({**json.loads(bare[15_000]), "confidence": 0.5}), *bundle_lines(rng, 50)]
    second = [*bundle_lines(rng, 100), *bare[::7], json.dumps({**json.loads(bare[14]), "properties": {"w": 1}})]
    paths = []
    for name, lines in (("seed", SEED), ("first", first), ("second", second)):
        paths.append(tmp_path / f"{name}.jsonl")
        paths[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    fresh, merged = await pg_server.create_database("fresh"), await pg_server.create_database("merged")
    await load_postgres(merged, [paths[0]], embedder="none")  # every table holds a row: the loads merge
    last: dict[tuple[str, ...], tuple[Any, ...]] = {}  # core's reader's last record of each key
    for path in paths[1:]:
        for _, record in read_bundle(path):
            if isinstance(record, EntityRecord):
                last[(record.id,)] = (record.name, record.confidence)
            elif isinstance(record, RelationshipRecord):
                last[(record.subject, record.predicate, record.object)] = (record.confidence, record.source_documents)
        await load_postgres(fresh, [path], embedder="none")
        await load_postgres(merged, [path], embedder="none")
        ours, theirs = await snapshot(fresh), _without_seed(await snapshot(merged))
        assert ours == theirs
        stored = {(r[0],): (r[2], r[5]) for r in ours["entity"]}
        stored.update({r[:3]: (r[3], json.loads(r[4])) for r in ours["relationship"]})
        assert stored == last
        assert len(ours["relationship"]) > 20_000 and len(ours["entity"]) > 30 and ours["evidence"]


async def test_bare_relationships_get_their_columns_where_the_table_has_no_defaults(
    pg_server: Server, tmp_path: Path
) -> None:
    """A relationship table made by another tool, without bfsql's defaults: bare relationships copied straight into
    it still get no confidence, ``[]`` and ``{}`` (the table's defaults give them only when they are bfsql's)."""
    dsn = await pg_server.create_database("nodefaults")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "CREATE TABLE relationship (subject_id text NOT NULL, predicate text NOT NULL, object_id text NOT NULL, "
            "confidence double precision DEFAULT 0.5, source_documents jsonb, properties jsonb, "
            "PRIMARY KEY (subject_id, predicate, object_id))"
        )
    finally:
        await conn.close()
    path = tmp_path / "bare.jsonl"
    path.write_text("\n".join(list(dict.fromkeys(_bare(random.Random(3), 30_000)))) + "\n", encoding="utf-8")
    await load_postgres(dsn, [path], embedder="none")
    rows = (await snapshot(dsn))["relationship"]
    assert len(rows) > 25_000 and {r[3:] for r in rows} == {(None, "[]", "{}")}
