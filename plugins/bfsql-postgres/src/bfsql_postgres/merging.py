"""Where a load's rows go and how they become the graph tables' rows.

A table that holds rows is loaded through a temporary staging table: the rows are copied there,
numbered in the order read (``seq``), then merged with set-based statements (an upsert: the last
record of a key wins, rows that would not change are not rewritten). A graph table that is empty
when the load starts (a fresh load) takes its rows straight from ``COPY`` instead (see
:func:`take_empty`): no staging table, no ``INSERT ... SELECT``, and its primary key and indexes
are built once after the rows are in.
"""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

from bfsql_postgres.copying import Target
from bfsql_postgres.rare_ends import ENDS_TRIGGER
from bfsql_postgres.schema import INDEXES
from bfsql_postgres.vector_codes import CODES_TRIGGER

__all__ = [
    "ENTITY_COLUMNS", "EVIDENCE_COLUMNS", "LOAD_SETTINGS", "RELATIONSHIP_COLUMNS", "STAGING", "merge", "take_empty",
    "targets",
]

ENTITY_COLUMNS = (
    "entity_id", "entity_type", "name", "properties", "status", "confidence", "synonyms", "source", "canonical_url",
)
RELATIONSHIP_COLUMNS = ("subject_id", "predicate", "object_id", "confidence", "source_documents", "properties")
EVIDENCE_COLUMNS = ("relationship_key", "text_span", "confidence", "document_id", "section")

STAGING = """
CREATE TEMP TABLE load_entity (
    seq bigint GENERATED ALWAYS AS IDENTITY, entity_id text, entity_type text, name text, properties jsonb,
    status text, confidence double precision, synonyms jsonb, source text, canonical_url text
) ON COMMIT DROP;
CREATE TEMP TABLE load_implied (LIKE load_entity INCLUDING IDENTITY) ON COMMIT DROP;
CREATE TEMP TABLE load_relationship (
    seq bigint GENERATED ALWAYS AS IDENTITY, subject_id text, predicate text, object_id text,
    confidence double precision, source_documents jsonb DEFAULT '[]', properties jsonb DEFAULT '{}'
) ON COMMIT DROP;
CREATE TEMP TABLE load_evidence (
    relationship_key text, text_span text, confidence double precision, document_id text, section text
) ON COMMIT DROP;
"""
"""The staging tables (``load_implied``: entities mentioned only by a triple table or RDF file); ``seq`` numbers
the rows as they arrive, which is the order they were read."""

_BARE_DEFAULTS = """
SELECT count(*) = 3 FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = to_regclass($1) AND NOT a.attisdropped
  AND (a.attname::text, coalesce(pg_get_expr(d.adbin, d.adrelid), '')) IN
      (('confidence', ''), ('source_documents', '''[]''::jsonb'), ('properties', '''{}''::jsonb'))
"""
"""The relationship table gives a bare relationship's other columns by default: no confidence, ``[]``, ``{}``."""


async def targets(conn: asyncpg.Connection, fresh: Iterable[str]) -> dict[str, Target]:
    """Where each kind of row is copied: ``entity``, ``implied`` (entities mentioned only by a triple table or RDF
    file), ``relationship``, ``bare`` (a bare relationship's triple; the table's defaults give the rest) and
    ``evidence``; straight into the graph tables named in ``fresh``."""
    fresh = set(fresh)

    def into(table: str, columns: tuple[str, ...]) -> Target:
        return Target(table, columns, freeze=True) if table in fresh else Target(f"load_{table}", columns)

    relationship = into("relationship", RELATIONSHIP_COLUMNS)
    bare = into("relationship", RELATIONSHIP_COLUMNS[:3])
    if relationship.table == "relationship" and not await conn.fetchval(_BARE_DEFAULTS, "relationship"):
        bare = relationship
    return {
        "entity": into("entity", ENTITY_COLUMNS),
        "implied": Target("load_implied", ENTITY_COLUMNS),
        "relationship": relationship,
        "bare": bare,
        "evidence": Target("load_evidence", EVIDENCE_COLUMNS),
    }


