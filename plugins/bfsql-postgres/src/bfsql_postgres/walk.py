"""The whole breadth-first walk as one SQL statement (the ``traverse`` primitive), and its answer.

The statement keeps the frontier in the database: each hop is a chain of common table
expressions that reads the edges of the previous level, cuts hubs, looks up the types of the
ends not reached before, admits the new level (the first by id when ``max_nodes`` would be
passed) and keeps the edges whose other end was reached. Only counts, the cuts, the schema and
one page of nodes and their edges come back: a walk over millions of edges sends a few hundred
rows. The rules are those of the engine's hop walk (:func:`bfsql.engine.traverse.expand`):

* a node's rows are its distinct triples, both ways (a self-loop once), without those whose
  other end is a merged entity; a hub (more than ``max_edges_per_node`` rows) keeps its first
  rows in ``(subject, predicate, object)`` code-point order;
* a row whose other end was reached at an earlier level, or at the level being expanded, keeps
  its edge; one whose other end is no entity is dangling (counted per row); one to an entity of
  an excluded type notes that type and the row's predicate; the others propose a new node;
* when the new nodes would pass ``max_nodes``, the first by id (code-point order) are kept,
  the others counted as cut, and the walk stops; the last hop's nodes are not expanded.

An edge may be kept twice, once from each end: it is counted from its earlier end (answer
order: level, then id), and from its later end only where the earlier end, a hub, had cut it.
It belongs to the page holding its later end. In a walk without hubs that rule needs no row of
its own: each hop's rows are aggregated by other end and predicate (which gives the next level
too), a row to the next level counts, the rows within a level count half (each such edge is
a row from both ends; a self-loop is one row and counts), a row back to an earlier level does
not; only the page's edges are picked out row by row. A walk with hubs judges every row.

The plan must not depend on the sizes PostgreSQL guesses (the pool forces generic plans, planned
for a frontier of a few ids): the relationship and entity tables are only probed by their
indexes with ``= ANY(ARRAY(...))`` of a level (and, to find hubs, per node of a level by
``LIMIT`` cap + 1), and every membership test is a hashed subquery
(``IN (SELECT ...) IS TRUE``, which the planner cannot turn into a join that might rescan a
level once per row). So a walk's cost is that of the index probes of the ids it visits, plus
hashing, for a 50-node answer as for a hub's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from bfsql import Edge, Expansion, Reached, Survey, page_edges, tally
from bfsql_postgres.layout import StoreLayout

__all__ = ["survey_of_expansion", "survey_of_rows", "traverse_sql"]

_C = 'COLLATE "C"'


def _not_merged(layout: StoreLayout, column: str) -> str:
    """`` AND`` the end ``column`` is no merged entity (for the hub cap, which counts a node's visible
    rows), or nothing in a store without any."""
    merged = "m.status::text = 'merged'"
    if not layout.merged:
        return ""
    if layout.merged_ids is not None:  # few: one hashed set
        return f" AND NOT {_member(column, f'SELECT m.entity_id::text FROM entity m WHERE {merged}')}"
    return f" AND NOT EXISTS (SELECT FROM entity m WHERE m.entity_id = {column} AND {merged})"


def _member(expression: str, subquery: str) -> str:
    """``expression`` is among the rows of ``subquery``, tested through a hashed set.

    ``IS TRUE`` keeps the planner from making the test a join (whose generic plan may rescan a
    level for every row).
    """
    return f"(({expression}) IN ({subquery})) IS TRUE"


def _levels(levels: Iterable[int]) -> str:
    """The ids of ``levels``, as one subquery."""
    return " UNION ALL ".join(f"SELECT id FROM l{n}" for n in levels)


_NODE = "CASE WHEN out THEN s ELSE o END"
"""The end of a row's edge that was expanded (rows are ``(s, p, o, out)``: ``out`` when it is the subject)."""
_OTHER = "CASE WHEN out THEN o ELSE s END"
"""The other end of a row's edge."""
_LATER = f"(other_level > level OR (other_level = level AND {_OTHER} {_C} >= {_NODE}))"
"""A kept row's other end comes at or after its node in answer order (level, then id)."""


