"""Streamable HTTP hardening: bearer-token auth and DNS-rebinding protection."""

from __future__ import annotations

import hmac
import ipaddress
import json

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BearerAuth", "is_loopback", "transport_security"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str, port: int, extra_hosts: list[str] | None = None) -> TransportSecuritySettings:
    """Host/Origin allow-lists for the bound address, against DNS rebinding."""
    names = {host, "127.0.0.1", "localhost", "[::1]"} if is_loopback(host) else {host}
    names.update(extra_hosts or [])
    hosts = sorted({f"{n}:{port}" for n in names} | names)
    origins = sorted({f"{scheme}://{n}:{port}" for n in names for scheme in ("http", "https")})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


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
        body = json.dumps(
            {"error": "unauthorized", "detail": "Send the server's token as 'Authorization: Bearer <token>'."}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="bfsql"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
