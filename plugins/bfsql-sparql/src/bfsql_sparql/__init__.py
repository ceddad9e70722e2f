"""bfsql-sparql: any SPARQL 1.1 endpoint (Oxigraph, Virtuoso, DBpedia, Wikidata…) as a bfsql backend.

Installing the distribution registers the backend ``sparql``:
``bfsql serve --backend sparql --endpoint URL [--prefix NAME=IRI ...]``.
See docs/backends/sparql.md for every option.
"""

from __future__ import annotations

from typing import Any

from bfsql import hookimpl
from bfsql_sparql.backend import InvalidEntityId, SparqlBackend, SparqlConfigError
from bfsql_sparql.client import SparqlClient, SparqlEndpointError
from bfsql_sparql.config import ENV_ALIASES, SparqlConfig

__all__ = [
    "InvalidEntityId",
    "SparqlBackend",
    "SparqlClient",
    "SparqlConfig",
    "SparqlConfigError",
    "SparqlEndpointError",
    "register_backends",
]


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``sparql`` backend."""
    register(
        "sparql",
        SparqlBackend.create,
        SparqlConfig,
        "Any SPARQL 1.1 endpoint (Oxigraph, Virtuoso, DBpedia, Wikidata), read-only.",
        env_aliases=ENV_ALIASES,
    )