_ENTITY_COLUMNS_LIST = ", ".join(ENTITY_COLUMNS)

_IMPLIED = f"""
INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
SELECT DISTINCT ON (l.entity_id) l.entity_id, l.entity_type, l.name, l.properties, l.status, l.confidence,
       l.synonyms, l.source, l.canonical_url
FROM load_implied l WHERE NOT EXISTS (SELECT 1 FROM entity e WHERE e.entity_id = l.entity_id)
ORDER BY l.entity_id, l.seq
"""
"""Implied ids not known yet (after the full records)."""

_MERGE: dict[str, tuple[str, ...]] = {
    # Entities: the last full record of each id wins (rows that would not change are not rewritten);
    # then implied ids not known yet.
    "entity": (
        """
        CREATE TEMP TABLE new_entity ON COMMIT DROP AS
        SELECT DISTINCT ON (entity_id) * FROM load_entity ORDER BY entity_id, seq DESC
        """,
        """
        UPDATE entity e SET entity_type = n.entity_type, name = n.name, properties = n.properties,
            status = n.status, confidence = n.confidence, synonyms = n.synonyms, source = n.source,
            canonical_url = n.canonical_url
        FROM new_entity n
        WHERE e.entity_id = n.entity_id
          AND (e.entity_type, e.name, e.properties, e.status, e.confidence, e.synonyms, e.source, e.canonical_url)
              IS DISTINCT FROM
              (n.entity_type, n.name, n.properties, n.status, n.confidence, n.synonyms, n.source, n.canonical_url)
        """,
        f"""
        INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
        SELECT n.entity_id, n.entity_type, n.name, n.properties, n.status, n.confidence, n.synonyms, n.source,
               n.canonical_url
        FROM new_entity n WHERE NOT EXISTS (SELECT 1 FROM entity e WHERE e.entity_id = n.entity_id)
        """,
        _IMPLIED,
    ),
    # Relationships: the last record of each triple wins.
    "relationship": (
        """
        CREATE TEMP TABLE new_relationship ON COMMIT DROP AS
        SELECT DISTINCT ON (subject_id, predicate, object_id) * FROM load_relationship
        ORDER BY subject_id, predicate, object_id, seq DESC
        """,
        """
        UPDATE relationship r SET confidence = n.confidence, source_documents = n.source_documents,
            properties = n.properties
        FROM new_relationship n
        WHERE r.subject_id = n.subject_id AND r.predicate = n.predicate AND r.object_id = n.object_id
          AND (r.confidence, r.source_documents, r.properties)
              IS DISTINCT FROM (n.confidence, n.source_documents, n.properties)
        """,
        """
        INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties)
        SELECT n.subject_id, n.predicate, n.object_id, n.confidence, n.source_documents, n.properties
        FROM new_relationship n WHERE NOT EXISTS (
            SELECT 1 FROM relationship r
            WHERE r.subject_id = n.subject_id AND r.predicate = n.predicate AND r.object_id = n.object_id)
        """,
    ),
    # Evidence: each distinct row once.
    "bundle_evidence": (
        """
        INSERT INTO bundle_evidence (relationship_key, text_span, confidence, document_id, section)
        SELECT DISTINCT l.relationship_key, l.text_span, l.confidence, l.document_id, l.section
        FROM load_evidence l WHERE NOT EXISTS (
            SELECT 1 FROM bundle_evidence b
            WHERE b.relationship_key = l.relationship_key AND b.text_span IS NOT DISTINCT FROM l.text_span
              AND b.confidence IS NOT DISTINCT FROM l.confidence AND b.document_id IS NOT DISTINCT FROM l.document_id
              AND b.section IS NOT DISTINCT FROM l.section)
        """,
    ),
}
"""Each table's merge of the staged records into what it holds."""

