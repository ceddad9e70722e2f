"""A relation's closure walked in one statement (the ``closure`` primitive), and its answer.

One ``WITH RECURSIVE`` statement walks every level: its recursive row is a whole level (the
frontier, everything reached so far, and the level's edges as four aligned arrays), so each level
is one set-based step that sees every level before it. An entity is therefore entered once, at its
least depth: cycles end the walk, and a DAG's many paths to an entity cost one row per edge, not
one per path. The rules are those of :meth:`bfsql.primitives.Primitives.closure`:

* a level's rows are the edges of the predicates asked, in the direction asked, from the frontier
  (``relationship`` probed by its primary key for outgoing edges, by the object index for incoming
  ones), without those to merged entities; a row to an entity reached before is dropped unless the
  entity is a seed; a row to an id that is no entity is kept with no type (dangling);
* the new entities (the others) make the next frontier; when they pass ``max_nodes`` in all, only the
  first by id (``COLLATE "C"``) are kept, as many as there is room for, their count is kept, and the
  walk stops;
* before a level, a frontier entity with more than ``max_edges_per_node`` index entries in the
  direction (a possible hub; an index-only probe of at most that many entries) stops the walk and
  the answer is None: the engine walks level by level and caps the hub itself;
* a level is not begun after ``time_left`` seconds from the statement's start
  (``clock_timestamp()``, read once a level);
* after the levels, the seeds found are sent with their type, name and metadata (``Closure.seeds``:
  a path query needs no lookup of its ``@id`` entry), and in a path query (the backend passes
  ``$7``) so are all the entities of a walk of few (``Closure.names``), for the query's memo: the
  answer then reads no metadata. Where the query wants names alone (``$8`` false), the metadata
  columns are NULL.

A level's rows are one join (each edge with its far end's entity row), and the new entities are
sorted by id only at a level that passes ``max_nodes``.

Membership tests are hashed subqueries (``IN (SELECT unnest(...)) IS TRUE``), so a level costs the
index probes of its frontier plus hashing, whatever the plan's guesses.
"""

from __future__ import annotations

from typing import Any

from bfsql import Closure, ClosureStep, HopMemo, NodeInfo
from bfsql_postgres import queries
from bfsql_postgres.layout import StoreLayout

__all__ = ["closure_of_edges", "closure_of_rows", "closure_sql", "edges_sql"]


def _late() -> str:
    """Whether the time the walk may take is up (``$6`` seconds after the statement began; NULL: never)."""
    return "coalesce(clock_timestamp() > statement_timestamp() + make_interval(secs => $6::float8), FALSE)"


def _level(layout: StoreLayout, near: str, far: str) -> str:
    """The lateral subquery of one level, from the walk's row ``w``: the new entities kept, how many were found,
    whether they passed ``max_nodes``, whether the frontier holds a possible hub, and the level's edges (``ps``,
    ``pp``, ``pc``, ``pt``).

    ``z`` is the level's rows in one join (each edge of the frontier with its far end's entity row, by primary
    key), without those to merged entities and those to an entity reached before that is no seed; ``fresh``
    marks the rows to a new entity. ``k``, the new entities kept, is ``n``, all of them, unless they pass
    ``max_nodes``: only then are they sorted by id (the other branch is never run).
    """
    merged = " AND NOT coalesce(e.status::text = 'merged', FALSE)" if layout.merged else ""
    distinct = "" if layout.unique_keys else "DISTINCT "
    return f"""
WITH z AS MATERIALIZED (
    SELECT {distinct}r.{near}::text AS parent, r.predicate::text AS p, r.{far}::text AS child,
           e.entity_type::text AS type,
           e.entity_id IS NOT NULL AND NOT (r.{far}::text IN (SELECT unnest($1::text[]))) IS TRUE AS fresh
    FROM relationship r LEFT JOIN entity e ON e.entity_id = r.{far}
    WHERE r.{near} = ANY(w.frontier) AND ($2::text[] IS NULL OR r.predicate = ANY($2::text[])){merged}
),
y AS MATERIALIZED (SELECT * FROM z WHERE NOT (fresh AND (child IN (SELECT unnest(w.seen))) IS TRUE)),
n AS MATERIALIZED (SELECT DISTINCT child FROM y WHERE fresh),
m AS MATERIALIZED (SELECT count(*) AS found, count(*) > $4::bigint - w.total AS cut FROM n),
k AS MATERIALIZED (
    SELECT child FROM n WHERE NOT (SELECT cut FROM m)
    UNION ALL
    SELECT child FROM (SELECT child, row_number() OVER (ORDER BY child COLLATE "C") AS rank FROM n) ranked
    WHERE (SELECT cut FROM m) AND rank <= $4::bigint - w.total
)
SELECT
    ARRAY(SELECT child FROM k) AS new, m.found, m.cut,
    EXISTS (SELECT FROM unnest(w.frontier) f(id)
            WHERE EXISTS (SELECT FROM relationship h WHERE h.{near} = f.id OFFSET $5::bigint)) AS hub,
    a.ps, a.pp, a.pc, a.pt
FROM m, (
    SELECT array_agg(parent) AS ps, array_agg(p) AS pp, array_agg(child) AS pc, array_agg(type) AS pt
    FROM y WHERE NOT fresh OR NOT (SELECT cut FROM m) OR (child IN (SELECT child FROM k)) IS TRUE
) a"""


