"""OpenTelemetry spans around the work of a tool call: one per backend primitive call, one per statement.

The MCP SDK opens a span per tool call (``tools/call NAME``), continuing the caller's W3C
``traceparent`` from the request's ``_meta``; the graph opens a child span for each primitive
call that reaches its backend (cache hits do not), and a backend may open one per statement it
sends (:func:`statement_span`; the PostgreSQL backend does). Only the OpenTelemetry API is used
here: every span is a no-op until an SDK is installed, by ``bfsql serve --otlp-endpoint``
(:mod:`bfsql.server.tracing`) or by the application embedding bfsql.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import ProxyTracerProvider, SpanKind

__all__ = ["STATEMENT_CHARS", "primitive_span", "statement_span", "tracing"]

_tracer = trace.get_tracer("bfsql")
_NO_SPAN = nullcontext()

STATEMENT_CHARS = 2000
"""Longest statement text a span keeps (the query, never its parameters)."""


def tracing() -> bool:
    """Whether this call is traced: an OpenTelemetry SDK is installed and the current trace is sampled.

    A span of an untraced call would record nothing and still cost 10-25 µs to make.
    """
    return not isinstance(trace.get_tracer_provider(), ProxyTracerProvider) and trace.get_current_span().is_recording()


def primitive_span(graph: str, primitive: str) -> AbstractContextManager[Any]:
    """The span of one primitive call a graph's backend answers."""
    if not tracing():
        return _NO_SPAN
    return _tracer.start_as_current_span(
        f"bfsql.primitive {primitive}", kind=SpanKind.INTERNAL,
        attributes={"bfsql.graph": graph, "bfsql.primitive": primitive},
    )


def statement_span(system: str, statement: str) -> AbstractContextManager[Any]:
    """The span of one statement a backend sends to its store (``system``: ``postgresql``, ``sparql`` …).

    The statement's text is kept (clipped to :data:`STATEMENT_CHARS`); its parameters, which carry
    the caller's ids and search texts, are not.
    """
    if not tracing():
        return _NO_SPAN
    return _tracer.start_as_current_span(
        f"{system} query", kind=SpanKind.CLIENT,
        attributes={"db.system.name": system, "db.query.text": statement[:STATEMENT_CHARS]},
    )
