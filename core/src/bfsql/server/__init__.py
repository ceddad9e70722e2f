"""The MCP server: the tool pipeline, the built-in tools, answer fitting, and transports."""

from bfsql.server.app import build_server
from bfsql.server.tool_spec import ToolContext

__all__ = ["ToolContext", "build_server"]
