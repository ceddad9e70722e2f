"""The MCP server over one graph or several: the tool host (:mod:`bfsql.server.host`) behind the protocol.

The graphs are opened by the caller inside the event loop that serves them (see
:mod:`bfsql.server.run`); :func:`build_server` then reads their schemas and collects the
tools from the ``register_tools`` hook — the built-in ones (:mod:`bfsql.server.tools`) and any
plugin's, registered the same way — with the valid filter values in the traversal tools'
descriptions when a schema is small. Which graph a call names, what a caller may see, rate
limits and refusals are the host's (:class:`~bfsql.server.host.ToolHost`); this module lists
the tools as MCP tools and sends each answer as an MCP tool result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, Tool, ToolAnnotations

from bfsql.graph import Graph
from bfsql.server.answers import result_of
from bfsql.server.host import SENT_CHARS, ServedGraph, ToolHost, build_host, collect_tools, start_failure
from bfsql.server.instructions import SERVER_INSTRUCTIONS, graphs_injection
from bfsql.server.pipeline import ToolAnswer
from bfsql.server.tool_spec import ToolSpec
from bfsql.settings import DEFAULT_MAX_HEAVY_CALLS, ServerSettings
from bfsql.version import __version__

__all__ = [
    "READ_ONLY", "SENT_CHARS", "SERVER_NAME", "BfsqlServer", "ServedGraph", "build_server", "collect_tools",
    "start_failure", "tool_result",
]

SERVER_NAME = "bfsql"
"""The name the server gives MCP clients."""

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False)
"""Every tool is read-only and idempotent."""


def tool_result(answer: ToolAnswer) -> CallToolResult:
    """The MCP tool result of a call's answer: its document as structured content and as the one text block, or
    the error's text (``isError``)."""
    if answer.document is None:
        return CallToolResult(content=[TextContent(type="text", text=answer.text)], is_error=True)
    return result_of(answer.document, answer.text)


class BfsqlServer(ToolHost, MCPServer):
    """An MCP server whose tools all run through the host's pipeline (:func:`~bfsql.server.pipeline.run_tool`).

    The SDK's own argument handling is bypassed: the pipeline validates arguments itself, so
    that mistakes are explained in plain words and unknown arguments are refused by name.
    """

    def __init__(
        self, graphs: Sequence[ServedGraph], tools: list[ToolSpec], max_heavy_calls: int = DEFAULT_MAX_HEAVY_CALLS,
        injected: str = "",
    ) -> None:
        ToolHost.__init__(self, graphs, tools, max_heavy_calls, injected)
        instructions = self.words.say(SERVER_INSTRUCTIONS) + (graphs_injection(graphs) if len(graphs) > 1 else "")
        MCPServer.__init__(self, SERVER_NAME, instructions=instructions, version=__version__, log_level="WARNING")

    def _input_schema(self, spec: ToolSpec, visible: list[ServedGraph]) -> dict[str, Any]:
        schema = spec.input_schema()
        if len(self.graphs) > 1 and visible:
            schema.setdefault("properties", {})["graph"] = {
                "type": "string",
                "enum": [served.name for served in visible],
                "description": f"Which graph answers (default: {visible[0].name}); see describe_schema.",
            }
        return schema

    def _description(self, spec: ToolSpec, visible: list[ServedGraph]) -> str:
        if not spec.injects_schema or len(self.graphs) == 1 or len(visible) == len(self.graphs):
            return spec.description
        return spec.description.removesuffix(self.injected) + (
            graphs_injection(visible, with_schema=True) if visible else "")

    def _output_schema(self, spec: ToolSpec) -> dict[str, Any] | None:
        schema = spec.output_schema()
        if schema is not None and len(self.graphs) > 1 and "properties" in schema:
            schema["properties"] |= {
                "graph": {"type": "string", "description": "The graph that answered."},
                "other_graphs": {"type": "array", "items": {"type": "string"},
                                 "description": "When the call named no graph: the other graphs it may name."},
            }
        return schema

    async def list_tools(self) -> list[Tool]:
        """Every tool with its input and output schema, read-only (naming only the graphs the caller may see)."""
        visible = self.visible()
        return [
            Tool(
                name=spec.name,
                description=self._description(spec, visible),
                input_schema=self._input_schema(spec, visible),
                output_schema=self._output_schema(spec),
                annotations=READ_ONLY,
            )
            for spec in self.tools.values()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """Run one call through the host's pipeline (:meth:`ToolHost.answer`) and send it as a tool result."""
        report = context.report_progress if context is not None else None
        return tool_result(await self.answer(name, arguments, report))


async def build_server(
    graph: Graph | Sequence[ServedGraph],
    settings: ServerSettings | None = None,
    max_heavy_calls: int = DEFAULT_MAX_HEAVY_CALLS,
) -> BfsqlServer:
    """An MCP server exposing the BFS-QL tools (and plugin tools) over an open graph, or several.

    ``graph`` is one open :class:`Graph` (answered with ``settings``) or the graphs of a
    configuration file, the default first (see :func:`~bfsql.server.host.build_host`).
    """
    return await build_host(graph, settings, max_heavy_calls, kind=BfsqlServer)
