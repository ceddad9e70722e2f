"""Start-up checks: the label, the id index and the full-text index the backend relies on.

Every primitive reads nodes through ``(n:<label> {<id>: $id})``; without an index
on that label and property each call would scan every node of the label, so a
missing index is a start-up error that shows the statement creating it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bfsql import BfsqlError
from bfsql_neo4j.cypher import Statements
from bfsql_neo4j.dialect import DialectName

__all__ = ["IndexReport", "Neo4jSetupError", "check_fulltext", "check_label", "choose_id_property", "read_indexes"]

_EQUALITY_INDEX_TYPES = {"RANGE", "TEXT", "BTREE"}


class Neo4jSetupError(BfsqlError):
    """The graph lacks something the backend needs (label, index); the hint says how to add it."""

    code = "setup_error"


@dataclass
class IndexReport:
    """What the server's index listing says about the served label."""

    equality: set[str] = field(default_factory=set)
    """Properties of the label with a single-property index usable for equality lookups."""
    fulltext: dict[str, list[str]] = field(default_factory=dict)
    """Full-text indexes covering the label: name (FalkorDB: the label) -> indexed properties."""
    not_online: list[str] = field(default_factory=list)
    """Indexes on the label that exist but are not ONLINE yet (Neo4j: still populating or failed)."""


def read_indexes(rows: Iterable[Mapping[str, Any]], statements: Statements) -> IndexReport:
    """Summarise ``statements.indexes()`` rows for the served label."""
    label = statements.node_label
    report = IndexReport()
    for row in rows:
        if statements.dialect.name is DialectName.FALKORDB:
            if row.get("label") != label or str(row.get("entitytype", "NODE")).upper() != "NODE":
                continue
            for prop, kinds in (row.get("types") or {}).items():
                kinds = {str(k).upper() for k in kinds}
                if "RANGE" in kinds:
                    report.equality.add(prop)
                if "FULLTEXT" in kinds:
                    report.fulltext.setdefault(label, []).append(prop)
            continue
        if str(row.get("entityType", "")).upper() != "NODE" or label not in (row.get("labelsOrTypes") or []):
            continue
        kind = str(row.get("type", "")).upper()
        if str(row.get("state", "ONLINE")).upper() != "ONLINE":
            report.not_online.append(f"{row.get('name')} ({row.get('state')})")
            continue
        props = list(row.get("properties") or [])
        if kind in _EQUALITY_INDEX_TYPES and len(props) == 1 and row.get("labelsOrTypes") == [label]:
            report.equality.add(props[0])
        elif kind == "FULLTEXT":
            report.fulltext[str(row.get("name"))] = props
    return report


def check_label(labels: Iterable[str], statements: Statements) -> None:
    """Neo4jSetupError unless some node carries the served label."""
    if statements.node_label not in set(labels):
        raise Neo4jSetupError(
            f"No node in the graph has the label {statements.node_label!r}, so there is nothing to serve.",
            "Set --node-label (BFSQL_NEO4J_NODE_LABEL) to the label every entity carries, or add one to the "
            "entities, e.g. MATCH (n:Person) SET n:Entity.",
        )


def choose_id_property(
    report: IndexReport, configured: str | None, candidates: list[str], statements: Statements
) -> str:
    """The id property to serve: the configured one if indexed, else the first indexed candidate."""
    label = statements.node_label
    pending = f" Indexes on :{label} still being built: {', '.join(report.not_online)}." if report.not_online else ""
    if configured is not None:
        if configured in report.equality:
            return configured
        create = Statements(
            statements.dialect, label, configured, statements.name_property, statements.synonyms_property
        ).create_id_index()
        raise Neo4jSetupError(
            f"The id property {configured!r} of :{label} has no index, so every lookup would scan all "
            f"{label} nodes.{pending}",
            f"Create it with: {create}",
        )
    for candidate in candidates:
        if candidate in report.equality:
            return candidate
    create = Statements(
        statements.dialect, label, candidates[0], statements.name_property, statements.synonyms_property
    ).create_id_index()
    raise Neo4jSetupError(
        f"None of the id properties {', '.join(candidates)} of :{label} has an index.{pending}",
        f"Set --id-property (NEO4J_ID_PROPERTY) to the property holding the canonical id and index it, e.g.: {create}",
    )


def check_fulltext(report: IndexReport, index_name: str, statements: Statements) -> str:
    """The full-text index to query (Neo4j: its name; FalkorDB: the label); Neo4jSetupError if there is none."""
    wanted = statements.node_label if statements.dialect.name is DialectName.FALKORDB else index_name
    if wanted in report.fulltext:
        return wanted
    others = f" Full-text indexes on :{statements.node_label}: {', '.join(report.fulltext)}." if report.fulltext else ""
    target = "label" if statements.dialect.name is DialectName.FALKORDB else "index"
    raise Neo4jSetupError(
        f"search_entities needs a full-text index on :{statements.node_label}, and there is no {target} "
        f"{wanted!r}.{others}",
        f"Create it with: {statements.create_fulltext_index(index_name)}"
        + (" (or set --fulltext-index to an existing one)." if others and target == "index" else ""),
    )