def _within_caps(hop: int, columns: str) -> str:
    """``columns`` of the rows of hop ``hop`` within the hub cap: the rows of the nodes that are no hub
    (every row while there is none), then the hubs' first rows."""
    hubs = f"SELECT node FROM g{hop}"
    return (
        f"SELECT {columns} FROM r{hop} WHERE NOT (EXISTS (SELECT FROM g{hop}) AND {_member(_NODE, hubs)}) "
        f"UNION ALL SELECT {columns} FROM kh{hop}"
    )


def _hop(layout: StoreLayout, hop: int) -> str:
    """The expressions of hop ``hop``: expand level ``hop - 1`` into level ``hop``.

    ``r`` the rows of the frontier (none once a hop was cut), ``g`` its hubs with their row
    counts (looked for only when there are more rows than the cap, and counted only for the nodes
    with more index entries than the cap), ``kh`` the hubs' rows within the cap, ``w`` the rows
    within the caps by other end and predicate (with the self-loops among them), ``u`` the other
    ends not reached before with the number of rows leading to each, ``t`` those that are
    entities, ``n`` the room and the count of admissible ones, ``l`` the new level, ``c`` the
    running total and the cut.
    """
    h, before = hop, hop - 1
    distinct = "" if layout.unique_keys else "DISTINCT "
    gate = "" if hop == 1 else f" WHERE (SELECT cut FROM c{before}) = 0"
    frontier = f"ARRAY(SELECT id FROM l{before}{gate})"
    visible = _not_merged(layout, _OTHER)
    merged = "coalesce(e.status::text = 'merged', FALSE)" if layout.merged else "FALSE"
    admissible = "NOT merged AND NOT type = ANY($4::text[])"
    # A hub has more than $3 rows: only the nodes with as many index entries are counted (each end's entries
    # read up to the cap, by the index alone).
    entries = "(SELECT count(*) FROM (SELECT FROM relationship r WHERE r.{end} = f.id LIMIT $3::bigint + 1) e)"
    candidates = (f"SELECT f.id FROM l{before} f WHERE {entries.format(end='subject_id')} + "
                  f"{entries.format(end='object_id')} > $3::bigint")
    return f"""
r{h} AS MATERIALIZED (
    SELECT {distinct}r.subject_id::text AS s, r.predicate::text AS p, r.object_id::text AS o, TRUE AS out
    FROM relationship r WHERE r.subject_id = ANY({frontier})
    UNION ALL
    SELECT {distinct}r.subject_id::text, r.predicate::text, r.object_id::text, FALSE
    FROM relationship r
    WHERE r.object_id = ANY({frontier}) AND r.subject_id <> r.object_id
),
g{h} AS MATERIALIZED (
    SELECT {_NODE} AS node, count(*) AS degree FROM r{h}
    WHERE EXISTS (SELECT FROM r{h} OFFSET $3::bigint) AND {_member(_NODE, candidates)}{visible}
    GROUP BY 1 HAVING count(*) > $3::bigint
),
kh{h} AS MATERIALIZED (
    SELECT node, s, p, o, out FROM (
        SELECT {_NODE} AS node, s, p, o, out,
               row_number() OVER (PARTITION BY {_NODE} ORDER BY s {_C}, p {_C}, o {_C}) AS rank
        FROM r{h} WHERE EXISTS (SELECT FROM g{h}) AND {_member(_NODE, f"SELECT node FROM g{h}")}{visible}
    ) ranked WHERE rank <= $3::bigint
),
w{h} AS MATERIALIZED (
    SELECT {_OTHER} AS other, p, count(*) AS rows, count(*) FILTER (WHERE s = o) AS loops FROM r{h}
    WHERE NOT EXISTS (SELECT FROM g{h}) GROUP BY 1, 2
    UNION ALL
    SELECT other, p, count(*), count(*) FILTER (WHERE s = o)
    FROM ({_within_caps(h, f"{_OTHER} AS other, p, s, o")}) rows WHERE EXISTS (SELECT FROM g{h}) GROUP BY other, p
),
u{h} AS MATERIALIZED (
    SELECT other, sum(rows) AS rows FROM w{h} GROUP BY other HAVING NOT {_member("other", _levels(range(hop)))}
),
t{h} AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name, {merged} AS merged
    FROM entity e WHERE e.entity_id = ANY(ARRAY(SELECT other FROM u{h}))
),
n{h} AS MATERIALIZED (
    SELECT total, $2::bigint - total AS room, (SELECT count(*) FROM t{h} WHERE {admissible}) AS found FROM c{before}
),
l{h} AS MATERIALIZED (
    SELECT id, type, name FROM t{h} WHERE (SELECT found <= room FROM n{h}) AND {admissible}
    UNION ALL
    (SELECT id, type, name FROM t{h} WHERE (SELECT found > room FROM n{h}) AND {admissible}
     ORDER BY id {_C} LIMIT (SELECT greatest(room, 0) FROM n{h}))
),
c{h} AS MATERIALIZED (
    SELECT total + least(found, greatest(room, 0)) AS total, greatest(found - room, 0) AS cut FROM n{h}
)"""


