"""Reading a big bundle in several processes at once: the loading process reads its first part, helpers the rest.

Reading a bundle (decoding, checking and coding its rows) is most of a big load's CPU, and it
holds the GIL, so threads would not help. :func:`read_in_parts` cuts a bundle at line breaks
into as many parts as the machine has processors (each at least :data:`MIN_PART_BYTES`), when
a sample at each cut is mostly bare relationships (:data:`MIN_BARE_SHARE`); a
process started for each part after the first reads its part as the loader would, codes the
bare relationships' ids to integers (:class:`~bfsql.loading.id_codes.IdCodes`) and hands back
its rows and bad rows at once, while the loading process reads the first part itself. The
rows then come out in the file's order, with the file's line numbers, exactly as
:func:`~bfsql.loading.bundle.read_bundle` gives them, except that the bare relationships of a
helper's part come as :class:`~bfsql.loading.id_codes.CodedRelationships` in the loading
process's codes.

What a serial read guarantees holds: every bad row is reported with its file and line, in
the file's order; a line too long to read on ends the reading of the file there (the parts
after it are dropped unread); closing the iterator (an error or a signal in the loader)
stops the helpers (:mod:`bfsql.loading.helper_process`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from bfsql.loading.bundle import Row, read_bundle, read_bundle_range
from bfsql.loading.errors import BadRow, BadRows, RowErrors
from bfsql.loading.helper_process import HelperProcess, processors
from bfsql.loading.id_codes import CodedRelationships, IdCodes
from bfsql.loading.limits import LoadLimits
from bfsql.loading.lines import ByteCallback
from bfsql.loading.plain import PlainRelationship, PlainRelationships, line_reader

__all__ = ["MAX_PARTS", "MIN_BARE_SHARE", "MIN_PART_BYTES", "SAMPLE_BYTES", "cut_points", "read_in_parts"]

MIN_PART_BYTES = 32 << 20
"""Smallest part worth a process of its own (starting one costs some 0.3 s of CPU)."""

MAX_PARTS = 8
"""Most parts a bundle is read in."""

FIRST_SHARE = 0.85
"""The first part's size against each other's: the loading process also writes the rows it is given."""

MIN_BARE_SHARE = 0.9
"""Share of bare relationship lines, in a sample at each cut, from which helpers are started.

Only bare relationships come back from a helper as compact codes; any other row comes back as
a Python object, whose transfer costs the loading process about what reading it would (the
HPO's bundle, with evidence and synonyms on most rows: 13.8 s and 306 MB alone, 17.5 s and
918 MB with a helper)."""

SAMPLE_BYTES = 256 << 10
"""Bytes read at each cut to tell how many of a part's lines are bare relationships."""


def cut_points(path: Path, parts: int, limit: int) -> list[int]:
    """Byte offsets that cut the file ``path`` into at most ``parts`` parts at line breaks: ``[0, ..., size]``.

    A cut goes right after the first line break at or past its share of the file. Where no line
    break comes within ``limit`` bytes (the longest line allowed), no cut is made: reading the
    part before it says what is wrong with that line.
    """
    size = path.stat().st_size
    weights = [FIRST_SHARE] + [1.0] * (parts - 1)
    total = sum(weights)
    points = [0]
    with open(path, "rb") as handle:
        share = 0.0
        for weight in weights[:-1]:
            share += weight
            target = max(int(size * share / total), points[-1])
            handle.seek(target)
            ahead = handle.read(limit + 1)
            found = ahead.find(b"\n")
            if found < 0:
                continue
            point = target + found + 1
            if points[-1] < point < size:
                points.append(point)
    return [*points, size]


@dataclass
class _Part:
    """What a helper read: its rows in order (an int for that many coded relationships), codes and bad rows."""

    ids: list[str]
    predicates: list[str]
    subjects: array[int]
    preds: array[int]
    objects: array[int]
    rows: list[tuple[int, Row | int]] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    error_count: int = 0
    stopped_by: tuple[str, int, str] | None = None
    """The line after which nothing could be read (an over-long line), if any."""


