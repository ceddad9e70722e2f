"""bfsql as an OAuth 2.1 resource server, against a real OpenID provider (oidc-provider from npm) on loopback.

Tokens come from the provider's client-credentials grant; the forged ones are signed with the
provider's own private key (which the test made and handed it) but with claims the provider
would never issue, or not signed at all, or "signed" with HMAC keyed by the public key. Every
forged or foreign token is refused, and a token sees only the graphs its scopes name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from bfsql_testsupport.oidc import OpenIdProvider, rsa_key
from bfsql_testsupport.team import GRAPHS, MemoryTokens, mcp_client, serving, two_graphs_config

TOKEN = "a-shared-token-long-enough"


@pytest.fixture(scope="module")
def server(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = two_graphs_config(tmp_path_factory.mktemp("oauth"))
    options = ["--config", str(config), "--oauth-issuer", provider.issuer,
               "--oauth-resource", provider.resource]  # type: ignore[attr-defined]
    with serving(options, port=provider.server_port) as (url, _):  # type: ignore[attr-defined]
        yield url


def _post(url: str, token: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    return httpx.post(url, json=body, headers=headers, timeout=30)


def _forged(provider: OpenIdProvider, **changes: Any) -> str:
    """A token signed with the provider's own key, with the claims a real one has, changed as asked."""
    now = int(time.time())
    claims = {"iss": provider.issuer, "sub": "mallory", "aud": provider.resource,  # type: ignore[attr-defined]
              "iat": now, "exp": now + 600, "scope": "graph:*", "client_id": "mallory"}
    claims.update(changes)
    claims = {k: v for k, v in claims.items() if v is not None}
    key, jwk = provider.keys[0]
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": jwk["kid"], "typ": "at+jwt"})


def _segment(data: dict[str, Any]) -> str:
    import base64

    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_discovery_names_the_issuer_and_asks_for_no_graph_scope(server: str, provider: OpenIdProvider):
    base = server.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        answer = httpx.get(base + path, timeout=30)
        assert answer.status_code == 200, (path, answer.text)
        metadata = answer.json()
        assert metadata["resource"] == provider.resource  # type: ignore[attr-defined]
        assert metadata["authorization_servers"] == [provider.issuer]
        # MCP clients ask for every scope listed here: a user holding fewer graphs would be refused.
        assert metadata["scopes_supported"] == []


