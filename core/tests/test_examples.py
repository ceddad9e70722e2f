"""Tool descriptions, argument schemas and error hints give examples in the served graph's words."""

from __future__ import annotations

import json
import re

from mcp import Client

from bfsql import Graph
from bfsql.backends.memory import MemoryBackend
from bfsql.examples import DEMO, Examples
from bfsql.server import build_server
from bfsql.settings import ServerSettings
from bfsql.testing.standard_graph import standard_records

DEMO_IDS = re.compile(r"HGNC:|FPLX:|\bBRAF\b|\bRAF1\b")


def test_saying_a_text_in_another_graphs_words() -> None:
    words = Examples(entity="GENE:TP53", entity_name="TP53", other="GENE:MDM2", other_name="MDM2", group="DRUG:x",
                     predicate="INHIBITS", second_predicate="TREATS", entity_type="Gene", group_type="Drug",
                     own_words=frozenset({"Gene", "Drug", "INHIBITS", "TREATS"}))
    said = words.say('"BRAF" -[isa]-> type:Family <-[isa]- type:Gene, seeds=["HGNC:BRAF", "HGNC:RAF1"], FPLX:RAF')
    assert said == '"TP53" -[INHIBITS]-> type:Drug <-[INHIBITS]- type:Gene, seeds=["GENE:TP53", "GENE:MDM2"], DRUG:x'
    assert words.say("isabel, Genes, HGNC:BRAFX, xFPLX:RAF") == "isabel, Genes, HGNC:BRAFX, xFPLX:RAF"
    assert DEMO.say('"BRAF" -[isa]->') == '"BRAF" -[isa]->'


async def _served(records: list) -> Client:
    return Client(await build_server(Graph(MemoryBackend(records)), ServerSettings()))


async def test_a_graph_without_the_demos_entities_is_shown_its_own() -> None:
    async with await _served(standard_records()) as client:
        tools = (await client.list_tools()).tools
        ids = {r.id for r in standard_records() if getattr(r, "kind", "") == "entity"}
        texts = json.dumps([[t.description, t.input_schema] for t in tools])
        assert not DEMO_IDS.search(texts), DEMO_IDS.search(texts)
        seeds = next(t for t in tools if t.name == "bfs_query").input_schema["properties"]["seeds"]["examples"][0]
        assert set(seeds) <= ids, seeds
        missing = await client.call_tool("bfs_query", {"max_hops": 1})
        example = re.search(r"Example: seeds=(\[.*?\])", missing.content[0].text)
        assert example and set(json.loads(example.group(1))) <= ids, missing.content[0].text
        bad = await client.call_tool("path_query", {"query": "-[x]->"})
        assert bad.is_error and not DEMO_IDS.search(bad.content[0].text), bad.content[0].text


async def test_the_demo_keeps_its_examples() -> None:
    from bfsql.backends.sqlite import SqliteBackend
    from bfsql.demo import demo_store

    async with Graph(SqliteBackend(demo_store("hashing"))) as graph:
        async with Client(await build_server(graph, ServerSettings())) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert '"BRAF" -[isa]-> type:Family' in tools["path_query"].description
            assert tools["bfs_query"].input_schema["properties"]["seeds"]["examples"] == [["FPLX:RAF"]]
