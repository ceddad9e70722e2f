"""Session-wide real servers (Oxigraph, Virtuoso), each loaded with the standard graph, LUBM and the injection graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sparql_injection_data import write_injection_ntriples
from sparql_servers import (
    INJECTION_GRAPH,
    LUBM_GRAPH,
    STANDARD_GRAPH,
    SparqlServer,
    lubm_file,
    oxigraph,
    virtuoso,
)
from sparql_standard_rdf import compact_iri, write_standard_ntriples


def _datasets(work: Path, standard: Path) -> dict[str, tuple[str, Path]]:
    return {
        "standard": (STANDARD_GRAPH, standard),
        "lubm": (LUBM_GRAPH, lubm_file()),
        "injection": (INJECTION_GRAPH, write_injection_ntriples(work / "injection.nt")),
    }


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparqlServer]:
    """Oxigraph with the standard graph (entities under http://bfsql.test/<kind>/) and LUBM."""
    work = tmp_path_factory.mktemp("oxigraph")
    standard = write_standard_ntriples(work / "standard.nt", compact_iri)
    with oxigraph(work, _datasets(work, standard)) as server:
        yield server


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparqlServer]:
    """Virtuoso with the standard graph (entity IRIs are the standard ids themselves) and LUBM."""
    work = tmp_path_factory.mktemp("virtuoso")
    standard = write_standard_ntriples(work / "standard.nt", str)
    with virtuoso(work, _datasets(work, standard)) as server:
        yield server


@pytest.fixture(scope="session", params=["oxigraph", "virtuoso"])
def server(request: pytest.FixtureRequest) -> SparqlServer:
    """Each real server in turn."""
    found: SparqlServer = request.getfixturevalue(f"{request.param}_server")
    return found
