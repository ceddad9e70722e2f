"""The MCP server: the tool pipeline, the built-in tools, answer fitting, and transports.

A public namespace: ``build_server`` over an open graph, its ``ServerSettings``, the
``ToolContext`` a plugin tool may ask for, ``open_graph`` for a backend from its spec and
config, the HTTP guards, the backends' command-line options, and the ``AnswerBudget`` the
server fits answers to (pass one as ``room`` to a traversal to get the page it would show).

Each name is imported on first use: the MCP SDK (about half a second) is loaded only by what
needs it, not by a plugin that takes ``HostPolicy`` or by a command that serves nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bfsql.lazy import lazy_names

if TYPE_CHECKING:
    from bfsql.backend_options import backend_click_options, resolve_config
    from bfsql.server.answers import AnswerBudget
    from bfsql.server.app import build_server
    from bfsql.server.host import open_graph
    from bfsql.server.http import HostPolicy, is_loopback
    from bfsql.server.tool_spec import ToolContext
    from bfsql.settings import ServerSettings

_HOMES = {
    "AnswerBudget": "bfsql.server.answers",
    "HostPolicy": "bfsql.server.http",
    "ServerSettings": "bfsql.settings",
    "ToolContext": "bfsql.server.tool_spec",
    "backend_click_options": "bfsql.backend_options",
    "build_server": "bfsql.server.app",
    "is_loopback": "bfsql.server.http",
    "open_graph": "bfsql.server.host",
    "resolve_config": "bfsql.backend_options",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "AnswerBudget",
    "HostPolicy",
    "ServerSettings",
    "ToolContext",
    "backend_click_options",
    "build_server",
    "is_loopback",
    "open_graph",
    "resolve_config",
]
