"""Who may read ``/metrics`` under each way of serving, and the proxy rule docs/deploying.md gives.

The metrics name every graph, granted or not: under OAuth they are never readable anonymously,
only with a token carrying the operator scope (or the shared token, when one is set). In
process, every mode's guard is checked through the team layers ``bfsql serve`` puts together,
with the issuer's keys served by a stand-in for its metadata; over HTTP, against a real
OpenID provider, and through HAProxy with the docs' own rule, which must refuse the metrics
however their path is spelt (``/%6detrics`` is ``/metrics`` once uvicorn decodes it).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from starlette.types import Receive, Scope, Send

from bfsql.demo import ensure_demo_db
from bfsql.server.run import open_server
from bfsql.server.team import team_layers
from bfsql.settings import GraphPlan, ServerSettings
from bfsql_testsupport.balancer import Balancer
from bfsql_testsupport.oidc import OpenIdProvider, rsa_key
from bfsql_testsupport.team import METRICS_SCOPE, serving, two_graphs_config

TOKEN = "a-shared-token-long-enough"
ISSUER = "https://login.example.org/realms/kg"
RESOURCE = "https://kg.example.org/mcp"
DEPLOYING = Path(__file__).parents[2] / "docs" / "deploying.md"
SPELLINGS = ("/metrics", "/%6detrics", "/%6Detrics", "/%6d%65%74%72%69%63%73", "/metrics?format=text")
"""``/metrics`` as a client may write it: each reaches bfsql's metrics once uvicorn has decoded the path."""


def _docs_proxy_rules() -> list[str]:
    """The ``http-request`` lines of the frontend in docs/deploying.md's HAProxy configuration."""
    config = re.search(r"```haproxy\n(.*?)```", DEPLOYING.read_text(), re.DOTALL)
    assert config, "docs/deploying.md shows an HAProxy configuration"
    frontend = config.group(1).split("\nfrontend ", 1)[1].split("\nbackend ", 1)[0]
    rules = [line.split("#", 1)[0].strip() for line in frontend.splitlines()]
    return [rule for rule in rules if rule.startswith("http-request")]


# -- in process: the guard of each mode --------------------------------------------------


class Issuer:
    """The issuer's metadata and keys, as :func:`bfsql.server.oauth._fetch_json` would fetch them, and its tokens."""

    def __init__(self) -> None:
        self.key, jwk = rsa_key("key-1")
        public = {name: jwk[name] for name in ("kty", "kid", "use", "alg", "n", "e")}
        self.documents = {f"{ISSUER}/.well-known/openid-configuration": {"issuer": ISSUER,
                                                                          "jwks_uri": f"{ISSUER}/keys"},
                          f"{ISSUER}/keys": {"keys": [public]}}

    def fetch(self, url: str) -> Any:
        """The document at ``url``."""
        return self.documents[url]

    def token(self, scope: str, audience: str = RESOURCE) -> str:
        """A token of this issuer for ``audience`` with ``scope``."""
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": "ops", "aud": audience, "iat": now, "exp": now + 600, "scope": scope}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "key-1"})


async def _mcp_stand_in(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"mcp"})