_NO_ENTITY = ("NULL::bool, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::float8, "
              "NULL::text, NULL::text")
_NO_LEVEL = "NULL::int, NULL::text[], NULL::text[], NULL::text[], NULL::text[], NULL::bigint, NULL::bool, " \
    "NULL::bool, NULL::bool, NULL::bool"


def _metadata_if(asked: str) -> str:
    """The columns of :data:`~bfsql_postgres.queries.ENTITY_METADATA`, those after id and name NULL unless the
    boolean parameter ``asked``."""
    return ", ".join(column if n < 2 else f"CASE WHEN {asked}::bool THEN {column} END"
                     for n, column in enumerate(queries.ENTITY_METADATA.split(", ")))


def closure_sql(layout: StoreLayout, outgoing: bool) -> str:
    """The walk: ``$1`` seeds, ``$2`` predicates (NULL: all), ``$3`` levels, ``$4`` max_nodes,
    ``$5`` max_edges_per_node, ``$6`` seconds the walk may take (NULL: no limit), ``$7`` the most entities
    (seeds included) a walk may reach and still send them all (0: only the seeds), ``$8`` whether their metadata
    is sent (else their id, type and name alone).

    One row per level walked, in order: ``(level, ps, pp, pc, pt, found, cut, hub, late, going)``, the
    level's edges as aligned arrays (parent, predicate, child, child's type or NULL); ``found`` the new
    entities of the level, ``cut`` whether they passed ``max_nodes``, ``hub`` whether the level's frontier
    held a possible hub (the level is then not walked), ``late`` whether the time was up after it, ``going``
    whether it reached a new entity. Level 0 is the seeds found. Then one row per seed found, or, when the
    walk held no hub and its seeds and entities reached number at most ``$7``, per such entity: NULL in those
    ten columns, then whether it is a seed, its type, and the columns of
    :data:`~bfsql_postgres.queries.ENTITY_METADATA` (id, name, synonyms, properties, status, confidence,
    source, url).
    """
    near, far = ("subject_id", "object_id") if outgoing else ("object_id", "subject_id")
    visible = " AND e.status::text IS DISTINCT FROM 'merged'" if layout.merged else ""
    return f"""
WITH RECURSIVE walk(level, frontier, seen, total, ps, pp, pc, pt, found, cut, hub, late) AS (
    SELECT 0, ids, ids, 0::bigint, NULL::text[], NULL::text[], NULL::text[], NULL::text[], 0::bigint, FALSE, FALSE,
           {_late()}
    FROM (SELECT ARRAY(SELECT e.entity_id::text FROM entity e
                       WHERE e.entity_id = ANY($1::text[]){visible}) AS ids OFFSET 0) seeds
    UNION ALL
    SELECT w.level + 1, l.new, w.seen || l.new, w.total + cardinality(l.new), l.ps, l.pp, l.pc, l.pt, l.found,
           l.cut, l.hub, {_late()}
    FROM walk w CROSS JOIN LATERAL ({_level(layout, near, far)}) l
    WHERE cardinality(w.frontier) > 0 AND w.level < $3::int AND NOT (w.cut OR w.hub OR w.late)
),
last AS MATERIALIZED (
    SELECT w.seen, w.hub, s.frontier AS seeds FROM walk w, walk s WHERE s.level = 0 ORDER BY w.level DESC LIMIT 1
)
(SELECT level, ps, pp, pc, pt, found, cut, hub, late, cardinality(frontier) > 0 AS going, {_NO_ENTITY}
 FROM walk ORDER BY level)
UNION ALL
SELECT {_NO_LEVEL}, e.entity_id::text = ANY(last.seeds), e.entity_type::text, {_metadata_if("$8")}
FROM last JOIN entity e ON e.entity_id = ANY(
    CASE WHEN NOT last.hub AND cardinality(last.seen) <= $7::int THEN last.seen ELSE last.seeds END)
"""


