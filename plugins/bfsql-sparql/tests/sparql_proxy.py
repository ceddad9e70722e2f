"""A real HTTP proxy in front of a real SPARQL server that records requests and injects faults on cue.

Rate limiting (429 with Retry-After), overload (503), slowness and non-SPARQL answers
cannot be asked of Oxigraph itself, so this proxy produces them; everything else is
forwarded to the server unchanged.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import TracebackType

import aiohttp
from aiohttp import web

from bfsql_testsupport.services import free_port


@dataclass(frozen=True)
class Fault:
    """One scripted answer instead of forwarding: a status with headers and body, after an optional delay."""

    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    body: str = "overloaded"
    delay: float = 0.0
    content_type: str = "text/plain"


@dataclass(frozen=True)
class Seen:
    """A request as the proxy received it."""

    method: str
    user_agent: str
    query: str
    at: float
    content_type: str = ""
    """Of a POST: ``application/sparql-query`` (the query is the body) or a form type."""


class FaultProxy:
    """``async with FaultProxy(upstream) as proxy``: ``proxy.url`` is the endpoint to give the backend."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.faults: list[Fault] = []
        """Answered in order, one per request, before requests are forwarded again."""
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.forward_delay = 0.0
        """Seconds every forwarded request is held (to observe concurrency)."""
        self.port = free_port()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """The proxy's endpoint URL."""
        return f"http://127.0.0.1:{self.port}/sparql"

    async def __aenter__(self) -> FaultProxy:
        app = web.Application()
        app.router.add_route("*", "/sparql", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._runner is not None and self._session is not None
        await self._session.close()
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST" and request.content_type == "application/sparql-query":
            # The query is the body; the other parameters (default-graph-uri, ...) are in the URL.
            params = [*((key, str(value)) for key, value in request.query.items()), ("query", await request.text())]
        else:
            form = await request.post() if request.method == "POST" else request.query
            params = [(key, str(value)) for key, value in form.items()]
        self.seen.append(
            Seen(
                request.method,
                request.headers.get("User-Agent", ""),
                dict(params).get("query", ""),
                asyncio.get_running_loop().time(),
                request.content_type if request.method == "POST" else "",
            )
        )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.faults:
                fault = self.faults.pop(0)
                await asyncio.sleep(fault.delay)
                return web.Response(
                    status=fault.status, headers=fault.headers, text=fault.body, content_type=fault.content_type
                )
            await asyncio.sleep(self.forward_delay)
            assert self._session is not None
            async with self._session.post(
                self.upstream, data=params, headers={"Accept": request.headers.get("Accept", "*/*")}
            ) as upstream:
                body = await upstream.read()
                return web.Response(status=upstream.status, body=body, content_type=upstream.content_type)
        finally:
            self.in_flight -= 1
