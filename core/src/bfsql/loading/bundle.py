"""Reading a JSONL graph bundle: one JSON object per line, ``kind`` saying which record.

See docs/bundle-format.md. Errors name the file and line of the bad row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord

__all__ = ["BadRow", "Record", "read_bundle"]

Record = EntityRecord | RelationshipRecord | EvidenceRecord

_KINDS: dict[str, type[Record]] = {
    "entity": EntityRecord,
    "relationship": RelationshipRecord,
    "evidence": EvidenceRecord,
}


class BadRow(ValueError):
    """A row that cannot be loaded, with where it is and what is wrong."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "row"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_record(obj: object, path: str, line: int) -> Record:
    """Validate one decoded JSON object as a bundle record."""
    if not isinstance(obj, dict):
        raise BadRow(path, line, "expected a JSON object")
    kind = obj.get("kind")
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise BadRow(path, line, f"'kind' must be one of {sorted(_KINDS)}, got {kind!r}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise BadRow(path, line, _describe(exc)) from None


def read_bundle(path: str | Path) -> Iterator[tuple[int, Record]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL bundle."""
    name = str(path)
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise BadRow(name, number, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            yield number, parse_record(obj, name, number)
