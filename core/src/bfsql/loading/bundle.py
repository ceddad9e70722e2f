"""Reading a JSONL graph bundle: one JSON object per line, ``kind`` saying which record.

See docs/bundle-format.md. Errors name the file and line of the bad row. Lines are
read in binary and decoded one at a time, so no line longer than the limit
``line_bytes`` is ever held whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bfsql.loading.errors import BadRow, RowErrors, report
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits, check_row, may_break_limits
from bfsql.loading.lines import ByteCallback, bounded_lines, decode_line
from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord

__all__ = ["BadRow", "Record", "parse_json_line", "parse_record", "read_bundle"]

Record = EntityRecord | RelationshipRecord | EvidenceRecord

_KINDS: dict[str, type[Record]] = {
    "entity": EntityRecord,
    "relationship": RelationshipRecord,
    "evidence": EvidenceRecord,
}


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "row"
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {message}")
    return "; ".join(parts)


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
        raise BadRow(path, line, f"'kind' must be one of {sorted(_KINDS)}, got {kind!r}")
    problem = check_row(obj, limits) if check else None
    if problem is not None:
        raise BadRow(path, line, problem)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise BadRow(path, line, _describe(exc)) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows; write a finite number or null")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_json_line(text: str, path: str, line: int, limits: LoadLimits = DEFAULT_LIMITS) -> Record:
    """Decode and validate one JSONL line."""
    try:
        obj = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # json's messages end in "at" when they point at a place ("Unterminated string starting at").
        raise BadRow(path, line, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}") from None
    except RecursionError:
        raise BadRow(path, line, f"nested too deeply (the limit is depth = {limits.depth} levels)") from None
    except ValueError as exc:
        raise BadRow(path, line, f"invalid JSON: {exc}") from None
    return parse_record(obj, path, line, limits, check=may_break_limits(text, limits))


def read_bundle(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL bundle.

    A bad row raises :class:`BadRow`, or, with ``errors``, is collected there and
    skipped. A line longer than ``limits.line_bytes`` always raises: reading cannot
    go on past it. ``on_bytes`` hears of every byte read.
    """
    name = str(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, name, limits.line_bytes, on_bytes), start=1):
            try:
                text = decode_line(raw, name, number).strip()
                if number == 1:
                    text = text.removeprefix("\ufeff")
                record = parse_json_line(text, name, number, limits) if text else None
            except BadRow as exc:
                report(errors, exc)
                continue
            if record is not None:
                yield number, record
