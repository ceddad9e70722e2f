"""The concurrency helpers backends and the engine use: bounded gathering, and cancelling siblings on failure."""

from __future__ import annotations

import asyncio

import pytest

from bfsql.backend import gather_bounded, gather_or_cancel


async def test_gather_or_cancel_returns_results_in_order() -> None:
    async def later(value: int, delay: float) -> int:
        await asyncio.sleep(delay)
        return value

    assert await gather_or_cancel(later(1, 0.02), later(2, 0.0), later(3, 0.01)) == [1, 2, 3]


async def test_the_first_failure_cancels_the_siblings_before_it_is_raised() -> None:
    cancelled: list[str] = []

    async def slow(name: str) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    async def failing() -> None:
        await asyncio.sleep(0.01)
        raise ConnectionError("the server went away")

    with pytest.raises(ConnectionError, match="went away"):
        await gather_or_cancel(slow("a"), failing(), slow("b"))
    assert sorted(cancelled) == ["a", "b"]  # already stopped when the error arrives


async def test_gather_bounded_limits_concurrency_and_leaves_out_missing_keys() -> None:
    running = peak = 0

    async def fetch(key: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.005)
        running -= 1
        if key % 3 == 0:
            raise KeyError(key)
        return key * 10

    found = await gather_bounded([5, 1, 3, 2, 5, 4], fetch, concurrency=2)
    assert found == {5: 50, 1: 10, 2: 20, 4: 40} and list(found) == [5, 1, 2, 4]
    assert peak == 2


async def test_gather_bounded_stops_the_other_fetches_on_a_real_error() -> None:
    started: list[int] = []

    async def fetch(key: int) -> int:
        started.append(key)
        if key == 0:
            raise RuntimeError("backend down")
        await asyncio.sleep(30)
        return key

    with pytest.raises(RuntimeError, match="backend down"):
        await asyncio.wait_for(gather_bounded(range(10), fetch, concurrency=4), 5)
    assert len(started) < 10  # the fetches in flight were cancelled (no 30 s wait), the queued ones never started
