"""The configuration of the postgres backend: every field is a ``bfsql serve`` flag and an env var."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["ENV_ALIASES", "PostgresConfig"]


class PostgresConfig(BaseModel):
    """Configuration of the postgres backend (flags ``--dsn``, … ; env ``BFSQL_POSTGRES_<FIELD>``)."""

    dsn: str | None = Field(
        default=None,
        description="PostgreSQL connection URI, e.g. postgresql://user:password@host:5432/dbname "
        "(also read from DATABASE_URL). Tables are looked up in the first schema of the search_path; "
        "add ?search_path=NAME to the URI to serve another schema.",
    )
    statement_timeout: float = Field(
        default=30.0, gt=0, description="Seconds one SQL statement may run before PostgreSQL cancels it."
    )
    connect_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for a connection.")
    pool_size: int = Field(default=10, ge=1, le=100, description="Most connections held open at once.")
    stored_embedder: str | None = Field(
        default=None,
        description="Name of the embedder (e.g. hashing) that made entity.embedding, for databases built by "
        "other tools; 'bfsql postgres load' records it itself. Setting it requires pgvector and the vectors.",
    )
    description: str | None = Field(
        default=None, description="graph_description text shown by describe_schema."
    )
    max_replica_lag: float | None = Field(
        default=None, gt=0,
        description="When the database is a hot standby: seconds its answers may lag behind the primary; a call "
        "beyond that fails, naming the lag (measured at most once a second). Unset: never checked per call "
        "(describe_schema still warns of stopped or paused replication).",
    )


ENV_ALIASES: dict[str, tuple[str, ...]] = {"dsn": ("DATABASE_URL",)}
"""Conventional environment variables read after ``BFSQL_POSTGRES_<FIELD>``."""
