"""A real OTLP receiver on loopback for the trace tests: Arize Phoenix, from PyPI.

:class:`Phoenix` runs ``phoenix serve`` (OTLP/HTTP at ``/v1/traces``, spans read back through
its REST API) on free 127.0.0.1 ports, with a working directory of its own, no telemetry, no
external resources and no sandboxes. Phoenix brings dependencies of its own (its own ``mcp``,
OpenTelemetry and web stack), so it is installed once into a virtualenv of its own under the
system temp dir, by the pinned requirement :data:`REQUIREMENT`; without pip access the tests
skip, or fail under ``BFSQL_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from bfsql_testsupport.services import free_port, unavailable

__all__ = ["REQUIREMENT", "Phoenix"]

REQUIREMENT = "arize-phoenix==20.26.1"
"""The Phoenix release the tests run (its REST span listing and OTLP endpoint are what they read)."""


def _installed() -> Path:
    """The Python of a virtualenv holding :data:`REQUIREMENT` (made once per requirement)."""
    key = hashlib.sha256(f"{REQUIREMENT} {sys.version_info[:2]}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"bfsql-phoenix-{key}"
    python = target / "bin" / "python"
    if python.exists():
        return python
    partial = Path(tempfile.mkdtemp(prefix="bfsql-phoenix-"))
    steps = [[sys.executable, "-m", "venv", str(partial)],
             [str(partial / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              REQUIREMENT]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            unavailable("Phoenix (OTLP receiver)", f"{' '.join(step[-2:])} failed: {done.stderr.strip()[-500:]}")
    try:
        os.rename(partial, target)
    except OSError:  # another process installed it first
        shutil.rmtree(partial, ignore_errors=True)
    return python


class Phoenix:
    """Phoenix on free loopback ports; :attr:`traces_url` takes OTLP/HTTP, :meth:`spans` lists what arrived."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.traces_url = f"{self.url}/v1/traces"
        self._python = _installed()
        self._dir = Path(tempfile.mkdtemp(prefix="bfsql-phoenix-run-"))
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> Phoenix:
        """Start Phoenix and wait (up to 120 s: it migrates its database first) until it answers."""
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self._dir), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(free_port()),
               "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
               "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE", "HOME": str(self._dir)}
        log = open(self._dir / "phoenix.log", "ab")
        self._process = subprocess.Popen([str(self._python), "-m", "phoenix.server.main", "serve"], env=env,
                                         stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self._process.poll() is None:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        unavailable("Phoenix (OTLP receiver)", (self._dir / "phoenix.log").read_text(errors="replace")[-1500:])

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix holds for ``project``, as its REST API gives them (OTLP JSON shape)."""
        spans: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            answer = httpx.get(f"{self.url}/v1/projects/{project}/spans/otlpv1", params=params, timeout=30)
            if answer.status_code == 404:
                return spans  # no span has arrived yet, so the project does not exist
            answer.raise_for_status()
            page = answer.json()
            spans.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return spans

    def stop(self) -> None:
        """Stop Phoenix (idempotent)."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(30)
            self._process = None

    def __enter__(self) -> Phoenix:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