@asynccontextmanager
async def _team_app(settings: ServerSettings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the layers ``bfsql serve`` puts around its MCP app (a stand-in here), with ``settings``."""
    from bfsql.plugins import get_backends

    spec = get_backends()["sqlite"]
    plans = [GraphPlan(name, spec, spec.config_model(db=ensure_demo_db()), settings) for name in ("famplex", "other")]
    async with open_server(plans, settings) as server, team_layers(server, settings, "/mcp") as wrap:
        transport = httpx.ASGITransport(app=wrap(_mcp_stand_in))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client


@pytest.fixture
def issuer(monkeypatch: pytest.MonkeyPatch) -> Issuer:
    stand_in = Issuer()
    monkeypatch.setattr("bfsql.server.oauth._fetch_json", stand_in.fetch)
    return stand_in


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _statuses(client: httpx.AsyncClient, headers: dict[str, str]) -> set[int]:
    return {(await client.get(path, headers=headers)).status_code for path in SPELLINGS}


@pytest.mark.parametrize("shared_token", [None, TOKEN])
async def test_under_oauth_the_metrics_need_the_metrics_scope_or_the_shared_token(issuer: Issuer,
                                                                                shared_token: str | None):
    settings = ServerSettings(transport="http", oauth_issuer=ISSUER, oauth_resource=RESOURCE, metrics=True,
                              auth_token=shared_token)
    async with _team_app(settings) as client:
        assert await _statuses(client, {}) == {401}, "never readable anonymously"
        assert await _statuses(client, _bearer("not-a-token")) == {401}
        assert await _statuses(client, _bearer(issuer.token("graph:*"))) == {403}, "graph scopes do not grant it"
        assert await _statuses(client, _bearer(issuer.token(METRICS_SCOPE, "https://other.example/mcp"))) == {401}
        assert await _statuses(client, _bearer(issuer.token(METRICS_SCOPE))) == {200}
        answer = await client.get("/%6detrics", headers=_bearer(issuer.token(f"graph:famplex {METRICS_SCOPE}")))
        assert answer.status_code == 200 and 'graph="other"' in answer.text
        assert await _statuses(client, _bearer(TOKEN)) == ({200} if shared_token else {401})
        refused = await client.get("/metrics")
        assert refused.headers["www-authenticate"].startswith("Bearer ") and "other" not in refused.text


async def test_with_a_shared_token_the_metrics_need_it():
    settings = ServerSettings(transport="http", auth_token=TOKEN, metrics=True)
    async with _team_app(settings) as client:
        assert await _statuses(client, {}) == {401}
        assert await _statuses(client, _bearer("a-wrong-token-long-enough")) == {401}
        assert await _statuses(client, _bearer(TOKEN)) == {200}


async def test_without_authentication_the_metrics_are_as_open_as_the_mcp_app():
    """No token and no OAuth: the server listens on loopback only (check_exposure), and so do its metrics."""
    settings = ServerSettings(transport="http", metrics=True)
    async with _team_app(settings) as client:
        assert await _statuses(client, {}) == {200}
        assert (await client.get("/mcp")).status_code == 200


# -- over HTTP: a real provider, and HAProxy with the docs' rule ---------------------------


@pytest.fixture(scope="module")
def server(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two graphs under OAuth with ``--metrics`` and no shared token."""
    folder = tmp_path_factory.mktemp("metrics")
    options = ["--config", str(two_graphs_config(folder)), "--oauth-issuer", provider.issuer,
               "--oauth-resource", provider.resource, "--metrics"]  # type: ignore[attr-defined]
    with serving(options, port=provider.server_port, log=folder / "serve.log") as (url, _):  # type: ignore[attr-defined]
        yield url


def test_under_oauth_the_metrics_are_never_anonymous(server: str, provider: OpenIdProvider):
    """With OAuth on and no auth_token, an unauthenticated GET of the metrics is refused (they name every graph)."""
    base = server.removesuffix("/mcp")
    for path in SPELLINGS:
        refused = httpx.get(base + path, timeout=30)
        assert refused.status_code == 401, (path, refused.status_code)
        assert "restricted" not in refused.text
    analyst = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    assert httpx.get(base + "/metrics", headers=_bearer(analyst), timeout=30).status_code == 403
    operator = provider.token("prometheus", METRICS_SCOPE, provider.resource)  # type: ignore[attr-defined]
    answer = httpx.get(base + "/%6detrics", headers=_bearer(operator), timeout=30)
    assert answer.status_code == 200 and 'graph="restricted"' in answer.text, "the decoded path is the metrics"


def test_the_docs_proxy_rule_refuses_the_metrics_however_spelt(server: str, provider: OpenIdProvider):
    rules = _docs_proxy_rules()
    assert any("/metrics" in rule for rule in rules), rules
    port = int(server.rsplit(":", 1)[1].split("/")[0])
    operator = provider.token("prometheus", METRICS_SCOPE, provider.resource)  # type: ignore[attr-defined]
    analyst = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    with Balancer([port], frontend=rules) as proxy:
        base = proxy.url.removesuffix("/mcp")
        for path in SPELLINGS:
            for headers in ({}, _bearer(operator)):
                answer = httpx.get(base + path, headers=headers, timeout=30)
                assert answer.status_code == 403 and "bfsql_" not in answer.text, (path, answer.status_code)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}}
        passed = httpx.post(proxy.url, json=initialize, timeout=30,
                            headers={**_bearer(analyst), "Accept": "application/json, text/event-stream"})
        assert passed.status_code == 200, (passed.status_code, proxy.log()[-2000:])
