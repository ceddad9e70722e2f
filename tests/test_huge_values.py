"""Every tool holds its answer budget even when one entity carries megabytes: a real MCP client over stdio.

A store may hold a name of several megabytes (a database another tool filled, or a load
with raised limits). Each tool that can reach that entity — by id, by search, by traversal,
by path query — must clip it and stay within the budget, and the server must keep answering.
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

MAX_TOKENS = 2000
LIMIT = MAX_TOKENS * 3
"""The characters an answer may take (fitting's estimate: three characters per token)."""

BIG_NAME = "Huge " + "N" * 3_000_000


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The entities below in a SQLite store, loaded with limits raised far enough to take them."""
    rows = [
        {"kind": "entity", "id": "BIG", "entity_type": "Thing", "name": BIG_NAME,
         "synonyms": ["s" * 50_000] * 20, "properties": {"description": "d" * 400_000}},
        {"kind": "entity", "id": "SMALL", "entity_type": "Thing", "name": "Small thing"},
        {"kind": "relationship", "subject": "BIG", "predicate": "near", "object": "SMALL"},
        {"kind": "evidence", "subject": "BIG", "predicate": "near", "object": "SMALL", "text_span": "t" * 200_000},
    ]
    directory = tmp_path_factory.mktemp("huge")
    bundle = directory / "huge.jsonl"
    bundle.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    db = directory / "huge.db"
    raised = [f"--limit={name}=64M" for name in ("line_bytes", "name_chars", "text_chars")]
    done = subprocess.run([sys.executable, "-m", "bfsql", "load", "--db", str(db), "--embedder", "none", *raised,
                           str(bundle)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return db


CALLS = [
    ("path_query", {"query": "@BIG"}),
    ("path_query", {"query": "@SMALL <-[near]-"}),
    ("path_query", {"query": "\"Huge\" -[*]->"}),
    ("describe_entity", {"id": "BIG"}),
    ("describe_entities", {"ids": ["BIG", "SMALL"]}),
    ("bfs_query", {"seeds": ["SMALL"], "max_hops": 1}),
    ("intersect_subgraphs", {"seeds": ["BIG", "SMALL"], "k": 1}),
    ("describe_edges", {"edges": [["BIG", "near", "SMALL"]]}),
    ("search_entities", {"query": "Huge"}),
]


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)])
async def test_every_answer_stays_within_its_budget(store: Path, tool: str, arguments: dict[str, object]):
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=[
        "-m", "bfsql", "serve", "--db", str(store), "--max-tokens", str(MAX_TOKENS)])
    async with Client(params) as client:
        result = await client.call_tool(tool, arguments)
        text = result.content[0].text
        assert not result.is_error, text
        assert len(text) <= LIMIT, f"{tool} answered {len(text)} characters"
        assert (await client.call_tool("describe_entity", {"id": "SMALL"})).is_error is False


HUGE = "A" * 200_000
ECHOES = [
    ("bfs_query", {"seeds": ["SMALL"], "max_hops": 1, "node_types": [HUGE], "max_tokens": 1000}),
    ("bfs_query", {"seeds": ["SMALL", HUGE], "max_hops": 1, "max_tokens": 1000}),
    ("intersect_subgraphs", {"seeds": ["BIG", "SMALL"], "k": 1, "predicates": [HUGE] * 5, "max_tokens": 1000}),
    ("describe_entity", {"id": HUGE, "max_tokens": 1000}),
    ("path_query", {"query": HUGE, "max_tokens": 1000}),
    ("search_entities", {"query": HUGE, "node_types": [HUGE]}),
    (HUGE, {}),
    ("describe_edges", {"edges": [[HUGE, HUGE, HUGE]], "max_tokens": 1000}),
]


async def test_echoed_input_counts_against_the_budget(store: Path):
    """A 200,000-character type name is clipped in the warning that names it: every text of an answer or an
    error counts against the budget (1,000 tokens here)."""
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=[
        "-m", "bfsql", "serve", "--db", str(store), "--max-tokens", str(MAX_TOKENS)])
    async with Client(params) as client:
        for tool, arguments in ECHOES:
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text
            limit = 1000 * 3 if "max_tokens" in arguments else LIMIT
            assert len(text) <= limit, f"{tool[:40]} answered {len(text)} characters: {text[:200]}"
            assert "Traceback" not in text