def _kept(hop: int) -> str:
    """The rows of hop ``hop`` whose other end was reached, with both ends' levels, in a walk with hubs (none
    without: :func:`_listed` lists its page's edges, and its counts come from the hops' aggregates).

    ``OFFSET 0`` keeps the level test from being pushed into the rows (it would be computed twice).
    """
    rows = f"SELECT * FROM ({_within_caps(hop, 's, p, o, out')}) rows WHERE NOT (SELECT yes FROM simple)"
    tests = " ".join(f"WHEN {_member(_OTHER, f'SELECT id FROM l{n}')} THEN {n}" for n in range(hop, -1, -1))
    leveled = f"SELECT s, p, o, out, {hop - 1} AS level, CASE {tests} END AS other_level FROM ({rows} OFFSET 0) rows"
    return f"SELECT * FROM ({leveled} OFFSET 0) leveled WHERE other_level IS NOT NULL"


def _listed(hop: int) -> str:
    """The edges of the page among the rows of hop ``hop`` in a walk without hubs: a row to the next level
    whose other end is on the page, and a row within a level counted (its other end the later) whose other end
    is on the page. (A row back to an earlier level is counted from that level.)"""
    return (
        f"SELECT s, p, o FROM r{hop} WHERE (SELECT yes FROM simple) AND ("
        f"{_member(_OTHER, f'SELECT id FROM page WHERE level = {hop}')} OR ({_OTHER} {_C} >= {_NODE} AND "
        f"{_member(_OTHER, f'SELECT id FROM page WHERE level = {hop - 1}')}))"
    )


