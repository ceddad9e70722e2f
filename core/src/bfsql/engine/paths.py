"""path_query: run a path query (seed 002) over the graph facade, hop by hop, in batches.

Execution (docs/path-queries.md states it in full):

1. **Entry.** ``@id`` is looked up exactly (score 1). ``"text"`` is searched with the
   graph's best search mode (lexical, and vector when the backend has vectors); every
   candidate is scored by the embedding similarity of the text to its name and
   synonyms (1 for an exact, case-insensitive match) and the best ``k`` candidates
   scoring at least ``threshold`` are the entry points.
2. **Each hop** asks for the frontier's edges in one ``hop`` call, which also gives the
   types of the entities they lead to, and keeps those of the hop's direction. Relation
   terms are matched against the predicates there: a term equal to a known predicate
   (case-insensitive) matches only that predicate, with score 1; other terms score every
   predicate by embedding similarity (predicates split on ``_`` and camelCase). Per
   entity, the best ``k`` predicates scoring at least ``threshold`` are followed (``[*]``
   follows all, score 1). An entity already on a path is not visited again by that path
   (other paths may visit it). A **variable-length** edge (``-[isa*]->``) walks its relation
   level by level from the ends of all paths at once (:mod:`bfsql.engine.closures`): every
   entity is reached once, at its least depth, and those at a depth the quantifier allows
   pass on to the filter (which does not stop the walk).
3. **Filters**: ``type:T`` keeps entities of type T, ``@id`` keeps that entity, ``"text"``
   keeps the ``k`` candidates of the hop most similar to the text (at least
   ``threshold``), no filter keeps all.
4. A path's **score** is the product of its entry score, relation scores and semantic
   filter scores. Each entity reached at the end is returned once, with its best path;
   results are ordered by score, then depth (the edges walked by variable-length edges),
   then id, and cut at ``max_results``.
"""

from __future__ import annotations

import functools
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

from bfsql.backend import gather_or_cancel
from bfsql.budgets import DEFAULT_LIMITS, TraversalLimits
from bfsql.embedders import dot, split_identifier
from bfsql.engine.closures import Asked, InStore, Option, Reach, Start, Walk, ask_closure, walk
from bfsql.engine.path_defaults import (
    DEFAULT_K,
    DEFAULT_MAX_RESULTS,
    DEFAULT_THRESHOLD,
    MAX_K,
    MAX_RESULTS,
    WALK_TIME_SHARE,
)
from bfsql.engine.path_syntax import (
    MAX_WALK_DEPTH,
    ExactEntity,
    Hop,
    PathQuery,
    Quantifier,
    Relation,
    SemanticText,
    TypeFilter,
    parse_path_query,
)
from bfsql.engine.search import SEARCH_LIMIT, labels_of, search_entities
from bfsql.engine.traverse import capped
from bfsql.errors import InvalidArgument, UnknownEntity
from bfsql.graph import Graph
from bfsql.hop_memo import call_memo, remembers_reads
from bfsql.models import PathMetadata, PathQueryResult, PathResult, PathStep, Truncation
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer
from bfsql.rows import HopEdge, Neighbourhood, NodeInfo

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_THRESHOLD",
    "MAX_K",
    "MAX_RESULTS",
    "WALK_TIME_SHARE",
    "path_query",
    "relation_scores",
    "semantic_scores",
]

AVAILABLE_RELATIONS_SHOWN = 50
MAX_EXTENSIONS = 500_000
"""Path extensions one hop considers: paths are extended best first until this many are counted,
and the rest are pruned (and reported) before anything is built. This bounds a hop's memory and
time whatever the frontier (a wildcard chain from a hub grows by its fan-out at every hop)."""
FRONTIER_PIECE = 2_048
"""Most frontier entities whose edges a path query's hop reads at once (see :func:`_frontier_options`)."""
FIRST_PIECE = 64
"""Frontier entities of a hop's first read, before it knows how many extensions an entity brings."""
PIECE_ROWS = 100_000
"""Rows (edges both ways) one read of a hop's frontier should bring, at the rate met so far: each is a few Python
objects (about 200 bytes with its end's id and name). At R-MAT 20 one piece of 2,048 entities brought 708,323
rows, 140 MB, the peak of a wildcard path query from the hub."""
SEMANTIC_CANDIDATES = 2_000
"""Most entities of one hop a semantic filter scores (the best by path score): each costs an embedding."""
Direction = Literal["outgoing", "incoming"]


@functools.cache
def _results_adapter() -> TypeAdapter[list[PathResult]]:
    """Builds an answer's results from their fields in one validation (a model built a step costs several times
    more). Made at the first answer, not at import (some 18 ms): a process that asks no path query never needs it."""
    return TypeAdapter(list[PathResult])


def _check_parameters(k: int | None, threshold: float, max_results: int) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K):
        raise InvalidArgument(
            f"k must be an integer from 1 to {MAX_K}; got {k!r}.",
            "k is how many entry points, relations per entity and semantic matches are kept; 3 is the default.",
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise InvalidArgument(
            f"threshold must be a number from 0 to 1; got {threshold!r}.",
            "threshold is the least similarity a fuzzy match needs; 0.5 is the default, lower it to match more.",
        )
    if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= MAX_RESULTS:
        raise InvalidArgument(
            f"max_results must be an integer from 1 to {MAX_RESULTS}; got {max_results!r}.", "20 is the default."
        )


@dataclass(frozen=True, slots=True)
class _Walked:
    """The part of a path a variable-length edge walked, kept as the walk until the path is shown or extended."""

    walk: Walk
    prefix: _Path
    direction: Direction
    match: float | None


@dataclass(frozen=True, slots=True)
class _Path:
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, Direction, float], ...] = ()
    node_scores: tuple[float | None, ...] = ()
    score: float = 1.0
    depth: int = 0
    """Edges walked by the variable-length edges of the path."""
    walked: _Walked | None = None
    """Set on a walk's result: ``nodes`` then holds the walk's prefix and its end only (see :meth:`expanded`)."""

    def extend(self, node: str, predicate: str, direction: Direction, relation: float, match: float | None) -> _Path:
        return _Path(
            (*self.nodes, node),
            (*self.edges, (predicate, direction, relation)),
            (*self.node_scores, match),
            self.score * relation * (1.0 if match is None else match),
            self.depth,
        )

    def expanded(self) -> _Path:
        """The path with every edge of its walk spelled out (itself when there is none): the prefix extended by
        each edge walked, its score multiplied in the same order as :meth:`extend` would."""
        if self.walked is None:
            return self
        walked, prefix = self.walked, self.walked.prefix
        steps = walked.walk.chain(self.nodes[-1])
        score = prefix.score
        for _, relation, _ in steps:
            score *= relation
        return _Path(
            (*prefix.nodes, *(node for _, _, node in steps)),
            (*prefix.edges, *((predicate, walked.direction, relation) for predicate, relation, _ in steps)),
            (*prefix.node_scores, *(None for _ in steps[1:]), walked.match),
            score * (1.0 if walked.match is None else walked.match),
            self.depth,
        )

    def order(self) -> tuple[float, int, tuple[str, ...]]:
        return (-self.score, self.depth, self.nodes)

    def rank(self) -> tuple[float, int, str]:
        """The order of results: best score, then least depth, then id."""
        return (-self.score, self.depth, self.nodes[-1])


