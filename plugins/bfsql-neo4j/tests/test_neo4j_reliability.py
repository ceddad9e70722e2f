"""Fuzzing, the injection corpus and server faults against ``bfsql serve --backend neo4j`` on real FalkorDB.

Every call goes through a real MCP client session (:class:`SessionThread`) to a
``bfsql serve`` subprocess reading FalkorDB over Bolt. The tests share one small FalkorDB of
their own (the standard graph, saved in an RDB snapshot so that a restart on the same ports
serves the same data) rather than the session's ``falkordb_server``: hostile arguments could
crash FalkorDB (an oversized type filter did, see
:func:`test_an_oversized_type_filter_does_not_crash_falkordb`), and the
fault tests stop, kill and restart it.

Bounded for CI by ``BFSQL_FUZZ_EXAMPLES`` (default 200). Figures are printed at the end of
the run and saved in ``.nox/reliability-figures-neo4j.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.faults import BackgroundLoop, MarkedProcess, SlowProxy, new_mark
from bfsql.testing.reliability import (
    INJECTION_CORPUS,
    Outcome,
    SessionThread,
    check_outcome,
    clear_failure,
    hits_of,
    lexical_match,
    reference_answers,
    standard_ids,
    tool_arguments,
)
from bfsql.testing.services import free_port, unavailable, wait_for_port
from bfsql.testing.standard_graph import standard_records

from conftest import FalkorServer, falkordb_command, reset_bolt, stop_process

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
QUERY_TIMEOUT = 5.0
"""``--query-timeout``: the longest one Bolt statement may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
SLOW_ANSWER = 0.25
"""Seconds the proxy holds every chunk the server sends while a traversal is slowed."""


ENTITY_IDS, DANGLING_IDS = standard_ids()
KNOWN_IDS = [*ENTITY_IDS, *DANGLING_IDS]


# --- a FalkorDB of the tests' own, restartable with the same data -------------------------------


