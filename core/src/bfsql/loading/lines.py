"""Reading a file line by line without ever holding more than one bounded line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from bfsql.loading.errors import BadRow
from bfsql.loading.limits import describe_size

__all__ = ["ByteCallback", "bounded_lines", "check_lines", "decode_line", "too_long"]

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


def bounded_lines(handle: BinaryIO, path: str, limit: int, on_bytes: ByteCallback | None = None) -> Iterator[bytes]:
    """Yield the lines of ``handle`` (line break included), raising :class:`BadRow` at one longer than ``limit``.

    Never reads more than ``limit + 1`` bytes of a line, so a line without end (``/dev/zero``)
    fails fast instead of filling memory.
    """
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if on_bytes is not None:
            on_bytes(len(raw))
        if len(raw) > limit:
            raise too_long(path, number, limit)
        yield raw


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
