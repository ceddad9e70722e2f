"""Batch relation answers come in bounded pages, and the backend reads them whole.

The reference app runs in-process on a free loopback port over a generated graph of 40 hubs
(50 to 1,493 relations each, names with non-ASCII text, dangling ends), with answers of at
most 700 relations and 64 KiB. Every page is checked against those limits, and what the pages
hold together — read over raw HTTP, and through the ``jsonld`` backend — against the graph's
own hop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bfsql import EntityRecord, Graph, HopEdge, MemoryBackend, Neighbourhood, RelationshipRecord
from bfsql_jsonld import JsonLdBackend, JsonLdConfig, ServerOptions, build_app
from bfsql_testsupport.services import free_port

HUBS = [f"hub:{i}" for i in range(40)]
LEAVES = [f"leaf/{j}" for j in range(2000)]
UNKNOWN = "no:such"
ROWS, KIB = 700, 64
ENVELOPE = 2048
"""Bytes an answer may hold besides its relations: the inline context and the next link."""


def hub_records() -> list[Any]:
    """Hubs with 50 + 37·i incoming relations from shared leaves, a ring between hubs, and dangling ends."""
    records: list[Any] = [
        EntityRecord(id=hub, entity_type="Hub", name=f"Hub {i} – ünïcødé 胃癌") for i, hub in enumerate(HUBS)
    ]
    records += [EntityRecord(id=leaf, entity_type="Leaf", name=f"Leaf {j}") for j, leaf in enumerate(LEAVES)]
    for i, hub in enumerate(HUBS):
        records += [
            RelationshipRecord(subject=LEAVES[(7 * j + i) % len(LEAVES)], predicate="points_to", object=hub)
            for j in range(50 + 37 * i)
        ]
        records.append(RelationshipRecord(subject=hub, predicate="next", object=HUBS[(i + 1) % len(HUBS)]))
        records.append(RelationshipRecord(subject=hub, predicate="cites", object=f"gone:{i}"))
    return records


@pytest.fixture(scope="module")
def records() -> list[Any]:
    return hub_records()


@pytest.fixture
async def hub_server(records: list[Any]) -> AsyncIterator[tuple[str, list[str]]]:
    """The reference app over the hub graph, in-process; yields (url, log of batch requests)."""
    graph = Graph(MemoryBackend(records), cache=None)
    app = build_app(graph, ServerOptions(batch_rows=ROWS, batch_bytes=KIB * 1024))
    log: list[str] = []

    async def record(request: web.Request, response: web.StreamResponse) -> None:
        if request.path.startswith("/batch/"):
            log.append(f"{request.method} {request.path_qs} {response.status}")

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


async def post_pages(http: aiohttp.ClientSession, url: str, body: Any) -> list[tuple[bytes, Any]]:
    """A batch answer and its continuations: the same body POSTed to each next link, until none."""
    pages = []
    target: str | None = url + "/batch/relations"
    while target is not None:
        async with http.post(target, json=body) as resp:
            assert resp.status == 200, await resp.text()
            raw = await resp.read()
            header = resp.links.get("next")
        document = json.loads(raw)
        pages.append((raw, document))
        following = (document.get("view") or {}).get("next")
        assert (following is None) == (header is None)
        target = url + following if following is not None else None
    return pages


def truth(graph_hop: dict[str, Neighbourhood], ids: list[str], end: int) -> dict[str, list[HopEdge]]:
    """The rows of each known id in one direction (``end``: where the id stands), sorted."""
    return {i: sorted(row for row in graph_hop[i].edges if row[end] == i) for i in dict.fromkeys(ids) if i in graph_hop}


def hop_rows(hub: str, relation: dict[str, Any]) -> HopEdge:
    """The hop row a published relation stands for, seen from ``hub``."""
    subject, obj = relation["subject"], relation["object"]
    other = obj if isinstance(subject, str) and subject == hub else subject
    ends = [e["@id"] if isinstance(e, dict) else e for e in (subject, obj)]
    described = other if isinstance(other, dict) else {}
    return HopEdge(ends[0], relation["predicate"], ends[1], described.get("@type"), described.get("name"))


async def test_a_batch_of_hubs_comes_back_in_bounded_pages_that_hold_every_relation(hub_server, records):
    url, _ = hub_server
    ids = [*HUBS, UNKNOWN, HUBS[3]]
    reference = Graph(MemoryBackend(records), plugins=[], cache=None)
    every = await reference.hop(HUBS)
    async with aiohttp.ClientSession() as http:
        async with http.get(url + "/schema") as resp:
            batch = (await resp.json())["batch"]
        assert (batch["max_relations"], batch["max_bytes"]) == (ROWS, KIB * 1024)
        for direction, end in (("in", 2), ("out", 0)):
            pages = await post_pages(http, url, {"ids": ids, "direction": direction})
            found: dict[str, list[HopEdge]] = {}
            for raw, document in pages:
                listed = [r for entry in document["entities"] for r in entry["relations"]]
                assert len(listed) <= ROWS, direction
                assert len(raw) <= KIB * 1024 + ENVELOPE, (direction, len(raw))
                for entry in document["entities"]:
                    found.setdefault(entry["@id"], []).extend(hop_rows(entry["@id"], r) for r in entry["relations"])
            expected = truth(every, ids, end)
            assert {i: sorted(rows) for i, rows in found.items()} == expected, direction
            assert sum(map(len, found.values())) == sum(map(len, expected.values()))
            if direction == "in":  # 30,900 relations, none lost nor repeated across the pages
                assert len(pages) >= sum(map(len, expected.values())) // ROWS
                assert all(sorted(set(rows)) == rows for rows in found.values())
    await reference.aclose()


async def test_the_backend_reads_paged_batches_whole(hub_server, records):
    url, log = hub_server
    reference = Graph(MemoryBackend(records), plugins=[], cache=None)
    backend = await JsonLdBackend.create(JsonLdConfig(base_url=url))
    try:
        asked = [*HUBS, UNKNOWN, *LEAVES[:50]]
        hops, expected = await backend.hop(asked), await reference.hop(asked)
        assert {i: (n.node, sorted(n.edges)) for i, n in hops.items()} == {
            i: (n.node, sorted(n.edges)) for i, n in expected.items()}
        assert sum(len(n.edges) for n in hops.values()) == sum(len(n.edges) for n in expected.values()) > 30_900
        relation_posts = [line for line in log if line.startswith("POST /batch/relations")]
        assert len(relation_posts) > 2 and any("cursor=" in line for line in relation_posts), relation_posts
        graph = Graph(backend, plugins=[], cache=None)
        for hub in (HUBS[0], HUBS[-1]):
            assert await graph.edges_to(hub) == await reference.edges_to(hub)
            assert await graph.edges_from(hub) == await reference.edges_from(hub)
    finally:
        await backend.aclose()
        await reference.aclose()


async def test_a_cursor_is_only_taken_with_its_own_request(hub_server):
    url, _ = hub_server
    async with aiohttp.ClientSession() as http:
        (_, first), *_ = await post_pages(http, url, {"ids": HUBS, "direction": "in"})
        following = url + first["view"]["next"]

        async def post(target: str, body: Any) -> tuple[int, Any]:
            async with http.post(target, json=body) as resp:
                return resp.status, await resp.json(content_type=None)

        status, body = await post(following, {"ids": HUBS[1:], "direction": "in"})
        assert status == 400 and "belongs to another request" in body["error"], body
        status, body = await post(following, {"ids": HUBS, "direction": "out"})
        assert status == 400 and "belongs to another request" in body["error"], body
        status, body = await post(url + "/batch/relations?cursor=12.x", {"ids": HUBS, "direction": "in"})
        assert status == 400 and "follow the next link" in body["error"], body
        status, body = await post(following, {"ids": HUBS, "direction": "in"})
        assert status == 200 and body["entities"], body
