"""A BFS hop over SPARQL: one query for the whole frontier, its own and its other ends' types and labels included.

The frontier is cut in chunks of ``batch_size`` ids (the size of a ``VALUES`` block an
endpoint takes comfortably); each chunk is one :func:`~bfsql_sparql.queries.hop_query`
asking for at most ``max_rows`` rows (fewer when the endpoint announced a lower cap),
which also says which of the asked ids are entities, with their types and labels.
A chunk whose answer passes that is counted (:func:`~bfsql_sparql.queries.hop_count_query`)
and asked again in groups of entities whose rows fit; an entity whose rows alone do not
fit (a hub) is read the counted way of :mod:`bfsql_sparql.fetch`, page by page, with one
identity query for its other ends (and the asked entities without edges).

Either way an entity keeps at most ``edge_limit`` edges per direction, the first by
predicate and other end, and every cut is returned as a :class:`~bfsql_sparql.fetch.Cut`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bfsql import gather_or_cancel
from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient
from bfsql_sparql.fetch import Cut, FetchSettings, chunks, fetch_statements, groups, overflowed, page_size
from bfsql_sparql.mapping import LabelRules
from bfsql_sparql.nodes import Identity, add_identity_row, read_identities

__all__ = ["HopStatements", "read_hop"]

Pairs = dict[tuple[str, str], None]
"""``(predicate IRI, other end IRI)`` pairs in the order read (a dict: ordered, without repeats)."""


@dataclass
class HopStatements:
    """The edges of the entities among a frontier and what is known of their other ends (all IRIs)."""

    edges: dict[str, tuple[Pairs, Pairs]] = field(default_factory=dict)
    """Entity to its outgoing ``(predicate, object)`` and incoming ``(predicate, subject)`` pairs."""
    ends: dict[str, Identity | None] = field(default_factory=dict)
    """Every other end and every asked id that is an entity: its identity, or None when it is no entity (a
    dangling reference). An asked id absent here is no entity (or a deprecated one)."""
    cuts: list[Cut] = field(default_factory=list)

    def merge(self, other: HopStatements) -> None:
        """Add another chunk's statements."""
        self.edges.update(other.edges)
        self.ends.update(other.ends)
        self.cuts.extend(other.cuts)


async def read_hop(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings
) -> HopStatements:
    """Which of ``iris`` are entities, and both directions' edges of each, with their other ends' types and labels."""
    parts = await gather_or_cancel(
        *(_chunk(client, part, rules, limits) for part in chunks(list(dict.fromkeys(iris)), limits.batch_size))
    )
    merged = HopStatements()
    for part in parts:
        merged.merge(part)
    return merged


async def _chunk(client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings) -> HopStatements:
    found = await _one_query(client, iris, rules, limits)
    if found is not None:
        return found
    query = queries.hop_count_query(iris, rules.label_predicates, rules.languages, type_predicate=limits.type_predicate)
    counts = {row["e"]["value"]: int(row["n"]["value"]) for row in await client.bindings(query)}
    page = page_size(client, limits)
    hubs = [iri for iri, n in counts.items() if n > page]
    parts = await gather_or_cancel(
        *(
            _group(client, group, rules, limits)
            for group in groups({i: n for i, n in counts.items() if n <= page}, page)
        ),
        *([_counted(client, hubs, rules, limits)] if hubs else []),
    )
    merged = HopStatements()
    for part in parts:
        merged.merge(part)
    bare = [iri for iri in iris if iri not in counts]  # no edges: entities or not, the counts do not say
    if bare:
        identities = await read_identities(client, bare, rules.label_predicates, rules.languages, limits)
        merged.ends.update(identities)
    return merged


async def _one_query(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings
) -> HopStatements | None:
    """The hop of ``iris`` from one query; None when the answer would pass the rows a request may ask for."""
    page = page_size(client, limits)
    query = queries.hop_query(
        iris, rules.label_predicates, rules.languages, page + 1, type_predicate=limits.type_predicate
    )
    rows = await client.bindings(query)
    if overflowed(client, len(rows), page):
        return None
    hop = _parse(rows)
    _cut(hop, limits.edge_limit)
    return hop


async def _group(client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings) -> HopStatements:
    """A group counted to fit in one answer; read the counted way if it does not after all (the graph changed)."""
    found = await _one_query(client, iris, rules, limits)
    return found if found is not None else await _counted(client, iris, rules, limits)


def _parse(rows: list[dict[str, Any]]) -> HopStatements:
    hop = HopStatements()
    edges, ends = hop.edges, hop.ends
    for row in rows:
        if "e" not in row:  # an asked entity's own identity
            identity = ends.get(row["o"]["value"])
            if identity is None:
                identity = ends[row["o"]["value"]] = Identity()
            add_identity_row(identity, row)
            continue
        entity = row["e"]["value"]
        pairs = edges.get(entity)
        if pairs is None:
            pairs = edges[entity] = ({}, {})
        outgoing = row.get("out")
        if outgoing is not None:
            other = outgoing["value"]
            pairs[0][(row["p"]["value"], other)] = None
        else:
            other = row["in"]["value"]
            pairs[1][(row["p"]["value"], other)] = None
        if "dangling" in row:
            ends[other] = None
            continue
        identity = ends.get(other)
        if identity is None:
            identity = ends[other] = Identity()
        add_identity_row(identity, row)
    return hop


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


async def _counted(
    client: SparqlClient, iris: Sequence[str], rules: LabelRules, limits: FetchSettings
) -> HopStatements:
    """The hop of hubs, whose rows do not fit in one answer: counted fetches, then their own and their ends'
    identities."""
    outgoing, incoming = await gather_or_cancel(
        fetch_statements(client, iris, "out", limits), fetch_statements(client, iris, "in", limits)
    )
    hop = HopStatements(cuts=[*outgoing.cuts, *incoming.cuts])
    for iri in outgoing.found.keys() | incoming.found.keys():
        hop.edges[iri] = (
            dict.fromkeys((p.value, o.value) for p, o in outgoing.found.get(iri, [])),
            dict.fromkeys((p.value, o.value) for p, o in incoming.found.get(iri, [])),
        )
    others = {other for pairs in hop.edges.values() for direction in pairs for _, other in direction}
    identities = await read_identities(
        client, sorted(others | set(iris)), rules.label_predicates, rules.languages, limits
    )
    hop.ends = {other: identities.get(other) for other in others}
    hop.ends.update((iri, identities[iri]) for iri in iris if iri in identities)
    return hop
