"""The MCP tool layer in-process: failures, recovery, timeouts, budgets, plugin tools."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys

import pytest
from mcp import Client

from bfsql import Graph, HopEdge, hookimpl, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.budgets import CHARS_PER_TOKEN
from bfsql.demo import ensure_demo_db
from bfsql.plugins import get_backends, get_plugin_manager
from bfsql.server import build_server
from bfsql.server.allocator import give_back_freed_memory
from bfsql.server.answers.fitting import AnswerBudget, compact_json, fit_list, fit_record
from bfsql.server.run import GC_THRESHOLDS, open_server
from bfsql.settings import GraphPlan, ServerSettings

from conftest import entity, rel, small_records


class FlakyBackend(MemoryBackend):
    """Fails with ConnectionError while ``down``; sleeps ``delay`` seconds per edge call."""

    def __init__(self, records) -> None:
        super().__init__(records)
        self.down = False
        self.delay = 0.0

    async def hop(self, entity_ids: list[str]) -> dict[str, list[HopEdge]]:
        if self.down:
            raise ConnectionError("connection refused")
        await asyncio.sleep(self.delay)
        return await super().hop(entity_ids)


def payload(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def client_for(backend, primitive_timeout: float | None = 30.0, **settings) -> Client:
    graph = Graph(backend, plugins=[postprocess], primitive_timeout=primitive_timeout)
    return Client(await build_server(graph, ServerSettings(**settings)))


async def test_backend_failure_is_a_clear_error_and_the_server_recovers(caplog):
    backend = FlakyBackend(small_records())
    async with await client_for(backend) as client:
        backend.down = True
        result = await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1})
        assert result.is_error
        text = result.content[0].text
        assert "ConnectionError" in text and "try again" in text and "Traceback" not in text
        backend.down = False
        assert payload(await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1}))["node_count"] == 4
    assert "Traceback" not in caplog.text


async def test_describe_schema_warns_of_what_the_backend_says_makes_its_answers_stale():
    backend = FlakyBackend(small_records())
    async with await client_for(backend) as client:
        assert "warnings" not in payload(await client.call_tool("describe_schema", {}))
        problem = "The standby is not streaming from its primary."

        async def health() -> list[str]:
            return [problem]

        backend.health = health  # type: ignore[method-assign]
        assert payload(await client.call_tool("describe_schema", {}))["warnings"] == [problem]


async def test_slow_backend_times_out_with_advice():
    backend = FlakyBackend(small_records())
    backend.delay = 5
    async with await client_for(backend, timeout=0.2) as client:
        result = await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1})
        assert result.is_error and "timed out after 0.2s" in result.content[0].text
        backend.delay = 0
        assert payload(await client.call_tool("describe_entity", {"id": "S"}))["id"] == "S"


async def test_a_slow_primitive_times_out_and_the_error_names_it():
    backend = FlakyBackend(small_records())
    backend.delay = 5
    async with await client_for(backend, primitive_timeout=0.2, timeout=10) as client:
        result = await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1})
        assert result.is_error
        assert "did not answer hop within 0.2s" in result.content[0].text
        backend.delay = 0
        assert payload(await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1}))["node_count"] == 4


class SlowBeyondSeed(MemoryBackend):
    """Answers a hop from a frontier holding the seed ``S`` at once, any other (a walk's second) after 3 s."""

    async def hop(self, entity_ids: list[str]) -> dict[str, list[HopEdge]]:
        if "S" not in entity_ids:
            await asyncio.sleep(3)
        return await super().hop(entity_ids)


async def test_one_hop_from_a_seed_needs_no_heavy_call_slot():
    """The one slot is held by a slow 2-hop walk (3 s): a 1-hop bfs_query from one seed (its work bounded by the hub
    cap) answers meanwhile; one from three seeds (3 x 20,000 rows may be read) waits for the slot."""
    graph = Graph(SlowBeyondSeed(small_records()), plugins=[postprocess])
    server = await build_server(graph, ServerSettings(timeout=20), max_heavy_calls=1)
    slots = next(iter(server.slots.values()))
    async with Client(server) as client:
        slow = asyncio.ensure_future(client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 2}))
        while not slots.running:
            await asyncio.sleep(0.01)
        one_hop = await client.call_tool("bfs_query", {"seeds": ["S"], "max_hops": 1})
        assert payload(one_hop)["node_count"] == 4 and not slow.done() and slots.waiting == 0
        three = asyncio.ensure_future(
            client.call_tool("bfs_query", {"seeds": ["S", "A", "B"], "max_hops": 1, "topology_only": True}))
        while not slots.waiting and not three.done():
            await asyncio.sleep(0.01)
        assert not slow.done() and not three.done()  # it waits for the slot the slow walk holds
        assert payload(await three)["node_count"] > 4 and payload(await slow)["node_count"] > 4


