"""Running calls on a graph in standard ids, and checking answers against the expected ones."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from bfsql.engine import TraversalLimits, bfs_query, intersect_subgraphs
from bfsql.graph import Graph
from bfsql.models import to_output
from bfsql.testing.idmap import IdMap
from bfsql.testing.standard_graph import EXPECTED_NODE_METADATA, NODE_TYPES, TraversalCase

__all__ = [
    "backend_arguments",
    "check_edge_metadata",
    "check_node_metadata",
    "check_provenance",
    "check_traversal",
    "run_traversal",
    "same_value",
]

UNORDERED_KEYS = frozenset({"synonyms", "source_documents"})
"""List-valued metadata whose order a store need not keep."""


def same_value(actual: Any, expected: Any, key: str = "") -> bool:
    """Equality with a tolerance for floats and, for :data:`UNORDERED_KEYS`, without list order."""
    if isinstance(expected, float) and isinstance(actual, int | float) and not isinstance(actual, bool):
        return math.isclose(actual, expected, rel_tol=1e-6)
    if key in UNORDERED_KEYS and isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return sorted(actual) == sorted(expected)
    return bool(actual == expected)


def check_node_metadata(metadata: Mapping[str, Any], expected: Mapping[str, Any], where: str) -> None:
    """Every expected key is in ``metadata`` with the expected value."""
    for key, value in expected.items():
        assert key in metadata, f"{where}: metadata lacks {key!r} (expected {value!r}); got {dict(metadata)!r}"
        got = metadata[key]
        assert same_value(got, value, key), f"{where}: metadata[{key!r}] is {got!r}, expected {value!r}"


def check_edge_metadata(metadata: Mapping[str, Any], expected: Mapping[str, Any], where: str) -> None:
    """Like :func:`check_node_metadata`, but an empty ``source_documents`` may also be left out."""
    present = {k: v for k, v in expected.items() if not (k == "source_documents" and v == [] and k not in metadata)}
    check_node_metadata(metadata, present, where)


def check_provenance(metadata: Mapping[str, Any], expected: tuple[dict[str, Any], ...], where: str) -> None:
    """``metadata["provenance"]`` holds exactly the expected evidence entries, in any order."""
    entries = metadata.get("provenance") or []
    assert isinstance(entries, list), f"{where}: provenance must be a list, got {type(entries).__name__}"
    assert len(entries) == len(expected), f"{where}: {len(entries)} provenance entries, expected {len(expected)}"
    unmatched = list(entries)
    for want in expected:
        match = next((e for e in unmatched if all(same_value(e.get(k), v, k) for k, v in want.items())), None)
        assert match is not None, f"{where}: no provenance entry matches {want!r}; got {entries!r}"
        unmatched.remove(match)


def backend_arguments(arguments: Mapping[str, Any], ids: IdMap) -> dict[str, Any]:
    """Tool arguments with their seeds spelled in the backend's ids."""
    mapped = dict(arguments)
    mapped["seeds"] = [ids.to_backend(seed) for seed in arguments["seeds"]]
    return mapped


async def run_traversal(
    graph: Graph, tool: str, arguments: Mapping[str, Any], ids: IdMap, max_edges_per_node: int | None = None
) -> dict[str, Any]:
    """Run bfs_query or intersect_subgraphs through the engine; the answer as the tool would serialise it."""
    limits = TraversalLimits() if max_edges_per_node is None else TraversalLimits(max_edges_per_node=max_edges_per_node)
    mapped = backend_arguments(arguments, ids)
    if tool == "bfs_query":
        return to_output((await bfs_query(graph, **mapped, limits=limits)).model())
    return to_output((await intersect_subgraphs(graph, **mapped, limits=limits)).model())


def check_traversal(case: TraversalCase, answer: Mapping[str, Any], ids: IdMap) -> None:
    """Compare a serialised traversal answer, key by key, with the hand-computed one."""
    where = case.name
    seeds = [ids.to_backend(s) for s in dict.fromkeys(case.arguments["seeds"])]
    assert answer["seeds"] == seeds, f"{where}: seeds {answer['seeds']!r}, expected {seeds!r}"
    _check_nodes(case, answer["nodes"], ids)
    _check_edges(case, answer["edges"], ids)
    assert (answer["node_count"], answer["edge_count"]) == (case.node_count, case.edge_count), (
        f"{where}: counts {(answer['node_count'], answer['edge_count'])}, expected {(case.node_count, case.edge_count)}"
    )
    _check_schema_summary(case, answer)
    _check_truncation(case, answer.get("truncated") or [], ids)
    warnings = answer.get("warnings") or []
    assert len(warnings) == case.warnings, f"{where}: warnings {warnings!r}, expected {case.warnings}"


