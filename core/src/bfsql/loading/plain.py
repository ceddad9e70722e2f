"""Bundle rows of the simplest shapes, checked without building a model: the loader's fast path.

Most rows of a big graph are a bare relationship (``kind``, ``subject``, ``predicate``,
``object``) or an entity with at most a name. :func:`plain_row` checks such a decoded row
exactly as :class:`~bfsql.loading.records.RelationshipRecord` or
:class:`~bfsql.loading.records.EntityRecord` and the limits would (strings, not blank, no
control characters or lone surrogates in ids, lengths within the limits) and gives it as a
tuple; any other row, or one that fails a check, gets None and goes the full way, which
says what is wrong. Building a pydantic model costs more than decoding the line.

:func:`line_reader` and :func:`block_reader` go further for lines written the usual way
(keys in the order of docs/bundle-format.md, strings without escapes): one regular
expression reads and checks a line, or a whole block of relationship lines (or of entity
lines), without decoding JSON at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeGuard

from bfsql.loading.limits import _SURROGATE, LoadLimits
from bfsql.loading.records import _NOT_IN_IDS

__all__ = [
    "PlainEntities", "PlainEntity", "PlainRelationship", "PlainRelationships", "block_reader", "clean_text",
    "line_reader", "plain_row",
]


class PlainEntity(NamedTuple):
    """An entity row with nothing but an id, a type and maybe a name."""

    id: str
    entity_type: str
    name: str | None

    @property
    def kind(self) -> Literal["entity"]:
        """As a record's."""
        return "entity"


class PlainRelationship(NamedTuple):
    """A relationship row with nothing but its triple."""

    subject: str
    predicate: str
    object: str

    @property
    def kind(self) -> Literal["relationship"]:
        """As a record's."""
        return "relationship"


def clean_text(text: str) -> bool:
    """Whether a JSON line's strings can hold no control character or lone surrogate.

    Those come only from escapes, non-ASCII characters or DEL (JSON refuses raw control
    characters), so a line without any needs no search.
    """
    return text.isascii() and "\\" not in text and "\x7f" not in text


def _id_ok(value: Any, limit: int, clean: bool) -> TypeGuard[str]:
    return (
        type(value) is str
        and 0 < len(value) <= limit
        and not value.isspace()
        and (clean or _NOT_IN_IDS.search(value) is None)
    )


def _name_ok(value: Any, limit: int, clean: bool) -> TypeGuard[str | None]:
    if value is None:
        return True
    return (
        type(value) is str
        and len(value) <= limit
        and (clean or ("\x00" not in value and (value.isascii() or _SURROGATE.search(value) is None)))
    )


def plain_row(obj: dict[str, Any], limits: LoadLimits, clean: bool) -> PlainEntity | PlainRelationship | None:
    """The row as a plain tuple when it has one of the simplest shapes and passes every check, else None.

    ``clean``: the line passed :func:`clean_text`, so the character searches can be skipped.
    """
    size = len(obj)
    kind = obj.get("kind")
    ids = limits.id_chars
    if kind == "relationship" and size == 4:
        subject, predicate, target = obj.get("subject"), obj.get("predicate"), obj.get("object")
        if _id_ok(subject, ids, clean) and _id_ok(predicate, ids, clean) and _id_ok(target, ids, clean):
            return PlainRelationship(subject, predicate, target)
    elif kind == "entity" and (size == 3 or (size == 4 and "name" in obj)):
        entity_id, entity_type, name = obj.get("id"), obj.get("entity_type"), obj.get("name")
        names = limits.name_chars
        if _id_ok(entity_id, ids, clean) and _id_ok(entity_type, ids, clean) and _name_ok(name, names, clean):
            return PlainEntity(entity_id, entity_type, name)
    return None


class PlainRelationships(list[tuple[str, str, str]]):
    """The triples of consecutive lines that are all relationships with nothing but their triple."""

    @property
    def kind(self) -> Literal["relationship"]:
        """As a record's."""
        return "relationship"


