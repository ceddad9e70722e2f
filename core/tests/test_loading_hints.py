"""What a bad bundle row probably meant (bfsql.loading.hints), as the load errors say it."""

from __future__ import annotations

from typing import Any

import pytest

from bfsql.loading.bundle import parse_record
from bfsql.loading.errors import BadRow
from bfsql.loading.hints import suggest_field, suggest_kind

ENTITY_FIELDS = ["id", "entity_type", "name", "synonyms", "properties", "status", "confidence", "source",
                 "canonical_url"]


@pytest.mark.parametrize(
    ("unknown", "missing", "meant"),
    [
        ("type", ["entity_type"], "entity_type"),  # a word of a missing field
        ("type", [], "entity_type"),
        ("entityType", ["entity_type"], "entity_type"),  # the same but for case and separators
        ("Entity-Type", ["entity_type"], "entity_type"),
        ("nmae", [], "name"),  # a close spelling
        ("synonym", [], "synonyms"),
        ("label", [], "name"),  # an alias from other graph formats
        ("url", [], "canonical_url"),
        ("colour", [], None),
    ],
)
def test_an_unknown_entity_field_suggests_the_field_it_means(unknown: str, missing: list[str], meant: str | None):
    assert suggest_field(unknown, "entity", ENTITY_FIELDS, missing) == meant


def test_a_relationship_field_from_another_format_suggests_the_bundle_field() -> None:
    fields = ["subject", "predicate", "object", "confidence", "source_documents", "properties"]
    missing = ["subject", "object"]
    assert [suggest_field(f, "relationship", fields, missing) for f in ("source", "target", "type", "relation")] == [
        "subject", "object", "predicate", "predicate"]


@pytest.mark.parametrize(
    ("given", "meant"),
    [("node", "entity"), ("nodes", "entity"), ("Edge", "relationship"), ("relationships", "relationship"),
     ("entites", "entity"), ("provenance", "evidence"), ("thing", None)],
)
def test_an_unknown_kind_suggests_the_kind_it_means(given: str, meant: str | None) -> None:
    assert suggest_kind(given, ["entity", "relationship", "evidence"]) == meant


def problem(row: dict[str, Any]) -> str:
    with pytest.raises(BadRow) as raised:
        parse_record(row, "g.jsonl", 3)
    assert str(raised.value) == f"g.jsonl:3: {raised.value.message}"
    return raised.value.message


def test_a_did_you_mean_replaces_the_missing_field_it_names() -> None:
    assert problem({"kind": "entity", "id": "A", "type": "Gene"}) == "unknown field 'type'; did you mean 'entity_type'?"
    # other problems of the row are still said
    assert problem({"kind": "entity", "type": "Gene", "confidence": "high"}) == (
        "unknown field 'type'; did you mean 'entity_type'?; id: Field required; "
        "confidence: Input should be a valid number, unable to parse string as a number"
    )


def test_unknown_fields_without_a_likely_meaning_are_named_with_the_fields_there_are() -> None:
    assert problem({"kind": "evidence", "subject": "A", "predicate": "p", "object": "B", "txt": "x", "page": 3}) == (
        "unknown fields 'txt', 'page'; an evidence record has subject, predicate, object, text_span, confidence, "
        "document_id, section"
    )
    assert problem({"kind": "entity", "id": "A", "entity_type": "T", "colour": "red"}).endswith(
        "put other fields in 'properties'"
    )


def test_a_missing_kind_names_the_kinds_and_the_one_the_row_looks_like() -> None:
    kinds = "one of 'entity', 'relationship', 'evidence'"
    assert problem({"id": "A", "entity_type": "T"}) == (
        f"missing field 'kind': each row says which record it is, {kinds}; "
        "this row looks like an entity: add \"kind\": \"entity\""
    )
    assert problem({"subject": "A", "predicate": "p", "object": "B"}).endswith('add "kind": "relationship"')
    assert problem({"subject": "A", "predicate": "p", "object": "B", "text_span": "t"}).endswith(
        'add "kind": "evidence"'
    )
    assert problem({"kind": None, "nothing": 1}) == f"missing field 'kind': each row says which record it is, {kinds}"


def test_an_unknown_kind_says_what_it_probably_means() -> None:
    assert problem({"kind": "node", "id": "A", "entity_type": "T"}) == (
        "unknown kind 'node'; did you mean 'entity'? (the kinds are 'entity', 'relationship', 'evidence')"
    )
    assert problem({"kind": ["entity"], "id": "A"}) == (
        "unknown kind ['entity']; the kinds are 'entity', 'relationship', 'evidence'; "
        "this row looks like an entity: write \"kind\": \"entity\""
    )
    assert len(problem({"kind": "x" * 10_000})) < 300  # a huge value is clipped
