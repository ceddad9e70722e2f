"""Errors of the postgres backend and loader, each with a hint saying what to do."""

from __future__ import annotations

from urllib.parse import urlsplit

from bfsql import BfsqlError

__all__ = ["PostgresStoreError", "describe_dsn"]


class PostgresStoreError(BfsqlError):
    """The database cannot be reached, or does not hold the kgraph schema bfsql reads."""

    code = "store_error"


def describe_dsn(dsn: str) -> str:
    """``host:port/dbname`` of a connection URI, never its password (for error messages)."""
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or "localhost"
        port = parts.port or 5432
    except ValueError:
        return "the configured database"
    database = parts.path.lstrip("/") or parts.username or "(default database)"
    return f"{host}:{port}/{database}"
