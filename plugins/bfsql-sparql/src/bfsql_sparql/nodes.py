"""What the endpoint says about entities themselves: identities (types, labels) and metadata statements.

Both are read with one query per chunk of ``batch_size`` ids (chunks run concurrently).
Metadata statements are asked for with a row limit; a chunk whose answer passes it is
read again the counted way (:mod:`bfsql_sparql.fetch`), which cuts an entity's literals
at ``edge_limit`` and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bfsql import gather_or_cancel
from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient, Term, term
from bfsql_sparql.fetch import FetchSettings, chunks, fetch_statements, overflowed, page_size

__all__ = ["Identity", "NodeStatements", "add_identity_row", "read_identities", "read_node_statements", "settle"]


@dataclass
class Identity:
    """An entity's IRI types and label literals ``(predicate IRI, text, language)``."""

    types: set[str] = field(default_factory=set)
    labels: set[tuple[str, str, str | None]] = field(default_factory=set)


def add_identity_row(identity: Identity, row: dict[str, Any]) -> None:
    """Add the ``?t`` and ``?lp ?l`` of one raw binding row to ``identity``."""
    if "t" in row:
        identity.types.add(row["t"]["value"])
    if "l" in row and "lp" in row:
        literal = row["l"]
        identity.labels.add((row["lp"]["value"], literal["value"], literal.get("xml:lang")))


async def read_identities(
    client: SparqlClient,
    iris: Iterable[str],
    predicates: Sequence[str],
    languages: Sequence[str],
    limits: FetchSettings,
) -> dict[str, Identity]:
    """Every entity among ``iris`` with its types and its literals of ``predicates``; other ids are absent."""

    async def chunk(part: Sequence[str]) -> list[dict[str, Any]]:
        query = queries.identities_query(part, predicates, languages, type_predicate=limits.type_predicate)
        return await client.bindings(query)

    found: dict[str, Identity] = {}
    for rows in await gather_or_cancel(*(chunk(part) for part in chunks(list(dict.fromkeys(iris)), limits.batch_size))):
        for row in rows:
            entity = found.get(row["e"]["value"])
            if entity is None:
                entity = found[row["e"]["value"]] = Identity()
            add_identity_row(entity, row)
    return found


@dataclass
class NodeStatements:
    """An entity's IRI types and literal statements ``(predicate IRI, literal)``, and whether they were cut."""

    types: set[str] = field(default_factory=set)
    literals: list[tuple[str, Term]] = field(default_factory=list)
    cut: tuple[int, int] | None = None
    """``(total, returned)`` when only the first ``edge_limit`` literals were kept."""


async def read_node_statements(
    client: SparqlClient, iris: Sequence[str], languages: Sequence[str], limits: FetchSettings
) -> dict[str, NodeStatements]:
    """Types and literal statements of every entity among ``iris``; other ids are absent."""
    parts = await gather_or_cancel(
        *(
            _node_statements(client, part, languages, limits)
            for part in chunks(list(dict.fromkeys(iris)), limits.batch_size)
        )
    )
    return {iri: statements for part in parts for iri, statements in part.items()}


async def _node_statements(
    client: SparqlClient, iris: Sequence[str], languages: Sequence[str], limits: FetchSettings
) -> dict[str, NodeStatements]:
    page = page_size(client, limits)
    query = queries.node_statements_query(iris, languages, page + 1, type_predicate=limits.type_predicate)
    rows = await client.bindings(query)
    if overflowed(client, len(rows), page):
        return await _counted_node_statements(client, iris, languages, limits)
    found: dict[str, NodeStatements] = {}
    for row in rows:
        entity = found.get(row["e"]["value"])
        if entity is None:
            entity = found[row["e"]["value"]] = NodeStatements()
        if "t" in row:
            entity.types.add(row["t"]["value"])
        if "p" in row and "v" in row:
            entity.literals.append((row["p"]["value"], term(row["v"])))
    settle(found.values(), limits.edge_limit)
    return found


def settle(found: Iterable[NodeStatements], edge_limit: int) -> None:
    """Drop repeated literals of each entity and keep at most ``edge_limit``, noting the cut."""
    for entity in found:
        unique = list(dict.fromkeys(entity.literals))
        if len(unique) > edge_limit:
            # The order the counted way pages in (ORDER BY ?p ?o), so the same values are kept either way.
            entity.cut = (len(unique), edge_limit)
            unique = sorted(unique, key=lambda pv: (pv[0], pv[1].value))[:edge_limit]
        entity.literals = unique


async def _counted_node_statements(
    client: SparqlClient, iris: Sequence[str], languages: Sequence[str], limits: FetchSettings
) -> dict[str, NodeStatements]:
    identities, literals = await gather_or_cancel(
        read_identities(client, iris, (), languages, limits),
        fetch_statements(client, iris, "literal", limits, languages),
    )
    cuts = {cut.iri: (cut.total, cut.returned) for cut in literals.cuts}
    return {
        iri: NodeStatements(identity.types, [(p.value, o) for p, o in literals.found.get(iri, [])], cuts.get(iri))
        for iri, identity in identities.items()
    }