def closure_of_rows(rows: list[Any], depth: int, memo: HopMemo | None) -> Closure | None:
    """The :class:`~bfsql.Closure` of the statement's rows (see :func:`closure_sql`), its seeds and the names of its
    entity rows said; None after a hub. The entity rows' metadata goes to ``memo`` (as a hop's entity rows do: see
    ``PostgresBackend._memo``)."""
    answer = Closure([])
    seeds: dict[str, NodeInfo] = {}
    names: dict[str, str | None] = {}
    for level, ps, pp, pc, pt, found, cut, hub, late, going, seed, entity_type, *metadata in rows:
        if level is None:
            entity_id, name, synonyms, properties, status, confidence, source, url = metadata
            names[entity_id] = name
            if seed:
                seeds[entity_id] = NodeInfo(entity_type, name)
            if memo is not None:
                memo.nodes[entity_id] = (name, synonyms, properties, status, confidence, source, url)
            continue
        if hub:
            return None
        if level > 0:
            answer.levels.append([ClosureStep(*step) for step in zip(ps or (), pp or (), pc or (), pt or (),
                                                                      strict=True)])
            answer.cut, answer.found = bool(cut), int(found) if cut else 0
        answer.timed_out = bool(late and going and level < depth and not cut)
    answer.seeds, answer.names = seeds, names
    return answer


# -- a small closure: its edges in one plain recursive statement, its levels made here ----------------------------


def edges_sql(layout: StoreLayout, outgoing: bool) -> str:
    """A small closure's edges from one seed (a path query's ``@id`` entry): ``$1`` the seed, ``$2`` predicates
    (NULL: all), ``$3`` the most edge rows wanted, ``$4`` max_edges_per_node, ``$5`` whether the entities' metadata
    is sent.

    A plain ``WITH RECURSIVE`` whose ``UNION`` keeps each edge once (so cycles and a DAG's many paths end it) reads
    every edge of the predicates reachable from the seed, if visible, and stops at ``$3 + 1`` rows (PostgreSQL reads
    a recursive query only as far as its reader asks): as cheap as a closure can be read, with no levels and no
    bounds. One seed, because the ``UNION``'s hash table is sized by the plan's guess of the rows, which grows
    tenfold with a seed array of unknown length (a generic plan's guess), and building it would then cost more than
    the walk. Rows: one per edge ``(seed, parent, predicate, child, stop)`` with the child's entity columns (type,
    then :data:`~bfsql_postgres.queries.ENTITY_METADATA`, NULL for an end that is no entity; metadata past the name
    only with ``$5``; edges to merged entities left out), then one per visible seed (``seed`` true, no edge).
    ``stop`` (the same on every row) says the closure is not small: it has more than ``$3`` edge rows (they are
    then not sent), or a seed or an entity reached has more than ``$4`` index entries in the direction (a possible
    hub). The level statement (:func:`closure_sql`) then walks it.
    """
    near, far = ("subject_id", "object_id") if outgoing else ("object_id", "subject_id")
    visible = " AND e.status::text IS DISTINCT FROM 'merged'" if layout.merged else ""
    merged = " AND NOT coalesce(e.status::text = 'merged', FALSE)" if layout.merged else ""
    predicate = "($2::text[] IS NULL OR r.predicate = ANY($2::text[]))"
    return f"""
WITH RECURSIVE seeds AS MATERIALIZED (
    SELECT e.entity_id::text AS id FROM entity e WHERE e.entity_id = $1::text{visible}
),
reach(parent, p, child) AS (
    SELECT r.{near}::text, r.predicate::text, r.{far}::text FROM relationship r
    WHERE r.{near} = (SELECT id FROM seeds) AND {predicate}
    UNION
    SELECT r.{near}::text, r.predicate::text, r.{far}::text FROM reach x JOIN relationship r ON r.{near} = x.child
    WHERE {predicate}
),
x AS MATERIALIZED (SELECT * FROM reach LIMIT $3::int + 1),
h AS MATERIALIZED (
    SELECT CASE WHEN (SELECT count(*) FROM x) > $3::int THEN TRUE
                ELSE EXISTS (SELECT FROM (SELECT id FROM seeds UNION ALL SELECT child FROM x) f
                             WHERE EXISTS (SELECT FROM relationship q WHERE q.{near} = f.id OFFSET $4::bigint)) END
           AS stop
)
-- the entity of each edge's child by its key (a generic plan, sized for many rows, would hash the whole table)
SELECT FALSE AS seed, x.parent, x.p, x.child, h.stop, e.entity_type::text, {_metadata_if("$5")}
FROM h, x LEFT JOIN LATERAL (SELECT * FROM entity e WHERE e.entity_id = x.child OFFSET 0) e ON TRUE
WHERE NOT h.stop{merged}
UNION ALL
SELECT TRUE, NULL, NULL, NULL, h.stop, e.entity_type::text, {_metadata_if("$5")}
FROM h, seeds s JOIN entity e ON e.entity_id = s.id
"""


