"""Reading GraphML: each ``<node>`` an entity, each ``<edge>`` a relationship, ``<data>`` their properties.

Parsed as a stream with the standard library's expat parser (a block of the file at a time, each
element given up once read), so memory stays flat however big the file; it also tells the line of
every element, for errors. networkx's reader builds the whole graph first (see docs/bundle-format.md
for the figures).

Mapping (docs/bundle-format.md#graphml):

* ``<key id attr.name attr.type>`` names and types the ``<data key>`` values (``int``/``long``,
  ``float``/``double``, ``boolean``, ``string``); a key's ``<default>`` is the value of nodes or edges
  without that data;
* node: ``id`` → id; type from the ``labels`` attribute (as Neo4j's APOC writes it, ``:Movie:Sequel``),
  else the data ``entity_type``, ``type``, ``category`` or ``labels``, else ``Entity``; name from the data
  ``name``, ``label`` or ``title`` (a yEd label too); every other data → a property;
* edge: ``source``/``target`` → the ends; predicate from the ``label`` attribute (APOC), else the data
  ``predicate``, ``label``, ``type``, ``relation`` or ``edge_label``, else ``related_to``; the edge's ``id``
  and every other data → properties; an undirected edge (``edgedefault="undirected"``, or
  ``directed="false"``) is stored from source to target with ``properties.directed = false``.

Graph-level data, hyperedges and ports are not read; nested graphs' nodes and edges are.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

from bfsql.loading.bundle import Record, parse_record
from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.lines import BLOCK_BYTES, ByteCallback
from bfsql.loading.readers import DEFAULT_ENTITY_TYPE

__all__ = ["DEFAULT_PREDICATE", "read_graphml"]

DEFAULT_PREDICATE = "related_to"
"""The predicate of an edge that names none."""

_TYPE_DATA = ("entity_type", "type", "category", "labels")
_NAME_DATA = ("name", "label", "title")
_PREDICATE_DATA = ("predicate", "label", "type", "relation", "edge_label")
_YFILES_LABELS = {"nodegraphics": "label", "edgegraphics": "label"}


@dataclass
class _Key:
    """A ``<key>``: the name, type, domain and default of the data that refer to it."""

    name: str
    kind: str
    domain: str
    default: str | None = None
    nested: bool = False
    """A yEd graphics key, whose label is the text of elements nested in the data."""


@dataclass
class _Item:
    """A node or edge being read: its attributes, data and first line."""

    tag: str
    attributes: dict[str, str]
    line: int
    data: dict[str, Any] = field(default_factory=dict)


def _typed(text: str, kind: str) -> Any:
    """A data value as its key's ``attr.type`` says; text when it does not parse as that type."""
    try:
        if kind in ("int", "long"):
            return int(text.strip())
        if kind in ("float", "double"):
            value = float(text.strip())
            return value if math.isfinite(value) else text
    except ValueError:
        return text
    if kind == "boolean":
        return text.strip().lower() in ("true", "1")
    return text


