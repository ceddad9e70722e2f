"""Reliability scenarios any backend runs against its real server: fuzzing, the injection corpus, cancellation.

Each scenario drives ``bfsql serve`` through a real MCP client session
(:class:`~bfsql.testing.reliability.SessionThread`), asserts the promises of
docs/reliability.md and returns the figures it measured. A backend's reliability test
supplies what only it knows: how to start ``bfsql serve`` against its server, what its
errors say, and how it writes the standard graph's ids. See
``plugins/bfsql-*/tests/test_*_reliability.py`` and the cookiecutter template for examples.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from bfsql.testing.reliability import (
    INJECTION_CORPUS,
    Outcome,
    SessionThread,
    check_outcome,
    hits_of,
    lexical_match,
    tool_arguments,
)

__all__ = [
    "AfterCall",
    "cancel_one_of_shared_calls",
    "cheap_call_from_another_session",
    "cheap_calls_alongside_heavy",
    "fuzz",
    "injection_corpus",
]

AfterCall = Callable[[str, Any, Outcome], None]
"""Called after every call of a scenario with ``(tool, arguments, outcome)``: extra checks or recovery."""


def _failed(outcome: Outcome, says: Sequence[str], arguments: Any = None) -> bool:
    """Whether ``outcome`` is an error saying one of ``says``, in words other than the call's own
    ``arguments`` (an error that echoes a fuzzed argument named ``BoltReads`` is no Bolt failure)."""
    if not outcome.is_error:
        return False
    text = outcome.text
    for echoed in sorted(_strings(arguments), key=len, reverse=True):
        if len(echoed) >= 4:  # shorter ones could erase letters of a real failure message
            text = text.replace(echoed, "")
    return any(s in text for s in says)


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (keys too), however nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def fuzz(
    session: SessionThread,
    known_ids: list[str],
    examples: int,
    *,
    backend_failed: Sequence[str],
    hub: str,
    neighbour: str,
    after_call: AfterCall | None = None,
) -> dict[str, Any]:
    """Send ``examples`` generated calls (:func:`~bfsql.testing.reliability.tool_arguments`); their figures.

    Every call must end as an answer or a short tool error; an error containing one of
    ``backend_failed`` (the backend's words for its server failing) means the arguments
    broke the server and fails the scenario. Afterwards the server still answers: the schema
    and a 1-hop traversal from ``hub`` reaching ``neighbour``.
    """
    from hypothesis import HealthCheck, given, settings

    start_calls, started = session.calls, time.perf_counter()
    outcomes: Counter[str] = Counter()
    failures: list[str] = []

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(known_ids))
    def one(call: tuple[str, Any]) -> None:
        tool, arguments = call
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        outcomes["error" if outcome.is_error else "answer"] += 1
        if after_call is not None:
            after_call(tool, arguments, outcome)
        if _failed(outcome, backend_failed, arguments):
            failures.append(f"{tool} {json.dumps(arguments)[:300]}: {outcome.text[:300]}")

    one()
    seconds = time.perf_counter() - started
    schema = session.call("describe_schema", {})
    assert not schema.is_error and schema.data()["entity_types"], "the server must still answer"
    traversal = session.call("bfs_query", {"seeds": [hub], "max_hops": 1})
    assert not traversal.is_error and neighbour in {n["id"] for n in traversal.data()["nodes"]}, traversal.text[:500]
    assert not failures, "fuzzed arguments made the backend's server fail:\n" + "\n".join(failures[:10])
    return {
        "calls": session.calls - start_calls,
        "answers": outcomes["answer"],
        "tool_errors": outcomes["error"],
        "seconds": round(seconds, 1),
    }


def injection_corpus(
    session: SessionThread,
    *,
    hub: str,
    unknown_says: Sequence[str] = ("Unknown entity",),
    id_forms: Callable[[str], list[str]] = lambda entry: [entry],
    backend_failed: Sequence[str] = (),
    after_call: AfterCall | None = None,
) -> dict[str, Any]:
    """Use every :data:`~bfsql.testing.reliability.INJECTION_CORPUS` entry as an id, a type and a search; figures.

    Per entry and per id form (``id_forms(entry)``, e.g. the entry inside a compact id):
    ``describe_entity`` and ``bfs_query`` fail saying one of ``unknown_says``, and
    ``describe_entities`` with the entry and ``hub`` returns exactly the hub. As a type, it
    excludes nothing from the hub's neighbourhood and filters a search down to nothing. As a
    search string, it finds nothing, fails clearly, or finds entities whose labels hold its
    words. Proving that the data is unchanged is the caller's part (its own dump).
    """
    outcomes = {"error": 0, "empty": 0, "match": 0}
    as_id: Counter[str] = Counter()
    calls = 0

    def call(tool: str, arguments: dict[str, Any]) -> Outcome:
        nonlocal calls
        calls += 1
        outcome = session.call(tool, arguments)
        check_outcome(outcome)
        assert not _failed(outcome, backend_failed, arguments), (tool, arguments, outcome.text[:500])
        if after_call is not None:
            after_call(tool, arguments, outcome)
        return outcome

    baseline = call("bfs_query", {"seeds": [hub], "max_hops": 1, "topology_only": True}).data()
    baseline_nodes = {n["id"] for n in baseline["nodes"]}
    for entry in INJECTION_CORPUS:
        for entity_id in id_forms(entry):
            described = call("describe_entity", {"id": entity_id})
            assert _failed(described, unknown_says), (entity_id, described.text[:300])
            as_id["unknown" if "Unknown entity" in described.text else "invalid"] += 1
            traversed = call("bfs_query", {"seeds": [entity_id], "max_hops": 1})
            assert _failed(traversed, unknown_says), (entity_id, traversed.text[:300])
            many = call("describe_entities", {"ids": [entity_id, hub]})
            assert not many.is_error, (entity_id, many.text[:300])
            assert [n["id"] for n in hits_of(many)] == [hub], (entity_id, many.text[:500])
        excluded = call("bfs_query", {"seeds": [hub], "max_hops": 1, "topology_only": True,
                                      "exclude_node_types": [entry]})
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
    return {"entries": len(INJECTION_CORPUS), "calls": calls, "as_id": dict(as_id), "search": outcomes}


async def cancel_one_of_shared_calls(
    target: Any, tool: str, arguments: dict[str, Any], copies: int = 4, cancel_after: float = 1.0
) -> dict[str, Any]:
    """Start ``copies`` identical calls at once and cancel the first mid-way; the others must still answer.

    Identical calls share their backend loads (the cache coalesces them), so the first call
    owns loads the others wait for. It is cancelled the way a client's stop button cancels
    it (``notifications/cancelled``), as soon as it reports progress (or after ``cancel_after``
    seconds: choose a call that runs longer, or the first one answers before it is cancelled). Every
    other call must end as an answer or a short tool error, never a lost connection, and
    the server must answer a further call. ``target`` is what :class:`mcp.Client` opens: a
    :class:`~mcp.client.stdio.StdioServerParameters` or a streamable HTTP URL.
    """
    import anyio
    from mcp import Client

    outcomes: dict[int, str] = {}
    seconds: dict[int, float] = {}
    async with Client(target) as client:
        started_work = anyio.Event()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            started_work.set()

        async def one(index: int, scope: anyio.CancelScope) -> None:
            started = time.perf_counter()
            with scope:
                result = await client.call_tool(tool, arguments, progress_callback=progress if index == 0 else None)
                text = "".join(getattr(block, "text", "") for block in result.content)
                outcomes[index] = "error: " + text[:300] if result.is_error else "answer"
            if scope.cancelled_caught:
                outcomes[index] = "cancelled"
            seconds[index] = round(time.perf_counter() - started, 2)

        scopes = [anyio.CancelScope() for _ in range(copies)]
        async with anyio.create_task_group() as group:
            for index, scope in enumerate(scopes):
                group.start_soon(one, index, scope)
            with anyio.move_on_after(cancel_after):
                await started_work.wait()
            scopes[0].cancel()
        after = await client.call_tool("describe_schema", {})
    assert not after.is_error, "the server must answer after a cancelled call"
    others = [outcomes[i] for i in range(1, copies)]
    for outcome in others:
        assert outcome == "answer" or (outcome.startswith("error: ") and "Traceback" not in outcome), outcome
    return {"first": outcomes[0], "others": others, "seconds": seconds}


async def cheap_calls_alongside_heavy(
    target: Any,
    heavy: Sequence[tuple[str, dict[str, Any]]],
    cheap: tuple[str, dict[str, Any]],
    cheap_calls: int = 10,
) -> dict[str, Any]:
    """Run every ``heavy`` call at once and, while they run, ``cheap_calls`` cheap calls one after another.

    Every call must end as an answer or a short tool error (a heavy one may time out or be told
    the server is busy), and the server must answer afterwards. Returns the cheap calls'
    median and slowest seconds, the heavy calls' median, and the outcomes, for the caller to
    hold against its promise (docs/reliability.md: a cheap call stays under 1 s, median).
    """
    import statistics

    import anyio
    from mcp import Client

    async def timed(client: Any, tool: str, arguments: dict[str, Any]) -> tuple[float, str]:
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        assert "Traceback" not in text, text[:500]
        return time.perf_counter() - started, ("error: " + text[:120]) if result.is_error else "answer"

    heavy_seconds: list[float] = []
    heavy_outcomes: list[str] = []
    cheap_seconds: list[float] = []
    async with Client(target) as client:

        async def one_heavy(tool: str, arguments: dict[str, Any]) -> None:
            seconds, outcome = await timed(client, tool, arguments)
            heavy_seconds.append(seconds)
            heavy_outcomes.append(outcome)

        async with anyio.create_task_group() as group:
            for tool, arguments in heavy:
                group.start_soon(one_heavy, tool, arguments)
            await anyio.sleep(1.0)  # the heavy calls are under way
            for _ in range(cheap_calls):
                if len(heavy_seconds) == len(heavy):
                    break
                seconds, outcome = await timed(client, *cheap)
                assert outcome == "answer", outcome
                cheap_seconds.append(seconds)
        after = await client.call_tool("describe_schema", {})
    assert not after.is_error, "the server must answer after the heavy calls"
    return {
        "cheap_median_s": round(statistics.median(cheap_seconds), 3) if cheap_seconds else None,
        "cheap_max_s": round(max(cheap_seconds), 3) if cheap_seconds else None,
        "cheap_calls": len(cheap_seconds),
        "heavy_median_s": round(statistics.median(heavy_seconds), 2),
        "heavy_outcomes": sorted({outcome.split(".")[0] for outcome in heavy_outcomes}),
    }


async def cheap_call_from_another_session(
    target: Any,
    heavy: Sequence[tuple[str, dict[str, Any]]],
    cheap: tuple[str, dict[str, Any]],
    after: float = 2.0,
) -> dict[str, Any]:
    """Start every ``heavy`` call from one client session and, ``after`` seconds, one cheap call from another.

    Returns how long the cheap call took, each heavy call's seconds and outcome (an answer or the
    start of a tool error), for the caller to hold against the server's promises: a cheap call is
    answered within a second whatever other sessions run, and heavy calls end by the timeout.
    """
    import anyio
    from mcp import Client

    heavy_seconds: list[float] = []
    heavy_outcomes: list[str] = []
    cheap_seconds: list[float] = []

    async def heavy_session() -> None:
        async with Client(target) as client:

            async def one(tool: str, arguments: dict[str, Any]) -> None:
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                text = "".join(getattr(block, "text", "") for block in result.content)
                assert "Traceback" not in text, text[:500]
                heavy_seconds.append(round(time.perf_counter() - started, 2))
                heavy_outcomes.append("error: " + text[:120] if result.is_error else "answer")

            async with anyio.create_task_group() as group:
                for tool, arguments in heavy:
                    group.start_soon(one, tool, arguments)

    async def cheap_session() -> None:
        async with Client(target) as client:
            await anyio.sleep(after)
            started = time.perf_counter()
            result = await client.call_tool(*cheap)
            cheap_seconds.append(round(time.perf_counter() - started, 3))
            assert not result.is_error, result.content

    async with anyio.create_task_group() as group:
        group.start_soon(heavy_session)
        group.start_soon(cheap_session)
    return {"cheap_s": cheap_seconds[0], "heavy_s": heavy_seconds, "heavy_outcomes": heavy_outcomes}
