"""Benchmark: the SQLite store's vector search (sign bits in memory, vectors read from the store) against exact search.

Run: ``python bench/bench_vectors.py --entities 1000000`` (``--help`` for options). Needs the
embedder asked for (default ``wordllama-256``: ``pip install ./plugins/bfsql-embed-wordllama``).

* **Store**: ``--entities`` entities of bench_scale.py's R-MAT graphs (names of two or three
  syllables and a number, five types), loaded with ``bfsql load`` in this process with the
  embedder; printed: the time of embedding and of the vector codes (``bfsql.vectors``), the
  store's bytes an entity of ``entity_vector`` and of the codes' tables.
  ``--grow TO`` then adds entities up to ``TO`` whose vectors are copies of the loaded ones with 8
  components redrawn (no embedding: a way to reach 8M entities here), and saves their codes again.
* **Memory** (in a process of its own): the server's resident size (VmRSS) before and after its first
  vector search, and
  the codes' own bytes an entity (target <= 64), against the float32 matrix of exact search.
* **Queries** (``--queries``, seeded): a stored name with a typo, its first word, or the whole
  name, embedded once. Each is searched through ``SqliteBackend.vector_search`` (limit 10, and
  limit 10 of the rarest type), and by exact search in the same run: the float32 matrix product
  that served before (timed), with ties settled by the float64 definition the backend keeps
  (bfsql.vectors.cosines over a shortlist of 4,000). Printed: p50 / p95 of each, their ratio,
  recall@10 against exact search (target >= 0.95; <= 50 ms at 8M entities), the CPU time a
  search took (the process's, all threads: about what it takes on an idle machine, before any
  split among threads) and the machine's load average. ``--checked N`` checks only the first N
  queries against exact search (at 8M entities it decodes every stored row per query: seconds
  each); ``--warm`` reads the store's file once before timing, so that its pages are in the OS
  page cache, as on a server that has been answering for a while (without it the first queries
  also time the disk).

``--postgres`` measures PostgreSQL instead (an embedded PostgreSQL 18 with pgvector, from
bfsql-postgres[test]): the ``--entities`` names loaded with ``bfsql postgres load``
(printed: its time, and the vectors' codes' share of it), then the server's search by the codes
(``PostgresBackend.vector_search``) against PostgreSQL's exact scan over every vector (the
statement a store without codes runs: timed, and the truth, ties by id); with ``--hnsw`` also
against the HNSW index an older bfsql built (``halfvec_cosine_ops``, ``ef_search`` 100: its build
time, latency and recall).

``--store FILE`` measures a store built elsewhere instead (e.g. bench_scale.py's R-MAT 23 store, whose
8.4M names, of the same kind, were embedded by its loader), its queries made from ``--queries``
names drawn from it (seeded).

Stores go to ``--dir`` (default ``$TMPDIR/bfsql-bench-vectors``), never into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bfsql.backends.sqlite import SqliteBackend
from bfsql.loading.progress import LoadProgress
from bfsql.loading.sqlite_loader import decode_vectors, load_sqlite
from bfsql.plugins import create_embedder
from bfsql.vectors import build_codes, cosines, save_vectors

sys.path.insert(0, str(Path(__file__).parent))
from scale_graphs import TYPE_WEIGHTS, TYPES, _names

SHORTLIST = 4000
"""Rows of the float32 exact search whose scores are settled in float64 (ties by id) for the truth."""
MATRIX_LIMIT = 2_000_000
"""Entities up to which exact search holds the float32 matrix, as the server did."""


class Phases(LoadProgress):
    """Times the load's phases and steps."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        """Note the phase's start."""
        self.marks.append((phase, time.perf_counter()))

    def step(self, text: str) -> None:
        """Note the codes' step (the one this benchmark times inside the embed phase)."""
        if text == "vector codes":
            self.marks.append((text, time.perf_counter()))

    def seconds(self, name: str) -> float:
        """Seconds from ``name``'s mark to the next one."""
        at = next(i for i, (mark, _) in enumerate(self.marks) if mark == name)
        return self.marks[at + 1][1] - self.marks[at][1]


