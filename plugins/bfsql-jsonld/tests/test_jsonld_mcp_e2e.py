"""End to end: the official MCP client drives ``bfsql serve --backend jsonld`` over the reference server.

Two processes talk HTTP on loopback: ``bfsql jsonld-serve`` publishes the standard
graph, and ``bfsql serve --backend jsonld --base-url URL`` (stdio) reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql_testsupport.services import free_port


def serve(*args: str, **env: str) -> Client:
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "bfsql", "serve", "--backend", "jsonld", *args],
            env={**os.environ, **env},
        )
    )


def data(result) -> object:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_mcp_session_over_the_jsonld_backend(reference_url):
    async with serve("--base-url", reference_url) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "describe_schema",
            "search_entities",
            "bfs_query",
            "describe_entity",
            "describe_entities",
            "intersect_subgraphs",
        } <= tools

        schema = data(await client.call_tool("describe_schema", {}))
        assert schema["entity_types"] == ["Disease", "Drug", "Gene", "Paper"] and schema["comprehensive"] is True

        hits = data(await client.call_tool("search_entities", {"query": "p53", "node_types": ["Gene"]}))["items"]
        assert hits[0]["id"] == "GENE:TP53"

        survey = data(
            await client.call_tool("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1, "topology_only": True})
        )
        assert {"id": "DISEASE:胃癌", "entity_type": "Disease", "name": "胃癌"} in survey["nodes"]
        assert {"subject": "GENE:TP53", "predicate": "INTERACTS_WITH", "object": "GENE:β-catenin"} in survey["edges"]
        assert survey["node_count"] == 8

        many = data(await client.call_tool("describe_entities", {"ids": ["GENE:MDM2", "NOPE:unknown"]}))
        assert [n["id"] for n in many["items"]] == ["GENE:MDM2"] and many["unknown_ids"] == ["NOPE:unknown"]
        assert many["items"][0]["metadata"]["chromosome"] == "12q15"

        unknown = await client.call_tool("describe_entity", {"id": "GENE:TP53-OLD"})
        assert unknown.is_error and "Unknown entity" in unknown.content[0].text


def test_serve_reports_an_unreachable_api_at_start_up():
    port = free_port()
    env = {**os.environ, "BFSQL_JSONLD_BASE_URL": f"http://127.0.0.1:{port}", "BFSQL_JSONLD_MAX_RETRIES": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "bfsql", "serve", "--backend", "jsonld"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode != 0
    assert f"Cannot read the schema of the JSON-LD API at http://127.0.0.1:{port}" in result.stderr, result.stderr