def traverse_sql(layout: StoreLayout, hops: int) -> str:
    """The walk of ``hops`` hops: ``$1`` seeds, ``$2`` max_nodes, ``$3`` max_edges_per_node,
    ``$4`` excluded types, ``$5`` offset, ``$6`` count of the page.

    Rows ``(kind, a, b, c, n)``: ``S`` a seed found (``a``); ``N`` a node of the page (``a`` id,
    ``b`` type, ``c`` name, ``n`` level); ``E`` an edge of the page (``a b c``: the triple; ``n`` 0,
    it is counted with its predicate); ``P`` a predicate of the schema (``b``) with a number of its
    edges (``n``: the rows of one predicate add up to its edges; 0 for one seen only on the way to
    an excluded type); ``H`` a hub cut (``a``, with ``n`` rows); ``T`` a type of the schema
    (``a``) with the number of reached nodes of it (``n``; 0 for a type seen only among excluded
    neighbours); ``C`` a count (``a``: ``nodes``, ``cut`` or ``dangling``).

    A row whose other end is new at the next level (most rows of a big walk) is counted by the
    hop's aggregate by other end and predicate (``w``), which also gives the next level; only the
    rows back to a level reached before or to the page are looked at one by one (:func:`_kept`).
    So a big walk's rows are read twice after the index scans: once into that aggregate (and the
    hub count, ``a``), once to pick out those few rows.
    """
    distinct = "" if layout.unique_keys else "DISTINCT "
    each = range(1, hops + 1)
    steps = ",".join(_hop(layout, hop) for hop in each)
    every = " UNION ALL ".join(f"SELECT id, type, name, {n} AS level FROM l{n}" for n in range(hops + 1))
    kept = " UNION ALL ".join(f"({_kept(h)})" for h in each)
    listed = " UNION ALL ".join(f"({_listed(h)})" for h in each)
    hubs = " UNION ALL ".join(f"SELECT node, degree FROM g{h}" for h in each)
    within_caps = " UNION ALL ".join(f"SELECT node, s, p, o FROM kh{h}" for h in each)
    excluded = " UNION ALL ".join(f"SELECT id, type, {h} AS hop FROM t{h} WHERE NOT merged AND type = ANY($4::text[])"
                                  for h in each)
    excluded_predicates = " UNION ALL ".join(
        f"SELECT p FROM ({_within_caps(h, f'p, {_OTHER} AS other')}) rows "
        f"WHERE EXISTS (SELECT FROM x WHERE hop = {h}) AND {_member('other', f'SELECT id FROM x WHERE hop = {h}')}"
        for h in each
    )
    # Without hubs, an edge is counted from its earlier end: the rows to the next level each, the rows within a
    # level (each edge twice, from both ends, but a self-loop once) half, the rows back to an earlier level none.
    aggregated = " UNION ALL ".join(
        f"SELECT p, sum(rows)::bigint FROM w{h} WHERE {_member('other', f'SELECT id FROM l{h}')} GROUP BY p "
        f"UNION ALL SELECT p, ((sum(rows) - sum(loops)) / 2 + sum(loops))::bigint FROM w{h} "
        f"WHERE {_member('other', f'SELECT id FROM l{h - 1}')} GROUP BY p"
        for h in each
    )
    dangling = " + ".join(
        f"(SELECT coalesce(sum(rows), 0) FROM u{h} WHERE NOT {_member('other', f'SELECT id FROM t{h}')})" for h in each
    )
    cuts = " + ".join(f"(SELECT cut FROM c{h})" for h in each)
    # An edge kept from both ends counts from its earlier end, and from its later end only where the
    # earlier end, a hub, cut it; it belongs to the page of its later end.
    counted = (
        f"{_LATER} OR ({_member(_OTHER, f'SELECT node FROM ({hubs}) hubs')} "
        f"AND NOT {_member(f'{_OTHER}, s, p, o', f'SELECT * FROM ({within_caps}) within_caps')})"
    )
    owner = f"CASE WHEN {_LATER} THEN {_OTHER} ELSE {_NODE} END"
    owned = f"(SELECT page FROM whole) OR {_member(owner, 'SELECT id FROM page')}"
    return f"""
WITH l0 AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name
    FROM entity e WHERE e.entity_id = ANY($1::text[]){_visible(layout)}
),
c0 AS MATERIALIZED (SELECT count(*) AS total, 0::bigint AS cut FROM l0),{steps},
v AS MATERIALIZED ({every}),
x AS MATERIALIZED ({excluded}),
whole AS MATERIALIZED (SELECT $5::bigint = 0 AND $6::bigint >= count(*) AS page FROM v),
simple AS MATERIALIZED (SELECT NOT EXISTS ({hubs}) AS yes),
page AS MATERIALIZED (
    SELECT id, type, name, level FROM v WHERE (SELECT page FROM whole)
    UNION ALL
    (SELECT id, type, name, level FROM v WHERE NOT (SELECT page FROM whole)
     ORDER BY level, id {_C} OFFSET $5::bigint LIMIT $6::bigint)
),
counted AS MATERIALIZED (
    SELECT s, p, o, counted, counted AND ({owned}) AS listed FROM (
        SELECT s, p, o, out, level, other_level, {counted} AS counted FROM ({kept}) leveled OFFSET 0
    ) kept
)
SELECT 'S', id, NULL, NULL, NULL::bigint FROM l0
UNION ALL
SELECT 'N', id, type, name, level FROM page
UNION ALL
SELECT 'H', node, NULL, NULL, degree FROM ({hubs}) hubs
UNION ALL
SELECT 'T', type, NULL, NULL, count(*) FROM v GROUP BY type
UNION ALL
SELECT DISTINCT 'T', type, NULL, NULL, 0::bigint FROM x
UNION ALL
SELECT DISTINCT 'E', s, p, o, 0::bigint FROM (SELECT s, p, o FROM counted WHERE listed UNION ALL {listed}) listed
UNION ALL
SELECT 'P', NULL, p, NULL, count(*) FILTER (WHERE counted) FROM counted WHERE NOT (SELECT yes FROM simple) GROUP BY p
UNION ALL
SELECT 'P', NULL, p, NULL, n FROM ({aggregated}) aggregated(p, n) WHERE (SELECT yes FROM simple)
UNION ALL
SELECT DISTINCT 'P', NULL, p, NULL, 0::bigint FROM ({excluded_predicates}) excluded
UNION ALL
SELECT 'C', 'nodes', NULL, NULL, (SELECT count(*) FROM v)
UNION ALL
SELECT 'C', 'cut', NULL, NULL, {cuts}
UNION ALL
SELECT 'C', 'dangling', NULL, NULL, ({dangling})::bigint
"""


