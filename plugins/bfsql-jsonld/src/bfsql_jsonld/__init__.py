"""bfsql-jsonld: a backend for JSON-LD REST APIs, and a reference server that publishes any graph as one.

The plugin registers the ``jsonld`` backend (``bfsql serve --backend jsonld --base-url
URL``) and the ``bfsql jsonld-serve`` command.
"""

from __future__ import annotations

from typing import Any

import bfsql
from bfsql_jsonld.backend import JsonLdBackend
from bfsql_jsonld.config import JsonLdConfig
from bfsql_jsonld.server import ServerOptions, build_app, server_context

__all__ = [
    "JsonLdBackend",
    "JsonLdConfig",
    "ServerOptions",
    "build_app",
    "register_backends",
    "register_commands",
    "server_context",
]


@bfsql.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``jsonld`` backend."""
    register("jsonld", JsonLdBackend.create, JsonLdConfig, "A JSON-LD REST API (see docs/backends/jsonld.md).")


@bfsql.hookimpl
def register_commands(cli: Any) -> None:
    """Add ``bfsql jsonld-serve``."""
    from bfsql_jsonld.cli import jsonld_serve_command

    cli.add_command(jsonld_serve_command())
