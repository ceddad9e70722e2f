"""Fault-injection helpers for reliability tests: a background loop, a slowing TCP proxy, the served process.

A backend's reliability tests stop, kill and restart its real server while a ``bfsql serve``
subprocess keeps a session open (see docs/reliability.md). These helpers are the parts that
do not depend on the server: :class:`SlowProxy` holds the server's answers so a traversal is
surely in flight when the server dies, and :class:`MarkedProcess` finds the ``bfsql serve``
subprocess that a client session started, so the test can check that it outlived the fault.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from bfsql_testsupport.services import free_port

__all__ = ["MARK_VARIABLE", "BackgroundLoop", "MarkedProcess", "SlowProxy", "new_mark", "rss_kb"]

MARK_VARIABLE = "BFSQL_RELIABILITY_MARK"
"""The environment variable by which :class:`MarkedProcess` recognises a subprocess."""


def new_mark() -> dict[str, str]:
    """The environment of this process plus a fresh :data:`MARK_VARIABLE`, for one ``bfsql serve`` subprocess."""
    return {**os.environ, MARK_VARIABLE: uuid.uuid4().hex}


class MarkedProcess:
    """The process whose environment holds ``MARK_VARIABLE=mark`` (found through Linux's /proc)."""

    def __init__(self, env: dict[str, str]) -> None:
        wanted = f"{MARK_VARIABLE}={env[MARK_VARIABLE]}".encode()
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                    self.pid = int(entry.name)
                    return
            except OSError:
                continue
        raise LookupError(f"no process marked {env[MARK_VARIABLE]}")

    def is_running(self) -> bool:
        """Whether the process still exists and is not a zombie."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state not in ("Z", "X")



def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of a process from /proc, in KiB: ``VmRSS`` (now) or ``VmHWM`` (its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


class BackgroundLoop:
    """An event loop in a daemon thread, for servers the synchronous tests drive."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> BackgroundLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        async def cancel_the_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.run(cancel_the_rest())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 30.0) -> Any:
        """Run ``coro`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


class SlowProxy:
    """A TCP proxy in front of a port that can hold every chunk the server sends for ``delay`` seconds."""

    def __init__(self, loop: BackgroundLoop, upstream_port: int) -> None:
        self._loop = loop
        self.upstream_port = upstream_port
        self.port = free_port()
        self.delay = 0.0
        self.sent = 0
        """Chunks forwarded from the client to the server."""
        self.refused = 0
        """Client connections dropped because the server was not there."""
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> SlowProxy:
        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

        self._loop.run(start())
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()

        self._loop.run(stop())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            self.refused += 1
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        pipes = [
            asyncio.ensure_future(self._pipe(reader, up_writer, upstream=True)),
            asyncio.ensure_future(self._pipe(up_reader, writer, upstream=False)),
        ]
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
            for end in (writer, up_writer):
                end.transport.abort()
                self._writers.discard(end)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: bool) -> None:
        try:
            while data := await reader.read(65536):
                if upstream:
                    self.sent += 1
                elif self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        except OSError:
            pass  # a reset connection ends the pipe; the handler closes both ends
