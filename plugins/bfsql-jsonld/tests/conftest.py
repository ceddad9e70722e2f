"""Fixtures: the reference server over the standard graph, and small scripted API servers.

* ``reference_url``: one ``bfsql jsonld-serve --backend memory`` subprocess for the whole
  session, publishing the standard graph with pages of 2 relations, batches of 3 ids and
  batch answers of 3 relations (so paging, batch chunking and batch continuations are
  exercised by every conformance check).
* ``scripted``: a real aiohttp server on a free loopback port whose answers a test
  scripts path by path, recording every request it receives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bfsql.testing.standard_graph import write_standard_bundle
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

from jsonld_scripted import ScriptedApi

REFERENCE_PAGE_SIZE = 2
REFERENCE_MAX_BATCH = 3
REFERENCE_BATCH_ROWS = 3


@pytest.fixture(scope="session")
def standard_bundle_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_standard_bundle(tmp_path_factory.mktemp("standard"))


@pytest.fixture(scope="session")
def reference_url(standard_bundle_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the reference server (a `bfsql jsonld-serve` subprocess) over the standard graph."""
    port = free_port()
    log = tmp_path_factory.mktemp("reference") / "server.log"
    command = [
        sys.executable,
        "-m",
        "bfsql",
        "jsonld-serve",
        "--backend",
        "memory",
        "--bundle",
        str(standard_bundle_file),
        "--port",
        str(port),
        "--page-size",
        str(REFERENCE_PAGE_SIZE),
        "--max-batch",
        str(REFERENCE_MAX_BATCH),
        "--batch-rows",
        str(REFERENCE_BATCH_ROWS),
    ]
    with open(log, "wb") as output:
        proc = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        try:
            wait_for_port(port, timeout=30)
        except TimeoutError as exc:
            unavailable(
                "bfsql jsonld-serve (reference server)",
                f"{exc}; exit code {proc.poll()}; log: {log.read_text(errors='replace')[-2000:]}",
            )
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedApi]:
    """A started scripted API with a minimal schema document; stopped after the test."""
    api = ScriptedApi()
    api.on("/schema", {"entity_types": ["Gene"], "predicates": ["REGULATES"]})
    await api.start()
    try:
        yield api
    finally:
        await api.stop()