async def test_describe_entity_is_flat_and_describe_entities_omits_unknown():
    async with await client_for(MemoryBackend(small_records())) as client:
        assert payload(await client.call_tool("describe_entity", {"id": "E"})) == {
            "id": "E", "entity_type": "Gene", "name": "e", "total_mentions": 1}
        many = payload(await client.call_tool("describe_entities", {"ids": ["E", "nope", "E"]}))
        assert many == {"unknown_ids": ["nope"],
                        "items": [{"id": "E", "entity_type": "Gene", "metadata": {"name": "e", "total_mentions": 1}}]}


async def test_vectors_never_reach_the_client():
    records = [entity("V", "Gene", properties={"embedding": [0.1] * 8, "other": list(range(100))})]
    async with await client_for(MemoryBackend(records)) as client:
        assert payload(await client.call_tool("describe_entity", {"id": "V"})) == {
            "id": "V", "entity_type": "Gene", "name": "v"}


async def test_schema_is_not_injected_for_large_schemas():
    records = [entity(f"N{i}", f"Type{i}") for i in range(25)]
    async with await client_for(MemoryBackend(records)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "Valid node_types" not in tools["bfs_query"].description
    async with await client_for(MemoryBackend(small_records())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "Valid node_types for this graph: Disease, Drug, Gene, Paper." in tools["bfs_query"].description


def hub_records(n: int) -> list:
    records = [entity("H", "Hub", properties={"description": "x" * 300})]
    records += [entity(f"L{i:04d}", "Leaf", properties={"description": "y" * 200}) for i in range(n)]
    return records + [rel("H", "has", f"L{i:04d}", confidence=0.5, source_documents=["d"] * 5) for i in range(n)]


def tokens(answer) -> int:
    return len(compact_json(answer)) // CHARS_PER_TOKEN


async def test_every_answer_fits_the_budget_with_a_continuation():
    async with await client_for(MemoryBackend(hub_records(400)), max_tokens=2000) as client:
        answer = payload(await client.call_tool("bfs_query", {"seeds": ["H"], "max_hops": 1}))
        assert tokens(answer) <= 2000
        assert tokens(answer) >= 0.75 * 2000  # the budget is used, not left empty
        assert answer["node_count"] == 401
        notes = {n["reason"]: n for n in answer["truncated"]}
        assert "max_tokens" in notes
        named = [n for n in answer["nodes"] if n.get("name") or (n.get("metadata") or {}).get("name")]
        assert len(named) >= 0.9 * len(answer["nodes"])  # nine in ten keep their names
        assert answer["nodes"][0]["id"] == "H"
        seen = {n["id"] for n in answer["nodes"]}
        offset = notes["max_tokens"]["next_offset"]
        assert offset == len(answer["nodes"])
        while offset is not None:
            page = payload(await client.call_tool("bfs_query", {"seeds": ["H"], "max_hops": 1, "offset": offset}))
            assert tokens(page) <= 2000
            assert not seen & {n["id"] for n in page["nodes"]}
            seen |= {n["id"] for n in page["nodes"]}
            offset = next((n["next_offset"] for n in page.get("truncated", []) if "next_offset" in n), None)
        assert len(seen) == 401
        result = await client.call_tool("describe_entities", {"ids": [f"L{i:04d}" for i in range(300)]})
        many = payload(result)
        assert tokens(many) <= 2000 and all("id" in item for item in many["items"])
        assert "remaining_ids" in many["truncated"][-1]


async def test_a_call_may_ask_for_a_smaller_budget_never_a_larger_one():
    async with await client_for(MemoryBackend(hub_records(400)), max_tokens=4000) as client:
        small = payload(await client.call_tool("bfs_query", {"seeds": ["H"], "max_hops": 1, "max_tokens": 1000}))
        assert 750 <= tokens(small) <= 1000
        large = payload(await client.call_tool("bfs_query", {"seeds": ["H"], "max_hops": 1, "max_tokens": 99_999}))
        assert 3000 <= tokens(large) <= 4000


def test_fit_functions_leave_small_answers_alone():
    budget = AnswerBudget(1000)
    assert fit_record({"id": "a"}, budget) == {"id": "a"}
    assert fit_list([{"id": "a"}], budget, what="x") == {"items": [{"id": "a"}]}
    long = fit_record({"id": "a", "entity_type": "T", "text": "z" * 100_000}, budget)
    assert tokens(long) <= 1000 and long["_clipped"] == {"text": 100_000}


class GreetingTool:
    @hookimpl
    def register_tools(self, register):
        async def count_types(graph, prefix: str = "") -> list[str]:
            """Entity types starting with a prefix."""
            return [t for t in await graph.entity_types() if t.startswith(prefix)]

        register(count_types, name="types_with_prefix")


async def test_plugins_add_tools_with_the_graph_injected():
    pm = get_plugin_manager()
    plugin = GreetingTool()
    pm.register(plugin)
    try:
        async with await client_for(MemoryBackend(small_records())) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools["types_with_prefix"].input_schema["properties"]) == {"prefix"}
            assert tools["types_with_prefix"].annotations.read_only_hint is True
            result = await client.call_tool("types_with_prefix", {"prefix": "D"})
            assert not result.is_error
            assert json.loads(result.content[0].text) == {"items": ["Disease", "Drug"]}
    finally:
        pm.unregister(plugin)


@pytest.mark.parametrize("tool", ["bfs_query", "intersect_subgraphs"])
async def test_wrong_types_are_rejected_with_field_names(tool):
    async with await client_for(MemoryBackend(small_records())) as client:
        result = await client.call_tool(tool, {"seeds": ["S", "A"], "max_hops": "many", "k": "many"})
        assert result.is_error
        assert "max_hops" in result.content[0].text or "k" in result.content[0].text


class HeavyTools:
    """A plugin's tools: one slow, one broken, one with a huge answer."""

    @hookimpl
    def register_tools(self, register):
        async def slow(graph, seconds: float = 5.0) -> str:
            """Sleeps."""
            await asyncio.sleep(seconds)
            return "done"

        def broken(graph) -> str:
            """Fails with a bug of its own."""
            raise ValueError("oops in a plugin")

        def huge(graph, rows: int = 5000) -> list[dict]:
            """A long list."""
            return [{"id": f"row{i}", "text": "x" * 200} for i in range(rows)]

        for fn in (slow, broken, huge):
            register(fn)


async def test_a_plugin_tool_passes_the_same_pipeline_as_the_built_in_ones():
    pm = get_plugin_manager()
    plugin = HeavyTools()
    pm.register(plugin)
    try:
        async with await client_for(MemoryBackend(small_records()), timeout=0.3, max_tokens=1000) as client:
            timed_out = await client.call_tool("slow", {"seconds": 5})
            assert timed_out.is_error and "slow timed out after 0.3s" in timed_out.content[0].text
            broken = await client.call_tool("broken", {})
            text = broken.content[0].text
            assert broken.is_error and "internal error in broken: ValueError: oops in a plugin" in text
            assert "backend" not in text.split("not a problem")[0]  # a plugin's bug is not the backend's fault
            huge = await client.call_tool("huge", {})
            fitted = payload(huge)
            assert tokens(fitted) <= 1000 and fitted["truncated"][-1]["count"] > 4900
            refused = await client.call_tool("huge", {"rows": 3, "bogus": 1})
            assert refused.is_error and "Unknown argument 'bogus': huge takes rows." in refused.content[0].text
    finally:
        pm.unregister(plugin)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim: Linux")
def test_freed_memory_can_be_handed_back_on_linux():
    """What a heavy call freed goes back to the system after its answer (bfsql.server.allocator); harmless twice."""
    assert give_back_freed_memory() and give_back_freed_memory()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
@pytest.mark.parametrize("chosen", [None, "4"])
def test_a_served_process_caps_its_heaps_unless_the_environment_chose(chosen: str | None) -> None:
    """The cap bfsql serve sets on glibc's heaps before its threads start (bfsql.server.allocator.limit_heaps);
    a MALLOC_ARENA_MAX the user gave stands."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    if chosen is not None:
        env["MALLOC_ARENA_MAX"] = chosen
    done = subprocess.run(
        [sys.executable, "-c", "from bfsql.server.allocator import limit_heaps; print(limit_heaps())"],
        env=env, capture_output=True, text=True, check=True,
    )
    assert done.stdout.strip() == str(chosen is None)


async def test_a_server_keeps_the_heap_it_started_with_out_of_collections_until_it_closes():
    """Full collections while serving walk the calls' objects, not the modules, schemas and stores opened at
    start-up; a closed server leaves nothing frozen (bfsql.server.host.start_up_heap_frozen)."""
    spec = get_backends()["sqlite"]
    plan = GraphPlan("famplex", spec, spec.config_model(db=ensure_demo_db()), ServerSettings())
    async with open_server([plan]) as server:
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 10_000
        answer = await server.answer("bfs_query", {"seeds": ["FPLX:AMPK"], "max_hops": 1})
        assert not answer.is_error
    assert gc.get_freeze_count() == 0
