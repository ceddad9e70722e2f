"""The SQL the backend sends: one parameterized statement per primitive or batch call.

No value is ever formatted into SQL text; the text varies only with the store's
layout (which evidence tables exist, whether pg_trgm is usable), decided at start-up.
Columns are cast to ``text``/``float8`` so that stores built by other tools (varchar,
enums, real) read the same. Merged entities (``status = 'merged'``) are filtered in
every statement, together with the edges touching them.
"""

from __future__ import annotations

from bfsql_postgres.layout import StoreLayout

__all__ = [
    "ENTITY_TYPES",
    "GET_NODES",
    "NODE_METADATA",
    "PREDICATES",
    "VECTOR_SEARCH",
    "edge_metadata_sql",
    "edges_sql",
    "like_pattern",
    "search_sql",
    "synonym_prefilter_safe",
]

_VISIBLE = "{alias}.status::text IS DISTINCT FROM 'merged'"
_MERGED = "m.status::text = 'merged'"


def _visible(alias: str) -> str:
    return _VISIBLE.format(alias=alias)


def edges_sql(layout: StoreLayout, *, outgoing: bool) -> str:
    """Outgoing (or incoming) edges of the visible entities among ``$1``.

    An entity without edges gives one row whose edge columns are NULL, so it answers
    ``[]`` rather than KeyError. ``DISTINCT`` is left out when unique indexes already
    guarantee one row per edge (the loader's schema). Rows come sorted by code point
    (``COLLATE "C"`` on UTF-8 is code point order), as Python sorts strings.
    """
    key, other = ("subject_id", "object_id") if outgoing else ("object_id", "subject_id")
    distinct = "" if layout.unique_keys else "DISTINCT "
    return f"""
SELECT {distinct}e.entity_id::text COLLATE "C" AS entity_id, r.subject_id::text COLLATE "C" AS subject,
       r.predicate::text COLLATE "C" AS predicate, r.object_id::text COLLATE "C" AS object
FROM unnest($1::text[]) AS w(id)
JOIN entity e ON e.entity_id = w.id
LEFT JOIN relationship r ON r.{key} = e.entity_id AND NOT EXISTS (
    SELECT 1 FROM entity m WHERE m.entity_id = r.{other} AND {_MERGED})
WHERE {_visible("e")}
ORDER BY entity_id, subject, predicate, object
"""


GET_NODES = f"""
SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type
FROM entity e
WHERE e.entity_id = ANY($1::text[]) AND {_visible("e")}
"""
"""Identity of the visible entities among ``$1``."""

NODE_METADATA = f"""
SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
       e.synonyms::text AS synonyms, e.properties::text AS properties, e.status::text AS status,
       e.confidence::float8 AS confidence, e.source::text AS source, e.canonical_url::text AS canonical_url
FROM entity e
WHERE e.entity_id = ANY($1::text[]) AND {_visible("e")}
"""
"""Every column but the embedding, for the visible entities among ``$1``."""

ENTITY_TYPES = f"SELECT DISTINCT e.entity_type::text AS value FROM entity e WHERE {_visible('e')}"
"""Types of the visible entities."""

PREDICATES = f"""
SELECT DISTINCT r.predicate::text AS value FROM relationship r
WHERE NOT EXISTS (SELECT 1 FROM entity m WHERE m.entity_id IN (r.subject_id, r.object_id) AND {_MERGED})
"""
"""Predicates of the visible relationships (those not touching a merged entity)."""

VECTOR_SEARCH = f"""
SELECT e.entity_id::text AS entity_id, e.entity_type::text AS entity_type, e.name::text AS name,
       (1 - (e.embedding <=> $1::text::vector))::float8 AS similarity
FROM entity e
WHERE e.embedding IS NOT NULL AND {_visible("e")}
  AND ($2::text[] IS NULL OR e.entity_type::text = ANY($2::text[]))
ORDER BY e.embedding <=> $1::text::vector, e.entity_id
LIMIT $3
"""
"""Nearest neighbours of the query vector ``$1`` (pgvector cosine distance), types ``$2``, at most ``$3``."""


def _evidence_sources(layout: StoreLayout) -> list[str]:
    sources = []
    if layout.bundle_evidence:
        sources.append(
            "SELECT b.text_span::text AS text_span, b.confidence::float8 AS confidence, "
            "b.document_id::text AS document_id, b.section::text AS section "
            "FROM bundle_evidence b "
            "WHERE b.relationship_key = r.subject_id || ':' || r.predicate || ':' || r.object_id"
        )
    if layout.evidence_table:
        sources.append(
            "SELECT v.text_span::text, v.confidence::float8, v.document_id::text, v.section::text "
            "FROM evidence v WHERE v.relationship_id = r.id"
        )
    return sources


def edge_metadata_sql(layout: StoreLayout) -> str:
    """Relationship columns and de-duplicated evidence of the visible triples ``($1[i], $2[i], $3[i])``."""
    # UNION (not UNION ALL) removes duplicate evidence rows, as the memory backend does.
    evidence = " UNION ".join(_evidence_sources(layout))
    return f"""
SELECT DISTINCT ON (r.subject_id, r.predicate, r.object_id)
       r.subject_id::text AS subject, r.predicate::text AS predicate, r.object_id::text AS object,
       r.confidence::float8 AS confidence, r.source_documents::text AS source_documents,
       r.properties::text AS properties,
       (SELECT json_agg(json_build_array(x.text_span, x.confidence, x.document_id, x.section))
        FROM ({evidence}) AS x)::text AS evidence
FROM unnest($1::text[], $2::text[], $3::text[]) AS w(s, p, o)
JOIN relationship r ON r.subject_id = w.s AND r.predicate = w.p AND r.object_id = w.o
WHERE NOT EXISTS (SELECT 1 FROM entity m WHERE m.entity_id IN (r.subject_id, r.object_id) AND {_MERGED})
ORDER BY r.subject_id, r.predicate, r.object_id, r.confidence DESC NULLS LAST
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


def search_sql(layout: StoreLayout, *, synonym_prefilter: bool) -> str:
    """Ranked name/synonym search.

    Parameters: ``$1`` query, ``$2`` ILIKE substring pattern of the query, ``$3`` types,
    ``$4`` limit, and with ``synonym_prefilter`` ``$5``, the same pattern, which the text of
    the synonym list must match.

    Tiers, lower first (as :func:`bfsql.search_rank.lexical_rank`): exact name 0, exact
    synonym 1, name prefix 2, synonym prefix 3, name substring 4, synonym substring 5; then,
    with pg_trgm, names similar to the query (tier 6, most similar first). Ties go to the
    shorter label, then the smaller id.
    """
    fuzzy = layout.trigram
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
    WHERE {_visible("e")}
      AND ($3::text[] IS NULL OR e.entity_type::text = ANY($3::text[]))
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
