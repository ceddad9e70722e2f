"""Fuzzing, the injection corpus and endpoint faults against ``bfsql serve --backend sparql`` on real Oxigraph.

Every call goes through a real MCP client session (:class:`SessionThread`) to a
``bfsql serve`` subprocess reading Oxigraph over HTTP, with the standard graph as its
default graph and compact ids (``gene:TP53``):

* fuzzing and the injection corpus run against the session's ``oxigraph_server`` (the
  standard graph, LUBM and the injection graph), whose whole dataset is dumped over its
  SPARQL endpoint before and after to prove that nothing changed;
* the fault tests start a second Oxigraph of their own (its own port and store directory,
  the standard graph only), stop it, kill it while a traversal waits for it (behind a proxy
  that slows its answers) and restart it on the same port over the same store; the same proxy,
  slower still, makes the request and call timeouts fire.

Bounded for CI by ``BFSQL_FUZZ_EXAMPLES`` (default 200). Figures are printed at the end of
the run and saved in ``.nox/reliability-figures-sparql.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from mcp.client.stdio import StdioServerParameters
from sparql_servers import STANDARD_GRAPH, OxigraphInstance, SparqlServer
from sparql_standard_rdf import PREFIXES, compact_id, compact_iri, write_standard_ntriples

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

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
SLOW_ANSWER = 0.25
"""Seconds the proxy holds every chunk Oxigraph sends while a traversal is slowed."""
SLOW_ENDPOINT = 3.0
"""Seconds the proxy holds every chunk Oxigraph sends while the endpoint is too slow for the timeouts."""

ENTITY_IDS, DANGLING_IDS = standard_ids()
KNOWN_IDS = [compact_id(i) for i in (*ENTITY_IDS, *DANGLING_IDS)]
"""The standard graph's ids as this backend writes them under :data:`PREFIXES` (``gene:TP53``)."""

ENDPOINT_FAILED = ("SPARQL endpoint", "graph backend failed")
"""What an error says when the endpoint, not the arguments, failed (e.g. it could not parse a query)."""
UNKNOWN_ID = ("Unknown entity", "Invalid entity id")
"""What an error about an id says: unknown to the graph, or refused as no IRI before any query."""
OUTAGE_SAYS = ("Cannot reach the SPARQL endpoint", "did not answer within", "timed out after")
"""What a clear error during an outage says (src/bfsql_sparql/client.py, core's call timeout)."""


# --- helpers ---------------------------------------------------------------------------------


def serve_params(
    endpoint: str, *options: str, env: dict[str, str] | None = None, timeout: float = CALL_TIMEOUT
) -> StdioServerParameters:
    """``bfsql serve --backend sparql`` over stdio, reading the standard graph at ``endpoint`` with compact ids."""
    args = ["-m", "bfsql", "serve", "--backend", "sparql", "--endpoint", endpoint, "--default-graph", STANDARD_GRAPH]
    args += [arg for prefix in PREFIXES for arg in ("--prefix", prefix)]
    args += ["--timeout", f"{timeout:g}", *options]
    return StdioServerParameters(command=sys.executable, args=args, env=env or dict(os.environ))


