"""The SQL the backend sends: one parameterized statement per primitive call.

No value is ever formatted into SQL text; the text varies only with the store's layout
(which evidence tables exist, whether pg_trgm is usable, whether any entity is merged),
decided at start-up. Columns are cast to ``text``/``float8`` so that stores built by other
tools (varchar, enums, numeric) read the same. Merged entities (``status = 'merged'``) are
invisible everywhere, together with the edges touching them; a store without any merged
entity is asked no status condition at all.
"""

from __future__ import annotations

from bfsql_postgres.layout import StoreLayout

__all__ = [
    "EDGE_MEMO",
    "ENTITY_MEMO",
    "ENTITY_METADATA",
    "ESTIMATED_STATISTICS_SQL",
    "IDENTITY_COLUMNS",
    "NODE_MEMO",
    "RELATIONSHIPS_PROBE_SQL",
    "RELATIONSHIPS_SIZE_SQL",
    "budgeted_hop_sql",
    "edge_metadata_sql",
    "entities_sql",
    "entity_types_sql",
    "exact_statistics_sql",
    "hop_sql",
    "like_pattern",
    "predicates_sql",
    "provenance_sql",
    "rescore_sql",
    "search_sql",
    "synonym_prefilter_safe",
    "vector_search_sql",
]

_MERGED = "{alias}.status::text = 'merged'"

ENTITY_METADATA = (
    "e.entity_id::text, e.name::text, e.synonyms::text, e.properties::text, e.status::text, "
    "e.confidence::float8, e.source::text, e.canonical_url::text"
)
"""The columns of node metadata (JSON columns as their text, which the backend parses once per
distinct text: a store repeats ``[]``, ``{}`` and the same lists thousands of times)."""

IDENTITY_COLUMNS = "e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name"
"""What get_nodes answers."""

NODE_MEMO = ("e.synonyms::text, e.properties::text, e.status::text, e.confidence::float8, e.source::text, "
             "e.canonical_url::text")
"""The columns of :data:`ENTITY_METADATA` after the id and the name: what ``get_nodes`` brings beside
:data:`IDENTITY_COLUMNS` in a call that keeps what it reads, for ``metadata_for_nodes``."""


def _visible(layout: StoreLayout, alias: str) -> str:
    """`` AND <alias> is not merged``, or nothing in a store without merged entities."""
    return f" AND {alias}.status::text IS DISTINCT FROM 'merged'" if layout.merged else ""


def _touches_no_merged(layout: StoreLayout) -> str:
    """`` AND`` the relationship ``r`` touches no merged entity, or nothing in a store without any.

    A few merged ids (:attr:`~bfsql_postgres.layout.StoreLayout.merged_ids`) are read once per
    statement and hashed (``NOT IN`` a subquery; entity ids are never NULL); more are probed,
    one ``NOT EXISTS`` per end, so that the set never outgrows PostgreSQL's hash memory.
    """
    if not layout.merged:
        return ""
    if layout.merged_ids is not None:
        merged = f"SELECT m.entity_id FROM entity m WHERE {_MERGED.format(alias='m')}"
        return f" AND r.subject_id NOT IN ({merged}) AND r.object_id NOT IN ({merged})"
    return "".join(
        f" AND NOT EXISTS (SELECT 1 FROM entity m WHERE m.entity_id = r.{end} AND {_MERGED.format(alias='m')})"
        for end in ("subject_id", "object_id")
    )


def _asked_not_merged(layout: StoreLayout) -> str:
    """The merged-end check of statements over asked triples: none where the backend leaves out
    the triples touching the few merged ids before asking."""
    return _touches_no_merged(layout) if layout.merged_ids is None else ""


def _hop_columns(layout: StoreLayout, metadata: bool) -> tuple[str, str]:
    """The trailing columns of a hop statement's edge rows and entity rows.

    Without ``metadata``: ``NULL`` on edge rows and the entity's status (only in a store with merged
    entities) on entity rows. With it, every column of :data:`EDGE_MEMO` and :data:`ENTITY_MEMO`, the
    status first on entity rows.
    """
    if not metadata:
        return "NULL::text", "e.status::text" if layout.merged else "NULL"
    edge = "NULL::text, r.confidence::float8, r.source_documents::text, r.properties::text, NULL::text, NULL::text"
    entity = ("e.status::text, e.confidence::float8, e.synonyms::text, e.properties::text, e.source::text, "
              "e.canonical_url::text")
    return edge, entity


