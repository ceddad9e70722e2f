"""The whole breadth-first walk as one SQL statement (the ``traverse`` primitive), and its answer.

The statement keeps the frontier in the database: each hop is a chain of common table
expressions that reads the edges of the previous level, cuts hubs, looks up the types of the
ends not reached before, admits the new level and keeps the edges whose other end was reached.
The walk is never cut at a number of nodes (``max_nodes`` bounds the page, not the walk): the
counts are the whole traversal's. Only counts, the cuts, the schema and one page of nodes and
their edges come back: a walk over millions of edges sends a few hundred rows. The rules are
those of the engine's hop walk (:func:`bfsql.engine.traverse.expand`):

* a node's rows are its distinct triples, both ways (a self-loop once), without those whose
  other end is a merged entity; a hub (more than ``max_edges_per_node`` rows) keeps its first
  rows in ``(subject, predicate, object)`` code-point order;
* a row whose other end was reached at an earlier level, or at the level being expanded, keeps
  its edge; one whose other end is no entity is dangling (counted per row); one to an entity of
  an excluded type notes that type and the row's predicate; the others propose a new node,
  and every new node is admitted; the last hop's nodes are not expanded.

An edge may be kept twice, once from each end: it is counted from its earlier end (answer
order: level, then id), and from its later end only where the earlier end, a hub, had cut it.
It belongs to the page holding its later end. That rule needs no row of its own: each hop's
rows are aggregated by other end and predicate (which gives the next level too), a row to the
next level counts, the rows within a level count half (each such edge is a row from both ends;
a self-loop is one row and counts), a row back to an earlier level does not; the few rows to a
hub that cut their edge add what the hub's missing row would have counted (read from the hubs'
own rows past the cap). Only the page's edges are judged row by row, from the page's nodes' rows.

The plan must not depend on the sizes PostgreSQL guesses (the pool forces generic plans, planned
for a frontier of a few ids): the relationship and entity tables are only probed by their
indexes with ``= ANY(ARRAY(...))`` of a level (of the few nodes with more rows than the cap,
of the page's nodes), and every membership test is a hashed subquery
(``IN (SELECT ...) IS TRUE``, which the planner cannot turn into a join that might rescan a
level once per row). So a walk's cost is that of the index probes of the ids it visits, plus
hashing, for a 50-node answer as for a hub's.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter
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


def _within_caps(hop: int, columns: str) -> str:
    """``columns`` of the rows of hop ``hop`` within the hub cap: the rows of the nodes that cannot be hubs
    (every row while there is none), then the first rows of those that may be (all of those that are not)."""
    candidates = f"SELECT node FROM c{hop}"
    return (
        f"SELECT {columns} FROM r{hop} WHERE NOT (EXISTS (SELECT FROM c{hop}) AND {_member(_NODE, candidates)}) "
        f"UNION ALL SELECT {columns} FROM hr{hop} WHERE rank <= $2::bigint"
    )


def _rows(layout: StoreLayout, ids: str, node: bool = False) -> str:
    """Every row of the entities ``ids`` (an array expression), both ways, as ``(s, p, o, out)`` (a self-loop
    once, as outgoing); ``node`` adds the entity each row belongs to, first."""
    distinct = "" if layout.unique_keys else "DISTINCT "
    out, incoming = ("r.subject_id::text AS node, ", "r.object_id::text, ") if node else ("", "")
    return (
        f"SELECT {distinct}{out}r.subject_id::text AS s, r.predicate::text AS p, r.object_id::text AS o, TRUE AS out "
        f"FROM relationship r WHERE r.subject_id = ANY({ids}) UNION ALL "
        f"SELECT {distinct}{incoming}r.subject_id::text, r.predicate::text, r.object_id::text, FALSE "
        f"FROM relationship r WHERE r.object_id = ANY({ids}) AND r.subject_id <> r.object_id"
    )


def _hop(layout: StoreLayout, hop: int) -> str:
    """The expressions of hop ``hop``: expand level ``hop - 1`` into level ``hop``.

    ``r`` the rows of the frontier, ``c`` the nodes with more of them than the cap (looked for only
    when the hop has more rows than the cap), ``hr`` their rows read again by their ids, without
    merged ends, and ranked in triple order (the first ``$2`` within the cap), ``g`` those of them
    that are hubs (more visible rows than the cap) with their row counts, ``w`` the rows within the
    caps by other end and predicate (with the self-loops among them), ``u`` the other ends not
    reached before with the number of rows leading to each, ``t`` those that are entities, ``l`` the
    new level: every admissible one (the walk is never cut).
    """
    h, before = hop, hop - 1
    distinct = "" if layout.unique_keys else "DISTINCT "
    visible = _not_merged(layout, _OTHER)
    merged = "coalesce(e.status::text = 'merged', FALSE)" if layout.merged else "FALSE"
    return f"""