def _walked_path(prefix: _Path, entity: str, reach: Reach, walked: Walk, direction: Direction,
                 match: float | None) -> _Path:
    """A walk's result as a path: the prefix's nodes and the end, the walk's score and depth added."""
    return _Path((*prefix.nodes, entity), prefix.edges, prefix.node_scores,
                 reach.score * (1.0 if match is None else match), prefix.depth + reach.depth,
                 _Walked(walked, prefix, direction, match))


@dataclass
class _Stop:
    hop: int
    reason: str
    hint: str
    available: list[str] | None = None


@dataclass
class _Run:
    graph: Graph
    k: int
    threshold: float
    limits: TraversalLimits
    k_given: bool = True
    """False when the caller left k unset: a semantic entry then keeps only its exact matches, when it has some."""
    time_limit: float | None = None
    deadline: float | None = None
    """The :func:`time.perf_counter` time after which walks stop (``time_limit`` after the query began)."""
    types: dict[str, str] = field(default_factory=dict)
    names: dict[str, str | None] = field(default_factory=dict)
    """Names the query's reads said on the way (the ``@id`` entry's lookup, a store's walk): where they name every
    entity shown and no metadata is shown, the answer reads none."""
    explored: int = 0
    capped: dict[str, int] = field(default_factory=dict)
    cut: int = 0
    unextended: int = 0
    """Paths not extended because the hop had counted MAX_EXTENSIONS extensions already."""
    unscored: int = 0
    """Entities a semantic filter did not score (beyond SEMANTIC_CANDIDATES)."""
    dangling: int = 0
    warnings: list[str] = field(default_factory=list)
    walk_notes: list[Truncation] = field(default_factory=list)
    """What cut a walk short (depth, max_nodes, time), with the count reached so far."""
    pacer: Pacer = field(default_factory=Pacer)
    """Yields the event loop during long hops (so timeouts fire and other calls are served)."""
    asked: Asked | None = None
    """The store's closure of the first edge, asked with the ``@id`` entry's lookup (:func:`_walk_ahead`)."""
    in_store: dict[Hop, InStore | None] = field(default_factory=dict)
    """What :func:`_in_store` said of each variable-length edge asked about."""


# -- scoring ----------------------------------------------------------------------


async def semantic_scores(graph: Graph, text: str, ids: list[str]) -> dict[str, float]:
    """Similarity in [0, 1] of ``text`` to each entity's name and synonyms (best label wins).

    An exact case-insensitive match of the text with the id, the name or a synonym
    scores 1. The name is also embedded with the entity's type, ``"Battle of Yorktown
    (event)"``, so that a description such as ``"historical event"`` finds what an entity
    is as well as what it is called. Unknown ids are left out. One ``metadata_for_nodes``
    and one ``get_nodes`` batch, and one embedder call for all labels.
    """
    scores, _ = await _similarity(graph, text, ids)
    return scores


async def _similarity(graph: Graph, text: str, ids: list[str]) -> tuple[dict[str, float], set[str]]:
    """:func:`semantic_scores`, and the ids whose id, name or a synonym is the text (ignoring case)."""
    if not ids:
        return {}, set()
    wanted_ids = list(dict.fromkeys(ids))
    metadata, nodes = await gather_or_cancel(graph.metadata_for_nodes(wanted_ids), graph.get_nodes(wanted_ids))
    labels, exact = _labels(text, metadata, nodes)
    texts = list(dict.fromkeys(n for i, names in labels.items() if i not in exact for n in names))
    vectors = await graph.embed([text, *texts]) if texts else [[]]
    query, by_label = vectors[0], dict(zip(texts, vectors[1:], strict=True))
    scores = {i: 1.0 if i in exact else max(0.0, min(1.0, max(dot(query, by_label[n]) for n in names)))
              for i, names in labels.items()}
    return scores, exact


def _labels(
    text: str, metadata: dict[str, dict[str, Any]], nodes: dict[str, NodeInfo]
) -> tuple[dict[str, list[str]], set[str]]:
    """Each entity's labels to embed (name, synonyms, name with type), and the ids whose id, name or a synonym
    is the text (ignoring case)."""
    labels = {i: labels_of(i, meta) for i, meta in metadata.items()}
    wanted = text.strip().casefold()
    exact = {i for i, names in labels.items() if wanted in (i.casefold(), *(n.casefold() for n in names))}
    for entity_id, names in labels.items():
        node = nodes.get(entity_id)
        if node is not None and node.entity_type:
            names.append(f"{names[0]} ({split_identifier(node.entity_type) or node.entity_type})")
    return labels, exact


async def relation_scores(graph: Graph, relation: Relation, predicates: list[str]) -> dict[str, float]:
    """Score in [0, 1] of every predicate against the relation's terms.

    ``[*]`` scores everything 1. A term equal (case-insensitively) to a predicate of the
    graph matches exactly that predicate with score 1 and is not embedded; the other
    terms score each predicate by the embedding similarity of term and split predicate;
    a predicate's score is its best term's.
    """
    if relation.wildcard:
        return dict.fromkeys(predicates, 1.0)
    known = {p.casefold() for p in await graph.predicates()} | {p.casefold() for p in predicates}
    exact = {t.casefold() for t in relation.terms if t.casefold() in known}
    fuzzy = [t for t in relation.terms if t.casefold() not in known]
    scores = {p: (1.0 if p.casefold() in exact else 0.0) for p in predicates}
    if fuzzy and predicates:
        term_vectors = await graph.embed(fuzzy)
        pred_vectors = await graph.predicate_vectors(predicates)
        for predicate in predicates:
            best = max(dot(v, pred_vectors[predicate]) for v in term_vectors)
            scores[predicate] = max(scores[predicate], max(0.0, min(1.0, best)))
    return scores


