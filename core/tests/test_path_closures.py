"""Variable-length edges of path queries: ``-[isa*]->`` and its quantifiers.

The hand-made graph (``isa`` points from child to parent; types in brackets)::

    X[Leaf] ──isa──► B1[Mid] ──isa──► A1[Upper] ──isa──► ROOT[Top] ──isa──► R2[Top]
     │  │             └──────────────isa─────────────────►┘
     │  └──isa──► C[Mid] ──isa──► A1                       a diamond: X → B1 → A1 and X → C → A1
     │             └──isa──► A2[Upper] ──isa──► ROOT
     │                        └──isa──► K1[Loop] ──isa──► K2[Loop] ──isa──► K3[Loop] ──isa──► K1   a cycle
     │                                                                       └──isa──► X           back to the start
     └──partof──► P1[Part] ──isa──► P2[Part]
    A1 ──isa──► MISSING (no such entity: a dangling edge)

Walking ``isa`` out of X breadth first, each entity once at its least depth, by hand:
depth 1: B1, C; depth 2: A1, A2, ROOT (ROOT through B1's shortcut); depth 3: K1, R2; depth 4: K2;
depth 5: K3. K3's edges lead to K1 (already reached) and X (the start): the walk ends there.
Every result scores 1 (``isa`` names a predicate exactly), so results come by depth, then id.
"""

from __future__ import annotations

import asyncio
from collections import deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfsql import Graph, hookimpl, postprocess, then
from bfsql.backends.memory import MemoryBackend
from bfsql.budgets import TraversalLimits
from bfsql.engine.path_syntax import MAX_WALK_DEPTH, Quantifier, parse_path_query
from bfsql.engine.paths import path_query
from bfsql.models import to_output

from conftest import entity, rel

TYPES = {"X": "Leaf", "B1": "Mid", "C": "Mid", "A1": "Upper", "A2": "Upper", "ROOT": "Top", "R2": "Top",
         "K1": "Loop", "K2": "Loop", "K3": "Loop", "P1": "Part", "P2": "Part"}
EDGES = [("X", "isa", "B1"), ("X", "isa", "C"), ("B1", "isa", "A1"), ("C", "isa", "A1"), ("C", "isa", "A2"),
         ("B1", "isa", "ROOT"), ("A1", "isa", "ROOT"), ("A2", "isa", "ROOT"), ("ROOT", "isa", "R2"),
         ("A2", "isa", "K1"), ("K1", "isa", "K2"), ("K2", "isa", "K3"), ("K3", "isa", "K1"), ("K3", "isa", "X"),
         ("A1", "isa", "MISSING"), ("X", "partof", "P1"), ("P1", "isa", "P2")]
ANCESTORS_OF_X = {"B1": 1, "C": 1, "A1": 2, "A2": 2, "ROOT": 2, "K1": 3, "R2": 3, "K2": 4, "K3": 5}


def dag_records() -> list:
    return [entity(i, t) for i, t in TYPES.items()] + [rel(*edge) for edge in EDGES]


@pytest.fixture
def dag() -> Graph:
    return Graph(MemoryBackend(dag_records()), plugins=[postprocess])


def depths(result) -> list[tuple[str, int]]:
    return [(r.entity.id, r.depth) for r in result.results]


def nodes_of(result) -> list[str]:
    return [s.entity for s in result.path if s.entity]


# -- grammar ------------------------------------------------------------------------------------


