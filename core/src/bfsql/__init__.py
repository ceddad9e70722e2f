"""bfsql: explore knowledge graphs from language models, safely and cheaply.

This module is the public surface: everything a backend, a plugin or a test of one needs
is importable from ``bfsql`` itself (the conformance suite lives in :mod:`bfsql.testing`).
The rest of the package is internal and may change between releases.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from bfsql.backend import (
    PROVENANCE_KEYS,
    Capabilities,
    GraphBackend,
    GraphDbInterface,
    gather_bounded,
    gather_or_cancel,
    hop_edges,
)
from bfsql.embedders import Embedder, EmbedderMismatch
from bfsql.errors import BackendFailure, BfsqlError, InvalidArgument, UnknownEntity, clip
from bfsql.graph import Graph, then
from bfsql.hookspecs import hookimpl, hookspec
from bfsql.loading.bundle import BadRow, Record, read_bundle
from bfsql.loading.records import EntityRecord, EvidenceRecord, RelationshipRecord, edge_metadata, node_metadata
from bfsql.models import (
    BfsResult,
    EntityStub,
    IntersectionResult,
    Node,
    ResultEdge,
    SchemaDescription,
    SchemaSummary,
    Truncation,
)
from bfsql.primitives import SEARCH_LIMIT, Primitives
from bfsql.rows import Edge, HopEdge, NodeInfo
from bfsql.search_rank import lexical_rank

if TYPE_CHECKING:
    from bfsql.backend_options import backend_click_options, resolve_config
    from bfsql.loading.readers import ImpliedEntity, detect_format, read_records
    from bfsql.plugins import get_backends, get_embedders

try:
    __version__ = version("bfsql")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

_LAZY = {
    # Imported on first use: they pull in click and the plugin registry, which a backend's import needs not.
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
    "PROVENANCE_KEYS",
    "SEARCH_LIMIT",
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
    "HopEdge",
    "ImpliedEntity",
    "IntersectionResult",
    "InvalidArgument",
    "Node",
    "NodeInfo",
    "Primitives",
    "Record",
    "RelationshipRecord",
    "ResultEdge",
    "SchemaDescription",
    "SchemaSummary",
    "Truncation",
    "UnknownEntity",
    "__version__",
    "backend_click_options",
    "clip",
    "detect_format",
    "edge_metadata",
    "gather_bounded",
    "gather_or_cancel",
    "get_backends",
    "get_embedders",
    "hookimpl",
    "hookspec",
    "hop_edges",
    "lexical_rank",
    "node_metadata",
    "read_bundle",
    "read_records",
    "resolve_config",
    "then",
]