_INTO_EMPTY: dict[str, tuple[str, ...]] = {
    "entity": (
        f"""
        INSERT INTO entity ({_ENTITY_COLUMNS_LIST})
        SELECT DISTINCT ON (entity_id) {_ENTITY_COLUMNS_LIST} FROM load_entity
        ORDER BY entity_id, seq DESC
        """,
        _IMPLIED,
    ),
    "relationship": (
        """
        INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties)
        SELECT DISTINCT ON (subject_id, predicate, object_id) subject_id, predicate, object_id, confidence,
               source_documents, properties
        FROM load_relationship ORDER BY subject_id, predicate, object_id, seq DESC
        """,
    ),
    "bundle_evidence": (
        """
        INSERT INTO bundle_evidence (relationship_key, text_span, confidence, document_id, section)
        SELECT DISTINCT relationship_key, text_span, confidence, document_id, section FROM load_evidence
        """,
    ),
}
"""The same merges into a table that holds nothing yet: the staged records as they win, nothing compared."""

_WITHOUT_REPEATS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "entity": (
        "entity_id",
        f"INSERT INTO entity ({_ENTITY_COLUMNS_LIST}) SELECT {_ENTITY_COLUMNS_LIST} FROM load_entity",
        (_IMPLIED,),
    ),
    "relationship": (
        "subject_id, predicate, object_id",
        "INSERT INTO relationship (subject_id, predicate, object_id, confidence, source_documents, properties) "
        "SELECT subject_id, predicate, object_id, confidence, source_documents, properties FROM load_relationship",
        (),
    ),
}
"""A table whose primary key is the record's key, filled when no key is given twice: the key column(s), the insert
of the staged records as they are, and what follows once the key is back. Sorting the records to keep the last of
each key costs as much as building the key's index: when no key repeats (the usual bundle), it is not needed."""

_EMPTY = "SELECT NOT EXISTS (SELECT FROM {table})"

LOAD_SETTINGS = "SET LOCAL work_mem = '256MB'; SET LOCAL maintenance_work_mem = '512MB'"
"""Memory of this load's sorts and index builds (the loader's own transaction only)."""

_PRIMARY_KEY = """
SELECT c.conname, array_agg(a.attname::text ORDER BY a.attname) AS columns
FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
WHERE c.conrelid = to_regclass($1) AND c.contype = 'p' GROUP BY c.conname
"""


async def _fill_without_repeats(conn: asyncpg.Connection, table: str) -> bool:
    """Fill the empty ``table`` with the staged records, its primary key dropped and built again after them; False
    (and nothing done) when it has no such key, another role's, or a key is staged twice."""
    if table not in _WITHOUT_REPEATS:
        return False
    key, insert, after = _WITHOUT_REPEATS[table]
    found = await conn.fetchrow(_PRIMARY_KEY, table)
    if found is None or sorted(found["columns"]) != sorted(c.strip() for c in key.split(",")):
        return False
    name = found["conname"]
    try:
        async with conn.transaction():
            await conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {_quoted(name)}")
            await conn.execute(insert)
            await conn.execute(f"ALTER TABLE {table} ADD CONSTRAINT {_quoted(name)} PRIMARY KEY ({key})")
    except (asyncpg.UniqueViolationError, asyncpg.InsufficientPrivilegeError):
        return False
    for sql in after:
        await conn.execute(sql)
    return True


def _quoted(name: str) -> str:
    """A constraint name read from the catalog, as an SQL identifier (any double quote in it doubled)."""
    return '"' + name.replace('"', '""') + '"'


async def _drop(conn: asyncpg.Connection, index: str) -> bool:
    """Drop ``index`` (to build it again later); False when the loader's role may not (another role's table)."""
    try:
        async with conn.transaction():
            await conn.execute(f"DROP INDEX IF EXISTS {index}")
    except asyncpg.InsufficientPrivilegeError:
        return False
    return True


_KEYS = {"entity": ("entity_id",), "relationship": ("subject_id", "predicate", "object_id")}
"""The graph tables that can be filled straight by COPY, and their keys (their primary keys in bfsql's schema)."""

_FRESH_SINCE = 140000
"""PostgreSQL 14: ``COPY ... (FREEZE)`` sets the visibility map, and ``max(tid)`` settles repeated keys."""

