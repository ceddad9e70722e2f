"""Relation lists of the reference server in bounded pages: one entity's (GET), and a batch's (POST).

``POST /batch/relations`` may ask for the relations of 500 hubs: tens of megabytes as one
document. An answer holds instead at most :attr:`PageLimits.rows` relations and about
:attr:`PageLimits.bytes` bytes; an unfinished one ends with a next link carrying a cursor
(``/batch/relations?cursor=…``), to which the client POSTs the same body for the rest. A
cursor names where the answer goes on — the index of an id among the request's distinct ids
and how many of its relations were answered — and a digest of the request, so that it is never
applied to another id list. An entity whose relations span two answers appears in both, its
relations continuing where they stopped.

A page is read from hops over a few ids at a time (as many as the rows seen so far suggest
fill it), and written relation by relation, yielding the event loop every slice of work: its
memory stays near one page, and cheap requests are served between slices.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bfsql import WORK_BETWEEN_CHECKS, Graph, HopEdge, Pacer

__all__ = [
    "DIRECTIONS",
    "Cursor",
    "PageLimits",
    "RelationPage",
    "hop_relation",
    "listed_relations",
    "relation_page",
    "request_digest",
]

DIRECTIONS = {"out": (0,), "in": (2,), "both": (0, 2)}
"""Which position of an edge (subject 0, object 2) holds the listed entity, by ``direction``."""
HOP_CHUNK = 64
"""The most ids one hop of a batch page asks the graph for."""
RELATION_WORK = 8
"""Items of pacing work one written relation counts for: building and encoding it costs about 8 µs,
some eight times a traversal's item, so that slices stay near their length."""

_CURSOR = re.compile(r"(\d{1,9})\.(\d{1,12})\.([0-9a-f]{16})")
_EDGE = operator.itemgetter(0, 1, 2)
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps would build one per call with ensure_ascii=False


def hop_relation(entity_id: str, row: HopEdge) -> dict[str, Any]:
    """A relation of ``entity_id`` whose other end, when it is an entity, is a node object with its type and name."""
    subject, predicate, obj, other_type, other_name = row
    relation: dict[str, Any] = {"subject": subject, "predicate": predicate, "object": obj}
    if other_type is not None:
        other = "object" if subject == entity_id else "subject"
        relation[other] = {"@id": relation[other], "@type": other_type}
        if other_name is not None:
            relation[other]["name"] = other_name
    return relation


def listed_relations(entity_id: str, rows: Iterable[HopEdge], direction: str) -> list[HopEdge]:
    """The hop rows of ``entity_id`` in ``direction``, sorted by edge: the order of every list and page."""
    ends = DIRECTIONS[direction]
    return sorted((row for row in rows if any(row[end] == entity_id for end in ends)), key=_EDGE)


@dataclass(frozen=True)
class PageLimits:
    """How much one batch answer may hold."""

    rows: int
    """Relations per answer."""
    bytes: int
    """Bytes of the answer's entity list (the envelope adds its context, about 1.5 KB); one relation
    larger than this is still answered, alone."""


@dataclass(frozen=True)
class Cursor:
    """Where a batch answer goes on: at the ``position``-th distinct id, after ``offset`` of its relations."""

    position: int = 0
    offset: int = 0


def request_digest(ids: list[str], direction: str) -> str:
    """What ties a cursor to its request: a digest of the distinct ids and the direction."""
    return hashlib.blake2b(json.dumps([direction, ids]).encode(), digest_size=8).hexdigest()


def encode_cursor(cursor: Cursor, digest: str) -> str:
    """The cursor as the ``cursor`` query value of a next link."""
    return f"{cursor.position}.{cursor.offset}.{digest}"


