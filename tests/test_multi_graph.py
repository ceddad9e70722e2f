"""Several graphs behind one server, configured from a file: a real MCP client against ``bfsql serve --config``.

Two SQLite graphs (the bundled FamPlex demo and the conformance suite's standard graph,
loaded with ``bfsql load``) answer apart; the ``graph`` argument, the default graph, unknown
graphs, a graph that cannot be opened, and every kind of mistake in the file. PostgreSQL next
to the demo, with its server stopped mid-session, is tested in the postgres plugin's suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql.testing.standard_graph import TP53, write_standard_bundle

BFSQL = [sys.executable, "-m", "bfsql"]


@pytest.fixture(scope="module")
def standard_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The standard graph in a SQLite store made by the installed CLI."""
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()
    directory = tmp_path_factory.mktemp("standard")
    db = directory / "standard.db"
    done = subprocess.run([*BFSQL, "load", "--db", str(db), str(write_standard_bundle(directory))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return db


def write_config(directory: Path, text: str) -> Path:
    path = directory / "graphs.toml"
    path.write_text(text)
    return path


def two_graphs(directory: Path, db: Path, extra: str = "") -> Path:
    return write_config(directory, f"""
[server]
max_tokens = 6000

[graphs.famplex]
backend = "sqlite"
description = "FamPlex demo"

[graphs.standard]
backend = "sqlite"
db = "{db}"
description = "The conformance graph"
max_tokens = 2000
{extra}""")


def serve(config: Path, *args: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--config",
                                                                      str(config), *args], env=dict(os.environ)))


def data(result) -> object:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, "expected a tool error"
    return result.content[0].text


async def test_each_graph_answers_for_itself_and_the_first_is_the_default(tmp_path: Path, standard_db: Path):
    async with serve(two_graphs(tmp_path, standard_db)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["bfs_query"].input_schema["properties"]["graph"]["enum"] == ["famplex", "standard"]
        assert "famplex" in tools["bfs_query"].description and "standard" in tools["bfs_query"].description

        schema = data(await client.call_tool("describe_schema", {}))
        assert "Family" in schema["entity_types"]  # the default graph's schema
        assert [(g["name"], g["backend"], g["default"]) for g in schema["graphs"]] == [
            ("famplex", "sqlite", True), ("standard", "sqlite", False)]
        assert schema["graphs"][1]["description"] == "The conformance graph"
        standard = data(await client.call_tool("describe_schema", {"graph": "standard"}))
        assert "graphs" not in standard and "Family" not in standard["entity_types"]

        hits = data(await client.call_tool("search_entities", {"query": "TP53", "graph": "standard"}))["items"]
        assert hits[0]["id"] == TP53
        famplex = data(await client.call_tool("search_entities", {"query": "RAF1"}))["items"]
        assert famplex[0]["id"] == "HGNC:RAF1"
        answer = data(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 1, "graph": "standard"}))
        assert answer["nodes"][0]["id"] == TP53

        missing = error_text(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 1}))
        assert missing.startswith("[graph famplex] Unknown entity id(s)")


async def test_graphs_keep_their_own_budgets(tmp_path: Path, standard_db: Path):
    async with serve(two_graphs(tmp_path, standard_db)) as client:
        small = data(await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 2, "graph": "standard"}))
        large = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2}))
        assert len(json.dumps(small, separators=(",", ":"), ensure_ascii=False)) <= 2000 * 3
        assert 2000 * 3 < len(json.dumps(large, separators=(",", ":"), ensure_ascii=False)) <= 6000 * 3


async def test_an_unknown_graph_is_a_tool_error_naming_the_served_graphs(tmp_path: Path, standard_db: Path):
    async with serve(two_graphs(tmp_path, standard_db)) as client:
        text = error_text(await client.call_tool("search_entities", {"query": "x", "graph": "standrd"}))
        assert text == "Unknown graph 'standrd'. Did you mean 'standard'? This server's graphs: famplex, standard."
        huge = error_text(await client.call_tool("search_entities", {"query": "x", "graph": "g" * 200_000}))
        assert len(huge) < 300 and huge.endswith("This server's graphs: famplex, standard."), huge  # clipped
        assert data(await client.call_tool("search_entities", {"query": "RAF1"}))["items"]  # still serving


