"""JSONL bundles read by PostgreSQL itself: the lines copied as they are, their records taken apart in SQL.

Reading a bundle in Python (decoding each line, validating it as a record, encoding it again
for COPY) costs several microseconds a line: more than the database's whole share of a load.
So a JSONL bundle is sent as it is: one COPY of its lines into a temporary table (CSV with a
delimiter and a quote that valid JSON never holds raw: each line is one field), numbered in
file order. One statement then parses the lines as jsonb and takes the records apart into
the loader's staging tables.

Only lines that core's reader (:func:`bfsql.loading.bundle.parse_json_line`) turns into the very
same record are taken apart in SQL: an object that starts the line, short enough for no size
limit of the load to apply (the rule of :func:`bfsql.loading.limits.may_break_limits`), whose
kind and keys are a record's and whose fields have the record's JSON types; whose ids hold no
control character and are not blank to Python's ``str.strip`` (:data:`CONTROL`, :data:`BLANK`); whose properties,
if any, nest no deeper than the limit and hold no number (Python reads ``1e2`` as the float
``100.0``, the database as the integer 100, and a number may be rewritten: the database keeps
``1.50`` as written); whose confidence is short (no overflow) and is no negative zero. What the
database refuses to parse as jsonb (NUL characters, lone surrogates, NaN) is no such line either.
Every other line, and only those, is read by core's reader, in file order: it either becomes a
record (staged like any other) or raises the same :class:`~bfsql.BadRow`, naming the file and
line, that ``bfsql load`` raises. A file that COPY cannot take whole (bytes that are not UTF-8, a
raw carriage return inside a line, a line that is not one field) is read by core's reader instead.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg

from bfsql import Record
from bfsql.loading import LoadLimits, parse_json_line

__all__ = ["BLANK", "CONTROL", "LINES_DDL", "count_lines", "stage_bundle"]

LINES_DDL = "CREATE TEMP TABLE load_line (n bigint GENERATED ALWAYS AS IDENTITY, line text) ON COMMIT DROP;"
"""The lines of one bundle (emptied for each bundle)."""

_DELIMITER, _QUOTE = "\x02", "\x01"
"""Characters JSON never holds raw (a control character must be escaped in a string, and is no token)."""

_WHITESPACE = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""What Python's ``str.strip`` strips (a regular expression's character class)."""

CONTROL = "[\x01-\x1f\x7f-\x9f]"
"""A control character (NUL cannot be in the database's text)."""

BLANK = f"^[{_WHITESPACE}]*$"
"""A text that is blank to Python."""

_KEYS = {
    "entity": ("kind", "id", "entity_type", "name", "synonyms", "properties", "status", "confidence", "source",
               "canonical_url"),
    "relationship": ("kind", "subject", "predicate", "object", "confidence", "source_documents", "properties"),
    "evidence": ("kind", "subject", "predicate", "object", "text_span", "confidence", "document_id", "section"),
}


def _typed(key: str, *types: str) -> str:
    """``key`` is absent or of one of the JSON ``types`` (``null`` included where it is one)."""
    listed = ", ".join(f"'{t}'" for t in types)
    return f"coalesce(jsonb_typeof(j->'{key}'), '{types[0]}') IN ({listed})"


def _strings(key: str) -> str:
    """``key`` is absent, or a list of strings."""
    return (f"({_typed(key, 'array')} AND (j->'{key}' IS NULL OR j->'{key}' = '[]'::jsonb "
            f"OR NOT jsonb_path_exists(j, '$.{key}[*] ? (@.type() != \"string\")')))")


def _ids(*keys: str, texts: tuple[str, ...] | None = None) -> str:
    """Every one of ``keys`` is a string; none holds a control character; none is blank (a first character that is
    printable ASCII saves the regular expression). ``texts``: the keys' texts, where a query has them already."""
    texts = texts or tuple(f"j->>'{k}'" for k in keys)
    strings = " AND ".join(f"jsonb_typeof(j->'{k}') = 'string'" for k in keys)
    filled = " AND ".join(f"(ascii({t}) BETWEEN 33 AND 126 OR {t} !~ $blank)" for t in texts)
    return f"{strings} AND concat({', '.join(texts)}) !~ $control AND {filled}"


