"""bfsql as an OAuth 2.1 resource server (the MCP authorization spec): JWT access tokens, scopes that name graphs.

With ``--oauth-issuer`` and ``--oauth-resource`` the HTTP server:

* publishes its protected-resource metadata (RFC 9728) at ``/.well-known/oauth-protected-resource``
  and at the path-suffixed address RFC 9728 derives from the resource URL;
* answers a request without a valid token ``401`` with a ``WWW-Authenticate`` header pointing there
  (the MCP SDK's ``RequireAuthMiddleware``);
* validates each token with :class:`JwtVerifier` (PyJWT): an asymmetric signature by a key of the
  issuer's JWKS (fetched from its metadata, refreshed when a token names an unknown key, so a
  rotation needs no restart), ``exp`` and ``nbf``, ``iss`` equal to the issuer and ``aud``
  naming this resource (RFC 8707). ``alg: none`` and HMAC algorithms are never accepted (an HMAC
  "signed" with the public key is the classic forgery). A token whose key is known never waits
  for a fetch of the keys (:class:`JwtVerifier` explains why);
* maps scopes to graphs (:class:`GraphScopes`): ``graph:NAME`` grants graph NAME, ``graph:*``
  every graph (prefix and claim are settings). A token granting none of the server's graphs is
  refused ``403 insufficient_scope``; otherwise the caller sees only its graphs
  (:mod:`bfsql.server.callers`);
* advertises no graph scope (``scopes_supported`` is ``--oauth-scopes-supported``, empty by
  default). MCP clients ask for every advertised scope, and a provider refuses a request naming
  one the user does not hold: a user granted fewer graphs than the server has could not sign in.
  Asking for none, a client gets the provider's default grant, whose scopes (or claim) name the
  user's graphs.

There is no write scope: the server is read-only whatever the token says. ``/metrics`` takes
its own credential (:class:`MetricsGate`): a valid token carrying the operator scope
``--oauth-metrics-scope`` (not advertised in the metadata, so that no client asks for it by
default), or the shared ``--auth-token`` when one is set. Without OAuth configured the
discovery addresses answer ``404`` (:class:`NoDiscovery`), so that a client does not start an
OAuth flow against a server that takes a shared token.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from bfsql.errors import BfsqlError
from bfsql.server.callers import Caller
from bfsql.settings import ServerSettings

__all__ = [
    "ALGORITHMS", "DISCOVERY_PATH", "JWKS_MAX_AGE", "JWKS_MIN_INTERVAL", "LEEWAY", "UNKNOWN_KEY_WAIT", "GraphScopes",
    "JwtVerifier", "MetricsGate", "NoDiscovery", "OAuthGate",
]

logger = logging.getLogger("bfsql.server.oauth")

DISCOVERY_PATH = "/.well-known/oauth-protected-resource"
"""Where protected-resource metadata is published (RFC 9728), also with the resource's path appended."""

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The signature algorithms accepted: asymmetric only (never ``none``, never HMAC)."""

LEEWAY = 30
"""Seconds of clock difference allowed on ``exp`` and ``nbf``."""

JWKS_MAX_AGE = 600.0
"""Seconds the issuer's keys are used before they are fetched again."""

JWKS_MIN_INTERVAL = 5.0
"""Least seconds between two fetches of the keys (a token naming an unknown key cannot make us hammer the issuer)."""

UNKNOWN_KEY_WAIT = 1.0
"""Most seconds a token naming a key not seen yet waits for the fetch it started (or found under way); then it is
refused. A rotated-in key is accepted on its first token when the issuer answers within it."""

VERIFIED_TOKENS = 10_000
"""Tokens whose signature and claims were checked, kept (until they expire, or their key is withdrawn) so that a
client's next call with the same token costs a dictionary lookup instead of a signature check (about 0.2 ms)."""

FETCH_TIMEOUT = 10.0
FETCH_LIMIT = 1024 * 1024
"""Largest metadata or JWKS document read."""