def rss() -> int:
    """This process's resident bytes now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def write_bundle(path: Path, count: int, rng: np.random.Generator) -> list[str]:
    """Entities only (the vectors are what this benchmark loads); their names."""
    names = _names(count, rng)
    types = rng.choice(len(TYPES), size=count, p=TYPE_WEIGHTS)
    with open(path, "w", encoding="utf-8") as out:
        for i, (name, kind) in enumerate(zip(names, types.tolist(), strict=True)):
            out.write(json.dumps({"kind": "entity", "id": f"R:{i}", "entity_type": TYPES[kind], "name": name}) + "\n")
    return names


def grow(db: Path, to: int, dimension: int, rng: np.random.Generator) -> float:
    """Add entities up to ``to``, each a loaded one's vector with 8 components redrawn; save the codes again."""
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("BEGIN")
        rows = conn.execute("SELECT v.entity_id, e.entity_type, e.name, v.vector FROM entity_vector v "
                            "JOIN entity e USING (entity_id)").fetchall()
        have = len(rows)
        for start in range(have, to, have):
            batch = [rows[i % have] for i in range(start, min(to, start + have))]
            raw = np.frombuffer(b"".join(r[3] for r in batch), dtype=np.uint8).reshape(len(batch), dimension + 4).copy()
            spots = rng.integers(4, dimension + 4, size=(len(batch), 8))
            raw[np.arange(len(batch))[:, None], spots] = rng.integers(0, 256, size=(len(batch), 8), dtype=np.uint8)
            ids = [f"G:{start + i}" for i in range(len(batch))]
            conn.executemany("INSERT INTO entity (entity_id, entity_type, name, synonyms, properties, status) "
                             "VALUES (?, ?, ?, '[]', '{}', NULL)",
                             [(i, r[1], r[2]) for i, r in zip(ids, batch, strict=True)])
            conn.executemany("INSERT INTO entity_vector (entity_id, text, vector) VALUES (?, ?, ?)",
                             [(i, r[2], bytes(v)) for i, r, v in zip(ids, batch, raw, strict=True)])
        began = time.perf_counter()
        save_vectors(conn, build_codes(conn, dimension))
        took = time.perf_counter() - began
        conn.execute("COMMIT")
    return took


def queries(names: list[str], count: int) -> list[str]:
    """Names with a typo, first words, whole names (seeded)."""
    rng = random.Random(3)
    found = []
    for _ in range(count):
        name, roll = rng.choice(names), rng.random()
        word = name.split()[0]
        if roll < 0.4:
            at = rng.randrange(1, len(word) - 1)
            found.append(word[:at] + word[at + 1] + word[at] + word[at + 2 :])
        else:
            found.append(word if roll < 0.7 else name)
    return found


class Exact:
    """Exact search as it was served: every vector in one float32 matrix (and the ids and types in memory).

    Above :data:`MATRIX_LIMIT` entities the matrix would not fit beside the rest here: the stored
    rows are held instead and decoded a chunk at a time (slower than the served product).
    """

    def __init__(self, db: Path, dimension: int) -> None:
        ids, types, parts = [], [], []
        with sqlite3.connect(db) as conn:
            cursor = conn.execute("SELECT v.entity_id, e.entity_type, v.vector FROM entity_vector v "
                                  "JOIN entity e USING (entity_id) ORDER BY v.entity_id")
            while chunk := cursor.fetchmany(65536):
                ids += [r[0] for r in chunk]
                types += [r[1] for r in chunk]
                parts.append(np.frombuffer(b"".join(r[2] for r in chunk), dtype=np.uint8).reshape(len(chunk), -1))
        self.ids, self.types, self.raw = ids, np.array(types), np.concatenate(parts)
        self.dimension = dimension
        self.matrix = self._decode(0, len(ids)) if len(ids) <= MATRIX_LIMIT else None

    def _decode(self, start: int, end: int) -> np.ndarray:
        raw = self.raw[start:end]
        if raw.shape[1] != self.dimension + 4:  # float32 rows of an older store
            return decode_vectors([bytes(row) for row in raw], self.dimension)
        scales = raw[:, :4].copy().view("<f4")
        return raw[:, 4:].view(np.int8).astype(np.float32) * scales

    def timed(self, query: np.ndarray, wanted: str | None) -> np.ndarray:
        """The served computation: one product, the other types masked, a partial sort (its time is the baseline)."""
        unit = query.astype(np.float32)
        if self.matrix is not None:
            scores = np.einsum("ij,j->i", self.matrix, unit)
        else:
            scores = np.concatenate([np.einsum("ij,j->i", self._decode(s, s + 262144), unit)
                                     for s in range(0, len(self.ids), 262144)])
        if wanted is not None:
            scores[self.types != wanted] = -np.inf
        return np.argpartition(-scores, SHORTLIST)[:SHORTLIST]

    def truth(self, query: np.ndarray, shortlist: np.ndarray, wanted: str | None, limit: int) -> list[str]:
        """The ids of the best ``limit`` by the backend's definition (float64 cosines, six decimals, ties by id)."""
        if wanted is not None:
            shortlist = shortlist[self.types[shortlist] == wanted]
        blobs = [bytes(self.raw[i]) for i in shortlist.tolist()]
        scores = cosines(blobs, query / np.linalg.norm(query), self.dimension)
        ranked = sorted(zip(scores.tolist(), (self.ids[i] for i in shortlist.tolist()), strict=True),
                        key=lambda hit: (-hit[0], hit[1]))
        return [i for _, i in ranked[:limit]]


