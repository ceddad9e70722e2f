"""What a new user meets at the terminal: the installed ``bfsql`` run as a subprocess.

Listing the tools, help grouped by backend with types and defaults, logging of tool calls,
and errors that suggest the nearest name or an install line that works.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bfsql_testsupport.readme import quick_start

BFSQL = [sys.executable, "-m", "bfsql"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BFSQL, *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


def test_bfsql_tools_lists_every_tool_with_its_arguments():
    done = run("tools")
    assert done.returncode == 0, done.stderr
    for tool in ("describe_schema", "search_entities", "bfs_query", "describe_entity", "describe_entities",
                 "describe_edges", "intersect_subgraphs", "path_query"):
        assert f"\n{tool}: " in f"\n{done.stdout}"
    assert "    seeds (list of strings; required): One or more canonical entity ids." in done.stdout
    assert "    max_hops (integer; required)" in done.stdout
    listed = json.loads(run("tools", "--json").stdout)
    assert {t["name"] for t in listed} >= {"bfs_query", "path_query"}
    assert "bfsql tools" in run("query", "--help").stdout


def test_serve_help_groups_backend_options_with_type_and_default():
    help_text = " ".join(run("serve", "--help").stdout.split())  # unwrapped
    sqlite = help_text[help_text.index("Backend sqlite ("):]
    assert "--db PATH" in sqlite and "env: BFSQL_SQLITE_DB" in sqlite
    assert "--memory-index INTEGER" in sqlite and "default: 1000000" in sqlite
    memory = help_text[help_text.index("Backend memory ("):help_text.index("Backend", help_text.index(
        "Backend memory (") + 1)]
    assert "--bundle PATH" in memory and "--db" not in memory
    assert "--max-tokens INTEGER" in help_text and "default: 20000" in help_text and "BFSQL_MAX_TOKENS" in help_text
    assert "--config FILE" in help_text


def test_verbose_logs_every_tool_call_with_its_size_and_whether_it_was_cut():
    done = run("-v", "query", "--max-tokens", "600", "bfs_query", 'seeds=["FPLX:RAF"]', "max_hops=2")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stderr.splitlines() if "tool bfs_query" in line)
    assert ' INFO bfsql.server: tool bfs_query graph=sqlite (seeds=["FPLX:RAF"], max_hops=2): ' in line
    assert " chars, cut in " in line and line.endswith(" ms")
    quiet = run("query", "search_entities", "query=BRAF")
    assert "tool search_entities" not in quiet.stderr
    debug = run("-vv", "query", "search_entities", "query=BRAF")
    assert " DEBUG " in debug.stderr


@pytest.mark.parametrize(("backend", "expected"), [
    ("sqlit", "unknown backend 'sqlit'. Did you mean 'sqlite'?"),
    ("postgress", "unknown backend 'postgress'. Did you mean 'postgres'?"),
    ("nothing-like-it", "unknown backend 'nothing-like-it'. Installed: "),
])
def test_a_mistyped_backend_gets_the_nearest_name(backend: str, expected: str):
    done = run("query", "--backend", backend, "describe_schema")
    assert done.returncode != 0 and expected in done.stderr
    assert "pip install bfsql-" not in done.stderr


def test_a_first_party_backend_not_installed_gets_an_install_line_that_works():
    done = run("query", "--backend", "postgres", "describe_schema", env={"BFSQL_DISABLE_PLUGINS": "postgres"})
    assert done.returncode != 0
    assert "'postgres' comes with the bfsql-postgres plugin: from a checkout of the bfsql repository, " \
           "pip install ./plugins/bfsql-postgres." in done.stderr


def test_shell_completion_is_documented_and_works():
    done = subprocess.run(["bfsql"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "_BFSQL_COMPLETE": "bash_source"})
    assert "complete" in done.stdout and "_bfsql_completion" in done.stdout


@pytest.mark.parametrize("args", quick_start(Path(__file__).parents[1] / "README.md"),
                         ids=lambda args: " ".join(args[:2]))
def test_the_readme_quick_start_lines_work_as_written(args: list[str]):
    done = run(*args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout.strip()


@pytest.mark.parametrize("command", ["serve", "explore"])
@pytest.mark.parametrize("token", [" ", "short-token", "aaaaaaaaaaaaaaaaaaaaaa", "has a space in it 1234"])
def test_blank_and_weak_tokens_are_refused_without_being_echoed(command, token):
    """A blank or weak token is refused (serve and explore do not listen on 0.0.0.0 with it), and never printed."""
    extra = ["--transport", "http"] if command == "serve" else []
    done = run(command, *extra, "--host", "0.0.0.0", "--port", "0", env={"BFSQL_AUTH_TOKEN": token})
    assert done.returncode == 2, done.stderr
    assert "openssl rand -hex 32" in done.stderr and "BFSQL_AUTH_TOKEN" in done.stderr
    if token.strip():
        assert token not in done.stderr, "the token must not be printed"


def test_a_value_from_the_environment_is_never_printed(tmp_path):
    """An invalid value read from a variable (timeout={env="SECRET"}) is named in the error, never printed."""
    config = tmp_path / "graphs.toml"
    config.write_text('[server]\ntimeout = { env = "BFSQL_TEST_SECRET" }\n[graphs.demo]\nbackend = "sqlite"\n')
    done = run("serve", "--config", str(config), env={"BFSQL_TEST_SECRET": "hunter2-secret-value"})
    assert done.returncode != 0
    assert "hunter2" not in done.stderr and "BFSQL_TEST_SECRET" in done.stderr, done.stderr


def _fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize(("db", "says"), [
    (lambda tmp: "/tmp", "is a directory, not a SQLite store"),
    (lambda tmp: "/dev/null", "is not a regular file"),
    (_fifo, "is not a regular file"),
    (lambda tmp: "/proc/self/mem", "cannot be opened as a SQLite store"),
    (lambda tmp: "x" * 5000, "cannot be reached"),
    (lambda tmp: "a\\u0000b", "has a NUL character in its path"),
])
def test_a_store_path_that_is_no_store_says_what_it_is(tmp_path, db, says):
    """A store path that is a directory, a device or a pipe is named as what it is, not 'does not exist'; an
    unreadable file or a 5,000-character name is a plain error, not a traceback."""
    config = tmp_path / "graphs.toml"
    config.write_text(f'[graphs.a]\nbackend = "sqlite"\ndb = "{db(tmp_path)}"\n')
    done = run("query", "describe_schema", "--config", str(config))
    assert done.returncode != 0 and says in done.stderr, done.stderr[-500:]
    assert "Traceback" not in done.stderr and len(done.stderr) < 1000


def test_configuration_files_nested_too_deeply_or_with_too_many_graphs_are_plain_errors(tmp_path):
    """5,000 nested inline tables and 1,000 graphs in a configuration file are refused at once with a plain error."""
    nested = tmp_path / "nested.toml"
    nested.write_text("[server]\nx = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n")
    done = run("query", "describe_schema", "--config", str(nested))
    assert done.returncode != 0 and "nested too deeply" in done.stderr and "Traceback" not in done.stderr
    many = tmp_path / "many.toml"
    many.write_text("".join(f'[graphs.g{i}]\nbackend = "sqlite"\n' for i in range(1000)))
    done = run("query", "describe_schema", "--config", str(many))
    assert done.returncode != 0 and "1000 graphs; one server serves at most 64" in done.stderr, done.stderr


def test_port_zero_announces_the_port_bound(tmp_path):
    """With --port 0 the server prints the port the system chose."""
    import time

    log = tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([*BFSQL, "serve", "--transport", "http", "--port", "0"], stdout=subprocess.DEVNULL,
                                stderr=sink)
    try:
        deadline = time.monotonic() + 60
        while "accepting Host" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/mcp", log.read_text()).group(1))
        assert port != 0
        assert httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=5).status_code in (400, 405, 406)
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_terminal_says_what_it_means():
    """The CLI's texts: whole sentences, a hint for -v and a bare value, a word for an empty search."""
    listing = run("--help").stdout
    commands = listing[listing.index("Commands:"):]
    assert "..." not in commands and "from the terminal." in commands
    misplaced = run("serve", "-v")
    assert misplaced.returncode == 2 and "-v goes before the command: bfsql -v serve" in misplaced.stderr
    bare = run("query", "search_entities", "BRAF")
    assert bare.returncode == 2 and "did you mean query=BRAF?" in bare.stderr
    nothing = run("query", "search_entities", "query=zzqqxxj")
    assert nothing.returncode == 0 and nothing.stdout.strip() == "No match."
    tools = run("tools").stdout
    assert "valuess" not in tools and "edges (list of lists of 3 strings or objects; required)" in tools
    path_query = tools[tools.index("path_query: "):tools.index("\n\n", tools.index("path_query: "))]
    assert "followed by up to 5 edges" in path_query and "[] is a syntax error" in path_query