@pytest.mark.parametrize("edge, terms, least, most, canonical", [
    ("-[isa*]->", ("isa",), 1, None, "-[isa*]->"),
    ("-[isa*2..4]->", ("isa",), 2, 4, "-[isa*2..4]->"),
    ("-[isa*1..]->", ("isa",), 1, None, "-[isa*]->"),
    ("-[isa*2..]->", ("isa",), 2, None, "-[isa*2..]->"),
    ("-[isa*..3]->", ("isa",), 1, 3, "-[isa*..3]->"),
    ("-[isa*1..3]->", ("isa",), 1, 3, "-[isa*..3]->"),
    ("-[isa*3]->", ("isa",), 3, 3, "-[isa*3]->"),
    ("-[isa*3..3]->", ("isa",), 3, 3, "-[isa*3]->"),
    ("<-[isa*]-", ("isa",), 1, None, "<-[isa*]-"),
    ("-[isa,partof*]->", ("isa", "partof"), 1, None, "-[isa, partof*]->"),
    ("<-[ isa , part of * 2 .. 4 ]-", ("isa", "part of"), 2, 4, "<-[isa, part of*2..4]-"),
    ('-["is a"*]->', ("is a",), 1, None, "-[is a*]->"),
    (f"-[isa*{MAX_WALK_DEPTH}]->", ("isa",), MAX_WALK_DEPTH, MAX_WALK_DEPTH, f"-[isa*{MAX_WALK_DEPTH}]->"),
    (f"-[isa*..{MAX_WALK_DEPTH}]->", ("isa",), 1, MAX_WALK_DEPTH, f"-[isa*..{MAX_WALK_DEPTH}]->"),
])
def test_every_quantifier_form_parses(edge, terms, least, most, canonical):
    hop = parse_path_query(f"@X {edge} type:Top").hops[0]
    assert hop.relation.terms == terms and not hop.relation.wildcard
    assert (hop.relation.quantifier.least, hop.relation.quantifier.most) == (least, most)
    assert hop.edge() == canonical
    again = parse_path_query(f"@X {canonical}").hops[0].relation.quantifier
    assert (again.least, again.most) == (least, most)


def test_a_plain_edge_has_no_quantifier_and_the_quantifier_position_is_kept():
    assert parse_path_query("@X -[isa]->").hops[0].relation.quantifier is None
    assert parse_path_query("@X -[isa*2]->").hops[0].relation.quantifier == Quantifier(2, 2, 8)


# -- closures on the hand-made graph --------------------------------------------------------------


async def test_ancestors_are_the_transitive_closure_each_at_its_least_depth(dag):
    result = await path_query(dag, "@X -[isa*]->", max_results=50)
    assert depths(result) == sorted(ANCESTORS_OF_X.items(), key=lambda item: (item[1], item[0]))
    assert result.metadata.total_results == 9 and result.metadata.truncated is None
    assert all(r.score == 1.0 for r in result.results)
    # the dangling edge A1 -isa-> MISSING is said once, not followed
    assert result.metadata.warnings == ["1 edge end(s) point to entities missing from the graph; left out."]


async def test_a_walked_result_carries_its_whole_path(dag):
    result = await path_query(dag, "@X -[isa*]-> @K3")
    (k3,) = result.results
    assert k3.depth == 5
    assert [s.model_dump(exclude_none=True) for s in k3.path] == [
        {"entity": "X", "label": "x"},
        {"edge": "isa", "direction": "outgoing"}, {"entity": "C", "label": "c"},
        {"edge": "isa", "direction": "outgoing"}, {"entity": "A2", "label": "a2"},
        {"edge": "isa", "direction": "outgoing"}, {"entity": "K1", "label": "k1"},
        {"edge": "isa", "direction": "outgoing"}, {"entity": "K2", "label": "k2"},
        {"edge": "isa", "direction": "outgoing"}, {"entity": "K3", "label": "k3"},
    ]
    # A1 is reached at depth 2 from B1 and from C: the first by id (B1) wins the tie
    a1 = await path_query(dag, "@X -[isa*]-> @A1")
    assert nodes_of(a1.results[0]) == ["X", "B1", "A1"]
    out = to_output(a1)["results"][0]
    assert set(out) == {"entity", "path", "score", "depth"} and out["depth"] == 2


async def test_descendants_walk_incoming_edges(dag):
    # into ROOT: A1, A2, B1 (1); C (into A1 and A2), X (into B1) (2); K3 (into X) (3); K2 (4); K1 (5)
    result = await path_query(dag, "@ROOT <-[isa*]-", max_results=50)
    assert depths(result) == [("A1", 1), ("A2", 1), ("B1", 1), ("C", 2), ("X", 2), ("K3", 3), ("K2", 4), ("K1", 5)]
    assert nodes_of(result.results[-1]) == ["ROOT", "B1", "X", "K3", "K2", "K1"]
    assert {s.direction for s in result.results[-1].path if s.edge} == {"incoming"}


