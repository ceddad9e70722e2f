"""The process's OpenTelemetry tracer provider in tests: the SDK with an in-memory exporter (set once per process)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["EXPORTER"]

EXPORTER = InMemorySpanExporter()
"""Every finished span of this process (clear it before the call a test looks at)."""

_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)
