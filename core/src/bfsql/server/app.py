"""Building the MCP server over one :class:`Graph`: every tool, through one pipeline.

The graph is opened by the caller inside the event loop that serves it (see
:mod:`bfsql.server.run`); :func:`build_server` then reads its schema and collects the tools
from the ``register_tools`` hook — the built-in ones (:mod:`bfsql.server.tools`) and any
plugin's, registered the same way — with the valid filter values in the traversal tools'
descriptions when the schema is small.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, Tool

from bfsql import __version__
from bfsql.backend import gather_or_cancel
from bfsql.embedders import create_embedder, resolve_embedder_name
from bfsql.graph import Graph
from bfsql.server.instructions import SERVER_INSTRUCTIONS, schema_injection
from bfsql.server.pipeline import READ_ONLY, ServeSettings, ToolSpec, error_result, run_tool, tool_spec

__all__ = ["BfsqlServer", "ServeSettings", "build_server", "collect_tools"]

logger = logging.getLogger("bfsql.server")


class BfsqlServer(MCPServer):
    """An MCP server whose tools all run through :func:`~bfsql.server.pipeline.run_tool`.

    The SDK's own argument handling is bypassed: the pipeline validates arguments itself, so
    that mistakes are explained in plain words and unknown arguments are refused by name.
    """

    def __init__(self, graph: Graph, settings: ServeSettings, tools: list[ToolSpec]) -> None:
        super().__init__(settings.name, instructions=SERVER_INSTRUCTIONS, version=__version__, log_level="WARNING")
        self.graph = graph
        self.serve_settings = settings  # MCPServer keeps its own ``settings``
        self.tools = {spec.name: spec for spec in tools}

    async def list_tools(self) -> list[Tool]:
        """Every tool with its input and output schema, read-only."""
        return [
            Tool(
                name=spec.name,
                description=spec.description,
                input_schema=spec.input_schema(),
                output_schema=spec.output_schema(),
                annotations=READ_ONLY,
            )
            for spec in self.tools.values()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """Run one call through the pipeline; an unknown tool is a tool error naming the tools."""
        spec = self.tools.get(name)
        if spec is None:
            return error_result(f"Unknown tool {name!r}. This server's tools: {', '.join(self.tools)}.")
        report = context.report_progress if context is not None else None
        return await run_tool(spec, arguments, self.graph, self.serve_settings, report)


def collect_tools() -> list[ToolSpec]:
    """Every tool of the ``register_tools`` hook: the built-in ones first, then the plugins', by name."""
    from bfsql.plugins import get_plugin_manager

    specs: dict[str, ToolSpec] = {}

    def register(
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        output: Any = None,
        injects_schema: bool = False,
    ) -> None:
        spec = tool_spec(fn, name=name, description=description, output=output, injects_schema=injects_schema)
        if spec.name in specs:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        specs[spec.name] = spec

    get_plugin_manager().hook.register_tools(register=register)
    builtin = [s for s in specs.values() if s.fn.__module__ == "bfsql.server.tools"]
    return builtin + [s for s in specs.values() if s.fn.__module__ != "bfsql.server.tools"]


async def build_server(graph: Graph, settings: ServeSettings | None = None) -> BfsqlServer:
    """An MCP server exposing the BFS-QL tools (and plugin tools) over an open ``graph``.

    When the graph has at most 20 entity types and 30 predicates, the traversal tools'
    descriptions list them, so a client knows the valid filter values from the start.
    """
    settings = settings or ServeSettings()
    if settings.embedder is not None:
        embedder = settings.embedder
        if isinstance(embedder, str):  # "auto": the store's own embedder, else the preferred one
            stored = getattr(graph.backend, "vector_embedder", None)
            embedder = create_embedder(resolve_embedder_name(embedder, stored[0] if stored else None))
        graph.set_embedder(embedder)
    await graph.bind_embedder()  # a store whose vectors come from another embedder fails here, at start-up
    types, preds = await gather_or_cancel(graph.entity_types(), graph.predicates())
    injected = schema_injection(types, preds) or ""
    tools = collect_tools()
    for spec in tools:
        if spec.injects_schema:
            spec.description += injected
    return BfsqlServer(graph, settings, tools)