def _pop_first(data: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The first of ``names`` that ``data`` holds as non-empty text, taken out of it; None if none."""
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return data.pop(name)
    return None


def _node_row(item: _Item) -> dict[str, Any]:
    """The entity row of a node."""
    data = item.data
    labels = [label for label in item.attributes.get("labels", "").split(":") if label]
    entity_type = labels[0] if labels else _pop_first(data, _TYPE_DATA)
    if labels:
        data["labels"] = labels
    if isinstance(entity_type, str) and entity_type.startswith(":"):  # APOC's labels as data: ":Movie:Sequel"
        entity_type = next((label for label in entity_type.split(":") if label), None)
    return {"kind": "entity", "id": item.attributes.get("id"), "entity_type": entity_type or DEFAULT_ENTITY_TYPE,
            "name": _pop_first(data, _NAME_DATA), "properties": data}


def _edge_row(item: _Item, directed: bool) -> dict[str, Any]:
    """The relationship row of an edge."""
    data = item.data
    predicate = item.attributes.get("label") or _pop_first(data, _PREDICATE_DATA) or DEFAULT_PREDICATE
    if "id" in item.attributes:
        data.setdefault("id", item.attributes["id"])
    if item.attributes.get("directed", "true" if directed else "false").lower() == "false":
        data["directed"] = False
    return {"kind": "relationship", "subject": item.attributes.get("source"), "predicate": predicate,
            "object": item.attributes.get("target"), "properties": data}


class _GraphmlReader:
    """The expat handlers of one GraphML file; complete rows wait in :attr:`rows` until taken."""

    def __init__(self, path: str, limits: LoadLimits) -> None:
        self.path, self.limits = path, limits
        self.parser = expat.ParserCreate(namespace_separator=" ")
        self.parser.buffer_text = True
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._text
        self.rows: list[tuple[int, dict[str, Any] | BadRow]] = []
        self._keys: dict[str, _Key] = {}
        self._items: list[_Item] = []
        self._directed = [True]
        self._text_parts: list[str] | None = None
        self._text_size = 0
        self._data_key: str | None = None
        self._default_for: _Key | None = None

    def _start(self, qualified: str, attributes: dict[str, str]) -> None:
        tag = qualified.rsplit(" ", 1)[-1]
        if tag in ("node", "edge"):
            self._items.append(_Item(tag, attributes, self.parser.CurrentLineNumber))
        elif tag == "graph":
            self._directed.append(attributes.get("edgedefault", "directed") != "undirected")
        elif tag == "key":
            nested = _YFILES_LABELS.get(attributes.get("yfiles.type", ""))
            name = attributes.get("attr.name") or nested or attributes.get("id", "")
            self._keys[attributes.get("id", "")] = _Key(name, attributes.get("attr.type", "string"),
                                                        attributes.get("for", "all"), nested=nested is not None)
        elif tag == "default" and self._keys:
            self._default_for = list(self._keys.values())[-1]
            self._text_parts, self._text_size = [], 0
        elif tag == "data" and self._data_key is None:
            self._data_key = attributes.get("key", "")
            self._text_parts, self._text_size = [], 0

    def _text(self, text: str) -> None:
        if self._text_parts is None:
            return
        self._text_size += len(text)
        if self._text_size <= self.limits.text_chars:
            self._text_parts.append(text)

    def _end(self, qualified: str) -> None:
        tag = qualified.rsplit(" ", 1)[-1]
        if tag == "data" and self._data_key is not None:
            self._end_data(self._data_key)
        elif tag == "default" and self._default_for is not None:
            self._default_for.default = "".join(self._text_parts or [])
            self._default_for, self._text_parts = None, None
        elif tag in ("node", "edge") and self._items and self._items[-1].tag == tag:
            self._end_item(self._items.pop())
        elif tag == "graph" and len(self._directed) > 1:
            self._directed.pop()

    def _end_data(self, key_id: str) -> None:
        """Give the data just read to the node or edge it is in."""
        text = "".join(self._text_parts or [])
        self._data_key, self._text_parts = None, None
        if not self._items:
            return  # data of the graph itself
        item = self._items[-1]
        key = self._keys.get(key_id, _Key(key_id, "string", "all"))
        if self._text_size > self.limits.text_chars:
            self.rows.append((item.line, BadRow(self.path, self.parser.CurrentLineNumber,
                                                f"data {key.name!r}: more than the limit text_chars = "
                                                f"{self.limits.text_chars:,} characters")))
            return
        item.data[key.name] = " ".join(text.split()) if key.nested else _typed(text, key.kind)

    def _end_item(self, item: _Item) -> None:
        """Queue the row of a node or edge just read, its keys' defaults filled in."""
        for key in self._keys.values():
            if key.default is not None and key.domain in (item.tag, "all") and key.name not in item.data:
                item.data[key.name] = _typed(key.default, key.kind)
        row = _node_row(item) if item.tag == "node" else _edge_row(item, self._directed[-1])
        self.rows.append((item.line, {key: value for key, value in row.items() if value is not None}))


def read_graphml(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(line, record)`` for each node and edge of a GraphML file, in the file's order.

    Bad nodes and edges raise :class:`BadRow`, or with ``errors`` are collected there and skipped; a
    file that is not well-formed XML raises it at the line where it breaks.
    """
    source = str(path)
    reader = _GraphmlReader(source, limits)
    with open(path, "rb") as handle:
        while True:
            block = handle.read(BLOCK_BYTES)
            if on_bytes is not None and block:
                on_bytes(len(block))
            try:
                reader.parser.Parse(block, not block)
            except expat.ExpatError as exc:
                raise BadRow(source, exc.lineno, f"not well-formed GraphML: {expat.ErrorString(exc.code)}") from None
            yield from _records(reader, source, limits, errors)
            if not block:
                return


def _records(
    reader: _GraphmlReader, path: str, limits: LoadLimits, errors: RowErrors | None
) -> Iterator[tuple[int, Record]]:
    """The records of the rows the reader has queued (then forgotten), bad ones reported."""
    rows, reader.rows = reader.rows, []
    for line, row in rows:
        try:
            if isinstance(row, BadRow):
                raise row
            yield line, parse_record(row, path, line, limits)
        except BadRow as exc:
            report(errors, exc)
