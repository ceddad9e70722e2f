"""The retry policy every HTTP store shares (bfsql.http_retry), against a real HTTP server.

A small aiohttp server answers each path with a scripted list of statuses (and Retry-After
headers); an aiohttp client sends through :func:`send_with_retries`, as the SPARQL and JSON-LD
backends do.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bfsql import RETRY_STATUSES, RetriesSpent, RetryPolicy, retry_after_seconds, send_with_retries

FAST = RetryPolicy(max_retries=3, backoff=0.01, max_wait=5.0, jitter=False)


class Scripted:
    """An HTTP server answering each path with the next of its scripted replies (the last one repeats)."""

    def __init__(self) -> None:
        self.replies: dict[str, list[tuple[int, dict[str, str], float]]] = {}
        self.hits: dict[str, list[float]] = {}
        self.url = ""

    def on(self, path: str, *replies: tuple[int, dict[str, str]] | int, delay: float = 0.0) -> None:
        self.replies[path] = [(r, {}, delay) if isinstance(r, int) else (*r, delay) for r in replies]

    async def handle(self, request: web.Request) -> web.Response:
        times = self.hits.setdefault(request.path, [])
        times.append(time.monotonic())
        script = self.replies[request.path]
        status, headers, delay = script[min(len(times), len(script)) - 1]
        if delay:
            await asyncio.sleep(delay)
        return web.Response(status=status, headers=headers, text=f"answer {len(times)}")


@pytest.fixture
async def server() -> AsyncIterator[Scripted]:
    scripted = Scripted()
    app = web.Application()
    app.router.add_get("/{tail:.*}", scripted.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    scripted.url = f"http://127.0.0.1:{port}"
    yield scripted
    await runner.cleanup()


async def fetch(url: str, policy: RetryPolicy, timeout: float = 5.0) -> tuple[int, str]:
    """GET ``url`` through the shared retry policy: the final status and body."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:

        async def send() -> tuple[int, str, str | None]:
            async with session.get(url) as response:
                return response.status, await response.text(), response.headers.get("Retry-After")

        status, body, _ = await send_with_retries(send, lambda answer: (answer[0], answer[2]), policy,
                                                  (aiohttp.ClientConnectionError,))
        return status, body


@pytest.mark.parametrize("status", sorted(RETRY_STATUSES))
async def test_overload_and_gateway_statuses_are_retried_until_an_answer(server: Scripted, status: int) -> None:
    server.on("/x", status, status, 200)
    assert await fetch(f"{server.url}/x", FAST) == (200, "answer 3")
    assert len(server.hits["/x"]) == 3


@pytest.mark.parametrize("status", [400, 404, 500, 501])
async def test_other_statuses_are_answers_never_retried(server: Scripted, status: int) -> None:
    server.on("/x", status, 200)
    assert await fetch(f"{server.url}/x", FAST) == (status, "answer 1")
    assert len(server.hits["/x"]) == 1


async def test_retries_run_out_with_the_last_answer_kept(server: Scripted) -> None:
    server.on("/x", 503)
    with pytest.raises(RetriesSpent) as spent:
        await fetch(f"{server.url}/x", RetryPolicy(max_retries=2, backoff=0.05, jitter=False))
    assert (spent.value.attempts, spent.value.status, spent.value.asked_wait) == (3, 503, None)
    assert spent.value.answer[1] == "answer 3"
    hits = server.hits["/x"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(hits)]
    assert gaps[0] >= 0.045 and gaps[1] >= 0.095, f"backoff 0.05 then 0.1 expected, waited {gaps}"


async def test_retry_after_in_seconds_is_waited(server: Scripted) -> None:
    server.on("/x", (429, {"Retry-After": "1"}), 200)
    assert await fetch(f"{server.url}/x", FAST) == (200, "answer 2")
    first, second = server.hits["/x"]
    assert second - first >= 0.98


async def test_retry_after_as_an_http_date_is_waited(server: Scripted) -> None:
    # An HTTP date has whole seconds: two seconds ahead is at least one second's wait.
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    server.on("/x", (503, {"Retry-After": when}), 200)
    assert await fetch(f"{server.url}/x", FAST) == (200, "answer 2")
    first, second = server.hits["/x"]
    assert second - first >= 0.9


async def test_a_retry_after_longer_than_max_wait_gives_up_at_once(server: Scripted) -> None:
    server.on("/x", (429, {"Retry-After": "3600"}), 200)
    started = time.monotonic()
    with pytest.raises(RetriesSpent) as spent:
        await fetch(f"{server.url}/x", FAST)
    assert (spent.value.attempts, spent.value.asked_wait, spent.value.over_budget) == (1, 3600.0, False)
    assert time.monotonic() - started < 1 and len(server.hits["/x"]) == 1


async def test_the_retries_of_one_call_fit_in_its_budget(server: Scripted) -> None:
    server.on("/x", (503, {"Retry-After": "2"}), 200)
    started = time.monotonic()
    with pytest.raises(RetriesSpent) as spent:
        await fetch(f"{server.url}/x", RetryPolicy(max_retries=3, max_wait=5.0, budget=1.0))
    assert spent.value.over_budget and spent.value.asked_wait == 2.0
    assert time.monotonic() - started < 1 and len(server.hits["/x"]) == 1


async def test_an_unreadable_retry_after_falls_back_to_the_backoff(server: Scripted) -> None:
    server.on("/x", (503, {"Retry-After": "soon"}), 200)
    assert await fetch(f"{server.url}/x", FAST) == (200, "answer 2")


async def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RetriesSpent) as spent:
        await fetch(f"http://127.0.0.1:{port}/x", RetryPolicy(max_retries=2, backoff=0.01))
    assert spent.value.attempts == 3 and spent.value.status is None
    assert isinstance(spent.value.cause, aiohttp.ClientConnectionError)


async def test_a_timeout_is_never_retried(server: Scripted) -> None:
    server.on("/x", 200, delay=2.0)
    with pytest.raises(TimeoutError):
        await fetch(f"{server.url}/x", FAST, timeout=0.3)
    assert len(server.hits["/x"]) == 1


def test_retry_after_forms() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("") is None
    assert retry_after_seconds("soon") is None
    assert 25 <= (retry_after_seconds(email.utils.formatdate(time.time() + 30, usegmt=True)) or 0) <= 31
    assert retry_after_seconds(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0


def test_jitter_only_lengthens_the_backoff_and_max_wait_caps_it() -> None:
    policy = RetryPolicy(backoff=1.0, max_wait=3.0)
    waits: list[Any] = [policy.backoff_wait(attempt) for attempt in (0, 1, 2) for _ in range(20)]
    assert all(1.0 <= w <= 1.5 for w in waits[:20]) and all(2.0 <= w <= 3.0 for w in waits[20:40])
    assert all(w == 3.0 for w in waits[40:])
