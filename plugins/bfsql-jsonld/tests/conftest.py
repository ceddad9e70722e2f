"""Fixtures: the reference server over the standard graph, and small scripted API servers.

* ``reference_url``: one ``bfsql jsonld-serve --backend memory`` subprocess for the whole
  session, publishing the standard graph with pages of 2 relations, batches of 3 ids and
  batch answers of 3 relations (so paging, batch chunking and batch continuations are
  exercised by every conformance check).
* ``reference_for``: more reference servers like it, one over each random graph the
  conformance suite's exact-count check builds.
* ``scripted``: a real aiohttp server on a free loopback port whose answers a test
  scripts path by path, recording every request it receives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from bfsql import Record
from bfsql.testing.standard_graph import write_standard_bundle
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

from jsonld_scripted import ScriptedApi

REFERENCE_PAGE_SIZE = 2
REFERENCE_MAX_BATCH = 3
REFERENCE_BATCH_ROWS = 3


@pytest.fixture(scope="session")
def standard_bundle_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_standard_bundle(tmp_path_factory.mktemp("standard"))


def _start_reference(bundle: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A ``bfsql jsonld-serve --backend memory`` subprocess over ``bundle``, serving; its base URL."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "bfsql",
        "jsonld-serve",
        "--backend",
        "memory",
        "--bundle",
        str(bundle),
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
        wait_for_port(port, timeout=30)
    except TimeoutError as exc:
        _stop(proc)
        unavailable(
            "bfsql jsonld-serve (reference server)",
            f"{exc}; exit code {proc.poll()}; log: {log.read_text(errors='replace')[-2000:]}",
        )
    return proc, f"http://127.0.0.1:{port}"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def reference_url(standard_bundle_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the reference server (a `bfsql jsonld-serve` subprocess) over the standard graph."""
    proc, url = _start_reference(standard_bundle_file, tmp_path_factory.mktemp("reference") / "server.log")
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def reference_for(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[list[Record]], str]]:
    """Base URL of a reference server over some records (the exact-count check's random graphs): one server a
    graph, started when first asked for and kept for the session, so that every way of reading it shares it."""
    work = tmp_path_factory.mktemp("random-references")
    started: dict[str, tuple[subprocess.Popen[bytes], str]] = {}

    def url(records: list[Record]) -> str:
        text = "".join(r.model_dump_json(exclude_none=True) + "\n" for r in records)
        if text not in started:
            bundle = work / f"random-{len(started)}.jsonl"
            bundle.write_text(text, encoding="utf-8")
            started[text] = _start_reference(bundle, bundle.with_suffix(".log"))
        return started[text][1]

    try:
        yield url
    finally:
        for proc, _ in started.values():
            _stop(proc)


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
