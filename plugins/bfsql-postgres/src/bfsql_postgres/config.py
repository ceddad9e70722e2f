"""The configuration of the postgres backend: every field is a ``bfsql serve`` flag and an env var."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from bfsql import StoreConfig
from bfsql_postgres.roles import parse_entries, role_name_problem

__all__ = ["ENV_ALIASES", "PostgresConfig"]


class PostgresConfig(StoreConfig):
    """Configuration of the postgres backend (flags ``--dsn``, … ; env ``BFSQL_POSTGRES_<FIELD>``).

    ``query_timeout``, ``max_connections`` and ``description`` are the options every store shares
    (:class:`bfsql.StoreConfig`); ``statement_timeout`` and ``pool_size`` are their old names here.
    """

    deprecated_names: ClassVar[dict[str, str]] = {"statement_timeout": "query_timeout", "pool_size": "max_connections"}

    dsn: str | None = Field(
        default=None,
        description="PostgreSQL connection URI, e.g. postgresql://user:password@host:5432/dbname "
        "(also read from DATABASE_URL). Tables are looked up in the first schema of the search_path; "
        "add ?search_path=NAME to the URI to serve another schema.",
    )
    query_timeout: float = Field(
        default=30.0, gt=0,
        description="Seconds one SQL statement may run before PostgreSQL cancels it (was --statement-timeout).",
    )
    connect_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for a connection.")
    max_connections: int = Field(
        default=10, ge=1, le=100, description="Most connections held open at once (was --pool-size)."
    )
    stored_embedder: str | None = Field(
        default=None,
        description="Name of the embedder (e.g. hashing) that made entity.embedding, for databases built by "
        "other tools; 'bfsql postgres load' records it itself. Setting it requires pgvector and the vectors.",
    )
    max_replica_lag: float | None = Field(
        default=None, gt=0,
        description="When the database is a hot standby: seconds its answers may lag behind the primary; a call "
        "beyond that fails, naming the lag (measured at most once a second). Unset: never checked per call "
        "(describe_schema still warns of stopped or paused replication).",
    )

    roles: list[str] = Field(
        default_factory=list,
        description="A role per caller (identity to the store): PRINCIPAL=ROLE (user:alice=analyst) or "
        "CLAIM_VALUE=ROLE (a value of --role-claim), or ROLE alone (the claim may name ROLE itself). Each call runs "
        "SET LOCAL ROLE in its read-only transaction; a caller matching nothing is refused unless --default-role "
        "is set. The login role must be allowed to SET ROLE to each (checked at start).",
    )
    role_claim: str | None = Field(
        default=None,
        description="Token claim (a string, or a list such as groups) whose values select the caller's role "
        "through --roles entries.",
    )
    default_role: str | None = Field(
        default=None, description="Role of the callers no --roles entry maps (unset: they are refused)."
    )

    @field_validator("roles", mode="before")
    @classmethod
    def _entries(cls, value: Any) -> Any:
        """A configuration file may give ``roles`` as a table: ``{"user:alice" = "analyst"}``."""
        if isinstance(value, dict):
            return [f"{key}={role}" for key, role in value.items()]
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PostgresConfig:
        parse_entries(self.roles)  # ValueError naming a bad entry
        if self.default_role is not None and (problem := role_name_problem(self.default_role)) is not None:
            raise ValueError(f"default_role {problem}")
        if self.role_claim is not None and not self.roles:
            raise ValueError("role_claim needs roles entries naming the roles its values select (CLAIM_VALUE=ROLE, "
                             "or ROLE alone)")
        return self

    @property
    def identity_to_store(self) -> bool:
        """Whether calls run as a role per caller."""
        return bool(self.roles or self.default_role)


ENV_ALIASES: dict[str, tuple[str, ...]] = {"dsn": ("DATABASE_URL",)}
"""Conventional environment variables read after ``BFSQL_POSTGRES_<FIELD>``."""
