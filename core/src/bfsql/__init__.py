"""bfsql: explore knowledge graphs from language models, safely and cheaply.

The public surface: the backend contract, the protocol models, the hook markers and
the :class:`Graph` facade.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from bfsql.backend import BatchFirstBackend, Capabilities, GraphDbInterface, gather_bounded
from bfsql.graph import Graph, then
from bfsql.hookspecs import hookimpl, hookspec
from bfsql.models import (
    BfsResult,
    Edge,
    EntityStub,
    IntersectionResult,
    Node,
    ResultEdge,
    SchemaDescription,
    SchemaSummary,
    Truncation,
)

try:
    __version__ = version("bfsql")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "BatchFirstBackend",
    "BfsResult",
    "Capabilities",
    "Edge",
    "EntityStub",
    "Graph",
    "GraphDbInterface",
    "IntersectionResult",
    "Node",
    "ResultEdge",
    "SchemaDescription",
    "SchemaSummary",
    "Truncation",
    "__version__",
    "gather_bounded",
    "hookimpl",
    "hookspec",
    "then",
]
