"""``/healthz`` and ``/readyz``: for load balancers, unauthenticated, naming no graph a caller may not know of.

In process: a store that stops answering, and a backend whose ``health()`` reports a problem,
make ``/readyz`` answer 503 within its timeout; checks are shared. Over HTTP: a graph that could
not be opened, seen anonymously (counts only), with the shared token, and with OAuth tokens
granting one graph or both (against oidc-provider); HAProxy with deploying.md's health check
sends every call to the replica that is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Collection, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bfsql.demo import ensure_demo_db
from bfsql.plugins import get_backends
from bfsql.server.app import BfsqlServer
from bfsql.server.health import HealthRoutes, Readiness
from bfsql.server.run import open_server
from bfsql.settings import GraphPlan, ServerSettings
from bfsql_testsupport.balancer import Balancer
from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.services import free_port
from bfsql_testsupport.team import mcp_client, serving

TOKEN = "a-shared-token-long-enough"


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("health requests never reach the MCP app")


@contextlib.asynccontextmanager
async def _health_app(known: Collection[str] | None = None, timeout: float = 0.5) -> AsyncIterator[
        tuple[BfsqlServer, httpx.AsyncClient]]:
    """The demo served as ``famplex`` and ``other``, and a client of its health routes; the caller knows ``known``."""
    spec = get_backends()["sqlite"]
    plans = [GraphPlan(name, spec, spec.config_model(db=ensure_demo_db()), ServerSettings())
             for name in ("famplex", "other")]

    async def viewer(scope: Any) -> Collection[str] | None:
        return known

    async with open_server(plans) as server:
        app = HealthRoutes(_nothing, Readiness(server, timeout), viewer)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
            yield server, client


async def test_a_store_that_stops_answering_makes_the_server_not_ready_within_the_timeout(monkeypatch):
    async with _health_app(known=None) as (server, client):
        assert (await client.get("/healthz")).json() == {"status": "live"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready", "graphs": {"ready": 2, "not_ready": 0}}

        async def hangs(ids: list[str]) -> dict[str, Any]:
            await asyncio.sleep(3600)
            return {}

        monkeypatch.setattr(server.graphs["other"].graph.backend, "get_nodes", hangs)
        await asyncio.sleep(1.1)  # past the reuse of the last check
        started = time.monotonic()
        answers = await asyncio.gather(*(client.get("/readyz") for _ in range(20)))
        assert time.monotonic() - started < 1.5, "twenty requests share one check, bounded by its timeout"
        assert {a.status_code for a in answers} == {503}
        assert answers[0].json() == {"status": "not ready", "graphs": {"ready": 1, "not_ready": 1},
                                     "not_ready": {"other": ["Its store did not answer within 0.5 s."]}}
        assert (await client.get("/healthz")).status_code == 200, "alive all the same"


async def test_a_backend_reporting_a_problem_is_not_ready_and_only_callers_who_know_it_see_its_name(monkeypatch):
    async with _health_app(known={"famplex"}) as (server, client):

        async def lagging() -> list[str]:
            return ["The PostgreSQL standby lags 42 s behind its primary."]

        monkeypatch.setattr(server.graphs["other"].graph.backend, "health", lagging)
        answer = await client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json() == {"status": "not ready", "graphs": {"ready": 1, "not_ready": 1}}
        assert "other" not in answer.text


@pytest.fixture(scope="module")
def broken_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``famplex`` (the demo) and ``restricted``, a file that is no store: the second cannot be opened."""
    folder = tmp_path_factory.mktemp("health")
    broken = folder / "not-a-store.db"
    broken.write_text("this is not a sqlite file\n" * 100)
    config = folder / "graphs.toml"
    config.write_text(f"""[graphs.famplex]
backend = "sqlite"

[graphs.restricted]
backend = "sqlite"
db = "{broken}"
""")
    return config


def test_readyz_counts_for_anyone_and_names_for_the_token(broken_config: Path, tmp_path: Path):
    with serving(["--config", str(broken_config), "--auth-token", TOKEN], log=tmp_path / "serve.log") as (url, _):
        base = url.removesuffix("/mcp")
        headers = {"host": "elsewhere.example"}  # a balancer's check names no host of ours, or none
        assert httpx.get(f"{base}/healthz", headers=headers, timeout=30).status_code == 200
        anonymous = httpx.get(f"{base}/readyz", headers=headers, timeout=30)
        assert anonymous.status_code == 503
        assert anonymous.json() == {"status": "not ready", "graphs": {"ready": 1, "not_ready": 1}}
        for credential in ("Bearer wrong-token-of-some-length", "Basic x"):
            assert "restricted" not in httpx.get(f"{base}/readyz", headers={"authorization": credential},
                                                 timeout=30).text
        named = httpx.get(f"{base}/readyz", headers={"authorization": f"Bearer {TOKEN}"}, timeout=30).json()
        assert list(named["not_ready"]) == ["restricted"]
        assert named["not_ready"]["restricted"][0].startswith("It could not be opened at start-up")


def test_readyz_names_to_an_oauth_token_only_the_graphs_it_grants(broken_config: Path, provider: OpenIdProvider):
    options = ["--config", str(broken_config), "--oauth-issuer", provider.issuer,
               "--oauth-resource", provider.resource]  # type: ignore[attr-defined]
    with serving(options, port=provider.server_port) as (url, _):  # type: ignore[attr-defined]
        ready = url.replace("/mcp", "/readyz")

        def seen(client: str, scope: str) -> dict[str, Any]:
            token = provider.token(client, scope, provider.resource)  # type: ignore[attr-defined]
            answer = httpx.get(ready, headers={"authorization": f"Bearer {token}"}, timeout=30)
            assert answer.status_code == 503
            return answer.json()

        assert "not_ready" not in seen("analyst", "graph:famplex")
        assert list(seen("both", "graph:famplex graph:restricted")["not_ready"]) == ["restricted"]
        assert "restricted" not in httpx.get(ready, timeout=30).text


@contextlib.contextmanager
def _one_ready_one_not(broken_config: Path, folder: Path) -> Iterator[Balancer]:
    """Two replicas behind HAProxy: ``r1`` serving a graph that could not be opened, ``r2`` the demo alone."""
    ports = [free_port(), free_port()]
    with contextlib.ExitStack() as stack:
        stack.enter_context(serving(["--config", str(broken_config)], port=ports[0], log=folder / "r1.log"))
        stack.enter_context(serving([], port=ports[1], log=folder / "r2.log"))
        yield stack.enter_context(Balancer(ports))


async def _served_by(url: str, calls: int) -> list[str]:
    served_by: list[str] = []
    async with mcp_client(url, served_by=served_by) as client:
        for _ in range(calls):
            assert not (await client.call_tool("describe_entity", {"id": "HGNC:BRAF"})).is_error
    return served_by


def test_the_balancer_sends_calls_only_to_the_replica_that_is_ready(broken_config: Path, tmp_path: Path):
    with _one_ready_one_not(broken_config, tmp_path) as balancer:
        time.sleep(2)  # a few health checks
        served_by = asyncio.run(_served_by(balancer.url, 10))
    assert set(served_by) == {"r2"}, served_by
