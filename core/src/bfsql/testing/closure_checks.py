"""Closures walked in the store: the ``closure`` primitive against the engine's level-by-level walk and a BFS.

Part of the conformance suite (:class:`~bfsql.testing.BackendConformance` inherits these checks). A backend
that implements ``closure`` (and declares ``capabilities.traversal``) answers path_query's variable-length
edges in one call; these checks run the same queries on a graph that walks level by level (one ``hop`` call
a level: a wrapper on ``hop`` keeps the store walk off) and compare the whole answers: results, depths, the
paths shown, scores, cuts and their notes, warnings; and the seeds a store says, against ``get_nodes``.
The queries cover both directions, one and several predicates and ``[*]``, depth ranges, walks after a
hop (several starts, each with the path it may not re-enter), ``max_nodes`` cuts and the hub cap; the
level walk reads each hop's edges in reverse order (no order is promised), so pairs joined by edges of
two predicates must show the same one. On random graphs (cycles, several parents, pairs joined twice,
hubs, self-loops, dangling and merged ends) each single-start closure is also checked against a
breadth-first search written here, over the records themselves.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest

from bfsql.backend import GraphBackend
from bfsql.budgets import TraversalLimits
from bfsql.engine.paths import path_query
from bfsql.errors import BfsqlError
from bfsql.graph import Graph, then
from bfsql.hookspecs import hookimpl
from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.primitives import Primitives
from bfsql.testing.applicability import skip
from bfsql.testing.idmap import IdMap
from bfsql.testing.random_graphs import random_records
from bfsql.testing.standard_graph import STANDARD_IDS

__all__ = ["ClosureChecks", "compare_closures", "reference_closure"]

STANDARD_PREDICATES = ("INHIBITS", "REGULATES", "INTERACTS_WITH", "ASSOCIATED_WITH")
RANDOM_PREDICATES = ("binds", "causes", "treats", "isa")
RANDOM_CLOSURE_GRAPHS = 8
EDGES = ("-[{p}*]->", "<-[{p}*]-", "-[{p}, {q}*2..3]->", "<-[{p}, {q}*..2]-", "-[*]->", "<-[*3]-", "-[{p}*4..]->")
"""The variable-length edges compared, ``{p}`` and ``{q}`` two predicates of the graph."""
LIMITS = (TraversalLimits(), TraversalLimits(max_nodes=3), TraversalLimits(max_nodes=6, max_edges_per_node=2))
"""The default limits, a ``max_nodes`` cut, and a hub cap the store must leave to the level walk."""


class _LevelByLevel:
    """A ``hop`` wrapper that changes nothing but the order of each entity's edges (reversed: no order is promised):
    a graph with it walks closures level by level, and must choose among edges joining the same pair as the
    store's walk does, by predicate, whatever order they come in."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]) -> Any:
        inner = yield
        return then(inner, lambda found: {i: there._replace(edges=there.edges[::-1]) for i, there in found.items()})


def _answer(result: Any) -> Any:
    dumped = result.model_dump()
    dumped["metadata"].pop("execution_time_ms", None)
    return dumped


async def _both(store: Graph, level: Graph, query: str, limits: TraversalLimits) -> Any:
    """The answers of both graphs to ``query``, after checking they are the same (an error: both raise it)."""
    try:
        expected = await path_query(level, query, max_results=200, limits=limits)
    except BfsqlError as error:
        with pytest.raises(type(error)):
            await path_query(store, query, max_results=200, limits=limits)
        return None
    answered = await path_query(store, query, max_results=200, limits=limits)
    assert _answer(answered) == _answer(expected), (query, limits)
    return answered


async def compare_closures(
    backend: GraphBackend, seeds: list[str], predicates: Iterable[str], rng: random.Random | None = None,
    truth: Callable[[str, str, bool], dict[str, int]] | None = None,
) -> None:
    """Compare the store's closures with the level walk's (see the module) from each of ``seeds``; with ``truth``
    (start, predicate, outgoing -> least depths), also a plain closure's results with the truth."""
    store = Graph(backend, plugins=[], cache=None)
    level = Graph(backend, plugins=[_LevelByLevel()], cache=None)
    assert store.walks_in_store("closure") and not level.walks_in_store("closure")
    p, q = list(predicates)[:2]
    for seed in seeds:  # the seeds a store says are get_nodes' answer (an unknown id left out)
        said = await backend.closure([seed, "bfsql:no-such-entity"], [p], True, 1, 100, 20_000, None)
        if said is not None and said.seeds is not None:
            assert said.seeds == await backend.get_nodes([seed, "bfsql:no-such-entity"]), seed
    for seed, (edge, limits) in itertools.product(seeds, itertools.product(EDGES, LIMITS)):
        if rng is not None and rng.random() < 0.5:
            continue  # random graphs: half the combinations, a different half each
        start = f"@{json.dumps(seed, ensure_ascii=False)}"
        closure = edge.format(p=p, q=q)
        for query in (f"{start} {closure}", f"{start} -[*]-> {closure}", f"{start} <-[{p}]- {closure}"):
            await _both(store, level, query, limits)
    if truth is not None:
        for seed, outgoing in itertools.product(seeds, (True, False)):
            edge = f"-[{p}*]->" if outgoing else f"<-[{p}*]-"
            answer = await _both(store, level, f"@{json.dumps(seed, ensure_ascii=False)} {edge}", TraversalLimits())
            if answer is not None:
                assert {r.entity.id: r.depth for r in answer.results} == truth(seed, p, outgoing), (seed, edge)
    assert store.stats.calls.get("closure", 0) > 0, "the store never walked a closure"


