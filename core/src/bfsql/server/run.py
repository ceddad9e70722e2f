"""Opening a backend inside the serving event loop and running a transport."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from bfsql.backend import GraphBackend
from bfsql.errors import BfsqlError
from bfsql.graph import Graph
from bfsql.plugins import BackendSpec
from bfsql.server.app import ServeSettings, build_server
from bfsql.server.http import BearerAuth, is_loopback, transport_security

__all__ = ["HttpOptions", "open_graph", "serve_http", "serve_stdio"]

logger = logging.getLogger("bfsql.server")


@dataclass(frozen=True)
class HttpOptions:
    """Where and how the streamable HTTP transport listens."""

    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    auth_token: str | None = None
    allowed_hosts: tuple[str, ...] = ()

    def check(self) -> None:
        """Refuse to expose the graph beyond loopback without a token."""
        if not is_loopback(self.host) and not self.auth_token:
            raise BfsqlError(
                f"Refusing to listen on {self.host} without authentication.",
                "Set --auth-token (or BFSQL_AUTH_TOKEN), or bind 127.0.0.1.",
            )


@asynccontextmanager
async def open_graph(spec: BackendSpec, config: BaseModel, **graph_options: Any) -> AsyncIterator[Graph]:
    """Build the backend (awaiting an async factory) and wrap it in a Graph; close it after."""
    backend = spec.factory(config)
    if inspect.isawaitable(backend):
        backend = await backend
    if not isinstance(backend, GraphBackend):
        raise TypeError(f"backend {spec.name!r} factory returned {type(backend).__name__}, not a bfsql.GraphBackend")
    graph = Graph(backend, name=spec.name, **graph_options)
    try:
        yield graph
    finally:
        await graph.aclose()


async def serve_stdio(spec: BackendSpec, config: BaseModel, settings: ServeSettings) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    async with open_graph(spec, config, primitive_timeout=settings.primitive_timeout) as graph:
        server = await build_server(graph, settings)
        await server.run_stdio_async()


async def serve_http(
    spec: BackendSpec,
    config: BaseModel,
    settings: ServeSettings,
    http: HttpOptions,
    transport: Literal["http"] = "http",
) -> None:
    """Serve streamable HTTP on ``http.host:http.port`` until interrupted."""
    import uvicorn

    http.check()
    async with open_graph(spec, config, primitive_timeout=settings.primitive_timeout) as graph:
        server = await build_server(graph, settings)
        app: Any = server.streamable_http_app(
            streamable_http_path=http.path,
            transport_security=transport_security(http.host, http.port, list(http.allowed_hosts)),
            host=http.host,
        )
        if http.auth_token:
            app = BearerAuth(app, http.auth_token)
        config_ = uvicorn.Config(app, host=http.host, port=http.port, log_level="warning", lifespan="on")
        logger.warning("bfsql: serving %s at http://%s:%s%s", spec.name, http.host, http.port, http.path)
        await uvicorn.Server(config_).serve()
