"""Variable-length edges of path queries (``-[isa*]->``): a relation walked transitively, level by level.

:func:`walk` is the one place a closure is computed: a breadth-first walk from all the starts
together, level by level. Each entity is entered once, at its least depth, so cycles end the walk
instead of repeating it, and only the entities reached (with the edge each was first reached by)
and the current frontier are held.

Where the relation is a fixed set of predicates each scoring 1 (every term names a predicate
exactly, or ``[*]``) and the backend walks closures itself (the ``closure`` primitive: a recursive
CTE, an array index), the store walks every level in one call and the walk replays its levels
here: the same entities, depths, first edges, cuts and notes as the walk that asks ``hop`` once
per level, which is what runs everywhere else (and where the store's answer could differ: a hub
to cap, an entity the path already holds, a cut level between starts of different scores).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bfsql.graph import Graph
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer
from bfsql.rows import Closure, Neighbourhood

__all__ = ["Asked", "Follow", "InStore", "Option", "Reach", "Start", "Walk", "ask_closure", "walk"]

Option = tuple[str, float, str, str | None]
"""An edge a walk may take from an entity: (predicate, relation score, other end, the other end's type or None
when it is no entity of the graph)."""

Follow = Callable[[dict[str, Neighbourhood], list[str]], Awaitable[dict[str, list[Option]]]]
"""Given one ``hop`` answer and the entities asked, the edges to take from each (the relation matching)."""


Expand = Callable[[list[str], int], Awaitable[dict[str, list[Option]]]]
"""The edges to take from each of the entities asked (a level's frontier), and the level they lead to."""


@dataclass(frozen=True, slots=True)
class InStore:
    """A relation the store may walk itself (the ``closure`` primitive): its predicates and direction."""

    predicates: tuple[str, ...] | None
    """The predicates walked, each scoring 1; None for every predicate (``[*]``)."""
    outgoing: bool
    max_edges_per_node: int
    """The hub cap: a store answers None rather than expand an entity with more edges in the direction."""


@dataclass(frozen=True, slots=True)
class Asked:
    """The store's answer to a walk's ``closure`` call (:func:`ask_closure`), asked before the walk began (with
    the lookup of the entity it starts from, say)."""

    closure: Closure | None


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
    names: dict[str, str | None] = field(default_factory=dict)
    """Names of the walk's entities the store said with its walk (:attr:`bfsql.Closure.names`): some, all or none."""

    _chains: dict[str, tuple[tuple[str, float, str], ...]] = field(default_factory=dict, repr=False, compare=False)

    def chain(self, entity: str) -> tuple[tuple[str, float, str], ...]:
        """The edges walked from the start to ``entity``, in order: (predicate, relation score, entity reached).

        Each entity's is made once, from its parent's: the results of a walk share their beginnings."""
        known = self._chains.get(entity)
        if known is None:
            reach = self.reached[entity]
            step = ((reach.predicate, reach.relation_score, entity),)
            known = self._chains[entity] = step if reach.depth == 1 else self.chain(reach.parent) + step
        return known


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
    in_store: InStore | None = None,
    asked: Asked | None = None,
) -> Walk:
    """Walk from ``starts`` along the edges ``follow`` takes, breadth first, at most ``most`` levels deep.

    Every entity is entered once, at its least depth, from the best-scoring of the entities that reach
    it at that depth (then the first by id), along the best-scoring of its edges from there (then the first
    predicate in code-point order, whatever order ``hop`` gave the edges in: the store's walk, which
    keeps one edge per pair, chooses the same); a start's ``blocked`` entities are never entered from it.
    Another start may be reached like any entity. The walk stops early when it would hold more than
    ``max_nodes`` entities (the best of the last level are kept), or at the first level begun after
    ``deadline`` (a :func:`time.perf_counter` time). When ``open_ended`` (``*`` or ``*n..``) and the
    walk is still going at ``most``, one more level is looked at to tell whether entities lie deeper.

    ``in_store``, when given, says ``follow`` takes exactly those edges, each scoring 1: a backend that
    walks closures then walks all the levels in one call (see the module); else one ``hop`` call a level.
    ``asked``: that call's answer, when the caller made it already (:func:`ask_closure`, from the same starts).
    """
    if in_store is not None and graph.walks_in_store("closure"):
        if asked is None:
            asked = await ask_closure(graph, [s.entity for s in starts], in_store, most, open_ended, max_nodes,
                                      deadline)
        walked = await _walk_in_store(starts, asked.closure, most, open_ended, max_nodes, pacer)
        if walked is not None:
            return walked

    async def expand(asked: list[str], depth: int) -> dict[str, list[Option]]:
        return await follow(await graph.hop(asked), asked)

    def due(depth: int) -> bool:
        return deadline is not None and time.perf_counter() > deadline

    return await _walk(starts, expand, due, lambda depth: 0, most, open_ended, max_nodes, pacer)