def closure_of_edges(rows: list[Any], depth: int, max_nodes: int, memo: HopMemo | None) -> Closure | None:
    """The :class:`~bfsql.Closure` of :func:`edges_sql`'s rows, its levels walked here by the rules of
    :func:`closure_sql`; None when the closure is not small (the level statement then walks it). The entities'
    names are said, and their metadata goes to ``memo``."""
    if rows and rows[0][4]:
        return None
    seeds: dict[str, NodeInfo] = {}
    names: dict[str, str | None] = {}
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for seed, parent, predicate, child, _, entity_type, *metadata in rows:
        entity_id, name = metadata[0], metadata[1]
        if entity_id is not None:
            names[entity_id] = name
            if memo is not None:
                memo.nodes[entity_id] = tuple(metadata[1:])
        if seed:
            seeds[entity_id] = NodeInfo(entity_type, name)
        else:
            out.setdefault(parent, []).append((predicate, child, entity_type))
    answer = Closure([], seeds=seeds, names=names)
    _level_out(answer, seeds, out, depth, max_nodes)
    return answer


def _level_out(answer: Closure, seeds: dict[str, NodeInfo], out: dict[str, list[tuple[str, str, str | None]]],
               depth: int, max_nodes: int) -> None:
    """Walk ``out`` (each entity's edges: predicate, child, child's type or None) breadth first from the answer's
    seeds, level by level, as :func:`closure_sql` does: a level keeps the edges to seeds, to ends that are no
    entity and to entities no earlier level reached; past ``max_nodes`` only the first new entities by id are
    kept (code-point order, as ``COLLATE "C"``), and the walk stops."""
    seen, frontier, total = set(seeds), sorted(seeds), 0
    while frontier and len(answer.levels) < depth:
        rows = [(parent, predicate, child, child_type) for parent in frontier
                for predicate, child, child_type in out.get(parent, ())
                if child_type is None or child in seeds or child not in seen]
        new = sorted({child for _, _, child, child_type in rows if child_type is not None and child not in seeds})
        if len(new) > max_nodes - total:
            answer.cut, answer.found = True, len(new)
            kept = set(new[: max_nodes - total])
            rows = [r for r in rows if r[3] is None or r[2] in seeds or r[2] in kept]
        answer.levels.append([ClosureStep(*r) for r in rows])
        if answer.cut:
            return
        seen.update(new)
        total += len(new)
        frontier = new
