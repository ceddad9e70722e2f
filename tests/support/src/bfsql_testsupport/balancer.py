"""HAProxy from Debian in front of ``bfsql serve`` replicas on loopback, for the replica tests and bench_team.py.

:class:`Balancer` writes a configuration from :func:`haproxy_config` (the one docs/deploying.md
shows) and runs ``haproxy`` in the foreground on a free 127.0.0.1 port. It balances round-robin,
says which replica answered in an ``x-served-by`` header, retries a request on another replica
when one refuses the connection or dies before answering (every bfsql tool is read-only and
idempotent, so a retried call is safe), and keeps a legacy session on the replica that opened it
(``stick`` on the ``mcp-session-id`` header), and sends calls only to replicas whose ``/readyz``
answers 200. HAProxy comes from Debian (``tests/team/services.sh``);
without it the tests skip, or fail under ``BFSQL_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from bfsql_testsupport.services import free_port, unavailable, wait_for_port

__all__ = ["Balancer", "haproxy_config"]


def haproxy_config(port: int, replicas: Sequence[int], check_ms: int = 500, frontend: Sequence[str] = ()) -> str:
    """An HAProxy configuration balancing ``replicas`` (ports on 127.0.0.1) behind ``port``.

    ``frontend`` holds more lines of the frontend section (the ``http-request`` rules docs/deploying.md gives).
    """
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p} check inter {check_ms}ms fall 1 rise 1"
                        for i, p in enumerate(replicas, start=1))
    rules = "".join(f"    {line.strip()}\n" for line in frontend)
    return f"""global
    maxconn 512

defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    # bfsql's tools are read-only and idempotent: a call whose replica died can be sent to another.
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    option http-buffer-request

frontend mcp
    bind 127.0.0.1:{port}
{rules}    default_backend bfsql

backend bfsql
    balance roundrobin
    # A replica whose graphs' stores do not all answer (503 from /readyz) gets no calls meanwhile.
    option httpchk GET /readyz
    http-check expect status 200
    # Legacy (session) clients: a session lives in one replica's memory, so its requests go back there.
    stick-table type string len 64 size 100k expire 30m
    stick on req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
    http-response set-header x-served-by %[srv_name]
{servers}
"""


class Balancer:
    """HAProxy on a free 127.0.0.1 port in front of the replicas on ``replicas`` (their ports).

    ``frontend`` holds more lines of its frontend section (see :func:`haproxy_config`).
    """

    def __init__(self, replicas: Sequence[int], frontend: Sequence[str] = ()) -> None:
        self.replicas = list(replicas)
        self.frontend = list(frontend)
        self.port = free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="bfsql-haproxy-"))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The MCP URL behind the balancer."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> Balancer:
        """Check the configuration and start HAProxy; wait until it listens."""
        haproxy = shutil.which("haproxy") or next(
            (str(p) for p in (Path("/usr/sbin/haproxy"),) if p.exists()), None)
        if haproxy is None:
            unavailable("HAProxy", "haproxy is not installed (apt-get install haproxy; tests/team/services.sh)")
        config = self._dir / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.replicas, frontend=self.frontend))
        checked = subprocess.run([haproxy, "-c", "-f", str(config)], capture_output=True, text=True, timeout=60)
        if checked.returncode != 0:
            raise AssertionError(f"haproxy refused the configuration: {checked.stdout}{checked.stderr}")
        log = open(self._dir / "haproxy.log", "wb")
        self._process = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=log, stderr=log)
        log.close()
        wait_for_port(self.port, 30)
        return self

    def log(self) -> str:
        """What HAProxy said."""
        path = self._dir / "haproxy.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stop HAProxy and remove its files (idempotent)."""
        if self._process is not None:
            self._process.terminate()
            self._process.wait(30)
            self._process = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Balancer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
