"""Graded fitting on hand-made answers whose sizes are worked out below.

The answer is a seed S with four neighbours N1..N4 (``S -r-> Ni``), each with one long
description. Sizes in compact JSON (characters):

* a bare stub ``{"id":"N1","entity_type":"T"}``: 31, plus a separator: 32;
* a named stub adds ``,"name":"n1"``: 12 more, 44 in all;
* a full node adds ``,"metadata":{"name":"n1","description":"<D chars>"}``: 44 + 16 + 28 + D;
* an edge ``{"subject":"S","predicate":"r","object":"N1"}``: 46, plus a separator: 47
  (with metadata ``{"confidence":0.5}``: 66 more).
"""

from __future__ import annotations

import pytest

from bfsql.budgets import CHARS_PER_TOKEN, MIN_MAX_TOKENS
from bfsql.engine.answer import Detail, Traversal
from bfsql.server.answers.fitting import AnswerBudget, clip_metadata, compact_json, fit_traversal

IDS = ["S", "N1", "N2", "N3", "N4"]


def answer(description: int = 2000, offset: int = 0) -> Traversal:
    return Traversal(
        tool="bfs_query",
        seeds=["S"],
        hops=1,
        node_ids=list(IDS),
        types=dict.fromkeys(IDS, "T"),
        names={i: i.lower() for i in IDS},
        distance={i: 0 if i == "S" else 1 for i in IDS},
        triples=[("S", "r", i) for i in IDS[1:]],
        node_count=5,
        edge_count=4,
        types_seen=["T"],
        predicates_seen=["r"],
        entity_type_counts={"T": 5},
        predicate_counts={"r": 4},
        node_metadata={i: {"name": i.lower(), "description": i * description} for i in IDS},
        edge_metadata={("S", "r", i): {"confidence": 0.5} for i in IDS[1:]},
        detail=Detail(),
        offset=offset,
    )


def shown(fitted: dict) -> dict[str, str]:
    """How each node is shown: full, clipped, named or bare."""
    kinds = {}
    for node in fitted["nodes"]:
        metadata = node.get("metadata")
        kinds[node["id"]] = (
            "full" if metadata and "_clipped" not in metadata else
            "clipped" if metadata else "named" if "name" in node else "bare"
        )
    return kinds


def size(fitted: dict) -> int:
    return len(compact_json(fitted))


def test_a_small_answer_is_whole():
    fitted = fit_traversal(answer(description=10), AnswerBudget(2000))
    assert set(shown(fitted).values()) == {"full"}
    assert "truncated" not in fitted
    assert len(fitted["edges"]) == 4 and all("metadata" in e for e in fitted["edges"])


def test_the_schema_summary_shows_a_plugins_edit():
    """schema_summary is made when first asked (a process_result plugin may edit it); else read from the lists."""
    assert fit_traversal(page_of_more(), AnswerBudget(20000))["schema_summary"] == {
        "entity_types_found": ["T"], "predicates_found": ["r"], "entity_type_counts": {"T": 9},
        "predicate_counts": {"r": 8}}
    edited = answer()
    edited.schema_summary.predicates_found.append("s")
    assert fit_traversal(edited, AnswerBudget(20000))["schema_summary"]["predicates_found"] == ["r", "s"]


def test_the_counts_come_only_when_the_answer_does_not_list_everything():
    """An answer that lists every node and edge leaves the counts out (they are its lists, counted); one that
    lists fewer (a page, a cut to the budget, limit=0) gives them, for the whole traversal."""
    whole = fit_traversal(answer(), AnswerBudget(20000))
    assert (len(whole["nodes"]), len(whole["edges"])) == (5, 4)
    assert whole["schema_summary"] == {"entity_types_found": ["T"], "predicates_found": ["r"]}
    cut = fit_traversal(answer(description=10), AnswerBudget(MIN_MAX_TOKENS))
    assert len(cut["nodes"]) < 5 and cut["truncated"]
    assert cut["schema_summary"]["entity_type_counts"] == {"T": 5}
    assert cut["schema_summary"]["predicate_counts"] == {"r": 4}
    page = fit_traversal(page_of_more(), AnswerBudget(20000))
    assert len(page["nodes"]) == 5 and page["schema_summary"]["entity_type_counts"] == {"T": 9}


