"""Primitive hooks: wrapping, overriding and ordering by ordinary plugins."""

from __future__ import annotations

import re
from pathlib import Path

import bfsql
from bfsql import Graph, hookimpl, hookspecs
from bfsql.backends.memory import MemoryBackend
from bfsql.engine import bfs_query
from bfsql.models import Node

from conftest import small_records


class Recorder:
    """A wrapper plugin recording calls and results."""

    def __init__(self, log: list) -> None:
        self.log = log

    @hookimpl(wrapper=True)
    def get_node(self, entity_id: str):
        self.log.append(("before", entity_id))
        inner = yield
        return bfsql.then(inner, lambda node: self.log.append(("after", node.id)) or node)


class Renamer:
    """A wrapper that changes results (e.g. access control, redaction)."""

    @hookimpl(wrapper=True)
    def edges_from(self, entity_id: str):
        inner = yield

        async def only_assoc(edges):
            return [e for e in edges if e.predicate == "assoc"]

        return bfsql.then(inner, only_assoc)


class Override:
    """Answers get_node for one id itself; passes (returns None) for the others."""

    @hookimpl(tryfirst=True)
    def get_node(self, entity_id: str):
        if entity_id != "virtual":
            return None

        async def answer() -> Node:
            return Node(id="virtual", entity_type="Virtual")

        return answer()


async def test_wrapper_observes_each_call_once_even_with_cache():
    log: list = []
    graph = Graph(MemoryBackend(small_records()), plugins=[Recorder(log)])
    await graph.get_node("S")
    await graph.get_node("S")
    assert log == [("before", "S"), ("after", "S"), ("before", "S"), ("after", "S")]
    assert graph.stats.calls["get_node"] == 1  # the second call came from the cache


async def test_wrapper_can_change_results_with_async_helper():
    graph = Graph(MemoryBackend(small_records()), plugins=[Renamer()])
    edges = await graph.edges_from("S")
    assert [e.predicate for e in edges] == ["assoc"]


async def test_tryfirst_override_answers_and_passes():
    graph = Graph(MemoryBackend(small_records()), plugins=[Override()])
    assert (await graph.get_node("virtual")).entity_type == "Virtual"
    assert (await graph.get_node("S")).entity_type == "Gene"


async def test_a_call_reaches_exactly_one_backend():
    other = MemoryBackend(small_records())
    graph = Graph(MemoryBackend(small_records()), plugins=[])
    results = graph.pm.hook.get_node(entity_id="S")
    assert not isinstance(results, list)  # firstresult: one awaitable, not a fan-out
    await results
    assert other is not graph.backend


async def test_post_processing_hooks_edit_results():
    class Redact:
        @hookimpl
        def process_node(self, node, tool):
            if node.metadata:
                node.metadata.pop("name", None)
                node.metadata["seen_by"] = tool

    graph = Graph(MemoryBackend(small_records()), plugins=[Redact()])
    result = await bfs_query(graph, ["S"], 1)
    assert result.nodes[0].metadata == {"seen_by": "bfs_query"}


def test_every_hookspec_is_documented():
    docs = (Path(__file__).parents[2] / "docs" / "hooks.md").read_text()
    documented = set(re.findall(r"^#+ `(\w+)", docs, flags=re.MULTILINE))
    specs = {name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "bfsql_spec")}
    assert specs, "no hookspecs found"
    assert specs - documented == set(), f"hookspecs missing from docs/hooks.md: {sorted(specs - documented)}"
