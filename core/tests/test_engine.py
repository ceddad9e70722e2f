"""Traversal semantics on a hand-built graph; expected answers worked out by hand.

    D(Paper) -mentions-> S(Gene) -assoc-> A(Gene) -r-> E(Gene, 1 mention)
    B(Disease) -assoc-> S ;  S -r-> X (missing) ;  S -r-> M (merged, invisible)
    C(Drug) -treats-> B -r-> F(Gene, 5 mentions) ;  D -mentions-> C
"""

from __future__ import annotations

import pytest

from bfsql import Graph, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.engine import TraversalLimits, bfs_query, intersect_subgraphs
from bfsql.errors import InvalidArgument, UnknownEntity
from bfsql.models import Truncation, to_output

from conftest import entity, rel, small_records


def triples(result) -> list[tuple[str, str, str]]:
    return [(e.subject, e.predicate, e.object) for e in result.edges]


def ids(result) -> list[str]:
    return [n.id for n in result.nodes]


async def test_one_hop_follows_edges_in_both_directions(small_graph):
    result = await bfs_query(small_graph, ["S"], 1)
    assert ids(result) == ["S", "A", "B", "D"]
    assert triples(result) == [("B", "assoc", "S"), ("D", "mentions", "S"), ("S", "assoc", "A")]
    assert (result.node_count, result.edge_count) == (4, 3)


async def test_two_hops_order_is_distance_then_id(small_graph):
    result = await bfs_query(small_graph, ["S"], 2)
    assert ids(result) == ["S", "A", "B", "D", "C", "E", "F"]
    assert result.edge_count == 7
    assert ("D", "mentions", "C") in triples(result)
    assert result.schema_summary.entity_types_found == ["Disease", "Drug", "Gene", "Paper"]
    assert result.schema_summary.predicates_found == ["assoc", "mentions", "r", "treats"]


async def test_dangling_edge_is_reported_not_fatal_and_merged_is_invisible(small_graph):
    result = await bfs_query(small_graph, ["S"], 1)
    assert "X" not in ids(result) and "M" not in ids(result)
    assert result.warnings == ["1 edge(s) point to entities missing from the graph; left out."]


async def test_full_nodes_and_slimmed_full_edges_by_default(small_graph):
    result = await bfs_query(small_graph, ["C"], 1)
    node_c = result.nodes[0]
    assert node_c.metadata == {"name": "c"}
    treats = next(e for e in result.edges if e.predicate == "treats")
    assert treats.metadata == {"confidence": 0.8, "source_documents": ["doc2"]}  # provenance stripped


async def test_node_types_choose_full_nodes_others_are_stubs(small_graph):
    result = await bfs_query(small_graph, ["S"], 2, node_types=["Gene"])
    full = {n.id for n in result.nodes if n.metadata is not None}
    assert full == {"S", "A", "E", "F"}
    assert to_output(result.nodes[2]) == {"id": "B", "entity_type": "Disease", "name": "b"}  # a named stub


async def test_predicates_choose_full_edges(small_graph):
    result = await bfs_query(small_graph, ["S"], 2, predicates=["treats"])
    full = [(e.subject, e.predicate, e.object) for e in result.edges if e.metadata is not None]
    assert full == [("C", "treats", "B")]
    assert result.edge_count == 7


async def test_topology_only_overrides_filters(small_graph):
    result = await bfs_query(small_graph, ["S"], 2, topology_only=True, node_types=["Gene"], predicates=["r"])
    assert all(n.metadata is None for n in result.nodes)
    assert all(e.metadata is None for e in result.edges)
    assert result.node_count == 7


async def test_exclude_node_types_removes_nodes_and_their_edges(small_graph):
    result = await bfs_query(small_graph, ["S"], 2, exclude_node_types=["Paper"])
    assert ids(result) == ["S", "A", "B", "C", "E", "F"]
    assert all("D" not in (s, o) for s, _, o in triples(result))
    assert result.edge_count == 5
    assert "Paper" in result.schema_summary.entity_types_found  # the summary covers what the traversal saw
    assert "mentions" in result.schema_summary.predicates_found


async def test_min_mentions_filters_result_and_keeps_nodes_without_counts(small_graph):
    result = await bfs_query(small_graph, ["S"], 2, min_mentions=2)
    assert ids(result) == ["S", "A", "B", "D", "C", "F"]
    assert ("A", "r", "E") not in triples(result)
    assert (result.node_count, result.edge_count) == (6, 6)


async def test_paging_covers_every_node_and_edge_exactly_once(small_graph):
    pages = [await bfs_query(small_graph, ["S"], 2, limit=3, offset=o) for o in (0, 3, 6)]
    assert [ids(p) for p in pages] == [["S", "A", "B"], ["D", "C", "E"], ["F"]]
    assert [len(p.edges) for p in pages] == [2, 4, 1]
    assert all(p.node_count == 7 and p.edge_count == 7 for p in pages)
    assert pages[0].truncated[0].next_offset == 3
    assert pages[2].truncated == []
    everything = await bfs_query(small_graph, ["S"], 2)
    assert sorted(t for p in pages for t in triples(p)) == sorted(triples(everything))


