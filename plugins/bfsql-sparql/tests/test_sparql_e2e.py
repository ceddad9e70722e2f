"""End to end: ``bfsql serve --backend sparql`` as a subprocess, driven by the official MCP client, on both servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sparql_servers import STANDARD_GRAPH, SparqlServer
from sparql_standard_rdf import PREFIXES, compact_id

from bfsql_testsupport.services import free_port


def _data(result) -> object:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_bfsql_serve_answers_a_real_mcp_client(server: SparqlServer) -> None:
    # Oxigraph by flags; Virtuoso by environment variables (the conventional SPARQL_ENDPOINT_URL included).
    ids = compact_id if server.name == "oxigraph" else str
    env = dict(os.environ)
    args = ["-m", "bfsql", "serve", "--backend", "sparql"]
    prefixes = [arg for prefix in PREFIXES for arg in ("--prefix", prefix)]
    if server.name == "oxigraph":
        args += ["--endpoint", server.endpoint, "--default-graph", STANDARD_GRAPH, *prefixes]
    else:
        env.update(SPARQL_ENDPOINT_URL=server.endpoint, BFSQL_SPARQL_DEFAULT_GRAPH=STANDARD_GRAPH)
        env["BFSQL_SPARQL_PREFIX"] = ",".join(PREFIXES)
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) >= {
            "describe_schema",
            "search_entities",
            "bfs_query",
            "describe_entity",
            "describe_entities",
            "intersect_subgraphs",
        }
        assert "Valid node_types for this graph: Disease, Drug, Gene, Paper" in tools["bfs_query"].description

        schema = _data(await client.call_tool("describe_schema", {}))
        assert schema["comprehensive"] is True and "SPARQL endpoint" in schema["graph_description"]

        hits = _data(await client.call_tool("search_entities", {"query": "p53"}))["items"]
        tp53 = ids("GENE:TP53")
        assert hits[0]["id"] == tp53 and hits[0]["entity_type"] == "Gene"

        answer = _data(await client.call_tool("bfs_query", {"seeds": [tp53], "max_hops": 1, "node_types": ["Gene"]}))
        assert answer["node_count"] == 8 and answer["edge_count"] == 8
        full = {node["id"]: node for node in answer["nodes"] if "metadata" in node}
        assert full[tp53]["metadata"]["chromosome"] == "17p13.1"

        entity = _data(await client.call_tool("describe_entity", {"id": ids("GENE:MDM2")}))
        assert entity["name"] == "MDM2" and entity["synonyms"] == ["HDM2"]

        refused = await client.call_tool("describe_entity", {"id": "gene:x> } ; DROP ALL ; SELECT * {"})
        assert refused.is_error and "Unknown entity id" in refused.content[0].text
        assert not (await client.call_tool("describe_entity", {"id": tp53})).is_error, "still answering"


def test_bfsql_serve_refuses_an_unreachable_endpoint() -> None:
    dead = f"http://127.0.0.1:{free_port()}/sparql"
    done = subprocess.run(
        [sys.executable, "-m", "bfsql", "serve", "--backend", "sparql", "--endpoint", dead, "--max-retries", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "does not answer a trivial query" in done.stderr and "Check --endpoint" in done.stderr


def test_bfsql_plugins_lists_the_sparql_backend() -> None:
    listing = json.loads(
        subprocess.run(
            [sys.executable, "-m", "bfsql", "plugins", "--json"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    )
    entry = next(item for item in listing if item["name"] == "sparql")
    assert entry["distribution"] == "bfsql-sparql" and "register_backends" in entry["hooks"]