async def _walk(
    starts: Sequence[Start],
    expand: Expand,
    due: Callable[[int], bool],
    hidden: Callable[[int], int],
    most: int,
    open_ended: bool,
    max_nodes: int,
    pacer: Pacer,
) -> Walk:
    """:func:`walk` over levels ``expand`` gives: ``due(d)`` whether time is up before level ``d``, ``hidden(d)``
    the entities first reached at level ``d`` that ``expand`` does not list (a store's cut level)."""
    result = Walk()
    frontier: Frontier = sorted(((s.entity, i, s.score) for i, s in enumerate(starts)), key=_best_first)
    depth = 0
    while frontier and depth < most:
        if due(depth + 1):
            result.stopped = "time_limit"
            return result
        depth += 1
        found = await _level(starts, expand, frontier, depth, result, pacer)
        room = max_nodes - len(result.reached)
        if len(found) + hidden(depth) > room:
            kept = sorted(found, key=lambda e: (-found[e].score, e))[:room]
            result.stopped, result.left_out = "max_nodes", len(found) + hidden(depth) - room
            found = {e: found[e] for e in kept}
        result.reached.update(found)
        result.depth = depth if found else result.depth
        frontier = sorted(((e, r.start, r.score) for e, r in found.items()), key=_best_first)
        if result.stopped:
            return result
    if open_ended and frontier:
        beyond = await _level(starts, expand, frontier, depth + 1, Walk(result.reached), pacer)
        if beyond or hidden(depth + 1):
            result.stopped, result.left_out = "max_depth", len(beyond) + hidden(depth + 1)
    return result


async def ask_closure(
    graph: Graph, seeds: Iterable[str], in_store: InStore, most: int, open_ended: bool, max_nodes: int,
    deadline: float | None,
) -> Asked:
    """The store's ``closure`` for a :func:`walk` from ``seeds`` (its starts' entities) with these arguments:
    what the walk asks when it is not given the answer."""
    time_left = None if deadline is None else deadline - time.perf_counter()
    return Asked(await graph.closure(
        sorted(set(seeds)), None if in_store.predicates is None else list(in_store.predicates), in_store.outgoing,
        most + 1 if open_ended else most, max_nodes, in_store.max_edges_per_node, time_left,
    ))


async def _walk_in_store(
    starts: Sequence[Start], closure: Closure | None, most: int, open_ended: bool, max_nodes: int, pacer: Pacer,
) -> Walk | None:
    """The walk from the levels the store walked in one ``closure`` call; None where they could differ from the
    level-by-level walk's: the store answered None, nothing was found at the first level, the store's levels
    pass an entity a path holds, or the walk was cut after a hop (whose path an unlisted entity may be on) or
    from starts of different scores (the cut keeps the best)."""
    if closure is None or not closure.levels or not closure.levels[0]:
        return None  # the level walk says why nothing matched
    seeded = {s.entity for s in starts}
    blocked = {e for s in starts for e in s.blocked} - seeded
    if closure.cut and (blocked or len({s.score for s in starts}) > 1):
        return None  # the entities the cut level leaves unlisted may be on a path, or the best of another start
    options = _options_by_level(closure)
    if blocked and any(child in blocked for level in options for child in _children(level)):
        return None
    levels = len(closure.levels)
    listed = {s.child for s in closure.levels[-1] if s.child_type is not None and s.child not in seeded}
    last_hidden = closure.found - len(listed) if closure.cut else 0

    async def expand(asked: list[str], depth: int) -> dict[str, list[Option]]:
        first = options[0]
        level = options[depth - 1] if depth <= levels else {}
        return {e: first.get(e, []) if e in seeded else level.get(e, []) for e in asked}

    def due(depth: int) -> bool:
        return closure.timed_out and depth > levels

    def hidden(depth: int) -> int:
        return last_hidden if depth == levels else 0

    walked = await _walk(starts, expand, due, hidden, most, open_ended, max_nodes, pacer)
    walked.names = closure.names or {}
    return walked


def _options_by_level(closure: Closure) -> list[dict[str, list[Option]]]:
    """Each level's edges as the options of their parents, an edge repeated under other predicates kept once (the
    first predicate in code-point order), as a hop's edges are taken."""
    levels: list[dict[str, list[Option]]] = []
    for steps in closure.levels:
        by_parent: dict[str, dict[str, Option]] = {}
        for parent, predicate, child, child_type in sorted(steps):
            by_parent.setdefault(parent, {}).setdefault(child, (predicate, 1.0, child, child_type))
        levels.append({parent: list(children.values()) for parent, children in by_parent.items()})
    return levels


def _children(level: dict[str, list[Option]]) -> Iterable[str]:
    return (option[2] for options in level.values() for option in options)


def _best_first(item: tuple[str, int, float]) -> tuple[float, str, int]:
    entity, start, score = item
    return (-score, entity, start)


async def _level(
    starts: Sequence[Start], expand: Expand, frontier: Frontier, depth: int, result: Walk, pacer: Pacer
) -> dict[str, Reach]:
    """The entities first reached at ``depth``: one ``expand`` call for the whole frontier."""
    asked = sorted({entity for entity, _, _ in frontier})
    options_of = await expand(asked, depth)
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
            if known is None or score * relation > known.score or (
                    known.parent == entity and known.start == start and score * relation == known.score
                    and predicate < known.predicate):
                found[other] = Reach(depth, entity, predicate, relation, score * relation, start, other_type)
        pacer.work += len(options) + 1
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
    return found
