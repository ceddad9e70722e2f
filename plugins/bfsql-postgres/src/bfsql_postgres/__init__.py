"""bfsql-postgres: the PostgreSQL + pgvector backend of bfsql (kgraph schema, read-only).

Installing the distribution registers, through the ``bfsql`` entry point:

* the backend ``postgres`` (``bfsql serve --backend postgres --dsn …`` or ``DATABASE_URL``);
* the commands ``bfsql postgres init-schema`` and ``bfsql postgres load``.

See docs/backends/postgres.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bfsql import hookimpl, lazy_names
from bfsql_postgres.config import ENV_ALIASES, PostgresConfig
from bfsql_postgres.errors import PostgresStoreError

if TYPE_CHECKING:
    import click

    from bfsql_postgres.backend import PostgresBackend

# The backend (and asyncpg) loads when a graph is opened, not when bfsql loads its plugins.
__getattr__ = lazy_names(__name__, {"PostgresBackend": "bfsql_postgres.backend"})

__all__ = ["PostgresBackend", "PostgresConfig", "PostgresStoreError", "register_backends", "register_commands"]


async def _create(config: PostgresConfig) -> PostgresBackend:
    from bfsql_postgres.backend import PostgresBackend

    return await PostgresBackend.create(config)


@hookimpl
def register_backends(register: Any) -> None:
    """Register the ``postgres`` backend."""
    register(
        "postgres",
        _create,
        PostgresConfig,
        "PostgreSQL + pgvector database in the kgraph schema (read-only)",
        env_aliases=ENV_ALIASES,
    )


@hookimpl
def register_commands(cli: click.Group) -> None:
    """Add the ``bfsql postgres`` command group (init-schema, load)."""
    from bfsql_postgres.commands import postgres

    cli.add_command(postgres)
