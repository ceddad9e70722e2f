"""PostgresBackend: the kgraph schema served read-only through an asyncpg pool.

Every primitive is one SQL statement over the whole batch (``= ANY($1::text[])``): a BFS
hop is one ``hop`` statement whatever the frontier's size, returning the frontier's edges
in both directions with their other ends' type and name. Every pooled connection starts
with ``default_transaction_read_only = on`` and a ``statement_timeout``, so each statement
runs in a read-only transaction that PostgreSQL cancels when it runs too long; the
start-up checks run in an explicit read-only transaction. With a role per caller
(:mod:`bfsql_postgres.roles`) each statement of a caller's call runs in a read-only transaction
as that caller's role. Answers equal the memory
backend's for the same bundle: metadata is derived with :func:`bfsql.entity_metadata` and
:func:`bfsql.relationship_metadata`, merged entities and the edges touching them are invisible,
and embeddings are never returned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar, cast

import asyncpg
from typing_extensions import override

from bfsql import (
    HUBS,
    SEARCH_LIMIT,
    AccessDenied,
    BackendFailure,
    Capabilities,
    Closure,
    Edge,
    Embedder,
    EmbedderMismatch,
    EntityStub,
    EvidenceRecord,
    Expansion,
    Graph,
    GraphBackend,
    GraphStatistics,
    HopMemo,
    Hub,
    Neighbourhood,
    NodeInfo,
    Overlap,
    StoreTimeout,
    Survey,
    TraversalLimits,
    VectorIndex,
    call_identity,
    call_memo,
    clip,
    entity_metadata,
    expand,
    hop_memo,
    opened_for_one_call,
    relationship_metadata,
    statement_span,
)
from bfsql_postgres import closures, overlap, queries, rare_ends, walk
from bfsql_postgres.config import PostgresConfig
from bfsql_postgres.errors import PostgresStoreError, describe_dsn
from bfsql_postgres.layout import StoreLayout, inspect_store
from bfsql_postgres.rare_ends import RareEnds
from bfsql_postgres.replica import ReplicaWatch
from bfsql_postgres.roles import SET_ROLE_SQL, RoleMap, check_roles, parse_entries
from bfsql_postgres.vector_codes import STAMP_SQL, SavedCodes, read_codes

__all__ = ["COUNT_WALK_ROWS", "EXACT_STATISTICS_ROWS", "WALK_ROWS", "PostgresBackend", "QueryObserver"]

logger = logging.getLogger("bfsql.postgres")

QueryObserver = Callable[[Any], None]
"""Called by asyncpg with a ``LoggedQuery`` after every statement a pooled connection runs."""

SEARCH_MAX_CHARS = 200
"""Characters of a search text sent to PostgreSQL (bfsql's search sends at most this many anyway)."""
FUZZY_MAX_CHARS = 64
"""Longest search text also matched by trigram similarity (``%``); longer ones match substrings only."""
HNSW_EF_SEARCH = 100
"""Candidates an HNSW scan keeps (pgvector's hnsw.ef_search; its default 40 is tight for limit 20-100)."""
WALK_ROWS = 20_000
"""Rows a traversal may fetch hop by hop (as the engine walks) before it is walked in the database instead."""
CLOSURE_METADATA = 200
"""Most entities (seeds included) a closure walked in a path query brings the metadata of with its levels: a
path query shows at most 200 results (``MAX_RESULTS``), and a walk that reaches more leaves unshown most of
what it reached, whose metadata would be sent for nothing."""
CLOSURE_EDGES = 1_000
"""Edges of the relation a closure may hold and still be read whole by one plain recursive statement and walked
here (:func:`closures.edges_sql`): a bigger one is walked level by level in the database (:func:`closures.closure_sql`),
after at most this many rows were read in vain."""
COUNT_WALK_ROWS = 2_000
"""The same for a traversal asked for its counts alone (``count`` 0): no page is made of the rows fetched, so a
bigger walk is cheaper in the database (on the HPO, interleaved medians against the 20,000 of a listed walk: a
2-hop count over 6,360 edges 23 ms against 37, the biggest hub's over 88,704 edges 191 against 227), while a walk
of hundreds of edges stays cheaper hop by hop (567 edges: 9.5 ms, against 24.8 with a bound of 500)."""
EXACT_STATISTICS_ROWS = 1_000_000
"""Relationships up to which describe_schema's counts are counted exactly (GROUP BYs reading every relationship
three times: about a second for the HPO's 306k on a busy 2-core machine); above, the planner's estimates."""
_CLIENT_GRACE = 5.0
"""Seconds the client waits beyond the server's statement_timeout before giving up on its own."""


_CONNECTION_LOST = (
    OSError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
)
"""Errors of a server that is down, restarting or shutting down (not of the statement)."""


def _storable(values: list[str]) -> list[str]:
    """The values PostgreSQL can hold in text: one with a NUL character names nothing, so it is not sent."""
    return [v for v in values if "\x00" not in v]


_UNPARSED: Any = object()
K = TypeVar("K")


def _from_memo(asked: list[K], known: Mapping[Any, Any], fields: Callable[[K], tuple[Any, ...]]) -> tuple[
        list[Any], list[K]]:
    """Rows for the keys of ``asked`` whose columns the traversal's hops brought (the key's ``fields``, then the
    columns), and the keys left to fetch."""
    rows: list[Any] = []
    missing: list[K] = []
    for key in asked:
        columns = known.get(key)
        if columns is None:
            missing.append(key)
        else:
            rows.append((*fields(key), *columns))
    return rows, missing


def _json_texts() -> Callable[[str | None], Any]:
    """``json.loads`` for the text of JSON columns, parsing each distinct text once.

    The values returned for equal texts are the same object: callers copy what they add to.
    """
    parsed: dict[str | None, Any] = {None: None}

    def parse(text: str | None) -> Any:
        value = parsed.get(text, _UNPARSED)
        if value is _UNPARSED:
            value = parsed[text] = json.loads(cast(str, text))
        return value

    return parse


def _evidence_order(record: dict[str, Any]) -> tuple[str, str, str]:
    """Provenance order, as core's: document, section, text."""
    return record.get("document_id") or "", record.get("section") or "", record.get("text_span") or ""




def _neighbourhoods(asked: list[str], rows: list[asyncpg.Record], memo: HopMemo | None = None
                    ) -> tuple[dict[str, Neighbourhood], int]:
    """The answer of ``hop`` for the ids ``asked`` from the rows of the hop statement (see :func:`queries.hop_sql`),
    and how many of the rows were edge rows.

    With ``memo``, the rows carry metadata (``hop_sql(metadata=True)``): that of the visible entities and of the
    edges kept is left in the memo (entities as the columns of :data:`queries.ENTITY_METADATA` after the id, edges
    as ``(confidence, source_documents, properties)``).
    """
    try:
        return _joined(asked, rows, memo)
    except _EndAfterEdges:  # the statement sends its entity rows first, but SQL does not promise that order
        return _joined(asked, sorted(rows, key=lambda row: row[0] is not None), memo)


class _EndAfterEdges(Exception):
    """An entity row came after an edge row that may have needed it."""


def _joined(asked: list[str], rows: list[asyncpg.Record], memo: HopMemo | None
            ) -> tuple[dict[str, Neighbourhood], int]:
    """:func:`_neighbourhoods` in one pass over ``rows`` whose entity rows come first (else :class:`_EndAfterEdges`)."""
    ends: dict[str, tuple[str, str, str | None]] = {}  # each entity: its id (the one string of it kept), type, name
    merged: set[str] = set()
    edges_of: dict[str, tuple[str, list[Any]]] = {}  # own id: (its one string, its edges as HopEdge-shaped tuples)
    # Each row brings its own strings: the edges keep one string of each id and predicate instead (the primitive
    # cache held four strings an edge, 56 of a path query's 84 MB at R-MAT 20).
    predicates: dict[str, str] = {}
    kept_metadata = memo.edges if memo is not None else None
    last: str | None = None  # the own id of the row before, its one string and its edges
    own_id = ""
    kept: list[Any] = []
    for row in rows:
        outgoing = row[0]
        if outgoing is None:  # an entity at an end, or one asked
            if edges_of:
                raise _EndAfterEdges
            if row[4] == "merged":
                merged.add(row[1])
            else:
                ends[row[1]] = (row[1], row[2], row[3])
                if memo is not None:
                    memo.nodes[row[1]] = (row[3], row[6], row[7], row[4], row[5], row[8], row[9])
            continue
        if outgoing:
            own, other = row[1], row[3]
        else:
            own, other = row[3], row[1]
        if own != last:  # a node's rows come together: each direction is read in id order
            group = edges_of.get(own)
            if group is None:
                group = edges_of[own] = ((ends.get(own) or (own,))[0], [])
            own_id, kept, last = group[0], group[1], own
        end = ends.get(other)
        other_type: str | None
        if end is not None:
            other_id, other_type, other_name = end
        elif other in merged:
            continue
        else:  # no entity
            other_id, other_type, other_name = other, None, None
        predicate = row[2]
        predicate = predicates.setdefault(predicate, predicate)
        if outgoing:
            edge = (own_id, predicate, other_id, other_type, other_name)
        else:
            edge = (other_id, predicate, own_id, other_type, other_name)
        kept.append(edge)
        if kept_metadata is not None:
            kept_metadata[edge[:3]] = (row[5], row[6], row[7])
    found: dict[str, Neighbourhood] = {}
    for entity_id in asked:
        node = ends.get(entity_id)
        if node is not None:  # else not an entity, or a merged one
            group = edges_of.get(entity_id)
            found[entity_id] = Neighbourhood(NodeInfo(node[1], node[2]), group[1] if group is not None else [])
    return found, len(rows) - len(ends) - len(merged)


def _statistics(rows: list[asyncpg.Record], exact: bool) -> GraphStatistics | None:
    """The answer of ``statistics`` from the rows of :func:`queries.exact_statistics_sql` (or of its estimate:
    None without any row, a store never analysed)."""
    types: dict[str, int] = {}
    predicates: dict[str, int] = {}
    hubs: list[Hub] = []
    for kind, a, b, c, n in rows:
        if kind == "T":
            types[a] = n
        elif kind == "P":
            predicates[a] = n
        else:
            hubs.append(Hub(a, b, c, n))
    if not exact and not rows:
        return None
    return GraphStatistics(  # an estimate without a part cannot say it; a count of nothing is 0
        exact=exact,
        entity_type_counts=dict(sorted(types.items())) if types or exact else None,
        predicate_counts=dict(sorted(predicates.items())) if predicates or exact else None,
        hubs=hubs if hubs or exact else None,
    )


def _tables_read(layout: StoreLayout) -> list[str]:
    """The tables a call reads (what each caller's role must be allowed to SELECT)."""
    return list(dict.fromkeys(["entity", "relationship"] + (["bundle_evidence"] if layout.bundle_evidence else []) + (
        ["evidence"] if layout.evidence_table else []) + (
        ["bfsql_vector_row", "bfsql_meta"] if layout.vector_codes else []) + (
        ["bfsql_rare_end", "bfsql_meta"] if layout.rare_ends else [])))


class _TooManyRows(Exception):
    """A walk taken hop by hop fetched more rows than its budget: it is walked in the database instead."""


class _RowBudget:
    """What :func:`~bfsql.engine.traverse.expand` asks of a graph (``hop``), answered by the backend's hop
    statement within a budget of rows for the whole walk; :class:`_TooManyRows` past it."""

    def __init__(self, backend: PostgresBackend, rows: int) -> None:
        self.backend = backend
        self.left = rows

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """The neighbourhoods of ``entity_ids``, or :class:`_TooManyRows`."""
        asked = list(dict.fromkeys(entity_ids))
        memo = self.backend._memo()
        sql = self.backend._budgeted_hop_sql[memo is not None]
        rows = await self.backend._fetch(sql, _storable(asked), self.left)
        if rows and rows[0][1] is None:  # more edges than are left
            raise _TooManyRows
        found, edge_rows = _neighbourhoods(asked, rows, memo)
        self.left -= edge_rows
        return found


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset that sends nothing: the backend never changes session state (no SET, LISTEN,
    cursors or advisory locks), so asyncpg's default reset query would be a wasted round trip
    after every statement. asyncpg still rolls back any open transaction itself."""


class PostgresBackend(GraphBackend):
    """A read-only view of a kgraph-schema PostgreSQL database. Build it with :meth:`create`.

    ``capabilities.vector_search`` is set when entities have embeddings (pgvector),
    ``capabilities.provenance`` when the store has an evidence table.
    """

    capabilities = Capabilities(batch_primitives=True, provenance=True, traversal=True, statistics=True)

    exact_statistics_rows = EXACT_STATISTICS_ROWS
    """Relationships up to which :meth:`statistics` counts exactly (above: the planner's estimates)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        layout: StoreLayout,
        *,
        statement_timeout: float,
        description: str | None = None,
        where: str = "the configured database",
        walk_rows: int = WALK_ROWS,
        max_replica_lag: float | None = None,
        roles: RoleMap | None = None,
    ) -> None:
        """Wrap an open pool whose store was checked by :func:`~bfsql_postgres.layout.inspect_store`.

        ``where`` names the database in error messages (``host:port/dbname``, never a password);
        ``walk_rows`` is the budget of edges a traversal fetches hop by hop before it is walked in the
        database (see :meth:`traverse`; 0 walks every traversal in the database, even one listed whole);
        ``max_replica_lag``: the seconds a hot standby may lag before statements fail (:mod:`bfsql_postgres.replica`);
        ``roles``: the role each caller's statements run as (None: every statement runs as the login role),
        checked by :func:`~bfsql_postgres.roles.check_roles`.
        """
        self.pool = pool
        self.roles = roles
        self.where = where
        self.replica = ReplicaWatch(self._read, where, max_replica_lag)
        self.layout = layout
        if layout.vector_embedder is not None and layout.vector_dimension is not None:
            self.vector_embedder = (layout.vector_embedder, layout.vector_dimension)
        self.statement_timeout = statement_timeout
        self._description = description
        # Each indexed by whether the hop brings the metadata of what it reads (see _memo).
        self._hop_sql = (queries.hop_sql(layout), queries.hop_sql(layout, metadata=True))
        self._budgeted_hop_sql = (queries.budgeted_hop_sql(layout), queries.budgeted_hop_sql(layout, metadata=True))
        self.walk_rows = walk_rows
        self._get_nodes_sql = queries.entities_sql(layout, queries.IDENTITY_COLUMNS)
        self._get_nodes_memo_sql = queries.entities_sql(layout, f"{queries.IDENTITY_COLUMNS}, {queries.NODE_MEMO}")
        self._node_metadata_sql = queries.entities_sql(layout, queries.ENTITY_METADATA)
        self._edge_metadata_sql = queries.edge_metadata_sql(layout)
        self._provenance_sql = queries.provenance_sql(layout)
        self._entity_types_sql = queries.entity_types_sql(layout)
        self._predicates_sql = queries.predicates_sql(layout)
        self._statistics_sql = queries.exact_statistics_sql(layout)
        self._traverse_sql: dict[int, str] = {}
        self._closure_sql = {way: closures.closure_sql(layout, way) for way in (False, True)}
        self._closure_edges_sql = {way: closures.edges_sql(layout, way) for way in (False, True)}
        self._intersect_sql: dict[int, str] = {}
        self._rare_ends: dict[tuple[int, Hashable | None], RareEnds] = {}
        self.capabilities = dataclasses.replace(
            type(self).capabilities, vector_search=layout.vector_dimension is not None, provenance=layout.provenance
        )
        self._codes: asyncio.Task[SavedCodes | None] | None = None
        """The vectors' codes being read or read (:mod:`bfsql_postgres.vector_codes`); None until asked for, and
        again once found stale."""
        self._rescore_sql = queries.rescore_sql(layout)

    @classmethod
    async def create(
        cls, config: PostgresConfig, *, on_query: QueryObserver | None = None, walk_rows: int = WALK_ROWS
    ) -> PostgresBackend:
        """Open a read-only pool and check the schema; :class:`PostgresStoreError` saying what to fix.

        Call it inside the event loop that will use the backend (``bfsql serve`` does).
        ``on_query`` observes every statement (tracing, benchmarks); ``walk_rows``: see :meth:`traverse`.
        """
        if not config.dsn:
            raise PostgresStoreError(
                "No PostgreSQL database configured.",
                "Give --dsn postgresql://USER:PASSWORD@HOST:5432/DBNAME, or set BFSQL_POSTGRES_DSN or DATABASE_URL.",
            )
        where = describe_dsn(config.dsn)

        async def init(conn: asyncpg.Connection) -> None:
            if on_query is not None:
                conn.add_query_logger(on_query)

        try:
            pool = await asyncpg.create_pool(
                config.dsn,
                min_size=1,
                max_size=config.max_connections,
                timeout=config.connect_timeout,
                command_timeout=config.query_timeout + _CLIENT_GRACE,
                server_settings={
                    "default_transaction_read_only": "on",
                    "statement_timeout": str(max(1, math.ceil(config.query_timeout * 1000))),
                    "application_name": "bfsql",
                    # Every statement is prepared once and run with an id array of any size. Custom
                    # plans re-plan it per call, costing more than the run for a few ids and picking
                    # far worse plans for thousands (a 3,000-id hop: 383 ms against 48 ms).
                    "plan_cache_mode": "force_generic_plan",
                    # A generic plan cannot see how small a frontier is, and PostgreSQL would give a
                    # hop parallel workers: starting them cost 5-8 ms against a 0.13 ms one-id hop on
                    # HPO, and no statement here (a hub's whole walk included) ran faster with them.
                    "max_parallel_workers_per_gather": "0",
                    # pgvector >= 0.8: a filtered HNSW scan goes on until it has enough rows.
                    "hnsw.iterative_scan": "relaxed_order",
                    "hnsw.ef_search": str(HNSW_EF_SEARCH),
                },
                init=init,
                reset=_keep_session,
            )
        except (OSError, TimeoutError) as exc:
            raise PostgresStoreError(
                f"Cannot connect to PostgreSQL at {where}: {exc}.",
                "Check that the server runs and that host and port in the DSN are right.",
            ) from None
        except asyncpg.PostgresError as exc:
            raise PostgresStoreError(
                f"PostgreSQL at {where} refused the connection: {exc}.",
                "Check the user, password and database name in the DSN.",
            ) from None
        except ValueError as exc:
            raise PostgresStoreError(
                f"Invalid PostgreSQL DSN: {exc}.", "Use the form postgresql://USER:PASSWORD@HOST:5432/DBNAME."
            ) from None
        roles = RoleMap(parse_entries(config.roles), config.role_claim, config.default_role) if (
            config.identity_to_store) else None
        try:
            async with pool.acquire() as conn, conn.transaction(readonly=True):
                layout = await inspect_store(conn, stored_embedder=config.stored_embedder)
                if roles is not None:
                    for warning in await check_roles(conn, roles.targets, _tables_read(layout)):
                        logger.warning("postgres at %s: %s", where, warning)
        except BaseException:
            await pool.close()
            raise
        backend = cls(
            pool, layout, statement_timeout=config.query_timeout, description=config.description, where=where,
            walk_rows=walk_rows, max_replica_lag=config.max_replica_lag, roles=roles,
        )
        if layout.vector_codes and layout.vector_dimension is not None and not opened_for_one_call():
            backend._vector_codes()  # read in the background, so that the first search does not wait for them
        return backend

    async def _read(self, sql: str, *args: Any, local: str = "", role: str | None = None) -> list[asyncpg.Record]:
        """Run one statement on a pooled connection: one round trip, or, with ``local`` (``SET LOCAL`` settings) or a
        ``role`` to run as, in a read-only transaction of its own that sets them for itself alone.

        The role ends with the transaction; a connection given back inside one is rolled back by the pool (or
        dropped), so no other statement ever runs under this role. A connection that the server closed since its
        last use (a restart) is replaced and the statement, a read, is run once more on the new one.
        """
        try:
            return await self._run(sql, args, local, role)
        except _CONNECTION_LOST:
            return await self._run(sql, args, local, role)

    async def _run(self, sql: str, args: tuple[Any, ...], local: str, role: str | None) -> list[asyncpg.Record]:
        if not local and role is None:
            rows: list[asyncpg.Record] = await self.pool.fetch(sql, *args)
            return rows
        async with self.pool.acquire() as conn, conn.transaction(readonly=True):
            if role is not None:
                await conn.execute(SET_ROLE_SQL, role)
            if local:
                await conn.execute(local)
            return list(await conn.fetch(sql, *args))

    @override
    def store_identity(self) -> Hashable | None:
        """The role the running call's statements run as (None: the login role); :class:`~bfsql.AccessDenied` for
        a caller no role is mapped to."""
        return self.roles.role_for(call_identity()) if self.roles is not None else None

    async def _fetch(self, sql: str, *args: Any, local: str = "") -> list[asyncpg.Record]:
        """Run one statement (:meth:`_read`, as the caller's role when roles are mapped), after checking the standby's
        lag when ``max_replica_lag`` is set; :class:`~bfsql.BackendFailure` saying what failed."""
        role = self.roles.role_for(call_identity()) if self.roles is not None else None
        try:
            await self.replica.check()
            with statement_span("postgresql", sql):
                rows = await self._read(sql, *args, local=local, role=role)
        except _CONNECTION_LOST as exc:
            raise BackendFailure(
                self._unreachable(exc), "Check that the server runs; bfsql reconnects by itself on the next call."
            ) from None
        except asyncpg.InsufficientPrivilegeError as exc:
            if role is None:
                raise  # the login role's own grants: the store's failure, as before
            raise AccessDenied(
                f"PostgreSQL refused to answer as role {role!r}: {clip(str(exc), 200)}.",
                "Ask the operator to grant that role what bfsql reads (docs/backends/postgres.md, A role per caller).",
            ) from None
        except asyncpg.QueryCanceledError:
            raise StoreTimeout(
                f"PostgreSQL cancelled a query that ran longer than the statement timeout "
                f"({self.statement_timeout:g}s).",
                "Ask for less (fewer hops or seeds, exclude_node_types), or raise --statement-timeout.",
            ) from None
        return rows

    def _memo(self) -> HopMemo | None:
        """The memo of the running traversal that will show metadata (:func:`bfsql.hop_memo`): its hops bring the
        metadata of the entities and edges they read, so that the answer needs no statement for it. None
        elsewhere, and in a store without unique keys (a triple's rows would come more than once)."""
        return hop_memo() if self.layout.unique_keys else None

    def _reads_memo(self) -> HopMemo | None:
        """The memo of the running call (:func:`bfsql.call_memo`: a traversal's or a path query's) that a closure
        or ``get_nodes`` keeps the metadata of what it reads in; None elsewhere, and without unique keys."""
        return call_memo() if self.layout.unique_keys else None

    def _triples(self, edges: list[Edge]) -> tuple[list[str], list[str], list[str]]:
        """The distinct storable edges touching none of the layout's few merged ids, as three parallel
        arrays (subjects, predicates, objects)."""
        asked = list(dict.fromkeys(edges))
        merged = self.layout.merged_ids
        if merged:
            asked = [e for e in asked if e[0] not in merged and e[2] not in merged]
        if any("\x00" in value for e in asked for value in e):
            asked = [e for e in asked if len(_storable([e[0], e[1], e[2]])) == 3]
        return [e[0] for e in asked], [e[1] for e in asked], [e[2] for e in asked]

    # -- search ------------------------------------------------------------------

    @override
    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Exact name/synonym matches, then prefixes, substrings and pg_trgm-similar names.

        Ranked, at most ``limit``, restricted to ``node_types`` in SQL; ``[]`` when nothing matches.
        The cost is bounded whatever the query: the first :data:`SEARCH_MAX_CHARS` characters are
        searched (substrings through the trigram indexes), and similar names (``%``, whose
        index scan grows with the query's trigrams) only for queries of at most
        :data:`FUZZY_MAX_CHARS` characters.
        """
        text = query.replace("\x00", "").strip()[:SEARCH_MAX_CHARS]
        types = _storable(node_types) if node_types is not None else None
        if not text or types == [] or limit < 1:
            return []
        prefilter = self.layout.synonyms_jsonb and queries.synonym_prefilter_safe(text)
        pattern = queries.like_pattern(text)
        args: list[Any] = [text, pattern, types, limit] + ([pattern] if prefilter else [])
        sql = queries.search_sql(self.layout, synonym_prefilter=prefilter, fuzzy=len(text) <= FUZZY_MAX_CHARS)
        rows = await self._fetch(sql, *args)
        return [EntityStub(id=r["entity_id"], entity_type=r["entity_type"], name=r["name"]) for r in rows]

    @override
    async def vector_search(
        self, vector: list[float], node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        """Entities whose ``embedding`` is nearest to ``vector`` (pgvector cosine distance), best first.

        ``score`` is the cosine similarity. Offered only when entities have embeddings. The candidates
        come from the codes the server holds while they are current (:mod:`bfsql_postgres.vector_codes`),
        else every vector is scored (through an older bfsql's HNSW index where there is one).
        """
        types = _storable(node_types) if node_types is not None else None
        if types == [] or limit < 1:
            return []
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        try:
            rows = await self._nearest_by_codes(vector, literal, types, limit)
            if rows is None:
                rows = await self._fetch(queries.vector_search_sql(self.layout), literal, types, limit)
        except asyncpg.DataError as exc:
            raise BackendFailure(
                f"pgvector rejected the query vector: {exc}.",
                "Serve with the embedder that made entity.embedding (same dimension).",
            ) from None
        return [
            EntityStub(id=r["entity_id"], entity_type=r["entity_type"], name=r["name"], score=r["similarity"])
            for r in rows
        ]

    def _vector_codes(self) -> asyncio.Task[SavedCodes | None]:
        """The task reading the codes (started on the first call)."""
        if self._codes is None:
            self._codes = asyncio.get_running_loop().create_task(read_codes(self.pool))
        return self._codes

    async def _nearest_by_codes(
        self, vector: list[float], literal: str, types: list[str] | None, limit: int
    ) -> list[asyncpg.Record] | None:
        """The nearest rows by the codes, or None when the store has none current (then searched by SQL)."""
        if not self.layout.vector_codes:
            return None
        task = self._vector_codes()
        try:
            saved = await asyncio.shield(task)
        except (asyncpg.PostgresError, OSError, ValueError):
            saved = None
        if saved is None:
            self._codes = None  # read again by the next search: a load may save them meanwhile
            return None
        if len(vector) != saved.index.dimension:
            return None  # searched by SQL, which says what is wrong
        candidates = await asyncio.to_thread(VectorIndex.candidate_rows, saved.index, vector, types, limit)
        rows = (await self._fetch(self._rescore_sql, literal, candidates, types, limit, saved.stamp)
                if candidates else [])
        if not rows and [r["value"] for r in await self._fetch(STAMP_SQL)] != [saved.stamp]:
            self._codes = None  # stale: written since they were saved
            return None
        return rows

    @override
    async def bind_embedder(self, embedder: Embedder) -> None:
        """Check that the stored vectors come from ``embedder``; :class:`EmbedderMismatch` if not.

        The name is compared when the database records it (``bfsql postgres load`` does) or
        ``--stored-embedder`` gives it; the dimension always. Without vectors there is
        nothing to check.
        """
        stored, dimension = self.layout.vector_embedder, self.layout.vector_dimension
        if dimension is None:
            return
        if dimension != embedder.dimension or (stored is not None and stored != embedder.name):
            made_by = f"embedder {stored!r}" if stored else "an unrecorded embedder"
            use = f"--embedder {stored}" if stored else "the embedder that made them"
            raise EmbedderMismatch(
                f"The entity vectors in PostgreSQL were made by {made_by} ({dimension} dimensions), but the "
                f"server uses {embedder.name!r} ({embedder.dimension} dimensions); vectors of different "
                "embedders cannot be compared.",
                f"Serve with {use}, or re-embed: bfsql postgres load --embedder {embedder.name} BUNDLE.",
            )

    # -- schema lists -------------------------------------------------------------

    @override
    async def entity_types(self) -> list[str]:
        """Types of the visible entities, sorted."""
        return sorted(r["value"] for r in await self._fetch(self._entity_types_sql))

    @override
    async def predicates(self) -> list[str]:
        """Predicates of the visible relationships, sorted."""
        return sorted(r["value"] for r in await self._fetch(self._predicates_sql))

    @override
    async def statistics(self, hubs: int = HUBS) -> GraphStatistics | None:
        """Entities by type, edges by predicate and the ``hubs`` best-connected entities: counted (one statement
        of GROUP BYs) in a store of at most :attr:`exact_statistics_rows` relationships, else estimated from the
        planner's statistics (``exact`` False; None before the first ANALYZE)."""
        size = (await self._fetch(queries.RELATIONSHIPS_SIZE_SQL))[0][0]
        if size < 0:  # never analysed: count, up to the bound
            size = (await self._fetch(queries.RELATIONSHIPS_PROBE_SQL, self.exact_statistics_rows))[0][0]
        if size <= self.exact_statistics_rows:
            return _statistics(await self._fetch(self._statistics_sql, hubs), exact=True)
        return _statistics(await self._fetch(queries.ESTIMATED_STATISTICS_SQL, hubs), exact=False)

    # -- batch primitives: one statement each -----------------------------------

    @override
    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """Each visible entity asked, with its type and name and its edges in both directions: one statement.

        Edge rows are plain tuples. Unknown and merged ids answer nothing, edges to merged
        entities are left out, and an edge whose other end is no entity has a None type. In a
        traversal that will show metadata (:meth:`_memo`), the same statement brings the metadata
        of the entities and edges it reads, for :meth:`metadata_for_nodes` and :meth:`metadata_for_edges`.
        """
        asked = list(dict.fromkeys(entity_ids))
        memo = self._memo()
        return _neighbourhoods(asked, await self._fetch(self._hop_sql[memo is not None], _storable(asked)), memo)[0]

    @override
    async def closure(
        self,
        seeds: list[str],
        predicates: list[str] | None,
        outgoing: bool,
        depth: int,
        max_nodes: int,
        max_edges_per_node: int,
        time_left: float | None,
    ) -> Closure | None:
        """A relation's closure walked in the database (:mod:`bfsql_postgres.closures`): from one seed, first read
        whole by a plain recursive statement while it has at most :data:`CLOSURE_EDGES` edges and no possible hub,
        and levelled here; else one ``WITH RECURSIVE`` statement a level at a time. Both say the names of what they
        read (the level statement for walks of at most :data:`CLOSURE_METADATA` entities) and, in a call that keeps
        what it reads and may show it (:meth:`_reads_memo`, ``HopMemo.metadata``: a path query), bring the
        metadata too, for :meth:`metadata_for_nodes`."""
        memo = self._reads_memo()
        full = memo is not None and memo.metadata
        asked = _storable(list(dict.fromkeys(seeds)))
        if len(asked) == 1 and (time_left is None or time_left > 0):
            small = closures.closure_of_edges(
                await self._fetch(self._closure_edges_sql[outgoing], asked[0], predicates, CLOSURE_EDGES,
                                  max_edges_per_node, full),
                depth, max_nodes, memo if full else None)
            if small is not None:
                return small
        rows = await self._fetch(self._closure_sql[outgoing], asked, predicates, depth, max_nodes,
                                 max_edges_per_node, time_left, CLOSURE_METADATA if memo is not None else 0, full)
        return closures.closure_of_rows(rows, depth, memo if full else None)

    @override
    async def traverse(
        self,
        seeds: list[str],
        hops: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        offset: int,
        count: int,
    ) -> Survey:
        """The whole walk: hop by hop while it is small, else in the database in one statement.

        A walk is first taken hop by hop, as the engine walks (:func:`bfsql.engine.traverse.expand`
        over the hop statement), each hop sent only while the walk's edges stay within
        :attr:`walk_rows` (:func:`queries.budgeted_hop_sql`): that costs what a small answer costs.
        A bigger walk is walked in the database by one statement (:mod:`bfsql_postgres.walk`) that
        sends back only the counts, the cuts, the schema and the page: it costs the database's
        work, not the transfer and bookkeeping of every edge. A call that lists the whole walk
        (``count`` of ``max_nodes``) is walked hop by hop whatever its size (every row comes back
        anyway, and the engine's bookkeeping is the cheaper) unless that walk reaches ``max_walk_nodes``:
        the database then walks it whole, so the counts are always exact. One that lists nothing (``count`` 0:
        the counts alone) goes hop by hop only within :data:`COUNT_WALK_ROWS`.
        """
        walked = await self._walked_hop_by_hop(seeds, hops, limits, frozenset(exclude_types), count)
        if walked is not None and not walked.nodes_cut:  # else the database walks it whole: its counts are exact
            return walk.survey_of_expansion(walked, offset, count)
        sql = self._traverse_sql.get(hops)
        if sql is None:
            sql = self._traverse_sql[hops] = walk.traverse_sql(self.layout, hops)
        rows = await self._fetch(
            sql, _storable(list(dict.fromkeys(seeds))), limits.max_edges_per_node, _storable(list(exclude_types)),
            offset, count,
        )
        return walk.survey_of_rows(seeds, rows)

    @override
    async def intersect(
        self,
        seeds: list[str],
        k: int,
        limits: TraversalLimits,
        exclude_types: list[str],
        count: int,
        path_nodes: int,
        path_limit: int,
    ) -> Overlap:
        """The whole intersection walk in the database, in one statement (:mod:`bfsql_postgres.overlap`): the
        counts, cuts, the first ``count`` shared nodes with the edges among them and the paths come back."""
        sql = self._intersect_sql.get(k)
        if sql is None:
            sql = self._intersect_sql[k] = overlap.intersect_sql(self.layout, k)
        rare = await self._rare(limits.max_edges_per_node)
        rows = await self._fetch(sql, _storable(list(dict.fromkeys(seeds))), limits.max_edges_per_node,
                                 _storable(list(exclude_types)), count, path_nodes, path_limit, rare.hubs,
                                 rare.dangling)
        return overlap.overlap_of_rows(seeds, rows, path_limit)

    async def _rare(self, cap: int) -> RareEnds:
        """The graph's hub candidates for ``cap`` and its ends that are no entity (:mod:`bfsql_postgres.rare_ends`):
        those the loader saved while they are current, else read from the relationships once per cap (and caller's
        role) and kept, as the merged entities are read once at start-up."""
        if self.layout.rare_ends:
            try:
                saved = rare_ends.saved_for(await self._fetch(rare_ends.SAVED_SQL), cap)
            except (AccessDenied, asyncpg.InsufficientPrivilegeError):
                saved = None  # a role not granted the table (docs/backends/postgres.md): read them
            if saved is not None:
                return saved
        key = (cap, self.store_identity())  # what a role's rows make of the graph is its own
        found = self._rare_ends.get(key)
        if found is None:
            rows = await self._fetch(rare_ends.ENDS_SQL, cap // 2, local=rare_ends.ENDS_SETTINGS)
            found = self._rare_ends[key] = RareEnds.of_rows(rows, cap)
        return found

    async def _walked_hop_by_hop(self, seeds: list[str], hops: int, limits: TraversalLimits,
                                 excluded: frozenset[str], count: int) -> Expansion | None:
        """The walk taken hop by hop where that is the cheaper (see :meth:`traverse`), or None where it is not."""
        if self.walk_rows > 0 and count >= limits.max_nodes:  # the whole walk is listed: moving it is no waste
            return await expand(cast(Graph, self), seeds, hops, limits=limits, exclude_types=excluded)
        rows = self.walk_rows if count > 0 else min(self.walk_rows, COUNT_WALK_ROWS)
        if rows <= 0:
            return None
        try:
            return await expand(cast(Graph, _RowBudget(self, rows)), seeds, hops, limits=limits, exclude_types=excluded)
        except _TooManyRows:
            return None

    @override
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        """Type and name of each visible entity, in one statement; in a call that keeps what it reads
        (:meth:`_reads_memo`: a path query, whose ``@id`` entry is shown with its metadata), the same statement
        brings their metadata, for :meth:`metadata_for_nodes`."""
        asked = _storable(list(dict.fromkeys(entity_ids)))
        memo = self._reads_memo()
        if memo is None:
            rows = await self._fetch(self._get_nodes_sql, asked)
            return {entity_id: NodeInfo(entity_type, name) for entity_id, entity_type, name in rows}
        found: dict[str, NodeInfo] = {}
        for entity_id, entity_type, name, *metadata in await self._fetch(self._get_nodes_memo_sql, asked):
            found[entity_id] = NodeInfo(entity_type, name)
            memo.nodes[entity_id] = (name, *metadata)
        return found

    @override
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Metadata of each visible entity, in one statement (none for those the call's hops, closures and
        ``get_nodes`` brought: :func:`bfsql.call_memo`)."""
        asked = list(dict.fromkeys(entity_ids))
        memo = call_memo()
        rows, asked = _from_memo(asked, memo.nodes if memo is not None else {}, lambda entity_id: (entity_id,))
        if asked:
            rows.extend(await self._fetch(self._node_metadata_sql, _storable(asked)))
        found: dict[str, dict[str, Any]] = {}
        parse = _json_texts()
        synonyms_of: dict[str | None, list[str]] = {}
        for entity_id, name, synonyms, properties, status, confidence, source, url in rows:
            listed = synonyms_of.get(synonyms)
            if listed is None:
                value = parse(synonyms)
                listed = [s for s in value if isinstance(s, str)] if isinstance(value, list) else []
                synonyms_of[synonyms] = listed
            columns = parse(properties)
            found[entity_id] = entity_metadata(
                columns if isinstance(columns, dict) else {},
                name=name,
                synonyms=listed,
                source=source,
                canonical_url=url,
                confidence=confidence,
                status=status,
            )
        return found

    @override
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """Relationship columns of every given edge (no evidence), in one statement (none for the edges the
        traversal's hops brought).

        An unknown edge, or one touching a merged entity, is left out. Where a store holds
        a triple twice (no unique key), the row with the highest confidence wins.
        """
        memo = hop_memo()
        rows, edges = _from_memo(edges, memo.edges if memo is not None else {}, tuple)
        if edges:
            rows.extend(await self._fetch(self._edge_metadata_sql, *self._triples(edges)))
        found: dict[Edge, dict[str, Any]] = {}
        parse = _json_texts()
        documents_of: dict[str | None, list[str]] = {}
        for subject, predicate, obj, confidence, documents, properties in rows:
            listed = documents_of.get(documents)
            if listed is None:
                value = parse(documents)
                listed = documents_of[documents] = [str(d) for d in value] if isinstance(value, list) else []
            columns = parse(properties)
            found[Edge(subject, predicate, obj)] = relationship_metadata(
                columns if isinstance(columns, dict) else {}, confidence, listed
            )
        return found

    @override
    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """The evidence records of every given edge that has some, in one statement.

        Ordered by document, section and text; duplicate records are dropped. Nothing in a
        store without evidence tables.
        """
        if self._provenance_sql is None:
            return {}
        found: dict[Edge, list[dict[str, Any]]] = {}
        for subject, predicate, obj, span, confidence, document, section in await self._fetch(
            self._provenance_sql, *self._triples(edges)
        ):
            edge = Edge(subject, predicate, obj)
            record = EvidenceRecord.model_construct(
                subject=subject,
                predicate=predicate,
                object=obj,
                text_span=span,
                confidence=confidence,
                document_id=document,
                section=section,
            )
            found.setdefault(edge, []).append(record.provenance())
        for records in found.values():
            records.sort(key=_evidence_order)
        return found

    # -- descriptive hooks ----------------------------------------------------------

    @override
    async def graph_description(self) -> str:
        """The configured description, else one naming the database."""
        return self._description or f"A knowledge graph in PostgreSQL (kgraph schema {self.layout.schema!r})."

    @override
    async def health(self) -> list[str]:
        """What makes the answers stale now: on a hot standby, replication stopped or paused, or a lag beyond
        ``max_replica_lag`` (:mod:`bfsql_postgres.replica`); a server that cannot be reached. [] on a primary."""
        try:
            return await self.replica.problems()
        except _CONNECTION_LOST as exc:
            return [self._unreachable(exc)]

    def _unreachable(self, exc: BaseException) -> str:
        """The sentence of a server that cannot be reached."""
        return f"PostgreSQL at {self.where} cannot be reached ({type(exc).__name__}: {clip(str(exc), 200)})."

    @override
    async def aclose(self) -> None:
        """Stop reading the codes and close the pool (idempotent)."""
        if self._codes is not None and not self._codes.done():
            self._codes.cancel()
            await asyncio.gather(self._codes, return_exceptions=True)
        await self.pool.close()
