"""bfsql: explore knowledge graphs from language models, safely and cheaply.

This module is the public surface for backend and plugin authors: the backend contract, the
models and rows it answers with, the errors, the hook markers and the helpers a backend uses.
``import bfsql`` loads only those (a few modules). The rest of the public surface lives in
explicit namespaces, imported when used:

* :mod:`bfsql.loading` — bundle records and how they become metadata, readers, the SQLite loader;
* :mod:`bfsql.server` — the MCP server: ``build_server``, ``ServerSettings``, the tool context;
* :mod:`bfsql.testing` — the conformance suite and the reliability kit.

The facade, the engine and the built-in stores (``Graph``, ``bfs_query``, ``MemoryBackend`` …)
are reachable from here too, loaded on first use. Any other ``bfsql.*`` module is internal and
may change between releases.
"""

from __future__ import annotations

from bfsql.hop_memo import HopMemo, call_memo, hop_memo  # see below
from bfsql.lazy import lazy_names

TYPE_CHECKING = False  # not typing's: its import would be most of this module's (mypy reads the name alike)
if TYPE_CHECKING:
    from bfsql import postprocess
    from bfsql.backend import (
        PROVENANCE_KEYS,
        Capabilities,
        GraphBackend,
        GraphDbInterface,
        gather_bounded,
        gather_or_cancel,
        hop_edges,
        opened_for_one_call,
    )
    from bfsql.backend_config import BackendConfig, DeprecatedOption, HttpStoreConfig, StoreConfig
    from bfsql.backends.memory import MemoryBackend
    from bfsql.backends.sqlite import SqliteBackend
    from bfsql.budgets import TraversalLimits
    from bfsql.embedders import AUTO, DEFAULT_EMBEDDER, Embedder, EmbedderMismatch, HashingEmbedder, cosine
    from bfsql.engine import bfs_query, intersect_subgraphs
    from bfsql.engine.answer import tally
    from bfsql.engine.assemble import page_edges
    from bfsql.engine.paths import path_query
    from bfsql.engine.search import search_entities
    from bfsql.engine.traverse import Expansion, expand
    from bfsql.errors import (
        AccessDenied,
        BackendFailure,
        BfsqlError,
        InvalidArgument,
        StoreTimeout,
        UnknownEntity,
        clip,
    )
    from bfsql.graph import Graph, then
    from bfsql.hookspecs import hookimpl, hookspec
    from bfsql.http_retry import RETRY_STATUSES, RetriesSpent, RetryPolicy, retry_after_seconds, send_with_retries
    from bfsql.identity import CallIdentity, call_identity, identified_as
    from bfsql.loading import (
        BadRow,
        EntityRecord,
        EvidenceRecord,
        ImpliedEntity,
        Record,
        RelationshipRecord,
        compact_iri,
        detect_format,
        edge_metadata,
        entity_metadata,
        load_sqlite,
        node_metadata,
        read_bundle,
        read_records,
        relationship_metadata,
    )
    from bfsql.models import (
        BfsResult,
        EntityStub,
        IntersectionResult,
        Node,
        PathQueryResult,
        ResultEdge,
        SchemaDescription,
        SchemaHub,
        SchemaSummary,
        Truncation,
        to_output,
    )
    from bfsql.pacing import WORK_BETWEEN_CHECKS, Pacer, in_light_call, light_call
    from bfsql.plugins import create_embedder, get_backends, get_embedders, preferred_embedder, resolve_embedder_name
    from bfsql.primitives import HUBS, SEARCH_LIMIT, Primitives
    from bfsql.rows import (
        Closure,
        ClosureStep,
        Edge,
        GraphStatistics,
        HopEdge,
        Hub,
        Neighbourhood,
        NodeInfo,
        Overlap,
        Reached,
        SeedPath,
        Survey,
    )
    from bfsql.search_rank import lexical_rank
    from bfsql.server import (
        HostPolicy,
        ServerSettings,
        backend_click_options,
        build_server,
        is_loopback,
        open_graph,
        resolve_config,
    )
    from bfsql.tracing import statement_span
    from bfsql.version import __version__