EDGE_MEMO = "(confidence, source_documents, properties)"
"""What a hop of a traversal that shows metadata sends with each edge row (columns 5-7), for
:meth:`~bfsql_postgres.PostgresBackend.metadata_for_edges` to answer from (:mod:`bfsql.hop_memo`)."""
ENTITY_MEMO = "(status, confidence, synonyms, properties, source, canonical_url)"
"""What such a hop sends with each entity row (columns 4-9), for ``metadata_for_nodes``."""


def hop_sql(layout: StoreLayout, metadata: bool = False) -> str:
    """The entities among the ids ``$1`` and at the other ends of their edges, then every edge of the ids ``$1``
    in both directions.

    First one row ``(NULL, id, type, name, status)`` per entity among the asked ids and the edges' other ends
    (``status`` only in a store with merged entities). Then edge rows ``(outgoing, subject, predicate, object,
    NULL)``: ``outgoing`` says which end is the id of ``$1`` the edge belongs to (true: the subject, false: the
    object; a self-loop comes once, as outgoing). A flag rather than the id itself: a hub's hop sends ~100k edge
    rows, and decoding a third text column for each cost a fifth of a 2-hop walk from an HPO hub. The backend
    joins the ends to the edges as the edge rows come, in one pass (the entity rows first for that), drops what
    touches a merged entity, and keeps the edges of the asked ids that are entities. With ``metadata`` (a
    traversal that will show it; only where unique keys make a triple one row), edge rows carry
    :data:`EDGE_MEMO` and entity rows :data:`ENTITY_MEMO` after the first four columns, so that
    the answer's metadata needs no statement of its own.

    Each end's type and name is sent once, not once per edge, and is looked up by primary
    key from one hashed set of the ends (read again from the covering indexes rather than
    kept in a CTE): a third less time than joining them to the edges here. The plan is the
    same for a frontier of one id or of thousands, so a generic plan serves all: each
    direction is one index scan (the primary key for outgoing edges, the covering
    ``(object_id) INCLUDE (subject_id, predicate)`` index for incoming ones; once VACUUM
    has run, the relationship rows are read from the indexes alone, unless ``metadata``).
    """
    distinct = "" if layout.unique_keys else "DISTINCT "
    edge, entity = _hop_columns(layout, metadata)
    return f"""
SELECT NULL, e.entity_id::text, e.entity_type::text, e.name::text, {entity}
FROM entity e WHERE e.entity_id = ANY(ARRAY(
    SELECT r.object_id FROM relationship r WHERE r.subject_id = ANY($1::text[])
    UNION SELECT r.subject_id FROM relationship r WHERE r.object_id = ANY($1::text[])
    UNION SELECT unnest($1::text[])
))
UNION ALL
SELECT {distinct}true, r.subject_id::text, r.predicate::text, r.object_id::text, {edge}
FROM relationship r WHERE r.subject_id = ANY($1::text[])
UNION ALL
SELECT {distinct}false, r.subject_id::text, r.predicate::text, r.object_id::text, {edge}
FROM relationship r WHERE r.object_id = ANY($1::text[]) AND r.subject_id <> r.object_id
"""


