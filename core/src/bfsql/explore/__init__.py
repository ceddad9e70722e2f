"""``bfsql explore``: a local web page that searches a graph and draws its neighbourhoods.

The page (``static/``) reads the graph only through the server's tool pipeline — the same
validation, timeout, budgets, truncation notes and ``process_result`` hooks as an MCP client
gets — and draws with Cytoscape.js and its fCoSE layout, shipped in ``static/vendor`` with
their licences: nothing is fetched from elsewhere at run time. See docs/explore.md.
"""

from bfsql.explore.app import PAGE_TOOLS, build_app, serve_explorer

__all__ = ["PAGE_TOOLS", "build_app", "serve_explorer"]
