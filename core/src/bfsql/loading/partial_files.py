"""The hidden copies a load writes beside a store, and the ones an interrupted load left behind.

A load writes ``.<store>.<token>.loading`` (and its relationships side store,
``.<store>.<token>.relationships.loading``) and renames it over the store at the end. While it
runs it holds an exclusive ``flock`` on that file. A load killed with ``kill -9`` cannot
remove its copy; the lock goes with the process, so the next load of the same store finds the
copy unlocked, knows nobody writes it, and removes it (:func:`remove_stale`). A copy whose
load still runs stays locked and is left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from bfsql.file_locks import held

try:
    import fcntl
except ImportError:  # not on Windows: stale copies are then left for the user to remove
    fcntl = None  # type: ignore[assignment]

__all__ = ["partial_copy", "remove_stale"]

logger = logging.getLogger("bfsql.loading")

SIDE = ".relationships.loading"
"""The ending of a load's relationships side store (:mod:`bfsql.loading.relationship_writer`)."""


@contextlib.contextmanager
def partial_copy(path: Path) -> Iterator[None]:
    """Create ``path`` exclusively (mode 0o666 less the umask, like any new file) and hold its lock while the
    block runs: the mark that a load is writing it."""
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def remove_stale(db: Path) -> list[Path]:
    """Remove the copies of ``db`` that interrupted loads left (no live load holds them); the ones removed."""
    removed: list[Path] = []
    for copy in sorted(db.parent.glob(f".{db.name}.*.loading")):
        if copy.name.endswith(SIDE):
            main = copy.with_name(copy.name.removesuffix(SIDE) + ".loading")
            stale = not main.exists() or held(main) is False
        else:
            stale = held(copy) is False
        if stale:
            with contextlib.suppress(FileNotFoundError):
                size = copy.stat().st_size
                copy.unlink()
                removed.append(copy)
                logger.warning("Removed %s (%.1f MB), left by an interrupted load of %s.", copy, size / 1e6, db)
    return removed
