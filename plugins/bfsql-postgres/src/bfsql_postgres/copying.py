"""Rows sent to PostgreSQL as COPY text, a COPY in flight while the next rows are read.

A load reads its sources once and sends every row to one of a few targets (a table and the
columns given). The rows of the target being copied go into that COPY's stream, a chunk at a
time: the server parses and stores a chunk while Python reads the next (two processes, so on two
cores they overlap; one ``COPY`` statement per chunk would leave each side waiting for the
other). Rows of the other targets wait in memory; when a target's waiting rows pass
:data:`WAITING_BYTES`, the stream ends and that target's stream starts, its waiting rows first.
Each target receives its rows in the order they were read.
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
    if value is None:
        return NULL
    if isinstance(value, str):
        return value.translate(_ESCAPES)
    return repr(value)  # a float: repr reads back as the same number


def text_line(values: Iterable[Any]) -> str:
    """One row as a line of COPY text (strings escaped, None as NULL, floats exact)."""
    return "\t".join(map(_field, values)) + "\n"


async def copy_rows(conn: asyncpg.Connection, rows: Iterable[tuple[Target, str]]) -> None:
    """Send ``rows`` (each a target and its COPY text: lines ending in a line break) to their tables, in order per
    target, the reading of ``rows`` overlapping the server's work (see the module)."""
    streams = _Streams(iter(rows))
    current = streams.first()
    while current is not None:
        await _copy(conn, current, streams.stream(current))
        current, streams.following = streams.following, None
    for target in list(streams.waiting):
        await _copy(conn, target, _once("".join(streams.waiting.pop(target)).encode()))


class _Streams:
    """The rows read, as streams of COPY text per target, and the rows waiting for their target's stream."""

    def __init__(self, rows: Iterator[tuple[Target, str]]) -> None:
        self.rows = rows
        self.waiting: dict[Target, list[str]] = {}
        self.waiting_bytes: dict[Target, int] = {}
        self.following: Target | None = None
        """The target whose waiting rows ended the last stream."""

    def first(self) -> Target | None:
        """The target of the first row (which then waits), None without rows."""
        for target, text in self.rows:
            self.waiting[target], self.waiting_bytes[target] = [text], len(text)
            return target
        return None

    async def stream(self, target: Target) -> AsyncIterator[bytes]:
        """``target``'s waiting rows, then the rows read, in chunks, until the rows end or another target has
        waited long enough (it is then :attr:`following`)."""
        batch, size = self.waiting.pop(target, []), self.waiting_bytes.pop(target, 0)
        for row_target, text in self.rows:
            if row_target == target:
                batch.append(text)
                size += len(text)
                if size >= CHUNK_BYTES:
                    yield "".join(batch).encode()
                    batch, size = [], 0
            else:
                self.waiting.setdefault(row_target, []).append(text)
                self.waiting_bytes[row_target] = self.waiting_bytes.get(row_target, 0) + len(text)
                if self.waiting_bytes[row_target] >= WAITING_BYTES:
                    self.following = row_target
                    break
        if batch:
            yield "".join(batch).encode()


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _copy(conn: asyncpg.Connection, target: Target, data: AsyncIterator[bytes]) -> None:
    await conn.copy_to_table(target.table, source=data, columns=list(target.columns), format="text",
                             freeze=True if target.freeze else None)
