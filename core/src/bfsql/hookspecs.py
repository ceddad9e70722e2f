"""Every bfsql hook specification.

Three families:

* **Primitive hooks** (``search_entities`` … ``metadata_for_edges``) are called on a
  per-graph plugin manager. The graph's backend is their terminal implementation;
  each returns an *awaitable*. They are ``firstresult`` hooks, so a call reaches
  exactly one implementation (never two backends). A plugin can observe or change a
  call with a ``wrapper=True`` hookimpl (see :func:`bfsql.then`), or answer it
  itself with ``tryfirst=True`` by returning an awaitable (return ``None`` to pass).
* **Post-processing hooks** (``process_node``, ``process_edge``, ``process_result``)
  edit tool answers in place before they are sent.
* **Registration hooks** (``register_backends``, ``register_embedders``,
  ``register_commands``, ``register_tools``) are called once on the global plugin
  manager.

``vector_search`` is an optional primitive hook (not one of the eight): the backend
answers it only when it has entity vectors (see docs/backend-contract.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pluggy

from bfsql.models import Edge, EntityStub, Node, ResultEdge

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

PROJECT_NAME = "bfsql"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

# --- primitive hooks -------------------------------------------------------


@hookspec(firstresult=True)
def search_entities(query: str, node_types: list[str] | None) -> Awaitable[list[EntityStub]]:
    """Resolve a name or alias to ranked entity stubs."""


@hookspec(firstresult=True)
def edges_from(entity_id: str) -> Awaitable[list[Edge]]:
    """All outgoing edges of an entity; the awaitable raises KeyError for an unknown id."""


@hookspec(firstresult=True)
def edges_to(entity_id: str) -> Awaitable[list[Edge]]:
    """All incoming edges of an entity; the awaitable raises KeyError for an unknown id."""


@hookspec(firstresult=True)
def get_node(entity_id: str) -> Awaitable[Node]:
    """The identity (id, entity_type) of an entity; KeyError for an unknown id."""


@hookspec(firstresult=True)
def metadata_for_node(entity_id: str) -> Awaitable[dict[str, Any]]:
    """All metadata of an entity; KeyError for an unknown id."""


@hookspec(firstresult=True)
def metadata_for_edge(edge: Edge) -> Awaitable[dict[str, Any]]:
    """All metadata of an edge, provenance included."""


@hookspec(firstresult=True)
def entity_types() -> Awaitable[list[str]]:
    """The graph's entity type names, sorted."""


@hookspec(firstresult=True)
def predicates() -> Awaitable[list[str]]:
    """The graph's predicate names, sorted."""


@hookspec(firstresult=True)
def edges_from_many(entity_ids: list[str]) -> Awaitable[dict[str, list[Edge]]]:
    """Outgoing edges of many entities in one call; unknown ids are left out."""


@hookspec(firstresult=True)
def edges_to_many(entity_ids: list[str]) -> Awaitable[dict[str, list[Edge]]]:
    """Incoming edges of many entities in one call; unknown ids are left out."""


@hookspec(firstresult=True)
def get_nodes(entity_ids: list[str]) -> Awaitable[dict[str, Node]]:
    """Identities of many entities in one call; unknown ids are left out."""


@hookspec(firstresult=True)
def metadata_for_nodes(entity_ids: list[str]) -> Awaitable[dict[str, dict[str, Any]]]:
    """Metadata of many entities in one call; unknown ids are left out."""


@hookspec(firstresult=True)
def metadata_for_edges(edges: list[Edge]) -> Awaitable[dict[Edge, dict[str, Any]]]:
    """Metadata of many edges in one call, keyed by edge."""


@hookspec(firstresult=True)
def vector_search(vector: list[float], node_types: list[str] | None, limit: int) -> Awaitable[list[EntityStub]]:
    """Entities nearest to a query vector, best first, ``score`` = cosine similarity (optional primitive)."""


# --- post-processing hooks -------------------------------------------------


@hookspec
def process_node(node: Node, tool: str) -> None:
    """Edit a full node (its ``metadata``) in place before ``tool`` returns it."""


@hookspec
def process_edge(edge: ResultEdge, tool: str) -> None:
    """Edit a full edge (its ``metadata``) in place before ``tool`` returns it."""


@hookspec
def process_result(result: BaseModel, tool: str) -> None:
    """Edit a whole tool result in place (BfsResult, IntersectionResult, …)."""


# --- registration hooks ----------------------------------------------------


@hookspec
def register_backends(register: Callable[..., None]) -> None:
    """Register backends: ``register(name, factory, config_model, description)``."""


@hookspec
def register_embedders(register: Callable[..., None]) -> None:
    """Register embedders: ``register(name, factory, description)``; ``factory()`` returns an Embedder."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add click commands to the ``bfsql`` command group."""


@hookspec
def register_tools(register: Callable[..., None]) -> None:
    """Add MCP tools: ``register(fn, name=None, description=None)``; see docs/hooks.md."""


PRIMITIVE_HOOKS: tuple[str, ...] = (
    "search_entities",
    "edges_from",
    "edges_to",
    "get_node",
    "metadata_for_node",
    "metadata_for_edge",
    "entity_types",
    "predicates",
)
"""The eight primitives of the contract, in the order of seed 000."""

BATCH_HOOKS: tuple[str, ...] = (
    "edges_from_many",
    "edges_to_many",
    "get_nodes",
    "metadata_for_nodes",
    "metadata_for_edges",
)
"""The optional batch primitives."""

SEARCH_HOOKS: tuple[str, ...] = ("vector_search",)
"""Optional primitives of hybrid search."""
