"""Everything ``bfsql serve --transport http`` adds for a team, put together: who calls, what they may, what is seen.

:func:`team_layers` sets up, from the settings, the server's observer (metrics, audit log,
trace attributes: each call's record from the pipeline goes to all of them), its rate limits,
the naming of each request's caller, and returns the ASGI layers to put around the MCP app,
outermost first:

1. ``/metrics`` (``--metrics``), behind the credential its mode takes (:func:`guarded_metrics`);
2. the record of each request to the MCP app that authentication refuses (:class:`RefusedRequests`);
3. authentication: OAuth (:mod:`bfsql.server.oauth`) when an issuer is configured, else the
   shared bearer token (when set) with the OAuth discovery addresses answering 404;
4. the rate-limit gate (429 before a call over its limit reaches the server).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bfsql.errors import BfsqlError, clip
from bfsql.server.app import SENT_CHARS, BfsqlServer
from bfsql.server.callers import CallerMiddleware, Identify, as_caller, by_address
from bfsql.server.http import BearerAuth
from bfsql.server.pipeline import CallRecord, Observer
from bfsql.server.ratelimit import RateLimitGate, RateLimits
from bfsql.server.trace_export import annotate
from bfsql.settings import ServerSettings

if TYPE_CHECKING:
    from bfsql.server.oauth import GraphScopes, OAuthGate

__all__ = ["METRICS_PATH", "RefusedRequests", "TeamLayers", "check_team_settings", "guarded_metrics", "team_layers"]

logger = logging.getLogger("bfsql.server")

METRICS_PATH = "/metrics"

REFUSED_STATUSES = {401: "unauthenticated", 403: "forbidden"}
"""The outcome (:data:`~bfsql.server.pipeline.HTTP_REFUSALS`) of a request authentication answers with each status."""


def check_team_settings(settings: ServerSettings) -> None:
    """Refuse settings that do not go together (before anything is opened)."""
    if bool(settings.oauth_issuer) != bool(settings.oauth_resource):
        raise BfsqlError("OAuth needs both --oauth-issuer and --oauth-resource.",
                         "--oauth-resource is this server's public MCP URL, the audience its tokens are issued for.")
    for name in ("oauth_issuer", "oauth_resource", "oauth_jwks_url"):
        value = getattr(settings, name)
        if value and not value.startswith(("https://", "http://")):
            raise BfsqlError(f"--{name.replace('_', '-')} must be an http(s) URL; got {value!r}.",
                             "Example: https://login.example.org/realms/kg")
    if settings.transport != "http" and (settings.oauth_issuer or settings.metrics):
        raise BfsqlError("OAuth and /metrics are served over HTTP only.", "Add --transport http.")


def _observer(observers: list[Observer]) -> Observer:
    def observe(record: CallRecord) -> None:
        for one in observers:
            try:
                one(record)
            except Exception:  # an observer's failure must never fail or alter the call
                logger.warning("observer %r failed on a call of %s", one, record.tool, exc_info=True)

    return observe


def guarded_metrics(metrics: ASGIApp, settings: ServerSettings, oauth: OAuthGate | None) -> ASGIApp:
    """The metrics app behind the credential the server's authentication takes for it (docs/deploying.md#metrics).

    Under OAuth (``oauth``, the gate of the MCP app): a token of the issuer for this resource
    with ``oauth_metrics_scope``, or ``auth_token`` when set; never anonymous. With a shared
    token only: that token. With neither, the server listens on loopback only
    (:func:`~bfsql.server.run.check_exposure`) and the metrics are as open as the MCP app.
    """
    if oauth is not None:
        from bfsql.server.oauth import MetricsGate

        return MetricsGate(metrics, oauth.verifier, settings.oauth_metrics_scope, settings.auth_token)
    return BearerAuth(metrics, settings.auth_token) if settings.auth_token else metrics


class MetricsRoute:
    """ASGI middleware: ``/metrics`` answered by the (guarded) metrics app."""

    def __init__(self, app: ASGIApp, metrics: ASGIApp) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve /metrics; pass everything else on."""
        # The decoded path: every spelling of /metrics a client may send (/%6detrics) reaches the guarded app.
        if scope["type"] == "http" and scope.get("path") == METRICS_PATH:
            await self.metrics(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class RefusedRequests:
    """ASGI middleware around authentication: each request to the MCP app it refuses (401, 403) is recorded.

    The record's principal is the token's subject when the token was valid but granted no graph
    (403), else the client's address; its tool is the one a ``tools/call`` names in its
    ``Mcp-Name`` header (sent by clients of the sessionless revision; "" otherwise, as the body of
    a refused request is not read), clipped; its graph "".
    """

    def __init__(self, app: ASGIApp, observe: Observer, identify: Identify, path: str) -> None:
        self.app = app
        self.observe = observe
        self.identify = identify
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; record it when it is answered with a refusal."""
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in REFUSED_STATUSES:
                self._record(scope, REFUSED_STATUSES[message["status"]])
            await send(message)

        await self.app(scope, receive, watched)

    def _record(self, scope: Scope, outcome: str) -> None:
        headers = dict(scope.get("headers") or [])
        tool = headers.get(b"mcp-name", b"") if headers.get(b"mcp-method") == b"tools/call" else b""
        caller = self.identify(scope) if outcome == "forbidden" else by_address(scope)
        with as_caller(caller):
            self.observe(CallRecord(clip(tool.decode("utf-8", "replace"), SENT_CHARS), "", None, outcome, 0.0))


class TeamLayers:
    """What :func:`team_layers` sets up: called on the MCP app, it returns the app in its layers.

    ``identify`` names the caller of a request that went through them (the token's user under
    OAuth, else the client's address), for what sits inside them and counts per caller;
    :meth:`known_graphs` checks a request's credential for what sits outside them.
    """

    def __init__(self, wrap: Callable[[ASGIApp], ASGIApp], identify: Identify, settings: ServerSettings) -> None:
        self.wrap = wrap
        self.identify = identify
        self.settings = settings
        self.gate: OAuthGate | None = None
        """The OAuth layer, once the app is wrapped (under OAuth)."""

    def __call__(self, app: ASGIApp) -> ASGIApp:
        """``app`` in the layers, outermost first as the module says."""
        return self.wrap(app)

    async def known_graphs(self, scope: Scope) -> frozenset[str] | None:
        """The graphs a request's credential lets it know of, checked as the layers check it (None: every graph).

        The shared token: every graph; an OAuth token: its graphs; none (or a wrong one): none,
        unless the server takes no credential at all.
        """
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        token = self.settings.auth_token
        if token and hmac.compare_digest(supplied, f"Bearer {token}".encode()):
            return None
        if self.gate is not None:
            kind, _, credential = supplied.decode("latin-1").partition(" ")
            grant = await self.gate.verifier.verify_token(credential.strip()) if kind.lower() == "bearer" else None
            return self.gate.scopes.granted(grant.scopes) if grant is not None else frozenset()
        return frozenset() if token else None


@asynccontextmanager
async def team_layers(server: BfsqlServer, settings: ServerSettings, path: str) -> AsyncIterator[TeamLayers]:
    """Set up the server for HTTP callers; yields the :class:`TeamLayers` to put the MCP app (at ``path``) in."""
    check_team_settings(settings)
    closing: list[Callable[[], Any]] = []
    observers: list[Observer] = [annotate]
    metrics = None
    try:
        if settings.metrics:
            from bfsql.server.metrics import Metrics

            metrics = Metrics(server)
            observers.append(metrics.record)
        if settings.audit_log:
            from bfsql.server.audit import AuditLog

            audit = AuditLog(settings.audit_log, settings.audit_log_max_mb, settings.audit_log_backups)
            closing.append(audit.close)
            observers.append(audit.record)
        if settings.otlp_endpoint:
            from bfsql.server.trace_export import install_exporter

            closing.append(install_exporter(settings.otlp_endpoint, settings.otlp_sample_ratio,
                                             server.middleware).shutdown)
        if any(s.settings.rate_limit or s.settings.heavy_rate_limit for s in server.graphs.values()):
            server.rate_limits = RateLimits({n: s.settings for n, s in server.graphs.items()},
                                            settings.rate_limit_storage)
        observe = server.observe = _observer(observers)
        identify: Identify = by_address
        scopes: GraphScopes | None = None
        if settings.oauth_issuer:
            from bfsql.server.oauth import GraphScopes

            scopes = GraphScopes(settings.oauth_scope_prefix, settings.oauth_scope_claim, list(server.graphs))
            identify = scopes.caller
        server.middleware.append(CallerMiddleware(identify, server.instructions_for))

        def wrap(app: ASGIApp) -> ASGIApp:
            from bfsql.server.oauth import NoDiscovery, OAuthGate

            if server.rate_limits is not None:
                app = RateLimitGate(app, server, identify, path)
            gate = None
            if scopes is not None:
                app = gate = layers.gate = OAuthGate(app, settings, scopes)
            else:
                app = NoDiscovery(BearerAuth(app, settings.auth_token) if settings.auth_token else app)
            if gate is not None or settings.auth_token:
                app = RefusedRequests(app, observe, identify, path)
            if metrics is not None:
                app = MetricsRoute(app, guarded_metrics(metrics.app, settings, gate))
            return app

        layers = TeamLayers(wrap, identify, settings)
        yield layers
    finally:
        for close in reversed(closing):
            close()

