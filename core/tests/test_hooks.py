"""Primitive hooks: wrapping, overriding and ordering by ordinary plugins."""

from __future__ import annotations

import re
from pathlib import Path

import bfsql
from bfsql import Graph, NodeInfo, hookimpl, hookspecs
from bfsql.backends.memory import MemoryBackend
from bfsql.engine import bfs_query
from bfsql.primitives import PRIMITIVES

from conftest import small_records


class Recorder:
    """A wrapper plugin recording calls and results."""

    def __init__(self, log: list) -> None:
        self.log = log

    @hookimpl(wrapper=True)
    def get_nodes(self, entity_ids: list[str]):
        self.log.append(("before", entity_ids))
        inner = yield
        return bfsql.then(inner, lambda found: self.log.append(("after", sorted(found))) or found)


class HidePredicate:
    """A wrapper that changes results (e.g. access control, redaction): one predicate disappears."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]):
        inner = yield

        async def without_r(found):
            return {i: there._replace(edges=[row for row in there.edges if row[1] != "r"])
                    for i, there in found.items()}

        return bfsql.then(inner, without_r)


class Override:
    """Answers get_nodes when it is asked for the virtual id; passes (returns None) otherwise."""

    @hookimpl(tryfirst=True)
    def get_nodes(self, entity_ids: list[str]):
        if entity_ids != ["virtual"]:
            return None

        async def answer() -> dict[str, NodeInfo]:
            return {"virtual": NodeInfo("Virtual")}

        return answer()


async def test_wrapper_observes_each_call_once_even_with_cache():
    log: list = []

    class Cached(MemoryBackend):
        capabilities = bfsql.Capabilities(batch_primitives=True)

    graph = Graph(Cached(small_records()), plugins=[Recorder(log)])
    await graph.get_nodes(["S"])
    await graph.get_nodes(["S"])
    assert log == [("before", ["S"]), ("after", ["S"]), ("before", ["S"]), ("after", ["S"])]
    assert graph.stats.calls["get_nodes"] == 1  # the second call came from the cache


async def test_a_wrapper_on_a_batch_hook_changes_what_the_single_calls_and_the_tools_see():
    graph = Graph(MemoryBackend(small_records()), plugins=[HidePredicate()])
    assert [e.predicate for e in await graph.edges_from("S")] == ["assoc"]
    result = await bfs_query(graph, ["S"], 2)
    assert "r" not in {e.predicate for e in result.edges}
    assert "E" not in {n.id for n in result.nodes}  # reached only through an r edge


async def test_tryfirst_override_answers_and_passes():
    graph = Graph(MemoryBackend(small_records()), plugins=[Override()])
    assert (await graph.get_node("virtual")).entity_type == "Virtual"
    assert (await graph.get_node("S")).entity_type == "Gene"


async def test_a_call_reaches_exactly_one_backend():
    other = MemoryBackend(small_records())
    graph = Graph(MemoryBackend(small_records()), plugins=[])
    results = graph.pm.hook.get_nodes(entity_ids=["S"])
    assert not isinstance(results, list)  # firstresult: one awaitable, not a fan-out
    await results
    assert other is not graph.backend


async def test_a_plugin_registered_after_the_graph_was_made_takes_part():
    """A primitive only the backend implements is answered without pluggy: a later plugin still sees its calls."""
    log: list = []
    graph = Graph(MemoryBackend(small_records()), plugins=[], cache=None)
    assert set(await graph.get_nodes(["S", "nowhere"])) == {"S"}
    recorder = Recorder(log)
    graph.pm.register(recorder)
    await graph.get_nodes(entity_ids=["S"])
    graph.pm.unregister(recorder)
    await graph.get_nodes(["A"])
    assert log == [("before", ["S"]), ("after", ["S"])]
    assert [hit.id for hit in await graph.search_entities("S", None, 1)] == ["S"]


async def test_single_id_calls_are_not_hooks():
    assert not {"get_node", "edges_from", "edges_to", "metadata_for_node", "metadata_for_edge"} & set(PRIMITIVES)
    graph = Graph(MemoryBackend(small_records()), plugins=[])
    assert not hasattr(graph.pm.hook, "edges_from")


class Counting:
    """Counts every post-processing hook call, by tool, and redacts names."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    @hookimpl
    def process_nodes(self, metadata, tool):
        self.calls.append(("process_nodes", tool))
        for value in metadata.values():
            value.pop("name", None)
            value["seen_by"] = tool

    @hookimpl
    def process_edges(self, metadata, tool):
        self.calls.append(("process_edges", tool))

    @hookimpl
    def process_result(self, result, tool):
        self.calls.append(("process_result", tool))


