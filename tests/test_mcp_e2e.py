"""End to end: the official MCP client against a ``bfsql serve`` subprocess on the demo graph.

Covers both transports, the whole session workflow of Appendix A, bad arguments,
unknown ids, the answer budget, progress, HTTP auth and DNS-rebinding checks, and
that the server keeps answering after every error.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SERVE = [sys.executable, "-m", "bfsql", "serve"]


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    """Build the demo store once, before any server starts."""
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


def stdio(*args: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", *args],
                                        env=dict(os.environ)))


def data(result) -> object:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, "expected a tool error"
    return result.content[0].text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server() -> Iterator[tuple[str, str]]:
    """A `bfsql serve --transport http` subprocess with a token; yields (url, token)."""
    port, token = free_port(), "s3cret-token-for-the-tests"
    proc = subprocess.Popen([*SERVE, "--transport", "http", "--port", str(port), "--auth-token", token],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    transport = streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"Authorization": f"Bearer {token}"}))
    async with Client(transport) as client:
        yield client


async def test_tools_are_listed_read_only_with_schema_injected():
    async with stdio() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"describe_schema", "search_entities", "bfs_query", "describe_entity", "describe_entities",
                "intersect_subgraphs"} <= set(tools)
        for name in ("bfs_query", "describe_entities"):
            assert tools[name].annotations.read_only_hint is True
            assert tools[name].annotations.idempotent_hint is True
        description = tools["bfs_query"].description
        assert "Valid node_types for this graph: Complex, Family, Gene" in description
        assert "Valid predicates for this graph: isa, partof." in description
        assert set(tools["bfs_query"].input_schema["properties"]) == {
            "seeds", "max_hops", "node_types", "predicates", "topology_only", "exclude_node_types",
            "min_mentions", "limit", "offset", "max_tokens"}
        assert tools["bfs_query"].input_schema["additionalProperties"] is False
        assert tools["bfs_query"].output_schema is not None
        assert client.instructions and "search_entities" in client.instructions


async def test_session_workflow_of_the_appendix():
    async with stdio() as client:
        schema = data(await client.call_tool("describe_schema", {}))
        assert schema["comprehensive"] is True
        assert {"Family", "Gene"} <= set(schema["entity_types"]) and schema["predicates"] == ["isa", "partof"]
        assert "FamPlex" in schema["graph_description"] and schema["next_steps"] and schema["tool_usage_notes"]

        hits = data(await client.call_tool("search_entities", {"query": "BRAF", "node_types": ["Gene"]}))["items"]
        assert {key: hits[0][key] for key in ("id", "entity_type", "name")} == {
            "id": "HGNC:BRAF", "entity_type": "Gene", "name": "BRAF"}
        assert hits[0]["rankers"] and isinstance(hits[0]["score"], float)  # fused search: score and rankers

        survey = data(await client.call_tool("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 1,
                                                           "topology_only": True}))
        assert {"id": "FPLX:RAF", "entity_type": "Family", "name": "RAF Family"} in survey["nodes"]  # a named stub
        assert {"subject": "HGNC:BRAF", "predicate": "isa", "object": "FPLX:RAF"} in survey["edges"]
        assert all("metadata" not in n for n in survey["nodes"])
        assert survey["schema_summary"]["predicates_found"]

        described = data(await client.call_tool("describe_entities", {"ids": ["FPLX:RAF", "no:such"]}))
        records = described["items"]
        assert [r["id"] for r in records] == ["FPLX:RAF"] and described["unknown_ids"] == ["no:such"]
        assert records[0]["metadata"]["name"]

        focused = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1,
                                                            "node_types": ["Family"], "predicates": ["isa"]}))
        genes = [n for n in focused["nodes"] if n["entity_type"] == "Gene"]
        assert {n["id"] for n in genes} == {"HGNC:ARAF", "HGNC:BRAF", "HGNC:RAF1"}
        assert all("metadata" not in n for n in genes)
        assert next(n for n in focused["nodes"] if n["id"] == "FPLX:RAF")["metadata"]

        shared = data(await client.call_tool("intersect_subgraphs", {"seeds": ["HGNC:BRAF", "HGNC:RAF1"], "k": 1}))
        assert [n["id"] for n in shared["nodes"]] == ["FPLX:RAF"]
        assert shared["k"] == 1 and shared["node_count"] == 1

        one = data(await client.call_tool("describe_entity", {"id": "HGNC:BRAF"}))
        assert one["id"] == "HGNC:BRAF" and one["entity_type"] == "Gene" and one["name"] == "BRAF"


async def test_bad_arguments_and_unknown_ids_are_tool_errors_and_the_server_keeps_answering():
    async with stdio() as client:
        cases = [
            ("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 9}, "max_hops must be an integer from 1 to 5"),
            ("bfs_query", {"seeds": [], "max_hops": 1}, "at least one seed"),
            ("bfs_query", {"seeds": "HGNC:BRAF", "max_hops": 1}, "seeds"),
            ("bfs_query", {"seeds": ["nope:1"], "max_hops": 1}, "search_entities"),
            ("intersect_subgraphs", {"seeds": ["HGNC:BRAF"], "k": 1}, "at least 2 distinct seeds"),
            ("describe_entity", {"id": "nope:1"}, "Unknown entity"),
            ("search_entities", {"query": "   "}, "query must not be empty"),
            ("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 1, "limit": -5}, "limit must be an integer >= 0"),
            ("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 1, "bogus_flag": 1},
             "Unknown argument 'bogus_flag': bfs_query takes seeds, max_hops,"),
            ("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": "two"},
             'max_hops must be an integer; got "two". Example: max_hops=1.'),
            ("bfs_query", {"max_hops": 1}, "Missing argument 'seeds'. Example: seeds=[\"FPLX:RAF\"]."),
            ("search_entities", {"query": "?!%"}, "has no letter or digit"),
            ("no_such_tool", {}, "Unknown tool 'no_such_tool'"),
            ("search_entities", {"query": "kinase", "offset": 2**62}, "offset must be an integer from 0 to 299"),
            ("search_entities", {"query": "kinase", "offset": 300}, "narrow the query"),
        ]
        for tool, arguments, fragment in cases:
            text = error_text(await client.call_tool(tool, arguments))
            assert fragment in text, (tool, arguments, text)
            assert "Traceback" not in text
            assert data(await client.call_tool("describe_schema", {}))["predicates"]


async def test_answer_budget_truncates_with_a_continuation_offset():
    async with stdio("--max-tokens", "600") as client:
        answer = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2}))
        assert len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 600 * 3
        notes = answer["truncated"]
        assert any(n["reason"] == "max_tokens" for n in notes)
        next_offset = next(n["next_offset"] for n in notes if "next_offset" in n)
        assert 0 < next_offset < answer["node_count"]
        more = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2,
                                                         "offset": next_offset}))
        assert more["nodes"][0]["id"] not in {n["id"] for n in answer["nodes"]}


async def test_progress_notifications_reach_the_last_hop():
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with stdio() as client:
        await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2, "topology_only": True},
                               progress_callback=on_progress)
    # Per hop for a walk hop by hop; at its start and end for a walk in the store (the demo's array index).
    assert [(p, t) for p, t, _ in seen] in ([(1, 2), (2, 2)], [(0, 2), (2, 2)]), seen
    assert seen[-1][2] and "nodes" in seen[-1][2]


async def test_streamable_http_with_token(http_server):
    url, token = http_server
    async with http_client(url, token) as client:
        hits = data(await client.call_tool("search_entities", {"query": "RAF1"}))["items"]
        assert hits[0]["id"] == "HGNC:RAF1"
        assert error_text(await client.call_tool("bfs_query", {"seeds": ["x:y"], "max_hops": 1}))
        assert data(await client.call_tool("describe_entity", {"id": "HGNC:RAF1"}))["name"] == "RAF1"


async def test_http_refuses_requests_without_the_token_or_with_a_foreign_host_or_origin(http_server):
    url, token = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as http:
        assert (await http.post(url, json=body, headers=headers)).status_code == 401
        wrong = await http.post(url, json=body, headers={**headers, "Authorization": "Bearer wrong"})
        assert wrong.status_code == 401
        rebinding = await http.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token}",
                                                             "Host": "evil.example:80"})
        assert rebinding.status_code in (403, 421)
        foreign = await http.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token}",
                                                           "Origin": "http://evil.example"})
        assert foreign.status_code == 403
    async with http_client(url, token) as client:  # still serving
        assert (await client.list_tools()).tools


def test_binding_beyond_loopback_requires_a_token():
    done = subprocess.run([*SERVE, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "BFSQL_AUTH_TOKEN": ""})
    assert done.returncode != 0
    assert "without authentication" in done.stderr and "--auth-token" in done.stderr


async def test_filters_the_graph_does_not_know_are_flagged_and_small_budgets_still_answer():
    async with stdio("--max-tokens", "500") as client:
        answer = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1,
                                                           "node_types": ["Animal"]}))
        warning = next(w for w in answer["warnings"] if "node_types" in w)
        assert "'Animal' is not among this graph's entity types (Complex, Family, Gene, Protein)" in warning
        result = await client.call_tool("search_entities", {"query": "kinase", "limit": 100})
        found = data(result)
        hits, notes = found["items"], found["truncated"]
        assert len(json.dumps(found, separators=(",", ":"), ensure_ascii=False)) <= 500 * 3
        assert all("id" in hit for hit in hits), "the items hold only items, no notes among them"
        assert notes[-1]["reason"] == "max_tokens" and notes[-1]["next_offset"] == len(hits)
        assert found["page"]["returned"] == len(hits) and found["page"]["next_offset"] == len(hits)
        assert len(result.content) == 1 and result.structured_content == found, "one document, said to every client"
        described = data(await client.call_tool("describe_entity", {"id": "FPLX:AMPK", "max_tokens": 200}))
        assert described["id"] == "FPLX:AMPK" and "_clipped" in described


def test_sigint_stops_a_stdio_server_whose_client_keeps_stdin_open():
    """A client that keeps the pipe open (no terminal): SIGINT stops the server at once, as SIGTERM and Ctrl-C do."""
    import signal

    def as_from_a_terminal() -> None:  # a shell's background job (CI run with &) starts with SIGINT ignored
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=as_from_a_terminal)
    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
        proc.stdin.write((json.dumps(initialize) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin still open
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0, proc.stderr.read().decode()
        assert "Fatal Python error" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
