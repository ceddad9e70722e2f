"""The Neo4j backend: the eight primitives and their batch forms over Bolt, read-only.

Read-only by construction: every session is opened with
``default_access_mode=READ_ACCESS`` and every statement runs through
``execute_read``; the statements themselves (:mod:`bfsql_neo4j.cypher`) are fixed
read queries whose values are parameters. Each statement has a server-side
transaction timeout and a client-side deadline. A BFS frontier costs one UNWIND
statement per batch call and chunk of ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, DriverError, Neo4jError, ServiceUnavailable

from bfsql import BackendFailure, Edge, EntityStub, InvalidArgument, Node, lexical_rank
from bfsql.backend import BatchFirstBackend, Capabilities, gather_or_cancel
from bfsql_neo4j.config import Neo4jConfig
from bfsql_neo4j.cypher import Statements, quote_identifier
from bfsql_neo4j.dialect import DIALECTS, Dialect, DialectName
from bfsql_neo4j.fulltext import fulltext_query
from bfsql_neo4j.indexes import Neo4jSetupError, check_fulltext, check_label, choose_id_property, read_indexes
from bfsql_neo4j.mapping import PropertyFilter, entity_type, normalize_predicate

__all__ = ["Neo4jBackend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

SEARCH_LIMIT = 20
SEARCH_CANDIDATES = 1000
"""Full-text hits fetched and re-ranked (exact and prefix name matches first) per search."""
CLOSE_TIMEOUT = 5.0
"""Seconds aclose() waits for the driver to close its connections before abandoning them."""
_NO_RANK = (99, 0)


class Neo4jBackend(BatchFirstBackend):
    """A read-only view of a property graph served over Bolt. Build it with :meth:`open`."""

    def __init__(self, driver: neo4j.AsyncDriver, config: Neo4jConfig) -> None:
        """Wrap an open driver; :meth:`open` also checks the graph and picks the id property."""
        self._driver = driver
        self.config = config
        self.dialect: Dialect = DIALECTS[config.dialect]
        self.capabilities = Capabilities(batch_primitives=True, provenance=config.provenance)
        self._timeout = config.query_timeout
        self._statements = self._layout(config.id_property or config.id_candidates[0])
        self._index = config.fulltext_index
        self._types_by_predicate: dict[str, list[str]] = {}

    def _layout(self, id_property: str) -> Statements:
        statements = Statements(
            self.dialect, self.config.node_label, id_property, self.config.name_property, self.config.synonyms_property
        )
        for name in (statements.node_label, id_property, statements.name_property, statements.synonyms_property):
            try:
                quote_identifier(name, self.dialect)
            except ValueError as exc:
                raise Neo4jSetupError(f"Invalid label or property name: {exc}.", "Fix the configuration.") from None
        return statements

    @property
    def id_property(self) -> str:
        """The node property used as canonical id."""
        return self._statements.id_property

    @property
    def statements(self) -> Statements:
        """The Cypher statements this backend sends."""
        return self._statements

    @classmethod
    async def open(cls, config: Neo4jConfig) -> Neo4jBackend:
        """Connect, check the label and indexes, pick the id property; Neo4jSetupError says what is missing."""
        if config.dialect is DialectName.FALKORDB and config.database not in (None, "falkordb"):
            raise Neo4jSetupError(
                f"FalkorDB's Bolt endpoint serves only the graph named 'falkordb', not {config.database!r}.",
                f"Copy the graph there (redis-cli GRAPH.COPY {config.database} falkordb) and unset --database.",
            )
        auth = (config.username, config.password.get_secret_value()) if config.password is not None else None
        try:
            driver = neo4j.AsyncGraphDatabase.driver(
                config.uri,
                auth=auth,
                max_connection_pool_size=config.max_connections,
                connection_timeout=min(config.query_timeout, 15.0),
                connection_acquisition_timeout=config.query_timeout,
                max_transaction_retry_time=min(config.query_timeout, 5.0),
                user_agent="bfsql-neo4j",
            )
        except (ConfigurationError, ValueError) as exc:
            raise Neo4jSetupError(
                f"Invalid Bolt URI {config.uri!r}: {exc}.", "Use e.g. bolt://localhost:7687."
            ) from None
        backend = cls(driver, config)
        try:
            await backend._start()
        except BaseException:
            await backend.aclose()
            raise
        return backend

    async def _start(self) -> None:
        try:
            await asyncio.wait_for(self._driver.verify_connectivity(), self._timeout)
        except (ServiceUnavailable, OSError, TimeoutError) as exc:
            raise Neo4jSetupError(
                f"Cannot reach the Bolt server at {self.config.uri}: {exc or 'no answer'}.",
                "Check that the server is running and that NEO4J_URI (--uri) points at its Bolt port.",
            ) from None
        except AuthError as exc:
            raise Neo4jSetupError(
                f"The Bolt server at {self.config.uri} refused the credentials: {exc.message}.",
                "Check NEO4J_USERNAME / NEO4J_PASSWORD (--username / --password).",
            ) from None
        labels = [row["label"] for row in await self._read(Statements.labels(), {})]
        check_label(labels, self._statements)
        report = read_indexes(await self._read(self._statements.indexes(), {}), self._statements)
        id_property = choose_id_property(report, self.config.id_property, self.config.id_candidates, self._statements)
        self._statements = self._layout(id_property)
        self._index = check_fulltext(report, self.config.fulltext_index, self._statements)
        await self._load_types()
        logger.info(
            "neo4j backend: %s (%s), label :%s, id property %r, full-text index %r",
            self.config.uri,
            self.dialect.name.value,
            self.config.node_label,
            id_property,
            self._index,
        )

    # -- running statements ------------------------------------------------------

    async def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one read statement in a read transaction, with a timeout; rows as dicts."""
        encoded = self.dialect.encode(params)

        @neo4j.unit_of_work(timeout=self._timeout)
        async def work(tx: neo4j.AsyncManagedTransaction) -> list[dict[str, Any]]:
            result = await tx.run(query, encoded)
            return await result.data()

        async def session_work() -> list[dict[str, Any]]:
            async with self._driver.session(
                database=self.config.database, default_access_mode=neo4j.READ_ACCESS
            ) as session:
                return await session.execute_read(work)

        try:
            return await asyncio.wait_for(session_work(), self._timeout + 1.0)
        except TimeoutError:
            raise BackendFailure(
                f"The Bolt server at {self.config.uri} did not answer within {self._timeout:g}s.",
                "Try a smaller query, or raise --query-timeout.",
            ) from None
        except AuthError as exc:
            raise BackendFailure(
                f"The Bolt server at {self.config.uri} refused the credentials: {exc.message}.",
                "Check NEO4J_USERNAME / NEO4J_PASSWORD.",
            ) from None
        except ServiceUnavailable as exc:
            raise BackendFailure(
                f"Cannot reach the Bolt server at {self.config.uri}: {exc}.",
                "Check that the server is running and NEO4J_URI is right.",
            ) from None
        except Neo4jError as exc:
            raise BackendFailure(
                f"The Bolt server failed a read ({exc.code}: {exc.message}).", "Try again; see the server's log."
            ) from None
        except DriverError as exc:
            raise BackendFailure(f"The Bolt driver failed: {type(exc).__name__}: {exc}.", "Try again.") from None

    async def _read_batched(
        self, query: str, key: str, items: Sequence[Any], params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run ``query`` once per chunk of ``items`` (parameter ``key``); all rows, in chunk order."""
        params = params or {}
        chunks, too_big = self.dialect.chunks(query, key, items, params, self.config.batch_size)
        if too_big:
            logger.warning(
                "neo4j backend: %d value(s) too large for %s, treated as unknown", len(too_big), self.dialect.name.value
            )
        answers = await gather_or_cancel(*(self._read(query, {**params, key: chunk}) for chunk in chunks))
        return [row for rows in answers for row in rows]

    # -- mapping -------------------------------------------------------------

    def _predicate(self, relationship_type: str) -> str:
        return normalize_predicate(relationship_type, self.config.predicate_case)

    async def _load_types(self) -> list[str]:
        rows = await self._read(Statements.relationship_types(), {})
        by_predicate: dict[str, list[str]] = {}
        for row in rows:
            by_predicate.setdefault(self._predicate(row["relationshipType"]), []).append(row["relationshipType"])
        self._types_by_predicate = by_predicate
        return sorted(by_predicate)

    def _filter(self, drop_id: bool) -> PropertyFilter:
        drop = set(self.config.drop_properties)
        if drop_id:
            drop.add(self.id_property)
        return PropertyFilter(frozenset(drop), frozenset(self.config.json_properties), self.config.keep_vectors)

    # -- primitives ------------------------------------------------------------

    async def search_entities(self, query: str, node_types: list[str] | None = None) -> list[EntityStub]:
        """Full-text hits re-ranked like the memory backend (exact name, synonym, prefix, substring), at most 20.

        A statement too big for the server's message budget (FalkorDB) is cut down: types
        that are no label of the graph are dropped, then the search text is shortened; if
        it still does not fit, InvalidArgument asks for fewer or shorter ``node_types``.
        """
        text = fulltext_query(query, self.dialect)
        if not text or node_types == []:
            return []
        params: dict[str, Any] = {"index": self._index, "query": text, "limit": SEARCH_CANDIDATES}
        if node_types:
            params["types"] = list(node_types)
        statement = self._statements.search(filter_types=bool(node_types))
        if node_types and not self.dialect.fits(statement, params):
            # A label the graph lacks matches no node, so dropping it keeps the answer the same.
            labels = {row["label"] for row in await self._read(Statements.labels(), {})}
            params["types"] = [t for t in dict.fromkeys(node_types) if t in labels]
            if not params["types"]:
                return []
        if not self.dialect.fits(statement, params):
            params["query"] = fulltext_query(query[:40], self.dialect)
        if not self.dialect.fits(statement, params):
            raise InvalidArgument(
                f"The node_types filter ({len(params.get('types', []))} type(s)) is too large for one statement "
                f"to {self.dialect.name.value}: it accepts at most {self.dialect.message_budget} bytes.",
                "Pass fewer or shorter node_types, e.g. search once per type.",
            )
        rows = await self._read(statement, params)
        ranked: dict[str, tuple[tuple[int, int], float, EntityStub]] = {}
        for position, row in enumerate(rows):
            entity_id = row["id"]
            if not isinstance(entity_id, str) or entity_id in ranked:
                continue
            name = row["name"] if isinstance(row["name"], str) else None
            synonyms = row["synonyms"]
            synonyms = [synonyms] if isinstance(synonyms, str) else [s for s in synonyms or [] if isinstance(s, str)]
            rank = lexical_rank(query, name, synonyms) or _NO_RANK
            stub = EntityStub(id=entity_id, entity_type=entity_type(row["labels"], self.config.node_label), name=name)
            ranked[entity_id] = (rank, float(position), stub)
        ordered = sorted(ranked.values(), key=lambda item: (item[0], item[1], item[2].id))
        return [stub for _, _, stub in ordered[:SEARCH_LIMIT]]

    async def entity_types(self) -> list[str]:
        """Node labels other than the served label, sorted (db.labels())."""
        rows = await self._read(Statements.labels(), {})
        return sorted({row["label"] for row in rows} - {self.config.node_label})

    async def predicates(self) -> list[str]:
        """Normalised relationship types, sorted (db.relationshipTypes())."""
        return await self._load_types()

    # -- batch primitives ----------------------------------------------------------

    async def _edges_many(self, entity_ids: list[str], outgoing: bool) -> dict[str, list[Edge]]:
        unique = list(dict.fromkeys(entity_ids))
        rows = await self._read_batched(self._statements.edges(outgoing), "ids", unique)
        found: dict[str, set[Edge]] = {}
        for row in rows:
            edges = found.setdefault(row["id"], set())
            if row["type"] is None or row["other"] is None:
                continue
            other, predicate = str(row["other"]), self._predicate(row["type"])
            if outgoing:
                edges.add(Edge(subject=row["id"], predicate=predicate, object=other))
            else:
                edges.add(Edge(subject=other, predicate=predicate, object=row["id"]))
        return {i: sorted(found[i], key=lambda e: (e.subject, e.predicate, e.object)) for i in unique if i in found}

    async def edges_from_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Outgoing edges of each existing entity: one UNWIND statement per chunk of ids."""
        return await self._edges_many(entity_ids, outgoing=True)

    async def edges_to_many(self, entity_ids: list[str]) -> dict[str, list[Edge]]:
        """Incoming edges of each existing entity: one UNWIND statement per chunk of ids."""
        return await self._edges_many(entity_ids, outgoing=False)

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, Node]:
        """Identity of each existing entity: one UNWIND statement per chunk of ids."""
        unique = list(dict.fromkeys(entity_ids))
        found: dict[str, Node] = {}
        for row in await self._read_batched(self._statements.nodes(), "ids", unique):
            found.setdefault(
                row["id"], Node(id=row["id"], entity_type=entity_type(row["labels"], self.config.node_label))
            )
        return {i: found[i] for i in unique if i in found}

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of each existing entity: one UNWIND statement per chunk of ids."""
        unique = list(dict.fromkeys(entity_ids))
        keep = self._filter(drop_id=True)
        drop = sorted(keep.drop)
        found: dict[str, dict[str, Any]] = {}
        for row in await self._read_batched(self._statements.node_properties(), "ids", unique, {"drop": drop}):
            found.setdefault(row["id"], keep.metadata(row["props"]))
        return {i: found[i] for i in unique if i in found}

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Metadata of each edge (``{}`` when unknown): one UNWIND statement per chunk of edges."""
        unique = list(dict.fromkeys(edges))
        if any(e.predicate not in self._types_by_predicate for e in unique):
            await self._load_types()  # a relationship type created since start-up
        wanted = [
            {"i": i, "s": e.subject, "o": e.object, "types": self._types_by_predicate[e.predicate]}
            for i, e in enumerate(unique)
            if e.predicate in self._types_by_predicate
        ]
        keep = self._filter(drop_id=False)
        found: dict[int, dict[str, Any]] = {}
        rows = await self._read_batched(
            self._statements.edge_properties(), "edges", wanted, {"drop": sorted(keep.drop)}
        )
        for row in rows:
            if row["i"] in found:
                continue  # a parallel relationship: the first one (lowest internal id) answers
            metadata = keep.metadata(row["props"])
            if self.config.type_metadata_key:
                metadata[self.config.type_metadata_key] = row["type"]
            found[row["i"]] = metadata
        return {e: found.get(i, {}) for i, e in enumerate(unique)}

    # -- descriptive hooks -------------------------------------------------------------

    async def graph_description(self) -> str:
        """The configured description, else one naming the server and label."""
        if self.config.description:
            return self.config.description
        server = "FalkorDB" if self.dialect.name is DialectName.FALKORDB else "Neo4j"
        database = f", database {self.config.database!r}" if self.config.database else ""
        return f"A property graph in {server}{database}: nodes labelled :{self.config.node_label}."

    async def aclose(self) -> None:
        """Close the driver; gives up after a few seconds so a stuck server cannot hang shutdown."""
        try:
            await asyncio.wait_for(self._driver.close(), CLOSE_TIMEOUT)
        except (TimeoutError, OSError, DriverError) as exc:
            logger.warning("neo4j backend: closing the driver failed (%s); connections abandoned", exc)