class PlainEntities(list[tuple[str, str, str | None]]):
    """The ``(id, entity_type, name)`` of consecutive lines that are all entities with at most a name."""

    @property
    def kind(self) -> Literal["entity"]:
        """As a record's."""
        return "entity"


_SPACE = r"[ \t\r]*"
"""JSON's whitespace within a line."""


@functools.lru_cache(maxsize=8)
def _patterns(
    id_chars: int, name_chars: int
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """A relationship's line, an entity's line, and a block's relationship or entity lines, written the usual way.

    A JSON string without escapes is its text. An id must not hold a quote, backslash, control
    character, DEL or lone surrogate and must hold something besides whitespace; a name must
    not hold a quote, backslash, C0 control character (raw C0 controls are not JSON anyway) or
    lone surrogate. Lengths are held to the limits. In an entity block, a group holding ``"name"``
    tells a missing name from an empty one (``findall`` gives both as an empty string).
    """
    ident = rf'"(?=[^"]*?[^\s"])([^"\\\x00-\x1f\x7f-\x9f\ud800-\udfff]{{1,{id_chars}}})"'
    name = rf'"([^"\\\x00-\x1f\ud800-\udfff]{{0,{name_chars}}})"'

    def fields(*pairs: tuple[str, str]) -> str:
        return f"{_SPACE},{_SPACE}".join(f'"{key}"{_SPACE}:{_SPACE}{value}' for key, value in pairs)

    relationship = (
        "{" + _SPACE + fields(("kind", '"relationship"'), ("subject", ident), ("predicate", ident), ("object", ident))
        + _SPACE + "}"
    )
    entity_start = "{" + _SPACE + fields(("kind", '"entity"'), ("id", ident), ("entity_type", ident))
    entity = entity_start + f"(?:{_SPACE},{_SPACE}{fields(('name', name))})?" + _SPACE + "}"
    entity_in_block = entity_start + f'(?:{_SPACE},{_SPACE}("name"){_SPACE}:{_SPACE}{name})?' + _SPACE + "}"
    return (
        re.compile(relationship),
        re.compile(entity),
        re.compile(f"^{_SPACE}{relationship}{_SPACE}$", re.MULTILINE),
        re.compile(f"^{_SPACE}{entity_in_block}{_SPACE}$", re.MULTILINE),
    )


def line_reader(limits: LoadLimits) -> Callable[[str], PlainRelationship | PlainEntity | None]:
    """A function giving the row of a stripped JSON line written the usual way (see the module), else None."""
    relationship, entity, _, _ = _patterns(limits.id_chars, limits.name_chars)
    relationship_line, entity_line = relationship.fullmatch, entity.fullmatch

    def plain_line(text: str) -> PlainRelationship | PlainEntity | None:
        found = relationship_line(text)
        if found is not None:
            return PlainRelationship(*found.groups())
        found = entity_line(text)
        if found is not None:
            return PlainEntity(*found.groups())
        return None

    return plain_line


def block_reader(limits: LoadLimits) -> Callable[[bytes], PlainRelationships | PlainEntities | None]:
    """A function giving the rows of a block of lines that are all relationships, or all entities, written the
    usual way, else None.

    Such a block (most of a big graph's lines) is read by one regular expression, with no
    Python work per line beyond making the row.
    """
    _, _, relationships, entities = _patterns(limits.id_chars, limits.name_chars)
    first_relationship, every_relationship = relationships.match, relationships.findall
    first_entity, every_entity = entities.match, entities.findall

    def plain_block(data: bytes) -> PlainRelationships | PlainEntities | None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        # Most blocks of other rows fail at their first line, before the whole block is searched.
        lines = text.count("\n") + (not text.endswith("\n"))
        if first_relationship(text) is not None:
            triples = every_relationship(text)
            return PlainRelationships(triples) if len(triples) == lines else None
        if first_entity(text) is not None:
            found = every_entity(text)
            if len(found) == lines:
                return PlainEntities([(i, kind, name if named else None) for i, kind, named, name in found])
        return None

    return plain_block
