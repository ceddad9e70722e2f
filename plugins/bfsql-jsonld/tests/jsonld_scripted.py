"""A small real aiohttp server whose answers a test scripts path by path, recording every request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bfsql_testsupport.services import free_port


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request the scripted server received."""

    method: str
    raw_path: str
    headers: dict[str, str]
    body: bytes


class ScriptedApi:
    """A real aiohttp server answering scripted replies, per raw path (with query) or per path."""

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    def on(self, path: str, *replies: Reply | dict[str, Any]) -> None:
        """Answer requests for ``path`` (raw, encoded) with ``replies`` in turn; the last one repeats."""
        self.replies[path] = [r if isinstance(r, Reply) else Reply(json=r) for r in replies]

    def hits(self, path: str) -> int:
        """How many requests reached ``path`` (raw path, with or without query)."""
        return sum(1 for s in self.seen if s.raw_path == path or s.raw_path.split("?")[0] == path)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(Seen(request.method, request.raw_path, dict(request.headers), await request.read()))
        queue = self.replies.get(request.raw_path) or self.replies.get(request.raw_path.split("?")[0])
        if not queue:
            return web.json_response({"error": "not scripted"}, status=404)
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.body is not None:
            return web.Response(
                status=reply.status, body=reply.body, headers=reply.headers, content_type="application/ld+json"
            )
        return web.json_response(reply.json, status=reply.status, headers=reply.headers)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
