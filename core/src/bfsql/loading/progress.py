"""Progress of a load, phase by phase: what it is doing, how far it is, and how long is left.

A load runs these phases, in order: ``copy`` (the existing store, to a private file),
``read`` (parse every record; write entities and evidence), ``write`` (the relationships,
in key order), ``index`` (the search index), ``embed`` (entity vectors), ``graph`` (the
array index of the graph) and ``commit`` (sync to disk and swap the store in). Each begins with
:meth:`LoadProgress.start` and moves with :meth:`LoadProgress.advance` and
:meth:`LoadProgress.step`; :meth:`LoadProgress.finish` ends the last.
:class:`StderrProgress` shows them on a terminal as one live line per phase, and
elsewhere as one line per phase when it ends.
"""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["PHASES", "LoadProgress", "StderrProgress"]

PHASES = ("copy", "read", "write", "index", "embed", "graph", "commit")
"""The phases of a load, in the order they run (copy only when the store exists, write only
when relationships were read, embed only with an embedder)."""


class LoadProgress:
    """Hears of a load's phases as they happen; this base class shows nothing."""

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        """A phase begins (ending the previous one), with ``total`` ``unit``\\ s of work when known."""

    def advance(self, amount: int) -> None:
        """``amount`` more units of the current phase are done."""

    def step(self, text: str) -> None:
        """Says what the current phase is doing now, or counts something else (``"120,000 records"``)."""

    def finish(self) -> None:
        """The current phase (if any) has ended."""


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


_SINGULAR = {"entities": "entity", "records": "record"}


_BYTE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
"""Decimal byte units, largest first: a size is shown in the largest one it reaches, else in bytes."""


def _byte_scale(size: float) -> tuple[float, str]:
    """The divisor and unit that show ``size`` bytes readably (``1.0, "bytes"`` below a kilobyte)."""
    return next(((factor, unit) for factor, unit in _BYTE_UNITS if size >= factor), (1.0, "bytes"))


def _bytes(value: float, factor: float) -> str:
    return f"{int(value):,}" if factor == 1.0 else f"{value / factor:,.1f}"


def _amount(value: float, unit: str) -> str:
    if unit == "bytes":
        factor, name = _byte_scale(value)
        return f"{_bytes(value, factor)} {'byte' if factor == 1.0 and int(value) == 1 else name}"
    if int(value) == 1:
        unit = _SINGULAR.get(unit, unit)
    return f"{int(value):,} {unit}".rstrip()


def _share(done: int, total: int, unit: str) -> str:
    if unit == "bytes":  # both in the total's unit: "0 of 47 bytes", "12.3 of 77.8 kB"
        factor, name = _byte_scale(total)
        return f"{_bytes(done, factor)} of {_bytes(total, factor)} {name}"
    return f"{done:,} of {total:,} {unit}"


class StderrProgress(LoadProgress):
    """Progress written to a text stream (stderr): live on a terminal, one line per finished phase elsewhere.

    A live line is redrawn at most every ``interval`` seconds and shows the amount done,
    the percentage and the estimated time left (from the rate so far) when the total is
    known, plus what the phase is doing; when the phase ends it is replaced by the final
    line, ``read    64.9 MB, 303,000 records in 14.2 s``.
    """

    def __init__(self, stream: TextIO, live: bool, interval: float = 0.2) -> None:
        self._stream, self._live, self._interval = stream, live, interval
        self._phase: str | None = None
        self._total: int | None = None
        self._unit = ""
        self._done = 0
        self._text = ""
        self._started = 0.0
        self._drawn = 0.0

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        """Finish the current phase and begin ``phase``."""
        self.finish()
        self._phase, self._total, self._unit, self._done, self._text = phase, total, unit, 0, ""
        self._started = time.monotonic()
        self._draw(force=True)

    def advance(self, amount: int) -> None:
        """Count ``amount`` more units done."""
        self._done += amount
        self._draw()

    def step(self, text: str) -> None:
        """Show ``text`` beside the counts."""
        self._text = text
        self._draw()

    def finish(self) -> None:
        """Write the final line of the current phase."""
        if self._phase is None:
            return
        elapsed = time.monotonic() - self._started
        parts = []
        if self._unit:  # a phase cut short says how far it got
            short = self._total is not None and self._done < self._total
            parts.append(_share(self._done, self._total or 0, self._unit) if short else _amount(self._done, self._unit))
        if self._text:
            parts.append(self._text)
        body = ", ".join(parts) or "done"
        self._write(f"{self._phase:<7} {body} in {_duration(elapsed)}", final=True)
        self._phase = None

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self._live or self._phase is None or (not force and now - self._drawn < self._interval):
            return
        self._drawn = now
        parts: list[str] = []
        elapsed = now - self._started
        eta = ""
        if self._unit and self._total:
            parts.append(_share(self._done, self._total, self._unit))
            parts.append(f"{min(100, 100 * self._done // self._total)}%")
            if self._done and elapsed >= 1:
                eta = f"ETA {_duration(max(0.0, (self._total - self._done) * elapsed / self._done))}"
        elif self._unit:
            parts.append(_amount(self._done, self._unit))
        if self._text:
            parts.append(self._text)
        parts += [_duration(elapsed), eta]
        self._write(f"{self._phase:<7} {'  '.join(p for p in parts if p)}", final=False)

    def _write(self, line: str, final: bool) -> None:
        if self._live:
            self._stream.write(f"\r{line}\x1b[K" + ("\n" if final else ""))
        elif final:
            self._stream.write(line + "\n")
        self._stream.flush()
