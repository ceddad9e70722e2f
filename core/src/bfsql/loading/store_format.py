"""What makes a file a bfsql SQLite store: its schema version and the tables every store has.

Apart from :mod:`bfsql.loading.sqlite_loader`, which writes stores, so that the backend that
reads them (and the demo, which names its store by them) does not load the loader.
"""

from __future__ import annotations

import json

from bfsql.rows import GraphStatistics, Hub

__all__ = ["CSR_VERSION", "REQUIRED_TABLES", "SCHEMA_VERSION", "STORED_HUBS", "index_stamp", "stored_statistics"]

SCHEMA_VERSION = "1"
"""Written to ``meta.schema_version``; a store with another version must be rebuilt."""

REQUIRED_TABLES = frozenset({"meta", "entity", "relationship", "evidence", "entity_label", "entity_fts"})
"""Tables every store has; the backend refuses a file without them."""

CSR_VERSION = "1"
"""Format of the saved array index (:mod:`bfsql.csr`); a store with another version has its index built when
opened."""

STORED_HUBS = 100
"""Hubs saved with the store's statistics (describe_schema names 10)."""


def index_stamp(entities: int, relationships: int) -> str:
    """What a saved array index must match (``meta.csr``): its format and the store's entity and relationship
    counts."""
    return f"{CSR_VERSION}:{entities}:{relationships}"


def stored_statistics(meta: dict[str, str]) -> GraphStatistics | None:
    """The statistics :func:`bfsql.csr.save_index` saved in the store whose ``meta`` table this is, or None when
    there are none or they were saved with another index (a later load by an older bfsql) than the store's.

    Here, not in :mod:`bfsql.csr`, so that the store reads them without numpy.
    """
    saved = json.loads(meta.get("statistics") or "null")
    if not isinstance(saved, dict) or saved.get("stamp") != meta.get("csr"):
        return None
    return GraphStatistics(
        exact=True, entity_type_counts=saved["entity_type_counts"], predicate_counts=saved["predicate_counts"],
        hubs=[Hub(*hub) for hub in saved["hubs"]],
    )
