"""Whether the server bfsql reads is a hot standby that follows its primary, and how far behind it is.

bfsql can read a streaming hot standby instead of the primary (docs/deploying.md, *Scaling
reads*): its answers are the primary's as of the last commit the standby replayed. Three things
make them stale, and are said in plain words (:func:`problems`): replication stopped (no WAL
receiver streams: the primary is down or unreachable), WAL replay paused, and a lag beyond
``max_replica_lag``, the staleness a deployment accepts.

The lag is an upper bound of how old the standby's view is, read on the standby alone:

* 0 while it streams and has replayed all the WAL it received, however long the primary has
  been idle (the age of the last replayed commit would grow on an idle primary);
* otherwise the age of the last commit it replayed (``pg_last_xact_replay_timestamp``). A standby
  that received WAL it has not replayed yet is looked at once more :data:`SECOND_LOOK` later:
  when it has replayed by then what it had received, it is keeping up (a long transaction or a
  write arriving, not lag), and the lag is the time between the two looks.

With ``max_replica_lag`` set, :meth:`ReplicaWatch.check` runs before the backend's statements, at
most once every :data:`CHECK_INTERVAL` seconds, and fails them while the lag is beyond it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bfsql import BackendFailure

__all__ = ["CHECK_INTERVAL", "SECOND_LOOK", "STATE_SQL", "Look", "ReplicaWatch", "lag_problem", "measure", "problems"]

CHECK_INTERVAL = 1.0
"""Seconds a measured lag stands for the calls that follow before it is measured again."""
SECOND_LOOK = 0.1
"""Seconds between the two looks at a standby that has WAL left to replay."""

STATE_SQL = """
SELECT pg_is_in_recovery() AS standby,
       receiver.pid IS NOT NULL AS receiving,
       receiver.status::text AS status,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END AS paused,
       pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')::bigint AS received,
       pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint AS replayed,
       extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 AS since_replay
FROM (SELECT) AS one LEFT JOIN pg_stat_wal_receiver AS receiver ON true
"""
"""One look at the server's replication state (``received`` and ``replayed`` are WAL positions in bytes)."""

_ADVICE = "Try again once it has caught up, or read from the primary or another standby (docs/deploying.md)."

Read = Callable[..., Awaitable[list[Any]]]
"""Runs one statement on a pooled connection and returns its rows."""


@dataclass(frozen=True)
class Look:
    """One reading of :data:`STATE_SQL`."""

    standby: bool
    """The server is in recovery: a standby (a primary, or a promoted standby, is never stale)."""
    receiving: bool
    """A WAL receiver process runs."""
    status: str | None
    """Its status (``streaming``, ``starting``, ``waiting`` …); None without a receiver, or when the role may not
    see it (without ``pg_read_all_stats``)."""
    paused: bool
    """WAL replay is paused (``pg_wal_replay_pause()``)."""
    received: int | None
    """The WAL position received from the primary; None when none was received since the standby started."""
    replayed: int | None
    """The WAL position replayed."""
    since_replay: float | None
    """Seconds since the primary committed the last transaction replayed here; None when none was replayed since
    the standby started."""

    @property
    def streaming(self) -> bool:
        """The WAL receiver streams from the primary (a running one whose status the role may not see counts)."""
        return self.status == "streaming" or (self.receiving and self.status is None)

    @property
    def caught_up(self) -> bool:
        """Streaming, and everything received is replayed."""
        return self.streaming and self.received is not None and (self.replayed or 0) >= self.received


async def _look(read: Read) -> Look:
    rows = await read(STATE_SQL)
    return Look(**dict(rows[0]))


async def measure(read: Read, max_lag: float | None) -> tuple[Look, float | None]:
    """The server's state and its lag in seconds (0 on a primary; None when unknown: see the module).

    The second look is taken only when it could bring the lag within ``max_lag``.
    """
    first = await _look(read)
    if not first.standby or first.caught_up:
        return first, 0.0
    lag = first.since_replay
    if max_lag is None or not first.streaming or (lag is not None and lag <= max_lag):
        return first, lag
    started = time.monotonic()
    await asyncio.sleep(SECOND_LOOK)
    second = await _look(read)
    if second.streaming and (second.replayed or 0) >= (first.received or 0):
        return second, time.monotonic() - started
    return second, second.since_replay


def _ago(seconds: float | None) -> str:
    return "none replayed since it started" if seconds is None else f"{seconds:.1f} s ago"


def lag_problem(where: str, lag: float | None, max_lag: float) -> str:
    """The sentence of a lag beyond ``max_lag``."""
    behind = "an unknown time" if lag is None else f"up to {lag:.1f} s"
    return (f"The PostgreSQL standby at {where} lags {behind} behind its primary, more than max_replica_lag "
            f"({max_lag:g} s): its answers could miss the graph's latest changes.")


def problems(where: str, look: Look, lag: float | None, max_lag: float | None) -> list[str]:
    """What makes the answers of the server at ``where`` stale, one sentence each: the lag beyond ``max_lag``,
    replication stopped, replay paused."""
    if not look.standby:
        return []
    found = []
    if max_lag is not None and (lag is None or lag > max_lag):
        found.append(lag_problem(where, lag, max_lag))
    if not look.streaming:
        receiver = f"its WAL receiver is {look.status}" if look.receiving else "no WAL receiver runs"
        found.append(f"The PostgreSQL standby at {where} is not streaming from its primary ({receiver}): it "
                     f"answers with the graph as of its last replayed commit ({_ago(look.since_replay)}).")
    if look.paused:
        found.append(f"WAL replay is paused on the PostgreSQL standby at {where}: its answers stop following its "
                     "primary until pg_wal_replay_resume() is run there.")
    return found


class ReplicaWatch:
    """The replication state of the server behind a pool: its problems, and the check of ``max_lag``."""

    def __init__(self, read: Read, where: str, max_lag: float | None) -> None:
        """``read`` runs a statement on the pool; ``where`` names the server; ``max_lag`` is max_replica_lag."""
        self.read = read
        self.where = where
        self.max_lag = max_lag
        self._checked_at = -CHECK_INTERVAL
        self._stale: str | None = None
        self._lock = asyncio.Lock()

    async def problems(self) -> list[str]:
        """What makes the server's answers stale now (see :func:`problems`); [] on a primary."""
        look, lag = await measure(self.read, self.max_lag)
        return problems(self.where, look, lag, self.max_lag)

    async def check(self) -> None:
        """:class:`~bfsql.BackendFailure` naming the lag while it is beyond ``max_lag``; nothing without one.

        The lag is measured at most once every :data:`CHECK_INTERVAL` seconds, by one call at a time.
        """
        if self.max_lag is None:
            return
        if time.monotonic() - self._checked_at >= CHECK_INTERVAL:
            async with self._lock:
                if time.monotonic() - self._checked_at >= CHECK_INTERVAL:
                    look, lag = await measure(self.read, self.max_lag)
                    beyond = look.standby and (lag is None or lag > self.max_lag)
                    self._stale = " ".join(problems(self.where, look, lag, self.max_lag)) if beyond else None
                    self._checked_at = time.monotonic()
        if self._stale is not None:
            raise BackendFailure(self._stale, _ADVICE)
