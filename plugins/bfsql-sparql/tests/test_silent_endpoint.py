"""A SPARQL endpoint that accepts connections and never answers must not hold up the server's other graphs.

With such an endpoint in a configuration file, ``bfsql serve`` still starts at once: the
graphs open at once, each within its ``start_timeout``; a graph that does not is served as
unavailable, and says why.
"""

from __future__ import annotations

import socket
import sys
import time

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def test_a_silent_endpoint_is_served_as_down_and_the_other_graph_answers(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete in the kernel's backlog; nobody ever reads them
    port = silent.getsockname()[1]
    config = tmp_path / "graphs.toml"
    config.write_text(
        '[server]\nstart_timeout = 3\n\n[graphs.famplex]\nbackend = "sqlite"\n\n'
        f'[graphs.silent]\nbackend = "sparql"\nendpoint = "http://127.0.0.1:{port}/query"\n'
    )
    started = time.monotonic()
    try:
        params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--config", str(config)])
        async with Client(params) as client:
            schema = await client.call_tool("describe_schema", {})
            seconds = time.monotonic() - started
            graphs = {g["name"]: g for g in schema.structured_content["graphs"]}
            assert graphs["famplex"]["available"] and not graphs["silent"]["available"]
            down = await client.call_tool("search_entities", {"query": "x", "graph": "silent"})
            text = down.content[0].text
            assert down.is_error and "did not start within 3 s" in text, text
            up = await client.call_tool("search_entities", {"query": "RAF1"})
            assert not up.is_error
    finally:
        silent.close()
    assert seconds < 15, f"the server took {seconds:.1f} s to answer"
