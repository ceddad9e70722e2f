"""Handing the memory a heavy call freed back to the system (glibc's ``malloc_trim``).

A walk or an intersection over millions of edges allocates numpy arrays of megabytes, many at once, from
several threads. glibc maps a big block on its own and unmaps it when freed, but it raises that threshold to the
size of each mapped block freed (up to 32 MB), after which such arrays come from its heaps and, freed, stay in the
process. At R-MAT 20 (8.2M edges, the SQLite store) a server held 823 MB after four heavy calls at once, against
455 MB after its first call. Fixing the threshold (``mallopt``) gave the memory back but mapped every array
afresh, page faults included (walks up to 1.5x as long); trimming the heaps once a heavy call has answered costs
5-25 ms in a worker thread and kept 360-380 MB where 490-550 MB stayed (in process, the same calls).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

__all__ = ["give_back_freed_memory"]


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl's stub is harmless too)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim  # type: ignore[no-any-return]


_TRIM = _malloc_trim()


def give_back_freed_memory() -> bool:
    """Return the C heaps' free memory to the system (every arena's); whether the C library could."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
