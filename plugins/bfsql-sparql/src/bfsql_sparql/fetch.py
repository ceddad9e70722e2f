"""Statements of many entities when one answer cannot hold them: count first, then fetch in row-bounded batches.

A hop takes this way only for hubs, entities whose rows alone pass ``max_rows``; a
metadata read when its one query per chunk would pass it (see :func:`overflowed`). For
a batch of ids, one
query counts each entity's distinct statements (and says which ids are entities at all).
Entities within ``edge_limit`` are then fetched together, as many per request as fit in
``max_rows`` (or the endpoint's own row cap, once it has announced one); an entity with
more statements is fetched alone, ordered, page by page, up to ``edge_limit``, and the
cut is recorded, never hidden. Fetched rows are checked against the counts, so an
endpoint that silently caps result sizes is caught and reported too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from bfsql import gather_or_cancel
from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient, SparqlEndpointError, Term
from bfsql_sparql.queries import Direction

__all__ = ["Cut", "FetchSettings", "Statements", "chunks", "fetch_statements", "groups", "overflowed", "page_size"]

logger = logging.getLogger("bfsql.sparql")


@dataclass(frozen=True)
class FetchSettings:
    """Bounds of a fetch, and the predicate that states types (whose statements are not edges)."""

    batch_size: int
    """Ids per VALUES block."""
    edge_limit: int
    """Statements kept per entity and direction."""
    max_rows: int
    """Rows asked for in one request."""
    type_predicate: str
    """Full IRI of the type predicate (rdf:type unless configured)."""


@dataclass(frozen=True)
class Cut:
    """An entity whose statements in one direction were not all returned."""

    iri: str
    direction: Direction
    total: int
    returned: int


@dataclass
class Statements:
    """The statements of the entities among the requested ids, and what was cut."""

    found: dict[str, list[tuple[Term, Term]]] = field(default_factory=dict)
    """Entity IRI to its ``(predicate, other end)`` pairs; ids that are not entities are absent."""
    cuts: list[Cut] = field(default_factory=list)


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def page_size(client: SparqlClient, limits: FetchSettings) -> int:
    """Rows per request: ``max_rows``, lowered to the endpoint's own cap once it announced one."""
    return min(limits.max_rows, client.row_cap or limits.max_rows)


def overflowed(client: SparqlClient, rows: int, page: int) -> bool:
    """Whether an answer asked with ``LIMIT page + 1`` may lack rows: it passed ``page``, or the endpoint's cap."""
    return rows > page or (client.row_cap is not None and rows >= client.row_cap)


def groups(counts: dict[str, int], max_rows: int) -> Iterator[list[str]]:
    """Ids packed in order so that each group's statements add up to at most ``max_rows``."""
    group: list[str] = []
    rows = 0
    for iri, count in counts.items():
        if group and rows + count > max_rows:
            yield group
            group, rows = [], 0
        group.append(iri)
        rows += count
    if group:
        yield group


async def _count(
    client: SparqlClient, iris: Sequence[str], direction: Direction, languages: Sequence[str], limits: FetchSettings
) -> dict[str, int]:
    rows = await client.select(queries.count_query(iris, direction, languages, type_predicate=limits.type_predicate))
    counts = {row["e"].value: int(row["n"].value) for row in rows if "e" in row and "n" in row}
    return {iri: counts[iri] for iri in iris if iri in counts}


async def _fetch_group(
    client: SparqlClient, iris: list[str], direction: Direction, languages: Sequence[str], limits: FetchSettings
) -> dict[str, list[tuple[Term, Term]]]:
    found: dict[str, list[tuple[Term, Term]]] = {iri: [] for iri in iris}
    for row in await client.select(
        queries.fetch_query(iris, direction, languages, type_predicate=limits.type_predicate)
    ):
        entity = row.get("e")
        if entity is not None and entity.value in found and "p" in row and "o" in row:
            found[entity.value].append((row["p"], row["o"]))
    return found


async def _fetch_paged(
    client: SparqlClient, iri: str, direction: Direction, languages: Sequence[str], limits: FetchSettings
) -> list[tuple[Term, Term]]:
    """One entity's statements, ordered, page by page, up to ``edge_limit``."""
    pairs: list[tuple[Term, Term]] = []
    while len(pairs) < limits.edge_limit:
        page = min(page_size(client, limits), limits.edge_limit - len(pairs))
        query = queries.fetch_query(
            [iri], direction, languages, limit=page, offset=len(pairs), type_predicate=limits.type_predicate
        )
        try:
            rows = await client.select(query)
        except SparqlEndpointError as exc:
            if not pairs:
                raise
            # Virtuoso refuses sorted pages beyond its row cap; the count check reports what is missing.
            logger.warning("sparql: stopped paging the statements of %s: %s", iri, exc.message)
            break
        pairs += [(row["p"], row["o"]) for row in rows if "p" in row and "o" in row]
        if len(rows) < page:
            break
    return pairs


async def _fetch_counted(
    client: SparqlClient,
    counts: dict[str, int],
    direction: Direction,
    languages: Sequence[str],
    limits: FetchSettings,
) -> dict[str, list[tuple[Term, Term]]]:
    page = page_size(client, limits)
    small = {iri: n for iri, n in counts.items() if 0 < n <= min(limits.edge_limit, page)}
    paged = [iri for iri, n in counts.items() if n > min(limits.edge_limit, page)]
    fetched = await gather_or_cancel(
        *(_fetch_group(client, group, direction, languages, limits) for group in groups(small, page))
    )
    pages = await gather_or_cancel(*(_fetch_paged(client, iri, direction, languages, limits) for iri in paged))
    found: dict[str, list[tuple[Term, Term]]] = {iri: [] for iri in counts}
    for group in fetched:
        found.update(group)
    found.update(zip(paged, pages, strict=True))
    return found


async def _fetch_chunk(
    client: SparqlClient, iris: Sequence[str], direction: Direction, languages: Sequence[str], limits: FetchSettings
) -> Statements:
    counts = await _count(client, iris, direction, languages, limits)
    page = page_size(client, limits)
    found = await _fetch_counted(client, counts, direction, languages, limits)
    short = {iri: n for iri, n in counts.items() if len(found[iri]) < min(n, limits.edge_limit)}
    if short and page_size(client, limits) < page:
        # The endpoint announced a row cap below the page we used: fetch the short ones again within it.
        found.update(await _fetch_counted(client, short, direction, languages, limits))
    result = Statements(found=found)
    for iri, expected in counts.items():
        got = len(found[iri])
        if got < expected:
            result.cuts.append(Cut(iri, direction, expected, got))
    return result


async def fetch_statements(
    client: SparqlClient,
    iris: Sequence[str],
    direction: Direction,
    limits: FetchSettings,
    languages: Sequence[str] = (),
) -> Statements:
    """The statements in ``direction`` of every entity among ``iris`` (chunks run concurrently)."""
    unique = list(dict.fromkeys(iris))
    parts = await gather_or_cancel(
        *(_fetch_chunk(client, chunk, direction, languages, limits) for chunk in chunks(unique, limits.batch_size))
    )
    merged = Statements()
    for part in parts:
        merged.found.update(part.found)
        merged.cuts.extend(part.cuts)
    return merged
