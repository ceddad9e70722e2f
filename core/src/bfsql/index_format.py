"""What an SQLite store says about the array index saved in it (:mod:`bfsql.csr`): the format's version, the
stamp that ties the index to the store's contents, and the statistics saved beside it.

A module of its own, without numpy, so that a store opened for one call reads its statistics (and checks them
current) without loading the array code (see :mod:`bfsql.backends.sqlite`).
"""

from __future__ import annotations

import json

from bfsql.rows import GraphStatistics, Hub

__all__ = ["CSR_VERSION", "STORED_HUBS", "index_stamp", "stored_statistics"]

CSR_VERSION = "1"
"""Format of the saved arrays; a store with another version has its index built when opened."""

STORED_HUBS = 100
"""Hubs saved with the store's statistics (describe_schema names 10)."""


def index_stamp(entities: int, relationships: int) -> str:
    """What a saved index must match (``meta.csr``): its format and the store's entity and relationship counts."""
    return f"{CSR_VERSION}:{entities}:{relationships}"


def stored_statistics(meta: dict[str, str]) -> GraphStatistics | None:
    """The statistics :func:`bfsql.csr.save_index` saved in the store whose ``meta`` table this is, or None when
    there are none or they were saved with another index (a later load by an older bfsql) than the store's."""
    saved = json.loads(meta.get("statistics") or "null")
    if not isinstance(saved, dict) or saved.get("stamp") != meta.get("csr"):
        return None
    return GraphStatistics(
        exact=True, entity_type_counts=saved["entity_type_counts"], predicate_counts=saved["predicate_counts"],
        hubs=[Hub(*hub) for hub in saved["hubs"]],
    )
