"""SparqlBackend: the batch primitives over a SPARQL 1.1 query endpoint.

Ids are compact (``dbr:Berlin``) when the IRI is under a configured namespace, the
full IRI otherwise; an id that is neither a valid absolute IRI nor a compact id with
a known prefix never reaches a query: the primitives treat it as unknown (see
:mod:`bfsql_sparql.terms`). A BFS hop of a few seeds is one query, both directions and
the other ends' types and labels together; a frontier's is one query per ``--batch-size``
ids for the edges and one for the distinct ends met (see :mod:`bfsql_sparql.hop`).
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from typing_extensions import override

from bfsql import (
    SEARCH_LIMIT,
    Capabilities,
    Edge,
    EntityStub,
    GraphBackend,
    InvalidArgument,
    Neighbourhood,
    NodeInfo,
    Truncation,
    clip,
    gather_or_cancel,
    hop_memo,
    lexical_rank,
)
from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient, SparqlEndpointError, Term, term
from bfsql_sparql.config import SparqlConfig
from bfsql_sparql.fetch import Cut, FetchSettings, chunks
from bfsql_sparql.hop import read_hop
from bfsql_sparql.mapping import (
    UNTYPED,
    LabelRules,
    Labels,
    choose_type,
    edge_metadata,
    edge_provenance,
    evidence_entry,
    node_metadata,
    ordered_types,
)
from bfsql_sparql.nodes import Identity, NodeStatements, read_identities, read_node_statements
from bfsql_sparql.search import WORD_MATCH_RANK, find_candidates
from bfsql_sparql.terms import RDFS, SKOS, InvalidTerm, PrefixMap, local_name, string_expression
from bfsql_sparql.truncation import CutLog, truncation_for

__all__ = ["InvalidEntityId", "SparqlBackend", "SparqlConfigError"]

logger = logging.getLogger("bfsql.sparql")

DANGLING: tuple[None, None] = (None, None)
"""The other end's (type, name) in a hop row when it is no entity."""
TYPE_SETS_KEPT = 10_000
"""Sets of type IRIs whose chosen entity type is remembered (a graph has few)."""


class InvalidEntityId(InvalidArgument, KeyError):
    """An id that cannot name an entity here: unknown to the graph (KeyError) and explained (InvalidArgument)."""

    def __init__(self, entity_id: str, reason: str, hint: str = "") -> None:
        super().__init__(
            f"Invalid entity id {clip(entity_id)!r}: {reason}",
            hint or "Use an id returned by search_entities or by an earlier answer.",
        )
        self.entity_id = entity_id


class SparqlConfigError(InvalidArgument):
    """The configuration names a term that is not usable (bad IRI, unknown prefix, no probe seeds)."""


