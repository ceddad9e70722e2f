"""Reading KGX graphs (Biolink): node and edge files as TSV, CSV or JSON Lines, one record a row.

A file is a node file when its header (or a JSON Lines record) has ``id`` and no ``subject``, an edge
file when it has ``subject``, ``predicate`` and ``object``; the name does not matter (``--format kgx``
takes the files, or a directory of ``*nodes.tsv``/``*edges.tsv`` or ``.jsonl``). Read as a stream.

Mapping (docs/bundle-format.md#kgx):

* node: ``id`` → id; ``category`` → type: the last category that is not ``biolink:NamedThing``, without
  the ``biolink:`` prefix (all of them in ``properties.category``); ``name`` → name; ``synonym`` →
  synonyms; ``iri`` → ``canonical_url``; ``deprecated: true`` → hidden (``status: "merged"``); every other
  column (``description``, ``xref``, ``provided_by``, ``in_taxon``, …) → a property;
* edge: ``subject``, ``object`` → the ends; ``predicate`` → predicate without the ``biolink:`` prefix;
  ``publications`` → ``source_documents``; every other column (``id``, ``relation``,
  ``primary_knowledge_source``, ``knowledge_level``, …) → a property.

TSV and CSV cells: empty ones are left out; multivalued columns (:data:`LIST_COLUMNS`) and any other
cell holding ``|`` are lists split on it, except the single-valued ``id``, ``name``, ``description``,
``subject``, ``predicate``, ``object``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bfsql.loading.bundle import Record, parse_json_line, parse_record
from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits, may_break_limits, text_may_break_limits
from bfsql.loading.lines import ByteCallback, bounded_lines, decode_line
from bfsql.loading.readers import DEFAULT_ENTITY_TYPE
from bfsql.loading.table_rows import header_rows

__all__ = ["LIST_COLUMNS", "kgx_row", "read_kgx"]

LIST_COLUMNS = frozenset({
    "category", "synonym", "xref", "provided_by", "same_as", "in_taxon", "publications", "qualifiers",
    "aggregator_knowledge_source", "knowledge_source", "has_attribute",
})
"""KGX's multivalued columns: a list even with one value."""

_SINGLE_COLUMNS = frozenset({"id", "name", "description", "subject", "predicate", "object"})
_BIOLINK = "biolink:"
_GENERIC_CATEGORIES = frozenset({"NamedThing", "Entity"})


def _cell(column: str, text: str) -> Any:
    """A TSV/CSV cell as KGX means it: a list for multivalued columns or ``|``-separated values."""
    if column in _SINGLE_COLUMNS or (column not in LIST_COLUMNS and "|" not in text):
        return text
    return [part.strip() for part in text.split("|") if part.strip()]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _short(value: str) -> str:
    """A Biolink CURIE without its ``biolink:`` prefix (``biolink:Gene`` → ``Gene``)."""
    return value[len(_BIOLINK):] if value.startswith(_BIOLINK) else value


def _entity_type(categories: list[Any]) -> str:
    """The last category that is not a root (``NamedThing``), without ``biolink:``; ``Entity`` for none."""
    names = [_short(str(c)) for c in categories if str(c).strip()]
    specific = [n for n in names if n not in _GENERIC_CATEGORIES]
    return (specific or names or [DEFAULT_ENTITY_TYPE])[-1]


def _node(record: dict[str, Any]) -> dict[str, Any]:
    """The entity row of a KGX node record."""
    properties = {k: v for k, v in record.items() if k not in ("id", "name", "synonym", "iri")}
    row: dict[str, Any] = {
        "kind": "entity",
        "id": record.get("id"),
        "entity_type": _entity_type(_as_list(record.get("category", []))),
        "name": record.get("name"),
        "synonyms": _as_list(record.get("synonym", [])),
        "properties": properties,
    }
    if record.get("iri"):
        row["canonical_url"] = record["iri"]
    if record.get("deprecated") in (True, "true", "True"):
        row["status"] = "merged"
    return row


