"""Benchmark: one ``bfsql query`` on the demo graph, as whole processes, start-up included.

Run: ``python bench/bench_startup.py [--runs N] [--before-src PATH] [--calls NAME,...] [--instructions]``
(about a minute, a few more with ``--instructions``, which needs valgrind; otherwise only bfsql and the
plugins installed beside it). Not part of CI; ``nox -s bench`` runs it.

**What is timed**: the whole process of ``python -m bfsql query TOOL ARGS --json`` on the bundled
demo (FamPlex in its SQLite store), from its start to its exit: the interpreter, the imports,
the plugins, opening the store and the call. Each run's wall time is read around the child
process, its CPU time (user + system) from the operating system's accounting of the finished
child (``RUSAGE_CHILDREN``).

**At defaults** a ``query`` leaves a resident process behind that answers the next ones
(``bfsql.launch``): the change is timed as a user meets it from the second call on, its resident
process's CPU time (read from ``/proc``) added to the command's. Its sockets live in a runtime
folder of the benchmark's own, and its resident processes are stopped at the end.

**The baselines**, run in the same session and interleaved run by run with the change (so a
machine whose speed drifts moves them all alike): the change in one process
(``BFSQL_RESIDENT=0``: what the first call of a session costs), ``python -c pass`` (the
interpreter's own start), and with ``--before-src`` (a bfsql checkout, e.g. today's main) the same calls through
that version. Each version runs with its own ``core/src`` and ``plugins/*/src`` first on
``PYTHONPATH`` (the change: the checkout of the bfsql this script imports). Both checkouts are
byte-compiled first, as an installed package is, so that no run pays for compiling sources.
Warm-up runs (not counted) build each version's demo store.

**Figures**, per call: median wall and CPU seconds (min-max beside them), the ratio to
``python -c pass`` and, with a baseline, the change / baseline ratio of the medians; the load
average, since on a shared machine wall time is mostly waiting for a core. With
``--instructions``, each command also runs once under valgrind's callgrind, which counts the
instructions it executes in user space, threads included (the same from run to run within a few
tenths of a percent, whatever the load; reading files and other work of the kernel is not counted):
the figure that tells a change of a few percent on a shared machine. For the change at defaults
that counts the command only, not its resident process.

**Target** (issue 38): ``bfsql query`` on the demo within 0.4 s wall (median of each call, at
defaults); exit status 1 when a call misses it.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bfsql_testsupport.residents import residents_of

TARGET_WALL = 0.4
"""Seconds of wall time one ``bfsql query`` on the demo may take (issue 38)."""

CALLS = {
    "describe_entity": ["describe_entity", "id=HGNC:BRAF"],
    "search_entities": ["search_entities", "query=BRAF", "limit=5"],
    "bfs_query": ["bfs_query", '{"seeds": ["FPLX:RAF"], "max_hops": 1, "topology_only": true}'],
}
"""The calls timed, by name (``--calls`` picks some)."""


@dataclass
class Command:
    """One command line timed, and what its runs took."""

    label: str
    argv: list[str]
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    instructions: int | None = None
    residents: Path | None = None
    """The runtime folder of the command's resident processes, whose CPU time is the command's too."""

    def run(self) -> None:
        """Run it once, keeping its wall and CPU seconds; a failed run stops the benchmark."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        resident_before = resident_cpu(self.residents)
        started = time.perf_counter()
        done = subprocess.run(self.argv, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            raise SystemExit(f"{self.label} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        self.wall.append(wall)
        resident = resident_cpu(self.residents) - resident_before
        self.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime + resident)


    def count_instructions(self) -> None:
        """Run it once under valgrind's callgrind, keeping the instructions it executed."""
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *self.argv],
                              env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{self.label} failed under valgrind ({done.returncode}): {done.stderr.strip()[-500:]}")
        counted = [line.split()[-1] for line in done.stderr.splitlines() if "Collected :" in line]
        self.instructions = int(counted[-1])


def resident_cpu(runtime: Path | None) -> float:
    """CPU seconds (user + system) spent so far by the resident processes of ``runtime``."""
    total = 0.0
    for pid in residents_of(runtime) if runtime else []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def source_dirs(checkout: Path) -> list[Path]:
    """A checkout's ``core/src`` and every plugin's ``src``."""
    return [checkout / "core" / "src", *sorted((checkout / "plugins").glob("*/src"))]


def checkout_of(path: Path | None) -> Path:
    """The checkout at ``path`` (a checkout or its ``core/src``); None: the one of the bfsql this script imports."""
    if path is None:
        import bfsql

        return Path(bfsql.__file__).resolve().parents[3]
    return path if (path / "core" / "src").is_dir() else path.resolve().parents[1]


