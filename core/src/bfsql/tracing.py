"""OpenTelemetry spans around the work of a tool call: one per backend primitive call, one per statement.

The MCP SDK opens a span per tool call (``tools/call NAME``), continuing the caller's W3C
``traceparent`` from the request's ``_meta``; the graph opens a child span for each primitive
call that reaches its backend (cache hits do not), and a backend may open one per statement it
sends (:func:`statement_span`; the PostgreSQL backend does). Only the OpenTelemetry API is used
here: every span is a no-op until an SDK is installed, by ``bfsql serve --otlp-endpoint``
(:mod:`bfsql.server.trace_export`) or by the application embedding bfsql.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

# OpenTelemetry's API is imported by the first span made, not with this module: a process that has not imported it
# (one call from the terminal) cannot be tracing, and its import is some 5 ms of every `bfsql query`.

__all__ = ["STATEMENT_CHARS", "primitive_span", "statement_span", "tracing"]

_NO_SPAN = nullcontext()
_current: tuple[object, Tracer] | None = None

STATEMENT_CHARS = 2000
"""Longest statement text a span keeps (the query, never its parameters)."""


def tracing() -> bool:
    """Whether this call is traced: its current span records (only an installed SDK's sampled spans do).

    A span of an untraced call would record nothing and still cost 10-25 µs to make. (Asking for
    the tracer provider instead reads the process environment on every call while none is set.)
    """
    trace = sys.modules.get("opentelemetry.trace")  # not imported: no SDK installed, no span current
    return trace is not None and bool(trace.get_current_span().is_recording())


def _tracer() -> Tracer:
    """bfsql's tracer from the installed provider itself, kept per provider.

    A tracer taken before the SDK is installed is a proxy that forwards every span it starts.
    """
    from opentelemetry import trace

    global _current
    provider = trace.get_tracer_provider()
    if _current is None or _current[0] is not provider:
        _current = (provider, provider.get_tracer("bfsql"))
    return _current[1]


def primitive_span(graph: str, primitive: str) -> AbstractContextManager[Any]:
    """The span of one primitive call a graph's backend answers (the current span while it runs)."""
    if not tracing():
        return _NO_SPAN
    from opentelemetry.trace import SpanKind

    return _tracer().start_as_current_span(
        f"bfsql.primitive {primitive}", kind=SpanKind.INTERNAL,
        attributes={"bfsql.graph": graph, "bfsql.primitive": primitive},
    )


def statement_span(system: str, statement: str) -> AbstractContextManager[Any]:
    """The span of one statement a backend sends to its store (``system``: ``postgresql``, ``sparql`` …).

    The statement's text is kept (clipped to :data:`STATEMENT_CHARS`); its parameters, which carry
    the caller's ids and search texts, are not. A statement has no spans of its own, so its span
    is never made the current one (which would cost a context switch in and out per statement).
    """
    if not tracing():
        return _NO_SPAN
    from opentelemetry.trace import SpanKind

    return _LeafSpan(_tracer().start_span(
        f"{system} query", kind=SpanKind.CLIENT,
        attributes={"db.system.name": system, "db.query.text": statement[:STATEMENT_CHARS]},
    ))


class _LeafSpan:
    """Ends a span when its block ends; an exception is recorded on it and marks it failed."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def __enter__(self) -> Span:
        return self.span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, f"{kind.__name__ if kind else 'Error'}: {error}"))
        self.span.end()
