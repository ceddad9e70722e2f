"""Whether a process holds a file's ``flock``: how bfsql tells a live writer or server from one that is gone.

A process's exclusive ``flock`` on a file goes with the process however it ends (``kill -9``
included), so a file found unlocked has nobody behind it. Standard library only: the ``bfsql``
command asks before it loads anything else (:mod:`bfsql.launch`).
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["held"]


def held(path: str | os.PathLike[str]) -> bool | None:
    """Whether a process holds an exclusive ``flock`` on ``path``; None where that cannot be told (no such
    file, or no ``flock`` on this system)."""
    if fcntl is None:
        return None
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)
    return False
