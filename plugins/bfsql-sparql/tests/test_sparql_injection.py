"""The injection corpus against both real servers: every entry is refused before any query, or an exact match.

Proof that no entry altered a query: the data is unchanged afterwards (triples per
graph and the list of graphs, read with direct SPARQL), the answers hold no extra
rows (only the entity asked for, only labels that match), and the servers are both
writable through other routes, so a query that did smuggle an update would show.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from mcp import Client
from sparql_injection_data import HOSTILE_LABELS, INVALID_IDS, ODD_IDS, PREFIX, UNKNOWN_IDS, odd_iri
from sparql_servers import INJECTION_GRAPH, LUBM_GRAPH, STANDARD_GRAPH, SparqlServer, sparql_json

from bfsql import Edge, Graph, InvalidArgument, ServerSettings, build_server, lexical_rank
from bfsql_sparql import InvalidEntityId, SparqlBackend, SparqlConfig
from bfsql_sparql.search import BIF_WILDCARD_MIN

GRAPHS = (STANDARD_GRAPH, LUBM_GRAPH, INJECTION_GRAPH)


def snapshot(server: SparqlServer) -> dict[str, int]:
    """Triples per test graph and the number of named graphs, straight from the server."""
    counts = {}
    for graph in GRAPHS:
        rows = sparql_json(server.endpoint, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        counts[graph] = int(rows["results"]["bindings"][0]["n"]["value"])
    rows = sparql_json(server.endpoint, "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
    counts["graphs"] = int(rows["results"]["bindings"][0]["n"]["value"])
    return counts


def facade(backend: SparqlBackend) -> Graph:
    """The backend behind a Graph without cache or plugins: the single-id calls, derived from the primitives."""
    return Graph(backend, plugins=[], cache=None)


@pytest.fixture
async def backend(server: SparqlServer) -> AsyncIterator[SparqlBackend]:
    before = snapshot(server)
    config = SparqlConfig(endpoint=server.endpoint, default_graph=[INJECTION_GRAPH], prefix=[PREFIX])
    backend = await SparqlBackend.create(config)
    yield backend
    await backend.aclose()
    assert snapshot(server) == before, f"{server.name}: the data changed"


@pytest.mark.parametrize("entity_id", INVALID_IDS)
async def test_invalid_ids_are_refused_with_a_clear_error(backend: SparqlBackend, entity_id: str) -> None:
    with pytest.raises(InvalidEntityId) as caught:
        backend.to_iri(entity_id)
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, InvalidArgument)
    assert "Invalid entity id" in caught.value.message and caught.value.hint
    sent = backend.client.requests
    for primitive in (backend.get_nodes, backend.hop, backend.metadata_for_nodes):
        assert await primitive([entity_id]) == {}, "a refused id is unknown"
    graph = facade(backend)
    for method in (graph.get_node, graph.edges_from, graph.edges_to, graph.metadata_for_node):
        with pytest.raises(KeyError):
            await method(entity_id)
    assert backend.client.requests == sent, "a refused id must not reach the endpoint"
    assert await backend.get_nodes([entity_id, ODD_IDS[0]]) == await backend.get_nodes([ODD_IDS[0]])
    assert list(await backend.get_nodes([entity_id, ODD_IDS[0]])) == [ODD_IDS[0]]


@pytest.mark.parametrize("entity_id", UNKNOWN_IDS)
async def test_unknown_ids_are_unknown(backend: SparqlBackend, entity_id: str) -> None:
    for primitive in (backend.get_nodes, backend.hop, backend.metadata_for_nodes):
        assert await primitive([entity_id]) == {}
    graph = facade(backend)
    for method in (graph.get_node, graph.edges_from, graph.edges_to, graph.metadata_for_node):
        with pytest.raises(KeyError):
            await method(entity_id)


async def test_odd_but_valid_ids_match_exactly(backend: SparqlBackend) -> None:
    nodes = await backend.get_nodes([*ODD_IDS, *INVALID_IDS, *UNKNOWN_IDS])
    assert sorted(nodes) == sorted(ODD_IDS)
    rows = await backend.hop([*ODD_IDS, *INVALID_IDS, *UNKNOWN_IDS])
    assert sorted(rows) == sorted(ODD_IDS)
    metadata = await backend.metadata_for_nodes([*ODD_IDS, *INVALID_IDS, *UNKNOWN_IDS])
    assert sorted(metadata) == sorted(ODD_IDS)
    for position, entity_id in enumerate(ODD_IDS):
        following, previous = ODD_IDS[(position + 1) % len(ODD_IDS)], ODD_IDS[position - 1]
        name = entity_id.removeprefix("inj:")
        assert nodes[entity_id] == ("inj:Odd", name)
        assert await facade(backend).edges_from(entity_id) == [Edge(entity_id, "inj:next", following)]
        assert rows[entity_id].node == nodes[entity_id]
        assert sorted(rows[entity_id].edges) == sorted(
            [
                (entity_id, "inj:next", following, "inj:Odd", following.removeprefix("inj:")),
                (previous, "inj:next", entity_id, "inj:Odd", previous.removeprefix("inj:")),
            ]
        )
        assert metadata[entity_id]["name"] == name
        assert metadata[entity_id]["canonical_url"] == odd_iri(entity_id)


def _matches(query: str, label: str, word_search: bool) -> bool:
    """The label contains the query, or (full-text search) every word of it, or a word it starts (4+ letters)."""
    if lexical_rank(query, label, []) is not None:
        return True
    words = re.findall(r"\w+", label.lower())
    return word_search and all(
        any(word == w or (len(w) >= BIF_WILDCARD_MIN and word.startswith(w)) for word in words)
        for w in re.findall(r"\w+", query.lower())
    )


@pytest.mark.parametrize("position", range(len(HOSTILE_LABELS)))
async def test_hostile_search_strings_find_exactly_their_entity(backend: SparqlBackend, position: int) -> None:
    query = HOSTILE_LABELS[position]
    stubs = await backend.search_entities(query)
    assert stubs, f"{query!r} found nothing"
    assert stubs[0].id == f"inj:label{position}" and stubs[0].name == query
    labels = {f"inj:label{i}": label for i, label in enumerate(HOSTILE_LABELS)}
    for stub in stubs:
        assert stub.id in labels, f"{query!r} returned {stub.id}, which has no such label"
        assert _matches(query, labels[stub.id], backend.search_mode == "bif"), f"{query!r} matched {stub}"


@pytest.mark.parametrize("query", ["nul \x00 byte", "bell \x07", "escape \x1b[31m"])
async def test_search_strings_with_control_characters_are_refused(backend: SparqlBackend, query: str) -> None:
    with pytest.raises(InvalidArgument, match="control character"):
        await backend.search_entities(query)


@pytest.mark.parametrize("node_type", ["inj:Labelled> } ; DROP ALL", "} UNION {", 'x"y', "inj:Nope"])
async def test_hostile_node_types_match_nothing(backend: SparqlBackend, node_type: str) -> None:
    assert await backend.search_entities("quote", [node_type]) == []
    assert [s.id for s in await backend.search_entities("single ' quote", ["inj:Labelled"])][:1] == ["inj:label6"]


async def test_hostile_edges_have_no_metadata(backend: SparqlBackend) -> None:
    edges = [Edge(subject=bad, predicate="inj:next", object=ODD_IDS[0]) for bad in INVALID_IDS]
    edges.append(Edge(subject=ODD_IDS[0], predicate="inj:next> } ; DROP ALL ; {", object=ODD_IDS[1]))
    assert await backend.metadata_for_edges(edges) == {edge: {} for edge in edges}
    assert await backend.provenance_for_edges(edges) == {}


async def test_hostile_ids_through_the_mcp_tools(backend: SparqlBackend) -> None:
    """The tools answer each hostile id as unknown, pointing to search_entities, and keep answering."""
    async with Client(await build_server(Graph(backend), ServerSettings())) as client:
        for entity_id in INVALID_IDS[:12]:
            calls = (("describe_entity", {"id": entity_id}), ("bfs_query", {"seeds": [entity_id], "max_hops": 1}))
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                text = result.content[0].text
                assert result.is_error and "Unknown entity id" in text and "search_entities" in text, text
        result = await client.call_tool("describe_entity", {"id": ODD_IDS[0]})
        assert not result.is_error, result.content[0].text
