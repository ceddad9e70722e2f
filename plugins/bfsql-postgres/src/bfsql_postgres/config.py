"""The configuration of the postgres backend: every field is a ``bfsql serve`` flag and an env var."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from bfsql import StoreConfig

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


ENV_ALIASES: dict[str, tuple[str, ...]] = {"dsn": ("DATABASE_URL",)}
"""Conventional environment variables read after ``BFSQL_POSTGRES_<FIELD>``."""
