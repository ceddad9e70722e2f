"""The core conformance suite (and parity with the memory backend) against two real SPARQL servers.

* Oxigraph: entity ids are compact (``gene:TP53`` for http://bfsql.test/gene/TP53),
  search is the portable CONTAINS.
* Virtuoso: entity IRIs are the standard ids themselves (``GENE:TP53``, an IRI under
  no configured namespace, returned whole), search is Virtuoso's bif:contains.

On both, types and predicates live in the default namespace, so they read ``Gene``
and ``REGULATES`` exactly as in the standard graph. The random graphs of the exact-count check are
added to the running server, each in a named graph of its own, their ids spelled as IRIs under
http://bfsql.test/random/ (no prefix: the backend answers them whole). An IRI with triples of its own is a
resource, an entity to the backend: a dangling end (no entity) can only be an object there, so the
relationships with a dangling subject are left out of them.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from sparql_servers import STANDARD_GRAPH, SparqlServer
from sparql_standard_rdf import PREFIXES, compact_id, write_ntriples

from bfsql import Capabilities, EntityRecord, Record, RelationshipRecord
from bfsql.testing import BackendConformance
from bfsql.testing.random_graphs import respelled
from bfsql_sparql import SparqlBackend, SparqlConfig

CAPABILITIES = Capabilities(batch_primitives=True, provenance=True)


async def open_backend(server: SparqlServer, graph: str = STANDARD_GRAPH, **options: object) -> SparqlBackend:
    """A backend over the standard graph of ``server`` (or another of its named graphs)."""
    config = SparqlConfig(endpoint=server.endpoint, default_graph=[graph], prefix=PREFIXES, **options)
    return await SparqlBackend.create(config)


def random_iri(record_id: str) -> str:
    """A random graph's id as an IRI (percent-encoded: its ids hold '/', ':' and non-ASCII letters)."""
    return "http://bfsql.test/random/" + quote(record_id, safe="")


def as_rdf(records: list[Record]) -> list[Record]:
    """A random graph as RDF can hold it (see the module): ids as IRIs, no dangling subject."""
    entities = {r.id for r in records if isinstance(r, EntityRecord)}
    kept = [r for r in records if not isinstance(r, RelationshipRecord) or r.subject in entities]
    return respelled(kept, random_iri)


_RANDOM_GRAPHS = itertools.count()


def records_loader(server: SparqlServer, work: Path) -> Callable[[list[Record]], Awaitable[SparqlBackend]]:
    """Adds records (ids already IRIs) to ``server`` as a new named graph; a backend over it."""

    async def load(records: list[Record]) -> SparqlBackend:
        number = next(_RANDOM_GRAPHS)
        graph = f"http://bfsql.test/graph/random-{number}"
        assert server.add_graph is not None
        server.add_graph(graph, write_ntriples(work / f"random-{number}.nt", records, str))
        return await open_backend(server, graph)

    return load


class RandomGraphs:
    """The exact-count check's random graphs, loaded into the class's server."""

    server_fixture = ""

    @pytest.fixture
    def as_stored(self) -> Callable[[list[Record]], list[Record]]:
        return as_rdf

    @pytest.fixture
    def load_records(self, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[list[Record]], Awaitable[
            SparqlBackend]]:
        return records_loader(request.getfixturevalue(self.server_fixture), tmp_path)


class TestOxigraphConformance(RandomGraphs, BackendConformance):
    """Oxigraph, compact ids, portable search."""

    capabilities = CAPABILITIES
    server_fixture = "oxigraph_server"

    @pytest.fixture
    def id_map(self):
        return compact_id

    @pytest.fixture
    async def backend(self, oxigraph_server: SparqlServer) -> AsyncIterator[SparqlBackend]:
        backend = await open_backend(oxigraph_server)
        assert backend.search_mode == "contains"
        yield backend
        await backend.aclose()


class TestVirtuosoConformance(RandomGraphs, BackendConformance):
    """Virtuoso, whole-IRI ids, full-text search."""

    capabilities = CAPABILITIES
    server_fixture = "virtuoso_server"

    @pytest.fixture
    async def backend(self, virtuoso_server: SparqlServer) -> AsyncIterator[SparqlBackend]:
        backend = await open_backend(virtuoso_server)
        assert backend.search_mode == "bif"
        yield backend
        await backend.aclose()
