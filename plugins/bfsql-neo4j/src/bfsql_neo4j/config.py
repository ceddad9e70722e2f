"""Configuration of the neo4j backend: every field is a ``bfsql serve`` flag and a ``BFSQL_NEO4J_*`` variable."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from bfsql import StoreConfig
from bfsql_neo4j.dialect import DialectName
from bfsql_neo4j.mapping import PredicateCase

__all__ = ["DEFAULT_ID_CANDIDATES", "ENV_ALIASES", "Neo4jConfig"]

DEFAULT_ID_CANDIDATES = ["entity_id", "id", "uri", "name"]
"""Id properties tried, in order, when none is configured: the first one with an index wins."""

ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "uri": ("NEO4J_URI",),
    "username": ("NEO4J_USERNAME", "NEO4J_USER"),
    "password": ("NEO4J_PASSWORD",),
    "database": ("NEO4J_DATABASE",),
    "id_property": ("NEO4J_ID_PROPERTY",),
}
"""The conventional Neo4j environment variables, read after the ``BFSQL_NEO4J_*`` ones."""


class Neo4jConfig(StoreConfig):
    """How to reach the Bolt server and how its property graph maps onto entities and edges."""

    uri: str = Field(default="bolt://localhost:7687", description="Bolt URI (bolt://, neo4j://, +s/+ssc variants).")
    username: str = Field(default="neo4j", description="User name; used only when a password is given.")
    password: SecretStr | None = Field(default=None, description="Password; none: connect without authentication.")
    database: str | None = Field(default=None, description="Database name; default: the server's home database.")
    dialect: DialectName = Field(
        default=DialectName.NEO4J5, description="Cypher dialect of the server: neo4j5 or falkordb."
    )
    node_label: str = Field(
        default="Entity", description="Label every served node carries; the id index and full-text index are on it."
    )
    id_property: str | None = Field(
        default=None, description="Node property holding the canonical id; default: first indexed of --id-candidates."
    )
    id_candidates: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ID_CANDIDATES),
        description="Id properties tried in order when --id-property is not set.",
    )
    fulltext_index: str = Field(
        default="entity_names", description="Name of the Neo4j full-text index (FalkorDB: unused, keyed by label)."
    )
    name_property: str = Field(default="name", description="Node property with the display name.")
    synonyms_property: str = Field(default="synonyms", description="Node property with synonyms (string or list).")
    predicate_case: PredicateCase = Field(
        default=PredicateCase.LOWER, description="Relationship type to predicate: lower, upper or preserve."
    )
    type_metadata_key: str = Field(
        default="relationship_type",
        description="Edge metadata key holding the original relationship type; empty: leave it out.",
    )
    drop_properties: list[str] = Field(
        default_factory=lambda: ["embedding", "embeddings", "vector"],
        description="Property keys never returned as metadata (filtered on the server).",
    )
    keep_vectors: bool = Field(
        default=False, description="Return numeric lists that look like embedding vectors (dropped by default)."
    )
    json_properties: list[str] = Field(
        default_factory=list, description="Property keys whose string values are JSON to decode (maps, nested lists)."
    )
    provenance: bool = Field(
        default=False, description="Edges carry a 'provenance' list (stored as JSON, see --json-properties)."
    )
    query_timeout: float = Field(default=30.0, gt=0, description="Seconds one Cypher statement may run.")
    batch_size: int = Field(
        default=5000,
        ge=1,
        le=10_000,
        description="Ids (or edges) per UNWIND statement; more are split into statements run concurrently.",
    )
    max_connections: int = Field(default=8, ge=1, le=100, description="Bolt connection pool size.")

    @field_validator("node_label", "fulltext_index", "name_property", "synonyms_property")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("id_candidates")
    @classmethod
    def _some_candidates(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one candidate id property")
        return value