class FalkorInstance:
    """A FalkorDB on its own ports with the standard graph in an RDB snapshot, reloaded by every restart."""

    def __init__(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="bfsql-falkordb-reliability-")
        self.redis_port, self.bolt_port = free_port(), free_port(below=32768)
        self.command = falkordb_command(self.redis_port, self.bolt_port, self.workdir, "--dbfilename", "graph.rdb")
        self.process: subprocess.Popen[bytes] | None = None
        self._server: FalkorServer | None = None
        self.starts = 0

    @property
    def server(self) -> FalkorServer:
        """The running server: its ports, redis client and the configuration of the served graph."""
        assert self._server is not None, "start() first"
        return self._server

    def start(self) -> float:
        """Start (or restart) the server on the same ports; seconds until it serves its graph again."""
        try:
            import falkordb
        except ImportError:
            unavailable("FalkorDB", "the PyPI package falkordb (its Python client) is not installed")
        began = time.perf_counter()
        self.starts += 1
        log_path = Path(self.workdir, f"server-{self.starts}.log")
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(self.redis_port, 30)
            wait_for_port(self.bolt_port, 30)
        except TimeoutError as exc:
            raise AssertionError(f"FalkorDB did not start: {exc}; log: {log_path.read_text()[-2000:]}") from None
        db = falkordb.FalkorDB(host="127.0.0.1", port=self.redis_port, socket_timeout=60)
        if self._server is None:
            self._server = FalkorServer(self.redis_port, self.bolt_port, db)
            self._server.use("standard", standard_records)
            db.connection.execute_command("SAVE")  # every restart reloads exactly this
        else:
            self._server.db = db
            self._server._wait_for_indexes()
        return time.perf_counter() - began

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean stop) or SIGKILL (a crash); either way the process is reaped."""
        assert self.process is not None
        if kill:
            self.process.kill()
        stop_process(self.process)

    def alive(self) -> bool:
        """Whether the server process runs and answers a redis PING within a few seconds."""
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            with redis.Redis(host="127.0.0.1", port=self.redis_port, socket_timeout=5, socket_connect_timeout=5) as db:
                return bool(db.ping())
        except redis.RedisError:
            return False

    def recover(self) -> bool:
        """Restart the server if it died or hangs; whether it had to."""
        if self.alive():
            return False
        if self.process is not None:
            self.process.kill()
            stop_process(self.process)
        self.start()
        return True

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            stop_process(self.process)
        shutil.rmtree(self.workdir, ignore_errors=True)


# --- helpers ---------------------------------------------------------------------------------


def serve_params(
    server: FalkorServer, uri: str | None = None, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """``bfsql serve --backend neo4j`` over stdio, reading ``server`` (or ``uri``, e.g. a proxy in front of it)."""
    env = {**(env or os.environ), **server.env(BFSQL_NEO4J_QUERY_TIMEOUT=str(QUERY_TIMEOUT))}
    env.pop("BFSQL_LOAD_PLUGINS", None)
    args = ["-m", "bfsql", "serve", "--backend", "neo4j", "--timeout", str(CALL_TIMEOUT)]
    if uri is not None:
        args += ["--uri", uri]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def graph_dump(server: FalkorServer) -> dict[str, Any]:
    """Counts and a hash of everything in the served graph, read over redis with read-only queries."""
    graph = server.db.select_graph("falkordb")
    nodes = graph.ro_query("MATCH (n) RETURN id(n), labels(n), properties(n) ORDER BY id(n)").result_set
    edges = graph.ro_query(
        "MATCH (a)-[r]->(b) RETURN id(r), type(r), id(a), id(b), properties(r) ORDER BY id(r)"
    ).result_set
    indexes = graph.ro_query("CALL db.indexes() YIELD label, properties, types RETURN label, properties, types")
    canonical = json.dumps(
        [nodes, edges, sorted(map(str, indexes.result_set)), sorted(server.db.list_graphs())],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return {"nodes": len(nodes), "edges": len(edges), "sha256": hashlib.sha256(canonical.encode()).hexdigest()}


class Crashes:
    """FalkorDB crashes caused by calls: each is recorded and the server restarted with the same data."""

    def __init__(self, instance: FalkorInstance) -> None:
        self.instance = instance
        self.seen: list[str] = []

    def after(self, tool: str, arguments: Any, outcome: Outcome) -> bool:
        """Restart FalkorDB if the call brought it down; whether it did."""
        if not self.instance.recover():
            return False
        self.seen.append(f"{tool} {json.dumps(arguments, ensure_ascii=False)[:300]}: {outcome.text[:200]}")
        return True


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def instance() -> Iterator[FalkorInstance]:
    """The tests' own FalkorDB (never the session's ``falkordb_server``), always stopped at the end."""
    falkor = FalkorInstance()
    try:
        falkor.start()
        yield falkor
    finally:
        falkor.close()


@pytest.fixture
def healthy(instance: FalkorInstance) -> FalkorInstance:
    """The instance, restarted first if an earlier test left it down."""
    instance.recover()
    reset_bolt(instance.bolt_port)
    return instance


@pytest.fixture(scope="module")
def session(instance: FalkorInstance) -> Iterator[SessionThread]:
    instance.recover()
    reset_bolt(instance.bolt_port)
    try:
        with SessionThread(serve_params(instance.server), call_timeout=CLIENT_WAIT) as held:
            yield held
    finally:
        if instance.alive():
            reset_bolt(instance.bolt_port)  # bfsql said GOODBYE on exit: take FalkorDB's stale descriptor


# --- fuzzing ---------------------------------------------------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(healthy, session, figures):
    before = graph_dump(healthy.server)
    crashes = Crashes(healthy)
    start_calls, started = session.calls, time.perf_counter()
    outcomes: Counter[str] = Counter()
    unexplained: list[str] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(KNOWN_IDS))
    def one(call):
        tool, arguments = call
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        outcomes["error" if outcome.is_error else "answer"] += 1
        crashed = crashes.after(tool, arguments, outcome)
        if outcome.is_error and not crashed and ("Bolt" in outcome.text or "graph backend failed" in outcome.text):
            unexplained.append(f"{tool} {json.dumps(arguments)[:300]}: {outcome.text[:300]}")

    one()
    seconds = time.perf_counter() - started
    schema = session.call("describe_schema", {})
    assert not schema.is_error and "Gene" in schema.data()["entity_types"], "the server must still answer"
    traversal = session.call("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1})
    assert not traversal.is_error and "GENE:MDM2" in {n["id"] for n in traversal.data()["nodes"]}
    assert graph_dump(healthy.server) == before, "the graph changed"
    figures["neo4j.fuzz"] = {
        "calls": session.calls - start_calls,
        "answers": outcomes["answer"],
        "tool_errors": outcomes["error"],
        "falkordb_crashes": len(crashes.seen),
        "seconds": round(seconds, 1),
    }
    assert not crashes.seen, "fuzzed arguments crashed FalkorDB:\n" + "\n".join(crashes.seen[:10])
    assert not unexplained, "the Bolt server failed on fuzzed arguments:\n" + "\n".join(unexplained[:10])


# --- the injection corpus ----------------------------------------------------------------------


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(healthy, session, figures):
    before = graph_dump(healthy.server)
    crashes = Crashes(healthy)
    outcomes = {"error": 0, "empty": 0, "match": 0}

    def call(tool: str, arguments: dict[str, Any]) -> Outcome:
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        crashes.after(tool, arguments, outcome)
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
    after = graph_dump(healthy.server)
    assert after == before, "the graph changed"
    figures["neo4j.injection"] = {
        "entries": len(INJECTION_CORPUS),
        "calls_per_entry": 6,
        "search": outcomes,
        "falkordb_crashes": len(crashes.seen),
        "graph": {"nodes": after["nodes"], "edges": after["edges"], "unchanged": True},
    }
    assert not crashes.seen, "corpus entries crashed FalkorDB:\n" + "\n".join(crashes.seen)


def test_an_oversized_type_filter_does_not_crash_falkordb(healthy, session):
    arguments = {"query": "p53", "node_types": ["A" * 5000], "mode": "lexical"}
    outcome = session.call("search_entities", arguments)
    check_outcome(outcome)
    crashed = healthy.recover()
    assert not crashed, "FalkorDB crashed (restarted with the same data)"


# --- faults ----------------------------------------------------------------------------------

FAILURE_SAYS = ("Bolt server", "timed out")
"""What a clear error during an outage mentions."""

REFERENCE_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "traversal": ("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 2}),
    "entity": ("describe_entity", {"id": "DRUG:aspirin"}),
    "entities": ("describe_entities", {"ids": ["DISEASE:LFS", "GENE:β-catenin", "NOPE:x"]}),
    "search": ("search_entities", {"query": "catenin", "mode": "lexical"}),
    "in_flight": ("bfs_query", {"seeds": ["DRUG:nutlin-3"], "max_hops": 3}),
    "intersection": ("intersect_subgraphs", {"seeds": ["GENE:MDM2", "DISEASE:胃癌"], "k": 2}),
}


def test_server_stopped_mid_session_then_restarted(healthy, session, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    data_before = graph_dump(healthy.server)
    marked = new_mark()
    try:
        with SessionThread(serve_params(healthy.server, env=marked), call_timeout=CLIENT_WAIT) as subject:
            bfsql = MarkedProcess(marked)
            warm = subject.call(*REFERENCE_CALLS["entity"])
            assert not warm.is_error and warm.data() == expected["entity"]

            healthy.stop()  # SIGTERM: the server goes away between two calls
            errors = []
            for name in ("traversal", "entities", "search"):
                started = time.perf_counter()
                errors.append(clear_failure(subject.call(*REFERENCE_CALLS[name]), started, CALL_TIMEOUT, *FAILURE_SAYS))
            assert bfsql.is_running(), "bfsql serve must outlive its backend's server"

            restart = healthy.start()
            assert graph_dump(healthy.server) == data_before, "the restarted server must hold the same data"
            started = time.perf_counter()
            first = subject.call(*REFERENCE_CALLS["traversal"])
            recovery = time.perf_counter() - started
            assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
            assert first.data() == expected["traversal"]
            for name in ("entity", "entities", "search"):  # errors were not cached, answers are still right
                again = subject.call(*REFERENCE_CALLS[name])
                assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
            assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    finally:
        if healthy.alive():
            reset_bolt(healthy.bolt_port)
    figures["neo4j.fault.stopped_between_calls"] = {
        "survived": True,
        "calls_failed_while_down": len(errors),
        "seconds_to_error_max": round(max(errors), 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def test_server_killed_during_a_traversal_then_restarted(healthy, session, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    marked = new_mark()
    try:
        with (
            BackgroundLoop() as loop,
            SlowProxy(loop, healthy.bolt_port) as proxy,
            SessionThread(
                serve_params(healthy.server, uri=f"bolt://127.0.0.1:{proxy.port}", env=marked),
                call_timeout=CLIENT_WAIT,
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
            killed = time.perf_counter()
            healthy.stop(kill=True)  # SIGKILL while the traversal waits for answers
            seconds_to_error = clear_failure(call.result(CLIENT_WAIT), killed, CALL_TIMEOUT, *FAILURE_SAYS)
            assert bfsql.is_running()

            proxy.delay = 0.0
            restart = healthy.start()
            started = time.perf_counter()
            first = subject.call(*REFERENCE_CALLS["in_flight"])
            recovery = time.perf_counter() - started
            assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
            assert first.data() == expected["in_flight"], "a partial traversal was cached"
            for name in ("intersection", "entity"):
                again = subject.call(*REFERENCE_CALLS[name])
                assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
            assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    finally:
        if healthy.alive():
            reset_bolt(healthy.bolt_port)
    figures["neo4j.fault.killed_during_traversal"] = {
        "survived": True,
        "traversal": f"bfs_query max_hops=3, server answers held {SLOW_ANSWER:g}s per chunk by a proxy",
        "seconds_in_flight_before_kill": round(in_flight, 2),
        "chunks_sent_before_kill": chunks_sent,
        "seconds_to_error": round(seconds_to_error, 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }
