"""Real SPARQL servers for the tests: Oxigraph (PyPI ``oxigraph``) and Virtuoso (Debian ``virtuoso-opensource``).

Each is started once per test session on free loopback ports, loaded with named
graphs before it answers, kept small, and always stopped. A server that cannot be
found or started makes its tests skip locally and fail in CI (BFSQL_REQUIRE_SERVICES=1).
The reliability tests also start Oxigraphs of their own (:class:`OxigraphInstance`), which
they stop, kill and restart.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bfsql_sparql import SparqlConfig
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

STANDARD_GRAPH = "http://bfsql.test/graph/standard"
LUBM_GRAPH = "http://bfsql.test/graph/lubm"
INJECTION_GRAPH = "http://bfsql.test/graph/injection"
UB = "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#"
"""The LUBM vocabulary."""
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

LUBM_TTL = Path("/usr/share/doc/konclude/examples/Tests/lubm-univ-bench-data-1.ttl")
"""LUBM, one university (100,543 triples), shipped by Debian's konclude package (see services.sh)."""


@dataclass(frozen=True)
class SparqlServer:
    """A running server: its query endpoint and where its graphs are."""

    name: str
    endpoint: str
    graphs: Mapping[str, str]
    """Dataset name to graph IRI."""
    add_graph: Callable[[str, Path], None] | None = None
    """Loads an N-Triples file into a new named graph (its IRI) while the server runs."""


def lubm_file() -> Path:
    """The LUBM Turtle file, or skip/fail when the konclude package is missing."""
    if not LUBM_TTL.is_file():
        unavailable("LUBM data", f"{LUBM_TTL} is missing; run plugins/bfsql-sparql/services.sh (apt konclude)")
    return LUBM_TTL


