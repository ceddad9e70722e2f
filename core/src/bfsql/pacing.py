"""Cooperative time slices for CPU-bound engine work on the event loop.

A traversal over an in-memory store can compute for seconds without awaiting anything; meanwhile
no other call, no progress notification and no timeout gets a turn. Long loops of the engine
call :meth:`Pacer.pause` every few thousand items of work: it yields to the event loop once a
slice of time has passed, so that timeouts fire on time under load. While cheap calls (those
that :func:`light_call` marks) are in flight, heavy work sleeps a whole slice at each pause:
the cheap calls then have the loop to themselves and stay fast however many traversals run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

__all__ = ["SLICE_SECONDS", "WORK_BETWEEN_CHECKS", "HeavySlots", "Pacer", "in_light_call", "light_call"]

SLICE_SECONDS = 0.01
"""How long engine work runs before it lets the event loop serve others."""

WORK_BETWEEN_CHECKS = 2048
"""Items of work (nodes or rows) between two looks at the clock: a look costs far less than a slice."""

_light_calls = 0
_in_light_call: ContextVar[bool] = ContextVar("bfsql_in_light_call", default=False)


@contextmanager
def light_call() -> Iterator[None]:
    """Mark a cheap call in flight: heavy work yields whole slices to it until it ends."""
    global _light_calls
    _light_calls += 1
    token = _in_light_call.set(True)
    try:
        yield
    finally:
        _in_light_call.reset(token)
        _light_calls -= 1


def in_light_call() -> bool:
    """Whether the running task works for a cheap call (a backend may give it a lane of its own)."""
    return _in_light_call.get()


class Pacer:
    """Yields to the event loop when the work since the last yield has run a whole slice."""

    __slots__ = ("_due", "_slice", "work")

    def __init__(self, slice_seconds: float = SLICE_SECONDS) -> None:
        self._slice = slice_seconds
        self._due = time.perf_counter() + slice_seconds
        self.work = 0
        """Items done since the clock was last read; callers add to it and pause when it passes
        :data:`WORK_BETWEEN_CHECKS`."""

    async def pause(self) -> None:
        """Let other tasks run if this stretch of work has used its slice (a cancellation lands here)."""
        self.work = 0
        if time.perf_counter() >= self._due:
            await asyncio.sleep(self._slice if _light_calls else 0)
            self._due = time.perf_counter() + self._slice


class HeavySlots(asyncio.Semaphore):
    """A graph's slots for heavy calls: a semaphore that counts the calls holding and waiting for one (metrics)."""

    def __init__(self, slots: int) -> None:
        super().__init__(slots)
        self.running = 0
        """Heavy calls holding a slot now."""
        self.waiting = 0
        """Heavy calls waiting for a slot now."""

    async def acquire(self) -> Literal[True]:
        """Take a slot, counted as waiting until it is had."""
        if self.locked():
            self.waiting += 1
            try:
                await super().acquire()
            finally:
                self.waiting -= 1
        else:
            await super().acquire()
        self.running += 1
        return True

    def release(self) -> None:
        """Give a slot back."""
        self.running -= 1
        super().release()
