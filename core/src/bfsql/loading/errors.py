"""What can go wrong in a load: a mistake in how it was called, or bad rows in the data.

A load reports every bad row it finds (the first few, and how many in all), not just
the first, so that one run shows what to fix.
"""

from __future__ import annotations

import signal

__all__ = ["BadRow", "BadRows", "LoadError", "LoadInterrupted", "RowErrors", "report"]


class LoadError(ValueError):
    """A load that cannot run as asked (a file of unknown format, a missing directory, a foreign store ...)."""


class BadRow(LoadError):
    """A row that cannot be loaded, with where it is and what is wrong."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        self.path = path
        self.line = line
        """1-based; 0 when the format has no lines to point at (RDF parsed as a whole)."""
        self.message = message


class BadRows(BadRow):
    """Every bad row of a load: the first ``len(rows)`` of ``count``; ``path`` and ``line`` are the first's."""

    def __init__(self, rows: list[BadRow], count: int) -> None:
        first = rows[0]
        super().__init__(first.path, first.line, first.message)
        self.rows = rows
        self.count = count

    def __str__(self) -> str:
        lines = [str(row) for row in self.rows]
        if self.count > len(self.rows):
            lines.append(f"... and {self.count - len(self.rows):,} more bad row(s)")
        return "\n".join(lines)


class RowErrors:
    """Collects the bad rows of a load, keeping the first ``keep`` and counting them all."""

    def __init__(self, keep: int = 20) -> None:
        if keep < 1:
            raise LoadError("the number of bad rows to report must be at least 1")
        self.keep = keep
        self.rows: list[BadRow] = []
        self.count = 0

    def add(self, error: BadRow) -> None:
        """Count ``error`` (a :class:`BadRows` counts as all of its rows), keeping it if there is room."""
        for row in error.rows if isinstance(error, BadRows) else [error]:
            if len(self.rows) < self.keep:
                self.rows.append(row)
        self.count += error.count if isinstance(error, BadRows) else 1

    def raise_if_any(self) -> None:
        """Raise :class:`BadRows` when any row was bad."""
        if self.count:
            raise BadRows(self.rows, self.count)


def report(errors: RowErrors | None, error: BadRow) -> None:
    """Collect ``error`` in ``errors``; without a collector, raise it (stop at the first bad row)."""
    if errors is None:
        raise error
    errors.add(error)


class LoadInterrupted(KeyboardInterrupt):
    """A load stopped by a signal (Ctrl-C, SIGTERM, SIGHUP); ``committed`` when it came after the store was replaced."""

    def __init__(self, signum: int, committed: bool = False) -> None:
        self.signum = signum
        self.committed = committed
        super().__init__(f"stopped by {signal.Signals(signum).name}")