def _edge(record: dict[str, Any]) -> dict[str, Any]:
    """The relationship row of a KGX edge record."""
    properties = {k: v for k, v in record.items() if k not in ("subject", "predicate", "object", "publications")}
    predicate = record.get("predicate")
    return {
        "kind": "relationship",
        "subject": record.get("subject"),
        "predicate": _short(predicate) if isinstance(predicate, str) else predicate,
        "object": record.get("object"),
        "source_documents": _as_list(record.get("publications", [])),
        "properties": properties,
    }


def _given(row: dict[str, Any]) -> dict[str, Any]:
    """The row without the fields its record lacks (so that a missing end is called missing)."""
    return {key: value for key, value in row.items() if value is not None}


def kgx_row(record: dict[str, Any], path: str, line: int) -> dict[str, Any]:
    """The bundle row of one KGX record: an edge when it has ``subject``, else a node; :class:`BadRow` if neither."""
    if "subject" in record or "object" in record:
        return _given(_edge(record))
    if "id" in record:
        return _given(_node(record))
    raise BadRow(path, line, "a KGX record has 'id' (a node) or 'subject', 'predicate', 'object' (an edge)")


def _table_records(
    path: str, delimiter: str, limits: LoadLimits, errors: RowErrors | None, on_bytes: ByteCallback | None
) -> Iterator[tuple[int, dict[str, Any], bool]]:
    """``(line, record, check)`` of each row of a KGX table, its empty cells left out (and missing ones at its
    end, as KGX writers leave them); ``check``: whether the row could break the limits."""
    columns: list[str] | None = None
    for line, cells in header_rows(path, delimiter, limits, errors, on_bytes):
        if columns is None:
            columns = [cell.strip() for cell in cells]
            if "id" not in columns and not {"subject", "predicate", "object"} <= set(columns):
                raise BadRow(path, line, "a KGX table starts with a header naming id (nodes) or subject, predicate, "
                             f"object (edges); this one names {', '.join(columns[:8])}")
            continue
        if len(cells) > len(columns):
            report(errors, BadRow(path, line, f"expected {len(columns)} columns, got {len(cells)}"))
            continue
        record = {c: _cell(c, v.strip()) for c, v in zip(columns, cells, strict=False) if v.strip()}
        yield line, record, text_may_break_limits([*columns, *cells], limits)


def _json_records(
    path: str, limits: LoadLimits, errors: RowErrors | None, on_bytes: ByteCallback | None
) -> Iterator[tuple[int, dict[str, Any], bool]]:
    """``(line, record, check)`` of each line of a KGX JSON Lines file (``check`` as in :func:`_table_records`)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, path, limits.line_bytes, on_bytes), start=1):
            try:
                text = decode_line(raw, path, number).strip().removeprefix("\ufeff")
                if not text:
                    continue
                record = json.loads(text)
                if not isinstance(record, dict):
                    raise BadRow(path, number, f"expected a JSON object, got {type(record).__name__}")
            except json.JSONDecodeError:
                report(errors, _json_problem(text, path, number, limits))
                continue
            except BadRow as exc:
                report(errors, exc)
                continue
            yield number, {k: v for k, v in record.items() if v not in (None, "", [])}, may_break_limits(text, limits)


def _json_problem(text: str, path: str, line: int, limits: LoadLimits) -> BadRow:
    """The bundle reader's account of a line that is not JSON (it names NaN, nesting, …)."""
    try:
        parse_json_line(text, path, line, limits)
    except BadRow as exc:
        return exc
    return BadRow(path, line, "invalid JSON")


def read_kgx(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(line, record)`` for each node or edge of a KGX file: ``.jsonl`` JSON Lines, ``.csv``, else TSV.

    Bad rows raise :class:`BadRow`, or with ``errors`` are collected there and skipped.
    """
    source = str(path)
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        records = _json_records(source, limits, errors, on_bytes)
    else:
        records = _table_records(source, "," if suffix == ".csv" else "\t", limits, errors, on_bytes)
    for line, record, check in records:
        try:
            yield line, parse_record(kgx_row(record, source, line), source, line, limits, check=check)
        except BadRow as exc:
            report(errors, exc)
