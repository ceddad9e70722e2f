"""Hub explosions and load through ``bfsql serve`` over HTTP: the CI's drivers of docs/reliability.md."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mcp import Client

from bfsql_testsupport.services import free_port, wait_for_port

__all__ = ["hub_calls", "hub_explosions", "load_figures", "served_over_http"]


def hub_calls(hubs: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """3-hop traversals and k=3 intersections from a graph's highest-degree nodes (at least two, most first)."""
    seeds = list(hubs)
    return [
        ("bfs_query", {"seeds": seeds[:1], "max_hops": 3}),
        ("bfs_query", {"seeds": seeds, "max_hops": 3, "topology_only": True}),
        ("intersect_subgraphs", {"seeds": seeds[:2], "k": 3}),
        ("intersect_subgraphs", {"seeds": seeds, "k": 3, "topology_only": True}),
    ]


@contextlib.contextmanager
def served_over_http(
    options: Sequence[str], env: Mapping[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``bfsql serve OPTIONS --transport http`` on a free 127.0.0.1 port: its MCP URL and process.

    The server's log goes to a temporary file (a pipe nobody reads would fill up and stall
    it under load) and is quoted if the server does not start; it is stopped at the end.
    """
    port = free_port()
    with tempfile.TemporaryFile() as log:
        command = [sys.executable, "-m", "bfsql", "serve", *options, "--transport", "http", "--port", str(port)]
        process = subprocess.Popen(command, env=dict(env) if env is not None else None, stderr=log)
        try:
            try:
                wait_for_port(port, 60)
            except TimeoutError:
                log.seek(0)
                tail = log.read()[-2000:].decode(errors="replace")
                raise AssertionError(f"bfsql serve did not start: {tail}") from None
            yield f"http://127.0.0.1:{port}/mcp", process
        finally:
            process.terminate()
            process.wait(30)


async def hub_explosions(url: str, calls: Sequence[tuple[str, dict[str, Any]]], max_chars: int) -> dict[str, Any]:
    """Run each call once over streamable HTTP at ``url``; per call its seconds, size and truncation reasons.

    Every call must answer (no tool error) within ``max_chars`` characters: a traversal from a
    hub stays inside the traversal and answer budgets and says so in ``truncated``.
    """
    measured: dict[str, Any] = {}
    async with Client(url) as client:
        for tool, arguments in calls:
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            seconds = time.perf_counter() - started
            text = result.content[0].text  # the answer's one document
            assert not result.is_error, (tool, arguments, text[:500])
            assert len(text) <= max_chars, f"{tool} answered {len(text)} characters (budget {max_chars})"
            answer = json.loads(text)
            label = f"{tool}:{','.join(arguments['seeds'])}" + (f":k={arguments['k']}" if "k" in arguments else "")
            measured[label] = {
                "seconds": round(seconds, 3),
                "chars": len(text),
                "nodes": len(answer.get("nodes", [])),
                "truncated": sorted({cut["reason"] for cut in answer.get("truncated") or []}),
            }
    return measured


async def load_figures(
    url: str, calls: Sequence[tuple[str, dict[str, Any]]], clients: int, seconds: float
) -> dict[str, Any]:
    """``clients`` MCP sessions over streamable HTTP calling ``calls`` round-robin for ``seconds``.

    All sessions are open before the timed window starts. Returns the figures (calls,
    throughput, p50/p99 latency) and the first error texts under ``error_samples``.
    """
    latencies: list[float] = []
    errors: list[str] = []

    async def worker(index: int, ready: asyncio.Barrier, window: list[float]) -> None:
        async with Client(url) as client:
            await ready.wait()
            i = index
            while time.monotonic() < window[0]:
                tool, arguments = calls[i % len(calls)]
                i += 1
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                latencies.append(time.perf_counter() - started)
                if result.is_error:
                    errors.append("".join(getattr(b, "text", "") for b in result.content)[:200])

    window = [time.monotonic() + 3600]
    ready = asyncio.Barrier(clients + 1)
    workers = [asyncio.create_task(worker(i, ready, window)) for i in range(clients)]
    await ready.wait()
    window[0] = time.monotonic() + seconds
    started = time.perf_counter()
    await asyncio.gather(*workers)
    elapsed = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "calls": len(latencies),
        "errors": len(errors),
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(cuts[49] * 1000, 1),
        "p99_ms": round(cuts[98] * 1000, 1),
        "error_samples": errors[:5],
    }