def percentiles(times: list[float]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    ordered = sorted(times)
    return 1000 * statistics.median(ordered), 1000 * ordered[int(0.95 * (len(ordered) - 1))]


def warm(db: Path) -> float:
    """Read the store's file once (its pages then come from the OS page cache); seconds taken."""
    began = time.perf_counter()
    with open(db, "rb") as source:
        while source.read(1 << 24):
            pass
    return time.perf_counter() - began


async def measure(db: Path, texts: list[str], embedder: Any, rare: str, checked: int) -> dict[str, Any]:
    """The backend's search and exact search on the same queries (the first ``checked`` of them): memory,
    latency, recall."""
    vectors = [np.asarray(v) for v in await embedder.embed(texts)]
    backend = SqliteBackend(db, memory_index=0)
    result: dict[str, Any] = {}
    try:
        before = rss()
        began = time.perf_counter()
        await backend.vector_search(vectors[0].tolist(), None, 10)
        result["first_search_s"] = time.perf_counter() - began
        result["rss_growth"] = rss() - before
        index = backend._vectors
        assert index is not None
        result["entities"], result["codes_bytes"] = len(index), index.nbytes()
        hits: dict[str | None, list[list[str]]] = {None: [], rare: []}
        times: dict[str | None, list[float]] = {None: [], rare: []}
        cpu: dict[str | None, list[float]] = {None: [], rare: []}
        for wanted in (None, rare):
            for vector in vectors:
                began, used = time.perf_counter(), time.process_time()
                stubs = await backend.vector_search(vector.tolist(), None if wanted is None else [wanted], 10)
                times[wanted].append(time.perf_counter() - began)
                cpu[wanted].append(time.process_time() - used)
                hits[wanted].append([s.id for s in stubs])
    finally:
        await backend.aclose()
    before = rss()
    exact = Exact(db, len(vectors[0]))
    result["exact_rss_growth"] = rss() - before
    result["load_average"] = os.getloadavg()
    for wanted in (None, rare):
        spent, recalls = [], []
        for vector, got in zip(vectors[:checked], hits[wanted][:checked], strict=True):
            began = time.perf_counter()
            shortlist = exact.timed(vector, wanted)
            spent.append(time.perf_counter() - began)
            want = exact.truth(vector, shortlist, wanted, 10)
            recalls.append(len(set(got) & set(want)) / max(1, len(want)))
        key = "all" if wanted is None else "rare"
        result[key] = {"p50_p95": percentiles(times[wanted]), "cpu_p50_p95": percentiles(cpu[wanted]),
                       "exact_p50_p95": percentiles(spent),
                       "recall10": float(np.mean(recalls)), "checked": len(recalls)}
    return result


def report(result: dict[str, Any], rare: str) -> None:
    """Print the search figures as markdown table rows."""
    mb, n = 1e6, result["entities"]
    print(f"| entities | {n:,} |")
    print(f"| codes in memory | {result['codes_bytes'] / mb:,.1f} MB ({result['codes_bytes'] / n:.1f} B/entity) |")
    print(f"| server RSS growth, first vector search | {result['rss_growth'] / mb:,.0f} MB "
          f"({result['rss_growth'] / n:.0f} B/entity); exact search's matrix and lists: "
          f"{result['exact_rss_growth'] / mb:,.0f} MB ({result['exact_rss_growth'] / n:.0f} B/entity) |")
    print(f"| first vector search (codes read) | {result['first_search_s']:.2f} s |")
    for key, label in (("all", "all types"), ("rare", f"node_types=[{rare}]")):
        r = result[key]
        (p50, p95), (e50, e95) = r["p50_p95"], r["exact_p50_p95"]
        print(f"| {label}: p50 / p95 ms (exact) | {p50:.1f} / {p95:.1f} ({e50:.1f} / {e95:.1f}; x{p50 / e50:.2f}) "
              f"| recall@10 {r['recall10']:.3f} ({r['checked']} queries checked) |")
        print(f"| {label}: CPU time a search, p50 / p95 ms (all threads) | {r['cpu_p50_p95'][0]:.1f} / "
              f"{r['cpu_p50_p95'][1]:.1f} |")
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(f"| load average during the searches (1, 5, 15 min) | {load} |")


def main() -> None:
    """Build (or reuse) the store, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--grow", type=int, default=0, help="add near-copies up to this many entities")
    parser.add_argument("--embedder", default="wordllama-256")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--checked", type=int, default=0, help="queries checked against exact search (0: all)")
    parser.add_argument("--warm", action="store_true", help="read the store's file once before timing")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bfsql-bench-vectors")
    parser.add_argument("--store", type=Path, help="measure this store (made by bfsql load with vectors)")
    parser.add_argument("--postgres", action="store_true", help="measure PostgreSQL (an embedded server)")
    parser.add_argument("--hnsw", action="store_true", help="with --postgres: also the HNSW index older stores had")
    args = parser.parse_args()
    if args.postgres:
        measure_postgres(args)
        return
    if args.store is not None:
        measure_store(args)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    embedder = create_embedder(args.embedder)
    rng = np.random.default_rng(1)
    db = args.dir / f"v-{args.entities}-{args.embedder}.sqlite"
    bundle = args.dir / f"v-{args.entities}.jsonl"
    names = write_bundle(bundle, args.entities, rng)
    load: dict[str, float] = {}
    if not db.exists():
        phases = Phases()
        began = time.perf_counter()
        load_sqlite(db, [bundle], embedder=embedder, progress=phases)
        load["load s"] = time.perf_counter() - began
        load["of which embedding s"] = phases.seconds("embed")
        load["of which vector codes s"] = phases.seconds("vector codes")
    if args.grow > args.entities:
        grown = args.dir / f"v-{args.entities}-{args.embedder}-to-{args.grow}.sqlite"
        if not grown.exists():
            grown.write_bytes(db.read_bytes())
            load["vector codes of the grown store s"] = grow(grown, args.grow, embedder.dimension, rng)
        db = grown
    if load:
        with sqlite3.connect(db) as conn:
            for table in ("entity_vector", "vector_row", "vector_part"):
                size = conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name = ?", (table,)).fetchone()[0] or 0
                load[f"store: {table} B/entity"] = size / max(1, args.grow or args.entities)
    if load:  # the server's memory is measured in a process of its own, not one that has just loaded
        for name, value in load.items():
            print(f"| {name} | {value:,.1f} |")
        subprocess.run([sys.executable, __file__, *sys.argv[1:]], check=True)
        return
    rare = TYPES[int(np.argmin(TYPE_WEIGHTS))]
    if args.warm:
        print(f"| store's file read once before timing | {warm(db):.1f} s |")
    result = asyncio.run(measure(db, queries(names, args.queries), embedder, rare, args.checked or args.queries))
    report(result, rare)


def stored_names(db: Path, count: int, rng: np.random.Generator) -> list[str]:
    """``count`` names of entities of the store ``db``, drawn at random (one pass over its names)."""
    with sqlite3.connect(db) as conn:
        total = conn.execute("SELECT COUNT(*) FROM entity").fetchone()[0]
        wanted = set(rng.choice(total, size=min(count, total), replace=False).tolist())
        cursor = conn.execute("SELECT name FROM entity")
        return [name for at, (name,) in enumerate(cursor) if at in wanted and name]


def measure_store(args: argparse.Namespace) -> None:
    """Measure the store ``args.store`` with its own embedder's queries."""
    with sqlite3.connect(args.store) as conn:
        embedder = create_embedder(conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0])
    names = stored_names(args.store, args.queries * 2, np.random.default_rng(1))
    rare = TYPES[int(np.argmin(TYPE_WEIGHTS))]
    if args.warm:
        print(f"| store's file read once before timing | {warm(args.store):.1f} s |")
    result = asyncio.run(measure(args.store, queries(names, args.queries), embedder, rare,
                                 args.checked or args.queries))
    report(result, rare)


