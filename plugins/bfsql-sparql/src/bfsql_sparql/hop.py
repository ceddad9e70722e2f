"""A BFS hop over SPARQL: which asked ids are entities, their edges and what is known of their ends.

A hop of at most :data:`ONE_QUERY_IDS` ids (a traversal's seeds, whose edges rarely share
an end) is one :func:`~bfsql_sparql.queries.hop_query` whose rows carry each edge's other
end's types, labels and state, and the asked entities' own. A larger frontier is cut in
chunks of ``batch_size`` ids (the size of a ``VALUES`` block an endpoint takes comfortably),
one query each for their edges; then the distinct ends met and the asked ids are looked up
once each (:func:`~bfsql_sparql.queries.ends_query`, one query per ``batch_size`` of them):
in a frontier many edges share an end, and looking each end up once per edge cost Oxigraph
three times as much on the HPO.

Each query asks for at most ``max_rows`` rows (fewer when the endpoint announced a lower
cap). A chunk whose answer passes that is counted
(:func:`~bfsql_sparql.queries.hop_count_query`) and asked again in groups of entities
whose rows fit; an entity whose rows alone do not fit (a hub) is read the counted way of
:mod:`bfsql_sparql.fetch`, page by page; the ends these leave unknown, and the asked ids
without edges, are looked up afterwards like a frontier's.

Either way an entity keeps at most ``edge_limit`` edges per direction, the first by
predicate and other end, and every cut is returned as a :class:`~bfsql_sparql.fetch.Cut`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bfsql import gather_or_cancel
from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient, term
from bfsql_sparql.fetch import Cut, FetchSettings, chunks, fetch_statements, groups, overflowed, page_size
from bfsql_sparql.mapping import LabelRules
from bfsql_sparql.nodes import Identity, NodeStatements, add_identity_row, settle

__all__ = ["ONE_QUERY_IDS", "HopStatements", "read_hop"]

ONE_QUERY_IDS = 16
"""Largest hop read in one query with its ends: a traversal's seeds, not a frontier (whose ends are many)."""

Pairs = dict[tuple[str, str], None]
"""``(predicate IRI, other end IRI)`` pairs in the order read (a dict: ordered, without repeats)."""


@dataclass
class HopStatements:
    """The edges of the entities among a frontier and what is known of them and their other ends (all IRIs)."""

    edges: dict[str, tuple[Pairs, Pairs]] = field(default_factory=dict)
    """Entity to its outgoing ``(predicate, object)`` and incoming ``(predicate, subject)`` pairs."""
    ends: dict[str, Identity | None] = field(default_factory=dict)
    """Every other end and every asked id that is an entity: its identity, or None when it is no entity (a
    dangling reference). An asked id absent here is no entity (or a deprecated one)."""
    hidden: set[str] = field(default_factory=set)
    """Deprecated ends met: their edges are dropped, like the ends themselves."""
    answered: set[str] = field(default_factory=set)
    """Asked ids a query with ends has settled: an entity's identity is in :attr:`ends`, the others are none."""
    cuts: list[Cut] = field(default_factory=list)
    statements: dict[str, NodeStatements] = field(default_factory=dict)
    """When literals were asked for and fitted: the types and literal statements of the ends and the asked ids
    that are entities."""

    def merge(self, other: HopStatements) -> None:
        """Add another chunk's statements."""
        self.edges.update(other.edges)
        self.ends.update(other.ends)
        self.hidden |= other.hidden
        self.answered |= other.answered
        self.cuts.extend(other.cuts)
        self.statements.update(other.statements)