def _bare_share(path: Path, starts: list[int], limits: LoadLimits) -> float:
    """The share of bare relationship lines among the whole lines of :data:`SAMPLE_BYTES` from each of ``starts``."""
    plain_line = line_reader(limits)
    bare = lines = 0
    with open(path, "rb") as handle:
        for start in starts:
            handle.seek(start)
            for raw in handle.read(SAMPLE_BYTES).split(b"\n")[:-1]:  # the last is cut, or empty
                text = raw.decode("utf-8", "replace").strip()
                if text:
                    lines += 1
                    bare += isinstance(plain_line(text), PlainRelationship)
    return bare / lines if lines else 0.0


def _first_line(path: Path, start: int) -> int:
    """The number of the line that starts at byte ``start``."""
    count = 0
    with open(path, "rb") as handle:
        left = start
        while left:
            chunk = handle.read(min(left, 8 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count + 1


def _read_part(path: Path, start: int, end: int, limits: LoadLimits, keep: int) -> _Part:
    """A helper's work: the rows of the bytes ``start`` to ``end`` of the bundle, keeping ``keep`` bad rows."""
    codes = IdCodes()
    part = _Part([], [], array("i"), array("i"), array("i"))
    errors = RowErrors(keep)
    rows = part.rows
    try:
        for line, row in read_bundle_range(path, start, end, _first_line(path, start), limits=limits, errors=errors,
                                           plain=True):
            if isinstance(row, PlainRelationships | PlainRelationship):
                triples = row if isinstance(row, PlainRelationships) else [row]
                codes.code(triples, part.subjects, part.preds, part.objects)
                if rows and type(rows[-1][1]) is int:
                    rows[-1] = (rows[-1][0], rows[-1][1] + len(triples))  # type: ignore[operator]
                else:
                    rows.append((line, len(triples)))
            else:
                rows.append((line, row))
    except BadRow as exc:
        part.stopped_by = (exc.path, exc.line, exc.message)
    part.ids, part.predicates = list(codes.ids), list(codes.predicates)
    part.errors = [(error.path, error.line, error.message) for error in errors.rows]
    part.error_count = errors.count
    return part


def _rows_of(part: _Part, codes: IdCodes, errors: RowErrors) -> Iterator[tuple[int, Row | CodedRelationships]]:
    """A helper's rows in the loading process's codes; its bad rows go to ``errors``."""
    id_codes, predicate_codes = codes.adopt(part.ids, part.predicates)
    subjects, preds, objects = (np.frombuffer(a, dtype=np.int32) for a in (part.subjects, part.preds, part.objects))
    at = 0
    for line, row in part.rows:
        if isinstance(row, int):
            end = at + row
            yield line, CodedRelationships(
                id_codes[subjects[at:end]], predicate_codes[preds[at:end]], id_codes[objects[at:end]]
            )
            at = end
        else:
            yield line, row
    if part.error_count:
        errors.add(BadRows([BadRow(*error) for error in part.errors], part.error_count))


def read_in_parts(
    path: Path,
    codes: IdCodes,
    *,
    limits: LoadLimits,
    errors: RowErrors,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Row | CodedRelationships]]:
    """Yield the rows of the bundle ``path`` as ``read_bundle(path, plain=True)`` would, reading its parts at once.

    Bad rows go to ``errors``; a line that cannot be read past raises :class:`BadRow` after the
    rows before it. A file too small to cut, or a machine of one processor, is read here alone.
    """
    parts = min(processors(), MAX_PARTS, path.stat().st_size // MIN_PART_BYTES)
    points = cut_points(path, parts, limits.line_bytes) if parts > 1 else []
    if len(points) < 3 or _bare_share(path, points[1:-1], limits) < MIN_BARE_SHARE:
        yield from read_bundle(path, limits=limits, errors=errors, on_bytes=on_bytes, plain=True)
        return
    helpers: list[HelperProcess[_Part]] = []
    try:
        for start, end in pairwise(points[1:]):
            helpers.append(HelperProcess(_read_part, path, start, end, limits, errors.keep))
        yield from read_bundle_range(path, 0, points[1], 1, limits=limits, errors=errors, on_bytes=on_bytes,
                                     plain=True)
        for helper, (start, end) in zip(helpers, pairwise(points[1:]), strict=True):
            part = helper.result()
            if on_bytes is not None:
                on_bytes(end - start)
            yield from _rows_of(part, codes, errors)
            if part.stopped_by is not None:
                raise BadRow(*part.stopped_by)
    finally:
        for helper in helpers:
            helper.stop()
