"""Exporting traces (``--otlp-endpoint URL``, ``bfsql[otel]``), and what a tool call's span says.

The spans themselves are made elsewhere: the MCP SDK's per tool call (continuing the caller's
``traceparent`` from the request's ``_meta``), :mod:`bfsql.tracing`'s per primitive and per
statement. :func:`install_exporter` installs the OpenTelemetry SDK with a batching OTLP/HTTP
exporter as the process's tracer provider, and has the server decide whether a call is traced
before the SDK's middleware sees it (:class:`SampledFirst`); :func:`annotate` adds the graph, the
outcome and the answer's size to the current (tool call) span from the pipeline's call record.
"""

from __future__ import annotations

import random
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from opentelemetry import propagate, trace

from bfsql.errors import BfsqlError
from bfsql.server.pipeline import CallRecord
from bfsql.version import __version__

__all__ = ["SampledFirst", "annotate", "install_exporter"]


def install_exporter(endpoint: str, ratio: float = 1.0, middleware: list[ServerMiddleware[Any]] | None = None) -> Any:
    """Export spans to ``endpoint`` (OTLP over HTTP) from now on; the provider, to shut down at the end.

    A trace is kept whole or not at all: a caller's sampled ``traceparent`` is always continued,
    and of the calls that bring none, ``ratio`` are traced. With the server's ``middleware`` chain,
    that choice is made by :class:`SampledFirst` in front of the SDK's span middleware, and the
    provider records every root span it is asked for; without it, by the provider's sampler.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased
    except ImportError:
        raise BfsqlError("--otlp-endpoint needs the OpenTelemetry SDK and its OTLP exporter, which are not installed.",
                         "pip install 'bfsql[otel]'") from None
    chosen_first = middleware is not None and SampledFirst.install(middleware, ratio)
    provider = TracerProvider(resource=Resource.create({"service.name": "bfsql", "service.version": __version__}),
                              sampler=ParentBased(ALWAYS_ON if chosen_first else TraceIdRatioBased(ratio)))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)
    return provider


class SampledFirst:
    """MCP server middleware: the SDK's span middleware, for the messages that are traced only.

    A message is traced when its ``_meta`` carries a valid ``traceparent`` (the SDK's middleware
    continues it, and the provider's parent-based sampler keeps the caller's decision) or, for
    ``ratio`` of the others, by a draw made here. The others pass straight on: the SDK's middleware
    would start a span the sampler then drops, which cost about 2 % of a cheap call's CPU at any ratio.
    """

    SDK_MIDDLEWARE = "OpenTelemetryMiddleware"
    """The class name of the MCP SDK's span middleware (its module is private to the SDK)."""

    def __init__(self, spans: ServerMiddleware[Any], ratio: float) -> None:
        self.spans = spans
        self.ratio = ratio

    @classmethod
    def install(cls, middleware: list[ServerMiddleware[Any]], ratio: float) -> bool:
        """Put the SDK's span middleware in ``middleware`` behind the draw; False when it is not there."""
        for place, one in enumerate(middleware):
            if type(one).__name__ == cls.SDK_MIDDLEWARE:
                middleware[place] = cls(one, ratio)
                return True
        return False

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Trace the message, or not."""
        meta = ctx.meta
        if (meta is not None and "traceparent" in meta and _continues(meta)) or random.random() < self.ratio:
            return await self.spans(ctx, call_next)
        return await call_next(ctx)


def _continues(meta: Any) -> bool:
    """Whether ``meta`` names a trace to continue (a malformed ``traceparent`` names none)."""
    try:
        context = propagate.extract(meta)
    except (ValueError, TypeError):
        return False
    return trace.get_current_span(context).get_span_context().is_valid


def annotate(record: CallRecord) -> None:
    """Say on the current span which graph answered a call, how it ended and how large its answer was."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({"bfsql.graph": record.graph, "bfsql.outcome": record.outcome,
                             "bfsql.answer_chars": record.chars, "bfsql.truncated": record.cut})