def _check_nodes(case: TraversalCase, answer_nodes: list[dict[str, Any]], ids: IdMap) -> None:
    """The answer's nodes: the expected ids (in order when the ids keep it), types, names, and which are stubs."""
    where = case.name
    nodes = [ids.to_standard(n["id"]) for n in answer_nodes]
    if ids.preserves_order:
        assert nodes == list(case.nodes), f"{where}: nodes {nodes!r}, expected {list(case.nodes)!r}"
    else:
        assert sorted(nodes) == sorted(case.nodes), f"{where}: nodes {nodes!r}, expected {list(case.nodes)!r}"
    for node_id, node in zip(nodes, answer_nodes, strict=True):
        assert node["entity_type"] == NODE_TYPES[node_id], f"{where}: {node_id} has type {node['entity_type']!r}"
        if "metadata" in node:
            expected_name = EXPECTED_NODE_METADATA[node_id]["name"]
            assert node["metadata"].get("name") == expected_name, f"{where}: full node {node_id} lacks its name"
    stubs = {node_id for node_id, node in zip(nodes, answer_nodes, strict=True) if "metadata" not in node}
    assert stubs == set(case.stub_nodes), f"{where}: stub nodes {sorted(stubs)}, expected {sorted(case.stub_nodes)}"


def _check_edges(case: TraversalCase, answer_edges: list[dict[str, Any]], ids: IdMap) -> None:
    """The answer's edges: the expected triples, which are bare, and no provenance left in their metadata."""
    where = case.name
    triples = [ids.triple(e["subject"], e["predicate"], e["object"]) for e in answer_edges]
    assert sorted(triples) == sorted(case.edges), f"{where}: edges {sorted(triples)}, expected {sorted(case.edges)}"
    bare = {t for t, e in zip(triples, answer_edges, strict=True) if "metadata" not in e}
    assert bare == set(case.bare_edges), f"{where}: bare edges {sorted(bare)}, expected {sorted(case.bare_edges)}"
    for triple, edge in zip(triples, answer_edges, strict=True):
        if "metadata" in edge:
            assert "provenance" not in edge["metadata"], f"{where}: provenance of {triple} not stripped"


def _check_schema_summary(case: TraversalCase, answer: Mapping[str, Any]) -> None:
    """The answer's schema summary: the types and predicates found, and their counts (or its lists, when complete)."""
    where = case.name
    summary = answer["schema_summary"]
    assert summary["entity_types_found"] == list(case.entity_types_found), f"{where}: {summary!r}"
    assert summary["predicates_found"] == list(case.predicates_found), f"{where}: {summary!r}"
    listed_all = len(answer["nodes"]) == answer["node_count"] > 0 and len(answer["edges"]) == answer["edge_count"]
    if listed_all and "entity_type_counts" not in summary:
        # a document that lists every node and edge leaves the counts out: they are its lists, counted
        assert "predicate_counts" not in summary, f"{where}: {summary!r}"
        assert Counter(n["entity_type"] for n in answer["nodes"]) == case.entity_type_counts, f"{where}"
        assert Counter(e["predicate"] for e in answer["edges"]) == case.predicate_counts, f"{where}"
    else:
        assert summary.get("entity_type_counts") == dict(case.entity_type_counts), f"{where}: {summary!r}"
        assert summary.get("predicate_counts") == dict(case.predicate_counts), f"{where}: {summary!r}"


def _check_truncation(case: TraversalCase, truncated: list[dict[str, Any]], ids: IdMap) -> None:
    """The answer's truncation entries: their reasons in order, the next page's offset, the capped nodes."""
    where = case.name
    assert [t["reason"] for t in truncated] == list(case.truncated), f"{where}: truncated {truncated!r}"
    for entry in truncated:
        if entry["reason"] == "page":
            assert entry.get("next_offset") == case.next_offset, f"{where}: {entry!r}"
        if entry["reason"] == "max_edges_per_node":
            capped = [ids.to_standard(i) for i in entry.get("capped_nodes") or []]
            assert capped == list(case.capped_nodes), f"{where}: capped nodes {capped}"
