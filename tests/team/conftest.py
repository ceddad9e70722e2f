"""The OpenID provider the OAuth tests of tests/team share: oidc-provider from npm, on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.services import free_port
from bfsql_testsupport.team import METRICS_SCOPE


@pytest.fixture(scope="module")
def provider() -> Iterator[OpenIdProvider]:
    """The provider, its clients and the resources it issues tokens for (the server's resource is set later).

    ``prometheus`` may ask for :data:`METRICS_SCOPE` only; the others for graph scopes only.
    """
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    clients = {"analyst": "graph:famplex", "admin": "graph:*", "both": "graph:famplex graph:restricted",
               "nobody": "", "elsewhere": "graph:famplex", "prometheus": METRICS_SCOPE}
    resources = {resource: f"graph:famplex graph:restricted graph:* {METRICS_SCOPE}",
                 "https://other.example/mcp": "graph:famplex"}
    with OpenIdProvider(clients, resources) as running:
        running.server_port = port  # type: ignore[attr-defined]
        running.resource = resource  # type: ignore[attr-defined]
        yield running