def budgeted_hop_sql(layout: StoreLayout, metadata: bool = False) -> str:
    """The rows of :func:`hop_sql` when the ids ``$1`` have at most ``$2`` edges; else one row of NULLs.

    For a walk that goes on hop by hop only while it is small: a frontier with more edges costs
    reading ``$2 + 1`` of them in the database, and sends nothing. ``metadata``: as :func:`hop_sql`'s.
    """
    distinct = "" if layout.unique_keys else "DISTINCT "
    _, entity = _hop_columns(layout, metadata)
    if metadata:  # the edges' columns are read with the edges, and sent only when they fit
        extra = ", r.confidence::float8 AS c, r.source_documents::text AS d, r.properties::text AS x"
        listed = "NULL::text, c, d, x, NULL::text, NULL::text"
        nothing = ", ".join(["NULL"] * 10)
    else:
        extra, listed, nothing = "", "NULL::text", ", ".join(["NULL"] * 5)
    return f"""
WITH edge AS MATERIALIZED (
    (SELECT {distinct}true AS outgoing, r.subject_id::text AS s, r.predicate::text AS p,
            r.object_id::text AS o{extra}
     FROM relationship r WHERE r.subject_id = ANY($1::text[])
     UNION ALL
     SELECT {distinct}false, r.subject_id::text, r.predicate::text, r.object_id::text{extra}
     FROM relationship r WHERE r.object_id = ANY($1::text[]) AND r.subject_id <> r.object_id)
    LIMIT $2::bigint + 1
),
fits AS MATERIALIZED (SELECT count(*) <= $2::bigint AS fits FROM edge)
SELECT NULL, e.entity_id::text, e.entity_type::text, e.name::text, {entity}
FROM entity e WHERE (SELECT fits FROM fits) AND e.entity_id = ANY(ARRAY(
    SELECT CASE WHEN outgoing THEN o ELSE s END FROM edge UNION SELECT unnest($1::text[])
))
UNION ALL
SELECT outgoing, s, p, o, {listed} FROM edge WHERE (SELECT fits FROM fits)
UNION ALL
SELECT {nothing} WHERE NOT (SELECT fits FROM fits)
"""


def entities_sql(layout: StoreLayout, columns: str) -> str:
    """``columns`` of the visible entities among ``$1`` (alias ``e``)."""
    return f"SELECT {columns} FROM entity e WHERE e.entity_id = ANY($1::text[]){_visible(layout, 'e')}"


def _distinct(table: str, alias: str, column: str, visible: str, indexed: bool) -> str:
    """The distinct values of ``alias.column`` over the rows of ``table`` meeting ``visible`` (`` AND ...``).

    ``indexed`` (a btree index leads with ``column``): by skipping through the index, each value the next one
    greater than the last, a few probes a value however many rows hold it; else by reading every row.
    """
    if not indexed:
        return f"SELECT DISTINCT {alias}.{column}::text AS value FROM {table} {alias} WHERE TRUE{visible}"
    first = f"SELECT {alias}.{column} FROM {table} {alias} WHERE {alias}.{column} IS NOT NULL"
    return f"""
WITH RECURSIVE v (value) AS (
    ({first}{visible} ORDER BY {alias}.{column} LIMIT 1)
    UNION ALL
    SELECT ({first} AND {alias}.{column} > v.value{visible} ORDER BY {alias}.{column} LIMIT 1)
    FROM v WHERE v.value IS NOT NULL
)
SELECT value::text AS value FROM v WHERE value IS NOT NULL
"""


def entity_types_sql(layout: StoreLayout) -> str:
    """Types of the visible entities."""
    return _distinct("entity", "e", "entity_type", _visible(layout, "e"), layout.types_indexed)


def predicates_sql(layout: StoreLayout) -> str:
    """Predicates of the visible relationships (those touching no merged entity)."""
    return _distinct("relationship", "r", "predicate", _touches_no_merged(layout), layout.predicates_indexed)


RELATIONSHIPS_SIZE_SQL = (
    "SELECT coalesce((SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass('relationship')), -1)"
)
"""The planner's estimate of the relationships (-1: the table was never analysed)."""

RELATIONSHIPS_PROBE_SQL = "SELECT count(*) FROM (SELECT FROM relationship LIMIT $1::bigint + 1) r"
"""The relationships, counted up to ``$1 + 1`` (for a table never analysed)."""


