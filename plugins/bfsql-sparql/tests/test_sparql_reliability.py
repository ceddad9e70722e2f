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
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from sparql_servers import STANDARD_GRAPH, OxigraphInstance, SparqlServer
from sparql_standard_rdf import PREFIXES, compact_id, compact_iri, write_standard_ntriples

from bfsql.testing.reliability import (
    SessionThread,
    check_outcome,
    clear_failure,
    hits_of,
    reference_answers,
    standard_ids,
)
from bfsql.testing.scenarios import fuzz, injection_corpus
from bfsql.testing.standard_graph import MDM2, TP53
from bfsql_testsupport.faults import BackgroundLoop, MarkedProcess, SlowProxy, new_mark
from bfsql_testsupport.outages import outage_between_calls, outage_during_traversal, standard_reference_calls

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
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


# --- fuzzing and the injection corpus ---------------------------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(oxigraph_server, session, figures):
    before = store_dump(oxigraph_server.endpoint)
    figures["sparql.fuzz"] = fuzz(session, KNOWN_IDS, FUZZ_EXAMPLES, backend_failed=ENDPOINT_FAILED,
                                  hub=compact_id(TP53), neighbour=compact_id(MDM2))
    assert store_dump(oxigraph_server.endpoint) == before, "the store changed"


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(oxigraph_server, session, figures):
    before = store_dump(oxigraph_server.endpoint)
    measured = injection_corpus(
        session,
        hub=compact_id(TP53),
        unknown_says=UNKNOWN_ID,
        id_forms=lambda entry: [entry, f"drug:{entry}"],  # as given, and inside an IRI (no drug is named so)
        backend_failed=ENDPOINT_FAILED,
    )
    after = store_dump(oxigraph_server.endpoint)
    assert after == before, "the store changed"
    figures["sparql.injection"] = {
        **measured, "store": {"quads": after["quads"], "graphs": after["graphs"], "unchanged": True}
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
                (unknown,) = outcome.data()["unknown_ids"]  # named shortened, as in an error
                assert len(unknown) < 200 and entity_id not in outcome.text, outcome.text[:300]
            else:
                assert outcome.is_error and any(s in outcome.text for s in UNKNOWN_ID), outcome.text[:300]


# --- faults ----------------------------------------------------------------------------------

REFERENCE_CALLS = standard_reference_calls(compact_id)


def test_endpoint_stopped_mid_session_then_restarted(session, own_oxigraph, figures):
    endpoint = own_oxigraph.server.endpoint
    figures["sparql.fault.stopped_between_calls"] = outage_between_calls(
        session, lambda env: serve_params(endpoint, env=env), own_oxigraph, REFERENCE_CALLS,
        timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, dump=lambda: store_dump(endpoint), client_wait=CLIENT_WAIT,
    )


def test_endpoint_killed_during_a_traversal_then_restarted(session, own_oxigraph, figures):
    figures["sparql.fault.killed_during_traversal"] = outage_during_traversal(
        session, lambda port, env: serve_params(f"http://127.0.0.1:{port}/query", env=env), own_oxigraph,
        own_oxigraph.port, REFERENCE_CALLS, timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, client_wait=CLIENT_WAIT,
    )


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
