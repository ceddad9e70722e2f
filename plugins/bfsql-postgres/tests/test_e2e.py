"""End to end: ``bfsql serve --backend postgres`` as a subprocess, driven by the official MCP client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.standard_graph import CTNNB1, GASTRIC, LFS, MDM2, MERGED, TP53


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BFSQL_POSTGRES_") and k != "DATABASE_URL"}
    return {**env, **extra}


def data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_serve_with_database_url_answers_an_mcp_client(standard_dsn: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bfsql", "serve", "--backend", "postgres", "--description", "The standard graph in PostgreSQL."],
        env=server_env(DATABASE_URL=standard_dsn),
    )
    async with Client(params) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"describe_schema", "search_entities", "bfs_query", "describe_entity", "describe_entities",
                "intersect_subgraphs"} <= set(tools)
        assert "Valid predicates for this graph: ASSOCIATED_WITH" in tools["bfs_query"].description

        schema = data(await client.call_tool("describe_schema", {}))
        assert schema["graph_description"] == "The standard graph in PostgreSQL."
        assert schema["entity_types"] == ["Disease", "Drug", "Gene", "Paper"]

        hits = data(await client.call_tool("search_entities", {"query": "p53"}))["items"]
        assert hits[0]["id"] == TP53 and MERGED not in [h["id"] for h in hits]

        survey = data(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 1, "topology_only": True}))
        assert {"subject": TP53, "predicate": "REGULATES", "object": MDM2} in survey["edges"]
        assert all("metadata" not in n for n in survey["nodes"])

        full = data(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 1, "node_types": ["Disease"]}))
        diseases = {n["id"]: n for n in full["nodes"] if n["entity_type"] == "Disease"}
        assert set(diseases) == {LFS, GASTRIC} and diseases[LFS]["metadata"]["name"] == "Li-Fraumeni syndrome"

        shared = data(await client.call_tool("intersect_subgraphs", {"seeds": [TP53, GASTRIC], "k": 1}))
        assert {n["id"] for n in shared["nodes"]} == {TP53, GASTRIC, CTNNB1}  # the triangle

        entity = data(await client.call_tool("describe_entity", {"id": TP53}))
        assert entity["name"] == "TP53" and "embedding" not in json.dumps(entity)

        missing = await client.call_tool("describe_entity", {"id": MERGED})
        assert missing.is_error


def test_serve_refuses_a_database_without_the_schema(scratch_dsn: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bfsql", "serve", "--backend", "postgres"],
        env=server_env(BFSQL_POSTGRES_DSN=scratch_dsn), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "entity, relationship not found" in done.stderr and "bfsql postgres init-schema" in done.stderr
