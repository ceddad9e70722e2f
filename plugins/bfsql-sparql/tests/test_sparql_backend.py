"""Backend behaviour beyond the contract, on the real servers: limits that are reported, endpoint caps,
schema modes, languages, and the HTTP discipline (retries, timeouts, concurrency, read-only, User-Agent)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator

import pytest
from mcp import Client
from sparql_injection_data import POLYGLOT, PREFIX, WIKI_ITEM
from sparql_proxy import Fault, FaultProxy
from sparql_servers import (
    INJECTION_GRAPH,
    LUBM_GRAPH,
    RDF_TYPE,
    STANDARD_GRAPH,
    UB,
    SparqlServer,
    lubm_config,
    sparql_json,
)
from sparql_standard_rdf import PREFIXES, compact_id

from bfsql import (
    Edge,
    Graph,
    InvalidArgument,
    ServerSettings,
    TraversalLimits,
    bfs_query,
    build_server,
    get_backends,
    resolve_config,
)
from bfsql.testing.standard_graph import INVISIBLE_IDS, ORPHAN, STANDARD_IDS
from bfsql_sparql import SparqlBackend, SparqlClient, SparqlConfig, SparqlConfigError, SparqlEndpointError
from bfsql_sparql.hop import ONE_QUERY_IDS
from bfsql_sparql.truncation import REASON
from bfsql_testsupport.services import free_port

DEPARTMENT = "http://www.Department0.University0.edu"
STUDENTS = [f"{DEPARTMENT}/UndergraduateStudent{i}" for i in range(250)]


def facade(backend: SparqlBackend) -> Graph:
    """The backend behind a Graph without cache or plugins: the single-id calls, derived from the primitives."""
    return Graph(backend, plugins=[], cache=None)


@pytest.fixture
async def lubm(server: SparqlServer) -> AsyncIterator[SparqlBackend]:
    backend = await SparqlBackend.create(lubm_config(server, edge_limit=100))
    yield backend
    await backend.aclose()


# --- limits are reported, never hidden ----------------------------------------


async def test_edge_limit_cuts_in_order_and_is_reported(
    server: SparqlServer, lubm: SparqlBackend, caplog: pytest.LogCaptureFixture
) -> None:
    total = int(
        sparql_json(
            server.endpoint, f"SELECT (COUNT(*) AS ?n) {{ ?s ?p <{DEPARTMENT}> FILTER(isIRI(?s)) }}", [LUBM_GRAPH]
        )["results"]["bindings"][0]["n"]["value"]
    )
    assert total > 100
    with caplog.at_level(logging.WARNING, logger="bfsql.sparql"):
        edges = await facade(lubm).edges_to(DEPARTMENT)
    assert len(edges) == 100
    first = sparql_json(
        server.endpoint,
        f"SELECT ?s ?p {{ ?s ?p <{DEPARTMENT}> FILTER(isIRI(?s)) }} ORDER BY ?p ?s LIMIT 100",
        [LUBM_GRAPH],
    )["results"]["bindings"]
    assert {(e.subject, e.predicate) for e in edges} == {
        (r["s"]["value"], "ub:" + r["p"]["value"].removeprefix(UB)) for r in first
    }
    assert f"{DEPARTMENT} has {total} incoming statements; only 100 were read" in caplog.text

    # The engine's answer says so: the backend reports its cuts through GraphBackend.truncations.
    result = await bfs_query(Graph(lubm), [DEPARTMENT], 1, topology_only=True, limits=TraversalLimits(max_nodes=10_000))
    notes = [t for t in result.truncated or [] if t.reason == REASON]
    assert notes and notes[0].capped_nodes == [DEPARTMENT] and f"100 of {total} incoming" in notes[0].detail


async def test_a_hop_is_two_queries_per_batch_of_ids_and_one_for_a_few(lubm: SparqlBackend) -> None:
    """A frontier: its edges, then the distinct ends met and the asked ids; a few seeds: one query, their own
    identities in it."""
    sent = lubm.client.requests
    rows = await lubm.hop([*STUDENTS, f"{DEPARTMENT}/Nobody"])
    assert sorted(rows) == sorted(STUDENTS) and all(there.edges for there in rows.values())
    assert lubm.client.requests - sent == 2 * math.ceil(len(STUDENTS) / lubm.limits.batch_size)
    seeds = STUDENTS[: ONE_QUERY_IDS - 1]  # and one id that is no entity
    sent = lubm.client.requests
    few = await lubm.hop([*seeds, f"{DEPARTMENT}/Nobody"])
    assert lubm.client.requests - sent == 1
    assert {i: (there.node, sorted(there.edges)) for i, there in few.items()} == {
        student: (rows[student].node, sorted(rows[student].edges)) for student in seeds
    }
    for student, there in rows.items():
        assert there.node.entity_type == "ub:UndergraduateStudent", "the asked entity itself comes with its edges"
        found = there.edges
        assert all(student in (subject, obj) for subject, _, obj, _, _ in found)
        assert all(other_type is not None for *_, other_type, _ in found), "every end of a student is an entity"


async def test_a_hop_too_big_for_one_answer_is_read_in_groups(server: SparqlServer, lubm: SparqlBackend) -> None:
    """Past --max-rows a chunk is counted and asked again in groups that fit, a hub page by page: the same answer."""
    small = await SparqlBackend.create(lubm_config(server, edge_limit=100, max_rows=50))
    try:
        asked = [DEPARTMENT, *STUDENTS[:40]]
        sent = small.client.requests
        counted = await small.hop(asked)
        assert small.client.requests - sent > 3, "the query, the counts, the groups, the hub's pages and ends"
        expected = await lubm.hop(asked)
        assert {i: (there.node, sorted(there.edges)) for i, there in counted.items()} == {
            i: (there.node, sorted(there.edges)) for i, there in expected.items()
        }
        assert [c.capped_nodes for c in small.truncations(set(asked))] == [[DEPARTMENT]]
    finally:
        await small.aclose()


async def test_a_counted_hop_answers_the_asked_entities_as_one_query_does(server: SparqlServer) -> None:
    """Past --max-rows the hop is counted; the asked entities without edges (ORPHAN) are still answered, unknown and
    merged ids still left out."""
    ids = compact_id if server.name == "oxigraph" else str
    asked = [ids(i) for i in (*STANDARD_IDS, *INVISIBLE_IDS)]
    options = {"endpoint": server.endpoint, "default_graph": [STANDARD_GRAPH], "prefix": PREFIXES}
    whole = await SparqlBackend.create(SparqlConfig(**options))
    small = await SparqlBackend.create(SparqlConfig(**options, max_rows=10))
    try:
        expected = await whole.hop(asked)
        sent = small.client.requests
        counted = await small.hop(asked)
        assert small.client.requests - sent > 2, "the query, the counts, the groups and the entities without edges"
        assert sorted(expected) == sorted(ids(i) for i in STANDARD_IDS) and expected[ids(ORPHAN)].edges == []
        assert {i: (there.node, sorted(there.edges)) for i, there in counted.items()} == {
            i: (there.node, sorted(there.edges)) for i, there in expected.items()
        }
    finally:
        await whole.aclose()
        await small.aclose()


async def test_literal_values_are_cut_alike_in_one_query_or_counted(server: SparqlServer) -> None:
    """Past --edge-limit literal values are cut in (predicate, value) order and noted; past --max-rows a
    metadata block is read the counted way, with the same answer."""
    professors = [f"{DEPARTMENT}/FullProfessor{i}" for i in range(5)]
    one_query = await SparqlBackend.create(lubm_config(server, edge_limit=2))
    counted = await SparqlBackend.create(lubm_config(server, edge_limit=2, max_rows=10))
    try:
        found = await one_query.metadata_for_nodes(professors)
        sent = counted.client.requests
        assert await counted.metadata_for_nodes(professors) == found
        assert counted.client.requests - sent > 2, "the query, then counts and fetches"
        assert sorted(found) == professors
        for metadata in found.values():
            assert metadata["values_truncated"].startswith("2 of ")
            assert metadata["emailAddress"].endswith("@Department0.University0.edu")
    finally:
        await one_query.aclose()
        await counted.aclose()


async def test_virtuoso_row_cap_is_detected_and_obeyed(virtuoso_server: SparqlServer) -> None:
    """Virtuoso silently stops at ResultSetMaxRows (10000 here); the counts catch it and the backend adapts."""
    config = lubm_config(virtuoso_server, max_rows=50_000, edge_limit=50_000, batch_size=2_000)
    backend = await SparqlBackend.create(config)
    try:
        busiest = (
            f"SELECT ?s (COUNT(*) AS ?n) {{ ?s ?p ?o FILTER(isIRI(?o) && ?p != <{RDF_TYPE}>) }} "
            "GROUP BY ?s ORDER BY DESC(?n) ?s LIMIT 2000"
        )
        rows = sparql_json(virtuoso_server.endpoint, busiest, [LUBM_GRAPH])["results"]["bindings"]
        busy = [r["s"]["value"] for r in rows]
        total = sparql_json(
            virtuoso_server.endpoint,
            f"SELECT (COUNT(*) AS ?n) {{ VALUES ?s {{ {' '.join(f'<{s}>' for s in busy)} }} "
            f"?s ?p ?o FILTER(isIRI(?o) && ?p != <{RDF_TYPE}>) }}",
            [LUBM_GRAPH],
        )["results"]["bindings"][0]["n"]["value"]
        assert int(total) > 10_000, "one batch must exceed Virtuoso's cap"
        rows = await backend.hop(busy)
        assert backend.client.row_cap == 10_000
        outgoing = sum(1 for entity, there in rows.items() for subject, *_ in there.edges if subject == entity)
        assert outgoing == int(total), "refetched within the announced cap"
        assert not backend.cuts.cuts_for(set(busy))
    finally:
        await backend.aclose()


# --- schema ---------------------------------------------------------------------


async def test_schema_limit_makes_the_schema_a_sample(server: SparqlServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bfsql.sparql"):
        backend = await SparqlBackend.create(lubm_config(server, schema_limit=5))
    try:
        assert len(await backend.entity_types()) == 5 and len(await backend.predicates()) <= 5
        assert backend.capabilities.comprehensive_schema is False
        assert "more than 5 entity types or predicates" in caplog.text
    finally:
        await backend.aclose()


async def test_probe_mode_reads_only_around_the_seeds(server: SparqlServer) -> None:
    seed = f"{DEPARTMENT}/FullProfessor1"
    backend = await SparqlBackend.create(lubm_config(server, schema_mode="probe", probe_seeds=[seed]))
    try:
        assert backend.capabilities.comprehensive_schema is False
        types, predicates = await backend.entity_types(), await backend.predicates()
        assert {"ub:FullProfessor", "ub:Department", "ub:Course"} <= set(types)
        assert "ub:worksFor" in predicates and "ub:subOrganizationOf" not in predicates
        async with Client(await build_server(Graph(backend), ServerSettings())) as client:
            schema = await client.call_tool("describe_schema", {})
            assert '"comprehensive":false' in schema.content[0].text.replace(" ", "")
    finally:
        await backend.aclose()


async def test_probe_mode_needs_seeds(server: SparqlServer) -> None:
    with pytest.raises(SparqlConfigError, match="--probe-seeds"):
        await SparqlBackend.create(lubm_config(server, schema_mode="probe"))


# --- labels and languages ------------------------------------------------------


async def test_language_preference(server: SparqlServer) -> None:
    async def metadata(languages: list[str]) -> dict:
        config = SparqlConfig(
            endpoint=server.endpoint, default_graph=[INJECTION_GRAPH], prefix=[PREFIX], language=languages
        )
        backend = await SparqlBackend.create(config)
        try:
            return (await backend.metadata_for_nodes([POLYGLOT]))[POLYGLOT]
        finally:
            await backend.aclose()

    everything = await metadata([])
    assert everything["name"] == "gastric cancer"  # untagged and English first
    assert set(everything["synonyms"]) == {"stomach cancer", "Magenkrebs", "cancer de l'estomac"}
    assert sorted(everything["note"]) == ["Bonjour", "Hallo", "Hello"]
    german = await metadata(["de"])
    assert german["name"] == "Magenkrebs" and german["synonyms"] == ["gastric cancer"] and german["note"] == "Hallo"
    french_first = await metadata(["fr", "en"])
    assert french_first["name"] == "cancer de l'estomac"
    assert french_first["synonyms"] == ["stomach cancer", "gastric cancer"]
    assert (await metadata(["", "de"]))["name"] == "gastric cancer"


async def test_default_graph_is_respected(server: SparqlServer) -> None:
    config = SparqlConfig(endpoint=server.endpoint, default_graph=[STANDARD_GRAPH], prefix=[f"ub={UB}"])
    backend = await SparqlBackend.create(config)
    try:
        assert not [t for t in await backend.entity_types() if t.startswith("ub:")]
        with pytest.raises(KeyError):
            await facade(backend).get_node(DEPARTMENT)
    finally:
        await backend.aclose()


# --- HTTP discipline -------------------------------------------------------------


@pytest.fixture
async def proxy(oxigraph_server: SparqlServer) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(oxigraph_server.endpoint) as running:
        yield running


def proxied(proxy: FaultProxy, **options: object) -> SparqlConfig:
    return SparqlConfig(endpoint=proxy.url, default_graph=[LUBM_GRAPH], prefix=[f"ub={UB}"], **options)


async def test_user_agent_read_only_and_get_or_post(proxy: FaultProxy) -> None:
    backend = await SparqlBackend.create(proxied(proxy))
    try:
        await backend.hop(STUDENTS[:100])
        await backend.search_entities("Department1")
    finally:
        await backend.aclose()
    assert proxy.seen and all(
        s.user_agent.startswith("bfsql-sparql/") and " bfsql/" in s.user_agent for s in proxy.seen
    )
    assert all(s.query.lstrip().startswith(("SELECT", "ASK")) for s in proxy.seen)
    assert {s.method for s in proxy.seen} == {"GET", "POST"}, "short queries by GET, long ones by POST"
    assert all(len(s.query) > 1500 for s in proxy.seen if s.method == "POST")
    assert {s.content_type for s in proxy.seen if s.method == "POST"} == {"application/sparql-query"}, (
        "a long query is the POST body itself, not URL-encoded in a form"
    )

    proxy.seen.clear()
    forced = await SparqlBackend.create(proxied(proxy, http_method="post"))
    await forced.aclose()
    assert {s.method for s in proxy.seen} == {"POST"}
    assert {s.content_type for s in proxy.seen} == {"application/sparql-query"}


async def test_a_store_without_edge_annotations_is_asked_for_none(proxy: FaultProxy) -> None:
    """LUBM has no reified statements: learnt once at start, a full answer's edges cost no query."""
    backend = await SparqlBackend.create(proxied(proxy))
    try:
        assert backend.edge_annotations is False
        proxy.seen.clear()
        answer = await bfs_query(facade(backend), [DEPARTMENT], 1, limits=TraversalLimits(max_nodes=10_000))
        asked = [s.query for s in proxy.seen]
        assert answer.edge_metadata, "a full answer has edge metadata"
        assert set(map(str, answer.edge_metadata.values())) == {"{'source_documents': []}"}
        assert not [q for q in asked if "VALUES (?s ?p ?o)" in q], "no edge was asked about: the hop read them all"
        # Outside a traversal existence is asked (an unknown edge has no metadata), and the answer is the same.
        edges = [Edge(*triple) for triple in answer.edge_metadata]
        proxy.seen.clear()
        assert await backend.metadata_for_edges(edges) == answer.edge_metadata
        assert await backend.provenance_for_edges(edges) == {}
        assert not [s for s in proxy.seen if "rdf-syntax-ns#subject" in s.query], "no reified statement is sought"
    finally:
        await backend.aclose()


