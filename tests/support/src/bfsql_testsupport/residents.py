"""Finding the resident processes that ``bfsql.launch`` leaves behind, for the tests and bench_startup.py."""

from __future__ import annotations

from pathlib import Path


def residents_of(runtime: Path) -> list[int]:
    """The ids of the resident processes whose sockets are in ``runtime`` (their command line names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"bfsql.launch" in command and str(runtime).encode() in command:
            found.append(int(entry.name))
    return found
