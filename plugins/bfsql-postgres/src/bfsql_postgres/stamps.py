"""Stamps in ``bfsql_meta`` that say data the loader saved is current, and the triggers that delete them.

The loader saves data derived from the graph tables (the vectors' codes, the intersection's rare
ends) with a stamp. A statement-level trigger on each table the data comes from deletes the stamp
whenever anything but a load (which saves the data and its stamp again) writes that table; a
server that finds no stamp does without the saved data.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["stale_trigger_statements"]


def stale_trigger_statements(schema: str, trigger: str, key: str, tables: Iterable[str]) -> list[str]:
    """The DDL of the function ``trigger`` deleting the stamp ``key`` and of a trigger of that name on each of
    ``tables``, for the tables of ``schema``."""
    meta = '"' + schema.replace('"', '""') + '".bfsql_meta'
    return [
        # schema-qualified: the trigger runs with the search_path of whoever writes the table
        f"CREATE OR REPLACE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN DELETE FROM {meta} WHERE key = '{key}'; RETURN NULL; END $$",
        *(
            # made once: replacing it would lock the table against readers until the load commits
            f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '{table}'::regclass "
            f"AND tgname = '{trigger}') THEN "
            # any column: a trigger on some would stop other tools changing their type (ALTER TABLE refuses)
            f"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {trigger}(); END IF; END $$"
            for table in tables
        ),
    ]