async def test_a_graph_that_cannot_be_opened_leaves_the_others_answering(tmp_path: Path, standard_db: Path):
    broken = tmp_path / "not-a-store.db"
    broken.write_text("this is not a sqlite file\n" * 100)
    config = two_graphs(tmp_path, standard_db, f"""
[graphs.broken]
backend = "sqlite"
db = "{broken}"
""")
    async with serve(config) as client:
        text = error_text(await client.call_tool("search_entities", {"query": "x", "graph": "broken"}))
        assert text.startswith("Graph 'broken' is unavailable: it could not be opened at start-up")
        assert "famplex, standard" in text
        schema = data(await client.call_tool("describe_schema", {}))
        assert {g["name"]: g["available"] for g in schema["graphs"]} == {
            "famplex": True, "standard": True, "broken": False}
        assert data(await client.call_tool("search_entities", {"query": "TP53", "graph": "standard"}))["items"]


async def test_default_true_picks_the_default_graph_and_flags_override_the_file(tmp_path: Path, standard_db: Path):
    config = two_graphs(tmp_path, standard_db).read_text().replace(
        'description = "The conformance graph"', 'description = "The conformance graph"\ndefault = true')
    path = write_config(tmp_path, config)
    async with serve(path, "--max-tokens", "1000") as client:
        hits = data(await client.call_tool("search_entities", {"query": "TP53"}))["items"]
        assert hits[0]["id"] == TP53
        answer = data(await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2,
                                                           "graph": "famplex"}))
        assert len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 1000 * 3


