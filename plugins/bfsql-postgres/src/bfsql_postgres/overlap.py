"""The whole intersection walk as one SQL statement (the ``intersect`` primitive), and its answer.

The statement walks every seed at once, ``k`` hops, keeping each seed's frontier in the
database: a level is the pairs ``(node, seed)`` of the nodes a seed reached at that hop (each
seed's own distances, as the engine's seed bits give them: :func:`bfsql.engine.intersect.reach_all`).
Each hop reads, per seed, the rows of that seed's frontier (one index scan a direction for the
seed's whole frontier), cuts hubs as :mod:`bfsql_postgres.walk` does (the first
``max_edges_per_node`` visible rows in triple order), and keeps the new pairs: the ends a seed
had not reached, that are visited nodes already or new admissible entities (no merged one, no
excluded type; seeds are always admissible). A node is shared once every seed reached it, at the
hop the last one did. The walk is never cut: the counts are the intersection's.

Only counts, cuts, the first ``count`` shared nodes with the edges among them, and the paths
come back. A path from a seed to a traced node is walked back as the engine walks it
(:func:`bfsql.engine.intersect.connections`): at every step, among the current node's rows within
the cap, to the first neighbour (by id, then triple) the seed reached one hop sooner.

As in :mod:`bfsql_postgres.walk`, tables are only probed by their indexes with ``= ANY`` of a
level's ids, and membership tests are hashed subqueries, so that no generic plan can rescan a
level per row; the joins left are ``LATERAL`` ones from a few rows (one per seed, per hub, per path).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bfsql import Edge, Overlap, Reached, SeedPath
from bfsql_postgres.layout import StoreLayout
from bfsql_postgres.walk import _C, _NODE, _OTHER, _member, _not_merged, _rows, _visible

__all__ = ["intersect_sql", "overlap_of_rows"]


def _union(parts: Iterable[str]) -> str:
    return " UNION ALL ".join(parts)


def _within(layout: StoreLayout, hop: int, columns: str, seeds: str = "") -> str:
    """``columns`` (of ``seed``, ``s``, ``p``, ``o``, ``out``) of each seed's rows of hop ``hop`` within the hub
    cap, read from the indexes per seed (``seeds``: a condition on ``seed`` choosing some): those of the nodes
    that cannot be hubs, then the first rows of those that may be, for each seed that has them in its frontier."""
    candidates = f"SELECT node FROM c{hop}"
    chosen = f"SELECT * FROM f{hop} WHERE {seeds}" if seeds else f"SELECT * FROM f{hop}"
    hubs_of = (f"SELECT node, seed FROM a{hop - 1} WHERE EXISTS (SELECT FROM c{hop}) "
               f"AND {_member('node', candidates)}{f' AND {seeds}' if seeds else ''}")
    return (
        f"SELECT {columns} FROM ({chosen}) f, LATERAL ({_rows(layout, 'f.nodes')}) rows "
        f"WHERE NOT (EXISTS (SELECT FROM c{hop}) AND {_member(_NODE, candidates)}) "
        f"UNION ALL SELECT {columns} FROM ({hubs_of}) f, "
        f"LATERAL (SELECT s, p, o, out FROM hr{hop} x WHERE x.node = f.node AND x.rank <= $2::bigint) rows"
    )


def _frontier(layout: StoreLayout, hop: int) -> str:
    """The hub part of hop ``hop``: ``f`` each seed's frontier (an array of ids), ``c`` the frontier's nodes among
    the graph's hub candidates (``$7``: the hubs are among them), ``hr`` their visible rows ranked in triple order,
    ``g`` the hubs (more visible rows than the cap) with their row counts."""
    h = hop
    return f"""
