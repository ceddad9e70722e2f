"""End to end: path_query and search modes through a real MCP client and a `bfsql serve` subprocess.

The graph is the bundled FamPlex demo (genes -isa-> families, parts -partof-> complexes),
served with the default embedder (hashing when no semantic embedder is installed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


def stdio(*args: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", *args],
                                        env=dict(os.environ)))


def data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def steps(result: dict) -> list[str]:
    return [s.get("entity") or s["edge"] for s in result["path"]]


async def test_path_query_is_listed_read_only_with_its_language_and_schema():
    async with stdio() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        tool = tools["path_query"]
        assert tool.annotations.read_only_hint is True and tool.annotations.idempotent_hint is True
        assert tool.annotations.destructive_hint is False
        assert set(tool.input_schema["properties"]) == {
            "query", "k", "threshold", "max_results", "with_metadata", "max_tokens"}
        assert tool.input_schema["required"] == ["query"]
        assert '-[terms]->' in tool.description and "type:" in tool.description and "[*]" in tool.description
        assert "Valid node_types for this graph: Complex, Family, Gene" in tool.description
        assert tool.output_schema is not None
        assert "path_query" in client.instructions
        assert set(tools["search_entities"].input_schema["properties"]) == {
        "query", "node_types", "mode", "alpha", "limit", "offset", "min_similarity"}


async def test_multi_hop_and_reverse_shapes_of_the_seed():
    async with stdio() as client:
        answer = data(await client.call_tool(
            "path_query", {"query": '"BRAF" -[isa]-> type:Family <-[isa]- type:Gene'}))
        assert [r["entity"]["id"] for r in answer["results"]] == ["HGNC:ARAF", "HGNC:RAF1"]
        first = answer["results"][0]
        assert steps(first) == ["HGNC:BRAF", "isa", "FPLX:RAF", "isa", "HGNC:ARAF"]
        assert first["path"][1] == {"edge": "isa", "direction": "outgoing"}  # exact: no score, it is 1
        assert first["path"][3]["direction"] == "incoming"
        assert first["entity"] == {"id": "HGNC:ARAF", "entity_type": "Gene", "name": "ARAF"}  # no metadata unasked
        full = data(await client.call_tool("path_query", {
            "query": '"BRAF" -[isa]-> type:Family <-[isa]- type:Gene', "with_metadata": True}))
        assert full["results"][0]["entity"]["metadata"]["name"] == "ARAF"
        assert first["score"] == 1.0
        meta = answer["metadata"]
        assert meta["hops"] == 2 and meta["k"] == 3 and meta["threshold"] == 0.5 and meta["max_results"] == 20
        assert meta["total_candidates_explored"] > 0 and meta["execution_time_ms"] >= 0
        assert meta["entry_points"][0]["entity"] == "HGNC:BRAF"

        exact = data(await client.call_tool("path_query", {"query": "@FPLX:RAF <-[isa]- type:gene", "k": 5}))
        assert {r["entity"]["id"] for r in exact["results"]} == {"HGNC:ARAF", "HGNC:BRAF", "HGNC:RAF1"}

        wildcard = data(await client.call_tool("path_query", {"query": '@FPLX:RAF <-[*]- "BRAF"', "k": 1}))
        assert [r["entity"]["id"] for r in wildcard["results"]] == ["HGNC:BRAF"]


async def test_edge_cases_explain_themselves():
    async with stdio() as client:
        nothing = data(await client.call_tool("path_query", {"query": '"xyzzy qwv" -[*]-> type:Gene'}))
        assert nothing["results"] == [] and nothing["metadata"]["error"] == "no_entry_point"
        assert "xyzzy qwv" in nothing["metadata"]["message"]

        stopped = data(await client.call_tool("path_query", {"query": "@HGNC:BRAF -[teleported]-> type:Family"}))
        meta = stopped["metadata"]
        assert stopped["results"] == [] and meta["stopped_at_hop"] == 1
        assert meta["reason"] == "no_matching_relations" and meta["available_relations"] == ["isa"]
        assert meta["partial_path"] == [{"entity": "HGNC:BRAF", "label": "BRAF"}]

        wrong_type = data(await client.call_tool("path_query", {"query": "@HGNC:BRAF -[isa]-> type:Complex"}))
        assert wrong_type["results"] == [] and wrong_type["metadata"]["reason"] == "no_entities_match_filter"

        error = await client.call_tool("path_query", {"query": '"BRAF" -[]-> type:Family'})
        assert error.is_error
        text = error.content[0].text
        assert "position 9" in text and "empty relation list" in text and "[*]" in text and "Traceback" not in text

        unknown_type = await client.call_tool("path_query", {"query": '"BRAF" -[isa]-> type:Planet'})
        assert unknown_type.is_error and "Complex, Family, Gene" in unknown_type.content[0].text

        bad_k = await client.call_tool("path_query", {"query": '"BRAF"', "k": 0})
        assert bad_k.is_error and "k must be an integer" in bad_k.content[0].text
        assert data(await client.call_tool("describe_schema", {}))["predicates"] == ["isa", "partof"]


async def test_closures_in_one_call():
    """Ancestors and descendants through a variable-length edge, each result with its depth."""
    async with stdio() as client:
        tool = {t.name: t for t in (await client.list_tools()).tools}["path_query"]
        assert "-[isa*]->" in tool.description and tool.input_schema["properties"]["k"].get("default") is None
        up = data(await client.call_tool("path_query", {"query": "@HGNC:CACNA1A -[isa*]->"}))
        assert [(r["entity"]["id"], r["depth"]) for r in up["results"]] == [
            ("FPLX:CACNA1", 1), ("FPLX:CACN", 2), ("FPLX:Calcium_channels", 3), ("FPLX:Voltage_gated_ion_channels", 3),
            ("FPLX:Cation_channels", 4)]
        assert steps(up["results"][-1]) == ["HGNC:CACNA1A", "isa", "FPLX:CACNA1", "isa", "FPLX:CACN", "isa",
                                            "FPLX:Calcium_channels", "isa", "FPLX:Cation_channels"]
        assert up["metadata"]["total_results"] == 5 and "truncated" not in up["metadata"]

        # FPLX:MAPK's families (ERK, JNK, p38 …) at depth 1, their genes at depth 2
        down = data(await client.call_tool(
            "path_query", {"query": "@FPLX:MAPK <-[isa*]- type:Gene", "max_results": 50}))
        genes = {r["entity"]["id"]: r["depth"] for r in down["results"]}
        assert len(genes) == down["metadata"]["total_results"] == 9 and set(genes.values()) == {2}
        assert {"HGNC:MAPK1", "HGNC:MAPK3"} <= set(genes)
        shallow = data(await client.call_tool("path_query", {"query": "@FPLX:MAPK <-[isa*1]-", "max_results": 50}))
        assert {r["depth"] for r in shallow["results"]} == {1} and "FPLX:ERK" in {
            r["entity"]["id"] for r in shallow["results"]}

        refused = await client.call_tool("path_query", {"query": "@FPLX:MAPK <-[*2]-"})
        assert refused.is_error and "takes no quantifier" in refused.content[0].text


async def test_search_modes_over_the_demo():
    # Without a semantic embedder installed the demo store has no vectors: search is lexical, and honest.
    async with stdio() as client:
        default = data(await client.call_tool("search_entities", {"query": "RAF"}))["items"]
        assert default[0]["id"] == "FPLX:RAF" and default[0]["rankers"] == ["lexical"] and default[0]["score"] == 1.0
        exact = data(await client.call_tool("search_entities", {"query": "braf", "mode": "exact"}))
        assert [(h["id"], h["score"], h["rankers"]) for h in exact["items"]] == [("HGNC:BRAF", 1.0, ["exact"])]
        assert exact["page"] == {"offset": 0, "returned": 1, "total": 1}
        assert data(await client.call_tool("search_entities", {"query": "xyzzy nonsense query"})) == {
            "page": {"offset": 0, "returned": 0, "total": 0}, "items": []}
        vector = await client.call_tool("search_entities", {"query": "BRAF", "mode": "vector"})
        assert vector.is_error and "Available modes: exact, lexical" in vector.content[0].text
        for junk in ("!!!", "\x00", "..."):
            refused = await client.call_tool("search_entities", {"query": junk})
            assert refused.is_error and "no letter or digit" in refused.content[0].text


async def test_answer_budget_applies_to_path_answers():
    async with stdio("--max-tokens", "600") as client:
        arguments = {"query": "@FPLX:MAPK <-[*]-", "max_results": 50, "with_metadata": True}
        answer = data(await client.call_tool("path_query", arguments))
        assert len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 600 * 3
        assert answer["metadata"]["truncated"]
        smaller = data(await client.call_tool("path_query", {**arguments, "max_tokens": 250}))
        assert len(json.dumps(smaller, separators=(",", ":"), ensure_ascii=False)) <= 250 * 3
        assert any(n["reason"] == "max_tokens" for n in smaller["metadata"]["truncated"])


def test_bfsql_path_command():
    done = subprocess.run([sys.executable, "-m", "bfsql", "path", '"BRAF" -[isa]-> type:Family <-[isa]- type:Gene'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 of 2 result(s)" in done.stdout
    assert "BRAF (HGNC:BRAF) -isa-> RAF Family (FPLX:RAF) <-isa- ARAF (HGNC:ARAF)" in done.stdout
    closure = subprocess.run([sys.executable, "-m", "bfsql", "path", "@HGNC:BRAF -[isa*]->"],
                             capture_output=True, text=True, timeout=120)
    assert closure.returncode == 0, closure.stderr
    assert "FPLX:MAP3K  [Family]" in closure.stdout and "depth=2" in closure.stdout
    as_json = subprocess.run([sys.executable, "-m", "bfsql", "path", "@HGNC:BRAF -[member]->", "--json"],
                             capture_output=True, text=True, timeout=120)
    assert json.loads(as_json.stdout)["metadata"]["available_relations"] == ["isa"]
    bad = subprocess.run([sys.executable, "-m", "bfsql", "path", "@HGNC:BRAF -[]->"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "empty relation list" in bad.stderr
    embedder = subprocess.run([sys.executable, "-m", "bfsql", "path", "@HGNC:BRAF", "--embedder", "nope"],
                              capture_output=True, text=True, timeout=120)
    assert embedder.returncode == 2 and "unknown embedder 'nope'" in embedder.stderr


def test_bfsql_query_search_is_honest():
    """Junk and nonsense at the command line (19.9): a clean error for junk, no items for nonsense."""
    bfsql = [sys.executable, "-m", "bfsql", "query", "search_entities"]
    for junk in ("query=!!!", "query=..."):
        done = subprocess.run([*bfsql, junk], capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and "no letter or digit" in done.stderr and "Traceback" not in done.stderr
    nothing = subprocess.run([*bfsql, "query=xyzzy nonsense query", "--json"], capture_output=True, text=True,
                             timeout=120)
    assert nothing.returncode == 0, nothing.stderr
    assert json.loads(nothing.stdout) == {"page": {"offset": 0, "returned": 0, "total": 0}, "items": []}
