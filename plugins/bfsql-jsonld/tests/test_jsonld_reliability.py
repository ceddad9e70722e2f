"""Fuzzing, the injection corpus and API faults against ``bfsql serve --backend jsonld``.

Every call goes through a real MCP client session (:class:`SessionThread`) to a
``bfsql serve --backend jsonld`` subprocess reading a real HTTP API:

* fuzzing and the injection corpus run against the session's reference server
  (``bfsql jsonld-serve`` over the standard graph, batch endpoints on), and the corpus once
  more against a recording scripted API (one request per id), to see every URL it causes;
* the fault tests start a second reference server of their own on another port (never the
  session's), stop it, kill it while a traversal waits for it (behind a proxy that slows its
  answers) and restart it on the same port; a scripted slow API makes the timeouts fire.

Bounded for CI by ``BFSQL_FUZZ_EXAMPLES`` (default 200). Figures are printed at the end of
the run and saved in ``.nox/reliability-figures-jsonld.json``.
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
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import urlopen

import pytest
from aiohttp import web
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
from bfsql.testing.services import free_port, wait_for_port

from conftest import REFERENCE_MAX_BATCH, REFERENCE_PAGE_SIZE
from jsonld_scripted import Reply, ScriptedApi

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""
SLOW_ANSWER = 0.25
"""Seconds the proxy holds every chunk the API sends while a traversal is slowed."""


ENTITY_IDS, DANGLING_IDS = standard_ids()
KNOWN_IDS = [*ENTITY_IDS, *DANGLING_IDS]


# --- helpers ---------------------------------------------------------------------------------


def serve_params(
    base_url: str, *options: str, env: dict[str, str] | None = None, timeout: float = CALL_TIMEOUT
) -> StdioServerParameters:
    """``bfsql serve --backend jsonld`` over stdio, reading the API at ``base_url``."""
    args = ["-m", "bfsql", "serve", "--backend", "jsonld", "--base-url", base_url, "--timeout", f"{timeout:g}"]
    return StdioServerParameters(command=sys.executable, args=[*args, *options], env=env or dict(os.environ))


def _get(base_url: str, path: str) -> tuple[int, Any]:
    try:
        with urlopen(base_url + path, timeout=30) as response:
            return response.status, json.loads(response.read())
    except HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def api_dump(base_url: str) -> dict[str, Any]:
    """Counts and a hash of everything the API publishes about the standard graph's ids, read over HTTP."""
    parts: list[Any] = [_get(base_url, "/schema")]
    entities = relations = 0
    for entity_id in KNOWN_IDS:
        segment = quote(entity_id, safe="")
        status, document = _get(base_url, f"/entities/{segment}")
        parts.append([entity_id, status, document])
        entities += status == 200
        for direction in ("out", "in"):
            path: str | None = f"/entities/{segment}/relations?direction={direction}"
            while path is not None:
                status, document = _get(base_url, path)
                parts.append([path, status, document])
                members = document.get("relations", []) if status == 200 else []
                relations += len(members) if direction == "out" else 0
                path = (document.get("view") or {}).get("next") if status == 200 else None
    for query in ("p53", "catenin", "syndrome"):
        parts.append(_get(base_url, f"/entities?q={query}"))
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return {"entities": entities, "relations": relations, "sha256": hashlib.sha256(canonical.encode()).hexdigest()}


