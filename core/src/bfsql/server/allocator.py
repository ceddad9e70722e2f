"""Handing the memory a heavy call freed back to the system (glibc's ``malloc_trim``).

A walk or an intersection over millions of edges allocates numpy arrays of megabytes, many at once, from
several threads. glibc maps a big block on its own and unmaps it when freed, but it raises that threshold to the
size of each mapped block freed (up to 32 MB), after which such arrays come from its heaps and, freed, stay in the
process. At R-MAT 20 (8.2M edges, the SQLite store) a server held 823 MB after four heavy calls at once, against
455 MB after its first call. Fixing the threshold (``mallopt``) gave the memory back but mapped every array
afresh, page faults included (walks up to 1.5x as long); trimming the heaps once a heavy call has answered costs
5-25 ms in a worker thread and kept 360-380 MB where 490-550 MB stayed (in process, the same calls).

glibc also gives each thread that finds the heaps busy a heap of its own, up to eight a core, and what a heap
keeps after a trim (blocks still in use among free ones) adds up over them. ``bfsql serve`` caps them at
:data:`HEAPS`: at R-MAT 20 (the SQLite store, ``bench_scale.py`` through MCP) the server held 482-488 MB after
the benchmark's calls with glibc's default, 415-447 MB with two heaps (four runs), the calls as fast.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

__all__ = ["HEAPS", "give_back_freed_memory", "limit_heaps"]


HEAPS = 2
"""The C heaps (glibc's arenas) a server's threads share."""

_M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the number of arenas."""


def _libc_function(name: str, argtypes: list[type]) -> Callable[..., int] | None:
    """glibc's function ``name``, or None where the C library has none (macOS; musl's stubs are harmless too)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function  # type: ignore[no-any-return]


_TRIM = _libc_function("malloc_trim", [ctypes.c_size_t])
_MALLOPT = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def limit_heaps() -> bool:
    """Cap the C heaps at :data:`HEAPS` for the rest of the process (call it before threads start), unless
    ``MALLOC_ARENA_MAX`` chose otherwise; whether they were capped."""
    if _MALLOPT is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(_MALLOPT(_M_ARENA_MAX, HEAPS))


def give_back_freed_memory() -> bool:
    """Return the C heaps' free memory to the system (every arena's); whether the C library could."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
