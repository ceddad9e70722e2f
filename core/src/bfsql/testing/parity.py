"""Parity: the same traversal calls on two graphs over the standard graph give the same answers.

Each backend's conformance suite runs :func:`assert_parity` against the memory
backend, the reference. Besides the calls whose answers are known by hand, the
canned list covers calls nobody computed by hand (3-hop surveys from every entity,
intersections of many pairs), where agreeing with the reference is the check.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bfsql.errors import BfsqlError
from bfsql.graph import Graph
from bfsql.testing.answers import run_traversal
from bfsql.testing.idmap import IdMap, IdMapLike
from bfsql.testing.standard_graph import (
    ASPIRIN,
    GASTRIC,
    MDM2,
    ORPHAN,
    PMC002,
    STANDARD_IDS,
    TP53,
    TRAVERSALS,
    UNKNOWN,
)

__all__ = ["PARITY_CALLS", "ParityCall", "assert_parity"]


@dataclass(frozen=True)
class ParityCall:
    """One traversal call in standard ids."""

    tool: Literal["bfs_query", "intersect_subgraphs"]
    arguments: Mapping[str, Any]
    max_edges_per_node: int | None = None
    order_sensitive: bool = False
    """The answer depends on id order, so it is compared only under order-preserving id maps."""


PARITY_CALLS: tuple[ParityCall, ...] = (
    *(ParityCall(c.tool, c.arguments, c.max_edges_per_node, c.order_sensitive) for c in TRAVERSALS),
    *(ParityCall("bfs_query", {"seeds": [i], "max_hops": 3}) for i in STANDARD_IDS),
    ParityCall("bfs_query", {"seeds": list(STANDARD_IDS), "max_hops": 1, "topology_only": True}),
    ParityCall("bfs_query", {"seeds": [TP53], "max_hops": 3, "exclude_node_types": ["Gene"]}),
    ParityCall("bfs_query", {"seeds": [MDM2], "max_hops": 2, "min_mentions": 10, "node_types": ["Drug"]}),
    ParityCall("bfs_query", {"seeds": [TP53], "max_hops": 2}, max_edges_per_node=2, order_sensitive=True),
    ParityCall("bfs_query", {"seeds": [TP53], "max_hops": 2, "limit": 4, "offset": 4}, order_sensitive=True),
    *(
        ParityCall("intersect_subgraphs", {"seeds": [a, b], "k": k})
        for a, b in itertools.combinations((TP53, MDM2, GASTRIC, PMC002, ASPIRIN, ORPHAN), 2)
        for k in (2, 3)
    ),
    ParityCall("intersect_subgraphs", {"seeds": [MDM2, GASTRIC, PMC002], "k": 2, "predicates": ["MENTIONS"]}),
    ParityCall("bfs_query", {"seeds": [UNKNOWN], "max_hops": 1}),
)
"""The canned calls of :func:`assert_parity`."""

Summary = tuple[str, Any]


async def _summary(graph: Graph, call: ParityCall, ids: IdMap) -> Summary:
    """What must agree: node and edge sets (with full/stub), counts; or the error's type."""
    try:
        answer = await run_traversal(graph, call.tool, call.arguments, ids, call.max_edges_per_node)
    except BfsqlError as exc:
        return ("error", type(exc).__name__)
    nodes = {(ids.to_standard(n["id"]), n["entity_type"], "metadata" in n) for n in answer["nodes"]}
    edges = {(ids.triple(e["subject"], e["predicate"], e["object"]), "metadata" in e) for e in answer["edges"]}
    return ("answer", (nodes, edges, answer["node_count"], answer["edge_count"]))


def _difference(left: Summary, right: Summary) -> str:
    if left[0] != right[0] or left[0] == "error":
        return f"{left!r} != {right!r}"
    (ln, le, *lc), (rn, re, *rc) = left[1], right[1]
    parts = [
        f"nodes only in A: {sorted(ln - rn)}",
        f"nodes only in B: {sorted(rn - ln)}",
        f"edges only in A: {sorted(le - re)}",
        f"edges only in B: {sorted(re - le)}",
        f"counts A {lc} B {rc}",
    ]
    return "; ".join(parts)


async def assert_parity(
    graph_a: Graph,
    graph_b: Graph,
    id_map_a: IdMapLike = None,
    id_map_b: IdMapLike = None,
    calls: tuple[ParityCall, ...] = PARITY_CALLS,
) -> int:
    """Run ``calls`` on both graphs (loaded with the standard graph) and assert the same answers.

    Answers are compared in standard ids: the same nodes (id, type, full or stub),
    the same edges (triple, full or bare), the same counts, or the same error type.
    Order-sensitive calls are left out unless both id maps preserve id order.
    Returns the number of calls compared.
    """
    map_a, map_b = IdMap.of(id_map_a), IdMap.of(id_map_b)
    with_order = map_a.preserves_order and map_b.preserves_order
    compared = 0
    for call in calls:
        if call.order_sensitive and not with_order:
            continue
        left = await _summary(graph_a, call, map_a)
        right = await _summary(graph_b, call, map_b)
        assert left == right, f"{call.tool}({dict(call.arguments)}) differs: {_difference(left, right)}"
        compared += 1
    return compared