f{h} AS MATERIALIZED (SELECT seed, array_agg(node) AS nodes FROM a{h - 1} GROUP BY seed),
c{h} AS MATERIALIZED (
    SELECT node FROM unnest($7::text[]) node WHERE {_member("node", f"SELECT node FROM a{h - 1}")}
),
hr{h} AS MATERIALIZED (
    SELECT node, s, p, o, out, row_number() OVER (PARTITION BY node ORDER BY s {_C}, p {_C}, o {_C}) AS rank
    FROM ({_rows(layout, f"ARRAY(SELECT node FROM c{h})", node=True)}) rows
    WHERE EXISTS (SELECT FROM c{h}){_not_merged(layout, _OTHER)}
),
g{h} AS MATERIALIZED (SELECT node, count(*) AS degree FROM hr{h} GROUP BY node HAVING count(*) > $2::bigint)"""


def _visited(hop: int) -> str:
    """The nodes visited before hop ``hop``."""
    return _union(["SELECT id FROM n0", *(f"SELECT id FROM n{n}" for n in range(1, hop))])


def _reached(hop: int) -> str:
    """The ``(node, seed)`` pairs reached before hop ``hop``."""
    return _union(f"SELECT node, seed FROM a{n}" for n in range(hop))


def _entities(layout: StoreLayout, name: str, ends: str) -> str:
    """``name``: the entities among the ids of ``ends`` (a subquery of ``other``) with their type, name and
    whether they are merged."""
    distinct = "" if layout.unique_keys else "DISTINCT "
    merged = "coalesce(e.status::text = 'merged', FALSE)" if layout.merged else "FALSE"
    return f"""
{name} AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name, {merged} AS merged
    FROM entity e WHERE e.entity_id = ANY(ARRAY(SELECT other FROM ({ends}) ends))
)"""


def _admitted(hop: int, entities: str) -> str:
    """The end of hop ``hop``: ``n`` the new ends that are admissible entities (among ``entities``; visited from
    now on), ``a`` the new level: the pairs of ``q`` of seeds reaching visited nodes for the first time."""
    h = hop
    return f"""
n{h} AS MATERIALIZED (SELECT id, type, name FROM {entities} WHERE NOT merged AND NOT type = ANY($3::text[])),
a{h} AS MATERIALIZED (
    SELECT other AS node, seed FROM q{h} WHERE NOT {_member("other, seed", _reached(hop))}
    AND ({_member("other", _visited(hop))} OR {_member("other", f"SELECT id FROM n{h}")})
)"""


def _hop(layout: StoreLayout, hop: int) -> str:
    """The expressions of hop ``hop`` before the last: the frontier and its hubs (:func:`_frontier`), ``q`` every
    ``(other end, seed)`` pair the rows within the caps reach, ``t`` the entities among the ends no seed visited
    before, then :func:`_admitted`."""
    h = hop
    ends = f"SELECT other FROM q{h} GROUP BY other HAVING NOT {_member('other', _visited(hop))}"
    return f"""{_frontier(layout, hop)},
q{h} AS MATERIALIZED (
    SELECT other, seed FROM ({_within(layout, h, f"seed, {_OTHER} AS other")}) rows GROUP BY other, seed
),{_entities(layout, f"t{h}", ends)},{_admitted(hop, f"t{h}")}"""


def _last_hop(layout: StoreLayout, hop: int) -> str:
    """The expressions of the last hop, which keeps only the pairs that can make a node shared.

    A node shared at this hop is reached by every seed, so by the seed ``j`` whose frontier is the smallest:
    ``jr`` the other ends of that seed's rows within the caps (once each), ``jt`` the entities among the new ones,
    ``zone`` every node ``j`` reaches within the hops (once each). Each other seed reaches a node of the zone it
    had not reached where the node has a row to one of the seed's frontier, within that end's cap: read from the
    zone's side (``pend``: those nodes per seed; ``zr`` their rows), not from the frontier's, which may hold most
    of the graph."""
    h = hop
    visited = _visited(hop)
    own = "seed = (SELECT seed FROM j)"
    admissible = "SELECT id FROM jt WHERE NOT merged AND NOT type = ANY($3::text[])"
    zone = _union([
        f"SELECT node FROM ({_reached(hop)}) p WHERE {own}",
        f"SELECT other FROM jr WHERE {_member('other', visited)} OR {_member('other', admissible)}",
    ])
    pending = (f"SELECT x.seed, array_agg(z.node) AS nodes FROM s x CROSS JOIN zone z WHERE NOT x.{own} "
               f"AND NOT {_member('z.node, x.seed', _reached(hop))} GROUP BY x.seed")
    arrives = (f"{_member(f'{_OTHER}, seed', f'SELECT node, seed FROM a{h - 1}')} "
               f"AND {_kept(_OTHER, f'c{h}', f'SELECT node, s, p, o FROM hr{h} WHERE rank <= $2::bigint')}")
    return f"""{_frontier(layout, hop)},