_TAKEABLE = f"""
SELECT c.relkind = 'r' AND NOT c.relrowsecurity
   AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid
                   AND t.tgname NOT IN ('{CODES_TRIGGER}', '{ENDS_TRIGGER}'))
FROM pg_class c WHERE c.oid = to_regclass($1)
"""
"""A plain table without triggers (foreign keys have some) but bfsql's own, marking the vectors' codes and the saved
ends stale (the load saves them again), nor row security (which COPY refuses)."""


async def take_empty(conn: asyncpg.Connection, table: str) -> str | None:
    """Make the graph table ``table`` ready to be filled by COPY when it holds no row: truncated, so that COPY
    appends in the order it receives (it skips the free space map of a table truncated in its transaction) and
    may freeze the rows; its primary key and bfsql's indexes dropped (:func:`merge` builds them after the rows).
    The name of the primary key; None (nothing changed) when it holds rows or is no plain table of the loader's
    role with the usual key.

    The table stays locked against readers (``ACCESS EXCLUSIVE``) until the commit: they wait for the new graph
    instead of finding an empty one.
    """
    if table not in _KEYS or int(await conn.fetchval("SHOW server_version_num")) < _FRESH_SINCE:
        return None
    if not await conn.fetchval(_EMPTY.format(table=table)):
        return None
    found = await conn.fetchrow(_PRIMARY_KEY, table)
    if not await conn.fetchval(_TAKEABLE, table) or found is None or found["columns"] != sorted(_KEYS[table]):
        return None
    try:
        async with conn.transaction():
            await conn.execute(f"TRUNCATE {table}")
            await conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {_quoted(found['conname'])}")
            for name, (on, _) in INDEXES.items():
                if on == table:
                    await conn.execute(f"DROP INDEX IF EXISTS {name}")
    except (asyncpg.InsufficientPrivilegeError, asyncpg.DependentObjectsStillExistError,
            asyncpg.FeatureNotSupportedError):
        return None
    return str(found["conname"])


async def _key_taken(conn: asyncpg.Connection, table: str, name: str) -> None:
    """Give the table filled by COPY its primary key back. A key copied more than once keeps its last row (the
    one COPY stored last: the table was truncated, so rows sit in the order received)."""
    key = _KEYS[table]
    add = f"ALTER TABLE {table} ADD CONSTRAINT {_quoted(name)} PRIMARY KEY ({', '.join(key)})"
    try:
        async with conn.transaction():
            await conn.execute(add)
        return
    except asyncpg.UniqueViolationError:
        pass
    match = " AND ".join(f"t.{column} = d.{column}" for column in key)
    await conn.execute(
        f"DELETE FROM {table} t USING (SELECT {', '.join(key)}, max(ctid) AS last FROM {table} "
        f"GROUP BY {', '.join(key)} HAVING count(*) > 1) d WHERE {match} AND t.ctid <> d.last"
    )
    await conn.execute(add)


async def merge(conn: asyncpg.Connection, taken: dict[str, str]) -> list[str]:
    """Bring the copied rows into each table. A table ``taken`` (by :func:`take_empty`, with the name of its primary
    key) gets that key and
    indexes (and the entity table the implied entities it lacks). Otherwise the staged records are merged: into a
    table that holds nothing yet without comparing, its indexes dropped and built after the rows are in (its
    primary key too, when no key repeats); into one that holds rows row by row (an upsert).

    The indexes a fresh table needs are not built here but returned, for the caller to build once the vectors are
    stored: the ``UPDATE`` that stores them would otherwise write the entity table's for every entity (at a million
    entities, most of the update's 12 s)."""
    deferred: list[str] = []
    for table, statements in _MERGE.items():
        if table in taken:
            await _key_taken(conn, table, taken[table])
            if table == "entity":
                await conn.execute(_IMPLIED)
            indexes = [name for name, (on, _) in INDEXES.items() if on == table]
        else:
            empty = bool(await conn.fetchval(_EMPTY.format(table=table)))
            indexes = [name for name, (on, _) in INDEXES.items() if on == table and empty and await _drop(conn, name)]
            if not (empty and await _fill_without_repeats(conn, table)):
                for sql in _INTO_EMPTY[table] if empty else statements:
                    await conn.execute(sql)
        deferred += indexes
    return deferred