def exact_statistics_sql(layout: StoreLayout) -> str:
    """The ``statistics`` primitive's rows, counted: ``('T', type, NULL, NULL, n)`` per type of the visible
    entities, ``('P', predicate, NULL, NULL, n)`` per predicate of the visible relationships (each triple once),
    and ``('H', id, type, name, degree)`` for the ``$1`` visible entities with the most of them (both ways, a
    self-loop once: the rows ``hop`` gives), most first, ties by id. One statement: three aggregates over the
    relationships, one over the entities.
    """
    distinct = "" if layout.unique_keys else "DISTINCT "
    return f"""
WITH edge AS NOT MATERIALIZED (
    SELECT {distinct}r.subject_id::text AS s, r.predicate::text AS p, r.object_id::text AS o
    FROM relationship r WHERE TRUE{_touches_no_merged(layout)}
),
degree AS MATERIALIZED (
    SELECT id, count(*) AS n FROM (SELECT s AS id FROM edge UNION ALL SELECT o FROM edge WHERE s <> o) ends GROUP BY id
)
SELECT 'T', e.entity_type::text, NULL, NULL, count(*) FROM entity e WHERE TRUE{_visible(layout, "e")} GROUP BY 2
UNION ALL
SELECT 'P', p, NULL, NULL, count(*) FROM edge GROUP BY p
UNION ALL
(SELECT 'H', d.id, e.entity_type::text, e.name::text, d.n
 FROM degree d JOIN entity e ON e.entity_id = d.id{_visible(layout, "e")}
 ORDER BY d.n DESC, d.id COLLATE "C" LIMIT $1)
"""


ESTIMATED_STATISTICS_SQL = """
WITH size AS (
    SELECT (SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = to_regclass('entity')) AS entities,
           (SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = to_regclass('relationship')) AS edges
),
common AS (
    SELECT s.tablename::text AS tab, s.attname::text AS col, v.value, v.share::float8 AS share
    FROM pg_stats s CROSS JOIN LATERAL unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS v(value, share)
    WHERE s.schemaname = current_schema() AND s.tablename IN ('entity', 'relationship')
      AND s.attname IN ('entity_type', 'predicate', 'subject_id', 'object_id')
),
degree AS (
    SELECT value AS id, sum(share) * (SELECT edges FROM size) AS n
    FROM common WHERE tab = 'relationship' AND col IN ('subject_id', 'object_id') GROUP BY value
)
SELECT 'T', value, NULL, NULL, round(share * (SELECT entities FROM size))::bigint
FROM common WHERE tab = 'entity' AND col = 'entity_type'
UNION ALL
SELECT 'P', value, NULL, NULL, round(share * (SELECT edges FROM size))::bigint
FROM common WHERE tab = 'relationship' AND col = 'predicate'
UNION ALL
(SELECT 'H', d.id, e.entity_type::text, e.name::text, round(d.n)::bigint
 FROM degree d JOIN entity e ON e.entity_id = d.id AND e.status::text IS DISTINCT FROM 'merged'
 ORDER BY d.n DESC, d.id COLLATE "C" LIMIT $1)
"""
"""The rows of :func:`exact_statistics_sql`, estimated from the planner's statistics (``pg_stats``, as of the
last ANALYZE): the most common values of the type, predicate and end columns times the tables' estimated
sizes. Values too rare to be among them are left out; a relationship touching a merged entity counts."""


def rescore_sql(layout: StoreLayout) -> str:
    """The nearest (cosine) of the candidate rows ``$2`` of the vectors' codes to the query vector ``$1``, types ``$3``,
    at most ``$4``, best first; no row unless ``$5`` is the codes' current stamp (:mod:`bfsql_postgres.vector_codes`).
    """
    visible = f"e.embedding IS NOT NULL{_visible(layout, 'e')}"
    types = "($3::text[] IS NULL OR e.entity_type::text = ANY($3::text[]))"
    query = _query_vector(layout)
    return f"""
SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
       (1 - (e.embedding <=> {query}))::float8 AS similarity
FROM bfsql_vector_row r JOIN entity e ON e.entity_id = r.entity_id
WHERE r.row = ANY($2::int[]) AND {visible} AND {types}
  AND EXISTS (SELECT 1 FROM bfsql_meta m WHERE m.key = 'vector_codes' AND m.value = $5::text)
ORDER BY e.embedding <=> {query}, e.entity_id
LIMIT $4
"""


