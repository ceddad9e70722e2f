"""Exporting traces (``--otlp-endpoint URL``, ``bfsql[otel]``), and what a tool call's span says.

The spans themselves are made elsewhere: the MCP SDK's per tool call (continuing the caller's
``traceparent`` from the request's ``_meta``), :mod:`bfsql.tracing`'s per primitive and per
statement. :func:`install_exporter` installs the OpenTelemetry SDK with a batching OTLP/HTTP
exporter as the process's tracer provider; :func:`annotate` adds the graph, the outcome and the
answer's size to the current (tool call) span from the pipeline's call record.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from bfsql.errors import BfsqlError
from bfsql.server.pipeline import CallRecord
from bfsql.version import __version__

__all__ = ["annotate", "install_exporter"]


def install_exporter(endpoint: str, ratio: float = 1.0) -> Any:
    """Export spans to ``endpoint`` (OTLP over HTTP) from now on; the provider, to shut down at the end.

    A trace is kept whole or not at all: a caller's sampled ``traceparent`` is always continued,
    and of the calls that bring none, ``ratio`` are traced.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    except ImportError:
        raise BfsqlError("--otlp-endpoint needs the OpenTelemetry SDK and its OTLP exporter, which are not installed.",
                         "pip install 'bfsql[otel]'") from None
    provider = TracerProvider(resource=Resource.create({"service.name": "bfsql", "service.version": __version__}),
                              sampler=ParentBased(TraceIdRatioBased(ratio)))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)
    return provider


def annotate(record: CallRecord) -> None:
    """Say on the current span which graph answered a call, how it ended and how large its answer was."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({"bfsql.graph": record.graph, "bfsql.outcome": record.outcome,
                             "bfsql.answer_chars": record.chars, "bfsql.truncated": record.cut})
