"""The issuer's signing keys (JWKS) as bfsql fetches them: never holding back a token whose key it knows.

The keys come through a proxy in front of oidc-provider's JWKS that answers as slowly as the test
says (a slow or struggling issuer) and counts the fetches. Anyone can send a token naming a key
the server has not seen (an unsigned header costs nothing to forge); otherwise each such token
made the server fetch the keys again, at most every 5 s, and every new token, however valid,
waited behind that fetch (7.6 s with a slow issuer).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest

from bfsql_testsupport.oidc import OpenIdProvider, rsa_key
from bfsql_testsupport.team import two_graphs_config

SLOW = 6.0
"""Seconds the slow issuer takes to answer a fetch of its keys."""


class SlowKeys:
    """An HTTP server answering the provider's JWKS after :attr:`delay` seconds, counting the fetches."""

    def __init__(self, jwks_uri: str) -> None:
        self.jwks_uri = jwks_uri
        self.delay = 0.0
        self.fetches: list[float] = []
        keys = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                keys.fetches.append(time.monotonic())
                time.sleep(keys.delay)
                body = httpx.get(keys.jwks_uri, timeout=30).content
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop answering."""
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def slow_keys(provider: OpenIdProvider) -> Iterator[SlowKeys]:
    metadata = httpx.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=30).json()
    keys = SlowKeys(metadata["jwks_uri"])
    yield keys
    keys.close()


@pytest.fixture(scope="module")
def server(provider: OpenIdProvider, slow_keys: SlowKeys, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from bfsql_testsupport.team import serving

    config = two_graphs_config(tmp_path_factory.mktemp("keys"))
    options = ["--config", str(config), "--oauth-issuer", provider.issuer, "--oauth-jwks-url", slow_keys.url,
               "--oauth-resource", provider.resource]  # type: ignore[attr-defined]
    with serving(options, port=provider.server_port) as (url, _):  # type: ignore[attr-defined]
        yield url


def _post(url: str, token: str) -> tuple[int, float]:
    """The status of an initialize with ``token``, and the seconds it took."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    started = time.monotonic()
    answer = httpx.post(url, json=body, headers=headers, timeout=60)
    return answer.status_code, time.monotonic() - started


def _unknown_key_token(provider: OpenIdProvider, kid: str) -> str:
    """A token whose header names a key the issuer does not publish (anyone can make one)."""
    stranger, _ = rsa_key(kid)
    now = int(time.time())
    claims = {"iss": provider.issuer, "sub": "mallory", "aud": provider.resource,  # type: ignore[attr-defined]
              "iat": now, "exp": now + 600, "scope": "graph:*"}
    return jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": kid})


def test_unknown_keys_never_hold_back_tokens_whose_key_is_known(server: str, provider: OpenIdProvider,
                                                                 slow_keys: SlowKeys):
    resource = provider.resource  # type: ignore[attr-defined]
    assert _post(server, provider.token("analyst", "graph:famplex", resource))[0] == 200  # the keys are fetched
    slow_keys.delay = SLOW
    time.sleep(5.5)  # past the least interval between two fetches: an unknown key may start one
    fetched = len(slow_keys.fetches)
    with ThreadPoolExecutor(8) as pool:
        forged = [pool.submit(_post, server, _unknown_key_token(provider, f"unknown-{i}")) for i in range(6)]
        time.sleep(0.5)  # a fetch of the keys is under way, for the slow issuer
        valid = [pool.submit(_post, server, provider.token("analyst", "graph:famplex", resource)) for _ in range(4)]
        answers = [f.result() for f in valid]
        refused = [f.result() for f in forged]
    assert all(status == 200 for status, _ in answers), answers
    assert max(seconds for _, seconds in answers) < 1.5, f"new valid tokens waited for the fetch: {answers}"
    assert all(status == 401 for status, _ in refused), refused
    assert max(seconds for _, seconds in refused) < 2.5, f"a token naming an unknown key failed slowly: {refused}"
    assert len(slow_keys.fetches) - fetched == 1, "six unknown keys within 5 s make one fetch"
    slow_keys.delay = 0.0