j AS MATERIALIZED (SELECT seed FROM a{h - 1} GROUP BY seed ORDER BY count(*), seed LIMIT 1),
jr AS MATERIALIZED (SELECT DISTINCT seed, other FROM ({_within(layout, h, f"seed, {_OTHER} AS other", own)}) rows),{
        _entities(layout, "jt", f"SELECT other FROM jr WHERE NOT {_member('other', visited)}")},
zone AS MATERIALIZED (SELECT DISTINCT node FROM ({zone}) nodes),
pend AS MATERIALIZED ({pending}),
zr AS MATERIALIZED (SELECT x.seed, rows.* FROM pend x, LATERAL ({_rows(layout, "x.nodes")}) rows),
q{h} AS MATERIALIZED (
    SELECT other, seed FROM jr WHERE {_member('other', 'SELECT node FROM zone')} GROUP BY other, seed
    UNION SELECT {_NODE}, seed FROM zr WHERE {arrives}
),{_admitted(hop, "jt")}"""


def _kept(end: str, candidates: str, kept: str) -> str:
    """The row of an edge from ``end`` is within its cap: ``end`` is no hub candidate (``candidates``, a CTE of
    ``node``), or ``kept`` (rows ``node, s, p, o``) holds it among its first rows."""
    return (f"(NOT {_member(end, f'SELECT node FROM {candidates}')} "
            f"OR {_member(f'{end}, s, p, o', kept)})")


def _dangling(layout: StoreLayout, k: int) -> str:
    """The distinct edges of the walk's rows within the caps whose other end is no entity: read from those ends
    (``$8``, the graph's ends that are no entity), whose rows to a node a seed expanded are such rows."""
    expanded = _union(f"SELECT node FROM a{h}" for h in range(k))
    kept = _union(f"SELECT node, s, p, o FROM hr{h} WHERE rank <= $2::bigint" for h in range(1, k + 1))
    candidates = _union(f"SELECT node FROM c{h}" for h in range(1, k + 1))
    return (f"SELECT DISTINCT s, p, o FROM ({_rows(layout, '$8::text[]')}) rows "
            f"WHERE {_member(_OTHER, expanded)} AND {_kept(_OTHER, f'({candidates}) candidates', kept)}")


def _step(layout: StoreLayout, step: int) -> str:
    """Step ``step`` of the paths walked back: from each unfinished path's current node, to the first neighbour
    (by id, then triple) among its rows within the cap that the path's seed reached one hop sooner."""
    before = step - 1
    heres = f"SELECT DISTINCT here FROM b{before} WHERE d > 0"
    entries = "(SELECT count(*) FROM (SELECT FROM relationship r WHERE r.{end} = x.here LIMIT $2::bigint + 1) e)"
    hubs = (f"SELECT x.here FROM ({heres}) x WHERE {entries.format(end='subject_id')} + "
            f"{entries.format(end='object_id')} > $2::bigint")
    other = "CASE WHEN x.out THEN x.o ELSE x.s END"
    closer = _member(f"{other}, b.seed, b.d - 1", "SELECT node, seed, hop FROM back")
    columns = f"b.rank, b.seed, b.d - 1 AS d, {other} AS here, x.s, x.p, x.o"
    return f"""
ph{step} AS MATERIALIZED ({hubs}),
pr{step} AS MATERIALIZED (
    SELECT node, s, p, o, out, row_number() OVER (PARTITION BY node ORDER BY s {_C}, p {_C}, o {_C}) AS rank
    FROM ({_rows(layout, f"ARRAY(SELECT here FROM ph{step})", node=True)}) rows
    WHERE EXISTS (SELECT FROM ph{step}){_not_merged(layout, _OTHER)}
),
b{step} AS MATERIALIZED (
    SELECT DISTINCT ON (rank, seed) rank, seed, d, here, s, p, o FROM (
        SELECT {columns} FROM b{before} b, LATERAL ({_rows(layout, "ARRAY[b.here]")}) x
        WHERE b.d > 0 AND NOT {_member("b.here", f"SELECT here FROM ph{step}")} AND {closer}
        UNION ALL
        SELECT {columns} FROM b{before} b,
        LATERAL (SELECT s, p, o, out FROM pr{step} x WHERE x.node = b.here AND x.rank <= $2::bigint) x
        WHERE b.d > 0 AND {_member("b.here", f"SELECT here FROM ph{step}")} AND {closer}
    ) steps ORDER BY rank, seed, here {_C}, s {_C}, p {_C}, o {_C}
)"""


def intersect_sql(layout: StoreLayout, k: int) -> str:
    """The intersection walk of ``k`` hops: ``$1`` the seeds (distinct, in order), ``$2`` max_edges_per_node,
    ``$3`` excluded types, ``$4`` count of shared nodes listed, ``$5`` path_nodes, ``$6`` path_limit, ``$7`` the hub
    candidates and ``$8`` the ends that are no entity (:mod:`bfsql_postgres.rare_ends`).

    Rows ``(kind, a, b, c, x, m)``: ``N`` a listed shared node (``a``, ``m`` the hop the last seed reached it);
    ``I`` a listed node's type and name (``a``, ``b``, ``c``); ``E`` an edge among the listed nodes (``a b c``);
    ``T`` a type of the shared nodes (``a``) with their number (``m``); ``P`` a predicate of the edges among
    them (``b``) with their number; ``H`` a hub cut (``a``, ``m`` rows); ``Q`` a step of a path (``a b c`` its
    triple, ``x`` the seed, ``m`` the traced node's rank times 1,000 plus the step, from the node back);
    ``L`` a path to trace (``a`` the traced node, ``x`` the seed, ``m`` the node's rank times 1,000 plus the
    path's length); ``C`` a count
    (``a``: ``dangling``, ``traced``).
    """
    distinct = "" if layout.unique_keys else "DISTINCT "
    steps = ",".join([*(_hop(layout, h) for h in range(1, k)), _last_hop(layout, k)])
    return f"""
WITH s AS MATERIALIZED (SELECT id, (n - 1)::int AS seed FROM unnest($1::text[]) WITH ORDINALITY u(id, n)),
n0 AS MATERIALIZED (
    SELECT {distinct}e.entity_id::text AS id, e.entity_type::text AS type, e.name::text AS name
    FROM entity e WHERE e.entity_id = ANY($1::text[]){_visible(layout)}
),
a0 AS MATERIALIZED (SELECT id AS node, seed FROM s),{steps},
pairs AS MATERIALIZED ({_union(f"SELECT node, seed, {h} AS hop FROM a{h}" for h in range(k + 1))}),
shared AS MATERIALIZED (
    SELECT node, max(hop) AS at FROM pairs GROUP BY node HAVING count(*) = (SELECT count(*) FROM s)
),
listed AS MATERIALIZED (SELECT node, at FROM shared ORDER BY at, node {_C} LIMIT $4::bigint),
traced AS MATERIALIZED (
    SELECT node, at, row_number() OVER (ORDER BY at, node {_C}) AS rank FROM shared
    ORDER BY at, node {_C} LIMIT $5::bigint
),
back AS MATERIALIZED (SELECT node, seed, hop FROM pairs WHERE hop < {k}),
tp AS MATERIALIZED (SELECT node, seed, hop FROM pairs WHERE {_member("node", "SELECT node FROM traced")}),
b0 AS MATERIALIZED (
    SELECT t.rank, p.seed, p.hop AS d, t.node AS here, NULL::text AS s, NULL::text AS p, NULL::text AS o
    FROM traced t JOIN tp p ON p.node = t.node
    WHERE (t.rank - 1) * (SELECT count(*) FROM s) + p.seed < $6::bigint AND p.hop > 0
),{",".join(_step(layout, step) for step in range(1, k + 1))}
{_answer(layout, k)}"""


def _among(layout: StoreLayout, nodes: str) -> str:
    """The edges among the nodes of the expression ``nodes`` (a CTE of ``node``), from their rows as subjects."""
    distinct = "" if layout.unique_keys else "DISTINCT "
    return f"""SELECT {distinct}r.subject_id::text AS s, r.predicate::text AS p, r.object_id::text AS o
    FROM relationship r WHERE r.subject_id = ANY(ARRAY(SELECT node FROM {nodes}))
    AND {_member("r.object_id::text", f"SELECT node FROM {nodes}")}"""


def _answer(layout: StoreLayout, k: int) -> str:
    """The rows :func:`intersect_sql` answers, from its expressions."""
    hops = range(1, k + 1)
    nodes = _union(["SELECT id, type, name FROM n0", *(f"SELECT id, type, name FROM n{h}" for h in hops)])
    steps = _union(f"SELECT 'Q', b.s, b.p, b.o, s.id, b.rank * 1000 + {step} FROM b{step} b, s WHERE s.seed = b.seed"
                   for step in hops)
    return f"""SELECT 'N', node, NULL, NULL, NULL, at FROM listed
UNION ALL
SELECT 'I', id, type, name, NULL, NULL::bigint FROM ({nodes}) nodes WHERE {_member("id", "SELECT node FROM listed")}
UNION ALL
SELECT 'E', s, p, o, NULL, NULL FROM ({_among(layout, "listed")}) among_listed
UNION ALL
SELECT 'T', type, NULL, NULL, NULL, count(*) FROM ({nodes}) nodes WHERE {_member("id", "SELECT node FROM shared")}
GROUP BY type
UNION ALL
SELECT 'P', NULL, p, NULL, NULL, count(*) FROM ({_among(layout, "shared")}) among GROUP BY p
UNION ALL
SELECT DISTINCT 'H', node, NULL, NULL, NULL, degree FROM ({_union(f"SELECT node, degree FROM g{h}" for h in hops)}) hubs
UNION ALL
SELECT 'L', b.here, NULL, NULL, s.id, b.rank * 1000 + b.d FROM b0 b, s WHERE s.seed = b.seed
UNION ALL
{steps}
UNION ALL
SELECT 'C', 'dangling', NULL, NULL, NULL, (SELECT count(*) FROM ({_dangling(layout, k)}) d)
UNION ALL
SELECT 'C', 'traced', NULL, NULL, NULL, (SELECT count(*) FROM traced)
"""


def overlap_of_rows(seeds: list[str], rows: Iterable[Any], path_limit: int) -> Overlap:
    """The :class:`~bfsql.Overlap` of the statement's rows (see :func:`intersect_sql`)."""
    listed: dict[str, int] = {}
    info: dict[str, tuple[str, str | None]] = {}
    edges: list[Edge] = []
    types: dict[str, int] = {}
    predicates: dict[str, int] = {}
    capped: dict[str, int] = {}
    lengths: dict[tuple[int, str], tuple[str, int]] = {}
    steps: dict[tuple[int, str], dict[int, Edge]] = {}
    counts: dict[str, int] = {}
    for kind, a, b, c, x, m in rows:
        if kind == "N":
            listed[a] = m
        elif kind == "I":
            info[a] = (b, c)
        elif kind == "E":
            edges.append(Edge(a, b, c))
        elif kind == "T":
            types[a] = m
        elif kind == "P":
            predicates[b] = m
        elif kind == "H":
            capped[a] = m
        elif kind == "L":
            lengths[(m // 1000, x)] = (a, m % 1000)
        elif kind == "Q":
            steps.setdefault((m // 1000, x), {})[m % 1000] = Edge(a, b, c)
        else:
            counts[a] = m
    page = sorted((Reached(node, *info[node], at) for node, at in listed.items()), key=lambda n: (n.distance, n.id))
    return Overlap(
        node_count=sum(types.values()),
        edge_count=sum(predicates.values()),
        page=page,
        edges=sorted(edges),
        entity_types=sorted(types),
        predicates=sorted(predicates),
        paths=_paths(seeds, lengths, steps),
        paths_left_out=max(0, counts["traced"] * len(seeds) - path_limit),
        capped=capped,
        nodes_cut=0,
        dangling_edges=counts["dangling"],
        entity_type_counts=dict(sorted(types.items())),
        predicate_counts=dict(sorted(predicates.items())),
    )


def _paths(seeds: list[str], lengths: dict[tuple[int, str], tuple[str, int]],
           steps: dict[tuple[int, str], dict[int, Edge]]) -> list[SeedPath]:
    """The paths walked back to their seed (those that found a step at every hop), in traced order, then seed
    order, each seed first."""
    order = {seed: i for i, seed in enumerate(seeds)}
    paths = []
    for rank, seed in sorted(lengths, key=lambda key: (key[0], order[key[1]])):
        node, length = lengths[(rank, seed)]
        walked = steps.get((rank, seed), {})
        if len(walked) == length:
            paths.append(SeedPath(seed, node, [walked[step] for step in sorted(walked, reverse=True)]))
    return paths
