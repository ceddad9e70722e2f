"""Variable-length edges of path queries (``-[isa*]->``): a relation walked transitively, level by level.

:func:`walk` is the one place a closure is computed: a breadth-first walk from all the starts
together, one batched ``hop`` call per depth level, so it runs on every backend. Each entity is
entered once, at its least depth, so cycles end the walk instead of repeating it, and only the
entities reached (with the edge each was first reached by) and the current frontier are held.

This is the seam where a store could answer a closure natively (a recursive CTE, a SPARQL
property path ``isa+``) once the relation resolves to a fixed set of predicates: it would
return the same :class:`Walk` (least depths, first edges, and the cut, if any).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bfsql.graph import Graph
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer
from bfsql.rows import Neighbourhood

__all__ = ["Follow", "Option", "Reach", "Start", "Walk", "walk"]

Option = tuple[str, float, str, str | None]
"""An edge a walk may take from an entity: (predicate, relation score, other end, the other end's type or None
when it is no entity of the graph)."""

Follow = Callable[[dict[str, Neighbourhood], list[str]], Awaitable[dict[str, list[Option]]]]
"""Given one ``hop`` answer and the entities asked, the edges to take from each (the relation matching)."""


@dataclass(frozen=True, slots=True)
class Start:
    """Where a walk starts: an entity, the score of the path that reached it, and what the walk may not enter."""

    entity: str
    score: float
    blocked: tuple[str, ...]
    """Entities already on the start's path, the start included: a path never enters an entity twice."""


@dataclass(frozen=True, slots=True)
class Reach:
    """An entity a walk reached: its least depth, the edge it was first reached by, and that path's score."""

    depth: int
    parent: str
    """The entity the edge comes from: a start at depth 1, else an entity reached at ``depth - 1``."""
    predicate: str
    relation_score: float
    score: float
    """The start's score times the relation scores of the edges walked."""
    start: int
    """Index of the :class:`Start` the walk came from."""
    entity_type: str


@dataclass
class Walk:
    """What a walk reached, and why it stopped early when it did."""

    reached: dict[str, Reach] = field(default_factory=dict)
    depth: int = 0
    """The deepest level that reached an entity."""
    stopped: str | None = None
    """``max_depth`` (entities lie deeper than an open walk may go), ``max_nodes`` or ``time_limit``; None when
    the walk is whole."""
    left_out: int = 0
    """Entities found but not kept: beyond ``max_nodes`` at the last level, or one level past ``max_depth``."""
    dangling: set[str] = field(default_factory=set)
    """Edge ends that are no entity of the graph."""

    def chain(self, entity: str) -> list[tuple[str, float, str]]:
        """The edges walked from the start to ``entity``, in order: (predicate, relation score, entity reached)."""
        steps = []
        reach = self.reached[entity]
        while True:
            steps.append((reach.predicate, reach.relation_score, entity))
            if reach.depth == 1:
                return steps[::-1]
            entity = reach.parent
            reach = self.reached[entity]


Frontier = list[tuple[str, int, float]]
"""Entities to expand at one level, best first: (entity, start index, score)."""


async def walk(
    graph: Graph,
    starts: Sequence[Start],
    follow: Follow,
    *,
    most: int,
    open_ended: bool,
    max_nodes: int,
    pacer: Pacer,
    deadline: float | None = None,
) -> Walk:
    """Walk from ``starts`` along the edges ``follow`` takes, breadth first, at most ``most`` levels deep.

    Every entity is entered once, at its least depth, from the best-scoring of the entities that reach
    it at that depth (then the first by id); a start's ``blocked`` entities are never entered from it.
    Another start may be reached like any entity. The walk stops early when it would hold more than
    ``max_nodes`` entities (the best of the last level are kept), or at the first level begun after
    ``deadline`` (a :func:`time.perf_counter` time). When ``open_ended`` (``*`` or ``*n..``) and the
    walk is still going at ``most``, one more level is looked at to tell whether entities lie deeper.
    """
    result = Walk()
    frontier: Frontier = sorted(((s.entity, i, s.score) for i, s in enumerate(starts)), key=_best_first)
    depth = 0
    while frontier and depth < most:
        if deadline is not None and time.perf_counter() > deadline:
            result.stopped = "time_limit"
            return result
        depth += 1
        found = await _level(graph, starts, follow, frontier, depth, result, pacer)
        room = max_nodes - len(result.reached)
        if len(found) > room:
            kept = sorted(found, key=lambda e: (-found[e].score, e))[:room]
            result.stopped, result.left_out = "max_nodes", len(found) - room
            found = {e: found[e] for e in kept}
        result.reached.update(found)
        result.depth = depth if found else result.depth
        frontier = sorted(((e, r.start, r.score) for e, r in found.items()), key=_best_first)
        if result.stopped:
            return result
    if open_ended and frontier:
        beyond = await _level(graph, starts, follow, frontier, depth + 1, Walk(result.reached), pacer)
        if beyond:
            result.stopped, result.left_out = "max_depth", len(beyond)
    return result


def _best_first(item: tuple[str, int, float]) -> tuple[float, str, int]:
    entity, start, score = item
    return (-score, entity, start)


async def _level(
    graph: Graph, starts: Sequence[Start], follow: Follow, frontier: Frontier, depth: int, result: Walk, pacer: Pacer
) -> dict[str, Reach]:
    """The entities first reached at ``depth``: one ``hop`` call for the whole frontier."""
    asked = sorted({entity for entity, _, _ in frontier})
    options_of = await follow(await graph.hop(asked), asked)
    found: dict[str, Reach] = {}
    reached = result.reached
    for entity, start, score in frontier:
        options = options_of.get(entity, ())
        blocked = starts[start].blocked
        for predicate, relation, other, other_type in options:
            if other in reached or other in blocked:
                continue
            if other_type is None:
                result.dangling.add(other)
                continue
            known = found.get(other)
            if known is None or score * relation > known.score:
                found[other] = Reach(depth, entity, predicate, relation, score * relation, start, other_type)
        pacer.work += len(options) + 1
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
    return found
