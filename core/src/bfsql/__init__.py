"""bfsql: explore knowledge graphs from language models, safely and cheaply.

This module is the public surface: everything a backend, a plugin or a test of one needs
is importable from ``bfsql`` itself (the conformance suite lives in :mod:`bfsql.testing`).
The rest of the package is internal and may change between releases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bfsql import postprocess
from bfsql.backend import (
    PROVENANCE_KEYS,
    Capabilities,
    GraphBackend,
    GraphDbInterface,
    gather_bounded,
    gather_or_cancel,
    hop_edges,
)
from bfsql.backends.memory import MemoryBackend
from bfsql.backends.sqlite import SqliteBackend
from bfsql.embedders import (
    DEFAULT_EMBEDDER,
    Embedder,
    EmbedderMismatch,
    HashingEmbedder,
    cosine,
)
from bfsql.engine import TraversalLimits, bfs_query, intersect_subgraphs
from bfsql.engine.paths import path_query
from bfsql.engine.search import search_entities
from bfsql.errors import BackendFailure, BfsqlError, InvalidArgument, UnknownEntity, clip
from bfsql.graph import Graph, then
from bfsql.hookspecs import hookimpl, hookspec
from bfsql.loading.bundle import BadRow, Record, read_bundle
from bfsql.loading.prefixes import compact_iri
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
from bfsql.models import (
    BfsResult,
    EntityStub,
    IntersectionResult,
    Node,
    PathQueryResult,
    ResultEdge,
    SchemaDescription,
    SchemaSummary,
    Truncation,
    to_output,
)
from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer, in_light_call, light_call
from bfsql.plugins import create_embedder, preferred_embedder
from bfsql.primitives import SEARCH_LIMIT, Primitives
from bfsql.rows import Edge, HopEdge, NodeInfo
from bfsql.search_rank import lexical_rank
from bfsql.version import __version__

if TYPE_CHECKING:
    from bfsql.backend_options import backend_click_options, resolve_config
    from bfsql.loading.readers import ImpliedEntity, detect_format, read_records
    from bfsql.plugins import get_backends, get_embedders
    from bfsql.server import build_server
    from bfsql.server.http import HostPolicy, is_loopback
    from bfsql.server.run import open_graph
    from bfsql.settings import ServerSettings


_LAZY = {
    # Imported on first use: they pull in click, the MCP SDK and the plugin registry, which a backend's
    # import needs not.
    "ServerSettings": "bfsql.settings",
    "build_server": "bfsql.server",
    "open_graph": "bfsql.server.run",
    "is_loopback": "bfsql.server.http",
    "HostPolicy": "bfsql.server.http",
    "backend_click_options": "bfsql.backend_options",
    "resolve_config": "bfsql.backend_options",
    "get_backends": "bfsql.plugins",
    "get_embedders": "bfsql.plugins",
    "ImpliedEntity": "bfsql.loading.readers",
    "detect_format": "bfsql.loading.readers",
    "read_records": "bfsql.loading.readers",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_EMBEDDER",
    "PROVENANCE_KEYS",
    "SEARCH_LIMIT",
    "WORK_BETWEEN_CHECKS",
    "BackendFailure",
    "BadRow",
    "BfsResult",
    "BfsqlError",
    "Capabilities",
    "Edge",
    "Embedder",
    "EmbedderMismatch",
    "EntityRecord",
    "EntityStub",
    "EvidenceRecord",
    "Graph",
    "GraphBackend",
    "GraphDbInterface",
    "HashingEmbedder",
    "HopEdge",
    "HostPolicy",
    "ImpliedEntity",
    "IntersectionResult",
    "InvalidArgument",
    "MemoryBackend",
    "Node",
    "NodeInfo",
    "Pacer",
    "PathQueryResult",
    "Primitives",
    "Record",
    "RelationshipRecord",
    "ResultEdge",
    "SchemaDescription",
    "SchemaSummary",
    "ServerSettings",
    "SqliteBackend",
    "TraversalLimits",
    "Truncation",
    "UnknownEntity",
    "__version__",
    "backend_click_options",
    "bfs_query",
    "build_server",
    "clip",
    "compact_iri",
    "cosine",
    "create_embedder",
    "detect_format",
    "edge_metadata",
    "entity_metadata",
    "gather_bounded",
    "gather_or_cancel",
    "get_backends",
    "get_embedders",
    "hookimpl",
    "hookspec",
    "hop_edges",
    "in_light_call",
    "intersect_subgraphs",
    "is_loopback",
    "lexical_rank",
    "light_call",
    "load_sqlite",
    "node_metadata",
    "open_graph",
    "path_query",
    "postprocess",
    "preferred_embedder",
    "read_bundle",
    "read_records",
    "relationship_metadata",
    "resolve_config",
    "search_entities",
    "then",
    "to_output",
]
