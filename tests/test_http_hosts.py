"""Which Host headers ``bfsql serve --transport http`` accepts: a real MCP client against real servers.

The README's remote line (a token and ``--host 0.0.0.0``) must accept the machine's own
names and addresses; a name it does not know is refused with 421 and a log line naming
``--allowed-host``; the start-up line says where the server listens and what it accepts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bfsql.server.http import HostPolicy

TOKEN = "a-long-enough-token"
SERVE = [sys.executable, "-m", "bfsql", "serve", "--transport", "http"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(tmp_path: Path, *args: str, verbose: bool = False) -> Iterator[tuple[int, Path]]:
    """``bfsql serve --transport http`` on a free port with the token; yields (port, its stderr log)."""
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "bfsql", *(["-v"] if verbose else []), *SERVE[3:],
                                 "--port", str(port), *args], stdout=subprocess.DEVNULL, stderr=sink,
                                env={**os.environ, "BFSQL_AUTH_TOKEN": TOKEN})
    try:
        deadline = time.monotonic() + 90
        while b"accepting Host" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server did not start: {log.read_text()}")
            time.sleep(0.1)
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def tool_names(url: str) -> list[str]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return [tool.name for tool in (await client.list_tools()).tools]


def post(url: str, host: str | None = None) -> int:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {TOKEN}"}
    if host is not None:
        headers["Host"] = host
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    return httpx.post(url, json=body, headers=headers, timeout=30).status_code


async def test_a_wildcard_bind_with_a_token_accepts_this_machines_names(tmp_path: Path):
    with serving(tmp_path, "--host", "0.0.0.0", "--allowed-host", "proxy.example") as (port, log):
        for name in ("127.0.0.1", "localhost"):
            assert "bfs_query" in await tool_names(f"http://{name}:{port}/mcp")
        startup = next(line for line in log.read_text().splitlines() if "accepting Host" in line)
        assert " INFO " in startup and f"http://0.0.0.0:{port}/mcp" in startup and "token required" in startup
        assert "localhost" in startup and "proxy.example" in startup
        assert post(f"http://127.0.0.1:{port}/mcp", host=f"proxy.example:{port}") == 200
        assert post(f"http://127.0.0.1:{port}/mcp", host=f"{socket.gethostname()}:{port}") == 200
        assert post(f"http://127.0.0.1:{port}/mcp", host=f"evil.example:{port}") == 421
        refused = log.read_text()
        assert "Host 'evil.example:" in refused and "--allowed-host evil.example" in refused


async def test_a_loopback_bind_accepts_loopback_names_only(tmp_path: Path):
    with serving(tmp_path) as (port, _):
        assert "bfs_query" in await tool_names(f"http://localhost:{port}/mcp")
        assert post(f"http://127.0.0.1:{port}/mcp", host=f"{socket.gethostname()}.example:{port}") == 421


def test_verbose_logs_each_request(tmp_path: Path):
    with serving(tmp_path, verbose=True) as (port, log):
        assert post(f"http://127.0.0.1:{port}/mcp") == 200
        deadline = time.monotonic() + 10
        while "POST /mcp" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "POST /mcp" in log.read_text()


@pytest.mark.parametrize(("bind", "host", "accepted"), [
    ("127.0.0.1", "127.0.0.1:8000", True),
    ("127.0.0.1", "localhost:8000", True),
    ("127.0.0.1", "[::1]:8000", True),
    ("127.0.0.1", "localhost:9000", True),  # a mapped or forwarded port
    ("127.0.0.1", "localhost:", False),
    ("127.0.0.1", "localhost:80x", False),
    ("127.0.0.1", "evil.example:8000", False),
    ("10.1.2.3", "10.1.2.3:8000", True),
    ("10.1.2.3", "localhost:8000", False),
    ("0.0.0.0", "localhost:8000", True),
    ("0.0.0.0", "127.0.0.1", True),
    ("::", "[::1]:8000", True),
])
def test_host_policy(bind: str, host: str, accepted: bool):
    assert HostPolicy.for_bind(bind).host_ok(host) is accepted


def test_origins_must_be_the_servers_own_pages():
    policy = HostPolicy.for_bind("127.0.0.1")
    assert policy.origin_ok("") and policy.origin_ok("http://localhost:8000")
    assert not policy.origin_ok("http://evil.example") and not policy.origin_ok("file://localhost:8000")


def initialize(url: str) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {TOKEN}"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "idle", "version": "1"}}}
    return httpx.post(url, json=body, headers=headers, timeout=30)


def _session_answers(url: str, session: str) -> int:
    """The status of the session's stream of server messages: 200 while the server holds it, 404 once closed.

    (A POST of a closed session is answered without it: tests/team/test_sessions.py.)
    """
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {TOKEN}", "mcp-session-id": session,
               "mcp-protocol-version": "2025-06-18"}
    with httpx.stream("GET", url, headers=headers, timeout=30) as answer:
        return answer.status_code


def test_idle_sessions_expire_and_open_sessions_are_capped(tmp_path: Path):
    """Sessions a client opens and forgets are bounded in number and closed when idle (19.10, 23.2)."""
    with serving(tmp_path, "--max-sessions", "3", "--session-idle-timeout", "2") as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        opened = [initialize(url).headers["mcp-session-id"] for _ in range(3)]
        newest = initialize(url)
        assert newest.status_code == 200, "a newcomer gets the place of the idle-longest session"
        assert _session_answers(url, opened[0]) == 404 and _session_answers(url, opened[1]) == 200
        time.sleep(4)  # twice the idle timeout, without a request
        assert _session_answers(url, newest.headers["mcp-session-id"]) == 404, "idle sessions were never closed"