async def test_paging_is_stable_across_runs():
    first = await bfs_query(Graph(MemoryBackend(small_records()), plugins=[]), ["S"], 2, limit=2, offset=2)
    second = await bfs_query(Graph(MemoryBackend(list(reversed(small_records()))), plugins=[]), ["S"], 2, limit=2,
                             offset=2)
    assert to_output(first.model()) == to_output(second.model())


async def test_multi_seed_union(small_graph):
    result = await bfs_query(small_graph, ["E", "F"], 1)
    assert ids(result) == ["E", "F", "A", "B"]
    assert triples(result) == [("A", "r", "E"), ("B", "r", "F")]


async def test_unknown_seed_is_named_and_others_still_answer(small_graph):
    result = await bfs_query(small_graph, ["S", "nope"], 1)
    assert result.node_count == 4
    assert any("nope" in w and "search_entities" in w for w in result.warnings)
    with pytest.raises(UnknownEntity) as info:
        await bfs_query(small_graph, ["nope"], 1)
    assert info.value.ids == ["nope"] and "search_entities" in str(info.value)


async def test_intersection_k1_and_k2(small_graph):
    one = await intersect_subgraphs(small_graph, ["A", "B"], 1)
    assert ids(one) == ["S"] and one.edges == []
    two = await intersect_subgraphs(small_graph, ["A", "B"], 2)
    assert ids(two) == ["S", "A", "B", "D"]
    assert triples(two) == [("B", "assoc", "S"), ("D", "mentions", "S"), ("S", "assoc", "A")]
    assert two.schema_summary.entity_types_found == ["Disease", "Gene", "Paper"]


async def test_intersection_with_filters(small_graph):
    result = await intersect_subgraphs(small_graph, ["A", "B"], 2, exclude_node_types=["Paper"], topology_only=True)
    assert ids(result) == ["S", "A", "B"]
    assert all(n.metadata is None for n in result.nodes)


async def test_intersection_unknown_seed(small_graph):
    with pytest.raises(UnknownEntity):
        await intersect_subgraphs(small_graph, ["A", "nope"], 1)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"seeds": [], "max_hops": 1}, "at least one seed"),
        ({"seeds": ["S"], "max_hops": 0}, "max_hops must be an integer from 1 to 5"),
        ({"seeds": ["S"], "max_hops": 6}, "max_hops must be an integer from 1 to 5"),
        ({"seeds": ["S"], "max_hops": True}, "max_hops"),
        ({"seeds": ["S"], "max_hops": 1, "limit": -1}, "limit must be an integer >= 0"),
        ({"seeds": ["S"], "max_hops": 1, "offset": -1}, "offset must be an integer >= 0"),
        ({"seeds": ["S"], "max_hops": 1, "min_mentions": -1}, "min_mentions"),
        ({"seeds": [""], "max_hops": 1}, "empty"),
    ],
)
async def test_bfs_argument_bounds(small_graph, kwargs, fragment):
    with pytest.raises(InvalidArgument) as info:
        await bfs_query(small_graph, **kwargs)
    assert fragment in str(info.value)


async def test_intersection_needs_two_seeds_and_k_in_range(small_graph):
    with pytest.raises(InvalidArgument, match="at least 2 distinct seeds"):
        await intersect_subgraphs(small_graph, ["A", "A"], 1)
    with pytest.raises(InvalidArgument, match="k must be"):
        await intersect_subgraphs(small_graph, ["A", "B"], 9)


def hub_graph(leaves: int) -> Graph:
    from conftest import entity, rel

    records = [entity("H", "Hub")] + [entity(f"L{i:02d}", "Leaf") for i in range(leaves)]
    records += [rel("H", "has", f"L{i:02d}") for i in range(leaves)]
    records += [rel(f"L{i:02d}", "next", f"L{(i + 1) % leaves:02d}") for i in range(leaves)]
    return Graph(MemoryBackend(records), plugins=[postprocess])


async def test_hub_edges_are_capped_and_reported():
    result = await bfs_query(hub_graph(10), ["H"], 1, limits=TraversalLimits(max_edges_per_node=4))
    assert ids(result) == ["H", "L00", "L01", "L02", "L03"]
    (cut,) = result.truncated
    assert cut.reason == "max_edges_per_node" and cut.capped_nodes == ["H"]
    assert "6 of their edges were not followed" in cut.detail


async def test_walk_bound_stops_the_traversal_and_says_the_counts_are_lower_bounds():
    result = await bfs_query(hub_graph(10), ["H"], 3, limits=TraversalLimits(max_walk_nodes=4))
    assert result.node_count == 4
    (cut,) = result.truncated
    assert cut.reason == "max_walk_nodes" and "7 further neighbour(s)" in cut.detail
    assert f"at least 11 nodes and {result.edge_count} edges" in cut.detail


async def test_max_nodes_lists_a_page_and_counts_the_whole_traversal():
    result = await bfs_query(hub_graph(10), ["H"], 3, limits=TraversalLimits(max_nodes=4))
    assert (result.node_count, ids(result)) == (11, ["H", "L00", "L01", "L02"])
    (page,) = result.truncated
    assert (page.reason, page.next_offset) == ("page", 4)


