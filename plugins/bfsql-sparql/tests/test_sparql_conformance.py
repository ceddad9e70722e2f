"""The core conformance suite (and parity with the memory backend) against two real SPARQL servers.

* Oxigraph: entity ids are compact (``gene:TP53`` for http://bfsql.test/gene/TP53),
  search is the portable CONTAINS.
* Virtuoso: entity IRIs are the standard ids themselves (``GENE:TP53``, an IRI under
  no configured namespace, returned whole), search is Virtuoso's bif:contains.

On both, types and predicates live in the default namespace, so they read ``Gene``
and ``REGULATES`` exactly as in the standard graph.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sparql_servers import STANDARD_GRAPH, SparqlServer
from sparql_standard_rdf import PREFIXES, compact_id

from bfsql import Capabilities
from bfsql.testing import BackendConformance
from bfsql_sparql import SparqlBackend, SparqlConfig

CAPABILITIES = Capabilities(batch_primitives=True, provenance=True)


async def open_backend(server: SparqlServer, **options: object) -> SparqlBackend:
    """A backend over the standard graph of ``server``."""
    config = SparqlConfig(endpoint=server.endpoint, default_graph=[STANDARD_GRAPH], prefix=PREFIXES, **options)
    return await SparqlBackend.create(config)


class TestOxigraphConformance(BackendConformance):
    """Oxigraph, compact ids, portable search."""

    capabilities = CAPABILITIES

    @pytest.fixture
    def id_map(self):
        return compact_id

    @pytest.fixture
    async def backend(self, oxigraph_server: SparqlServer) -> AsyncIterator[SparqlBackend]:
        backend = await open_backend(oxigraph_server)
        assert backend.search_mode == "contains"
        yield backend
        await backend.aclose()


class TestVirtuosoConformance(BackendConformance):
    """Virtuoso, whole-IRI ids, full-text search."""

    capabilities = CAPABILITIES

    @pytest.fixture
    async def backend(self, virtuoso_server: SparqlServer) -> AsyncIterator[SparqlBackend]:
        backend = await open_backend(virtuoso_server)
        assert backend.search_mode == "bif"
        yield backend
        await backend.aclose()
