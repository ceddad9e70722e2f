"""Configuration of the ``jsonld`` backend: every field is a ``bfsql serve`` flag and a ``BFSQL_JSONLD_*`` variable."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, SecretStr, field_validator, model_validator

from bfsql import HttpStoreConfig
from bfsql_jsonld.urls import UrlTemplate

__all__ = ["JsonLdConfig"]


class JsonLdConfig(HttpStoreConfig):
    """How to reach a JSON-LD REST API and how to read its documents.

    ``query_timeout``, ``max_connections``, ``description`` and the retry options are the ones every
    HTTP store shares (:class:`bfsql.HttpStoreConfig`); ``request_timeout`` is the old name of
    ``query_timeout``.
    """

    deprecated_names: ClassVar[dict[str, str]] = {"request_timeout": "query_timeout"}

    base_url: str = Field(description="Base URL of the JSON-LD REST API, e.g. http://127.0.0.1:8080")
    entity_url: str = Field(default="/entities/{id}", description="URL template of one entity document")
    edges_from_url: str = Field(
        default="/entities/{id}/relations?direction=out", description="URL template of an entity's outgoing relations"
    )
    edges_to_url: str = Field(
        default="/entities/{id}/relations?direction=in", description="URL template of an entity's incoming relations"
    )
    edges_url: str = Field(
        default="",
        description="URL template of all an entity's relations, both directions, in one list "
        "(one request per entity and hop); empty: --edges-from-url and --edges-to-url",
    )
    search_url: str = Field(
        default="/entities?q={q}&types={types}&limit={limit}", description="URL template of entity search"
    )
    search_limit: int = Field(
        default=100, ge=1, le=10_000,
        description="Most hits asked of the API in one search request (APIs cap their page size); more come from "
        "its next pages",
    )
    relation_url: str = Field(
        default="/relations?subject={subject}&predicate={predicate}&object={object}",
        description="URL template of one relation's metadata",
    )
    schema_url: str = Field(
        default="/schema", description="URL of the schema document; empty: the API has none (empty, partial schema)"
    )
    list_separator: str | None = Field(
        default=None, description="Join list values (search types) with this; default: repeat the query parameter"
    )
    auth_header: SecretStr | None = Field(
        default=None, description="Header sent to the API, 'Name: value' (e.g. 'Authorization: Bearer X')"
    )
    api_token: SecretStr | None = Field(
        default=None, description="Bearer token sent to the API as 'Authorization: Bearer'"
    )
    max_connections: int = Field(default=16, ge=1, le=256, description="HTTP requests in flight at once")
    max_pages: int = Field(default=1000, ge=1, description="Pages followed for one list; more is an error")
    max_response_mb: float = Field(default=64.0, gt=0, description="Largest response body accepted, in MiB")
    context: str | None = Field(
        default=None,
        description="Client @context (file or inline JSON): types, predicates and keys are compacted with it",
    )
    expand_context: str | None = Field(
        default=None, description="@context (file or inline JSON) applied before each document's own"
    )
    context_map: list[str] = Field(
        default_factory=list, description="Local copies of remote contexts, URL=FILE (repeatable)"
    )
    allow_remote_contexts: bool = Field(
        default=False, description="Fetch remote @context URLs that --context-map does not provide"
    )
    use_batch: bool = Field(default=True, description="Use the batch endpoints the API advertises in its schema")

    @field_validator("base_url")
    @classmethod
    def _absolute_base(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

    @field_validator("auth_header")
    @classmethod
    def _header_shape(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            name, sep, content = value.get_secret_value().partition(":")
            if not sep or not name.strip() or not content.strip() or any(c.isspace() for c in name.strip()):
                raise ValueError("must look like 'Name: value', e.g. 'Authorization: Bearer TOKEN'")
        return value

    @field_validator("context_map")
    @classmethod
    def _mapping_shape(cls, value: list[str]) -> list[str]:
        for item in value:
            url, sep, path = item.partition("=")
            if not sep or not url or not path:
                raise ValueError(f"entries must look like URL=FILE, got {item!r}")
        return value

    @model_validator(mode="after")
    def _templates_parse(self) -> JsonLdConfig:
        for template in self.templates().values():
            template.check()
        return self

    def templates(self) -> dict[str, UrlTemplate]:
        """The URL templates, resolved against ``base_url``, by name (``edges_url`` only when given)."""
        required = {
            "entity_url": {"id"},
            "edges_from_url": {"id"},
            "edges_to_url": {"id"},
            "edges_url": {"id"},
            "search_url": {"q"},
            "relation_url": {"subject", "predicate", "object"},
        }
        if not self.edges_url:
            del required["edges_url"]
        allowed = {"search_url": {"q", "types", "limit"}}
        return {
            name: UrlTemplate(
                self.base_url, getattr(self, name), name, required[name], allowed.get(name, required[name])
            )
            for name in required
        }

    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate requests to the API (only ever sent to its origin)."""
        headers: dict[str, str] = {}
        if self.api_token:
            headers["Authorization"] = f"Bearer {self.api_token.get_secret_value()}"
        if self.auth_header:
            name, _, value = self.auth_header.get_secret_value().partition(":")
            headers[name.strip()] = value.strip()
        return headers
