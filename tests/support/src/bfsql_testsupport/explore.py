"""``bfsql explore`` as a subprocess on a free loopback port, for the explorer's HTTP and browser tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bfsql_testsupport.services import free_port, wait_for_port

__all__ = ["running_explorer"]


@contextmanager
def running_explorer(*args: str, bfsql: Sequence[str] = (sys.executable, "-m", "bfsql")) -> Iterator[str]:
    """Run ``bfsql explore ARGS`` on the demo graph (or what ARGS say); yields the page's base URL.

    ``bfsql``: the command, by default this interpreter's bfsql (another virtualenv's ``bin/bfsql``, say).
    """
    port = free_port()
    proc = subprocess.Popen([*bfsql, "explore", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                wait_for_port(port, timeout=1)
                break
            except TimeoutError:
                continue
        else:
            proc.kill()
            raise RuntimeError(f"bfsql explore did not start: {proc.communicate()[1][-2000:]}")
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