r{h} AS MATERIALIZED ({_rows(layout, f"ARRAY(SELECT id FROM l{before})")}),
c{h} AS MATERIALIZED (
    SELECT {_NODE} AS node FROM r{h} WHERE EXISTS (SELECT FROM r{h} OFFSET $2::bigint)
    GROUP BY 1 HAVING count(*) > $2::bigint
),
hr{h} AS MATERIALIZED (
    SELECT node, s, p, o, out, row_number() OVER (PARTITION BY node ORDER BY s {_C}, p {_C}, o {_C}) AS rank
    FROM ({_rows(layout, f"ARRAY(SELECT node FROM c{h})", node=True)}) rows WHERE EXISTS (SELECT FROM c{h}){visible}
),
g{h} AS MATERIALIZED (SELECT node, count(*) AS degree FROM hr{h} GROUP BY node HAVING count(*) > $2::bigint),
w{h} AS MATERIALIZED (
    SELECT {_OTHER} AS other, p, count(*) AS rows, count(*) FILTER (WHERE s = o) AS loops FROM r{h}
    WHERE NOT EXISTS (SELECT FROM c{h}) GROUP BY 1, 2
    UNION ALL
    SELECT other, p, count(*), count(*) FILTER (WHERE s = o)
    FROM ({_within_caps(h, f"{_OTHER} AS other, p, s, o")}) rows WHERE EXISTS (SELECT FROM c{h}) GROUP BY other, p
),
u{h} AS MATERIALIZED (
    SELECT other, sum(rows) AS rows FROM w{h} GROUP BY other HAVING NOT {_member("other", _levels(range(hop)))}
),
t{h} AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name, {merged} AS merged
    FROM entity e WHERE e.entity_id = ANY(ARRAY(SELECT other FROM u{h}))
),
l{h} AS MATERIALIZED (SELECT id, type, name FROM t{h} WHERE NOT merged AND NOT type = ANY($3::text[]))"""


def _kept_by(end: str, expanded: bool) -> str:
    """The row of a kept edge from ``end`` (an expression) is one its walk followed: ``end`` was ``expanded``
    (a level before the last) and is no hub, or kept the edge among its first rows."""
    if not expanded:
        return "FALSE"
    return f"(NOT {_member(end, 'SELECT node FROM hubs')} OR {_member(f'{end}, s, p, o', 'SELECT * FROM kept')})"


def _cut_back(hop: int, hops: int) -> str:
    """The halves of the edges that a hub of hop ``hop`` cut from its rows but whose other end's row keeps
    (:func:`traverse_sql` counts edges in halves): two when that end lies a later level (its row back to the hub
    counts nothing otherwise), one when it lies the hub's level (its row counts the other half). Read from the
    hubs' rows past the cap, a few per hub."""
    later = _levels(range(hop - 1, hops))
    same = _member(_OTHER, f"SELECT id FROM l{hop - 1}")
    return (f"SELECT p, CASE WHEN {same} THEN 1 ELSE 2 END FROM hr{hop} WHERE rank > $2::bigint "
            f"AND {_member(_OTHER, later)} AND {_kept_by(_OTHER, True)}")


def _page_edges(layout: StoreLayout, hop: int, hops: int) -> str:
    """The kept edges owned by the page's nodes of level ``hop``: their rows (read again by id) whose other end
    lies an earlier level, or the same level and not after them, and which either end's walk followed."""
    node = _NODE
    at = " ".join(f"WHEN {_member(_OTHER, f'SELECT id FROM l{n}')} THEN {n}" for n in range(hop + 1))
    rows = _rows(layout, f"ARRAY(SELECT id FROM page WHERE level = {hop})")
    leveled = f"SELECT s, p, o, out, CASE {at} END AS other_level FROM ({rows}) rows"
    owned = f"other_level < {hop} OR (other_level = {hop} AND {_OTHER} {_C} <= {node})"
    kept = f"({_kept_by(_OTHER, True)} AND other_level < {hops}) OR {_kept_by(node, hop < hops)}"
    return f"SELECT s, p, o FROM ({leveled} OFFSET 0) leveled WHERE ({owned}) AND ({kept})"


