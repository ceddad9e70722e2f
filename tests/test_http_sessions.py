"""HTTP sessions are shared fairly: one client opening sessions in a loop locks nobody else out.

Clients are told apart by their address: the floods come from other loopback addresses
(127.0.0.2 and up, which Linux routes to the server on 127.0.0.1), the real MCP client from 127.0.0.1.
"""

from __future__ import annotations

import asyncio

import httpx
from mcp import Client

from bfsql_testsupport.load import served_over_http

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def _open_sessions(url: str, address: str, count: int) -> list[int]:
    """``count`` handshakes from ``address``, none closed: the status of each."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=30) as client:
        statuses = []
        for _ in range(count):
            response = await client.post(url, json=INITIALIZE, headers=HEADERS)
            statuses.append(response.status_code)
        return statuses


async def _a_real_client_answers(url: str) -> bool:
    async with Client(url) as client:
        result = await client.call_tool("describe_entity", {"id": "HGNC:BRAF"})
        return not result.is_error


def test_one_flooding_client_keeps_only_its_share():
    with served_over_http(["--max-sessions", "40", "--max-sessions-per-client", "5"]) as (url, proc):
        statuses = asyncio.run(_open_sessions(url, "127.0.0.2", 200))
        assert set(statuses) == {200}, "the flooding client's newest sessions replace its idle-longest ones"
        assert asyncio.run(_a_real_client_answers(url)), "another client still gets a session"
        assert proc.poll() is None


def test_a_full_server_closes_the_idle_longest_session_for_a_newcomer():
    with served_over_http(["--max-sessions", "20", "--max-sessions-per-client", "5"]) as (url, _):

        async def many_clients() -> list[int]:
            statuses = []
            for host in range(2, 32):  # 30 clients holding 2 sessions each: more than the server keeps
                statuses += await _open_sessions(url, f"127.0.0.{host}", 2)
            return statuses

        assert set(asyncio.run(many_clients())) == {200}
        assert asyncio.run(_a_real_client_answers(url))


def test_a_client_whose_sessions_are_all_busy_is_told_to_wait():
    with served_over_http(["--max-sessions-per-client", "2"]) as (url, _):

        async def scenario() -> httpx.Response:
            transport = httpx.AsyncHTTPTransport(local_address="127.0.0.3")
            async with httpx.AsyncClient(transport=transport, timeout=30) as client:
                streams = []
                for _ in range(2):  # each session keeps a GET stream open: busy, never evicted
                    opened = await client.post(url, json=INITIALIZE, headers=HEADERS)
                    session = opened.headers["mcp-session-id"]
                    await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                      headers={**HEADERS, "mcp-session-id": session,
                                               "mcp-protocol-version": "2025-11-25"})
                    stream = client.stream("GET", url, headers={
                        "accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
                    await stream.__aenter__()
                    streams.append(stream)
                refused = await client.post(url, json=INITIALIZE, headers=HEADERS)
                for stream in streams:
                    await stream.__aexit__(None, None, None)
                return refused

        refused = asyncio.run(scenario())
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] and "busy" in refused.json()["error"]