async def test_one_hop_call_per_hop_and_nothing_else(small_graph):
    """hop answers the asked entities too, so a traversal sends one call per hop (no get_nodes beside it)."""
    await bfs_query(small_graph, ["S"], 2, topology_only=True)
    assert small_graph.stats.calls == {"hop": 2}
    await bfs_query(small_graph, ["S"], 2)
    full = {"hop": 4, "metadata_for_nodes": 1, "metadata_for_edges": 1}
    assert small_graph.stats.calls == full  # full mode adds one node and one edge metadata call per query


async def test_intersection_walks_every_seed_at_once(small_graph):
    answer = await intersect_subgraphs(small_graph, ["A", "B", "D"], 2, topology_only=True)
    # one hop call per level (the first also checks the seeds), one for the shared nodes' edges, and one per step of
    # the paths back to the seeds (k at most)
    assert small_graph.stats.calls == {"hop": 2 + 1 + 2}
    assert answer.node_ids == ["S", "A", "B", "D"]  # S one hop from each seed; the seeds two from the others
    assert {(p.seed, tuple(p.edges)) for p in answer.paths if p.node == "S"} == {
        ("A", (("S", "assoc", "A"),)),
        ("B", (("B", "assoc", "S"),)),
        ("D", (("D", "mentions", "S"),)),
    }


class CountingBackend(MemoryBackend):
    """The memory backend, counting the metadata it is asked for."""

    asked = 0

    async def metadata_for_nodes(self, entity_ids):
        self.asked += len(entity_ids)
        return await super().metadata_for_nodes(entity_ids)

    async def metadata_for_edges(self, edges):
        self.asked += len(edges)
        return await super().metadata_for_edges(edges)


@pytest.mark.parametrize("max_tokens", [200, 300, 100_000])
async def test_metadata_no_answer_could_hold_is_not_fetched_and_the_fitted_answer_is_the_same(max_tokens):
    from bfsql.server.answers.fitting import AnswerBudget, fit_traversal

    budget = AnswerBudget(max_tokens)
    answers, asked = [], []
    for room in (None, budget):
        backend = CountingBackend(small_records())
        graph = Graph(backend, plugins=[postprocess], cache=None)
        for result in (await bfs_query(graph, ["S"], 2, room=room),
                       await intersect_subgraphs(graph, ["S", "C"], 2, room=room)):
            answers.append(fit_traversal(result, budget))
        asked.append(backend.asked)
    assert answers[:2] == answers[2:]
    assert asked[1] <= asked[0]


async def test_metadata_of_nodes_past_the_room_is_not_fetched():
    from bfsql.server.answers.fitting import AnswerBudget, fit_traversal

    records = [entity("H", "Hub")] + [entity(f"L{i:03d}", "Leaf") for i in range(300)]
    records += [rel("H", "has", f"L{i:03d}") for i in range(300)]
    budget = AnswerBudget(300)  # 900 characters: room for some twenty named stubs
    backend = CountingBackend(records)
    answer = await bfs_query(Graph(backend, plugins=[], cache=None), ["H"], 1, room=budget)
    assert 0 < len(answer.node_metadata) < 40 and backend.asked < 80
    fitted = fit_traversal(answer, budget)
    assert len(fitted["nodes"]) < 40 and fitted["truncated"][-1]["next_offset"] == len(fitted["nodes"])


class CuttingBackend(MemoryBackend):
    """A backend that says it cut the edges of ``C`` (as the SPARQL backend does at its edge limit)."""

    def truncations(self, entity_ids):
        if "C" not in entity_ids:
            return []
        return [Truncation(reason="edge_limit", detail="C: 1 of 9 edges read.", hint="Raise the limit.",
                           capped_nodes=["C"])]


async def test_cuts_the_backend_reports_reach_the_answers_that_touch_them():
    graph = Graph(CuttingBackend(small_records()), plugins=[postprocess], cache=None)
    near = await bfs_query(graph, ["B"], 1)
    assert [t.capped_nodes for t in near.truncated or [] if t.reason == "edge_limit"] == [["C"]]
    far = await bfs_query(graph, ["A"], 1)
    assert not [t for t in far.truncated or [] if t.reason == "edge_limit"]
    both = await intersect_subgraphs(graph, ["B", "D"], 1)
    assert [t.reason for t in both.truncated or []] == ["edge_limit"]


async def test_a_walk_out_of_time_stops_after_a_hop_and_says_its_counts_are_lower_bounds():
    result = await bfs_query(hub_graph(10), ["H"], 3, limits=TraversalLimits(), time_limit=0)
    assert (result.node_count, result.edge_count) == (11, 10)  # the first hop only
    (cut,) = result.truncated
    assert cut.reason == "time_limit" and "after 1 of 3 hops" in cut.detail
    assert "at least 11 nodes and 10 edges" in cut.detail
    shared = await intersect_subgraphs(hub_graph(10), ["L00", "L05"], 3, limits=TraversalLimits(), time_limit=0)
    assert shared.node_count == 1 and "time_limit" in {t.reason for t in shared.truncated}  # H, one hop away