def traverse_sql(layout: StoreLayout, hops: int) -> str:
    """The walk of ``hops`` hops: ``$1`` seeds, ``$2`` max_edges_per_node, ``$3`` excluded types, ``$4`` offset,
    ``$5`` count of the page.

    Rows ``(kind, a, b, c, n)``: ``S`` a seed found (``a``); ``N`` a node of the page (``a`` id,
    ``b`` type, ``c`` name, ``n`` level); ``E`` an edge of the page (``a b c``: the triple; ``n`` 0,
    it is counted with its predicate); ``P`` a predicate of the schema (``b``) with a number of its
    edges (``n``: the rows of one predicate add up to its edges; 0 for one seen only on the way to
    an excluded type); ``H`` a hub cut (``a``, with ``n`` rows); ``T`` a type of the schema
    (``a``) with the number of reached nodes of it (``n``; 0 for a type seen only among excluded
    neighbours); ``C`` a count (``a``: ``nodes`` or ``dangling``).

    An edge is counted from its earlier end, in halves: by the hops' aggregates by other end and predicate
    (``w``), a row to the next level two, a row within a level one (each such edge is a row from both ends; a
    self-loop, one row, two), a row back to an earlier level none; where a hub cut an edge from its own rows, the
    other end's row counts instead (:func:`_cut_back`, from the hubs' few rows past the cap). The page's edges
    are the rows of the page's nodes, read again by id and judged one by one (:func:`_page_edges`). So a big
    walk's rows are read once after the index scans, into that aggregate (twice when the hop has more rows than
    the cap: once to count each node's rows).
    """
    steps = ",".join(_hop(layout, hop) for hop in range(1, hops + 1))
    return f"""
WITH {_seed_level(layout)},{steps},
{_gathered(hops)}
{_answer(layout, hops)}"""


def _seed_level(layout: StoreLayout) -> str:
    """The expression ``l0``: the seeds ``$1`` that are visible entities, level 0."""
    distinct = "" if layout.unique_keys else "DISTINCT "
    return f"""l0 AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name
    FROM entity e WHERE e.entity_id = ANY($1::text[]){_visible(layout)}
)"""


def _gathered(hops: int) -> str:
    """The expressions gathering the ``hops`` hops: ``v`` every node reached with its level, ``x`` the excluded
    neighbours, ``hubs`` the hubs cut with their row counts, ``page`` the nodes listed (``$4`` offset, ``$5``
    count, in answer order), ``kept`` the rows within the cap that :func:`_kept_by` may be asked about: those of
    a page's node or to one (the page's edges), or to a hub (the edges a hub cut).

    Only those: a hub's 2 hops at R-MAT 23 keep 1.26M rows within the cap, and each test of them hashed its own
    copy of all of them."""
    each = range(1, hops + 1)
    every = " UNION ALL ".join(f"SELECT id, type, name, {n} AS level FROM l{n}" for n in range(hops + 1))
    excluded = " UNION ALL ".join(f"SELECT id, type, {h} AS hop FROM t{h} WHERE NOT merged AND type = ANY($3::text[])"
                                  for h in each)
    within = " UNION ALL ".join(f"SELECT node, s, p, o, out FROM hr{h} WHERE rank <= $2::bigint" for h in each)
    asked = (f"{_member(_OTHER, 'SELECT node FROM hubs')} OR {_member('node', 'SELECT id FROM page')} "
             f"OR {_member(_OTHER, 'SELECT id FROM page')}")
    return f"""v AS MATERIALIZED ({every}),
x AS MATERIALIZED ({excluded}),
hubs AS MATERIALIZED ({" UNION ALL ".join(f"SELECT node, degree FROM g{h}" for h in each)}),
page AS MATERIALIZED (
    SELECT id, type, name, level FROM v ORDER BY level, id {_C} OFFSET $4::bigint LIMIT $5::bigint
),
kept AS MATERIALIZED (SELECT node, s, p, o FROM ({within}) rows WHERE {asked})"""


