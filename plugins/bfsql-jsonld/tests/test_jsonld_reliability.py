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
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import parse_qs, quote, urlsplit
from urllib.request import urlopen

import pytest
from aiohttp import web
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.reliability import INJECTION_CORPUS, SessionThread, check_outcome, hits_of, standard_ids
from bfsql.testing.scenarios import fuzz, injection_corpus
from bfsql.testing.standard_graph import MDM2, TP53
from bfsql_testsupport.faults import BackgroundLoop, MarkedProcess, new_mark
from bfsql_testsupport.outages import outage_between_calls, outage_during_traversal, standard_reference_calls
from bfsql_testsupport.services import free_port, wait_for_port

from conftest import REFERENCE_BATCH_ROWS, REFERENCE_MAX_BATCH, REFERENCE_PAGE_SIZE
from jsonld_scripted import Reply, ScriptedApi

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "200"))
CALL_TIMEOUT = 15.0
"""``bfsql serve --timeout``: the longest a tool call may take."""
CLIENT_WAIT = 60.0
"""How long the test waits for any answer before calling it a hang."""

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
            "--batch-rows", str(REFERENCE_BATCH_ROWS),
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


# --- fuzzing and the injection corpus ---------------------------------------------------------

BACKEND_FAILED = ("answered 5", "graph backend failed")
"""What an error says when the API, not the arguments, failed (a 5xx answer)."""


def test_fuzzed_calls_end_as_answers_or_clear_errors(session, reference_url, figures):
    before = api_dump(reference_url)
    figures["jsonld.fuzz"] = fuzz(session, KNOWN_IDS, FUZZ_EXAMPLES, backend_failed=BACKEND_FAILED, hub=TP53,
                                  neighbour=MDM2)
    assert api_dump(reference_url) == before, "the published graph changed"


def test_injection_corpus_changes_nothing_and_finds_only_lexical_matches(session, reference_url, figures):
    before = api_dump(reference_url)
    measured = injection_corpus(session, hub=TP53, backend_failed=BACKEND_FAILED)
    after = api_dump(reference_url)
    assert after == before, "the published graph changed"
    figures["jsonld.injection"] = {
        **measured,
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
                    # one search whose q is the entry, its whitespace normalised as every search does
                    searches = {path for path in paths if path.startswith("/entities?")}
                    assert len(searches) == 1, (entry, paths)
                    (query,) = parse_qs(urlsplit(next(iter(searches))).query)["q"]
                    assert query == " ".join(entry.split()), (entry, paths)
                    assert paths - searches <= {"/entities/" + quote(entry.strip(), safe="")}, (entry, paths)
            assert all(s.method == "GET" for s in api.seen)
            checked = len(api.seen) - at_start
    finally:
        background.run(api.stop())
    figures["jsonld.injection_urls"] = {"entries": len(INJECTION_CORPUS), "requests_checked": checked}


# --- faults ----------------------------------------------------------------------------------

REFERENCE_CALLS = standard_reference_calls()
OUTAGE_SAYS = ("Check that the API is up", "answered 50", "timed out")
"""What a clear error during an outage says."""


def test_api_stopped_mid_session_then_restarted(session, own_reference, figures):
    figures["jsonld.fault.stopped_between_calls"] = outage_between_calls(
        session, lambda env: serve_params(own_reference.url, env=env), own_reference, REFERENCE_CALLS,
        timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, dump=lambda: api_dump(own_reference.url), client_wait=CLIENT_WAIT,
    )


def test_api_killed_during_a_traversal_then_restarted(session, own_reference, figures):
    figures["jsonld.fault.killed_during_traversal"] = outage_during_traversal(
        session, lambda port, env: serve_params(f"http://127.0.0.1:{port}", env=env), own_reference,
        own_reference.port, REFERENCE_CALLS, timeout=CALL_TIMEOUT, says=OUTAGE_SAYS, client_wait=CLIENT_WAIT,
    )


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
    # The per-call timeout (bfsql serve --timeout 2) fires before the request timeout (--query-timeout 60).
    marked = new_mark()
    params = serve_params(api.url, "--query-timeout", "60", env=marked, timeout=2)
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

    # The per-request timeout fires first, naming the URL and the limit (given under its old name, --request-timeout,
    # which is still taken, with a warning).
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

    # The per-primitive timeout (--primitive-timeout 1) fires first and names the backend call that was slow.
    api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT, delay=SLOW_DELAY))
    params = serve_params(api.url, "--query-timeout", "60", "--primitive-timeout", "1", timeout=10)
    with SessionThread(params, call_timeout=CLIENT_WAIT) as subject:
        started = time.perf_counter()
        slow = subject.call("describe_entity", {"id": SLOW_ID})
        seconds = time.perf_counter() - started
        check_outcome(slow)
        assert slow.is_error and re.search(r"did not answer (get_nodes|metadata_for_nodes) within 1s", slow.text), (
            slow.text
        )
        assert seconds < 1 + 3, f"the primitive timeout fired after {seconds:.1f}s"
        measured["primitive_timeout_1s_fired_after_seconds"] = round(seconds, 2)
    figures["jsonld.fault.slow_api"] = {"survived": True, **measured}


def test_a_retry_after_a_call_timeout_asks_the_recovered_api(slow_api):
    api = slow_api
    api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT, delay=CALL_TIMEOUT * 2))
    params = serve_params(api.url, "--query-timeout", "60", timeout=2)
    with SessionThread(params, call_timeout=CLIENT_WAIT) as subject:
        slow = subject.call("describe_entity", {"id": SLOW_ID})
        assert slow.is_error and "timed out" in slow.text, slow.text
        api.on(SLOW_PATH, Reply(json=SLOW_DOCUMENT))  # the API is fast again
        requests = api.hits(SLOW_PATH)
        again = subject.call("describe_entity", {"id": SLOW_ID})
        assert not again.is_error, f"{again.text[:300]} (new requests to the API: {api.hits(SLOW_PATH) - requests})"
