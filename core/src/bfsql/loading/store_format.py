"""What makes a file a bfsql SQLite store: its schema version and the tables every store has.

Apart from :mod:`bfsql.loading.sqlite_loader`, which writes stores, so that the backend that
reads them (and the demo, which names its store by them) does not load the loader.
"""

from __future__ import annotations

__all__ = ["REQUIRED_TABLES", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1"
"""Written to ``meta.schema_version``; a store with another version must be rebuilt."""

REQUIRED_TABLES = frozenset({"meta", "entity", "relationship", "evidence", "entity_label", "entity_fts"})
"""Tables every store has; the backend refuses a file without them."""