_LAZY = {
    # Every name is imported on first use, so that ``import bfsql`` (which any ``bfsql.*`` import runs first)
    # loads next to nothing: the ``bfsql`` command answers a call from a resident process without pydantic or
    # asyncio (bfsql.launch). Not ``hop_memo``, which is also its module's name: once any code imported the
    # module, the import system would bind the module over the lazy name. The contract, the models and the
    # rows a backend answers with:
    **dict.fromkeys(
        ("PROVENANCE_KEYS", "Capabilities", "GraphBackend", "GraphDbInterface", "gather_bounded", "gather_or_cancel",
         "hop_edges", "opened_for_one_call"),
        "bfsql.backend",
    ),
    "TraversalLimits": "bfsql.budgets",
    **dict.fromkeys(
        ("AccessDenied", "BackendFailure", "BfsqlError", "InvalidArgument", "StoreTimeout", "UnknownEntity", "clip"),
        "bfsql.errors",
    ),
    **dict.fromkeys(("hookimpl", "hookspec"), "bfsql.hookspecs"),
    **dict.fromkeys(("CallIdentity", "call_identity", "identified_as"), "bfsql.identity"),
    **dict.fromkeys(
        ("BfsResult", "EntityStub", "IntersectionResult", "Node", "PathQueryResult", "ResultEdge",
         "SchemaDescription", "SchemaHub", "SchemaSummary", "Truncation", "to_output"),
        "bfsql.models",
    ),
    **dict.fromkeys(("WORK_BETWEEN_CHECKS", "Pacer", "in_light_call", "light_call"), "bfsql.pacing"),
    **dict.fromkeys(("HUBS", "SEARCH_LIMIT", "Primitives"), "bfsql.primitives"),
    **dict.fromkeys(
        ("Closure", "ClosureStep", "Edge", "GraphStatistics", "HopEdge", "Hub", "Neighbourhood", "NodeInfo",
         "Overlap", "Reached", "SeedPath", "Survey"),
        "bfsql.rows",
    ),
    "lexical_rank": "bfsql.search_rank",
    "__version__": "bfsql.version",
    # The facade and engine, which pull in the cache and the plugin registry, the stores SQLite and numpy, the
    # namespaces click and the MCP SDK:
    "postprocess": "bfsql",
    "MemoryBackend": "bfsql.backends.memory",
    "SqliteBackend": "bfsql.backends.sqlite",
    "AUTO": "bfsql.embedders",
    "DEFAULT_EMBEDDER": "bfsql.embedders",
    "Embedder": "bfsql.embedders",
    "EmbedderMismatch": "bfsql.embedders",
    "HashingEmbedder": "bfsql.embedders",
    "cosine": "bfsql.embedders",
    "bfs_query": "bfsql.engine",
    "intersect_subgraphs": "bfsql.engine",
    # For a backend that walks in its store: the engine's hop walk (for small walks) and its page rule.
    "expand": "bfsql.engine.traverse",
    "Expansion": "bfsql.engine.traverse",
    "page_edges": "bfsql.engine.assemble",
    "tally": "bfsql.engine.answer",
    # For a store whose vectors' sign-bit codes the server holds: the candidates of a vector search.
    "VectorIndex": "bfsql.vectors",
    "path_query": "bfsql.engine.paths",
    "search_entities": "bfsql.engine.search",
    "Graph": "bfsql.graph",
    # The options every backend's config shares, and the retry policy of HTTP stores.
    **dict.fromkeys(("BackendConfig", "DeprecatedOption", "HttpStoreConfig", "StoreConfig"), "bfsql.backend_config"),
    **dict.fromkeys(("RETRY_STATUSES", "RetriesSpent", "RetryPolicy", "retry_after_seconds", "send_with_retries"),
                    "bfsql.http_retry"),
    "then": "bfsql.graph",
    "statement_span": "bfsql.tracing",
    "create_embedder": "bfsql.plugins",
    "get_backends": "bfsql.plugins",
    "get_embedders": "bfsql.plugins",
    "preferred_embedder": "bfsql.plugins",
    "resolve_embedder_name": "bfsql.plugins",
    **dict.fromkeys(
        ("BadRow", "EntityRecord", "EvidenceRecord", "ImpliedEntity", "Record", "RelationshipRecord", "compact_iri",
         "detect_format", "edge_metadata", "entity_metadata", "load_sqlite", "node_metadata", "read_bundle",
         "read_records", "relationship_metadata"),
        "bfsql.loading",
    ),
    **dict.fromkeys(
        ("HostPolicy", "ServerSettings", "backend_click_options", "build_server", "is_loopback", "open_graph",
         "resolve_config"),
        "bfsql.server",
    ),
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "AUTO",
    "DEFAULT_EMBEDDER",
    "HUBS",
    "PROVENANCE_KEYS",
    "RETRY_STATUSES",
    "SEARCH_LIMIT",
    "WORK_BETWEEN_CHECKS",
    "AccessDenied",
    "BackendConfig",
    "BackendFailure",
    "BadRow",
    "BfsResult",
    "BfsqlError",
    "CallIdentity",
    "Capabilities",
    "Closure",
    "ClosureStep",
    "DeprecatedOption",
    "Edge",
    "Embedder",
    "EmbedderMismatch",
    "EntityRecord",
    "EntityStub",
    "EvidenceRecord",
    "Expansion",
    "Graph",
    "GraphBackend",
    "GraphDbInterface",
    "GraphStatistics",
    "HashingEmbedder",
    "HopEdge",
    "HopMemo",
    "HostPolicy",
    "HttpStoreConfig",
    "Hub",
    "ImpliedEntity",
    "IntersectionResult",
    "InvalidArgument",
    "MemoryBackend",
    "Neighbourhood",
    "Node",
    "NodeInfo",
    "Overlap",
    "Pacer",
    "PathQueryResult",
    "Primitives",
    "Reached",
    "Record",
    "RelationshipRecord",
    "ResultEdge",
    "RetriesSpent",
    "RetryPolicy",
    "SchemaDescription",
    "SchemaHub",
    "SchemaSummary",
    "SeedPath",
    "ServerSettings",
    "SqliteBackend",
    "StoreConfig",
    "StoreTimeout",
    "Survey",
    "TraversalLimits",
    "Truncation",
    "UnknownEntity",
    "VectorIndex",
    "__version__",
    "backend_click_options",
    "bfs_query",
    "build_server",
    "call_identity",
    "call_memo",
    "clip",
    "compact_iri",
    "cosine",
    "create_embedder",
    "detect_format",
    "edge_metadata",
    "entity_metadata",
    "expand",
    "gather_bounded",
    "gather_or_cancel",
    "get_backends",
    "get_embedders",
    "hookimpl",
    "hookspec",
    "hop_edges",
    "hop_memo",
    "identified_as",
    "in_light_call",
    "intersect_subgraphs",
    "is_loopback",
    "lazy_names",
    "lexical_rank",
    "light_call",
    "load_sqlite",
    "node_metadata",
    "open_graph",
    "opened_for_one_call",
    "page_edges",
    "path_query",
    "postprocess",
    "preferred_embedder",
    "read_bundle",
    "read_records",
    "relationship_metadata",
    "resolve_config",
    "resolve_embedder_name",
    "retry_after_seconds",
    "search_entities",
    "send_with_retries",
    "statement_span",
    "tally",
    "then",
    "to_output",
]
