"""HTTP hardening shared by every bfsql web surface: bearer-token auth and DNS-rebinding protection.

:class:`HostPolicy` says which ``Host`` and ``Origin`` headers a server bound to an address
accepts: the bound name; for a loopback bind, every loopback name; for a wildcard bind
(``0.0.0.0``, ``::``), every name and address of this machine that can be found; plus the
names given with ``--allowed-host`` (a reverse proxy's, say). :class:`HostGuard` and
:class:`BearerAuth` are ASGI middlewares; servers built on other frameworks call
:meth:`HostPolicy.refusal` themselves.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BearerAuth", "HostGuard", "HostPolicy", "is_loopback", "is_wildcard", "local_names"]

logger = logging.getLogger("bfsql.server.http")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` listens on every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


def _as_host(address: str) -> str:
    """An address as it appears in a Host header (IPv6 in brackets)."""
    try:
        return f"[{address}]" if ipaddress.ip_address(address.strip("[]")).version == 6 else address
    except ValueError:
        return address


def _outbound_addresses() -> set[str]:
    """The addresses this machine uses to reach other hosts (no packet is sent)."""
    found = set()
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                found.add(probe.getsockname()[0])
        except OSError:
            continue
    return found


def local_names() -> set[str]:
    """This machine's names and addresses, as a client may write them in a Host header."""
    names = set(LOOPBACK_NAMES)
    hostnames = {socket.gethostname(), socket.getfqdn()} - {""}
    names.update(hostnames)
    addresses = _outbound_addresses()
    for hostname in hostnames:
        try:
            addresses.update(str(info[4][0]) for info in socket.getaddrinfo(hostname, None))
        except OSError:
            continue
    names.update(_as_host(a.split("%")[0]) for a in addresses)
    return names


@dataclass(frozen=True)
class HostPolicy:
    """The Host and Origin headers a server bound to ``bind:port`` accepts."""

    names: frozenset[str]
    port: int

    @classmethod
    def for_bind(cls, bind: str, port: int, extra: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound to ``bind:port``, with ``extra`` names accepted too."""
        if is_wildcard(bind):
            names = local_names()
        elif is_loopback(bind):
            names = {*LOOPBACK_NAMES, _as_host(bind)}
        else:
            names = {_as_host(bind)}
        return cls(frozenset(names | {n.strip().lower() for n in extra if n.strip()}), port)

    def host_ok(self, header: str) -> bool:
        """Whether a ``Host`` header names this server (with its port, or none behind a proxy)."""
        header = header.strip().lower()
        if header in self.names:
            return True
        name, sep, port = header.rpartition(":")
        return bool(sep) and not name.endswith(":") and port == str(self.port) and name in self.names

    def origin_ok(self, header: str) -> bool:
        """Whether an ``Origin`` header is one of this server's own pages (a missing one is fine)."""
        if not header:
            return True
        parts = urlsplit(header.strip().lower())
        return parts.scheme in ("http", "https") and self.host_ok(parts.netloc)

    def refusal(self, host: str, origin: str) -> tuple[int, str, str] | None:
        """``(status, error, what to do)`` when the headers are refused, else None."""
        if not self.host_ok(host):
            name = host.rpartition(":")[0] or host
            return 421, f"Host {host!r} is not a name of this server.", (
                f"Reach it as one of: {self.summary()}; or start it with --allowed-host {name} if clients "
                "(or a proxy) use that name."
            )
        if not self.origin_ok(origin):
            return 403, f"Origin {origin!r} may not call this server.", (
                "Requests from web pages must come from this server's own address."
            )
        return None

    def summary(self) -> str:
        """The accepted names, for the start-up line and errors."""
        return ", ".join(sorted(self.names))


async def _send_json(send: Send, status: int, body: dict[str, str], headers: list[tuple[bytes, bytes]]) -> None:
    payload = json.dumps(body).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *headers],
    })
    await send({"type": "http.response.body", "body": payload})


class HostGuard:
    """ASGI middleware: refuse requests whose Host or Origin is not this server's (DNS rebinding)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass requests for this server on; answer 421 (foreign Host) or 403 (foreign Origin) otherwise."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        refused = self.policy.refusal(host, origin)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, error, hint = refused
        logger.warning("refused %s %s: %s %s", scope.get("method"), scope.get("path"), error, hint)
        await _send_json(send, status, {"error": error, "hint": hint}, [])


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty auth token would accept everyone")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass authorised HTTP requests (and non-HTTP scopes) on; answer 401 otherwise."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(supplied, self._expected):
            await self.app(scope, receive, send)
            return
        await _send_json(
            send, 401,
            {"error": "unauthorized", "detail": "Send the server's token as 'Authorization: Bearer <token>'."},
            [(b"www-authenticate", b'Bearer realm="bfsql"')],
        )
