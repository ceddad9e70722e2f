"""Loading graphs: bundle records and how they become node and edge metadata, readers, the SQLite loader.

A public namespace: ``from bfsql.loading import EntityRecord, node_metadata`` loads only what it
names (the loader and the readers are imported on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bfsql.lazy import lazy_names

if TYPE_CHECKING:
    from bfsql.loading.bundle import Record, parse_json_line, read_bundle
    from bfsql.loading.errors import BadRow
    from bfsql.loading.limits import LoadLimits
    from bfsql.loading.plain import PlainEntities, PlainEntity, PlainRelationship, PlainRelationships
    from bfsql.loading.prefixes import compact_iri
    from bfsql.loading.readers import ImpliedEntity, detect_format, read_records
    from bfsql.loading.records import (
        EntityRecord,
        EvidenceRecord,
        RelationshipRecord,
        edge_metadata,
        entity_metadata,
        node_metadata,
        relationship_metadata,
    )
    from bfsql.loading.sqlite_loader import load_sqlite

_WHERE = {
    "Record": ".bundle",
    "read_bundle": ".bundle",
    "parse_json_line": ".bundle",
    "LoadLimits": ".limits",
    "PlainEntities": ".plain",
    "PlainEntity": ".plain",
    "PlainRelationship": ".plain",
    "PlainRelationships": ".plain",
    "BadRow": ".errors",
    "compact_iri": ".prefixes",
    "ImpliedEntity": ".readers",
    "detect_format": ".readers",
    "read_records": ".readers",
    "EntityRecord": ".records",
    "EvidenceRecord": ".records",
    "RelationshipRecord": ".records",
    "edge_metadata": ".records",
    "entity_metadata": ".records",
    "node_metadata": ".records",
    "relationship_metadata": ".records",
    "load_sqlite": ".sqlite_loader",
}


__getattr__ = lazy_names(__name__, _WHERE)


__all__ = [
    "BadRow",
    "EntityRecord",
    "EvidenceRecord",
    "ImpliedEntity",
    "LoadLimits",
    "PlainEntities",
    "PlainEntity",
    "PlainRelationship",
    "PlainRelationships",
    "Record",
    "RelationshipRecord",
    "compact_iri",
    "detect_format",
    "edge_metadata",
    "entity_metadata",
    "load_sqlite",
    "node_metadata",
    "parse_json_line",
    "read_bundle",
    "read_records",
    "relationship_metadata",
]