def reference_closure(records: list[Record]) -> Callable[[str, str, bool], dict[str, int]]:
    """Least depths of the closure from a start along one predicate, by a breadth-first search over ``records``
    (merged entities and their edges left out, ends that are no entity never entered; at most 50 levels)."""
    visible = {r.id for r in records if isinstance(r, EntityRecord) and r.status != "merged"}
    merged = {r.id for r in records if isinstance(r, EntityRecord) and r.status == "merged"}
    edges = [(r.subject, r.predicate, r.object) for r in records if isinstance(r, RelationshipRecord)
             and r.subject not in merged and r.object not in merged]

    def depths(start: str, predicate: str, outgoing: bool) -> dict[str, int]:
        step: dict[str, set[str]] = {}
        for subject, edge_predicate, obj in edges:
            if edge_predicate == predicate:
                source, target = (subject, obj) if outgoing else (obj, subject)
                if target in visible:
                    step.setdefault(source, set()).add(target)
        distance, queue = {start: 0}, deque([start])
        while queue:
            node = queue.popleft()
            for target in step.get(node, ()):
                if target not in distance and distance[node] < 50:
                    distance[target] = distance[node] + 1
                    queue.append(target)
        return {node: d for node, d in distance.items() if node != start}

    return depths


def _parallel_edges(records: list[Record], predicates: list[str], rng: random.Random) -> list[Record]:
    """``records`` with an edge of the other of the two ``predicates`` beside a third of the edges of either: pairs
    joined twice, whose walks must show the same predicate (the first in code-point order) however walked."""
    triples = {(r.subject, r.predicate, r.object) for r in records if isinstance(r, RelationshipRecord)}
    p, q = predicates
    added = sorted((s, q if predicate == p else p, o) for s, predicate, o in triples
                   if predicate in predicates and rng.random() < 1 / 3)
    return records + [RelationshipRecord(subject=s, predicate=pr, object=o) for s, pr, o in added
                      if (s, pr, o) not in triples]


class ClosureChecks:
    """The checks of closures walked in the store (see the module)."""

    async def test_the_store_closure_answers_as_the_level_walk(
        self, request: pytest.FixtureRequest, backend: GraphBackend, ids: IdMap
    ) -> None:
        """path_query's variable-length edges answer the same whether the store walks the closure or the engine
        walks it level by level, from every entity of the standard graph."""
        if type(backend).closure is Primitives.closure or not backend.capabilities.traversal:
            skip(request, "the backend does not walk closures in the store (no closure primitive)")
            return
        await compare_closures(backend, [ids.to_backend(i) for i in STANDARD_IDS], STANDARD_PREDICATES)

    async def test_the_store_closure_answers_as_the_level_walk_and_a_bfs_on_random_graphs(
        self, request: pytest.FixtureRequest, backend: GraphBackend,
        load_records: Callable[[list[Record]], Awaitable[GraphBackend]] | None,
    ) -> None:
        """The same comparison on random graphs, and each single-start closure against a breadth-first search
        over the records."""
        if type(backend).closure is Primitives.closure or not backend.capabilities.traversal:
            skip(request, "the backend does not walk closures in the store (no closure primitive)")
            return
        if load_records is None:
            skip(request, "the test class gives no load_records fixture to build a backend from random records")
            return
        for number in range(RANDOM_CLOSURE_GRAPHS):
            rng = random.Random(1000 + number)
            predicates = rng.sample(RANDOM_PREDICATES, k=2)
            records = _parallel_edges(random_records(rng), predicates, rng)
            loaded = await load_records(records)
            try:
                ids = [r.id for r in records if isinstance(r, EntityRecord)]
                await compare_closures(loaded, rng.sample(ids, k=4), predicates, rng, reference_closure(records))
            finally:
                await loaded.aclose()
