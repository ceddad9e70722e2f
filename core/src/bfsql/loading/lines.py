"""Reading a file line by line without ever holding more than one bounded line."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import BinaryIO

from bfsql.loading.errors import BadRow
from bfsql.loading.limits import describe_size

__all__ = [
    "BLOCK_BYTES", "ByteCallback", "ByteRange", "bounded_blocks", "bounded_lines", "check_lines", "decode_line",
    "too_long",
]

ByteCallback = Callable[[int], None]
"""Told how many bytes were read since its previous call (for progress)."""


def too_long(path: str, line: int, limit: int) -> BadRow:
    """The error for a line (or CSV row) longer than ``limit`` bytes."""
    return BadRow(
        path,
        line,
        f"the line is longer than {describe_size(limit)} (the limit line_bytes); "
        "reading stopped here. Split the record, or raise the limit with --limit line_bytes=SIZE",
    )


BLOCK_BYTES = 1 << 20
"""Bytes read at a time: lines are cut from blocks, not read one call each."""


class ByteRange:
    """The bytes ``start`` to ``end`` of an open binary file, read like a file of their own."""

    def __init__(self, handle: BinaryIO, start: int, end: int) -> None:
        handle.seek(start)
        self._handle = handle
        self._left = end - start

    def read(self, size: int) -> bytes:
        """At most ``size`` bytes, never past the range's end."""
        data = self._handle.read(min(size, self._left))
        self._left -= len(data)
        return data


def bounded_blocks(
    handle: BinaryIO | ByteRange, path: str, limit: int, on_bytes: ByteCallback | None = None, first_line: int = 1
) -> Iterator[bytes]:
    """Yield ``handle`` in blocks of whole lines, raising :class:`BadRow` at a line longer than ``limit``.

    Reads up to :data:`BLOCK_BYTES` at a time, but never more than ``limit + 1`` bytes of one
    line, so a line without end (``/dev/zero``) fails fast instead of filling memory. Every
    block but the last ends with a line break; the lines before an over-long one are yielded
    before the error. ``on_bytes`` hears of every block read. The first line is numbered
    ``first_line`` (in errors).
    """
    number = first_line - 1  # lines yielded
    pending = b""  # the start of a line whose break is not read yet
    while block := handle.read(min(BLOCK_BYTES, limit + 1 - len(pending))):
        if on_bytes is not None:
            on_bytes(len(block))
        end = block.rfind(b"\n") + 1
        if end:
            whole = pending + block[:end] if pending else block[:end]
            pending = block[end:]
            if len(whole) > limit:  # only then can a line of it be too long
                start = 0
                for raw in io.BytesIO(whole):
                    if len(raw) > limit:
                        if start:
                            yield whole[:start]
                        raise too_long(path, number + whole.count(b"\n", 0, start) + 1, limit)
                    start += len(raw)
            number += whole.count(b"\n")
            yield whole
        else:
            pending += block
        if len(pending) > limit:
            raise too_long(path, number + 1, limit)
    if pending:
        yield pending


def bounded_lines(handle: BinaryIO, path: str, limit: int, on_bytes: ByteCallback | None = None) -> Iterator[bytes]:
    """Yield the lines of ``handle`` (line break included), raising :class:`BadRow` at one longer than ``limit``.

    Read as :func:`bounded_blocks` reads: never more than ``limit + 1`` bytes of one line.
    """
    for block in bounded_blocks(handle, path, limit, on_bytes):
        yield from io.BytesIO(block)


def decode_line(raw: bytes, path: str, line: int) -> str:
    """The line as text; :class:`BadRow` naming the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRow(
            path,
            line,
            f"invalid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line; save the file as UTF-8",
        ) from None


def check_lines(path: str, limit: int, on_bytes: ByteCallback | None = None) -> None:
    """Read ``path`` once, line by line: :class:`BadRow` at the first line above ``limit`` bytes or not UTF-8."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, path, limit, on_bytes), start=1):
            if not raw.isascii():
                decode_line(raw, path, number)
