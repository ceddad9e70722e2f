"""Who makes a call, and which graphs they may see.

A :class:`Caller` is a principal (an OAuth token's subject, else the client's address, else
the local user of stdio), the graphs it may use (None: every graph) and its token's verified
claims. Running as a caller also names its identity to the stores (:mod:`bfsql.identity`:
principal and claims), which a backend may hand on (PostgreSQL: a role per caller). Over HTTP the server
names the caller of each MCP request from its HTTP request (:class:`CallerMiddleware`, with an
``identify`` function of :mod:`bfsql.server.oauth` or :func:`by_address`); everything a request
runs reads it with :func:`current_caller`. Without one (stdio, in-process calls) the caller is
:data:`LOCAL`, who sees everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bfsql.identity import CallIdentity, identified_as

if TYPE_CHECKING:  # only annotations: a call answered without MCP (bfsql query) never loads the SDK
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from starlette.types import Scope

__all__ = ["LOCAL", "Caller", "CallerMiddleware", "Identify", "as_caller", "by_address", "current_caller"]


@dataclass(frozen=True)
class Caller:
    """A principal and the graphs it may use."""

    principal: str
    graphs: frozenset[str] | None = None
    """The graphs this caller may see; None: every graph."""
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The verified claims of the caller's OAuth token ({} without one)."""

    def sees(self, graph: str) -> bool:
        """Whether this caller may use (and know of) ``graph``."""
        return self.graphs is None or graph in self.graphs


LOCAL = Caller("local")
"""The caller of stdio and in-process calls: the one person running the server."""

_current: ContextVar[Caller] = ContextVar("bfsql_caller", default=LOCAL)

Identify = Callable[["Scope"], Caller]
"""Names the caller of an HTTP request from its ASGI scope (after authentication)."""


def by_address(scope: Scope) -> Caller:
    """The caller of shared-token (or open loopback) HTTP: the client's address, seeing every graph."""
    from bfsql.server.sessions import client_of

    return Caller(f"client:{client_of(scope)}")


def current_caller() -> Caller:
    """The caller of the MCP request being served."""
    return _current.get()


@contextmanager
def as_caller(caller: Caller) -> Iterator[None]:
    """Run what follows as ``caller``; the stores are told its identity (except :data:`LOCAL`'s: the server's own)."""
    token = _current.set(caller)
    try:
        with identified_as(None if caller is LOCAL else CallIdentity(caller.principal, caller.claims)):
            yield
    finally:
        _current.reset(token)


class CallerMiddleware:
    """MCP server middleware: every request runs as the caller its HTTP request names.

    ``initialize`` answers name graphs in the server's instructions; a caller who may not see
    every graph gets instructions naming only its own (``instructions_for``).
    """

    def __init__(self, identify: Identify, instructions_for: Callable[[Caller], str | None]) -> None:
        self.identify = identify
        self.instructions_for = instructions_for

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Run the request as its caller."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        if scope is None:
            return await call_next(ctx)
        caller = self.identify(scope)
        with as_caller(caller):
            result = await call_next(ctx)
        if caller.graphs is not None and isinstance(result, dict) and result.get("instructions"):
            result = {**result, "instructions": self.instructions_for(caller)}  # initialize, server/discover
        return result
