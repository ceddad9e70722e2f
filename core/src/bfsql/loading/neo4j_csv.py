"""Reading Neo4j import CSV (the files of ``neo4j-admin database import``): node files and relationship files.

The header names each column ``name:TYPE``: a node file has an ``:ID`` column (``movieId:ID``,
``id:ID(Movie)`` with an id space), a relationship file ``:START_ID`` and ``:END_ID``. The header is the
file's first row (a header kept in a file of its own is not read). Read as a stream; ``.tsv`` files are
tab-separated.

Mapping (docs/bundle-format.md#neo4j-import-csv):

* node: the ``:ID`` value → id (``Movie:tt0133093`` when the column names an id space, so that two spaces
  may reuse ids); the first ``:LABEL`` (labels are ``;``-separated) → type (all in ``properties.labels``;
  none: the id space, else ``Entity``); the ``name`` (else ``title``) column → name; every other column
  → a property of its name, typed by its header (``int``/``long``/``float``/``double``/``boolean``,
  ``[]`` arrays ``;``-separated, other types as text), the ``:ID`` column's name too (``movieId``);
* relationship: ``:START_ID``/``:END_ID`` → the ends (in their id spaces), ``:TYPE`` → predicate, every
  other column → a property.

Empty cells are left out, as Neo4j leaves them; ``:IGNORE`` columns are skipped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bfsql.loading.bundle import Record, parse_record
from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits, text_may_break_limits
from bfsql.loading.lines import ByteCallback
from bfsql.loading.readers import DEFAULT_ENTITY_TYPE
from bfsql.loading.table_rows import header_rows

__all__ = ["Column", "parse_header", "read_neo4j_csv"]

_FIELD = re.compile(r"^(?P<name>[^:]*)(?::(?P<type>[A-Za-z_]+(?:\[\])?)(?:\((?P<group>[^)]*)\))?)?$")
_SPECIAL = frozenset({"ID", "LABEL", "START_ID", "END_ID", "TYPE", "IGNORE"})
_INTEGERS = frozenset({"int", "long", "short", "byte"})
_FLOATS = frozenset({"float", "double"})
_NAME_COLUMNS = ("name", "title")


@dataclass(frozen=True)
class Column:
    """One header field: a property (``name``, ``kind``) or a special column (``ID``, ``LABEL``, ...)."""

    name: str
    kind: str
    """``ID``, ``LABEL``, ``START_ID``, ``END_ID``, ``TYPE``, ``IGNORE``, or a property type (``string``, ``int[]``)."""
    group: str | None = None
    """The id space of an ``ID``, ``START_ID`` or ``END_ID`` column."""


def parse_header(cells: list[str], path: str, line: int) -> list[Column]:
    """The columns of a header row; :class:`BadRow` for a field that is not ``name:TYPE(space)``."""
    columns = []
    for cell in cells:
        match = _FIELD.match(cell.strip())
        if match is None:
            raise BadRow(path, line, f"header field {cell.strip()!r} is not of the form name:TYPE")
        kind = match["type"] or "string"
        columns.append(Column(match["name"], kind if kind.upper() not in _SPECIAL else kind.upper(),
                              match["group"] or None))
    return columns


def _typed(text: str, kind: str, path: str, line: int, column: str) -> Any:
    """A cell as its header's type says: numbers, booleans, ``;``-separated arrays, else text."""
    if kind.endswith("[]"):
        return [_typed(part, kind[:-2], path, line, column) for part in text.split(";") if part != ""]
    base = kind.lower()
    try:
        if base in _INTEGERS:
            return int(text.strip())
        if base in _FLOATS:
            value = float(text.strip())
            if not math.isfinite(value):
                raise ValueError(text)
            return value
    except ValueError:
        raise BadRow(path, line, f"{column}: {text!r} is not a {base}") from None
    if base == "boolean":
        return text.strip().lower() == "true"
    return text


def _spaced(value: str, group: str | None) -> str:
    """An id in its id space: ``space:id`` when the column names one."""
    return f"{group}:{value}" if group else value


def _node_row(cells: list[tuple[Column, str]], path: str, line: int) -> dict[str, Any]:
    """The entity row of a node file's row."""
    entity_id: str | None = None
    labels: list[str] = []
    properties: dict[str, Any] = {}
    space: str | None = None
    for column, text in cells:
        if column.kind == "ID":
            entity_id, space = _spaced(text, column.group), column.group
            if column.name:
                properties[column.name] = text
        elif column.kind == "LABEL":
            labels.extend(label for label in text.split(";") if label)
        else:
            properties[column.name] = _typed(text, column.kind, path, line, column.name)
    if labels:
        properties["labels"] = labels
    name = next((properties.pop(c) for c in _NAME_COLUMNS if isinstance(properties.get(c), str)), None)
    row = {"kind": "entity", "id": entity_id, "entity_type": (labels or [space or DEFAULT_ENTITY_TYPE])[0],
           "name": name, "properties": properties}
    return {key: value for key, value in row.items() if value is not None}


def _relationship_row(cells: list[tuple[Column, str]], path: str, line: int) -> dict[str, Any]:
    """The relationship row of a relationship file's row."""
    row: dict[str, Any] = {"kind": "relationship", "properties": {}}
    keys = {"START_ID": "subject", "END_ID": "object", "TYPE": "predicate"}
    for column, text in cells:
        if column.kind in keys:
            row[keys[column.kind]] = _spaced(text, column.group) if column.kind != "TYPE" else text
        else:
            row["properties"][column.name] = _typed(text, column.kind, path, line, column.name)
    if "predicate" not in row:
        raise BadRow(path, line, "a relationship without a :TYPE (give the file a :TYPE column)")
    return row


_RowMaker = Callable[[list[tuple[Column, str]], str, int], dict[str, Any]]


def _row_maker(columns: list[Column], path: str, line: int) -> _RowMaker:
    """How a file's rows become bundle rows, by its header: nodes (``:ID``) or relationships."""
    kinds = {column.kind for column in columns}
    if {"START_ID", "END_ID"} <= kinds:
        return _relationship_row
    if "ID" in kinds:
        return _node_row
    raise BadRow(path, line, "a Neo4j import header names an :ID column (nodes) or :START_ID and :END_ID "
                 "(relationships)")


def read_neo4j_csv(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(line, record)`` for each row of a Neo4j import node or relationship file.

    Bad rows raise :class:`BadRow`, or with ``errors`` are collected there and skipped.
    """
    source = str(path)
    delimiter = "\t" if Path(path).suffix.lower() == ".tsv" else ","
    columns: list[Column] | None = None
    make: _RowMaker = _node_row
    for line, cells in header_rows(source, delimiter, limits, errors, on_bytes):
        if columns is None:
            columns = parse_header(cells, source, line)
            make = _row_maker(columns, source, line)
            continue
        if len(cells) > len(columns):
            report(errors, BadRow(source, line, f"expected {len(columns)} columns, got {len(cells)}"))
            continue
        try:  # cells missing at the end of a row are empty ones
            kept = [(c, v) for c, v in zip(columns, cells, strict=False) if v != "" and c.kind != "IGNORE"]
            check = text_may_break_limits([*(f"{c.name}\t{c.group or ''}" for c in columns), *cells], limits)
            yield line, parse_record(make(kept, source, line), source, line, limits, check=check)
        except BadRow as exc:
            report(errors, exc)