class RecordingApi(ScriptedApi):
    """The scripted API, with a catch-all route that also takes paths holding a newline (``.*`` stops at one)."""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", r"/{tail:[\s\S]*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"


class ReferenceInstance:
    """A ``bfsql jsonld-serve`` of the tests' own over the standard graph, restartable on the same port."""

    def __init__(self, bundle: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = Path(tempfile.mkdtemp(prefix="bfsql-jsonld-faults-"))
        self.command = [
            sys.executable, "-m", "bfsql", "jsonld-serve", "--backend", "memory", "--bundle", str(bundle),
            "--port", str(self.port), "--page-size", str(REFERENCE_PAGE_SIZE), "--max-batch", str(REFERENCE_MAX_BATCH),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> float:
        """Start (or restart) the server on the same port; seconds until it accepts connections."""
        began = time.perf_counter()
        self.starts += 1
        log_path = self.workdir / f"server-{self.starts}.log"
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(self.port, 60)
        except TimeoutError as exc:
            raise AssertionError(f"jsonld-serve did not start: {exc}; log: {log_path.read_text()[-2000:]}") from None
        return time.perf_counter() - began

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean stop) or SIGKILL (a crash); either way the process is reaped."""
        assert self.process is not None
        if kill:
            self.process.kill()
        elif self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(reference_url: str) -> Iterator[SessionThread]:
    with SessionThread(serve_params(reference_url), call_timeout=CLIENT_WAIT) as held:
        yield held


@pytest.fixture
def own_reference(standard_bundle_file: Path) -> Iterator[ReferenceInstance]:
    """A second reference server, on another port, alive only during one fault test."""
    instance = ReferenceInstance(standard_bundle_file)
    try:
        instance.start()
        yield instance
    finally:
        instance.close()


@pytest.fixture
def background() -> Iterator[BackgroundLoop]:
    with BackgroundLoop() as loop:
        yield loop


# --- fuzzing ---------------------------------------------------------------------------------


def test_fuzzed_calls_end_as_answers_or_clear_errors(session, reference_url, figures):
    before = api_dump(reference_url)
    start_calls, started = session.calls, time.perf_counter()
    outcomes: Counter[str] = Counter()
    api_failures: list[str] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(KNOWN_IDS))
    def one(call):
        tool, arguments = call
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        outcomes["error" if outcome.is_error else "answer"] += 1
        if outcome.is_error and ("answered 5" in outcome.text or "graph backend failed" in outcome.text):
            api_failures.append(f"{tool} {json.dumps(arguments)[:300]}: {outcome.text[:300]}")

    one()
    seconds = time.perf_counter() - started
    schema = session.call("describe_schema", {})
    assert not schema.is_error and "Gene" in schema.data()["entity_types"], "the server must still answer"
    traversal = session.call("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 1})
    assert not traversal.is_error and "GENE:MDM2" in {n["id"] for n in traversal.data()["nodes"]}
    assert api_dump(reference_url) == before, "the published graph changed"
    figures["jsonld.fuzz"] = {
        "calls": session.calls - start_calls,
        "answers": outcomes["answer"],
        "tool_errors": outcomes["error"],
        "api_failures": len(api_failures),
        "seconds": round(seconds, 1),
    }
    assert not api_failures, "fuzzed arguments made the API fail:\n" + "\n".join(api_failures[:10])


# --- the injection corpus ----------------------------------------------------------------------


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(session, reference_url, figures):
    before = api_dump(reference_url)
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
    after = api_dump(reference_url)
    assert after == before, "the published graph changed"
    figures["jsonld.injection"] = {
        "entries": len(INJECTION_CORPUS),
        "calls_per_entry": 6,
        "search": outcomes,
        "graph": {"entities": after["entities"], "relations": after["relations"], "unchanged": True},
    }


def test_injection_corpus_reaches_the_api_as_one_encoded_value(background, figures):
    """Against a recording API without batch endpoints: each entry becomes exactly one path segment or query value."""
    api = RecordingApi()
    api.on("/schema", {"entity_types": ["Gene"], "predicates": ["REGULATES"]})
    background.run(api.start())
    try:
        with SessionThread(serve_params(api.url), call_timeout=CLIENT_WAIT) as session:
            at_start = len(api.seen)
            for entry in INJECTION_CORPUS:
                seen = len(api.seen)
                described = session.call("describe_entity", {"id": entry})
                check_outcome(described)
                assert described.is_error and "Unknown entity" in described.text, (entry, described.text[:300])
                paths = {s.raw_path for s in api.seen[seen:]}
                assert paths == {"/entities/" + quote(entry, safe="")}, (entry, paths)

                seen = len(api.seen)
                found = session.call("search_entities", {"query": entry, "mode": "lexical"})
                check_outcome(found)
                paths = {s.raw_path for s in api.seen[seen:]}
                if found.is_error:  # refused before any request (e.g. longer than 1000 characters)
                    assert not paths, (entry, paths)
                else:  # the search, and possibly a look-up of the text as an id
                    assert hits_of(found) == []
                    search = f"/entities?q={quote(entry, safe='')}&limit=20"
                    assert search in paths, (entry, paths)
                    assert paths <= {search, "/entities/" + quote(entry.strip(), safe="")}, (entry, paths)
            assert all(s.method == "GET" for s in api.seen)
            checked = len(api.seen) - at_start
    finally:
        background.run(api.stop())
    figures["jsonld.injection_urls"] = {"entries": len(INJECTION_CORPUS), "requests_checked": checked}


# --- faults ----------------------------------------------------------------------------------

REFERENCE_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "traversal": ("bfs_query", {"seeds": ["GENE:TP53"], "max_hops": 2}),
    "entity": ("describe_entity", {"id": "DRUG:aspirin"}),
    "entities": ("describe_entities", {"ids": ["DISEASE:LFS", "GENE:β-catenin", "NOPE:x"]}),
    "search": ("search_entities", {"query": "catenin", "mode": "lexical"}),
    "in_flight": ("bfs_query", {"seeds": ["DRUG:nutlin-3"], "max_hops": 3}),
    "intersection": ("intersect_subgraphs", {"seeds": ["GENE:MDM2", "DISEASE:胃癌"], "k": 2}),
}


def test_api_stopped_mid_session_then_restarted(session, reference_url, own_reference, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    data_before = api_dump(own_reference.url)
    marked = new_mark()
    with SessionThread(serve_params(own_reference.url, env=marked), call_timeout=CLIENT_WAIT) as subject:
        bfsql = MarkedProcess(marked)
        warm = subject.call(*REFERENCE_CALLS["entity"])
        assert not warm.is_error and warm.data() == expected["entity"]

        own_reference.stop()  # SIGTERM: the API goes away between two calls
        errors = []
        for name in ("traversal", "entities", "search"):
            started = time.perf_counter()
            outcome = subject.call(*REFERENCE_CALLS[name])
            errors.append(clear_failure(outcome, started, CALL_TIMEOUT, own_reference.url, "timed out"))
        assert bfsql.is_running(), "bfsql serve must outlive the API"

        restart = own_reference.start()
        assert api_dump(own_reference.url) == data_before, "the restarted API must publish the same data"
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["traversal"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["traversal"]
        for name in ("entity", "entities", "search"):  # errors were not cached, answers are still right
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["jsonld.fault.stopped_between_calls"] = {
        "survived": True,
        "calls_failed_while_down": len(errors),
        "seconds_to_error_max": round(max(errors), 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def test_api_killed_during_a_traversal_then_restarted(session, own_reference, background, figures):
    expected = reference_answers(session, REFERENCE_CALLS)
    marked = new_mark()
    with (
        SlowProxy(background, own_reference.port) as proxy,
        SessionThread(
            serve_params(f"http://127.0.0.1:{proxy.port}", env=marked), call_timeout=CLIENT_WAIT
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
        own_reference.stop(kill=True)  # SIGKILL while the traversal waits for answers
        seconds_to_error = clear_failure(
            call.result(CLIENT_WAIT), killed, CALL_TIMEOUT, f"http://127.0.0.1:{proxy.port}", "timed out"
        )
        assert bfsql.is_running()

        proxy.delay = 0.0
        restart = own_reference.start()
        started = time.perf_counter()
        first = subject.call(*REFERENCE_CALLS["in_flight"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["in_flight"], "a partial traversal was cached"
        for name in ("intersection", "entity"):
            again = subject.call(*REFERENCE_CALLS[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    figures["jsonld.fault.killed_during_traversal"] = {
        "survived": True,
        "traversal": f"bfs_query max_hops=3, API answers held {SLOW_ANSWER:g}s per chunk by a proxy",
        "seconds_in_flight_before_kill": round(in_flight, 2),
        "request_chunks_sent_before_kill": requests_sent,
        "seconds_to_error": round(seconds_to_error, 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


SLOW_ID, FAST_ID = "GENE:SLOW", "GENE:FAST"
SLOW_PATH, FAST_PATH = ("/entities/" + quote(i, safe="") for i in (SLOW_ID, FAST_ID))
SLOW_DOCUMENT = {"@id": SLOW_ID, "@type": "Gene", "name": "Slow gene", "synonyms": ["sluggish"]}
FAST_DOCUMENT = {"@id": FAST_ID, "@type": "Gene", "name": "Fast gene"}
SLOW_DELAY = 6.0
"""Seconds the scripted API takes to answer for ``SLOW_ID`` while it is slow."""


@pytest.fixture
def slow_api(background: BackgroundLoop) -> Iterator[ScriptedApi]:
    api = ScriptedApi()
    api.on("/schema", {"entity_types": ["Gene"], "predicates": ["REGULATES"]})
    api.on(FAST_PATH, Reply(json=FAST_DOCUMENT))
    api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT, delay=SLOW_DELAY))
    background.run(api.start())
    try:
        yield api
    finally:
        background.run(api.stop())


def test_a_slow_api_makes_the_timeouts_fire_with_clear_messages(slow_api, figures):
    api = slow_api
    measured: dict[str, Any] = {}
    # The per-call timeout (bfsql serve --timeout 2) fires before the request timeout (60 s).
    marked = new_mark()
    params = serve_params(api.url, "--request-timeout", "60", env=marked, timeout=2)
    with SessionThread(params, call_timeout=CLIENT_WAIT) as subject:
        bfsql = MarkedProcess(marked)
        started = time.perf_counter()
        slow = subject.call("describe_entity", {"id": SLOW_ID})
        seconds = time.perf_counter() - started
        check_outcome(slow)
        assert slow.is_error and "describe_entity timed out after 2s" in slow.text, slow.text
        assert seconds < 2 + 3, f"the timeout fired after {seconds:.1f}s"
        measured["call_timeout_2s_fired_after_seconds"] = round(seconds, 2)
        assert not subject.call("describe_schema", {}).is_error, "the server must still answer"
        fast = subject.call("describe_entity", {"id": FAST_ID})
        assert not fast.is_error and fast.data()["name"] == "Fast gene", fast.text[:500]

        api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT))  # the API is fast again
        time.sleep(max(0.0, started + SLOW_DELAY + 0.5 - time.perf_counter()))  # the abandoned requests ended
        again = subject.call("describe_entity", {"id": SLOW_ID})
        assert not again.is_error, again.text[:500]
        assert again.data()["name"] == "Slow gene" and again.data()["synonyms"] == ["sluggish"]
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()

    # The per-request timeout (--request-timeout 1) fires first, naming the URL and the limit.
    api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT, delay=SLOW_DELAY))
    with SessionThread(serve_params(api.url, "--request-timeout", "1"), call_timeout=CLIENT_WAIT) as subject:
        started = time.perf_counter()
        slow = subject.call("describe_entity", {"id": SLOW_ID})
        seconds = time.perf_counter() - started
        check_outcome(slow)
        assert slow.is_error and f"GET {api.url}{SLOW_PATH} took longer than 1s" in slow.text, slow.text
        assert seconds < 1 + 3, f"the request timeout fired after {seconds:.1f}s"
        measured["request_timeout_1s_fired_after_seconds"] = round(seconds, 2)
        api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT))
        again = subject.call("describe_entity", {"id": SLOW_ID})  # a failed request leaves nothing behind
        assert not again.is_error and again.data()["name"] == "Slow gene", again.text[:500]
    figures["jsonld.fault.slow_api"] = {"survived": True, **measured}


def test_a_retry_after_a_call_timeout_asks_the_recovered_api(slow_api):
    api = slow_api
    api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT, delay=CALL_TIMEOUT * 2))
    params = serve_params(api.url, "--request-timeout", "60", timeout=2)
    with SessionThread(params, call_timeout=CLIENT_WAIT) as subject:
        slow = subject.call("describe_entity", {"id": SLOW_ID})
        assert slow.is_error and "timed out" in slow.text, slow.text
        api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT))  # the API is fast again
        requests = api.hits(SLOW_PATH)
        again = subject.call("describe_entity", {"id": SLOW_ID})
        assert not again.is_error, f"{again.text[:300]} (new requests to the API: {api.hits(SLOW_PATH) - requests})"
