"""Reliability helpers shipped for every backend: the injection corpus, a held-open MCP session, fuzz strategies.

Backends run the same hostile inputs through a real MCP client session against their real
server (see docs/reliability.md). ``hypothesis`` (installed with ``bfsql[testing]``) drives :func:`tool_arguments`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import BaseModel

from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.server.answers import notes_in
from bfsql.testing.standard_graph import standard_records

__all__ = [
    "INJECTION_CORPUS",
    "Outcome",
    "SessionThread",
    "check_outcome",
    "clear_failure",
    "hits_of",
    "lexical_match",
    "reference_answers",
    "serve_session",
    "standard_ids",
    "tool_arguments",
]


class Outcome:
    """What one tool call gave: an answer's document as text, or an error text."""

    def __init__(self, is_error: bool, text: str) -> None:
        self.is_error = is_error
        self.text = text

    @property
    def notes(self) -> list[dict[str, Any]]:
        """The answer's notes (what was cut, what is unknown): see :func:`~bfsql.server.answers.notes_in`."""
        return [] if self.is_error else notes_in(self.data())

    def data(self) -> Any:
        """The answer as JSON data (only for successful calls)."""
        return json.loads(self.text)


class SessionThread:
    """Opens ``Client(target)`` on a private loop and runs calls on it until closed."""

    def __init__(self, target: Any, call_timeout: float = 60.0, errlog: Path | None = None) -> None:
        self._target = target
        self._timeout = call_timeout
        self._errlog = errlog
        """Where a stdio server's stderr goes; quoted when the session fails to open."""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self.calls = 0

    def __enter__(self) -> SessionThread:
        self._thread.start()
        if not self._ready.wait(120):
            raise TimeoutError("the MCP session did not open within 120s")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._hold())

    async def _hold(self) -> None:
        self._stop = asyncio.Event()
        with contextlib.ExitStack() as files:
            target = self._target
            if self._errlog is not None and isinstance(target, StdioServerParameters):
                target = stdio_client(target, errlog=files.enter_context(open(self._errlog, "w")))
            try:
                async with Client(target) as client:
                    self._client = client
                    self._ready.set()
                    await self._stop.wait()
            except BaseException as exc:  # reported to the waiting test thread
                self._error = exc
                if not self._ready.is_set() and self._errlog is not None:
                    files.close()
                    stderr = self._errlog.read_text(errors="replace")[-4000:]
                    self._error = RuntimeError(f"the MCP server did not start ({exc!r}); its stderr:\n{stderr}")
                self._ready.set()

    def run(self, make: Callable[[Client], Coroutine[Any, Any, Any]]) -> Any:
        """Run ``make(client)`` on the session's loop and wait for it (with the call timeout)."""
        assert self._client is not None
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(make(self._client), self._loop)
        return future.result(self._timeout)

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Call a tool; an answer or a tool error, never a hang (the call timeout raises)."""
        self.calls += 1
        result = self.run(lambda client: client.call_tool(tool, arguments))
        return Outcome(bool(result.is_error), "".join(getattr(block, "text", "") for block in result.content))


@contextlib.contextmanager
def serve_session(
    backend: str, config: BaseModel, directory: Path, *serve_args: str, call_timeout: float = 60.0
) -> Iterator[SessionThread]:
    """``bfsql serve`` over stdio for ``backend`` opened with ``config``, held open for a test.

    The config is written to a configuration file in ``directory``, so the server opens the
    backend exactly as the test that built ``config`` would, whatever its fields. A server that
    fails to start raises with its stderr.
    """
    from bfsql.settings import config_text

    path = directory / "bfsql-serve.toml"
    path.write_text(config_text({backend: (backend, config)}), encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--config", str(path),
                                                                 *serve_args], env=dict(os.environ))
    with SessionThread(params, call_timeout, errlog=directory / "bfsql-serve.log") as held:
        yield held


INJECTION_CORPUS: tuple[str, ...] = (
    # SQL
    "' OR '1'='1",
    "'; DROP TABLE entity; --",
    "x' UNION SELECT entity_id, entity_type, name FROM entity --",
    "%",
    "_",
    "\\",
    "a%' OR name LIKE '%",
    "1; SELECT pg_sleep(10)",
    "$1",
    # SPARQL
    "> } ; DROP ALL ; SELECT * { ?s ?p ?o",
    "http://example.org/x> ?p ?o } #",
    '") } UNION { ?s ?p ?o } #',
    "FILTER(true)",
    "<http://evil/>",
    # Cypher
    "x'}) MATCH (n) DETACH DELETE n //",
    "` RETURN 1 //",
    "$id",
    "{id: 1}",
    # Lucene / full-text syntax
    "AND OR NOT",
    "name:*",
    "+(a -b) ~2 ^3",
    '"unterminated',
    "a*?",
    "[ TO ]",
    "NEAR(a b)",
    # URL path / query
    "../../etc/passwd",
    "a/b?c=d&e=f#g",
    "%2e%2e%2f",
    "x%00y",
    " leading and trailing ",
    # JSON-LD
    "@context",
    '{"@id": "x"}',
    "_:b0",
    # control characters, unicode, sizes
    "line\nbreak",
    "tab\tchar",
    "\x00",
    "\u202e\u0645\u0631\u062d\u0628\u0627",
    "β-catenin",
    "😀",
    "A" * 5000,
)
"""Each entry is used as an entity id and as a search string. A correct backend answers each
with a clear error, an empty answer or an exact match, and never runs an altered query: the
data is unchanged afterwards and no unrelated rows come back."""

TOOLS: dict[str, tuple[str, ...]] = {
    "describe_schema": (),
    "search_entities": ("query", "node_types", "mode", "alpha", "limit", "offset", "min_similarity"),
    "bfs_query": (
        "seeds",
        "max_hops",
        "node_types",
        "predicates",
        "topology_only",
        "exclude_node_types",
        "min_mentions",
        "limit",
        "offset",
        "max_tokens",
    ),
    "describe_entity": ("id", "max_tokens"),
    "describe_entities": ("ids", "max_tokens"),
    "describe_edges": ("edges", "max_tokens"),
    "path_query": ("query", "k", "threshold", "max_results", "max_tokens"),
    "intersect_subgraphs": (
        "seeds",
        "k",
        "node_types",
        "exclude_node_types",
        "predicates",
        "min_mentions",
        "topology_only",
        "max_tokens",
    ),
}
"""The tools and their argument names (the six of the protocol, path_query and describe_edges)."""


def tool_arguments(known_ids: list[str]) -> Any:
    """A hypothesis strategy of ``(tool, arguments)``: hostile and valid values, wrong types, extra keys."""
    from hypothesis import strategies as st

    ids = st.sampled_from(known_ids) if known_ids else st.nothing()
    text = st.one_of(
        st.text(max_size=60),
        st.sampled_from(INJECTION_CORPUS),
        ids,
        st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1F), max_size=10),
        st.just(""),
        st.builds(lambda n: "x" * n, st.integers(10_000, 200_000)),
    )
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63),
        st.integers(min_value=-2, max_value=7),
        st.floats(allow_nan=True, allow_infinity=True),
        text,
    )
    lists = st.one_of(
        st.lists(st.one_of(ids, text), max_size=8),
        st.lists(st.lists(st.one_of(ids, text), min_size=2, max_size=4), max_size=4),  # edge-like triples
        st.lists(st.fixed_dictionaries({"subject": ids, "predicate": text, "object": ids}), max_size=3),
        st.lists(scalar, max_size=5),
        st.builds(lambda n: [f"id:{i}" for i in range(n)], st.integers(100, 5000)),
    )
    value = st.one_of(scalar, lists, st.dictionaries(st.text(max_size=5), scalar, max_size=3))

    def arguments(tool: str) -> Any:
        names = TOOLS[tool]
        known = st.fixed_dictionaries({}, optional={name: value for name in names}) if names else st.just({})
        extra = st.dictionaries(st.text(min_size=1, max_size=12), scalar, max_size=2)
        return st.tuples(st.just(tool), st.builds(lambda a, b: {**b, **a}, known, extra))

    return st.sampled_from(sorted(TOOLS)).flatmap(arguments)


def check_outcome(outcome: Outcome) -> None:
    """A call ended as a valid answer or a clear tool error, and never leaked a traceback."""
    assert outcome.text, "empty answer"
    assert "Traceback (most recent call last)" not in outcome.text, outcome.text[:2000]
    if outcome.is_error:
        assert len(outcome.text) < 5000, "an error message should be short"
    else:
        outcome.data()


def standard_ids() -> tuple[list[str], list[str]]:
    """The standard graph's entity ids, and the ids that edges point to but no entity has (dangling)."""
    records = standard_records()
    entities = [r.id for r in records if isinstance(r, EntityRecord)]
    ends = [end for r in records if isinstance(r, RelationshipRecord) for end in (r.subject, r.object)]
    return entities, sorted(set(ends) - set(entities))


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if w}