def _jwt() -> Any:
    try:
        import jwt
        from cryptography.hazmat.primitives import hashes  # noqa: F401  (the crypto extra of PyJWT)
    except ImportError:
        raise BfsqlError("OAuth (--oauth-issuer) needs PyJWT with its crypto extra, which is not installed.",
                         "pip install 'bfsql[team]'") from None
    return jwt


def _fetch_json(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "bfsql"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
        return json.loads(response.read(FETCH_LIMIT + 1)[:FETCH_LIMIT])


class GraphScopes:
    """Which graphs a token's scopes grant: ``PREFIX+NAME`` one graph, ``PREFIX+*`` every graph."""

    def __init__(self, prefix: str, claim: str, graphs: Collection[str]) -> None:
        self.prefix = prefix
        self.claim = claim
        self.graphs = list(graphs)
        self._callers: dict[int, tuple[AccessToken, Caller]] = {}
        """The caller of each grant seen lately, by the grant's identity (the verifier hands out the same grant
        object for every call with a token it checked; an entry holds its grant, so the id is not reused)."""

    def scopes(self, claims: dict[str, Any]) -> list[str]:
        """The scopes a token's claims hold (a space-separated string or a list)."""
        value = claims.get(self.claim)
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list):
            return [v for v in value if isinstance(v, str)]
        return []

    def granted(self, scopes: Collection[str]) -> frozenset[str]:
        """The graphs of this server that ``scopes`` grant."""
        names = {s[len(self.prefix):] for s in scopes if s.startswith(self.prefix)}
        if "*" in names:
            return frozenset(self.graphs)
        return frozenset(g for g in self.graphs if g in names)

    def caller(self, scope: Scope) -> Caller:
        """The caller of an authenticated request: the token's subject, and the graphs its scopes grant."""
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            return Caller("anonymous", frozenset())
        token = user.access_token
        known = self._callers.get(id(token))
        if known is not None and known[0] is token:
            return known[1]
        caller = Caller(f"user:{token.subject or token.client_id}", self.granted(token.scopes), token.claims or {})
        if len(self._callers) >= VERIFIED_TOKENS:
            self._callers.clear()
        self._callers[id(token)] = (token, caller)
        return caller


