"""The hop memo's scope: one full traversal (bfsql.hop_memo), None everywhere else; a path query's memo
(bfsql.call_memo), which its hops do not see."""

from __future__ import annotations

import asyncio
from typing import Any

from bfsql import Edge, HopMemo, Neighbourhood, NodeInfo, bfs_query, call_memo, hop_memo, intersect_subgraphs
from bfsql.backends.memory import MemoryBackend
from bfsql.engine.paths import path_query
from bfsql.graph import Graph

from conftest import small_records


class Watching(MemoryBackend):
    """A memory backend that notes the memo each primitive call sees."""

    def __init__(self) -> None:
        super().__init__(small_records())
        self.seen: list[tuple[str, HopMemo | None]] = []

    async def hop(self, entity_ids: list[str]) -> dict[str, Neighbourhood]:
        self.seen.append(("hop", hop_memo()))
        await asyncio.sleep(0)  # let a concurrent call run in between
        return await super().hop(entity_ids)

    async def metadata_for_edges(self, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
        self.seen.append(("metadata_for_edges", hop_memo()))
        return await super().metadata_for_edges(edges)

    async def get_nodes(self, entity_ids: list[str]) -> dict[str, NodeInfo]:
        self.seen.append(("get_nodes", call_memo()))
        return await super().get_nodes(entity_ids)


async def test_a_full_traversal_has_one_memo_for_its_hops_and_its_metadata() -> None:
    backend = Watching()
    await bfs_query(Graph(backend, cache=None), ["S"], 2)
    memos = {id(memo) for _, memo in backend.seen}
    assert [name for name, _ in backend.seen] == ["hop", "hop", "metadata_for_edges"]
    assert len(memos) == 1 and all(isinstance(memo, HopMemo) for _, memo in backend.seen)
    assert hop_memo() is None, "the memo ends with the call"


async def test_no_memo_outside_a_full_traversal() -> None:
    backend = Watching()
    graph = Graph(backend, cache=None)
    await bfs_query(graph, ["S"], 2, topology_only=True)
    await intersect_subgraphs(graph, ["S", "B"], 1, topology_only=True)
    await graph.hop(["S"])
    await graph.metadata_for_edges([Edge("S", "assoc", "A")])
    assert backend.seen and all(memo is None for _, memo in backend.seen)


async def test_concurrent_calls_have_memos_of_their_own() -> None:
    backend = Watching()
    graph = Graph(backend, cache=None)
    await asyncio.gather(bfs_query(graph, ["S"], 1), intersect_subgraphs(graph, ["S", "B"], 1))
    memos = {id(memo) for _, memo in backend.seen}
    assert len(memos) == 2 and None not in {memo for _, memo in backend.seen}


async def test_a_path_query_has_a_memo_of_its_own_that_its_hops_do_not_see() -> None:
    backend = Watching()
    await path_query(Graph(backend, cache=None), "@S -[*]-> -[*]->")
    kept = [memo for name, memo in backend.seen if name == "get_nodes"]
    assert kept and all(isinstance(memo, HopMemo) and not memo.hops for memo in kept)
    assert all(memo is None for name, memo in backend.seen if name == "hop")
    assert call_memo() is None, "the memo ends with the call"