_CONFIDENCE = (
    "(coalesce(jsonb_typeof(j->'confidence'), 'null') = 'null' OR (jsonb_typeof(j->'confidence') = 'number' "
    "AND length(j->>'confidence') <= 24 AND NOT ((j->>'confidence')::float8 = 0 AND strpos(line, '-0') > 0)))"
)
"""No confidence, or a number the database reads as Python does (not huge, not tiny, not a negative zero)."""

_PROPERTIES = ("(j->'properties' IS NULL OR (jsonb_typeof(j->'properties') = 'object' "
               "AND octet_length(line) - octet_length(replace(replace(line, '[', ''), '{', '')) <= $depth "
               "AND NOT j @? '$.properties.** ? (@.type() == \"number\")'))")
"""No properties, or an object shallow enough and without numbers (see the module)."""

_LINES_PARSED = """
SELECT n, line, CASE WHEN @VALID@octet_length(line) <= $longest AND left(line, 1) = '{' THEN line::jsonb END AS j
FROM load_line WHERE line IS NOT NULL @REST@ OFFSET 0
"""
"""Each line, parsed when it may be taken apart in SQL (@VALID@: a test that it is JSON, where some line is not;
@REST@: which lines)."""

_RELATIONSHIPS = f"""
INSERT INTO load_relationship (seq, subject_id, predicate, object_id, confidence, source_documents, properties)
SELECT $first::bigint + n, s, p, o, (j->>'confidence')::float8, coalesce(j->'source_documents', '[]'),
       coalesce(j->'properties', '{{}}')
FROM (
    SELECT n, line, j, j->>'subject' AS s, j->>'predicate' AS p, j->>'object' AS o
    FROM ({_LINES_PARSED}) parsed WHERE j->>'kind' = 'relationship' OFFSET 0
) rows
WHERE (j - $keys::text[]) = '{{}}'::jsonb AND {_ids('subject', 'predicate', 'object', texts=('s', 'p', 'o'))}
  AND {_CONFIDENCE} AND {_strings('source_documents')} AND {_PROPERTIES}
"""
"""The relationships (most of a bundle's lines) taken apart, each id read once (parameters: see :func:`_sql`)."""

_KIND_OF = f"""
CASE
    WHEN j->>'kind' = 'entity' AND (j - $entity_keys::text[]) = '{{}}'::jsonb AND {_ids('id', 'entity_type')}
         AND {_typed('name', 'null', 'string')} AND {_strings('synonyms')} AND {_PROPERTIES}
         AND {_typed('status', 'null', 'string')} AND {_CONFIDENCE}
         AND {_typed('source', 'null', 'string')} AND {_typed('canonical_url', 'null', 'string')}
    THEN 'entity'
    WHEN j->>'kind' = 'evidence' AND (j - $evidence_keys::text[]) = '{{}}'::jsonb
         AND {_ids('subject', 'predicate', 'object')} AND {_typed('text_span', 'null', 'string')} AND {_CONFIDENCE}
         AND {_typed('document_id', 'null', 'string')} AND {_typed('section', 'null', 'string')}
    THEN 'evidence'
END"""

_OTHERS = f"""
WITH parsed AS MATERIALIZED (
    SELECT n, j, {_KIND_OF} AS kind FROM (
        {_LINES_PARSED.replace("@REST@", "AND NOT (($first::bigint + n) IN (SELECT seq FROM load_relationship))")}
    ) lines
),
entities AS (
    INSERT INTO load_entity (seq, implied, entity_id, entity_type, name, properties, status, confidence, synonyms,
                             source, canonical_url)
    SELECT $first::bigint + n, FALSE, j->>'id', j->>'entity_type', j->>'name', coalesce(j->'properties', '{{}}'),
           j->>'status', (j->>'confidence')::float8, coalesce(j->'synonyms', '[]'), j->>'source', j->>'canonical_url'
    FROM parsed WHERE kind = 'entity'
    RETURNING 1
),
evidence AS (
    INSERT INTO load_evidence (relationship_key, text_span, confidence, document_id, section)
    SELECT concat_ws(':', j->>'subject', j->>'predicate', j->>'object'), j->>'text_span', (j->>'confidence')::float8,
           j->>'document_id', j->>'section'
    FROM parsed WHERE kind = 'evidence'
    RETURNING 1
)
SELECT 'entity', (SELECT count(*) FROM entities)
UNION ALL SELECT 'evidence', (SELECT count(*) FROM evidence)
UNION ALL SELECT NULL, n FROM parsed WHERE kind IS NULL
"""
"""The lines :data:`_RELATIONSHIPS` did not take (it numbers what it takes ``$first + n``): entities and evidence
taken apart, and the numbers of the lines left to core's reader."""

