"""Helpers of the team tests (tests/team): two graphs in one configuration file, servers, MCP clients with a token."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bfsql_testsupport.services import free_port

PROTOCOL = "2026-07-28"
"""The sessionless protocol revision :func:`raw_call` speaks."""

__all__ = ["GRAPHS", "METRICS_SCOPE", "PROTOCOL", "MemoryTokens", "mcp_client", "raw_call", "serving",
           "two_graphs_config"]

GRAPHS = ("famplex", "restricted")
"""The graphs the OAuth tests serve: the demo twice, under two names."""

METRICS_SCOPE = "bfsql:metrics"
"""The operator scope that reads /metrics under OAuth (the default of --oauth-metrics-scope)."""


def two_graphs_config(folder: Path, server: str = "") -> Path:
    """A configuration file serving the demo graph as ``famplex`` and as ``restricted``."""
    path = folder / "graphs.toml"
    path.write_text(f"""[server]
{server}

[graphs.famplex]
backend = "sqlite"
description = "FamPlex, for everyone"

[graphs.restricted]
backend = "sqlite"
description = "The same graph, for the few"
""")
    return path


@contextlib.contextmanager
def serving(options: Sequence[str], port: int | None = None, env: dict[str, str] | None = None,
            log: Path | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``bfsql serve --transport http OPTIONS`` on ``port`` (default: a free one) until it says where it listens."""
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()
    port = port or free_port()
    log = log or Path(tempfile.mkdtemp(prefix="bfsql-team-")) / "serve.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "bfsql", "serve", "--transport", "http", "--port",
                                    str(port), *options], stdout=subprocess.DEVNULL, stderr=sink,
                                   env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + 90
        while b"accepting Host" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"bfsql serve did not start: {log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        process.wait(30)


class MemoryTokens:
    """The MCP SDK's ``TokenStorage``, in memory: what an OAuth client of the SDK keeps between its requests."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        """The tokens stored last."""
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        """Store ``tokens``."""
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        """The client registration stored last."""
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        """Store ``client_info``."""
        self.client_info = client_info


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str | None = None, mode: str = "auto",
                     served_by: list[str] | None = None, auth: Any = None) -> AsyncIterator[Client]:
    """An MCP client of ``url`` sending ``Authorization: Bearer TOKEN``.

    ``mode`` is the SDK client's (``auto``: the sessionless 2026-07-28 revision when the server
    speaks it; ``legacy``: an initialize handshake and a session). ``served_by`` collects the
    ``x-served-by`` header of each response (the replica a balancer chose). ``auth`` is an
    ``httpx2.Auth`` (the SDK's OAuth clients) signing the requests instead of ``token``.
    """
    import httpx2

    async def note(response: httpx2.Response) -> None:
        if served_by is not None and "x-served-by" in response.headers:
            served_by.append(response.headers["x-served-by"])

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks={"response": [note]},
                                  auth=auth) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            yield client


def raw_call(url: str, tool: str, arguments: dict[str, Any], token: str | None = None,
             traceparent: str | None = None) -> httpx.Response:
    """One sessionless tools/call POST as a client sends it: no SDK in between, so nothing is added to its
    ``_meta`` but the caller's trace, when given (the SDK's client injects the test process's own)."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": PROTOCOL, "mcp-method": "tools/call", "mcp-name": tool}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    if traceparent is not None:
        meta["traceparent"] = traceparent
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}
    return httpx.post(url, json=body, headers=headers, timeout=30)