def page_of_more() -> Traversal:
    """The first page (five nodes, four edges) of a traversal of nine nodes and eight edges."""
    page = answer()
    page.node_count, page.edge_count = 9, 8
    page.entity_type_counts, page.predicate_counts = {"T": 9}, {"r": 8}
    return page


def test_long_values_are_clipped_from_the_farthest_node_back():
    # five full nodes of ~2,100 characters do not fit 3,000 tokens (9,000 characters); clipped ones (~400) do
    fitted = fit_traversal(answer(), AnswerBudget(3000))
    kinds = shown(fitted)
    assert kinds["S"] == "full"  # the seed keeps its whole metadata longest
    assert list(kinds.values()).count("clipped") >= 1 and "named" not in kinds.values()
    clipped = [n for n in fitted["nodes"] if "_clipped" in (n.get("metadata") or {})]
    assert all(n["metadata"]["_clipped"] == {"description": 2000 * len(n["id"])} for n in clipped)
    order = [kinds[i] for i in IDS]
    assert order == sorted(order, key=["full", "clipped"].index)  # nearer nodes keep more
    note = next(n for n in fitted["truncated"] if n["reason"] == "clipped_values")
    assert note["count"] == order.count("clipped")
    assert 0.75 * 9000 <= size(fitted) <= 9000


def test_then_nodes_become_named_stubs_and_their_edges_bare():
    # about 1,500 characters: no room for five clipped descriptions, room for named stubs and one clipped seed
    fitted = fit_traversal(answer(), AnswerBudget(500))
    kinds = shown(fitted)
    assert kinds["S"] in ("full", "clipped")
    assert {kinds[i] for i in IDS[1:]} <= {"clipped", "named"} and "named" in kinds.values()
    for edge in fitted["edges"]:
        assert ("metadata" in edge) == (kinds[edge["object"]] != "named")
    assert next(n for n in fitted["truncated"] if n["reason"] == "named_stubs")["count"] >= 1
    assert size(fitted) <= 1500


def test_the_farthest_tenth_become_bare_stubs_before_more_is_cut():
    # 70 nodes and their 69 edges: ~6,500 characters as named stubs, ~5,900 as bare ones; the budget is 6,900
    ids = ["S"] + [f"N{i:02d}" for i in range(69)]
    big = answer(description=10)
    big.node_ids = ids
    big.types = dict.fromkeys(ids, "T")
    big.names = {i: i.lower() + "-name" for i in ids}
    big.triples = [("S", "r", i) for i in ids[1:]]
    big.node_metadata = {i: {"name": big.names[i]} for i in ids}
    big.edge_metadata = {}
    big.node_count, big.edge_count = 70, 69
    fitted = fit_traversal(big, AnswerBudget(2300))
    kinds = list(shown(fitted).values())
    bare = kinds.count("bare")
    assert bare <= len(kinds) // 10 + 1, kinds  # nine in ten keep their names
    assert kinds[len(kinds) - bare:] == ["bare"] * bare  # the bare ones, if any, are the farthest
    assert len(kinds) < 70, "rather than most becoming ids without names, the farthest are cut"
    assert size(fitted) <= 6900


def test_only_then_nodes_are_cut_with_the_offset_to_continue():
    later = answer(offset=40)
    later.seeds = ["SEED"]  # a later page: the seed is on the first
    fitted = fit_traversal(later, AnswerBudget(220))  # 660 characters
    kept = len(fitted["nodes"])
    assert 0 < kept < 5
    assert set(shown(fitted).values()) == {"named"}  # fewer nodes with names, rather than more bare ids
    note = next(n for n in fitted["truncated"] if n["reason"] == "max_tokens")
    assert note["next_offset"] == 40 + kept and note["count"] == 5 - kept
    assert size(fitted) <= 660


