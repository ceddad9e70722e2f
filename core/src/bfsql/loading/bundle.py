"""Reading a JSONL graph bundle: one JSON object per line, ``kind`` saying which record.

See docs/bundle-format.md. Errors name the file and line of the bad row. Lines are
read in binary and decoded one at a time, so no line longer than the limit
``line_bytes`` is ever held whole.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal, overload

from pydantic import ValidationError

from bfsql.errors import clip
from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.hints import guess_kind, suggest_field, suggest_kind
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits, check_row, may_break_limits
from bfsql.loading.lines import ByteCallback, ByteRange, bounded_blocks, decode_line
from bfsql.loading.plain import (
    PlainEntities,
    PlainEntity,
    PlainRelationship,
    PlainRelationships,
    block_reader,
    clean_text,
    line_reader,
    plain_row,
)
from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord

__all__ = ["BadRow", "Record", "Row", "parse_json_line", "parse_record", "read_bundle", "read_bundle_range"]

Record = EntityRecord | RelationshipRecord | EvidenceRecord
Row = Record | PlainEntity | PlainRelationship | PlainRelationships | PlainEntities
"""A record, or with ``plain=True`` a row of the simplest shapes as a tuple, or a block of such
relationships (or entities) as a list of tuples (:mod:`bfsql.loading.plain`)."""

BOM = "\ufeff".encode()

_KINDS: dict[str, type[Record]] = {
    "entity": EntityRecord,
    "relationship": RelationshipRecord,
    "evidence": EvidenceRecord,
}


_NOUN = {"entity": "an entity", "relationship": "a relationship", "evidence": "an evidence record"}
"""Each kind as the errors name it."""


def _unknown_fields(names: list[str], model: type[Record], missing: list[str]) -> tuple[list[str], set[str]]:
    """Messages for a row's unknown fields, and the missing fields they stand for.

    A field that probably means another gets a "did you mean"; the others are named
    together, with the fields the record has.
    """
    kind = next(kind for kind, known in _KINDS.items() if issubclass(model, known))
    fields = [f for f in model.model_fields if f != "kind"]
    messages, meant_missing, unexplained = [], set(), []
    for name in names:
        meant = suggest_field(name, kind, fields, missing)
        if meant is None:
            unexplained.append(name)
            continue
        messages.append(f"unknown field {name!r}; did you mean {meant!r}?")
        if meant in missing:
            meant_missing.add(meant)
    if unexplained:
        extra = "; put other fields in 'properties'" if "properties" in fields else ""
        listed = ", ".join(repr(n) for n in unexplained)
        messages.append(f"unknown field{'s' if len(unexplained) > 1 else ''} {listed}; "
                        f"{_NOUN[kind]} has {', '.join(fields)}{extra}")
    return messages, meant_missing


def _describe(exc: ValidationError, model: type[Record]) -> str:
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing" and len(e["loc"]) == 1]
    parts, explained = _unknown_fields(unknown, model, missing)
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"]) or "row"
        if (err["type"] == "extra_forbidden" and loc in unknown) or (err["type"] == "missing" and loc in explained):
            continue  # said above; a "did you mean" names the missing field
        parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _kind_problem(obj: dict[str, Any]) -> str:
    """Why a row's ``kind`` names no record, and what to write instead."""
    kinds = list(_KINDS)
    listed = ", ".join(repr(k) for k in kinds)
    given = obj.get("kind")
    if given is None:
        problem, verb = f"missing field 'kind': each row says which record it is, one of {listed}", "add"
    else:
        meant = suggest_kind(given, kinds) if isinstance(given, str) else None
        if meant is not None:
            return f"unknown kind {clip(repr(given), 100)}; did you mean {meant!r}? (the kinds are {listed})"
        problem, verb = f"unknown kind {clip(repr(given), 100)}; the kinds are {listed}", "write"
    guess = guess_kind(obj, _KINDS)
    kgx = " (or, for a KGX file, load it with --format kgx)" if given is None and "category" in obj else ""
    return problem + (f"; this row looks like {_NOUN[guess]}: {verb} \"kind\": \"{guess}\"" if guess else "") + kgx