@pytest.mark.parametrize("quantifier, expected", [
    ("*1", [("B1", 1), ("C", 1)]),
    ("*..2", [("B1", 1), ("C", 1), ("A1", 2), ("A2", 2), ("ROOT", 2)]),
    ("*2..3", [("A1", 2), ("A2", 2), ("ROOT", 2), ("K1", 3), ("R2", 3)]),
    ("*3", [("K1", 3), ("R2", 3)]),
    ("*4..", [("K2", 4), ("K3", 5)]),
    ("*5..9", [("K3", 5)]),
])
async def test_a_quantifier_keeps_the_entities_whose_least_depth_is_in_range(dag, quantifier, expected):
    # ROOT is reachable in 2 and in 3 edges; its least depth is 2, so *3 does not give it
    assert depths(await path_query(dag, f"@X -[isa{quantifier}]->", max_results=50)) == expected


async def test_star_one_reaches_what_a_plain_edge_reaches(dag):
    plain = await path_query(dag, "@A1 <-[isa]- -[isa]->")
    walked = await path_query(dag, "@A1 <-[isa]- -[isa*1]->")
    assert [(r.entity.id, r.score, nodes_of(r)) for r in walked.results] == [
        (r.entity.id, r.score, nodes_of(r)) for r in plain.results]
    assert all(r.depth is None for r in plain.results) and all(r.depth == 1 for r in walked.results)


async def test_several_terms_walk_every_relation_named(dag):
    result = await path_query(dag, "@X -[isa, partof*]->", max_results=50)
    assert dict(depths(result)) == {**ANCESTORS_OF_X, "P1": 1, "P2": 2}
    assert [s.edge for s in result.results[[r.entity.id for r in result.results].index("P2")].path if s.edge] == [
        "partof", "isa"]


async def test_a_filter_picks_from_the_walk_without_stopping_it(dag):
    # the walk goes on through Mid and Upper entities to reach the Top ones
    assert depths(await path_query(dag, "@X -[isa*]-> type:Top")) == [("ROOT", 2), ("R2", 3)]
    assert depths(await path_query(dag, "@X -[isa*]-> type:Part")) == []
    assert (await path_query(dag, "@X -[isa*]-> type:Part")).metadata.reason == "no_entities_match_filter"


async def test_a_chain_after_a_walk_keeps_the_depth_of_the_walk(dag):
    # ROOT (path X, B1, ROOT) <-isa- A1, A2 (B1 is on the path); R2 (X, B1, ROOT, R2) <-isa- ROOT (on the path)
    result = await path_query(dag, "@X -[isa*]-> type:Top <-[isa]-")
    assert depths(result) == [("A1", 2), ("A2", 2)]
    assert nodes_of(result.results[0]) == ["X", "B1", "ROOT", "A1"]


async def test_one_walk_from_several_starts_never_reenters_a_path(dag):
    # starts B1 and C (paths A1 <- B1, A1 <- C; A1 is on both, so never entered). Level 1: ROOT from B1, A2 from C;
    # 2: K1 (from A2), R2 (from ROOT); 3: K2; 4: K3; 5: X (K3 -> X; X is on neither path); 6: B1, from X on C's
    # walk (B1 is only on the other start's path); X -> C is C's own start: not entered.
    result = await path_query(dag, "@A1 <-[isa]- -[isa*]->", max_results=50)
    assert depths(result) == [("A2", 1), ("ROOT", 1), ("K1", 2), ("R2", 2), ("K2", 3), ("K3", 4), ("X", 5), ("B1", 6)]
    assert nodes_of(result.results[-1]) == ["A1", "C", "A2", "K1", "K2", "K3", "X", "B1"]