async def read_hop(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings, literals: bool = False
) -> HopStatements:
    """Which of ``iris`` are entities, and both directions' edges of each, with their other ends' types and labels.

    With ``literals`` the literal statements of the ends and of the asked entities are read in
    the same pass where the answer fits in the rows allowed (:attr:`HopStatements.statements`).
    """
    unique = list(dict.fromkeys(iris))
    with_ends = len(unique) <= ONE_QUERY_IDS
    parts = await gather_or_cancel(
        *(_chunk(client, part, rules, limits, with_ends, literals) for part in chunks(unique, limits.batch_size))
    )
    hop = HopStatements()
    for part in parts:
        hop.merge(part)
    met = {other for pairs in hop.edges.values() for direction in pairs for _, other in direction}
    known = hop.ends.keys() | hop.statements.keys() | hop.hidden
    unknown = sorted((met - known) | (set(unique) - hop.answered - known))
    if unknown:
        naming = (rules.label_predicates, rules.languages)
        for rows, with_literals in await gather_or_cancel(
            *(_ends(client, part, naming, limits, literals) for part in chunks(unknown, limits.batch_size))
        ):
            _parse(rows, hop, True, with_literals)
    _hide(hop)
    _cut(hop, limits.edge_limit)
    if hop.statements:
        _identify(hop, rules, limits.edge_limit)
    return hop


async def _chunk(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings, with_ends: bool, literals: bool
) -> HopStatements:
    """One chunk's edges (with their ends when ``with_ends``): one query, or counted when it does not fit."""
    found = await _one_query(client, iris, rules, limits, with_ends, literals)
    if found is not None:
        return found
    query = queries.hop_count_query(iris, rules.label_predicates, rules.languages, type_predicate=limits.type_predicate)
    # Twice the joined rows bound the edge rows and the end rows of an entity; one more for its own.
    counts = {row["e"]["value"]: 2 * int(row["n"]["value"]) + 1 for row in await client.bindings(query)}
    page = page_size(client, limits)
    hubs = [iri for iri, n in counts.items() if n > page]
    parts = await gather_or_cancel(
        *(
            _group(client, group, rules, limits, with_ends)
            for group in groups({i: n for i, n in counts.items() if n <= page}, page)
        ),
        *([_counted(client, hubs, limits)] if hubs else []),
    )
    merged = HopStatements()
    for part in parts:
        merged.merge(part)
    return merged


async def _one_query(
    client: SparqlClient,
    iris: Sequence[str],
    rules: LabelRules,
    limits: FetchSettings,
    with_ends: bool,
    literals: bool = False,
) -> HopStatements | None:
    """The hop of ``iris`` from one query; None when the answer would pass the rows allowed.

    Literals that do not fit are left for ``metadata_for_nodes`` to read: the hop is asked again without them.
    """
    page = page_size(client, limits)
    query = queries.hop_query(
        iris,
        rules.label_predicates,
        rules.languages,
        page + 1,
        type_predicate=limits.type_predicate,
        with_ends=with_ends,
        literals=literals,
    )
    rows = await client.bindings(query)
    if overflowed(client, len(rows), page):
        return await _one_query(client, iris, rules, limits, with_ends) if literals and with_ends else None
    hop = HopStatements(answered=set(iris) if with_ends else set())
    _parse(rows, hop, with_ends, literals)
    return hop