class JwtVerifier:
    """Validates JWT access tokens against an issuer's JWKS (the SDK's ``TokenVerifier``).

    Fetching the keys never holds back a token whose key is known. Anyone can send a token whose
    header names an unknown key (no signature is needed to write a header), and each may call for
    a fetch from an issuer that can be slow: so the known keys are read without waiting, a fetch
    runs in the background (one at a time, at most one per :data:`JWKS_MIN_INTERVAL`, also when
    the keys are older than :data:`JWKS_MAX_AGE`), and only a token naming an unknown key waits
    for it, :data:`UNKNOWN_KEY_WAIT` at most. Before the first keys arrive every token waits for
    them (there is nothing else to check it with), up to the fetch's own timeout.
    """

    def __init__(self, issuer: str, resource: str, scopes: GraphScopes, jwks_url: str | None = None) -> None:
        self.jwt = _jwt()
        self.issuer = issuer
        self.audiences = list(dict.fromkeys([resource, resource.rstrip("/")]))
        self.scopes = scopes
        self.jwks_url = jwks_url
        self._keys: dict[str | None, Any] = {}
        self._verified: OrderedDict[str, tuple[AccessToken, Any]] = OrderedDict()
        """Checked tokens: their grant, and the key that signed them."""
        self._fetched: float | None = None
        """When the keys in use were fetched (None: never)."""
        self._attempted: float | None = None
        """When the last fetch started, whether it succeeded or not."""
        self._fetching: asyncio.Task[None] | None = None

    async def _jwks_url(self) -> str:
        if self.jwks_url:
            return self.jwks_url
        base = self.issuer.rstrip("/")
        problems = []
        for suffix in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
            try:
                metadata = await asyncio.to_thread(_fetch_json, base + suffix)
            except Exception as exc:
                problems.append(f"{base + suffix}: {exc}")
                continue
            if metadata.get("issuer") != self.issuer:
                raise BfsqlError(f"The metadata at {base + suffix} names issuer {metadata.get('issuer')!r}, not "
                                 f"{self.issuer!r}.", "Set --oauth-issuer to the issuer exactly as it names itself.")
            if isinstance(metadata.get("jwks_uri"), str):
                self.jwks_url = metadata["jwks_uri"]
                return self.jwks_url
        raise BfsqlError(f"Cannot find the signing keys of issuer {self.issuer}: {'; '.join(problems)}.",
                         "Check --oauth-issuer, or give the keys' address with --oauth-jwks-url.")

    async def _fetch(self) -> None:
        """Fetch the issuer's keys; keep the old ones on failure."""
        try:
            document = await asyncio.to_thread(_fetch_json, await self._jwks_url())
            keys = {}
            for entry in document.get("keys", []):
                if entry.get("use", "sig") != "sig" or entry.get("kty") == "oct":
                    continue  # an HMAC secret has no place in a public key set
                try:
                    key = self.jwt.PyJWK(entry)
                except Exception:
                    continue  # a key type this PyJWT cannot use
                if key.algorithm_name in ALGORITHMS:
                    keys[entry.get("kid")] = key
        except Exception as exc:
            logger.warning("could not fetch the signing keys of %s: %s", self.issuer, exc)
            return
        self._keys = keys
        self._fetched = time.monotonic()
        logger.info("fetched %d signing key(s) of %s", len(keys), self.issuer)

    def _start_fetch(self) -> asyncio.Task[None] | None:
        """The fetch under way, else a new one, unless one started less than :data:`JWKS_MIN_INTERVAL` ago."""
        if self._fetching is not None and not self._fetching.done():
            return self._fetching
        now = time.monotonic()
        if self._attempted is not None and now - self._attempted < JWKS_MIN_INTERVAL:
            return None
        self._attempted = now
        self._fetching = asyncio.create_task(self._fetch(), name="bfsql jwks fetch")
        return self._fetching

    def _refresh_if_old(self) -> None:
        """Start a fetch in the background when the keys are older than :data:`JWKS_MAX_AGE`."""
        if self._fetched is not None and time.monotonic() - self._fetched >= JWKS_MAX_AGE:
            self._start_fetch()

    def _known(self, kid: str | None) -> Any:
        """The key ``kid`` names among the keys in use (a token naming none: the only key, if there is one)."""
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _key(self, kid: str | None) -> Any:
        """The key that signs a token naming ``kid``: at once when known, else after a bounded wait for a fetch."""
        key = self._known(kid)
        if key is not None:
            self._refresh_if_old()
            return key
        fetch = self._start_fetch()
        if fetch is None:
            return None  # fetched moments ago, and not there
        wait = UNKNOWN_KEY_WAIT if self._fetched is not None else FETCH_TIMEOUT
        try:
            # Shielded: a waiter that gives up (or whose client leaves) does not cancel the fetch others wait for.
            await asyncio.wait_for(asyncio.shield(fetch), wait)
        except TimeoutError:
            return None
        return self._known(kid)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's grant when it is valid for this resource, else None (the request is then refused 401).

        A token already checked is answered from :data:`VERIFIED_TOKENS` while it has not expired and
        the key that signed it is still published (the same string: any change to it is another
        token, checked anew).
        """
        known = self._verified.get(token)
        if known is not None:
            grant, key = known
            self._refresh_if_old()
            if (grant.expires_at is not None and grant.expires_at + LEEWAY > time.time()
                    and any(key is current for current in self._keys.values())):
                self._verified.move_to_end(token)
                return grant
            del self._verified[token]
        checked = await self._check(token)
        if checked is None:
            return None
        self._verified[token] = checked
        if len(self._verified) > VERIFIED_TOKENS:
            self._verified.popitem(last=False)
        return checked[0]

    async def _check(self, token: str) -> tuple[AccessToken, Any] | None:
        """The grant of a token whose signature and claims hold, and the key that signed it."""
        jwt = self.jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        if header.get("alg") not in ALGORITHMS:
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token, key, algorithms=list(ALGORITHMS), audience=self.audiences, issuer=self.issuer,
                leeway=LEEWAY, options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            logger.info("refused a token: %s", exc)
            return None
        subject = claims.get("sub") if isinstance(claims.get("sub"), str) else None
        client = claims.get("client_id") or claims.get("azp") or subject or "unknown"
        return AccessToken(token=token, client_id=str(client), scopes=self.scopes.scopes(claims),
                           expires_at=int(claims["exp"]), resource=self.audiences[0], subject=subject,
                           claims=claims), key


class OAuthGate:
    """ASGI middleware: the discovery document, and a valid token granting some graph on every other request."""

    def __init__(self, app: ASGIApp, settings: ServerSettings, scopes: GraphScopes) -> None:
        assert settings.oauth_issuer and settings.oauth_resource
        self.app = app
        self.scopes = scopes
        self.verifier = JwtVerifier(settings.oauth_issuer, settings.oauth_resource, scopes, settings.oauth_jwks_url)
        # Validated from strings, so that URLs keep their spelling (an issuer is compared as a string).
        metadata = ProtectedResourceMetadata.model_validate({
            "resource": settings.oauth_resource, "authorization_servers": [settings.oauth_issuer],
            "scopes_supported": list(settings.oauth_scopes_supported), "resource_name": "bfsql"})
        resource = metadata.resource
        endpoint = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        self.paths = {DISCOVERY_PATH, urlsplit(str(build_resource_metadata_url(resource))).path}
        self.discovery = Router(routes=[Route(path, endpoint=endpoint, methods=["GET", "OPTIONS"])
                                        for path in sorted(self.paths)])
        guarded = RequireAuthMiddleware(self._granting_a_graph, [], build_resource_metadata_url(resource))
        self.authenticated = AuthenticationMiddleware(AuthContextMiddleware(guarded),
                                                      backend=BearerAuthBackend(self.verifier))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve discovery; authenticate everything else (lifespan events pass)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope.get("path") in self.paths:
            await self.discovery(scope, receive, send)
        else:
            await self.authenticated(scope, receive, send)

    async def _granting_a_graph(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.scopes.caller(scope).graphs:
            await self.app(scope, receive, send)
            return
        description = f"The token grants none of this server's graphs (scopes {self.scopes.prefix}NAME)."
        await _refuse(send, 403, "insufficient_scope", description)


class MetricsGate:
    """ASGI middleware guarding ``/metrics`` under OAuth: never readable anonymously.

    A request passes with a token :class:`JwtVerifier` accepts (this issuer, this resource) whose
    scopes hold ``scope``, or with the shared ``token`` when one is set. Without a valid
    credential it is answered ``401``; with a valid token lacking the scope, ``403``. A token
    granting graphs does not grant the metrics: they name every graph, granted or not.
    """

    def __init__(self, app: ASGIApp, verifier: JwtVerifier, scope: str, token: str | None = None) -> None:
        self.app = app
        self.verifier = verifier
        self.scope = scope
        self._shared = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request carrying a credential for the metrics on; refuse any other."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        if self._shared is not None and hmac.compare_digest(supplied, self._shared):
            await self.app(scope, receive, send)
            return
        kind, _, credential = supplied.decode("latin-1").partition(" ")
        grant = await self.verifier.verify_token(credential.strip()) if kind.lower() == "bearer" else None
        if grant is None:
            await _refuse(send, 401, "invalid_token", f"Reading the metrics needs a token with scope {self.scope}.")
        elif self.scope not in grant.scopes:
            await _refuse(send, 403, "insufficient_scope", f"The token lacks scope {self.scope}.")
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, error: str, description: str) -> None:
    """Answer ``status`` with an OAuth error (RFC 6750) in a JSON body and a ``WWW-Authenticate`` header."""
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", f'Bearer error="{error}", error_description="{description}"'.encode()),
    ]})
    await send({"type": "http.response.body", "body": body})


class NoDiscovery:
    """ASGI middleware of a server without OAuth: its discovery addresses answer 404, whatever the token."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """404 for ``/.well-known/oauth-*``; everything else passes on."""
        if scope["type"] == "http" and str(scope.get("path", "")).startswith("/.well-known/oauth-"):
            body = json.dumps({"error": "not_found", "detail": "This server takes no OAuth tokens."}).encode()
            await send({"type": "http.response.start", "status": 404, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

