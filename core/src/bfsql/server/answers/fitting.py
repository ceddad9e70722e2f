"""Fitting every tool answer to its budget: the one home of answer sizes.

A budget is a number of tokens, estimated from the answer's compact JSON (3 characters a
token: JSON full of ids tokenises worse than prose). When an answer is too big, detail is
given up a little at a time, and nearest first is kept longest:

1. long metadata values are **clipped** (strings shortened, lists cut, each clipped field
   named in the node's ``_clipped`` with its full length), from the farthest node back;
2. nodes become **named stubs** (``id``, ``entity_type``, ``name``), from the farthest back;
3. named stubs become **bare stubs** (``id``, ``entity_type``), the farthest tenth of the
   nodes shown at most, so that nine in ten keep their names;
4. then nodes are **cut** from the end of the page (with the offset to continue from).

Then the room left is filled again, nearest first. Every degradation is named in
``truncated`` with how many items it touched and how to get the rest. Sizes are computed
per item, from the typed answer, and the answer is serialised once.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bfsql.budgets import CHARS_PER_TOKEN, MIN_MAX_TOKENS
from bfsql.engine.answer import Traversal, Triple
from bfsql.models import Page, Truncation

__all__ = [
    "AnswerBudget",
    "answer_limit",
    "clip_metadata",
    "compact_json",
    "fit_list",
    "fit_paths",
    "fit_record",
    "fit_schema",
    "fit_traversal",
    "hold_texts",
]

NOTES_RESERVE = 700
"""Characters kept for the ``truncated`` notes that fitting adds (more are cut for, if needed)."""

CLIP_CHARS = 300
"""A clipped string keeps this many characters (more when the budget has room)."""

CLIP_ITEMS = 10
"""A clipped list keeps this many items."""

FULL, CLIPPED, NAMED, BARE, CUT = 4, 3, 2, 1, 0
"""Detail levels of a node in a fitted answer, most first."""


def compact_json(obj: Any) -> str:
    """The answer's wire text: compact JSON, unicode kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def answer_limit(max_tokens: int) -> int:
    """The characters of compact JSON an answer of ``max_tokens`` may use."""
    return max(max_tokens, MIN_MAX_TOKENS) * CHARS_PER_TOKEN


def _jlen(text: str) -> int:
    """Length of ``text`` as a JSON string literal."""
    if '"' not in text and "\\" not in text and text.isprintable():
        return len(text) + 2
    return len(json.dumps(text, ensure_ascii=False))


_BARE_NODE = len(compact_json({"id": "", "entity_type": ""})) - 4
_NAME = len(compact_json({"name": ""})) - 4  # ,"name":
_METADATA = len(',"metadata":')
_BARE_EDGE = len(compact_json({"subject": "", "predicate": "", "object": ""})) - 6
_NOTES_KEY = len(',"truncated":[]')


@dataclass(frozen=True)
class AnswerBudget:
    """One answer's budget (``max_tokens``), and the :class:`~bfsql.engine.answer.AnswerRoom` the engine asks."""

    max_tokens: int
    named_stubs: bool = True
    """Stubs carry the entity's name (a superset of Appendix A's stub); False: bare stubs only."""
    asked: int | None = None
    """The budget asked (the call's max_tokens, else the server's), when ``max_tokens`` is more: below
    :data:`~bfsql.budgets.MIN_MAX_TOKENS`, or less than the smallest answer of the call. The answer says so."""
    reserved: int = 0
    """Characters kept for what the document says of the call besides the answer (which graph answered)."""

    @property
    def chars(self) -> int:
        """Characters of compact JSON the answer may use (less the floor note's, when there is one, and the
        reserved ones)."""
        note = self.floor_note()
        return answer_limit(self.max_tokens) - self.reserved - (len(compact_json(note)) + _NOTES_KEY if note else 0)

    def floor_note(self) -> dict[str, Any] | None:
        """What the answer says when it was given more than the budget asked, else None."""
        if self.asked is None:
            return None
        return Truncation(
            reason="max_tokens_floor",
            detail=f"max_tokens={self.asked} is less than this answer needs at the least; answered within "
            f"{self.max_tokens} tokens.",
            hint=f"Ask for max_tokens={max(self.max_tokens, MIN_MAX_TOKENS)} or more; for a smaller answer use "
            "limit, node_types or topology_only.",
        ).model_dump(exclude_none=True)

    def most_nodes(self) -> int:
        """More nodes than an answer can show: every node takes at least a bare stub's characters."""
        return self.chars // _BARE_NODE + 1

    def nodes_with_room(self, node_ids: list[str], types: dict[str, str], names: dict[str, str | None]) -> int:
        """How many nodes, from the first, fit as named stubs: none after them can carry detail."""
        room, used = self.chars, 0
        for count, node_id in enumerate(node_ids):
            used += _BARE_NODE + _jlen(node_id) + _jlen(types[node_id]) + 1
            name = names.get(node_id) if self.named_stubs else None
            if name is not None:
                used += _NAME + _jlen(name)
            if used > room:
                return count
        return len(node_ids)


