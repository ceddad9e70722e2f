"""Fair shares of HTTP sessions: a limit per client, and the idle-longest session evicted before a refusal.

The MCP SDK's session manager caps sessions in all (``--max-sessions``) and answers 503 once
the cap is reached, until idle sessions expire. One client opening sessions in a loop then locks
everyone else out for the idle timeout. :class:`SessionQuota` sits in front of the
manager and decides before a handshake request (a POST without a session id, on a handshake
protocol revision) reaches it:

* a client holding ``per_client`` sessions gives up its own idle-longest session for the new
  one; if all of them are busy, it is told 429 with a ``Retry-After``. A client is a principal:
  the token's user under OAuth, else the address (users behind one address, a NAT or a proxy
  whose forwarded addresses are not trusted, would otherwise close each other's sessions);
* when the server holds ``max_sessions``, the idle-longest session of whoever holds the most is
  closed for the newcomer; only when every session is busy does the manager's 503 stand.

Requests of the sessionless protocol revision (2026-07-28) open no session and pass untouched.

A session lives in one process's memory. :class:`UnheldSessions` answers a POST naming a
session this process does not hold (opened by a replica that died, or closed here to make room,
or expired) as a request without a session, instead of the SDK manager's 404: the MCP spec has
a client start over on that 404, but the official Python SDK's session client (mcp 2.3) does
not, and every later call of its session failed with "Session not found". bfsql keeps nothing
per session that a call needs, so the answer is the one the session would have given.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SessionQuota", "UnheldSessions", "client_of"]

logger = logging.getLogger("bfsql.server.sessions")


_SESSION = MCP_SESSION_ID_HEADER.encode()
_PROTOCOL = b"mcp-protocol-version"


def client_of(scope: Scope) -> str:
    """Who a request comes from: its peer address (a proxy's clients share one)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class SessionQuota:
    """ASGI middleware: sessions per client, and eviction of the idle-longest before a newcomer is refused."""

    def __init__(self, app: ASGIApp, manager: Any, path: str, per_client: int, max_sessions: int,
                 principal: Callable[[Scope], str] = client_of) -> None:
        if per_client < 1 or max_sessions < 1:
            raise ValueError("session limits must be at least 1")
        self.app = app
        self.principal = principal
        """Whose a request is (default: its address; ``bfsql serve`` gives its callers' principals)."""
        self.manager = manager
        """The SDK's StreamableHTTPSessionManager (its live sessions are read, idle ones discarded)."""
        self.path = path
        self.per_client = per_client
        self.max_sessions = max_sessions
        self._owner: dict[str, str] = {}
        self._last: dict[str, float] = {}
        self._busy: Counter[str] = Counter()
        self._opening: Counter[str] = Counter()
        self._lock = asyncio.Lock()
        self.evicted = 0
        """Sessions closed to make room (a figure for tests and metrics)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count session use; admit new sessions within the limits."""
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        session = headers.get(_SESSION, b"").decode("latin-1")
        if session:
            await self._within_session(session, scope, receive, send)
            return
        protocol = headers.get(_PROTOCOL, b"").decode("latin-1")
        if scope.get("method") != "POST" or (protocol and protocol not in HANDSHAKE_PROTOCOL_VERSIONS):
            await self.app(scope, receive, send)
            return
        await self._opening_session(self.principal(scope), scope, receive, send)

    async def _within_session(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        self._busy[session] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._busy[session] -= 1
            if not self._busy[session]:
                del self._busy[session]
            if session in self._owner:
                self._last[session] = time.monotonic()

    async def _opening_session(self, client: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._lock:
            admitted = await self._make_room(client)
            if admitted:
                self._opening[client] += 1
        if not admitted:
            await _refuse(send, 429, "Too many open sessions from this client: every one is busy.",
                          "Close sessions you no longer use (HTTP DELETE) or retry when a call has ended.")
            return

        async def noting_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                created = dict(message.get("headers") or []).get(_SESSION)
                if created:
                    session = created.decode("latin-1")
                    self._owner[session] = client
                    self._last[session] = time.monotonic()
            await send(message)

        try:
            await self.app(scope, receive, noting_session)
        finally:
            self._opening[client] -= 1
            if not self._opening[client]:
                del self._opening[client]

    async def _make_room(self, client: str) -> bool:
        """Evict what must go for one more session of ``client``; False if its own sessions are all busy."""
        live = self._live()
        for session in [s for s in self._owner if s not in live]:
            self._forget(session)
        mine = [s for s, owner in self._owner.items() if owner == client]
        if len(mine) + self._opening[client] >= self.per_client:
            if not await self._evict(mine):
                return False
        if len(self._live()) + sum(self._opening.values()) >= self.max_sessions:
            holders = Counter(self._owner.values())
            by_share = sorted(self._owner, key=lambda s: (-holders[self._owner[s]], self._last.get(s, 0.0)))
            await self._evict(by_share)  # none idle: the manager's own 503 answers
        return True

    async def _evict(self, candidates: list[str]) -> bool:
        """Close the idle-longest of ``candidates`` (sessions with no request in flight); False if none is idle."""
        idle = [s for s in candidates if not self._busy.get(s)]
        if not idle:
            return False
        victim = min(idle, key=lambda s: self._last.get(s, 0.0))
        transport = self._live().get(victim)
        self._forget(victim)
        if transport is not None:
            await self._discard(victim, transport)
        self.evicted += 1
        logger.info("closed idle session %s to make room", victim[:12])
        return True

    def _live(self) -> dict[str, Any]:
        # The SDK keeps its sessions in this mapping and has no public listing; a test fails if it moves.
        sessions: dict[str, Any] = self.manager._server_instances
        return sessions

    async def _discard(self, session: str, transport: Any) -> None:
        discard = getattr(self.manager, "_discard_session", None)
        if discard is not None:
            await discard(session, transport)
        else:
            await transport.terminate()

    def _forget(self, session: str) -> None:
        self._owner.pop(session, None)
        self._last.pop(session, None)


async def _refuse(send: Send, status: int, error: str, hint: str) -> None:
    payload = json.dumps({"error": error, "hint": hint}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                    (b"retry-after", b"5")],
    })
    await send({"type": "http.response.body", "body": payload})


class UnheldSessions:
    """ASGI middleware: a POST naming a session this process does not hold is answered without a session.

    ``manager`` is the SDK's session manager (whose sessions are looked up), ``sessionless`` a
    stateless one over the same server (``stateless=True``, run alongside) that answers instead.
    A session this process holds, a GET (the stream of server messages, which a sessionless
    request has no use for) and a DELETE are left to ``manager``: for an unknown session they get
    its 404.
    """

    def __init__(self, app: ASGIApp, manager: Any, sessionless: Any, path: str) -> None:
        self.app = app
        self.manager = manager
        self.sessionless = sessionless
        self.path = path
        self.answered = 0
        """Requests answered without their session (a figure for tests)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a POST of an unheld session without it; pass everything else on."""
        if scope["type"] == "http" and scope.get("path") == self.path and scope.get("method") == "POST":
            headers = dict(scope.get("headers") or [])
            session = headers.get(_SESSION, b"").decode("latin-1")
            protocol = headers.get(_PROTOCOL, b"").decode("latin-1")
            if session and session not in self.manager._server_instances and (
                    not protocol or protocol in HANDSHAKE_PROTOCOL_VERSIONS):
                self.answered += 1
                logger.debug("answering a request of session %s, not held here, without it", session[:12])
                await self.sessionless.handle_request(scope, receive, send)
                return
        await self.app(scope, receive, send)
