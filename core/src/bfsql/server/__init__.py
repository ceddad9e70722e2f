"""The MCP server: the tool pipeline, the built-in tools, answer fitting, and transports."""

from bfsql.server.app import build_server
from bfsql.server.pipeline import ServeSettings

__all__ = ["ServeSettings", "build_server"]
