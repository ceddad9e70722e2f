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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.reliability import Outcome, SessionThread, check_outcome, standard_ids
from bfsql.testing.scenarios import fuzz, injection_corpus
from bfsql.testing.standard_graph import MDM2, TP53, standard_records
from bfsql_testsupport.outages import outage_between_calls, outage_during_traversal, standard_reference_calls
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

from conftest import FalkorServer, falkordb_command, reset_bolt, stop_process

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
QUERY_TIMEOUT = 5.0
"""``--query-timeout``: the longest one Bolt statement may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""


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
            self._server.serve_only("standard", standard_records)
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


# --- fuzzing and the injection corpus ---------------------------------------------------------

BACKEND_FAILED = ("Bolt", "graph backend failed")
"""What an error says when the server, not the arguments, failed."""


def test_fuzzed_calls_end_as_answers_or_clear_errors(healthy, session, figures):
    before = graph_dump(healthy.server)
    crashes = Crashes(healthy)
    measured = fuzz(session, KNOWN_IDS, FUZZ_EXAMPLES, backend_failed=BACKEND_FAILED, hub=TP53, neighbour=MDM2,
                    after_call=crashes.after)
    assert graph_dump(healthy.server) == before, "the graph changed"
    figures["neo4j.fuzz"] = {**measured, "falkordb_crashes": len(crashes.seen)}
    assert not crashes.seen, "fuzzed arguments crashed FalkorDB:\n" + "\n".join(crashes.seen[:10])


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(healthy, session, figures):
    before = graph_dump(healthy.server)
    crashes = Crashes(healthy)
    measured = injection_corpus(session, hub=TP53, backend_failed=BACKEND_FAILED, after_call=crashes.after)
    after = graph_dump(healthy.server)
    assert after == before, "the graph changed"
    figures["neo4j.injection"] = {
        **measured,
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

REFERENCE_CALLS = standard_reference_calls()
OUTAGE_SAYS = ("Bolt server", "timed out")
"""What a clear error during an outage says."""


def test_server_stopped_mid_session_then_restarted(healthy, session, figures):
    try:
        figures["neo4j.fault.stopped_between_calls"] = outage_between_calls(
            session, lambda env: serve_params(healthy.server, env=env), healthy, REFERENCE_CALLS,
            timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, dump=lambda: graph_dump(healthy.server), client_wait=CLIENT_WAIT,
        )
    finally:
        if healthy.alive():
            reset_bolt(healthy.bolt_port)


def test_server_killed_during_a_traversal_then_restarted(healthy, session, figures):
    try:
        figures["neo4j.fault.killed_during_traversal"] = outage_during_traversal(
            session, lambda port, env: serve_params(healthy.server, uri=f"bolt://127.0.0.1:{port}", env=env),
            healthy, healthy.bolt_port, REFERENCE_CALLS, timeout=CALL_TIMEOUT, says=OUTAGE_SAYS,
            client_wait=CLIENT_WAIT,
        )
    finally:
        if healthy.alive():
            reset_bolt(healthy.bolt_port)
