"""The MCP server: the BFS-QL tools, answer budgets, and transports."""

from bfsql.server.app import ServeSettings, build_server

__all__ = ["ServeSettings", "build_server"]