def parse_record(
    obj: object,
    path: str,
    line: int,
    limits: LoadLimits = DEFAULT_LIMITS,
    model: type[Record] | None = None,
    check: bool = True,
) -> Record:
    """Validate one decoded JSON object as a bundle record (of class ``model``, else by its kind) within ``limits``.

    ``check=False`` skips :func:`~bfsql.loading.limits.check_row`, for a caller that knows
    the row cannot break the limits.
    """
    if not isinstance(obj, dict):
        raise BadRow(path, line, f"expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("kind")
    model = model or (_KINDS.get(kind) if isinstance(kind, str) else None)
    if model is None:
        raise BadRow(path, line, _kind_problem(obj))
    problem = check_row(obj, limits) if check else None
    if problem is not None:
        raise BadRow(path, line, problem)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise BadRow(path, line, _describe(exc, model)) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows; write a finite number or null")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


@overload
def parse_json_line(text: str, path: str, line: int, limits: LoadLimits = ..., plain: Literal[False] = ...) -> Record:
    ...


@overload
def parse_json_line(text: str, path: str, line: int, limits: LoadLimits = ..., *, plain: bool) -> Row:
    ...


def parse_json_line(text: str, path: str, line: int, limits: LoadLimits = DEFAULT_LIMITS, plain: bool = False) -> Row:
    """Decode and validate one JSONL line; with ``plain``, a row of the simplest shapes comes as a tuple."""
    try:
        obj, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        obj, end = None, -1
    if end != len(text):  # not one JSON value alone (or spaces around it)
        obj = _whole(text, path, line, limits)
    if plain and type(obj) is dict:
        row = plain_row(obj, limits, clean_text(text))
        if row is not None:
            return row
    return parse_record(obj, path, line, limits, check=may_break_limits(text, limits))


def _whole(text: str, path: str, line: int, limits: LoadLimits) -> Any:
    """The JSON value of ``text`` with spaces around it, else :class:`BadRow` saying what is wrong."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # json's messages end in "at" when they point at a place ("Unterminated string starting at").
        raise BadRow(path, line, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}") from None
    except RecursionError:
        raise BadRow(path, line, f"nested too deeply (the limit is depth = {limits.depth} levels)") from None
    except ValueError as exc:
        raise BadRow(path, line, f"invalid JSON: {exc}") from None


@overload
def read_bundle(
    path: str | Path, *, limits: LoadLimits = ..., errors: RowErrors | None = ..., on_bytes: ByteCallback | None = ...,
    plain: Literal[False] = ...,
) -> Iterator[tuple[int, Record]]:
    ...


@overload
def read_bundle(
    path: str | Path, *, limits: LoadLimits = ..., errors: RowErrors | None = ..., on_bytes: ByteCallback | None = ...,
    plain: bool,
) -> Iterator[tuple[int, Row]]:
    ...


def read_bundle(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
    plain: bool = False,
) -> Iterator[tuple[int, Row]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL bundle.

    A bad row raises :class:`BadRow`, or, with ``errors``, is collected there and
    skipped. A line longer than ``limits.line_bytes`` always raises: reading cannot
    go on past it. ``on_bytes`` hears of every byte read. With ``plain``, rows of the
    simplest shapes come as tuples (:mod:`bfsql.loading.plain`), checked alike but faster,
    and a block of lines that are all bare relationships as one
    :class:`~bfsql.loading.plain.PlainRelationships` (all entities with at most a name: one
    :class:`~bfsql.loading.plain.PlainEntities`) at the number of its first line.
    """
    with open(path, "rb") as handle:
        yield from _rows(handle, str(path), 1, limits, errors, on_bytes, plain)


def read_bundle_range(
    path: str | Path,
    start: int,
    end: int,
    first_line: int,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
    plain: bool = False,
) -> Iterator[tuple[int, Row]]:
    """Yield the rows of the bytes ``start`` to ``end`` of a bundle as :func:`read_bundle` does.

    ``start`` is where line ``first_line`` of the file begins, and ``end`` where a line begins
    (or the file ends), so that line numbers, in rows and errors, are the file's.
    """
    with open(path, "rb") as handle:
        yield from _rows(ByteRange(handle, start, end), str(path), first_line, limits, errors, on_bytes, plain)


def _rows(
    handle: BinaryIO | ByteRange,
    name: str,
    first_line: int,
    limits: LoadLimits,
    errors: RowErrors | None,
    on_bytes: ByteCallback | None,
    plain: bool,
) -> Iterator[tuple[int, Row]]:
    plain_line = line_reader(limits) if plain else None
    plain_block = block_reader(limits) if plain else None
    number = first_line - 1
    for block in bounded_blocks(handle, name, limits.line_bytes, on_bytes, first_line):
        if plain_block is not None and not block.startswith(BOM):
            rows = plain_block(block)
            if rows is not None:
                yield number + 1, rows
                number += len(rows)
                continue
        for raw in io.BytesIO(block):
            number += 1
            try:
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    text = decode_line(raw, name, number)  # raises naming the byte
                if number == 1:
                    text = text.removeprefix("\ufeff")
                if not text:
                    continue
                record = (plain_line and plain_line(text)) or parse_json_line(
                    text, name, number, limits, plain=plain
                )
            except BadRow as exc:
                report(errors, exc)
                continue
            yield number, record
