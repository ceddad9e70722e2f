"""What a bad bundle row probably meant: the kind or field that a misspelt or foreign name stands for.

Rows often come from other graph formats (``type`` for ``entity_type``, ``source`` /
``target`` for ``subject`` / ``object``) or carry a typo; the load error then says
``unknown field 'type'; did you mean 'entity_type'?`` instead of only refusing the row.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from pydantic import BaseModel

__all__ = ["FIELD_ALIASES", "KIND_ALIASES", "guess_kind", "suggest_field", "suggest_kind"]

KIND_ALIASES: dict[str, str] = {
    "node": "entity",
    "vertex": "entity",
    "edge": "relationship",
    "relation": "relationship",
    "link": "relationship",
    "triple": "relationship",
    "provenance": "evidence",
}
"""Names other graph formats give a record, and the bundle kind they mean."""

FIELD_ALIASES: dict[str, dict[str, str]] = {
    "entity": {"type": "entity_type", "category": "entity_type", "label": "name", "title": "name",
               "aliases": "synonyms", "url": "canonical_url", "iri": "canonical_url", "uri": "canonical_url",
               "attributes": "properties", "metadata": "properties", "props": "properties"},
    "relationship": {"source": "subject", "from": "subject", "head": "subject", "target": "object", "to": "object",
                     "tail": "object", "type": "predicate", "relation": "predicate", "label": "predicate",
                     "documents": "source_documents", "attributes": "properties", "metadata": "properties",
                     "props": "properties"},
    "evidence": {"source": "subject", "target": "object", "type": "predicate", "relation": "predicate",
                 "text": "text_span", "span": "text_span", "document": "document_id"},
}
"""Per kind: field names other graph formats use, and the bundle field they mean (see docs/bundle-format.md)."""


def _plain(name: str) -> str:
    """``entityType``, ``Entity_Type`` and ``entity-type`` all read as ``entitytype``."""
    return name.casefold().replace("_", "").replace("-", "")


def suggest_field(unknown: str, kind: str, fields: list[str], missing: list[str]) -> str | None:
    """The field of a ``kind`` row (one of ``fields``) that the unknown field ``unknown`` most likely means.

    In order: a known alias; a field spelt the same but for case and separators, or one
    of whose ``_``-separated words it is (``type`` → ``entity_type``), preferring the
    fields the row lacks (``missing``); a close spelling. None when nothing is close.
    """
    alias = FIELD_ALIASES.get(kind, {}).get(unknown.casefold())
    if alias in fields:
        return alias
    plain = _plain(unknown)
    for name in [*missing, *(f for f in fields if f not in missing)]:
        if _plain(name) == plain or unknown.casefold() in name.split("_"):
            return name
    close = difflib.get_close_matches(unknown.casefold(), fields, n=1, cutoff=0.6)
    return close[0] if close else None


def guess_kind(row: Mapping[str, object], models: Mapping[str, type[BaseModel]]) -> str | None:
    """The kind whose fields ``row`` uses most (the first such kind in ``models`` on a tie); None if it uses none."""
    best, score = None, 0
    for kind, model in models.items():
        used = sum(1 for key in row if key != "kind" and key in model.model_fields)
        if used > score:
            best, score = kind, used
    return best


def suggest_kind(given: str, kinds: list[str]) -> str | None:
    """The kind that the unknown kind ``given`` most likely means: an alias, a plural, or a close spelling."""
    name = given.casefold().strip()
    alias = KIND_ALIASES.get(name) or KIND_ALIASES.get(name.removesuffix("s"))
    if alias in kinds:
        return alias
    close = difflib.get_close_matches(name, kinds, n=1, cutoff=0.6)
    return close[0] if close else None
