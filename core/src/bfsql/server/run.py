"""Opening graphs inside the serving event loop and running a transport."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from bfsql.errors import BfsqlError
from bfsql.server.app import BfsqlServer
from bfsql.server.health import HealthRoutes, Readiness
from bfsql.server.host import GC_THRESHOLDS, open_graph, open_host, start_up_heap_frozen, tune_garbage_collector
from bfsql.server.http import HostGuard, HostPolicy, is_loopback
from bfsql.server.sessions import SessionQuota, UnheldSessions
from bfsql.server.team import check_team_settings, team_layers
from bfsql.settings import GraphPlan, ServerSettings

__all__ = [
    "GC_THRESHOLDS", "MCP_PATH", "bound_port", "check_exposure", "open_graph", "open_server", "serve_http",
    "serve_stdio", "tune_garbage_collector",
]

logger = logging.getLogger("bfsql.server")
startup = logging.getLogger("bfsql.startup")

MCP_PATH = "/mcp"
"""Where the streamable HTTP transport answers."""


def check_exposure(settings: ServerSettings) -> None:
    """Refuse to expose the graphs beyond loopback without a token (or OAuth)."""
    if not is_loopback(settings.host) and not settings.auth_token and not settings.oauth_issuer:
        raise BfsqlError(
            f"Refusing to listen on {settings.host} without authentication.",
            "Set --auth-token (or BFSQL_AUTH_TOKEN) or --oauth-issuer, or bind 127.0.0.1.",
        )


@contextlib.asynccontextmanager
async def open_server(plans: Sequence[GraphPlan], settings: ServerSettings | None = None) -> AsyncIterator[BfsqlServer]:
    """Open every planned graph and build the MCP server over them; close them all after (see
    :func:`~bfsql.server.host.open_host`). Sets the server's garbage-collector thresholds, and keeps
    the heap it started with out of later collections (:func:`~bfsql.server.host.start_up_heap_frozen`)."""
    async with open_host(plans, settings, kind=BfsqlServer) as server:
        with start_up_heap_frozen():
            yield server


class StdinLines:
    """The lines of a file descriptor (stdin), read by a daemon thread, as an async iterator of text.

    The SDK reads stdin in a worker thread that a stopping server waits for: a SIGINT to a server
    whose client keeps the pipe open (no terminal) did nothing until stdin closed. Nothing waits
    for this thread, and it reads a duplicate of the descriptor with plain ``os.read`` (no
    buffered reader whose lock the interpreter would want at exit): the process ends when the
    server does.
    """

    def __init__(self, fd: int) -> None:
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        source = os.dup(fd)

        def pump() -> None:
            pending = b""
            try:
                while chunk := os.read(source, 1 << 16):
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        loop.call_soon_threadsafe(self._lines.put_nowait, line.decode("utf-8", errors="replace"))
                if pending:
                    loop.call_soon_threadsafe(self._lines.put_nowait, pending.decode("utf-8", errors="replace"))
                loop.call_soon_threadsafe(self._lines.put_nowait, None)
            except (RuntimeError, OSError):  # the loop closed, or the descriptor did
                return
            finally:
                with contextlib.suppress(OSError):
                    os.close(source)

        threading.Thread(target=pump, name="bfsql stdin", daemon=True).start()

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if line is None:
            raise StopAsyncIteration
        return line


async def serve_stdio(plans: Sequence[GraphPlan], settings: ServerSettings | None = None) -> None:
    """Serve over stdin/stdout until the client closes the stream, or SIGINT (at once, whatever stdin does)."""
    from mcp.server.stdio import stdio_server

    async with open_server(plans, settings) as server:
        startup.info("serving %s over stdio", ", ".join(server.graphs))
        async with stdio_server(stdin=StdinLines(sys.stdin.fileno())) as (read_stream, write_stream):  # type: ignore[arg-type]
            lowlevel = server._lowlevel_server  # what run_stdio_async runs, on our stdin
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def serve_http(plans: Sequence[GraphPlan], settings: ServerSettings, verbose: bool = False) -> None:
    """Serve streamable HTTP on ``settings.host:settings.port`` until interrupted."""
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    check_exposure(settings)
    check_team_settings(settings)
    policy = HostPolicy.for_bind(settings.host, settings.allowed_hosts)
    # HostGuard below checks Host and Origin for every request, with errors that say what to do.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    async with open_server(plans, settings) as server, team_layers(server, settings, MCP_PATH) as team:
        app: Any = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            transport_security=security,
            host=settings.host,
            session_idle_timeout=settings.session_idle_timeout,
            max_sessions=settings.max_sessions,
        )
        sessionless = StreamableHTTPSessionManager(server._lowlevel_server, stateless=True, security_settings=security)
        app = UnheldSessions(app, server.session_manager, sessionless, MCP_PATH)
        app = SessionQuota(app, server.session_manager, MCP_PATH, settings.max_sessions_per_client,
                           settings.max_sessions, principal=lambda scope: team.identify(scope).principal)
        app = HostGuard(team(app), policy)  # authentication (token or OAuth), rate limits, /metrics
        app = HealthRoutes(app, Readiness(server), team.known_graphs)  # for balancers: no Host, no token
        config = uvicorn.Config(app, host=settings.host, port=settings.port, lifespan="on", log_config=None,
                                access_log=verbose, log_level="info" if verbose else "warning")
        shown = f"[{settings.host}]" if ":" in settings.host else settings.host
        web = graceful_server(config)
        async with sessionless.run():
            await serve_announced(web, lambda: startup.info(
                "serving %s at http://%s:%s%s (%s); accepting Host: %s",
                ", ".join(server.graphs), shown, bound_port(web, settings.port), MCP_PATH,
                _authentication(settings), policy.summary(),
            ))


def _authentication(settings: ServerSettings) -> str:
    if settings.oauth_issuer:
        return f"OAuth tokens of {settings.oauth_issuer} for {settings.oauth_resource}"
    return "token required" if settings.auth_token else "no token: loopback only"


def graceful_server(config: Any) -> Any:
    """A uvicorn server that, stopped by SIGTERM or SIGINT, returns once it has shut down gracefully.

    uvicorn raises the signal again when its server returns, which ends the process before the
    code around the server runs: the spans still in the exporter's batch, the audit log's last
    lines and the store's connections were dropped instead of sent, written and closed. The
    process then ends with status 0, the signal having been honoured.
    """
    import uvicorn

    class Graceful(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return Graceful(config)


def bound_port(web: Any, asked: int) -> int:
    """The port a started uvicorn server listens on (the one the system chose for ``--port 0``)."""
    for listening in getattr(web, "servers", None) or []:
        for sock in listening.sockets:
            return int(sock.getsockname()[1])
    return asked


async def serve_announced(web: Any, announce: Callable[[], object]) -> None:
    """Run the uvicorn server ``web``; ``announce()`` once it listens, so a client told to connect can."""

    async def when_started() -> None:
        while not web.started:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(announce)

    announcing = asyncio.create_task(when_started())
    try:
        await web.serve()
    finally:
        announcing.cancel()
