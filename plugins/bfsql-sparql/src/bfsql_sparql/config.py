"""The configuration of the sparql backend: every field is a ``bfsql serve`` flag and a BFSQL_SPARQL_* variable."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from bfsql import HttpStoreConfig
from bfsql_sparql.terms import InvalidTerm, PrefixMap, check_iri, check_language

__all__ = ["ENV_ALIASES", "SparqlConfig"]

ENV_ALIASES: dict[str, tuple[str, ...]] = {"endpoint": ("SPARQL_ENDPOINT_URL",)}
"""Conventional environment variables, read after BFSQL_SPARQL_<FIELD>."""


class SparqlConfig(HttpStoreConfig):
    """Configuration of the sparql backend.

    ``query_timeout``, ``max_connections``, ``description`` and the retry options are the ones every
    HTTP store shares (:class:`bfsql.HttpStoreConfig`); ``max_concurrency`` is the old name of
    ``max_connections``.
    """

    deprecated_names: ClassVar[dict[str, str]] = {"max_concurrency": "max_connections"}

    endpoint: str = Field(description="SPARQL 1.1 query endpoint URL, e.g. http://127.0.0.1:7878/query.")
    prefix: list[str] = Field(
        default_factory=list,
        description="NAME=IRI namespace; IRIs under it become ids NAME:local (repeatable; order = type preference).",
    )
    default_graph: list[str] = Field(
        default_factory=list, description="Graph IRI sent as default-graph-uri (repeatable; default: the endpoint's)."
    )
    label_predicate: list[str] = Field(
        default_factory=list,
        description="Predicate giving an entity's name, most preferred first (default: skos:prefLabel, rdfs:label).",
    )
    synonym_predicate: list[str] = Field(
        default_factory=list, description="Predicate giving synonyms (default: skos:altLabel)."
    )
    type_predicate: str = Field(
        default="rdf:type", description="Predicate stating an entity's type (Wikidata: wdt:P31); it is not an edge."
    )
    language: list[str] = Field(
        default_factory=list,
        description="Language tags kept for tagged literals, most preferred first; untagged literals are always "
        "kept, after these unless '' is listed (default: every language).",
    )
    search_mode: Literal["auto", "contains", "bif", "exact"] = Field(
        default="auto",
        description="Label search: contains (portable), bif (Virtuoso full text), exact (index lookups only), "
        "auto (bif on Virtuoso, else contains).",
    )
    search_candidates: int = Field(default=200, ge=20, le=10_000, description="Matching labels ranked per search.")
    schema_mode: Literal["full", "probe"] = Field(
        default="full", description="full: SELECT DISTINCT over the graph; probe: only around --probe-seeds."
    )
    probe_seeds: list[str] = Field(default_factory=list, description="Entity ids whose neighbourhood probe mode reads.")
    probe_hops: int = Field(default=1, ge=0, le=3, description="Hops around the probe seeds read in probe mode.")
    schema_limit: int = Field(
        default=1000, ge=1, le=100_000, description="At most this many entity types and predicates are listed."
    )
    edge_limit: int = Field(
        default=10_000, ge=1, description="Edges read per entity and direction; more are cut and reported."
    )
    max_rows: int = Field(
        default=10_000,
        ge=10,
        description="Rows asked for in one request; keep it at or below the endpoint's own cap (Virtuoso: 10000).",
    )
    batch_size: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="Entity ids per VALUES block (a hop is one query per block); public endpoints take about 2000, "
        "a local store more.",
    )
    max_connections: int = Field(
        default=4, ge=1, le=64, description="Requests in flight at once (was --max-concurrency)."
    )
    http_method: Literal["auto", "get", "post"] = Field(
        default="auto",
        description="GET (query=) or POST (an application/sparql-query body); auto: GET for short queries.",
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of a SPARQL query endpoint")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        try:
            PrefixMap.parse(value)
        except InvalidTerm as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("default_graph")
    @classmethod
    def _graphs(cls, value: list[str]) -> list[str]:
        for graph in value:
            try:
                check_iri(graph)
            except InvalidTerm as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("language")
    @classmethod
    def _languages(cls, value: list[str]) -> list[str]:
        tags = [tag.strip().lower() for tag in value]
        for tag in tags:
            try:
                check_language(tag)
            except InvalidTerm as exc:
                raise ValueError(str(exc)) from None
        return tags

    def prefix_map(self) -> PrefixMap:
        """The prefix map: configured prefixes, then the built-in ones (rdf, rdfs, owl, xsd, skos)."""
        return PrefixMap.parse(self.prefix)
