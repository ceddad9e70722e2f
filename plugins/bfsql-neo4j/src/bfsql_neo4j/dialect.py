"""What differs between the Bolt servers this backend speaks to.

Neo4j 5 is the reference. FalkorDB answers Bolt too, with other procedure names and
three defects of its Bolt endpoint (verified with FalkorDB 4.16) that the backend
must work around to stay correct and safe:

* it splices parameters into the query text (``CYPHER name='value' …``) without
  escaping them, so a quote in an id is a syntax error: string parameters are
  escaped here for its string-literal syntax before they are sent;
* it renders query and parameters into a fixed 4096-byte buffer and crashes when
  they do not fit: statements are sized against :attr:`Dialect.message_budget`;
* it ignores the requested graph inside transactions and always serves the graph
  named ``falkordb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

__all__ = ["DIALECTS", "FALKORDB", "NEO4J5", "Dialect", "DialectName", "falkordb_escape", "falkordb_literal_size"]

T = TypeVar("T")


class DialectName(StrEnum):
    """The Cypher dialects the backend can speak."""

    NEO4J5 = "neo4j5"
    FALKORDB = "falkordb"


def falkordb_escape(value: Any) -> Any:
    """``value`` with every string escaped for FalkorDB's single-quoted literals (recursively).

    FalkorDB's Bolt endpoint writes a string parameter as ``'<raw bytes>'`` into the
    query text; doubling backslashes and escaping single quotes makes that literal
    read back as the original string.
    """
    if isinstance(value, str):
        if "\\" not in value and "'" not in value:
            return value
        return value.replace("\\", "\\\\").replace("'", "\\'")
    if isinstance(value, list | tuple):
        return [falkordb_escape(item) for item in value]
    if isinstance(value, dict):
        return {key: falkordb_escape(item) for key, item in value.items()}
    return value


def falkordb_literal_size(value: Any) -> int:
    """Bytes FalkorDB's Bolt endpoint writes for an (already escaped) parameter value."""
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return len(str(value))
    if isinstance(value, float):
        return len(f"{value:f}")
    if isinstance(value, str):
        return (len(value) if value.isascii() else len(value.encode("utf-8"))) + 2
    if isinstance(value, list | tuple):
        return 2 + sum(falkordb_literal_size(item) + 2 for item in value)
    if isinstance(value, dict):
        return 2 + sum(len(str(key)) + 4 + falkordb_literal_size(item) for key, item in value.items())
    raise TypeError(f"unsupported parameter type {type(value).__name__}")


def _list_item_sizes(items: Sequence[Any]) -> list[int]:
    """Bytes FalkorDB writes for each item (not yet escaped) of a list, its separator included."""
    # Plain ASCII strings (most ids) are sized inline: a call per id would cost more than the rest of chunking.
    return [
        len(item) + 4
        if type(item) is str and item.isascii() and "\\" not in item and "'" not in item
        else falkordb_literal_size(falkordb_escape(item)) + 2
        for item in items
    ]


_BASE_SIZES: dict[tuple[DialectName, str, str, str], int] = {}
"""Statement shape (dialect, text, chunked key, other parameters) -> its size without the chunked items."""


@dataclass(frozen=True)
class Dialect:
    """Procedure names and protocol limits of one kind of Bolt server."""

    name: DialectName
    id_function: str
    """Cypher function giving a stable internal id (orders parallel relationships)."""
    fulltext_procedure: str
    """Procedure that queries a full-text index: ``(index-or-label, query)`` yielding node, score."""
    message_budget: int | None
    """Bytes the query text plus rendered parameters may take; None: no limit."""
    backtick_escapes: bool
    """Whether a backtick inside a quoted identifier can be escaped by doubling it."""

    def encode(self, params: dict[str, Any]) -> dict[str, Any]:
        """Parameters as this server must receive them."""
        if self.name is DialectName.FALKORDB:
            return {key: falkordb_escape(value) for key, value in params.items()}
        return params

    def rendered_size(self, query: str, params: dict[str, Any]) -> int:
        """How many bytes of the server's message budget a statement takes (0 when unbounded)."""
        if self.message_budget is None:
            return 0
        size = len("CYPHER ") + len(query.encode("utf-8"))
        return size + sum(len(key) + 2 + falkordb_literal_size(value) for key, value in self.encode(params).items())

    def _base_size(self, query: str, key: str, params: dict[str, Any]) -> int:
        """Bytes of a statement before its chunked items, computed once per statement shape."""
        shape = (self.name, query, key, repr(sorted(params.items())))
        known = _BASE_SIZES.get(shape)
        if known is None:
            if len(_BASE_SIZES) >= 1024:
                _BASE_SIZES.clear()
            known = _BASE_SIZES[shape] = self.rendered_size(query, {**params, key: []})
        return known

    def fits(self, query: str, params: dict[str, Any]) -> bool:
        """Whether a statement fits in the server's message budget."""
        return self.message_budget is None or self.rendered_size(query, params) <= self.message_budget

    def chunks(
        self, query: str, key: str, items: Sequence[T], params: dict[str, Any], max_items: int
    ) -> tuple[list[list[T]], list[T]]:
        """Split ``items`` (sent as parameter ``key`` beside ``params``) into statements that fit.

        Returns the chunks and the items that fit in no statement on their own (only
        possible with a message budget: e.g. a 5 kB id on FalkorDB).
        """
        if self.message_budget is None:
            return [list(items[i : i + max_items]) for i in range(0, len(items), max_items)], []
        base = self._base_size(query, key, params)
        chunks: list[list[T]] = []
        too_big: list[T] = []
        current: list[T] = []
        size = base
        for item, item_size in zip(items, _list_item_sizes(items), strict=True):
            if base + item_size > self.message_budget:
                too_big.append(item)
                continue
            if current and (len(current) >= max_items or size + item_size > self.message_budget):
                chunks.append(current)
                current, size = [], base
            current.append(item)
            size += item_size
        if current:
            chunks.append(current)
        return chunks, too_big


NEO4J5 = Dialect(
    name=DialectName.NEO4J5,
    id_function="elementId",
    fulltext_procedure="db.index.fulltext.queryNodes",
    message_budget=None,
    backtick_escapes=True,
)
"""Neo4j 5 (and Neo4j 2025.x)."""

FALKORDB = Dialect(
    name=DialectName.FALKORDB,
    id_function="id",
    fulltext_procedure="db.idx.fulltext.queryNodes",
    message_budget=3800,
    backtick_escapes=False,
)
"""FalkorDB 4.x through its Bolt endpoint (the module argument ``BOLT_PORT``)."""

DIALECTS = {d.name: d for d in (NEO4J5, FALKORDB)}