def _visible(layout: StoreLayout) -> str:
    return " AND e.status::text IS DISTINCT FROM 'merged'" if layout.merged else ""


def survey_of_rows(seeds: list[str], rows: Iterable[Any]) -> Survey:
    """The :class:`~bfsql.Survey` of the statement's rows (see :func:`traverse_sql`)."""
    found: set[str] = set()
    page: list[Reached] = []
    edges: list[Edge] = []
    capped: dict[str, int] = {}
    types: dict[str, int] = {}
    predicates: dict[str, int] = {}
    counts: dict[str, int] = {}
    for kind, a, b, c, n in rows:
        if kind == "N":
            page.append(Reached(a, b, c, n))
        elif kind == "E":  # a, b, c: the triple (n: 0, counted with the rows of its predicate)
            edges.append(Edge(a, b, c))
            predicates[b] = predicates.get(b, 0)
        elif kind == "S":
            found.add(a)
        elif kind == "H":
            capped[a] = n
        elif kind == "T":  # a: a type, with the nodes of it reached (n)
            types[a] = types.get(a, 0) + n
        elif kind == "P":  # b: a predicate, with the edges of it counted and not listed (n)
            predicates[b] = predicates.get(b, 0) + n
        else:
            counts[a] = n
    page.sort(key=lambda node: (node.distance, node.id))
    edges.sort()
    return Survey(
        node_count=counts["nodes"],
        edge_count=sum(predicates.values()),
        page=page,
        edges=edges,
        entity_types=sorted(types),
        predicates=sorted(predicates),
        unknown_seeds=[s for s in dict.fromkeys(seeds) if s not in found],
        capped=capped,
        nodes_cut=counts["cut"],
        dangling_edges=counts["dangling"],
        entity_type_counts={t: n for t, n in sorted(types.items()) if n},
        predicate_counts={p: n for p, n in sorted(predicates.items()) if n},
    )


def survey_of_expansion(reached: Expansion, offset: int, count: int) -> Survey:
    """The :class:`~bfsql.Survey` of a walk taken hop by hop (the engine's :class:`Expansion`), with its page."""
    order = reached.order()
    listed = order[offset : offset + count]
    edges = page_edges(order, list(reached.edges), offset, offset + len(listed))
    return Survey(
        node_count=len(order),
        edge_count=len(reached.edges),
        page=[Reached(i, reached.types[i], reached.names[i], reached.distance[i]) for i in listed],
        edges=cast(list[Edge], edges),  # the walk's own tuples: a hub's 2-hop survey lists 88k of them
        entity_types=sorted(set(reached.types.values()) | reached.excluded_types),
        predicates=sorted(reached.predicates | reached.excluded_predicates),
        unknown_seeds=reached.unknown_seeds,
        capped=reached.capped_nodes,
        nodes_cut=reached.nodes_cut,
        dangling_edges=reached.dangling_edges,
        entity_type_counts=tally(map(reached.types.__getitem__, order)),
        predicate_counts=tally(e[1] for e in reached.edges),
    )
