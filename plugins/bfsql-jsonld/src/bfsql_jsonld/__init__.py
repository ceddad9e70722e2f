"""bfsql-jsonld: a backend for JSON-LD REST APIs, and a reference server that publishes any graph as one.

The plugin registers the ``jsonld`` backend (``bfsql serve --backend jsonld --base-url
URL``) and the ``bfsql jsonld-serve`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bfsql
from bfsql import lazy_names
from bfsql_jsonld.config import JsonLdConfig

if TYPE_CHECKING:
    from bfsql_jsonld.backend import JsonLdBackend
    from bfsql_jsonld.options import ServerOptions
    from bfsql_jsonld.server import build_app, server_context

# The backend, the reference server and aiohttp load when used, not when bfsql loads its plugins.
__getattr__ = lazy_names(__name__, {
    "JsonLdBackend": "bfsql_jsonld.backend",
    "ServerOptions": "bfsql_jsonld.options",
    "build_app": "bfsql_jsonld.server",
    "server_context": "bfsql_jsonld.server",
})

__all__ = [
    "JsonLdBackend",
    "JsonLdConfig",
    "ServerOptions",
    "build_app",
    "register_backends",
    "register_commands",
    "server_context",
]


async def _create(config: JsonLdConfig) -> JsonLdBackend:
    from bfsql_jsonld.backend import JsonLdBackend

    return await JsonLdBackend.create(config)


@bfsql.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``jsonld`` backend."""
    register("jsonld", _create, JsonLdConfig, "A JSON-LD REST API (see docs/backends/jsonld.md).")


@bfsql.hookimpl
def register_commands(cli: Any) -> None:
    """Add ``bfsql jsonld-serve``."""
    from bfsql_jsonld.cli import jsonld_serve_command

    cli.add_command(jsonld_serve_command())