async def _ends(
    client: SparqlClient,
    iris: Sequence[str],
    naming: tuple[Sequence[str], Sequence[str]],
    limits: FetchSettings,
    literals: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """The end rows of ``iris``, with their literals when those fit in the rows allowed; whether they came."""
    if literals:
        page = page_size(client, limits)
        query = queries.ends_query(iris, *naming, type_predicate=limits.type_predicate, literals=True, limit=page + 1)
        rows = await client.bindings(query)
        if not overflowed(client, len(rows), page):
            return rows, True
    return await client.bindings(queries.ends_query(iris, *naming, type_predicate=limits.type_predicate)), False


async def _group(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings, with_ends: bool
) -> HopStatements:
    """A group counted to fit in one answer; read the counted way if it does not after all (the graph changed)."""
    found = await _one_query(client, iris, rules, limits, with_ends)
    return found if found is not None else await _counted(client, iris, limits)


def _parse(rows: list[dict[str, Any]], hop: HopStatements, identities: bool, literals: bool = False) -> None:
    """Add edge rows and end rows to ``hop`` (with ``identities``, every row's ``?o`` is known; with ``literals``,
    its ``?lp ?l`` are any literal statements, gathered in ``hop.statements``)."""
    edges, ends, statements, hidden = hop.edges, hop.ends, hop.statements, hop.hidden
    for row in rows:
        entity = row.get("e")
        if entity is not None:
            pairs = edges.get(entity["value"])
            if pairs is None:
                pairs = edges[entity["value"]] = ({}, {})
            outgoing = row.get("out")
            if outgoing is not None:
                pairs[0][(row["p"]["value"], outgoing["value"])] = None
            else:
                pairs[1][(row["p"]["value"], row["in"]["value"])] = None
            if not identities:
                continue
        other = row["o"]["value"]
        if "hidden" in row:
            hidden.add(other)
        elif "dangling" in row:
            ends[other] = None
        elif literals:
            found = statements.get(other)
            if found is None:
                found = statements[other] = NodeStatements()
            if "t" in row:
                found.types.add(row["t"]["value"])
            elif "l" in row:
                found.literals.append((row["lp"]["value"], term(row["l"])))
        else:
            identity = ends.get(other)
            if identity is None:
                identity = ends[other] = Identity()
            add_identity_row(identity, row)


def _identify(hop: HopStatements, rules: LabelRules, edge_limit: int) -> None:
    """The identities of the entities whose statements were read (their types and label literals)."""
    labels = set(rules.label_predicates)  # the literals passed the same language filter as labels do
    for iri, found in hop.statements.items():
        if iri in hop.ends:  # dangling
            continue
        hop.ends[iri] = Identity(
            set(found.types), {(p, o.value, o.language) for p, o in found.literals if p in labels}
        )
    settle(hop.statements.values(), edge_limit)  # after the labels, which get_nodes reads uncut


def _hide(hop: HopStatements) -> None:
    """Drop the edges to deprecated ends (invisible like the ends themselves)."""
    hidden = hop.hidden
    if not hidden:
        return
    for entity, (outgoing, incoming) in hop.edges.items():
        if any(other in hidden for _, other in outgoing) or any(other in hidden for _, other in incoming):
            hop.edges[entity] = (
                {pair: None for pair in outgoing if pair[1] not in hidden},
                {pair: None for pair in incoming if pair[1] not in hidden},
            )


def _cut(hop: HopStatements, edge_limit: int) -> None:
    """Keep at most ``edge_limit`` pairs per entity and direction, the first by (predicate, other end)."""
    for entity, both in hop.edges.items():
        cut = list(both)
        for position, direction in ((0, "out"), (1, "in")):
            pairs = both[position]
            if len(pairs) > edge_limit:
                cut[position] = dict.fromkeys(sorted(pairs)[:edge_limit])
                hop.cuts.append(Cut(entity, direction, len(pairs), edge_limit))
        hop.edges[entity] = (cut[0], cut[1])


async def _counted(client: SparqlClient, iris: Sequence[str], limits: FetchSettings) -> HopStatements:
    """The edges of hubs, whose rows do not fit in one answer: counted fetches (their ends are looked up after)."""
    outgoing, incoming = await gather_or_cancel(
        fetch_statements(client, iris, "out", limits), fetch_statements(client, iris, "in", limits)
    )
    hop = HopStatements(cuts=[*outgoing.cuts, *incoming.cuts])
    for iri in outgoing.found.keys() | incoming.found.keys():
        hop.edges[iri] = (
            dict.fromkeys((p.value, o.value) for p, o in outgoing.found.get(iri, [])),
            dict.fromkeys((p.value, o.value) for p, o in incoming.found.get(iri, [])),
        )
    return hop
