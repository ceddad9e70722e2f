"""Running one function in another thread while the loader goes on with the store."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["InThread"]

T = TypeVar("T")


class InThread(Generic[T]):
    """``function()`` running in a daemon thread from construction; :meth:`result` waits for it.

    Worth it when the caller meanwhile runs statements that release the GIL for their whole
    run (building a SQLite index): the function's Python and numpy work then costs no time of
    its own. A failed load does not wait for the thread (it touches nothing the load cleans up).
    """

    def __init__(self, function: Callable[[], T], name: str) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(function,), name=name, daemon=True)
        self._thread.start()

    def _run(self, function: Callable[[], T]) -> None:
        try:
            self._value = function()
        except BaseException as exc:  # given to the caller by result()
            self._error = exc

    def result(self) -> T:
        """The function's value, or its exception raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
