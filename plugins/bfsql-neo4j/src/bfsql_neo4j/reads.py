"""Running read statements over Bolt: one read transaction each, bounded in time, errors made clear.

Read-only by construction: every session is opened with ``default_access_mode=READ_ACCESS``
and every statement runs through ``execute_read``. Each statement has a server-side
transaction timeout and a client-side deadline; driver errors become
:class:`~bfsql.BackendFailure` with a hint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import neo4j
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

from bfsql import BackendFailure, StoreTimeout, gather_or_cancel
from bfsql_neo4j.dialect import Dialect

__all__ = ["BoltReads"]

logger = logging.getLogger(__name__)

DEADLINE_MARGIN = 1.0
"""Seconds the client waits beyond the server-side transaction timeout before giving up."""


class BoltReads:
    """Read statements against one database of one Bolt server; rows are lists of values, in column order."""

    def __init__(
        self, driver: neo4j.AsyncDriver, dialect: Dialect, uri: str, database: str | None, timeout: float
    ) -> None:
        """Read through ``driver``; ``uri`` only names the server in error messages."""
        self.driver = driver
        self.dialect = dialect
        self.uri = uri
        self.database = database
        self.timeout = timeout

    async def read(self, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """Run one read statement in a read transaction, with a timeout; rows as lists of values."""
        rows: list[list[Any]] = await self._run(query, params, as_maps=False)
        return rows

    async def read_maps(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """:meth:`read`, rows as dicts keyed by column name."""
        rows: list[dict[str, Any]] = await self._run(query, params, as_maps=True)
        return rows

    async def _run(self, query: str, params: dict[str, Any], as_maps: bool) -> list[Any]:
        encoded = self.dialect.encode(params)

        @neo4j.unit_of_work(timeout=self.timeout)
        async def work(tx: neo4j.AsyncManagedTransaction) -> list[Any]:
            result = await tx.run(query, encoded)
            return await (result.data() if as_maps else result.values())

        async def session_work() -> list[Any]:
            async with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
                return await session.execute_read(work)

        try:
            return await asyncio.wait_for(session_work(), self.timeout + DEADLINE_MARGIN)
        except TimeoutError:
            raise StoreTimeout(
                f"The Bolt server at {self.uri} did not answer within {self.timeout:g}s.",
                "Try a smaller query, or raise --query-timeout.",
            ) from None
        except AuthError as exc:
            raise BackendFailure(
                f"The Bolt server at {self.uri} refused the credentials: {exc.message}.",
                "Check NEO4J_USERNAME / NEO4J_PASSWORD.",
            ) from None
        except ServiceUnavailable as exc:
            raise BackendFailure(
                f"Cannot reach the Bolt server at {self.uri}: {exc}.",
                "Check that the server is running and NEO4J_URI is right.",
            ) from None
        except Neo4jError as exc:
            raise BackendFailure(
                f"The Bolt server failed a read ({exc.code}: {exc.message}).", "Try again; see the server's log."
            ) from None
        except DriverError as exc:
            raise BackendFailure(f"The Bolt driver failed: {type(exc).__name__}: {exc}.", "Try again.") from None

    async def read_chunked(
        self, query: str, key: str, items: Sequence[Any], max_items: int, params: dict[str, Any] | None = None
    ) -> list[list[Any]]:
        """Run ``query`` with ``items`` as parameter ``key``: one statement, or one per chunk when they do not fit.

        A chunk holds at most ``max_items`` items and fits the server's message budget;
        chunks run concurrently and their rows come back in chunk order. An item too
        large for any statement is left out (logged): it matches nothing.
        """
        params = params or {}
        chunks, too_big = self.dialect.chunks(query, key, items, params, max_items)
        if too_big:
            logger.warning(
                "neo4j backend: %d value(s) too large for %s, treated as unknown", len(too_big), self.dialect.name.value
            )
        if len(chunks) == 1:
            return await self.read(query, {**params, key: chunks[0]})
        answers = await gather_or_cancel(*(self.read(query, {**params, key: chunk}) for chunk in chunks))
        return [row for rows in answers for row in rows]