def _clip_value(value: Any, max_chars: int, max_items: int) -> tuple[Any, int | None]:
    """The value clipped, and its full length (characters or items) when it was clipped."""
    if isinstance(value, str) and len(value) > max_chars:
        return value[:max_chars] + "…", len(value)
    if isinstance(value, list):
        items = [_clip_value(v, max_chars, max_items)[0] for v in value[:max_items]]
        return items, (len(value) if len(value) > max_items or items != value[:max_items] else None)
    if isinstance(value, dict):
        inner = {k: _clip_value(v, max_chars, max_items)[0] for k, v in value.items()}
        return inner, (len(compact_json(value)) if inner != value else None)
    return value, None


def clip_metadata(metadata: dict[str, Any], max_chars: int = CLIP_CHARS, max_items: int = CLIP_ITEMS) -> dict[str, Any]:
    """``metadata`` with long strings and lists shortened; ``_clipped`` names each clipped field's full length."""
    clipped: dict[str, Any] = {}
    lengths: dict[str, int] = {}
    for key, value in metadata.items():
        clipped[key], length = _clip_value(value, max_chars, max_items)
        if length is not None:
            lengths[key] = length
    if lengths:
        clipped["_clipped"] = lengths
    return clipped


class _Sizes:
    """Per-item sizes of a traversal answer at each detail level, computed once each, when first needed."""

    def __init__(self, answer: Traversal, budget: AnswerBudget) -> None:
        self.answer = answer
        self.names = answer.names if budget.named_stubs else {}
        self.clip_chars = CLIP_CHARS
        self._clipped: dict[str, dict[str, Any]] = {}
        self._node: dict[tuple[str, int], int] = {}
        self._edge_bare: dict[int, int] = {}
        self._edge_meta: dict[tuple[int, int], int] = {}

    def cap(self, node_id: str) -> int:
        """The most detail this node can have."""
        if node_id in self.answer.node_metadata:
            return FULL
        return NAMED if self.names.get(node_id) is not None else BARE

    def asked(self, node_id: str) -> int:
        """The detail the call asked for this node (its metadata may not have been fetched, for want of room)."""
        if self.answer.detail.full_node(self.answer.types[node_id]):
            return FULL
        return NAMED if self.names.get(node_id) is not None else BARE

    def clipped(self, node_id: str) -> dict[str, Any]:
        """The node's metadata, clipped."""
        found = self._clipped.get(node_id)
        if found is None:
            found = self._clipped[node_id] = clip_metadata(self.answer.node_metadata[node_id], self.clip_chars)
        return found

    def unclip(self) -> None:
        """Back to the default clip length for every node."""
        self._clipped.clear()
        self._node = {key: size for key, size in self._node.items() if key[1] != CLIPPED}

    def reclip(self, node_id: str, max_chars: int) -> None:
        """Clip this node's values to ``max_chars`` from now on (its clipped size changes)."""
        self._clipped[node_id] = clip_metadata(
            self.answer.node_metadata[node_id], max_chars, max(CLIP_ITEMS, max_chars // 30)
        )
        self._node.pop((node_id, CLIPPED), None)

    def node(self, node_id: str, level: int) -> int:
        """Size of the node at ``level`` (its edges not included), with its separator."""
        key = (node_id, level)
        size = self._node.get(key)
        if size is None:
            size = _BARE_NODE + _jlen(node_id) + _jlen(self.answer.types[node_id]) + 1
            if level == FULL:
                size += _METADATA + len(compact_json(self.answer.node_metadata[node_id]))
            elif level == CLIPPED:
                size += _METADATA + len(compact_json(self.clipped(node_id)))
            elif level == NAMED and self.names.get(node_id) is not None:
                size += _NAME + _jlen(self.names[node_id] or "")
            self._node[key] = size
        return size

    def edge(self, index: int, level: int) -> int:
        """Size of edge ``index`` at ``level`` (see :func:`_edge_level`), with its separator."""
        bare = self._edge_bare.get(index)
        if bare is None:
            s, p, o = self.answer.triples[index]
            bare = self._edge_bare[index] = _BARE_EDGE + _jlen(s) + _jlen(p) + _jlen(o) + 1
        if level < CLIPPED or self.answer.triples[index] not in self.answer.edge_metadata:
            return bare
        key = (index, level)
        size = self._edge_meta.get(key)
        if size is None:
            metadata = self.answer.edge_metadata[self.answer.triples[index]]
            shown = metadata if level == FULL else clip_metadata(metadata, self.clip_chars)
            size = self._edge_meta[key] = bare + _METADATA + len(compact_json(shown))
        return size


def _edge_level(owner_level: int, owner_cap: int) -> int:
    """An edge keeps its detail while its owner node keeps all of its own; it is clipped or bare with it."""
    if owner_level == owner_cap or owner_level == CLIPPED:
        return FULL if owner_level == owner_cap else CLIPPED
    return BARE


_SUBJECT, _OBJECT = operator.itemgetter(0), operator.itemgetter(2)


def _holdable(answer: Traversal, room: int) -> int:
    """How many nodes, from the first, an answer of ``room`` characters could hold: those before the one whose
    bare stub (with all the bare stubs before it) no longer fits, and that one."""
    ids, types = answer.node_ids, answer.types
    used = 0
    for i, node_id in enumerate(ids):
        used += _BARE_NODE + _jlen(node_id) + _jlen(types[node_id]) + 1
        if used > room:
            return i + 1
    return len(ids)


def _edges_to_scan(answer: Traversal, limit: int, position: dict[str, int]) -> tuple[Sequence[Triple], Sequence[int]]:
    """The edges that can join the first ``limit`` nodes: a prefix of the answer's, and more by index.

    When the answer knows which hop found its edges, those among these nodes were all found by the
    hops up to the farthest of them. When it also knows each hop's edges between nodes of that hop
    (cross edges), they are the edges found before the farthest hop and that hop's cross edges.
    """
    triples, found_by, cross_by = answer.triples, answer.found_by, answer.cross_by
    if found_by is None or not limit:
        return triples, ()
    farthest = max(answer.distance[node_id] for node_id in answer.node_ids[:limit])
    if cross_by is not None and farthest < len(cross_by):
        scan = triples[: found_by[farthest - 1]] if farthest else []
        return scan, [i for i in cross_by[farthest] if triples[i][0] in position and triples[i][2] in position]
    if farthest < len(found_by):
        return triples[: found_by[farthest]], ()
    return triples, ()


def _candidate_edges(
    answer: Traversal, scan: Sequence[Triple], cross: Sequence[int], position: dict[str, int]
) -> Iterable[int]:
    """The indexes of the scanned edges (and the ``cross`` ones) that the nodes at ``position`` may own."""
    if answer.offset:  # on a later page, an edge may lead to a node of an earlier page
        page = set(answer.node_ids)
        return itertools.chain((
            i for i, (s, _, o) in enumerate(scan)
            if (s in position or s not in page) and (o in position or o not in page)
        ), cross)
    # An edge is shown only if both its ends are among the first ``limit`` nodes: test that in C.
    known = position.__contains__
    both = map(operator.and_, map(known, map(_SUBJECT, scan)), map(known, map(_OBJECT, scan)))
    return itertools.chain(itertools.compress(itertools.count(), both), cross)


def _owners(answer: Traversal, room: int) -> list[Sequence[int]]:
    """For each node an answer of ``room`` characters could hold, the indexes of the edges it owns.

    An edge belongs to its later endpoint. Nodes past the point where their bare stubs alone
    exceed the room can own nothing shown, so only the edges among the nodes before it are
    looked at closely.
    """
    ids, triples = answer.node_ids, answer.triples
    limit = _holdable(answer, room)
    position = {node_id: i for i, node_id in enumerate(ids[:limit])}
    owned: list[list[int]] = [[] for _ in range(limit)]
    scan, cross = _edges_to_scan(answer, limit, position)
    for index in _candidate_edges(answer, scan, cross, position):
        subject, _, obj = triples[index]
        owner = max(position.get(subject, -1), position.get(obj, -1))
        if owner >= 0:
            owned[owner].append(index)
    # One shared empty tuple for the rest: tens of thousands of new lists would wake the
    # garbage collector over the whole answer.
    return [*owned, *itertools.repeat((), len(ids) - limit)]


def _paths_size(answer: Traversal, budget: AnswerBudget) -> dict[str, int]:
    """For each shared node, the size of its paths and of the context stubs of the nodes on them (an upper bound:
    a node on several paths is counted on each)."""
    sizes: dict[str, int] = {}
    seeds = set(answer.seeds)
    for paths in answer.node_paths():
        inner = {end for s, _, o in paths["edges"] for end in (s, o)} - seeds - {paths["node"]}
        stubs = sum(len(compact_json(_context_stub(answer, budget, i))) + 1 for i in inner)
        sizes[paths["node"]] = len(compact_json(paths)) + 1 + stubs
    return sizes


def _context_stub(answer: Traversal, budget: AnswerBudget, node_id: str) -> dict[str, Any]:
    """A context node of intersect_subgraphs (a seed, a node on a path) as its stub."""
    stub: dict[str, Any] = {"id": node_id, "entity_type": answer.types.get(node_id, "")}
    name = answer.names.get(node_id) if budget.named_stubs else None
    if name is not None:
        stub["name"] = name
    return stub


def _context(answer: Traversal, budget: AnswerBudget, kept: set[str], paths: list[dict[str, Any]]) -> list[Any]:
    """The context stubs an answer shows: the seeds and the nodes on its paths that it does not show as nodes."""
    ends = (end for path in paths for s, _, o in path["edges"] for end in (s, o))
    wanted = set(answer.seeds) | set(ends)
    return [_context_stub(answer, budget, i) for i in answer.context if i in wanted and i not in kept]


_Cost = Callable[[int, int], int]
"""The size of node ``i`` at a detail level, with the edges it owns and (for a shared node) its paths."""


def _cost_of(ids: Sequence[str], sizes: _Sizes, paths: dict[str, int], owned: list[Sequence[int]]) -> _Cost:
    """The answer's :data:`_Cost`, remembering each node's edges at each level (their size never changes)."""
    edge_sums: dict[tuple[int, int], int] = {}

    def cost(i: int, level: int) -> int:
        if level == CUT:
            return 0
        node_id = ids[i]
        extra = paths.get(node_id, 0) if level >= NAMED else 0
        edge_level = _edge_level(level, sizes.cap(node_id))
        edges = edge_sums.get((i, edge_level))
        if edges is None:
            edges = edge_sums[(i, edge_level)] = sum(sizes.edge(e, edge_level) for e in owned[i])
        return sizes.node(node_id, level) + extra + edges

    return cost


def _first_levels(ids: Sequence[str], sizes: _Sizes, cost: _Cost, room: int) -> tuple[list[int], int]:
    """Every node at its most detail, for those shown, and how many are shown (the others are cut).

    The nodes shown are those that fit as named stubs, then at most a ninth more as bare stubs
    (so that nine in ten keep their names: an id alone costs the model a describe call); the
    nodes after them are cut, whatever else happens.
    """
    levels: list[int] = []
    used = 0
    for i in range(len(ids)):
        named = cost(i, min(NAMED, sizes.cap(ids[i])))
        if used + named > room:
            break
        used += named
        levels.append(sizes.cap(ids[i]))
    for i in range(len(levels), min(len(ids), len(levels) + len(levels) // 9)):
        used += cost(i, BARE)
        if used > room:
            break
        levels.append(sizes.cap(ids[i]))
    shown = len(levels)
    return levels + [CUT] * (len(ids) - shown), shown


def _lower(ids: Sequence[str], sizes: _Sizes, cost: _Cost, levels: list[int], shown: int, room: int) -> int:
    """Lower the shown nodes one step at a time, farthest first, until their total fits ``room``; that total."""
    total = sum(cost(i, levels[i]) for i in range(shown))
    for lower_from, lower_to in ((FULL, CLIPPED), (CLIPPED, NAMED), (NAMED, BARE), (BARE, CUT)):
        for i in reversed(range(shown)):
            if total <= room:
                break
            if levels[i] == lower_from or (lower_from == CLIPPED and levels[i] == FULL):
                target = lower_to if not (lower_to == NAMED and sizes.cap(ids[i]) == BARE) else BARE
                total += cost(i, target) - cost(i, levels[i])
                levels[i] = target
        if total <= room:
            break
    return total


def _fill(ids: Sequence[str], sizes: _Sizes, cost: _Cost, levels: list[int], shown: int, total: int, room: int) -> int:
    """Fill the room left, nearest first: a step up for every node that still fits; a node whose clipped values
    do not fit gets them clipped shorter. The new total."""
    cut_from = next((i for i in range(shown) if levels[i] == CUT), shown)
    for i in range(min(shown + 1, len(ids))):
        if levels[i] == CUT and i != cut_from:
            break
        for target in range(sizes.cap(ids[i]), levels[i], -1):
            grown = total + cost(i, target) - cost(i, levels[i])
            if grown > room and target == CLIPPED and _clip_to_fit(ids[i], sizes, cost, i, levels[i], room - total):
                grown = total + cost(i, target) - cost(i, levels[i])
            if grown <= room:
                total, levels[i] = grown, target
                cut_from += levels[i] != CUT and i == cut_from
                break
    return total


def _decide(ids: Sequence[str], sizes: _Sizes, cost: _Cost, room: int) -> list[int]:
    """The level of every node in ``room`` characters (the notes not counted): lowered until it fits, then
    filled again; what is still spare goes to the nearest clipped node."""
    sizes.unclip()
    levels, shown = _first_levels(ids, sizes, cost, room)  # the nodes after ``shown`` stay cut
    total = _lower(ids, sizes, cost, levels, shown, room)
    total = _fill(ids, sizes, cost, levels, shown, total, room)
    nearest = next((i for i in range(min(shown + 1, len(ids))) if levels[i] == CLIPPED), None)
    if nearest is not None:
        spare = room - total + cost(nearest, CLIPPED) - cost(nearest, NAMED)
        _clip_to_fit(ids[nearest], sizes, cost, nearest, NAMED, spare, grow=True)
    return levels


def _shrink_to_budget(
    answer: Traversal, budget: AnswerBudget, sizes: _Sizes, owned: list[Sequence[int]], cost: _Cost, levels: list[int]
) -> dict[str, Any]:
    """The answer built at ``levels``; while it is still too big (notes longer than was kept for them), the
    farthest nodes go, as many as the excess needs, but never the first, so that paging moves on; the first
    alone too big gives up detail."""
    ids = answer.node_ids
    if ids and levels[0] == CUT:
        levels[0] = BARE
    fitted = _build(answer, budget, sizes, owned, levels)
    over = len(compact_json(fitted)) - budget.chars
    while over > 0 and (sum(level != CUT for level in levels) > 1 or (ids and levels[0] > BARE)):
        saved = 0
        while saved < over and sum(level != CUT for level in levels) > 1:
            last = max(i for i, level in enumerate(levels) if level != CUT)
            saved += cost(last, levels[last])
            levels[last] = CUT
        if saved < over and levels[0] > BARE:  # the first node alone is too big: it gives up detail
            smaller = cost(0, levels[0]) - (over - saved) - cost(0, NAMED)
            if not (levels[0] >= CLIPPED and _clip_to_fit(ids[0], sizes, cost, 0, NAMED, smaller)):
                levels[0] = NAMED if levels[0] > NAMED and sizes.names.get(ids[0]) is not None else BARE
            else:
                levels[0] = CLIPPED
        fitted = _build(answer, budget, sizes, owned, levels)
        over = len(compact_json(fitted)) - budget.chars
    return fitted


def fit_traversal(answer: Traversal, budget: AnswerBudget) -> dict[str, Any]:
    """The answer of bfs_query or intersect_subgraphs within ``budget``, graded as the module says."""
    ids = answer.node_ids
    sizes = _Sizes(answer, budget)
    reserve = min(NOTES_RESERVE, budget.chars // 3)
    room = budget.chars - reserve - len(compact_json(_envelope(
        answer, [], [], answer.truncated, None, _context(answer, budget, set(), [])
    )))
    owned = _owners(answer, room)
    cost = _cost_of(ids, sizes, _paths_size(answer, budget), owned)

    def decide(room: int) -> list[int]:
        return _decide(ids, sizes, cost, room)

    # The notes are written once the levels are known; the seeds keep their detail longest.
    levels = _keep_seed_detail(
        answer, sizes, cost, decide, decide(room), room,
        lambda tried: len(compact_json(_build(answer, budget, sizes, owned, tried))) <= budget.chars,
    )
    return _shrink_to_budget(answer, budget, sizes, owned, cost, levels)


SEED_SHARE = 2
"""The seeds keep their (clipped) detail with at most a 1/SEED_SHARE of an answer's room."""


def _keep_seed_detail(
    answer: Traversal,
    sizes: _Sizes,
    cost: Callable[[int, int], int],
    decide: Callable[[int], list[int]],
    levels: list[int],
    room: int,
    fits: Callable[[list[int]], bool],
) -> list[int]:
    """``levels`` where the seeds on the page keep at least clipped detail: when ``decide`` lowered a seed to a
    stub, decide again in the room less what the seeds' detail costs (at most half of it), and give it to them.
    Seeds lose detail last: other nodes are stubs or cut first, and no node keeps detail a seed lost (when the
    seeds' detail does not fit, with the notes it brings, the others are stubs too)."""
    ids, seeds = answer.node_ids, set(answer.seeds)
    # Only seeds whose metadata was fetched can keep detail; the others stay stubs like any node.
    seed_at = [i for i, node_id in enumerate(ids) if node_id in seeds and sizes.cap(node_id) >= CLIPPED]

    def short(tried: list[int]) -> bool:
        return any(tried[i] < CLIPPED for i in seed_at)

    def without_detail_beyond_seeds(tried: list[int]) -> list[int]:
        return [level if level == CUT or ids[i] in seeds else min(level, NAMED) for i, level in enumerate(tried)]

    if not short(levels):
        return levels
    reserve = min(room // SEED_SHARE, sum(cost(i, CLIPPED) - cost(i, BARE) for i in seed_at))
    lifted = decide(room - reserve)
    spare = room - sum(cost(i, level) for i, level in enumerate(lifted))
    for i in seed_at:
        if lifted[i] >= CLIPPED:
            continue
        extra = cost(i, CLIPPED) - cost(i, lifted[i])
        if extra > spare and _clip_to_fit(ids[i], sizes, cost, i, lifted[i], spare):
            extra = cost(i, CLIPPED) - cost(i, lifted[i])
        if extra <= spare:
            spare -= extra
            lifted[i] = CLIPPED
    if short(lifted) or not fits(lifted):
        sizes.unclip()
        return without_detail_beyond_seeds(levels)
    return lifted


def _clip_to_fit(
    node_id: str, sizes: _Sizes, cost: Any, i: int, level: int, spare: int, grow: bool = False
) -> bool:
    """Clip the node's values to the longest length at which raising it from ``level`` to CLIPPED costs ≤ ``spare``.

    Without ``grow``, only shorter than the default clip is tried (and at least 40 characters,
    below which clipped values say little). Whether such a length was found.
    """
    before = cost(i, level)
    longest = len(compact_json(sizes.answer.node_metadata[node_id]))
    low, high = (CLIP_CHARS, longest) if grow else (40, CLIP_CHARS - 1)
    sizes.reclip(node_id, low)
    if cost(i, CLIPPED) - before > spare:  # not even the shortest fits: the usual case once the room is full
        sizes.reclip(node_id, CLIP_CHARS)
        return False
    best = None
    while low <= high:
        middle = (low + high) // 2
        sizes.reclip(node_id, middle)
        if cost(i, CLIPPED) - before <= spare:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    sizes.reclip(node_id, best if best is not None else CLIP_CHARS)
    return best is not None


def _envelope(
    answer: Traversal,
    nodes: list[Any],
    edges: list[Any],
    truncated: list[Truncation],
    paths: list[Any] | None,
    context: list[Any] | None = None,
) -> dict[str, Any]:
    envelope: dict[str, Any] = {"seeds": answer.seeds}
    envelope["max_hops" if answer.tool == "bfs_query" else "k"] = answer.hops
    listed_all = 0 < len(nodes) == answer.node_count and len(edges) == answer.edge_count
    envelope.update(
        node_count=answer.node_count,
        edge_count=answer.edge_count,
        nodes=nodes,
        edges=edges,
        schema_summary=answer.schema_record(counts=not listed_all),
    )
    if paths:
        envelope["paths"] = paths
    if context:
        envelope["context"] = context
    if truncated:
        envelope["truncated"] = [t.model_dump(exclude_none=True) for t in truncated]
    if answer.warnings:
        envelope["warnings"] = answer.warnings
    return envelope


def _build(
    answer: Traversal, budget: AnswerBudget, sizes: _Sizes, owned: list[Sequence[int]], levels: list[int]
) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    edge_levels: dict[int, int] = {}
    counts = dict.fromkeys((CLIPPED, NAMED, BARE, CUT), 0)
    kept: set[str] = set()
    for i, (node_id, level) in enumerate(zip(answer.node_ids, levels, strict=True)):
        if level == CUT:
            counts[CUT] += 1
            continue
        kept.add(node_id)
        node: dict[str, Any] = {"id": node_id, "entity_type": answer.types[node_id]}
        if level == FULL:
            node["metadata"] = answer.node_metadata[node_id]
        elif level == CLIPPED:
            node["metadata"] = sizes.clipped(node_id)
        elif level == NAMED and sizes.names.get(node_id) is not None:
            node["name"] = sizes.names[node_id]
        if level < sizes.asked(node_id):  # a named stub without a name to show is a bare stub
            counts[CLIPPED if level == CLIPPED else NAMED if "name" in node else BARE] += 1
        nodes.append(node)
        for e in owned[i]:
            edge_levels[e] = _edge_level(level, sizes.cap(node_id))
    edges: list[dict[str, Any]] = []
    for e in sorted(edge_levels, key=answer.triples.__getitem__):
        s, p, o = answer.triples[e]
        edge: dict[str, Any] = {"subject": s, "predicate": p, "object": o}
        metadata = answer.edge_metadata.get((s, p, o))
        if metadata is not None and edge_levels[e] >= CLIPPED:
            edge["metadata"] = metadata if edge_levels[e] == FULL else clip_metadata(metadata, sizes.clip_chars)
        edges.append(edge)
    counts[CUT] += answer.unlisted
    paths = answer.node_paths(kept) if answer.paths else []
    notes = [*answer.truncated, *_notes(answer, budget, counts, len(nodes))]
    if counts[CUT]:
        notes = [n for n in notes if n.reason != "page"]
    return _envelope(answer, nodes, edges, notes, paths, _context(answer, budget, kept, paths))


_DEGRADATION_NOTES = (
    (CLIPPED, "clipped_values", "have long values clipped", " (see their _clipped)",
     "describe_entity(id) returns a node whole."),
    (NAMED, "named_stubs", "are named stubs, without metadata", "",
     "describe_entities(ids) returns their metadata; node_types narrows what gets detail."),
    (BARE, "bare_stubs", "are bare stubs (id, entity_type)", "",
     "describe_entities(ids) returns their names and metadata."),
)
"""The note of each degradation: level, reason, what befell the nodes, where to look, what to do."""


def _notes(answer: Traversal, budget: AnswerBudget, counts: dict[int, int], shown: int) -> list[Truncation]:
    tokens = budget.max_tokens
    notes = [
        Truncation(reason=reason, detail=f"{counts[level]} node(s) {what} to fit {tokens} tokens{see}.", hint=hint,
                   count=counts[level])
        for level, reason, what, see, hint in _DEGRADATION_NOTES
        if counts[level]
    ]
    if counts[CUT]:
        page = len(answer.node_ids) + answer.unlisted
        if answer.tool == "bfs_query":
            next_offset = answer.offset + shown
            notes.append(Truncation(
                reason="max_tokens",
                detail=f"{shown} of this page's {page} nodes fit {tokens} tokens.",
                hint=f"Call again with offset={next_offset} for the rest, or exclude_node_types to drop types.",
                count=counts[CUT],
                next_offset=next_offset,
            ))
        else:
            notes.append(Truncation(
                reason="max_tokens",
                detail=f"{shown} of the {page} shared nodes fit {tokens} tokens.",
                hint="Lower k, add exclude_node_types or min_mentions, or intersect fewer hubs.",
                count=counts[CUT],
            ))
    return notes


def _fits(obj: Any, budget: AnswerBudget) -> bool:
    return len(compact_json(obj)) <= budget.chars


def _most_that_fit(answer_of: Callable[[int], Any], most: int, budget: AnswerBudget) -> int:
    """The largest ``keep`` from 0 to ``most`` whose ``answer_of(keep)`` fits ``budget`` (0 when none does): a
    binary search, as the answer grows with ``keep``."""
    if _fits(answer_of(most), budget):
        return most
    low, high = 0, most - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _fits(answer_of(middle), budget):
            low = middle
        else:
            high = middle - 1
    return low


def fit_record(record: dict[str, Any], budget: AnswerBudget) -> dict[str, Any]:
    """One flat record (describe_entity) within the budget: long values clipped, as little as needed."""
    if _fits(record, budget):
        return record
    keep: dict[str, Any] = {k: record[k] for k in ("id", "entity_type") if k in record}
    rest = {k: v for k, v in record.items() if k not in keep}
    max_chars = max(budget.chars // max(len(rest), 1), 16)
    while True:
        clipped = {**keep, **clip_metadata(rest, max_chars, max(max_chars // 40, 3))}
        if _fits(clipped, budget) or max_chars <= 16:
            return clipped
        max_chars //= 2


def fit_list(
    items: list[Any],
    budget: AnswerBudget,
    *,
    what: str,
    id_key: str = "id",
    notes: Sequence[Truncation] = (),
    page: tuple[int, int] | None = None,
    beside: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A list answer's document within the budget: long values clipped, then items cut from the end.

    The document holds the items under ``items`` and, beside them, what is said about the list:
    ``page`` (for a paged list, ``page`` = (offset of the first item, items in the whole list)),
    ``beside``'s fields (the unknown ids) and ``truncated``, the ``notes`` plus the cut, if any.
    Everything counts against the budget. A cut says how to get the rest: the offset to
    continue from for a paged list, else the ids left out (as many as the budget holds).
    """
    items = [fit_record(i, budget) if isinstance(i, dict) else i for i in items]
    given = [n.model_dump(exclude_none=True) for n in notes]

    def document(keep: int) -> dict[str, Any]:
        said = list(given)
        if keep < len(items):
            said.append(_list_cut(items, keep, budget, what, id_key, None if page is None else page[0]))
        fitted: dict[str, Any] = {}
        if page is not None:
            offset, total = page
            fitted["page"] = Page(offset=offset, returned=keep, total=total,
                                  next_offset=offset + keep if offset + keep < total else None
                                  ).model_dump(exclude_none=True)
        fitted.update(beside or {})
        if said:
            fitted["truncated"] = said
        fitted["items"] = items[:keep]
        return fitted

    return document(_most_that_fit(document, len(items), budget))


def _list_cut(items: list[Any], keep: int, budget: AnswerBudget, what: str, id_key: str,
              offset: int | None) -> dict[str, Any]:
    """The note of a list cut to the budget after ``keep`` items, saying how to get the rest."""
    cut = Truncation(
        reason="max_tokens",
        detail=f"{len(items) - keep} of {len(items)} {what} did not fit {budget.max_tokens} tokens.",
        hint="",
        count=len(items) - keep,
    )
    if offset is not None:
        cut.next_offset = offset + keep
        cut.hint = f"Call again with offset={cut.next_offset} for the rest."
        return cut.model_dump(exclude_none=True)
    rest, room = [], budget.chars // 4
    for item in items[keep:]:
        if isinstance(item, dict) and item.get(id_key) is not None:
            room -= len(str(item[id_key])) + 3
            if room < 0:
                break
            rest.append(str(item[id_key]))
    cut.remaining_ids = rest
    cut.hint = "Call again with the remaining ids" + (
        f" (the first {len(rest)} are listed)." if len(rest) < len(items) - keep else "."
    )
    return cut.model_dump(exclude_none=True)


def fit_schema(schema: dict[str, Any], budget: AnswerBudget) -> dict[str, Any]:
    """describe_schema within the budget: its type and predicate lists sampled (marked not comprehensive)."""
    if _fits(schema, budget):
        return schema
    fitted = dict(schema)
    types, preds = list(schema["entity_types"]), list(schema["predicates"])
    keep = max(len(types), len(preds))
    while keep > 0:
        fitted["entity_types"], fitted["predicates"] = types[:keep], preds[:keep]
        fitted["comprehensive"] = False
        fitted["truncated"] = [*schema.get("truncated", []), {
            "reason": "max_tokens",
            "detail": f"Only the first {keep} entity types and predicates are listed "
            f"(of {len(types)} and {len(preds)}).",
            "hint": "Use schema_summary from a bfs_query survey for the types and predicates near your seeds.",
        }]
        if _fits(fitted, budget):
            break
        keep //= 2
    return fitted


def _clip_strings(value: Any, max_chars: int) -> Any:
    """Every string inside ``value`` (labels, names, echoes) at most ``max_chars`` long, marked where cut."""
    if isinstance(value, str):
        return value if len(value) <= max_chars else f"{value[:max_chars]}… ({len(value)} characters)"
    if isinstance(value, list):
        return [_clip_strings(v, max_chars) for v in value]
    if isinstance(value, dict):
        return {k: _clip_strings(v, max_chars) for k, v in value.items()}
    return value


ECHO_CLIPS = (1000, 200, 60)
"""String lengths tried, longest first, when an answer's own texts (echoed arguments, warnings) overflow."""


def hold_texts(data: Any, budget: AnswerBudget) -> tuple[Any, str]:
    """``data`` (a fitted answer) and its wire text, with long strings clipped until it fits ``budget``.

    The fitting of each answer kind grades what the store returned; this is the net under it for
    what the caller sent and the answer echoes (a 200,000-character type name in a warning, a huge
    unknown seed id): every text counts against the budget. Ids of real entities are far shorter
    than the clips, so only echoes and prose are cut.
    """
    text = compact_json(data)
    for max_chars in ECHO_CLIPS:
        if len(text) <= answer_limit(budget.max_tokens):  # the whole document, its notes included
            break
        data = _clip_strings(data, max_chars)
        text = compact_json(data)
    return data, text


SAYABLE_CHARS = 80
"""A path answer's entity names and step labels are never clipped shorter than this: a result must stay sayable."""


def _clip_keeping_names(value: Any, max_chars: int) -> Any:
    """:func:`_clip_strings`, except that ``name`` and ``label`` values keep at least :data:`SAYABLE_CHARS`."""
    if isinstance(value, dict):
        return {k: _clip_strings(v, max(max_chars, SAYABLE_CHARS)) if k in ("name", "label")
                else _clip_keeping_names(v, max_chars) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_keeping_names(v, max_chars) for v in value]
    return _clip_strings(value, max_chars)


def fit_paths(answer: dict[str, Any], budget: AnswerBudget) -> dict[str, Any]:
    """A path_query answer within the budget: long values clipped (everywhere: metadata, labels of entry points
    and steps), then entity metadata dropped, then results cut; other texts clipped harder if even that is too
    long, but names and labels never below :data:`SAYABLE_CHARS`."""

    def with_note(fitted: dict[str, Any], note: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(fitted["metadata"])
        metadata["truncated"] = [*metadata.get("truncated", []), note]
        return {**fitted, "metadata": metadata}

    def entities(results: list[dict[str, Any]], change: Any) -> list[dict[str, Any]]:
        return [{**r, "entity": change(r["entity"])} for r in results]

    if _fits(answer, budget):
        return answer
    answer = _clip_keeping_names(answer, CLIP_CHARS)
    clipped = {**answer, "results": entities(answer["results"], lambda e: {  # the name stays sayable
        **e, **fit_record({k: v for k, v in e.items() if k != "name"}, AnswerBudget(200))})}
    clipped = with_note(clipped, {
        "reason": "clipped_values",
        "detail": "Long values of the result entities and long labels were clipped.",
        "hint": "describe_entities with the result ids returns their records whole.",
    })
    if _fits(clipped, budget):
        return clipped
    slim = {**answer, "results": entities(answer["results"], lambda e: {k: v for k, v in e.items() if k != "metadata"})}
    if any("metadata" in r["entity"] for r in answer["results"]):  # asked with_metadata: say it went
        slim = with_note(slim, {
            "reason": "named_stubs",
            "detail": f"Entity metadata was left out to keep the answer under {budget.max_tokens} tokens.",
            "hint": "Call describe_entities with the result ids for their full records.",
        })
    if _fits(slim, budget):
        return slim
    results = slim["results"]

    def cut(keep: int) -> dict[str, Any]:
        return with_note({**slim, "results": results[:keep]}, {
            "reason": "max_tokens",
            "detail": f"Only the best {keep} of {len(results)} results fit the answer budget of "
            f"{budget.max_tokens} tokens.",
            "hint": "Lower max_results, or narrow the query with type: or \"text\" filters.",
        })

    fitted = cut(_most_that_fit(cut, len(results), budget))
    chars = CLIP_CHARS
    while not _fits(fitted, budget) and chars > 8:
        chars //= 4
        fitted = _clip_keeping_names(fitted, chars)
    return fitted