# -- steps --------------------------------------------------------------------------


async def _entry(run: _Run, entry: SemanticText | ExactEntity, first: Hop | None
                 ) -> tuple[list[_Path], str | None, str | None]:
    """Entry paths, or ``([], message, hint)`` when there is no entry point. From an ``@id`` entry, the store's
    walk of the ``first`` edge is asked first, when the store would walk it: where it says its seeds, the entry
    needs no lookup of its own."""
    if isinstance(entry, ExactEntity):
        run.asked = await _walk_ahead(run, entry.id, first)
        seeds = run.asked.closure.seeds if run.asked is not None and run.asked.closure is not None else None
        found = seeds if seeds is not None else await run.graph.get_nodes([entry.id])
        run.explored += 1
        if entry.id not in found:
            return (
                [],
                f"No entity has the canonical id {entry.id!r}.",
                f'Call search_entities to find the id, or start from a name: "{entry.id}".',
            )
        run.types[entry.id] = found[entry.id].entity_type
        run.names[entry.id] = found[entry.id].name
        return [_Path((entry.id,), (), (None,), 1.0)], None, None
    return await _semantic_entry(run, entry)


async def _walk_ahead(run: _Run, entity: str, hop: Hop | None) -> Asked | None:
    """The store's closure of ``hop`` from ``entity`` alone, when ``hop`` is a variable-length edge the store
    walks: asked before the entity is looked up (its seeds may say it; an unknown id's walk is empty). None
    otherwise."""
    quantifier = hop.relation.quantifier if hop is not None else None
    if hop is None or quantifier is None or not run.graph.walks_in_store("closure"):
        return None
    in_store = await _in_store(run, hop)
    if in_store is None:
        return None
    return await ask_closure(run.graph, [entity], in_store, quantifier.most or MAX_WALK_DEPTH,
                             quantifier.most is None, run.limits.max_nodes, run.deadline)


async def _semantic_entry(run: _Run, entry: SemanticText) -> tuple[list[_Path], str | None, str | None]:
    """The best ``k`` candidates of a search for the text (only its exact matches when k is unset and it has some)."""
    hits = await search_entities(run.graph, entry.text, limit=SEARCH_LIMIT)
    run.explored += len(hits)
    for hit in hits:
        run.types.setdefault(hit.id, hit.entity_type)
    position = {h.id: i for i, h in reversed(list(enumerate(hits)))}
    scores, exact = await _similarity(run.graph, entry.text, list(position))
    ranked = sorted(scores, key=lambda i: (-scores[i], position[i], i))
    if exact and not run.k_given:  # "caffeine" names one entity: its near namesakes are other questions
        kept = [i for i in ranked if i in exact]
    else:
        kept = [i for i in ranked if scores[i] >= run.threshold][: run.k]
    if not kept:
        closest = ", ".join(f"{i} ({scores[i]:.2f})" for i in ranked[:3])
        hint = (
            f"Closest candidates: {closest}. Lower threshold (now {run.threshold:g}) or use another name, "
            "or call search_entities and start from @id."
            if closest
            else "Check the spelling, try a synonym, or call search_entities."
        )
        return [], f"Semantic search found no matching entities for {entry.text!r}.", hint
    return [_Path((i,), (), (scores[i],), scores[i]) for i in kept], None, None


def _directed(rows_of: dict[str, Neighbourhood], node: str, direction: Direction) -> list[HopEdge]:
    """The node's edges in one direction (a self-loop is both)."""
    end = 0 if direction == "outgoing" else 2
    there = rows_of.get(node)
    return [row for row in there.edges if row[end] == node] if there is not None else []


def _other_predicates(rows_of: dict[str, Neighbourhood], frontier: list[str], direction: Direction) -> set[str]:
    """The predicates of the frontier's edges in the direction opposite to ``direction``."""
    other_direction: Direction = "incoming" if direction == "outgoing" else "outgoing"
    return {row[1] for node in frontier for row in _directed(rows_of, node, other_direction)}


def _other_direction_hint(other_predicates: set[str], direction: Direction) -> str:
    other_direction: Direction = "incoming" if direction == "outgoing" else "outgoing"
    preds = sorted(other_predicates)
    if not preds:
        return ""
    arrow = "<-[…]-" if direction == "outgoing" else "-[…]->"
    return f" {other_direction.capitalize()} relations there: {', '.join(preds[:20])} (follow them with {arrow})."


async def _edge_options(
    run: _Run, rows_of: dict[str, Neighbourhood], frontier: list[str], relation: Relation, direction: Direction,
    same: dict[str, str],
) -> tuple[dict[str, list[Option]], list[str], dict[str, float]]:
    """The edges a hop follows from each frontier entity (those of its best ``k`` matching predicates; every
    edge for ``[*]``), the predicates met there, and their relation scores. Each entity reached is named by the one
    string of it in ``same`` (each row brings its own: at R-MAT 20 a hop's 500,000 options held 400,000 copies)."""
    pacer = run.pacer
    edge_lists: dict[str, list[HopEdge]] = {}
    for node in frontier:
        edge_lists[node] = capped(node, _directed(rows_of, node, direction), run.limits, run.capped)
        pacer.work += len(edge_lists[node]) + 16
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
    local = sorted({row[1] for rows in edge_lists.values() for row in rows})
    scores = await relation_scores(run.graph, relation, local)
    options_of: dict[str, list[Option]] = {}
    outgoing = direction == "outgoing"
    for node, edges in edge_lists.items():
        preds = sorted({row[1] for row in edges if scores[row[1]] >= run.threshold}, key=lambda p: (-scores[p], p))
        if not relation.wildcard:
            preds = preds[: run.k]
        if preds:
            matched = {p: scores[p] for p in preds}
            options: list[Option] = []
            for row in edges:
                if row[1] in matched:
                    other = row[2] if outgoing else row[0]
                    options.append((row[1], matched[row[1]], same.setdefault(other, other), row[3]))
            options_of[node] = options
            pacer.work += len(edges)
            if pacer.work > WORK_BETWEEN_CHECKS:
                await pacer.pause()
    return options_of, local, scores