async def test_client_refuses_anything_but_select_and_ask(proxy: FaultProxy) -> None:
    client = SparqlClient(proxy.url)
    try:
        for update in (
            "INSERT DATA { <a:b> <a:b> <a:b> }",
            "DROP ALL",
            "  CLEAR DEFAULT",
            "CONSTRUCT { ?s ?p ?o } WHERE {}",
        ):
            with pytest.raises(ValueError, match="only SELECT and ASK"):
                await client.select(update)
    finally:
        await client.aclose()
    assert proxy.seen == []


async def test_rate_limits_are_retried_honouring_retry_after(proxy: FaultProxy) -> None:
    backend = await SparqlBackend.create(proxied(proxy))
    try:
        proxy.seen.clear()
        proxy.faults = [Fault(429, {"Retry-After": "1"}, "slow down"), Fault(503, {}, "busy")]
        started = time.monotonic()
        node = (await backend.get_nodes([DEPARTMENT]))[DEPARTMENT]
        assert node.entity_type == "ub:Department"
        assert time.monotonic() - started >= 1.0
        assert len(proxy.seen) == 3 and proxy.seen[1].at - proxy.seen[0].at >= 0.99
    finally:
        await backend.aclose()


async def test_persistent_overload_fails_clearly(proxy: FaultProxy) -> None:
    backend = await SparqlBackend.create(proxied(proxy, max_retries=2))
    try:
        proxy.faults = [Fault(503)] * 3
        with pytest.raises(SparqlEndpointError, match="HTTP 503"):
            await backend.get_nodes([DEPARTMENT])
        proxy.faults = [Fault(429, {"Retry-After": "3600"})]
        with pytest.raises(SparqlEndpointError, match="asks to wait 3600s"):
            await backend.get_nodes([DEPARTMENT])
        assert (await backend.get_nodes([DEPARTMENT]))[DEPARTMENT].entity_type == "ub:Department", "recovers"
    finally:
        await backend.aclose()