def sparql_json(endpoint: str, query: str, graphs: list[str] | None = None) -> dict:
    """Run a query directly over HTTP (no bfsql code involved), for checking answers independently."""
    params = [("query", query)] + [("default-graph-uri", g) for g in graphs or []]
    request = urllib.request.Request(
        endpoint,
        data=urllib.parse.urlencode(params).encode(),
        headers={"Accept": "application/sparql-results+json", "Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_http(process: subprocess.Popen[bytes], port: int, log: Path, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            unavailable(what, f"exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            wait_for_port(port, timeout=1)
            return
        except TimeoutError:
            continue
    _stop(process)
    unavailable(what, f"did not listen on port {port} within {timeout:g}s: {log.read_text(errors='replace')[-2000:]}")


def _oxigraph_binary() -> str | None:
    beside = Path(sys.executable).with_name("oxigraph")
    return str(beside) if beside.is_file() else shutil.which("oxigraph")


class OxigraphInstance:
    """An Oxigraph server on its own port over a store directory loaded once, restartable with the same data.

    Oxigraph keeps its store in ``--location``, so stopping it (even with SIGKILL) and starting
    it again on the same port serves the same dataset.
    """

    def __init__(self, workdir: Path, datasets: Mapping[str, tuple[str, Path]]) -> None:
        binary = _oxigraph_binary()
        if binary is None:
            unavailable("Oxigraph", "the 'oxigraph' command is missing; pip install 'bfsql-sparql[test]'")
        self.workdir = workdir
        self.store = workdir / "oxigraph"
        for graph, path in datasets.values():
            loaded = subprocess.run(
                [binary, "load", "--location", str(self.store), "--file", str(path), "--graph", graph],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if loaded.returncode != 0:
                unavailable("Oxigraph", f"loading {path} failed: {loaded.stderr[-2000:]}")
        self.port = free_port()
        self.command = [binary, "serve", "--location", str(self.store), "--bind", f"127.0.0.1:{self.port}"]
        self.server = SparqlServer(
            "oxigraph", f"http://127.0.0.1:{self.port}/query", {n: g for n, (g, _) in datasets.items()},
            self.add_graph,
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> float:
        """Start (or restart) the server on the same port; seconds until it accepts connections."""
        began = time.perf_counter()
        self.starts += 1
        log = self.workdir / f"oxigraph-{self.starts}.log"
        with open(log, "wb") as out:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=out)
        if self.starts == 1:
            _wait_http(self.process, self.port, log, "Oxigraph")
        else:  # it served before: not coming back is a failure, not a missing service
            try:
                wait_for_port(self.port, 60)
            except TimeoutError as exc:
                raise AssertionError(
                    f"Oxigraph did not restart: {exc}; {log.read_text(errors='replace')[-2000:]}"
                ) from None
        return time.perf_counter() - began

    def add_graph(self, graph: str, path: Path) -> None:
        """Load the N-Triples file ``path`` into the named graph ``graph`` (the Graph Store Protocol's POST)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/store?graph={urllib.parse.quote(graph, safe='')}",
            data=path.read_bytes(), headers={"Content-Type": "application/n-triples"}, method="POST",
        )
        with urllib.request.urlopen(request, timeout=60):
            pass

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean stop) or SIGKILL (a crash); either way the process is reaped."""
        assert self.process is not None
        if kill:
            self.process.kill()
        _stop(self.process)


@contextmanager
def oxigraph(workdir: Path, datasets: Mapping[str, tuple[str, Path]]) -> Iterator[SparqlServer]:
    """An Oxigraph server over ``datasets`` (name -> (graph IRI, RDF file)), read-write like a real store."""
    instance = OxigraphInstance(workdir, datasets)
    try:
        instance.start()
        yield instance.server
    finally:
        if instance.process is not None:
            _stop(instance.process)


VIRTUOSO_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
MaxClientConnections = 8
CheckpointInterval = 0
O_DIRECT = 0
CaseMode = 2
DirsAllowed = ., {dir}
ThreadsPerQuery = 2
AsyncQueueMaxThreads = 4
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
MaxQueryMem = 200M
RdfFreeTextRulesSize = 100
FreeTextBatchSize = 100000

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {dir}
MaxClientConnections = 8
ServerThreads = 8
MaxKeepAlives = 8
KeepAliveTimeout = 10
Charset = UTF-8
EnabledGzipContent = 0

[SPARQL]
ResultSetMaxRows = 10000
MaxQueryCostEstimationTime = 400
MaxQueryExecutionTime = 60
"""


def _isql(binary: str, sql_port: int, statements: str, what: str) -> None:
    done = subprocess.run(
        [binary, f"127.0.0.1:{sql_port}", "dba", "dba", f"exec={statements}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or "*** Error" in done.stdout + done.stderr:
        unavailable("Virtuoso", f"{what} failed: {(done.stdout + done.stderr)[-2000:]}")


@contextmanager
def virtuoso(workdir: Path, datasets: Mapping[str, tuple[str, Path]]) -> Iterator[SparqlServer]:
    """A Virtuoso server with ``datasets`` loaded into named graphs and its RDF full-text index built."""
    server, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt") or shutil.which("isql")
    if server is None or isql is None:
        unavailable("Virtuoso", "virtuoso-t/isql-vt are missing; run plugins/bfsql-sparql/services.sh")
    home = workdir / "virtuoso"
    home.mkdir()
    http_port, sql_port = free_port(), free_port()
    (home / "virtuoso.ini").write_text(VIRTUOSO_INI.format(dir=home, http_port=http_port, sql_port=sql_port))
    log = home / "stdout.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([server, "-f", "-c", str(home / "virtuoso.ini")], cwd=home, stdout=out, stderr=out)
    try:
        _wait_http(process, http_port, log, "Virtuoso")
        wait_for_port(sql_port, timeout=60)
        loads = []
        for graph, path in datasets.values():
            local = home / path.name
            shutil.copyfile(path, local)  # Virtuoso reads only files under DirsAllowed
            loads.append(f"DB.DBA.TTLP_MT(file_to_string_output('{local}'), '', '{graph}', 0);")
        _isql(
            isql,
            sql_port,
            "DB.DBA.RDF_OBJ_FT_RULE_ADD(null, null, 'all'); "
            + " ".join(loads)
            + " DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ(); checkpoint;",
            "loading the test graphs",
        )

        def add_graph(graph: str, path: Path) -> None:
            local = home / path.name
            shutil.copyfile(path, local)
            _isql(isql, sql_port, f"DB.DBA.TTLP_MT(file_to_string_output('{local}'), '', '{graph}', 0); checkpoint;",
                  f"loading {path.name}")

        yield SparqlServer("virtuoso", f"http://127.0.0.1:{http_port}/sparql", {n: g for n, (g, _) in datasets.items()},
                           add_graph)
    finally:
        _stop(process)


def lubm_config(server: SparqlServer, **options: object) -> SparqlConfig:
    """The backend configuration for LUBM: ub: types and predicates, ub:name as the label."""
    return SparqlConfig(
        endpoint=server.endpoint,
        default_graph=[LUBM_GRAPH],
        prefix=[f"ub={UB}"],
        label_predicate=["ub:name"],
        **options,
    )
