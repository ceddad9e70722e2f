"""Running part of a load in a process of its own: a fresh Python running this module's :func:`_main`.

The loader hands a helper a module-level function and its arguments (pickled, through the
helper's standard input) and reads back what the function returned (pickled, through its
standard output). A fresh interpreter, not :mod:`multiprocessing`: nothing of the loading
process is copied (no lock held by one of its threads at a fork) and its main module is not
run again, so a script that calls :func:`~bfsql.loading.sqlite_loader.load_sqlite` needs no
``if __name__ == "__main__"`` guard. The helper imports the same bfsql as the loading process.

A helper runs in a session of its own, so Ctrl-C in a terminal reaches only the loading
process, which stops its helpers (:meth:`HelperProcess.stop`) as it cleans up.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from bfsql.loading.errors import LoadError

__all__ = ["HelperProcess", "processors"]

T = TypeVar("T")

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``bfsql`` package this module belongs to."""

_START = (
    "import sys; root = sys.argv[1]; root in sys.path or sys.path.insert(0, root); "
    "from bfsql.loading.helper_process import _main; _main()"
)
"""The helper's program: this bfsql (from where the loading process has it), then :func:`_main`."""


def processors() -> int:
    """Processors this process may run on; 1 when no helper process can be started (no Python executable known)."""
    if not sys.executable:
        return 1
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class HelperProcess(Generic[T]):
    """``function(*args)`` running in a helper process; :meth:`result` waits for what it returns."""

    def __init__(self, function: Callable[..., T], *args: Any) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _START, _PACKAGE_ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True,
        )
        # Handed over by a thread: the helper takes its arguments only once started (a fraction of a second),
        # and the loading process goes on meanwhile.
        self._handing = threading.Thread(target=self._hand, args=((function, args),), name="bfsql-load-helper",
                                         daemon=True)
        self._handing.start()

    def _hand(self, work: tuple[Callable[..., T], tuple[Any, ...]]) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            pickle.dump(work, stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.close()
        except OSError:
            pass  # the helper is gone: result() says so

    def result(self) -> T:
        """What the function returned; :class:`LoadError` saying what went wrong if it raised or the process died."""
        assert self._process.stdout is not None
        self._handing.join()
        try:
            ok, value = pickle.load(self._process.stdout)
        except (EOFError, pickle.UnpicklingError):
            ok, value = False, f"it stopped unexpectedly (exit code {self._process.wait()})"
        self._process.wait()
        if not ok:
            raise LoadError(f"a helper process of the load failed: {value}")
        result: T = value
        return result

    def stop(self) -> None:
        """End the process (if it still runs) and wait for it."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._handing.join()
        if self._process.stdout is not None:
            self._process.stdout.close()


def _main() -> None:
    """The helper's side: run the function read from standard input, write its result to standard output."""
    result = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to standard error, not into the result
    function, args = pickle.load(sys.stdin.buffer)
    try:
        answer: tuple[bool, Any] = (True, function(*args))
    except Exception as exc:
        answer = (False, f"{type(exc).__name__}: {exc}")
    try:
        pickle.dump(answer, result, protocol=pickle.HIGHEST_PROTOCOL)
        result.close()
    except BrokenPipeError:  # the loading process is gone
        pass