def _query_vector(layout: StoreLayout) -> str:
    """The query vector ``$1`` (text) as the column's type, parsed once a statement: in a generic plan (the pool
    forces them) a cast written beside the column is parsed again for every row (10 s over a million)."""
    return f"(SELECT $1::text::{layout.vector_type})"


def vector_search_sql(layout: StoreLayout) -> str:
    """Nearest neighbours of the query vector ``$1`` (cosine), types ``$2``, at most ``$3``, best first.

    With the HNSW index (an older ``bfsql postgres load`` built it) the ``ORDER BY`` is the index's own
    expression, ``embedding::halfvec(D) <=> $1::halfvec(D)``, so PostgreSQL walks the index
    (iterative scans keep a type filter from starving it, see the backend's session settings)
    and the few rows it returns are sorted exactly. Without it, an exact scan.
    """
    visible = f"e.embedding IS NOT NULL{_visible(layout, 'e')}"
    types = "($2::text[] IS NULL OR e.entity_type::text = ANY($2::text[]))"
    if layout.vector_index and layout.vector_dimension:
        cast = f"halfvec({int(layout.vector_dimension)})"
        return f"""
WITH nearest AS MATERIALIZED (
    SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
           e.embedding::{cast} <=> $1::text::{cast} AS distance
    FROM entity e
    WHERE {visible} AND {types}
    ORDER BY e.embedding::{cast} <=> $1::text::{cast}
    LIMIT $3
)
SELECT entity_id, entity_type, name, (1 - distance)::float8 AS similarity FROM nearest ORDER BY distance, entity_id
"""
    query = _query_vector(layout)
    return f"""
SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
       (1 - (e.embedding <=> {query}))::float8 AS similarity
FROM entity e
WHERE {visible} AND {types}
ORDER BY e.embedding <=> {query}, e.entity_id
LIMIT $3
"""

_ASKED_TRIPLES = """
FROM unnest($1::text[], $2::text[], $3::text[]) AS w(s, p, o)
JOIN relationship r ON r.subject_id = w.s AND r.predicate = w.p AND r.object_id = w.o"""
"""The relationships ``($1[i], $2[i], $3[i])``. Once its plan is cached (a generic plan, after a few
executions), one primary-key probe per asked triple, whatever their number."""


def edge_metadata_sql(layout: StoreLayout) -> str:
    """Relationship columns of the visible triples ``($1[i], $2[i], $3[i])`` (no evidence).

    Rows ``(subject, predicate, object, confidence, source_documents, properties)``, the JSON
    columns as their text (see :data:`ENTITY_METADATA`). Where no unique key makes each
    triple one row, the row with the highest confidence is kept.
    """
    key = "r.subject_id, r.predicate, r.object_id"
    distinct = "" if layout.unique_keys else f"DISTINCT ON ({key}) "
    order = "" if layout.unique_keys else f"\nORDER BY {key}, r.confidence DESC NULLS LAST"
    return f"""
SELECT {distinct}r.subject_id::text, r.predicate::text, r.object_id::text, r.confidence::float8,
       r.source_documents::text, r.properties::text{_ASKED_TRIPLES}
WHERE TRUE{_asked_not_merged(layout)}{order}
"""


def provenance_sql(layout: StoreLayout) -> str | None:
    """De-duplicated evidence rows of the visible triples ``($1[i], $2[i], $3[i])``; None without evidence tables."""
    sources = []
    if layout.bundle_evidence:
        sources.append(
            "SELECT b.text_span::text, b.confidence::float8, b.document_id::text, b.section::text "
            "FROM bundle_evidence b "
            "WHERE b.relationship_key = r.subject_id || ':' || r.predicate || ':' || r.object_id"
        )
    if layout.evidence_table:
        sources.append(
            "SELECT v.text_span::text, v.confidence::float8, v.document_id::text, v.section::text "
            "FROM evidence v WHERE v.relationship_id = r.id"
        )
    if not sources:
        return None
    # UNION (not UNION ALL) removes duplicate evidence rows, as the memory backend does.
    return f"""
SELECT DISTINCT r.subject_id::text AS subject, r.predicate::text AS predicate, r.object_id::text AS object,
       x.text_span, x.confidence, x.document_id, x.section{_ASKED_TRIPLES}
CROSS JOIN LATERAL ({" UNION ".join(sources)}) AS x(text_span, confidence, document_id, section)
WHERE TRUE{_asked_not_merged(layout)}
"""


