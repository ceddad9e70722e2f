"""Acknowledging a FalkorDB server's Bolt answers at once (Linux), instead of after the kernel's 40 ms.

FalkorDB's Bolt endpoint writes an answer larger than its 4 kB buffer in several writes, with
Nagle's algorithm on: each write after the first waits until the client acknowledges the one
before. Linux delays that acknowledgement by up to 40 ms in a request/response exchange (it
hopes to send it with the client's next request), so such an answer stalls for about 45 ms: on
the whole HPO most 1-hop statements did (a disease's hop 45.7 ms median, 4.4 ms without the
stall). ``TCP_QUICKACK`` makes the kernel acknowledge at once; it clears the option again after
a while, so it is set anew after every read.

The neo4j driver has no hook for its sockets: :func:`quick_acks` wraps the (private) function
of its asyncio socket that connects, for the ports it is asked to (those of FalkorDB servers).
When the driver's internals change, or off Linux, nothing is wrapped and a warning says so:
the answers stay right, only slower.
"""

from __future__ import annotations

import functools
import logging
import socket
from typing import Any

__all__ = ["armed", "quick_acks"]

logger = logging.getLogger("bfsql_neo4j.quickack")

_ports: set[int] = set()


def quick_acks(port: int) -> bool:
    """Acknowledge at once what Bolt servers on ``port`` send this process; whether it could be arranged."""
    if not _install():
        return False
    _ports.add(port)
    return True


def armed(bolt_socket: Any) -> bool:
    """Whether a driver socket acknowledges at once (for tests)."""
    protocol = bolt_socket._writer.transport.get_protocol()
    return getattr(protocol, "_bfsql_quick_acks", False)


@functools.cache
def _install() -> bool:
    """Wrap the driver's connect function, once; whether it could be."""
    if not hasattr(socket, "TCP_QUICKACK"):
        logger.warning("TCP_QUICKACK is not available here: FalkorDB answers over 4 kB may wait ~40 ms each")
        return False
    try:
        from neo4j._async_compat.network import _bolt_socket

        connect = _bolt_socket.AsyncBoltSocketBase._connect_secure.__func__  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        logger.warning("this neo4j driver's sockets cannot be reached: FalkorDB answers over 4 kB may wait ~40 ms each")
        return False

    async def connecting(cls: Any, resolved_address: Any, *args: Any, **kwargs: Any) -> Any:
        bolt_socket = await connect(cls, resolved_address, *args, **kwargs)
        if resolved_address[1] in _ports:
            _arm(bolt_socket)
        return bolt_socket

    _bolt_socket.AsyncBoltSocketBase._connect_secure = classmethod(connecting)  # type: ignore[method-assign,assignment]
    return True


def _arm(bolt_socket: Any) -> None:
    """Set ``TCP_QUICKACK`` now and after every read of this socket's transport."""
    try:
        transport = bolt_socket._writer.transport
        raw = transport.get_extra_info("socket")
        protocol = transport.get_protocol()
    except AttributeError:
        logger.warning("this neo4j driver's socket has no transport to arm: FalkorDB answers may wait ~40 ms each")
        return
    received = protocol.data_received

    def data_received(data: bytes) -> None:
        received(data)
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:  # the connection is closing
            pass

    try:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    except OSError:
        return
    protocol.data_received = data_received
    protocol._bfsql_quick_acks = True
