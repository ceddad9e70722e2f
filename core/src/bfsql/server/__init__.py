"""The MCP server: the tool pipeline, the built-in tools, answer fitting, and transports.

A public namespace: ``build_server`` over an open graph, its ``ServerSettings``, the
``ToolContext`` a plugin tool may ask for, ``open_graph`` for a backend from its spec and
config, the HTTP guards, the backends' command-line options, and the ``AnswerBudget`` the
server fits answers to (pass one as ``room`` to a traversal to get the page it would show).
"""

from bfsql.backend_options import backend_click_options, resolve_config
from bfsql.server.app import build_server
from bfsql.server.fitting import AnswerBudget
from bfsql.server.http import HostPolicy, is_loopback
from bfsql.server.run import open_graph
from bfsql.server.tool_spec import ToolContext
from bfsql.settings import ServerSettings

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