def like_pattern(text: str) -> str:
    """An ILIKE pattern matching ``text`` literally as a substring (``\\``, ``%`` and ``_`` escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def synonym_prefilter_safe(text: str) -> bool:
    """Whether a jsonb synonym list's text form contains every synonym containing ``text`` verbatim.

    jsonb prints strings with only ``"``, ``\\`` and control characters escaped, so any
    other query that is a substring of a synonym is a substring of the list's text.
    """
    return not any(ch in text for ch in '"\\') and all(ord(ch) >= 0x20 for ch in text)


def search_sql(layout: StoreLayout, *, synonym_prefilter: bool, fuzzy: bool = True) -> str:
    """Ranked name/synonym search.

    Parameters: ``$1`` query, ``$2`` ILIKE substring pattern of the query, ``$3`` types,
    ``$4`` limit, and with ``synonym_prefilter`` ``$5``, the same pattern, which the text of
    the synonym list must match.

    Tiers, lower first (as :func:`bfsql.search_rank.lexical_rank`): exact name 0, exact
    synonym 1, name prefix 2, synonym prefix 3, name substring 4, synonym substring 5; then,
    with pg_trgm and ``fuzzy``, names similar to the query (tier 6, most similar first). Ties
    go to the shorter label, then the smaller id.
    """
    fuzzy = layout.trigram and fuzzy
    synonyms = "e.synonyms::jsonb"
    matches = ["e.name ILIKE $2::text", f"{synonyms}::text ILIKE $5::text" if synonym_prefilter else "TRUE"]
    if fuzzy:
        matches.append("e.name % $1::text")
    similarity = "similarity(l.label, $1::text)" if fuzzy else "0"
    similar = "l.label % $1::text" if fuzzy else "FALSE"
    return f"""
WITH candidates AS (
    SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
           {synonyms} AS synonyms
    FROM entity e
    WHERE ($3::text[] IS NULL OR e.entity_type::text = ANY($3::text[])){_visible(layout, "e")}
      AND ({" OR ".join(matches)})
),
labels AS (
    SELECT c.entity_id, c.entity_type, c.name, 0 AS kind, c.name AS label FROM candidates c WHERE c.name IS NOT NULL
    UNION ALL
    SELECT c.entity_id, c.entity_type, c.name, 1 AS kind, s.label
    FROM candidates c
    CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(c.synonyms) = 'array' THEN c.synonyms ELSE '[]'::jsonb END) AS s(label)
    WHERE s.label <> ''
),
scored AS (
    SELECT l.entity_id, l.entity_type, l.name, l.kind,
           CASE WHEN lower(l.label) = lower($1::text) THEN 0
                WHEN starts_with(lower(l.label), lower($1::text)) THEN 2
                WHEN strpos(lower(l.label), lower($1::text)) > 0 THEN 4
                ELSE 6 END + l.kind AS tier,
           length(l.label) AS len,
           {similarity}::float8 AS sim,
           {similar} AS is_similar
    FROM labels l
),
best AS (
    SELECT DISTINCT ON (entity_id) entity_id, entity_type, name, tier,
           CASE WHEN tier >= 6 THEN -sim ELSE 0 END AS fuzz, len
    FROM scored
    WHERE tier < 6 OR (kind = 0 AND is_similar)
    ORDER BY entity_id, tier, CASE WHEN tier >= 6 THEN -sim ELSE 0 END, len
)
SELECT entity_id, entity_type, name, tier FROM best
ORDER BY tier, fuzz, len, entity_id
LIMIT $4
"""
