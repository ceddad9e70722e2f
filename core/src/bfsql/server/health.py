"""``/healthz`` and ``/readyz`` for load balancers and orchestrators: is the process alive, can it answer now.

``GET /healthz`` answers ``200`` whenever the process answers HTTP (liveness: restart it when this
fails). ``GET /readyz`` answers ``200`` when every graph's store answers a cheap call within
:data:`READY_TIMEOUT` and its backend's ``health()`` reports nothing, else ``503`` (readiness:
send it no calls meanwhile). Both are unauthenticated, for balancers that send no token, and
sit outside the Host check (HAProxy's checks send no ``Host`` header).

A ``/readyz`` body never names a graph its caller may not know of: it always counts the graphs
ready and not ready; it names the graphs that are not ready, and why, only to a caller whose
credential grants them (the shared token, or an OAuth token and its graphs; anyone when the
server takes no credential at all). The check is shared: requests within
:data:`READY_REUSE` of a check get its result, so a flood of ``/readyz`` costs the stores one
cheap call per graph per interval.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from bfsql.errors import clip
from bfsql.server.app import BfsqlServer, ServedGraph

__all__ = ["HEALTH_PATH", "PROBE_ID", "READY_PATH", "READY_REUSE", "READY_TIMEOUT", "HealthRoutes", "Readiness",
           "graph_problems"]

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"

READY_TIMEOUT = 2.0
"""Seconds a graph's store has to answer the readiness call (balancers check every few seconds)."""

READY_REUSE = 1.0
"""Seconds a readiness result answers further ``/readyz`` requests."""

PROBE_ID = "bfsql:readiness-probe"
"""The id the readiness call asks for (``get_nodes``): one index lookup on every backend, found or not."""

Viewer = Callable[[Scope], Awaitable[Collection[str] | None]]
"""The graphs a request's credential lets it know of (None: every graph)."""


async def graph_problems(served: ServedGraph, timeout: float = READY_TIMEOUT) -> list[str]:
    """Why ``served`` cannot take calls now, one sentence each; [] when its store answers and reports nothing.

    The call asked (``get_nodes`` of :data:`PROBE_ID`) goes to the backend itself, not through the
    graph's cache, so that an answer means the store answered now.
    """
    if served.graph is None:
        return [f"It could not be opened at start-up ({served.failure})."]
    try:
        reported = await asyncio.wait_for(served.graph.probe(PROBE_ID), timeout)
    except TimeoutError:
        return [f"Its store did not answer within {timeout:g} s."]
    except Exception as exc:
        return [f"Its store failed: {type(exc).__name__}: {clip(str(exc), 200)}"]
    return [str(problem) for problem in reported]


class Readiness:
    """Whether each graph of a server can take calls, checked at most once per :data:`READY_REUSE`."""

    def __init__(self, server: BfsqlServer, timeout: float = READY_TIMEOUT) -> None:
        self.server = server
        self.timeout = timeout
        self._checked: tuple[float, dict[str, list[str]]] | None = None
        self._checking: asyncio.Task[dict[str, list[str]]] | None = None

    async def problems(self) -> dict[str, list[str]]:
        """Each graph's problems ([] for a graph that is ready), from a check at most :data:`READY_REUSE` old."""
        if self._checked is not None and time.monotonic() - self._checked[0] < READY_REUSE:
            return self._checked[1]
        if self._checking is None or self._checking.done():
            self._checking = asyncio.create_task(self._check(), name="bfsql readiness")
        return await asyncio.shield(self._checking)

    async def _check(self) -> dict[str, list[str]]:
        graphs = list(self.server.graphs.values())
        found = await asyncio.gather(*(graph_problems(served, self.timeout) for served in graphs))
        problems = {served.name: listed for served, listed in zip(graphs, found, strict=True)}
        self._checked = (time.monotonic(), problems)
        return problems


class HealthRoutes:
    """ASGI middleware: ``GET /healthz`` and ``GET /readyz`` answered here; every other request passes on."""

    def __init__(self, app: ASGIApp, readiness: Readiness, viewer: Viewer) -> None:
        self.app = app
        self.readiness = readiness
        self.viewer = viewer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the two paths; pass the rest on."""
        path = scope.get("path") if scope["type"] == "http" else None
        if path == HEALTH_PATH:
            await _json(send, 200, {"status": "live"})
        elif path == READY_PATH:
            await self._ready(scope, send)
        else:
            await self.app(scope, receive, send)

    async def _ready(self, scope: Scope, send: Send) -> None:
        problems = await self.readiness.problems()
        not_ready = [name for name, listed in problems.items() if listed]
        body: dict[str, object] = {"status": "not ready" if not_ready else "ready",
                                   "graphs": {"ready": len(problems) - len(not_ready), "not_ready": len(not_ready)}}
        known = await self.viewer(scope)
        shown = {name: problems[name] for name in not_ready if known is None or name in known}
        if shown:
            body["not_ready"] = shown
        await _json(send, 503 if not_ready else 200, body)


async def _json(send: Send, status: int, body: dict[str, object]) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
        (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": payload})