def decode_cursor(text: str | None, digest: str) -> Cursor:
    """The cursor of a next link (the start without one); ValueError saying what to do if it is not one of ours."""
    if text is None:
        return Cursor()
    match = _CURSOR.fullmatch(text)
    if match is None:
        raise ValueError(
            "cursor is not one this server gave; follow the next link of the previous answer, "
            "or send the request without one"
        )
    if match[3] != digest:
        raise ValueError("the cursor belongs to another request: POST the same ids and direction to the next link")
    return Cursor(int(match[1]), int(match[2]))


@dataclass(frozen=True)
class RelationPage:
    """One batch answer: its entity list as JSON text, the relations in it, and where the next answer starts."""

    entities: bytes
    rows: int
    next: Cursor | None


def _json(value: Any) -> bytes:
    return _ENCODER.encode(value).encode()


class _PageWriter:
    """Entity groups (``{"@id", "relations"}``) written as JSON text while they fit the limits."""

    def __init__(self, limits: PageLimits) -> None:
        self.limits = limits
        self.groups: list[bytes] = []
        self.size = 2  # the brackets of the list
        self.rows = 0
        self._id = b""
        self._relations: list[bytes] = []

    def fits(self, more: int) -> bool:
        """Whether ``more`` bytes fit; anything fits an empty page, so every page makes progress."""
        return self.size == 2 or self.size + more <= self.limits.bytes

    def open(self, entity_id: str) -> bool:
        """Start the group of ``entity_id``; False when not even its empty group fits."""
        self._id = _json(entity_id)
        self._relations = []
        more = len(self._id) + 20  # {"@id":…,"relations":[]} and a comma
        if not self.fits(more):
            return False
        self.size += more
        return True

    def add(self, relation: dict[str, Any]) -> bool:
        """Add a relation to the open group; False when the page is full."""
        if self.rows >= self.limits.rows:
            return False
        text = _json(relation)
        if not self.fits(len(text) + 1):
            return False
        self._relations.append(text)
        self.size += len(text) + 1
        self.rows += 1
        return True

    def close(self, complete: bool) -> None:
        """End the open group: written if it holds relations, or if it is complete (an entity with none)."""
        if self._relations or complete:
            self.groups.append(b'{"@id":' + self._id + b',"relations":[' + b",".join(self._relations) + b"]}")

    def entities(self) -> bytes:
        """The written groups as a JSON list."""
        return b"[" + b",".join(self.groups) + b"]"


async def relation_page(
    graph: Graph, ids: list[str], direction: str, start: Cursor, limits: PageLimits
) -> RelationPage:
    """The answer of a batch of distinct ``ids`` in ``direction`` from ``start``; unknown ids are left out."""
    writer = _PageWriter(limits)
    pacer = Pacer()
    position, offset = start.position, start.offset
    chunk, hops, hopped = 1, 0, 0  # ids per hop (slow start), and the ids and rows hopped so far
    while position < len(ids):
        asked = ids[position : position + chunk]
        found = await graph.hop(asked)
        for entity_id in asked:
            rows = found[entity_id].edges if entity_id in found else []
            hops, hopped = hops + 1, hopped + len(rows)
            if entity_id in found:
                if not writer.open(entity_id):
                    return RelationPage(writer.entities(), writer.rows, Cursor(position, offset))
                listed = listed_relations(entity_id, rows, direction)
                pacer.work += len(listed)
                for row in listed[offset:]:
                    if not writer.add(hop_relation(entity_id, row)):
                        writer.close(complete=False)
                        return RelationPage(writer.entities(), writer.rows, Cursor(position, offset))
                    offset += 1
                    pacer.work += RELATION_WORK
                    if pacer.work >= WORK_BETWEEN_CHECKS:
                        await pacer.pause()
                writer.close(complete=True)
            position, offset = position + 1, 0
        room = max(1, limits.rows - writer.rows)
        chunk = max(1, min(HOP_CHUNK, 2 * chunk, room * hops // max(1, hopped)))
        await pacer.pause()
    return RelationPage(writer.entities(), writer.rows, None)