async def test_scopes_supported_lists_what_the_operator_sets():
    """For a provider that grants the held part of a request: the scopes clients should ask for, and no others."""
    from bfsql.server.oauth import GraphScopes, OAuthGate
    from bfsql.settings import ServerSettings

    settings = ServerSettings(transport="http", oauth_issuer="https://login.example.org/realms/kg",
                              oauth_resource="https://kg.example.org/mcp",
                              oauth_scopes_supported=("graph:famplex", "graph:restricted"))
    gate = OAuthGate(_never_called, settings, GraphScopes("graph:", "scope", list(GRAPHS)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(gate), base_url="http://kg.example.org") as client:
        metadata = (await client.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert metadata["scopes_supported"] == ["graph:famplex", "graph:restricted"]


async def _never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the discovery document is answered by the gate itself")


async def test_the_sdk_signs_in_a_client_granted_fewer_graphs_than_the_server_has(server: str,
                                                                                   provider: OpenIdProvider):
    """A client granted fewer graphs than the server has (graph:famplex only) signs in with the SDK's OAuth client.

    The SDK's own client-credentials flow: discovery from the 401, the provider's metadata, a
    token request, the call retried with the token; the analyst holds graph:famplex only.
    """
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    tokens = MemoryTokens()
    auth = ClientCredentialsOAuthProvider(server, tokens, "analyst", provider.secret("analyst"),
                                          issuer=provider.issuer)
    async with mcp_client(server, auth=auth) as client:
        schema = await client.call_tool("describe_schema", {})
        assert [g["name"] for g in schema.structured_content["graphs"]] == ["famplex"]
        hidden = await client.call_tool("search_entities", {"query": "BRAF", "graph": "restricted"})
        assert hidden.is_error
    claims = jwt.decode(tokens.tokens.access_token, options={"verify_signature": False})
    assert claims["scope"] == "graph:famplex" and claims["aud"] == provider.resource  # type: ignore[attr-defined]


def test_no_token_is_told_where_to_get_one(server: str):
    answer = _post(server, None)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "/.well-known/oauth-protected-resource/mcp" in challenge


def test_forged_and_foreign_tokens_are_refused(server: str, provider: OpenIdProvider):
    key, jwk = provider.keys[0]
    now = int(time.time())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    valid_claims = jwt.decode(_forged(provider), options={"verify_signature": False})
    stranger, _ = rsa_key(jwk["kid"])  # same kid, another key: a token from someone else's provider
    refused = {
        "expired": _forged(provider, iat=now - 7200, exp=now - 3600),
        "not yet valid": _forged(provider, nbf=now + 3600),
        "without exp": _forged(provider, exp=None),
        "wrong audience (a real token for another resource)": provider.token(
            "elsewhere", "graph:famplex", "https://other.example/mcp"),
        "wrong audience (forged)": _forged(provider, aud="https://other.example/mcp"),
        "wrong issuer": _forged(provider, iss="https://evil.example"),
        "unsigned (alg none)": f"{_segment({'alg': 'none', 'typ': 'at+jwt', 'kid': jwk['kid']})}."
                               f"{_segment(valid_claims)}.",
        "re-signed with HMAC keyed by the public key": _hmac_with(public_pem, valid_claims, jwk["kid"]),
        "signed by another key": jwt.encode(valid_claims, stranger, algorithm="RS256", headers={"kid": jwk["kid"]}),
        "garbage": "not-a-jwt",
        "the shared-token kind": TOKEN,
    }
    for what, token in refused.items():
        answer = _post(server, token)
        assert answer.status_code == 401, f"{what}: {answer.status_code} {answer.text}"
    assert _post(server, _forged(provider)).status_code == 200, "the same claims, properly signed, are accepted"


def _hmac_with(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    import base64
    import hashlib
    import hmac

    signing_input = f"{_segment({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{_segment(claims)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_a_token_granting_no_graph_is_refused_403(server: str, provider: OpenIdProvider):
    scope_less = provider.token("nobody", resource=provider.resource)  # type: ignore[attr-defined]
    assert "scope" not in jwt.decode(scope_less, options={"verify_signature": False})
    answer = _post(server, scope_less)
    assert answer.status_code == 403
    assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
    assert "restricted" not in answer.text and "famplex" not in answer.text


async def test_a_token_sees_only_the_graphs_its_scopes_name(server: str, provider: OpenIdProvider):
    token = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    async with mcp_client(server, token) as client:
        assert client.instructions and "famplex" in client.instructions
        assert "restricted" not in client.instructions
        for tool in (await client.list_tools()).tools:
            assert "restricted" not in json.dumps(tool.model_dump()), tool.name
        schema = await client.call_tool("describe_schema", {})
        assert [g["name"] for g in schema.structured_content["graphs"]] == ["famplex"]
        assert schema.structured_content["graphs"][0]["default"] is True
        answer = await client.call_tool("search_entities", {"query": "BRAF", "graph": "famplex"})
        assert not answer.is_error
        hidden = await client.call_tool("search_entities", {"query": "BRAF", "graph": "restricted"})
        absent = await client.call_tool("search_entities", {"query": "BRAF", "graph": "nowhere"})
        assert hidden.is_error and absent.is_error
        text = hidden.content[0].text
        assert text.replace("restricted", "X") == absent.content[0].text.replace("nowhere", "X"), \
            "a graph outside the token's scope is as unknown as one that does not exist"
        assert "famplex" in text and text.count("restricted") == 1  # only the name the caller wrote


async def test_a_wider_token_sees_both_graphs(server: str, provider: OpenIdProvider):
    for client_id, scope in (("admin", "graph:*"), ("both", "graph:famplex graph:restricted")):
        token = provider.token(client_id, scope, provider.resource)  # type: ignore[attr-defined]
        async with mcp_client(server, token) as client:
            schema = await client.call_tool("describe_schema", {})
            assert [g["name"] for g in schema.structured_content["graphs"]] == list(GRAPHS)
            answer = await client.call_tool("describe_entity", {"id": "HGNC:BRAF", "graph": "restricted"})
            assert not answer.is_error, answer.content[0].text


async def test_keys_rotated_by_the_provider_are_picked_up(server: str, provider: OpenIdProvider):
    first = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    assert _post(server, first).status_code == 200
    old = provider.keys[0]
    provider.restart([rsa_key("key-2"), old])  # the new key signs; the old one is still published
    second = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    assert jwt.get_unverified_header(second)["kid"] == "key-2"
    deadline = time.monotonic() + 30
    while _post(server, second).status_code != 200:  # keys are fetched again at most every few seconds
        assert time.monotonic() < deadline, "a token signed with the rotated-in key was never accepted"
        time.sleep(1)
    assert _post(server, first).status_code == 200, "tokens signed with the old key stay valid while it is published"
    provider.restart([rsa_key("key-3"), provider.keys[0]])  # the first key withdrawn
    third = provider.token("analyst", "graph:famplex", provider.resource)  # type: ignore[attr-defined]
    while _post(server, third).status_code != 200:
        assert time.monotonic() < deadline + 30, "a token signed with the rotated-in key was never accepted"
        time.sleep(1)
    assert _post(server, second).status_code == 200
    assert _post(server, first).status_code == 401, "a withdrawn key's tokens are refused, even ones accepted before"


def test_without_oauth_the_discovery_address_answers_404(tmp_path: Path):
    """Without OAuth the discovery addresses answer 404, never 401 (which sends MCP Inspector into an OAuth flow)."""
    with serving(["--auth-token", TOKEN], log=tmp_path / "serve.log") as (url, _):
        base = url.removesuffix("/mcp")
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-authorization-server"):
            for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}, {"Authorization": "Bearer wrong"}):
                assert httpx.get(base + path, headers=headers, timeout=30).status_code == 404, (path, headers)
        assert _post(url, None).status_code == 401
        assert _post(url, TOKEN).status_code == 200
