"""How much a model gets within its budget, and what fitting costs (issue 14's benchmark).

Baseline, measured in the same run: the answer budget (characters of compact JSON) and the
engine's own time for the same call. Through the built-in tool functions and the pipeline's
fitting, at the default settings (20,000 tokens):

* **20 diseases, 1-hop full ``bfs_query`` on the HPO in PostgreSQL** (and 2 hops from five of
  them, answers too big for the budget): characters used / budget, share of returned nodes
  named, share with full metadata, fitting time / engine time (uncached: no graph cache).
  Target: every answer cut to fit uses at least 75 % of the budget; all nodes named.
* **The largest answers, on the HPO in SQLite**: 3-hop ``bfs_query`` from the three biggest
  hubs and ``intersect_subgraphs`` of the 100 biggest with k=5: fitting time / engine time.
  Target: fitting adds at most 10 % to the engine's time.

Exits 1 when a target is missed. ``python bench/bench_answers.py [--stores postgres,sqlite]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bfsql import Graph
from bfsql.budgets import DEFAULT_MAX_TOKENS
from bfsql.server.answers import AnswerBudget, document, postprocess
from bfsql.server.run import tune_garbage_collector
from bfsql.server.tool_spec import ToolContext
from bfsql.server.tools import bfs_query, intersect_subgraphs
from bfsql.settings import ServerSettings

KNOWN_DISEASES = ["OMIM:154700", "ORPHA:558", "OMIM:219700", "OMIM:134430", "OMIM:100800"]
"""Marfan syndrome (the issue's example) and the traversal benchmark's disease seeds."""

DISEASES = 20
REPEAT = 3
USE_TARGET = 0.75
FIT_TARGET = 0.10


def say(*parts: Any) -> None:
    """Print at once (the run is long)."""
    print(*parts, flush=True)


def pick_diseases(bundle: Path) -> list[str]:
    """The known diseases, then others spread evenly over the sorted disease ids, 20 in all."""
    diseases = []
    with open(bundle, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["kind"] == "entity" and row["entity_type"] == "Disease" and row.get("status") != "merged":
                diseases.append(row["id"])
    diseases.sort()
    chosen = [d for d in KNOWN_DISEASES if d in diseases]
    step = max(1, len(diseases) // DISEASES)
    for disease in diseases[::step]:
        if len(chosen) == DISEASES:
            break
        if disease not in chosen:
            chosen.append(disease)
    return chosen


async def measure(graph: Graph, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call of a built-in tool function, then the pipeline's fitting: times and what the answer holds."""
    budget = AnswerBudget(DEFAULT_MAX_TOKENS)
    engine, fitting = [], []
    for _ in range(REPEAT):
        ctx = ToolContext(graph, ServerSettings(), budget)
        started = time.perf_counter()
        answer = await tool(ctx, **arguments)
        postprocess(graph, answer, tool.__name__)
        engine.append(time.perf_counter() - started)
        started = time.perf_counter()
        fitted, text = document(answer, budget)
        fitting.append(time.perf_counter() - started)
    nodes = fitted["nodes"]
    named = sum(1 for n in nodes if n.get("name") or (n.get("metadata") or {}).get("name"))
    full = sum(1 for n in nodes if n.get("metadata") is not None and "_clipped" not in n["metadata"])
    return {
        "chars": len(text),
        "use": len(text) / budget.chars,
        "cut": bool(fitted.get("truncated")),
        "nodes": len(nodes),
        "node_count": fitted["node_count"],
        "named": named / len(nodes) if nodes else 1.0,
        "full": full / len(nodes) if nodes else 1.0,
        "engine_s": statistics.median(engine),
        "fit_s": statistics.median(fitting),
    }


async def bench_diseases(graph: Graph, diseases: list[str]) -> bool:
    """The 20 diseases' 1-hop full answers and five 2-hop ones: table and verdict."""
    say(f"\n20 diseases, 1-hop full bfs_query (and 2 hops from {len(KNOWN_DISEASES)}), default budget "
        f"({DEFAULT_MAX_TOKENS} tokens = {AnswerBudget(DEFAULT_MAX_TOKENS).chars} chars), median of {REPEAT}")
    say(f"{'seed':<16}{'hops':>4}{'nodes':>12}{'chars':>8}{'used':>7}{'named':>7}{'full':>7}{'engine ms':>11}"
        f"{'fit ms':>8}{'fit/eng':>8}")
    rows = []
    calls = [(seed, 1) for seed in diseases] + [(seed, 2) for seed in diseases if seed in KNOWN_DISEASES]
    for seed, hops in calls:
        row = await measure(graph, bfs_query, {"seeds": [seed], "max_hops": hops})
        rows.append(row)
        say(f"{seed:<16}{hops:>4}{row['nodes']:>6}/{row['node_count']:<5}{row['chars']:>8}{row['use']:>7.0%}"
            f"{row['named']:>7.0%}{row['full']:>7.0%}{row['engine_s'] * 1000:>11.1f}{row['fit_s'] * 1000:>8.1f}"
            f"{row['fit_s'] / row['engine_s']:>8.2f}")
    cut = [r for r in rows if r["cut"]]
    low = [r for r in cut if r["use"] < USE_TARGET]
    say(f"answers cut to fit: {len(cut)}/{len(rows)}; budget used when cut: "
        f"{min((r['use'] for r in cut), default=0):.1%} at least, median "
        f"{statistics.median([r['use'] for r in cut]) if cut else 0:.1%}; nodes named: "
        f"{min(r['named'] for r in rows):.0%} at least; full metadata: median "
        f"{statistics.median(r['full'] for r in rows):.0%}; fitting/engine median "
        f"{statistics.median(r['fit_s'] / r['engine_s'] for r in rows):.2f}")
    met = not low and all(r["named"] == 1.0 for r in rows)
    say(f"target (cut answers use >= {USE_TARGET:.0%} of the budget, every node named): "
        f"{'met' if met else 'NOT met'}")
    return met


async def bench_hubs(graph: Graph, hubs: list[str]) -> bool:
    """The largest answers: fitting time against the engine's."""
    say(f"\nthe largest answers (HPO hubs), default budget, median of {REPEAT}")
    calls = [(f"bfs_query 3 hops from {hub}", bfs_query, {"seeds": [hub], "max_hops": 3}) for hub in hubs[:3]]
    calls.append((f"intersect_subgraphs of the {len(hubs)} biggest hubs, k=5", intersect_subgraphs,
                  {"seeds": hubs, "k": 5}))
    ratios = []
    for label, tool, arguments in calls:
        row = await measure(graph, tool, arguments)
        ratios.append(row["fit_s"] / row["engine_s"])
        say(f"  {label}: {row['node_count']} nodes in all, {row['nodes']} shown, {row['chars']} chars; engine "
            f"{row['engine_s']:.2f} s, fitting {row['fit_s'] * 1000:.0f} ms ({ratios[-1]:.1%} of the engine)")
    met = max(ratios) <= FIT_TARGET
    say(f"target (fitting <= {FIT_TARGET:.0%} of engine time): {'met' if met else 'NOT met'}")
    return met


@contextlib.asynccontextmanager
async def postgres_graph(bundle: Path) -> AsyncIterator[Graph]:
    """The HPO in an embedded PostgreSQL 18, behind a Graph without cache (every repeat asks the store)."""
    from bfsql_postgres import PostgresBackend, PostgresConfig
    from bfsql_postgres.loader import load_postgres
    from bfsql_testsupport.embedded_postgres import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    try:
        await load_postgres(server.dsn(), [bundle], embedder="none")
        backend = await PostgresBackend.create(PostgresConfig(dsn=server.dsn()))
        graph = Graph(backend, name="postgres", cache=None)
        try:
            yield graph
        finally:
            await graph.aclose()
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def sqlite_graph(bundle: Path, work: Path) -> AsyncIterator[Graph]:
    """The HPO in the embedded SQLite store, its hop index built."""
    from bfsql import SqliteBackend, load_sqlite

    db = work / "hpo.sqlite"
    load_sqlite(db, [bundle], embedder=None)
    backend = SqliteBackend(db)
    await backend.wait_for_index()
    graph = Graph(backend, name="sqlite", cache=None)
    try:
        yield graph
    finally:
        await graph.aclose()


async def main_async(stores: list[str]) -> int:
    """Write the HPO bundle once, then each store's part."""
    from bfsql_testsupport.hpo import write_hpo_bundle

    verdicts = []
    with tempfile.TemporaryDirectory(prefix="bfsql-bench-answers-") as tmp:
        work = Path(tmp)
        bundle = work / "hpo.jsonl"
        hubs = write_hpo_bundle(bundle).hubs
        if "postgres" in stores:
            async with postgres_graph(bundle) as graph:
                verdicts.append(await bench_diseases(graph, pick_diseases(bundle)))
        if "sqlite" in stores:
            async with sqlite_graph(bundle, work) as graph:
                import sqlite3

                with sqlite3.connect(work / "hpo.sqlite") as conn:
                    biggest = [row[0] for row in conn.execute(
                        "SELECT id FROM (SELECT subject_id AS id FROM relationship UNION ALL SELECT object_id "
                        "FROM relationship) GROUP BY id ORDER BY COUNT(*) DESC, id LIMIT 100")]
                verdicts.append(await bench_hubs(graph, biggest or hubs))
    return 0 if all(verdicts) else 1


def main() -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="postgres,sqlite", help="comma-separated, from: postgres, sqlite")
    stores = [s.strip() for s in parser.parse_args().stores.split(",") if s.strip()]
    tune_garbage_collector()  # as bfsql serve does
    return asyncio.run(main_async(stores))


if __name__ == "__main__":
    sys.exit(main())
