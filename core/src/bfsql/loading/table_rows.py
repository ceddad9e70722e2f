"""Rows of CSV/TSV files read within the load's limits: one bounded row at a time, with the line it starts on."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import BinaryIO

from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.limits import LoadLimits, describe_size
from bfsql.loading.lines import ByteCallback, bounded_lines, decode_line

__all__ = ["RowFeed", "header_rows"]


class RowFeed:
    """The decoded lines of a table for :mod:`csv`, refusing a row (several lines when quoted) above the limit."""

    def __init__(
        self, handle: BinaryIO, path: str, limits: LoadLimits, errors: RowErrors | None, on_bytes: ByteCallback | None
    ) -> None:
        self._lines = bounded_lines(handle, path, limits.line_bytes, on_bytes)
        self._path, self._limit, self._errors = path, limits.line_bytes, errors
        self.number = 0
        """The line last read."""
        self.row_start = 1
        """The first line of the row being read."""
        self._row_bytes = 0

    def __iter__(self) -> Iterator[str]:
        for raw in self._lines:
            self.number += 1
            if not self._row_bytes:
                self.row_start = self.number
            self._row_bytes += len(raw)
            if self._row_bytes > self._limit:
                raise BadRow(
                    self._path,
                    self.row_start,
                    f"the row that starts here is longer than {describe_size(self._limit)} (the limit line_bytes): "
                    "is the closing quote of a value missing?",
                )
            try:
                text = decode_line(raw, self._path, self.number)
            except BadRow as exc:
                report(self._errors, exc)
                text = "\n"
            yield text.removeprefix("\ufeff") if self.number == 1 else text

    def row_done(self) -> None:
        """The reader has a whole row: the next line starts another."""
        self._row_bytes = 0


def header_rows(
    path: str, delimiter: str, limits: LoadLimits, errors: RowErrors | None, on_bytes: ByteCallback | None
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line, cells)`` of each non-blank row of a table, its header first.

    CSV (``,``) is quoted as usual, TSV (tab) has no quoting. A quoted value that is never closed, or
    other broken quoting, raises :class:`BadRow`: nothing after it can be read.
    """
    with open(path, "rb") as handle:
        feed = RowFeed(handle, path, limits, errors, on_bytes)
        quoted = delimiter == ","
        rows = csv.reader(feed, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
                          strict=True)
        try:
            for row in rows:
                line = feed.row_start
                feed.row_done()
                if any(cell.strip() for cell in row):
                    yield line, row
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                message = f"a quoted value opened on line {feed.row_start} is never closed (a missing closing quote?)"
            else:
                message = f"malformed {'CSV' if delimiter == ',' else 'TSV'}: {exc}"
            raise BadRow(path, feed.row_start, message) from None
