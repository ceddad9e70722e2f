"""Helpers for tests that run against real servers started by the tests themselves.

Locally a test may skip when its server cannot be installed or started; in CI
(``BFSQL_REQUIRE_SERVICES=1``) a missing server fails the test instead.
"""

from __future__ import annotations

import os
import socket
import time
from typing import NoReturn

import pytest

__all__ = ["free_port", "services_required", "unavailable", "wait_for_port"]


def services_required() -> bool:
    """Whether a missing test server must fail (CI) rather than skip."""
    return os.environ.get("BFSQL_REQUIRE_SERVICES", "") not in ("", "0", "false", "no")


def unavailable(service: str, reason: str) -> NoReturn:
    """Skip (locally) or fail (with BFSQL_REQUIRE_SERVICES=1) because ``service`` is missing."""
    message = f"{service} is not available: {reason}"
    if services_required():
        pytest.fail(message + " (BFSQL_REQUIRE_SERVICES=1, so this is a failure)", pytrace=False)
    pytest.skip(message)


def free_port(below: int | None = None) -> int:
    """A free TCP port on 127.0.0.1 (optionally below ``below``, e.g. 32768 for FalkorDB's Bolt port)."""
    for _ in range(200):
        with socket.socket() as sock:
            if below is None:
                sock.bind(("127.0.0.1", 0))
                return int(sock.getsockname()[1])
            port = 20000 + (os.getpid() * 7919 + time.monotonic_ns()) % (below - 20000)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port found")


def wait_for_port(port: int, timeout: float = 60.0, host: str = "127.0.0.1") -> None:
    """Wait until something accepts connections on ``host:port``; TimeoutError otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(1.0)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:g}s")