def measure_postgres(args: argparse.Namespace) -> None:
    """Load ``args.entities`` names into an embedded PostgreSQL and measure its search by the codes (and by HNSW)."""
    from bfsql_testsupport.embedded_postgres import EmbeddedPostgres

    args.dir.mkdir(parents=True, exist_ok=True)
    embedder = create_embedder(args.embedder)
    bundle = args.dir / f"v-{args.entities}.jsonl"
    names = write_bundle(bundle, args.entities, np.random.default_rng(1))
    rare = TYPES[int(np.argmin(TYPE_WEIGHTS))]
    with EmbeddedPostgres() as server:
        result = asyncio.run(_measure_postgres(server.dsn(), bundle, queries(names, args.queries), embedder, rare,
                                               args.checked or args.queries, args.hnsw))
    for line in result:
        print(line)


async def _measure_postgres(dsn: str, bundle: Path, texts: list[str], embedder: Any, rare: str, checked: int,
                            hnsw: bool) -> list[str]:
    import asyncpg

    from bfsql_postgres import PostgresBackend, PostgresConfig
    from bfsql_postgres import queries as pg_queries
    from bfsql_postgres.loader import load_postgres
    from bfsql_postgres.vector_codes import save_codes

    lines = []
    began = time.perf_counter()
    await load_postgres(dsn, [bundle], embedder=embedder)
    loaded = time.perf_counter() - began
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            began = time.perf_counter()
            await save_codes(conn)
            codes = time.perf_counter() - began
    finally:
        await conn.close()
    lines.append(f"| `bfsql postgres load` with {embedder.name} vectors | {loaded:.1f} s, of which saving the codes "
                 f"{codes:.1f} s (timed again alone) |")
    vectors = [np.asarray(v).tolist() for v in await embedder.embed(texts)]
    config = PostgresConfig(dsn=dsn, query_timeout=600)
    before, began = rss(), time.perf_counter()
    backend = await PostgresBackend.create(config)  # starts reading the codes
    try:
        saved = await backend._vector_codes()
        assert saved is not None
        size, took = saved.index.nbytes(), time.perf_counter() - began
        lines.append(f"| codes read by the server (from its open) | {took:.2f} s, {size / 1e6:,.1f} MB "
                     f"({size / len(saved.index):.1f} B/entity), RSS +{(rss() - before) / 1e6:,.0f} MB |")
        exact_layout = dataclasses.replace(backend.layout, vector_codes=False, vector_index=False)
        exact_sql = pg_queries.vector_search_sql(exact_layout)
        for wanted in (None, rare):
            types = None if wanted is None else [wanted]
            times, got = [], []
            for vector in vectors:
                began = time.perf_counter()
                got.append([s.id for s in await backend.vector_search(vector, types, 10)])
                times.append(time.perf_counter() - began)
            truth, spent = [], []
            for vector in vectors[:checked]:
                literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
                began = time.perf_counter()
                truth.append([r["entity_id"] for r in await backend.pool.fetch(exact_sql, literal, types, 10)])
                spent.append(time.perf_counter() - began)
            recall = np.mean([len(set(g) & set(t)) / max(1, len(t)) for g, t in zip(got, truth, strict=False)])
            (p50, p95), (e50, e95) = percentiles(times), percentiles(spent)
            label = "all types" if wanted is None else f"node_types=[{wanted}]"
            lines.append(f"| {label}: codes, p50 / p95 ms (exact scan) | {p50:.1f} / {p95:.1f} ({e50:.1f} / {e95:.1f}; "
                         f"x{p50 / e50:.2f}) | recall@10 {recall:.3f} ({len(truth)} queries checked) |")
            if hnsw and wanted is None:
                lines.append(await _hnsw(dsn, backend, vectors, truth, embedder.dimension))
    finally:
        await backend.aclose()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.append(f"| load average after the searches (1, 5, 15 min) | {load} |")
    return lines