QUICK_QUERY_UNLOADED = (
    "mcp", "mcp_types", "aiohttp", "neo4j", "asyncpg", "starlette", "uvicorn", "jsonschema", "rich", "tokenizers",
    "bfsql.server.app", "bfsql.loading.sqlite_loader", "bfsql.loading.bundle", "bfsql.diagrams", "bfsql_jsonld.server",
    "bfsql_neo4j.backend", "bfsql_postgres.backend", "bfsql_sparql.backend", "bfsql_jsonld.backend", "opentelemetry",
)
"""What one ``bfsql query`` on the demo must not import: the MCP SDK and what it brings (a call answered in process
needs no protocol), the other backends and their drivers, the loader, the diagrams, the embedder's model, the
OpenTelemetry API (nothing can be traced in a process that never imported it)."""

MODULES_AT_EXIT = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "def facts():\n"
    "    from pydantic import BaseModel\n"
    "    models, todo = [], [BaseModel]\n"
    "    while todo:\n"
    "        found = todo.pop().__subclasses__()\n"
    "        models += found\n"
    "        todo += found\n"
    "    return {'modules': sorted(sys.modules),\n"
    "            'validators': sorted({m.__name__ for m in models if m.__dict__.get('__pydantic_complete__')})}\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(facts())))\n"
    "from bfsql.cli import main\n"
    "sys.argv[0] = 'bfsql'\n"
    "main()\n"
)
"""Runs the bfsql command line and writes, at exit, the names of every module it imported and of every pydantic model
whose validator it built."""


