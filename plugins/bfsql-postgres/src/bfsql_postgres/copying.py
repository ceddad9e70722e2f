"""Rows sent to PostgreSQL as COPY text, a COPY in flight while the next rows are read.

A load reads its sources once and sends every row to one of a few targets (a table and the
columns given). The rows of the target being copied go into that COPY's stream, a chunk at a
time: the server parses and stores a chunk while Python reads the next (two processes, so on two
cores they overlap; one ``COPY`` statement per chunk would leave each side waiting for the
other). Rows of the other tables wait in memory; when a table's waiting rows pass
:data:`WAITING_BYTES`, the stream ends and that table's turn comes, its waiting rows first. Each
table receives its rows in the order they were read (a table filled through two targets, such as
bare relationships and relationships with columns, switches streams when the target changes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import asyncpg

__all__ = ["CHUNK_BYTES", "NULL", "WAITING_BYTES", "Target", "copy_rows", "text_line"]

CHUNK_BYTES = 256 << 10
"""COPY text sent at a time (one CopyData message)."""

WAITING_BYTES = 8 << 20
"""COPY text of one target held back while another target is copied."""

NULL = "\\N"
"""NULL in COPY text."""

_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
"""What COPY text escapes in a value (the column separator, line ends and the escape character)."""


@dataclass(frozen=True)
class Target:
    """A table and the columns a COPY fills, in order (the others take their defaults)."""

    table: str
    columns: tuple[str, ...]
    freeze: bool = False
    """``COPY ... (FREEZE)``: the rows are stored frozen and their pages all-visible (the table must have been
    created or truncated in the loader's transaction)."""


def _field(value: Any) -> str:
    if isinstance(value, str):
        # Most strings hold none of them: four searches cost far less than translating every character.
        if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
            return value.translate(_ESCAPES)
        return value
    if value is None:
        return NULL
    return repr(value)  # a float: repr reads back as the same number


def text_line(values: Iterable[Any]) -> str:
    """One row as a line of COPY text (strings escaped, None as NULL, floats exact)."""
    return "\t".join(map(_field, values)) + "\n"


async def copy_rows(conn: asyncpg.Connection, rows: Iterable[tuple[Target, str]]) -> None:
    """Send ``rows`` (each a target and its COPY text: lines ending in a line break) to their tables, in order per
    table, the reading of ``rows`` overlapping the server's work (see the module)."""
    streams = _Streams(iter(rows))
    table = streams.first()
    while table is not None:
        *earlier, (target, texts) = streams.waiting.pop(table)
        streams.waiting_bytes.pop(table)
        for other, other_texts in earlier:
            await _copy(conn, other, _once(other_texts))
        await _copy(conn, target, streams.stream(target, texts))
        table, streams.following = streams.following, None
    for segments in streams.waiting.values():
        for target, texts in segments:
            await _copy(conn, target, _once(texts))


class _Streams:
    """The rows read, as streams of COPY text per target, and the rows waiting for their table's turn: per table,
    runs of rows of one target each, in the order read."""

    def __init__(self, rows: Iterator[tuple[Target, str]]) -> None:
        self.rows = rows
        self.waiting: dict[str, list[tuple[Target, list[str]]]] = {}
        self.waiting_bytes: dict[str, int] = {}
        self.following: str | None = None
        """The table whose rows ended the last stream."""

    def first(self) -> str | None:
        """The table of the first row (which then waits), None without rows."""
        for target, text in self.rows:
            self.wait(target, text)
            return target.table
        return None

    def wait(self, target: Target, text: str) -> int:
        """Hold ``text`` back for ``target``; the bytes its table holds back now."""
        segments = self.waiting.setdefault(target.table, [])
        if segments and segments[-1][0] == target:
            segments[-1][1].append(text)
        else:
            segments.append((target, [text]))
        self.waiting_bytes[target.table] = self.waiting_bytes.get(target.table, 0) + len(text)
        return self.waiting_bytes[target.table]

    async def stream(self, target: Target, texts: list[str]) -> AsyncIterator[bytes]:
        """``texts``, then the rows read for ``target``, in chunks, until the rows end, a row for another target of
        its table comes (its columns differ: its stream follows at once, which keeps the table's rows in order), or
        another table has waited long enough (it is then :attr:`following`)."""
        batch, size = texts, sum(map(len, texts))
        for row_target, text in self.rows:
            if row_target == target:
                batch.append(text)
                size += len(text)
                if size >= CHUNK_BYTES:
                    yield "".join(batch).encode()
                    batch, size = [], 0
            elif self.wait(row_target, text) >= WAITING_BYTES or row_target.table == target.table:
                self.following = row_target.table
                break
        if batch:
            yield "".join(batch).encode()


async def _once(texts: list[str]) -> AsyncIterator[bytes]:
    yield "".join(texts).encode()


async def _copy(conn: asyncpg.Connection, target: Target, data: AsyncIterator[bytes]) -> None:
    await conn.copy_to_table(target.table, source=data, columns=list(target.columns), format="text",
                             freeze=True if target.freeze else None)