def _no_match(run: _Run, hop: Hop, number: int, local: list[str], scores: dict[str, float],
              other_predicates: set[str]) -> _Stop:
    """The stop of a hop whose relation matches no edge of its frontier, naming the relations there."""
    word = hop.direction
    ranked = sorted(local, key=lambda p: (-scores[p], p))
    near = [f"{p} ({scores[p]:.2f})" for p in ranked[:3] if scores[p] > 0]
    hint = (
        f"No {word} relation here matches [{hop.relation.describe()}] at threshold {run.threshold:g}"
        + (f"; closest: {', '.join(near)}" if near else "")
        + (
            f". {word.capitalize()} relations here: {', '.join(ranked[:20])}."
            if ranked
            else f". There are no {word} edges here."
        )
        + _other_direction_hint(other_predicates, hop.direction)
        + " Use one of the available relations, [*], or a lower threshold."
    )
    return _Stop(number, "no_matching_relations", hint, ranked[:AVAILABLE_RELATIONS_SHOWN])


async def _filter_matches(run: _Run, hop: Hop, reached: list[str], type_name: str | None) -> dict[str, float | None]:
    """The entities reached (best first) that pass the hop's filter, with their semantic score (None: exact)."""
    flt = hop.filter
    if flt is None:
        return dict.fromkeys(reached)
    if isinstance(flt, TypeFilter):
        wanted = (type_name or flt.type_name).casefold()
        return {c: None for c in reached if run.types[c].casefold() == wanted}
    if isinstance(flt, ExactEntity):
        return {c: None for c in reached if c == flt.id}
    scored = reached[:SEMANTIC_CANDIDATES]  # the best by path score: each costs an embedding
    run.unscored += len(reached) - len(scored)
    similarity = await semantic_scores(run.graph, flt.text, scored)
    ranked = sorted(similarity, key=lambda i: (-similarity[i], i))
    kept = [i for i in ranked if similarity[i] >= run.threshold][: run.k]
    return {i: similarity[i] for i in kept}


class _Options(dict[str, list[Option]]):
    """The edges a hop follows from each frontier entity hopped (see :func:`_frontier_options`)."""

    def __init__(self) -> None:
        super().__init__()
        self.hopped: set[str] = set()
        """The frontier entities whose edges were read (those with options are keys too)."""


async def _frontier_options(run: _Run, paths: list[_Path], hop: Hop, number: int) -> _Options | _Stop:
    """The frontier's edge options, read a piece of the frontier at a time in the order of the paths (best first)
    until the paths ending there have more than :data:`MAX_EXTENSIONS` extensions: the extensions of a hop stop
    there, so the edges of the rest of the frontier would only be read to be dropped (a wildcard hop from 100,000
    paths meets millions of rows). The stop of a relation matching no edge of the whole frontier when none is
    found."""
    ending = Counter(p.nodes[-1] for p in paths)
    order = list(ending)  # by each entity's best path
    options_of, held, start, rows = _Options(), 0, 0, 0
    local: set[str] = set()
    scores: dict[str, float] = {}
    other: set[str] = set()
    same: dict[str, str] = {}
    while start < len(order):
        piece = _next_piece(start, held, rows)
        frontier = sorted(order[start : start + piece])
        start += piece
        rows_of = await run.graph.hop(frontier)
        rows += sum(len(there.edges) for there in rows_of.values())
        found, met, scored = await _edge_options(run, rows_of, frontier, hop.relation, hop.direction, same)
        options_of.update(found)
        options_of.hopped.update(frontier)
        held += sum(len(options) * ending[node] for node, options in found.items())
        if held > MAX_EXTENSIONS:
            break
        if not options_of:  # only a hop that matches nothing needs these, for its hint
            local.update(met)
            scores.update(scored)
            other |= _other_predicates(rows_of, frontier, hop.direction)
    if not options_of:
        return _no_match(run, hop, number, sorted(local), scores, other)
    return options_of


