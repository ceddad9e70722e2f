"""min_mentions through the MCP tools: nodes below the threshold go, explicit 1 included.

The graph: a seed S linked to Z (total_mentions 0), H (0.5), O (1), T (2) and N (no total_mentions).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from bfsql import Graph, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.server import build_server
from bfsql.settings import ServerSettings

from conftest import entity, rel

MENTIONS = {"Z": 0, "H": 0.5, "O": 1, "T": 2}


def records() -> list[Any]:
    nodes = [entity("S", "Gene", properties={"total_mentions": 0})]
    nodes += [entity(i, "Gene", properties={"total_mentions": m}) for i, m in MENTIONS.items()]
    nodes += [entity("N", "Paper")]
    return [*nodes, *(rel("S", "r", i) for i in [*MENTIONS, "N"])]


async def reached(tool: str, **arguments: Any) -> tuple[set[str], int]:
    async with Client(await build_server(Graph(MemoryBackend(records()), plugins=[postprocess]),
                                         ServerSettings())) as client:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        answer = json.loads(result.content[0].text)
        return {n["id"] for n in answer["nodes"]}, answer["node_count"]


@pytest.mark.parametrize("threshold, kept", [
    (None, {"S", "Z", "H", "O", "T", "N"}),
    (0, {"S", "Z", "H", "O", "T", "N"}),
    (1, {"S", "O", "T", "N"}),
    (2, {"S", "T", "N"}),
    (3, {"S", "N"}),
])
async def test_nodes_below_the_threshold_are_removed_and_counted_out(threshold: int | None, kept: set[str]) -> None:
    extra = {} if threshold is None else {"min_mentions": threshold}
    nodes, count = await reached("bfs_query", seeds=["S"], max_hops=1, **extra)
    assert nodes == kept and count == len(kept)  # the seed (0 mentions) and N (none) always stay


async def test_min_mentions_refuses_negative_and_non_integers() -> None:
    async with Client(await build_server(Graph(MemoryBackend(records()), plugins=[postprocess]),
                                         ServerSettings())) as client:
        for bad in (-1, 1.5, "many", True):
            result = await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1, "min_mentions": bad})
            assert result.is_error and "min_mentions must be" in result.content[0].text, (bad, result.content[0].text)