_LINES = "SELECT n, line FROM load_line WHERE n IN (SELECT unnest($1::bigint[])) ORDER BY n"


def count_lines(path: Path) -> int:
    """Lines of a file (the last one counted whether or not a line break ends it), read in big blocks."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


async def _copy_lines(conn: asyncpg.Connection, path: Path) -> int | None:
    """COPY the file's lines into ``load_line``, numbered from 1: how many; None when COPY cannot take them one a
    row."""
    await conn.execute("TRUNCATE load_line RESTART IDENTITY")
    lines = count_lines(path)
    try:
        async with conn.transaction():  # a savepoint: a failed COPY leaves the load going on
            await conn.copy_to_table("load_line", source=path, columns=["line"], format="csv",
                                     delimiter=_DELIMITER, quote=_QUOTE)
            if await conn.fetchval("SELECT count(*) FROM load_line") != lines:
                raise _NotOneFieldALine
    except (asyncpg.DataError, asyncpg.BadCopyFileFormatError, asyncpg.CharacterNotInRepertoireError,
            asyncpg.UntranslatableCharacterError, _NotOneFieldALine):
        return None
    return lines


def _sql(statement: str, valid: str, parameters: dict[str, object]) -> tuple[str, list[object]]:
    """``statement`` with its named parameters numbered, and their values in order.

    The names: ``$keys`` (of relationships), ``$entity_keys``, ``$evidence_keys``, ``$longest`` (a line's bytes
    that no limit can apply to), ``$depth`` (of nesting), ``$first`` (the bundle's first sequence number - 1),
    ``$control`` (:data:`CONTROL`), ``$blank`` (:data:`BLANK`). ``valid`` tests that a line is JSON (or nothing).
    """
    sql = statement.replace("@VALID@", valid).replace("@REST@", "")
    used = [name for name in parameters if re.search(rf"\${name}\b", sql)]
    for number, name in enumerate(used, start=1):
        sql = re.sub(rf"\${name}\b", f"${number}", sql)
    return sql, [parameters[name] for name in used]


class _NotOneFieldALine(Exception):
    """COPY did not read the file as one field a line."""


async def stage_bundle(
    conn: asyncpg.Connection,
    path: Path,
    first: int,
    limits: LoadLimits,
    stage: Callable[[int, Record], Awaitable[None]],
) -> tuple[int, dict[str, int]] | None:
    """Stage the records of the JSONL bundle ``path`` (sequence numbers ``first`` + line - 1).

    ``stage(seq, record)`` stages a record core's reader made of a line the SQL does not take
    apart. Returns the file's line count and the records staged in SQL by kind; None when COPY
    cannot take the file (nothing is staged then: read it with core's reader).
    """
    lines = await _copy_lines(conn, path)
    if lines is None:
        return None
    shortest = min(limits.id_chars, limits.name_chars, limits.text_chars, 2 * limits.list_items - 1)
    parameters: dict[str, object] = {
        "keys": list(_KEYS["relationship"]), "entity_keys": list(_KEYS["entity"]),
        "evidence_keys": list(_KEYS["evidence"]), "longest": shortest, "depth": limits.depth, "first": first - 1,
        "control": CONTROL, "blank": BLANK,
    }
    valid = ""
    try:
        async with conn.transaction():
            sql, values = _sql(_RELATIONSHIPS, valid, parameters)
            status = await conn.execute(sql, *values)
    except asyncpg.DataError:  # some line is no JSON the database takes: parse only the others
        valid = "pg_input_is_valid(line, 'jsonb') AND "
        sql, values = _sql(_RELATIONSHIPS, valid, parameters)
        status = await conn.execute(sql, *values)
    sql, values = _sql(_OTHERS, valid, parameters)
    rows = await conn.fetch(sql, *values)
    staged = {kind: count for kind, count in rows if kind is not None}
    staged["relationship"] = int(status.rsplit(" ", 1)[-1])
    left = [number for kind, number in rows if kind is None]
    name = str(path)
    for start in range(0, len(left), 10_000):
        for number, line in await conn.fetch(_LINES, left[start : start + 10_000]):
            text = line.strip()
            if number == 1:
                text = text.removeprefix("\ufeff")
            if text:
                await stage(first - 1 + number, parse_json_line(text, name, number, limits))
    return lines, staged