class _ReversedHops:
    """Gives each entity's edges in reverse order: a hop promises no order."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids):
        inner = yield
        return then(inner, lambda found: {i: there._replace(edges=there.edges[::-1]) for i, there in found.items()})


@pytest.mark.parametrize("query", ["@X -[isa, partof*]->", "@X -[isa, partof]->", "@Y <-[isa, partof*]-",
                                   "@X -[isa, partof]-> -[isa, partof*]->"])
async def test_two_edges_joining_a_pair_show_the_first_predicate_whatever_order_the_hop_gives(query):
    records = [entity("X", "T"), entity("Y", "T"), entity("Z", "T"), rel("X", "partof", "Y"), rel("X", "isa", "Y"),
               rel("Y", "partof", "Z"), rel("Y", "isa", "Z")]
    shown = set()
    for plugins in ([], [_ReversedHops()]):
        result = await path_query(Graph(MemoryBackend(records), plugins=plugins), query)
        shown.add(tuple(tuple(s.edge for s in r.path if s.edge) for r in result.results))
    assert len(shown) == 1 and all(set(edges) == {"isa"} for edges in shown.pop())


async def test_results_come_by_score_then_depth_then_id_and_max_results_cuts_them(dag):
    result = await path_query(dag, "@X -[isa*]->", max_results=3)
    assert depths(result) == [("B1", 1), ("C", 1), ("A1", 2)]
    assert result.metadata.total_results == 9
    assert [n.reason for n in result.metadata.truncated] == ["max_results"]


async def test_one_hop_call_per_depth_level(dag):
    await path_query(dag, "@X -[isa*]->")
    assert dag.stats.calls["hop"] == 6  # levels 1-5 reach entities; the 6th (from K3) finds none
    await path_query(dag, "@X -[isa*..2]->")
    assert dag.stats.calls["hop"] == 6 + 2


async def test_a_walk_that_cannot_start_or_reaches_nothing_explains_why(dag):
    unmatched = await path_query(dag, "@X -[nothing*]->")
    assert unmatched.metadata.reason == "no_matching_relations" and unmatched.metadata.stopped_at_hop == 1
    assert unmatched.metadata.available_relations == ["isa", "partof"]
    assert "[nothing*]" in unmatched.metadata.hint
    shallow = await path_query(dag, "@X -[isa*6..]->")
    assert shallow.results == [] and shallow.metadata.reason == "no_candidates"
    assert "reached 9 entities, the deepest at depth 5; none at depth 6 or more" in shallow.metadata.hint
    assert (await path_query(dag, "@P2 -[isa*]->")).metadata.reason == "no_matching_relations"


# -- bounds ---------------------------------------------------------------------------------------


def chain(length: int) -> Graph:
    """N0 -next-> N1 -next-> … -next-> N<length>."""
    records = [entity(f"N{i}", "Step") for i in range(length + 1)]
    records += [rel(f"N{i}", "next", f"N{i + 1}") for i in range(length)]
    return Graph(MemoryBackend(records), plugins=[postprocess])


async def test_an_open_walk_stops_at_the_depth_cap_and_says_so():
    result = await path_query(chain(MAX_WALK_DEPTH + 10), "@N0 -[next*]->", max_results=200)
    assert [r.depth for r in result.results] == list(range(1, MAX_WALK_DEPTH + 1))
    (note,) = result.metadata.truncated
    assert note.reason == "max_depth" and note.count == MAX_WALK_DEPTH
    assert f"stopped at depth {MAX_WALK_DEPTH}, the deepest a walk goes; 1 more entities lie one level deeper" in (
        note.detail)
    assert f"At least {MAX_WALK_DEPTH} entities are reachable: the results are a lower bound." in note.detail


async def test_a_walk_that_ends_at_the_cap_is_whole():
    result = await path_query(chain(MAX_WALK_DEPTH), "@N0 -[next*]->", max_results=200)
    assert result.metadata.total_results == MAX_WALK_DEPTH and result.metadata.truncated is None
    bounded = await path_query(chain(MAX_WALK_DEPTH + 10), "@N0 -[next*..3]->")
    assert [r.depth for r in bounded.results] == [1, 2, 3] and bounded.metadata.truncated is None  # asked: no note


async def test_max_nodes_stops_the_walk_with_a_lower_bound(dag):
    # room for 4: level 1 keeps B1, C; level 2 finds A1, A2, ROOT and keeps the first two by id
    result = await path_query(dag, "@X -[isa*]->", limits=TraversalLimits(max_nodes=4))
    assert depths(result) == [("B1", 1), ("C", 1), ("A1", 2), ("A2", 2)]
    assert result.metadata.total_results == 4
    (note,) = result.metadata.truncated
    assert note.reason == "max_nodes" and note.count == 5
    assert "reached the limit of 4 entities at depth 2: 1 more found there were left out" in note.detail
    assert "At least 5 entities are reachable: the results are a lower bound." in note.detail
    assert "edge 1 (-[isa*]->)" in note.detail


class SlowHops(MemoryBackend):
    """Every hop takes 0.6 s."""

    async def hop(self, entity_ids):
        await asyncio.sleep(0.6)
        return await super().hop(entity_ids)


async def test_the_time_limit_stops_the_walk_with_a_lower_bound():
    slow = Graph(SlowHops(dag_records()), plugins=[postprocess])
    result = await path_query(slow, "@X -[isa*]->", time_limit=0.5)  # level 1 begins in time, level 2 does not
    assert depths(result) == [("B1", 1), ("C", 1)]
    (note,) = result.metadata.truncated
    assert note.reason == "time_limit" and note.count == 2
    assert "stopped after 0.5s, the time walks may take, at depth 1" in note.detail


async def test_a_walk_out_of_time_before_its_first_level_says_so(dag):
    result = await path_query(dag, "@X -[isa*]->", time_limit=0.0)
    assert result.results == [] and result.metadata.reason == "no_candidates"
    assert "ran out of time before its first level" in result.metadata.hint
    assert [(n.reason, n.count) for n in result.metadata.truncated] == [("time_limit", 0)]


# -- against an independent closure ----------------------------------------------------------------


def reference_depths(edges: set[tuple[str, str, str]], start: str, incoming: bool) -> dict[str, int]:
    """Breadth-first distances from ``start`` along ``link`` edges, the start left out (written for this test)."""
    step: dict[str, list[str]] = {}
    for subject, predicate, obj in edges:
        if predicate == "link":
            source, target = (obj, subject) if incoming else (subject, obj)
            step.setdefault(source, []).append(target)
    distance, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        for target in step.get(node, []):
            if target not in distance:
                distance[target] = distance[node] + 1
                queue.append(target)
    del distance[start]
    return distance


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.integers(2, 9),
    edges=st.lists(st.tuples(st.integers(0, 8), st.sampled_from(["link", "other"]), st.integers(0, 8)), max_size=30),
    start=st.integers(0, 8),
    incoming=st.booleans(),
    bounds=st.tuples(st.integers(1, 3), st.one_of(st.none(), st.integers(0, 4))),
)
def test_a_walk_is_the_transitive_closure_of_a_random_graph(size, edges, start, incoming, bounds):
    triples = {(f"N{s % size}", p, f"N{o % size}") for s, p, o in edges}
    # Z1 carries both predicates, so "link" always names a predicate of the graph (an exact match)
    records = [entity(f"N{i}", "Node") for i in range(size)] + [entity("Z1", "Node"), entity("Z2", "Node")]
    records += [rel(*t) for t in sorted(triples)] + [rel("Z1", "link", "Z2"), rel("Z1", "other", "Z2")]
    least, extra = bounds
    most = None if extra is None else least + extra
    quantifier = f"*{least}.." + ("" if most is None else str(most))
    origin = f"N{start % size}"
    query = f"@{origin} " + (f"<-[link{quantifier}]-" if incoming else f"-[link{quantifier}]->")

    result = asyncio.run(path_query(Graph(MemoryBackend(records)), query, max_results=200))

    expected = {node: depth for node, depth in reference_depths(triples, origin, incoming).items()
                if least <= depth <= (most or MAX_WALK_DEPTH)}
    assert {r.entity.id: r.depth for r in result.results} == expected
    assert result.metadata.total_results == len(expected)
    for answer in result.results:
        steps = [s.entity or s.edge for s in answer.path]
        assert len(steps) == 2 * answer.depth + 1 and len(set(steps[::2])) == answer.depth + 1  # a simple path
        for i in range(0, len(steps) - 2, 2):
            edge = (steps[i + 2], "link", steps[i]) if incoming else (steps[i], "link", steps[i + 2])
            assert edge in triples and steps[i + 1] == "link"
