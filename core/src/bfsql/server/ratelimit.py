"""Rate limits per principal and graph: on all calls (``rate_limit``) and on traversals (``heavy_rate_limit``).

:class:`RateLimits` counts with the ``limits`` library (``bfsql[team]``), in a moving window,
in this process's memory or in a storage the replicas share (``rate_limit_storage``). A call
is counted once, where the server runs it (:meth:`RateLimits.hit`); one over its limit is a
tool error saying when to retry. Over HTTP, :class:`RateLimitGate` looks first (without
counting) and answers a call that would be refused with ``429 Too Many Requests`` and a
``Retry-After`` header, its body a JSON-RPC error with the same words, so that a client, a
proxy or a load balancer can back off before the call reaches the server.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bfsql.errors import BfsqlError
from bfsql.server.callers import as_caller
from bfsql.server.pipeline import CallRecord
from bfsql.settings import ServerSettings

if TYPE_CHECKING:
    from bfsql.server.app import BfsqlServer
    from bfsql.server.callers import Identify

__all__ = ["BODY_LIMIT", "Over", "RateLimitGate", "RateLimits", "needs_limits"]

BODY_LIMIT = 4 * 1024 * 1024
"""Largest request body the gate reads to find the tool and graph; larger ones pass on (the SDK refuses them)."""


def needs_limits(feature: str) -> Any:
    """The ``limits`` module, or a :class:`BfsqlError` naming the extra that installs it."""
    try:
        import limits
        import limits.storage
        import limits.strategies
    except ImportError:
        raise BfsqlError(f"{feature} needs the 'limits' package, which is not installed.",
                         "pip install 'bfsql[team]'") from None
    return limits


@dataclass(frozen=True)
class Over:
    """A call over a limit: which one, and in how many seconds the caller may try again."""

    limit: str
    retry_after: int
    heavy: bool

    def message(self, graph: str) -> str:
        """The tool error (and 429 body) saying when to retry."""
        what = "traversals" if self.heavy else "calls"
        return (f"Rate limit reached: graph {graph} allows {self.limit} {what} per user. "
                f"Try again in {self.retry_after} s.")


class RateLimits:
    """The rate limits of a server's graphs (those whose settings set one)."""

    def __init__(self, graphs: Mapping[str, ServerSettings], storage: str = "memory://") -> None:
        limits = needs_limits("rate_limit")
        try:
            self._storage = limits.storage.storage_from_string(storage)
        except Exception as exc:
            raise BfsqlError(f"rate_limit_storage {storage!r} cannot be used: {exc}.",
                             "Use memory:// or a limits storage URI such as redis://HOST:6379 (the Redis client "
                             "comes with bfsql[team]).") from None
        self._limiter = limits.strategies.MovingWindowRateLimiter(self._storage)
        self._rules: dict[tuple[str, bool], tuple[str, Any]] = {}
        for name, settings in graphs.items():
            for heavy, rate in ((False, settings.rate_limit), (True, settings.heavy_rate_limit)):
                if rate:
                    self._rules[(name, heavy)] = (rate, limits.parse(rate))

    def __bool__(self) -> bool:
        return bool(self._rules)

    def _applying(self, graph: str, heavy: bool) -> list[tuple[bool, str, Any]]:
        found = [(False, *self._rules[(graph, False)])] if (graph, False) in self._rules else []
        if heavy and (graph, True) in self._rules:
            found.append((True, *self._rules[(graph, True)]))
        return found

    def check(self, principal: str, graph: str, heavy: bool) -> Over | None:
        """Whether a call would be refused now, without counting it."""
        for is_heavy, rate, item in self._applying(graph, heavy):
            if not self._limiter.test(item, graph, principal, str(is_heavy)):
                return self._over(rate, item, graph, principal, is_heavy)
        return None

    def hit(self, principal: str, graph: str, heavy: bool) -> Over | None:
        """Count a call of ``principal`` on ``graph``; the limit it is over instead (then nothing is counted)."""
        rules = self._applying(graph, heavy)
        refused = self.check(principal, graph, heavy)
        if refused is not None:
            return refused
        for is_heavy, rate, item in rules:
            if not self._limiter.hit(item, graph, principal, str(is_heavy)):
                return self._over(rate, item, graph, principal, is_heavy)
        return None

    def _over(self, rate: str, item: Any, graph: str, principal: str, heavy: bool) -> Over:
        reset = self._limiter.get_window_stats(item, graph, principal, str(heavy)).reset_time
        return Over(rate, max(1, math.ceil(reset - time.time())), heavy)


class RateLimitGate:
    """ASGI middleware: a tool call its principal may not make now is answered 429 with ``Retry-After``."""

    def __init__(self, app: ASGIApp, server: BfsqlServer, identify: Identify, path: str) -> None:
        self.app = app
        self.server = server
        self.identify = identify
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Look at a POSTed tools/call; refuse it when over a limit, else pass the request on unchanged."""
        limits = self.server.rate_limits
        if limits is None or scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        body, unread = await _read_body(receive)
        refused = None if unread else self._refusal(scope, body)
        if refused is not None:
            await _too_many(send, *refused)
            return
        await self.app(scope, _replay(body, unread, receive), send)

    def _refusal(self, scope: Scope, body: bytes) -> tuple[Over, Any, str] | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        spec = self.server.tools.get(str(params.get("name")))
        visible = self.server.visible(self.identify(scope))
        if spec is None or not visible:
            return None
        arguments = params.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        graph = arguments.get("graph", visible[0].name) if len(self.server.graphs) > 1 else visible[0].name
        if not any(served.name == graph for served in visible):
            return None  # the server's own error names the graphs this caller may use
        assert self.server.rate_limits is not None
        caller = self.identify(scope)
        over = self.server.rate_limits.check(caller.principal, graph, spec.heavy)
        if over is None:
            return None
        if self.server.observe is not None:
            with as_caller(caller):
                several = len(self.server.graphs) > 1
                asked = {k: v for k, v in arguments.items() if k != "graph"} if several else arguments
                self.server.observe(CallRecord(spec.name, graph, asked, "rate_limited", 0.0))
        return over, message.get("id"), graph


async def _read_body(receive: Receive) -> tuple[bytes, list[Message]]:
    """The request body, or (what was read, the messages read) when it is longer than :data:`BODY_LIMIT`."""
    chunks: list[bytes] = []
    size = 0
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return b"", messages
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > BODY_LIMIT:
            return b"", messages
        if not message.get("more_body", False):
            return b"".join(chunks), []


def _replay(body: bytes, read: list[Message], receive: Receive) -> Receive:
    """A receive channel that first gives back what the gate read."""
    pending: list[Message] = list(read) or [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def _too_many(send: Send, over: Over, request_id: Any, graph: str) -> None:
    text = over.message(graph)
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32000, "message": text, "data": {"retry_after": over.retry_after}}})
    body = payload.encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(over.retry_after).encode()),
    ]})
    await send({"type": "http.response.body", "body": body})
