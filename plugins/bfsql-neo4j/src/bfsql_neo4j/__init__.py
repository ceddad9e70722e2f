"""bfsql-neo4j: serve a Neo4j 5 (or FalkorDB) property graph through BFS-QL, read-only over Bolt."""

from __future__ import annotations

from typing import Any

from bfsql import hookimpl
from bfsql_neo4j.backend import Neo4jBackend
from bfsql_neo4j.config import ENV_ALIASES, Neo4jConfig
from bfsql_neo4j.indexes import Neo4jSetupError

__all__ = ["Neo4jBackend", "Neo4jConfig", "Neo4jSetupError", "register_backends"]


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``neo4j`` backend."""
    register(
        "neo4j",
        Neo4jBackend.open,
        Neo4jConfig,
        "Neo4j 5 or FalkorDB over Bolt (read-only; needs an id index and a full-text index)",
        env_aliases=ENV_ALIASES,
    )