def store_dump(endpoint: str) -> dict[str, Any]:
    """Quad and graph counts and a hash of the whole dataset (every graph), read with one plain SPARQL request."""
    query = "SELECT ?g ?s ?p ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
    request = urllib.request.Request(
        endpoint,
        data=urllib.parse.urlencode({"query": query}).encode(),
        headers={"Accept": "text/tab-separated-values", "Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        rows = sorted(response.read().decode().splitlines()[1:])  # Oxigraph's blank node labels are stable
    digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return {"quads": len(rows), "graphs": len({row.split("\t", 1)[0] for row in rows}), "sha256": digest}


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(oxigraph_server: SparqlServer) -> Iterator[SessionThread]:
    """One ``bfsql serve`` for the module, reading the session's Oxigraph."""
    with SessionThread(serve_params(oxigraph_server.endpoint), call_timeout=CLIENT_WAIT) as held:
        yield held


@pytest.fixture
def own_oxigraph(tmp_path: Path) -> Iterator[OxigraphInstance]:
    """A second Oxigraph (never the session's) with the standard graph, alive during one fault test."""
    standard = write_standard_ntriples(tmp_path / "standard.nt", compact_iri)
    instance = OxigraphInstance(tmp_path, {"standard": (STANDARD_GRAPH, standard)})
    try:
        instance.start()
        yield instance
    finally:
        if instance.process is not None:
            instance.stop()


@pytest.fixture
def background() -> Iterator[BackgroundLoop]:
    """An event loop for the proxies."""
    with BackgroundLoop() as loop:
        yield loop


# --- fuzzing ---------------------------------------------------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(oxigraph_server, session, figures):
    before = store_dump(oxigraph_server.endpoint)
    start_calls, started = session.calls, time.perf_counter()
    outcomes: Counter[str] = Counter()
    endpoint_failures: list[str] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(KNOWN_IDS))
    def one(call):
        tool, arguments = call
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        outcomes["error" if outcome.is_error else "answer"] += 1
        if outcome.is_error and any(s in outcome.text for s in ENDPOINT_FAILED):
            endpoint_failures.append(f"{tool} {json.dumps(arguments)[:300]}: {outcome.text[:300]}")

    one()
    seconds = time.perf_counter() - started
    schema = session.call("describe_schema", {})
    assert not schema.is_error and "Gene" in schema.data()["entity_types"], "the server must still answer"
    traversal = session.call("bfs_query", {"seeds": ["gene:TP53"], "max_hops": 1})
    assert not traversal.is_error and "gene:MDM2" in {n["id"] for n in traversal.data()["nodes"]}
    assert store_dump(oxigraph_server.endpoint) == before, "the store changed"
    figures["sparql.fuzz"] = {
        "calls": session.calls - start_calls,
        "answers": outcomes["answer"],
        "tool_errors": outcomes["error"],
        "endpoint_failures": len(endpoint_failures),
        "seconds": round(seconds, 1),
    }
    assert not endpoint_failures, "fuzzed arguments made the endpoint fail:\n" + "\n".join(endpoint_failures[:10])


# --- the injection corpus ----------------------------------------------------------------------


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(oxigraph_server, session, figures):
    before = store_dump(oxigraph_server.endpoint)
    outcomes = {"error": 0, "empty": 0, "match": 0}
    ids = Counter[str]()

    def call(tool: str, arguments: dict[str, Any]) -> Outcome:
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        assert not (outcome.is_error and any(s in outcome.text for s in ENDPOINT_FAILED)), (tool, outcome.text)
        return outcome

    baseline = call("bfs_query", {"seeds": ["gene:TP53"], "max_hops": 1, "topology_only": True}).data()
    baseline_nodes = {n["id"] for n in baseline["nodes"]}
    for entry in INJECTION_CORPUS:
        for entity_id in (entry, f"drug:{entry}"):  # as given, and inside an IRI (no drug is named like an entry)
            described = call("describe_entity", {"id": entity_id})
            assert described.is_error and any(s in described.text for s in UNKNOWN_ID), (entity_id, described.text)
            ids["unknown" if "Unknown entity" in described.text else "invalid"] += 1
            traversed = call("bfs_query", {"seeds": [entity_id], "max_hops": 1})
            assert traversed.is_error and any(s in traversed.text for s in UNKNOWN_ID), (entity_id, traversed.text)
            many = call("describe_entities", {"ids": [entity_id, "gene:TP53"]})
            assert not many.is_error, (entity_id, many.text[:300])
            assert [n["id"] for n in hits_of(many)] == ["gene:TP53"], (entity_id, many.text[:500])
        excluded = call(
            "bfs_query", {"seeds": ["gene:TP53"], "max_hops": 1, "topology_only": True, "exclude_node_types": [entry]}
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
    after = store_dump(oxigraph_server.endpoint)
    assert after == before, "the store changed"
    figures["sparql.injection"] = {
        "entries": len(INJECTION_CORPUS),
        "calls_per_entry": 9,
        "as_id": dict(ids),
        "search": outcomes,
        "store": {"quads": after["quads"], "graphs": after["graphs"], "unchanged": True},
    }


def test_long_invalid_ids_get_short_clear_errors(session):
    """A refused id is quoted shortened in the error, as an unknown one is: a 5 kB id must not come back whole."""
    for entity_id in ("drug:" + "A" * 5000 + ">", "drug:" + "%" * 5000, "http://x/" + "[" * 5000):
        for tool, arguments in (
            ("describe_entity", {"id": entity_id}),
            ("bfs_query", {"seeds": [entity_id], "max_hops": 1}),
            ("describe_entities", {"ids": [entity_id]}),
        ):
            outcome = session.call(tool, arguments)
            check_outcome(outcome)
            if tool == "describe_entities":
                assert hits_of(outcome) == [], outcome.text[:300]
            else:
                assert outcome.is_error and any(s in outcome.text for s in UNKNOWN_ID), outcome.text[:300]


# --- faults ----------------------------------------------------------------------------------

REFERENCE_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "traversal": ("bfs_query", {"seeds": ["gene:TP53"], "max_hops": 2}),
    "entity": ("describe_entity", {"id": "drug:aspirin"}),
    "entities": ("describe_entities", {"ids": ["disease:LFS", "gene:β-catenin", "nope:x"]}),
    "search": ("search_entities", {"query": "catenin", "mode": "lexical"}),
    "in_flight": ("bfs_query", {"seeds": ["drug:nutlin-3"], "max_hops": 3}),
    "intersection": ("intersect_subgraphs", {"seeds": ["gene:MDM2", "disease:胃癌"], "k": 2}),
}


def test_endpoint_stopped_mid_session_then_restarted(session, own_oxigraph, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    data_before = store_dump(own_oxigraph.server.endpoint)
    marked = new_mark()
    with SessionThread(serve_params(own_oxigraph.server.endpoint, env=marked), call_timeout=CLIENT_WAIT) as subject:
        bfsql = MarkedProcess(marked)
        warm = subject.call(*REFERENCE_CALLS["entity"])
        assert not warm.is_error and warm.data() == expected["entity"]

        own_oxigraph.stop()  # SIGTERM: the endpoint goes away between two calls
        errors = []
        for name in ("traversal", "entities", "search"):
            started = time.perf_counter()
            errors.append(clear_failure(subject.call(*REFERENCE_CALLS[name]), started, CALL_TIMEOUT, *OUTAGE_SAYS))
        assert bfsql.is_running(), "bfsql serve must outlive its endpoint"

        restart = own_oxigraph.start()
        assert store_dump(own_oxigraph.server.endpoint) == data_before, "the restarted store must hold the same data"
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["traversal"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["traversal"]
        for name in ("entity", "entities", "search"):  # errors were not cached, answers are still right
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["sparql.fault.stopped_between_calls"] = {
        "survived": True,
        "calls_failed_while_down": len(errors),
        "seconds_to_error_max": round(max(errors), 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def test_endpoint_killed_during_a_traversal_then_restarted(session, own_oxigraph, background, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    marked = new_mark()
    with (
        SlowProxy(background, own_oxigraph.port) as proxy,
        SessionThread(
            serve_params(f"http://127.0.0.1:{proxy.port}/query", env=marked), call_timeout=CLIENT_WAIT
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
        while proxy.sent < sent + 2 and time.perf_counter() - started < 10:
            time.sleep(0.02)  # requests of the traversal are on their way
        time.sleep(3 * SLOW_ANSWER)
        assert not call.done(), "the traversal finished before the fault: slow the proxy down"
        in_flight = time.perf_counter() - started
        requests_sent = proxy.sent - sent
        killed = time.perf_counter()
        own_oxigraph.stop(kill=True)  # SIGKILL while the traversal waits for answers
        seconds_to_error = clear_failure(call.result(CLIENT_WAIT), killed, CALL_TIMEOUT, *OUTAGE_SAYS)
        assert bfsql.is_running()

        proxy.delay = 0.0
        restart = own_oxigraph.start()
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["in_flight"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["in_flight"], "a partial traversal was cached"
        for name in ("intersection", "entity"):
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["sparql.fault.killed_during_traversal"] = {
        "survived": True,
        "traversal": f"bfs_query max_hops=3, Oxigraph's answers held {SLOW_ANSWER:g}s per chunk by a proxy",
        "seconds_in_flight_before_kill": round(in_flight, 2),
        "request_chunks_sent_before_kill": requests_sent,
        "seconds_to_error": round(seconds_to_error, 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def test_a_slow_endpoint_makes_the_timeouts_fire_with_clear_messages(session, own_oxigraph, background, figures):
    expected = reference_answers(session, {"entity": REFERENCE_CALLS["entity"]})["entity"]
    measured: dict[str, Any] = {}
    with SlowProxy(background, own_oxigraph.port) as proxy:
        endpoint = f"http://127.0.0.1:{proxy.port}/query"
        # The request timeout (--query-timeout 1) fires first, naming the endpoint and the limit.
        marked = new_mark()
        params = serve_params(endpoint, "--query-timeout", "1", env=marked)
        with SessionThread(params, call_timeout=CLIENT_WAIT) as subject:
            bfsql = MarkedProcess(marked)
            proxy.delay = SLOW_ENDPOINT
            started = time.perf_counter()
            slow = subject.call(*REFERENCE_CALLS["entity"])
            seconds = clear_failure(slow, started, 1, f"The SPARQL endpoint {endpoint} did not answer within 1s")
            measured["query_timeout_1s_fired_after_seconds"] = round(seconds, 2)
            proxy.delay = 0.0
            again = subject.call(*REFERENCE_CALLS["entity"])  # a request that timed out left nothing behind
            assert not again.is_error and again.data() == expected, again.text[:500]
            assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()

        # The call timeout (--timeout 2) fires before the request timeout (30 s by default).
        with SessionThread(serve_params(endpoint, timeout=2), call_timeout=CLIENT_WAIT) as subject:
            proxy.delay = SLOW_ENDPOINT
            started = time.perf_counter()
            slow = subject.call(*REFERENCE_CALLS["entity"])
            seconds = clear_failure(slow, started, 2, "describe_entity timed out after 2s")
            measured["call_timeout_2s_fired_after_seconds"] = round(seconds, 2)
            proxy.delay = 0.0
            time.sleep(max(0.0, started + SLOW_ENDPOINT + 0.5 - time.perf_counter()))  # the abandoned requests ended
            again = subject.call(*REFERENCE_CALLS["entity"])
            assert not again.is_error and again.data() == expected, again.text[:500]
    figures["sparql.fault.slow_endpoint"] = {"survived": True, **measured}
