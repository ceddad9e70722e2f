"""End to end: ``bfsql serve --backend neo4j`` as a subprocess, driven by the official MCP client."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.standard_graph import standard_records

from conftest import reset_bolt


def payload(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_serve_answers_a_real_mcp_client(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    reset_bolt(falkordb_server.bolt_port)
    env = {**os.environ, **falkordb_server.env(BFSQL_NEO4J_PROVENANCE="true")}
    env.pop("BFSQL_LOAD_PLUGINS", None)
    # Flags and NEO4J_* variables both reach the backend: --node-label and --id-property here.
    args = ["-m", "bfsql", "serve", "--backend", "neo4j", "--node-label", "Entity", "--id-property", "entity_id"]
    try:
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"describe_schema", "search_entities", "bfs_query", "describe_entity"} <= tools
            schema = payload(await client.call_tool("describe_schema", {}))
            assert schema["entity_types"] == ["Disease", "Drug", "Gene", "Paper"]
            assert "REGULATES" in schema["predicates"]
            hits = payload(await client.call_tool("search_entities", {"query": "p53"}))["items"]
            assert hits[0]["id"] == "GENE:TP53"
            answer = payload(await client.call_tool("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 2}))
            ids = {node["id"] for node in answer["nodes"]}
            assert {"GENE:TP53", "GENE:MDM2", "DRUG:nutlin-3", "DISEASE:胃癌", "DRUG:aspirin"} <= ids
            assert "GENE:TP53-OLD" not in ids
            unknown = await client.call_tool("bfs_query", {"seeds": ["NOPE:x'y"], "max_hops": 1})
            assert unknown.is_error and "Unknown entity" in unknown.content[0].text
    finally:
        reset_bolt(falkordb_server.bolt_port)  # the server process said GOODBYE on exit


async def test_serve_refuses_to_start_without_the_served_label(falkordb_server) -> None:
    falkordb_server.use("standard", standard_records)
    reset_bolt(falkordb_server.bolt_port)
    env = {**os.environ, **falkordb_server.env(BFSQL_NEO4J_NODE_LABEL="Nope")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bfsql", "serve", "--backend", "neo4j",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        _, stderr = await asyncio.wait_for(process.communicate(b""), 60)
    finally:
        reset_bolt(falkordb_server.bolt_port)
    assert process.returncode != 0
    assert "No node in the graph has the label 'Nope'" in stderr.decode()