def lexical_match(query: str, labels: str) -> bool:
    """Whether a search hit is explained by the query's own text: a substring, or a query word in a label word."""
    if query.strip().lower() in labels.lower():
        return True
    return any(w in label_word for w in _words(query) for label_word in _words(labels))


def hits_of(outcome: Outcome) -> list[dict[str, Any]]:
    """The entity stubs of a search_entities or describe_entities answer (its ``items``)."""
    hits: list[dict[str, Any]] = outcome.data()["items"]
    return hits


def reference_answers(session: SessionThread, calls: Mapping[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each named call's answer from a healthy server: what the same calls must give after a fault."""
    answers = {}
    for name, (tool, arguments) in calls.items():
        outcome = session.call(tool, arguments)
        assert not outcome.is_error, (name, outcome.text[:500])
        answers[name] = outcome.data()
    return answers


def clear_failure(outcome: Outcome, started: float, timeout: float, *says: str) -> float:
    """Check that a call during a fault failed clearly within ``timeout`` (+2 s); the seconds it took.

    The error must contain one of ``says`` (e.g. the backend's name or "timed out").
    """
    seconds = time.perf_counter() - started
    check_outcome(outcome)
    assert outcome.is_error, outcome.text[:500]
    assert any(s in outcome.text for s in says), outcome.text
    assert seconds <= timeout + 2, f"the error took {seconds:.1f}s (timeout {timeout:g}s)"
    return seconds


