"""Compact RDF ids (bfsql.loading.prefixes): the SPARQL backend's conventions, and how loads record them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bfsql.loading.errors import LoadError
from bfsql.loading.prefixes import BUILTIN_PREFIXES, PrefixMap, parse_prefix, turtle_prefixes
from bfsql.loading.readers import read_records
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.sqlite_loader import load_sqlite

EX = "http://example.org/"


def test_compaction_follows_the_sparql_backends_rules() -> None:
    prefixes = PrefixMap.build([("ex", EX), ("exv", EX + "vocab#"), ("", "http://default.org/")])
    assert prefixes.compact(EX + "braf") == "ex:braf"
    assert prefixes.compact(EX + "vocab#Gene") == "exv:Gene"  # the longest namespace wins
    assert prefixes.compact("http://default.org/Gene") == "Gene"  # the default namespace: bare names
    assert prefixes.compact("http://default.org/a:b") == "http://default.org/a:b"  # a bare name cannot hold ':'
    assert prefixes.compact("http://default.org/") == "http://default.org/"
    assert prefixes.compact("http://www.w3.org/2002/07/owl#Thing") == "owl:Thing"  # built in
    assert prefixes.compact("http://elsewhere.org/x") == "http://elsewhere.org/x"


def test_earlier_groups_win_and_builtins_come_last() -> None:
    prefixes = PrefixMap.build([("a", EX)], [("b", EX), ("a", "http://other.org/"), ("owl", "http://mine.org/")])
    assert prefixes.prefixes[:2] == (("a", EX), ("owl", "http://mine.org/"))
    assert prefixes.compact(EX + "x") == "a:x"
    assert ("owl", BUILTIN_PREFIXES[2][1]) not in prefixes.prefixes  # redefined: the built-in one is left out


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("ex", "NAME=IRI"),
        ("ex=", "NAME=IRI"),
        ("1x=http://x/", "must start with a letter"),
        ("http=http://x/", "IRI scheme"),
        ("ex=example.org/", "not an absolute IRI"),
        ("ex=http://x/<y>", "contains '<'"),
    ],
)
def test_bad_prefixes_are_refused(spec: str, says: str) -> None:
    with pytest.raises(LoadError, match=says):
        parse_prefix(spec)


def test_parse_prefix() -> None:
    assert parse_prefix(" ex = http://example.org/ ") == ("ex", EX)
    assert parse_prefix("=http://example.org/") == ("", EX)


def test_turtle_declarations_are_found(tmp_path: Path) -> None:
    path = tmp_path / "g.ttl"
    path.write_text(
        f"@prefix ex: <{EX}> .\nPREFIX schema: <http://schema.org/>\n@prefix : <http://d.org/> .\n"
        "@prefix rel: <relative/> .\n@prefix http: <http://bad/> .\nex:a ex:b ex:c .\n",
        encoding="utf-8",
    )
    assert list(turtle_prefixes(path)) == [("ex", EX), ("schema", "http://schema.org/"), ("", "http://d.org/")]


def test_rdf_reader_compacts_ids_and_keeps_the_iri(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    path = tmp_path / "g.ttl"
    path.write_text(f'@prefix ex: <{EX}> .\nex:braf a ex:Gene ; ex:memberOf ex:raf ; ex:label "x" .\n', "utf-8")
    records = [record for _, record in read_records(path, prefixes=PrefixMap.build([("ex", EX)]))]
    assert records[0] == EntityRecord(
        id="ex:braf", entity_type="Gene", name="braf", properties={"label": "x"}, canonical_url=EX + "braf"
    )
    assert records[1] == RelationshipRecord(subject="ex:braf", predicate="memberOf", object="ex:raf")
    assert (records[2].id, records[2].canonical_url) == ("ex:raf", EX + "raf")  # type: ignore[union-attr]


def test_a_load_records_its_prefixes_for_the_next(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    turtle = tmp_path / "g.ttl"
    turtle.write_text(f"@prefix ex: <{EX}> .\nex:a ex:likes ex:b .\n", encoding="utf-8")
    triples = tmp_path / "g.nt"
    triples.write_text(f"<{EX}b> <{EX}likes> <{EX}c> .\n", encoding="utf-8")
    db = tmp_path / "s.sqlite"
    load_sqlite(db, [turtle], embedder=None, prefixes=["x=http://x.org/"])
    load_sqlite(db, [triples], embedder=None)
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT entity_id FROM entity ORDER BY 1")] == ["ex:a", "ex:b", "ex:c"]
        recorded = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'rdf_prefixes'").fetchone()[0])
    assert recorded[:2] == [["x", "http://x.org/"], ["ex", EX]]
    with pytest.raises(LoadError, match=r"already writes ids under http://example\.org/ as 'ex:"):
        load_sqlite(db, [triples], embedder=None, prefixes=["e=" + EX])
    with pytest.raises(LoadError, match=r"already writes ids under http://x\.org/ as 'x:"):
        load_sqlite(db, [triples], embedder=None, prefixes=["x=http://y.org/"])
    load_sqlite(db, [triples], embedder=None, prefixes=["ex=" + EX])  # the same pair again is fine


def test_a_load_of_bundles_alone_records_no_prefixes(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(f'{{"kind": "entity", "id": "{EX}a", "entity_type": "T"}}\n', encoding="utf-8")
    load_sqlite(tmp_path / "s.sqlite", [path], embedder=None, prefixes=["ex=" + EX])
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        assert conn.execute("SELECT entity_id FROM entity").fetchall() == [(EX + "a",)]  # bundle ids are kept
        assert conn.execute("SELECT value FROM meta WHERE key = 'rdf_prefixes'").fetchone() is None