WALK_UNLOADED = ("numpy", "bfsql.csr", "bfsql.vectors", "bfsql.engine.paths")
"""What a ``bfsql query`` on the demo that does not search by vector must not import either: the demo is small enough
to walk over SQL when opened for one call (its array index, and numpy with it, is never read); the path engine loads
for path queries only."""


WALKS = ("bfsql.engine.bfs", "bfsql.engine.intersect")
"""The engine's walks: a call loads its own tool's only."""


@pytest.mark.parametrize("call, unloaded", [
    (["describe_entity", "id=HGNC:BRAF"], QUICK_QUERY_UNLOADED + WALK_UNLOADED + WALKS),
    (["describe_schema"], QUICK_QUERY_UNLOADED + WALK_UNLOADED + WALKS),
    (["bfs_query", '{"seeds": ["FPLX:RAF"], "max_hops": 1, "topology_only": true}'],
     (*QUICK_QUERY_UNLOADED, *WALK_UNLOADED, "bfsql.engine.intersect")),
])
def test_a_query_imports_neither_the_mcp_sdk_nor_other_backends(tmp_path, call, unloaded):
    """One call from the terminal starts without the MCP SDK, the other installed backends' drivers or the loader;
    one on the demo that does not search by vector, without the array index and numpy. It builds the validator of
    its own tool's arguments only, and none for the server settings when it is given none."""
    facts_file = tmp_path / "facts.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BFSQL_") or k == "BFSQL_CACHE_DIR"}
    env["BFSQL_RESIDENT"] = "0"  # the call is run here: one left resident would answer it elsewhere
    built = subprocess.run([sys.executable, "-m", "bfsql", "query", "describe_schema", "--json"], capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert built.returncode == 0, built.stderr  # the demo store is built by the first call, not the measured one
    done = subprocess.run([sys.executable, "-c", MODULES_AT_EXIT, str(facts_file), "query", *call, "--json"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
    facts = json.loads(facts_file.read_text())
    imported = set(facts["modules"])
    assert "bfsql.server.pipeline" in imported, "the runner saw the call"
    assert sorted(name for name in unloaded if name in imported) == []
    assert sorted(name for name in imported if name.startswith(("mcp.", "aiohttp.", "neo4j.", "asyncpg."))) == []
    tool_arguments = "".join(part.title() for part in call[0].split("_")) + "Arguments"
    assert [name for name in facts["validators"] if name.endswith("Arguments")] == [tool_arguments]
    assert "ServerSettings" not in facts["validators"]


def test_settings_given_none_are_the_validated_defaults():
    """A command given no setting takes the defaults without validating them (pydantic's validator for the settings
    is some 15 ms to build): they must be exactly what validation gives."""
    from bfsql.settings import ServerSettings

    assert ServerSettings.given({}) == ServerSettings.model_validate({})
    assert ServerSettings.given({}).model_fields_set == set()
    assert ServerSettings.given({"max_tokens": 5000}).max_tokens == 5000


QUERIED_AS_SERVED = [
    ("describe_entity", {"id": "HGNC:BRAF"}),
    ("describe_entities", {"ids": ["HGNC:BRAF", "FPLX:RAF", "NOPE:1"]}),
    ("search_entities", {"query": "RAF kinase", "limit": 5}),
    ("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2, "max_tokens": 600}),
    ("intersect_subgraphs", {"seeds": ["HGNC:BRAF", "HGNC:RAF1"], "k": 1}),
    ("describe_schema", {}),
]


async def test_a_query_answers_the_document_a_served_call_answers():
    """``bfsql query --json`` prints the very document an MCP client gets from ``bfsql serve`` for the same call,
    and the same error text for a call refused."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    served = Client(StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve"], env=dict(os.environ)))
    async with served as client:
        for tool, arguments in QUERIED_AS_SERVED:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            done = run("query", tool, json.dumps(arguments), "--json")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == result.structured_content == json.loads(result.content[0].text), tool
        refused = await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 9})
        assert refused.is_error
        done = run("query", "bfs_query", '{"seeds": ["FPLX:RAF"], "max_hops": 9}')
        assert done.returncode == 1 and done.stderr.strip() == f"Error: {refused.content[0].text}"