class SparqlBackend(GraphBackend):
    """A read-only view of the RDF graph behind a SPARQL endpoint. Build it with :meth:`create`."""

    def __init__(self, config: SparqlConfig) -> None:
        self.config = config
        self.prefixes: PrefixMap = config.prefix_map()
        self.rules = LabelRules(
            label_predicates=self._config_iris(
                "label_predicate", config.label_predicate, [SKOS + "prefLabel", RDFS + "label"]
            ),
            synonym_predicates=self._config_iris("synonym_predicate", config.synonym_predicate, [SKOS + "altLabel"]),
            languages=tuple(config.language),
        )
        self.client = SparqlClient(
            config.endpoint,
            default_graphs=config.default_graph,
            timeout=config.query_timeout,
            max_concurrency=config.max_connections,
            retry=config.retry_policy(),
            http_method=config.http_method,
        )
        self.type_predicate = self._config_iris("type_predicate", [config.type_predicate], [])[0]
        self.limits = FetchSettings(config.batch_size, config.edge_limit, config.max_rows, self.type_predicate)
        self.cuts = CutLog(config.edge_limit)
        self.search_mode = config.search_mode
        self.capabilities = Capabilities(
            batch_primitives=True, provenance=True, comprehensive_schema=config.schema_mode == "full"
        )
        self._types: list[str] = []
        self._predicates: list[str] = []
        self.edge_annotations = True
        """Whether the store holds reified statements (edge metadata and provenance); learnt at start."""
        self._type_of: dict[frozenset[str], str] = {}
        """The entity type of each set of type IRIs met (choosing one sorts them)."""

    def _config_iris(self, field: str, values: list[str], default: list[str]) -> tuple[str, ...]:
        try:
            return tuple(self.prefixes.expand(value) for value in values) if values else tuple(default)
        except InvalidTerm as exc:
            raise SparqlConfigError(
                f"--{field.replace('_', '-')}: {exc}", "Give a full IRI or NAME:local with a --prefix NAME."
            ) from None

    @classmethod
    async def create(cls, config: SparqlConfig) -> SparqlBackend:
        """Connect, check the endpoint, detect Virtuoso, and read the schema (inside the serving loop)."""
        backend = cls(config)
        try:
            await backend.start()
        except BaseException:
            await backend.aclose()
            raise
        return backend

    async def start(self) -> None:
        """Open the HTTP session, check the endpoint answers, pick the search mode, load the schema."""
        await self.client.start()
        try:
            await self.client.ask("ASK { }")
        except SparqlEndpointError as exc:
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.config.endpoint} does not answer a trivial query: {exc.message}",
                "Check --endpoint (or BFSQL_SPARQL_ENDPOINT / SPARQL_ENDPOINT_URL): it must be the URL of a "
                "SPARQL 1.1 query service, e.g. http://127.0.0.1:7878/query or http://127.0.0.1:8890/sparql.",
            ) from None
        if self.virtuoso:
            # Virtuoso stops a query server-side at this many milliseconds instead of running on unseen.
            self.client.extra_params["timeout"] = str(int(self.config.query_timeout * 1000))
            self.client.form_posts = True
        if self.search_mode == "auto":
            self.search_mode = "bif" if self.virtuoso else "contains"
        logger.info(
            "sparql: endpoint %s (%s), search mode %s", self.config.endpoint, self.client.server, self.search_mode
        )
        annotated, _ = await gather_or_cancel(
            self.client.ask(queries.annotations_query()),
            self._probe_schema() if self.config.schema_mode == "probe" else self._full_schema(),
        )
        self.edge_annotations = annotated
        if not annotated:
            logger.info("sparql: the graph has no reified statements: edges carry no metadata or provenance")

    @property
    def virtuoso(self) -> bool:
        """Whether the endpoint identified itself as Virtuoso."""
        return "virtuoso" in (self.client.server or "").lower()

    @override
    async def aclose(self) -> None:
        await self.client.aclose()

    @override
    def truncations(self, entity_ids: set[str]) -> list[Truncation]:
        """A ``sparql_edge_limit`` entry naming the given entities whose edge lists were cut, if any."""
        cuts = self.cuts.cuts_for(entity_ids)
        return [truncation_for(cuts, self.cuts.edge_limit)] if cuts else []

    # --- ids ---------------------------------------------------------------

    def to_iri(self, entity_id: str) -> str:
        """The IRI of a canonical id; :class:`InvalidEntityId` (a KeyError) when the id cannot be one."""
        known = self.prefixes.canonical_iri(entity_id)
        if known is not None:
            return known
        try:
            iri = self.prefixes.expand(entity_id)
        except InvalidTerm as exc:
            raise InvalidEntityId(entity_id, str(exc)) from None
        canonical = self.prefixes.compact(iri)
        if canonical != entity_id:
            shown = clip(canonical, 500)  # the hint must hold the whole id, unless it is absurdly long
            raise InvalidEntityId(entity_id, f"this graph writes it {shown!r}.", f"Use the id {shown!r}.")
        return iri

    def _valid(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Canonical ids that can be entities, with their IRIs; the others are left out (unknown) and logged."""
        valid: dict[str, str] = {}
        for entity_id in dict.fromkeys(entity_ids):
            try:
                valid[entity_id] = self.to_iri(entity_id)
            except InvalidEntityId as exc:
                logger.info("sparql: %s", exc.message)
        return valid

    # --- nodes and hops ---------------------------------------------------

    @override
    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        valid = self._valid(entity_ids)
        found = await read_identities(
            self.client, valid.values(), self.rules.label_predicates, self.rules.languages, self.limits
        )
        return {entity_id: self._node_info(iri, found[iri]) for entity_id, iri in valid.items() if iri in found}

    def _node_info(self, iri: str, identity: Identity) -> NodeInfo:
        """Type and name, decided as :func:`~bfsql_sparql.mapping.node_metadata` decides them."""
        name = self.rules.best_label(identity.labels)
        types = frozenset(identity.types)
        entity_type = self._type_of.get(types)
        if entity_type is None:
            if len(self._type_of) >= TYPE_SETS_KEPT:
                self._type_of.clear()
            entity_type = self._type_of[types] = choose_type(types, self.prefixes)
        return NodeInfo(entity_type, name if name is not None else local_name(iri))

    @override
    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        """Each entity asked, with both directions' edges and their other ends: one query per ``--batch-size`` ids
        (two past :data:`~bfsql_sparql.hop.ONE_QUERY_IDS`: the edges, then the ends).

        In a traversal that will show metadata (:func:`bfsql.hop_memo`) the hop also reads the
        literal statements of the entities it meets and keeps them for :meth:`metadata_for_nodes`;
        in a store without edge annotations it keeps the edges it read for :meth:`metadata_for_edges`
        (an edge's metadata there is only that it exists).
        """
        valid = self._valid(entity_ids)
        memo = hop_memo()
        found = await read_hop(self.client, list(valid.values()), self.rules, self.limits, memo is not None)
        for cut in found.cuts:
            self.cuts.record(self.prefixes.compact(cut.iri), cut)
        compact = self.prefixes.compact
        ends: dict[str, tuple[str | None, str | None]] = {
            iri: (None, None) if identity is None else self._node_info(iri, identity)
            for iri, identity in found.ends.items()
        }
        if memo is not None:
            entities = found.ends
            memo.nodes.update(
                (compact(iri), statements) for iri, statements in found.statements.items() if entities.get(iri)
            )
        seen = memo.edges if memo is not None and not self.edge_annotations else None
        result: dict[str, Neighbourhood] = {}
        for entity_id, iri in valid.items():
            identity = found.ends.get(iri)
            if identity is None:  # no entity, or a deprecated one
                continue
            outgoing, incoming = found.edges.get(iri, ({}, {}))
            # Plain tuples of HopEdge's fields: a hop makes thousands of them.
            rows: list[Any] = [(entity_id, compact(p), compact(o), *ends.get(o, DANGLING)) for p, o in outgoing]
            rows += [
                (compact(s), compact(p), entity_id, *ends.get(s, DANGLING))
                for p, s in incoming
                if s != iri or (p, s) not in outgoing  # a self-loop once
            ]
            result[entity_id] = Neighbourhood(self._node_info(iri, identity), rows)
            if seen is not None:
                seen.update(dict.fromkeys(row[:3] for row in rows))
        return result

    @override
    async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Types and literal statements of each entity: one query per block, none for the entities whose statements
        this traversal's hops read (:func:`bfsql.hop_memo`)."""
        valid = self._valid(entity_ids)
        memo = hop_memo()
        read: dict[str, NodeStatements] = memo.nodes if memo is not None else {}
        missing = [iri for entity_id, iri in valid.items() if entity_id not in read]
        found = await read_node_statements(self.client, missing, self.rules.languages, self.limits) if missing else {}
        result: dict[str, dict[str, Any]] = {}
        for entity_id, iri in valid.items():
            statements = read.get(entity_id) or found.get(iri)
            if statements is None:
                continue
            if statements.cut is not None:
                self.cuts.record(entity_id, Cut(iri, "literal", *statements.cut))
            result[entity_id] = node_metadata(
                iri, ordered_types(statements.types, self.prefixes), statements.literals, self.rules, statements.cut
            )
        return result

    # --- edges -------------------------------------------------------------

    def _triple(self, edge: Edge) -> tuple[str, str, str] | None:
        """The IRIs of an edge written with canonical ids; None when it cannot be an edge of this graph."""
        try:
            predicate = self.prefixes.expand(edge[1])
            if self.prefixes.compact(predicate) != edge[1]:
                return None
            return self.to_iri(edge[0]), predicate, self.to_iri(edge[2])
        except (InvalidEntityId, InvalidTerm):
            return None

    def _triples(self, edges: list[Edge]) -> dict[tuple[str, str, str], list[Edge]]:
        """The edges that can be edges of this graph, by their IRIs (one triple may be written by several)."""
        wanted: dict[tuple[str, str, str], list[Edge]] = defaultdict(list)
        for edge in dict.fromkeys(edges):
            triple = self._triple(edge)
            if triple is not None:
                wanted[triple].append(edge)
        return wanted

    async def _select_triples(self, triples: list[tuple[str, str, str]], make_query: Any) -> list[dict[str, Any]]:
        """The raw rows of ``make_query`` over ``triples``, one query per ``--batch-size`` triples."""
        parts = await gather_or_cancel(
            *(
                self.client.bindings(make_query(triples[start : start + self.limits.batch_size]))
                for start in range(0, len(triples), self.limits.batch_size)
            )
        )
        return [row for rows in parts for row in rows]

    @override
    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        """The reified statements' properties of each existing edge; ``{}`` for the others. No provenance.

        In a store without reified statements an existing edge's metadata is only its empty
        ``source_documents``; the edges this traversal's hops read are known to exist, so only
        the others are asked for (whether they exist).
        """
        result: dict[Edge, dict[str, Any]] = {}
        memo = hop_memo() if not self.edge_annotations else None
        if memo is not None:
            seen = memo.edges
            result = {edge: {"source_documents": []} for edge in edges if edge in seen}  # edge_metadata([])
            edges = [edge for edge in edges if edge not in result]
            if not edges:
                return result
        wanted = self._triples(edges)
        existing: set[tuple[str, str, str]] = set()
        annotations: dict[tuple[str, str, str], list[tuple[str, Term]]] = defaultdict(list)
        statement_query = functools.partial(queries.statement_query, annotations=self.edge_annotations)
        for row in await self._select_triples(list(wanted), statement_query):
            triple = (row["s"]["value"], row["p"]["value"], row["o"]["value"])
            if "k" in row and "v" in row:
                annotations[triple].append((row["k"]["value"], term(row["v"])))
            else:
                existing.add(triple)
        result.update({edge: {} for edge in edges})
        for triple in existing:
            for edge in wanted[triple]:
                result[edge] = edge_metadata(annotations.get(triple, []), self.prefixes)
        return result

    @override
    async def provenance_for_edges(self, edges: list[Edge]) -> dict[Edge, list[dict[str, Any]]]:
        """One entry per ``prov:wasDerivedFrom`` node of each edge's reified statements (its literal properties)."""
        if not self.edge_annotations:
            return {}
        wanted = self._triples(edges)
        evidence: dict[tuple[str, str, str], dict[str, list[tuple[str, Term]]]] = defaultdict(lambda: defaultdict(list))
        for row in await self._select_triples(list(wanted), queries.provenance_query):
            evidence[(row["s"]["value"], row["p"]["value"], row["o"]["value"])][row["ev"]["value"]].append(
                (row["k"]["value"], term(row["v"]))
            )
        result: dict[Edge, list[dict[str, Any]]] = {}
        for triple, nodes in evidence.items():
            entries = edge_provenance([evidence_entry(props) for _, props in sorted(nodes.items())])
            for edge in wanted[triple]:
                result[edge] = entries
        return result

    # --- search ------------------------------------------------------------

    @override
    async def search_entities(
        self, query: str, node_types: list[str] | None = None, limit: int = SEARCH_LIMIT
    ) -> list[EntityStub]:
        text = query.strip()
        if not text or limit <= 0:
            return []
        try:
            string_expression(text)
        except InvalidTerm as exc:
            raise InvalidArgument(
                f"Cannot search for {query!r}: {exc}", "Search for a name or alias in plain text."
            ) from None
        type_iris: list[str] = []
        wanted = set(node_types) if node_types is not None else None
        if node_types is not None:
            type_iris = list(self._valid(node_types).values())
            if not type_iris and UNTYPED not in node_types:
                return []
        candidates = await find_candidates(
            self.client,
            text,
            self.search_mode,
            self.rules.all_predicates,
            self.rules.languages,
            self.config.search_candidates,
            type_iris,
            untyped=wanted is not None and UNTYPED in wanted,
            type_predicate=self.type_predicate,
        )
        if not candidates.iris:
            return []
        identities = await read_identities(
            self.client, candidates.iris, self.rules.all_predicates, self.rules.languages, self.limits
        )
        ranked: list[tuple[tuple[int, int], str, EntityStub]] = []
        for iri in candidates.iris:
            identity = identities.get(iri)
            if identity is None:
                continue
            entity_type = choose_type(identity.types, self.prefixes)
            if wanted is not None and entity_type not in wanted:
                continue
            names = Labels.from_texts(identity.labels, self.rules)
            name = names.name if names.name is not None else local_name(iri)
            rank = lexical_rank(text, name, names.synonyms)
            if rank is None:
                if not candidates.word_search:
                    continue
                rank = (WORD_MATCH_RANK, len(name))
            entity_id = self.prefixes.compact(iri)
            ranked.append((rank, entity_id, EntityStub(id=entity_id, entity_type=entity_type, name=name)))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [stub for _, _, stub in ranked[:limit]]

    # --- schema ------------------------------------------------------------

    @override
    async def entity_types(self) -> list[str]:
        return list(self._types)

    @override
    async def predicates(self) -> list[str]:
        return list(self._predicates)

    async def _full_schema(self) -> None:
        limit = self.config.schema_limit
        type_rows, untyped, predicate_rows = await gather_or_cancel(
            self.client.select(queries.types_query(limit + 1, type_predicate=self.type_predicate)),
            self.client.ask(queries.untyped_query(type_predicate=self.type_predicate)),
            self.client.select(queries.predicates_query(limit + 1)),
        )
        types = [row["t"].value for row in type_rows if "t" in row]
        candidates = [row["p"].value for row in predicate_rows if "p" in row and row["p"].kind == "uri"]
        cap = self.client.row_cap
        capped = cap is not None and max(len(types), len(candidates)) >= cap
        if len(types) > limit or len(candidates) > limit or capped:
            logger.warning(
                "sparql: the graph has more than %d entity types or predicates; the schema lists the first %d "
                "(raise --schema-limit, or use --schema-mode probe)",
                limit,
                limit,
            )
            self.capabilities = Capabilities(batch_primitives=True, provenance=True, comprehensive_schema=False)
        checks = await gather_or_cancel(
            *(
                self.client.select(queries.edge_predicates_query(part, type_predicate=self.type_predicate))
                for part in chunks(candidates[:limit], self.limits.batch_size)
            )
        )
        edges = {row["p"].value for rows in checks for row in rows if "p" in row}
        self._types = sorted({self.prefixes.compact(t) for t in types[:limit]} | ({UNTYPED} if untyped else set()))
        self._predicates = sorted({self.prefixes.compact(p) for p in edges})

    async def _probe_schema(self) -> None:
        if not self.config.probe_seeds:
            raise SparqlConfigError(
                "--schema-mode probe needs at least one --probe-seeds id.",
                "Give a few well-connected entities, e.g. --probe-seeds dbr:Berlin.",
            )
        seen: set[str] = set()
        frontier = list(self._valid(self.config.probe_seeds))
        if not frontier:
            raise SparqlConfigError(
                "No --probe-seeds id is a valid IRI or compact id.", "Check --prefix and the seeds."
            )
        predicates: set[str] = set()
        for _ in range(self.config.probe_hops):
            seen.update(frontier)
            reached: set[str] = set()
            for there in (await self.hop(frontier)).values():
                for subject, predicate, obj, *_ in there.edges:
                    predicates.add(predicate)
                    reached.update((subject, obj))
            frontier = sorted(reached - seen)
        nodes = await self.get_nodes(sorted(seen | set(frontier)))
        self._types = sorted({node.entity_type for node in nodes.values()})
        self._predicates = sorted(predicates)
        logger.info(
            "sparql: probed %d entities: %d types, %d predicates", len(nodes), len(self._types), len(self._predicates)
        )

    # --- descriptions ------------------------------------------------------

    @override
    async def graph_description(self) -> str:
        if self.config.description:
            return self.config.description
        graphs = f" (graphs: {', '.join(self.config.default_graph)})" if self.config.default_graph else ""
        return f"An RDF knowledge graph behind the SPARQL endpoint {self.config.endpoint}{graphs}."

    @override
    async def next_steps(self) -> str | None:
        names = ", ".join(
            f"{name}: {namespace}" if name else f"bare names: {namespace}"
            for name, namespace in self.prefixes.prefixes[:12]
        )
        return (
            "1. search_entities(query) to resolve each name to an id. Ids are IRIs, written NAME:local under "
            f"these namespaces ({names}) and in full otherwise.\n"
            "2. bfs_query(seeds=[id], max_hops=1, topology_only=true) to survey the neighbourhood.\n"
            "3. Read schema_summary; call describe_entities on stubs that matter (literal values are metadata).\n"
            "4. Re-query with node_types / predicates to get full detail only where needed."
        )