CALLS = [
    ("describe_schema", {}, {"process_result"}),
    ("search_entities", {"query": "s"}, {"process_result"}),
    ("bfs_query", {"seeds": ["S"], "max_hops": 1}, {"process_nodes", "process_edges", "process_result"}),
    ("bfs_query", {"seeds": ["S"], "max_hops": 1, "topology_only": True}, {"process_result"}),
    ("intersect_subgraphs", {"seeds": ["S", "B"], "k": 1}, {"process_nodes", "process_edges", "process_result"}),
    ("describe_entity", {"id": "S"}, {"process_nodes", "process_result"}),
    ("describe_entities", {"ids": ["S", "A"]}, {"process_nodes", "process_result"}),
    ("describe_edges", {"edges": [["S", "assoc", "A"]]}, {"process_edges", "process_result"}),
    ("path_query", {"query": "@S -[assoc]->"}, {"process_result"}),  # results carry no metadata unasked
    ("path_query", {"query": "@S -[assoc]->", "with_metadata": True}, {"process_nodes", "process_result"}),
]


async def test_post_processing_hooks_run_once_per_answer_in_the_pipeline():
    """process_result runs once per answer of bfs_query, intersect_subgraphs and path_query (in the pipeline,
    not in the engine too)."""
    from mcp import Client

    from bfsql.server import build_server

    counting = Counting()
    graph = Graph(MemoryBackend(small_records()), plugins=[bfsql.postprocess, counting])
    async with Client(await build_server(graph)) as client:
        for tool, arguments, hooks in CALLS:
            counting.calls.clear()
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content)
            assert sorted(counting.calls) == sorted((hook, tool) for hook in hooks), tool
        answer = await client.call_tool("describe_entity", {"id": "S"})
        assert answer.structured_content == {"seen_by": "describe_entity", "id": "S", "entity_type": "Gene"}


async def test_the_engine_runs_no_post_processing():
    counting = Counting()
    result = await bfs_query(Graph(MemoryBackend(small_records()), plugins=[counting]), ["S"], 1)
    assert counting.calls == [] and result.nodes[0].metadata["name"] == "s"


def test_every_hookspec_is_documented():
    docs = (Path(__file__).parents[2] / "docs" / "hooks.md").read_text()
    documented = set(re.findall(r"^#+ `(\w+)", docs, flags=re.MULTILINE))
    specs = {name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "bfsql_spec")} | set(PRIMITIVES)
    assert specs, "no hookspecs found"
    assert specs - documented == set(), f"hookspecs missing from docs/hooks.md: {sorted(specs - documented)}"


def _python_blocks(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    return [(text[: m.start()].count("\n") + 2, m.group(1)) for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


async def test_the_examples_of_docs_hooks_md_run():
    """Every Python block of docs/hooks.md, in order, in one namespace (top-level await allowed)."""
    import ast
    import inspect

    namespace: dict = {"__name__": "docs_hooks"}
    blocks = _python_blocks(Path(__file__).parents[2] / "docs" / "hooks.md")
    assert len(blocks) >= 3
    for line, source in blocks:
        code = compile("\n" * (line - 1) + source, "docs/hooks.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(code, namespace)
        if inspect.iscoroutine(outcome):
            await outcome
