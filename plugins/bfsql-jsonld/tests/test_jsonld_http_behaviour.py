"""Error paths, retries, timeouts, paging and contexts, against small real aiohttp servers with scripted answers."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bfsql import Edge, Graph, HopEdge, InvalidArgument, NodeInfo, retry_after_seconds
from bfsql_jsonld import JsonLdBackend, JsonLdConfig
from bfsql_jsonld.errors import ApiError, ContextError, MalformedResponse
from bfsql_jsonld.http_client import parse_link_header
from bfsql_jsonld.urls import MAX_URL_BYTES

from jsonld_scripted import Reply, ScriptedApi

ENTITY = {"@id": "GENE:TP53", "@type": "Gene", "name": "TP53"}


def rel(s: str, p: str, o: str) -> dict[str, str]:
    return {"subject": s, "predicate": p, "object": o}


@pytest.fixture
async def open_backend() -> AsyncIterator[Any]:
    """``await open_backend(api, **options)``: a backend on the scripted API, closed after the test."""
    opened: list[JsonLdBackend] = []

    async def make(api: ScriptedApi, **options: Any) -> JsonLdBackend:
        options.setdefault("retry_backoff", 0.01)
        backend = await JsonLdBackend.create(JsonLdConfig(base_url=api.url, **options))
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        await backend.aclose()


# --- status codes ------------------------------------------------------------------------


async def test_404_is_an_unknown_id_for_entities_and_empty_for_relations_and_search(scripted, open_backend):
    backend = await open_backend(scripted)
    assert await backend.get_nodes(["GENE:NOPE"]) == {}
    assert await backend.metadata_for_nodes(["GENE:NOPE"]) == {}
    assert await backend.hop(["GENE:NOPE"]) == {}
    edge = Edge("a", "p", "b")
    assert (await backend.metadata_for_edges([edge])).get(edge, {}) == {}
    assert await backend.search_entities("x") == []
    assert scripted.hits("/entities/GENE%3ANOPE") == 2  # one request each, no retry of a 404
    assert scripted.hits("/entities/GENE%3ANOPE/relations") == 2  # out and in
    graph = Graph(backend, plugins=[], cache=None)
    for call in (graph.get_node, graph.metadata_for_node, graph.edges_from, graph.edges_to):
        with pytest.raises(KeyError):
            await call("GENE:NOPE")


async def test_500_is_a_clear_error_without_retry(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(status=500, json={"error": "database on fire"}))
    backend = await open_backend(scripted)
    with pytest.raises(ApiError) as info:
        await backend.get_nodes(["GENE:TP53"])
    message = str(info.value)
    assert "500 Internal Server Error" in message and "database on fire" in message
    assert f"{scripted.url}/entities/GENE%3ATP53" in message
    assert scripted.hits("/entities/GENE%3ATP53") == 1


async def test_429_with_retry_after_is_retried_after_the_asked_wait_then_succeeds(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(status=429, json={}, headers={"Retry-After": "1"}), Reply(json=ENTITY))
    backend = await open_backend(scripted, retry_backoff=0.0)
    start = time.monotonic()
    assert await backend.get_nodes(["GENE:TP53"]) == {"GENE:TP53": NodeInfo("Gene", "TP53")}
    assert time.monotonic() - start >= 0.95, "Retry-After: 1 must be honoured"
    assert scripted.hits("/entities/GENE%3ATP53") == 2


async def test_retry_after_longer_than_the_allowed_wait_fails_at_once(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(status=429, json={}, headers={"Retry-After": "3600"}))
    backend = await open_backend(scripted, max_retry_wait=5)
    with pytest.raises(ApiError, match="asks to wait 3600s") as info:
        await backend.get_nodes(["GENE:TP53"])
    assert "--max-retry-wait" in str(info.value)
    assert scripted.hits("/entities/GENE%3ATP53") == 1


async def test_persistent_503_gives_up_after_the_retries_with_exponential_backoff(scripted, open_backend):
    outgoing = "/entities/GENE%3ATP53/relations?direction=out"
    scripted.on(outgoing, Reply(status=503, json={"error": "maintenance"}))
    scripted.on("/entities/GENE%3ATP53/relations?direction=in", {"relations": []})
    backend = await open_backend(scripted, max_retries=3, retry_backoff=0.05)
    start = time.monotonic()
    with pytest.raises(ApiError) as info:
        await backend.hop(["GENE:TP53"])
    elapsed = time.monotonic() - start
    assert "answered 503 Service Unavailable 4 time(s); gave up after 3 retries" in str(info.value)
    assert scripted.hits(outgoing) == 4
    assert elapsed >= 0.05 + 0.1 + 0.2 - 0.02, f"backoff 0.05, 0.1, 0.2 expected, took {elapsed:.3f}s"


async def test_timeout_is_a_clear_error(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(json=ENTITY, delay=3))
    backend = await open_backend(scripted, query_timeout=0.3)
    start = time.monotonic()
    with pytest.raises(ApiError, match=r"took longer than 0.3s") as info:
        await backend.metadata_for_nodes(["GENE:TP53"])
    assert time.monotonic() - start < 2
    assert "--query-timeout" in str(info.value)


async def test_unreachable_api_is_a_clear_start_up_error():
    from bfsql_testsupport.services import free_port

    config = JsonLdConfig(base_url=f"http://127.0.0.1:{free_port()}", max_retries=1, retry_backoff=0.01)
    with pytest.raises(ApiError) as info:
        await JsonLdBackend.create(config)
    assert "Cannot read the schema of the JSON-LD API" in str(info.value) and "after 2 attempt(s)" in str(info.value)


async def test_401_names_the_auth_options(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(status=401, json={"error": "who are you"}))
    backend = await open_backend(scripted)
    with pytest.raises(ApiError, match="401 Unauthorized") as info:
        await backend.get_nodes(["GENE:TP53"])
    assert "--auth-header" in str(info.value)


# --- malformed answers ---------------------------------------------------------------------


async def test_malformed_json_is_a_clear_error(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", Reply(body=b'{"@id": "GENE:TP53", "@type": '))
    scripted.on("/entities/GENE%3ATP53/relations", Reply(json=[1, 2]))
    scripted.on("/entities/GENE%3AMDM2", {"@id": "GENE:MDM2"})
    backend = await open_backend(scripted)
    with pytest.raises(MalformedResponse, match="not JSON") as info:
        await backend.get_nodes(["GENE:TP53"])
    assert '{"@id": "GENE:TP53", "@type":' in str(info.value)
    with pytest.raises(MalformedResponse, match="answered a JSON list"):
        await backend.hop(["GENE:TP53"])
    with pytest.raises(MalformedResponse, match="has no 'entity_type'"):
        await backend.get_nodes(["GENE:MDM2"])
    assert scripted.hits("/entities/GENE%3ATP53") == 1


async def test_a_response_larger_than_the_limit_is_refused(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", {**ENTITY, "blob": "x" * 300_000})
    backend = await open_backend(scripted, max_response_mb=0.1)
    with pytest.raises(ApiError, match="larger than"):
        await backend.get_nodes(["GENE:TP53"])


# --- long URLs ---------------------------------------------------------------------------------


async def test_errors_quote_a_long_request_url_clipped(scripted, open_backend):
    long_id = "x" * 7000  # its URL is under MAX_URL_BYTES: the request is sent
    scripted.on(f"/entities/{long_id}", Reply(status=500, json={"error": "too long for me"}))
    scripted.on(f"/entities/{long_id}/relations", Reply(status=503, json={}))
    backend = await open_backend(scripted, max_retries=0)
    for call, answer in ((backend.get_nodes, "500 Internal Server Error"), (backend.hop, "503")):
        with pytest.raises(ApiError) as info:
            await call([long_id])
        message = str(info.value)
        assert answer in message and len(message) < 1000, message[:300]
        assert f"GET {scripted.url}/entities/xxx" in message and "characters)" in message
    assert scripted.hits(f"/entities/{long_id}") == 1


async def test_requests_beyond_the_url_limit_are_not_sent(scripted, open_backend):
    scripted.on("/entities/GENE%3ATP53", ENTITY)
    backend = await open_backend(scripted)
    base = len(f"{scripted.url}/entities/")
    too_long, longest = "y" * (MAX_URL_BYTES - base + 1), "z" * (MAX_URL_BYTES - base)
    for call in (backend.get_nodes, backend.metadata_for_nodes, backend.hop):
        assert await call([too_long]) == {}, call
    assert await backend.get_nodes([too_long, "GENE:TP53"]) == {"GENE:TP53": NodeInfo("Gene", "TP53")}
    edge = Edge(too_long, "REGULATES", "GENE:TP53")
    assert (await backend.metadata_for_edges([edge])).get(edge, {}) == {}
    with pytest.raises(InvalidArgument, match=f"longer than {MAX_URL_BYTES} bytes") as info:
        await backend.search_entities("p53", ["Gene"] * 2000)
    assert "fewer or shorter node_types" in str(info.value)
    assert scripted.hits("/entities") == 0 and not [s for s in scripted.seen if "yyy" in s.raw_path]
    assert await backend.get_nodes([longest]) == {}  # a URL of exactly the limit is still sent (and answered 404)
    assert scripted.hits(f"/entities/{longest}") == 1


# --- JSON-LD contexts ---------------------------------------------------------------------------


async def test_remote_context_is_refused_without_any_request_to_it(scripted, open_backend):
    context_url = f"{scripted.url}/contexts/entity.jsonld"
    scripted.on("/contexts/entity.jsonld", {"@context": {"@vocab": "http://vocab.test/"}})
    scripted.on("/entities/GENE%3ATP53", {"@context": context_url, **ENTITY})
    scripted.on("/entities/GENE%3AMDM2", {"@context": "https://schema.org/", **ENTITY})
    backend = await open_backend(scripted)
    with pytest.raises(ContextError) as info:
        await backend.get_nodes(["GENE:TP53"])
    message = str(info.value)
    assert context_url in message and "--allow-remote-contexts" in message and "--context-map" in message
    with pytest.raises(ContextError, match="https://schema\\.org/"):
        await backend.get_nodes(["GENE:MDM2"])
    assert scripted.hits("/contexts/entity.jsonld") == 0


async def test_remote_context_from_a_local_copy_makes_no_request(scripted, open_backend, tmp_path):
    context_url = f"{scripted.url}/contexts/entity.jsonld"
    local = tmp_path / "entity.jsonld"
    local.write_text('{"@context": {"id": "@id", "kind": "@type"}}')
    scripted.on("/entities/GENE%3ATP53", {"@context": context_url, "id": "GENE:TP53", "kind": "Gene", "name": "TP53"})
    backend = await open_backend(scripted, context_map=[f"{context_url}={local}"])
    assert await backend.get_nodes(["GENE:TP53"]) == {"GENE:TP53": NodeInfo("Gene", "TP53")}
    assert await backend.metadata_for_nodes(["GENE:TP53"]) == {"GENE:TP53": {"name": "TP53"}}
    assert scripted.hits("/contexts/entity.jsonld") == 0


async def test_remote_context_is_fetched_once_when_allowed(scripted, open_backend):
    context_url = f"{scripted.url}/contexts/entity.jsonld"
    scripted.on("/contexts/entity.jsonld", {"@context": {"id": "@id", "kind": "@type"}})
    scripted.on("/entities/GENE%3ATP53", {"@context": context_url, "id": "GENE:TP53", "kind": "Gene", "name": "TP53"})
    backend = await open_backend(scripted, allow_remote_contexts=True)
    for _ in range(3):
        assert (await backend.get_nodes(["GENE:TP53"]))["GENE:TP53"].entity_type == "Gene"
    assert scripted.hits("/contexts/entity.jsonld") == 1


async def test_context_from_the_link_header_of_plain_json(scripted, open_backend, tmp_path):
    context_url = f"{scripted.url}/ctx"
    local = tmp_path / "ctx.jsonld"
    local.write_text('{"@context": {"identifier": "@id", "category": "@type"}}')
    scripted.on(
        "/entities/X",
        Reply(
            json={"identifier": "X", "category": "Gene", "name": "x"},
            headers={"Link": f'<{context_url}>; rel="http://www.w3.org/ns/json-ld#context"'},
        ),
    )
    backend = await open_backend(scripted, context_map=[f"{context_url}={local}"])
    assert await backend.get_nodes(["X"]) == {"X": NodeInfo("Gene", "x")}
    assert await backend.metadata_for_nodes(["X"]) == {"X": {"name": "x"}}


async def test_client_context_compacts_full_iris(scripted, open_backend):
    person = "http://schema.org/Person"
    scripted.on("/schema", {"entity_types": [person], "predicates": ["http://schema.org/knows"]})
    scripted.on(
        "/entities/ann",
        {"@id": "ann", "@type": person, "http://schema.org/name": {"@value": "Ann"}, "http://schema.org/age": 41},
    )
    bob = {"@id": "bob", "@type": person, "http://schema.org/name": "Bob"}
    knows = {**rel("ann", "http://schema.org/knows", "bob"), "object": bob}
    scripted.on("/entities/ann/relations?direction=out", {"relations": [knows]})
    scripted.on("/entities/ann/relations?direction=in", {"relations": []})
    scripted.on("/entities", {"results": [{"@id": "ann", "@type": person, "http://schema.org/name": "Ann"}]})
    backend = await open_backend(scripted, context='{"@vocab": "http://schema.org/"}')
    assert await backend.entity_types() == ["Person"] and await backend.predicates() == ["knows"]
    assert await backend.get_nodes(["ann"]) == {"ann": NodeInfo("Person", "Ann")}
    assert await backend.metadata_for_nodes(["ann"]) == {"ann": {"name": "Ann", "age": 41}}
    assert await backend.hop(["ann"]) == {
        "ann": (NodeInfo("Person", "Ann"), [HopEdge("ann", "knows", "bob", "Person", "Bob")])}
    hits = await backend.search_entities("ann", ["Person"])
    assert [(h.id, h.entity_type, h.name) for h in hits] == [("ann", "Person", "Ann")]
    search = next(s for s in scripted.seen if s.raw_path.startswith("/entities?"))
    assert "types=http%3A%2F%2Fschema.org%2FPerson" in search.raw_path, "types go to the API in its own spelling"


# --- hops and edge metadata -------------------------------------------------------------------


async def test_a_hop_takes_the_other_ends_from_the_relation_documents(scripted, open_backend):
    """One request per entity with --edges-url; only an end written as a plain id is looked up."""
    mdm2 = {"@id": "GENE:MDM2", "@type": "Gene", "name": "MDM2"}
    scripted.on(
        "/entities/GENE%3ATP53/all",
        {
            "relations": [
                {**rel("GENE:TP53", "REGULATES", "x"), "object": mdm2},
                {**rel("y", "REGULATES", "GENE:TP53"), "subject": {**mdm2, "@id": "GENE:MDM4", "name": "MDM4"}},
                rel("GENE:TP53", "REGULATES", "GENE:GONE"),
                {**rel("GENE:TP53", "REGULATES", "x"), "object": {"@id": "GENE:TP53", "@type": "Gene"}},
            ]
        },
    )
    scripted.on("/entities/GENE%3AMDM2/all", {"relations": [rel("GENE:MDM2", "REGULATES", "GENE:TP53")]})
    scripted.on("/entities/GENE%3ATP53", ENTITY)
    backend = await open_backend(scripted, edges_url="/entities/{id}/all")
    found = await backend.hop(["GENE:TP53", "GENE:MDM2", "GENE:TP53"])
    assert sorted(found["GENE:TP53"].edges) == [
        HopEdge("GENE:MDM4", "REGULATES", "GENE:TP53", "Gene", "MDM4"),
        HopEdge("GENE:TP53", "REGULATES", "GENE:GONE", None, None),
        HopEdge("GENE:TP53", "REGULATES", "GENE:MDM2", "Gene", "MDM2"),
        HopEdge("GENE:TP53", "REGULATES", "GENE:TP53", "Gene", None),
    ]
    # MDM2's list writes TP53 as a plain id, but TP53's own list described it: no look-up.
    assert found["GENE:MDM2"].edges == [HopEdge("GENE:MDM2", "REGULATES", "GENE:TP53", "Gene", None)]
    requests = sorted(s.raw_path for s in scripted.seen if s.raw_path != "/schema")
    assert requests == ["/entities/GENE%3AGONE", "/entities/GENE%3AMDM2/all", "/entities/GENE%3ATP53/all"]


async def test_edge_metadata_and_provenance_come_from_one_relation_document(scripted, open_backend):
    schema = {"entity_types": ["Gene"], "predicates": ["REGULATES"], "capabilities": {"provenance": True}}
    scripted.on("/schema", schema)
    evidence = [{"text_span": "TP53 regulates MDM2", "document_id": "PMC1"}]
    scripted.on("/relations", {**rel("a", "REGULATES", "b"), "metadata": {"confidence": 0.9, "provenance": evidence}})
    edge = Edge("a", "REGULATES", "b")
    backend = await open_backend(scripted)
    assert backend.capabilities.provenance
    assert await backend.metadata_for_edges([edge]) == {edge: {"confidence": 0.9}}
    assert await backend.provenance_for_edges([edge, edge]) == {edge: evidence}
    assert scripted.hits("/relations") == 2


async def test_no_provenance_is_asked_of_an_api_that_declares_none(scripted, open_backend):
    backend = await open_backend(scripted)
    assert not backend.capabilities.provenance
    assert await backend.provenance_for_edges([Edge("a", "REGULATES", "b")]) == {}
    assert scripted.hits("/relations") == 0


# --- pagination -----------------------------------------------------------------------------------

PAGE_STYLES = ["body-next", "hydra-view", "link-header", "hal-links"]


def _page(style: str, edges: list[dict[str, str]], next_url: str | None) -> Reply:
    if style == "body-next":
        return Reply(json={"relations": edges, **({"next": next_url} if next_url else {})})
    if style == "hydra-view":
        body = {"@context": {"hydra": "http://www.w3.org/ns/hydra/core#"}, "hydra:member": edges}
        if next_url:
            body["hydra:view"] = {"@id": "this", "hydra:next": {"@id": next_url}}
        return Reply(json=body)
    if style == "link-header":
        return Reply(json={"member": edges}, headers={"Link": f'<{next_url}>; rel="next"'} if next_url else {})
    return Reply(json={"items": edges, **({"_links": {"next": {"href": next_url}}} if next_url else {})})


@pytest.mark.parametrize("style", PAGE_STYLES)
async def test_relations_are_collected_across_pages(scripted, open_backend, style):
    edges = [rel("GENE:TP53", "REGULATES", f"GENE:T{i}") for i in range(7)]
    base = "/entities/GENE%3ATP53/relations?direction=out"
    pages = [edges[0:3], edges[3:6], edges[6:7]]
    scripted.on(base, _page(style, pages[0], "/entities/GENE%3ATP53/relations?direction=out&page=2"))
    scripted.on(base + "&page=2", _page(style, pages[1], f"{scripted.url}{base}&page=3"))
    scripted.on(base + "&page=3", _page(style, pages[2], None))
    scripted.on("/entities/GENE%3ATP53/relations?direction=in", _page(style, [], None))
    scripted.on("/entities/GENE%3ATP53", ENTITY)  # hop answers the entity itself too
    backend = await open_backend(scripted)
    got = (await backend.hop(["GENE:TP53"]))["GENE:TP53"].edges
    assert [row.object for row in got] == [f"GENE:T{i}" for i in range(7)]
    assert [s.raw_path for s in scripted.seen if "direction=out" in s.raw_path] == [
        base,
        base + "&page=2",
        base + "&page=3",
    ]


async def test_paging_loops_too_many_pages_and_foreign_next_links_are_errors(scripted, open_backend):
    loop = "/entities/A/relations?direction=out"
    scripted.on("/entities/A/relations", {"relations": [], "next": loop})
    scripted.on("/entities/B/relations", {"relations": [], "next": "/entities/B/relations?p=2"})
    scripted.on("/entities/B/relations?p=2", {"relations": [], "next": "/entities/B/relations?p=3"})
    scripted.on("/entities/C/relations", {"relations": [], "next": "http://elsewhere.test/steal"})
    backend = await open_backend(scripted, max_pages=2)
    with pytest.raises(MalformedResponse, match="loop back"):
        await backend.hop(["A"])
    with pytest.raises(ApiError, match="more than 2 pages"):
        await backend.hop(["B"])
    with pytest.raises(MalformedResponse, match="on another site"):
        await backend.hop(["C"])


# --- credentials, templates, lifecycle ------------------------------------------------------


async def test_credentials_go_only_to_the_api_origin(scripted, open_backend):
    other = ScriptedApi()
    other.on("/ctx.jsonld", {"@context": {"kind": "@type"}})
    await other.start()
    try:
        scripted.on("/entities/X", {"@context": f"{other.url}/ctx.jsonld", "@id": "X", "kind": "Gene"})
        backend = await open_backend(
            scripted, auth_header="X-Api-Key: k-123", api_token="t-456", allow_remote_contexts=True
        )
        assert (await backend.get_nodes(["X"]))["X"].entity_type == "Gene"
    finally:
        await other.stop()
    api_request = next(s for s in scripted.seen if s.raw_path == "/entities/X")
    assert api_request.headers["X-Api-Key"] == "k-123" and api_request.headers["Authorization"] == "Bearer t-456"
    assert "X-Api-Key" not in other.seen[0].headers and "Authorization" not in other.seen[0].headers


async def test_redirects_are_followed_without_leaking_credentials(scripted, open_backend):
    other = ScriptedApi()
    other.on("/moved", {"@id": "X", "@type": "Gene"})
    await other.start()
    try:
        scripted.on("/entities/X", Reply(status=302, json={}, headers={"Location": f"{other.url}/moved"}))
        scripted.on("/entities/Y", Reply(status=301, json={}, headers={"Location": "/entities/Z"}))
        scripted.on("/entities/Z", {"@id": "Z", "@type": "Gene"})
        backend = await open_backend(scripted, api_token="secret")
        assert await backend.get_nodes(["X", "Y"]) == {"X": NodeInfo("Gene"), "Y": NodeInfo("Gene")}
    finally:
        await other.stop()
    assert "Authorization" not in other.seen[0].headers
    assert next(s for s in scripted.seen if s.raw_path == "/entities/Z").headers["Authorization"] == "Bearer secret"


async def test_configurable_url_templates_and_dereferenceable_ids(scripted, open_backend):
    thing = f"{scripted.url}/api/v2/things/"
    scripted.on("/api/v2/vocab", {"entity_types": ["Family"], "predicates": ["isa"]})
    scripted.on(
        "/api/v2/things/FPLX%3ARAF",
        {
            "@context": {"@base": thing, "id": "@id", "type": "@type"},
            "id": "FPLX%3ARAF",
            "type": "Family",
            "label": "RAF",
        },
    )
    scripted.on(
        "/api/v2/things/FPLX%3ARAF/in",
        {"@graph": [{"subject": {"@id": thing + "HGNC%3ABRAF"}, "predicate": "isa", "object": thing + "FPLX%3ARAF"}]},
    )
    scripted.on("/api/v2/things/FPLX%3ARAF/out", {"@graph": []})
    scripted.on("/api/v2/things/HGNC%3ABRAF", {"@id": "HGNC:BRAF", "@type": "Gene", "label": "BRAF"})
    scripted.on(
        "/api/v2/find", {"hits": [], "entities": [{"@id": thing + "FPLX%3ARAF", "@type": "Family", "label": "RAF"}]}
    )
    scripted.on("/api/v2/link", {"subject": "x", "confidence": 0.5})
    backend = await open_backend(
        scripted,
        schema_url="/api/v2/vocab",
        entity_url="/api/v2/things/{id}",
        edges_from_url="/api/v2/things/{id}/out",
        edges_to_url="/api/v2/things/{id}/in",
        search_url="/api/v2/find?text={q}&kind={types}",
        list_separator="|",
        relation_url="/api/v2/link?s={subject}&p={predicate}&o={object}",
    )
    assert await backend.get_nodes(["FPLX:RAF"]) == {"FPLX:RAF": NodeInfo("Family", "RAF")}
    assert await backend.metadata_for_nodes(["FPLX:RAF"]) == {"FPLX:RAF": {"label": "RAF"}}
    # The relation names its other end by its entity URL only: the end is looked up by id.
    assert (await backend.hop(["FPLX:RAF"]))["FPLX:RAF"].edges == [
        HopEdge("HGNC:BRAF", "isa", "FPLX:RAF", "Gene", "BRAF")]
    hits = await backend.search_entities("RAF kinase", ["Family", "Gene"])
    assert [(h.id, h.name) for h in hits] == [("FPLX:RAF", "RAF")]
    edge = Edge("a b", "isa", "c/d")
    assert await backend.metadata_for_edges([edge]) == {edge: {"confidence": 0.5}}
    paths = [s.raw_path for s in scripted.seen]
    assert "/api/v2/find?text=RAF%20kinase&kind=Family%7CGene" in paths
    assert "/api/v2/link?s=a%20b&p=isa&o=c%2Fd" in paths


async def test_schema_less_api_and_closing_twice(scripted):
    backend = await JsonLdBackend.create(JsonLdConfig(base_url=scripted.url, schema_url=""))
    assert await backend.entity_types() == [] and backend.capabilities.comprehensive_schema is False
    assert scripted.hits("/schema") == 0
    await backend.aclose()
    await backend.aclose()
    with pytest.raises(ApiError, match="closed"):
        await backend.get_nodes(["X"])


# --- small parsers ----------------------------------------------------------------------------


def test_retry_after_forms():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_seconds(later) or 0) <= 31
    assert retry_after_seconds(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0


def test_link_header_parsing():
    links = parse_link_header(
        '</p2>; rel="next", <ctx.jsonld>; rel="http://www.w3.org/ns/json-ld#context" ,'
        '<http://x.test/a>; rel="prev first"',
        "http://api.test/r/list?page=1",
    )
    assert links == {
        "next": "http://api.test/p2",
        "http://www.w3.org/ns/json-ld#context": "http://api.test/r/ctx.jsonld",
        "prev": "http://x.test/a",
        "first": "http://x.test/a",
    }