def test_the_seed_keeps_detail_longest():
    fitted = fit_traversal(answer(), AnswerBudget(500))  # 1,500 characters: all five as named stubs, or S clipped
    assert shown(fitted) == {"S": "clipped", "N1": "named", "N2": "named", "N3": "named", "N4": "named"}
    assert size(fitted) <= 1500
    for tokens in (220, 300, 400, 600, 800):  # no node keeps detail the seed lost
        kinds = shown(fit_traversal(answer(), AnswerBudget(tokens)))
        assert kinds["S"] == "clipped" or set(kinds.values()) <= {"named", "bare"}, (tokens, kinds)


def test_a_seed_whose_metadata_was_not_fetched_stays_a_stub():
    """Two seeds, the second without metadata (no room was left to fetch it): the first keeps its detail."""
    two = answer()
    two.seeds = ["S", "N4"]
    del two.node_metadata["N4"]
    for tokens in (220, 500, 800):
        kinds = shown(fit_traversal(two, AnswerBudget(tokens)))
        assert kinds.get("N4", "cut") in {"named", "bare", "cut"}, (tokens, kinds)
        assert kinds["S"] == "clipped" or set(kinds.values()) <= {"named", "bare"}, (tokens, kinds)


def test_named_stubs_can_be_switched_off():
    fitted = fit_traversal(answer(), AnswerBudget(500, named_stubs=False))
    assert all("name" not in n for n in fitted["nodes"])


@pytest.mark.parametrize("tokens", [300, 1000, 3000, 8000])
def test_a_cut_answer_uses_at_least_three_quarters_of_its_budget(tokens):
    ids = ["S"] + [f"N{i:03d}" for i in range(300)]
    big = answer()
    big.node_ids = ids
    big.types = dict.fromkeys(ids, "T")
    big.names = {i: i.lower() for i in ids}
    big.triples = [("S", "r", i) for i in ids[1:]]
    big.node_metadata = {i: {"name": i.lower(), "description": "d" * 500, "xrefs": [f"X:{n}" for n in range(40)]}
                         for i in ids}
    big.edge_metadata = {t: {"confidence": 0.5} for t in big.triples}
    big.node_count, big.edge_count = 301, 300
    fitted = fit_traversal(big, AnswerBudget(tokens))
    chars = tokens * CHARS_PER_TOKEN
    assert 0.75 * chars <= size(fitted) <= chars


def test_clipping_keeps_types_and_names_each_clipped_field():
    clipped = clip_metadata({"name": "x", "text": "y" * 1000, "list": list(range(50)), "n": 5})
    assert clipped["name"] == "x" and clipped["n"] == 5
    assert clipped["text"] == "y" * 300 + "…" and clipped["list"] == list(range(10))
    assert clipped["_clipped"] == {"text": 1000, "list": 50}


@pytest.mark.parametrize("room", [60, 200, 10_000])
async def test_edges_owned_are_the_same_with_the_hops_cross_edge_index(room):
    from bfsql import Graph
    from bfsql.backends.memory import MemoryBackend
    from bfsql.engine import bfs_query
    from bfsql.server.answers.fitting import _owners

    from conftest import entity, rel

    # S -> A, B, C; A-B and B-C are found at hop 2 between nodes reached at hop 1; C -> D is new at hop 2
    records = [entity(i, "T", name=i.lower()) for i in "SABCDE"] + [
        rel("S", "r", "A"), rel("S", "r", "B"), rel("S", "r", "C"), rel("A", "r", "B"), rel("B", "r", "C"),
        rel("C", "r", "D"), rel("D", "r", "E"), rel("E", "r", "A"),
    ]
    answer = await bfs_query(Graph(MemoryBackend(records)), ["S"], 3)
    assert answer.cross_by is not None and answer.cross_by[1]  # hop 2 found edges among hop-1 nodes
    with_index = _owners(answer, room)
    answer.cross_by = None
    assert [sorted(o) for o in with_index] == [sorted(o) for o in _owners(answer, room)]
