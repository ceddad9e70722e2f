"""Legacy (session) clients behind a balancer and a proxy: a replica's death, and fair shares of sessions per user.

A legacy client (an ``initialize`` handshake, then an ``Mcp-Session-Id``) holds its session in
the memory of the replica that opened it. Without this, after that replica was killed (SIGKILL),
its client's 30 later calls all failed with "Session not found": another replica answered 404,
and the official SDK's session client does not start over on a 404 (mcp 2.3 surfaces it as the
call's error). And behind a proxy every client has the proxy's address, so the per-client session
quota counted the proxy: one user's 200 handshakes closed another user's idle session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bfsql_testsupport.balancer import Balancer
from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.services import free_port
from bfsql_testsupport.team import mcp_client, serving, two_graphs_config

CALL = ("search_entities", {"query": "RAF", "limit": 3})


@contextlib.contextmanager
def demo_replicas(folder: Path, count: int = 2) -> Iterator[tuple[Balancer, dict[str, Any]]]:
    """``count`` replicas of the demo graph (each its own SQLite copy) behind HAProxy; yields it and the processes
    by the name the balancer gives each (``r1`` …)."""
    ports = [free_port() for _ in range(count)]
    with contextlib.ExitStack() as stack:
        processes = {f"r{i}": stack.enter_context(serving([], port=port, log=folder / f"replica-{port}.log"))[1]
                     for i, port in enumerate(ports, start=1)}
        yield stack.enter_context(Balancer(ports)), processes


async def _calls_across_a_kill(url: str, processes: dict[str, Any], before: int, after: int) -> list[str]:
    """A legacy client's calls: ``before`` of them, then SIGKILL to the replica holding its session, then ``after``.

    The outcome of each call after the kill: "ok", or the error it ended with.
    """
    served_by: list[str] = []
    outcomes = []
    async with mcp_client(url, mode="legacy", served_by=served_by) as client:
        for _ in range(before):
            assert not (await client.call_tool(*CALL)).is_error
        holder = served_by[-1]
        assert set(served_by) == {holder}, f"a session's requests go to the replica that opened it: {served_by}"
        os.kill(processes[holder].pid, signal.SIGKILL)
        processes[holder].wait(10)
        for _ in range(after):
            try:
                result = await asyncio.wait_for(client.call_tool(*CALL), 60)
                outcomes.append("error: " + result.content[0].text if result.is_error else "ok")
            except Exception as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
    return outcomes


def test_a_session_client_keeps_working_when_its_replica_dies(tmp_path: Path):
    with demo_replicas(tmp_path) as (balancer, processes):
        outcomes = asyncio.run(_calls_across_a_kill(balancer.url, processes, before=3, after=30))
    lost = [o for o in outcomes[1:] if o != "ok"]
    assert not lost, f"{len(lost)} of {len(outcomes) - 1} calls after the first were lost: {lost[:3]}"


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def oauth_server(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two graphs under OAuth, three sessions per user."""
    config = two_graphs_config(tmp_path_factory.mktemp("sessions"))
    options = ["--config", str(config), "--oauth-issuer", provider.issuer, "--max-sessions-per-client", "3",
               "--oauth-resource", provider.resource]  # type: ignore[attr-defined]
    with serving(options, port=provider.server_port) as (url, _):  # type: ignore[attr-defined]
        yield url


def _open_session(client: httpx.Client, url: str, token: str) -> str:
    """A session opened with ``token`` (the handshake and its notification); its id."""
    headers = {**ACCEPT, "authorization": f"Bearer {token}"}
    opened = client.post(url, json=INITIALIZE, headers=headers)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    return session


def _held(client: httpx.Client, url: str, token: str, session: str) -> bool:
    """Whether the server still holds ``session`` (its stream of server messages opens)."""
    headers = {"accept": "text/event-stream", "authorization": f"Bearer {token}", "mcp-session-id": session,
               "mcp-protocol-version": "2025-11-25"}
    with client.stream("GET", url, headers=headers) as stream:
        return stream.status_code == 200


def test_one_users_handshakes_never_close_another_users_session(oauth_server: str, provider: OpenIdProvider):
    resource = provider.resource  # type: ignore[attr-defined]
    quiet = provider.token("analyst", "graph:famplex", resource)
    busy = provider.token("both", "graph:famplex graph:restricted", resource)
    with httpx.Client(timeout=30) as client:  # every request from 127.0.0.1, as behind a proxy
        kept = _open_session(client, oauth_server, quiet)
        opened = [_open_session(client, oauth_server, busy) for _ in range(20)]
        assert _held(client, oauth_server, quiet, kept), "another user's handshakes closed this user's session"
        assert [_held(client, oauth_server, busy, s) for s in opened[-3:]] == [True] * 3
        assert not _held(client, oauth_server, busy, opened[0]), "a user's own idle-longest sessions make room"


async def test_a_session_closed_to_make_room_still_answers_as_its_user(oauth_server: str, provider: OpenIdProvider):
    """The SDK's session client whose session was closed (here to make room) goes on, seeing only its graphs."""
    token = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    async with mcp_client(oauth_server, token, mode="legacy") as client:
        with httpx.Client(timeout=30) as other:
            for _ in range(3):  # the same user's new sessions: its first, idle, is closed for them
                _open_session(other, oauth_server, token)
        for _ in range(3):
            schema = await client.call_tool("describe_schema", {})
            assert not schema.is_error, schema.content[0].text
            assert [g["name"] for g in schema.structured_content["graphs"]] == ["famplex"]
        hidden = await client.call_tool("search_entities", {"query": "BRAF", "graph": "restricted"})
        assert hidden.is_error and "famplex" in hidden.content[0].text
