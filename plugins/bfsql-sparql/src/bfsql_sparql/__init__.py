"""bfsql-sparql: any SPARQL 1.1 endpoint (Oxigraph, Virtuoso, DBpedia, Wikidata…) as a bfsql backend.

Installing the distribution registers the backend ``sparql``:
``bfsql serve --backend sparql --endpoint URL [--prefix NAME=IRI ...]``.
See docs/backends/sparql.md for every option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bfsql import hookimpl, lazy_names
from bfsql_sparql.config import ENV_ALIASES, SparqlConfig

if TYPE_CHECKING:
    from bfsql_sparql.backend import InvalidEntityId, SparqlBackend, SparqlConfigError
    from bfsql_sparql.client import SparqlClient, SparqlEndpointError

# The backend and its HTTP client (aiohttp) load when a graph is opened, not when bfsql loads its plugins.
__getattr__ = lazy_names(__name__, {
    "InvalidEntityId": "bfsql_sparql.backend",
    "SparqlBackend": "bfsql_sparql.backend",
    "SparqlClient": "bfsql_sparql.client",
    "SparqlConfigError": "bfsql_sparql.backend",
    "SparqlEndpointError": "bfsql_sparql.client",
})

__all__ = [
    "InvalidEntityId",
    "SparqlBackend",
    "SparqlClient",
    "SparqlConfig",
    "SparqlConfigError",
    "SparqlEndpointError",
    "register_backends",
]


async def _create(config: SparqlConfig) -> SparqlBackend:
    from bfsql_sparql.backend import SparqlBackend

    return await SparqlBackend.create(config)


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``sparql`` backend."""
    register(
        "sparql",
        _create,
        SparqlConfig,
        "Any SPARQL 1.1 endpoint (Oxigraph, Virtuoso, DBpedia, Wikidata), read-only.",
        env_aliases=ENV_ALIASES,
    )
