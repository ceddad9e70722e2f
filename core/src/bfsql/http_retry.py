"""One retry policy for backends whose store answers over HTTP (SPARQL endpoints, JSON-LD APIs).

Which answers are retried, how long to wait, and when to give up, the same for every HTTP store:

* **Statuses**: 429 (rate limited), 502, 503 and 504 (:data:`RETRY_STATUSES`), and a dropped
  connection. All four statuses say "not now" rather than "not this": a rate limit, a store
  restarting or overloaded, or a gateway (proxy, load balancer) that could not reach it in time;
  public endpoints run behind such gateways, which answer 502/504 while the store restarts. Any
  other status (a 500, a 400) would repeat and is never retried. Every request a backend sends is
  a read, so repeating one is always safe.
* **Waits**: what ``Retry-After`` asks (delta-seconds or an HTTP date, :func:`retry_after_seconds`),
  else ``backoff * 2**attempt`` stretched by up to half again at random (jitter), so that the
  callers of a store that failed together do not come back together. A wait longer than
  ``max_wait`` gives up at once instead of stalling the tool call.
* **Budget**: every wait of one call, with the attempts before it, fits in ``budget`` seconds
  (the backend passes its ``query_timeout``): a wait that would end after the budget gives up at
  once, so retries never make a call last much longer than its timeout.

The helper knows no HTTP library: :func:`send_with_retries` calls the backend's ``send`` and
reads the answer's status with the backend's ``status``; a backend turns :class:`RetriesSpent`
into its own error message.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

__all__ = ["RETRY_STATUSES", "RetriesSpent", "RetryPolicy", "retry_after_seconds", "send_with_retries"]

logger = logging.getLogger("bfsql.http")

R = TypeVar("R")

RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""HTTP statuses that are retried (see the module's docstring for why these)."""


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date, never negative); None when
    there is none or it cannot be read."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """How one HTTP store's calls are retried (a backend builds it from its :class:`~bfsql.HttpStoreConfig`)."""

    max_retries: int = 3
    """Retries after the first attempt (0: none)."""
    backoff: float = 0.5
    """Seconds before the first retry when the store asks no wait; doubles per retry."""
    max_wait: float = 30.0
    """Longest single wait; a store that asks for a longer one gets no retry."""
    budget: float | None = None
    """Seconds all attempts and waits of one call may take (None: no bound): a wait ending later is not taken."""
    jitter: bool = True
    """Stretch each backoff wait by a random 0-50 % (never a wait the store asked for)."""

    def backoff_wait(self, attempt: int) -> float:
        """The wait before retry number ``attempt + 1`` when the store asks none."""
        wait = self.backoff * 2**attempt
        if self.jitter:
            wait *= 1 + random.random() / 2
        return float(min(wait, self.max_wait))


class RetriesSpent(Exception):
    """A call that :func:`send_with_retries` gave up on; the backend words its own error from these facts."""

    def __init__(self, attempts: int, status: int | None, asked_wait: float | None = None,
                 over_budget: bool = False, cause: BaseException | None = None, answer: Any = None) -> None:
        super().__init__(f"gave up after {attempts} attempt(s) (status {status}, asked wait {asked_wait})")
        self.attempts = attempts
        """Requests sent."""
        self.status = status
        """The last answer's status; None when the connection dropped (``cause`` says how)."""
        self.asked_wait = asked_wait
        """The wait that was not taken (the store's ``Retry-After`` over ``max_wait``, or a wait over the budget);
        None when the retries ran out."""
        self.over_budget = over_budget
        """The wait was refused because it would end after the call's budget (not because of ``max_wait``)."""
        self.cause = cause
        """The connection error of the last attempt, when it dropped."""
        self.answer = answer
        """The last answer (with its body, for the error message), when there was one."""


async def send_with_retries(
    send: Callable[[], Awaitable[R]],
    status: Callable[[R], tuple[int, str | None]],
    policy: RetryPolicy,
    dropped: tuple[type[BaseException], ...] = (ConnectionError,),
    describe: str = "request",
) -> R:
    """``await send()`` until its answer's status is not in :data:`RETRY_STATUSES`, per ``policy``.

    ``status(answer)`` gives the status and the ``Retry-After`` header of an answer; an exception of
    a ``dropped`` type is a dropped connection, retried too (a ``TimeoutError`` never is: the call's
    time is spent). Returns the first answer with another status (a 200, or a 404 or 500 for the
    caller to judge); raises :class:`RetriesSpent` when it gives up. ``describe`` names the request
    in the log line of each retry.
    """
    started = time.monotonic()
    for attempt in itertools.count():
        answer, code, header, cause = await _attempt(send, status, dropped)
        if cause is None and code not in RETRY_STATUSES:
            return cast(R, answer)
        facts: dict[str, Any] = {"attempts": attempt + 1, "status": code, "cause": cause, "answer": answer}
        if attempt >= policy.max_retries:
            raise RetriesSpent(**facts)
        asked = retry_after_seconds(header)
        if asked is not None and asked > policy.max_wait:
            raise RetriesSpent(asked_wait=asked, **facts)
        wait = policy.backoff_wait(attempt) if asked is None else asked
        if policy.budget is not None and time.monotonic() - started + wait > policy.budget:
            raise RetriesSpent(asked_wait=wait, over_budget=True, **facts)
        logger.info("%s: %s, retrying in %.2fs (retry %d of %d)", describe,
                    code if cause is None else type(cause).__name__, wait, attempt + 1, policy.max_retries)
        await asyncio.sleep(wait)
    raise AssertionError("unreachable")  # itertools.count never ends


async def _attempt(
    send: Callable[[], Awaitable[R]], status: Callable[[R], tuple[int, str | None]],
    dropped: tuple[type[BaseException], ...],
) -> tuple[Any, int | None, str | None, BaseException | None]:
    """One attempt: its answer, status and Retry-After header, or the error of a dropped connection."""
    try:
        answer = await send()
    except dropped as exc:
        if isinstance(exc, TimeoutError):  # aiohttp's read timeouts are connection errors too: never retried
            raise
        return None, None, None, exc
    code, header = status(answer)
    return answer, code, header, None
