"""The Neo4j backend: bfsql's batch primitives over Bolt, read-only.

Read-only by construction: statements run through :class:`~bfsql_neo4j.reads.BoltReads`
(read sessions, ``execute_read``, a timeout each) and are the fixed read queries of
:mod:`bfsql_neo4j.cypher`, whose values are parameters. Every primitive is one
``UNWIND`` statement for all its ids (one per chunk when they do not fit one, e.g. in
FalkorDB's 4 kB Bolt buffer): a BFS hop is one statement returning every relationship
of the frontier in both directions with the other end's id, type and name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any
from urllib.parse import urlsplit

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, DriverError, ServiceUnavailable

from bfsql import (
    PROVENANCE_KEYS,
    SEARCH_LIMIT,
    Capabilities,
    Edge,
    EntityStub,
    GraphBackend,
    InvalidArgument,
    Neighbourhood,
    NodeInfo,
    hop_memo,
    lexical_rank,
)
from bfsql_neo4j.config import Neo4jConfig
from bfsql_neo4j.cypher import Statements, quote_identifier
from bfsql_neo4j.dialect import DIALECTS, Dialect, DialectName
from bfsql_neo4j.fulltext import fulltext_query
from bfsql_neo4j.indexes import Neo4jSetupError, check_fulltext, check_label, choose_id_property, read_indexes
from bfsql_neo4j.mapping import EntityTypes, PropertyFilter, normalize_predicate
from bfsql_neo4j.quickack import quick_acks
from bfsql_neo4j.reads import BoltReads

__all__ = ["Neo4jBackend"]

logger = logging.getLogger(__name__)

SEARCH_CANDIDATES = 1000
"""Full-text hits fetched and re-ranked (exact and prefix name matches first) per search."""
CLOSE_TIMEOUT = 5.0
"""Seconds aclose() waits for the driver to close its connections before abandoning them."""
DEFAULT_BOLT_PORT = 7687
"""The port of a Bolt URI that names none."""
_NO_RANK = (99, 0)


class Neo4jBackend(GraphBackend):
    """A read-only view of a property graph served over Bolt. Build it with :meth:`open`."""

    def __init__(self, driver: neo4j.AsyncDriver, config: Neo4jConfig) -> None:
        """Wrap an open driver; :meth:`open` also checks the graph and picks the id property."""
        self._driver = driver
        self.config = config
        self.dialect: Dialect = DIALECTS[config.dialect]
        self.capabilities = Capabilities(batch_primitives=True, provenance=config.provenance)
        self._reads = BoltReads(driver, self.dialect, config.uri, config.database, config.query_timeout)
        self._statements = self._layout(config.id_property or config.id_candidates[0])
        self._index = config.fulltext_index
        self._types = EntityTypes(config.node_label)
        self._predicates: dict[str, str] = {}
        """Relationship type -> predicate, as met."""
        self._types_by_predicate: dict[str, list[str]] = {}
        self._edge_filter = self._filter(set(PROVENANCE_KEYS))
        """Edge metadata: the configured drops and the provenance keys (read by provenance_for_edges only)."""

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
        if config.dialect is DialectName.FALKORDB:
            with contextlib.suppress(ValueError):  # an invalid URI is reported below
                quick_acks(urlsplit(config.uri).port or DEFAULT_BOLT_PORT)
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
        timeout = self.config.query_timeout
        try:
            await asyncio.wait_for(self._driver.verify_connectivity(), timeout)
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
        check_label(await self._labels(), self._statements)
        report = read_indexes(await self._reads.read_maps(self._statements.indexes(), {}), self._statements)
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

    async def _labels(self) -> list[str]:
        return [label for (label,) in await self._reads.read(Statements.labels(), {})]

    # -- mapping -------------------------------------------------------------

    def _predicate(self, relationship_type: str) -> str:
        predicate = self._predicates.get(relationship_type)
        if predicate is None:
            predicate = self._predicates[relationship_type] = normalize_predicate(
                relationship_type, self.config.predicate_case
            )
        return predicate

    async def _load_types(self) -> list[str]:
        by_predicate: dict[str, list[str]] = {}
        for (relationship_type,) in await self._reads.read(Statements.relationship_types(), {}):
            by_predicate.setdefault(self._predicate(relationship_type), []).append(relationship_type)
        self._types_by_predicate = by_predicate
        return sorted(by_predicate)

    def _filter(self, drop: set[str]) -> PropertyFilter:
        return PropertyFilter(
            frozenset({*self.config.drop_properties, *drop}),
            frozenset(self.config.json_properties),
            self.config.keep_vectors,
        )

    async def _edge_rows(self, query: str, edges: list[Edge], params: dict[str, Any]) -> dict[Edge, tuple[str, Any]]:
        """The relationship type and value of the first row of ``query`` (rows ``([s, o, type], value)``) per edge.

        An edge is asked once per relationship type its predicate stands for (one, unless
        ``--predicate-case`` folds several types into one predicate).
        """
        unique = list(dict.fromkeys(edges))
        if any(e.predicate not in self._types_by_predicate for e in unique):
            await self._load_types()  # a relationship type created since start-up
        types = self._types_by_predicate
        wanted = [[e.subject, e.object, t] for e in unique for t in types.get(e.predicate, ())]
        if not wanted:
            return {}
        found: dict[Edge, tuple[str, Any]] = {}
        rows = await self._reads.read_chunked(query, "edges", wanted, self.config.batch_size, params)
        for (subject, obj, relationship_type), value in rows:
            # Rows come by internal id: of parallel relationships, the first one answers.
            found.setdefault(Edge(subject, self._predicate(relationship_type), obj), (relationship_type, value))
        return found

    # -- schema and search ---------------------------------------------------------

    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Full-text hits re-ranked like the memory backend (exact name, synonym, prefix, substring), at most ``limit``.

        A statement too big for the server's message budget (FalkorDB) is cut down: types
        that are no label of the graph are dropped, then the search text is shortened; if
        it still does not fit, InvalidArgument asks for fewer or shorter ``node_types``.
        """
        text = fulltext_query(query, self.dialect)
        if not text or node_types == [] or limit <= 0:
            return []
        params: dict[str, Any] = {"index": self._index, "query": text, "limit": max(SEARCH_CANDIDATES, limit)}
        if node_types:
            params["types"] = list(node_types)
        statement = self._statements.search(filter_types=bool(node_types))
        if not await self._fit_search(statement, params, query, node_types):
            return []
        return self._ranked_hits(query, await self._reads.read(statement, params), limit)

    async def _fit_search(
        self, statement: str, params: dict[str, Any], query: str, node_types: list[str] | None
    ) -> bool:
        """Cut ``params`` down until the search fits one message; False when no asked type is a label of the graph."""
        if node_types and not self.dialect.fits(statement, params):
            # A label the graph lacks matches no node, so dropping it keeps the answer the same.
            labels = set(await self._labels())
            params["types"] = [t for t in dict.fromkeys(node_types) if t in labels]
            if not params["types"]:
                return False
        if not self.dialect.fits(statement, params):
            params["query"] = fulltext_query(query[:40], self.dialect)
        if not self.dialect.fits(statement, params):
            raise InvalidArgument(
                f"The node_types filter ({len(params.get('types', []))} type(s)) is too large for one statement "
                f"to {self.dialect.name.value}: it accepts at most {self.dialect.message_budget} bytes.",
                "Pass fewer or shorter node_types, e.g. search once per type.",
            )
        return True

    def _ranked_hits(self, query: str, rows: list[list[Any]], limit: int) -> list[EntityStub]:
        """The full-text rows as stubs, re-ranked by :func:`lexical_rank` then the index's order, at most ``limit``."""
        ranked: dict[str, tuple[tuple[int, int], float, EntityStub]] = {}
        for position, (entity_id, labels, name, synonyms, _) in enumerate(rows):
            if not isinstance(entity_id, str) or entity_id in ranked:
                continue
            name = name if isinstance(name, str) else None
            synonyms = [synonyms] if isinstance(synonyms, str) else [s for s in synonyms or [] if isinstance(s, str)]
            rank = lexical_rank(query, name, synonyms) or _NO_RANK
            stub = EntityStub(id=entity_id, entity_type=self._types.of(labels) or self.config.node_label, name=name)
            ranked[entity_id] = (rank, float(position), stub)
        ordered = sorted(ranked.values(), key=lambda item: (item[0], item[1], item[2].id))
        return [stub for _, _, stub in ordered[:limit]]

    async def entity_types(self) -> list[str]:
        """Node labels other than the served label, sorted (db.labels())."""
        return sorted(set(await self._labels()) - {self.config.node_label})

    async def predicates(self) -> list[str]:
        """Normalised relationship types, sorted (db.relationshipTypes())."""
        return await self._load_types()

    # -- batch primitives ----------------------------------------------------------

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """Type (from the labels) and name of each entity: one UNWIND statement."""
        found: dict[str, NodeInfo] = {}
        rows = await self._reads.read_chunked(
            self._statements.nodes(), "ids", list(dict.fromkeys(entity_ids)), self.config.batch_size
        )
        for entity_id, labels, name in rows:
            if entity_id not in found:
                found[entity_id] = self._node(labels, name)
        return found

    def _node(self, labels: list[str], name: Any) -> NodeInfo:
        """An entity's type (from its labels) and name (None unless a string)."""
        return NodeInfo(self._types.of(labels) or self.config.node_label, name if isinstance(name, str) else None)

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """Each entity asked, its type and name, and every relationship of it, both directions, with the other end's
        type and name: one UNWIND statement.

        Edge rows are plain tuples ``(subject, predicate, object, other_type, other_name)``.
        An other end without the served label is no entity (``other_type`` None); one
        without an id property cannot be named and is left out. Parallel relationships
        of one type are one edge; a self-loop appears once. Ids that are no entity give
        no row and are left out. In a traversal that will show edge metadata
        (:func:`bfsql.hop_memo`), the relationships' properties come with the same statement
        and are kept there for :meth:`metadata_for_edges`.
        """
        memo = hop_memo()
        rows = await self._reads.read_chunked(
            self._statements.hop(with_properties=memo is not None),
            "ids",
            list(dict.fromkeys(entity_ids)),
            self.config.batch_size,
            {"drop": self._edge_filter.drop_list} if memo is not None else {},
        )
        found: dict[str, tuple[NodeInfo, list[Any]]] = {}
        type_of, predicate_of = self._types.of, self._predicate
        kept = memo.edges if memo is not None else None
        for entity_id, relationship_type, outgoing, other, labels, name, own_labels, own_name, *relationship in rows:
            there = found.get(entity_id)
            if there is None:
                there = found[entity_id] = (self._node(own_labels, own_name), [])
            if other is None:
                continue
            if not isinstance(other, str):
                other = str(other)
            predicate = predicate_of(relationship_type)
            other_type = type_of(labels)
            if other_type is None or not isinstance(name, str):
                name = None
            if outgoing:
                row = (entity_id, predicate, other, other_type, name)
            else:
                row = (other, predicate, entity_id, other_type, name)
            there[1].append(row)
            if kept is not None:
                # Of parallel relationships the one with the lowest internal id answers, as in metadata_for_edges.
                known = kept.get(row[:3])
                if known is None or relationship[0] < known[0]:
                    kept[row[:3]] = (relationship[0], relationship_type, relationship[1])
        # dict.fromkeys drops the repeats: parallel relationships, and a self-loop met from both of its ends.
        return {entity_id: Neighbourhood(node, list(dict.fromkeys(rows))) for entity_id, (node, rows) in found.items()}

    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Properties of each entity, minus the id and the dropped keys: one UNWIND statement."""
        keep = self._filter({self.id_property})
        found: dict[str, dict[str, Any]] = {}
        rows = await self._reads.read_chunked(
            self._statements.node_properties(),
            "ids",
            list(dict.fromkeys(entity_ids)),
            self.config.batch_size,
            {"drop": sorted(keep.drop)},
        )
        for entity_id, props in rows:
            if entity_id not in found:
                found[entity_id] = keep.metadata(props)
        return found

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Properties of each edge's relationship without provenance, plus its type: one UNWIND statement.

        Provenance keys (``provenance`` …) are dropped on the server with the other
        dropped keys, so evidence text never crosses the wire during a traversal.
        Unknown edges are left out. In a traversal whose hops brought the properties
        (:meth:`hop`), only the edges they did not bring are read.
        """
        memo = hop_memo()
        kept = memo.edges if memo is not None else {}
        metadata_of, type_key = self._edge_filter.metadata, self.config.type_metadata_key
        found: dict[Edge, dict[str, Any]] = {}

        def add(edge: Edge, relationship_type: str, props: Any) -> None:
            metadata = metadata_of(props)
            if type_key:
                metadata[type_key] = relationship_type
            found[edge] = metadata

        missing: list[Edge] = []
        for edge in edges:
            row = kept.get(edge)  # (internal id, relationship type, properties)
            if row is None:
                missing.append(edge)
            else:
                add(edge, row[1], row[2])
        if missing:
            drop = self._edge_filter.drop_list
            for edge, (relationship_type, props) in (
                await self._edge_rows(self._statements.edge_properties(), missing, {"drop": drop})
            ).items():
                add(edge, relationship_type, props)
        return found

    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The evidence records in each edge's ``provenance`` property (a list, or JSON text of one): one statement.

        Edges without the property are left out, as is a value that is no list of records.
        """
        found: dict[Edge, list[dict[str, Any]]] = {}
        for edge, (_, value) in (await self._edge_rows(self._statements.edge_provenance(), edges, {})).items():
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    logger.warning("neo4j backend: the provenance of %s is no JSON; left out", edge)
                    continue
            if isinstance(value, list) and all(isinstance(record, dict) for record in value):
                found[edge] = value
        return found

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