async def _hnsw(dsn: str, backend: Any, vectors: list[list[float]], truth: list[list[str]], dimension: int) -> str:
    """Build the HNSW index an older bfsql built, and search through it as such a store was searched."""
    import asyncpg

    from bfsql_postgres import queries as pg_queries

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SET maintenance_work_mem = '2GB'")
        began = time.perf_counter()
        await conn.execute(f"CREATE INDEX entity_embedding_hnsw_{dimension} ON entity "
                           f"USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops)")
        built = time.perf_counter() - began
    finally:
        await conn.close()
    sql = pg_queries.vector_search_sql(dataclasses.replace(backend.layout, vector_codes=False, vector_index=True))
    times, got = [], []
    for vector in vectors:
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        began = time.perf_counter()
        got.append([r["entity_id"] for r in await backend.pool.fetch(sql, literal, None, 10)])
        times.append(time.perf_counter() - began)
    recall = np.mean([len(set(g) & set(t)) / max(1, len(t)) for g, t in zip(got, truth, strict=False)])
    p50, p95 = percentiles(times)
    return (f"| all types: HNSW index (older stores), p50 / p95 ms | {p50:.1f} / {p95:.1f}, built in {built:.0f} s "
            f"| recall@10 {recall:.3f} |")


if __name__ == "__main__":
    main()
