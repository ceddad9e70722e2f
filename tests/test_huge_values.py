"""Every tool holds its answer budget even when one entity carries megabytes: a real MCP client over stdio.

A store may hold a name of several megabytes (a bad import, a hostile source). Each tool
that can reach that entity — by id, by search, by traversal, by path query — must clip it
and stay within the budget, and the server must keep answering.
"""

from __future__ import annotations

import json
import os
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
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [
        {"kind": "entity", "id": "BIG", "entity_type": "Thing", "name": BIG_NAME,
         "synonyms": ["s" * 50_000] * 20, "properties": {"description": "d" * 400_000}},
        {"kind": "entity", "id": "SMALL", "entity_type": "Thing", "name": "Small thing"},
        {"kind": "relationship", "subject": "BIG", "predicate": "near", "object": "SMALL"},
        {"kind": "evidence", "subject": "BIG", "predicate": "near", "object": "SMALL", "text_span": "t" * 200_000},
    ]
    path = tmp_path_factory.mktemp("huge") / "huge.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return path


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
async def test_every_answer_stays_within_its_budget(bundle: Path, tool: str, arguments: dict[str, object]):
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=[
        "-m", "bfsql", "serve", "--backend", "memory", "--bundle", str(bundle), "--max-tokens", str(MAX_TOKENS)])
    async with Client(params) as client:
        result = await client.call_tool(tool, arguments)
        text = result.content[0].text
        assert not result.is_error, text
        assert len(text) <= LIMIT, f"{tool} answered {len(text)} characters"
        assert (await client.call_tool("describe_entity", {"id": "SMALL"})).is_error is False