def test_one_graph_needs_no_graph_argument(standard_db: Path):
    done = subprocess.run([*BFSQL, "query", "--db", str(standard_db), "search_entities", "query=TP53", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"][0]["id"] == TP53


MISTAKES = [
    ('[server]\nmax_tokens = "lots"\n[graphs.a]\nbackend = "sqlite"\n',
     ':2: [server] max_tokens: must be an integer; got \'lots\'.'),
    ("[server]\nmax_token = 100\n[graphs.a]\nbackend = 'sqlite'\n",
     ":2: [server] max_token: unknown setting. Did you mean 'max_tokens'?"),
    ('[graphs.a]\nbackend = "sqlit"\n', ":2: [graphs.a] backend: backend 'sqlit' is not installed. Did you mean "
     "'sqlite'?"),
    ('[graphs.a]\nbackend = "sqlite"\ndbb = "x.db"\n', ":3: [graphs.a] dbb: not an option of backend 'sqlite'. "
     "Did you mean 'db'?"),
    ('[graphs.a]\nbackend = "sqlite"\nmemory_index = "many"\n',
     ":3: [graphs.a] memory_index: must be an integer; got 'many'."),
    ('[graphs.a]\nbackend = "sqlite"\ntransport = "http"\n',
     ":3: [graphs.a] transport: a server setting, the same for every graph. Set it in [server]."),
    ('[graphs.a]\ndescription = "no backend"\n', ":1: [graphs.a]: no backend."),
    ('[graphs.a]\nbackend = \n', ":2: not valid TOML"),
    ('[server]\nport = 1\n', ": no graphs: add at least one [graphs.NAME] table"),
    ('[graphs.a]\nbackend = "sqlite"\ndefault = true\n[graphs.b]\nbackend = "sqlite"\ndefault = true\n',
     ":6: [graphs.b] default: more than one default graph (a, b)."),
    ('[graph.a]\nbackend = "sqlite"\n', ":1: [graph]: unknown table."),
    ('[graphs.a]\nbackend = "sqlite"\ndb = { env = "BFSQL_TEST_UNSET_VARIABLE" }\n',
     ":3: [graphs.a] db: environment variable 'BFSQL_TEST_UNSET_VARIABLE' is not set."),
    ('[graphs.a]\nbackend = "sqlite"\nembedder = "hashingg"\n',
     ":3: [graphs.a] embedder: embedder 'hashingg' is not installed. Did you mean 'hashing'?"),
]


@pytest.mark.parametrize(("text", "expected"), MISTAKES, ids=[m[1].split(":", 2)[-1][:40] for m in MISTAKES])
def test_a_mistake_in_the_file_is_one_error_naming_file_line_and_key(tmp_path: Path, text: str, expected: str):
    config = write_config(tmp_path, text)
    done = subprocess.run([*BFSQL, "serve", "--config", str(config)], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"Error: {config}{expected}" in done.stderr, done.stderr


def test_backend_flags_do_not_mix_with_a_config_file(tmp_path: Path, standard_db: Path):
    done = subprocess.run([*BFSQL, "serve", "--config", str(two_graphs(tmp_path, standard_db)), "--db", "x.db"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "--db cannot be combined with --config" in done.stderr


async def test_a_graph_without_a_description_in_the_file_shows_the_stores_own(tmp_path: Path, standard_db: Path):
    config = write_config(tmp_path, f"""
[graphs.famplex]
backend = "sqlite"

[graphs.standard]
backend = "sqlite"
db = "{standard_db}"
description = "Std"
""")
    async with serve(config) as client:
        schema = data(await client.call_tool("describe_schema", {}))
        famplex, standard = schema["graphs"]
        assert famplex["description"].startswith("FamPlex 0.0.5") and standard["description"] == "Std"
        assert schema["graph_description"].startswith("FamPlex 0.0.5")
        assert data(await client.call_tool("describe_schema", {"graph": "standard"}))["graph_description"] == "Std"
        bfs = next(t for t in (await client.list_tools()).tools if t.name == "bfs_query")
        assert "famplex (sqlite, default): FamPlex 0.0.5" in bfs.description
    listing = subprocess.run([*BFSQL, "tools", "--config", str(config)], capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr
    graphs = listing.stdout[listing.stdout.index("graphs (the description each shows):"):]
    assert "famplex (sqlite, default): the store's own: 'FamPlex 0.0.5" in graphs
    assert "standard (sqlite): the configuration file's: 'Std' (the store's own," in graphs
    assert "is longer and not shown: remove 'description' from [graphs.standard] to show it" in graphs


async def test_each_answer_names_its_graph_and_an_unnamed_call_the_others(tmp_path: Path, standard_db: Path):
    """A search the default graph cannot answer says which graph answered and which others the call may name,
    so that a miss there is not taken for a miss everywhere."""
    async with serve(two_graphs(tmp_path, standard_db)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"graph", "other_graphs"} <= set(tools["search_entities"].output_schema["properties"])
        missed = await client.call_tool("search_entities", {"query": "nutlin-3", "mode": "exact"})
        assert missed.structured_content == json.loads(missed.content[0].text)
        assert {k: missed.structured_content[k] for k in ("graph", "other_graphs", "items")} == {
            "graph": "famplex", "other_graphs": ["standard"], "items": []}
        named = json.loads((await client.call_tool("search_entities", {"query": "TP53", "graph": "standard"}))
                           .content[0].text)
        assert named["graph"] == "standard" and "other_graphs" not in named and named["items"][0]["id"] == TP53
        record = json.loads((await client.call_tool("describe_entity", {"id": TP53, "graph": "standard"}))
                            .content[0].text)
        assert record["_graph"] == "standard" and record["id"] == TP53
        walk = await client.call_tool("bfs_query", {"seeds": [TP53], "max_hops": 2, "graph": "standard"})
        assert walk.structured_content["graph"] == "standard" and len(walk.content[0].text) <= 2000 * 3
