"""The reference server: ids with special characters round-trip, batching, paging, hops, errors, auth, CLI.

Most tests run the reference app in-process over a small memory graph whose ids hold
every character that needs encoding; the CLI tests start ``bfsql jsonld-serve``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bfsql import Capabilities, EntityRecord, Graph, HopEdge, MemoryBackend, NodeInfo, RelationshipRecord
from bfsql_jsonld import JsonLdBackend, JsonLdConfig, ServerOptions, build_app
from bfsql_testsupport.services import free_port

SPECIAL_IDS = [
    "a/b",
    "what?x=1&y=2",
    "frag#ment",
    "100%",
    "%2F",
    "two words",
    "plus+sign",
    "胃癌/β-catenin",
    "..",
    ".",
    "semi;colon",
    "back\\slash",
    'quote"s',
    "angle<b>&amp;",
    "emoji 🧬",
    "http://purl.test/obo/HP_1?x#y",
]
HUB = "hub/with?everything#%"


def special_records() -> list[Any]:
    records: list[Any] = [EntityRecord(id=HUB, entity_type="Hub type", name="The hub", synonyms=["centre"])]
    for i, entity_id in enumerate(SPECIAL_IDS):
        records.append(
            EntityRecord(
                id=entity_id, entity_type="Odd/Type #1", name=f"odd {i}", properties={"index": i, "nested": {"k": [i]}}
            )
        )
        records.append(
            RelationshipRecord(
                subject=HUB,
                predicate="links to/with",
                object=entity_id,
                confidence=i / 100,
                source_documents=[f"doc {i}"],
            )
        )
        records.append(RelationshipRecord(subject=entity_id, predicate="back?link", object=HUB))
    return records


@pytest.fixture
async def special_server() -> AsyncIterator[tuple[str, list[str]]]:
    """The reference app over the special-id graph, in-process; yields (url, request log)."""
    graph = Graph(MemoryBackend(special_records()), cache=None)
    app = build_app(graph, ServerOptions(page_size=3, max_batch=4))
    log: list[str] = []

    async def record(request: web.Request, response: web.StreamResponse) -> None:
        log.append(f"{request.method} {request.raw_path} {response.status}")

    app.on_response_prepare.append(record)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        await runner.cleanup()
        await graph.aclose()


READINGS = {
    "batch": {},
    "per-direction": {"use_batch": False},
    "per-id": {"use_batch": False, "edges_url": "/entities/{id}/relations?direction=both"},
}
"""The ways of reading the API: its batch endpoints, one GET per id and direction, one GET per id."""


@pytest.fixture(params=list(READINGS))
async def special(request: pytest.FixtureRequest, special_server) -> AsyncIterator[tuple[JsonLdBackend, list[str]]]:
    url, log = special_server
    backend = await JsonLdBackend.create(JsonLdConfig(base_url=url, **READINGS[request.param]))
    yield backend, log
    await backend.aclose()


async def test_ids_with_special_characters_round_trip(special):
    backend, _ = special
    graph = Graph(backend, plugins=[], cache=None)
    reference = Graph(MemoryBackend(special_records()), plugins=[], cache=None)
    for entity_id in [*SPECIAL_IDS, HUB]:
        assert await graph.get_node(entity_id) == await reference.get_node(entity_id), entity_id
        assert await graph.metadata_for_node(entity_id) == await reference.metadata_for_node(entity_id), entity_id
        assert await graph.edges_from(entity_id) == await reference.edges_from(entity_id), entity_id
        assert await graph.edges_to(entity_id) == await reference.edges_to(entity_id), entity_id
    for edge in await reference.edges_from(HUB):
        assert await graph.metadata_for_edge(edge) == await reference.metadata_for_edge(edge), edge
    asked = [*SPECIAL_IDS, HUB, "no/such?id"]
    assert await backend.get_nodes(asked) == await reference.get_nodes(asked)
    assert await backend.metadata_for_nodes(asked) == await reference.metadata_for_nodes(asked)
    hops, expected = await backend.hop(asked), await reference.hop(asked)
    assert {i: (n.node, sorted(n.edges)) for i, n in hops.items()} == {
        i: (n.node, sorted(n.edges)) for i, n in expected.items()}
    edges = await reference.edges_from(HUB)
    assert await backend.metadata_for_edges(edges) == await reference.metadata_for_edges(edges)
    hits = await backend.search_entities("odd", ["Odd/Type #1"])
    assert [h.id for h in hits] == [h.id for h in await reference.search_entities("odd", ["Odd/Type #1"])]
    assert await backend.entity_types() == ["Hub type", "Odd/Type #1"]
    assert await backend.predicates() == ["back?link", "links to/with"]
    with pytest.raises(KeyError):
        await graph.get_node("")


async def test_a_hop_is_read_from_the_relation_lists_alone(special):
    """Batch chunks, or the pages of one list per id (or per direction); the other ends come with the relations."""
    backend, log = special
    log.clear()
    nodes = await backend.get_nodes(SPECIAL_IDS)
    assert len(nodes) == len(SPECIAL_IDS)
    fetched = list(log)
    await backend.get_nodes([HUB])  # a traversal's frontier was described by the hop before: so is the hub here
    log.clear()
    rows = (await backend.hop([HUB]))[HUB].edges
    assert len(rows) == 2 * len(SPECIAL_IDS)
    assert HopEdge(HUB, "links to/with", "a/b", "Odd/Type #1", "odd 0") in rows
    assert HopEdge("a/b", "back?link", HUB, "Odd/Type #1", "odd 0") in rows
    assert not [line for line in log if "/relations?" not in line and "/batch/relations" not in line], log
    if backend.capabilities.batch_primitives:
        assert len(fetched) == 4, fetched  # 16 ids, at most 4 per request
        assert sorted(line.split()[1] for line in log) == ["/batch/relations"] * 2, log  # out and in
    else:
        assert [line.split()[0] for line in fetched] == ["GET"] * len(SPECIAL_IDS), fetched
        directions = {line.split("direction=")[1].split("&")[0].split()[0] for line in log}
        # 16 relations each way, 3 per page: 6 pages per direction, or 11 pages of the 32 both ways
        assert len(log) == (11 if directions == {"both"} else 12), log


async def test_relation_lists_describe_the_other_end(special_server):
    url, _ = special_server
    async with aiohttp.ClientSession() as http:
        async with http.get(url + "/entities/a%2Fb/relations?direction=both") as resp:
            listed = (await resp.json())["relations"]
        async with http.post(url + "/batch/relations", json={"ids": ["a/b"], "direction": "in"}) as resp:
            (entry,) = (await resp.json())["entities"]
    end = {"@id": HUB, "@type": "Hub type", "name": "The hub"}
    assert listed == [
        {"subject": "a/b", "predicate": "back?link", "object": end},
        {"subject": end, "predicate": "links to/with", "object": "a/b"},
    ]
    assert entry == {"@id": "a/b", "relations": [listed[1]]}


async def test_http_errors_of_the_reference_server(special_server):
    url, _ = special_server
    async with aiohttp.ClientSession() as http:

        async def get(path: str, method: str = "GET", **kw: Any) -> tuple[int, Any]:
            async with http.request(method, url + path, **kw) as resp:
                return resp.status, await resp.json(content_type=None)

        status, body = await get("/entities/nope")
        assert status == 404 and body["error"] == "no entity 'nope'"
        assert (await get("/entities/nope/relations"))[0] == 404
        assert (await get("/entities/a%2Fb/relations?direction=sideways"))[0] == 400
        assert (await get("/batch/relations", "POST", json={"ids": ["a/b"], "direction": "both"}))[0] == 400
        assert (await get("/entities/a%2Fb/relations?page=0"))[0] == 400
        assert (await get("/entities/a%2Fb/relations?page_size=99"))[0] == 400
        assert (await get("/entities"))[0] == 400
        assert (await get("/relations?subject=a"))[0] == 400
        assert (await get("/batch/entities", "POST", data=b"{"))[0] == 400
        assert (await get("/batch/entities", "POST", json={"ids": "a"}))[0] == 400
        status, body = await get("/batch/entities", "POST", json={"ids": ["a"] * 5})
        assert status == 413 and "at most 4" in body["error"]
        assert (await get("/batch/relation-metadata", "POST", json={"relations": [{"subject": "a"}]}))[0] == 400
        assert (await get("/entities/a%2Fb", "DELETE"))[0] == 405
        status, body = await get("/")
        assert status == 200 and body["entity"] == "/entities/{id}"
        status, body = await get("/context.jsonld")
        assert body["@context"]["@base"] is None and "@vocab" in body["@context"]


async def test_graph_failures_are_json_errors():
    class Broken(MemoryBackend):
        async def metadata_for_nodes(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
            raise RuntimeError("disk on fire")

        async def hop(self, entity_ids: list[str]) -> dict[str, list[HopEdge]]:
            from bfsql import BackendFailure

            raise BackendFailure("store timed out", "retry")

    graph = Graph(Broken(special_records()), cache=None)
    runner = web.AppRunner(build_app(graph), access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/entities/a%2Fb") as resp:
                # whatever a backend raises is the backend's failure (the graph's terminal says so): 502
                assert resp.status == 502 and "RuntimeError: disk on fire" in (await resp.json())["error"]
            async with http.get(f"http://127.0.0.1:{port}/entities/a%2Fb/relations") as resp:
                assert resp.status == 502 and "store timed out" in (await resp.json())["error"]
    finally:
        await runner.cleanup()


async def test_serve_token_is_required_when_set():
    graph = Graph(MemoryBackend(special_records()), cache=None)
    runner = web.AppRunner(build_app(graph, ServerOptions(auth_token="s3cret")), access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http, http.get(url + "/schema") as resp:
            assert resp.status == 401 and resp.headers["WWW-Authenticate"] == "Bearer"
        from bfsql_jsonld.errors import ApiError

        with pytest.raises(ApiError, match="401"):
            await JsonLdBackend.create(JsonLdConfig(base_url=url))
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=url, api_token="s3cret"))
        assert await backend.get_nodes([HUB]) == {HUB: NodeInfo("Hub type", "The hub")}
        await backend.aclose()
    finally:
        await runner.cleanup()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bfsql", "jsonld-serve", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_refuses_to_publish_off_loopback_without_a_token():
    result = _cli("--backend", "memory", "--host", "0.0.0.0")
    assert result.returncode != 0 and "without authentication" in result.stderr and "--serve-token" in result.stderr


def test_cli_reports_unknown_backends_and_foreign_options():
    result = _cli("--backend", "nosuch")
    assert result.returncode != 0 and "unknown backend 'nosuch'" in result.stderr
    result = _cli("--backend", "memory", "--db", "x.db")
    assert result.returncode != 0 and "--db is not an option of backend 'memory'" in result.stderr


def test_cli_lists_backend_options_in_help():
    result = _cli("--help")
    assert result.returncode == 0
    for option in ("--backend", "--port", "--page-size", "--serve-token", "--db", "--bundle"):
        assert option in result.stdout


async def test_vector_search_is_forwarded_and_embedders_must_match(special_server):
    from bfsql import EmbedderMismatch, HashingEmbedder

    url, _ = special_server
    embedder = HashingEmbedder()
    reference = MemoryBackend(special_records())
    await reference.bind_embedder(embedder)
    backend = await JsonLdBackend.create(JsonLdConfig(base_url=url))
    try:
        assert backend.capabilities.vector_search
        await backend.bind_embedder(embedder)
        (vector,) = await embedder.embed(["odd 3"])
        hits = await backend.vector_search(vector, ["Odd/Type #1"], 3)
        expected = await reference.vector_search(vector, ["Odd/Type #1"], 3)
        assert [(h.id, h.entity_type) for h in hits] == [(h.id, h.entity_type) for h in expected]
        assert [h.score for h in hits] == pytest.approx([h.score for h in expected])
        assert await backend.vector_search(vector, [], 3) == []
        with pytest.raises(EmbedderMismatch, match=f"--embedder {embedder.name}"):
            await backend.bind_embedder(HashingEmbedder(dimension=64))
    finally:
        await backend.aclose()
    async with aiohttp.ClientSession() as http:
        for body, problem in (
            ({"vector": [0.1] * 3}, "dimensions"),
            ({"vector": ["x"]}, "list of numbers"),
            ({"vector": vector, "types": "Gene"}, "'types'"),
            ({"vector": vector, "limit": 0}, "'limit'"),
        ):
            async with http.post(url + "/vector-search", json=body) as resp:
                assert resp.status == 400 and problem in (await resp.json())["error"], body


async def test_a_graph_without_vector_search_publishes_none():
    class Lexical(MemoryBackend):
        capabilities = Capabilities(batch_primitives=True, provenance=True)

    graph = Graph(Lexical(special_records()), cache=None)
    runner = web.AppRunner(build_app(graph), access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    url = f"http://127.0.0.1:{port}"
    try:
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=url))
        assert backend.capabilities.vector_search is False
        with pytest.raises(NotImplementedError):
            await backend.vector_search([0.0], None, 3)
        await backend.aclose()
        async with aiohttp.ClientSession() as http, http.post(url + "/vector-search", json={"vector": []}) as resp:
            assert resp.status == 404
    finally:
        await runner.cleanup()


def test_cli_serves_only_its_own_host_names_and_refuses_deep_or_long_requests(tmp_path):
    """DNS rebinding (a foreign Host or Origin), a 100k-deep JSON body and a 20 kB search text: clear 4xx."""
    import time

    import httpx

    from bfsql_testsupport.services import wait_for_port

    bundle = tmp_path / "graph.jsonl"
    bundle.write_text('{"kind": "entity", "id": "A", "entity_type": "T", "name": "Alpha"}\n')
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "bfsql", "jsonld-serve", "--backend", "memory", "--bundle",
                                 str(bundle), "--port", str(port), "--allowed-host", "proxy.example"], stderr=sink)
    try:
        wait_for_port(port, 60)
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=30) as http:
            assert http.get(url + "/schema").status_code == 200
            assert http.get(url + "/schema", headers={"Host": f"localhost:{port}"}).status_code == 200
            assert http.get(url + "/schema", headers={"Host": f"proxy.example:{port}"}).status_code == 200
            rebinding = http.get(url + "/schema", headers={"Host": f"evil.example:{port}"})
            assert rebinding.status_code == 421 and "--allowed-host evil.example" in rebinding.json()["error"]
            foreign = http.get(url + "/entities?q=Alpha", headers={"Origin": "http://evil.example"})
            assert foreign.status_code == 403
            deep = http.post(url + "/batch/entities", content=b"[" * 100_000 + b"]" * 100_000,
                             headers={"Content-Type": "application/json"})
            assert deep.status_code == 400 and "nests too deeply" in deep.json()["error"]
            long = http.get(url + "/entities", params={"q": "x" * 20_000})
            assert long.status_code in (400, 414, 431)
            assert http.get(url + "/entities", params={"q": "x" * 1001}).status_code == 400
            assert http.get(url + "/entities", params={"q": "Alpha"}).json()["results"][0]["@id"] == "A"
        time.sleep(0.2)
        assert "refused GET /schema: Host 'evil.example:" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(30)
