"""Who a call is for, as a store may see it: the seam that lets a store apply each caller's own permissions.

The server names the caller of every MCP request over HTTP (:mod:`bfsql.server.callers`): its
principal (``user:SUBJECT`` with OAuth, ``client:ADDRESS`` with the shared token) and, under
OAuth, the verified claims of its token. While the request runs, :func:`call_identity` returns
them as a :class:`CallIdentity`, in every task and worker thread the call starts (a context
variable). Outside a request (start-up, ``/readyz``, stdio, in-process calls) it returns None:
the server itself is asking, with its own credentials.

A backend that passes the identity to its store (PostgreSQL: a role per caller, see
docs/backends/postgres.md) reads it in each statement it runs, and says which store identity
the current call has through :meth:`~bfsql.GraphBackend.store_identity`, so that the graph's
cache never answers one identity from what another read. A backend that ignores it serves
every caller the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["CallIdentity", "call_identity", "identified_as"]


@dataclass(frozen=True)
class CallIdentity:
    """The principal a call is made for, and the verified claims of its token ({} without one)."""

    principal: str
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The access token's claims as verified (``sub``, ``scope``, custom claims such as a role or groups)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))


_current: ContextVar[CallIdentity | None] = ContextVar("bfsql_call_identity", default=None)


def call_identity() -> CallIdentity | None:
    """The identity of the call being run; None when the server itself asks (start-up, stdio, health checks)."""
    return _current.get()


@contextmanager
def identified_as(identity: CallIdentity | None) -> Iterator[None]:
    """Run what follows for ``identity`` (the server does this around each request; tests and embedders may too)."""
    token = _current.set(identity)
    try:
        yield
    finally:
        _current.reset(token)
