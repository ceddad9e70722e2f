"""bfsql-neo4j: serve a Neo4j 5 (or FalkorDB) property graph through BFS-QL, read-only over Bolt.

Importing this module (bfsql does, for every command) loads only the configuration model: the
backend and the Neo4j driver load when a graph is opened, or when a name below is first read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bfsql import hookimpl, lazy_names
from bfsql_neo4j.config import ENV_ALIASES, Neo4jConfig

if TYPE_CHECKING:
    from bfsql_neo4j.backend import Neo4jBackend
    from bfsql_neo4j.indexes import Neo4jSetupError

__getattr__ = lazy_names(__name__, {"Neo4jBackend": "bfsql_neo4j.backend", "Neo4jSetupError": "bfsql_neo4j.indexes"})

__all__ = ["Neo4jBackend", "Neo4jConfig", "Neo4jSetupError", "register_backends"]


async def _open(config: Neo4jConfig) -> Neo4jBackend:
    from bfsql_neo4j.backend import Neo4jBackend

    return await Neo4jBackend.open(config)


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``neo4j`` backend."""
    register(
        "neo4j",
        _open,
        Neo4jConfig,
        "Neo4j 5 or FalkorDB over Bolt (read-only; needs an id index and a full-text index)",
        env_aliases=ENV_ALIASES,
    )