def version_env(checkout: Path) -> dict[str, str]:
    """The environment that runs ``checkout``'s bfsql and plugins, byte-compiled first."""
    dirs = source_dirs(checkout)
    for directory in dirs:
        compileall.compile_dir(str(directory), quiet=1)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(d) for d in dirs)}


def commands(calls: Sequence[str], before: Path | None, runtime: Path) -> list[tuple[str, list[Command]]]:
    """Per call, its commands: the change at defaults (resident processes in ``runtime``), the change in one
    process, the baseline version (when given) and ``python -c pass``."""
    change = {**version_env(checkout_of(None)), "XDG_RUNTIME_DIR": str(runtime)}
    change.pop("BFSQL_RESIDENT", None)
    baseline = version_env(checkout_of(before)) if before is not None else None
    made = []
    for name in calls:
        argv = [sys.executable, "-m", "bfsql", "query", *CALLS[name], "--json"]
        group = [Command("change", argv, change, residents=runtime),
                 Command("one process", argv, {**change, "BFSQL_RESIDENT": "0"})]
        if baseline is not None:
            group.append(Command("baseline", argv, {**baseline, "BFSQL_RESIDENT": "0"}))
        made.append((name, [*group, Command("python -c pass", [sys.executable, "-c", "pass"], dict(os.environ))]))
    return made


def spread(values: list[float]) -> str:
    """Median, with min-max."""
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def report(name: str, group: list[Command]) -> bool:
    """Print a call's figures; whether the change met the target."""
    change, *others = group
    bare = others[-1]
    print(f"\n{name}: {' '.join(change.argv[3:])}")
    print(f"  {'command':<16} {'wall s median (min-max)':<26} {'cpu s median (min-max)':<26} wall / pass  cpu / pass")
    for command in group:
        wall_ratio = statistics.median(command.wall) / statistics.median(bare.wall)
        cpu_ratio = statistics.median(command.cpu) / statistics.median(bare.cpu)
        print(f"  {command.label:<16} {spread(command.wall):<26} {spread(command.cpu):<26} "
              f"{wall_ratio:>10.1f}  {cpu_ratio:>10.1f}")
    if change.instructions is not None:
        print("  instructions (callgrind): " + ", ".join(f"{c.label} {c.instructions / 1e6:,.0f} M" for c in group))
    if len(others) == 3:
        baseline = others[1]
        counted = (f", instructions {change.instructions / baseline.instructions:.3f}"
                   if change.instructions and baseline.instructions else "")
        print(f"  change / baseline: wall {statistics.median(change.wall) / statistics.median(baseline.wall):.2f}, "
              f"cpu {statistics.median(change.cpu) / statistics.median(baseline.cpu):.2f}{counted}")
    met = statistics.median(change.wall) <= TARGET_WALL
    print(f"  target: wall <= {TARGET_WALL} s: {'met' if met else 'NOT met'}")
    return met


def main(argv: Sequence[str] | None = None) -> int:
    """Time every call of ``--calls``, interleaved with its baselines; 1 when the change misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="counted runs of each command (default 9)")
    parser.add_argument("--warmup", type=int, default=1, help="runs of each command not counted (default 1)")
    parser.add_argument("--before-src", type=Path, help="a baseline bfsql checkout (or its core/src); default: none")
    parser.add_argument("--calls", default=",".join(CALLS), help=f"calls to time, of {', '.join(CALLS)}")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each command's instructions once under valgrind (half a minute a command)")
    args = parser.parse_args(argv)
    unknown = [c for c in args.calls.split(",") if c not in CALLS]
    if unknown:
        parser.error(f"unknown calls {unknown}; choose among {', '.join(CALLS)}")
    runtime = Path(tempfile.mkdtemp(prefix="bfsql-bench-"))
    try:
        return measure(args, runtime)
    finally:
        for pid in residents_of(runtime):
            os.kill(pid, 15)
        shutil.rmtree(runtime, ignore_errors=True)


def measure(args: argparse.Namespace, runtime: Path) -> int:
    """Time the calls of ``args``; 1 when the change misses the target."""
    groups = commands(args.calls.split(","), args.before_src, runtime)
    load = os.getloadavg()
    for _, group in groups:
        for command in group:
            for _ in range(args.warmup + (command.residents is not None)):  # the first starts the resident process
                command.run()
                command.wall.clear()
                command.cpu.clear()
        for _ in range(args.runs):
            for command in group:
                command.run()
        if args.instructions:
            for command in group:
                command.count_instructions()
    print(f"{os.cpu_count()} cores; load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{args.runs} runs a command, interleaved")
    met = [report(name, group) for name, group in groups]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