async def test_query_timeout(proxy: FaultProxy) -> None:
    backend = await SparqlBackend.create(
        proxied(proxy, query_timeout=0.5, schema_mode="probe", probe_seeds=[f"{DEPARTMENT}/FullProfessor1"])
    )
    try:
        proxy.faults = [Fault(200, delay=2.0)]
        started = time.monotonic()
        with pytest.raises(SparqlEndpointError, match=r"did not answer within 0\.5s"):
            await backend.get_nodes([DEPARTMENT])
        assert time.monotonic() - started < 1.5
    finally:
        await backend.aclose()


async def test_concurrency_is_bounded(proxy: FaultProxy) -> None:
    backend = await SparqlBackend.create(proxied(proxy, max_connections=2))
    try:
        proxy.forward_delay = 0.1
        proxy.max_in_flight = 0
        await asyncio.gather(*(backend.get_nodes([f"{DEPARTMENT}/FullProfessor{i}"]) for i in range(8)))
        assert proxy.max_in_flight == 2
    finally:
        await backend.aclose()


async def test_startup_errors_say_what_to_do(proxy: FaultProxy) -> None:
    with pytest.raises(SparqlEndpointError, match=r"does not answer a trivial query.*Check --endpoint"):
        await SparqlBackend.create(SparqlConfig(endpoint=f"http://127.0.0.1:{free_port()}/sparql", max_retries=0))
    proxy.faults = [Fault(200, body="<html>not sparql</html>", content_type="text/html")]
    with pytest.raises(SparqlEndpointError, match="did not answer SPARQL JSON"):
        await SparqlBackend.create(proxied(proxy))


