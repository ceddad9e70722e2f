"""Outage scenarios: a backend's server stopped, killed and slowed while ``bfsql serve`` uses it.

Each drives ``bfsql serve`` through a real MCP client session
(:class:`~bfsql.testing.reliability.SessionThread`); the backend's test supplies how to
serve it and how to stop and restart its server (a :class:`Restartable`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from mcp.client.stdio import StdioServerParameters

from bfsql.testing.reliability import SessionThread, clear_failure, reference_answers
from bfsql.testing.standard_graph import ASPIRIN, CTNNB1, GASTRIC, LFS, MDM2, NUTLIN, TP53
from bfsql_testsupport.faults import BackgroundLoop, MarkedProcess, SlowProxy, new_mark

__all__ = ["Restartable", "outage_between_calls", "outage_during_traversal", "standard_reference_calls"]


class Restartable(Protocol):
    """A backend's server that a fault scenario stops and starts again, on the same port with the same data."""

    def stop(self, kill: bool = False) -> None:
        """Stop the server: cleanly, or as in a crash (``kill``)."""

    def start(self) -> float:
        """Start it again; the seconds until it serves its data."""


def standard_reference_calls(written: Callable[[str], str] = str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Calls on the standard graph whose answers must be the same before and after an outage.

    ``written`` turns a standard id into the backend's (e.g. ``GENE:TP53`` → ``gene:TP53``).
    """
    return {
        "traversal": ("bfs_query", {"seeds": [written(TP53)], "max_hops": 2}),
        "entity": ("describe_entity", {"id": written(ASPIRIN)}),
        "entities": ("describe_entities", {"ids": [written(LFS), written(CTNNB1), "NOPE:x"]}),
        "search": ("search_entities", {"query": "catenin", "mode": "lexical"}),
        "in_flight": ("bfs_query", {"seeds": [written(NUTLIN)], "max_hops": 3}),
        "intersection": ("intersect_subgraphs", {"seeds": [written(MDM2), written(GASTRIC)], "k": 2}),
    }


def outage_between_calls(
    session: SessionThread,
    serve: Callable[[dict[str, str]], StdioServerParameters],
    server: Restartable,
    calls: Mapping[str, tuple[str, dict[str, Any]]],
    *,
    timeout: float,
    says: Sequence[str],
    dump: Callable[[], Any],
    client_wait: float = 60.0,
) -> dict[str, Any]:
    """Stop ``server`` between two calls of a fresh ``bfsql serve`` (``serve(env)``), then restart it; figures.

    While it is down, three calls fail clearly (one of ``says``) within ``timeout``; bfsql
    stays up; after the restart (``dump()`` equal to before) the first call and the others
    of ``calls`` (see :func:`standard_reference_calls`) return what ``session`` answered
    while the server was healthy, from the same bfsql process.
    """
    expected = reference_answers(session, calls)
    data_before = dump()
    marked = new_mark()
    with SessionThread(serve(marked), call_timeout=client_wait) as subject:
        bfsql = MarkedProcess(marked)
        warm = subject.call(*calls["entity"])
        assert not warm.is_error and warm.data() == expected["entity"], warm.text[:500]

        server.stop()
        try:
            errors = []
            for name in ("traversal", "entities", "search"):
                started = time.perf_counter()
                errors.append(clear_failure(subject.call(*calls[name]), started, timeout, *says))
            assert bfsql.is_running(), "bfsql serve must outlive its backend's server"
        finally:
            restart = server.start()
        assert dump() == data_before, "the restarted server must hold the same data"
        started = time.perf_counter()
        first = subject.call(*calls["traversal"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["traversal"]
        for name in ("entity", "entities", "search"):  # errors were not cached, answers are still right
            again = subject.call(*calls[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    return {
        "survived": True,
        "calls_failed_while_down": len(errors),
        "seconds_to_error_max": round(max(errors), 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


def outage_during_traversal(
    session: SessionThread,
    serve_via: Callable[[int, dict[str, str]], StdioServerParameters],
    server: Restartable,
    port: int,
    calls: Mapping[str, tuple[str, dict[str, Any]]],
    *,
    timeout: float,
    says: Sequence[str],
    slow_answer: float = 0.25,
    client_wait: float = 60.0,
) -> dict[str, Any]:
    """Crash ``server`` while a 3-hop traversal waits for it, then restart it; figures.

    ``bfsql serve`` (``serve_via(proxy_port, env)``) reaches the server's ``port`` through a
    :class:`~bfsql_testsupport.faults.SlowProxy` that holds every answer ``slow_answer`` seconds,
    so the traversal (``calls["in_flight"]``) is surely in flight when the server is killed.
    It must fail clearly within ``timeout``; after the restart the same traversal returns
    exactly the healthy answer (no partial result was cached), from the same bfsql process.
    """
    expected = reference_answers(session, calls)
    marked = new_mark()
    with (
        BackgroundLoop() as loop,
        SlowProxy(loop, port) as proxy,
        SessionThread(serve_via(proxy.port, marked), call_timeout=client_wait) as subject,
        ThreadPoolExecutor(1) as pool,
    ):
        bfsql = MarkedProcess(marked)
        warm = subject.call(*calls["entity"])
        assert not warm.is_error and warm.data() == expected["entity"], warm.text[:500]

        proxy.delay = slow_answer
        sent = proxy.sent
        started = time.perf_counter()
        call = pool.submit(subject.call, *calls["in_flight"])
        while proxy.sent < sent + 2 and time.perf_counter() - started < 10:
            time.sleep(0.02)  # requests of the traversal are on their way
        # One answer's hold, not more: the proxy keeps answers the server already gave, so the
        # server must die while later requests of the traversal are still to be sent.
        time.sleep(slow_answer)
        assert not call.done(), "the traversal finished before the fault: slow the proxy down"
        in_flight = time.perf_counter() - started
        chunks_sent = proxy.sent - sent
        crashed = time.perf_counter()
        server.stop(kill=True)
        try:
            seconds_to_error = clear_failure(call.result(client_wait), crashed, timeout, *says)
            assert bfsql.is_running()
        finally:
            proxy.delay = 0.0
            restart = server.start()
        started = time.perf_counter()
        first = subject.call(*calls["in_flight"])
        recovery = time.perf_counter() - started
        assert not first.is_error, f"the first call after the restart failed: {first.text[:500]}"
        assert first.data() == expected["in_flight"], "a partial traversal was cached"
        for name in ("intersection", "entity"):
            again = subject.call(*calls[name])
            assert not again.is_error and again.data() == expected[name], (name, again.text[:500])
        assert MarkedProcess(marked).pid == bfsql.pid and bfsql.is_running()
    return {
        "survived": True,
        "traversal": f"bfs_query max_hops=3, the server's answers held {slow_answer:g}s per chunk by a proxy",
        "seconds_in_flight_before_crash": round(in_flight, 2),
        "chunks_sent_before_crash": chunks_sent,
        "seconds_to_error": round(seconds_to_error, 2),
        "restart_seconds": round(restart, 2),
        "first_call_after_restart_seconds": round(recovery, 2),
    }