def _answer(layout: StoreLayout, hops: int) -> str:
    """The rows :func:`traverse_sql` answers, from its expressions."""
    each = range(1, hops + 1)
    cut_back = " UNION ALL ".join(f"({_cut_back(h, hops)})" for h in each)
    listed = " UNION ALL ".join(f"({_page_edges(layout, n, hops)})" for n in range(hops + 1))
    excluded_predicates = " UNION ALL ".join(
        f"SELECT p FROM ({_within_caps(h, f'p, {_OTHER} AS other')}) rows "
        f"WHERE EXISTS (SELECT FROM x WHERE hop = {h}) AND {_member('other', f'SELECT id FROM x WHERE hop = {h}')}"
        for h in each
    )
    # Each edge counted once, in halves: the rows to the next level two, the rows within a level one (a self-loop,
    # one row, two), the rows back to an earlier level none, and the rows of cut_back theirs.
    halves = " UNION ALL ".join(
        f"SELECT p, 2 * sum(rows) FROM w{h} WHERE {_member('other', f'SELECT id FROM l{h}')} GROUP BY p "
        f"UNION ALL SELECT p, sum(rows) + sum(loops) FROM w{h} "
        f"WHERE {_member('other', f'SELECT id FROM l{h - 1}')} GROUP BY p"
        for h in each
    )
    dangling = " + ".join(
        f"(SELECT coalesce(sum(rows), 0) FROM u{h} WHERE NOT {_member('other', f'SELECT id FROM t{h}')})" for h in each
    )
    return f"""SELECT 'S', id, NULL, NULL, NULL::bigint FROM l0
UNION ALL
SELECT 'N', id, type, name, level FROM page
UNION ALL
SELECT 'H', node, NULL, NULL, degree FROM hubs
UNION ALL
SELECT 'T', type, NULL, NULL, count(*) FROM v GROUP BY type
UNION ALL
SELECT DISTINCT 'T', type, NULL, NULL, 0::bigint FROM x
UNION ALL
SELECT DISTINCT 'E', s, p, o, 0::bigint FROM ({listed}) listed
UNION ALL
SELECT 'P', NULL, p, NULL, (sum(n) / 2)::bigint FROM ({halves} UNION ALL {cut_back}) halves(p, n) GROUP BY p
UNION ALL
SELECT DISTINCT 'P', NULL, p, NULL, 0::bigint FROM ({excluded_predicates}) excluded
UNION ALL
SELECT 'C', 'nodes', NULL, NULL, (SELECT count(*) FROM v)
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
        nodes_cut=0,
        dangling_edges=counts["dangling"],
        entity_type_counts={t: n for t, n in sorted(types.items()) if n},
        predicate_counts={p: n for p, n in sorted(predicates.items()) if n},
    )


def survey_of_expansion(reached: Expansion, offset: int, count: int) -> Survey:
    """The :class:`~bfsql.Survey` of a walk taken hop by hop (the engine's :class:`Expansion`), with its page."""
    order = reached.order()
    listed = order[offset : offset + count]
    edges = page_edges(order, list(reached.edges), offset, offset + len(listed))
    types = reached.types
    # Plain tuples, zipped without a Python call per node (a Reached each cost a fifth of the survey).
    page = zip(listed, map(types.__getitem__, listed), map(reached.names.__getitem__, listed),
               map(reached.distance.__getitem__, listed), strict=True)
    return Survey(
        node_count=len(order),
        edge_count=len(reached.edges),
        page=cast(list[Reached], list(page)),
        edges=cast(list[Edge], edges),  # the walk's own tuples: a hub's 2-hop survey lists 88k of them
        entity_types=sorted(set(reached.types.values()) | reached.excluded_types),
        predicates=sorted(reached.predicates | reached.excluded_predicates),
        unknown_seeds=reached.unknown_seeds,
        capped=reached.capped_nodes,
        nodes_cut=reached.nodes_cut,
        dangling_edges=reached.dangling_edges,
        entity_type_counts=tally(map(types.__getitem__, order)),
        predicate_counts=tally(map(itemgetter(1), reached.edges)),
    )