# --- configuration ---------------------------------------------------------------


def test_configuration_from_flags_and_environment() -> None:
    spec = get_backends()["sparql"]
    config = resolve_config(
        spec, {}, {"SPARQL_ENDPOINT_URL": "http://127.0.0.1:1/sparql", "BFSQL_SPARQL_PREFIX": "a=http://a/,=http://v/"}
    )
    assert config.endpoint == "http://127.0.0.1:1/sparql" and config.prefix == ["a=http://a/", "=http://v/"]
    flagged = resolve_config(
        spec, {"endpoint": "http://x/q", "prefix": ("b=http://b/",)}, {"SPARQL_ENDPOINT_URL": "http://y/"}
    )
    assert flagged.endpoint == "http://x/q" and flagged.prefix == ["b=http://b/"]
    for bad in (
        {"endpoint": "ftp://x"},
        {"endpoint": "http://x/q", "prefix": ("http=http://h/",)},
        {"endpoint": "http://x/q", "default_graph": ("not a graph",)},
        {},
    ):
        with pytest.raises(InvalidArgument):
            resolve_config(spec, bad, {})


def test_bad_label_predicate_is_a_configuration_error() -> None:
    with pytest.raises(SparqlConfigError, match="--label-predicate: 'name' is neither"):
        SparqlBackend(SparqlConfig(endpoint="http://127.0.0.1:1/sparql", label_predicate=["name"]))