def _next_piece(read: int, held: int, rows: int = 0) -> int:
    """How many frontier entities to read next, after ``read`` of them brought ``held`` extensions and ``rows``
    rows: as many as should bring the extensions left to :data:`MAX_EXTENSIONS` and at most :data:`PIECE_ROWS`
    rows, at the rates met so far (within 1 and :data:`FRONTIER_PIECE`). Pieces of a fixed size read millions of
    rows past the bound where every entity is a hub (R-MAT 18: a wildcard path query from the biggest hub grew
    the server by 365 MB)."""
    if read == 0:
        return min(FIRST_PIECE, FRONTIER_PIECE)
    left = max(MAX_EXTENSIONS - held, 0)
    return max(1, min(FRONTIER_PIECE, left * read // max(held, 1) + 1, PIECE_ROWS * read // max(rows, 1) + 1))


@dataclass
class _Extensions:
    """What one hop found from the ends of the paths, before any is kept (:func:`_extend`).

    One column per field of an extension, in the order of the paths: a wildcard hop from a hub finds up to
    :data:`MAX_EXTENSIONS`, and a tuple each held 37 of a hop's 200 MB at R-MAT 20.
    """

    path: array[int] = field(default_factory=lambda: array("i"))
    """Each extension's path (its index in the hop's paths)."""
    predicate: list[str] = field(default_factory=list)
    score: array[float] = field(default_factory=lambda: array("d"))
    """Each extension's edge score."""
    entity: list[str] = field(default_factory=list)
    """Each extension's entity reached."""
    ends: dict[str, str | None] = field(default_factory=dict)
    """Each entity reached -> its type (None: missing from the graph)."""
    best: dict[str, float] = field(default_factory=dict)
    """Each entity reached -> the best score of a path to it."""
    cycles: int = 0
    """Edges not followed because they lead back onto their own path."""


async def _hop(run: _Run, paths: list[_Path], hop: Hop, number: int, type_name: str | None) -> list[_Path] | _Stop:
    """One fixed-length edge from the ends of ``paths``: the entities it reaches, the best ``max_nodes`` kept, then
    the hop's filter; the paths extended to them, best first."""
    options_of = await _frontier_options(run, paths, hop, number)
    if isinstance(options_of, _Stop):
        return options_of
    extensions = await _extend(run, paths, options_of)
    del options_of  # up to MAX_EXTENSIONS tuples (35 MB at R-MAT 20), not held while the paths kept are built
    reached = _candidates(run, extensions)
    if not reached:
        why = "every entity it leads to is already on the path (cycles are not followed)" if extensions.cycles else (
            "its edges lead only to entities missing from the graph"
        )
        return _Stop(number, "no_candidates", f"The matched relations were followed, but {why}.")
    match = await _filter_matches(run, hop, reached, type_name)
    if not match:
        return _Stop(number, "no_entities_match_filter", await _filter_hint(run, hop, reached, type_name))
    return await _kept_paths(run, paths, hop, extensions, match)


async def _extend(run: _Run, paths: list[_Path], options_of: _Options) -> _Extensions:
    """Every extension of ``paths`` by their ends' options. Paths come best first: they are extended in that order
    until MAX_EXTENSIONS extensions are counted, so the work of a hop is bounded before anything is built."""
    pacer = run.pacer
    extensions = _Extensions()
    ends, best = extensions.ends, extensions.best
    to_path, to_predicate = extensions.path.append, extensions.predicate.append
    to_score, to_entity = extensions.score.append, extensions.entity.append
    found = extensions.entity
    for index, path in enumerate(paths):
        options = options_of.get(path.nodes[-1])
        if not options:
            if options is None and path.nodes[-1] not in options_of.hopped:  # past the pieces hopped
                run.unextended += len(paths) - index
                break
            continue
        if found and len(found) + len(options) > MAX_EXTENSIONS:
            run.unextended += sum(1 for p in paths[index:] if p.nodes[-1] in options_of
                                  or p.nodes[-1] not in options_of.hopped)
            break
        pacer.work += len(options)
        if pacer.work > WORK_BETWEEN_CHECKS:
            await pacer.pause()
        on_path = path.nodes
        for predicate, score, other, other_type in options:
            if other in on_path:
                extensions.cycles += 1
                continue
            ends[other] = other_type
            to_path(index)
            to_predicate(predicate)
            to_score(score)
            to_entity(other)
            reach = path.score * score
            if reach > best.get(other, -1.0):
                best[other] = reach
    return extensions


def _candidates(run: _Run, extensions: _Extensions) -> list[str]:
    """The entities reached, best first, at most ``max_nodes`` of them (the rest counted as cut), without those
    missing from the graph (counted as dangling); their types noted."""
    best, ends = extensions.best, extensions.ends
    candidates = sorted(best, key=lambda i: (-best[i], i))
    if len(candidates) > run.limits.max_nodes:
        run.cut += len(candidates) - run.limits.max_nodes
        candidates = candidates[: run.limits.max_nodes]
    run.explored += len(candidates)
    reached = [c for c in candidates if ends[c] is not None]
    run.dangling += len(candidates) - len(reached)
    for node_id in reached:
        run.types[node_id] = ends[node_id]  # type: ignore[assignment]
    return reached


async def _kept_paths(run: _Run, paths: list[_Path], hop: Hop, extensions: _Extensions,
                      match: dict[str, float | None]) -> list[_Path]:
    """The paths extended to the matched entities, best first, at most ``max_nodes``. Only the paths kept are built:
    the extensions are ranked as numbers first (:func:`_best_first`)."""
    pacer = run.pacer
    kept, keys = array("i"), array("d")
    path_of, score_of, entity_of = extensions.path, extensions.score, extensions.entity
    for position, other in enumerate(entity_of):
        if other in match:
            m = match[other]
            kept.append(position)
            keys.append(-(paths[path_of[position]].score * score_of[position] * (1.0 if m is None else m)))
            pacer.work += 1
            if pacer.work > WORK_BETWEEN_CHECKS:
                await pacer.pause()
    most = run.limits.max_nodes
    if len(kept) > most:
        run.cut += len(kept) - most
    predicate_of = extensions.predicate
    return [paths[path_of[p]].extend(entity_of[p], predicate_of[p], hop.direction, score_of[p], match[entity_of[p]])
            for p in _best_first(paths, extensions, kept, keys, most)]


def _best_first(paths: list[_Path], extensions: _Extensions, kept: array[int], keys: array[float],
                most: int) -> list[int]:
    """The positions ``kept`` of the best ``most`` extensions, in the order of the paths they make
    (:meth:`_Path.order`: score, depth, nodes), then by predicate and position, so that two edges joining the same
    pair come in one order whatever order the hop gave them. ``keys``: each one's score, negated.

    Sorted as arrays on the numbers (score, depth, the rank of the path's nodes); only the extensions tied on all
    three (those of one path with equal edge scores, e.g. a wildcard's) are ordered in Python, by entity reached.
    The paths of one hop have as many nodes each, so ranking the nodes, then the entity, orders as the nodes
    extended by the entity would.
    """
    import numpy as np

    if not kept:
        return []
    positions = np.frombuffer(kept, dtype=np.int32)
    path_index = np.frombuffer(extensions.path, dtype=np.int32)[positions]
    depth = np.fromiter((path.depth for path in paths), dtype=np.int64, count=len(paths))[path_index]
    rank = _nodes_rank(paths)[path_index]
    score = np.frombuffer(keys, dtype=np.float64)
    order = np.lexsort((rank, depth, score))
    ranked = positions[order]
    score, depth, rank = score[order], depth[order], rank[order]
    tied = (score[1:] == score[:-1]) & (depth[1:] == depth[:-1]) & (rank[1:] == rank[:-1])
    starts = np.flatnonzero(np.concatenate(([True], ~tied)))
    ends = np.append(starts[1:], len(ranked))
    entity, predicate = extensions.entity, extensions.predicate
    several = (ends - starts > 1) & (starts < most)
    for start, end in zip(starts[several].tolist(), ends[several].tolist(), strict=True):
        ranked[start:end] = sorted(ranked[start:end].tolist(), key=lambda p: (entity[p], predicate[p], p))
    return ranked[:most].tolist()  # type: ignore[no-any-return]


def _nodes_rank(paths: list[_Path]) -> Any:
    """Each path's rank in the order of their nodes (equal nodes, equal rank), as an array."""
    import numpy as np

    rank = np.empty(len(paths), dtype=np.int64)
    previous: tuple[str, ...] | None = None
    number = -1
    for index in sorted(range(len(paths)), key=lambda i: paths[i].nodes):
        if paths[index].nodes != previous:
            previous, number = paths[index].nodes, number + 1
        rank[index] = number
    return rank


async def _walk_hop(
    run: _Run, paths: list[_Path], hop: Hop, number: int, type_name: str | None
) -> list[_Path] | _Stop:
    """A variable-length edge: one walk from the ends of all paths (:func:`bfsql.engine.closures.walk`), then the
    hop's filter on the entities at a depth its quantifier allows."""
    quantifier = hop.relation.quantifier
    assert quantifier is not None
    roots = sorted(paths, key=_Path.order)
    unmatched: list[_Stop] = []
    levels = 0
    asked, run.asked = run.asked, None  # the first edge's, asked from the entry (its only start)
    same: dict[str, str] = {}

    async def follow(rows_of: dict[str, Neighbourhood], frontier: list[str]) -> dict[str, list[Option]]:
        nonlocal levels
        levels += 1
        options_of, local, scores = await _edge_options(run, rows_of, frontier, hop.relation, hop.direction, same)
        if not options_of and levels == 1:
            unmatched.append(_no_match(run, hop, number, local, scores,
                                       _other_predicates(rows_of, frontier, hop.direction)))
        return options_of

    walked = await walk(
        run.graph, [Start(p.nodes[-1], p.score, p.nodes) for p in roots], follow,
        most=quantifier.most or MAX_WALK_DEPTH, open_ended=quantifier.most is None,
        max_nodes=run.limits.max_nodes, pacer=run.pacer, deadline=run.deadline,
        in_store=await _in_store(run, hop), asked=asked,
    )
    if unmatched:
        return unmatched[0]
    run.explored += len(walked.reached)
    run.dangling += len(walked.dangling)
    run.names.update(walked.names)
    if walked.stopped:
        run.walk_notes.append(_walk_note(run, hop, number, walked))
    reach = walked.reached
    reached = sorted((e for e, r in reach.items() if r.depth >= quantifier.least),
                     key=lambda e: (-reach[e].score, reach[e].depth, e))
    for entity in reached:
        run.types[entity] = reach[entity].entity_type
    if not reached:
        return _Stop(number, "no_candidates", _walk_hint(walked, quantifier))
    match = await _filter_matches(run, hop, reached, type_name)
    if not match:
        return _Stop(number, "no_entities_match_filter", await _filter_hint(run, hop, reached, type_name))
    extended = [_walked_path(roots[reach[e].start], e, reach[e], walked, hop.direction, m) for e, m in match.items()]
    return sorted(extended, key=_Path.order)


async def _in_store(run: _Run, hop: Hop) -> InStore | None:
    """The predicates a store may walk a variable-length edge along itself: those its terms name exactly (each then
    scores 1 and, being at most ``k``, is followed from every entity), or every predicate for ``[*]``; None when a
    term is matched by similarity, or the schema lists only a sample of the predicates."""
    if hop not in run.in_store:
        run.in_store[hop] = await _store_walks(run, hop)
    return run.in_store[hop]


async def _store_walks(run: _Run, hop: Hop) -> InStore | None:
    relation = hop.relation
    if not run.graph.capabilities.comprehensive_schema:
        return None
    outgoing, cap = hop.direction == "outgoing", run.limits.max_edges_per_node
    if relation.wildcard:
        return InStore(None, outgoing, cap)
    terms = {t.casefold() for t in relation.terms}
    predicates = tuple(p for p in await run.graph.predicates() if p.casefold() in terms)
    if {p.casefold() for p in predicates} != terms or len(predicates) > run.k:
        return None
    return InStore(predicates, outgoing, cap)


def _walk_hint(walked: Walk, quantifier: Quantifier) -> str:
    """Why a walk gave nothing: time ran out, every edge led back onto the path, or nothing lies deep enough."""
    if not walked.reached and walked.stopped == "time_limit":
        return "The walk ran out of time before its first level (see the time_limit note)."
    if not walked.reached:
        return ("The matched relations were followed, but every entity they lead to is already on the path "
                "or missing from the graph.")
    return (f"The walk reached {len(walked.reached)} entities, the deepest at depth {walked.depth}; none at depth "
            f"{quantifier.least} or more. Lower the quantifier's first bound.")


def _walk_note(run: _Run, hop: Hop, number: int, walked: Walk) -> Truncation:
    """The note of a walk cut short, with the number of entities it reached: a lower bound of what is reachable."""
    edge = f"The walk of edge {number} ({hop.edge()})"
    found = len(walked.reached)
    if walked.stopped == "max_depth":
        detail = (f"{edge} stopped at depth {MAX_WALK_DEPTH}, the deepest a walk goes; {walked.left_out} more "
                  "entities lie one level deeper.")
        hint = "Start another query from an entity found at that depth to go on."
    elif walked.stopped == "max_nodes":
        found += walked.left_out
        detail = (f"{edge} reached the limit of {run.limits.max_nodes} entities at depth {walked.depth}: "
                  f"{walked.left_out} more found there were left out, and it went no deeper.")
        hint = "Bound the walk (*..3), name fewer relations, or start from a more specific entity."
    else:
        detail = f"{edge} stopped after {run.time_limit:g}s, the time walks may take, at depth {walked.depth}."
        hint = "Bound the walk (*..3), or start from a more specific entity."
    return Truncation(reason=str(walked.stopped), count=found, hint=hint,
                      detail=f"{detail} At least {found} entities are reachable: the results are a lower bound.")


async def _filter_hint(run: _Run, hop: Hop, reached: list[str], type_name: str | None) -> str:
    flt = hop.filter
    counts = Counter(run.types[c] for c in reached)
    found = ", ".join(f"{t} ({n})" for t, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    if isinstance(flt, TypeFilter):
        return (
            f"The hop reached {len(reached)} entities of type {found}; none is of type {type_name or flt.type_name}. "
            "Use one of those types, or drop the filter."
        )
    if isinstance(flt, ExactEntity):
        shown = ", ".join(reached[:10])
        return f"@{flt.id} is not reached by this hop; it reached {len(reached)} entities: {shown}" + (
            " …" if len(reached) > 10 else "") + "."
    assert isinstance(flt, SemanticText)
    similarity = await semantic_scores(run.graph, flt.text, reached)
    closest = sorted(similarity, key=lambda i: (-similarity[i], i))[:3]
    return (
        f"None of the {len(reached)} entities reached (types: {found}) is similar enough to {flt.text!r}"
        + (f"; closest: {', '.join(f'{i} ({similarity[i]:.2f})' for i in closest)}" if closest else "")
        + f". Lower threshold (now {run.threshold:g}), or use type: or no filter."
    )


# -- output -------------------------------------------------------------------------


class _Shown:
    """The paths of an answer as their nodes and steps, each made once.

    The results of a walk share their beginnings (each is its start's path, then the walk's chain to its end), so
    a walked path is made from its parent's, kept per walk and entity: an answer costs a list copy per result, not
    Python work per step. An edge step says its score only when its relation matched fuzzily (below 1).
    """

    def __init__(self) -> None:
        self.names: dict[str, str | None] = {}
        """The entities' names (set before :meth:`steps` is asked)."""
        self._made: dict[tuple[Any, ...], PathStep] = {}
        self._nodes: dict[tuple[int, int, str], tuple[str, ...]] = {}
        self._middles: dict[tuple[int, int, str], list[PathStep]] = {}
        self._plains: dict[int, list[PathStep]] = {}

    def nodes(self, path: _Path) -> tuple[str, ...]:
        """Every entity on the path, in order (what :meth:`_Path.expanded` would hold)."""
        walked = path.walked
        return path.nodes if walked is None else self._walked_nodes(walked, path.nodes[-1])

    def _walked_nodes(self, walked: _Walked, entity: str) -> tuple[str, ...]:
        key = (id(walked.walk), id(walked.prefix), entity)
        known = self._nodes.get(key)
        if known is None:
            reach = walked.walk.reached[entity]
            before = walked.prefix.nodes if reach.depth == 1 else self._walked_nodes(walked, reach.parent)
            known = self._nodes[key] = (*before, entity)
        return known

    def steps(self, path: _Path) -> list[PathStep]:
        """The path's steps: an entity step per node, an edge step between two."""
        walked = path.walked
        if walked is None:
            return list(self._plain(path))
        end = path.nodes[-1]
        reach = walked.walk.reached[end]
        return [*self._before(walked, reach), self._edge(reach.predicate, walked.direction, reach.relation_score),
                self._entity(end, walked.match)]

    def _plain(self, path: _Path) -> list[PathStep]:
        known = self._plains.get(id(path))
        if known is None:
            nodes, scores = path.nodes, path.node_scores
            known = [self._entity(nodes[0], scores[0])]
            for i, (predicate, direction, score) in enumerate(path.edges, start=1):
                known += (self._edge(predicate, direction, score), self._entity(nodes[i], scores[i]))
            self._plains[id(path)] = known
        return known

    def _before(self, walked: _Walked, reach: Reach) -> list[PathStep]:
        """The steps of a walk's path up to the entity the edge that reached an entity comes from."""
        return self._plain(walked.prefix) if reach.depth == 1 else self._middle(walked, reach.parent)

    def _middle(self, walked: _Walked, entity: str) -> list[PathStep]:
        """The steps of a walk's path through ``entity`` (not the path's end: it has no score of its own)."""
        key = (id(walked.walk), id(walked.prefix), entity)
        known = self._middles.get(key)
        if known is None:
            reach = walked.walk.reached[entity]
            known = self._middles[key] = [*self._before(walked, reach), self._edge(reach.predicate, walked.direction,
                                                                                   reach.relation_score),
                                          self._entity(entity, None)]
        return known

    def _edge(self, predicate: str, direction: Direction, score: float) -> PathStep:
        key = (predicate, direction, score)
        step = self._made.get(key)
        if step is None:
            step = self._made[key] = PathStep(edge=predicate, direction=direction,
                                              score=None if score == 1.0 else _round(score))
        return step

    def _entity(self, entity: str, score: float | None) -> PathStep:
        key = (entity, score)
        step = self._made.get(key)
        if step is None:
            step = self._made[key] = PathStep(entity=entity, label=self.names.get(entity), score=_round(score))
        return step


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


async def _names(run: _Run, ids: list[str], with_metadata: bool = False
                 ) -> tuple[dict[str, str | None], dict[str, dict[str, object]]]:
    """Each id's name and, ``with_metadata``, its metadata: one ``metadata_for_nodes`` call, unless the query's
    reads named every id already (:attr:`_Run.names`) and no metadata is wanted."""
    wanted = list(dict.fromkeys(ids))
    known = run.names
    if not with_metadata and all(entity_id in known for entity_id in wanted):
        return {entity_id: known[entity_id] for entity_id in wanted}, {}
    metadata = await run.graph.metadata_for_nodes(wanted)
    names = {}
    for entity_id in wanted:
        name = metadata.get(entity_id, {}).get("name")
        names[entity_id] = name if isinstance(name, str) else None
    return names, metadata


async def _resolve_types(graph: Graph, query: PathQuery, warnings: list[str]) -> dict[int, str]:
    filters = [h.filter for h in query.hops if isinstance(h.filter, TypeFilter)]
    if not filters:
        return {}
    types = await graph.entity_types()
    by_fold = {t.casefold(): t for t in types}
    resolved: dict[int, str] = {}
    for flt in filters:
        canonical = by_fold.get(flt.type_name.casefold())
        if canonical is not None:
            resolved[flt.position] = canonical
        elif graph.capabilities.comprehensive_schema:
            raise InvalidArgument(
                f"Unknown entity type {flt.type_name!r} in type:{flt.type_name} (position {flt.position}).",
                f"Valid types of this graph: {', '.join(types) or '(none)'}. Types match case-insensitively.",
            )
        else:
            warnings.append(
                f"type:{flt.type_name} is not among the sampled entity types ({', '.join(types[:20])}); "
                "it is matched case-insensitively against the types met."
            )
    return resolved


async def _check_filter_ids(graph: Graph, query: PathQuery) -> None:
    ids = [h.filter.id for h in query.hops if isinstance(h.filter, ExactEntity)]
    if ids:
        found = await graph.get_nodes(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownEntity(missing, f"Unknown entity id(s) in an @id filter: {', '.join(missing)}.")


def _run_notes(run: _Run) -> list[Truncation]:
    """The notes of every bound that cut the query's work (beside the max_results cut)."""
    limits = run.limits
    notes = list(run.walk_notes)
    if run.capped:
        skipped = sum(n - limits.max_edges_per_node for n in run.capped.values())
        notes.append(Truncation(
            reason="max_edges_per_node",
            detail=f"{len(run.capped)} hub(s) have more than {limits.max_edges_per_node} edges; "
            f"{skipped} of their edges were not followed.",
            hint="Name the relation instead of [*], or start from a more specific entity.",
            capped_nodes=sorted(run.capped)[:20],
        ))
    if run.cut:
        notes.append(Truncation(
            reason="max_nodes",
            detail=f"{run.cut} lower-scoring candidates or paths were pruned to stay within "
            f"{limits.max_nodes} per hop.",
            hint="Add type: filters or name relations instead of [*].",
        ))
    if run.unextended:
        notes.append(Truncation(
            reason="max_extensions",
            detail=f"{run.unextended} lower-scoring paths were not extended: a hop considers at most "
            f"{MAX_EXTENSIONS} extensions.",
            hint="Name the relations instead of [*], add type: filters, or start from a more specific entity.",
        ))
    if run.unscored:
        notes.append(Truncation(
            reason="semantic_candidates",
            detail=f"A semantic filter scored the {SEMANTIC_CANDIDATES} best-reached entities; "
            f"{run.unscored} more were not scored.",
            hint="Narrow the hop with a named relation or a type: filter before the semantic filter.",
        ))
    return notes


def _entry_points(entries: list[_Path], names: dict[str, str | None]) -> list[PathStep]:
    return [PathStep(entity=p.nodes[0], label=names[p.nodes[0]], score=_round(p.score)) for p in entries]


async def _results(run: _Run, paths: list[_Path], meta: PathMetadata, with_depth: bool,
                   with_metadata: bool, entries: list[_Path]) -> list[PathResult]:
    """One result per entity reached, with its best path, best first; cut at ``max_results`` (with a note). The
    entity is its id, type and name, and its metadata only ``with_metadata``. The ``entries`` become the
    metadata's entry points (their names read in the same call)."""
    best_by_end: dict[str, _Path] = {}
    for path in sorted(paths, key=_Path.order):
        best_by_end.setdefault(path.nodes[-1], path)
    ordered = sorted(best_by_end.values(), key=_Path.rank)
    meta.total_results = len(ordered)
    if len(ordered) > meta.max_results:
        meta.truncated = [Truncation(
            reason="max_results",
            detail=f"Returned the best {meta.max_results} of {len(ordered)} results.",
            hint=f"Raise max_results (at most {MAX_RESULTS}) or narrow the query with type: or \"text\" filters.",
        )]
        ordered = ordered[: meta.max_results]
    shown = _Shown()
    ids = [p.nodes[0] for p in entries]
    for path in ordered:
        ids += shown.nodes(path)
    names, metadata = await _names(run, ids, with_metadata)
    meta.entry_points = _entry_points(entries, names)
    shown.names = names
    results = []
    for path in ordered:
        end = path.nodes[-1]
        entity = {"id": end, "entity_type": run.types.get(end, ""), "name": names.get(end),
                  "metadata": dict(metadata.get(end, {})) if with_metadata else None}
        results.append({"entity": entity, "path": shown.steps(path), "score": round(path.score, 4),
                        "depth": path.depth if with_depth else None})
    return _results_adapter().validate_python(results)


@remembers_reads
async def path_query(
    graph: Graph,
    query: str,
    *,
    k: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_results: int = DEFAULT_MAX_RESULTS,
    limits: TraversalLimits = DEFAULT_LIMITS,
    time_limit: float | None = None,
    with_metadata: bool = False,
) -> PathQueryResult:
    """Run a path query; syntax and argument errors raise, empty outcomes are explained in ``metadata``.

    ``k`` None (unset) is :data:`DEFAULT_K`, except that a semantic entry whose text is the id, name or a synonym
    of some candidates keeps only those. Variable-length edges stop walking ``time_limit`` seconds after the query
    began (None: no limit), and say so. Each result's entity is its id, type and name; ``with_metadata`` adds its
    metadata (describe_entities gives it for chosen results).
    """
    started = time.perf_counter()
    _check_parameters(k, threshold, max_results)
    parsed = parse_path_query(query)
    memo = call_memo()
    if memo is not None:  # what the store reads for the query need bring no metadata that it never shows or scores
        memo.metadata = with_metadata or any(isinstance(h.filter, SemanticText) for h in parsed.hops)
    threshold = float(threshold)
    run = _Run(graph, k or DEFAULT_K, threshold, limits, k_given=k is not None, time_limit=time_limit,
               deadline=None if time_limit is None else started + time_limit)
    type_names: dict[int, str] = {}
    if any(isinstance(h.filter, TypeFilter | ExactEntity) for h in parsed.hops):  # else no call: no tasks to start
        type_names, _ = await gather_or_cancel(
            _resolve_types(graph, parsed, run.warnings), _check_filter_ids(graph, parsed)
        )
    meta = PathMetadata(query=query.strip(), hops=len(parsed.hops), k=run.k, threshold=threshold,
                        max_results=max_results)

    def finish(results: list[PathResult]) -> PathQueryResult:
        meta.total_candidates_explored = run.explored
        meta.execution_time_ms = round((time.perf_counter() - started) * 1000, 1)
        meta.truncated = [*(meta.truncated or []), *_run_notes(run)] or None
        if run.dangling:
            run.warnings.append(f"{run.dangling} edge end(s) point to entities missing from the graph; left out.")
        meta.warnings = run.warnings or None
        return PathQueryResult(results=results, metadata=meta)

    paths, message, hint = await _entry(run, parsed.entry, parsed.hops[0] if parsed.hops else None)
    if not paths:
        meta.error, meta.message, meta.hint = "no_entry_point", message, hint
        return finish([])
    entries = paths  # their names are read with the last names the query reads (one metadata call fewer)

    for number, hop in enumerate(parsed.hops, start=1):
        type_name = type_names.get(hop.filter.position) if isinstance(hop.filter, TypeFilter) else None
        paths = [p.expanded() for p in paths]
        step = _walk_hop if hop.relation.quantifier else _hop
        outcome = await step(run, paths, hop, number, type_name)
        if isinstance(outcome, _Stop):
            best = min(paths, key=_Path.order)
            names, _ = await _names(run, [*best.nodes, *(p.nodes[0] for p in entries)])
            meta.entry_points = _entry_points(entries, names)
            shown = _Shown()
            shown.names = names
            meta.partial_path = shown.steps(best)
            meta.stopped_at_hop, meta.reason, meta.hint = outcome.hop, outcome.reason, outcome.hint
            meta.available_relations = outcome.available
            return finish([])
        paths = outcome

    with_depth = any(hop.relation.quantifier for hop in parsed.hops)
    return finish(await _results(run, paths, meta, with_depth, with_metadata, entries))
