"""The hook markers and every hook specification but the primitives'.

Three families of hooks:

* **Primitive hooks** (``get_nodes``, ``hop``, ``metadata_for_nodes`` …) are specified by
  the primitive table, :class:`bfsql.primitives.Primitives`, and called on a per-graph
  plugin manager. The graph's backend is their terminal implementation; each returns an
  *awaitable*. They are ``firstresult`` hooks, so a call reaches exactly one
  implementation (never two backends). A plugin can observe or change a call with a
  ``wrapper=True`` hookimpl (see :func:`bfsql.then`), or answer it itself with
  ``tryfirst=True`` by returning an awaitable (return ``None`` to pass).
* **Post-processing hooks** (``process_nodes``, ``process_edges``, ``process_result``)
  edit tool answers in place before they are fitted and sent, once per answer.
* **Registration hooks** (``register_backends``, ``register_embedders``,
  ``register_commands``, ``register_tools``) are called once on the global plugin
  manager.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

PROJECT_NAME = "bfsql"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

# --- post-processing hooks -------------------------------------------------


@hookspec
def process_nodes(metadata: dict[str, dict[str, Any]], tool: str) -> None:
    """Edit, in place, the metadata of the entities ``tool`` returns with detail (``{id: metadata}``).

    Called once per answer, with every full node of it.
    """


@hookspec
def process_edges(metadata: dict[tuple[str, str, str], dict[str, Any]], tool: str) -> None:
    """Edit, in place, the metadata of the edges ``tool`` returns with detail (``{(s, p, o): metadata}``)."""


@hookspec
def process_result(result: Any, tool: str) -> None:
    """Edit a whole tool result in place (a Traversal, a PathQueryResult …) before it is fitted and sent."""


# --- registration hooks ----------------------------------------------------


class RegisterBackend(Protocol):
    """The ``register`` a ``register_backends`` implementation gets."""

    def __call__(
        self,
        name: str,
        factory: Callable[[Any], Any],
        config_model: type[BaseModel],
        description: str,
        env_aliases: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        """Register the backend ``name``: ``factory(config)`` (a validated ``config_model``) returns it, or an
        awaitable of it; ``env_aliases`` names conventional variables per config field
        (``{"dsn": ("DATABASE_URL",)}``)."""


class RegisterEmbedder(Protocol):
    """The ``register`` a ``register_embedders`` implementation gets."""

    def __call__(self, name: str, factory: Callable[[], Any], description: str = "") -> None:
        """Register the embedder ``name``: ``factory()`` returns an :class:`~bfsql.embedders.Embedder`."""


class RegisterTool(Protocol):
    """The ``register`` a ``register_tools`` implementation gets (see docs/hooks.md)."""

    def __call__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        output: Any = None,
        injects_schema: bool = False,
        heavy: bool = False,
        max_tokens: bool = False,
        bounded: Callable[[Mapping[str, Any], Any], bool] | None = None,
    ) -> None:
        """Register ``fn`` as an MCP tool: its parameters are the arguments, its return annotation the answer's
        type; ``heavy`` tools wait for a heavy-call slot, except the calls for which ``bounded(arguments,
        settings)`` is true (their arguments bound their work); ``max_tokens`` ones take a per-call budget."""


@hookspec
def register_backends(register: RegisterBackend) -> None:
    """Register backends: ``register(name, factory, config_model, description)``."""


@hookspec
def register_embedders(register: RegisterEmbedder) -> None:
    """Register embedders: ``register(name, factory, description)``; ``factory()`` returns an Embedder."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add click commands to the ``bfsql`` command group."""


@hookspec
def register_tools(register: RegisterTool) -> None:
    """Add MCP tools: ``register(fn, name=None, description=None)``; see docs/hooks.md."""
