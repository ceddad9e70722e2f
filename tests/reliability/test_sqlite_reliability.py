"""Fuzzing, injection, hub explosions and load against ``bfsql serve`` on the sqlite backend.

Bounded for CI by ``BFSQL_FUZZ_EXAMPLES`` (default 300) and ``BFSQL_LOAD_SECONDS`` (default
10); docs/reliability.md gives the settings of the longer run.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql.demo import ensure_demo_db
from bfsql.testing.reliability import INJECTION_CORPUS, SessionThread, check_outcome, lexical_match, tool_arguments
from bfsql.testing.services import free_port, wait_for_port

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "300"))
LOAD_SECONDS = float(os.environ.get("BFSQL_LOAD_SECONDS", "10"))
KNOWN_IDS = ["FPLX:RAF", "HGNC:BRAF", "HGNC:RAF1", "FPLX:RING_E3_ligase", "FPLX:MAPK", "UP:P62158"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A private copy of the demo store, so its bytes can be compared before and after."""
    target = tmp_path_factory.mktemp("store") / "famplex.sqlite"
    shutil.copyfile(ensure_demo_db(), target)
    return target


@pytest.fixture(scope="module")
def session(store):
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--db", str(store)],
                                   env=dict(os.environ))
    with SessionThread(params) as held:
        yield held


def test_fuzzed_calls_end_as_answers_or_clear_errors(session, store, figures):
    before = sha256(store)
    start = session.calls

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(tool_arguments(KNOWN_IDS))
    def one(call):
        tool, arguments = call
        check_outcome(session.call(tool, arguments))

    one()
    assert not session.call("describe_schema", {}).is_error, "the server must still answer"
    assert sha256(store) == before
    figures["sqlite.fuzz_calls"] = session.calls - start


def test_injection_corpus_gives_errors_or_exact_matches(session, store, figures):
    before = sha256(store)
    outcomes = {"error": 0, "empty": 0, "match": 0}
    for entry in INJECTION_CORPUS:
        described = session.call("describe_entity", {"id": entry})
        assert described.is_error and "Unknown entity" in described.text, (entry, described.text[:300])
        traversed = session.call("bfs_query", {"seeds": [entry], "max_hops": 1})
        assert traversed.is_error, entry
        found = session.call("search_entities", {"query": entry, "mode": "lexical"})
        check_outcome(found)
        if found.is_error:
            outcomes["error"] += 1
            continue
        hits = [h for h in found.data() if "id" in h]
        if not hits:
            outcomes["empty"] += 1
            continue
        outcomes["match"] += 1
        for hit in hits:
            record = session.call("describe_entity", {"id": hit["id"]}).data()
            labels = " ".join([record.get("name") or "", *record.get("synonyms", [])])
            assert lexical_match(entry, labels), (entry, hit, labels)
    assert sha256(store) == before, "the store changed"
    figures["sqlite.injection"] = {"entries": len(INJECTION_CORPUS), **outcomes}


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


@pytest.fixture(scope="module")
def http_server(store):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bfsql", "serve", "--db", str(store), "--transport", "http",
                             "--port", str(port)], stderr=subprocess.PIPE)
    try:
        wait_for_port(port, 60)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(30)


def test_hub_explosion_stays_within_budgets(http_server, figures):
    url, proc = http_server

    async def run():
        async with Client(url) as client:
            measured = {}
            for tool, args in [
                ("bfs_query", {"seeds": ["FPLX:RING_E3_ligase"], "max_hops": 3}),
                ("bfs_query", {"seeds": ["FPLX:RING_E3_ligase", "FPLX:CLEC", "FPLX:RAB"], "max_hops": 3,
                               "topology_only": True}),
                ("intersect_subgraphs", {"seeds": ["FPLX:RING_E3_ligase", "FPLX:RAB"], "k": 3}),
            ]:
                start = time.perf_counter()
                result = await client.call_tool(tool, args)
                seconds = time.perf_counter() - start
                text = result.content[0].text
                assert not result.is_error, text[:500]
                assert len(text) <= 20_000 * 3, "answer exceeds the default budget"
                measured[f"{tool}:{','.join(args['seeds'])}"] = {"seconds": round(seconds, 3), "chars": len(text)}
            return measured

    measured = asyncio.run(run())
    measured["server_peak_rss_mb"] = round(rss_kb(proc.pid, "VmHWM") / 1024, 1)
    figures["sqlite.hub_queries"] = measured


CALLS = [
    ("search_entities", {"query": "kinase"}),
    ("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2}),
    ("bfs_query", {"seeds": ["FPLX:RING_E3_ligase"], "max_hops": 1, "topology_only": True, "limit": 50}),
    ("describe_entities", {"ids": ["HGNC:BRAF", "HGNC:RAF1", "FPLX:MAPK"]}),
    ("intersect_subgraphs", {"seeds": ["HGNC:BRAF", "HGNC:RAF1"], "k": 2}),
    ("describe_schema", {}),
    ("describe_entity", {"id": "FPLX:AMPK"}),
]


def test_concurrent_clients_over_http(http_server, figures):
    url, proc = http_server
    clients = 32
    latencies: list[float] = []
    errors: list[str] = []

    async def worker(index: int, ready: asyncio.Barrier, window: list[float]) -> None:
        async with Client(url) as client:
            await ready.wait()  # every session is open before the timed window starts
            i = index
            while time.monotonic() < window[0]:
                tool, args = CALLS[i % len(CALLS)]
                i += 1
                start = time.perf_counter()
                result = await client.call_tool(tool, args)
                latencies.append(time.perf_counter() - start)
                if result.is_error:
                    errors.append(result.content[0].text[:200])

    async def run() -> float:
        window = [0.0]
        ready = asyncio.Barrier(clients + 1)
        workers = [asyncio.create_task(worker(i, ready, window)) for i in range(clients)]
        window[0] = time.monotonic() + 3600
        await ready.wait()
        window[0] = time.monotonic() + LOAD_SECONDS
        start = time.perf_counter()
        await asyncio.gather(*workers)
        return time.perf_counter() - start

    rss_before = rss_kb(proc.pid)
    elapsed = asyncio.run(run())
    rss_after = rss_kb(proc.pid)
    assert not errors, errors[:5]
    cuts = statistics.quantiles(latencies, n=100)
    figures["sqlite.load"] = {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "calls": len(latencies),
        "errors": len(errors),
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(cuts[49] * 1000, 1),
        "p99_ms": round(cuts[98] * 1000, 1),
        "rss_mb_before": round(rss_before / 1024, 1),
        "rss_mb_after": round(rss_after / 1024, 1),
    }
    assert rss_after - rss_before < 200 * 1024, "server RSS grew by more than 200 MB"