async def test_exact_search_mode(server: SparqlServer) -> None:
    config = SparqlConfig(
        endpoint=server.endpoint, default_graph=[INJECTION_GRAPH], prefix=[PREFIX], search_mode="exact", language=["en"]
    )
    backend = await SparqlBackend.create(config)
    try:
        assert [s.id for s in await backend.search_entities("Stomach cancer")] == [POLYGLOT]  # capitalised variant
        assert [s.id for s in await backend.search_entities("gastric cancer", ["inj:Polyglot"])] == [POLYGLOT]
        assert await backend.search_entities("gastric cancer", ["inj:Odd"]) == []
        assert await backend.search_entities("stomach") == [], "exact means exact: no substring matches"
        assert await backend.search_entities("Magenkrebs") == [], "German labels are not looked up with --language en"
        assert await backend.search_entities("\\u0022 escaped quote") == []
    finally:
        await backend.aclose()


async def test_type_predicate(server: SparqlServer) -> None:
    config = SparqlConfig(
        endpoint=server.endpoint, default_graph=[INJECTION_GRAPH], prefix=[PREFIX], type_predicate="inj:instanceOf"
    )
    backend = await SparqlBackend.create(config)
    try:
        graph = facade(backend)
        assert (await graph.get_node(WIKI_ITEM)).entity_type == "inj:Human"
        assert "inj:Human" in await backend.entity_types() and "inj:instanceOf" not in await backend.predicates()
        assert [(e.predicate, e.object) for e in await graph.edges_from(WIKI_ITEM)] == [("rdf:type", "inj:Item")]
        assert [s.id for s in await backend.search_entities("Douglas", ["inj:Human"])] == [WIKI_ITEM]
        assert (await graph.get_node("inj:Human")).entity_type == "Entity"
    finally:
        await backend.aclose()
